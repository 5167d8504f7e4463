"""Six-axis joints (physics.constraints.joints, "Six-axis joints"): a body on up to three slides and
then up to three hinges through one anchor, MuJoCo's several joints in one body.

Independent checks: MuJoCo itself (its forward kinematics gives the load pose and every axis, its
qpos the coordinates our Davenport angles must reproduce, its RK4 the motion); central differences
of the kernel's own C against its Jacobian rows; the scene format's errors."""
from pathlib import Path

import mujoco
import numpy as np
import pytest

from physics.io.errors import SceneError
from physics.io.scene import scene_from_dict
from physics.math.rotation import quaternion_from_matrix
from physics.pipeline.simulation import Simulation

HERE = Path(__file__).resolve().parent
BODIES = {      # MuJoCo joints of one body, as gymnasium's models have them (and a general one)
    "three hinges (a hip)": '<joint name="h1" axis="1 0 0" pos="0 0 0.1"/><joint name="h2" axis="0 0 1" pos="0 0 0.1"/>'
                            '<joint name="h3" axis="0 1 0" pos="0 0 0.1"/>',
    "two hinges (a shoulder)": '<joint name="h1" axis="2 1 1" pos="0 0.1 0.1"/><joint name="h2" axis="0 -1 1" pos="0 0.1 0.1"/>',
    "two slides and a hinge (a planar root)": '<joint name="s1" type="slide" axis="1 0 0" pos="0 0 -1" ref="0.3"/>'
                                              '<joint name="s2" type="slide" axis="0 0 1"/><joint name="h1" axis="0 1 0" pos="0 0 0.1"/>',
    "two slides (a puck)": '<joint name="s1" type="slide" axis="0 1 0"/><joint name="s2" type="slide" axis="1 0 0"/>',
    "three oblique hinges": '<joint name="h1" axis="1 0.3 0" pos="0.1 0 0.1" ref="0.2"/>'
                            '<joint name="h2" axis="0.2 0.1 1" pos="0.1 0 0.1"/><joint name="h3" axis="0 1 0.4" pos="0.1 0 0.1"/>',
}


def mujoco_body(joints, qpos):
    """MuJoCo's model of one box on `joints` under a turned parent frame, at `qpos`."""
    xml = f'''<mujoco><option gravity="0 0 -9.81"/><worldbody><body name="b" pos="0.2 0.1 1" quat="0.9 0.1 0.3 0.2">
      {joints}<geom type="box" size=".1 .2 .3" pos="0.05 0.02 -0.2" quat="0.8 0.3 0.1 0.2"/></body></worldbody></mujoco>'''
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    return model, data


def our_body(model, data, moving=False):
    """The same body as a scene: a dynamic node at MuJoCo's centre of mass and principal axes, on a
    six_axis joint whose axes are MuJoCo's at this pose (xaxis), coordinates its qpos, refs its qpos0,
    limits its ranges; `moving`: with MuJoCo's velocity of its centre of mass and its ω at qvel
    (`mj_objectVelocity`), else at rest."""
    body = model.body("b").id
    axes = []
    for j in range(model.njnt):
        axis = {"type": "slider" if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE else "hinge",
                "name": model.joint(j).name, "axis": data.xaxis[j].tolist(), "coordinate": float(data.qpos[j])}
        if model.qpos0[j]:
            axis["ref"] = float(model.qpos0[j])
        if model.jnt_limited[j]:
            axis["lower"], axis["upper"] = model.jnt_range[j].tolist()
        axes.append(axis)
    document = {"title": "six", "world": {"gravity": [0.0, 0.0, -9.81], "dt": 1e-3, "substeps": 1,
                                          "integrator": "lie-midpoint-4"},
                "node": [{"name": "b", "motion": "dynamic", "translation": data.xipos[body].tolist(),
                          "rotation": quaternion_from_matrix(data.ximat[body].reshape(3, 3)).tolist(),
                          "mass": float(model.body_mass[body]), "inertia": model.body_inertia[body].tolist()}],
                "joint": [{"type": "six_axis", "b": "b", "anchor": data.xanchor[model.njnt - 1].tolist(), "axes": axes}]}
    if moving:
        velocity = np.zeros(6)      # [ω, v] world, v of the centre of mass (xipos)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, body, velocity, 0)
        document["node"][0]["angular_velocity"], document["node"][0]["velocity"] = velocity[:3].tolist(), \
            velocity[3:].tolist()
    return Simulation(scene_from_dict(document, HERE / "six.toml"))


def continues_bit_for_bit(model, data, taken):
    """`our_body` stepped 30 steps, its snapshot `taken(sim)` (which holds the axes' arrays) restored
    into a fresh one: the next 40 steps of both are the same bits."""
    sim = our_body(model, data)
    sim.step(30)
    snapshot = taken(sim)
    assert "solver.joints.axes" in snapshot.arrays
    other = our_body(model, data)
    other.restore(snapshot)
    sim.step(40)
    other.step(40)
    assert sim.state_hash() == other.state_hash()


@pytest.mark.parametrize("name", BODIES)
def test_coordinates_and_motion_are_mujocos(name):
    """At a random qpos (±1.2 rad or m per axis) our coordinates are MuJoCo's qpos to 1e-12 (measured
    ≤ 5e-15: the same angles by another road, Davenport's); then both swing freely for 0.3 s, ours
    lie-midpoint-4 at 1 ms, MuJoCo's RK4 at 0.25 ms: the centre of mass within 1e-8 m and every
    coordinate within 1e-8 of MuJoCo's qpos (measured ≤ 2e-10: the two integrators' truncation)."""
    rng = np.random.default_rng(sorted(BODIES).index(name))
    joints = BODIES[name]
    count = joints.count("<joint")
    model, data = mujoco_body(joints, rng.uniform(-1.2, 1.2, count))
    sim = our_body(model, data)
    names = [model.joint(j).name for j in range(model.njnt)]
    q = sim.joint_coordinates()
    assert max(abs(q[n] - data.qpos[j]) for j, n in enumerate(names)) < 1e-12
    model.opt.timestep, model.opt.integrator = 2.5e-4, mujoco.mjtIntegrator.mjINT_RK4
    body = model.body("b").id
    for _ in range(300):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
    assert np.abs(sim.world().transform.translation[0] - data.xipos[body]).max() < 1e-8
    q = sim.joint_coordinates()
    assert max(abs(q[n] - data.qpos[j]) for j, n in enumerate(names)) < 1e-8


@pytest.mark.parametrize("name", BODIES)
def test_rows_are_the_derivatives_of_their_errors(name):
    """Every row of the six-axis joint and of its axes (each with a limit, so that its coordinate
    row exists) from the compiled `joint_geometry`: J v equals the rate of change of C (the locked
    rows' errors, the limits' coordinates) along a motion that keeps the locked rows (v in their
    null space, where the coordinates are defined), by central differences of step 1e-6 (error
    ~1e-10 against rates of O(1); bound 1e-6), from a pose away from every axis's zero."""
    from physics.math.rotation import matrix_from_rotvec
    rng = np.random.default_rng(7)
    joints = BODIES[name].replace('/>', ' range="-3 3"/>')
    model, data = mujoco_body(joints, rng.uniform(-0.9, 0.9, joints.count("<joint")))
    sim = our_body(model, data)
    from physics.pipeline import stages
    world, centre, rotation, _, _ = stages.solver_state(sim.model, sim.data, sim.settings, sim._work)
    found = sim._solver.joints_at(world, centre, rotation)
    geometry = found.geometry(centre, rotation)
    locked = geometry.active[0] & ~geometry.motor[0]
    J_locked = geometry.jacobian[0, locked, 1]            # b's side (a is the world)
    null = np.linalg.svd(J_locked)[2][len(J_locked):] if len(J_locked) else np.eye(6)
    v = rng.normal(size=len(null)) @ null
    eps = 1e-6
    at = lambda s: found.geometry(centre + s * v[:3], matrix_from_rotvec(s * v[3:]) @ rotation)
    rate = (at(eps).C - at(-eps).C) / (2 * eps)
    rows = geometry.active & ~geometry.motor
    assert rows[1:, 6].all() and rows.sum() == locked.sum() + len(rows) - 1     # each axis its limit row
    np.testing.assert_allclose(geometry.jacobian[rows][:, 1] @ v, rate[rows], atol=1e-6)


@pytest.mark.parametrize("axes, key, reason", [
    ([{"type": "hinge", "axis": [1, 0, 0]}, {"type": "slider", "axis": [0, 1, 0]}], "type", "the slides come first"),
    ([{"type": "hinge", "axis": [1, 0, 0]}] * 4, "axes", "at most three of type hinge"),
    ([{"type": "hinge", "axis": [1, 0, 0]}, {"type": "hinge", "axis": [2, 0, 0]}], "axes", "not independent"),
    ([{"type": "hinge", "axis": [1, 0, 0], "motor_speed": 1.0}], "motor_speed", "unknown key"),
    ([{"axis": [1, 0, 0]}], "type", "an axis needs a type"),
    ("hinge", "axes", "expected an array of tables"),
])
def test_a_bad_six_axis_joint_is_one_clear_error(axes, key, reason):
    document = {"title": "bad", "node": [{"name": "b", "motion": "dynamic", "mass": 1.0, "inertia": [1, 1, 1]}],
                "joint": [{"type": "six_axis", "b": "b", "anchor": [0, 0, 0], "axes": axes}]}
    with pytest.raises(SceneError, match=reason) as caught:
        scene_from_dict(document, HERE / "bad.toml")
    assert caught.value.key == key and "[[joint]] #1" in str(caught.value)


def test_posing_an_axis_moves_that_coordinate_alone():
    """`pose_joint` on each axis of a six-axis joint (the Joint panel's sliders): the body turns
    about that axis as loaded (through the anchor) or moves along it, so that axis reads its new
    value and every other axis keeps its own, to 1e-12 (the Davenport angles of the new pose)."""
    rng = np.random.default_rng(11)
    for name, joints in BODIES.items():
        model, data = mujoco_body(joints, rng.uniform(-0.7, 0.7, joints.count("<joint")))
        sim = our_body(model, data)
        for axis in [model.joint(j).name for j in range(model.njnt)]:
            before = sim.joint_coordinates()
            sim.pose_joint(axis, before[axis] + 0.3)
            after = sim.joint_coordinates()
            assert abs(after[axis] - before[axis] - 0.3) < 1e-12, name
            assert all(abs(after[k] - before[k]) < 1e-12 for k in before if k != axis), name


def test_a_six_axis_scene_restores_bit_for_bit(tmp_path):
    """A snapshot of a body on a six-axis joint with limits and springs (its axes' arrays are part
    of the solver's state) taken mid-swing and restored into a fresh simulation of the same scene:
    the next 50 steps are the same bits as the uninterrupted run's."""
    joints = BODIES["two slides and a hinge (a planar root)"].replace('/>', ' range="-0.5 0.5" stiffness="3"/>')
    model, data = mujoco_body(joints, [0.2, -0.1, 0.3])
    continues_bit_for_bit(model, data, lambda sim: sim.snapshot())


@pytest.mark.parametrize("joints, qpos", [
    (BODIES["three hinges (a hip)"], [0.0, 2.0, 0.0]),          # the middle hinge past π/2: the other root
    ('<joint name="h1" axis="0 0 1" pos="0 0 0.1"/><joint name="h2" axis="1 0 0" pos="0 0 0.1"/>'
     '<joint name="h3" axis="0 0 1" pos="0 0 0.1"/>', [0.1, 0.7, -0.4]),     # Z X Z: the two roots tie
    ('<joint name="h1" axis="0 0 1" pos="0 0 0.1"/><joint name="h2" axis="1 0 0" pos="0 0 0.1"/>'
     '<joint name="h3" axis="0 0 1" pos="0 0 0.1"/>', [-0.2, -1.0, 0.3]),
    (BODIES["three hinges (a hip)"], [3.5, 0.2, -3.4]),         # past ±π: about the load's value, as a hinge
])
def test_the_loaded_coordinates_choose_the_branch(joints, qpos):
    """Two sets of three angles give one rotation, (θ₁ + π, π − θ₂, θ₃ + π): the pose alone cannot tell
    them apart. The one read is the one nearer the coordinates as loaded, so a body loaded at MuJoCo's
    qpos reads it back (to 1e-12) however far its middle hinge is turned, and whether or not the
    roots tie (first and third axes parallel: proper Euler angles); each angle in (−π, π] about its
    value as loaded. Then 0.2 s of free swing keeps them MuJoCo's (1e-8)."""
    model, data = mujoco_body(joints, qpos)
    sim = our_body(model, data)
    names = [model.joint(j).name for j in range(model.njnt)]
    q = sim.joint_coordinates()
    np.testing.assert_allclose([q[n] for n in names], qpos, rtol=0, atol=1e-12)
    model.opt.timestep, model.opt.integrator = 2.5e-4, mujoco.mjtIntegrator.mjINT_RK4
    for _ in range(200):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
    q = sim.joint_coordinates()
    np.testing.assert_allclose([q[n] for n in names], data.qpos, rtol=0, atol=1e-8)


def test_a_six_axis_snapshot_file_reads_back(tmp_path):
    """A six-axis scene's snapshot written to bytes (a file, a recording's keyframe) and read back:
    its axes' arrays are in the file's layout, and the run goes on bit for bit."""
    from physics.pipeline.snapshot import Snapshot
    model, data = mujoco_body(BODIES["two hinges (a shoulder)"], [0.4, -0.3])
    continues_bit_for_bit(model, data, lambda sim: Snapshot.from_bytes(sim.snapshot().to_bytes()))


@pytest.mark.parametrize("key, value, reason", [
    ("solver.joints.axis_count", lambda a: a + 4, "0 .. 3"),
    ("solver.joints.member", lambda a: np.where(a >= 0, a + 5, a), "an axis of its six-axis joint"),
    ("solver.joints.axes", lambda a: np.where(a != 0, np.inf, a), "finite values"),
    ("solver.joints.kind", lambda a: np.zeros_like(a), "the scene's kinds"),
])
def test_a_snapshot_with_impossible_axes_is_refused(key, value, reason):
    """The compiled kernels index with a six-axis joint's counts and members and divide by its axes'
    norms: a snapshot whose arrays would send them out of bounds or to inf is refused, naming the
    array, before anything changes."""
    import dataclasses
    model, data = mujoco_body(BODIES["three hinges (a hip)"], [0.2, 0.1, -0.3])
    sim = our_body(model, data)
    sim.step(5)
    snapshot = sim.snapshot()
    arrays = dict(snapshot.arrays)
    arrays[key] = value(arrays[key])
    before = sim.state_hash()
    with pytest.raises(ValueError, match=reason) as refused:
        sim.restore(dataclasses.replace(snapshot, arrays=arrays))
    assert key in str(refused.value) and sim.state_hash() == before


def test_collide_connected_holds_for_every_axis():
    """`collide_connected = true` on a six_axis joint reaches the joint of each of its axes (they join
    the same two nodes), so the two nodes' shapes collide."""
    document = {"title": "c", "node": [{"name": "a", "motion": "dynamic", "mass": 1.0, "inertia": [1, 1, 1]},
                                       {"name": "b", "motion": "dynamic", "mass": 1.0, "inertia": [1, 1, 1]}],
                "joint": [{"type": "six_axis", "a": "a", "b": "b", "anchor": [0, 0, 0], "collide_connected": True,
                           "axes": [{"type": "hinge", "axis": [1, 0, 0]}, {"type": "hinge", "axis": [0, 1, 0]}]}]}
    scene = scene_from_dict(document, HERE / "c.toml")
    assert [spec.get("collide_connected") for spec in scene.joints] == [True] * 3
