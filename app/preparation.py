"""Kernels prepared beside the window, so that no frame waits for a compiler or a cache.

A scene's numba kernels must be compiled once per machine (physics.tools.warmup) and then loaded from
the cache into each process that runs them. Done inside a frame, the compile froze the window
for minutes on the first start, and even the load takes seconds on a busy machine. So:

- **compiling** happens in a child process, `python -m physics warmup` (every core), when the
  cache is not warm; its progress lines (``task K/N NAME done``) say which tasks are in the cache.
  What the user waits on, the first scene and its settings, compiles at normal priority, and the
  rest niced (``--background-after-first``); the first scene is timed as Python (`probe`) before
  the child starts, so that the two do not compete;
- **loading** happens on a thread of this process, which runs a warm-up task here
  (`physics.tools.warmup.warm_scene`) once it is compiled: stepping a throwaway copy of the scene loads
  every kernel the scene needs into this process's dispatchers, from the cache.

While the child compiles, the window's own thread runs every kernel not yet loaded as Python
(physics.core.compiled.interpreting: the same bits), so a scene such as the tank moves at once, slower
than real time, and speeds up as this thread loads its kernels (`allow_compile`: this thread alone
compiles or loads). Which scenes may run so is measured, not guessed (`probe`): a child process
times a few of its steps as Python in CPU time (as Python, a step of the tank takes about 25 ms, of the
chain 0.12 s, of the pyramid 0.2 s after a first of 1.6 s), and a scene whose steps would hold a frame
waits for its compiled kernels instead.

The viewer asks for tasks (`want`): a scene's NAME before it opens it, NAME+ (its other settings,
ghosts, reparenting) right after, and for the scene itself (`build`): the thread loads its file
into a fresh `Simulation` too (parsing and checking a 1,000-body scene takes a third of a second).
The viewer opens the scene with that simulation (`take`), or applies a change, when its task is
`ready`. Meanwhile it keeps drawing and says what it waits for. The child ends with the window
(what it compiled stays cached).
"""
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback

from app import meshes
from physics.core.compiled import allow_compile
from physics.tools.warmup import BACKGROUND_NICE, KERNEL_FILES, SCENES, die_with_parent, kernel_files, warm_scene

_LINE = re.compile(r"task (\d+)/(\d+) (\S+) (done|failed)")
# A scene runs as Python while its kernels compile only if, so, its first step takes at most
# PROBE_FIRST s and the next ones PROBE_STEP s each (a frame then stays near a quarter second).
# The probe's child takes 2-3 s of wall time for the tank on an idle 2-core machine, most of it
# imports; PROBE_TIMEOUT (wall) leaves room for a machine busy with other work.
PROBE_FIRST, PROBE_STEP, PROBE_TIMEOUT = 0.3, 0.12, 20.0
# Timed in the child's CPU time, not the wall's: the window's first frames (llvmpipe renders on
# the same cores) and its warm-up start beside the probe, and on a loaded 2-core machine they
# doubled the tank's wall time per step past PROBE_STEP, so it waited minutes for its kernels.
_PROBE = r"""
import json, sys, time
from physics.pipeline.simulation import Simulation
sim = Simulation.from_file(sys.argv[1])
start = time.process_time(); sim.step(1); first = time.process_time(); sim.step(3)
print(json.dumps([first - start, (time.process_time() - first) / 3]))
"""


class Preparation:
    """The warm-up child (when `compile`) and the loading thread, and what they have done."""

    def __init__(self, compile, first=None):
        self.started = time.perf_counter()
        self.compiled, self.loaded, self.failed = set(), set(), {}
        self.total, self.lines, self.returncode, self.child = None, [], None, None
        self._compile, self._closed = compile, False
        self._since, self._kernel_count = time.time() - 1.0, 0       # `_count_kernels`
        self.loading = None                 # the task the thread loads now
        self._probes = {}                   # path -> None (being timed), else whether it may run as Python
        self._jobs = []                     # ("load", task) and ("build", scene), in the order asked
        self._built = {}                    # scene -> the Simulation `build` made (None: it failed)
        self._condition = threading.Condition()
        if compile:
            threading.Thread(target=self._run_child, args=(first,), name="warm-up", daemon=True).start()
        threading.Thread(target=self._load, name="kernel loader", daemon=True).start()

    # --- the child and its progress ----------------------------------------------------------
    def _run_child(self, first):
        """Time the first scene as Python (`probe`), then start the warm-up child and read its lines.
        The probe comes first because the compile of what the user waits on, the first scene and
        its settings, runs at normal priority (`physics warmup --background-after-first`; the rest
        is niced): beside it, the probe's child judged the tank too slow to run as Python. However
        this ends (the window closed first, the child not started, an error), `returncode` is set,
        so that nothing waits for a compile that will not come."""
        try:
            self._start_and_read(first)
        except Exception as error:     # noqa: BLE001 - said by `status`; kernels then compile when first used
            self.lines.append(f"the warm-up stopped: {type(error).__name__}: {error}")
        finally:
            with self._condition:
                if self.returncode is None:
                    self.returncode = -1 if self.child is None else self.child.poll()
                    if self.returncode is None:     # still running: an error in reading it
                        self.child.kill()
                        self.returncode = -1
                self._condition.notify_all()

    def _start_and_read(self, first):
        if first is not None:
            path = _key(SCENES / f"{first}.toml")
            self.probe(path)
            with self._condition:
                self._condition.wait_for(lambda: self._probes.get(path) is not None or self._closed,
                                         timeout=PROBE_TIMEOUT + 5.0)
        command = [sys.executable, "-m", "physics", "warmup", "--plain"]
        if first is not None:
            command += ["--first", first, "--background-after-first"]
        if self._closed:
            return
        # started outside the lock (a fork and exec: the window's thread asks the lock every frame)
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 stdin=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent if first is not None else _background_child)
        with self._condition:
            self.child = child
            closed = self._closed
        if closed:          # the window closed while it started
            child.terminate()
            return
        threading.Thread(target=self._count_kernels, args=(child,), name="kernel count", daemon=True).start()
        for line in child.stdout:
            line = line.strip()
            self.lines.append(line)
            match = _LINE.match(line)
            if match:
                with self._condition:
                    self.total = int(match.group(2))
                    self.compiled.add(match.group(3))
                    if match.group(4) == "failed":
                        self.failed[match.group(3)] = line
                    self._condition.notify_all()
        returncode = child.wait()
        with self._condition:
            self.returncode = returncode
            self._condition.notify_all()

    @property
    def compiling(self):
        """Whether the warm-up child runs, or is about to (its first scene being timed)."""
        return self._compile and self.returncode is None

    def _compiled(self, task):
        return not self.compiling or task in self.compiled

    # --- loading in this process -------------------------------------------------------------
    def want(self, task):
        """Load `task` (a warm-up task name; None: nothing) in this process as soon as it is
        compiled, before the tasks asked for earlier that are not compiled yet."""
        if task is None:
            return
        with self._condition:
            if task not in self.loaded and ("load", task) not in self._jobs:
                self._jobs.append(("load", task))
                self._condition.notify_all()

    def build(self, task):
        """Load shipped scene `task` into a fresh `Simulation` on the thread, once its kernels are
        loaded (`take` hands it over)."""
        self.want(task)
        with self._condition:
            if ("build", task) not in self._jobs:
                self._jobs.append(("build", task))
                self._condition.notify_all()

    def take(self, task):
        """The `Simulation` `build` made of scene `task` (its file as it was then), or None."""
        with self._condition:
            return self._built.pop(task, None)

    def forget(self, task):
        """Drop scene `task`'s build: asked for and not started, or done and not taken (a wait the
        user cancelled); its kernels still load."""
        with self._condition:
            if ("build", task) in self._jobs:
                self._jobs.remove(("build", task))
            self._built.pop(task, None)

    def built(self, task):
        """Whether `build` has finished with scene `task` (`take` may still answer None: it failed)."""
        return task in self._built

    def _next(self):
        """The first job asked for that can run: a load once its task is compiled, a build once
        its scene's task is loaded (so a scene opens before its other settings load)."""
        with self._condition:
            while True:
                for kind, task in self._jobs:
                    if self._compiled(task) if kind == "load" else task in self.loaded:
                        self._jobs.remove((kind, task))
                        self.loading = task
                        return kind, task
                self._condition.wait()

    def _load(self):
        with allow_compile():       # this thread loads (or compiles) while the window's interprets
            self._load_jobs()

    def _load_jobs(self):
        from app import renderer, shadows   # here, in the loading thread: their kernels load as they import
        from physics.pipeline.simulation import Simulation      # (and the physics' kernels)
        renderer.warm_kernels()         # the viewer's own kernels first: every scene draws with them
        shadows.warm_kernels()
        while True:
            job, task = self._next()
            sim = None
            try:
                if job == "load":
                    warm_scene(task)
                else:
                    sim = Simulation.from_file(SCENES / f"{task}.toml")
                    sim.snapshot()      # its scene's fingerprint, which the timeline needs, computed here
                    _read_meshes(sim.scene)
            except Exception:           # noqa: BLE001 - the scene's own error shows when it opens
                self.failed.setdefault(task, traceback.format_exc(limit=1).strip().splitlines()[-1])
            with self._condition:
                if job == "load":
                    self.loaded.add(task)
                else:
                    self._built[task] = sim     # None if it failed: the viewer loads it and shows why
                self.loading = None
                self._condition.notify_all()

    def ready(self, task):
        """Whether what `task` needs is compiled and loaded here (None: a file the warm-up does
        not know, ready once nothing compiles any more)."""
        return task in self.loaded if task is not None else not self.compiling

    @property
    def busy(self):
        """Whether anything is being compiled or loaded."""
        return self.compiling or self.loading is not None or bool(self._jobs)

    # --- running a scene as Python meanwhile ------------------------------------------------
    def probe(self, path):
        """Start timing scene `path`'s steps as Python in a child process (NUMBA_DISABLE_JIT: no
        compile), unless it is timed already; `interpretable` gives the verdict."""
        path = _key(path)
        with self._condition:
            if path in self._probes:
                return
            self._probes[path] = None
        threading.Thread(target=self._probe, args=(path,), name="probe", daemon=True).start()

    def _probe(self, path):
        try:
            first, step = time_as_python(path)
            verdict = first <= PROBE_FIRST and step <= PROBE_STEP
        except Exception:   # noqa: BLE001 - too slow, or it failed: the scene waits for its kernels
            verdict = False
        with self._condition:
            self._probes[path] = verdict
            self._condition.notify_all()

    def interpretable(self, path):
        """Whether scene `path` was timed (`probe`) and may run as Python."""
        return bool(self._probes.get(_key(path)))

    # --- what the window says ----------------------------------------------------------------
    @property
    def elapsed(self):
        return time.perf_counter() - self.started

    def _count_kernels(self, child):
        """Once a second while `child` runs: the kernels compiled since the start
        (`physics.tools.warmup.kernel_files`, a walk of the cache), off the window's thread."""
        while child.poll() is None and not self._closed:
            self._kernel_count = kernel_files(self._since)
            time.sleep(1.0)

    def _kernels(self):
        """The last count of `_count_kernels`."""
        return self._kernel_count

    @property
    def fraction(self):
        """How far the compile is: by the kernels written, each a second or so of a worker's time,
        so that it moves every few seconds (its tasks take up to a minute and a half each), or by
        the tasks done where that says more (a cache that held some kernels already). Below 1
        until the child ends."""
        if not self.compiling:
            return 1.0
        return progress(len(self.compiled), self.total, self._kernels())

    def estimate(self):
        """The seconds left at the pace so far (`time_left`), or None."""
        return time_left(self.elapsed, self.fraction) if self.compiling else None

    def status(self):
        """One line: what is being compiled or loaded, how far it is, and how long it should take."""
        if self.compiling:
            if self.child is None:
                return f"timing the first scene as Python before compiling, {self.elapsed:.0f} s"
            # the kernels written so far, where any are: with most of them cached already (a source
            # change of a few modules) the scene tasks alone say how far it is
            kernels = self._kernels()
            parts = [f"{kernels} of about {KERNEL_FILES} kernels"] if kernels or not self.total else []
            if self.total:
                parts.append(f"{len(self.compiled)} of {self.total} scene tasks")
            done = parts[0] if len(parts) == 1 else f"{parts[0]} ({parts[1]})"
            left = self.estimate()
            left = "estimating the time left" if left is None else f"about {_duration(left)} left"
            return f"compiling the physics kernels on every core: {done}, {left}; {self.elapsed:.0f} s so far"
        if self.returncode not in (None, 0):
            last = self.lines[-1] if self.lines else f"exit code {self.returncode}"
            return f"the warm-up stopped ({last}); kernels it did not compile compile when first used"
        if self.loading is not None:
            return f"loading the compiled kernels of {self.loading}"
        return "kernels ready"

    def close(self):
        """End the child if it still runs (what it compiled stays cached), or keep it from starting."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        if self.child is not None and self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.child.kill()


def time_as_python(path, timeout=PROBE_TIMEOUT):
    """(CPU s of the first step, CPU s of each of the next three) of scene `path` run as Python,
    in a child process (NUMBA_DISABLE_JIT: nothing compiles); subprocess.TimeoutExpired past
    `timeout` (wall)."""
    environment = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, check=True,
                            stdin=subprocess.DEVNULL, env=environment, timeout=timeout, preexec_fn=die_with_parent)
    first, step = json.loads(result.stdout.strip().splitlines()[-1])
    return first, step


def progress(tasks_done, tasks, kernels):
    """How far a warm-up is that has finished `tasks_done` of `tasks` (None: not known yet) and
    written `kernels` compiled-kernel files: the larger of the two fractions, below 1 (the child
    says when it has ended)."""
    by_tasks = tasks_done / tasks if tasks else 0.0
    return min(0.99, max(by_tasks, kernels / KERNEL_FILES))


def time_left(elapsed, fraction):
    """The seconds left of a job `fraction` done in `elapsed` s, at that pace; None until a
    twentieth is done (the first kernels are the small ones, and a guess that early misleads)."""
    return None if fraction < 0.05 else elapsed * (1.0 - fraction) / fraction


def _duration(seconds):
    """Seconds as a person says them: "40 s", "3 min"."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _key(path):
    """A scene file's one name, however it was given (relative, absolute, through a link)."""
    return os.path.realpath(path)


def _background_child():
    """The warm-up child ends with the window and yields the cores to it (physics.tools.warmup's
    BACKGROUND_NICE)."""
    die_with_parent()
    os.nice(BACKGROUND_NICE)


def _read_meshes(scene):
    """Read a scene's drawn mesh files here (app.meshes caches them), not in the frame that opens
    it; a file that cannot be read is named when the scene opens (app.renderer.set_shapes)."""
    for entry in scene.meshes or ():
        if entry is not None:
            try:
                meshes.file_mesh(entry["file"], entry["scale"])
            except Exception:   # noqa: BLE001 - shown by the renderer when the scene opens
                pass
