"""Frames of reference and hands on, in the real window under X: the view from a node holds it
still on screen, trails drawn in two frames, the acceleration terms' arrows and plot, a mouse pull
(real pointer events by xdotool) and a flick, each replaying bit for bit from the recording."""
from pathlib import Path

import numpy as np
import pytest
from conftest import click, frames, require_tool, xdotool

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parent.parent
CAR = ROOT / "assets" / "scenes" / "car.toml"
TURNTABLE = ROOT / "assets" / "scenes" / "turntable.toml"
FLOATING = """
[world]
gravity = [0.0, 0.0, 0.0]
integrator = "semi-implicit-euler"
[[node]]
name = "ground"
translation = [0.0, -2.0, 0.0]
shape = { type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }
color = [0.4, 0.45, 0.4]
[[node]]
name = "ball"
motion = "dynamic"
translation = [0.0, 1.0, 0.0]
mass = 2.0
shape = { type = "sphere", radius = 0.5 }
color = [0.9, 0.2, 0.2]
[[node]]
name = "post"
translation = [3.0, 1.0, 0.0]
shape = { type = "box", size = [0.3, 2.0, 0.3] }
color = [0.2, 0.3, 0.9]
"""


def screen_xy(v, point_world):
    """Window pixel (x right, y down from the top) where `point_world` is drawn."""
    clip = v.view.view_projection() @ np.append(point_world, 1.0)
    ndc = clip[:3] / clip[3]
    return np.array([(ndc[0] + 1) / 2 * v.size[0], (1 - ndc[1]) / 2 * v.size[1]])


def color_centroid(image, rgb, tolerance=0.03):
    """Mean pixel (x, y) of the pixels whose chromaticity is `rgb`'s (shading keeps it), and their count."""
    pixels = image.reshape(-1, 3).astype(float)
    bright = pixels.sum(axis=1) > 60
    chroma = pixels[:, :2] / np.maximum(pixels.sum(axis=1, keepdims=True), 1e-9)
    target = np.asarray(rgb[:2]) / sum(rgb)
    hit = bright & (np.linalg.norm(chroma - target, axis=1) < tolerance)
    ys, xs = np.divmod(np.flatnonzero(hit), image.shape[1])
    return np.array([xs.mean(), ys.mean()]) if hit.any() else None, int(hit.sum())


def test_view_from_the_car_holds_it_still_while_the_world_moves_past(window):
    """Viewing from the car, the car's origin projects to the same pixel every frame (camera math:
    P V M_F⁻¹, to 1e-6 px of round-off) and its blue body stays put in the picture (centroid within
    1 px) while the wall (fixed in the world) comes at it; viewing from the world, the car moves
    across the picture (tens of px in half a second at 10 m/s)."""
    w = window(str(CAR))
    v = w.viewer
    frames(w, 2)
    car = list(v.session.sim.names).index("car")
    wall = list(v.session.sim.names).index("wall")
    v.session.paused = True
    v.view.view_from(car)
    frames(w, 1)
    v.session.paused = False
    first_car, first_wall = screen_xy(v, v.session.state["T"][car]), screen_xy(v, v.session.state["T"][wall])
    first_image = v.read_rgb()
    for _ in range(30):
        frames(w, 1)
        np.testing.assert_allclose(screen_xy(v, v.session.state["T"][car]), first_car, atol=1e-6)
    assert np.linalg.norm(screen_xy(v, v.session.state["T"][wall]) - first_wall) > 20
    body_color = v.session.sim.colors[car]
    before, count = color_centroid(first_image, body_color)
    after, _ = color_centroid(v.read_rgb(), body_color)
    assert count > 200 and np.linalg.norm(after - before) < 1.0
    v.view.view_from(None)
    frames(w, 1)
    start = screen_xy(v, v.session.state["T"][car])
    frames(w, 30)
    assert np.linalg.norm(screen_xy(v, v.session.state["T"][car]) - start) > 20


def test_switching_frames_keeps_the_picture(window):
    """Choosing a frame carries the camera over (its target and viewing direction): from the
    turntable, whose y axis is the world's, the picture is the same (every node at the same
    pixel, 1e-6 px). (The orbit camera's up is the frame's y axis: from a tilted frame the
    horizon rolls by the tilt.)"""
    w = window(str(TURNTABLE))
    v = w.viewer
    frames(w, 20)
    v.session.paused = True
    before = [screen_xy(v, x) for x in v.session.state["T"]]
    v.view.view_from(list(v.session.sim.names).index("turntable"))
    after = [screen_xy(v, x) for x in v.session.state["T"]]
    np.testing.assert_allclose(after, before, atol=1e-6)


def test_the_cargo_trail_in_the_car_frame_and_in_the_world(window):
    """The ball's trail: in the world the line the car drove (> 10 m in 2.5 s), in the car's
    frame a short path placed on the car (under 1.5 m: the ball rests on the floor until the
    crash, then slides forward to the front panel). Both end at the ball (1e-9 m: one rigid map)."""
    w = window(str(CAR))
    v = w.viewer
    ball = list(v.session.sim.names).index("ball")
    car = list(v.session.sim.names).index("car")
    v.view.trails.toggle(ball)
    v.view.view_from(car)
    frames(w, 150)
    world_path = v.view.trails.path(ball, None, v.session.state)
    car_path = v.view.trails.path(ball, car, v.session.state)
    assert len(world_path) > 100 and len(car_path) == len(world_path)
    np.testing.assert_allclose(world_path[-1], v.session.state["T"][ball], atol=1e-12)
    np.testing.assert_allclose(car_path[-1], v.session.state["T"][ball], atol=1e-9)
    assert np.ptp(world_path[:, 0]) > 10 and np.ptp(car_path[:, 0]) < 1.5
    assert len(v.view.overlay_lines()) >= 2


def _off_line(points):
    """The largest distance of `points` (K, 3) from the straight line through the first and last."""
    chord = points[-1] - points[0]
    chord /= np.linalg.norm(chord)
    offsets = points - points[0]
    return np.max(np.linalg.norm(offsets - np.outer(offsets @ chord, chord), axis=1))


def test_a_trail_straight_in_the_world_curves_on_the_turntable(window):
    """The frictionless blue puck slides straight out over the turning table: its world trail is a
    straight line (within 1 mm: it slides on the table's flat top), its trail in the table's frame
    a Coriolis curve (> 0.2 m off its chord in 3 s). Seen from above, both are drawn: pixels of
    the trail colour and of its darker world shade."""
    from app import paths
    w = window(str(TURNTABLE))
    v = w.viewer
    puck = list(v.session.sim.names).index("puck_blue")
    table = list(v.session.sim.names).index("turntable")
    v.view.trails.toggle(puck)
    v.view.view_from(table)
    frames(w, 180)
    world_path, table_path = v.view.trails.path(puck, None, v.session.state), v.view.trails.path(puck, table, v.session.state)
    assert np.linalg.norm(world_path[-1] - world_path[0]) > 1.0
    assert _off_line(world_path) < 1e-3
    assert _off_line(table_path) > 0.2
    v.session.paused = True
    v.view.camera.target_world = v.view.frames.to_frame(v.session.state, v.session.state["T"][table])
    v.view.camera.pitch, v.view.camera.distance = 1.45, 6.0
    frames(w, 1)
    image = v.read_rgb()
    for shade in (1.0, paths.WORLD_SHADE):
        rgb = np.round(np.array(paths.COLORS[0]) * shade * 255)
        assert np.sum(np.all(np.abs(image.astype(int) - rgb) <= 3, axis=-1)) > 30, shade


def test_acceleration_terms_arrows_and_stacked_plot(window):
    """The white puck (at rest in the world) seen from the turntable: the panel's Frames section
    decomposes its acceleration; the stacked bands end at the world acceleration (1e-9) and the
    Coriolis term is twice the centrifugal one and opposite (the closed form, 1e-6: contact noise)."""
    from app.frames import TERMS
    w = window(str(TURNTABLE))
    v = w.viewer
    puck = list(v.session.sim.names).index("puck_white")
    v.session.selected = puck
    frames(w, 2)
    click(w, "Frames")
    click(w, "acceleration terms")
    assert v.view.frames.decompose
    v.view.view_from(list(v.session.sim.names).index("turntable"))
    frames(w, 30)
    t, stacked, world = v.view.frames.history.series(0)
    assert len(t) >= 30
    np.testing.assert_allclose(stacked[-1], world, atol=1e-9)
    terms = v.view.frames.last_terms
    np.testing.assert_allclose(terms["coriolis"], -2 * terms["centrifugal"], atol=1e-6)
    assert "terms plot" in v.panel.item_rects
    arrows = v.view.frames.overlay_lines(v.session.state, puck, 0.25, np.full(len(v.session.state["T"]), 100.0))
    assert len(arrows[0][0]) >= 3 * 3      # relative, centrifugal, Coriolis at least (3 segments each)
    assert set(TERMS) <= set(terms)




def test_a_mouse_pull_moves_the_ball_to_the_cursor_and_replays(window, tmp_path):
    """Real pointer events: Ctrl + left button down on the floating ball, the pointer moved 150 px
    right, held, then released. The ball follows the cursor (its screen x moves by most of 150 px),
    each step of the pull is a "force" input, and the saved recording re-simulates bit for bit."""
    from physics.pipeline.recording import read_recording
    require_tool("xdotool", "xdotool")
    scene = tmp_path / "floating.toml"
    scene.write_text(FLOATING)
    w = window(str(scene))
    v = w.viewer
    v.view.camera.distance = 5.0        # 150 px about 1 m at the ball, whatever the framing
    frames(w, 3)
    wid = str(w._window)
    ball = list(v.session.sim.names).index("ball")
    x, y = screen_xy(v, v.session.state["T"][ball]).round().astype(int)
    xdotool(w, "mousemove", "--window", wid, str(x), str(y))
    xdotool(w, "keydown", "ctrl")
    xdotool(w, "mousedown", "1")
    assert v.hand.holding
    for dx in range(30, 151, 30):
        xdotool(w, "mousemove", "--window", wid, str(x + dx), str(y))
    frames(w, 90)
    held_at = screen_xy(v, v.session.state["T"][ball])
    xdotool(w, "mouseup", "1")
    xdotool(w, "keyup", "ctrl")
    assert not v.hand.holding
    assert held_at[0] - x > 120 and abs(held_at[1] - y) < 10, held_at - [x, y]
    kinds = [i.kind for i in v.session.timeline.inputs]
    assert kinds.count("force") > 90
    assert any(text == "pull: ball" for _, text in v.session.history.markers)
    path = v.session.save_recording(tmp_path / "pull.rec")
    assert read_recording(path).verify() == (v.session.timeline.head, None)


def test_a_ctrl_right_click_flicks_the_ball_into_the_screen(window, tmp_path):
    """Ctrl + right click on the ball: its velocity changes by FLICK_SPEED along the view ray
    through the click (the impulse m FLICK_SPEED at the hit point moves the centre by J / m, to
    round-off; the direction within a few pixels' angle of the ray through the click's pixel),
    recorded as one "impulse" input that replays bit for bit."""
    from app.handles import FLICK_SPEED
    from physics.pipeline.recording import read_recording
    require_tool("xdotool", "xdotool")
    scene = tmp_path / "floating.toml"
    scene.write_text(FLOATING)
    w = window(str(scene))
    v = w.viewer
    frames(w, 3)
    v.session.paused = True
    wid = str(w._window)
    ball = list(v.session.sim.names).index("ball")
    x, y = screen_xy(v, v.session.state["T"][ball]).round().astype(int)
    xdotool(w, "mousemove", "--window", wid, str(x), str(y))
    before = np.array(v.session.state["v"][ball])
    xdotool(w, "keydown", "ctrl")
    xdotool(w, "click", "3")
    xdotool(w, "keyup", "ctrl")
    dv = np.array(v.session.state["v"][ball]) - before
    assert [i.kind for i in v.session.timeline.inputs] == ["impulse"]
    impulse = v.session.timeline.inputs[0].args[1]
    np.testing.assert_allclose(dv, impulse / 2.0, atol=1e-12)
    assert np.linalg.norm(dv) == pytest.approx(FLICK_SPEED, abs=1e-9)
    ray = v.view.world_ray(x, v.size[1] - y)[1]     # within a pixel of the click's (1.2e-3 rad a pixel)
    assert np.arccos(np.clip(dv @ ray / FLICK_SPEED, -1, 1)) < 5e-3
    v.session.paused = False
    frames(w, 20)
    path = v.session.save_recording(tmp_path / "flick.rec")
    assert read_recording(path).verify() == (v.session.timeline.head, None)


def test_a_ghost_receives_the_pull(window, tmp_path):
    """A ghost with the main run's own settings, then a pull (Ctrl + left drag, pyglet events):
    the ghost takes every force input at the same step, so it stays bit for bit the main run
    (equal state hashes) while the ball moves."""
    from pyglet.window import key, mouse
    scene = tmp_path / "floating.toml"
    scene.write_text(FLOATING)
    w = window(str(scene))
    v = w.viewer
    frames(w, 3)
    label = v.ghosts.add_variant({"integrator": v.session.sim.settings.integrator}, label="twin")
    frames(w, 2)
    ball = list(v.session.sim.names).index("ball")
    x, y = screen_xy(v, v.session.state["T"][ball])
    y = v.size[1] - y                   # pyglet's origin: bottom left
    start = v.session.state["T"][ball].copy()
    # 20 drags of 0.1 m each at the ball (the framing sets the pixels per metre); the soft pull
    # trails the pointer: the ball covers about 0.4 m of each metre dragged in these 40 frames
    step = max(1, round(np.linalg.norm(screen_xy(v, start + [1.0, 0.0, 0.0]) - screen_xy(v, start)) / 10))
    v.mouse_press(x, y, mouse.LEFT, key.MOD_CTRL)
    assert v.hand.holding
    for i in range(1, 21):
        v.mouse_drag(x + step * i, y, step, 0, mouse.LEFT, key.MOD_CTRL)
        frames(w, 2)
    v.mouse_release(x + 20 * step, y, mouse.LEFT, key.MOD_CTRL)
    frames(w, 1)
    twin = v.ghosts.comparison.simulation(label)
    assert twin.step_count == v.session.sim.step_count and twin.state_hash() == v.session.sim.state_hash()
    assert np.linalg.norm(v.session.state["T"][ball] - start) > 0.5
    assert sum(i.kind == "force" for i in v.session.timeline.inputs) >= 40


def test_a_grab_beside_a_thin_link_takes_it_and_a_missed_one_never_turns_the_camera(window):
    """Real pointer events on the iiwa: Ctrl + press 5 px beside the last link's axis, on empty
    sky (a plain pick there hits nothing), still takes that arm (the grab reaches 8 px); Ctrl +
    press and drag on empty space far from the arm takes nothing and leaves the camera exactly
    where it was (it orbited below the ground before)."""
    require_tool("xdotool", "xdotool")
    w = window("iiwa")
    v = w.viewer
    v.session.paused = True
    frames(w, 3)
    wid = str(w._window)
    tip = list(v.session.sim.names).index("lbr_iiwa_link_7")
    x, y = screen_xy(v, v.session.state["T"][tip]).round().astype(int)
    for dx in range(5, 40):     # the first pixel right of the link where a plain pick misses
        if v.view.pick_point(x + dx, v.size[1] - y)[0] is None:
            break
    side = x + dx + 5
    assert v.view.pick_point(side, v.size[1] - y)[0] is None
    xdotool(w, "mousemove", "--window", wid, str(side), str(y))
    xdotool(w, "keydown", "ctrl")
    xdotool(w, "mousedown", "1")
    assert v.hand.holding
    xdotool(w, "mouseup", "1")
    xdotool(w, "keyup", "ctrl")
    frames(w, 2)
    camera = (v.view.camera.yaw, v.view.camera.pitch, v.view.camera.distance, v.view.camera.target_world.copy())
    xdotool(w, "mousemove", "--window", wid, "1200", "60")
    xdotool(w, "keydown", "ctrl")
    xdotool(w, "mousedown", "1")
    assert not v.hand.holding
    for step in range(1, 6):
        xdotool(w, "mousemove", "--window", wid, "1200", str(60 + 40 * step))
    xdotool(w, "mouseup", "1")
    xdotool(w, "keyup", "ctrl")
    frames(w, 2)
    assert (v.view.camera.yaw, v.view.camera.pitch, v.view.camera.distance) == camera[:3]
    assert np.array_equal(v.view.camera.target_world, camera[3])
