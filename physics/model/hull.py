"""Convex hulls: the vertices, triangles and face planes of a convex collision shape, from points.

The hull is Qhull's (scipy.spatial.ConvexHull, the library trimesh's `convex_hull` calls too). A
hull keeps at most HULL_VERTICES_MAX vertices: GJK and EPA ask a shape for its support point
(the vertex furthest along a direction) about a hundred times per pair and step, and a hull
answers by scanning every vertex, so the vertex count is the cost of a hull pair; 64 vertices
keep a hull pair within a few times a cylinder's (a robot link's mesh has hundreds of hull
vertices, mostly on fillets a collision does not feel). A hull of more vertices is simplified
greedily: starting from the extreme vertices along ±x, ±y, ±z, the vertex furthest outside the
hull of those kept so far is added until the bound is reached (the "quickhull" order of
insertion), so the simplified hull lies inside the exact one and `simplification_error` says by
how much (the largest distance of a dropped vertex outside it).

The face planes (n, d) with n . x <= d inside (unit outward n) bound the hull; coplanar triangles
share one plane. Vertex order is the input's: the hull of a hull's vertices is the same list, so
feature ids (vertex indices) survive a save and reload.
"""
from dataclasses import dataclass

import numpy as np

HULL_VERTICES_MAX = 64
HULL_FACES_MAX = 2 * HULL_VERTICES_MAX - 4      # Euler: a triangulated hull of V vertices has 2V - 4 triangles
# one row of a hull in the narrow phase (physics.model.shapes.hull_row): radius, V, F, scale, vertices, planes
HULL_ROW = 4 + 3 * HULL_VERTICES_MAX + 4 * HULL_FACES_MAX
HULL_PLANES = 4 + 3 * HULL_VERTICES_MAX          # where the planes start in a row
_PLANE_DECIMALS = 9                               # planes equal to 1e-9 are one face

__all__ = ["Hull", "convex_hull", "HULL_VERTICES_MAX", "HULL_ROW", "HULL_PLANES"]


@dataclass(frozen=True)
class Hull:
    """vertices (V, 3), triangles (T, 3) int indices into them wound outwards, planes (F, 4) rows
    (n, d) with n . x <= d inside, and the simplification error (m, 0 when no vertex was dropped)."""

    vertices: np.ndarray
    triangles: np.ndarray
    planes: np.ndarray
    simplification_error: float = 0.0


def _qhull(points):
    from scipy.spatial import ConvexHull, QhullError     # here: scipy takes a second to import, a hull needs it
    try:
        return ConvexHull(points)
    except QhullError:
        raise ValueError("the points span no volume (fewer than 4 points off one plane)") from None


def convex_hull(points, limit=HULL_VERTICES_MAX):
    """The convex hull of points (P, 3) as a `Hull` of at most `limit` vertices (module docstring).
    Raises ValueError for non-finite points or points that span no volume."""
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3 or len(points) < 4:
        raise ValueError(f"got points of shape {points.shape}; expected at least 4 rows of 3 numbers")
    if not np.all(np.isfinite(points)):
        raise ValueError("the points are not all finite numbers")
    hull = _qhull(points)
    vertices = points[np.sort(hull.vertices)]
    error = 0.0
    if len(vertices) > limit:
        vertices, error = _simplified(vertices, limit)
    hull = _qhull(vertices)
    used = np.sort(hull.vertices)
    if len(used) != len(vertices):  # a vertex left inside (points on a face): drop it, keep the order
        vertices = vertices[used]
        hull = _qhull(vertices)
    triangles = np.asarray(hull.simplices, np.int64)
    # wind each triangle outwards: its normal along the facet's outward normal
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0
    triangles[flip] = triangles[flip][:, ::-1]
    # Qhull's equations: n . x + offset <= 0 inside, unit n
    planes = np.column_stack([hull.equations[:, :3], -hull.equations[:, 3]])
    _, first = np.unique(np.round(planes, _PLANE_DECIMALS), axis=0, return_index=True)
    planes = planes[np.sort(first)]
    return Hull(vertices, triangles, planes, float(error))


def _simplified(vertices, limit):
    """At most `limit` of the hull vertices, greedily (module docstring), and the largest distance
    of a dropped vertex outside their hull."""
    keep = []
    for axis in range(3):
        for pick in (np.argmin, np.argmax):
            i = int(pick(vertices[:, axis]))
            if i not in keep:
                keep.append(i)
    while True:
        hull = _qhull(vertices[keep]) if len(keep) >= 4 else None
        if hull is None:   # the six extremes are coplanar or repeated: the furthest from their centre
            outside = np.linalg.norm(vertices - vertices[keep].mean(axis=0), axis=1)
        else:
            outside = (vertices @ hull.equations[:, :3].T + hull.equations[:, 3]).max(axis=1)
        outside[keep] = -np.inf
        i = int(np.argmax(outside))
        if len(keep) >= limit or outside[i] <= 0:
            return vertices[np.sort(keep)], max(float(outside[i]), 0.0) if hull is not None else 0.0
        keep.append(i)


def mass_properties(vertices, mass):
    """(volume, centre of mass (3,), inertia tensor (3, 3) about the centre of mass) of the solid
    hull of `vertices` with uniform density and total `mass`: trimesh's integration over the hull's
    triangles (the divergence theorem, Eberly's polyhedral mass properties). The tensor about the
    vertices' origin adds m (|c|² 1 - c cᵀ) (parallel axes)."""
    import trimesh      # here: a second to import, and only a hull needs it
    hull = convex_hull(vertices)
    mesh = trimesh.Trimesh(hull.vertices, hull.triangles, process=False)
    volume = float(mesh.volume)
    if not volume > 0:
        raise ValueError("the hull has no volume")
    mesh.density = mass / volume
    return volume, np.asarray(mesh.center_mass, float), np.asarray(mesh.moment_inertia, float)
