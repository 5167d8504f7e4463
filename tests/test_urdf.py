"""URDF import (`physics.load_urdf`) against MuJoCo's and PyBullet's URDF readers, on pybullet_data's robots.

Forward kinematics: at 100 random joint configurations every link frame, composed by the scene's
transform hierarchy, equals
- MuJoCo's (`MjModel.from_xml_path` of the same URDF, `mj_kinematics`, `xpos`/`xmat`; MuJoCo
  computes in double precision and fuses fixed links into their parents, so the moving links'
  frames are compared) to 1e-9 m and 1e-9 (rotation matrix entries): both sides compose the same
  transforms (~1e-15), so 1e-9 is the issue's bound with a wide margin;
- PyBullet's (DIRECT mode, `resetJointState`, `getLinkState(..., computeForwardKinematics=1)`
  link frames relative to the base link frame) to 2e-6: the pybullet wheel is built in single
  precision (it returns 0.1575 m as 0.15749999880), and its poses differ by at most 5.1e-7 m
  (measured on these five robots), float32 rounding of positions of ~1 m through up to 10 joints.
Inertials: every moving link's mass, centre and tensor with the links fixed to it equal MuJoCo's
(`body_mass`, `body_ipos`, `body_iquat`, `body_inertia`: MuJoCo fuses the fixed links the same
way) to 1e-12, and PyBullet's (`getDynamicsInfo`, loaded with URDF_USE_INERTIA_FROM_FILE) to
1e-6 relative (single precision).
"""
import os
import warnings
from pathlib import Path

import numpy as np
import mujoco
import pybullet
import pybullet_data
import pytest

import physics
from physics.io.articulated import ModelWarning
from physics.io.scene import SceneError
from robots import assert_assembly_equal, composite, model_poses, scene_assemblies

DATA = Path(pybullet_data.getDataPath())
MODELS = ("kuka_iiwa/model.urdf", "franka_panda/panda.urdf", "r2d2.urdf", "a1/a1.urdf", "laikago/laikago.urdf")
MUJOCO_MODELS = ("kuka_iiwa/model.urdf", "r2d2.urdf", "a1/a1.urdf")   # MuJoCo reads these (panda: package:// paths; laikago: point masses)
PYBULLET_POSE_TOLERANCE = 2e-6     # single-precision pybullet (module docstring)
PYBULLET_INERTIA_TOLERANCE = 1e-6  # relative, single precision
# Random joint configurations each forward-kinematics check compares: each loads the robot again
# (its meshes' bounds included), a tenth of a second; 30 configurations put every joint at 30
# angles across its range, which a wrong axis, sign or offset cannot pass.
POSES = 30


def load(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        return physics.load_urdf(path, **options)


def matrix(quaternion_xyzw):
    return np.array(pybullet.getMatrixFromQuaternion(quaternion_xyzw)).reshape(3, 3)


def frame(position, orientation):
    return np.asarray(position, float), matrix(orientation)


def compose(a, b):
    return a[0] + a[1] @ b[0], a[1] @ b[1]


def invert(a):
    return -a[1].T @ a[0], a[1].T


@pytest.fixture(scope="module")
def client():
    client = pybullet.connect(pybullet.DIRECT)
    yield client
    pybullet.disconnect(client)


def open_robot(client, path):
    """The body id and, per joint index, (joint name, type, child link name, lower, upper)."""
    robot = pybullet.loadURDF(str(path), useFixedBase=True, flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
    joints = []
    for j in range(pybullet.getNumJoints(robot, physicsClientId=client)):
        info = pybullet.getJointInfo(robot, j, physicsClientId=client)
        joints.append((info[1].decode(), info[2], info[12].decode(), info[8], info[9]))
    return robot, joints


def base_link_frame(client, robot):
    """The base link's frame: PyBullet reports the base's inertial frame."""
    inertial = frame(*pybullet.getBasePositionAndOrientation(robot, physicsClientId=client))
    info = pybullet.getDynamicsInfo(robot, -1, physicsClientId=client)
    return compose(inertial, invert(frame(info[3], info[4])))


@pytest.mark.parametrize("name", MODELS)
def test_forward_kinematics_matches_pybullet(client, name):
    path = DATA / name
    robot, joints = open_robot(client, path)
    base = base_link_frame(client, robot)
    root = next(iter(load(path).names[i] for i in range(2, 3)))   # the root link: after the model and ground nodes
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(POSES):
        positions = {}
        for j, (joint, kind, _, low, high) in enumerate(joints):
            if kind in (pybullet.JOINT_REVOLUTE, pybullet.JOINT_PRISMATIC):
                value = rng.uniform(low, high) if high > low else rng.uniform(-np.pi, np.pi)
                pybullet.resetJointState(robot, j, value, physicsClientId=client)
                positions[joint] = value
        poses = model_poses(load(path, joint_positions=positions))
        root_pose = poses[root]
        for j, (_, _, link, _, _) in enumerate(joints):
            state = pybullet.getLinkState(robot, j, computeForwardKinematics=1, physicsClientId=client)
            theirs = compose(invert(base), frame(state[4], state[5]))
            ours = compose(invert(root_pose), poses[link])
            worst = max(worst, np.abs(ours[0] - theirs[0]).max(), np.abs(ours[1] - theirs[1]).max())
    pybullet.removeBody(robot, physicsClientId=client)
    assert worst <= PYBULLET_POSE_TOLERANCE, f"{name}: largest pose difference {worst:.3g}"


@pytest.mark.parametrize("name", MUJOCO_MODELS)
def test_forward_kinematics_matches_mujoco(name):
    path = DATA / name
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    root = load(path).names[2]
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(POSES):
        positions = {}
        for j in range(model.njnt):
            low, high = model.jnt_range[j] if model.jnt_limited[j] else (-np.pi, np.pi)
            data.qpos[model.jnt_qposadr[j]] = positions[model.joint(j).name] = rng.uniform(low, high)
        mujoco.mj_kinematics(model, data)
        poses = model_poses(load(path, joint_positions=positions))
        for i in range(1, model.nbody):   # MuJoCo's world is the fixed root link's frame
            t, R = compose(invert(poses[root]), poses[model.body(i).name])
            worst = max(worst, np.abs(t - data.xpos[i]).max(), np.abs(R - data.xmat[i].reshape(3, 3)).max())
    assert worst <= 1e-9, f"{name}: largest pose difference {worst:.3g}"


@pytest.mark.parametrize("name", MUJOCO_MODELS)
def test_masses_and_inertias_match_mujoco(name):
    path = DATA / name
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    scene = load(path)
    poses = model_poses(scene)
    root = poses[scene.names[2]]
    ours = scene_assemblies(scene, [model.joint(j).name for j in range(model.njnt)])
    theirs = {}
    for i in range(1, model.nbody):
        R = data.ximat[i].reshape(3, 3)
        t, R = compose(root, (data.xipos[i].copy(), R))
        theirs[model.body(i).name] = (model.body_mass[i], t, R @ np.diag(model.body_inertia[i]) @ R.T)
    assert set(theirs) == set(ours)
    for link, assembly in theirs.items():
        assert_assembly_equal(ours[link], assembly, f"{name} {link}")


@pytest.mark.parametrize("name", [m for m in MODELS if "laikago" not in m])   # laikago's hips are point masses (see below)
def test_masses_and_inertias_match_pybullet(client, name):
    path = DATA / name
    robot, joints = open_robot(client, path)
    scene = load(path)
    poses = model_poses(scene)
    root = scene.names[2]
    base = base_link_frame(client, robot)
    ours = scene_assemblies(scene, [j[0] for j in joints])
    # each link with a moving joint owns the links fixed below it
    owner = {}
    for j, (_, kind, link, _, _) in enumerate(joints):
        parent = pybullet.getJointInfo(robot, j, physicsClientId=client)[16]
        owner[j] = j if kind != pybullet.JOINT_FIXED else owner.get(parent)
    groups = {}
    for j, (_, _, link, _, _) in enumerate(joints):
        info = pybullet.getDynamicsInfo(robot, j, physicsClientId=client)
        if owner[j] is None or info[0] == 0:
            continue
        state = pybullet.getLinkState(robot, j, computeForwardKinematics=1, physicsClientId=client)
        t, R = compose(poses[root], compose(invert(base), frame(state[0], state[1])))   # the link's inertial frame
        groups.setdefault(joints[owner[j]][2], []).append((info[0], t, R @ np.diag(info[2]) @ R.T))
    pybullet.removeBody(robot, physicsClientId=client)
    assert set(groups) == set(ours)
    for link, parts in groups.items():
        m, c, I = ours[link]
        m2, c2, I2 = composite(parts)
        assert abs(m - m2) <= PYBULLET_INERTIA_TOLERANCE * m2, f"{name} {link}: mass {m} vs {m2}"
        assert np.abs(c - c2).max() <= PYBULLET_POSE_TOLERANCE, f"{name} {link}: centre {c} vs {c2}"
        assert np.abs(I - I2).max() <= PYBULLET_INERTIA_TOLERANCE * np.abs(I2).max(), f"{name} {link}: inertia {I} vs {I2}"


def test_point_mass_links_get_a_named_inertia():
    """laikago's hip motors have mass and a zero tensor: the sandbox's bodies need an inertia, so they
    get a solid sphere's (0.05 m), and the warning says so."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scene = physics.load_urdf(DATA / "laikago/laikago.urdf")
    assert any("zero inertia" in str(w.message) for w in caught if issubclass(w.category, ModelWarning))
    i = list(scene.names).index("FR_hip_motor:body")
    assert np.allclose(scene.inertia_body[i], 0.4 * scene.mass[i] * 0.05 ** 2, rtol=1e-12)


@pytest.mark.parametrize("name", MUJOCO_MODELS)
def test_joint_damping_is_the_files_as_mujoco_reads_it(name):
    """URDF `<dynamics damping>` is the joint's damper (N m s/rad or N s/m): each of our joints has
    the damping MuJoCo's own URDF compiler gives its degree of freedom, exactly."""
    path = DATA / name
    model = mujoco.MjModel.from_xml_path(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = physics.load_urdf(path)
    ours = {j["name"]: j.get("damping", 0.0) for j in scene.joints if "name" in j}
    theirs = {model.joint(j).name: float(model.dof_damping[model.jnt_dofadr[j]]) for j in range(model.njnt)}
    assert ours == {name: theirs[name] for name in ours}


def test_joint_types_and_limits():
    """kuka: seven revolute joints -> hinges with the file's limits and coordinate (the loaded angle); panda's
    fingers: prismatic -> sliders; a floating base is a dynamic root without joint."""
    kuka = load(DATA / "kuka_iiwa/model.urdf", joint_positions={"lbr_iiwa_joint_2": 0.5})
    hinges = [j for j in kuka.joints if j["type"] == "hinge"]
    assert len(hinges) == 7 and len(kuka.joints) == 7
    second = next(j for j in hinges if kuka.names[j["b"]] == "lbr_iiwa_link_2:body")
    assert second["lower"] == -2.09439510239 and second["upper"] == 2.09439510239     # as the file writes them
    assert second["coordinate"] == 0.5 and second["name"] == "lbr_iiwa_joint_2"
    panda = load(DATA / "franka_panda/panda.urdf")
    assert sorted(j["type"] for j in panda.joints).count("slider") == 2
    a1 = load(DATA / "a1/a1.urdf", floating_base=True)
    base = next(n for n in a1.names if n.endswith(":body") and a1.parent[list(a1.names).index(n)] == 0)
    assert a1.motion[list(a1.names).index(base)] == "dynamic"
    assert not any(a1.names[j["b"]] == base for j in a1.joints)


# --- bad files: one SceneError naming the file and the element, never another exception ------------

GOOD = """<robot name="two">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="arm"><inertial><origin xyz="0 0 0.25"/><mass value="2"/><inertia ixx="0.05" iyy="0.05" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.05" length="0.5"/></geometry></collision></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1" rpy="0 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""

BAD = {
    "missing link": (GOOD.replace('<child link="arm"/>', '<child link="hand"/>'), "<joint name='shoulder'>", "no <link> has this name"),
    "cycle": (GOOD.replace("</robot>", '<joint name="back" type="fixed"><parent link="arm"/><child link="base"/></joint></robot>'),
              "<robot>", "exactly one root"),
    "NaN": (GOOD.replace('xyz="0 0 0.1"', 'xyz="0 nan 0.1"'), "<joint name='shoulder'>", "finite"),
    "negative mass": (GOOD.replace('<mass value="2"/>', '<mass value="-2"/>'), "<link name='arm'>", "mass"),
    "zero mass": (GOOD.replace('<mass value="2"/>', '<mass value="0"/>'), "<link name='arm'>", "needs a mass > 0"),
    "triangle inequality": (GOOD.replace('izz="0.01"', 'izz="0.5"'), "<link name='arm'>", "triangle inequality"),
    "missing mesh": (GOOD.replace('<box size="0.2 0.2 0.2"/>', '<mesh filename="nowhere.stl"/>'), "<link name='base'>", "mesh file not found"),
    "bad axis": (GOOD.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>'), "<joint name='shoulder'>", "must not be zero"),
    "unknown type": (GOOD.replace('type="revolute"', 'type="screw"'), "<joint name='shoulder'>", "expected revolute"),
    "not URDF": ("<mujoco/>", "<mujoco>", "<robot>"),
    "syntax": (GOOD[:200], None, "XML syntax error"),
    "XML bomb": ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
                 '<robot name="&lol2;"/>', None, "refused XML"),
    "external entity": ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><robot name="&x;"/>',
                        None, "refused XML"),
}


def test_a_good_file_loads(tmp_path):
    path = tmp_path / "two.urdf"
    path.write_text(GOOD)
    scene = physics.load_urdf(path)
    arm = list(scene.names).index("arm:body")
    assert scene.mass[arm] == 2.0 and [j["type"] for j in scene.joints] == ["hinge"]


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_file_is_one_clear_error(tmp_path, case):
    text, element, words = BAD[case]
    path = tmp_path / "bad.urdf"
    path.write_text(text)
    with pytest.raises(SceneError) as caught:
        physics.load_urdf(path)
    message = str(caught.value)
    assert str(path) in message and words in message
    if element is not None:
        assert f"element {element}" in message


def test_an_oversized_file_is_refused_before_reading(tmp_path, monkeypatch):
    import physics.io.articulated as articulated
    monkeypatch.setattr(articulated, "FILE_BYTES_MAX", 100)
    path = tmp_path / "big.urdf"
    path.write_text(GOOD)
    with pytest.raises(SceneError, match="at most 100 are read"):
        physics.load_urdf(path)


def test_trailing_nul_bytes_and_whitespace_are_read_as_the_peers_read_them(tmp_path):
    """pybullet_data's humanoid.urdf ends in a NUL byte, which PyBullet and MuJoCo accept: so do we
    (it loads, its spherical joints as ball joints), and a small robot with NULs and whitespace after
    its last element loads; a NUL inside the XML is still a syntax error."""
    humanoid = DATA / "humanoid" / "humanoid.urdf"
    assert humanoid.read_bytes().endswith(b">\r\n\0")
    assert "chest" in physics.load_urdf(humanoid).names
    path = tmp_path / "nul.urdf"
    path.write_bytes(GOOD.encode() + b"\n\0\0 \n")
    assert physics.load_urdf(path).names == physics.load_urdf(_written(tmp_path, GOOD)).names
    path.write_bytes(GOOD.replace("<link", "\0<link", 1).encode())
    with pytest.raises(SceneError, match="XML syntax error"):
        physics.load_urdf(path)


@pytest.mark.parametrize("make, kind", [(os.mkfifo, "is a FIFO"), (os.mkdir, "is a directory")])
def test_a_model_that_is_not_a_regular_file_is_refused_at_once(tmp_path, make, kind):
    """A FIFO given as the model would hang a reader (an ordinary open waits for a writer forever):
    it and a directory are refused before a byte is read, naming the file and what it is; so is
    a device, which never ends."""
    for loader, suffix in ((physics.load_urdf, ".urdf"), (physics.load_mjcf, ".xml")):
        path = tmp_path / f"special{suffix}"
        make(path)
        with pytest.raises(SceneError, match=kind):
            loader(path)
    with pytest.raises(SceneError, match="is a device"):
        physics.load_urdf("/dev/zero")


def _written(folder, text, name="good.urdf"):
    path = folder / name
    path.write_text(text)
    return path


def test_mutated_files_load_or_raise_scene_error(tmp_path):
    """400 mutations of a real robot (a1: 22 links, primitives): each loads or raises one
    SceneError; no other exception, no hang."""
    from import_fuzz import mutations
    text = (DATA / "a1/a1.urdf").read_text()
    (tmp_path / "meshes").symlink_to(DATA / "a1" / "meshes")    # its visual meshes, where the file names them
    rng = np.random.default_rng(3)
    outcomes = {"loaded": 0, "refused": 0}
    for k, mutated in enumerate(mutations(text, rng, 400)):
        path = tmp_path / f"case{k}.urdf"
        path.write_text(mutated)
        try:
            load(path)
            outcomes["loaded"] += 1
        except SceneError as error:
            assert str(path) in str(error)
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 0 and outcomes["refused"] > 0, outcomes


# --- every door opens a robot: load_scene, the runner, the app (open box, drag and drop) -----------

def test_load_scene_dispatches_on_the_suffix():
    """`physics.load_scene` (hence Simulation.from_file, run, compare, sweep, the app) reads .urdf
    with load_urdf; the imported scene's TOML text reloads to the same arrays bit for bit (what a
    recording keeps)."""
    from physics.io.scene import load_scene, scene_from_text
    path = DATA / "r2d2.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        scene = load_scene(path)
    again = scene_from_text(scene.toml_text, "again")
    assert scene.names == again.names
    for key in ("parent", "translation", "rotation", "mass", "inertia_body", "colors"):
        assert np.array_equal(getattr(scene, key), getattr(again, key)), key
    assert [j["anchor"].tolist() for j in scene.joints] == [j["anchor"].tolist() for j in again.joints]


def test_runner_runs_a_urdf(tmp_path):
    from physics.__main__ import main
    out = tmp_path / "r2d2.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        assert main(["run", str(DATA / "r2d2.urdf"), "--steps", "5", "--out", str(out)]) == 0
    data = np.load(out)
    assert data["translation"].shape[0] == 6 and np.all(np.isfinite(data["translation"]))


@pytest.mark.display
def test_the_app_opens_robots_by_drop_and_by_path(window):
    from conftest import frames
    w = window("tank")
    v = w.viewer
    frames(w, 2)
    urdf = DATA / "kuka_iiwa" / "model.urdf"
    w.dispatch_event("on_file_drop", 10, 10, [str(urdf)])
    for _ in range(600):                 # the app may wait for kernels prepared beside it
        frames(w, 1)
        if v.session.scene_path == urdf:
            break
    assert v.session.scene_path == urdf and v.session.error is None, v.session.error
    assert "lbr_iiwa_link_7" in v.session.sim.names and v.session.sim.time > 0
    assert v.session.scene_text == v.session.sim.scene.toml_text           # a recording of it carries the TOML text
    import gymnasium
    mjcf = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "ant.xml"
    assert v.session.open(str(mjcf))
    for _ in range(600):
        frames(w, 1)
        if v.session.scene_path == mjcf:
            break
    assert v.session.scene_path == mjcf and "torso:body" in v.session.sim.names
    frames(w, 3)
    assert v.session.sim.first_non_finite() is None


def test_visual_meshes_are_drawn_and_collision_shapes_collide_unseen():
    """kuka: every link has a visual mesh (OBJ) and a collision mesh (STL). The visual is a drawn
    node with the file and scale (the app reads it); the collision mesh is its convex hull (64 of the
    exact hull's vertices: its STL's hull has 362), colliding but not drawn (`visible` false)."""
    scene = load(DATA / "kuka_iiwa/model.urdf")
    names = list(scene.names)
    visual = names.index("lbr_iiwa_link_3:visual0")
    assert scene.meshes[visual]["file"].endswith("link_3.obj") and scene.shapes[visual] is None
    collision = names.index("lbr_iiwa_link_3:collision0")
    assert scene.shapes[collision]["type"] == "hull" and not scene.visible[collision]
    import trimesh
    exact = np.asarray(trimesh.load(DATA / "kuka_iiwa/meshes/link_3.stl", force="mesh").convex_hull.vertices)
    vertices = np.asarray(scene.shapes[collision]["vertices"])
    assert len(vertices) == 64 and max(np.min(np.linalg.norm(exact - v, axis=1)) for v in vertices) <= 1e-12
    assert scene.parent[visual] == scene.parent[collision] == names.index("lbr_iiwa_link_3")


@pytest.mark.parametrize("mesh, words", [
    ('{ file = 3 }', "expected a string"),
    ('{ file = "" }', "expected a file path"),
    ('{ scale = [1.0, 1.0, 1.0] }', "a mesh needs a file"),
    ('{ file = "a.stl", scale = [1.0, -1.0, 1.0] }', "mesh.scale"),
    ('{ file = "a.stl", colour = 1 }', "unknown key"),
])
def test_a_bad_mesh_key_is_one_clear_error(tmp_path, mesh, words):
    path = tmp_path / "mesh.toml"
    path.write_text(f'[[node]]\nname = "a"\nmesh = {mesh}\n')
    with pytest.raises(SceneError, match=words):
        physics.load_scene(path)


def test_a_mesh_file_is_resolved_from_the_scene_folder_and_not_read(tmp_path):
    """Physics never reads a drawn mesh: a missing one loads (a recording replayed elsewhere), the
    app names it when it cannot draw it."""
    path = tmp_path / "mesh.toml"
    path.write_text('[[node]]\nname = "a"\nvisible = false\nshape = { type = "sphere", radius = 0.1 }\n'
                    'mesh = { file = "parts/a.stl" }\n')
    scene = physics.load_scene(path)
    assert scene.meshes[0] == {"file": str(tmp_path / "parts" / "a.stl"), "scale": [1.0, 1.0, 1.0]}
    assert not scene.visible[0]


def test_a_recording_of_an_imported_robot_replays_bit_for_bit(tmp_path):
    """A recording carries the imported scene as TOML text (no URDF or mesh needed to replay it),
    and its replay reaches the recorded state hashes."""
    from physics.pipeline.recording import read_recording, write_recording
    from physics.pipeline.simulation import Simulation
    from physics.pipeline.timeline import Timeline
    sim = Simulation(load(DATA / "r2d2.urdf"))
    timeline = Timeline(sim)
    for _ in range(6):
        timeline.step()
    path = tmp_path / "r2d2.rec"
    write_recording(path, timeline)
    recording = read_recording(path)
    assert recording.scene_text == sim.scene.toml_text
    replayed = recording.timeline()
    replayed.seek(replayed.head)
    assert replayed.sim.state_hash() == sim.state_hash()


@pytest.mark.display
def test_an_unreadable_visual_mesh_shows_the_collision_shapes_instead(window, tmp_path):
    """A link whose visual mesh cannot be read is drawn by its collision shapes (never nothing),
    and the app names the file; a readable mesh (pybullet_data's duck, COLLADA) is drawn."""
    (tmp_path / "bad.stl").write_bytes(b"not a mesh at all")
    duck = DATA / "duck.dae"
    text = GOOD.replace('<collision><geometry><box size="0.2 0.2 0.2"/>',
                        '<visual><geometry><mesh filename="bad.stl"/></geometry></visual>'
                        '<collision><geometry><box size="0.2 0.2 0.2"/>')
    text = text.replace('<collision><origin xyz="0 0 0.25"/>',
                        f'<visual><geometry><mesh filename="{duck}" scale="0.002 0.002 0.002"/></geometry></visual>'
                        '<collision><origin xyz="0 0 0.25"/>')
    path = tmp_path / "two.urdf"
    path.write_text(text)
    from conftest import frames
    w = window(str(path))
    v = w.viewer
    frames(w, 3)
    groups = v.view.renderer.groups
    names = list(v.session.sim.names)
    assert names.index("base:collision0") in groups["box"]["index"]              # shown instead of bad.stl
    assert names.index("arm:collision0") not in groups.get("cylinder", {"index": []})["index"]   # the duck draws the arm
    assert any(kind.startswith("mesh:") and kind.endswith(f"@{(0.002, 0.002, 0.002)}") for kind in groups)
    assert any("bad.stl" in said for said in v.view.renderer.mesh_errors)
