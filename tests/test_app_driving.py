"""Driving the design card's scenes with real key presses (xdotool): the tank's keys, its cannon,
the Control section's sliders, and the recording of a drive replayed bit for bit."""
import numpy as np
import pytest

from conftest import frames, require_tool, xdotool
from test_app_choices import click_item, keys


def radius(sim):
    p = sim.world().transform.translation[sim.names.index("hull")]
    return float(np.hypot(p[0], p[2]))


@pytest.mark.display
def test_w_drives_the_tank_off_its_circle_and_v_fires_the_shell(window, tmp_path):
    """Held W ramps the throttle (3 m/s² towards 10 m/s) and the wheels with it: the tank leaves its
    8 m circle (steering stays 0.3 rad/s, so the radius grows as v / ω). V fires the shell: it leaves
    the muzzle with the muzzle's world velocity plus 25 m/s along the barrel (to 1e-9 m/s), and the
    message says so. Saved (Ctrl+S) and read back, the recording replays every step's hash."""
    require_tool("xdotool", "xdotool")
    w = window("tank", record=str(tmp_path / "drive.rec"))
    frames(w, 30)
    v = w.viewer
    sim = v.session.sim
    assert abs(radius(sim) - 8.0) < 1e-9 and sim.controls["throttle"] == 2.4
    keys(w)                                     # focus the window, the pointer off the panel
    xdotool(w, "keydown", "w")
    frames(w, 60)
    xdotool(w, "keyup", "w")
    frames(w, 60)
    throttle = sim.controls["throttle"]
    assert throttle > 4.0 and sim.controls["wheels"] == throttle       # ramped while held, kept when let go
    assert radius(sim) > 8.2, radius(sim)
    keys(w, "v")
    launch = v.session.last_input
    assert launch is not None and "launched at" in v.session.message and "m/s from the launcher" in v.session.message
    fired = next(i for i in v.session.timeline.inputs if i.kind == "launch")
    v.session.seek(fired.step)                          # the state just after the launch
    world = sim.world()
    shell, muzzle = sim.names.index("shell"), sim.names.index("muzzle_brake")
    axis = world.transform.rotation[muzzle] @ [0.0, 1.0, 0.0]
    np.testing.assert_allclose(world.velocity[shell], world.velocity[muzzle] + 25.0 * axis, rtol=0, atol=1e-9)
    np.testing.assert_allclose(world.velocity[shell], launch.velocity_world, rtol=0, atol=1e-9)
    v.session.seek(v.session.timeline.head)
    keys(w, "ctrl+s")
    from physics.pipeline.recording import read_recording
    recording = read_recording(tmp_path / "drive.rec")
    kinds = [i.kind for i in recording.inputs]
    assert "launch" in kinds and kinds.count("control") >= 10
    assert recording.verify() == (recording.head - recording.origin, None)


@pytest.mark.display
def test_the_control_section_sets_an_actuator(window):
    """A click at the left end of the turret's slider (range −1 .. 1 rad/s) turns the turret right
    at nearly full speed: the control is a recorded input; the F1 help lists the scene's keys."""
    require_tool("xdotool", "xdotool")
    w = window("tank")
    frames(w, 10)
    v = w.viewer
    assert v.session.sim.controls["turret"] == 0.5
    click_item(w, "turret##control")          # scrolled into view (and clicked)
    x0, y0, x1, y1 = v.panel.item_rects["turret##control"]
    xdotool(w, "mousemove", "--window", str(w._window), str(int(x0) + 2), str(int((y0 + y1) / 2)))
    xdotool(w, "click", "1")
    frames(w, 5)
    assert v.session.sim.controls["turret"] < -0.95, v.session.sim.controls
    assert any(i.kind == "control" and i.args[0] == "turret" for i in v.session.timeline.inputs)
    keys(w, "F1")
    frames(w, 2)
    assert "help V" in v.panel.item_rects and "help W" in v.panel.item_rects
    # a key held as the window loses the keyboard is let go (no release event will come)
    keys(w, "Escape")
    xdotool(w, "keydown", "a")
    assert v.session.sim.controls["steer"] == 0.4
    w.dispatch_event("on_deactivate")
    frames(w, 2)
    assert v.session.sim.controls["steer"] == 0.0 and not v.session.keys.down
    xdotool(w, "keyup", "a")        # the X server's key state back as it was


def drag_past_end(w, label, right):
    """A real drag (xdotool) of the panel's slider `label`, scrolled into view, from near its left
    end to 40 px past its `right` or left end (the item's rectangle holds its label)."""
    click_item(w, label)
    frames(w, 2)
    x0, y0, x1, y1 = w.viewer.panel.item_rects[label]
    y = str(int((y0 + y1) / 2))
    xdotool(w, "mousemove", "--window", str(w._window), str(int(x0) + 20), y)
    xdotool(w, "mousedown", "1")
    frames(w, 2)
    xdotool(w, "mousemove", "--window", str(w._window), str(int(x1) + 40 if right else max(int(x0) - 40, 0)), y)
    frames(w, 2)
    xdotool(w, "mouseup", "1")
    frames(w, 3)


@pytest.mark.display
def test_a_control_slider_reaches_both_ends_of_its_range(window):
    """The humanoid's hip motor (ctrl_range ±0.4): its slider dragged past either end sets the
    control to exactly ±0.4. ImGui's slider is single precision, and float32(0.4) lies past the
    range: the value the slider gives is clamped to it, never refused. A joint's slider, paused, poses
    the knee at its lower limit the same way (to 1e-9: the pose's own round-off)."""
    require_tool("xdotool", "xdotool")
    w = window("humanoid")
    frames(w, 5)
    v = w.viewer
    for right, expected in ((True, 0.4), (False, -0.4)):
        drag_past_end(w, "right_hip_y##control", right)
        assert v.session.sim.controls["right_hip_y"] == expected, v.session.sim.controls
    # the same for a joint's slider, whose ends are its limits (right_knee: −160° .. −2°): posed at the end
    keys(w, "space")        # paused: a joint slider poses
    frames(w, 2)
    drag_past_end(w, "right_knee##joint", False)
    lower = next(spec["lower"] for spec in v.session.sim.scene.joints if spec.get("name") == "right_knee")
    assert abs(v.session.sim.joint_coordinates()["right_knee"] - lower) < 1e-9


@pytest.mark.display
def test_a_joint_slider_poses_the_iiwa(window):
    """Paused, a click at the left end of the iiwa's joint 2 slider (its limits ±2.09 rad) poses the
    arm there: the joint reads near its lower limit, the other joints keep their angles, the pose is
    a recorded input, and the arm stays together. "save keyframe" keeps that pose; moved away, the
    keyframe's button puts every joint back (1e-9 rad)."""
    require_tool("xdotool", "xdotool")
    w = window("iiwa")
    frames(w, 5)
    v = w.viewer
    keys(w, "space")
    assert v.session.paused
    before = v.session.sim.joint_coordinates()
    click_item(w, "lbr_iiwa_joint_2##joint")
    x0, y0, x1, y1 = v.panel.item_rects["lbr_iiwa_joint_2##joint"]
    xdotool(w, "mousemove", "--window", str(w._window), str(int(x0) + 2), str(int((y0 + y1) / 2)))
    xdotool(w, "click", "1")
    frames(w, 3)
    after = v.session.sim.joint_coordinates()
    assert after["lbr_iiwa_joint_2"] < -1.9, after
    assert all(abs(after[n] - before[n]) < 1e-9 for n in before if n != "lbr_iiwa_joint_2")
    assert any(i.kind == "pose" and i.args[0] == "lbr_iiwa_joint_2" for i in v.session.timeline.inputs)
    assert v.session.sim.joint_separation().max() < 1e-9
    # a keyframe saved here, the arm moved, the keyframe's button brings it back
    click_item(w, "save keyframe")
    assert [k["name"] for k in v.session.saved_keyframes] == ["saved1"]
    v.session.give_input("pose", "lbr_iiwa_joint_2", 0.5)
    click_item(w, "saved1##keyframe")
    frames(w, 2)
    back = v.session.sim.joint_coordinates()
    assert all(abs(back[n] - after[n]) < 1e-9 for n in after), (back, after)


@pytest.mark.display
def test_the_cars_cargo_shows_through_its_cabin(window):
    """The car's cabin (opacity 0.35) is drawn see-through after the rest: from the scene's default
    view the ball under it is seen, its yellow in the pixels where it projects, tinted by the
    cabin's pale blue rather than hidden by it; with the cabin opaque, those pixels are the cabin's."""
    w = window("car")
    frames(w, 3)
    v = w.viewer
    v.session.paused = True
    ball = v.session.sim.names.index("ball")
    clip = v.view.view_projection() @ np.append(v.session.state["T"][ball], 1.0)
    ndc = clip[:2] / clip[3]
    x, y = (ndc[0] + 1) / 2 * v.size[0], (1 - ndc[1]) / 2 * v.size[1]     # window pixels, top row first
    frames(w, 2)
    seen = v.read_rgb()[int(y), int(x)].astype(float)
    opacity = v.session.sim.scene.opacity.copy()
    v.session.sim.scene.opacity[:] = 1.0
    frames(w, 2)
    hidden = v.read_rgb()[int(y), int(x)].astype(float)
    v.session.sim.scene.opacity[:] = opacity
    assert seen[0] > seen[2] + 30, seen           # yellow (red and green over blue): the ball
    assert hidden[2] >= hidden[0], hidden         # the cabin's pale blue


SPINNER = """title = "spinner"
[world]
gravity = [0.0, 0.0, 0.0]
[[node]]
name = "wheel"
motion = "dynamic"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
angular_velocity = [0.0, 0.0, 20.0]
shape = { type = "box", size = [1.0, 0.2, 0.2] }
[[joint]]
type = "hinge"
name = "axle"
b = "wheel"
anchor = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
"""


@pytest.mark.display
def test_an_unlimited_hinges_slider_is_on_the_turn_it_has_reached(window, tmp_path):
    """A wheel on an unlimited hinge spun at 20 rad/s for a second has turned some three turns (its
    coordinate counts them): paused, its slider spans ±π about the whole turns it has made, and a
    drag past the slider's right end poses it at that turn's end, not at π about the load."""
    require_tool("xdotool", "xdotool")
    path = tmp_path / "spinner.toml"
    path.write_text(SPINNER)
    w = window(path)
    frames(w, 60)
    v = w.viewer
    keys(w, "space")
    assert v.session.paused
    q = v.session.sim.joint_coordinates()["axle"]
    assert q > 2 * np.pi
    end = 2 * np.pi * np.round(q / (2 * np.pi)) + np.pi
    drag_past_end(w, "axle##joint", True)
    posed = v.session.sim.joint_coordinates()["axle"]
    assert abs(posed - end) < 1e-3, (posed, end)        # (the slider's single precision at its end)
    assert any(i.kind == "pose" and i.args[0] == "axle" for i in v.session.timeline.inputs)
