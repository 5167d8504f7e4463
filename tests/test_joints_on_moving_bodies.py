"""Joints whose side a is a moving frame (a kinematic node, or a node fixed to one) follow it: its
anchor, axis and velocity each sub-step (`SceneSolver.follow_frames`). Checked against the
analytic motion of a pendulum in a turning and in an accelerating frame."""
import math

import numpy as np
import pytest

from physics import Simulation
from physics.io.scene import scene_from_dict

OMEGA, LENGTH, HEIGHT, G, RADIUS = 5.0, 1.0, 2.0, 9.81, 0.05
# A rigid pendulum on a table turning at Ω about the vertical, its hinge on the axis and its hinge
# axis horizontal in the table: in the table's frame the centrifugal potential −½ m Ω² (L sin θ)²
# balances gravity at cos θ* = g / (Ω² L) (a sphere's own inertia is the same about every axis, so
# it adds nothing but to the swing's inertia), and small swings about θ* have
# ω² = Ω² L² sin²θ* / (L² + 2/5 r²).
EQUILIBRIUM = math.acos(G / (OMEGA * OMEGA * LENGTH))
SWING = OMEGA * math.sin(EQUILIBRIUM) * LENGTH / math.sqrt(LENGTH ** 2 + 0.4 * RADIUS ** 2)


def turning(theta, child=False, integrator=None):
    """The table turning at OMEGA from the start and the bob at angle `theta` from the hanging
    vertical, turning with the table (as a root body in the world, or as the table's child)."""
    bob = np.array([0.0, HEIGHT - LENGTH * math.cos(theta), LENGTH * math.sin(theta)])
    moving = {"velocity": np.cross([0.0, OMEGA, 0.0], bob).tolist(), "angular_velocity": [0.0, OMEGA, 0.0]}
    return Simulation(scene_from_dict({
        "world": {"dt": 1 / 240, "gravity": [0.0, -G, 0.0], **({"integrator": integrator} if integrator else {})},
        "node": [{"name": "table", "motion": "kinematic", "angular_velocity": [0.0, OMEGA, 0.0],
                  "shape": {"type": "box", "size": [0.5, 0.1, 0.5]}},
                 {"name": "bob", "motion": "dynamic", "translation": bob.tolist(), "mass": 1.0,
                  "shape": {"type": "sphere", "radius": RADIUS}, **({"parent": "table"} if child else moving)}],
        "joint": [{"type": "hinge", "a": "table", "b": "bob", "anchor": [0.0, HEIGHT, 0.0], "axis": [1.0, 0.0, 0.0]}]}))


def angles(sim):
    """(θ from the hanging vertical, the bob's azimuth about the axis) now."""
    x = sim.world_poses()[0][1]
    return math.atan2(math.hypot(x[0], x[2]), HEIGHT - x[1]), math.atan2(x[0], x[2])


@pytest.mark.parametrize("child", [False, True], ids=["root body", "the table's child"])
def test_a_pendulum_on_a_turning_table_rides_at_its_relative_equilibrium(child):
    """Started at θ* turning with the table, the bob stays at θ* (within 2e-3 rad over 4 s: the
    default semi-implicit Euler at dt 1/240 swings it by 1.5e-3 about θ*, its first-order error)
    and turns with the table (its azimuth is the table's angle to 1e-9 rad), its hinge held (1e-12
    m). A joint that kept its anchor and axis where they were at load would let it swing in a
    fixed plane, 0.6 rad off θ* within 4 s."""
    sim = turning(EQUILIBRIUM, child)
    for _ in range(4):
        sim.step(240)
        theta, azimuth = angles(sim)
        assert abs(theta - EQUILIBRIUM) < 2e-3, theta
        table = math.remainder(OMEGA * sim.time, 2 * math.pi)
        assert abs(math.remainder(azimuth - table, 2 * math.pi)) < 1e-9, (azimuth, table)
        assert sim.joint_separation().max() < 1e-12


def test_small_swings_about_the_turning_equilibrium_have_the_analytic_period():
    """Started 0.01 rad past θ*, the bob swings about θ* with the period 2π/ω of the linearized
    motion in the turning frame: within 1e-3 relative over 6 s (measured 4e-5: the swing's own
    amplitude and the step's error) with lie-midpoint."""
    sim = turning(EQUILIBRIUM + 0.01, integrator="lie-midpoint")
    times, offsets = [], []
    for _ in range(6 * 240):
        sim.step()
        times.append(sim.time)
        offsets.append(angles(sim)[0] - EQUILIBRIUM)
    down = [times[i] - offsets[i] * (times[i + 1] - times[i]) / (offsets[i + 1] - offsets[i])
            for i in range(len(offsets) - 1) if offsets[i] > 0.0 >= offsets[i + 1]]
    assert len(down) >= 4
    assert np.diff(down).mean() == pytest.approx(2 * math.pi / SWING, rel=1e-3)


def test_a_pendulum_on_an_accelerating_cart_hangs_back_at_atan_a_over_g():
    """A cart (kinematic) accelerating at a along x from rest, a ball-jointed bob hanging from it:
    in the cart's frame the bob's equilibrium leans back by atan(a / g). Started there at rest with
    the cart, it stays within 2e-3 rad of it over 2 s while the cart travels 0.5 a t² = 5 m, and
    its joint holds (1e-12 m)."""
    a = 2.5
    lean = math.atan(a / G)
    bob = [-LENGTH * math.sin(lean), HEIGHT - LENGTH * math.cos(lean), 0.0]
    sim = Simulation(scene_from_dict({
        "world": {"dt": 1 / 240, "gravity": [0.0, -G, 0.0]},
        "node": [{"name": "cart", "motion": "kinematic", "acceleration": [a, 0.0, 0.0],
                  "shape": {"type": "box", "size": [0.5, 0.1, 0.5]}},
                 {"name": "bob", "motion": "dynamic", "translation": bob, "mass": 1.0,
                  "shape": {"type": "sphere", "radius": RADIUS}}],
        "joint": [{"type": "ball", "a": "cart", "b": "bob", "anchor": [0.0, HEIGHT, 0.0]}]}))
    for _ in range(4):
        sim.step(120)
        cart, ball = sim.world_poses()[0][:2]
        assert cart[0] == pytest.approx(0.5 * a * sim.time ** 2, rel=1e-9)
        relative = ball - (cart + [0.0, HEIGHT, 0.0])
        assert abs(math.atan2(-relative[0], -relative[1]) - lean) < 2e-3
        assert sim.joint_separation().max() < 1e-12


def test_a_run_restored_mid_swing_takes_the_same_bits():
    """The frame's pose and motion are taken from the state at every sub-step and side a's anchor is
    kept in the frame (a snapshot holds it so): a run restored into a fresh simulation, or into
    itself, at step 100 of a swing 0.3 rad past θ* ends at the hash the run had without the
    restore, 100 steps on."""
    first = turning(EQUILIBRIUM + 0.3)
    first.step(100)
    snapshot = first.snapshot()
    first.step(100)
    straight = first.state_hash()
    fresh = turning(EQUILIBRIUM + 0.3)
    fresh.restore(snapshot)
    fresh.step(100)
    first.restore(snapshot)
    first.step(50)
    first.step(50)
    assert fresh.state_hash() == first.state_hash() == straight


def balance(dt):
    """A swing 0.4 rad past θ* on the turning table (lie-midpoint at `dt`) for 2 s: (the largest
    |E − E₀| of the bob's kinetic and potential energy, the largest |E − E₀ − W| with W the frames'
    work (`Simulation.energy`'s frame_work), the largest |W − Ω ΔL_y|), sampled every step."""
    sim = turning(EQUILIBRIUM + 0.4, integrator="lie-midpoint")
    sim.set("dt", dt)
    energy = sim.energy()
    E0, L0 = energy["kinetic"] + energy["potential"], sim.momentum()["angular"][1]
    assert energy["frame_work"] == 0.0
    swing = off = off_momentum = 0.0
    for _ in range(round(2.0 / dt)):
        sim.step()
        energy = sim.energy()
        E, W = energy["kinetic"] + energy["potential"], energy["frame_work"]
        swing, off = max(swing, abs(E - E0)), max(off, abs(E - E0 - W))
        off_momentum = max(off_momentum, abs(W - OMEGA * (sim.momentum()["angular"][1] - L0)))
    return swing, off, off_momentum


def test_the_table_s_work_on_the_pendulum_balances_its_energy():
    """The turning table pumps energy into the swinging bob and takes it back (E swings by 15 J),
    and `energy()["frame_work"]` counts it. W is the table's work found independently, Ω ΔL_y (the
    table's torque about the vertical is the only one on the bob about that axis: gravity is
    parallel to it, the hinge is on it), to round-off (1e-9 J; measured 8e-13: RATTLE's step keeps
    that angular momentum balance exactly); and E − E₀ − W stays within 1e-4 J (measured 2.6e-5 at
    dt 1/240), the step's own energy error, second order (halving dt quarters it: between 0.15 and
    0.35)."""
    swing, off, off_momentum = balance(1 / 240)
    assert swing > 10.0
    assert off < 1e-4 and off_momentum < 1e-9, (swing, off, off_momentum)
    _, finer, _ = balance(1 / 480)
    assert 0.15 < finer / off < 0.35, (off, finer)


def test_a_restored_run_keeps_the_frames_work():
    """The frames' work is part of the state a snapshot keeps (a readout, left out of the hash): a
    run restored mid-swing reads the same work, and steps on to the same bits of it."""
    sim = turning(EQUILIBRIUM + 0.4, integrator="lie-midpoint")
    sim.step(100)
    snapshot = sim.snapshot()
    sim.step(50)
    later = sim.energy()["frame_work"]
    sim.restore(snapshot)
    assert sim.energy()["frame_work"] == snapshot.arrays["derived.frame_work"][0] != 0.0
    sim.step(50)
    assert sim.energy()["frame_work"] == later
