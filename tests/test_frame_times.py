"""No frame waits on a compiler, and simulated time never jumps: a user's tour of the viewer
(tests/frame_tour.py: every scene, integrator, gyroscopic mode and counteraction, a ghost, the
crash A/B, a reparent, "view from", a video, a recording and its replay) in a fresh process
with a warm kernel cache, every frame timed (the session's `tour`, tests/conftest.py)."""
from pathlib import Path

import pytest

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parent.parent
# A frame that waits on a compiler or a cache load spends seconds of its main thread's CPU; an
# ordinary frame of these scenes spends 10-60 ms. The bound is on the main thread's CPU time, not
# the wall time: on a shared machine another process's load stretches wall times, not this
# thread's CPU (Mesa's software renderer draws on threads of its own, also left out).
FRAME_LIMIT = 0.25
# The 10,011-node stress scene spends ~100 ms a frame on its own (its frame-rate goal is 30 FPS,
# docs/benchmarks.md): its frames are checked for compiles and time jumps only.
DRAWS_SLOWLY = {"stress"}
# The 1,000-box heap's solve runs on two threads where that measured faster, and tries two again
# now and then (physics.core.threads.ThreadChoice): while the other core is busy (the other test
# worker), the window's thread waits for its partner inside such a step, spinning, and that counts
# as its CPU though nothing compiles (compiles are caught by the test below, by numba's events).
# Measured: up to 0.45 s of CPU in a heap frame beside another test worker, under 0.25 s alone.
SOLVES_ON_TWO_THREADS, TWO_THREAD_FRAME_LIMIT = {"pile"}, 0.6


def test_the_tour_visits_every_scene_and_action(tour):
    scenes = {path.stem for path in (ROOT / "assets" / "scenes").glob("*.toml")}
    assert {frame["scene"] for frame in tour} >= scenes
    done = {frame["what"] for frame in tour}
    assert {"I", "G", "C", "ghost", "crash A/B", "reparent", "view from", "F10 start", "Ctrl+S", "replay",
            "stall"} <= done


def test_no_frame_after_the_first_compiles(tour):
    compiled = [(frame["scene"], frame["what"], frame["compiles"]) for frame in tour[1:] if frame["compiles"]]
    assert not compiled, f"{len(compiled)} frames compiled on the main thread: {compiled[:5]}"


def test_no_frame_after_the_first_takes_over_250_ms(tour):
    def limit(scene):
        return TWO_THREAD_FRAME_LIMIT if scene in SOLVES_ON_TWO_THREADS else FRAME_LIMIT
    slow = [(frame["scene"], frame["what"], round(frame["cpu"], 3), round(frame["wall"], 3)) for frame in tour[1:]
            if frame["cpu"] > limit(frame["scene"]) and frame["scene"] not in DRAWS_SLOWLY and frame["what"] != "stall"]
    assert not slow, f"{len(slow)} slow frames: {slow[:10]}"


def test_simulated_time_never_jumps(tour):
    """Per frame, simulated time advances by at most the time scale times the real time since the
    previous frame, and never by more than MAX_FRAME_SECONDS of it (the rest of a longer frame is
    dropped), plus the one step the accumulator may carry; the one-second stall included."""
    from app.viewer import MAX_FRAME_SECONDS
    for frame in tour:
        if frame["what"] == "crash A/B":
            continue        # the A/B moves the run to 0.25 s before the impact on purpose, as a seek does
        bound = frame["time_scale"] * min(frame["interval"], MAX_FRAME_SECONDS) + frame["dt"] + 1e-9
        assert frame["advanced"] <= bound, frame
    stall = next(frame for frame in tour if frame["what"] == "stall")
    assert stall["wall"] >= 1.0 and stall["advanced"] <= stall["time_scale"] * MAX_FRAME_SECONDS + stall["dt"] + 1e-9
