"""Tests of physics.math.transform ("The Dynamics of a Transform Hierarchy", docs/references.md).

The dynamics formulas are checked against time derivatives of time-parameterized transforms
(`T(t)` cubic, `R(t) = exp(t W1) exp(t W2) R0` so that both ω and α are non-trivial, constant
scale), taken by forward-mode differentiation with `physics.math.dual`. The reference never calls the
formula under test: it differentiates compositions and inverses of plain `Transform`s, whose group
structure is checked separately against augmented matrices.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physics.math.dual import Dual
from physics.math.rotation import hat, vee
from physics.math.transform import DynamicTransform, Transform, _real

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
    with pytest.raises(ValueError, match=r"omega must have shape \(\.\.\., 3\).*\(2,\)"):
        DynamicTransform.from_vectors(Transform.identity(3), omega=np.zeros(2))
    with pytest.raises(ValueError, match=r"\(5,\)"):  # so(4) has 6 coordinates
        DynamicTransform.from_vectors(Transform.identity(4), omega=np.zeros(5))
    with pytest.raises(ValueError, match="must be a Transform"):
        DynamicTransform(np.eye(4))
    with pytest.raises(ValueError, match="last row"):
        Transform.from_matrix(np.ones((4, 4)))
    with pytest.raises(ValueError, match=r"delta Δv.*\(2,\)"):
        DynamicTransform.identity(3).delta_world_from_local(np.zeros(2))
    with pytest.raises(ValueError, match="delta Δω: not skew"):
        DynamicTransform.identity(3).counteract(DynamicTransform.identity(3), None, np.ones((3, 3)))
    # check=False is the hot-path escape: no validation at all.
    Transform(np.zeros(3), 2 * np.eye(3), 1.0, check=False)


def test_vector_forms_and_conventions():
    # 3D: hat(w) x = w × x, [hat a, hat b] = hat(a × b); 2D: hat(s) x = s x^⊥, (x, y)^⊥ = (-y, x).
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((2, 3))
    assert_close(hat(w) @ x, np.cross(w, x), 1e-15, "hat = cross")
    assert_close(vee(hat(w) @ hat(x) - hat(x) @ hat(w)), np.cross(w, x), 1e-15, "bracket = cross")
    assert_close(hat(2.0, 2) @ np.array([1.0, 0.0]), [0.0, 2.0], 0.0, "2D hat")
    d = DynamicTransform.from_vectors(Transform.identity(3), omega=w, alpha=x)
    assert_close(d.omega_vector(), w, 0.0, "omega round trip")
    assert_close(d.alpha_vector(), x, 0.0, "alpha round trip")
    d2 = DynamicTransform.from_vectors(Transform.identity(2, (3,)), omega=[1.0, 2.0, 3.0])
    assert d2.angular_velocity.shape == (3, 2, 2) and np.allclose(d2.omega_vector(), [1, 2, 3])
    # n > 3: so(n) coordinates, n(n-1)/2 of them, round trip.
    w6 = rng.standard_normal(6)
    d4 = DynamicTransform.from_vectors(Transform.identity(4), omega=w6, alpha=2 * w6)
    assert_close(d4.omega_vector(), w6, 0.0, "so(4) omega")
    assert_close(d4.alpha_vector(), 2 * w6, 0.0, "so(4) alpha")


# --- time derivatives of time-parameterized transforms -------------------------------------------

def expm(x):
    """Matrix exponential by scaling and squaring of its Taylor series, using only `@`, `+` and
    scalar division so that Dual arrays flow through. The real part decides the scaling, so that
    the scaled norm is ≤ 1/2 and 20 terms leave a truncation error ≤ 2^-21 / 21! ~ 1e-26."""
    norm = np.abs(_real(x)).sum(axis=-1).max()
    squarings = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0 else 0
    y = x / 2.0**squarings
    identity = np.eye(x.shape[-1])
    term, result = identity, identity
    for k in range(1, 21):
        term = (term @ y) / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


class Trajectory:
    """A batch of transforms moving in time: `T(t) = c0 + c1 t + c2 t² + c3 t³`,
    `R(t) = exp(t W1) exp(t W2) R0` (ω(t) = W1 + exp(t W1) W2 exp(-t W1) is not constant, so α ≠ 0),
    constant scale S."""

    def __init__(self, rng, n, batch=(), scaled=True, size=1.0):
        self.c = rng.standard_normal((4,) + batch + (n,)) * size
        self.w1, self.w2 = random_skew(rng, n, batch, size), random_skew(rng, n, batch, size)
        self.r0 = random_rotation(rng, n, batch)
        self.scale = rng.uniform(0.8, 1.25, batch) if scaled else np.ones(batch)

    def __call__(self, t) -> Transform:
        c0, c1, c2, c3 = self.c
        translation = c0 + t * (c1 + t * (c2 + t * c3))
        rotation = expm(t * self.w1) @ expm(t * self.w2) @ self.r0
        return Transform(translation, rotation, self.scale, check=False)


def taylor2(f, t0):
    """`(f(t0), f'(t0), f''(t0))` for `f: float -> tuple of arrays`, by nested forward-mode duals
    `t = (t0 + ε1) + ε2 (1 + 0 ε1)`: the ε1 part carries f', the ε1 ε2 part f'' — exact to rounding."""
    t = Dual(Dual(np.float64(t0), np.float64(1.0)), Dual(np.float64(1.0), np.float64(0.0)))
    # A result that does not depend on t (the scale) comes back as a plain array.
    return [(y.real.real, y.real.dual, y.dual.dual) if isinstance(y, Dual) else (y, 0 * y, 0 * y)
            for y in f(t)]


def dynamics_of(trajectory, t0) -> DynamicTransform:
    """The DynamicTransform of a moving transform at t0 from its definition ("The Dynamics of a
    Transform Hierarchy", "Dynamics of the Transform"): v = Ṫ, a = T̈, ω = Ṙ Rᵀ, and
    α = R̈ Rᵀ - ω² because R̈ = (α + ω²) R."""
    def parts(t):
        a = trajectory(t)
        return a.translation, a.rotation, a.scale
    (T, v, acc), (R, dR, ddR), (S, dS, _) = taylor2(parts, t0)
    # The article's (and our) assumption: scale is constant. Recovered from a matrix it can carry a
    # rounding-level derivative (~1e-16 S), hence the 1e-12 bound rather than exact zero.
    assert np.all(np.abs(dS) <= 1e-12 * S)
    Rt = np.swapaxes(R, -1, -2)
    omega = dR @ Rt
    # check=True also validates that ω and α came out skew, i.e. that R(t) stays a rotation.
    return DynamicTransform(Transform(T, R, S), v, acc, omega, ddR @ Rt - omega @ omega)


# Forward-mode derivatives are exact to rounding; through ~60 matmuls of the series exponential and
# the composition the rounding grows to ~1e-13 relative. 1e-10 leaves a wide margin.
DERIV_RTOL = 1e-10
TIMES = st.floats(-1.0, 1.0)


@SETTINGS
@given(n=DIMS, seed=SEEDS, t0=TIMES, scaled=st.booleans())
def test_composition_dynamics_match_time_derivatives(n, seed, t0, scaled):
    rng = np.random.default_rng(seed)
    parent, child = Trajectory(rng, n, scaled=scaled), Trajectory(rng, n, scaled=scaled)
    expected = dynamics_of(lambda t: parent(t) @ child(t), t0)
    assert_dynamics_close(dynamics_of(parent, t0) @ dynamics_of(child, t0), expected, DERIV_RTOL)


@SETTINGS
@given(n=DIMS, seed=SEEDS, t0=TIMES, scaled=st.booleans())
def test_inverse_dynamics_match_time_derivatives(n, seed, t0, scaled):
    rng = np.random.default_rng(seed)
    a = Trajectory(rng, n, scaled=scaled)
    expected = dynamics_of(lambda t: a(t).inverse(), t0)
    assert_dynamics_close(dynamics_of(a, t0).inverse(), expected, DERIV_RTOL)


@SETTINGS
@given(n=DIMS, seed=SEEDS, t0=TIMES, scaled=st.booleans())
def test_local_from_world_matches_time_derivatives(n, seed, t0, scaled):
    rng = np.random.default_rng(seed)
    parent, child = Trajectory(rng, n, scaled=scaled), Trajectory(rng, n, scaled=scaled)
    parent_world = dynamics_of(parent, t0)
    child_world = dynamics_of(lambda t: parent(t) @ child(t), t0)
    local = DynamicTransform.local_from_world(parent_world, child_world)
    assert_dynamics_close(local, dynamics_of(child, t0), DERIV_RTOL)
    assert_dynamics_close(parent_world.inverse() @ child_world, local, GROUP_RTOL)


@SETTINGS
@given(n=DIMS, seed=SEEDS, t0=TIMES)
def test_identity_dynamics_are_null(n, seed, t0):
    rng = np.random.default_rng(seed)
    a = Trajectory(rng, n)
    # An object is at rest relative to itself: A⁻¹ ∘ A(t) is constant, so its derivatives vanish.
    expected = dynamics_of(lambda t: a(t).inverse() @ a(t), t0)
    identity = DynamicTransform.identity(n)
    assert_dynamics_close(identity, expected, DERIV_RTOL)
    d = dynamics_of(a, t0)
    assert_dynamics_close(d @ d.inverse(), identity, GROUP_RTOL)
    assert_dynamics_close(d.inverse() @ d, identity, GROUP_RTOL)
    assert_dynamics_close(d @ identity, d, GROUP_RTOL)
    assert_dynamics_close(identity @ d, d, GROUP_RTOL)


@SETTINGS
@given(n=DIMS, seed=SEEDS, scaled=st.booleans())
def test_dynamic_group_laws(n, seed, scaled):
    rng = np.random.default_rng(seed)
    a, b, c = (random_dynamic(rng, n, scaled=scaled) for _ in range(3))
    assert_dynamics_close((a @ b) @ c, a @ (b @ c), GROUP_RTOL)
    assert_dynamics_close((a @ b).inverse(), b.inverse() @ a.inverse(), GROUP_RTOL)
    assert_dynamics_close(a.inverse().inverse(), a, GROUP_RTOL)
    # local -> global -> local round trip, and global -> local -> global.
    assert_dynamics_close(DynamicTransform.local_from_world(a, a @ b), b, GROUP_RTOL)
    assert_dynamics_close(a @ DynamicTransform.local_from_world(a, c), c, GROUP_RTOL)


# --- delta rules: consistent with differences of compositions -------------------------------------

def random_delta(rng, n, size=1.0):
    return (rng.standard_normal(n) * size, rng.standard_normal(n) * size,
            random_skew(rng, n, (), size), random_skew(rng, n, (), size))


def difference(after, before):
    return [getattr(after, k) - getattr(before, k)
            for k in ("velocity", "acceleration", "angular_velocity", "angular_acceleration")]


def assert_delta_close(delta, expected, rtol):
    for name, x, y in zip(("Δv", "Δa", "Δω", "Δα"), delta, expected):
        assert_close(x, y, rtol, name)


def changed(d, dv, da, dw, dal):
    return DynamicTransform(d.transform, d.velocity + dv, d.acceleration + da,
                            d.angular_velocity + dw, d.angular_acceleration + dal)


@SETTINGS
@given(n=DIMS, seed=SEEDS, scaled=st.booleans())
def test_delta_world_from_local_and_back(n, seed, scaled):
    rng = np.random.default_rng(seed)
    parent, child = random_dynamic(rng, n, scaled=scaled), random_dynamic(rng, n, scaled=scaled)
    local_change = random_delta(rng, n)
    expected = difference(parent @ changed(child, *local_change), parent @ child)
    assert_delta_close(parent.delta_world_from_local(*local_change), expected, GROUP_RTOL)
    # The inverse rule recovers the local change from the world change.
    assert_delta_close(parent.delta_local_from_world(*expected), local_change, GROUP_RTOL)


@SETTINGS
@given(n=DIMS, seed=SEEDS, scaled=st.booleans())
def test_delta_child_from_parent(n, seed, scaled):
    rng = np.random.default_rng(seed)
    parent, child = random_dynamic(rng, n, scaled=scaled), random_dynamic(rng, n, scaled=scaled)
    parent_change = random_delta(rng, n)
    expected = difference(changed(parent, *parent_change) @ child, parent @ child)
    assert_delta_close(parent.delta_child_from_parent(child, *parent_change), expected, GROUP_RTOL)


@SETTINGS
@given(n=DIMS, seed=SEEDS, scaled=st.booleans(), linear_only=st.booleans())
def test_counteract_keeps_child_and_grandchild_world_motion(n, seed, scaled, linear_only):
    rng = np.random.default_rng(seed)
    parent, child, grandchild = (random_dynamic(rng, n, scaled=scaled) for _ in range(3))
    dv2, da2, dw2, dal2 = random_delta(rng, n)
    if linear_only:  # the article's case: an impulse on the parent changes only its velocity
        da2, dw2, dal2 = None, None, None
    correction = parent.counteract(child, dv2, dw2, da2, dal2)
    if linear_only:  # the article's closed form Δv1 = -J2⁻¹ Δv, Δa1 = 2 J2⁻¹ ω2 Δv
        J2_inv = np.linalg.inv(parent.transform.linear())
        assert_close(correction.velocity, -J2_inv @ dv2, GROUP_RTOL, "closed-form Δv1")
        assert_close(correction.acceleration, 2 * J2_inv @ parent.angular_velocity @ dv2,
                     GROUP_RTOL, "closed-form Δa1")
    z_v, z_w = np.zeros(n), np.zeros((n, n))
    new_parent = changed(parent, dv2, z_v if da2 is None else da2, z_w if dw2 is None else dw2,
                         z_w if dal2 is None else dal2)
    new_child = child.apply_delta(correction)
    before, after = parent @ child, new_parent @ new_child
    assert_dynamics_close(after, before, GROUP_RTOL)
    # Grandchildren inherit the correction and need none of their own.
    assert_dynamics_close(after @ grandchild, before @ grandchild, GROUP_RTOL)


# --- inertial accelerations -------------------------------------------------------------------

@SETTINGS
@given(n=DIMS, seed=SEEDS, t0=TIMES, scaled=st.booleans())
def test_inertial_terms_sum_to_local_acceleration(n, seed, t0, scaled):
    rng = np.random.default_rng(seed)
    parent, child = Trajectory(rng, n, scaled=scaled), Trajectory(rng, n, scaled=scaled)
    parent_world = dynamics_of(parent, t0)
    child_world = dynamics_of(lambda t: parent(t) @ child(t), t0)
    terms = DynamicTransform.inertial_accelerations(parent_world, child_world)
    assert_close(terms.total(), dynamics_of(child, t0).acceleration, DERIV_RTOL, "sum of terms")
    if n in (2, 3):  # the cross-product (3D) and perpendicular (2D) forms give the same terms
        vector = DynamicTransform.inertial_accelerations(parent_world, child_world, form="vector")
        for name in terms._fields:
            assert_close(getattr(vector, name), getattr(terms, name), GROUP_RTOL, name)


def test_inertial_terms_named_physics_3d():
    # A merry-go-round spinning at constant ω about y; a ball at rest in the world at r = (2, 0, 0),
    # no force. Seen from the platform (parent frame at t = 0, R2 = I) the ball moves on a circle:
    # v1 = -ω × r, the centrifugal term is ω² r outward, Coriolis -2 ω × v1 = -2 ω² r inward,
    # and there is no Euler or frame acceleration: net a1 = -ω² r (the circle's centripetal one).
    w = 0.5
    platform = DynamicTransform.from_vectors(Transform.identity(3), omega=[0.0, w, 0.0])
    ball = DynamicTransform(Transform(np.array([2.0, 0.0, 0.0]), np.eye(3), 1.0))
    terms = DynamicTransform.inertial_accelerations(platform, ball, form="vector")
    r = np.array([2.0, 0.0, 0.0])
    # Tolerance: a handful of products of exact binary fractions, exact up to one rounding.
    assert_close(terms.centrifugal, w**2 * r, 1e-15, "centrifugal")
    assert_close(terms.coriolis, -2 * w**2 * r, 1e-15, "coriolis")
    assert_close(terms.euler, 0 * r, 0.0, "euler")
    assert_close(terms.frame, 0 * r, 0.0, "frame")
    assert_close(terms.total(), -(w**2) * r, 1e-15, "net")


def test_inertial_terms_named_physics_2d():
    # A 2D frame with angular acceleration α only (ω = 0) and a point at rest at T1 = (1, 0):
    # Euler term -α T1^⊥ = (0, -α); a frame accelerating with a2 = (0, g) gives frame = (0, -g).
    platform = DynamicTransform.from_vectors(Transform.identity(2), acceleration=[0.0, 9.0], alpha=3.0)
    point = DynamicTransform(Transform(np.array([1.0, 0.0]), np.eye(2), 1.0))
    terms = DynamicTransform.inertial_accelerations(platform, point, form="vector")
    assert_close(terms.euler, [0.0, -3.0], 0.0, "euler")
    assert_close(terms.frame, [0.0, -9.0], 0.0, "frame")
    assert_close(terms.centrifugal + terms.coriolis, [0.0, 0.0], 0.0, "no rotation")


@settings(max_examples=20, deadline=None)
@given(n=DIMS, seed=SEEDS, t0=TIMES)
def test_duals_flow_through_validated_constructors_and_matrices(n, seed, t0):
    rng = np.random.default_rng(seed)
    a = Trajectory(rng, n)
    # Validation runs on the real part and lets the derivative parts through; the augmented matrix
    # and back are differentiable too, so the round trip keeps the dynamics.
    def round_trip(t):
        moved = a(t)
        return Transform.from_matrix(Transform(moved.translation, moved.rotation, moved.scale)
                                     .as_matrix())
    assert_dynamics_close(dynamics_of(round_trip, t0), dynamics_of(a, t0), DERIV_RTOL)
    t = Dual(np.float64(t0), np.float64(1.0))
    moved = a(t)
    d = DynamicTransform(moved, moved.translation, moved.translation, random_skew(rng, n))
    assert isinstance((d @ d).velocity, Dual)


# --- random trees: node-by-node composition against derivatives of the composed world transforms --

MAX_DEPTH = 21


def random_tree(rng, size, chain_bias):
    """Parents with parent[i] < i (-1 = world) and depth ≤ MAX_DEPTH (a root has depth 1).
    With probability `chain_bias` a node hangs below the previous one, which makes deep chains."""
    parent, depth = np.full(size, -1), np.ones(size, dtype=int)
    for i in range(1, size):
        p = i - 1 if rng.random() < chain_bias else int(rng.integers(-1, i))
        if p >= 0 and depth[p] >= MAX_DEPTH:
            p = int(rng.integers(-1, i))
            while p >= 0 and depth[p] >= MAX_DEPTH:
                p = parent[p]
        parent[i], depth[i] = p, (1 if p < 0 else depth[p] + 1)
    return parent, depth


def tree_world(local: Transform, parent, depth) -> Transform:
    """World transforms of every node, level by level (batched over a level's nodes). Runs on
    Dual arrays; this is the reference, so it composes plain Transforms, not the dynamics."""
    translation = np.zeros_like(local.translation)
    rotation = np.zeros_like(local.rotation)
    scale = np.zeros_like(local.scale)
    for level in range(1, depth.max() + 1):
        nodes = np.flatnonzero(depth == level)
        node_local = Transform(local.translation[nodes], local.rotation[nodes], local.scale[nodes],
                               check=False)
        if level == 1:
            world = node_local
        else:
            p = parent[nodes]
            world = Transform(translation[p], rotation[p], scale[p], check=False) @ node_local
        translation[nodes], rotation[nodes], scale[nodes] = (world.translation, world.rotation,
                                                             world.scale)
    return Transform(translation, rotation, scale, check=False)


def node(d: DynamicTransform, i) -> DynamicTransform:
    a = d.transform
    return DynamicTransform(Transform(a.translation[i], a.rotation[i], a.scale[i], check=False),
                            d.velocity[i], d.acceleration[i], d.angular_velocity[i],
                            d.angular_acceleration[i], check=False)


# The acceptance check's bound. Errors measured by rel_error over the whole tree (relative to the
# largest world value of that quantity); forward-mode derivatives are exact to rounding, and 21
# levels of composition grow rounding to ~1e-13, so 1e-9 is met with a wide margin.
TREE_RTOL = 1e-9


@settings(max_examples=30, deadline=None)
@given(n=DIMS, seed=SEEDS, size=st.integers(1, 500), chain_bias=st.floats(0.0, 1.0),
       scaled=st.booleans(), t0=TIMES)
def test_random_tree_world_dynamics_match_time_derivatives(n, seed, size, chain_bias, scaled, t0):
    check_tree(n, seed, size, chain_bias, scaled, t0)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("scaled", [False, True])
def test_largest_deepest_tree(n, scaled):
    # The acceptance check's extreme: 500 nodes, depth 21, always run (hypothesis may not draw it).
    assert check_tree(n, 1234 + n, 500, 0.9, scaled, 0.7) == MAX_DEPTH


def check_tree(n, seed, size, chain_bias, scaled, t0):
    rng = np.random.default_rng(seed)
    parent, depth = random_tree(rng, size, chain_bias)
    local = Trajectory(rng, n, (size,), scaled=scaled, size=0.5)
    expected = dynamics_of(lambda t: tree_world(local(t), parent, depth), t0)

    local_dynamics = dynamics_of(local, t0)
    world = []
    for i in range(size):  # node by node with @, as a user of the public API would
        child = node(local_dynamics, i)
        world.append(child if parent[i] < 0 else world[parent[i]] @ child)
    for name in ("velocity", "acceleration", "angular_velocity", "angular_acceleration"):
        got = np.stack([getattr(w, name) for w in world])
        assert_close(got, getattr(expected, name), TREE_RTOL, name)
    got_translation = np.stack([w.transform.translation for w in world])
    assert_close(got_translation, expected.transform.translation, TREE_RTOL, "translation")
    return depth.max()


def test_random_tree_reaches_max_depth():
    # The generator really produces the deepest trees the check asks for.
    parent, depth = random_tree(np.random.default_rng(0), 500, 1.0)
    assert depth.max() == MAX_DEPTH and np.all(parent < np.arange(500))
