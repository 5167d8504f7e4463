"""The fuzzer's kind "signal" (physics.tools.fuzz; docs/reliability.md, "The fuzzer"): SIGINT or
SIGTERM at a drawn moment of a `python -m physics run` — while the scene loads, inside a compiled
solve (the two-thread contact stages of the pile, RATTLE's projections of the chain and the net,
the free bodies' fused pass), between kernels, while the output and the recording are written.

The command runs in the worker's own process (`physics.__main__.main`, its output captured), and a
timer thread sends the signal to that process after the case's delay, unless the command has
returned by then. The case passes when the command exits 128 + the signal's number with one line
that starts "interrupted" and leaves no output file and no temporary file behind, or when the run
was done before the moment came (exit 0, its outputs whole).
"""
import contextlib
import io
import os
import signal
import threading
import traceback
from pathlib import Path

# Scenes whose steps spend their time in different kernels: joints (RATTLE), a heap (the contact
# solve, on two threads past its row threshold), a kinematic drive, free bodies, a robot.
SIGNAL_SCENES = ("chain", "pile", "tank", "car", "t_handle", "iiwa", "rope_bridge")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
DELAY_MAX = 0.6     # s after the command starts: its load and its first steps, where the kernels are


class Early(BaseException):
    """A signal that came before the command set its handlers (`run_signal_case`)."""


def draw_signal_case(data):
    """A `run` command line, a signal and its moment."""
    from hypothesis import strategies as st

    from physics.tools.fuzz import SCENES, Case

    scene = data.draw(st.sampled_from(SIGNAL_SCENES), label="scene")
    number = data.draw(st.sampled_from(SIGNALS), label="signal")
    # half the moments in the first 50 ms (the load), the rest spread over the steps
    delay = data.draw(st.one_of(st.floats(0.0, 0.05), st.floats(0.05, DELAY_MAX)), label="delay")
    argv = ["run", str(SCENES / f"{scene}.toml"), "--steps", str(data.draw(st.sampled_from([1, 10, 100, 1000, 10**6])))]
    outputs = data.draw(st.sampled_from([["--out", "{out}.npz"], ["--out", "{out}.csv"], ["--record", "{out}.rec"],
                                         ["--out", "{out}.npz", "--record", "{out}.rec"]]), label="outputs")
    argv += outputs
    if data.draw(st.booleans(), label="integrator"):
        argv += ["--integrator", data.draw(st.sampled_from(["rk4", "lie-midpoint-4", "semi-implicit-euler"]))]
    mutations = [f"{signal.Signals(number).name} after {delay * 1e3:.1f} ms of {argv}"]
    return Case(scene, b"", mutations=mutations, kind="signal", argv=argv, delay=delay, signal=int(number))


def run_signal_case(case, directory):
    """Run the case's command in this process and send its signal (module docstring) -> (outcome, detail)."""
    from physics.__main__ import main
    from physics.tools import signals

    directory = Path(directory)
    argv = [arg.replace("{out}", str(directory / "cmd-out")) for arg in case.argv]
    lock, state = threading.Lock(), {"done": False, "sent": False, "late": False, "returned": False}

    def send():
        with lock:
            if not state["done"]:
                state["sent"] = True
                os.kill(os.getpid(), case.signal)

    def late(signum, frame):
        """The signal came before the command set its handlers or after it took them away: in a
        process of its own, `python -m physics` ends then with one line at import
        (physics.__main__'s first handler) or has exited; here, before the command, it is not
        run at all."""
        state["late"] = True
        if not state["returned"]:
            raise Early

    previous = {number: signal.signal(number, late) for number in SIGNALS}
    timer = threading.Timer(case.delay, send)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                try:
                    timer.start()
                    code = main(argv)
                finally:
                    state["returned"] = True
            except SystemExit as leave:
                code = leave.code
            except Early:
                code = None
            finally:
                with lock:
                    state["done"] = True
                timer.cancel()
    except BaseException:       # the signal escaped the command: what a user would see as a traceback
        return "failed", f"{argv}: " + traceback.format_exc()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    said = err.getvalue().strip()
    left = sorted(p.name for p in directory.iterdir() if p.name.startswith((".cmd-out", "cmd-out")))
    for path in directory.iterdir():
        if path.name.startswith((".cmd-out", "cmd-out")):
            path.unlink()
    # what the user reads: the progress bar's lines (each "[###   ] N/M steps ...") aside
    lines = [line for line in said.replace("\r", "\n").splitlines() if line.strip() and not line.startswith("[")]
    if code is None:
        return "ran", f"{argv}: the signal came while the command's handlers were not set"
    if case.signal in signals.late_stops:     # held back while numba compiled; the command ended first
        if code == 0:
            return "ran", f"{argv}: done before the stop, held while a kernel compiled, could be taken"
        if code == 2 and len(lines) == 1 and lines[0].startswith("error:"):
            return "refused", f"{argv}: {lines[0]} (before the stop, held while a kernel compiled, could be taken)"
    if not state["sent"] or state["late"]:      # the command was done before the moment came
        if code == 0:
            return "ran", f"{argv}: done before the signal"
        if code == 2 and len(lines) == 1 and lines[0].startswith("error:"):    # e.g. more rows than memory
            return "refused", f"{argv}: {lines[0]}"
        return "failed", f"{argv}: exit {code} with no signal received: {said[-2000:]}"
    expected = 128 + case.signal
    if code != expected:
        return "failed", f"{argv}: exit {code} after {signal.Signals(case.signal).name} (expected {expected}): {said[-2000:]}"
    if len(lines) != 1 or not lines[0].startswith("interrupted"):
        return "failed", f"{argv}: exit {code}, but not one line 'interrupted ...': {said[-2000:]}"
    if left:
        return "failed", f"{argv}: exit {code} left {left}"
    return "stopped", f"{argv}: exit {code}: {said}"
