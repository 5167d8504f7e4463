"""SIGINT and SIGTERM as exceptions (physics.tools.signals): a stop is never lost, wherever the main
thread is when the signal arrives. An exception raised inside a gc callback (Dask's scheduler times
the collector with one, in the sweep's own process) is printed and dropped by Python: a stop raised
there would be lost, and the sweep would run on, deaf to further signals."""
import gc
import os
import signal
import sys
import time

import pytest

from physics.tools.signals import raising_on_signals


class Stop(BaseException):
    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def test_a_signal_that_arrives_inside_a_gc_callback_stops_the_block_once_the_callback_is_done(capsys):
    """A gc callback that sends SIGTERM to this process and keeps running (so that the handler runs
    inside it): the stop rises in the block after the collection, within a second, and nothing is
    printed (no "Exception ignored in gc callback"); the callback itself ran to its end. It sends
    only once armed inside the block: a collection Python starts on its own before the block's
    handler is in place (any allocation may start one) would send SIGTERM to a process that still
    dies of it, and took the test's pytest worker down with it."""
    armed, finished = [], []

    def callback(phase, info):
        if phase == "start" and armed and not finished:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):       # bytecodes for the handler to run in
                pass
            finished.append(True)

    gc.callbacks.append(callback)
    try:
        with pytest.raises(Stop, match="SIGTERM"):
            with raising_on_signals(Stop):
                armed.append(True)
                gc.collect()
                deadline = time.monotonic() + 1.0
                while time.monotonic() < deadline:
                    time.sleep(0.01)
    finally:
        gc.callbacks.remove(callback)
    assert finished == [True]
    assert capsys.readouterr().err == ""


def test_a_stop_dropped_by_python_is_raised_again_where_the_main_thread_goes_on(capsys, monkeypatch):
    """A signal whose handler runs inside a `__del__` raises there, where Python cannot propagate
    it ("unraisable"): it is delivered again and stops the block, silently. Other unraisable
    exceptions still reach the hook that was there before the block."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(type(info.exc_value).__name__))

    class Signalling:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):       # bytecodes for the handler to run in
                pass

    class Failing:
        def __del__(self):
            raise ValueError("not a stop")

    with pytest.raises(Stop, match="SIGTERM"):
        with raising_on_signals(Stop):
            Failing()                   # dropped by Python, shown by the previous hook
            Signalling()
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                time.sleep(0.01)
    assert seen == ["ValueError"]
    assert capsys.readouterr().err == ""


def test_a_signal_that_arrives_while_numba_compiles_stops_the_block_once_the_kernel_is_compiled():
    """The fuzzer's signal kind sent SIGINT and SIGTERM into running commands in one process: a
    stop raised inside numba's own Python code (a kernel compiled, loaded from the cache, or typed
    for a call) left the dispatcher half-updated, and later calls failed to type or crashed the
    process. A signal sent while a fresh kernel compiles (about a second: well past the moment it
    is sent) now stops the block at the next line of our code: the kernel is compiled whole, and
    it still runs."""
    import threading

    import numba

    @numba.njit(cache=False)
    def fresh(x):
        total = 0.0
        for k in range(x.shape[0]):
            total += x[k] * k
        return total

    import numpy as np
    values = np.arange(5.0)
    timer = threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT))
    with pytest.raises(Stop, match="SIGINT"):
        with raising_on_signals(Stop):
            timer.start()
            started = time.monotonic()
            fresh(values)
            assert time.monotonic() - started > 0.02, "the compile ended before the signal was sent"
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                time.sleep(0.01)
    assert len(fresh.signatures) == 1
    assert fresh(values) == 30.0


def test_a_stop_held_back_while_numba_compiled_is_not_delivered_after_the_block():
    """A signal held back while numba compiles is delivered again 10 ms later; where the block
    has ended meanwhile (its work done), it stops nothing and is delivered into nothing after it
    (the fuzzer's worker ran the next command into it: "interrupted while checking the options").
    It is kept in `late_stops`, unless it came back while the block was still open and stopped it."""
    import threading

    import numba
    import numpy as np

    from physics.tools import signals

    @numba.njit(cache=False)
    def fresh(x):
        return x.sum() * 2.0

    after = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: after.append(signum))
    try:
        timer = threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT))
        stopped = False
        try:
            with raising_on_signals(Stop):
                timer.start()
                fresh(np.arange(3.0))
        except Stop:
            stopped = True
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert after == []
    assert stopped or signals.late_stops == [signal.SIGINT], (stopped, signals.late_stops)


def test_an_error_raised_in_place_of_a_swallowed_stop_leaves_the_block_as_the_stop():
    """Code that catches the stop and raises an error of its own instead (numpy does, inside a
    structured arrays' comparison) would end a sweep with that error's traceback: the error leaves
    the block as the stop, the error its cause, and `raised()` gives the stop to the block's code
    meanwhile. Outside any block, `raised()` is None."""
    from physics.tools import signals

    seen = []
    with pytest.raises(Stop, match="SIGINT") as stopped:
        with raising_on_signals(Stop):
            assert signals.raised() is None
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10**6):      # bytecodes for the handler to run in
                    pass
            except BaseException:
                seen.append(signals.raised())
                raise TypeError("Cannot compare structured arrays unless they have a common dtype") from None
    assert isinstance(stopped.value.__cause__, TypeError)
    assert seen == [stopped.value]
    assert signals.raised() is None
