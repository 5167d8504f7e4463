"""The timeline (physics.pipeline.timeline): seek restores exactly the state the run had, inputs replay at
their steps, a change in the past branches and keeps the old future bit for bit."""
from pathlib import Path

import numpy as np
import pytest

from physics import Simulation
from physics.pipeline.timeline import Timeline

CAR = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "car.toml"


def cargo(sim):
    return sim.names[int(np.flatnonzero(sim.motion == "dynamic")[-1])]


def plain_run(steps, inputs):
    """Hashes of a run without a timeline, the same inputs given at the same steps (independent
    of the timeline's bookkeeping)."""
    sim = Simulation.from_file(CAR)
    hashes = {}
    for s in range(steps + 1):
        for step, kind, args in inputs:
            if step == s:
                (sim.set if kind == "set" else sim.apply_impulse)(*args)
        hashes[s] = sim.state_hash()
        if s < steps:
            sim.step(1)
    return hashes


@pytest.fixture(scope="module")
def recorded():
    sim = Simulation.from_file(CAR)
    inputs = [(20, "set", ("integrator", "rk4")), (40, "impulse", (cargo(sim), np.array([0.0, 3.0, 0.5]), None))]
    timeline = Timeline(sim, keyframe_every=16)
    for s in range(90):
        for step, kind, args in inputs:
            if step == s:
                timeline.apply(kind, *args)
        timeline.step(1)
    return timeline, inputs


def test_hashes_are_those_of_a_plain_run_with_the_same_inputs(recorded):
    timeline, inputs = recorded
    assert timeline.hashes == plain_run(90, inputs)


def test_seek_restores_the_state_the_run_had(recorded):
    timeline, _ = recorded
    for target in (45, 0, 89, 16, 40, 21, 90, 3):
        assert timeline.seek(target) == target
        assert timeline.sim.step_count == target
        assert timeline.sim.state_hash() == timeline.hashes[target]
    assert timeline.seek(10**6) == timeline.head == 90      # clamped


def test_stepping_forward_from_the_past_replays_the_recorded_future():
    sim = Simulation.from_file(CAR)
    timeline = Timeline(sim, keyframe_every=10)
    timeline.step(15)
    timeline.apply("set", "integrator", "rk4")
    timeline.step(15)
    expected = dict(timeline.hashes)
    timeline.seek(5)
    timeline.step(25)
    assert sim.state_hash() == expected[30] and timeline.head == 30 and timeline.previous is None


def test_a_change_in_the_past_branches_and_keeps_the_old_future():
    """Scrub back, change the integrator: the run continues from that step with the new integrator;
    the old branch's hashes are unchanged and a ghost replays it bit for bit."""
    sim = Simulation.from_file(CAR)
    timeline = Timeline(sim, keyframe_every=8)
    timeline.step(60)
    old = dict(timeline.hashes)
    timeline.seek(25)
    timeline.apply("set", "integrator", "lie-midpoint")
    assert timeline.head == 25 and sim.settings.integrator == "lie-midpoint"
    timeline.step(35)
    branch = timeline.previous
    assert (branch.start, branch.head) == (25, 60)
    assert {s: h for s, h in branch.hashes.items()} == {s: old[s] for s in range(25, 61)}
    assert all(timeline.hashes[s] == old[s] for s in range(25))
    assert all(timeline.hashes[s] != old[s] for s in range(25, 61))
    ghost = Simulation.from_file(CAR)
    for step in (60, 30, 25):
        branch.replay(ghost, step)
        assert ghost.state_hash() == old[step]
    # the new branch is what a fresh run with the change at step 25 gives
    fresh = Simulation.from_file(CAR)
    fresh.step(25)
    fresh.set("integrator", "lie-midpoint")
    fresh.step(35)
    assert fresh.state_hash() == timeline.hashes[60]


def test_a_refused_input_changes_nothing():
    sim = Simulation.from_file(CAR)
    timeline = Timeline(sim)
    timeline.step(10)
    timeline.seek(5)
    with pytest.raises(ValueError):
        timeline.apply("set", "integrator", "no-such-integrator")
    assert timeline.head == 10 and timeline.previous is None and timeline.inputs == []


def test_the_budget_drops_the_oldest_keyframes_and_moves_the_origin():
    sim = Simulation.from_file(CAR)
    size = sim.snapshot().nbytes
    timeline = Timeline(sim, budget=5 * size, keyframe_every=4)
    timeline.step(60)
    # snapshots grow with the contacts they hold: about four or five fit
    assert timeline.bytes <= 5 * size and 3 <= len(timeline.keyframes) <= 5
    assert timeline.origin == min(timeline.keyframes) >= 40
    assert timeline.seek(0) == timeline.origin
    assert sim.state_hash() == timeline.hashes[timeline.origin]
    assert min(timeline.hashes) == timeline.origin
