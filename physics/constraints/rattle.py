"""Joints kept on their constraint: the RATTLE projections of a step, solved directly.

RATTLE (Andersen, "Rattle: a velocity version of the Shake algorithm", 1983; Hairer, Lubich &
Wanner, "Geometric Numerical Integration", VII.1.4) is the constrained symplectic step of a
kick–drift–kick scheme for q̇ = M⁻¹p, g(q) = 0 with constraint forces G(q)ᵀλ, G = ∂g/∂q:

    p½ = p₀ + (h/2) F(q₀) + G(q₀)ᵀ Λ          Λ such that  g(q₁) = 0          (positions)
    q₁ = q₀ + h M⁻¹ p½
    p₁ = p½ + (h/2) F(q₁) + G(q₁)ᵀ μ          μ such that  G(q₁) M⁻¹ p₁ = 0   (velocities)

Symplectic and symmetric (2nd order, energy without drift); composed by the triple jump it is of
4th order. The Simulation's free step already made q_free, v_free (gravity and applied forces, no
constraint); an impulse P at the start of the step moves a body by h M⁻¹ P more. So, with the
joint rows J (`physics.constraints.joints.Joints.rows`, each row one scalar of g, world frame, velocity
coordinates [v, ω] per body, angular positions moved on the group R ← exp(hat Δθ) R):

- `project_positions`: Δq = M₀⁻¹ J₀ᵀ Λ along the start-of-step rows J₀ (RATTLE's first kick, SHAKE's
  directions), Λ by Newton on g(q_free + Δq) = 0 with the Jacobian of the current pose,
  [J(q_k) M₀⁻¹ J₀ᵀ] δΛ = −g(q_k), solved directly over the joint graph (`physics.constraints.joint_graph`: a
  chain or a tree of joints in time linear in the joints, loops with the fill of a minimum-degree
  order). A factorization is kept for chord steps (its forward and back substitutions alone,
  `physics.constraints.joint_graph.solve_factored`) while each step shrinks the error by CHORD: the
  matrix changes over a correction by about the correction over a lever, so the chord converges
  nearly as fast as Newton at a fraction of the cost on a net, whose factorization is most of a
  projection; a slower chord step, or one that finds no descent, refactors at the current pose.
  Along the current rows (below) a chord step moves along the rows its factors were made with,
  not the pose's own: a net's rows are nearly redundant (its loops' self-stresses make J M⁻¹ Jᵀ
  nearly singular), and the multipliers the factors give in those directions, which the factored
  rows turn into no motion, the next pose's rows turned into a kick that raised Σ g² (a whipping
  32 × 32 net's chord steps there all failed, most after every halving of the line search). Its
  matrix and its directions are then both the factored pose's, a correction old: that pose's
  Gauss–Newton step (damped as it was factored, below), whose self-stresses move nothing. The 32 × 32 net's projections took 4.4
  factorizations instead of 5.6, the 64 × 64 net's 5.1 instead of 7.8.
  The first chord is the last velocity projection's factorization, where it left one at the poses
  this projection starts from (`JointBodies.carried`): J₀ M₀⁻¹ J₀ᵀ, SHAKE's matrix, which differs
  from Newton's first by the drift's turn of the rows (with it the 32 × 32 net's step takes 8 % less
  time). Not where the velocities took a rotor's row (an armature's, weighed 1/A there and
  1/(A + h D/2) here), nor where they held a body on a contact (below: this projection starts
  with none held). It is forgotten at each step's start and before a retry's halves, so that
  a step's bits depend on the state it starts from alone (a restored run steps as the original
  did; a retried sub-step is its halves taken at once).
  The caller adds Δv = Δq / h, so that the velocity is the chord's, (q₁ − q₀)/h.
  SHAKE's own iteration keeps the start-of-step matrix J₀ M₀⁻¹ J₀ᵀ and, in a whip crack where the
  links turn far within a step, stops converging; the current Jacobian converges quadratically.
  Each Newton step is halved until it lowers Σ g² (a line search: a full step may raise max |g|
  on its way to the root), tried at most LINE_SEARCH times, or LINE_SEARCH_CROSSED where the full
  step raised Σ g² more than CROSSED-fold: a small fraction of such a step still descends (the
  straight-edged 8 × 8 net takes 1.13 sub-steps for each nominal one over its first two minutes with them,
  1.15 without; with the current rows undamped (below) its worst step took 3.0 times its
  sub-steps with them, 5.5 without; its failing steps raise Σ g² 20-fold in the median, where more
  trials would be evaluations spent on nothing). The inequalities (limits, ropes) form
  an active set: a row is taken where violated or still pushing (`_taken_rows`), and one violated
  with no impulse yet whose solve gives it μ < 0 (holding its bound shut) is let go, all such
  rows at once, then those the new step would leave violated taken back (`_retake`), then one at
  a time, the other rows solved again each time, within the iteration (`_release`). One still
  pushing whose step would turn its impulse ends the step at none, the other rows' step kept
  Newton's by a substitution with the same factors (`_let_go`).
  The rows solved again without those let go are solved with the factors already made, which hold
  them too, by the capacitance method (`_solve_kept`: the k let-go rows' columns of Γ⁻¹, kept
  while the factors and those rows stay, and a k × k system; k ≤ RELEASED_MAX), in their
  iteration and in the chord steps after it, until a row the factors lack is taken (or the factors
  are the velocity projection's, carried: their W was never weighed here). Refactored instead, a
  limit let go cost a factorization and the next iteration's chord another: gymnasium's walker2d's
  projections take 1.04 factorizations, where refactored they took 1.62, its humanoid's 2.33
  where 3.12, its ant's 1.24 where 1.69 (over steps 300 to 1,300 of each), and RATTLE's stage
  takes 53 µs a call where it took 61 (walker2d) and 212 where 227 (humanoid), best of five blocks
  of 1,000 steps, the two in turn; the ant's stays at 70 µs, the k columns costing about what its
  eight hinges' factorization did.
  (Clamping its impulse to 0 in place left a step that was no Newton step of the others:
  gymnasium's ant, a hip 1.4e-6 rad past its limit, whose armature's rotor row then turned the hip
  unopposed, raised Σ g² 100,000-fold, 1/2048 of the step descended, and the projection left J₀,
  where the step without the row converges at once.) Where no root is reached along J₀ (Σ g²
  stalls at a minimum that is no root: J(q_k) M₀⁻¹ J₀ᵀ singular, the links turned too far in the
  step) the rest of the error is
  projected along the current rows instead (Gauss–Newton, J_k M₀⁻¹ J_kᵀ is symmetric positive
  definite), which always converges but is not RATTLE's step (it cost the chain 17 J of 98 in one
  crack): the joints' island then takes the sub-step again as two halves (`RATTLE_HALVINGS`,
  `physics.pipeline.retry.rattle_substep`), and it
  does so too where the drift curves far off the rows' tangent (`RATTLE_STEP_ERROR`,
  `_curvature_error`); `stats` reports both. Where Newton stalls (it falls by less than STALL an
  iteration: a nearly singular system, a net near a plane) within ACCEPTED_ERROR of the levers, its
  error stands; where J₀ finds no root in `iterations`, or LEFT_STALLS Newton steps in a row each
  leave more than STUCK of the error (Σ g² at its minimum along J₀: a swinging net's, whose
  iterations along J₀ would be factorizations spent on nothing), the current rows get CURRENT_ROWS
  times as many of their own: far from its root Gauss–Newton's line search halves its steps, and a
  whipping net's projections that start a tenth of a lever off take 15 to 25 iterations there before
  the quadratic end (with only as many as J₀'s, their error stood at 1e-5 to 2e-4 m and the sub-step
  was halved past its budget, `physics.pipeline.retry.STANDING_ERROR`). A straight-edged net's
  converge only linearly there too, about 0.9 an iteration: once within CURRENT_STANDING, a tenth
  of what a retry lets stand, an error that fell less than tenfold over the last CURRENT_WINDOW
  iterations (CURRENT_FALL) stands, where more iterations would be factorizations spent on nothing.
  Along the current rows the Newton matrix is damped (Levenberg–Marquardt, J_k M₀⁻¹ J_kᵀ + ν I,
  `_damp`; Nocedal & Wright, "Numerical Optimization", 10.3). Near a plane a net's rows are nearly
  redundant, and the Gauss–Newton step, sized by the matrix's vanishing eigenvalues, overshoots
  where the rows' second order bends them: undamped, the line search kept 1/128 to 1/512 of it, and
  the straight-edged 8 × 8 net's final attempts spent all their iterations so, Σ g² falling by a
  fifth of a percent each. ν damps only the directions of eigenvalues below it (the others take
  Newton's own step), and follows the line search: from DAMPING_START of the component's scale
  (one factor for every component) it grows by 2/fraction with each cut step, falls eightfold with
  each full one (to none), and a step that found no descent is tried again with a thousandfold ν
  (an iteration of the budget, as every pass is) while ν is below DAMPING_MAX and the error above
  CURRENT_STANDING (below it, no descent is round-off); nothing else bounds ν, whose steps then
  are gradient steps the line search still checks, within the iterations' budget. A chord step
  and `_let_go` solve with the factors as they were damped. Only
  within DAMPING_REACH of the root: farther, a cut step is the rows' curvature over a long
  correction (a whip's), where Gauss–Newton's path is kept (a damped path ends elsewhere on the
  constraint, by up to the correction). Measured over the straight-edged 8 × 8 net's first 1.5 s,
  a projection that left J₀ takes 10.9 current-row iterations (undamped 21.4; nine in ten at most
  17, undamped 60, the whole budget) and 12.9 factorizations (undamped 21.8); its worst step over
  10 s takes twice its sub-steps (undamped three times), and a step 0.55 of the undamped time,
  though over those 1.5 s it takes 1.63 sub-steps a nominal one where undamped 1.58 (the 6 × 6
  net's 1.53 where 1.47). The whipping 48 × 48 and 56 × 56 nets take 11 % and 17 % fewer
  factorizations over their first second.
- `project_velocities`: μ from [J₁ M₁⁻¹ J₁ᵀ] μ = −J₁ v at the end pose, Δv = M₁⁻¹ J₁ᵀ μ (RATTLE's
  last kick; the M-orthogonal projection onto the constraint's tangent), the inequalities at their
  bound as a linear complementarity problem (μ ≥ 0, J v₁ ≥ 0, μ J v₁ = 0: a limit or a rope never
  holds its bound shut), solved by Murty's least-index principal pivoting (`_flip_first`).

Contacts held (`Holds`). The projections move bodies along the joints' rows alone; contacts are the
velocity solve's. A body a static shape pushed in this sub-step's solve (`hold_contacts`: a normal
row with one moving side and λ > 0) may be held along that push's direction n in either
projection: its linear part of M⁻¹ is then taken as m (I − (1 − HOLD_GIVE) n nᵀ) (`held`; up to
three directions, made orthonormal), the body a hundredfold heavier along the normal, which
changes its own block alone and so fills nothing in the joint graph. Its centre is held, not its
contact point (a sphere's contact normal passes through its centre; a body's turn stays free).
Held rigidly (m (I − n nᵀ): the contact's row eliminated first), four wheels under one chassis
over-determine its rows, and the racecar and the minitaur diverged at 0.35 s; with the give the
rows stay consistent, the held body moving a hundredth as far along the normal as it would.
A contact pushes, never pulls, so the holds are an active set, as the inequalities are: the
position projection starts with none held, the velocity projection with every body a shape pushed
held (a function of the sub-step's contacts, so a sub-step taken again is the same bits: a robot
standing on its feet factors once a velocity projection, where, started with none held, each foot
was found pressed and the joints factored again); where the joints' impulse on a body (so far,
with a Newton step's) would press it into a shape it rests on, it is held, and where, held, that impulse would
lift it off one (its reaction would pull), it is let go, not to be held again in that projection,
each judged along the shapes' own push directions, a body's holds together; the rows are then
solved again (`_hold_step`, the velocity projection's `_velocity_hold_step`: with one hold, the
complementarity problem's solution). The velocity solve's own first kick of the joints does not
press such a body into its shape either (`pressed_in`, `physics.constraints.solver._solve_changes`).
Without the holds a whipping net's knot resting on the ground was pressed into it, the positions
seeing the joints' kick whole and the contact's that balances it a fraction f, and the projections
moving it further in, centimetres over some 50 ms, faster than the split impulse pushes out at
`max_contact_push_speed`: the 64 × 64 net's knot fell through the ground at 0.50 s, and
gymnasium's ant stood 0.4 to 0.5 mm into its floor, where it now stands within 0.02 mm (the
contacts' slop is 0.05 mm). Held both ways (rigidly, never let go), the 64 × 64 net's knots spun up
instead, one past 1e7 rad/s at 0.43 s. Held from each position projection's start and let go where a
Newton step lifted them, the ant's feet were let go in nearly every projection (2.3 to 2.6
factorizations a projection; from the bodies the last projection ended holding, 3.2), and held
and let go by each step's impulse alone, 2.7; judged by
the joints' whole impulse so far with the step's (`total` + μ, as `_let_go` judges the limits),
the standing ant's projections took 1.7 factorizations, where without holds they took 1.9 (its
limits, the feet on the floor, are let go less often; those figures with each limit let go
factored again: solved around the factors, `_solve_kept`, they take 1.24).

Rows taken: the equalities (ball, hinge, slider, fixed, distance), and an inequality (rope, joint
limit) where it is violated; motor rows are velocity targets, not constraints, and stay with the
velocity solver (`physics.constraints.gauss_seidel`). Redundant rows (a closed loop of joints) make the
matrices singular: their vanishing pivots are raised to a floor (static pivoting,
`physics.constraints.joint_graph.PIVOT_FLOOR`), which bounds the impulses in the directions the
rows turn into no motion. Where a
forest's rows are all ones these projections hold by themselves (the equalities, limits far from
their bounds, the exact terms below where their first kick is 0 or a rotor row takes it whole; no
contact, motor, drive or soft spring; no loop), the velocity solve is left out
(`physics.constraints.solver.SceneSolver.leave_out_solve`): its impulses along J₀ would only be the
position Newton's first guess, whose root is the same whatever the guess, and a far limit's
speculative row would take none.

Joint terms. A joint's spring, damper, armature and actuator (without a force range) act on its
coordinate q (`physics.constraints.joints`, the spring slot's row J): a generalized force
τ = F₀ − K q − D q̇ and an inertia A, MuJoCo's ½ A q̇² (`physics.constraints.joints.Joints.terms`).
RATTLE's step takes them as the forces and the mass of its equations, so the step stays symmetric
and the triple jump composes it to 4th order (the velocity solve's soft rows, which the other
integrators take, are first order):

- the force part F₀ − K q enters both kicks, (h/2) τ(q₀) along J₀ (the velocity solve's fixed
  impulse on the spring slot: an impulse at the start of the step, which the positions see whole)
  and (h/2) τ(q₁) along J₁ before the velocity projection; with an armature the first is shared
  with the rotor, the links taking 1/(1 + A s) of it, what a coordinate of inertia 1/s held to
  the rotor would take (`physics.constraints.joints.fill_joint_terms`, s the coordinate's inverse
  inertia), the rotor the rest: its rate as the drift starts is φ̇₀ plus its share over A. Any
  share is RATTLE's step (the rotor's is a multiple of its row, which Λ takes up); this one
  starts the drift near the constraint, where the links alone turned far and its curvature was
  halved (gymnasium's reacher under its motors: every sub-step);
- the damper takes the coordinate's chord for q̇ in both kicks, −(D/2)(q₁ − q₀) each: the step
  for q̈ = f(q, q̇) that is symmetric (v½ implicit in the first kick, explicit in the second),
  stable for h > 0 (it scales q̇ by (1 − a)/(1 + a), a = h D s / 2, s the coordinate's inverse
  inertia);
- the armature is a rotor, a coordinate φ of mass A held to φ = q(x) by one more row (the spring
  slot's), with no state of its own: φ₀ = q₀, φ̇₀ = J₀ v₀ at the start, and the row holds it to q at
  the end. Its impulse Λ (× h) moves φ by −Λ/A; with the damper on it, φ₁ − φ₀ = (A h φ̇₀ − Λ)/m,
  m = A + h D/2 (φ̇₀ with the rotor's share of the first kick), so the position row is
  g = (q(x) − q₀) − (A h φ̇₀ − Λ)/m with ∂g/∂Λ = J W + 1/m
  (a diagonal term in the joint graph's block), and the velocity row J₁ v₁ = φ̇₁ =
  (q₁ − q₀)(1/h − D/2A) − μ/A. Without an armature the same row (m = h D/2) is the damper's
  first kick; its second is then a fixed impulse.

A spring too stiff for the step (h ω > 1; RATTLE's kicks, like MuJoCo's integrators, take a
spring explicitly) or a damper strong enough to ring (a > 1; a > 1/4 where the triple jump's
backward sub-step, which meets a pole at a = 1/1.7, may compose it) stays the velocity solve's
implicit row, chosen from the state at each sub-step's start
(`physics.constraints.solver.SceneSolver.choose_joint_terms`).

Both are compiled (numba): the rows come from `physics.constraints.joints.joint_geometry` at every Newton
evaluation; J(q_k) M₀⁻¹ J₀ᵀ is not symmetric, so both systems are factored by block elimination
with partial pivoting inside each joint's block (`physics.constraints.joint_graph.factor_and_solve`).

Compile. Every kernel numba compiles apart (one another calls without inlining it) pays for each
array its arguments hold, bundled or not: a kernel that returns a number from a `RattleStart` (126
arrays with its model, graph and scratch) takes 1.2 s of CPU to compile, and from one array 0.03 s.
So the projection's own kernels take the fields they read, not the bundle: `_evaluate`,
`_relative_error`, `_curvature_error`, `_weigh`, `_hold_step`, and `_solve_kept` with `_let_go`'s
pair the kept factors' arrays alone (`KeptFactors`), not the position scratch.

Conventions: B solver bodies, world frame, velocities (B, 6) [v, ω]; static sides (−1) drop out.
"""
import math
from functools import cached_property, partial
from typing import NamedTuple

import numpy as np
from numba import prange
from physics.core.compiled import Memo, bind, binding, generation, kernel
from physics.core.threads import ThreadChoice
from physics.dynamics.body_passes import angular_momentum, apply_changes, impulse_changes, solver_bodies
from physics.model.hierarchy import world_from_local

from physics.constraints.joint_graph import PIVOT_FLOOR, Factors, JointGraph, assemble, assemble_diagonal, assemble_terms, backward, \
    eliminate, factor_and_solve, finish, forward, gather, scatter, solve_factored, solve_separator, structure
from physics.constraints.joints import AXIS, HINGE, LIMIT, ROWS_PER_JOINT, SPRING, JointGeometry, JointModel, JointTerms, \
    joint_geometry, joint_geometry_arrays, joint_row_arrays, limit_easing, no_terms, rows_of
from physics.math.rotation_kernels import add, cayley, cross, dot, load33, matmul, matvec, mul, rotvec_from_matrix, solve3, \
    store33, sub, transpose

BOUND_CALLS = 32            # `JointBodies`' bound calls (and its rows' views) kept at most (a caller passing fresh arrays each time)
NEWTON_ITERATIONS = 10     # at most; the chain's whip crack needs 3–4, a quiet step 1–2
TOLERANCE = 1e-12           # m (rad): the largest row error left after the projection
STALL = 0.25                # a Newton iteration that leaves more than this of the error has stalled
STUCK = 0.7                 # a Newton iteration that leaves more than this of the error is stuck …
LEFT_STALLS = 2             # … and so many in a row along J₀ send the projection to the current rows
ACCEPTED_ERROR = 1e-6       # of a lever (m / m, rad): a stalled projection's error that stands
CHORD = 1.0 / 16.0         # a chord step (Newton's last factors kept) must shrink the error this much, or refactor
LINE_SEARCH = 8             # trials of a Newton step at most, each half the last …
LINE_SEARCH_CROSSED = 16    # … or this many where the full step raised Σ g² more than CROSSED-fold (a net's)
CROSSED = 100
CURRENT_ROWS = 3            # the current rows' iterations, in J₀'s (`iterations`): the whipping 32 × 32 net's need 25 …
FINAL_ROWS = 2              # … and this many times as many where the budget holds no retry (StepContext.final)
CURRENT_STANDING = 1e-6     # m (rad): … and stop within this (a tenth of `physics.pipeline.retry.STANDING_ERROR`) …
CURRENT_WINDOW = 8          # … where the error fell less than 1/CURRENT_FALL-fold over the last CURRENT_WINDOW of them
CURRENT_FALL = 0.1
DAMPING_START = 1e-9        # the current rows' Levenberg–Marquardt damping, of each component's scale: its least …
DAMPING_MAX = 1e6           # … where a step with no descent is no longer tried again with more (`_damp`), …
DAMPING_REACH = 1e-4        # m (rad): … taken by a step that starts within this of the root (the largest |g|)
NEVER = (math.inf, math.inf, math.inf)     # `project_positions_kernel`'s abandon that never stops one
# `project_positions_kernel`'s `step` (STEP_VALUES,): h, the current rows' iterations, and `abandon`'s
# (start, left, step); the velocity projection and RATTLE's stage read its h. Numbers a sub-step
# writes in place, so that a call bound to its arrays serves every h, budget and retry
STEP_H, STEP_CURRENT, STEP_ABANDON, STEP_VALUES = 0, 1, 2, 5
POSITION_STATS = 12         # `project_positions_kernel`'s stats
LET_GO_PASSES = 4           # `_let_go`'s passes over the inequalities a Newton step lets go, at most
RELEASED_MAX = 4            # rows the kept factors hold, let go since, solved around them (`_solve_kept`), at most
ACTIVE_SET_FLIPS = 8        # the velocity projection's rows change sides at most this many times a row at its bound …
ACTIVE_SET_SLACK = 1e-12    # m/s (rad/s): … where a row left out approaches faster than this (round-off)
HOLD_SPAN = 1e-3            # a contact's direction this close to those its body is held in already adds none
HOLD_GIVE = 1e-2            # a held body's inverse mass along its contact's normal, of its own (`held`)
DRIFT_ITERATIONS = 8        # Newton on the rotor's implicit midpoint: round-off by the fourth for h|y| < 1 …
DRIFT_CONVERGED = 1e-18     # … its stop: an update d with |d|² at most this × |y|² (`rotor_drift`, as `integrators._rotor_newton`)


class PositionScratch(NamedTuple):
    """`project_positions_kernel`'s working arrays, views of an `Arena` (`_position_scratch`);
    every one is written before it is read in each projection. n jointed bodies (columns) of B
    solver bodies, J joints, R = ROWS_PER_JOINT slots a joint."""
    centre: np.ndarray          # (B, 3) the poses being evaluated, every solver body …
    rotation: np.ndarray        # (B, 3, 3) … (the unjointed ones as they came)
    inertia: np.ndarray         # (n, 3, 3) world inertia at the start (M₀)
    x: np.ndarray               # (n, 3) the translations so far …
    A: np.ndarray               # (n, 6) … and the impulse × h that moved them [linear, angular] (a held body's hold's with it)
    trial_x: np.ndarray         # (n, 3) a line search's trial of x …
    trial_A: np.ndarray         # (n, 6) … and of A
    lam: np.ndarray             # (J,) the rotor rows' impulses × h so far …
    trial_lam: np.ndarray       # (J,) … and a trial's
    total: np.ndarray           # (J, R) every row's impulse × h so far …
    trial_total: np.ndarray     # (J, R) … and a trial's
    R: np.ndarray               # (n, 3, 3) the jointed bodies' rotations at the pose evaluated
    y: np.ndarray               # (n, 3) their rotor drifts there (`rotor_drift`) …
    D: np.ndarray               # (n, 3, 3) … and the drift derivatives, where a Newton matrix is weighed (`_weigh`)
    taken: np.ndarray           # (J, R) bool the rows taken at the pose evaluated …
    factored_taken: np.ndarray  # (J, R) bool … and those the kept factors were made with
    W: np.ndarray               # (J, R, 2, 6) M₀⁻¹ J_dᵀ per row and side
    factored_jacobian: np.ndarray   # (J, R, 2, 6) the current rows the kept factors were made with
    mu: np.ndarray              # (J, R) a Newton step's multipliers
    kick: np.ndarray            # (n, 6) J_dᵀ μ per column (`_retake`'s scratch before it is made)
    fallen: np.ndarray          # (CURRENT_WINDOW + 1,) the error as each recent current-row iteration began
    start_C: np.ndarray         # (J, R) g(q₀)
    moved: np.ndarray           # (n, 6) the drift since the start, per column (`_curvature_error`)
    released: np.ndarray        # (RELEASED_MAX + 1, 2) int64 (joint, slot) of the rows the kept factors hold and
    #                             the taken set does not (`_solve_kept`), then (their count, 1 where …
    released_columns: np.ndarray  # (RELEASED_MAX, J, R) … these columns Γ⁻¹ e_d of each are the kept factors') …
    capacitance: np.ndarray     # (RELEASED_MAX, RELEASED_MAX + 1) … and their capacitance system, augmented
    factors: Factors            # the Newton matrix's factors, kept for chord steps


class KeptFactors(NamedTuple):
    """The position projection's kept factors and what `_solve_kept` solves around them with:
    `PositionScratch`'s fields of that name (a bundle of their own for the kernels that read them:
    module docstring, "Compile")."""
    factors: Factors
    factored_taken: np.ndarray
    released: np.ndarray
    released_columns: np.ndarray
    capacitance: np.ndarray


class VelocityScratch(NamedTuple):
    """`project_velocities_kernel`'s working arrays (as `PositionScratch`)."""
    taken: np.ndarray           # (J, R) bool the rows solved: the equalities and the inequalities in the active set
    bound: np.ndarray           # (J, R) bool the inequalities at their bound, taken or not (the complementarity problem's)
    mu: np.ndarray              # (J, R) the multipliers
    rhs: np.ndarray             # (J, R) the right-hand sides (−J v; a rotor row's, its target), kept for each solve
    W: np.ndarray               # (J, R, 2, 6) M⁻¹ Jᵀ per row and side
    velocity: np.ndarray        # (B, 6) the velocities the joint terms' last kick leaves
    change: np.ndarray          # (B, 6) an active set's Δv
    factors: Factors            # J M⁻¹ Jᵀ's factors


class Holds(NamedTuple):
    """The contacts RATTLE's projections hold (`hold_contacts`): per solver body, the directions its
    centre may not move in a projection, orthonormal, those of the static shapes it rests on."""
    count: np.ndarray           # (B,) int64 how many (0 to 3)
    normal: np.ndarray          # (B, 3, 3) the first `count` rows: orthonormal directions, world …
    direction: np.ndarray       # (B, 3, 3) … and the push each came from, a unit direction (the same for the first)
    state: np.ndarray           # (B,) int64 in the projection under way: FREE, HELD or LET_GO (`_hold_step`)


FREE, HELD, LET_GO = 0, 1, 2    # `Holds.state`: not held (yet), held, let go (not to be held again)


def no_holds(B):
    """`Holds` of B bodies with none held."""
    return Holds(np.zeros(B, np.int64), np.zeros((B, 3, 3)), np.zeros((B, 3, 3)), np.zeros(B, np.int64))


class Arena(NamedTuple):
    """The projections' working memory, made once per topology (`JointBodies`) so that a projection
    allocates nothing: three flat arrays, cut once, in Python, into the named views of
    `PositionScratch`, `VelocityScratch` and their shared `Factors` (`_position_scratch`,
    `_velocity_scratch`), which the projections take as arguments (`RattleStart`). Their calls are
    bound (`JointBodies.positions`, `velocities`, `stage`), whose arguments are unboxed once
    (`physics.core.unboxed`: some 2 ns an array a call), so thirty views cost less than cutting
    them inside each call did (about 35 reshapes a sub-step, 4 % of the pendulum's step, through
    numba's `numba_attempt_nocopy_reshape`). An unbound call types each view (about 0.1 µs an
    array): the projection functions' own (`project_positions`, `project_velocities`), for tests."""
    floats: np.ndarray          # (F,) float64
    flags: np.ndarray           # (Fb,) bool
    ints: np.ndarray            # (Fi,) int64


def _arena_sizes(n, J, B, values, x_size, panel):
    """(floats, flags, ints) of the `Arena` for n jointed bodies of B, J joints and a joint graph
    of `values` floats, `x_size` of right-hand side and a `panel` of its own (`JointGraph`): the
    factors, then `VelocityScratch`'s fields, then `PositionScratch`'s (the cuts of
    `_velocity_scratch` and `_position_scratch`; tests/test_rattle_retry.py checks that they end
    where these say)."""
    R = ROWS_PER_JOINT
    factors = values + x_size + panel + J
    position = (B * 12 + n * (9 + 3 + 6 + 3 + 6 + 9 + 3 + 9 + 6 + 6) + 2 * J + J * R * (4 + 24) + CURRENT_WINDOW + 1
                + RELEASED_MAX * J * R + RELEASED_MAX * (RELEASED_MAX + 1))
    velocity = J * R * 14 + B * 12
    return factors + position + velocity, 4 * J * R, J * R + 2 * (RELEASED_MAX + 1)


@kernel(refcounts=False)
def _split_factor_and_solve(graph, factors, rhs):
    """`physics.constraints.joint_graph.factor_and_solve` of a split graph (`JointGraph.halves`: a
    net's dissection), its halves at once on the threads numba's count gives the caller
    (`_halves`, `_substitute_halves`; the projections' caller chooses it, `JointBodies.threads`):
    the same operations on the same entries in the same order (each half writes its own blocks,
    the second the separator's into buffers of its own), so the same bits on any number of
    threads. The projections call it where their `split` (`JointGraph.split`) is not None: numba
    prunes the other branch where it is, and a graph that is not split compiles no parallel region
    (it cost the pendulum's cold first step 4.6 s)."""
    gather(graph, rhs, factors.x)
    half = (factors.panel.size - 2) // 2
    _halves(graph, factors.storage, factors.pivot, factors.floor, factors.panel, factors.x, half)
    if factors.panel[2 * half] == 0.0 or factors.panel[2 * half + 1] == 0.0:
        return False
    if not finish(graph, factors):
        return False
    _substitute_halves(graph, factors.storage, factors.pivot, factors.x, False)
    scatter(graph, factors.x, rhs)
    return True


@kernel(refcounts=False)
def _split_solve_factored(graph, factors, rhs):
    """`physics.constraints.joint_graph.solve_factored` of a split graph, its halves' substitutions at
    once (`_substitute_halves`; `_split_factor_and_solve`): the same bits."""
    gather(graph, rhs, factors.x)
    _substitute_halves(graph, factors.storage, factors.pivot, factors.x, True)
    solve_separator(graph, factors.storage, factors.pivot, factors.x)
    _substitute_halves(graph, factors.storage, factors.pivot, factors.x, False)
    scatter(graph, factors.x, rhs)
    return True


@kernel(refcounts=False)
def _split_assemble(graph, jacobian, weighted, taken, storage, floor):
    """`physics.constraints.joint_graph.assemble` of a split graph: its storage zeroed and its first
    two groups of terms (`JointGraph.term_halves`) assembled at once (`_zero_halves`,
    `_assemble_halves`), then the blocks both halves' bodies reach and the diagonal: the same bits
    (`_split_factor_and_solve`)."""
    _zero_halves(storage)
    _assemble_halves(graph, jacobian, weighted, taken, storage)
    assemble_terms(graph, jacobian, weighted, taken, storage, graph.term_halves[2], graph.term_halves[3])
    assemble_diagonal(graph, taken, storage, floor)


# The parallel regions, here beside their only callers (physics.core.compiled, 8: a parallel region
# linked into a kernel of another module crashed a process that loaded it from the cache). Each is a
# kernel of its own, called from the kernels above, and none gathers or reads a `Factors` field
# inside its region: with the right-hand side gathered in the kernel of `_halves` and the named
# tuple's arrays taken inside its region, numba's compiled halves found singular blocks where the
# same loops run as Python found none.

@kernel(parallel=True, refcounts=False)
def _halves(graph, storage, pivot, floor, panel, x, half):
    """The two halves of a split graph's elimination (`physics.constraints.joint_graph.eliminate`)
    at once, one a thread, each with its `half` floats of the panel; panel[2 half + t] 1 where half
    t found no singular block, else 0 (`JointGraph.panel`)."""
    for t in prange(2):
        done = eliminate(graph, storage, pivot, floor, panel[t * half:(t + 1) * half], x, graph.halves[t],
                         graph.halves[t + 1])
        panel[2 * half + t] = 1.0 if done else 0.0


@kernel(parallel=True, refcounts=False)
def _substitute_halves(graph, storage, pivot, x, forwards):
    """The two halves' forward substitutions (`forwards`) or back substitutions at once."""
    for t in prange(2):
        if forwards:
            forward(graph, storage, pivot, x, graph.halves[t], graph.halves[t + 1])
        else:
            backward(graph, storage, x, graph.halves[t], graph.halves[t + 1])


@kernel(parallel=True, refcounts=False)
def _zero_halves(storage):
    """storage[:] = 0, half of it a thread (a region of its own: the terms after it may write
    anywhere)."""
    size = storage.size
    for t in prange(2):
        for i in range(t * (size // 2), size if t else size // 2):
            storage[i] = 0.0


@kernel(parallel=True, refcounts=False)
def _assemble_halves(graph, jacobian, weighted, taken, storage):
    """The terms of the blocks one half's bodies alone reach (`JointGraph.term_halves`), one half a
    thread, into storage zeroed before."""
    for t in prange(2):
        assemble_terms(graph, jacobian, weighted, taken, storage, graph.term_halves[t], graph.term_halves[t + 1])


def _cut(buffer, at, count):
    """The view buffer[at:at + count] and the offset after it."""
    return buffer[at:at + count], at + count


def _arena_factors(arena, J, values, x_size, panel):
    """The `Factors` at the start of the arena's buffers, and the offsets after them (floats, flags)."""
    R = ROWS_PER_JOINT
    storage, o = _cut(arena.floats, 0, values)
    x, o = _cut(arena.floats, o, x_size)
    scratch, o = _cut(arena.floats, o, panel)
    floor, o = _cut(arena.floats, o, J)
    return Factors(storage, arena.ints[:J * R].reshape((J, R)), x, scratch, floor), o, 0


def _velocity_scratch(arena, J, B, values, x_size, panel):
    """`VelocityScratch` cut from the arena (`_arena_sizes`); -> (it, the offsets after it)."""
    R = ROWS_PER_JOINT
    factors, o, b = _arena_factors(arena, J, values, x_size, panel)
    taken, b = _cut(arena.flags, b, J * R)
    bound, b = _cut(arena.flags, b, J * R)
    mu, o = _cut(arena.floats, o, J * R)
    rhs, o = _cut(arena.floats, o, J * R)
    W, o = _cut(arena.floats, o, J * R * 12)
    velocity, o = _cut(arena.floats, o, B * 6)
    change, o = _cut(arena.floats, o, B * 6)
    return VelocityScratch(taken.reshape((J, R)), bound.reshape((J, R)), mu.reshape((J, R)), rhs.reshape((J, R)),
                           W.reshape((J, R, 2, 6)), velocity.reshape((B, 6)), change.reshape((B, 6)), factors), o, b


def _position_scratch(arena, n, J, B, values, x_size, panel):
    """`PositionScratch` cut from the arena, after `VelocityScratch`; -> (it, the offsets after it)."""
    R = ROWS_PER_JOINT
    velocity, o, b = _velocity_scratch(arena, J, B, values, x_size, panel)
    f, g = arena.floats, arena.flags
    centre, o = _cut(f, o, B * 3)
    rotation, o = _cut(f, o, B * 9)
    inertia, o = _cut(f, o, n * 9)
    x, o = _cut(f, o, n * 3)
    A, o = _cut(f, o, n * 6)
    trial_x, o = _cut(f, o, n * 3)
    trial_A, o = _cut(f, o, n * 6)
    lam, o = _cut(f, o, J)
    trial_lam, o = _cut(f, o, J)
    total, o = _cut(f, o, J * R)
    trial_total, o = _cut(f, o, J * R)
    Rn, o = _cut(f, o, n * 9)
    y, o = _cut(f, o, n * 3)
    D, o = _cut(f, o, n * 9)
    taken, b = _cut(g, b, J * R)
    factored_taken, b = _cut(g, b, J * R)
    W, o = _cut(f, o, J * R * 12)
    factored_jacobian, o = _cut(f, o, J * R * 12)
    mu, o = _cut(f, o, J * R)
    kick, o = _cut(f, o, n * 6)
    fallen, o = _cut(f, o, CURRENT_WINDOW + 1)
    start_C, o = _cut(f, o, J * R)
    moved, o = _cut(f, o, n * 6)
    released = arena.ints[J * R:J * R + 2 * (RELEASED_MAX + 1)]      # (after the factors' pivots)
    released_columns, o = _cut(f, o, RELEASED_MAX * J * R)
    capacitance, o = _cut(f, o, RELEASED_MAX * (RELEASED_MAX + 1))
    return PositionScratch(centre.reshape((B, 3)), rotation.reshape((B, 3, 3)), inertia.reshape((n, 3, 3)),
                           x.reshape((n, 3)), A.reshape((n, 6)), trial_x.reshape((n, 3)), trial_A.reshape((n, 6)),
                           lam, trial_lam, total.reshape((J, R)), trial_total.reshape((J, R)), Rn.reshape((n, 3, 3)),
                           y.reshape((n, 3)), D.reshape((n, 3, 3)), taken.reshape((J, R)), factored_taken.reshape((J, R)),
                           W.reshape((J, R, 2, 6)), factored_jacobian.reshape((J, R, 2, 6)), mu.reshape((J, R)),
                           kick.reshape((n, 6)), fallen,
                           start_C.reshape((J, R)), moved.reshape((n, 6)), released.reshape((RELEASED_MAX + 1, 2)),
                           released_columns.reshape((RELEASED_MAX, J, R)),
                           capacitance.reshape((RELEASED_MAX, RELEASED_MAX + 1)), velocity.factors), o, b


class JointBodies:
    """The solver bodies the joints move (n of B), their columns, and the joints' elimination
    structure (`physics.constraints.joint_graph.structure`, made once per topology); the rows'
    scratch of each projection, which `joint_geometry` writes before it is read: every row's
    fields, and a joint's coordinate wherever its kind has one to read (a joint's kind never
    changes, so no stale coordinate is ever read); and the projections' working arrays
    (`Arena`): a projection allocates nothing."""

    def __init__(self, joints, bodies):
        used = joints.body[joints.body >= 0]
        self.body = np.unique(used).astype(np.int64)                 # (n,) solver bodies, sorted
        self.index = np.full(bodies + 1, -1, np.int64)              # solver body → column; [−1] = static
        self.index[self.body] = np.arange(len(self.body))
        self._joints, self._bodies = joints, bodies     # (the projections' room, made on first use: `graph`)
        self.start_rows = joint_geometry_arrays(len(joints))        # the sub-step's start (J₀: `SceneSolver.prepare`) …
        self.start_centre = np.empty((bodies, 3))                   # … and its poses (x₀, R₀)
        self.start_rotation = np.empty((bodies, 3, 3))
        self.position_rows = joint_geometry_arrays(len(joints))     # `project_positions`' Newton evaluations
        self.velocity_rows = joint_geometry_arrays(len(joints))     # `project_velocities`' end-of-step rows
        # 1 where the arena's factors are the last velocity projection's J M⁻¹ Jᵀ, at the poses the next
        # position projection starts from, which takes them for its first chord and clears this
        self.carried = np.zeros(1)
        # the contacts the projections hold, written after each velocity solve (`hold_contacts`)
        self.holds = no_holds(bodies)
        # (joints, centre, rotation) where `start_rows` holds the geometry at those poses already, taken
        # by the choice of the joint terms at the sub-step's start (`take_start`), for its prepare alone
        self.start_at = None
        # the rest of the start, as prepare writes it in place (`SceneSolver.prepare`) …
        J = len(joints)
        self.limit_slack = np.zeros(J)
        self.terms = JointTerms(np.zeros(J, np.bool_), np.zeros(J, np.bool_), *(np.zeros(J) for _ in range(6)), np.ones(J))
        self.frame_speed = np.zeros((J, ROWS_PER_JOINT))
        self.row_arrays = joint_row_arrays(J)       # the start's rows and their slots (`start_arguments`) …
        self._row_views = Memo(BOUND_CALLS)         # … and their views by count
        # … and the projections' outputs where a caller gives none (`positions`, `velocities`)
        self.dx, self.dtheta, self.impulse = np.empty((bodies, 3)), np.empty((bodies, 3)), np.empty((bodies, 6))
        self.dv, self.stats = np.empty((bodies, 6)), np.zeros(POSITION_STATS)
        self.step = np.zeros(STEP_VALUES)     # the projections' h, iterations and abandon (`set_step`)
        self._calls = Memo(BOUND_CALLS)
        self._last_stage = None     # (`stage`'s arguments and values, the kernels' generation, its bound call)
        self._step_set = None       # (h, final, abandon) as `set_step` last wrote them into `step`

    # The projections' room: the elimination structure, its arena and the scratch cut from it, made
    # on the first projection. Soft joints (settings.joint_solve) are never projected, and the
    # structure's symbolic analysis of a large net takes longer than many of their steps (17 s on
    # the 100 × 100 net, whose soft step takes 0.1 s).
    @cached_property
    def graph(self):
        """The joints' elimination structure (`physics.constraints.joint_graph.structure`)."""
        return structure(self._joints)

    @cached_property
    def _room(self):
        graph, J, B = self.graph, len(self._joints), self._bodies
        sizes = _arena_sizes(len(self.body), J, B, graph.values, graph.x_size, graph.panel)
        arena = Arena(np.empty(sizes[0]), np.empty(sizes[1], np.bool_), np.empty(sizes[2], np.int64))
        cut = (arena, J, B, graph.values, graph.x_size, graph.panel)
        # the projections' views of it, one `Factors` between them
        velocity = _velocity_scratch(*cut)[0]
        position = _position_scratch(arena, len(self.body), *cut[1:])[0]._replace(factors=velocity.factors)
        return arena, velocity, position

    @property
    def arena(self):
        """The projections' working arrays (`Arena`): a projection allocates nothing."""
        return self._room[0]

    @property
    def velocity_scratch(self):
        return self._room[1]

    @property
    def position_scratch(self):
        return self._room[2]

    @cached_property
    def threads(self):
        """A split graph's halves are factored on one thread or two, whichever is faster now
        (`_split_factor_and_solve`; the same bits on both), judged apart for each projection by its
        time a factorization (a position projection's also evaluates the rows, and solves by chords;
        one that factored nothing is not counted); None where the graph is not split."""
        return None if self.graph.split is None else (ThreadChoice(), ThreadChoice())

    def __len__(self):
        return len(self.body)

    def forget_factors(self):
        """The next position projection factors its own first matrix rather than take the last velocity
        projection's (`carried`), and the next prepare computes the start's geometry rather than take
        one `take_start` left: at a step's start, and where the state was put back, so that a step's
        bits depend on its start state alone (a run restored there steps as it did)."""
        self.carried[0] = 0.0
        self.start_at = None

    @property
    def bound_calls(self):
        """How many bound calls this bundle keeps (`bound`)."""
        return len(self._calls)

    def bound(self, make, objects, *values):
        """The bound call `make()` (physics.core.compiled.bind) for these `objects` (by identity) and
        `values` (`physics.core.compiled.Memo`)."""
        return self._calls.get(make, objects, *values)

    def found(self, objects, *values):
        """The bound call `bound` made for these `objects` and `values`, or None (`Memo.find`: the
        calls below make their `make` only where nothing is found)."""
        return self._calls.find(objects, *values)

    def geometry(self, joints, centre, rotation, rows):
        """`joint_geometry` of `joints` at these poses (centre (B, 3), rotation (B, 3, 3), arrays the
        caller writes in place: the Workspace's solver bodies) into `rows`, one of this bundle's
        (`start_rows`; `velocity_rows` as scratch between projections), through a bound call."""
        objects = (joints, centre, rotation, rows)
        call = self.found(objects, "geometry") or self.bound(
            binding(joint_geometry, joints.model(), centre, rotation, rows, 0, len(joints)), objects, "geometry")
        call()
        return rows

    def take_start(self, joints, centre, rotation):
        """`geometry` of `joints` at these poses into `start_rows`, for the prepare that follows at the
        same poses to take as its start (`start_taken`) instead of computing it again: the same
        bits, the geometry reading the poses and the joints alone. The arrays are checked, not what
        they hold: between the two calls (`physics.pipeline.step`) only the sub-step's context, the
        world pass (the same poses again) and the wake stage (sleep flags) run, and whatever puts the
        state back or halves the sub-step first clears what this records (`forget_factors`)."""
        self.geometry(joints, centre, rotation, self.start_rows)
        self.start_at = (joints, centre, rotation)
        return self.start_rows

    def start_taken(self, joints, centre, rotation):
        """Whether `take_start` took the start's geometry (`start_rows`) at these poses of these joints,
        for the prepare that follows to take it. Either way the next call answers no."""
        taken, self.start_at = self.start_at, None
        return taken is not None and taken[0] is joints and taken[1] is centre and taken[2] is rotation

    def start_arguments(self, joints, centre, rotation, h, beta, softness, control, velocity, exact, s, termed):
        """The arguments of the start's calls, each its kernel's in its order, for the prepare that
        makes them in one compiled call bound to these arrays (`physics.constraints.solver.SceneSolver.prepare`):
        `joint_geometry`'s at the poses centre (B, 3), rotation (B, 3, 3) into `start_rows`;
        `fill_joint_terms`' at `control` (J,) with the joints `exact` (J,) bool, their coordinates'
        inverse inertias `s` (J,) and the bodies'
        `velocity` (B, 6) into `terms`; `fill_joint_rows`' into the row arrays (`row_views` cuts
        them), with `terms` where `termed`; the poses and `start_centre`, `start_rotation` they are
        copied into; `fill_limit_slack`'s for a step of length h into `limit_slack`; the start rows'
        frame speeds and `frame_speed` they are copied into."""
        fixed, gain = joints.term_parts()
        return ((joints.model(), centre, rotation, self.start_rows, 0, len(joints)),
                (fixed, gain, control, exact, s, self.start_rows, joints.model().body, velocity, self.terms),
                joints.row_arguments(self.start_rows, h, beta, 0.0, softness, control, velocity, True,
                                     self.terms if termed else None, self.row_arrays),
                (centre, rotation, self.start_centre, self.start_rotation),
                (self.start_rows, limit_easing(h), self.limit_slack),
                (self.start_rows.frame_speed, self.frame_speed))

    def row_views(self, count):
        """(`Rows`, slots) of the first `count` rows of the row arrays (`fill_joint_rows` writes them:
        `start_arguments`), views made once for each count: prepare's rows live for its sub-step."""
        views = self._row_views
        return views.find((self.row_arrays,), count) or views.get(partial(rows_of, *self.row_arrays, count),
                                                                  (self.row_arrays,), count)

    def positions(self, joints, inverse_mass, inverse_inertia, limited, termed, framed, centre, rotation, momentum, h,
                  work, out=None, final=False, abandon=NEVER):
        """`project_positions` of the start prepare wrote here (`start_centre`, `start_rotation`,
        `start_rows`, and `limit_slack`, `terms`, `frame_speed` where `limited`, `termed`, `framed`),
        M₀⁻¹ `inverse_mass` (B,), `inverse_inertia` (B, 3, 3), from the poses centre (B, 3), rotation
        (B, 3, 3) and the world angular momentum (B, 3), through a call bound to these arrays (the
        caller's, by identity: a caller that keeps its arrays, as the Workspace does, binds once): the
        same bits, without the typing of some seventy arrays at each sub-step. Returns (dx, dθ,
        impulse, error) as `project_positions` does, the first three `out` (a caller's (B, 3), (B, 3),
        (B, 6)) or else this bundle's own arrays (read them before the next projection); `stats`
        holds the projection's (POSITION_STATS,). `final`: the budget holds no retry (the last halving, or the
        step's budget spent: `physics.pipeline.retry`), so the error this projection leaves stands, or
        halves the step past its budget; the current rows then get FINAL_ROWS times their iterations
        (the 64 × 64 net's whipping projections ended 1 to 3 times a retry's standing error off
        after 30). `abandon`: (start, left, step), the errors past which a projection stops
        (`project_positions_kernel`: its sub-step is certain to be taken again as halves)."""
        dx, dtheta, impulse = (self.dx, self.dtheta, self.impulse) if out is None else out
        objects = (joints, inverse_mass, inverse_inertia, work, centre, rotation, momentum, dx, dtheta, impulse)
        values = ("positions", limited, termed, framed)
        self.set_step(h, final, abandon)
        call = self.found(objects, *values)
        if call is None:
            call = self.bound(binding(project_positions_kernel, *self._positions_arguments(*objects, *values[1:])),
                              objects, *values)
        if self.threads is None:
            return dx, dtheta, impulse, call()
        return dx, dtheta, impulse, self.threads[0].run(partial(self._position_work, len(joints)), call)

    def _position_work(self, J):
        """The work of the last position projection of J joints, for the halves' threads' choice."""
        return self.stats[6] * J

    def velocities(self, joints, inverse_mass, limited, termed, centre, rotation, velocity, inverse_inertia, h, work,
                   out=None):
        """`project_velocities` through a call bound to these arrays (`positions`): Δv (B, 6), `out`
        or else this bundle's own array (read it before the next projection)."""
        J = len(joints)
        dv = self.dv if out is None else out
        objects, values = (joints, inverse_mass, work, centre, rotation, velocity, inverse_inertia, dv), \
            ("velocities", limited, termed)
        self.step[STEP_H] = h
        self._step_set = None
        call = self.found(objects, *values)
        if call is None:
            call = self.bound(binding(project_velocities_kernel, *self._velocities_arguments(
                joints, inverse_mass, work, centre, rotation, velocity, inverse_inertia, dv, limited, termed)),
                objects, *values)
        if self.threads is not None:
            self.threads[1].run(J, call)
        elif J:
            call()
        else:
            dv.fill(0.0)
        return dv

    def set_step(self, h, final, abandon):
        """`step` for a position projection of a sub-step of length h (`positions`' `final` and
        `abandon`), written in place for the calls bound to it: [h, CURRENT_ROWS × NEWTON_ITERATIONS
        (× FINAL_ROWS where `final`), abandon's three]; left as it is where it holds these already."""
        written = self._step_set
        if written is not None and written[0] == h and written[1] == final and written[2] is abandon:
            return
        self._step_set = (h, final, abandon)
        step = self.step
        step[STEP_H] = h
        step[STEP_CURRENT] = CURRENT_ROWS * NEWTON_ITERATIONS * (FINAL_ROWS if final else 1)
        step[STEP_ABANDON] = abandon[0]
        step[STEP_ABANDON + 1] = abandon[1]
        step[STEP_ABANDON + 2] = abandon[2]

    def _positions_arguments(self, joints, inverse_mass, inverse_inertia, work, centre, rotation, momentum, dx, dtheta,
                             impulse, limited, termed, framed):
        """`project_positions_kernel`'s arguments for `positions` (its arguments, in its order)."""
        system = start(joints, self, self.start_centre, self.start_rotation, inverse_mass, inverse_inertia,
                       self.limit_slack if limited else None, self.start_rows.jacobian,
                       self.terms if termed else None, self.frame_speed if framed else None, copy=False,
                       holds=self.holds)
        return (system, centre, rotation, momentum, self.step, NEWTON_ITERATIONS, TOLERANCE, dx, dtheta, impulse,
                self.stats, work, self.graph.split)

    def _velocities_arguments(self, joints, inverse_mass, work, centre, rotation, velocity, inverse_inertia, dv,
                              limited, termed):
        """`project_velocities_kernel`'s arguments for `velocities`."""
        return (joints.model(self.limit_slack if limited else None), self.index, self.graph, self.velocity_rows,
                self.velocity_scratch, centre, rotation, velocity, inverse_mass, inverse_inertia, self.holds, dv,
                self.terms if termed else no_terms(len(joints)), self.step, work, self.carried, self.graph.split)

    def stage(self, joints, passes, masses, limited, termed, work, h, final=False, abandon=NEVER):
        """RATTLE's stage of a sub-step as one compiled call (`joint_stage`), where the projections run
        on one thread (`threads` None: a graph not split in halves) and no joint rides a moving frame:
        the same bits as its calls one by one (`physics.pipeline.stages.stage_joints`). `passes`: the
        bodies' passes' arguments (`BodyPasses`), arrays the caller keeps, whose `bodies` hold the
        poses and velocities the projections read and `changes` the (Δv, Δx) they leave for the
        bodies; masses (M⁻¹ (B,), M₀⁻¹ (B, 3, 3)) the start's. -> the largest |g| the position
        projection left; `stats` holds its figures (`positions`)."""
        self.set_step(h, final, abandon)
        last = self._last_stage     # (the last stage's call, where its arguments are these: most sub-steps')
        if last is not None and last[0] is joints and last[1] is passes and last[2] is masses[0] \
                and last[3] is masses[1] and last[4] is work and last[5] == limited and last[6] == termed \
                and last[7] == generation():
            return last[8]()
        return self._stage_call(joints, passes, masses, limited, termed, work)()

    def _stage_call(self, joints, passes, masses, limited, termed, work):
        """`stage`'s call for these arguments, found or bound, kept as the last (a method of its own:
        its `make` closes over these arguments, and `stage` then would make their cells at every
        sub-step)."""
        bodies, dv = passes.bodies, passes.changes[0]
        dx, dtheta, impulse = passes.projected
        objects = (joints, passes, *masses, work)
        values = ("stage", limited, termed)
        call = self.found(objects, *values)
        if call is None:
            def make():
                positions = self._positions_arguments(joints, *masses, work, bodies.centre, bodies.rotation,
                                                      passes.momentum[1], dx, dtheta, impulse, limited, termed, False)
                velocities = self._velocities_arguments(joints, masses[0], work, bodies.centre, bodies.rotation,
                                                        bodies.velocity, bodies.inverse_inertia, dv, limited, termed)
                return bind(joint_stage, passes.stale, passes.spin, passes.gather, passes.momentum, positions,
                            passes.kick, passes.apply, velocities, passes.acceleration, self.step)
            call = self.bound(make, objects, *values)
        self._last_stage = (joints, passes, *masses, work, limited, termed, generation(), call)
        return call


class BodyPasses(NamedTuple):
    """The bodies' passes RATTLE's stage runs between its projections (`joint_stage`), as their
    arguments: the caller's arrays (`physics.pipeline.stages.Workspace.body_passes`)."""
    stale: np.ndarray           # (1,) int64: 1 where the world state is stale at the stage's start
    spin: tuple                 # `world_from_local`'s, with omega_body (`physics.model.hierarchy`)
    gather: tuple               # `solver_bodies`' (`physics.dynamics.body_passes`) …
    bodies: tuple               # … into these `WorldBodies`: centre, rotation, velocity, inverse inertia
    momentum: tuple             # `angular_momentum`'s: (bodies, out (D, 3))
    projected: tuple            # the position projection's dx, dθ (D, 3) and impulse × h (D, 6)
    kick: tuple                 # `impulse_changes`' (its step (1,) takes h)
    changes: tuple              # (Δv, Δx) (D, 6) each, which `kick` writes and `apply` reads
    apply: tuple                # `apply_changes`' (its flags set by the caller)
    acceleration: np.ndarray    # (D, 6) the Data's constraint acceleration, divided by h at the end


@kernel(refcounts=False)
def joint_stage(stale, spin, gather, momentum, positions, kick, apply, velocities, acceleration, step):
    """RATTLE's stage of a sub-step in one call, the calls `physics.pipeline.stages.stage_joints` makes
    one by one, in its order: the world state where it is stale and the solver's bodies
    (`solver_bodies`), their angular momentum, the position projection (`project_positions_kernel`),
    its kick (`impulse_changes`) applied to the bodies (`apply_changes`); the world state again,
    the solver's bodies at the end-of-step poses, the velocity projection (`project_velocities_kernel`,
    left out where the position projection was abandoned: Δv = 0) and its Δv applied with no move;
    the constraint acceleration over h. `step` (STEP_VALUES,): h first, the projections' too
    (`JointBodies.set_step`). Returns the position projection's largest |g| left."""
    h = step[STEP_H]
    if stale[0]:
        world_from_local(*spin)
    solver_bodies(*gather)
    angular_momentum(*momentum)
    error = project_positions_kernel(*positions)
    kick_step, dv, moved = kick[5], kick[6], kick[7]
    kick_step[0] = h
    impulse_changes(*kick)
    apply_changes(*apply)
    world_from_local(*spin)
    solver_bodies(*gather)
    stats = positions[10]
    if stats[1] == 2.0 or velocities[0].kind.shape[0] == 0:
        dv[:] = 0.0
    else:
        project_velocities_kernel(*velocities)
    moved[:] = 0.0
    apply_changes(*apply)
    for k in range(acceleration.shape[0]):
        for i in range(acceleration.shape[1]):
            acceleration[k, i] = acceleration[k, i] / h
    return error


def _zero_frame_speed(J):
    """A zero (J, ROWS_PER_JOINT) frame speed (shared, read only)."""
    zero = _ZERO_FRAME_SPEED.get(J)
    if zero is None:
        zero = _ZERO_FRAME_SPEED[J] = np.zeros((J, ROWS_PER_JOINT))
    return zero


_ZERO_FRAME_SPEED = {}


class RattleStart(NamedTuple):
    """What the position projection keeps from the start of the step (`start`)."""
    model: JointModel
    column: np.ndarray          # (n,) int64 the jointed solver bodies
    index: np.ndarray           # (B + 1,) int64 solver body → column, −1 static ([−1] too)
    inverse_mass: np.ndarray    # (B,) M₀⁻¹
    inverse_inertia: np.ndarray  # (B, 3, 3) world, at the start of the step
    centre: np.ndarray          # (B, 3) x₀
    rotation: np.ndarray        # (B, 3, 3) R₀
    jacobian: np.ndarray        # (J, ROWS_PER_JOINT, 2, 6) J₀: every (joint, slot) row at the start-of-step poses
    geometry: JointGeometry     # scratch: the rows at the pose being evaluated
    graph: JointGraph           # the joints' elimination structure
    scratch: PositionScratch    # the projection's working arrays (`JointBodies.position_scratch`) …
    last: VelocityScratch       # … and the velocity projection's, whose factors it shares
    terms: JointTerms           # the joints' springs, dampers, armatures and exact actuators
    frame_speed: np.ndarray     # (J, ROWS_PER_JOINT) each row's J_a v_a of a moving frame at the start (0 elsewhere)
    carried: np.ndarray         # (1,) 1 where the arena's factors are the last velocity projection's, at
    #                             these poses: the first chord's (`JointBodies.carried`); read and cleared
    holds: Holds                # the contacts held (`hold_contacts`): what the bodies' centres may not do


def start(joints, bodies, centre, rotation, inverse_mass, inverse_inertia, limit_slack=None, jacobian=None, terms=None,
          frame_speed=None, copy=True, holds=None):
    """The start-of-step bundle: J₀ at these poses, M₀⁻¹, R₀ (copies; `copy` False: the caller's own
    contiguous arrays, which it leaves as they are while the bundle is used); `limit_slack` (J,) the soft
    limits (`physics.constraints.joints.Joints.limit_slack`: a limit row's C shifted by it, 0 without);
    `jacobian` J₀ if the caller has it (`Joints.geometry` at these poses: the slack moves C only);
    `terms` the joints' `JointTerms` (none taken without); `frame_speed` the rows' J_a v_a of the
    moving frames at these poses (`physics.constraints.joints.JointGeometry`; none without); `holds`
    the contacts held (`Holds`; none without)."""
    J0 = joints.geometry(centre, rotation).jacobian if jacobian is None else jacobian
    J = len(joints)
    own = (lambda a: np.ascontiguousarray(a, float).copy()) if copy else (lambda a: np.ascontiguousarray(a, float))
    return RattleStart(joints.model(limit_slack), bodies.body, bodies.index, np.ascontiguousarray(inverse_mass, float),
                       own(inverse_inertia), own(centre), own(rotation), J0, bodies.position_rows, bodies.graph,
                       bodies.position_scratch, bodies.velocity_scratch, no_terms(J) if terms is None else terms,
                       _zero_frame_speed(J) if frame_speed is None else frame_speed, bodies.carried,
                       no_holds(len(centre)) if holds is None else holds)


@kernel(inline=True)
def _copy(into, values):
    """into[...] = values for two contiguous arrays of one shape, element by element: a kernel without
    reference counts may not allocate, and numba's slice assignment copies a source that may overlap.
    Through `.flat`, whose item of a C-contiguous array is its data at the index: a reshape to one
    axis calls numba's `numba_attempt_nocopy_reshape` at each copy (25 ns for a 2 × 3 array where the
    copy takes 2; some 5 % of the pendulum's RATTLE stage, which copies a dozen times a projection)."""
    flat_into, flat_values = into.flat, values.flat
    for i in range(into.size):
        flat_into[i] = flat_values[i]


@kernel(inline=True)
def _hat(v):
    return ((0.0, -v[2], v[1]), (v[2], 0.0, -v[0]), (-v[1], v[0], 0.0))


@kernel(inline=True)
def _axpy33(s, a, b):
    """s a + b for 3×3 tuples."""
    return (add(mul(s, a[0]), b[0]), add(mul(s, a[1]), b[1]), add(mul(s, a[2]), b[2]))


@kernel(inline=True)
def _inverse33(m):
    c0, c1, c2 = solve3(m, (1.0, 0.0, 0.0)), solve3(m, (0.0, 1.0, 0.0)), solve3(m, (0.0, 0.0, 1.0))
    return transpose((c0, c1, c2))


@kernel(inline=True)
def _drift_jacobian(inertia, y, h):
    """I + (h/2)(hat(y) I − hat(I y)): ∂/∂y of I y + (h/2) y × (I y)."""
    return _axpy33(0.5 * h, _axpy33(-1.0, _hat(matvec(inertia, y)), matmul(_hat(y), inertia)), inertia)


@kernel(refcounts=False)
def rotor_drift(inertia, momentum, h):
    """The lie-midpoint's rotation over a step, world frame (`physics.dynamics.integrators`): y with
    I y + (h/2) y × (I y) = L (the implicit midpoint of the free rotor; I a 3×3 world inertia at the
    start of the step, L the world angular momentum of the drift) by Newton with the Jacobian
    I + (h/2)(hat(y) I − hat(I y)); the body turns by cay(h y) (left, world). Newton converges
    quadratically, so once an update d is below 1e-9 |y| what is left is of order 1e-18 |y|, under
    round-off: it stops there (three iterations at most sub-steps), or after DRIFT_ITERATIONS.
    (Iterating on until a step gives the same bits ran all eight in three drifts of five: the last
    bit of each 3 × 3 solve cycles between neighbouring floats.)"""
    y = solve3(inertia, momentum)
    for _ in range(DRIFT_ITERATIONS):
        Iy = matvec(inertia, y)
        F = sub(add(Iy, mul(0.5 * h, cross(y, Iy))), momentum)
        d = solve3(_drift_jacobian(inertia, y, h), F)
        y = sub(y, d)
        if dot(d, d) <= DRIFT_CONVERGED * dot(y, y):
            break
    return y


@kernel(refcounts=False)
def drift_derivative(inertia, y, h):
    """∂θ/∂A: how the drift's world rotation cay(h y) R₀ turns (left, world) per change of the
    momentum × h, A = h L (`rotor_drift`): δ(h y) = [I + (h/2)(hat(y) I − hat(I y))]⁻¹ δA, and the
    Cayley map's right-trivialized differential 2 (2 δa + a × δa) / (4 + |a|²) at a = h y."""
    a = mul(h, y)
    s = 2.0 / (4.0 + dot(a, a))
    cay = _axpy33(s, _hat(a), ((2.0 * s, 0.0, 0.0), (0.0, 2.0 * s, 0.0), (0.0, 0.0, 2.0 * s)))
    return matmul(cay, _inverse33(_drift_jacobian(inertia, y, h)))


@kernel(inline=True)
def _travel(kind, member, slides, q, q0):
    """q − q₀ of a joint's coordinate (its kind, its member and its six-axis joint's slides); an
    angle's in (−π, π] (a hinge turning past ±π). (Scalars: a bundle passed per joint costs its
    arrays' reference counts each time.)"""
    d = q - q0
    if kind == HINGE or (kind == AXIS and member >= slides):
        d = np.arctan2(np.sin(d), np.cos(d))
    return d


@kernel(inline=True)
def _rotor_mass(exact, armature, damping, h):
    """m = A + h D / 2: the rotor row's mass over the step; 0: the joint's spring slot is no row."""
    return armature + 0.5 * h * damping if exact else 0.0


@kernel(refcounts=False)
def _frame_work(model, frame_speed, impulse, scale, work):
    """Add to `work` (J,) the work (J) the moving frames do on the bodies through each joint's rows'
    impulses `impulse` × `scale` (J, ROWS_PER_JOINT): −λ J_a v_a per row of a joint whose side a is
    one (a workless row does λ (J_a v_a + J_b v_b) = 0 in all, so the bodies get −λ J_a v_a),
    `frame_speed` its J_a v_a where the impulse acts (`JointGeometry.frame_speed`): a kick at the
    start, with the start's rows."""
    for j in range(len(model.kind)):
        if model.framed[j]:
            for s in range(ROWS_PER_JOINT):
                work[j] -= scale * impulse[j, s] * frame_speed[j, s]


@kernel(inline=True)
def _add_diagonal(graph, storage, j, slot, value):
    """Γ_rr += value at joint j's row of `slot` (its block holds it: `JointGraph.slots`)."""
    m = graph.size[j]
    for r in range(m):
        if graph.slots[j, r] == slot:
            storage[graph.diagonal[j] + r * m + r] += value


@kernel(inline=True)
def _damp(graph, storage, floor, taken, damping):
    """Γ_rr += ν on every taken row of the assembled matrix (Levenberg–Marquardt: J M⁻¹ Jᵀ + ν I), ν
    = `damping` × the row's component's scale s_c (floor_j / PIVOT_FLOOR, which the assembly wrote:
    `physics.constraints.joint_graph.assemble`), so that one damping serves light and heavy
    components alike."""
    for j in range(len(graph.size)):
        nu = damping * floor[j] / PIVOT_FLOOR
        m = graph.size[j]
        for r in range(m):
            if taken[j, graph.slots[j, r]]:
                storage[graph.diagonal[j] + r * m + r] += nu


@kernel(refcounts=False)
def _taken_rows(model, geometry, terms, h, lam, total, taken):
    """The rows the position projection takes, marked in `taken` (J, ROWS_PER_JOINT): the
    equalities, the inequalities where violated (C < 0) or still pushing (their impulse so far
    `total` > 0: a rope the projection pulled taut stays held at C = 0 until its impulse would turn,
    so the set of rows does not flip between iterations) and the rotor rows (module docstring,
    "Joint terms": g = (q − q₀) − (A h q̇₀ + h k (1 − share) − Λ)/m of a joint with an armature or
    a damper, k = (h/2) τ(q₀) its first kick and share the links' (`JointTerms.share`), Λ = `lam`
    (J,) its impulse × h so far, written into the geometry's C), never motors; returns their count,
    the largest |C| and Σ C² (the line search's merit)."""
    exact, armature, damping = terms.exact, terms.armature, terms.damping
    k, error, merit = 0, 0.0, 0.0
    for j in range(geometry.C.shape[0]):
        m = _rotor_mass(exact[j], armature[j], damping[j], h)
        if m != 0.0:
            kept = armature[j] * h * terms.rate[j]      # the rotor's momentum × h as the drift starts …
            kick = 0.5 * h * (terms.force[j] - terms.stiffness[j] * terms.coordinate[j])
            if kick != 0.0 and terms.share[j] != 1.0:   # … with its share of the first kick (`JointTerms.share`)
                kept += h * kick * (1.0 - terms.share[j])
            geometry.C[j, SPRING] = _travel(model.kind[j], model.member[j], model.axis_count[j, 0], geometry.coordinate[j],
                                            terms.coordinate[j]) - (kept - lam[j]) / m
        for s in range(ROWS_PER_JOINT):
            taken[j, s] = False
            rotor = s == SPRING and m != 0.0
            if not rotor and (not geometry.active[j, s] or geometry.motor[j, s]):
                continue
            C = geometry.C[j, s]
            if geometry.inequality[j, s] and C >= 0.0 and total[j, s] <= 0.0:
                continue
            taken[j, s] = True
            k += 1
            error = max(error, abs(C))
            merit += C * C
    return k, error, merit


@kernel(inline=True)
def _lever(model, j):
    """Joint j's lever: its largest anchor offset from a moving body's centre, or its length; 0
    for a joint with neither."""
    lever = model.length[j]
    for side in range(2):
        if model.body[j, side] >= 0:
            a = model.anchor[j, side]
            lever = max(lever, np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]))
    return lever


@kernel(inline=True)
def _row_scale(row, lever):
    """What a row's error is measured against: the joint's lever for a row with a linear part (m),
    1 for a purely angular row (rad: an axis turned by θ is off by θ whatever the lever); 0 where a
    linear row's joint has no lever (left out)."""
    for side in range(2):
        for i in range(3):
            if row[side, i] != 0.0:
                return lever
    return 1.0


@kernel(refcounts=False)
def _relative_error(model, geometry, taken):
    """max |C| / scale over the taken rows (`_row_scale`: the lever for a row in metres, 1 for an
    angular one); rows whose joint has no lever are left out, and so are the rotor rows (whose g
    starts at the rotor's own motion over the step: no drift). The rows at the pose evaluated,
    `geometry`: the joints' model and geometry alone, not the whole `RattleStart` (module
    docstring, "Compile")."""
    worst = 0.0
    for j in range(len(model.kind)):
        lever = _lever(model, j)
        for s in range(ROWS_PER_JOINT):
            if taken[j, s] and s != SPRING:
                scale = _row_scale(geometry.jacobian[j, s], lever)
                if scale > 0.0:
                    worst = max(worst, abs(geometry.C[j, s]) / scale)
    return worst


@kernel(refcounts=False)
def _curvature_error(model, geometry, column, index, start_centre, start_rotation, start_jacobian, start_C, x, R, taken,
                     moved):
    """How far the drift left the joints beyond their tangent: max over the taken rows of
    |g(q) − g(q₀) − J₀ (q − q₀)| / scale (`_row_scale`), q − q₀ the jointed bodies' translation and
    rotation vector (of R R₀ᵀ) since the start, x (n, 3) and R (n, 3, 3) per column. A link of lever
    r turning by ωh leaves its joint by r (ωh)²/2 beyond the tangent: the measure is (ωh)²/2, the
    same for a chain's short links and a pendulum's long one, and it falls as h² where the step is
    halved. What the tangent carries (a velocity solve's joint rows left unconverged after a hard
    contact, a rope snapping taut) is no curvature: RATTLE's first Newton step takes it whole, at
    any h, so it is no reason to halve the step. `start_C` (J, ROWS_PER_JOINT) g(q₀) and
    `start_jacobian` J₀ at the start-of-step poses `start_centre`, `start_rotation` (`RattleStart`'s,
    given apart: module docstring, "Compile"); the rows at q in `geometry`; `column`, `index` the
    jointed bodies' columns; `moved` (n, 6) scratch."""
    n = len(column)
    for c in range(n):
        b = column[c]
        theta = rotvec_from_matrix(matmul(load33(R, c), transpose(load33(start_rotation, b))))
        for i in range(3):
            moved[c, i] = x[c, i] - start_centre[b, i]
            moved[c, 3 + i] = theta[i]
    worst = 0.0
    for j in range(len(model.kind)):
        lever = _lever(model, j)
        for s in range(ROWS_PER_JOINT):
            if not taken[j, s] or s == SPRING:
                continue
            row = start_jacobian[j, s]
            scale = _row_scale(row, lever)
            if scale <= 0.0:
                continue
            tangent = 0.0
            for side in range(2):
                c = index[model.body[j, side]]
                if c >= 0:
                    for i in range(6):
                        tangent += row[side, i] * moved[c, i]
            worst = max(worst, abs(geometry.C[j, s] - start_C[j, s] - tangent) / scale)
    return worst


@kernel(refcounts=False)
def _evaluate(model, geometry, terms, column, start_rotation, x, A, momentum, h, centre, rotation, inertia, R, Y, taken,
              lam, total):
    """The pose of the jointed bodies (`RattleStart`'s model, geometry, terms, column and R₀
    `start_rotation`, given apart: a kernel of its own types every bundle it is given) for
    translation x (n, 3) and angular impulse × h A (n, 3): R = cay(h y) R₀ with y the rotor drift of
    L + A/h, written into centre/rotation, y into Y (n, 3) (their derivatives are `_weigh`'s, made
    only where a Newton matrix needs them: a line search's trials and a chord's poses never do); the
    rows there into `geometry`, with the rotor rows at their impulses × h `lam` (J,) and every row's
    so far `total` (J, ROWS_PER_JOINT); returns (taken rows, largest |C|, Σ C²)."""
    for c in range(len(column)):
        b = column[c]
        L = (momentum[b, 0] + A[c, 0] / h, momentum[b, 1] + A[c, 1] / h, momentum[b, 2] + A[c, 2] / h)
        I = load33(inertia, c)
        y = rotor_drift(I, L, h)
        Rc = matmul(cayley(mul(h, y)), load33(start_rotation, b))
        store33(R, c, Rc)
        store33(rotation, b, Rc)
        Y[c, 0], Y[c, 1], Y[c, 2] = y[0], y[1], y[2]
        centre[b, 0], centre[b, 1], centre[b, 2] = x[c, 0], x[c, 1], x[c, 2]
    joint_geometry(model, centre, rotation, geometry, 0, len(model.kind))
    return _taken_rows(model, geometry, terms, h, lam, total, taken)


@kernel(inline=True)
def _finite(a):
    """Whether every entry of the 2-d array `a` is finite (np.isfinite's array, not made)."""
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            if not np.isfinite(a[r, c]):
                return False
    return True


@kernel(refcounts=False)
def hold_contacts(body, jacobian, impulse, first, count, normal, direction):
    """`Holds`' count (B,), normal and direction (B, 3, 3) from the velocity solve's contact rows
    (`physics.constraints.constraints`: from row `first` on, three a point, its normal row last):
    each solver body that a static shape pushed (a normal row with one moving side and an impulse
    λ > 0) is held along that row's direction, the directions made orthonormal in turn
    (Gram–Schmidt; one within HOLD_SPAN of those held already adds none), at most three: the bodies
    a projection may hold (`_hold_step`). (Arrays, not the bundle: typed calls of a kernel without
    numba's reference counts given the tuple kept records of its arrays, 57 bytes each, some 4 KiB
    over the ant's 100 steps with `physics.constraints.solver._solve_changes`'.)"""
    count[:] = 0
    for r in range(first + 2, len(impulse), 3):
        u = _pushed(body, jacobian, impulse, r)
        if not dot(u, u) > 0.0:
            continue
        b = body[r, 0] if body[r, 0] >= 0 else body[r, 1]
        k = count[b]
        if k == 3:
            continue
        u = mul(1.0 / math.sqrt(dot(u, u)), u)
        pushed = u
        for e in range(k):
            along = normal[b, e, 0] * u[0] + normal[b, e, 1] * u[1] + normal[b, e, 2] * u[2]
            u = (u[0] - along * normal[b, e, 0], u[1] - along * normal[b, e, 1],
                 u[2] - along * normal[b, e, 2])
        size = math.sqrt(dot(u, u))
        if not size > HOLD_SPAN:
            continue
        for i in range(3):
            normal[b, k, i] = u[i] / size
            direction[b, k, i] = pushed[i]
        count[b] = k + 1


@kernel(inline=True)
def _pushed(body, jacobian, impulse, r):
    """The linear impulse λ Jᵀ contact row r gave its moving side, where a static shape pushed it
    (λ > 0, one side moving; `hold_contacts`), else 0."""
    if not impulse[r] > 0.0 or (body[r, 0] >= 0) == (body[r, 1] >= 0):
        return (0.0, 0.0, 0.0)
    side = 0 if body[r, 0] >= 0 else 1
    return (impulse[r] * jacobian[r, side, 0], impulse[r] * jacobian[r, side, 1], impulse[r] * jacobian[r, side, 2])


@kernel(inline=True)
def held(holds, b, v):
    """The 3-vector v (a body b's linear impulse or motion) with its parts along the directions b is
    held in (`Holds`, where its state is HELD) scaled by HOLD_GIVE: v itself, the same bits, where
    b is not held."""
    if holds.state[b] != HELD:
        return v
    for e in range(holds.count[b]):
        along = (1.0 - HOLD_GIVE) * (holds.normal[b, e, 0] * v[0] + holds.normal[b, e, 1] * v[1]
                                     + holds.normal[b, e, 2] * v[2])
        v = (v[0] - along * holds.normal[b, e, 0], v[1] - along * holds.normal[b, e, 1], v[2] - along * holds.normal[b, e, 2])
    return v


@kernel(inline=True)
def pressed_in(count, direction, b, v):
    """The 3-vector v (a body b's linear impulse) less its parts that press b into the shapes it
    rests on (along −d for each push d, `Holds`' count and direction, in turn): v itself, the same
    bits, where nothing does."""
    for e in range(count[b]):
        along = direction[b, e, 0] * v[0] + direction[b, e, 1] * v[1] + direction[b, e, 2] * v[2]
        if along < 0.0:
            v = (v[0] - along * direction[b, e, 0], v[1] - along * direction[b, e, 1],
                 v[2] - along * direction[b, e, 2])
    return v


@kernel(inline=True)
def _turn(holds, b, v):
    """A contact pushes, never pulls (`_hold_step`): +1 where the impulse v (3) from the joints on
    a free body b presses it into a shape it rests on (it is to be held), −1 where on a held body
    it would lift it off one (its hold's reaction would pull: it is to be let go, off every shape
    it rests on: a body's holds go together), else 0. By each shape's own push direction, not
    the orthonormal ones made from them."""
    state = holds.state[b]
    for e in range(holds.count[b]):
        along = holds.direction[b, e, 0] * v[0] + holds.direction[b, e, 1] * v[1] + holds.direction[b, e, 2] * v[2]
        if state == FREE and along < 0.0:
            return 1
        if state == HELD and along > 0.0:
            return -1
    return 0


@kernel(inline=True)
def _hold_turns(holds, b, v):
    """`_turn`'s change of body b's state, made; 1 where it changed."""
    turn = _turn(holds, b, v)
    if turn == 1:
        holds.state[b] = HELD
    elif turn == -1:
        holds.state[b] = LET_GO
    return 1 if turn != 0 else 0


@kernel(inline=True)
def _direction(start_jacobian, factored_jacobian, current_jacobian, along_current, chord, j, s):
    """The row J_d (2, 6) along which a Newton step's μ of row (j, s) moves the bodies: J₀'s
    (`start_jacobian`), or along the current rows the pose's own (`current_jacobian`), or a chord's
    the factored pose's (`factored_jacobian`; module docstring)."""
    if not along_current:
        return start_jacobian[j, s]
    if chord:
        return factored_jacobian[j, s]
    return current_jacobian[j, s]


@kernel(refcounts=False)
def _hold_step(model, holds, column, index, start_jacobian, factored_jacobian, current_jacobian, taken, along_current,
               chord, total, mu, kick):
    """The contacts' active set in a position projection (`Holds`): a body a static shape pushed
    starts FREE; where the joints' impulse on it with a Newton step's, Σ J_dᵀ (total + μ) (`kick`
    (n, 6) scratch, J_d as the projection's kick takes it; `total` the rows' impulses so far, as
    `_let_go` judges the inequalities), presses it into the shape it is HELD, and where, held, that
    impulse would lift it off (its hold's reaction would pull) it is LET_GO, not to be held again
    in this projection (finite, as Murty's least index). Returns how many changed: the rows are
    then solved again. `RattleStart`'s fields it reads given apart (module docstring, "Compile")."""
    kick[:] = 0.0
    for j in range(len(model.kind)):
        for s in range(ROWS_PER_JOINT):
            if not taken[j, s]:
                continue
            Jd = _direction(start_jacobian, factored_jacobian, current_jacobian, along_current, chord, j, s)
            for side in range(2):
                b = model.body[j, side]
                c = index[b]
                if c >= 0 and holds.count[b] > 0:
                    for i in range(3):
                        kick[c, i] += Jd[side, i] * (total[j, s] + mu[j, s])
    changed = 0
    for c in range(len(column)):
        b = column[c]
        if holds.count[b] > 0:
            changed += _hold_turns(holds, b, (kick[c, 0], kick[c, 1], kick[c, 2]))
    return changed


@kernel(refcounts=False)
def _weigh(model, geometry, column, index, inverse_mass, start_jacobian, holds, taken, along_current, inertia, Y, h, D,
           W):
    """W (J, ROWS_PER_JOINT, 2, 6) = M₀⁻¹ J_dᵀ per taken row and side, J_d = J₀ (or J_k along the
    current rows), the angular part of M₀⁻¹ the drift derivative D (n, 3, 3), made here from the
    world inertias (n, 3, 3) and the rotor drifts Y (n, 3) of the pose evaluated (`_evaluate`):
    J_k W is the Newton matrix. `RattleStart`'s fields it reads (M₀⁻¹ `inverse_mass`, J₀
    `start_jacobian`) given apart (module docstring, "Compile")."""
    for c in range(len(column)):
        store33(D, c, drift_derivative(load33(inertia, c), (Y[c, 0], Y[c, 1], Y[c, 2]), h))
    for j in range(len(model.kind)):
        for s in range(ROWS_PER_JOINT):
            if not taken[j, s]:
                continue
            Jd = geometry.jacobian[j, s] if along_current else start_jacobian[j, s]
            for side in range(2):
                c = index[model.body[j, side]]
                if c < 0:
                    W[j, s, side, :] = 0.0
                    continue
                b = model.body[j, side]
                m = inverse_mass[b]
                ang = matvec(load33(D, c), (Jd[side, 3], Jd[side, 4], Jd[side, 5]))
                lin = held(holds, b, (m * Jd[side, 0], m * Jd[side, 1], m * Jd[side, 2]))
                for i in range(3):
                    W[j, s, side, i] = lin[i]
                    W[j, s, side, 3 + i] = ang[i]


@kernel(inline=True)
def _release(geometry, taken, total, mu, every):
    """Let go the taken inequalities with no impulse so far (`total` ≤ 0) whose Newton multiplier μ
    is negative (they would hold their bound shut): every one where `every`, else the first (Murty's
    least index); returns how many. One alone is left at g = −s μ > 0 by the others' linear model
    (s its Schur complement in the Newton matrix, positive where that is near J M⁻¹ Jᵀ), beyond its
    bound as an inequality should be; several at once may leave one of them violated, which
    `_retake` finds."""
    released = 0
    for j in range(taken.shape[0]):
        for s in range(ROWS_PER_JOINT):
            if taken[j, s] and geometry.inequality[j, s] and total[j, s] <= 0.0 and mu[j, s] < 0.0:
                taken[j, s] = False
                released += 1
                if not every:
                    return released
    return released


@kernel(inline=True)
def _retake(system, taken, total, mu, W, dq, tolerance):
    """Take again each inequality let go in this iteration (violated, with no impulse so far, not
    taken: `_taken_rows` took every such row) that the Newton step μ of the taken rows would leave
    violated by more than `tolerance` (the projection's: less stands) in its linear model:
    g + J Σ W μ < −tolerance (J the row's Jacobian, W the taken rows' M⁻¹-weighed ones, `_weigh`:
    the Newton matrix's factors J W). `dq` (n, 6) scratch. Returns whether one was."""
    geometry, model = system.geometry, system.model
    dq[:] = 0.0
    for j in range(taken.shape[0]):
        for s in range(ROWS_PER_JOINT):
            if taken[j, s]:
                for side in range(2):
                    c = system.index[model.body[j, side]]
                    if c >= 0:
                        for i in range(6):
                            dq[c, i] += W[j, s, side, i] * mu[j, s]
    again = False
    for j in range(taken.shape[0]):
        for s in range(ROWS_PER_JOINT):
            if (taken[j, s] or not geometry.active[j, s] or geometry.motor[j, s] or not geometry.inequality[j, s]
                    or total[j, s] > 0.0 or not geometry.C[j, s] < 0.0):
                continue
            g = geometry.C[j, s]
            for side in range(2):
                c = system.index[model.body[j, side]]
                if c >= 0:
                    for i in range(6):
                        g += geometry.jacobian[j, s, side, i] * dq[c, i]
            if g < -tolerance:
                taken[j, s] = True
                again = True
    return again


@kernel(refcounts=False)
def _let_go(graph, kept, inequality, taken, total, mu, z, split):
    """`_let_go_passes` with the factors' own rows taken (no row let go since they were made): a
    kernel of its own, small enough for LLVM to inline into the projection (with one kernel for
    both this and `_let_go_around`, the chain's projection took 4 % longer)."""
    return _let_go_passes(graph, kept, inequality, taken, total, mu, z, False, split)


@kernel(refcounts=False)
def _let_go_around(graph, kept, inequality, taken, total, mu, z, split):
    """`_let_go_passes` where rows were let go since the factors were made (`_solve_kept`)."""
    return _let_go_passes(graph, kept, inequality, taken, total, mu, z, True, split)


@kernel(inline=True)
def _let_go_passes(graph, kept, inequality, taken, total, mu, z, released, split):
    """The taken inequalities whose impulse so far `total` > 0 the Newton step μ would turn (total +
    μ < 0: a limit or a rope letting go) end the step at 0 impulse, μ_r = −total_r, while the other
    rows' step stays Newton's (Γ μ = −g on each of them, Γ as factored: damped along the current rows,
    `_damp`): μ ← μ + t Γ⁻¹ e_r, t = (−total_r − μ_r) / (Γ⁻¹)_rr, one substitution with the step's
    factors a row, which leaves every other row's
    equation as it was (the capacitance method for a row whose unknown is fixed). A row corrected
    earlier in a pass moves again, so the passes repeat, LET_GO_PASSES at most, and a row still
    turning after them is clamped by the caller. Clamped alone, in place, the step was no Newton step
    of the others: gymnasium's ant driven by random controls, a hip limit's impulse turning, found
    no descent along the current rows 1.9 mm off and was halved past its step's budget. One row
    let go is exact; where several are, a later correction may lift an earlier one off −total,
    which then stands where it is (neither at 0 nor on its own equation). `kept`: the step's factors
    and, where rows were let go since they were made, the columns `_solve_kept` solves around them
    with (`KeptFactors`); `z` (J, ROWS_PER_JOINT) scratch; `split` as
    `project_positions_kernel`'s. Returns the corrections made (a row corrected
    in two passes counts twice)."""
    corrected = 0
    for _ in range(LET_GO_PASSES):
        found = False
        for j in range(taken.shape[0]):
            for s in range(ROWS_PER_JOINT):
                if not (taken[j, s] and inequality[j, s] and total[j, s] > 0.0 and total[j, s] + mu[j, s] < 0.0):
                    continue
                z[:] = 0.0
                z[j, s] = 1.0
                if released:
                    solved = _solve_kept(graph, kept, taken, z, split)
                elif split is None:
                    solved = solve_factored(graph, kept.factors, z)
                else:
                    solved = _split_solve_factored(graph, kept.factors, z)
                if not solved or not z[j, s] > 0.0:
                    return corrected        # (Γ⁻¹)_rr: positive where Γ is near J M⁻¹ Jᵀ; else the clamp
                t = (-total[j, s] - mu[j, s]) / z[j, s]
                for a in range(taken.shape[0]):
                    for b in range(ROWS_PER_JOINT):
                        mu[a, b] += t * z[a, b]     # (an untaken slot's z is 0: `solve_factored`)
                mu[j, s] = -total[j, s]
                corrected += 1
                found = True
        if not found:
            break
    return corrected


@kernel(inline=True)
def _substitute(graph, factors, rhs, split):
    """rhs ← Γ⁻¹ rhs with the kept factors: `solve_factored`, or a split graph's
    (`_split_solve_factored`; `split` alone in the condition, so that numba prunes the other)."""
    if split is None:
        solved = solve_factored(graph, factors, rhs)
    else:
        solved = _split_solve_factored(graph, factors, rhs)
    return solved


@kernel(refcounts=False)     # (a call of its own: inlined, the projection's loops around it ran slower)
def _solve_kept(graph, kept, taken, rhs, split):
    """rhs (J, ROWS_PER_JOINT) ← the solution of the `taken` rows' Newton system with the kept
    factors (`kept`, a `KeptFactors`), made for the rows `kept.factored_taken`: those and k ≤
    RELEASED_MAX more, rows let go since (`_release`, or no longer violated at a chord's pose),
    whose multipliers are 0 and whose equations are gone. The capacitance method (Hager, "Updating the inverse of a matrix", SIAM
    Review 31, 1989), as `_let_go` fixes one row: with E the let-go rows' unit columns, the taken
    rows' solution is μ = Γ⁻¹ rhs + Γ⁻¹E t, t from the k × k system (Eᵀ Γ⁻¹ E) t = −Eᵀ Γ⁻¹ rhs that
    sets μ_E = 0: k + 1 substitutions where a factorization of the smaller system would cost
    another factorization (the humanoid's and the ant's legs let a limit go in most projections).
    (Eᵀ Γ⁻¹ E is invertible wherever Γ and the taken rows' block are: Schur's determinant
    identity.) With none let go it is the substitution alone, the same bits. rhs of a let-go row
    is any (its t absorbs it); it comes out 0. False where a substitution fails or the k × k system
    is singular (the caller factors the taken rows instead). The joint graph and the kept factors'
    arrays alone, not the whole `RattleStart` nor the position scratch (module docstring, "Compile")."""
    factors = kept.factors
    factored_rows, released, columns, S = kept.factored_taken, kept.released, kept.released_columns, kept.capacitance
    # the columns Γ⁻¹ e_d are kept while the factors and the rows let go stay (a chord's steps and
    # `_let_go`'s solves reuse them): released[RELEASED_MAX] = (their count, 1 where kept)
    k, reused = 0, released[RELEASED_MAX, 1] == 1
    for j in range(taken.shape[0]):
        for s in range(ROWS_PER_JOINT):
            if factored_rows[j, s] and not taken[j, s]:
                if k == RELEASED_MAX:
                    return False
                if reused and (k >= released[RELEASED_MAX, 0] or released[k, 0] != j or released[k, 1] != s):
                    reused = False
                    released[RELEASED_MAX, 1] = 0
                released[k, 0], released[k, 1] = j, s
                k += 1
    if not _substitute(graph, factors, rhs, split):
        return False
    if k == 0:
        return True
    if not (reused and k == released[RELEASED_MAX, 0]):
        released[RELEASED_MAX, 0], released[RELEASED_MAX, 1] = k, 0
        for d in range(k):
            column = columns[d]
            column[:] = 0.0
            column[released[d, 0], released[d, 1]] = 1.0
            if not _substitute(graph, factors, column, split):
                return False
        released[RELEASED_MAX, 1] = 1
    for a in range(k):
        for b in range(k):
            S[a, b] = columns[b][released[a, 0], released[a, 1]]
        S[a, k] = -rhs[released[a, 0], released[a, 1]]
    for c in range(k):      # Gaussian elimination with partial pivoting on [S | −rhs_E]
        p = c
        for r in range(c + 1, k):
            if abs(S[r, c]) > abs(S[p, c]):
                p = r
        if not abs(S[p, c]) > 0.0:
            return False
        if p != c:
            for i in range(k + 1):
                S[c, i], S[p, i] = S[p, i], S[c, i]
        for r in range(c + 1, k):
            f = S[r, c] / S[c, c]
            for i in range(c, k + 1):
                S[r, i] -= f * S[c, i]
    for c in range(k - 1, -1, -1):
        t = S[c, k]
        for i in range(c + 1, k):
            t -= S[c, i] * S[i, k]
        S[c, k] = t / S[c, c]
        if not np.isfinite(S[c, k]):
            return False
    for d in range(k):
        t, column = S[d, k], columns[d]
        for j in range(taken.shape[0]):
            for s in range(ROWS_PER_JOINT):
                rhs[j, s] += t * column[j, s]
    for d in range(k):
        rhs[released[d, 0], released[d, 1]] = 0.0
    return True


@kernel(inline=True)
def _abandoned(stats, abandon):
    """Whether a projection leaving J₀ now stops (`project_positions_kernel`'s `abandon`): it left
    with more than abandon[1] of a lever to project (stats[4]), from a start more than abandon[0]
    off, its curvature (stats[3]) and its whole start error (stats[5]) alike (the retry takes one of
    the two); marks stats[1] = 2."""
    if stats[4] > abandon[1] and min(stats[3], stats[5]) > abandon[0]:
        stats[1] = 2.0
        return True
    return False


@kernel(refcounts=False)
def project_positions_kernel(system, centre, rotation, momentum, step, iterations, tolerance, dx, dtheta, impulse, stats,
                             work, split):
    """`project_positions` compiled; returns the largest |g| left. stats (POSITION_STATS,): Newton
    iterations taken (a pass that tries a step again with more damping counts), whether the
    current-row fallback fired, the largest |impulse| component, the
    drift's departure from the rows' tangent relative to the joints' levers (`_curvature_error`),
    the relative error when it left J₀ and the one the drift started from (`_relative_error`), the
    factorizations (an iteration that lets an inequality go factors again; an iteration that
    factors none is a chord step), the iterations along J₀, the factorizations along the current
    rows, the inequality rows let go (`_release`; any `_retake` takes back counted too), the
    rows with an impulse so far whose Newton step let them go (`_let_go`'s corrections) and the
    solves the contacts' active set took again (`_hold_step`: a body held or let go);
    `work` (J,) gets each joint's
    frame's work (`_frame_work`). `step` (STEP_VALUES,): h, `current` and `abandon` (numbers the caller
    writes in place: `JointBodies.set_step`). At most `iterations` along J₀ and `current` along the
    current rows. `abandon` (start, left, step): a projection whose sub-step is certain to be taken again as halves
    (the caller's retry, `physics.pipeline.retry`) stops, where its iterations would be
    factorizations spent on nothing (stats[1] = 2): one whose drift starts more than `step` of a
    lever off (its curvature and its whole start error alike) before any, one that leaves J₀ with
    more than `left` of a lever still to project, from a start more than `start` off, there;
    `NEVER` never stops. `split` is the joint graph's `JointGraph.split`: an argument of its own, so
    that numba prunes the branch it does not take (`_split_factor_and_solve`)."""
    n = len(system.column)
    J = len(system.model.kind)
    h, current = step[STEP_H], int(step[STEP_CURRENT])
    abandon = (step[STEP_ABANDON], step[STEP_ABANDON + 1], step[STEP_ABANDON + 2])
    scratch = system.scratch
    kept = KeptFactors(scratch.factors, scratch.factored_taken, scratch.released, scratch.released_columns,
                       scratch.capacitance)
    # (`_evaluate`'s parts of the bundle)
    model, geometry, terms, column, start_rotation = system.model, system.geometry, system.terms, system.column, \
        system.rotation
    # the last velocity projection's factors, J M⁻¹ Jᵀ at the poses this step starts from (where it
    # left them: `RattleStart.carried`): J₀ M₀⁻¹ J₀ᵀ, SHAKE's matrix, the first chord's
    last = system.last
    carried = system.carried[0] == 1.0
    system.carried[0] = 0.0
    dx[:] = 0.0         # (an unjointed body's rows stay 0)
    dtheta[:] = 0.0
    impulse[:] = 0.0
    work_c, work_R = scratch.centre, scratch.rotation
    _copy(work_c, centre)
    _copy(work_R, rotation)
    inertia = scratch.inertia
    for c in range(n):
        store33(inertia, c, _inverse33(load33(system.inverse_inertia, system.column[c])))
    x = scratch.x
    for c in range(n):
        for i in range(3):
            x[c, i] = centre[system.column[c], i]
    A = scratch.A
    A[:] = 0.0
    system.holds.state[:] = FREE      # (the contacts' active set starts empty: `_hold_step`)
    terms = system.terms
    exact, armature, damping = terms.exact, terms.armature, terms.damping
    lam, trial_lam = scratch.lam, scratch.trial_lam         # the rotor rows' impulses × h
    total, trial_total = scratch.total, scratch.trial_total  # every row's
    lam[:] = 0.0
    total[:] = 0.0
    R, Y, D = scratch.R, scratch.y, scratch.D
    taken = scratch.taken
    taken[:] = False
    W = scratch.W       # (written for each taken row before it is read, `_weigh`; the others never read)
    mu, kick = scratch.mu, scratch.kick
    trial_x, trial_A = scratch.trial_x, scratch.trial_A
    # g(q₀): the rows at the start-of-step poses (the moving frames where they end the step, as at q)
    for c in range(n):
        b = system.column[c]
        for i in range(3):
            work_c[b, i] = system.centre[b, i]
        store33(work_R, b, load33(system.rotation, b))
    joint_geometry(system.model, work_c, work_R, system.geometry, 0, len(system.model.kind))
    start_C = scratch.start_C
    _copy(start_C, system.geometry.C)
    K, error, merit = _evaluate(model, geometry, terms, column, start_rotation, x, A[:, 3:], momentum, h, work_c,
                                    work_R, inertia, R, Y, taken, lam, total)
    along_current = False
    stats[:] = 0.0
    stats[3] = _curvature_error(model, geometry, column, system.index, system.centre, system.rotation, system.jacobian,
                                start_C, x, R, taken, scratch.moved)
    stats[5] = _relative_error(model, geometry, taken)
    started = not min(stats[3], stats[5]) > abandon[2]     # (else certain to be taken again: `abandon`; NaN starts)
    if not started:
        stats[1] = 2.0
    previous = np.inf
    along_start = 0         # iterations along J₀
    # the factors of the last Newton matrix, kept for chord steps while they contract by CHORD
    # (`factored`: for these rows, along these directions; `chord`: the last step was one)
    factored, chord = carried, False
    own = False             # whether the kept factors are this projection's (not the velocity projection's)
    scratch.released[RELEASED_MAX, 1] = 0
    stalls = 0              # Newton steps in a row that each left more than STALL of the error
    factored_taken = scratch.factored_taken
    if carried:
        _copy(factored_taken, last.taken)
    else:
        factored_taken[:] = False
    fallen = scratch.fallen     # the error as each of the last current-row iterations began
    levenberg = 0.0             # the current rows' Levenberg–Marquardt damping (`_damp`)
    for _ in range(iterations + current if started else 0):
        # a start within the tolerance still takes one step (unless exact): what a drift leaves
        # there is systematic (the Cayley map's turn against the rotor's, (hω)³/12 a sub-step, the same
        # sign each time), where Newton's remainder after a step is its square
        if error <= tolerance and (stats[0] > 0.0 or error == 0.0):
            break
        # factors are kept only after a step that shrank the error CHORD-fold: a chord step that
        # did less, or a Newton step in its linear regime (a nearly singular system), is followed
        # by Newton's own matrix, so a stall is judged between Newton steps, as without chords
        slow = error > CHORD * previous
        if slow:
            factored = False
        # Newton converges quadratically; one that falls by less than STALL an iteration meets a
        # nearly singular system (a net of loops near a plane: its rows nearly redundant), where
        # more iterations buy round-off. Its error, once within ACCEPTED_ERROR of the levers, stands.
        stalled = not (chord and slow) and error > STALL * previous
        if stalled and _relative_error(model, geometry, taken) <= ACCEPTED_ERROR:
            break
        if not (chord and slow):
            stalls = stalls + 1 if error > STUCK * previous else 0
        if not along_current and (along_start == iterations or stalls == LEFT_STALLS):
            # `iterations` along J₀ found no root, or LEFT_STALLS Newton steps in a row each stalled
            # (J₀'s directions hold none near: a net's): the current rows take the rest, with
            # CURRENT_ROWS times as many iterations of their own
            along_current = True
            factored = False
            stats[4] = _relative_error(model, geometry, taken)
            if _abandoned(stats, abandon):
                break
        if along_current and stats[0] >= along_start + current:
            break
        if along_current:   # the current rows stuck too (a straight-edged net's: linear, about 0.9 an iteration)
            done = int(stats[0]) - along_start
            if (done >= CURRENT_WINDOW and not (chord and slow) and error <= CURRENT_STANDING
                    and error > CURRENT_FALL * fallen[(done - CURRENT_WINDOW) % (CURRENT_WINDOW + 1)]):
                break
            fallen[done % (CURRENT_WINDOW + 1)] = error
        along_start += 0 if along_current else 1
        previous = error
        stats[0] += 1.0
        if along_current:
            stats[1] = 1.0
        # a violated inequality with no impulse yet whose solve gives it μ < 0 (holding its bound
        # shut) is let go, and the rest solved again without it (an active set, `_release`):
        # clamped to 0 in place, its step was no Newton step of the other rows (gymnasium's ant, a
        # hip 1.4e-6 rad past its limit: Σ g² rose 100,000-fold, and 1/2048 of the step descended,
        # where the step without the row converges). All such rows at once first (a block pivot),
        # then those the new step would leave violated taken again (`_retake`), then one at a time
        # (Murty's least index: finite): one at a time from the start, each a factorization of its
        # own, gymnasium's ant's projections, its legs on their limits, took 4.5 factorizations,
        # 3.5 rows let go; all at once 1.9 in the same Newton iterations, and with no retake the
        # rope bridge's ropes, let go together, took a seventh more (one violated at the next pose)
        pivots = 0      # 0: none let go yet; 1: a block let go, its retake due; 2: one at a time
        first = True    # (the iteration's first pass judges whether its step is a chord's)
        while True:
            gained, let_go = 0, 0       # (counted without a branch: the loop stays as quick as the mu it writes)
            for j in range(J):
                for s in range(ROWS_PER_JOINT):
                    mu[j, s] = -system.geometry.C[j, s] if taken[j, s] else 0.0
                    gained += taken[j, s] and not factored_taken[j, s]
                    let_go += factored_taken[j, s] and not taken[j, s]
            # an inequality taken since is another matrix; rows let go since the factors were made
            # are solved around with them (`_solve_kept`): a few, with factors this projection made
            # (a carried one's W was never weighed here)
            if gained or let_go > RELEASED_MAX or (let_go and not own):
                factored = False
            if first or not factored:
                chord = factored
            first = False
            if factored and let_go == 0:    # (`split` alone in its conditions: numba prunes only such branches)
                if split is None:
                    solved = solve_factored(system.graph, scratch.factors, mu)
                else:
                    solved = _split_solve_factored(system.graph, scratch.factors, mu)
            elif factored:
                solved = _solve_kept(system.graph, kept, taken, mu, split)
                if not solved:      # (a singular capacitance system: the taken rows factored instead)
                    factored = False
                    continue
            else:
                _weigh(model, geometry, column, system.index, system.inverse_mass, system.jacobian, system.holds, taken,
                       along_current, inertia, Y, h, D, W)
                if split is None:
                    assemble(system.graph, system.geometry.jacobian, W, taken, scratch.factors.storage,
                             scratch.factors.floor)
                else:
                    _split_assemble(system.graph, system.geometry.jacobian, W, taken, scratch.factors.storage,
                                    scratch.factors.floor)
                for j in range(J):
                    m = _rotor_mass(exact[j], armature[j], damping[j], h)
                    if m != 0.0:    # the rotor's own give: ∂g/∂Λ = J W + 1/m
                        _add_diagonal(system.graph, scratch.factors.storage, j, SPRING, 1.0 / m)
                if along_current and levenberg > 0.0 and error <= DAMPING_REACH:
                    _damp(system.graph, scratch.factors.storage, scratch.factors.floor, taken, levenberg)
                if split is None:
                    solved = factor_and_solve(system.graph, scratch.factors, mu)
                else:
                    solved = _split_factor_and_solve(system.graph, scratch.factors, mu)
                factored = solved
                own = True
                scratch.released[RELEASED_MAX, 1] = 0      # (`_solve_kept`'s columns: other factors)
                _copy(factored_taken, taken)
                stats[6] += 1.0
                if along_current:   # a chord along the current rows keeps the taken ones (module docstring)
                    stats[8] += 1.0
                    for j in range(J):
                        for s in range(ROWS_PER_JOINT):
                            if taken[j, s]:
                                for side in range(2):
                                    for i in range(6):
                                        scratch.factored_jacobian[j, s, side, i] = system.geometry.jacobian[j, s, side, i]
            if not solved:
                break
            if pivots == 1:
                pivots = 2
                if _retake(system, taken, total, mu, W, kick, tolerance):
                    continue
            released = _release(system.geometry, taken, total, mu, pivots == 0)
            if released == 0:
                # the inequalities settled, the contacts' active set (`_hold_step`): a body the
                # step presses into its shape held, one it would lift off let go, and solved again
                if _hold_step(model, system.holds, column, system.index, system.jacobian, scratch.factored_jacobian,
                              geometry.jacobian, taken, along_current, chord, total, mu, kick) == 0:
                    break
                stats[11] += 1.0
                factored = False    # (another matrix: `_weigh` weighs the bodies held or let go)
                continue
            stats[9] += released
            pivots = max(pivots, 1)
        if solved:      # an inequality's impulse so far may fall to 0, never below: past that it lets go
            if let_go:
                stats[10] += _let_go_around(system.graph, kept, system.geometry.inequality, taken, total, mu,
                                            trial_total, split)
            else:
                stats[10] += _let_go(system.graph, kept, system.geometry.inequality, taken, total, mu, trial_total,
                                     split)
            for j in range(J):
                for s in range(ROWS_PER_JOINT):
                    if taken[j, s] and system.geometry.inequality[j, s] and total[j, s] + mu[j, s] < 0.0:
                        mu[j, s] = -total[j, s]
        kick[:] = 0.0
        if solved:
            for j in range(J):
                for s in range(ROWS_PER_JOINT):
                    if not taken[j, s]:
                        continue
                    Jd = _direction(system.jacobian, scratch.factored_jacobian, geometry.jacobian, along_current, chord, j, s)
                    for side in range(2):
                        c = system.index[system.model.body[j, side]]
                        if c >= 0:
                            for i in range(6):
                                kick[c, i] += Jd[side, i] * mu[j, s]
            for c in range(n):      # (a held body's reaction taken with it: `Holds`)
                b = system.column[c]
                if system.holds.state[b] == HELD:
                    lin = held(system.holds, b, (kick[c, 0], kick[c, 1], kick[c, 2]))
                    kick[c, 0], kick[c, 1], kick[c, 2] = lin[0], lin[1], lin[2]
            solved = _finite(kick)
        # Newton's step (along J₀ or the current rows) is a descent direction of Σ g²: halved until
        # it lowers it (a full step may raise max |g| on the way to convergence)
        descent = False
        if solved:
            fraction, tries = 1.0, LINE_SEARCH
            while True:
                for c in range(n):
                    m = system.inverse_mass[system.column[c]]
                    for i in range(3):
                        trial_x[c, i] = x[c, i] + m * kick[c, i]
                for c in range(n):
                    for i in range(6):
                        trial_A[c, i] = A[c, i] + kick[c, i]
                # (a slot the solve did not take has μ = 0: `factor_and_solve`; `taken` is the trial's now)
                for j in range(J):
                    trial_lam[j] = lam[j] + fraction * mu[j, SPRING]
                    for s in range(ROWS_PER_JOINT):
                        trial_total[j, s] = total[j, s] + fraction * mu[j, s]
                K, trial, trial_merit = _evaluate(model, geometry, terms, column, start_rotation, trial_x, trial_A[:, 3:],
                                                  momentum, h, work_c, work_R, inertia, R, Y, taken, trial_lam,
                                                  trial_total)
                if trial_merit < merit:
                    descent = True
                    break
                if fraction == 1.0 and trial_merit > CROSSED * merit:
                    tries = LINE_SEARCH_CROSSED
                tries -= 1
                if tries == 0:
                    break
                kick *= 0.5
                fraction *= 0.5
        if along_current and not chord:
            # the damping follows the line search: a full step lets the model be trusted further (ν
            # falls eightfold, to none below 8 DAMPING_START), a cut one, by `fraction`, shortens the next
            if descent and fraction == 1.0:
                levenberg = 0.0 if levenberg < 8.0 * DAMPING_START else levenberg / 8.0
            elif descent and error <= DAMPING_REACH:
                levenberg = max(levenberg, DAMPING_START) * 2.0 / fraction
        if descent:
            _copy(x, trial_x)
            _copy(A, trial_A)
            _copy(lam, trial_lam)
            _copy(total, trial_total)
            error, merit = trial, trial_merit
            continue
        K, error, merit = _evaluate(model, geometry, terms, column, start_rotation, x, A[:, 3:], momentum, h, work_c,
                                    work_R, inertia, R, Y, taken, lam, total)
        factored = False    # (factors whose step found no descent, or gave a non-finite kick)
        if chord:           # the kept factors' step: Newton's own matrix before any verdict
            continue
        if along_current:
            if levenberg < DAMPING_MAX and CURRENT_STANDING < error <= DAMPING_REACH:
                levenberg = max(levenberg, DAMPING_START) * 1e3     # (a step the model overshot past every trial)
                continue
            break       # no descent left: round-off
        along_current = True
        stats[4] = _relative_error(model, geometry, taken)
        # (within ACCEPTED_ERROR the next pass may stop as a stall that stands, never marked as having
        # left J₀: not certain to be taken again)
        if stats[4] > ACCEPTED_ERROR and _abandoned(stats, abandon):
            break
    for c in range(n):
        b = system.column[c]
        for i in range(3):
            dx[b, i] = x[c, i] - centre[b, i]
        theta = rotvec_from_matrix(matmul(load33(R, c), transpose(load33(rotation, b))))
        for i in range(3):
            dtheta[b, i] = theta[i]
        for i in range(6):
            impulse[b, i] = A[c, i]
        for i in range(6):
            stats[2] = max(stats[2], abs(A[c, i]))
    stats[7] = along_start
    _frame_work(system.model, system.frame_speed, total, 1.0 / h, work)     # (along J₀: at the start)
    return error


def project_positions(system, centre, rotation, momentum, h, iterations=NEWTON_ITERATIONS, tolerance=TOLERANCE,
                      stats=None, work=None, current=None):
    """Move the jointed bodies onto g = 0 along the start-of-step rows (module docstring).

    system: `RattleStart` (J₀, M₀⁻¹, R₀); centre (B, 3), rotation (B, 3, 3) now; momentum (B, 3) the
    world angular momentum each body drifted with (after the velocity solve's first kick); h the
    step. Translation is linear in the impulse (Δx = m⁻¹ J₀ᵀΛ); the rotation is the lie-midpoint
    drift from R₀ with the momentum plus the impulse's moment (`rotor_drift`), so a fast-turning
    link (a whip crack, the top's spin) moves as the kick says.
    Returns (dx, dθ, impulse, error): world translation and rotation vector per body (B, 3) each
    (the body's rotation becomes exp(hat dθ) R), the impulse × h that moved them, J₀ᵀ Λ (B, 6)
    [linear, angular] world (Δv = m⁻¹ J₀ᵀΛ / h, ΔL = (J₀ᵀΛ)_angular / h; a held body's, its hold's
    reaction with it: `Holds`), and the largest |g| left.
    stats, if given, a (POSITION_STATS,) array: filled with the Newton iterations taken, 1 if the projection left
    J₀ for the current rows (else 0), the largest |impulse| component, the drift's departure from
    the rows' tangent relative to the joints' levers (`_curvature_error`), the relative error it
    left J₀ with (`_relative_error`, 0 if it did not), the one the drift started from, how
    factorizations there were (an iteration that lets an inequality go factors again), how many of
    the iterations went along J₀, how many factorizations along the current rows, and how many
    inequality rows were let go (a violated row whose solve gave it μ < 0; any taken back counted too),
    how many rows with an impulse so far a Newton step let go (`_let_go`), and how many solves the
    contacts' active set took again (`_hold_step`: a body held or let go).
    work, if given, a (J,) array: each joint's moving frame's work through these impulses is added
    (`_frame_work`, along J₀: at the start). `iterations` along J₀ at most, and `current` along the
    current rows (None: CURRENT_ROWS × iterations)."""
    B = len(centre)
    dx, dtheta, impulse = np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 6))
    current = CURRENT_ROWS * iterations if current is None else current
    step = np.array([h, current, *NEVER], float)
    error = project_positions_kernel(system, np.ascontiguousarray(centre, float), np.ascontiguousarray(rotation, float),
                                     np.ascontiguousarray(momentum, float), step, iterations, tolerance,
                                     dx, dtheta, impulse, np.zeros(POSITION_STATS) if stats is None else stats,
                                     np.zeros(len(system.model.kind)) if work is None else work, system.graph.split)
    return dx, dtheta, impulse, error


@kernel(inline=True)
def _weigh_row(body, inverse_mass, inverse_inertia, holds, jac, j, W_row):
    """W_row (2, 6) = M⁻¹ Jᵀ of one row `jac` (2, 6) of joint j (`body` (J, 2); zero on a static side),
    its linear part less what a body's `holds` take."""
    for side in range(2):
        b = body[j, side]
        if b < 0:
            W_row[side, :] = 0.0
            continue
        ang = matvec(load33(inverse_inertia, b), (jac[side, 3], jac[side, 4], jac[side, 5]))
        m = inverse_mass[b]
        lin = held(holds, b, (m * jac[side, 0], m * jac[side, 1], m * jac[side, 2]))
        for i in range(3):
            W_row[side, i] = lin[i]
            W_row[side, 3 + i] = ang[i]


@kernel(refcounts=False)
def _flip_first(model, geometry, scratch):
    """Murty's least-index step (`project_velocities_kernel`): the first inequality at its bound
    (`scratch.bound`) that breaks complementarity, taken with μ < 0 or left out while its J v₁ =
    J v + J Δv < −ACTIVE_SET_SLACK (Δv = M⁻¹ Jᵀ μ of the rows taken), changes sides in
    `scratch.taken`; returns whether one did."""
    taken, bound, mu, W, change = scratch.taken, scratch.bound, scratch.mu, scratch.W, scratch.change
    moved = False       # (Δv made once, where a row left out is first judged)
    for j in range(len(model.kind)):
        for s in range(ROWS_PER_JOINT):
            if not bound[j, s]:
                continue
            if taken[j, s]:
                if mu[j, s] < 0.0:
                    taken[j, s] = False
                    return True
                continue
            if not moved:
                change[:] = 0.0
                for k in range(len(model.kind)):
                    for r in range(ROWS_PER_JOINT):
                        if taken[k, r]:
                            for side in range(2):
                                b = model.body[k, side]
                                if b >= 0:
                                    for i in range(6):
                                        change[b, i] += W[k, r, side, i] * mu[k, r]
                moved = True
            w = -scratch.rhs[j, s]
            for side in range(2):
                b = model.body[j, side]
                if b >= 0:
                    for i in range(6):
                        w += geometry.jacobian[j, s, side, i] * change[b, i]
            if w < -ACTIVE_SET_SLACK:
                taken[j, s] = True
                return True
    return False


@kernel(refcounts=False)
def _velocity_hold_step(model, holds, taken, mu, jacobian, change):
    """`_hold_step` of the velocity projection, by the impulse Σ Jᵀ μ of the taken rows (`change`
    (B, 6) scratch). Returns whether a body was held or let go."""
    change[:] = 0.0
    for j in range(len(model.kind)):
        for s in range(ROWS_PER_JOINT):
            if taken[j, s]:
                for side in range(2):
                    b = model.body[j, side]
                    if b >= 0 and holds.count[b] > 0:
                        for i in range(3):
                            change[b, i] += jacobian[j, s, side, i] * mu[j, s]
    changed = 0
    for b in range(len(holds.count)):
        if holds.count[b] > 0:
            changed += _hold_turns(holds, b, (change[b, 0], change[b, 1], change[b, 2]))
    return changed > 0


@kernel(refcounts=False)
def project_velocities_kernel(model, index, graph, geometry, scratch, centre, rotation, velocity, inverse_mass,
                              inverse_inertia, holds, dv, terms, step, work, carried, split):
    """`project_velocities` compiled, in `scratch` (`JointBodies.velocity_scratch`), for a step of
    h = step[STEP_H] (`project_positions_kernel`'s `step`: the caller's numbers); adds each joint's
    moving frame's work through its impulses to `work` (J,); carried (1,) is set to 1 where the
    scratch's factors are left as this projection's J M⁻¹ Jᵀ (`JointBodies.carried`), else 0. `split`
    as `project_positions_kernel`'s."""
    dv[:] = 0.0
    h = step[STEP_H]
    joint_geometry(model, centre, rotation, geometry, 0, len(model.kind))
    J = len(model.kind)
    carried[0] = 0.0        # (the factors are rewritten below, or left as they are with no row)
    taken, bound, mu, rhs, W = scratch.taken, scratch.bound, scratch.mu, scratch.rhs, scratch.W
    change = scratch.change
    # the contacts' active set (`_hold_step`) starts with every body that rests on a shape held: a
    # robot standing on its feet, pressing each into the floor, factors once, not twice (its start
    # a function of this sub-step's contacts alone, so that a sub-step taken again is the same bits)
    for b in range(len(holds.state)):
        holds.state[b] = HELD if holds.count[b] > 0 else FREE
    taken[:] = False
    bound[:] = False
    mu[:] = 0.0         # (W: written for each row taken or at its bound before it is read, `_weigh_row`)
    K = 0
    # the joint terms' last kick at q₁ (module docstring, "Joint terms"): (h/2) τ(q₁) along J₁, and
    # without an armature the damper's −(D/2)(q₁ − q₀); the rows then see the kicked velocity
    exact, armature = terms.exact, terms.armature
    if np.any(exact):
        _copy(scratch.velocity, velocity)
        velocity = scratch.velocity
    for j in range(J):
        if not exact[j]:
            continue
        travel = _travel(model.kind[j], model.member[j], model.axis_count[j, 0], geometry.coordinate[j], terms.coordinate[j])
        kicked = 0.5 * h * (terms.force[j] - terms.stiffness[j] * geometry.coordinate[j])
        if terms.armature[j] == 0.0:
            kicked -= 0.5 * terms.damping[j] * travel
        _weigh_row(model.body, inverse_mass, inverse_inertia, holds, geometry.jacobian[j, SPRING], j, W[j, SPRING])
        if model.framed[j]:
            work[j] -= kicked * geometry.frame_speed[j, SPRING]
        for side in range(2):
            b = model.body[j, side]
            if b >= 0:
                for i in range(6):
                    dv[b, i] += W[j, SPRING, side, i] * kicked
                    velocity[b, i] += W[j, SPRING, side, i] * kicked
    for j in range(J):
        if exact[j] and armature[j] > 0.0:
            # the rotor row: J₁ v₁ = q̇₁ = (q₁ − q₀)(1/h − D/2A) − μ/A, the rotor's last kick
            v = geometry.frame_speed[j, SPRING] if model.framed[j] else 0.0
            for side in range(2):
                b = model.body[j, side]
                if b >= 0:
                    for i in range(6):
                        v += geometry.jacobian[j, SPRING, side, i] * velocity[b, i]
            travel = _travel(model.kind[j], model.member[j], model.axis_count[j, 0], geometry.coordinate[j], terms.coordinate[j])
            taken[j, SPRING] = True
            mu[j, SPRING] = travel * (1.0 / h - 0.5 * terms.damping[j] / terms.armature[j]) - v
            K += 1
        for s in range(ROWS_PER_JOINT):
            if not geometry.active[j, s] or geometry.motor[j, s]:
                continue
            jac = geometry.jacobian[j, s]
            v = geometry.frame_speed[j, s] if model.framed[j] else 0.0     # a moving frame's share of J v
            for side in range(2):
                b = model.body[j, side]
                if b >= 0:
                    for i in range(6):
                        v += jac[side, i] * velocity[b, i]
            if geometry.inequality[j, s] and geometry.C[j, s] > 1e-9:
                continue
            # an inequality at its bound is in the active set where it approaches (below); a limit that
            # started the step violated (soft: `Joints.limit_slack`) holds its velocity at 0 either
            # way, so that its easing in leaves no velocity
            bound[j, s] = geometry.inequality[j, s] and not (s == LIMIT and model.limit_slack[j] > 0.0)
            mu[j, s] = -v
            _weigh_row(model.body, inverse_mass, inverse_inertia, holds, jac, j, W[j, s])
            if bound[j, s] and v >= 0.0:
                continue
            taken[j, s] = True
            K += 1
    if K == 0:
        return
    # the inequalities at their bound as a linear complementarity problem, μ ≥ 0, J v₁ ≥ 0, μ·J v₁ = 0
    # (a limit or a rope never holds its bound shut), solved by Murty's least-index principal
    # pivoting (K. G. Murty, "Note on a Bard-type scheme for solving the complementarity problem",
    # Opsearch 11, 1974): the first row that breaks it, taken with μ < 0 or left out while
    # J v₁ < 0, changes sides and the rows are solved again. Finite for J M⁻¹ Jᵀ positive definite,
    # but up to 2ⁿ − 1 changes for n rows on contrived matrices (and round-off may cycle), so bounded
    # here at ACTIVE_SET_FLIPS changes a row at its bound, past which the last solve stands. The
    # approaching rows start it: most solves end at once.
    _copy(rhs, mu)
    flips, most = 0, 0
    for j in range(J):
        for s in range(ROWS_PER_JOINT):
            most += ACTIVE_SET_FLIPS if bound[j, s] else 0
            if not taken[j, s]:
                mu[j, s] = 0.0
    while True:
        if split is None:
            assemble(graph, geometry.jacobian, W, taken, scratch.factors.storage, scratch.factors.floor)
        else:
            _split_assemble(graph, geometry.jacobian, W, taken, scratch.factors.storage, scratch.factors.floor)
        for j in range(J):
            if taken[j, SPRING]:
                _add_diagonal(graph, scratch.factors.storage, j, SPRING, 1.0 / terms.armature[j])
        if split is None:
            solved = factor_and_solve(graph, scratch.factors, mu)
        else:
            solved = _split_factor_and_solve(graph, scratch.factors, mu)
        if not solved:
            return
        if flips == most or not _flip_first(model, geometry, scratch):
            # the contacts' active set (`_hold_step`): a body the joints press into a shape it
            # rests on held, one they would lift off it let go; its rows weighed again, and solved
            if not _velocity_hold_step(model, holds, taken, mu, geometry.jacobian, change):
                break
            for j in range(J):
                for s in range(ROWS_PER_JOINT):
                    if taken[j, s] or bound[j, s]:
                        _weigh_row(model.body, inverse_mass, inverse_inertia, holds, geometry.jacobian[j, s], j, W[j, s])
        else:
            flips += 1
        for j in range(J):
            for s in range(ROWS_PER_JOINT):
                mu[j, s] = rhs[j, s] if taken[j, s] else 0.0
    # (a rotor's row weighs its armature here, 1/A, and its damper too in the positions' 1/(A + h D/2):
    # its factors are left to this projection; measured, a chord through them missed an armature's
    # spin by 8e-11 of 0.2 rad/s)
    rotor = False
    for j in range(J):
        rotor = rotor or taken[j, SPRING]
    for b in range(len(holds.state)):      # (nor a held body's: the next projection starts with none held)
        rotor = rotor or holds.state[b] == HELD
    carried[0] = 0.0 if rotor else 1.0
    _frame_work(model, geometry.frame_speed, mu, 1.0, work)     # (an untaken slot's μ is 0: `factor_and_solve`)
    for j in range(J):
        for s in range(ROWS_PER_JOINT):
            if not taken[j, s]:
                continue
            for side in range(2):
                b = model.body[j, side]
                if b >= 0:
                    for i in range(6):
                        dv[b, i] += W[j, s, side, i] * mu[j, s]


def project_velocities(joints, bodies, centre, rotation, velocity, inverse_mass, inverse_inertia, limit_slack=None,
                       terms=None, h=1.0, work=None, holds=None):
    """Δv (B, 6) [v, ω] that makes J(q) v = 0 for the joints' rows at the poses q (centre (B, 3),
    rotation (B, 3, 3)), M-orthogonally: Δv = M⁻¹ Jᵀ μ with (J M⁻¹ Jᵀ) μ = −J v, solved over the
    joint graph (`physics.constraints.joint_graph`);
    inverse_mass (B,), inverse_inertia (B, 3, 3) world at q. An inequality row takes part where it
    is at its bound (|C| ≤ 1e-9 or violated), as a linear complementarity problem (μ ≥ 0, J v₁ ≥ 0,
    μ J v₁ = 0; the module docstring): taken where its velocity would violate it further, let go
    where the solve gives it μ < 0, taken again where the others' solve makes it approach;
    a limit easing in (`limit_slack` > 0: `physics.constraints.joints.Joints.limit_slack`) at its bound either way.
    `terms` the joints' `JointTerms` of this step h (none taken without): their last kick, and an
    armature's row (module docstring, "Joint terms"); `work` (J,), if given, gets each joint's moving
    frame's work through these impulses; `holds` (`Holds`), the contacts held (none without)."""
    B = len(centre)
    dv = np.zeros((B, 6))
    if len(joints):
        c = lambda a: np.ascontiguousarray(a, float)
        project_velocities_kernel(joints.model(limit_slack), bodies.index, bodies.graph, bodies.velocity_rows,
                                  bodies.velocity_scratch, c(centre), c(rotation), c(velocity), c(inverse_mass), c(inverse_inertia),
                                  no_holds(B) if holds is None else holds, dv,
                                  no_terms(len(joints)) if terms is None else terms, np.array([float(h)]),
                                  np.zeros(len(joints)) if work is None else work, bodies.carried, bodies.graph.split)
    return dv
