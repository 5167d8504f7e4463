"""The cost of a snapshot (`Simulation.snapshot`), its bytes (`Snapshot.to_bytes`), a restore, and a
state hash, for the tank, the car and the 1,000-box pile, each after it has run (so the solver's
warm-start impulses and manifolds are full). The timeline keeps a keyframe every K steps within its
byte budget and hashes every step: these numbers say what that costs beside a step.
"""
import os
import time
from pathlib import Path

import numpy as np

from physics import Snapshot
from physics.pipeline.simulation import Simulation
from physics.pipeline.timeline import DEFAULT_BUDGET, HISTORY_STEPS

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"
RUNS = {"tank": 120, "car": 60, "pile": 60}     # steps before measuring (contacts settled in)


def _median_ms(call, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return 1e3 * float(np.median(samples))


def main(quick=False):
    repeats = 5 if quick else 30
    rows = []
    for scene, steps in RUNS.items():
        sim = Simulation.from_file(SCENES / f"{scene}.toml")
        sim.step(steps)
        snap = sim.snapshot()
        data = snap.to_bytes()
        step_ms = _median_ms(lambda: (sim.restore(snap), sim.step(1)), max(3, repeats // 3))
        keyframe_every = max(1, int(np.ceil(snap.nbytes * HISTORY_STEPS / DEFAULT_BUDGET)))
        rows.append((scene, len(sim.names), _median_ms(sim.snapshot, repeats), _median_ms(lambda: sim.restore(snap), repeats),
                     _median_ms(snap.to_bytes, repeats), _median_ms(lambda: Snapshot.from_bytes(data), repeats),
                     _median_ms(sim.state_hash, repeats), step_ms, snap.nbytes, len(data), keyframe_every))
    lines = [
        "## Snapshots (`benchmarks/snapshots.py`)",
        "",
        "Median ms on the shared 2-core machine, each scene after it has run (contacts and warm starts in",
        "place). \"step\" is one `Simulation.step` of the same scene beside it; \"keyframe every\" is the",
        f"timeline's default spacing, {HISTORY_STEPS} steps of history within {DEFAULT_BUDGET // 2**20} MB.",
        f"Load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        "| scene | nodes | snapshot ms | restore ms | to_bytes ms | from_bytes ms | state_hash ms | step ms | array bytes | file bytes | keyframe every |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for scene, n, snap_ms, restore_ms, bytes_ms, parse_ms, hash_ms, step_ms, nbytes, size, every in rows:
        lines.append(f"| {scene} | {n} | {snap_ms:.3f} | {restore_ms:.3f} | {bytes_ms:.3f} | {parse_ms:.3f} | "
                     f"{hash_ms:.3f} | {step_ms:.3f} | {nbytes:,} | {size:,} | {every} |")
    lines += ["", "A snapshot copies every array that decides the future (docs/recording-format.md); its cost",
              "grows with the contacts the solver keeps, not with the nodes alone. Hashing serializes and",
              "digests the same arrays, so recording a hash per step costs about one snapshot plus",
              "SHA-256 of its bytes per step."]
    return "\n".join(lines)
