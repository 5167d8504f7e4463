"""Broad phase: the pairs of shapes whose world bounding boxes overlap and that may collide.

One entry point, `candidate_pairs(lo, hi, filter)`, chooses the method by size:
- up to `BRUTE_FORCE_MAX` finite shapes, every distinct pair from `physics.pairs.distinct_pair_indices`
  ("Iterating Over Distinct Pairs in C++"), planes included: the pairs the filter allows are
  listed once per filter (`CollisionFilter.allowed_pairs`) and each step one compiled loop tests
  their boxes (a small scene's step then costs a few microseconds, not numpy calls per chunk);
- beyond, sweep-and-prune (Baraff 1992; Bullet's btAxisSweep3 in its simplest one-axis form): sort
  the boxes by their lower bound on the axis where the box centres vary most, then for each box
  walk forward while the next box starts before this one ends, testing the two other axes. The
  sweep is a numba loop; its cost is O(S log S + pairs touching on the sweep axis).
Planes (infinite bounding boxes, see `physics.shapes.aabbs`) are tested against every finite box.

Filtering (`collision_filter`): the rules are listed in docs/architecture.md ("Collision interface").
Two AABBs overlap when lo_a <= hi_b and lo_b <= hi_a on every axis (touching counts).
"""
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from physics.compiled import kernel

from physics.pairs import distinct_pair_indices
from physics.shapes import PLANE

BRUTE_FORCE_MAX = 64

__all__ = ["CollisionFilter", "collision_filter", "candidate_pairs", "BRUTE_FORCE_MAX"]


@dataclass
class CollisionFilter:
    """Per-shape data the pair filter needs (S shapes). `assembly (S,)`: the node of the rigid
    assembly the shape moves with (its nearest non-fixed ancestor or itself; -1 = the world),
    `active (S,)`: that assembly is dynamic. Without motion information every node is its own
    assembly and active."""

    is_plane: np.ndarray
    node: np.ndarray
    parent_node: np.ndarray
    collide_with_parent: np.ndarray
    group: np.ndarray
    mask: np.ndarray
    assembly: np.ndarray
    active: np.ndarray
    _allowed: np.ndarray = field(default=None, init=False, repr=False, compare=False)  # `allowed_pairs`, made on first use

    def arrays(self):
        """The per-shape arrays in the order the numba kernels take them."""
        return (self.is_plane, self.node, self.parent_node, self.collide_with_parent, self.group, self.mask,
                self.assembly, self.active)

    @cached_property
    def n_finite(self):
        """How many shapes have finite bounding boxes (all but the planes): picks the broad phase."""
        return int(np.count_nonzero(~self.is_plane))

    def allowed_pairs(self):
        """(K, 2) int64 every pair a < b of shapes the filter allows, sorted by a then b: the brute
        force's candidates, made once (the filter is constant) from
        `physics.pairs.distinct_pair_indices`, so that a step only tests their boxes."""
        if self._allowed is None:
            found = []
            for i, j in distinct_pair_indices(len(self.node)):
                i, j = (x.ravel() for x in np.broadcast_arrays(i, j))
                keep = self.allows(i, j)
                found.append(np.column_stack([i[keep], j[keep]]))
            pairs = np.concatenate(found).astype(np.int64).reshape(-1, 2) if found else np.zeros((0, 2), np.int64)
            self._allowed = np.ascontiguousarray(pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))])
        return self._allowed

    def may_pair(self):
        """False when no two shapes can ever be paired: every pair needs a dynamic assembly on one
        side and a different assembly on the other (a conservative, O(S) test, done once)."""
        return bool(self.active.any()) and np.unique(self.assembly).size > 1

    def allows(self, a, b):
        """Boolean mask over index arrays a, b (shape indices): may these pairs collide?"""
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
        return _allows_many(a.ravel(), b.ravel(), *self.arrays()).reshape(a.shape)


def collision_filter(shapes, parent, motion=None):
    """The `CollisionFilter` of a `ShapeSet` in a hierarchy with `parent (N,)` (-1 = world) and
    optional `motion (N,)` strings (fixed | kinematic | dynamic)."""
    parent = np.asarray(parent, dtype=np.int64)
    if parent.ndim != 1 or (len(shapes) and shapes.node.max() >= len(parent)):
        raise ValueError(f"parent: got shape {parent.shape}; expected (N,) covering every shape's node")
    n = len(parent)
    if motion is None:
        assembly, active = np.arange(n), np.ones(n, dtype=bool)
    else:
        motion = np.asarray(motion)
        if motion.shape != (n,) or not np.isin(motion, ("fixed", "kinematic", "dynamic")).all():
            raise ValueError(f"motion: got {motion!r}; expected (N,) of fixed | kinematic | dynamic")
        assembly = np.arange(n)
        # parents come before children in the hierarchy's order, but do not rely on it here:
        # follow fixed links up until a moving node or the world (at most depth iterations)
        for _ in range(n):
            up = (motion[np.maximum(assembly, 0)] == "fixed") & (assembly >= 0)
            if not up.any():
                break
            assembly = np.where(up, parent[np.maximum(assembly, 0)], assembly)
        active = np.where(assembly >= 0, motion[np.maximum(assembly, 0)] == "dynamic", False)
    node = shapes.node
    return CollisionFilter(shapes.kind == PLANE, node, parent[node], shapes.collide_with_parent,
                           shapes.group, shapes.mask, assembly[node], active[node])


@kernel
def _overlapping(lo, hi, candidates, out):
    """The rows (a, b) of candidates (K, 2) whose boxes overlap, in their order, into out; how many."""
    k = 0
    for p in range(candidates.shape[0]):
        a, b = candidates[p, 0], candidates[p, 1]
        if lo[a, 0] <= hi[b, 0] and lo[b, 0] <= hi[a, 0] and lo[a, 1] <= hi[b, 1] and lo[b, 1] <= hi[a, 1] \
                and lo[a, 2] <= hi[b, 2] and lo[b, 2] <= hi[a, 2]:
            out[k, 0], out[k, 1] = a, b
            k += 1
    return k


@kernel
def _allowed(a, b, is_plane, node, parent_node, collide_with_parent, group, mask, assembly, active):
    """May shapes a and b collide (the rules of docs/architecture.md, "Collision interface")?"""
    na, nb = node[a], node[b]
    return (na != nb and not (is_plane[a] and is_plane[b])
            and (group[a] & mask[b]) != 0 and (group[b] & mask[a]) != 0
            and (parent_node[b] != na or collide_with_parent[b])
            and (parent_node[a] != nb or collide_with_parent[a])
            and assembly[a] != assembly[b] and (active[a] or active[b]))


@kernel
def _allows_many(a, b, is_plane, node, parent_node, collide_with_parent, group, mask, assembly, active):
    out = np.empty(a.shape[0], dtype=np.bool_)
    for k in range(a.shape[0]):
        out[k] = _allowed(a[k], b[k], is_plane, node, parent_node, collide_with_parent, group, mask, assembly, active)
    return out


@kernel
def _sweep(lo, hi, finite, order, axis, planes, out, is_plane, node, parent_node, collide_with_parent, group, mask,
           assembly, active):
    """Sweep-and-prune over the finite boxes `finite[order]` (sorted by lo[:, axis]), then every plane
    against every finite box; the allowed overlapping pairs (min, max) go to `out` while it has room.
    Returns how many were found (more than out holds: call again with a larger out)."""
    n = order.shape[0]
    o1, o2 = (axis + 1) % 3, (axis + 2) % 3
    # the boxes in sweep order, contiguous: the inner loop streams through memory
    s_lo, s_hi, s_id = np.empty((n, 3)), np.empty((n, 3)), np.empty(n, dtype=np.int64)
    for p in range(n):
        i = finite[order[p]]
        s_id[p] = i
        for c in range(3):
            s_lo[p, c], s_hi[p, c] = lo[i, c], hi[i, c]
    capacity = out.shape[0]
    k = 0
    for p in range(n):
        end = s_hi[p, axis]
        for q in range(p + 1, n):
            if s_lo[q, axis] > end:
                break
            if s_lo[p, o1] <= s_hi[q, o1] and s_lo[q, o1] <= s_hi[p, o1] \
                    and s_lo[p, o2] <= s_hi[q, o2] and s_lo[q, o2] <= s_hi[p, o2]:
                i, j = s_id[p], s_id[q]
                if _allowed(i, j, is_plane, node, parent_node, collide_with_parent, group, mask, assembly, active):
                    if k < capacity:
                        out[k, 0], out[k, 1] = min(i, j), max(i, j)
                    k += 1
    for i in planes:
        for p in range(n):
            j = s_id[p]
            if lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1] and lo[j, 1] <= hi[i, 1] \
                    and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2] \
                    and _allowed(i, j, is_plane, node, parent_node, collide_with_parent, group, mask, assembly, active):
                if k < capacity:
                    out[k, 0], out[k, 1] = min(i, j), max(i, j)
                k += 1
    return k


@kernel
def _sort_pairs(pairs, n_shapes):
    """The rows of pairs (K, 2) sorted by the first then the second index: a counting sort on the
    first (O(K + S)), then insertion sort within each group (a shape has few partners)."""
    start = np.zeros(n_shapes + 1, dtype=np.int64)
    for k in range(pairs.shape[0]):
        start[pairs[k, 0] + 1] += 1
    for s in range(n_shapes):
        start[s + 1] += start[s]
    fill = start[:-1].copy()
    out = np.empty_like(pairs)
    for k in range(pairs.shape[0]):
        a = pairs[k, 0]
        out[fill[a], 0], out[fill[a], 1] = a, pairs[k, 1]
        fill[a] += 1
    for s in range(n_shapes):
        for p in range(start[s] + 1, start[s + 1]):
            b = out[p, 1]
            q = p
            while q > start[s] and out[q - 1, 1] > b:
                out[q, 1] = out[q - 1, 1]
                q -= 1
            out[q, 1] = b
    return out


def candidate_pairs(lo, hi, filter):
    """(K, 2) int64 shape index pairs (a < b, sorted by a then b) whose AABBs overlap and that the
    filter allows. `lo`, `hi` (S, 3) from `physics.shapes.aabbs`.

    The sweep keeps its sort order on the filter between calls (temporal coherence): the boxes
    barely move in a step, so re-sorting last step's order with a stable sort (timsort on nearly
    sorted keys) is O(S)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if lo.ndim != 2 or lo.shape[1:] != (3,) or hi.shape != lo.shape or len(filter.node) != len(lo):
        raise ValueError(f"lo, hi: got shapes {lo.shape}, {hi.shape}; expected (S, 3) with S = {len(filter.node)}")
    if filter.n_finite <= BRUTE_FORCE_MAX:
        candidates = filter.allowed_pairs()
        out = np.empty_like(candidates)  # made here: an array made in numba costs more to hand back
        return out[:_overlapping(lo, hi, candidates, out)]
    finite = np.flatnonzero(~filter.is_plane)
    planes = np.flatnonzero(filter.is_plane)
    centre = lo[finite] + hi[finite]
    axis = int(np.argmax(np.var(centre, axis=0)))
    key = lo[finite, axis]
    previous = getattr(filter, "_sweep_order", None)
    if previous is not None and previous[0] == axis and len(previous[1]) == len(finite):
        order = previous[1][np.argsort(key[previous[1]], kind="stable")]
    else:
        order = np.argsort(key, kind="stable")
    filter._sweep_order = (axis, order)
    out = np.empty((getattr(filter, "_sweep_capacity", 4 * len(lo) + 16), 2), dtype=np.int64)
    arrays = (lo, hi, finite, order, axis, planes)
    k = _sweep(*arrays, out, *filter.arrays())
    if k > len(out):
        out = np.empty((k, 2), dtype=np.int64)
        _sweep(*arrays, out, *filter.arrays())
    filter._sweep_capacity = k + k // 4 + 16
    return _sort_pairs(out[:k], len(lo))
