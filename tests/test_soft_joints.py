"""Soft joints (settings.joint_solve = "soft", physics.core.choices.JOINT_SOLVE): joints held by the
velocity solve alone, their error fed back at the ERP rate, the bodies stepped by semi-implicit
Euler (Box2D's soft step). Checked against the exact pendulum period (elliptic integral), against
passivity (the feedback's correction is a split impulse: it moves positions and gives no energy),
and on a net of loops, which the projected joints factor and these never do."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ellipk

from physics.core.settings import Settings, SettingError
from physics.pipeline.simulation import Simulation
from test_joints import INERTIA, PIVOT, pendulum

MAKE_SCENES = Path(__file__).resolve().parents[1] / "assets" / "scenes" / "make_scenes.py"


def _swing(theta0, h, periods, **world):
    """A soft ball pendulum from θ₀ for `periods` exact periods: (its exact period, its x over time,
    the energy above the start over the swing energy m g L (1 − cos θ₀), the joint's gap (m), the
    simulation)."""
    period = 4 * np.sqrt((INERTIA["ball"] + 1.0) / 9.81) * ellipk(np.sin(theta0 / 2) ** 2)
    sim = pendulum(theta0, h, joint_solve="soft", substeps=1, **world)
    e0, swing = sum(sim.energy().values()), 9.81 * (1 - np.cos(theta0))
    x, energy, gap = [], [], []
    for _ in range(int(periods * period / h)):
        sim.step(1)
        at = sim.world().transform.translation[0]
        x.append(at[0])
        energy.append((sum(sim.energy().values()) - e0) / swing)
        gap.append(abs(np.linalg.norm(at - PIVOT) - 1.0))
    return period, np.array(x), np.array(energy), np.array(gap), sim


def _period(x, h):
    """The mean time between downward zero crossings of x, each placed by linear interpolation."""
    t = (np.arange(len(x)) + 1) * h
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    return np.diff(t[down] + h * x[down] / (x[down] - x[down + 1])).mean()


@pytest.mark.parametrize("integrator", ["semi-implicit-euler", "lie-midpoint"])
def test_soft_pendulum_keeps_its_period_and_gains_no_energy(integrator):
    h = 1 / 240
    period, x, energy, gap, sim = _swing(np.radians(10.0), h, 5.2, integrator=integrator)
    # Small swing: the period is the elliptic integral's to 1e-4 (measured 5e-6: the joint gives
    # 0.05 mm, a 5e-5 longer pendulum), under either integrator (both step the soft joints by
    # semi-implicit Euler: under lie-midpoint's own half-seen changes the swing gained a fifth)
    assert _period(x, h) == pytest.approx(period, rel=1e-4)
    # Passive: the feedback's correction moves positions only; the energy stays within the
    # oscillation semi-implicit Euler's kick and drift give it (measured +0.37 % of the swing at
    # most), bound 1 %, and ends below its start
    assert energy.max() <= 0.01 and energy[-1] < 0.0
    assert gap.max() <= 2e-4      # measured 5.2e-5 m: the ERP's feedback closes each step's drift
    counts = sim.substep_counts()
    assert counts["retries"] == 0 and counts["per_nominal"] == 1.0


def test_soft_pendulum_at_60_degrees_drains_and_gives_millimetres():
    h = 1 / 240
    period, x, energy, gap, _ = _swing(np.radians(60.0), h, 5.2)
    # Large swing: the joint gives along the pull (measured 1.6 mm at the bottom), the period is
    # 0.5 % short of the exact one (measured), bound 1 %; the energy only falls (Baumgarte's
    # correction drains: measured 15 % of the swing over five periods), never above the start
    assert _period(x, h) == pytest.approx(period, rel=1e-2)
    assert gap.max() <= 3e-3
    assert energy.max() <= 1e-3 and -0.3 <= energy[-1] <= -0.05


def _net(side, tmp_path, soft):
    spec = importlib.util.spec_from_file_location("make_scenes", MAKE_SCENES)
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    path = tmp_path / f"net_{side}_{'soft' if soft else 'projected'}.toml"
    make.net(side, str(path), soft=soft)
    return Simulation.from_file(path)


def test_soft_net_steps_without_retries_or_factorizations(tmp_path):
    """A 6 × 6 net of ball joints (62 joints, 25 loops) released as a trough, for 1.5 s: soft, no
    sub-step is ever taken again and no projection runs; the joints give a few millimetres where
    the fall pulls them (measured 7.1 mm at most, on 0.3 m edges; bound 15 mm), and the net's energy only falls."""
    sim = _net(6, tmp_path, soft=True)
    assert sim.settings.joint_solve == "soft"
    e0 = sum(sim.energy().values())
    worst, rise = 0.0, -np.inf
    for _ in range(90):
        sim.step(1)
        worst = max(worst, float(np.max(sim.joint_separation())))
        rise = max(rise, sum(sim.energy().values()) - e0)
    counts = sim.substep_counts()
    assert counts["retries"] == 0 and counts["per_nominal"] == 1.0 and counts["worst_step"] == 1.0
    assert worst <= 0.015
    # (the ground's contacts and the joints' feedback both take energy; none gives it: 1 mJ for round-off)
    assert rise <= 1e-3


def test_joint_solve_is_a_checked_choice():
    settings = Settings()
    assert settings.joint_solve == "projected"
    settings.set("joint_solve", "soft")
    assert settings.joint_solve == "soft"
    with pytest.raises(SettingError, match=r"joint_solve.*'rigid'.*projected, soft"):
        settings.set("joint_solve", "rigid")
    assert settings.joint_solve == "soft"


def test_a_snapshot_keeps_the_joint_solve_and_older_hashes_stay():
    """A snapshot holds joint_solve where it is soft, and leaves it out where it is projected, the
    value every snapshot written before the setting existed implies: those runs hash as they did
    (tests/golden_hashes.json, recordings made then). Restoring one puts its value back."""
    sim = pendulum(np.radians(30.0), 1 / 240)
    projected = sim.snapshot()
    assert "joint_solve" not in projected.settings
    sim.set("joint_solve", "soft")
    sim.step(10)
    soft = sim.snapshot()
    assert soft.settings["joint_solve"] == "soft"
    sim.restore(projected)
    assert sim.settings.joint_solve == "projected" and sim.state_hash() == projected.hash()
    sim.restore(soft)
    assert sim.settings.joint_solve == "soft"
    sim.step(5)
    again = pendulum(np.radians(30.0), 1 / 240)
    again.restore(soft)
    again.step(5)
    assert again.state_hash() == sim.state_hash()       # soft runs are deterministic as any other


@pytest.mark.parametrize("world", [{"integrator": "lie-midpoint"}, {"integrator": "rk4"}, {"integrator": "explicit-euler"},
                                   {"integrator": "semi-implicit-euler", "shake": True}],
                         ids=["lie-midpoint", "rk4", "explicit-euler", "shake"])
def test_soft_joints_are_never_projected(world, monkeypatch):
    """Under any integrator, with or without `shake`, soft joints take no projection (RATTLE's,
    SHAKE's, the post-stabilization) and no joint-term choice (RATTLE's), and step as
    semi-implicit Euler does: the same bits."""
    from physics.constraints.solver import SceneSolver

    def refused(*args, **kwargs):
        raise AssertionError("a soft joint was projected")
    reference = pendulum(np.radians(40.0), 1 / 240, joint_solve="soft")
    reference.step(30)
    for name in ("post_stabilize", "project_joint_positions", "project_joint_velocities", "project_joints",
                 "choose_joint_terms"):
        monkeypatch.setattr(SceneSolver, name, refused)
    sim = pendulum(np.radians(40.0), 1 / 240, joint_solve="soft", **world)
    sim.step(30)
    assert sim.world().transform.translation.tobytes() == reference.world().transform.translation.tobytes()


def test_stability_inertia_adds_only_the_shortfall():
    """`stability_inertia` against its formula, by hand: a sphere (I = 2/5 m r², isotropic) hung
    from the world by a ball joint at lever r and holding a second body by another. Lightly loaded,
    h² K below I: its inverse inertia is left bit for bit. Loaded past it, I⁻¹ becomes
    (I + (h² K − I_min))⁻¹ = 1 / (h² K) on the diagonal (I isotropic, so I_min = I): the mode's
    ω h is then 1. The world side takes nothing; a torque row counts as |τ|, without a lever."""
    from physics.constraints.joints import BALL, FIXED, ROWS_PER_JOINT, Joints, stability_inertia
    centre, rotation = np.array([[0.0, 0.0, 0.0], [0.0, -0.6, 0.0]]), np.repeat(np.eye(3)[None], 2, axis=0)
    joints = Joints.from_world([BALL, FIXED], [[-1, 0], [0, 1]], [[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]],
                               [[1.0, 0.0, 0.0]] * 2, centre, rotation)
    inertia = 0.4 * 0.1 * 0.02 ** 2     # 0.1 kg sphere of 2 cm
    inverse = np.repeat((np.eye(3) / inertia)[None], 2, axis=0)
    h = 1 / 240
    impulse = np.zeros((2, ROWS_PER_JOINT))
    light = inverse.copy()
    impulse[:, 1] = 0.5 * inertia / (h * 0.3 * 2)       # h² K = ½ I on body 0 from its two joints
    assert stability_inertia(joints.model(), impulse, h, light, np.empty(2)) == 0
    assert light.tobytes() == inverse.tobytes()
    impulse[0, 1], impulse[1, 1], impulse[1, 4] = 98.1 * h, 98.1 * h, 2.0 * h      # 98.1 N on each, 2 N m on the second
    heavy = inverse.copy()
    assert stability_inertia(joints.model(), impulse, h, heavy, np.empty(2)) == 2
    # body 0: the world's joint and its side of the fixed one; body 1 (the same sphere): its side
    # of the fixed one, whose lever is 0.3 m too (Cramer's rule twice: 1e-12 relative)
    np.testing.assert_allclose(heavy[0], np.eye(3) / (h * h * (98.1 * 0.3 + 98.1 * 0.3 + 2.0)), rtol=1e-12)
    np.testing.assert_allclose(heavy[1], np.eye(3) / (h * h * (98.1 * 0.3 + 2.0)), rtol=1e-12)


KNOT = """
title = "Knot"
description = "A light knot carrying a heavy load on ball joints."
[world]
dt = 0.016666666667
integrator = "semi-implicit-euler"
iterations = 20
substeps = 4
joint_solve = "soft"

[[node]]
name = "knot"
motion = "dynamic"
translation = [0.0, 3.85, 0.0]
mass = 0.1
shape = { type = "sphere", radius = 0.02 }

[[node]]
name = "load"
motion = "dynamic"
translation = [0.3, 3.4, 0.0]
velocity = [0.0, 0.0, 2.0]
mass = 10.0
shape = { type = "sphere", radius = 0.3 }

[[joint]]
type = "ball"
b = "knot"
anchor = [0.0, 4.0, 0.0]

[[joint]]
type = "ball"
a = "knot"
b = "load"
anchor = [0.0, 3.7, 0.0]
"""


@pytest.mark.parametrize("stabilized", [True, False], ids=["stability-inertia", "without"])
def test_a_light_knot_under_a_heavy_load_holds(stabilized, tmp_path, monkeypatch):
    """A 0.1 kg knot of 2 cm (I = 1.6e-5 kg m²) between the world and a swinging 10 kg load, on
    0.15 m levers: under the load's 100 N its rotational mode is some 1,400 rad/s, six radians a
    sub-step at 240 a second. With the stability inertia the joints hold (measured 4.2 mm at most
    in 2 s; bound 1 cm) and the energy never rises; without it (the kernel replaced by one that adds
    nothing) the knot spins and its joints open by more than 5 cm (measured 12.7 cm): the scene
    tells the two apart, as the 100 × 100 net's hook corners do (1.5 m without, 4 cm with)."""
    import physics.constraints.solver as solver
    if not stabilized:
        monkeypatch.setattr(solver, "stability_inertia", lambda *arguments: 0)
    path = tmp_path / "knot.toml"
    path.write_text(KNOT)
    sim = Simulation.from_file(path)
    e0 = sum(sim.energy().values())
    worst, rise = 0.0, -np.inf
    for _ in range(120):
        sim.step(1)
        worst = max(worst, float(np.max(sim.joint_separation())))
        rise = max(rise, sum(sim.energy().values()) - e0)
    if stabilized:
        assert worst <= 0.01
        assert rise <= 1e-6 * 10 * 9.81      # (round-off of a 10 kg load's energy)
    else:
        assert worst >= 0.05
