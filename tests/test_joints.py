"""Joints (physics.constraints.constraints) through Simulation.step: the pendulum's period against the exact
elliptic-integral period, a chain's energy with the relax stage, the shipped chain's under RATTLE,
and a user constraint's Jacobian by dual numbers against the analytic distance row."""
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ellipk

from physics.pipeline import stages
from physics.constraints.joints import DISTANCE, Joints, function_rows
from physics.math.rotation import random_matrix
from physics.io.scene import load_scene, scene_from_dict
from physics.pipeline.simulation import Simulation

PIVOT = np.array([0.0, 2.0, 0.0])


INERTIA = {"ball": 0.004, "distance": 1e-6}   # a 0.1 m solid sphere (rigid link: physical pendulum); a point mass


def pendulum(theta0, h, kind="ball", shape=None, **world):
    bob = PIVOT + [np.sin(theta0), -np.cos(theta0), 0.0]
    node = {"name": "bob", "motion": "dynamic", "mass": 1.0, "inertia": [INERTIA[kind]] * 3, "translation": bob.tolist()}
    if shape is not None:
        node["shape"] = shape
    joint = {"type": kind, "b": "bob", "anchor": PIVOT.tolist()}
    if kind == "distance":
        joint["anchor_b"] = bob.tolist()
    return Simulation(scene_from_dict({"node": [node], "joint": [joint], "world": {"dt": h, **world}}))


@pytest.mark.parametrize("kind", ["ball", "distance"])
def test_pendulum_period_matches_elliptic_integral(kind):
    theta0, h = np.radians(60.0), 1 / 240
    # Exact period of a physical pendulum, L = 1 m: L_eff = (I_cm + m L²) / (m L), K(k²) with k = sin(θ₀/2).
    period = 4 * np.sqrt((INERTIA[kind] + 1.0) / 9.81) * ellipk(np.sin(theta0 / 2) ** 2)
    sim = pendulum(theta0, h, kind)
    x = []
    for _ in range(int(2.2 * period / h)):
        sim.step(1)
        x.append(sim.world().transform.translation[0, 0])
    x = np.array(x)
    t = (np.arange(len(x)) + 1) * h
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    crossing = t[down] + h * x[down] / (x[down] - x[down + 1])    # linear interpolation in the step
    measured = np.diff(crossing).mean()
    assert measured == pytest.approx(period, rel=5e-3)            # the goal's bound, 0.5 %
    length = np.linalg.norm(sim.world().transform.translation[0] - PIVOT)
    # Joint error: RATTLE projects the positions onto the joint after every sub-step (to 1e-12 m;
    # the velocity solve's Baumgarte alone left 1.2–1.7 mm); bound 0.2 mm.
    assert length == pytest.approx(1.0, abs=2e-4)


@pytest.mark.parametrize("degrees", [60.0, 120.0])
def test_pendulum_energy_oscillates_without_drift(degrees):
    theta0, h = np.radians(degrees), 1 / 240
    period = 4 * np.sqrt((INERTIA["ball"] + 1.0) / 9.81) * ellipk(np.sin(theta0 / 2) ** 2)
    sim = pendulum(theta0, h, shake=True, substeps=1)     # semi-implicit Euler's joints by SHAKE
    e0 = sum(sim.energy().values())
    swing = 9.81 * (1 - np.cos(theta0))                  # m g L (1 − cos θ₀): the energy that moves
    steps = int(10 * period / h)
    energy, error = np.empty(steps), np.empty(steps)
    for k in range(steps):
        sim.step(1)
        energy[k] = (sum(sim.energy().values()) - e0) / swing
        error[k] = abs(np.linalg.norm(sim.world().transform.translation[0] - PIVOT) - 1.0)
    t = (np.arange(steps) + 1) * h
    slope = np.polyfit(t, energy, 1)[0] * period        # fraction of the swing energy per period
    # SHAKE is symplectic: the energy oscillates at O(h) (measured ±0.6 % at 60°, ±0.54 % at 120°)
    # and does not drift (measured slope < 1e-4 per period; the start-of-step projection without
    # SHAKE's velocity lost 2.4 % and 5 % per period). Bounds: the goal's ±2.5 % band, and a drift
    # below 0.05 % of the swing energy per period (0.5 % over the 10 periods).
    assert np.abs(energy).max() <= 0.025
    assert abs(slope) <= 5e-4
    # Joint error: the 3×3 block solves make the projection exact (measured < 1e-6 mm); the goal's 0.1 mm.
    assert error.max() <= 1e-4


@pytest.mark.parametrize("world, rise", [({"integrator": "implicit-euler"}, 1e-9), ({}, 0.5)], ids=["velocity solve", "defaults"])
def test_chain_energy_never_grows_with_relax(world, rise):
    """A 10-link chain of capsules that meet at the joints (jointed links do not collide), released
    horizontal, 5 s at dt 1/60 with the relax stage. Through the velocity solve and the position
    projection (implicit Euler's joints) the energy never exceeds the released energy (1e-9 J of
    round-off; step to step it is not monotone: the position correction moves links in the
    potential, rises up to ~0.07 J a step). With the defaults (semi-implicit Euler's joints by
    RATTLE, three sub-steps) it is symplectic: it oscillates, at most 0.5 J above the release (of
    147 J; measured 0.37 J at the free end's whip cracks), and loses 5 % in the cracks' halved steps."""
    links, spacing = 10, 0.3
    nodes, joints = [], [{"type": "ball", "b": "link0", "anchor": [0.0, 3.0, 0.0]}]
    for i in range(links):
        nodes.append({"name": f"link{i}", "motion": "dynamic", "mass": 0.5, "translation": [spacing * (i + 0.5), 3.0, 0.0],
                      "shape": {"type": "capsule", "radius": 0.03, "height": spacing - 0.06}})
        if i:
            joints.append({"type": "ball", "a": f"link{i - 1}", "b": f"link{i}", "anchor": [spacing * i, 3.0, 0.0]})
    # Capsules along x: rotate each so its local y axis lies along the chain.
    q = [np.cos(np.pi / 4), 0.0, 0.0, -np.sin(np.pi / 4)]
    for node in nodes:
        node["rotation"] = q
    sim = Simulation(scene_from_dict({"node": nodes, "joint": joints, "world": {"dt": 1 / 60, "relax": True, **world}}))
    e0 = sim.energy()
    initial = e0["kinetic"] + e0["potential"]
    energy = []
    for _ in range(300):
        sim.step(1)
        e = sim.energy()
        energy.append(e["kinetic"] + e["potential"])
    energy = np.array(energy)
    assert np.all(energy <= initial + rise)
    assert np.isfinite(energy).all()


def test_user_constraint_through_dual_matches_analytic_distance_row():
    rng = np.random.default_rng(7)
    centre = rng.normal(size=(2, 3))
    rotation = random_matrix(rng, size=2)
    anchor_a, anchor_b = centre[0] + rng.normal(size=3) * 0.3, centre[1] + rng.normal(size=3) * 0.3
    length = 0.8
    joints = Joints.from_world([DISTANCE], [[0, 1]], anchor_a, [0.0, 0.0, 1.0], centre, rotation,
                               anchor_b_world=anchor_b, length=[length])
    analytic, _ = joints.rows(centre, rotation, h=1 / 60, beta=0.2)
    r_a, r_b = rotation[0].T @ (anchor_a - centre[0]), rotation[1].T @ (anchor_b - centre[1])

    def C(x_a, R_a, x_b, R_b):      # written plainly in numpy: works on floats and on Duals
        d = x_b + R_b @ r_b - x_a - R_a @ r_a
        return np.sqrt(np.sum(d * d)) - length

    user = function_rows(C, (0, 1), centre, rotation, h=1 / 60, beta=0.2)
    # Same Jacobian and Baumgarte target to round-off (dual numbers are exact derivatives).
    np.testing.assert_allclose(user.jacobian, analytic.jacobian, atol=1e-12)
    np.testing.assert_allclose(user.target, analytic.target, atol=1e-12)


def cartesian_rattle_period(theta0, h, seconds):
    """The period of RATTLE for a point mass on a 1 m rod (Hairer, Lubich & Wanner, "Geometric
    Numerical Integration", VII.1.4), written out independently in 2-D Cartesian coordinates, measured
    by the same zero crossings."""
    g = np.array([0.0, -9.81])
    q, v, xs = np.array([np.sin(theta0), -np.cos(theta0)]), np.zeros(2), []
    for _ in range(int(seconds / h)):
        half = v + 0.5 * h * g
        lam = 0.0
        for _ in range(30):         # |q + h (half + λ q)| = 1 by Newton on λ
            q1 = q + h * (half + lam * q)
            lam -= (q1 @ q1 - 1.0) / (2.0 * h * (q1 @ q))
        q1 = q + h * (half + lam * q)
        v = half + lam * q + 0.5 * h * g
        q, v = q1, v - (v @ q1) * q1
        xs.append(q[0])
    x, t = np.array(xs), (np.arange(len(xs)) + 1) * h
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    return np.diff(t[down] + h * x[down] / (x[down] - x[down + 1])).mean()


@pytest.mark.parametrize("degrees", [60.0, 120.0])
def test_rattle_pendulum_keeps_its_energy_at_a_sixtieth(degrees):
    """lie-midpoint at h = 1/60 (the joint stepped by RATTLE, physics.constraints.rattle), a point mass on a
    distance joint: the energy stays within 0.2 % of the swing energy with no drift (measured
    −0.09 … 0 % at 60°, −0.12 … 0 % at 120°; the velocity solve alone lost 37 % in 10 s), and the
    period is the textbook Cartesian RATTLE's to 1 % of its error (the scheme, not an approximation
    of it: 2.6e-4 at 60°, 4.8e-4 at 120°, against the elliptic-integral period)."""
    theta0, h, seconds = np.radians(degrees), 1 / 60, 10.0
    sim = pendulum(theta0, h, "distance", integrator="lie-midpoint", substeps=1)
    e0 = sum(sim.energy().values())
    swing = 9.81 * (1 - np.cos(theta0))
    x, energy = [], []
    for _ in range(int(seconds / h)):
        sim.step(1)
        x.append(sim.world().transform.translation[0, 0])
        energy.append((sum(sim.energy().values()) - e0) / swing)
    x, t, energy = np.array(x), (np.arange(len(x)) + 1) * h, np.array(energy)
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    period = np.diff(t[down] + h * x[down] / (x[down] - x[down + 1])).mean()
    exact = 4 * np.sqrt(1.0 / 9.81) * ellipk(np.sin(theta0 / 2) ** 2)
    reference = cartesian_rattle_period(theta0, h, seconds)
    assert np.abs(energy).max() <= 2e-3
    assert abs(np.polyfit(t, energy, 1)[0] * seconds) <= 5e-4
    assert abs(period - reference) <= 0.01 * abs(reference - exact)


def swing(theta0, h, seconds, shape=None, **world):
    """(period error against the elliptic-integral period, energy (of the swing energy) per step,
    times) of the ball-joint physical pendulum (its bob with a collision `shape`, or none)."""
    sim = pendulum(theta0, h, "ball", shape, **world)
    e0 = sum(sim.energy().values())
    x, energy = [], []
    for _ in range(int(round(seconds / h))):
        sim.step(1)
        x.append(sim.world().transform.translation[0, 0])
        energy.append((sum(sim.energy().values()) - e0) / (9.81 * (1 - np.cos(theta0))))
    x, t = np.array(x), (np.arange(len(x)) + 1) * h
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    period = np.diff(t[down] + h * x[down] / (x[down] - x[down + 1])).mean()
    exact = 4 * np.sqrt((INERTIA["ball"] + 1.0) / 9.81) * ellipk(np.sin(theta0 / 2) ** 2)
    return period / exact - 1.0, np.array(energy), t


@pytest.mark.parametrize("degrees", [60.0, 120.0])
def test_pendulum_at_its_shipped_settings_keeps_energy_and_period(degrees):
    """pendulum.toml's settings (lie-midpoint: RATTLE, dt 1/60 in 2 sub-steps), 100 s: the energy
    within the goal's ±1 % of the swing energy (measured −0.021 … 0 % at 60°, −0.030 … 0 % at 120°),
    no drift (fitted slope over the 100 s below 0.05 %: measured < 0.001 %), and the period within
    the goal's 2e-4 of the exact one (measured −6.5e-5 and −1.2e-4; RATTLE's error is O(h²): one
    sub-step gives 2.6e-4 and 4.7e-4, so the goal needs the two)."""
    error, energy, t = swing(np.radians(degrees), 1 / 60, 100.0, integrator="lie-midpoint", substeps=2)
    assert np.abs(energy).max() <= 1e-2
    assert abs(np.polyfit(t, energy, 1)[0] * t[-1]) <= 5e-4
    assert abs(error) <= 2e-4


@pytest.mark.parametrize("degrees", [60.0, 120.0])
def test_a_pendulum_with_no_settings_keeps_its_energy_and_period(degrees):
    """The ball-joint pendulum written with no [world] section (`Settings()`: semi-implicit Euler,
    its joints by RATTLE, dt 1/60 in three sub-steps), 100 s: the energy within the goal's ±1 % of
    the swing energy (measured ±0.82 % at 60°, ±0.71 % at 120°: symplectic Euler's O(h)
    oscillation), no drift (fitted slope over the 100 s below 0.05 %), and the period within the
    goal's 2e-4 (measured 2.4e-5 and 4.0e-5). The velocity solve the default had lost 86 % and 95 %."""
    theta0 = np.radians(degrees)
    bob = PIVOT + [np.sin(theta0), -np.cos(theta0), 0.0]
    scene = {"node": [{"name": "bob", "motion": "dynamic", "mass": 1.0, "inertia": [INERTIA["ball"]] * 3,
                       "translation": bob.tolist()}],
             "joint": [{"type": "ball", "b": "bob", "anchor": PIVOT.tolist()}]}
    sim = Simulation(scene_from_dict(scene))
    h, e0, swing = sim.settings.dt, sum(sim.energy().values()), 9.81 * (1 - np.cos(theta0))
    x, energy = [], []
    for _ in range(int(round(100.0 / h))):
        sim.step(1)
        x.append(sim.world_poses()[0][0, 0])
        energy.append((sum(sim.energy().values()) - e0) / swing)
    x, t, energy = np.array(x), (np.arange(len(x)) + 1) * h, np.array(energy)
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    period = np.diff(t[down] + h * x[down] / (x[down] - x[down + 1])).mean()
    exact = 4 * np.sqrt((INERTIA["ball"] + 1.0) / 9.81) * ellipk(np.sin(theta0 / 2) ** 2)
    assert np.abs(energy).max() <= 1e-2
    assert abs(np.polyfit(t, energy, 1)[0] * t[-1]) <= 5e-4
    assert abs(period / exact - 1.0) <= 2e-4


@pytest.mark.parametrize("links", [2, 3])
def test_a_chain_with_no_settings_keeps_its_energy(links):
    """Two and three 1 m links on ball joints released straight at 60°, no [world] section, 100 s:
    the energy within the goal's ±1 % of the swing energy (measured ±0.61 % and ±0.52 %) and the
    joints together to 1e-9 m (RATTLE's projection leaves 1e-12)."""
    energy, separation = chain_swing(links, np.radians(60.0), 100.0)
    assert np.abs(energy).max() <= 1e-2
    assert separation <= 1e-9


@pytest.mark.parametrize("degrees", [60.0, 120.0])
def test_triple_jump_of_rattle_gives_a_fourth_order_period(degrees):
    """lie-midpoint-4 at dt 1/60 (RATTLE's constrained step composed by the triple jump): the period
    within the goal's 6e-5 (measured 2.1e-6 at 60°, 8.5e-6 at 120°: 4th order, against 2.6e-4 and
    4.7e-4 for one RATTLE step), and the energy within 0.1 % of the swing (measured < 0.001 %)."""
    error, energy, _ = swing(np.radians(degrees), 1 / 60, 30.0, integrator="lie-midpoint-4")
    assert abs(error) <= 6e-5
    assert np.abs(energy).max() <= 1e-3


@pytest.mark.parametrize("degrees", [60.0, 120.0])
def test_a_bob_with_a_shape_keeps_the_fourth_order_period(degrees):
    """lie-midpoint-4 at dt 1/60, the bob a 0.1 m sphere with nothing within reach to touch: the
    composed RATTLE step still (`physics.pipeline.retry.composes_rattle` asks whether any contact may act, not
    whether shapes exist): the period within the goal's 6e-5 (measured 2.1e-6 and 8.5e-6, as
    without the shape; composing only where no shape existed gave 2.6e-4)."""
    error, energy, _ = swing(np.radians(degrees), 1 / 60, 30.0, shape={"type": "sphere", "radius": 0.1},
                             integrator="lie-midpoint-4")
    assert abs(error) <= 6e-5
    assert np.abs(energy).max() <= 1e-3


def chain_swing(links, theta0, seconds, **world):
    """A chain of `links` ball-jointed 1 m links (1 kg bobs of the physical pendulum's inertia, no
    shapes) hanging from PIVOT, released straight at theta0, with the `world` settings (none given:
    no [world] section): (the energy per step as a fraction of the swing energy, the worst joint
    separation)."""
    nodes, joints = [], []
    down = np.array([np.sin(theta0), -np.cos(theta0), 0.0])
    for i in range(links):
        nodes.append({"name": f"bob{i}", "motion": "dynamic", "mass": 1.0, "inertia": [INERTIA["ball"]] * 3,
                      "translation": (PIVOT + (i + 1) * down).tolist()})
        joints.append({"type": "ball", "b": f"bob{i}", "anchor": (PIVOT + i * down).tolist(),
                       **({"a": f"bob{i - 1}"} if i else {})})
    scene = {"node": nodes, "joint": joints, **({"world": world} if world else {})}
    sim = Simulation(scene_from_dict(scene))
    e0 = sum(sim.energy().values())
    swing = 9.81 * (1 - np.cos(theta0)) * links * (links + 1) / 2
    energy, separation = [], 0.0
    for _ in range(int(round(seconds / sim.settings.dt))):
        sim.step(1)
        energy.append((sum(sim.energy().values()) - e0) / swing)
        separation = max(separation, sim.joint_separation().max())
    return np.array(energy), separation


def test_a_chain_keeps_its_energy_under_rattle_at_a_sixtieth():
    """Two 1 m links on ball joints released straight at 60° (a chaotic double pendulum), lie-midpoint
    (the joints stepped by RATTLE) at one step of 1/60, 100 s: the energy within ±1 % of the swing
    energy (measured −0.07 … 0 %; lie-midpoint-4, whose triple jump takes sub-steps of 1.35 h and
    −1.70 h, gained 3.4 %, and semi-implicit Euler with RATTLE stayed within ±1.8 %), the joints
    together to 1e-9 m (the projection's 1e-12, physics.constraints.rattle.TOLERANCE, with margin)."""
    energy, separation = chain_swing(2, np.radians(60.0), 100.0, integrator="lie-midpoint")
    assert np.abs(energy).max() <= 1e-2
    assert separation <= 1e-9


def test_shipped_chain_keeps_its_energy_and_its_links():
    """chain.toml as shipped (lie-midpoint: RATTLE, dt 1/60 in 8 sub-steps, a sub-step halved at a
    whip crack), 10 s from the horizontal release: the goal's ≤ 10 % of the 98 J swing lost
    (m g × the drop of the centre, 20 × 0.2 kg × 2.5 m; measured 3.7 %), the energy never above the
    start by more than 0.1 % of the swing (measured < 1e-4 J; a symplectic step's energy error in a
    crack oscillates, and with halving only where the projection leaves J₀ it reached +14 J at
    other iteration counts), and every joint's two anchors ≤ 1 mm apart (measured < 1e-5 mm: the
    projection solves g = 0 to 1e-12)."""
    scene = load_scene(Path(__file__).resolve().parents[1] / "assets" / "scenes" / "chain.toml")
    sim = Simulation(scene)
    swing = 9.81 * 0.2 * 20 * 2.5
    e0 = sum(sim.energy().values())
    highest, separation = e0, 0.0
    for _ in range(600):
        sim.step(1)
        highest = max(highest, sum(sim.energy().values()))
        separation = max(separation, sim.joint_separation().max())
    lost = (e0 - sum(sim.energy().values())) / swing
    assert 0.0 <= lost <= 0.10
    assert highest - e0 <= 1e-3 * swing
    assert separation <= 1e-3


def test_joint_separation_is_the_distance_of_the_anchors_carried_by_the_bodies():
    """`Simulation.joint_separation` against the scene's own anchors carried rigidly by the bodies'
    world poses (the anchors in each body's frame taken at load): equal to 1e-12 m (two ways of
    summing the same rigid map) after 100 steps of the chain, and empty before the first step."""
    scene = load_scene(Path(__file__).resolve().parents[1] / "assets" / "scenes" / "chain.toml")
    sim = Simulation(scene)
    world = sim.world().transform
    ends = []            # (node a or −1, anchor in a's frame (world if −1), node b, anchor in b's frame)
    for joint in scene.joints:
        a, b, anchor = joint["a"], joint["b"], np.asarray(joint["anchor"], float)
        r_a = anchor if a < 0 else world.rotation[a].T @ (anchor - world.translation[a])
        ends.append((a, r_a, b, world.rotation[b].T @ (anchor - world.translation[b])))
    assert sim.joint_separation().size == 0
    sim.step(100)
    world = sim.world().transform
    expected = [np.linalg.norm(world.translation[b] + world.rotation[b] @ r_b
                               - (r_a if a < 0 else world.translation[a] + world.rotation[a] @ r_a))
                for a, r_a, b, r_b in ends]
    np.testing.assert_allclose(sim.joint_separation(), expected, rtol=0, atol=1e-12)


def tilted_body(joint):
    """One body on a `joint` at the world origin: its centre off the anchor, principal axes turned
    away from the world's, unequal moments; a hinge's axis along none of them."""
    q = np.array([0.9, 0.3, 0.2, 0.25]) / np.linalg.norm([0.9, 0.3, 0.2, 0.25])
    spec = {"type": joint, "b": "bob", "anchor": [0.0, 0.0, 0.0]}
    if joint == "hinge":
        spec["axis"] = [0.3, 0.2, 1.0]
    return scene_from_dict({"world": {"dt": 0.001, "substeps": 1, "integrator": "lie-midpoint-4"},
                            "node": [{"name": "bob", "motion": "dynamic", "translation": [0.3, -0.6, 0.2],
                                      "rotation": q.tolist(), "mass": 1.5, "inertia": [0.1, 0.2, 0.25]}],
                            "joint": [spec]})


def substep(sim, h):
    """One lie-midpoint sub-step h of the stages (physics.pipeline.stages.substep), RATTLE's as in the composed step."""
    context = stages.step_context(sim.model, sim.data, sim.settings, sim._work, h, "lie-midpoint", composed=True)
    stages.substep(sim.model, sim.data, sim.settings, sim._work, context)


@pytest.mark.parametrize("joint", ["hinge", "ball"])
def test_composed_rattle_step_is_symmetric(joint):
    """lie-midpoint-4 composes RATTLE's constrained lie-midpoint step by the triple jump (g1 h,
    g2 h < 0, g1 h), which is 4th order only if the step is symmetric: a step of h then one of −h
    returns to the start. Swinging under gravity for 50 steps, then h and −h: every coordinate of
    pose and velocity back to 1e-11 (round-off of the projections' 1e-12 tolerance; a step moves
    them by 1e-2 to 1e-1). Positions and velocities must take the same joint impulse: before they
    did not (the velocity solve's unconverged rest moved the positions only), a hinge came back
    9.6e-7 off at h = 5 ms and its composed step was first order."""
    def state(sim):
        world = sim.world()
        return np.concatenate([world.transform.translation[0], world.transform.rotation[0].ravel(),
                               world.velocity[0], world.angular_velocity[0].ravel()])
    for h in (1e-2, 5e-3):
        sim = Simulation(tilted_body(joint))
        sim.step(50)
        start = state(sim)
        substep(sim, h)
        moved = state(sim)
        substep(sim, -h)
        assert np.abs(moved - start).max() > 1e-3
        assert np.abs(state(sim) - start).max() < 1e-11


def test_the_two_nodes_of_a_joint_collide_only_if_it_says_so():
    """Two 1 m boxes overlapping by 0.2 m, joined by a ball joint in the overlap (no gravity): by
    default (Box2D's `collideConnected = false`) their shapes are never paired: no overlap warning at
    load, no contact point, and the joint holds them still (1e-12 m: nothing pushes). With
    `collide_connected = true` the overlap is reported and the contact pushes them apart against
    the joint. A value that is not a boolean is refused naming the joint and the key."""
    import warnings

    from physics.io.scene import SceneError
    from physics.pipeline.simulation import OverlapWarning

    def boxes(**joint):
        nodes = [{"name": name, "motion": "dynamic", "translation": [x, 1.0, 0.0],
                  "shape": {"type": "box", "size": [1.0, 1.0, 1.0]}} for name, x in (("left", -0.4), ("right", 0.4))]
        joint = {"type": "ball", "a": "left", "b": "right", "anchor": [0.0, 1.0, 0.0], **joint}
        return scene_from_dict({"world": {"gravity": [0.0, 0.0, 0.0]}, "node": nodes, "joint": [joint]})

    with warnings.catch_warnings():
        warnings.simplefilter("error", OverlapWarning)
        sim = Simulation(boxes())
    start = sim.world_poses()[0].copy()
    sim.step(30)
    assert len(sim.contacts()[0]) == 0
    np.testing.assert_allclose(sim.world_poses()[0], start, atol=1e-12)
    with pytest.warns(OverlapWarning):
        touching = Simulation(boxes(collide_connected=True))
    touching.step(1)
    assert len(touching.contacts()[0]) > 0
    with pytest.raises(SceneError, match="collide_connected"):
        boxes(collide_connected=1)


def _light_link_holding(weight_mass):
    """A 0.5 m link of 1e-9 kg (the lightest a scene takes) on a ball joint to the world, holding a
    ball of `weight_mass` on a ball joint."""
    from physics.io.scene import scene_from_dict
    return scene_from_dict({"world": {"dt": 1 / 60}, "node": [
        {"name": "link", "motion": "dynamic", "mass": 1e-9, "translation": [0.0, 2.0, 0.0],
         "shape": {"type": "box", "size": [0.1, 0.5, 0.1]}},
        {"name": "weight", "motion": "dynamic", "mass": weight_mass, "translation": [0.0, 1.5, 0.0],
         "shape": {"type": "sphere", "radius": 0.2}}],
        "joint": [{"type": "ball", "b": "link", "anchor": [0.0, 2.25, 0.0]},
                  {"type": "ball", "a": "link", "b": "weight", "anchor": [0.0, 1.75, 0.0]}]})


def test_a_light_link_holding_a_heavy_body_is_held_up_to_the_measured_ratio_and_warned_about_past_it():
    """The issue's reproducer scaled: a light link between the world and a heavy body. The joint
    solve is direct, so what bounds it is round-off: the light body's mobility is the difference of
    two entries of J M⁻¹ Jᵀ that agree to the ratio's digits. Over 2 s at ratios of 1e10 and of
    JOINT_MASS_RATIO_HELD (1e13: the heavy body's pivot above the joint graph's floor) the
    joints stay within 1e-6 m (measured: round-off, 1e-15 m); past it the load warns, naming both
    bodies and the ratio (from 1e15 the link lets the body fall), in `Simulation.warnings` too (the
    viewer shows them). A ratio of 1 gives no warning."""
    import warnings
    from physics.pipeline.simulation import JOINT_MASS_RATIO_HELD, MassRatioWarning
    for weight in (10.0, JOINT_MASS_RATIO_HELD * 1e-9):
        with warnings.catch_warnings():
            warnings.simplefilter("error", MassRatioWarning)
            held = Simulation(_light_link_holding(weight))
            assert held.warnings == []
        held.step(120)
        assert held.joint_separation().max() < 1e-6, (weight, held.joint_separation())
    with pytest.warns(MassRatioWarning, match=r"joins 'link' and 'weight', whose masses differ 1e\+18 times") as caught:
        past = Simulation(_light_link_holding(1e9))
    assert past.warnings == [str(caught[0].message)] and f"{JOINT_MASS_RATIO_HELD:.0e}" in past.warnings[0]


def test_rk4_steps_a_scene_with_joints_as_lie_midpoint_4_and_free_bodies_by_its_own_stages():
    """RK4's stages cannot hold a joint (physics.core.choices.JOINTED_SCHEME): the double pendulum
    and the iiwa arm under rk4 are bit for bit the ones under lie-midpoint-4 (the arm's swing under
    it is 7.1e-7 m from MuJoCo's RK4: tests/test_robots_mujoco.py), whose composed RATTLE step is of 4th
    order (its first-order fallback was 0.27 m off the converged swing at dt = 1/60); the T-handle,
    free, keeps RK4's own stages and differs from lie-midpoint-4's."""
    def run(scene, integrator, steps):
        sim = Simulation.from_file(Path(__file__).resolve().parents[1] / "assets" / "scenes" / f"{scene}.toml")
        sim.set("integrator", integrator)
        sim.step(steps)
        world = sim.world()
        return np.concatenate([world.transform.translation.ravel(), world.transform.rotation.ravel(),
                               world.velocity.ravel(), world.angular_velocity.ravel()])
    np.testing.assert_array_equal(run("double_pendulum", "rk4", 60), run("double_pendulum", "lie-midpoint-4", 60))
    np.testing.assert_array_equal(run("iiwa", "rk4", 30), run("iiwa", "lie-midpoint-4", 30))
    assert np.abs(run("t_handle", "rk4", 60) - run("t_handle", "lie-midpoint-4", 60)).max() > 1e-12


def test_the_soft_limits_have_the_bits_of_numpys_maximum():
    """`Joints.limit_slack` (one compiled pass, `fill_limit_slack`) gives the bits of the numpy
    form e × np.maximum(−C, 0) of the active limit rows' C (0 elsewhere), e = exp(−|h|/τ): numpy's
    maximum gives +0 for −0 and keeps a NaN as it is, in its vector body and its scalar tail alike
    (1,003 rows: not a multiple of a vector's lanes); the largest it returns is ndarray.max's (a NaN
    where one is, 0 of none). Tolerance 0: the projections take these values as they are."""
    from physics.constraints.joints import LIMIT, LIMIT_EASING_TIME, fill_limit_slack, joint_geometry_arrays
    rng = np.random.default_rng(7)
    J = 1003
    geometry = joint_geometry_arrays(J)
    special = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-300, -1e-300])
    geometry.C[:] = rng.choice(np.concatenate([special, rng.standard_normal(8)]), size=geometry.C.shape)
    geometry.active[:] = rng.random(geometry.active.shape) < 0.7
    geometry.inequality[:] = rng.random(geometry.inequality.shape) < 0.7
    for h in (1 / 240, -1 / 240, 0.0):
        easing = np.exp(-abs(h) / LIMIT_EASING_TIME)
        C = np.where(geometry.active[:, LIMIT] & geometry.inequality[:, LIMIT], geometry.C[:, LIMIT], 0.0)
        expected = easing * np.maximum(-C, 0.0)
        got = np.empty(J)
        largest = fill_limit_slack(geometry, float(easing), got)
        assert np.array_equal(expected.view(np.int64), got.view(np.int64)), h
        assert np.array_equal(largest, expected.max(), equal_nan=True), h     # what the runaway check reads
    geometry.C[np.isnan(geometry.C)] = 1.0      # without a NaN: the largest value itself
    got = np.empty(J)
    largest = fill_limit_slack(geometry, 1.0, got)
    assert largest == got.max()
    assert fill_limit_slack(joint_geometry_arrays(0), 1.0, np.empty(0)) == 0.0


def gimbal(ring_mass):
    """A 1 kg bob on a 0.5 m lever, hung from a fixed base through a ring (hinge about x, then hinge
    about z), the ring of `ring_mass` kg with inertia 0.01 of it (as an importer raises a massless
    link to 1e-9 kg), released horizontal under gravity."""
    doc = {"world": {"gravity": [0, -9.81, 0], "dt": 1 / 240},
           "node": [{"name": "base", "motion": "fixed"},
                    {"name": "ring", "motion": "dynamic", "mass": ring_mass, "inertia": [0.01 * ring_mass] * 3},
                    {"name": "bob", "motion": "dynamic", "mass": 1.0, "inertia": [0.01] * 3, "translation": [0.5, 0, 0]}],
           "joint": [{"type": "hinge", "name": "outer", "a": "base", "b": "ring", "anchor": [0, 0, 0], "axis": [1, 0, 0]},
                     {"type": "hinge", "name": "inner", "a": "ring", "b": "bob", "anchor": [0, 0, 0], "axis": [0, 0, 1]}]}
    return Simulation(scene_from_dict(doc, "gimbal.toml"))


def test_a_near_massless_link_in_a_chain_leaves_newton_quadratic():
    """The gimbal with a 1e-9 kg ring steps as one with a 1 mg ring: RATTLE's position projections
    take at most 3.5 Newton iterations a projection over 2 s (the 1 mg ring's take 2.5), and its
    energy after 2 s is the 1 mg ring's to 1e-6 relative (the ring's own energy is below 1e-8 J:
    both are the bob's pendulum)."""
    figures = []
    for mass in (1e-9, 1e-6):
        sim = gimbal(mass)
        iterations = []
        for _ in range(480):
            sim.step()
            iterations.append(sim._work.solver._joint_bodies.stats[0])
        energy = sim.energy()
        figures.append((np.mean(iterations), energy["kinetic"] + energy["potential"]))
    (light, light_energy), (_, energy) = figures
    assert light <= 3.5, figures
    assert abs(light_energy - energy) <= 1e-6 * abs(energy), figures
