"""The viewer's state and actions, independent of the window: one `Viewer` per GL context.

It owns the simulation (it asks `physics` for state and never computes physics itself), the
camera, the renderer, the panel, the overlays and the measurements the panel plots (`app.plots.History`,
sampled once per frame), and draws a frame into the framebuffer it is
given: `app.window` feeds it pyglet events and passes the window's own; the offscreen test
drives it with an EGL context, no window, and its offscreen `Viewer.target`. Screenshots draw
the last frame again into `Viewer.target` and read that (`read_rgb`).

Time: each frame adds `frame_seconds * time_scale` to an accumulator and takes as many
`settings.dt` steps as fit (at most MAX_STEPS_PER_FRAME, the rest is dropped so a slow frame
does not snowball). A real-time frame counts at most MAX_FRAME_SECONDS of the wall time since the
last one and spends at most PHYSICS_BUDGET_SECONDS stepping: after a stall simulated time goes on
from where it was, never jumping to catch up (MuJoCo's `simulate` and Box2D's samples drop it
too), and the Stats show the real-time factor. Any exception from physics, a NaN or a runaway
node pauses the simulation and shows the error: the app never exits on a physics or input error.

Kernels (app.preparation): with `prepare` (the interactive app), numba kernels are compiled in a
warm-up child process and loaded on a thread, never inside a frame; a scene opens, and a setting,
ghost or reparent applies, once its kernels are loaded, and the window says what it waits for.

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
stays while the pointer is on it; `messages` logs them all for the panel's Messages section.
"""
import collections
import time
import traceback
from pathlib import Path

import numpy as np
from imgui_bundle import imgui, implot
from pyglet.window import key, mouse

import physics
from app import culling, frames, handles, overlays, paths, picking, plots, settings as settings_store
from app.ghosts import Ghosts
from app.png import write_png
from app.preparation import Preparation
from app.video import VideoControl
from physics.core.compiled import interpret, is_interpreting
from physics.core.settings import GYROSCOPIC, integrator_names
from physics.dynamics.driving import KeyDrive
from physics.pipeline.recording import read_recording, write_recording
from physics.pipeline.timeline import Timeline
from physics.tools import effects
from physics.tools.warmup import SCENES, is_warm
from app.camera import Camera
from app.controls import KEYS, SCENE_KEYS, matches, resolve_scene, scene_files
from app.imgui_renderer import ImGuiInput, ImGuiRenderer
from app.panel import Panel
from app.renderer import SKY_RGB, Renderer, Target, model_matrices
from app.shadows import ShadowMap

DEFAULT_SCENE = "tank"
FALLBACK_SCENE = "t_handle"     # what a cancelled first wait for the default scene opens: one body, cheap as Python
MAX_STEPS_PER_FRAME = 8
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
LAUNCH_ARROWS_SECONDS = 3.0     # s of simulated time a launch's velocity arrows stay (`launch_lines`)
LAUNCH_PART_COLORS = ((0.3, 0.8, 1.0), (1.0, 0.45, 0.3), (0.5, 1.0, 0.4), (0.9, 0.5, 1.0))
CONTACT_CROSS, CONTACT_NORMAL = 0.02, 0.05  # m: a contact's cross and normal, small beside the pile's 0.2 m boxes
MESSAGE_SECONDS = 4.0   # a status message's life, s of frames (long enough to read a sentence)
MESSAGE_LOG = 200       # messages the panel's log keeps
RESAMPLED_STEPS = 600   # a seek forward steps through at most this many steps sampling the plots (10 s at 60 Hz)

def input_label(entry):
    """A timeline input (`physics.pipeline.timeline.Input`) as a plot marker's text."""
    if entry.kind == "set":
        return f"{entry.args[0]}: {plots.format_value(entry.args[1])}"
    return f"{entry.kind}: {entry.args[0]}"


def world_arrays(world):
    """The arrays the viewer draws from a physics DynamicTransform of batch (N,).

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
    """The viewer's per-frame state: T (N, 3), R (N, 3, 3), S (N, 3) from `sim.world_poses()`,
    the motion (v, a, omega, alpha, as `world_arrays`) from the full `sim.world()` on first use.

    Drawing needs only the poses; the full query settles every dynamic body's accelerations,
    which only the overlays, the inspector and the runaway check of scenes with dynamic bodies
    read (3.6 ms of a 10,000-node frame before this split). A state belongs to one moment:
    the viewer makes a new one after every step, so a late fetch sees the same state."""

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


class Viewer:
    def __init__(self, ctx, size, scene=None, overrides=None, store=True, msaa=None, record=None, video=None,
                 video_panel=True, prepare=False, frame_log=None):
        """`size` = (width, height) in pixels; `scene` = a scene or a recording (.rec) to open;
        `overrides` = physics settings from the command line (win over persisted ones); `store` =
        persist settings (config file); `record` = the path Ctrl+S saves the recording to (else
        sandbox-<time>.rec in the working directory); `video` = an MP4 to record to from the
        first frame, `video_panel` = whether videos show the panel (app.video); `msaa` = samples,
        None = 4 on a hardware GL and 0 on Mesa's software renderers (there 4x costs about ten
        times the whole scene: docs/benchmarks.md, section viewer). `prepare`: compile (when the
        kernel cache is not warm) and load the kernels beside the window (app.preparation), and
        open a scene or apply a change when its kernels are ready, instead of inside a frame.
        `frame_log`: a CSV file that gets one row per frame (frame, Unix time, wall seconds since
        the last frame, simulated time, steps taken, whether kernels were being prepared) for the
        frame-time tests and the start-up benchmark."""
        self.software = any(name in ctx.info["GL_RENDERER"].lower() for name in ("llvmpipe", "softpipe", "swrast"))
        self.store = store
        self.prefs = settings_store.load() if store else settings_store.load("/nonexistent/settings.json")
        self._settings_problem = settings_store.problem     # shown once the window can show messages
        if msaa is None:    # the command line's, else the user's last choice (the panel), else by renderer
            msaa = self.prefs["msaa"] if self.prefs["msaa"] is not None else (0 if self.software else 4)
        self.msaa = msaa
        self.ctx = ctx
        self.size = (max(int(size[0]), 1), max(int(size[1]), 1))
        self.target = Target(ctx, self.size, msaa)
        self.renderer = Renderer(ctx)
        self.shadow_map = ShadowMap(ctx)
        self.camera = Camera()
        self.overrides = dict(overrides or {})
        self.imgui_context = imgui.create_context()
        imgui.set_current_context(self.imgui_context)  # create_context makes it current only if none is
        imgui.get_io().set_ini_filename(None)  # window layout is ours, not imgui.ini in the cwd
        style = imgui.get_style()
        for part in (imgui.Col_.popup_bg, imgui.Col_.window_bg):   # opaque: no scene shows through text
            color = style.color_(part)
            style.set_color_(part, imgui.ImVec4(color.x, color.y, color.z, 1.0))
        self.implot_context = implot.create_context()  # one per ImGui context, made current with it
        imgui.get_io().display_size = self.size
        self.imgui = ImGuiRenderer(ctx)
        self.imgui_input = ImGuiInput(self.size[1])
        self.panel = Panel(self)
        self.sim, self.scene_path, self.state, self.timeline, self.scene_text = None, None, None, None, None
        self.record_path = None if record is None else Path(record)
        self.saved_recording = None  # the path of the last recording saved
        self.paused, self.accumulator, self.backwards = False, 0.0, False
        self.selected, self.follow, self.show_help = None, False, False
        self.quitting = False           # Ctrl+Q: the window closes (app.window)
        self.error, self.message = None, None
        self.clock, self.message_at = 0.0, 0.0  # s of frames drawn; when `message` was set
        self.messages = collections.deque(maxlen=MESSAGE_LOG)  # (sim time, text): the panel's log
        self.message_hovered = False    # the pointer is on the message (app.panel.toast): it stays
        self.stats = {"fps": 0.0, "physics_ms": 0.0, "render_ms": 0.0, "nodes": 0, "steps": 0, "rtf": 0.0}
        self.frame_count, self._last_frame = 0, None
        self.contacts = (np.zeros((0, 3)), np.zeros((0, 3)))
        self.history = plots.History()
        self.ghosts = Ghosts(self)  # variants run beside the main one; follow it in refresh_state
        self.frames, self.trails = frames.FrameView(), paths.Trails()  # view from a node; path history
        self.hand = handles.Hand(self)  # mouse pulls and flicks
        self.keys = KeyDrive(())        # the scene's [[key]]s (`_scene_keys`, at each open)
        self.last_input = None          # what the last input said it did (a launch's physics.dynamics.driving.Launch)
        self.launched = None            # the last launch (its arrows: `launch_lines`)
        self.saved_keyframes = []
        scene = scene or self.prefs.get("last_scene") or DEFAULT_SCENE
        self.preparation, self.pending, self.deferred, self._said_warmup_failed = None, None, [], False
        if prepare:
            self.preparation = Preparation(compile=not is_warm(), first=self._task_of(scene))
            if self.preparation.compiling:
                # until its kernels are loaded, a small scene runs as Python (the same bits)
                interpret(True)
        self.frame_log = None if frame_log is None else open(frame_log, "w", buffering=1)
        if self.frame_log is not None:
            self.frame_log.write("frame,unix_time,wall_s,sim_time,steps,preparing\n")
        if self.preparation is not None:
            self._wait_for(scene)   # opens in `poll_preparation` once its kernels are loaded
        else:
            self._open_first(scene)
        from app.stats import FrameStats     # here: it loads the solver's modules (numba), after the window is up
        self.timing = FrameStats()  # the panel's stage and frame-part times (app.stats)
        self.video = VideoControl(self, video, video_panel)
        self._video_on_open = video is not None and self.sim is None      # --video while the scene prepares
        if video is not None and self.sim is not None:
            self.video.start()

    # --- scenes and settings -------------------------------------------------------------------
    def _open_first(self, scene):
        """Open the first scene; if it fails, the default one runs and the error stays on screen."""
        if not self._open(scene) and scene != DEFAULT_SCENE:
            error = self.error
            self.load_scene(DEFAULT_SCENE)
            self.error = error

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
        task = self._task_of(self.pending) if self.pending is not None else None
        if self.pending is not None and (preparation.built(task) or (task is None and preparation.ready(None))
                                         or self._interpretable(self.pending, task)):
            pending, self.pending = self.pending, None
            if self.sim is None:
                self._open_first(pending)
            else:
                self._open(pending)
            if self._video_on_open and self.sim is not None:
                self._video_on_open = False
                self.video.start()      # --video records from the scene's first frame
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
            self.error = f"could not open {name}: {error}"
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
        self.renderer.set_shapes(sim.shapes, sim.colors, sim.scene.meshes, sim.scene.visible, sim.scene.parent)
        for said in self.renderer.mesh_errors:   # drawn without it; the physics is unchanged
            self.notify(said)
        self.selected, self.accumulator, self.paused, self.backwards = None, 0.0, False, False
        self.deferred = []      # waiting changes were for the scene shown before
        self.history.clear()
        self.frames.reset()
        self.trails.clear(keep_nodes=False)
        self.hand.release()
        self.stats["nodes"], self.stats["steps"] = len(sim.names), sim.step_count
        self.dynamic = np.flatnonzero(np.asarray(sim.motion) == "dynamic")  # node indices
        self.refresh_state()
        self.frame_scene()
        self.keys = self._scene_keys(sim)
        self.launched = None
        self.saved_keyframes = []       # keyframes saved in the Control section (app.panel), this scene's
        follow = sim.scene.view.get("follow")       # the scene's [view]: the camera rides that node (L: off)
        self.follow = follow is not None
        if follow is not None:
            self.selected = int(follow)
        self.on_scene_loaded(path)
        if getattr(self, "_settings_problem", None):     # the settings file set aside at start: said once
            self.notify(self._settings_problem)
            self._settings_problem = None

    def _scene_keys(self, sim):
        """The scene's [[key]]s (physics.dynamics.driving.KeyDrive), less any letter the app's own keys take
        (they come first: said once, at open)."""
        taken = {key.symbol_string(bound) for keys, _, _, _ in KEYS for bound in keys if not isinstance(bound, tuple)}
        clash = sorted({k["key"] for k in sim.scene.keys if k["key"] in taken})
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
                self.launched = self.last_input     # its arrows show for LAUNCH_ARROWS_SECONDS

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

    def on_scene_loaded(self, path):
        """Hook: the window sets its title here."""

    def set(self, name, value, say=False):
        """Change one physics setting live, through the timeline: in the past it branches (the
        status message says so, the plots mark "branch"). A bad value shows in the panel. `say`:
        name the new value in the status message. While the warm-up compiles, it waits for the
        kernels it needs (`when_ready`). -> bool."""
        return self.when_ready(lambda: self._set(name, value, say), f"{name} = {plots.format_value(value)}")

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
        shown = plots.format_value(getattr(self.sim.settings, name))
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

    # --- actions (keys and panel) -------------------------------------------------------------
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
        self.trails.clear()
        self.frames.history.clear()
        self.hand.release()
        self.refresh_state()

    # --- the timeline -------------------------------------------------------------------------
    def budget_bytes(self):
        return int(self.prefs["timeline_budget_mb"] * 2**20)

    def set_budget(self, megabytes):
        """The timeline's keyframe memory budget (MB); past it the oldest keyframes go."""
        self.prefs["timeline_budget_mb"] = float(megabytes)
        self.timeline.set_budget(self.budget_bytes())

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
            size = write_recording(path, self.timeline, overwrite=own, scene_text=self.scene_text)
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

    def toggle_help(self):
        self.show_help = not self.show_help

    def toggle_overlay(self):
        self.prefs["numbers"] = not self.prefs["numbers"]

    def escape(self):
        """Esc: close the help, else the error box, else the message; with nothing open, nothing.
        (ImGui's own pop-ups close on the Escape key it is sent first: `key_press`.)"""
        if self.show_help:
            self.show_help = False
        elif self.error:
            self.error = None
        else:
            self.message = None

    def quit(self):
        """Ctrl+Q: the window closes after this frame (`app.window`), through `close`, which saves
        the recording, the video and the view preferences as the close button does."""
        self.quitting = True

    def set_msaa(self, samples):
        """Multisample the scene with `samples` (0: off; the context's maximum at most: Target)
        from the next frame on, kept as a view preference. The target is remade at the start of
        the next frame (`_fit_target`), not in this one: the window chose this frame's framebuffer
        by `draws_offscreen` already."""
        self.msaa = self.prefs["msaa"] = int(samples)

    def _fit_target(self, samples=None):
        """Remake the offscreen target when the window's size or the samples asked for (`samples`,
        default `msaa`) changed."""
        samples = self.msaa if samples is None else samples
        if self.target.size != self.size or self.target.requested != samples:
            # bind the new target before releasing the old: moderngl re-binds the current
            # framebuffer after creating one, and a released name there is GL_INVALID_OPERATION
            old, self.target = self.target, Target(self.ctx, self.size, samples)
            self.target.draw.use()
            old.release()

    def toggle_follow(self):
        self.follow = not self.follow

    def reset_camera(self):
        self.camera.reset()
        self.frame_scene()

    def frame_scene(self):
        """Fit the camera to the nodes that have a finite shape (planes excluded)."""
        if self.state is None:
            return
        finite = [i for i, s in enumerate(self.sim.shapes) if s is not None and s["type"] != "plane"]
        points = self.state["T"][finite] if finite else self.state["T"]
        points = self.frames.to_frame(self.state, points[np.all(np.isfinite(points), axis=1)])
        if len(points):
            self.camera.frame(points.min(0) - 1.0, points.max(0) + 1.0, self.size[0] / self.size[1])

    def screenshot_key(self):
        path = Path.cwd() / time.strftime("sandbox-%Y%m%d-%H%M%S.png")
        self.screenshot(path)
        self.notify(f"saved {path}")

    def toggle_video(self):
        self.video.toggle()

    def screenshot(self, path):
        """Save the last frame (scene and panel) as a PNG."""
        write_png(path, self.read_rgb())

    # --- physics ------------------------------------------------------------------------------
    def step_physics(self, n, budget=None):
        """Take n steps (a real-time frame: fewer if they pass `budget` seconds, at least one)."""
        if n <= 0 or self.sim is None:
            return
        start = time.perf_counter()
        deadline = None if budget is None else start + budget
        try:
            if self.hand.holding or self.keys.ramping:  # a pull's force, a held key's ramp: before each step
                for k in range(n):
                    if deadline is not None and k > 0 and time.perf_counter() > deadline:
                        break
                    if self.hand.holding:
                        self.hand.before_step()
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
        self.ghosts.sync()  # every change of the main state: the ghosts follow (app.ghosts)

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
        if n > MAX_STEPS_PER_FRAME:
            n, self.accumulator = MAX_STEPS_PER_FRAME, 0.0
        if not self.backwards:
            self.step_physics(n, budget)
        elif n and self.seek(self.sim.step_count - n) <= self.timeline.origin:
            self.backwards, self.paused = False, True
            self.notify(f"at the timeline's start (step {self.timeline.origin})")

    def sample_history(self):
        """One sample of the plotted measurements (app.plots.History takes it only when enough
        simulated time passed); a display error never stops the app."""
        if self.sim is None or self.state is None:
            return
        node = self.selected
        try:
            motion = (None, None) if node is None else (self.state["v"][node], self.state["omega"][node])
            self.history.sample(self.sim, node, *motion)
        except Exception as error:  # noqa: BLE001 - measurements are display only
            self.notify(f"plots: {type(error).__name__}: {error}")

    # --- a frame ------------------------------------------------------------------------------
    def resize(self, width, height):
        self.size = (max(int(width), 1), max(int(height), 1))
        self.imgui_input.height = self.size[1]

    def frame(self, frame_seconds=None, screen=None):
        """Advance and draw one frame into `screen` (a moderngl framebuffer: the window's), or
        into `self.target.resolved` when None. `frame_seconds` None = real time."""
        self.timing.begin_frame()
        self._fit_target()      # the samples chosen last frame (`set_msaa`), as `draws_offscreen` said
        now = time.perf_counter()
        wall = 0.0 if self._last_frame is None else now - self._last_frame
        real_time = frame_seconds is None       # else a scripted frame: every step it is due, always
        if real_time:
            frame_seconds = min(wall, MAX_FRAME_SECONDS)
        if self._last_frame is not None and now > self._last_frame:
            fps = 1.0 / wall
            self.stats["fps"] = fps if self.stats["fps"] == 0 else 0.9 * self.stats["fps"] + 0.1 * fps
        self._last_frame = now
        self.clock += frame_seconds
        self.expire_message()
        self.poll_preparation()
        before = (self.sim.time, self.sim.step_count) if self.sim is not None else None
        self.advance(frame_seconds, PHYSICS_BUDGET_SECONDS if real_time else None)
        if before is not None and self.sim is not None and wall > 0:
            # real-time factor: simulated over wall seconds, smoothed like the FPS (paused: 0)
            rtf = (self.sim.time - before[0]) / wall if self.sim.step_count >= before[1] else 0.0
            self.stats["rtf"] = 0.9 * self.stats["rtf"] + 0.1 * max(rtf, 0.0)
        if self.frame_log is not None:
            simulated = self.sim.time if self.sim is not None else float("nan")
            steps = self.sim.step_count - before[1] if before is not None and self.sim is not None else 0
            self.frame_log.write(f"{self.frame_count},{time.time():.6f},{wall:.6f},{simulated:.9g},{steps},"
                                 f"{int(self.preparation is not None and self.preparation.busy)}\n")
        self.timing.lap("physics")
        self.sample_history()
        self.sample_frames()
        self.timing.lap("plots")
        if self.follow and self.selected is not None:
            self.camera.follow(self.frames.to_frame(self.state, self.state["T"][self.selected]))
        start = time.perf_counter()
        self.build_ui(frame_seconds)
        self.timing.lap("panel")
        self.draw(screen)
        self.stats["render_ms"] = 1e3 * (time.perf_counter() - start)
        self.timing.lap("render")
        self.frame_count += 1
        self.video.after_frame()
        self.timing.lap("video")

    @property
    def draws_offscreen(self):
        """Whether `frame` must draw into `self.target` (MSAA, or a video reading it) for the
        window to copy, rather than into the window's own buffer."""
        return self.msaa > 0 or self.video.offscreen   # as asked: the target follows at the frame's start

    def build_ui(self, frame_seconds):
        """Run the panel for this frame (ImGui's draw data then lasts until the next call)."""
        imgui.set_current_context(self.imgui_context)
        implot.set_current_context(self.implot_context)
        io = imgui.get_io()
        io.display_size = self.size
        io.delta_time = max(frame_seconds, 1e-4)
        imgui.new_frame()
        try:
            self.panel.draw()
        except Exception as error:  # noqa: BLE001 - a UI bug shows up as an error, not a crash
            self.error = f"panel: {type(error).__name__}: {error}"
            traceback.print_exc()
        imgui.render()

    def view_projection(self):
        """P V M_F⁻¹: the orbit camera in the frame viewed from (app.frames; the world: M_F = I)."""
        return self.camera.projection(self.size[0] / self.size[1]) @ self.camera.view() @ self.frames.world_to_frame(self.state)

    def eye_world(self):
        return self.frames.to_world(self.state, self.camera.eye_world)

    def forward_world(self):
        """The camera's viewing direction (unit, world)."""
        forward = self.camera.target_world - self.camera.eye_world
        return self.frames.direction_to_world(self.state, forward / np.linalg.norm(forward))

    def world_ray(self, x, y):
        """The world ray through window pixel (x, y) (pyglet's origin: bottom left)."""
        origin, direction = self.camera.ray(x, y, *self.size)
        return self.frames.to_world(self.state, origin), self.frames.direction_to_world(self.state, direction)

    def view_from(self, node):
        """Hold `node`'s frame still on screen (None: the world), the picture kept (app.frames)."""
        self.frames.choose(self.camera, self.state, node)
        self.notify(f"viewing from {self.frames.name(self.sim)}")

    def sample_frames(self):
        """A sample of the trails and of the selected node's acceleration terms (display only)."""
        if self.sim is None or self.state is None:
            return
        try:
            self.trails.sample(self.state, self.sim.time, (self.frames.node,))
            self.frames.sample(self.sim, self.state, self.selected)
        except Exception as error:  # noqa: BLE001 - measurements are display only
            self.frames.decompose = False
            self.notify(f"acceleration terms: {type(error).__name__}: {error}")

    def give_input(self, kind, *args, mark=None):
        """An input other than a setting (physics.pipeline.timeline.Input "impulse", "force", "reparent")
        through the timeline, as `set` does a setting: in the past it branches; the ghosts
        (app.ghosts), brought to this moment, get it too (`Comparison.apply_input`). `mark`: a plot
        marker's text. A refused input shows its error. -> bool."""
        branching = self.sim.step_count < self.timeline.head
        try:
            self.last_input = self.timeline.apply(kind, *args)   # what it did (a launch's), or None
        except ValueError as error:
            self.error = str(error)
            return False
        if self.ghosts.comparison is not None:
            self.ghosts.sync()
            try:
                self.ghosts.comparison.apply_input(kind, *args)
            except ValueError as error:  # a ghost's refusal is display: the main run goes on
                self.notify(f"ghosts: {error}")
        if branching:
            self.history.mark(self.sim.time, "branch")
        if mark:
            self.history.mark(self.sim.time, mark)
        self.refresh_state()
        return True

    def focal_px(self):
        """The projection's focal length in pixels, P[1, 1] * height / 2 (app.culling)."""
        return self.camera.projection(self.size[0] / self.size[1])[1, 1] * self.size[1] / 2

    def draw(self, screen=None):
        """Draw the scene and the last built UI into `screen` (default: the offscreen target).

        Without MSAA this is one pass straight into `screen`; with it, into the multisampled
        target, resolved into the target's plain buffer and copied to `screen` (same formats
        needed: the window passes None and copies the colour itself). Nothing else touches
        every pixel: on a software renderer each full-screen pass costs milliseconds."""
        # into the window's buffer (`screen`): the samples the window planned this frame for
        self._fit_target(None if screen is None else self.target.requested)
        screen = self.target.resolved if screen is None else screen
        fbo = self.target.msaa or screen
        self.render_scene(fbo)
        imgui.set_current_context(self.imgui_context)
        self.imgui.render(imgui.get_draw_data(), fbo)
        if fbo is not screen:
            self.ctx.copy_framebuffer(self.target.resolved, fbo)
            if screen is not self.target.resolved:
                self.ctx.copy_framebuffer(screen, self.target.resolved)

    def read_rgb(self):
        """The current picture (scene and panel) as (height, width, 3) uint8, top row first: the
        last frame drawn again into the offscreen target (the window's own buffer is not read)."""
        if self.frame_count == 0:
            self.build_ui(1 / 60)
        self.draw()
        return self.target.read_rgb()

    def render_scene(self, fbo):
        vp, s = self.view_projection(), self.state
        shadow = None
        if s is not None and self.prefs["shadows"]:  # the light's depth pass first: it binds its own framebuffer
            shadow = self.shadow_map.render(self.renderer, s["T"], s["R"], s["S"], vp, key=s, focal_px=self.focal_px())
        fbo.use()
        fbo.clear(*SKY_RGB, 1.0, depth=1.0)
        self.renderer.draw_grid(vp, shadow)
        if s is None:
            return
        opacity = self.sim.scene.opacity
        see_through = opacity is not None and bool((opacity < 1.0).any())
        self.renderer.draw_shapes(s["T"], s["R"], s["S"], vp, self.focal_px(), self.selected, self.eye_world(),
                                  self.sim.sleeping(), shadow=shadow, only=opacity >= 1.0 if see_through else None)
        if see_through:     # see-through nodes last, blended over what they cover (a car's cabin over its cargo)
            drawn = dict(self.renderer.drawn)
            for alpha in np.unique(opacity[opacity < 1.0]):
                self.renderer.draw_shapes(s["T"], s["R"], s["S"], vp, self.focal_px(), self.selected, self.eye_world(),
                                          self.sim.sleeping(), alpha=float(alpha), only=opacity == alpha, shadow=shadow)
                for key, count in self.renderer.drawn.items():
                    drawn[key] = drawn.get(key, 0) + count
            self.renderer.drawn = drawn
        self.ghosts.draw(vp)
        for segments, colors in self.overlay_lines():
            self.renderer.draw_lines(segments, colors, vp)

    def overlay_lines(self):
        """One line list per enabled overlay (each one draw call); what is off screen or under
        a pixel long is left out (app.overlays)."""
        s, on, scale = self.state, self.prefs["overlays"], self.prefs["arrow_scale"]
        ppm = culling.screen_radius(s["T"], 1.0, self.view_projection(), self.focal_px())  # px per m
        lines = []
        if on["frames"]:
            lines.append(overlays.frames(s["T"], s["R"], 0.5 * np.mean(s["S"], axis=1), ppm))
        if on["velocity"]:
            lines.append(overlays.arrows(s["T"], s["v"], scale, overlays.COLORS["velocity"], ppm))
        if on["angular_velocity"]:
            lines.append(overlays.arrows(s["T"], s["omega"], scale, overlays.COLORS["angular_velocity"], ppm))
        dynamic = self.dynamic[ppm[self.dynamic] > 0]  # dynamic nodes on screen
        if on["angular_momentum"] and dynamic.size:
            L = self.sim.body_momenta()["spin"][dynamic]
            lines.append(overlays.arrows(s["T"][dynamic], L, scale, overlays.COLORS["angular_momentum"], ppm[dynamic]))
        if on["inertial"] and dynamic.size:
            try:
                accelerations = self.sim.inertial_accelerations()
            except Exception as error:  # noqa: BLE001 - a display error must not stop physics
                accelerations = {}
                self.notify(f"inertial accelerations unavailable: {error}")
            lines.append(overlays.concatenate([
                overlays.arrows(s["T"][dynamic], np.asarray(a)[dynamic], scale, overlays.COLORS.get(name, (1, 1, 1)), ppm[dynamic])
                for name, a in accelerations.items()
            ]))
        if on["contacts"] and len(self.contacts[0]):
            points, normals = self.contacts
            ppm = culling.screen_radius(points, 1.0, self.view_projection(), self.focal_px())
            lines.append(overlays.concatenate([
                overlays.crosses(points, CONTACT_CROSS, overlays.COLORS["contact_point"], ppm),
                overlays.arrows(points, normals, CONTACT_NORMAL, overlays.COLORS["contact_normal"], ppm),
            ]))
        lines += self.trails.overlay_lines(s, self.frames.node)
        if self.selected is not None:
            ppm = culling.screen_radius(s["T"], 1.0, self.view_projection(), self.focal_px())
            lines += self.frames.overlay_lines(s, self.selected, scale, ppm)
        return lines + self.hand.overlay_lines(s) + self.launch_lines()

    def launch_lines(self):
        """The last launch's velocity at the muzzle, as arrows (0.1 s of flight long) for
        LAUNCH_ARROWS_SECONDS of simulated time: white the launch velocity, and from the muzzle its
        parts, each moving ancestor's in a colour of its own and the launcher's own speed in yellow
        (they add up to the white one; the message names them)."""
        launch = getattr(self, "launched", None)
        if launch is None or not 0.0 <= self.sim.time - launch.time <= LAUNCH_ARROWS_SECONDS:
            return []
        vectors = [launch.velocity_world, launch.velocity_world - launch.muzzle_velocity_world, *launch.parts.values()]
        colors = [(1.0, 1.0, 1.0), (1.0, 0.9, 0.2)] + [LAUNCH_PART_COLORS[i % len(LAUNCH_PART_COLORS)]
                                                          for i in range(len(launch.parts))]
        return [overlays.concatenate([overlays.arrows(launch.point_world, v, 0.1, c) for v, c in zip(vectors, colors)])]

    # --- input (pyglet coordinates: origin bottom left) ---------------------------------------
    def wants_keyboard(self):
        imgui.set_current_context(self.imgui_context)
        return imgui.get_io().want_text_input

    def wants_mouse(self):
        imgui.set_current_context(self.imgui_context)
        return imgui.get_io().want_capture_mouse

    def over_ui(self, x, y):
        """Whether window point (x, y) (pyglet's, origin bottom left) is on the UI: ImGui wants the
        mouse, or the point is inside a window drawn last frame. The second catches a press made
        as the pointer enters the panel, before ImGui has seen it hover there: it used to orbit."""
        if self.wants_mouse():
            return True
        top = self.size[1] - y
        return any(x0 <= x <= x1 and y0 <= top <= y1 for x0, y0, x1, y1 in self.panel.windows.values())

    def key_press(self, symbol, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.key(symbol, True)
        if self.wants_keyboard():
            return
        if not self.message_hovered:
            self.message = None  # a status message lasts until the next action
        try:
            for keys, _, method, _ in KEYS:
                if any(matches(bound, symbol, modifiers) for bound in keys):
                    getattr(self, method)()
                    return
            letter = key.symbol_string(symbol)
            if self.sim is not None and letter in self.keys.letters and not modifiers & (key.MOD_CTRL | key.MOD_ALT):
                self.drive_keys(self.keys.press(letter, self.sim.controls))
                return
            if symbol in SCENE_KEYS:
                files = scene_files()
                i = SCENE_KEYS.index(symbol)
                if i < len(files):
                    self.open(files[i])
        except Exception as error:  # noqa: BLE001 - input errors show, never end the app
            self.error = f"key {key.symbol_string(symbol)}: {type(error).__name__}: {error}"

    def release_keys(self):
        """Let go of every scene key held (the window lost the keyboard, and no release will come):
        each gives its release input, recorded as a key's own would be."""
        for letter in sorted(self.keys.down):
            try:
                self.drive_keys(self.keys.release(letter, self.sim.controls) if self.sim is not None else [])
            except Exception as error:  # noqa: BLE001 - input errors show, never end the app
                self.error = f"key {letter}: {type(error).__name__}: {error}"
        self.keys.down.clear()

    def key_release(self, symbol, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.key(symbol, False)
        letter = key.symbol_string(symbol)
        if self.sim is not None and letter in self.keys.down:
            try:
                self.drive_keys(self.keys.release(letter, self.sim.controls))
            except Exception as error:  # noqa: BLE001 - input errors show, never end the app
                self.error = f"key {letter}: {type(error).__name__}: {error}"

    def text(self, text):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.text(text)

    def mouse_motion(self, x, y):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.motion(x, y)

    def mouse_press(self, x, y, button, modifiers):
        imgui.set_current_context(self.imgui_context)
        over_ui = self.over_ui(x, y)
        if not self.message_hovered:
            self.message = None  # a status message lasts until the next action
        self.imgui_input.button(x, y, button, True)
        self._press = None if over_ui else (x, y)
        if not over_ui and modifiers & key.MOD_CTRL and button in (mouse.LEFT, mouse.RIGHT):
            self._press = None      # Ctrl is the hand's: a grab that misses never orbits or picks
            try:
                self.hand.press(x, y, flick=button == mouse.RIGHT)
            except ValueError as error:
                self.error = str(error)

    def mouse_release(self, x, y, button, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.button(x, y, button, False)
        if self.hand.holding or self.hand.flick is not None:
            self.hand.finish(x, y)
        press = getattr(self, "_press", None)
        if press is not None and button == mouse.LEFT and abs(x - press[0]) + abs(y - press[1]) <= 3:
            self.pick(x, y)
        self._press = None

    def mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.motion(x, y)
        if self.hand.holding or self.hand.flick is not None:
            self.hand.drag(x, y)
            return
        if getattr(self, "_press", None) is None:
            return
        if buttons & (mouse.RIGHT | mouse.MIDDLE) or (buttons & mouse.LEFT and modifiers & key.MOD_SHIFT):
            self.camera.pan(dx, dy, self.size[1])
        elif buttons & mouse.LEFT:
            self.camera.orbit(dx, dy)

    def mouse_scroll(self, x, y, scroll_x, scroll_y):
        imgui.set_current_context(self.imgui_context)
        if self.over_ui(x, y):
            self.imgui_input.scroll(scroll_x, scroll_y)
        else:
            self.camera.zoom(scroll_y)

    def pick(self, x, y):
        """Select the node under window pixel (x, y); empty space deselects."""
        self.selected, _ = self.pick_point(x, y)
        return self.selected

    def pick_point(self, x, y, reach=0):
        """(node, world point) of the first shape under window pixel (x, y); (None, None) if none.
        With `reach` (pixels), a ray that misses is tried again around the pixel, in rings out to
        `reach` px, and the nearest ring's hit is taken: a link a pixel or two wide is grabbed as
        easily as a wide one."""
        s = self.state
        instances = {
            kind: (g["index"], model_matrices(s["T"][g["index"]], s["R"][g["index"]], s["S"][g["index"]], g["shape_matrices"]), g["half_length"])
            for kind, g in self.renderer.groups.items()
        }
        rings = [(0.0, 1)] + [(r, 12) for r in range(2, int(reach) + 1, 2)]
        for radius, count in rings:
            best = (None, np.inf, None)
            for k in range(count):
                angle = 2 * np.pi * k / count
                origin, direction = self.world_ray(x + radius * np.cos(angle), y + radius * np.sin(angle))
                node, t = picking.pick(origin, direction, instances)
                if node is not None and t < best[1]:
                    best = (node, t, origin + t * direction)
            if best[0] is not None:
                return best[0], best[2]
        return None, None

    def close(self):
        """Save the `record` recording and the video (if any) and the prefs, release GL and ImGui;
        end a warm-up still running (what it compiled stays cached)."""
        if self.preparation is not None:
            self.preparation.close()
            interpret(False)
        if self.frame_log is not None:
            self.frame_log.close()
        self.video.stop()
        self.timing.close()
        if self.record_path is not None and self.timeline is not None:
            self.save_recording()
        self.save_prefs()
        imgui.set_current_context(self.imgui_context)
        self.imgui.release()
        implot.destroy_context(self.implot_context)  # before its ImGui context
        imgui.destroy_context(self.imgui_context)
        self.target.release()
        self.shadow_map.release()
