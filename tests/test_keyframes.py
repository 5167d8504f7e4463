"""Keyframes (physics.pipeline.keyframes): a scene's [[keyframe]] and MuJoCo's <key>, applied as poses and
controls; checked against MuJoCo's own keyframe reset of the same model, and by a round trip
through the TOML text."""
import warnings

import mujoco
import numpy as np
import pytest

from physics import SceneError, Simulation
from physics.pipeline import keyframes
from physics.io.mjcf import load_mjcf
from physics.io.scene import load_scene

ARM = """
[world]
gravity = [0.0, -9.81, 0.0]
[[node]]
name = "post"
[[node]]
name = "l1"
motion = "dynamic"
translation = [0.5, 0.0, 0.0]
[[node]]
name = "l2"
motion = "dynamic"
translation = [1.5, 0.0, 0.0]
[[joint]]
name = "shoulder"
type = "hinge"
a = "post"
b = "l1"
anchor = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
lower = -2.0
upper = 2.0
[[joint]]
name = "elbow"
type = "hinge"
a = "l1"
b = "l2"
anchor = [1.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
[[actuator]]
name = "elbow_servo"
joint = "elbow"
type = "position"
kp = 50.0
ctrl_range = [-1.5, 1.5]
"""

MJCF = """
<mujoco model="two links">
  <compiler angle="radian"/>
  <worldbody>
    <body name="l1" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-2 2" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <body name="l2" pos="0.5 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m_shoulder" joint="shoulder" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="p_elbow" joint="elbow" kp="10"/>
  </actuator>
  <keyframe>
    <key name="bent" qpos="0.4 -0.9" ctrl="0.25 -0.5"/>
  </keyframe>
</mujoco>
"""


def arm(tmp_path, extra=""):
    path = tmp_path / "arm.toml"
    path.write_text(ARM + extra)
    return path


def test_a_keyframe_puts_the_joints_and_the_controls_where_it_says(tmp_path):
    """[[keyframe]] "reach": the shoulder at 0.7 rad, the elbow at −1.1, the servo's target −1.1:
    applied, the coordinates read so to 1e-12 and the control is set."""
    sim = Simulation.from_file(arm(tmp_path, """
[[keyframe]]
name = "reach"
joints = { shoulder = 0.7, elbow = -1.1 }
controls = { elbow_servo = -1.1 }
"""))
    sim.step(10)
    sim.apply_keyframe("reach")
    q = sim.joint_coordinates()
    assert q["shoulder"] == pytest.approx(0.7, abs=1e-12) and q["elbow"] == pytest.approx(-1.1, abs=1e-12)
    assert sim.controls["elbow_servo"] == -1.1
    with pytest.raises(ValueError, match="the scene's keyframes: 'reach'"):
        sim.apply_keyframe("rest")


def test_a_captured_keyframe_reads_back_from_its_toml(tmp_path):
    """capture -> toml -> a scene file holding that table: the same keyframe, every number bit for
    bit (floats written by repr)."""
    sim = Simulation.from_file(arm(tmp_path))
    sim.set_control("elbow_servo", 0.3)
    sim.step(40)
    keyframe = keyframes.capture(sim, "mid-swing")
    scene = load_scene(arm(tmp_path, "\n" + keyframes.toml(keyframe)))
    assert scene.keyframes == (keyframe,)


@pytest.mark.parametrize("table, key, reason", [
    ('[[keyframe]]\nname = "k"\njoints = { shoulder = 2.5 }', "joints.shoulder", "[-2, 2]"),
    ('[[keyframe]]\nname = "k"\njoints = { knee = 0.5 }', "knee", "unknown key"),
    ('[[keyframe]]\nname = "k"\ncontrols = { elbow_servo = 9.0 }', "controls.elbow_servo", "[-1.5, 1.5]"),
    ('[[keyframe]]\njoints = { elbow = 0.5 }', "name", "needs a name"),
])
def test_a_bad_keyframe_is_refused_naming_the_key(tmp_path, table, key, reason):
    with pytest.raises(SceneError) as refused:
        load_scene(arm(tmp_path, "\n" + table + "\n"))
    assert key in str(refused.value) and reason in str(refused.value), str(refused.value)


def test_an_mjcf_key_is_the_keyframe_mujoco_resets_to(tmp_path):
    """MuJoCo's <key qpos ctrl>: imported as a [[keyframe]] (qpos of the hinges, ctrl by actuator);
    applied, our link frames are where MuJoCo's mj_resetDataKeyframe puts its bodies (1e-9 m, after
    our y-up turn) and the controls equal its ctrl."""
    path = tmp_path / "two.xml"
    path.write_text(MJCF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = load_mjcf(path)
    assert scene.keyframes == ({"name": "bent", "joints": {"shoulder": 0.4, "elbow": -0.9},
                                "controls": {"m_shoulder": 0.25, "p_elbow": -0.5}},)
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_kinematics(model, data)
    sim = Simulation(scene)
    sim.apply_keyframe("bent")
    translation, _, _ = sim.world_poses()
    z_up = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])   # MuJoCo's z up is our y
    for body in ("l1", "l2"):
        ours = translation[sim.names.index(body)]
        np.testing.assert_allclose(z_up.T @ ours, data.xpos[model.body(body).id], atol=1e-9)
    assert sim.controls == {"m_shoulder": 0.25, "p_elbow": -0.5}
    np.testing.assert_array_equal(data.ctrl, [0.25, -0.5])
