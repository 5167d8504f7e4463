"""The Simulation: motion types, wiring of the stages, live settings, invariants, shipped scenes."""
from pathlib import Path

import numpy as np
import pytest

from physics.math.rotation import matrix_from_quaternion
from physics.io.scene import scene_from_dict
from physics.pipeline.simulation import Simulation

SCENES = sorted((Path(__file__).resolve().parent.parent / "assets" / "scenes").glob("*.toml"))


def make(nodes, **world):
    return Simulation(scene_from_dict({"world": world, "node": nodes}))


def _exp(w):
    """Rotation matrix exp(hat(w)) by Rodrigues, written out here independently of physics.*"""
    angle = np.linalg.norm(w)
    k = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]) / angle
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def test_kinematic_node_follows_its_closed_form():
    """Constant a and parallel omega, alpha: T = T0 + v t + a t²/2, R = exp(hat(omega t + alpha t²/2)) R0
    (exact for parallel omega and alpha, so only round-off remains: 1e-12)."""
    sim = make([{"name": "k", "motion": "kinematic", "translation": [1.0, 2.0, 3.0], "velocity": [0.5, 0.0, -1.0],
                 "acceleration": [0.0, -2.0, 0.3], "angular_velocity": [0.0, 0.0, 1.5],
                 "angular_acceleration": [0.0, 0.0, -0.4], "rotation": [0.8, 0.6, 0.0, 0.0]}], dt=0.01)
    sim.step(137)
    t = sim.time
    world = sim.world()
    np.testing.assert_allclose(world.transform.translation[0],
                               np.array([1.0, 2.0, 3.0]) + np.array([0.5, 0.0, -1.0]) * t + 0.5 * np.array([0.0, -2.0, 0.3]) * t * t,
                               atol=1e-12)
    expected = _exp(np.array([0.0, 0.0, 1.5 * t - 0.2 * t * t])) @ matrix_from_quaternion(np.array([0.8, 0.6, 0.0, 0.0]))
    np.testing.assert_allclose(world.transform.rotation[0], expected, atol=1e-12)
    np.testing.assert_allclose(world.omega_vector()[0], [0.0, 0.0, 1.5 - 0.4 * t], atol=1e-12)


def test_fixed_child_is_rigidly_attached():
    sim = make([{"name": "k", "motion": "kinematic", "angular_velocity": [0.3, 1.0, 0.0], "velocity": [1.0, 0.0, 0.0]},
                {"name": "f", "parent": "k", "translation": [2.0, 0.0, 0.0], "scale": 0.5}])
    before = sim.local()
    sim.step(50)
    after = sim.local()
    np.testing.assert_array_equal(after.transform.translation[1], before.transform.translation[1])
    np.testing.assert_array_equal(after.transform.rotation[1], before.transform.rotation[1])


BODY = {"motion": "dynamic", "translation": [0.3, 1.0, -0.2], "rotation": [0.9, 0.1, 0.3, 0.3],
        "velocity": [1.0, 2.0, 0.5], "angular_velocity": [0.4, 2.0, -0.3], "mass": 2.0, "inertia": [1.0, 2.0, 3.0]}


def test_galilean_invariance_of_a_nested_body():
    """A body simulated inside a kinematic parent that translates uniformly (no rotation), with the
    same initial world velocity, has the same world trajectory as the body parented to the world. 1e-9: the two integrate different
    but equal-in-exact-arithmetic numbers (local vs world coordinates) over 200 steps."""
    alone = make([dict(BODY, name="b")], integrator="lie-midpoint", gravity=[0.0, -9.81, 0.0])
    carrier_velocity = np.array([3.0, -1.0, 2.0])
    world_rotation = matrix_from_quaternion(np.array([0.9, 0.1, 0.3, 0.3]))
    nested_body = dict(BODY, name="b", parent="carrier",
                       velocity=(np.array(BODY["velocity"]) - carrier_velocity).tolist())
    nested = make([{"name": "carrier", "motion": "kinematic", "velocity": carrier_velocity.tolist()}, nested_body],
                  integrator="lie-midpoint", gravity=[0.0, -9.81, 0.0])
    alone.step(200)
    nested.step(200)
    a, b = alone.world(), nested.world()
    np.testing.assert_allclose(b.transform.translation[1], a.transform.translation[0], atol=1e-9)
    np.testing.assert_allclose(b.transform.rotation[1], a.transform.rotation[0], atol=1e-9)
    np.testing.assert_allclose(b.velocity[1], a.velocity[0], atol=1e-9)
    assert np.linalg.norm(world_rotation - a.transform.rotation[0]) > 0.1  # it did move


def test_free_bodies_conserve_momenta_and_energy_with_the_conservative_integrator():
    """No gravity, lie-midpoint: energy, linear and angular momentum about the origin conserved
    to round-off (1e-12 relative over 600 steps) — the claim of docs/fidelity.md, measured through the
    Simulation's own energy() and momentum()."""
    sim = make([dict(BODY, name="a"), dict(BODY, name="b", translation=[2.0, 0.0, 0.0], angular_velocity=[0.01, 5.0, 0.0])],
               integrator="lie-midpoint", gravity=[0.0, 0.0, 0.0])
    e0, m0 = sim.energy()["kinetic"], sim.momentum()
    sim.step(600)
    assert abs(sim.energy()["kinetic"] - e0) <= 1e-12 * e0
    np.testing.assert_allclose(sim.momentum()["linear"], m0["linear"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sim.momentum()["angular"], m0["angular"], rtol=1e-12, atol=1e-11)


def test_gravity_changes_momentum_by_m_g_t_and_energy_is_shared():
    """Uniform gravity: P(t) = P0 + m g t exactly for a scheme exact on constant force (semi-implicit
    Euler's velocity update is); total energy within O(dt) of constant (1e-2 J relative bound)."""
    sim = make([dict(BODY, name="a")], integrator="semi-implicit-euler", dt=0.01)
    p0, e0 = sim.momentum()["linear"], sum(sim.energy().values())
    sim.step(100)
    np.testing.assert_allclose(sim.momentum()["linear"], p0 + 2.0 * np.array([0.0, -9.81, 0.0]) * sim.time, atol=1e-12)
    assert abs(sum(sim.energy().values()) - e0) < 1e-2 * abs(e0) + 1.0


def test_nested_dynamic_bodies_keep_their_world_acceleration():
    """A dynamic child of a spinning dynamic parent (two generations): its world acceleration is g,
    whatever the parent does — the generations in _sync settle the parent's acceleration first."""
    sim = make([dict(BODY, name="parent"),
                dict(BODY, name="child", parent="parent", translation=[0.5, 0.2, 0.0])], dt=0.01)
    sim.step(5)
    world = sim.world()
    np.testing.assert_allclose(world.acceleration, [[0.0, -9.81, 0.0]] * 2, atol=1e-12)


def test_inertial_terms_add_up_to_the_local_acceleration():
    """a1 = J2⁻¹ (F/m + constraint + frame + euler + centrifugal + coriolis) for every dynamic body
    ("The Dynamics of a Transform Hierarchy"; the pucks rest on the turntable, so the contact forces'
    share is part of it).
    1e-12: the same arithmetic by another route, round-off only."""
    sim = Simulation.from_file(next(p for p in SCENES if p.name == "turntable.toml"))
    sim.set("gravity", [0.0, -9.81, 0.0])
    sim.step(10)
    terms = sim.inertial_accelerations()
    constraint, _ = sim.constraint_accelerations()
    world, local = sim.world(), sim.local()
    for i in np.flatnonzero(sim.motion == "dynamic"):
        p = sim.parent[i]
        total = np.array([0.0, -9.81, 0.0]) + constraint[i] + sum(terms[name][i] for name in terms)
        np.testing.assert_allclose(local.acceleration[i],
                                   world.transform.rotation[p].T @ total / world.transform.scale[p], atol=1e-12)
    assert np.linalg.norm(terms["coriolis"][sim.names.index("puck_blue")]) > 0.1
    assert np.all(terms["centrifugal"][sim.motion != "dynamic"] == 0.0)


def test_settings_switch_live_and_bad_values_are_named():
    sim = Simulation.from_file(next(p for p in SCENES if p.name == "t_handle.toml"))
    for name, value in (("integrator", "rk4"), ("gyroscopic", "off"), ("rotation_update", "magnus1"),
                        ("exponential", "truncated"), ("counteract", False), ("gravity", [0.0, -1.0, 0.0]),
                        ("dt", 0.005), ("substeps", 3), ("integrator", "lie-midpoint-4"), ("gyroscopic", "explicit")):
        sim.set(name, value)
        sim.step(3)
    assert np.isfinite(sim.energy()["kinetic"])
    with pytest.raises(ValueError, match=r"'integrator'.*'verlet'"):
        sim.set("integrator", "verlet")
    with pytest.raises(ValueError, match=r"'dt'.*-1"):
        sim.set("dt", -1)
    assert sim.settings.integrator == "lie-midpoint-4" and sim.settings.dt == 0.005


def test_gyroscopic_off_means_no_flip():
    sim = Simulation.from_file(next(p for p in SCENES if p.name == "t_handle.toml"))
    sim.set("gyroscopic", "off")
    sim.step(300)  # 5 s: with the term, the handle flips at 2.63 s
    np.testing.assert_allclose(sim.world().transform.rotation[0] @ [0.0, 1.0, 0.0], [0.0, 1.0, 0.0], atol=0.1)
    omega_body = sim.world().transform.rotation[0].T @ sim.world().omega_vector()[0]
    np.testing.assert_allclose(omega_body, [0.01, 5.0, 0.0], atol=1e-12)


def test_substeps_equal_smaller_steps():
    a = make([dict(BODY, name="a")], dt=0.02, substeps=2)
    b = make([dict(BODY, name="a")], dt=0.01, substeps=1)
    a.step(10)
    b.step(20)
    np.testing.assert_allclose(a.world().transform.translation, b.world().transform.translation, atol=1e-13)
    assert a.time == pytest.approx(b.time, abs=1e-14)


def test_reset_restores_the_file_state():
    sim = Simulation.from_file(next(p for p in SCENES if p.name == "tank.toml"))
    first = sim.world().transform.translation.copy()
    sim.step(30)
    sim.reset()
    assert sim.time == 0.0
    np.testing.assert_array_equal(sim.world().transform.translation, first)


def test_interface_attributes():
    sim = Simulation.from_file(next(p for p in SCENES if p.name == "tank.toml"))
    n = len(sim.names)
    assert sim.parent.shape == (n,) and sim.motion.shape == (n,) and sim.colors.shape == (n, 3)
    assert len(sim.shapes) == n and sim.mass.shape == (n,) and sim.inertia_body.shape == (n, 3)
    points, normals = sim.contacts()
    assert points.shape == (0, 3) and normals.shape == (0, 3)
    with pytest.raises(ValueError, match="-1"):
        sim.step(-1)


@pytest.mark.parametrize("name", ["tank.toml", "car.toml"])
def test_world_poses_are_the_poses_of_world(name):
    """`world_poses()` (the viewer's cheap query: no acceleration pass) against the full
    `world()`, right after steps (nothing settled), after an impulse, and after a full query:
    the same numbers (one compiled pass computes both, so exactly equal), and copies that a
    later step leaves alone."""
    sim = Simulation.from_file(next(p for p in SCENES if p.name == name))
    for steps in (0, 1, 7):
        sim.step(steps)
        poses = sim.world_poses()
        if name == "car.toml":
            sim.apply_impulse(int(np.flatnonzero(sim.motion == "dynamic")[0]), [0.0, 0.0, 1.0])
            poses_after = sim.world_poses()
        world = sim.world().transform
        expected = (world.translation, world.rotation, world.scale)
        for got, want in zip(poses_after if name == "car.toml" else poses, expected):
            np.testing.assert_array_equal(got, np.asarray(want).reshape(got.shape))
        again = sim.world_poses()
        for got, want in zip(again, expected):
            np.testing.assert_array_equal(got, np.asarray(want).reshape(got.shape))
    before = [a.copy() for a in again]
    sim.step(3)
    for got, want in zip(again, before):
        np.testing.assert_array_equal(got, want)
    assert again[0].shape == (len(sim.names), 3) and again[1].shape == (len(sim.names), 3, 3)
    assert again[2].shape == (len(sim.names),)


# The contact-free scenes run the full 10^4 steps here; scenes with contacts and joints run fewer
# steps in tests/test_scenes.py (with energy and bound checks), their 10^4-step runs are in the
# runner (`python -m physics run SCENE --steps 10000`), reported in docs/fidelity.md.
CONTACT_FREE = ["t_handle.toml", "gyroscope.toml"]


@pytest.mark.parametrize("path", [p for p in SCENES if p.name in CONTACT_FREE], ids=lambda p: p.stem)
def test_shipped_scene_runs_ten_thousand_steps_without_nan(path):
    sim = Simulation.from_file(path)
    for _ in range(10):
        sim.step(1000)
        assert sim.first_non_finite() is None, f"{path.name}: non-finite state at t = {sim.time}"
    assert sim.time == pytest.approx(10_000 * sim.settings.dt)


def test_resting_bodies_report_the_acceleration_of_what_holds_them():
    """Contact forces are part of the reported acceleration (physics.pipeline.stages.forces, 'reported'): a box
    in a settled stack reports a ≈ 0, not −g; a crate riding the tank's turning deck reports the
    deck's acceleration in the world (centripetal, non-zero) and ≈ 0 relative to its parent.
    0.1 m/s² (1 % of g): what 10 PGS iterations leave of the contact residual on a 10-box stack."""
    stack = Simulation.from_file(next(p for p in SCENES if p.name == "stack.toml"))
    stack.step(240)
    boxes = np.flatnonzero(stack.motion == "dynamic")
    assert np.abs(stack.world().acceleration[boxes]).max() < 0.1
    linear, _ = stack.constraint_accelerations()
    np.testing.assert_allclose(linear[boxes, 1], 9.81, atol=0.1)     # the support carries the weight

    tank = Simulation.from_file(next(p for p in SCENES if p.name == "tank.toml"))
    tank.step(240)
    crates = [i for i, name in enumerate(tank.names) if name.startswith("crate")]
    assert crates
    assert np.abs(tank.local().acceleration[crates]).max() < 0.1
    assert np.linalg.norm(tank.world().acceleration[crates], axis=1).min() > 0.3


def test_energy_and_momentum_of_a_subtree():
    """The car and its cargo: energy and momenta of the subtree from the world state by the textbook
    formulas (½ m v² + ½ ω·(R I Rᵀ ω), −m g·x; Σ m v; Σ x × m v + R I Rᵀ ω) with world ω, not the
    integrators' omega_body; roots' subtrees add up to the whole. Tolerance 1e-12 relative: the
    same sums in another order and frame."""
    sim = Simulation.from_file(next(p for p in SCENES if p.stem == "car"))
    sim.step(90)                                 # through the crash: cargo tumbling
    world = sim.world()
    car = sim.names.index("car")
    inside = [i for i in range(len(sim.names)) if sim.motion[i] == "dynamic"
              and (i == car or car in _ancestors(sim.parent, i))]
    assert len(inside) >= 3
    kinetic = potential = 0.0
    linear, angular = np.zeros(3), np.zeros(3)
    for i in inside:
        R, v, w = world.transform.rotation[i], world.velocity[i], world.omega_vector()[i]
        inertia_world = R @ np.diag(sim.inertia_body[i]) @ R.T
        kinetic += 0.5 * sim.mass[i] * v @ v + 0.5 * w @ inertia_world @ w
        potential -= sim.mass[i] * world.transform.translation[i] @ sim.settings.gravity
        linear += sim.mass[i] * v
        angular += np.cross(world.transform.translation[i], sim.mass[i] * v) + inertia_world @ w
    energy, momentum = sim.energy(subtree="car"), sim.momentum(subtree=car)
    assert energy["kinetic"] == pytest.approx(kinetic, rel=1e-12)
    assert energy["potential"] == pytest.approx(potential, rel=1e-12)
    np.testing.assert_allclose(momentum["linear"], linear, rtol=1e-12)
    np.testing.assert_allclose(momentum["angular"], angular, rtol=1e-12, atol=1e-12 * np.abs(angular).max())
    roots = np.flatnonzero(sim.parent < 0)
    assert sum(sim.energy(subtree=int(r))["kinetic"] for r in roots) == pytest.approx(sim.energy()["kinetic"], rel=1e-12)


def _ancestors(parent, i):
    out = []
    while parent[i] >= 0:
        i = parent[i]
        out.append(i)
    return out
