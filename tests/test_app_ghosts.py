"""Ghost runs in a real window (app.ghosts): a variant's pixels in its colour, its readouts
changing, bit for bit a fresh run, hide / remove / promote, seeks, a branch as a ghost, the crash
A/B's trails, and plots whose tick labels can be read.

States are checked by `state_hash()` (SHA-256 over the whole state: equal means bit for bit)
against plain `physics.Simulation`s stepped here without the app. Pixels are told apart by hue: the
T-handle's own colours (grey, red, blue) and the sky are never redder *and* bluer than green by
0.1, a magenta ghost blended over any of them is.
"""
from pathlib import Path

import numpy as np
import pytest
from conftest import click, frames, press

from app import ghosts as ghost_module
from app.plots import readable_axis

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"
SCENE_X, SCENE_Y = 400, 200   # px: the panel is left of x, the numbers overlay and the legend above y


def magenta_pixels(image):
    """Scene pixels (right of the panel, below the inertial overlay's legend, whose "euler" is
    violet) whose red and blue both exceed green by 26 (0.1)."""
    rgb = image[SCENE_Y:, SCENE_X:].astype(int)
    return int(((rgb[..., 0] > rgb[..., 1] + 26) & (rgb[..., 2] > rgb[..., 1] + 26)).sum())


def fresh_hash(scene, steps_before, change, steps_after):
    """A plain run: `steps_before` steps with the scene's settings, `change` set, `steps_after` more."""
    import physics
    sim = physics.Simulation.from_file(scene)
    sim.step(steps_before)
    for name, value in change.items():
        sim.set(name, value)
    sim.step(steps_after)
    return sim.state_hash()


def test_tick_labels_differ_for_a_slowly_varying_energy():
    """An energy of 25 J varying by 1e-7 J ("25 25 25" with %g): plotted as its deviation, the
    offset named; the labels all differ and the limits hold every value with a margin. A
    quantity that varies a lot keeps its own values and still gets distinct labels."""
    energy = 25.03125 + 1e-7 * np.sin(np.linspace(0.0, 3.0, 200))
    axis = readable_axis(energy)
    assert axis["offset"] == energy[0]
    shown = energy - axis["offset"]
    span = np.ptp(shown)
    assert axis["lo"] < shown.min() - 0.05 * span and axis["hi"] > shown.max() + 0.05 * span
    assert len(axis["labels"]) >= 3 and len(set(axis["labels"])) == len(axis["labels"])
    for label, tick in zip(axis["labels"], axis["ticks"]):
        assert float(label) == pytest.approx(tick, rel=1e-6, abs=1e-12 * span)   # each label is its tick
    wide = readable_axis(np.array([0.0, 9.7, 10.2]))
    assert wide["offset"] == 0.0 and len(set(wide["labels"])) == len(wide["labels"]) >= 3


@pytest.mark.display
def test_t_handle_ghost(window):
    """The T-handle, paused at step 20: the draft set to gyroscopic off, "Add variant" clicked.
    Magenta pixels appear (none before); its rotation divergence grows with time (the handle flips
    at 2.63 s, the variant never does: over 1 rad by 4 s); after 240 steps its state is bit for bit
    a fresh run's (20 steps as the scene says, then gyroscopic off). Seeking back to step 140 puts
    it where it was then (hash), forward again to where it was. Hidden, the magenta goes; shown,
    it is back; promoted, the main run is that simulation, its timeline starts at its step, and it
    runs on as a fresh run with its settings would. Removing the last ghost clears them."""
    from pyglet.window import key
    w = window(SCENES / "t_handle.toml")
    v = w.viewer
    press(w, key.SPACE)
    v.session.seek(0)
    v.session.step_physics(20)
    frames(w, 2)
    assert magenta_pixels(v.read_rgb()) == 0
    click(w, "Compare")
    v.ghosts.draft["gyroscopic"] = "off"
    click(w, "Add variant")
    label = "gyroscopic=off"
    assert list(v.ghosts.ghosts) == [label] and v.ghosts.ghosts[label].color == ghost_module.COLORS[0]
    ghost = v.ghosts.comparison.simulation(label)
    assert ghost is not v.session.sim and ghost.step_count == 20
    press(w, key.SPACE)
    divergence, hashes = [], {}
    while v.session.sim.step_count < 260:
        frames(w, 1)
        divergence.append(v.ghosts.readouts[label]["max_rotation_error"])
        hashes[ghost.step_count] = ghost.state_hash()
    press(w, key.SPACE)
    v.session.seek(260)
    assert ghost.step_count == v.session.sim.step_count == 260
    image = v.read_rgb()
    assert magenta_pixels(image) > 150
    assert divergence[10] < 1e-2 and max(divergence) > 1.0       # measured: 4e-4 rad at step 30, 3.1 rad by 260
    assert ghost.state_hash() == fresh_hash(SCENES / "t_handle.toml", 20, {"gyroscopic": "off"}, 240)
    v.session.seek(140)
    assert ghost.step_count == 140 and ghost.state_hash() == hashes[140]
    v.session.seek(260)
    assert ghost.state_hash() == hashes[260]
    click(w, f"hide##{label}")
    assert v.ghosts.ghosts[label].hidden and magenta_pixels(v.read_rgb()) == 0
    click(w, f"show##{label}")
    assert magenta_pixels(v.read_rgb()) > 150
    plotted = v.ghosts.plotted
    assert plotted["max_rotation_error"][0] > 100      # one sample a frame, a line per run
    click(w, f"promote##{label}")
    assert v.session.sim is ghost and v.session.sim.settings.gyroscopic == "off"
    assert v.session.timeline.origin == v.session.timeline.head == 260 and v.ghosts.comparison is None
    assert v.session.history.markers[-1][1] == f"promoted {label}"
    press(w, key.SPACE)
    while v.session.sim.step_count < 300:
        frames(w, 1)
    press(w, key.SPACE)
    v.session.seek(300)
    assert v.session.sim.state_hash() == fresh_hash(SCENES / "t_handle.toml", 20, {"gyroscopic": "off"}, 280)
    v.ghosts.add_variant({"integrator": "rk4"})
    frames(w, 1)                 # the panel draws its row
    click(w, "remove##integrator=rk4")
    assert v.ghosts.comparison is None and v.ghosts.ghosts == {}


@pytest.mark.display
def test_branch_as_ghost_and_readable_energy_axis(window):
    """The T-handle: 60 steps, back to step 30, integrator set to rk4 (the future after 30 is cut
    off as the previous branch); "Show previous branch" makes it a ghost that at every later step
    has the hash the branch recorded there. The Plots section's energy axis (lie-midpoint: energy
    constant to round-off) is labelled with distinct ticks and an offset."""
    from pyglet.window import key
    w = window(SCENES / "t_handle.toml")
    v = w.viewer
    press(w, key.SPACE)
    v.session.seek(0)
    v.session.step_physics(60)
    v.session.seek(30)
    v.session.set("integrator", "rk4")
    branch = v.session.timeline.previous
    assert (branch.start, branch.head) == (30, 60)
    frames(w, 1)
    click(w, "Compare")
    click(w, "Show previous branch")
    label = "branch from step 30"
    ghost = v.ghosts.comparison.simulation(label)
    assert ghost.step_count == 30 and ghost.state_hash() == branch.hashes[30]
    for step in (31, 45, 60):
        v.session.step_physics(step - v.session.sim.step_count)
        assert ghost.step_count == step and ghost.state_hash() == branch.hashes[step]
    assert v.ghosts.readouts[label]["max_rotation_error"] > 0.0   # rk4 and lie-midpoint part ways
    click(w, "Compare")          # closed again: the Plots section is in view
    click(w, "Plots")
    press(w, key.SPACE)
    frames(w, 30)
    axis = v.panel.axes["energy"]
    assert axis["offset"] != 0.0 and len(set(axis["labels"])) == len(axis["labels"]) >= 3
    _, energy = v.session.history.channel("energy")
    shown = energy - axis["offset"]
    assert axis["lo"] < shown.min() and shown.max() < axis["hi"]


@pytest.mark.display
def test_crash_ab_draws_two_trails(window, tmp_path):
    """The car: "compare counteraction" puts the run 0.25 s before the car meets the wall and runs
    counteraction on and off as two ghosts. Through the impact the loose cargo's world velocities
    part by about the car's 10 m/s (on: it flies on; off: it stops with the car); each ghost's
    trail is on screen in its colour along the cargo's path."""
    from app.png import write_png
    w = window(SCENES / "car.toml")
    v = w.viewer
    frames(w, 2)
    click(w, "Compare")
    click(w, "compare counteraction")
    g = v.ghosts
    assert list(g.ghosts) == list(ghost_module.AB_LABELS) and g.ab is not None
    start = v.session.sim.step_count
    assert 40 < start < 100        # measured: the impact at step 79, the A/B from step 64
    frames(w, 60)
    _, dv = g.history.series(ghost_module.AB_LABELS[0], len(ghost_module.CHANNELS))
    assert dv[0] < 0.1 and np.nanmax(dv) > 5.0
    assert g.plotted["ab"][0] > 30
    image = v.read_rgb()
    write_png(tmp_path / "crash_ab.png", image)
    # Before the impact the two trails are one path (the car's; the later-drawn one shows there);
    # after it the cargo with counteraction on slides on to the front panel, ahead of the cargo
    # without it: each trail's last points show in its own colour.
    vp, (width, height) = v.view.view_projection(), v.size
    for label in ghost_module.AB_LABELS:
        trail = g.trails.points(label)
        assert len(trail) > 10
        clip = np.c_[trail[-1], np.ones(len(trail[-1]))] @ vp.T
        pixel = ((clip[:, :2] / clip[:, 3:] + 1) / 2 * [width, -height] + [0, height]).astype(int)
        target = np.round(np.array(g.ghosts[label].color) * 255)
        found = sum(bool(np.any(np.all(np.abs(image[y - 2:y + 3, x - 2:x + 3].astype(int) - target) <= 40, axis=-1)))
                    for x, y in pixel)
        assert found >= 2, f"{label}: its colour at {found} of the cargo's {len(pixel)} last trail points"


def test_a_readouts_peak_is_the_largest_held_not_the_last():
    """The Compare section says each divergence now and its peak: the largest sample held (those
    plotted), whatever came after it, NaN where the run has none (exact: a maximum of the values)."""
    readouts = ghost_module.Readouts(capacity=8, window=1.0)
    column = ghost_module.CHANNELS.index("max_position_error")
    for time, dx in ((0.0, 0.5), (0.2, 2.76), (0.4, 2.72)):
        row = dict.fromkeys(ghost_module.CHANNELS, 0.0) | {"max_position_error": dx}
        readouts.sample(time, {"ghost": row}, dv=10.0 - 10 * time)
    assert readouts.peak("ghost", column) == 2.76
    assert readouts.series("ghost", column)[1][-1] == 2.72
    assert readouts.peak("ghost", len(ghost_module.CHANNELS)) == 10.0    # the A/B's |dv|
    assert np.isnan(readouts.peak("absent", column))


def test_a_ghost_leaves_out_the_nodes_posed_as_a_run_drawn_before():
    """The crash A/B's two ghosts share the car and differ by their cargo; drawn translucent on top
    of each other, the coincident car was striped in both colours. A node within SAME_POSE (5 mm) of
    a run drawn before is left out; one moved by more is drawn (exact comparisons of the given poses)."""
    rng = np.random.default_rng(3)
    t, R = rng.normal(size=(4, 3)), np.stack([np.eye(3)] * 4)
    moved_t, turned_R = t.copy(), R.copy()
    moved_t[1] += [0.0, 1e-2, 0.0]
    turned_R[2] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    same = ghost_module._posed_as(moved_t, turned_R, [(t, R)])
    assert same.tolist() == [True, False, False, True]
    assert not ghost_module._posed_as(t, R, []).any()
