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
    printed (no "Exception ignored in gc callback"); the callback itself ran to its end."""
    finished = []

    def callback(phase, info):
        if phase == "start" and not finished:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):       # bytecodes for the handler to run in
                pass
            finished.append(True)

    gc.callbacks.append(callback)
    try:
        with pytest.raises(Stop, match="SIGTERM"):
            with raising_on_signals(Stop):
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
