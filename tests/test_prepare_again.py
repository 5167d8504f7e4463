"""A prepare of joints alone, with no pair of shapes within reach, is made again from its bound
calls where its arguments are the last one's (`physics.constraints.solver.SceneSolver._prepare_again`):
the joints' start, the shapes' placement and the broad phase, nothing between them. It must give
the bits of the whole prepare, which it leaves to do the work wherever the sub-step differs: a
count of rows, a pair within reach, a setting, a restore.

Checked against the same runs with nothing kept to make again (`_keep_again` a no-op): the state
hashes are equal, bit for bit, and the short path is taken in most sub-steps (so the equality is
not that of two whole prepares)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation  # noqa: E402
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


def _without_again(monkeypatch):
    monkeypatch.setattr(SceneSolver, "_keep_again", lambda self, *args: None)


@pytest.mark.parametrize("scene, steps", [("pendulum", 240), ("double_pendulum", 240), ("chain", 120)])
def test_made_again_gives_the_whole_prepares_bits(scene, steps, monkeypatch):
    """The chain's links swing into reach of one another now and then: those sub-steps find pairs
    and take the whole prepare, so both paths and the hand-over between them are in the run."""
    counts = _counted(monkeypatch)
    made = _run(scene, steps)
    assert counts[True] > 0.8 * (counts[True] + counts[False]), counts
    with monkeypatch.context() as m:
        _without_again(m)
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
        _without_again(m)
        assert _run("pendulum", 160, _changes) == made
