"""What the narrow phase carries from one step to the next (`ContactCache`): the persistent
manifolds of the GJK/EPA pairs and the solver's impulses for warm starting.

- Persistent manifold (`merge_into_manifold`, after Bullet's btPersistentManifold): GJK/EPA gives
  one point per step; it is merged into the pair's stored points, kept in both shapes' frames. Each
  step a point follows the smaller shape and is re-projected along the new normal onto the larger
  one's supporting plane, so points survive fast sliding; dropped once separated by more than
  `BREAK` or re-projected more than `BREAK` off the larger shape; at most 4 kept, the new one and
  those spanning the largest area.
- Warm starting (`lookup_impulses`, `ContactCache.store`): each contact point's accumulated impulse
  is stored under its key (shape a, shape b, feature id; `contact_keys`) in sorted arrays matched
  by binary search in compiled code; a point with a new id takes the impulse of last step's
  unmatched point of the pair within `WARM_MATCH_DISTANCE` and `WARM_MATCH_COS`.
"""
from typing import NamedTuple

import numpy as np

from physics.core.compiled import kernel
from physics.math.rotation_kernels import cross, tangent_basis
from physics.model.hull import HULL_PLANES
from physics.model.shapes import BOX, CAPSULE, CYLINDER, HULL
from physics.collision.closest_points import dot, rot, rot_t, emit, segment_closest, closest_on_box, closest_on_cylinder
from physics.collision.gjk_epa import support, epa_workspace

BREAK = 0.02  # m: Bullet's default contact breaking threshold for persistent manifolds
# ----------------------------------------------------------------------------- persistent manifold
@kernel
def bounding_radius(kind, prm):
    """Radius of a ball about the shape's centre holding the shape (m)."""
    if kind == BOX:
        return np.sqrt(prm[0] ** 2 + prm[1] ** 2 + prm[2] ** 2)
    if kind == CYLINDER:
        return np.sqrt(prm[0] ** 2 + prm[1] ** 2)
    if kind == CAPSULE:
        return prm[0] + prm[1]
    return prm[0]  # sphere; hull (the largest |vertex|)


@kernel
def distance_outside(kind, c, R, prm, p):
    """Distance from the world point p to the solid shape (0 inside): box, capsule, cylinder or
    sphere; for a hull the largest distance outside its face planes, max(n . x - d, 0), a lower
    bound of the distance that equals it off a face's middle."""
    if kind == HULL:
        x0, x1, x2 = p[0] - c[0], p[1] - c[1], p[2] - c[2]
        l0 = R[0, 0] * x0 + R[1, 0] * x1 + R[2, 0] * x2
        l1 = R[0, 1] * x0 + R[1, 1] * x1 + R[2, 1] * x2
        l2 = R[0, 2] * x0 + R[1, 2] * x1 + R[2, 2] * x2
        out = 0.0
        for f in range(int(prm[2])):
            q = HULL_PLANES + 4 * f
            out = max(out, prm[q] * l0 + prm[q + 1] * l1 + prm[q + 2] * l2 - prm[q + 3])
        return out
    if kind == BOX:
        q, inside, _, _ = closest_on_box(p, c, R, prm[:3])
    elif kind == CYLINDER:
        q, inside, _, _ = closest_on_cylinder(p, c, R, prm[0], prm[1])
    else:  # capsule (a sphere: h = 0): the distance to its segment less the radius
        u = R[:, 1]
        d = p - (c + segment_closest(p, c, u, prm[1]) * u)
        return max(np.sqrt(dot(d, d)) - prm[0], 0.0)
    if inside:
        return 0.0
    d = p - q
    return np.sqrt(dot(d, d))


@kernel(inline=True)
def merge_into_manifold(ka, ca, Ra, pa, kb, cb, Rb, pb, hit, n, wa, wb, local_a, local_b, feats, count, next_id,
              out_p, out_n, out_d, out_f):
    """Merge this step's GJK/EPA point (normal n a -> b, witnesses wa on a, wb on b) into the
    pair's stored points (local to a and to b). Every point's depth, the new one's too, is
    (p_a - p_b) . n of its two surface points. Updates local_a, local_b, feats (4, ...) in place;
    returns (count, next_id)."""
    if not hit:
        return 0, next_id
    # Refresh. A stored point stays attached to the smaller shape, which bounds the contact patch
    # (a puck's corners or rim on a table); its partner is re-projected along this step's normal onto
    # the larger shape's supporting plane. Comparing the two stored points instead (Bullet) drops
    # every point of a pair sliding faster than BREAK per step (1.2 m/s at 60 Hz), which leaves one
    # EPA point a step and lets a frictionless puck sink through a table. A point is dropped once
    # separated by more than BREAK or once its re-projection lies more than BREAK off the larger shape.
    a_small = bounding_radius(ka, pa) <= bounding_radius(kb, pb)
    deepest = support(kb, cb, Rb, pb, -n) if a_small else support(ka, ca, Ra, pa, n)
    kept = 0
    for i in range(count):
        if a_small:
            pa_w = ca + rot(Ra, local_a[i])
            d = dot(pa_w - deepest, n)
            pb_w = pa_w - d * n
            off = distance_outside(kb, cb, Rb, pb, pb_w)
        else:
            pb_w = cb + rot(Rb, local_b[i])
            d = dot(deepest - pb_w, n)
            pa_w = pb_w + d * n
            off = distance_outside(ka, ca, Ra, pa, pa_w)
        if d > -BREAK and off < BREAK:
            local_a[kept] = rot_t(Ra, pa_w - ca)
            local_b[kept] = rot_t(Rb, pb_w - cb)
            feats[kept] = feats[i]
            kept += 1
    count = kept
    new_a, new_b = rot_t(Ra, wa - ca), rot_t(Rb, wb - cb)
    # a stored point close to the new one is the same point: replace it, keep its id
    slot = -1
    for i in range(count):
        d = (ca + rot(Ra, local_a[i])) - wa
        if dot(d, d) < BREAK * BREAK:
            slot = i
    if slot < 0:
        if count < 4:
            slot = count
            count += 1
        else:
            # five points: drop the one whose removal keeps the largest area (never the new one)
            pts = np.empty((5, 3))
            for i in range(4):
                pts[i] = ca + rot(Ra, local_a[i])
            pts[4] = wa
            best_area, slot = -1.0, 0
            for drop in range(4):  # the four others, in order: q < drop stays q, the rest q + 1
                p0, p1 = pts[0 if drop > 0 else 1], pts[1 if drop > 1 else 2]
                p2, p3 = pts[2 if drop > 2 else 3], pts[4]
                x = cross(p2 - p0, p3 - p1)
                area = dot(x, x)
                if area > best_area:
                    best_area, slot = area, drop
        feats[slot] = next_id
        next_id += 1
    local_a[slot] = new_a
    local_b[slot] = new_b
    for i in range(count):
        pa_w = ca + rot(Ra, local_a[i])
        pb_w = cb + rot(Rb, local_b[i])
        emit(out_p, out_n, out_d, out_f, i, pa_w, pb_w, n, dot(pa_w - pb_w, n), feats[i])
    return count, next_id


@kernel(inline=True)
def _bisect(keys, lo, hi, key):
    """The first index in [lo, hi] of the sorted keys whose key is ≥ key, given that the answer lies
    there (keys[lo − 1] < key ≤ keys[hi] where they exist): binary search."""
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def lower_bound(keys, n, key):
    """The first index of the sorted keys[:n] whose key is ≥ key (n if none; binary search)."""
    return _bisect(keys, 0, n, key)


@kernel
def lower_bound_near(keys, n, key, hint):
    """`lower_bound(keys, n, key)`, searched outward from index `hint` (galloping: steps of 1, 2, 4,
    … away from it, then a binary search within the last step): O(log d) for an answer d entries
    from the hint, so a pass over keys that come nearly in order (this step's contact points, pair
    by pair) costs a few probes a key, not log n cache misses."""
    if hint < n and keys[hint] < key:       # the answer lies after the hint
        lo, hi, step = hint + 1, hint + 1, 1
        while hi < n and keys[hi] < key:
            lo = hi + 1
            hi = lo + step
            step *= 2
        hi = min(hi, n)
    else:                                   # at the hint or before it
        hi = min(hint, n)
        lo, step = hi, 1
        while lo > 0 and keys[lo - 1] >= key:
            hi = lo - 1
            lo = max(hi - step, 0)
            step *= 2
    return _bisect(keys, lo, hi, key)


@kernel
def find_key(keys, n, key):
    """Index of key in the sorted keys[:n], or -1."""
    lo = lower_bound(keys, n, key)
    return lo if lo < n and keys[lo] == key else -1


# The callers below allocate the kernels' outputs: an array made inside numba costs ~1.3 us to hand back.
@kernel
def contact_keys(shape_a, shape_b, feature_id, n_shapes, keys):
    """keys (M,) = (shape_a * S + shape_b) * 2^20 + feature_id mod 2^20: one contact point's identity."""
    for i in range(keys.shape[0]):
        keys[i] = (shape_a[i] * n_shapes + shape_b[i]) * (1 << 20) + (feature_id[i] & ((1 << 20) - 1))


# m: a contact point whose feature id is new takes the impulse of last step's point of the same
# shape pair within this distance that no point matched by id. The clipped polygon of two faces
# with a common edge line has corners on the other face's side planes: a drift of a micrometre
# cuts a corner one step (an edge-plane tag) and keeps it the next (a vertex tag), the same point
# under another id; in the settling 1,000-box heap half the loaded points that started cold each
# step were such relabels, within 1 mm of a stored point. Jolt matches within 1 cm
# (mContactPointPreserveLambdaMaxDistSq); that also handed distinct points each other's impulses
# and swayed the shipped pyramid 22 mm out of its plane in 10 s, against 0.9 mm at 2 mm.
WARM_MATCH_DISTANCE = 0.002
# and whose normal is within 0.1 rad of this one (an edge contact of the same pair at the same
# place is another contact)
WARM_MATCH_COS = float(np.cos(0.1))


@kernel(inline=True)
def _warm(impulses, normals, j, normal, i, out):
    """out[i] = stored impulse j (normal, t1, t2), its friction part re-expressed in the tangents of
    this step's normal[i]: the world impulse λ₁ t₁ + λ₂ t₂ of last step's normal normals[j] projected
    onto the new t₁, t₂. The tangents are a fixed function of the normal (Duff et al.'s basis),
    but not a continuous one: across n_z = 0 they flip sign, and a pyramid's side contacts
    (n ≈ ±x) cross it with every wobble; copied as numbers, their friction came back reversed."""
    out[i, 0] = impulses[j, 0]
    # On one side of n_z = 0 the basis turns with the normal, and the numbers keep the impulse's
    # direction to first order in the turn (a step's turn is small); only a flip is re-expressed.
    # Not stored (NaN): as stored.
    if (normals[j, 2] >= 0.0) == (normal[i, 2] >= 0.0) or normals[j, 0] != normals[j, 0]:
        out[i, 1], out[i, 2] = impulses[j, 1], impulses[j, 2]
        return
    t1, t2 = tangent_basis((normals[j, 0], normals[j, 1], normals[j, 2]))
    fx = impulses[j, 1] * t1[0] + impulses[j, 2] * t2[0]
    fy = impulses[j, 1] * t1[1] + impulses[j, 2] * t2[1]
    fz = impulses[j, 1] * t1[2] + impulses[j, 2] * t2[2]
    u1, u2 = tangent_basis((normal[i, 0], normal[i, 1], normal[i, 2]))
    out[i, 1] = fx * u1[0] + fy * u1[1] + fz * u1[2]
    out[i, 2] = fx * u2[0] + fy * u2[1] + fz * u2[2]


@kernel(refcounts=False)
def lookup_impulses(stored, shape_a, shape_b, feature_id, point, normal, out, mine, taken, found):
    """Each contact's stored impulse into out (M, 3) (normal, t1, t2), 0 where none: by key (binary
    search in the sorted keys), then, for the points left, by position (`WARM_MATCH_DISTANCE`): the
    nearest stored point of the same pair, normal within 0.1 rad (`WARM_MATCH_COS`), that no point
    took; re-expressed in this step's tangents (`_warm`). `stored`: `StoredImpulses`; point, normal
    (M, 3): this step's, world. Into found (M,) bool: which points found a stored one (a point
    resting with no load has a stored impulse of 0, and is no new point for that). Its scratch, the
    caller's (it allocates nothing): mine (M,) int64 the points' keys, taken (K,) bool or longer,
    which stored points were taken."""
    keys, impulses, points, normals = stored.keys, stored.impulses, stored.points, stored.normals
    contact_keys(shape_a, shape_b, feature_id, stored.n_shapes, mine)
    taken[:keys.shape[0]] = False
    found[:] = False
    at = 0
    for i in range(mine.shape[0]):
        # this step's points come pair by pair in key order, nearly: the search starts at the last
        at = lower_bound_near(keys, keys.shape[0], mine[i], at)
        j = at if at < keys.shape[0] and keys[at] == mine[i] else -1
        found[i] = j >= 0
        if j >= 0:
            _warm(impulses, normals, j, normal, i, out)
            taken[j] = True
        else:
            out[i, 0], out[i, 1], out[i, 2] = 0.0, 0.0, 0.0
    near2 = WARM_MATCH_DISTANCE * WARM_MATCH_DISTANCE
    for i in range(mine.shape[0]):
        if found[i]:
            continue
        pair = mine[i] >> 20
        lo = lower_bound(keys, keys.shape[0], pair << 20)      # the pair's stored points start here
        best, best_d2 = -1, near2
        j = lo
        while j < keys.shape[0] and keys[j] >> 20 == pair:
            facing = normals[j, 0] * normal[i, 0] + normals[j, 1] * normal[i, 1] + normals[j, 2] * normal[i, 2]
            if not taken[j] and facing >= WARM_MATCH_COS:
                d2 = (points[j, 0] - point[i, 0]) ** 2 + (points[j, 1] - point[i, 1]) ** 2 \
                    + (points[j, 2] - point[i, 2]) ** 2
                if d2 <= best_d2:
                    best, best_d2 = j, d2
            j += 1
        if best >= 0:
            _warm(impulses, normals, best, normal, i, out)
            taken[best] = True
            found[i] = True


@kernel(refcounts=False)
def _store(shape_a, shape_b, feature_id, n_shapes, impulse, columns, point, normal, keys, order, sorted_keys,
           sorted_impulse, sorted_point, sorted_normal):
    """The contacts' keys sorted, and their impulses (columns `columns` of impulse (M, 3): normal,
    t1, t2), points and normals (M, 3) in that order, into the last four arrays; True, or False
    when the contacts were too far out of order for insertion sort (then nothing is written: the
    caller sorts with numpy's stable argsort, `_store_in_order`). keys, order (M,) int64: scratch,
    left holding the keys unsorted."""
    contact_keys(shape_a, shape_b, feature_id, n_shapes, keys)
    # contacts come pair by pair with pairs sorted, so only each pair's <= 4 points are out of order:
    # insertion sort is O(M) then (mergesort costs ~1.4x numpy's radix sort at 24k points); it gives
    # way to a stable argsort once it has shifted more than 4 M elements (pairs given in any order),
    # numpy's, in the caller: numba's mergesort would compile on every first step for a case that
    # shipped scenes never meet (a stable sort's order is the same whichever sorts)
    for i in range(keys.shape[0]):
        order[i] = i
    shifts = 0
    for i in range(1, keys.shape[0]):
        o = order[i]
        j = i
        while j > 0 and keys[order[j - 1]] > keys[o]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = o
        shifts += i - j
        if shifts > 4 * keys.shape[0]:
            return False
    _store_in_order(keys, order, impulse, columns, point, normal, sorted_keys, sorted_impulse, sorted_point,
                    sorted_normal)
    return True


@kernel(refcounts=False)
def _store_in_order(keys, order, impulse, columns, point, normal, sorted_keys, sorted_impulse, sorted_point,
                    sorted_normal):
    """keys (M,), impulses (columns `columns` of impulse), points and normals (M, 3) gathered in
    `order` into the last four arrays."""
    for i in range(keys.shape[0]):
        sorted_keys[i] = keys[order[i]]
        for c in range(3):
            sorted_impulse[i, c] = impulse[order[i], columns[c]]
            sorted_point[i, c] = point[order[i], c]
            sorted_normal[i, c] = normal[order[i], c]


NORMAL_T1_T2 = np.array([0, 1, 2], np.int64)   # `ContactCache.store`'s columns of an impulse given (normal, t1, t2)
STORED_VIEWS_KEPT = 8       # views of a set of the stored impulses kept by count (`ContactCache._impulse_room`)
WHOLE = -1                  # the key of a set's whole `StoredImpulses` among its views (`ContactCache.stored_room`)

MANIFOLD_FIELDS = ("keys", "local_a", "local_b", "feats", "counts", "next_ids")


def _manifold_arrays(capacity):
    """Empty manifold storage for `capacity` pairs: keys, local_a, local_b, feats, counts, next_ids."""
    return (np.zeros(capacity, dtype=np.int64), np.zeros((capacity, 4, 3)), np.zeros((capacity, 4, 3)),
            np.zeros((capacity, 4), dtype=np.int64), np.zeros(capacity, dtype=np.int64), np.zeros(capacity, dtype=np.int64))


class StoredImpulses(NamedTuple):
    """Last step's impulses as `ContactCache` keeps them for warm starting: sorted keys (K,) int64,
    impulses (K, 3) (normal, t1, t2), the shape count the keys were made with, and the points and
    normals (K, 3) world (`lookup_impulses` reads them all)."""

    keys: np.ndarray
    impulses: np.ndarray
    n_shapes: int
    points: np.ndarray
    normals: np.ndarray


class ContactCache:
    """State carried from one step to the next: the solver's accumulated impulses per contact point
    (keyed by shape_a, shape_b, feature_id) and the persistent manifolds of GJK/EPA pairs (keyed by
    the pair). Sorted key arrays, matched by binary search in compiled code (no per-contact Python
    work). The manifolds live in two sets of buffers, last step's and this step's, swapped each call.

    The narrow phase (`physics.collision.collision.contacts`) reads and swaps its working state: `manifolds`
    (last step's, `MANIFOLD_FIELDS`) and their count `n_manifolds`, `spare` (the buffers this step's
    are written into), `work` (GJK/EPA's scratch, `epa_workspace`), `n_shapes` (what the keys were
    made with), `capacity` (output rows for the next call: the last count plus a quarter),
    `outputs` (its two sets of output arrays, written in turn, the next one first:
    `physics.collision.collision._output_room`), `scratch` (its pairs' own) and `narrow_calls` (its
    kernel's calls, bound where the broad phase's buffer and this room come back)."""

    def __init__(self):
        self._impulse_keys = np.zeros(0, dtype=np.int64)
        self._impulses = np.zeros((0, 3))
        self._impulse_points = np.zeros((0, 3))
        self._impulse_normals = np.zeros((0, 3))
        self.manifolds = _manifold_arrays(8)
        self.n_manifolds = 0
        self.spare = _manifold_arrays(8)
        self.work = epa_workspace()
        self.n_shapes = 0
        self.capacity = 64  # output rows for the next `contacts` call: the last count plus a quarter
        self._impulse_sets = [None, None]   # the stored impulses' two sets of arrays (`_impulse_room`) …
        self._impulse_set = 0               # … and the one they are views of (the next store writes the other)
        self._stored = [None, None]         # `stored()`'s bundle of them, for each set
        self.outputs = [None, None]     # the narrow phase's output sets, the next one first
        self.scratch = None     # its scratch (`physics.collision.collision.narrow_scratch`), made by its first call …
        self.narrow_calls = None    # … and its kernel's calls (`physics.core.compiled.SteadyCall`), where bound

    def stored(self):
        """The stored impulses (`StoredImpulses`, the cache's own arrays: read, do not write), the
        same object while they stay (a caller's bound call finds it again)."""
        kept = self._stored[self._impulse_set]     # (one for each set of arrays: they are used in turn)
        if kept is None or kept.keys is not self._impulse_keys or kept.impulses is not self._impulses \
                or kept.points is not self._impulse_points or kept.normals is not self._impulse_normals \
                or kept.n_shapes != self.n_shapes:
            kept = self._stored[self._impulse_set] = StoredImpulses(self._impulse_keys, self._impulses, self.n_shapes,
                                                                    self._impulse_points, self._impulse_normals)
        return kept

    def stored_room(self):
        """(`StoredImpulses` of the whole set of arrays the stored impulses are the first count of,
        count), the same bundle whatever the count, so that a caller that passes the count beside
        it binds one call for each set (`physics.constraints.solver`: views cut to each count made
        a call of their own for every count); (`stored()`, its count) where they are no set's first
        (none stored yet, or put back from a snapshot)."""
        count = len(self._impulse_keys)
        room = self._impulse_sets[self._impulse_set]
        if room is None or self._impulse_keys.base is not room[2] or self._impulses.base is not room[3] \
                or self._impulse_points.base is not room[4] or self._impulse_normals.base is not room[5]:
            return self.stored(), count
        views = room[6]
        whole = views.get(WHOLE)
        if whole is None or whole.n_shapes != self.n_shapes:
            whole = views[WHOLE] = StoredImpulses(room[2], room[3], self.n_shapes, room[4], room[5])
        return whole, count

    def lookup(self, c):
        """(M, 3) the impulses stored for these contact points last step; 0 for new points."""
        out = np.empty((len(c), 3))
        lookup_impulses(self.stored(), c.shape_a, c.shape_b, c.feature_id, np.ascontiguousarray(c.point_world, dtype=np.float64),
                        np.ascontiguousarray(c.normal_world, dtype=np.float64), out, np.empty(len(c), np.int64),
                        np.empty(len(self._impulse_keys), np.bool_), np.empty(len(c), np.bool_))
        return out

    def store(self, c, impulse, columns=NORMAL_T1_T2):
        """Remember the solver's impulses (M, 3) for the contacts `c` (replaces the previous ones):
        `columns` (3,) int64, where in a row of `impulse` its normal, t1 and t2 parts are. They go
        into the other of two sets of arrays the cache writes in turn (`_impulse_room`), so that a
        step whose count of points stays allocates nothing here, and the impulses stored before
        stay as they are through one more store (`held`)."""
        impulse = np.asarray(impulse, dtype=np.float64)
        if impulse.shape != (len(c), 3):
            raise ValueError(f"impulse: got shape {impulse.shape}; expected ({len(c)}, 3)")
        if not len(c) and not len(self._impulse_keys):
            return      # none to remember and none remembered: the empty arrays stand (a robot in the air's sub-steps)
        keys, order, stored = self._impulse_room(len(c))
        point = np.ascontiguousarray(c.point_world, dtype=np.float64)
        normal = np.ascontiguousarray(c.normal_world, dtype=np.float64)
        if not _store(c.shape_a, c.shape_b, c.feature_id, self.n_shapes, impulse, columns, point, normal, keys, order,
                      *stored):
            _store_in_order(keys, np.argsort(keys, kind="stable"), impulse, columns, point, normal, *stored)
        self._impulse_keys, self._impulses, self._impulse_points, self._impulse_normals = stored
        self._impulse_set = 1 - self._impulse_set

    def _impulse_room(self, n):
        """The set of stored impulses' arrays the next store writes (the one the stored impulses are
        not views of), made with room for 2n points where it has less: its scratch keys and order
        (n,) int64 and its views (keys, impulses, points, normals) of n points, the same views while
        the count stays."""
        spare = 1 - self._impulse_set
        room = self._impulse_sets[spare]
        if room is None or len(room[0]) < n:
            room = self._impulse_sets[spare] = (np.empty(2 * n, np.int64), np.empty(2 * n, np.int64),
                                                np.empty(2 * n, np.int64), np.empty((2 * n, 3)),
                                                np.empty((2 * n, 3)), np.empty((2 * n, 3)), {})
        views = room[6]
        found = views.get(n)
        if found is None:
            if len(views) >= STORED_VIEWS_KEPT:     # (the whole set's stays: `stored_room`)
                whole = views.get(WHOLE)
                views.clear()
                if whole is not None:
                    views[WHOLE] = whole
            found = views[n] = (room[0][:n], room[1][:n], (room[2][:n], room[3][:n], room[4][:n], room[5][:n]))
        return found

    def state(self):
        """What the next step reads (`physics.pipeline.snapshot`): the stored impulses and the live
        manifolds, as named array copies."""
        n = self.n_manifolds
        out = {"impulse_keys": self._impulse_keys.copy(), "impulses": self._impulses.copy(),
               "impulse_points": self._impulse_points.copy(), "impulse_normals": self._impulse_normals.copy(),
               "n_shapes": np.array(self.n_shapes, np.int64)}
        for name, array in zip(MANIFOLD_FIELDS, self.manifolds):
            out["manifold_" + name] = array[:n].copy()
        return out

    def held(self):
        """The cache as it stands, by reference, for `put_held` (a RATTLE retry's `Undo`): valid
        until the next narrow phase, which writes this step's manifolds into the other set of
        buffers (`spare`) and swaps, and through one `store`, which writes the other set of the
        impulses' arrays: nothing writes the arrays held in place before then, so a retry puts
        back the references."""
        return (self._impulse_keys, self._impulses, self._impulse_points, self._impulse_normals, self._impulse_set,
                self.n_shapes, self.manifolds, self.n_manifolds)

    def put_held(self, held):
        """The cache as `held` found it, taken before the next narrow phase and at most one store."""
        (self._impulse_keys, self._impulses, self._impulse_points, self._impulse_normals, self._impulse_set,
         self.n_shapes, self.manifolds, self.n_manifolds) = held

    def part(self, shapes, touching=True):
        """This cache's entries (impulses and manifolds, as `state()` names them) of the shape pairs
        with a shape in `shapes` (S,) bool, or (touching False) of the others: `restore` one and
        `merge` the other to have them all again (a RATTLE retry, `physics.pipeline.retry.Undo`)."""
        n, m = self.n_shapes, self.n_manifolds
        live = {"impulse": (self._impulse_keys >> 20, {"impulse_keys": self._impulse_keys, "impulses": self._impulses,
                                                       "impulse_points": self._impulse_points,
                                                       "impulse_normals": self._impulse_normals}),
                "manifold": (self.manifolds[0][:m], {"manifold_" + name: array[:m]
                                                    for name, array in zip(MANIFOLD_FIELDS, self.manifolds)})}
        out = {"n_shapes": np.array(n, np.int64)}
        for pair, arrays in live.values():
            picked = np.flatnonzero((shapes[pair // n] | shapes[pair % n]) == touching) if n else np.zeros(0, np.int64)
            out.update({name: array[picked] for name, array in arrays.items()})
        return out

    def merge(self, state):
        """Add the entries of a `state()` whose pairs this cache has none of (`part`), in key order."""
        mine = self.state()
        both = {name: np.concatenate([mine[name], state[name]]) if mine[name].ndim else mine[name] for name in mine}
        for kind in ("impulse", "manifold"):
            order = np.argsort(both[kind + "_keys"], kind="stable")
            for name in both:
                if name.startswith(kind):
                    both[name] = both[name][order]
        self.restore(both)

    def restore(self, state):
        """Put back a `state()` (buffers sized to hold it; the spare set keeps its capacity)."""
        self._impulse_keys = state["impulse_keys"].copy()
        self._impulses = state["impulses"].copy()
        self._impulse_points = state["impulse_points"].copy()
        self._impulse_normals = state["impulse_normals"].copy()
        self.n_shapes = int(state["n_shapes"])
        n = len(state["manifold_keys"])
        manifolds = _manifold_arrays(max(8, n))
        for name, array in zip(MANIFOLD_FIELDS, manifolds):
            array[:n] = state["manifold_" + name]
        self.manifolds, self.n_manifolds = manifolds, n
