"""Hands on: the soft mouse joint's pull (physics.dynamics.mouse_joint, `Simulation.apply_force`) and the
flick (an impulse), as inputs of the timeline, of recordings and of a comparison's every run."""
import math
from pathlib import Path

import numpy as np
import pytest

from physics import Simulation
from physics.tools.compare import Comparison
from physics.dynamics.mouse_joint import DAMPING_RATIO, HERTZ, MAX_ACCELERATION, MouseJoint
from physics.pipeline.recording import read_recording, write_recording
from physics.io.scene import scene_from_dict
from physics.pipeline.timeline import Input, Timeline

ROOT = Path(__file__).resolve().parent.parent
CAR = ROOT / "assets" / "scenes" / "car.toml"
H = 1.0 / 60.0


def ball(gravity=(0.0, 0.0, 0.0), **world):
    """One dynamic body (2 kg) at (0, 1, 0) with nothing to touch, stepped in one sub-step of H (the
    soft step's closed forms below are of the step the force is held over)."""
    return Simulation(scene_from_dict({"world": {"gravity": list(gravity), "dt": H, "substeps": 1, **world},
                                       "node": [{"name": "ball", "motion": "dynamic", "translation": [0.0, 1.0, 0.0],
                                                 "mass": 2.0, "inertia": [0.1, 0.2, 0.3]}]}))


def pull(sim, joint, target, steps, timeline=None):
    for _ in range(steps):
        force, point = joint.force(sim, target)
        if timeline is None:
            sim.apply_force(joint.node, force, point)
            sim.step(1)
        else:
            timeline.apply("force", sim.names[joint.node], force, point)
            timeline.step(1)


def test_apply_force_is_one_steps_impulse():
    """apply_force(F) = apply_impulse(F dt): the same state bit for bit (same hash)."""
    a, b = ball(), ball()
    a.apply_force("ball", [3.0, -1.0, 0.5], [0.1, 1.2, 0.0])
    b.apply_impulse("ball", np.array([3.0, -1.0, 0.5]) * H, [0.1, 1.2, 0.0])
    assert a.state_hash() == b.state_hash()
    with pytest.raises(ValueError, match="force_world"):
        a.apply_force("ball", [1.0, math.nan, 0.0])


def test_a_far_target_pulls_at_the_largest_force():
    """Grabbed at its centre with the target 1 km away, the pull is capped at MAX_ACCELERATION m:
    with semi-implicit Euler and no gravity the ball's speed after n steps is n h a_max, its
    direction the target's (1e-9 relative: round-off over 30 steps)."""
    sim = ball(integrator="semi-implicit-euler")
    joint = MouseJoint.grab(sim, "ball", [0.0, 1.0, 0.0])
    target = np.array([1000.0, 1.0, 0.0])
    force, _ = joint.force(sim, target)
    assert np.linalg.norm(force) == pytest.approx(MAX_ACCELERATION * 2.0, rel=1e-12)
    pull(sim, joint, target, 30)
    np.testing.assert_allclose(sim.world().velocity[0], [30 * H * MAX_ACCELERATION, 0.0, 0.0], rtol=1e-9, atol=1e-9)


def test_a_held_ball_hangs_below_the_cursor_by_the_soft_steps_sag():
    """Grabbed at its centre under gravity with the target where it is, the ball settles where the
    soft step's impulse carries its weight each step: with v = 0 at each step's start,
    m g h = mass_scale m bias_rate |C| gives the sag |C| = g (1 + a2) / ω² (a2 = h ω (2ζ + h ω),
    module docstring of physics.dynamics.mouse_joint; the continuous spring's g / ω² times 1 + a2, the
    implicit step's softening). 1e-9 m after 10 s: the approach is damped (ζ = 0.7) to far below."""
    sim = ball(gravity=(0.0, -9.81, 0.0), integrator="semi-implicit-euler")
    joint = MouseJoint.grab(sim, "ball", [0.0, 1.0, 0.0])
    pull(sim, joint, [0.0, 1.0, 0.0], 600)
    omega = 2 * math.pi * HERTZ
    a2 = H * omega * (2 * DAMPING_RATIO + H * omega)
    sag = 9.81 * (1 + a2) / omega ** 2
    np.testing.assert_allclose(sim.world_poses()[0][0], [0.0, 1.0 - sag, 0.0], atol=1e-9)
    assert 0.019 < sag < 0.021


def test_an_off_centre_pull_turns_the_body_and_brings_the_point_to_the_cursor():
    """Grabbed 0.5 m off its centre and pulled sideways (no gravity), the body turns (the joint's
    effective mass K includes the inertia) and the grabbed point comes from 1 m to within 5 cm of
    the target in 5 s: the free body keeps spinning about the point (no angular damping: nothing
    else acts), and the spring must supply the centre of mass's centripetal force, so it stays
    stretched (1.6 cm measured)."""
    sim = ball(integrator="semi-implicit-euler")
    joint = MouseJoint.grab(sim, "ball", [0.5, 1.0, 0.0])
    target = np.array([0.5, 2.0, 0.0])
    pull(sim, joint, target, 300)
    assert np.linalg.norm(joint.point_world(sim) - target) < 0.05
    rotation = sim.world_poses()[1][0]
    assert np.degrees(np.arccos((np.trace(rotation) - 1) / 2)) > 10


def test_grabbing_refuses_what_cannot_be_pulled():
    sim = Simulation.from_file(CAR)
    with pytest.raises(ValueError, match="node 'wall' is fixed; only dynamic bodies can be pulled"):
        MouseJoint.grab(sim, "wall", [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="unknown node 'nope'"):
        MouseJoint.grab(sim, "nope", [0.0, 0.0, 0.0])


PULL_FROM = 100


def recorded_pull_and_flick():
    """The car scene through the Timeline API: PULL_FROM steps (the car has hit the wall and the
    cargo slid forward, out from under the cabin's roof), a 40-step pull of the rear cargo box up
    and sideways over the bed's side, a flick of the ball (an impulse along a view ray), 30 steps on."""
    sim = Simulation.from_file(CAR)
    timeline = Timeline(sim, keyframe_every=16)
    timeline.step(PULL_FROM)
    cargo = [n for n, m in zip(sim.names, sim.motion) if m == "dynamic" and n != "car"]
    joint = MouseJoint.grab(sim, cargo[0], joint_point(sim, cargo[0]))
    target = sim.world_poses()[0][joint.node] + [0.0, 1.5, 1.0]
    pull(sim, joint, target, 40, timeline)
    timeline.apply("impulse", cargo[-1], np.array([0.0, 4.0, -3.0]) * sim.mass[sim.names.index(cargo[-1])],
                   sim.world_poses()[0][sim.names.index(cargo[-1])] + [0.0, 0.1, 0.0])
    timeline.step(30)
    return timeline, joint, target


def joint_point(sim, node):
    return sim.world_poses()[0][sim.names.index(node)] + [0.05, 0.05, 0.0]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "pull.rec"
    timeline, joint, target = recorded_pull_and_flick()
    write_recording(path, timeline)
    return path, timeline, joint, target


def test_a_pull_and_a_flick_replay_bit_for_bit(recorded):
    """Written to a .rec and read back, the inputs are the same bits and re-simulating from the
    first keyframe reproduces every step's hash; a plain run applying the same inputs agrees."""
    path, timeline, joint, target = recorded
    rec = read_recording(path)
    kinds = [i.kind for i in rec.inputs]
    assert kinds.count("force") == 40 and kinds.count("impulse") == 1
    for a, b in zip(rec.inputs, timeline.inputs):
        assert (a.step, a.kind, a.args[0]) == (b.step, b.kind, b.args[0])
        assert all(np.array_equal(x, y) for x, y in zip(a.args[1:], b.args[1:]))
    assert rec.verify() == (timeline.head, None)
    sim = Simulation.from_file(CAR)
    for step in range(1, timeline.head + 1):
        sim.step(1)
        for entry in rec.inputs:
            if entry.step == step:
                entry.apply(sim)
        assert sim.state_hash() == rec.hashes[step], step


def test_the_pull_moved_the_cargo_towards_the_cursor_and_seeking_back_undoes_it(recorded):
    """After the pull the box is nearer the target than it began (1.8 m away); seeking back to
    before the pull restores the state the run had there (hash) and stepping on replays it."""
    _, timeline, joint, target = recorded
    sim = timeline.sim
    timeline.seek(PULL_FROM + 40)
    assert np.linalg.norm(joint.point_world(sim) - target) < 0.5
    timeline.seek(5)
    assert sim.state_hash() == timeline.hashes[5]
    timeline.seek(timeline.head)
    assert sim.state_hash() == timeline.hashes[timeline.head]


def test_a_flick_changes_the_velocity_by_the_impulse_over_the_mass():
    """A flick at the centre of mass: Δv = J / m exactly (the impulse input, to round-off 1e-12)."""
    sim = ball()
    timeline = Timeline(sim)
    timeline.step(3)
    before = np.array(sim.world().velocity[0])
    timeline.apply("impulse", "ball", np.array([2.0, 0.0, -1.0]), None)
    np.testing.assert_allclose(np.array(sim.world().velocity[0]) - before, [1.0, 0.0, -0.5], atol=1e-12)


def test_old_input_kinds_and_the_new_one_round_trip_as_json():
    entry = Input(7, "force", ("ball", np.array([0.1, -2.0, 1e-300]), None))
    back = Input.from_json(entry.to_json())
    assert (back.step, back.kind, back.args[0], back.args[2]) == (7, "force", "ball", None)
    assert np.array_equal(back.args[1], entry.args[1])
    with pytest.raises(ValueError, match="input kind .shove.; expected one of set, impulse, reparent, force"):
        Input.from_json({"step": 1, "kind": "shove", "args": []})


def test_ghosts_receive_the_pull():
    """A comparison's every run takes the input: a variant equal to main stays bit-identical to it
    and to a plain run given the same inputs; a variant with another integrator is pulled too."""
    comparison = Comparison(CAR)
    comparison.add_variant("same", {"integrator": "semi-implicit-euler"})
    comparison.add_variant("rk4", {"integrator": "rk4"})
    plain = Simulation.from_file(CAR)
    main = comparison.simulation("main")
    joint = MouseJoint.grab(main, "car", main.world_poses()[0][main.names.index("car")])
    target = main.world_poses()[0][joint.node] + [0.0, 2.0, 0.0]
    for _ in range(20):
        force, point = joint.force(main, target)
        comparison.apply_input("force", "car", force, point)
        plain.apply_force("car", force, point)
        comparison.advance(1)
        plain.step(1)
    assert comparison.simulation("same").state_hash() == main.state_hash() == plain.state_hash()
    for label in ("main", "rk4"):
        height = comparison.simulation(label).world_poses()[0][joint.node][1]
        assert height > 0.7 + 0.3, label      # lifted from 0.7 m towards 2.7 m
    with pytest.raises(ValueError, match="kind 'set'"):
        comparison.apply_input("set", "integrator", "rk4")


def test_an_external_main_run_takes_its_inputs_from_its_owner():
    """With `main=` (the viewer's run, stepped by its timeline) apply_input gives the push to the
    comparison's own runs only: the main run is not pushed twice."""
    main = Simulation.from_file(CAR)
    comparison = Comparison(main.scene, main=main)
    comparison.add_variant("same", {"integrator": "semi-implicit-euler"})
    before = main.state_hash()
    comparison.apply_input("impulse", "car", np.array([0.0, 1200.0, 0.0]), None)
    assert main.state_hash() == before
    main.apply_impulse("car", np.array([0.0, 1200.0, 0.0]), None)
    assert comparison.simulation("same").state_hash() == main.state_hash()
