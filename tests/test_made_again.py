"""A sub-step's calls made again where they are given what the last ones were, without the Python
that finds them: a prepare of joints alone with no pair of shapes within reach
(`physics.constraints.solver.SceneSolver._prepare_again`: the joints' start, the shapes' placement
and the broad phase, nothing between them), the choice of joint terms (`SceneSolver.choose_joint_terms`),
the velocity solve (`physics.constraints.gauss_seidel.SolveBuffers.again`) and RATTLE's stage
(`physics.constraints.rattle.JointBodies.stage`). Each must give the bits of its whole path, which
it leaves to do the work wherever the sub-step differs: a count of rows, a pair within reach, a
setting, an input, a restore.

Checked against the same runs with nothing made again (`_whole_paths`): the state hashes are
equal, bit for bit, and the short paths are taken in most sub-steps (so the equality is not that
of two whole paths)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation  # noqa: E402
from physics.constraints.gauss_seidel import SolveBuffers  # noqa: E402
from physics.constraints.rattle import JointBodies  # noqa: E402
from physics.constraints.solver import SceneSolver  # noqa: E402

SCENES = ROOT / "assets" / "scenes"


def _counted(monkeypatch):
    """Count `_prepare_again`'s answers: {True: made again, False: left to the whole prepare}."""
    counts = {True: 0, False: 0}
    again = SceneSolver._prepare_again

    def counting(self, *args):
        made = again(self, *args)
        counts[made] += 1
        return made
    monkeypatch.setattr(SceneSolver, "_prepare_again", counting)
    return counts


def _run(scene, steps, between=None):
    """The state hash after `steps` steps of `scene`, `between(sim, k)` called before step k."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    for k in range(steps):
        if between is not None:
            between(sim, k)
        sim.step()
    return sim.state_hash()


def _whole_paths(monkeypatch):
    """Nothing made again: no prepare kept, no solve found, and the choice's and the stage's last
    calls forgotten before each."""
    monkeypatch.setattr(SceneSolver, "_keep_again", lambda self, *args: None)
    monkeypatch.setattr(SolveBuffers, "again", lambda self, *args: None)
    for owner, name, last in ((SceneSolver, "choose_joint_terms", "_last_choice"), (JointBodies, "stage", "_last_stage")):
        whole = getattr(owner, name)

        def forgetting(self, *args, whole=whole, last=last, **options):
            setattr(self, last, None)
            return whole(self, *args, **options)
        monkeypatch.setattr(owner, name, forgetting)


@pytest.mark.parametrize("scene, steps", [("pendulum", 240), ("double_pendulum", 240), ("chain", 120)])
def test_a_prepare_made_again_gives_the_whole_prepares_bits(scene, steps, monkeypatch):
    """The chain's links swing into reach of one another now and then: those sub-steps find pairs
    and take the whole prepare, so both paths and the hand-over between them are in the run."""
    counts = _counted(monkeypatch)
    made = _run(scene, steps)
    assert counts[True] > 0.8 * (counts[True] + counts[False]), counts
    with monkeypatch.context() as m:
        _whole_paths(m)
        assert _run(scene, steps) == made


def _changes(sim, k):
    """Between steps: a setting that enters the rows, sleep switched on and off, an impulse, a
    snapshot restored (the prepare kept is then forgotten)."""
    if k == 40:
        sim.set("erp", 0.3)
    elif k == 60:
        sim.set("sleep", True)
    elif k == 70:
        sim.set("sleep", False)
    elif k == 80:
        sim.apply_impulse("bob_60", [0.0, 0.0, 0.5])
    elif k == 90:
        _changes.snapshot = sim.snapshot()
    elif k == 110:
        sim.restore(_changes.snapshot)


def test_made_again_follows_settings_inputs_and_restores(monkeypatch):
    counts = _counted(monkeypatch)
    made = _run("pendulum", 160, _changes)
    assert counts[True] > 0 and counts[False] > 0, counts
    with monkeypatch.context() as m:
        _whole_paths(m)
        assert _run("pendulum", 160, _changes) == made


@pytest.mark.parametrize("scene", ["ant", "iiwa"])
def test_a_robots_choice_solve_and_stage_made_again_give_the_whole_paths_bits(scene, monkeypatch):
    """The ant on the floor (contacts: its solve is made again) and the iiwa's servos (joint terms:
    their choice is made again), 120 steps, an impulse and a restore among them."""
    def inputs(sim, k):
        if k == 30:
            last_body = [name for name, motion in zip(sim.names, sim.motion) if motion == "dynamic"][-1]
            sim.apply_impulse(last_body, [0.0, 2.0, 0.0])
        elif k == 50:
            inputs.snapshot = sim.snapshot()
        elif k == 80:
            sim.restore(inputs.snapshot)
    solves = {True: 0, False: 0}
    again = SolveBuffers.again

    def counting(self, *args):
        solution = again(self, *args)
        solves[solution is not None] += 1
        return solution
    with monkeypatch.context() as m:
        m.setattr(SolveBuffers, "again", counting)
        made = _run(scene, 120, inputs)
    if scene == "ant":      # (the iiwa's joints hold themselves, off the floor: it solves nothing)
        assert solves[True] > 0.5 * (solves[True] + solves[False]), solves
    with monkeypatch.context() as m:
        _whole_paths(m)
        assert _run(scene, 120, inputs) == made
