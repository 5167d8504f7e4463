"""The panel's Plots section (app.plots): the ring buffers against an independent record of the
samples, the drift against the physics' conserved energy, and in a real window under X: the
buffers fill, a key (G, I) adds a marker, the residual plot gets data in a contact scene, and
the lines' colours are on screen.
"""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from app import plots
from app.history import CHANNELS, WINDOW, History, format_value
from conftest import click, frames, press

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"


class FakeSim:
    """time, energy() and momentum() as given: the buffer's bookkeeping checked on known numbers."""

    def __init__(self):
        self.time, self.E, self.L = 0.0, (0.0, 0.0), np.zeros(3)

    def energy(self):
        return {"kinetic": self.E[0], "potential": self.E[1]}

    def momentum(self):
        return {"linear": np.zeros(3), "angular": self.L.copy()}


# --- the buffers, no display ---------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.floats(1e-4, 0.2), min_size=1, max_size=300), capacity=st.integers(2, 64))
def test_ring_buffer_keeps_the_last_samples_in_order(steps, capacity):
    """Whatever the time steps, the buffer holds exactly the last `capacity` accepted samples,
    oldest first, each with its own values; a sample is accepted iff at least `spacing` s passed
    since the previous accepted one. The record kept here is a plain list (independent means)."""
    history, sim = History(capacity=capacity, window=1.0), FakeSim()
    accepted = []
    for dt in steps:
        sim.time += dt
        sim.E, sim.L = (sim.time, 2.0), np.array([sim.time, -sim.time, 3.0])
        expect = not accepted or sim.time >= accepted[-1] + history.spacing * (1 - 1e-9)
        assert history.sample(sim) == expect
        if expect:
            accepted.append(sim.time)
    t, values = history.series()
    kept = np.array(accepted[-capacity:])
    np.testing.assert_array_equal(t, kept)  # copies of the same floats: exact
    np.testing.assert_array_equal(values[CHANNELS.index("energy")], kept + 2.0)
    np.testing.assert_array_equal(values[CHANNELS.index("Lx")], kept)
    # |L| of (t, -t, 3): sqrt(2 t² + 9), to round-off of the norm (1e-12 relative)
    np.testing.assert_allclose(values[CHANNELS.index("L")], np.sqrt(2 * kept ** 2 + 9), rtol=1e-12)
    assert np.all(np.isnan(values[CHANNELS.index("speed")]))  # nothing selected


def test_window_is_covered_at_any_frame_rate():
    """Samples are at least `spacing` apart, so CAPACITY of them span at least the whole window:
    at 240 frames per second of simulated time (a sample every 3rd frame, 12.5 ms apart) the
    buffer holds WINDOW s and more, and no more than CAPACITY frame-rounded spacings. A marker
    lasts as long as the samples around it."""
    history, sim = History(), FakeSim()
    frame = 1 / 240
    history.mark(0.0, "integrator: rk4")
    for _ in range(int(1.5 * WINDOW / frame)):
        sim.time += frame
        history.sample(sim)
        if sim.time < WINDOW:
            assert len(history.markers) == 1
    assert history.markers == []  # scrolled out of the window with its samples
    t, _ = history.series()
    assert history.count == history.capacity
    # one spacing of slack: the first sample opens the span; 1e-9: round-off of the time sums
    assert WINDOW - history.spacing <= t[-1] - t[0] <= (history.capacity - 1) * (history.spacing + frame) + 1e-9
    assert np.diff(t).min() >= history.spacing * (1 - 1e-9)


def test_drift_restarts_at_each_mark_and_marker_text():
    history, sim = History(capacity=16, window=1.0), FakeSim()
    sim.E = (3.0, 1.0)  # E0 = 4 J
    history.sample(sim)
    sim.time, sim.E = 0.1, (4.0, 1.0)
    history.sample(sim)
    assert history.channel("drift")[1][-1] == pytest.approx(0.25, rel=1e-15)  # (5 - 4) / 4
    history.mark(sim.time, "integrator: rk4")
    history.mark(sim.time, "gyroscopic: off")
    sim.time, sim.E = 0.2, (5.0, 1.0)
    history.sample(sim)
    assert history.reference_energy == 6.0 and history.channel("drift")[1][-1] == 0.0
    sim.time, sim.E = 0.3, (2.0, 1.0)
    history.sample(sim)
    assert history.channel("drift")[1][-1] == pytest.approx(-0.5, rel=1e-15)  # (3 - 6) / 6
    assert plots.marker_labels(history.markers) == {0.1: "integrator: rk4; gyroscopic: off"}
    assert format_value(True) == "on" and format_value(np.array([0.0, -9.81, 0.0])) == "(0, -9.81, 0)"


def test_a_marker_label_fits_before_the_plots_right_edge():
    """Three changes at one moment made a label wider than the plot, which ImPlot clamped over the
    data: a label that does not fit says its first change and how many more, cut with "..." where
    even that does not fit; one that fits is whole (7 px a character here)."""
    width = lambda text: 7.0 * len(text)  # noqa: E731
    text = "integrator: semi-implicit-euler; gravity: (0, -4.9, 0); counteract: off"
    assert plots.fitted_label(text, 1000.0, width) == text
    assert plots.fitted_label(text, 300.0, width) == "integrator: semi-implicit-euler +2"
    cut = plots.fitted_label(text, 100.0, width)
    assert cut.endswith("... +2") and width(cut) <= 100.0 and cut.startswith("integ")
    assert plots.fitted_label("gravity: (0, -4.9, 0)", 1000.0, width) == "gravity: (0, -4.9, 0)"
    assert plots.fitted_label("gyroscopic: off", 70.0, width) == "gyrosco..."


def test_a_ramp_of_one_input_is_one_marker():
    """A held key's ramp or a dragged slider marks each value it passes ("servo_1 0.005", "servo_1
    0.01", …): within MERGE_SECONDS of its last marker a value of the same input updates that
    marker, which stays at the ramp's start and says where it went; another input, a marker with no
    value, or a pause longer than MERGE_SECONDS starts a new one. Each still restarts the drift."""
    from app.history import MERGE_SECONDS
    history = History(capacity=16, window=1.0)
    for k in range(30):
        history.mark(0.1 + 0.02 * k, f"servo_1 {0.005 * (k + 1):.3g}")
    assert history.markers == [(0.1, "servo_1 0.15")] and history.reference_energy is None
    history.mark(0.8, "servo_2 -> 0.5")
    history.mark(0.8, "pull: hull")
    history.mark(0.81, "pull: hull")
    history.mark(0.8 + MERGE_SECONDS + 0.5, "servo_2 -> 0.7")
    assert [text for _, text in history.markers] == ["servo_1 0.15", "servo_2 -> 0.5", "pull: hull", "pull: hull",
                                                     "servo_2 -> 0.7"]


def test_selection_change_clears_the_speed_channels_and_time_going_back_clears_all():
    history, sim = History(capacity=8, window=1.0), FakeSim()
    history.sample(sim, 0, np.array([3.0, 4.0, 0.0]), np.array([0.0, 0.0, 2.0]))
    sim.time = 0.5
    history.sample(sim, 1, np.array([1.0, 0.0, 0.0]), np.zeros(3))
    _, speed = history.channel("speed")
    assert np.isnan(speed[0]) and speed[1] == 1.0  # node 0's 5 m/s is not node 1's curve
    sim.time = 0.25  # a reset the viewer did not report
    history.sample(sim)
    assert history.count == 1 and history.series()[0][0] == 0.25
    with pytest.raises(KeyError, match="'nope'"):
        history.channel("nope")
    with pytest.raises(ValueError, match="capacity"):
        History(capacity=1)


def test_drift_measures_the_integrators_energy_behaviour():
    """The T-handle (free body, no gravity): lie-midpoint conserves energy to round-off (drift
    under 1e-10 over 2 s; measured ~1e-13), explicit gyroscopic with semi-implicit Euler gains
    energy (scene comment; drift over 1e-3 after 2 s; measured ~8e-2). Each sample's energy is
    the physics' own sum (exact: the same floats)."""
    import physics
    sim = physics.Simulation.from_file(SCENES / "t_handle.toml")
    history = History()
    for _ in range(120):
        sim.step()
        history.sample(sim)
    energy = sim.energy()
    assert history.channel("energy")[1][-1] == energy["kinetic"] + energy["potential"]
    assert np.abs(history.channel("drift")[1]).max() < 1e-10
    sim.set("gyroscopic", "explicit")
    sim.set("integrator", "semi-implicit-euler")
    history.mark(sim.time, "explicit + semi-implicit-euler")
    for _ in range(120):
        sim.step()
        history.sample(sim)
    assert history.channel("drift")[1][-1] > 1e-3


# --- in a real window ----------------------------------------------------------------------------

def colour_pixels(image, rgb, region=(slice(None), slice(0, 370)), tolerance=40):
    """Pixels of the panel (left 370 px) within `tolerance` (8-bit, per channel) of `rgb`. The
    core of a 2 px ImPlot line has its exact colour; 40 admits its antialiased edge's nearest
    shades and nothing of the panel's greys or the other plot colours (they differ by ≥ 70)."""
    target = np.round(np.asarray(rgb) * 255)
    return int(np.all(np.abs(image[region].astype(int) - target) <= tolerance, axis=-1).sum())


@pytest.mark.display
def test_buffers_fill_and_keys_add_markers(window):
    """One sample per frame (1/60 s > the 9.8 ms spacing); G and I, as real key events, each add
    a marker at the time they were pressed and restart the drift; with the T-handle switched to
    explicit + semi-implicit-euler the drift grows from there (the product's promise)."""
    from pyglet.window import key
    w = window(SCENES / "t_handle.toml")
    v = w.viewer
    frames(w, 30)
    assert v.session.history.count == 30
    energy, momentum = v.session.sim.energy(), v.session.sim.momentum()
    t, values = v.session.history.series()
    assert t[-1] == v.session.sim.time
    assert values[CHANNELS.index("energy"), -1] == energy["kinetic"] + energy["potential"]
    np.testing.assert_array_equal(values[[CHANNELS.index(c) for c in ("Lx", "Ly", "Lz")], -1], momentum["angular"])
    assert np.abs(values[CHANNELS.index("drift")]).max() < 1e-10  # lie-midpoint: round-off
    for _ in range(2):  # implicit -> off -> explicit
        press(w, key.G)
    while v.session.sim.settings.integrator != "semi-implicit-euler":
        press(w, key.I)
        assert len(v.session.history.markers) < 10, "I never reached semi-implicit-euler"
    assert [text for _, text in v.session.history.markers[:2]] == ["gyroscopic: off", "gyroscopic: explicit"]
    assert v.session.history.markers[-1][1] == "integrator: semi-implicit-euler"
    changed = v.session.history.markers[-1][0]
    assert changed <= v.session.sim.time and changed > t[-1]
    frames(w, 120)
    t, drift = v.session.history.channel("drift")
    assert abs(drift[np.searchsorted(t, changed)]) < 1e-6  # restarted at the change (one frame later)
    assert drift[-1] > 1e-3  # measured ~8e-2 after 2 s
    press(w, key.R)
    assert v.session.history.count <= 1 and v.session.history.markers == []  # a reset starts the plots over


@pytest.mark.display
def test_plots_section_on_screen_with_selected_node_and_residual(window, tmp_path):
    """The stack (contacts): clicking the Plots header opens it; ImPlot's lines reach the picture
    (the energy line's orange appears in the panel, and not with the section closed); with a
    node selected its speeds are plotted; scrolled down, the residual plot has one point per
    solver iteration with a positive residual, in its colour."""
    from pyglet.window import key
    from app.png import write_png
    w = window(SCENES / "stack.toml")
    v = w.viewer
    frames(w, 10)
    closed = v.read_rgb()
    assert colour_pixels(closed, plots.COLORS["energy"]) == 0
    click(w, "Plots")
    v.session.selected = int(np.flatnonzero(np.asarray(v.session.sim.motion) == "dynamic")[-1])  # the top box
    frames(w, 30)
    image = v.read_rgb()
    write_png(tmp_path / "plots.png", image)
    assert v.panel.plotted["energy"][0] == v.session.history.count > 30
    assert v.panel.plotted["speed"][0] == v.session.history.count
    # A settled stack's energy is flat to 1e-5: its line is a short horizontal stroke at the left of
    # the 20 s window (~1 px per 0.07 s), 12 px after 0.7 s; none at all with the section closed.
    assert colour_pixels(image, plots.COLORS["energy"]) > 8
    assert colour_pixels(image, plots.COLORS["drift"]) > 8
    _, speed = v.session.history.channel("angular_speed")
    assert np.isfinite(speed[-1]) and speed[-1] == np.linalg.norm(v.session.state["omega"][v.session.selected])
    assert "residual" not in v.panel.plotted  # below the panel's edge: ImPlot skips hidden plots
    x0, y0, x1, y1 = v.panel.item_rects["Plots"]
    w.dispatch_event("on_mouse_motion", (x0 + x1) / 2, 300, 0, 0)  # onto the panel, over a plot
    frames(w, 1)
    w.dispatch_event("on_key_press", key.SPACE, 0)  # pause: a still picture
    frames(w, 1)
    for _ in range(40):  # the mouse wheel, a notch a frame: ImGui scrolls the panel until the
        w.dispatch_event("on_mouse_scroll", (x0 + x1) / 2, 300, 0, -1)  # residual plot is all in view
        frames(w, 1)
        if "residual" in v.panel.plotted and v.panel.plotted["residual"][1][3] < v.size[1] - 20:
            break
    frames(w, 2)  # ImPlot fits its axes to the data a frame after the plot first appears
    scrolled = v.read_rgb()
    write_png(tmp_path / "residual.png", scrolled)
    residual = v.session.sim.solver_residual()
    assert residual.size and (residual > 0).any(), "the stack's contacts left no solver residual"
    points, (px0, py0, px1, py1) = v.panel.plotted["residual"]
    assert points == int((residual > 0).sum())
    assert colour_pixels(scrolled, plots.COLORS["residual"], (slice(int(py0), int(py1)), slice(int(px0), int(px1)))) > 30


def test_the_plots_follow_a_chosen_subtree():
    """The sampled energy and |L| are the physics' values for the chosen subtree (exactly: the same
    call; the values themselves are checked in tests/test_simulation.py), a choice starts a new
    series, and the panel offers the assemblies that hold a body (the car; not the ground or wall).
    In the car every body is below the car, so one cargo body's subtree is what tells a subtree
    from the whole."""
    import physics
    from app.tree import assemblies
    sim = physics.Simulation.from_file(SCENES / "car.toml")
    sim.step(90)
    offered = [sim.names[i] for i in assemblies(sim)]
    assert "car" in offered and "ground" not in offered and "wall" not in offered
    history = History()
    history.sample(sim)
    history.set_subtree("car")
    assert history.count == 0
    history.sample(sim)
    energy = sim.energy(subtree="car")
    assert history.channel("energy")[1][-1] == energy["kinetic"] + energy["potential"]
    assert history.channel("L")[1][-1] == np.linalg.norm(sim.momentum(subtree="car")["angular"])
    box = sim.names[int(np.flatnonzero(sim.motion == "dynamic")[-1])]
    history.set_subtree(box)
    sim.step(1)
    history.sample(sim)
    energy = sim.energy(subtree=box)
    assert history.channel("energy")[1][-1] == energy["kinetic"] + energy["potential"]
    assert energy["kinetic"] < sim.energy()["kinetic"]
