"""The viewer's timeline: seek, step back, branch, plots cut back, recordings saved and opened.

Every check of a state is by `state_hash()` against an independent run: a plain
`physics.Simulation` of the same scene stepped without a timeline, with the same change given at
the same step (hashes are SHA-256 over the whole state, so equal means bit for bit). The history
(app.history.History) is checked against known sample times. The viewer runs offscreen through EGL
(no X server) in a subprocess, and in a real window under X with real key presses (xdotool).
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SPINNER, frames, xdotool

from app.history import History

ROOT = Path(__file__).resolve().parent.parent
TANK = ROOT / "assets" / "scenes" / "tank.toml"


class FakeSim:
    """time and constant energy/momentum: the history's bookkeeping on known numbers."""

    def __init__(self):
        self.time, self.total = 0.0, 1.0

    def energy(self):
        return {"kinetic": self.total, "potential": 0.0}

    def momentum(self):
        return {"linear": np.zeros(3), "angular": np.zeros(3)}


def plain_hashes(steps, change_at=None, change=None):
    """{step: hash} of the tank stepped without a timeline; `change` (name, value) set at `change_at`."""
    import physics
    sim = physics.Simulation.from_file(TANK)
    hashes = {}
    for s in range(steps + 1):
        if s == change_at:
            sim.set(*change)
        hashes[s] = sim.state_hash()
        if s < steps:
            sim.step(1)
    return hashes


# --- the history, no display ---------------------------------------------------------------------

def test_truncate_forgets_the_cut_off_future_exactly():
    """Samples every 0.1 s to 3 s, a marker at 1.05 s: cut back to 1.5 s, exactly the samples at
    or before 1.5 s stay (in order, same values), the marker stays, and sampling goes on from there
    (time going back would otherwise clear everything). Cut back before the marker, the marker goes
    and the drift's E0 is the one taken before it."""
    sim, history = FakeSim(), History(capacity=16, window=2.0)  # the ring wraps: 31 samples, 16 kept
    for i in range(31):
        sim.time, sim.total = 0.1 * i, 1.0 + (0.5 if sim.time > 1.05 else 0.0)
        if i == 11:
            history.mark(1.05, "integrator: rk4")
        history.sample(sim)
    t_before, values_before = history.series()
    history.truncate(1.5)
    t, values = history.series()
    kept = t_before <= 1.5
    np.testing.assert_array_equal(t, t_before[kept])
    np.testing.assert_array_equal(values, values_before[:, kept])
    assert history.markers == [(1.05, "integrator: rk4")] and history.reference_energy == 1.5
    sim.time = 1.6
    assert history.sample(sim) and history.series()[0][-1] == 1.6 and history.count == kept.sum() + 1
    history.truncate(1.0)
    assert history.markers == [] and history.reference_energy == 1.0
    assert history.series()[0].max() <= 1.0
    drift = history.channel("drift")[1]
    assert np.all(np.abs(drift) < 1e-15)  # every sample before the change had E = E0 = 1 J


def test_budget_prefs_are_checked(app_config):
    from app import settings as store
    prefs = store.load()
    assert prefs["timeline_budget_mb"] == 256.0
    for bad in ("big", 0.0, 1e9, True):
        store.config_path().parent.mkdir(parents=True, exist_ok=True)
        store.config_path().write_text(json.dumps({"timeline_budget_mb": bad}))
        assert store.load()["timeline_budget_mb"] == 256.0
    store.config_path().write_text(json.dumps({"timeline_budget_mb": 64}))
    assert store.load()["timeline_budget_mb"] == 64.0


# --- the viewer offscreen (EGL), no window ---------------------------------------------------------

SCRIPT = """
import json, os, sys
os.environ.pop("DISPLAY", None)
import pyglet
pyglet.options["headless"] = True
import moderngl, numpy as np
from app.viewer import Viewer
ctx = moderngl.create_standalone_context(backend="egl")
out, bad = sys.argv[1], sys.argv[2]
v = Viewer(ctx, (1280, 720), "tank", store=False, msaa=0)
report = {}
for _ in range(40):
    v.frame(1 / 60)
v.session.toggle_pause()
old = dict(v.session.timeline.hashes)
report["head"] = v.session.timeline.head
for _ in range(15):
    v.session.step_back()
v.frame(1 / 60)
report["back"] = v.session.sim.step_count
report["back_hash_matches"] = v.session.sim.state_hash() == old[v.session.sim.step_count]
report["last_sample"] = float(v.session.history.series()[0][-1])
report["time"] = v.session.sim.time
report["world_T_matches"] = bool(np.array_equal(v.session.state["T"], v.session.sim.world_poses()[0]))
v.session.seek(10)
report["seek10_hash_matches"] = v.session.sim.state_hash() == old[10]
v.session.seek(25)
report["seek25_samples"] = int(v.session.history.count)
report["integrator_before"] = v.session.sim.settings.integrator
v.session.set("integrator", "rk4")
report["previous"] = [v.session.timeline.previous.start, v.session.timeline.previous.head]
report["previous_hashes_kept"] = all(v.session.timeline.previous.hashes[s] == old[s] for s in range(25, 41))
report["markers"] = [text for _, text in v.session.history.markers]
v.session.toggle_pause()
for _ in range(20):
    v.frame(1 / 60)
report["new_hashes"] = {s: v.session.timeline.hashes[s] for s in range(0, v.session.timeline.head + 1)}
report["saved"] = str(v.session.save_recording(out))
report["opened_bad"] = v.session.open(bad)
report["error"] = v.session.error
t = v.session.sim.time
for _ in range(3):
    v.frame(1 / 60)
report["kept_running"] = v.session.sim.time > t and v.session.scene_path.stem == "tank"
report["opened"] = v.session.open(out)
report["opened_at"] = [v.session.sim.step_count, v.session.timeline.origin, v.session.timeline.head, v.session.paused]
v.session.seek(v.session.timeline.head)
report["reopened_head_matches"] = v.session.sim.state_hash() == report["new_hashes"][v.session.timeline.head]
v.close()
print(json.dumps(report))
"""


def test_viewer_seeks_branches_and_round_trips_a_recording(tmp_path, app_config):
    """Offscreen: 40 steps of the tank, 15 steps back (each restored state's hash is the one the
    run had; the plots end at the state's time), a seek, the integrator changed at step 25: a
    branch (the old steps 25-40 kept bit for bit, a "branch" marker), 20 more steps equal to a plain
    run with rk4 from step 25. Saved, the recording verifies; a bad .rec shows an error and the
    tank keeps running; the saved one opens paused at its start and reaches the same last state."""
    from physics.pipeline.recording import read_recording
    out, bad = tmp_path / "run.rec", tmp_path / "bad.rec"
    bad.write_bytes(b"not a recording at all")
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(out), str(bad)], cwd=ROOT, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert r["head"] == 40 and r["back"] == 25 and r["back_hash_matches"] and r["world_T_matches"]
    assert r["last_sample"] <= r["time"]  # nothing plotted from the cut-off future
    assert r["seek10_hash_matches"] and r["seek25_samples"] == 25  # steps 1..25, one sample each (1/60 s > spacing)
    assert r["integrator_before"] != "rk4" and r["previous"] == [25, 40] and r["previous_hashes_kept"]
    assert r["markers"][-2:] == ["branch", "integrator: rk4"]
    expected = plain_hashes(45, change_at=25, change=("integrator", "rk4"))
    assert {int(s): h for s, h in r["new_hashes"].items()} == expected
    assert r["saved"] == str(out) and not r["opened_bad"] and "bad.rec" in r["error"] and r["kept_running"]
    assert r["opened"] and r["opened_at"] == [0, 0, 45, True] and r["reopened_head_matches"]
    recording = read_recording(out)
    assert recording.hashes == expected
    assert recording.verify() == (45, None)


# --- the window under X, real key presses -----------------------------------------------------------



def _keys(w, *keys):
    xdotool(w, "key", "--delay", "30", *keys)


@pytest.mark.display
def test_scrub_back_change_integrator_run_on_with_real_keys(window, tmp_path, monkeypatch):
    """Real key presses: Space pauses the running tank, Left x12 steps back 12 steps, I changes
    the integrator there (a branch), Space runs on, Space pauses, Ctrl+S saves. The new branch is a
    plain run with the new integrator from that step (every step's hash), the old branch's hashes
    are unchanged, the plots end at the shown state and mark the branch, and the saved recording
    holds the new branch and verifies by re-simulation."""
    from conftest import require_tool
    from physics.pipeline.recording import read_recording
    require_tool("xdotool", "xdotool")
    monkeypatch.chdir(tmp_path)  # Ctrl+S saves sandbox-<time>.rec here
    w = window(str(TANK))
    v = w.viewer
    frames(w, 30)
    xdotool(w, "mousemove", "--window", str(w._window), "900", "500")  # off the panel: keys reach the scene
    xdotool(w, "windowfocus", "--sync", str(w._window))
    _keys(w, "space")
    assert v.session.paused
    paused_at = v.session.sim.step_count
    old = dict(v.session.timeline.hashes)
    assert paused_at > 20 and old == plain_hashes(paused_at)
    _keys(w, *["Left"] * 12)
    branch_at = paused_at - 12
    assert v.session.sim.step_count == branch_at and v.session.sim.state_hash() == old[branch_at]
    assert v.session.history.series()[0][-1] <= v.session.sim.time
    before = v.session.sim.settings.integrator
    _keys(w, "i")
    after = v.session.sim.settings.integrator
    assert after != before
    previous = v.session.timeline.previous
    assert (previous.start, previous.head) == (branch_at, paused_at)
    assert previous.hashes == {s: old[s] for s in range(branch_at, paused_at + 1)}
    assert "branched" in v.session.message and v.session.history.markers[-2][1] == "branch"
    _keys(w, "space")
    frames(w, 30)
    _keys(w, "space")
    assert v.session.paused and v.session.sim.step_count > paused_at
    head = v.session.timeline.head
    assert v.session.timeline.hashes == plain_hashes(head, change_at=branch_at, change=("integrator", after))
    assert v.session.timeline.previous.hashes == {s: old[s] for s in range(branch_at, paused_at + 1)}
    _keys(w, "ctrl+s")
    saved = sorted(tmp_path.glob("sandbox-*.rec"))
    assert len(saved) == 1 and str(saved[0]) in v.session.message
    recording = read_recording(saved[0])
    assert recording.hashes == v.session.timeline.hashes and recording.verify() == (head, None)


@pytest.mark.display
def test_shift_left_plays_backwards_to_the_start(window):
    """Shift+Left (real keys) plays backwards, one step a frame at 1x, the plots cut back with it;
    at the timeline's start it stops and pauses, showing the first state."""
    from conftest import require_tool
    require_tool("xdotool", "xdotool")
    w = window(str(TANK))
    v = w.viewer
    frames(w, 60)
    xdotool(w, "windowfocus", "--sync", str(w._window))
    _keys(w, "space")
    start = v.session.sim.step_count
    _keys(w, "shift+Left")
    assert v.session.backwards and not v.session.paused and v.session.sim.step_count < start
    assert v.session.history.series()[0][-1] <= v.session.sim.time
    frames(w, start)
    assert not v.session.backwards and v.session.paused and v.session.sim.step_count == v.session.timeline.origin == 0
    assert v.session.sim.state_hash() == v.session.timeline.hashes[0] and v.session.history.count <= 1


@pytest.mark.display
def test_bad_recording_dropped_or_typed_shows_error_and_scene_runs(window, tmp_path):
    """A corrupt .rec dropped onto the window, and typed into the open-file box (real typing and
    clicks): each shows its error naming the file, the tank keeps running. A good one dropped
    opens paused at its start."""
    from conftest import require_tool
    require_tool("xdotool", "xdotool")
    bad = tmp_path / "broken.rec"
    bad.write_bytes(b"HSREC\x00\x00\x01" + b"\x00" * 64)
    w = window(str(TANK))
    v = w.viewer
    frames(w, 3)
    w.dispatch_event("on_file_drop", 600, 300, [str(bad)])
    frames(w, 1)
    assert "broken.rec" in v.session.error and v.session.scene_path == TANK
    t = v.session.sim.time
    frames(w, 3)
    assert v.session.sim.time > t
    v.session.error = None
    wid = str(w._window)
    from test_app_choices import click_item
    click_item(w, "path")               # scrolled into view (the Control section sits above it)
    xdotool(w, "type", "--delay", "5", str(bad))
    # ImGui takes queued key events a few a frame: on a busy machine the typing can end before the
    # window has drawn enough frames to take them all
    for _ in range(200):
        if v.panel.open_path == str(bad):
            break
        frames(w, 1)
    assert v.panel.open_path == str(bad)
    x0, y0, x1, y1 = v.panel.item_rects["Open"]
    xdotool(w, "mousemove", "--window", wid, str(int((x0 + x1) / 2)), str(int((y0 + y1) / 2)))
    xdotool(w, "click", "1")
    assert v.session.error is not None and "broken.rec" in v.session.error and v.session.scene_path == TANK
    t = v.session.sim.time
    frames(w, 3)
    assert v.session.sim.time > t
    v.session.error = None
    click_item(w, "path")
    xdotool(w, "key", "Return")         # Enter in the box opens its file as Open does
    for _ in range(100):
        if v.session.error is not None:
            break
        frames(w, 1)
    assert v.session.error is not None and "broken.rec" in v.session.error and v.session.scene_path == TANK
    good = tmp_path / "good.rec"
    assert v.session.save_recording(good) == good
    w.dispatch_event("on_file_drop", 600, 300, [str(good)])
    frames(w, 1)
    assert v.session.error is None and v.session.scene_path == good and v.session.paused and v.session.sim.step_count == v.session.timeline.origin




@pytest.mark.display
@pytest.mark.parametrize("speed, stopped_at, said", [(1e6, 0, "'spinner' diverged in step 1"),
                                                      (300.0, 4, "'spinner' has a NaN or exploded")])
def test_a_blow_up_pauses_and_left_steps_back_to_a_good_state(window, tmp_path, speed, stopped_at, said):
    """A step that blows up pauses the run, names and selects the node; Left then shows the step
    before (or, at the first step, that step again), restored: its recorded hash, the divergence
    cleared; Right replays it."""
    from conftest import press
    from pyglet.window import key
    scene = tmp_path / "spinner.toml"
    scene.write_text(SPINNER.format(speed, speed / 10))
    w = window(str(scene))
    v = w.viewer
    for _ in range(60):
        frames(w, 1)
        if v.session.paused:
            break
    assert v.session.paused and said in v.session.error and v.session.selected == 0
    assert v.session.sim.step_count == v.session.timeline.head == stopped_at
    press(w, key.LEFT)
    back = max(stopped_at - 1, 0)
    assert v.session.sim.step_count == back and v.session.sim.diverged is None
    assert v.session.sim.state_hash() == v.session.timeline.hashes[back]
    if stopped_at > 0:
        press(w, key.RIGHT)
        assert v.session.sim.step_count == stopped_at and v.session.sim.state_hash() == v.session.timeline.hashes[stopped_at]


@pytest.mark.display
def test_a_branch_moves_no_widget_below_the_scrubber(window):
    """Branching (a change in the past) says "previous branch A-B" on the timeline buttons' line, not
    on a line of its own: the budget slider and the Plots header stay where they were, so that a
    click aimed at one does not land on the other (a stray click on the budget drops history)."""
    w = window("pendulum")
    v = w.viewer
    frames(w, 30)
    before = {label: v.panel.item_rects[label] for label in ("budget", "Plots")}
    v.session.paused = True
    v.session.seek(10)
    assert v.session.set("integrator", "rk4")
    frames(w, 3)
    assert v.session.timeline.previous is not None
    assert {label: v.panel.item_rects[label] for label in before} == before
    said, buttons = v.panel.item_rects["run state"], v.panel.item_rects["|<"]
    assert buttons[1] <= said[1] < buttons[3] and said[0] > buttons[2]     # beside the buttons, on their line
