"""Tests of physics.math.dual: every rule against an independent means.

- elementary functions against their analytic derivatives (tolerance 1e-12 relative: the dual
  part is one or two rounded operations away from the formula);
- composite functions against central finite differences (tolerance 1e-6: truncation O(h²) with
  h = 1e-5 plus rounding O(eps/h));
- Jacobians of known maps, matmul and cross product rules, the derivative of a rotation at t = 0,
  and nested (hyper-dual) second derivatives against analytic ones.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from physics.math.dual import (Dual, derivative, directional_derivative, jacobian, real_part,
                          second_derivative)

SETTINGS = settings(max_examples=60, deadline=None)
RTOL_EXACT = 1e-12  # analytic rules: a few roundings of the same formula
RTOL_FD = 1e-6      # central differences: O(h²) truncation + O(eps/h) rounding, h = 1e-5
H = 1e-5


def central_difference(f, x, direction):
    x, direction = np.asarray(x, float), np.asarray(direction, float)
    return (f(x + H * direction) - f(x - H * direction)) / (2 * H)


def vectors(shape, low=-2.0, high=2.0):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high))


# --- elementary functions against analytic derivatives ------------------------------------------
# (function, analytic derivative written independently of physics/math/dual.py, domain)
ELEMENTARY = [
    (np.sin, np.cos, (-10, 10)),
    (np.cos, lambda x: -np.sin(x), (-10, 10)),
    (np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.4, 1.4)),
    (np.arcsin, lambda x: 1 / np.sqrt((1 - x) * (1 + x)), (-0.999, 0.999)),
    (np.arccos, lambda x: -1 / np.sqrt((1 - x) * (1 + x)), (-0.999, 0.999)),
    (np.arctan, lambda x: 1 / (1 + x ** 2), (-50, 50)),
    (np.exp, np.exp, (-20, 20)),
    (np.log, lambda x: 1 / x, (1e-8, 1e8)),
    (np.sqrt, lambda x: 0.5 / np.sqrt(x), (1e-8, 1e8)),
    (np.abs, np.sign, (-5, 5)),
    (np.sinh, np.cosh, (-10, 10)),
    (np.cosh, np.sinh, (-10, 10)),
    (np.tanh, lambda x: 1 / np.cosh(x) ** 2, (-10, 10)),
    (np.arcsinh, lambda x: 1 / np.sqrt(x ** 2 + 1), (-10, 10)),
    (np.arctanh, lambda x: 1 / (1 - x ** 2), (-0.9, 0.9)),
    (np.log1p, lambda x: 1 / (1 + x), (-0.9, 10)),
    (np.expm1, np.exp, (-10, 10)),
    (np.cbrt, lambda x: x ** (-2 / 3) / 3, (1e-3, 1e3)),
    (np.square, lambda x: 2 * x, (-10, 10)),
    (lambda x: 1 / x, lambda x: -1 / x ** 2, (0.1, 10)),
    (lambda x: x ** 3, lambda x: 3 * x ** 2, (-10, 10)),
    (lambda x: x ** 0.5, lambda x: 0.5 / np.sqrt(x), (1e-3, 1e3)),
    (lambda x: 2.0 ** x, lambda x: np.log(2) * 2.0 ** x, (-10, 10)),
    (lambda x: x ** x, lambda x: x ** x * (np.log(x) + 1), (0.1, 5)),
    (np.sign, lambda x: 0 * x, (-5, 5)),
    (np.floor, lambda x: 0 * x, (-5, 5)),
]


@pytest.mark.parametrize("f, fprime, domain", ELEMENTARY,
                         ids=[getattr(f, "__name__", str(i)) for i, (f, _, _) in enumerate(ELEMENTARY)])
@SETTINGS
@given(data=st.data())
def test_elementary_against_analytic_derivative(f, fprime, domain, data):
    x = data.draw(vectors((5,), *domain))
    d = Dual.variable(x)
    y = f(d)
    np.testing.assert_array_equal(y.real, f(x))  # the real part is the plain computation
    np.testing.assert_allclose(y.dual, fprime(x), rtol=RTOL_EXACT, atol=1e-300)


@SETTINGS
@given(x=vectors((4,), -3, 3), y=vectors((4,), -3, 3), a=vectors((4,), -3, 3),
       b=vectors((4,), -3, 3))
def test_binary_rules(x, y, a, b):
    """(x + εa) ∘ (y + εb) against the partial derivatives of each binary operation."""
    u, v = Dual(x, a), Dual(y, b)
    y_safe = np.where(np.abs(y) < 0.1, 0.1, y)  # keep division and atan2 away from 0
    v_safe = Dual(y_safe, b)
    x_pos = np.maximum(np.abs(x), 0.1)  # the base of a Dual power: positive
    u_pos = Dual(x_pos, a)
    cases = [
        (u + v, a + b), (u - v, a - b), (u * v, a * y + x * b),
        (u / v_safe, a / y_safe - x * b / y_safe ** 2),
        (np.arctan2(u, v_safe), (y_safe * a - x * b) / (x ** 2 + y_safe ** 2)),
        (np.hypot(u, v_safe), (x * a + y_safe * b) / np.hypot(x, y_safe)),
        (np.maximum(u, v), np.where(x >= y, a, b)),
        (np.minimum(u, v), np.where(x <= y, a, b)),
        (u_pos ** v, x_pos ** y * (y * a / x_pos + np.log(x_pos) * b)),
        (u_pos ** 2.5, 2.5 * x_pos ** 1.5 * a),
        (1.5 ** v, 1.5 ** y * np.log(1.5) * b),
    ]
    for result, expected in cases:
        np.testing.assert_allclose(result.dual, expected, rtol=RTOL_EXACT, atol=1e-12)


def test_mixed_operands_on_either_side():
    """Plain arrays, Python floats and numpy scalars combine with Duals from the left and right."""
    x = Dual(np.array([1.0, 2.0]), np.array([1.0, -1.0]))
    c = np.array([3.0, 5.0])
    for result, real, dual in [
        (x + c, [4, 7], [1, -1]), (c + x, [4, 7], [1, -1]), (2.0 - x, [1, 0], [-1, 1]),
        (x * c, [3, 10], [3, -5]), (np.float64(2) * x, [2, 4], [2, -2]),
        (c / x, [3, 2.5], [-3, 1.25]), (x / 2.0, [0.5, 1], [0.5, -0.5]),
        (x ** 2, [1, 4], [2, -4]), (2.0 ** x, [2, 4], [2 * np.log(2), -4 * np.log(2)]),
        (-x, [-1, -2], [-1, 1]), (abs(-x), [1, 2], [1, -1]),
    ]:
        assert isinstance(result, Dual)
        np.testing.assert_allclose(result.real, real, rtol=1e-15)  # a single rounding
        np.testing.assert_allclose(result.dual, dual, rtol=1e-15)


def test_comparisons_use_the_real_part_and_return_plain_bools():
    x = Dual(np.array([1.0, 2.0, 3.0]), np.array([100.0, -100.0, 0.0]))
    for result, expected in [(x < 2, [True, False, False]), (x >= 2, [False, True, True]),
                             (x == 2, [False, True, False]), (2 > x, [True, False, False]),
                             (x != x, [False, False, False]), (np.isfinite(x), [True] * 3)]:
        assert type(result) is np.ndarray and result.dtype == bool
        np.testing.assert_array_equal(result, expected)


# --- edges of the domains ------------------------------------------------------------------------
def test_domain_edges():
    with np.errstate(divide="ignore"):
        # arcsin' = 1/sqrt(1 - x²) → +inf and arccos' → -inf exactly at ±1
        np.testing.assert_array_equal(derivative(np.arcsin, np.array([-1.0, 1.0])), [np.inf, np.inf])
        np.testing.assert_array_equal(derivative(np.arccos, np.array([-1.0, 1.0])), [-np.inf, -np.inf])
        assert derivative(np.sqrt, 0.0) == np.inf
        assert derivative(np.log, 0.0) == np.inf
    # Near ±1 large but finite: with d = 1 - x exact (Sterbenz), 1 - x² = d (2 - d).
    for gap in (1e-6, 1e-10, 1e-14):
        x = 1.0 - gap
        d = 1.0 - x
        expected = 1 / np.sqrt(d * (2 - d))
        np.testing.assert_allclose(derivative(np.arcsin, x), expected, rtol=1e-12)
        np.testing.assert_allclose(derivative(np.arcsin, -x), expected, rtol=1e-12)
        np.testing.assert_allclose(derivative(np.arccos, x), -expected, rtol=1e-12)
    # log near 0: 1/x, large and exact
    for x in (1e-300, 1e-100, 1e-8):
        np.testing.assert_allclose(derivative(np.log, x), 1 / x, rtol=1e-15)
    # abs at 0: the chosen derivative is sign(0) = 0 (middle of the subgradient [-1, 1])
    assert derivative(np.abs, 0.0) == 0.0
    np.testing.assert_array_equal(derivative(np.abs, np.array([-2.0, 2.0])), [-1.0, 1.0])
    # x ** 0 is constant even at 0; 0 ** y is constant for y > 0
    assert derivative(lambda x: x ** 0, 0.0) == 0.0
    assert derivative(lambda y: 0.0 ** y, 2.0) == 0.0
    assert derivative(lambda x: x ** 2, 0.0) == 0.0


def test_zero_tangent_stays_zero_at_infinite_derivatives():
    """Jacobian columns with a seed of 0 must not turn into inf · 0 = nan."""
    x = np.array([0.0, 4.0])
    J = jacobian(np.sqrt, x)
    np.testing.assert_array_equal(J, [[np.inf, 0.0], [0.0, 0.25]])
    J = jacobian(np.arcsin, np.array([1.0, 0.0]))
    np.testing.assert_array_equal(J, [[np.inf, 0.0], [0.0, 1.0]])


# --- composites against finite differences -------------------------------------------------------
COMPOSITES = [
    lambda x: np.sin(x) * np.exp(-x ** 2) / (1 + x ** 2),
    lambda x: np.sqrt(1 + np.tanh(x) ** 2) * np.arctan2(x, 2.0 - np.cos(x)),
    lambda x: np.log(np.cosh(x) + np.hypot(x, 1.0)) ** 1.5,
    lambda x: np.arccos(np.clip(np.sin(x) / 1.5, -1, 1)) + np.maximum(x, 0.3 * x) * np.sinh(x),
    lambda x: np.abs(x - 0.1) ** np.cos(x) + np.arcsin(np.tanh(x) / 2),
]


@pytest.mark.parametrize("f", COMPOSITES)
@SETTINGS
@given(x=vectors((6,), -2, 2))
def test_composites_against_central_differences(f, x):
    x = np.where(np.abs(x - 0.1) < 1e-3, 0.5, x)  # keep |x - 0.1| away from its kink
    x = np.where(np.abs(x) < 1e-3, 0.5, x)         # and max(x, 0.3x) away from its kink at 0
    fd = central_difference(f, x, np.ones_like(x))
    np.testing.assert_allclose(derivative(f, x), fd, rtol=RTOL_FD, atol=RTOL_FD)


# Array functions through __array_function__: each directional derivative against finite
# differences of the same numpy code on plain arrays. Linear maps make FD exact up to rounding.
A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.1, 0.2, 0.3]])
ARRAY_FUNCTIONS = {
    "stack": lambda x: np.stack([x, np.sin(x), 2.0 * np.ones(3)]),
    "concatenate": lambda x: np.concatenate([x, x ** 2, np.ones(2)]),
    "sum": lambda x: np.sum(np.outer(x, x), axis=0),
    "norm": lambda x: np.linalg.norm(np.outer(x, x) + A, axis=-1),
    "norm_fro": lambda x: np.linalg.norm(np.outer(x, x)),
    "where": lambda x: np.where(np.array([True, False, True]), x ** 2, np.sin(x)),
    "swapaxes": lambda x: np.swapaxes(np.outer(x, x ** 2), 0, 1),
    "moveaxis": lambda x: np.moveaxis(np.outer(x, x ** 2)[None], 0, -1),
    "transpose": lambda x: np.transpose(np.outer(x, np.cos(x))),
    "broadcast_to": lambda x: np.broadcast_to(x ** 3, (2, 3)),
    "reshape": lambda x: np.reshape(np.outer(x, x), (9,)),
    "expand_squeeze": lambda x: np.squeeze(np.expand_dims(x * x, 0), axis=0),
    "clip": lambda x: np.clip(3 * x, -1.0, 1.0),
    "dot": lambda x: np.dot(A, x) + np.dot(x, x),
    "trace": lambda x: np.trace(np.outer(x, x) @ A),
    "diagonal": lambda x: np.diagonal(np.outer(x, x ** 2)),
    "outer": lambda x: np.outer(x, A @ x),
    "einsum": lambda x: np.einsum("ij,j,i->", A, x, np.sin(x)),
    "cross": lambda x: np.cross(x, A @ x),
    "matmul": lambda x: (A @ np.outer(x, x)) @ x,
    "inv": lambda x: np.linalg.inv(A + np.outer(x, x) + 3 * np.eye(3)),
    "solve": lambda x: np.linalg.solve(A + 3 * np.eye(3) + np.diag(x), x ** 2),
    "det": lambda x: np.linalg.det(A + np.outer(x, np.sin(x))),
    "max_min": lambda x: np.stack([np.max(x ** 2), np.min(x ** 2), x.max(), x.min()]),
    "mean_cumsum": lambda x: np.stack([np.mean(x ** 2) * np.ones(3), np.cumsum(x ** 3)]),
    "tensordot": lambda x: np.tensordot(np.outer(x, x), A, axes=2),
    "methods": lambda x: np.outer(x, x).T.reshape(3, 3).swapaxes(0, 1).sum(axis=1),
    "mT_diag": lambda x: (A * np.diag(x)).mT @ x if isinstance(x, Dual) else (A * np.diag(x)).T @ x,
    "split": lambda x: np.split(np.concatenate([x, x ** 2]), 2)[1] * np.split(x, 3)[0],
    "broadcast_arrays": lambda x: np.broadcast_arrays(x[:, None], np.sin(x))[0] * 2.0,
    "add_reduce": lambda x: np.add.reduce(np.outer(x, x ** 2), axis=1),
    "sum_initial": lambda x: np.sum(x ** 2, initial=3.0),
    "inner_vdot_kron": lambda x: np.concatenate([np.inner(x, A), np.vdot(x, x)[None], np.kron(x, x)]),
    "take_roll_flip": lambda x: np.take(np.roll(np.flip(x ** 2), 1), [2, 0]),
    "full_like": lambda x: np.full_like(x, 2.0) * x + np.ones_like(x) * x ** 2,
    "fmod_remainder": lambda x: np.remainder(5 * x + 7, 2.5) + np.fmod(5 * x + 7, 3 + x),
    "inplace": lambda x: _inplace(x),
}


def _inplace(x):
    y = x * 1.0
    y *= x
    y += np.sin(x)
    y[1] = x[0] ** 3
    return y


@pytest.mark.parametrize("name", sorted(ARRAY_FUNCTIONS))
@SETTINGS
@given(x=vectors((3,), -1, 1), v=vectors((3,), -1, 1))
def test_array_functions_against_central_differences(name, x, v):
    f = ARRAY_FUNCTIONS[name]
    # Products of squares of numbers below ~1e-80 underflow (in numpy as here), which makes
    # sqrt(sum) 0 with a nonzero tangent: flush them to 0, where the rule is exact.
    x = np.where(np.abs(x) < 1e-50, 0.0, x)
    if name == "clip":  # away from the kinks at 3x = ±1
        x = np.where(np.abs(np.abs(3 * x) - 1) < 1e-3, 0.0, x)
    if name == "fmod_remainder":  # away from the jumps of the remainders
        x = np.array([0.13, -0.45, 0.77]) + 0.01 * x
    if name == "max_min":  # distinct squares, so the arg max/min is unique
        x = np.array([0.1, -0.45, 0.8]) + 0.01 * x
    y = f(Dual(x, v))
    # The value may be computed by an equivalent sequence (norm as sqrt(sum x²)): a few ulps.
    np.testing.assert_allclose(y.real, f(x), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(y.dual, central_difference(f, x, v), rtol=RTOL_FD, atol=RTOL_FD)


def test_zeros_like_family_returns_duals_to_assign_into():
    x = Dual.variable(np.array([1.0, 2.0, 3.0]))
    z = np.zeros_like(x)
    assert isinstance(z, Dual) and np.all(z.real == 0) and np.all(z.dual == 0)
    z[1] = x[2] ** 2            # a Dual
    z[0] = 5.0                  # a plain float gets dual part 0
    np.testing.assert_array_equal(z.real, [5.0, 9.0, 0.0])
    np.testing.assert_array_equal(z.dual, [0.0, 6.0, 0.0])
    one = np.ones_like(x)
    np.testing.assert_array_equal(one.real, 1.0)
    np.testing.assert_array_equal(one.dual, 0.0)
    full = np.full_like(x, 7.0)
    np.testing.assert_array_equal(full.real, 7.0)


# --- matmul, cross product, Jacobians ------------------------------------------------------------
@SETTINGS
@given(a=vectors((4, 3, 3)), da=vectors((4, 3, 3)), b=vectors((3, 2)), db=vectors((3, 2)))
def test_matmul_product_rule(a, da, b, db):
    """d(A B) = dA B + A dB, batched, with the Dual on either side and a constant on the other."""
    product = Dual(a, da) @ Dual(b, db)
    np.testing.assert_allclose(product.dual, da @ b + a @ db, rtol=RTOL_EXACT, atol=1e-12)
    np.testing.assert_allclose((a @ Dual(b, db)).dual, a @ db, rtol=RTOL_EXACT, atol=1e-12)
    np.testing.assert_allclose((Dual(a, da) @ b).dual, da @ b, rtol=RTOL_EXACT, atol=1e-12)
    np.testing.assert_allclose(np.matmul(a, Dual(b, db)).real, a @ b, rtol=0)


@SETTINGS
@given(a=vectors((5, 3)), da=vectors((5, 3)), b=vectors((5, 3)), db=vectors((5, 3)))
def test_cross_product_rule(a, da, b, db):
    """d(a × b) = da × b + a × db."""
    result = np.cross(Dual(a, da), Dual(b, db))
    np.testing.assert_allclose(result.dual, np.cross(da, b) + np.cross(a, db),
                               rtol=RTOL_EXACT, atol=1e-12)


def spherical_to_cartesian(p):
    r, theta, phi = p[..., 0], p[..., 1], p[..., 2]
    return np.stack([r * np.sin(theta) * np.cos(phi), r * np.sin(theta) * np.sin(phi),
                     r * np.cos(theta)], axis=-1)


@SETTINGS
@given(p=hnp.arrays(np.float64, (4, 3), elements=st.floats(0.1, 3.0)))
def test_jacobian_of_spherical_coordinates(p):
    """Analytic Jacobian of (r, θ, φ) ↦ x, and its determinant r² sin θ; batch of 4 points."""
    J = jacobian(spherical_to_cartesian, p)
    assert J.shape == (4, 3, 3)
    r, t, f = p[:, 0], p[:, 1], p[:, 2]
    st_, ct, sf, cf = np.sin(t), np.cos(t), np.sin(f), np.cos(f)
    expected = np.stack([
        np.stack([st_ * cf, r * ct * cf, -r * st_ * sf], -1),
        np.stack([st_ * sf, r * ct * sf, r * st_ * cf], -1),
        np.stack([ct, -r * st_, 0 * r], -1)], -2)
    np.testing.assert_allclose(J, expected, rtol=RTOL_EXACT, atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(J), r ** 2 * st_, rtol=1e-10)  # det amplifies rounding


def test_jacobian_shapes_and_gradient():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(jacobian(lambda v: np.sum(v ** 2), x), 2 * x, rtol=0)  # gradient
    J = jacobian(lambda v: A @ v, x)  # linear map: J = A exactly
    np.testing.assert_array_equal(J, A)
    assert jacobian(lambda v: v[:2] * 0 + 1.0, x).shape == (2, 3)
    np.testing.assert_array_equal(jacobian(lambda v: np.ones(2), x), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(\)"):
        jacobian(np.sin, 1.0)


def test_directional_derivative_is_jacobian_times_direction():
    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(directional_derivative(spherical_to_cartesian, x, v),
                               jacobian(spherical_to_cartesian, x) @ v, rtol=1e-14, atol=1e-15)


# --- rotations -------------------------------------------------------------------------------------
def hat(w):
    zero = 0.0 * w[..., 0]
    return np.stack([np.stack([zero, -w[..., 2], w[..., 1]], -1),
                     np.stack([w[..., 2], zero, -w[..., 0]], -1),
                     np.stack([-w[..., 1], w[..., 0], zero], -1)], -2)


def rodrigues(r):
    """exp(hat(r)) written with np.sin, np.cos, np.stack, as rotation code does."""
    theta = np.linalg.norm(r, axis=-1)
    k = r / theta[..., None]
    K = hat(k)
    return np.eye(3) + np.sin(theta)[..., None, None] * K + (1 - np.cos(theta))[..., None, None] * (K @ K)


@SETTINGS
@given(w=vectors((3,), -3, 3), t0=st.floats(0.1, 2.0))
def test_rotation_derivative_is_hat_omega_R(w, t0):
    """d/dt exp(t hat(w)) = hat(w) exp(t hat(w)) (dR/dt = hat(omega) R, parent frame)."""
    w = np.where(np.linalg.norm(w) < 0.1, np.array([0.3, 0.2, 0.1]), w)
    dR = derivative(lambda t: rodrigues(t * w), t0)
    np.testing.assert_allclose(dR, hat(w) @ rodrigues(t0 * w), rtol=1e-12, atol=1e-12)


def test_rotation_derivative_at_zero_is_hat_omega():
    """At t = 0 the Rodrigues factors sin θ / θ need their series; R(t) = I + t K + O(t²)
    written as the series gives exactly hat(w)."""
    w = np.array([0.3, -0.5, 0.8])
    series = lambda t: np.eye(3) + hat(t * w) + 0.5 * hat(t * w) @ hat(t * w)
    np.testing.assert_array_equal(derivative(series, 0.0), hat(w))


from physics.math import rotation  # noqa: E402  (the rotation code must run on Duals)


@SETTINGS
@given(w=vectors((3,), -3, 3), t0=st.sampled_from([0.0, 1e-9, 0.01, 0.5, 1.7]))
def test_physics_rotation_differentiates_through_dual(w, t0):
    """physics.math.rotation on Duals: d/dt matrix_from_rotvec(t w) = hat(w) R and
    d/dt quaternion_from_rotvec(t w) = ½ (0, w) ⊗ q, including t = 0 (series branch)."""
    R = lambda t: rotation.matrix_from_rotvec(t * w)
    np.testing.assert_allclose(derivative(R, t0), hat(w) @ R(t0), rtol=1e-12, atol=1e-12)
    q = lambda t: rotation.quaternion_from_rotvec(t * w)
    expected = 0.5 * rotation.multiply(np.concatenate([[0.0], w]), q(t0))
    np.testing.assert_allclose(derivative(q, t0), expected, rtol=1e-12, atol=1e-12)
    # Hyper-duals: d²/dt² exp(t hat(w)) = hat(w)² exp(t hat(w)), d²q/dt² = -|w|²/4 q.
    np.testing.assert_allclose(second_derivative(R, t0), hat(w) @ hat(w) @ R(t0),
                               rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(second_derivative(q, t0), -0.25 * (w @ w) * q(t0),
                               rtol=1e-12, atol=1e-11)


# --- nesting: second derivatives -------------------------------------------------------------------
SECOND = [
    (np.sin, lambda x: -np.sin(x)),
    (lambda x: x ** 3, lambda x: 6 * x),
    (lambda x: np.exp(np.sin(x)), lambda x: np.exp(np.sin(x)) * (np.cos(x) ** 2 - np.sin(x))),
    (lambda x: np.sqrt(1 + x * x), lambda x: (1 + x * x) ** -1.5),
    (lambda x: np.arctan2(x, 1.0), lambda x: -2 * x / (1 + x * x) ** 2),
    (lambda x: 1 / x, lambda x: 2 / x ** 3),
    (np.log, lambda x: -1 / x ** 2),
    (np.tanh, lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2),
]


@pytest.mark.parametrize("f, f2", SECOND)
@SETTINGS
@given(x=vectors((4,), 0.1, 3))
def test_second_derivative_by_nested_duals(f, f2, x):
    np.testing.assert_allclose(second_derivative(f, x), f2(x), rtol=1e-11, atol=1e-12)  # a few more roundings than first order


def test_nested_dual_carries_value_first_and_second_derivative():
    """Dual(Dual(t, 1), Dual(1, 0)) through uniform circular motion p(t) = (cos t, sin t):
    velocity (-sin, cos), acceleration -p (centripetal)."""
    t = Dual(Dual(0.7, 1.0), Dual(1.0, 0.0))
    p = np.stack([np.cos(t), np.sin(t)])
    np.testing.assert_allclose(p.real.real, [np.cos(0.7), np.sin(0.7)], rtol=1e-15)
    np.testing.assert_allclose(p.real.dual, [-np.sin(0.7), np.cos(0.7)], rtol=1e-15)
    np.testing.assert_allclose(p.dual.real, [-np.sin(0.7), np.cos(0.7)], rtol=1e-15)
    np.testing.assert_allclose(p.dual.dual, [-np.cos(0.7), -np.sin(0.7)], rtol=1e-15)
    assert real_part(p).dtype == float and real_part(p).shape == (2,)


def test_second_derivative_of_rotation_code():
    """d²/dt² exp(t hat(w)) = hat(w)² exp(t hat(w)) through the test's own Rodrigues code."""
    w = np.array([0.3, -0.5, 0.8])
    d2R = second_derivative(lambda t: rodrigues(t * w), 0.9)
    np.testing.assert_allclose(d2R, hat(w) @ hat(w) @ rodrigues(0.9 * w), rtol=1e-12, atol=1e-12)


# --- ndarray-like behaviour and errors ---------------------------------------------------------
def test_array_attributes_and_indexing():
    d = Dual(np.arange(6.0).reshape(2, 3), np.ones((2, 3)))
    assert d.shape == (2, 3) and d.ndim == 2 and d.size == 6 and len(d) == 2
    assert d.T.shape == (3, 2) and d.mT.shape == (3, 2) and d.reshape(3, 2).shape == (3, 2)
    assert d.swapaxes(0, 1).shape == (3, 2) and d.sum().shape == ()
    np.testing.assert_array_equal([row.real for row in d], d.real)
    d[0, 1] = Dual(10.0, 20.0)
    assert d.real[0, 1] == 10.0 and d.dual[0, 1] == 20.0
    d[1] = 0.0
    np.testing.assert_array_equal(d.dual[1], 0.0)
    # broadcasting on construction: a scalar dual part fills the shape of the real part
    b = Dual(np.zeros((2, 3)), 1.0)
    assert b.dual.shape == (2, 3)
    b[0, 0] = 4.0  # parts are writeable copies after broadcasting
    # in-place operators
    b += 1.0
    assert b.real[0, 0] == 5.0 and b.dual[0, 0] == 0.0


def test_clear_errors():
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        Dual(np.zeros(2), np.zeros(3))
    d = Dual.variable(np.ones(3))
    with pytest.raises(TypeError, match="derivative would be lost"):
        np.asarray(d)
    with pytest.raises(TypeError, match="float"):
        float(d[0])
    plain = np.zeros(3)
    with pytest.raises((TypeError, ValueError)):  # numpy reports "setting an array element ..."
        plain[0] = d[0]
    with pytest.raises(TypeError, match="derivative would be lost"):
        plain[:] = d
    with pytest.raises(TypeError, match="np.fft"):  # a function without a Dual rule
        np.fft.fft(d)
    with pytest.raises(TypeError, match="gcd"):
        np.gcd(d, d)
    with pytest.raises(ValueError, match="ord=1"):
        np.linalg.norm(d, ord=1)
    with pytest.raises(TypeError, match="dtype"):
        Dual(np.array(["a"]))
    with pytest.raises(TypeError, match="truth value"):
        bool(d[0])
