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
    assert v.stats["steps"] > 0
    press(w, key.SPACE)  # pause, so the next frames add no steps before we look
    press(w, key.R)
    assert v.stats["steps"] == 0 and v.sim.time == 0.0
    press(w, key.SPACE)
    frames(w, 5)
    assert v.stats["steps"] > 0
    assert v.load_scene("chain")
    assert v.stats["steps"] == 0


@pytest.mark.display
def test_status_line_expires_and_goes_at_the_next_action(window):
    from pyglet.window import key
    from app.viewer import MESSAGE_SECONDS
    w = window("pendulum")
    frames(w, 1)
    v = w.viewer
    press(w, key.G)
    assert v.message and v.message.startswith("gyroscopic")
    frames(w, int(MESSAGE_SECONDS * 60) - 5)  # 1/60 s a frame: still within its life
    assert v.message is not None
    frames(w, 10)
    assert v.message is None
    press(w, key.C)
    assert v.message.startswith("counteract")
    press(w, key.F)  # an action that says nothing clears the last status line
    assert v.message is None


@pytest.mark.display
def test_open_error_shows_mid_window_and_dismisses(window, tmp_path):
    """A file that cannot be opened: the error box is in the middle third of the window (not
    under the panel's title), red text is drawn there, the scene keeps running, and the
    'dismiss' button (a real click) removes it."""
    w = window("pendulum")
    frames(w, 2)
    v = w.viewer
    assert not v.load_scene(str(tmp_path / "missing.toml"))
    assert "could not open" in v.error
    t = v.sim.time
    frames(w, 3)
    assert v.sim.time > t  # still running
    x0, y0, x1, y1 = v.panel.item_rects["Error"]
    width, height = v.size
    assert x0 > width / 4 and x1 < 3 * width / 4 and y0 < height / 2, (x0, y0, x1, y1)
    image = v.read_rgb()
    red = np.all(np.abs(image[int(y0):int(y1), int(x0):int(x1)].astype(int) - [255, 89, 76]) <= 40, axis=-1)
    assert red.sum() > 20  # the error's red text is in that box
    click(w, "dismiss")
    assert v.error is None and "Error" in v.panel.item_rects  # dismissed (the rect is last frame's)


@pytest.mark.display
def test_every_scene_is_reachable_by_key(window):
    """] / PageDown step through the browser's scenes in order, past the ninth, and wrap; [ and
    PageUp go back."""
    from pyglet.window import key
    from app.controls import scene_files
    files = [path.resolve() for path in scene_files()]
    assert len(files) > 9  # the point: keys 1-9 alone cannot reach them all
    w = window("car")
    frames(w, 1)
    v = w.viewer
    start = files.index(v.scene_path.resolve())
    seen = []
    for i in range(len(files)):
        press(w, key.BRACKETRIGHT if i % 2 else key.PAGEDOWN)
        seen.append(files.index(v.scene_path.resolve()))
    assert seen == [(start + 1 + i) % len(files) for i in range(len(files))]  # all, in order, wrapped
    press(w, key.BRACKETLEFT)
    assert v.scene_path.resolve() == files[start - 1]
    press(w, key.PAGEUP)
    assert v.scene_path.resolve() == files[start - 2]


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
