"""Our numbers for the table of docs/fidelity.md, "Numbers to beat": each line
run the way its goal states it, through `physics.Simulation`, printed as Markdown rows.

    .venv/bin/python docs/plots/contacts_table.py [pendulum restitution stack chain pile]

Lines: the pendulum (1 m rigid link on a ball joint, 60° and 120°, dt = 1/60 — the goal's step —
and 1/240, `shake` on (as pendulum.toml) and off (the default): period error against the
elliptic-integral period, energy band as a fraction of the swing energy m g L (1 − cos θ₀), joint
error), restitution 0.5 (ball dropped from 1 m: bounce height ratio, dt = 1/240 and 1/60), the stack
of 10 boxes (stack.toml, 10 s: horizontal drift and sink of the top box; at the scene's settings and
at PyBullet's collapsing 10 iterations, 1 sub-step), the chain of 20 (chain.toml, 10 s: energy
change, worst joint separation), the pile (pile.toml at 10 and 50 iterations:
`benchmarks.contacts.measure_pile`, the same run as docs/benchmarks.md's rows).
"""
import os
import sys
from pathlib import Path

import numpy as np
from scipy.special import ellipk

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))   # benchmarks.contacts for the pile line

from physics.io.scene import load_scene, scene_from_dict
from physics.pipeline.simulation import Simulation

SCENES = ROOT / "assets" / "scenes"
G = 9.81


def pendulum(theta_degrees, h=1 / 60, shake=True, seconds=10.0):
    theta0 = np.radians(theta_degrees)
    pivot = np.array([0.0, 2.0, 0.0])
    bob = pivot + [np.sin(theta0), -np.cos(theta0), 0.0]
    inertia = 0.004                                     # 0.1 m, 1 kg solid sphere
    sim = Simulation(scene_from_dict({"world": {"dt": h, "shake": shake},
                                      "node": [{"name": "bob", "motion": "dynamic", "mass": 1.0, "translation": bob.tolist(),
                                                "shape": {"type": "sphere", "radius": 0.1}}],
                                      "joint": [{"type": "ball", "b": "bob", "anchor": pivot.tolist()}]}))
    exact = 4 * np.sqrt((inertia + 1.0) / G) * ellipk(np.sin(theta0 / 2) ** 2)
    x, energy, error = [], [], []
    for _ in range(int(seconds / h)):
        sim.step(1)
        position = sim.world().transform.translation[0]
        x.append(position[0])
        energy.append(sum(sim.energy().values()))
        error.append(abs(np.linalg.norm(position - pivot) - 1.0))
    x, t = np.array(x), (np.arange(len(x)) + 1) * h
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    crossing = t[down] + h * x[down] / (x[down] - x[down + 1])
    period = np.diff(crossing).mean()
    swing = G * (1 - np.cos(theta0))
    energy = np.array(energy)
    e0 = G * bob[1]                                     # released at rest
    band = (energy.max() - e0, energy.min() - e0)
    return (f"| pendulum {theta_degrees:.0f}° (1/{round(1 / h)}, shake {'on' if shake else 'off'}) | period error {abs(period - exact) / exact:.1e}; "
            f"energy {100 * band[1] / swing:+.1f} … {100 * band[0] / swing:+.1f} % of the swing energy, "
            f"{100 * (energy[-1] - e0) / swing:+.1f} % after {seconds:.0f} s; joint error ≤ {1e3 * max(error):.2f} mm |")


def restitution(h):
    radius = 0.1
    sim = Simulation(scene_from_dict({"world": {"dt": h}, "node": [
        {"name": "ground", "shape": {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}},
        {"name": "ball", "motion": "dynamic", "mass": 1.0, "restitution": 0.5, "translation": [0.0, 1.0 + radius, 0.0],
         "shape": {"type": "sphere", "radius": radius}}]}))
    heights, bounced = [], False
    for _ in range(int(1.5 / h)):
        sim.step(1)
        y, vy = sim.world().transform.translation[1, 1] - radius, sim.world().velocity[1, 1]
        bounced |= vy > 0
        if bounced:
            heights.append(y)
    return f"| restitution 0.5, 1 m (dt = 1/{round(1 / h)}) | bounce ratio {max(heights):.3f} |"


def stack(seconds=10.0, iterations=None, substeps=None):
    sim = Simulation.from_file(SCENES / "stack.toml")
    if iterations is not None:
        sim.set("iterations", iterations)
    if substeps is not None:
        sim.set("substeps", substeps)
    start = sim.world().transform.translation.copy()
    dynamic = np.flatnonzero(sim.motion == "dynamic")
    drift = sink = 0.0
    for _ in range(int(seconds / sim.settings.dt)):
        sim.step(1)
        x = sim.world().transform.translation[dynamic]
        drift = max(drift, np.linalg.norm((x - start[dynamic])[:, [0, 2]], axis=1).max())
        sink = max(sink, start[dynamic[-1], 1] - x[-1, 1])
    s = sim.settings
    # "standing": no box left its column by more than 0.1 m (a fallen stack spreads by metres)
    return (f"| stack of 10 (stack.toml: {s.iterations} iterations, {s.substeps} sub-steps) | drift {1e3 * drift:.2g} mm, "
            f"top box sink {1e3 * sink:.2f} mm, {'standing' if drift < 0.1 else 'fallen'} |")


def chain(seconds=10.0):
    scene = load_scene(SCENES / "chain.toml")
    sim = Simulation(scene)
    e0 = sum(sim.energy().values())
    highest, separation = e0, 0.0
    for _ in range(int(seconds / sim.settings.dt)):
        sim.step(1)
        highest = max(highest, sum(sim.energy().values()))
        separation = max(separation, sim.joint_separation().max())
    swing = e0 - (sum(sim.energy().values()))
    s = sim.settings
    span = G * 0.2 * 20 * 2.5                            # m g × the drop of the chain's centre, released horizontally to hanging
    return (f"| chain of 20 (chain.toml: {s.iterations} iterations, {s.substeps} sub-steps) | energy max {highest - e0:+.3g} J "
            f"over the start, lost {100 * swing / span:.1f} % of the {span:.0f} J swing in {seconds:.0f} s; "
            f"joint separation ≤ {1e3 * separation:.2f} mm |")


def pile(iterations):
    from benchmarks.contacts import measure_pile
    r = measure_pile(iterations)
    return (f"| pile of 1,000 (pile.toml, {iterations} iterations) | {r.cpu['step']:.1f} ms/step thread CPU "
            f"({r.wall:.0f} ms wall; solver {r.cpu['solver']:.1f}, broad {r.cpu['broad']:.1f}, narrow {r.cpu['narrow']:.1f}) "
            f"at {r.points} contact points ({r.touching} touching), {r.settle_s:g} s after the drop; worst ground penetration "
            f"{1e3 * r.worst:.2f} mm at rest, {1e3 * r.worst_settle:.2f} mm while settling; "
            f"{'nothing' if r.below == 0 else r.below} below the ground |")


LINES = {"pendulum": lambda: [pendulum(a, h, shake) for a in (60, 120) for h in (1 / 60, 1 / 240) for shake in (True, False)],
         "restitution": lambda: [restitution(1 / 240), restitution(1 / 60)],
         "stack": lambda: [stack(), stack(iterations=10, substeps=1)], "chain": lambda: [chain()],
         "pile": lambda: [pile(10), pile(50)]}

if __name__ == "__main__":
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for name in sys.argv[1:] or LINES:
        for row in LINES[name]():
            print(row, flush=True)
