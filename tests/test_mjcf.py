"""MJCF import (`physics.load_mjcf`) against MuJoCo itself, on gymnasium's models.

Forward kinematics: at 100 random joint configurations the world frame of every body, composed by
the scene's transform hierarchy, equals MuJoCo's `mj_kinematics` (`xpos`, `xmat`) to 1e-9 m and
1e-9 (rotation matrix entries, ~rad). Both sides compose the same exact transforms in float64;
depth ≤ 10 leaves ~1e-15, so 1e-9 is the issue's bound with a wide margin.
Inertials: every moving body's mass, centre and tensor (with the bodies welded to it, as MuJoCo's
`body_mass`, `body_ipos`, `body_iquat`, `body_inertia` place them at qpos0) equal the scene's
dynamic nodes' to 1e-12 (tests/robots.py).
"""
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest

import physics
from physics.io.articulated import ModelWarning
from physics.io.scene import SceneError
from robots import assert_assembly_equal, composite, model_poses, scene_assemblies

import gymnasium
ASSETS = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
MODELS = ("ant", "hopper", "humanoid", "walker2d")


def load(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        return physics.load_mjcf(path, **options)


def body_names(model):
    """MuJoCo's body names with the importer's names for unnamed bodies (PARENT:bodyK, K the count
    of earlier siblings); body 0 is the worldbody, `world`."""
    names = ["world"]
    for i in range(1, model.nbody):
        parent = model.body_parentid[i]
        k = sum(1 for j in range(1, i) if model.body_parentid[j] == parent)
        names.append(model.body(i).name or f"{names[parent]}:body{k}")
    return names


def random_configuration(model, rng):
    """qpos (MuJoCo's) and the importer's joint_positions: hinge and slide inside their range (or
    ±π, ±0.5 m), balls and free joints at random unit quaternions and positions."""
    qpos = model.qpos0.copy()
    positions = {}
    for j in range(model.njnt):
        a = model.jnt_qposadr[j]
        kind = model.jnt_type[j]
        if kind == mujoco.mjtJoint.mjJNT_FREE:
            q = rng.normal(size=4)
            value = np.concatenate([rng.uniform(-1, 1, 3), q / np.linalg.norm(q)])
            qpos[a:a + 7] = value
        elif kind == mujoco.mjtJoint.mjJNT_BALL:
            q = rng.normal(size=4)
            value = q / np.linalg.norm(q)
            qpos[a:a + 4] = value
        else:
            low, high = model.jnt_range[j] if model.jnt_limited[j] else ((-np.pi, np.pi) if kind == mujoco.mjtJoint.mjJNT_HINGE else (-0.5, 0.5))
            value = rng.uniform(low, high)
            qpos[a] = value
        positions[model.joint(j).name] = value
    return qpos, positions


@pytest.mark.parametrize("name", MODELS)
def test_forward_kinematics_matches_mujoco(name):
    path = ASSETS / f"{name}.xml"
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    names = body_names(model)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(100):
        data.qpos[:], positions = random_configuration(model, rng)
        mujoco.mj_kinematics(model, data)
        poses = model_poses(load(path, joint_positions=positions))
        for i in range(1, model.nbody):
            t, R = poses[names[i]]
            worst = max(worst, np.abs(t - data.xpos[i]).max(), np.abs(R - data.xmat[i].reshape(3, 3)).max())
    assert worst <= 1e-9, f"{name}: largest pose difference {worst:.3g}"


@pytest.mark.parametrize("name", MODELS + ("half_cheetah",))
def test_masses_and_inertias_match_mujoco(name):
    """half_cheetah.xml sets `<compiler settotalmass="14">`: 21.2 kg of geoms scaled to 14 kg."""
    path = ASSETS / f"{name}.xml"
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    names = body_names(model)
    ours = scene_assemblies(load(path), [model.joint(j).name for j in range(model.njnt)])
    # each moving body with the bodies welded to it (no joint between them), as the importer lumps them
    owner = {}
    for i in range(1, model.nbody):
        owner[i] = i if model.body_jntnum[i] > 0 else owner.get(model.body_parentid[i], None)
    groups = {}
    for i in range(1, model.nbody):
        if owner[i] is None or model.body_mass[i] == 0:
            continue
        R = data.ximat[i].reshape(3, 3)
        groups.setdefault(names[owner[i]], []).append((model.body_mass[i], data.xipos[i].copy(), R @ np.diag(model.body_inertia[i]) @ R.T))
    assert set(groups) == set(ours)
    for link, parts in groups.items():
        assert_assembly_equal(ours[link], composite(parts), f"{name} {link}")
    assert abs(sum(m for m, _, _ in ours.values()) - model.body_mass.sum()) <= 1e-12 * model.body_mass.sum()


def test_joints_map_to_the_scene_joints():
    """ant: the free torso is a dynamic root with no joint; each hinge joins its body to its parent's
    assembly with the file's range (degrees → rad) as limits about the loaded angle."""
    scene = load(ASSETS / "ant.xml")
    names = list(scene.names)
    assert scene.motion[names.index("torso:body")] == "dynamic"
    assert scene.parent[names.index("torso:body")] == names.index("world")
    hinges = [j for j in scene.joints if j["type"] == "hinge"]
    assert len(hinges) == 8 and len(scene.joints) == 8
    hip = next(j for j in hinges if scene.names[j["b"]] == "aux_1:body")
    assert np.isclose(hip["lower"], np.radians(-30), atol=1e-12) and np.isclose(hip["upper"], np.radians(30), atol=1e-12)
    assert scene.names[hip["a"]] == "front_left_leg"   # the welded leg root: part of the torso's assembly


def test_unsupported_elements_are_named_in_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        physics.load_mjcf(ASSETS / "humanoid.xml")
    ours = [w for w in caught if issubclass(w.category, ModelWarning)]
    assert len(ours) == 1
    for word in ("<tendon>", "<camera>", "humanoid.xml"):
        assert word in str(ours[0].message)


# --- bad files: one SceneError naming the file and the element, never another exception ------------

GOOD = """<mujoco model="pendulum">
  <default><geom density="500"/><default class="thin"><geom size="0.01"/></default></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="pivot" type="hinge" axis="0 1 0" range="-90 90"/>
      <geom name="rod" type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
      <body name="hand" pos="0 0 -0.5" euler="0 0 90">
        <joint name="wrist" type="ball"/>
        <inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.002 0.002 0.001"/>
        <geom name="ball" class="thin" type="sphere"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""

BAD = {
    "NaN": (GOOD.replace('pos="0 0 1"', 'pos="0 nan 1"'), "<body name='arm'>", "finite"),
    "negative mass": (GOOD.replace('mass="0.5"', 'mass="-0.5"'), "<body name='hand'> <inertial>", "mass"),
    "zero mass": (GOOD.replace('mass="0.5"', 'mass="0"'), "<body name='hand'>", "needs a mass > 0"),
    "triangle inequality": (GOOD.replace('diaginertia="0.002 0.002 0.001"', 'diaginertia="0.001 0.001 0.01"'),
                            "<body name='hand'> <inertial>", "triangle inequality"),
    "unknown class": (GOOD.replace('class="thin" type="sphere"', 'class="thick" type="sphere"'), "<geom>", "no <default class=...>"),
    "missing size": (GOOD.replace('size="0.05"', ""), "<geom name='rod'>", "needs 2 sizes"),
    "missing mesh": (GOOD.replace('type="sphere"', 'type="mesh" mesh="hull"'), "<geom name='ball'>", "no <mesh> asset"),
    "empty gear": (GOOD.replace("</worldbody>", '</worldbody><actuator><motor name="m" joint="pivot" gear=""/></actuator>'),
                   "<motor name='m'>", "expected at least one number"),
    "missing mesh file": (GOOD.replace("<worldbody>", '<asset><mesh name="hull" file="nowhere.stl"/></asset><worldbody>')
                          .replace('type="sphere"', 'type="mesh" mesh="hull"'), "<geom name='ball'>", "mesh file not found"),
    "duplicate body": (GOOD.replace('name="hand"', 'name="arm"'), "<body name='arm'>", "duplicate"),
    "bad joint type": (GOOD.replace('type="ball"', 'type="screw"'), "<joint name='wrist'>", "expected hinge"),
    "not MJCF": ("<robot/>", "<robot>", "<mujoco>"),
    "XML bomb": ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
                 '<mujoco model="&lol2;"/>', None, "refused XML"),
}


def test_default_classes_nested_or_multiplied_past_their_budget_are_refused(tmp_path, monkeypatch):
    """<default> classes nested 1,000 deep (a RecursionError, "internal error", if read by recursion),
    and classes that each copy a parent of many attributes (gigabytes of tables): both are one SceneError
    naming the class, the first before any table past the budget is made (budget lowered here to
    keep the file small). Nesting within the depth limit still inherits, in document order."""
    import physics.io.mjcf as mjcf
    deep = 1000
    nested = "".join(f'<default class="c{k}">' for k in range(deep)) + "</default>" * deep
    path = tmp_path / "deep.xml"
    path.write_text(GOOD.replace("<default>", "<default>" + nested, 1))
    with pytest.raises(SceneError, match=f"nested deeper than {mjcf.DEFAULT_DEPTH_MAX}"):
        physics.load_mjcf(path)
    monkeypatch.setattr(mjcf, "DEFAULT_ATTRIBUTES_MAX", 1000)
    many = " ".join(f'user{k}="{k}"' for k in range(100))
    siblings = "".join(f'<default class="s{k}"><geom rgba="1 0 0 1"/></default>' for k in range(20))
    path = tmp_path / "wide.xml"
    path.write_text(GOOD.replace('<default><geom density="500"/>', f'<default><geom density="500" {many}/>{siblings}', 1))
    with pytest.raises(SceneError, match="more than 1000 attributes in all"):
        physics.load_mjcf(path)
    monkeypatch.setattr(mjcf, "DEFAULT_ATTRIBUTES_MAX", 10_000)
    scene = physics.load_mjcf(path)         # within the budget: loads, the nested class inherits
    names = list(scene.names)
    assert scene.mass[names.index("arm:body")] == physics.load_mjcf(_good(tmp_path)).mass[names.index("arm:body")]


def _good(folder):
    path = folder / "good.xml"
    path.write_text(GOOD)
    return path


def test_a_good_file_loads(tmp_path):
    """The pendulum: a capsule arm (density 500) on a hinge and a ball-jointed hand with its own
    inertial; the floor is a plane on the static world."""
    path = tmp_path / "pendulum.xml"
    path.write_text(GOOD)
    scene = physics.load_mjcf(path)
    names = list(scene.names)
    r, h = 0.05, 0.5
    assert scene.mass[names.index("arm:body")] == pytest.approx(500 * (np.pi * r * r * h + 4 / 3 * np.pi * r ** 3), rel=1e-12)
    assert scene.mass[names.index("hand:body")] == 0.5
    assert [j["type"] for j in scene.joints] == ["hinge", "ball"]
    assert scene.shapes[names.index("world:floor")]["type"] == "plane"
    model = mujoco.MjModel.from_xml_path(str(path))
    assert model.body_mass[1] == pytest.approx(scene.mass[names.index("arm:body")], rel=1e-12)


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_file_is_one_clear_error(tmp_path, case):
    text, element, words = BAD[case]
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(SceneError) as caught:
        physics.load_mjcf(path)
    message = str(caught.value)
    assert str(path) in message and words in message
    if element is not None:
        assert f"element {element}" in message


def test_bodies_nested_too_deep_are_refused(tmp_path):
    depth = 300
    text = ('<mujoco><worldbody>' + ''.join(f'<body name="b{k}"><joint/><geom size="0.1"/>' for k in range(depth))
            + '</body>' * depth + '</worldbody></mujoco>')
    path = tmp_path / "deep.xml"
    path.write_text(text)
    with pytest.raises(SceneError, match="nested deeper than 256"):
        physics.load_mjcf(path)


def test_mutated_files_load_or_raise_scene_error(tmp_path):
    """400 mutations of gymnasium's humanoid (defaults, multi-joint bodies, fromto capsules): each
    loads or raises one SceneError; no other exception, no hang."""
    from import_fuzz import mutations
    text = (ASSETS / "humanoid.xml").read_text()
    rng = np.random.default_rng(4)
    outcomes = {"loaded": 0, "refused": 0}
    for k, mutated in enumerate(mutations(text, rng, 400)):
        path = tmp_path / f"case{k}.xml"
        path.write_text(mutated)
        try:
            load(path)
            outcomes["loaded"] += 1
        except SceneError as error:
            assert str(path) in str(error)
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 0 and outcomes["refused"] > 0, outcomes


def test_the_fuzzer_runs_robot_model_cases(tmp_path):
    """physics.tools.fuzz mutates robot models too (one case in ten): a model case is written with its
    suffix, loaded by load_scene's dispatch, refused with the file and element named, or stepped."""
    from physics.tools import fuzz
    text = (ASSETS / "ant.xml").read_text()
    good = fuzz.Case("ant", text.encode(), suffix=".xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        outcome, detail = fuzz.run_case(good, tmp_path / "ant-case.xml", 2)
    assert outcome == "ran", detail
    bad = fuzz.Case("ant", text.replace('pos="0 0 0.75"', 'pos="0 nan 0.75"').encode(), suffix=".xml")
    outcome, detail = fuzz.run_case(bad, tmp_path / "ant-bad.xml", 2)
    assert outcome == "refused" and "element <body name='torso'>" in detail, detail
    assert set(fuzz.model_bases()) == {"a1", "ant", "humanoid"}


EVERY_JOINT = """<mujoco model="every_joint">
  <compiler angle="radian"/>
  <worldbody>
    <body name="free" pos="0.3 -0.2 1.5" quat="0.9 0.1 0.3 0.2">
      <freejoint name="float"/>
      <geom type="box" size="0.1 0.2 0.05"/>
      <body name="gimbal" pos="0.1 0 -0.3" euler="0.3 -0.2 0.5">
        <joint name="tilt" type="hinge" pos="0 0 0.1" axis="1 0 0" range="-1 1"/>
        <joint name="push" type="slide" axis="0 0.6 0.8" range="-0.2 0.2"/>
        <joint name="pan" type="hinge" pos="0.05 0 0" axis="0 0 1" ref="0.4"/>
        <geom type="capsule" fromto="0 0 0 0.2 0.1 -0.3" size="0.04"/>
        <body name="wrist" pos="0.2 0.1 -0.3" xyaxes="0 1 0 -1 0 0">
          <joint name="ball" type="ball" pos="0 0 0.02"/>
          <geom type="cylinder" size="0.05 0.1" pos="0 0 -0.1"/>
          <geom type="sphere" size="0.03" pos="0.02 0.01 -0.2" mass="0.4"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_every_joint_type_matches_mujoco(tmp_path):
    """A free body, a body on hinge + slide + hinge (with a ref) about offset anchors, and a ball
    below it, oriented by quat, euler and xyaxes: 100 random configurations, poses to 1e-9 (as
    above), and the inertials to 1e-12."""
    path = tmp_path / "every_joint.xml"
    path.write_text(EVERY_JOINT)
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    names = body_names(model)
    rng = np.random.default_rng(9)
    worst = 0.0
    for _ in range(100):
        data.qpos[:], positions = random_configuration(model, rng)
        mujoco.mj_kinematics(model, data)
        poses = model_poses(load(path, joint_positions=positions))
        for i in range(1, model.nbody):
            t, R = poses[names[i]]
            worst = max(worst, np.abs(t - data.xpos[i]).max(), np.abs(R - data.xmat[i].reshape(3, 3)).max())
    assert worst <= 1e-9, worst
    scene = load(path)
    assert sorted(j["type"] for j in scene.joints) == ["ball", "hinge", "hinge", "slider"]
    assert scene.motion[list(scene.names).index("free:body")] == "dynamic"
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    ours = scene_assemblies(scene, [model.joint(j).name for j in range(model.njnt)])
    for i in range(1, model.nbody):
        R = data.ximat[i].reshape(3, 3)
        theirs = (model.body_mass[i], data.xipos[i].copy(), R @ np.diag(model.body_inertia[i]) @ R.T)
        assert_assembly_equal(ours[names[i]], theirs, names[i])


@pytest.mark.parametrize("name", ["inverted_pendulum", "inverted_double_pendulum", "reacher", "swimmer", "hopper",
                                  "ant"])
def test_geoms_pair_by_mujocos_contype_rule(name):
    """Over the first 0.4 s from the file's pose, ours has contacts exactly when MuJoCo reading the
    same file has: the pendulums' carts inside their rails, the reacher's arm on its arena and the
    swimmer on its floor never pair (contype 0 everywhere, or planes with both bits 0); the hopper's
    and the ant's feet (conaffinity 0) land on the floor (contype = conaffinity = 1) by MuJoCo's
    either-side rule. Both fall under the same gravity from the same pose, so the first contact
    comes at the same time to within a step of ours (1/240 s) and of MuJoCo's, but for the ant:
    its ankles load outside their range (0 against 30°…70°), and MuJoCo's soft limits ease them in
    as springs whose reaction lifts the torso 1.6 cm, while ours ease them in without momentum
    (`physics.constraints.joints.Joints.limit_slack`), so its feet land 0.1 s later; there only both landing
    within 0.4 s is checked."""
    path = ASSETS / f"{name}.xml"
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    theirs = None
    while data.time < 0.4 and theirs is None:
        mujoco.mj_step(model, data)
        theirs = data.time if data.ncon else None
    sim = physics.Simulation(load(path))
    ours = None
    for k in range(round(0.4 * 240)):
        sim.step()
        if ours is None and len(sim.contacts()[0]):
            ours = (k + 1) / 240
            break
    if theirs is None:
        assert ours is None, f"{name}: our first contact at {ours} s, MuJoCo's none in 0.4 s"
    else:
        assert ours is not None, f"{name}: MuJoCo's first contact at {theirs} s, ours none in 0.4 s"
        if name != "ant":
            assert abs(ours - theirs) <= model.opt.timestep + 1 / 240, (ours, theirs)


def test_a_body_with_many_joints_keeps_every_stage_positive(tmp_path):
    """A body with 25 hinges (the reproducer: past 20 its last stage got a negative mass that is
    not in the file): every stage's mass is positive and the stages add up to the body's mass."""
    hinges = "".join(f'<joint name="h{k}" type="hinge" axis="{k % 3 == 0:d} {k % 3 == 1:d} {k % 3 == 2:d}"/>'
                     for k in range(25))
    path = tmp_path / "many.xml"
    path.write_text(f'<mujoco><worldbody><body name="b" pos="0 0 1">{hinges}'
                    '<geom type="sphere" size="0.1" mass="2"/></body></worldbody></mujoco>')
    scene = load(path)
    masses = [m for m, motion in zip(scene.mass, scene.motion) if motion == "dynamic"]
    assert len(masses) == 25 and min(masses) > 0 and abs(sum(masses) - 2.0) <= 1e-12
