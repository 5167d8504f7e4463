"""Tests for physics.math.rotation: the project's conventions pinned one by one, then every map checked
against an independent means (scipy's Rotation, np.cross, np.linalg.solve, finite differences,
dual numbers, group laws, round trips on random and near-singular inputs).

Tolerances: a float64 rotation entry carries about 1e-16 absolute rounding; the conversions here
chain a few dozen flops, so round trips are held to 1e-12 (a few ulps times a modest condition
number, with a wide margin) unless a test says otherwise.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial.transform import Rotation

from physics.math import rotation as rot

TOL = 1e-12  # round trips: see the module docstring
HYP = settings(max_examples=100, deadline=None)

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
vec3 = hnp.arrays(np.float64, 3, elements=finite)
quat = hnp.arrays(np.float64, 4, elements=finite).filter(lambda q: np.linalg.norm(q) > 1e-3)
unit_quat = quat.map(lambda q: q / np.linalg.norm(q))
seeds = st.integers(0, 2**32 - 1)

I, J, K = np.eye(4)[1], np.eye(4)[2], np.eye(4)[3]
ONE = np.eye(4)[0]


def same_rotation(p, q):
    """Distance between unit quaternions up to sign (q and -q are one rotation)."""
    return np.minimum(np.abs(p - q).max(axis=-1), np.abs(p + q).max(axis=-1))


def scipy_quaternion(q):
    return q[..., [1, 2, 3, 0]]  # scipy stores (x, y, z, w)


# ------------------------------------------------------------------ conventions


def test_hamilton_product_ij_equals_k():
    # Exact: products of basis quaternions involve only 0 and ±1.
    assert np.array_equal(rot.multiply(I, J), K)
    assert np.array_equal(rot.multiply(J, K), I)
    assert np.array_equal(rot.multiply(K, I), J)
    assert np.array_equal(rot.multiply(J, I), -K)
    for e in (I, J, K):
        assert np.array_equal(rot.multiply(e, e), -ONE)


def test_quarter_turn_about_z_quaternion_is_scalar_first_and_maps_x_to_y():
    q = rot.quaternion_from_axis_angle([0, 0, 1], np.pi / 2)
    # 1 ulp of cos(π/4): sin and cos of the rounded π/4 agree with the exact value to 1e-16.
    np.testing.assert_allclose(q, [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-16)
    # Active rotation of column vectors: x turns into y (1 ulp of tolerance again).
    np.testing.assert_allclose(rot.rotate(q, [1, 0, 0]), [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(rot.matrix_from_quaternion(q) @ [1, 0, 0], [0, 1, 0], atol=1e-15)


def test_right_handed_axes():
    # x × y = z through hat, and a positive quarter turn about x takes y to z (right-hand rule).
    ex, ey, ez = np.eye(3)
    assert np.array_equal(rot.hat(ex) @ ey, ez)
    np.testing.assert_allclose(rot.matrix_from_rotvec([np.pi / 2, 0, 0]) @ ey, ez, atol=1e-15)
    np.testing.assert_allclose(rot.elementary_matrix(2, np.pi / 2) @ ex, ey, atol=1e-15)


@HYP
@given(unit_quat, vec3)
def test_matrix_of_quaternion_is_the_sandwich_product(q, v):
    sandwich = rot.multiply(rot.multiply(q, np.r_[0.0, v]), rot.conjugate(q))
    # Values up to |v| = 17: 1e-12 relative to |v| is many ulps of slack.
    scale = 1 + np.linalg.norm(v)
    assert abs(sandwich[0]) <= 1e-13 * scale
    np.testing.assert_allclose(rot.matrix_from_quaternion(q) @ v, sandwich[1:], atol=1e-13 * scale)
    np.testing.assert_allclose(rot.rotate(q, v), sandwich[1:], atol=1e-13 * scale)


@HYP
@given(unit_quat, unit_quat)
def test_product_order_q_applied_first(p, q):
    # R(p ⊗ q) = R(p) R(q): q acts first on column vectors.
    np.testing.assert_allclose(rot.matrix_from_quaternion(rot.multiply(p, q)),
                               rot.matrix_from_quaternion(p) @ rot.matrix_from_quaternion(q),
                               atol=1e-14)


@HYP
@given(vec3, vec3)
def test_hat_is_the_cross_product(w, x):
    np.testing.assert_allclose(rot.hat(w) @ x, np.cross(w, x), rtol=0, atol=1e-13)
    assert np.array_equal(rot.vee(rot.hat(w)), w)  # exact: vee averages w and -(-w)


def test_hat_2d():
    s = np.array([0.5, -2.0])
    np.testing.assert_array_equal(rot.hat(s, n=2), [[[0, -0.5], [0.5, 0]], [[0, 2.0], [-2.0, 0]]])
    np.testing.assert_array_equal(rot.vee(rot.hat(s, n=2)), s)
    # The 2D hat is the 90° turn times s: it maps x to s y (counterclockwise, right-handed).
    np.testing.assert_array_equal(rot.hat(3.0, n=2) @ [1, 0], [0, 3.0])


@HYP
@given(vec3, unit_quat, st.floats(-1, 1))
def test_omega_is_in_the_parent_frame(w, q0, t):
    """dR/dt = hat(ω) R for R(t) = exp(t hat(ω)) R0, and dq/dt = ½ (0, ω) ⊗ q."""
    R0 = rot.matrix_from_quaternion(q0)
    h = 1e-5
    R = lambda t: rot.exp_so3(t * w) @ R0
    dR_fd = (R(t + h) - R(t - h)) / (2 * h)
    # Central difference: error h²/6 |w|³ ≤ 1e-10 · 17³/6 ≈ 1e-7; rounding 1e-16/h = 1e-11.
    np.testing.assert_allclose(dR_fd, rot.hat(w) @ R(t), atol=2e-7)

    q = lambda t: rot.multiply(rot.quaternion_exp(t * w / 2), q0)
    dq_fd = (q(t + h) - q(t - h)) / (2 * h)
    qt = q(t)
    np.testing.assert_allclose(dq_fd, 0.5 * rot.multiply(np.r_[0.0, w], qt), atol=2e-7)
    np.testing.assert_allclose(dq_fd, 0.5 * rot.quaternion_derivative_matrix(qt) @ w, atol=2e-7)
    # Body-frame form: dq/dt = ½ q ⊗ (0, ω_body) with ω_body = Rᵀ ω.
    w_body = rot.matrix_from_quaternion(qt).T @ w
    np.testing.assert_allclose(dq_fd, 0.5 * rot.quaternion_derivative_matrix(qt, body=True) @ w_body,
                               atol=2e-7)


# ------------------------------------------------------------------ skew matrices in any dimension


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_skew_from_vector_basis(n):
    m = n * (n - 1) // 2
    basis = rot.skew_from_vector(np.eye(m), n)  # batch of m generators
    assert basis.shape == (m, n, n)
    assert np.array_equal(basis, -np.swapaxes(basis, -1, -2))
    # The generators span so(n): m linearly independent n×n matrices.
    assert np.linalg.matrix_rank(basis.reshape(m, n * n)) == m
    v = np.random.default_rng(n).standard_normal((7, m))
    assert np.array_equal(rot.vector_from_skew(rot.skew_from_vector(v, n)), v)


def test_skew_agrees_with_hat():
    w = np.random.default_rng(0).standard_normal((5, 3))
    assert np.array_equal(rot.skew_from_vector(w, 3), rot.hat(w))
    assert np.array_equal(rot.skew_from_vector(w[:, :1], 2), rot.hat(w[:, 0], n=2))


def test_vee_of_any_matrix_is_its_skew_part():
    A = np.random.default_rng(1).standard_normal((4, 3, 3))
    np.testing.assert_allclose(rot.hat(rot.vee(A)), (A - np.swapaxes(A, -1, -2)) / 2, atol=1e-15)


# ------------------------------------------------------------------ quaternion algebra


@HYP
@given(quat, quat, quat)
def test_quaternion_group_laws(p, q, r):
    scale = np.linalg.norm(p) * np.linalg.norm(q) * np.linalg.norm(r)
    # Products of three quaternions of norm ≤ 20: 1e-13 relative to the norm product.
    np.testing.assert_allclose(rot.multiply(rot.multiply(p, q), r), rot.multiply(p, rot.multiply(q, r)),
                               atol=1e-13 * scale)
    np.testing.assert_allclose(rot.multiply(q, rot.inverse(q)), ONE, atol=1e-14)
    np.testing.assert_allclose(rot.multiply(rot.inverse(q), q), ONE, atol=1e-14)
    np.testing.assert_allclose(rot.conjugate(rot.multiply(p, q)),
                               rot.multiply(rot.conjugate(q), rot.conjugate(p)), atol=1e-13 * scale)
    np.testing.assert_allclose(np.linalg.norm(rot.multiply(p, q)), np.linalg.norm(p) * np.linalg.norm(q),
                               rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(rot.normalize(q)), 1, rtol=1e-15)
    # Any nonzero quaternion gives the rotation of its normalization.
    np.testing.assert_allclose(rot.matrix_from_quaternion(q), rot.matrix_from_quaternion(rot.normalize(q)),
                               atol=1e-14)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
def test_batch_shapes_and_broadcasting(batch):
    rng = np.random.default_rng(2)
    q = rot.random_quaternion(rng, batch)
    v = rng.standard_normal(batch + (3,))
    assert q.shape == batch + (4,)
    R = rot.matrix_from_quaternion(q)
    assert R.shape == batch + (3, 3)
    np.testing.assert_allclose(rot.rotate(q, v), (R @ v[..., None])[..., 0], atol=1e-14)
    assert rot.quaternion_from_matrix(R).shape == batch + (4,)
    assert rot.rotvec_from_matrix(R).shape == batch + (3,)
    assert rot.euler_from_matrix(R, "zyx").shape == batch + (3,)
    assert rot.hat(v).shape == batch + (3, 3)
    # One quaternion against a batch of vectors, and a batch against one vector.
    np.testing.assert_allclose(rot.rotate(ONE, v), v, atol=0)
    assert rot.rotate(q, np.array([1.0, 0, 0])).shape == batch + (3,)
    assert rot.multiply(q, ONE).shape == batch + (4,)


# ------------------------------------------------------------------ quaternion ↔ matrix


def test_matrix_conversions_agree_with_scipy():
    q = rot.random_quaternion(3, 2000)
    R = rot.matrix_from_quaternion(q)
    # Independent implementation; entries agree to a few ulps.
    np.testing.assert_allclose(R, Rotation.from_quat(scipy_quaternion(q)).as_matrix(), atol=1e-15)
    assert same_rotation(rot.quaternion_from_matrix(R), q).max() < TOL
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), np.broadcast_to(np.eye(3), R.shape), atol=1e-15)
    np.testing.assert_allclose(np.linalg.det(R), 1, atol=1e-15)


def test_quaternion_from_matrix_canonical_sign():
    q = rot.quaternion_from_matrix(rot.random_matrix(4, 1000))
    assert np.all(q[..., 0] >= 0)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1, atol=1e-15)


def test_quaternion_from_matrix_half_turns():
    # Exact half turns about the axes: the result is exact (only 0, ±1 are involved).
    for k in range(3):
        R = 2 * np.outer(np.eye(3)[k], np.eye(3)[k]) - np.eye(3)
        assert same_rotation(rot.quaternion_from_matrix(R), np.r_[0.0, np.eye(3)[k]]) == 0
    # Random axes at π and just below π: Shepperd's branch loses only a few ulps.
    axes = rot.normalize(np.c_[np.zeros(500), np.random.default_rng(5).standard_normal((500, 3))])[:, 1:]
    for angle in (np.pi, np.pi - 1e-9, np.pi - 1e-6):
        q = rot.quaternion_from_axis_angle(axes, angle)
        assert same_rotation(rot.quaternion_from_matrix(rot.matrix_from_quaternion(q)), q).max() < TOL


# ------------------------------------------------------------------ axis-angle and rotation vectors

SINGULAR_ANGLES = [0.0, 1e-8, 1e-3, 0.1, 1.0, np.pi / 2, np.pi - 1e-3, np.pi - 1e-9, np.pi]


@pytest.mark.parametrize("angle", SINGULAR_ANGLES)
def test_axis_angle_round_trip_near_singular_angles(angle):
    axes = np.random.default_rng(6).standard_normal((500, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    R = rot.matrix_from_axis_angle(axes, angle)
    # Independent Rodrigues: scipy's rotation vector.
    np.testing.assert_allclose(R, Rotation.from_rotvec(angle * axes).as_matrix(), atol=1e-15)
    axis_back, angle_back = rot.axis_angle_from_matrix(R)
    np.testing.assert_allclose(angle_back, angle, atol=TOL)
    if angle > 0:
        # At π the axis is defined up to sign; elsewhere exactly.
        sign = np.sign(np.sum(axis_back * axes, axis=-1))[:, None] if angle == np.pi else 1
        # Near angle 0 the axis of a rounded matrix is determined to ~1e-16/angle.
        np.testing.assert_allclose(sign * axis_back, axes, atol=TOL + 1e-15 / angle)
    else:
        np.testing.assert_array_equal(axis_back, np.broadcast_to([1.0, 0, 0], axes.shape))
    q = rot.quaternion_from_axis_angle(axes, angle)
    assert same_rotation(q, rot.quaternion_from_matrix(R)).max() < TOL
    axis_q, angle_q = rot.axis_angle_from_quaternion(q)
    np.testing.assert_allclose(angle_q, angle, atol=TOL)


@pytest.mark.parametrize("angle", SINGULAR_ANGLES)
def test_rotvec_round_trip_near_singular_angles(angle):
    axes = np.random.default_rng(7).standard_normal((500, 3))
    r = angle * axes / np.linalg.norm(axes, axis=-1, keepdims=True)
    R = rot.matrix_from_rotvec(r)
    np.testing.assert_allclose(R, Rotation.from_rotvec(r).as_matrix(), atol=1e-15)
    back = rot.rotvec_from_matrix(R)
    if angle == np.pi:  # r and -r are the same half turn
        back *= np.sign(np.sum(back * r, axis=-1))[:, None]
    np.testing.assert_allclose(back, r, atol=TOL)
    q = rot.quaternion_from_rotvec(r)
    back_q = rot.rotvec_from_quaternion(q)
    if angle == np.pi:
        back_q *= np.sign(np.sum(back_q * r, axis=-1))[:, None]
    np.testing.assert_allclose(back_q, r, atol=TOL)
    assert same_rotation(q, Rotation.from_rotvec(r).as_quat()[..., [3, 0, 1, 2]]).max() < 1e-15


@HYP
@given(vec3)
def test_log_inverts_exp(r):
    angle = np.linalg.norm(r)
    R = rot.exp_so3(r)
    # exp is 2π-periodic in the angle: log returns the equivalent rotation vector with angle ≤ π.
    back = rot.log_so3(R)
    assert np.linalg.norm(back) <= np.pi + 1e-15
    np.testing.assert_allclose(rot.exp_so3(back), R, atol=TOL)
    if angle < np.pi - 1e-6:
        np.testing.assert_allclose(back, r, atol=TOL)


@HYP
@given(vec3)
def test_quaternion_exp_log(v):
    q = rot.quaternion_exp(v)
    np.testing.assert_allclose(np.linalg.norm(q), 1, atol=1e-15)
    # exp(v) is the rotation by the rotation vector 2v: checked against scipy's independent one.
    assert same_rotation(q, Rotation.from_rotvec(2 * v).as_quat()[[3, 0, 1, 2]]) < 1e-14
    back = rot.quaternion_log(q)
    assert np.linalg.norm(back) <= np.pi / 2 + 1e-15
    assert same_rotation(rot.quaternion_exp(back), q) < TOL
    if np.linalg.norm(v) < np.pi / 2 - 1e-6:
        np.testing.assert_allclose(back, v, atol=TOL)


def test_exp_series_branch_is_continuous():
    # Across the switch to the Taylor series (angle 0.1) both branches agree to rounding.
    axis = np.array([0.6, -0.8, 0.0])
    angles = 0.1 * (1 + np.array([-1e-12, 0, 1e-12]))
    R = rot.exp_so3(angles[:, None] * axis)
    np.testing.assert_allclose(R, Rotation.from_rotvec(angles[:, None] * axis).as_matrix(), atol=1e-16)
    q = rot.quaternion_exp(angles[:, None] * axis)
    np.testing.assert_allclose(q[:, 0], np.cos(angles), atol=1e-16)


def test_quaternion_exp_truncated_matches_the_series_and_exp():
    v = np.random.default_rng(8).standard_normal((200, 3))
    for h in (1.0, 0.1, 1e-3):
        q = rot.quaternion_exp_truncated(h * v)
        np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1, atol=1e-15)  # normalized by construction
    # Third order at least: the error shrinks ≥ 2⁴ = 16 times when v is halved.
    err = [np.abs(rot.quaternion_exp_truncated(h * v) - rot.quaternion_exp(h * v)).max() for h in (0.02, 0.01)]
    assert err[1] < err[0] / 16
    # The seed: "error less than 1% for rotations up to 90 degrees per time-step" (as the distance
    # between the quaternions; the rotation angle itself is off by 1.2% at exactly 90°).
    axis = v / np.linalg.norm(v, axis=-1, keepdims=True)
    half_angle = np.pi / 4 * np.linspace(0, 1, 200)[:, None]
    assert np.linalg.norm(rot.quaternion_exp_truncated(half_angle * axis)
                          - rot.quaternion_exp(half_angle * axis), axis=-1).max() < 0.01


# ------------------------------------------------------------------ Cayley map


@HYP
@given(vec3)
def test_cayley(w):
    R = rot.cayley(w)
    K = rot.hat(w)
    # The defining formula, solved independently.
    direct = np.linalg.solve(np.eye(3) - K / 2, np.eye(3) + K / 2)
    np.testing.assert_allclose(R, direct, atol=1e-13)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(R), 1, atol=1e-14)
    np.testing.assert_allclose(rot.matrix_from_quaternion(rot.quaternion_cayley(w)), R, atol=1e-14)
    # Inverse: w = 2 tan(θ/2) axis grows like 1/(π - θ); relative tolerance.
    np.testing.assert_allclose(rot.cayley_inverse(R), w, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(rot.quaternion_cayley_inverse(rot.quaternion_cayley(w)), w, rtol=1e-13, atol=1e-14)


def test_cayley_agrees_with_exp_to_second_order():
    w = np.array([0.3, -0.5, 0.4])
    err = [np.abs(rot.cayley(h * w) - rot.exp_so3(h * w)).max() for h in (0.02, 0.01)]
    # Third-order error: halving w divides it by 8 (7.9 allows the O(|w|⁵) term).
    assert err[0] / err[1] > 7.9
    # Exactly: the rotation angle of cay(w) is 2 atan(|w|/2).
    _, angle = rot.axis_angle_from_matrix(rot.cayley(5 * w))
    np.testing.assert_allclose(angle, 2 * np.arctan(5 * np.linalg.norm(w) / 2), atol=TOL)


def test_cayley_inverse_rejects_half_turns():
    with pytest.raises(ValueError, match="half turns"):
        rot.cayley_inverse(np.diag([1.0, -1, -1]))
    with pytest.raises(ValueError, match="w = 0"):
        rot.quaternion_cayley_inverse([0.0, 1, 0, 0])


# ------------------------------------------------------------------ Euler angles


def test_euler_composition_convention():
    a, b, c = 0.3, -0.7, 1.1
    Rx, Ry, Rz = (rot.elementary_matrix(k, t) for k, t in ((0, a), (1, b), (2, c)))
    np.testing.assert_allclose(rot.matrix_from_euler([a, b, c], "xyz"), Rx @ Ry @ Rz, atol=0)
    np.testing.assert_allclose(rot.matrix_from_euler([a, b, c], "xyz", extrinsic=True), Rz @ Ry @ Rx, atol=0)


@pytest.mark.parametrize("extrinsic", [False, True])
@pytest.mark.parametrize("order", rot.EULER_ORDERS)
def test_euler_round_trip_and_scipy(order, extrinsic):
    R = rot.random_matrix(9, 2000)
    angles = rot.euler_from_matrix(R, order, extrinsic)
    np.testing.assert_allclose(rot.matrix_from_euler(angles, order, extrinsic), R, atol=TOL)
    q = rot.quaternion_from_matrix(R)
    assert same_rotation(rot.quaternion_from_euler(angles, order, extrinsic), q).max() < TOL
    np.testing.assert_allclose(rot.euler_from_quaternion(q, order, extrinsic), angles, atol=0)
    # scipy: lowercase = extrinsic, uppercase = intrinsic. Random rotations are far from lock
    # with overwhelming probability; the angles themselves then agree to rounding times 1/cos b.
    seq = order if extrinsic else order.upper()
    np.testing.assert_allclose(angles, Rotation.from_matrix(R).as_euler(seq), atol=1e-10)
    np.testing.assert_allclose(rot.matrix_from_euler(angles, order, extrinsic),
                               Rotation.from_euler(seq, angles).as_matrix(), atol=1e-14)
    # Ranges.
    proper = order[0] == order[2]
    lo, hi = (0, np.pi) if proper else (-np.pi / 2, np.pi / 2)
    assert np.all((angles[:, 1] >= lo) & (angles[:, 1] <= hi))
    assert np.all(np.abs(angles) <= np.pi)


@pytest.mark.parametrize("extrinsic", [False, True])
@pytest.mark.parametrize("order", rot.EULER_ORDERS)
def test_euler_angles_recovered_away_from_lock(order, extrinsic):
    proper = order[0] == order[2]
    rng = np.random.default_rng(10)
    angles = rng.uniform(-np.pi + 1e-3, np.pi - 1e-3, (500, 3))
    if proper:
        angles[:, 1] = rng.uniform(1e-3, np.pi - 1e-3, 500)
    else:
        angles[:, 1] = rng.uniform(-np.pi / 2 + 1e-3, np.pi / 2 - 1e-3, 500)
    back = rot.euler_from_matrix(rot.matrix_from_euler(angles, order, extrinsic), order, extrinsic)
    # The first and third angle are determined to rounding / (distance to lock ≥ 1e-3): 1e-12.
    np.testing.assert_allclose(back, angles, atol=1e-12)


@pytest.mark.parametrize("extrinsic", [False, True])
@pytest.mark.parametrize("order", rot.EULER_ORDERS)
def test_euler_gimbal_lock(order, extrinsic):
    proper = order[0] == order[2]
    rng = np.random.default_rng(11)
    for lock in ((0.0, np.pi) if proper else (np.pi / 2, -np.pi / 2)):
        angles = rng.uniform(-np.pi, np.pi, (300, 3))
        angles[:, 1] = lock
        R = rot.matrix_from_euler(angles, order, extrinsic)
        back = rot.euler_from_matrix(R, order, extrinsic)
        # A valid decomposition reproducing R, the documented choice (third angle 0) and the
        # exact middle angle (up to rounding).
        np.testing.assert_allclose(rot.matrix_from_euler(back, order, extrinsic), R, atol=TOL)
        assert np.all(back[:, 2] == 0)
        np.testing.assert_allclose(back[:, 1], lock, atol=1e-14)


def test_euler_order_validation():
    for bad in ("xxy", "XYZ", "xy", "abc", 3):
        with pytest.raises(ValueError, match="order must be one of"):
            rot.matrix_from_euler([0.1, 0.2, 0.3], bad)


# ------------------------------------------------------------------ random rotations


def test_random_rotations_are_seeded_and_haar_uniform():
    assert np.array_equal(rot.random_quaternion(12, 5), rot.random_quaternion(12, 5))
    assert rot.random_quaternion(12).shape == (4,)
    assert rot.random_matrix(np.random.default_rng(0), (2, 5)).shape == (2, 5, 3, 3)
    n = 40000
    R = rot.random_matrix(13, n)
    # Haar measure on SO(3): E[R] = 0, E[R_ij²] = 1/3, E[tr R] = 0, E[(tr R)²] = 1. Standard errors
    # are about 1/sqrt(n) ≈ 0.005 (entry variance ≤ 1/3, tr² variance ≈ 2): 5 sigma ≈ 0.03.
    np.testing.assert_allclose(R.mean(axis=0), 0, atol=0.03)
    np.testing.assert_allclose((R ** 2).mean(axis=0), 1 / 3, atol=0.03)
    tr = np.trace(R, axis1=-2, axis2=-1)
    assert abs(tr.mean()) < 0.03 and abs((tr ** 2).mean() - 1) < 0.04
    # Angle distribution: P(θ ≤ x) = (x - sin x)/π; compare at a few points (binomial 5 sigma).
    _, angle = rot.axis_angle_from_matrix(R)
    for x in (np.pi / 4, np.pi / 2, 3 * np.pi / 4):
        p = (x - np.sin(x)) / np.pi
        assert abs((angle <= x).mean() - p) < 5 * np.sqrt(p * (1 - p) / n)


# ------------------------------------------------------------------ bad input


def test_errors_echo_what_was_received():
    with pytest.raises(ValueError, match=r"\(\.\.\., 4\), got shape \(3,\)"):
        rot.matrix_from_quaternion([1.0, 0, 0])
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, 3\), got shape \(3, 2\)"):
        rot.quaternion_from_matrix(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"got shape \(4,\)"):
        rot.hat(np.zeros(4))
    with pytest.raises(ValueError, match="zero-norm"):
        rot.normalize(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="zero-norm"):
        rot.matrix_from_axis_angle([0.0, 0, 0], 1.0)
    with pytest.raises(ValueError, match="so\\(4\\) coordinates"):
        rot.skew_from_vector(np.zeros(5), 4)
    with pytest.raises(ValueError, match="n = 2 or 3"):
        rot.hat(np.zeros(6), n=4)
    with pytest.raises(ValueError, match=r"got shape \(4, 4\)"):
        rot.vee(np.zeros((4, 4)))


# ------------------------------------------------------------------ dual numbers flow through


def test_dual_numbers_flow_through_the_smooth_maps():
    from physics.math.dual import Dual

    w = np.array([0.3, -1.2, 0.7])
    t = Dual(np.float64(0.0), np.float64(1.0))
    # d/dt exp(t hat(w)) at t = 0 is hat(w); the series branch at angle 0 keeps it exact.
    R = rot.matrix_from_rotvec(t * w)
    np.testing.assert_allclose(np.asarray(R.real), np.eye(3), atol=0)
    np.testing.assert_allclose(np.asarray(R.dual), rot.hat(w), atol=1e-15)
    q = rot.quaternion_exp(t * w)
    np.testing.assert_allclose(np.asarray(q.dual), np.r_[0.0, w], atol=1e-15)

    # Away from 0, against central differences (error h² |f'''| ≈ 1e-10, rounding 1e-16/h).
    x0 = np.array([0.7, 0.1, -0.4])
    dx = np.array([0.2, 0.9, -0.3])
    q0 = np.array([0.5, 0.1, -0.6, 0.3])
    dq = np.array([0.1, -0.2, 0.3, 0.4])
    cases = [
        (rot.matrix_from_rotvec, x0, dx), (rot.quaternion_exp, x0, dx),
        (rot.quaternion_exp_truncated, x0, dx), (rot.cayley, x0, dx), (rot.quaternion_cayley, x0, dx),
        (rot.matrix_from_quaternion, q0, dq), (rot.rotvec_from_quaternion, q0, dq),
        (rot.normalize, q0, dq), (rot.inverse, q0, dq), (rot.quaternion_derivative_matrix, q0, dq),
        (lambda a: rot.matrix_from_euler(a, "zyz", extrinsic=True), x0, dx),
        (lambda a: rot.quaternion_from_euler(a, "xyz"), x0, dx),
        (lambda a: rot.matrix_from_axis_angle(a, 0.7), x0, dx),
        (lambda a: rot.rotate(a, x0), q0, dq),
    ]
    h = 1e-6
    for f, a, da in cases:
        y = f(Dual(a, da))
        fd = (f(a + h * da) - f(a - h * da)) / (2 * h)
        np.testing.assert_allclose(np.asarray(y.dual), fd, atol=1e-8)
        np.testing.assert_allclose(np.asarray(y.real), f(a), atol=0)


def test_second_derivative_through_the_series_branch():
    from physics.math.dual import jacobian, second_derivative

    w = np.array([0.3, -1.2, 0.7])
    # d²/dt² exp(t hat(w)) at t = 0 is hat(w)²; nested duals pass the angle² series at angle 0.
    d2 = second_derivative(lambda t: rot.matrix_from_rotvec(t * w), np.float64(0.0))
    np.testing.assert_allclose(np.asarray(d2), rot.hat(w) @ rot.hat(w), atol=1e-15)
    # The Jacobian of quaternion_exp at 0 is [0; I] (exp(v) = 1 + v + O(|v|²)).
    J = jacobian(rot.quaternion_exp, np.zeros(3))
    np.testing.assert_allclose(np.asarray(J), np.r_[np.zeros((1, 3)), np.eye(3)], atol=0)
