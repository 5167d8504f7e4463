"""Free bodies take the fused sub-step (`physics.pipeline.stages.free_substep`: the integrator steps the local
state in place and checks divergence in the same pass, with no gather, scatter or world pass).
It must be the general sub-step (the STAGES) to the bit, for every integrator and gyroscopic mode,
and report a divergence as the general one does: same error, node, step, quantity, value and time.

The general path is forced by clearing the workspace's free-body bundle (`Workspace.free`), the one
switch between the two; nothing else differs between the two runs."""
import itertools

import numpy as np
import pytest

from physics import Simulation
from physics.dynamics import integrators
from physics.pipeline import stages
from physics.core import threads
from physics.core.choices import GYROSCOPIC, INTEGRATOR
from physics.io.scene import scene_from_arrays, scene_from_dict
from physics.pipeline.stages import DIVERGENCE_LENGTH, DivergenceError, OutOfBoundsError

STEPS = 12


def swarm(integrator, gyroscopic, n=1000, substeps=2):
    """A fixed anchor, then n free tumbling bodies: random poses, velocities, spins (up to ~10
    rad/s about every axis), box inertias (asymmetric: the gyroscopic term matters), and applied
    forces and torques on a third of them (the torque kicks of lie-midpoint)."""
    rng = np.random.default_rng(28)
    q = rng.normal(size=(n, 4))
    pushed = rng.uniform(size=(n, 1)) < 1 / 3
    mass, size = rng.uniform(0.5, 2.0, n), rng.uniform(0.2, 2.0, (n, 3))   # boxes: I_k = m (a_i² + a_j²) / 12
    inertia = mass[:, None] / 12 * (np.sum(size ** 2, axis=1, keepdims=True) - size ** 2)
    nodes = {
        "motion": ["fixed"] + ["dynamic"] * n,
        "translation": np.vstack([np.zeros(3), rng.uniform(-50, 50, (n, 3))]),
        "rotation": np.vstack([[1.0, 0, 0, 0], q / np.linalg.norm(q, axis=1, keepdims=True)]),
        "velocity": np.vstack([np.zeros(3), rng.normal(size=(n, 3))]),
        "angular_velocity": np.vstack([np.zeros(3), rng.normal(scale=4.0, size=(n, 3))]),
        "mass": np.concatenate([[1.0], mass]),
        "inertia": np.vstack([np.ones(3), inertia]),
        "applied_force": np.vstack([np.zeros(3), pushed * rng.normal(size=(n, 3))]),
        "applied_torque": np.vstack([np.zeros(3), pushed * rng.normal(size=(n, 3))]),
    }
    return scene_from_arrays(nodes, world={"integrator": integrator, "gyroscopic": gyroscopic, "substeps": substeps})


def general(sim):
    """The same simulation on the general sub-step (module docstring)."""
    sim._work.free = None
    return sim


@pytest.mark.parametrize("integrator, gyroscopic", list(itertools.product(INTEGRATOR.names, GYROSCOPIC.names)))
def test_the_fused_free_body_step_is_the_general_one_bit_for_bit(integrator, gyroscopic, monkeypatch):
    """1,000 free tumbling bodies, 12 steps of 2 sub-steps: equal state hashes (exact: the same
    arithmetic in the same order), and the fused run never took the general sub-step."""
    scene = swarm(integrator, gyroscopic)
    fused, reference = Simulation(scene), general(Simulation(scene))
    assert fused._work.free is not None
    reference.step(STEPS)
    monkeypatch.setattr(stages, "substep", lambda *args: pytest.fail("took the general sub-step"))
    fused.step(STEPS)
    assert fused.state_hash() == reference.state_hash()
    assert fused.time == reference.time and fused.step_count == reference.step_count == STEPS


def test_a_gravity_change_reaches_the_fused_step():
    """The fused step's forces m g + F follow `set("gravity", ...)` as the general step's do."""
    scene = swarm("lie-midpoint", "explicit", n=50)
    runs = [Simulation(scene), general(Simulation(scene))]
    for sim in runs:
        sim.step(3)
        sim.set("gravity", [1.0, 2.0, -3.0])
        sim.step(3)
    assert runs[0].state_hash() == runs[1].state_hash()


def diverge(make, *, plant=None, steps=5):
    """The DivergenceError (with its time) that `make()`'s fused and general runs raise."""
    caught = []
    for fused_path in (True, False):
        sim = make()
        assert sim._work.free is not None
        if not fused_path:
            general(sim)
        if plant is not None:
            plant(sim)
        with pytest.raises(DivergenceError) as error:
            sim.step(steps)
        caught.append(error.value)
        assert sim.diverged is error.value
    fused, reference = caught
    assert type(fused) is type(reference)
    assert (fused.node, fused.step, fused.quantity, fused.time, str(fused)) == \
        (reference.node, reference.step, reference.quantity, reference.time, str(reference))
    assert fused.value == reference.value or (np.isnan(fused.value) and np.isnan(reference.value))
    return fused


def bodies(count, **overrides):
    """`count` free bodies at rest, no gravity; `overrides`: per-node arrays replacing defaults."""
    nodes = {"motion": "dynamic", "translation": np.arange(count)[:, None] * np.ones(3)}
    nodes.update(overrides)
    return lambda: Simulation(scene_from_arrays(nodes, world={"gravity": [0.0, 0.0, 0.0]}))


def test_the_first_runaway_body_is_named_in_the_step_it_runs_away():
    """Bodies 3 and 7 of 10 get a = 1e21 m/s² (the largest force on the smallest mass a scene may
    hold): both pass the speed limit in step 1; the first in node order is the one named."""
    force, mass = np.zeros((10, 3)), np.ones(10)
    force[[3, 7], 0], mass[[3, 7]] = 1e12, 1e-9
    error = diverge(bodies(10, applied_force=force, mass=mass, inertia=np.full((10, 3), 1e-9)))
    assert (error.node, error.step, error.quantity) == ("node_3", 1, "velocity")


def test_a_body_spun_past_the_limit_is_named_with_its_angular_velocity():
    """A torque of 1e12 N m on an inertia of 1e-9 kg m²: omega_body passes the speed limit in step 1."""
    torque, inertia = np.zeros((4, 3)), np.ones((4, 3))
    torque[2, 1], inertia[2] = 1e12, 1e-9
    error = diverge(bodies(4, applied_torque=torque, inertia=inertia))
    assert (error.node, error.step, error.quantity) == ("node_2", 1, "angular velocity")


def test_a_body_flying_out_of_bounds_is_reported_as_such():
    """A body moved (from outside: a scene may not start there) to 10 m inside the length limit,
    flying outwards at 1e3 m/s: it leaves within the first step, finite and with no energy gained,
    an OutOfBoundsError, named as the general step names it."""
    velocity = np.zeros((3, 3))
    velocity[1, 0] = 1e3

    def plant(sim):
        sim.hierarchy.local.translation[1, 0] = DIVERGENCE_LENGTH - 10.0
    error = diverge(bodies(3, velocity=velocity), plant=plant, steps=10)
    assert isinstance(error, OutOfBoundsError) and (error.node, error.step) == ("node_1", 1)


def test_a_planted_non_finite_value_is_caught_before_the_step():
    """A NaN written into a body's local velocity from outside: caught by the check before the first
    sub-step (step 1, time 0), as before."""
    def plant(sim):
        sim.hierarchy.local.velocity[2, 1] = np.nan
    error = diverge(bodies(5), plant=plant)
    assert (error.node, error.step, error.quantity, error.time) == ("node_2", 1, "velocity", 0.0)


def test_an_event_that_makes_a_body_run_away_is_caught_in_its_step():
    """A timed impulse of 1e12 N s on a 1 kg body at t = 0.05 s: the check after the events names it
    in the step that applied it, on the fused path as on the general one."""
    scene = {"world": {"gravity": [0.0, 0.0, 0.0]},
             "node": [{"name": f"b{i}", "motion": "dynamic", "translation": [float(i), 0.0, 0.0]} for i in range(3)],
             "event": [{"time": 0.05, "node": "b1", "impulse": [1e12, 0.0, 0.0]}]}
    error = diverge(lambda: Simulation(scene_from_dict(scene)), steps=10)
    assert (error.node, error.quantity) == ("b1", "velocity") and error.step == 3   # t = 3 dt = 0.05 s


def split(monkeypatch, cores, least=512):
    """Batches of `least` bodies or more stepped in parts on `cores` cores (`SPLIT_BODIES`)."""
    monkeypatch.setattr(integrators, "SPLIT_BODIES", least)
    monkeypatch.setattr(threads, "cores", lambda: cores)


@pytest.mark.parametrize("integrator", INTEGRATOR.names)
def test_bodies_stepped_in_parts_on_several_cores_take_the_bits_of_one_pass(integrator, monkeypatch):
    """1,000 tumbling bodies in parts of 256, 256 and 488 bodies on three threads, and in two: the
    state hash of one pass (exact: each body's arithmetic is the same, in blocks of the same bodies)."""
    scene = swarm(integrator, "explicit")
    assert integrators._parts(1000) == [(0, 1000)]
    one = Simulation(scene)
    one.step(STEPS)
    for cores, parts in ((3, [(0, 256), (256, 512), (512, 1000)]), (2, [(0, 512), (512, 1000)])):
        with monkeypatch.context() as patch:
            split(patch, cores)
            assert integrators._parts(1000) == parts
            sim = Simulation(scene)
            sim.step(STEPS)
        assert sim.state_hash() == one.state_hash()


def test_the_first_runaway_body_of_all_the_parts_is_named():
    """Bodies in the second and third of three parts run away in step 1 (as in the test above), and
    a NaN is planted in each of those parts before the step: the error names the first by index,
    of each check, as one pass does (`diverge` compares with the general sub-step's)."""
    force, mass = np.zeros((1000, 3)), np.ones(1000)
    force[[700, 300], 0], mass[[700, 300]] = 1e12, 1e-9
    make = bodies(1000, applied_force=force, mass=mass, inertia=np.full((1000, 3), 1e-9))

    def plant(sim):
        sim.hierarchy.local.velocity[[900, 400], 1] = np.nan
    with pytest.MonkeyPatch.context() as patch:
        split(patch, 3)
        assert (diverge(make).node, diverge(make).quantity) == ("node_300", "velocity")
        error = diverge(make, plant=plant)
        assert (error.node, error.step, error.quantity, error.time) == ("node_400", 1, "velocity", 0.0)
