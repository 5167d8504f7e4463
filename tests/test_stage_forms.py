"""The STAGES of a RATTLE sub-step as one function (`physics.pipeline.stages.rattle_substep_stages`):
in a scene with no sleep, no kinematic node and no timed impulse due, a sub-step of every body
runs each stage's branch for that case written out in the list's order, without the stage
functions and the list's loop between its compiled calls.

Checked against the plain list (`substep` made to take its loop: `_PLAIN_STAGES` made a list no
sub-step has): the same calls in the same order, so the runs must agree to the
bit (`Simulation.state_hash`), on scenes that take every branch the form has: joints held alone with
the solve left out (the pendulum, the chain), a velocity solve with contacts and joint limits (the
ant, the humanoid), a tree of parented links resting on the floor with RATTLE's retries (the iiwa),
the triple jump's composed sub-steps (lie-midpoint-4), and a retried island within a world, whose
halves take the list (the rope bridge)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation  # noqa: E402
from physics.pipeline import stages  # noqa: E402

SCENES = ROOT / "assets" / "scenes"
# (scene, steps, settings)
RUNS = [("pendulum", 120, {}), ("chain", 60, {}), ("ant", 60, {}), ("humanoid", 40, {}), ("iiwa", 120, {}),
        ("rope_bridge", 60, {}), ("double_pendulum", 60, {"integrator": "lie-midpoint-4"})]


def _run(scene, steps, settings, monkeypatch):
    """(state hash after `steps` steps, how many sub-steps took the form, how many sub-steps ran)."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    for name, value in settings.items():
        sim.set(name, value)
    taken = [0]
    form = stages.rattle_substep_stages

    def counted(*args, **kwargs):
        taken[0] += 1
        return form(*args, **kwargs)
    monkeypatch.setattr(stages, "rattle_substep_stages", counted)
    sim.step(steps)
    monkeypatch.setattr(stages, "rattle_substep_stages", form)
    return sim.state_hash(), taken[0], sim.substep_counts()["taken"]


@pytest.mark.parametrize("scene, steps, settings", RUNS, ids=[r[0] + "".join(f"-{v}" for v in r[2].values())
                                                               for r in RUNS])
def test_the_rattle_form_gives_the_bits_of_the_stage_list(scene, steps, settings, monkeypatch):
    """Bit for bit: the form runs the list's stages' calls in the same order."""
    form_hash, form, _ = _run(scene, steps, settings, monkeypatch)
    assert form > 0, f"{scene}: no sub-step took the form"
    # the list alone: the form's test of the plain list never holds
    monkeypatch.setattr(stages, "_PLAIN_STAGES", ())
    list_hash, none, ran = _run(scene, steps, settings, monkeypatch)
    assert none == 0 and ran > 0
    assert form_hash == list_hash, f"{scene}: the form ended elsewhere than the stage list ({form} of its sub-steps)"
