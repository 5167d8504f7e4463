"""What a steady step allocates, by tracemalloc, over 100 steps of the chain, the ant and a net: the
step's arrays live in room kept from one sub-step to the next (RATTLE's arena, the rows', the
solve's, the contact points', the narrow phase's and the cache's two sets written in turn), and its
calls are bound to them, so that what is left is Python's few objects between the calls, whatever
the scene's size. docs/benchmarks.md ("Joints") gives the same measure for every jointed scene."""
import statistics
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from physics.pipeline.simulation import Simulation

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"
STEPS = 100
WARM = 160      # steps first: the calls typed and bound, a first retry's kernels loaded from the cache
# Measured in the median step, a sub-step: 0.01 KiB for the chain, 0.05 for the net, 0.15 for
# the ant (Python's views, bundles and numbers between the calls; of its compiled calls only the
# narrow phase's round shapes allocate, some 90 bytes), 0.25 for the iiwa (2.6 when its hulls'
# points on the floor and its chord rows were arrays made at each call), and 1.4 for the long chain, whose contact
# points' count keeps changing on its floor (what numba's entry point makes as it types the calls,
# and the views made for the new count, which the solver keeps by count); fresh arrays for a step's
# rows, points or solve would be tens to hundreds of KiB, and grow with the scene. The bounds leave
# a factor of about 2 to 3 for the interpreter's free lists, which tracemalloc sees through.
MEDIAN_KIB = {"long chain": 2.5}
STEADY_MEDIAN_KIB = 0.4
# Held more after the ant's steps than before: none of a step's is kept (measured: 0.7 KiB, what
# numba's dispatchers keep of the once-a-second energy check's typed calls, up to a limit of theirs;
# a leak of 100 bytes a step would be 10)
HELD_GROWTH_KIB = 4.0
# The median step of the chain that retried, at most (measured 0.2 to 0.3 KiB; the bound leaves the
# free lists' factor of 2 to 3, and is a third of what a retry took when it allocated its copies)
RETRY_KIB = 1.0


def _made(tmp_path, *recipe):
    path = tmp_path / f"{'_'.join(recipe)}.toml"
    subprocess.run([sys.executable, str(SCENES / "make_scenes.py"), *recipe, "--out", str(path)], check=True,
                   capture_output=True)
    return path


def _allocations(path, warm=WARM):
    """(each step's peak above what was held as it began over the sub-steps it took, KiB; what was
    held more after the steps, KiB) over STEPS steps of the scene at `path`, after `warm` steps."""
    sim = Simulation.from_file(path)
    sim.step(warm)
    peaks = np.zeros(STEPS)     # (made before the count starts: a list of the steps' floats would be held in it)
    tracemalloc.start()
    try:
        sim.step(3)     # (tracemalloc's own first records)
        # what the measure itself holds above `held` (the int that holds it, made as it is read):
        # the same reads around nothing
        floor, _ = _peak(sim, _nothing)
        before = tracemalloc.get_traced_memory()[0]
        for i in range(STEPS):
            peak, taken = _peak(sim, sim.step)
            peaks[i] = (peak - floor) / 1024 / taken
        growth = (tracemalloc.get_traced_memory()[0] - before) / 1024     # (before the peaks' list is made)
        return peaks.tolist(), growth
    finally:
        tracemalloc.stop()


def _nothing():
    pass


def _peak(sim, step):
    """(the traced peak while `step()` ran, above what was held as it began, bytes; the sub-steps it took)."""
    held, taken = tracemalloc.get_traced_memory()[0], sim.substep_counts()["taken"]
    tracemalloc.reset_peak()
    step()
    return tracemalloc.get_traced_memory()[1] - held, sim.substep_counts()["taken"] - taken


@pytest.mark.parametrize("scene", ["chain", "ant", "iiwa", "net", "long chain"])
def test_a_steady_step_allocates_a_few_kib_whatever_the_scene(scene, tmp_path):
    """The shipped chain (20 capsules on ball joints, RATTLE alone), the ant on its floor (joints,
    contacts, the velocity solve), the iiwa folded onto its floor (hulls on a plane, joints at their
    limits, the chord rows of its joint terms), make_scenes.py's 8 × 8 net (114 ball joints, loops:
    the joint graph's factorization) and its chain of 200 links, which lies on its floor (contacts
    whose count keeps changing): over 100 steps the median step allocates at most
    STEADY_MEDIAN_KIB a sub-step (the long chain MEDIAN_KIB) and frees it again, however many its
    joints and points."""
    path = {"net": lambda: _made(tmp_path, "net", "--side", "8"),
            "long chain": lambda: _made(tmp_path, "chain", "--links", "200")}.get(scene, lambda: SCENES / f"{scene}.toml")()
    peaks, _ = _allocations(path)
    assert statistics.median(peaks) <= MEDIAN_KIB.get(scene, STEADY_MEDIAN_KIB), (statistics.median(peaks), max(peaks))


def test_a_retried_step_allocates_a_few_kib():
    """The chain's whip cracks retry sub-steps as halves (physics.pipeline.retry): from step 500,
    where it has met its halves' lengths, the median of the steps of 100 that retried peaks at most
    RETRY_KIB above what it held (the island put back by the call bound with its copies,
    `Undo.put_back`, each half's joint start found bound to its length, `SceneSolver._starts`, and
    the once-a-second runaway check's energy a bound call, `stages.runaway_energy`). Measured 0.2
    to 0.3 KiB, one step in 18 at 2.7 (a halving's length met for the first time); numpy's fancy
    assignments of the copies and a start made afresh for each length took 3.3 every retry."""
    sim = Simulation.from_file(SCENES / "chain.toml")
    sim.step(500)
    retried = np.zeros(STEPS, bool)
    peaks = np.zeros(STEPS)
    tracemalloc.start()
    try:
        sim.step(3)
        floor, _ = _peak(sim, _nothing)
        for i in range(STEPS):
            retries = sim.substep_counts()["retries"]
            peak, _ = _peak(sim, sim.step)
            peaks[i] = (peak - floor) / 1024
            retried[i] = sim.substep_counts()["retries"] > retries
    finally:
        tracemalloc.stop()
    assert retried.any(), "no step retried: nothing to check"
    assert np.median(peaks[retried]) <= RETRY_KIB, (peaks[retried].tolist(), np.count_nonzero(retried))


def test_the_ant_keeps_nothing_of_its_steps():
    """The ant standing on its floor, no retry: over 100 steps the memory held grows by at most
    HELD_GROWTH_KIB (a scene that retries binds calls again for its halves' sub-step lengths, which
    `physics.core.compiled.Memo` keeps up to its limit)."""
    _, growth = _allocations(SCENES / "ant.toml")
    assert growth <= HELD_GROWTH_KIB, growth


@pytest.mark.parametrize("scene", ["pendulum", "chain", "ant", "newtons_cradle"])
def test_a_steady_sub_step_calls_no_function_that_makes_closure_cells(scene):
    """CPython makes a cell for each local a nested function (a lambda, a comprehension, a def)
    reads as the function that holds it starts, whether or not the nested one is ever made: a hot
    method whose rare path makes a closure pays the cells at every call (RATTLE's stage made twelve
    a sub-step, the joints' start eleven: the pendulum's step peaked at 760 bytes above what it
    held, 280 without them). Checked on the code objects themselves (`co_cellvars`), as the steady
    steps of a RATTLE-alone scene, a chain, a robot on its floor and a scene of contacts call them:
    exact, where tracemalloc's figure depends on the interpreter's free lists. A retry's `Undo`
    (not steady) may."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(WARM)
    package = str(Path(__file__).resolve().parent.parent / "physics")
    making = set()

    def calls(frame, event, arg):
        code = frame.f_code
        if event == "call" and code.co_cellvars and code.co_filename.startswith(package):
            making.add(f"{Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name} {code.co_cellvars}")

    sys.setprofile(calls)
    try:
        sim.step(20)
    finally:
        sys.setprofile(None)
    assert sim.substep_counts()["retries"] == 0 or not making, "the steps retried: not steady"
    assert not making, sorted(making)
