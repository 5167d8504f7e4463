"""A hinge counts its turns (physics.constraints.joints, "Turns"): its coordinate, read from the
poses modulo 2π, is read within π of a centre the joints' start moves along with it, so it is
continuous as MuJoCo's integrated qpos is, and a spring, a servo or a limit past ±π acts on the
turned angle. The checks: a free spin's coordinate against the unwrapped angle of its poses and the
analytic ω t; a spring wound past half a turn swings through it as q₀ cos(ω₀ t); a position servo
whose target lies turns away keeps its energy; snapshots keep the turns and restore bit for bit; a
hinge its limits keep within π of its load is never followed.
"""
import math

import numpy as np
import pytest

import physics
import physics.io.scene
from physics.pipeline import stages
from test_drives import I_Z, angle, bar, spin


def coordinate(sim):
    return sim.joint_coordinates()["hinge"]


@pytest.mark.parametrize("integrator", ["lie-midpoint", "semi-implicit-euler", "rk4"])
@pytest.mark.parametrize("omega", [20.0, -35.0])
def test_a_free_spin_counts_its_turns(integrator, omega):
    """The bar on an unlimited hinge, no gravity, spun at ω: after 1 s its coordinate is the angle
    of its poses unwrapped step by step (numpy's unwrap of the atan2 the test reads from each pose:
    the same turns, to 1e-9 rad of round-off over 1000 steps) and ω t (to 1e-3 rad: the hinge's
    projected steps lag by a phase error ∝ (h ω)² ω t, measured 7e-5 rad at 20 rad/s and 4e-4 at
    35). Read modulo 2π it would be 20 − 6π = 1.15 rad."""
    sim = bar(omega=omega, integrator=integrator)
    angles = [angle(sim)]
    for _ in range(1000):
        sim.step()
        angles.append(angle(sim))
    assert spin(sim) == pytest.approx(omega, abs=1e-9)
    unwrapped = np.unwrap(angles)[-1]
    assert abs(coordinate(sim) - unwrapped) <= 1e-9, (coordinate(sim), unwrapped)
    assert abs(coordinate(sim) - omega * sim.time) <= 1e-3, coordinate(sim)


@pytest.mark.parametrize("integrator", ["lie-midpoint", "semi-implicit-euler"])
def test_a_spring_wound_past_half_a_turn_swings_through_it(integrator):
    """K = 10 N m/rad on I = 0.1 kg m² (ω₀ = 10 rad/s), posed at q₀ = 5 rad (past π) and let go:
    q(t) = q₀ cos(ω₀ t), through −5 rad half a period later. Held to 1e-3 rad over 0.7 s (the
    integrators' phase error at h = 1 ms is (h ω₀)² ω₀ t / 24, 3e-5 rad here, the semi-implicit
    Euler's amplitude error 2e-4). Read modulo 2π, the spring would pull from −1.28 rad towards 0."""
    sim = bar({"stiffness": 10.0}, integrator=integrator)
    sim.pose_joint("hinge", 5.0)
    assert coordinate(sim) == pytest.approx(5.0, abs=1e-12)
    worst, lowest = 0.0, 0.0
    for _ in range(700):
        sim.step()
        q = coordinate(sim)
        worst = max(worst, abs(q - 5.0 * math.cos(10.0 * sim.time)))
        lowest = min(lowest, q)
    assert worst <= 1e-3, worst
    assert lowest <= -4.99, lowest


def test_a_servo_whose_target_lies_turns_away_keeps_its_energy():
    """A position servo of kp = 5 on the bar (armature 0.1) on an unlimited hinge, held at a target
    of 4 rad from rest at 0: a spring toward it, so the bar swings between 0 and 8 rad (past π and
    2π) and kinetic + armature + servo stays at its 40 J to 1e-5 of it (RATTLE's spring terms
    conserve a nearby energy), with the runaway check on (the servo is no driver)."""
    sim = bar({"armature": 0.1}, {"name": "s", "joint": "hinge", "type": "position", "kp": 5.0})
    sim.set_control("s", 4.0)
    sim.step()
    assert not stages.actuators_push(sim.data, sim._work)
    assert sim._work.runaway.reference is not stages.DRIVEN
    start = stages.energy_balance(sim.energy())
    assert abs(start - 0.5 * 5.0 * 4.0 ** 2) <= 1e-2
    worst, highest = 0.0, 0.0
    for _ in range(3000):
        sim.step()
        worst = max(worst, abs(stages.energy_balance(sim.energy()) - start))
        highest = max(highest, coordinate(sim))
    assert worst <= 1e-5 * start, worst
    assert highest >= 7.9, highest


def test_snapshots_keep_the_turns_and_restore_bit_for_bit():
    """A snapshot of a bar spun past several turns (its spring wound with it) holds where the angle
    is read (`solver.joints.turned`); restored into a fresh simulation of the scene, the coordinate
    is the same turned one and 300 more steps give the same state hash as the run it came from. A
    bar that has not turned over writes no turns (its snapshot is what it was)."""
    sim = bar({"stiffness": 0.5}, omega=30.0)
    sim.step(300)
    snapshot = sim.snapshot()
    assert "solver.joints.turned" in snapshot.arrays
    q = coordinate(sim)
    assert q > 2 * math.pi
    sim.step(300)
    other = bar({"stiffness": 0.5}, omega=30.0)
    other.restore(snapshot)
    assert coordinate(other) == q
    other.step(300)
    assert other.state_hash() == sim.state_hash()
    still = bar({"stiffness": 0.5})
    still.step(10)
    assert "solver.joints.turned" not in still.snapshot().arrays


def test_a_snapshot_with_bad_turns_is_refused():
    """A `solver.joints.turned` that is not finite, past 1e12 rad, not float64 or not one per joint
    is refused, naming it (the kernels write that array itself)."""
    sim = bar({"stiffness": 0.5}, omega=30.0)
    sim.step(300)
    for bad in (np.array([np.inf]), np.array([1e300]), np.array([3]), np.zeros(1, np.float32), np.zeros(2)):
        snapshot = sim.snapshot()
        snapshot.arrays["solver.joints.turned"] = bad
        with pytest.raises(ValueError, match="solver.joints.turned"):
            sim.restore(snapshot)


def test_a_hinge_its_limits_hold_within_half_a_turn_is_not_followed():
    """Limits at ±3 rad (within π of the load at 0): the angle, read within π of the load, never
    leaves them, so the hinge is not followed and its `turned` stays 0 however it moves; with one
    limit past π it is followed."""
    sim = bar({"lower": -3.0, "upper": 3.0}, omega=20.0)
    sim.step(500)
    assert not sim._solver.joints.turning()[0]
    assert "solver.joints.turned" not in sim.snapshot().arrays
    wide = bar({"lower": -3.0, "upper": 4.0}, omega=5.0)
    wide.step(1000)
    assert wide._solver.joints.turning()[0]
    assert coordinate(wide) == pytest.approx(min(4.0, 5.0 * wide.time), abs=0.05)


def test_posing_a_hinge_turns_away_reads_it_there():
    """`pose_joint` to 9 rad (past a turn) from 0: the coordinate reads 9, not 9 − 2π, and the
    bar's pose is turned by 9 rad. Posed within a quarter turn of where it is read, the centre
    stays (no turns written: the snapshot is what it was)."""
    sim = bar()
    sim.pose_joint("hinge", 0.3)
    assert "solver.joints.turned" not in sim.snapshot().arrays
    sim.pose_joint("hinge", 9.0)
    assert coordinate(sim) == pytest.approx(9.0, abs=1e-12)
    assert angle(sim) == pytest.approx(9.0 - 2 * math.pi, abs=1e-12)
    sim.step(10)
    assert coordinate(sim) == pytest.approx(9.0, abs=1e-12)


@pytest.mark.parametrize("omega", [75.0, -90.0])
def test_a_hinge_turning_near_a_quarter_turn_a_sub_step_is_followed(omega):
    """At dt 1/60 in one sub-step, 75 and 90 rad/s turn the bar over 1 rad each sub-step (h ω = 1.25
    and 1.5, less the projected step's lag at such a step), near the quarter turn (π/2) the follow
    holds to: over 2 s (some 20 turns) its coordinate is the angle of its poses unwrapped step by
    step (numpy's unwrap, exact while a step turns less than π), to 1e-9 rad of round-off."""
    sim = physics.Simulation(physics.io.scene.scene_from_dict(
        {"title": "fast bar", "world": {"gravity": [0, 0, 0], "dt": 1 / 60, "substeps": 1},
         "node": [{"name": "bar", "motion": "dynamic", "mass": 1.0, "inertia": [I_Z, I_Z, I_Z],
                   "angular_velocity": [0.0, 0.0, omega]}],
         "joint": [{"type": "hinge", "b": "bar", "anchor": [0, 0, 0], "axis": [0, 0, 1], "name": "hinge"}]},
        "fast bar.toml"))
    angles = [angle(sim)]
    for _ in range(120):
        sim.step()
        angles.append(angle(sim))
    assert abs(coordinate(sim) - np.unwrap(angles)[-1]) <= 1e-9, (coordinate(sim), np.unwrap(angles)[-1])
    assert np.abs(np.diff(np.unwrap(angles))).min() > 1.0


def test_a_six_axis_joints_hinge_counts_its_turns_as_mujoco():
    """A planar root (two slides and a hinge in one MuJoCo body, test_six_axis's) spun at 25 rad/s
    about its hinge under gravity: after 0.5 s its hinge has turned about two turns, and its
    coordinates are MuJoCo's qpos (RK4 at 0.25 ms, ours lie-midpoint-4 at 1 ms) within 1e-6, the
    two integrators' truncation at h ω = 0.025 a step (measured 3e-7; the hinge read modulo 2π
    would be 4π off)."""
    import mujoco
    from test_six_axis import BODIES, mujoco_body, our_body
    model, data = mujoco_body(BODIES["two slides and a hinge (a planar root)"], [0.1, 0.2, 0.3])
    data.qvel[:] = [0.0, 0.0, 25.0]
    mujoco.mj_forward(model, data)
    sim = our_body(model, data, moving=True)
    model.opt.timestep, model.opt.integrator = 2.5e-4, mujoco.mjtIntegrator.mjINT_RK4
    for _ in range(500):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
    q = sim.joint_coordinates()
    assert data.qpos[2] > 4 * math.pi
    assert max(abs(q[model.joint(j).name] - data.qpos[j]) for j in range(model.njnt)) <= 1e-6, (q, data.qpos)
