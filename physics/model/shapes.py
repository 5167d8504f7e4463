"""Collision shapes: a structure of arrays over every shape of a scene, world poses, bounding boxes.

Conventions (docs/architecture.md, "Collision interface"): a shape sits at its node's origin with
the node's axes; lengths are given in the node's frame, unscaled, and the node's world scale s
multiplies all of them. `params (S, 4)` per kind:

    SPHERE   (r, 0, 0, 0)
    BOX      (hx, hy, hz, 0)        half extents (the scene's `size` holds full extents)
    CAPSULE  (r, h/2, 0, 0)         axis local y; h = the cylindrical part (as inertia_from_shape)
    CYLINDER (r, h/2, 0, 0)         axis local y; h = the full height
    PLANE    (nx, ny, nz, offset)   the points with n . x = offset, node frame; solid side n . x <= offset
    HULL     (r, 0, 0, 0)           r = the largest |vertex|: a ball about the node origin holding it;
                                    the vertices and planes are row `hull[s]` of `hull_rows` (`hull_row`)

A plane in the node frame maps to the world (x_world = R s x + T) as
n_world = R n, offset_world = s offset + n_world . T.
"""
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
from physics.core.compiled import bind, kernel
from physics.model.hull import HULL_PLANES, HULL_ROW, HULL_VERTICES_MAX, convex_hull

SPHERE, BOX, CAPSULE, CYLINDER, PLANE, HULL = 0, 1, 2, 3, 4, 5
KINDS = {"sphere": SPHERE, "box": BOX, "capsule": CAPSULE, "cylinder": CYLINDER, "plane": PLANE, "hull": HULL}
_GEOMETRY = {"sphere": ("radius",), "box": ("size",), "capsule": ("radius", "height"),
             "cylinder": ("radius", "height"), "plane": ("normal", "offset"), "hull": ("vertices",)}
_FILTER_KEYS = ("collide_with_parent", "group", "mask", "contype", "conaffinity")

__all__ = ["SPHERE", "BOX", "CAPSULE", "CYLINDER", "PLANE", "HULL", "KINDS", "ShapeSet", "world_shapes", "aabbs",
           "Placed", "place", "world_hulls", "hull_row"]


@dataclass
class ShapeSet:
    """Every collision shape of a scene (model data, constant over the steps). S shapes:

    kind (S,) int64, node (S,) int64, params (S, 4) float64 (module docstring),
    collide_with_parent (S,) bool, group (S,) int64, mask (S,) int64 (Bullet's filter), contype (S,)
    int64, conaffinity (S,) int64 (MuJoCo's; default 1 each); hull (S,) int64 the row of `hull_rows`
    (H, HULL_ROW) of each hull shape (-1 for the other kinds).
    """

    kind: np.ndarray
    node: np.ndarray
    params: np.ndarray
    collide_with_parent: np.ndarray
    group: np.ndarray
    mask: np.ndarray
    hull: np.ndarray = None
    hull_rows: np.ndarray = None
    contype: np.ndarray = None
    conaffinity: np.ndarray = None

    def __post_init__(self):
        if self.contype is None:
            self.contype = np.ones(len(self.kind), dtype=np.int64)
        if self.conaffinity is None:
            self.conaffinity = np.ones(len(self.kind), dtype=np.int64)
        if self.hull is None:
            self.hull = np.full(len(self.kind), -1, dtype=np.int64)
        if self.hull_rows is None:
            self.hull_rows = np.zeros((0, HULL_ROW))

    def __len__(self):
        return len(self.kind)

    @cached_property
    def max_node(self):
        """The largest node index any shape references (-1 without shapes): checked against the world."""
        return int(self.node.max(initial=-1))

    @classmethod
    def from_nodes(cls, node_shapes):
        """Build from one entry per node: a shape dict, a list of shape dicts, or None.

        Shape dicts are the scene format's (`{"type": "box", "size": [sx, sy, sz]}`, ...) plus the
        optional filter keys `collide_with_parent` (bool), `group`, `mask`, `contype`, `conaffinity`
        (int bit masks).
        """
        rows = []
        for i, entry in enumerate(node_shapes):
            for shape in ([] if entry is None else entry if isinstance(entry, (list, tuple)) else [entry]):
                rows.append((i, shape))
        kind = np.zeros(len(rows), dtype=np.int64)
        node = np.zeros(len(rows), dtype=np.int64)
        params = np.zeros((len(rows), 4))
        with_parent = np.zeros(len(rows), dtype=bool)
        group = np.ones(len(rows), dtype=np.int64)
        mask = np.full(len(rows), -1, dtype=np.int64)
        contype = np.ones(len(rows), dtype=np.int64)
        conaffinity = np.ones(len(rows), dtype=np.int64)
        hull = np.full(len(rows), -1, dtype=np.int64)
        hull_rows = []
        parsed = {}     # id(dict) -> its row: one table shared by many nodes (generated scenes) is parsed once
        for s, (i, shape) in enumerate(rows):
            node[s] = i
            if id(shape) not in parsed:
                parsed[id(shape)] = (*_parse(i, shape), _flag(i, shape), _bits(i, shape, "group", 1),
                                     _bits(i, shape, "mask", -1), _bits(i, shape, "contype", 1),
                                     _bits(i, shape, "conaffinity", 1))
                if parsed[id(shape)][0] == HULL:     # the hull computed once for every shape sharing the table
                    parsed[id(shape)] += (_hull_row_of(i, shape),)
            kind[s], params[s], with_parent[s], group[s], mask[s], contype[s], conaffinity[s] = parsed[id(shape)][:7]
            if kind[s] == HULL:     # a row per shape: each is scaled by its own node's scale
                hull[s] = len(hull_rows)
                hull_rows.append(parsed[id(shape)][7])
        rows_array = np.array(hull_rows) if hull_rows else np.zeros((0, HULL_ROW))
        return cls(kind, node, params, with_parent, group, mask, hull, rows_array, contype, conaffinity)


def _parse(i, shape):
    if not isinstance(shape, dict) or shape.get("type") not in KINDS:
        raise ValueError(f"node {i}: shape got {shape!r}; expected a dict with 'type' one of {', '.join(KINDS)}")
    name = shape["type"]
    unknown = set(shape) - {"type", *_GEOMETRY[name], *_FILTER_KEYS}
    if unknown:
        raise ValueError(f"node {i}: {name} shape has unknown key(s) {sorted(unknown)}; "
                         f"expected {', '.join(_GEOMETRY[name] + _FILTER_KEYS)}")

    def positive(key):
        value = shape.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value <= 0:
            raise ValueError(f"node {i}: {name} shape key {key!r} got {value!r}; expected a finite number > 0")
        return float(value)

    if name == "sphere":
        return SPHERE, (positive("radius"), 0.0, 0.0, 0.0)
    if name == "box":
        size = np.asarray(shape.get("size", ()), dtype=float)
        if size.shape != (3,) or not np.all(np.isfinite(size)) or np.any(size <= 0):
            raise ValueError(f"node {i}: box shape key 'size' got {shape.get('size')!r}; expected 3 numbers > 0")
        return BOX, (*(0.5 * size), 0.0)
    if name in ("capsule", "cylinder"):
        return KINDS[name], (positive("radius"), 0.5 * positive("height"), 0.0, 0.0)
    if name == "hull":
        vertices = _hull_vertices(i, shape)
        return HULL, (float(np.sqrt((vertices ** 2).sum(axis=1).max())), 0.0, 0.0, 0.0)
    normal = np.asarray(shape.get("normal", ()), dtype=float)
    offset = shape.get("offset", 0.0)
    if normal.shape != (3,) or not np.all(np.isfinite(normal)) or np.linalg.norm(normal) == 0:
        raise ValueError(f"node {i}: plane shape key 'normal' got {shape.get('normal')!r}; expected 3 numbers, not all 0")
    if isinstance(offset, bool) or not isinstance(offset, (int, float, np.integer, np.floating)) or not np.isfinite(offset):
        raise ValueError(f"node {i}: plane shape key 'offset' got {offset!r}; expected a finite number")
    # normalizing n scales the plane equation n . x = offset by the same factor
    length = np.linalg.norm(normal)
    return PLANE, (*(normal / length), float(offset) / length)


def _hull_vertices(i, shape):
    try:
        vertices = np.asarray(shape.get("vertices", ()), dtype=float)
    except (TypeError, ValueError):
        vertices = np.zeros(0)
    if vertices.ndim != 2 or vertices.shape[1:] != (3,) or len(vertices) < 4 or not np.all(np.isfinite(vertices)):
        raise ValueError(f"node {i}: hull shape key 'vertices' got {shape.get('vertices')!r}; "
                         "expected at least 4 rows of 3 finite numbers")
    if len(vertices) > HULL_VERTICES_MAX:
        raise ValueError(f"node {i}: hull shape key 'vertices' got {len(vertices)} vertices; "
                         f"at most {HULL_VERTICES_MAX} (the scene loader simplifies larger hulls)")
    return vertices


def _hull_row_of(i, shape):
    try:
        return hull_row(convex_hull(_hull_vertices(i, shape)))
    except ValueError as error:
        raise ValueError(f"node {i}: hull shape key 'vertices': {error}") from None


def hull_row(hull):
    """A `physics.model.hull.Hull` as one narrow-phase row (HULL_ROW,), in the node frame, unscaled:
    [r, V, F, 1 (the scale), x0, y0, z0, x1, ..., then at HULL_PLANES n0x, n0y, n0z, d0, ...];
    r = max |vertex|. `world_hulls` scales the lengths (r, vertices, d) by the node's world scale."""
    row = np.zeros(HULL_ROW)
    v, p = np.asarray(hull.vertices, float), np.asarray(hull.planes, float)
    row[0], row[1], row[2], row[3] = np.sqrt((v ** 2).sum(axis=1).max()), len(v), len(p), 1.0
    row[4:4 + v.size] = v.ravel()
    row[HULL_PLANES:HULL_PLANES + p.size] = p.ravel()
    return row


def world_hulls(shapes, world):
    """The hull rows (H, HULL_ROW) at the world scale of their nodes (`hull_row`: radius, vertices
    and plane offsets times the scale s, stored in column 3; `_scale_hulls`), a new array; the rows
    of a scene without hulls are returned as they are (empty). A placement keeps its own, rewritten
    only where a scale changed (`Placed.hulls`)."""
    if not len(shapes.hull_rows):
        return shapes.hull_rows
    _, _, s = _checked_poses(shapes, world)
    out = np.full_like(shapes.hull_rows, np.nan)
    _scale_hulls(shapes.hull, shapes.node, s, shapes.hull_rows, out)
    return out


@kernel(inline=True)
def _scale_hulls(hull, node, scale, rows, out):
    """out[h] ← hull row h (`rows`) at the world scale s of the node of a shape that has it: its
    radius (column 0), vertices (4 to HULL_PLANES) and plane offsets (each plane's fourth) times s,
    s in column 3; a row whose column 3 holds s already is left as it is (a scale seldom changes:
    the narrow phase reads these rows at every sub-step)."""
    for k in range(hull.shape[0]):
        h = hull[k]
        if h < 0:
            continue
        s = scale[node[k]]
        if out[h, 3] == s:
            continue
        for c in range(rows.shape[1]):
            out[h, c] = rows[h, c]
        out[h, 0] = rows[h, 0] * s
        out[h, 3] = s
        for c in range(4, HULL_PLANES):
            out[h, c] = rows[h, c] * s
        for c in range(HULL_PLANES + 3, rows.shape[1], 4):
            out[h, c] = rows[h, c] * s


def _flag(i, shape):
    value = shape.get("collide_with_parent", False)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"node {i}: shape key 'collide_with_parent' got {value!r}; expected true or false")
    return bool(value)


def _bits(i, shape, key, default):
    value = shape.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"node {i}: shape key {key!r} got {value!r}; expected an integer bit mask")
    return int(value)


def _poses(world):
    """(translation (N,3), rotation (N,3,3), scale (N,)) of a world state (NodeState, Transform,
    or DynamicTransform, whose `.transform` is used). Float64 arrays are passed through uncopied."""
    world = getattr(world, "transform", world)
    try:
        t, r, s = world.translation, world.rotation, world.scale
    except AttributeError:
        raise ValueError(f"world: got {type(world).__name__}; expected an object with translation, "
                         "rotation and scale (a NodeState, Transform or DynamicTransform)") from None
    t, r, s = np.asarray(t, dtype=np.float64), np.asarray(r, dtype=np.float64), np.asarray(s, dtype=np.float64)
    n = t.shape[0] if t.ndim == 2 else -1
    if t.shape != (n, 3) or r.shape != (n, 3, 3) or s.shape not in ((), (n,)):
        raise ValueError(f"world: got translation {t.shape}, rotation {r.shape}, scale {s.shape}; "
                         "expected (N, 3), (N, 3, 3), (N,) or ()")
    return t, r, (np.full(n, float(s)) if s.ndim == 0 else s)


def _checked_poses(shapes, world):
    t, r, s = _poses(world)
    if len(shapes) and shapes.max_node >= len(t):
        raise ValueError(f"world: got {len(t)} nodes; the shapes reference node {shapes.max_node}")
    return t, r, s


def world_shapes(shapes, world):
    """Each shape in the world: (centre_world (S,3), rotation_world (S,3,3), params_world (S,4)).

    Lengths are multiplied by the node's world scale; a plane's params become
    (n_world, offset_world) = (R n, s offset + R n . T), its centre the point offset_world n_world.
    """
    n_shapes = len(shapes)
    out = np.empty((n_shapes, 3)), np.empty((n_shapes, 3, 3)), np.empty((n_shapes, 4))
    _world_shapes(shapes.kind, shapes.node, shapes.params, *_checked_poses(shapes, world), *out)
    return out


def aabbs(shapes, world):
    """World axis-aligned bounding boxes (lo (S,3), hi (S,3)).

    box: centre ± |R| h; sphere: ± r; capsule: ± (|R e_y| h/2 + r); cylinder: the two cap discs,
    ± (|a| h/2 + r sqrt(1 - a_k²)) with a = R e_y. A plane gets the bounding box of its solid
    half-space n . x <= offset: infinite except along an axis-aligned normal.
    """
    placed = place(shapes, world)
    return placed.lo, placed.hi


class Placed(NamedTuple):
    """The shapes in the world (`place`): `world_shapes`' three arrays, `aabbs`' two and
    `world_hulls`' rows."""

    centre: np.ndarray      # (S, 3)
    rotation: np.ndarray    # (S, 3, 3)
    params: np.ndarray      # (S, 4)
    lo: np.ndarray          # (S, 3)
    hi: np.ndarray          # (S, 3)
    hulls: np.ndarray       # (H, HULL_ROW)


def place(shapes, world):
    """`world_shapes`, `aabbs` and `world_hulls` in one compiled pass (a `Placed`): a step's broad
    phase and narrow phase read the same placement."""
    out = _placed(shapes)
    _place(shapes.kind, shapes.node, shapes.params, shapes.hull, shapes.hull_rows, *_checked_poses(shapes, world), *out)
    return out


def _placed(shapes):
    """An empty `Placed` for `shapes` (its hull rows NaN: `_scale_hulls` writes each at once)."""
    n_shapes = len(shapes)
    return Placed(np.empty((n_shapes, 3)), np.empty((n_shapes, 3, 3)), np.empty((n_shapes, 4)),
                  np.empty((n_shapes, 3)), np.empty((n_shapes, 3)), np.full_like(shapes.hull_rows, np.nan))


def placing(shapes, world):
    """`place` as a call of no arguments, into a `Placed` of its own, bound to the arrays of `world`
    (a NodeState, whose arrays are written in place: physics.core.compiled.bind) for a caller that
    places the same shapes at the same world state every step (`physics.constraints.solver.SceneSolver`):
    (call, placed), each call rewriting `placed`; None where `world`'s arrays are not float64 ones
    the call can read live (`place` then). A NodeState's arrays are views of its buffers, one
    topology's (a view made again is of the same memory: what is bound is checked by its address)."""
    t, r, s = _checked_poses(shapes, world)
    live = getattr(world, "transform", world)
    for array, own in ((t, live.translation), (r, live.rotation), (s, live.scale)):
        if not isinstance(own, np.ndarray) or array.ctypes.data != own.ctypes.data or array.shape != own.shape:
            return None
    out = _placed(shapes)
    return bind(_place, shapes.kind, shapes.node, shapes.params, shapes.hull, shapes.hull_rows, t, r, s, *out), out


# One compiled pass over the shapes each: a step calls these for every shape, and for small scenes
# the per-call cost is what matters (numpy masks and per-kind branches cost more than the arithmetic).
# The callers allocate the outputs: arrays made inside numba cost ~1.3 us each to hand back.
@kernel
def _world_shapes(kind, node, params, translation, rotation, scale, centre_world, rotation_world, params_world):
    """The formulas of `world_shapes`, one loop over the shapes, into the three output arrays."""
    for k in range(kind.shape[0]):
        i = node[k]
        s = scale[i]
        for a in range(3):
            for b in range(3):
                rotation_world[k, a, b] = rotation[i, a, b]
        if kind[k] == PLANE:
            offset = s * params[k, 3]
            for a in range(3):
                n_a = rotation[i, a, 0] * params[k, 0] + rotation[i, a, 1] * params[k, 1] + rotation[i, a, 2] * params[k, 2]
                params_world[k, a] = n_a
                offset += n_a * translation[i, a]
            params_world[k, 3] = offset
            for a in range(3):
                centre_world[k, a] = offset * params_world[k, a]
        else:
            for a in range(3):
                centre_world[k, a] = translation[i, a]
            for a in range(4):
                params_world[k, a] = s * params[k, a]


@kernel(refcounts=False)
def _place(kind, node, params, hull, hull_rows, translation, rotation, scale, centre, rot, prm, lo, hi, hulls):
    """The formulas of `world_shapes` into centre, rot, prm, then those of `aabbs` from them into
    lo and hi, one loop each over the shapes, and the hull rows `hull_rows` (H, HULL_ROW) of the
    shapes' `hull` (S,) at their world scale into `hulls` (`_scale_hulls`: where a scale changed)."""
    _world_shapes(kind, node, params, translation, rotation, scale, centre, rot, prm)
    _scale_hulls(hull, node, scale, hull_rows, hulls)
    for s in range(kind.shape[0]):
        k = kind[s]
        if k == PLANE:
            for i in range(3):
                lo[s, i], hi[s, i] = -np.inf, np.inf
            for i in range(3):  # an axis-aligned normal bounds its axis at offset / n_i
                if abs(prm[s, i]) > 1.0 - 1e-12:
                    if prm[s, i] > 0:
                        hi[s, i] = prm[s, 3] / prm[s, i]
                    else:
                        lo[s, i] = prm[s, 3] / prm[s, i]
            continue
        for i in range(3):
            if k == BOX:
                half = abs(rot[s, i, 0]) * prm[s, 0] + abs(rot[s, i, 1]) * prm[s, 1] + abs(rot[s, i, 2]) * prm[s, 2]
            elif k == SPHERE or k == HULL:   # a hull: the ball about its node origin holding it
                half = prm[s, 0]
            elif k == CAPSULE:
                half = abs(rot[s, i, 1]) * prm[s, 1] + prm[s, 0]
            else:  # CYLINDER
                a = rot[s, i, 1]
                half = abs(a) * prm[s, 1] + prm[s, 0] * np.sqrt(max(1.0 - a * a, 0.0))
            lo[s, i], hi[s, i] = centre[s, i] - half, centre[s, i] + half
