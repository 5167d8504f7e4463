"""The joints' start of a sub-step taken once: where RATTLE's step chooses the joint terms it takes
(`physics.constraints.solver.SceneSolver.choose_joint_terms`, at the sub-step's start), the rows'
geometry it computes there is the start's (`physics.constraints.rattle.JointBodies.take_start`),
and the prepare that follows at the same poses takes it (`start_geometry`) instead of computing it
again; and a node state's token for its buffers (`physics.model.hierarchy.NodeState.storage`),
which the shapes' placement checks in place of the buffers' views.

Checked by independent means: the geometry taken is compared entry by entry with the geometry
computed afresh at the prepare's poses (`Joints.geometry`, new arrays), and a run that computes
it again in every prepare must end on the same bits (`Simulation.state_hash`): the geometry reads
the poses and the joints alone, and nothing moves a body between the choice and the prepare. The
scenes have joint terms (the ant's and the humanoid's dampers and armatures, the iiwa's servos)."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation  # noqa: E402
from physics.constraints.rattle import JointBodies  # noqa: E402
from physics.model.hierarchy import Hierarchy, NodeState  # noqa: E402

SCENES = ROOT / "assets" / "scenes"
STEPS = {"ant": 60, "humanoid": 40, "iiwa_servo": 60}
# every field `joint_geometry` writes for every joint (the coordinate only for the kinds that have one)
WRITTEN = ("C", "jacobian", "active", "inequality", "motor", "frame_speed")


def _run(scene, monkeypatch, again=False):
    """(state hash after STEPS[scene] steps, prepares that took the start's geometry, prepares that
    computed it); `again`: the choice records nothing, so every prepare computes it. Each geometry
    taken is checked against the geometry computed afresh at the prepare's poses."""
    counts = {"taken": 0, "computed": 0}
    start_geometry, take_start = JointBodies.start_geometry, JointBodies.take_start

    def checked(self, joints, centre, rotation):
        taken = self.start_at is not None
        geometry = start_geometry(self, joints, centre, rotation)
        counts["taken" if taken else "computed"] += 1
        if taken:
            fresh = joints.geometry(centre.copy(), rotation.copy())
            for name in WRITTEN:    # to the bit: the same kernel at the same poses
                assert getattr(geometry, name).tobytes() == getattr(fresh, name).tobytes(), name
        return geometry

    def recorded_nothing(self, joints, centre, rotation):
        return self.geometry(joints, centre, rotation, self.start_rows)

    monkeypatch.setattr(JointBodies, "start_geometry", checked)
    monkeypatch.setattr(JointBodies, "take_start", recorded_nothing if again else take_start)
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(STEPS[scene])
    return sim.state_hash(), counts["taken"], counts["computed"]


@pytest.mark.parametrize("scene", sorted(STEPS))
def test_the_prepare_takes_the_geometry_the_choice_of_terms_computed_at_its_poses(scene, monkeypatch):
    """Nearly every prepare takes the start's geometry (the first sub-step of the first step builds
    the joints first, and a retry's halves compute theirs); a run computing it in every prepare ends
    on the same bits."""
    once, taken, computed = _run(scene, monkeypatch)
    assert taken >= 0.9 * (taken + computed), (taken, computed)
    again, none, computed_again = _run(scene, monkeypatch, again=True)
    assert none == 0 and computed_again == taken + computed
    assert once == again


def test_a_node_states_storage_token_changes_only_when_its_buffers_grow():
    """The token is the same object while the buffers are (writes, a copy's own token), and a new
    one once a node added past the capacity moves them (`Hierarchy.add`)."""
    h = Hierarchy(np.array([-1]), NodeState(1))
    state = h.local
    token = state.storage
    state.translation[0] = (1.0, 2.0, 3.0)
    assert state.storage is token
    assert state.copy().storage is not token
    buffer, added = state.translation.base, 0
    while state.translation.base is buffer:     # add nodes until the buffers grow
        added += 1
        h.add(f"n{added}", 0)
        if state.translation.base is buffer:
            assert state.storage is token
    assert state.storage is not token
    assert state.storage is h.local.storage      # (the hierarchy keeps the same state object)
    assert NodeState(2).storage is not NodeState(2).storage
