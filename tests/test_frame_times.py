"""No frame waits on a compiler or a scene file, and simulated time never jumps: a user's tour of the viewer
(tests/frame_tour.py: every scene, integrator, gyroscopic mode and counteraction, a ghost, the
crash A/B, a reparent, "view from", a video, a recording and its replay) in a fresh process
with a warm kernel cache, every frame timed (the session's `tour`, tests/conftest.py)."""
from pathlib import Path

import pytest

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parent.parent


def test_the_tour_visits_every_scene_and_action(tour):
    scenes = {path.stem for path in (ROOT / "assets" / "scenes").glob("*.toml")}
    assert {frame["scene"] for frame in tour} >= scenes
    done = {frame["what"] for frame in tour}
    assert {"I", "G", "C", "ghost", "crash A/B", "reparent", "view from", "F10 start", "Ctrl+S", "replay",
            "stall"} <= done


def test_no_frame_after_the_first_compiles(tour):
    compiled = [(frame["scene"], frame["what"], frame["compiles"]) for frame in tour[1:] if frame["compiles"]]
    assert not compiled, f"{len(compiled)} frames compiled on the main thread: {compiled[:5]}"


def test_no_frame_after_the_first_waits_on_a_kernel(tour):
    """No frame after the first takes a kernel version on the window's thread, compiled or loaded
    from the cache: a count, not a clock (a load costs tens to hundreds of milliseconds of the
    frame; the app loads every kernel a scene, a setting or an action needs on its loading thread
    before it applies them, app.preparation)."""
    waited = [(frame["scene"], frame["what"], frame["kernels_taken"]) for frame in tour[1:] if frame["kernels_taken"]]
    assert not waited, f"{len(waited)} frames took kernels on the main thread: {waited[:5]}"


def test_no_frame_reads_a_scene_file_on_the_window_s_thread(tour):
    """Opening a scene reads and builds it on the loading thread (app.preparation), not in a frame:
    a count of the scene files the main thread read (`Simulation.from_file`), none in the whole tour,
    the first frame included. (A large scene's load takes seconds: the stress scene's 10,011 nodes.)"""
    read = [(frame["scene"], frame["what"], frame["scenes_loaded"]) for frame in tour if frame["scenes_loaded"]]
    assert not read, f"{len(read)} frames read a scene file on the main thread: {read[:5]}"


def test_simulated_time_never_jumps(tour):
    """Per frame, simulated time advances by at most the time scale times the real time since the
    previous frame, and never by more than MAX_FRAME_SECONDS of it (the rest of a longer frame is
    dropped), plus the one step the accumulator may carry; the one-second stall included."""
    from app.session import MAX_FRAME_SECONDS
    for frame in tour:
        if frame["what"] == "crash A/B":
            continue        # the A/B moves the run to 0.25 s before the impact on purpose, as a seek does
        bound = frame["time_scale"] * min(frame["interval"], MAX_FRAME_SECONDS) + frame["dt"] + 1e-9
        assert frame["advanced"] <= bound, frame
    stall = next(frame for frame in tour if frame["what"] == "stall")
    assert stall["wall"] >= 1.0 and stall["advanced"] <= stall["time_scale"] * MAX_FRAME_SECONDS + stall["dt"] + 1e-9
