"""The constraint solver: sequential impulses ≡ projected Gauss–Seidel with SOR on Γλ = η.

Seed 002 §3 and §5: rows J v = B (physics.constraints), impulses Jᵀλ, Γ = J M⁻¹ Jᵀ,
η = B − J (v₁ + M⁻¹ g_e), and the bounded MLCP r = Γλ − η, λ⁻ ≤ λ ≤ λ⁺, r_i = 0 where
λ⁻ < λ_i < λ⁺. Here v is the bodies' velocity after the free step (v₁ + M⁻¹ g_e, with gravity and
applied forces already integrated), so η_i = target_i − J_i v.

Projected Gauss–Seidel, one row at a time, is Catto's sequential impulses ("Iterative Dynamics with
Temporal Coherence", 2005; "Fast and Simple Physics using Sequential Impulses", GDC 2006):

    r_i  = J_i v − target_i + s_i λ_i                 (the row's residual; s_i = CFM / h, ODE)
    λ_i ← clamp(λ_i − ω r_i / (J_i M⁻¹ J_iᵀ + s_i), λ⁻_i, λ⁺_i)    (accumulated-impulse clamping)
    v   ← v + M⁻¹ J_iᵀ Δλ_i                           (keeps v = v_free + M⁻¹ Jᵀ λ at every moment)

with ω the SOR factor (seed 002 §4–5: ω = 1 is Gauss–Seidel, 1 < ω < 2 over-relaxes) and a contact's two
friction rows bounded together by the disc |λ_t| ≤ μ λ_normal, λ_normal read from its normal row as
it is now (a Coulomb cone, `_pgs`). Clamping the *accumulated* λ
rather than each increment lets an iteration take back impulse an earlier one applied too much of.

The step's stages (Box2D v3 `b2SolverStage`, src/solver.c), over arrays:
  prepare        rows at the start-of-step poses: contacts from the narrow phase, joint rows,
                 effective masses (`prepare`)
  integrate velocities, integrate positions — the Simulation's integrator (free motion)
  warm start     apply last step's λ (contact cache / joint rows) (`warm_start`)
  solve          PGS with the Baumgarte / speculative targets (`solve`)
  relax          PGS again with the bias removed (Box2D v3's soft step / relax, the idea of
                 Catto's and Bullet's split impulses): the bias velocity moves the positions but is
                 taken out of the velocities, so position correction adds no kinetic energy
  restitution    normal rows that were approaching faster than the threshold: J v = the rebound
                 velocity (−e × the velocity at the moment of contact, physics.constraints.restitution_targets)
  store impulses λ back to the cache and joints for the next warm start

The residual ‖r‖ (projected: zero for a row held at a bound and pushing against it) of every solve
iteration is kept in `Solution.residual` for display.
"""
import math
from dataclasses import dataclass, fields

import numpy as np
from numba import njit

from physics import profile
from physics.broadphase import candidate_pairs, collision_filter
from physics.collision import ContactCache, Contacts, _lookup, contacts
from physics.constraints import BOUNCE_THRESHOLD, MANIFOLD, ROWS_PER_JOINT, SLOP, Joints, Rows, _contact_rows_kernel, \
    beta_from_erp, concatenate, restitution_targets
from physics.rotation import matrix_from_rotvec
from physics.shapes import ShapeSet, aabbs
from physics.sleeping import FOREIGN, SUPPORTED, ShapeRest, awake_pairs, touch_flags, wake_touched  # noqa: F401 (public here)

POST_STABILIZATION = 3  # projection rounds for the joints after the step (0 = Baumgarte only)
SPECULATIVE = 0.002   # m: contacts kept this far apart beyond what can close in a step (4 slops, Box2D v3)
# The contact budget: a step whose broad phase finds more candidate pairs than this is refused
# (ContactBudgetError) rather than spending minutes in the narrow phase and the solver: 2,000
# coincident boxes make 2 M pairs. The 1,000-box pile, the largest shipped heap, needs about 6,000.
PAIR_BUDGET = 200_000


class ContactBudgetError(ValueError):
    """More candidate pairs in one step than PAIR_BUDGET: `pairs` says how many."""

    def __init__(self, pairs):
        self.pairs = pairs
        super().__init__(f"{pairs:,} shape pairs overlap in one step (the contact budget is {PAIR_BUDGET:,}): "
                         "shapes placed inside one another? Spread them out or give them collision groups")


@njit(cache=True, inline="always")
def _row_jv(J, va, vb):
    """J v for one row J (2, 6) and the two bodies' velocities (6,), summed as a tree: a shorter
    dependency chain than a running sum (rows run one after another)."""
    Ja, Jb = J[0], J[1]
    return (((Ja[0] * va[0] + Ja[1] * va[1]) + (Ja[2] * va[2] + Ja[3] * va[3]))
            + ((Ja[4] * va[4] + Ja[5] * va[5]) + (Jb[0] * vb[0] + Jb[1] * vb[1]))
            + ((Jb[2] * vb[2] + Jb[3] * vb[3]) + (Jb[4] * vb[4] + Jb[5] * vb[5])))


@njit(cache=True, inline="always")
def _row_apply(minv_jt, delta, va, vb):
    """v += M⁻¹Jᵀ Δλ for one row, minv_jt (2, 6)."""
    for c in range(6):
        va[c] += minv_jt[0, c] * delta
        vb[c] += minv_jt[1, c] * delta


@njit(cache=True, inline="always")
def _scalar_row(j, jacobian, minv_jt, inv_k, target, softness, lower, upper, impulse, va, vb, sor):
    """One row: λ ← clamp(λ − ω r / K, λ⁻, λ⁺), v += M⁻¹Jᵀ Δλ; returns its projected r² (zero
    when held at a bound and pushing against it)."""
    lam = impulse[j]
    r = _row_jv(jacobian[j], va, vb) - target[j] + softness[j] * lam
    lo, hi = lower[j], upper[j]
    new = min(max(lam - sor * r * inv_k[j], lo), hi)
    impulse[j] = new
    _row_apply(minv_jt[j], new - lam, va, vb)
    return 0.0 if (lam <= lo and r > 0.0) or (lam >= hi and r < 0.0) else r * r


@njit(cache=True, inline="always")
def _cholesky_factor(A, n):
    """The Cholesky factor L (A = L Lᵀ) of the leading n×n block of A, in place in its lower
    triangle; returns False if A is not positive definite."""
    for j in range(n):
        d = A[j, j]
        for c in range(j):
            d -= A[j, c] * A[j, c]
        if d <= 0.0:
            return False
        d = np.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for c in range(j):
                s -= A[i, c] * A[j, c]
            A[i, j] = s / d
    return True


@njit(cache=True, inline="always")
def _cholesky_substitute(L, x, n):
    """x ← (L Lᵀ)⁻¹ x in place, L from `_cholesky_factor`."""
    for i in range(n):                  # L y = x
        s = x[i]
        for c in range(i):
            s -= L[i, c] * x[c]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):      # Lᵀ x = y
        s = x[i]
        for c in range(i + 1, n):
            s -= L[c, i] * x[c]
        x[i] = s / L[i, i]


@njit(cache=True, inline="always")
def _whiskered(A, n):
    """A whisker on the diagonal: four corners on a face are one more row than the three velocities
    (v_n, two tilts) they constrain, K is singular there, and this picks the least-norm Δλ
    (the pseudo-inverse, to 1e-10 relative): symmetric corners get symmetric impulses."""
    scale = 0.0
    for a in range(n):
        scale = max(scale, A[a, a])
    for a in range(n):
        A[a, a] += 1e-10 * scale


@njit(cache=True, inline="always")
def _try_active_set(mask, k, K, factor, sets, m, r, lam, delta, x, index):
    """The manifold LCP's candidate with the normal rows in `mask` active (r_p = 0) and the others
    released (λ_q = 0): K_SS Δλ_S = −r_S + K_S,S̄ λ_S̄, Δλ_S̄ = −λ_S̄. Writes delta (k,) and returns
    the set it points to — `mask` itself when it is the solution (λ + Δλ ≥ 0 on S, r + K Δλ ≥ 0 off
    S, within round-off), else mask without the rows pulling and with the rows penetrating (a
    block principal pivot, Júdice & Pires 1994) — or −1 if K_SS is not positive definite.
    factor (4, 4) holds the Cholesky factor of the set sets[m] (−1: none); a manifold at rest
    solves the same set every sweep and every step, so it is factored once, not each time."""
    n = 0
    for p in range(k):
        if mask & (1 << p):
            index[n] = p
            n += 1
        else:
            delta[p] = -lam[p]
    for a in range(n):
        p = index[a]
        s = -r[p]
        for q in range(k):
            if not mask & (1 << q):
                s += K[p, q] * lam[q]
        x[a] = s
    if sets[m] != mask:
        for a in range(n):
            for b in range(n):
                factor[a, b] = K[index[a], index[b]]
        _whiskered(factor, n)
        sets[m] = mask if _cholesky_factor(factor, n) else -1
        if sets[m] < 0:
            return -1
    if n:
        _cholesky_substitute(factor, x, n)
    pivot = mask
    for a in range(n):
        p = index[a]
        delta[p] = x[a]
        if lam[p] + x[a] < -1e-12:
            pivot &= ~(1 << p)
    for q in range(k):
        if not mask & (1 << q):
            s = r[q]
            for p in range(k):
                s += K[q, p] * delta[p]
            if s < -1e-12:
                pivot |= 1 << q
    return pivot


@njit(cache=True, inline="always")
def _manifold_normals(i, k, K, factor, sets, m, jacobian, minv_jt, target, softness, impulse, va, vb, sor, r, lam, delta, x,
                      index):
    """The k ≤ 4 normal rows of one manifold (rows i, i + 3, …) as one block: all their residuals
    r = J v − target + s λ from the same velocities, then the exact solution of the small LCP

        λ + Δλ ≥ 0,   w = r + K Δλ ≥ 0,   (λ + Δλ) · w = 0,   K_pq = J_p M⁻¹ J_qᵀ + s δ_pq

    over its active sets (Box2D v2.x's 2-point block solver, b2ContactSolver::SolveVelocityConstraints,
    enumerates them; generalised to 4 points): from the previous set (points pushing now or pushed
    last time; at rest it is the answer) by block principal pivoting, and by enumeration of all
    sets, largest first, in the rare case that cycles. Applied once, scaled by the SOR factor ω. Solving the points one after another instead
    let each point's impulse tilt the box before the next was seen: an aligned stack of 10 drifted
    sideways 13 mm in 10 s. Returns the block's projected residual² (as `_scalar_row`'s), or −1 if
    no set passed the round-off checks (nothing applied; the caller solves the rows one by one)."""
    total = 0.0
    guess = 0
    for p in range(k):
        j = i + 3 * p
        lam[p] = impulse[j]
        r[p] = _row_jv(jacobian[j], va, vb) - target[j] + softness[j] * lam[p]
        if not (lam[p] <= 0.0 and r[p] > 0.0):
            total += r[p] * r[p]
        if lam[p] > 0.0 or r[p] < 0.0:
            guess |= 1 << p
    # Block principal pivoting from the guess (at most 2k pivots; they settle in one or two); full
    # enumeration only if that cycles.
    found, mask = False, guess
    for _ in range(2 * k):
        pivot = _try_active_set(mask, k, K, factor, sets, m, r, lam, delta, x, index)
        if pivot == mask:
            found = True
            break
        if pivot < 0:
            break
        mask = pivot
    if not found:
        full = (1 << k) - 1
        for size in range(k, -1, -1):
            for mask in range(full, -1, -1):
                bits = 0
                for p in range(k):
                    bits += (mask >> p) & 1
                if bits == size and _try_active_set(mask, k, K, factor, sets, m, r, lam, delta, x, index) == mask:
                    found = True
                    break
            if found:
                break
    if not found:
        return -1.0
    for p in range(k):
        j = i + 3 * p
        new = max(lam[p] + sor * delta[p], 0.0)
        impulse[j] = new
        _row_apply(minv_jt[j], new - lam[p], va, vb)
    return total


@njit(cache=True)
def _pgs(order, slot, jacobian, minv_jt, inv_k, inv_block, block, manifold, manifold_k, manifold_l, manifold_set, target,
         softness, lower,
         upper, mu, impulse, velocity, iterations, sor, friction, residual):
    """`iterations` PGS sweeps over the rows `order` (in that order), in place on impulse (R,) and
    velocity (B + 1, 6), whose last row is the static dummy body (zero velocity; `slot` maps side −1
    to it and that side's M⁻¹Jᵀ is zero, so no row branches on static sides); residual[k] = ‖projected r‖
    seen during sweep k. `Rows.block` says how a row is solved:
    1  on its own: λ ← clamp(λ − ω r / K, λ⁻, λ⁺);
    3  with the next two rows as one block, Δλ = −ω K⁻¹ r with its 3×3 inverse effective mass
       (block Gauss–Seidel; a joint's point or orientation equalities);
    MANIFOLD + k − 1 (`physics.constraints.MANIFOLD`, k = 1…4): the first normal row of a manifold
       of k contact points of two bodies (rows [t1, t2, n] per point): each point's two friction
       rows, bounded by the normal impulse as it stands, then the k normal rows as one block,
       exactly (`_manifold_normals`, manifold_k[manifold[i]] its k×k K), on the two bodies'
       velocities loaded once. Box2D v2.4's order (b2ContactSolver::SolveVelocityConstraints:
       friction first, "non-penetration is more important"): the exact block then removes the tilt
       the points' friction, applied one after another, left. Normal rows one by one, then
       friction (Box2D v3's b2SolveContact) drifted an aligned stack of ten 13 mm sideways in
       10 s, and a box sliding at 8 m/s turned by up to 1e-6 rad (both round-off now);
    0  solved inside a block: skipped.
    Friction is a cone, not a pyramid: t1 and t2 take their steps from the same velocities, then
    the accumulated tangent impulse *vector* (λ₁, λ₂) is projected onto the disc |λ_t| ≤ μ λ_n and
    applied (Jolt's ContactConstraintManager::SolveVelocityConstraint); clamping each row to
    ±μ λ_n alone let a body sliding diagonally take √2 μ λ_n. (Solving t1 first and t2 on its
    result would see t1's unclamped overshoot and push sideways.) Its projected residual leaves out the outward part of r at
    the rim (the cone's normal cone), as a scalar row at a bound does.
    With `friction` False every row of `order` is solved on its own (the restitution stage's
    normal rows)."""
    r3 = np.empty(3)
    va, vb = np.empty(6), np.empty(6)       # the two bodies' velocities, loaded once per block
    r4, lam4, delta4, x4 = np.empty(4), np.empty(4), np.empty(4), np.empty(4)     # `_manifold_normals`' work
    index4 = np.empty(4, np.int64)
    for it in range(iterations):
        total = 0.0
        for k in range(order.size):
            i = order[k]
            kind = block[i]
            if kind == 0 and friction:
                continue
            a, b = slot[i, 0], slot[i, 1]
            for c in range(6):
                va[c] = velocity[a, c]
                vb[c] = velocity[b, c]
            if kind == 3 and friction:
                for q in range(3):
                    r3[q] = _row_jv(jacobian[i + q], va, vb) - target[i + q] + softness[i + q] * impulse[i + q]
                    total += r3[q] * r3[q]
                for q in range(3):
                    delta = -sor * (inv_block[i, q, 0] * r3[0] + inv_block[i, q, 1] * r3[1] + inv_block[i, q, 2] * r3[2])
                    impulse[i + q] += delta
                    _row_apply(minv_jt[i + q], delta, va, vb)
                points = 0
            elif kind >= MANIFOLD and friction:
                points = kind - MANIFOLD + 1
            else:
                points = 0
                total += _scalar_row(i, jacobian, minv_jt, inv_k, target, softness, lower, upper, impulse, va, vb, sor)
            for p in range(points):         # friction of each point first (bounded by the last normal
                # impulse), both rows from one v, then the disc; the exact normal block after it
                # (Box2D v2.4's order) takes out the tilt friction's sequence left
                n, t1, t2 = i + 3 * p, i + 3 * p - 2, i + 3 * p - 1
                lam1, lam2 = impulse[t1], impulse[t2]
                r1 = _row_jv(jacobian[t1], va, vb) - target[t1] + softness[t1] * lam1
                r2 = _row_jv(jacobian[t2], va, vb) - target[t2] + softness[t2] * lam2
                new1, new2 = lam1 - sor * r1 * inv_k[t1], lam2 - sor * r2 * inv_k[t2]
                limit = mu[t1] * impulse[n]
                size = np.sqrt(new1 * new1 + new2 * new2)
                if size > limit:
                    # at the rim only r's part along the rim (⊥ λ_t) counts, unless r points inward
                    outward = -(r1 * new1 + r2 * new2) / size
                    if outward > 0.0:
                        r1 += outward * new1 / size
                        r2 += outward * new2 / size
                    new1, new2 = new1 * (limit / size), new2 * (limit / size)
                _row_apply(minv_jt[t1], new1 - lam1, va, vb)
                _row_apply(minv_jt[t2], new2 - lam2, va, vb)
                impulse[t1], impulse[t2] = new1, new2
                total += r1 * r1 + r2 * r2
            one_by_one = points == 1
            if points > 1:                  # normal rows of the manifold, as one block
                m = manifold[i]
                block_r2 = _manifold_normals(i, points, manifold_k[m], manifold_l[m], manifold_set, m, jacobian, minv_jt,
                                             target, softness, impulse, va, vb, sor, r4, lam4, delta4, x4, index4)
                one_by_one = block_r2 < 0.0
                total += max(block_r2, 0.0)
            if one_by_one:
                for p in range(points):
                    total += _scalar_row(i + 3 * p, jacobian, minv_jt, inv_k, target, softness, lower, upper, impulse,
                                         va, vb, sor)
            for c in range(6):
                velocity[a, c] = va[c]
                velocity[b, c] = vb[c]
        residual[it] = np.sqrt(total)


@dataclass
class Prepared:
    """Rows plus their per-row constants: M⁻¹Jᵀ (R, 2, 6) and 1 / (J M⁻¹ Jᵀ + s) (R,)."""

    rows: Rows
    slot: np.ndarray            # (R, 2) rows.body with −1 (static) replaced by B, the dummy static body
    minv_jt: np.ndarray
    inv_k: np.ndarray
    inv_block: np.ndarray       # (R, 3, 3) at rows starting a block of 3: (J M⁻¹ Jᵀ + s)⁻¹ of the block
    manifold: np.ndarray        # (R,) int64: at a manifold's first normal row, its index into manifold_k
    manifold_k: np.ndarray      # (manifolds, 4, 4): K_pq = J_p M⁻¹ J_qᵀ + s δ_pq of its k normal rows
    manifold_l: np.ndarray      # (manifolds, 4, 4): Cholesky factor (`_cholesky_factor`) of K's rows in
    manifold_set: np.ndarray    # (manifolds,) int64: this active set (bit p = row p; −1 = none), kept
                                # from sweep to sweep (`_try_active_set`); at first every row


@njit(cache=True)
def _effective_masses(body, jacobian, inverse_mass, inverse_inertia, softness, minv_jt, inv_k):
    """minv_jt[i, s] = M_s⁻¹ J_sᵀ (m⁻¹ J_lin, I⁻¹ J_ang) and inv_k[i] = 1 / (J M⁻¹ Jᵀ + s_i), per row."""
    for i in range(body.shape[0]):
        k = softness[i]
        for side in range(2):
            b = body[i, side]
            if b < 0:
                for c in range(6):
                    minv_jt[i, side, c] = 0.0
                continue
            for c in range(3):
                minv_jt[i, side, c] = inverse_mass[b] * jacobian[i, side, c]
                minv_jt[i, side, 3 + c] = (inverse_inertia[b, c, 0] * jacobian[i, side, 3]
                                           + inverse_inertia[b, c, 1] * jacobian[i, side, 4]
                                           + inverse_inertia[b, c, 2] * jacobian[i, side, 5])
            for c in range(6):
                k += jacobian[i, side, c] * minv_jt[i, side, c]
        inv_k[i] = 1.0 / k if k > 1e-300 else 0.0


@njit(cache=True)
def _manifold_masses(block, jacobian, minv_jt, softness, manifold, manifold_k, manifold_l, manifold_set):
    """manifold_k[manifold[i]] = K of the normal rows i, i + 3, … of the manifold starting at row i
    (`_manifold_normals`), and manifold_l[manifold[i]] the Cholesky factor of K with all k rows
    active (whiskered, `_whiskered`; manifold_set says so), the set of a manifold at rest; static
    sides have M⁻¹Jᵀ = 0, so they drop out without a branch."""
    for i in range(block.size):
        k = block[i] - MANIFOLD + 1
        if k < 2:
            continue
        K = manifold_k[manifold[i]]
        for p in range(k):
            for q in range(p, k):
                s = softness[i + 3 * p] if p == q else 0.0
                for side in range(2):
                    for c in range(6):
                        s += jacobian[i + 3 * p, side, c] * minv_jt[i + 3 * q, side, c]
                K[p, q] = K[q, p] = s
        L = manifold_l[manifold[i]]
        L[:k, :k] = K[:k, :k]
        _whiskered(L, k)
        manifold_set[manifold[i]] = (1 << k) - 1 if _cholesky_factor(L, k) else -1


@njit(cache=True)
def _block_inverses(body, jacobian, minv_jt, softness, block, inv_block):
    """inv_block[i] = K⁻¹ for every row i starting a block of 3: K_pq = J_(i+p) M⁻¹ J_(i+q)ᵀ + s δ_pq
    (symmetric positive definite for a joint on a dynamic body; zero if singular)."""
    K = np.empty((3, 3))
    for i in range(body.shape[0]):
        if block[i] != 3:
            continue
        for p in range(3):
            for q in range(3):
                k = softness[i + p] if p == q else 0.0
                for side in range(2):
                    if body[i, side] >= 0:
                        for c in range(6):
                            k += jacobian[i + p, side, c] * minv_jt[i + q, side, c]
                K[p, q] = k
        # inverse by cofactors (adjugate / determinant)
        c00 = K[1, 1] * K[2, 2] - K[1, 2] * K[2, 1]
        c01 = K[1, 2] * K[2, 0] - K[1, 0] * K[2, 2]
        c02 = K[1, 0] * K[2, 1] - K[1, 1] * K[2, 0]
        det = K[0, 0] * c00 + K[0, 1] * c01 + K[0, 2] * c02
        if abs(det) < 1e-300:
            inv_block[i] = 0.0
            continue
        inv_block[i, 0, 0], inv_block[i, 1, 0], inv_block[i, 2, 0] = c00 / det, c01 / det, c02 / det
        inv_block[i, 0, 1] = (K[0, 2] * K[2, 1] - K[0, 1] * K[2, 2]) / det
        inv_block[i, 1, 1] = (K[0, 0] * K[2, 2] - K[0, 2] * K[2, 0]) / det
        inv_block[i, 2, 1] = (K[0, 1] * K[2, 0] - K[0, 0] * K[2, 1]) / det
        inv_block[i, 0, 2] = (K[0, 1] * K[1, 2] - K[0, 2] * K[1, 1]) / det
        inv_block[i, 1, 2] = (K[0, 2] * K[1, 0] - K[0, 0] * K[1, 2]) / det
        inv_block[i, 2, 2] = (K[0, 0] * K[1, 1] - K[0, 1] * K[1, 0]) / det


@njit(cache=True)
def _prepare_rows(body, jacobian, block, softness, inverse_mass, inverse_inertia_world):
    """`Prepared`'s arrays (after `rows`), in one compiled call: a step's fixed cost, not arithmetic,
    is what a small scene's solver spends its time on."""
    R, B = body.shape[0], inverse_mass.shape[0]
    minv_jt, inv_k = np.empty((R, 2, 6)), np.empty(R)
    _effective_masses(body, jacobian, inverse_mass, inverse_inertia_world, softness, minv_jt, inv_k)
    blocked = False
    manifold = np.empty(R, np.int64)
    count = 0
    for i in range(R):
        blocked = blocked or block[i] == 3
        count += block[i] > MANIFOLD           # manifolds of 2–4 points (one point is exact on its own)
        manifold[i] = count - 1
    inv_block = np.empty((R, 3, 3)) if blocked else np.zeros((1, 3, 3))
    if blocked:
        _block_inverses(body, jacobian, minv_jt, softness, block, inv_block)
    manifold_k = np.zeros((max(count, 1), 4, 4))
    manifold_l, manifold_set = np.zeros_like(manifold_k), np.full(max(count, 1), -1, np.int64)
    if count:
        _manifold_masses(block, jacobian, minv_jt, softness, manifold, manifold_k, manifold_l, manifold_set)
    slot = np.empty((R, 2), np.int64)
    for i in range(R):
        for side in range(2):
            slot[i, side] = body[i, side] if body[i, side] >= 0 else B
    return slot, minv_jt, inv_k, inv_block, manifold, manifold_k, manifold_l, manifold_set


def prepare(rows, inverse_mass, inverse_inertia_world):
    """Effective masses of `rows` for bodies with inverse mass (B,) and inverse world inertia
    (B, 3, 3), I⁻¹_world = R diag(1/I) Rᵀ at the start of the step (one compiled pass)."""
    return Prepared(rows, *_prepare_rows(np.ascontiguousarray(rows.body, np.int64), np.ascontiguousarray(rows.jacobian, float),
                                         np.ascontiguousarray(rows.block, np.int64), np.ascontiguousarray(rows.softness, float),
                                         np.ascontiguousarray(inverse_mass, float),
                                         np.ascontiguousarray(inverse_inertia_world, float)))


@njit(cache=True)
def _apply_impulses(body, minv_jt, impulse, velocity):
    for i in range(body.shape[0]):
        for side in range(2):
            b = body[i, side]
            if b >= 0:
                for c in range(6):
                    velocity[b, c] += minv_jt[i, side, c] * impulse[i]


def warm_start(prepared, velocity):
    """v += M⁻¹ Jᵀ λ for the stored λ (Catto 2005, "warm starting"), in place on velocity (B, 6)."""
    rows = prepared.rows
    if len(rows):
        _apply_impulses(rows.body, prepared.minv_jt, rows.impulse, velocity)


def sweep(prepared, velocity, target, iterations, sor, order=None, friction=True):
    """Run PGS on `target` (R,) for `iterations` sweeps, in place on velocity (B, 6) and the rows'
    impulses; returns the residual per sweep. `friction` False: contact points' normal rows only."""
    rows = prepared.rows
    # Default order: the rows as they stand (joints, then contacts); friction rows are solved
    # inside their manifold's block, right after its normal rows (`_pgs`).
    order = np.arange(len(rows)) if order is None else np.asarray(order, np.int64)
    residual = np.zeros(iterations)
    if len(rows) and iterations:
        padded = np.zeros((len(velocity) + 1, 6))      # + the static dummy body (`_pgs`)
        padded[:-1] = velocity
        _pgs(order, prepared.slot, rows.jacobian, prepared.minv_jt, prepared.inv_k, prepared.inv_block,
             np.ascontiguousarray(rows.block, np.int64), prepared.manifold, prepared.manifold_k, prepared.manifold_l,
             prepared.manifold_set,
             np.ascontiguousarray(target),
             rows.softness, rows.lower, rows.upper, rows.mu, rows.impulse, padded,
             iterations, float(sor), bool(friction), residual)
        velocity[:] = padded[:-1]
    return residual


@dataclass
class Solution:
    """What one solve produced: velocities (B, 6) after solve (with bias), after relax, and final
    (after restitution), and the residual of every solve iteration. Positions take the solve and
    relax velocities (the split impulse); the restitution stage changes velocities only, since its
    target already stands for the rebound at the surface (`restitution_targets`)."""

    velocity_solve: np.ndarray
    velocity_relax: np.ndarray
    residual: np.ndarray
    velocity_final: np.ndarray


def solve(prepared, velocity, iterations=10, sor=1.0, warm=True, relax=True, relax_iterations=None,
          restitution=None):
    """The stages warm start → solve → relax → restitution on the free velocities (B, 6).

    `restitution`: (R,) target J v for the normal rows that may bounce (`SceneSolver._restitution_targets`),
    NaN elsewhere, or None; only rows holding an impulse after relax bounce.
    The rows' `impulse` ends holding λ (to store for the next warm start)."""
    if not isinstance(iterations, (int, np.integer)) or iterations < 0:
        raise ValueError(f"iterations: got {iterations!r}; expected an integer >= 0")
    if not 0.0 < sor < 2.0:
        raise ValueError(f"sor: got {sor!r}; expected 0 < sor < 2 (over-relaxation diverges at 2)")
    velocity = np.asarray(velocity, dtype=float)
    rows, B = prepared.rows, len(velocity)
    padded = np.zeros((B + 1, 6))      # + the static dummy body (`_pgs`)
    padded[:-1] = velocity
    residual, velocity_solve, velocity_relax = np.zeros(iterations), np.empty((B, 6)), np.empty((B, 6))
    if restitution is None:
        restitution = _NO_RESTITUTION
    _solve_stages(prepared.slot, rows.body, rows.jacobian, prepared.minv_jt, prepared.inv_k, prepared.inv_block,
                  np.ascontiguousarray(rows.block, np.int64), prepared.manifold, prepared.manifold_k, prepared.manifold_l,
             prepared.manifold_set,
                  np.ascontiguousarray(rows.target, float), np.ascontiguousarray(rows.relax, float),
                  np.ascontiguousarray(restitution, float), rows.softness, rows.lower, rows.upper, rows.mu, rows.impulse,
                  padded, int(iterations), int(iterations if relax_iterations is None else relax_iterations), float(sor),
                  bool(warm), bool(relax), residual, velocity_solve, velocity_relax)
    return Solution(velocity_solve, velocity_relax, residual, padded[:-1])


_NO_RESTITUTION = np.zeros(0)


@njit(cache=True)
def _solve_stages(slot, body, jacobian, minv_jt, inv_k, inv_block, block, manifold, manifold_k, manifold_l, manifold_set,
                  target,
                  relax_target, restitution, softness, lower, upper, mu, impulse, velocity, iterations,
                  relax_iterations, sor, warm, relax, residual, velocity_solve, velocity_relax):
    """`solve`'s stages in one compiled call, in place on velocity (B + 1, 6) (the last row the
    static dummy body) and impulse; velocity_solve, velocity_relax (B, 6) get the velocities after
    those stages. `restitution` (R,) or empty: see `solve`."""
    R, B = body.shape[0], velocity.shape[0] - 1
    if not warm:
        impulse[:] = 0.0
    _apply_impulses(body, minv_jt, impulse, velocity)
    order = np.arange(R)
    if R and iterations:
        _pgs(order, slot, jacobian, minv_jt, inv_k, inv_block, block, manifold, manifold_k, manifold_l, manifold_set, target, softness,
             lower, upper, mu, impulse, velocity, iterations, sor, True, residual)
    velocity_solve[:] = velocity[:B]
    if R and relax and relax_iterations:
        _pgs(order, slot, jacobian, minv_jt, inv_k, inv_block, block, manifold, manifold_k, manifold_l, manifold_set,
             relax_target,
             softness, lower, upper, mu, impulse, velocity, relax_iterations, 1.0, True, np.zeros(relax_iterations))
    velocity_relax[:] = velocity[:B]
    # Box2D v3: only points that took an impulse bounce (a speculative point that never touched does not).
    bounce = 0
    for i in range(restitution.size):
        bounce += np.isfinite(restitution[i]) and impulse[i] > 0.0
    if bounce and iterations:
        order = np.empty(bounce, np.int64)
        bounce_target = np.zeros(R)
        k = 0
        for i in range(R):
            if np.isfinite(restitution[i]):
                bounce_target[i] = restitution[i]
                if impulse[i] > 0.0:
                    order[k] = i
                    k += 1
        _pgs(order, slot, jacobian, minv_jt, inv_k, inv_block, block, manifold, manifold_k, manifold_l, manifold_set,
             bounce_target,
             softness, lower, upper, mu, impulse, velocity, iterations, 1.0, False, np.zeros(iterations))


@njit(cache=True)
def _reach(point, normal, depth, nodes, body, centre, velocity, node_x, node_v, node_omega, node_a, node_alpha, h,
           lead, base, surface, keep):
    """keep[m] = −depth ≤ base + h max(−vn₀, 0) with vn₀ = n · (v_b − v_a) at the point, and the
    surface velocity of each static side (a kinematic node's world motion) per point
    (`_keep_reachable`), led by `lead` seconds:

        v_surface = v + ω × r + lead (a + α × r + ω × (ω × r))

    (the material point's velocity `lead` later, to first order). The rows compare it with the
    bodies' end-of-step velocities, and a body at rest on the surface must land where the surface
    point does (`physics.simulation.SURFACE_LEAD`): semi-implicit Euler moves it by h v₁ in the
    parent's non-rotating frame, a chord whose velocity is the material point's at mid-step, so
    h / 2; the trapezoid schemes (h (v₀ + v₁) / 2) and implicit Euler (h v₁ in the turning frame
    itself) need the end-of-step velocity, h; explicit Euler moves with v₀ and can only match the
    velocity, h. Lead 0 lagged a turning deck by ω h and a crate at rest on it crept outward at
    |v| ω h; lead h under semi-implicit Euler crept inward as fast, and lead h / 2 under implicit
    Euler outward (tests/test_moving_surfaces.py). A body moving over the surface also carries the contact to
    where the surface moves otherwise: + lead ω × d, d the body's velocity over the surface in the
    tangent plane (a ball rolling on a turntable, tests/test_rolling.py; the contact location moves
    with the centre for a sphere, and d = 0 for a body at rest on it)."""
    v = np.empty(3)
    w = np.empty(3)
    vs, spin, moving, d = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for m in range(depth.size):
        vn = 0.0
        for side in range(2):
            k = body[m, side]
            if k >= 0:
                x, lin, ang = centre[k], velocity[k, :3], velocity[k, 3:]
            else:
                node = nodes[m, side]
                x, lin, ang = node_x[node], node_v[node], node_omega[node]
            r0, r1, r2 = point[m, 0] - x[0], point[m, 1] - x[1], point[m, 2] - x[2]
            v[0] = lin[0] + ang[1] * r2 - ang[2] * r1
            v[1] = lin[1] + ang[2] * r0 - ang[0] * r2
            v[2] = lin[2] + ang[0] * r1 - ang[1] * r0
            if k < 0:
                acc, alpha = node_a[node], node_alpha[node]
                w[0] = ang[1] * (v[2] - lin[2]) - ang[2] * (v[1] - lin[1])     # ω × (ω × r)
                w[1] = ang[2] * (v[0] - lin[0]) - ang[0] * (v[2] - lin[2])
                w[2] = ang[0] * (v[1] - lin[1]) - ang[1] * (v[0] - lin[0])
                surface[m, side, 0] = v[0] + lead * (acc[0] + alpha[1] * r2 - alpha[2] * r1 + w[0])
                surface[m, side, 1] = v[1] + lead * (acc[1] + alpha[2] * r0 - alpha[0] * r2 + w[1])
                surface[m, side, 2] = v[2] + lead * (acc[2] + alpha[0] * r1 - alpha[1] * r0 + w[2])
                for c in range(3):
                    vs[c] = v[c]
                    spin[c] = ang[c]
            else:
                for c in range(3):
                    surface[m, side, c] = 0.0
                    moving[c] = lin[c]
            vn += (1.0 if side else -1.0) * (normal[m, 0] * v[0] + normal[m, 1] * v[1] + normal[m, 2] * v[2])
        keep[m] = -depth[m] <= base + h * max(-vn, 0.0)
        if (body[m, 0] < 0) != (body[m, 1] < 0):
            # the contact slides over the surface with the body: ω × (its tangential velocity over it)
            s = 0 if body[m, 0] < 0 else 1
            dn = 0.0
            for c in range(3):
                d[c] = moving[c] - vs[c]
                dn += d[c] * normal[m, c]
            for c in range(3):
                d[c] -= dn * normal[m, c]
            surface[m, s, 0] += lead * (spin[1] * d[2] - spin[2] * d[1])
            surface[m, s, 1] += lead * (spin[2] * d[0] - spin[0] * d[2])
            surface[m, s, 2] += lead * (spin[0] * d[1] - spin[1] * d[0])


@njit(cache=True)
def _fastest(velocity):
    """max |v_c| over the bodies' linear velocity components (B, 6) [v, ω], 0 for none, NaN if
    any is NaN (as numpy's max: `contacts` then names the bad margin)."""
    fastest = 0.0
    for b in range(velocity.shape[0]):
        for c in range(3):
            speed = abs(velocity[b, c])
            if speed != speed:
                return speed
            fastest = max(fastest, speed)
    return fastest


@njit(cache=True)
def _contact_stage(shape_a, shape_b, node_a, node_b, point, normal, depth, feature, body_of_node, centre, velocity,
                   node_x, node_v, node_omega, node_acc, node_alpha, h, lead, base, friction, restitution, keys, impulses,
                   n_shapes, warm, beta, slop, threshold, softness):
    """The contact points' rows in one compiled call (`SceneSolver.prepare`): the points that can
    touch within this step (`_keep_reachable`: the narrow phase keeps every point within the
    fastest body's reach, one margin for all pairs; a point is kept only if its own gap
    −depth ≤ SPECULATIVE + h (−vn₀ + |g| h), vn₀ the relative normal velocity at the point at the
    start of the step — Catto, "Speculative contacts", GDC 2013: the settling pile of 1,000 boxes
    then solves 4.3k points instead of 9.4k), their friction and restitution (Box2D's mixing
    rules: μ = √(μ_a μ_b), e = max(e_a, e_b)), last step's impulses (warm start, the cache's sorted
    keys) and their rows (`physics.constraints.contact_rows`). Returns (kept, how many may bounce,
    the ten `Rows` arrays, approach (kept,), static_normal (kept,), e (kept,)); the contacts'
    arrays are compacted in place, kept points first."""
    kept, body, surface = _keep_reachable(shape_a, shape_b, node_a, node_b, point, normal, depth, feature, body_of_node,
                                          centre, velocity, node_x, node_v, node_omega, node_acc, node_alpha, h, lead,
                                          base)
    mu, e, stored = np.empty(kept), np.empty(kept), np.zeros((kept, 3))
    for m in range(kept):
        a, b = node_a[m], node_b[m]
        mu[m] = np.sqrt(friction[a] * friction[b])
        e[m] = max(restitution[a], restitution[b])
    if warm:
        _lookup(keys, impulses, shape_a[:kept], shape_b[:kept], feature[:kept], n_shapes, stored)
    R = 3 * kept
    rows = (np.empty((R, 2), np.int64), np.empty((R, 2, 6)), np.empty(R), np.empty(R), np.empty(R), np.empty(R),
            np.empty(R), np.empty(R), np.empty(R), np.empty(R, np.int64))
    approach, static_normal = np.empty(kept), np.empty(kept)
    _contact_rows_kernel(point[:kept], normal[:kept], depth[:kept], body[:kept], centre, velocity, surface[:kept], mu, e,
                         stored, h, beta, slop, threshold, softness, *rows, approach, static_normal)
    bounces = 0
    for m in range(kept):
        bounces += np.isfinite(approach[m])
    return (kept, bounces, *rows, approach, static_normal, e)


@njit(cache=True)
def _keep_reachable(shape_a, shape_b, node_a, node_b, point, normal, depth, feature, body_of_node, centre, velocity,
                    node_x, node_v, node_omega, node_acc, node_alpha, h, lead, base):
    """Each point's solver bodies (M, 2) and surface velocities (M, 2, 3) (`_reach`), then the
    points that can touch this step moved to the front of every array, in order (the contacts'
    arrays are this step's, fresh from the narrow phase); returns (how many were kept, body, surface)."""
    M = depth.size
    nodes, body = np.empty((M, 2), np.int64), np.empty((M, 2), np.int64)
    for m in range(M):
        nodes[m, 0], nodes[m, 1] = node_a[m], node_b[m]
        body[m, 0], body[m, 1] = body_of_node[node_a[m]], body_of_node[node_b[m]]
    surface, keep = np.empty((M, 2, 3)), np.empty(M, np.bool_)
    _reach(point, normal, depth, nodes, body, centre, velocity, node_x, node_v, node_omega, node_acc, node_alpha, h, lead,
           base, surface, keep)
    kept = 0
    for m in range(M):
        if not keep[m]:
            continue
        if kept != m:
            shape_a[kept], shape_b[kept], node_a[kept], node_b[kept] = shape_a[m], shape_b[m], node_a[m], node_b[m]
            depth[kept], feature[kept] = depth[m], feature[m]
            point[kept], normal[kept], body[kept], surface[kept] = point[m], normal[m], body[m], surface[m]
        kept += 1
    return kept, body, surface


class SceneSolver:
    """The solver stage of `physics.simulation.Simulation`: contacts from the narrow phase
    (docs/architecture.md, "Collision interface") and the scene's joints, on the dynamic bodies
    ("solver bodies", index = the Simulation's dynamic slot) in world terms.

    `body_of_node (N,)`: the solver body a node's shapes move with (a dynamic node itself, a fixed
    node its nearest dynamic ancestor — the car's floor is the car), −1 for static and kinematic
    ones (kinematic surfaces enter through their known velocity). `joint_specs`: dicts with keys
    kind, a, b (node indices, −1 = the world), anchor, anchor_b, axis (world, at load), length,
    lower, upper, motor_speed, motor_force."""

    def __init__(self, node_shapes, parent, motion, body_of_node, friction, restitution, joint_specs=()):

        self.shapes = ShapeSet.from_nodes(node_shapes)
        self.filter = collision_filter(self.shapes, parent, motion)
        # Sleeping (`physics.sleeping.ShapeRest`): the solver body each shape moves with, and the
        # rigid assembly each body rests in (its parent's: the node its parent is fixed to, −1 the world).
        parent, motion = np.asarray(parent), np.asarray(motion)
        assembly = np.arange(len(parent))
        for _ in range(len(parent)):
            up = (assembly >= 0) & (motion[np.maximum(assembly, 0)] == "fixed")
            if not up.any():
                break
            assembly = np.where(up, parent[np.maximum(assembly, 0)], assembly)
        body_of_node = np.asarray(body_of_node, np.int64)
        dynamic = np.flatnonzero((motion == "dynamic") & (body_of_node >= 0))
        rest_assembly = np.full(int(body_of_node.max(initial=-1)) + 1, -1, np.int64)
        rest_assembly[body_of_node[dynamic]] = np.where(parent[dynamic] >= 0, assembly[np.maximum(parent[dynamic], 0)], -1)
        shape_body = body_of_node[self.shapes.node] if len(self.shapes) else np.zeros(0, np.int64)
        self._rest = ShapeRest(shape_body, self.filter.assembly, rest_assembly)
        self.cache = ContactCache()
        self.body_of_node = np.asarray(body_of_node, np.int64)
        self.friction = np.asarray(friction, float)
        self.restitution = np.asarray(restitution, float)
        self.joint_specs = list(joint_specs)
        self.joints = None
        self.residual = np.zeros(0)
        self.contacts = None
        self.pair_bodies = np.zeros((0, 2), np.int64)   # (K, 2) the broad phase's body pairs (sleeping islands)
        self.body_touch = np.zeros(0, np.int64)     # per body: SUPPORTED | FOREIGN (`touch_flags`)
        self._prepared = None

    @property
    def prepared(self):
        """The rows and effective masses of the last `prepare` (a `Prepared`), or None before the
        first step and after a `restore`: the solve stage has nothing to do then."""
        return self._prepared

    def state(self):
        """What the next step reads (`physics.snapshot`), as named array copies: the contact
        cache (warm-start impulses, persistent manifolds) and, once built, the joints (their
        body-frame anchors and axes are fixed at the first step's poses) with their impulses."""
        out = {"cache." + name: array for name, array in self.cache.state().items()}
        if self.joints is not None:
            out.update({"joints." + f.name: getattr(self.joints, f.name).copy() for f in fields(Joints)})
        return out

    def restore(self, state):
        """Put back a `state()`."""
        self.cache.restore({name[len("cache."):]: array for name, array in state.items() if name.startswith("cache.")})
        self.joints = None
        if "joints.kind" in state:
            self.joints = Joints(**{f.name: state["joints." + f.name].copy() for f in fields(Joints)})
        self._prepared = None

    def _build_joints(self, centre, rotation):
        specs = self.joint_specs
        get = lambda key, default: [spec.get(key, default) if spec.get(key) is not None else default for spec in specs]
        body = np.array([[self.body_of_node[s["a"]] if s["a"] >= 0 else -1, self.body_of_node[s["b"]]] for s in specs], np.int64).reshape(-1, 2)
        anchor = np.array(get("anchor", [0.0, 0.0, 0.0]), float).reshape(-1, 3)
        anchor_b = np.array([s["anchor_b"] if s.get("anchor_b") is not None else s["anchor"] for s in specs], float).reshape(-1, 3)
        lengths = np.array([s["length"] if s.get("length") is not None else np.linalg.norm(np.subtract(b, a)) for s, a, b in zip(specs, anchor, anchor_b)])
        return Joints.from_world([s["kind"] for s in specs], body, anchor, get("axis", [0.0, 0.0, 1.0]), centre, rotation,
                                 anchor_b, lengths, get("lower", -np.inf), get("upper", np.inf),
                                 get("motor_speed", 0.0), get("motor_force", 0.0))

    def prepare(self, world, centre, rotation, velocity, inverse_mass, inverse_inertia, h, settings, lead=None,
                awake=None):
        """Build this step's rows at the start-of-step poses. `world`: the nodes' world state
        (translation, rotation, scale, velocity, omega (N, ...)); centre, rotation (B, 3), (B, 3, 3),
        velocity (B, 6) [v, ω], inverse_mass (B,), inverse_inertia (B, 3, 3): the solver bodies;
        world acceleration and alpha of kinematic nodes are read too (moving surfaces, `_reach`).
        `lead` (s): how far ahead a moving surface's velocity is taken (`_reach`; default h,
        `physics.simulation.SURFACE_LEAD` says per integrator). `awake` (B,) bool, or None (all
        awake): which bodies are awake (physics.sleeping); updated in place with the
        sleeping bodies this step's boxes wake (`physics.sleeping.awake_pairs`), whose pairs are then solved."""

        t = profile.mark()              # laps: rows (joints), broad phase, narrow phase, rows (contacts)
        beta = beta_from_erp(settings.erp, h)
        softness = settings.cfm / h
        parts = []
        if self.joint_specs:
            if self.joints is None:
                self.joints = self._build_joints(centre, rotation)
            # With post-stabilization the joints' position error is projected out after the step
            # (`post_stabilize`), so the velocity solve carries no Baumgarte bias into the energy.
            joint_beta = 0.0 if POST_STABILIZATION else beta
            joint_rows, self._joint_slots = self.joints.rows(centre, rotation, h, joint_beta, softness=softness)
            parts.append(joint_rows)
            # The start-of-step rows again, rigid (no CFM) and without motors, for `post_stabilize`.
            motor = self._joint_slots % ROWS_PER_JOINT == ROWS_PER_JOINT - 1
            position = Rows(joint_rows.body, joint_rows.jacobian, joint_rows.target, joint_rows.relax,
                            np.where(motor, 0.0, joint_rows.lower), np.where(motor, 0.0, joint_rows.upper),
                            np.zeros(len(joint_rows)), joint_rows.mu, np.zeros(len(joint_rows)),
                            joint_rows.block)
            self._joint_position = prepare(position, inverse_mass, inverse_inertia)
            self._joint_masses = (inverse_mass, inverse_inertia)
        offset = sum(len(p) for p in parts)
        self.contacts = None
        if len(self.shapes):
            t = profile.lap("rows", t)
            lo, hi = aabbs(self.shapes, world)
            speed = _fastest(velocity)
            margin = SPECULATIVE + h * speed     # what the fastest body can close within a step
            lo -= margin
            hi += margin
            pairs = candidate_pairs(lo, hi, self.filter)
            t = profile.lap("broad phase", t)
            if len(pairs) > PAIR_BUDGET:
                raise ContactBudgetError(len(pairs))
            if awake is None:
                c = contacts(self.shapes, world, pairs, self.cache, margin=margin)
            else:
                pairs, c = self._awake_contacts(pairs, world, margin, awake)
            t = profile.lap("narrow phase", t)
            if settings.sleep:      # what the sleep stage reads: islands, supports, foreign touches
                self.pair_bodies = self._rest.body[pairs]
                self.body_touch = np.zeros(len(inverse_mass), np.int64)
                touch_flags(c.shape_a, c.shape_b, self._rest, self.body_touch)
            lead = h if lead is None else lead      # `_reach`
            cache = self.cache
            kept, bounces, *arrays, approach, static_normal, e = _contact_stage(
                c.shape_a, c.shape_b, c.body_a, c.body_b, c.point_world, c.normal_world, c.depth, c.feature_id,
                self.body_of_node, centre, velocity, world.translation, world.velocity, world.omega, world.acceleration,
                world.alpha, h, lead, SPECULATIVE + math.hypot(*settings.gravity) * h * h, self.friction,
                self.restitution, cache._impulse_keys, cache._impulses, cache._n_shapes, bool(settings.warm_start), beta,
                SLOP, BOUNCE_THRESHOLD, softness)
            if kept < len(c):
                c = Contacts(c.shape_a[:kept], c.shape_b[:kept], c.body_a[:kept], c.body_b[:kept], c.point_world[:kept],
                             c.normal_world[:kept], c.depth[:kept], c.feature_id[:kept])
            self.contacts = c
            parts.append(Rows(*arrays))
            self._bounce = None
            if bounces:     # points approaching faster than BOUNCE_THRESHOLD with e > 0 (rare)
                may = np.flatnonzero(np.isfinite(approach))
                self._bounce = (offset + 3 * may + 2, approach[may], static_normal[may], -c.depth[may], e[may])
        else:
            self._bounce = None
        self._h = h
        self._prepared = prepare(parts[0] if len(parts) == 1 else concatenate(parts), inverse_mass, inverse_inertia)
        profile.lap("rows", t)

    def _awake_contacts(self, candidates, world, margin, awake):
        """The candidate pairs to solve and their contacts when some bodies sleep (`awake` (B,),
        updated in place): the pairs with an awake body, after the sleeping bodies they reach woke
        (`physics.sleeping.awake_pairs`), plus probes — a sleeping body against a static or kinematic shape that
        may move against it — that wake their body, and then its island, if they touch (within
        the margin). A probe that touches costs the narrow phase a second pass, with the woken
        bodies' pairs; probes that do not touch cost one narrow-phase test each."""
        solve, probe = awake_pairs(candidates, self._rest, awake)
        pairs = candidates[solve | probe]
        c = contacts(self.shapes, world, pairs, self.cache, margin=margin)
        if probe.any() and wake_touched(c.shape_a, c.shape_b, self._rest.body, awake):
            solve, probe = awake_pairs(candidates, self._rest, awake)
            pairs = candidates[solve | probe]
            c = contacts(self.shapes, world, pairs, self.cache, margin=margin)
            wake_touched(c.shape_a, c.shape_b, self._rest.body, awake)   # touched in both passes: awake now
        return pairs, c

    def _restitution_targets(self, velocity, fraction):
        """(R,) the restitution stage's J v target for the normal rows that may bounce, NaN elsewhere
        (`physics.constraints.restitution_targets`, from the free velocities (B, 6)); None if none may."""
        if self._bounce is None or not len(self._bounce[0]):
            return None
        rows = self._prepared.rows
        target = np.full(len(rows), np.nan)
        index, approach, static_normal, gap, e = self._bounce
        body = rows.body[index]
        free = static_normal.copy()
        for side in range(2):
            moving = body[:, side] >= 0
            free[moving] += np.einsum("ic,ic->i", rows.jacobian[index[moving], side], velocity[body[moving, side]])
        target[index] = restitution_targets(approach, free, gap, e, self._h, fraction) - static_normal
        return target

    def solve(self, velocity, settings, fraction=1.0):
        """Warm start, solve, relax, restitution on the free velocities (B, 6); store the impulses.
        `fraction`: how much of an end-of-step velocity change the integrator's position update sees
        (`physics.simulation.POSITION_FRACTION`; restitution targets depend on it)."""
        prepared = self._prepared
        solution = solve(prepared, velocity, settings.iterations, settings.sor, settings.warm_start,
                         settings.relax, restitution=self._restitution_targets(velocity, fraction))
        impulse = prepared.rows.impulse
        if self.joints is not None and len(self.joints):
            self.joints.impulse.reshape(-1)[self._joint_slots] = impulse[:len(self._joint_slots)]
        if self.contacts is not None:
            c = self.contacts
            stored = impulse[len(impulse) - 3 * len(c):].reshape(-1, 3)[:, [2, 0, 1]]   # (n, t1, t2)
            self.cache.store(c, stored)
        self.residual = solution.residual
        return solution

    def post_stabilize(self, centre, rotation, iterations, shake=True):
        """Post-stabilization as SHAKE (Ryckaert, Ciccotti & Berendsen 1977; Hairer, Lubich & Wanner,
        "Geometric Numerical Integration", VII.1, the constrained symplectic Euler): after the step,
        move the bodies along the **start-of-step** M⁻¹Jᵀ until the joints' position error vanishes,
        and give the velocities the same change over the step, Δv = Δq / h. Seed 002 §3.3.4 (an
        empty heading there); Cline & Pai, "Post-Stabilization for Rigid Body Simulation with
        Contact and Constraints", ICRA 2003.

        Why this form: the velocity solve made J(q₀) v = 0, so q₀ + h v leaves the manifold by
        ~ h² v² / 2L outward. Projecting back along the *end-of-step* normal (or keeping v as it was)
        shifts the body against its motion by ~ h³ v³ / 2L each step — a drag: the pendulum lost
        2.4 % of its swing energy per period at 60°, h = 1/240. Along the start-of-step direction
        with Δv = Δq/h the step is SHAKE, v = (q₁ − q₀)/h: symplectic, the energy oscillates with
        no drift, and the next step's solve keeps v's component along J (it is the chord's).

        Each round evaluates C at the current poses and solves J₀ M⁻¹ J₀ᵀ μ = −C by PGS (3×3
        blocks exact) on a zero velocity, Δq = M⁻¹J₀ᵀ μ (a Newton iteration with the fixed
        direction SHAKE uses). With `shake` False (settings.shake, the default) the rounds linearize at
        the current poses instead and the caller leaves the velocities alone (positions only). Returns (dx, dθ, dv) (B, 3), (B, 3), (B, 6) [v, ω]:
        world-frame translation, rotation vector and velocity change; inputs are not changed."""
        B = len(centre)
        dx, dtheta = np.zeros((B, 3)), np.zeros((B, 3))
        position = getattr(self, "_joint_position", None)
        if self.joints is None or not len(self.joints) or not POST_STABILIZATION or position is None:
            return dx, dtheta, np.zeros((B, 6))
        start_slots = self._joint_slots
        centre, rotation = centre.copy(), rotation.copy()
        for _ in range(POST_STABILIZATION):
            rows, slots = self.joints.rows(centre, rotation, 1.0, 1.0)      # target −C: a position step
            where = np.minimum(np.searchsorted(start_slots, slots), len(start_slots) - 1)
            known = start_slots[where] == slots
            target = np.zeros(len(start_slots))
            target[where[known]] = rows.target[known]
            step = np.zeros((B, 6))
            if shake:
                position.rows.impulse[:] = 0.0
                sweep(position, step, target, iterations, 1.0)
            else:   # positions only: linearized at the current poses (Gauss–Newton, Cline & Pai)
                rows.impulse[:] = 0.0
                motor = slots % ROWS_PER_JOINT == ROWS_PER_JOINT - 1
                rows.lower[motor] = rows.upper[motor] = 0.0
                sweep(prepare(rows, *self._joint_masses), step, rows.target, iterations, 1.0)
            centre += step[:, :3]
            rotation = matrix_from_rotvec(step[:, 3:]) @ rotation
            dx += step[:, :3]
            dtheta += step[:, 3:]
        return dx, dtheta, np.concatenate([dx, dtheta], axis=1) / self._h
