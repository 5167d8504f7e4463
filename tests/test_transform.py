"""Tests of physics.transform (issue 2 §3, §4, §6; seed 000, "The Dynamics of a Transform Hierarchy").

The dynamics formulas are checked against time derivatives of time-parameterized transforms
(`T(t)` cubic, `R(t) = exp(t W1) exp(t W2) R0` so that both ω and α are non-trivial, constant
scale), taken by forward-mode differentiation with `physics.dual`. The reference never calls the
formula under test: it differentiates compositions and inverses of plain `Transform`s, whose group
structure is checked separately against augmented matrices.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physics.transform import (DynamicTransform, Transform, hat, vee, _real)

SETTINGS = settings(max_examples=60, deadline=None)
DIMS = st.sampled_from([2, 3, 4])
SEEDS = st.integers(0, 2**32 - 1)

# Group laws, round trips and deltas are a few float operations on O(1) numbers with a condition
# number bounded by the scale range below: 1e-10 relative leaves ~10^5 ulp of headroom.
GROUP_RTOL = 1e-10


def rel_error(x, y):
    """max |x - y| / max(1, max |y|): relative for large values, absolute near zero."""
    x, y = np.asarray(_real(x)), np.asarray(_real(y))
    return np.abs(x - y).max() / max(1.0, np.abs(y).max())


def assert_close(x, y, rtol, what=""):
    err = rel_error(x, y)
    assert err <= rtol, f"{what}: relative error {err:.3g} > {rtol}"


def assert_dynamics_close(a, b, rtol):
    assert_close(a.transform.translation, b.transform.translation, rtol, "translation")
    assert_close(np.broadcast_to(a.transform.rotation, b.transform.rotation.shape),
                 b.transform.rotation, rtol, "rotation")
    assert_close(a.transform.scale, b.transform.scale, rtol, "scale")
    for name in ("velocity", "acceleration", "angular_velocity", "angular_acceleration"):
        assert_close(getattr(a, name), getattr(b, name), rtol, name)


# --- random inputs ---------------------------------------------------------------------------------

def random_rotation(rng, n, batch=()):
    """Haar-random SO(n) by QR of a Gaussian matrix with the sign of R's diagonal fixed."""
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    flip = np.where(np.linalg.det(q) < 0, -1.0, 1.0)
    return np.concatenate([q[..., :, :1] * flip[..., None, None], q[..., :, 1:]], axis=-1)


def random_skew(rng, n, batch=(), size=1.0):
    m = rng.standard_normal(batch + (n, n)) * size
    return (m - np.swapaxes(m, -1, -2)) / 2


def random_transform(rng, n, batch=(), scaled=True):
    scale = rng.uniform(0.5, 2.0, batch) if scaled else np.ones(batch)
    return Transform(rng.standard_normal(batch + (n,)), random_rotation(rng, n, batch), scale)


def random_dynamic(rng, n, batch=(), scaled=True):
    return DynamicTransform(random_transform(rng, n, batch, scaled), rng.standard_normal(batch + (n,)),
                            rng.standard_normal(batch + (n,)), random_skew(rng, n, batch),
                            random_skew(rng, n, batch))


# --- Transform: group structure against augmented matrices -------------------------------------

@SETTINGS
@given(n=DIMS, seed=SEEDS)
def test_composition_inverse_identity_match_augmented_matrices(n, seed):
    rng = np.random.default_rng(seed)
    a, b, c = (random_transform(rng, n) for _ in range(3))
    Ma, Mb = a.as_matrix(), b.as_matrix()
    assert_close((a @ b).as_matrix(), Ma @ Mb, GROUP_RTOL, "a @ b")
    assert_close(a.inverse().as_matrix(), np.linalg.inv(Ma), GROUP_RTOL, "inverse")
    assert_close(((a @ b) @ c).as_matrix(), (a @ (b @ c)).as_matrix(), GROUP_RTOL, "associativity")
    identity = Transform.identity(n)
    assert_close((a @ identity).as_matrix(), Ma, GROUP_RTOL, "a @ id")
    assert_close((identity @ a).as_matrix(), Ma, GROUP_RTOL, "id @ a")
    assert_close((a @ a.inverse()).as_matrix(), np.eye(n + 1), GROUP_RTOL, "a a^-1")
    assert_close((a.inverse() @ a).as_matrix(), np.eye(n + 1), GROUP_RTOL, "a^-1 a")
    assert_close((a @ b).inverse().as_matrix(), (b.inverse() @ a.inverse()).as_matrix(),
                 GROUP_RTOL, "(ab)^-1")


@SETTINGS
@given(n=DIMS, seed=SEEDS)
def test_action_on_points_vectors_normals(n, seed):
    rng = np.random.default_rng(seed)
    a = random_transform(rng, n)
    x, u = rng.standard_normal((5, n)), rng.standard_normal((5, n))
    M = a.as_matrix()
    homogeneous_point = np.concatenate([x, np.ones((5, 1))], axis=-1)
    homogeneous_vector = np.concatenate([x, np.zeros((5, 1))], axis=-1)
    assert_close(a.apply_point(x), (homogeneous_point @ M.T)[:, :n], GROUP_RTOL, "point")
    assert_close(a(x), a.apply_point(x), 0.0, "__call__")
    assert_close(a.apply_vector(x), (homogeneous_vector @ M.T)[:, :n], GROUP_RTOL, "vector")
    assert_close(a.linear(), M[:n, :n], GROUP_RTOL, "J")
    assert_close(a.normal(), np.linalg.inv(M[:n, :n]).T, GROUP_RTOL, "normal = J^-T")
    # A normal stays orthogonal to the tangent vectors it annihilates: n'·(J u) = n·u.
    assert_close(np.sum(a.apply_normal(x) * a.apply_vector(u), -1), np.sum(x * u, -1), GROUP_RTOL,
                 "normal·vector")
    # Distances scale by S: the transform is a similarity.
    assert_close(np.linalg.norm(a.apply_point(x) - a.apply_point(u), axis=-1),
                 a.scale * np.linalg.norm(x - u, axis=-1), GROUP_RTOL, "similarity")


@SETTINGS
@given(n=DIMS, seed=SEEDS, scaled=st.booleans())
def test_matrix_round_trip(n, seed, scaled):
    rng = np.random.default_rng(seed)
    a = random_transform(rng, n, (3,), scaled)
    b = Transform.from_matrix(a.as_matrix())
    assert_close(b.translation, a.translation, GROUP_RTOL, "T")
    assert_close(b.rotation, a.rotation, GROUP_RTOL, "R")
    assert_close(b.scale, a.scale, GROUP_RTOL, "S")


def test_batches_broadcast():
    rng = np.random.default_rng(0)
    a, b = random_transform(rng, 3, (4, 1)), random_transform(rng, 3, (5,))
    ab = a @ b
    assert ab.batch_shape == (4, 5) and ab.as_matrix().shape == (4, 5, 4, 4)
    # Each element of the broadcast batch equals the single composition (exact same operations).
    single = Transform(a.translation[2, 0], a.rotation[2, 0], a.scale[2, 0]) @ Transform(
        b.translation[3], b.rotation[3], b.scale[3])
    assert_close(ab.as_matrix()[2, 3], single.as_matrix(), 1e-15, "batch element")
    assert Transform.identity(3, (2, 7)).as_matrix().shape == (2, 7, 4, 4)
    assert DynamicTransform.identity(2, 6).batch_shape == (6,)
    da, db = random_dynamic(rng, 3, (4, 1)), random_dynamic(rng, 3, (5,))
    assert (da @ db).batch_shape == (4, 5)


# --- validation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, match", [
    ((np.zeros(3), np.eye(2), 1.0), r"\(\.\.\., 3, 3\).*\(2, 2\)"),
    ((np.zeros(()), np.eye(3), 1.0), r"translation.*\(\)"),
    ((np.zeros((4, 3)), np.eye(3)[None].repeat(5, 0), 1.0), "do not broadcast"),
    ((np.zeros(3), 1.1 * np.eye(3), 1.0), "not orthogonal"),
    ((np.zeros(3), np.diag([1.0, 1.0, -1.0]), 1.0), "det -1"),
    ((np.zeros(3), np.eye(3), 0.0), "scale must be positive"),
    ((np.zeros(3), np.eye(3), np.array([1.0, -2.0])), r"scale.*-2"),
])
def test_transform_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        Transform(*args)


def test_dynamic_transform_rejects_bad_input():
    a = Transform.identity(3)
    with pytest.raises(ValueError, match=r"velocity.*\(\.\.\., 3\).*\(2,\)"):
        DynamicTransform(a, np.zeros(2))
    with pytest.raises(ValueError, match="not skew-symmetric"):
        DynamicTransform(a, None, None, np.eye(3))
    with pytest.raises(ValueError, match=r"angular_acceleration.*3, 3\).*\(3,\)"):
        DynamicTransform(a, None, None, None, np.zeros(3))
    with pytest.raises(ValueError, match="only in 2D and 3D"):
        DynamicTransform.from_vectors(Transform.identity(4), omega=np.zeros(6))
    with pytest.raises(ValueError, match="must be a Transform"):
        DynamicTransform(np.eye(4))
    with pytest.raises(ValueError, match="last row"):
        Transform.from_matrix(np.ones((4, 4)))
    # check=False is the hot-path escape: no validation at all.
    Transform(np.zeros(3), 2 * np.eye(3), 1.0, check=False)


def test_vector_forms_and_conventions():
    # 3D: hat(w) x = w × x, [hat a, hat b] = hat(a × b); 2D: hat(s) x = s x^⊥, (x, y)^⊥ = (-y, x).
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((2, 3))
    assert_close(hat(w) @ x, np.cross(w, x), 1e-15, "hat = cross")
    assert_close(vee(hat(w) @ hat(x) - hat(x) @ hat(w)), np.cross(w, x), 1e-15, "bracket = cross")
    assert_close(hat(2.0) @ np.array([1.0, 0.0]), [0.0, 2.0], 0.0, "2D hat")
    d = DynamicTransform.from_vectors(Transform.identity(3), omega=w, alpha=x)
    assert_close(d.omega_vector(), w, 0.0, "omega round trip")
    assert_close(d.alpha_vector(), x, 0.0, "alpha round trip")
    d2 = DynamicTransform.from_vectors(Transform.identity(2, (3,)), omega=[1.0, 2.0, 3.0])
    assert d2.angular_velocity.shape == (3, 2, 2) and np.allclose(d2.omega_vector(), [1, 2, 3])
