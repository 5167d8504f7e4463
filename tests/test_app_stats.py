"""The panel's timing (app.stats) in a real window: every stage of a step and every part of a frame
has a row with its history line; the stage times come from the steps taken; the frame parts
partition the time between frames."""
import time

import pytest
from conftest import frames

pytestmark = pytest.mark.display


def test_panel_times_every_stage_and_frame_part(window):
    """The stack (contacts): after 40 frames each stage and frame part is a drawn row; the contact
    stages took time; paused, the stage lines stand still while the frame lines go on."""
    from app.stats import FRAME_PARTS, STEP_ROWS
    w = window("stack")
    v = w.viewer
    frames(w, 40)
    rects = v.panel.item_rects
    for name in STEP_ROWS:
        assert f"stage {name}" in rects, name
    for name in FRAME_PARTS:
        assert f"frame {name}" in rects, name
    stages, parts = v.timing.stages, v.timing.parts
    assert stages["step"].count == 39   # every frame but the last stepped once (dt = 1/60), its sample comes next frame
    for name in ("prepare", "prepare/rows", "prepare/broad phase", "prepare/narrow phase", "solve", "dynamic"):
        assert stages[name].mean() > 0, name
        assert f"stage {name}" in rects, name
    # the stages lie inside the step: their sum is at most the step's time (1e-9 ms: float32 rounding)
    assert sum(stages[name].mean(40) for name in STEP_ROWS[1:]) <= stages["step"].mean(40) * (1 + 1e-6) + 1e-9
    assert parts["physics"].mean() > 0 and parts["render"].mean() > 0 and parts["swap"].mean() > 0
    v.session.toggle_pause()
    frames(w, 10)
    assert stages["step"].count == 40 and parts["physics"].count == 49


def test_frame_parts_add_up_to_the_time_between_frames(window):
    """The parts are laps of one clock: over 20 frames their sum is the time those frames took
    (from the first frame's start to the 21st's), to within 2 ms of the calls around the loop."""
    w = window("tank")
    v = w.viewer
    frames(w, 5)
    before = {name: ring.count for name, ring in v.timing.parts.items()}
    start = time.perf_counter()
    frames(w, 20)
    w.frame(1 / 60)    # its start closes the 20th frame
    elapsed_ms = 1e3 * (time.perf_counter() - start)
    total = sum(float(ring.last(20).sum()) for ring in v.timing.parts.values())
    assert all(ring.count == before[name] + 21 for name, ring in v.timing.parts.items())
    assert abs(total - elapsed_ms) < 2 + 0.1 * elapsed_ms


def test_the_stats_count_the_sub_steps_and_rattles_retries(window):
    """The rope bridge (ropes and crates: RATTLE takes sub-steps again): the Stats' sub-steps line
    is drawn and says what `Simulation.substep_counts` counts (taken over nominal, the worst step,
    the retries), the numbers the benchmark and the runner's profile give."""
    from app.panel import substeps_text
    w = window("rope_bridge")
    v = w.viewer
    frames(w, 60)
    counts = v.session.sim.substep_counts()
    assert "sub-steps" in v.panel.item_rects
    assert counts["taken"] > counts["nominal"] > 0 and counts["retries"] > 0
    assert counts["per_nominal"] == counts["taken"] / counts["nominal"]
    assert counts["retries"] == counts["retried_left"] + counts["retried_start_error"]
    taken, retries = substeps_text(counts)
    assert taken == f"sub-steps {counts['per_nominal']:.2f}x nominal, worst step {counts['worst_step']:.2f}x"
    assert retries.startswith(f"RATTLE retries {counts['retries']},")
    assert v.panel.cut == [], v.panel.cut       # both lines whole at the window's 1280 x 720
