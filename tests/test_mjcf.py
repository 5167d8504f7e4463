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
from physics.articulated import ModelWarning
from physics.scene import SceneError
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


@pytest.mark.parametrize("name", MODELS)
def test_masses_and_inertias_match_mujoco(name):
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
    for word in ("<actuator>", "<tendon>", "joint damping", "humanoid.xml"):
        assert word in str(ours[0].message)
