"""Per-body queries of the Simulation (`body_energies`, `body_momenta`) against the totals and
against the textbook formulas evaluated on the world state.

The totals (`energy()`, `momentum()`) sum the same terms in another order, so the sums agree to
round-off: 1e-12 relative. The per-body values are checked once more from the world state alone
(world velocity and angular velocity, the world inertia R I Rᵀ), independent of the body-frame
spin the simulation keeps: round-off of a few products of O(1) numbers, and of the rotations'
orthonormality, which drifts by round-off with every sub-step (R I Rᵀ R ω_body and R I ω_body
differ by it; 120 sub-steps here: 2.2e-12 measured), so 1e-11 relative.
"""
from pathlib import Path

import numpy as np
import pytest

from physics.io.scene import load_scene, scene_from_dict
from physics.pipeline.simulation import Simulation

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"
TOL = 1e-11


def spinning_bodies():
    """Three dynamic bodies, one inside a turning kinematic parent, one fixed node: all moving."""
    body = {"motion": "dynamic", "mass": 2.0, "inertia": [1.0, 2.0, 3.0]}
    return Simulation(scene_from_dict({"world": {"gravity": [0.0, -9.81, 0.0]}, "node": [
        {"name": "table", "motion": "kinematic", "angular_velocity": [0.0, 1.5, 0.0], "translation": [0.5, 0.0, 0.0]},
        dict(body, name="a", translation=[0.3, 1.0, -0.2], rotation=[0.9, 0.1, 0.3, 0.3], velocity=[1.0, 2.0, 0.5],
             angular_velocity=[0.4, 2.0, -0.3]),
        dict(body, name="b", parent="table", translation=[1.0, 0.2, 0.0], velocity=[0.0, 0.0, 0.7],
             angular_velocity=[3.0, 0.0, 1.0], mass=0.5),
        {"name": "mark", "parent": "a", "translation": [0.0, 0.5, 0.0]},
        dict(body, name="c", translation=[-2.0, 3.0, 1.0], velocity=[-0.5, 0.0, 0.0], angular_velocity=[0.0, 0.0, 5.0],
             inertia=[0.2, 0.3, 0.4]),
    ]}))


def close(a, b, scale):
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL * max(1.0, scale))


@pytest.mark.parametrize("make", [spinning_bodies, lambda: Simulation(load_scene(SCENES / "car.toml"))],
                         ids=["spinning", "car"])
def test_per_body_values_sum_to_the_totals_and_match_the_world_state(make):
    sim = make()
    sim.step(40)
    energies, momenta = sim.body_energies(), sim.body_momenta()
    n = len(sim.names)
    dynamic = np.array([m == "dynamic" for m in sim.motion])
    assert dynamic.sum() >= 3
    for name, values in energies.items():
        assert values.shape == (n,) and np.all(values[~dynamic] == 0.0)
        total = sim.energy()[name]
        close(values.sum(), total, abs(total) + np.abs(values).sum())
    for name in ("linear", "angular"):
        values, total = momenta[name], sim.momentum()[name]
        assert values.shape == (n, 3) and np.all(values[~dynamic] == 0.0)
        close(values.sum(axis=0), total, np.abs(values).sum())
    assert np.all(momenta["spin"][~dynamic] == 0.0)

    world = sim.world()
    x, v, omega, R = world.transform.translation, world.velocity, world.omega_vector(), world.transform.rotation
    mass, inertia = np.asarray(sim.mass), np.asarray(sim.inertia_body)
    gravity = np.asarray(sim.settings.gravity)
    for i in np.flatnonzero(dynamic):
        inertia_world = R[i] @ np.diag(inertia[i]) @ R[i].T
        spin = inertia_world @ omega[i]
        kinetic = 0.5 * mass[i] * v[i] @ v[i] + 0.5 * omega[i] @ spin
        close(energies["kinetic"][i], kinetic, kinetic)
        close(energies["potential"][i], -mass[i] * gravity @ x[i], mass[i] * np.abs(gravity @ x[i]))
        close(momenta["linear"][i], mass[i] * v[i], mass[i] * np.abs(v[i]).max())
        close(momenta["spin"][i], spin, np.abs(spin).max())
        close(momenta["angular"][i], np.cross(x[i], mass[i] * v[i]) + spin, np.abs(x[i]).max() * mass[i] * np.abs(v[i]).max())
