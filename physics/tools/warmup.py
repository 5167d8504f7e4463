"""`python -m physics warmup`: compile every kernel ahead of need, on every core, with progress.

numba compiles a kernel the first time it is called with new argument types and caches the result
(physics.core.compiled). Paid inside a step, that compile freezes whoever called it: the app's window,
a test, a sweep's worker. The warm-up pays it up front instead: it runs every shipped scene under
every integrator and gyroscopic mode, with the settings that choose other code paths (rotation
updates, exponentials, counteraction, SHAKE, sleeping, sub-steps), and what the viewer offers on
top of a step (reparenting, impulses and forces, snapshots and hashes, the acceleration terms),
a few steps each. Each scene makes two tasks: NAME, what opening it and running it as its file says
needs, and NAME+, everything else above. They run in parallel worker processes (`--jobs`,
default: the cores), each compiling what it meets and writing it to the shared cache; a worker
that meets a kernel another has cached already loads it, and one that meets a kernel another is
compiling waits for it and then loads it (physics.core.compiled, 9): each kernel is compiled once.

When every task has passed, a stamp file named for the sources, numba and the CPU (`stamp_path`)
says the cache is warm (`is_warm`): `make test` (through `make warmup`) and the app check it and
run the warm-up only when it is missing. A task that fails is reported and the stamp is not written.
A warm-up that has passed also removes the cached kernels of source trees that are gone
(physics.core.compiled.prune_caches: a deleted clone's or worktree's folder).
The app also runs single tasks in its own process to load their kernels from the cache
(app.preparation).

Progress: a tqdm bar on a terminal, else one line per task (`--plain`), which the app reads
to show what it is preparing: ``task K/N NAME done S s``.
"""
import argparse
import ctypes
import ctypes.util
import hashlib
import os
import queue
import signal
import sys
import time
from contextlib import ExitStack
from multiprocessing import get_context
from pathlib import Path

# numpy, numba and the physics modules are imported inside the functions that use them: the viewer
# imports this module before its first frame (`is_warm`, `kernel_files`), and the warm-up's parent
# process, which only hands out tasks and counts files, never loads a kernel.

SCENES = Path(__file__).resolve().parents[2] / "assets" / "scenes"   # physics.io.scene.SHIPPED_SCENES (not imported: this module stays cheap to import)
STEPS = 3                   # steps per setting: enough to meet contacts, joints and the solver's stages
SLEEP_SECONDS = 3.0         # s a scene with sleeping on is stepped at most, until a body falls asleep
SPLIT_SECONDS = 2.0         # s a heap is stepped at most, until its contact rows split in halves
# Scenes whose size makes a step slow: one setting each (their kernels are the small scenes' ones).
LARGE = ("stress",)


def scene_names():
    """Every shipped scene, in file-name order."""
    return sorted(path.stem for path in SCENES.glob("*.toml"))


def _variants():
    """The setting changes each scene is stepped under: every integrator × gyroscopic mode, then
    the other settings that select other kernels or branches."""
    from physics.core.settings import EXPONENTIALS, GYROSCOPIC, ROTATION_UPDATES, integrator_names
    for integrator in integrator_names():
        for gyroscopic in GYROSCOPIC:
            yield {"integrator": integrator, "gyroscopic": gyroscopic}
    for update in ROTATION_UPDATES:
        for exponential in EXPONENTIALS:
            yield {"rotation_update": update, "exponential": exponential}
    yield {"counteract": False}
    yield {"shake": True}
    yield {"joint_solve": "soft"}
    yield {"sleep": True}
    yield {"warm_start": False, "relax": False, "sor": 1.3}
    yield {"substeps": 2}


def warm_scene(task):
    """Task NAME: open scene NAME and step it as its file says, with what the viewer reads every
    frame (`_queries`: energies, momenta, contacts, accelerations, snapshot and hash) and, with
    sleeping on, until a body sleeps and is woken. Task NAME+: step it under every variant
    (`_variants`), and drive what the viewer offers on top of a step: impulse and force,
    reparenting (to the world and back, keeping world or local state), the acceleration terms from
    a moving frame. Returns the seconds it took."""
    import numpy as np

    from physics.pipeline.simulation import Simulation
    start = time.perf_counter()
    name, everything = task.rstrip("+"), task.endswith("+")
    sim = Simulation.from_file(SCENES / f"{name}.toml")
    sim.step(STEPS)
    # the deep-overlap check's energy (`SceneSolver.solve`), which a scene reaches only where a body
    # sinks a centimetre into another: compiled here, never inside one of the app's frames
    from physics.constraints.solver import kinetic_energy
    kinetic_energy(np.zeros((1, 6)), np.ones(1), np.eye(3)[None].copy())
    # A heap's solver loads its two-thread stages (`physics.constraints.gauss_seidel._solve_stages_parallel`, a
    # cached parallel kernel: about a second to load) only once it has landed and splits its rows in
    # halves, and then on its second such solve: the thread choice tries one thread first
    # (physics.core.threads.ThreadChoice). On until they are loaded, so that the app never loads
    # them inside a frame.
    from physics.constraints.gauss_seidel import PARALLEL_MIN, load_split_masses, parallel_stages_loaded
    from physics.core.threads import cores
    if cores() > 1 and np.count_nonzero(sim.motion == "dynamic") * 6 >= PARALLEL_MIN:
        load_split_masses()     # (the effective masses of rows split in halves, which a settled heap reaches)
        for _ in range(int(SPLIT_SECONDS / sim.settings.dt)):
            if parallel_stages_loaded():
                break
            sim.step(1)
    snapshot = sim.snapshot()
    sim.restore(snapshot)
    _queries(sim)
    if sim.settings.sleep:      # on until something sleeps, a few steps asleep (the sleeping kernels), woken
        for _ in range(int(SLEEP_SECONDS / sim.settings.dt)):
            sim.step(1)
            if np.any(sim.sleeping()):
                break
        sim.step(STEPS)
        sim.wake()
        sim.step(1)
        sim.restore(snapshot)
    if not everything:
        return time.perf_counter() - start
    variants = list(_variants())[:1] if name in LARGE else _variants()
    for change in variants:
        sim.restore(snapshot)
        for key, value in change.items():
            sim.set(key, value)
        sim.step(STEPS)
    sim.restore(snapshot)
    dynamic = [i for i, motion in enumerate(sim.motion) if motion == "dynamic"]
    parented = [i for i in range(len(sim.names)) if sim.parent[i] >= 0]
    if dynamic:
        body = dynamic[-1]
        sim.apply_impulse(body, np.array([0.0, 0.1, 0.0]) * float(sim.mass[body]))
        sim.apply_force(body, np.array([0.0, 1.0, 0.0]))
        sim.step(1)
    if parented:
        node = parented[-1]
        frame = int(sim.parent[node])
        sim.acceleration_terms(node, frame=frame)
        for keep in ("world", "local"):
            try:
                sim.reparent(node, None, keep=keep)
                sim.step(1)
                sim.reparent(node, frame, keep=keep)
                sim.step(1)
            except ValueError:      # a node the scene cannot move (a joint's): the step is warm anyway
                pass
    return time.perf_counter() - start


def _queries(sim):
    """What the viewer reads of a simulation every frame or on demand (inspector, overlays, plots)."""
    sim.state_hash()
    sim.energy(), sim.momentum(), sim.body_energies(), sim.body_momenta(), sim.contacts(), sim.joint_separation()
    sim.world(), sim.world_poses(), sim.local(), sim.sleeping(), sim.solver_residual(), sim.first_non_finite()
    sim.inertial_accelerations(), sim.constraint_accelerations()
    sim.joint_coordinates()     # (the Joints section; a six-axis joint's coordinates are compiled)


def tasks(first=None):
    """The task names in the order they are handed out: `first` (the scene the app opens) and a
    joint scene (RATTLE, SHAKE: other kernels than the contact scenes', so the two workers start
    on different code), then `first`'s other settings, then every scene to open, then every
    scene's other settings. With no `first` (`make test`, `make warmup`), the two workers start
    on the two scenes that share the fewest kernels, the T-handle under every integrator (the body
    passes) and the pile (the contacts and their solver), which every other scene then loads from
    the cache (measured: 111 s for the whole warm-up here, against 128 s starting on the tank and
    the chain, which compile most of the same kernels side by side)."""
    names = scene_names()
    leading = [first] if first in names else []
    leading += [name for name in ("chain", "tank") if name in names]
    order = leading[:2] + [f"{name}+" for name in leading[:1]] + names + [f"{name}+" for name in names]
    if first is None:
        order = [name for name in ("t_handle+", "pile") if name.rstrip("+") in names] + order
    return list(dict.fromkeys(order))


def stamp_path():
    """The file that says the cache is warm for these sources, this numba and this CPU."""
    import numba
    from numba.core.registry import cpu_target

    from physics.core.compiled import cache_root, dependency_digest
    root = cache_root()
    if root is None:
        return None
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]     # physics/: every module of every subpackage
    modules = (".".join(("physics",) + path.relative_to(package).with_suffix("").parts) for path in package.rglob("*.py"))
    for module in sorted(name[:-len(".__init__")] if name.endswith(".__init__") else name for name in modules):
        digest.update(dependency_digest(module).encode())
    for path in sorted(SCENES.glob("*.toml")):
        digest.update(path.read_bytes())
    digest.update(repr((numba.__version__, sys.version_info[:2], cpu_target.target_context.codegen().magic_tuple()))
                  .encode())
    return root / f"warm-{digest.hexdigest()[:32]}"


def is_warm():
    """Whether `python -m physics warmup` has completed for these sources, numba and CPU."""
    path = stamp_path()
    return path is not None and path.exists()


class InterpretedStart:
    """A command's run on a cold cache: its kernels run as Python (physics.core.compiled.interpreting,
    the same bits), loading what the cache holds, for as long as the whole run, so interpreted, is
    projected to take at most `budget` seconds; past that it compiles, from the next call on.
    Compiling the tank's kernels costs about two minutes of CPU, stepping it interpreted about
    20-90 ms a step: `physics run tank --steps 1` answers in about 2 s, where it waited for the
    compiler. On a warm cache (`is_warm`) it does nothing. Use: `with InterpretedStart(steps) as
    start:`, and `start.stepped(done)` after each step; `start.on` says whether to step one at a
    time (so that the projection is made after the first step)."""

    def __init__(self, steps, budget=20.0):
        self.steps, self.budget, self._stack = steps, budget, ExitStack()
        self.on = bool(steps) and not is_warm()
        self.started = self._last = time.perf_counter()

    def __enter__(self):
        if self.on:
            from physics.core.compiled import interpreting
            self._stack.enter_context(interpreting(load_cached=True))
        return self

    def stepped(self, done):
        """After step `done` of `steps`: compile from now on if the rest, at the last step's pace
        (the first steps also pay for first calls), would take the run past `budget`."""
        if self.on:
            now = time.perf_counter()
            spent = now - self.started
            if spent > self.budget or (done >= 3 and spent + (now - self._last) * (self.steps - done) > self.budget):
                self.stop()
            self._last = now

    def stop(self):
        self.on = False
        self._stack.close()

    def __exit__(self, *exc):
        self.stop()
        return False


def die_with_parent():
    """Ask Linux to end this process when its parent ends, however the parent ends (a kill
    included): no warm-up worker outlives the command or the window that started it."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(1, signal.SIGTERM)       # PR_SET_PDEATHSIG


def _worker_start():
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl+C is the parent's to handle: it ends the pool


def _task(task):
    """Task (name, ahead): in a worker, at BACKGROUND_NICE from now on if it is compiled `ahead` of
    need; -> (name, seconds, None) or (name, None, its error in one line)."""
    name, ahead = task
    if ahead:
        _nice_to(os.getpid(), BACKGROUND_NICE)
    try:
        return name, warm_scene(name), None
    except Exception as error:  # noqa: BLE001 - reported, and the stamp is not written
        return name, None, f"{type(error).__name__}: {error}"


# The compiled-kernel files (numba's .nbc, one per kernel version) a first start writes into an
# empty cache, measured from a fresh clone: 162 by the whole warm-up (its stamp says how many it
# wrote) and 5 of the viewer's own. What a first start's progress counts towards (app.preparation).
KERNEL_FILES = 167


def kernel_files(since=0.0, root=None):
    """How many compiled-kernel files the cache (`root`, by default the kernels' cache_root) holds
    that were written at or after `since` (a time.time()): a warm-up's progress, kernel by kernel,
    across its workers."""
    if root is None:
        from physics.core.compiled import cache_root
        root = cache_root()
    count = 0
    for path in (root.rglob("*.nbc") if root is not None else ()):
        try:
            count += path.stat().st_mtime >= since
        except OSError:         # replaced or removed as we looked: counted when seen whole
            pass
    return count


BACKGROUND_NICE = 10    # the niceness of the compiling ahead of need, once what the user waits on is done


def _nice_to(pid, niceness):
    """Process `pid` at least this nice. (Raising a niceness needs no privilege; lowering it back
    would, so a worker once niced stays so.)"""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, max(os.getpriority(os.PRIO_PROCESS, pid), niceness))
    except (OSError, AttributeError):     # a worker gone, or no priorities on this platform
        pass


def yield_cores(pool):
    """This process and its pool's workers at BACKGROUND_NICE: what is left is compiling ahead of
    need, and the window's frames come first."""
    for pid in [os.getpid()] + [worker.pid for worker in getattr(pool, "_pool", ())]:
        _nice_to(pid, BACKGROUND_NICE)


def run(jobs=None, first=None, plain=False, out=sys.stdout, background_after_first=False):
    """Run every task on `jobs` worker processes; returns the failures as {task: message}. An
    interruption (Ctrl+C, SIGTERM) ends the workers at once; what they cached stays cached.
    `background_after_first`: the app's warm-up. `first` and its other settings (`first`+, what the
    user waits on: the scene shown, its toggles) compile one after the other at normal priority in
    a process of their own; the `jobs` workers take every other task, each worker at
    BACKGROUND_NICE from its first task on (a niceness raised cannot be lowered back, so what the
    user waits on never goes to them), and once `first`'s are done the whole warm-up yields
    (`yield_cores`), said in one line."""
    names = tasks(first)
    waited_on = [name for name in names if name in {first, f"{first}+"}] if background_after_first else []
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    failures = {}
    start, written_since = time.perf_counter(), time.time() - 1.0      # a file system's times may lag a second
    bar = None
    if not plain:
        from tqdm import tqdm
        bar = tqdm(total=len(names), desc="compiling kernels", unit="task", file=out)
    # spawn: a fresh interpreter per worker, nothing inherited from this process's numba state
    context = get_context("spawn")
    pool = context.Pool(jobs, initializer=_worker_start)
    lead = context.Pool(1, initializer=_worker_start) if waited_on else None
    if background_after_first and not waited_on:
        yield_cores(pool)
    results = queue.SimpleQueue()
    try:
        def failed(name):       # what `_task` could not catch (its worker lost) still ends the task
            return lambda error: results.put((name, None, f"{type(error).__name__}: {error}"))
        for name in waited_on:      # in order, on the one lead worker: first, then first+
            lead.apply_async(_task, ((name, False),), callback=results.put, error_callback=failed(name))
        for name in names:
            if name not in waited_on:
                pool.apply_async(_task, ((name, bool(waited_on)),), callback=results.put, error_callback=failed(name))
        left = set(waited_on)
        for done in range(1, len(names) + 1):
            name, seconds, error = results.get()
            if error is None:
                line = f"task {done}/{len(names)} {name} done {seconds:.1f} s"
            else:
                failures[name] = error
                line = f"task {done}/{len(names)} {name} failed: {error}"
            if bar is not None:
                bar.set_postfix_str(name)
                bar.update(1)
                if error is not None:
                    bar.write(line)
            else:
                print(line, file=out, flush=True)
            if name in left:
                left.discard(name)
                if not left:
                    yield_cores(pool)
                    print(f"what {first} needs is compiled: the rest compiles at nice {BACKGROUND_NICE}", file=out,
                          flush=True)
        pool.close()
    finally:
        for workers in (pool, lead):
            if workers is not None:
                workers.terminate()
                workers.join()
        if bar is not None:
            bar.close()
    total = time.perf_counter() - start
    if not failures:
        path = stamp_path()
        if path is not None:
            path.write_text(f"{len(names)} tasks in {total:.1f} s, {kernel_files(written_since)} kernel files written\n")
        from physics.core.compiled import prune_caches
        for removed in prune_caches():
            print(f"removed {removed}: cached kernels no source tree here reads any more", file=out, flush=True)
    print(f"warm-up {'done' if not failures else 'FAILED'}: {len(names) - len(failures)} of {len(names)} tasks "
          f"in {total:.1f} s on {jobs} process{'es' if jobs > 1 else ''}", file=out, flush=True)
    return failures


def add_parser(commands):
    parser = commands.add_parser("warmup", help="compile every kernel ahead of need (both cores, with progress)",
                                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: the cores)")
    parser.add_argument("--first", default=None, help="the scene to prepare first")
    parser.add_argument("--plain", action="store_true", help="one line per task instead of a progress bar")
    parser.add_argument("--if-needed", action="store_true", help="do nothing when the cache is already warm")
    parser.add_argument("--background-after-first", action="store_true",
                        help=f"compile --first's tasks at normal priority, the rest at nice {BACKGROUND_NICE} (the app's)")
    parser.set_defaults(handler=command)
    return parser


def command(args):
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs: expected a positive count, got {args.jobs}")
    if args.if_needed and is_warm():
        print("warm-up: the kernel cache is already warm")
        return 0
    failures = run(jobs=args.jobs, first=args.first, plain=args.plain or not sys.stdout.isatty(),
                   background_after_first=args.background_after_first)
    return 1 if failures else 0
