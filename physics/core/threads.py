"""How many threads the contact solver's sweeps run on: chosen by measuring, solve by solve.

The Gauss–Seidel sweep (`physics.constraints.gauss_seidel._pgs`) solves the two halves of a heap at the same
time, one per core, and joins them after every sweep: tens of joins a step. With a free core two
threads take about three quarters of one thread's time. On a machine that also runs something
else (a browser, an IDE, the app's own rendering) the second thread is descheduled at random
moments and every join waits for it: two threads were then 2.6–3.7 times slower than one, and
yielding waits (`OMP_WAIT_POLICY=PASSIVE`) changed nothing. No fixed count is right on both
machines, and the load changes while a scene runs.

The sweep gives the same bits on any number of threads (nothing one half reads is written by the
other; tests/test_solver.py), so the count may change from one solve to the next without changing
the simulation. `ThreadChoice` times each solve on the count it chose (wall clock per row, what
the user waits for), tries the other count now and then, and keeps the faster:
- the first two solves measure both counts;
- the count in use keeps an exponential moving average of its cost (`WEIGHT` for the newest), so
  one slow step does not switch;
- every `interval` solves the other count is tried once, and its fresh cost is compared with that
  average: if it wins it is used from then on and the interval starts again at `EXPLORE_FIRST`;
  if it loses the interval doubles, up to `EXPLORE_MOST` (a try of the slower count costs a few
  per cent of the solves at most);
- and the other count is tried at once when that average has grown past `TRIGGER` times the other
  count's last cost: a process starting on the other core makes two threads three to four times
  slower within a solve, and waiting out an interval grown to `EXPLORE_MOST` on a quiet machine
  cost seconds of such solves (the 1,000-box heap ran at 3.2–4.0 times one thread's time through a
  benchmark's 15 steps).
RATTLE's projections of a net whose joint graph is split in halves (`physics.constraints.rattle`,
`JointBodies.threads`) choose the same way, one choice per projection, judged by the time a
factorization (the work a call reports after it: `run`'s `rows` as a function).
The counts are 1 and numba's current count (`numba.get_num_threads()`, all cores unless the caller
set fewer); `fixed_threads(n)` pins the count, for tests and benchmarks that compare counts.

Free bodies need no such choice: a step of many is split into parts that join once, at the end of
the integrator's pass (`physics.dynamics.integrators.SPLIT_BODIES`), one a core (`cores`), so a core taken
by another process costs about its part's time, not a wait at every sweep. `fixed_threads` pins
that count too, and so does NUMBA_NUM_THREADS.
"""
import contextlib
import os
import time

import numba

EXPLORE_FIRST = 16      # solves between tries of the other count, after a switch
EXPLORE_MOST = 256      # ... at most, after tries that lost
WEIGHT = 0.25           # of the newest solve in the count in use's moving average
TRIGGER = 1.25          # the count in use's average past this times the other's last cost: try the other now

_fixed = None           # `fixed_threads`


@contextlib.contextmanager
def fixed_threads(n):
    """Within the block every `ThreadChoice` runs on n threads (at most numba's thread pool)."""
    global _fixed
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"threads: got {n!r}; expected an integer >= 1")
    previous, _fixed = _fixed, min(n, numba.config.NUMBA_NUM_THREADS)
    try:
        yield
    finally:
        _fixed = previous


def cores():
    """The threads a step may run on at once: `fixed_threads`' count within its block, else the
    cores this process may run on, at most NUMBA_NUM_THREADS (numba's configured pool; 1 keeps a
    process on one thread). Read from the configuration, so that asking starts no thread pool."""
    if _fixed is not None:
        return _fixed
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(available, numba.config.NUMBA_NUM_THREADS))


class ThreadChoice:
    """The thread count of one solver's sweeps (module docstring). `run(rows, function, *args)`
    calls function(*args) on the chosen count and learns from its wall time per row."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock          # seconds (tests give a clock of their own)
        self.cost = {}              # thread count -> seconds per row
        self.current = None         # the count in use
        self.interval = EXPLORE_FIRST
        self.until_try = EXPLORE_FIRST

    def run(self, rows, function, *args, **kwargs):
        """function(*args, **kwargs) on the chosen count; `rows` its work, or a function that says
        after the call how much it did (a projection's factorizations: one that did none teaches
        nothing, and a try of the other count waits for the next call)."""
        most = numba.get_num_threads()
        if _fixed is not None:
            return self._on(_fixed, function, args, kwargs, self.clock)[0]
        if most < 2 or (not callable(rows) and rows <= 0):
            return function(*args, **kwargs)
        if self.current not in (1, most):
            self.current = most
        other = 1 if self.current == most else most
        trying = other not in self.cost or self.until_try <= 0 or (
            self.current in self.cost and self.cost[self.current] > TRIGGER * self.cost[other])
        n = other if trying else self.current
        first = n not in self.cost
        result, seconds = self._on(n, function, args, kwargs, self.clock)
        work = rows() if callable(rows) else rows
        if work <= 0:       # a call that did none of the work counted (a projection that factored nothing)
            return result
        cost = seconds / work
        if n == self.current and not first:
            self.cost[n] += WEIGHT * (cost - self.cost[n])
        else:
            self.cost[n] = cost
        if (trying or first) and self.current in self.cost and other in self.cost:
            if self.cost[other] < self.cost[self.current]:
                self.current, self.interval = other, EXPLORE_FIRST
            else:
                self.interval = min(2 * self.interval, EXPLORE_MOST)
            self.until_try = self.interval
        elif not trying:
            self.until_try -= 1
        return result

    @staticmethod
    def _on(n, function, args, kwargs, clock):
        """function(*args) on n threads, and its wall time; numba's count restored after."""
        previous = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            start = clock()
            result = function(*args, **kwargs)
            return result, clock() - start
        finally:
            numba.set_num_threads(previous)
