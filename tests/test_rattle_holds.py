"""The contacts RATTLE's projections hold (physics.constraints.rattle, `Holds`, `hold_contacts`): a
body a static shape pushed in the velocity solve keeps its centre off that shape through the
joints' projections, and is let go where the joints would lift it (a contact pushes, never pulls)."""
import subprocess
import sys
from pathlib import Path

import numpy as np

from physics.constraints import rattle
from physics.io.scene import scene_from_dict
from physics.pipeline.simulation import Simulation
from test_rattle_active_set import dense_joint_rows

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"


def test_hold_contacts_keeps_the_directions_static_shapes_pushed_orthonormal():
    """Rows of five contact points (three rows a point, the normal last): a body pushed by a static
    shape along y and along a direction 45° from it is held in an orthonormal pair spanning both
    (checked against numpy's QR of the two), which scales a held body's motion in that plane by
    HOLD_GIVE; a third push within HOLD_SPAN of that plane, a point with no impulse and one between
    two moving bodies add nothing. Tolerance 1e-15: Gram–Schmidt steps of unit vectors."""
    B = 3
    s = np.sqrt(0.5)
    near = np.array([0.6, 0.8, 1e-4]) / np.linalg.norm([0.6, 0.8, 1e-4])
    points = [((0, -1), (0.0, 1.0, 0.0), 2.0), ((-1, 0), (s, s, 0.0), 1.0), ((0, -1), tuple(near), 1.0),
              ((1, -1), (0.0, 1.0, 0.0), 0.0), ((1, 2), (0.0, 1.0, 0.0), 3.0)]
    body = np.full((3 * len(points), 2), -1, np.int64)
    jacobian = np.zeros((3 * len(points), 2, 6))
    impulse = np.zeros(3 * len(points))
    for p, (bodies, n, lam) in enumerate(points):
        r = 3 * p + 2
        body[3 * p:3 * p + 3] = bodies
        side = 0 if bodies[0] >= 0 else 1
        jacobian[r, side, :3] = n
        impulse[r] = lam
    holds = rattle.no_holds(B)
    rattle.hold_contacts(body, jacobian, impulse, 0, holds.count, holds.normal, holds.direction)
    assert holds.count.tolist() == [2, 0, 0]
    assert np.abs(holds.direction[0, :2] - [[0.0, 1.0, 0.0], [s, s, 0.0]]).max() <= 1e-15    # the pushes themselves
    q, _ = np.linalg.qr(np.array([[0.0, 1.0, 0.0], [s, s, 0.0]]).T)
    held = holds.normal[0, :2]
    assert np.abs(held @ held.T - np.eye(2)).max() <= 1e-15
    assert np.abs(held.T @ held - q @ q.T).max() <= 1e-15       # the same plane
    v = np.array([0.3, -0.7, 0.2])
    assert rattle.held(holds, 0, tuple(v)) == tuple(v)      # held only in a projection that takes it
    holds.state[0] = rattle.HELD
    got = np.array(rattle.held(holds, 0, tuple(v)))
    assert np.abs(got - (v - (1.0 - rattle.HOLD_GIVE) * q @ q.T @ v)).max() <= 1e-15
    assert rattle.held(holds, 1, tuple(v)) == tuple(v)      # not held: the same bits
    # the part pressing into either shape goes, each push's own direction in turn; nothing else
    w = np.array(rattle.pressed_in(holds.count, holds.direction, 0, (1.0, -2.0, 0.5)))
    assert np.abs(w - [1.0, 0.0, 0.5]).max() <= 1e-15       # (y: pressed into the floor; then (s, s, 0) · w > 0)
    assert rattle.pressed_in(holds.count, holds.direction, 0, (-1.0, 2.0, 0.5)) == (-1.0, 2.0, 0.5)


def two_spheres():
    """Two spheres joined by a ball joint between them, no gravity: the lower one stands for a knot
    resting on the ground (held along +y by the test), the upper one for its neighbour."""
    ball = {"motion": "dynamic", "mass": 1.0, "inertia": [0.01, 0.02, 0.03]}
    doc = {"title": "pair", "world": {"gravity": [0, 0, 0], "integrator": "lie-midpoint", "dt": 0.01},
           "node": [{"name": "low", "translation": [0, 0, 0], **ball},
                    {"name": "high", "translation": [0.3, 0.4, 0.1], **ball}],
           "joint": [{"type": "ball", "a": "low", "b": "high", "anchor": [0.1, 0.25, 0.0]}]}
    return Simulation(scene_from_dict(doc, "pair.toml"))


def test_a_held_body_is_let_go_where_the_joints_would_lift_it():
    """RATTLE's velocity projection with the lower sphere's contact along +y, 200 random velocities:
    Δv is M̃⁻¹ Jᵀ μ, (J M̃⁻¹ Jᵀ) μ = −J v, for the one active set that is consistent, tried in numpy's
    dense solve: held, M̃⁻¹ takes the sphere's inverse mass along y as HOLD_GIVE of its own and the
    hold's reaction, −(1 − HOLD_GIVE) (Jᵀμ)_y, is ≥ 0 (a contact pushes); free, M̃⁻¹ = M⁻¹ and the
    joint does not press the sphere down, (M⁻¹ Jᵀ μ)_y ≥ 0. Tolerance 1e-9 m/s: round-off through the
    4 × 4 system, with margin. Both happen among the draws, and the projection's `Holds.state` says
    which it took."""
    sim = two_spheres()
    joints, bodies, centre, rotation, inverse_inertia, M_inv, rows, _, _ = dense_joint_rows(sim)
    B = len(centre)
    low = int(sim.model.dyn_slot[sim.names.index("low")])
    y = 6 * low + 1
    M_held = M_inv.copy()
    M_held[y, y] *= rattle.HOLD_GIVE
    rng = np.random.default_rng(3)
    outcomes = set()
    for _ in range(200):
        v = rng.normal(size=(B, 6))
        found = []
        for active, M in ((True, M_held), (False, M_inv)):
            mu = np.linalg.solve(rows @ M @ rows.T, -rows @ v.ravel())
            impulse = rows.T @ mu
            dv = M @ impulse
            if (-(1.0 - rattle.HOLD_GIVE) * impulse[y] >= -1e-12) if active else (dv[y] >= -1e-12):
                found.append((dv.reshape(B, 6), active))
        assert len(found) == 1, len(found)
        expected, active = found[0]
        outcomes.add(active)
        holds = rattle.no_holds(B)
        holds.count[low], holds.normal[low, 0], holds.direction[low, 0] = 1, (0.0, 1.0, 0.0), (0.0, 1.0, 0.0)
        got = rattle.project_velocities(joints, bodies, centre, rotation, v, sim.model.inverse_mass, inverse_inertia,
                                        holds=holds)
        assert np.abs(got - expected).max() <= 1e-9, np.abs(got - expected).max()
        assert (holds.state[low] == rattle.HELD) == active
    assert outcomes == {True, False}, outcomes


def test_a_net_lying_on_the_ground_keeps_its_knots_on_it(tmp_path):
    """The 8 × 8 net (make_scenes.py) over a ground raised to 2.5 m, so that it swings down onto it
    and its last rows lie there under the rest's pull. RATTLE's projections and its first kick move
    bodies along the joints' rows alone: without the holds a resting knot was pressed into the
    ground by them faster than the contact's split impulse pushed it out (the 64 × 64 net's knot
    fell through the ground). Over its third and fourth seconds the deepest knot is at most 1 mm
    in in nine steps of ten (measured 0.69 mm; 2.06 without the holds)."""
    path = tmp_path / "net.toml"
    subprocess.run([sys.executable, str(SCENES / "make_scenes.py"), "net", "--side", "8", "--out", str(path)],
                   check=True, capture_output=True)
    text = path.read_text()
    assert text.count("offset = 0.0 }") == 1
    path.write_text(text.replace("offset = 0.0 }", "offset = 2.5 }"))
    sim = Simulation.from_file(path)
    knots = np.array([i for i, name in enumerate(sim.names) if name.startswith("knot")])
    radius = 0.08
    sim.step(120)
    deepest = []
    for _ in range(120):
        sim.step()
        deepest.append((2.5 + radius - sim.world_poses()[0][knots, 1]).max())
    deepest = np.array(deepest)
    assert deepest.max() > -0.01, "the net lies on the ground"
    assert np.percentile(deepest, 90) <= 1e-3, np.percentile(deepest, 90)
