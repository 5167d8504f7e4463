"""Numba-compiled scalar kernels for 3-vectors, 3x3 matrices and rotations: the one home of the
compiled rotation helpers (used by `physics.dynamics.integrators` and `physics.dynamics.kinematics`).

They are the scalar versions of the vectorized formulas in `physics.math.rotation`, which states the
conventions (active rotations of column vectors, quaternions (w, x, y, z) with the Hamilton
product, `hat(w) x = w × x`) and which the tests compare them against.

Inside a kernel a vector is a 3-tuple of floats and a matrix a 3-tuple of rows. Most helpers are
`kernel(inline=True)` (numba's IR-level inlining), so a loop over bodies written with them
compiles to straight-line code that keeps its vectors in registers: no temporary arrays, no array
views (each view costs a reference count update), no allocation inside the loop. Called instead
of inlined, they compile faster but LLVM does not inline them back: the Lie–midpoint step took
1.7 to 2.2 times as long (docs/benchmarks.md, "Start-up"). `load*`/`store*` move row `i` of a
batch array in and out.
"""
import numpy as np
from physics.core.compiled import kernel

from physics.math.rotation import cross_components

# Below this angle² the sinc-type factors use their Taylor series in angle², as physics.math.rotation
# does: terms through angle⁸ leave a truncation error below 1e-17 at angle 0.1.
_SERIES_ANGLE2 = 1e-2


# ---------------------------------------------------------------- batch rows in and out

@kernel(inline=True)
def load3(a, i):
    return (a[i, 0], a[i, 1], a[i, 2])


@kernel(inline=True)
def store3(a, i, v):
    a[i, 0], a[i, 1], a[i, 2] = v[0], v[1], v[2]


@kernel(inline=True)
def load33(a, i):
    """a[i] as a tuple of rows."""
    return ((a[i, 0, 0], a[i, 0, 1], a[i, 0, 2]),
            (a[i, 1, 0], a[i, 1, 1], a[i, 1, 2]),
            (a[i, 2, 0], a[i, 2, 1], a[i, 2, 2]))


@kernel(inline=True)
def store33(a, i, m):
    a[i, 0, 0], a[i, 0, 1], a[i, 0, 2] = m[0][0], m[0][1], m[0][2]
    a[i, 1, 0], a[i, 1, 1], a[i, 1, 2] = m[1][0], m[1][1], m[1][2]
    a[i, 2, 0], a[i, 2, 1], a[i, 2, 2] = m[2][0], m[2][1], m[2][2]


# ---------------------------------------------------------------- vectors

@kernel(inline=True)
def add(u, v):
    return (u[0] + v[0], u[1] + v[1], u[2] + v[2])


@kernel(inline=True)
def sub(u, v):
    return (u[0] - v[0], u[1] - v[1], u[2] - v[2])


@kernel(inline=True)
def mul(s, v):
    return (s * v[0], s * v[1], s * v[2])


@kernel(inline=True)
def axpy(s, u, v):
    """s u + v"""
    return (s * u[0] + v[0], s * u[1] + v[1], s * u[2] + v[2])


@kernel(inline=True)
def hadamard(u, v):
    """Componentwise u v (a diagonal matrix, such as principal moments of inertia, times v)."""
    return (u[0] * v[0], u[1] * v[1], u[2] * v[2])


@kernel(inline=True)
def dot(u, v):
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


# u × v = hat(u) v, the formula of physics.math.rotation (stated once there)
cross = kernel(inline=True)(cross_components)


@kernel(inline=True)
def is_zero(v):
    return v[0] == 0.0 and v[1] == 0.0 and v[2] == 0.0


# ---------------------------------------------------------------- 3x3 matrices

@kernel(inline=True)
def matvec(m, v):
    """m v"""
    return (m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2],
            m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2],
            m[2][0] * v[0] + m[2][1] * v[1] + m[2][2] * v[2])


@kernel(inline=True)
def matvec_t(m, v):
    """m^T v"""
    return (m[0][0] * v[0] + m[1][0] * v[1] + m[2][0] * v[2],
            m[0][1] * v[0] + m[1][1] * v[1] + m[2][1] * v[2],
            m[0][2] * v[0] + m[1][2] * v[1] + m[2][2] * v[2])


@kernel(inline=True)
def matmul(a, b):
    """a b, row by row: row r of a b is b^T (row r of a)."""
    return (matvec_t(b, a[0]), matvec_t(b, a[1]), matvec_t(b, a[2]))


@kernel(inline=True)
def transpose(a):
    return ((a[0][0], a[1][0], a[2][0]), (a[0][1], a[1][1], a[2][1]), (a[0][2], a[1][2], a[2][2]))


@kernel(inline=True)
def matmul_tn(a, b):
    """a^T b"""
    return matmul(transpose(a), b)


@kernel(inline=True)
def solve3(m, r):
    """m^-1 r by Cramer's rule (for the near-identity, well-conditioned systems of the integrators)."""
    c00 = m[1][1] * m[2][2] - m[1][2] * m[2][1]
    c01 = m[1][2] * m[2][0] - m[1][0] * m[2][2]
    c02 = m[1][0] * m[2][1] - m[1][1] * m[2][0]
    c10 = m[0][2] * m[2][1] - m[0][1] * m[2][2]
    c11 = m[0][0] * m[2][2] - m[0][2] * m[2][0]
    c12 = m[0][1] * m[2][0] - m[0][0] * m[2][1]
    c20 = m[0][1] * m[1][2] - m[0][2] * m[1][1]
    c21 = m[0][2] * m[1][0] - m[0][0] * m[1][2]
    c22 = m[0][0] * m[1][1] - m[0][1] * m[1][0]
    inv_det = 1.0 / (m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02)
    return ((c00 * r[0] + c10 * r[1] + c20 * r[2]) * inv_det,
            (c01 * r[0] + c11 * r[1] + c21 * r[2]) * inv_det,
            (c02 * r[0] + c12 * r[1] + c22 * r[2]) * inv_det)


# ---------------------------------------------------------------- rotations

@kernel(inline=True)
def rotation_from_coefficients(x, a, b):
    """1 + a hat(x) + b hat(x)²: the shape of both the exponential and the Cayley map."""
    x0, x1, x2 = x
    return ((1.0 - b * (x1 * x1 + x2 * x2), -a * x2 + b * x0 * x1, a * x1 + b * x0 * x2),
            (a * x2 + b * x0 * x1, 1.0 - b * (x0 * x0 + x2 * x2), -a * x0 + b * x1 * x2),
            (-a * x1 + b * x0 * x2, a * x0 + b * x1 * x2, 1.0 - b * (x0 * x0 + x1 * x1)))


@kernel(inline=True)
def sinc2(theta2):
    """sin θ / θ as a function of θ² (physics.math.rotation._sinc: Taylor series below _SERIES_ANGLE2)."""
    if theta2 < _SERIES_ANGLE2:
        t = theta2
        return 1.0 - t / 6.0 * (1.0 - t / 20.0 * (1.0 - t / 42.0 * (1.0 - t / 72.0)))
    theta = np.sqrt(theta2)
    return np.sin(theta) / theta


@kernel(inline=True)
def exp_so3(x):
    """exp(hat(x)) by Rodrigues' formula (physics.math.rotation.exp_so3; "Numerical Integration for
    Rotational Dynamics", "Evaluating the Exponential Map"): 1 + (sin θ/θ) hat(x) + ((1 - cos θ)/θ²)
    hat(x)², θ = |x|, with (1 - cos θ)/θ² = ½ (sin(θ/2)/(θ/2))², free of cancellation."""
    theta2 = dot(x, x)
    half = sinc2(0.25 * theta2)
    return rotation_from_coefficients(x, sinc2(theta2), 0.5 * half * half)


@kernel(inline=True)
def cayley(x):
    """cay(x) = (1 - hat(x)/2)^-1 (1 + hat(x)/2) = 1 + (hat(x) + hat(x)²/2) / (1 + |x|²/4)
    (physics.math.rotation.cayley)."""
    a = 1.0 / (1.0 + 0.25 * dot(x, x))
    return rotation_from_coefficients(x, a, 0.5 * a)


@kernel(inline=True)
def quaternion_multiply(p, q):
    """The Hamilton product p q (physics.math.rotation.multiply): M(p q) = M(p) M(q)."""
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return (pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw)


@kernel(inline=True)
def matrix_from_quaternion(q):
    """The rotation of q = (w, x, y, z), not necessarily unit (physics.math.rotation.matrix_from_quaternion):
    R = 1 + s [[-(y²+z²), xy - wz, xz + wy], [xy + wz, -(x²+z²), yz - wx], [xz - wy, yz + wx, -(x²+y²)]],
    s = 2/|q|²."""
    w, x, y, z = q
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return ((1.0 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)),
            (s * (x * y + w * z), 1.0 - s * (x * x + z * z), s * (y * z - w * x)),
            (s * (x * z - w * y), s * (y * z + w * x), 1.0 - s * (x * x + y * y)))


@kernel(inline=True)
def quaternion_from_matrix(m):
    """Unit quaternion (w >= 0) of a rotation matrix, Shepperd's method (physics.math.rotation.quaternion_from_matrix):
    of the rows of the symmetric 4 q q^T, whose entries are linear in m, normalize the one with the
    largest diagonal entry (|q_k| >= 1/2), so half turns lose no more than a few ulps."""
    t = m[0][0] + m[1][1] + m[2][2]
    wx, wy, wz = m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1]
    xy, xz, yz = m[0][1] + m[1][0], m[0][2] + m[2][0], m[1][2] + m[2][1]
    d0, d1, d2, d3 = 1.0 + t, 1.0 + 2.0 * m[0][0] - t, 1.0 + 2.0 * m[1][1] - t, 1.0 + 2.0 * m[2][2] - t
    if d0 >= d1 and d0 >= d2 and d0 >= d3:
        q = (d0, wx, wy, wz)
    elif d1 >= d2 and d1 >= d3:
        q = (wx, d1, xy, xz)
    elif d2 >= d3:
        q = (wy, xy, d2, yz)
    else:
        q = (wz, xz, yz, d3)
    s = 1.0 / np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if q[0] < 0.0:
        s = -s
    return (q[0] * s, q[1] * s, q[2] * s, q[3] * s)


@kernel(inline=True)
def exp_truncated_matrix(x):
    """The rotation of the normalized third-order quaternion exponential of (0, x/2)
    (physics.math.rotation.quaternion_exp_truncated; "Numerical Integration for Rotational Dynamics"):
    exp(X) ≈ ((1 - |X|²/2) + (1 - |X|²/6) X) / norm, X = x/2."""
    t = 0.25 * dot(x, x)
    a = 1.0 - 0.5 * t
    b = 0.5 * (1.0 - t / 6.0)
    return matrix_from_quaternion((a, b * x[0], b * x[1], b * x[2]))


@kernel(inline=True)
def magnus(omega, alpha, h, order):
    """The Magnus vector for dR/dt = hat(omega + alpha t) R over [0, h], truncated after
    `order` terms ("Numerical Integration for Rotational Dynamics"; the vectorized
    physics.dynamics.kinematics.magnus_vector):
    Omega1 = (omega + omega') h / 2, Omega2 = alpha × omega h³/12, Omega3 = alpha × (alpha × omega) h⁵/240."""
    out = mul(h, axpy(0.5 * h, alpha, omega))
    if order >= 2:
        c = cross(alpha, omega)
        out = axpy(h * h * h / 12.0, c, out)
        if order >= 3:
            out = axpy(h ** 5 / 240.0, cross(alpha, c), out)
    return out


@kernel(inline=True)
def rotvec_from_quaternion(q):
    """The rotation vector, angle in [0, π], of q = (w, x, y, z), any nonzero norm
    (physics.math.rotation.rotvec_from_quaternion): with q → −q where w < 0, r = (2 atan2(|v|, w) / |v|) v,
    below |v|²/w² = _SERIES_ANGLE2 the factor's series (2/w) atan(u)/u through u⁸."""
    w, x, y, z = q
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s2 = x * x + y * y + z * z
    if s2 < _SERIES_ANGLE2 * w * w:
        u2 = s2 / (w * w)
        factor = 2.0 / w * (1.0 - u2 * (1.0 / 3.0 - u2 * (1.0 / 5.0 - u2 * (1.0 / 7.0 - u2 / 9.0))))
    else:
        s = np.sqrt(s2)
        factor = 2.0 * np.arctan2(s, w) / s
    return (factor * x, factor * y, factor * z)


@kernel(inline=True)
def rotvec_from_matrix(m):
    """log of a rotation matrix as a rotation vector (physics.math.rotation.rotvec_from_matrix)."""
    return rotvec_from_quaternion(quaternion_from_matrix(m))


@kernel(inline=True)
def rotate_about(k, angle, v):
    """v turned by `angle` about the unit axis k (Rodrigues: v cos θ + (k × v) sin θ + k (k·v)(1 − cos θ))."""
    c, s = np.cos(angle), np.sin(angle)
    kv, kxv = dot(k, v) * (1.0 - c), cross(k, v)
    return (v[0] * c + kxv[0] * s + k[0] * kv, v[1] * c + kxv[1] * s + k[1] * kv, v[2] * c + kxv[2] * s + k[2] * kv)


@kernel(inline=True)
def angle_about(k, v, w):
    """The angle θ about the unit axis k that turns v's part ⊥ k onto w's: atan2(k·(v × w), v·w − (k·v)(k·w))."""
    return np.arctan2(dot(k, cross(v, w)), dot(v, w) - dot(k, v) * dot(k, w))


@kernel(inline=True)
def tangent_basis(n):
    """Two unit tangents (t1, t2) with (n, t1, t2) right-handed (physics.constraints.constraints.tangent_basis;
    Duff et al., "Building an Orthonormal Basis, Revisited", 2017)."""
    sign = 1.0 if n[2] >= 0.0 else -1.0
    a = -1.0 / (sign + n[2])
    b = n[0] * n[1] * a
    return ((1.0 + sign * n[0] * n[0] * a, sign * b, -sign * n[0]), (b, sign + n[1] * n[1] * a, -n[1]))
