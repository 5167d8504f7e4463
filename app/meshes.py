"""Unit meshes for the shape types, generated with numpy.

Every mesh is `(vertices (V, 7) float32, indices (F*3,) uint32)`; a vertex is
`position_shape (3), normal_shape (3), cap (1)`, in the shape's own frame (= the node frame).
Triangles wind counter-clockwise seen from outside.

Sizes, so that the renderer scales a unit mesh by the scene's numbers (docs/scene-format.md):
- box: extents 1 (half-extent 0.5); scaled by `size` (full extents).
- sphere: radius 1; scaled by `radius`.
- cylinder: radius 1, height 1 along y (y in [-0.5, 0.5]); scaled by (radius, height, radius).
- capsule: two unit hemispheres, `cap` = ±1 on each; the vertex shader moves a vertex by
  `cap * half_length` along y after scaling by the radius, so one mesh serves every
  radius/length ratio.
- plane: a square of side 1 in the xz plane, normal +y; scaled to a large extent.
- hull: its own mesh per vertex list (`hull_mesh`), in the node frame, unscaled.

Two levels of detail: `mesh(kind, coarse=True)` is the same unit shape with fewer segments
(a box and a plane are already minimal). The software renderer is bound by vertex work when
thousands of small instances are on screen, and a shape a few pixels wide looks the same with
a third of the triangles (app.renderer chooses the level per instance by its size on screen).
"""
import hashlib

import numpy as np

from physics.core.files import read_regular
from physics.io.mesh_files import FILE_BYTES_MAX, file_problem, read_mesh
from physics.model.hull import convex_hull

SHAPE_TYPES = ("box", "sphere", "cylinder", "capsule", "plane")
COARSE_TYPES = ("sphere", "cylinder", "capsule")  # the types whose coarse mesh has fewer triangles
# Half extents of each unit mesh's bounding box (a capsule's y grows by its half length): the
# renderer's point level draws a shape a few pixels wide as this box's projected rectangle.
HALF_EXTENTS = {"box": (0.5, 0.5, 0.5), "sphere": (1.0, 1.0, 1.0), "cylinder": (1.0, 0.5, 1.0),
                "capsule": (1.0, 1.0, 1.0), "plane": (0.5, 0.0, 0.5)}


def _pack(positions, normals, indices, cap=None):
    cap = np.zeros(len(positions)) if cap is None else cap
    vertices = np.column_stack([positions, normals, cap]).astype(np.float32)
    return vertices, np.asarray(indices, dtype=np.uint32).ravel()


def box():
    """Unit cube [-0.5, 0.5]^3 with flat normals: 6 faces x 4 vertices."""
    positions, normals, indices = [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            # u, v span the face with u x v = n: the quad below is counter-clockwise from outside
            u = np.roll(np.eye(3)[axis], 1)
            v = np.cross(n, u)
            base = len(positions)
            for du, dv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                positions.append(0.5 * (n + du * u + dv * v))
                normals.append(n)
            indices += [base, base + 1, base + 2, base, base + 2, base + 3]
    return _pack(np.array(positions), np.array(normals), indices)


def _grid_indices(rows, cols):
    """Two triangles per cell of a (rows+1) x (cols+1) vertex grid (row-major)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = (r * (cols + 1) + c).ravel()
    b, d = a + 1, a + cols + 1
    return np.column_stack([a, d, b, b, d, d + 1]).ravel()


def _sphere_grid(theta, segments):
    """Vertices of a latitude/longitude grid at polar angles `theta` (from +y)."""
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    # phi runs so that the grid winds counter-clockwise seen from outside
    n = np.stack([np.sin(t) * np.sin(p), np.cos(t), np.sin(t) * np.cos(p)], axis=-1).reshape(-1, 3)
    return n


def sphere(rings=16, segments=24):
    """Unit sphere, a latitude/longitude grid."""
    n = _sphere_grid(np.linspace(0.0, np.pi, rings + 1), segments)
    return _pack(n, n, _grid_indices(rings, segments))


def capsule(rings=16, segments=24):
    """Two unit hemispheres joined by a tube; cap = +1 on the upper half, -1 on the lower."""
    half = rings // 2
    theta = np.concatenate([np.linspace(0.0, np.pi / 2, half + 1), np.linspace(np.pi / 2, np.pi, half + 1)])
    n = _sphere_grid(theta, segments)
    cap = np.where(np.repeat(np.arange(len(theta)), segments + 1) <= half, 1.0, -1.0)
    return _pack(n, n, _grid_indices(len(theta) - 1, segments), cap)


def cylinder(segments=24):
    """Unit cylinder: radius 1, y in [-0.5, 0.5]; a side tube and two flat caps."""
    phi = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    ring = np.column_stack([np.sin(phi), np.zeros_like(phi), np.cos(phi)])
    top, bottom = ring + [0, 0.5, 0], ring - [0, 0.5, 0]
    side_p = np.concatenate([top, bottom])
    side_n = np.concatenate([ring, ring])
    side_i = _grid_indices(1, segments)
    k = segments + 1
    up, down = np.tile([0.0, 1.0, 0.0], (k, 1)), np.tile([0.0, -1.0, 0.0], (k, 1))
    cap_p = np.concatenate([[[0, 0.5, 0]], top, [[0, -0.5, 0]], bottom])
    cap_n = np.concatenate([up[:1], up, down[:1], down])
    j = np.arange(segments)
    top_i = np.column_stack([np.zeros(segments), 1 + j, 2 + j])
    bottom_i = np.column_stack([np.full(segments, k + 1), k + 3 + j, k + 2 + j])
    base = len(side_p)
    positions = np.concatenate([side_p, cap_p])
    normals = np.concatenate([side_n, cap_n])
    indices = np.concatenate([side_i, (np.concatenate([top_i, bottom_i]) + base).ravel()])
    return _pack(positions, normals, indices)


def plane():
    """Unit square in the xz plane, normal +y."""
    p = np.array([[-0.5, 0, -0.5], [-0.5, 0, 0.5], [0.5, 0, 0.5], [0.5, 0, -0.5]])
    n = np.tile([0.0, 1.0, 0.0], (4, 1))
    return _pack(p, n, [0, 1, 2, 0, 2, 3])


def mesh(shape_type, coarse=False):
    """The unit mesh of a shape type (one of SHAPE_TYPES), full or coarse detail."""
    builders = {
        "box": box, "plane": plane,
        "sphere": (lambda: sphere(6, 8)) if coarse else sphere,
        "capsule": (lambda: capsule(6, 8)) if coarse else capsule,
        "cylinder": (lambda: cylinder(8)) if coarse else cylinder,
    }
    if shape_type not in builders:
        raise ValueError(f"unknown shape type {shape_type!r}; expected one of {SHAPE_TYPES}")
    return builders[shape_type]()


# --- meshes read from files (a scene node's `mesh`: docs/scene-format.md) ----------------------------

FILE_KIND = "mesh:"          # a file mesh's kind: FILE_KIND + its path and scale
_FILES = {}                  # (path, scale) -> (kind, vertices, indices, bounding radius)


def file_mesh(path, scale):
    """(kind, vertices (V, 7) float32, indices, bounding radius) of a mesh file (STL, OBJ, DAE, ...
    read by trimesh), its vertices multiplied by `scale` (3,), in the node frame. Flat-shaded (three
    vertices per triangle, the face normal) and two-sided (each triangle also wound the other way
    with the opposite normal): files from robot packages do not all wind outwards, and the renderer
    culls back faces. Read once per (path, scale); the kind's bounding half extents join
    HALF_EXTENTS for the point level. The file passes the checks a collision mesh passes
    (physics.io.mesh_files.file_problem: a regular file within the budgets, no archive), else
    ValueError; raises what trimesh raises for an unreadable file."""
    key = (str(path), tuple(float(s) for s in scale))
    if key not in _FILES:
        _, problem = file_problem(key[0])       # a special file, an archive, past the budgets: never read
        if problem is not None:
            raise ValueError(f"{key[0]}: {problem}")
        corners = _binary_stl(key[0])
        if corners is None:     # any other format (and ASCII STL): trimesh, imported only then (0.3 s)
            mesh = read_mesh(key[0], checked=True)
            corners = np.asarray(mesh.vertices, float)[np.asarray(mesh.faces, np.int64)]
        corners = corners * np.asarray(key[1])   # (F, 3, 3)
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        keep = length[:, 0] > 0
        corners, normals = corners[keep], normals[keep] / length[keep]
        if not len(corners):
            raise ValueError("no triangles in the file")
        front = corners.reshape(-1, 3)
        back = corners[:, ::-1].reshape(-1, 3)
        positions = np.concatenate([front, back])
        shading = np.concatenate([np.repeat(normals, 3, axis=0), -np.repeat(normals, 3, axis=0)])
        vertices, indices = _pack(positions, shading, np.arange(len(positions)))
        kind = f"{FILE_KIND}{key[0]}@{key[1]}"
        HALF_EXTENTS[kind] = tuple(float(e) for e in np.abs(positions).max(axis=0))
        HULL_PLANES[kind] = _hull_planes(front)     # picked as its convex hull (app.picking)
        radius = float(np.linalg.norm(positions, axis=1).max())
        _FILES[key] = (kind, vertices, indices, radius)
    return _FILES[key]


HULL_KIND = "hull:"          # a hull shape's kind: HULL_KIND + a digest of its vertices
HULL_PLANES = {}             # hull or mesh kind -> its (convex hull's) face planes (F, 4) rows (n, d), n . x <= d
                             # inside (app.picking: a mesh is picked as its convex hull)


def _hull_planes(points):
    """The face planes (F, 4) rows (n, d), n . x <= d inside, of the convex hull of `points` (P, 3),
    by Qhull (scipy); none (0, 4) for points spanning no volume (a flat mesh: not pickable)."""
    from scipy.spatial import ConvexHull, QhullError     # here: scipy takes a second to import
    try:
        equations = ConvexHull(np.unique(np.asarray(points, float), axis=0)).equations   # n . x + e <= 0 inside
    except (QhullError, ValueError):
        return np.zeros((0, 4))
    return np.c_[equations[:, :3], -equations[:, 3]]
_HULLS = {}                  # vertices' bytes -> (kind, vertices, indices, bounding radius)


def hull_mesh(vertices):
    """(kind, vertices (V, 7) float32, indices, bounding radius) of a hull shape's triangles in the
    node frame: the convex hull of its `vertices` (physics.model.hull, Qhull's triangles wound outwards),
    flat-shaded. Made once per vertex list; the kind's half extents join HALF_EXTENTS and its
    planes HULL_PLANES (ray picking)."""
    points = np.asarray(vertices, float)
    key = points.tobytes()
    if key not in _HULLS:
        hull = convex_hull(points)
        corners = hull.vertices[hull.triangles]     # (T, 3, 3), counter-clockwise from outside
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        positions = corners.reshape(-1, 3)
        packed, indices = _pack(positions, np.repeat(normals, 3, axis=0), np.arange(len(positions)))
        kind = HULL_KIND + hashlib.sha1(key).hexdigest()[:16]
        HALF_EXTENTS[kind] = tuple(float(e) for e in np.abs(positions).max(axis=0))
        HULL_PLANES[kind] = hull.planes
        _HULLS[key] = (kind, packed, indices, float(np.linalg.norm(positions, axis=1).max()))
    return _HULLS[key]


_STL_TRIANGLE = np.dtype([("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])


def _binary_stl(path):
    """The triangles (F, 3, 3) of a binary STL file read by numpy (80-byte header, a uint32 count,
    then 50 bytes a triangle: normal, three corners, attribute), or None if the file is not one
    (its size must be 84 + 50 F): a robot's meshes load in milliseconds, inside a frame."""
    if not str(path).lower().endswith(".stl"):
        return None
    data = read_regular(path, FILE_BYTES_MAX)
    if len(data) < 84:
        return None
    count = int(np.frombuffer(data, "<u4", 1, 80)[0])
    if len(data) != 84 + 50 * count:
        return None
    return np.frombuffer(data, _STL_TRIANGLE, count, 84)["corners"].astype(float)
