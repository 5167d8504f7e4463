"""A user's tour of the viewer in a fresh process, every frame timed: `python tests/frame_tour.py
OUT.json [SCENE ...]` (tests/conftest.py's `tour` runs it with a warm kernel cache, for
tests/test_frame_times.py and tests/test_app_window.py).

It opens the viewer as `make run` does (kernels prepared beside the window, app.preparation),
then goes through every scene (PgDn), in each cycles every integrator (I) and gyroscopic mode (G)
and counteraction (C), and in some adds a ghost, reparents a body, views from a node, records a
video (F10), saves a recording (Ctrl+S), stalls one frame for a second (time.sleep) and at the end
replays the recording. Each key press or action is followed by a
frame at real time, and the action and its frame are timed together as the user sees them.

OUT.json gets one entry per frame: the scene, what was done, the frame's wall seconds and the CPU
seconds of the main thread, the wall seconds since the previous frame began (the real time this
frame may simulate, bounded by the viewer), the simulated time it added, the steps it took, the
numba compile events that happened on the main thread during it, and every kernel version the main
thread took during it, compiled or loaded from the cache (`physics.core.compiled.Kernel.add_overload`,
where both arrive): a frame that took one waited on it; and the scene files the main thread read
(`Simulation.from_file`), which the app reads on its loading thread. Beside OUT.json, shots/SCENE.png: each scene as it first shows, two frames
after it opened (taken between frames, outside their timing).
"""
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from numba.core import event
from pyglet.window import key

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from app.window import SandboxWindow  # noqa: E402
from physics.core.compiled import Kernel  # noqa: E402
from physics.pipeline import simulation  # noqa: E402

compiles_on_main, taken_on_main, loaded_on_main = [], [], []


def _name(dispatcher):
    function = dispatcher.py_func
    return f"{function.__module__}.{function.__qualname__}"


def _recording_load_scene(load_scene):
    def load(path, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            loaded_on_main.append(str(path))
        return load_scene(path, *args, **kwargs)
    return load


def _recording_add_overload(add_overload):
    def add(self, cres):
        if threading.current_thread() is threading.main_thread():
            taken_on_main.append(_name(self))
        return add_overload(self, cres)
    return add


class _Listener(event.Listener):
    def on_start(self, ev):
        if threading.current_thread() is threading.main_thread():
            compiles_on_main.append(_name(ev.data["dispatcher"]))

    def on_end(self, ev):
        pass


def main(out, scenes=None):
    event.register("numba:compile", _Listener())
    Kernel.add_overload = _recording_add_overload(Kernel.add_overload)
    simulation.load_scene = _recording_load_scene(simulation.load_scene)     # what Simulation.from_file reads with
    frames = []
    shots = Path(out).resolve().with_name("shots")
    shots.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="frame-tour-"))
    os.chdir(work)          # F10's video and Ctrl+S's recording land here
    window = SandboxWindow("tank", {}, vsync=False, store=False, prepare=True)
    viewer = window.viewer

    last = [None]

    def frame(what, action=None):
        before = (viewer.session.sim.time, viewer.session.sim.step_count) if viewer.session.sim is not None else (0.0, 0)
        compiled, taken, loaded = len(compiles_on_main), len(taken_on_main), len(loaded_on_main)
        start, cpu = time.perf_counter(), time.thread_time()
        interval = 0.0 if last[0] is None else start - last[0]      # what the viewer's clock sees
        last[0] = start
        if action is not None:
            action()
        window.frame()
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu
        sim = viewer.session.sim
        same = sim is not None and sim.step_count >= before[1]
        frames.append({"scene": viewer.session.scene_path.stem if viewer.session.scene_path else None, "what": what, "wall": wall, "cpu": cpu, "interval": interval + wall,
                       "advanced": (sim.time - before[0]) if same else 0.0,
                       "steps": (sim.step_count - before[1]) if same else 0,
                       "dt": sim.settings.dt if sim is not None else 0.0,
                       "time_scale": viewer.session.prefs["time_scale"],
                       "compiles": compiles_on_main[compiled:], "kernels_taken": taken_on_main[taken:],
                       "scenes_loaded": loaded_on_main[loaded:]})

    def shoot():
        """The open scene's picture, two frames after it opened, once per scene."""
        scene = viewer.session.scene_path.stem
        if scene in names and not (shots / f"{scene}.png").exists():
            frame("run")
            frame("run")
            viewer.screenshot(shots / f"{scene}.png")

    def settle(what, limit=600):
        """Frames until no scene waits and nothing loads (the warm-up's tasks for it are in); the
        scene's picture as soon as it opens (a scene that runs as Python while its kernels load
        opens before they are in, and runs on meanwhile)."""
        for _ in range(limit):
            frame(what)
            if viewer.session.pending is None and viewer.session.sim is not None:
                shoot()
                if not viewer.session.preparation.busy:
                    return
        raise RuntimeError(f"{what}: the scene did not open within {limit} frames")

    def press(symbol, modifiers=0):
        return lambda: window.dispatch_event("on_key_press", symbol, modifiers)

    names = scenes or [path.stem for path in sorted((HERE.parent / "assets" / "scenes").glob("*.toml"))]
    settle("open")
    visited = 0
    while visited < len(names) + 1:
        scene = viewer.session.scene_path.stem
        if scene in names:
            for _ in range(7):
                frame("I", press(key.I))
                frame("run")
            for _ in range(3):
                frame("G", press(key.G))
                frame("run")
            for _ in range(2):
                frame("C", press(key.C))
                frame("run")
            if scene == "t_handle":
                frame("ghost", lambda: viewer.ghosts.add_variant({"gyroscopic": "off"}))
                for _ in range(10):
                    frame("ghost run")
            if scene == "car":
                frame("crash A/B", viewer.ghosts.compare_counteraction)
                for _ in range(10):
                    frame("A/B run")
                cargo = [i for i in range(len(viewer.session.sim.names)) if viewer.session.sim.parent[i] >= 0
                         and viewer.session.sim.motion[i] == "dynamic"]
                frame("reparent", lambda: viewer.session.reparent(cargo[-1], None))
                frame("view from", lambda: viewer.view.view_from(int(viewer.session.sim.parent[cargo[0]])))
                for _ in range(10):
                    frame("view run")
                frame("F10 start", press(key.F10))
                for _ in range(10):
                    frame("video")
                frame("F10 stop", press(key.F10))
                frame("Ctrl+S", press(key.S, key.MOD_CTRL))
                frame("stall", lambda: time.sleep(1.0))     # a stalled frame: its time is dropped
                frame("after stall")
        if visited == len(names):
            break
        frame("PgDn", press(key.PAGEDOWN))
        settle("open next")
        visited += 1
    if viewer.session.saved_recording is not None:
        recording = viewer.session.saved_recording
        frame("replay", lambda: viewer.session.open(str(recording)))
        settle("replay")
        frame("play", press(key.SPACE))
        for _ in range(10):
            frame("replay run")
    window.close()
    Path(out).write_text(json.dumps(frames))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or None)
