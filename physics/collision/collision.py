"""Narrow phase: contact manifolds (points, normal, depth, feature ids) for every pair of shape kinds.

Conventions (docs/architecture.md, "Collision interface"): every contact of a pair (a, b) has a unit
`normal_world` pointing from a to b (moving b along it separates the shapes), a `depth` > 0 when
the shapes overlap, and `point_world` midway between the two surface points: if p_a is a's surface
point deepest inside b and p_b = p_a - depth n the matching point on b's surface, the point is
(p_a + p_b) / 2. At most 4 points per pair. Shape frames and `params` as in `physics.model.shapes`.

One numba kernel loops over the pairs and dispatches on the kinds (a pair is handled with its
kinds in increasing order SPHERE < BOX < CAPSULE < CYLINDER < HULL < PLANE and the normal flipped back).
Methods, and where they come from:
- sphere–sphere/plane/box/capsule/cylinder: closest point on the other shape's core (Ericson,
  Real-Time Collision Detection, 5.1); a centre inside the core leaves by the nearest face.
- capsule–plane, box–plane, cylinder–plane: the endpoints / the 8 corners / 4 points on each cap
  rim (at quarter turns from the rim point deepest along -n), the 4 deepest kept.
- capsule–capsule: closest points of the two segments (Ericson 5.1.9); nearly parallel and
  overlapping segments give two points (the ends of the overlap), so a capsule can rest on another.
- box–box: the separating-axis test on 15 axes, then ODE's dBoxBox with clipped incident faces and
  feature ids that stay while the configuration does (`physics.collision.box_box`).
- box–capsule: the same separating axes for the segment (box faces, segment axis × box edges,
  and the segment–box closest direction from GJK/EPA); along a box face normal the segment is
  clipped to the face (two points, Box2D's capsule–polygon manifold), otherwise one GJK/EPA point.
- cylinder–box, cylinder–capsule, cylinder–cylinder: GJK then EPA (`physics.collision.gjk_epa`) for the
  normal, depth and witness points, after a separating-axis test on the axes that settle most pairs
  (`_separated`); one point per step, merged into the pair's persistent manifold kept in the
  `ContactCache` (`physics.collision.manifold`).
- hull–plane: the hull's vertices below the plane, at most 4 spread over the patch (`_hull_plane`);
  hull–anything else: GJK/EPA with the persistent manifold of the cylinder pairs, after a
  bounding-ball test. A hull is handled
  before a plane (the kind order's one exception: HULL was added after PLANE).

The small vector helpers and the closest points of shape cores the pair functions share are
`physics.collision.closest_points`.
"""
import math
import operator
from dataclasses import dataclass, fields

import numpy as np

from physics.core.compiled import SteadyCall, kernel
from physics.math.rotation_kernels import cross
from physics.model.shapes import BOX, CAPSULE, CYLINDER, HULL, PLANE, SPHERE, world_hulls, world_shapes
from physics.collision.box_box import CULL_DEPTH_TOLERANCE, POLY, box_box
from physics.collision.closest_points import (EPS, closest_on_box, closest_on_cylinder, dot, emit, perpendicular, rot_t,
                                    segment_closest, segment_parameters, unit)
from physics.collision.gjk_epa import gjk_epa
from physics.collision.manifold import ContactCache, bounding_radius, contact_keys, find_key, merge_into_manifold

__all__ = ["Contacts", "contacts"]

NARROW_CALLS = 8            # the narrow phase's bound calls a cache keeps at most (`ContactCache.narrow_calls`)


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
        dist = np.sqrt(dot(d, d))
        n = unit(d, np.array([0.0, 1.0, 0.0]))
        depth = radius - dist
        pb = q
    if depth < -margin:
        return 0
    emit(out_p, out_n, out_d, out_f, k, centre + radius * n, pb, n, depth, feature)
    return 1


# ----------------------------------------------------------------------------- plane pairs
@kernel(refcounts=False)
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


@kernel(refcounts=False)
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
    w = direction - dot(direction, u) * u
    w = unit(w, R[:, 0])
    v = np.array(cross(u, w))
    for cap in range(2):
        centre = c + (h if cap else -h) * u
        points[4 * cap + 0] = centre + r * w
        points[4 * cap + 1] = centre + r * v
        points[4 * cap + 2] = centre - r * w
        points[4 * cap + 3] = centre - r * v


@kernel
def _hull_plane(c, R, prm, params, b, margin, out_p, out_n, out_d, out_f, work):
    """A hull (centre c, rotation R, row prm) against plane b = params[b] = (n, offset): each vertex
    x_i = c + R v_i is depth_i = offset - n . x_i below the plane (normal a -> b = -n, the point
    midway x_i + depth_i n / 2, feature id i). Of the vertices with depth >= -margin at most 4 are
    kept, spread over the contact patch so a hull rests on a face as a box does (Bullet's
    sortCachedPoints idea, as `cull4`): the first of those within CULL_DEPTH_TOLERANCE of the
    deepest (the same vertex while a resting face rocks by round-off), the one furthest from it,
    the one making the largest triangle with those two, then the one adding the most area outside
    that triangle. Returns the count written to rows 0.. `work`: the cache's `epa_workspace()`,
    whose support points and distances (room for 128 and more) hold the vertices and depths (at
    most HULL_VERTICES_MAX): made at each call, they were most of what a robot's links resting on
    the floor allocated in a sub-step (the iiwa's 2.4 KiB)."""
    nx, ny, nz, offset = params[b, 0], params[b, 1], params[b, 2], params[b, 3]
    count = int(prm[1])
    x = work[0][:count]
    depth = work[5][:count]
    deepest = -np.inf
    for i in range(count):
        vx, vy, vz = prm[4 + 3 * i], prm[5 + 3 * i], prm[6 + 3 * i]
        for k in range(3):
            x[i, k] = c[k] + R[k, 0] * vx + R[k, 1] * vy + R[k, 2] * vz
        depth[i] = offset - (nx * x[i, 0] + ny * x[i, 1] + nz * x[i, 2])
        deepest = max(deepest, depth[i])
    if deepest < -margin:
        return 0
    # the chosen vertices (-1: none), as four numbers rather than an array of them
    c0, c1, c2, c3 = -1, -1, -1, -1
    for i in range(count):
        if depth[i] >= deepest - CULL_DEPTH_TOLERANCE and depth[i] >= -margin:
            c0 = i
            break
    for slot in range(1, 4):
        best, pick = 1e-18, -1   # (m² or m⁴) a point adding no length or area adds nothing
        for i in range(count):
            if depth[i] < -margin or i == c0 or i == c1 or i == c2:
                continue
            d0 = (x[i, 0] - x[c0, 0], x[i, 1] - x[c0, 1], x[i, 2] - x[c0, 2])
            if slot == 1:
                score = dot(d0, d0)
            else:
                d1 = (x[i, 0] - x[c1, 0], x[i, 1] - x[c1, 1], x[i, 2] - x[c1, 2])
                t = cross(d0, d1)
                score = dot(t, t)
                if slot == 3:  # the area outside the triangle: the three triangles on its edges
                    d2 = (x[i, 0] - x[c2, 0], x[i, 1] - x[c2, 1], x[i, 2] - x[c2, 2])
                    t1, t2 = cross(d1, d2), cross(d2, d0)
                    score = np.sqrt(score) + np.sqrt(dot(t1, t1)) + np.sqrt(dot(t2, t2))
                    e1 = (x[c1, 0] - x[c0, 0], x[c1, 1] - x[c0, 1], x[c1, 2] - x[c0, 2])
                    e2 = (x[c2, 0] - x[c0, 0], x[c2, 1] - x[c0, 1], x[c2, 2] - x[c0, 2])
                    t3 = cross(e1, e2)
                    score = (score - np.sqrt(dot(t3, t3))) ** 2   # 0 inside the triangle (in its plane)
            if score > best:
                best, pick = score, i
        if pick < 0:
            break
        if slot == 1:
            c1 = pick
        elif slot == 2:
            c2 = pick
        else:
            c3 = pick
    m = 0
    for slot in range(4):
        i = c0 if slot == 0 else c1 if slot == 1 else c2 if slot == 2 else c3
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
@kernel
def _segments_closest(ca, ua, ha, cb, ub, hb):
    """Parameters (s, t) of the closest points ca + s ua, cb + t ub on two segments (Ericson 5.1.9)."""
    r = ca - cb
    return segment_parameters(dot(ua, ub), dot(ua, r), dot(ub, r), ha, hb)


@kernel(inline=True)
def _capsule_capsule(ca, Ra, pa, cb, Rb, pb, margin, out_p, out_n, out_d, out_f):
    ua, ub = Ra[:, 1], Rb[:, 1]
    ra, ha, rb, hb = pa[0], pa[1], pb[0], pb[1]
    if abs(dot(ua, ub)) > 1.0 - 1e-6:
        # parallel: the overlap of b's projection on a's axis, if any, gives two points
        t0 = dot(cb - ub * hb - ca, ua)
        t1 = dot(cb + ub * hb - ca, ua)
        lo, hi = max(min(t0, t1), -ha), min(max(t0, t1), ha)
        if hi - lo > 1e-9:
            count = 0
            for i in range(2):
                s = lo if i == 0 else hi
                p = ca + s * ua
                t = segment_closest(p, cb, ub, hb)
                q = cb + t * ub
                d = q - p
                dist = np.sqrt(dot(d, d))
                n = unit(d, perpendicular(ua))
                depth = ra + rb - dist
                if depth >= -margin:
                    emit(out_p, out_n, out_d, out_f, count, p + ra * n, q - rb * n, n, depth, i)
                    count += 1
            return count
    s, t = _segments_closest(ca, ua, ha, cb, ub, hb)
    p, q = ca + s * ua, cb + t * ub
    d = q - p
    n = unit(d, perpendicular(ua))
    depth = ra + rb - np.sqrt(dot(d, d))
    if depth < -margin:
        return 0
    emit(out_p, out_n, out_d, out_f, 0, p + ra * n, q - rb * n, n, depth, 2)
    return 1


# ----------------------------------------------------------------------------- box–capsule
@kernel(inline=True)
def _box_capsule(ca, Ra, ha, cb, Rb, pb, margin, out_p, out_n, out_d, out_f, work):
    """Box a, capsule b. GJK/EPA on the full shapes gives the normal; if it is (within 5°) a box face
    normal, the capsule's segment is clipped to that face for two points, else one EPA point."""
    hit, n, depth, wa, wb = gjk_epa(BOX, ca, Ra, ha, CAPSULE, cb, Rb, pb, work)
    r, h = pb[0], pb[1]
    u = Rb[:, 1]
    if not hit:
        # separated: closest points of the segment and the box by alternating projection (convex)
        t = 0.0
        q = ca
        for _ in range(32):
            q, _, _, _ = closest_on_box(cb + t * u, ca, Ra, ha)
            t = segment_closest(q, cb, u, h)
        p = cb + t * u
        d = p - q
        dist = np.sqrt(dot(d, d))
        if r - dist < -margin or dist < EPS:
            return 0
        n = d / dist
        emit(out_p, out_n, out_d, out_f, 0, q, p - r * n, n, r - dist, 2)
        return 1
    local = rot_t(Ra, n)
    axis = 0
    for k in range(1, 3):
        if abs(local[k]) > abs(local[axis]):
            axis = k
    if abs(local[axis]) > 0.996 and abs(dot(u, Ra[:, axis])) < 0.1:
        face_n = (1.0 if local[axis] > 0 else -1.0) * Ra[:, axis]
        # clip the segment [cb - h u, cb + h u] to the face's slab in the two other axes
        lo, hi = -h, h
        for k in range(3):
            if k == axis:
                continue
            e = Ra[:, k]
            x0, du = dot(cb - ca, e), dot(u, e)
            if abs(du) < EPS:
                if abs(x0) > ha[k]:
                    lo, hi = 1.0, -1.0
            else:
                t0, t1 = (-ha[k] - x0) / du, (ha[k] - x0) / du
                lo, hi = max(lo, min(t0, t1)), min(hi, max(t0, t1))
        if hi >= lo:
            count = 0
            for i in range(2):
                p = cb + (lo if i == 0 else hi) * u
                dist = dot(face_n, p - ca) - ha[axis]
                dep = r - dist
                if dep >= -margin:
                    on_b = p - r * face_n
                    emit(out_p, out_n, out_d, out_f, count, on_b + dep * face_n, on_b, face_n, dep, i)
                    count += 1
            return count
    emit(out_p, out_n, out_d, out_f, 0, wa, wb, n, depth, 2)
    return 1


# ----------------------------------------------------------------------------- the dispatch kernel
@kernel
def _pair(kind, centre, rotation, params, hull, hulls, a, b, margin, points, local_a, local_b, feats, count, next_id,
          out_p, out_n, out_d, out_f, work):
    """Contacts of shapes a, b with kind[a] <= kind[b] into rows 0..3 of the out_* arrays;
    returns (count, stored manifold count, next id). Box–box and box–plane are `_narrow`'s own.
    `work`: the cache's `epa_workspace()`.
    `points` (8, 3): scratch rows for the plane pairs' candidate points. A kernel of its own, with
    numba's reference counts: its pair functions make small arrays (GJK/EPA's workspace aside), which
    it frees before it returns, while `_narrow`, which calls it, keeps none (the arrays a call from
    Python gives a kernel with them each take a record tracemalloc counts: some 2 KiB a call of the
    narrow phase's 40). The pair functions only it calls are inlined into it (`_box_capsule`,
    `_capsule_capsule`, `merge_into_manifold`): a kernel of its own is a library that every caller
    links in and optimizes and compiles to machine code again (physics.core.compiled)."""
    ka, kb = kind[a], kind[b]
    ca, Ra, cb, Rb = centre[a], rotation[a], centre[b], rotation[b]
    # a hull's parameters are its row of `hulls` (vertices and planes, `physics.model.shapes.hull_row`)
    pa = hulls[hull[a]] if ka == HULL else params[a]
    pb = hulls[hull[b]] if kb == HULL else params[b]
    if ka == HULL and kb == PLANE:
        return _hull_plane(ca, Ra, pa, params, b, margin, out_p, out_n, out_d, out_f, work), 0, next_id
    if ka == SPHERE and kb != HULL:
        r = pa[0]
        if kb == SPHERE:
            d = cb - ca
            dist = np.sqrt(dot(d, d))
            n = unit(d, np.array([0.0, 1.0, 0.0]))
            depth = r + pb[0] - dist
            if depth < -margin:
                return 0, 0, next_id
            emit(out_p, out_n, out_d, out_f, 0, ca + r * n, cb - pb[0] * n, n, depth, 0)
            return 1, 0, next_id
        if kb == BOX:
            q, inside, m, e = closest_on_box(ca, cb, Rb, pb[:3])
            return _sphere_core(ca, r, q, inside, m, e, margin, out_p, out_n, out_d, out_f, 0, 0), 0, next_id
        if kb == CAPSULE:
            u = Rb[:, 1]
            core = cb + segment_closest(ca, cb, u, pb[1]) * u
            d = core - ca
            dist = np.sqrt(dot(d, d))
            n = unit(d, perpendicular(u))
            depth = r + pb[0] - dist
            if depth < -margin:
                return 0, 0, next_id
            emit(out_p, out_n, out_d, out_f, 0, ca + r * n, core - pb[0] * n, n, depth, 0)
            return 1, 0, next_id
        if kb == CYLINDER:
            q, inside, m, e = closest_on_cylinder(ca, cb, Rb, pb[0], pb[1])
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
        reach = bounding_radius(ka, pa) + bounding_radius(kb, pb)
        if dx * dx + dy * dy + dz * dz > reach * reach:
            return 0, 0, next_id
    elif _separated(ka, ca, Ra, pa, kb, cb, Rb, pb):
        return 0, 0, next_id
    hit, n, _, wa, wb = gjk_epa(ka, ca, Ra, pa, kb, cb, Rb, pb, work)
    m, next_id = merge_into_manifold(ka, ca, Ra, pa, kb, cb, Rb, pb, hit, n, wa, wb, local_a, local_b, feats, count, next_id,
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
    if length > EPS and length > _half_width(ka, Ra, pa, px / length, py / length, pz / length) \
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

@kernel(refcounts=False)
def _narrow(kind, node, centre, rotation, params, hull, hulls, pairs, counts, reach, old, new, ints, vec, out_d, work,
            scratch):
    """The contacts of pairs start.. written compactly from output row `row` on, until the outputs
    have room for fewer than 4 more points (a pair's maximum) or a GJK/EPA pair finds no free row
    in the `new` manifold arrays. Returns (the first pair not done, rows written, manifolds kept);
    (-1, 0, 0) when a pair index is out of range. `counts` (5,) int: the pairs (the first rows of
    `pairs`), start, row, the old manifolds n_old and the first new one g; `reach` (1,): the margin
    (in arrays, so that a call bound to them, `contacts`, serves every sub-step).

    Outputs: ints (5, C) rows shape_a, shape_b, body_a, body_b, feature_id; vec (2, C, 3) point and
    normal; out_d (C,) depth. Manifolds: `old`, `new` are (keys (G,), local_a (G,4,3), local_b,
    feats (G,4), counts (G,), next_ids (G,)); the pair (a, b) of S shapes has key a S + b; `old[0][:n_old]`
    is sorted; the pairs that keep points are written to `new` rows g.., sorted by key once all are done.
    Box–box and box–plane (a pile's every pair) run here on indices alone; the rest via `_pair`.
    Compiled without numba's reference counts (physics.core.compiled, 6): it allocates nothing, and
    a call from Python leaves no record of its arrays."""
    n_pairs, start, row, n_old, g = counts[0], counts[1], counts[2], counts[3], counts[4]
    margin = reach[0]
    n_shapes = kind.shape[0]
    if start == 0:
        for k in range(n_pairs):
            if min(pairs[k, 0], pairs[k, 1]) < 0 or max(pairs[k, 0], pairs[k, 1]) >= n_shapes:
                return -1, 0, 0
    out_p, out_n, out_f = vec[0], vec[1], ints[4]
    new_keys, new_la, new_lb, new_feats, new_counts, new_next = new
    old_keys, old_la, old_lb, old_feats, old_counts, old_next = old
    fs, it, tmp_p, tmp_n, tmp_d, tmp_f, no_a, no_b, no_f = scratch     # (`narrow_scratch`)
    no_a[:] = 0.0       # the manifold of a pair that keeps none starts empty at each call
    no_b[:] = 0.0
    no_f[:] = 0
    capacity = out_d.shape[0]
    for k in range(start, n_pairs):
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
            m = box_box(centre, rotation, params, a, b, margin, fs, it, out_p, out_n, out_d, out_f, row)
        elif kind[a] == BOX and kind[b] == PLANE:
            _box_corners(centre, rotation, params, a, fs, POLY)
            m = _points_plane(fs, POLY, 8, 0.0, params, b, margin, out_p, out_n, out_d, out_f, row, 4)
        else:
            # one call of `_pair` (a second call site would link its library in a second time)
            local_a, local_b, feats, count, next_id, key = no_a, no_b, no_f, 0, 0, 0
            if keeps:
                # manifold row g: last step's points of this pair if it had any; the row is only
                # claimed (g advances) when points are kept, else the next pair overwrites it
                key = pairs[k, 0] * n_shapes + pairs[k, 1]
                was = find_key(old_keys, n_old, key)
                if was >= 0:      # (element by element: an array's copy may allocate, here none may)
                    for q in range(4):
                        for c in range(3):
                            new_la[g, q, c], new_lb[g, q, c] = old_la[was, q, c], old_lb[was, q, c]
                        new_feats[g, q] = old_feats[was, q]
                    count, next_id = old_counts[was], old_next[was]
                local_a, local_b, feats = new_la[g], new_lb[g], new_feats[g]
            m, stored, next_id = _pair(kind, centre, rotation, params, hull, hulls, a, b, margin, fs[POLY:POLY + 8], local_a,
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
    return n_pairs, row, g


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

    def take(self, rows):
        """The points `rows` (indices or a mask) as Contacts of their own."""
        # (the fields, in order; `map`, not a comprehension, which would close over `rows`)
        return Contacts(*map(operator.itemgetter(rows), vars(self).values()))

    def copy(self):
        """These points in arrays of their own (`contacts`' are its cache's room)."""
        return Contacts(*(array.copy() for array in vars(self).values()))

    @classmethod
    def joined(cls, *parts):
        """The points of `parts` (Contacts) in one, in order."""
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)))

    def keys(self, n_shapes):
        """(M,) int64 keys (shape_a * S + shape_b) * 2^20 + feature_id, for matching across steps."""
        keys = np.empty(len(self.depth), dtype=np.int64)
        contact_keys(self.shape_a, self.shape_b, self.feature_id, n_shapes, keys)
        return keys


OUTPUT_VIEWS_KEPT = 8       # `Contacts` views of an output set kept by count (`_output_room`)

# No contact: one empty `Contacts`, shared (no point to write into; made once, not at each sub-step)
_NO_CONTACTS = Contacts(*(np.zeros(0, np.int64) for _ in range(4)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0),
                        np.zeros(0, np.int64))


def no_pairs(cache, n_shapes):
    """`contacts` of no pair among `n_shapes` shapes: the state the narrow phase leaves `cache` in
    after none (no manifold kept), and no point (for a caller that knows its broad phase found none)."""
    cache.n_shapes = n_shapes
    cache.capacity = 64
    cache.spare, cache.manifolds, cache.n_manifolds = cache.manifolds, cache.spare, 0
    return _NO_CONTACTS


def contacts(shapes, world, pairs, cache=None, margin=0.0, placed=None, pair_room=None):
    """Contact points of the candidate `pairs (K, 2)` (from `physics.collision.broadphase.candidate_pairs`).

    `world`: the nodes' world poses (see `physics.model.shapes.world_shapes`). `cache`: a `ContactCache`
    holding the GJK/EPA pairs' persistent manifolds (updated in place); without one those pairs get
    only this step's point. Points with depth >= -margin are returned. `placed`: the shapes at
    these poses, if the caller has them (`physics.model.shapes.place`). `pair_room`: the (P, 2)
    int64 buffer whose first K rows `pairs` is, kept from call to call (the broad phase's): the
    kernel's call is then bound to it, and to the cache's room, where they come back
    (`ContactCache.narrow_calls`, `physics.core.compiled.SteadyCall`). Returns `Contacts`; with
    a cache, views of its room (`_output_room`), as they are until the second call after with it.
    """
    if cache is not None and type(pairs) is np.ndarray and pairs.shape == (0, 2) \
            and isinstance(margin, float) and 0.0 <= margin < math.inf:
        return no_pairs(cache, len(shapes))     # (the common sub-step of a robot clear of the floor)
    pairs = np.asarray(pairs)
    if pairs.dtype != np.int64 or pairs.ndim != 2 or not pairs.flags.c_contiguous:
        pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2) if pairs.size else np.zeros((0, 2), np.int64)
    if pairs.shape[1:] != (2,):
        raise ValueError(f"pairs: got shape {pairs.shape}; expected (K, 2)")
    margin = float(margin)
    if not math.isfinite(margin) or margin < 0:     # (math's: numpy's on a float costs a microsecond)
        raise ValueError(f"margin: got {margin!r}; expected a finite number >= 0")
    if cache is None:
        cache = ContactCache()
    if not len(pairs):
        return no_pairs(cache, len(shapes))
    cache.n_shapes = n_shapes = len(shapes)
    if placed is None:
        (centre, rotation, params), hulls = world_shapes(shapes, world), world_hulls(shapes, world)
    else:
        centre, rotation, params, hulls = placed.centre, placed.rotation, placed.params, placed.hulls
    # outputs in the cache's room (`_output_room`), grown and resumed when a step needs more;
    # likewise the manifold rows
    ints, vec, depth, views = _output_room(cache)
    if cache.scratch is None:
        cache.scratch = narrow_scratch()
    scratch, counts, reach = cache.scratch
    new = cache.spare
    counts[0], counts[1], counts[2], counts[3], counts[4] = len(pairs), 0, 0, cache.n_manifolds, 0
    reach[0] = margin
    if pair_room is None or len(pair_room) < len(pairs):
        done, m, g = _narrow(shapes.kind, shapes.node, centre, rotation, params, shapes.hull, hulls, pairs, counts, reach,
                             cache.manifolds, new, ints, vec, depth, cache.work, scratch)
    else:
        if cache.narrow_calls is None:
            cache.narrow_calls = SteadyCall(NARROW_CALLS)
        objects = (shapes.kind, shapes.node, centre, rotation, params, shapes.hull, hulls, pair_room, counts, reach,
                   cache.manifolds, new, ints, vec, depth, cache.work, scratch)
        done, m, g = cache.narrow_calls(_narrow, objects, (id(ints), id(new)), objects)
    if done < 0:
        raise ValueError(f"pairs: got indices in [{pairs.min()}, {pairs.max()}]; expected [0, {n_shapes})")
    while done < len(pairs):
        if m + 4 > len(depth):
            ints, vec, depth = _outputs(2 * len(depth) + 4 * min(len(pairs) - done, 1024), (ints, vec, depth), m)
            views = {}
            cache.outputs[0] = (ints, vec, depth, views)
        if g >= len(new[0]):
            new = tuple(np.concatenate([x, np.zeros_like(x)]) for x in new)
        counts[1], counts[2], counts[4] = done, m, g
        done, m, g = _narrow(shapes.kind, shapes.node, centre, rotation, params, shapes.hull, hulls, pairs, counts, reach,
                             cache.manifolds, new, ints, vec, depth, cache.work, scratch)
    cache.capacity = m + m // 4 + 64
    cache.spare, cache.manifolds, cache.n_manifolds = cache.manifolds, new, g
    cache.outputs.reverse()     # (the next call writes the other set: these points stay as they are until the one after)
    found = views.get(m)        # the same `Contacts` while the count stays
    if found is None:
        if len(views) >= OUTPUT_VIEWS_KEPT:     # (the whole room's stays: `whole_room`)
            whole = views.get(WHOLE)
            views.clear()
            if whole is not None:
                views[WHOLE] = whole
        found = views[m] = Contacts(ints[0, :m], ints[1, :m], ints[2, :m], ints[3, :m], vec[0, :m], vec[1, :m],
                                    depth[:m], ints[4, :m])
    return found


def whole_room(cache, c):
    """The `Contacts` of the whole set of output room that the points `c`, `contacts`' last result
    with `cache`, are the first len(c) of (`_output_room`), or None where `c` is not such a result
    (no point, or points taken from one). The same object while that set of room stays, whatever
    the count: a caller that passes the count beside it binds one call for each set, where views
    cut to each count made a call of their own for every count (a robot's links near the floor,
    their candidate points changing in number every sub-step, had every contact stage's call typed)."""
    room = cache.outputs[1]     # (the set the last call wrote: `contacts` turns them after it)
    if room is None or not len(c) or c.depth.base is not room[2] or c.shape_a.base is not room[0]:
        return None
    ints, vec, depth, views = room
    whole = views.get(WHOLE)
    if whole is None:
        whole = views[WHOLE] = Contacts(ints[0], ints[1], ints[2], ints[3], vec[0], vec[1], depth, ints[4])
    return whole


WHOLE = -1      # the key of `whole_room`'s `Contacts` among a set of room's views by count


def narrow_scratch():
    """`_narrow`'s scratch, kept by its cache (`ContactCache.scratch`): (its scratch: a box's corners
    and box–box's work (36, 3), box–box's layout (5, 8) int, a pair's points, normals, depths and
    features (4, 3), (4, 3), (4,), (4,) int, and the empty manifold of a pair that keeps none (4, 3),
    (4, 3), (4,) int; its counts (5,) int; its reach (1,))."""
    return ((np.empty((36, 3)), np.empty((5, 8), dtype=np.int64), np.empty((4, 3)), np.empty((4, 3)), np.empty(4),
             np.empty(4, dtype=np.int64), np.zeros((4, 3)), np.zeros((4, 3)), np.zeros(4, dtype=np.int64)),
            np.zeros(5, np.int64), np.zeros(1))


def _output_room(cache):
    """The set of `contacts`' outputs this call writes (`ContactCache.outputs`' first): (ints, vec,
    depth as `_outputs` makes them, {count: the `Contacts` of their first count points}), made with
    room for twice the points the cache expects (`ContactCache.capacity`: the last call's count and a
    quarter) where it has less. Two sets written in turn, so that a call's points stay as they are
    through the next call (a sub-step's narrow phase, with the last one's points still held), and a
    step of a scene whose count of points stays allocates no output: fresh arrays of 64 points and
    more were most of what a robot's step on its floor allocated."""
    room = cache.outputs[0]
    if room is None or len(room[2]) < cache.capacity:
        room = cache.outputs[0] = _outputs(2 * cache.capacity) + ({},)
    return room


def _outputs(capacity, old=None, m=0):
    """The `contacts` output arrays with room for `capacity` points: ints (5, C) (shape_a, shape_b,
    body_a, body_b, feature_id), vec (2, C, 3) (point, normal), depth (C,); the first m points
    copied from `old`."""
    out = np.empty((5, capacity), dtype=np.int64), np.empty((2, capacity, 3)), np.empty(capacity)
    if old is not None:
        out[0][:, :m], out[1][:, :m], out[2][:m] = old[0][:, :m], old[1][:, :m], old[2][:m]
    return out
