"""physics.math.rotation_kernels: the compiled scalar helpers against independent means (scipy's
matrix exponential and Rotation, numpy linear algebra) and against their vectorized versions in
physics.math.rotation. The kernels are inline numba functions, so each is applied to a batch by a
small compiled loop below."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from numba import njit
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from physics.math import rotation
from physics.math import rotation_kernels as rk

# vectors of every size from tiny (the series branch of exp) to several turns
_VECTORS = hnp.arrays(np.float64, (8, 3), elements=st.floats(-7.0, 7.0)).map(
    lambda v: v * np.logspace(-9, 0, 8)[:, None])


@njit
def _exp_batch(x):
    out = np.empty((x.shape[0], 3, 3))
    for i in range(x.shape[0]):
        rk.store33(out, i, rk.exp_so3(rk.load3(x, i)))
    return out


@njit
def _cayley_batch(x):
    out = np.empty((x.shape[0], 3, 3))
    for i in range(x.shape[0]):
        rk.store33(out, i, rk.cayley(rk.load3(x, i)))
    return out


@njit
def _quaternion_batch(q):
    """matrix_from_quaternion, then quaternion_from_matrix of it, and the product q_i q_(i+1)."""
    m, back, product = np.empty((q.shape[0], 3, 3)), np.empty_like(q), np.empty_like(q)
    for i in range(q.shape[0]):
        qi = (q[i, 0], q[i, 1], q[i, 2], q[i, 3])
        j = (i + 1) % q.shape[0]
        rk.store33(m, i, rk.matrix_from_quaternion(qi))
        back[i, 0], back[i, 1], back[i, 2], back[i, 3] = rk.quaternion_from_matrix(rk.load33(m, i))
        p = rk.quaternion_multiply(qi, (q[j, 0], q[j, 1], q[j, 2], q[j, 3]))
        product[i, 0], product[i, 1], product[i, 2], product[i, 3] = p
    return m, back, product


@njit
def _truncated_batch(x):
    out = np.empty((x.shape[0], 3, 3))
    for i in range(x.shape[0]):
        rk.store33(out, i, rk.exp_truncated_matrix(rk.load3(x, i)))
    return out


@njit
def _linear_batch(a, b, v):
    """a b, a^T b, a v, a^T v, solve(a, v), cross(v_i, v_(i+1)) per row."""
    n = a.shape[0]
    ab, atb, av, atv, sol, cr = (np.empty((n, 3, 3)), np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3)),
                                 np.empty((n, 3)), np.empty((n, 3)))
    for i in range(n):
        ai, bi, vi = rk.load33(a, i), rk.load33(b, i), rk.load3(v, i)
        rk.store33(ab, i, rk.matmul(ai, bi))
        rk.store33(atb, i, rk.matmul_tn(ai, bi))
        rk.store3(av, i, rk.matvec(ai, vi))
        rk.store3(atv, i, rk.matvec_t(ai, vi))
        rk.store3(sol, i, rk.solve3(ai, vi))
        rk.store3(cr, i, rk.cross(vi, rk.load3(v, (i + 1) % n)))
    return ab, atb, av, atv, sol, cr


@njit
def _magnus_batch(omega, alpha, h, order):
    out = np.empty_like(omega)
    for i in range(omega.shape[0]):
        rk.store3(out, i, rk.magnus(rk.load3(omega, i), rk.load3(alpha, i), h, order))
    return out


@settings(max_examples=100, deadline=None)
@given(_VECTORS)
def test_exp_is_the_matrix_exponential(x):
    # 5e-13: expm (scaling and squaring) itself errs by up to ~1e-13 at angles near 12 rad, the
    # largest here (measured over 2000 random vectors); it is the independent reference
    expected = np.array([expm(rotation.hat(v)) for v in x])
    assert np.allclose(_exp_batch(x), expected, rtol=0, atol=5e-13)
    assert np.allclose(_exp_batch(x), rotation.exp_so3(x), rtol=0, atol=1e-14)  # same formula: round-off


@settings(max_examples=100, deadline=None)
@given(_VECTORS)
def test_cayley_is_the_cayley_transform(x):
    # (1 - K/2)^-1 (1 + K/2) by numpy's solver; 1e-13 covers the solve's round-off at |x| = 7
    eye = np.eye(3)
    expected = np.array([np.linalg.solve(eye - rotation.hat(v) / 2, eye + rotation.hat(v) / 2) for v in x])
    assert np.allclose(_cayley_batch(x), expected, rtol=0, atol=1e-13)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, (6, 4), elements=st.floats(-3.0, 3.0)).filter(
    lambda q: np.all(np.linalg.norm(q, axis=1) > 1e-3)))
def test_quaternion_conversions_and_product(q):
    m, back, product = _quaternion_batch(q)
    unit = q / np.linalg.norm(q, axis=1, keepdims=True)
    # scipy takes (x, y, z, w); 1e-14: round-off of entries of size 1
    assert np.allclose(m, Rotation.from_quat(unit[:, [1, 2, 3, 0]]).as_matrix(), rtol=0, atol=1e-14)
    # back to the unit quaternion up to sign (q and -q are one rotation; w >= 0 picks one, but
    # w ~ 0 may round either way); Shepperd keeps a few ulps
    error = np.minimum(np.abs(back - unit).max(axis=1), np.abs(back + unit).max(axis=1))
    assert np.all(error < 1e-14)
    assert np.all(back[:, 0] >= 0)
    # M(p q) = M(p) M(q): the product composes as matrices do
    following = np.roll(m, -1, axis=0)
    m_product, _, _ = _quaternion_batch(product)
    assert np.allclose(m_product, m @ following, rtol=0, atol=1e-13)


def test_quaternion_from_matrix_of_half_turns():
    # 180° about each axis and a diagonal: the branches of Shepperd's method other than w
    axes = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 1.0, 1.0]]) / np.array([[1], [1], [1], [np.sqrt(3)]])
    q = np.concatenate([np.zeros((4, 1)), axes], axis=1)
    _, back, _ = _quaternion_batch(q)
    error = np.minimum(np.abs(back - q).max(axis=1), np.abs(back + q).max(axis=1))
    assert np.all(error < 1e-15)  # a few ulps


@settings(max_examples=100, deadline=None)
@given(_VECTORS)
def test_truncated_exponential_matches_the_vectorized_one(x):
    # physics.math.rotation.quaternion_exp_truncated is the vectorized statement of the same formula
    expected = rotation.matrix_from_quaternion(rotation.quaternion_exp_truncated(x / 2))
    assert np.allclose(_truncated_batch(x), expected, rtol=0, atol=1e-14)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, (5, 3, 3), elements=st.floats(-2.0, 2.0)),
       hnp.arrays(np.float64, (5, 3, 3), elements=st.floats(-2.0, 2.0)),
       hnp.arrays(np.float64, (5, 3), elements=st.floats(-2.0, 2.0)))
def test_linear_algebra_against_numpy(a, b, v):
    # strictly diagonally dominant (|diag| >= 5 > 4 >= off-diagonal row sums): invertible and well
    # conditioned, as the integrators' near-identity systems are
    a = a + 7.0 * np.eye(3)
    ab, atb, av, atv, sol, cr = _linear_batch(a, b, v)
    # 1e-12: round-off of sums of three products of entries up to 9
    assert np.allclose(ab, a @ b, rtol=0, atol=1e-12)
    assert np.allclose(atb, np.swapaxes(a, 1, 2) @ b, rtol=0, atol=1e-12)
    assert np.allclose(av, np.einsum("bij,bj->bi", a, v), rtol=0, atol=1e-12)
    assert np.allclose(atv, np.einsum("bji,bj->bi", a, v), rtol=0, atol=1e-12)
    assert np.allclose(np.einsum("bij,bj->bi", a, sol), v, rtol=0, atol=1e-12)
    assert np.allclose(cr, np.cross(v, np.roll(v, -1, axis=0)), rtol=0, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, (4, 3), elements=st.floats(-3.0, 3.0)),
       hnp.arrays(np.float64, (4, 3), elements=st.floats(-3.0, 3.0)),
       st.floats(1e-3, 0.5), st.sampled_from([1, 2, 3]))
def test_magnus_matches_the_vectorized_kinematics(omega, alpha, h, order):
    from physics.dynamics.kinematics import magnus_vector

    # same formula in numpy: round-off only
    assert np.allclose(_magnus_batch(omega, alpha, h, order), magnus_vector(omega, alpha, h, order), rtol=0,
                       atol=1e-14)
