"""The panel's hierarchy tree in a real window (Xvfb in CI): rows name motion, sleep and shape,
clicking a row selects the node, dragging a row onto another reparents it while running — through
the timeline, so that scrubbing back undoes it and the run's hashes are those of a plain run given
the same reparent at the same step."""
from pathlib import Path

import numpy as np
import pytest
from conftest import click, frames

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parent.parent
CAR = ROOT / "assets" / "scenes" / "car.toml"


def centre(w, label):
    x0, y0, x1, y1 = w.viewer.panel.item_rects[label]
    return (x0 + x1) / 2, w.viewer.size[1] - (y0 + y1) / 2


def drag(w, source, target):
    """Press on row `source`, move in small steps with the button held, release on row `target`
    (pyglet events, as a user's mouse gives them)."""
    from pyglet.window import mouse
    (x0, y0), (x1, y1) = centre(w, source), centre(w, target)
    w.dispatch_event("on_mouse_motion", x0, y0, 0, 0)
    frames(w, 1)
    w.dispatch_event("on_mouse_press", x0, y0, mouse.LEFT, 0)
    frames(w, 1)
    for k in range(1, 11):
        x, y = x0 + (x1 - x0) * k / 10, y0 + (y1 - y0) * k / 10
        w.dispatch_event("on_mouse_drag", x, y, (x1 - x0) / 10, (y1 - y0) / 10, mouse.LEFT, 0)
        frames(w, 1)
    w.dispatch_event("on_mouse_release", x1, y1, mouse.LEFT, 0)
    frames(w, 2)


def cargo(sim):
    return int(np.flatnonzero(sim.motion == "dynamic")[-1])


def test_the_tree_shows_selects_and_reparents_by_drag_and_drop(window):
    w = window(CAR)
    v = w.viewer
    v.session.paused = True
    frames(w, 2)
    click(w, "Hierarchy")
    frames(w, 2)
    sim = v.session.sim
    box = cargo(sim)
    name, old_parent = sim.names[box], sim.parent[box]
    assert old_parent >= 0
    assert f"tree:{name}" in v.panel.item_rects and "tree:world" in v.panel.item_rects
    click(w, f"tree:{name}")
    assert v.session.selected == box
    v.session.step_physics(30)
    frames(w, 1)
    step = sim.step_count
    drag(w, f"tree:{name}", "tree:world")
    assert sim.parent[box] == -1
    assert [(i.step, i.kind, i.args) for i in v.session.timeline.inputs] == [(step, "reparent", (name, None, "world"))]
    assert "now under world" in (v.session.message or "")
    v.session.step_physics(30)
    # the same run without the app: the reparent at the same step gives the same bits
    import physics
    plain = physics.Simulation.from_file(CAR)
    plain.step(step)
    plain.reparent(name, None, keep="world")
    plain.step(30)
    assert sim.state_hash() == plain.state_hash()
    v.session.timeline.seek(step - 5)                    # scrubbing back undoes it
    assert sim.parent[box] == old_parent
    frames(w, 2)
    drag(w, f"tree:{name}", f"tree:{name}")      # onto itself: a cycle, refused and shown
    assert sim.parent[box] == old_parent


def test_a_cycle_is_refused_with_a_message_and_the_run_goes_on(window):
    w = window(CAR)
    v = w.viewer
    frames(w, 2)
    sim = v.session.sim
    child = int(np.flatnonzero(sim.parent >= 0)[0])
    digest = sim.state_hash()
    v.session.paused = True
    assert not v.session.reparent(int(sim.parent[child]), child)
    assert "cycle" in v.session.error and sim.state_hash() == digest
    v.session.paused = False
    frames(w, 3)
    assert sim.step_count > 0
