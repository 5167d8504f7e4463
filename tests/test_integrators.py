"""physics.dynamics.integrators: convergence orders against an independent high-accuracy solution, exact
momentum balance of lie-midpoint, a body in a moving frame against the same body in the world,
the local accelerations against the forward (local-to-global) formulas of "The Dynamics of a
Transform Hierarchy"."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from physics.dynamics.integrators import (INTEGRATORS, Frame, inertial_accelerations, local_accelerations,
                                 omega_body_from_local, omega_local_from_body, step_bodies)
from physics.dynamics.kinematics import step_kinematic

INERTIA = np.array([0.8, 1.5, 2.2])
TORQUE = np.array([0.3, -0.2, 0.5])      # world frame, constant
FORCE = np.array([0.0, -9.81, 1.0])
OMEGA0 = np.array([1.0, 2.0, -0.5])


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def reference(duration):
    """(R3, omega_body) at `duration` by DOP853 on the 12-dimensional Newton-Euler ODE (independent)."""
    def rhs(t, y):
        r, w = y[:9].reshape(3, 3), y[9:]
        dw = (r.T @ TORQUE - np.cross(w, INERTIA * w)) / INERTIA
        return np.concatenate([(r @ hat(w)).ravel(), dw])
    sol = solve_ivp(rhs, (0, duration), np.concatenate([np.eye(3).ravel(), OMEGA0]), method="DOP853",
                    rtol=1e-13, atol=1e-14)
    return sol.y[:9, -1].reshape(3, 3), sol.y[9:, -1]


def simulate(integrator, steps, duration, gyroscopic="explicit"):
    x, v, r = np.zeros((1, 3)), np.array([[1.0, 2.0, 0.0]]), np.eye(3)[None].copy()
    w = OMEGA0[None].copy()
    for _ in range(steps):
        step_bodies(x, r, v, w, np.ones(1), INERTIA[None], FORCE[None], TORQUE[None], duration / steps,
                    integrator, gyroscopic)
    return x[0], r[0], v[0], w[0]


ORDERS = {"explicit-euler": 1, "semi-implicit-euler": 1, "implicit-euler": 1, "implicit-midpoint": 2,
          "rk4": 4, "lie-midpoint": 2, "lie-midpoint-4": 4}


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_observed_order_with_torque_and_gyroscopic_term(integrator):
    duration = 1.0
    r_ref, w_ref = reference(duration)
    steps = (40, 80) if ORDERS[integrator] == 4 else (200, 400)
    errors = []
    for n in steps:
        _, r, _, w = simulate(integrator, n, duration)
        errors.append(np.linalg.norm(r - r_ref) + np.linalg.norm(w - w_ref))
    observed = np.log2(errors[0] / errors[1])
    # observed order within 0.3 of the theoretical one in the asymptotic range chosen above
    assert abs(observed - ORDERS[integrator]) < 0.3, (errors, observed)


@pytest.mark.parametrize("integrator", ["implicit-midpoint", "rk4", "lie-midpoint", "lie-midpoint-4"])
def test_translation_is_exact_for_constant_force_in_the_world(integrator):
    x, _, v, _ = simulate(integrator, 7, 0.7)
    # midpoint and RK4 rules integrate a constant acceleration exactly: round-off only
    np.testing.assert_allclose(x, np.array([1.0, 2.0, 0.0]) * 0.7 + 0.5 * FORCE * 0.49, atol=1e-12)
    np.testing.assert_allclose(v, np.array([1.0, 2.0, 0.0]) + FORCE * 0.7, atol=1e-12)


@pytest.mark.parametrize("integrator", ["lie-midpoint", "lie-midpoint-4"])
def test_world_angular_momentum_changes_by_exactly_t_tau(integrator):
    _, r, _, w = simulate(integrator, 100, 2.0)
    # kicks with the world torque and a Cayley drift that keeps R L: exact up to round-off
    np.testing.assert_allclose(r @ (INERTIA * w), INERTIA * OMEGA0 + 2.0 * TORQUE, atol=1e-12)


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_gyroscopic_off_keeps_omega_constant_without_torque(integrator):
    x, v, r, w = np.zeros((1, 3)), np.zeros((1, 3)), np.eye(3)[None].copy(), OMEGA0[None].copy()
    for _ in range(50):
        step_bodies(x, r, v, w, np.ones(1), INERTIA[None], FORCE[None], np.zeros((1, 3)), 0.02, integrator, "off")
    np.testing.assert_allclose(w[0], OMEGA0, atol=1e-13)  # round-off only
    # constant omega_body: R = exp(t hat(omega)) exactly (Cayley/exp of a constant vector compose)
    if integrator not in ("lie-midpoint", "lie-midpoint-4"):  # Cayley: a different angle per step
        np.testing.assert_allclose(r[0], solve_ivp(lambda t, y: (y.reshape(3, 3) @ hat(OMEGA0)).ravel(), (0, 1.0),
                                                   np.eye(3).ravel(), rtol=1e-12, atol=1e-13).y[:, -1].reshape(3, 3),
                                   atol=1e-6 if integrator == "rk4" else 1e-10)


def test_batch_equals_one_by_one():
    rng = np.random.default_rng(3)
    n = 5
    state = [rng.normal(size=(n, 3)), np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), rng.normal(size=(n, 3)),
             rng.normal(size=(n, 3))]
    params = [rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, (n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3))]
    frame = Frame(np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), rng.uniform(0.5, 2, n), rng.normal(size=(n, 3)),
                  rng.normal(size=(n, 3)), rng.normal(size=(n, 3)))
    for name in INTEGRATORS:
        batch = [a.copy() for a in state]
        step_bodies(*batch, *params, 0.01, name, "implicit", frame)
        for i in range(n):
            single = [a[i:i + 1].copy() for a in state]
            f = Frame(*(getattr(frame, k)[i:i + 1] for k in ("rotation", "scale", "acceleration", "angular_velocity",
                                                              "angular_acceleration")))
            step_bodies(*single, *(p[i:i + 1] for p in params), 0.01, name, "implicit", f)
            for a, b in zip(batch, single):
                np.testing.assert_array_equal(a[i], b[0])  # the same arithmetic: bit-identical


def test_body_in_a_moving_frame_matches_the_same_body_in_the_world():
    """A parent with a2, non-parallel omega2 and alpha2 and scale 2: the child's world state equals
    that of the same free body integrated in the world (rk4, small steps; both errors ~1e-9)."""
    dt, steps = 1 / 400, 400
    p_t, p_r, p_v = np.zeros((1, 3)), np.eye(3)[None].copy(), np.array([[0.1, 0.0, 0.2]])
    p_w, p_a, p_alpha, scale = np.array([[0.3, 1.0, -0.2]]), np.array([[0.5, -0.3, 0.2]]), \
        np.array([[0.2, -0.1, 0.4]]), 2.0
    mass, inertia = np.ones(1), INERTIA[None]
    force, torque = FORCE[None], TORQUE[None]
    # world body
    wx, wr, wv, ww = np.array([[0.5, 1.0, -0.4]]), np.eye(3)[None].copy(), np.array([[0.2, -0.1, 0.3]]), OMEGA0[None].copy()
    # the same body as the parent's child (R2 = 1, T2 = 0 at t = 0): T1 = x / S2, v3 = v2 + J2 v1 + w2 x J2 T1
    lx = wx / scale
    lv = (wv - p_v - np.cross(p_w, wx)) / scale
    lr, lw = wr.copy(), ww.copy()       # omega_body is relative to the world: the same number
    for _ in range(steps):
        frame = Frame(p_r.copy(), np.full(1, scale), p_a, p_w.copy(), p_alpha)
        step_bodies(lx, lr, lv, lw, mass, inertia, force, torque, dt, "rk4", "explicit", frame)
        step_bodies(wx, wr, wv, ww, mass, inertia, force, torque, dt, "rk4", "explicit")
        step_kinematic(p_t, p_r, p_v, p_w, p_a, p_alpha, dt)
    # the frame extrapolation (Magnus Omega1+Omega2) and RK4 are 4th order: ~1e-10 here; 1e-8 margin
    np.testing.assert_allclose(p_t[0] + scale * p_r[0] @ lx[0], wx[0], atol=1e-8)
    np.testing.assert_allclose(p_r[0] @ lr[0], wr[0], atol=1e-8)
    np.testing.assert_allclose(lw, ww, atol=1e-8)


vectors = st.lists(st.floats(-2, 2), min_size=3, max_size=3).map(np.array)


def random_rotation(seed):
    from scipy.spatial.transform import Rotation
    return Rotation.random(random_state=seed).as_matrix()


@settings(max_examples=50, deadline=None)
@given(vectors, vectors, vectors, vectors, vectors, vectors, vectors, st.floats(0.5, 2), st.integers(0, 10 ** 6))
def test_local_accelerations_satisfy_the_forward_composition(t1, v1, w_body, a2, w2, alpha2, force, s2, seed):
    """The forward formulas of "The Dynamics of a Transform Hierarchy":
    a3 = a2 + J2 a1 + (alpha2 + w2²) J2 T1 + 2 w2 J2 v1 must equal F/m, and
    alpha3 = alpha2 + R2 alpha1 + w2 x w3 must equal R3 d(omega_body)/dt (forward formulas, independent)."""
    r1, r2 = random_rotation(seed)[None], random_rotation(seed + 1)[None]
    frame = Frame(r2, np.array([s2]), a2[None], w2[None], alpha2[None])
    mass, inertia, torque = np.array([1.5]), INERTIA[None], TORQUE[None]
    a1, alpha1 = local_accelerations(t1[None], r1, v1[None], w_body[None], mass, inertia, force[None], torque,
                                     "explicit", frame)
    j2 = s2 * r2[0]
    a3 = a2 + j2 @ a1[0] + np.cross(alpha2, j2 @ t1) + np.cross(w2, np.cross(w2, j2 @ t1)) + 2 * np.cross(w2, j2 @ v1)
    np.testing.assert_allclose(a3, force / 1.5, atol=1e-11)  # round-off of O(10) magnitudes
    r3 = r2[0] @ r1[0]
    w3 = r3 @ w_body
    dw = (r3.T @ TORQUE - np.cross(w_body, INERTIA * w_body)) / INERTIA
    np.testing.assert_allclose(alpha2 + r2[0] @ alpha1[0] + np.cross(w2, w3), r3 @ dw, atol=1e-11)
    terms = inertial_accelerations(t1[None], v1[None], frame)
    np.testing.assert_allclose(sum(terms.values())[0] + force / 1.5, j2 @ a1[0], atol=1e-11)
    # the conversions of angular velocity are inverse to each other and give w3 = w2 + R2 w1
    w_local = omega_local_from_body(r1, w_body[None], frame)
    np.testing.assert_allclose(w2 + r2[0] @ w_local[0], w3, atol=1e-12)
    np.testing.assert_allclose(omega_body_from_local(r1, w_local, frame)[0], w_body, atol=1e-12)


def test_bad_input_is_named():
    z, r = np.zeros((1, 3)), np.eye(3)[None].copy()
    args = (z.copy(), r, z.copy(), z.copy(), np.ones(1), np.ones((1, 3)), z, z, 0.01)
    with pytest.raises(ValueError, match="integrator"):
        step_bodies(*args, integrator="verlet")
    with pytest.raises(ValueError, match="gyroscopic"):
        step_bodies(*args, gyroscopic="on")
    with pytest.raises(ValueError, match="mass"):
        step_bodies(z.copy(), r, z.copy(), z.copy(), np.zeros(1), np.ones((1, 3)), z, z, 0.01)
    with pytest.raises(ValueError, match="velocity"):
        step_bodies(z.copy(), r, np.zeros((2, 3)), z.copy(), np.ones(1), np.ones((1, 3)), z, z, 0.01)
    with pytest.raises(ValueError, match="frame.rotation"):
        step_bodies(*args, frame=Frame(np.eye(3), np.ones(1), z, z, z))


@pytest.mark.parametrize("integrator", ["lie-midpoint", "lie-midpoint-4"])
def test_large_steps_keep_the_free_rotor_invariants(integrator):
    """h |omega| from 0.01 to 4 in one batch: the fast bodies leave the vectorized predictor + two
    Newton steps for physics.model.rigid_body's damped Newton; energy, |L| and world L stay those of the
    exact solve (quadratic invariants of the midpoint rule, and the Cayley drift keeps R L)."""
    rng = np.random.default_rng(7)
    n, dt = 40, 0.2
    omega = rng.normal(size=(n, 3)) * np.logspace(-1.3, 1.3, n)[:, None]
    inertia = rng.uniform(0.3, 3.0, (n, 3))
    x, r, v = np.zeros((n, 3)), np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), np.zeros((n, 3))
    w = omega.copy()
    zeros = np.zeros((n, 3))
    energy0 = np.sum(inertia * w * w, axis=1)
    momentum0 = inertia * w
    for _ in range(50):
        step_bodies(x, r, v, w, np.ones(n), inertia, zeros, zeros, dt, integrator, "explicit")
    momentum = np.einsum("bij,bj->bi", r, inertia * w)
    # the solve stops at ~1e-18 relative per step: 50 steps of round-off stay below 1e-13
    np.testing.assert_allclose(np.sum(inertia * w * w, axis=1), energy0, rtol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(inertia * w, axis=1), np.linalg.norm(momentum0, axis=1), rtol=1e-13)
    np.testing.assert_allclose(momentum, momentum0, rtol=0, atol=1e-13 * np.abs(momentum0).max())


@pytest.mark.parametrize("integrator", ["lie-midpoint", "lie-midpoint-4"])
def test_batches_across_blocks_equal_one_by_one(integrator):
    """lie-midpoint works on blocks of 256 bodies: 600 bodies (two full blocks and a part), with
    torques on some, in a moving frame, give bit-identical results to one body at a time."""
    rng = np.random.default_rng(11)
    n = 600
    state = [rng.normal(size=(n, 3)), np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), rng.normal(size=(n, 3)),
             rng.normal(size=(n, 3)) * 3.0]
    torque = rng.normal(size=(n, 3)) * (rng.uniform(size=(n, 1)) < 0.3)
    params = [rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, (n, 3)), rng.normal(size=(n, 3)), torque]
    frame = Frame(np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), rng.uniform(0.5, 2, n), rng.normal(size=(n, 3)),
                  rng.normal(size=(n, 3)), rng.normal(size=(n, 3)))
    batch = [a.copy() for a in state]
    step_bodies(*batch, *params, 1 / 60, integrator, "explicit", frame)
    for i in range(0, n, 7):
        single = [a[i:i + 1].copy() for a in state]
        f = Frame(*(getattr(frame, k)[i:i + 1] for k in ("rotation", "scale", "acceleration", "angular_velocity",
                                                          "angular_acceleration")))
        step_bodies(*single, *(p[i:i + 1] for p in params), 1 / 60, integrator, "explicit", f)
        for a, b in zip(batch, single):
            np.testing.assert_array_equal(a[i], b[0])  # the same arithmetic per lane: bit-identical


def test_world_parent_reduces_the_conversions():
    """frame=None: no inertial terms, a1 = F/m, omega_local = R1 omega_body, alpha1 = R1 d(omega_body)/dt."""
    rng = np.random.default_rng(5)
    n = 4
    t1, v1, w = rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    r1 = np.stack([random_rotation(k) for k in range(n)])
    mass, inertia, force, torque = rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, (n, 3)), rng.normal(size=(n, 3)), \
        rng.normal(size=(n, 3))
    terms = inertial_accelerations(t1, v1)
    assert set(terms) == {"frame", "euler", "centrifugal", "coriolis"}
    assert all(np.all(t == 0.0) for t in terms.values())
    a1, alpha1 = local_accelerations(t1, r1, v1, w, mass, inertia, force, torque, "explicit")
    dw = (np.einsum("bji,bj->bi", r1, torque) - np.cross(w, inertia * w)) / inertia
    # round-off of O(1) products
    np.testing.assert_allclose(a1, force / mass[:, None], rtol=1e-14)
    np.testing.assert_allclose(alpha1, np.einsum("bij,bj->bi", r1, dw), atol=1e-12)
    np.testing.assert_allclose(omega_local_from_body(r1, w), np.einsum("bij,bj->bi", r1, w), atol=1e-14)
    np.testing.assert_allclose(omega_body_from_local(r1, omega_local_from_body(r1, w)), w, atol=1e-14)
