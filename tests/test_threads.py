"""physics.core.threads.ThreadChoice: the solver's thread count follows whichever count is faster now.

A fake clock stands for the machine: each call advances it by the cost the test gives the thread
count the call runs on (read from numba, as the sweep would use it), so the choices are exact and
the test takes no time. The bits of a simulation on either count are the same
(tests/test_solver.py: test_heap_is_the_same_bits_on_one_thread_and_two)."""
import contextlib

import numba
import pytest

from physics.core.threads import EXPLORE_FIRST, EXPLORE_MOST, ThreadChoice, fixed_threads

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here")


class Machine:
    """A clock whose calls cost `cost[threads]` seconds per row; records the counts used."""

    def __init__(self, cost):
        self.now, self.cost, self.used = 0.0, dict(cost), []

    def clock(self):
        return self.now

    def solve(self, rows):
        n = numba.get_num_threads()
        self.used.append(n)
        self.now += self.cost[n] * rows
        return n


def run(choice, machine, calls, rows=500):
    for _ in range(calls):
        assert choice.run(rows, machine.solve, rows) == machine.used[-1]


def test_a_free_core_keeps_two_threads_and_tries_one_ever_more_rarely():
    most = numba.get_num_threads()
    machine = Machine({1: 1.0, most: 0.75})          # two threads take 3/4 of one's time
    choice = ThreadChoice(clock=machine.clock)
    run(choice, machine, 2000)
    assert choice.current == most
    # the first call measures one thread; then every try of it loses, and the next comes twice as
    # late, up to EXPLORE_MOST solves
    tries = [k for k, n in enumerate(machine.used) if n == 1]
    gaps = [b - a - 1 for a, b in zip(tries, tries[1:])]     # two-thread solves between tries
    assert tries[0] == 0 and gaps[0] == 1 + 2 * EXPLORE_FIRST   # (the first measures two threads)
    assert all(b == min(2 * a, EXPLORE_MOST) for a, b in zip(gaps[1:], gaps[2:]))
    assert gaps[-1] == EXPLORE_MOST
    tries = len(tries)
    assert tries / len(machine.used) < 0.01           # what exploring costs at steady state


def test_a_busy_machine_switches_to_one_thread_and_back_when_the_core_frees():
    most = numba.get_num_threads()
    machine = Machine({1: 1.0, most: 0.75})
    choice = ThreadChoice(clock=machine.clock)
    run(choice, machine, 100)
    machine.cost[most] = 3.0                           # another process takes the second core
    run(choice, machine, EXPLORE_MOST + 2)             # within one exploring interval at most
    assert choice.current == 1
    assert machine.used[-EXPLORE_FIRST:] .count(1) >= EXPLORE_FIRST - 1
    machine.cost[most] = 0.75                          # the other process ends
    run(choice, machine, EXPLORE_MOST + 2)
    assert choice.current == most


def test_load_after_a_long_quiet_run_switches_within_a_few_solves():
    """After thousands of quiet solves the interval between tries is EXPLORE_MOST; a process that
    then takes the second core must not cost that many slow solves: once the moving average of two
    threads passes TRIGGER times one thread's last cost, one thread is tried at once (3 solves:
    0.75 + 0.25 (3 − 0.75) = 1.31 > 1.25 after the first)."""
    most = numba.get_num_threads()
    machine = Machine({1: 1.0, most: 0.75})
    choice = ThreadChoice(clock=machine.clock)
    run(choice, machine, 2000)
    assert choice.interval == EXPLORE_MOST and choice.current == most
    machine.cost[most] = 3.0
    run(choice, machine, 3)
    assert choice.current == 1 and machine.used[-1] == 1
    run(choice, machine, 100)
    assert machine.used[-100:].count(most) <= 3        # the tries of two threads, ever more rarely


def test_one_slow_step_does_not_switch():
    most = numba.get_num_threads()
    machine = Machine({1: 1.0, most: 0.75})
    choice = ThreadChoice(clock=machine.clock)
    run(choice, machine, 40)
    machine.cost[most] = 1.5                           # one step preempted
    run(choice, machine, 1)
    machine.cost[most] = 0.75
    assert choice.current == most
    # the moving average still ranks two threads first (0.75 + WEIGHT * 0.75 < 1)
    assert choice.cost[most] < choice.cost[1]


def test_fixed_threads_pins_the_count_and_restores_numba_s():
    most = numba.get_num_threads()
    machine = Machine({1: 1.0, most: 0.5})
    choice = ThreadChoice(clock=machine.clock)
    with fixed_threads(1):
        run(choice, machine, 50)
    assert set(machine.used) == {1}
    assert numba.get_num_threads() == most
    with pytest.raises(ValueError, match="threads: got 0"):
        with fixed_threads(0):
            pass


@pytest.mark.slow
def test_the_4096_box_heap_is_the_same_bits_on_one_thread_two_and_chosen(tmp_path):
    """The heap at 16³ boxes (`make_scenes.py pile --side 16`), 45 steps from its drop (its lowest
    layer lands at step 20 and the sweeps split in halves from then on): the same state hash on one
    thread, on two, and with the count chosen by measuring (which may change at any solve).
    The contacts' count shows the sweeps were split (at least PARALLEL_MIN elements)."""
    import importlib.util
    from pathlib import Path

    from physics.constraints.gauss_seidel import PARALLEL_MIN
    from physics.io.scene import load_scene
    from physics.pipeline.simulation import Simulation

    path = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "make_scenes.py"
    spec = importlib.util.spec_from_file_location("make_scenes", path)
    make_scenes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_scenes)
    make_scenes.pile(16, str(tmp_path / "heap.toml"))
    scene = load_scene(tmp_path / "heap.toml")
    hashes, split = [], []
    for n in (1, min(2, numba.config.NUMBA_NUM_THREADS), None):
        sim = Simulation(scene)
        with fixed_threads(n) if n else contextlib.nullcontext():
            sim.step(45)
        hashes.append(sim.state_hash())
        # a manifold has at most 4 points: this many points are at least PARALLEL_MIN elements
        split.append(len(sim.contacts()[0]) >= 4 * PARALLEL_MIN)
    assert all(split)
    assert hashes[0] == hashes[1] == hashes[2]


def test_work_told_after_the_call_is_what_each_count_is_judged_by():
    """A call whose work is known only after it runs (a projection's factorizations) gives `rows`
    as a function: the cost of each count is its time over the work the call then reports, so
    calls of very different sizes are compared fairly (exact costs on the fake clock: one thread
    1 a unit of work, two 0.75, whatever the sizes), and a call that reports none is not counted."""
    most = numba.get_num_threads()
    machine = Machine({1: 1.0, most: 0.75})
    choice = ThreadChoice(clock=machine.clock)
    work = []

    def project(size):
        work.append(size)
        return machine.solve(size)

    for call in range(200):
        choice.run(lambda: work[-1], project, 1 + 37 * (call % 5))
    assert choice.current == most
    assert choice.cost == {1: 1.0, most: 0.75}
    # a call that did none of the work (a projection that factored nothing) teaches nothing, however
    # long it took on either count
    machine.cost = {1: 50.0, most: 90.0}
    for _ in range(2 * EXPLORE_MOST):
        choice.run(lambda: 0, project, 1)
    assert choice.current == most and choice.cost == {1: 1.0, most: 0.75}
