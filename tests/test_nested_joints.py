"""A jointed body nested under another dynamic body (an imported arm's links, the URDF's tree) moves
as the same body at the root does: the hierarchy is a choice of coordinates, not of physics.

Independent means: the energy of a passive double pendulum (no loss: kept to the integrator's own
error) and the same scene with every dynamic body a root (same world poses at load).
"""
import dataclasses
from pathlib import Path

import numpy as np

import physics
from physics.math import rotation
from physics.io.scene import load_scene

SCENE = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "double_pendulum.toml"


def nested_and_flat():
    """The double pendulum as shipped (both links roots) and with the lower link a child of the upper."""
    flat = load_scene(SCENE)
    up, low = flat.names.index("upper"), flat.names.index("lower")
    parent, translation, turn = flat.parent.copy(), flat.translation.copy(), flat.rotation.copy()
    q_up = flat.rotation[up]
    parent[low] = up
    translation[low] = rotation.rotate(rotation.conjugate(q_up), flat.translation[low] - flat.translation[up])
    turn[low] = rotation.multiply(rotation.conjugate(q_up), flat.rotation[low])
    return dataclasses.replace(flat, parent=parent, translation=translation, rotation=turn), flat, low


def swing(scene, node, steps):
    sim = physics.Simulation(scene)
    sim.set("integrator", "lie-midpoint")
    sim.set("dt", 1 / 1000)
    sim.set("substeps", 1)
    start, drift = sum(sim.energy().values()), 0.0
    for _ in range(steps):
        sim.step(1)
        drift = max(drift, abs(sum(sim.energy().values()) - start))
    return sim.world_poses()[0][node], drift


def test_nested_link_under_rattle_keeps_the_energy_of_the_root_one():
    """lie-midpoint, dt = 1/1000, 0.5 s: the nested pendulum's lower bob is within 1e-6 m of the
    flat one's (measured 5e-8 m over 1 s: the two differ in rounding and in the order of the
    projections only), and its energy drift is within 2x of the flat one's (measured equal to 3
    digits; a carried body whose local velocity rode its parent's RATTLE position corrections lost
    57x more, 3.2e-2 J of 29 J over 1 s, halving with dt: a first-order leak)."""
    nested, flat, low = nested_and_flat()
    x_nested, drift_nested = swing(nested, low, 500)
    x_flat, drift_flat = swing(flat, low, 500)
    assert np.linalg.norm(x_nested - x_flat) < 1e-6
    assert drift_nested < 2.0 * drift_flat + 1e-12


def test_nested_double_pendulum_moves_as_the_flat_one():
    """The double pendulum with its lower link nested under the upper one (a child node, as an
    imported robot's links are) against the shipped one (both roots), lie-midpoint-4 at dt = 1/400
    for 1 s: the world poses agree to 1e-9 m (measured 1e-11: round-off). Counteraction makes a
    carried body's world motion its own, so the representation must not change the motion; with
    the first-order form of a parent's position corrections the nested one was 2e-5 m off, and
    third order (the flat one is fourth: 6.4e-6, 4.0e-7, 2.5e-8 m from its dt = 1/6400 run at
    1/200, 1/400, 1/800)."""
    from physics.io.scene import scene_from_text
    from physics.pipeline.simulation import Simulation
    path = Path(__file__).resolve().parents[1] / "assets" / "scenes" / "double_pendulum.toml"
    text = path.read_text()
    nested = text.replace('name = "lower"\nmotion = "dynamic"\ntranslation = [1.5, 3.866025403784, 0.0]',
                          'name = "lower"\nparent = "upper"\nmotion = "dynamic"\ntranslation = [0.5, 0.866025403784, 0.0]')
    assert nested != text
    runs = []
    for scene_text in (text, nested):
        sim = Simulation(scene_from_text(scene_text))
        for name, value in (("dt", 1 / 400), ("substeps", 1), ("integrator", "lie-midpoint-4")):
            sim.set(name, value)
        nodes = [sim.names.index("upper"), sim.names.index("lower")]
        poses = []
        for _ in range(400):
            sim.step(1)
            world = sim.world().transform
            poses.append(np.concatenate([world.translation[nodes].ravel(), world.rotation[nodes].ravel()]))
        runs.append(np.array(poses))
    assert np.abs(runs[0] - runs[1]).max() < 1e-9
