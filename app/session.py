"""The app's state, with no GL and no UI: the simulation shown and its timeline, the scene or
recording it came from, how a frame steps it, the settings and preferences, the selection, the
messages, and the kernels' preparation beside the window. One `Session` per viewer
(app.viewer, which draws it through app.view and the panel); its `listener` (a `Listener`, the
viewer) hears what the view and the other parts must follow.

It owns the simulation: it asks `physics` for state and never computes physics itself.

Time: each frame adds `frame_seconds * time_scale` to an accumulator (a real-time frame counts at
most MAX_FRAME_SECONDS of the wall time since the last one) and takes as many `settings.dt` steps as
fit (at most MAX_FRAME_SIMULATED of simulated time, the rest is dropped so a slow frame does not
snowball), within PHYSICS_BUDGET_SECONDS of stepping (`advance`): after a stall simulated time goes
on from where it was, never jumping to catch up (MuJoCo's `simulate` and Box2D's samples drop it
too), and the Stats show the real-time factor. Any exception from physics, a NaN or a runaway
node pauses the simulation and shows the error: the app never exits on a physics or input error.

Kernels (app.preparation): with `prepare` (the interactive app), numba kernels are compiled in a
warm-up child process and loaded on a thread, never inside a frame; a scene opens, and a setting,
ghost or reparent applies, once its kernels are loaded, and the window says what it waits for.
(That thread also loads the view's own kernels, app.renderer's and app.shadows': with `prepare`,
the session serves a window.)

Timeline (`physics.pipeline.timeline.Timeline`, made at every load, reset and open): every step goes
through it, so the recent past can be sought (the panel's scrubber, ← / →, Shift+← plays
backwards) within a keyframe memory budget, and every setting goes through `timeline.apply`, so a
change made while looking at the past branches (the cut-off future is kept as `timeline.previous`).
A seek restores the state and recomputes what is drawn from it: world state, contacts, overlays;
the plots are cut back to the time sought, or re-sampled while stepping forward to it. Ctrl+S
saves the timeline as a recording (`physics.pipeline.recording`); `open` reads scenes and recordings.

Messages: `error` stays until the user dismisses it (the panel draws it where the user looks,
in the middle of the window); `message`, a status message over the scene (a window of its own:
no panel widget moves for it), goes at the next action or after MESSAGE_SECONDS of frames, and
stays while the pointer is on it; `messages` logs them all, errors too, for the panel's Messages
section.
"""
import collections
import time
import traceback
from pathlib import Path

import numpy as np

import physics
from app import history, settings as settings_store
from app.preparation import Preparation
from physics.core.compiled import interpret, is_interpreting
from physics.core.files import kind_of
from physics.io.errors import SceneError
from physics.core.settings import GYROSCOPIC, integrator_names
from physics.dynamics.driving import KeyDrive
from physics.pipeline.recording import read_recording, write_recording
from physics.pipeline.timeline import Timeline
from physics.tools import effects
from physics.tools.warmup import SCENES, is_warm

SCENES_DIR = Path(__file__).resolve().parent.parent / "assets" / "scenes"
DEFAULT_SCENE = "tank"
FALLBACK_SCENE = "t_handle"     # what a cancelled first wait for the default scene opens: one body, cheap as Python
# s of simulated time one frame may take at most: eight 1/60 s steps, or as many shorter ones as fit
# (a count of steps would hold a scene of dt 1/240, the robot models', to a third of real time in
# a frame of 80 ms); the rest is dropped so that a slow frame does not snowball. At 60 video frames a
# simulated second that is app.video.JUMP_FRAMES frames, which a recording writes as they came.
MAX_FRAME_SIMULATED = 8 / 60
# s of real time one frame may simulate at most: a frame that took longer (a stall, a window drag, a
# slow machine's frame) drops the rest, as MuJoCo's `simulate` and Box2D's samples do, so simulated
# time never jumps to catch up with the wall clock
MAX_FRAME_SECONDS = 0.1
# s of physics one real-time frame may spend: the steps due past it are dropped with the time they
# stood for (a 1,000-box heap under rk4 takes ~50 ms a step; eight of them would hold a frame for
# 0.4 s). At least one step is always taken; the real-time factor then says how far behind it is.
PHYSICS_BUDGET_SECONDS = 0.05
RUNAWAY_DISTANCE = 1e5  # m from the origin: beyond this a node has exploded
RUNAWAY_SPEED = 1e4     # m/s or rad/s
MESSAGE_SECONDS = 4.0   # a status message's life, s of frames (long enough to read a sentence)
MESSAGE_LOG = 200       # messages the panel's log keeps
RESAMPLED_STEPS = 600   # a seek forward steps through at most this many steps sampling the plots (10 s at 60 Hz)
RECORDING_KEYFRAME_EVERY = 60   # steps between a saved recording's keyframes (`python -m physics run --record`'s too):
#                                 the timeline keeps them closer (the car's: one a step, 11 MB for 18 s saved so)


def scene_files():
    """Every scene file shipped in assets/scenes, sorted by name."""
    return sorted(SCENES_DIR.glob("*.toml"))


def resolve_scene(name):
    """A scene given as a path, a file name or a bare name (`tank`) -> Path; ValueError if none,
    saying what the path is where it is something other than a file (a directory, say)."""
    path = Path(name)
    for candidate in (path, SCENES_DIR / path, SCENES_DIR / f"{name}.toml"):
        if candidate.is_file():
            return candidate
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        mode = None
    if mode is not None:
        raise ValueError(f"{path}: is {kind_of(mode)}; expected a scene file")
    raise ValueError(f"no scene file {name!r} (looked for it as a path and in {SCENES_DIR})")


def input_label(entry):
    """A timeline input (`physics.pipeline.timeline.Input`) as a plot marker's text."""
    if entry.kind == "set":
        return f"{entry.args[0]}: {history.format_value(entry.args[1])}"
    return f"{entry.kind}: {entry.args[0]}"


def world_arrays(world):
    """The arrays drawn (app.view) from a physics DynamicTransform of batch (N,).

    T (N, 3), R (N, 3, 3), S (N, 3) (the uniform scale broadcast), v, a, omega, alpha (N, 3)."""
    transform = world.transform
    n = np.shape(transform.translation)[0]
    scale = np.broadcast_to(np.asarray(transform.scale, float).reshape(n, -1), (n, 3))
    return {
        "T": np.asarray(transform.translation, float), "R": np.asarray(transform.rotation, float), "S": scale,
        "v": np.asarray(world.velocity, float), "a": np.asarray(world.acceleration, float),
        "omega": np.asarray(world.omega_vector(), float), "alpha": np.asarray(world.alpha_vector(), float),
    }


class WorldState(dict):
    """The state drawn, one moment of the run: T (N, 3), R (N, 3, 3), S (N, 3) from `sim.world_poses()`,
    the motion (v, a, omega, alpha, as `world_arrays`) from the full `sim.world()` on first use.

    Drawing needs only the poses; the full query settles every dynamic body's accelerations,
    which only the overlays, the inspector and the runaway check of scenes with dynamic bodies
    read (3.6 ms of a 10,000-node frame). A state belongs to one moment: the session makes a new
    one after every step, so a late fetch sees the same state."""

    MOTION = ("v", "a", "omega", "alpha")

    def __init__(self, sim):
        translation, rotation, scale = sim.world_poses()
        super().__init__(T=translation, R=rotation, S=np.broadcast_to(scale[:, None], (len(scale), 3)))
        self.sim = sim

    def __missing__(self, name):
        if name not in self.MOTION:
            raise KeyError(name)
        self.update(world_arrays(self.sim.world()))
        return self[name]


class Listener:
    """What a session tells whoever shows it (the viewer): each call does nothing here."""

    def opened(self, sim, path, follow):
        """A scene or recording opened: `sim` from `path`; `follow`: its [view] has the camera
        ride the selected node."""

    def back_to_start(self):
        """The run went back to its first state (a reset)."""

    def state_changed(self):
        """The simulation's state changed (a step, a seek, an input, a setting)."""

    def input_given(self, kind, args):
        """An input went into the timeline (physics.pipeline.timeline.Input: `kind`, `args`)."""

    def holding(self):
        """Whether an input must be given before each step (a pull held): -> bool."""
        return False

    def before_step(self):
        """Give that input now, before a step."""


class Session:
    def __init__(self, overrides=None, store=True, record=None, prepare=False, scene=None, listener=None):
        """`overrides` = physics settings from the command line (win over persisted ones); `store` =
        persist settings (config file); `record` = the path Ctrl+S saves the recording to (else
        sandbox-<time>.rec in the working directory); `prepare`: compile (when the kernel cache is
        not warm) and load the kernels beside the window (app.preparation), and open a scene or
        apply a change when its kernels are ready, instead of inside a frame; `scene` = the scene
        or recording (.rec) `start` opens (default: the last one, else DEFAULT_SCENE); `listener`
        a `Listener` (default: one that does nothing)."""
        self.listener = listener if listener is not None else Listener()
        self.store = store
        self.prefs = settings_store.load() if store else settings_store.load("/nonexistent/settings.json")
        self._settings_problem = settings_store.problem     # said as a message when the first scene opens
        self.overrides = dict(overrides or {})
        self.sim, self.scene_path, self.state, self.timeline, self.scene_text = None, None, None, None, None
        self.record_path = None if record is None else Path(record)
        self.saved_recording = None  # the path of the last recording saved
        self.paused, self.accumulator, self.backwards = False, 0.0, False
        self.selected = None
        self.messages = collections.deque(maxlen=MESSAGE_LOG)  # (sim time, text): the panel's log
        self.error, self.message = None, None
        self.clock, self.message_at = 0.0, 0.0  # s of frames drawn; when `message` was set
        self.message_hovered = False    # the pointer is on the message (app.panel.toast): it stays
        self.stats = {"fps": 0.0, "physics_ms": 0.0, "physics_avg_ms": 0.0, "render_ms": 0.0, "nodes": 0, "steps": 0,
                      "rtf": 0.0}
        self.contacts = (np.zeros((0, 3)), np.zeros((0, 3)))
        self.dynamic = np.zeros(0, np.int64)    # the dynamic nodes' indices
        self.history = history.History()
        self.keys = KeyDrive(())        # the scene's [[key]]s (`_scene_keys`, at each open)
        self.app_letters = frozenset()  # the letters the app's own keys take (the viewer's): no scene key there
        self.last_input = None          # what the last input said it did (a launch's physics.dynamics.driving.Launch)
        self.launched = None            # the last launch (its arrows: app.view's `launch_lines`)
        self.saved_keyframes = []
        self.first_scene = scene or self.prefs.get("last_scene") or DEFAULT_SCENE
        self.preparation, self.pending, self.deferred, self._said_warmup_failed = None, None, [], False
        if prepare:
            self.preparation = Preparation(compile=not is_warm(), first=self._task_of(self.first_scene))
            if self.preparation.compiling:
                # until its kernels are loaded, a small scene runs as Python (the same bits)
                interpret(True)

    def start(self):
        """Open the first scene (`first_scene`), or, with kernels prepared beside the window, have
        it open in `poll_preparation` once its kernels are loaded."""
        if self.preparation is not None:
            self._wait_for(self.first_scene)
        else:
            self._open_first(self.first_scene)

    def _open_first(self, scene):
        """Open the first scene; if it fails, the default one runs and the error stays on screen."""
        if not self._open(scene) and scene != DEFAULT_SCENE:
            error = self.error
            self.load_scene(DEFAULT_SCENE)
            self._error = error     # back on screen, logged once already

    def _wait_for(self, name):
        """Have the kernels of scene `name` loaded (its other settings' next) and, for a shipped
        scene, its file loaded into a simulation, off this thread; it opens in `poll_preparation`.
        While kernels compile, a shipped scene whose steps are cheap enough as Python (measured:
        `Preparation.probe`) opens as soon as that is known, and runs so until they are loaded."""
        task = self._task_of(name)
        self.pending = name
        if task is not None:
            self.preparation.build(task)
            self.preparation.want(task + "+")
            if is_interpreting() and not self.preparation.ready(task):
                self.preparation.probe(resolve_scene(name))

    def _interpretable(self, name, task):
        """Whether scene `name` (warm-up task `task`) may open now and run as Python."""
        return (task is not None and is_interpreting() and not self.preparation.ready(task)
                and self.preparation.interpretable(resolve_scene(name)))

    @property
    def interpreted(self):
        """Whether the scene shown runs (partly) as Python, its kernels still being prepared."""
        return (self.sim is not None and self.preparation is not None and is_interpreting()
                and not self.preparation.ready(self._task_of(self.scene_path)))

    def poll_preparation(self):
        """Open the scene waiting for its kernels, and apply the changes waiting for theirs, once
        they are loaded (app.preparation); say once if the warm-up failed."""
        preparation = self.preparation
        if preparation is None:
            return
        if preparation.returncode == 0 and not preparation.busy and is_interpreting():
            # the warm-up child has ended and the loader is idle: a kernel version the warm-up did
            # not compile (a scene file of the user's own, such as a generated net, needs some no
            # shipped scene does) compiles where it is first called, as on a warm start, instead of
            # running as Python from then on (while the loader works, a frame would wait on it)
            interpret(False)
        task = self._task_of(self.pending) if self.pending is not None else None
        if self.pending is not None and (preparation.built(task) or (task is None and preparation.ready(None))
                                         or self._interpretable(self.pending, task)):
            pending, self.pending = self.pending, None
            if self.sim is None:
                self._open_first(pending)
            else:
                self._open(pending)
        # a waiting change acts once its kernels are loaded, or at once as Python where the probe
        # found the scene cheap enough so
        live = bool(self.deferred) and self._live_as_python()
        ready = [entry for entry in self.deferred if live or preparation.ready(entry[0])]
        self.deferred = [entry for entry in self.deferred if not (live or preparation.ready(entry[0]))]
        for _, action, _ in ready:
            action()
        if preparation.returncode not in (None, 0) and not self._said_warmup_failed:
            self._said_warmup_failed = True
            self.notify(preparation.status())

    def cancel_label(self):
        """What cancelling the wait does, for its button, or None if there is nothing to cancel."""
        if self.pending is None:
            return None
        if self.sim is not None:
            return f"cancel: stay on {Path(str(self.scene_path)).stem}"
        return f"cancel: open {self._instead(Path(str(self.pending)).stem)}"

    @staticmethod
    def _instead(name):
        """The scene a cancelled first wait for scene `name` opens: the default, or for the default
        itself the fallback (a single body, cheap enough as Python to run at once)."""
        default = Path(DEFAULT_SCENE).stem
        return FALLBACK_SCENE if name == default else default

    def cancel_pending(self):
        """Stop waiting for the scene that prepares; the one shown stays (nothing is shown: the
        default scene opens, or the fallback instead of the default, or waits in its turn). Its
        kernels go on compiling in the background."""
        if self.pending is None:
            return
        task = self._task_of(self.pending)
        if task is not None and self.preparation is not None:
            self.preparation.forget(task)       # opened again later, it is built from its file then
        name, self.pending = Path(str(self.pending)).stem, None
        if self.sim is None:
            self._wait_for(self._instead(name))
        self.notify(f"stopped waiting for {name}: its kernels go on compiling in the background")

    def when_ready(self, action, what):
        """Run `action()` now, unless the warm-up has yet to compile the current scene's other
        settings (its task NAME+): then it runs once they are compiled, and the status message says
        `what` waits for that. -> action's result, or True when it waits."""
        task = self._task_of(self.scene_path)
        task = None if task is None else task + "+"
        if self.preparation is None or self.preparation.ready(task):
            return action()
        self.preparation.want(task)         # what the user waits on comes first
        if self._live_as_python():
            result = action()
            self.notify(f"{what}: on now, run as Python until its kernels are ready ({self.preparation.status()})")
            return result
        if self.sim is not None and self.scene_path is not None and is_interpreting():
            self.preparation.probe(resolve_scene(self.scene_path))  # cheap enough as Python? then at once
        self.deferred.append((task, action, what))
        self.notify(f"{what}: applies when its kernels are ready ({self.preparation.status()})")
        return True

    def _live_as_python(self):
        """Whether a change may act now with its kernels run as Python (the interpreted tier): the
        scene shown is one whose steps are cheap enough so (measured: `Preparation.probe`)."""
        if self.sim is None or self.scene_path is None or not is_interpreting():
            return False
        try:
            return self.preparation.interpretable(resolve_scene(self.scene_path))
        except Exception:  # noqa: BLE001 - a file the browser cannot name: wait for its kernels
            return False

    @staticmethod
    def _task_of(name):
        """The warm-up task that prepares what scene `name` needs (a shipped scene's name), or None
        (other files and recordings: ready once nothing compiles any more)."""
        text = str(name).strip()
        if text.lower().endswith(".rec"):
            return None
        try:
            path = resolve_scene(text)
        except Exception:  # noqa: BLE001 - a bad name: its error shows when it opens
            return None
        return path.stem if path.resolve().parent == SCENES.resolve() else None

    def open(self, name):
        """Open a recording (a .rec file) or a scene (`load_scene`). -> bool. With kernels
        prepared beside the window (app.preparation), a shipped scene is loaded on its thread and
        opens a frame or more later (`poll_preparation`), another file once nothing compiles; the
        window says what it waits for."""
        if self.preparation is not None:
            task = self._task_of(name)
            if task is not None or not self.preparation.ready(None):
                self._wait_for(name)
                return True
        return self._open(name)

    def _open(self, name):
        if str(name).strip().lower().endswith(".rec"):
            return self.open_recording(name)
        return self.load_scene(name)

    def open_recording(self, path):
        """Open a recording, paused at its first step, to scrub and branch; on any error keep the
        current scene running and show the error. -> bool."""
        try:
            path = Path(path)
            timeline = read_recording(path).timeline(budget=self.budget_bytes())
        except Exception as error:  # noqa: BLE001 - a bad file of any kind must not stop the app
            said = str(error)  # a RecordingError names the file itself
            self.error = f"could not open {said if str(path) in said else f'{path}: {said}'}"
            return False
        self._adopt(timeline.sim, path, timeline.scene_text, timeline)
        self.paused = True
        self.notify(f"recording {path.name}: steps {timeline.origin} to {timeline.head}; "
                    "Space replays it, a change anywhere branches")
        return True

    def load_scene(self, name):
        """Load a scene; on any error keep the current one running and show the error. -> bool."""
        try:
            path = resolve_scene(name)
            built = self.preparation.take(self._task_of(name)) if self.preparation is not None else None
            sim = built if built is not None else physics.Simulation.from_file(path)
            # an imported robot (URDF, MJCF) carries its scene as TOML text: what a recording keeps
            text = sim.scene.toml_text if sim.scene.toml_text is not None else path.read_text()
            kept = self.prefs["physics"] if self.prefs["keep_physics"] else {}
            wanted = {**kept, **self.overrides}
            saved = []  # the user's saved choices that differ from the scene file's: say so, never silently
            for setting, value in wanted.items():
                try:
                    if setting not in self.overrides and getattr(sim.settings, setting) != value:
                        saved.append(f"{setting}={value} (scene: {getattr(sim.settings, setting)})")
                    sim.set(setting, value)
                except ValueError as error:  # a stale persisted value: drop it, keep going
                    self.prefs["physics"].pop(setting, None)
                    if setting in self.overrides:
                        raise
                    self.notify(f"ignored saved setting: {error}")
        except Exception as error:  # noqa: BLE001 - a bad file of any kind must not stop the app
            said = str(error)  # a SceneError names the file first, as resolve_scene's own errors do
            named = isinstance(error, SceneError) or said.startswith(f"{Path(name)}:")
            self.error = f"could not open {said if named else f'{name}: {said}'}"
            return False
        self._adopt(sim, path, text)
        # an imported model names what it skipped; the load, overlaps and mass ratios it found
        for note in (*sim.scene.warnings, *sim.warnings):
            self.notify(note)
        if saved:
            self.notify("your saved choices: " + ", ".join(saved))
        self.prefs["last_scene"] = str(path)
        return True

    def _adopt(self, sim, path, scene_text, timeline=None):
        """Show `sim` (loaded from `path`; its scene file's text) from now on, with `timeline`
        (a recording's) or a new one from its current state."""
        self.sim, self.scene_path, self.scene_text, self.error = sim, path, scene_text, None
        self.timeline = timeline if timeline is not None else Timeline(sim, budget=self.budget_bytes())
        self.selected, self.accumulator, self.paused, self.backwards = None, 0.0, False, False
        self.deferred = []      # waiting changes were for the scene shown before
        self.history.clear()
        self.stats["nodes"], self.stats["steps"] = len(sim.names), sim.step_count
        self.dynamic = np.flatnonzero(np.asarray(sim.motion) == "dynamic")  # node indices
        self.keys = self._scene_keys(sim)
        self.launched = None
        self.saved_keyframes = []       # keyframes saved in the Control section (app.panel), this scene's
        follow = sim.scene.view.get("follow")       # the scene's [view]: the camera rides that node (L: off)
        if follow is not None:
            self.selected = int(follow)
        self.refresh_state()
        self.listener.opened(sim, path, follow is not None)
        if getattr(self, "_settings_problem", None):     # the settings file set aside at start: said once
            self.notify(self._settings_problem)
            self._settings_problem = None

    def _scene_keys(self, sim):
        """The scene's [[key]]s (physics.dynamics.driving.KeyDrive), less any letter the app's own keys take
        (they come first: said once, at open)."""
        clash = sorted({k["key"] for k in sim.scene.keys if k["key"] in self.app_letters})
        if clash:
            self.notify(f"scene keys {', '.join(clash)} are the app's own (F1): not bound to the scene")
        return KeyDrive([k for k in sim.scene.keys if k["key"] not in clash])

    def drive_keys(self, inputs):
        """Give a scene key's inputs (control, launch): a launch says where its speed came from."""
        for kind, args in inputs:
            mark = f"{args[0]} {args[1]:g}" if kind == "control" else f"launch {args[0]}"
            if not self.give_input(kind, *args, mark=mark):
                return
            if kind == "launch" and self.last_input is not None:
                speed = next(spec["speed"] for spec in self.sim.scene.launchers if spec["name"] == args[0])
                self.notify(self.last_input.sentence(speed) + "; arrows at the muzzle: white its velocity, yellow "
                            "the launcher's own, blue, red, green each part")
                self.launched = self.last_input     # its arrows show for a while (app.view.LAUNCH_ARROWS_SECONDS)

    @property
    def error(self):
        """The error on screen until the user dismisses it, or None."""
        return self._error

    @error.setter
    def error(self, text):
        # logged as it comes; the same error set again while it shows is not a new one
        if text is not None and text != getattr(self, "_error", None):
            self.messages.append((self.sim.time if getattr(self, "sim", None) is not None else 0.0, text))
        self._error = text

    def notify(self, text):
        """Show a status message (over the scene: app.panel's toast) until the next action or
        MESSAGE_SECONDS from now, and add it to the panel's message log."""
        self.message, self.message_at = text, self.clock
        self.messages.append((self.sim.time if self.sim is not None else 0.0, text))

    def expire_message(self):
        if self.message_hovered:        # being read: it stays, and lasts MESSAGE_SECONDS after
            self.message_at = self.clock
        elif self.message is not None and self.clock - self.message_at > MESSAGE_SECONDS:
            self.message = None

    def next_scene(self, offset=1):
        """Open the scene `offset` places after the current one in the browser (wrapping)."""
        files = scene_files()
        shown = self.pending if self.pending is not None else self.scene_path     # a press while one opens: after it
        here = resolve_scene(str(shown)).resolve() if shown is not None else None
        # a scene opened from elsewhere: "next" is the first of the browser, "previous" the last
        current = files.index(here) if here in files else (-1 if offset > 0 else 0)
        if files:
            self.open(files[(current + offset) % len(files)])

    def previous_scene(self):
        self.next_scene(-1)

    def set(self, name, value, say=False):
        """Change one physics setting live, through the timeline: in the past it branches (the
        status message says so, the plots mark "branch"). A bad value shows in the panel. `say`:
        name the new value in the status message. While the warm-up compiles, it waits for the
        kernels it needs (`when_ready`). -> bool."""
        return self.when_ready(lambda: self._set(name, value, say), f"{name} = {history.format_value(value)}")

    def _set(self, name, value, say):
        step = self.sim.step_count
        branching = step < self.timeline.head
        try:
            self.timeline.apply("set", name, value)
        except ValueError as error:
            self.error = str(error)
            return False
        if name in settings_store.PHYSICS_KEYS:
            self.prefs["physics"][name] = getattr(self.sim.settings, name)
        shown = history.format_value(getattr(self.sim.settings, name))
        if branching:
            self.history.mark(self.sim.time, "branch")
        self.history.mark(self.sim.time, f"{name}: {shown}")
        self.refresh_state()
        said = [effects.sentence(self.sim, name, getattr(self.sim.settings, name))] if say else []
        if branching:
            previous = self.timeline.previous
            said.append(f"branched at step {step} (the previous future, steps {previous.start}-{previous.head}, is kept)")
        if said:
            self.notify("; ".join(said))
        return True

    def reparent(self, node, parent, keep="world"):
        """Move `node` (an index) under `parent` (an index, or None for the world) while running
        (physics.Simulation.reparent): an input of the timeline, given to the ghosts too
        (`give_input`). A refusal (a cycle) shows its error. -> bool."""
        return self.when_ready(lambda: self._reparent(node, parent, keep), f"reparenting {self.sim.names[node]}")

    def _reparent(self, node, parent, keep):
        sim = self.sim
        step, branching = sim.step_count, sim.step_count < self.timeline.head
        where = "world" if parent is None else sim.names[parent]
        if not self.give_input("reparent", node, parent, keep, mark=f"{sim.names[node]} -> {where}"):
            return False
        self.notify(f"{sim.names[node]} now under {where}, keeping its {'world motion' if keep == 'world' else 'local state'}"
                    + (f"; branched at step {step}" if branching else ""))
        return True

    def save_prefs(self):
        if self.store:
            settings_store.save(self.prefs)

    def _cycle(self, name, options):
        current = getattr(self.sim.settings, name)
        options = list(options)
        nxt = options[(options.index(current) + 1) % len(options)] if current in options else options[0]
        self.set(name, nxt, say=True)

    def toggle_pause(self):
        if self.backwards:  # playing backwards: Space stops there
            self.backwards, self.paused = False, True
        else:
            self.paused = not self.paused

    def single_step(self):
        self.paused, self.backwards = True, False
        self.step_physics(1)

    def step_forward(self):
        """One step on: in the past the recorded future replays, at the head a new step."""
        self.single_step()

    def step_back(self):
        self.paused, self.backwards = True, False
        self.seek(self.sim.step_count - 1)

    def toggle_backwards(self):
        """Play backwards at the time scale (a seek per frame) until the timeline's start, or stop."""
        self.backwards = not self.backwards
        self.paused = not self.backwards
        self.accumulator = 0.0

    def reset(self):
        """Back to the scene's first state with a new timeline (the settings are kept)."""
        self.sim.reset()
        self.timeline = Timeline(self.sim, budget=self.budget_bytes())
        self.accumulator, self.error, self.backwards = 0.0, None, False
        self.stats["steps"] = 0
        self.history.clear()
        self.listener.back_to_start()
        self.refresh_state()

    def budget_bytes(self):
        return int(self.prefs["timeline_budget_mb"] * 2**20)

    def set_budget(self, megabytes):
        """The timeline's keyframe memory budget (MB); past it the oldest keyframes go, and a message
        says which steps went (a stray click on the slider is not a silent loss)."""
        self.prefs["timeline_budget_mb"] = float(megabytes)
        origin = self.timeline.origin
        self.timeline.set_budget(self.budget_bytes())
        if self.timeline.origin > origin:
            self.notify(f"budget {float(megabytes):.0f} MB: steps {origin} to {self.timeline.origin - 1} dropped "
                        f"(the timeline starts at {self.timeline.origin} now)")

    def seek(self, step):
        """Show the state at `step` of the timeline (clamped to its start..end): the state is
        restored and the world state, contacts and overlays recomputed from it; the plots are cut
        back to its time, or, forward, sampled step by step over the last RESAMPLED_STEPS (the
        replayed inputs marked). Physics errors pause and show. -> the step reached."""
        timeline = self.timeline
        step = int(min(max(step, timeline.origin), timeline.head))
        start = time.perf_counter()
        try:
            if self.sim.diverged is not None:  # stopped inside a step: its state is no step's, restore one
                self.sim.restore(timeline.keyframes[max(k for k in timeline.keyframes if k <= step)])
            if step < self.sim.step_count:
                timeline.seek(step)
                self.history.truncate(self.sim.time)
            elif step > self.sim.step_count:
                if step - self.sim.step_count > RESAMPLED_STEPS:
                    timeline.seek(step - RESAMPLED_STEPS)
                    self.history.clear()  # its samples would end before a gap of unsampled time
                self._timeline_steps(step - self.sim.step_count, sample=True)
            self.refresh_state()
        except Exception as error:  # noqa: BLE001 - physics errors pause, never end the app
            self._physics_error(error)
        self.stats["physics_ms"] = 1e3 * (time.perf_counter() - start)
        self.stats["steps"] = self.sim.step_count
        return self.sim.step_count

    def _timeline_steps(self, n, sample=False, deadline=None):
        """Step the timeline n times, or fewer when perf_counter passes `deadline` (at least one);
        replayed inputs (and the step where the previous branch left this one) get their plot
        markers. `sample`: a plot sample after each step."""
        timeline = self.timeline
        for k in range(n):
            if deadline is not None and k > 0 and time.perf_counter() > deadline:
                break
            replaying = self.sim.step_count < timeline.head
            timeline.step(1)
            if replaying:
                for entry in timeline.inputs_at(self.sim.step_count):
                    if entry.kind == "force" and timeline.inputs_at(self.sim.step_count - 1):
                        continue  # a pull's force each step: marked where it begins
                    if timeline.previous is not None and entry.step == timeline.previous.start:
                        self.history.mark(self.sim.time, "branch")
                    self.history.mark(self.sim.time, input_label(entry))
            if sample:
                self.state = WorldState(self.sim)
                self.sample_history()

    def save_recording(self, path=None):
        """Save the timeline (start to end) as a recording: `path`, else the `record` path given
        at start (overwritten: this run owns it), else sandbox-<time>.rec in the working
        directory. The status message names the file; an error shows. -> the path or None."""
        own = path is None and self.record_path is not None
        path = Path(path) if path is not None else self.record_path or Path.cwd() / time.strftime("sandbox-%Y%m%d-%H%M%S.rec")
        try:
            size = write_recording(path, self.timeline, overwrite=own, scene_text=self.scene_text,
                                   keyframe_every=RECORDING_KEYFRAME_EVERY)
        except Exception as error:  # noqa: BLE001 - a failed save must not stop the app
            self.error = f"could not save the recording {path}: {type(error).__name__}: {error}"
            return None
        self.notify(f"saved {path} (steps {self.timeline.origin}-{self.timeline.head}, {size / 2**20:.1f} MB)")
        self.saved_recording = path
        return path

    def cycle_gyroscopic(self):
        self._cycle("gyroscopic", GYROSCOPIC)

    def cycle_integrator(self):
        self._cycle("integrator", integrator_names())

    def toggle_counteract(self):
        self.set("counteract", not self.sim.settings.counteract, say=True)

    def step_physics(self, n, budget=None):
        """Take n steps (a real-time frame: fewer if they pass `budget` seconds, at least one)."""
        if n <= 0 or self.sim is None:
            return
        start = time.perf_counter()
        deadline = None if budget is None else start + budget
        try:
            holding = self.listener.holding()
            if holding or self.keys.ramping:  # a pull's force, a held key's ramp: before each step
                for k in range(n):
                    if deadline is not None and k > 0 and time.perf_counter() > deadline:
                        break
                    if holding:
                        self.listener.before_step()
                    self.drive_keys(self.keys.held(self.sim.controls, self.sim.settings.dt))
                    self._timeline_steps(1)
            else:
                self._timeline_steps(n, deadline=deadline)
            self.refresh_state()
            bad = self.runaway_node()
            if bad is not None:
                self.paused = True
                self.error = (f"paused: node {self.sim.names[bad]!r} has a NaN or exploded "
                              f"(t = {self.sim.time:.4f} s); press Left to step back or R to reset")
                self.selected = bad
        except Exception as error:  # noqa: BLE001 - physics errors pause, never end the app
            self._physics_error(error)
        self.stats["physics_ms"] = 1e3 * (time.perf_counter() - start)
        self.stats["steps"] = self.sim.step_count

    def _physics_error(self, error):
        """Pause and show a physics error; a divergence selects the node it names."""
        from physics.pipeline.stages import DivergenceError      # (loaded with the first scene: the solver's modules)
        self.paused, self.backwards = True, False
        if isinstance(error, DivergenceError):
            self.error = f"paused: {error}; press Left to step back or R to reset"
            if error.node in self.sim.names:
                self.selected = list(self.sim.names).index(error.node)
        else:
            self.error = f"paused: physics raised {type(error).__name__}: {error}"
            traceback.print_exc()

    def refresh_state(self):
        self.state = WorldState(self.sim)
        try:
            self.contacts = self.sim.contacts()
        except Exception:  # noqa: BLE001 - contacts are display only
            self.contacts = (np.zeros((0, 3)), np.zeros((0, 3)))
        self.listener.state_changed()

    def runaway_node(self):
        """Index of the first node with a non-finite or runaway pose or motion, else None. Only
        dynamic bodies can run away (other nodes move as the scene prescribes): without them
        the poses are checked and the motion is not fetched."""
        s = self.state
        bad = ~(np.all(np.isfinite(s["T"]), axis=1) & np.all(np.isfinite(s["R"]), axis=(1, 2)))
        bad |= np.linalg.norm(s["T"], axis=1) > RUNAWAY_DISTANCE
        if self.dynamic.size:
            bad |= ~np.all(np.isfinite(s["v"]) & np.isfinite(s["omega"]), axis=1)
            bad |= np.maximum(np.linalg.norm(s["v"], axis=1), np.linalg.norm(s["omega"], axis=1)) > RUNAWAY_SPEED
        return int(np.argmax(bad)) if bad.any() else None

    def advance(self, frame_seconds, budget=None):
        """Step physics for `frame_seconds` of real time, scaled by the time scale, within `budget`
        seconds of physics if given (backwards: seek back as many steps, stopping at the
        timeline's start)."""
        if self.paused or self.sim is None:
            self.stats["physics_ms"] = 0.0
            return
        dt = self.sim.settings.dt
        self.accumulator += frame_seconds * self.prefs["time_scale"]
        # 1e-6 of a step of slack: scene files round dt (0.016666666667 > 1/60), which must not drop a
        # step every few frames; the remainder carries over, so no time is lost or gained.
        n = int(self.accumulator / dt + 1e-6)
        self.accumulator -= n * dt
        most = max(1, int(MAX_FRAME_SIMULATED / dt + 1e-6))
        if n > most:
            n, self.accumulator = most, 0.0
        if not self.backwards:
            self.step_physics(n, budget)
        elif n and self.seek(self.sim.step_count - n) <= self.timeline.origin:
            self.backwards, self.paused = False, True
            self.notify(f"at the timeline's start (step {self.timeline.origin})")

    def sample_history(self):
        """One sample of the plotted measurements (app.history.History takes it only when enough
        simulated time passed); a display error never stops the app."""
        if self.sim is None or self.state is None:
            return
        node = self.selected
        try:
            motion = (None, None) if node is None else (self.state["v"][node], self.state["omega"][node])
            self.history.sample(self.sim, node, *motion)
        except Exception as error:  # noqa: BLE001 - measurements are display only
            self.notify(f"plots: {type(error).__name__}: {error}")

    def give_input(self, kind, *args, mark=None):
        """An input other than a setting (physics.pipeline.timeline.Input "impulse", "force", "reparent")
        through the timeline, as `set` does a setting: in the past it branches; the ghosts
        (the listener's `input_given`: app.ghosts), brought to this moment, get it too. `mark`: a plot
        marker's text. A refused input shows its error. -> bool."""
        branching = self.sim.step_count < self.timeline.head
        try:
            self.last_input = self.timeline.apply(kind, *args)   # what it did (a launch's), or None
        except ValueError as error:
            self.error = str(error)
            return False
        self.listener.input_given(kind, args)
        if branching:
            self.history.mark(self.sim.time, "branch")
        if mark:
            self.history.mark(self.sim.time, mark)
        self.refresh_state()
        return True


    def close(self):
        """Save the `record` recording (if any) and the prefs; end a warm-up still running (what
        it compiled stays cached)."""
        if self.preparation is not None:
            self.preparation.close()
            interpret(False)
        if self.record_path is not None and self.timeline is not None:
            self.save_recording()
        self.save_prefs()
