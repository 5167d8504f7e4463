"""SIGINT and SIGTERM as exceptions, for the commands that must clean up when stopped.

`raising_on_signals(make)` turns either signal into `raise make(signum)` while its block runs, in
the main thread (only there may handlers be set; elsewhere the block runs with the handlers it
finds). The first signal ignores further ones, so that nothing cuts the cleanup short; a signal
ignored when the block starts (a background job's SIGINT) stays ignored; the handlers found come
back afterwards. The runner (physics.__main__) and the sweep (physics.tools.sweep) use it.

A handler runs in whatever the main thread is running when the signal arrives, and where that is
a callback Python calls from C, its exception is "unraisable": printed and dropped. A sweep's
scheduler (Dask, in the sweep's process) times the garbage collector with a gc callback; a stop
raised in it would print two tracebacks (the callback's own state left half-way) and be lost, the
sweep running on, deaf to further signals (the handler ignores them once it has run). So a signal that arrives inside a gc callback is delivered again
a moment later, from another thread (`_thread.interrupt_main`), where the main thread then is; and
a stop raised where Python drops it anyway (a `__del__`) is delivered again the same way, silently.

So is a signal that arrives inside numba's or llvmlite's own Python code: a kernel being compiled
or loaded from the cache, or numba's dispatcher typing a call's arguments (it calls back into
Python for them). An exception raised there leaves the dispatcher's tables half-updated: in a
process that went on, later calls failed to type ("Unknown attribute 'shape' of type array") or
crashed (a double free, a segmentation fault; the fuzzer's signal kind found both). The stop comes
at the next line of our own code, once the kernel is compiled (seconds at most, on a cold cache).
Code that catches every exception swallows a stop raised inside it, and the handler ignores the
signals after it. C code that clears any error it meets does: numpy in places (its issue 20596),
iterating an array of strings among them, so a block's long loops iterate Python objects, never
such an array (the runner's CSV writer, `physics.tools.trajectory`); and numpy replaces an error
met inside a structured arrays' comparison with a TypeError of its own. So does Python code:
trimesh's binary STL reader wraps its header's parsing in `except BaseException` and raises its
own error, or none. So the block remembers the stop it raised: `raised()` gives it to the block's
own code, which takes an exception it did not expect, or its work going on, after a stop for that
stop (the runner's stages, physics.__main__); and an exception other than the stop that leaves
the block after it leaves as the stop, with the exception as its cause (the sweep).

A stop still held back when the block ends (its work finished meanwhile) stops nothing and is
kept in `late_stops`; none is delivered into whatever the process does next.
"""
import _thread
import gc
import os
import signal
import sys
import threading
from contextlib import contextmanager

REDELIVERY_S = 0.01     # a signal deferred out of a callback is delivered again after this
# The stops the last block let go as it ended: delivered again (out of a callback or numba's code)
# after its work was done, they stop nothing (the command ends as it would have a moment later).
late_stops = []

STOPPING = (signal.SIGINT, signal.SIGTERM)
_open_blocks = []       # per open block, innermost last: the stops its handler raised


def raised():
    """The stop the innermost open block's handler raised, or None: where the block's own code runs
    on after it, something swallowed it (module docstring)."""
    if threading.current_thread() is not threading.main_thread() or not _open_blocks or not _open_blocks[-1]:
        return None
    return _open_blocks[-1][0]


@contextmanager
def raising_on_signals(make):
    """Within the block, SIGINT / SIGTERM raise `make(signum)` (module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    received, open_, lock, pending = [], [True], threading.RLock(), []   # (re-entered by a handler in the block's end)
    thrown = []
    del late_stops[:]

    def stop(signum, frame):
        if not open_[0]:        # a delivery again that came as the block ended: its work is done
            late_stops.append(signum)
            return
        if _in_gc_callback(frame) or _in_compiler(frame):
            later(signum)
            return
        for number in STOPPING:
            signal.signal(number, signal.SIG_IGN)
        received.append(signum)
        stop = make(signum)
        thrown.append(stop)
        raise stop

    def later(signum):
        """Deliver `signum` again in REDELIVERY_S, from another thread, while the block is open."""
        def again():
            with lock:
                if entry in pending:
                    pending.remove(entry)
                    _thread.interrupt_main(signum)
        timer = threading.Timer(REDELIVERY_S, again)
        timer.daemon = True
        entry = (timer, signum)
        with lock:
            pending.append(entry)
        timer.start()

    def dropped(unraisable):
        if not (received and isinstance(unraisable.exc_value, make)):
            return hook(unraisable)
        signal.signal(received[-1], stop)       # once more, for the delivery it lost
        later(received[-1])

    previous = {number: signal.getsignal(number) for number in STOPPING}
    hook = sys.unraisablehook
    _open_blocks.append(thrown)
    try:
        sys.unraisablehook = dropped
        for number, handler in previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(number, stop)
        yield
    except Exception as error:
        if thrown:      # the stop, swallowed on the way by code that raised this instead
            raise thrown[0] from error
        raise
    finally:
        open_[0] = False        # first: a stop handled from here on is late, never raised in here
        del _open_blocks[[id(block) for block in _open_blocks].index(id(thrown))]
        try:
            with lock:      # what is still to be delivered again stops nothing now: kept, never delivered
                for timer, signum in pending:
                    timer.cancel()
                    late_stops.append(signum)
                pending.clear()
        finally:
            sys.unraisablehook = hook
            for number, handler in previous.items():
                signal.signal(number, handler)


def _in_gc_callback(frame):
    """Whether `frame` runs inside one of `gc.callbacks` (its own frame or one it called)."""
    codes = {getattr(getattr(callback, "__func__", callback), "__code__", None) for callback in gc.callbacks}
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _in_compiler(frame):
    """Whether `frame` runs inside numba's or llvmlite's own Python code: a kernel being compiled,
    loaded from the cache or typed for a call (numba's dispatcher calls back into Python for it)."""
    roots = tuple(os.path.dirname(module.__file__) + os.sep
                  for module in (sys.modules.get("numba"), sys.modules.get("llvmlite")) if module is not None)
    while roots and frame is not None:
        if frame.f_code.co_filename.startswith(roots):
            return True
        frame = frame.f_back
    return False


