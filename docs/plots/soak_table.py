"""The 10^4-step runs (docs/fidelity.md, "10^4-step runs"): every shipped
scene through the headless runner, summarized as Markdown rows.

    .venv/bin/python docs/plots/soak_table.py [--run] [DIR]      (DIR default /tmp/soak)

With `--run` each scene is first run (one at a time) as
`python -m physics run assets/scenes/NAME.toml --steps 10000 --record-every 100 --out DIR/NAME.npz`;
without it the rows come from the `.npz` files already in DIR. A missing file means the runner
stopped (exit 1 on a non-finite state: the runner writes no output then; DIR/NAME.log keeps its message).

Per scene: any NaN in the recorded states, max |position| (any node, any recorded row) against the
bound of tests/test_scenes.py (twice the start extent + 20 m), and the total energy (kinetic +
potential of the dynamic bodies) at the start, the end and its maximum over the recorded rows
(every 100th step), judged like tests/test_scenes.py: the maximum may exceed the start by
2 % of |E0| + 0.5 J, plus the kinetic energy a kinematic drive can give (turntable, tank).
"""
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.test_scenes import DRIVEN, ENERGY_ABSOLUTE, ENERGY_RELATIVE  # noqa: E402  the tests' own bounds

STEPS, EVERY = 10_000, 100


def command(scene, out):
    return [sys.executable, "-m", "physics", "run", str(scene), "--steps", str(STEPS), "--record-every", str(EVERY),
            "--out", str(out), "--quiet"]


def row(name, path):
    if not path.exists():
        log = path.with_suffix(".log")
        why = log.read_text().strip().splitlines()[-1] if log.exists() and log.read_text().strip() else "no output"
        return f"| {name} | — | — | — | — | — | — | — | — | — | ✗ ({why}) |"
    d = np.load(path)
    states = [d[k] for k in ("translation", "velocity", "rotation", "angular_velocity")]
    nan = not all(np.isfinite(a).all() for a in states)
    extent = np.abs(d["translation"]).max(axis=(1, 2))
    bound = 2.0 * extent[0] + 20.0
    energy = d["kinetic_energy"] + d["potential_energy"]
    e0 = energy[0]
    allowed = e0 + ENERGY_RELATIVE * abs(e0) + ENERGY_ABSOLUTE + DRIVEN.get(name, 0.0)
    steps = round(d["time"][-1] / (d["time"][1] - d["time"][0]) * EVERY) if len(d["time"]) > 1 else 0
    met = not nan and extent.max() <= bound and energy.max() <= allowed and steps == STEPS
    return (f"| {name} | {steps} | {'yes' if nan else 'no'} | {extent.max():.3g} | {bound:.3g} | "
            f"{e0:.6g} | {energy[-1]:.6g} | {energy.max():.6g} | {energy.max() - e0:+.3g} | {allowed - e0:.3g} | "
            f"{'✓' if met else '✗'} |")


def main(argv):
    run = "--run" in argv
    rest = [a for a in argv if a != "--run"]
    out = Path(rest[0] if rest else "/tmp/soak")
    out.mkdir(parents=True, exist_ok=True)
    scenes = sorted((ROOT / "assets" / "scenes").glob("*.toml"))
    print("| scene | steps | NaN | max \\|x\\| (m) | bound (m) | energy at start (J) | at the end (J) | largest (J) "
          "| rise (J) | allowed rise (J) | met |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for scene in scenes:
        path = out / f"{scene.stem}.npz"
        if run:
            with open(path.with_suffix(".log"), "w") as log:
                subprocess.run(command(scene, path), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        print(row(scene.stem, path), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
