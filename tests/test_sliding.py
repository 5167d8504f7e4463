"""Pucks sliding on fixed tables stay on the surface (regression: frictionless box and cylinder
pucks sank through tables, because the GJK/EPA persistent manifold dropped every point of a pair
sliding more than BREAK per step; see physics.collision._manifold).

A puck 0.4 × 0.1 × 0.4 (box) or r 0.2, height 0.1 (cylinder) starts resting on a fixed table whose
top is y = 0.6, sliding at (0.8, 0, −1.6) m/s (1.79 m/s: 0.03 m a step at 60 Hz), and runs 2 s
(120 steps), staying on the table. Penetration = table top − the puck's lowest point.
"""
import numpy as np
import pytest

from physics.scene import scene_from_dict
from physics.simulation import Simulation

TOP = 0.6
V0 = np.array([0.8, 0.0, -1.6])
STEPS = 120   # 2 s at the default dt = 1/60
# The first step has one EPA point only (the manifold collects its others over the next steps), so
# the puck rocks and a corner dips up to 4.8 mm (measured); 6 mm bounds that. From 10 steps on the
# contact is settled: at the solver's slop (0.5 mm) plus the rocking left, 1.1 mm measured; 2 mm.
# The bug gave 0.1 m and then falling through.
PENETRATION, SETTLED, SETTLE_STEPS = 6e-3, 2e-3, 10
TABLES = {"box": {"type": "box", "size": [8.0, 0.2, 8.0]}, "cylinder": {"type": "cylinder", "radius": 4.0, "height": 0.2}}
PUCKS = {"box": {"type": "box", "size": [0.4, 0.1, 0.4]}, "cylinder": {"type": "cylinder", "radius": 0.2, "height": 0.1}}


def simulation(puck, table, friction):
    scene = scene_from_dict({"node": [
        {"name": "table", "translation": [0.0, 0.5, 0.0], "shape": TABLES[table]},
        # starts at (−1.6, ·, 1.6): frictionless, 2 s later it is at (0, ·, −1.6), still on the table
        {"name": "puck", "motion": "dynamic", "translation": [-1.6, TOP + 0.05, 1.6], "velocity": V0.tolist(),
         "friction": friction, "shape": PUCKS[puck]},
    ]})
    return Simulation(scene)


def lowest(kind, centre_y, rotation):
    """The puck's lowest y: box, centre − Σ |R_y,i| h_i; cylinder, centre − h |R_yy| − r √(1 − R_yy²)."""
    if kind == "box":
        return centre_y - np.abs(rotation[1]) @ np.array([0.2, 0.05, 0.2])
    up = abs(rotation[1, 1])
    return centre_y - 0.05 * up - 0.2 * np.sqrt(max(1.0 - up * up, 0.0))


def run(puck, table, friction):
    sim = simulation(puck, table, friction)
    node = sim.names.index("puck")
    depth, speeds = [], []
    for _ in range(STEPS):
        sim.step(1)
        t, r, _ = sim.world_poses()
        depth.append(TOP - lowest(puck, t[node, 1], r[node]))
        speeds.append(np.hypot(*sim.world().velocity[node, [0, 2]]))
    return np.array(depth), np.array(speeds), sim.world_poses()[0][node]


@pytest.mark.parametrize("table", ["cylinder", "box"])
@pytest.mark.parametrize("puck", ["box", "cylinder"])
def test_frictionless_puck_slides_on_the_surface(puck, table):
    depth, speeds, end = run(puck, table, 0.0)
    assert depth.max() <= PENETRATION, f"penetrates {depth.max():.4f} m"
    assert depth[SETTLE_STEPS:].max() <= SETTLED, f"penetrates {depth[SETTLE_STEPS:].max():.4f} m once settled"
    assert depth.min() >= -1e-3, f"lifts off {-depth.min():.4f} m"   # resting: no hop above 1 mm
    # no friction, a horizontal normal impulse only from rounding: the horizontal speed is conserved
    # (1 %: the normal's tilt by the puck's rocking, ~1e-3 rad, couples a little of the vertical)
    np.testing.assert_allclose(speeds, np.linalg.norm(V0), rtol=1e-2)
    np.testing.assert_allclose(end[[0, 2]], [-1.6 + 2.0 * V0[0], 1.6 + 2.0 * V0[2]], atol=0.02)


@pytest.mark.parametrize("table", ["cylinder", "box"])
@pytest.mark.parametrize("puck", ["box", "cylinder"])
def test_rough_puck_stops_on_the_surface(puck, table):
    """Friction 0.6 (the table's default 0.6 too, mixed as √(μa μb)): Coulomb's cone decelerates
    the puck at μ g, stopping it after d = v0² / (2 μ g) = 0.272 m. The solver's friction is a
    pyramid (two tangent rows, each clamped to μ λn), which gives up to √2 μ λn when the slide is
    diagonal to its tangent basis, as here: so d/√2 <= distance <= d (0.210 m measured)."""
    mu = np.sqrt(0.6 * simulation(puck, table, 0.6).scene.friction[0])
    depth, speeds, end = run(puck, table, 0.6)
    assert depth.max() <= PENETRATION, f"penetrates {depth.max():.4f} m"
    assert depth[SETTLE_STEPS:].max() <= SETTLED, f"penetrates {depth[SETTLE_STEPS:].max():.4f} m once settled"
    assert speeds[-1] < 1e-3
    d = np.linalg.norm(V0) ** 2 / (2 * mu * 9.81)
    distance = np.linalg.norm(end[[0, 2]] - [-1.6, 1.6])
    # 2 %: the stop is discretized at up to 0.03 m a step
    assert d / np.sqrt(2) * 0.98 <= distance <= d * 1.02
