"""Free rigid bodies, gyroscopic term on: nanoseconds per body per step for every integrator;
and the per-step conversions of a small scene: microseconds per call for 9 bodies.

Targets (N = 10^4, gravity, no torque, parent = world): lie-midpoint <= 60 ns,
lie-midpoint-4 <= 180 ns. The others are reported for scale (no target). Small batches (the tank
scene's 9 dynamic bodies, in a moving frame): `local_accelerations`, `inertial_accelerations`,
`omega_local_from_body`, `step_bodies` each <= 15 µs per call, argument checks included.

Steady state: the kernel is compiled (and the cache warmed) by a first call outside the timing,
the state arrays are allocated once, and each sample is `steps` calls of `step_bodies` (its
argument checks included). The machine is shared, so besides the wall time the table gives the
thread's CPU time (`time.thread_time`: time the process was not descheduled by others' work,
though it still shares caches with them) and the load average during the run.
"""
import os
import time

import numpy as np

from physics.dynamics.integrators import (INTEGRATORS, Frame, inertial_accelerations, local_accelerations,
                                 omega_local_from_body, step_bodies)

TARGETS_NS = {"lie-midpoint": 60.0, "lie-midpoint-4": 180.0}
SMALL_BATCH, SMALL_TARGET_US = 9, 15.0


def _bodies(n, seed=0):
    rng = np.random.default_rng(seed)
    rotation = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    return (rng.normal(size=(n, 3)), rotation, rng.normal(size=(n, 3)), rng.normal(scale=3.0, size=(n, 3)),
            np.ones(n), rng.uniform(0.5, 2.0, size=(n, 3)), np.tile([0.0, -9.81, 0.0], (n, 1)), np.zeros((n, 3)))


def measure(integrator, n, steps, repeats, gyroscopic="explicit"):
    """Medians over `repeats` runs of `steps` steps: (wall, CPU) ns per body per step."""
    state = _bodies(n)
    step_bodies(*state, 1.0 / 60.0, integrator, gyroscopic)  # compile / load the cache
    wall, cpu = [], []
    for _ in range(repeats):
        start_wall, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            step_bodies(*state, 1.0 / 60.0, integrator, gyroscopic)
        cpu.append((time.thread_time() - start_cpu) / (steps * n) * 1e9)
        wall.append((time.perf_counter() - start_wall) / (steps * n) * 1e9)
    return float(np.median(wall)), float(np.median(cpu))


def measure_small(batch, calls, repeats):
    """{function: median CPU µs per call} for `batch` bodies whose parents move (a general Frame)."""
    rng = np.random.default_rng(1)
    state = _bodies(batch)
    translation, rotation, velocity, omega_body = state[:4]
    frame = Frame(np.broadcast_to(np.eye(3), (batch, 3, 3)).copy(), np.ones(batch), rng.normal(size=(batch, 3)),
                  rng.normal(size=(batch, 3)), rng.normal(size=(batch, 3)))
    functions = {
        "local_accelerations": lambda: local_accelerations(*state, "explicit", frame),
        "inertial_accelerations": lambda: inertial_accelerations(translation, velocity, frame),
        "omega_local_from_body": lambda: omega_local_from_body(rotation, omega_body, frame),
        "step_bodies (semi-implicit-euler, gyroscopic implicit)":
            lambda: step_bodies(*state, 1e-4, "semi-implicit-euler", "implicit", frame),
        "step_bodies (lie-midpoint)": lambda: step_bodies(*state, 1e-4, "lie-midpoint", "explicit", frame),
    }
    out = {}
    for name, call in functions.items():
        call()  # compile / load the cache
        samples = []
        for _ in range(repeats):
            start = time.thread_time()
            for _ in range(calls):
                call()
            samples.append((time.thread_time() - start) / calls * 1e6)
        out[name] = float(np.median(samples))
    return out


def main(quick=False):
    n, steps, repeats = (1000, 5, 3) if quick else (10_000, 50, 7)
    load_before = os.getloadavg()[0]
    rows = []
    for name in INTEGRATORS:
        rows.append((f"`{name}`", *measure(name, n, steps, repeats), TARGETS_NS.get(name)))
    rows.append(("`semi-implicit-euler`, gyroscopic `implicit`",
                 *measure("semi-implicit-euler", n, steps, repeats, "implicit"), None))
    small = measure_small(SMALL_BATCH, 200 if quick else 2000, 3 if quick else 7)
    load_after = os.getloadavg()[0]
    lines = [
        "## Free bodies (`benchmarks/bodies.py`)",
        "",
        f"Free rigid bodies, gravity, gyroscopic term on (`explicit`), N = {n}, {steps} steps × {repeats} "
        "repeats, median ns per body per step, compile excluded. "
        f"Load average {load_before:.1f} → {load_after:.1f} on {os.cpu_count()} cores: wall times include "
        "waiting for the CPU; CPU time is the thread's own (still sharing caches).",
        "",
        "| integrator | wall ns / body / step | CPU ns / body / step | target |",
        "|---|---:|---:|---:|",
    ]
    for label, wall, cpu, target in rows:
        mark = "" if target is None else (f"≤ {target:.0f} " + ("✓" if wall <= target else ("✓ (CPU)" if cpu <= target
                                                                                           else "✗")))
        lines.append(f"| {label} | {wall:.1f} | {cpu:.1f} | {mark} |")
    lines += [
        "",
        f"Small batches: {SMALL_BATCH} bodies in moving frames (the tank scene's per-step calls), median CPU µs "
        "per call, argument checks included.",
        "",
        "| function | CPU µs / call | target |",
        "|---|---:|---:|",
    ]
    for name, micros in small.items():
        lines.append(f"| `{name}` | {micros:.1f} | ≤ {SMALL_TARGET_US:.0f} {'✓' if micros <= SMALL_TARGET_US else '✗'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
