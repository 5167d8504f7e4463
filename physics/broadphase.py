"""Broad phase: the pairs of shapes whose world bounding boxes overlap and that may collide.

One entry point, `candidate_pairs(lo, hi, filter)`, chooses the method by size:
- up to `BRUTE_FORCE_MAX` finite shapes, every distinct pair from `physics.pairs.distinct_pair_indices`
  (seed 000, "Iterating Over Distinct Pairs"), tested with numpy;
- beyond, sweep-and-prune (Baraff 1992; Bullet's btAxisSweep3 in its simplest one-axis form): sort
  the boxes by their lower bound on the axis where the box centres vary most, then for each box
  walk forward while the next box starts before this one ends, testing the two other axes. The
  sweep is a numba loop; its cost is O(S log S + pairs touching on the sweep axis).
Planes (infinite bounding boxes, see `physics.shapes.aabbs`) are tested against every finite box.

Filtering (`collision_filter`): the rules are listed in docs/architecture.md ("Collision interface").
Two AABBs overlap when lo_a <= hi_b and lo_b <= hi_a on every axis (touching counts).
"""
from dataclasses import dataclass

import numpy as np
from numba import njit

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

    def allows(self, a, b):
        """Boolean mask over index arrays a, b (shape indices): may these pairs collide?"""
        na, nb = self.node[a], self.node[b]
        ok = (na != nb) & ~(self.is_plane[a] & self.is_plane[b])
        ok &= (self.group[a] & self.mask[b]) != 0
        ok &= (self.group[b] & self.mask[a]) != 0
        ok &= (self.parent_node[b] != na) | self.collide_with_parent[b]
        ok &= (self.parent_node[a] != nb) | self.collide_with_parent[a]
        ok &= self.assembly[a] != self.assembly[b]
        ok &= self.active[a] | self.active[b]
        return ok


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


def _overlap(lo, hi, a, b):
    return np.all((lo[a] <= hi[b]) & (lo[b] <= hi[a]), axis=-1)


@njit(cache=True)
def _sweep(lo, hi, order, axis):
    """Sweep-and-prune over boxes sorted by lo[:, axis]: every overlapping pair (i, j) once."""
    n = order.shape[0]
    o1, o2 = (axis + 1) % 3, (axis + 2) % 3
    capacity = 4 * n + 16
    out = np.empty((capacity, 2), dtype=np.int64)
    k = 0
    for p in range(n):
        i = order[p]
        end = hi[i, axis]
        for q in range(p + 1, n):
            j = order[q]
            if lo[j, axis] > end:
                break
            if lo[i, o1] <= hi[j, o1] and lo[j, o1] <= hi[i, o1] and lo[i, o2] <= hi[j, o2] and lo[j, o2] <= hi[i, o2]:
                if k == capacity:
                    capacity *= 2
                    grown = np.empty((capacity, 2), dtype=np.int64)
                    grown[:k] = out[:k]
                    out = grown
                out[k, 0] = min(i, j)
                out[k, 1] = max(i, j)
                k += 1
    return out[:k]


def candidate_pairs(lo, hi, filter):
    """(K, 2) int64 shape index pairs (a < b, sorted by a then b) whose AABBs overlap and that the
    filter allows. `lo`, `hi` (S, 3) from `physics.shapes.aabbs`."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if lo.ndim != 2 or lo.shape[1:] != (3,) or hi.shape != lo.shape or len(filter.node) != len(lo):
        raise ValueError(f"lo, hi: got shapes {lo.shape}, {hi.shape}; expected (S, 3) with S = {len(filter.node)}")
    finite = np.flatnonzero(~filter.is_plane)
    planes = np.flatnonzero(filter.is_plane)
    found = []
    if len(finite) <= BRUTE_FORCE_MAX:
        for i, j in distinct_pair_indices(len(finite)):
            i, j = (x.ravel() for x in np.broadcast_arrays(i, j))
            keep = _overlap(lo, hi, finite[i], finite[j])
            found.append(np.column_stack([finite[i[keep]], finite[j[keep]]]))
    else:
        f_lo, f_hi = np.ascontiguousarray(lo[finite]), np.ascontiguousarray(hi[finite])
        axis = int(np.argmax(np.var(f_lo + f_hi, axis=0)))
        order = np.argsort(f_lo[:, axis], kind="stable")
        found.append(finite[_sweep(f_lo, f_hi, order, axis)])
    if planes.size and finite.size:
        p, f = (x.ravel() for x in np.meshgrid(planes, finite, indexing="ij"))
        keep = _overlap(lo, hi, p, f)
        found.append(np.sort(np.column_stack([p[keep], f[keep]]), axis=1))
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    pairs = pairs.astype(np.int64).reshape(-1, 2)
    pairs = pairs[filter.allows(pairs[:, 0], pairs[:, 1])]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
