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


def test_a_robot_resting_exactly_on_the_ground_keeps_its_warm_starts(monkeypatch):
    """r2d2's wheels touch the added ground at depth 0 and carry no load (its base is fixed): their
    stored impulses are 0. A point found in the cache with an impulse of 0 is no new point, so no
    sub-step after the first (nothing stored yet) is a cold start (were a zero impulse read as
    "nothing stored", every one would be, and swept on towards COLD_START_SWEEPS, 500), with the
    importer's ground exactly at the wheels. Once its first step has settled it, at rest, its
    solve holds every row to round-off from its first sweep, where the stage ends
    (`gauss_seidel.CONVERGED`)."""
    from physics.constraints.gauss_seidel import CONVERGED
    from physics.constraints.solver import SceneSolver
    cold = []
    solve = SceneSolver.solve

    def noted(self, *args, **kwargs):
        cold.append(self.step.cold_start)
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(SceneSolver, "solve", noted)
    sim = physics.Simulation(physics.load_urdf(PYBULLET / "r2d2.urdf"))
    sweeps = []
    for _ in range(10):
        sim.step()
        sweeps.append(len(sim.solver_residual()))
    assert len(sim.contacts()[0]) >= 4
    assert len(cold) >= 10 and not any(cold[1:]), cold
    assert sweeps[1:] == [1] * 9 and sim.solver_residual()[-1] <= CONVERGED, (sweeps, sim.solver_residual())


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
    factorizations, less the solves the feet's contacts took (stats[11]: a foot held or let go,
    `rattle.Holds`), sum to at most 0.6 of what letting each go alone would take (one at the start
    and one for each row; measured 0.48)."""
    from physics.constraints.solver import SceneSolver
    from physics.pipeline import retry
    projections = []
    take = SceneSolver._take_position_stats

    def counted(solver):
        take(solver)
        stats = solver._joint_bodies.stats
        projections.append((stats[1], stats[9], stats[6] - stats[11]))

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


def test_a_driven_ant_steps_its_nominal_sub_steps_within_the_step_budget():
    """gymnasium's ant driven as a learner drives it: every actuator a random control within its
    range, drawn anew every fifth step (seeded), its motors' 150 N m on legs of some 0.01 kg m²
    held to armatures of 1. RATTLE's first kick of a motor's torque goes to the links and to the
    rotor in their inertias' shares (`physics.constraints.joints.fill_joint_terms`): given to the
    links alone, it turned them far in the drift, the drift's curvature took a fifth of the
    sub-steps again as halves (1.24 taken a nominal one), and a final attempt whose limit let go
    found no descent and was halved past the budget (three times a step's passes). Over 300 steps:
    at most 1.05 sub-steps taken a nominal one (measured 1.00), no step past twice its passes
    (`retry.STEP_BUDGET`), no projection leaving J₀ for the current rows, and after every step
    each hinge's anchors within `retry.STANDING_ERROR` (10 µm) of each other
    (`Simulation.joint_separation`, an independent reading of the poses)."""
    from physics.constraints.solver import SceneSolver
    from physics.pipeline import retry
    left = []
    take = SceneSolver._take_position_stats

    def counted(solver):
        take(solver)
        left.append(solver._joint_bodies.stats[1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        sim = physics.Simulation(physics.load_mjcf(GYMNASIUM / "ant.xml"))
    controls = [(name, spec["ctrl_range"]) for name, _, spec in sim.actuators()]
    rng = np.random.default_rng(0)
    apart = 0.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SceneSolver, "_take_position_stats", counted)
        for i in range(300):
            if i % 5 == 0:
                for name, (low, high) in controls:
                    sim.set_control(name, float(rng.uniform(low, high)))
            sim.step()
            apart = max(apart, float(sim.joint_separation().max()))
    counts = sim.substep_counts()
    assert counts["per_nominal"] <= 1.05 and counts["worst_step"] <= 2.0, counts
    assert not any(left), sum(1 for x in left if x)
    assert apart <= retry.STANDING_ERROR, apart


def test_driven_robots_with_armatures_keep_their_sub_steps():
    """gymnasium's reacher (links of 4e-5 kg m² on armatures of 1, motors of gear 200) and pusher
    driven by random controls held five steps each: a motor's first kick shared with its rotor
    (as above), they take their nominal sub-steps (measured 1.000 and 1.006 taken a nominal one,
    where a kick on the links alone took 1.96 and 1.60), and the reacher, whose motors do work on
    it that no energy of the run counts, is no runaway (`physics.pipeline.stages.actuators_push`:
    it was stopped as one within 500 steps). Their position projections converge as Newton's do:
    at most 1.2 factorizations a projection (measured 1.00 and 1.05; the pusher's near-massless goal
    and object once damped every arm row's Newton step through a regularization relative to the
    largest diagonal, `physics.constraints.joint_graph`, and it took 11.5 for an error that fell by
    a tenth an iteration)."""
    for name, limit in (("reacher", 1.02), ("pusher", 1.05)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ModelWarning)
            sim = physics.Simulation(physics.load_mjcf(GYMNASIUM / f"{name}.xml"))
        controls = [(actuator, spec["ctrl_range"]) for actuator, _, spec in sim.actuators()]
        rng = np.random.default_rng(1)
        factorizations = []
        for i in range(600):
            if i % 5 == 0:
                for actuator, (low, high) in controls:
                    sim.set_control(actuator, float(rng.uniform(low, high)))
            sim.step()
            factorizations.append(sim._work.solver._joint_bodies.stats[6])
        assert np.mean(factorizations) <= 1.2, (name, np.mean(factorizations))
        counts = sim.substep_counts()
        assert counts["per_nominal"] <= limit and counts["worst_step"] <= 2.0, (name, counts)


def test_the_stats_largest_gap_leaves_out_joints_stacked_with_sliders():
    """The Stats' "joints' largest gap" (app.panel.Panel._pinned_joints) reads the anchors'
    distance of ball, hinge and fixed joints. gymnasium's half_cheetah stacks its root's rootx and
    rootz sliders and rooty hinge on one pair of bodies: the hinge's anchors part by the sliders'
    travel (tenths of a metre after a second), which is no error, so it is left out; the legs'
    hinges, projected by RATTLE to 1e-12 m (rattle.TOLERANCE, its rows' error), stay within 1e-10 m
    (measured 2e-14 m; the rows' error bounds the anchors' gap, with a margin for the poses' round-off)."""
    from types import SimpleNamespace
    from app.panel import Panel
    sim = physics.Simulation.from_file(GYMNASIUM / "half_cheetah.xml")
    sim.step(100)
    pinned = Panel._pinned_joints(SimpleNamespace(), sim)
    names = [sim.scene.joints[k].get("name") for k in pinned]
    assert names == ["bthigh", "bshin", "bfoot", "fthigh", "fshin", "ffoot"], names
    rooty = [joint.get("name") for joint in sim.scene.joints].index("rooty")
    separation = sim.joint_separation()
    assert separation[rooty] > 0.05, separation[rooty]       # the sliders' travel, not an error
    assert separation[pinned].max() < 1e-10, separation[pinned]
