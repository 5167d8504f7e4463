"""Every robot model pip installs that the sandbox runs: loaded as written (damping, stiffness,
armature, actuators, soft limits, MuJoCo's pair rule) and stepped from the file's pose with
contacts, its state stays finite and its energy bounded (the runaway check raises otherwise): all
twenty of docs/fidelity.md, "The twenty models as their authors wrote them". `make test` runs 0.5 s
of each, `make long` 3 s."""
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pybullet_data
import pytest

import physics
from physics.io.articulated import ModelWarning

GYMNASIUM = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
PYBULLET = Path(pybullet_data.getDataPath())
MODELS = [GYMNASIUM / f"{name}.xml" for name in (
    "ant", "hopper", "half_cheetah", "walker2d", "humanoid", "humanoidstandup", "reacher", "inverted_pendulum",
    "inverted_double_pendulum", "swimmer", "pusher")] + [PYBULLET / name for name in (
    "kuka_iiwa/model.urdf", "franka_panda/panda.urdf", "r2d2.urdf", "quadruped/minitaur.urdf", "a1/a1.urdf",
    "laikago/laikago.urdf", "cartpole.urdf", "racecar/racecar.urdf", "humanoid/humanoid.urdf")]


def run(path, seconds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        scene = physics.load_mjcf(path) if path.suffix == ".xml" else physics.load_urdf(path)
    sim = physics.Simulation(scene)
    sim.step(round(seconds / sim.settings.dt))
    assert sim.first_non_finite() is None


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name if p.suffix == ".xml" else str(p.relative_to(PYBULLET)))
def test_the_model_runs_from_its_files_pose(path):
    run(path, 0.5)


@pytest.mark.long
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name if p.suffix == ".xml" else str(p.relative_to(PYBULLET)))
def test_the_model_runs_3_s_from_its_files_pose(path):
    run(path, 3.0)


def test_a_robot_resting_exactly_on_the_ground_keeps_its_warm_starts():
    """r2d2's wheels touch the added ground at depth 0 and carry no load (its base is fixed): their
    stored impulses are 0. A point found in the cache with an impulse of 0 is no new point, so no
    step is a cold start, and every step's solve sweeps `iterations` times, with the importer's
    ground exactly at the wheels. (Were a zero impulse read as "nothing stored", every sub-step
    would be a cold start swept to COLD_START_SWEEPS, 500.)"""
    sim = physics.Simulation(physics.load_urdf(PYBULLET / "r2d2.urdf"))
    sweeps = []
    for _ in range(10):
        sim.step()
        sweeps.append(len(sim.solver_residual()))
    assert len(sim.contacts()[0]) >= 4
    assert sweeps == [sim.settings.iterations] * 10, sweeps


def test_an_ankle_at_its_limit_is_met_within_the_step_budget(monkeypatch):
    """gymnasium's ant lands with an ankle at its limit (2.3e-6 rad inside it, at its 193rd step)
    and its hips and ankles at or microradians past theirs. RATTLE's position projection takes a
    limit row where violated, and lets it go where its Newton solve gives it μ < 0 (the active set,
    `physics.constraints.rattle._release`): over 250 steps rows are let go in many
    projections, none leaves J₀ for the current rows, no step takes more than twice its passes,
    and after every step each hinge's anchors are within `retry.STANDING_ERROR` (10 µm) of each
    other (`Simulation.joint_separation`, the world distance of the two anchors: an independent
    reading of the poses). Rows let go in one Newton pass go together, at the cost of one
    factorization and the retake of any the new step would leave violated (`_retake`): over the
    projections that let two or more rows go (stats[9], which counts any taken back too), their
    factorizations sum to at most 0.6 of what letting each go alone would take (one at the start
    and one for each row; measured 0.4)."""
    from physics.constraints.solver import SceneSolver
    from physics.pipeline import retry
    projections = []
    take = SceneSolver._take_position_stats

    def counted(solver):
        take(solver)
        stats = solver._joint_bodies.stats
        projections.append((stats[1], stats[9], stats[6]))

    monkeypatch.setattr(SceneSolver, "_take_position_stats", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        sim = physics.Simulation(physics.load_mjcf(GYMNASIUM / "ant.xml"))
    apart = 0.0
    for _ in range(250):
        sim.step()
        apart = max(apart, float(sim.joint_separation().max()))
    left, let_go, factorizations = np.array(projections).T
    assert not left.any() and (let_go > 0).sum() >= 50, (left.sum(), (let_go > 0).sum())
    together = let_go >= 2
    assert together.sum() >= 20, together.sum()
    assert factorizations[together].sum() <= 0.6 * (1 + let_go[together]).sum(), \
        (factorizations[together].sum(), (1 + let_go[together]).sum())
    assert sim.substep_counts()["worst_step"] <= 2.0, sim.substep_counts()
    assert apart <= retry.STANDING_ERROR, apart


def test_a_driven_ant_lets_its_limits_go_by_newton_steps_within_the_step_budget(monkeypatch):
    """gymnasium's ant driven as a learner drives it: every actuator a random control within its
    range, drawn anew every fifth step (seeded). Its legs swing hard onto their limits and off
    again, and a limit row still pushing (an impulse so far) is let go where a Newton step would
    turn its impulse: the row's impulse ends at 0 and the other rows' step stays Newton's
    (`physics.constraints.rattle._let_go`, stats[10]). Clamped in place instead, the step was no
    Newton step: at the 185th step a projection with no retry left (`StepContext.final`) found no
    descent along the current rows 1.9 mm off, and the sub-step was halved past the budget, three
    times the step's passes. Over 300 steps: rows are let go so, no projection leaves J₀ for the
    current rows, no step takes more than twice its passes (`retry.STEP_BUDGET`), and after every
    step each hinge's anchors are within `retry.STANDING_ERROR` (10 µm) of each other
    (`Simulation.joint_separation`, an independent reading of the poses)."""
    from physics.constraints.solver import SceneSolver
    from physics.pipeline import retry
    projections = []
    take = SceneSolver._take_position_stats

    def counted(solver):
        take(solver)
        stats = solver._joint_bodies.stats
        projections.append((stats[1], stats[10]))

    monkeypatch.setattr(SceneSolver, "_take_position_stats", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        sim = physics.Simulation(physics.load_mjcf(GYMNASIUM / "ant.xml"))
    controls = [(name, spec["ctrl_range"]) for name, _, spec in sim.actuators()]
    rng = np.random.default_rng(0)
    apart = 0.0
    for i in range(300):
        if i % 5 == 0:
            for name, (low, high) in controls:
                sim.set_control(name, float(rng.uniform(low, high)))
        sim.step()
        apart = max(apart, float(sim.joint_separation().max()))
    left, turned = np.array(projections).T
    assert (turned > 0).any() and not left.any(), ((turned > 0).sum(), left.sum())
    assert sim.substep_counts()["worst_step"] <= 2.0, sim.substep_counts()
    assert apart <= retry.STANDING_ERROR, apart
