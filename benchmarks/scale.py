"""Scale: heaps of 1,000 and 4,096 boxes beside PyBullet with the solver's thread count as chosen
(`physics.core.threads`) and pinned to one and two threads; free bodies from 10^3 to 10^6, a whole
`Simulation.step` beside its integrator kernel; and the time to load a generated scene of each size.
`python -m benchmarks scale`.

Heaps: `make_scenes.py pile --side 10 | 16` (boxes of 0.2 m dropped from 0.5 m, dt = 1/60), built
in ours and in PyBullet (`benchmarks.pile`: its `BulletPile` and `OurPile`), stepped `SETTLE_S` of
simulated time (the heap lands and spreads), then `TIMED` steps timed round-robin: ours with the
count chosen by measuring, ours on one thread, ours on two, PyBullet, and again, each round in
another order (`balanced_order`), so that a busy moment of the shared machine falls on all of them
alike and each runs after each other one equally often. Median wall-clock ms per step; ratios to
PyBullet. The load average is what the machine was doing besides: a user's machine runs a browser
or an IDE too. So the 1,000-box heap is timed again beside one competing CPU-bound process (a
Python busy loop at normal priority, started after the heap settled): the thread count chosen by
measuring must then be no slower than one thread (`BUSY_TARGET`, within the noise of the same code
measured twice, `BUSY_NOISE`), and at most 0.6 of PyBullet's time. The 4,096-box heap is also
brought to rest in both engines (`benchmarks.pile.side_by_side`: at least 10 s, until the fastest
box is below 5 cm/s for a second, at most `STEADY_SETTLE_MAX_S`) and its worst penetration at any contact over
`STEADY_TIMED` steps is compared with `PENETRATION_TARGET_MM`.

Free bodies: N bodies, no parent, gravity, gyroscopic term on (explicit), lie-midpoint, as
generated arrays (`physics.scene_from_arrays`); the step's and the kernel's (`step_bodies`, what
the step calls to integrate) median wall ns per body·step, and the step's pinned to one core
(`fixed_threads(1)`), interleaved. The step/kernel ratio is what the step adds around the
integration: free bodies take the fused sub-step (the integrator on the local state in place, the
divergence check in its pass: `physics.pipeline.stages.free_substep`), so what is left is the check's
arithmetic and the step's Python. From `SPLIT_BODIES` bodies both run in parts on every core at
once; the 10^6 bodies are timed again beside one competing process, where the parts must not lose
to one core.
"""
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.pile import SETTLE_MIN_S, BulletPile, OurPile, side_by_side
from physics.dynamics.integrators import SPLIT_BODIES, step_bodies
from physics.io.scene import scene_from_arrays
from physics.pipeline.simulation import Simulation
from physics.core.threads import fixed_threads

SETTLE_S = 3.0
TIMED = 15
HEAPS = (10, 16)                # boxes per edge: 1,000 and 4,096
ITERATIONS = (10, 20)
BODIES = (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6)
HEAP_TARGET, STEP_TARGET = 0.4, 1.3     # ours / PyBullet at 4,096 boxes; step / kernel
MILLION_TARGET = 30.0                   # ns per body·step of 10^6 free bodies, a quiet machine
# Beside a competing process the parts' step must not lose to one core's, nor the heap's chosen
# thread count to one thread; medians of the same code under load differ by a few per cent run to
# run (8 steps of 10^6 bodies; 15 of the heap, where the chosen count is one thread once the
# competitor is seen), so equal means within 5 %.
BUSY_NOISE = 1.05
BUSY_ITERATIONS = (10, 20, 50)          # the 1,000-box heap beside one competing process
BUSY_TARGET, BUSY_BULLET_TARGET = 1.0, 0.6  # chosen / one thread; chosen / PyBullet
PENETRATION_TARGET_MM = 2.0     # the 4,096-box heap at rest: the worst penetration at any contact
STEADY_TIMED = 21               # steps timed at rest
# s: the 4,096-box heap comes to rest later than the 1,000 (boxes tip off its flanks for longer):
# ours after 40 s at 10 iterations and 63 s at 20, where pile.py's 40 s cap measured landings
STEADY_SETTLE_MAX_S = 90.0


@contextlib.contextmanager
def competitor():
    """One CPU-bound process beside the measurement (what a browser or an IDE does to a user's
    machine), ended on leaving."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)     # running before the first timed step
        yield
    finally:
        process.kill()
        process.wait()


def balanced_order(n, k):
    """Round k's order of n engines (n even), a row of a Williams square: over n rounds each engine
    runs right after each other one exactly once. An engine inherits the caches (and the spinning
    threads) of the one before it: in a fixed cyclic order, rotated or not, each engine always
    followed the same one, and two identical engines measured 7 % apart (the one after PyBullet's
    step slower)."""
    first = [0]
    for j in range(1, n):
        first.append((j + 1) // 2 if j % 2 else n - j // 2)
    return [(i + k) % n for i in first]


def _heap_file(side, directory):
    import runpy

    make = runpy.run_path(str(Path(__file__).resolve().parent.parent / "assets" / "scenes" / "make_scenes.py"))
    path = Path(directory) / f"heap_{side}.toml"
    make["pile"](side, str(path))
    return path


def heap(side, iterations, settle_s, timed, directory, busy=False):
    """{engine: median wall ms per step} for the heap of side³ boxes; `busy`: timed beside a
    `competitor`."""
    path = _heap_file(side, directory)
    engines = {"chosen": OurPile(iterations, path), "one": OurPile(iterations, path, threads=1),
               "two": OurPile(iterations, path, threads=2), "pybullet": BulletPile(iterations, path)}
    try:
        for _ in range(round(settle_s * 60)):
            for engine in engines.values():
                engine.step()
        wall = {name: [] for name in engines}
        names = list(engines)
        with competitor() if busy else contextlib.nullcontext():
            for k in range(timed):
                for i in balanced_order(len(names), k):
                    start = time.perf_counter()
                    engines[names[i]].step()
                    wall[names[i]].append(time.perf_counter() - start)
    finally:
        for engine in engines.values():
            engine.close()
    return {name: 1e3 * float(np.median(times)) for name, times in wall.items()}


def bodies(n, steps):
    """(load s, Simulation build s, step ns, kernel ns, step on one core ns) per body·step for n free
    bodies, the three timed interleaved."""
    rng = np.random.default_rng(0)
    arrays = {"motion": "dynamic", "translation": rng.uniform(-100, 100, (n, 3)), "velocity": rng.normal(size=(n, 3)),
              "angular_velocity": rng.normal(scale=3.0, size=(n, 3)), "inertia": rng.uniform(1.0, 2.0, (n, 3))}
    t0 = time.perf_counter()
    scene = scene_from_arrays(arrays, world={"integrator": "lie-midpoint", "gyroscopic": "explicit", "substeps": 1})
    t1 = time.perf_counter()
    sim = Simulation(scene)
    t2 = time.perf_counter()
    state = (rng.normal(size=(n, 3)), np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), rng.normal(size=(n, 3)),
             rng.normal(scale=3.0, size=(n, 3)), np.ones(n), rng.uniform(1.0, 2.0, (n, 3)),
             np.tile([0.0, -9.81, 0.0], (n, 1)), np.zeros((n, 3)))
    sim.step(1)
    step_bodies(*state, 1.0 / 60.0, "lie-midpoint", "explicit")
    step, kernel, one = [], [], []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step(1)
        step.append(time.perf_counter() - start)
        start = time.perf_counter()
        step_bodies(*state, 1.0 / 60.0, "lie-midpoint", "explicit")
        kernel.append(time.perf_counter() - start)
        with fixed_threads(1):
            start = time.perf_counter()
            sim.step(1)
            one.append(time.perf_counter() - start)
    per = lambda times: 1e9 * float(np.median(times)) / n
    return t1 - t0, t2 - t1, per(step), per(kernel), per(one)


def main(quick=False):
    load_before = os.getloadavg()
    lines = ["## Scale (`benchmarks/scale.py`)", ""]
    try:
        import pybullet  # noqa: F401
        have_bullet = True
    except ImportError:
        have_bullet = False
    if have_bullet:
        heaps, counts = ((10,), (10,)) if quick else (HEAPS, ITERATIONS)
        settle, timed = (0.5, 3) if quick else (SETTLE_S, TIMED)
        lines += [
            f"Heaps dropped from 0.5 m, stepped {settle:g} s, then {timed} steps timed round-robin; median wall ms "
            "per step. \"chosen\": the solver's thread count chosen by measuring, solve by solve (the default); "
            "\"one\", \"two\": pinned. Ratios to PyBullet.",
            "",
            "| boxes | iterations | ours, chosen | ours, one thread | ours, two threads | PyBullet "
            "| chosen / PyBullet | chosen / one thread | target |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        with tempfile.TemporaryDirectory() as directory:
            for side in heaps:
                for iterations in counts:
                    r = heap(side, iterations, settle, timed, directory)
                    ratio = r["chosen"] / r["pybullet"]
                    target = f"≤ {HEAP_TARGET:g} {'✓' if ratio <= HEAP_TARGET else '✗'}" if side ** 3 >= 4000 else ""
                    lines.append(f"| {side ** 3:,} | {iterations} | {r['chosen']:.1f} | {r['one']:.1f} | {r['two']:.1f} "
                                 f"| {r['pybullet']:.1f} | {ratio:.2f} | {r['chosen'] / r['one']:.2f} | {target} |")
        steady_side = heaps[-1]
        lines += [
            "",
            f"The {steady_side ** 3:,}-box heap at rest in both engines (settled at least "
            f"{SETTLE_MIN_S if not quick else 1:g} s and until the fastest box stays below 5 cm/s for a second, at "
            f"most {STEADY_SETTLE_MAX_S if not quick else 1:g} s; \"not yet\": not at rest by then), "
            f"then {STEADY_TIMED if not quick else 3} steps timed interleaved: the worst penetration at any contact "
            "and of the ground, mm, and the median wall ms per step (ours with the thread count chosen).",
            "",
            "| boxes | iterations | at rest after, s: ours | PyBullet | worst penetration at any contact, mm: ours "
            "| PyBullet | of the ground: ours | PyBullet | ms per step: ours | PyBullet | target |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        with tempfile.TemporaryDirectory() as directory:
            path = _heap_file(steady_side, directory)
            for iterations in counts:
                r = side_by_side(iterations, (1.0, 1.0) if quick else (SETTLE_MIN_S, STEADY_SETTLE_MAX_S),
                                 3 if quick else STEADY_TIMED, path)
                ours, bullet = r["ours"], r["pybullet"]
                rest = lambda x: "not yet" if x.rest_s is None else f"{x.rest_s:.1f}"
                met = 1e3 * ours.deepest <= PENETRATION_TARGET_MM
                lines.append(f"| {steady_side ** 3:,} | {iterations} | {rest(ours)} | {rest(bullet)} "
                             f"| {1e3 * ours.deepest:.2f} | {1e3 * bullet.deepest:.2f} | {1e3 * ours.worst:.2f} "
                             f"| {1e3 * bullet.worst:.2f} | {ours.ms:.1f} | {bullet.ms:.1f} "
                             f"| ≤ {PENETRATION_TARGET_MM:g} mm {'✓' if met else '✗'} |")
        lines += [
            "",
            f"The 1,000-box heap beside one competing CPU-bound process, {timed} steps timed round-robin after "
            f"{settle:g} s of settling; median wall ms per step.",
            "",
            "| boxes | iterations | ours, chosen | ours, one thread | ours, two threads | PyBullet "
            "| chosen / one thread | chosen / PyBullet | target |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        with tempfile.TemporaryDirectory() as directory:
            for iterations in (BUSY_ITERATIONS[:1] if quick else BUSY_ITERATIONS):
                r = heap(10, iterations, settle, timed, directory, busy=True)
                versus_one, versus_bullet = r["chosen"] / r["one"], r["chosen"] / r["pybullet"]
                met = versus_one <= BUSY_NOISE * BUSY_TARGET and versus_bullet <= BUSY_BULLET_TARGET
                lines.append(f"| 1,000 | {iterations} | {r['chosen']:.1f} | {r['one']:.1f} | {r['two']:.1f} "
                             f"| {r['pybullet']:.1f} | {versus_one:.2f} | {versus_bullet:.2f} "
                             f"| ≤ {BUSY_TARGET:g} (within {BUSY_NOISE:g}) and ≤ {BUSY_BULLET_TARGET:g} "
                             f"{'✓' if met else '✗'} |")
    else:
        lines.append("pybullet is not installed (`pip install -e .[bench]`): no heaps measured.")
    lines += [
        "",
        "Free bodies (lie-midpoint, gyroscopic explicit, gravity, no parent), built from arrays "
        "(`scene_from_arrays`); median wall ns per body·step of the whole step, of its integrator kernel "
        f"(both on every core from {SPLIT_BODIES:,} bodies, `physics.dynamics.integrators.SPLIT_BODIES`) and of the "
        "step pinned to one core, interleaved; the last row beside one competing CPU-bound process.",
        "",
        "| bodies | scene_from_arrays, s | Simulation(), s | step, ns | kernel, ns | step / kernel "
        "| step on one core, ns | step / one core | target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n, busy in [(n, False) for n in (BODIES[:2] if quick else BODIES)] + ([] if quick else [(BODIES[-1], True)]):
        with competitor() if busy else contextlib.nullcontext():
            load_s, build_s, step_ns, kernel_ns, one_ns = bodies(n, 5 if quick else (20 if n < 10 ** 6 else 8))
        ratio = step_ns / kernel_ns
        met, target = [ratio <= STEP_TARGET], f"step / kernel ≤ {STEP_TARGET:g}"
        if busy:        # parts on every core must not lose to one core
            met.append(step_ns <= BUSY_NOISE * one_ns)
            target += f"; step ≤ {BUSY_NOISE:g} × one core"
        elif n == 10 ** 6:
            met.append(step_ns <= MILLION_TARGET)
            target += f"; step ≤ {MILLION_TARGET:g} ns"
        met = all(met)
        lines.append(f"| {n:,}{', busy' if busy else ''} | {load_s:.2f} | {build_s:.2f} | {step_ns:.0f} | {kernel_ns:.0f} "
                     f"| {ratio:.2f} | {one_ns:.0f} | {step_ns / one_ns:.2f} | {target} {'✓' if met else '✗'} |")
    load_after = os.getloadavg()
    lines += ["", "What the step adds to the kernel is its divergence check and its Python. The check runs in the "
              "kernel's pass, block by block as each block of 256 bodies is stored (and, on the first sub-step of a "
              "call, before it is stepped): a block whose every component is within its limit / √3 is cleared by "
              "four vectorized reductions over contiguous memory, and only another is tested body by body "
              "(`physics.dynamics.integrators._check_block`); the two checks cost about 3 ns a body at 10^4. From 2^16 "
              "bodies the step and the kernel each run in two parts that join once, and a part the shared machine "
              "delays shows in either median."]
    lines += ["", f"Load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} cores."]
    return "\n".join(lines)
