"""Bodies that start inside one another: reported at load, pushed apart without gaining energy,
refused when there are too many; the runaway check keeps its reference; a body that flies out of
the world is said to have left it, not to have diverged."""
import math
import warnings

import numpy as np
import pytest

from physics import Simulation
from physics.scene import SceneError, scene_from_dict
from physics.settings import SettingError, Settings
from physics.simulation import DivergenceError, OutOfBoundsError, OverlapError, OverlapWarning, RunawayError

GROUND = {"name": "ground", "shape": {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}}


def coincident(count, ground=True):
    """`count` 0.2 m boxes of 1 kg at the same place, 0.5 m above the ground: every pair overlaps
    0.2 m deep."""
    return scene_from_dict({"node": ([GROUND] if ground else []) + [
        {"name": f"box{i}", "motion": "dynamic", "translation": [0.0, 0.5, 0.0],
         "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}} for i in range(count)]})


def total(sim):
    energy = sim.energy()
    return energy["kinetic"] + energy["potential"]


def test_coincident_boxes_are_reported_at_load_and_separate_without_gaining_energy():
    """Ten coincident boxes (45 pairs, 0.2 m deep): the load warns once with the count and the
    deepest pair; over 60 steps their total energy never exceeds its start (nothing but gravity
    acts: contacts without restitution only take energy out; 1e-9 relative is round-off). Before
    the push limit and the fresh relax they took 49 J -> 151 J in the first step."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulation(coincident(10))
    messages = [str(w.message) for w in caught if issubclass(w.category, OverlapWarning)]
    assert len(messages) == 1, messages
    assert "45 shape pairs start inside one another" in messages[0] and "'box0'" in messages[0], messages[0]
    assert sim.initial_overlaps.count == 45 and sim.initial_overlaps.depth == pytest.approx(0.2, abs=1e-9)
    start = total(sim)
    for step in range(60):
        sim.step(1)
        assert total(sim) <= start * (1 + 1e-9), (step, total(sim), start)
    assert total(sim) < start


def test_a_clean_scene_warns_of_nothing():
    """Two boxes side by side, 1 cm apart: no overlap, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim = Simulation(scene_from_dict({"node": [
            {"name": "a", "motion": "dynamic", "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}},
            {"name": "b", "motion": "dynamic", "translation": [0.21, 0.0, 0.0],
             "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}}]}))
    assert sim.initial_overlaps.count == 0


def test_too_many_overlapping_pairs_are_refused_at_load():
    """142 coincident boxes: 10,011 overlapping pairs, past OVERLAP_BUDGET (10,000): refused as the
    scene loads, naming the count and the deepest pair, instead of a first step of minutes (630
    such boxes took 31 s a step and gained 34 MJ)."""
    from physics.solver import OVERLAP_BUDGET
    with pytest.raises(OverlapError, match="10,011 shape pairs start inside one another") as caught:
        Simulation(coincident(142, ground=False))
    assert caught.value.count == 142 * 141 // 2 > OVERLAP_BUDGET
    assert "'box0'" in str(caught.value)


def test_the_push_speed_is_a_validated_setting():
    """max_contact_push_speed: 3 m/s by default (Box2D v3's), any number in (0, 1e6]; zero,
    negatives, NaN, infinity, past 1e6 and non-numbers are refused naming key and value, in a
    scene's [world] table as in Settings.set."""
    settings = Settings()
    assert settings.max_contact_push_speed == 3.0
    settings.set("max_contact_push_speed", 0.5)
    assert settings.max_contact_push_speed == 0.5
    for bad in (0.0, -1.0, math.nan, math.inf, 2e6, "fast", True):
        with pytest.raises(SettingError, match="max_contact_push_speed"):
            Settings().set("max_contact_push_speed", bad)
    with pytest.raises(SceneError, match="max_contact_push_speed"):
        scene_from_dict({"world": {"max_contact_push_speed": -3.0}, "node": [{"name": "a"}]})


def test_the_push_speed_bounds_how_fast_overlapping_bodies_separate():
    """Two coincident boxes in zero gravity, the limit at 0.5 m/s: each step's position correction
    moves a body at most 0.5 m/s × h (plus round-off), so after 6 steps (0.1 s) they are at most
    2 × 0.5 × 0.1 = 0.1 m apart; with 3 m/s they part faster. Velocities stay near zero: the push
    moves positions, it adds no motion (the relax stage)."""
    def separation(speed):
        scene = scene_from_dict({"world": {"gravity": [0.0, 0.0, 0.0], "max_contact_push_speed": speed}, "node": [
            {"name": f"box{i}", "motion": "dynamic", "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}}
            for i in range(2)]})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OverlapWarning)
            sim = Simulation(scene)
        sim.step(6)
        translation = sim.world().transform.translation
        return float(np.linalg.norm(translation[1] - translation[0])), float(np.abs(sim.world().velocity).max())
    slow, slow_speed = separation(0.5)
    fast, _ = separation(3.0)
    assert 0.0 < slow <= 0.1 + 1e-9 and fast > slow, (slow, fast)
    assert slow_speed < 0.5


def test_the_runaway_reference_survives_the_hand_off_and_the_car_gains_no_energy():
    """The car at dt 0.5 s with rk4, sor 1e-10 and shake (each in range): its cargo was thrown past
    the reach (1 km) and handed to the world, which once re-took the runaway reference in the middle
    of the blow-up (a 50.8 MJ allowance) and let it run to 1.4 MJ with no error. Now a carried body
    keeps its world velocity through its parent's pose corrections, so nothing is thrown: over 60
    steps the energy never rises above its start (the cargo sinks: at sor 1e-10 the solver barely
    pushes), and the runaway reference stays the energy before the first step throughout (a
    RunawayError would be measured against it)."""
    sim = Simulation.from_file("assets/scenes/car.toml")
    for name, value in {"dt": 0.5, "integrator": "rk4", "sor": 1e-10, "shake": True}.items():
        sim.set(name, value)
    start = total(sim)
    with np.errstate(all="ignore"):
        for _ in range(60):
            sim.step(1)
            assert sim._runaway_reference[0] == start
            assert total(sim) <= start


def test_a_body_that_leaves_the_world_is_not_said_to_diverge():
    """A ball rolling along the ground at 23 km/s from 990 km out (dt 1 s): it passes the world's
    bounds (1e7 m) with its energy falling (friction): an OutOfBoundsError (still a
    DivergenceError for those who catch that) saying it left the world's bounds, not 'diverged'."""
    sim = Simulation(scene_from_dict({"world": {"dt": 1.0}, "node": [GROUND, {
        "name": "ball", "motion": "dynamic", "translation": [990000.0, 0.5, 0.0], "velocity": [23000.0, 0.0, 0.0],
        "shape": {"type": "sphere", "radius": 0.5}}]}))
    start = total(sim)
    with pytest.raises(OutOfBoundsError) as caught:
        sim.step(2000)
    error = caught.value
    assert isinstance(error, DivergenceError) and error.node == "ball" and error.quantity == "translation"
    assert "left the world's bounds" in str(error) and "diverged" not in str(error)
    assert 0 < error.speed <= 23000.0 and total(sim) <= start
