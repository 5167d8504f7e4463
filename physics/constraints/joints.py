"""Joints: their rows in the solver's one row shape (`physics.constraints.constraints`), the geometry RATTLE's
projections evaluate (`joint_geometry`, compiled), and user constraints by forward AD.

Joints (rows per joint; `a` may be the world): ball (3 point rows), hinge (3 point rows, 2 angular
rows keeping the axes parallel, optional limit and motor about the axis), slider (2 linear rows
⊥ axis, 3 angular rows, optional limit and motor along the axis), fixed (3 point + 3 angular),
distance (1 row, |d| = L), rope (1 inequality row, |d| ≤ L). Chains and ropes are joints in series.
A user constraint C(x_a, R_a, x_b, R_b) gets its Jacobian by forward AD (`physics.math.dual`).

Each joint owns ROWS_PER_JOINT slots, whether a kind uses them or not: 0-2 linear (a point or the
directions ⊥ a slider's axis), 3-5 angular, 6 the limit, 7 the drive (the joint's motor or its
actuator), 8 the spring (stiffness and damping); `Joints.rows` emits the active ones with the block
codes of the sweep (a point's three equalities as one 3×3 block).

Drives and springs (hinge, slider, a six-axis joint's axis). Under RATTLE's integrators its step
takes a spring's, a damper's, an armature's and an unclamped actuator's terms exactly
(`physics.constraints.rattle`, "Joint terms"; `Joints.terms`). Elsewhere, and for a motor, dry
friction, a clamped actuator or a spring or damper too stiff for the step, they are soft velocity rows, the
seed's ERP/CFM ("The Mathematics of Havok's Solver" §3.3; Catto's soft constraints): a
generalized force τ = F₀ − K q − D q̇ on the joint coordinate q, taken at the end of the step (implicit, so a stiff spring or a strong damper on
a light link stays stable at any h), is the row J v = (F₀ − K q)/(hK + D) − λ/(h(hK + D)) (target
and softness; λ = h τ(q + h q̇', q̇')), bounded by the force range times h. With K = D = 0 it is
the fixed impulse F₀ h. A spring: F₀ = K q_rest. An actuator of gain g, bias (b₀, b₁, b₂) and gear
G acting on length G q (MuJoCo's `<general>`; a motor is g = 1, b = 0; a position servo g = kp,
b = (0, −kp, −kv); a velocity servo g = kv, b = (0, 0, −kv)): F₀ = G (g ctrl + b₀), K = −G² b₁,
D = −G² b₂, its force range ×G. An armature A (MuJoCo's: an inertia on the coordinate, a motor's
rotor seen through its gear) rides the spring slot as the impulse −A (q̇' − q̇₀) against the rate
q̇₀ at the step's start: that row is J v = (h(F₀ − K q) + A q̇₀)/(h²K + hD + A) − λ/(h²K + hD + A).
The coordinate q is the joint's `coordinate` at load plus the hinge angle (or the slider's travel)
from the pose as loaded.

Turns. A pose gives a hinge's angle only modulo 2π; MuJoCo's qpos, integrated, counts the turns. A
hinge's angle here is read within π of a centre c = q_load + `turned` (the atan2 of the pose, moved
by 2π k onto (c − π, c + π]), and the joints' start of each sub-step (`follow_turns`, at the poses
the last sub-step left) moves the centre onto the coordinate read wherever it has strayed more
than π/2 from it: so the coordinate is continuous while a hinge turns less than a quarter turn a
sub-step (45 turns a second at dt 1/60 in 3 sub-steps), and a spring, a servo or a limit past
±π acts on the turned angle, as MuJoCo's does. Only a hinge that may turn over is followed (its
limits not both within π of its load: `JointModel.turning`); until it has strayed, `turned` is 0 and
its coordinate keeps the bits of the plain reading. `turned` is state (snapshots keep it where it
is not all 0), set by `Joints.centre_on` where a user poses a joint.

Six-axis joints (Jolt's SixDOFConstraint, PhysX's D6, MuJoCo's several joints in one body): b moves
relative to a along up to three slides s_i, then turns about up to three hinges through one anchor,
each about its axis as the hinges before it turned it:

    R_b = R_a R_rest M(q),   M = Rot(k₁, q₁ − r₁) Rot(k₂, q₂ − r₂) Rot(k₃, q₃ − r₃),   d = R_a Σ s_i (q_i − r_i)

with d the anchor's displacement from its place on a, R_rest the rotation at the chart's zero
(q = r, MuJoCo's `ref`), s_i in a's frame and k_i constant. The SIX_AXIS joint holds what its axes
leave: 3 − (slides) linear rows ⊥ the slides (the point rows without slides) and 3 − (hinges)
angular rows (a fixed joint's without hinges; a hinge's two with one; with two, the universal
joint's C = e₁ · R_b k₂ − k₁ · k₂ along R_b k₂ × e₁; none with three: a ball). Each axis is an AXIS
joint of its own (its name, limit, drive and spring slots, as a hinge or a slider has). Its
coordinate: a slide's q_i = r_i + w_i · R_aᵀ d with w_i the dual basis of the slides (w_i · s_j = δ_ij,
w_i in their span); a hinge's the Davenport angles of M (Shuster & Markley, "Generalization of
Euler Angles", 2003): with three,

    A cos θ₂ + B sin θ₂ = k₁ᵀ M k₃ − (k₁·k₂)(k₂·k₃),   A = k₁·k₃ − (k₁·k₂)(k₂·k₃),  B = k₁ · (k₂ × k₃)

(of its two roots, one rotation with (θ₁ + π, θ₃ + π), the one nearer θ₂ as loaded: the pose alone
cannot tell them apart, MuJoCo's qpos can; so the coordinates are MuJoCo's while the middle hinge
stays within the gimbal locks about its loaded angle, π/2 for orthogonal axes), then θ₁ the angle
about k₁ from Rot(k₂, θ₂) k₃ to M k₃ and −θ₃ the angle about k₃ from Rot(k₂, −θ₂) k₁ to Mᵀ k₁; with
two, θ₁ from k₂ to M k₂ about k₁ and −θ₂ from k₁ to Mᵀ k₁ about k₂; with one, the angle of M about
k₁. Each hinge's angle counts its turns, as a hinge's does ("Turns" above; the middle of three
hinges picks its root about its value as loaded still). Its row: the coordinate's rate q̇_i = w_i · (v or ω), w_i row i
of E⁻¹, E's columns the world axes e_i (the slides, with the lever r_a + d as a slider's; the hinges
e₁ = R_a R_rest k₁, e₂ = R_a R_rest Rot(k₁, θ₁) k₂, e₃ = R_b k₃, completed by the locked
directions).

Side a may be a moving frame: a kinematic node, or a node fixed to one, whose motion is prescribed
(`Joints.set_frames`). Its anchor, axis and reference are then in that frame, whose pose places
them, and whose velocity is a known J_a v_a in every row: side b aims at the row's target less it
(`JointGeometry.frame_speed`), as a contact on a moving surface does. The
family: these rows, RATTLE's position and velocity projections (`physics.constraints.rattle`) and SHAKE's
post-stabilization (`physics.constraints.solver`, `SceneSolver.post_stabilize`).
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physics.core.compiled import kernel
from physics.constraints.constraints import IN_BLOCK, INF, SINGLE, TRIPLE, Rows, empty_row_arrays, tangent_basis
from physics.math.dual import Dual
from physics.math.rotation import hat
from physics.math.rotation_kernels import cross as cross3
from physics.math.rotation_kernels import angle_about, dot, load33, matmul, matvec, matvec_t, rotate_about
from physics.math.rotation_kernels import rotvec_from_matrix as rotvec3, solve3, sub, tangent_basis as basis3, transpose

BALL, HINGE, SLIDER, FIXED, DISTANCE, ROPE, SIX_AXIS, AXIS = range(8)
JOINT_KINDS = {"ball": BALL, "hinge": HINGE, "slider": SLIDER, "fixed": FIXED, "distance": DISTANCE, "rope": ROPE,
               "six_axis": SIX_AXIS}
ALL_KINDS = tuple(JOINT_KINDS.values()) + (AXIS,)   # AXIS: one coordinate of a six-axis joint (its `axes`)
AXES_MAX = 3        # slides, and hinges, of one six-axis joint
ROWS_PER_JOINT = 9  # slots: 0-2 linear, 3-5 angular, 6 limit, 7 drive, 8 spring
LIMIT, DRIVE, SPRING = 6, 7, 8
LIMIT_EASING_TIME = 0.02    # s: a joint loaded past its limit eases in with this time constant (`Joints.limit_slack`)
NO_ACTUATOR = 0     # Joints.actuated: the joint's drive slot is its motor (motor_force > 0) or unused
ACTUATED = 1        #   an actuator's (gain, bias, gear: `fill_joint_rows`)


class JointModel(NamedTuple):
    """A `Joints`' model arrays as one bundle for the compiled kernels (`joint_geometry`)."""
    kind: np.ndarray            # (J,) int64
    body: np.ndarray            # (J, 2) int64
    anchor: np.ndarray          # (J, 2, 3)
    axis: np.ndarray            # (J, 2, 3)
    reference: np.ndarray       # (J, 2, 3)
    rest: np.ndarray            # (J, 3, 3)
    length: np.ndarray          # (J,)
    lower: np.ndarray           # (J,)
    upper: np.ndarray           # (J,)
    motor_force: np.ndarray     # (J,)
    coordinate: np.ndarray      # (J,) the coordinate's value as loaded
    driven: np.ndarray          # (J,) bool: the drive slot is active (a motor or an actuator)
    sprung: np.ndarray          # (J,) bool: the spring slot is active (stiffness, damping, armature > 0 or an actuator)
    limit_slack: np.ndarray     # (J,) ≥ 0: how far past its limit the joint may stay this step (soft limits)
    # Side a on a moving frame (a kinematic node, or a node fixed to one: `Joints.set_frames`): the
    # anchor, axis and reference of side a are in that frame, whose world pose and motion are these
    framed: np.ndarray          # (J,) bool: side a is a moving frame (else a body, or the world)
    frame_centre: np.ndarray    # (J, 3) the frame's origin, world
    frame_rotation: np.ndarray  # (J, 3, 3) its world rotation
    frame_velocity: np.ndarray  # (J, 6) [v, ω] world: its origin's velocity and its angular velocity
    # A six-axis joint's axes ("Six-axis joints" above), on the SIX_AXIS joint and on each of its AXIS joints
    axes: np.ndarray            # (J, 6, 3) its slides' directions in a's frame, then its hinges' axes k_i
    axis_offset: np.ndarray     # (J, 6) each axis's coordinate where the chart is at its zero (MuJoCo's ref)
    axis_load: np.ndarray       # (J, 6) each axis's coordinate as loaded (the branch of its angle: `_axis_state`)
    axis_count: np.ndarray      # (J, 2) int64 (slides, hinges), each 0..AXES_MAX
    member: np.ndarray          # (J,) int64 an AXIS joint's axis: 0 .. slides + hinges − 1 (−1 elsewhere)
    # Turns ("Turns" above): state, not model (`Joints.turned`, the array itself: the joints' start writes it)
    turned: np.ndarray          # (J,) rad: the hinge's angle is read within π of its coordinate at load + turned
    turning: np.ndarray         # (J,) bool: a hinge whose limits do not both lie within π of its load (it may turn over)


class JointGeometry(NamedTuple):
    """Every (joint, slot) row of `joint_geometry`, whether active or not (J, ROWS_PER_JOINT, ...)."""
    C: np.ndarray               # (J, ROWS_PER_JOINT) position error, m or rad
    jacobian: np.ndarray        # (J, ROWS_PER_JOINT, 2, 6) [lin, ang] per side, world; zero on a static side
    active: np.ndarray          # (J, ROWS_PER_JOINT) bool: the row exists (kind, limits, motor)
    inequality: np.ndarray      # (J, ROWS_PER_JOINT) bool: C ≥ 0 (rope, limit)
    motor: np.ndarray           # (J, ROWS_PER_JOINT) bool: a velocity target, not a constraint (drive, spring)
    coordinate: np.ndarray      # (J,) the joint coordinate q (hinge, slider with a limit, drive or spring)
    frame_speed: np.ndarray     # (J, ROWS_PER_JOINT) J_a v_a of a row whose side a is a moving frame (0 elsewhere): the
    #                             frame's share of J v, which its row's targets leave to side b


class JointTerms(NamedTuple):
    """The joints' generalized forces τ = F₀ − K q − D q̇ and armatures A as RATTLE's step takes them
    (`physics.constraints.rattle`, "Joint terms"; `Joints.terms`), with the coordinates and rates
    they start the step from."""
    exact: np.ndarray           # (J,) bool: the joint's terms are RATTLE's (else the velocity solve's soft rows)
    actuator: np.ndarray        # (J,) bool: its actuator's force is among them (an actuator without a force range)
    force: np.ndarray           # (J,) F₀
    stiffness: np.ndarray       # (J,) K
    damping: np.ndarray         # (J,) D
    armature: np.ndarray        # (J,) A
    coordinate: np.ndarray      # (J,) q₀ at the start of the step
    rate: np.ndarray            # (J,) q̇₀ = J₀ v₀ at the start of the step
    share: np.ndarray           # (J,) the links' share of the first kick: 1 / (1 + A s) with an armature, else 1;
                                # 0 where the solve is left out (the rotor takes it whole)


_NO_TERMS = {}      # J → `JointTerms` with none taken (read only, made once)


def no_terms(J):
    """`JointTerms` of J joints with none taken (shared, read only)."""
    terms = _NO_TERMS.get(J)
    if terms is None:
        z = np.zeros(J)
        terms = _NO_TERMS[J] = JointTerms(np.zeros(J, np.bool_), np.zeros(J, np.bool_), z, z, z, z, z, z, np.ones(J))
    return terms


def joint_geometry_arrays(J):
    return JointGeometry(np.zeros((J, ROWS_PER_JOINT)), np.zeros((J, ROWS_PER_JOINT, 2, 6)),
                         *(np.zeros((J, ROWS_PER_JOINT), np.bool_) for _ in range(3)), np.zeros(J),
                         np.zeros((J, ROWS_PER_JOINT)))


@kernel(refcounts=False)
def _store_row(out, j, slot, C, direction, lever_a, lever_b, linear, static_a, static_b):
    """Row (j, slot): C and J = [−u, −r_a × u | u, r_b × u] (linear) or [0, −u | 0, u] (angular).
    A kernel of its own, not inlined: `joint_geometry` stores rows at some fifteen places, and numba
    types and lowers an inlined helper again at each, which made joint_geometry's own compile 27 s
    of CPU; called, it is 10 s, with the same bits. A call is passed the whole bundle, which costs
    more than the row: a joint's point rows, the most common, are written inline (`_point_rows`)."""
    out.C[j, slot] = C
    out.active[j, slot] = True
    jac = out.jacobian[j, slot]
    jac[:] = 0.0
    ang_a = cross3(lever_a, direction) if linear else direction
    ang_b = cross3(lever_b, direction) if linear else direction
    for i in range(3):
        if linear:
            jac[0, i], jac[1, i] = -direction[i], direction[i]
        jac[0, 3 + i], jac[1, 3 + i] = -ang_a[i], ang_b[i]
    if static_a:
        jac[0, :] = 0.0
    if static_b:
        jac[1, :] = 0.0


@kernel(inline=True)
def _unit(v):
    """v / |v|; the zero vector for a zero v (parallel axes: a state no load accepts)."""
    n = np.sqrt(dot(v, v))
    return (v[0] / n, v[1] / n, v[2] / n) if n > 0.0 else (0.0, 0.0, 0.0)


@kernel(inline=True)
def _wrapped(angle):
    """angle in (−π, π]."""
    return np.arctan2(np.sin(angle), np.cos(angle))


@kernel(inline=True)
def _turned_angle(angle, turned):
    """A hinge's angle in (−π, π] from its pose at load, read within π of `turned` (module
    docstring, "Turns"); the angle itself, its bits, where turned is 0."""
    return angle if turned == 0.0 else turned + _wrapped(angle - turned)


@kernel(inline=True)
def _hinge_load(model, j):
    """Hinge row j's coordinate at load: a hinge's `coordinate`, a six-axis joint's hinge axis's
    `axis_load`."""
    return model.axis_load[j, model.member[j]] if model.kind[j] == AXIS else model.coordinate[j]


@kernel(inline=True)
def _hinge_coordinate(model, j, n_a, ref_a, ref_b):
    """Hinge j's coordinate: its coordinate at load plus the angle atan2(n_a · (ref_a × ref_b),
    ref_a · ref_b) from its pose at load (world axis n_a and references), read about its turns."""
    return model.coordinate[j] + _turned_angle(np.arctan2(dot(n_a, cross3(ref_a, ref_b)), dot(ref_a, ref_b)),
                                               model.turned[j])


@kernel(inline=True)
def follow_turns(model, centre, rotation, geometry):
    """Move each turning hinge's centre onto its coordinate where they are more than π/2 apart
    (module docstring, "Turns"): turned_j = q_j − q_load, q_j its coordinate at the poses of a
    sub-step's start (centre (B, 3), rotation (B, 3, 3)): `geometry.coordinate` where the geometry
    reads it (a limit, a drive or a spring on the hinge, a six-axis joint's axis), else read here,
    once a sub-step (a plain hinge's coordinate acts on nothing: RATTLE's Newton iterations do not
    read it). The angle is then read within π of where the hinge is, so a hinge that turns less
    than π/2 before the next start is read on its own turn."""
    for j in range(len(model.kind)):
        if not model.turning[j]:
            continue
        q = geometry.coordinate[j]
        if model.kind[j] == HINGE and not (np.isfinite(model.lower[j]) or np.isfinite(model.upper[j])
                                           or model.driven[j] or model.sprung[j]):
            R_a, R_b, _, _, _ = _sides(model, j, centre, rotation)
            q = _hinge_coordinate(model, j, matvec(R_a, (model.axis[j, 0, 0], model.axis[j, 0, 1], model.axis[j, 0, 2])),
                                  matvec(R_a, (model.reference[j, 0, 0], model.reference[j, 0, 1],
                                               model.reference[j, 0, 2])),
                                  matvec(R_b, (model.reference[j, 1, 0], model.reference[j, 1, 1],
                                               model.reference[j, 1, 2])))
        load = _hinge_load(model, j)
        if abs(q - (load + model.turned[j])) > 0.5 * np.pi:
            model.turned[j] = q - load


@kernel(inline=True)
def _dual_rows(c0, c1, c2):
    """The rows w_i of E⁻¹, E's columns c₀, c₁, c₂: w_i · c_j = δ_ij. At a gimbal lock (E singular: the
    first and last of three hinges aligned) the coordinates' rates are undefined, as MuJoCo's are
    there: zero rows, which no row of the solver can act along."""
    if dot(c0, cross3(c1, c2)) == 0.0:
        zero = (0.0, 0.0, 0.0)
        return zero, zero, zero
    rows = (c0, c1, c2)
    return solve3(rows, (1.0, 0.0, 0.0)), solve3(rows, (0.0, 1.0, 0.0)), solve3(rows, (0.0, 0.0, 1.0))


@kernel(inline=True)
def _axes_frames(model, j, R_a, R_b, d):
    """The bases `_axis_state` reads a six-axis joint's coordinates from, as tuples (nothing
    allocated: `joint_geometry` counts no references): (d_a, the slides' local directions s and
    their dual rows, the hinges' angles θ, their world directions e and dual rows), each a triple
    (the hinges' zero where it has none)."""
    ns, nh = model.axis_count[j, 0], model.axis_count[j, 1]
    d_a = matvec_t(R_a, d)
    s0 = (model.axes[j, 0, 0], model.axes[j, 0, 1], model.axes[j, 0, 2])
    s1 = (model.axes[j, 1, 0], model.axes[j, 1, 1], model.axes[j, 1, 2])
    s2 = (model.axes[j, 2, 0], model.axes[j, 2, 1], model.axes[j, 2, 2])
    if ns == 1:
        s1, s2 = basis3(s0)
    elif ns == 2:
        s2 = _unit(cross3(s0, s1))
    elif ns == 0:
        s0, s1, s2 = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
    slides = (s0, s1, s2)
    dual_s = _dual_rows(s0, s1, s2)
    zero = (0.0, 0.0, 0.0)
    if nh == 0:
        return d_a, slides, dual_s, zero, (zero, zero, zero), (zero, zero, zero)
    Z = matmul(R_a, load33(model.rest, j))
    M = matmul(transpose(Z), R_b)
    k0 = (model.axes[j, ns, 0], model.axes[j, ns, 1], model.axes[j, ns, 2])
    k1 = (model.axes[j, ns + 1, 0], model.axes[j, ns + 1, 1], model.axes[j, ns + 1, 2])
    k2 = (model.axes[j, ns + 2, 0], model.axes[j, ns + 2, 1], model.axes[j, ns + 2, 2])
    theta0, theta1, theta2 = 0.0, 0.0, 0.0
    if nh == 1:
        r, _ = basis3(k0)
        theta0 = angle_about(k0, r, matvec(M, r))
    elif nh == 2:
        theta0 = angle_about(k0, k1, matvec(M, k1))
        theta1 = -angle_about(k1, k0, matvec_t(M, k0))
    else:
        k12, k23 = dot(k0, k1), dot(k1, k2)
        A, B = dot(k0, k2) - k12 * k23, dot(k0, cross3(k1, k2))
        rho = np.sqrt(A * A + B * B)
        phi = np.arctan2(B, A)
        cosine = (dot(k0, matvec(M, k2)) - k12 * k23) / rho if rho > 0.0 else 1.0    # (ρ = 0: k₁ ∥ k₂)
        spread = np.arccos(min(1.0, max(-1.0, cosine)))
        first, second = np.arctan2(np.sin(phi + spread), np.cos(phi + spread)), \
            np.arctan2(np.sin(phi - spread), np.cos(phi - spread))
        # the two roots are one rotation (θ₁ + π, π − θ₂, θ₃ + π): the one nearer the load's is read,
        # as MuJoCo's qpos would have it, within π/2 of it for orthogonal axes (the gimbal locks)
        middle = model.axis_load[j, ns + 1] - model.axis_offset[j, ns + 1]
        theta1 = first if abs(_wrapped(first - middle)) <= abs(_wrapped(second - middle)) else second
        theta0 = angle_about(k0, rotate_about(k1, theta1, k2), matvec(M, k2))
        theta2 = -angle_about(k2, rotate_about(k1, -theta1, k0), matvec_t(M, k0))
    e0, e1, e2 = matvec(Z, k0), matvec(Z, rotate_about(k0, theta0, k1)), matvec(R_b, k2)
    if nh == 1:
        e1, e2 = basis3(e0)
    elif nh == 2:
        e2 = _unit(cross3(e0, e1))
    return d_a, slides, dual_s, (theta0, theta1, theta2), (e0, e1, e2), _dual_rows(e0, e1, e2)


@kernel(refcounts=False)
def _axis_state(model, j, R_a, R_b, d, m):
    """Axis m of six-axis joint j (module docstring, "Six-axis joints"), from its model row j (the
    SIX_AXIS joint or any of its AXIS joints): R_a, R_b the sides' world rotations, d the anchor's
    displacement from its place on a (world); -> its coordinate q_m, its w_m (world: q̇_m = w_m · the
    relative velocity) and its world direction e_m, the slides first. The locked directions complete
    the slides' and the hinges' bases."""
    ns = model.axis_count[j, 0]
    d_a, slides, dual_s, theta, e, dual_e = _axes_frames(model, j, R_a, R_b, d)
    if m < ns:
        return model.axis_offset[j, m] + dot(dual_s[m], d_a), matvec(R_a, dual_s[m]), matvec(R_a, slides[m])
    i = m - ns
    centre = model.axis_load[j, m] + model.turned[j]     # (turned 0: the load's own bits)
    return centre + _wrapped(model.axis_offset[j, m] + theta[i] - centre), dual_e[i], e[i]


@kernel(inline=True)
def _sides(model, j, centre, rotation):
    """Joint j's sides at the poses: (R_a, R_b, r_a, r_b, d), each side's rotation (a moving frame's
    or the world's identity where it has no body), its anchor's lever from its origin, world, and
    d = (x_b + r_b) − (x_a + r_a)."""
    eye = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    a, b = model.body[j, 0], model.body[j, 1]
    framed = a < 0 and model.framed[j]
    R_a = load33(rotation, a) if a >= 0 else load33(model.frame_rotation, j) if framed else eye
    R_b = load33(rotation, b) if b >= 0 else eye
    x_a = (centre[a, 0], centre[a, 1], centre[a, 2]) if a >= 0 else \
        (model.frame_centre[j, 0], model.frame_centre[j, 1], model.frame_centre[j, 2]) if framed else (0.0, 0.0, 0.0)
    x_b = (centre[b, 0], centre[b, 1], centre[b, 2]) if b >= 0 else (0.0, 0.0, 0.0)
    r_a = matvec(R_a, (model.anchor[j, 0, 0], model.anchor[j, 0, 1], model.anchor[j, 0, 2]))
    r_b = matvec(R_b, (model.anchor[j, 1, 0], model.anchor[j, 1, 1], model.anchor[j, 1, 2]))
    d = sub((x_b[0] + r_b[0], x_b[1] + r_b[1], x_b[2] + r_b[2]), (x_a[0] + r_a[0], x_a[1] + r_a[1], x_a[2] + r_a[2]))
    return R_a, R_b, r_a, r_b, d


@kernel
def axes_coordinates(model, centre, rotation, q, point, axis):
    """Each AXIS joint's coordinate q (J,), its anchor on b, point (J, 3), and its axis (J, 3) in the
    world at the poses (`_axis_state`); the other joints' rows are left as they are."""
    for j in range(len(model.kind)):
        if model.kind[j] != AXIS:
            continue
        R_a, R_b, r_a, r_b, d = _sides(model, j, centre, rotation)
        q[j], _, e = _axis_state(model, j, R_a, R_b, d, model.member[j])
        b = model.body[j, 1]
        for c in range(3):
            point[j, c] = r_b[c] + (centre[b, c] if b >= 0 else 0.0)
            axis[j, c] = e[c]


@kernel(inline=True)
def _inverse3(m):
    """m⁻¹ of a 3 × 3 tuple matrix, by its columns m⁻¹ e_i (`solve3`)."""
    c0, c1, c2 = solve3(m, (1.0, 0.0, 0.0)), solve3(m, (0.0, 1.0, 0.0)), solve3(m, (0.0, 0.0, 1.0))
    return ((c0[0], c1[0], c2[0]), (c0[1], c1[1], c2[1]), (c0[2], c1[2], c2[2]))


@kernel(refcounts=False)
def stability_inertia(model, impulse, h, inverse_inertia, load):
    """Soft joints' added rotational inertia (settings.joint_solve "soft", `SceneSolver.prepare`), in
    place on the bodies' world inverse inertia (B, 3, 3) that the sub-step's solve takes; `load`
    (B,) scratch. Returns how many bodies took some.

    A joint's force f acting at the lever r turns with its body: the torque r × f changes with the
    body's rotation θ at the rate ‖∂(r × f)/∂θ‖ ≤ |f| |r|, the geometric stiffness (a torque τ of an
    angular row: ≤ |τ|). A body of inertia I so loaded has a rotational mode of frequency
    ω ≈ √(K/I), K = Σ |f| |r| + Σ |τ| over its joints. The soft solve takes each sub-step's rows at
    its start; where ω h passes 1 the body turns by more than a radian a sub-step, the rows it was
    solved along no longer hold it, and its joints come apart as it spins: a net's hook corner, a
    0.1 kg sphere carrying half a tonne on 0.15 m levers (ω some 2,000 rad/s against 240 sub-steps a
    second), spins at 200 rad/s without it and opens by 1.5 m. Each such body takes the inertia k
    that brings its mode to ω h = 1, isotropic,

        k = max(0, h² K − I_min),   I⁻¹ ← (I + k 1)⁻¹,

    with f = λ/h from the last sub-step's impulses (the warm start's, `Joints.impulse`), so
    h² K = h Σ (|λ_point| |r| + |λ_angular|), and I_min ≥ 1 / (the largest absolute row sum of I⁻¹).
    Geometric stiffness in the solve (Andrews, Teichmann & Kry, "Geometric Stiffness for Real-time
    Constrained Multibody Dynamics", 2017) adds h² K in full, which damps every loaded body; this
    adds only the shortfall, so a body whose mode its sub-step resolves keeps its inertia bit for bit
    (a 1 m pendulum's bob: h² K = 7e-4 kg m² against I = 4e-3). The statics are untouched (they
    hold no inertia); a loaded body's spin answers its joints more slowly, which is the cost.
    Rows 6-8 (limit, drive, spring) act along the joint's axis: a force at side b's lever for a
    slider or a six-axis joint's slide, a torque about a hinge."""
    load[:] = 0.0
    for j in range(len(model.kind)):
        force = np.sqrt(impulse[j, 0] ** 2 + impulse[j, 1] ** 2 + impulse[j, 2] ** 2)
        torque = np.sqrt(impulse[j, 3] ** 2 + impulse[j, 4] ** 2 + impulse[j, 5] ** 2)
        kind = model.kind[j]
        linear = kind == SLIDER or (kind == AXIS and model.member[j] < model.axis_count[j, 0])
        axial = abs(impulse[j, LIMIT]) + abs(impulse[j, DRIVE]) + abs(impulse[j, SPRING])
        for side in range(2):
            b = model.body[j, side]
            if b < 0:
                continue
            lever = np.sqrt(model.anchor[j, side, 0] ** 2 + model.anchor[j, side, 1] ** 2 + model.anchor[j, side, 2] ** 2)
            load[b] += h * (force * lever + torque + (axial * lever if linear else axial))
    count = 0
    for b in range(load.shape[0]):
        if load[b] <= 0.0:
            continue
        widest = 0.0
        for i in range(3):
            widest = max(widest, abs(inverse_inertia[b, i, 0]) + abs(inverse_inertia[b, i, 1]) + abs(inverse_inertia[b, i, 2]))
        k = load[b] - 1.0 / widest if widest > 0.0 else 0.0
        if not k > 0.0:
            continue
        inertia = _inverse3(load33(inverse_inertia, b))
        added = _inverse3(((inertia[0][0] + k, inertia[0][1], inertia[0][2]),
                           (inertia[1][0], inertia[1][1] + k, inertia[1][2]),
                           (inertia[2][0], inertia[2][1], inertia[2][2] + k)))
        for i in range(3):
            for c in range(3):
                inverse_inertia[b, i, c] = added[i][c]
        count += 1
    return count


@kernel(inline=True)
def _point_rows(out, j, d, r_a, r_b, static_a, static_b):
    """A joint's point rows (j, 0…2), its anchors' separation d along the world axes: `_store_row`'s
    rows, the same bits, written in place. Inlined, where `_store_row` is called: passed the
    `JointGeometry` bundle at each call, three calls took two thirds of a ball joint's geometry (the
    100 × 100 net's 1.4–2.3 ms a sub-step, 0.5–0.6 inlined, timed alone), and the two places that
    write a point inline it once each."""
    jac = out.jacobian[j]
    for s in range(3):
        e = (1.0 if s == 0 else 0.0, 1.0 if s == 1 else 0.0, 1.0 if s == 2 else 0.0)
        out.C[j, s] = d[s]
        out.active[j, s] = True
        ang_a, ang_b = cross3(r_a, e), cross3(r_b, e)
        for i in range(3):
            jac[s, 0, i] = 0.0 if static_a else -e[i]
            jac[s, 1, i] = 0.0 if static_b else e[i]
            jac[s, 0, 3 + i] = 0.0 if static_a else -ang_a[i]
            jac[s, 1, 3 + i] = 0.0 if static_b else ang_b[i]


@kernel(refcounts=False)
def joint_geometry(model, centre, rotation, out, first, last):
    """The rows of the joints first … last − 1 (every joint: 0, J) at the bodies' poses (centre
    (B, 3), rotation (B, 3, 3)) into `out` (`JointGeometry`): the formulas of the module docstring,
    one joint at a time (`Joints.rows` adds the targets and bounds; `physics.constraints.rattle`
    evaluates them inside its Newton iteration). Each joint writes its own rows, so parts written
    on different threads give the same bits (`physics.constraints.solver`'s halves). One kernel
    for the whole and its parts: a whole that called its part was a library of its own, which
    compiled the part's code again (some 5 s of the warm-up's CPU)."""
    eye = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    for j in range(first, last):
        kind = model.kind[j]
        a, b = model.body[j, 0], model.body[j, 1]
        framed = a < 0 and model.framed[j]
        R_a, R_b, r_a, r_b, d = _sides(model, j, centre, rotation)
        sa, sb = a < 0 and not framed, b < 0       # (a frame's side is zeroed below, once its share is taken)
        if kind == BALL and not framed:
            # its three rows alone, written whole (a net's thousands: no axis to turn); its other
            # slots are never written, so they stay as allocated (`joint_geometry_arrays`: zero,
            # inactive): a joint's kind never changes. Clearing them each call would triple what a
            # ball joint writes (the 100 × 100 net's Jacobians: 17 MB a sub-step, past every cache)
            _point_rows(out, j, d, r_a, r_b, sa, sb)
            continue
        out.active[j, :] = False
        out.inequality[j, :] = False
        out.motor[j, :] = False
        out.C[j, :] = 0.0
        out.frame_speed[j, :] = 0.0
        out.jacobian[j] = 0.0
        n_a = matvec(R_a, (model.axis[j, 0, 0], model.axis[j, 0, 1], model.axis[j, 0, 2]))
        n_b = matvec(R_b, (model.axis[j, 1, 0], model.axis[j, 1, 1], model.axis[j, 1, 2]))
        ref_a = matvec(R_a, (model.reference[j, 0, 0], model.reference[j, 0, 1], model.reference[j, 0, 2]))
        ref_b = matvec(R_b, (model.reference[j, 1, 0], model.reference[j, 1, 1], model.reference[j, 1, 2]))
        u_a, w_a = basis3(n_a)
        r_ad = (r_a[0] + d[0], r_a[1] + d[1], r_a[2] + d[2])     # Box2D's prismatic lever r_a + d
        slides = model.axis_count[j, 0] if kind == SIX_AXIS else 0
        hinges = model.axis_count[j, 1] if kind == SIX_AXIS else 0
        if kind == BALL or kind == HINGE or kind == FIXED or (kind == SIX_AXIS and slides == 0):
            _point_rows(out, j, d, r_a, r_b, sa, sb)
        elif kind == SIX_AXIS and slides < 3:      # the directions ⊥ its slides, with a slider's lever
            s_0 = matvec(R_a, (model.axes[j, 0, 0], model.axes[j, 0, 1], model.axes[j, 0, 2]))
            if slides == 1:
                t_1, t_2 = basis3(s_0)
                _store_row(out, j, 0, dot(d, t_1), t_1, r_ad, r_b, True, sa, sb)
                _store_row(out, j, 1, dot(d, t_2), t_2, r_ad, r_b, True, sa, sb)
            else:
                n = _unit(cross3(s_0, matvec(R_a, (model.axes[j, 1, 0], model.axes[j, 1, 1], model.axes[j, 1, 2]))))
                _store_row(out, j, 0, dot(d, n), n, r_ad, r_b, True, sa, sb)
        elif kind == SLIDER:
            _store_row(out, j, 0, dot(d, u_a), u_a, r_ad, r_b, True, sa, sb)
            _store_row(out, j, 1, dot(d, w_a), w_a, r_ad, r_b, True, sa, sb)
        elif kind == DISTANCE or kind == ROPE:
            length = np.sqrt(dot(d, d))
            inv = 1.0 / max(length, 1e-12)
            u = (d[0] * inv, d[1] * inv, d[2] * inv)
            if kind == ROPE:        # C = L − |d| ≥ 0 (an inequality, pulls only)
                _store_row(out, j, 0, model.length[j] - length, (-u[0], -u[1], -u[2]), r_a, r_b, True, sa, sb)
                out.inequality[j, 0] = True
            else:                   # C = |d| − L = 0
                _store_row(out, j, 0, length - model.length[j], u, r_a, r_b, True, sa, sb)
        if kind == HINGE:
            misalignment = cross3(n_a, n_b)
            _store_row(out, j, 3, dot(misalignment, u_a), u_a, r_a, r_b, False, sa, sb)
            _store_row(out, j, 4, dot(misalignment, w_a), w_a, r_a, r_b, False, sa, sb)
        if kind == SIX_AXIS and 0 < hinges < 3:
            Z = matmul(R_a, load33(model.rest, j))
            k_1 = (model.axes[j, slides, 0], model.axes[j, slides, 1], model.axes[j, slides, 2])
            e_1 = matvec(Z, k_1)
            if hinges == 1:     # a hinge's two rows: k₁ carried by a and by b stay parallel
                misalignment = cross3(e_1, matvec(R_b, k_1))
                t_1, t_2 = basis3(e_1)
                _store_row(out, j, 3, dot(misalignment, t_1), t_1, r_a, r_b, False, sa, sb)
                _store_row(out, j, 4, dot(misalignment, t_2), t_2, r_a, r_b, False, sa, sb)
            else:               # the universal joint's: e₁ · R_b k₂ stays k₁ · k₂
                k_2 = (model.axes[j, slides + 1, 0], model.axes[j, slides + 1, 1], model.axes[j, slides + 1, 2])
                f = matvec(R_b, k_2)
                _store_row(out, j, 3, dot(e_1, f) - dot(k_1, k_2), cross3(f, e_1), r_a, r_b, False, sa, sb)
        if kind == FIXED or kind == SLIDER or (kind == SIX_AXIS and hinges == 0):
            # θ = log(R_b (R_a R_rest)ᵀ), world frame
            error = rotvec3(matmul(R_b, transpose(matmul(R_a, load33(model.rest, j)))))
            for i in range(3):
                _store_row(out, j, 3 + i, error[i], eye[i], r_a, r_b, False, sa, sb)
        if kind == HINGE or kind == SLIDER or kind == AXIS:
            m = model.member[j]
            linear = kind == SLIDER or (kind == AXIS and m < model.axis_count[j, 0])
            lever = r_ad if linear else r_a
            direction = n_a
            lower, upper = model.lower[j], model.upper[j]
            limited = np.isfinite(lower) or np.isfinite(upper)
            if kind == AXIS:
                coordinate, direction, _ = _axis_state(model, j, R_a, R_b, d, m)
                out.coordinate[j] = coordinate
            elif limited or model.driven[j] or model.sprung[j]:
                if kind == HINGE:
                    coordinate = _hinge_coordinate(model, j, n_a, ref_a, ref_b)
                else:
                    coordinate = model.coordinate[j] + dot(d, n_a)
                out.coordinate[j] = coordinate
            if limited:
                slack = model.limit_slack[j]
                if (coordinate - lower) <= (upper - coordinate):
                    _store_row(out, j, LIMIT, coordinate - lower + slack, direction, lever, r_b, linear, sa, sb)
                else:
                    _store_row(out, j, LIMIT, upper - coordinate + slack, (-direction[0], -direction[1], -direction[2]),
                               lever, r_b, linear, sa, sb)
                out.inequality[j, LIMIT] = True
            if model.driven[j]:
                _store_row(out, j, DRIVE, 0.0, direction, lever, r_b, linear, sa, sb)
                out.motor[j, DRIVE] = True
            if model.sprung[j]:
                _store_row(out, j, SPRING, 0.0, direction, lever, r_b, linear, sa, sb)
                out.motor[j, SPRING] = True
        if framed:      # a moving frame: its share of each row's J v, then a static side like the world's
            for slot in range(ROWS_PER_JOINT):
                if out.active[j, slot]:
                    share = 0.0
                    for i in range(6):
                        share += out.jacobian[j, slot, 0, i] * model.frame_velocity[j, i]
                    out.frame_speed[j, slot] = share
                    out.jacobian[j, slot, 0, :] = 0.0


def limit_easing(h):
    """exp(−|h|/τ), τ = LIMIT_EASING_TIME: how much of a joint's excess past its limit a step of
    length h may leave (`Joints.limit_slack`)."""
    return math.exp(-abs(h) / LIMIT_EASING_TIME)


@kernel(refcounts=False)
def fill_limit_slack(geometry, easing, out):
    """out (J,) ← easing × max(−C, 0) of each joint's limit row in `geometry` where it is an active
    inequality, else of C = 0 (`Joints.limit_slack`): numpy's maximum, whose +0 stands for −0 and a
    NaN for itself, the same bits as `easing * np.maximum(-C, 0.0)`. Returns the largest, as
    `out.max()` gives it (NaN where one is; 0 where J = 0)."""
    largest = 0.0
    for j in range(out.shape[0]):
        taken = geometry.active[j, LIMIT] and geometry.inequality[j, LIMIT]
        v = -(geometry.C[j, LIMIT] if taken else 0.0)
        out[j] = easing * (v if v > 0.0 or np.isnan(v) else 0.0)
        if out[j] > largest or np.isnan(out[j]):      # (a NaN, once found, stays)
            largest = out[j]
    return largest


@kernel(refcounts=False)
def coordinate_inverse_inertia(geometry, body, inverse_mass, inverse_inertia, s):
    """s (J,) ← J M⁻¹ Jᵀ of each joint's spring-slot row in `geometry` (its coordinate's inverse
    inertia with the other joints free), body (J, 2) the solver bodies (−1 static), inverse_mass
    (B,), inverse_inertia (B, 3, 3) world."""
    J = body.shape[0]
    s[:] = 0.0
    for j in range(J):
        for side in range(2):
            b = body[j, side]
            if b < 0:
                continue
            row = geometry.jacobian[j, SPRING, side]
            linear = row[0] * row[0] + row[1] * row[1] + row[2] * row[2]
            turn = matvec(load33(inverse_inertia, b), (row[3], row[4], row[5]))
            s[j] += inverse_mass[b] * linear + row[3] * turn[0] + row[4] * turn[1] + row[5] * turn[2]


@kernel(refcounts=False)
def fill_joint_terms(fixed, control_gain, control, exact, s, geometry, body, velocity, out):
    """`Joints.terms` at `control` (J,) with the joints `exact` (J,) bool RATTLE's step takes and
    the coordinates q₀ and rates q̇₀ = J v of `geometry` (the rows at the start of the step, the
    spring slot's; velocity (B, 6) [v, ω] world, body (J, 2) the solver bodies, −1 static) into
    `out` (`JointTerms`): fixed the terms without control (`Joints.term_parts`), F₀ + gain × control,
    each rate `_coordinate_rate`'s, and the links' share of the first kick, 1 / (1 + A s) with s (J,)
    the coordinate's inverse inertia (`coordinate_inverse_inertia`, as the choice of the terms
    made it): what the kick gives a coordinate of inertia 1/s held to a rotor of inertia A. The
    rotor takes the rest (`physics.constraints.rattle`, "Joint terms"); given to the links alone,
    a kick sized for the coordinate with its armature turned a light link far in the drift
    (gymnasium's reacher under its motors, links of 4e-5 kg m² on armatures of 1: radians a
    sub-step, every one halved)."""
    for j in range(body.shape[0]):
        A = fixed.armature[j]
        out.share[j] = 1.0 / (1.0 + A * s[j]) if exact[j] and A > 0.0 else 1.0
        out.exact[j] = exact[j]
        out.actuator[j] = fixed.actuator[j]
        out.force[j] = fixed.force[j] + control_gain[j] * control[j]
        out.stiffness[j] = fixed.stiffness[j]
        out.damping[j] = fixed.damping[j]
        out.armature[j] = fixed.armature[j]
        out.coordinate[j] = geometry.coordinate[j]
        out.rate[j] = _coordinate_rate(geometry, body, velocity, j)


@kernel(inline=True)
def _coordinate_rate(geometry, body, velocity, j):
    """Joint j's q̇ = J v along its spring slot's row in `geometry` (velocity (B, 6) [v, ω] world,
    body (J, 2) the solver bodies, −1 static), a moving frame's share included: numpy's einsum over
    the row's twelve products, the static side's zeros included (2 lanes, the first eight in fours
    from the last, then the rest, then the lanes' sum added to 0), plus the frame's share: the bits
    of `np.einsum("jsi,jsi->j", ...) + frame_speed` on x86-64."""
    total = 0.0
    for lane in range(2):
        acc = 0.0
        for k in (6, 4, 2, 0, 8, 10):
            k += lane
            b = body[j, k // 6]
            acc += geometry.jacobian[j, SPRING, k // 6, k % 6] * (velocity[b, k % 6] if b >= 0 else 0.0)
        total = acc if lane == 0 else total + acc
    return (0.0 + total) + geometry.frame_speed[j, SPRING]


@kernel(refcounts=False)
def coordinate_rates(geometry, body, velocity, out):
    """out (J,) ← each joint's q̇ along its spring slot's row (`_coordinate_rate`)."""
    for j in range(body.shape[0]):
        out[j] = _coordinate_rate(geometry, body, velocity, j)


@dataclass
class Joints:
    """J joints (model data: anchors and axes in each body's frame, fixed at load time), plus the
    accumulated impulses of their rows (J, ROWS_PER_JOINT), kept across steps for warm starting."""

    kind: np.ndarray            # (J,) int64, JOINT_KINDS values
    body: np.ndarray            # (J, 2) int64 solver bodies (−1 = the world)
    anchor: np.ndarray          # (J, 2, 3) anchor in each body's frame (world frame for −1)
    axis: np.ndarray            # (J, 2, 3) unit axis in each body's frame (hinge, slider)
    reference: np.ndarray       # (J, 2, 3) unit vector ⊥ axis in each body's frame (hinge angle 0)
    rest: np.ndarray            # (J, 3, 3) R_aᵀ R_b at load (fixed, slider)
    length: np.ndarray          # (J,) distance / rope length, m
    lower: np.ndarray           # (J,) limit, rad (hinge) or m (slider); −inf = none
    upper: np.ndarray           # (J,)
    motor_speed: np.ndarray     # (J,) rad/s or m/s
    motor_force: np.ndarray     # (J,) max motor torque (N m) or force (N); 0 = no motor
    impulse: np.ndarray         # (J, ROWS_PER_JOINT)
    # the spring, the actuator and its control (module docstring), all optional: `Joints.drives`
    coordinate: np.ndarray = None       # (J,) the coordinate's value as loaded (0)
    stiffness: np.ndarray = None        # (J,) N m/rad or N/m (0)
    spring_reference: np.ndarray = None  # (J,) the coordinate at which the spring is at rest (0)
    damping: np.ndarray = None          # (J,) N m s/rad or N s/m (0)
    armature: np.ndarray = None         # (J,) kg m² or kg: inertia added to the coordinate (0)
    actuated: np.ndarray = None         # (J,) int64: NO_ACTUATOR | ACTUATED
    gear: np.ndarray = None             # (J,) G: the actuator's length is G q, its force acts as G × force (1)
    gain: np.ndarray = None             # (J,) g: force = g ctrl + b₀ + b₁ G q + b₂ G q̇ (0)
    bias: np.ndarray = None             # (J, 3) (b₀, b₁, b₂) (0)
    force_lower: np.ndarray = None      # (J,) the actuator's force range (−inf, inf)
    force_upper: np.ndarray = None      # (J,)
    # six-axis joints (module docstring), all optional: `Joints.set_axes`
    axes: np.ndarray = None             # (J, 6, 3) the slides' directions in a's frame, then the hinges' k_i (0)
    axis_offset: np.ndarray = None      # (J, 6) each axis's coordinate at the chart's zero (0)
    axis_load: np.ndarray = None        # (J, 6) each axis's coordinate as loaded (0)
    axis_count: np.ndarray = None       # (J, 2) int64 (slides, hinges) (0)
    member: np.ndarray = None           # (J,) int64 an AXIS joint's axis in its six-axis joint (−1)
    # a hinge's turns (module docstring, "Turns"): state the joints' start writes
    turned: np.ndarray = None           # (J,) rad: its angle is read within π of its coordinate at load + this (0)

    DRIVE_FIELDS = ("coordinate", "stiffness", "spring_reference", "damping", "armature", "actuated", "gear", "gain", "bias",
                    "force_lower", "force_upper")
    AXES_FIELDS = ("axes", "axis_offset", "axis_load", "axis_count", "member")
    _SHAPES = {"bias": (3,), "axes": (6, 3), "axis_offset": (6,), "axis_load": (6,), "axis_count": (2,)}

    def __post_init__(self):
        J = len(self.kind)
        defaults = {"gear": 1.0, "force_lower": -INF, "force_upper": INF, "member": -1}
        for name in self.DRIVE_FIELDS + self.AXES_FIELDS + ("turned",):
            if getattr(self, name) is None:
                dtype = np.int64 if name in ("actuated", "axis_count", "member") else float
                setattr(self, name, np.full((J,) + self._SHAPES.get(name, ()), defaults.get(name, 0), dtype))
        # (the kernels write this array itself: `model`)
        self.turned = np.ascontiguousarray(self.turned, float)

    def has_axes(self):
        """Whether any joint is a six-axis joint (then its axes are state worth saving)."""
        return bool(np.any(self.kind == SIX_AXIS))

    def has_drives(self):
        """Whether any joint has a spring, a damper or an actuator, or sits at a coordinate other
        than 0 as loaded (then its drive fields are state worth saving)."""
        return bool(self.actuated.any() or self.stiffness.any() or self.damping.any() or self.armature.any()
                    or self.coordinate.any())

    def has_turned(self):
        """Whether a hinge's angle is read about a centre other than its load (then `turned` is
        state worth saving: a scene none of whose hinges has turned over keeps its snapshot and hash)."""
        return bool(self.turned.any())

    def turning(self):
        """(J,) bool: the hinges that may turn over (module docstring, "Turns"): a hinge, or a
        six-axis joint's hinge axis, whose limits do not both lie within π of its coordinate at load."""
        hinge = (self.kind == HINGE) | ((self.kind == AXIS) & (self.member >= self.axis_count[:, 0]))
        load = np.where(self.kind == AXIS, self.axis_load[np.arange(len(self)), np.maximum(self.member, 0)],
                        self.coordinate)
        held = (load - np.pi < self.lower) & (self.lower <= self.upper) & (self.upper < load + np.pi)
        return hinge & ~held

    def centre_on(self, j, q):
        """Read hinge j's angle within π of coordinate q from now on where it is read more than π/2
        from it (a user put it there: `physics.pipeline.simulation.Simulation.pose_joint`; the
        rule of `follow_turns`, so a pose within a quarter turn of the centre keeps its bits); a
        slider's coordinate has no turns."""
        if self.turning()[j]:
            load = self.axis_load[j, self.member[j]] if self.kind[j] == AXIS else self.coordinate[j]
            if abs(q - (load + self.turned[j])) > 0.5 * np.pi:
                self.turned[j] = q - load

    def __len__(self):
        return len(self.kind)

    @staticmethod
    def from_world(kind, body, anchor_world, axis_world, centre, rotation, anchor_b_world=None, length=None,
                   lower=None, upper=None, motor_speed=None, motor_force=None):
        """Joints given in world terms at the bodies' current poses (centre (B,3), rotation (B,3,3)).

        kind (J,), body (J,2), anchor_world (J,3) (the anchor on a; for distance/rope the anchor on
        a, with anchor_b_world (J,3) the one on b), axis_world (J,3); length (J,) defaults to the
        current anchor distance."""
        kind = np.asarray(kind, np.int64)
        body = np.asarray(body, np.int64).reshape(-1, 2)
        J = len(kind)
        anchor_world = np.asarray(anchor_world, float).reshape(J, 3)
        anchor_b_world = anchor_world if anchor_b_world is None else np.asarray(anchor_b_world, float).reshape(J, 3)
        axis_world = np.asarray(axis_world, float).reshape(J, 3)
        axis_world = axis_world / np.linalg.norm(axis_world, axis=1, keepdims=True)
        dynamic = body >= 0
        safe = np.where(dynamic, body, 0)
        R = np.where(dynamic[..., None, None], rotation[safe], np.eye(3))
        x = np.where(dynamic[..., None], centre[safe], 0.0)
        points = np.stack([anchor_world, anchor_b_world], axis=1)
        to_body = lambda v: np.einsum("jski,jsk->jsi", R, v)      # Rᵀ v per side
        reference_world, _ = tangent_basis(axis_world)
        d = anchor_b_world - anchor_world
        fill = lambda value, default: np.full(J, default, float) if value is None else np.asarray(value, float).reshape(J)
        return Joints(kind, body, to_body(points - x),
                      to_body(np.broadcast_to(axis_world[:, None], (J, 2, 3))),
                      to_body(np.broadcast_to(reference_world[:, None], (J, 2, 3))),
                      np.einsum("jki,jkl->jil", R[:, 0], R[:, 1]),
                      fill(length, 0.0) if length is not None else np.linalg.norm(d, axis=1),
                      fill(lower, -INF), fill(upper, INF), fill(motor_speed, 0.0), fill(motor_force, 0.0),
                      np.zeros((J, ROWS_PER_JOINT)))

    def model(self, limit_slack=None):
        """The model arrays as a `JointModel` bundle (contiguous, for the compiled kernels); `limit_slack`
        (J,) how far past its limit each joint may stay (0: none; `limit_slack`). Made once: the model
        arrays do not change after the joints are built (a restore builds new `Joints`), and a
        sub-step asks for it three or four times; `turned`, state, is the joints' own array, which
        the joints' start writes (`follow_turns`)."""
        model = self.__dict__.get("_model")
        if model is None:
            c = lambda a, dtype=float: np.ascontiguousarray(a, dtype)
            model = JointModel(c(self.kind, np.int64), c(self.body, np.int64), c(self.anchor), c(self.axis),
                               c(self.reference), c(self.rest), c(self.length), c(self.lower), c(self.upper),
                               c(self.motor_force), c(self.coordinate),
                               c((self.motor_force > 0) | (self.actuated != 0), bool),
                               c((self.stiffness > 0) | (self.damping > 0) | (self.armature > 0) | (self.actuated != 0),
                                 bool),
                               np.zeros(len(self)), np.zeros(len(self), bool), np.zeros((len(self), 3)),
                               np.repeat(np.eye(3)[None], len(self), axis=0), np.zeros((len(self), 6)),
                               c(self.axes), c(self.axis_offset), c(self.axis_load), c(self.axis_count, np.int64),
                               c(self.member, np.int64), self.turned, c(self.turning(), bool))
            self.__dict__["_model"] = model     # not a field: snapshots and `fields(Joints)` leave it out
        return model if limit_slack is None else model._replace(limit_slack=np.ascontiguousarray(limit_slack, float))

    def set_axes(self, joint, members, types, axes_world, coordinates, offsets, centre, rotation):
        """Make joint `joint` (built as a ball at its anchor by `from_world`) a six-axis joint whose
        axes are the joints `members`, in order: `types` "slider" or "hinge" (slides first),
        `axes_world` their directions in the world as loaded (a hinge's as the hinges before it
        turned it, MuJoCo's xaxis), `coordinates` their values as loaded and `offsets` their values
        at the chart's zero (module docstring), at the bodies' poses now (centre (B, 3), rotation
        (B, 3, 3)): the chart's zero rotation and anchor on a, the slides in a's frame and the hinges'
        k_i, from the last hinge back (k_n = R_bᵀ e_n, k_i = Rot(k_{i+1}, δ_{i+1}) ⋯ Rot(k_n, δ_n) R_bᵀ e_i,
        δ = coordinate − offset)."""
        from physics.math.rotation import matrix_from_rotvec
        pose = lambda k: (centre[k], rotation[k]) if k >= 0 else (np.zeros(3), np.eye(3))
        (x_a, R_a), (x_b, R_b) = pose(self.body[joint, 0]), pose(self.body[joint, 1])
        turn = lambda k, angle: matrix_from_rotvec(np.asarray(k, float) * angle)
        slides = [i for i, t in enumerate(types) if t == "slider"]
        hinges = [i for i, t in enumerate(types) if t == "hinge"]
        delta = np.asarray(coordinates, float) - np.asarray(offsets, float)
        axes = np.zeros((6, 3))
        for i in slides:
            axes[i] = np.einsum("ki,k->i", R_a, axes_world[i])
        k = {}
        for i in reversed(hinges):
            v = np.einsum("ki,k->i", R_b, axes_world[i])
            for later in hinges[::-1]:
                if later > i:
                    v = np.einsum("ij,j->i", turn(k[later], delta[later]), v)
            k[i] = v / np.linalg.norm(v)
            axes[i] = k[i]
        M = np.eye(3)
        for i in hinges:
            M = np.einsum("ij,jk->ik", M, turn(k[i], delta[i]))
        point = self.anchor[joint, 0].copy() if self.body[joint, 0] < 0 else \
            np.einsum("ij,j->i", R_a, self.anchor[joint, 0]) + x_a
        rest = np.einsum("ki,kl,ml->im", R_a, R_b, M)        # R_aᵀ R_b M(c)ᵀ
        anchor_a = np.einsum("ki,k->i", R_a, point - x_a) - sum((axes[i] * delta[i] for i in slides), np.zeros(3))
        for j in [joint, *members]:
            self.body[j] = self.body[joint]
            self.anchor[j, 0], self.anchor[j, 1] = anchor_a, np.einsum("ki,k->i", R_b, point - x_b)
            self.rest[j] = rest
            self.axes[j] = axes
            self.axis_offset[j, :len(types)] = offsets
            self.axis_load[j, :len(types)] = coordinates
            self.axis_count[j] = len(slides), len(hinges)
        self.kind[joint] = SIX_AXIS
        for m, j in enumerate(members):
            self.kind[j], self.member[j] = AXIS, m

    def set_frames(self, framed, centre, rotation, velocity):
        """Side a of the joints `framed` (J,) bool rides a moving frame (a kinematic node, or a node
        fixed to one): its world pose now, centre (J, 3) and rotation (J, 3, 3), and its motion,
        velocity (J, 6) [v of its origin, ω] world, rows for every joint (read where framed). Side
        a's anchor, axis and reference are then in that frame (`frame_anchors`). The next rows and
        projections are made with it."""
        model = self.model()
        model.framed[:] = framed
        model.frame_centre[:], model.frame_rotation[:], model.frame_velocity[:] = centre, rotation, velocity

    def frame_anchors(self, framed, centre, rotation):
        """Express side a of the joints `framed` (J,) bool, built with a world side a, in their
        frames at the poses centre (J, 3), rotation (J, 3, 3): anchor and rest relative to the
        frame's origin, axis and reference in its axes (Rᵀ(p − x), Rᵀ n, Rᵀ R_rest)."""
        to_frame = lambda R, v: np.einsum("ji,j->i", R, v)     # Rᵀ v (einsum, not `@`: no BLAS in the state)
        for j in np.flatnonzero(framed):
            R, x = rotation[j], centre[j]
            self.anchor[j, 0] = to_frame(R, self.anchor[j, 0] - x)
            self.axis[j, 0], self.reference[j, 0] = to_frame(R, self.axis[j, 0]), to_frame(R, self.reference[j, 0])
            self.rest[j] = np.einsum("ki,kl->il", R, self.rest[j])
            self.axes[j, :self.axis_count[j, 0]] = np.einsum("ki,sk->si", R, self.axes[j, :self.axis_count[j, 0]])

    def limit_slack(self, geometry, h, out=None):
        """(J,) the soft limits of the position projections (RATTLE's, post-stabilization's): a joint
        that starts the step of length h past its limit by e may end it past by e exp(−h/τ), τ =
        LIMIT_EASING_TIME (MuJoCo's default soft-constraint time constant, `solref` 0.02 s), so it
        eases in within a few τ as a MuJoCo model's joint does, and RATTLE's velocity
        projection holds such a row's velocity at 0 (`physics.constraints.rattle.project_velocities`): the easing
        moves positions without leaving velocity, where a projection onto the limit would snap it
        back in one step and keep the snap as velocity (a humanoid's knee loaded outside its range
        gained thousands of joules that way). Into `out` (J,) if given (one compiled pass,
        `fill_limit_slack`). -> (out, its largest value, 0 where there is none)."""
        out = np.empty(len(self.kind)) if out is None else out
        return out, fill_limit_slack(geometry, limit_easing(h), out)

    def coordinates(self, centre, rotation):
        """(J,) each hinge's and slider's coordinate q at the bodies' poses (centre (B, 3), rotation
        (B, 3, 3)): its `coordinate` at load plus the angle atan2(n_a · (ref_a × ref_b), ref_a · ref_b)
        or the displacement d · n_a since (`joint_geometry`'s formulas, for every joint); a six-axis
        joint's axis (an AXIS joint) its coordinate, anchor on b and world axis (`axes_coordinates`); NaN
        for the other kinds. With the world anchor point and world axis of each joint: (q, point (J, 3), n_a (J, 3))."""
        world = self.to_world
        n_a, ref_a, ref_b = world(centre, rotation, 0, self.axis[:, 0], False), \
            world(centre, rotation, 0, self.reference[:, 0], False), world(centre, rotation, 1, self.reference[:, 1], False)
        p_a, p_b = world(centre, rotation, 0, self.anchor[:, 0], True), world(centre, rotation, 1, self.anchor[:, 1], True)
        angle = np.arctan2(np.einsum("ja,ja->j", n_a, np.cross(ref_a, ref_b)), np.einsum("ja,ja->j", ref_a, ref_b))
        turned = self.turned
        angle = np.where(turned != 0.0, turned + np.arctan2(np.sin(angle - turned), np.cos(angle - turned)), angle)
        shift = np.einsum("ja,ja->j", p_b - p_a, n_a)
        q = np.where(self.kind == HINGE, angle, np.where(self.kind == SLIDER, shift, np.nan)) + self.coordinate
        if np.any(self.kind == AXIS):   # a six-axis joint's axis: the anchor on b and the axis now
            axes_coordinates(self.model(), np.ascontiguousarray(centre, float), np.ascontiguousarray(rotation, float),
                             q, p_a, n_a)
        return q, p_a, n_a

    def to_world(self, centre, rotation, side, local, point):
        """(J, 3) vectors `local` (J, 3) of each joint's `side` in the world: turned by that side's
        body (centre (B, 3), rotation (B, 3, 3)), its moving frame (side a, `set_frames`) or the
        world's identity, and moved by its origin where `point`."""
        k = self.body[:, side]
        model = self.model()
        framed = (k < 0) & model.framed if side == 0 else np.zeros(len(k), bool)
        R = np.where((k >= 0)[:, None, None], rotation[np.maximum(k, 0)],
                     np.where(framed[:, None, None], model.frame_rotation, np.eye(3)))
        turned = np.einsum("jab,jb->ja", R, local)
        if not point:
            return turned
        origin = np.where((k >= 0)[:, None], centre[np.maximum(k, 0)], np.where(framed[:, None], model.frame_centre, 0.0))
        return turned + origin

    def geometry(self, centre, rotation, out=None, limit_slack=None):
        """Every (joint, slot) row's C, Jacobian and kind at the poses (`joint_geometry`)."""
        out = joint_geometry_arrays(len(self)) if out is None else out
        joint_geometry(self.model(limit_slack), np.ascontiguousarray(centre, float), np.ascontiguousarray(rotation, float),
                       out, 0, len(self))
        return out

    def _any_armature(self):
        """Whether a joint has an armature (made once, as `drives`)."""
        any_armature = self.__dict__.get("_any_armature_made")
        if any_armature is None:
            any_armature = self.__dict__["_any_armature_made"] = bool(np.any(self.armature))
        return any_armature

    def _zero(self):
        """(J,) zeros (no control), shared: not to be written (left writeable, as the kernels are
        compiled for writeable arrays)."""
        zero = self.__dict__.get("_zero_made")
        if zero is None:
            zero = self.__dict__["_zero_made"] = np.zeros(len(self))
        return zero

    def drives(self):
        """The drive fields as a `JointDrives` bundle (contiguous, for `fill_joint_rows`); made once, as
        `model` is: the fields do not change after the joints are built."""
        drives = self.__dict__.get("_drives")
        if drives is None:
            c = lambda a, dtype=float: np.ascontiguousarray(a, dtype)
            drives = JointDrives(c(self.motor_speed), c(self.motor_force), c(self.stiffness), c(self.spring_reference),
                                 c(self.damping), c(self.armature), c(self.actuated != 0, bool), c(self.gear),
                                 c(self.gain), c(self.bias), c(self.force_lower), c(self.force_upper))
            self.__dict__["_drives"] = drives
        return drives

    def terms(self):
        """The generalized force on each joint's coordinate at no control, τ = F₀ − K q − D q̇, and its
        armature A, as RATTLE's step takes them (`physics.constraints.rattle`, "Joint terms"), a
        `JointTerms` with every joint that has any taken (`exact`; the caller screens them) and no
        coordinates or rates yet: the spring (F₀ = K q_rest) plus an actuator without a force range (a
        clamped one stays a soft row): F₀ += G b₀, K −= G² b₁, D −= G² b₂ (`term_parts` for a control)."""
        return self.term_parts()[0]

    def term_parts(self):
        """(`terms()`, the actuators' gain G g (J,)): at a control ctrl, F₀ += G g ctrl
        (`fill_joint_terms`, which makes the terms a step takes)."""
        made = self.__dict__.get("_terms")      # (the fields do not change after the joints are built)
        if made is None:
            actuator = (self.actuated != 0) & ~(np.isfinite(self.force_lower) | np.isfinite(self.force_upper))
            G = np.where(actuator, self.gear, 0.0)
            termed = (self.stiffness > 0) | (self.damping > 0) | (self.armature > 0) | actuator
            zero = np.zeros(len(self))
            made = self.__dict__["_terms"] = (
                JointTerms(termed, actuator, self.stiffness * self.spring_reference + G * self.bias[:, 0],
                           self.stiffness - G * G * self.bias[:, 1], self.damping - G * G * self.bias[:, 2],
                           self.armature.astype(float), zero, zero, np.ones(len(self))), G * self.gain)
        return made

    def rotor_slots(self):
        """(J,) bool: the joints whose spring slot is a row of RATTLE's projections (an armature or a
        damper: `physics.constraints.rattle`'s rotor row), so the joint graph gives it a place."""
        terms = self.terms()
        return terms.exact & ((terms.armature > 0) | (terms.damping != 0))

    def rows(self, centre, rotation, h, beta, slop=0.0, softness=0.0, control=None, velocity=None, limit_slack=None,
             geometry=None, frames_move=True, terms=None):
        """The active rows of every joint at the bodies' current poses, and their (J, slot) indices
        (to store the impulses back after the solve); `control` (J,) the actuators' inputs (0),
        `velocity` (B, 6) [v, ω] world the bodies' at the step's start (an armature resists its change),
        `limit_slack` (J,) the soft limits (`limit_slack`; none by default); `geometry` the
        `geometry` at these poses and slack when the caller has it already; `frames_move` False: a
        moving frame's velocity is left out of the targets (a position step's rows); `terms` the
        `JointTerms` RATTLE's step takes (none by default): an exact joint's spring slot is the fixed
        impulse of its first kick and its actuator's drive slot is left out. One compiled pass
        (`fill_joint_rows`: the targets of `physics.constraints.constraints`' docstring, the drive and
        spring slots of `_soft_terms`)."""
        if len(self) == 0:
            return Rows.empty(), np.zeros(0, np.int64)
        if geometry is None:
            geometry = self.geometry(centre, rotation, limit_slack=limit_slack)
        arguments = self.row_arguments(geometry, h, beta, slop, softness, control, velocity, frames_move, terms)
        return rows_of(arguments[12], arguments[13], fill_joint_rows(*arguments))

    def row_arguments(self, geometry, h, beta, slop=0.0, softness=0.0, control=None, velocity=None, frames_move=True,
                      terms=None, out=None):
        """`fill_joint_rows`' arguments for `rows`' (`geometry` the rows' at the poses), into `out`
        ((`RowArrays`, slots) of capacity J × ROWS_PER_JOINT, `joint_row_arrays`; new ones by
        default), every joint's from row 0: also for a caller that binds the call to arrays of its
        own (physics.constraints.rattle.JointBodies.rows)."""
        J = len(self)
        rate = velocity is not None and self._any_armature()    # q̇₀ = J v along the spring slot's row
        return (self.model(), self.drives(), geometry, self.impulse,
                self._zero() if control is None else np.ascontiguousarray(control, float),
                np.ascontiguousarray(velocity, float) if rate else _NO_VELOCITY, float(h), float(beta), float(slop),
                float(softness), bool(frames_move), no_terms(J) if terms is None else terms,
                *(joint_row_arrays(J) if out is None else out), 0, J, 0)


def joint_row_arrays(J):
    """(`RowArrays`, slots): room for a row of every (joint, slot) of J joints, and each row's slot
    j × ROWS_PER_JOINT + s (K,) int64, for `fill_joint_rows` to write (`rows_of` cuts the first R)."""
    K = J * ROWS_PER_JOINT
    return empty_row_arrays(K), np.empty(K, np.int64)


def rows_of(arrays, slots, R):
    """(`Rows`, slots) of the first R rows of `arrays` (`RowArrays`) and `slots`, as views."""
    return Rows(*(a[:R] for a in arrays)), slots[:R]


class JointDrives(NamedTuple):
    """A `Joints`' motor, spring, damper, armature and actuator arrays as one bundle (`Joints.drives`)."""
    motor_speed: np.ndarray     # (J,)
    motor_force: np.ndarray     # (J,)
    stiffness: np.ndarray       # (J,)
    spring_reference: np.ndarray  # (J,)
    damping: np.ndarray         # (J,)
    armature: np.ndarray        # (J,)
    actuated: np.ndarray        # (J,) bool
    gear: np.ndarray            # (J,)
    gain: np.ndarray            # (J,)
    bias: np.ndarray            # (J, 3)
    force_lower: np.ndarray     # (J,)
    force_upper: np.ndarray     # (J,)


_NO_VELOCITY = np.zeros((0, 6))
_BIG = np.finfo(float).max


@kernel(inline=True)
def _nan_min(a, b):
    """np.minimum's: NaN if either is."""
    return a + b if a != a or b != b else (a if a <= b else b)


@kernel(inline=True)
def _nan_max(a, b):
    return a + b if a != a or b != b else (a if a >= b else b)


@kernel(inline=True)
def _finite_bound(x, nan):
    """np.nan_to_num(x, nan=nan): NaN to `nan`, ±inf to ±the largest float."""
    if x != x:
        return nan
    if x == np.inf:
        return _BIG
    if x == -np.inf:
        return -_BIG
    return x


@kernel(inline=True)
def _soft_terms(F0, K, D, q, h, low, high, A, rate):
    """(target, softness, lower, upper) of one joint's soft row τ = F₀ − K q − D q̇ taken at the step's
    end, with an armature A (the impulse −A (q̇' − q̇₀) of an inertia on the coordinate, q̇₀ = `rate`
    the step's start): λ = h F₀ − h K q + A q̇₀ − (h² K + h D + A) q̇' (module docstring); K = D = A = 0:
    the fixed impulse F₀ h, clamped to [low, high] h. Infinite bounds become ± the largest float."""
    stiff = h * (h * K + D) + A
    if stiff > 0.0:
        target, softness = (h * (F0 - K * q) + A * rate) / stiff, 1.0 / stiff
        lower, upper = low * h, high * h
    else:
        fixed = _nan_min(_nan_max(F0, low), high) * h
        target, softness, lower, upper = 0.0, 0.0, fixed, fixed
    return target, softness, _finite_bound(lower, -np.inf), _finite_bound(upper, np.inf)


@kernel(inline=True)
def _emitted(active, s, exact, actuator, sprung):
    """Whether `fill_joint_rows` emits the `active` row of slot s of a joint whose terms RATTLE's step
    takes (`exact`; its actuator's force among them: `actuator`) or has a spring, damper or armature
    (`sprung`): not a spring slot with nothing on it (an actuator's alone) or the drive slot of an
    actuator RATTLE's step takes; an exact joint's spring slot is the fixed impulse of that step's
    first kick. (Scalars: a bundle passed per slot costs its arrays' reference counts each time.)"""
    if not active:
        return False
    if s == SPRING:
        return exact or sprung
    return not (s == DRIVE and exact and actuator)



@kernel(inline=True)
def _sprung(drives, j):
    """Whether joint j's spring slot has a spring, a damper or an armature on it."""
    return drives.stiffness[j] > 0.0 or drives.damping[j] > 0.0 or drives.armature[j] > 0.0


@kernel(refcounts=False)
def count_joint_rows(model, drives, geometry, terms, first, last):
    """How many rows `fill_joint_rows` writes for the joints first … last − 1."""
    exact, actuator, active = terms.exact, terms.actuator, geometry.active
    R = 0
    for j in range(first, last):
        for s in range(ROWS_PER_JOINT):
            if _emitted(active[j, s], s, exact[j], actuator[j], _sprung(drives, j)):
                R += 1
    return R


@kernel(refcounts=False)
def fill_joint_rows(model, drives, geometry, impulse, control, velocity, h, beta, slop, softness, frames_move, terms, out,
                    slots, first, last, k):
    """`Joints.rows` compiled: the active (joint, slot) rows of the joints first … last − 1 (every
    joint: 0, J, from row k = 0) in row-major order into `out` (`RowArrays`) from row k on, and
    their slots j × ROWS_PER_JOINT + s into `slots`; returns the row after their last (from row 0,
    their count R). A part given its first row (the rows of the joints before it:
    `count_joint_rows`) writes what the whole call writes, on any number of threads
    (`physics.constraints.solver`'s halves); one kernel for the whole and its parts, as
    `joint_geometry`.
    Targets (`physics.constraints.constraints`' docstring): an equality −β C / h; an inequality
    −C / h while separated (relax the same), else −β min(C + slop, 0) / h (relax 0); a motor its
    speed, bounded by ± its force × h. The drive slot of an actuated joint and the spring slot
    take their soft rows (`_soft_terms`), the spring's with the
    armature's rate J v when `velocity` has rows; where RATTLE's step takes the joint's terms
    (`terms.exact`, `_emitted`), the spring slot is instead the links' share of the fixed impulse
    (h/2) τ(q₀) of its first kick (`JointTerms.share`). A row whose side a is a moving frame aims side b
    at its target less the frame's share, J_b v_b = target − J_a v_a (`JointGeometry.frame_speed`;
    with `frames_move`)."""
    exact, actuator, active = terms.exact, terms.actuator, geometry.active
    body, jacobian, target, relax, lower, upper = out.body, out.jacobian, out.target, out.relax, out.lower, out.upper
    soft, mu, warm, block = out.softness, out.mu, out.impulse, out.block
    ha = abs(h)
    k_first = k
    for j in range(first, last):
        kind = model.kind[j]
        six = kind == SIX_AXIS
        point = kind == BALL or kind == HINGE or kind == FIXED or (six and model.axis_count[j, 0] == 0)
        locked = kind == FIXED or kind == SLIDER or (six and model.axis_count[j, 1] == 0)
        rate = 0.0
        if velocity.shape[0] and active[j, SPRING] and _sprung(drives, j):    # (read where its slot takes it)
            for side in range(2):
                b = model.body[j, side]
                along = 0.0
                if b >= 0:
                    for i in range(6):
                        along += geometry.jacobian[j, SPRING, side, i] * velocity[b, i]
                rate += along
        for s in range(ROWS_PER_JOINT):
            if not _emitted(active[j, s], s, exact[j], actuator[j], _sprung(drives, j)):
                continue
            C, inequality, motor = geometry.C[j, s], geometry.inequality[j, s], geometry.motor[j, s]
            if inequality:
                if C > 0.0:
                    t, r = -C / h, -C / h
                else:
                    t, r = -beta * min(C + slop, 0.0) / h, 0.0
            else:
                t, r = -beta * C / h, 0.0
            if motor:
                t = r = drives.motor_speed[j]
            cap = drives.motor_force[j] * h
            lo = 0.0 if inequality else (-cap if motor else -np.inf)
            hi = cap if motor else np.inf
            so = 0.0 if motor else softness
            q = geometry.coordinate[j]
            if s == DRIVE and drives.actuated[j]:
                G = drives.gear[j]
                F0 = G * (drives.gain[j] * control[j] + drives.bias[j, 0])
                low, high = G * drives.force_lower[j], G * drives.force_upper[j]
                t, so, lo, hi = _soft_terms(F0, -G * G * drives.bias[j, 1], -G * G * drives.bias[j, 2], q, ha,
                                            _nan_min(low, high), _nan_max(low, high), 0.0, 0.0)
                r = t
            elif s == SPRING and exact[j]:     # RATTLE's first kick, (h/2) τ(q₀)
                t = r = so = 0.0      # (the links' share: the rotor's is its row's, `JointTerms.share`)
                lo = hi = 0.5 * h * (terms.force[j] - terms.stiffness[j] * q) * terms.share[j]
            elif s == SPRING:
                K = drives.stiffness[j]
                t, so, lo, hi = _soft_terms(K * drives.spring_reference[j], K, drives.damping[j], q, ha, -np.inf,
                                            np.inf, drives.armature[j], rate)
                r = t
            if frames_move and model.framed[j]:
                t -= geometry.frame_speed[j, s]
                r -= geometry.frame_speed[j, s]
            body[k, 0], body[k, 1] = model.body[j, 0], model.body[j, 1]
            target[k], relax[k], lower[k], upper[k], soft[k] = t, r, lo, hi, so
            mu[k] = 0.0
            warm[k] = impulse[j, s]
            block[k] = SINGLE
            if point and s < 3:
                block[k] = TRIPLE if s == 0 else IN_BLOCK
            if locked and 3 <= s < 6:
                block[k] = TRIPLE if s == 3 else IN_BLOCK
            slots[k] = j * ROWS_PER_JOINT + s
            k += 1
    # the Jacobians in a pass of their own: their bytes are most of what the rows write, and copied in
    # the pass above, among its eleven other arrays, they took 2.3 ms of the 100 × 100 net's 3.0 (timed
    # alone, its arrays in the cache); on their own, 1.8
    for r in range(k_first, k):
        j, s = slots[r] // ROWS_PER_JOINT, slots[r] % ROWS_PER_JOINT
        for side in range(2):
            for i in range(6):
                jacobian[r, side, i] = geometry.jacobian[j, s, side, i]
    return k


def function_rows(C, body, centre, rotation, h, beta, softness=0.0):
    """Rows of a user constraint C(x_a, R_a, x_b, R_b) = 0 (values (K,) or scalar; bodies static when
    −1), its Jacobian by forward AD with `physics.math.dual` ("Automatically Computing the Derivatives of a
    Vector Field using Dual Numbers"): the derivative along each velocity coordinate of the perturbed
    poses x + δx, (I + hat δφ) R (the first-order rotation with dR/dt = hat(ω) R, so δφ is ω dt, world
    frame).

    Returns Rows for the one pair `body = (a, b)` (equality rows, Baumgarte target −β C/h)."""
    a, b = int(body[0]), int(body[1])
    pose = lambda i: (centre[i], rotation[i]) if i >= 0 else (np.zeros(3), np.eye(3))
    (x_a, R_a), (x_b, R_b) = pose(a), pose(b)

    def perturbed(q):       # q = (δx_a, δφ_a, δx_b, δφ_b), shape (12,)
        return C(x_a + q[0:3], R_a + hat(q[3:6]) @ R_a, x_b + q[6:9], R_b + hat(q[9:12]) @ R_b)

    value = np.atleast_1d(np.asarray(C(x_a, R_a, x_b, R_b), float))
    K = len(value)
    jac = np.zeros((K, 12))
    for j in range(12):     # 12 seeds: one directional derivative per velocity coordinate
        seed = np.zeros(12)
        seed[j] = 1.0
        out = perturbed(Dual(np.zeros(12), seed))
        jac[:, j] = np.atleast_1d(out.dual if isinstance(out, Dual) else np.zeros(K))
    jac = jac.reshape(K, 2, 6)
    jac[:, 0] *= a >= 0
    jac[:, 1] *= b >= 0
    return Rows(np.tile([a, b], (K, 1)).astype(np.int64), jac, -beta * value / h, np.zeros(K),
                np.full(K, -INF), np.full(K, INF), np.full(K, float(softness)), np.zeros(K), np.zeros(K))
