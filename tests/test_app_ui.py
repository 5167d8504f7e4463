"""The viewer's interface text and keys: labels and numbers that fit, counters and status lines
that reset or expire, errors where the user looks, every scene reachable by key, an aligned help
table, contact markers off by default."""
import numpy as np
import pytest
from conftest import click, frames, press

from app import settings as store
from app.panel import FLOAT_FORMAT


def test_float_settings_keep_six_significant_digits():
    # the default erp 0.99999 read "1" with %.4g; the format is C printf, as ImGui applies it
    assert FLOAT_FORMAT % 0.99999 == "0.99999"
    assert FLOAT_FORMAT % (1 / 60) == "0.0166667"
    assert FLOAT_FORMAT % 1.0 == "1"


def test_contacts_overlay_is_off_by_default():
    # a pile of 1,000 boxes has ~5,000 contacts: drawn by default they hid the scene
    assert store.DEFAULTS["overlays"]["contacts"] is False
    assert store.load("/nonexistent/settings.json")["overlays"]["contacts"] is False


@pytest.mark.display
def test_labels_fit_inside_the_panel(window):
    """Every physics setting's widget, its label included, ends inside the panel window (the
    label 'rotation_update' was cut off at the panel's right edge)."""
    w = window("pile")
    frames(w, 2)
    rects = w.viewer.panel.item_rects
    right = rects["Sandbox"][2]
    for name in ("rotation_update", "integrator", "gyroscopic", "exponential", "erp", "dt"):
        assert rects[name][2] <= right - 4, (name, rects[name], right)  # 4 px: the window's border


@pytest.mark.display
def test_step_counter_resets_on_reset_and_on_load(window):
    from pyglet.window import key
    w = window("pendulum")
    frames(w, 10)
    v = w.viewer
    assert v.session.stats["steps"] > 0
    press(w, key.SPACE)  # pause, so the next frames add no steps before we look
    press(w, key.R)
    assert v.session.stats["steps"] == 0 and v.session.sim.time == 0.0
    press(w, key.SPACE)
    frames(w, 5)
    assert v.session.stats["steps"] > 0
    assert v.session.load_scene("chain")
    assert v.session.stats["steps"] == 0


@pytest.mark.display
def test_status_line_expires_and_goes_at_the_next_action(window):
    from pyglet.window import key
    from app.session import MESSAGE_SECONDS
    w = window("pendulum")
    frames(w, 1)
    v = w.viewer
    press(w, key.G)
    assert v.session.message and v.session.message.startswith("gyroscopic")
    frames(w, int(MESSAGE_SECONDS * 60) - 5)  # 1/60 s a frame: still within its life
    assert v.session.message is not None
    frames(w, 10)
    assert v.session.message is None
    press(w, key.C)
    assert v.session.message.startswith("counteract")
    press(w, key.F)  # an action that says nothing clears the last status line
    assert v.session.message is None


@pytest.mark.display
def test_open_error_shows_mid_window_and_dismisses(window, tmp_path):
    """A file that cannot be opened: the error box is in the middle third of the window (not
    under the panel's title), red text is drawn there, the scene keeps running, and the
    'dismiss' button (a real click) removes it."""
    w = window("pendulum")
    frames(w, 2)
    v = w.viewer
    assert not v.session.load_scene(str(tmp_path / "missing.toml"))
    assert "could not open" in v.session.error
    t = v.session.sim.time
    frames(w, 3)
    assert v.session.sim.time > t  # still running
    x0, y0, x1, y1 = v.panel.item_rects["Error"]
    width, height = v.size
    assert x0 > width / 4 and x1 < 3 * width / 4 and y0 < height / 2, (x0, y0, x1, y1)
    image = v.read_rgb()
    red = np.all(np.abs(image[int(y0):int(y1), int(x0):int(x1)].astype(int) - [255, 89, 76]) <= 40, axis=-1)
    assert red.sum() > 20  # the error's red text is in that box
    click(w, "dismiss")
    assert v.session.error is None and "Error" in v.panel.item_rects  # dismissed (the rect is last frame's)


@pytest.mark.display
def test_every_scene_is_reachable_by_key(window):
    """] / PageDown step through the browser's scenes in order, past the ninth, and wrap; [ and
    PageUp go back."""
    from pyglet.window import key
    from app.session import scene_files
    files = [path.resolve() for path in scene_files()]
    assert len(files) > 9  # the point: keys 1-9 alone cannot reach them all
    w = window("car")
    frames(w, 1)
    v = w.viewer
    start = files.index(v.session.scene_path.resolve())
    seen = []
    for i in range(len(files)):
        press(w, key.BRACKETRIGHT if i % 2 else key.PAGEDOWN)
        seen.append(files.index(v.session.scene_path.resolve()))
    assert seen == [(start + 1 + i) % len(files) for i in range(len(files))]  # all, in order, wrapped
    press(w, key.BRACKETLEFT)
    assert v.session.scene_path.resolve() == files[start - 1]
    press(w, key.PAGEUP)
    assert v.session.scene_path.resolve() == files[start - 2]


@pytest.mark.display
def test_help_rows_line_up(window):
    """F1's descriptions (keys and mouse) all start at one x: a table, not padded strings."""
    from pyglet.window import key
    from app.controls import KEYS, MOUSE_HELP
    w = window("pendulum")
    press(w, key.F1)
    frames(w, 1)
    rects = w.viewer.panel.item_rects
    labels = [label for _, label, _, _ in KEYS] + [label for label, _ in MOUSE_HELP]
    starts = {round(rects[f"help {label}"][0], 1) for label in labels}
    assert len(starts) == 1, starts


@pytest.mark.display
def test_pile_is_not_hidden_by_overlays(window):
    """The pile with the default overlays: its boxes' colours show, white (contact markers)
    covers only a small part of it. 2 %: the specular highlights of lit faces are near white."""
    w = window("pile")
    frames(w, 30)
    image = w.viewer.read_rgb().astype(int)
    scene = image[:, 400:]  # right of the panel
    white = np.all(scene > 235, axis=-1)
    assert white.mean() < 0.02, white.mean()


def _drag(w, start, end, steps=6):
    """A real left drag (xdotool) from window point `start` to `end` (pixels, origin top left)."""
    from conftest import xdotool
    wid = str(w._window)
    xdotool(w, "mousemove", "--window", wid, str(int(start[0])), str(int(start[1])))
    xdotool(w, "mousedown", "1")
    for k in range(1, steps + 1):
        x = start[0] + (end[0] - start[0]) * k / steps
        y = start[1] + (end[1] - start[1]) * k / steps
        xdotool(w, "mousemove", "--window", wid, str(int(x)), str(int(y)))
    xdotool(w, "mouseup", "1")


@pytest.mark.display
def test_the_panel_is_as_wide_as_its_edge_is_dragged_and_stays_so(window, app_config):
    """Its right edge dragged 100 px right and then 60 px left with real pointer events, the panel
    follows within a pixel (ImGui's resize grip reads whole pixels) and the camera does not turn;
    the width is a view preference: the next window opens the panel as wide, and the shadows
    persisted beside it are untouched."""
    from conftest import require_tool
    require_tool("xdotool", "xdotool")
    w = window("t_handle")
    v = w.viewer
    frames(w, 2)
    x0, y0, x1, y1 = v.panel.windows["Sandbox"]
    yaw = v.view.camera.yaw
    _drag(w, (x1 - 1, 300), (x1 + 99, 300))
    assert abs(v.panel.windows["Sandbox"][2] - (x1 + 100)) <= 1
    _drag(w, (x1 + 99, 300), (x1 + 39, 300))
    width = v.panel.windows["Sandbox"][2] - x0
    assert abs(width - (x1 - x0 + 40)) <= 1
    assert v.view.camera.yaw == yaw, "dragging the panel's edge turned the camera"
    assert v.session.prefs["panel_width"] == pytest.approx(width, abs=0.5)
    w.close()
    assert store.load()["panel_width"] == pytest.approx(width, abs=0.5)
    again = window("t_handle")
    frames(again, 2)
    x0, _, x1, _ = again.viewer.panel.windows["Sandbox"]
    assert x1 - x0 == pytest.approx(width, abs=0.5)


def test_a_bad_panel_width_in_the_settings_file_falls_back(tmp_path):
    path = tmp_path / "settings.json"
    for bad in ("wide", -5, 10.0, 1e9, True):
        path.write_text(f'{{"panel_width": {bad!r}}}'.replace("'", '"').replace("True", "true"))
        assert store.load(path)["panel_width"] == store.DEFAULTS["panel_width"], bad
    path.write_text('{"panel_width": 512}')
    assert store.load(path)["panel_width"] == 512.0


@pytest.mark.display
@pytest.mark.parametrize("scene", ["tank", "car", "pile"])
def test_no_label_is_cut_at_1280x720(window, scene):
    """At 1280x720 with the panel's first width, with a body selected (the inspector's longest
    lines), the window cuts no label of the panel: text stays whole and readable."""
    w = window(scene, size=(1280, 720))
    v = w.viewer
    v.session.selected = int(v.session.dynamic[0]) if v.session.dynamic.size else 1
    frames(w, 3)
    assert v.size == (1280, 720)
    assert v.panel.cut == [], f"cut at 1280x720: {v.panel.cut}"


@pytest.mark.display
def test_a_label_the_window_cuts_shows_whole_in_a_tooltip(window):
    """The panel dragged down to its narrowest (real pointer events): the window cuts labels, and
    the pointer on one (xdotool) shows its whole text in a tooltip, which the picture shows beside
    the pointer (pixels change there) and which goes when the pointer leaves."""
    from conftest import require_tool, xdotool
    from app.settings import MIN_PANEL_WIDTH
    require_tool("xdotool", "xdotool")
    w = window("tank")
    v = w.viewer
    frames(w, 2)
    x0, _, x1, _ = v.panel.windows["Sandbox"]
    _drag(w, (x1 - 1, 300), (x0 + 100, 300))
    assert v.panel.windows["Sandbox"][2] - x0 == pytest.approx(MIN_PANEL_WIDTH, abs=1)
    frames(w, 2)
    whole = "integrator: " + v.session.sim.settings.integrator     # its combo's box is narrower than the value
    assert whole in v.panel.cut and "Shadows" in v.panel.cut
    wid = str(w._window)
    panel = v.panel.windows["Sandbox"]
    for _ in range(40):   # the wheel on the panel until the item is in view
        if v.panel.item_rects["integrator"][3] <= panel[3] - 4:
            break
        xdotool(w, "mousemove", "--window", wid, str(int((panel[0] + panel[2]) / 2)), str(int(panel[3] - 20)))
        xdotool(w, "click", "5")
    lo_x, lo_y, hi_x, hi_y = v.panel.item_rects["integrator"]
    xdotool(w, "mousemove", "--window", wid, "900", "500")
    before = v.read_rgb()
    xdotool(w, "mousemove", "--window", wid, str(int(lo_x + 10)), str(int((lo_y + hi_y) / 2)))
    frames(w, 30)   # ImGui shows a tooltip after the pointer rests a moment
    assert v.panel.whole_shown == whole
    after = v.read_rgb()
    near = (slice(int(hi_y), int(hi_y) + 40), slice(int(lo_x), int(lo_x) + 200))
    assert np.any(before[near] != after[near]), "no tooltip drawn below the pointer"
    xdotool(w, "mousemove", "--window", wid, "900", "500")
    frames(w, 2)
    assert v.panel.whole_shown is None


@pytest.mark.display
def test_the_selection_is_cleared_when_another_scene_opens(window):
    """A body picked with a real click, then PgDn (a real key): the next scene opens with its own
    selection (the tank's [view] follows its hull), and PgUp back does not bring the old index back."""
    from conftest import require_tool, xdotool
    require_tool("xdotool", "xdotool")
    w = window("t_handle")
    v = w.viewer
    v.session.paused = True
    frames(w, 2)
    clip = v.view.view_projection() @ np.r_[v.session.state["T"][0], 1.0]   # the handle's centre sphere
    x = (clip[0] / clip[3] + 1) / 2 * v.size[0]
    y = (1 - clip[1] / clip[3]) / 2 * v.size[1]
    wid = str(w._window)
    xdotool(w, "mousemove", "--window", wid, str(int(x)), str(int(y)))
    xdotool(w, "click", "1")
    assert v.session.selected is not None, "the click picked nothing"
    xdotool(w, "key", "Next")
    assert v.session.scene_path.stem == "tank"
    assert v.session.selected == list(v.session.sim.names).index("hull") and v.view.follow
    xdotool(w, "key", "Prior")
    assert v.session.scene_path.stem == "t_handle" and v.session.selected is None


@pytest.mark.display
def test_antialiasing_is_a_checkbox_that_smooths_edges_and_stays_chosen(window, app_config):
    """On Mesa's llvmpipe (4x multisampled framebuffers, as its GLX configs) the viewer starts
    without MSAA (its cost: docs/benchmarks.md); the panel's box, ticked with real clicks, turns
    4x on from the next frame: the T-handle's silhouettes against the sky get blended shades, and
    the choice is a view preference the next window starts with. Blends: the distinct colours
    around the handle grow by a fifth at least (measured 603 -> 831: the interior's shades, from
    the per-vertex lighting, are the same both ways; without MSAA an edge pixel is the body's or
    the sky's)."""
    from conftest import require_tool
    from test_app_choices import click_item
    require_tool("xdotool", "xdotool")
    w = window("t_handle")
    v = w.viewer
    assert v.view.software and v.ctx.max_samples >= 4
    assert v.view.target.samples == 0
    v.session.paused = True
    frames(w, 2)
    clip = v.view.view_projection() @ np.r_[v.session.state["T"][0], 1.0]
    x, y = int((clip[0] / clip[3] + 1) / 2 * v.size[0]), int((1 - clip[1] / clip[3]) / 2 * v.size[1])
    around = (slice(y - 120, y + 120), slice(x - 160, x + 160))
    before = v.read_rgb()[around]
    click_item(w, "Overlays")
    click_item(w, "antialiasing")
    assert v.view.target.samples == 4 and v.session.prefs["msaa"] == 4
    after = v.read_rgb()[around]
    shades = [len(np.unique(picture.reshape(-1, 3), axis=0)) for picture in (before, after)]
    assert shades[1] > 1.2 * shades[0], f"distinct colours around the handle without / with MSAA: {shades}"
    w.close()
    assert store.load()["msaa"] == 4
    again = window("t_handle")
    assert again.viewer.view.target.samples == 4
