"""Projected Gauss–Seidel with SOR on Γλ = η: sequential impulses, the solver's arithmetic.

"The Mathematics of Havok's Solver", "Constraints" and "Projected Gauss-Seidel with S.O.R": rows
J v = B (physics.constraints.constraints), impulses Jᵀλ, Γ = J M⁻¹ Jᵀ, η = B − J (v₁ + M⁻¹ g_e), and the bounded
MLCP r = Γλ − η, λ⁻ ≤ λ ≤ λ⁺, r_i = 0 where λ⁻ < λ_i < λ⁺. Here v is the bodies' velocity after the
free step (v₁ + M⁻¹ g_e, with gravity and applied forces already integrated), so η_i = target_i − J_i v.

Projected Gauss–Seidel, one row at a time, is Catto's sequential impulses ("Iterative Dynamics with
Temporal Coherence", 2005; "Fast and Simple Physics using Sequential Impulses", GDC 2006):

    r_i  = J_i v − target_i + s_i λ_i                 (the row's residual; s_i = CFM / h, ODE)
    λ_i ← clamp(λ_i − ω r_i / (J_i M⁻¹ J_iᵀ + s_i), λ⁻_i, λ⁺_i)    (accumulated-impulse clamping)
    v   ← v + M⁻¹ J_iᵀ Δλ_i                           (keeps v = v_free + M⁻¹ Jᵀ λ at every moment)

with ω the SOR factor ("Successive Over Relaxation": ω = 1 is Gauss–Seidel, 1 < ω < 2
over-relaxes) and a contact's two friction rows bounded together by the disc |λ_t| ≤ μ λ_normal,
λ_normal read from its normal row as it is now (a Coulomb cone, `_pgs`). Clamping the *accumulated*
λ rather than each increment lets an iteration take back impulse an earlier one applied too much of.

`Rows.block` (physics.constraints.constraints: IN_BLOCK, SINGLE, TRIPLE, MANIFOLD) says how the sweep visits a
row: on its own, as a 3×3 block, or as a contact manifold (friction rows, then the normal rows as
one exact block).

The stages this module runs (`solve`; Box2D v3 `b2SolverStage`, src/solver.c), over arrays:
  warm start     apply last step's λ (`warm_start`)
  solve          PGS with the Baumgarte / speculative targets
  relax          PGS again with the bias removed (Box2D v3's soft step / relax, the idea of
                 Catto's and Bullet's split impulses): the bias velocity moves the positions but is
                 taken out of the velocities, so position correction adds no kinetic energy
  restitution    normal rows that were approaching faster than the threshold: J v = the rebound
                 velocity (−e × the velocity at the moment of contact, physics.constraints.constraints.restitution_targets)
The residual ‖r‖ (projected: zero for a row held at a bound and pushing against it) of every solve
iteration is kept in `Solution.residual` for display; a stage ends at the first sweep whose residual
is CONVERGED (1e-10 m/s: the rows hold within it, a scene at rest from its first sweep). Building
the rows and storing the impulses is the contact pipeline's (physics.constraints.solver.SceneSolver).

Conventions: R rows, B bodies; velocities (B, 6) [v, ω] world frame; every kernel that sweeps takes
the rows as one `RowSystem` bundle. In a sweep the velocity array has one more row, the static
dummy body B (zero velocity), which `RowSystem.slot` maps static sides to.
"""
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import numba
import numpy as np
from numba import prange
from physics.core.compiled import Memo, SteadyCall, generation, kernel, typed
from physics.core.threads import ThreadChoice, cores
from physics.containers.stable_order import stable_order

from physics.constraints.constraints import IN_BLOCK, MANIFOLD, TRIPLE, Rows
from physics.math.dense import cholesky_factor, cholesky_substitute


class RowSystem(NamedTuple):
    """The rows as a sweep reads them (R rows): `Rows`' arrays and `Prepared`'s constants."""

    body: np.ndarray            # (R, 2) int64 solver body of side a, b (−1 = static)
    slot: np.ndarray            # (R, 2) int64 body with −1 replaced by B, the static dummy body
    jacobian: np.ndarray        # (R, 2, 6)
    minv_jt: np.ndarray         # (R, 2, 6) M⁻¹Jᵀ per side (zero for a static side)
    inv_k: np.ndarray           # (R,) 1 / (J M⁻¹ Jᵀ + s)
    inv_block: np.ndarray       # (R, 3, 3) at rows starting a TRIPLE: its block's (J M⁻¹ Jᵀ + s)⁻¹
    block: np.ndarray           # (R,) int64 `Rows.block`
    manifold: np.ndarray        # (R,) int64 at a manifold's first normal row: its index below
    manifold_k: np.ndarray      # (manifolds, 4, 4) K of its normal rows
    manifold_l: np.ndarray      # (manifolds, 2, 4, 4) Cholesky factors of K's rows in two active sets
    manifold_set: np.ndarray    # (manifolds, 3) int64 the set in each slot (−1 = none), the slot used last
    softness: np.ndarray        # (R,) CFM / h
    lower: np.ndarray           # (R,)
    upper: np.ndarray           # (R,)
    mu: np.ndarray              # (R,)
    impulse: np.ndarray         # (R,) accumulated λ, in and out


class _ManifoldWork(NamedTuple):
    """Scratch of `_manifold_normals` for k ≤ 4 normal rows, allocated once per sweep call."""

    r: np.ndarray
    lam: np.ndarray
    delta: np.ndarray
    x: np.ndarray
    index: np.ndarray


@kernel(inline=True)
def _row_jv(J, va, vb):
    """J v for one row J (2, 6) and the two bodies' velocities (6-tuples), summed as a tree: a shorter
    dependency chain than a running sum (rows run one after another)."""
    Ja, Jb = J[0], J[1]
    return (((Ja[0] * va[0] + Ja[1] * va[1]) + (Ja[2] * va[2] + Ja[3] * va[3]))
            + ((Ja[4] * va[4] + Ja[5] * va[5]) + (Jb[0] * vb[0] + Jb[1] * vb[1]))
            + ((Jb[2] * vb[2] + Jb[3] * vb[3]) + (Jb[4] * vb[4] + Jb[5] * vb[5])))


@kernel(inline=True)
def _row_apply(minv_jt, delta, va, vb):
    """v + M⁻¹Jᵀ Δλ for one row, minv_jt (2, 6): the two bodies' new velocities (tuples of 6)."""
    a, b = minv_jt[0], minv_jt[1]
    return ((va[0] + a[0] * delta, va[1] + a[1] * delta, va[2] + a[2] * delta, va[3] + a[3] * delta,
             va[4] + a[4] * delta, va[5] + a[5] * delta),
            (vb[0] + b[0] * delta, vb[1] + b[1] * delta, vb[2] + b[2] * delta, vb[3] + b[3] * delta,
             vb[4] + b[4] * delta, vb[5] + b[5] * delta))


@kernel(inline=True)
def _scalar_row(j, jacobian, minv_jt, inv_k, target, softness, lower, upper, impulse, va, vb, sor):
    """One row j: λ ← clamp(λ − ω r / K, λ⁻, λ⁺), v += M⁻¹Jᵀ Δλ; returns its projected r² (zero
    when held at a bound and pushing against it) and the two bodies' new velocities va, vb."""
    lam = impulse[j]
    r = _row_jv(jacobian[j], va, vb) - target[j] + softness[j] * lam
    lo, hi = lower[j], upper[j]
    new = min(max(lam - sor * r * inv_k[j], lo), hi)
    impulse[j] = new
    va, vb = _row_apply(minv_jt[j], new - lam, va, vb)
    return (0.0 if (lam <= lo and r > 0.0) or (lam >= hi and r < 0.0) else r * r), va, vb


@kernel(inline=True)
def _whiskered(A, n):
    """A whisker on the diagonal: four corners on a face are one more row than the three velocities
    (v_n, two tilts) they constrain, K is singular there, and this picks the least-norm Δλ
    (the pseudo-inverse, to 1e-10 relative): symmetric corners get symmetric impulses."""
    scale = 0.0
    for a in range(n):
        scale = max(scale, A[a, a])
    for a in range(n):
        A[a, a] += 1e-10 * scale




@kernel(inline=True)
def _try_active_set(mask, k, K, factor, sets, m, r, lam, delta, x, index):
    """The LCP of manifold m (k normal rows, K (4, 4), r and λ (k,) loaded) with the rows in `mask`
    active (r_p = 0) and the others released (λ_q = 0): K_SS Δλ_S = −r_S + K_S,S̄ λ_S̄,
    Δλ_S̄ = −λ_S̄. Writes delta (k,) and returns the set it points to — `mask` itself when it is the
    solution (λ + Δλ ≥ 0 on S, r + K Δλ ≥ 0 off S, within round-off), else mask without the rows
    pulling and with the rows penetrating (a block principal pivot, Júdice & Pires 1994) — or −1 if
    K_SS is not positive definite. factor (2, 4, 4) holds the Cholesky factors of the sets
    sets[m, 0] and sets[m, 1] (−1: none), sets[m, 2] the slot used last: a manifold at rest solves
    the same set every sweep and every step, so it is factored once, not each time, and one that
    pivots between two sets (the guess, then the solution) keeps both: on the settled 1,000-box heap
    a single slot refactored in 37 % of the block solves. A set is factored from the same K by the
    same arithmetic in either slot, so the slots change no bit. x, index: scratch. The hot inner helpers take arrays, not bundles: with
    the `RowSystem` read inside these loops the pile's sweeps took 28 % longer (measured)."""
    n = 0
    for p in range(k):
        if mask & (1 << p):
            index[n] = p
            n += 1
        else:
            delta[p] = -lam[p]
    for a in range(n):
        p = index[a]
        total = -r[p]
        for q in range(k):
            if not mask & (1 << q):
                total += K[p, q] * lam[q]
        x[a] = total
    slot = 0 if sets[m, 0] == mask else 1 if sets[m, 1] == mask else -1
    if slot < 0:            # factor the set into the slot not used last
        slot = 1 - sets[m, 2]
        L = factor[slot]
        for a in range(n):
            for b in range(n):
                L[a, b] = K[index[a], index[b]]
        _whiskered(L, n)
        sets[m, slot] = mask if cholesky_factor(L, n) else -1
        if sets[m, slot] < 0:
            return -1
    sets[m, 2] = slot
    if n:
        cholesky_substitute(factor[slot], x, n)
    pivot = mask
    for a in range(n):
        p = index[a]
        delta[p] = x[a]
        if lam[p] + x[a] < -1e-12:
            pivot &= ~(1 << p)
    for q in range(k):
        if not mask & (1 << q):
            total = r[q]
            for p in range(k):
                total += K[q, p] * delta[p]
            if total < -1e-12:
                pivot |= 1 << q
    return pivot


@kernel(inline=True)
def _manifold_normals(i, k, K, factor, sets, m, jacobian, minv_jt, target, softness, impulse, va, vb, sor, work):
    """The k ≤ 4 normal rows of manifold m (rows i, i + 3, …; K, factor, sets: `RowSystem`'s
    manifold_k[m], manifold_l[m] (2, 4, 4), manifold_set (M, 3)) as one block:
    all their residuals r = J v − target + s λ from the same velocities, then the exact solution of
    the small LCP

        λ + Δλ ≥ 0,   w = r + K Δλ ≥ 0,   (λ + Δλ) · w = 0,   K_pq = J_p M⁻¹ J_qᵀ + s δ_pq

    over its active sets (Box2D v2.x's 2-point block solver, b2ContactSolver::SolveVelocityConstraints,
    enumerates them; generalised to 4 points): from the previous set (points pushing now or pushed
    last time; at rest it is the answer) by block principal pivoting, and by enumeration of all
    sets, largest first, in the rare case that cycles. Applied once, scaled by the SOR factor ω.
    Solving the points one after another instead let each point's impulse tilt the box before the
    next was seen: an aligned stack of 10 drifted sideways 13 mm in 10 s. Returns the block's
    projected residual² (as `_scalar_row`'s), or −1 if no set passed the round-off checks (nothing
    applied; the caller solves the rows one by one), and the bodies' velocities va, vb after it.
    `work`: the `_ManifoldWork` scratch."""
    r, lam, delta, x, index = work.r, work.lam, work.delta, work.x, work.index
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
        return -1.0, va, vb
    for p in range(k):
        j = i + 3 * p
        new = max(lam[p] + sor * delta[p], 0.0)
        impulse[j] = new
        va, vb = _row_apply(minv_jt[j], new - lam[p], va, vb)
    return total, va, vb


@kernel(inline=True)       # at its one call site, `_sweep_part`: compiled once, without reference counts
def _element(i, block, slot, jacobian, minv_jt, inv_k, impulse, inv_block, softness, mu, lower, upper, manifold,
             manifold_k, manifold_l, manifold_set, target, velocity, dummy, sor, friction, r3, work):
    """Element i of `_pgs` (a row, a block, or a manifold's friction and normal rows) on the two
    bodies' velocities loaded once into the tuples va, vb and stored back (not into the static dummy
    body); returns its projected residual². Takes `RowSystem`'s arrays, not the bundle: reading the
    bundle inside the sweep doubled the heap's solve (measured). r3, work: scratch."""
    kind = block[i]
    a, b = slot[i, 0], slot[i, 1]
    # the two bodies' velocities as tuples: values the compiler keeps in registers, where a scratch
    # array written in place (which might alias the rows it reads) went through memory at every
    # update: the same bits, the heap's one-thread sweep 15 % faster
    va = (velocity[a, 0], velocity[a, 1], velocity[a, 2], velocity[a, 3], velocity[a, 4], velocity[a, 5])
    vb = (velocity[b, 0], velocity[b, 1], velocity[b, 2], velocity[b, 3], velocity[b, 4], velocity[b, 5])
    total = 0.0
    if kind == TRIPLE and friction:
        for q in range(3):
            r3[q] = _row_jv(jacobian[i + q], va, vb) - target[i + q] + softness[i + q] * impulse[i + q]
            total += r3[q] * r3[q]
        for q in range(3):
            delta = -sor * (inv_block[i, q, 0] * r3[0] + inv_block[i, q, 1] * r3[1] + inv_block[i, q, 2] * r3[2])
            impulse[i + q] += delta
            va, vb = _row_apply(minv_jt[i + q], delta, va, vb)
        points = 0
    elif kind >= MANIFOLD and friction:
        points = kind - MANIFOLD + 1
    else:
        points = 0
        r2, va, vb = _scalar_row(i, jacobian, minv_jt, inv_k, target, softness, lower, upper, impulse, va, vb, sor)
        total += r2
    for p in range(points):         # friction of each point first (bounded by the last normal
        # impulse), both rows from one v, then the disc; the exact normal block after it
        # (Box2D v2.4's order) takes out the tilt friction's sequence left
        n, t1, t2 = i + 3 * p, i + 3 * p - 2, i + 3 * p - 1
        lam1, lam2 = impulse[t1], impulse[t2]
        limit = mu[t1] * impulse[n]
        if limit == 0.0 and lam1 == 0.0 and lam2 == 0.0:
            # a point not pushing (a speculative one, a third of the pile's) or frictionless:
            # the disc is the origin, where λ_t stays and every r is in its normal cone
            continue
        r1 = _row_jv(jacobian[t1], va, vb) - target[t1] + softness[t1] * lam1
        r2 = _row_jv(jacobian[t2], va, vb) - target[t2] + softness[t2] * lam2
        new1, new2 = lam1 - sor * r1 * inv_k[t1], lam2 - sor * r2 * inv_k[t2]
        size = np.sqrt(new1 * new1 + new2 * new2)
        if size > limit:
            # at the rim only r's part along the rim (⊥ λ_t) counts, unless r points inward
            outward = -(r1 * new1 + r2 * new2) / size
            if outward > 0.0:
                r1 += outward * new1 / size
                r2 += outward * new2 / size
            new1, new2 = new1 * (limit / size), new2 * (limit / size)
        va, vb = _row_apply(minv_jt[t1], new1 - lam1, va, vb)
        va, vb = _row_apply(minv_jt[t2], new2 - lam2, va, vb)
        impulse[t1], impulse[t2] = new1, new2
        total += r1 * r1 + r2 * r2
    one_by_one = points == 1
    if points > 1:                  # normal rows of the manifold, as one block
        m = manifold[i]
        block_r2, va, vb = _manifold_normals(i, points, manifold_k[m], manifold_l[m], manifold_set, m, jacobian,
                                             minv_jt, target, softness, impulse, va, vb, sor, work)
        one_by_one = block_r2 < 0.0
        total += max(block_r2, 0.0)
    if one_by_one:
        for p in range(points):
            r2, va, vb = _scalar_row(i + 3 * p, jacobian, minv_jt, inv_k, target, softness, lower, upper, impulse,
                                     va, vb, sor)
            total += r2
    if a != dummy:
        for c in range(6):
            velocity[a, c] = va[c]
    if b != dummy:
        for c in range(6):
            velocity[b, c] = vb[c]
    return total


def _as(a, dtype):
    """`a` itself where it is a C-contiguous array of `dtype`, else its C-contiguous copy: numpy's
    `ascontiguousarray` returns a new view even then of an array numba made (the solver's rooms),
    and a bound call is found again only for the same objects."""
    if type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a, dtype)


# Views and bound calls a solver's buffers keep (`PreparedBuffers`, `SolveBuffers`) for the rows
# objects and counts they last met, at most: a sub-step's counts change with its contact points,
# and a scene whose count wanders makes new ones, until these are cleared.
VIEWS_KEPT = 32
# m/s (rad/s): a sweep whose residual ‖r‖ over its rows is this small ends its stage (`_pgs`): every
# row holds within it, and the sweeps left could move no body faster than that (the stack's top box
# drifts 2.6e-11 m in 10 s, where every sweep run left 1e-14 m). A robot or a stack at rest starts
# there and sweeps once (gymnasium's pusher at 3e-13 through its 20 sweeps, pybullet_data's r2d2 at
# 5e-18, cartpole at 2e-19, minitaur at 8e-12, the stack at 1e-15: their steps take 0.75 to 0.87 of
# the time); a moving scene's sweeps end far above it (the walking robots' at 1e-6 to 1e-1, a heavy
# wheel on a light steering knuckle's at 3e-3: Gauss–Seidel's slow convergence at a mass ratio),
# where nothing changes.
CONVERGED = 1e-10

# A sweep of fewer elements than this runs on the calling thread in the rows' own order (`halves`):
# two threads would cost more than such a sweep's rows (every shipped scene but the heaps).
PARALLEL_MIN = 128
# Rows from which a solve's effective masses are computed a half of them a thread (`_prepare_rows`):
# the 100 × 100 net's 59,400 rows took 2.0 ms a sub-step on one thread
SPLIT_ROWS = 3072


# m: `halves` splits the bodies by their centres on this grid, not by the centres themselves
HALVES_GRID = 0.01


def halves(centre, room=None):
    """(B,) int64 0 or 1: the solver bodies split in two halves by their centres (B, 3) along the
    axis of largest spread (the first half the lower coordinates; ties by body index), for
    `partition_elements`. The centres are taken on a 1 cm grid (HALVES_GRID) first, the spreads
    too (ties: the first axis), so that round-off cannot move a resting body to the other half:
    the pyramid spreads 4.5 m along x and along y and its middle column stands at x = 0, and split
    by the exact centres its halves changed in one step of five, up to 28 bodies at once. Each
    change reorders the sweep, and a sweep reordered at random steps rocked the pyramid at 10
    iterations about its base until it fell within 4 s; in the fixed orders tried it stands.
    `room`: (keys (B,), order (B,) int64, spare (B,) int64, side (B,) int64) to work in, the last
    returned (a solver's, kept), or None: arrays of its own."""
    centre = np.ascontiguousarray(centre, float)
    B = len(centre)
    keys, order, spare, side = (np.empty(B), np.empty(B, np.int64), np.empty(B, np.int64), np.empty(B, np.int64)) \
        if room is None else room
    _halves(centre, keys, order, spare, side)
    return side


@kernel
def _halves(centre, keys, order, spare, side):
    """`halves` into side (B,): the grid's spread per axis, then the stable order of the bodies by
    their grid coordinate on the widest, keys (B,) (`physics.containers.stable_order`, in order and
    spare)."""
    B = centre.shape[0]
    side[:] = 0
    if B <= 1:
        return
    widest, axis = -np.inf, 0
    for c in range(3):
        low, high = np.inf, -np.inf
        for b in range(B):
            g = np.rint(centre[b, c] / HALVES_GRID)
            low, high = min(low, g), max(high, g)
        if high - low > widest:     # (the first axis on ties, as np.argmax)
            widest, axis = high - low, c
    for b in range(B):
        keys[b] = np.rint(centre[b, axis] / HALVES_GRID)
    stable_order(keys, order, spare)
    for k in range(B // 2, B):
        side[order[k]] = 1


@kernel(refcounts=False)
def element_count(block):
    """How many elements rows of `Rows.block` (R,) make: the rows not IN_BLOCK (`partition_elements`)."""
    n = 0
    for i in range(block.shape[0]):
        n += block[i] != IN_BLOCK
    return n


class Partition(NamedTuple):
    """`_partition`'s working arrays and outputs, with room for as many elements as rows (or more)."""
    part: np.ndarray            # (≥ n,) int64 each element's part …
    rows: np.ndarray            # (≥ n,) int64 … and its row, in the order of `order`
    elements: np.ndarray        # (≥ n,) int64 the elements, part by part
    offsets: np.ndarray         # (4,) int64 part p is elements[offsets[p]:offsets[p + 1]]


@kernel
def partition_elements(order, block, body, side, friction):
    """The sweep's elements (the rows of `order` that start one: all of them with `friction` False,
    else those not IN_BLOCK) in three parts, each in the order of `order`: the elements whose
    dynamic bodies are all in half 0 of `side` (B,) (`halves`), those all in half 1, and the
    boundary, which touches both (static sides, −1, belong to either). The two halves share no
    dynamic body, so a sweep solves them at the same time, one on each core, and then the boundary
    (`_pgs`); the result is the same bits on one thread or two, since nothing one half reads is
    written by the other. With fewer than PARALLEL_MIN elements all of them are part 0, in the order
    of `order`. (Domain decomposition: one fork and join a sweep. Level scheduling — each element one
    level above the last earlier one sharing a body, levels solved in parallel — kept the serial
    order's bits but forked once a level: the settled 1,000-box heap had 55 levels, half its
    elements in levels too small to share, and its 156 forks a step each waited for a thread the
    shared machine had descheduled: 668 ms a step at 50 iterations under a load of 2.5.)
    Returns (elements, offsets (4,)): part p is elements[offsets[p]:offsets[p + 1]]."""
    n = order.size
    room = Partition(np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(4, np.int64))
    return room.elements[:_partition(order, block, body, side, friction, room)], room.offsets


@kernel
def _partition(order, block, body, side, friction, room):
    """`partition_elements` into `room` (`Partition`); -> n, the elements in room.elements[:n]."""
    part, rows, offsets = room.part, room.rows, room.offsets
    n = 0
    for k in range(order.size):
        n += not (friction and block[order[k]] == IN_BLOCK)
    parallel = n >= PARALLEL_MIN
    c0 = c1 = c2 = 0        # (scalars: a list would be allocated)
    n = 0
    for k in range(order.size):
        i = order[k]
        if friction and block[i] == IN_BLOCK:
            continue
        p = 0
        if parallel:
            a, b = body[i, 0], body[i, 1]
            pa = side[a] if a >= 0 else -1
            pb = side[b] if b >= 0 else -1
            p = pb if pa < 0 else pa if pb < 0 or pa == pb else 2
            p = max(p, 0)
        rows[n], part[n] = i, p
        if p == 0:
            c0 += 1
        elif p == 1:
            c1 += 1
        else:
            c2 += 1
        n += 1
    offsets[0], offsets[1], offsets[2], offsets[3] = 0, c0, c0 + c1, c0 + c1 + c2
    f0, f1, f2 = 0, c0, c0 + c1
    elements = room.elements
    for e in range(n):
        if part[e] == 0:
            elements[f0] = rows[e]
            f0 += 1
        elif part[e] == 1:
            elements[f1] = rows[e]
            f1 += 1
        else:
            elements[f2] = rows[e]
            f2 += 1
    return n


class SweepScratch(NamedTuple):
    """The sweeps' working arrays (`_pgs`, `_pgs_parallel`), kept with a solve's room (`SolveRoom`)."""
    element_r2: np.ndarray      # (elements or more,) each element's projected residual² of the sweep
    pad: np.ndarray             # (2, 64) a thread's scratch, 512 bytes apart: no cache line shared
    ipad: np.ndarray            # (2, 16) int64


def sweep_scratch(elements):
    """A `SweepScratch` with room for `elements` elements."""
    return SweepScratch(np.empty(elements), np.empty((2, 64)), np.empty((2, 16), np.int64))


@kernel(parallel=True)
def _pgs_parallel(s, elements, offsets, target, velocity, iterations, sor, friction, residual, scratch, stop):
    """Up to `iterations` PGS sweeps of the `RowSystem` s towards `target` (R,), in place on s.impulse (R,)
    and velocity (B + 1, 6), whose last row is the static dummy body (zero velocity; s.slot maps side
    −1 to it and that side's M⁻¹Jᵀ is zero, so no row branches on static sides); residual[k] =
    ‖projected r‖ seen during sweep k. The elements (rows starting a row, block or manifold) come in
    three parts (`partition_elements`: offsets (4,)): each sweep solves the two halves at the same
    time, one per thread (numba `prange`; on one thread one after the other, the same bits), each
    with its own scratch 512 bytes from the other's (sharing a cache line of scratch between the
    threads made two threads no faster than one), then the boundary on the calling thread. The
    static dummy body is read by both halves and never written. `Rows.block` says how a row is solved:
    SINGLE   on its own: λ ← clamp(λ − ω r / K, λ⁻, λ⁺);
    TRIPLE   with the next two rows as one block, Δλ = −ω K⁻¹ r with its 3×3 inverse effective
             mass (block Gauss–Seidel; a joint's point or orientation equalities);
    MANIFOLD + k − 1 (k = 1…4): the first normal row of a manifold of k contact points of two
             bodies (rows [t1, t2, n] per point): each point's two friction rows, bounded by the
             normal impulse as it stands, then the k normal rows as one block, exactly
             (`_manifold_normals`, s.manifold_k[s.manifold[i]] its k×k K), on the two bodies'
             velocities loaded once. Box2D v2.4's order (b2ContactSolver::SolveVelocityConstraints:
             friction first, "non-penetration is more important"): the exact block then removes the
             tilt the points' friction, applied one after another, left. Normal rows one by one,
             then friction (Box2D v3's b2SolveContact) drifted an aligned stack of ten 13 mm
             sideways in 10 s, and a box sliding at 8 m/s turned by up to 1e-6 rad (both round-off
             now);
    IN_BLOCK solved inside a block: not an element.
    Friction is a cone, not a pyramid: t1 and t2 take their steps from the same velocities, then
    the accumulated tangent impulse *vector* (λ₁, λ₂) is projected onto the disc |λ_t| ≤ μ λ_n and
    applied (Jolt's ContactConstraintManager::SolveVelocityConstraint); clamping each row to
    ±μ λ_n alone let a body sliding diagonally take √2 μ λ_n. (Solving t1 first and t2 on its
    result would see t1's unclamped overshoot and push sideways.) Its projected residual leaves out
    the outward part of r at the rim (the cone's normal cone), as a scalar row at a bound does.
    With `friction` False every element is one row solved on its own (the restitution stage's
    normal rows). Each element's residual² is kept apart and summed in element order, so the
    residual too is the same on any number of threads. `scratch`: a `SweepScratch` with room for the
    elements. The sweeps end after the first whose residual is `stop` or less (CONVERGED: every row
    holds within it; −1 never); returns how many there were."""
    element_r2, pad, ipad = scratch.element_r2[:elements.size], scratch.pad, scratch.ipad
    element_r2[:] = 0.0
    both = offsets[1] > offsets[0] and offsets[2] > offsets[1]
    for it in range(iterations):
        if both:
            for t in prange(2):
                _sweep_part(s, elements, offsets[t], offsets[t + 1], target, velocity, sor, friction, pad[t],
                            ipad[t], element_r2)
        _sweep_part(s, elements, offsets[2] if both else 0, elements.size, target, velocity, sor, friction, pad[0],
                    ipad[0], element_r2)       # the boundary (or everything)
        total = 0.0
        for k in range(elements.size):
            total += element_r2[k]
        residual[it] = np.sqrt(total)
        if residual[it] <= stop:
            return it + 1
    return iterations


@kernel
def _pgs(s, elements, offsets, target, velocity, iterations, sor, friction, residual, scratch, stop):
    """`_pgs_parallel` on the calling thread: the three parts one after the other, which is what
    the parallel sweep computes on one thread (the same bits). The sweep of every scene whose
    solver splits no halves (fewer than PARALLEL_MIN rows): numba's parallel region costs seconds
    of compile (its gufunc, the threading layer's wrappers, numba issue 8085) and a fork and join a
    sweep, which only a heap's sweep repays. `scratch`: a `SweepScratch` with room for the elements."""
    element_r2, pad, ipad = scratch.element_r2[:elements.size], scratch.pad, scratch.ipad
    element_r2[:] = 0.0
    for it in range(iterations):
        _sweep_part(s, elements, 0, elements.size, target, velocity, sor, friction, pad[0], ipad[0], element_r2)
        total = 0.0
        for k in range(elements.size):
            total += element_r2[k]
        residual[it] = np.sqrt(total)
        if residual[it] <= stop:
            return it + 1
    return iterations


@kernel(refcounts=False)
def _sweep_part(s, elements, start, stop, target, velocity, sor, friction, pad, ipad, element_r2):
    """One sweep of `_pgs` over elements[start:stop], in order, with the scratch pad (64,) and ipad
    (16,) of its thread; element_r2[k] ← element k's projected residual². Compiled once, outside
    the parallel region, so that the region's body is this one call (numba compiles a `prange`
    body as a function of its own), with `_element` inlined and without reference counts
    (physics.core.compiled, 6): every row's views of the Jacobian and M⁻¹Jᵀ cost two atomic operations
    each with them, and the heap's single-thread sweep took three times as long."""
    block, slot, jacobian, minv_jt, inv_k, impulse = s.block, s.slot, s.jacobian, s.minv_jt, s.inv_k, s.impulse
    inv_block, softness, mu, lower, upper = s.inv_block, s.softness, s.mu, s.lower, s.upper
    manifold, manifold_k, manifold_l, manifold_set = s.manifold, s.manifold_k, s.manifold_l, s.manifold_set
    dummy = velocity.shape[0] - 1
    r3 = pad[0:3]
    work = _ManifoldWork(pad[24:28], pad[32:36], pad[40:44], pad[48:52], ipad[0:4])
    for k in range(start, stop):
        element_r2[k] = _element(elements[k], block, slot, jacobian, minv_jt, inv_k, impulse, inv_block, softness,
                                 mu, lower, upper, manifold, manifold_k, manifold_l, manifold_set, target, velocity,
                                 dummy, sor, friction, r3, work)


@dataclass
class Prepared:
    """Rows plus their per-row constants: M⁻¹Jᵀ (R, 2, 6) and 1 / (J M⁻¹ Jᵀ + s) (R,)."""

    rows: Rows
    slot: np.ndarray            # (R, 2) rows.body with −1 (static) replaced by B, the dummy static body
    minv_jt: np.ndarray
    inv_k: np.ndarray
    inv_block: np.ndarray       # (R, 3, 3) at rows starting a block of 3: (J M⁻¹ Jᵀ + s)⁻¹ of the block (else unset)
    manifold: np.ndarray        # (R,) int64: at a manifold's first normal row, its index into manifold_k
    manifold_k: np.ndarray      # (manifolds, 4, 4): K_pq = J_p M⁻¹ J_qᵀ + s δ_pq of its k normal rows
    manifold_l: np.ndarray      # (manifolds, 2, 4, 4): Cholesky factors (`cholesky_factor`) of K's rows
                                # in two active sets, kept from sweep to sweep (`_try_active_set`)
    manifold_set: np.ndarray    # (manifolds, 3) int64: the set in each slot (bit p = row p; −1 = none)
                                # and the slot used last; at first every row in slot 0
    _system: "RowSystem" = field(default=None, repr=False, compare=False)     # (`system`)

    def system(self):
        """The `RowSystem` bundle of these rows (views of the same arrays: a sweep writes
        rows.impulse and the manifolds' factors in place), made once: a `Prepared` kept from
        sub-step to sub-step (`PreparedBuffers`) gives the same bundle, which a bound call keeps."""
        if self._system is not None:
            return self._system
        rows = self.rows
        block = _as(rows.block, np.int64)
        system = RowSystem(rows.body, self.slot, rows.jacobian, self.minv_jt, self.inv_k, self.inv_block, block,
                           self.manifold, self.manifold_k, self.manifold_l, self.manifold_set, rows.softness, rows.lower,
                           rows.upper, rows.mu, rows.impulse)
        if block is rows.block:     # (a copy would not follow the rows' blocks where they are written again)
            self._system = system
        return system


@kernel
def _effective_masses(body, jacobian, inverse_mass, inverse_inertia, softness, minv_jt, inv_k, first, last):
    """minv_jt[i, s] = M_s⁻¹ J_sᵀ (m⁻¹ J_lin, I⁻¹ J_ang) and inv_k[i] = 1 / (J M⁻¹ Jᵀ + s_i), per row
    i in first … last − 1 (each row writes its own: parts on threads give the same bits)."""
    for i in range(first, last):
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


@kernel
def _manifold_masses(block, jacobian, minv_jt, softness, manifold, manifold_k, manifold_l, manifold_set):
    """manifold_k[manifold[i]] = K of the normal rows i, i + 3, … of the manifold starting at row i
    (`_manifold_normals`), and manifold_l[manifold[i], 0] the Cholesky factor of K with all k rows
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
        L = manifold_l[manifold[i], 0]
        L[:k, :k] = K[:k, :k]
        _whiskered(L, k)
        manifold_set[manifold[i], 0] = (1 << k) - 1 if cholesky_factor(L, k) else -1


@kernel(refcounts=False)
def _block_inverses(body, jacobian, minv_jt, softness, block, inv_block, first, last):
    """inv_block[i] = K⁻¹ for every row i in first … last − 1 starting a block of 3:
    K_pq = J_(i+p) M⁻¹ J_(i+q)ᵀ + s δ_pq (symmetric positive definite for a joint on a dynamic
    body; zero if singular). K is built in inv_block[i] itself and inverted from there (no
    temporary: it allocates nothing); a block's rows past `last` are read, never written."""
    for i in range(first, last):
        if block[i] != TRIPLE:
            continue
        K = inv_block[i]
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
        i01 = (K[0, 2] * K[2, 1] - K[0, 1] * K[2, 2]) / det
        i11 = (K[0, 0] * K[2, 2] - K[0, 2] * K[2, 0]) / det
        i21 = (K[0, 1] * K[2, 0] - K[0, 0] * K[2, 1]) / det
        i02 = (K[0, 1] * K[1, 2] - K[0, 2] * K[1, 1]) / det
        i12 = (K[0, 2] * K[1, 0] - K[0, 0] * K[1, 2]) / det
        i22 = (K[0, 0] * K[1, 1] - K[0, 1] * K[1, 0]) / det
        inv_block[i, 0, 0], inv_block[i, 1, 0], inv_block[i, 2, 0] = c00 / det, c01 / det, c02 / det
        inv_block[i, 0, 1], inv_block[i, 1, 1], inv_block[i, 2, 1] = i01, i11, i21
        inv_block[i, 0, 2], inv_block[i, 1, 2], inv_block[i, 2, 2] = i02, i12, i22


class PreparedArrays(NamedTuple):
    """Room for `Prepared`'s arrays: the first R rows and the first manifolds of each are a
    sub-step's (`PreparedBuffers`), the rest unused."""
    slot: np.ndarray            # (rows, 2) int64
    minv_jt: np.ndarray         # (rows, 2, 6)
    inv_k: np.ndarray           # (rows,)
    inv_block: np.ndarray       # (rows, 3, 3)
    manifold: np.ndarray        # (rows,) int64
    manifold_k: np.ndarray      # (manifolds, 4, 4)
    manifold_l: np.ndarray      # (manifolds, 2, 4, 4)
    manifold_set: np.ndarray    # (manifolds, 3) int64


def prepared_arrays(rows, manifolds):
    """Empty `PreparedArrays` with room for `rows` rows and `manifolds` manifolds (each at least 1)."""
    rows, manifolds = max(rows, 1), max(manifolds, 1)
    return PreparedArrays(np.empty((rows, 2), np.int64), np.empty((rows, 2, 6)), np.empty(rows), np.empty((rows, 3, 3)),
                          np.empty(rows, np.int64), np.empty((manifolds, 4, 4)), np.empty((manifolds, 2, 4, 4)),
                          np.empty((manifolds, 3), np.int64))


@kernel(refcounts=False)
def _prepare_rows(body, jacobian, block, softness, inverse_mass, inverse_inertia_world, out, halves):
    """`Prepared`'s arrays (after `rows`) into the first rows and manifolds of `out`
    (`PreparedArrays`), in one compiled call: a step's fixed cost, not arithmetic, is what a small
    scene's solver spends its time on. -> the manifolds (2–4 points each), or −1 − that count where
    `out` has no room for the rows or for them (nothing written). `halves`: None, or (3,) int64
    room where the rows are many (SPLIT_ROWS): the effective masses and block inverses are then
    computed a half of the rows a thread (`_masses_halves`, `_block_inverses_halves`; the same
    bits on any number of threads); numba prunes the branch None does not take, so a smaller
    solve compiles no parallel region."""
    R, B = body.shape[0], inverse_mass.shape[0]
    count = 0
    for i in range(R):
        count += block[i] > MANIFOLD           # manifolds of 2–4 points (one point is exact on its own)
    if R > out.inv_k.shape[0] or count > out.manifold_k.shape[0]:
        return -1 - count
    minv_jt, inv_k, manifold = out.minv_jt[:R], out.inv_k[:R], out.manifold[:R]
    if halves is None:
        _effective_masses(body, jacobian, inverse_mass, inverse_inertia_world, softness, minv_jt, inv_k, 0, R)
    else:
        halves[0], halves[1], halves[2] = 0, R // 2, R
        _masses_halves(body, jacobian, inverse_mass, inverse_inertia_world, softness, minv_jt, inv_k, halves)
    blocked = False
    count = 0
    for i in range(R):
        blocked = blocked or block[i] == TRIPLE
        count += block[i] > MANIFOLD
        manifold[i] = count - 1
    if blocked:     # (read at the blocks' first rows only)
        if halves is None:
            _block_inverses(body, jacobian, minv_jt, softness, block, out.inv_block, 0, R)
        else:
            _block_inverses_halves(body, jacobian, minv_jt, softness, block, out.inv_block, halves)
    used = max(count, 1)
    manifold_k, manifold_l, manifold_set = out.manifold_k[:used], out.manifold_l[:used], out.manifold_set[:used]
    manifold_k[:] = 0.0
    manifold_l[:] = 0.0
    manifold_set[:] = -1
    manifold_set[:, 2] = 0      # slot 0 (the full set, below) counts as used last: a new set goes to slot 1
    if count:
        _manifold_masses(block, jacobian, minv_jt, softness, manifold, manifold_k, manifold_l, manifold_set)
    slot = out.slot
    for i in range(R):
        for side in range(2):
            slot[i, side] = body[i, side] if body[i, side] >= 0 else B
    return count


# The parallel regions of a large solve's effective masses, here beside their only caller
# (physics.core.compiled, 8), each thread's part a call of the serial kernel's own.

@kernel(parallel=True, refcounts=False)
def _masses_halves(body, jacobian, inverse_mass, inverse_inertia, softness, minv_jt, inv_k, halves):
    """`_effective_masses` of rows halves[0] … halves[1] − 1 and halves[1] … halves[2] − 1 at once."""
    for t in prange(2):
        _effective_masses(body, jacobian, inverse_mass, inverse_inertia, softness, minv_jt, inv_k, halves[t],
                          halves[t + 1])


@kernel(parallel=True, refcounts=False)
def _block_inverses_halves(body, jacobian, minv_jt, softness, block, inv_block, halves):
    """`_block_inverses` of the blocks starting in each half of the rows at once (a block's first
    row in one half may read rows of the other, written before: `_masses_halves`)."""
    for t in prange(2):
        _block_inverses(body, jacobian, minv_jt, softness, block, inv_block, halves[t], halves[t + 1])


class PreparedBuffers:
    """`PreparedArrays` kept from one `prepare` to the next (a solver's, for its sub-steps' rows),
    grown to twice what a sub-step needed where it had too little room: a sub-step that fits
    allocates nothing (the 400-link chain's 1,200 rows made 470 KiB of them a sub-step)."""

    def __init__(self):
        self.arrays = prepared_arrays(0, 0)
        self._views = Memo(VIEWS_KEPT)      # a `Prepared` by rows, counts and room (`prepared`)
        self.calls = SteadyCall(VIEWS_KEPT)   # `_prepare_rows`' calls (`_fill_prepared`)
        self.last = None    # the last bound call, what it was given and made (`prepare`: made again at once)
        # `_prepare_rows`' halves where its rows are SPLIT_ROWS or more and the process has two cores,
        # and the thread count their calls take (by measurement: physics.core.threads)
        self.halves = np.zeros(3, np.int64) if cores() > 1 else None
        self.threads = ThreadChoice()

    def halves_for(self, R):
        """`_prepare_rows`' halves for R rows: None below SPLIT_ROWS or on one core."""
        return self.halves if R >= SPLIT_ROWS else None

    def prepared(self, rows, R, used):
        """The `Prepared` of `rows` (R rows, `used` manifolds) over these arrays, made once for each
        rows object, count and room: a caller whose rows are views kept by count (the solver's)
        gets the same `Prepared` and `RowSystem` each sub-step, and a call bound to them
        (`SolveBuffers.stages_call`) types nothing. At most VIEWS_KEPT are kept."""
        out = self.arrays
        return self._views.find((rows, out), R, used) or self._views.get(partial(_prepared_views, rows, out, R, used),
                                                                          (rows, out), R, used)


def _given(value):
    """`value` itself (a `Memo` make of what is already made)."""
    return value


def _first(array, n):
    """The view of `array`'s first n rows."""
    return array[:n]


def prepare(rows, inverse_mass, inverse_inertia_world, buffers=None):
    """Effective masses of `rows` for bodies with inverse mass (B,) and inverse world inertia
    (B, 3, 3), I⁻¹_world = R diag(1/I) Rᵀ at the start of the step (one compiled pass): a `Prepared`
    whose arrays are views of `buffers` (`PreparedBuffers`, valid until its next prepare), or its own."""
    if buffers is not None:     # the last bound call made again where it is given what it was
        last = buffers.last
        if last is not None and last[0] is rows and last[1] is inverse_mass and last[2] is inverse_inertia_world \
                and last[3] is buffers.arrays and last[4] == generation() and last[5]() == last[6]:
            return last[7]
    R = len(rows)
    arguments = (_as(rows.body, np.int64), _as(rows.jacobian, float), _as(rows.block, np.int64),
                 _as(rows.softness, float), _as(inverse_mass, float), _as(inverse_inertia_world, float))
    out = buffers.arrays if buffers is not None else prepared_arrays(R, R // 3)
    count = _fill_prepared(arguments, out, buffers)
    if count < 0:       # no room: twice what this needs, never less than there was
        out = prepared_arrays(max(2 * R, len(out.inv_k)), max(2 * (-1 - count), len(out.manifold_k)))
        if buffers is not None:
            buffers.arrays = out
        count = _fill_prepared(arguments, out, buffers)
    used = max(count, 1)
    if buffers is None:
        return _prepared_views(rows, out, R, used)
    prepared = buffers.prepared(rows, R, used)
    halves = buffers.halves_for(R)
    call = buffers.calls.found(_prepare_rows, arguments + (out, halves), ())
    if call is not None and halves is not None:     # (made once a bound call: nothing made at each sub-step)
        call = partial(buffers.threads.run, R, call)
    buffers.last = None if call is None else (rows, inverse_mass, inverse_inertia_world, out, generation(), call, count,
                                              prepared)
    return prepared


def _fill_prepared(arguments, out, buffers):
    """`_prepare_rows(*arguments, out, halves)`, through a call `buffers` keeps bound to these arrays
    where there are buffers and they are steady (`PreparedBuffers.calls`, `physics.core.compiled.SteadyCall`:
    the rows' views kept by count make the same arguments each sub-step while the count stays), on
    the threads `buffers` chooses where its rows are split in halves (`PreparedBuffers.halves_for`)."""
    if buffers is None:
        return _prepare_rows(*arguments, out, None)
    R = len(arguments[0])
    halves = buffers.halves_for(R)
    arguments = arguments + (out, halves)      # (a copy made for a call is another object each time: never bound)
    if halves is None:
        return buffers.calls(_prepare_rows, arguments, (), arguments)
    return buffers.threads.run(R, buffers.calls.get(_prepare_rows, arguments, (), arguments))


def _prepared_views(rows, out, R, used):
    """The `Prepared` of `rows` whose arrays are the first R rows and `used` manifolds of `out`."""
    return Prepared(rows, out.slot[:R], out.minv_jt[:R], out.inv_k[:R], out.inv_block[:R], out.manifold[:R],
                    out.manifold_k[:used], out.manifold_l[:used], out.manifold_set[:used])


@kernel
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
        elements, offsets = partition_elements(order, np.ascontiguousarray(rows.block, np.int64),
                                               np.ascontiguousarray(rows.body, np.int64),
                                               np.zeros(len(velocity), np.int64), bool(friction))
        pgs = _pgs_parallel if offsets[1] > offsets[0] and offsets[2] > offsets[1] else _pgs
        pgs(prepared.system(), elements, offsets, np.ascontiguousarray(target), padded, iterations, float(sor),
            bool(friction), residual, sweep_scratch(len(elements)), -1.0)
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


class Targets(NamedTuple):
    """What each stage of `solve` aims J v at, per row (R,)."""

    solve: np.ndarray           # the solve stage's (bias, speculative margin, motor speed)
    relax: np.ndarray           # the relax stage's (bias removed)
    restitution: np.ndarray     # the rebound's for normal rows that may bounce, NaN elsewhere; or empty


class Stages(NamedTuple):
    """Which stages `solve` runs, and how long."""

    iterations: int             # PGS sweeps of the solve and restitution stages
    relax_iterations: int       # sweeps of the relax stage
    sor: float                  # the solve stage's SOR factor ω (relax and restitution use 1)
    warm: bool                  # warm start from the rows' impulses (else from zero)
    relax: bool                 # run the relax stage
    most: int                   # the solve stage goes on past `iterations`, up to this many sweeps,
    tolerance: float            # while its residual is above tolerance × the first sweep's
    fresh: bool                 # the relax stage starts afresh: from the free velocities, λ = 0, `iterations` sweeps


class SolveRoom(NamedTuple):
    """`solve`'s arrays, with room for B bodies and R rows or more (`solve_room`)."""
    padded: np.ndarray          # (B + 1, 6) the velocities and the static dummy body's zero
    velocity_solve: np.ndarray  # (B, 6) after the solve stage …
    velocity_relax: np.ndarray  # (B, 6) … and after the relax stage
    free: np.ndarray            # (B + 1, 6) the free velocities, for a relax stage that starts afresh
    side: np.ndarray            # (B,) int64 zeros: the halves of a solve that splits none
    order: np.ndarray           # (R,) int64 the rows in sweep order
    bounce_target: np.ndarray   # (R,) the restitution stage's targets
    partition: Partition        # (R,) the sweeps' elements (`_partition`)
    sweep: SweepScratch         # (R,) the sweeps' working arrays
    residual: np.ndarray        # (sweeps,) the solve stage's residual per sweep …
    spare: np.ndarray           # (sweeps,) … and the other stages' (not kept)


def solve_room(bodies, rows, sweeps=0):
    """An empty `SolveRoom` for `bodies` bodies, `rows` rows and `sweeps` sweeps a stage."""
    return SolveRoom(np.empty((bodies + 1, 6)), np.empty((bodies, 6)), np.empty((bodies, 6)),
                     np.empty((bodies + 1, 6)), np.zeros(bodies, np.int64), np.empty(rows, np.int64),
                     np.empty(rows), Partition(*(np.empty(rows, np.int64) for _ in range(3)), np.empty(4, np.int64)),
                     sweep_scratch(rows), np.empty(sweeps), np.empty(sweeps))


class SolveBuffers:
    """A `SolveRoom` kept from one `solve` to the next (a solver's, for its sub-steps), grown to twice
    what a solve needed where it had too little room: a solve that fits allocates nothing of the
    size of its bodies, rows or sweeps. The `Solution`'s velocities and residual are its views, valid
    until the next solve."""

    def __init__(self):
        self.arrays = solve_room(0, 0)
        self._views = Memo(VIEWS_KEPT)      # the solve's targets, stages and views (`stages_call`) …
        self._calls = SteadyCall(VIEWS_KEPT)     # … and its calls, bound to them where steady
        self._last = None       # the last bound solve, to make again (`again`, `keep`)

    def again(self, prepared, velocity, values):
        """The `Solution` of `solve` made again as the last bound one (`keep`), where its rows
        (`prepared`), free velocities and options (`values`) are the last one's, in the same room and
        kernels' generation: the velocities padded, the bound call, its views; else None."""
        last = self._last
        if last is None or last[0] is not prepared or last[1] is not velocity or last[2] != values \
                or last[3] is not self.arrays or last[4] != generation():
            return None
        padded = last[5]
        padded[:-1] = velocity
        padded[-1] = 0.0
        swept = last[6]()
        return last[8] if swept == last[7] else self.solution(len(velocity), swept)

    def keep(self, prepared, velocity, values, padded, call, swept, solution):
        """Keep this solve's bound `call` (over `padded`, the velocities' room) for `again`: not one
        typed through the kernel, which `stages_call` binds once it is steady."""
        self._last = None if typed(call) else (prepared, velocity, values, self.arrays, generation(), padded, call,
                                                 swept, solution)

    def room(self, bodies, rows, sweeps=0):
        """The kept room, grown first where it holds fewer than `bodies` bodies, `rows` rows or
        `sweeps` sweeps."""
        have = self.arrays
        if len(have.side) < bodies or len(have.order) < rows or len(have.residual) < sweeps:
            self.arrays = solve_room(max(2 * bodies, len(have.side)), max(2 * rows, len(have.order)),
                                     max(sweeps, len(have.residual)))
        return self.arrays

    def stages_call(self, kernel, prepared, stages, bodies, side):
        """`kernel(prepared.system(), targets, stages, padded, side, room)` (`_solve_stages` or its
        two-thread twin) as a call of no arguments in this room, for a solve without restitution
        targets: the targets of `prepared`'s rows, the padded velocities of `bodies` bodies, and
        `side` (B,) int64 or None (this room's zeros) are made once for each rows object, count
        and room, and `stages` (`Stages`) once for its values (physics.core.compiled.Memo), and
        the call is bound to them where they come back (`physics.core.compiled.SteadyCall`), so that a sub-step whose rows and counts are the last
        one's types no argument (the bundles' typing cost the ant's solve about 17 µs a sub-step),
        and one whose counts keep changing (a heap's) binds none. For rows whose targets and blocks are their
        own C-contiguous arrays (`solve` checks: a copy would not follow them)."""
        room = self.arrays
        rows = prepared.rows
        system = prepared.system()
        views = self._views
        # (each `find` first, and each `make` a partial made only where nothing is found: a lambda
        # would be an allocation of its own, and its closure's cells made at every call)
        objects = (rows, rows.target, rows.relax)
        targets = views.find(objects, "targets") or views.get(
            partial(Targets, rows.target, rows.relax, _NO_RESTITUTION), objects, "targets")
        stages = views.find((), "stages", stages) or views.get(partial(_given, stages), (), "stages", stages)
        padded = views.find((room,), "padded", bodies)
        if padded is None:
            padded = views.get(partial(_first, room.padded, bodies + 1), (room,), "padded", bodies)
        if side is None:
            side = views.find((room,), "side", bodies)
            if side is None:
                side = views.get(partial(_first, room.side, bodies), (room,), "side", bodies)
        objects = (system, targets, stages, padded, side, room)
        return self._calls.get(kernel, objects, (), objects)

    def solution(self, bodies, swept):
        """The `Solution` of a solve of `bodies` bodies that took `swept` solve sweeps in this room
        (`_solve_stages`): its views, the same object while the counts and the room stay."""
        room, views = self.arrays, self._views
        return views.find((room,), "solution", bodies, swept) or views.get(
            partial(Solution, room.velocity_solve[:bodies], room.velocity_relax[:bodies], room.residual[:swept],
                    room.padded[:bodies]), (room,), "solution", bodies, swept)


def solve(prepared, velocity, iterations=10, sor=1.0, warm=True, relax=True, relax_iterations=None,
          restitution=None, most=None, tolerance=0.0, side=None, fresh=False, buffers=None):
    """The stages warm start → solve → relax → restitution on the free velocities (B, 6).

    The solve stage sweeps `iterations` times, then on up to `most` sweeps (None: `iterations`)
    while its residual is above `tolerance` × its first sweep's: what a cold start needs
    (`physics.constraints.solver.COLD_START_SWEEPS`). Sweeps past `iterations` are the same sweeps, so a
    residual below the tolerance stops the stage with the bits it would have had anyway. Each stage
    ends sooner where a sweep's residual is CONVERGED (a scene at rest: its first sweep).

    `fresh`: the relax stage solves again from the free velocities with every λ at 0 (`iterations`
    sweeps) instead of going on from the solve stage's: the split impulse in full (Catto's, Bullet's),
    for steps where bodies are deep inside one another (`physics.constraints.solver.DEEP_OVERLAP`). Relaxing
    from the biased solution unwinds its impulses only as far as its few sweeps reach, and there
    they kept most of the push that separated ten coincident boxes (49 J -> 151 J in one step; a
    hundred: 490 J -> 50 kJ); sweeps of an inelastic solve from λ = 0 never add kinetic energy.

    `restitution`: (R,) target J v for the normal rows that may bounce (`SceneSolver`'s restitution
    targets, physics.constraints.constraints.restitution_targets), NaN elsewhere, or None; only rows holding an
    impulse after relax bounce. The rows' `impulse` ends holding λ (to store for the next warm start).
    `buffers`: a `SolveBuffers` whose room the solve works in (the `Solution`'s velocities are its
    views until its next solve), or None: arrays of its own."""
    # the last bound solve made again where everything it was given is the same (`SolveBuffers.again`)
    values = (iterations, sor, warm, relax, relax_iterations, most, tolerance, fresh)
    if buffers is not None and restitution is None and side is None:
        solution = buffers.again(prepared, velocity, values)
        if solution is not None:
            return solution
    if not isinstance(iterations, (int, np.integer)) or iterations < 0:
        raise ValueError(f"iterations: got {iterations!r}; expected an integer >= 0")
    if not 0.0 < sor < 2.0:
        raise ValueError(f"sor: got {sor!r}; expected 0 < sor < 2 (over-relaxation diverges at 2)")
    given, velocity = velocity, np.asarray(velocity, dtype=float)
    rows, B = prepared.rows, len(velocity)
    most = iterations if most is None else max(int(most), int(iterations))
    sweeps = max(most, int(iterations if relax_iterations is None else relax_iterations))
    room = solve_room(B, len(rows), sweeps) if buffers is None else buffers.room(B, len(rows), sweeps)
    padded = room.padded[:B + 1]      # + the static dummy body (`_pgs`)
    padded[:-1] = velocity
    padded[-1] = 0.0
    targets = Targets(_as(rows.target, float), _as(rows.relax, float),
                      _NO_RESTITUTION if restitution is None else np.ascontiguousarray(restitution, float))
    stages = Stages(int(iterations), int(iterations if relax_iterations is None else relax_iterations), float(sor),
                    bool(warm), bool(relax), most, float(tolerance), bool(fresh))
    # Without halves every sweep is one part: the serial sweep, and no parallel region to compile.
    # With halves on one thread (physics.core.threads' choice), the serial kernel sweeps the same three
    # parts in the same order (the same bits) without a parallel region to enter every sweep.
    parallel = side is not None and numba.get_num_threads() > 1
    stages_kernel = _solve_stages_parallel if parallel else _solve_stages
    if buffers is not None and restitution is None and targets.solve is rows.target and targets.relax is rows.relax \
            and prepared.system() is prepared._system:
        # (the same call, its arguments kept where they are the rows' own arrays: `stages_call`)
        call = buffers.stages_call(stages_kernel, prepared, stages, B, None if side is None else _as(side, np.int64))
        swept = call()
        solution = buffers.solution(B, swept)
        if side is None and velocity is given:
            buffers.keep(prepared, velocity, values, padded, call, swept, solution)
        return solution
    side = room.side[:B] if side is None else _as(side, np.int64)
    swept = stages_kernel(prepared.system(), targets, stages, padded, side, room)
    return Solution(room.velocity_solve[:B], room.velocity_relax[:B], room.residual[:swept], padded[:-1])


_NO_RESTITUTION = np.zeros(0)


@kernel(refcounts=False)
def _solve_stages(s, targets, stages, velocity, side, room):
    """`solve`'s stages in one compiled call on the `RowSystem` s, in place on velocity (B + 1, 6)
    (the last row the static dummy body) and s.impulse, in `room` (a `SolveRoom`): the residual of
    every solve sweep into room.residual, the velocities (B, 6) after the solve and after the relax
    stage into room.velocity_solve and room.velocity_relax; returns how many solve sweeps it took.
    `targets`: `Targets`, `stages`: `Stages`; `side` (B,): the bodies' halves
    (`partition_elements`). Sweeps on the calling thread (`_pgs`); `_solve_stages_parallel` is the
    same with the two-thread sweep. Compiled without reference counts: it allocates nothing and
    returns no array (its room's views are the caller's, `SolveBuffers.solution`)."""
    return _stages(s, targets, stages, velocity, side, _pgs, room)


@kernel(refcounts=False)
def _solve_stages_parallel(s, targets, stages, velocity, side, room):
    """`_solve_stages` with the sweep that solves the two halves on two threads (`_pgs_parallel`),
    for a solver that splits halves (`physics.constraints.solver`: PARALLEL_MIN rows or more)."""
    return _stages(s, targets, stages, velocity, side, _pgs_parallel, room)


def load_split_masses():
    """Take `_prepare_rows`' version for rows split in halves (`PreparedBuffers.halves_for`, with
    its parallel regions) into this process, compiled or from the cache, by preparing SPLIT_ROWS
    rows of one body: a heap's rows pass SPLIT_ROWS only once it has settled, so the warm-up loads
    it here (physics.tools.warmup), and the app never takes it inside a frame. Nothing where the
    process runs on one core (no rows are split then)."""
    if cores() < 2:
        return
    R = SPLIT_ROWS
    body = np.zeros((R, 2), np.int64)
    body[:, 1] = -1
    jacobian = np.zeros((R, 2, 6))
    jacobian[:, 0, 0] = 1.0
    zeros = np.zeros(R)
    prepare(Rows(body, jacobian, zeros, zeros, zeros, zeros, zeros, zeros, zeros), np.ones(1), np.eye(3)[None].copy(),
            PreparedBuffers())


def parallel_stages_loaded():
    """Whether this process holds a version of the two-thread stages (`_solve_stages_parallel`,
    compiled or loaded from the cache): a heap's warm-up steps until it does (physics.tools.warmup)."""
    return bool(_solve_stages_parallel.overloads)


@kernel(inline=True)
def _copy6(into, rows):
    """into[i, :] = rows[i, :] for each row i of `into` (N, 6), `rows` (N or more, 6): element by
    element, as a kernel without reference counts copies (an array's copy may allocate)."""
    for i in range(into.shape[0]):
        for c in range(6):
            into[i, c] = rows[i, c]


@kernel(inline=True)
def _stages(s, targets, stages, velocity, side, pgs, room):
    """The body of `_solve_stages`, with the sweep kernel `pgs` (`_pgs` or `_pgs_parallel`): inlined
    into each, so that each compiles the one sweep it calls."""
    R, B = s.body.shape[0], velocity.shape[0] - 1
    iterations, relax_iterations = stages.iterations, stages.relax_iterations
    impulse, restitution = s.impulse, targets.restitution
    residual = room.residual[:stages.most]
    residual[:] = 0.0
    velocity_solve, velocity_relax = room.velocity_solve[:B], room.velocity_relax[:B]
    if not stages.warm:
        impulse[:] = 0.0
    free = room.free[:B + 1]
    if stages.fresh:
        _copy6(free, velocity)
    _apply_impulses(s.body, s.minv_jt, impulse, velocity)
    order = room.order[:R]
    for i in range(R):
        order[i] = i
    partition = room.partition
    elements, offsets = partition.elements[:_partition(order, s.block, s.body, side, True, partition)], partition.offsets
    # (once for both stages)
    swept = 0
    if R and iterations:
        swept = pgs(s, elements, offsets, targets.solve, velocity, iterations, stages.sor, True, residual, room.sweep,
                    CONVERGED)
        # (sweeps stopped short of `iterations` ended at CONVERGED, and so does a cold start's)
        while swept < stages.most and residual[swept - 1] > stages.tolerance * residual[0] \
                and residual[swept - 1] > CONVERGED:
            pgs(s, elements, offsets, targets.solve, velocity, 1, stages.sor, True, residual[swept:swept + 1],
                room.sweep, CONVERGED)
            swept += 1
    residual = residual[:swept]
    _copy6(velocity_solve, velocity)
    if R and stages.relax and stages.fresh:
        _copy6(velocity, free)
        impulse[:] = 0.0
        pgs(s, elements, offsets, targets.relax, velocity, max(iterations, relax_iterations), 1.0, True,
            room.spare[:max(iterations, relax_iterations)], room.sweep, CONVERGED)
    elif R and stages.relax and relax_iterations:
        pgs(s, elements, offsets, targets.relax, velocity, relax_iterations, 1.0, True, room.spare[:relax_iterations],
            room.sweep, CONVERGED)
    _copy6(velocity_relax, velocity)
    # Box2D v3: only points that took an impulse bounce (a speculative point that never touched does not).
    bounce = 0
    for i in range(restitution.size):
        bounce += np.isfinite(restitution[i]) and impulse[i] > 0.0
    if bounce and iterations:
        order = room.order[:bounce]
        bounce_target = room.bounce_target[:R]
        bounce_target[:] = 0.0
        k = 0
        for i in range(R):
            if np.isfinite(restitution[i]):
                bounce_target[i] = restitution[i]
                if impulse[i] > 0.0:
                    order[k] = i
                    k += 1
        elements = partition.elements[:_partition(order, s.block, s.body, side, False, partition)]
        pgs(s, elements, offsets, bounce_target, velocity, iterations, 1.0, False, room.spare[:iterations], room.sweep,
            CONVERGED)
    return swept
