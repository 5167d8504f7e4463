"""Bound calls unboxed once (physics.core.unboxed): the same results as numba's entry point, the
same exceptions, and the path taken where it applies (a kernel without reference counts, given
arrays). Exact comparisons: the same compiled code runs on the same values."""
from typing import NamedTuple

import numpy as np
import pytest

from physics.core import unboxed
from physics.core.compiled import bind, kernel


class Bundle(NamedTuple):
    positions: np.ndarray       # (N, 3) float64
    flags: np.ndarray           # (N,) bool
    index: np.ndarray           # (N,) int64
    small: np.ndarray           # (N,) int32
    column: np.ndarray          # a strided view: every other row's second column


@kernel(refcounts=False)
def _stir(bundle, many, scale, count, flip, nothing, out):
    """Writes into `out` and `many` from every kind of argument; returns (sum, count, flag)."""
    total = 0.0
    for i in range(bundle.positions.shape[0]):
        for k in range(3):
            bundle.positions[i, k] *= scale
            total += bundle.positions[i, k]
        if bundle.flags[i] != flip:
            total += bundle.index[i] + bundle.small[i]
    for i in range(bundle.column.shape[0]):
        total += bundle.column[i]
    for a in many:
        a[0] += count
        total += a.sum()
    out[0] = total
    return total, count + 1, nothing is None


@kernel(refcounts=False)
def _mean(many):
    total = 0.0
    for a in many:
        total += a.sum()
    return total / len(many)


@kernel(refcounts=False)
def _fill(many, value):
    for a in many:
        a[:] = value


@kernel(refcounts=False)
def _divide(many, d):
    many[1][0] += 1.0           # a side effect before the raise: it must happen once
    return many[0][0] / d       # error_model "python": ZeroDivisionError at d == 0


@kernel(refcounts=False)
def _check(many, limit):
    if many[0][0] > limit:
        raise ValueError("past the limit", 7)     # (static: a runtime value in it needs numba's runtime)
    return limit


@kernel
def _counted(many):
    return len(many)


@kernel(refcounts=False)
def _twice(x):
    return 2.0 * x


@kernel(nogil=True, refcounts=False)
def _logistic(x, repeats, out):
    """The logistic map x ← 3.9 x (1 − x), `repeats` times, into out[0]: each step needs the last,
    so the work takes as long as it is asked to."""
    for _ in range(repeats):
        x = 3.9 * x * (1.0 - x)
    out[0] = x


def _arguments(seed):
    rng = np.random.default_rng(seed)
    wide = rng.normal(size=(8, 4))
    bundle = Bundle(rng.normal(size=(5, 3)), rng.random(5) < 0.5, rng.integers(-9, 9, 5),
                    rng.integers(-9, 9, 5).astype(np.int32), wide[::2, 1])
    many = tuple(rng.normal(size=(3,)) for _ in range(unboxed.MIN_ARRAYS))
    return bundle, many, 1.5, 7, True, None, np.zeros(1)


def test_an_unboxed_call_gives_what_numbas_entry_point_gives():
    expected_arguments, arguments = _arguments(3), _arguments(3)
    expected = _stir(*expected_arguments)          # numba's way in (compiles)
    call = bind(_stir, *arguments)
    assert getattr(call, "unboxed", False), "the call should take the unboxed path"
    got = call()
    assert got == expected and type(got[1]) is int and type(got[2]) is bool
    for a, b in zip(expected_arguments, arguments):
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            if isinstance(x, np.ndarray):
                assert np.array_equal(x, y)
    # called again, the arrays' new contents are read: the image holds their addresses, not values
    assert call() == _stir(*expected_arguments)


def test_float_and_none_returns_and_arrays_written_in_place():
    many = tuple(np.full(2, float(i)) for i in range(unboxed.MIN_ARRAYS))
    expected = _mean(many)      # compiled first: a call bound before goes through the kernel
    mean = bind(_mean, many)
    assert mean.unboxed
    assert mean() == expected == sum(range(unboxed.MIN_ARRAYS)) * 2 / unboxed.MIN_ARRAYS
    _fill(many, 0.0)
    fill = bind(_fill, many, 2.5)
    assert fill.unboxed and fill() is None
    assert all((a == 2.5).all() for a in many)
    assert mean() == 5.0


def test_a_kernel_that_raises_raises_through_an_unboxed_call_as_through_numba():
    many = tuple(np.ones(1) for _ in range(max(2, unboxed.MIN_ARRAYS)))
    assert _divide(many, 2.0) == 0.5
    call = bind(_divide, many, 0.0)
    assert call.unboxed
    many[1][0] = 0.0
    with pytest.raises(ZeroDivisionError):
        call()
    assert many[1][0] == 1.0, "the kernel ran once: its exception is raised, not found by a second run"
    assert _check(many, 2.0) == 2.0
    check = bind(_check, many, 0.5)
    assert check.unboxed
    with pytest.raises(ValueError) as raised:
        check()
    assert raised.value.args == ("past the limit", 7)


@kernel(refcounts=False)
def _wide(many, big, small):
    """An unsigned 64-bit argument and return past 2**63 − 1, and a float32 return."""
    many[0][0] = 1.0
    return big + np.uint64(1), np.float32(small) * np.float32(2.0)


@kernel(refcounts=False)
def _complex(many):
    many[0][0] = 2.0
    return complex(many[0][0], 1.0)


def test_unsigned_and_single_precision_returns_and_a_type_it_cannot_box():
    """Boxed as numba boxes them: a uint64 past 2**63 − 1 as the same bits, a float32 widened; a
    return this module does not box (a complex number) keeps numba's entry point."""
    many = (np.zeros(1),)
    big = np.uint64(2**63 + 5)
    expected = _wide(many, big, 1.25)
    call = bind(_wide, many, big, 1.25)
    assert call.unboxed and call() == expected == (2**63 + 6, 2.5)
    assert _complex(many) == complex(2.0, 1.0)
    call = bind(_complex, many)
    assert not hasattr(call, "unboxed") and call() == complex(2.0, 1.0)


def test_no_arrays_or_reference_counts_keep_numbas_entry_point():
    assert _twice(2.0) == 4.0
    assert not hasattr(bind(_twice, 2.0), "unboxed") and bind(_twice, 2.0)() == 4.0
    many = tuple(np.ones(1) for _ in range(unboxed.MIN_ARRAYS))
    _counted(many)      # a kernel with reference counts takes them through its entry point
    assert not hasattr(bind(_counted, many), "unboxed") and bind(_counted, many)() == unboxed.MIN_ARRAYS


def test_a_nogil_kernel_runs_unboxed_with_the_gil_released():
    """While a nogil kernel's unboxed call works for some 0.3 s, a Python thread counts. Holding
    the GIL, the call would let it run one switch interval (5 ms) at most; released, it counts
    through the call: at least a third of what it counts in as long a sleep (two cores; a busy
    machine lowers both)."""
    import threading
    import time
    out = np.zeros(1)
    _logistic(0.3, 10, out)
    assert bind(_logistic, 0.3, 10, out).unboxed
    start = time.perf_counter()
    _logistic(0.3, 10**6, out)
    repeats = int(10**6 * 0.3 / max(time.perf_counter() - start, 1e-6))
    call = bind(_logistic, 0.3, repeats, out)
    count, running = [0], [True]

    def counting():
        while running[0]:
            count[0] += 1
    thread = threading.Thread(target=counting)
    thread.start()
    try:
        time.sleep(0.05)
        before, start = count[0], time.perf_counter()
        time.sleep(0.3)
        rate = (count[0] - before) / (time.perf_counter() - start)
        before, start = count[0], time.perf_counter()
        call()
        during, took = count[0] - before, time.perf_counter() - start
    finally:
        running[0] = False
        thread.join()
    assert took > 0.1 and during > rate * took / 3, (during, rate, took)


def test_rattles_stage_is_unboxed_in_a_jointed_scene():
    """The call the path is for: RATTLE's stage takes 258 arrays a call on the pendulum."""
    from pathlib import Path

    from physics.constraints import rattle
    from physics.pipeline.simulation import Simulation
    sim = Simulation.from_file(Path(__file__).parents[1] / "assets" / "scenes" / "pendulum.toml")
    before = sim.state_hash()
    made = []
    original = unboxed.call

    def spy(function, overload, args):
        made.append((function, original(function, overload, args)))
        return made[-1][1]
    try:
        unboxed.call = spy
        sim.step(3)
    finally:
        unboxed.call = original
    stages = [call for function, call in made if function is rattle.joint_stage]
    assert stages and all(call is not None for call in stages)
    assert sim.state_hash() != before


_CACHED = r'''
import sys
import numpy as np
from physics.core import unboxed
from physics.core.compiled import bind, kernel

@kernel(refcounts=False)
def halve(many, out):
    out[0] = many[0][0] / 2.0

@kernel(refcounts=False)
def total(many):
    return many[0].sum() + many[1].sum()

@kernel(refcounts=False)
def checked(many, limit):
    many[1][0] += 1.0           # a side effect before the raise: once a call
    if many[0][0] > limit:
        raise ValueError("past the limit", 7)
    return limit

built = []
build = unboxed._build
unboxed._build = lambda *a: built.append(a[-1]) or build(*a)
many, out = (np.arange(4.0), np.ones(3)), np.zeros(1)
halve(many, out), total(many), checked(many, 9.0)       # (compiled: a bind goes straight to a compiled version)
many[1][0] = 1.0
calls = bind(halve, many, out), bind(total, many), bind(checked, many, -1.0)
assert all(getattr(call, "unboxed", False) for call in calls)
assert calls[0]() is None and out[0] == 0.0 and calls[1]() == 9.0
try:
    calls[2]()
    raise AssertionError("no raise")
except ValueError as error:
    assert error.args == ("past the limit", 7) and many[1][0] == 2.0
many[0][0] = 5.0            # read again at each call
calls[0]()
print(len(built), out[0], calls[1]())
'''


def _cached_run(tmp_path):
    """(trampolines built, results) of a process binding two kernels, its cache in tmp_path."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", _CACHED], capture_output=True, text=True, env=env, timeout=300,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    built, *results = done.stdout.split()
    return int(built), [float(r) for r in results]


def test_a_trampoline_made_in_one_process_is_read_by_the_next(tmp_path):
    """The first process builds its three trampolines (a None return, a float one, one whose kernel
    raises) and leaves their object code in the cache; the next builds none and gets the same
    results: None (reached by its symbol, not an address of the first process) and the kernel's
    exception with its arguments, raised once. An entry whose bytes changed (its hash no longer
    matches), another entry's whole file in its place (another trampoline's name), or a directory
    in its place is built anew, never loaded; the calls still give the same results."""
    assert _cached_run(tmp_path) == (3, [2.5, 15.0])
    entries = sorted((tmp_path / "cache" / "trampolines").glob("trampoline_*.o"))
    assert len(entries) == 3
    assert _cached_run(tmp_path) == (0, [2.5, 15.0])
    data = bytearray(entries[0].read_bytes())
    data[-1] ^= 0xFF
    entries[0].write_bytes(bytes(data))
    assert _cached_run(tmp_path) == (1, [2.5, 15.0])
    assert _cached_run(tmp_path) == (0, [2.5, 15.0])      # (written again, whole)
    entries[2].write_bytes(entries[1].read_bytes())
    assert _cached_run(tmp_path) == (1, [2.5, 15.0])
    entries[1].unlink()
    entries[1].mkdir()
    assert _cached_run(tmp_path) == (1, [2.5, 15.0])
    assert _cached_run(tmp_path) == (1, [2.5, 15.0])      # (a directory stays: built each time, no error)
