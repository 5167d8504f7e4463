"""The contact pipeline: a scene's solver stage, from shapes and joints to impulses and back.

`SceneSolver` runs the step's stages (Box2D v3 `b2SolverStage`, src/solver.c) over arrays:
  prepare        broad phase (physics.collision.broadphase), narrow phase (physics.collision.collision), the contact
                 points that can touch this step (speculative contacts), their rows and the joints'
                 (physics.constraints.constraints) at the start-of-step poses, effective masses
                 (physics.constraints.gauss_seidel.prepare); sleeping bodies an awake body reaches wake
                 (physics.dynamics.sleeping)
  integrate velocities, integrate positions — the Simulation's integrator (free motion)
  warm start, solve, relax, restitution — projected Gauss–Seidel (physics.constraints.gauss_seidel.solve); a
                 cold start sweeps on until converged (COLD_START_SWEEPS)
  store          impulses λ back to the contact cache and joints for the next warm start
  post-stabilize the joints' position error projected out after the step (SHAKE)

The arithmetic of the Gauss–Seidel sweep lives in physics.constraints.gauss_seidel ("The Mathematics of Havok's
Solver", "Projected Gauss-Seidel with S.O.R"); `prepare`, `warm_start`, `sweep`, `solve`, `Prepared`
and `Solution` are its. Conventions: B solver bodies (the Simulation's dynamic
slots), velocities (B, 6) [v, ω] world frame; the compiled contact kernels take named bundles
(`ContactPoints`, `SolverBodies`, `NodeMotion`, ...).
"""
import math
import operator
from functools import cached_property, partial
from typing import NamedTuple

import numpy as np
from numba import prange
from physics.core.compiled import Memo, SteadyCall, bind, binding, generation, kernel, same, typed

from physics.core import profile
from physics.collision.broadphase import TooManyPairs, brute_force, candidate_pairs, collision_filter, grid_capacity, \
    grid_entries, grid_pairs, grid_scratch, overlapping
from physics.collision.collision import contacts, no_pairs, whole_room
from physics.collision.manifold import ContactCache, StoredImpulses, lookup_impulses
from physics.constraints.constraints import BOUNCE_THRESHOLD, SLOP, BodyMotion, ContactConstants, ContactInput, PointBounce, Rows, \
    RowArrays, beta_from_erp, empty_row_arrays, fill_contact_rows, restitution_targets
from physics.constraints.joints import ACTUATED, DRIVE, LIMIT, ROPE, ROWS_PER_JOINT, SIX_AXIS, SPRING, Joints, \
    coordinate_inverse_inertia, coordinate_rates, count_joint_rows, fill_joint_rows, fill_joint_terms, fill_limit_slack, \
    follow_turns, joint_geometry, stability_inertia
from physics.constraints.gauss_seidel import PARALLEL_MIN, VIEWS_KEPT, Prepared, PreparedBuffers, SolveBuffers, \
    element_count, halves, prepare, solve, sweep
from physics.core.threads import ThreadChoice, cores
from physics.constraints.joint_graph import JOINT_CLIQUE_COST_MAX, clique_cost, forest
from physics.constraints.rattle import NEVER, JointBodies, hold_contacts, no_holds, pressed_in
from physics.math.rotation_kernels import cross, load3, load33, solve3
from physics.model.shapes import BOX, CAPSULE, CYLINDER, SPHERE, ShapeSet, aabbs, place, placing
from physics.dynamics.body_passes import split_impulse_changes, turn_rows
from physics.dynamics.integrators import TRIPLE_JUMP
from physics.dynamics.sleeping import ShapeRest, awake_pairs, touch_flags, wake_touched
from physics.constraints.solver_state import SolverState

POST_STABILIZATION = 3  # projection rounds for the joints after the step (0 = Baumgarte only)
# Joints from which a sub-step's joint start (`_joint_start`: their geometry and rows) is written
# a half of them a thread: the 100 × 100 net's 19,802 ball joints took 4.3 ms on one thread
SPLIT_JOINTS = 1024
# The joints' starts kept, each bound to its sub-step's length (`SceneSolver._start_joints`): a
# sub-step's and its retry's halves' (and theirs), so that a retry binds nothing again
START_CALLS = 4
SPECULATIVE = 0.002   # m: contacts kept this far apart beyond what can close in a step (4 slops, Box2D v3)
# The contact budget: a step whose broad phase finds more candidate pairs than this is refused
# (ContactBudgetError) rather than spending minutes in the narrow phase and the solver: 2,000
# coincident boxes make 2 M pairs. The 1,000-box pile, the largest shipped heap, needs about 6,000.
PAIR_BUDGET = 200_000
# Sweeps of the relax stage (at most the solve stage's): Box2D v3 relaxes once per sub-step. The
# relax stage only takes the bias velocity back out of the solved velocities, which a warm-started
# system mostly already has; the stack of ten stands at 10 iterations with 2 or 3 (with 1 it
# topples) and the heap keeps its penetration, at two thirds of the sweeps of relaxing as long as solving.
RELAX_ITERATIONS = 3
# A cold start: when most of a step's touching points have no impulse to warm start from (a scene's
# first step with boxes placed resting on each other, a layer landing at once), PGS's `iterations`
# sweeps carry a load only a few contacts down a column: the stack of ten at rest sank 10.5 mm in
# its first steps at 10 iterations and took a second to climb back. Such a step's solve stage
# sweeps on, up to COLD_START_SWEEPS, until its residual is COLD_START_TOLERANCE of its first
# sweep's (the stack: about 260 sweeps of its 40 points, once; it then sinks 0.1 mm). Steps that
# warm start from most of their points keep `iterations`; so does a scene whose warm start is off.
COLD_START_SWEEPS = 500
# Deep overlaps: in a step with a contact point deeper than DEEP_OVERLAP whose relaxed velocities
# hold more kinetic energy than the free ones (by GAIN_TOLERANCE: contacts without restitution
# only take energy out, so a gain is bias the relax stage left in), the solve is done again with
# the relax stage started afresh from the free velocities (physics.constraints.gauss_seidel.solve, `fresh`).
# Bodies placed inside one another are pushed apart by the solve stage's bias, which the relax
# stage must take back out of the velocities; RELAX_ITERATIONS sweeps from the biased solution left
# most of it in (ten coincident boxes: 49 J -> 151 J in the first step). A settling heap has points
# over a centimetre deep in one step of five (the 64-box heap, 6 cm on landing), where relaxing
# afresh every time sank its boxes 22 mm instead of 4: the energy test keeps those steps warm.
DEEP_OVERLAP = 0.01         # m
GAIN_TOLERANCE = 1e-6       # relative
# Overlaps at the start (`SceneSolver.overlaps`, reported by physics.pipeline.simulation at load): shapes
# deeper in one another than this are counted; touching surfaces written with rounded decimals meet
# well within it (the shipped scenes' deepest start overlap is 1e-9 m).
OVERLAP_TOLERANCE = 1e-3    # m
SUNK_CALLS = 4              # `sunk`'s bound calls kept (the narrow phase's two sets of points, a retry's)
CONTACT_CALLS = 32          # the contact stage's bundles and bound calls kept at most (`SceneSolver._contact_call`)
# More pairs than this overlapping at load refuse the scene (physics.pipeline.simulation.OverlapError): 630
# coincident boxes (198,135 pairs) took 31 s a step; a scene built with care has none, and the
# heaviest shipped heap (the 1,000-box pile) has about 6,000 candidate pairs, none overlapping.
OVERLAP_BUDGET = 10_000
COLD_START_TOLERANCE = 1e-3
# A limit far from its bound leaves a sub-step to RATTLE's projections alone (`_projections_alone`):
# its gap must hold LIMIT_REACH sub-steps of the coordinate's start rate and LIMIT_ACCELERATION h²
# besides (rad/s² or m/s²), what a coordinate at rest gains in the sub-step: gravity turns a link of
# lever r at g/r, 400 rad/s² at 2.5 cm, and its free velocities do not show it (the turn comes
# through the joint's point rows, which the solve or the projection would take). One crossed all
# the same is an inequality of RATTLE's projections, taken where it is violated: stepped right,
# only not bit for bit as the solved step
LIMIT_REACH = 4.0
LIMIT_ACCELERATION = 400.0
# Sinking (`SceneSolver.sunk`, raised by `physics.pipeline.stages.stage_prepare` as a `PenetrationError`): a dynamic
# shape deeper inside a static or kinematic one than SINK_SIZES times its own size (the diameter of
# its bounding sphere) is going through that surface: no contact solve brings it back, and a run
# that goes on shows a body under the ground. A step too long or a solver too weak for the contact
# does it (the car at dt 0.5 s with sor 1e-10 sank its cargo 670 m in 60 steps), and so does a light
# body under a heavy one past what the sweeps hold (`MASS_RATIO_HELD`: a 1e-6 kg box under a 1 kg
# one is pushed wholly into the ground, 0.58 of its size, where a whole size was never reached). The
# shipped scenes at their settings stay below 0.05 of a shape's size (the turntable's pucks), the
# 1,000-box pile below 0.09 (its boxes landing).
SINK_SIZES = 0.5
# The heaviest body a light one carries in contact that the sweeps hold at the default settings: a
# box under one 100 times heavier rests at the default 10 iterations, under one 300 times heavier it
# sinks (tests/test_overlaps.py). A `PenetrationError` names such a pair as its likely cause.
MASS_RATIO_HELD = 100.0
# Past that ratio a light body sinks where it rests, yet short of SINK_SIZES: a 0.2 m box under one
# 200 times heavier settles 0.10 of its size into the ground, 300 times 0.15, 500 times 0.27 (at
# 100 times 1e-4). A body under one more than MASS_RATIO_HELD times heavier, touching it, is reported from
# this depth on; the deepest unpressed shape of the shipped scenes, a box of the pile landing, stays
# below 0.09.
SINK_SIZES_PRESSED = 0.1


def bounding_diameters(shapes):
    """(S,) m, each shape's size in its node's units: the diameter of its bounding sphere about its
    centre (sphere 2r, box 2|h| with h its half extents, capsule 2(r + h/2), cylinder
    2 sqrt(r² + (h/2)²)); a plane, unbounded, +inf."""
    params = shapes.params
    size = np.full(len(shapes), np.inf)
    for kind, diameter in ((SPHERE, 2.0 * params[:, 0]), (BOX, 2.0 * np.sqrt(np.einsum("si,si->s", params[:, :3], params[:, :3]))),
                           (CAPSULE, 2.0 * (params[:, 0] + params[:, 1])), (CYLINDER, 2.0 * np.hypot(params[:, 0], params[:, 1]))):
        size = np.where(shapes.kind == kind, diameter, size)
    return size


@kernel(refcounts=False)
def _deepest_sunk(shape_a, shape_b, depth, normal, shape_body, shape_node, size, scale, sizes, inverse_mass, up,
                  sizes_pressed, pressed):
    """Of the contact points whose dynamic shape is deeper than its bound inside a shape of no
    solver body (static or kinematic), the deepest relative to its size (`size` × its node's world
    `scale`), else −1. The bound is `sizes` of its size (SINK_SIZES), or `sizes_pressed`
    (SINK_SIZES_PRESSED) for a body pressed by one more than MASS_RATIO_HELD times heavier: touching
    it with that body above it (the contact `normal`, a to b, within 60° of `up`, the unit vector
    against gravity; `inverse_mass` (B,) per solver body; `pressed` (B,) bool, scratch). A non-finite
    depth is never picked (the divergence check names it)."""
    pressed[:] = False
    for k in range(depth.shape[0]):
        a, b = shape_body[shape_a[k]], shape_body[shape_b[k]]
        if a >= 0 and b >= 0 and inverse_mass[a] > 0.0 and inverse_mass[b] > 0.0:
            rise = normal[k, 0] * up[0] + normal[k, 1] * up[1] + normal[k, 2] * up[2]    # b above a
            if inverse_mass[a] > MASS_RATIO_HELD * inverse_mass[b] and rise > 0.5:
                pressed[a] = True
            elif inverse_mass[b] > MASS_RATIO_HELD * inverse_mass[a] and rise < -0.5:
                pressed[b] = True
    worst, worst_ratio = -1, 0.0
    for k in range(depth.shape[0]):
        a, b = shape_a[k], shape_b[k]
        if shape_body[a] >= 0 and shape_body[b] < 0:
            moving = a
        elif shape_body[b] >= 0 and shape_body[a] < 0:
            moving = b
        else:
            continue
        ratio = depth[k] / (size[moving] * scale[shape_node[moving]])
        if ratio > (sizes_pressed if pressed[shape_body[moving]] else sizes) and ratio > worst_ratio:
            worst, worst_ratio = k, ratio
    return worst


class Sunk(NamedTuple):
    """A dynamic shape that passed through a static or kinematic one (`SceneSolver.sunk`)."""

    node: int           # the dynamic shape's node
    surface: int        # the node of the shape it is inside
    depth: float        # m
    size: float         # m, the dynamic shape's size (its bounding diameter, world scale)
    bound: float        # the depth it passed, as a fraction of its size (SINK_SIZES or SINK_SIZES_PRESSED)


@kernel(refcounts=False)
def kinetic_energy(velocity, inverse_mass, inverse_inertia):
    """Σ ½ (|v|² / m⁻¹ + ωᵀ (I⁻¹)⁻¹ ω) (J) of the solver bodies' [v, ω] (B, 6), world frame. The
    3×3 inverse by its adjugate: for M with columns c₀, c₁, c₂ the rows of M⁻¹ are c₁×c₂, c₂×c₀,
    c₀×c₁ over det M = c₀·(c₁×c₂). One compiled pass in the bodies' order, allocating nothing (the
    deep-overlap check of `SceneSolver.solve` runs it twice a sub-step on every body). Not
    np.linalg.solve: LAPACK's kernels, and so the last bits of a comparison the step branches on
    (`solve`), depend on the CPU (docs/architecture.md, "Determinism across machines"); a compiled
    loop sums in one order on every machine."""
    linear, angular = 0.0, 0.0
    for b in range(velocity.shape[0]):
        vx, vy, vz = velocity[b, 0], velocity[b, 1], velocity[b, 2]
        linear += (vx * vx + vy * vy + vz * vz) / inverse_mass[b]
        m = load33(inverse_inertia, b)
        c0, c1, c2 = (m[0][0], m[1][0], m[2][0]), (m[0][1], m[1][1], m[2][1]), (m[0][2], m[1][2], m[2][2])
        r0, r1, r2 = cross(c1, c2), cross(c2, c0), cross(c0, c1)      # adj(M)
        det = c0[0] * r0[0] + c0[1] * r0[1] + c0[2] * r0[2]
        wx, wy, wz = velocity[b, 3], velocity[b, 4], velocity[b, 5]
        angular += (wx * (r0[0] * wx + r0[1] * wy + r0[2] * wz) + wy * (r1[0] * wx + r1[1] * wy + r1[2] * wz)
                    + wz * (r2[0] * wx + r2[1] * wy + r2[2] * wz)) / det
    return 0.5 * (linear + angular)


class ContactBudgetError(ValueError):
    """More candidate pairs in one step than PAIR_BUDGET: `pairs` says how many."""

    def __init__(self, pairs, at_load=False):
        self.pairs = pairs
        when = "at load" if at_load else "in one step"
        super().__init__(f"{pairs:,} shape pairs overlap {when} (the contact budget is {PAIR_BUDGET:,}): "
                         "shapes placed inside one another? Spread them out or give them collision groups")


class JointBudgetError(ValueError):
    """More joints on one body than the joint solve takes (`physics.constraints.joint_graph.JOINT_CLIQUE_COST_MAX`)."""


class Overlaps(NamedTuple):
    """Shape pairs that overlap by more than OVERLAP_TOLERANCE (`SceneSolver.overlaps`)."""

    count: int              # pairs of shapes deeper in one another than the tolerance
    node_a: int             # the deepest pair's nodes (−1 when count is 0)
    node_b: int
    depth: float            # m, its depth (0 when count is 0)


class ContactPoints(NamedTuple):
    """This step's M contact points from the narrow phase (`physics.collision.collision.Contacts`), world
    frame; `_contact_stage` compacts them in place, kept points first."""

    shape_a: np.ndarray     # (M,) int64
    shape_b: np.ndarray     # (M,) int64
    node_a: np.ndarray      # (M,) int64: the node of shape a (`Contacts.body_a`)
    node_b: np.ndarray      # (M,) int64
    point: np.ndarray       # (M, 3)
    normal: np.ndarray      # (M, 3) from a to b
    depth: np.ndarray       # (M,) > 0 penetrating
    feature: np.ndarray     # (M,) int64 feature id (warm-start key)


class PointRoom(NamedTuple):
    """The contact stage's per-point arrays (P,) for P points or more, kept by the solver from one
    sub-step to the next (`point_room`), so that the stage allocates nothing (made at each call,
    about 160 bytes a point: on a chain of 100 links lying on its floor, most of a step's), and is
    compiled without reference counts (`_reachable_contact_stage`)."""

    pair_nodes: np.ndarray      # (P, 2) int64 each point's two nodes (`_reach`)
    body: np.ndarray            # (P, 2) int64 its solver bodies, −1 static
    surface: np.ndarray         # (P, 2, 3) its sides' surface velocities
    keep: np.ndarray            # (P,) bool whether it can touch this step
    mu: np.ndarray              # (P,) its friction …
    e: np.ndarray               # (P,) … and restitution
    warm: np.ndarray            # (P, 3) its stored impulse (warm start)
    approach: np.ndarray        # (P,) `PointBounce`'s, for the restitution stage …
    static_normal: np.ndarray   # (P,) …
    key: np.ndarray             # (P,) int64 its warm start's key …
    found: np.ndarray           # (P,) bool … whether it found a stored impulse …
    taken: np.ndarray           # (P,) bool … and which stored ones were taken (P of them or more are stored)


def point_room(points):
    """A `PointRoom` for `points` points."""
    return PointRoom(np.empty((points, 2), np.int64), np.empty((points, 2), np.int64), np.empty((points, 2, 3)),
                     np.empty(points, np.bool_), np.empty(points), np.empty(points), np.empty((points, 3)),
                     np.empty(points), np.empty(points), np.empty(points, np.int64), np.empty(points, np.bool_),
                     np.empty(points, np.bool_))


class SolverBodies(NamedTuple):
    """The solver bodies (B,) at the start of the step, and which one each node (N,) moves with."""

    body_of_node: np.ndarray    # (N,) int64, −1 for static and kinematic nodes
    centre: np.ndarray          # (B, 3) centre of mass, world
    velocity: np.ndarray        # (B, 6) [v, ω] world


class NodeMotion(NamedTuple):
    """Every node's world motion (N, 3): what a static or kinematic side's surface moves with."""

    translation: np.ndarray
    velocity: np.ndarray
    omega: np.ndarray
    acceleration: np.ndarray
    alpha: np.ndarray


class Materials(NamedTuple):
    """Per node (N,): friction coefficient μ and restitution e."""

    friction: np.ndarray
    restitution: np.ndarray


class ContactParams(NamedTuple):
    """The step's constants for the contact rows."""

    h: float            # s, the sub-step
    lead: float         # s, how far ahead a moving surface's velocity is taken (`_reach`)
    base: float         # m, a point is kept if its gap ≤ base + h max(−vn₀, 0) (`_reach`)
    warm: bool          # warm start from the stored impulses
    beta: float         # Baumgarte factor per step
    slop: float         # m, penetration left uncorrected
    threshold: float    # m/s, slower approaches do not bounce
    softness: float     # CFM / h
    push: float         # m/s, the largest position-correction target (settings.max_contact_push_speed)


@kernel(refcounts=False)
def _reach(c, pair_nodes, body, bodies, nodes, params, surface, keep):
    """keep[m] = −depth ≤ base + h max(−vn₀, 0) with vn₀ = n · (v_b − v_a) at the point, and the
    surface velocity of each static side (a kinematic node's world motion) per point
    (`_keep_reachable`), led by `lead` seconds:

        v_surface = v + ω × r + lead (a + α × r + ω × (ω × r))

    (the material point's velocity `lead` later, to first order). The rows compare it with the
    bodies' end-of-step velocities, and a body at rest on the surface must land where the surface
    point does (`physics.core.choices.INTEGRATOR_TRAITS` (surface_lead)): semi-implicit Euler moves it by h v₁ in the
    parent's non-rotating frame, a chord whose velocity is the material point's at mid-step, so
    h / 2; the trapezoid schemes (h (v₀ + v₁) / 2) and implicit Euler (h v₁ in the turning frame
    itself) need the end-of-step velocity, h; explicit Euler moves with v₀ and can only match the
    velocity, h. Lead 0 lagged a turning deck by ω h and a crate at rest on it crept outward at
    |v| ω h; lead h under semi-implicit Euler crept inward as fast, and lead h / 2 under implicit
    Euler outward (tests/test_moving_surfaces.py). A body moving over the surface also carries the contact to
    where the surface moves otherwise: + lead ω × d, d the body's velocity over the surface in the
    tangent plane (a ball rolling on a turntable, tests/test_rolling.py; the contact location moves
    with the centre for a sphere, and d = 0 for a body at rest on it).
    c: `ContactPoints` (its first M points, M the size of `keep`); pair_nodes, body (M, 2): each
    side's node and solver body; bodies: `SolverBodies`; nodes: `NodeMotion`; params: `ContactParams`."""
    point, normal, depth = c.point, c.normal, c.depth
    centre, velocity = bodies.centre, bodies.velocity
    h, lead, base = params.h, params.lead, params.base
    # values as tuples, not views of the arrays: numba counts a reference to an array for every
    # view it takes (physics.core.compiled, 6), six a point here, and the heap's pass took twice as long
    zero = (0.0, 0.0, 0.0)
    for m in range(keep.size):
        vn = 0.0
        vs, spin, moving = zero, zero, zero
        for side in range(2):
            k = body[m, side]
            node = pair_nodes[m, side]
            if k >= 0:
                x = load3(centre, k)
                lin = (velocity[k, 0], velocity[k, 1], velocity[k, 2])
                ang = (velocity[k, 3], velocity[k, 4], velocity[k, 5])
            else:
                x, lin, ang = load3(nodes.translation, node), load3(nodes.velocity, node), load3(nodes.omega, node)
            r0, r1, r2 = point[m, 0] - x[0], point[m, 1] - x[1], point[m, 2] - x[2]
            v = (lin[0] + ang[1] * r2 - ang[2] * r1,
                 lin[1] + ang[2] * r0 - ang[0] * r2,
                 lin[2] + ang[0] * r1 - ang[1] * r0)
            if k < 0:
                acc, alpha = load3(nodes.acceleration, node), load3(nodes.alpha, node)
                w = cross(ang, (v[0] - lin[0], v[1] - lin[1], v[2] - lin[2]))   # ω × (ω × r)
                surface[m, side, 0] = v[0] + lead * (acc[0] + alpha[1] * r2 - alpha[2] * r1 + w[0])
                surface[m, side, 1] = v[1] + lead * (acc[1] + alpha[2] * r0 - alpha[0] * r2 + w[1])
                surface[m, side, 2] = v[2] + lead * (acc[2] + alpha[0] * r1 - alpha[1] * r0 + w[2])
                vs, spin = v, ang
            else:
                for c3 in range(3):
                    surface[m, side, c3] = 0.0
                moving = lin
            vn += (1.0 if side else -1.0) * (normal[m, 0] * v[0] + normal[m, 1] * v[1] + normal[m, 2] * v[2])
        keep[m] = -depth[m] <= base + h * max(-vn, 0.0)
        if (body[m, 0] < 0) != (body[m, 1] < 0):
            # the contact slides over the surface with the body: ω × (its tangential velocity over it)
            s = 0 if body[m, 0] < 0 else 1
            n = load3(normal, m)
            d = (moving[0] - vs[0], moving[1] - vs[1], moving[2] - vs[2])
            dn = 0.0
            for c3 in range(3):
                dn += d[c3] * n[c3]
            turn = cross(spin, (d[0] - dn * n[0], d[1] - dn * n[1], d[2] - dn * n[2]))
            for c3 in range(3):
                surface[m, s, c3] += lead * turn[c3]


@kernel(refcounts=False)
def _travel(shape_node, lo, hi, bodies, nodes, h, out):
    """out[s] = |h| (|v| + |ω| ρ): how far any point of shape s can move within the step, v and ω
    the motion of what it moves with (its solver body about the centre of mass, or a static or
    kinematic node about its origin) and ρ the farthest corner of the shape's bounding box
    (lo, hi (S, 3)) from that centre. A shape with an unbounded box (a plane) counts v only.
    Returns the largest (NaN if any velocity is NaN: `contacts` then names the bad margin).

    A tumbling box's far corners close on the ground at |ω| ρ on top of |v|: counting |v| only,
    a box landing at 0.7 m/s while turning at 6 rad/s kept no point at the corners 17 mm up,
    which struck 6.6 mm deep within the step."""
    most = 0.0
    for s in range(shape_node.shape[0]):
        i = shape_node[s]
        b = bodies.body_of_node[i]
        v2 = w2 = rho2 = 0.0
        for c in range(3):
            if b >= 0:
                v, w, pivot = bodies.velocity[b, c], bodies.velocity[b, 3 + c], bodies.centre[b, c]
            else:
                v, w, pivot = nodes.velocity[i, c], nodes.omega[i, c], nodes.translation[i, c]
            v2 += v * v
            w2 += w * w
            far = max(abs(lo[s, c] - pivot), abs(hi[s, c] - pivot))
            rho2 += far * far
        travel = math.sqrt(v2)
        if w2 > 0.0 and rho2 < np.inf:
            travel += math.sqrt(w2 * rho2)
        out[s] = abs(h) * travel
        if out[s] > most or out[s] != out[s]:     # a NaN stays the largest
            most = out[s]
    return most


@kernel(inline=True)
def _grown(shape_node, lo, hi, bodies, nodes, step, grown_lo, grown_hi, travel):
    """Each shape's `_travel` within |h| = step[0] into travel (S,), and its box (lo, hi) grown by
    SPECULATIVE + that travel into grown_lo, grown_hi (S, 3); -> the largest travel."""
    most = _travel(shape_node, lo, hi, bodies, nodes, step[0], travel)
    for s in range(lo.shape[0]):
        grow = SPECULATIVE + travel[s]
        for c in range(3):
            grown_lo[s, c] = lo[s, c] - grow
            grown_hi[s, c] = hi[s, c] + grow
    return most


@kernel(refcounts=False)
def _reaching_pairs(shape_node, lo, hi, bodies, nodes, step, candidates, grown_lo, grown_hi, travel, out):
    """The broad phase of `SceneSolver._candidates` where it is a brute force over the filter's
    `candidates` (K, 2), in one call: the boxes grown (`_grown`) into grown_lo, grown_hi (S, 3), and
    the candidates whose grown boxes overlap into out (K, 2), in order
    (`physics.collision.broadphase.overlapping`). -> (how many, the largest travel)."""
    most = _grown(shape_node, lo, hi, bodies, nodes, step, grown_lo, grown_hi, travel)
    return overlapping(grown_lo, grown_hi, candidates, out), most


@kernel
def _reaching_grid(shape_node, lo, hi, bodies, nodes, step, grid, cell_lo, cell_hi, scratch, grown_lo, grown_hi, travel,
                   out):
    """The broad phase of `SceneSolver._candidates` on the grid, in one call: the boxes grown as
    `_reaching_pairs` grows them, and their pairs (`physics.collision.broadphase.grid_pairs`, `grid`
    the filter's `GridArrays`, cell_lo, cell_hi and `scratch` its working arrays) into out. -> (the
    pairs found, how many out holds or −1 where it had no room for them, the largest travel), or
    (the grid entries needed, −2, ...) where the scratch had no room for them."""
    most = _grown(shape_node, lo, hi, bodies, nodes, step, grown_lo, grown_hi, travel)
    found, k = grid_pairs(grown_lo, grown_hi, grid, cell_lo, cell_hi, out, scratch)
    return found, k, most


@kernel(refcounts=False)
def _solve_changes(velocity, solved, relaxed, final, slot, minv_jt, impulse, start_inertia, inverse_inertia, hold_count,
                   hold_direction, scratch, dv, dx, h, fraction, push_speed, joints, composed):
    """`SceneSolver.solve_changes` in one call: the split impulse (`split_impulse_changes`) into dv,
    dx (D, 6); where the joints are RATTLE's (`joints` rows of the system, the first), their share
    of the positions; and the angular Δv re-expressed with the bodies' inertia now. Each sum in the
    order of the numpy it stands for: `_add_row_changes` (np.add.at's), then dx + (h (1 − f)) Δv_J,
    and Iₙₒw⁻¹ (I₀⁻¹)⁻¹ Δω as `rows_times(·, solve_rows(·, ·))` (Cramer's rule, then einsum's
    0 + ((a₀ b₀ + a₂ b₂) + a₁ b₁)); with `composed`, dx = (h f)(relaxed − velocity) first (the
    composed RATTLE step's, `physics.pipeline.stages.stage_solve`). The joints' share does not press
    a body into a static shape that pushed it in the solve (`hold_count`, `hold_direction`:
    `physics.constraints.rattle.hold_contacts`), as RATTLE's projections do not: the positions see
    the joints' kick whole but the contact's that balances it only f of it, and a knot resting
    under a net's pull sank by h (1 − f) of the pull's Δv a sub-step. `scratch` (D + 1, 6)."""
    split_impulse_changes(velocity, solved, relaxed, final, h, fraction, push_speed, dv, dx)
    if joints < 0:
        return
    if composed:
        c = h * fraction
        for k in range(dx.shape[0]):
            for i in range(6):
                dx[k, i] = c * (relaxed[k, i] - velocity[k, i])
    scratch[:] = 0.0
    _add_row_changes(slot, minv_jt, impulse, joints, scratch)
    c = h * (1.0 - fraction)
    for k in range(dx.shape[0]):
        if hold_count[k] > 0:
            lin = pressed_in(hold_count, hold_direction, k, (scratch[k, 0], scratch[k, 1], scratch[k, 2]))
            scratch[k, 0], scratch[k, 1], scratch[k, 2] = lin[0], lin[1], lin[2]
        for i in range(6):
            dx[k, i] += c * scratch[k, i]
        w = solve3(load33(start_inertia, k), (dv[k, 3], dv[k, 4], dv[k, 5]))
        for i in range(3):
            dv[k, 3 + i] = 0.0 + ((inverse_inertia[k, i, 0] * w[0] + inverse_inertia[k, i, 2] * w[2])
                                  + inverse_inertia[k, i, 1] * w[1])


@kernel(refcounts=False)
def _contact_stage(c, kept, body, surface, bodies, materials, stored, params, before, before_count, room, scratch):
    """The contact points' rows in one compiled call (`SceneSolver.prepare`), of the points that can
    touch within this step, `kept` of them moved to the front of c with their solver bodies `body`
    and surface velocities `surface` (`_keep_reachable`, called first: the narrow phase keeps every point the two
    farthest-moving shapes could close, one margin for all pairs (`_travel`); a point is kept
    only if its own gap −depth ≤ SPECULATIVE + h (−vn₀ + |g| h), vn₀ the relative normal velocity at the point at the
    start of the step — Catto, "Speculative contacts", GDC 2013: the settling pile of 1,000 boxes
    then solves 4.3k points instead of 9.4k), their friction and restitution (Box2D's mixing
    rules: μ = √(μ_a μ_b), e = max(e_a, e_b)), last step's impulses (warm start, the cache's sorted
    keys) and their rows (`physics.constraints.constraints.contact_rows`). c: `ContactPoints`, compacted in
    place, kept points first; bodies: `SolverBodies`; materials: `Materials`;
    stored: `StoredImpulses`; params: `ContactParams`; before: `RowArrays` whose first J =
    `before_count` rows come first (the joints'; none: 0), copied to the front of the rows
    returned, so that the sub-step's rows are made in one piece, in `room` (`RowArrays` with room
    for J + 3 kept rows or more: the solver's, kept); each point's friction, restitution, warm impulse and bounce data in
    `scratch` (`PointRoom`, kept too). Returns (kept, how many may bounce, how many rows it wrote
    (J + 3 kept; none where no point is kept), whether
    the step is a cold start: warm
    starting on and more than half the touching points (depth > −slop) new, with nothing stored
    to start from (a point stored with an impulse of 0, a wheel resting on the ground under no load,
    is not new), `COLD_START_SWEEPS`; whether a point is deeper than DEEP_OVERLAP)."""
    mu, e, warm = scratch.mu[:kept], scratch.e[:kept], scratch.warm[:kept]
    warm[:] = 0.0
    for m in range(kept):
        a, b = c.node_a[m], c.node_b[m]
        mu[m] = np.sqrt(materials.friction[a] * materials.friction[b])
        e[m] = max(materials.restitution[a], materials.restitution[b])
    found = scratch.found[:kept]
    found[:] = False
    if params.warm:
        lookup_impulses(stored, c.shape_a[:kept], c.shape_b[:kept], c.feature[:kept], c.point[:kept], c.normal[:kept],
                        warm, scratch.key[:kept], scratch.taken, found)
    J = before_count if kept else 0     # (no point kept: no rows, the joints' not copied either)
    n = J + 3 * kept
    rows = RowArrays(room.body[:n], room.jacobian[:n], room.target[:n], room.relax[:n], room.lower[:n], room.upper[:n],
                     room.softness[:n], room.mu[:n], room.impulse[:n], room.block[:n])
    out = PointBounce(scratch.approach[:kept], scratch.static_normal[:kept])
    for k in range(J):
        for side in range(2):
            rows.body[k, side] = before.body[k, side]
            for i in range(6):
                rows.jacobian[k, side, i] = before.jacobian[k, side, i]
        rows.target[k], rows.relax[k], rows.lower[k], rows.upper[k] = \
            before.target[k], before.relax[k], before.lower[k], before.upper[k]
        rows.softness[k], rows.mu[k], rows.impulse[k], rows.block[k] = \
            before.softness[k], before.mu[k], before.impulse[k], before.block[k]
    fill_contact_rows(ContactInput(c.point[:kept], c.normal[:kept], c.depth[:kept], body[:kept], surface[:kept], mu, e,
                                   warm),
                      BodyMotion(bodies.centre, bodies.velocity),
                      ContactConstants(params.h, params.beta, params.slop, params.threshold, params.softness,
                                       params.push),
                      RowArrays(rows.body[J:], rows.jacobian[J:], rows.target[J:], rows.relax[J:], rows.lower[J:],
                                rows.upper[J:], rows.softness[J:], rows.mu[J:], rows.impulse[J:], rows.block[J:]),
                      out)
    bounces, touching, cold, deep = 0, 0, 0, False
    for m in range(kept):
        bounces += np.isfinite(out.approach[m])
        deep = deep or c.depth[m] > DEEP_OVERLAP
        if c.depth[m] > -params.slop:
            touching += 1
            cold += not found[m]
    # (the rows' count, not their views: boxing ten arrays and their bundle on the way out took more
    # than the call's arithmetic on the ant's four feet; the caller keeps views of the room by count)
    return kept, bounces, n, params.warm and 2 * cold > touching, deep


@kernel(refcounts=False)
def _add_row_changes(slot, minv_jt, impulse, rows, out):
    """out[slot] += M⁻¹ Jᵀ λ of the first `rows` rows, side a's then side b's, row by row (the order
    of np.add.at's, so the sums' bits are its); slot (R, 2) the bodies' rows of out, the static
    body's last."""
    for side in range(2):
        for k in range(rows):
            b = slot[k, side]
            for i in range(6):
                out[b, i] += minv_jt[k, side, i] * impulse[k]


@kernel(refcounts=False)
def _keep_reachable(c, count, bodies, nodes, params, scratch):
    """Each point's solver bodies (M, 2) and surface velocities (M, 2, 3) (`_reach`), then the
    points that can touch this step moved to the front of every array of the `ContactPoints` c, in
    order (its arrays are this step's, fresh from the narrow phase; its first M = count[0] are the
    points, the rest room); `scratch` a `PointRoom` for M points or more; returns (how many were
    kept, body, surface: views of it)."""
    M = count[0]
    pair_nodes, body = scratch.pair_nodes[:M], scratch.body[:M]
    for m in range(M):
        pair_nodes[m, 0], pair_nodes[m, 1] = c.node_a[m], c.node_b[m]
        body[m, 0], body[m, 1] = bodies.body_of_node[c.node_a[m]], bodies.body_of_node[c.node_b[m]]
    surface, keep = scratch.surface[:M], scratch.keep[:M]
    _reach(c, pair_nodes, body, bodies, nodes, params, surface, keep)
    shape_a, shape_b, node_a, node_b, point, normal, depth, feature = c
    kept = 0
    for m in range(M):
        if not keep[m]:
            continue
        if kept != m:
            shape_a[kept], shape_b[kept], node_a[kept], node_b[kept] = shape_a[m], shape_b[m], node_a[m], node_b[m]
            depth[kept], feature[kept] = depth[m], feature[m]
            for i in range(3):      # (element by element: a row's copy allocates a temporary)
                point[kept, i], normal[kept, i] = point[m, i], normal[m, i]
                surface[kept, 0, i], surface[kept, 1, i] = surface[m, 0, i], surface[m, 1, i]
            body[kept, 0], body[kept, 1] = body[m, 0], body[m, 1]
        kept += 1
    return kept, body, surface


@kernel(refcounts=False)
def _reachable_contact_stage(c, count, bodies, nodes, materials, stored, params, before, room, scratch):
    """`_keep_reachable`, then `_contact_stage` of the points kept, in one compiled call (each
    bundle typed once: numba types every argument of a call from Python, and the two calls apart
    typed the points, the bodies and the constants twice, about 10 µs a sub-step of the ant on the
    floor); count (3,): c's first count[0] are the points, before's first count[1] the joints'
    rows and stored's first count[2] the impulses stored (`SceneSolver._contact_rows`: the narrow
    phase's, the joints' and the contact cache's whole room, so that one bound call serves every
    count); room (`RowArrays`) has room for those rows and 3 rows a point,
    scratch (`PointRoom`) for every point. Returns `_contact_stage`'s results, (0, 0, and its
    others for no point) where no point is kept."""
    kept, body, surface = _keep_reachable(c, count, bodies, nodes, params, scratch)
    n = count[2]
    first = StoredImpulses(stored.keys[:n], stored.impulses[:n], stored.n_shapes, stored.points[:n], stored.normals[:n])
    return _contact_stage(c, kept, body, surface, bodies, materials, first, params, before, count[1], room, scratch)


_NO_ROWS = RowArrays(np.zeros((0, 2), np.int64), np.zeros((0, 2, 6)), *(np.zeros(0) for _ in range(7)),
                     np.zeros(0, np.int64))    # `_contact_stage`'s rows before the contacts' where no joint has any
_row_fields = operator.attrgetter(*RowArrays._fields)     # a `Rows`' RowArrays fields, in order (`_row_arrays_of`)


def _first_rows(room, n):
    """The `Rows` of the first n rows of the arrays `room` (views)."""
    return Rows(*[a[:n] for a in room])


_NORMAL_FIRST = np.array([2, 0, 1])     # a point's rows (t1, t2, n) as the cache stores them (n, t1, t2)


TRIPLE_JUMP_REACH = max(abs(f) for f in TRIPLE_JUMP)    # the longest of the triple jump's sub-steps, × h


@kernel(refcounts=False)
def _exact_terms(exact, stiffness, damping, armature, s, h, ring, clamped, out):
    """`SceneSolver.choose_joint_terms`' choice compiled: out (J,) the joints whose terms RATTLE's
    step takes, of those that have them (`exact`), save the stiff: a spring with h² K s > 1 + A s or
    a damper with h |D| s > 2 ring (1 + A s), s (J,) the coordinate's inverse inertia; returns
    (whether any is stiff, whether a stiff one has an armature, whether a soft row of joint terms
    stays: a joint with terms not taken, or a `clamped` one, an actuator with a force range)."""
    stiff_any, armature_left, chord_wanted = False, False, False
    for j in range(len(exact)):
        give = 1.0 + armature[j] * s[j]
        stiff = exact[j] and (h * h * stiffness[j] * s[j] > give or h * abs(damping[j]) * s[j] > 2.0 * ring * give)
        out[j] = exact[j] and not stiff
        stiff_any = stiff_any or stiff
        armature_left = armature_left or (stiff and armature[j] > 0.0)
        chord_wanted = chord_wanted or (exact[j] and not out[j]) or clamped[j]
    return stiff_any, armature_left, chord_wanted


@kernel(refcounts=False)
def _choose_exact_terms(geometry, body, inverse_mass, inverse_inertia, terms, clamped, step, s, out):
    """`SceneSolver.choose_joint_terms`' choice in one call: each coordinate's inverse inertia s (J,)
    (`coordinate_inverse_inertia`, scratch) from the rows `geometry`, then `_exact_terms` with
    step (2,) [h, ring] -> its result, `out` the joints whose terms RATTLE's step takes."""
    coordinate_inverse_inertia(geometry, body, inverse_mass, inverse_inertia, s)
    return _exact_terms(terms.exact, terms.stiffness, terms.damping, terms.armature, s, step[0], step[1], clamped, out)


@kernel(inline=True)
def _row_rate(body, jacobian, velocity, k):
    """J v of row k (`Rows` body (R, 2), jacobian (R, 2, 6)) for the bodies' velocities (B, 6), static
    sides 0: each side's six products summed in two lanes, even and odd, as numpy's einsum sums
    them on x86-64's SSE2 baseline (without fused multiply-adds), so that there this rate and
    numpy's agree to the bit."""
    rate = 0.0
    for side in range(2):
        b = body[k, side]
        if b >= 0:
            row = jacobian[k, side]
            even = row[0] * velocity[b, 0] + row[2] * velocity[b, 2] + row[4] * velocity[b, 4]
            odd = row[1] * velocity[b, 1] + row[3] * velocity[b, 3] + row[5] * velocity[b, 5]
            rate += even + odd
    return rate


@kernel(inline=True)
def _soft_chord_row(slot, exact, actuated, softness):
    """Whether the joint row of `slot` (joint × ROWS_PER_JOINT + s) with this softness is a soft row
    of joint terms (`ChordRows`): a spring slot RATTLE's step does not take, an actuator's drive."""
    j, s = slot // ROWS_PER_JOINT, slot % ROWS_PER_JOINT
    return ((s == SPRING and not exact[j]) or (s == DRIVE and actuated[j] != 0)) and softness > 0.0


@kernel(refcounts=False)
def _chord_rows_kernel(slots, exact, actuated, armature, inequality, motor, body, jacobian, softness, target, relax,
                       velocity, out):
    """`SceneSolver._chord_rows` compiled: the (index, weight, start_rate, target, relax) of
    `ChordRows` into the first n of `out` (a `ChordRows` with room for every row), returning n,
    0 where no row is soft. slots (K,) the joint rows' (joint × ROWS_PER_JOINT + slot); exact,
    actuated, armature (J,); inequality, motor (J, ROWS_PER_JOINT); body, jacobian, softness,
    target, relax the rows' (`Rows`, the joints' K first); velocity (B, 6). (Written into kept
    room: the rows made at each sub-step were the iiwa's 5 KiB a step.)"""
    K = len(slots)
    any_soft = False
    for k in range(K):
        any_soft = any_soft or _soft_chord_row(slots[k], exact, actuated, softness[k])
    if not any_soft:
        return 0
    n = 0
    for k in range(K):
        j, s = slots[k] // ROWS_PER_JOINT, slots[k] % ROWS_PER_JOINT
        soft = _soft_chord_row(slots[k], exact, actuated, softness[k])
        if not (soft or not (inequality[j, s] or motor[j, s])):
            continue
        # a soft row's softness is 1/(h (h K + D) + A): its armature's share resists q̇' − q̇₀, not the chord
        share = armature[j] if soft and s == SPRING else 0.0
        out.index[n] = k
        out.weight[n] = 1.0 - share * (softness[k] if soft else 0.0)
        out.start_rate[n] = _row_rate(body, jacobian, velocity, k)
        out.target[n], out.relax[n] = target[k], relax[k]
        n += 1
    return n


@kernel(inline=True)
def _rotor_row(terms, j):
    """Whether joint j's spring slot is a row of RATTLE's projections, a rotor (an armature or a
    damper its terms take: `physics.constraints.rattle`, "Joint terms")."""
    return terms.exact[j] and (terms.armature[j] > 0.0 or terms.damping[j] != 0.0)


@kernel(refcounts=False)
def _rotor_takes_kicks(terms):
    """Where the solve is left out (`SceneSolver.leave_out_solve`, `_projections_alone`), each rotor
    takes its joint's first kick whole (`JointTerms.share` 0): no solve gives the links theirs."""
    if terms is None:
        return
    for j in range(terms.share.shape[0]):
        if _rotor_row(terms, j):
            terms.share[j] = 0.0


@kernel(refcounts=False)
def _projections_alone(slots, body, jacobian, lower, upper, geometry, velocity, h, terms):
    """Whether the joint rows `slots` (K,) (joint × ROWS_PER_JOINT + slot; body (K, 2), jacobian
    (K, 2, 6), lower, upper (K,) the `Rows` they start, in order) are all rows RATTLE's
    projections hold by themselves, and there is one (`PreparedStep.alone`):
    - a joint's point, orientation or distance equality (a slot below LIMIT, neither an
      inequality nor a motor);
    - a limit far from its bound: its gap C more than LIMIT_REACH sub-steps of the coordinate's
      start rate J v₀ (with a moving frame's share) and LIMIT_ACCELERATION h² besides, where the
      velocity solve's speculative row (J v ≥ −C/h) takes no impulse; a limit the step crosses
      anyway is an inequality of RATTLE's projections, taken where it is violated
      (`physics.constraints.rattle`);
    - an exact joint term's fixed impulse (the spring slot's lower = upper: RATTLE's first kick,
      (h/2) τ(q₀)) where it is 0 (a spring at its reference, an actuator at rest), or where the
      joint has a rotor row (an armature or a damper), which then takes the kick whole
      (`_rotor_takes_kicks`): any share of it is RATTLE's same step once projected, and the links'
      drift starts free of it (gymnasium's reacher driven by its motors). A fixed impulse on a
      joint without one keeps the solve: the solve spreads it over the joints' island, where
      without it the kick turns one link alone, and under lie-midpoint-4 the drift's curvature
      took the triple jump's long sub-steps again as halves, and its fourth order with them.
    `terms` the `JointTerms` the rows were filled with, or None.
    velocity (B, 6) [v, ω] world at the start; geometry the start's `JointGeometry`."""
    for k in range(len(slots)):
        j, s = slots[k] // ROWS_PER_JOINT, slots[k] % ROWS_PER_JOINT
        if s < LIMIT:
            if geometry.inequality[j, s] or geometry.motor[j, s]:
                return False
        elif s == LIMIT:
            rate = geometry.frame_speed[j, s] + _row_rate(body, jacobian, velocity, k)
            if not geometry.C[j, s] > LIMIT_REACH * abs(h) * abs(rate) + LIMIT_ACCELERATION * h * h:
                return False
        elif s != SPRING:
            return False
        elif lower[k] != 0.0 or upper[k] != 0.0:
            if terms is None:
                return False
            if not _rotor_row(terms, j):
                return False
    return len(slots) > 0


@kernel(refcounts=False)
def _joint_start(todo, geometry, terms, rows, poses, slack, frames, velocity, h, halves):
    """`SceneSolver.prepare`'s joint calls in one compiled call, in its order (the same bits as
    made one by one; timed against them, the pendulum's and the ant's steps were within noise, a
    few lookups of bound calls saved; a step towards the sub-step as a few compiled calls):
    the start's geometry (`joint_geometry`) where todo[0] (not taken at these poses already:
    `physics.constraints.rattle.JointBodies.take_start`), the turning hinges' centres moved onto
    their coordinates where they strayed (`follow_turns`) where todo[5], the joint terms RATTLE's step takes
    (`fill_joint_terms`) where todo[1], the rows (`fill_joint_rows`), the start's poses copied, the
    soft limits (`fill_limit_slack`) where todo[2], a moving frame's speeds copied where todo[3],
    and whether RATTLE's projections hold the rows by themselves (`_projections_alone`, at the
    bodies' start `velocity` (B, 6) and step h) where todo[4]. Every other argument is its call's
    arguments in its order (`JointBodies.start_arguments`). Returns (the rows' count, the largest
    limit slack (0 where not filled), whether the projections hold the rows alone). `halves`:
    None, or (0, J / 2, J, ·, ·, ·) int64 for a scene of SPLIT_JOINTS joints or more, whose geometry
    and rows are then written a half of its joints a thread (`_geometry_halves`, `_rows_halves`:
    the same bits on any number of threads); numba prunes the branch that None does not take, so
    a smaller scene compiles no parallel region."""
    if todo[0]:
        if halves is None:
            joint_geometry(*geometry)
        else:
            _geometry_halves(geometry[0], geometry[1], geometry[2], geometry[3], halves)
    if todo[5]:
        follow_turns(geometry[0], geometry[1], geometry[2], geometry[3])
    if todo[1]:
        fill_joint_terms(*terms)
    if halves is None:
        count = fill_joint_rows(*rows)
    else:
        model, drives, geometry_rows, terms_rows = rows[0], rows[1], rows[2], rows[11]
        halves[3] = count_joint_rows(model, drives, geometry_rows, terms_rows, halves[0], halves[1])
        _rows_halves(model, drives, geometry_rows, rows[3], rows[4], rows[5], rows[6], rows[7], rows[8], rows[9],
                     rows[10], terms_rows, rows[12], rows[13], halves)
        count = halves[5]
    centre, rotation, start_centre, start_rotation = poses
    for b in range(centre.shape[0]):
        for i in range(3):
            start_centre[b, i] = centre[b, i]
            for k in range(3):
                start_rotation[b, i, k] = rotation[b, i, k]
    easing = fill_limit_slack(*slack) if todo[2] else 0.0
    if todo[3]:
        speed, into = frames
        for j in range(speed.shape[0]):
            for s in range(speed.shape[1]):
                into[j, s] = speed[j, s]
    alone = False
    if todo[4]:
        out, slots = rows[12], rows[13]
        alone = _projections_alone(slots[:count], out.body[:count], out.jacobian[:count], out.lower[:count],
                                   out.upper[:count], geometry[3], velocity, h, rows[11])
    return count, easing, alone


# The parallel regions of a large scene's joint start, here beside their only caller (physics.core.compiled,
# 8: a parallel region linked into a kernel of another module crashed a process that loaded it from
# the cache); each thread's part is a call of the serial kernel on its range of joints.

@kernel(parallel=True, refcounts=False)
def _geometry_halves(model, centre, rotation, out, halves):
    """`joint_geometry` of joints halves[0] … halves[1] − 1 and halves[1] … halves[2] − 1 at once,
    one half a thread (each joint writes its own rows)."""
    for t in prange(2):
        joint_geometry(model, centre, rotation, out, halves[t], halves[t + 1])


@kernel(parallel=True, refcounts=False)
def _rows_halves(model, drives, geometry, impulse, control, velocity, h, beta, slop, softness, frames_move, terms,
                 out, slots, halves):
    """`fill_joint_rows` of the two halves of the joints at once, one a thread: the first half's
    rows from row 0, the second's from halves[3] (the first half's count); halves[4 + t] the row
    after half t's last, so halves[5] the rows' count."""
    for t in prange(2):
        halves[4 + t] = fill_joint_rows(model, drives, geometry, impulse, control, velocity, h, beta, slop, softness,
                                        frames_move, terms, out, slots, halves[t], halves[t + 1], halves[3] if t else 0)


@kernel(refcounts=False)
def _chord_targets(body, jacobian, chord, lag_share, velocity, target, relax):
    """The chord rows' targets for the free velocities (B, 6) (`SceneSolver.solve`): each row's
    prepared target and relax target plus its weight × the lag (1 − f) (J v_free − J v₀),
    `lag_share` = 1 − f, written into the rows' `target` and `relax` (R,)."""
    for n in range(len(chord.index)):
        k = chord.index[n]
        lag = lag_share * (_row_rate(body, jacobian, velocity, k) - chord.start_rate[n])
        target[k] = chord.target[n] + chord.weight[n] * lag
        relax[k] = chord.relax[n] + chord.weight[n] * lag


class JointStart(NamedTuple):
    """The joints' start of a sub-step, as `SceneSolver.prepare` found it (RATTLE's first-kick
    directions, SHAKE's rows)."""
    slots: np.ndarray           # (K,) each joint row's slot j × ROWS_PER_JOINT + s, in row order
    rows: Rows                  # the joint rows as prepared (SHAKE's position rows start from them)
    centre: np.ndarray          # (B, 3) the start-of-step poses (copies, kept until the next prepare)
    rotation: np.ndarray        # (B, 3, 3)
    jacobian: np.ndarray        # (J, ROWS_PER_JOINT, 2, 6) J₀: every (joint, slot) row at those poses
    limit_slack: object         # (J,) the soft limits (`Joints.limit_slack`), or None without limits
    terms: object               # the joint terms RATTLE takes (`physics.constraints.joints.JointTerms`), or None
    frame_speed: object         # (J, ROWS_PER_JOINT) J_a v_a of a moving frame (0 elsewhere), or None without frames
    chord: object               # `ChordRows`: the rows RATTLE's positions move along, or None


class ChordRows(NamedTuple):
    """The joint rows of a sub-step RATTLE steps that are to see the chord of the positions
    (`SceneSolver.solve`): each equality row, and the soft rows of joint terms RATTLE's step does
    not take (`SceneSolver.choose_joint_terms`: springs, dampers and actuators too stiff for it, and
    an actuator with a force range, whose clamp is a velocity row's bound)."""
    index: np.ndarray           # (K,) their rows
    weight: np.ndarray          # (K,) 1, or a soft row's h (h K + D) / (h (h K + D) + A): the share of its softness that is K's and D's
    start_rate: np.ndarray      # (K,) J v₀, each row's rate at the step's start
    target: np.ndarray          # (K,) the rows' targets as prepared
    relax: np.ndarray           # (K,) and their relax stage's targets


def _first_chord_rows(room, n):
    """The `ChordRows` of the first n rows of `room` (views)."""
    return ChordRows(*[a[:n] for a in room])


class _StartCall:
    """A start of the joints (`SceneSolver._start_joints`): what it was given (its arrays by identity,
    its numbers by value), the kernels' generation it was bound in, its bound call (on its threads:
    `SceneSolver._on_threads`), the `JointStart` it made (made again where the rows' count changes)
    and the flags its call reads after the first (`_joint_start`'s todo[1:], which depend on what
    it was given)."""
    __slots__ = ("arrays", "values", "generation", "call", "joint_start", "flags")

    def __init__(self, arrays, values, generation, call, joint_start, flags):
        self.arrays, self.values, self.generation, self.call, self.joint_start, self.flags = \
            arrays, values, generation, call, joint_start, flags


class _Again(NamedTuple):
    """A prepare to make again (`SceneSolver._keep_again`): the objects it was given (by identity),
    the shapes' placement and broad phase as they were bound, its pairs (none) and its step."""
    key: tuple
    placing: tuple
    reaching: tuple
    pairs: np.ndarray
    step: "PreparedStep"
    surface: tuple              # (settings.erp, settings.cfm) it was given, and β and the softness it made of them


class Actuation(NamedTuple):
    """The joints' actuators (`SceneSolver.actuation`), K of them: at control c an actuator's force
    on its joint is G (g c + b₀) + G² b₁ q + G² b₂ q̇ (MuJoCo's gain and bias, G the gear)."""
    joint: np.ndarray       # (K,) int64 the actuated joint
    gear: np.ndarray        # (K,) G
    gain: np.ndarray        # (K,) g
    b0: np.ndarray          # (K,) b₀
    b1: np.ndarray          # (K,) b₁
    servo: np.ndarray       # (K,) k = −G² b₁ of a position servo (b₁ < 0) with no force range, a spring toward
    #                         its target whose energy `SceneSolver.joint_energy` counts (a hinge's angle counts
    #                         its turns: physics.constraints.joints, "Turns"); 0 for the others


class PreparedStep(NamedTuple):
    """What `SceneSolver.prepare` hands to the solve and the joints' stages of the same sub-step (as
    Box2D's step context carries the prepared constraints to its solver stages): made whole by each
    prepare, dropped by `forget`."""
    h: float                    # s, the sub-step the rows were made for (negative: the triple jump's middle one)
    system: Prepared            # the rows (the joints' first, then the contacts') and their effective masses;
    #                             None where `alone` (`SceneSolver.keep_solve` makes them)
    masses: tuple               # (inverse mass (B,), inverse world inertia (B, 3, 3)) at the start poses: M₀⁻¹
    side: object                # (B,) the bodies' halves for a two-thread sweep, or None (serial)
    cold_start: bool            # most touching points new: the solve sweeps on until converged (COLD_START_SWEEPS)
    deep: bool                  # a point deeper than DEEP_OVERLAP: the solve checks its relax stage's energy
    bounce: object              # the rows that may bounce and what their targets need (`_restitution_targets`), or None
    joints: object              # `JointStart`, or None without joints
    alone: bool                 # the rows are a forest's that RATTLE's projections hold alone: no velocity solve
    #                             (`physics.pipeline.stages.stage_solve`, `SceneSolver.leave_out_solve`)


_NO_HOLDS = no_holds(0)      # (`_solve_changes`' where there are no joints: never read)
_NO_RESIDUAL = np.zeros(0)     # the residual of a solve left out (`SceneSolver.leave_out_solve`)
_NO_RESIDUAL.flags.writeable = False


def _buffer_of(array):
    """The array whose memory `array` views (itself if it owns it): what moves when a buffer grows."""
    base = getattr(array, "base", None)
    return array if base is None else base


class SceneSolver:
    """The solver stage of `physics.pipeline.simulation.Simulation`: contacts from the narrow phase
    (docs/architecture.md, "Collision interface") and the scene's joints, on the dynamic bodies
    ("solver bodies", index = the Simulation's dynamic slot) in world terms.

    `body_of_node (N,)`: the solver body a node's shapes move with (a dynamic node itself, a fixed
    node its nearest dynamic ancestor — the car's floor is the car), −1 for static and kinematic
    ones (kinematic surfaces enter through their known velocity). `joint_specs`: dicts with keys
    kind, a, b (node indices, −1 = the world), anchor, anchor_b, axis (world, at load), length,
    lower, upper, motor_speed, motor_force."""

    def __init__(self, node_shapes, parent, motion, body_of_node, friction, restitution, joint_specs=(), state=None,
                 node_names=None):

        self.shapes = ShapeSet.from_nodes(node_shapes)
        # the two nodes of a joint do not collide unless it says `collide_connected` (Box2D's rule)
        apart = [(j["a"], j["b"]) for j in joint_specs if j["a"] >= 0 and not j.get("collide_connected")]
        self.filter = collision_filter(self.shapes, parent, motion, apart)
        # Sleeping (`physics.dynamics.sleeping.ShapeRest`): the solver body each shape moves with, and the
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
        self._rest = ShapeRest(shape_body, self.filter.per_shape.assembly, rest_assembly)
        # what carries from step to step is the simulation's (physics.pipeline.data.Data.solver): this works on it
        self.carried = SolverState() if state is None else state
        if len(self.carried.control) != len(joint_specs):
            self.carried.control = np.array([spec.get("actuator", {}).get("ctrl", 0.0) for spec in joint_specs], float)
        self.body_of_node = np.asarray(body_of_node, np.int64)
        self.friction = np.asarray(friction, float)
        self.restitution = np.asarray(restitution, float)
        self._materials = Materials(self.friction, self.restitution)
        self._motion_of, self._motion = None, None      # `_node_motion`
        self.joint_specs = list(joint_specs)
        # A joint's side a on a node that moves without being a body (a kinematic node, or a node
        # fixed to one): a moving frame, which the joint follows (`follow_frames`)
        motion, parent = np.asarray(motion), np.asarray(parent)
        moves = motion == "kinematic"
        for node in range(len(parent)):     # parents come first
            if parent[node] >= 0 and motion[node] == "fixed":
                moves[node] = moves[parent[node]]
        self.frame_node = np.array([s["a"] if s["a"] >= 0 and self.body_of_node[s["a"]] < 0 and moves[s["a"]] else -1
                                    for s in self.joint_specs], np.int64)
        self._framed = self.frame_node >= 0
        self._any_framed = bool(self._framed.any())     # (asked three times a sub-step)
        # (J,) J each joint's moving frame did on the bodies since `take_frame_work` (`frames_work`)
        self.frame_work = np.zeros(len(self.joint_specs))
        # the joint solve's memory, before anything is allocated (`physics.constraints.joint_graph.JOINT_PAIRS_MAX`)
        ends = np.array([[self.body_of_node[s["a"]] if s["a"] >= 0 else -1, self.body_of_node[s["b"]]]
                         for s in self.joint_specs], np.int64).reshape(-1, 2)
        cost = clique_cost(ends)
        if cost > JOINT_CLIQUE_COST_MAX:
            busiest = int(np.argmax(np.bincount(ends[ends >= 0])))
            node = int(np.flatnonzero(self.body_of_node == busiest)[0])
            raise JointBudgetError(f"{int(np.count_nonzero(ends == busiest))} joints on one moving body "
                                   f"({node_names[node] if node_names is not None else f'body {busiest}'}): the joint "
                                   f"solve's cost grows as the cube of a body's joints (Σ d³ = {cost:.3g}, at most "
                                   f"{JOINT_CLIQUE_COST_MAX:.3g}); join the links in a chain or a tree instead")
        # Whether every joint is an equality (no limit, motor or rope): RATTLE's step then has no
        # inequality or velocity target in it, and composing it (backward sub-steps too) is sound.
        # A spring, a damper, an armature and an actuator without a force range are forces and an
        # inertia on the coordinate, which RATTLE's step takes exactly (`physics.constraints.rattle`,
        # "Joint terms"): they leave the joints equalities.
        self.joints_equalities = all(
            spec["kind"] != ROPE and spec.get("lower") is None and spec.get("upper") is None
            and not spec.get("motor_force") and not spec.get("friction")
            and ("actuator" not in spec or not np.isfinite(spec["actuator"].get("force_range", (-np.inf, np.inf))).any())
            for spec in self.joint_specs)
        self.joints_termed = any(spec.get("stiffness") or spec.get("damping") or spec.get("armature") or "actuator" in spec
                                 for spec in self.joint_specs)
        # this sub-step's choice of the joint terms RATTLE takes (`choose_joint_terms`: None before one)
        self._exact, self.joints_stiff, self.armature_left, self._chord_wanted = None, False, False, True
        self._coordinate_s, self._choice_step = None, np.zeros(2)      # `choose_joint_terms`' scratch and [h, ring]
        self._last_choice = None    # (its arguments, the kernels' generation, its bound call): `choose_joint_terms`
        self._up = None     # [gravity, the unit vector against it] of the last `sunk`
        self._sunk_calls, self._pressed_room = [], np.zeros(0, np.bool_)   # `_deepest_sunk`'s calls and scratch
        self.joints_limited = any(spec.get("lower") is not None or spec.get("upper") is not None
                                  for spec in self.joint_specs)
        self.joint_left_start_rows = False    # the last RATTLE projection left J₀ (`project_joint_positions`),
        self.joint_left_error = 0.0           # the largest |g| / lever it left J₀ with
        self.joint_start_error = 0.0          # and the largest |g| / lever it started from
        self.joint_curvature_error = 0.0      # of which the drift's departure from the rows' tangent
        self.joint_abandoned = False          # it stopped, at its start or on leaving J₀: its sub-step is certain to be taken again
        self._joint_bodies = None
        self._held = False      # whether a body may be held (`_hold_contacts`)
        self._start_inverse_inertia = None     # (B, 3, 3) M₀⁻¹ as the last prepare found it (`PreparedStep.masses`)
        self._load_room = None                  # (B,) soft joints' load on each body (`stability_inertia`)
        self._prepared = PreparedBuffers()     # the room of the sub-step's `Prepared` (`self.step`'s, until the next prepare)
        self._solved = SolveBuffers()       # the room of the sub-step's solve (its `Solution`, until the next solve)
        self._halves_room = None        # `halves`' arrays for B bodies (its side is the sub-step's, `PreparedStep.side`)
        self._rows_room = empty_row_arrays(0)   # the room of the sub-step's rows with contacts (`_contact_stage`) …
        self._point_room = point_room(0)         # … and of its points' own arrays
        self._contact_views = Memo(VIEWS_KEPT)  # its rows' views by count (`_contact_row_views`)
        self._kept_points = Memo(VIEWS_KEPT)    # the points within reach, by points and count (`_contact_rows`)
        self._chord_room, self._chord_views = None, None    # the chord rows' room and views by count (`_chord_rows`) …
        self._chord_calls = Memo(VIEWS_KEPT)    # … their kernel's calls, bound to their arguments (one a count)
        self._no_exact = None                   # (J,) bool, none exact: the chord rows' before a choice
        self._point_count = np.zeros(3, np.int64)   # the counts of points, joint rows, stored impulses (`_contact_rows`)
        self._contact_bundles = Memo(CONTACT_CALLS)     # the contact stage's bundles (`_contact_rows`) …
        # … and its calls (`_contact_call`)
        self.contact_calls = SteadyCall(CONTACT_CALLS)
        self._last_params = None        # (the values, their `ContactParams`): `_contact_params`
        # the velocity solve's changes and holds (`solve_changes`, `_hold_contacts`), bound where their
        # arrays come back (typed, numba's entry point types _solve_changes' 19 arguments at every call)
        self.steady_calls = SteadyCall(CONTACT_CALLS)
        # the sub-step's count of the rows' elements (`prepare`), bound while its rows stay: a
        # SteadyCall of its own, so that its binds never take the solve's calls' payback or room
        self._element_calls = SteadyCall(VIEWS_KEPT)
        self._no_rows = Rows.empty()            # a sub-step's rows where it has none (one object: `_contact_row_views`)
        self._limit_easing = 0.0                # the last prepare's largest soft-limit slack (`limit_easing`)
        self._row_arrays = None                 # (the joints' Rows, their RowArrays): `_row_arrays_of`
        self._warm_room = np.zeros(0)           # a deep sub-step's warm start, to solve again from (`solve`)
        self._grid_entries = None               # the grid scratch's room for entries (`_reaching_call`), once grown
        self._placing = None        # ((world state, its buffers), kernel generation, `placing`'s call and Placed): `_place`
        self._reaching = None       # ((its arrays and generation), the bound broad phase, its pairs' buffer): `_candidates`
        self._change_scratch = None     # (B + 1, 6) the joint rows' velocity change (`solve_changes`)
        self._step_length = np.zeros(1)     # the sub-step's h, for the calls bound above
        self.step = None        # what the last prepare hands to this sub-step's other stages (`PreparedStep`)
        self._joints_forest = None      # (the joints, whether they join the bodies and the world as a forest): `leave_out_solve`
        self._rotor_kicks = None    # (terms, `_rotor_takes_kicks` bound to them): `leave_out_solve`
        self._start_todo = np.zeros(6, np.bool_)     # `_joint_start`'s flags, written before each call
        self._start_halves = None   # (the joints, `_joint_start`'s halves or None, their ThreadChoice): `_start_halves_of`
        self._again = None      # the last prepare of joints alone and no pair within reach, to make again (`_Again`)
        self._starts = []           # the joints' last starts, the latest first: what each was given, its bound call (`_start_joints`)
        self.residual = np.zeros(0)     # the last solve's residual per sweep (a view of its room: until the next solve)
        self.contacts = None
        self._pairs = np.zeros((0, 2), np.int64)     # the last prepare's candidate shape pairs (`pair_bodies`)
        self.outside_pairs = 0      # candidate pairs with a body outside `prepare`'s `active` (not solved)
        self.body_touch = np.zeros(0, np.int64)     # per body: SUPPORTED | FOREIGN (`touch_flags`)
        self._threads = ThreadChoice()      # the sweeps' thread count, by measurement (physics.core.threads)
        self.shape_size = bounding_diameters(self.shapes)     # (S,) in node units (`sunk`)
        self._least_size = float(self.shape_size.min()) if len(self.shape_size) else np.inf

    @property
    def pair_bodies(self):
        """(K, 2) the last prepare's candidate pairs (boxes within reach; with some bodies asleep,
        those solved or probed) as solver bodies, −1 for a static or kinematic shape: what joins
        islands (physics.dynamics.sleeping's, a RATTLE retry's, `physics.pipeline.retry.Undo`). Made when asked."""
        return self._rest.body[self._pairs]

    # the carried state's parts, by the names the stages use (read by attrgetters: no Python frame,
    # and a sub-step reads them some twenty times)
    cache = property(operator.attrgetter("carried.cache"), doc="the contact cache (warm starts, manifolds)")
    joints = property(operator.attrgetter("carried.joints"),
                      lambda self, joints: setattr(self.carried, "joints", joints),
                      doc="the joints once built (the first step's poses), else None")

    def forget(self):
        """Drop what the last `prepare` built (its rows and the joints' start): the carried state
        was put back (a restore), so the next step prepares afresh."""
        self.step = None
        self._again = None
        self.frame_work[:] = 0.0
        self.forget_factors()

    def forget_factors(self):
        """RATTLE's next position projection factors its own first matrix, and the next prepare computes
        the start's geometry (`physics.constraints.rattle.JointBodies.forget_factors`): at a step's
        start and where the state was put back."""
        if self._joint_bodies is not None:
            self._joint_bodies.forget_factors()

    def joints_at(self, world, centre, rotation, keep=False):
        """The joints (physics.constraints.joints.Joints): the carried ones, or before the first step, built at
        these poses (the load's; `world` the nodes' world state): kept where `keep` says (an input that
        moves the bodies, before the first step built them), else not (a query changes no state);
        their moving frames where `world` has them now (`follow_frames`)."""
        if self.joints is None and keep:
            self.joints = self._build_joints(world, centre, rotation)
        joints = self.joints if self.joints is not None else self._build_joints(world, centre, rotation)
        self._follow(joints, world)
        return joints

    def follow_frames(self, world):
        """Give the joints whose side a rides a moving frame (`frame_node`) that frame's pose and motion in
        the nodes' world state `world` (translation, rotation, velocity, omega): the next rows and
        projections are taken with it."""
        if self._any_framed and self.joints is not None:
            self._follow(self.joints, world)

    def _follow(self, joints, world):
        if self._any_framed:
            node = np.maximum(self.frame_node, 0)
            joints.set_frames(self._framed, world.translation[node], world.rotation[node],
                              np.concatenate([world.velocity[node], world.omega[node]], axis=1))

    def _build_joints(self, world, centre, rotation):
        specs = self.joint_specs
        get = lambda key, default: [spec.get(key, default) if spec.get(key) is not None else default for spec in specs]
        body = np.array([[self.body_of_node[s["a"]] if s["a"] >= 0 else -1, self.body_of_node[s["b"]]] for s in specs], np.int64).reshape(-1, 2)
        anchor = np.array(get("anchor", [0.0, 0.0, 0.0]), float).reshape(-1, 3)
        anchor_b = np.array([s["anchor_b"] if s.get("anchor_b") is not None else s["anchor"] for s in specs], float).reshape(-1, 3)
        lengths = np.array([s["length"] if s.get("length") is not None else np.linalg.norm(np.subtract(b, a)) for s, a, b in zip(specs, anchor, anchor_b)])
        joints = Joints.from_world([s["kind"] for s in specs], body, anchor, get("axis", [0.0, 0.0, 1.0]), centre,
                                   rotation, anchor_b, lengths, get("lower", -np.inf), get("upper", np.inf),
                                   get("motor_speed", 0.0),
                                   # dry friction (MuJoCo's frictionloss) is the drive slot's motor at speed 0
                                   [s.get("motor_force") or s.get("friction") or 0.0 for s in specs])
        for name in ("coordinate", "stiffness", "spring_reference", "damping", "armature"):
            getattr(joints, name)[:] = get(name, 0.0)
        for j, spec in enumerate(specs):
            actuator = spec.get("actuator")
            if actuator is not None:
                joints.actuated[j] = ACTUATED
                joints.gear[j], joints.gain[j], joints.bias[j] = actuator["gear"], actuator["gain"], actuator["bias"]
                joints.force_lower[j], joints.force_upper[j] = actuator.get("force_range", (-np.inf, np.inf))
        for g, spec in enumerate(specs):
            if spec["kind"] == SIX_AXIS:     # its axes' joints follow it (physics.io.scene)
                members = [j for j, axis in enumerate(specs) if axis.get("group") == g]
                axes = [specs[j] for j in members]
                joints.set_axes(g, members, [a["type"] for a in axes], np.array([a["axis"] for a in axes], float),
                                [a.get("coordinate") or 0.0 for a in axes], [a.get("ref") or 0.0 for a in axes],
                                centre, rotation)
        if self._any_framed:     # side a in its frame, as the frame is now (the load's pose)
            node = np.maximum(self.frame_node, 0)
            joints.frame_anchors(self._framed, world.translation[node], world.rotation[node])
        return joints

    def prepare(self, world, centre, rotation, velocity, inverse_mass, inverse_inertia, h, settings, lead=None,
                awake=None, active=None, rattle=False):
        """Build this step's rows at the start-of-step poses. `world`: the nodes' world state
        (translation, rotation, scale, velocity, omega (N, ...)); centre, rotation (B, 3), (B, 3, 3),
        velocity (B, 6) [v, ω], inverse_mass (B,), inverse_inertia (B, 3, 3): the solver bodies;
        world acceleration and alpha of kinematic nodes are read too (moving surfaces, `_reach`).
        `lead` (s): how far ahead a moving surface's velocity is taken (`_reach`; default h,
        `physics.core.choices.INTEGRATOR_TRAITS` (surface_lead) says per integrator). `awake` (B,) bool, or None (all
        awake): which bodies are awake (physics.dynamics.sleeping); updated in place with the
        sleeping bodies this step's boxes wake (`physics.dynamics.sleeping.awake_pairs`), whose pairs are then solved.
        `active` (B,) bool, or None (all): the bodies this sub-step steps (a RATTLE retry's island,
        `physics.pipeline.retry.Undo`); a pair with a body outside it is not solved (that body has taken
        its step already), and one that joins an active body to it is counted (`outside_pairs`); the
        contact cache keeps only the active pairs' entries. `rattle`: the joints are stepped by
        RATTLE, which then takes their springs, dampers, armatures and actuators (`_joint_terms`)."""

        if self._again is not None and awake is None and active is None and rattle \
                and self._prepare_again(world, centre, rotation, velocity, inverse_mass, inverse_inertia, h, settings):
            return
        t = profile.mark()              # laps: rows (joints), broad phase, narrow phase, rows (contacts)
        # |h|: the triple jump's middle sub-step runs backwards in time (`Simulation.step`)
        beta = beta_from_erp(settings.erp, abs(h))
        softness = settings.cfm / abs(h)
        # the sub-step's rows: the joints' (`joint_rows`), then the contacts', made in one piece
        rows, joint_rows, joint_start, bounce, cold_start, deep = None, None, None, None, False, False
        alone = False
        if self.joint_specs:
            joint_rows, joint_start, alone = self._start_joints(world, centre, rotation, velocity, len(inverse_mass), h,
                                                                settings, beta, softness, rattle)
        self.contacts = None
        if len(self.shapes):
            t = profile.lap("prepare/rows", t)
            placed = self._place(world)
            pairs, margin = self._candidates(placed, world, centre, velocity, h)
            t = profile.lap("prepare/broad phase", t)
            self.outside_pairs = 0
            if active is not None:      # the active bodies' pairs; those that join one to another body, counted
                body = self._rest.body[pairs]
                moving = body >= 0
                mine = moving & active[body]
                self.outside_pairs = int(np.count_nonzero(mine.any(axis=1) & (moving & ~mine).any(axis=1)))
                pairs = pairs[(mine | ~moving).all(axis=1) & mine.any(axis=1)]
            if awake is None:
                # the broad phase's pairs are the first rows of its buffer (`_candidates`), unless
                # filtered here: the narrow phase's call is then bound to it
                room = None if self._reaching is None or pairs.base is not self._reaching[2] else self._reaching[2]
                c = contacts(self.shapes, world, pairs, self.cache, margin=margin, placed=placed, pair_room=room)
            else:
                pairs, c = self._awake_contacts(pairs, world, placed, margin, awake)
            t = profile.lap("prepare/narrow phase", t)
            self._pairs = pairs
            if settings.sleep:      # what the sleep stage reads: supports, foreign touches
                self.body_touch = np.zeros(len(inverse_mass), np.int64)
                touch_flags(c.shape_a, c.shape_b, self._rest, self.body_touch)
            lead = h if lead is None else lead      # `_reach`
            self.contacts = c
            if len(c):      # (no point: what `_contact_stage` makes of none)
                rows, bounce, cold_start, deep = self._contact_rows(c, centre, velocity, world, h, lead, beta,
                                                                    softness, settings, joint_rows)
        if rows is None:
            rows = joint_rows if joint_rows is not None else self._no_rows
        alone = alone and rows is joint_rows     # (no contact row)
        # the two halves the sweeps solve on two cores, where the sweep has PARALLEL_MIN elements
        # (rows, blocks or manifolds: what `partition_elements` counts) or more; a smaller one is
        # serial, and so is its solve, not the two-thread kernel with one part and a thread choice
        # around it (the tank's 105 rows in about 30 elements took a third longer that way). Counted
        # in every sub-step, not only from PARALLEL_MIN rows on: a scene's warm-up then always loads
        # the kernel, and the app never takes it inside a frame where the scene first grows that
        # many rows (a heap whose contacts multiply as it falls)
        elements = self._element_calls(element_count, (rows.block,), (), (rows.block,))
        if elements >= PARALLEL_MIN:
            B = len(centre)
            if self._halves_room is None or len(self._halves_room[0]) != B:
                self._halves_room = (np.empty(B), np.empty(B, np.int64), np.empty(B, np.int64), np.empty(B, np.int64))
        side = halves(centre, self._halves_room) if elements >= PARALLEL_MIN else None
        # M₀⁻¹, kept through the sub-step: the caller's array is its bodies' now, written again later
        start_inertia = self._start_inverse_inertia
        if start_inertia is None or start_inertia.shape != getattr(inverse_inertia, "shape", None):
            start_inertia = self._start_inverse_inertia = np.empty(np.shape(inverse_inertia))
        np.copyto(start_inertia, inverse_inertia)
        given_inertia, inverse_inertia = inverse_inertia, start_inertia
        if settings.joint_solve == "soft" and self.joints is not None and len(self.joints):
            # a soft joint's body whose rotational mode under its joints' load is faster than the
            # sub-step turns more than its rows can hold: it takes the inertia that slows it to one
            # radian a sub-step (`physics.constraints.joints.stability_inertia`)
            if self._load_room is None or len(self._load_room) != len(inverse_mass):
                self._load_room = np.empty(len(inverse_mass))
            joints, bodies, room = self.joints, self._joint_bodies, self._load_room
            objects, values = (joints, joints.impulse, start_inertia, room), ("stability", float(abs(h)))
            (bodies.found(objects, *values) or bodies.bound(binding(
                stability_inertia, joints.model(), joints.impulse, float(abs(h)), start_inertia, room), objects, *values))()
        # (where the solve is left out, so are its rows' effective masses: `keep_solve` makes them)
        system = None if alone else prepare(rows, inverse_mass, inverse_inertia, self._prepared)
        self.step = PreparedStep(h, system, (inverse_mass, inverse_inertia), side, cold_start, deep, bounce,
                                 joint_start, bool(alone))
        self._again = None
        if alone and rattle and awake is None and active is None and self.contacts is not None \
                and not len(self._pairs) and side is None and self._starts \
                and self._starts[0].joint_start is joint_start and not settings.sleep:
            self._keep_again(world, velocity, inverse_mass, given_inertia, (settings.erp, settings.cfm, beta, softness))
        profile.lap("prepare/rows", t)

    def _start_joints(self, world, centre, rotation, velocity, B, h, settings, beta, softness, rattle):
        """The joints' start of a sub-step (`prepare`'s): (their rows, the `JointStart`, whether RATTLE's
        projections hold the rows alone). A recent start's call is made again at once where it is
        given what that one was (`_starts`, the latest first: most sub-steps find the latest, and a
        retry's halves their own, START_CALLS kept), its rows' views and `JointStart` kept while
        their count stays and no chord rows are asked for."""
        termed = bool(rattle and self._exact is not None)
        bodies = self._joint_bodies
        starts = self._starts
        for i, last in enumerate(starts):
            kept = last.arrays
            if kept[0] is centre and kept[1] is rotation and kept[2] is velocity and kept[3] is self.joints \
                    and kept[4] is bodies and kept[5] is self.carried.control \
                    and kept[6] is (self._exact if termed else bodies.terms.exact) \
                    and last.values == (h, beta, softness, termed, rattle, settings.joint_solve) \
                    and last.generation == generation():
                if i:       # (another's flags were written last: this one's again, and it is the latest now)
                    self._start_todo[1:] = last.flags
                    starts.insert(0, starts.pop(i))
                self._start_todo[0] = not bodies.start_taken(self.joints, centre, rotation)
                count, easing, alone = last.call()
                if self.joints_limited:
                    self._limit_easing = easing
                if count != len(last.joint_start.slots) or last.joint_start.chord is not None \
                        or (rattle and self.joints_termed and self._chord_wanted):
                    # (the chord rows written again; the `JointStart` kept while they are the same views)
                    joint_rows, slots = bodies.row_views(count)
                    chord = self._chord_rows(joint_rows, slots, bodies.start_rows, velocity) if rattle else None
                    if count != len(last.joint_start.slots) or chord is not last.joint_start.chord:
                        last.joint_start = self._joint_start_of(joint_rows, slots, termed, chord)
                return last.joint_start.rows, last.joint_start, alone
        if self.joints is None:
            self.joints = self._build_joints(world, centre, rotation)
        self.follow_frames(world)
        # With post-stabilization the joints' position error is projected out after the step
        # (`post_stabilize`), so the velocity solve carries no Baumgarte bias into the energy;
        # soft joints (settings.joint_solve) are held by that bias alone, the contacts' ERP and
        # CFM, their correction a split impulse like a contact's (`solve_changes`)
        joint_beta = 0.0 if POST_STABILIZATION and settings.joint_solve == "projected" else beta
        if self._joint_bodies is None or len(self._joint_bodies.index) != B + 1:
            self._joint_bodies = JointBodies(self.joints, B)
        bodies = self._joint_bodies
        if self._joints_forest is None or self._joints_forest[0] is not self.joints:
            self._joints_forest = (self.joints, forest(self.joints.body))
        # The start of the sub-step, one compiled call (`_joint_start`): J₀'s geometry (RATTLE's
        # first-kick directions, `project_joint_positions`; SHAKE's, `post_stabilize`), the joint
        # terms RATTLE takes, the rows, the poses x₀, R₀ copied, the soft limits for the
        # projections (a joint past its limit eases back at the ERP rate), a moving frame's speeds,
        # and whether the projections hold the rows by themselves. It is bound to the arrays its
        # arguments are made from and to the flags in `todo`, written before each call.
        termed = bool(rattle and self._exact is not None)
        todo = self._start_todo
        todo[0] = not bodies.start_taken(self.joints, centre, rotation)
        todo[1] = termed
        todo[2] = self.joints_limited
        todo[3] = self._any_framed
        todo[4] = bool(rattle and self._joints_forest[1])
        todo[5] = bool(self.joints.model().turning.any())
        # (the terms' call is left out where not termed: any (J,) bool stands for its choice then)
        exact = self._exact if termed else bodies.terms.exact
        s = self._coordinate_s if termed else bodies.terms.share       # (made with `_exact`)
        objects = (self.joints, centre, rotation, self.carried.control, velocity, exact, todo)
        values = ("start", float(h), float(joint_beta), float(softness), termed)
        halves = self._start_halves_of(self.joints)
        call = bodies.found(objects, *values) or bodies.bound(binding(
            _joint_start, todo, *bodies.start_arguments(self.joints, centre, rotation, float(h), float(joint_beta),
                                                        float(softness), self.carried.control, velocity, exact, s,
                                                        termed), velocity, float(h), halves), objects, *values)
        run = self._on_threads(call, halves)
        count, easing, alone = run()
        if self.joints_limited:
            self._limit_easing = easing
        joint_rows, slots = bodies.row_views(count)
        joint_start = self._joint_start_of(joint_rows, slots, termed, self._chord_rows(
            joint_rows, slots, bodies.start_rows, velocity) if rattle else None)
        if not self._any_framed and not typed(call):     # (a moving frame is followed before each start)
            current = generation()
            for i in range(len(starts) - 1, -1, -1):    # (bound in an older generation: never found again)
                if starts[i].generation != current:
                    del starts[i]
            starts.insert(0, _StartCall((centre, rotation, velocity, self.joints, bodies, self.carried.control, exact),
                                        (h, beta, softness, termed, rattle, settings.joint_solve), current,
                                        run, joint_start, tuple(todo[1:].tolist())))
            del starts[START_CALLS:]
        else:       # (what the latest start's call wrote is not what one found again would write: none is)
            starts.clear()
        return joint_start.rows, joint_start, alone

    def _start_halves_of(self, joints):
        """`_joint_start`'s halves for `joints`: None below SPLIT_JOINTS joints or on one core, else
        (0, J / 2, J, ·, ·, ·) int64 (made once for these joints)."""
        kept = self._start_halves
        if kept is None or kept[0] is not joints:
            J = len(joints.model().kind)
            halves = np.array([0, J // 2, J, 0, 0, 0], np.int64) if J >= SPLIT_JOINTS and cores() > 1 else None
            kept = self._start_halves = (joints, halves, ThreadChoice())
        return kept[1]

    def _on_threads(self, call, halves):
        """The joint start's bound `call` as a call of no arguments: itself where it is not split in
        `halves`, else made on the threads their `ThreadChoice` chooses (`_start_halves_of`; the same
        bits on one thread or two), made once a bound call, so a sub-step that finds it calls it alone."""
        return call if halves is None else partial(self._start_halves[2].run, int(halves[2]), call)

    def _joint_start_of(self, joint_rows, slots, termed, chord):
        """The `JointStart` of the joint rows `joint_rows` (of `slots`) the last start wrote, with their
        `chord` rows (`_chord_rows`, or None)."""
        bodies = self._joint_bodies
        return JointStart(slots, joint_rows, bodies.start_centre, bodies.start_rotation, bodies.start_rows.jacobian,
                          bodies.limit_slack if self.joints_limited else None, bodies.terms if termed else None,
                          bodies.frame_speed if self._any_framed else None, chord)

    def _keep_again(self, world, velocity, inverse_mass, inverse_inertia, surface):
        """After a prepare of joints alone (RATTLE's projections hold the rows by themselves) with no
        pair of shapes within reach: what the next one makes again at once where it is given what
        this one was (`_prepare_again`), where the shapes' placement and broad phase are this
        solver's bound calls. `surface`: (ERP, CFM, β, softness) of this prepare."""
        placing, reaching = self._placing, self._reaching
        storage = getattr(getattr(world, "transform", world), "storage", None)
        if storage is None or placing is None or placing[2] is None or reaching is None \
                or reaching[0][0][0] is not placing[2][1]:
            return
        self._again = _Again((world, storage, velocity, inverse_mass, inverse_inertia), placing, reaching, self._pairs,
                             self.step, surface)

    def _prepare_again(self, world, centre, rotation, velocity, inverse_mass, inverse_inertia, h, settings):
        """`prepare` made again as the last one (`_keep_again`) where it is given what that one was and
        its joints' start (`_start_joints`) finds the same rows and holds them alone, and the broad
        phase no pair: its bound calls alone, the same bits as `prepare`'s whole path. -> whether it
        did (else what it did is made again by `prepare`, to the same bits)."""
        again = self._again
        key, step = again.key, again.step
        if not (key[0] is world and key[2] is velocity and key[3] is inverse_mass and key[4] is inverse_inertia
                and key[1] is getattr(getattr(world, "transform", world), "storage", None) and step.h == h
                and self._placing is again.placing and self._reaching is again.reaching and not settings.sleep):
            return False
        t = profile.mark()      # (0 with no recorder on: its laps are then left out)
        erp, cfm, beta, softness = again.surface
        if settings.erp != erp or settings.cfm != cfm:
            beta, softness = beta_from_erp(settings.erp, abs(h)), settings.cfm / abs(h)
        _, joint_start, alone = self._start_joints(world, centre, rotation, velocity, len(inverse_mass), h, settings,
                                                   beta, softness, True)
        if joint_start is not step.joints or not alone:
            return False
        if t:
            t = profile.lap("prepare/rows", t)
        again.placing[2][0]()
        self._step_length[0] = h
        found, k, _ = again.reaching[1]()
        if found or k:      # (k: −2 where the grid's entries want room: `_candidates` sees to it)
            return False
        if t:
            t = profile.lap("prepare/broad phase", t)
        self.outside_pairs = 0
        self._pairs = again.pairs
        self.contacts = no_pairs(self.cache, len(self.shapes))
        if t:
            t = profile.lap("prepare/narrow phase", t)
        step.masses[1][...] = inverse_inertia     # (numpy's copyto dispatches at some twice the cost)
        self.step = step
        if t:
            profile.lap("prepare/rows", t)
        return True

    def _contact_rows(self, c, centre, velocity, world, h, lead, beta, softness, settings, before):
        """The sub-step's rows (`_contact_stage`) where a contact point is kept: `before` (the joints'
        `Rows`, or None), then the contact points' (in one piece: the restitution stage's indices count
        from the first). The points kept become `contacts`. -> (the `Rows`, or None where no point is
        kept; the rows that may bounce, or None; whether the step is a cold start; whether a point is
        deep)."""
        memo = self._contact_bundles    # (by each points' id too: the narrow phase's two sets are used in turn)
        # The narrow phase's whole set of room, its first len(c) the points (`whole_room`): one
        # bundle and one bound call for each set, whatever the count (points taken from a set's,
        # a sleeping scene's awake ones, are their own)
        whole = whole_room(self.cache, c)
        source = c if whole is None else whole
        first, J = self._rows_before(before)
        point_count = self._point_count
        point_count[0], point_count[1] = len(c), J
        # (partials, not lambdas: closures' cells would be made at every call)
        points = memo.find((source,), "points", id(source)) or memo.get(partial(
            ContactPoints, source.shape_a, source.shape_b, source.body_a, source.body_b, source.point_world,
            source.normal_world, source.depth, source.feature_id), (source,), "points", id(source))
        bodies = memo.find((centre, velocity), "bodies") or memo.get(
            partial(SolverBodies, self.body_of_node, centre, velocity), (centre, velocity), "bodies")
        params = self._contact_params(h, lead, beta, softness, settings)
        rows = J + 3 * len(c)     # (at most: the points kept are found in the call)
        if len(self._rows_room.target) < rows:     # (room for twice as many)
            self._rows_room = empty_row_arrays(2 * rows)
        stored, point_count[2] = self.cache.stored_room()      # (the first count of them: the cache's whole set)
        if len(self._point_room.keep) < max(len(c), point_count[2]):     # (the stored points: the warm start's)
            self._point_room = point_room(2 * max(len(c), int(point_count[2])))
        scratch = self._point_room
        kept, bounces, count, cold_start, deep = self._contact_call(
            (points, point_count, bodies, self._node_motion(world), self._materials, stored, first, self._rows_room,
             scratch), params)
        if kept < len(c):   # (the first `kept` points' views, made once for each room and count)
            kept_points = self._kept_points
            c = kept_points.find((source,), id(source), kept) or kept_points.get(
                partial(source.take, slice(kept)), (source,), id(source), kept)
        self.contacts = c
        if not kept:    # (none within reach: no rows)
            return None, None, False, False
        may_bounce = None
        if bounces:     # points approaching faster than BOUNCE_THRESHOLD with e > 0 (rare)
            may = np.flatnonzero(np.isfinite(scratch.approach[:kept]))
            offset = J
            may_bounce = (offset + 3 * may + 2, scratch.approach[may], scratch.static_normal[may], -c.depth[may],
                          scratch.e[may])
        return self._contact_row_views(count), may_bounce, cold_start, deep

    def _contact_params(self, h, lead, beta, softness, settings):
        """The contact stage's `ContactParams` for these values, the last one while they stay (the
        same values every steady sub-step: made afresh, gravity's list, its floats and the bundle
        were some 40 bytes of the ant's median sub-step)."""
        gravity = np.asarray(settings.gravity, float)      # (the settings' own array: no copy)
        # (`item`: Python floats, where indexing makes numpy scalars; gravity's values, as the array
        # may be written in place)
        values = (h, lead, bool(settings.warm_start), beta, softness, settings.max_contact_push_speed,
                  gravity.item(0), gravity.item(1), gravity.item(2))
        last = self._last_params
        if last is not None and last[0] == values:
            return last[1]
        g = math.hypot(values[6], values[7], values[8])
        params = ContactParams(h, lead, SPECULATIVE + g * h * h, values[2], beta, SLOP, BOUNCE_THRESHOLD, softness,
                               values[5])
        self._last_params = (values, params)
        return params

    def _contact_call(self, objects, params):
        """`_reachable_contact_stage` of these arguments (points, their count, bodies, nodes,
        materials, stored, before, room, scratch) and `params` (`ContactParams`), bound where they
        come back (`physics.core.compiled.SteadyCall`: the narrow phase's points, the cache's
        stored impulses and the joints' rows are each the whole of a set of room, two sets used in
        turn for the first two, their counts in `count`), so that a sub-step types no argument
        whatever its counts (the eight bundles' typing took more than the call's work on the ant's
        four feet) once they have come back often enough to pay for a bind; room that grows (a
        heap's first steps) is bound again."""
        values = (id(objects[0]), id(objects[5])) + params     # (the points' and stored impulses' sets: each its last)
        return self.contact_calls(_reachable_contact_stage, objects, values, objects[:6] + (params,) + objects[6:])

    def _contact_row_views(self, n):
        """The `Rows` of the first n rows of the contact rows' room (`_contact_stage` wrote them),
        made once for each count and room: the same object while the count stays, so that the
        solve's calls bound to it (`physics.constraints.gauss_seidel.SolveBuffers`) are found
        again. At most VIEWS_KEPT counts are kept."""
        room = self._rows_room
        views = self._contact_views.find((room,), n)       # (`Rows` of no row is falsy: None, not `or`)
        return views if views is not None else self._contact_views.get(partial(_first_rows, room, n), (room,), n)

    def overlaps(self, world):
        """The shape pairs that may collide and overlap by more than OVERLAP_TOLERANCE at the poses
        of `world` (the nodes' world state), and the deepest one (`Overlaps`): the broad phase on
        the shapes' own boxes, the narrow phase with a cache of its own (this solver's warm starts
        are left as they are). ContactBudgetError (at load) past PAIR_BUDGET candidate pairs."""
        lo, hi = aabbs(self.shapes, world)
        try:
            pairs = candidate_pairs(lo, hi, self.filter, PAIR_BUDGET)
        except TooManyPairs as error:
            raise ContactBudgetError(error.count, at_load=True) from None
        if not len(pairs):
            return Overlaps(0, -1, -1, 0.0)
        c = contacts(self.shapes, world, pairs, ContactCache())
        deep = c.depth > OVERLAP_TOLERANCE
        if not deep.any():
            return Overlaps(0, -1, -1, 0.0)
        count = len(np.unique(np.stack([c.shape_a[deep], c.shape_b[deep]], axis=1), axis=0))
        worst = int(np.argmax(np.where(deep, c.depth, -np.inf)))
        return Overlaps(count, int(c.body_a[worst]), int(c.body_b[worst]), float(c.depth[worst]))

    def sunk(self, world, inverse_mass, gravity):
        """The last `prepare`'s worst dynamic shape deeper inside a static or kinematic shape than
        SINK_SIZES times its own size (`bounding_diameters` × its node's scale in the world state
        `world`), or SINK_SIZES_PRESSED times under a body more than MASS_RATIO_HELD times heavier
        (`inverse_mass` (B,) per solver body; above it: against `gravity`), as a `Sunk`, or None: the
        contact points are those at the start-of-step poses."""
        c = self.contacts
        if c is None or not len(c.depth) or self._least_size == np.inf:    # (no shape of finite size: none sinks)
            return None
        up = self._up
        if up is None or up[0] != gravity[0] or up[1] != gravity[1] or up[2] != gravity[2]:   # (gravity changed)
            g = np.array(gravity, float)
            up = self._up = np.concatenate([g, -g / np.linalg.norm(g) if np.linalg.norm(g) > 0.0 else np.zeros(3)])
        k = self._deepest_sunk(c, world, inverse_mass)
        if k < 0:
            return None
        scale = world.scale
        moving, other = (c.shape_a[k], c.shape_b[k]) if self._rest.body[c.shape_a[k]] >= 0 else (c.shape_b[k], c.shape_a[k])
        node = int(self.shapes.node[moving])
        size = float(self.shape_size[moving] * scale[node])
        return Sunk(node, int(self.shapes.node[other]), float(c.depth[k]), size,
                    SINK_SIZES if c.depth[k] > SINK_SIZES * size else SINK_SIZES_PRESSED)

    def _deepest_sunk(self, c, world, inverse_mass):
        """`_deepest_sunk` of the points `c`: through a call bound to them, to `world`'s buffers (its
        `storage`) and to `inverse_mass` where these came before (the narrow phase's two sets of points
        are used in turn), found again among the last SUNK_CALLS by identity with no key made (a
        steady sub-step allocates nothing here); typed the first time (points whose count keeps
        changing, a pile's, come once each: a bind would cost more than the call)."""
        kept, storage, up, now = self._sunk_calls, world.storage, self._up, generation()
        i = 0
        while i < len(kept):
            found = kept[i]
            if found[0] is c and found[1] is storage and found[2] is inverse_mass and found[3] is up and found[4] == now:
                if found[5] is None:
                    kept[i] = found = found[:5] + (bind(_deepest_sunk, *self._sunk_arguments(c, world, inverse_mass)),)
                return found[5]()
            i += 1
        self._sunk_calls = [*kept[max(0, len(kept) + 1 - SUNK_CALLS):], (c, storage, inverse_mass, up, now, None)]
        return _deepest_sunk(*self._sunk_arguments(c, world, inverse_mass))

    def _sunk_arguments(self, c, world, inverse_mass):
        if len(self._pressed_room) < len(inverse_mass):
            self._pressed_room = np.zeros(len(inverse_mass), np.bool_)
        return (c.shape_a, c.shape_b, c.depth, c.normal_world, self._rest.body, self.shapes.node, self.shape_size,
                world.scale, SINK_SIZES, inverse_mass, self._up[3:], SINK_SIZES_PRESSED,
                self._pressed_room[:len(inverse_mass)])

    def heaviest_touching(self, node, inverse_mass):
        """(node, mass ratio) of the heaviest dynamic body touching `node`'s body in the last prepare's
        contacts, and its mass over that body's (inverse_mass (B,) per solver body), or None if it
        touches none."""
        c, mine = self.contacts, self.body_of_node[node]
        if c is None or mine < 0:
            return None
        best = None
        for node_a, node_b in zip(c.body_a.tolist(), c.body_b.tolist()):     # (the contacts' nodes)
            for here, there in ((node_a, node_b), (node_b, node_a)):
                other = self.body_of_node[there]
                if self.body_of_node[here] == mine and other >= 0 and other != mine and inverse_mass[other] > 0.0:
                    ratio = inverse_mass[mine] / inverse_mass[other]
                    if best is None or ratio > best[1]:
                        best = (there, float(ratio))
        return best

    def _place(self, world):
        """`place(self.shapes, world)`: through a call bound to `world`'s arrays (`placing`), made
        again for another world state, for its buffers moved (grown) or when a kernel gained a
        compiled version, into this solver's own `Placed`, which the next call rewrites (a prepare
        reads it within itself)."""
        made = self._placing
        live = getattr(world, "transform", world)
        # a NodeState's token for its buffers (its arrays are views, each access a new one); else the buffers
        storage = getattr(live, "storage", None)
        key = (world, storage) if storage is not None else \
            (world, *(_buffer_of(a) for a in (live.translation, live.rotation, live.scale)))
        if made is None or made[1] != generation() or not same(made[0], key):
            made = self._placing = (key, generation(), placing(self.shapes, world))
        if made[2] is None:
            return place(self.shapes, world)
        call, placed = made[2]
        call()
        return placed

    def _rows_before(self, rows):
        """(`RowArrays`, count) of the joints' `Rows` that come before the contacts' (None: none):
        the whole of the joint bodies' row room they are the first rows of (`JointBodies.row_views`),
        the same object whatever their count (a limit that engages or lets go changes it), else
        their own (`_row_arrays_of`)."""
        if rows is None:
            return _NO_ROWS, 0
        bodies = self._joint_bodies
        whole = bodies.row_arrays[0] if bodies is not None else None
        if whole is not None and rows.target.base is whole.target and rows.body.base is whole.body:
            return whole, len(rows.target)
        return self._row_arrays_of(rows), len(rows.target)

    def _row_arrays_of(self, rows):
        """`RowArrays` of the joints' `Rows` (views the joint bodies keep by count: the same object
        while the count stays), made once for each."""
        if self._row_arrays is None or self._row_arrays[0] is not rows:
            self._row_arrays = (rows, RowArrays(*_row_fields(rows)))
        return self._row_arrays[1]

    def _node_motion(self, world):
        """`NodeMotion` over the world state `world` (a NodeState, whose arrays are those of one
        topology, as this solver is), made once for it."""
        if world is not self._motion_of:
            self._motion_of = world
            self._motion = NodeMotion(world.translation, world.velocity, world.omega, world.acceleration, world.alpha)
        return self._motion

    def _candidates(self, placed, world, centre, velocity, h):
        """(pairs (K, 2) of shapes whose boxes (`placed`, at the poses of `world`), each grown by
        how far its shape can move within |h| (`_travel`), overlap; the narrow phase's margin:
        what the two farthest-moving shapes can close). Where `placed` is this solver's own, one
        call bound to these arrays (`_reaching_call`: a brute force over the filter's pairs, or the
        grid): the same pairs, in the same order."""
        lo, hi = placed.lo, placed.hi
        if self._placing is not None and self._placing[2] is not None and placed is self._placing[2][1]:
            key = (placed, world, centre, velocity)
            if self._reaching is None or self._reaching[0][1] != generation() \
                    or not same(self._reaching[0][0], key):
                self._reaching = ((key, generation()),) + self._reaching_call(lo, hi, world, centre, velocity)
            self._step_length[0] = h
            while True:
                _, call, out = self._reaching
                found, k, most = call()
                if k == -2:     # the grid's entries had no room: room for a quarter more, bound again
                    self._grid_entries = grid_entries(len(self.filter.grid().finite), found)
                    self._reaching = self._reaching[:1] + self._reaching_call(lo, hi, world, centre, velocity,
                                                                              len(out))
                    continue
                if found > PAIR_BUDGET:
                    raise ContactBudgetError(found)
                if k >= 0:
                    # a view of the buffer the next prepare's broad phase writes again: the pairs
                    # are read until then only (`pair_bodies`, within the sub-step), so no copy
                    # (a copy is 150 KiB a sub-step on the 32 × 32 net); its first k rows (`prepare`
                    # binds the narrow phase to the buffer)
                    return out[:k], SPECULATIVE + 2.0 * most
                # the grid's pairs had no room: room for a quarter more, bound again
                self._reaching = self._reaching[:1] + self._reaching_call(lo, hi, world, centre, velocity,
                                                                          grid_capacity(len(lo), found))
        travel = np.empty(len(self.shapes))
        most = _travel(self.shapes.node, lo, hi, SolverBodies(self.body_of_node, centre, velocity),
                       self._node_motion(world),
                       h, travel)
        grow = (SPECULATIVE + travel)[:, None]
        try:
            return candidate_pairs(lo - grow, hi + grow, self.filter, PAIR_BUDGET), SPECULATIVE + 2.0 * most
        except TooManyPairs as error:
            raise ContactBudgetError(error.count) from None

    def _reaching_call(self, lo, hi, world, centre, velocity, capacity=None):
        """(the broad phase's call bound to these arrays, its pairs' buffer) for `_candidates`: as a
        call of (pairs found, pairs in the buffer or −1 where it had no room, the largest travel),
        over the filter's candidates where the broad phase is a brute force (`_reaching_pairs`, whose
        buffer holds them all), else on the grid (`_reaching_grid`, room for `capacity` pairs, at
        first `grid_capacity`'s, and for the grid entries the last pass needed, `_grid_entries`, at
        first `grid_entries`'; a call whose scratch had too little room for its entries returns −2)."""
        arguments = (self.shapes.node, lo, hi, SolverBodies(self.body_of_node, centre, velocity),
                     self._node_motion(world), self._step_length)
        scratch = (np.empty_like(lo), np.empty_like(hi), np.empty(len(self.shapes)))
        if brute_force(self.filter):
            candidates = self.filter.allowed_pairs()
            out = np.empty_like(candidates)
            pairs = bind(_reaching_pairs, *arguments, candidates, *scratch, out)

            def call():
                k, most = pairs()
                return k, k, most
            return call, out
        grid = self.filter.grid()
        out = np.empty((grid_capacity(len(lo)) if capacity is None else capacity, 2), np.int64)
        cells = (np.empty((len(grid.finite), 3), np.int64), np.empty((len(grid.finite), 3), np.int64))
        room = grid_scratch(self.filter, len(out), self._grid_entries)
        return bind(_reaching_grid, *arguments, grid, *cells, room, *scratch, out), out

    def may_touch(self, world, centre, velocity, h):
        """Whether any two shapes may come into contact within |h| of these poses (the broad phase
        of `prepare` with boxes grown by the travel over |h|): where none may, a step of joints
        alone is free of contacts (`physics.pipeline.simulation` composes lie-midpoint-4's there)."""
        if not len(self.shapes):
            return False
        return bool(len(self._candidates(place(self.shapes, world), world, centre, velocity, h)[0]))

    def _awake_contacts(self, candidates, world, placed, margin, awake):
        """The candidate pairs to solve and their contacts when some bodies sleep (`awake` (B,),
        updated in place): the pairs with an awake body, after the sleeping bodies they reach woke
        (`physics.dynamics.sleeping.awake_pairs`), plus probes — a sleeping body against a static or kinematic shape that
        may move against it — that wake their body, and then its island, if they touch (within
        the margin). A probe that touches costs the narrow phase a second pass, with the woken
        bodies' pairs; probes that do not touch cost one narrow-phase test each."""
        solve, probe = awake_pairs(candidates, self._rest, awake)
        pairs = candidates[solve | probe]
        c = contacts(self.shapes, world, pairs, self.cache, margin=margin, placed=placed)
        if probe.any() and wake_touched(c.shape_a, c.shape_b, self._rest.body, awake):
            solve, probe = awake_pairs(candidates, self._rest, awake)
            pairs = candidates[solve | probe]
            c = contacts(self.shapes, world, pairs, self.cache, margin=margin, placed=placed)
            wake_touched(c.shape_a, c.shape_b, self._rest.body, awake)   # touched in both passes: awake now
        return pairs, c

    def _restitution_targets(self, velocity, fraction):
        """(R,) the restitution stage's J v target for the normal rows that may bounce, NaN elsewhere
        (`physics.constraints.constraints.restitution_targets`, from the free velocities (B, 6)); None if none may."""
        step = self.step
        if step.bounce is None or not len(step.bounce[0]):
            return None
        rows = step.system.rows
        target = np.full(len(rows), np.nan)
        index, approach, static_normal, gap, e = step.bounce
        body = rows.body[index]
        free = static_normal.copy()
        for side in range(2):
            moving = body[:, side] >= 0
            free[moving] += np.einsum("ic,ic->i", rows.jacobian[index[moving], side], velocity[body[moving, side]])
        target[index] = restitution_targets(approach, free, gap, e, step.h, fraction) - static_normal
        return target

    def _chord_rows(self, rows, slots, geometry, velocity):
        """`ChordRows` of the joint rows `slots` (prepare's, in row order): the equality rows and the
        soft rows of joint terms (the spring slot of a joint RATTLE's step does not take, an
        actuator's drive slot); None if there are none of the soft ones (nothing then sees the chord).
        Written into room kept for every row of the joints, through a call bound to it, and
        returned as views of it made once for each count (`_chord_views`)."""
        if not (self.joints_termed and self._chord_wanted):     # every term RATTLE's (or none): no soft term row
            return None
        joints = self.joints
        K = len(joints) * ROWS_PER_JOINT
        room = self._chord_room
        if room is None or len(room.index) != K:
            room = self._chord_room = ChordRows(np.empty(K, np.int64), *(np.empty(K) for _ in range(4)))
            self._chord_views = Memo(VIEWS_KEPT)
        # (no choice yet, or a choice made for other joints, as a restore may bring: none exact)
        chosen = self._exact is not None and len(self._exact) == len(joints)
        if not chosen and (self._no_exact is None or len(self._no_exact) != len(joints)):
            self._no_exact = np.zeros(len(joints), bool)
        exact = self._exact if chosen else self._no_exact
        objects = (slots, exact, joints.actuated, joints.armature, geometry.inequality, geometry.motor, rows.body,
                   rows.jacobian, rows.softness, rows.target, rows.relax, velocity, room)
        call = self._chord_calls.find(objects, "chord") or self._chord_calls.get(
            binding(_chord_rows_kernel, *objects), objects, "chord")
        n = call()
        if not n:
            return None
        views = self._chord_views
        return views.find((room,), n) or views.get(partial(_first_chord_rows, room, n), (room,), n)

    def keep_solve(self):
        """The sub-step prepared last solves its rows after all, though RATTLE's projections hold
        them by themselves (`PreparedStep.alone`): a timed impulse struck after its prepare stage
        (`physics.pipeline.stages.stage_events`). Its rows' effective masses are made now, from the
        rows and the start-of-step masses prepare kept: the same bits as made there."""
        step = self.step
        if step is None or not step.alone:
            return
        self.step = step._replace(system=prepare(step.joints.rows, *step.masses, self._prepared), alone=False)

    def leave_out_solve(self):
        """The solve stage of a sub-step whose rows RATTLE's projections hold by themselves
        (`PreparedStep.alone`, `_projections_alone`: the joints' equalities, limits far from their
        bounds and exact terms' fixed impulses of 0, or taken whole by their joints' rotors
        (`_rotor_takes_kicks`, here); no contact, motor, drive, soft spring row or other fixed
        impulse that acts) on a forest of joints (no loop, none through the world:
        `physics.constraints.joint_graph.forest`), left out. RATTLE's projections hold the
        equalities exactly, and the velocity solve's impulses along them would be only the position
        projection's first guess: the guess moves the bodies along the start-of-step rows'
        directions M₀⁻¹ J₀ᵀ, the directions the projection's Newton searches, whose root g(q₁) = 0
        is the same whatever the guess; the velocities then are the chord's (q₁ − q₀)/h with the
        free kick's lag, projected onto the end pose's tangent. On a forest the rows are independent
        and Newton converges quadratically from either start; a far limit's speculative row takes
        no impulse in the solve. Measured: the pendulum's and the double pendulum's bodies end
        within 2e-11 m of the solved step's after 320 steps, gymnasium's reacher's (dampers,
        armatures, limits) within 1e-15 m after 2 s (tests/test_rattle_alone.py), and their steps
        take a third and a quarter less time. A net's loops make its rows nearly redundant, and
        Newton's convergence there depends on where it starts: without the solve's guess the
        64 × 64 net's whipping projections stopped above the retry's standing error, and steps were
        halved past their budget (2.5 times their sub-steps), so loops keep the solve. Nothing is
        left to warm-start the joints' rows from (their stored impulses are 0) and the solve has no
        residual."""
        self.joints.impulse.fill(0.0)
        self.residual = _NO_RESIDUAL
        if self._held:      # (no contact row: none held)
            self._joint_bodies.holds.count.fill(0)
            self._held = False
        terms = self.step.joints.terms if self.step is not None and self.step.joints is not None else None
        if terms is not None:       # (bound to the start's terms, which a topology keeps)
            kicks = self._rotor_kicks
            if kicks is None or kicks[0] is not terms:
                kicks = self._rotor_kicks = (terms, bind(_rotor_takes_kicks, terms))
            kicks[1]()

    def solve(self, velocity, settings, fraction=1.0):
        """Warm start, solve, relax, restitution on the free velocities (B, 6); store the impulses.
        `fraction`: how much of an end-of-step velocity change the integrator's position update sees
        (`physics.core.choices.INTEGRATOR_TRAITS` (position_fraction); restitution targets depend on it).

        The chord (`ChordRows`). RATTLE moves the positions by the joint rows' whole impulse but by
        only f of the free kick: along a row, q₁ − q₀ = h (q̇' − (1 − f) J (v_free − v₀)), q̇' = J v'
        the end-of-step rate the solve works on. The equality rows aim at that chord's 0 and the
        soft rows of joint terms take their stiffness and damping at it (each target shifted by
        the lag (1 − f) J (v_free − v₀), a soft row's times its `ChordRows.weight`). At q̇', a servo
        holding its arm still (q₁ = q₀) would see q̇' = (h/2) q̈ of the free kick and its damper
        would carry D (h/2) q̈ of the load: the iiwa's held pose 4 mrad off at kv 200 (restitution's
        targets take the same lag, `_restitution_targets`). RATTLE's projections then take the positions
        and velocities onto the constraint, whatever the equality rows' first guess. (A timed impulse
        of the step is in v_free too, and the positions see all of it: the lag counts it as the free
        kick's, a first-order error for that one step.)"""
        step = self.step
        prepared = step.system
        restitution = self._restitution_targets(velocity, fraction)
        chord = step.joints.chord if step.joints is not None else None
        if chord is not None:       # (bound where its arguments come back: the chord's and rows' views by count)
            rows = prepared.rows
            self.steady_calls(_chord_targets, (rows.body, rows.jacobian, chord, velocity, rows.target, rows.relax),
                              (1.0 - fraction,),
                              (rows.body, rows.jacobian, chord, 1.0 - fraction, velocity, rows.target, rows.relax))

        warm = None
        if step.deep and settings.relax:    # the warm start, kept in room of the solver's (grown, never shrunk)
            R = len(prepared.rows.impulse)
            if len(self._warm_room) < R:
                self._warm_room = np.empty(2 * R)
            warm = self._warm_room[:R]
            np.copyto(warm, prepared.rows.impulse)
        solution = self._solve_stages(prepared, velocity, settings, restitution, False)
        if warm is not None and kinetic_energy(solution.velocity_relax, *step.masses) > kinetic_energy(velocity, *step.masses) * (1.0 + GAIN_TOLERANCE):
            prepared.rows.impulse[:] = warm     # DEEP_OVERLAP: the relax stage kept the push; solve again, relaxing afresh
            solution = self._solve_stages(prepared, velocity, settings, restitution, True)
        impulse = prepared.rows.impulse
        if step.joints is not None:
            self.joints.impulse.reshape(-1)[step.joints.slots] = impulse[:len(step.joints.slots)]
        if self.contacts is not None:
            c = self.contacts
            # (a point's rows are (t1, t2, n); the cache stores (n, t1, t2))
            self.cache.store(c, impulse[len(impulse) - 3 * len(c):].reshape(-1, 3), _NORMAL_FIRST)
        self._hold_contacts(prepared.rows, impulse)
        self.residual = solution.residual
        return solution

    def _hold_contacts(self, rows, impulse):
        """The contacts RATTLE's projections hold this sub-step (`physics.constraints.rattle.hold_contacts`):
        each body's directions along which a static shape pushed it in this solve. The
        projections move bodies along the joints' rows alone, and a knot of a whipping net resting
        on the ground was pressed into it by them, a millimetre a sub-step, faster than the split
        impulse pushed it out (the 64 × 64 net's knot fell through the ground); held, a body's
        centre moves along the ground, not into it."""
        bodies = self._joint_bodies
        points = 0 if self.contacts is None else len(self.contacts)
        if bodies is None or not (points or self._held):
            return
        holds = bodies.holds
        self.steady_calls(hold_contacts, (rows.body, rows.jacobian, impulse, holds.count, holds.normal, holds.direction),
                          (len(impulse) - 3 * points,),
                          (rows.body, rows.jacobian, impulse, len(impulse) - 3 * points, holds.count, holds.normal,
                           holds.direction))
        self._held = points > 0

    def _solve_stages(self, prepared, velocity, settings, restitution, fresh):
        """`physics.constraints.gauss_seidel.solve` of this sub-step's rows `prepared` on the free
        velocities, in this solver's room, with `settings`' sweeps and the step's options (`solve`)."""
        step = self.step
        most = COLD_START_SWEEPS if step.cold_start else None
        relax_iterations = min(settings.iterations, RELAX_ITERATIONS)
        if step.side is None:      # a sweep too small to split: one thread whatever the count
            return solve(prepared, velocity, settings.iterations, settings.sor, settings.warm_start, settings.relax,
                         relax_iterations, restitution, most, COLD_START_TOLERANCE, None, fresh, self._solved)
        # the halves on one thread or two, whichever is faster now (the same bits either way)
        return self._threads.run(len(prepared.rows), solve, prepared, velocity, settings.iterations, settings.sor,
                                 settings.warm_start, settings.relax, relax_iterations=relax_iterations,
                                 restitution=restitution, most=most, tolerance=COLD_START_TOLERANCE, side=step.side,
                                 fresh=fresh, buffers=self._solved)

    @property
    def limit_easing(self):
        """How far (rad or m) the last prepared sub-step's joints may stay past their limits
        (`physics.constraints.joints.Joints.limit_slack`: a joint loaded outside its range easing
        in), the largest; 0 without limits."""
        start = self.step.joints if self.step is not None else None
        if start is None or start.limit_slack is None:
            return 0.0
        return self._limit_easing       # (`Joints.limit_slack`'s largest, found as prepare wrote them)

    @property
    def frames_work(self):
        """Whether a joint's side a is a moving frame, which then does work on the bodies
        (`frame_work`, `physics.pipeline.data.Data.frame_work`)."""
        return self._any_framed

    def count_solve_frame_work(self):
        """Add to `frame_work` what the moving frames did through the last solve's joint rows:
        −λ J_a v_a per row (`physics.constraints.rattle._frame_work`), J_a v_a at the start of the step."""
        step = self.step
        if step is None or step.joints is None or step.joints.frame_speed is None:
            return
        slots = step.joints.slots
        np.subtract.at(self.frame_work, slots // ROWS_PER_JOINT,
                       step.system.rows.impulse[:len(slots)] * step.joints.frame_speed.reshape(-1)[slots])

    def joints_of(self, bodies):
        """(J,) bool: the joints whose side b is one of `bodies` (B,) bool (all: None)."""
        if bodies is None:
            return np.ones(len(self.joint_specs), bool)
        return bodies[[self.body_of_node[spec["b"]] for spec in self.joint_specs]]

    @cached_property
    def actuation(self):
        """`Actuation` of the joints' actuators, from their specs (the joints themselves are built at
        the first step; `physics.pipeline.stages.actuators_push`)."""
        specs = [(j, spec["actuator"]) for j, spec in enumerate(self.joint_specs) if "actuator" in spec]
        gear = np.array([a["gear"] for _, a in specs], float)
        b1 = np.array([a["bias"][1] for _, a in specs], float)
        ranged = np.array([bool(np.isfinite(a.get("force_range", (-np.inf, np.inf))).any()) for _, a in specs], bool)
        return Actuation(np.array([j for j, _ in specs], np.int64), gear,
                         np.array([a["gain"] for _, a in specs], float),
                         np.array([a["bias"][0] for _, a in specs], float), b1,
                         np.where((b1 < 0.0) & ~ranged, -gear * gear * b1, 0.0))

    def joint_energy(self, world, centre, rotation, velocity, bodies=None, control=None):
        """dict spring, armature (J): Σ ½ K (q − q_rest)² of the joints' springs and Σ ½ A q̇² of their
        armatures (MuJoCo's), q̇ = J v along the spring slot's row, at the solver bodies' poses centre
        (B, 3), rotation (B, 3, 3) and velocity (B, 6) [v, ω]; of the joints whose side b is in `bodies`
        (B,) bool, or of all (None). Where position servos are springs (`Actuation.servo`) and the
        actuators' `control` (J,) is given, also servo: Σ ½ k (q − q_c)² of each toward its target
        q_c = G (g c + b₀) / k, the force G (g c + b₀) − k q of its pull. The energy a servo stores is
        the joint's at a held control; a new control is an input (the runaway check's reference is
        taken again), as a motor's force is."""
        joints = self.joints_at(world, centre, rotation)
        geometry = joints.geometry(centre, rotation)
        rate = np.empty(len(joints))
        coordinate_rates(geometry, joints.model().body, np.ascontiguousarray(velocity, float), rate)
        mine = self.joints_of(bodies)
        stretch = geometry.coordinate - joints.spring_reference
        out = {"spring": float(0.5 * np.sum((joints.stiffness * stretch * stretch)[mine])),
               "armature": float(0.5 * np.sum((joints.armature * rate * rate)[mine]))}
        actuation = self.actuation
        spring = actuation.servo > 0.0
        if control is not None and spring.any():
            joint, k = actuation.joint[spring], actuation.servo[spring]
            target = actuation.gear[spring] * (actuation.gain[spring] * control[joint] + actuation.b0[spring]) / k
            pull = geometry.coordinate[joint] - target
            out["servo"] = float(0.5 * np.sum((k * pull * pull)[mine[joint]]))
        return out

    def take_frame_work(self, into):
        """Add `frame_work` since the last take to `into` (J,), and start again from 0."""
        into += self.frame_work
        self.frame_work[:] = 0.0

    def solve_changes(self, velocity, solution, h, fraction, push_speed, rattle, composed, inverse_inertia, dv, dx):
        """The changes the last `solve` makes to the bodies (`physics.pipeline.stages.stage_solve`), into
        dv, dx (B, 6) [v, ω] world: dv = the final velocities − `velocity` (B, 6), the free ones, and
        dx the split impulse (`physics.dynamics.body_passes.split_impulse_changes`: h f (relaxed −
        velocity) plus the bias part, at most `push_speed`); where `rattle` (the joints' rows are
        RATTLE's), dx gains h (1 − f) × the joint rows' share of the velocity change, M₀⁻¹ J₀ᵀ λ
        (RATTLE's first kick, which the positions see whole), after dx =
        h f (relaxed − velocity) where `composed` (its bias part then is no position's), and the
        angular dv, the solver's I₀⁻¹ ΔL, becomes I⁻¹ ΔL with the bodies' world inverse inertia now
        `inverse_inertia` (B, 3, 3). One compiled pass (`_solve_changes`)."""
        step = self.step
        scratch = self._change_scratch
        if scratch is None or len(scratch) != len(velocity) + 1:
            scratch = self._change_scratch = np.empty((len(velocity) + 1, 6))
        system, holds = step.system, _NO_HOLDS if self._joint_bodies is None else self._joint_bodies.holds
        objects = (velocity, solution.velocity_solve, solution.velocity_relax, solution.velocity_final, system.slot,
                   system.minv_jt, system.rows.impulse, step.masses[1], inverse_inertia, holds.count, holds.direction,
                   scratch, dv, dx)
        values = (h, fraction, push_speed, len(step.joints.slots) if rattle else -1, bool(composed))
        self.steady_calls(_solve_changes, objects, values)     # (its arrays first, its numbers after them)

    def choose_joint_terms(self, world, centre, rotation, inverse_mass, inverse_inertia, settings, composing):
        """Which joints' terms RATTLE's step takes this sub-step (`physics.constraints.rattle`, "Joint
        terms"), chosen from the state at its start (so a restored run chooses as the run it was
        taken from) and kept for its composed sub-steps and retries: every joint's spring, damper,
        armature and actuator without a force range, save those too stiff for the step, which stay
        the velocity solve's implicit soft rows (`joints_stiff`). With s = J M⁻¹ Jᵀ along the
        coordinate (its inverse inertia with the other joints free, at least the constrained one)
        and h the nominal sub-step, or where the step may be `composing` (a triple jump of equality
        joints) its longest sub-step, TRIPLE_JUMP_REACH × the nominal:
        - a spring, taken explicitly in the kicks (as MuJoCo's integrators take it), holds while
          h ω < 2, ω² = K s / (1 + A s): kept where h ω ≤ 1;
        - a damper at the coordinate's chord scales q̇ by (1 − a)/(1 + a) a step, a = h D s / 2(1 + A s):
          stable for h > 0, ringing past a = 1 (→ −1 as a grows): kept where a ≤ 1; the triple
          jump's backward sub-step meets a pole at a = 1/1.7: there kept where a ≤ 1/4.
        Where a joint with an armature is left out, no joint is RATTLE's this sub-step
        (`armature_left`, `physics.pipeline.stages.step_context`): RATTLE's projections weigh
        impulses by the bodies' masses alone."""
        last = self._last_choice    # (the last choice's calls, where their arguments are these: most sub-steps')
        if last is not None and last[0] is centre and last[1] is rotation and last[2] is inverse_mass \
                and last[3] is inverse_inertia and last[4] is self.joints and last[5] is self._joint_bodies \
                and last[6] == generation():
            step = self._choice_step
            step[0] = (TRIPLE_JUMP_REACH if composing else 1.0) * settings.dt / settings.substeps
            step[1] = 0.25 if composing else 1.0
            self._joint_bodies.take_start(self.joints, centre, rotation)
            self.joints_stiff, self.armature_left, self._chord_wanted = last[7]()
            return
        self._last_choice = None
        joints = self.joints_at(world, centre, rotation, keep=True)
        bodies = self._joint_bodies     # (its start rows are the prepare's to take: `take_start`)
        ready = bodies is not None and joints is self.joints and len(bodies.index) == len(inverse_mass) + 1
        if self._exact is None or len(self._exact) != len(joints):     # (kept: the calls below are bound to them)
            self._exact, self._coordinate_s = np.empty(len(joints), bool), np.empty(len(joints))
        step = self._choice_step
        step[0] = (TRIPLE_JUMP_REACH if composing else 1.0) * settings.dt / settings.substeps
        step[1] = 0.25 if composing else 1.0      # the largest a kept
        given_inertia, inverse_inertia = inverse_inertia, np.ascontiguousarray(inverse_inertia, float)
        if ready:       # (the Workspace's arrays: one call bound to them)
            # the start's rows, which the sub-step's prepare then takes at the same poses (not where a
            # joint rides a moving frame: prepare follows the frames again)
            geometry = bodies.geometry(joints, centre, rotation, bodies.velocity_rows) if self._any_framed \
                else bodies.take_start(joints, centre, rotation)
            objects = (joints, geometry, inverse_mass, inverse_inertia, self._exact)
            call = bodies.found(objects, "choose") or bodies.bound(binding(
                _choose_exact_terms, *self._choice_arguments(joints, geometry, inverse_mass, inverse_inertia)),
                objects, "choose")
            choice = call()
            if not self._any_framed and inverse_inertia is given_inertia and not typed(call):
                self._last_choice = (centre, rotation, inverse_mass, inverse_inertia, joints, bodies, generation(), call)
        else:
            geometry = joints.geometry(centre, rotation)
            choice = _choose_exact_terms(*self._choice_arguments(joints, geometry, inverse_mass, inverse_inertia))
        self.joints_stiff, self.armature_left, self._chord_wanted = choice

    def _choice_arguments(self, joints, geometry, inverse_mass, inverse_inertia):
        """`_choose_exact_terms`' arguments for `joints` and their rows `geometry` (`choose_joint_terms`)."""
        terms = joints.terms()      # (K, D and A: the control moves F₀ only)
        clamped = (joints.actuated != 0) & ~terms.actuator     # a drive slot's soft row beside an exact damper
        return (geometry, joints.model().body, inverse_mass, inverse_inertia, terms, clamped, self._choice_step,
                self._coordinate_s, self._exact)

    def project_joint_positions(self, world, centre, rotation, momentum, out=None, final=False, abandon=None):
        """RATTLE's positions (`physics.constraints.rattle.project_positions`) from the poses after the velocity
        solve, momentum (B, 3) the bodies' world angular momentum now: (dx, dθ) (B, 3) each, world, and the impulse × h that moved them (B, 6) [linear,
        angular], into `out` (three such arrays) if given; zeros without joints or before a `prepare`.
        Arrays the caller keeps (the Workspace's) keep the projection's call bound to them. `final`: its
        budget holds no retry; `abandon`: (start, left, step), the errors past which a projection stops, its
        sub-step certain to be taken again (`physics.constraints.rattle.JointBodies.positions`;
        `joint_abandoned` then says so, and the velocities' projection is left out)."""
        B = len(centre)
        self.joint_left_start_rows, self.joint_left_error, self.joint_start_error = False, 0.0, 0.0
        self.joint_curvature_error, self.joint_abandoned = 0.0, False
        step = self.step
        if step is None or step.joints is None or not POST_STABILIZATION:
            if out is None:
                return np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 6))
            for array in out:
                array.fill(0.0)
            return out
        start = step.joints
        self.follow_frames(world)       # the frames as they end the sub-step: g(q₁) = 0 there
        # (the start's poses, rows, slack, terms and frame speeds are prepare's, written into the joint
        # bodies' arrays, and M₀⁻¹ its own: nothing writes them until the next prepare)
        bodies = self._joint_bodies
        arguments = (self.joints, *step.masses, start.limit_slack is not None, start.terms is not None,
                     start.frame_speed is not None, centre, rotation, momentum, step.h, self.frame_work, out, final,
                     NEVER if abandon is None else abandon)
        dx, dtheta, impulse, self.joint_error = bodies.positions(*arguments)
        self._take_position_stats()
        return dx, dtheta, impulse

    def _take_position_stats(self):
        """The last position projection's figures (`physics.constraints.rattle.JointBodies.stats`): whether
        no root of g = 0 was found along J₀ (the projection left RATTLE's directions), its errors,
        whether it was abandoned."""
        stats = self._joint_bodies.stats      # (`item`: Python floats, with no list allocated as `tolist` does)
        left, left_error = stats.item(1), stats.item(4)
        self.joint_left_start_rows = bool(left) and left_error > 0.0     # (not one abandoned at its start)
        self.joint_left_error = left_error
        self.joint_curvature_error, self.joint_start_error = stats.item(3), stats.item(5)
        self.joint_abandoned = left == 2.0

    def joint_stage_fused(self):
        """Whether RATTLE's stage of this sub-step can be one compiled call (`project_joints`): its
        joints prepared, their graph's projections on one thread (not split in halves), no joint
        riding a moving frame (whose pose Python gives the joints before each projection)."""
        step = self.step
        return (POST_STABILIZATION and step is not None and step.joints is not None and not self._any_framed
                and self._joint_bodies.threads is None)

    def project_joints(self, passes, final=False, abandon=None):
        """RATTLE's stage in one compiled call (`physics.constraints.rattle.JointBodies.stage`), where
        `joint_stage_fused`: `project_joint_positions`, the kick and its changes applied, then
        `project_joint_velocities` and its changes applied, as the stages make them one by one (the
        same bits), on the bodies' passes' arrays `passes` (`physics.constraints.rattle.BodyPasses`).
        The position projection's figures are this solver's after it, as `project_joint_positions`
        leaves them."""
        step, bodies = self.step, self._joint_bodies
        start = step.joints
        self.joint_error = bodies.stage(self.joints, passes, step.masses, start.limit_slack is not None,
                                        start.terms is not None, self.frame_work, step.h, final,
                                        NEVER if abandon is None else abandon)
        self._take_position_stats()

    def project_joint_velocities(self, world, centre, rotation, velocity, inverse_inertia, out=None):
        """RATTLE's velocities (`physics.constraints.rattle.project_velocities`) at the end-of-step poses:
        Δv (B, 6) [v, ω] world, into `out` if given; inverse_inertia (B, 3, 3) world at these poses."""
        step = self.step
        if step is None or step.joints is None or not POST_STABILIZATION or self.joint_abandoned:
            if out is None:     # (an abandoned projection's sub-step is taken again: nothing to project)
                return np.zeros((len(centre), 6))
            out.fill(0.0)
            return out
        self.follow_frames(world)
        start = step.joints
        bodies = self._joint_bodies
        arguments = (self.joints, step.masses[0], start.limit_slack is not None, start.terms is not None, centre,
                     rotation, velocity, inverse_inertia, step.h, self.frame_work, out)
        return bodies.velocities(*arguments)

    def post_stabilize(self, world, centre, rotation, iterations, shake=True):
        """Post-stabilization as SHAKE (Ryckaert, Ciccotti & Berendsen 1977; Hairer, Lubich & Wanner,
        "Geometric Numerical Integration", VII.1, the constrained symplectic Euler): after the step,
        move the bodies along the **start-of-step** M⁻¹Jᵀ until the joints' position error vanishes,
        and give the velocities the same change over the step, Δv = Δq / h. "The Mathematics of Havok's
        Solver", "Post Stabilization" (an empty heading there); Cline & Pai, "Post-Stabilization for Rigid Body Simulation with
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
        prepared = self.step
        if prepared is None or prepared.joints is None or not POST_STABILIZATION:
            return dx, dtheta, np.zeros((B, 6))
        start_slots, limit_slack = prepared.joints.slots, prepared.joints.limit_slack
        if shake:   # the start-of-step rows, rigid (no CFM) and without motors
            start = prepared.joints.rows
            slot = start_slots % ROWS_PER_JOINT
            motor = (slot == DRIVE) | (slot == SPRING)      # not np.isin: 40 µs a sub-step on a pendulum
            position = prepare(Rows(start.body, start.jacobian, start.target, start.relax,
                                    np.where(motor, 0.0, start.lower), np.where(motor, 0.0, start.upper),
                                    np.zeros(len(start)), start.mu, np.zeros(len(start)), start.block),
                               *prepared.masses)
        centre, rotation = centre.copy(), rotation.copy()
        self.follow_frames(world)
        for _ in range(POST_STABILIZATION):
            rows, slots = self.joints.rows(centre, rotation, 1.0, 1.0,      # target −C: a position step
                                           limit_slack=limit_slack, frames_move=False)
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
                slot = slots % ROWS_PER_JOINT
                motor = (slot == DRIVE) | (slot == SPRING)      # velocity rows: no position part
                rows.lower[motor] = rows.upper[motor] = 0.0
                sweep(prepare(rows, *prepared.masses), step, rows.target, iterations, 1.0)
            centre += step[:, :3]
            rotation = turn_rows(step[:, 3:], rotation)
            dx += step[:, :3]
            dtheta += step[:, 3:]
        return dx, dtheta, np.concatenate([dx, dtheta], axis=1) / prepared.h
