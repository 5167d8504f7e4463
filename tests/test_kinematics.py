"""physics.dynamics.kinematics: exact translation, exact rotation where the Magnus series terminates,
the normalized third-order exponential ("Numerical Integration for Rotational Dynamics"), the numpy
Magnus vector against the stepped kernel."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from physics.dynamics.kinematics import magnus_vector, step_kinematic

vectors = st.lists(st.floats(-2, 2), min_size=3, max_size=3).map(np.array)


def run(omega, alpha, steps, dt, update="magnus2", exponential="exact", accel=None, velocity=None):
    t, r = np.zeros((1, 3)), np.eye(3)[None].copy()
    v = np.zeros((1, 3)) if velocity is None else velocity[None].copy()
    a = np.zeros((1, 3)) if accel is None else accel[None]
    w = omega[None].copy()
    for _ in range(steps):
        step_kinematic(t, r, v, w, a, alpha[None], dt, update, exponential)
    return t[0], r[0], v[0], w[0]


@settings(max_examples=50, deadline=None)
@given(vectors, vectors, st.integers(1, 20))
def test_translation_is_exact_for_constant_acceleration(v0, a, steps):
    t, _, v, _ = run(np.zeros(3), np.zeros(3), steps, 0.1, accel=a, velocity=v0)
    time = steps * 0.1
    # exact up to round-off accumulated over <= 20 steps
    np.testing.assert_allclose(t, v0 * time + 0.5 * a * time ** 2, atol=1e-12)
    np.testing.assert_allclose(v, v0 + a * time, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(vectors, st.floats(-1, 1), st.sampled_from(["magnus1", "magnus2", "magnus3"]))
def test_rotation_is_exact_when_alpha_is_parallel_to_omega(omega, k, update):
    # alpha ∥ omega: every commutator vanishes, Omega1 is the exact angle; compare with scipy
    _, r, _, w = run(omega, k * omega, 10, 0.05, update)
    angle = omega * 0.5 + 0.5 * k * omega * 0.25
    np.testing.assert_allclose(r, Rotation.from_rotvec(angle).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(w, omega * (1 + 0.5 * k), atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(vectors, vectors, st.floats(0.01, 0.3))
def test_one_step_is_the_exponential_of_the_magnus_vector(omega, alpha, h):
    for order, update in enumerate(["magnus1", "magnus2", "magnus3"], start=1):
        _, r, _, _ = run(omega, alpha, 1, h, update)
        expected = Rotation.from_rotvec(magnus_vector(omega, alpha, h, order)).as_matrix()
        np.testing.assert_allclose(r, expected, atol=1e-13)  # both exact exponentials: round-off


@settings(max_examples=50, deadline=None)
@given(vectors, st.floats(0.01, 0.5))
def test_truncated_exponential_is_a_rotation_close_to_the_exact_one(omega, h):
    _, r, _, _ = run(omega, np.zeros(3), 1, h, "magnus1", "truncated")
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-14)  # normalized quaternion: orthogonal
    exact = Rotation.from_rotvec(omega * h).as_matrix()
    angle = np.linalg.norm(omega) * h  # <= ~1.7 rad
    # third-order truncation of exp(X/2), normalized: the angle error is O(angle^5); 1e-2 angle^5 bounds it
    assert np.linalg.norm(r - exact) <= 1e-2 * angle ** 5 + 1e-14


def test_bad_input_is_named():
    z, r = np.zeros((2, 3)), np.broadcast_to(np.eye(3), (2, 3, 3)).copy()
    with pytest.raises(ValueError, match="rotation_update"):
        step_kinematic(z, r, z.copy(), z.copy(), z, z, 0.1, "magnus4")
    with pytest.raises(ValueError, match="exponential"):
        step_kinematic(z, r, z.copy(), z.copy(), z, z, 0.1, "magnus1", "approximate")
    with pytest.raises(ValueError, match="omega_local"):
        step_kinematic(z, r, z.copy(), np.zeros((3, 3)), z, z, 0.1)
    with pytest.raises(ValueError, match="rotation"):
        step_kinematic(z, np.zeros((2, 3)), z.copy(), z.copy(), z, z, 0.1)
    with pytest.raises(ValueError, match="order"):
        magnus_vector(np.zeros(3), np.zeros(3), 0.1, 4)
