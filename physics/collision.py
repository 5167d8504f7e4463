"""Narrow phase: contact manifolds (points, normal, depth, feature ids) for every pair of shape kinds.

Conventions (docs/architecture.md, "Collision interface"): every contact of a pair (a, b) has a unit
`normal_world` pointing from a to b (moving b along it separates the shapes), a `depth` > 0 when
the shapes overlap, and `point_world` midway between the two surface points: if p_a is a's surface
point deepest inside b and p_b = p_a - depth n the matching point on b's surface, the point is
(p_a + p_b) / 2. At most 4 points per pair. Shape frames and `params` as in `physics.shapes`.

One numba kernel loops over the pairs and dispatches on the kinds (a pair is handled with its
kinds in increasing order SPHERE < BOX < CAPSULE < CYLINDER < HULL < PLANE and the normal flipped back).
Methods, and where they come from:
- sphere–sphere/plane/box/capsule/cylinder: closest point on the other shape's core (Ericson,
  Real-Time Collision Detection, 5.1); a centre inside the core leaves by the nearest face.
- capsule–plane, box–plane, cylinder–plane: the endpoints / the 8 corners / 4 points on each cap
  rim (at quarter turns from the rim point deepest along -n), the 4 deepest kept.
- capsule–capsule: closest points of the two segments (Ericson 5.1.9); nearly parallel and
  overlapping segments give two points (the ends of the overlap), so a capsule can rest on another.
- box–box: separating-axis test on the 15 axes (3 + 3 faces, 9 edge cross products; edge axes must
  beat faces by 5 %, ODE's fudge factor, and by EDGE_TOLERANCE), then ODE's dBoxBox: for a face
  axis the incident face of the other box is clipped (Sutherland–Hodgman) against the side planes
  of the reference face and the points below it kept, culled to 4 (deepest within
  CULL_DEPTH_TOLERANCE, then farthest, then largest triangle and quad);
  for an edge axis the closest points of the two edges. Feature ids name the reference face, the
  incident face and the two clipping lines a point lies on (Box2D's ClipVertex idea), so they stay
  the same while the configuration does.
- box–capsule: the same separating axes for the segment (box faces, segment axis × box edges,
  and the segment–box closest direction from GJK/EPA); along a box face normal the segment is
  clipped to the face (two points, Box2D's capsule–polygon manifold), otherwise one GJK/EPA point.
- cylinder–box, cylinder–capsule, cylinder–cylinder: GJK (boolean, on the Minkowski difference
  A - B of support functions) then EPA (expanding polytope; van den Bergen 2001) for the normal,
  depth and witness points, one point per step, merged into a persistent manifold kept in the
  `ContactCache` (after Bullet's btPersistentManifold: points stored in both shapes' frames; each
  step a point follows the smaller shape and is re-projected along the new normal onto the larger
  one's supporting plane, so points survive fast sliding; dropped once separated by more than
  `BREAK` or re-projected more than `BREAK` off the larger shape; at most 4 kept, the new one and
  those spanning the largest area).
- hull–plane: the hull's vertices below the plane, at most 4 spread over the patch (`_hull_plane`);
  hull–anything else: GJK/EPA (the hull's support is its vertex furthest along the direction) with
  the persistent manifold of the cylinder pairs, after a bounding-ball test. A hull is handled
  before a plane (the kind order's one exception: HULL was added after PLANE).
"""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from physics.compiled import kernel

from physics.rotation_kernels import cross, sub, tangent_basis
from physics.hull import HULL_PLANES
from physics.shapes import BOX, CAPSULE, CYLINDER, HULL, PLANE, SPHERE, world_hulls, world_shapes

__all__ = ["Contacts", "ContactCache", "contacts", "BREAK"]

BREAK = 0.02  # m: Bullet's default contact breaking threshold for persistent manifolds
_EPS = 1e-12
_GJK_ITERATIONS = 64
_EPA_ITERATIONS = 64
_EPA_FACES = 2048  # dead faces are not reused: room for the faces made over all expansions
_EPA_TOLERANCE = 1e-9  # m: EPA stops once a new support point moves the closest face by less


# ----------------------------------------------------------------------------- small vector helpers
@kernel
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel
def _rot(R, x):
    """R x for a 3x3 R (written out: numba's `@` calls BLAS, ~1 us a call at this size)."""
    return np.array([R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2], R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2],
                     R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2]])


@kernel
def _rot_t(R, x):
    """R^T x for a 3x3 R."""
    return np.array([R[0, 0] * x[0] + R[1, 0] * x[1] + R[2, 0] * x[2], R[0, 1] * x[0] + R[1, 1] * x[1] + R[2, 1] * x[2],
                     R[0, 2] * x[0] + R[1, 2] * x[1] + R[2, 2] * x[2]])


@kernel
def _unit(v, fallback):
    n = np.sqrt(_dot(v, v))
    if n < _EPS:
        return fallback.copy()
    return v / n


@kernel
def _perpendicular(u):
    """A unit vector perpendicular to the unit vector u."""
    if abs(u[0]) < 0.57735:
        return _unit(np.array(cross(u, (1.0, 0.0, 0.0))), u)
    return _unit(np.array(cross(u, (0.0, 1.0, 0.0))), u)


@kernel
def _emit(out_p, out_n, out_d, out_f, k, pa, pb, n, depth, feature):
    """Store contact k: surface points pa on a, pb on b, normal n (a -> b), depth."""
    out_p[k] = 0.5 * (pa + pb)
    out_n[k] = n
    out_d[k] = depth
    out_f[k] = feature


# ----------------------------------------------------------------------------- point cores
@kernel
def _segment_closest(p, c, u, h):
    """Parameter t in [-h, h] of the point c + t u closest to p (u unit)."""
    t = _dot(p - c, u)
    return min(max(t, -h), h)


@kernel
def _sphere_core(centre, radius, q, inside, exit_normal, exit_depth, margin, out_p, out_n, out_d, out_f, k, feature):
    """A sphere (centre, radius) against a core whose closest point to the centre is q.

    Outside the core: n = (q - centre)/|q - centre|, depth = radius - |q - centre|. Inside: the centre
    leaves the core along exit_normal (outward) after exit_depth, so n = -exit_normal,
    depth = radius + exit_depth. Returns the number of contacts written (0 or 1)."""
    if inside:
        n = -exit_normal
        depth = radius + exit_depth
        pb = centre - exit_depth * n  # on b's surface
    else:
        d = q - centre
        dist = np.sqrt(_dot(d, d))
        n = _unit(d, np.array([0.0, 1.0, 0.0]))
        depth = radius - dist
        pb = q
    if depth < -margin:
        return 0
    _emit(out_p, out_n, out_d, out_f, k, centre + radius * n, pb, n, depth, feature)
    return 1


@kernel
def _closest_on_box(p, c, R, h):
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
def _closest_on_cylinder(p, c, R, r, h):
    local = _rot_t(R, p - c)
    rho = np.sqrt(local[0] ** 2 + local[2] ** 2)
    radial = np.array([local[0], 0.0, local[2]]) / rho if rho > _EPS else np.array([1.0, 0.0, 0.0])
    if rho <= r and abs(local[1]) <= h:
        side, cap = r - rho, h - abs(local[1])
        if side < cap:
            return p, True, _rot(R, radial), side
        return p, True, (1.0 if local[1] >= 0 else -1.0) * R[:, 1], cap
    q = np.array([min(rho, r) * radial[0], min(max(local[1], -h), h), min(rho, r) * radial[2]])
    return c + _rot(R, q), False, np.zeros(3), 0.0


# ----------------------------------------------------------------------------- plane pairs
@kernel
def _points_plane(points, p0, count, radius, params, b, margin, out_p, out_n, out_d, out_f, row, keep):
    """The `count` rows p0.. of `points` on a (each the centre of a ball of `radius`) against plane
    b = params[b] = (n, offset): the solid side is n . x <= offset, so the normal a -> b is -n and
    depth = radius + offset - n . x. Keeps the `keep` deepest (depth >= -margin), deepest first;
    written to rows row.. of the out_* arrays, feature id = the point's index 0..count-1. The point midway between the surfaces is x - (radius - depth/2) n."""
    nx, ny, nz, offset = params[b, 0], params[b, 1], params[b, 2], params[b, 3]
    used = 0
    m = 0
    while m < keep:
        best, best_d = -1, 0.0
        for i in range(count):
            if used & (1 << i):
                continue
            dv = radius + offset - (nx * points[p0 + i, 0] + ny * points[p0 + i, 1] + nz * points[p0 + i, 2])
            if dv >= -margin and (best < 0 or dv > best_d):
                best, best_d = i, dv
        if best < 0:
            break
        used |= 1 << best
        f = 0.5 * best_d - radius
        x, y, z = points[p0 + best, 0], points[p0 + best, 1], points[p0 + best, 2]
        out_p[row + m, 0], out_p[row + m, 1], out_p[row + m, 2] = x + f * nx, y + f * ny, z + f * nz
        out_n[row + m, 0], out_n[row + m, 1], out_n[row + m, 2] = -nx, -ny, -nz
        out_d[row + m] = best_d
        out_f[row + m] = best
        m += 1
    return m


@kernel
def _box_corners(centre, rotation, params, a, corners, p0):
    """The 8 corners of box a into rows p0.. of corners; corner i has signs (bit 0, bit 1, bit 2) of i."""
    for i in range(8):
        sx = params[a, 0] if i & 1 else -params[a, 0]
        sy = params[a, 1] if i & 2 else -params[a, 1]
        sz = params[a, 2] if i & 4 else -params[a, 2]
        for c in range(3):
            corners[p0 + i, c] = centre[a, c] + rotation[a, c, 0] * sx + rotation[a, c, 1] * sy + rotation[a, c, 2] * sz


@kernel
def _cylinder_rim(c, R, r, h, direction, points):
    """4 points on each cap rim into points (8, 3), at quarter turns starting from the rim point
    furthest along `direction` (index cap * 4 + quarter)."""
    u = R[:, 1]
    w = direction - _dot(direction, u) * u
    w = _unit(w, R[:, 0])
    v = np.array(cross(u, w))
    for cap in range(2):
        centre = c + (h if cap else -h) * u
        points[4 * cap + 0] = centre + r * w
        points[4 * cap + 1] = centre + r * v
        points[4 * cap + 2] = centre - r * w
        points[4 * cap + 3] = centre - r * v


@kernel
def _hull_plane(c, R, prm, params, b, margin, out_p, out_n, out_d, out_f):
    """A hull (centre c, rotation R, row prm) against plane b = params[b] = (n, offset): each vertex
    x_i = c + R v_i is depth_i = offset - n . x_i below the plane (normal a -> b = -n, the point
    midway x_i + depth_i n / 2, feature id i). Of the vertices with depth >= -margin at most 4 are
    kept, spread over the contact patch so a hull rests on a face as a box does (Bullet's
    sortCachedPoints idea, as `_cull4`): the first of those within CULL_DEPTH_TOLERANCE of the
    deepest (the same vertex while a resting face rocks by round-off), the one furthest from it,
    the one making the largest triangle with those two, then the one adding the most area outside
    that triangle. Returns the count written to rows 0.."""
    nx, ny, nz, offset = params[b, 0], params[b, 1], params[b, 2], params[b, 3]
    count = int(prm[1])
    x = np.empty((count, 3))
    depth = np.empty(count)
    deepest = -np.inf
    for i in range(count):
        vx, vy, vz = prm[4 + 3 * i], prm[5 + 3 * i], prm[6 + 3 * i]
        for k in range(3):
            x[i, k] = c[k] + R[k, 0] * vx + R[k, 1] * vy + R[k, 2] * vz
        depth[i] = offset - (nx * x[i, 0] + ny * x[i, 1] + nz * x[i, 2])
        deepest = max(deepest, depth[i])
    if deepest < -margin:
        return 0
    chosen = np.full(4, -1)
    for i in range(count):
        if depth[i] >= deepest - CULL_DEPTH_TOLERANCE and depth[i] >= -margin:
            chosen[0] = i
            break
    for slot in range(1, 4):
        best, pick = 1e-18, -1   # (m² or m⁴) a point adding no length or area adds nothing
        for i in range(count):
            if depth[i] < -margin or i == chosen[0] or i == chosen[1] or i == chosen[2]:
                continue
            d0 = (x[i, 0] - x[chosen[0], 0], x[i, 1] - x[chosen[0], 1], x[i, 2] - x[chosen[0], 2])
            if slot == 1:
                score = _dot(d0, d0)
            else:
                d1 = (x[i, 0] - x[chosen[1], 0], x[i, 1] - x[chosen[1], 1], x[i, 2] - x[chosen[1], 2])
                t = cross(d0, d1)
                score = _dot(t, t)
                if slot == 3:  # the area outside the triangle: the three triangles on its edges
                    d2 = (x[i, 0] - x[chosen[2], 0], x[i, 1] - x[chosen[2], 1], x[i, 2] - x[chosen[2], 2])
                    t1, t2 = cross(d1, d2), cross(d2, d0)
                    score = np.sqrt(score) + np.sqrt(_dot(t1, t1)) + np.sqrt(_dot(t2, t2))
                    e1 = (x[chosen[1], 0] - x[chosen[0], 0], x[chosen[1], 1] - x[chosen[0], 1], x[chosen[1], 2] - x[chosen[0], 2])
                    e2 = (x[chosen[2], 0] - x[chosen[0], 0], x[chosen[2], 1] - x[chosen[0], 1], x[chosen[2], 2] - x[chosen[0], 2])
                    t3 = cross(e1, e2)
                    score = (score - np.sqrt(_dot(t3, t3))) ** 2   # 0 inside the triangle (in its plane)
            if score > best:
                best, pick = score, i
        if pick < 0:
            break
        chosen[slot] = pick
    m = 0
    for slot in range(4):
        i = chosen[slot]
        if i < 0:
            break
        f = 0.5 * depth[i]
        out_p[m, 0], out_p[m, 1], out_p[m, 2] = x[i, 0] + f * nx, x[i, 1] + f * ny, x[i, 2] + f * nz
        out_n[m, 0], out_n[m, 1], out_n[m, 2] = -nx, -ny, -nz
        out_d[m] = depth[i]
        out_f[m] = i
        m += 1
    return m


# ----------------------------------------------------------------------------- capsule–capsule
@kernel(inline=True)
def _segment_parameters(b, c, f, ha, hb):
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


@kernel
def _segments_closest(ca, ua, ha, cb, ub, hb):
    """Parameters (s, t) of the closest points ca + s ua, cb + t ub on two segments (Ericson 5.1.9)."""
    r = ca - cb
    return _segment_parameters(_dot(ua, ub), _dot(ua, r), _dot(ub, r), ha, hb)


@kernel(inline=True)
def _capsule_capsule(ca, Ra, pa, cb, Rb, pb, margin, out_p, out_n, out_d, out_f):
    ua, ub = Ra[:, 1], Rb[:, 1]
    ra, ha, rb, hb = pa[0], pa[1], pb[0], pb[1]
    if abs(_dot(ua, ub)) > 1.0 - 1e-6:
        # parallel: the overlap of b's projection on a's axis, if any, gives two points
        t0 = _dot(cb - ub * hb - ca, ua)
        t1 = _dot(cb + ub * hb - ca, ua)
        lo, hi = max(min(t0, t1), -ha), min(max(t0, t1), ha)
        if hi - lo > 1e-9:
            count = 0
            for i in range(2):
                s = lo if i == 0 else hi
                p = ca + s * ua
                t = _segment_closest(p, cb, ub, hb)
                q = cb + t * ub
                d = q - p
                dist = np.sqrt(_dot(d, d))
                n = _unit(d, _perpendicular(ua))
                depth = ra + rb - dist
                if depth >= -margin:
                    _emit(out_p, out_n, out_d, out_f, count, p + ra * n, q - rb * n, n, depth, i)
                    count += 1
            return count
    s, t = _segments_closest(ca, ua, ha, cb, ub, hb)
    p, q = ca + s * ua, cb + t * ub
    d = q - p
    n = _unit(d, _perpendicular(ua))
    depth = ra + rb - np.sqrt(_dot(d, d))
    if depth < -margin:
        return 0
    _emit(out_p, out_n, out_d, out_f, 0, p + ra * n, q - rb * n, n, depth, 2)
    return 1


# ----------------------------------------------------------------------------- box–box
# The box–box path is the pile's hot loop: scalar arithmetic indexing the rotation matrices and
# two scratch arrays allocated once per `_narrow` call (array views and small arrays per pair cost
# reference counting and allocation: measured 5x slower). Rows of fs (36, 3) float, it (5, 8) int:
_RAB, _PA, _PB, _NA, _QA, _QB, _D, _M3, _POLY, _POLY2, _DEPTH = 0, 3, 4, 5, 6, 7, 8, 9, 12, 20, 28
_TAGS, _TAGS2, _GENS, _GENS2, _CHOSEN = 0, 1, 2, 3, 4
_POLY_ROWS = _POLY2 - _POLY  # room of each clipping polygon: its rows of fs, the columns of it


# m: a vertex this close outside a side plane is kept as it is (`_clip`). Equal boxes stacked
# exactly have the incident face's corners on the reference face's side planes; decided by the
# sign of round-off, a corner was kept (its vertex tag) one step and cut (an edge-plane tag, the
# same point) the next, so its feature id changed, the warm start lost its impulse, and a stack
# of ten collapsed at 10 iterations.
CLIP_TOLERANCE = 1e-7


@kernel
def _clip(fs, it, src, src_t, src_g, count, k, sign, limit, plane_gen, dst, dst_t, dst_g):
    """Sutherland–Hodgman in the reference box's frame: keep the part with sign * x[k] <= limit of
    the polygon in rows src.. of fs, written to rows dst.. (tags and generators in rows of it).

    Each vertex carries a tag (the pair of generator lines it lies on) and the generator of its
    outgoing edge; a point cut on edge g by this plane lies on (g, plane_gen). A convex polygon
    gains at most one vertex per plane (a quadrilateral, four planes: 8 = _POLY_ROWS); a polygon
    made slightly concave by rounding could gain more, and is cut off at _POLY_ROWS vertices. A
    vertex within CLIP_TOLERANCE outside the plane counts as inside."""
    m = 0
    for i in range(count):
        j = i + 1 if i + 1 < count else 0
        di = sign * fs[src + i, k] - limit - CLIP_TOLERANCE
        dj = sign * fs[src + j, k] - limit - CLIP_TOLERANCE
        if di <= 0:
            if m == _POLY_ROWS:
                return m
            for c in range(3):
                fs[dst + m, c] = fs[src + i, c]
            it[dst_t, m] = it[src_t, i]
            it[dst_g, m] = it[src_g, i]
            m += 1
        if (di <= 0) != (dj <= 0):
            if m == _POLY_ROWS:
                return m
            t = di / (di - dj)
            for c in range(3):
                fs[dst + m, c] = fs[src + i, c] + t * (fs[src + j, c] - fs[src + i, c])
            g = it[src_g, i]
            it[dst_t, m] = min(g, plane_gen) * 16 + max(g, plane_gen)
            it[dst_g, m] = plane_gen if di <= 0 else g
            m += 1
    return m


@kernel
def _cross_norm2(fs, o, a, b):
    """|(fs[a] - fs[o]) × (fs[b] - fs[o])|² for rows of fs."""
    x, y, z = cross((fs[a, 0] - fs[o, 0], fs[a, 1] - fs[o, 1], fs[a, 2] - fs[o, 2]),
                    (fs[b, 0] - fs[o, 0], fs[b, 1] - fs[o, 1], fs[b, 2] - fs[o, 2]))
    return x * x + y * y + z * z


@kernel(inline=True)
def _edge_area(fs, o, a, b, nx, ny, nz):
    """((fs[a] - fs[o]) × (fs[b] - fs[o])) · n for rows of fs: twice the area of triangle o a b
    times |n|, negative where b lies outside the edge o → a of a triangle of normal n."""
    x, y, z = cross((fs[a, 0] - fs[o, 0], fs[a, 1] - fs[o, 1], fs[a, 2] - fs[o, 2]),
                    (fs[b, 0] - fs[o, 0], fs[b, 1] - fs[o, 1], fs[b, 2] - fs[o, 2]))
    return x * nx + y * ny + z * nz


# m: culling starts from a corner that holds still, not from the deepest point: of the points
# within this of the deepest, the one within this of the farthest from the polygon's centre, the
# lowest in clipping order. Two boxes resting face to face at a yaw clip to an octagon of about
# equally deep corners; which one was deepest turned with micro-radians of rocking, a different
# four were kept, and their impulses started cold (in the settling 1,000-box heap 13 loaded points
# a step, 2 now). Far out, not just first: clipping also emits points along an edge between two
# corners (the pyramid's boxes, offset by half a box, have edges on the side planes), and a
# manifold culled from such a point spans less than the face and let the pyramid rock.
CULL_DEPTH_TOLERANCE = 2e-4


@kernel
def _cull4(fs, it, p, count):
    """Up to 4 of the `count` points in rows p.. of fs (depths in column 0 of rows _DEPTH..) into
    it[_CHOSEN]: the deepest (a corner about as deep, CULL_DEPTH_TOLERANCE), the farthest from it,
    then the points that maximize the triangle and then the quadrilateral's area (Bullet's
    sortCachedPoints idea). Returns how many."""
    if count <= 4:
        for i in range(count):
            it[_CHOSEN, i] = i
        return count
    deepest = fs[_DEPTH, 0]
    cx = cy = cz = 0.0
    for i in range(count):
        deepest = max(deepest, fs[_DEPTH + i, 0])
        cx, cy, cz = cx + fs[p + i, 0], cy + fs[p + i, 1], cz + fs[p + i, 2]
    cx, cy, cz = cx / count, cy / count, cz / count
    # of the points about as deep as the deepest, the one about as far out as the farthest from
    # the polygon's centre, lowest index first: a corner, and the same one while the pose rocks
    far = 0.0
    for i in range(count):
        if fs[_DEPTH + i, 0] >= deepest - CULL_DEPTH_TOLERANCE:
            far = max(far, (fs[p + i, 0] - cx) ** 2 + (fs[p + i, 1] - cy) ** 2 + (fs[p + i, 2] - cz) ** 2)
    far = max(np.sqrt(far) - CULL_DEPTH_TOLERANCE, 0.0)
    first = 0
    for i in range(count - 1, -1, -1):
        if fs[_DEPTH + i, 0] >= deepest - CULL_DEPTH_TOLERANCE and \
                (fs[p + i, 0] - cx) ** 2 + (fs[p + i, 1] - cy) ** 2 + (fs[p + i, 2] - cz) ** 2 >= far * far:
            first = i
    best, second = -1.0, 0
    for i in range(count):
        d2 = (fs[p + i, 0] - fs[p + first, 0]) ** 2 + (fs[p + i, 1] - fs[p + first, 1]) ** 2 \
            + (fs[p + i, 2] - fs[p + first, 2]) ** 2
        if d2 > best:
            best, second = d2, i
    best, third = -1.0, 0
    for i in range(count):
        area = _cross_norm2(fs, p + first, p + second, p + i)
        if area > best:
            best, third = area, i
    # the triangle's normal (unnormalised): a point's side of each edge is the sign of its area along it
    f, q, t = p + first, p + second, p + third
    nx, ny, nz = cross((fs[q, 0] - fs[f, 0], fs[q, 1] - fs[f, 1], fs[q, 2] - fs[f, 2]),
                       (fs[t, 0] - fs[f, 0], fs[t, 1] - fs[f, 1], fs[t, 2] - fs[f, 2]))
    best, fourth = -1.0, 0
    for i in range(count):
        if i == first or i == second or i == third:
            continue
        # the area the point adds to the triangle: its triangles with the edges it lies outside of
        # (the largest triangle with any edge instead counted a point beside a corner as much as
        # the missing fourth corner: the pyramid's manifolds kept two points at one corner)
        area = max(-_edge_area(fs, f, q, p + i, nx, ny, nz), 0.0) + max(-_edge_area(fs, q, t, p + i, nx, ny, nz), 0.0) \
            + max(-_edge_area(fs, t, f, p + i, nx, ny, nz), 0.0)
        if area > best:
            best, fourth = area, i
    it[_CHOSEN, 0], it[_CHOSEN, 1], it[_CHOSEN, 2], it[_CHOSEN, 3] = first, second, third, fourth
    return 4


# m: a face of box b becomes the reference face only if it is this much less penetrating than the
# best face of a (Box2D's b2CollidePolygons, k_tol = 0.1 × linear slop). Two aligned boxes resting
# on each other have a's top face and b's bottom face equally deep up to round-off; without the
# tolerance the reference face, and with it every point's feature id, flipped with the last bit of
# the depth, the warm start lost the manifold's impulses and a stack of ten collapsed.
FACE_TOLERANCE = 5e-5
# m: an edge axis must also beat the best face axis by this much, on top of ODE's 5 %. An edge of
# one box lying on a face of the other makes the edge axes through it parallel to that face's
# normal and equally separated; at a resting contact's separation of about zero the 5 % is about
# zero too, and a micro-radian of rocking swapped the face manifold (2–4 points) for the edge pair's
# one point and back, each swap starting the points cold. In the settled 1,000-box heap that was
# about 30 loaded points a step; the heap crept on at 0.1–0.4 J and its resting stacks rocked.
EDGE_TOLERANCE = 2e-4


@kernel(inline=True)
def _box_axes(rab, pa, pb, ha, hb, margin):
    """The separating-axis test of two boxes on their 15 axes: (separated, code, sign, s, edge
    length) of the axis of least separation s (< 0: penetration); separated is True as soon as
    one axis separates them by more than `margin`. rab = Ra^T Rb (rows), pa, pb the centre offset
    cb - ca in a's and in b's frame, ha, hb the half extents (3-tuples: registers, no arrays).

    Codes: 0..2 the faces of a, |pa_i| - (ha_i + Σ_k hb_k |rab_ik|); 3..5 those of b,
    |pb_j| - (Σ_k ha_k |rab_kj| + hb_j); 6 + 3 i + j the edge axis e_i × rab[:, j] (a's frame), of
    length sqrt(rab_i1j² + rab_i2j²) and extents ha_i1 |rab_i2j| + ha_i2 |rab_i1j| + hb_j1 |rab_ij2|
    + hb_j2 |rab_ij1| (cyclic indices). An edge axis must beat the faces by 5 % (ODE's fudge
    factor) and by EDGE_TOLERANCE, and a face of b must beat a's faces by FACE_TOLERANCE.
    `sign`: the side of the axis b lies on."""
    best_s, code, sign = -np.inf, -1, 1.0
    for i in range(3):  # faces of a: codes 0..2
        s = abs(pa[i]) - (ha[i] + hb[0] * abs(rab[i][0]) + hb[1] * abs(rab[i][1]) + hb[2] * abs(rab[i][2]))
        if s > margin:
            return True, code, sign, best_s, 1.0
        if s > best_s:
            best_s, code, sign = s, i, (1.0 if pa[i] >= 0 else -1.0)
    for j in range(3):  # faces of b: codes 3..5
        s = abs(pb[j]) - (ha[0] * abs(rab[0][j]) + ha[1] * abs(rab[1][j]) + ha[2] * abs(rab[2][j]) + hb[j])
        if s > margin:
            return True, code, sign, best_s, 1.0
        if s > best_s + FACE_TOLERANCE:
            best_s, code, sign = s, 3 + j, (1.0 if pb[j] >= 0 else -1.0)
    edge_length = 1.0
    best_face = best_s
    for i in range(3):  # edges a_i × b_j: codes 6 + 3 i + j
        i1 = i + 1 if i < 2 else 0
        i2 = i1 + 1 if i1 < 2 else 0
        for j in range(3):
            j1 = j + 1 if j < 2 else 0
            j2 = j1 + 1 if j1 < 2 else 0
            r1, r2 = rab[i1][j], rab[i2][j]
            length = np.sqrt(r1 * r1 + r2 * r2)
            if length < 1e-6:  # parallel edges: the face axes already cover this direction
                continue
            expr = (pa[i2] * r1 - pa[i1] * r2) / length
            extent = (ha[i1] * abs(r2) + ha[i2] * abs(r1) + hb[j1] * abs(rab[i][j2]) + hb[j2] * abs(rab[i][j1])) / length
            s = abs(expr) - extent
            if s > margin:
                return True, code, sign, best_s, edge_length
            # an edge axis must beat the faces by 5 % (more separated, or less penetrating) and by
            # EDGE_TOLERANCE, and any edge axis before it
            beat = s * 1.05 if s < 0 else s * 0.95
            if beat > best_s and beat > best_face + EDGE_TOLERANCE:
                best_s, code, sign, edge_length = s, 6 + 3 * i + j, (1.0 if expr >= 0 else -1.0), length
    return False, code, sign, best_s, edge_length


@kernel(inline=True)
def _box_edge_contact(centre, rotation, params, a, b, code, fs, nx, ny, nz, depth, out_p, out_n, out_d, out_f, row):
    """The one contact of an edge axis (code 6 + 3 i + j): a's support edge along n (axis i), b's
    along -n (axis j), and their closest points (Ericson 5.1.9 with unit directions, rab_ij =
    ua . ub); written to row `row`. Reads rab and n in a's frame (rows _RAB.., _NA) of fs."""
    i, j = (code - 6) // 3, (code - 6) % 3
    for c in range(3):
        fs[_QA, c], fs[_QB, c] = centre[a, c], centre[b, c]
    for k in range(3):
        nb_k = fs[_NA, 0] * fs[_RAB, k] + fs[_NA, 1] * fs[_RAB + 1, k] + fs[_NA, 2] * fs[_RAB + 2, k]
        for c in range(3):
            if k != i:
                fs[_QA, c] += (1.0 if fs[_NA, k] > 0 else -1.0) * params[a, k] * rotation[a, c, k]
            if k != j:
                fs[_QB, c] -= (1.0 if nb_k > 0 else -1.0) * params[b, k] * rotation[b, c, k]
    bb = fs[_RAB + i, j]
    cc = ff = 0.0
    for c in range(3):
        cc += rotation[a, c, i] * (fs[_QA, c] - fs[_QB, c])
        ff += rotation[b, c, j] * (fs[_QA, c] - fs[_QB, c])
    s, t = _segment_parameters(bb, cc, ff, params[a, i], params[b, j])
    for c in range(3):
        out_p[row, c] = 0.5 * (fs[_QA, c] + s * rotation[a, c, i] + fs[_QB, c] + t * rotation[b, c, j])
    out_n[row, 0], out_n[row, 1], out_n[row, 2] = nx, ny, nz
    out_d[row] = depth
    out_f[row] = 1000 + code
    return 1


@kernel(inline=True)
def _incident_face(fs, it, params, inc, axis_ref, s_ref):
    """The face of the incident box inc most anti-parallel to the reference normal s_ref e_axis_ref,
    as a quadrilateral in the reference box's frame (rows _POLY..; m3 = R_ref^T R_inc in rows _M3..,
    inc's centre in ref's frame in row _D), with the clipping tags and generators of its vertices
    (rows _TAGS, _GENS of it: edge v runs from vertex v to v + 1). Returns (axis_inc, sign_inc)."""
    axis_inc, best = 0, -1.0
    for k in range(3):
        if abs(fs[_M3 + axis_ref, k]) > best:
            axis_inc, best = k, abs(fs[_M3 + axis_ref, k])
    sign_inc = -1.0 if s_ref * fs[_M3 + axis_ref, axis_inc] > 0 else 1.0  # the incident face looks back at ref
    e1, e2 = (axis_inc + 1) % 3, (axis_inc + 2) % 3
    h0, h1, h2 = sign_inc * params[inc, axis_inc], params[inc, e1], params[inc, e2]
    for v in range(4):
        c1 = h1 if v == 0 or v == 3 else -h1
        c2 = h2 if v < 2 else -h2
        for r in range(3):
            fs[_POLY + v, r] = (fs[_D, r] + h0 * fs[_M3 + r, axis_inc] + c1 * fs[_M3 + r, e1] + c2 * fs[_M3 + r, e2])
        it[_GENS, v] = v
        g_in = (v + 3) % 4
        it[_TAGS, v] = min(g_in, v) * 16 + max(g_in, v)
    return axis_inc, sign_inc


@kernel(inline=True)
def _box_face_contact(centre, rotation, params, a, b, code, sign, margin, fs, it, nx, ny, nz, out_p, out_n, out_d,
                      out_f, row):
    """The contacts of a face axis (code < 6): the reference box's face along the axis, the other
    box's incident face clipped (Sutherland–Hodgman) against the reference face's four side planes
    |x_k| <= h_k in the reference frame, the points below the reference face kept and culled to 4;
    written to rows row.., the count returned. n = (nx, ny, nz) the normal a -> b in the world."""
    # reference box (ref) and incident box (inc); m3 = R_ref^T R_inc; d = the incident centre in
    # ref's frame; n_ref = s_ref e_axis_ref (ref's frame) points towards inc
    if code < 3:
        ref, inc, axis_ref, s_ref = a, b, code, sign
        for r in range(3):
            fs[_D, r] = fs[_PA, r]
            for c in range(3):
                fs[_M3 + r, c] = fs[_RAB + r, c]
    else:
        ref, inc, axis_ref, s_ref = b, a, code - 3, -sign
        for r in range(3):
            fs[_D, r] = -fs[_PB, r]
            for c in range(3):
                fs[_M3 + r, c] = fs[_RAB + c, r]
    axis_inc, sign_inc = _incident_face(fs, it, params, inc, axis_ref, s_ref)
    count = 4
    plane = 4
    src, dst, src_t, dst_t, src_g, dst_g = _POLY, _POLY2, _TAGS, _TAGS2, _GENS, _GENS2
    for q in range(4):  # the side planes +-x_k1, +-x_k2 of the reference face
        axis_k = (axis_ref + 1 + q // 2) % 3
        side = 1.0 if q % 2 == 0 else -1.0
        count = _clip(fs, it, src, src_t, src_g, count, axis_k, side, params[ref, axis_k], plane, dst, dst_t, dst_g)
        src, dst, src_t, dst_t, src_g, dst_g = dst, src, dst_t, src_t, dst_g, src_g
        plane += 1
        if count == 0:  # nothing left: no point is kept below (a `break`, not a `return`, as
            break           # an early return from an inlined stage costs reference counts on its arrays)
    kept = 0
    for v in range(count):
        dv = params[ref, axis_ref] - s_ref * fs[src + v, axis_ref]
        if dv >= -margin:
            for c in range(3):
                fs[src + kept, c] = fs[src + v, c]
            it[src_t, kept] = it[src_t, v]
            fs[_DEPTH + kept, 0] = dv
            kept += 1
    m = _cull4(fs, it, src, kept)
    base = (code * 6 + 2 * axis_inc + (1 if sign_inc > 0 else 0)) * 256
    f = 0.5 * (1.0 if code < 3 else -1.0)  # n_ref = ±n in the world
    for i in range(m):
        v = it[_CHOSEN, i]
        dv = fs[_DEPTH + v, 0]
        x, y, z = fs[src + v, 0], fs[src + v, 1], fs[src + v, 2]
        # the incident point (world), moved half the depth towards ref's surface
        out_p[row + i, 0] = centre[ref, 0] + rotation[ref, 0, 0] * x + rotation[ref, 0, 1] * y + rotation[ref, 0, 2] * z + f * dv * nx
        out_p[row + i, 1] = centre[ref, 1] + rotation[ref, 1, 0] * x + rotation[ref, 1, 1] * y + rotation[ref, 1, 2] * z + f * dv * ny
        out_p[row + i, 2] = centre[ref, 2] + rotation[ref, 2, 0] * x + rotation[ref, 2, 1] * y + rotation[ref, 2, 2] * z + f * dv * nz
        out_n[row + i, 0], out_n[row + i, 1], out_n[row + i, 2] = nx, ny, nz
        out_d[row + i] = dv
        out_f[row + i] = base + it[src_t, v]
    return m


@kernel
def _box_box(centre, rotation, params, a, b, margin, fs, it, out_p, out_n, out_d, out_f, row):
    """ODE's dBoxBox: the separating-axis test on 15 axes (`_box_axes`), then the contact of the
    axis of least penetration: for an edge axis the closest points of the two edges
    (`_box_edge_contact`), for a face axis the incident face clipped to the reference face
    (`_box_face_contact`). Contacts written to rows row.. of the out_* arrays, the count returned.

    Everything runs on rab = Ra^T Rb and the centre offset p = cb - ca in both frames (pa = Ra^T p,
    pb = Rb^T p; rows _RAB.., _PA, _PB of fs, which the contact stages read); a face contact is
    clipped in the reference box's frame. Indexing only (no array views, no allocation): this is
    the pile's hot loop. The stages are inlined and leave only at their end: a call, or an early
    return out of an inlined stage, counts references on its array arguments (5-10 % of the pile's
    narrow phase, measured); `_box_axes` takes tuples, no arrays, for the same reason."""
    px, py, pz = centre[b, 0] - centre[a, 0], centre[b, 1] - centre[a, 1], centre[b, 2] - centre[a, 2]
    for i in range(3):
        fs[_PA, i] = rotation[a, 0, i] * px + rotation[a, 1, i] * py + rotation[a, 2, i] * pz
        fs[_PB, i] = rotation[b, 0, i] * px + rotation[b, 1, i] * py + rotation[b, 2, i] * pz
        for j in range(3):
            fs[_RAB + i, j] = (rotation[a, 0, i] * rotation[b, 0, j] + rotation[a, 1, i] * rotation[b, 1, j]
                               + rotation[a, 2, i] * rotation[b, 2, j])
    rab = ((fs[_RAB, 0], fs[_RAB, 1], fs[_RAB, 2]), (fs[_RAB + 1, 0], fs[_RAB + 1, 1], fs[_RAB + 1, 2]),
           (fs[_RAB + 2, 0], fs[_RAB + 2, 1], fs[_RAB + 2, 2]))
    separated, code, sign, best_s, edge_length = _box_axes(
        rab, (fs[_PA, 0], fs[_PA, 1], fs[_PA, 2]), (fs[_PB, 0], fs[_PB, 1], fs[_PB, 2]),
        (params[a, 0], params[a, 1], params[a, 2]), (params[b, 0], params[b, 1], params[b, 2]), margin)
    if separated:
        return 0
    depth = -best_s
    # the normal a -> b in a's frame (row _NA) and in the world (nx, ny, nz)
    if code < 3:
        for k in range(3):
            fs[_NA, k] = sign if k == code else 0.0
    elif code < 6:
        for k in range(3):
            fs[_NA, k] = sign * fs[_RAB + k, code - 3]
    else:
        i, j = (code - 6) // 3, (code - 6) % 3
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        fs[_NA, i] = 0.0
        fs[_NA, i1] = -sign * fs[_RAB + i2, j] / edge_length
        fs[_NA, i2] = sign * fs[_RAB + i1, j] / edge_length
    nx = rotation[a, 0, 0] * fs[_NA, 0] + rotation[a, 0, 1] * fs[_NA, 1] + rotation[a, 0, 2] * fs[_NA, 2]
    ny = rotation[a, 1, 0] * fs[_NA, 0] + rotation[a, 1, 1] * fs[_NA, 1] + rotation[a, 1, 2] * fs[_NA, 2]
    nz = rotation[a, 2, 0] * fs[_NA, 0] + rotation[a, 2, 1] * fs[_NA, 1] + rotation[a, 2, 2] * fs[_NA, 2]
    if code >= 6:
        return _box_edge_contact(centre, rotation, params, a, b, code, fs, nx, ny, nz, depth, out_p, out_n, out_d,
                                 out_f, row)
    return _box_face_contact(centre, rotation, params, a, b, code, sign, margin, fs, it, nx, ny, nz, out_p, out_n,
                             out_d, out_f, row)


# ----------------------------------------------------------------------------- GJK + EPA
@kernel(inline=True)
def _hull_support(prm, lx, ly, lz):
    """The index of the hull vertex furthest along the local direction l (the first of equals):
    h(l) = max_i v_i . l over the row's vertices (`physics.shapes.hull_row`), a scan of them all."""
    best, k = -np.inf, 0
    for i in range(int(prm[1])):
        x = prm[4 + 3 * i] * lx + prm[5 + 3 * i] * ly + prm[6 + 3 * i] * lz
        if x > best:
            best, k = x, i
    return k


@kernel
def _support(kind, c, R, prm, d):
    """The point of the shape furthest along world direction d."""
    dl = _rot_t(R, d)
    if kind == SPHERE:
        return c + prm[0] * _unit(d, np.array([0.0, 1.0, 0.0]))
    if kind == BOX:
        s = np.array([prm[0] if dl[0] >= 0 else -prm[0], prm[1] if dl[1] >= 0 else -prm[1],
                      prm[2] if dl[2] >= 0 else -prm[2]])
        return c + _rot(R, s)
    if kind == CAPSULE:
        return c + (prm[1] if dl[1] >= 0 else -prm[1]) * R[:, 1] + prm[0] * _unit(d, np.array([0.0, 1.0, 0.0]))
    if kind == HULL:
        k = _hull_support(prm, dl[0], dl[1], dl[2])
        return c + _rot(R, np.array([prm[4 + 3 * k], prm[5 + 3 * k], prm[6 + 3 * k]]))
    # cylinder
    rho = np.sqrt(dl[0] ** 2 + dl[2] ** 2)
    local = np.array([0.0, prm[1] if dl[1] >= 0 else -prm[1], 0.0])
    if rho > _EPS:
        local[0] = prm[0] * dl[0] / rho
        local[2] = prm[0] * dl[2] / rho
    return c + _rot(R, local)


@kernel
def _support_into(kind, c, R, prm, d, sign, out, row):
    """`_support(kind, c, R, prm, sign * d)` written to out[row], without temporary arrays (GJK/EPA
    call it ~100 times a pair; each small array costs an allocation). Same arithmetic, same bits."""
    dx, dy, dz = sign * d[0], sign * d[1], sign * d[2]
    lx = R[0, 0] * dx + R[1, 0] * dy + R[2, 0] * dz
    ly = R[0, 1] * dx + R[1, 1] * dy + R[2, 1] * dz
    lz = R[0, 2] * dx + R[1, 2] * dy + R[2, 2] * dz
    if kind == SPHERE or kind == CAPSULE:
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        ux, uy, uz = (dx / length, dy / length, dz / length) if length >= _EPS else (0.0, 1.0, 0.0)
        if kind == SPHERE:
            out[row, 0], out[row, 1], out[row, 2] = c[0] + prm[0] * ux, c[1] + prm[0] * uy, c[2] + prm[0] * uz
        else:
            t = prm[1] if ly >= 0 else -prm[1]
            for i in range(3):
                out[row, i] = c[i] + t * R[i, 1] + prm[0] * (ux if i == 0 else (uy if i == 1 else uz))
        return
    if kind == BOX:
        sx = prm[0] if lx >= 0 else -prm[0]
        sy = prm[1] if ly >= 0 else -prm[1]
        sz = prm[2] if lz >= 0 else -prm[2]
    elif kind == HULL:
        k = _hull_support(prm, lx, ly, lz)
        sx, sy, sz = prm[4 + 3 * k], prm[5 + 3 * k], prm[6 + 3 * k]
    else:  # cylinder
        rho = np.sqrt(lx ** 2 + lz ** 2)
        sx, sy, sz = 0.0, (prm[1] if ly >= 0 else -prm[1]), 0.0
        if rho > _EPS:
            sx = prm[0] * lx / rho
            sz = prm[0] * lz / rho
    for i in range(3):
        out[row, i] = c[i] + (R[i, 0] * sx + R[i, 1] * sy + R[i, 2] * sz)


@kernel
def _epa_workspace():
    """Scratch arrays of `_gjk_epa`: support points on a, on b, their differences (128, 3); EPA faces
    (F, 3) int, face normals (F, 3), distances (F,), alive (F,), horizon edges (128, 2) int.
    Made once per `ContactCache` (~120 kB: made per call, their fresh pages cost more than EPA)."""
    return (np.empty((128, 3)), np.empty((128, 3)), np.empty((128, 3)), np.empty((_EPA_FACES, 3), dtype=np.int64),
            np.empty((_EPA_FACES, 3)), np.empty(_EPA_FACES), np.zeros(_EPA_FACES, dtype=np.bool_),
            np.empty((128, 2), dtype=np.int64))


@kernel(inline=True)
def _row(a, i):
    """Row i of an (N, 3) array as a 3-tuple."""
    return (a[i, 0], a[i, 1], a[i, 2])


@kernel(inline=True)
def _difference(sa, sb, v, i):
    """v[i] = sa[i] − sb[i]: a vertex of the Minkowski difference A − B."""
    for c in range(3):
        v[i, c] = sa[i, c] - sb[i, c]


@kernel(inline=True)
def _move_vertex(sa, sb, v, src, dst):
    """Simplex vertex `src` (its points on a, on b and their difference) copied to slot `dst`."""
    for c in range(3):
        sa[dst, c], sb[dst, c], v[dst, c] = sa[src, c], sb[src, c], v[src, c]


@kernel(inline=True)
def _swap_vertices(sa, sb, v, i, j):
    for c in range(3):
        sa[i, c], sa[j, c] = sa[j, c], sa[i, c]
        sb[i, c], sb[j, c] = sb[j, c], sb[i, c]
        v[i, c], v[j, c] = v[j, c], v[i, c]


@kernel(inline=True)
def _unit3(t, fallback):
    """`_unit` on 3-tuples."""
    n = np.sqrt(_dot(t, t))
    if n < _EPS:
        return fallback
    return (t[0] / n, t[1] / n, t[2] / n)


@kernel(inline=True)
def _perpendicular3(u):
    """`_perpendicular` on 3-tuples."""
    if abs(u[0]) < 0.57735:
        return _unit3(cross(u, (1.0, 0.0, 0.0)), u)
    return _unit3(cross(u, (0.0, 1.0, 0.0)), u)


@kernel
def _gjk_epa(ka, ca, Ra, pa, kb, cb, Rb, pb, work=None):
    """(hit, normal a -> b, depth, witness on a, witness on b) by GJK on A - B (`_gjk`) then EPA
    (`_epa`) on the tetrahedron GJK ends with; the witness points from the closest face.
    `work`: an `_epa_workspace()` to use (default: a fresh one).
    EPA never writes past its buffers: it stops expanding before the vertex or face rows could run
    out, or when a horizon outgrows the edge rows, and answers with the closest face found so far
    (a depth no deeper than the true one). A polytope with no face left (flat or non-finite
    shapes) gives no contact (hit False)."""
    if work is None:
        ws = _epa_workspace()
    else:
        ws = work
    sa, sb, v, faces, normals, dists, alive, edges = ws
    hit, direction = _gjk(ka, ca, Ra, pa, kb, cb, Rb, pb, sa, sb, v)
    if not hit:
        return False, np.array(direction), 0.0, ca.copy(), cb.copy()
    best = _epa(ka, ca, Ra, pa, kb, cb, Rb, pb, ws)
    if best < 0:  # EPA made no face (a flat or non-finite tetrahedron): no contact
        return False, np.array(direction), 0.0, ca.copy(), cb.copy()
    normal = normals[best]
    depth = dists[best]
    # witness points: barycentric coordinates of the origin's projection on the closest face
    i, j, k = faces[best, 0], faces[best, 1], faces[best, 2]
    lam = _barycentric(normal * depth, v[i], v[j], v[k])
    wa = lam[0] * sa[i] + lam[1] * sa[j] + lam[2] * sa[k]
    wb = lam[0] * sb[i] + lam[1] * sb[j] + lam[2] * sb[k]
    # A - B: its face nearest the origin has outward normal n; moving b along n separates them
    return True, normal, depth, wa, wb


@kernel
def _gjk(ka, ca, Ra, pa, kb, cb, Rb, pb, sa, sb, v):
    """GJK (boolean) on the Minkowski difference A - B: (hit, the last search direction). On a hit
    rows 0..3 of sa, sb, v hold a tetrahedron of A - B that contains the origin (its points on a,
    on b, their differences); otherwise the direction separates the shapes (it is (1, 0, 0) when
    coordinates are so large that normalizing a direction overflowed).

    3-tuples (registers), the simplex in rows 0..n-1 of sa, sb, v, newest last: array temporaries
    cost an allocation each, more than GJK's arithmetic."""
    d = (cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2])
    if _dot(d, d) < _EPS:
        d = (1.0, 0.0, 0.0)
    # search direction towards the origin
    direction = (-d[0], -d[1], -d[2])
    _support_into(ka, ca, Ra, pa, direction, 1.0, sa, 0)
    _support_into(kb, cb, Rb, pb, direction, -1.0, sb, 0)
    _difference(sa, sb, v, 0)
    n = 1
    direction = (-v[0, 0], -v[0, 1], -v[0, 2])
    for _ in range(_GJK_ITERATIONS):
        if _dot(direction, direction) < 1e-20:
            # the origin lies in the simplex's span (e.g. on the line through two sphere centres):
            # step out of the span; if nothing lies beyond, the shapes only touch
            if n == 1:
                direction = (1.0, 0.0, 0.0)
            else:
                if n == 3:
                    normal = cross(sub(_row(v, 1), _row(v, 0)), sub(_row(v, 2), _row(v, 0)))
                    if _dot(normal, normal) < 1e-24:
                        _move_vertex(sa, sb, v, 2, 1)
                        n = 2
                if n == 2:
                    direction = _perpendicular3(_unit3(sub(_row(v, 1), _row(v, 0)), (1.0, 0.0, 0.0)))
                else:
                    direction = cross(sub(_row(v, 1), _row(v, 0)), sub(_row(v, 2), _row(v, 0)))
        length = np.sqrt(_dot(direction, direction))
        if length == 0.0:  # coordinates so large that normalizing overflowed (|t| = inf, t / |t| = 0): no contact
            return False, (1.0, 0.0, 0.0)
        direction = (direction[0] / length, direction[1] / length, direction[2] / length)
        _support_into(ka, ca, Ra, pa, direction, 1.0, sa, n)
        _support_into(kb, cb, Rb, pb, direction, -1.0, sb, n)
        _difference(sa, sb, v, n)
        if _dot(_row(v, n), direction) < 0:
            return False, direction  # separated along `direction`
        n, direction, hit = _nearest_simplex(sa, sb, v, n + 1, direction)
        if hit:
            return True, direction
    return False, direction


@kernel(inline=True)
def _outside(normal, ao):
    """The origin (at `ao` from the face's vertex a) lies on the side of `normal` by more than
    round-off: its angle to the face's plane exceeds 1e-10 rad (a few ulps of the products)."""
    return _dot(normal, ao) > 1e-10 * np.sqrt(_dot(normal, normal) * _dot(ao, ao))


@kernel
def _nearest_simplex(sa, sb, v, n, direction):
    """GJK's simplex step: the simplex in rows 0..n-1 (newest last) reduced to its feature closest
    to the origin (the newest point is kept), and the next search direction, towards the origin
    from that feature: (n, direction, hit); hit when a tetrahedron contains the origin (the
    direction is then returned unchanged)."""
    a = _row(v, n - 1)
    ao = (-a[0], -a[1], -a[2])
    if n == 2:
        ab = sub(_row(v, 0), a)
        direction = cross(cross(ab, ao), ab)
        if _dot(direction, direction) < 1e-30:
            direction = _perpendicular3(_unit3(ab, (1.0, 0.0, 0.0)))
            if _dot(direction, ao) < 0:
                direction = (-direction[0], -direction[1], -direction[2])
    elif n == 3:
        b, c = _row(v, 1), _row(v, 0)
        ab, ac = sub(b, a), sub(c, a)
        abc = cross(ab, ac)
        if _dot(cross(abc, ac), ao) > 0:  # outside edge ac: (c, a)
            _move_vertex(sa, sb, v, 2, 1)
            n = 2
            direction = cross(cross(ac, ao), ac)
        elif _dot(cross(ab, abc), ao) > 0:  # outside edge ab: (b, a)
            _move_vertex(sa, sb, v, 1, 0)
            _move_vertex(sa, sb, v, 2, 1)
            n = 2
            direction = cross(cross(ab, ao), ab)
        elif _dot(abc, ao) > 0:
            direction = abc
        else:  # below the triangle: flip its winding so the origin is on the normal's side
            _swap_vertices(sa, sb, v, 0, 1)
            direction = (-abc[0], -abc[1], -abc[2])
    else:
        b, c, dd = _row(v, 2), _row(v, 1), _row(v, 0)
        abc = cross(sub(b, a), sub(c, a))
        acd = cross(sub(c, a), sub(dd, a))
        adb = cross(sub(dd, a), sub(b, a))
        # slots: 0 = d, 1 = c, 2 = b, 3 = a; the triangle abc's normal points away from d. The origin
        # counts as outside a face only beyond round-off (_outside): on a shared edge (two sphere
        # centres in line with the first support points) every face would see it by a last bit in
        # turn and GJK would cycle until it gave up on a deep overlap.
        if _outside(abc, ao):  # (c, b, a)
            _move_vertex(sa, sb, v, 1, 0)
            _move_vertex(sa, sb, v, 2, 1)
            _move_vertex(sa, sb, v, 3, 2)
            n = 3
            direction = abc
        elif _outside(acd, ao):  # (d, c, a)
            _move_vertex(sa, sb, v, 3, 2)
            n = 3
            direction = acd
        elif _outside(adb, ao):  # (b, d, a)
            _swap_vertices(sa, sb, v, 0, 2)
            _move_vertex(sa, sb, v, 2, 1)
            _move_vertex(sa, sb, v, 3, 2)
            n = 3
            direction = adb
        else:
            return n, direction, True
    return n, direction, False


@kernel
def _epa(ka, ca, Ra, pa, kb, cb, Rb, pb, ws):
    """EPA (expanding polytope; van den Bergen 2001) from the tetrahedron `_gjk` leaves in rows 0..3
    of the workspace `ws`: the index of the polytope face closest to the origin (its normal,
    distance and vertices in ws), or -1 when the polytope has no face (flat or non-finite).

    Each expansion adds the support point along the closest face's normal, removes the faces it
    sees and closes the hole with a face per horizon edge; it stops once the point moves the closest
    face by less than _EPA_TOLERANCE, after _EPA_ITERATIONS, or before the vertex, face or edge
    rows could run out (then the closest face found so far stands: it lies inside A - B, so the
    depth errs short)."""
    sa, sb, v, faces, normals, dists, alive, edges = ws
    # faces oriented with outward normals (the origin is inside)
    nf = 0
    # faces are oriented away from a point inside the polytope: the first tetrahedron's centroid
    # (the origin may lie on a face when the shapes just touch, so it cannot serve)
    inside = 0.25 * (v[0] + v[1] + v[2] + v[3])
    for f in ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2)):
        nf = _epa_add_face(v, faces, normals, dists, alive, nf, f[0], f[1], f[2], inside)
    nv = 4
    best = -1
    for _ in range(_EPA_ITERATIONS):
        closest = -1
        for f in range(nf):
            if alive[f] and (closest < 0 or dists[f] < dists[closest]):
                closest = f
        if closest < 0:
            break  # no live face (a degenerate or non-finite polytope): the last closest face stands
        best = closest
        face_n = normals[best]
        _support_into(ka, ca, Ra, pa, face_n, 1.0, sa, nv)
        _support_into(kb, cb, Rb, pb, face_n, -1.0, sb, nv)
        v[nv] = sa[nv] - sb[nv]
        # stop when converged, or before an expansion could outgrow the buffers: the vertex rows, or
        # the face rows (an expansion adds one face per horizon edge, at most len(edges))
        if _dot(v[nv], face_n) - dists[best] < _EPA_TOLERANCE or nv + 1 >= v.shape[0] \
                or nf + edges.shape[0] >= faces.shape[0]:
            break
        ne = 0
        full = False
        for f in range(nf):
            i0 = faces[f, 0]  # (scalar: an array temporary per face and iteration cost more than EPA's arithmetic)
            if alive[f] and (normals[f, 0] * (v[nv, 0] - v[i0, 0]) + normals[f, 1] * (v[nv, 1] - v[i0, 1])
                             + normals[f, 2] * (v[nv, 2] - v[i0, 2])) > 0:
                alive[f] = False
                for e in range(3):
                    i, j = faces[f, e], faces[f, (e + 1) % 3]
                    shared = -1
                    for m in range(ne):
                        if edges[m, 0] == j and edges[m, 1] == i:
                            shared = m
                            break
                    if shared >= 0:
                        edges[shared] = edges[ne - 1]
                        ne -= 1
                    elif ne < edges.shape[0]:
                        edges[ne, 0], edges[ne, 1] = i, j
                        ne += 1
                    else:
                        full = True
                        break
            if full:
                break
        if full:
            # a horizon longer than the edge rows (nearly coplanar faces, e.g. two coaxial cylinder
            # caps at rest, each seeing the new point through rounding): the expansion is abandoned and
            # the closest face found so far is the answer; it lies inside A - B, so the depth errs short
            break
        for m in range(ne):
            nf = _epa_add_face(v, faces, normals, dists, alive, nf, edges[m, 0], edges[m, 1], nv, inside)
        nv += 1
    return best


@kernel
def _epa_add_face(v, faces, normals, dists, alive, nf, i, j, k, inside):
    """Face (i, j, k) of the polytope v with unit normal (v_j - v_i) × (v_k - v_i) / |...| turned
    away from `inside`, and its distance from the origin; degenerate faces are skipped. Scalars
    only (no temporaries), the arithmetic of `cross`, `_dot`."""
    n0, n1, n2 = cross((v[j, 0] - v[i, 0], v[j, 1] - v[i, 1], v[j, 2] - v[i, 2]),
                       (v[k, 0] - v[i, 0], v[k, 1] - v[i, 1], v[k, 2] - v[i, 2]))
    length = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if length < 1e-18:
        return nf
    n0, n1, n2 = n0 / length, n1 / length, n2 / length
    if n0 * (v[i, 0] - inside[0]) + n1 * (v[i, 1] - inside[1]) + n2 * (v[i, 2] - inside[2]) < 0:
        j, k = k, j  # wound inwards: flip so the normal points outwards
        n0, n1, n2 = -n0, -n1, -n2
    dist = n0 * v[i, 0] + n1 * v[i, 1] + n2 * v[i, 2]
    faces[nf, 0], faces[nf, 1], faces[nf, 2] = i, j, k
    normals[nf, 0], normals[nf, 1], normals[nf, 2] = n0, n1, n2
    dists[nf] = dist
    alive[nf] = True
    return nf + 1


@kernel
def _barycentric(p, a, b, c):
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = _dot(v0, v0), _dot(v0, v1), _dot(v1, v1)
    d20, d21 = _dot(v2, v0), _dot(v2, v1)
    denom = d00 * d11 - d01 * d01
    if abs(denom) < 1e-30:
        return np.array([1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0])
    lv = (d11 * d20 - d01 * d21) / denom
    lw = (d00 * d21 - d01 * d20) / denom
    return np.array([1.0 - lv - lw, lv, lw])


# ----------------------------------------------------------------------------- box–capsule
@kernel(inline=True)
def _box_capsule(ca, Ra, ha, cb, Rb, pb, margin, out_p, out_n, out_d, out_f, work):
    """Box a, capsule b. GJK/EPA on the full shapes gives the normal; if it is (within 5°) a box face
    normal, the capsule's segment is clipped to that face for two points, else one EPA point."""
    hit, n, depth, wa, wb = _gjk_epa(BOX, ca, Ra, ha, CAPSULE, cb, Rb, pb, work)
    r, h = pb[0], pb[1]
    u = Rb[:, 1]
    if not hit:
        # separated: closest points of the segment and the box by alternating projection (convex)
        t = 0.0
        q = ca
        for _ in range(32):
            q, _, _, _ = _closest_on_box(cb + t * u, ca, Ra, ha)
            t = _segment_closest(q, cb, u, h)
        p = cb + t * u
        d = p - q
        dist = np.sqrt(_dot(d, d))
        if r - dist < -margin or dist < _EPS:
            return 0
        n = d / dist
        _emit(out_p, out_n, out_d, out_f, 0, q, p - r * n, n, r - dist, 2)
        return 1
    local = _rot_t(Ra, n)
    axis = 0
    for k in range(1, 3):
        if abs(local[k]) > abs(local[axis]):
            axis = k
    if abs(local[axis]) > 0.996 and abs(_dot(u, Ra[:, axis])) < 0.1:
        face_n = (1.0 if local[axis] > 0 else -1.0) * Ra[:, axis]
        # clip the segment [cb - h u, cb + h u] to the face's slab in the two other axes
        lo, hi = -h, h
        for k in range(3):
            if k == axis:
                continue
            e = Ra[:, k]
            x0, du = _dot(cb - ca, e), _dot(u, e)
            if abs(du) < _EPS:
                if abs(x0) > ha[k]:
                    lo, hi = 1.0, -1.0
            else:
                t0, t1 = (-ha[k] - x0) / du, (ha[k] - x0) / du
                lo, hi = max(lo, min(t0, t1)), min(hi, max(t0, t1))
        if hi >= lo:
            count = 0
            for i in range(2):
                p = cb + (lo if i == 0 else hi) * u
                dist = _dot(face_n, p - ca) - ha[axis]
                dep = r - dist
                if dep >= -margin:
                    on_b = p - r * face_n
                    _emit(out_p, out_n, out_d, out_f, count, on_b + dep * face_n, on_b, face_n, dep, i)
                    count += 1
            return count
    _emit(out_p, out_n, out_d, out_f, 0, wa, wb, n, depth, 2)
    return 1


# ----------------------------------------------------------------------------- persistent manifold
@kernel
def _extent(kind, prm):
    """Radius of a ball about the shape's centre holding the shape (m)."""
    if kind == BOX:
        return np.sqrt(prm[0] ** 2 + prm[1] ** 2 + prm[2] ** 2)
    if kind == CYLINDER:
        return np.sqrt(prm[0] ** 2 + prm[1] ** 2)
    if kind == CAPSULE:
        return prm[0] + prm[1]
    return prm[0]  # sphere; hull (the largest |vertex|)


@kernel
def _gap(kind, c, R, prm, p):
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
        q, inside, _, _ = _closest_on_box(p, c, R, prm[:3])
    elif kind == CYLINDER:
        q, inside, _, _ = _closest_on_cylinder(p, c, R, prm[0], prm[1])
    else:  # capsule (a sphere: h = 0): the distance to its segment less the radius
        u = R[:, 1]
        d = p - (c + _segment_closest(p, c, u, prm[1]) * u)
        return max(np.sqrt(_dot(d, d)) - prm[0], 0.0)
    if inside:
        return 0.0
    d = p - q
    return np.sqrt(_dot(d, d))


@kernel(inline=True)
def _manifold(ka, ca, Ra, pa, kb, cb, Rb, pb, hit, n, wa, wb, local_a, local_b, feats, count, next_id,
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
    a_small = _extent(ka, pa) <= _extent(kb, pb)
    deepest = _support(kb, cb, Rb, pb, -n) if a_small else _support(ka, ca, Ra, pa, n)
    kept = 0
    for i in range(count):
        if a_small:
            pa_w = ca + _rot(Ra, local_a[i])
            d = _dot(pa_w - deepest, n)
            pb_w = pa_w - d * n
            off = _gap(kb, cb, Rb, pb, pb_w)
        else:
            pb_w = cb + _rot(Rb, local_b[i])
            d = _dot(deepest - pb_w, n)
            pa_w = pb_w + d * n
            off = _gap(ka, ca, Ra, pa, pa_w)
        if d > -BREAK and off < BREAK:
            local_a[kept] = _rot_t(Ra, pa_w - ca)
            local_b[kept] = _rot_t(Rb, pb_w - cb)
            feats[kept] = feats[i]
            kept += 1
    count = kept
    new_a, new_b = _rot_t(Ra, wa - ca), _rot_t(Rb, wb - cb)
    # a stored point close to the new one is the same point: replace it, keep its id
    slot = -1
    for i in range(count):
        d = (ca + _rot(Ra, local_a[i])) - wa
        if _dot(d, d) < BREAK * BREAK:
            slot = i
    if slot < 0:
        if count < 4:
            slot = count
            count += 1
        else:
            # five points: drop the one whose removal keeps the largest area (never the new one)
            pts = np.empty((5, 3))
            for i in range(4):
                pts[i] = ca + _rot(Ra, local_a[i])
            pts[4] = wa
            best_area, slot = -1.0, 0
            for drop in range(4):  # the four others, in order: q < drop stays q, the rest q + 1
                p0, p1 = pts[0 if drop > 0 else 1], pts[1 if drop > 1 else 2]
                p2, p3 = pts[2 if drop > 2 else 3], pts[4]
                x = cross(p2 - p0, p3 - p1)
                area = _dot(x, x)
                if area > best_area:
                    best_area, slot = area, drop
        feats[slot] = next_id
        next_id += 1
    local_a[slot] = new_a
    local_b[slot] = new_b
    for i in range(count):
        pa_w = ca + _rot(Ra, local_a[i])
        pb_w = cb + _rot(Rb, local_b[i])
        _emit(out_p, out_n, out_d, out_f, i, pa_w, pb_w, n, _dot(pa_w - pb_w, n), feats[i])
    return count, next_id


# ----------------------------------------------------------------------------- the dispatch kernel
@kernel(inline=True)
def _pair(kind, centre, rotation, params, hull, hulls, a, b, margin, points, local_a, local_b, feats, count, next_id,
          out_p, out_n, out_d, out_f, work):
    """Contacts of shapes a, b with kind[a] <= kind[b] into rows 0..3 of the out_* arrays;
    returns (count, stored manifold count, next id). Box–box and box–plane are `_narrow`'s own.
    `work`: the cache's `_epa_workspace()`.
    `points` (8, 3): scratch rows for the plane pairs' candidate points. Inlined into `_narrow`, its
    one call site, as are the pair functions only it calls (`_box_capsule`, `_capsule_capsule`,
    `_manifold`): a kernel of its own is a library that every caller links in and optimizes and
    compiles to machine code again (physics.compiled)."""
    ka, kb = kind[a], kind[b]
    ca, Ra, cb, Rb = centre[a], rotation[a], centre[b], rotation[b]
    # a hull's parameters are its row of `hulls` (vertices and planes, `physics.shapes.hull_row`)
    pa = hulls[hull[a]] if ka == HULL else params[a]
    pb = hulls[hull[b]] if kb == HULL else params[b]
    if ka == HULL and kb == PLANE:
        return _hull_plane(ca, Ra, pa, params, b, margin, out_p, out_n, out_d, out_f), 0, next_id
    if ka == SPHERE and kb != HULL:
        r = pa[0]
        if kb == SPHERE:
            d = cb - ca
            dist = np.sqrt(_dot(d, d))
            n = _unit(d, np.array([0.0, 1.0, 0.0]))
            depth = r + pb[0] - dist
            if depth < -margin:
                return 0, 0, next_id
            _emit(out_p, out_n, out_d, out_f, 0, ca + r * n, cb - pb[0] * n, n, depth, 0)
            return 1, 0, next_id
        if kb == BOX:
            q, inside, m, e = _closest_on_box(ca, cb, Rb, pb[:3])
            return _sphere_core(ca, r, q, inside, m, e, margin, out_p, out_n, out_d, out_f, 0, 0), 0, next_id
        if kb == CAPSULE:
            u = Rb[:, 1]
            core = cb + _segment_closest(ca, cb, u, pb[1]) * u
            d = core - ca
            dist = np.sqrt(_dot(d, d))
            n = _unit(d, _perpendicular(u))
            depth = r + pb[0] - dist
            if depth < -margin:
                return 0, 0, next_id
            _emit(out_p, out_n, out_d, out_f, 0, ca + r * n, core - pb[0] * n, n, depth, 0)
            return 1, 0, next_id
        if kb == CYLINDER:
            q, inside, m, e = _closest_on_cylinder(ca, cb, Rb, pb[0], pb[1])
            return _sphere_core(ca, r, q, inside, m, e, margin, out_p, out_n, out_d, out_f, 0, 0), 0, next_id
        points[0] = ca
        return _points_plane(points, 0, 1, r, params, b, margin, out_p, out_n, out_d, out_f, 0, 1), 0, next_id
    if ka == BOX and kb == CAPSULE:
        return _box_capsule(ca, Ra, pa[:3], cb, Rb, pb, margin, out_p, out_n, out_d, out_f, work), 0, next_id
    if ka == CAPSULE:
        if kb == CAPSULE:
            return _capsule_capsule(ca, Ra, pa, cb, Rb, pb, margin, out_p, out_n, out_d, out_f), 0, next_id
        if kb == PLANE:
            u = Ra[:, 1]
            points[0] = ca - pa[1] * u
            points[1] = ca + pa[1] * u
            return _points_plane(points, 0, 2, pa[0], params, b, margin, out_p, out_n, out_d, out_f, 0, 2), 0, next_id
    if ka == CYLINDER and kb == PLANE:
        _cylinder_rim(ca, Ra, pa[0], pa[1], -pb[:3], points)
        return _points_plane(points, 0, 8, 0.0, params, b, margin, out_p, out_n, out_d, out_f, 0, 4), 0, next_id
    if kb == PLANE:  # (plane-plane never reaches the narrow phase)
        return 0, 0, next_id
    # cylinder–box, cylinder–capsule, cylinder–cylinder: a separating axis among a few candidates
    # settles most pairs of a step (a barrel beside crates) without GJK; GJK would find them
    # separated too, and a separated pair keeps no points whatever the margin. A hull pair (with any
    # kind but a plane): apart when the balls about the two centres holding the shapes are.
    if ka == HULL or kb == HULL:
        dx, dy, dz = cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]
        reach = _extent(ka, pa) + _extent(kb, pb)
        if dx * dx + dy * dy + dz * dz > reach * reach:
            return 0, 0, next_id
    elif _separated(ka, ca, Ra, pa, kb, cb, Rb, pb):
        return 0, 0, next_id
    hit, n, _, wa, wb = _gjk_epa(ka, ca, Ra, pa, kb, cb, Rb, pb, work)
    m, next_id = _manifold(ka, ca, Ra, pa, kb, cb, Rb, pb, hit, n, wa, wb, local_a, local_b, feats, count, next_id,
                           out_p, out_n, out_d, out_f)
    return m, m, next_id


@kernel(inline=True)
def _half_width(kind, R, prm, dx, dy, dz):
    """Half the width of a box, capsule or cylinder (centred at the origin, rotation R) along the
    unit direction d: box Σ h_k |R e_k . d|; with a = R e_y . d, capsule |a| h + r, cylinder
    |a| h + r sqrt(1 - a²) (the support function h(d) of a centrally symmetric shape)."""
    a = R[0, 1] * dx + R[1, 1] * dy + R[2, 1] * dz
    if kind == BOX:
        return (prm[0] * abs(R[0, 0] * dx + R[1, 0] * dy + R[2, 0] * dz) + prm[1] * abs(a)
                + prm[2] * abs(R[0, 2] * dx + R[1, 2] * dy + R[2, 2] * dz))
    if kind == CAPSULE:
        return abs(a) * prm[1] + prm[0]
    return abs(a) * prm[1] + prm[0] * np.sqrt(max(1.0 - a * a, 0.0))


@kernel
def _separated(ka, ca, Ra, pa, kb, cb, Rb, pb):
    """Is there a separating axis among the centre line and each shape's axes (a box's three, a
    capsule's or cylinder's own)? |d . (cb - ca)| > h_a(d) + h_b(d) for a unit d proves the solids
    disjoint (Ericson 4.4); not finding one proves nothing (GJK decides)."""
    px, py, pz = cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]
    length = np.sqrt(px * px + py * py + pz * pz)
    if length > _EPS and length > _half_width(ka, Ra, pa, px / length, py / length, pz / length) \
            + _half_width(kb, Rb, pb, px / length, py / length, pz / length):
        return True
    for side in range(2):
        kind, R = (ka, Ra) if side == 0 else (kb, Rb)
        for k in range(3):
            if kind != BOX and k != 1:
                continue
            dx, dy, dz = R[0, k], R[1, k], R[2, k]
            if abs(px * dx + py * dy + pz * dz) > _half_width(ka, Ra, pa, dx, dy, dz) + _half_width(kb, Rb, pb, dx, dy, dz):
                return True
    return False


@kernel
def _persistent(ka, kb):
    """Does a pair of these kinds go through GJK/EPA and keep a manifold in the cache?"""
    return (ka == CYLINDER and (kb == BOX or kb == CAPSULE or kb == CYLINDER)) or (kb == CYLINDER and (ka == BOX or ka == CAPSULE)) \
        or ((ka == HULL or kb == HULL) and ka != PLANE and kb != PLANE)


@kernel
def _lower_bound(keys, n, key):
    """The first index of the sorted keys[:n] whose key is ≥ key (n if none; binary search)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _find(keys, n, key):
    """Index of key in the sorted keys[:n], or -1."""
    lo = _lower_bound(keys, n, key)
    return lo if lo < n and keys[lo] == key else -1


@kernel
def _narrow(kind, node, centre, rotation, params, hull, hulls, pairs, margin, start, row, old, n_old, new, g, ints, vec,
            out_d, work):
    """The contacts of pairs start.. written compactly from output row `row` on, until the outputs
    have room for fewer than 4 more points (a pair's maximum) or a GJK/EPA pair finds no free row
    in the `new` manifold arrays. Returns (the first pair not done, rows written, manifolds kept);
    (-1, 0, 0) when a pair index is out of range.

    Outputs: ints (5, C) rows shape_a, shape_b, body_a, body_b, feature_id; vec (2, C, 3) point and
    normal; out_d (C,) depth. Manifolds: `old`, `new` are (keys (G,), local_a (G,4,3), local_b,
    feats (G,4), counts (G,), next_ids (G,)); the pair (a, b) of S shapes has key a S + b; `old[0][:n_old]`
    is sorted; the pairs that keep points are written to `new` rows g.., sorted by key once all are done.
    Box–box and box–plane (a pile's every pair) run here on indices alone; the rest via `_pair`."""
    n_shapes = kind.shape[0]
    if start == 0:
        for k in range(pairs.shape[0]):
            if min(pairs[k, 0], pairs[k, 1]) < 0 or max(pairs[k, 0], pairs[k, 1]) >= n_shapes:
                return -1, 0, 0
    out_p, out_n, out_f = vec[0], vec[1], ints[4]
    new_keys, new_la, new_lb, new_feats, new_counts, new_next = new
    old_keys, old_la, old_lb, old_feats, old_counts, old_next = old
    fs, it = np.empty((36, 3)), np.empty((5, 8), dtype=np.int64)  # scratch, layout at _RAB..
    tmp_p, tmp_n, tmp_d, tmp_f = np.empty((4, 3)), np.empty((4, 3)), np.empty(4), np.empty(4, dtype=np.int64)
    no_a, no_b, no_f = np.zeros((4, 3)), np.zeros((4, 3)), np.zeros(4, dtype=np.int64)  # pairs that keep no manifold
    capacity = out_d.shape[0]
    for k in range(start, pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        keeps = _persistent(kind[a], kind[b])
        if row + 4 > capacity or (keeps and g >= new_keys.shape[0]):
            return k, row, g
        sign = 1.0
        # handled with the kinds in increasing order, the normal flipped back; a hull comes before
        # a plane (HULL > PLANE: the kind was added last), as every shape does
        if (kind[a] > kind[b]) != ((kind[a] == HULL and kind[b] == PLANE) or (kind[a] == PLANE and kind[b] == HULL)):
            a, b, sign = b, a, -1.0
        if kind[a] == BOX and kind[b] == BOX:
            m = _box_box(centre, rotation, params, a, b, margin, fs, it, out_p, out_n, out_d, out_f, row)
        elif kind[a] == BOX and kind[b] == PLANE:
            _box_corners(centre, rotation, params, a, fs, _POLY)
            m = _points_plane(fs, _POLY, 8, 0.0, params, b, margin, out_p, out_n, out_d, out_f, row, 4)
        else:
            # one call of `_pair` (it is inlined here: a second call site would be a second copy)
            local_a, local_b, feats, count, next_id, key = no_a, no_b, no_f, 0, 0, 0
            if keeps:
                # manifold row g: last step's points of this pair if it had any; the row is only
                # claimed (g advances) when points are kept, else the next pair overwrites it
                key = pairs[k, 0] * n_shapes + pairs[k, 1]
                was = _find(old_keys, n_old, key)
                if was >= 0:
                    new_la[g], new_lb[g], new_feats[g] = old_la[was], old_lb[was], old_feats[was]
                    count, next_id = old_counts[was], old_next[was]
                local_a, local_b, feats = new_la[g], new_lb[g], new_feats[g]
            m, stored, next_id = _pair(kind, centre, rotation, params, hull, hulls, a, b, margin, fs[_POLY:_POLY + 8], local_a,
                                       local_b, feats, count, next_id, tmp_p, tmp_n, tmp_d, tmp_f, work)
            if keeps and stored > 0:
                new_keys[g], new_counts[g], new_next[g] = key, stored, next_id
                g += 1
            for i in range(m):
                for c in range(3):
                    out_p[row + i, c] = tmp_p[i, c]
                    out_n[row + i, c] = tmp_n[i, c]
                out_d[row + i] = tmp_d[i]
                out_f[row + i] = tmp_f[i]
        for i in range(row, row + m):
            ints[0, i], ints[1, i] = pairs[k, 0], pairs[k, 1]
            ints[2, i], ints[3, i] = node[pairs[k, 0]], node[pairs[k, 1]]
            if sign < 0:
                out_n[i, 0], out_n[i, 1], out_n[i, 2] = -out_n[i, 0], -out_n[i, 1], -out_n[i, 2]
        row += m
    # insertion sort of the kept manifolds by key (already sorted when the pairs are)
    for i in range(1, g):
        j = i
        while j > 0 and new_keys[j - 1] > new_keys[j]:
            for x in (new_keys, new_counts, new_next):
                x[j - 1], x[j] = x[j], x[j - 1]
            for y in (new_la, new_lb):
                for q in range(4):
                    for c in range(3):
                        y[j - 1, q, c], y[j, q, c] = y[j, q, c], y[j - 1, q, c]
            for q in range(4):
                new_feats[j - 1, q], new_feats[j, q] = new_feats[j, q], new_feats[j - 1, q]
            j -= 1
    return pairs.shape[0], row, g


# The callers below allocate the kernels' outputs: an array made inside numba costs ~1.3 us to hand back.
@kernel
def _contact_keys(shape_a, shape_b, feature_id, n_shapes, keys):
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


@kernel
def lookup_impulses(stored, shape_a, shape_b, feature_id, point, normal, out):
    """Each contact's stored impulse into out (M, 3) (normal, t1, t2), 0 where none: by key (binary
    search in the sorted keys), then, for the points left, by position (`WARM_MATCH_DISTANCE`): the
    nearest stored point of the same pair, normal within 0.1 rad (`WARM_MATCH_COS`), that no point
    took; re-expressed in this step's tangents (`_warm`). `stored`: `StoredImpulses`; point, normal
    (M, 3): this step's, world."""
    keys, impulses, points, normals = stored.keys, stored.impulses, stored.points, stored.normals
    mine = np.empty(out.shape[0], dtype=np.int64)
    _contact_keys(shape_a, shape_b, feature_id, stored.n_shapes, mine)
    taken = np.zeros(keys.shape[0], dtype=np.bool_)
    found = np.zeros(mine.shape[0], dtype=np.bool_)
    for i in range(mine.shape[0]):
        j = _find(keys, keys.shape[0], mine[i])
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
        lo = _lower_bound(keys, keys.shape[0], pair << 20)      # the pair's stored points start here
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


@kernel
def _store(shape_a, shape_b, feature_id, n_shapes, impulse, point, normal, sorted_keys, sorted_impulse, sorted_point,
           sorted_normal):
    """The contacts' keys sorted, and their impulses, points and normals (M, 3) in that order, into
    the last four arrays; True, or False when the contacts were too far out of order for insertion
    sort (then nothing is written: the caller sorts with numpy's stable argsort, `_store_in_order`)."""
    keys = np.empty(sorted_keys.shape[0], dtype=np.int64)
    _contact_keys(shape_a, shape_b, feature_id, n_shapes, keys)
    # contacts come pair by pair with pairs sorted, so only each pair's <= 4 points are out of order:
    # insertion sort is O(M) then (mergesort costs ~1.4x numpy's radix sort at 24k points); it gives
    # way to a stable argsort once it has shifted more than 4 M elements (pairs given in any order),
    # numpy's, in the caller: numba's mergesort would compile on every first step for a case that
    # shipped scenes never meet (a stable sort's order is the same whichever sorts)
    order = np.arange(keys.shape[0])
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
    _store_in_order(keys, order, impulse, point, normal, sorted_keys, sorted_impulse, sorted_point, sorted_normal)
    return True


@kernel
def _store_in_order(keys, order, impulse, point, normal, sorted_keys, sorted_impulse, sorted_point, sorted_normal):
    """keys (M,), impulses, points and normals (M, 3) gathered in `order` into the last four arrays."""
    for i in range(keys.shape[0]):
        sorted_keys[i] = keys[order[i]]
        for c in range(3):
            sorted_impulse[i, c] = impulse[order[i], c]
            sorted_point[i, c] = point[order[i], c]
            sorted_normal[i, c] = normal[order[i], c]


# ----------------------------------------------------------------------------- public interface
@dataclass
class Contacts:
    """M contact points, world frame (see the module docstring for the conventions)."""

    shape_a: np.ndarray
    shape_b: np.ndarray
    body_a: np.ndarray
    body_b: np.ndarray
    point_world: np.ndarray
    normal_world: np.ndarray
    depth: np.ndarray
    feature_id: np.ndarray

    def __len__(self):
        return len(self.depth)

    def keys(self, n_shapes):
        """(M,) int64 keys (shape_a * S + shape_b) * 2^20 + feature_id, for matching across steps."""
        keys = np.empty(len(self.depth), dtype=np.int64)
        _contact_keys(self.shape_a, self.shape_b, self.feature_id, n_shapes, keys)
        return keys


_MANIFOLD_FIELDS = ("keys", "local_a", "local_b", "feats", "counts", "next_ids")


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
    work). The manifolds live in two sets of buffers, last step's and this step's, swapped each call."""

    def __init__(self):
        self._impulse_keys = np.zeros(0, dtype=np.int64)
        self._impulses = np.zeros((0, 3))
        self._impulse_points = np.zeros((0, 3))
        self._impulse_normals = np.zeros((0, 3))
        self._manifolds = _manifold_arrays(8)
        self._n_manifolds = 0
        self._spare = _manifold_arrays(8)
        self._work = _epa_workspace()
        self._n_shapes = 0
        self._capacity = 64  # output rows for the next `contacts` call: the last count plus a quarter

    def stored(self):
        """The stored impulses (`StoredImpulses`, the cache's own arrays: read, do not write)."""
        return StoredImpulses(self._impulse_keys, self._impulses, self._n_shapes, self._impulse_points,
                              self._impulse_normals)

    def lookup(self, c):
        """(M, 3) the impulses stored for these contact points last step; 0 for new points."""
        out = np.empty((len(c), 3))
        lookup_impulses(self.stored(), c.shape_a, c.shape_b, c.feature_id, np.ascontiguousarray(c.point_world, dtype=np.float64),
                        np.ascontiguousarray(c.normal_world, dtype=np.float64), out)
        return out

    def store(self, c, impulse):
        """Remember the solver's impulses (M, 3) for the contacts `c` (replaces the previous ones)."""
        impulse = np.asarray(impulse, dtype=np.float64)
        if impulse.shape != (len(c), 3):
            raise ValueError(f"impulse: got shape {impulse.shape}; expected ({len(c)}, 3)")
        keys, impulses = np.empty(len(c), dtype=np.int64), np.empty((len(c), 3))
        points, normals = np.empty((len(c), 3)), np.empty((len(c), 3))
        point = np.ascontiguousarray(c.point_world, dtype=np.float64)
        normal = np.ascontiguousarray(c.normal_world, dtype=np.float64)
        if not _store(c.shape_a, c.shape_b, c.feature_id, self._n_shapes, impulse, point, normal, keys, impulses,
                      points, normals):
            unsorted = c.keys(self._n_shapes)
            _store_in_order(unsorted, np.argsort(unsorted, kind="stable"), impulse, point, normal, keys, impulses,
                            points, normals)
        self._impulse_keys, self._impulses = keys, impulses
        self._impulse_points, self._impulse_normals = points, normals

    def state(self):
        """What the next step reads (`physics.snapshot`): the stored impulses and the live
        manifolds, as named array copies."""
        n = self._n_manifolds
        out = {"impulse_keys": self._impulse_keys.copy(), "impulses": self._impulses.copy(),
               "impulse_points": self._impulse_points.copy(), "impulse_normals": self._impulse_normals.copy(),
               "n_shapes": np.array(self._n_shapes, np.int64)}
        for name, array in zip(_MANIFOLD_FIELDS, self._manifolds):
            out["manifold_" + name] = array[:n].copy()
        return out

    def restore(self, state):
        """Put back a `state()` (buffers sized to hold it; the spare set keeps its capacity)."""
        self._impulse_keys = state["impulse_keys"].copy()
        self._impulses = state["impulses"].copy()
        # a state saved without points and normals matches by feature id only (NaN is never near)
        # and takes its impulses as they are
        unknown = np.full((len(self._impulses), 3), np.nan)
        self._impulse_points = state["impulse_points"].copy() if "impulse_points" in state else unknown
        self._impulse_normals = state["impulse_normals"].copy() if "impulse_normals" in state else unknown.copy()
        self._n_shapes = int(state["n_shapes"])
        n = len(state["manifold_keys"])
        manifolds = _manifold_arrays(max(8, n))
        for name, array in zip(_MANIFOLD_FIELDS, manifolds):
            array[:n] = state["manifold_" + name]
        self._manifolds, self._n_manifolds = manifolds, n


def contacts(shapes, world, pairs, cache=None, margin=0.0):
    """Contact points of the candidate `pairs (K, 2)` (from `physics.broadphase.candidate_pairs`).

    `world`: the nodes' world poses (see `physics.shapes.world_shapes`). `cache`: a `ContactCache`
    holding the GJK/EPA pairs' persistent manifolds (updated in place); without one those pairs get
    only this step's point. Points with depth >= -margin are returned. Returns `Contacts`.
    """
    pairs = np.asarray(pairs)
    if pairs.dtype != np.int64 or pairs.ndim != 2 or not pairs.flags.c_contiguous:
        pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2) if pairs.size else np.zeros((0, 2), np.int64)
    if pairs.shape[1:] != (2,):
        raise ValueError(f"pairs: got shape {pairs.shape}; expected (K, 2)")
    margin = float(margin)
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin: got {margin!r}; expected a finite number >= 0")
    centre, rotation, params = world_shapes(shapes, world)
    hulls = world_hulls(shapes, world)
    if cache is None:
        cache = ContactCache()
    cache._n_shapes = n_shapes = len(shapes)
    # outputs sized from the last call's count (fresh pages cost more than the kernel's work per
    # point), grown and resumed when a step needs more; likewise the manifold rows
    ints, vec, depth = _outputs(cache._capacity)
    new = cache._spare
    done, m, g = _narrow(shapes.kind, shapes.node, centre, rotation, params, shapes.hull, hulls, pairs, margin, 0, 0,
                         cache._manifolds, cache._n_manifolds, new, 0, ints, vec, depth, cache._work)
    if done < 0:
        raise ValueError(f"pairs: got indices in [{pairs.min()}, {pairs.max()}]; expected [0, {n_shapes})")
    while done < len(pairs):
        if m + 4 > len(depth):
            ints, vec, depth = _outputs(2 * len(depth) + 4 * min(len(pairs) - done, 1024), (ints, vec, depth), m)
        if g >= len(new[0]):
            new = tuple(np.concatenate([x, np.zeros_like(x)]) for x in new)
        done, m, g = _narrow(shapes.kind, shapes.node, centre, rotation, params, shapes.hull, hulls, pairs, margin, done, m,
                             cache._manifolds, cache._n_manifolds, new, g, ints, vec, depth, cache._work)
    cache._capacity = m + m // 4 + 64
    cache._spare, cache._manifolds, cache._n_manifolds = cache._manifolds, new, g
    return Contacts(ints[0, :m], ints[1, :m], ints[2, :m], ints[3, :m], vec[0, :m], vec[1, :m], depth[:m], ints[4, :m])


def _outputs(capacity, old=None, m=0):
    """The `contacts` output arrays with room for `capacity` points: ints (5, C) (shape_a, shape_b,
    body_a, body_b, feature_id), vec (2, C, 3) (point, normal), depth (C,); the first m points
    copied from `old`."""
    out = np.empty((5, capacity), dtype=np.int64), np.empty((2, capacity, 3)), np.empty(capacity)
    if old is not None:
        out[0][:, :m], out[1][:, :m], out[2][:m] = old[0][:, :m], old[1][:, :m], old[2][:m]
    return out
