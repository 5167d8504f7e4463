"""Broad phase: the pairs of shapes whose world bounding boxes overlap and that may collide.

One entry point, `candidate_pairs(lo, hi, filter)`, chooses the method by size:
- up to `BRUTE_FORCE_MAX` finite shapes, every distinct pair from `physics.containers.pairs.distinct_pair_indices`
  ("Iterating Over Distinct Pairs in C++"), planes included: the pairs the filter allows are
  listed once per filter (`CollisionFilter.allowed_pairs`) and each step one compiled loop tests
  their boxes (a small scene's step then costs a few microseconds, not numpy calls per chunk);
- beyond, a uniform grid (spatial hashing as in Teschner et al. 2003, "Optimized Spatial Hashing
  for Collision Detection of Deformable Objects", with exact cell keys instead of a hash): the cell
  edge is twice the median box's largest extent, every box is entered in the cells its box covers, the
  entries are sorted by cell, and the boxes sharing a cell are tested against each other. A pair
  that shares several cells is reported only in the first of them (the cell at the componentwise
  maximum of the two boxes' lowest cells), so no pair is found twice. Boxes covering more than
  `GRID_MAX_CELLS` cells (a wall, a floor slab among small bodies) are not entered but tested
  against every box. The cost is O(S log S) for S boxes of similar size, however they are piled: a
  one-axis sweep-and-prune costs O(S^(5/3)) on a cubic heap, where every slab across the sweep
  axis holds S^(2/3) boxes.
Planes (infinite bounding boxes, see `physics.model.shapes.aabbs`) are tested against every finite box.
Where the filter's collision bits let no two finite shapes collide (a net's knots in one group
their mask leaves out: `CollisionFilter.finite_may_pair`, tested once on the few classes of
bits), the grid is left out and only the planes are tested: the 100 × 100 net's broad phase takes
0.3 ms a sub-step (1.3 through the grid), with the same pairs.
Both methods return the same sorted pair list, so the choice never changes a simulation's bits.

Filtering (`collision_filter`): the rules are listed in docs/architecture.md ("Collision interface").
Two AABBs overlap when lo_a <= hi_b and lo_b <= hi_a on every axis (touching counts).
"""
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
from physics.core.compiled import kernel

from physics.containers.pairs import distinct_pair_indices
from physics.containers.stable_order import stable_order
from physics.model.shapes import PLANE

BRUTE_FORCE_MAX = 64
# a box covering more cells than this is tested against every box instead of entered in the grid
GRID_MAX_CELLS = 64
# the cell edge in median box extents (measured on 1,000-8,000-box heaps: 2 beat 1, 1.5 and 3)
GRID_CELL = 2.0
# cells per axis at most 2^20: a cell key (ix, iy, iz) packs into one int64
_GRID_BITS = 20
# the grid's entries are ordered by counting where their cells span at most this many per entry
COUNTING_SPAN = 8
# `CollisionFilter.finite_may_pair` tests every pair of the finite shapes' collision classes up
# to this many classes (a scene's few groups); past it the grid runs
CLASSES_TESTED = 64

__all__ = ["CollisionFilter", "collision_filter", "candidate_pairs", "TooManyPairs", "BRUTE_FORCE_MAX"]


class FilterArrays(NamedTuple):
    """A `CollisionFilter`'s per-shape arrays (S,) as one bundle for the compiled pair tests."""
    is_plane: np.ndarray
    node: np.ndarray
    parent_node: np.ndarray
    collide_with_parent: np.ndarray
    group: np.ndarray
    mask: np.ndarray
    contype: np.ndarray
    conaffinity: np.ndarray
    assembly: np.ndarray
    active: np.ndarray


@dataclass
class CollisionFilter:
    """Per-shape data the pair filter needs (S shapes): `per_shape`, the `FilterArrays`, where
    `assembly (S,)` is the node of the rigid assembly the shape moves with (its nearest non-fixed
    ancestor or itself; -1 = the world) and `active (S,)` says that assembly is dynamic (without
    motion information every node is its own assembly and active); `apart`: the sorted keys
    (`_node_pair_keys`) of the node pairs that a joint keeps from colliding."""

    per_shape: FilterArrays
    apart: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _allowed: np.ndarray = field(default=None, init=False, repr=False, compare=False)  # `allowed_pairs`, made on first use
    _grid: "GridArrays" = field(default=None, init=False, repr=False, compare=False)  # `grid`, made on first use

    @cached_property
    def n_finite(self):
        """How many shapes have finite bounding boxes (all but the planes): picks the broad phase."""
        return int(np.count_nonzero(~self.per_shape.is_plane))

    def grid(self):
        """This filter's `GridArrays`, made once (the filter is constant)."""
        if self._grid is None:
            finite = np.flatnonzero(~self.per_shape.is_plane)
            self._grid = GridArrays(finite, np.flatnonzero(self.per_shape.is_plane), self.per_shape, self.apart,
                                    self.finite_may_pair(finite))
        return self._grid

    def finite_may_pair(self, finite):
        """Whether the collision bits of the shapes `finite` let any two of them collide: some two
        of their classes (group, mask, contype, conaffinity), or one class shared by two shapes, that
        both rules of `_allowed` accept. False for a net's knots in one group their mask leaves out:
        only the planes can then touch them, and the grid has nothing to sort (`grid_pairs`). The
        rules' other terms (nodes, parents, assemblies, joints) only ever refuse a pair, so where the
        bits refuse every pair no pair of finite shapes is allowed; past CLASSES_TESTED classes it
        answers True without testing."""
        f = self.per_shape
        classes, members = np.unique(np.column_stack([f.group[finite], f.mask[finite], f.contype[finite],
                                                      f.conaffinity[finite]]).astype(np.int64),
                                     axis=0, return_counts=True)
        if len(classes) > CLASSES_TESTED:
            return True
        for a in range(len(classes)):
            for b in range(a, len(classes)):
                if a == b and members[a] < 2:
                    continue
                (ga, ma, ta, ca), (gb, mb, tb, cb) = classes[a].tolist(), classes[b].tolist()
                if ga & mb and gb & ma and (ta & cb) | (tb & ca):
                    return True
        return False

    def allowed_pairs(self):
        """(K, 2) int64 every pair a < b of shapes the filter allows, sorted by a then b: the brute
        force's candidates, made once (the filter is constant) from
        `physics.containers.pairs.distinct_pair_indices`, so that a step only tests their boxes."""
        if self._allowed is None:
            found = []
            for i, j in distinct_pair_indices(len(self.per_shape.node)):
                i, j = (x.ravel() for x in np.broadcast_arrays(i, j))
                keep = self.allows(i, j)
                found.append(np.column_stack([i[keep], j[keep]]))
            pairs = np.concatenate(found).astype(np.int64).reshape(-1, 2) if found else np.zeros((0, 2), np.int64)
            self._allowed = np.ascontiguousarray(pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))])
        return self._allowed

    def may_pair(self):
        """False when no two shapes can ever be paired: every pair needs a dynamic assembly on one
        side and a different assembly on the other (a conservative, O(S) test, done once)."""
        return bool(self.per_shape.active.any()) and np.unique(self.per_shape.assembly).size > 1

    def allows(self, a, b):
        """Boolean mask over index arrays a, b (shape indices): may these pairs collide?"""
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
        allowed = _allows_many(a.ravel(), b.ravel(), self.per_shape)
        if self.apart.size:
            allowed &= ~self.kept_apart(np.column_stack([a.ravel(), b.ravel()]))
        return allowed.reshape(a.shape)

    def kept_apart(self, pairs):
        """(K,) bool: which shape pairs (K, 2) join two nodes that a joint keeps from colliding."""
        return np.isin(_node_pair_keys(self.per_shape.node[pairs[:, 0]], self.per_shape.node[pairs[:, 1]]), self.apart)


def _node_pair_keys(a, b):
    """One int64 per unordered node pair: the smaller index in the high 32 bits."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return (np.minimum(a, b) << 32) | np.maximum(a, b)


def collision_filter(shapes, parent, motion=None, apart=()):
    """The `CollisionFilter` of a `ShapeSet` in a hierarchy with `parent (N,)` (-1 = world),
    optional `motion (N,)` strings (fixed | kinematic | dynamic) and `apart`, (node, node) pairs
    whose shapes never collide (the two nodes of a joint: docs/scene-format.md)."""
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
    apart = np.asarray(apart, np.int64).reshape(-1, 2)
    per_shape = FilterArrays(shapes.kind == PLANE, node, parent[node], shapes.collide_with_parent, shapes.group,
                             shapes.mask, shapes.contype, shapes.conaffinity, assembly[node], active[node])
    return CollisionFilter(per_shape, np.unique(_node_pair_keys(apart[:, 0], apart[:, 1])))


@kernel
def overlapping(lo, hi, candidates, out):
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
def _allowed(a, b, f):
    """May shapes a and b collide (the rules of docs/architecture.md, "Collision interface")? Both
    Bullet's rule (group/mask, each side accepts the other) and MuJoCo's (contype/conaffinity,
    either side accepts the other) must hold; with the default bits each holds for every pair."""
    na, nb = f.node[a], f.node[b]
    return (na != nb and not (f.is_plane[a] and f.is_plane[b])
            and (f.group[a] & f.mask[b]) != 0 and (f.group[b] & f.mask[a]) != 0
            and ((f.contype[a] & f.conaffinity[b]) | (f.contype[b] & f.conaffinity[a])) != 0
            and (f.parent_node[b] != na or f.collide_with_parent[b])
            and (f.parent_node[a] != nb or f.collide_with_parent[a])
            and f.assembly[a] != f.assembly[b] and (f.active[a] or f.active[b]))


@kernel
def _allows_many(a, b, f):
    out = np.empty(a.shape[0], dtype=np.bool_)
    for k in range(a.shape[0]):
        out[k] = _allowed(a[k], b[k], f)
    return out


@kernel(inline=True)
def _cell_index(x, top):
    """floor(x) clamped to [0, top] as a float first: a NaN or huge coordinate lands in an edge
    cell and never overflows the integer."""
    x = np.floor(x)
    if not x >= 0.0:        # NaN too
        return 0
    return int(min(x, float(top)))


@kernel(inline=True)
def _kth(a, k):
    """The k-th smallest of a (0-based), a reordered in place (Hoare's selection): the value the
    same whatever the selection, so np.median's bits."""
    low, high = 0, a.shape[0] - 1
    while low < high:
        pivot = a[(low + high) >> 1]
        i, j = low, high
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            high = j
        elif k >= i:
            low = i
        else:
            break
    return a[k]


@kernel(inline=True)
def _median(a):
    """np.median of a (n > 0), a reordered in place: the middle value, or the mean (x + y) / 2 of
    the two middle ones, as numpy and numba's np.median compute it."""
    n = a.shape[0]
    half = n >> 1
    upper = _kth(a, half)
    if n & 1:
        return upper
    lower = a[0]
    for i in range(1, half):        # (after the selection the lower half holds what is below)
        lower = max(lower, a[i])
    return (lower + upper) / 2


@kernel
def _grid_frame(lo, hi, finite, factor, extent):
    """The grid's origin (the lowest corner of the boxes) and cell edge: `factor` times the median
    box's largest extent (most boxes then cover 1 to 8 cells), never so small that a cell index
    passes 2^_GRID_BITS (far-apart tiny boxes), never zero (points). Boxes with a non-finite or
    astronomical coordinate (a diverged body, before the divergence check stops the run) are left
    out of both. extent (F,): scratch."""
    origin = (np.inf, np.inf, np.inf)
    top = (-np.inf, -np.inf, -np.inf)
    m = 0
    for p in range(finite.shape[0]):
        i = finite[p]
        sane = True
        for c in range(3):
            if not (abs(lo[i, c]) < 1e12 and abs(hi[i, c]) < 1e12):
                sane = False
        if sane:
            origin = (min(origin[0], lo[i, 0]), min(origin[1], lo[i, 1]), min(origin[2], lo[i, 2]))
            top = (max(top[0], hi[i, 0]), max(top[1], hi[i, 1]), max(top[2], hi[i, 2]))
            largest = 0.0
            for c in range(3):
                largest = max(largest, hi[i, c] - lo[i, c])
            extent[m] = largest
            m += 1
    if m == 0:
        return (0.0, 0.0, 0.0), 1.0
    span = max(top[0] - origin[0], top[1] - origin[1], top[2] - origin[2])
    return origin, max(factor * _median(extent[:m]), span / 2.0 ** (_GRID_BITS - 1), 1e-9)


@kernel
def _box_cells(lo, hi, finite, origin, inv_cell, cell_lo, cell_hi, count):
    """The lowest and highest grid cell (ix, iy, iz) of each finite box, and how many cells each
    covers into count (F,); -> how many entries the grid then holds (the boxes of at most
    GRID_MAX_CELLS cells, an entry a cell)."""
    top = (1 << _GRID_BITS) - 1
    entries = 0
    for p in range(finite.shape[0]):
        i = finite[p]
        n = 1
        for c in range(3):
            cell_lo[p, c] = _cell_index((lo[i, c] - origin[c]) * inv_cell, top)
            cell_hi[p, c] = _cell_index((hi[i, c] - origin[c]) * inv_cell, top)
            n *= cell_hi[p, c] - cell_lo[p, c] + 1
        count[p] = n
        if n <= GRID_MAX_CELLS:
            entries += n
    return entries


@kernel
def _cell_order(key, order, cell, start):
    """np.argsort(key, kind="mergesort") of the grid's cell keys (n,) into order (n,), the same
    permutation (a stable sort has one), with cell (n,) and start (COUNTING_SPAN n + 1,) as scratch:
    by counting where the occupied cells span at most COUNTING_SPAN per entry (a heap's do: its
    boxes fill a block of cells), one pass to count and one to place (the 1,000-box heap's grid pass
    0.58 -> 0.48 ms); by a merge sort elsewhere (`physics.containers.stable_order`)."""
    n = key.shape[0]
    mask = (1 << _GRID_BITS) - 1
    low0, low1, low2 = mask, mask, mask
    high0, high1, high2 = 0, 0, 0
    for e in range(n):
        x, y, z = key[e] >> (2 * _GRID_BITS), (key[e] >> _GRID_BITS) & mask, key[e] & mask
        low0, low1, low2 = min(low0, x), min(low1, y), min(low2, z)
        high0, high1, high2 = max(high0, x), max(high1, y), max(high2, z)
    span = max(high0 - low0 + 1, 1) * max(high1 - low1 + 1, 1) * max(high2 - low2 + 1, 1)
    if n == 0 or span > COUNTING_SPAN * n:
        stable_order(key, order, cell)
        return
    # the cells numbered in key order: (x, y, z) lexicographically, as the packed keys sort
    ny, nz = high1 - low1 + 1, high2 - low2 + 1
    start[:span + 1] = 0
    for e in range(n):
        x = (key[e] >> (2 * _GRID_BITS)) - low0
        y = ((key[e] >> _GRID_BITS) & mask) - low1
        z = (key[e] & mask) - low2
        cell[e] = (x * ny + y) * nz + z
        start[cell[e] + 1] += 1
    for i in range(span):
        start[i + 1] += start[i]
    for e in range(n):          # in entry order within a cell: stable
        order[start[cell[e]]] = e
        start[cell[e]] += 1


@kernel
def _grid(lo, hi, finite, cell_lo, cell_hi, count, planes, out, f, scratch, n_entries):
    """The allowed overlapping pairs (min, max) of the finite boxes `finite` (grid cells `cell_lo`,
    `cell_hi`, `count` cells each, n_entries in all, from `_box_cells`), then of every plane against
    every finite box, into `out` while it has room (module docstring), in `scratch`'s arrays
    (`GridScratch`, room for n_entries). Returns how many were found (more than out holds: call
    again with a larger out)."""
    n = finite.shape[0]
    capacity = out.shape[0]
    k = 0
    # the grid's entries (cell key, box), sorted by key: the boxes of one cell are then adjacent
    key, box = scratch.key[:n_entries], scratch.box[:n_entries]
    order = scratch.order[:n_entries]
    e = 0
    for p in range(n):
        if count[p] <= GRID_MAX_CELLS:
            for x in range(cell_lo[p, 0], cell_hi[p, 0] + 1):
                for y in range(cell_lo[p, 1], cell_hi[p, 1] + 1):
                    for z in range(cell_lo[p, 2], cell_hi[p, 2] + 1):
                        key[e] = (x << (2 * _GRID_BITS)) | (y << _GRID_BITS) | z
                        box[e] = p
                        e += 1
    _cell_order(key, order, scratch.cell[:n_entries], scratch.start)
    first = 0
    while first < n_entries:
        cell = key[order[first]]
        last = first + 1
        while last < n_entries and key[order[last]] == cell:
            last += 1
        cx, cy, cz = cell >> (2 * _GRID_BITS), (cell >> _GRID_BITS) & ((1 << _GRID_BITS) - 1), \
            cell & ((1 << _GRID_BITS) - 1)
        for u in range(first, last):
            p = box[order[u]]
            i = finite[p]
            for v in range(u + 1, last):
                q = box[order[v]]
                # reported only in the first cell the two share
                if max(cell_lo[p, 0], cell_lo[q, 0]) != cx or max(cell_lo[p, 1], cell_lo[q, 1]) != cy \
                        or max(cell_lo[p, 2], cell_lo[q, 2]) != cz:
                    continue
                j = finite[q]
                if lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1] \
                        and lo[j, 1] <= hi[i, 1] and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2] \
                        and _allowed(i, j, f):
                    if k < capacity:
                        out[k, 0], out[k, 1] = min(i, j), max(i, j)
                    k += 1
        first = last
    # the boxes too large for the grid, against every finite box (each such pair once)
    for p in range(n):
        if count[p] <= GRID_MAX_CELLS:
            continue
        i = finite[p]
        for q in range(n):
            if q == p or (count[q] > GRID_MAX_CELLS and q < p):
                continue
            j = finite[q]
            if lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1] and lo[j, 1] <= hi[i, 1] \
                    and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2] \
                    and _allowed(i, j, f):
                if k < capacity:
                    out[k, 0], out[k, 1] = min(i, j), max(i, j)
                k += 1
    return _plane_pairs(lo, hi, finite, planes, out, f, k)


@kernel
def _plane_pairs(lo, hi, finite, planes, out, f, k):
    """`_grid`'s last part: every plane against every finite box, the allowed overlapping pairs
    (min, max) into `out` from its row k while it has room; returns k past them (found, stored
    or not). Called, not inlined: `grid_pairs` calls it too, and an inlined helper is compiled at
    each call site (physics.core.compiled, 5)."""
    capacity = out.shape[0]
    for i in planes:
        for p in range(finite.shape[0]):
            j = finite[p]
            if lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1] and lo[j, 1] <= hi[i, 1] \
                    and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2] \
                    and _allowed(i, j, f):
                if k < capacity:
                    out[k, 0], out[k, 1] = min(i, j), max(i, j)
                k += 1
    return k


@kernel
def _sort_pairs(pairs, start, fill, out):
    """The rows of pairs (K, 2) sorted by the first then the second index into out (K, 2), start
    (S + 1,) and fill (S,) scratch: a counting sort on the first (O(K + S)), then insertion sort
    within each group (a shape has few partners)."""
    n_shapes = fill.shape[0]
    start[:] = 0
    for k in range(pairs.shape[0]):
        start[pairs[k, 0] + 1] += 1
    for s in range(n_shapes):
        start[s + 1] += start[s]
    fill[:] = start[:-1]
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


class GridArrays(NamedTuple):
    """What the grid broad phase needs of a `CollisionFilter` besides the boxes (`grid_pairs`)."""
    finite: np.ndarray          # (F,) int64 the shapes with finite boxes (all but the planes) …
    planes: np.ndarray          # (P,) int64 … and the planes
    per_shape: FilterArrays
    apart: np.ndarray           # the sorted keys of the node pairs a joint keeps apart (`CollisionFilter.apart`)
    finite_pairs: bool          # whether two finite shapes may collide at all (`CollisionFilter.finite_may_pair`)


class GridScratch(NamedTuple):
    """The grid broad phase's working arrays (`grid_pairs`), made once by a caller that runs it
    every sub-step (`grid_scratch`), so that a pass allocates nothing: F finite shapes, S shapes,
    room for E grid entries (a box's cells) and K pairs."""
    extent: np.ndarray          # (F,) each box's largest extent (the cell edge's median)
    count: np.ndarray           # (F,) int64 the cells each box covers
    key: np.ndarray             # (E,) int64 the entries' cell keys …
    box: np.ndarray             # (E,) int64 … their boxes …
    order: np.ndarray           # (E,) int64 … in cell order (`_cell_order`) …
    cell: np.ndarray            # (E,) int64 … and its scratch
    start: np.ndarray           # (COUNTING_SPAN E + 1,) int64 the counting sort's cells
    first: np.ndarray           # (S + 1,) int64 the pairs' groups by first shape (`_sort_pairs`) …
    fill: np.ndarray            # (S,) int64
    pairs: np.ndarray           # (K, 2) int64 … and the pairs sorted


def grid_scratch(filter, capacity, entries=None):
    """A `GridScratch` for `filter`'s shapes with room for `capacity` pairs and `entries` grid
    entries (None: `grid_entries`' first guess)."""
    grid = filter.grid()
    F, S = len(grid.finite), len(filter.per_shape.node)
    # (no grid where no two finite shapes may collide, `grid_pairs`: no room for its entries, whose
    # counting sort's cells are some 5 MB for the 100 × 100 net's knots)
    E = 0 if not grid.finite_pairs else grid_entries(F) if entries is None else entries
    return GridScratch(np.empty(F), np.empty(F, np.int64), *(np.empty(E, np.int64) for _ in range(4)),
                       np.empty(COUNTING_SPAN * E + 1, np.int64), np.empty(S + 1, np.int64), np.empty(S, np.int64),
                       np.empty((capacity, 2), np.int64))


def grid_capacity(shapes, found=None):
    """How many pairs a grid's output is made with room for: a quarter more than the last call
    `found`, or four a shape at first."""
    return 4 * shapes + 16 if found is None else found + found // 4 + 16


def grid_entries(finite, needed=None):
    """How many grid entries a `GridScratch` is made with room for: a quarter more than a pass
    `needed`, or eight a finite box at first (most cover 1 to 8 cells)."""
    return 8 * finite + 16 if needed is None else needed + needed // 4 + 16


@kernel
def grid_pairs(lo, hi, grid, cell_lo, cell_hi, out, scratch):
    """`candidate_pairs`' grid (module docstring) in one call: the allowed pairs of overlapping boxes
    lo, hi (S, 3), `grid` a `GridArrays`, sorted by their first then their second shape, without
    those a joint keeps apart, into out (K, 2); cell_lo, cell_hi (F, 3) and `scratch` (a
    `GridScratch`) its working arrays. -> (pairs found before the joints' are left out, how many out
    holds), the second −1 where out (or the scratch's pairs) had no room for the first (call again
    with room for as many), or −2 where the scratch had no room for the grid's entries, the first
    then how many it needs."""
    finite = grid.finite
    F = finite.shape[0]
    if grid.finite_pairs:
        origin, cell = _grid_frame(lo, hi, finite, GRID_CELL, scratch.extent[:F])
        count = scratch.count[:F]
        entries = _box_cells(lo, hi, finite, origin, 1.0 / cell, cell_lo, cell_hi, count)
        if entries > scratch.key.shape[0]:
            return entries, -2
        found = _grid(lo, hi, finite, cell_lo, cell_hi, count, grid.planes, out, grid.per_shape, scratch, entries)
    else:   # no two finite shapes may collide: the planes' pairs alone, the same as `_grid` would find
        found = _plane_pairs(lo, hi, finite, grid.planes, out, grid.per_shape, 0)
    if found > out.shape[0] or found > scratch.pairs.shape[0]:
        return found, -1
    pairs = scratch.pairs[:found]
    _sort_pairs(out[:found], scratch.first, scratch.fill, pairs)
    node, apart = grid.per_shape.node, grid.apart
    k = 0
    for p in range(found):
        a, b = node[pairs[p, 0]], node[pairs[p, 1]]
        if apart.size:      # `CollisionFilter.kept_apart`: the key's place in the sorted keys
            key = (min(a, b) << 32) | max(a, b)
            at = np.searchsorted(apart, key)
            if at < apart.size and apart[at] == key:
                continue
        out[k, 0], out[k, 1] = pairs[p, 0], pairs[p, 1]
        k += 1
    return found, k


class TooManyPairs(ValueError):
    """The broad phase found more pairs than its budget (`candidate_pairs`); `count` says how many."""

    def __init__(self, count, budget):
        self.count, self.budget = count, budget
        super().__init__(f"{count:,} candidate pairs, more than the budget of {budget:,}")


def brute_force(filter):
    """Whether `candidate_pairs` tests every pair the filter allows (`CollisionFilter.allowed_pairs`,
    with `overlapping`) rather than a grid: up to BRUTE_FORCE_MAX shapes of finite size."""
    return filter.n_finite <= BRUTE_FORCE_MAX


def candidate_pairs(lo, hi, filter, budget=None):
    """(K, 2) int64 shape index pairs (a < b, sorted by a then b) whose AABBs overlap and that the
    filter allows. `lo`, `hi` (S, 3) from `physics.model.shapes.aabbs`; the method: the module docstring.
    `budget`: at most this many pairs, or TooManyPairs, raised once they are counted and before
    they are stored (10⁴ coincident spheres are 5·10⁷ pairs: 0.8 GB to list)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if lo.ndim != 2 or lo.shape[1:] != (3,) or hi.shape != lo.shape or len(filter.per_shape.node) != len(lo):
        raise ValueError(f"lo, hi: got shapes {lo.shape}, {hi.shape}; expected (S, 3) with S = {len(filter.per_shape.node)}")
    if brute_force(filter):
        candidates = filter.allowed_pairs()
        out = np.empty_like(candidates)  # made here: an array made in numba costs more to hand back
        k = overlapping(lo, hi, candidates, out)
        if budget is not None and k > budget:
            raise TooManyPairs(k, budget)
        return out[:k]
    grid = filter.grid()
    cell_lo, cell_hi = np.empty((len(grid.finite), 3), np.int64), np.empty((len(grid.finite), 3), np.int64)
    capacity = getattr(filter, "_grid_capacity", grid_capacity(len(lo)))
    out = np.empty((capacity, 2), dtype=np.int64)
    scratch = grid_scratch(filter, capacity, getattr(filter, "_grid_entries", None))
    while True:
        found, k = grid_pairs(lo, hi, grid, cell_lo, cell_hi, out, scratch)
        if k == -2:         # (room for the grid's entries, remembered as the pairs' is)
            filter._grid_entries = grid_entries(len(grid.finite), found)
            scratch = grid_scratch(filter, len(out), filter._grid_entries)
            continue
        if budget is not None and found > budget:
            raise TooManyPairs(found, budget)
        if k >= 0:
            break
        out = np.empty((found, 2), dtype=np.int64)
        scratch = scratch._replace(pairs=np.empty((found, 2), dtype=np.int64))
    filter._grid_capacity = grid_capacity(len(lo), found)
    return out[:k]
