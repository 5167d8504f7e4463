"""Free rigid bodies, gyroscopic term on: nanoseconds per body per step for every integrator.

Issue 4 §9 targets (N = 10^4, gravity, no torque, parent = world): lie-midpoint <= 60 ns,
lie-midpoint-4 <= 180 ns. The others are reported for scale (no target).
"""
import time

import numpy as np

from physics.integrators import INTEGRATORS, step_bodies

TARGETS_NS = {"lie-midpoint": 60.0, "lie-midpoint-4": 180.0}


def _bodies(n, seed=0):
    rng = np.random.default_rng(seed)
    rotation = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    return (rng.normal(size=(n, 3)), rotation, rng.normal(size=(n, 3)), rng.normal(scale=3.0, size=(n, 3)),
            np.ones(n), rng.uniform(0.5, 2.0, size=(n, 3)), np.tile([0.0, -9.81, 0.0], (n, 1)), np.zeros((n, 3)))


def measure(integrator, n, steps, repeats, gyroscopic="explicit"):
    """Median over `repeats` runs of `steps` steps: ns per body per step."""
    state = _bodies(n)
    step_bodies(*state, 1.0 / 60.0, integrator, gyroscopic)  # compile / warm the cache
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step_bodies(*state, 1.0 / 60.0, integrator, gyroscopic)
        samples.append((time.perf_counter() - start) / (steps * n) * 1e9)
    return float(np.median(samples))


def main(quick=False):
    n, steps, repeats = (1000, 5, 3) if quick else (10_000, 50, 7)
    lines = [
        "## bodies",
        "",
        f"Free rigid bodies, gravity, gyroscopic term on (`explicit`), N = {n}, {steps} steps × {repeats} "
        "repeats, median ns per body per step (`benchmarks/bodies.py`).",
        "",
        "| integrator | ns / body / step | target |",
        "|---|---:|---:|",
    ]
    for name in INTEGRATORS:
        ns = measure(name, n, steps, repeats)
        target = TARGETS_NS.get(name)
        mark = "" if target is None else (f"≤ {target:.0f} " + ("✓" if ns <= target else "✗"))
        lines.append(f"| `{name}` | {ns:.1f} | {mark} |")
    implicit = measure("semi-implicit-euler", n, steps, repeats, "implicit")
    lines.append(f"| `semi-implicit-euler`, gyroscopic `implicit` | {implicit:.1f} | |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
