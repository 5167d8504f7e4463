"""Whole Simulation steps of the shipped scenes (issue 4 §9): the tank scene (kinematic hull,
wheels, turret and barrel; nine loose dynamic bodies resting on its decks through contacts) against
the 0.2 ms target, with the step's stages timed separately, and the 1,000-tank stress scene
(10,011 nodes) for scale. One thread, the scene's own settings (dt = 1/60).
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


STAGES = {"_sync": "world update and derived local state (start of step)",
          "_stage_kinematic": "kinematic stage (Magnus)", "_stage_dynamic": "dynamic stage (integrator)",
          "_stage_prepare": "solver prepare (broad + narrow phase, rows)",
          "_stage_contacts": "solver solve, relax, restitution, applied back (counteraction)"}


def _stage_ms(sim, steps, repeats):
    """Median ms per step of each stage in STAGES (wrapped with perf_counter; `_sync` counts only
    its calls from `step` itself, the solver stages' own syncs count in theirs)."""
    totals = {name: [] for name in STAGES}
    clock = {name: 0.0 for name in STAGES}
    depth = [0]

    def wrap(name):
        inner = getattr(sim, name)

        def timed(*args, **kwargs):
            depth[0] += 1
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                depth[0] -= 1
                if name != "_sync" or depth[0] == 0:
                    clock[name] += time.perf_counter() - start
        setattr(sim, name, timed)
    for name in STAGES:
        wrap(name)
    for _ in range(repeats):
        for name in clock:
            clock[name] = 0.0
        sim.step(steps)
        for name in clock:
            totals[name].append(clock[name] / steps * 1e3)
    for name in STAGES:
        del sim.__dict__[name]
    return {name: float(np.median(values)) for name, values in totals.items()}


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
    tank = Simulation.from_file(SCENES / "tank.toml")
    tank.step(5)
    stages = _stage_ms(tank, 200, 3 if quick else 11)
    return "\n".join([
        "## Scenes: one whole Simulation.step (issue 4 §9)",
        "",
        "Median ms per step (kinematic stage, dynamic stage with the scene's integrator, world update,",
        "and for the tank the contact solver's stages).",
        "",
        "| scene | nodes | dynamic | ms / step | target | ns / node |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "The tank's step by stage (median ms per step; wrapping adds ~1 µs per call):",
        "",
        "| stage | ms / step |",
        "|---|---|",
        *(f"| {STAGES[name]} | {ms:.3f} |" for name, ms in stages.items()),
        "",
        f"Free motion (world update, kinematic and dynamic stages) is "
        f"{stages['_sync'] + stages['_stage_kinematic'] + stages['_stage_dynamic']:.3f} ms of the tank's step; "
        f"the contact solver (its nine loose bodies resting on the decks) "
        f"{stages['_stage_prepare'] + stages['_stage_contacts']:.3f} ms, most of it the fixed cost of some "
        "40 compiled and numpy calls per step (broad and narrow phase, rows, three PGS sweeps, the changes "
        "applied back with counteraction), not arithmetic. The 0.2 ms target needs that pipeline fused "
        "into a few compiled calls.",
    ])


if __name__ == "__main__":
    print(main())
