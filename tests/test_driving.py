"""Driving a scene (physics.dynamics.driving): actuators on nodes, launchers and key bindings, checked against
the screw motion's closed form, SE(3)'s exponential by scipy, finite differences, momentum, and a
replayed recording."""
import numpy as np
import pytest
from scipy.linalg import expm

from physics import Simulation, SceneError
from physics.dynamics.driving import KeyDrive, screw_displacements
from physics.pipeline.recording import read_recording, write_recording
from physics.io.scene import load_scene
from physics.pipeline.timeline import Timeline

SCENES = "assets/scenes"


def drive_scene(tmp_path, extra="", hull_motion="kinematic"):
    """A box on the ground plane driven by a throttle and a steering actuator, and a barrel-like
    child with a position actuator and a muzzle, and a ball to launch."""
    text = f"""
[world]
dt = 0.016666666666666666
[[node]]
name = "ground"
shape = {{ type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }}
[[node]]
name = "hull"
motion = "{hull_motion}"
translation = [5.0, 1.0, 0.0]
shape = {{ type = "box", size = [2.0, 1.0, 1.0] }}
[[node]]
name = "arm"
parent = "hull"
motion = "kinematic"
translation = [0.5, 0.6, 0.0]
[[node]]
name = "muzzle"
parent = "arm"
translation = [2.0, 0.0, 0.0]
[[node]]
name = "ball"
motion = "dynamic"
translation = [-20.0, 0.3, 0.0]
mass = 2.0
shape = {{ type = "sphere", radius = 0.3 }}
[[actuator]]
name = "throttle"
node = "hull"
type = "velocity"
linear = [1.0, 0.0, 0.0]
ctrl = 3.0
[[actuator]]
name = "steer"
node = "hull"
type = "velocity"
angular = [0.0, 1.0, 0.0]
ctrl = 0.5
[[actuator]]
name = "raise"
node = "arm"
type = "position"
angular = [0.0, 0.0, 1.0]
speed = 0.4
ctrl_range = [-0.5, 1.0]
[[launcher]]
name = "gun"
node = "ball"
from = "muzzle"
speed = 30.0
""" + extra
    path = tmp_path / "drive.toml"
    path.write_text(text)
    return path


def test_left_jacobian_is_se3s_exponential():
    """T · exp(h [ω_b, v_b]) by scipy's matrix exponential of the 4×4 twist gives the displacement
    V(h ω_b) h v_b (1e-12: round-off of both), across θ from the series' branch (< 1e-4) to 3 rad;
    V v is the compiled kernel's (`screw_displacements`)."""
    rng = np.random.default_rng(3)
    for theta in (1e-7, 5e-5, 0.3, 1.0, 3.0):
        axis = rng.normal(size=3)
        phi = theta * axis / np.linalg.norm(axis)
        v = rng.normal(size=3)
        twist = np.zeros((4, 4))
        twist[:3, :3] = [[0, -phi[2], phi[1]], [phi[2], 0, -phi[0]], [-phi[1], phi[0], 0]]
        twist[:3, 3] = v
        out = np.zeros((1, 3))
        screw_displacements(phi[None, :], v[None, :], out)
        np.testing.assert_allclose(out[0], expm(twist)[:3, 3], rtol=0, atol=1e-12)


def test_a_driven_hull_runs_on_its_circle(tmp_path):
    """Throttle v = 3 m/s and steering ω = 0.5 rad/s: the screw is a circle of radius v/ω = 6 m about
    the point to the hull's left, at heading ω t. After 30 s (900 steps) the hull is on it to 1e-9 m
    (round-off over 900 steps; a straight step a step would have spiralled out by (v h)²/2r a step,
    1.9e-4 m each, 0.17 m in all), and its reported world acceleration is the centripetal v ω."""
    sim = Simulation.from_file(drive_scene(tmp_path))
    hull = sim.names.index("hull")
    centre = np.array([5.0, 1.0, -6.0])       # left of +x with y up is −z (ω_y > 0 turns x towards −z)
    sim.step(900)
    world = sim.world()
    p = world.transform.translation[hull]
    assert abs(np.linalg.norm(p - centre) - 6.0) < 1e-9
    angle = 0.5 * sim.time
    np.testing.assert_allclose(p, centre + 6.0 * np.array([np.sin(angle), 0.0, np.cos(angle)]), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(world.acceleration[hull]), 3.0 * 0.5, rtol=1e-12)


def test_a_position_actuator_turns_to_its_target_at_its_speed(tmp_path):
    """The arm's "raise" target 0.8 rad at speed 0.4 rad/s: it arrives at 2 s (to one step), turning
    at 0.4 rad/s until then, then holds exactly; its coordinate is the angle between its rotation
    and the one it was loaded with (about its axis z)."""
    sim = Simulation.from_file(drive_scene(tmp_path))
    arm = sim.names.index("arm")
    sim.set_control("raise", 0.8)
    angles = []
    for _ in range(150):
        sim.step()
        R = sim.local().transform.rotation[arm]
        angles.append(np.arctan2(R[1, 0], R[0, 0]))
    angles = np.array(angles)
    np.testing.assert_allclose(np.diff(angles[:110]), 0.4 / 60, rtol=1e-9)
    assert abs(angles[-1] - 0.8) < 1e-12
    assert sim.data.drive.coordinate[2] == pytest.approx(angles[-1], abs=1e-12)


def test_a_launch_leaves_with_the_muzzles_velocity_plus_its_speed(tmp_path):
    """The ball leaves the muzzle's origin with the muzzle's world velocity plus 30 m/s along its
    axis (to 1e-9 m/s); the muzzle's velocity agrees with a central difference of its world
    positions one step either side (O(h²) of a 1.5 m/s² turn: 1e-3), and the parts the launch names
    (hull, arm) sum to it."""
    sim = Simulation.from_file(drive_scene(tmp_path))
    muzzle, ball = sim.names.index("muzzle"), sim.names.index("ball")
    sim.set_control("raise", 0.6)
    sim.step(30)
    before = sim.snapshot()
    p0 = sim.world().transform.translation[muzzle].copy()
    sim.step(2)
    p2 = sim.world().transform.translation[muzzle].copy()
    sim.restore(before)
    sim.step(1)
    world = sim.world()
    v_muzzle = world.velocity[muzzle].copy()
    axis = world.transform.rotation[muzzle] @ [1.0, 0.0, 0.0]
    launch = sim.launch("gun")
    np.testing.assert_allclose((p2 - p0) / (2 * sim.settings.dt), v_muzzle, atol=1e-3)
    np.testing.assert_allclose(launch.velocity_world, v_muzzle + 30.0 * axis, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sim.world().velocity[ball], v_muzzle + 30.0 * axis, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sim.world().transform.translation[ball], world.transform.translation[muzzle], atol=1e-12)
    np.testing.assert_allclose(sum(launch.parts.values()), v_muzzle, rtol=0, atol=1e-12)
    assert set(launch.parts) == {"hull", "arm"}
    assert "30 m/s from the launcher" in launch.sentence(30.0)
    assert "the vector sum of arm " in launch.sentence(30.0) and " and hull " in launch.sentence(30.0)


def test_a_motor_changes_momentum_by_its_impulse(tmp_path):
    """A motor of 600 N along a free body's own +x, held 60 steps with gravity off: its momentum
    changes by F t = 600 N s along its (unturning) axis, to round-off."""
    path = tmp_path / "motor.toml"
    path.write_text("""
[world]
gravity = [0.0, 0.0, 0.0]
[[node]]
name = "sled"
motion = "dynamic"
mass = 50.0
rotation = [0.92387953, 0.0, 0.38268343, 0.0]
[[actuator]]
name = "push"
node = "sled"
type = "motor"
linear = [1.0, 0.0, 0.0]
ctrl_range = [-1000.0, 1000.0]
[[actuator]]
name = "spin"
node = "sled"
type = "motor"
angular = [0.0, 1.0, 0.0]
""")
    sim = Simulation.from_file(path)
    sim.set_control("push", 600.0)
    sim.step(60)
    axis = sim.world().transform.rotation[0] @ [1.0, 0.0, 0.0]
    np.testing.assert_allclose(sim.momentum()["linear"], 600.0 * sim.time * axis, rtol=1e-12, atol=1e-9)
    # a torque is a couple: angular momentum changes by τ t, linear not at all
    sim.set_control("push", 0.0)
    p = sim.momentum()["linear"].copy()
    sim.set_control("spin", 5.0)
    sim.step(60)
    np.testing.assert_allclose(sim.momentum()["linear"], p, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sim.momentum()["angular"][1], 5.0 * 1.0, rtol=1e-9)


def test_keys_ramp_hold_and_release():
    """A rate key moves its actuator by rate · dt a step towards its value and leaves it there when
    let go; a plain key gives its value while held and its release value after; a launch key fires
    once per press."""
    keys = KeyDrive([{"key": "W", "actuator": "throttle", "value": 10.0, "rate": 3.0},
                     {"key": "A", "actuator": "steer", "value": 0.4, "release": 0.0},
                     {"key": "V", "launch": "gun"}])
    controls = {"throttle": 2.0, "steer": 0.0}
    assert keys.press("W", controls) == []
    for _ in range(200):
        for kind, (name, value) in keys.held(controls, 0.1):
            controls[name] = value
    assert controls["throttle"] == 10.0
    assert keys.release("W", controls) == []
    assert keys.press("A", controls) == [("control", ("steer", 0.4))]
    controls["steer"] = 0.4
    assert keys.release("A", controls) == [("control", ("steer", 0.0))]
    assert keys.press("V", controls) == [("launch", ("gun",))]
    assert keys.held(controls, 0.1) == []
    # two keys on one actuator: A held, D pressed and let go, A steers again
    both = KeyDrive([{"key": "A", "actuator": "steer", "value": 0.4, "release": 0.0},
                     {"key": "D", "actuator": "steer", "value": -0.4, "release": 0.0}])
    assert both.press("A", {"steer": 0.0}) == [("control", ("steer", 0.4))]
    assert both.press("D", {"steer": 0.4}) == [("control", ("steer", -0.4))]
    assert both.release("D", {"steer": -0.4}) == [("control", ("steer", 0.4))]
    assert both.release("A", {"steer": 0.4}) == [("control", ("steer", 0.0))]


def test_a_recorded_drive_replays_bit_for_bit(tmp_path):
    """The tank driven by its keys (W ramps the throttle, A steers, Q turns the turret, Z raises the
    barrel, V fires), recorded and read back: the replay's state hashes equal the run's."""
    sim = Simulation.from_file(f"{SCENES}/tank.toml")
    timeline = Timeline(sim, keyframe_every=60)
    keys = KeyDrive(sim.scene.keys)
    script = {10: ("press", "W"), 40: ("press", "A"), 70: ("release", "A"), 80: ("press", "Q"), 90: ("press", "Z"),
              100: ("press", "V"), 101: ("release", "V"), 120: ("release", "W"), 130: ("release", "Q")}
    launches = []
    for step in range(160):
        if step in script:
            action, letter = script[step]
            for kind, args in getattr(keys, action)(letter, sim.controls):
                result = timeline.apply(kind, *args)
                if kind == "launch":
                    launches.append(result)
        for kind, args in keys.held(sim.controls, sim.settings.dt):
            timeline.apply(kind, *args)
        timeline.step()
    assert len(launches) == 1 and np.linalg.norm(launches[0].velocity_world) > 20.0
    controls = sim.controls
    assert controls["throttle"] == controls["wheels"] > 2.4 and controls["turret"] == 0.0 and controls["elevation"] > 0.35
    path = tmp_path / "drive.rec"
    write_recording(path, timeline)
    recording = read_recording(path)
    assert recording.verify() == (160, None)        # every step replayed from the origin, every hash equal
    assert [i.kind for i in recording.inputs].count("launch") == 1


@pytest.mark.parametrize("table, key, reason", [
    ('[[actuator]]\nname = "x"\nnode = "ground"\ntype = "velocity"\nlinear = [1.0, 0.0, 0.0]', "node", "fixed node"),
    ('[[actuator]]\nname = "x"\nnode = "hull"\ntype = "motor"\nlinear = [1.0, 0.0, 0.0]', "type", "velocity, position"),
    ('[[actuator]]\nname = "x"\nnode = "hull"\ntype = "velocity"', "angular", "give one axis"),
    ('[[actuator]]\nname = "x"\nnode = "hull"\ntype = "velocity"\nlinear = [0.0, 0.0, 0.0]', "linear", "non-zero"),
    ('[[actuator]]\nname = "throttle"\nnode = "arm"\ntype = "velocity"\nlinear = [1.0, 0.0, 0.0]', "name", "share"),
    ('[[key]]\nkey = "W"\nactuator = "nothing"\nvalue = 1.0', "actuator", "no [[actuator]]"),
    ('[[key]]\nkey = "F1"\nactuator = "throttle"\nvalue = 1.0', "key", "one letter"),
    ('[[key]]\nkey = "Z"\nactuator = "raise"\nvalue = 2.0', "value", "[-0.5, 1]"),
    ('[[key]]\nkey = "V"\nlaunch = "gun"\nvalue = 2.0', "value", "no value"),
    ('[[launcher]]\nname = "l2"\nnode = "hull"\nfrom = "muzzle"\nspeed = 1.0', "node", "dynamic node"),
])
def test_bad_driving_tables_are_refused_naming_the_key(tmp_path, table, key, reason):
    """Each bad [[actuator]] on a node, [[key]] or [[launcher]] is one SceneError naming the table,
    the key and why."""
    with pytest.raises(SceneError) as refused:
        load_scene(drive_scene(tmp_path, "\n" + table + "\n"))
    assert key in str(refused.value) and reason in str(refused.value), str(refused.value)


def test_controls_and_launchers_are_refused_by_name(tmp_path):
    sim = Simulation.from_file(drive_scene(tmp_path))
    with pytest.raises(ValueError, match="ctrl_range"):
        sim.set_control("raise", 2.0)
    with pytest.raises(ValueError, match="the scene's launchers: 'gun'"):
        sim.launch("cannon")
    assert [name for name, where, _ in sim.actuators()] == ["throttle", "steer", "raise"]
    assert {where for _, where, _ in sim.actuators()} == {"node"}


def test_a_snapshot_holds_the_controls_and_coordinates(tmp_path):
    """Controls and a position actuator's coordinate are state: a restore brings them back and the
    run goes on bit for bit."""
    sim = Simulation.from_file(drive_scene(tmp_path))
    sim.set_control("raise", 0.9)
    sim.step(20)
    snap = sim.snapshot()
    sim.step(40)
    end = sim.state_hash()
    sim.set_control("raise", -0.3)
    sim.step(5)
    sim.restore(snap)
    assert sim.controls["raise"] == 0.9
    sim.step(40)
    assert sim.state_hash() == end


def arm_scene(tmp_path, hooked=False):
    """Three links on named hinges about z from a fixed post (and, `hooked`, the last one hinged to
    a second post too: a loop through the world)."""
    text = """
[world]
gravity = [0.0, -9.81, 0.0]
[[node]]
name = "post"
[[node]]
name = "l1"
motion = "dynamic"
translation = [0.5, 0.0, 0.0]
shape = { type = "box", size = [1.0, 0.1, 0.1], mask = 0 }
[[node]]
name = "l2"
motion = "dynamic"
translation = [1.5, 0.0, 0.0]
shape = { type = "box", size = [1.0, 0.1, 0.1], mask = 0 }
[[node]]
name = "l3"
motion = "dynamic"
translation = [2.5, 0.0, 0.0]
shape = { type = "box", size = [1.0, 0.1, 0.1], mask = 0 }
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
coordinate = 0.25
[[joint]]
name = "wrist"
type = "slider"
a = "l2"
b = "l3"
anchor = [2.0, 0.0, 0.0]
axis = [1.0, 0.0, 0.0]
lower = -0.5
upper = 0.5
"""
    if hooked:
        text += """
[[node]]
name = "far_post"
translation = [3.0, 0.0, 0.0]
[[joint]]
type = "ball"
a = "far_post"
b = "l3"
anchor = [3.0, 0.0, 0.0]
"""
    path = tmp_path / "arm.toml"
    path.write_text(text)
    return Simulation.from_file(path)


def test_posing_a_joint_turns_what_lies_beyond_it_rigidly(tmp_path):
    """Posing the elbow at 1.0 rad (its coordinate at load 0.25): the elbow reads 1.0 (1e-12), the
    shoulder and the wrist keep theirs, l1 does not move, l2 and l3 turn rigidly about the elbow's
    anchor by 0.75 rad (the distance between their centres kept, 1e-12) and rest; every joint stays
    together (1e-12 m). A slider posed at 0.3 m moves l3 along its axis alone (its anchors 0.3 m
    apart)."""
    sim = arm_scene(tmp_path)
    assert sim.joint_coordinates() == pytest.approx({"shoulder": 0.0, "elbow": 0.25, "wrist": 0.0}, abs=1e-15)
    before = sim.world().transform.translation.copy()
    sim.pose_joint("elbow", 1.0)
    q = sim.joint_coordinates()
    assert q["elbow"] == pytest.approx(1.0, abs=1e-12) and abs(q["shoulder"]) < 1e-12 and abs(q["wrist"]) < 1e-12
    after = sim.world().transform.translation
    l1, l2, l3 = (sim.names.index(n) for n in ("l1", "l2", "l3"))
    np.testing.assert_array_equal(after[l1], before[l1])
    turn = np.array([[np.cos(0.75), -np.sin(0.75), 0], [np.sin(0.75), np.cos(0.75), 0], [0, 0, 1]])
    pivot = np.array([1.0, 0.0, 0.0])
    for k in (l2, l3):
        np.testing.assert_allclose(after[k], pivot + turn @ (before[k] - pivot), atol=1e-12)
    assert np.abs(sim.world().velocity[[l2, l3]]).max() == 0.0
    assert sim.joint_separation()[:2].max() < 1e-12      # the hinges' anchors (a slider's part by its travel)
    sim.pose_joint("wrist", 0.3)
    assert sim.joint_coordinates()["wrist"] == pytest.approx(0.3, abs=1e-12)
    assert sim.joint_coordinates()["elbow"] == pytest.approx(1.0, abs=1e-12)
    assert sim.joint_separation()[2] == pytest.approx(0.3, abs=1e-12)
    sim.step(30)
    assert sim.joint_separation()[:2].max() < 1e-6    # and it runs on from there, together


def test_posing_is_refused_outside_limits_and_in_a_loop(tmp_path):
    sim = arm_scene(tmp_path)
    with pytest.raises(ValueError, match=r"within its limits \[-2, 2\]"):
        sim.pose_joint("shoulder", 2.5)
    with pytest.raises(ValueError, match="the scene's named hinges and sliders: 'shoulder', 'elbow', 'wrist'"):
        sim.pose_joint("knee", 0.0)
    looped = arm_scene(tmp_path, hooked=True)
    with pytest.raises(ValueError, match="in a loop"):
        looped.pose_joint("elbow", 0.5)
    assert looped.joint_coordinates()["elbow"] == pytest.approx(0.25, abs=1e-15)   # refused: nothing moved


def test_a_recorded_pose_replays_bit_for_bit(tmp_path):
    sim = arm_scene(tmp_path)
    timeline = Timeline(sim, keyframe_every=16)
    timeline.step(5)
    timeline.apply("pose", "elbow", -0.5)
    timeline.step(20)
    timeline.apply("pose", "shoulder", 1.0)
    timeline.step(20)
    write_recording(tmp_path / "pose.rec", timeline)
    recording = read_recording(tmp_path / "pose.rec")
    assert [i.kind for i in recording.inputs] == ["pose", "pose"]
    assert recording.verify() == (45, None)


def test_a_pose_while_running_leaves_every_moved_link_at_rest():
    """The iiwa swinging (100 steps in), joint 1 posed 0.5 rad on: every link beyond it (each nested
    under the one before) is at rest in the world, as its fixed base is (a nested link once kept its
    parent's old spin); a refused pose at step 0 changes not a bit of the state."""
    sim = Simulation.from_file(f"{SCENES}/iiwa.toml")
    sim.step(100)
    q = sim.joint_coordinates()["lbr_iiwa_joint_1"]
    sim.pose_joint("lbr_iiwa_joint_1", q + 0.5)
    links = [i for i, name in enumerate(sim.names) if name.endswith(":body")]
    world = sim.world()
    assert np.abs(world.omega_vector()[links]).max() < 1e-12
    assert np.abs(world.velocity[links]).max() < 1e-12
    fresh = Simulation.from_file(f"{SCENES}/iiwa.toml")
    before = fresh.state_hash()
    with pytest.raises(ValueError, match="within its limits"):
        fresh.pose_joint("lbr_iiwa_joint_2", 99.0)
    assert fresh.state_hash() == before
