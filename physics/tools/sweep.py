"""Parameter sweeps: `python -m physics sweep SCENE --vary KEY=V1,V2,... (--duration S | --steps N) --out DIR`.

Every combination of the varied `[world]` settings (the cartesian product) is one run of SCENE from
its initial state. The runs go to a Dask cluster: a local one of `--workers` processes by default, or
the cluster whose scheduler `--scheduler tcp://HOST:PORT` names. One code path serves both, so a
run's arithmetic is the same wherever it ran and its final `state_hash` says so bit for bit.

Per run, sampled after every step (E the total energy, L the world angular momentum about the
origin, both of the dynamic bodies):

    energy_drift           = max_k |E_k - E_0| / |E_0|
    angular_momentum_drift = max_k |L_k - L_0| / |L_0|
    position_error         = max_i |x_i - x_i^ref|  (m, world translations of every node at the end;
                              ref = the run with the smallest dt and otherwise equal settings)

A drift is left empty when its start value is zero (no relative figure). `DIR/sweep.csv` holds one
row per finished run, in the order of the product, and is rewritten atomically as runs finish, so
an interrupted sweep keeps the rows it has. A run that raises (a divergence, say) gets its message
in the `error` column and empty metrics; the other runs go on. A run whose worker died (a crash,
the OOM killer) goes again on the workers left, up to RETRIES times, and then its row says
"worker died while running case k". When dt is varied, `DIR/<metric>.png`
plots each metric against dt, log-log, one line per combination of the other varied settings, with
the observed order in the legend (`observed_order`: the log-log slope of a drift; for the position
error, the order of |h^p - h_ref^p|, since the reference run has an error of its own).

A sweep takes at most RUNS_MAX (10^4) runs: a larger product is refused before a run is listed
(eleven --vary options of a few values each made 1,179,648 runs and 2 GB before the first ran).

Exit codes: 0 every run finished, 1 some run failed, 2 bad input (checked, --out included, before
any cluster starts: physics.tools.options; a product past RUNS_MAX too), 130 / 143 stopped by SIGINT (Ctrl+C) / SIGTERM at any moment,
the cluster's start included, the rows done kept.
"""
import argparse
import asyncio
import csv
import io
import itertools
import logging
import math
import os
import signal
import sys
import textwrap
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from physics.core.choices import ORDER_NOTE

ORDER_FOOTNOTE = ("with gyroscopic = implicit every integrator but lie-midpoint(-4) is first order in rotation; "
                  "explicit gives rk4 its 4th (docs/fidelity.md)")
from physics.tools import options
from physics.tools.compare import split_pairs, setting_value
from physics.io.scene import SceneError, load_scene
from physics.core.settings import SettingError
from physics.tools.signals import raising_on_signals

METRICS = ("energy_drift", "angular_momentum_drift", "position_error")
COLUMNS = METRICS + ("steps", "wall_s", "state_hash", "error")
# A case whose worker died goes again this many times on the workers left (`execute`).
RETRIES = 2
WORKER_WAIT = 30.0      # s a retry waits for a worker when none is left (`_workers_left`)
RUNS_MAX = 10_000     # runs a sweep takes at most: its grid, rows and futures are held in memory
# Below this a drift or error is round-off (~5000 ulp of a unit value): it has no order, and the
# fit leaves it out.
ROUND_OFF = 1e-12

class SweepError(ValueError):
    """Bad sweep input; the message names the option (or file), the key and the value."""


def add_parser(commands):
    """The `sweep` subcommand on an argparse subparsers object; its handler is `main_args`."""
    sweep = commands.add_parser(
        "sweep", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run a scene over every combination of settings; drift, error and order per run",
        description="Run SCENE once per combination of the --vary values (the cartesian product), on local "
                    "worker processes or a Dask cluster, and write DIR/sweep.csv and, when dt is varied, plots "
                    "of each drift and error against dt with the observed order.",
        epilog="columns: one per varied key, then energy_drift (max |E - E0| / |E0|), angular_momentum_drift\n"
               "(max |L - L0| / |L0|, world L), position_error (m, largest world-translation distance at the end\n"
               "to the run with the smallest dt and otherwise equal settings), steps, wall_s, state_hash, error.\n\n"
               + textwrap.fill(ORDER_NOTE, 100) + "\n\n"
               "example:\n  python -m physics sweep t_handle --vary integrator=rk4,lie-midpoint-4 \\\n"
               "      --vary dt=1/60,1/120,1/240 --duration 2 --out out/sweep")
    sweep.add_argument("scene", metavar="SCENE", help="a scene file, a robot model (.urdf, MJCF .xml), or a name from assets/scenes/")
    sweep.add_argument("--vary", action="append", required=True, metavar="KEY=V1,V2,...",
                       help="a [world] key and its values (dt may be a fraction: 1/120; vectors in brackets); repeat for more keys")
    length = sweep.add_mutually_exclusive_group(required=True)
    length.add_argument("--duration", type=float, metavar="S", help="simulated seconds per run (rounded to whole steps of its dt)")
    length.add_argument("--steps", type=int, metavar="N",
                        help="steps per run (with dt varied the runs then end at different times, and position_error compares those ends: prefer --duration)")
    sweep.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing; its parent must exist)")
    where = sweep.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N", help=f"local worker processes (default: the cores, {_cores()})")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster of this scheduler, tcp://HOST:PORT")
    options.add_control_arguments(sweep)        # every run takes the same inputs at the same times
    sweep.set_defaults(handler=main_args)
    return sweep


def _cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# ---------------------------------------------------------------------------------------- input
def parse_vary(texts, settings):
    """['dt=1/60,1/120', 'integrator=rk4'] -> {'dt': [1/60, 1/120], 'integrator': ['rk4']}, each value
    typed as `physics compare` types one (fractions, on/off, [x,y,z]) and checked by `settings` (a
    Settings, left unchanged). SweepError names the option, key and value."""
    varied = {}
    for text in texts:
        key, sep, values = text.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise SweepError(f"--vary: got {text!r}; expected KEY=V1,V2,... (a [world] key and its values)")
        if key in varied:
            raise SweepError(f"--vary: key {key!r} given twice; give all its values in one --vary")
        parsed = []
        for item in (item.strip() for item in split_pairs(values)):
            try:
                value = setting_value(key, item)
                settings.copy().set(key, value)
            except SettingError as error:
                raise SweepError(f"--vary {key}: value {item!r}: {error.reason}") from None
            if any(_same(value, other) for other in parsed):
                raise SweepError(f"--vary {key}: value {item!r} given twice")
            parsed.append(value)
            if len(parsed) > RUNS_MAX:
                raise SweepError(f"--vary {key}: more than {RUNS_MAX} values; a sweep takes at most {RUNS_MAX} runs")
        varied[key] = parsed
    return varied


def _same(a, b):
    return bool(np.all(np.asarray(a) == np.asarray(b))) if type(a) is type(b) else False


def runs(varied):
    """The cartesian product of the varied values: one {key: value} dict per run, last key fastest;
    SweepError, before a run is listed, past RUNS_MAX runs."""
    count = math.prod(len(values) for values in varied.values())
    if count > RUNS_MAX:
        sizes = " x ".join(f"{len(values)} {key}" for key, values in varied.items())
        raise SweepError(f"--vary: {sizes} make {count} runs; a sweep takes at most {RUNS_MAX} (vary fewer values, "
                         "or split the sweep)")
    return [dict(zip(varied, combination)) for combination in itertools.product(*varied.values())]


def step_count(settings, steps, duration):
    """Steps of one run: `steps`, or `duration` in whole steps of its dt (physics.tools.options, the
    checks every command shares)."""
    try:
        return options.step_count(SimpleNamespace(steps=steps, duration=duration), settings.dt)
    except ValueError as error:
        raise SweepError(str(error)) from None


# ---------------------------------------------------------------------------------------- one run
def simulate(scene, values, steps, controls=()):
    """One run (this executes on a worker): SCENE with `values` set, `steps` steps from its initial
    state, its actuators set by `controls` [(time, actuator, value)] (`physics.tools.options.Controls`). -> dict of energy_drift, angular_momentum_drift (None for a zero start value), steps,
    wall_s, state_hash and translation (N, 3), world frame, at the end. A run that diverges raises
    the simulation's DivergenceError (node, step, quantity)."""
    from physics.pipeline.simulation import Simulation  # here, not at the top: the parser loads no kernel

    sim = Simulation(scene)
    for key, value in values.items():
        sim.set(key, value)
    with np.errstate(all="ignore"):   # a divergence is reported once, by the simulation's error
        start = time.perf_counter()
        e0, l0 = _energy(sim), sim.momentum()["angular"]
        energy_change = momentum_change = 0.0
        schedule, dt = options.Controls(controls), sim.settings.dt
        for _ in range(steps):
            for name, value in schedule.due(sim.time, dt):
                sim.set_control(name, value)
            sim.step(1)
            energy_change = max(energy_change, abs(_energy(sim) - e0))
            momentum_change = max(momentum_change, float(np.linalg.norm(sim.momentum()["angular"] - l0)))
        wall = time.perf_counter() - start
    l0_norm = float(np.linalg.norm(l0))
    return {"energy_drift": energy_change / abs(e0) if e0 != 0 else None,
            "angular_momentum_drift": momentum_change / l0_norm if l0_norm != 0 else None,
            "steps": steps, "wall_s": wall, "state_hash": sim.state_hash(),
            "translation": sim.world_poses()[0]}


def _run(scene, values, steps, controls=()):
    """`simulate` as a task: its failure comes back as the row's error (a raised one would also
    be logged by the worker, as a failed task)."""
    try:
        return simulate(scene, values, steps, controls)
    except Exception as error:
        return {"steps": steps, "error": _error(error)}


def _error(error):
    return f"{type(error).__name__}: {error}"


def _energy(sim):
    from physics.pipeline.stages import energy_balance     # (here: the command line starts without numba)
    return energy_balance(sim.energy())


def warm_up(scene, plan):
    """Compile (or load) every numba kernel the runs need, here, before any worker starts: workers
    compiling the same kernels at once race on one cache. One step per combination of the non-numeric
    settings (integrator, gyroscopic, on/off switches) reaches every kernel; numbers select none."""
    seen = set()
    for values in plan:
        kind = tuple((k, v) for k, v in values.items() if isinstance(v, (str, bool)))
        if kind not in seen:
            seen.add(kind)
            try:
                simulate(scene, values, 1)
            except Exception:
                pass   # the run fails again on its worker, and its row says why


# ---------------------------------------------------------------------------------------- results
def position_errors(plan, results):
    """{run index: position_error} for every finished run whose reference (the run with the smallest
    dt and otherwise equal settings) has finished: the largest distance between a node's world
    translation at the end and the reference's; 0 for the reference itself."""
    groups = {}
    for i, values in enumerate(plan):
        groups.setdefault(tuple((k, repr(v)) for k, v in values.items() if k != "dt"), []).append(i)
    errors = {}
    for members in groups.values():
        reference = min(members, key=lambda i: plan[i].get("dt", 0.0))
        if "translation" not in results.get(reference, {}):
            continue
        for i in members:
            if "translation" in results.get(i, {}):
                distance = np.linalg.norm(results[i]["translation"] - results[reference]["translation"], axis=1)
                errors[i] = float(distance.max(initial=0.0))
    return errors


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value)


def write_csv(path, plan, results):
    """sweep.csv: the finished runs' rows in plan order, written atomically (temp file, os.replace)."""
    keys = list(plan[0]) if plan else []
    errors = position_errors(plan, results)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(keys + list(COLUMNS))
    for i, values in enumerate(plan):
        if i in results:
            row = dict(results[i], position_error=errors.get(i))
            writer.writerow([_cell(values[k]) for k in keys] + [_cell(row.get(c)) for c in COLUMNS])
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # open() keeps the umask; mkstemp would not
    try:
        temp.write_text(text.getvalue())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def observed_order(dt, values, reference_dt=0.0):
    """The order p of a metric e(h) ~ C |h^p - h_ref^p| over the points above ROUND_OFF (h_ref = 0 for
    a drift; for the position error, the reference run's dt: its error is measured against a run
    that has an error of its own, which the plain log-log slope would mistake for a lower order).
    Least squares in log e over p (a grid of 0.01) and log C; for h_ref = 0 it is the log-log slope.
    None with fewer than two such points (all at round-off: no order to see)."""
    points = [(h, v) for h, v in zip(dt, values) if v is not None and v > ROUND_OFF and h > reference_dt]
    if len({h for h, _ in points}) < 2:
        return None
    h, y = np.array([p[0] for p in points]), np.log([p[1] for p in points])
    orders = np.arange(0.01, 10.0, 0.01)[:, None]
    model = np.log(h ** orders - reference_dt ** orders)       # (orders, points)
    residual = y - model
    spread = ((residual - residual.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return float(orders[np.argmin(spread), 0])


def plot(out, plan, results, scene_title):
    """DIR/<metric>.png for each metric against dt (log-log), one line per combination of the other
    varied settings, colour by the first of them, line style by the rest, the observed order in
    the legend. -> the files written."""
    from matplotlib.figure import Figure   # no pyplot: no global state, no display needed

    errors = position_errors(plan, results)
    others = [k for k in plan[0] if k != "dt"]
    lines = {}   # (values of the other keys) -> run indices
    for i, values in enumerate(plan):
        lines.setdefault(tuple(_cell(values[k]) for k in others), []).append(i)
    firsts = list(dict.fromkeys(line[:1] for line in lines))
    rests = list(dict.fromkeys(line[1:] for line in lines))
    colours = [f"C{i}" for i in range(10)] + ["black", "grey", "olive", "teal"]
    styles = ["-", "--", ":", "-."]
    labels = {"energy_drift": "max |E - E0| / |E0|", "angular_momentum_drift": "max |L - L0| / |L0|",
              "position_error": "position error (m)"}
    written = []
    for metric in METRICS:
        figure = Figure(figsize=(7.5, 4.2), dpi=100)
        axes = figure.add_subplot()
        for line, members in lines.items():
            reference_dt = min(plan[i]["dt"] for i in members) if metric == "position_error" else 0.0
            done = sorted((plan[i]["dt"], errors.get(i) if metric == "position_error" else results[i][metric])
                          for i in members if "state_hash" in results.get(i, {}))
            shown = [(h, v) for h, v in done if v]      # zero (the reference run) has no logarithm
            if not shown:
                continue
            order = observed_order([h for h, _ in done], [v for _, v in done], reference_dt)
            if order is not None:
                note = f"order {order:.1f}"
            else:
                note = "round-off" if all(v <= ROUND_OFF for _, v in shown) else "too few runs for an order"
            axes.loglog(*zip(*shown), styles[rests.index(line[1:]) % len(styles)], marker="o", markersize=3,
                        color=colours[firsts.index(line[:1]) % len(colours)], label=f"{', '.join(line) or scene_title}: {note}")
        steps = sorted({values["dt"] for values in plan})
        axes.set_xticks(steps, [_fraction(h) for h in steps], minor=False)
        axes.set_xticks([], minor=True)
        axes.set_xlabel("dt (s)")
        axes.set_ylabel(labels[metric])
        axes.set_title(f"{scene_title}: {metric.replace('_', ' ')}", fontsize=10)
        axes.grid(True, which="major", alpha=0.3)
        if axes.lines:
            axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        # an observed order below the integrator's is most often the gyroscopic mode's: said on the plot
        figure.text(0.01, 0.01, ORDER_FOOTNOTE, fontsize=6, color="dimgrey")
        figure.tight_layout(rect=(0, 0.04, 1, 1))
        path = out / f"{metric}.png"
        figure.savefig(path)
        written.append(path)
    return written


def _fraction(h):
    """1/120 for 0.008333..., else the number: how a dt reads best on an axis."""
    inverse = 1.0 / h
    return f"1/{round(inverse)}" if abs(inverse - round(inverse)) < 1e-6 * inverse else f"{h:.3g}"


def _label(values):
    return ", ".join(_cell(v) for v in values)


# ---------------------------------------------------------------------------------------- running
class Progress:
    """Runs done and the time left (the mean pace so far), one line on stderr, redrawn in place."""

    def __init__(self, total):
        self.total, self.start = total, time.perf_counter()

    drawn = False       # a bar is on screen and its line not ended (a message after it needs a new line)

    def update(self, done, failed):
        Progress.drawn = done != self.total
        elapsed = time.perf_counter() - self.start
        left = elapsed / done * (self.total - done) if done else float("nan")
        bar = "#" * (30 * done // max(self.total, 1))
        eta = "--:--" if math.isnan(left) else f"{int(left) // 60:02d}:{int(left) % 60:02d}"
        failures = f", {failed} failed" if failed else ""
        sys.stderr.write(f"\r[{bar:<30}] {done}/{self.total} runs{failures}  {eta} left ")
        if done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _connect(stack, address):
    """A distributed.Client on the cluster whose scheduler is at `address` (closed with `stack`;
    the cluster stays up)."""
    from distributed import Client     # here: a second to import, and only a sweep that runs needs it
    try:
        return stack.enter_context(Client(address, timeout="10s"))
    except (OSError, ValueError, TypeError) as error:
        raise SweepError(f"--scheduler: cannot reach {address!r} ({error})") from None


class _SchedulerGone(logging.Filter):
    """Drops a worker's "Failed to communicate with scheduler during heartbeat" (logged with its
    traceback): the sweep's process closes the scheduler when it stops (Ctrl+C), and a worker whose
    heartbeat was under way then printed a CommClosedError traceback before closing itself."""

    def filter(self, record):
        return not record.getMessage().startswith("Failed to communicate with scheduler during heartbeat")


def dask_setup(worker):
    """Run in each local worker process as it starts (`_local_cluster`'s preload, on the worker's
    main thread): Ctrl+C reaches the whole process group, and a worker that took it printed a
    KeyboardInterrupt traceback from its event loop (the signal mask of `_local_cluster` does not
    reach a worker started by spawn); the sweep's own process stops the sweep and closes them,
    which the worker's heartbeat may see first (`_SchedulerGone`)."""
    logging.getLogger("distributed.worker").addFilter(_SchedulerGone())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _local_cluster(stack, workers):
    """A distributed.Client on a local cluster of `workers` single-threaded processes (closed
    with `stack`)."""
    from distributed import Client, LocalCluster       # (a second to import: only a sweep that runs)
    # A terminal's Ctrl+C signals the whole process group, so that this process alone stops the
    # sweep and closes the workers quietly: they ignore SIGINT from their start (`dask_setup`), and
    # while they start it is blocked in this thread, whose mask the threads that start them
    # inherit. A Ctrl+C meanwhile is kept, not dropped: pending while blocked, or
    # noted by a handler where another thread takes it, and the sweep stops (Stopped) once the
    # cluster is up, to close it as it would any time later.
    noted = []
    previous = signal.getsignal(signal.SIGINT)
    main = threading.current_thread() is threading.main_thread()
    if main and previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        # The scheduler serves HTTP even without a dashboard, on port 8787 unless told otherwise: a
        # second sweep running meanwhile found it taken and printed three lines of warning. A free
        # port on the loopback instead (the dashboard, where bokeh is installed, is there too).
        cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                   dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
                                                   preload=[__name__]))
    finally:
        if main and previous is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)     # a pending Ctrl+C is raised here
    if noted:
        raise Stopped(noted[0])
    return stack.enter_context(Client(cluster))


def execute(client, scene, plan, steps, csv_path, task=None, controls=()):
    """Run the plan on `client`'s cluster, rewriting sweep.csv as runs finish. -> {run index: result}.

    `task` (default `_run`) runs one case on a worker. A case whose worker died (the scheduler gives
    up on it: KilledWorker, or its future is lost: cancelled, "already forgotten") goes again, up to
    RETRIES times, on the workers left, with the scene sent anew (the scattered copy may have died
    with the worker); past that its row says "worker died while running case k". Dask's own
    `retries=` takes a task that raised through again."""
    from distributed import as_completed       # (a second to import: only a sweep that runs)

    task = _run if task is None else task
    results, attempts = {}, [0] * len(plan)
    write_csv(csv_path, plan, results)
    progress = Progress(len(plan))
    progress.update(0, 0)
    shared = client.scatter(scene, broadcast=True)
    extra = (controls,) if controls else ()     # the runs' actuator inputs (`simulate`), only when given
    submit = lambda data, i: client.submit(task, data, plan[i], steps[i], *extra, pure=False, retries=RETRIES)
    futures = {submit(shared, i): i for i in range(len(plan))}
    try:
        pending = as_completed(futures)
        for future in pending:
            i = futures.pop(future)
            try:
                results[i] = future.result()
            except (Exception, asyncio.CancelledError) as error:   # not the run's failure (`_run` keeps those): its worker's
                if attempts[i] < RETRIES and _workers_left(client):
                    attempts[i] += 1
                    again = submit(scene, i)
                    futures[again] = i
                    pending.add(again)
                    continue
                case = ", ".join(f"{key}={_cell(value)}" for key, value in plan[i].items())
                results[i] = {"steps": steps[i], "error": f"worker died while running case {i + 1} ({case}; tried "
                                                          f"{attempts[i] + 1} times): {type(error).__name__}"}
            write_csv(csv_path, plan, results)
            progress.update(len(results), sum("error" in r for r in results.values()))
    except BaseException:
        logging.getLogger("distributed").setLevel(logging.CRITICAL + 1)   # shutdown chatter, critical included
        client.cancel(list(futures))
        raise
    return results


def _workers_left(client, timeout=WORKER_WAIT):
    """Whether the cluster has a worker, or gets one within `timeout` seconds (a local cluster's
    nanny restarts a worker that died)."""
    try:
        client.wait_for_workers(1, timeout=timeout)
        return True
    except Exception:   # distributed's TimeoutError, or a closed client
        return False


def _quiet_dask():
    """Dask's own log lines (worker starts, closing connections) are not the user's business."""
    for name in ("distributed", "dask", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.ERROR)


def sweep(args):
    """The subcommand: -> exit code. Every input is checked (and a --scheduler reached) before
    anything is written."""
    try:
        options.check(args)
        out = options.check_output_directory("--out", args.out)
    except SweepError:
        raise
    except ValueError as error:
        raise SweepError(str(error)) from None
    scene = load_scene(_scene_path(args.scene))
    controls = ()
    if getattr(args, "control", None) or getattr(args, "controls", None):
        from physics.pipeline.simulation import Simulation  # here, not at the top: the parser loads no kernel
        try:
            controls = tuple(options.controls(args, Simulation(scene)).entries)
        except ValueError as error:
            raise SweepError(str(error)) from None
    varied = parse_vary(args.vary, scene.settings())
    plan = runs(varied)
    steps = []
    for values in plan:
        settings = scene.settings()
        settings.update(values)
        steps.append(step_count(settings, args.steps, args.duration))
    workers = _cores() if args.workers is None else args.workers
    _quiet_dask()
    with ExitStack() as stack:
        client = _connect(stack, args.scheduler) if args.scheduler is not None else None
        warm_up(scene, plan)              # before local workers start; before any run on a cluster
        client = client or _local_cluster(stack, workers)
        out.mkdir(exist_ok=True)
        results = execute(client, scene, plan, steps, out / "sweep.csv", controls=controls)
    failed = [i for i, r in results.items() if "error" in r]
    print(f"{len(plan)} runs, {len(plan) - len(failed)} finished, {len(failed)} failed: {out / 'sweep.csv'}")
    for i in failed:
        print(f"run {_label(plan[i].values())}: {results[i]['error']}", file=sys.stderr)
    if "dt" in varied and len(varied["dt"]) > 1:
        for path in plot(out, plan, results, scene.title):
            print(f"plot: {path}")
    return 1 if failed else 0


def _scene_path(text):
    """A scene file, or a name from assets/scenes/ (`t_handle`)."""
    path = Path(text)
    if path.exists() or path.suffix:
        return path
    shipped = Path(__file__).resolve().parents[2] / "assets" / "scenes" / f"{text}.toml"
    return shipped if shipped.exists() else path


class Stopped(BaseException):
    """SIGINT (Ctrl+C) or SIGTERM during a sweep; `code` is the shell's 128 + signal number. A
    BaseException, as KeyboardInterrupt: no `except Exception` swallows it."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.code = 128 + signum


def main_args(args):
    """Run the parsed `sweep` arguments (in the main thread: it sets signal handlers) -> exit code.
    Bad input exits 2 with one message; Ctrl+C or SIGTERM exits 130 or 143, keeping the rows
    written so far."""
    try:
        with raising_on_signals(Stopped):
            return sweep(args)
    except (SceneError, SweepError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Stopped as stop:
        path = Path(args.out) / "sweep.csv"
        print(("\n" if Progress.drawn else "") + f"interrupted ({stop}): "
              + (f"the finished runs are in {path}" if path.exists() else "no run had started"), file=sys.stderr)
        return stop.code
