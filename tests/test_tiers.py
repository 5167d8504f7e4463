"""Kernels run as Python until compiled (physics.core.compiled.interpreting): the same bits, no compile
on the way, and the switch to compiled code kernel by kernel, on a cold cache and a warm one.

Each check that needs a cold cache runs in a fresh process with an empty NUMBA_CACHE_DIR, so that
nothing this test process compiled or loaded stands in for it."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"


def _python(code, cache, timeout=600, **env):
    """Run `code` in a fresh interpreter with kernel cache `cache`; -> its stdout's last line as JSON."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}
    environment.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# numba's compile events count every compile; interpreted code must cause none
_COUNTING = """
import json, numpy as np
from numba.core import event
compiles = []
class _Count(event.Listener):
    def on_start(self, ev): compiles.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev): pass
event.register("numba:compile", _Count())
"""


# steps per scene: the chain's RATTLE costs about 0.12 s a step as Python, the others 0.01-0.1 s
STEPS = {"tank": 30, "car": 30, "t_handle": 30, "chain": 6}


@pytest.mark.parametrize("scene", sorted(STEPS))
def test_interpreted_steps_give_the_compiled_bits(scene, tmp_path):
    """Steps as Python on an empty cache (contacts, sleeping, counteraction, RATTLE between them)
    hash to exactly the bits of as many compiled steps: numba compiles the same source, without
    fastmath, so every operation rounds the same way. Tolerance: none, the hash is of the bytes."""
    from physics.pipeline.simulation import Simulation
    steps = STEPS[scene]
    compiled = Simulation.from_file(SCENES / f"{scene}.toml")
    compiled.step(steps)
    got = _python(_COUNTING + f"""
from physics.core.compiled import interpreting
from physics.pipeline.simulation import Simulation
with interpreting():
    sim = Simulation.from_file({str(SCENES / f'{scene}.toml')!r})
    sim.step({steps})
    print(json.dumps([sim.state_hash(), compiles]))
""", tmp_path / "cache")
    assert got == [compiled.state_hash(), []]
    assert not list((tmp_path / "cache").rglob("*.nbc")), "nothing may be compiled into the cache"


def test_a_kernel_runs_as_python_until_it_compiles(tmp_path):
    """Interpreted, a kernel has no compiled version after its call; outside, the same call
    compiles it (one version, one compile event) and gives the same answer."""
    got = _python(_COUNTING + """
from physics.core.compiled import interpreting
from physics.dynamics.integrators import _all_positive
with interpreting():
    inside = [bool(_all_positive(np.ones(3))), bool(_all_positive(np.array([1.0, 0.0]))), len(_all_positive.signatures)]
outside = [bool(_all_positive(np.ones(3))), len(_all_positive.signatures)]
print(json.dumps([inside, outside, compiles]))
""", tmp_path / "cache")
    assert got == [[True, False, 0], [True, 1], ["_all_positive"]]


def test_a_thread_that_may_compile_switches_the_others_to_compiled_code(tmp_path):
    """With interpreting on for the process, a thread inside allow_compile compiles; the main
    thread's next call runs that compiled version (no compile of its own)."""
    got = _python(_COUNTING + """
import threading
from physics.core.compiled import allow_compile, interpret
from physics.dynamics.integrators import _all_positive
interpret(True)
before = len(_all_positive.signatures)
def load():
    with allow_compile():
        _all_positive(np.ones(3))
thread = threading.Thread(target=load)
thread.start(); thread.join()
main = bool(_all_positive(np.ones(4)))
print(json.dumps([before, len(_all_positive.signatures), main, compiles]))
""", tmp_path / "cache")
    assert got == [0, 1, True, ["_all_positive"]]


def test_load_cached_loads_what_the_cache_holds_and_interprets_the_rest(tmp_path):
    """A first process compiles a kernel into the cache; a second, interpreting with load_cached,
    loads it (a compiled version, no compile event) and interprets a kernel the cache lacks."""
    cache = tmp_path / "cache"
    _python("""
import json, numpy as np
from physics.dynamics.integrators import _all_positive
print(json.dumps(bool(_all_positive(np.ones(3)))))
""", cache)
    got = _python(_COUNTING + """
from physics.core.compiled import interpreting
from physics.dynamics.integrators import _all_positive
from physics.math.dense import cholesky_factor
with interpreting(load_cached=True):
    positive = bool(_all_positive(np.ones(3)))
    A = np.array([[4.0, 2.0], [2.0, 5.0]])
    factored = bool(cholesky_factor(A, 2))
print(json.dumps([positive, len(_all_positive.signatures), factored, len(cholesky_factor.signatures), A.tolist(), compiles]))
""", cache)
    assert got == [True, 1, True, 0, [[2.0, 2.0], [1.0, 2.0]], []]


def test_a_short_run_on_a_cold_cache_runs_as_python_with_the_same_output(tmp_path):
    """`physics run tank --steps 5` on an empty cache writes exactly the arrays of a warm run, and
    compiles nothing on the way (physics.tools.warmup.InterpretedStart): it answers in seconds where
    compiling the tank's kernels takes minutes of CPU."""
    def run(cache, out):
        environment = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}
        if cache is not None:
            environment["NUMBA_CACHE_DIR"] = str(cache)
        subprocess.run([sys.executable, "-m", "physics", "run", str(SCENES / "tank.toml"), "--steps", "5", "--quiet",
                        "--out", str(out)], cwd=ROOT, env=environment, check=True, capture_output=True, timeout=600)
        return dict(np.load(out))
    cold, warm = run(tmp_path / "cache", tmp_path / "cold.npz"), run(None, tmp_path / "warm.npz")
    assert cold.keys() == warm.keys()
    for key in warm:
        np.testing.assert_array_equal(cold[key], warm[key], err_msg=key)
    assert not list((tmp_path / "cache").rglob("*.nbc")), "a 5-step run must not compile"


def test_the_app_runs_as_python_only_the_scenes_whose_steps_are_cheap_so():
    """The probe times a scene's steps as Python: the T-handle (one body, no contacts) passes far
    inside the bounds; the pyramid (55 boxes resting on one another: as Python a first step of
    about 1.6 s, then 0.2 s each, against bounds of 0.3 and 0.12) is refused, by its measured time
    or by the probe's timeout. (The chain, whose sub-steps have no velocity solve, takes 0.12 s a
    step as Python: at the bound, no example either way.)"""
    import subprocess as sp

    from app.preparation import PROBE_FIRST, PROBE_STEP, time_as_python
    first, step = time_as_python(SCENES / "t_handle.toml")
    assert first <= PROBE_FIRST and step <= PROBE_STEP, (first, step)
    try:
        first, step = time_as_python(SCENES / "pyramid.toml")
    except sp.TimeoutExpired:
        return
    assert first > PROBE_FIRST or step > PROBE_STEP, (first, step)


@pytest.mark.display
def test_the_app_on_a_cold_cache_moves_the_tank_at_once(display, tmp_path):
    """A first start (empty kernel cache): the window shows the tank moving within seconds, run as
    Python while the warm-up compiles beside it, and simulated time never jumps. Bounds: the tank
    steps within 15 s of the first frame (a child times its steps as Python first, about 1.5 s
    on an idle machine; the bound leaves room for a loaded one, and compiling it takes minutes);
    a frame advances simulated time by at most MAX_FRAME_SECONDS and one carried step."""
    from app.session import MAX_FRAME_SECONDS
    log = tmp_path / "frames.csv"
    environment = {key: value for key, value in os.environ.items() if not key.startswith("NUMBA_")}
    environment.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), HIERARCHY_SANDBOX_CONFIG_DIR=str(tmp_path / "config"))
    process = subprocess.Popen([sys.executable, "-m", "app", "tank", "--frame-log", str(log)], cwd=ROOT, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        rows = []
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.5)
            if log.exists():
                rows = [line.split(",") for line in log.read_text().splitlines()[1:] if line.count(",") == 5]
                if sum(int(row[4]) for row in rows) >= 30:
                    break
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=30)
    moving = [int(row[0]) for row in rows if int(row[4]) > 0]
    assert moving, f"the tank never moved in {len(rows)} frames: {errors[-2000:]}"
    assert float(rows[moving[0]][1]) - float(rows[0][1]) <= 15.0, rows[moving[0]]
    assert all(row[5] == "1" for row in rows[:moving[0] + 1]), "the kernels were being prepared meanwhile"
    assert "Traceback" not in errors, errors[-3000:]
    dt = 1 / 60
    times = [float(row[3]) for row in rows if row[3] != "nan"]
    walls = [float(row[2]) for row in rows if row[3] != "nan"]
    for before, after, wall in zip(times, times[1:], walls[1:]):
        assert after - before <= min(wall, MAX_FRAME_SECONDS) + dt + 1e-9


def test_the_warm_up_yields_the_cores_once_what_the_window_waits_on_is_compiled():
    """`yield_cores` (the app's warm-up, after its first scene's tasks): the warm-up process and
    each of its pool's workers at nice BACKGROUND_NICE at least, read back by getpriority in a fresh
    process (raising one's niceness needs no privilege; this test's own process is left as it is)."""
    script = (
        "import os\n"
        "from multiprocessing import get_context\n"
        "from physics.tools.warmup import BACKGROUND_NICE, yield_cores\n"
        "if __name__ == '__main__':\n"
        "    pool = get_context('spawn').Pool(2)\n"
        "    before = os.getpriority(os.PRIO_PROCESS, 0)\n"
        "    yield_cores(pool)\n"
        "    after = [os.getpriority(os.PRIO_PROCESS, pid) for pid in [0] + [w.pid for w in pool._pool]]\n"
        "    print(before, *after, BACKGROUND_NICE)\n"
        "    pool.terminate()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    before, *after, nice = map(int, result.stdout.split())
    assert len(after) == 3 and all(value >= max(nice, before) for value in after), result.stdout


def test_a_task_compiled_ahead_of_need_runs_niced_from_its_start():
    """With `--background-after-first`, a worker that takes a task the user does not wait on (any
    but the first scene's) sets itself to BACKGROUND_NICE before it compiles (`_task`, its second
    element `ahead`), and one that takes what the user waits on stays as it was; read back by
    getpriority in fresh processes. (The task names no scene, so nothing compiles: its error is
    the answer.)"""
    script = (
        "import os, sys\n"
        "from physics.tools.warmup import _task\n"
        "name, seconds, error = _task(('no_such_scene', sys.argv[1] == 'ahead'))\n"
        "print(os.getpriority(os.PRIO_PROCESS, 0), error is not None)\n")
    niceness = {}
    for ahead in ("ahead", "waited-on"):
        result = subprocess.run([sys.executable, "-c", script, ahead], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr
        value, failed = result.stdout.split()
        niceness[ahead] = int(value)
        assert failed == "True"
    from physics.tools.warmup import BACKGROUND_NICE
    assert niceness["ahead"] >= BACKGROUND_NICE
    assert niceness["waited-on"] == os.getpriority(os.PRIO_PROCESS, 0)


def test_the_warm_up_progress_counts_the_kernels_written_since_it_started(tmp_path):
    """`kernel_files(since)` counts the compiled-kernel files (.nbc) written at or after `since`,
    in every folder of the cache, and nothing else; the window's progress is the larger of the
    kernels' and the tasks' fractions, below 1 until the child ends, and the time left is the time
    so far scaled by what is left."""
    from app.preparation import progress, time_left
    from physics.tools.warmup import KERNEL_FILES, kernel_files
    old = tmp_path / "physics" / "old.1.nbc"
    old.parent.mkdir()
    old.write_bytes(b"")
    os.utime(old, (1_000.0, 1_000.0))
    since = time.time() - 1.0
    for k in range(5):
        (tmp_path / "physics" / f"k{k}.1.nbc").write_bytes(b"")
    (tmp_path / "physics" / "k0.nbi").write_bytes(b"")      # an index, not a kernel
    assert kernel_files(since, tmp_path) == 5
    assert kernel_files(root=tmp_path) == 6
    assert progress(0, None, 0) == 0.0
    assert progress(2, 36, KERNEL_FILES // 2) == pytest.approx((KERNEL_FILES // 2) / KERNEL_FILES)
    assert progress(35, 36, 10) == pytest.approx(35 / 36)      # a cache that held most: the tasks say more
    assert progress(36, 36, 2 * KERNEL_FILES) == 0.99         # done only when the child says so
    assert time_left(30.0, 0.01) is None
    assert time_left(30.0, 0.25) == pytest.approx(90.0)


def test_a_preparation_closed_before_its_warm_up_starts_starts_none():
    """A window closed while its first scene is still being timed as Python (before the warm-up
    child starts): no child is started, and the preparation says it is no longer compiling (its
    returncode set), so nothing waits for a compile that will not come. In a fresh process, as
    the app's own."""
    script = ("import time\n"
              "from app.preparation import Preparation\n"
              "p = Preparation(compile=True, first='tank')\n"
              "p.close()\n"
              "deadline = time.monotonic() + 60\n"
              "while p.compiling and time.monotonic() < deadline:\n"
              "    time.sleep(0.05)\n"
              "print(p.compiling, p.child is None, p.returncode)\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "True", "-1"], result.stdout


def test_the_progress_line_names_the_kernels_only_when_some_were_written():
    """A warm-up whose kernels were mostly cached already (a change to a few modules re-runs every
    task and writes few files) says how many scene tasks are done, not "0 of about N kernels"
    beside a bar at 50 %; once kernels are written, both counts."""
    from types import SimpleNamespace

    from app.preparation import Preparation
    from physics.tools.warmup import KERNEL_FILES
    preparation = Preparation(compile=False)
    try:
        preparation._compile, preparation.child = True, SimpleNamespace(poll=lambda: None)
        preparation.total, preparation.compiled = 38, {f"task{k}" for k in range(19)}
        line = preparation.status()
        assert "19 of 38 scene tasks" in line and "kernels:" not in line and "0 of about" not in line
        preparation._kernel_count = 40
        assert f"40 of about {KERNEL_FILES} kernels (19 of 38 scene tasks)" in preparation.status()
    finally:
        preparation.child = None
        preparation.close()


def test_the_app_compiles_what_the_warm_up_left_once_it_has_ended():
    """While the warm-up child compiles or the loader loads (or after a failed warm-up), the window
    runs kernels as Python; once the child has ended well and the loader is idle, a kernel version
    the warm-up did not compile (a scene file of the user's own, such as a generated net) must
    compile where it is first called, as on a warm start (interpreted, the soft 32 × 32 net takes
    seconds a step)."""
    from types import SimpleNamespace

    from app.session import Session
    from physics.core.compiled import interpret, is_interpreting
    session = Session(store=False, scene="pendulum")
    before = interpret(True)
    try:
        for returncode, busy in ((None, True), (0, True), (-1, False)):
            # still compiling, or the loader still loading, or the warm-up failed: Python meanwhile
            session.preparation = SimpleNamespace(returncode=returncode, busy=busy, status=lambda: "the warm-up failed")
            session.poll_preparation()
            assert is_interpreting()
        session.preparation = SimpleNamespace(returncode=0, busy=False)      # done
        session.poll_preparation()
        assert not is_interpreting()
    finally:
        interpret(*before)
