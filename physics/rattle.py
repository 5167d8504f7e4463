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
joint rows J (`physics.constraints.Joints.rows`, each row one scalar of g, world frame, velocity
coordinates [v, ω] per body, angular positions moved on the group R ← exp(hat Δθ) R):

- `project_positions`: Δq = M₀⁻¹ J₀ᵀ Λ along the start-of-step rows J₀ (RATTLE's first kick, SHAKE's
  directions), Λ by Newton on g(q_free + Δq) = 0 with the Jacobian of the current pose,
  [J(q_k) M₀⁻¹ J₀ᵀ] δΛ = −g(q_k), solved directly (a chain of 20 ball joints is 60 rows: a dense
  60 × 60 solve). The caller adds Δv = Δq / h, so that the velocity is the chord's, (q₁ − q₀)/h.
  SHAKE's own iteration keeps the start-of-step matrix J₀ M₀⁻¹ J₀ᵀ and, in a whip crack where the
  links turn far within a step, stops converging; the current Jacobian converges quadratically.
  Where even that fails (J(q_k) M₀⁻¹ J₀ᵀ singular: a link turned by ~90° in one step) the rest
  of the error is projected along the current rows instead (Gauss–Newton, J_k M₀⁻¹ J_kᵀ is
  symmetric positive definite), which always converges.
- `project_velocities`: μ from [J₁ M₁⁻¹ J₁ᵀ] μ = −J₁ v at the end pose, Δv = M₁⁻¹ J₁ᵀ μ (RATTLE's
  last kick; the M-orthogonal projection onto the constraint's tangent).

Rows taken: the equalities (ball, hinge, slider, fixed, distance), and an inequality (rope, joint
limit) where it is violated; motor rows are velocity targets, not constraints, and stay with the
velocity solver (`physics.gauss_seidel`). Redundant rows (a closed loop of joints) make the
matrices singular: a relative 1e-12 on the diagonal picks the least-impulse solution.

Conventions: B solver bodies, world frame, velocities (B, 6) [v, ω]; static sides (−1) drop out.
"""
import numpy as np

from physics.constraints import ROPE, ROWS_PER_JOINT
from physics.rotation import cayley, hat, rotvec_from_matrix

NEWTON_ITERATIONS = 10     # at most; the chain's whip crack needs 3–4, a quiet step 1–2
TOLERANCE = 1e-12           # m (rad): the largest row error left after the projection
REGULARIZATION = 1e-12      # relative, on the diagonal of the small systems (redundant rows)
_LIMIT, _MOTOR = ROWS_PER_JOINT - 2, ROWS_PER_JOINT - 1


def inequality_rows(joints, slots):
    """(K,) bool: which of the rows at `slots` (j · ROWS_PER_JOINT + slot) are inequalities
    (a rope's row, a joint limit), and (K,) bool which are motors."""
    joint, slot = slots // ROWS_PER_JOINT, slots % ROWS_PER_JOINT
    return (slot == _LIMIT) | ((slot == 0) & (joints.kind[joint] == ROPE)), slot == _MOTOR


def _dense(rows, index, n):
    """J as (K, n, 6) over the n jointed bodies (`index`: solver body → column, −1 static)."""
    K = len(rows)
    J = np.zeros((K, n, 6))
    for side in range(2):
        column = index[rows.body[:, side]]
        moving = (rows.body[:, side] >= 0) & (column >= 0)
        J[np.flatnonzero(moving), column[moving]] += rows.jacobian[moving, side]
    return J


def _inverse_mass_times(J, inverse_mass, inverse_inertia):
    """M⁻¹ Jᵀ as (K, n, 6): m⁻¹ J_lin and I⁻¹ J_ang per body (I⁻¹ (n, 3, 3) world)."""
    W = np.empty_like(J)
    W[..., :3] = inverse_mass[None, :, None] * J[..., :3]
    W[..., 3:] = np.einsum("nij,knj->kni", inverse_inertia, J[..., 3:])
    return W


def _solve(A, b):
    """A x = b for a small dense system, with REGULARIZATION × the largest diagonal added."""
    scale = np.abs(np.diag(A)).max(initial=0.0)
    if scale == 0.0:
        return np.zeros_like(b)
    return np.linalg.solve(A + REGULARIZATION * scale * np.eye(len(b)), b)


def rotor_drift(inertia, momentum, h, iterations=8):
    """The lie-midpoint's rotation over a step, world frame (`physics.integrators`): y with
    I y + (h/2) y × (I y) = L (the implicit midpoint of the free rotor, I (n, 3, 3) world at the start
    of the step, L (n, 3) the world angular momentum of the drift) by Newton with the Jacobian
    I + (h/2)(hat(y) I − hat(I y)); the body turns by cay(h y) (left, world). A fixed iteration
    count (quadratic convergence: round-off by the fourth for h|y| < 1) keeps it deterministic."""
    y = np.linalg.solve(inertia, momentum[..., None])[..., 0]
    for _ in range(iterations):
        Iy = np.einsum("nij,nj->ni", inertia, y)
        F = Iy + 0.5 * h * np.cross(y, Iy) - momentum
        jacobian = inertia + 0.5 * h * (hat(y) @ inertia - hat(Iy))
        y = y - np.linalg.solve(jacobian, F[..., None])[..., 0]
    return y


def drift_derivative(inertia, y, h):
    """∂θ/∂A (n, 3, 3): how the drift's world rotation cay(h y) R₀ turns (left, world) per change of
    the momentum × h, A = h L (`rotor_drift`): δ(h y) = [I + (h/2)(hat(y) I − hat(I y))]⁻¹ δA, and
    the Cayley map's right-trivialized differential 2 (2 δa + a × δa) / (4 + |a|²) at a = h y."""
    a = h * y
    jacobian = inertia + 0.5 * h * (hat(y) @ inertia - hat(np.einsum("nij,nj->ni", inertia, y)))
    cay = 2.0 * (2.0 * np.eye(3) + hat(a)) / (4.0 + np.einsum("ni,ni->n", a, a))[:, None, None]
    return cay @ np.linalg.inv(jacobian)


class JointBodies:
    """The solver bodies the joints move (n of B) and their columns in the dense systems."""

    def __init__(self, joints, bodies):
        used = joints.body[joints.body >= 0]
        self.body = np.unique(used).astype(np.int64)                 # (n,) solver bodies, sorted
        self.index = np.full(bodies + 1, -1, np.int64)              # solver body → column; [−1] = static
        self.index[self.body] = np.arange(len(self.body))

    def __len__(self):
        return len(self.body)


def project_positions(joints, bodies, start, centre, rotation, inverse_mass, inverse_inertia, start_rotation,
                      momentum, h, iterations=NEWTON_ITERATIONS, tolerance=TOLERANCE):
    """Move the jointed bodies onto g = 0 along the start-of-step rows (module docstring).

    joints: `physics.constraints.Joints`; bodies: `JointBodies`; start: (rows, slots) of
    `Joints.rows` at the start-of-step poses; centre (B, 3), rotation (B, 3, 3) now; inverse_mass
    (B,), inverse_inertia (B, 3, 3) world, at the start of the step (M₀⁻¹); start_rotation (B, 3, 3)
    R₀; momentum (B, 3) the world angular momentum each body drifted with (after the velocity
    solve's first kick); h the step. Translation is linear in the impulse (Δx = m⁻¹ J₀ᵀΛ); the
    rotation is the lie-midpoint drift from R₀ with the momentum plus the impulse's moment
    (`rotor_drift`), so a fast-turning link (a whip crack, the top's spin) moves as the kick says.
    Returns (dx, dθ, impulse, error): world translation and rotation vector per body (B, 3) each
    (the body's rotation becomes exp(hat dθ) R), the impulse × h that moved them, J₀ᵀ Λ (B, 6)
    [linear, angular] world (Δv = m⁻¹ J₀ᵀΛ / h, ΔL = (J₀ᵀΛ)_angular / h), and the largest |g| left."""
    B = len(centre)
    dx, dtheta, impulse = np.zeros((B, 3)), np.zeros((B, 3)), np.zeros((B, 6))
    n = len(bodies)
    start_rows, start_slots = start
    inequality, motor = inequality_rows(joints, start_slots)
    columns = bodies.body
    m_inv = inverse_mass[columns]
    I_inv = inverse_inertia[columns]
    inertia = np.linalg.inv(I_inv)
    R0, L = start_rotation[columns], momentum[columns]
    J0 = _dense(start_rows, bodies.index, n)
    full_x, full_R = centre.copy(), rotation.copy()

    def evaluate(x, angular):
        y = rotor_drift(inertia, L + angular / h, h)
        R = cayley(h * y) @ R0
        full_x[columns], full_R[columns] = x, R
        rows, _ = joints.rows(full_x, full_R, 1.0, 1.0)       # target = −C with h = β = 1
        C = -rows.target
        take = ~motor & (~inequality | (C < 0.0))
        return rows, C, take, np.abs(C[take]).max(initial=0.0), R, drift_derivative(inertia, y, h)

    x, A = centre[columns].copy(), np.zeros((n, 6))
    rows, C, take, error, R, D = evaluate(x, A[:, 3:])
    along_current = False
    for _ in range(iterations):
        if error <= tolerance:
            break
        Jk = _dense(rows, bodies.index, n)[take]
        Jd = Jk if along_current else J0[take]
        W = _inverse_mass_times(Jd, m_inv, D)
        mu = _solve(np.einsum("kni,lni->kl", Jk, W), -C[take])
        kick = np.einsum("kni,k->ni", Jd, mu)
        move = m_inv[:, None] * kick[:, :3]
        descent = bool(np.all(np.isfinite(kick)))
        if descent:
            # a step along J₀ that does not lower the error gives Newton along J₀ up; one along the
            # current rows is halved until it does (it is a descent direction of |g|²)
            for _ in range(8):
                trial = evaluate(x + move, A[:, 3:] + kick[:, 3:])
                if trial[3] < error:
                    break
                if not along_current:
                    descent = False
                    break
                kick, move = 0.5 * kick, 0.5 * move
            else:
                descent = False
        if not descent:
            if along_current:
                break       # no descent left: round-off
            along_current = True
            continue
        x, A = x + move, A + kick
        rows, C, take, error, R, D = trial
    dx[columns] = x - centre[columns]
    dtheta[columns] = rotvec_from_matrix(R @ np.swapaxes(rotation[columns], -1, -2))
    impulse[columns] = A
    return dx, dtheta, impulse, error


def project_velocities(joints, bodies, centre, rotation, velocity, inverse_mass, inverse_inertia):
    """Δv (B, 6) [v, ω] that makes J(q) v = 0 for the joints' rows at the poses q (centre (B, 3),
    rotation (B, 3, 3)), M-orthogonally: Δv = M⁻¹ Jᵀ μ with (J M⁻¹ Jᵀ) μ = −J v; inverse_mass (B,),
    inverse_inertia (B, 3, 3) world at q. An inequality row takes part where it is at its bound
    (|C| ≤ 1e-9 or violated) and its velocity would violate it further (J v < 0)."""
    B = len(centre)
    dv = np.zeros((B, 6))
    n = len(bodies)
    rows, slots = joints.rows(centre, rotation, 1.0, 1.0)
    inequality, motor = inequality_rows(joints, slots)
    columns = bodies.body
    J = _dense(rows, bodies.index, n)
    Jv = np.einsum("kni,ni->k", J, velocity[columns])
    C = -rows.target
    take = ~motor & (~inequality | ((C <= 1e-9) & (Jv < 0.0)))
    if not take.any():
        return dv
    J = J[take]
    W = _inverse_mass_times(J, inverse_mass[columns], inverse_inertia[columns])
    mu = _solve(np.einsum("kni,lni->kl", J, W), -Jv[take])
    dv[columns] = np.einsum("kni,k->ni", W, mu)
    return dv
