"""Messages never move the layout: a status message is a window of its own over the scene, wrapped
in full, kept while the pointer is on it, and logged in the panel's Messages section (real key
presses through xdotool)."""
import pytest

from conftest import frames, require_tool, xdotool
from test_app_choices import keys


def panel_rects(v):
    """Every remembered panel item but the message and the per-setting `scene` buttons."""
    return {label: rect for label, rect in v.panel.item_rects.items()
            if label != "message" and not label.startswith("scene##")}


@pytest.mark.display
def test_a_message_moves_no_widget_and_is_shown_in_full(window, monkeypatch):
    require_tool("xdotool", "xdotool")
    # a message's life shortened from 4 s of frames to 1 s (each frame here is drawn in software):
    # what is checked is that it stays while pointed at and goes MESSAGE_SECONDS after, whatever that is
    monkeypatch.setattr("app.session.MESSAGE_SECONDS", 1.0)
    from app.session import MESSAGE_SECONDS
    w = window("car")
    frames(w, 3)
    v = w.viewer
    before = panel_rects(v)
    keys(w, "c")                                 # "counteract: off" appears
    assert v.session.message and v.session.message.startswith("counteract")
    assert panel_rects(v) == before              # nothing in the panel moved for it
    long = "stopped: the run gained 31.44 J of energy without input by step 3379; " * 4
    v.session.notify(long)
    frames(w, 2)
    x0, y0, x1, y1 = v.panel.item_rects["message"]
    assert x0 >= v.panel.item_rects["Sandbox"][2] and x1 <= v.size[0] and y1 <= v.size[1]   # over the scene
    assert y1 - y0 > 3 * 13                      # wrapped over several lines, not cut off
    assert v.session.messages[-1][1] == long and any(text.startswith("counteract") for _, text in v.session.messages)
    # kept while the pointer is on it, gone MESSAGE_SECONDS after it leaves
    wid = str(w._window)
    xdotool(w, "mousemove", "--window", wid, str(int((x0 + x1) / 2)), str(int((y0 + y1) / 2)))
    frames(w, int(MESSAGE_SECONDS * 60) + 10)
    assert v.session.message == long
    xdotool(w, "mousemove", "--window", wid, "900", "200")
    frames(w, int(MESSAGE_SECONDS * 60) + 10)
    assert v.session.message is None
    assert panel_rects(v) == before


@pytest.mark.display
def test_what_the_load_warns_about_is_shown_as_messages(window, tmp_path):
    """A scene whose load warns (two boxes placed inside one another; a light link holding a body
    1e18 times heavier) opens, runs, and shows each warning in the Messages log, as the runner
    prints each on one line: never only on a terminal the user may not see."""
    path = tmp_path / "warned.toml"
    path.write_text(
        '[[node]]\nname = "a"\nmotion = "dynamic"\ntranslation = [3.0, 1.0, 0.0]\nshape = { type = "box", size = [0.2, 0.2, 0.2] }\n'
        '[[node]]\nname = "b"\nmotion = "dynamic"\ntranslation = [3.0, 1.0, 0.0]\nshape = { type = "box", size = [0.2, 0.2, 0.2] }\n'
        '[[node]]\nname = "link"\nmotion = "dynamic"\nmass = 1e-9\ntranslation = [0.0, 2.0, 0.0]\n'
        'shape = { type = "box", size = [0.1, 0.5, 0.1] }\n'
        '[[node]]\nname = "weight"\nmotion = "dynamic"\nmass = 1e9\ntranslation = [0.0, 1.5, 0.0]\n'
        'shape = { type = "sphere", radius = 0.2 }\n'
        '[[joint]]\ntype = "ball"\nb = "link"\nanchor = [0.0, 2.25, 0.0]\n'
        '[[joint]]\ntype = "ball"\na = "link"\nb = "weight"\nanchor = [0.0, 1.75, 0.0]\n')
    w = window(path)
    frames(w, 3)
    logged = " ".join(text for _, text in w.viewer.session.messages)    # (messages of one frame are joined)
    assert "starts inside one another" in logged and "masses differ 1e+18 times" in logged, logged
    assert w.viewer.session.sim.step_count > 0 and w.viewer.session.error is None
