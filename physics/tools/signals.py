"""SIGINT and SIGTERM as exceptions, for the commands that must clean up when stopped.

`raising_on_signals(make)` turns either signal into `raise make(signum)` while its block runs, in
the main thread (only there may handlers be set; elsewhere the block runs with the handlers it
finds). The first signal ignores further ones, so that nothing cuts the cleanup short; a signal
ignored when the block starts (a background job's SIGINT) stays ignored; the handlers found come
back afterwards. The runner (physics.__main__) and the sweep (physics.tools.sweep) use it.
"""
import signal
import threading
from contextlib import contextmanager

STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def raising_on_signals(make):
    """Within the block, SIGINT / SIGTERM raise `make(signum)` (module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        for number in STOPPING:
            signal.signal(number, signal.SIG_IGN)
        raise make(signum)

    previous = {number: signal.getsignal(number) for number in STOPPING}
    try:
        for number, handler in previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(number, stop)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
