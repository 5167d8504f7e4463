"""physics.model.rigid_body: inertia against numerical quadrature, Euler's equations against their
invariants, the implicit gyroscopic step against its defining equation and its dissipation."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from physics.model.rigid_body import gyroscopic_implicit, inertia_from_shape, omega_body_dot


def quadrature_inertia(inside, half_extent, mass, n=120):
    """Principal moments of a uniform solid by midpoint quadrature on an n³ grid (independent)."""
    axes = [(np.arange(n) + 0.5) / n * 2 * e - e for e in half_extent]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    mask = inside(x, y, z)
    dm = mass / mask.sum()
    return dm * np.array([np.sum((y ** 2 + z ** 2)[mask]), np.sum((x ** 2 + z ** 2)[mask]),
                          np.sum((x ** 2 + y ** 2)[mask])])


@pytest.mark.parametrize("shape, inside, half", [
    ({"type": "box", "size": [1.0, 2.0, 0.5]}, lambda x, y, z: np.ones_like(x, bool), (0.5, 1.0, 0.25)),
    ({"type": "sphere", "radius": 0.7}, lambda x, y, z: x * x + y * y + z * z <= 0.49, (0.7, 0.7, 0.7)),
    ({"type": "cylinder", "radius": 0.5, "height": 2.0},
     lambda x, y, z: (x * x + z * z <= 0.25) & (np.abs(y) <= 1.0), (0.5, 1.0, 0.5)),
    ({"type": "capsule", "radius": 0.5, "height": 1.0},
     lambda x, y, z: x * x + z * z + np.maximum(np.abs(y) - 0.5, 0.0) ** 2 <= 0.25, (0.5, 1.0, 0.5)),
])
def test_inertia_matches_quadrature(shape, inside, half):
    expected = quadrature_inertia(inside, half, 3.0)
    # a 120³ grid resolves curved boundaries to ~0.5 %; 1.5 % leaves margin, far below any formula slip
    np.testing.assert_allclose(inertia_from_shape(shape, 3.0), expected, rtol=1.5e-2)


@pytest.mark.parametrize("shape, mass", [
    ({"type": "box", "size": [1.0, 2.0]}, 1.0), ({"type": "sphere", "radius": -1.0}, 1.0),
    ({"type": "plane", "normal": [0, 1, 0], "offset": 0.0}, 1.0), ({"type": "cone"}, 1.0),
    ({"type": "sphere", "radius": 1.0}, 0.0), ({"type": "cylinder", "radius": 1.0}, 1.0), ("box", 1.0),
])
def test_inertia_bad_input_names_the_value(shape, mass):
    with pytest.raises(ValueError, match="shape|mass"):
        inertia_from_shape(shape, mass)


vectors = st.lists(st.floats(-5, 5), min_size=3, max_size=3).map(np.array)
moments = st.lists(st.floats(0.2, 5), min_size=3, max_size=3).map(np.array)


@settings(max_examples=100, deadline=None)
@given(vectors, moments, vectors)
def test_euler_equations_power_and_momentum_balance(omega, inertia, torque):
    # independent facts: dE/dt = omega · tau (the gyroscopic term does no work) and
    # d|L|²/dt = 2 L · tau (it only turns L in the body frame); 1e-9 relative for round-off
    dot = omega_body_dot(omega, inertia, torque, "explicit")
    scale = 1 + np.abs(omega).max() ** 2 * np.abs(inertia).max() * (1 + np.abs(torque).max())
    assert abs(np.dot(inertia * omega, dot) - np.dot(omega, torque)) <= 1e-9 * scale
    assert abs(np.dot(inertia * omega, inertia * dot) - np.dot(inertia * omega, torque)) <= 1e-9 * scale * 5
    np.testing.assert_allclose(omega_body_dot(omega, inertia, torque, "off"), torque / inertia)


def test_omega_body_dot_is_batched_and_checks_input():
    omega = np.random.default_rng(1).normal(size=(4, 5, 3))
    out = omega_body_dot(omega, np.array([1.0, 2.0, 3.0]), np.zeros(3))
    np.testing.assert_allclose(out[2, 3], omega_body_dot(omega[2, 3], [1.0, 2.0, 3.0], np.zeros(3)))
    with pytest.raises(ValueError, match="shape"):
        omega_body_dot(np.zeros(4), np.ones(3), np.zeros(3))
    with pytest.raises(ValueError, match="gyroscopic"):
        omega_body_dot(np.zeros(3), np.ones(3), np.zeros(3), "sometimes")


@settings(max_examples=100, deadline=None)
@given(vectors, moments, st.floats(1e-3, 0.5))
def test_implicit_gyroscopic_step_solves_its_equation_and_dissipates(omega, inertia, h):
    new = gyroscopic_implicit(omega, inertia, h)
    l_new = inertia * new
    residual = l_new + h * np.cross(new, l_new) - inertia * omega
    # Newton stops at updates below 1e-9 |x|, after which the residual is at round-off
    assert np.linalg.norm(residual) <= 1e-10 * (1 + np.linalg.norm(inertia * omega))
    # w'·I w' = w'·I w (dot the equation with w'), so by Cauchy-Schwarz in the I inner product
    # the energy cannot grow; likewise |I w'|² = I w'·I w, so |L| cannot grow
    assert new @ l_new <= omega @ (inertia * omega) * (1 + 1e-12) + 1e-300
    assert np.linalg.norm(l_new) <= np.linalg.norm(inertia * omega) * (1 + 1e-12) + 1e-300
