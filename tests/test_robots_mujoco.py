"""MuJoCo beside ours on the imported robots: the iiwa arm (URDF) and the ant (MJCF).

Independent check for the arm: MuJoCo's own URDF compiler reads pybullet_data's
kuka_iiwa/model.urdf (the file physics.load_urdf imported), not our export. Its bodies are the
URDF's links (the link frame at the joint, the inertial frame from `<inertial>`, the full inertia
tensor diagonalised by MuJoCo), started at the joint angles the shipped scene was made with
(assets/scenes/make_robots.py) and stepped by its RK4 at our sub-step. Where our export and the
importer are right, that run is the `engine=mujoco` variant of `compare` to round-off, so the
divergence `compare` reports (our main run against its MuJoCo ghost) is the divergence of our main
run from MuJoCo-on-the-URDF.
"""
import csv
import os
from pathlib import Path

import mujoco
import numpy as np
import pytest

import physics
from physics.__main__ import main
from physics.io.articulated import Z_UP
from physics.io.mjcf_export import to_mjcf
from physics.io.scene import load_scene

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"
IIWA, ANT = SCENES / "iiwa.toml", SCENES / "ant.toml"
START = {"lbr_iiwa_joint_2": 0.6, "lbr_iiwa_joint_4": -1.2, "lbr_iiwa_joint_6": 0.8}   # make_robots.iiwa


def urdf_model(tmp_path, timestep):
    """MuJoCo's model of the original URDF: visuals discarded, the fixed root link_0 its world body,
    meshes by absolute path, contacts off (no ground in the file: the comparison
    below ends before our arm reaches the floor), RK4 at `timestep`."""
    import pybullet_data
    source = Path(pybullet_data.getDataPath()) / "kuka_iiwa" / "model.urdf"
    text = source.read_text().replace('<robot name="lbr_iiwa">', '<robot name="lbr_iiwa"><mujoco><compiler '
                                      'discardvisual="true" fusestatic="false"/></mujoco>', 1)
    text = text.replace('filename="meshes/', f'filename="{source.parent}{os.sep}meshes/')
    path = tmp_path / "iiwa_mujoco.urdf"
    path.write_text(text)
    model = mujoco.MjModel.from_xml_path(str(path))
    model.opt.timestep, model.opt.integrator = timestep, mujoco.mjtIntegrator.mjINT_RK4
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    assert np.all(model.dof_damping == 0.5)     # the file's <dynamics damping="0.5">, which the shipped arm has too
    data = mujoco.MjData(model)
    for name, angle in START.items():
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = angle
    mujoco.mj_forward(model, data)
    return model, data


def link_of(name):
    """The URDF link a scene node rides ("lbr_iiwa_link_3:collision0" -> "lbr_iiwa_link_3")."""
    return name.split(":")[0]


def test_iiwa_compare_with_mujoco_agrees_with_mujoco_on_the_urdf(tmp_path):
    """`compare iiwa.toml --variant engine=mujoco --duration 0.25`: exit 0, and its largest position
    divergence at every recorded step equals, within 1e-9 m, the largest distance between our main
    run's nodes and the same nodes carried by MuJoCo-on-the-URDF's links (a node keeps its pose in
    its link's frame from the load). At the load the two engines' link frames agree to 1e-9 m
    (the file's float32-printed origins composed in two orders). 1e-9 m: the two MuJoCo models
    differ only by round-off in their inertias (principal axes ours, MuJoCo's own eigensolver on
    the URDF's tensor) and link offsets, which over 60 RK4 steps of 1/240 s stays below 1e-10 m
    (measured). The arm starts its fall onto the floor at 0.3 s: the run stops before."""
    out = tmp_path / "compare"
    assert main(["compare", str(IIWA), "--variant", "engine=mujoco", "--duration", "0.25", "--out", str(out),
                 "--quiet"]) == 0
    with open(out / "compare.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["variant"] == "engine=mujoco"]
    assert len(rows) == 31

    sim = physics.Simulation.from_file(IIWA)
    h = sim.settings.dt / sim.settings.substeps
    model, data = urdf_model(tmp_path, h)
    names = sim.scene.names
    body_id = {model.body(b).name: b for b in range(1, model.nbody)} | {"lbr_iiwa_link_0": 0}   # the root link is MuJoCo's world
    carried = [i for i, name in enumerate(names) if link_of(name) in body_id]
    links = np.array([body_id[link_of(names[i])] for i in carried])
    assert sorted(set(links)) == list(range(8))

    def theirs():
        """Link frames of MuJoCo-on-the-URDF in our world (y up)."""
        return Z_UP @ data.xpos[links].T, Z_UP @ data.xmat[links].reshape(-1, 3, 3)

    translation, _, _ = sim.world_poses()
    t0, r0 = theirs()
    frames = [i for i in carried if ":" not in names[i]]        # the link frames themselves
    np.testing.assert_allclose(t0.T[[carried.index(i) for i in frames]], translation[frames], rtol=0, atol=1e-9)
    # each carried node in its link's frame at the load
    offset = np.einsum("nji,nj->ni", r0, translation[carried] - t0.T)
    for row in rows:
        step = round(float(row["time"]) / sim.settings.dt)
        sim.step(step - sim.step_count)
        while data.time < float(row["time"]) - 0.5 * h:
            mujoco.mj_step(model, data)
        mujoco.mj_kinematics(model, data)
        t, r = theirs()
        mine, _, _ = sim.world_poses()
        independent = np.linalg.norm(mine[carried] - (t.T + np.einsum("nij,nj->ni", r, offset)), axis=1).max()
        assert abs(float(row["max_position_error"]) - independent) <= 1e-9, row["time"]
    assert float(rows[-1]["max_position_error"]) > 0.0


def test_ant_exports_with_its_floating_torso_and_limits():
    """The ant (MJCF, contacts on) in MuJoCo through our export: one free joint (the torso) and
    eight hinges with the file's ranges; MuJoCo's own reading of gymnasium's ant.xml has the same
    masses to 1e-12 (ours come from the same geoms' volumes at density 1000 as MuJoCo's) and the
    same widths of joint ranges (degrees in the file, radians here) to 1e-12."""
    import gymnasium
    scene = load_scene(ANT)
    ours = mujoco.MjModel.from_xml_string(to_mjcf(scene))
    theirs = mujoco.MjModel.from_xml_path(str(Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "ant.xml"))
    assert ours.njnt == theirs.njnt == 9
    assert ours.jnt_type[0] == theirs.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    assert ours.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT == 0
    # our ranges count from the pose at load (the ankles bent into their ranges), the file's from its qpos0
    widths = lambda model: sorted(model.jnt_range[1:, 1] - model.jnt_range[1:, 0])
    np.testing.assert_allclose(widths(ours), widths(theirs), rtol=0, atol=1e-12)
    assert ours.body_mass.sum() == pytest.approx(theirs.body_mass.sum(), rel=1e-12)


@pytest.mark.display
def test_app_mujoco_ghost_on_the_arm_reads_as_compare(window, tmp_path):
    """The iiwa arm in the app: "MuJoCo (RK4)" in the Compare section at step 0 starts a MuJoCo
    ghost; 30 steps later (0.25 s, before the floor) its divergence readout is the headless
    `Comparison`'s with the same variant, to 1e-12 m (the same two runs from the same state: only
    the order of float operations in the readout may differ), and the ghost is drawn (magenta
    pixels, as tests/test_mujoco_ghost.py counts them)."""
    from conftest import click, frames, press
    from pyglet.window import key
    from test_mujoco_ghost import magenta_and_green

    from physics.tools.compare import Comparison
    w = window(IIWA)
    v = w.viewer
    press(w, key.SPACE)
    v.session.seek(0)
    frames(w, 2)
    click(w, "Compare")
    click(w, "MuJoCo (RK4)")
    assert list(v.ghosts.ghosts) == ["MuJoCo (RK4)"] and v.session.error is None
    v.session.step_physics(30)
    frames(w, 2)
    readout = v.ghosts.readouts["MuJoCo (RK4)"]
    headless = Comparison(IIWA)
    headless.add_variant("engine=mujoco", "engine=mujoco,integrator=rk4")
    headless.advance(30)
    theirs = headless.readouts()["engine=mujoco"]
    assert readout["time"] == pytest.approx(0.25, abs=1e-12) and theirs["time"] == pytest.approx(0.25, abs=1e-12)
    assert readout["max_position_error"] > 0
    assert abs(readout["max_position_error"] - theirs["max_position_error"]) <= 1e-12
    assert abs(readout["max_rotation_error"] - theirs["max_rotation_error"]) <= 1e-12
    magenta, _ = magenta_and_green(v.read_rgb())
    assert magenta > 150


def free_swinging_arm():
    """The shipped arm with its joint limits and dampers removed and no shapes (no ground, no
    contact): nothing but gravity and the seven hinges acts. Its links are nested as the URDF's tree: each link's body
    rides the previous link's frame."""
    import tomllib

    from physics.io.scene import scene_from_dict
    data = tomllib.loads(IIWA.read_text())
    for node in data["node"]:
        node.pop("shape", None)
    for joint in data["joint"]:
        for key in ("lower", "upper", "damping"):
            joint.pop(key, None)
    return scene_from_dict(data, IIWA)


def test_iiwa_passive_swing_tracks_mujoco_rk4():
    """The arm's free swing for 1 s: our lie-midpoint-4 at dt = 1/1000 against MuJoCo's RK4 on the
    exported arm at dt = 1/1000, both sampled every 10 ms: every body within 1e-6 m (measured
    7.1e-7; MuJoCo's own RK4 at 1/1000 is 7.0e-7 m from its 1/8000 run, ours 6.0e-7). Our rk4
    steps a scene with joints by lie-midpoint-4, bit for bit (physics.core.choices.JOINTED_SCHEME;
    tests/test_joints.py checks it on this arm), so it holds the same bound: with the velocity
    solve and a projection in its place it ended 14 cm away. Each body is
    nested under the previous link, so this holds only where counteraction moves a carried body
    exactly with its parent's position corrections (with the first-order form it was 4.2e-5 m off:
    third order). Our total energy (87 J above the origin) stays within 1e-6 of itself (measured
    1.4e-7, 1.2e-5 J: the RATTLE projections' tolerance)."""
    from physics.pipeline.simulation import Simulation
    scene = free_swinging_arm()
    bodies = [i for i, name in enumerate(scene.names) if name.endswith(":body")]
    assert len(bodies) == 7 and all(scene.parent[i] >= 0 and scene.motion[scene.parent[scene.parent[i]]] == "dynamic"
                                    for i in bodies[1:])
    dt = 1 / 1000
    model = mujoco.MjModel.from_xml_string(to_mjcf(scene, integrator="rk4", contacts=False))
    model.opt.timestep = dt
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    ids = [model.body(scene.names[i]).id for i in bodies]
    sim = Simulation(scene)
    for name, value in (("dt", dt), ("substeps", 1), ("integrator", "lie-midpoint-4")):
        sim.set(name, value)
    energy = sim.energy()
    start = energy["kinetic"] + energy["potential"]
    worst, drift = 0.0, 0.0
    for k in range(1, 1001):
        sim.step(1)
        mujoco.mj_step(model, data)
        if k % 10 == 0:
            mine = sim.world().transform.translation[bodies]
            worst = max(worst, float(np.abs(mine - data.xpos[ids]).max()))
            energy = sim.energy()
            drift = max(drift, abs(energy["kinetic"] + energy["potential"] - start))
    assert worst < 1e-6
    assert drift < 1e-6 * abs(start)


def passive_and_paired(scene, model, dt):
    """Our run of an imported `scene` without its joint limits, at dt in one lie-midpoint-4 sub-step,
    and (our node, MuJoCo's body) for each of MuJoCo's bodies that the scene has by name."""
    import tomllib

    from physics.io.scene import scene_from_dict
    from physics.pipeline.simulation import Simulation
    document = tomllib.loads(scene.toml_text)
    for joint in document["joint"]:
        for key in ("lower", "upper"):
            joint.pop(key, None)
    sim = Simulation(scene_from_dict(document, IIWA.parent / f"{scene.title}.toml"))
    for name, value in (("dt", dt), ("substeps", 1), ("integrator", "lie-midpoint-4")):
        sim.set(name, value)
    names = list(sim.names)
    return sim, [(names.index(model.body(b).name), b) for b in range(1, model.nbody) if model.body(b).name in names]


def test_panda_passive_swing_tracks_mujoco_reading_the_urdf():
    """pybullet_data's franka_panda as its file writes it (visual and collision geometry left out,
    inertials kept), loaded by us and by MuJoCo's own URDF compiler, both from joints 2, 4, 6 at
    0.6, -1.2, 0.8 rad, with no joint limits, no contacts and the mimic coupling of the fingers off in
    MuJoCo (it reads `<mimic>` as a joint equality; ours names it in the model's warning and leaves
    the finger free): our lie-midpoint-4 and MuJoCo's RK4, both at dt = 1 ms, for 0.5 s. Every body
    within 1e-6 m (measured 1.3e-8; 3.8e-8 at 1 s). Where the panda as written parts from MuJoCo, the
    cause is those two: the fingers' mimic (the right finger 1.6e-5 m off at 10 ms) and joint 2
    striking its limit near 0.4 s, a hard stop here and a spring in MuJoCo (3.6 mm at 0.5 s)."""
    import re
    import tempfile
    import warnings

    import pybullet_data

    start = {"panda_joint2": 0.6, "panda_joint4": -1.2, "panda_joint6": 0.8}
    text = (Path(pybullet_data.getDataPath()) / "franka_panda" / "panda.urdf").read_text()
    text = re.sub(r"<(visual|collision)>.*?</\1>", "", text, flags=re.S)
    dt = 1e-3
    model = mujoco.MjModel.from_xml_string(text)
    model.opt.timestep, model.opt.integrator = dt, mujoco.mjtIntegrator.mjINT_RK4
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    assert model.neq == 1       # the mimic, as an equality
    model.eq_active0[:] = 0
    data = mujoco.MjData(model)
    for name, angle in start.items():
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = angle
    mujoco.mj_forward(model, data)

    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (the model's warning names the mimic)
        (Path(folder) / "panda.urdf").write_text(text)
        scene = physics.load_urdf(Path(folder) / "panda.urdf", joint_positions=start, ground=False)
    sim, pairs = passive_and_paired(scene, model, dt)
    assert len(pairs) == 9      # seven links and two fingers
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    worst = 0.0
    for k in range(1, 501):
        sim.step(1)
        mujoco.mj_step(model, data)
        if k % 10 == 0:
            x = data.xpos[theirs]       # MuJoCo's z up is our y up: (x, y, z) -> (x, z, -y)
            worst = max(worst, float(np.abs(sim.world().transform.translation[ours] - np.stack([x[:, 0], x[:, 2], -x[:, 1]], 1)).max()))
    assert worst < 1e-6, worst


def test_humanoid_urdf_spherical_joints_track_mujoco_reading_the_urdf():
    """pybullet_data's humanoid.urdf: its eight `spherical` joints (PyBullet's extension, which MuJoCo
    reads as ball joints) are ball joints here too. Loaded by us and by MuJoCo's own URDF compiler
    (geometry left out, no contacts, the knees' and elbows' limits off), both from a pose with every
    ball joint turned (a quaternion each) and the hinges bent; our lie-midpoint-4 at dt = 1 ms and
    MuJoCo's RK4 at a quarter of it, for 0.5 s: every link within 1e-7 m (measured 3.6e-9). MuJoCo's
    RK4 is of 3rd order on ball joints (its quaternions): at 1 ms it is itself 2.2e-7 m from its own
    1/16000 s run, at 0.25 ms 3.3e-9. So the bound is the two schemes' truncation, far below any
    modelling error (a ball joint's anchor off by 1 mm, or a link's inertia off by 1 %, moves a link
    by 1e-4 m)."""
    import re
    import tempfile

    import pybullet_data


    text = (Path(pybullet_data.getDataPath()) / "humanoid" / "humanoid.urdf").read_text()
    text = re.sub(r"<(visual|collision)>.*?</\1>", "", text, flags=re.S).rstrip("\0\r\n ")
    dt = 1e-3
    model = mujoco.MjModel.from_xml_string(text)
    model.opt.timestep, model.opt.integrator = dt / 4, mujoco.mjtIntegrator.mjINT_RK4
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    balls = [model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_BALL]
    assert len(balls) == 8
    rng = np.random.default_rng(3)
    start = {}
    for name in balls:      # a turn of 0.3–0.6 rad about a random axis
        axis = rng.normal(size=3)
        angle = rng.uniform(0.3, 0.6)
        start[name] = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis / np.linalg.norm(axis)])
    start.update({"right_knee": -0.5, "left_knee": -0.3, "right_elbow": 0.7, "left_elbow": 0.4})
    data = mujoco.MjData(model)
    for name, value in start.items():
        address = model.jnt_qposadr[model.joint(name).id]
        data.qpos[address:address + np.size(value)] = value
    mujoco.mj_forward(model, data)

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "humanoid.urdf").write_text(text)
        scene = physics.load_urdf(Path(folder) / "humanoid.urdf", joint_positions=start, ground=False)
    assert sum(spec["type"] == "ball" for spec in scene.joints) == 8
    sim, pairs = passive_and_paired(scene, model, dt)
    assert len(pairs) == 12     # every link but the fixed root
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]

    def apart():
        x = data.xpos[theirs]       # MuJoCo's z up is our y up: (x, y, z) -> (x, z, -y)
        return float(np.abs(sim.world().transform.translation[ours] - np.stack([x[:, 0], x[:, 2], -x[:, 1]], 1)).max())

    assert apart() < 1e-12      # the same pose to start with
    worst = 0.0
    for k in range(1, 501):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
        if k % 10 == 0:
            worst = max(worst, apart())
    assert worst < 1e-7, worst


@pytest.mark.long
@pytest.mark.parametrize("path", ["r2d2.urdf", "quadruped/minitaur.urdf", "a1/a1.urdf", "cartpole.urdf",
                                  "racecar/racecar.urdf", "laikago/laikago.urdf"])
def test_pybullet_urdfs_track_mujoco_reading_the_urdf(path, tmp_path):
    """pybullet_data's other URDFs as their files write them (visual and collision geometry left
    out, inertials and `<dynamics>` kept), loaded by us and by MuJoCo's own URDF compiler, every
    hinge and slide at a random coordinate (±0.5 rad or m), no limits and no contacts: our
    lie-midpoint-4 at dt 1 ms against MuJoCo's RK4 at 0.25 ms for 1 s. Every body (its origin and
    points 0.1 m along its axes) within 1e-6 m (measured: laikago 2.1e-7, a1 3.8e-11, racecar
    9.5e-14, the others below 1e-14; their roots are fixed, as MuJoCo reads a URDF's). laikago's links are point masses
    (every inertia tensor 0), which MuJoCo refuses and the importer gives a solid sphere's of
    POINT_RADIUS: both read its file with that sphere's tensor written in. Its light links (1e-3 kg m²
    and less) whirl fastest of these, so the two schemes' truncation shows most there."""
    import re
    import warnings

    import pybullet_data

    from physics.io.articulated import POINT_RADIUS, ModelWarning
    text = (Path(pybullet_data.getDataPath()) / path).read_text()
    text = re.sub(r"<(visual|collision)>.*?</\1>", "", text, flags=re.S).rstrip("\0\r\n ")

    def sphere(match):      # a point mass's zero tensor -> the importer's stand-in, 2/5 m r²
        moment = 0.4 * float(match.group(2)) * POINT_RADIUS ** 2
        return (f'{match.group(1)}<inertia ixx="{moment!r}" ixy="0" ixz="0" iyy="{moment!r}" iyz="0" '
                f'izz="{moment!r}"/>')
    text = re.sub(r'(<mass value="([^"]+)"/>\s*)<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>', sphere, text)
    dt = 1e-3
    model = mujoco.MjModel.from_xml_string(text)
    model.opt.timestep, model.opt.integrator = dt / 4, mujoco.mjtIntegrator.mjINT_RK4
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    start = {model.joint(j).name: float(rng.uniform(-0.5, 0.5)) for j in range(model.njnt)
             if model.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)}
    for name, value in start.items():
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = value
    mujoco.mj_forward(model, data)
    file = tmp_path / Path(path).name
    file.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        scene = physics.load_urdf(file, joint_positions=start, ground=False)
    sim, pairs = passive_and_paired(scene, model, dt)
    assert len(pairs) == model.nbody - 1
    apart = apart_in_frames(sim, data, pairs)
    for _ in range(1000):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
    assert apart() < 1e-6, apart()


def gymnasium_passive(name, tmp_path, seed=0, terms=False, actuators=False):
    """gymnasium's `name`.xml with no joint ranges (MuJoCo's `limited` off) and its root welded to
    the world (no free joint, and none of the planar roots' rootx, rootz and rooty: in free fall a
    body's joints would not move), its joints' damping, armature and stiffness as written if
    `terms` (else 0), its actuators if `actuators` (else none), loaded by us (shapes and ground
    left out) and by MuJoCo (contacts and limits off, RK4), both with every hinge and slide at a
    random coordinate (±0.8 rad or m): (our Simulation at dt = 1 ms in one lie-midpoint-4 sub-step,
    MuJoCo's model at a quarter of it and its data, our node for each of MuJoCo's bodies)."""
    import re
    import tomllib
    import warnings

    import gymnasium

    from physics.io.articulated import ModelWarning
    from physics.io.scene import scene_from_dict
    from physics.pipeline.simulation import Simulation

    text = (Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / f"{name}.xml").read_text()
    if not terms:
        text = re.sub(r'(damping|armature|stiffness)="[^"]*"', r'\1="0"', text)
    text = re.sub(r' range="[^"]*"', "", text.replace('limited="true"', 'limited="false"'))
    text = re.sub(r'<freejoint[^>]*/>|<joint[^>]*type="free"[^>]*/>|<joint[^>]*name="root[xyz]"[^>]*/>', "", text)
    if not actuators:
        text = re.sub(r"<actuator>.*?</actuator>", "", text, flags=re.S)
    path = tmp_path / f"{name}.xml"
    path.write_text(text)
    dt = 1e-3
    model = mujoco.MjModel.from_xml_path(str(path))
    model.opt.timestep, model.opt.integrator = dt / 4, mujoco.mjtIntegrator.mjINT_RK4
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    if not actuators:
        model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    data = mujoco.MjData(model)
    rng = np.random.default_rng(seed)
    start = {model.joint(j).name: float(rng.uniform(-0.8, 0.8)) for j in range(model.njnt)}
    for j, value in enumerate(start.values()):
        data.qpos[model.jnt_qposadr[j]] = value
    mujoco.mj_forward(model, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        document = tomllib.loads(physics.load_mjcf(path, joint_positions=start).toml_text)
    document["node"] = [node for node in document["node"] if not node["name"].endswith("ground")]
    for node in document["node"]:
        node.pop("shape", None)
    sim = Simulation(scene_from_dict(document, tmp_path / f"{name}.toml"))
    for key, value in (("dt", dt), ("substeps", 1), ("integrator", "lie-midpoint-4")):
        sim.set(key, value)
    names = list(sim.names)
    pairs = [(names.index(model.body(b).name), b) for b in range(1, model.nbody) if model.body(b).name in names]
    return sim, model, data, pairs


def apart_in_frames(sim, data, pairs):
    """A function of no arguments: the largest distance (m) between ours and MuJoCo's of each paired
    body's origin and of the points 0.1 m along each of its axes (so a body turning about its own
    origin counts too), our y up against MuJoCo's z up; each body's frame as it is at the call
    that makes the function (the same pose in both: its axes may differ by a fixed rotation)."""
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]

    def poses():
        world = sim.world().transform
        mine = (world.translation[ours], world.rotation[ours])
        R = np.einsum("ij,bjk,lk->bil", Z_UP, data.xmat[theirs].reshape(-1, 3, 3), Z_UP)
        return mine, (data.xpos[theirs] @ Z_UP.T, R)

    (_, R_ours), (_, R_theirs) = poses()
    Q = np.einsum("bji,bjk->bik", R_theirs, R_ours)      # R_ours = R_theirs Q, for good
    offsets = 0.1 * np.concatenate([np.zeros((1, 3)), np.eye(3)])

    def apart():
        (x, R), (x_m, R_m) = poses()
        points = x[:, None] + np.einsum("bij,pj->bpi", R, offsets)
        theirs_points = x_m[:, None] + np.einsum("bij,bjk,pk->bpi", R_m, Q, offsets)
        return float(np.abs(points - theirs_points).max())

    return apart


@pytest.mark.parametrize("name", ["ant", "hopper", "half_cheetah", "walker2d", "reacher"]
                         + [pytest.param(name, marks=pytest.mark.long) for name in
                            ("humanoid", "humanoidstandup", "inverted_pendulum", "inverted_double_pendulum", "swimmer",
                             "pusher")])
def test_gymnasium_joint_terms_as_written_track_mujoco(name, tmp_path):
    """The robots' joint damping, armature and stiffness as their files write them (the ant's and
    hopper's armature of 1 kg m², the cheetah's springs up to 240 N m/rad), passive, hung by the
    root from a random pose, limits and contacts off (`gymnasium_passive`): RATTLE's step takes the
    springs' forces in its kicks, the dampers at the coordinate's chord and each armature as a
    rotor held to its coordinate (physics.constraints.rattle, "Joint terms"), composed to 4th order
    by lie-midpoint-4. After 1 s at 1 ms, every body (its origin and points 0.1 m along its axes)
    within 1e-5 m of MuJoCo's RK4 at 0.25 ms reading the file (measured: ant 1.4e-13, hopper 4.3e-11,
    cheetah 6.9e-10, walker 8.1e-10, reacher 9.7e-10; the velocity solve's first-order soft rows,
    which other integrators take, leave 1.6e-4 on the hopper and 1.8e-3 on the cheetah). The other
    six gymnasium models run in `make long` (humanoid 1.7e-10, humanoidstandup 5.1e-10, the
    inverted pendulums 7.5e-12 and 5.4e-9, swimmer 1.9e-9, pusher 1.6e-9)."""
    sim, model, data, pairs = gymnasium_passive(name, tmp_path, terms=True)
    assert np.any(model.dof_armature) or np.any(model.dof_damping) or np.any(model.jnt_stiffness)     # terms to take
    apart = apart_in_frames(sim, data, pairs)
    assert apart() < 1e-12
    for _ in range(1000):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
    assert sim.substep_counts()["per_nominal"] == 1.0       # composed, never halved
    assert apart() < 1e-5, apart()


@pytest.mark.parametrize("name", ["hopper", "half_cheetah"])
def test_gymnasium_robots_driven_by_a_sinusoidal_control_track_mujoco(name, tmp_path):
    """The same robots with their joint terms and their motors (gears 200 on the hopper, 30 to 120 on
    the cheetah), driven by the same control in both engines: actuator i at 0.8 sin(2π 1.5 t + i),
    set before every 1 ms step and held through it (MuJoCo's four RK4 sub-steps hold it too). The
    motors' torques are forces in RATTLE's kicks, so the step stays composed: after 1 s every body
    within 1e-5 m of MuJoCo's (measured: hopper 1.5e-9, half_cheetah 1.2e-9)."""
    sim, model, data, pairs = gymnasium_passive(name, tmp_path, terms=True, actuators=True)
    names = [model.actuator(a).name or f"actuator{a}" for a in range(model.nu)]     # (the import's names)
    assert len(names) >= 3 and set(names) <= set(sim.controls)
    apart = apart_in_frames(sim, data, pairs)
    for k in range(1000):
        t = k * 1e-3
        for i, actuator in enumerate(names):
            u = 0.8 * np.sin(2 * np.pi * 1.5 * t + i)
            sim.set_control(actuator, u)
            data.ctrl[i] = u
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
    assert sim.substep_counts()["per_nominal"] == 1.0
    assert apart() < 1e-5, apart()


@pytest.mark.parametrize("name", ["humanoid", "pusher"])
def test_gymnasium_multi_joint_bodies_track_mujoco_as_one_body(name, tmp_path):
    """The humanoid's hips, shoulders and abdomen (two or three hinges in one body) and the pusher's
    object and goal (two slides each) are six_axis joints: one body each, the same multibody as
    MuJoCo's. Passive, without contacts, limits or joint terms, hung by the root from a random pose
    (`gymnasium_passive`) for 1 s (ours lie-midpoint-4 at 1 ms, MuJoCo RK4 at 0.25 ms): every body
    within 1e-6 m of MuJoCo's (measured 1.2e-7 on the humanoid, 1.6e-8 at 0.5 ms: the integrators'
    truncation; 3.9e-12 on the pusher)."""
    sim, model, data, pairs = gymnasium_passive(name, tmp_path)
    assert len(pairs) == model.nbody - 1
    # one body per MuJoCo body with joints (those without are welded to their parent): no stage bodies
    assert np.count_nonzero(np.asarray(sim.scene.motion) == "dynamic") == np.count_nonzero(model.body_jntnum[1:])
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    worst = 0.0
    for k in range(1, 1001):
        sim.step(1)
        mujoco.mj_step(model, data, nstep=4)
        if k % 10 == 0:
            x = data.xpos[theirs]       # MuJoCo's z up is our y up: (x, y, z) -> (x, z, -y)
            worst = max(worst, float(np.abs(sim.world().transform.translation[ours] - np.stack([x[:, 0], x[:, 2], -x[:, 1]], 1)).max()))
    assert worst < 1e-6, worst


def test_the_mujoco_peer_takes_a_six_axis_state_mid_swing(tmp_path):
    """`MujocoSimulation.from_simulation` (compare's engine=mujoco, the app's MuJoCo ghost) on the
    humanoid of `gymnasium_passive` after 0.1 s of swinging: MuJoCo's coordinates for the hips',
    shoulders' and abdomen's several joints come from Newton on MuJoCo's own kinematics, so the
    peer starts where we are (every body's position within 1e-10 m, measured 1.7e-13; velocity
    within 1e-8 m/s, measured 4.2e-10: ours keeps the joints' velocity rows to RATTLE's tolerance,
    MuJoCo's coordinates keep them exactly) and, both stepped 0.2 s more (ours lie-midpoint-4,
    MuJoCo RK4, both at 1 ms), stays within 1e-7 m (measured 3.1e-9: the integrators' truncation)."""
    from physics.tools.mujoco_peer import MujocoSimulation
    sim, _, _, _ = gymnasium_passive("humanoid", tmp_path)
    sim.step(100)
    peer = MujocoSimulation.from_simulation(sim, "rk4", contacts=False)
    dynamic = np.flatnonzero(np.asarray(sim.scene.motion) == "dynamic")
    ours, theirs = sim.world(), peer.world()
    assert np.abs(ours.transform.translation[dynamic] - theirs.translation[dynamic]).max() < 1e-10
    assert np.abs(ours.velocity[dynamic] - theirs.velocity[dynamic]).max() < 1e-8
    for _ in range(200):
        sim.step(1)
        peer.step(1)
    assert np.abs(sim.world().transform.translation[dynamic] - peer.world().translation[dynamic]).max() < 1e-7
