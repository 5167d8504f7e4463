"""The viewer in a real window under X (Xvfb in CI): scenes, input events, resizing, errors.

Pictures are checked by pixel statistics: not a single colour, the sky present, and the
scene's own node colours present (matched by chromaticity r/(r+g+b), g/(r+g+b), which lighting
leaves unchanged up to the specular highlight).
"""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import click, frames, press

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parent.parent
T_HANDLE = """
[world]
gravity = [0.0, 0.0, 0.0]
gyroscopic = "implicit"
integrator = "semi-implicit-euler"
[[node]]
name = "handle"
motion = "dynamic"
mass = 1.0
inertia = [1.0, 2.0, 3.0]
angular_velocity = [0.01, 5.0, 0.0]
shape = { type = "box", size = [1.0, 2.0, 0.5] }
color = [0.9, 0.2, 0.2]
"""


def chromaticity(rgb):
    rgb = np.asarray(rgb, float)
    return rgb[..., :2] / np.maximum(rgb.sum(axis=-1, keepdims=True), 1e-9)


def colors_present(image, colors, tolerance=0.02, min_pixels=30, enough=None):
    """Which of `colors` (K, 3 in [0, 1]) appear on at least `min_pixels` pixels (chromaticity
    within `tolerance`: shading scales r, g, b together, so their ratios survive). `enough`: stop
    looking once that many are found (the rest read as not found): the pile has hundreds of
    colours, and each is a pass over the picture's million pixels."""
    pixels = chromaticity(image.reshape(-1, 3)[image.reshape(-1, 3).sum(axis=1) > 60])
    found = []
    for c in colors:
        found.append(int(np.sum(np.linalg.norm(pixels - chromaticity(c), axis=1) < tolerance)) >= min_pixels)
        if enough is not None and sum(found) >= enough:
            return found + [False] * (len(colors) - len(found))
    return found


def assert_shows_scene(image, colors):
    assert image.std() > 10, "the picture is (nearly) a single colour"
    # a lit scene shows shades of its colours; > 60: the stress scene seen whole has 10 colours
    # on shapes 1-3 px wide, drawn as points with one shade per visible box face (99 with the
    # panel; as meshes 356, from the cylinders' interpolated normals); a blank window shows 1
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 60, "too few distinct colours for a lit scene"
    sky = np.all(np.abs(image.astype(int) - [153, 194, 235]) <= 3, axis=-1)  # SKY_RGB in 8 bits
    assert sky.any(), "no sky"
    saturated = [c for c in np.unique(np.round(np.asarray(colors), 3), axis=0) if np.ptp(c) > 0.15]
    found = colors_present(image, saturated, enough=min(2, len(saturated)))
    if sum(found) < min(2, len(saturated)):
        found = colors_present(image, saturated)       # every colour, for the message
    assert sum(found) >= min(2, len(saturated)), f"scene colours missing: {[list(c) for c, f in zip(saturated, found) if not f]}"


def scenes():
    return sorted((ROOT / "assets" / "scenes").glob("*.toml"))


# The command line's picture (`python -m app SCENE --frames 10 --screenshot F`, a process each) on
# three scenes: the tank (the default scene: a hierarchy in the car's and turret's frames), the
# stress scene (10,011 nodes, drawn as points) and the heap (the solver on two threads). Every
# scene's picture is checked from the user's tour, one process for all of them (below).
COMMAND_LINE_SCENES = ("tank", "stress", "pile")


@pytest.mark.draws_only
@pytest.mark.parametrize("scene", COMMAND_LINE_SCENES)
def test_the_command_line_saves_the_scene_s_picture(display, app_config, tmp_path, scene):
    """`python -m app SCENE --frames 10 --screenshot F` exits 0 and the picture shows the scene.
    (10 frames: the loop runs many times over; more only adds physics time on the big scenes.)"""
    import physics
    path, out = ROOT / "assets" / "scenes" / f"{scene}.toml", tmp_path / "shot.png"
    result = subprocess.run([sys.executable, "-m", "app", str(path), "--frames", "10", "--screenshot", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    from app.png import read_png
    image = read_png(out)
    assert image.shape == (720, 1280, 3)
    assert_shows_scene(image, physics.Simulation.from_file(path).colors)


@pytest.mark.parametrize("scene", scenes(), ids=lambda p: p.stem)
def test_every_scene_shows_in_its_picture(tour_folder, scene):
    """Each shipped scene's picture from the user's tour (tests/frame_tour.py: the viewer as
    `make run` opens it, the scene reached by PgDn, two frames after it opened) shows the scene."""
    import physics
    from app.png import read_png
    image = read_png(tour_folder / "shots" / f"{scene.stem}.png")
    assert image.shape == (720, 1280, 3)
    assert_shows_scene(image, physics.Simulation.from_file(scene).colors)


def test_keys_pause_step_reset(window):
    from pyglet.window import key
    w = window()
    v = w.viewer
    frames(w, 3)
    w.dispatch_event("on_key_press", key.SPACE, 0)
    frames(w, 1)
    assert v.session.paused
    t = v.session.sim.time
    frames(w, 5)
    assert v.session.sim.time == t  # paused: no time passes
    w.dispatch_event("on_key_press", key.PERIOD, 0)
    frames(w, 1)
    assert v.session.sim.time == pytest.approx(t + v.session.sim.settings.dt, rel=1e-12)
    w.dispatch_event("on_key_press", key.R, 0)
    frames(w, 1)
    assert v.session.sim.time == 0.0
    w.dispatch_event("on_key_press", key.SPACE, 0)
    frames(w, 3)
    assert not v.session.paused and v.session.sim.time > 0


def test_the_tank_opens_with_the_camera_following_its_hull(window):
    """tank.toml's [view] follow = "hull": the hull is selected and the camera's target rides it
    (within a centimetre, after the frame that draws it) as it drives 3 m around its circle; L lets
    it go and the target then stays where it was."""
    from pyglet.window import key

    w = window("tank")
    v = w.viewer
    hull = list(v.session.sim.names).index("hull")
    assert v.view.follow and v.session.selected == hull
    frames(w, 80)
    assert v.session.sim.time > 1.0
    target = v.view.frames.to_frame(v.session.state, v.session.state["T"][hull])
    assert np.linalg.norm(v.view.camera.target_world - target) < 1e-2
    press(w, key.L)
    frames(w, 1)
    held = v.view.camera.target_world.copy()
    frames(w, 30)
    assert not v.view.follow and np.array_equal(v.view.camera.target_world, held)


def test_key_toggles_change_settings_and_motion(window, tmp_path):
    """G cycles the gyroscopic mode; with it `off` a free asymmetric body keeps its angular
    velocity, with `implicit` the intermediate-axis spin departs (the Dzhanibekov flip)."""
    from pyglet.window import key
    scene = tmp_path / "t_handle.toml"
    scene.write_text(T_HANDLE)
    w = window(str(scene))
    v = w.viewer
    assert v.session.sim.settings.gyroscopic == "implicit"
    frames(w, 120)
    omega_implicit = v.session.state["omega"][0].copy()
    press(w, key.G)          # implicit -> off
    assert v.session.sim.settings.gyroscopic == "off"
    press(w, key.R)
    frames(w, 119)
    omega_off = v.session.state["omega"][0]
    # off: omega is constant (1e-9: round-off of 120 steps); implicit: it has moved by far more
    np.testing.assert_allclose(omega_off, [0.01, 5.0, 0.0], atol=1e-9)
    assert np.linalg.norm(omega_implicit - [0.01, 5.0, 0.0]) > 1e-3
    integrator = v.session.sim.settings.integrator
    press(w, key.I)
    assert v.session.sim.settings.integrator != integrator
    counteract = v.session.sim.settings.counteract
    press(w, key.C)
    assert v.session.sim.settings.counteract == (not counteract)


def test_help_and_screenshot_keys(window, tmp_path, monkeypatch):
    from pyglet.window import key
    monkeypatch.chdir(tmp_path)
    w = window()
    frames(w, 2)
    before = w.viewer.read_rgb()
    w.dispatch_event("on_key_press", key.F1, 0)
    frames(w, 2)
    assert w.viewer.show_help
    w.dispatch_event("on_key_press", key.SPACE, 0)  # pause so only the help changes the picture
    frames(w, 1)
    press(w, key.F12)
    shots = list(tmp_path.glob("sandbox-*.png"))
    assert len(shots) == 1
    from app.png import read_png
    after = read_png(shots[0])
    centre = (slice(300, 420), slice(540, 740))
    assert np.abs(after[centre].astype(int) - before[centre]).mean() > 5  # the help box covers the centre


def test_scene_keys_and_panel_click(window):
    """Key 1 opens the first scene; pyglet mouse events on the panel's Pause button pause."""
    from pyglet.window import key
    w = window()
    frames(w, 2)
    w.dispatch_event("on_key_press", key._1, 0)
    frames(w, 1)
    assert w.viewer.session.scene_path == scenes()[0]
    click(w, "Pause")
    assert w.viewer.session.paused


def test_click_selects_and_empty_space_deselects(window):
    from pyglet.window import mouse
    w = window()
    frames(w, 2)
    v = w.viewer
    hull = v.session.sim.names.index("hull") if "hull" in v.session.sim.names else int(np.argmax(v.session.sim.motion != "fixed"))
    vp = v.view.view_projection()
    clip = vp @ np.append(v.session.state["T"][hull], 1.0)
    x, y = (clip[:2] / clip[3] + 1) / 2 * np.array(v.size)
    for event in ("on_mouse_press", "on_mouse_release"):
        w.dispatch_event(event, x, y, mouse.LEFT, 0)
    frames(w, 1)  # queued events are delivered at the next frame
    assert v.session.selected is not None
    frames(w, 1)
    for event in ("on_mouse_press", "on_mouse_release"):
        w.dispatch_event(event, v.size[0] - 5, v.size[1] - 200, mouse.LEFT, 0)  # the sky
    frames(w, 1)
    assert v.session.selected is None


@pytest.mark.parametrize("size", [(1, 1), (320, 200), (1600, 900)])
def test_resize(window, size):
    w = window()
    frames(w, 1)
    w.set_size(*size)
    frames(w, 3)
    assert w.viewer.view.target.size == w.get_framebuffer_size()
    if size[0] >= 1280:  # smaller windows are mostly panel
        image = w.viewer.read_rgb()
        assert image.shape == (size[1], size[0], 3)
        assert_shows_scene(image, w.viewer.session.sim.colors)


def test_bad_scene_keeps_current_running(window, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[node]]\nname = "a"\nmass = -1\nmotion = "dynamic"\n')
    w = window()
    frames(w, 2)
    path = w.viewer.session.scene_path
    assert not w.viewer.session.load_scene(str(bad))
    assert "bad.toml" in w.viewer.session.error and "mass" in w.viewer.session.error
    t = w.viewer.session.sim.time
    frames(w, 3)
    assert w.viewer.session.scene_path == path and w.viewer.session.sim.time > t
    image = w.viewer.read_rgb()
    x0, y0, x1, y1 = (int(c) for c in w.viewer.panel.item_rects["Error"])
    red_text = np.all(np.abs(image[y0:y1, x0:x1].astype(int) - [255, 89, 76]) <= 40, axis=-1)
    assert red_text.sum() > 20  # the error is drawn in its box (mid-window: test_app_ui)


def test_runaway_pauses_and_names_node(window, tmp_path):
    scene = tmp_path / "runaway.toml"
    scene.write_text('[world]\ngravity = [0.0, 0.0, 0.0]\n[[node]]\nname = "rocket"\nmotion = "dynamic"\n'
                     'mass = 1.0\nvelocity = [20000.0, 0.0, 0.0]\nshape = { type = "sphere", radius = 0.5 }\n')
    w = window(str(scene))
    frames(w, 3)
    assert w.viewer.session.paused and "'rocket'" in w.viewer.session.error


def test_settings_persist(window, app_config):
    """A physics choice is remembered across runs, but a scene opens with its own physics unless
    "keep my physics choices" is on (then the next run applies it too)."""
    from pyglet.window import key
    w = window()
    own = w.viewer.session.sim.settings.gyroscopic
    press(w, key.G)
    mode = w.viewer.session.sim.settings.gyroscopic
    w.close()
    w2 = window()
    assert w2.viewer.session.sim.settings.gyroscopic == own != mode
    assert w2.viewer.session.prefs["physics"]["gyroscopic"] == mode
    w2.viewer.session.prefs["keep_physics"] = True
    w2.close()
    w3 = window()
    assert w3.viewer.session.sim.settings.gyroscopic == mode


def test_xdotool_end_to_end(window):
    """Real X events: xdotool clicks the panel's Pause button and presses G on the window."""
    from conftest import require_tool
    require_tool("xdotool", "xdotool")
    w = window()
    frames(w, 3)
    wid = str(w._window)
    x0, y0, x1, y1 = w.viewer.panel.item_rects["Pause"]
    mode = w.viewer.session.sim.settings.gyroscopic

    def xdotool(*args):
        process = subprocess.Popen(["xdotool", *args])
        deadline = time.monotonic() + 20
        while process.poll() is None and time.monotonic() < deadline:
            frames(w, 1)  # keep dispatching events while xdotool works
        frames(w, 5)
        assert process.returncode == 0

    xdotool("mousemove", "--window", wid, str(int((x0 + x1) / 2)), str(int((y0 + y1) / 2)))
    xdotool("click", "1")
    assert w.viewer.session.paused
    xdotool("mousemove", "--window", wid, "900", "500")  # off the panel, so the key reaches us
    xdotool("windowfocus", "--sync", wid)
    xdotool("key", "g")
    assert w.viewer.session.sim.settings.gyroscopic != mode


def _crash(w, frames_max=150):
    """Run the car scene until the car has stopped at the wall; the cargo's (box_1) and the
    car's world x velocity at that frame."""
    v = w.viewer
    car, box = v.session.sim.names.index("car"), v.session.sim.names.index("box_1")
    for _ in range(frames_max):
        frames(w, 1)
        if abs(v.session.state["v"][car, 0]) < 1.0:
            return v.session.state["v"][car, 0], v.session.state["v"][box, 0]
    raise AssertionError(f"the car did not stop within {frames_max} frames")


def test_counteract_key_changes_the_crash(window):
    """C toggles counteraction, and the motion follows (the car scene; counteraction from
    "The Dynamics of a Transform Hierarchy"). On: the impulse that stops the car leaves its loose
    cargo's world velocity alone, so the cargo still moves at nearly 10 m/s (only floor friction,
    ≤ 0.05 m/s per step, slows it). Off: the cargo stops with the car (same velocity within 0.05 m/s)."""
    from pyglet.window import key
    w = window(str(ROOT / "assets" / "scenes" / "car.toml"))
    assert w.viewer.session.sim.settings.counteract
    car_v, box_v = _crash(w)
    assert box_v > 9.5
    press(w, key.C)
    assert not w.viewer.session.sim.settings.counteract
    press(w, key.R)
    car_v, box_v = _crash(w)
    assert abs(box_v - car_v) < 0.05


def test_contact_overlay_marks_the_contacts(window):
    """The car's cargo rests on its floor: physics reports contacts, the overlay draws a cross at
    each (segment midpoints = the contact points, 1e-12) and its red shows in the picture
    exactly where the points project (within 6 px), and not with the overlay off."""
    from pyglet.window import key
    w = window(str(ROOT / "assets" / "scenes" / "car.toml"))
    v = w.viewer
    for name in v.session.prefs["overlays"]:
        v.session.prefs["overlays"][name] = name == "contacts"
    frames(w, 2)
    points, normals = v.session.sim.contacts()
    assert len(points) > 0, "physics reports no contacts for the resting cargo"
    # the camera on the contacts: a cross under a pixel on screen is not drawn (app.overlays)
    v.view.camera.frame(points.min(0) - 1.0, points.max(0) + 1.0, v.size[0] / v.size[1])
    w.dispatch_event("on_key_press", key.SPACE, 0)  # pause: a still picture
    frames(w, 1)
    points, _ = v.session.sim.contacts()
    (segments, _), = v.view.overlay_lines()
    crosses = segments[:3 * len(points)].reshape(len(points), 3, 2, 3)
    np.testing.assert_allclose(crosses.mean(axis=2), np.repeat(points[:, None, :], 3, axis=1), atol=1e-12)

    def red_pixels():
        image = v.read_rgb().astype(int)
        return np.all(np.abs(image - [255, 26, 26]) <= 3, axis=-1)  # COLORS["contact_point"], unlit

    on = red_pixels()
    v.session.prefs["overlays"]["contacts"] = False
    off = red_pixels()
    # 2 cm crosses over the cargo's few touching points (speculative ones are no longer reported):
    # 16 red pixels measured, none with the overlay off
    assert on.sum() > 8 and off.sum() == 0
    clip = np.c_[points, np.ones(len(points))] @ v.view.view_projection().T
    xy = (clip[:, :2] / clip[:, 3:] + 1) / 2 * np.array(v.size)
    rows, cols = np.nonzero(on)
    pixel = np.c_[cols + 0.5, v.size[1] - rows - 0.5]  # image rows run top down
    nearest = np.min(np.linalg.norm(pixel[:, None, :] - xy[None], axis=2), axis=1)
    assert nearest.max() < 6


def test_level_of_detail_and_culling_follow_the_distance(window):
    """Framed, the tank's wheels (radius 0.5 m, ~100 px) are drawn with the full mesh. From
    1,300 m a shape of bounding radius r spans about f r / |eye - T| pixels (f = 360 / tan 25°):
    exactly those at or above CULL_PIXELS are drawn (none within 10 % of it, so the small-angle
    estimate cannot tip one), all as points (below POINT_PIXELS), the ground always.
    Turned to the sky, nothing but the plane is drawn."""
    from pyglet.window import key
    from app.renderer import CULL_PIXELS, POINT_PIXELS, bounding_radius
    w = window()
    v = w.viewer
    v.view.follow = False        # the tank's [view] follows its hull: this test places the camera itself
    frames(w, 1)
    assert v.view.renderer.drawn["cylinder", "full"] > 0
    w.dispatch_event("on_key_press", key.SPACE, 0)  # pause: the shapes stay where they were measured
    v.view.camera.distance = 1300.0
    frames(w, 1)
    f = 360 / np.tan(np.radians(25))
    expected = {}
    for i, shape in enumerate(v.session.sim.shapes):
        if shape is None or shape["type"] == "plane":
            continue
        pixels = f * bounding_radius(shape) * v.session.state["S"][i, 0] / np.linalg.norm(v.view.camera.eye_world - v.session.state["T"][i])
        assert abs(pixels / CULL_PIXELS - 1) > 0.1 and pixels < POINT_PIXELS
        expected[shape["type"]] = expected.get(shape["type"], 0) + int(pixels >= CULL_PIXELS)
    drawn = {kind: n for (kind, level), n in v.view.renderer.drawn.items() if kind != "plane" and n}
    assert drawn == {kind: n for kind, n in expected.items() if n}
    assert all(n == 0 for (kind, level), n in v.view.renderer.drawn.items() if kind != "plane" and level != "point")
    assert v.view.renderer.drawn["plane", "full"] == 1
    v.view.camera.distance, v.view.camera.pitch = 12.0, -1.5  # below the target, looking up into the sky
    v.view.camera.target_world = v.view.camera.target_world + [0.0, 50.0, 0.0]
    frames(w, 1)
    assert sum(n for (kind, _), n in v.view.renderer.drawn.items() if kind != "plane") == 0


@pytest.mark.display
def test_the_window_opens_at_about_eighty_percent_of_the_screen(display, monkeypatch):
    """An interactive window opens at 80 % of the screen, never below 1280x720 (text readable)
    nor above the screen; scripted runs keep 1280x720 (app.__main__)."""
    import pyglet
    from app.__main__ import parse_args
    from app.window import SCRIPTED_SIZE, screen_size

    class Screen:
        def __init__(self, width, height):
            self.width, self.height = width, height

    for full, expected in (((2560, 1440), (2048, 1152)), ((1920, 1080), (1536, 864)), ((1366, 768), (1280, 720)),
                           ((1024, 600), (1024, 600))):
        display = type("Display", (), {"get_default_screen": lambda self, full=full: Screen(*full)})()
        monkeypatch.setattr(pyglet.display, "get_display", lambda display=display: display)
        assert screen_size() == expected
    monkeypatch.setattr(pyglet.display, "get_display", lambda: (_ for _ in ()).throw(RuntimeError("no display")))
    assert screen_size() == SCRIPTED_SIZE
    assert parse_args([]).size is None and parse_args(["--size", "800x600"]).size == (800, 600)
