"""The numbers overlay (O), Esc and Ctrl+Q, with real key presses (xdotool) on the window."""
import json

import pytest

from conftest import frames, require_tool
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
    assert v.stats["fps"] > 0 and v.stats["rtf"] > 0
    keys(w, "o")
    assert not v.prefs["numbers"]
    frames(w, 2)
    assert v.panel.item_rects["Legend"][1] == pytest.approx(8, abs=1)                     # moved up into its place
    keys(w, "o")
    assert v.prefs["numbers"]


@pytest.mark.display
def test_escape_closes_what_is_open_then_does_nothing(window):
    require_tool("xdotool", "xdotool")
    w = window("car")
    frames(w, 3)
    v = w.viewer
    keys(w, "F1")
    assert v.show_help
    v.error = "a test error"
    keys(w, "Escape")
    assert not v.show_help and v.error == "a test error"
    keys(w, "Escape")
    assert v.error is None
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
