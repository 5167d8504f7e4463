"""The car crash: a loose child's world velocity through the impact, counteraction on
and off. Runs assets/scenes/car.toml through `physics.Simulation` and writes docs/crash.png.

    .venv/bin/python docs/plots/crash.py [--seconds 2.5] [--child box_1]

With counteraction on ("The Dynamics of a Transform Hierarchy", "Counteracting the Inherited Effect
from the Parent") the contact impulse that stops the car leaves its children's world velocity alone:
the cargo keeps ~10 m/s and slides into the front panel, which then stops it. Off, the cargo
inherits the car's change of velocity and stops with it, as if glued to the floor.
"""
import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # no display needed
import matplotlib.pyplot as plt
import numpy as np

from physics.pipeline.simulation import Simulation

ROOT = Path(__file__).resolve().parents[2]
CAR = ROOT / "assets" / "scenes" / "car.toml"


def history(counteract, seconds, child):
    """(time (T,), car world vx (T,), child world vx (T,)) at every step, row 0 the initial state."""
    sim = Simulation.from_file(CAR)
    sim.set("counteract", counteract)
    car, box = sim.names.index("car"), sim.names.index(child)
    rows = []
    for _ in range(int(round(seconds / sim.settings.dt)) + 1):
        velocity = sim.world().velocity
        rows.append((sim.time, velocity[car, 0], velocity[box, 0]))
        sim.step(1)
    return np.array(rows).T


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.5)
    parser.add_argument("--child", default="box_1")
    parser.add_argument("--out", default=str(ROOT / "docs" / "crash.png"))
    args = parser.parse_args(argv)
    figure, axes = plt.subplots(figsize=(8, 4.2), dpi=110)
    for counteract, color in ((True, "tab:red"), (False, "tab:blue")):
        t, car_v, child_v = history(counteract, args.seconds, args.child)
        label = "on" if counteract else "off"
        axes.plot(t, child_v, color=color, lw=2, label=f"{args.child}, counteraction {label}")
        if counteract:
            axes.plot(t, car_v, color="0.1", lw=1.2, ls="--", label="car", zorder=3)
    axes.set_xlim(1.0, args.seconds)   # the coasting before the impact is flat
    axes.set_xlabel("time (s)")
    axes.set_ylabel("world velocity along x (m/s)")
    axes.set_title("Car into a wall at 10 m/s: its loose cargo through the impact")
    axes.grid(alpha=0.3)
    axes.legend(loc="center left")
    figure.tight_layout()
    figure.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
