"""Headless runner: `python -m physics run SCENE.toml [options] --out FILE.npz|FILE.csv`.

Loads a scene, applies command-line overrides to its settings, steps it, records row 0 (the
initial state) and then one row every K steps, and writes the output atomically. When K does not
divide the step count the last steps are simulated but not recorded (the contract keeps the rows
evenly spaced); the summary says which step the last row holds.
`--profile FILE.json` also writes every step's stage times as a Chrome trace (physics.core.profile).

Exit codes (a failure prints one line on stderr, never a traceback; a usage error two: the short
usage and the error, physics.tools.options.Parser):
  0  done;
  1  the run failed: a node's state diverged or went non-finite (physics.pipeline.simulation's
     DivergenceError names the node, the step and the quantity), or an internal error (naming
     the stage and the exception); numpy's own overflow warnings are silenced, the blow-up is
     reported once, by us;
  2  bad input: a scene error, a bad option value, an output path that cannot be written (checked
     before the run, not after it), or more rows than fit in memory; and a full disk while
     writing ("the disk is full", naming the file);
  130, 143  SIGINT (Ctrl+C) or SIGTERM at any moment, from the first import on: the shell's 128 +
     signal number, with one line; the atomic write's temporary file is removed.
No output file is left by any run that does not exit 0.

Subcommands: each is a parser on the `commands` subparsers object of `build_parser` whose
`handler` default takes the parsed arguments and returns an exit code; bad input raises ValueError.
`run`, `compare` and `sweep` share their argument checks (physics.tools.options), made before any scene
loads or any cluster starts.
"""
import os
import signal
import sys

if __name__ == "__main__":
    # Until `main` takes over the signals, a Ctrl+C or SIGTERM (during the imports below: numpy,
    # numba, a second or more) ends the process with one line, not a traceback of the import.
    def _stopped_while_starting(signum, frame):
        os.write(2, b"interrupted while starting; no output written\n")
        os._exit(128 + signum)

    for _number in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(_number) is not signal.SIG_IGN:
            signal.signal(_number, _stopped_while_starting)

import argparse
import errno
import math
import textwrap
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np

from physics.core import choices
from physics.tools import options
from physics.tools.compare import add_parser as add_compare_parser
from physics.core.files import identity
from physics.core.profile import Recorder, category as event_category
from physics.pipeline.recording import add_parser as add_replay_parser, write_recording
from physics.pipeline.timeline import Timeline
from physics.tools.trajectory import FORMATS, Recording, recording_bytes, write
from physics.io.scene import SceneError
from physics.tools.signals import raised, raising_on_signals
from physics.core.settings import EXPONENTIALS, GYROSCOPIC, JOINT_SOLVES, ROTATION_UPDATES
from physics.core.choices import ORDER_NOTE
from physics.tools.sweep import add_parser as add_sweep_parser
from physics.tools.warmup import add_parser as add_warmup_parser

DEFAULT_STEPS = 600
PROGRESS_MIN_STEPS = 2000  # shorter runs finish before a bar is worth drawing
MEMORY_FRACTION = 0.5      # of physical memory a recording may fill: writing it (CSV most) needs about as much again


def _integrator_help():
    return "\n".join(textwrap.fill(description, 100, initial_indent=f"  {name:<22}", subsequent_indent=" " * 24)
                     for name, description in choices.INTEGRATOR.meanings.items())


def build_parser():
    """The command line: one subparser per subcommand (see the module docstring)."""
    parser = options.Parser(prog="python -m physics", description="Physics sandbox, headless.")
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_parser(commands)
    add_compare_parser(commands)
    add_sweep_parser(commands)
    add_replay_parser(commands)
    add_warmup_parser(commands)
    return parser


def add_run_parser(commands):
    """The `run` subcommand; its handler is `run`."""
    run_parser = commands.add_parser(
        "run", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="simulate a scene file and write its states (.npz or .csv)",
        description="Simulate SCENE.toml headless and write every node's world and local state.",
        epilog="integrators:\n" + _integrator_help() + "\n\n" + textwrap.fill(ORDER_NOTE, 100)
               + "\n\noutput: row 0 is the initial state, then one row every K steps; see docs/scene-format.md.")
    run_parser.add_argument("scene", metavar="SCENE", help="a scene file (.toml) or a robot model (.urdf, MJCF .xml)")
    length = run_parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, metavar="N", help=f"number of steps (default {DEFAULT_STEPS})")
    length.add_argument("--duration", type=float, metavar="S", help="simulated seconds (rounded to whole steps)")
    run_parser.add_argument("--dt", type=float, metavar="H", help="time step, s (overrides [world] dt)")
    run_parser.add_argument("--substeps", type=int, metavar="N", help="sub-steps per step (overrides [world] substeps)")
    run_parser.add_argument("--integrator", metavar="NAME", help="dynamic-body integrator (listed below)")
    run_parser.add_argument("--gyroscopic", choices=GYROSCOPIC, help="the omega x L term")
    run_parser.add_argument("--rotation-update", choices=ROTATION_UPDATES, help="Magnus order for kinematic nodes")
    run_parser.add_argument("--exponential", choices=EXPONENTIALS, help="quaternion exponential for kinematic nodes")
    run_parser.add_argument("--counteract", choices=("on", "off"), help="impulses leave children's world motion")
    solver = run_parser.add_argument_group("constraint solver (contacts and joints; override [world])")
    solver.add_argument("--iterations", type=int, metavar="N", help="Gauss-Seidel sweeps per sub-step (>= 1)")
    solver.add_argument("--sor", type=float, metavar="W", help="over-relaxation factor, 0 < W < 2 (1 = Gauss-Seidel)")
    solver.add_argument("--erp", type=float, metavar="E", help="error fraction removed per second, 0 <= E < 1")
    solver.add_argument("--cfm", type=float, metavar="C", help="constraint force mixing (softness), >= 0")
    solver.add_argument("--max-contact-push-speed", type=float, metavar="V",
                        help="fastest a contact pushes overlapping bodies apart, m/s (> 0)")
    solver.add_argument("--warm-start", choices=("on", "off"), help="start from last step's impulses")
    solver.add_argument("--relax", choices=("on", "off"), help="relax stage: position correction adds no energy")
    solver.add_argument("--shake", choices=("on", "off"), help="joint projection also corrects velocities (SHAKE)")
    solver.add_argument("--joint-solve", choices=JOINT_SOLVES,
                        help="joints projected onto their constraints (exact) or soft (the solve alone: linear in the joints)")
    solver.add_argument("--sleep", choices=("on", "off"), help="bodies at rest on their parent sleep until woken")
    options.add_control_arguments(run_parser)
    run_parser.add_argument("--record-every", type=int, default=1, metavar="K", help="record one row every K steps (default 1)")
    run_parser.add_argument("--out", metavar="FILE", help="output file, .npz or .csv (written atomically)")
    run_parser.add_argument("--record", metavar="FILE.rec",
                            help="also write a recording: the scene, keyframes, every step's state hash "
                                 "(docs/recording-format.md; verify it with `python -m physics replay FILE.rec --verify`); "
                                 "at least one of --out, --record and --profile is needed")
    run_parser.add_argument("--keyframe-every", type=int, default=60, metavar="K",
                            help="a recording's keyframe snapshot every K steps (default 60)")
    run_parser.add_argument("--profile", metavar="FILE.json",
                            help="also write every step's stage times (physics.core.profile: each stage of the sub-step by "
                                 "its name, world, prepare, kinematic, dynamic, solve, joints, sleep, ...) as a Chrome trace; "
                                 "open it in Perfetto (ui.perfetto.dev) or chrome://tracing")
    run_parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    run_parser.set_defaults(handler=run)


def _overrides(args):
    values = {
        "dt": args.dt, "substeps": args.substeps, "integrator": args.integrator,
        "gyroscopic": args.gyroscopic, "rotation_update": args.rotation_update,
        "exponential": args.exponential, "counteract": args.counteract,
        "iterations": args.iterations, "sor": args.sor, "erp": args.erp, "cfm": args.cfm,
        "max_contact_push_speed": args.max_contact_push_speed,
        "warm_start": args.warm_start, "relax": args.relax, "shake": args.shake, "joint_solve": args.joint_solve,
        "sleep": args.sleep,
    }
    return {name: value for name, value in values.items() if value is not None}


def check_output(option, path, extensions):
    """physics.tools.options.check_output_file (kept here by its name for callers)."""
    options.check_output_file(option, path, extensions)


def _step_count(args, dt):
    return options.step_count(args, dt, DEFAULT_STEPS)


def _physical_memory():
    """Bytes of physical memory, or None where the system does not say (no sysconf)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _short(number):
    """A non-negative integer in at most 15 characters: exact, or as 6.00e+301 (from its digits:
    a float would overflow past 1e308)."""
    digits = str(number)
    return digits if len(digits) <= 15 else f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def _check_memory(option, steps, record_every, count):
    """A ValueError if the recording of `steps` steps would not fit in memory: numpy would fail
    only when its pages are touched, deep into the run."""
    rows = 1 + steps // record_every
    need, memory = recording_bytes(rows, count), _physical_memory()
    if memory is not None and need > MEMORY_FRACTION * memory:
        raise ValueError(f"{option}: {_short(steps)} steps, one row every {_short(record_every)} (--record-every), "
                         f"make {_short(rows)} rows of {count} nodes: {_short(need // 2**30)} GiB, more than "
                         f"{MEMORY_FRACTION:.0%} of this machine's {memory / 2**30:.3g} GiB; record fewer rows "
                         "or run fewer steps")


class Progress:
    """A one-line progress bar on stderr, redrawn at most every 0.2 s."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.start, self.last = total, enabled, time.perf_counter(), 0.0
        self.line_open = False  # a bar is drawn and its line not yet ended

    def update(self, done, force=False):
        """Redraw with `done` steps; `force` draws now and ends the line."""
        now = time.perf_counter()
        if not self.enabled or (not force and now - self.last < 0.2):
            return
        self.last = now
        fraction = done / self.total if self.total else 1.0
        bar = "#" * int(30 * fraction)
        rate = done / max(now - self.start, 1e-9)
        self.line_open = not force  # first: a signal may arrive as soon as the bar is out
        sys.stderr.write(f"\r[{bar:<30}] {done}/{self.total} steps  {rate:,.0f} steps/s")
        if force:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def end_line(self):
        """End a drawn bar's line, so that a message after it starts on its own."""
        if self.line_open:
            sys.stderr.write("\n")
            self.line_open = False


def _relative(change, start, word=""):
    """' (relative [word]x)', or nothing when the start value is (near) zero and a ratio would mislead."""
    return f" (relative {word}{change / start:+.3e})" if start > 1e-12 else " (start value 0: no relative figure)"


def _summary(arrays, steps, seconds, record_every):
    """The run's speed and the drift of energy and momentum between row 0 and the last row."""
    energy = arrays["kinetic_energy"] + arrays["potential_energy"]
    last_step = (len(arrays["time"]) - 1) * record_every
    lines = [f"{steps} step{'' if steps == 1 else 's'} in {seconds:.3f} s: {steps / max(seconds, 1e-9):,.0f} steps/s"]
    if last_step != steps:
        lines.append(f"note: --record-every {record_every} does not divide {steps} steps: the last row is step "
                     f"{last_step} (t = {arrays['time'][-1]:.9g} s); the final {steps - last_step} steps are not recorded")
    lines.append(f"from row 0 (step 0) to the last row (step {last_step}):")
    lines.append(f"energy: {energy[0]:.9g} -> {energy[-1]:.9g} J{_relative(energy[-1] - energy[0], abs(energy[0]), 'drift ')}")
    for name, unit in (("linear_momentum", "kg m/s"), ("angular_momentum", "kg m²/s")):
        first, last = arrays[name][0], arrays[name][-1]
        change = np.linalg.norm(last - first)
        lines.append(f"{name.replace('_', ' ')}: |Δ| = {change:.3e} {unit}{_relative(change, np.linalg.norm(first))}")
    return "\n".join(lines)


class Interrupted(BaseException):
    """SIGINT or SIGTERM, raised in the main thread so that the writer's cleanup runs. A
    BaseException, as KeyboardInterrupt: no `except Exception` swallows it. `code` is the shell's
    128 + signal number; `stage` (set by `_stage`) says where the runner was, `written` whether
    the output was complete by then."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.code, self.stage, self.written = 128 + signum, None, False


class InternalError(Exception):
    """An unexpected exception (`error`) in the runner's own work, and the `stage` it came from."""

    def __init__(self, stage, error, written=False):
        super().__init__(f"{stage}: {type(error).__name__}: {error}")
        self.stage, self.error, self.written = stage, error, written


def _interruption(error):
    """The Interrupted behind `error`, if one is: a signal whose handler raised while the main thread
    was inside a compiled kernel's call comes out of numba's dispatcher as "SystemError: Kernel(…)
    returned a result with an exception set", with the Interrupted as its cause. And one that no
    chain shows: numpy replaces an error raised inside a structured arrays' comparison with a
    TypeError of its own (`np.unique(..., axis=0)` compares rows so, calling Python to promote
    their dtypes: the convex hulls' planes at load), so any exception after the block's stop was
    raised is taken for that stop (physics.tools.signals.raised)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, Interrupted):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return _swallowed()


def _swallowed():
    """The Interrupted the signal handler raised, if one was (physics.tools.signals.raised)."""
    stop = raised()
    return stop if isinstance(stop, Interrupted) else None


@contextmanager
def _stage(what, expected=(), written=False):
    """Name what the block does (`what`: text, or a function giving it at the moment of failure)
    in an Interrupted or unexpected exception leaving it; exceptions of the `expected` types are
    known outcomes (bad input, a diverged run) and leave unchanged. The innermost stage wins.
    Any exception after a stop, and a block that ends after one, is that stop: code that caught it
    went on (`_interruption`)."""
    def named(interrupt):
        if interrupt.stage is None:
            interrupt.stage, interrupt.written = what() if callable(what) else what, written
        return interrupt

    try:
        yield
    except Interrupted as interrupt:
        named(interrupt)
        raise
    except Exception as error:
        interrupt = _interruption(error)
        if interrupt is not None:
            raise named(interrupt) from None
        if isinstance(error, (InternalError, *expected)):
            raise
        raise InternalError(what() if callable(what) else what, error, written) from error
    interrupt = _swallowed()
    if interrupt is not None:
        raise named(interrupt)


def run(args):
    """`python -m physics run`: -> exit code 0, or 1 if the state went non-finite or diverged;
    bad input raises ValueError (SceneError) before anything runs or is written."""
    with _stage("while checking the options", expected=(ValueError,)):
        if args.out is None and args.record is None and args.profile is None:
            raise ValueError("run: give --out FILE (.npz or .csv), --record FILE.rec, --profile FILE.json, or several")
        if args.record is None:
            args.keyframe_every = None          # only a recording has keyframes
        options.check(args)
        if args.profile is not None:
            check_output("--profile", args.profile, (".json",))
        if args.out is not None:
            check_output("--out", args.out, FORMATS)
        if args.record is not None:
            check_output("--record", args.record, (".rec",))
            if Path(args.record).exists():      # a recording is never silently replaced
                raise ValueError(f"--record: got {args.record!r}; the file exists (remove it or choose another name)")
    # a cold kernel cache: a short run runs interpreted rather than wait minutes for the compiler
    # (physics.tools.warmup.InterpretedStart; the same bits); a profile times the compiled stages
    from physics.tools.warmup import InterpretedStart
    planned = 0 if args.profile is not None else args.steps if args.steps is not None else DEFAULT_STEPS
    with InterpretedStart(planned) as start:
        with _stage("while loading the scene", expected=(ValueError,)):
            # here, within InterpretedStart: on a cold cache the kernels' modules load as Python
            from physics.pipeline.simulation import Simulation
            sim = Simulation.from_file(args.scene)
            for name, value in _overrides(args).items():
                sim.set(name, value)
            schedule = options.controls(args, sim)     # checked here, before anything runs or is written
            steps = _step_count(args, sim.settings.dt)
            start.steps = steps if start.on else 0
            _check_memory("--steps" if args.duration is None else "--duration", steps, args.record_every,
                          len(sim.names))
        with _stage("while allocating the recording"):
            recording = Recording(sim, 1 + steps // args.record_every) if args.out is not None else None
        # numpy's overflow/invalid warnings would precede our message with a screen of noise on a blow-up
        with np.errstate(all="ignore"):
            return _simulate(args, sim, steps, recording, start, schedule)


def _settings_text(settings):
    """The settings as JSON-ready values (vectors as lists) for a trace's metadata."""
    return {name: np.asarray(value).tolist() if np.ndim(value) else (value.item() if hasattr(value, "item") else value)
            for name, value in asdict(settings).items()}


def _profile_summary(profiler, steps, path, counts):
    """The median time per step of the step and of each stage, the largest first (the median: a
    stage's first step also compiles the numba kernels not yet cached), where the trace went, and
    the sub-steps taken per nominal one with RATTLE's retries (`counts`: `Simulation.substep_counts`;
    the trace holds each retry as a "retry" span around its halves)."""
    per_step = {name: np.median(ns) / 1e3 for name, ns in profiler.per_step().items()}   # µs
    ranked = sorted((name for name in per_step if event_category(name) == "stage"), key=per_step.get, reverse=True)
    stages = ", ".join(f"{name} {per_step[name]:.1f}" for name in ranked)
    dropped = f" (kept the first {len(profiler.events)} events, {profiler.dropped} more dropped)" if profiler.dropped else ""
    return (f"wrote a trace of {steps} steps to {path}{dropped}; median per step {per_step.get('step', 0.0):.1f} µs: "
            f"{stages} µs; sub-steps taken {counts['per_nominal']:.2f}x nominal (worst step {counts['worst_step']:.2f}x), "
            f"{counts['retries']} RATTLE retries, {counts['halved_ahead']} halved ahead, "
            f"{counts['refused']} refused by the step's budget")


def _simulate(args, sim, steps, recording, start=None, schedule=None):
    """Step and record, write, summarize; -> exit code (0, or 1 if the state diverged: the
    simulation checks every sub-step, physics.pipeline.stages.DivergenceError)."""
    # (loaded with the Simulation; imported here, not at the top, so that the parser loads no kernel module)
    from physics.pipeline.stages import DivergenceError
    from physics.constraints.solver import ContactBudgetError

    progress = Progress(steps, enabled=not args.quiet and steps >= PROGRESS_MIN_STEPS)
    timeline = None
    if args.record is not None:     # a recording holds every step from the first: no budget
        timeline = Timeline(sim, budget=sys.maxsize, keyframe_every=args.keyframe_every)
    def control(name, value):       # an input: a recording holds it too
        sim.set_control(name, value) if timeline is None else timeline.apply("control", name, value)

    schedule = schedule if schedule is not None else options.Controls()
    dt = sim.settings.dt
    advance = sim.step if timeline is None else timeline.step
    profiler = Recorder(trace=True) if args.profile is not None else None
    first_step = sim.step_count
    try:
        with _stage(lambda: f"at step {sim.step_count} of {steps}", expected=(DivergenceError, ContactBudgetError)):
            if recording is not None:
                recording.record()
            done, since_row = 0, 0
            if profiler is not None:
                profiler.start()
            while done < steps:
                for name, value in schedule.due(sim.time, dt):      # --control(s) due before this step
                    control(name, value)
                chunk = min(args.record_every - since_row, steps - done)
                upcoming = schedule.next_time()
                if upcoming is not None:        # the steps before the one starting at or after it
                    chunk = min(chunk, max(1, math.ceil((upcoming - sim.time) / dt - 1e-9)))
                if start is not None and start.on:      # interpreted: one step at a time, timed
                    for _ in range(chunk):
                        advance(1)
                        done += 1
                        start.stepped(done)
                else:
                    advance(chunk)
                    done += chunk
                since_row += chunk
                interrupt = _swallowed()
                if interrupt is not None:       # a stop that something in the steps caught and went on from
                    raise interrupt
                if since_row == args.record_every:
                    since_row = 0
                    if recording is not None:
                        recording.record()
                progress.update(done)
            progress.update(done, force=True)
    except (DivergenceError, ContactBudgetError) as error:
        progress.end_line()
        print(f"error: {error}; no output written", file=sys.stderr)
        return 1
    finally:
        progress.end_line()
        if profiler is not None:
            profiler.stop()
    seconds = time.perf_counter() - progress.start
    summary = None
    # All or nothing: a write that fails or is interrupted (a signal may land just after a file's
    # rename) takes back every file this run put in place; a file found there before is left.
    outputs = [path for path, wanted in ((args.out, recording), (args.record, timeline), (args.profile, profiler))
               if path is not None and wanted is not None]
    found = {path: identity(path) for path in outputs}
    try:
        if recording is not None:
            with _stage(f"while writing {args.out}"):
                arrays = recording.arrays()
                summary = None if args.quiet else _summary(arrays, steps, seconds, args.record_every)
                write(args.out, arrays)
        if timeline is not None:
            with _stage(f"while writing {args.record}"):
                size = write_recording(args.record, timeline)
        if profiler is not None:
            with _stage(f"while writing {args.profile}"):
                profiler.write_trace(args.profile, first_step, {"scene": str(args.scene), "steps": steps,
                                                                "settings": _settings_text(sim.settings)})
    except BaseException:
        for path in outputs:
            if identity(path) not in (None, found[path]):
                Path(path).unlink(missing_ok=True)
        raise
    if not args.quiet:
        with _stage("after writing the output", expected=(BrokenPipeError,), written=True):
            if summary is not None:
                print(summary)
                print(f"wrote {arrays['time'].shape[0]} rows x {len(arrays['names'])} nodes to {args.out}")
            if profiler is not None:
                print(_profile_summary(profiler, steps, args.profile, sim.substep_counts()))
            if timeline is not None:
                print(f"wrote a recording of steps {timeline.origin}..{timeline.head} "
                      f"({len(timeline.keyframes)} keyframes, {size / 1e6:.3g} MB) to {args.record}")
    return 0


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning (shapes that start inside one another, say) as one line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


def _disk_full(error):
    """The OSError "no space left" (ENOSPC, or EDQUOT: over quota) behind `error`, if one is."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            return error
        seen.add(id(error))
        error = getattr(error, "error", None) or error.__cause__ or error.__context__
    return None


def _report(interrupt):
    """The one line of an interrupted command -> its exit code (128 + the signal's number)."""
    print(f"interrupted {interrupt.stage or 'before the run'}" + ("" if interrupt.written else "; no output written"),
          file=sys.stderr)
    return interrupt.code


def main(argv=None):
    """The command line -> exit code (see the module docstring). Prints no traceback: an
    unexpected exception becomes one line naming the stage it came from."""
    with raising_on_signals(Interrupted), warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            args = build_parser().parse_args(argv)
            return args.handler(args)
        except Interrupted as interrupt:
            return _report(interrupt)
        except Exception as error:
            interrupt = _interruption(error)
            if interrupt is None:
                return _failed(error)
            return _report(interrupt)


def _failed(error):
    """The one line of a command that failed with `error` -> its exit code (the module docstring)."""
    if isinstance(error, BrokenPipeError):
        # stdout closed early (`| head`): nothing left to say there, and nothing to flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    if isinstance(error, InternalError):
        full = _disk_full(error)
        if full is not None:     # the machine's state, not ours: said as such, exit 2 as for bad input
            where = f" ({full.filename})" if full.filename else ""
            print(f"error: {error.stage}: the disk is full{where}" + ("" if error.written else "; no output written"),
                  file=sys.stderr)
            return 2
        print(f"error: internal error {error}" + ("" if error.written else "; no output written"), file=sys.stderr)
        return 1
    if isinstance(error, (SceneError, ValueError)):
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"error: internal error: {type(error).__name__}: {error}; no output written", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
