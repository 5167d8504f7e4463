"""Ghost runs in the viewer: variants of the main run drawn translucent beside it, and measured.

The panel's Compare section adds up to four variants (any settings, picked with the same widgets
as the Physics section), a reference (the same scene with a 4th-order integrator at a sixteenth of
the step: ground truth) and the timeline's previous branch. Each is its own `physics.Simulation`,
held by a `physics.tools.compare.Comparison` whose main run is the session's (stepped by its
timeline, read here: app.session): after every change of the main state (`Session.refresh_state` tells the viewer, which calls `sync`)
the ghosts are stepped to the main run's time. So a variant shows exactly what a fresh run with
its settings shows (tests/test_app_ghosts.py compares state hashes bit for bit).

A ghost can also be another engine: "MuJoCo (RK4)" and "MuJoCo (implicitfast)" run the same scene
in MuJoCo from the same state (`physics.tools.mujoco_peer`, a `Comparison` variant with engine=mujoco),
drawn and measured as the others; it cannot be promoted (the main run is ours). Without MuJoCo
installed the section says how to install it (PEERS_HINT); a scene MJCF cannot express shows what
it lacks (physics.io.mjcf_export).

Each ghost is drawn in its colour at GHOST_ALPHA over the opaque main run (only the nodes that can
move, and of those only the ones not where the main run or a ghost drawn before has them: the
ground, and the car the crash A/B's two runs share, are drawn once), with its label at its first
moving body. Readouts per
run (`Comparison.readouts`): the largest position and rotation divergence of any body from the main
run, or from the reference when there is one, now (its peak over the samples plotted in a tooltip), energy
drift and world angular-momentum drift since the ghosts' start; the Compare section plots each
over time, one line per run in its colour.

What the timeline does to ghosts:
- **Start.** All ghosts share one start: the main run's state when the first was added (or when
  "Restart here" was pressed). A ghost added later runs from that start to now at once.
- **Seek** (scrubber, Left/Right, |< >|, playing backwards): to a time at or after the start, every
  ghost is put at that time as it ran (restored from the ghost keyframe, a `Comparison.save` every
  KEYFRAME_SECONDS, at or before it, then stepped on: deterministic, so bit for bit); the plots
  and trails are cut back. Before the start, and after a reset, the ghosts restart from the state
  sought with the same settings (a branch ghost whose branch began later is dropped).
- **Promote.** The variant's simulation becomes the main run, with a new timeline that starts at
  its current state: the timeline holds one run's past, and the promoted run's past is not the
  main run's, so it cannot be a branch of it. The former main run is dropped; the other ghosts run
  on. The plots mark "promoted".
- **Branch as ghost.** "Show previous branch" replays the timeline's cut-off future
  (`physics.pipeline.timeline.Branch.replay`) to the main run's step and steps it on with its recorded
  inputs: the future the change replaced, beside the one it made.
- Loading another scene or recording clears the ghosts.

The crash A/B ("compare counteraction", shown when the scene has loose children: dynamic bodies
in no joint below a dynamic body, as the car's cargo) finds the carrier's impact (`physics.tools.compare.impact_step`:
its speed changes by IMPACT_SPEED_CHANGE in one step), puts the main run IMPACT_LEAD_SECONDS before
it, and runs counteraction on and off from there as two ghosts: the loose children's paths are
drawn as trails (app.trails) in each ghost's colour, and the largest difference of their world
velocities (`Comparison.velocity_difference`), now and its peak, is a readout and a plot line.
"""
from dataclasses import dataclass, fields
from importlib.util import find_spec

import numpy as np
from imgui_bundle import imgui, implot

from app import history, plots
from app.panel import setting_widget
from app.settings import PHYSICS_KEYS
from app.trails import Trails
from physics.pipeline.timeline import Timeline

GHOST_ALPHA = 0.45
COLORS = ((1.0, 0.2, 0.85), (0.15, 0.85, 0.25), (1.0, 0.55, 0.05), (0.55, 0.35, 1.0))   # magenta, green, orange, violet
REFERENCE_COLOR = (1.0, 1.0, 1.0)
MAIN_COLOR = (0.65, 0.65, 0.65)     # the main run's lines in the ghost plots (its divergence from the reference)
AB_COLOR = (0.2, 0.9, 0.9)
KEYFRAME_SECONDS = 0.5               # s of simulated time between ghost keyframes (a seek replays at most this)
KEYFRAME_BUDGET = 64 * 2**20         # bytes of ghost keyframes; past it every other one goes
TIME_EPSILON = 1e-9                  # s: times closer than this are the same sample
IMPACT_SPEED_CHANGE = 1.0            # m/s in one step: the carrier hit something
IMPACT_SEARCH_SECONDS = 10.0         # how far ahead the impact is looked for
IMPACT_LEAD_SECONDS = 0.25           # the A/B starts this long before the impact
AB_LABELS = ("counteract on", "counteract off")
MUJOCO_VARIANTS = ("rk4", "implicitfast")      # the Compare section's MuJoCo buttons (physics.tools.mujoco_peer)
PEERS_HINT = "MuJoCo ghosts: pip install -e '.[peers]'"
_mujoco = None                        # whether mujoco is installed, asked once (a failed look-up searches the path)


def mujoco_available():
    """Whether the mujoco package is installed: found, not imported (importing it takes 0.7 s, which
    the first MuJoCo ghost pays, not the frame that opens the Compare section)."""
    global _mujoco
    if _mujoco is None:
        _mujoco = find_spec("mujoco") is not None
    return _mujoco


CHANNELS = ("max_position_error", "max_rotation_error", "energy_drift", "angular_momentum_drift")
PLOTS = (("max_position_error", "position divergence##ghosts", "max |dx|", "m"),
         ("max_rotation_error", "rotation divergence##ghosts", "max angle", "rad"),
         ("energy_drift", "energy drift##ghosts", "(E - E0)/|E0|", "1"),
         ("angular_momentum_drift", "angular momentum drift##ghosts", "|L - L0|/|L0|", "1"))


SAME_POSE = 5e-3    # m, and entries of R: a ghost's node this close to a run drawn before it is not drawn (millimetres
#                     apart, translucent shapes fight for the same pixels; the crash A/B's cars part by 1 mm)


def _posed_as(translation, rotation, drawn):
    """(N,) bool: the nodes whose pose (translation (N, 3), rotation (N, 3, 3) world) is within
    SAME_POSE of theirs in one of the runs `drawn` [(translation, rotation)]. Two runs' coincident
    shapes, translucent, fight for the same pixels (the crash A/B's two cars, identical but for
    their cargo, would draw striped): a ghost shows what differs."""
    same = np.zeros(len(translation), bool)
    for t, R in drawn:
        same |= ((np.abs(translation - t).max(axis=1) <= SAME_POSE)
                 & (np.abs(rotation - R).reshape(len(R), -1).max(axis=1) <= SAME_POSE))
    return same


def _format(value, unit=""):
    return "-" if not np.isfinite(value) else f"{value:.2e}{' ' + unit if unit else ''}"


@dataclass
class Ghost:
    """A ghost run: a settings variant (`settings`: every setting it runs with), the reference,
    or a timeline branch replayed (`branch`)."""

    label: str
    color: tuple
    settings: dict | None = None
    branch: object = None
    hidden: bool = False


class Readouts:
    """Readouts over time, one column block per run label, at most history.CAPACITY samples spaced
    at least history.WINDOW / history.CAPACITY s apart (as app.history.History)."""

    def __init__(self, capacity=history.CAPACITY, window=history.WINDOW):
        self.capacity, self.spacing = capacity, window / capacity
        self.clear()

    def clear(self):
        self.t = np.zeros(0)
        self.values = {}   # label -> (n, len(CHANNELS) + 1): the readouts, then the A/B's |dv|

    def sample(self, time, readouts, dv=np.nan):
        """One row per run of `readouts` (label -> Comparison readouts) at `time`, and the A/B's
        |dv|; -> bool (False: too soon after the last sample)."""
        n = len(self.t)
        if n and time < self.t[-1] + self.spacing * (1 - 1e-9):
            return False
        drop = int(n >= self.capacity)          # full: the oldest row goes
        self.t = np.append(self.t[drop:], time)
        width = len(CHANNELS) + 1
        for label in set(self.values) | set(readouts):
            old = self.values.get(label, np.full((n, width), np.nan))
            row = readouts.get(label)
            new = np.full(width, np.nan) if row is None else [row[k] for k in CHANNELS] + [dv]
            self.values[label] = np.vstack([old[drop:], new])
        return True

    def truncate(self, time):
        keep = self.t <= time + TIME_EPSILON
        self.t = self.t[keep]
        self.values = {label: values[keep] for label, values in self.values.items()}

    def series(self, label, column):
        """(t, values) of one run's readout column (NaN before it existed)."""
        return self.t, self.values[label][:, column] if label in self.values else np.full(len(self.t), np.nan)

    def peak(self, label, column):
        """The largest of one run's readout column over the samples held (those plotted), NaN
        without one."""
        values = self.series(label, column)[1]
        return float(np.nanmax(values)) if np.isfinite(values).any() else np.nan


class Ghosts:
    """The viewer's ghost runs (module docstring). `comparison` is None while there are none."""

    def __init__(self, viewer):
        self.viewer = viewer
        self.draft = None          # the next variant's settings as edited in the panel
        self.history = Readouts()
        self.plotted, self.axes = {}, {}
        self.clear()

    # --- bookkeeping ----------------------------------------------------------------------------
    def clear(self):
        """No ghosts (the next one starts from the main run's state then)."""
        self.comparison, self.ghosts, self.keyframes, self.readouts = None, {}, [], {}
        self.start_time, self.trails, self.ab, self.ab_dv = None, None, None, np.nan
        self.keyframe_seconds, self.keyframe_bytes = KEYFRAME_SECONDS, 0
        self.history.clear()

    def _begin(self):
        """A comparison starting at the main run's current state; ghost keyframes, plots and
        trails start over."""
        from physics.tools.compare import Comparison  # here: the ghosts' engine loads with the first ghost
        sim = self.viewer.session.sim
        self.comparison = Comparison(sim.scene, main=sim)
        self.start_time = sim.time
        self.keyframes, self.keyframe_bytes, self.keyframe_seconds = [], 0, KEYFRAME_SECONDS
        self.history.clear()
        if self.trails is not None:
            self.trails.clear()
        self.moving = self._moving(sim)
        self._keep_keyframe(force=True)

    @staticmethod
    def _moving(sim):
        """(N,) bool: nodes whose pose can differ between runs (moving, or below a moving node)."""
        moving = np.isin(np.asarray(sim.motion), ("dynamic", "kinematic"))
        for i, parent in enumerate(sim.parent):      # parents precede their children
            moving[i] |= parent >= 0 and moving[parent]
        return moving

    def _color(self):
        used = {ghost.color for ghost in self.ghosts.values()}
        return next((c for c in COLORS if c not in used), COLORS[len(self.ghosts) % len(COLORS)])

    def label_for(self, settings):
        """'gyroscopic=off, dt=0.008333': the settings that differ from the main run's, unique."""
        current = self.viewer.session.sim.settings
        said = [f"{k}={history.format_value(v)}" for k, v in settings.items()
                if not np.array_equal(getattr(current, k), v)]
        base = ", ".join(said) or "same as main"
        label, n = base, 2
        while label in self.ghosts or label in ("main", "reference"):
            label, n = f"{base} ({n})", n + 1
        return label

    def _sample(self):
        c = self.comparison
        self.readouts = c.readouts()
        if self.ab is not None:
            on, off = self.ab["labels"]
            dv = c.velocity_difference(on, off, self.ab["nodes"])
            self.ab_dv = float(np.nanmax(dv)) if np.isfinite(dv).any() else np.nan
        self.history.sample(c.time, self.readouts, self.ab_dv)
        if self.trails is not None:
            for label in self.ghosts:
                self.trails.add(label, c.time, c.poses(label)[0])

    def _keep_keyframe(self, force=False):
        c = self.comparison
        if not force and c.time < self.keyframes[-1][0] + self.keyframe_seconds - TIME_EPSILON:
            return
        saved = c.save()
        self.keyframes.append((c.time, saved))
        self.keyframe_bytes += sum(snapshot.nbytes for snapshot, _ in saved["runs"].values())
        if self.keyframe_bytes > KEYFRAME_BUDGET and len(self.keyframes) > 2:   # thin out, keep the start
            self.keyframes = self.keyframes[:1] + self.keyframes[2::2]
            self.keyframe_bytes = sum(sum(s.nbytes for s, _ in k[1]["runs"].values()) for k in self.keyframes)
            self.keyframe_seconds *= 2

    # --- following the main run -----------------------------------------------------------------
    def sync(self):
        """Bring the ghosts to the main run's time after any change of the main state (module
        docstring: seeks restore or restart them). Errors show in the status message, never stop the app."""
        from physics.tools.compare import MAIN  # here: the ghosts' engine loads with the first ghost
        c = self.comparison
        if c is None:
            return
        main = self.viewer.session.sim
        if main is not c.simulation(MAIN):     # another scene or recording: its own runs now
            self.clear()
            return
        try:
            with np.errstate(all="ignore"):
                if main.time < self.start_time - TIME_EPSILON:
                    self.restart()
                    return
                if main.time < c.time - TIME_EPSILON:
                    self._rewind(main.time)
                c.step_to(main.time)
                self._keep_keyframe()
                self._sample()
        except Exception as error:  # noqa: BLE001 - ghosts are display: the main run goes on
            self.viewer.session.notify(f"ghosts: {type(error).__name__}: {error}")

    def _rewind(self, time):
        """Every ghost at `time` (at or after the start) as it ran: the last keyframe at or before
        it restored, ghosts added after that keyframe re-made (`_remake`)."""
        while len(self.keyframes) > 1 and self.keyframes[-1][0] > time + TIME_EPSILON:
            self.keyframes.pop()
        self.keyframe_bytes = sum(sum(s.nbytes for s, _ in k[1]["runs"].values()) for k in self.keyframes)
        for label in self.comparison.restore(self.keyframes[-1][1]):
            self._remake(self.ghosts[label])
        self.history.truncate(time)
        if self.trails is not None:
            self.trails.truncate(time)

    def _remake(self, ghost, restart=False):
        """(Re)create a ghost's run at the comparison's time: a settings variant from the common
        start, a branch replayed to the main run's step. -> bool (False: a branch not begun yet)."""
        from physics.tools.compare import REFERENCE  # here: the ghosts' engine loads with the first ghost
        from physics.pipeline.simulation import Simulation      # (loaded with the first scene)
        c = self.comparison
        if ghost.label in c.labels:
            c.remove(ghost.label)
        if ghost.branch is not None:
            step = self.viewer.session.sim.step_count
            if step < ghost.branch.start:
                return False
            sim = Simulation(self.viewer.session.sim.scene)
            ghost.branch.replay(sim, step)
            c.add_simulation(ghost.label, sim, ghost.branch.inputs)
            c.step_to(c.time)
        elif ghost.label == REFERENCE:
            c.add_reference(ghost.settings)
        else:
            c.add_variant(ghost.label, ghost.settings)
        return True

    def restart(self):
        """The same ghosts again from the main run's current state."""
        ghosts = list(self.ghosts.values())
        self._begin()
        self.ghosts = {}
        for ghost in ghosts:
            if self._remake(ghost):
                self.ghosts[ghost.label] = ghost
        if self.ab is not None and not all(label in self.ghosts for label in self.ab["labels"]):
            self.ab = self.trails = None
        self._sample()

    # --- actions (the panel's buttons) ------------------------------------------------------------
    def add_variant(self, settings, label=None):
        """A variant running with `settings` (a dict of settings: all or only the changed ones)
        from the ghosts' start. -> its label, or None (the error shows)."""
        from physics.tools.compare import MAX_VARIANTS  # here: the ghosts' engine loads with the first ghost
        if self.comparison is not None and len(self.comparison.variants) >= MAX_VARIANTS:
            self.viewer.session.error = f"at most {MAX_VARIANTS} ghosts: remove one first"
            return None
        label = label or self.label_for(settings)
        return self._add(Ghost(label, self._color(), settings=dict(settings)))

    def add_reference(self):
        from physics.tools.compare import REFERENCE, REFERENCE_DT_DIVISOR, REFERENCE_INTEGRATOR  # here: the ghosts' engine loads with the first ghost
        settings = {"integrator": REFERENCE_INTEGRATOR, "joint_solve": "projected",      # (compare.add_reference's)
                    "dt": self.viewer.session.sim.settings.dt / REFERENCE_DT_DIVISOR}
        return self._add(Ghost(REFERENCE, REFERENCE_COLOR, settings=settings))

    def add_mujoco(self, integrator):
        """A MuJoCo run of the scene from the ghosts' start (`integrator`: rk4 or implicitfast).
        -> its label, or None (the error, or how to install MuJoCo, shows)."""
        from physics.tools.compare import MAX_VARIANTS  # here: the ghosts' engine loads with the first ghost
        if not mujoco_available():
            self.viewer.session.error = f"{PEERS_HINT} (MuJoCo is not installed)"
            return None
        from physics.tools.mujoco_peer import integrator_label  # (MuJoCo: an optional extra)
        label = integrator_label(integrator)
        if label in self.ghosts:
            self.viewer.session.notify(f"{label} is running already")
            return label
        if self.comparison is not None and len(self.comparison.variants) >= MAX_VARIANTS:
            self.viewer.session.error = f"at most {MAX_VARIANTS} ghosts: remove one first"
            return None
        return self._add(Ghost(label, self._color(), settings={"engine": "mujoco", "integrator": integrator}))

    def add_branch(self):
        """The timeline's previous branch as a ghost. -> its label or None."""
        branch = self.viewer.session.timeline.previous
        if branch is None:
            self.viewer.session.notify("no previous branch: change a setting while looking at the past to make one")
            return None
        return self._add(Ghost(f"branch from step {branch.start}", self._color(), branch=branch))

    def _add(self, ghost):
        """Start `ghost` (or, while the warm-up compiles its kernels, once it has: `when_ready`)."""
        return self.viewer.session.when_ready(lambda: self._start(ghost), f"the ghost {ghost.label!r}")

    def _start(self, ghost):
        if self.comparison is None:
            self._begin()
        try:
            if not self._remake(ghost):
                raise ValueError(f"{ghost.label}: the main run is before the branch's start")
        except ValueError as error:
            self.viewer.session.error = f"ghost: {error}"
            if not self.ghosts:
                self.clear()
            return None
        self.ghosts[ghost.label] = ghost
        self._sample()
        return ghost.label

    def toggle_hidden(self, label):
        self.ghosts[label].hidden = not self.ghosts[label].hidden

    def remove(self, label):
        self.comparison.remove(label)
        del self.ghosts[label]
        if self.trails is not None:
            self.trails.remove(label)
        if self.ab is not None and label in self.ab["labels"]:
            self.ab, self.ab_dv = None, np.nan
        if not self.ghosts:
            self.clear()
        else:
            self.history.values.pop(label, None)
            self.readouts = self.comparison.readouts()

    def promote(self, label):
        """The variant becomes the main run, with a new timeline from its current state (module
        docstring); the other ghosts run on."""
        v = self.viewer
        sim = self.comparison.promote(label)
        self.comparison.time = sim.time     # a variant whose dt does not divide main's may be a step behind
        self.ghosts.pop(label)
        if self.trails is not None:
            self.trails.remove(label)
        if self.ab is not None and label in self.ab["labels"]:
            self.ab, self.ab_dv, self.trails = None, np.nan, None
        self.history.values.pop(label, None)
        v.session.sim, v.session.timeline = sim, Timeline(sim, budget=v.session.budget_bytes())
        v.session.error, v.session.backwards = None, False
        for name in PHYSICS_KEYS:
            v.session.prefs["physics"][name] = getattr(sim.settings, name)
        v.session.history.mark(sim.time, f"promoted {label}")
        v.session.refresh_state()
        v.session.notify(f"promoted {label!r}: it is the main run now, its timeline starts here (t = {sim.time:.3f} s)")
        if not self.ghosts:
            self.clear()

    def compare_counteraction(self):
        """The crash A/B (module docstring). -> bool: started (or waits for the warm-up)."""
        return self.viewer.session.when_ready(self._compare_counteraction, "the crash A/B")

    def _compare_counteraction(self):
        from physics.tools.compare import impact_step, loose_children  # here: the ghosts' engine loads with the first ghost
        v = self.viewer
        loose, nearest = loose_children(v.session.sim)
        if not loose.size:
            v.session.notify("no loose children here: counteraction changes nothing in this scene")
            return False
        carrier = int(nearest[loose[0]])
        dt = v.session.sim.settings.dt
        search, lead = int(round(IMPACT_SEARCH_SECONDS / dt)), int(round(IMPACT_LEAD_SECONDS / dt))
        impact = impact_step(v.session.sim.scene, v.session.sim.snapshot(), carrier, search, IMPACT_SPEED_CHANGE)
        if impact is None and v.session.sim.step_count > v.session.timeline.origin:      # past it: look from the timeline's start
            v.session.seek(v.session.timeline.origin)
            impact = impact_step(v.session.sim.scene, v.session.sim.snapshot(), carrier, search, IMPACT_SPEED_CHANGE)
        if impact is None:
            v.session.notify(f"no impact of {v.session.sim.names[carrier]!r} within {IMPACT_SEARCH_SECONDS:.0f} s")
            return False
        target = max(impact - lead, v.session.sim.step_count)
        if target <= v.session.timeline.head:
            v.session.seek(target)
        else:
            v.session.seek(v.session.timeline.head)
            v.session.step_physics(target - v.session.sim.step_count)
        self.clear()
        self.trails = Trails(loose)
        for label, on in zip(AB_LABELS, (True, False)):
            if self.add_variant({"counteract": on}, label) is None:
                return False
        self.ab = {"nodes": loose, "labels": AB_LABELS}
        self.history.clear()          # the first sample again, with the A/B's |dv|
        self._sample()
        v.session.paused, v.session.backwards = False, False
        v.session.notify(f"A/B from {IMPACT_LEAD_SECONDS} s before the {v.session.sim.names[carrier]} hits")
        return True

    # --- drawing --------------------------------------------------------------------------------
    def visible(self):
        """Labels of the ghosts drawn: not hidden, not stopped."""
        if self.comparison is None:
            return []
        stopped = self.comparison.stopped
        return [label for label, ghost in self.ghosts.items() if not ghost.hidden and label not in stopped]

    def draw(self, view_projection):
        """The visible ghosts, translucent in their colours, and the trails (after the main run's
        opaque shapes)."""
        if self.comparison is None:
            return
        v = self.viewer
        drawn = [v.session.sim.world_poses()[:2]]       # the main run's, opaque
        for label in self.visible():
            translation, rotation, scale = self.comparison.poses(label)
            only = self.moving & ~_posed_as(translation, rotation, drawn)
            drawn.append((translation, rotation))
            v.view.renderer.draw_shapes(translation, rotation, np.broadcast_to(scale[:, None], (len(scale), 3)),
                                   view_projection, v.view.focal_px(), eye_world=v.view.camera.eye_world,
                                   tint=self.ghosts[label].color, alpha=GHOST_ALPHA, only=only)
        if self.trails is not None:
            segments, colors = self.trails.segments({label: self.ghosts[label].color for label in self.visible()})
            v.view.renderer.draw_lines(segments, colors, view_projection)

    def labels(self):
        """Each visible ghost's label in its colour beside its first moving body (ImGui's
        foreground: over the scene, under nothing)."""
        if self.comparison is None:
            return
        v = self.viewer
        anchor = int(np.argmax(self.moving)) if self.moving.any() else 0
        vp, (w, h) = v.view.view_projection(), v.size
        draw_list = imgui.get_foreground_draw_list()
        for k, label in enumerate(self.visible()):
            point = np.append(self.comparison.poses(label)[0][anchor], 1.0) @ vp.T
            if point[3] <= 1e-6:
                continue
            x, y = (point[:2] / point[3] + 1) / 2 * [w, -h] + [0, h]
            r, g, b = self.ghosts[label].color
            draw_list.add_text(imgui.ImVec2(float(x) + 12, float(y) - 24 - 16 * k),
                               imgui.color_convert_float4_to_u32(imgui.ImVec4(r, g, b, 1.0)), label)

    # --- the panel's Compare section --------------------------------------------------------------
    def section(self, panel):
        """Add / show / hide / remove / promote ghosts, their readouts and plots."""
        from physics.tools.compare import MAX_VARIANTS, REFERENCE, loose_children  # here: the ghosts' engine loads with the first ghost
        v, c = self.viewer, self.comparison
        if c is None:
            imgui.text_wrapped("Run variants of this scene from now on beside the main run, "
                               "each its own simulation, drawn translucent in its colour.")
        else:
            panel.text(f"ghosts from t = {self.start_time:.3f} s; divergence from {c.base}")
        if self.draft is None:
            self.draft = {f.name: getattr(v.session.sim.settings, f.name) for f in fields(v.session.sim.settings)}
        if imgui.tree_node("variant settings"):
            for name, value in list(self.draft.items()):
                changed, new = panel_widget(name, value)
                if changed:
                    self.draft[name] = new
            if panel.button("as main"):
                self.draft = None
            imgui.tree_pop()
        if panel.button("Add variant"):
            self.add_variant(dict(self.draft))
        imgui.same_line()
        if panel.button("Add reference"):
            self.add_reference()
        if v.session.timeline.previous is not None:
            imgui.same_line()
            if panel.button("Show previous branch"):
                self.add_branch()
        if mujoco_available():
            from physics.tools.mujoco_peer import integrator_label  # (MuJoCo: an optional extra)
            for k, integrator in enumerate(MUJOCO_VARIANTS):
                if k:
                    imgui.same_line()
                if panel.button(integrator_label(integrator)):
                    self.add_mujoco(integrator)
        else:
            imgui.text_colored(imgui.ImVec4(0.75, 0.75, 0.75, 1.0), PEERS_HINT)
            panel.remember(PEERS_HINT)
        if loose_children(v.session.sim)[0].size and panel.button("compare counteraction"):
            self.compare_counteraction()
        c = self.comparison
        if c is None:
            return
        imgui.same_line()
        if panel.button("Restart here"):
            self.restart()
        imgui.same_line()
        if panel.button("Clear"):
            self.clear()
            return
        panel.text(f"{len(c.variants)} of {MAX_VARIANTS} variants", imgui.ImVec4(0.75, 0.75, 0.75, 1.0))
        self._rows(panel, c, REFERENCE)
        if self.ab is not None:
            peak = np.fmax(self.history.peak(self.ab["labels"][0], len(CHANNELS)), self.ab_dv)
            panel.text("loose children |v_on - v_off|", imgui.ImVec4(*AB_COLOR, 1.0))
            panel.text(f"  {_format(self.ab_dv, 'm/s')} now, peak {_format(peak, 'm/s')}", imgui.ImVec4(*AB_COLOR, 1.0))
        self._plots(c)

    def _rows(self, panel, c, reference):
        for label in ["main"] + list(self.ghosts):
            color = MAIN_COLOR if label == "main" else self.ghosts[label].color
            panel.text(label, imgui.ImVec4(*color, 1.0))
            if label != "main":
                ghost = self.ghosts[label]
                imgui.same_line()
                if panel.button(f"{'show' if ghost.hidden else 'hide'}##{label}"):
                    self.toggle_hidden(label)
                imgui.same_line()
                if panel.button(f"remove##{label}"):
                    self.remove(label)
                    return
                if label != reference and (ghost.settings or {}).get("engine", "ours") == "ours":
                    imgui.same_line()
                    if panel.button(f"promote##{label}"):
                        self.promote(label)
                        return
            r = self.readouts.get(label)
            if r is None:
                continue
            if label in c.stopped:
                panel.text(f"  stopped: {c.stopped[label]}", imgui.ImVec4(1.0, 0.35, 0.3, 1.0))
                continue
            # now (the largest over the bodies), and in its tooltip the peak over the samples plotted
            # (at least now's: a sample too soon after the last is not held)
            peak_dx = np.fmax(self.history.peak(label, CHANNELS.index("max_position_error")), r["max_position_error"])
            peak_dR = np.fmax(self.history.peak(label, CHANNELS.index("max_rotation_error")), r["max_rotation_error"])
            panel.text(f"  dx {_format(r['max_position_error'], 'm')}  dR {_format(r['max_rotation_error'], 'rad')} now")
            panel.tooltip(f"the largest of any body now; peak over the plotted time: dx {_format(peak_dx, 'm')}, "
                          f"dR {_format(peak_dR, 'rad')}")
            panel.text(f"  dE {_format(r['energy_drift'])}  dL {_format(r['angular_momentum_drift'])}")

    def _plots(self, c):
        """One plot per readout, one line per run in its colour (the base run's divergence is 0:
        not drawn); the A/B's velocity difference."""
        self.plotted, self.axes = {}, {}
        t = self.history.t
        if not len(t):
            return
        # x: the samples held (at most the plots' window) and a margin, so a short A/B fills the plot
        lo = max(t[0], t[-1] - history.WINDOW)
        span = max(t[-1] - lo, 0.1)
        lo, hi = lo - plots.AXIS_MARGIN * span / 2, t[-1] + plots.AXIS_MARGIN * span / 2
        runs = [(label, MAIN_COLOR if label == "main" else self.ghosts[label].color)
                for label in ["main"] + list(self.ghosts) if label in self.history.values]
        panels = [(k, title, symbol, unit, CHANNELS.index(k)) for k, title, symbol, unit in PLOTS]
        if self.ab is not None:     # first: what the A/B is about
            panels.insert(0, ("ab", "loose children |v_on - v_off|##ghosts", "max |dv|", "m/s", len(CHANNELS)))
        for key, title, symbol, unit, column in panels:
            lines = [(label, color, self.history.series(label, column)[1]) for label, color in runs
                     if not (column < 2 and label == c.base)]
            if key == "ab":
                lines = [("|dv|", AB_COLOR, self.history.series(self.ab["labels"][0], column)[1])]
            if not implot.begin_plot(title, imgui.ImVec2(-1, plots.PLOT_HEIGHT), plots.INPUT_FLAGS):
                continue
            implot.setup_axis(implot.ImAxis_.x1, "t (s)")
            implot.setup_axis_limits(implot.ImAxis_.x1, lo, hi, implot.Cond_.always)
            self.axes[key] = plots.setup_y_axis(np.concatenate([y for _, _, y in lines] or [np.zeros(0)]), symbol, unit,
                                                offset_allowed=False)
            implot.setup_legend(implot.Location_.north, implot.LegendFlags_.outside | implot.LegendFlags_.horizontal)
            for label, (r, g, b), y in lines:
                implot.plot_line(label, t, np.ascontiguousarray(y), implot.Spec(line_color=imgui.ImVec4(r, g, b, 1.0),
                                                                               line_weight=2.0))
            implot.end_plot()
            low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
            self.plotted[key] = (len(t), (low.x, low.y, high.x, high.y))


def panel_widget(name, value):
    """The Physics section's widget for one setting, with its own ImGui ID (app.panel)."""
    return setting_widget(name, value, "##draft")
