"""Small vector helpers and the closest points of shape cores: the floor the narrow phase
(`physics.collision.collision`), box–box (`physics.collision.box_box`), GJK/EPA (`physics.collision.gjk_epa`) and the persistent
manifolds (`physics.collision.manifold`) share.

Conventions: vectors are float64 arrays of 3 in the world frame unless a name says otherwise; R is a
shape's 3x3 rotation (its frame to the world), c its centre; box half extents h, a cylinder's or
capsule's radius r and half height h along its local y (`physics.model.shapes`). Each is written out in
scalars: numba's `@` on 3x3 arrays calls the BLAS, about a microsecond a call at this size.
"""
import numpy as np

from physics.core.compiled import kernel
from physics.math.rotation_kernels import cross

EPS = 1e-12


# ----------------------------------------------------------------------------- small vector helpers
@kernel
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel
def rot(R, x):
    """R x for a 3x3 R (written out: numba's `@` calls BLAS, ~1 us a call at this size)."""
    return np.array([R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2], R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2],
                     R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2]])


@kernel
def rot_t(R, x):
    """R^T x for a 3x3 R."""
    return np.array([R[0, 0] * x[0] + R[1, 0] * x[1] + R[2, 0] * x[2], R[0, 1] * x[0] + R[1, 1] * x[1] + R[2, 1] * x[2],
                     R[0, 2] * x[0] + R[1, 2] * x[1] + R[2, 2] * x[2]])


@kernel
def unit(v, fallback):
    n = np.sqrt(dot(v, v))
    if n < EPS:
        return fallback.copy()
    return v / n


@kernel
def perpendicular(u):
    """A unit vector perpendicular to the unit vector u."""
    if abs(u[0]) < 0.57735:
        return unit(np.array(cross(u, (1.0, 0.0, 0.0))), u)
    return unit(np.array(cross(u, (0.0, 1.0, 0.0))), u)


@kernel
def emit(out_p, out_n, out_d, out_f, k, pa, pb, n, depth, feature):
    """Store contact k: surface points pa on a, pb on b, normal n (a -> b), depth."""
    out_p[k] = 0.5 * (pa + pb)
    out_n[k] = n
    out_d[k] = depth
    out_f[k] = feature


# ----------------------------------------------------------------------------- point cores
@kernel
def segment_closest(p, c, u, h):
    """Parameter t in [-h, h] of the point c + t u closest to p (u unit)."""
    t = dot(p - c, u)
    return min(max(t, -h), h)


@kernel
def closest_on_box(p, c, R, h):
    """(q, inside, exit_normal, exit_depth): closest point of the solid box to p, or how p leaves it."""
    # scalars, not small arrays: this runs for every sphere–box pair and manifold point
    x0, x1, x2 = p[0] - c[0], p[1] - c[1], p[2] - c[2]
    l0 = R[0, 0] * x0 + R[1, 0] * x1 + R[2, 0] * x2
    l1 = R[0, 1] * x0 + R[1, 1] * x1 + R[2, 1] * x2
    l2 = R[0, 2] * x0 + R[1, 2] * x1 + R[2, 2] * x2
    k0, k1, k2 = min(max(l0, -h[0]), h[0]), min(max(l1, -h[1]), h[1]), min(max(l2, -h[2]), h[2])
    if k0 != l0 or k1 != l1 or k2 != l2:
        q = np.empty(3)
        for i in range(3):
            q[i] = c[i] + (R[i, 0] * k0 + R[i, 1] * k1 + R[i, 2] * k2)
        return q, False, np.zeros(3), 0.0
    axis, best, along = 0, h[0] - abs(l0), l0
    if h[1] - abs(l1) < best:
        axis, best, along = 1, h[1] - abs(l1), l1
    if h[2] - abs(l2) < best:
        axis, best, along = 2, h[2] - abs(l2), l2
    sign = 1.0 if along >= 0 else -1.0
    return p, True, sign * R[:, axis], best


@kernel
def closest_on_cylinder(p, c, R, r, h):
    local = rot_t(R, p - c)
    rho = np.sqrt(local[0] ** 2 + local[2] ** 2)
    radial = np.array([local[0], 0.0, local[2]]) / rho if rho > EPS else np.array([1.0, 0.0, 0.0])
    if rho <= r and abs(local[1]) <= h:
        side, cap = r - rho, h - abs(local[1])
        if side < cap:
            return p, True, rot(R, radial), side
        return p, True, (1.0 if local[1] >= 0 else -1.0) * R[:, 1], cap
    q = np.array([min(rho, r) * radial[0], min(max(local[1], -h), h), min(rho, r) * radial[2]])
    return c + rot(R, q), False, np.zeros(3), 0.0


@kernel(inline=True)
def segment_parameters(b, c, f, ha, hb):
    """Parameters (s, t) in [-ha, ha] x [-hb, hb] of the closest points ca + s ua, cb + t ub of two
    segments with unit directions, from b = ua . ub, c = ua . (ca - cb), f = ub . (ca - cb)
    (Ericson 5.1.9; nearly parallel segments, 1 - b² <= 1e-10, take s = 0)."""
    denom = 1.0 - b * b
    s = min(max((b * f - c) / denom, -ha), ha) if denom > 1e-10 else 0.0
    t = b * s + f
    if t < -hb or t > hb:
        t = min(max(t, -hb), hb)
        s = min(max(b * t - c, -ha), ha)
    return s, t
