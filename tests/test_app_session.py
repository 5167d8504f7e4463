"""The app's state without a window (app.session): a session opens, steps, seeks, branches and saves
as the viewer's does, and needs no display, no GL and no UI to do it."""
import subprocess
import sys
from pathlib import Path

import numpy as np

from app.session import Listener, Session

ROOT = Path(__file__).resolve().parent.parent


class Heard(Listener):
    """Writes down what the session tells its listener."""

    def __init__(self):
        self.said = []

    def opened(self, sim, path, follow):
        self.said.append(("opened", Path(path).stem, follow))

    def back_to_start(self):
        self.said.append(("back to start",))

    def input_given(self, kind, args):
        self.said.append(("input", kind))


def test_a_session_steps_seeks_branches_and_saves_without_a_window(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERARCHY_SANDBOX_CONFIG_DIR", str(tmp_path / "config"))
    heard = Heard()
    session = Session(store=False, scene="pendulum", listener=heard)
    session.start()
    assert heard.said == [("opened", "pendulum", False)] and session.error is None
    session.step_physics(20)
    hash_at_20 = session.sim.state_hash()
    assert session.seek(10) == 10 and session.sim.step_count == 10
    session.step_physics(10)            # the recorded future replays: the same bits
    assert session.sim.state_hash() == hash_at_20
    session.seek(5)
    assert session.set("integrator", "rk4")         # in the past: a branch, the old future kept
    assert session.timeline.previous is not None and session.timeline.head == 5
    bob = session.sim.names[int(session.dynamic[0])]
    assert session.give_input("impulse", bob, np.array([0.0, 0.0, 0.5]), None), session.error
    assert heard.said[-1] == ("input", "impulse")
    saved = session.save_recording(tmp_path / "run.rec")
    assert saved == tmp_path / "run.rec" and saved.stat().st_size > 0
    session.reset()
    assert heard.said[-1] == ("back to start",) and session.sim.step_count == 0


def test_a_bad_scene_is_an_error_and_the_default_runs():
    session = Session(store=False, scene="no-such-scene")
    session.start()
    assert "no-such-scene" in session.error and session.scene_path.stem == "tank"


def test_the_session_loads_no_window_gl_or_ui_module():
    """In a fresh process with no display: app.session steps a scene, and no module of pyglet,
    moderngl or Dear ImGui, nor the app's view, renderer, shadows or panel, is imported."""
    code = ("import sys; from app.session import Session\n"
            "s = Session(store=False, scene='t_handle'); s.start(); s.step_physics(3)\n"
            "assert s.error is None, s.error\n"
            "ui = ('pyglet', 'moderngl', 'imgui_bundle', 'app.view', 'app.renderer', 'app.shadows', 'app.panel')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ui or m in ui))")
    env = {key: value for key, value in __import__("os").environ.items() if key != "DISPLAY"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", result.stdout


def test_a_slow_frame_takes_its_simulated_time_whatever_the_step(tmp_path, monkeypatch):
    """A frame takes the steps its wall time is due, up to MAX_FRAME_SIMULATED of simulated time
    (eight 1/60 s steps, or as many shorter ones): a scene of dt 1/240 (the robot models') drawn
    at 12 frames a second keeps real time, where a cap of eight steps held it at 0.4 of it; a frame
    past the cap drops the rest and carries nothing over."""
    from app.session import MAX_FRAME_SIMULATED
    monkeypatch.setenv("HIERARCHY_SANDBOX_CONFIG_DIR", str(tmp_path / "config"))
    session = Session(store=False, scene="pendulum")
    session.start()
    session.sim.set("dt", 1 / 240)
    start = session.sim.step_count
    session.advance(1 / 12)                     # an 83 ms frame: 20 steps of 1/240 s are due
    assert session.sim.step_count - start == 20
    start = session.sim.step_count
    session.advance(1.0)                        # a stall: the frame takes 0.133 s of it, 32 steps
    assert session.sim.step_count - start == round(MAX_FRAME_SIMULATED * 240) == 32
    assert session.accumulator == 0.0


def test_an_error_is_kept_in_the_messages_log(tmp_path, monkeypatch):
    """An error box's text (a bad file opened) goes to the Messages section's log too, once, as the
    README says the log keeps every message; the scene keeps running."""
    monkeypatch.setenv("HIERARCHY_SANDBOX_CONFIG_DIR", str(tmp_path / "config"))
    session = Session(store=False, scene="pendulum")
    session.start()
    bad = tmp_path / "bad.toml"
    bad.write_text("[world\n")
    session.open(bad)
    assert session.error is not None and str(bad) in session.error
    assert [text for _, text in session.messages].count(session.error) == 1
    session.error = session.error           # set again while it shows: not logged again
    assert [text for _, text in session.messages].count(session.error) == 1
    assert session.scene_path.stem == "pendulum" and session.sim is not None


def test_a_budget_that_drops_steps_says_which(tmp_path, monkeypatch):
    """Lowering the timeline's budget below what it keeps drops its oldest keyframes, and a
    message names the steps dropped (one click on the slider could drop most of a run unseen)."""
    from app.settings import MIN_BUDGET_MB
    monkeypatch.setenv("HIERARCHY_SANDBOX_CONFIG_DIR", str(tmp_path / "config"))
    session = Session(store=False, scene="chain")
    session.start()
    session.step_physics(600)
    kept = session.timeline.bytes
    session.set_budget(MIN_BUDGET_MB)
    origin = session.timeline.origin
    assert session.timeline.bytes < kept and origin > 0
    assert session.message == (f"budget {MIN_BUDGET_MB:.0f} MB: steps 0 to {origin - 1} dropped "
                               f"(the timeline starts at {origin} now)")


def test_opening_a_directory_or_a_bad_file_says_what_and_where_once(tmp_path, monkeypatch):
    """The open box given a directory said "no scene file" as if nothing were there; it now says
    what the path is, as the command line does. A scene file with a syntax error is named once in
    the error, not twice (its SceneError names it already)."""
    from app.session import resolve_scene
    import pytest
    with pytest.raises(ValueError, match=": is a directory; expected a scene file"):
        resolve_scene(str(tmp_path))
    with pytest.raises(ValueError, match="no scene file"):
        resolve_scene(str(tmp_path / "missing.toml"))
    session = Session(store=False, scene="pendulum", listener=Listener())
    bad = tmp_path / "bad.toml"
    bad.write_text("[world\n")
    assert not session.load_scene(str(bad))
    assert session.error.startswith("could not open ") and session.error.count(str(bad)) == 1, session.error
    monkeypatch.chdir(tmp_path)     # a relative path to a bad file: named once, as the reader names it
    assert not session.load_scene("./bad.toml")
    assert session.error.startswith("could not open bad.toml: ") and session.error.count("bad.toml") == 1, session.error
    assert not session.load_scene("nosuchscene")        # a name the message quotes, with what it is not
    assert session.error.startswith("could not open nosuchscene: no scene file 'nosuchscene'"), session.error
    assert not session.load_scene(str(tmp_path))
    assert session.error == f"could not open {tmp_path}: is a directory; expected a scene file"
