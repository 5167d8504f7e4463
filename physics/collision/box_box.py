"""Box–box contact manifolds (`box_box`), the narrow phase's hot pair (`physics.collision.collision`):

- box–box: separating-axis test on the 15 axes (3 + 3 faces, 9 edge cross products; edge axes must
  beat faces by 5 %, ODE's fudge factor, and by EDGE_TOLERANCE), then ODE's dBoxBox: for a face
  axis the incident face of the other box is clipped (Sutherland–Hodgman) against the side planes
  of the reference face and the points below it kept, culled to 4 (deepest within
  CULL_DEPTH_TOLERANCE, then farthest, then largest triangle and quad);
  for an edge axis the closest points of the two edges. Feature ids name the reference face, the
  incident face and the two clipping lines a point lies on (Box2D's ClipVertex idea), so they stay
  the same while the configuration does.

Conventions as in `physics.collision.collision`: the normal points from a to b, depth > 0 on overlap, at
most 4 points a pair; shape frames and params as in `physics.model.shapes`.
"""
import numpy as np

from physics.core.compiled import kernel
from physics.math.rotation_kernels import cross
from physics.collision.closest_points import segment_parameters

# ----------------------------------------------------------------------------- box–box
# The box–box path is the pile's hot loop: scalar arithmetic indexing the rotation matrices and
# two scratch arrays allocated once per call of the narrow phase (`physics.collision.collision`) (array views and small arrays per pair cost
# reference counting and allocation: measured 5x slower). Rows of fs (36, 3) float, it (5, 8) int:
_RAB, _PA, _PB, _NA, _QA, _QB, _D, _M3, POLY, _POLY2, DEPTH = 0, 3, 4, 5, 6, 7, 8, 9, 12, 20, 28
_TAGS, _TAGS2, _GENS, _GENS2, CHOSEN = 0, 1, 2, 3, 4
_POLY_ROWS = _POLY2 - POLY  # room of each clipping polygon: its rows of fs, the columns of it


# m: a vertex this close outside a side plane is kept as it is (`_clip`). Equal boxes stacked
# exactly have the incident face's corners on the reference face's side planes; decided by the
# sign of round-off, a corner was kept (its vertex tag) one step and cut (an edge-plane tag, the
# same point) the next, so its feature id changed, the warm start lost its impulse, and a stack
# of ten collapsed at 10 iterations.
CLIP_TOLERANCE = 1e-7


@kernel(refcounts=False)
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


@kernel(refcounts=False)
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


@kernel(refcounts=False)
def cull4(fs, it, p, count):
    """Up to 4 of the `count` points in rows p.. of fs (depths in column 0 of rows DEPTH..) into
    it[CHOSEN]: the deepest (a corner about as deep, CULL_DEPTH_TOLERANCE), the farthest from it,
    then the points that maximize the triangle and then the quadrilateral's area (Bullet's
    sortCachedPoints idea). Returns how many."""
    if count <= 4:
        for i in range(count):
            it[CHOSEN, i] = i
        return count
    deepest = fs[DEPTH, 0]
    cx = cy = cz = 0.0
    for i in range(count):
        deepest = max(deepest, fs[DEPTH + i, 0])
        cx, cy, cz = cx + fs[p + i, 0], cy + fs[p + i, 1], cz + fs[p + i, 2]
    cx, cy, cz = cx / count, cy / count, cz / count
    # of the points about as deep as the deepest, the one about as far out as the farthest from
    # the polygon's centre, lowest index first: a corner, and the same one while the pose rocks
    far = 0.0
    for i in range(count):
        if fs[DEPTH + i, 0] >= deepest - CULL_DEPTH_TOLERANCE:
            far = max(far, (fs[p + i, 0] - cx) ** 2 + (fs[p + i, 1] - cy) ** 2 + (fs[p + i, 2] - cz) ** 2)
    far = max(np.sqrt(far) - CULL_DEPTH_TOLERANCE, 0.0)
    first = 0
    for i in range(count - 1, -1, -1):
        if fs[DEPTH + i, 0] >= deepest - CULL_DEPTH_TOLERANCE and \
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
    it[CHOSEN, 0], it[CHOSEN, 1], it[CHOSEN, 2], it[CHOSEN, 3] = first, second, third, fourth
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
    s, t = segment_parameters(bb, cc, ff, params[a, i], params[b, j])
    for c in range(3):
        out_p[row, c] = 0.5 * (fs[_QA, c] + s * rotation[a, c, i] + fs[_QB, c] + t * rotation[b, c, j])
    out_n[row, 0], out_n[row, 1], out_n[row, 2] = nx, ny, nz
    out_d[row] = depth
    out_f[row] = 1000 + code
    return 1


@kernel(inline=True)
def _incident_face(fs, it, params, inc, axis_ref, s_ref):
    """The face of the incident box inc most anti-parallel to the reference normal s_ref e_axis_ref,
    as a quadrilateral in the reference box's frame (rows POLY..; m3 = R_ref^T R_inc in rows _M3..,
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
            fs[POLY + v, r] = (fs[_D, r] + h0 * fs[_M3 + r, axis_inc] + c1 * fs[_M3 + r, e1] + c2 * fs[_M3 + r, e2])
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
    src, dst, src_t, dst_t, src_g, dst_g = POLY, _POLY2, _TAGS, _TAGS2, _GENS, _GENS2
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
            fs[DEPTH + kept, 0] = dv
            kept += 1
    m = cull4(fs, it, src, kept)
    base = (code * 6 + 2 * axis_inc + (1 if sign_inc > 0 else 0)) * 256
    f = 0.5 * (1.0 if code < 3 else -1.0)  # n_ref = ±n in the world
    for i in range(m):
        v = it[CHOSEN, i]
        dv = fs[DEPTH + v, 0]
        x, y, z = fs[src + v, 0], fs[src + v, 1], fs[src + v, 2]
        # the incident point (world), moved half the depth towards ref's surface
        out_p[row + i, 0] = centre[ref, 0] + rotation[ref, 0, 0] * x + rotation[ref, 0, 1] * y + rotation[ref, 0, 2] * z + f * dv * nx
        out_p[row + i, 1] = centre[ref, 1] + rotation[ref, 1, 0] * x + rotation[ref, 1, 1] * y + rotation[ref, 1, 2] * z + f * dv * ny
        out_p[row + i, 2] = centre[ref, 2] + rotation[ref, 2, 0] * x + rotation[ref, 2, 1] * y + rotation[ref, 2, 2] * z + f * dv * nz
        out_n[row + i, 0], out_n[row + i, 1], out_n[row + i, 2] = nx, ny, nz
        out_d[row + i] = dv
        out_f[row + i] = base + it[src_t, v]
    return m


@kernel(refcounts=False)
def box_box(centre, rotation, params, a, b, margin, fs, it, out_p, out_n, out_d, out_f, row):
    """ODE's dBoxBox: the separating-axis test on 15 axes (`_box_axes`), then the contact of the
    axis of least penetration: for an edge axis the closest points of the two edges
    (`_box_edge_contact`), for a face axis the incident face clipped to the reference face
    (`_box_face_contact`). Contacts written to rows row.. of the out_* arrays, the count returned.

    Everything runs on rab = Ra^T Rb and the centre offset p = cb - ca in both frames (pa = Ra^T p,
    pb = Rb^T p; rows _RAB.., _PA, _PB of fs, which the contact stages read); a face contact is
    clipped in the reference box's frame. Indexing only (no array views, no allocation): this is
    the pile's hot loop, compiled without reference counts (physics.core.compiled, `refcounts=False`,
    as are its helpers `_clip`, `_cross_norm2`, `cull4`; with them a call, or an early return out
    of an inlined stage, counted references on its array arguments, and the pile's narrow phase took
    a fifth longer). `_box_axes` takes tuples, no arrays, which also keeps them in registers."""
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
