"""RATTLE's stage of a sub-step as one compiled call (`physics.constraints.rattle.joint_stage`,
`physics.pipeline.stages.stage_joints`): the world pass, the solver's bodies, their momentum, the
position projection, its kick applied to the bodies, the world pass again, the velocity projection
and its change applied, and the constraint acceleration over h, the calls the stage otherwise makes
one by one from Python.

Checked against that call-by-call stage (the same scene stepped with
`SceneSolver.joint_stage_fused` answering no): the same kernels in the same order, so the runs
must agree to the bit (`Simulation.state_hash`), on scenes that take every branch the stage has:
ball joints and hinges, a tree of parented links (the iiwa: carried velocities), joint terms and
limits with contacts and a velocity solve (the ant, the humanoid), and RATTLE's retries of an
island within a world (the rope bridge: its halves step the ropes' island alone, `StepContext.active`,
and take the stage call by call, so one run takes both)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation  # noqa: E402
from physics.constraints import solver as solver_module  # noqa: E402

SCENES = ROOT / "assets" / "scenes"
STEPS = {"pendulum": 120, "chain": 60, "iiwa": 120, "ant": 60, "humanoid": 40, "rope_bridge": 60}


def _run(scene):
    """(state hash after STEPS[scene] steps, how many sub-steps took the stage as one call and how
    many call by call, the retries)."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    solver, taken = sim._work.solver, {"one call": 0, "call by call": 0}

    def counted(name, project):
        def call(*args, **kwargs):
            taken[name] += 1
            return project(*args, **kwargs)
        return call

    solver.project_joints = counted("one call", solver.project_joints)
    solver.project_joint_positions = counted("call by call", solver.project_joint_positions)
    sim.step(STEPS[scene])
    return sim.state_hash(), taken["one call"], taken["call by call"], sim.substep_counts()["retries"]


@pytest.mark.parametrize("scene", sorted(STEPS))
def test_the_stage_in_one_call_gives_the_bits_of_its_calls_one_by_one(scene, monkeypatch):
    """Bit for bit: the one call runs the same compiled passes in the same order."""
    fused_hash, fused, _, retries = _run(scene)
    assert fused > 0, f"{scene}: no sub-step took RATTLE's stage as one call"
    monkeypatch.setattr(solver_module.SceneSolver, "joint_stage_fused", lambda self: False)
    separate_hash, none, separate, _ = _run(scene)
    assert none == 0 and separate > 0
    assert fused_hash == separate_hash, f"{scene}: the one call ended elsewhere ({retries} retries)"


def test_a_retried_island_s_halves_take_the_stage_call_by_call():
    """The rope bridge's crates land on it and its ropes' island is retried within the world: the
    attempts take the one call, the island's halves the calls one by one (so the test above checks
    both in one run)."""
    _, fused, separate, retries = _run("rope_bridge")
    assert retries > 0 and fused > 0 and separate > 0, (retries, fused, separate)
