"""The contact stage's per-point arrays live in room the solver keeps (`physics.constraints.solver.PointRoom`),
so that what a sub-step allocates does not grow with its contact points there."""
import tracemalloc
from pathlib import Path

import numpy as np

from physics.constraints import solver
from physics.pipeline.simulation import Simulation

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"


def _stage_call(scene, steps, monkeypatch):
    """The arguments of the contact stage's last call after `steps` steps of `scene`, and its points."""
    calls = []
    stage = solver._reachable_contact_stage
    monkeypatch.setattr(solver, "_reachable_contact_stage", lambda *a: calls.append(a) or stage(*a))
    sim = Simulation.from_file(SCENES / scene)
    sim.step(steps)
    monkeypatch.undo()
    arguments = calls[-1]
    return arguments, int(arguments[1][0])     # (the points: the first count of the narrow phase's room)


def _peak(arguments):
    """tracemalloc's peak above what was held over one call of the contact stage, bytes."""
    solver._reachable_contact_stage(*arguments)       # (compiled and typed before the count)
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        solver._reachable_contact_stage(*arguments)
        return tracemalloc.get_traced_memory()[1] - held
    finally:
        tracemalloc.stop()


def test_the_contact_stage_allocates_next_to_nothing_per_point(monkeypatch):
    """One call of the contact stage on the pyramid's hundreds of points against one on the ant's
    feet: the difference, per point more, stays under 8 bytes (measured: about 1, the noise of
    numba's typing of the arguments, some 1.5 KiB a call whatever the count: the stage is compiled
    without reference counts, so it keeps no record of its arrays either). The points' bodies,
    reach, friction, restitution, warm impulses, bounce data and the warm start's keys and flags,
    made at each call, would be about 160 bytes a point more."""
    few, few_points = _stage_call("ant.toml", 60, monkeypatch)
    many, many_points = _stage_call("pyramid.toml", 30, monkeypatch)
    assert few_points <= 8 and many_points >= 200
    extra = _peak(many) - _peak(few)
    assert extra < 8 * (many_points - few_points), (extra, few_points, many_points)


def test_the_room_grows_with_the_points_and_keeps_the_bits():
    """The pyramid from a solver whose point room starts empty each step grows it again each time,
    and steps bit for bit as the one whose room is kept (the room's contents are written before
    they are read)."""
    kept, fresh = Simulation.from_file(SCENES / "pyramid.toml"), Simulation.from_file(SCENES / "pyramid.toml")
    for _ in range(20):
        kept.step(1)
        fresh._work.solver._point_room = solver.point_room(0)
        fresh.step(1)
    room = kept._work.solver._point_room
    assert len(room.keep) >= len(kept._work.solver.contacts.depth) > 0
    assert kept.state_hash() == fresh.state_hash()
    assert np.all(np.isfinite(kept._work.solver.contacts.depth))


def test_a_sub_step_like_the_last_but_one_calls_the_contact_stage_and_the_narrow_phase_bound():
    """The ant standing on its four feet: the narrow phase's points, its manifolds and the cache's
    stored impulses are views of two sets of room used in turn, and the broad phase's pairs a view
    of its buffer, so that every other sub-step passes the narrow phase and the contact stage the
    same objects; met twice, they get bound calls (`physics.core.compiled.SteadyCall`), neither then
    typed through numba's entry point nor bound again. Counted over 100 steps (200 sub-steps)
    after 60: at most 2 typed calls and 2 binds of each (a foot's count of points changing would
    cost a few), against 200 typed calls without."""
    sim = Simulation.from_file(SCENES / "ant.toml")
    sim.step(60)
    work = sim._work.solver
    calls = {"contact stage": work.contact_calls, "narrow phase": work.cache.narrow_calls}
    before = {name: list(call.counts) for name, call in calls.items()}
    sim.step(100)
    assert len(sim.contacts()[0]) >= 3
    for name, call in calls.items():
        typed, binds, found = (now - then for now, then in zip(call.counts[:3], before[name]))
        assert typed <= 2 and binds <= 2 and found >= 196, (name, typed, binds, found)
