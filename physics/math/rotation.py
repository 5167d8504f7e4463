"""Rotations in 3D (and skew matrices in any dimension): the project's single statement of conventions.

Conventions (each pinned by a test in tests/test_rotation.py):

- Right-handed axes, column vectors, **active** rotations: ``x_parent = R @ x_child``; a rotation
  turns vectors, it does not relabel axes.
- Quaternions are arrays ``(w, x, y, z)`` (scalar first) with the Hamilton product, ``i j = k``.
  ``q`` and ``-q`` are the same rotation; ``rotate(q, v) = q ⊗ (0, v) ⊗ q*``.
- ``hat(w) @ x = w × x`` and ``vee(hat(w)) = w``; in 2D ``hat(s, n=2) = [[0, -s], [s, 0]]``.
- Angular velocity ``omega`` satisfies ``dR/dt = hat(omega) R`` and ``dq/dt = ½ (0, omega) ⊗ q``:
  it is expressed in the **parent** frame ("Numerical Integration for Rotational Dynamics",
  docs/references.md). The body-frame angular velocity is ``omega_body = R.T @ omega``.
- A rotation vector ``r = angle * axis`` with ``angle`` in [0, π]; ``exp_so3(r) = expm(hat(r))`` and
  the unit quaternion of ``r`` is ``quaternion_exp(r / 2)``.
- Euler angles ``(a, b, c)`` for an axis order such as ``"xyz"``: intrinsic (the default) means
  ``R = R_x(a) R_y(b) R_z(c)`` (each turn about the already-turned axes); extrinsic means
  ``R = R_z(c) R_y(b) R_x(a)`` (each turn about the fixed parent axes, x first).

Batch-first: every function takes arrays of shape ``(..., 3)``, ``(..., 4)`` or ``(..., 3, 3)``
with any number of leading batch axes, which broadcast against each other.

Dual numbers: the smooth maps (hat/vee, quaternion algebra, everything *to* a matrix or a
quaternion from rotation vectors, axis-angle, Euler angles, Cayley, the exponentials and
``rotvec_from_quaternion``) are written with elementwise operations, ``np.stack``, ``@`` and
indexing only, so ``physics.math.dual.Dual`` arrays flow through them. Series branches near angle 0
choose on the real part with ``np.where`` and are functions of ``angle²``, which keeps their
derivatives exact at 0. The maps *from* matrices (Shepperd's branch choice) and the Euler
decomposition take plain float arrays.
"""
import numpy as np

__all__ = [
    "cross", "cross_components", "hat", "vee", "skew_from_vector", "vector_from_skew",
    "multiply", "conjugate", "inverse", "normalize", "rotate",
    "matrix_from_quaternion", "quaternion_from_matrix",
    "matrix_from_axis_angle", "axis_angle_from_matrix",
    "quaternion_from_axis_angle", "axis_angle_from_quaternion",
    "matrix_from_rotvec", "rotvec_from_matrix", "quaternion_from_rotvec", "rotvec_from_quaternion",
    "exp_so3", "log_so3", "quaternion_exp", "quaternion_log", "quaternion_exp_truncated",
    "cayley", "cayley_inverse", "quaternion_cayley", "quaternion_cayley_inverse",
    "elementary_matrix", "matrix_from_euler", "euler_from_matrix",
    "quaternion_from_euler", "euler_from_quaternion", "EULER_ORDERS",
    "random_quaternion", "random_matrix", "quaternion_derivative_matrix",
]

# Below this angle² the sinc-type factors use their Taylor series in angle²: terms through
# angle⁸ leave a truncation error below 1e-17 at angle 0.1, and the series keeps derivatives
# (dual numbers) exact at angle 0, where sqrt(angle²) has none.
_SERIES_ANGLE2 = 1e-2

# Euler decomposition: a middle angle within this distance of its lock value (0 or π after the
# Tait-Bryan shift) is treated as gimbal lock. The split between first and third angle there is
# rounding noise; setting the third to 0 changes the rebuilt matrix by at most about this much.
_GIMBAL_LOCK_ANGLE = 1e-14

EULER_ORDERS = ("xyz", "xzy", "yxz", "yzx", "zxy", "zyx",
                "xyx", "xzx", "yxy", "yzy", "zxz", "zyz")


# ---------------------------------------------------------------- array helpers


def _array(x):
    """Float array of ``x``; array-likes that are not ndarrays (Dual) pass through untouched."""
    if isinstance(x, np.ndarray):
        return x if x.dtype.kind in "fc" else x.astype(float)
    if hasattr(x, "__array_function__") and not isinstance(x, np.generic):
        return x
    return np.asarray(x, dtype=float)


def _real(x):
    """The real part as a float ndarray (of a Dual, nested or not, its innermost ``.real``),
    for branch decisions."""
    while not isinstance(x, (np.ndarray, np.generic, float, int)) and hasattr(x, "real"):
        x = x.real
    return np.asarray(x)


def _check_last(x, shape, name):
    x = _array(x)
    if len(x.shape) < len(shape) or tuple(x.shape[-len(shape):]) != shape:
        expected = "(..., " + ", ".join(map(str, shape)) + ")"
        raise ValueError(f"{name} must have shape {expected}, got shape {tuple(x.shape)}")
    return x


def _stack(parts, axis=-1):
    """np.stack after broadcasting the parts to one shape (components of mixed batch shapes)."""
    shape = np.broadcast_shapes(*(np.shape(p) if not hasattr(p, "shape") else p.shape
                                  for p in parts))
    return np.stack([p if p.shape == shape else np.broadcast_to(p, shape) for p in parts],
                    axis=axis)


def _matrix(rows):
    """A (..., n, n) array from n rows of n same-shaped scalar arrays."""
    return _stack([_stack(row, axis=-1) for row in rows], axis=-2)


def _dot3(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def cross_components(u, v):
    """u × v of two vectors given as 3-sequences of components (numbers, or arrays holding a batch
    of each component): the one statement of the formula, compiled as `physics.math.rotation_kernels.cross`
    and applied to batches by `cross`."""
    return (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])


def cross(a, b):
    """a × b over the last axis of (..., 3) arrays (or Duals): np.cross without its axis
    bookkeeping, several times faster on the small batches a step works on."""
    return _stack(list(cross_components((a[..., 0], a[..., 1], a[..., 2]), (b[..., 0], b[..., 1], b[..., 2]))))


_cross = cross


def _sinc(theta2):
    """sin θ / θ as a function of θ² (Taylor series in θ² below _SERIES_ANGLE2)."""
    small = _real(theta2) < _SERIES_ANGLE2
    t = theta2
    series = 1 - t / 6 * (1 - t / 20 * (1 - t / 42 * (1 - t / 72)))
    theta = np.sqrt(np.where(small, 1.0, theta2))
    return np.where(small, series, np.sin(theta) / theta)


def _cos(theta2):
    """cos θ as a function of θ² (Taylor series in θ² below _SERIES_ANGLE2)."""
    small = _real(theta2) < _SERIES_ANGLE2
    t = theta2
    series = 1 - t / 2 * (1 - t / 12 * (1 - t / 30 * (1 - t / 56)))
    return np.where(small, series, np.cos(np.sqrt(np.where(small, 1.0, theta2))))


# ---------------------------------------------------------------- skew matrices


def _skew_pairs(n):
    """so(n) coordinate k ↔ index pair (i, j), i < j, in reverse lexicographic order, and its sign.

    ``W[j, i] = sign * v[k]``, ``W[i, j] = -sign * v[k]`` with ``sign = (-1)**(i + j + 1)``. For
    n = 3 the pairs are (1, 2), (0, 2), (0, 1) with signs +, -, +: W[2,1] = v0, W[0,2] = v1,
    W[1,0] = v2, which is hat; for n = 2 the single pair (0, 1) gives W[1,0] = v0, the 2D hat.
    """
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)][::-1]
    return [(i, j, 1 if (i + j) % 2 else -1) for i, j in pairs]


def skew_from_vector(v, n):
    """The skew matrix W (..., n, n) of so(n) coordinates v (..., n(n-1)/2).

    Coordinate ordering and signs: see ``_skew_pairs``; it agrees with ``hat`` for n = 3 and
    with ``hat(s, n=2)`` for n = 2 (where v has shape (..., 1)).
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    m = n * (n - 1) // 2
    v = _check_last(v, (m,), f"so({n}) coordinates")
    zero = v[..., 0] * 0
    entries = [[zero] * n for _ in range(n)]
    for k, (i, j, sign) in enumerate(_skew_pairs(n)):
        entries[j][i] = v[..., k] if sign > 0 else -v[..., k]
        entries[i][j] = -entries[j][i]
    return _matrix(entries)


def vector_from_skew(W):
    """so(n) coordinates (..., n(n-1)/2) of the skew part (W - Wᵀ)/2 of W (..., n, n).

    Taking the skew part makes this exact on skew input (``vector_from_skew(skew_from_vector(v))
    == v`` bit for bit) and a projection on any other matrix.
    """
    W = _array(W)
    if len(W.shape) < 2 or W.shape[-1] != W.shape[-2] or W.shape[-1] < 2:
        raise ValueError(f"W must have shape (..., n, n) with n >= 2, got shape {tuple(W.shape)}")
    parts = [(W[..., j, i] - W[..., i, j]) * (0.5 * sign)
             for i, j, sign in _skew_pairs(W.shape[-1])]
    return _stack(parts)


def hat(w, n=3):
    """Cross-product matrix: n = 3, w (..., 3) → (..., 3, 3) with ``hat(w) @ x = w × x``;
    n = 2, scalar s (...) → (..., 2, 2) ``[[0, -s], [s, 0]]`` ("Numerical Integration for
    Rotational Dynamics", "The Rotational Equations", ω×)."""
    if n == 2:
        s = _array(w)
        return skew_from_vector(s[..., None], 2)
    if n == 3:
        return skew_from_vector(w, 3)
    raise ValueError(f"hat is defined for n = 2 or 3, got n={n!r}; use skew_from_vector")


def vee(W):
    """Inverse of hat: (..., 3, 3) → (..., 3); (..., 2, 2) → scalar (...). Skew part only."""
    W = _array(W)
    if len(W.shape) < 2 or W.shape[-2:] not in ((2, 2), (3, 3)):
        raise ValueError(f"vee takes shape (..., 2, 2) or (..., 3, 3), got shape {tuple(W.shape)}")
    v = vector_from_skew(W)
    return v[..., 0] if W.shape[-1] == 2 else v


# ---------------------------------------------------------------- quaternion algebra


def multiply(p, q):
    """Hamilton product p ⊗ q (q applied first): (p_w q_w - p_v·q_v, p_w q_v + q_w p_v + p_v × q_v)."""
    p = _check_last(p, (4,), "p")
    q = _check_last(q, (4,), "q")
    pw, px, py, pz = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    qw, qx, qy, qz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return _stack([pw * qw - px * qx - py * qy - pz * qz,
                   pw * qx + px * qw + py * qz - pz * qy,
                   pw * qy - px * qz + py * qw + pz * qx,
                   pw * qz + px * qy - py * qx + pz * qw])


def conjugate(q):
    """q* = (w, -x, -y, -z)."""
    q = _check_last(q, (4,), "q")
    return _stack([q[..., 0], -q[..., 1], -q[..., 2], -q[..., 3]])


def _norm2(q):
    return q[..., 0] * q[..., 0] + q[..., 1] * q[..., 1] + q[..., 2] * q[..., 2] + q[..., 3] * q[..., 3]


def _nonzero(n2, what):
    if np.any(_real(n2) == 0):
        raise ValueError(f"{what} has a zero-norm element (received squared norms {_real(n2)})")


def inverse(q):
    """q⁻¹ = q* / |q|², so that q ⊗ q⁻¹ = 1 for any nonzero q."""
    q = _check_last(q, (4,), "q")
    n2 = _norm2(q)
    _nonzero(n2, "q")
    return conjugate(q) / n2[..., None]


def normalize(q):
    """q / |q|."""
    q = _check_last(q, (4,), "q")
    n2 = _norm2(q)
    _nonzero(n2, "q")
    return q / np.sqrt(n2)[..., None]


def rotate(q, v):
    """Rotate vectors v (..., 3) by unit quaternions q: the vector part of q ⊗ (0, v) ⊗ q*,
    evaluated as v + 2 q_w (q_v × v) + 2 q_v × (q_v × v)."""
    q = _check_last(q, (4,), "q")
    v = _check_last(v, (3,), "v")
    u = q[..., 1:]
    uv = _cross(u, v)
    return v + 2 * (q[..., 0, None] * uv + _cross(u, uv))


def quaternion_derivative_matrix(q, body=False):
    """B(q) (..., 4, 3) with dq/dt = ½ B(q) ω.

    Parent-frame ω (``body=False``): dq/dt = ½ (0, ω) ⊗ q, so B = [[-q_vᵀ], [q_w I - hat(q_v)]].
    Body-frame ω (``body=True``): dq/dt = ½ q ⊗ (0, ω_body), so B = [[-q_vᵀ], [q_w I + hat(q_v)]].
    Derived from dr/dt = ½ Q(w) r = ½ r Q(w_body), as "The Mathematics of Havok's Solver"
    writes it (its printed B(q) is damaged).
    """
    q = _check_last(q, (4,), "q")
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    s = 1 if body else -1
    return _matrix([[-x, -y, -z],
                    [w, -s * z, s * y],
                    [s * z, w, -s * x],
                    [-s * y, s * x, w]])


# ---------------------------------------------------------------- quaternion ↔ matrix


def matrix_from_quaternion(q):
    """Rotation matrix of q (..., 4) → (..., 3, 3); q need not be unit (the rotation of q/|q|).

    R = I + s [[-(y²+z²), xy - wz, xz + wy], [xy + wz, -(x²+z²), yz - wx], [xz - wy, yz + wx, -(x²+y²)]]
    with s = 2/|q|², so that R v = q ⊗ (0, v) ⊗ q⁻¹.
    """
    q = _check_last(q, (4,), "q")
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    n2 = _norm2(q)
    _nonzero(n2, "q")
    s = 2 / n2
    return _matrix([[1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
                    [s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)],
                    [s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)]])


def quaternion_from_matrix(R):
    """Unit quaternion (..., 4) with w >= 0 of rotation matrices R (..., 3, 3).

    Shepperd's method: the symmetric matrix 4 q qᵀ has entries that are linear in R,
        4w² = 1 + tr R,  4x² = 1 + 2R00 - tr R, ...,  4wx = R21 - R12,  4xy = R01 + R10, ...;
    its row k is 4 q_k q. The row with the largest diagonal (|q_k| >= 1/2) is normalized, so
    every rotation, 180° turns included, loses no more than a few ulps. Plain float input only.
    """
    R = _check_last(R, (3, 3), "R")
    R = np.asarray(R, dtype=float)
    t = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    wx = R[..., 2, 1] - R[..., 1, 2]
    wy = R[..., 0, 2] - R[..., 2, 0]
    wz = R[..., 1, 0] - R[..., 0, 1]
    xy = R[..., 0, 1] + R[..., 1, 0]
    xz = R[..., 0, 2] + R[..., 2, 0]
    yz = R[..., 1, 2] + R[..., 2, 1]
    M = _matrix([[1 + t, wx, wy, wz],
                 [wx, 1 + 2 * R[..., 0, 0] - t, xy, xz],
                 [wy, xy, 1 + 2 * R[..., 1, 1] - t, yz],
                 [wz, xz, yz, 1 + 2 * R[..., 2, 2] - t]])
    k = np.argmax(np.diagonal(M, axis1=-2, axis2=-1), axis=-1)
    row = np.take_along_axis(M, k[..., None, None], axis=-2)[..., 0, :]
    q = row / np.linalg.norm(row, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


# ---------------------------------------------------------------- rotation vectors, exp and log


def matrix_from_rotvec(r):
    """exp(hat(r)) for rotation vectors r (..., 3) → (..., 3, 3), by Rodrigues' formula
    R = I + (sin θ/θ) K + ((1 - cos θ)/θ²) K², K = hat(r), θ = |r| ("Numerical Integration for
    Rotational Dynamics", "Evaluating the Exponential Map"); (1 - cos θ)/θ² is evaluated as
    ½ (sin(θ/2)/(θ/2))², free of cancellation."""
    r = _check_last(r, (3,), "r")
    theta2 = _dot3(r, r)
    K = hat(r)
    a = _sinc(theta2)
    b = 0.5 * _sinc(theta2 / 4) ** 2
    return np.eye(3) + a[..., None, None] * K + b[..., None, None] * (K @ K)


exp_so3 = matrix_from_rotvec


def quaternion_exp(v):
    """exp of the imaginary quaternion (0, v), v (..., 3) → unit quaternion (..., 4):
    (cos |v|, v sin|v| / |v|) ("Numerical Integration for Rotational Dynamics", "Evaluating the
    Exponential Map")."""
    v = _check_last(v, (3,), "v")
    theta2 = _dot3(v, v)
    s = _sinc(theta2)
    return _stack([_cos(theta2), s * v[..., 0], s * v[..., 1], s * v[..., 2]])


def quaternion_from_rotvec(r):
    """Unit quaternion exp(r/2) of rotation vectors r (..., 3)."""
    return quaternion_exp(_array(r) / 2)


def rotvec_from_quaternion(q):
    """Rotation vector (..., 3), angle in [0, π], of quaternions q (..., 4) (any nonzero norm).

    With q replaced by -q where w < 0: r = (2 atan2(|q_v|, w) / |q_v|) q_v, which is accurate at
    every angle (atan2 never divides by a vanishing sine); below |q_v|²/w² = 1e-2 the factor is
    the series (2/w) atan(u)/u, u = |q_v|/w, through u⁸ (truncation < 1e-21).
    """
    q = _check_last(q, (4,), "q")
    q = np.where(_real(q[..., :1]) < 0, -q, q)
    w = q[..., 0]
    v = q[..., 1:]
    s2 = _dot3(v, v)
    small = _real(s2) < _SERIES_ANGLE2 * _real(w) ** 2
    u2 = s2 / np.where(small, w, 1.0) ** 2
    series = 2 / np.where(small, w, 1.0) * (1 - u2 * (1 / 3 - u2 * (1 / 5 - u2 * (1 / 7 - u2 / 9))))
    s = np.sqrt(np.where(small, 1.0, s2))
    factor = np.where(small, series, 2 * np.arctan2(s, w) / s)
    return factor[..., None] * v


def quaternion_log(q):
    """log of unit quaternions q (..., 4) as the imaginary part v (..., 3), |v| in [0, π/2]:
    q = ±exp(v), the sign chosen so that the rotation angle 2|v| is at most π."""
    return rotvec_from_quaternion(q) / 2


def rotvec_from_matrix(R):
    """log of rotation matrices R (..., 3, 3) as rotation vectors (..., 3), angle in [0, π],
    through the Shepperd quaternion: accurate near angle 0 and near π (where the classical
    θ/(2 sin θ) vee(R - Rᵀ) divides by a vanishing sine). At exactly π the sign of r is the one
    Shepperd's branch picks (both are correct)."""
    return rotvec_from_quaternion(quaternion_from_matrix(R))


log_so3 = rotvec_from_matrix


def quaternion_exp_truncated(v):
    """The normalized third-order quaternion exponential of (0, v), v (..., 3):

        exp(X) ≈ ((1 - |X|²/2) + (1 - |X|²/6) X) / sqrt((1 - |X|²/2)² + (1 - |X|²/6)² |X|²)

    ("Numerical Integration for Rotational Dynamics", "Evaluating the Exponential Map").
    Always a unit quaternion; agrees with ``quaternion_exp`` to third order in |v|.
    """
    v = _check_last(v, (3,), "v")
    t = _dot3(v, v)
    a = 1 - t / 2
    b = 1 - t / 6
    inv = 1 / np.sqrt(a * a + b * b * t)
    return _stack([a * inv, b * inv * v[..., 0], b * inv * v[..., 1], b * inv * v[..., 2]])


# ---------------------------------------------------------------- axis-angle


def _unit_axis(axis):
    axis = _check_last(axis, (3,), "axis")
    n2 = _dot3(axis, axis)
    _nonzero(n2, "axis")
    return axis / np.sqrt(n2)[..., None]


def matrix_from_axis_angle(axis, angle):
    """Rodrigues: R = I + sin α K + (1 - cos α) K², K = hat(axis/|axis|); axis (..., 3), angle (...).
    1 - cos α is evaluated as 2 sin²(α/2) (no cancellation at small α)."""
    K = hat(_unit_axis(axis))
    angle = _array(angle)
    s = np.sin(angle)[..., None, None]
    c = 2 * np.sin(angle / 2)[..., None, None] ** 2
    return np.eye(3) + s * K + c * (K @ K)


def quaternion_from_axis_angle(axis, angle):
    """(cos(α/2), sin(α/2) axis/|axis|); axis (..., 3), angle (...)."""
    n = _unit_axis(axis)
    half = _array(angle) / 2
    s = np.sin(half)
    return _stack([np.cos(half), s * n[..., 0], s * n[..., 1], s * n[..., 2]])


def axis_angle_from_quaternion(q):
    """(axis (..., 3) unit, angle (...) in [0, π]) of quaternions q (..., 4).
    At angle 0 the axis is undefined and returned as (1, 0, 0). Plain float input."""
    q = np.asarray(_check_last(q, (4,), "q"), dtype=float)
    q = np.where(q[..., :1] < 0, -q, q)
    s = np.linalg.norm(q[..., 1:], axis=-1)
    angle = 2 * np.arctan2(s, q[..., 0])
    safe = np.where(s > 0, s, 1.0)[..., None]
    axis = np.where(s[..., None] > 0, q[..., 1:] / safe, np.array([1.0, 0.0, 0.0]))
    return axis, angle


def axis_angle_from_matrix(R):
    """(axis (..., 3) unit, angle (...) in [0, π]) of rotation matrices R (..., 3, 3), exact
    near angle 0 and near π (through Shepperd's quaternion; see ``rotvec_from_matrix``)."""
    return axis_angle_from_quaternion(quaternion_from_matrix(R))


# ---------------------------------------------------------------- Cayley map


def cayley(w):
    """Cayley map w (..., 3) → rotation matrix (..., 3, 3), scaled to agree with exp to 2nd order:

        cay(w) = (I - hat(w)/2)⁻¹ (I + hat(w)/2) = I + (4 hat(w) + 2 hat(w)²) / (4 + |w|²).

    Its rotation angle is 2 atan(|w|/2) about w/|w|, so cay(w) = exp(w) + O(|w|³).
    """
    w = _check_last(w, (3,), "w")
    K = hat(w)
    return np.eye(3) + (4 * K + 2 * (K @ K)) / (4 + _dot3(w, w))[..., None, None]


def quaternion_cayley(w):
    """The unit quaternion of cayley(w): (2, w) / sqrt(4 + |w|²)."""
    w = _check_last(w, (3,), "w")
    inv = 1 / np.sqrt(4 + _dot3(w, w))
    return _stack([2 * inv, w[..., 0] * inv, w[..., 1] * inv, w[..., 2] * inv])


def cayley_inverse(R):
    """w with cayley(w) = R: w = 2 tan(θ/2) axis = 4 vee(R) / (1 + tr R) (vee of the skew part).
    Undefined for half turns (1 + tr R = 0): ValueError."""
    R = _check_last(R, (3, 3), "R")
    d = 1 + R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    if np.any(_real(d) <= 0):
        raise ValueError(f"cayley_inverse is undefined for half turns: received 1 + trace(R) = {_real(d)}")
    return 4 * vee(R) / d[..., None]


def quaternion_cayley_inverse(q):
    """w with quaternion_cayley(w) = ±q: w = 2 q_v / q_w. Undefined for q_w = 0: ValueError."""
    q = _check_last(q, (4,), "q")
    if np.any(_real(q[..., 0]) == 0):
        raise ValueError(f"quaternion_cayley_inverse is undefined for w = 0: received w = {_real(q[..., 0])}")
    return 2 * q[..., 1:] / q[..., 0, None]


# ---------------------------------------------------------------- Euler angles

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _euler_axes(order):
    if (not isinstance(order, str) or len(order) != 3 or any(a not in _AXIS_INDEX for a in order)
            or order[0] == order[1] or order[1] == order[2]):
        raise ValueError(f"order must be one of {EULER_ORDERS} (lowercase; pass extrinsic=True "
                         f"for fixed axes), got {order!r}")
    return [_AXIS_INDEX[a] for a in order]


def elementary_matrix(axis, angle):
    """Rotation by angle (...) about coordinate axis 0, 1 or 2 (x, y, z) → (..., 3, 3)."""
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0, 1 or 2, got {axis!r}")
    angle = _array(angle)
    c, s = np.cos(angle), np.sin(angle)
    zero = angle * 0
    one = zero + 1
    i, j = (axis + 1) % 3, (axis + 2) % 3
    rows = [[zero] * 3 for _ in range(3)]
    rows[axis][axis] = one
    rows[i][i], rows[i][j] = c, -s
    rows[j][i], rows[j][j] = s, c
    return _matrix(rows)


def _elementary_quaternion(axis, angle):
    half = angle / 2
    c, s = np.cos(half), np.sin(half)
    zero = half * 0
    parts = [c, zero, zero, zero]
    parts[1 + axis] = s
    return _stack(parts)


def _sequence(angles, order, extrinsic, elementary, compose):
    axes = _euler_axes(order)
    angles = _check_last(angles, (3,), "angles")
    factors = [elementary(a, angles[..., k]) for k, a in enumerate(axes)]
    if extrinsic:  # fixed axes: the first turn is applied first, so it stands rightmost
        factors = factors[::-1]
    return compose(compose(factors[0], factors[1]), factors[2])


def matrix_from_euler(angles, order="xyz", extrinsic=False):
    """Rotation matrix (..., 3, 3) of Euler angles (..., 3) = (a, b, c) for an axis order.

    Intrinsic: R = R_{order[0]}(a) R_{order[1]}(b) R_{order[2]}(c);
    extrinsic: R = R_{order[2]}(c) R_{order[1]}(b) R_{order[0]}(a).
    """
    return _sequence(angles, order, extrinsic, elementary_matrix, np.matmul)


def quaternion_from_euler(angles, order="xyz", extrinsic=False):
    """Unit quaternion (..., 4) of Euler angles; same composition as ``matrix_from_euler``."""
    return _sequence(angles, order, extrinsic, _elementary_quaternion, multiply)


def euler_from_quaternion(q, order="xyz", extrinsic=False):
    """Euler angles (..., 3) of quaternions q (..., 4): inverse of ``quaternion_from_euler``.

    Bernardes & Viollet (2022), "Quaternion to Euler angles conversion: a direct, general and
    computationally efficient method", PLoS ONE 17(11): the angles of an extrinsic sequence
    (i, j, k) come from atan2 of permuted quaternion components, accurate at every attitude; an
    intrinsic sequence is the extrinsic one with axes and angles reversed.

    Ranges: first and third angle in [-π, π]; the middle one in [-π/2, π/2] for Tait-Bryan
    orders (three different axes) and in [0, π] for proper Euler orders (first = third axis).
    Gimbal lock (middle angle within 1e-14 of ±π/2, resp. of 0 or π): only the sum or the
    difference of the first and third angle is defined; the **third angle is set to 0** and
    the first carries the whole turn. Plain float input.
    """
    axes = _euler_axes(order)
    q = np.asarray(_check_last(q, (4,), "q"), dtype=float)
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2  # +1 for a cyclic (i, j, k), -1 otherwise
    w, qi, qj, qk = q[..., 0], q[..., 1 + i], q[..., 1 + j], q[..., 1 + k] * sign
    if proper:
        a, b, c, d = w, qi, qj, qk
    else:
        a, b, c, d = w - qj, qi + qk, qj + w, qk - qi

    middle = 2 * np.arctan2(np.hypot(c, d), np.hypot(a, b))
    half_sum = np.arctan2(b, a)
    half_diff = np.arctan2(d, c)
    first = half_sum - half_diff
    last = half_sum + half_diff
    # At lock only first + last (middle = 0) or last - first (middle = π) is defined. The user's
    # third angle is `last` for extrinsic sequences and `first` for intrinsic ones (reversed).
    lock_sum = np.abs(middle) <= _GIMBAL_LOCK_ANGLE
    lock_diff = np.abs(middle - np.pi) <= _GIMBAL_LOCK_ANGLE
    if extrinsic:
        first = np.where(lock_sum, 2 * half_sum, np.where(lock_diff, -2 * half_diff, first))
        last = np.where(lock_sum | lock_diff, 0.0, last)
    else:
        last = np.where(lock_sum, 2 * half_sum, np.where(lock_diff, 2 * half_diff, last))
        first = np.where(lock_sum | lock_diff, 0.0, first)
    if not proper:
        last = sign * last
        middle = middle - np.pi / 2
    angles = np.stack([first, middle, last], axis=-1)
    if not extrinsic:
        angles = angles[..., ::-1]
    # Wrap into [-π, π]; the middle angle is already in range.
    return np.where(angles > np.pi, angles - 2 * np.pi, np.where(angles < -np.pi, angles + 2 * np.pi, angles))


def euler_from_matrix(R, order="xyz", extrinsic=False):
    """Euler angles (..., 3) of rotation matrices R (..., 3, 3): inverse of ``matrix_from_euler``,
    through Shepperd's quaternion and ``euler_from_quaternion`` (ranges and gimbal lock there)."""
    return euler_from_quaternion(quaternion_from_matrix(R), order, extrinsic)


# ---------------------------------------------------------------- random rotations


def random_quaternion(rng_or_seed=None, size=None):
    """Unit quaternions uniformly distributed on S³ (so their rotations are Haar-uniform on SO(3)):
    normalized 4D standard normal samples. ``size`` None → shape (4,); int or tuple → (*size, 4).
    ``rng_or_seed``: a numpy Generator, an int seed or None."""
    rng = np.random.default_rng(rng_or_seed)
    shape = () if size is None else (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    g = rng.standard_normal(shape + (4,))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def random_matrix(rng_or_seed=None, size=None):
    """Haar-uniform rotation matrices, shape (3, 3) or (*size, 3, 3); see ``random_quaternion``."""
    return matrix_from_quaternion(random_quaternion(rng_or_seed, size))
