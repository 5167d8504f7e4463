"""`Simulation.restore` refuses, before changing anything, a snapshot no run of its scene can be in
(a crafted file's checksum is easily recomputed): a cycle in the topology (it used to hang), parents
out of range, non-finite or ill-shaped arrays, rotations that are not rotations, a negative step
count, fields and settings this version does not know. Each refusal names the field, and the
simulation's state hash is the same before and after it."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from physics.pipeline.simulation import Simulation

CAR = Path(__file__).resolve().parents[1] / "assets" / "scenes" / "car.toml"


@pytest.fixture(scope="module")
def taken():
    """The car after 30 steps with its cargo box_1 reparented to the world (a topology other than
    the file's), and that snapshot."""
    sim = Simulation.from_file(CAR)
    sim.step(20)
    sim.reparent("box_1", None)
    sim.step(10)
    return sim.snapshot()


def crafted(snapshot, arrays=None, **fields):
    new = {k: v.copy() for k, v in snapshot.arrays.items()}
    for key, value in (arrays or {}).items():
        if value is None:
            del new[key]
        else:
            new[key] = value
    return dataclasses.replace(snapshot, arrays=new, **fields)


def parents(snapshot, change):
    parent = snapshot.arrays["topology.parent"].copy()
    change(parent)
    return parent


def moved(snapshot, node):
    velocity = snapshot.arrays["local.velocity"].copy()
    velocity[node] = (0.0, 1e308, 0.0)
    return velocity


def far(snapshot, node):
    translation = snapshot.arrays["local.translation"].copy()
    translation[node] = (1e308, 0.0, 0.0)
    return translation


def scaled(snapshot, scales):
    scale = snapshot.arrays["local.scale"].copy()
    for node, value in scales.items():
        scale[node] = value
    return scale


def cases(snapshot):
    names = list(Simulation.from_file(CAR).names)
    car, box = names.index("car"), names.index("box_1")
    rotation = snapshot.arrays["local.rotation"].copy()
    rotation[box] = 0.0
    mirrored = snapshot.arrays["local.rotation"].copy()
    mirrored[box] = mirrored[box] @ np.diag([1.0, 1.0, -1.0])     # orthonormal, determinant −1
    return {
        "self parent": (crafted(snapshot, {"topology.parent": parents(snapshot, lambda p: p.__setitem__(car, car))}),
                        "topology.parent.*cycle"),
        "two-cycle": (crafted(snapshot, {"topology.parent": parents(
            snapshot, lambda p: (p.__setitem__(car, box), p.__setitem__(box, car)))}), "topology.parent.*cycle"),
        "parent out of range": (crafted(snapshot, {"topology.parent": parents(snapshot, lambda p: p.__setitem__(box, 10**6))}),
                                "topology.parent.*node indices"),
        "NaN time": (crafted(snapshot, {"time": np.array(np.nan)}), "'time'"),
        # a scale past SCALE_RANGE (1e308 made the contact margin infinite); scales each in range whose
        # product from the root is not (the car's cargo under a car scaled 1e-4 by 1e-4); a scale in
        # range that takes a shape past LENGTH_MAX (the car's 4 m body at 1e6)
        "fixed node moving": (crafted(snapshot, {"local.velocity": moved(snapshot, names.index("ground"))}),
                              "local.velocity.*fixed node 'ground'"),
        "fixed node far": (crafted(snapshot, {"local.translation": far(snapshot, names.index("wall"))}),
                           "local.translation.*fixed node 'wall'"),
        "scale 1e308": (crafted(snapshot, {"local.scale": scaled(snapshot, {car: 1e308})}), "local.scale.*e\\+308.*scales in"),
        "world scale": (crafted(snapshot, {"local.scale": scaled(snapshot, {car: 1e-4, names.index("box_2"): 1e-4})}),
                        "local.scale.*world scale of 1e-08 at node 'box_2'"),
        "shape past its lengths": (crafted(snapshot, {"local.scale": scaled(snapshot, {car: 1e6})}),
                                   "local.scale.*shape.size.*at node 'car'.*world lengths"),
        "zero rotation": (crafted(snapshot, {"local.rotation": rotation}), "local.rotation.*not a rotation"),
        "reflection": (crafted(snapshot, {"local.rotation": mirrored}), "local.rotation.*reflection.*'box_1'"),
        "NaN velocity": (crafted(snapshot, {"local.velocity": np.full_like(snapshot.arrays["local.velocity"], np.nan)}),
                         "local.velocity.*finite"),
        "wrong shape": (crafted(snapshot, {"omega_body": np.zeros((1, 3))}), "omega_body"),
        "missing field": (crafted(snapshot, {"local.translation": None}), "local.translation.*lacks"),
        "unknown field": (crafted(snapshot, {"future.thing": np.zeros(3)}), "future.thing.*newer version"),
        "negative step": (crafted(snapshot, step_count=-5), "step_count"),
        "event past the end": (crafted(snapshot, {"next_event": np.array(99, np.int64)}), "next_event"),
        "unknown setting": (crafted(snapshot, settings={**snapshot.settings, "warp": 9}), "warp"),
        "bad setting": (crafted(snapshot, settings={**snapshot.settings, "integrator": "nope"}), "integrator"),
    }


@pytest.mark.parametrize("case", ["self parent", "two-cycle", "parent out of range", "NaN time", "zero rotation", "reflection",
                                  "fixed node moving", "fixed node far", "scale 1e308", "world scale", "shape past its lengths",
                                  "NaN velocity", "wrong shape", "missing field", "unknown field", "negative step",
                                  "event past the end", "unknown setting", "bad setting"])
def test_an_impossible_snapshot_is_refused_and_changes_nothing(taken, case):
    snapshot, message = cases(taken)[case]
    sim = Simulation.from_file(CAR)
    sim.step(7)
    before, settings = sim.state_hash(), dict(vars(sim.settings))
    with pytest.raises(ValueError, match=message):
        sim.restore(snapshot)
    assert sim.state_hash() == before
    assert {k: str(v) for k, v in vars(sim.settings).items()} == {k: str(v) for k, v in settings.items()}


def test_the_snapshot_taken_restores_bit_for_bit(taken):
    """The untouched snapshot (a topology other than the file's) restores and continues as it would."""
    sim = Simulation.from_file(CAR)
    sim.restore(taken)
    assert sim.state_hash() == taken.hash()


def test_a_jointed_snapshot_without_its_solver_state_is_refused():
    """A scene with joints has a solver in every topology, and its joints from the first step on
    (built at that step's poses): a snapshot without them, in the run's topology or another, is
    refused, since joints rebuilt later would take their anchors at the poses of the moment."""
    path = CAR.with_name("chain.toml")
    sim = Simulation.from_file(path)
    sim.step(5)
    snapshot = sim.snapshot()
    for prefix, message in (("solver.joints.", "solver.joints.kind"), ("solver.", "solver.cache.impulse_keys")):
        arrays = {k: v for k, v in snapshot.arrays.items() if not k.startswith(prefix)}
        parent = arrays["topology.parent"].copy()
        for topology in (parent, np.where(np.arange(len(parent)) == 3, 2, parent)):     # link 3 under link 2
            arrays["topology.parent"] = topology
            fresh = Simulation.from_file(path)
            before = fresh.state_hash()
            with pytest.raises(ValueError, match=message):
                fresh.restore(dataclasses.replace(snapshot, arrays=dict(arrays)))
            assert fresh.state_hash() == before


@pytest.mark.parametrize("defect, field", [("the lantern asleep on its joint", "asleep"),
                                           ("a crate asleep at a held rotation of zeros", "held_rotation"),
                                           ("the throttle at 1e308", "drive.control")])
def test_a_tank_state_no_run_reaches_is_refused_and_changes_nothing(defect, field):
    """The snapshot and recording fuzz on the tank found three states a restore took and a step
    then failed on without naming anything: the lantern asleep on its joint and a crate asleep at
    a held rotation of zeros (a zero inertia, divided by in the joints' stage), and the throttle's
    control at 1e308 (the hull's speed reached the contact margin as inf). Each is refused naming
    the field, and the state hash is unchanged."""
    sim = Simulation.from_file(CAR.parent / "tank.toml")
    sim.step(3)
    snapshot = sim.snapshot()
    slots = [sim.names[i] for i in sim.model.dyn]
    asleep, held = snapshot.arrays["asleep"].copy(), snapshot.arrays["held_rotation"].copy()
    control = snapshot.arrays["drive.control"].copy()
    if field == "asleep":
        asleep[slots.index("lantern")] = True
    elif field == "held_rotation":
        asleep[slots.index("crate_3")] = True
        held[slots.index("crate_3")] = 0.0
    else:
        control[0] = 1e308
    bad = crafted(snapshot, {"asleep": asleep, "held_rotation": held, "drive.control": control})
    before = sim.state_hash()
    with pytest.raises(ValueError, match=f"restore: snapshot field '{field}'"):
        sim.restore(bad)
    assert sim.state_hash() == before
