"""Whole Simulation steps of the shipped scenes (issue 4 §9): the tank scene (29 nodes: kinematic
wheels, turret and mantlet, nine dynamic bodies) against the 0.2 ms target, and the 1,000-tank
stress scene (10,001 nodes) for scale. One thread, the scene's own settings (dt = 1/60).
"""
import time
from pathlib import Path

import numpy as np

from physics.simulation import Simulation

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"
TARGET_MS = {"tank": 0.2}


def _median_step_ms(sim, steps, repeats):
    sim.step(5)  # compile and warm caches outside the timing
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        sim.step(steps)
        samples.append((time.perf_counter() - start) / steps * 1e3)
    return float(np.median(samples))


def main(quick=False):
    rows = []
    for name, steps, repeats in (("tank", 200, 5 if quick else 25), ("stress", 3 if quick else 10, 3 if quick else 7)):
        sim = Simulation.from_file(SCENES / f"{name}.toml")
        ms = _median_step_ms(sim, steps, repeats)
        nodes = len(sim.names)
        target = TARGET_MS.get(name)
        verdict = "" if target is None else ("met" if ms <= target else "missed")
        rows.append(f"| {name} | {nodes} | {int((sim.motion == 'dynamic').sum())} | {ms:.3f} | "
                    f"{'' if target is None else f'≤ {target}'} {verdict} | {ms * 1e6 / nodes:.0f} |")
    return "\n".join([
        "## Scenes: one whole Simulation.step (issue 4 §9)",
        "",
        "Median ms per step (kinematic stage, dynamic stage with the scene's integrator, world update).",
        "",
        "| scene | nodes | dynamic | ms / step | target | ns / node |",
        "|---|---|---|---|---|---|",
        *rows,
    ])


if __name__ == "__main__":
    print(main())
