"""Reparenting while running, the reach policy and runaway reports (physics.pipeline.simulation).

- `Simulation.reparent` keeps the world motion (keep="world") or the local state (keep="local") of
  the node it moves, is refused for a cycle without changing anything, and is part of the state:
  snapshots taken after it restore the topology, and a replay of the same reparent gives the same
  hashes bit for bit.
- REACH: a loose body rolling away from a yawing turret tens of kilometres out gains speed when it
  stays in the turret's frame; handed to the world it keeps its rolling speed.
- RUNAWAY: explicit Euler on a spinning asymmetric body gains energy without input; the run stops
  with a RunawayError naming the body, while the Lie midpoint run of the same body does not.
"""
from pathlib import Path

import numpy as np
import pytest

import physics.pipeline.simulation as simulation
from physics.model.model import Model
from physics.io.scene import scene_from_dict
from physics.pipeline.simulation import Simulation
from physics.pipeline.stages import DivergenceError, RunawayError

W = 0.5     # rad/s, the turret's yaw rate (the tank's)


def turret_and_ball(distance, speed=12.0):
    """A kinematic turret yawing at W about the world y axis, a ball of radius 0.2 m on the ground as
    its dynamic child at `distance` along x, rolling away at `speed` m/s in the world (local
    velocity v_world − ω × r at the start)."""
    return Simulation(scene_from_dict({"world": {"dt": 1 / 60, "integrator": "semi-implicit-euler"}, "node": [
        {"name": "ground", "shape": {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}},
        {"name": "turret", "motion": "kinematic", "angular_velocity": [0.0, W, 0.0]},
        {"name": "ball", "parent": "turret", "motion": "dynamic", "mass": 1.0, "translation": [distance, 0.2, 0.0],
         "velocity": [speed, 0.0, W * distance], "shape": {"type": "sphere", "radius": 0.2}},
        {"name": "marker", "parent": "ball", "translation": [0.0, 0.3, 0.0]}]}))


def world_motion(sim, node):
    world = sim.world()
    i = sim.names.index(node)
    return world.transform.translation[i], world.transform.rotation[i], world.velocity[i]


def test_reparent_keep_world_keeps_the_world_motion_of_the_subtree():
    sim = turret_and_ball(5.0)
    sim.step(30)
    before = {n: world_motion(sim, n) for n in ("ball", "marker")}
    local_before = sim.local().transform.translation[2].copy()
    sim.reparent("ball", None, keep="world")
    assert sim.parent[2] == -1
    # A3 = A2 A1 before, A1' = A3 after: equal up to the round-off of one composition (values O(10))
    for name, (x, r, v) in before.items():
        x2, r2, v2 = world_motion(sim, name)
        np.testing.assert_allclose(x2, x, atol=1e-12)
        np.testing.assert_allclose(r2, r, atol=1e-13)
        np.testing.assert_allclose(v2, v, atol=1e-12)
    assert not np.allclose(sim.local().transform.translation[2], local_before)   # the turret had turned


def test_reparent_keep_local_moves_the_subtree_with_the_new_parent():
    sim = turret_and_ball(5.0)
    sim.step(30)
    local = sim.local()
    x1, v1 = local.transform.translation[2].copy(), local.velocity[2].copy()
    sim.reparent("ball", None, keep="local")
    local = sim.local()
    np.testing.assert_array_equal(local.transform.translation[2], x1)
    np.testing.assert_allclose(local.velocity[2], v1, atol=1e-13)
    # under the world the local state is the world state; the spin is re-derived from it
    x, _, v = world_motion(sim, "ball")
    np.testing.assert_array_equal(x, x1)
    np.testing.assert_allclose(v, v1, atol=1e-13)


def test_reparent_refuses_a_cycle_and_changes_nothing():
    sim = turret_and_ball(5.0)
    sim.step(10)
    digest = sim.state_hash()
    with pytest.raises(ValueError, match="cycle"):
        sim.reparent("ball", "marker")
    with pytest.raises(ValueError, match="keep"):
        sim.reparent("ball", None, keep="both")
    with pytest.raises(ValueError, match="unknown node"):
        sim.reparent("ball", "nowhere")
    assert sim.state_hash() == digest


def test_a_reparent_is_state_snapshots_carry_it_and_replays_are_bit_identical():
    sim = turret_and_ball(5.0)
    sim.step(20)
    before = sim.snapshot()
    sim.reparent("ball", None)
    after = sim.snapshot()
    sim.step(40)
    ran = sim.state_hash()
    sim.restore(before)                       # back to the file's topology
    assert sim.parent[2] == 1 and sim.state_hash() == before.hash()
    sim.reparent("ball", None)
    assert sim.state_hash() == after.hash()
    sim.step(40)
    assert sim.state_hash() == ran
    fresh = turret_and_ball(5.0)              # a snapshot after the reparent, in a fresh simulation
    fresh.restore(after)
    assert fresh.parent[2] == -1
    fresh.step(40)
    assert fresh.state_hash() == ran
    sim.reset()
    assert sim.parent[2] == 1 and sim.state_hash() == turret_and_ball(5.0).state_hash()


def test_a_ball_out_of_reach_leaves_its_turret_and_keeps_rolling(monkeypatch):
    # Rolling without slipping, a ball keeps 5/7 of its sliding speed: 12 m/s -> 60/7 m/s. Tolerances
    # are relative changes of that speed over 6,000 steps (100 s): in the world frame the speed is
    # kept to 1e-8 (measured 1e-10: the contact solver's round-off), in the turret's frame 30 km out it
    # grows by more than 1e-6 (measured 4e-6 here, and faster ever after).
    rolling = 60.0 / 7.0
    sim = turret_and_ball(30_000.0)
    sim.step(1)
    assert sim.parent[2] == -1                # handed to the world at the first step
    sim.step(1200)                            # slipping ends: rolling
    start = np.linalg.norm(world_motion(sim, "ball")[2])
    assert start == pytest.approx(rolling, rel=1e-4)
    sim.step(6000)
    assert abs(np.linalg.norm(world_motion(sim, "ball")[2]) / start - 1) < 1e-8
    assert np.linalg.norm(world_motion(sim, "marker")[0] - world_motion(sim, "ball")[0]) == pytest.approx(0.3)

    monkeypatch.setattr(simulation, "REACH", np.inf)
    kept = turret_and_ball(30_000.0)
    kept.step(1201)
    assert kept.parent[2] == 1
    start = np.linalg.norm(world_motion(kept, "ball")[2])
    kept.step(6000)
    assert np.linalg.norm(world_motion(kept, "ball")[2]) / start - 1 > 1e-6


def test_a_ball_within_reach_stays_with_its_turret():
    sim = turret_and_ball(simulation.REACH - 100.0)
    sim.step(60 * 5)                          # 60/7 m/s for 5 s: 43 m, still within reach
    assert sim.parent[2] == 1
    sim.step(60 * 10)                         # 86 m more: out of reach, handed over
    assert sim.parent[2] == -1


def spinner(integrator, gyroscopic):
    """An asymmetric body spinning near its intermediate axis in zero gravity: no driver, no input."""
    return Simulation(scene_from_dict({"world": {"dt": 1 / 60, "integrator": integrator, "gyroscopic": gyroscopic,
                                                 "gravity": [0.0, 0.0, 0.0]}, "node": [
        {"name": "handle", "motion": "dynamic", "mass": 1.0, "inertia": [1.0, 2.0, 3.0],
         "angular_velocity": [0.1, 10.0, 0.1]}]}))


def test_energy_gained_without_input_is_reported_as_a_runaway():
    sim = spinner("explicit-euler", "explicit")
    with pytest.raises(RunawayError, match="'handle'") as caught:
        sim.step(60 * 60)
    error = caught.value
    assert isinstance(error, DivergenceError) and error.quantity == "energy"
    # the allowance is the starting kinetic energy ½ ωᵀ I ω = 100.02 J plus ½ m (1 m/s)² = 0.5 J
    assert error.value > 100.52
    assert error.step < 60 * 60
    with pytest.raises(RunawayError):          # the run stays stopped
        sim.step(1)
    steady = spinner("lie-midpoint", "implicit")   # the same body, energy kept: no report
    steady.step(60 * 60)


def test_an_input_resets_the_runaway_reference():
    sim = spinner("lie-midpoint", "implicit")
    sim.step(120)
    # a spin-up by an impulse through an arm is an input, not a runaway: an angular impulse of
    # 40 N m s on a body of inertia (1, 2, 3) kg m² gains far more than the allowance of 100.5 J
    sim.apply_impulse("handle", [0.0, 0.0, -40.0], point_world=[1.0, 0.0, 0.0])
    kinetic = sim.energy()["kinetic"]
    assert kinetic > 500.0
    sim.step(600)
    assert sim.diverged is None
    assert sim.energy()["kinetic"] == pytest.approx(kinetic, rel=1e-9)   # the Lie midpoint keeps it


def test_a_reparent_on_the_timeline_replays_and_records_bit_for_bit(tmp_path):
    from physics.pipeline.recording import read_recording, write_recording
    from physics.pipeline.timeline import Timeline
    scene = tmp_path / "turret.toml"           # a recording carries its scene file's text
    scene.write_text(f"""
[world]
dt = {1 / 60!r}
integrator = "semi-implicit-euler"
[[node]]
name = "ground"
shape = {{ type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }}
[[node]]
name = "turret"
motion = "kinematic"
angular_velocity = [0.0, {W}, 0.0]
[[node]]
name = "ball"
parent = "turret"
motion = "dynamic"
mass = 1.0
translation = [5.0, 0.2, 0.0]
velocity = [12.0, 0.0, {W * 5.0}]
shape = {{ type = "sphere", radius = 0.2 }}
""")
    timeline = Timeline(Simulation.from_file(scene), keyframe_every=16)
    timeline.step(30)
    timeline.apply("reparent", 2, None)                  # by index: recorded by name, keep "world"
    assert timeline.inputs[-1].args == ("ball", None, "world")
    timeline.step(20)
    timeline.apply("reparent", "ball", "turret", "local")
    timeline.step(30)
    hashes = dict(timeline.hashes)
    timeline.seek(10)                                    # before both: the file's topology
    assert timeline.sim.parent[2] == 1 and timeline.sim.state_hash() == hashes[10]
    timeline.step(70)                                    # replays both reparents
    assert timeline.hashes == hashes and timeline.sim.state_hash() == hashes[80]
    timeline.seek(40)                                    # a keyframe after the first one
    assert timeline.sim.parent[2] == -1 and timeline.sim.state_hash() == hashes[40]
    path = tmp_path / "reparent.rec"
    write_recording(path, timeline)
    recording = read_recording(path)
    assert [i.kind for i in recording.inputs] == ["reparent", "reparent"]
    assert recording.verify() == (80, None)


def test_ghosts_receive_a_reparent():
    """A comparison's runs all take a reparent: a variant equal to main stays bit-identical to it and
    to a plain run given the same reparent at the same step; a variant with rk4 is reparented too."""
    from physics.tools.compare import Comparison
    car = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "car.toml"
    comparison = Comparison(car)
    comparison.add_variant("same", {"integrator": "semi-implicit-euler"})
    comparison.add_variant("rk4", {"integrator": "rk4"})
    plain = Simulation.from_file(car)
    comparison.advance(30)
    plain.step(30)
    comparison.apply_input("reparent", "ball", None, "world")
    plain.reparent("ball", None, keep="world")
    comparison.advance(30)
    plain.step(30)
    main = comparison.simulation("main")
    assert comparison.simulation("same").state_hash() == main.state_hash() == plain.state_hash()
    assert comparison.simulation("rk4").parent[main.names.index("ball")] == -1


def test_a_reparent_replaces_the_constant_model_by_the_new_topology():
    """The model is constant: a reparent builds the next one (the old one keeps the old topology),
    and it equals the model a fresh simulation derives from the same parent array; back under the
    turret, the topology is the file's again."""
    sim = turret_and_ball(5.0)
    first = sim.model
    sim.reparent("ball", None, keep="world")
    assert first.parent[2] == 1 and first.dyn_parent.tolist() == [1] and first.loose.tolist() == [2]
    assert sim.model is not first and sim.parent[2] == -1
    assert sim.model.dyn_parent.tolist() == [-1] and sim.model.loose.size == 0
    fresh = Model(sim.scene, sim.parent, sim.hierarchy.order)
    for name in ("dyn_parent", "nearest_dynamic_ancestor", "depth", "solver_bodies", "nearest_dynamic_slot",
                 "generation_order", "sleepable", "loose"):
        assert np.array_equal(getattr(sim.model, name), getattr(fresh, name)), name
    assert sim.model.mass is first.mass     # the bodies' parameters are shared, not copied
    sim.reparent("ball", "turret", keep="world")
    assert np.array_equal(sim.model.depth, first.depth) and np.array_equal(sim.model.loose, first.loose)


def test_a_plane_is_never_reparented_under_a_moving_body():
    """sim.reparent("ground", "car") (the reproducer: the car carried the ground plane and fell to
    y = −122 m) is refused in one line naming the plane and the moving parent, and changes nothing;
    the ground may still move under a static node."""
    sim = Simulation.from_file(Path(__file__).parents[1] / "assets" / "scenes" / "car.toml")
    before = sim.state_hash()
    with pytest.raises(ValueError, match="'ground' carries a plane .* new parent 'car' moves"):
        sim.reparent("ground", "car")
    assert sim.state_hash() == before
    sim.reparent("ground", "wall")       # a fixed node of the world: static still
    sim.step(5)


@pytest.mark.parametrize("scene", ["chain", "pile", "stack"])
def test_the_runaway_check_s_energy_is_the_bodies_kinetic_and_potential_energy(scene):
    """`stages.runaway_energy` (a bound call of `body_energy`, body by body, where no joint term or
    moving frame adds to the total) against `Simulation.energy`'s numpy sums after 30 steps of a
    chain, the 1,000-box pile and the stack: the same total to round-off (1e-12 of the energies'
    magnitude: two orders of summation of some thousand terms)."""
    from physics.pipeline import stages
    sim = Simulation.from_file(Path(__file__).resolve().parent.parent / "assets" / "scenes" / f"{scene}.toml")
    sim.step(30)
    energy = sim.energy()
    assert not sim._work.solver.joints_termed and sim.data.frame_work is None
    total = stages.runaway_energy(sim.model, sim.data, sim.settings, sim._work)
    scale = abs(energy["kinetic"]) + abs(energy["potential"])
    assert total == pytest.approx(energy["kinetic"] + energy["potential"], abs=1e-12 * scale)
    assert sim._work.runaway.energy_call is not None     # (the bound call, kept for the next check)
