"""The transport-theorem decomposition of a node's acceleration (`Simulation.acceleration_terms`),
checked against closed forms on a turntable and against finite differences of the run's own
trajectory (world velocities, and poses in the frame's axes)."""
import numpy as np
import pytest

from physics.math.relative_motion import relative_velocity, transport_terms
from physics.io.scene import scene_from_dict
from physics.pipeline.simulation import Simulation

OMEGA = 0.8     # rad/s, the turntable's spin about the world y axis


def make(nodes, **world):
    return Simulation(scene_from_dict({"world": world, "node": nodes}))


def turntable(**world):
    """A kinematic table turning at OMEGA about y through (0, 0.5, 0); a fixed marker on it at
    r = (1.5, 0.1, 0); a free body (no gravity, no shapes) starting at rest in the world at
    (−2, 0.1, 1) on it (local velocity −ω × T)."""
    T = np.array([-2.0, 0.1, 1.0])
    v_local = -np.cross([0.0, OMEGA, 0.0], T)
    return make([
        {"name": "table", "motion": "kinematic", "translation": [0.0, 0.5, 0.0], "angular_velocity": [0.0, OMEGA, 0.0]},
        {"name": "marker", "parent": "table", "translation": [1.5, 0.1, 0.0]},
        {"name": "puck", "parent": "table", "motion": "dynamic", "translation": list(T), "velocity": list(v_local),
         "mass": 0.5, "inertia": [0.1, 0.1, 0.1]},
    ], gravity=[0.0, 0.0, 0.0], **world)


def test_a_point_riding_a_turntable_has_centrifugal_omega_squared_r():
    """The marker fixed on the table at distance r from the axis: seen from the table, centrifugal
    = ω × (ω × r) = −ω² r_⊥ (|.| = ω² r), nothing relative, no Coriolis, no Euler term (constant ω)
    and no frame acceleration (the axis is still); seen from the world it is all relative. 1e-12:
    round-off of a few products of numbers of order 1 (the closed form has no truncation error)."""
    sim = turntable()
    sim.step(37)
    marker = sim.names.index("marker")
    x = sim.world_poses()[0][marker]
    r_perp = x - np.array([0.0, x[1], 0.0])
    assert np.linalg.norm(r_perp) == pytest.approx(1.5, abs=1e-12)
    terms = sim.acceleration_terms("marker", frame="table")
    np.testing.assert_allclose(terms["centrifugal"], -OMEGA ** 2 * r_perp, atol=1e-12)
    assert np.linalg.norm(terms["centrifugal"]) == pytest.approx(OMEGA ** 2 * 1.5, abs=1e-12)
    for name in ("relative", "constraint", "frame", "euler", "coriolis"):
        np.testing.assert_allclose(terms[name], 0.0, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(terms["world"], -OMEGA ** 2 * r_perp, atol=1e-12)
    seen_from_world = sim.acceleration_terms(marker)
    np.testing.assert_allclose(seen_from_world["relative"], terms["world"], atol=1e-12)
    for name in ("frame", "euler", "centrifugal", "coriolis"):
        assert not seen_from_world[name].any(), name


def test_a_body_at_rest_in_the_world_curves_on_the_table():
    """A free body at rest in the world, seen from the turning table: v_rel = −ω × r, so Coriolis
    2 ω × v_rel = 2 ω² r_⊥ and centrifugal ω × (ω × r) = −ω² r_⊥; no force acts (world acceleration
    0), so the relative acceleration is −ω² r_⊥: centripetal, the body circles the axis on the
    table at speed ω r. 1e-9: lie-midpoint-4 keeps the free body still to round-off over 100 steps."""
    sim = turntable(integrator="lie-midpoint-4")
    sim.step(100)
    x = sim.world_poses()[0][sim.names.index("puck")]
    np.testing.assert_allclose(x, [-2.0, 0.6, 1.0], atol=1e-9)
    terms = sim.acceleration_terms("puck", frame="table")
    r_perp = x - np.array([0.0, x[1], 0.0])
    np.testing.assert_allclose(terms["world"], 0.0, atol=1e-9)
    np.testing.assert_allclose(terms["centrifugal"], -OMEGA ** 2 * r_perp, atol=1e-9)
    np.testing.assert_allclose(terms["coriolis"], 2 * OMEGA ** 2 * r_perp, atol=1e-9)
    np.testing.assert_allclose(terms["relative"], -OMEGA ** 2 * r_perp, atol=1e-9)


# A parent that accelerates and turns ever faster about a tilted axis, a free body under gravity on
# it, and a second free body on that one: every transport term is non-zero and changes over time.
CHAIN = [
    {"name": "base", "motion": "kinematic", "translation": [0.5, 1.0, -0.3], "velocity": [1.0, 0.0, 0.5],
     "acceleration": [0.4, 0.2, -0.3], "angular_velocity": [0.3, 1.1, -0.2], "angular_acceleration": [0.2, 0.5, 0.1]},
    {"name": "body", "parent": "base", "motion": "dynamic", "translation": [1.2, 0.3, -0.4],
     "velocity": [0.2, 0.6, -0.3], "angular_velocity": [0.5, -0.4, 1.0], "mass": 2.0, "inertia": [1.0, 2.0, 3.0]},
    {"name": "rider", "parent": "body", "motion": "dynamic", "translation": [0.0, 0.8, 0.3],
     "velocity": [-0.4, 0.1, 0.2], "mass": 1.0, "inertia": [0.2, 0.3, 0.4]},
]
H = 1.0 / 2000.0


@pytest.fixture(scope="module")
def chain_run():
    """World poses, velocities and the decomposition at steps 99, 100, 101 of CHAIN (rk4, h = 1/2000)."""
    sim = make(CHAIN, dt=H, integrator="rk4", gyroscopic="explicit")
    sim.step(99)
    states = []
    for _ in range(3):
        world = sim.world()
        states.append({
            "x": np.array(world.transform.translation), "R": np.array(world.transform.rotation),
            "v": np.array(world.velocity),
            "terms": {f: sim.acceleration_terms(["base", "body", "rider"], frame=f) for f in ("world", "base", "body", "rider")},
        })
        sim.step(1)
    return sim, states


# Every node follows to the finite difference's own error and rk4's, O(h⁴): the rider too, whose
# parent is a dynamic body (a tree's bodies are integrated parents first, physics.pipeline.simulation).
TOLERANCE = 1e-6     # m/s²


@pytest.mark.parametrize("frame", ["world", "base", "body", "rider"])
@pytest.mark.parametrize("node", ["base", "body", "rider"])
def test_the_terms_sum_to_the_central_difference_of_the_world_velocity(chain_run, frame, node):
    """Σ terms at step 100 = (v(101) − v(99)) / 2h, the world acceleration by finite differences of
    the run's world velocities. The central difference errs by h² |d³v/dt³| / 6 ≈ 4e-8 · 10 m/s⁴
    plus rk4's error, O(h⁵) a step: TOLERANCE = 1e-6 m/s². The sum is the reported
    world acceleration to round-off (1e-12)."""
    sim, states = chain_run
    k = ["base", "body", "rider"].index(node)
    i = sim.names.index(node)
    finite_difference = (states[2]["v"][i] - states[0]["v"][i]) / (2 * H)
    terms = states[1]["terms"][frame]
    total = sum(terms[name][k] for name in ("relative", "constraint", "frame", "euler", "centrifugal", "coriolis"))
    np.testing.assert_allclose(total, terms["world"][k], atol=1e-12)
    np.testing.assert_allclose(total, finite_difference, atol=TOLERANCE)


@pytest.mark.parametrize("node, frame", [("body", "base"), ("base", "body"), ("body", "world")])
def test_the_relative_term_is_the_second_difference_of_the_pose_in_the_frame(chain_run, node, frame):
    """relative + constraint = R_F d²p̃/dt², p̃ = R_Fᵀ (x − x_F) the node in the frame's axes, here
    by the second central difference of p̃ over steps 99-101: error h² |d⁴p̃/dt⁴| / 12 = 2e-8 |d⁴p̃/dt⁴|
    (the base seen from the tumbling body: 1.7e-6 m/s² measured, |d⁴p̃/dt⁴| ≈ 80 m/s⁴) plus
    round-off ε |p̃| / h² ≈ 1e-9: 1e-6 relative to the acceleration (~12 m/s²). This check uses only poses;
    the terms come from the frame's velocities. The Euler and Coriolis terms are not small here."""
    sim, states = chain_run
    k = ["base", "body", "rider"].index(node)
    i = sim.names.index(node)
    if frame == "world":
        p = [s["x"][i] for s in states]
        to_world = np.eye(3)
    else:
        f = sim.names.index(frame)
        p = [s["R"][f].T @ (s["x"][i] - s["x"][f]) for s in states]
        to_world = states[1]["R"][f]
    second_difference = to_world @ ((p[2] - 2 * p[1] + p[0]) / H ** 2)
    terms = states[1]["terms"][frame]
    if frame != "world":
        assert np.linalg.norm(terms["coriolis"][k]) > 0.1 and np.linalg.norm(terms["euler"][k]) > 0.1
    np.testing.assert_allclose(terms["relative"][k] + terms["constraint"][k], second_difference,
                               atol=1e-6 * max(1.0, np.linalg.norm(second_difference)))


def test_seen_from_the_parent_the_terms_are_the_negated_inertial_accelerations():
    """With the parent as frame, frame/Euler/centrifugal/Coriolis are the negatives of
    `inertial_accelerations()` (the fictitious accelerations the integrator applies), computed
    there from local state: equal to round-off (1e-12)."""
    sim = make(CHAIN, dt=1 / 240, integrator="rk4")
    sim.step(30)
    inertial = sim.inertial_accelerations()
    body, rider = sim.names.index("body"), sim.names.index("rider")
    for node, parent in ((body, "base"), (rider, "body")):
        terms = sim.acceleration_terms(node, frame=parent)
        for name in ("frame", "euler", "centrifugal", "coriolis"):
            np.testing.assert_allclose(terms[name], -inertial[name][node], atol=1e-12, err_msg=f"{node} {name}")


def test_the_constraint_share_is_the_solvers():
    """A box resting on the ground: its world acceleration is ~0, gravity is cancelled by the
    contact's share (constraint ≈ +g) and the relative term holds the free fall (≈ −g)."""
    sim = make([{"name": "ground", "shape": {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}},
                {"name": "box", "motion": "dynamic", "translation": [0.0, 0.5, 0.0], "mass": 1.0,
                 "shape": {"type": "box", "size": [1.0, 1.0, 1.0]}}], sleep=False)
    sim.step(60)
    terms = sim.acceleration_terms("box")
    linear, _ = sim.constraint_accelerations()
    np.testing.assert_array_equal(terms["constraint"], linear[1])
    np.testing.assert_allclose(terms["constraint"], [0.0, 9.81, 0.0], atol=0.05)
    np.testing.assert_allclose(terms["relative"], [0.0, -9.81, 0.0], atol=0.05)


def test_bad_input_is_named():
    sim = turntable()
    with pytest.raises(ValueError, match="unknown node 'nope'"):
        sim.acceleration_terms("nope")
    with pytest.raises(ValueError, match="unknown node 'nope'"):
        sim.acceleration_terms("puck", frame="nope")
    with pytest.raises(ValueError, match=r"frame_x: got shape \(2, 3\); expected \(1, 3\)"):
        transport_terms(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((2, 3)), *[np.zeros((1, 3))] * 4)
    np.testing.assert_array_equal(relative_velocity([[1.0, 0, 0]], [[0, 0, 0]], [[0, 0, 0]], [[0, 0, 0]], [[0, 0, 1.0]]),
                                  [[0.0, -1.0, 0.0]])
