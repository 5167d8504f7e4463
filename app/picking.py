"""Ray picking against the drawn shapes, vectorized with numpy.

A world ray `x(t) = o + t d` is mapped into each instance's unit-mesh frame by the inverse of its
model matrix (app.renderer.model_matrices); the map is affine, so the parameter `t` of a hit is
the same in both frames and hits of different shapes compare directly. Unit primitives
(app.meshes): box [-0.5, 0.5]^3 (slabs), sphere |x| = 1, cylinder x² + z² = 1 with |y| <= 0.5,
capsule = radius-1 tube |y| <= h plus spheres at y = ±h; a hull is its face planes in the node
frame and a drawn mesh file its convex hull's (app.meshes.HULL_PLANES). Planes are not pickable
(the ground).
"""
import numpy as np

from app import meshes

_NO_HIT = np.inf


def _sphere(o, d, center_y=0.0):
    """Smallest t >= 0 with |o + t d - c| = 1, c = (0, center_y, 0); inf if none. o, d (N, 3)."""
    oc = o - np.array([0.0, 1.0, 0.0]) * np.asarray(center_y)[..., None]
    a = np.einsum("ni,ni->n", d, d)
    b = np.einsum("ni,ni->n", oc, d)
    c = np.einsum("ni,ni->n", oc, oc) - 1.0
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    t0, t1 = (-b - root) / a, (-b + root) / a
    t = np.where(t0 >= 0, t0, t1)
    return np.where((disc >= 0) & (t >= 0), t, _NO_HIT)


def _box(o, d):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = 1.0 / d
        t0, t1 = (-0.5 - o) * inv, (0.5 - o) * inv
    near = np.nanmax(np.minimum(t0, t1), axis=1)
    far = np.nanmin(np.maximum(t0, t1), axis=1)
    t = np.where(near >= 0, near, far)
    return np.where((near <= far) & (t >= 0), t, _NO_HIT)


def _tube(o, d, half_height):
    """Hits of the open tube x² + z² = 1, |y| <= half_height."""
    a = d[:, 0] ** 2 + d[:, 2] ** 2
    b = o[:, 0] * d[:, 0] + o[:, 2] * d[:, 2]
    c = o[:, 0] ** 2 + o[:, 2] ** 2 - 1.0
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        candidates = np.stack([(-b - root) / a, (-b + root) / a])
    y = o[:, 1] + candidates * d[:, 1]
    ok = (disc >= 0) & (a > 0) & (candidates >= 0) & (np.abs(y) <= half_height)
    return np.where(ok, candidates, _NO_HIT).min(axis=0)


def _disks(o, d, half_height):
    """Hits of the cap disks y = ±half_height, x² + z² <= 1."""
    hits = []
    for y_cap in (-half_height, half_height):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t = (y_cap - o[:, 1]) / d[:, 1]
            p = o + t[:, None] * d
        ok = np.isfinite(t) & (t >= 0) & (p[:, 0] ** 2 + p[:, 2] ** 2 <= 1.0)
        hits.append(np.where(ok, t, _NO_HIT))
    return np.minimum(*hits)


def unit_hits(kind, o, d, half_length=None):
    """Ray parameters of the first hit with each instance's unit shape (inf where missed)."""
    if kind == "box":
        return _box(o, d)
    if kind == "sphere":
        return _sphere(o, d)
    if kind == "cylinder":
        return np.minimum(_tube(o, d, 0.5), _disks(o, d, 0.5))
    if kind == "capsule":
        h = np.asarray(half_length, float)
        return np.minimum.reduce([_tube(o, d, h), _sphere(o, d, h), _sphere(o, d, -h)])
    if kind in meshes.HULL_PLANES and len(meshes.HULL_PLANES[kind]):     # a hull, or a mesh as its convex hull
        return _convex(o, d, meshes.HULL_PLANES[kind])
    return np.full(len(o), _NO_HIT)


def _convex(o, d, planes):
    """First hit with the convex solid n_f . x <= d_f for all faces f (Cyrus–Beck clipping: the ray
    enters at the last plane it crosses inwards and leaves at the first it crosses outwards)."""
    n, offset = planes[:, :3], planes[:, 3]
    towards = d @ n.T                       # (N, F): the ray's speed along each outward normal
    gap = offset[None, :] - o @ n.T         # >= 0 on the inside of each face
    with np.errstate(divide="ignore", invalid="ignore"):
        t = gap / towards
    enter = np.where(towards < 0, t, -np.inf).max(axis=1)
    leave = np.where(towards > 0, t, np.inf).min(axis=1)
    outside_parallel = ((towards == 0) & (gap < 0)).any(axis=1)
    hit = (enter <= leave) & (leave >= 0) & ~outside_parallel
    return np.where(hit, np.maximum(enter, 0.0), _NO_HIT)


def pick(origin_world, direction_world, instances):
    """The node index hit first by the ray, and its t; (None, inf) if none.

    `instances`: dict kind -> (node indices (N,), model matrices (N, 4, 4), half lengths (N,)).
    """
    best, best_t = None, _NO_HIT
    for kind, (index, models, half_length) in instances.items():
        if kind == "plane" or len(index) == 0:
            continue
        inverse = np.linalg.inv(models)
        o = np.einsum("nij,j->ni", inverse[:, :3, :3], origin_world) + inverse[:, :3, 3]
        d = np.einsum("nij,j->ni", inverse[:, :3, :3], direction_world)
        t = unit_hits(kind, o, d, half_length)
        i = int(np.argmin(t))
        if t[i] < best_t:
            best, best_t = int(index[i]), float(t[i])
    return best, best_t
