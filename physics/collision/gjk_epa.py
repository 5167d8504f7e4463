"""GJK and EPA on support functions: the normal, depth and witness points of any two convex
shapes (`gjk_epa`), for the pairs no closed form handles (`physics.collision.collision`).

GJK (boolean, on the Minkowski difference A − B of the two support functions) decides overlap;
EPA (the expanding polytope, van den Bergen 2001) then finds the normal, the depth and a witness
point on each shape. The narrow phase calls them for cylinder–box, cylinder–capsule,
cylinder–cylinder and a hull against anything but a plane (and for box–capsule's normal), and
merges the one point a step they give into a persistent manifold (`physics.collision.manifold`). A hull's
support is its vertex furthest along the direction (`_hull_support`).

Conventions as in `physics.collision.collision`: the normal points from a to b; shape frames and params as in
`physics.model.shapes`.
"""
import numpy as np

from physics.core.compiled import kernel
from physics.math.rotation_kernels import cross, sub
from physics.model.shapes import BOX, CAPSULE, HULL, SPHERE
from physics.collision.closest_points import EPS, dot, rot, rot_t, unit

_GJK_ITERATIONS = 64
_EPA_ITERATIONS = 64
_EPA_FACES = 2048  # dead faces are not reused: room for the faces made over all expansions
_EPA_TOLERANCE = 1e-9  # m: EPA stops once a new support point moves the closest face by less

# ----------------------------------------------------------------------------- GJK + EPA
@kernel(inline=True)
def _hull_support(prm, lx, ly, lz):
    """The index of the hull vertex furthest along the local direction l (the first of equals):
    h(l) = max_i v_i . l over the row's vertices (`physics.model.shapes.hull_row`), a scan of them all."""
    best, k = -np.inf, 0
    for i in range(int(prm[1])):
        x = prm[4 + 3 * i] * lx + prm[5 + 3 * i] * ly + prm[6 + 3 * i] * lz
        if x > best:
            best, k = x, i
    return k


@kernel
def support(kind, c, R, prm, d):
    """The point of the shape furthest along world direction d."""
    dl = rot_t(R, d)
    if kind == SPHERE:
        return c + prm[0] * unit(d, np.array([0.0, 1.0, 0.0]))
    if kind == BOX:
        s = np.array([prm[0] if dl[0] >= 0 else -prm[0], prm[1] if dl[1] >= 0 else -prm[1],
                      prm[2] if dl[2] >= 0 else -prm[2]])
        return c + rot(R, s)
    if kind == CAPSULE:
        return c + (prm[1] if dl[1] >= 0 else -prm[1]) * R[:, 1] + prm[0] * unit(d, np.array([0.0, 1.0, 0.0]))
    if kind == HULL:
        k = _hull_support(prm, dl[0], dl[1], dl[2])
        return c + rot(R, np.array([prm[4 + 3 * k], prm[5 + 3 * k], prm[6 + 3 * k]]))
    # cylinder
    rho = np.sqrt(dl[0] ** 2 + dl[2] ** 2)
    local = np.array([0.0, prm[1] if dl[1] >= 0 else -prm[1], 0.0])
    if rho > EPS:
        local[0] = prm[0] * dl[0] / rho
        local[2] = prm[0] * dl[2] / rho
    return c + rot(R, local)


@kernel
def support_into(kind, c, R, prm, d, sign, out, row):
    """`support(kind, c, R, prm, sign * d)` written to out[row], without temporary arrays (GJK/EPA
    call it ~100 times a pair; each small array costs an allocation). Same arithmetic, same bits."""
    dx, dy, dz = sign * d[0], sign * d[1], sign * d[2]
    lx = R[0, 0] * dx + R[1, 0] * dy + R[2, 0] * dz
    ly = R[0, 1] * dx + R[1, 1] * dy + R[2, 1] * dz
    lz = R[0, 2] * dx + R[1, 2] * dy + R[2, 2] * dz
    if kind == SPHERE or kind == CAPSULE:
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        ux, uy, uz = (dx / length, dy / length, dz / length) if length >= EPS else (0.0, 1.0, 0.0)
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
        if rho > EPS:
            sx = prm[0] * lx / rho
            sz = prm[0] * lz / rho
    for i in range(3):
        out[row, i] = c[i] + (R[i, 0] * sx + R[i, 1] * sy + R[i, 2] * sz)


@kernel
def epa_workspace():
    """Scratch arrays of `gjk_epa`: support points on a, on b, their differences (128, 3); EPA faces
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
    """`unit` on 3-tuples."""
    n = np.sqrt(dot(t, t))
    if n < EPS:
        return fallback
    return (t[0] / n, t[1] / n, t[2] / n)


@kernel(inline=True)
def _perpendicular3(u):
    """`perpendicular` on 3-tuples."""
    if abs(u[0]) < 0.57735:
        return _unit3(cross(u, (1.0, 0.0, 0.0)), u)
    return _unit3(cross(u, (0.0, 1.0, 0.0)), u)


@kernel
def gjk_epa(ka, ca, Ra, pa, kb, cb, Rb, pb, work=None):
    """(hit, normal a -> b, depth, witness on a, witness on b) by GJK on A - B (`_gjk`) then EPA
    (`_epa`) on the tetrahedron GJK ends with; the witness points from the closest face.
    `work`: an `epa_workspace()` to use (default: a fresh one).
    EPA never writes past its buffers: it stops expanding before the vertex or face rows could run
    out, or when a horizon outgrows the edge rows, and answers with the closest face found so far
    (a depth no deeper than the true one). A polytope with no face left (flat or non-finite
    shapes) gives no contact (hit False)."""
    if work is None:
        ws = epa_workspace()
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
    if dot(d, d) < EPS:
        d = (1.0, 0.0, 0.0)
    # search direction towards the origin
    direction = (-d[0], -d[1], -d[2])
    support_into(ka, ca, Ra, pa, direction, 1.0, sa, 0)
    support_into(kb, cb, Rb, pb, direction, -1.0, sb, 0)
    _difference(sa, sb, v, 0)
    n = 1
    direction = (-v[0, 0], -v[0, 1], -v[0, 2])
    for _ in range(_GJK_ITERATIONS):
        if dot(direction, direction) < 1e-20:
            # the origin lies in the simplex's span (e.g. on the line through two sphere centres):
            # step out of the span; if nothing lies beyond, the shapes only touch
            if n == 1:
                direction = (1.0, 0.0, 0.0)
            else:
                if n == 3:
                    normal = cross(sub(_row(v, 1), _row(v, 0)), sub(_row(v, 2), _row(v, 0)))
                    if dot(normal, normal) < 1e-24:
                        _move_vertex(sa, sb, v, 2, 1)
                        n = 2
                if n == 2:
                    direction = _perpendicular3(_unit3(sub(_row(v, 1), _row(v, 0)), (1.0, 0.0, 0.0)))
                else:
                    direction = cross(sub(_row(v, 1), _row(v, 0)), sub(_row(v, 2), _row(v, 0)))
        length = np.sqrt(dot(direction, direction))
        if length == 0.0:  # coordinates so large that normalizing overflowed (|t| = inf, t / |t| = 0): no contact
            return False, (1.0, 0.0, 0.0)
        direction = (direction[0] / length, direction[1] / length, direction[2] / length)
        support_into(ka, ca, Ra, pa, direction, 1.0, sa, n)
        support_into(kb, cb, Rb, pb, direction, -1.0, sb, n)
        _difference(sa, sb, v, n)
        if dot(_row(v, n), direction) < 0:
            return False, direction  # separated along `direction`
        n, direction, hit = _nearest_simplex(sa, sb, v, n + 1, direction)
        if hit:
            return True, direction
    return False, direction


@kernel(inline=True)
def _outside(normal, ao):
    """The origin (at `ao` from the face's vertex a) lies on the side of `normal` by more than
    round-off: its angle to the face's plane exceeds 1e-10 rad (a few ulps of the products)."""
    return dot(normal, ao) > 1e-10 * np.sqrt(dot(normal, normal) * dot(ao, ao))


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
        if dot(direction, direction) < 1e-30:
            direction = _perpendicular3(_unit3(ab, (1.0, 0.0, 0.0)))
            if dot(direction, ao) < 0:
                direction = (-direction[0], -direction[1], -direction[2])
    elif n == 3:
        b, c = _row(v, 1), _row(v, 0)
        ab, ac = sub(b, a), sub(c, a)
        abc = cross(ab, ac)
        if dot(cross(abc, ac), ao) > 0:  # outside edge ac: (c, a)
            _move_vertex(sa, sb, v, 2, 1)
            n = 2
            direction = cross(cross(ac, ao), ac)
        elif dot(cross(ab, abc), ao) > 0:  # outside edge ab: (b, a)
            _move_vertex(sa, sb, v, 1, 0)
            _move_vertex(sa, sb, v, 2, 1)
            n = 2
            direction = cross(cross(ab, ao), ab)
        elif dot(abc, ao) > 0:
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
        support_into(ka, ca, Ra, pa, face_n, 1.0, sa, nv)
        support_into(kb, cb, Rb, pb, face_n, -1.0, sb, nv)
        v[nv] = sa[nv] - sb[nv]
        # stop when converged, or before an expansion could outgrow the buffers: the vertex rows, or
        # the face rows (an expansion adds one face per horizon edge, at most len(edges))
        if dot(v[nv], face_n) - dists[best] < _EPA_TOLERANCE or nv + 1 >= v.shape[0] \
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
    only (no temporaries), the arithmetic of `cross`, `dot`."""
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
    d00, d01, d11 = dot(v0, v0), dot(v0, v1), dot(v1, v1)
    d20, d21 = dot(v2, v0), dot(v2, v1)
    denom = d00 * d11 - d01 * d01
    if abs(denom) < 1e-30:
        return np.array([1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0])
    lv = (d11 * d20 - d01 * d21) / denom
    lw = (d00 * d21 - d01 * d20) / denom
    return np.array([1.0 - lv - lw, lv, lw])
