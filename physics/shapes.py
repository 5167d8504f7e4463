"""Collision shapes: a structure of arrays over every shape of a scene, world poses, bounding boxes.

Conventions (docs/architecture.md, "Collision interface"): a shape sits at its node's origin with
the node's axes; lengths are given in the node's frame, unscaled, and the node's world scale s
multiplies all of them. `params (S, 4)` per kind:

    SPHERE   (r, 0, 0, 0)
    BOX      (hx, hy, hz, 0)        half extents (the scene's `size` holds full extents)
    CAPSULE  (r, h/2, 0, 0)         axis local y; h = the cylindrical part (as inertia_from_shape)
    CYLINDER (r, h/2, 0, 0)         axis local y; h = the full height
    PLANE    (nx, ny, nz, offset)   the points with n . x = offset, node frame; solid side n . x <= offset

A plane in the node frame maps to the world (x_world = R s x + T) as
n_world = R n, offset_world = s offset + n_world . T.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit

SPHERE, BOX, CAPSULE, CYLINDER, PLANE = 0, 1, 2, 3, 4
KINDS = {"sphere": SPHERE, "box": BOX, "capsule": CAPSULE, "cylinder": CYLINDER, "plane": PLANE}
_GEOMETRY = {"sphere": ("radius",), "box": ("size",), "capsule": ("radius", "height"),
             "cylinder": ("radius", "height"), "plane": ("normal", "offset")}
_FILTER_KEYS = ("collide_with_parent", "group", "mask")

__all__ = ["SPHERE", "BOX", "CAPSULE", "CYLINDER", "PLANE", "KINDS", "ShapeSet", "world_shapes", "aabbs"]


@dataclass
class ShapeSet:
    """Every collision shape of a scene (model data, constant over the steps). S shapes:

    kind (S,) int64, node (S,) int64, params (S, 4) float64 (module docstring),
    collide_with_parent (S,) bool, group (S,) int64, mask (S,) int64.
    """

    kind: np.ndarray
    node: np.ndarray
    params: np.ndarray
    collide_with_parent: np.ndarray
    group: np.ndarray
    mask: np.ndarray

    def __len__(self):
        return len(self.kind)

    @classmethod
    def from_nodes(cls, node_shapes):
        """Build from one entry per node: a shape dict, a list of shape dicts, or None.

        Shape dicts are the scene format's (`{"type": "box", "size": [sx, sy, sz]}`, ...) plus the
        optional filter keys `collide_with_parent` (bool), `group`, `mask` (int bit masks).
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
        for s, (i, shape) in enumerate(rows):
            node[s] = i
            kind[s], params[s] = _parse(i, shape)
            with_parent[s] = _flag(i, shape)
            group[s] = _bits(i, shape, "group", 1)
            mask[s] = _bits(i, shape, "mask", -1)
        return cls(kind, node, params, with_parent, group, mask)


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
    normal = np.asarray(shape.get("normal", ()), dtype=float)
    offset = shape.get("offset", 0.0)
    if normal.shape != (3,) or not np.all(np.isfinite(normal)) or np.linalg.norm(normal) == 0:
        raise ValueError(f"node {i}: plane shape key 'normal' got {shape.get('normal')!r}; expected 3 numbers, not all 0")
    if isinstance(offset, bool) or not isinstance(offset, (int, float, np.integer, np.floating)) or not np.isfinite(offset):
        raise ValueError(f"node {i}: plane shape key 'offset' got {offset!r}; expected a finite number")
    # normalizing n scales the plane equation n . x = offset by the same factor
    length = np.linalg.norm(normal)
    return PLANE, (*(normal / length), float(offset) / length)


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
    or DynamicTransform, whose `.transform` is used)."""
    world = getattr(world, "transform", world)
    try:
        t, r, s = (np.asarray(getattr(world, k), dtype=float) for k in ("translation", "rotation", "scale"))
    except AttributeError:
        raise ValueError(f"world: got {type(world).__name__}; expected an object with translation, "
                         "rotation and scale (a NodeState, Transform or DynamicTransform)") from None
    n = t.shape[0] if t.ndim == 2 else -1
    if t.shape != (n, 3) or r.shape != (n, 3, 3):
        raise ValueError(f"world: got translation {t.shape}, rotation {r.shape}; expected (N, 3), (N, 3, 3)")
    return t, r, np.broadcast_to(s, (n,))


def world_shapes(shapes, world):
    """Each shape in the world: (centre_world (S,3), rotation_world (S,3,3), params_world (S,4)).

    Lengths are multiplied by the node's world scale; a plane's params become
    (n_world, offset_world) = (R n, s offset + R n . T), its centre the point offset_world n_world.
    """
    t, r, s = _poses(world)
    if len(shapes) and shapes.node.max() >= len(t):
        raise ValueError(f"world: got {len(t)} nodes; the shapes reference node {shapes.node.max()}")
    centre = t[shapes.node].copy()
    rotation = r[shapes.node]
    scale = s[shapes.node]
    params = shapes.params * scale[:, None]
    plane = shapes.kind == PLANE
    if plane.any():
        n_world = np.einsum("sij,sj->si", rotation[plane], shapes.params[plane, :3])
        offset = scale[plane] * shapes.params[plane, 3] + np.einsum("si,si->s", n_world, centre[plane])
        params[plane] = np.column_stack([n_world, offset])
        centre[plane] = offset[:, None] * n_world
    return centre, rotation, params


def aabbs(shapes, world):
    """World axis-aligned bounding boxes (lo (S,3), hi (S,3)).

    box: centre ± |R| h; sphere: ± r; capsule: ± (|R e_y| h/2 + r); cylinder: the two cap discs,
    ± (|a| h/2 + r sqrt(1 - a_k²)) with a = R e_y. A plane gets the bounding box of its solid
    half-space n . x <= offset: infinite except along an axis-aligned normal.
    """
    centre, rotation, params = world_shapes(shapes, world)
    half = _half_extents(shapes.kind, rotation, params)
    lo, hi = centre - half, centre + half
    plane = np.flatnonzero(shapes.kind == PLANE)
    lo[plane], hi[plane] = -np.inf, np.inf
    for s in plane:  # few planes: a closed form per plane is clearer than a masked expression
        n, offset = params[s, :3], params[s, 3]
        k = np.flatnonzero(np.abs(n) > 1.0 - 1e-12)
        if k.size == 1:
            k = k[0]
            if n[k] > 0:
                hi[s, k] = offset / n[k]
            else:
                lo[s, k] = offset / n[k]
    return lo, hi


@njit(cache=True)
def _half_extents(kind, rotation, params):
    """(S, 3) world half extents of the finite shapes' bounding boxes (planes: 0, set by the caller);
    the formulas of `aabbs`, one loop over the shapes (numpy masks cost more than the arithmetic)."""
    half = np.zeros((kind.shape[0], 3))
    for s in range(kind.shape[0]):
        k = kind[s]
        for i in range(3):
            if k == BOX:
                half[s, i] = (abs(rotation[s, i, 0]) * params[s, 0] + abs(rotation[s, i, 1]) * params[s, 1]
                              + abs(rotation[s, i, 2]) * params[s, 2])
            elif k == SPHERE:
                half[s, i] = params[s, 0]
            elif k == CAPSULE:
                half[s, i] = abs(rotation[s, i, 1]) * params[s, 1] + params[s, 0]
            elif k == CYLINDER:
                a = rotation[s, i, 1]
                half[s, i] = abs(a) * params[s, 1] + params[s, 0] * np.sqrt(max(1.0 - a * a, 0.0))
    return half
