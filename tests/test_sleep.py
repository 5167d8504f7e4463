"""Sleeping (settings.sleep, physics.dynamics.sleeping.SLEEP_TIME): bodies at rest on their parent, with all
they may touch, ride it rigidly — exactly, with no integration, no narrow phase against their own
assembly and no solver rows — until an impulse, a setting, an awake body, a moving shape of another
assembly or a change of the field they rest in wakes them."""
import numpy as np
import pytest

from physics.io.scene import scene_from_dict
from physics.core.settings import Settings
from physics.pipeline.simulation import Simulation
from physics.dynamics.sleeping import SLEEP_TIME

BOX = {"type": "box", "size": [0.4, 0.4, 0.4]}


def scene(nodes, **world):
    return Simulation(scene_from_dict({"world": {"sleep": True, **world}, "node": nodes}))


def ground():
    return {"name": "ground", "shape": {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}}


def box(name, y, parent=None, x=0.0, **extra):
    node = {"name": name, "motion": "dynamic", "mass": 1.0, "translation": [x, y, 0.0], "shape": dict(BOX), **extra}
    if parent is not None:
        node["parent"] = parent
        node["shape"]["collide_with_parent"] = True
    return node


def asleep(sim, name):
    return bool(sim.sleeping()[sim.names.index(name)])


def local_state(sim, name):
    i, local = sim.names.index(name), sim.local()
    return local.transform.translation[i].copy(), local.transform.rotation[i].copy(), local.velocity[i].copy()


def test_sleep_is_off_by_default():
    assert Settings().sleep is False
    sim = Simulation(scene_from_dict({"node": [ground(), box("box", 0.2)]}))
    sim.step(120)
    assert not sim.sleeping().any()


def test_a_box_at_rest_falls_asleep_and_then_holds_exactly():
    """Dropped 1 cm, it settles within a few steps, sleeps SLEEP_TIME later (well before 1.5 s), and
    from then on its state does not change by a bit: it is not integrated (no gravity creep) and
    takes no solver row."""
    sim = scene([ground(), box("box", 0.21)])
    sim.step(90)
    assert asleep(sim, "box")
    before = local_state(sim, "box")
    sim.step(120)
    after = local_state(sim, "box")
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert np.all(before[2] == 0.0)
    assert len(sim.contacts()[0]) == 0   # no narrow phase for a sleeping body on its own assembly


def test_an_impulse_wakes_a_sleeping_body_and_moves_it():
    sim = scene([ground(), box("box", 0.2)])
    sim.step(90)
    assert asleep(sim, "box")
    sim.apply_impulse("box", [2.0, 0.0, 0.0])
    assert not asleep(sim, "box")
    x0 = local_state(sim, "box")[0][0]
    sim.step(10)
    assert local_state(sim, "box")[0][0] - x0 > 0.1      # 2 m/s less friction, 1/6 s: ~0.25 m


def test_a_setting_wakes_every_body():
    sim = scene([ground(), box("a", 0.2), box("b", 0.2, x=2.0)])
    sim.step(90)
    assert sim.sleeping().sum() == 2
    sim.set("integrator", "lie-midpoint")
    assert not sim.sleeping().any()


def test_a_falling_box_wakes_the_one_it_lands_on_and_they_stack():
    """The lower box sleeps; the upper one, dropped from 1 m, wakes it when its box comes within
    reach (its island wakes whole), and the two end stacked: the lower one did not sink into the
    ground while asleep or on waking, and the upper one rests on it (within the 0.5 mm slop and
    the settling, 3 mm)."""
    sim = scene([ground(), box("low", 0.2)])
    sim.step(90)
    assert asleep(sim, "low")
    sim = scene([ground(), box("low", 0.2), box("high", 1.4)])
    sim.step(30)                 # low settles and starts counting; high is still falling
    sim.step(150)
    assert not asleep(sim, "high") or asleep(sim, "low")
    y_low, y_high = local_state(sim, "low")[0][1], local_state(sim, "high")[0][1]
    assert abs(y_low - 0.2) < 3e-3 and abs(y_high - 0.6) < 3e-3, (y_low, y_high)


def test_a_box_asleep_on_a_turning_deck_rides_it_exactly():
    """A kinematic deck turning steadily (ω = 0.5 rad/s about y): the box resting 2 m out feels a
    constant field in the deck's axes (g and the centripetal acceleration), so it sleeps; asleep,
    its local state is held bit for bit and its world pose is the deck's times it."""
    sim = scene([{"name": "deck", "motion": "kinematic", "angular_velocity": [0.0, 0.5, 0.0],
                  "shape": {"type": "box", "size": [8.0, 0.2, 8.0]}, "friction": 1.0},
                 box("box", 0.3, parent="deck", x=2.0, friction=1.0)])
    sim.step(120)
    assert asleep(sim, "box")
    held = local_state(sim, "box")
    sim.step(200)
    for a, b in zip(held, local_state(sim, "box")):
        np.testing.assert_array_equal(a, b)
    world, i, deck = sim.world(), sim.names.index("box"), sim.names.index("deck")
    expected = world.transform.translation[deck] + world.transform.rotation[deck] @ held[0]
    np.testing.assert_allclose(world.transform.translation[i], expected, atol=1e-12)


def test_reported_accelerations_of_a_sleeping_body():
    """Asleep on the turning deck the box reports a1 = 0 locally, the deck's centripetal
    acceleration −ω² r in the world, and a constraint share that completes the global-to-local conversion:
    J2⁻¹ (g + constraint + inertial terms) = a1 = 0 (to round-off)."""
    omega, r = 0.5, 2.0
    sim = scene([{"name": "deck", "motion": "kinematic", "angular_velocity": [0.0, omega, 0.0],
                  "shape": {"type": "box", "size": [8.0, 0.2, 8.0]}, "friction": 1.0},
                 box("box", 0.3, parent="deck", x=r, friction=1.0)])
    sim.step(120)
    assert asleep(sim, "box")
    i = sim.names.index("box")
    np.testing.assert_allclose(sim.local().acceleration[i], 0.0, atol=1e-12)
    world = sim.world()
    x = world.transform.translation[i]
    np.testing.assert_allclose(world.acceleration[i], -omega ** 2 * np.array([x[0], 0.0, x[2]]), atol=1e-9)
    linear, _ = sim.constraint_accelerations()
    inertial = sim.inertial_accelerations()
    total = sim.settings.gravity + linear[i] + sum(inertial[name][i] for name in inertial)
    np.testing.assert_allclose(total, 0.0, atol=1e-9)


def test_a_changing_field_keeps_a_body_awake():
    """The deck's spin grows (α = 0.2 rad/s²): the box's field in the deck's axes changes every
    step, so it does not sleep (or wakes at once), and friction keeps doing the work."""
    sim = scene([{"name": "deck", "motion": "kinematic", "angular_velocity": [0.0, 0.1, 0.0],
                  "angular_acceleration": [0.0, 0.2, 0.0], "shape": {"type": "box", "size": [8.0, 0.2, 8.0]},
                  "friction": 1.0},
                 box("box", 0.3, parent="deck", x=1.0, friction=1.0)])
    for _ in range(10):
        sim.step(12)
        assert not asleep(sim, "box")


def test_a_kinematic_paddle_wakes_a_sleeping_box_and_pushes_it():
    """A paddle of another assembly sweeping toward a sleeping box (a static shape that may move
    against it) wakes it when they touch, and pushes it: it does not pass through."""
    sim = scene([ground(), box("box", 0.2),
                 {"name": "paddle", "motion": "kinematic", "translation": [-1.5, 0.3, 0.0],
                  "velocity": [1.0, 0.0, 0.0], "shape": {"type": "box", "size": [0.2, 0.6, 1.0]}}])
    sim.step(60)
    assert asleep(sim, "box")
    sim.step(120)                   # the paddle's face reaches the box's at t ≈ 1.2 s
    paddle, b = sim.names.index("paddle"), sim.names.index("box")
    x = sim.world().transform.translation
    assert x[b][0] - x[paddle][0] >= 0.3 - 2e-3, (x[b][0], x[paddle][0])   # touching, not through
    assert x[b][0] > 0.3


def test_the_tank_cargo_sleeps_and_stays_on_the_deck():
    """The shipped tank (sleep = true): by 10 s the crates, the drum and the jerrycans sleep on the
    steadily turning hull, the ball in the turret's tray does not (its field turns with the turret),
    and the cargo has not moved on the deck since 1 s (< 1 mm). Without sleeping the contact solver
    lets it creep outward ~5 cm over the same 9 s (measured 45–55 mm), toward the rails."""
    runs = {}
    cargo = ("crate_1", "crate_2", "crate_3", "crate_4", "crate_5", "barrel_drum", "jerrycan_1", "jerrycan_2")
    for sleep in (True, False):
        sim = Simulation.from_file("assets/scenes/tank.toml")
        assert sim.settings.sleep is True
        sim.set("sleep", sleep)
        index = [sim.names.index(n) for n in cargo]
        sim.step(60)
        start = sim.local().transform.translation[index].copy()
        sim.step(540)
        runs[sleep] = (sim, np.linalg.norm(sim.local().transform.translation[index] - start, axis=1))
    on, moved = runs[True]
    assert all(asleep(on, n) for n in cargo)
    assert not asleep(on, "ball")
    assert moved.max() < 1e-3, moved
    assert runs[False][1].max() > 0.02     # the creep sleeping stops (a solver artifact)


@pytest.mark.parametrize("key", ["sleep"])
def test_sleep_is_a_setting_with_a_checked_value(key):
    sim = scene([ground(), box("box", 0.2)])
    with pytest.raises(ValueError, match="sleep"):
        sim.set(key, "maybe")
    assert SLEEP_TIME > 0


def test_a_body_carrying_a_dynamic_child_stays_awake_and_the_child_falls_freely():
    """A resting box P with a dynamic child C dropped beside it (not touching): P is C's frame,
    so it may not sleep — held, its frame acceleration would read as free fall and C would stop
    accelerating. C falls at g (to 1e-9) and lands."""
    sim = scene([ground(), box("P", 0.2), box("C", 8.0, parent="P", x=3.0)])
    sim.step(60)
    c = sim.names.index("C")
    assert not asleep(sim, "P")
    np.testing.assert_allclose(sim.world().acceleration[c], [0.0, -9.81, 0.0], atol=1e-9)
    sim.step(120)
    assert abs(sim.world().transform.translation[c][1] - 0.2) < 3e-3


def test_sleeping_bodies_in_frames_that_move_apart_do_not_pass_through_each_other():
    """Box a sleeps on a turntable, box b on the ground in its path: a pair of sleeping bodies
    resting in different assemblies is probed, so they wake when they touch and b is pushed (as
    without sleeping) instead of a sweeping through it. 12 s: held while it sleeps, a does not creep
    outward on the table as it does awake (a solver artifact), so it meets b later (b moved 0.2 m
    after 10.7 s, measured) than without sleeping (0.38 m after 5.3 s)."""
    table = {"name": "table", "motion": "kinematic", "translation": [0.0, 0.1, 0.0], "angular_velocity": [0.0, 0.3, 0.0],
             "shape": {"type": "cylinder", "radius": 1.0, "height": 0.2}, "friction": 1.0}
    a = {"name": "a", "parent": "table", "motion": "dynamic", "mass": 1.0, "translation": [0.8, 0.3, 0.0],
         "shape": {"type": "box", "size": [0.8, 0.4, 0.4], "collide_with_parent": True}, "friction": 1.0}
    b = {"name": "b", "motion": "dynamic", "mass": 1.0, "translation": [0.0, 0.2, -1.35], "shape": dict(BOX)}
    moved = {}
    for sleep in (True, False):
        sim = Simulation(scene_from_dict({"world": {"sleep": sleep}, "node": [ground(), table, a, b]}))
        start = sim.world().transform.translation[3].copy()
        sim.step(720)
        moved[sleep] = np.linalg.norm(sim.world().transform.translation[3] - start)
    assert moved[False] > 0.1
    assert moved[True] > 0.1, moved


def test_a_body_leaning_on_a_still_kinematic_shape_does_not_flap():
    """A box touching a kinematic wall (another assembly, which could move against it) does not
    sleep at all, rather than sleeping and being woken by the probe every SLEEP_TIME."""
    wall = {"name": "wall", "motion": "kinematic", "translation": [0.3, 0.5, 0.0],
            "shape": {"type": "box", "size": [0.2, 1.0, 1.0]}}
    sim = scene([ground(), wall, box("box", 0.2)])
    changes, last = 0, False
    for _ in range(720):
        sim.step(1)
        changes += asleep(sim, "box") != last
        last = asleep(sim, "box")
    assert changes == 0


def test_a_body_drifting_in_space_does_not_sleep():
    """Slow but unsupported (no gravity, touching nothing): a rotational-dynamics demo keeps its
    energy and momentum; only bodies resting on their own assembly sleep."""
    sim = Simulation(scene_from_dict({"world": {"sleep": True, "gravity": [0.0, 0.0, 0.0]}, "node": [
        ground(), {**box("box", 2.0), "velocity": [0.03, 0.0, 0.0], "angular_velocity": [0.0, 0.04, 0.0]}]}))
    energy = sim.energy()["kinetic"]
    sim.step(120)
    assert not asleep(sim, "box")
    assert abs(sim.energy()["kinetic"] - energy) < 1e-12 * max(energy, 1.0)


def test_a_sleeping_body_reports_the_same_holding_share_every_query():
    """The holding share comes from the free forces alone: queries after other queries (and an
    impulse elsewhere, which resyncs) give the same answer."""
    sim = scene([ground(), box("a", 0.2), box("b", 0.2, x=3.0)])
    sim.step(90)
    assert asleep(sim, "a")
    a = sim.names.index("a")
    first = sim.constraint_accelerations()[0][a].copy()
    sim.world()
    sim.apply_impulse("b", [0.1, 0.0, 0.0])
    sim.world()
    np.testing.assert_allclose(first, [0.0, 9.81, 0.0], atol=1e-12)
    np.testing.assert_allclose(sim.constraint_accelerations()[0][a], first, atol=1e-12)


def test_a_refused_impulse_changes_nothing():
    """An impulse refused for its input (a NaN point) neither wakes the body nor moves anything: the
    state hash is the one before it (an input the recordings do not hold must change no bit)."""
    sim = scene([ground(), box("box", 0.2)])
    sim.step(90)
    assert asleep(sim, "box")
    before = sim.state_hash()
    with pytest.raises(ValueError, match="point_world"):
        sim.apply_impulse("box", [2.0, 0.0, 0.0], [0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="force_world"):
        sim.apply_force("box", [np.inf, 0.0, 0.0])
    assert asleep(sim, "box") and sim.state_hash() == before
