"""Constraint rows: contacts, Coulomb friction, joints — every one in the same row shape.

"The Mathematics of Havok's Solver", Part II §3 ("Constraints"; docs/references.md): a velocity
constraint J v = B on the bodies' world velocities v = (v_a, ω_a, v_b, ω_b); its impulse is Jᵀλ. Every
row here is one scalar constraint of that form, Box2D v3 style ("one shape for every constraint row",
src/revolute_joint.c, src/contact_solver.c):

    C        position error (m or rad), C = 0 (equality) or C ≥ 0 (inequality, λ ≥ 0)
    Ċ = J v  J = [J_a | J_b], each (linear (3), angular (3)), world frame
    target   the velocity J v the solve stage aims for (bias, speculative margin, motor speed)
    relax    the target of the relax stage (the bias removed, so position correction adds no energy)
    bounds   lower ≤ λ ≤ upper (accumulated impulse, N s or N m s); a contact point's friction
             rows are bounded by μ λ_normal of its normal row (rows [t1, t2, n] per point),
             updated as the solve goes

Conventions: all vectors world frame; a point's velocity is v + ω × r with r from the body's
centre of mass; body index −1 = static (the world, a fixed or a kinematic node — infinitely heavy,
its known surface velocity moved into the target).

Targets (where each piece comes from):
- equality C = 0: target = −β C / h, Baumgarte ("The Mathematics of Havok's Solver"
  §3.3.1, B = −β C) with β from ERP (§3.3.2): β = 1 − (1 − ERP)^(1/n), n = 1/h steps per second;
  relax target 0.
- inequality C ≥ 0 (contact, rope, joint limit): speculative when separated, target = −C / h
  (the gap may close within this step but no further; Catto, "Speculative contacts", GDC 2013 /
  Box2D v3 `b2PrepareContactsTask`), and −β (C + slop) / h when penetrating deeper than the slop
  (relax: −C/h when separated, else 0). A contact's penetrating target is at most the push speed
  (settings.max_contact_push_speed; Box2D v3's `maxBiasVelocity` = `contactPushMaxVelocity` in
  `b2PrepareContactsTask`, PhysX's max depenetration velocity): bodies that start inside one
  another separate at that speed, however deep, instead of being thrown apart.
- restitution (Box2D v3 `b2ApplyRestitutionTask`): after relax, normal rows with a prepare-time
  relative normal velocity vn₀ < −threshold and an impulse > 0 are solved again for the rebound
  velocity `restitution_targets` gives: −e × the velocity at the moment of contact (found from vn₀,
  the gap and the step's acceleration), expressed in the integrator's velocity.
- friction: two tangent rows per contact (Catto, "Iterative Dynamics with Temporal Coherence",
  2005) whose impulse vector is held in the Coulomb cone |(λ_t1, λ_t2)| ≤ μ λ_n by the solver
  (`physics.constraints.gauss_seidel`); a row's `lower`/`upper` are 0 here, its bound is `mu` × the impulse of
  its point's normal row (the third of the point's three rows).
- CFM (ODE's constraint force mixing): J v = target − (CFM/h) λ, i.e. `softness = CFM / h` added to
  the row's effective mass denominator.
"""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from physics.core.compiled import kernel

from physics.math.rotation_kernels import cross as cross3

# Rows.block: how the Gauss–Seidel sweep (physics.constraints.gauss_seidel) visits a row.
IN_BLOCK = 0        # solved inside the block that starts at an earlier row: skipped
SINGLE = 1          # on its own
TRIPLE = 3          # with the next two rows as one 3×3 block (a joint's point or orientation equalities)
MANIFOLD = 4        # MANIFOLD + k − 1: the first normal row of k ≤ 4 contact points of the same two
                    #   bodies, solved together with their friction rows
INF = np.inf
SLOP = 0.00005      # m: contact penetration left uncorrected (Box2D's linear slop, scaled: a stack of
                    # n boxes settles up to n slops deep after its cold start, and ten must sink ≤ 1 mm)
BOUNCE_THRESHOLD = 1.0   # m/s: slower approaches do not bounce (Box2D v3's restitution threshold)


def beta_from_erp(erp, h):
    """Baumgarte β per step from ERP, the error fraction removed per second
    ("The Mathematics of Havok's Solver" §3.3.2):
    (1 − ERP) C₀ = (1 − β)ⁿ C₀ with n = 1/h, so β = 1 − (1 − ERP)^h."""
    if not 0.0 <= erp < 1.0 or not h > 0.0:
        raise ValueError(f"beta_from_erp: got erp={erp!r}, h={h!r}; expected 0 <= erp < 1 and h > 0")
    return 1.0 - (1.0 - erp) ** h


@dataclass
class Rows:
    """R constraint rows (module docstring). `impulse` is the accumulated λ (warm start in, result out)."""

    body: np.ndarray            # (R, 2) int64 solver body of side a, b (−1 = static)
    jacobian: np.ndarray        # (R, 2, 6) [lin, ang] per side
    target: np.ndarray          # (R,) solve-stage J v target, m/s or rad/s
    relax: np.ndarray           # (R,) relax-stage target
    lower: np.ndarray           # (R,)
    upper: np.ndarray           # (R,)
    softness: np.ndarray        # (R,) CFM / h
    mu: np.ndarray              # (R,) friction coefficient of a friction row
    impulse: np.ndarray         # (R,) accumulated λ
    block: np.ndarray = None    # (R,) int64: TRIPLE = this row and the next two are solved together (a
                                #   joint's point or orientation rows, equalities), MANIFOLD + k − 1 =
                                #   the first normal row of k consecutive contact points of two bodies,
                                #   solved with their friction rows, IN_BLOCK = inside such a block,
                                #   SINGLE = a row on its own (the default)

    def __post_init__(self):
        if self.block is None:
            self.block = np.full(len(self.target), SINGLE, np.int64)

    def __len__(self):
        return len(self.target)

    @staticmethod
    def empty():
        return Rows(np.zeros((0, 2), np.int64), np.zeros((0, 2, 6)), *(np.zeros(0) for _ in range(7)))


def tangent_basis(normal):
    """Two unit tangents (t1, t2) with (n, t1, t2) right-handed; a fixed function of n, so a
    contact's friction directions — and its warm-started friction impulses — persist across steps
    (Duff et al., "Building an Orthonormal Basis, Revisited", 2017)."""
    n = np.asarray(normal, float)
    sign = np.where(n[..., 2] >= 0.0, 1.0, -1.0)
    a = -1.0 / (sign + n[..., 2])
    b = n[..., 0] * n[..., 1] * a
    t1 = np.stack([1.0 + sign * n[..., 0] ** 2 * a, sign * b, -sign * n[..., 0]], axis=-1)
    t2 = np.stack([b, sign + n[..., 1] ** 2 * a, -n[..., 1]], axis=-1)
    return t1, t2


class ContactInput(NamedTuple):
    """M contact points as `fill_contact_rows` reads them, world frame."""

    point: np.ndarray           # (M, 3)
    normal: np.ndarray          # (M, 3) from a to b
    depth: np.ndarray           # (M,) > 0 penetrating
    body: np.ndarray            # (M, 2) int64 solver bodies (−1 static)
    static_velocity: np.ndarray  # (M, 2, 3) surface velocity of a static side at the point
    mu: np.ndarray              # (M,) friction coefficient
    restitution: np.ndarray     # (M,)
    warm: np.ndarray            # (M, 3) stored (normal, t1, t2) impulses


class BodyMotion(NamedTuple):
    """The solver bodies (B,) at the start of the step."""

    centre: np.ndarray          # (B, 3) centre of mass, world
    velocity: np.ndarray        # (B, 6) [v, ω] world


class ContactConstants(NamedTuple):
    """The step's constants for the contact rows."""

    h: float                    # s, the (sub-)step
    beta: float                 # Baumgarte factor per step
    slop: float                 # m, penetration left uncorrected
    threshold: float            # m/s, slower approaches do not bounce
    softness: float             # CFM / h
    push: float                 # m/s, the largest position-correction target (settings.max_contact_push_speed)


class RowArrays(NamedTuple):
    """`Rows`' arrays in its field order (R rows), for compiled code: `Rows(*arrays)`."""

    body: np.ndarray
    jacobian: np.ndarray
    target: np.ndarray
    relax: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    softness: np.ndarray
    mu: np.ndarray
    impulse: np.ndarray
    block: np.ndarray


class PointBounce(NamedTuple):
    """Per contact point (M,): what the restitution stage reads (`contact_rows`)."""

    approach: np.ndarray        # vn₀ where the point may bounce, NaN elsewhere
    static_normal: np.ndarray   # the normal part of the static sides' surface velocity


@kernel
def empty_row_arrays(R):
    """`RowArrays` for R rows, uninitialised (`fill_contact_rows` writes every entry)."""
    return RowArrays(np.empty((R, 2), np.int64), np.empty((R, 2, 6)), np.empty(R), np.empty(R), np.empty(R),
                     np.empty(R), np.empty(R), np.empty(R), np.empty(R), np.empty(R, np.int64))


@kernel(refcounts=False)
def fill_contact_rows(points, bodies, constants, rows, out):
    """One pass over the M contact points of `points` (`ContactInput`) writing their 3 rows each
    into `rows` (`RowArrays`, 3M) and their bounce data into `out` (`PointBounce`, M)
    (`contact_rows`); `bodies`: `BodyMotion`, `constants`: `ContactConstants`. No temporaries: it
    allocates nothing."""
    point, normal, depth, body = points.point, points.normal, points.depth, points.body
    static_velocity, mu, restitution, warm = points.static_velocity, points.mu, points.restitution, points.warm
    centre, velocity = bodies.centre, bodies.velocity
    h, beta, slop, threshold, softness, push = constants
    row_body, jacobian, target, relax, lower, upper, soft, row_mu, impulse, block = rows
    bounce, static_normal = out.approach, out.static_normal
    first, points_in = 0, 0
    # (each point's directions, velocities and static part in scalars and tuples, not small arrays:
    # numba's runtime would allocate them at every call, which tracemalloc counts in the step)
    for m in range(depth.size):
        n0, n1, n2 = normal[m, 0], normal[m, 1], normal[m, 2]
        # tangent_basis (Duff et al. 2017), inlined
        sign = 1.0 if n2 >= 0.0 else -1.0
        a = -1.0 / (sign + n2)
        b = n0 * n1 * a
        d0 = (1.0 + sign * n0 * n0 * a, sign * b, -sign * n0)     # rows: t1, t2, n
        d1 = (b, sign + n1 * n1 * a, -n1)
        d2 = (n0, n1, n2)
        v0, v1, v2 = 0.0, 0.0, 0.0      # relative point velocity b − a at the start of the step
        s0, s1, s2 = 0.0, 0.0, 0.0      # its part from static sides (moved into the targets)
        for side in range(2):
            k = body[m, side]
            sgn = -1.0 if side == 0 else 1.0
            if k >= 0:
                r = (point[m, 0] - centre[k, 0], point[m, 1] - centre[k, 1], point[m, 2] - centre[k, 2])
                w_x_r = cross3((velocity[k, 3], velocity[k, 4], velocity[k, 5]), r)
                v0 += sgn * (velocity[k, 0] + w_x_r[0])
                v1 += sgn * (velocity[k, 1] + w_x_r[1])
                v2 += sgn * (velocity[k, 2] + w_x_r[2])
                for row in range(3):
                    i = 3 * m + row
                    u = d0 if row == 0 else (d1 if row == 1 else d2)
                    ru = cross3(r, u)
                    jacobian[i, side, 0], jacobian[i, side, 1], jacobian[i, side, 2] = sgn * u[0], sgn * u[1], sgn * u[2]
                    jacobian[i, side, 3], jacobian[i, side, 4], jacobian[i, side, 5] = sgn * ru[0], sgn * ru[1], sgn * ru[2]
            else:
                v0 += sgn * static_velocity[m, side, 0]
                v1 += sgn * static_velocity[m, side, 1]
                v2 += sgn * static_velocity[m, side, 2]
                s0 += sgn * static_velocity[m, side, 0]
                s1 += sgn * static_velocity[m, side, 1]
                s2 += sgn * static_velocity[m, side, 2]
                for row in range(3):
                    for c in range(6):
                        jacobian[3 * m + row, side, c] = 0.0
        C = -depth[m]
        if C > 0.0:     # separated: speculative, the gap may close within this step but no further
            solve_n, relax_n = -C / h, -C / h
        else:           # penetrating: Baumgarte on the depth beyond the slop, at most the push speed
            solve_n, relax_n = min(-beta * min(C + slop, 0.0) / h, push), 0.0
        for row in range(3):
            i = 3 * m + row
            u = d0 if row == 0 else (d1 if row == 1 else d2)
            static_part = u[0] * s0 + u[1] * s1 + u[2] * s2
            row_body[i, 0], row_body[i, 1] = body[m, 0], body[m, 1]
            target[i] = (solve_n if row == 2 else 0.0) - static_part
            relax[i] = (relax_n if row == 2 else 0.0) - static_part
            lower[i] = 0.0
            upper[i] = INF if row == 2 else 0.0
            soft[i] = softness
            block[i] = IN_BLOCK
            row_mu[i] = mu[m]
        impulse[3 * m], impulse[3 * m + 1], impulse[3 * m + 2] = warm[m, 1], warm[m, 2], warm[m, 0]
        vn0 = n0 * v0 + n1 * v1 + n2 * v2
        static_normal[m] = n0 * s0 + n1 * s1 + n2 * s2
        bounce[m] = vn0 if vn0 < -threshold and restitution[m] > 0.0 else np.nan
        # Consecutive points of the same two bodies form a manifold (at most 4), marked on its first normal row.
        if m > 0 and body[m, 0] == body[m - 1, 0] and body[m, 1] == body[m - 1, 1] and points_in < 4:
            points_in += 1
        else:
            first, points_in = 3 * m + 2, 1
        block[first] = MANIFOLD + points_in - 1


def contact_rows(point, normal, depth, body, centre, velocity, static_velocity, mu, restitution, warm,
                 h, beta, slop=SLOP, threshold=BOUNCE_THRESHOLD, softness=0.0, push=INF):
    """Rows for M contact points: per point [t1, t2, n] (row 3m + 2 is point m's normal row; the
    solver visits a manifold at its first normal row: friction, then the normal rows as a block,
    `physics.constraints.gauss_seidel`).

    point, normal (a→b) (M,3), depth (M,) (> 0 penetrating); body (M,2) solver bodies (−1 static);
    centre (B,3) bodies' centres of mass; velocity (B,6) [v, ω] at the start of the step;
    static_velocity (M,2,3) the surface velocity of static sides (kinematic nodes) at the point;
    mu, restitution (M,); warm (M,3) stored (normal, t1, t2) impulses; push (m/s): the largest
    position-correction target of a penetrating point (module docstring).
    Returns (rows, approach (M,), static_normal (M,)): approach = the relative normal velocity vn₀
    at the start of the step where the point may bounce (vn₀ < −threshold, e > 0), NaN elsewhere
    (`restitution_targets` turns it into the restitution stage's target); static_normal = the normal
    part of the static sides' surface velocity, which J v leaves out.
    One compiled pass (`fill_contact_rows`): the pile's 6k points cost no numpy temporaries.
    """
    M = len(depth)
    if M == 0:
        return Rows.empty(), np.zeros(0), np.zeros(0)
    def f(x, shape):     # float64, C-contiguous, `shape` (broadcast only when it is not already)
        if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == shape and x.flags.c_contiguous:
            return x
        x = np.asarray(x, float)
        return np.ascontiguousarray(x if x.shape == shape else np.broadcast_to(x, shape))
    arrays, out = empty_row_arrays(3 * M), PointBounce(np.empty(M), np.empty(M))
    fill_contact_rows(ContactInput(f(point, (M, 3)), f(normal, (M, 3)), f(depth, (M,)), np.ascontiguousarray(body, np.int64),
                                   f(static_velocity, (M, 2, 3)), f(mu, (M,)), f(restitution, (M,)), f(warm, (M, 3))),
                      BodyMotion(f(centre, np.shape(centre)), f(velocity, np.shape(velocity))),
                      ContactConstants(float(h), float(beta), float(slop), float(threshold), float(softness),
                                       float(push)), arrays, out)
    return Rows(*arrays), out.approach, out.static_normal


def restitution_targets(approach, free, gap, restitution, h, fraction):
    """The restitution stage's target relative normal velocity (…,) for points that bounce.

    approach: vn₀, the relative normal velocity at the start of the step (prepare time, Box2D v3's
    `relativeVelocity`); free: the same after the free step (gravity and forces, no contacts), so
    a = (free − approach)/h is the normal relative acceleration; gap: C = −depth at the start;
    restitution e; fraction f = how much of the end-of-step velocity the integrator's position
    update sees (1 for semi-implicit Euler, ½ for constant-force schemes; see
    `physics.core.choices.INTEGRATOR_TRAITS` (position_fraction)).

    The velocity a scheme carries is the true velocity at time t − (f − ½) h against its positions
    (semi-implicit Euler is leapfrog: its v is the mean velocity over the step just taken), so the
    true normal velocity at the start-of-step position is u₀ = vn₀ + (f − ½) a h. Between steps the
    gap closes under constant a, meeting the surface at u_c = −√(u₀² − 2 a C) (energy, exact for
    constant a); Newton's law of restitution leaves it at u⁺ = −e u_c. The solve stage ends the step
    at the surface (speculative target −C/h), so the carried velocity that stands for u⁺ there is

        target = u⁺ − (f − ½) a h

    — after which leapfrog traces the rebound parabola exactly: the apex is e² × the drop height at
    any step size (the start-of-step vn₀ alone gave 0.239 at h = 1/240 and 0.213 at 1/60 for e = ½).
    Newton's restitution law: Stronge, "Impact Mechanics", 2000, ch. 1."""
    approach, free, gap = (np.asarray(x, float) for x in (approach, free, gap))
    lag = (fraction - 0.5) * (free - approach)          # (f − ½) a h
    u_start = approach + lag
    impact_squared = u_start ** 2 - 2.0 * (free - approach) / h * np.maximum(gap, 0.0)
    u_impact = -np.sqrt(np.maximum(impact_squared, 0.0))
    return -np.asarray(restitution, float) * u_impact - lag
