"""The joints' start of a sub-step taken once: where RATTLE's step chooses the joint terms it takes
(`physics.constraints.solver.SceneSolver.choose_joint_terms`, at the sub-step's start), the rows'
geometry it computes there is the start's (`physics.constraints.rattle.JointBodies.take_start`),
and the prepare that follows at the same poses takes it (`start_taken`: its one compiled call then
leaves the geometry out) instead of computing it again; and a node state's token for its buffers (`physics.model.hierarchy.NodeState.storage`),
which the shapes' placement checks in place of the buffers' views.

Checked two ways: the geometry taken is compared entry by entry with the geometry computed afresh
at the prepare's poses (`Joints.geometry`, the same kernel into new arrays: what the prepare would
have computed), and a run that computes it again in every prepare must end on the same bits
(`Simulation.state_hash`): the geometry reads the poses and the joints alone, and nothing moves a
body between the choice and the prepare. The scenes have joint terms (the ant's and the humanoid's
dampers and armatures, the iiwa's dampers, the iiwa_servo's servos); the iiwa's steps are retried
as halves, whose prepares compute their own; a damped hinge on a spinning hub (a joint on a moving
frame) leaves the start to its prepare."""
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
STEPS = {"ant": 60, "humanoid": 40, "iiwa": 120, "iiwa_servo": 60}
# every field of the geometry (a joint's coordinate where its kind has one; 0 elsewhere in both: the
# arrays start at 0, `joint_geometry_arrays`, and the kernel never writes it there)
FIELDS = ("C", "jacobian", "active", "inequality", "motor", "coordinate", "frame_speed")


def _run(scene, monkeypatch, again=False):
    """(state hash after STEPS[scene] steps, prepares that took the start's geometry, prepares that
    computed it); `again`: the choice records nothing, so every prepare computes it. Each geometry
    taken is checked against the geometry computed afresh at the prepare's poses."""
    counts = {"taken": 0, "computed": 0}
    start_taken, take_start = JointBodies.start_taken, JointBodies.take_start

    def checked(self, joints, centre, rotation):
        taken = start_taken(self, joints, centre, rotation)
        counts["taken" if taken else "computed"] += 1
        if taken:
            fresh = joints.geometry(centre.copy(), rotation.copy())
            for name in FIELDS:     # to the bit: the same kernel at the same poses
                assert getattr(self.start_rows, name).tobytes() == getattr(fresh, name).tobytes(), name
        return taken

    def recorded_nothing(self, joints, centre, rotation):
        return self.geometry(joints, centre, rotation, self.start_rows)

    monkeypatch.setattr(JointBodies, "start_taken", checked)
    monkeypatch.setattr(JointBodies, "take_start", recorded_nothing if again else take_start)
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(STEPS[scene])
    return sim.state_hash(), counts["taken"], counts["computed"], sim.substep_counts()["retries"]


@pytest.mark.parametrize("scene", sorted(STEPS))
def test_the_prepare_takes_the_geometry_the_choice_of_terms_computed_at_its_poses(scene, monkeypatch):
    """Most prepares take the start's geometry (the first step's builds the joints first, and a
    retry's halves compute theirs: a fifth of the iiwa's prepares over its first 120 steps); a run
    computing it in every prepare ends on the same bits. (A run first: the first in a process makes
    its calls typed, not bound, which keep no last start to take again, and computes more.)"""
    _run(scene, monkeypatch)
    once, taken, computed, retries = _run(scene, monkeypatch)
    assert taken >= 0.7 * (taken + computed), (taken, computed)
    if scene == "iiwa":     # (the halves' prepares, after the attempt's state was put back)
        assert retries > 0 and computed > 1, (retries, computed)
    again, none, computed_again, _ = _run(scene, monkeypatch, again=True)
    assert none == 0 and computed_again == taken + computed
    assert once == again


def test_a_node_states_storage_token_changes_only_when_its_views_would():
    """The token is the same object while the arrays' views are the same rows of the same buffers
    (writes leave it; a copy has its own), and a new one once a node is added, within the capacity
    or past it (the buffers grow), or removed (`Hierarchy.add`, `remove`)."""
    h = Hierarchy(np.array([-1]), NodeState(1))
    state = h.local
    token = state.storage
    state.translation[0] = (1.0, 2.0, 3.0)
    state.velocity = np.ones((1, 3))
    assert state.storage is token
    assert state.copy().storage is not token
    grown = False
    for k in range(40):     # past the first capacity: the buffers grow at least once
        buffer, before = state.translation.base, state.storage
        h.add(f"n{k}", 0)
        assert state.storage is not before and h.world_state.storage is not before
        grown |= state.translation.base is not buffer
    assert grown
    before = state.storage
    h.remove("n3")
    assert state.storage is not before
    assert NodeState(2).storage is not NodeState(2).storage


# A damped hinge whose side a is a kinematic hub spinning about y: a joint on a moving frame, with a
# term RATTLE's step takes (its damper)
SPUN_HINGE = """
[world]
dt = 0.016666666667
integrator = "lie-midpoint"
substeps = 2

[[node]]
name = "hub"
motion = "kinematic"
translation = [0.0, 2.0, 0.0]
angular_velocity = [0.0, 0.8, 0.0]

[[node]]
name = "bob"
motion = "dynamic"
translation = [0.8, 2.0, 0.0]
mass = 1.0
shape = { type = "sphere", radius = 0.1 }

[[joint]]
type = "hinge"
a = "hub"
b = "bob"
anchor = [0.0, 2.0, 0.0]
axis = [0.0, 0.0, 1.0]
damping = 0.5
"""


def test_a_joint_on_a_moving_frame_computes_its_start_in_the_prepare(monkeypatch):
    """Where a joint rides a moving frame, the prepare follows the frame again before its rows, so
    the choice of the terms leaves the start's rows alone and every prepare computes its geometry."""
    from physics.io.scene import scene_from_text
    taken = []
    take_start = JointBodies.take_start
    monkeypatch.setattr(JointBodies, "take_start", lambda self, *a: taken.append(1) or take_start(self, *a))
    sim = Simulation(scene_from_text(SPUN_HINGE))
    solver = sim._work.solver
    sim.step(30)
    assert solver._any_framed and solver.joints_termed and solver._exact is not None
    assert not taken
    # the hinge's point holds: the bob 0.8 m from the hub's centre, to RATTLE's projection tolerance
    # (a millionth of a millimetre) and a spinning frame's rounding
    translation = sim.world_poses()[0]
    lever = np.linalg.norm(translation[sim.names.index("bob")] - translation[sim.names.index("hub")])
    assert abs(lever - 0.8) < 1e-9, lever


def _one_by_one(todo, geometry, terms, rows, poses, slack, frames, velocity, h, halves):
    """`_joint_start`'s calls made one by one from Python, each kernel on its own (the prepare as
    it made them before they were one call), with numpy's copies; whole (`halves` None: these
    scenes have fewer than SPLIT_JOINTS joints; tests/test_solver.py checks the halves)."""
    assert halves is None
    from physics.constraints.joints import fill_joint_rows, fill_joint_terms, fill_limit_slack, follow_turns, \
        joint_geometry
    from physics.constraints.solver import _projections_alone
    if todo[0]:
        joint_geometry(*geometry)
    if todo[5]:
        follow_turns(geometry[0], geometry[1], geometry[2], geometry[3])
    if todo[1]:
        fill_joint_terms(*terms)
    count = fill_joint_rows(*rows)
    np.copyto(poses[2], poses[0])
    np.copyto(poses[3], poses[1])
    easing = fill_limit_slack(*slack) if todo[2] else 0.0
    if todo[3]:
        np.copyto(frames[1], frames[0])
    alone = False
    if todo[4]:
        out, slots = rows[12], rows[13]
        alone = _projections_alone(slots[:count], out.body[:count], out.jacobian[:count], out.lower[:count],
                                   out.upper[:count], geometry[3], velocity, h, rows[11])
    return count, easing, alone


def _start_run(scene, one_by_one=False, steps=60, **settings):
    """(state hash after `steps` steps, which of `_joint_start`'s flags were set in some prepare);
    `scene` a scene file's name or a scene's text; `one_by_one`: its calls made one by one."""
    from physics.constraints import solver as solver_module
    from physics.io.scene import load_scene, scene_from_text
    loaded = load_scene(SCENES / f"{scene}.toml") if "\n" not in scene else scene_from_text(scene)
    chosen = loaded.settings()
    chosen.update(settings)
    sim = Simulation(loaded, chosen)
    fused, seen = solver_module._joint_start, np.zeros(6, bool)

    def start(todo, *arguments):
        seen[:] |= todo
        return (_one_by_one if one_by_one else fused)(todo, *arguments)

    # (bound when a prepare first meets its arrays: this one is bound as a plain function)
    solver_module._joint_start = start
    try:
        sim.step(steps)
    finally:
        solver_module._joint_start = fused
    return sim.state_hash(), tuple(seen)


# Between them the scenes set every flag: the geometry computed and taken, the terms (the ant's
# dampers, the iiwa_servo's servos), the limits (the humanoid's), a moving frame and a hinge that
# may turn over (the spun hinge), the rows held by the projections alone (the pendulum's) and
# SHAKE's start (no RATTLE: no terms, never alone).
START_SCENES = {"pendulum": {}, "ant": {}, "humanoid": {}, "iiwa_servo": {}, "spun hinge": {},
                "pendulum, SHAKE": {"integrator": "semi-implicit-euler", "shake": True}}


@pytest.mark.parametrize("name", sorted(START_SCENES))
def test_the_start_in_one_call_gives_the_bits_of_its_calls_one_by_one(name):
    """Bit for bit: the prepare's one compiled call (`physics.constraints.solver._joint_start`) runs
    the kernels the calls one by one run, in their order."""
    scene = SPUN_HINGE if name == "spun hinge" else name.split(",")[0]
    fused_hash, seen = _start_run(scene, **START_SCENES[name])
    one_hash, seen_again = _start_run(scene, one_by_one=True, **START_SCENES[name])
    assert seen == seen_again
    assert fused_hash == one_hash, name
    expected = {"pendulum": (1, 0, 0, 0, 1, 0), "ant": (1, 1, 1, 0, 1, 0), "spun hinge": (1, 1, 0, 1, 1, 1),
                "pendulum, SHAKE": (1, 0, 0, 0, 0, 0)}.get(name)
    if expected is not None:
        assert seen == tuple(map(bool, expected)), (name, seen)
