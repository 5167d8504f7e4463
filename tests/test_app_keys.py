"""The numbers overlay (O), Esc and Ctrl+Q, with real key presses (xdotool) on the window."""
import json

import pytest

from conftest import frames, require_tool, xdotool
from test_app_choices import keys


@pytest.mark.display
def test_the_numbers_overlay_shows_at_a_glance_and_toggles(window):
    require_tool("xdotool", "xdotool")
    w = window("car")
    frames(w, 30)
    v = w.viewer
    x0, y0, x1, y1 = v.panel.item_rects["numbers"]
    assert x1 == pytest.approx(v.size[0] - 8, abs=1) and y0 == pytest.approx(8, abs=1)     # top right
    legend = v.panel.item_rects["Legend"]
    assert legend[1] >= y1                          # the legend below it, not under it
    assert v.session.stats["fps"] > 0 and v.session.stats["rtf"] > 0
    assert "real time x" in v.panel.numbers_lines[1]
    keys(w, "space")                                # paused: the factor is not 0.00 but "paused"
    frames(w, 2)
    assert v.session.paused and v.panel.numbers_lines[1].endswith("   paused"), v.panel.numbers_lines
    keys(w, "space")
    frames(w, 2)
    assert not v.session.paused and "real time x" in v.panel.numbers_lines[1]
    keys(w, "o")
    assert not v.session.prefs["numbers"]
    frames(w, 2)
    assert v.panel.item_rects["Legend"][1] == pytest.approx(8, abs=1)                     # moved up into its place
    keys(w, "o")
    assert v.session.prefs["numbers"]


@pytest.mark.display
def test_escape_closes_what_is_open_then_does_nothing(window):
    require_tool("xdotool", "xdotool")
    w = window("car")
    frames(w, 3)
    v = w.viewer
    keys(w, "F1")
    assert v.show_help
    v.session.error = "a test error"
    keys(w, "Escape")
    assert not v.show_help and v.session.error == "a test error"
    keys(w, "Escape")
    assert v.session.error is None
    keys(w, "Escape", "Escape")
    assert not w.has_exit and w.viewer is not None          # nothing left to close: the app stays


@pytest.mark.display
def test_ctrl_q_quits_and_saves_the_view_preferences(window, app_config):
    require_tool("xdotool", "xdotool")
    w = window("car")
    frames(w, 3)
    keys(w, "o")                                    # a view preference to be saved
    keys(w, "ctrl+q")
    assert w.has_exit
    w.close()                                       # what app.__main__ does when the loop ends
    saved = json.loads((app_config / "settings.json").read_text())
    assert saved["numbers"] is False


@pytest.mark.display
def test_a_press_made_as_the_pointer_enters_the_panel_never_moves_the_camera(window):
    """xdotool moves the pointer from the scene onto the panel and presses in the same breath
    (one command: no frame between), then drags inside the panel: the camera keeps its place."""
    require_tool("xdotool", "xdotool")
    w = window("car")
    frames(w, 3)
    v = w.viewer
    wid = str(w._window)
    xdotool(w, "mousemove", "--window", wid, "900", "400")
    camera = (v.view.camera.yaw, v.view.camera.pitch, v.view.camera.distance)
    x0, y0, x1, y1 = v.panel.item_rects["Sandbox"]
    inside = (str(int(x0 + 40)), str(int((y0 + y1) / 2)))
    xdotool(w, "mousemove", "--window", wid, *inside, "mousedown", "1", "mousemove_relative", "--", "-20", "30",
            "mousemove_relative", "--", "15", "-40", "mouseup", "1")
    assert (v.view.camera.yaw, v.view.camera.pitch, v.view.camera.distance) == camera
    xdotool(w, "mousemove", "--window", wid, *inside, "click", "--repeat", "3", "5")     # the wheel too
    assert v.view.camera.distance == camera[2]


def test_the_speed_says_backwards_when_time_runs_back():
    """The overlay's and the Stats' speed (app.panel.speed_text): played backwards (Shift+Left) the
    real-time factor is below 0 and is said as such, where it read "real time x0.00" as a stall."""
    from app.panel import speed_text
    assert speed_text(-0.5, False) == "backwards x0.50"
    assert speed_text(1.0, False) == "real time x1.00"
    assert speed_text(-0.5, True) == speed_text(1.0, True) == "paused"
