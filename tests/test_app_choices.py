"""A scene opens with its own physics (the car crashes with counteraction as its file says, whatever
was chosen on the T-handle), unless "keep my physics choices" is on; a setting that differs from
the scene file has a `scene` button beside it that puts the file's value back. Real X events
(xdotool) on the window; the panel's items by `panel.item_rects`."""
import numpy as np
import pytest

from conftest import frames, require_tool, xdotool
from physics.io.scene import load_scene


def keys(w, *names):
    """Real key presses on the window, the pointer off the panel so that they reach the viewer."""
    wid = str(w._window)
    xdotool(w, "mousemove", "--window", wid, "900", "500")
    xdotool(w, "windowfocus", "--sync", wid)
    for name in names:
        xdotool(w, "key", name)


def click_item(w, label):
    """A real click on a panel item, the panel first scrolled (mouse wheel) until the item is in view."""
    wid = str(w._window)
    panel = w.viewer.panel.item_rects["Sandbox"]
    for _ in range(40):
        x0, y0, x1, y1 = w.viewer.panel.item_rects[label]
        if y1 <= panel[3] - 4:
            break
        xdotool(w, "mousemove", "--window", wid, str(int((panel[0] + panel[2]) / 2)), str(int(panel[3] - 20)))
        xdotool(w, "click", "5")                 # wheel down
    x0, y0, x1, y1 = w.viewer.panel.item_rects[label]
    xdotool(w, "mousemove", "--window", wid, str(int((x0 + x1) / 2)), str(int((y0 + y1) / 2)))
    xdotool(w, "click", "1")
    xdotool(w, "mousemove", "--window", wid, "900", "500")


def scene_value(v, name):
    return getattr(load_scene(v.session.scene_path).settings(), name)


CHOICES = ("gyroscopic", "integrator", "counteract")


@pytest.mark.display
def test_a_scene_opens_with_its_own_physics_unless_choices_are_kept(window):
    require_tool("xdotool", "xdotool")
    w = window("t_handle")
    frames(w, 3)
    v = w.viewer
    keys(w, "g", "i", "c")                       # G, I, C on the T-handle ...
    chosen = {name: getattr(v.session.sim.settings, name) for name in CHOICES}
    assert all(chosen[name] != scene_value(v, name) for name in CHOICES)
    from app.session import scene_files

    car = [path.stem for path in scene_files()].index("car")
    keys(w, str(car + 1))                        # ... then the car, by its number key
    frames(w, 5)
    assert v.session.scene_path.stem == "car"
    for name in CHOICES:                         # the car's own physics: counteraction on, as in its file
        assert getattr(v.session.sim.settings, name) == scene_value(v, name), name
    # "keep my physics choices" on: a choice made now follows to the next scene
    click_item(w, "keep my physics choices")
    assert v.session.prefs["keep_physics"]
    keys(w, "c")
    assert v.session.sim.settings.counteract != scene_value(v, "counteract")
    keys(w, "bracketright")
    frames(w, 5)
    assert v.session.scene_path.stem != "car"
    assert v.session.sim.settings.counteract != scene_value(v, "counteract")


@pytest.mark.display
def test_a_setting_off_its_scene_file_has_a_button_that_puts_it_back(window):
    require_tool("xdotool", "xdotool")
    w = window("car")
    frames(w, 3)
    v = w.viewer
    assert "scene##gyroscopic" not in v.panel.item_rects     # as the file says: no button
    keys(w, "g")
    frames(w, 2)
    assert v.session.sim.settings.gyroscopic != scene_value(v, "gyroscopic")
    assert "scene##gyroscopic" in v.panel.item_rects
    x0, _, x1, _ = v.panel.item_rects["scene##gyroscopic"]
    assert x1 <= v.panel.item_rects["Sandbox"][2]           # inside the panel, not cut off
    click_item(w, "scene##gyroscopic")
    assert v.session.sim.settings.gyroscopic == scene_value(v, "gyroscopic")
    frames(w, 2)
    assert "scene##gyroscopic" not in v.panel.item_rects
    np.testing.assert_array_equal(v.session.sim.settings.gravity, scene_value(v, "gravity"))
