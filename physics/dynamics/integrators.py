"""Integrators for dynamic rigid bodies moving relative to a (possibly moving, turning) parent.

Sources (docs/references.md): "From Torque to Angular Acceleration… Correctly.", "The Dynamics of a
Transform Hierarchy" (force to local acceleration), "Numerical Integration for Rotational
Dynamics", "The Mathematics of Havok's Solver" Part II §1-2.

State of body i (docs/architecture.md, "Integrators interface"): local translation `T1`, rotation
`R1`, velocity `v1 = dT1/dt` (parent frame), and `omega_body = R3^T omega3`, its angular velocity
relative to the world in body axes (`R3 = R2 R1` its world rotation). The parent's world motion
over the step (`R2, S2, a2, omega2, alpha2`, the `Frame`) is extrapolated with constant `a2` and
`alpha2`; `R2(t) = exp(hat(Omega(t))) R2` with the Magnus vector Omega1 + Omega2 (4th order). It is
prescribed motion: physics.pipeline.simulation steps a body under a dynamic parent in the world frame instead
(the parent's motion over the step is not known before it is integrated).

Rotation. Euler's equations act on omega_body and the world rotation, whatever the parent:

    I d(omega_body)/dt = R3^T tau_world - g omega_body x (I omega_body),    dR3/dt = R3 hat(omega_body)

and the local rotation is read back as `R1 = R2(h)^T R3`. This is the article's angular global-to-local
conversion `alpha1 = R2^T (alpha3 - alpha2 - omega2 x omega3)` integrated exactly (no inertial
torques to approximate), and it lets the conservative integrators conserve the world angular
momentum of a free body in any frame.

Translation. The global-to-local conversion of "The Dynamics of a Transform Hierarchy", with
J2 = R2 S2 and tildes for parent-frame vectors (`x~ = R2^T x`):

    a1 = R2^T (F/m - a2) / S2 - alpha~2 x T1 - omega~2 x (omega~2 x T1) - 2 omega~2 x v1
         (applied, frame,        Euler,          centrifugal,               Coriolis)

affine in (T1, v1): `a1 = c(t) + A(t) T1 + C(t) v1`, so the implicit schemes solve one 3x3
linear system, no Newton iteration.

Integrators (Havok's solver §2.1; orientation always moved on the group, by exp or Cayley, never by adding):
- explicit-euler:      v' = v + h f(x, v);  x' = x + h v;  R3' = R3 exp(h w)
- semi-implicit-euler: v' = v + h f(x, v);  x' = x + h v'; R3' = R3 exp(h w')    (symplectic Euler)
                       Both Euler schemes step translation in the non-rotating frame moving with
                       the parent's origin (`_translate_euler`): explicit Coriolis is unstable.
- implicit-euler:      v' = v + h f(x', v'); x' = x + h v'; R3' = R3 exp(h w')   (Newton; the torque's
                       dependence on R3' is iterated as a fixed point around the Newton solve)
- implicit-midpoint:   v' = v + h f(x_m, v_m) with x_m, v_m the averages; R3' = R3 exp(h w_m).
                       (the article writes an explicit midpoint predictor under this name; we solve the
                       true implicit midpoint rule.) Conserves energy and |L| of a free body, not
                       the direction of the world L (the exp breaks it: see lie-midpoint).
- rk4:                 classical Runge-Kutta on (x, v) and on (q, w) with q' = q (0, w)/2, q
                       normalized at the end: a 4th-order reference.
- lie-midpoint:        kick-drift-kick: L = I w + (h/2) R3^T tau; implicit midpoint of the free
                       rotor with the Cayley map, I x + (h/2) x × I x = L, L <- 2 I x - L,
                       R3 <- R3 cay(h x); L <- L + (h/2) R3^T tau. Since L <- cay(-h x) L exactly,
                       R3 L (the world L) is unchanged by the drift and changes by exactly h tau;
                       the energy (L·I^-1 L / 2) and |L| are quadratic invariants of the midpoint
                       rule. Symmetric, so 2nd order. Translation by the implicit midpoint rule.
- lie-midpoint-4:      the triple jump (Yoshida / Suzuki) of lie-midpoint: sub-steps g1 h, g2 h,
                       g1 h, g1 = 1/(2 - 2^(1/3)), g2 = 1 - 2 g1: 4th order, same conservation.

Gyroscopic modes (physics.model.rigid_body): `off` g = 0; `explicit` g = 1; `implicit`: the backward-Euler
gyroscopic step on w first, then the integrator with g = 0. For lie-midpoint(-4) the term is
inherent: `explicit` and `implicit` both mean the conservative solve, `off` drops it (x = I^-1 L).
"""
import concurrent.futures
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from physics.core.compiled import bind, kernel

from physics.core import choices, threads
from physics.core.choices import GYROSCOPIC_IMPLICIT, GYROSCOPIC_OFF
from physics.dynamics.kinematics import check_batch
from physics.model.rigid_body import gyroscopic_newton
from physics.math.rotation_kernels import (add, axpy, cross, dot, exp_so3, hadamard, is_zero, load3, load33, magnus,
                                      matmul, matmul_tn, matrix_from_quaternion, matvec, matvec_t, mul,
                                      quaternion_multiply, quaternion_from_matrix, solve3, store3, store33, sub)

INTEGRATORS = choices.INTEGRATOR.meanings     # name -> what it is (physics.core.choices)

_G1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
_G2 = 1.0 - 2.0 * _G1
_TRIPLE_JUMP = (_G1, _G2, _G1)
TRIPLE_JUMP = _TRIPLE_JUMP     # public: the Simulation composes RATTLE's constrained step with it
_ONE_STEP = (1.0, 0.0, 0.0)    # lie-midpoint's sub-steps for _step_lie: the first of three


@dataclass
class Frame:
    """The world motion of each body's parent at the start of the step (world frame, batch B)."""

    rotation: np.ndarray              # (B, 3, 3) R2
    scale: np.ndarray                 # (B,) S2 > 0
    acceleration: np.ndarray          # (B, 3) a2
    angular_velocity: np.ndarray      # (B, 3) omega2
    angular_acceleration: np.ndarray  # (B, 3) alpha2

    @classmethod
    def world(cls, batch):
        """The identity frame: every parent is the world."""
        return cls(np.broadcast_to(np.eye(3), (batch, 3, 3)).copy(), np.ones(batch), np.zeros((batch, 3)),
                   np.zeros((batch, 3)), np.zeros((batch, 3)))

    def checked(self, batch):
        """The same frame as C-contiguous float64 arrays; ValueError naming a bad field."""
        return Frame(*_frame_arrays(self, batch))


@kernel
def _all_positive(a):
    """Whether every entry of a C-contiguous array is > 0 (NaN is not). One compiled pass: a tenth
    of numpy's min() on a scene's small batches; counting, with no early exit, vectorizes, so it is
    also as fast as min() on 10^4 bodies."""
    flat = a.ravel()
    bad = 0
    for i in range(flat.size):
        bad += not flat[i] > 0.0
    return bad == 0


_FRAME_FIELDS = (("rotation", (3, 3)), ("scale", ()), ("acceleration", (3,)), ("angular_velocity", (3,)),
                 ("angular_acceleration", (3,)))


def _frame_arrays(frame, batch):
    """The frame's five arrays as C-contiguous float64 of batch B (converted only if they are not);
    ValueError naming a bad field."""
    arrays = []
    for name, tail in _FRAME_FIELDS:
        array = getattr(frame, name)
        if not (isinstance(array, np.ndarray) and array.dtype == np.float64 and array.flags.c_contiguous):
            array = np.ascontiguousarray(array, dtype=float)
        if array.shape != (batch, *tail):
            raise ValueError(f"frame.{name}: got shape {array.shape}; expected {(batch, *tail)}")
        arrays.append(array)
    if not _all_positive(arrays[1]):
        raise ValueError(f"frame.scale: got {arrays[1][~(arrays[1] > 0)][:3]}; expected > 0")
    return tuple(arrays)


# ---------------------------------------------------------------------------------------------
# per-body kernels: one loop over bodies on scalars (physics.math.rotation_kernels): vectors are
# 3-tuples, matrices tuples of rows, so the loop keeps them in registers and allocates nothing

_ZERO = (0.0, 0.0, 0.0)
_EYE = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


@kernel(inline=True)
def _frame_rotation(frame, t):
    """R2(t) = exp(hat(Omega1 + Omega2)) R2 for constant alpha2 (the Magnus vector of physics.dynamics.kinematics)."""
    r2, _, _, omega2, alpha2 = frame
    return matmul(exp_so3(magnus(omega2, alpha2, t, 2)), r2)


@kernel(inline=True)
def _coefficients(moving, frame, f_over_m, t):
    """(c, omega~, alpha~) at time t into the step, parent frame, such that
    a1 = c - alpha~ × T1 - omega~ × (omega~ × T1) - 2 omega~ × v1 (module docstring)."""
    if not moving:
        return f_over_m, _ZERO, _ZERO
    _, s2, a2, omega2, alpha2 = frame
    r2t = _frame_rotation(frame, t)
    return (mul(1.0 / s2, matvec_t(r2t, sub(f_over_m, a2))), matvec_t(r2t, axpy(t, alpha2, omega2)),
            matvec_t(r2t, alpha2))


@kernel(inline=True)
def _position_term(coefficients, x):
    """c + A x = c - alpha~ × x - omega~ × (omega~ × x)."""
    c, om, al = coefficients
    return sub(c, add(cross(al, x), cross(om, cross(om, x))))


@kernel(inline=True)
def _acceleration(moving, coefficients, x, v):
    """a1 = c + A x + C v, C v = -2 omega~ × v."""
    if not moving:
        return coefficients[0]
    return axpy(-2.0, cross(coefficients[1], v), _position_term(coefficients, x))


@kernel(inline=True)
def _translate_euler(semi_implicit, moving, frame, f_over_m, x, v, h):
    """(x', v') by (semi-implicit) Euler in the non-rotating frame that moves with the parent's
    origin: y = R2 x, u = R2 (v + omega~ × x), where y'' = (F/m - a2) / S2 has no Coriolis,
    centrifugal or Euler term; back to the parent frame with R2(h) and omega~(h).

    Stepping a1 = c + A x + C v directly is unstable for explicit C = -2 omega~ ×: |1 + h C| =
    sqrt(1 + 4 h² |omega~|²) > 1, so a free body on a turning parent gained energy exponentially
    (the tank's ball, x10 per 17 s at 0.8 rad/s; tests/test_rolling.py). The frame's rotation is
    the prescribed Magnus extrapolation, so this is exact for the inertial terms."""
    if not moving:
        u = axpy(h, f_over_m, v)
        return axpy(h, u if semi_implicit else v, x), u
    r2, s2, a2, omega2, alpha2 = frame
    y, u = matvec(r2, x), matvec(r2, add(v, cross(matvec_t(r2, omega2), x)))
    u_next = axpy(h / s2, sub(f_over_m, a2), u)
    y = axpy(h, u_next if semi_implicit else u, y)
    r2h = _frame_rotation(frame, h)
    x = matvec_t(r2h, y)
    return x, sub(matvec_t(r2h, u_next), cross(matvec_t(r2h, axpy(h, alpha2, omega2)), x))


@kernel(inline=True)
def _translate_implicit(moving, coefficients, x, v, h, theta):
    """(x + h u, v') with u from (1 - theta h C - theta² h² A) u = v + theta h (c + A x): theta = 1
    is implicit Euler (v' = u), theta = 1/2 the midpoint rule (v' = 2u - v)."""
    th = theta * h
    if not moving:
        u = axpy(th, coefficients[0], v)
    else:
        # 1 - th C - th² A = (1 - th² |om|²) 1 + hat(2 th om + th² al) + th² om om^T
        _, om, al = coefficients
        th2 = th * th
        d = 1.0 - th2 * dot(om, om)
        p = axpy(2.0 * th, om, mul(th2, al))
        o0, o1, o2 = mul(th2, om)
        m = ((d + o0 * om[0], -p[2] + o0 * om[1], p[1] + o0 * om[2]),
             (p[2] + o1 * om[0], d + o1 * om[1], -p[0] + o1 * om[2]),
             (-p[1] + o2 * om[0], p[0] + o2 * om[1], d + o2 * om[2]))
        u = solve3(m, axpy(th, _position_term(coefficients, x), v))
    return axpy(h, u, x), (u if theta == 1.0 else sub(mul(2.0, u), v))


@kernel(inline=True)
def _body_torque(rot, tau, has_torque):
    """R3^T tau: the world torque in body axes."""
    return matvec_t(rot, tau) if has_torque else _ZERO


@kernel(inline=True)
def _omega_dot(rot, w, inertia, tau, has_torque, gyro_on):
    """Euler's equations: (R^T tau - g w × I w) / I."""
    t = _body_torque(rot, tau, has_torque)
    if gyro_on:
        t = sub(t, cross(w, hadamard(inertia, w)))
    return (t[0] / inertia[0], t[1] / inertia[1], t[2] / inertia[2])


@kernel(inline=True)
def _gyroscopic_step(inertia, b, h, x):
    """y with I y + h y × I y = b, from x (physics.model.rigid_body's damped, continued Newton)."""
    return gyroscopic_newton(inertia[0], inertia[1], inertia[2], b[0], b[1], b[2], h, x[0], x[1], x[2])


@kernel
def _solve_omega(rot, w, inertia, tau, has_torque, gyro_on, h_force, h_rot):
    """x with I x + h_force g x × I x = I w + h_force (R exp(h_rot x))^T tau.

    The torque-free part by Newton (rigid_body.gyroscopic_newton); the orientation dependence
    of the body torque, a perturbation of size h_force h_rot |tau|, by fixed-point iteration.
    """
    g = h_force if gyro_on else 0.0
    momentum = hadamard(inertia, w)
    x = _gyroscopic_step(inertia, momentum, g, w)
    if not has_torque:
        return x
    for _ in range(30):
        b = axpy(h_force, matvec_t(matmul(rot, exp_so3(mul(h_rot, x))), tau), momentum)
        previous = x
        x = _gyroscopic_step(inertia, b, g, x)
        change = sub(x, previous)
        if dot(change, change) <= 1e-28 * dot(x, x) + 1e-300:
            break
    return x


# lie-midpoint works on blocks of bodies in structure-of-arrays scratch (one row per component,
# one column per body): its loops over a block are straight-line arithmetic on columns, which LLVM
# compiles to SIMD over bodies (8 per AVX-512 instruction). With error_model="numpy" a division
# raises no Python exception, whose check would be a branch that blocks the vectorizer. A block's
# scratch (19 rows of 256 floats and a row of flags, 38 KiB) stays in the L2 cache between the passes.
_BLOCK = 256


@kernel(inline=True)
def _rotor_newton(inertia, inverse_inertia, w, hh):
    """(x, converged): x with F(x) = I x + hh x × I x - I w = 0, the midpoint angular velocity of
    the free rotor's implicit midpoint step of length 2 hh (body frame).

    Predictor: two fixed-point sweeps x <- w - hh I^-1 (x × I x) from x = w (the first is the
    explicit midpoint), each gaining a factor of order hh |w|. Then two Newton steps, Jacobian
    J = I + hh (hat(x) I - hat(I x)) by Cramer's rule. Convergence is quadratic: once an update is
    below 1e-9 |x|, the error left is of order 1e-18 |x|, under round-off. A fixed count, no
    branch, so it vectorizes; at game steps (h |w| <= 0.1) it converges for > 99 % of bodies, the
    others (h |w| of order 1) go on with physics.model.rigid_body's damped, continued Newton.
    """
    i0, i1, i2 = inertia
    l = hadamard(inertia, w)
    x = sub(w, mul(hh, hadamard(inverse_inertia, cross(w, l))))
    x = sub(w, mul(hh, hadamard(inverse_inertia, cross(x, hadamard(inertia, x)))))
    d = _ZERO
    for _ in range(2):
        x0, x1, x2 = x
        m0, m1, m2 = hadamard(inertia, x)
        residual = sub(axpy(hh, cross(x, (m0, m1, m2)), (m0, m1, m2)), l)
        jacobian = ((i0, hh * (m2 - x2 * i1), hh * (x1 * i2 - m1)),
                    (hh * (x2 * i0 - m2), i1, hh * (m0 - x0 * i2)),
                    (hh * (m1 - x1 * i0), hh * (x0 * i1 - m0), i2))
        d = solve3(jacobian, residual)
        x = sub(x, d)
    return x, dot(d, d) <= 1e-18 * dot(x, x)


@kernel(inline=True)
def _col3(a, k):
    return (a[0, k], a[1, k], a[2, k])


@kernel(inline=True)
def _set_col3(a, k, v):
    a[0, k], a[1, k], a[2, k] = v


@kernel(inline=True)
def _col4(a, k):
    return (a[0, k], a[1, k], a[2, k], a[3, k])


@kernel(inline=True)
def _set_col4(a, k, v):
    a[0, k], a[1, k], a[2, k], a[3, k] = v


@kernel(inline=True)
def _kick_block(lanes, w, inverse_inertia, q, torque_start, hh):
    """w <- w + hh I^-1 M(q)^T tau_start: half a torque impulse, in the body axes of q."""
    for k in range(lanes):
        tau_body = matvec_t(matrix_from_quaternion(_col4(q, k)), _col3(torque_start, k))
        _set_col3(w, k, axpy(hh, hadamard(_col3(inverse_inertia, k), tau_body), _col3(w, k)))


@kernel(inline=True, error_model="numpy")
def _lie_midpoint_block(lanes, w, inertia, inverse_inertia, q, torque_start, x, converged, kicks, gyro_on, h):
    """One kick-drift-kick lie-midpoint step (module docstring) of the block's (q, omega_body),
    written on w = I^-1 L: the drift L <- 2 I x - L is w <- 2 x - w, with no division.

    The rotation travelled since the start of the step is the unnormalized quaternion q
    (R3 = R3(0) M(q), M = matrix_from_quaternion): cay(y) is the rotation of (2, y)
    (physics.math.rotation.quaternion_cayley), so a sub-step is one quaternion product and the triple
    jump builds one matrix at the end. torque_start = R3(0)^T tau, the torque in the start axes.
    """
    hh = 0.5 * h
    if kicks:
        _kick_block(lanes, w, inverse_inertia, q, torque_start, hh)
    if gyro_on:
        for k in range(lanes):
            xk, ok = _rotor_newton(_col3(inertia, k), _col3(inverse_inertia, k), _col3(w, k), hh)
            _set_col3(x, k, xk)
            converged[k] = ok
        for k in range(lanes):  # rare: h |w| of order 1
            if not converged[k]:
                i0, i1, i2 = _col3(inertia, k)
                w0, w1, w2 = _col3(w, k)
                _set_col3(x, k, gyroscopic_newton(i0, i1, i2, i0 * w0, i1 * w1, i2 * w2, hh, x[0, k], x[1, k],
                                                    x[2, k]))
        for k in range(lanes):
            xk = _col3(x, k)
            _set_col3(w, k, sub(mul(2.0, xk), _col3(w, k)))
            _set_col4(q, k, quaternion_multiply(_col4(q, k), (2.0, h * xk[0], h * xk[1], h * xk[2])))
    else:
        for k in range(lanes):
            wk = _col3(w, k)
            _set_col4(q, k, quaternion_multiply(_col4(q, k), (2.0, h * wk[0], h * wk[1], h * wk[2])))
    if kicks:
        _kick_block(lanes, w, inverse_inertia, q, torque_start, hh)


@kernel(inline=True)
def _axpy4(s, u, v):
    return (s * u[0] + v[0], s * u[1] + v[1], s * u[2] + v[2], s * u[3] + v[3])


@kernel(inline=True)
def _rk4_rotation_rates(q, w, inertia, tau, has_torque, gyro_on):
    """(dq/dt, dw/dt): dq/dt = q (0, w) / 2 (body-frame w), Euler's equations at the rotation of q."""
    rate = (0.5 * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2]), 0.5 * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1]),
            0.5 * (q[0] * w[1] + q[3] * w[0] - q[1] * w[2]), 0.5 * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0]))
    rot = matrix_from_quaternion(q) if has_torque else _EYE
    return rate, _omega_dot(rot, w, inertia, tau, has_torque, gyro_on)


@kernel(inline=True)
def _rk4_rotation(rot, w, inertia, tau, has_torque, gyro_on, h):
    """Classical RK4 on (q, w), q from R3 and back (normalized by matrix_from_quaternion)."""
    q = quaternion_from_matrix(rot)
    kq1, kw1 = _rk4_rotation_rates(q, w, inertia, tau, has_torque, gyro_on)
    kq2, kw2 = _rk4_rotation_rates(_axpy4(0.5 * h, kq1, q), axpy(0.5 * h, kw1, w), inertia, tau, has_torque, gyro_on)
    kq3, kw3 = _rk4_rotation_rates(_axpy4(0.5 * h, kq2, q), axpy(0.5 * h, kw2, w), inertia, tau, has_torque, gyro_on)
    kq4, kw4 = _rk4_rotation_rates(_axpy4(h, kq3, q), axpy(h, kw3, w), inertia, tau, has_torque, gyro_on)
    kq = _axpy4(2.0, _axpy4(1.0, kq2, kq3), _axpy4(1.0, kq1, kq4))
    kw = axpy(2.0, add(kw2, kw3), add(kw1, kw4))
    return matrix_from_quaternion(_axpy4(h / 6.0, kq, q)), axpy(h / 6.0, kw, w)


@kernel(inline=True)
def _rk4_translation(moving, frame, f_over_m, x, v, h):
    """Classical RK4 on (x, v); for a parent at rest the acceleration is constant and RK4 reduces
    exactly to x + h v + h² a / 2, v + h a."""
    if not moving:
        return axpy(h, axpy(0.5 * h, f_over_m, v), x), axpy(h, f_over_m, v)
    start = _coefficients(moving, frame, f_over_m, 0.0)
    middle = _coefficients(moving, frame, f_over_m, 0.5 * h)
    end = _coefficients(moving, frame, f_over_m, h)
    kx1, kv1 = v, _acceleration(moving, start, x, v)
    kx2 = axpy(0.5 * h, kv1, v)
    kv2 = _acceleration(moving, middle, axpy(0.5 * h, kx1, x), kx2)
    kx3 = axpy(0.5 * h, kv2, v)
    kv3 = _acceleration(moving, middle, axpy(0.5 * h, kx2, x), kx3)
    kx4 = axpy(h, kv3, v)
    kv4 = _acceleration(moving, end, axpy(h, kx3, x), kx4)
    return (axpy(h / 6.0, axpy(2.0, add(kx2, kx3), add(kx1, kx4)), x),
            axpy(h / 6.0, axpy(2.0, add(kv2, kv3), add(kv1, kv4)), v))


@kernel(inline=True)
def _load(bodies, frames, moving, i):
    """Body i: (x, v, omega_body, R3 = R2 R1, inertia, F/m, tau, has_torque, frame)."""
    translation, rotation, velocity, omega_body, mass, inertia_body, force, torque = bodies
    if moving:
        frame = (load33(frames[0], i), frames[1][i], load3(frames[2], i), load3(frames[3], i), load3(frames[4], i))
        rot = matmul(frame[0], load33(rotation, i))
    else:
        frame = (_EYE, 1.0, _ZERO, _ZERO, _ZERO)
        rot = load33(rotation, i)
    tau = load3(torque, i)
    return (load3(translation, i), load3(velocity, i), load3(omega_body, i), rot, load3(inertia_body, i),
            mul(1.0 / mass[i], load3(force, i)), tau, not is_zero(tau), frame)


@kernel(inline=True)
def _store(bodies, moving, i, x, v, w, rot, frame, h):
    """Write body i back; the local rotation is R1 = R2(h)^T R3."""
    translation, rotation, velocity, omega_body = bodies[0], bodies[1], bodies[2], bodies[3]
    store3(translation, i, x)
    store3(velocity, i, v)
    store3(omega_body, i, w)
    store33(rotation, i, matmul_tn(_frame_rotation(frame, h), rot) if moving else rot)


# Loading for the block kernel (_step_lie) and the conversions: they unpack the `bodies` and
# `frames` tuples once and hand arrays only to inline helpers without branches. In _step_lie,
# `_load(bodies, frames, moving, i)` above cost 25 ns a body more, more than its arithmetic
# (measured; we take it for the reference counts of the tuple's arrays inside the loop, which
# numba's pruning left there); in the one-pass kernels (_step_euler, _step_implicit, _step_rk4)
# `_load` is the faster of the two by ~10 % (measured), so they keep it.

_WORLD_FRAME = (_EYE, 1.0, _ZERO, _ZERO, _ZERO)


@kernel(inline=True)
def _load_frame(i, r2s, s2s, a2s, omega2s, alpha2s):
    """Body i's parent motion (R2, S2, a2, omega2, alpha2)."""
    return (load33(r2s, i), s2s[i], load3(a2s, i), load3(omega2s, i), load3(alpha2s, i))


@kernel(inline=True)
def _load_body(i, translation, velocity, omega_body, mass, inertia_body, force, torque):
    """Body i: (x, v, omega_body, inertia, F/m, tau)."""
    return (load3(translation, i), load3(velocity, i), load3(omega_body, i), load3(inertia_body, i),
            mul(1.0 / mass[i], load3(force, i)), load3(torque, i))


@kernel(inline=True)
def _world_rotation(moving, frame, rotation_local):
    """R3 = R2 R1."""
    return matmul(frame[0], rotation_local) if moving else rotation_local


@kernel(inline=True)
def _local_rotation(moving, frame, rot, h):
    """R1 = R2(h)^T R3 at the end of the step."""
    return matmul_tn(_frame_rotation(frame, h), rot) if moving else rot


@kernel(inline=True)
def _gyroscopic_prestep(gyro, inertia, w, h):
    """(w, g): `implicit` applies Bullet's implicit gyroscopic step and integrates on without the term."""
    if gyro == GYROSCOPIC_IMPLICIT:
        return _gyroscopic_step(inertia, hadamard(inertia, w), h, w), False
    return w, gyro != GYROSCOPIC_OFF


# The divergence check of a stepped body (physics.pipeline.stages' `DivergenceError`), one definition for
# the step kernels' in-pass check (`found`, below) and the simulation's own scan of the local state.

@kernel(inline=True)
def divergence(v, w, has_omega, x, rot, length, speed):
    """(quantity, value) of the first of a node's local velocity v (2), omega_body w (3, if
    `has_omega`), translation x (0) and rotation rot (1) that is non-finite or beyond `length` /
    `speed` (Euclidean norms; a rotation entry: non-finite), speeds first (a blow-up shows there
    before the positions follow); (-1, 0.0) if none."""
    norm = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if not norm <= speed:
        return 2, norm
    if has_omega:
        norm = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        if not norm <= speed:
            return 3, norm
    norm = math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if not norm <= length:
        return 0, norm
    for r in range(3):
        for c in range(3):
            if not math.isfinite(rot[r][c]):
                return 1, rot[r][c]
    return -1, 0.0


# `_within` compares squared norms with the squared limits shrunk by this factor: far more than
# the rounding of a square and a product, so what it clears `divergence`'s square roots clear too
_WITHIN_SQUARED = 1.0 - 1e-9


@kernel(inline=True)
def _within(i, translation, rotation, velocity, omega_body, limits):
    """Whether body i is certainly not divergent: `divergence`'s tests without its branches or
    square roots (a NaN or an overflowing square fails a comparison; a sum of the rotation's
    entries is finite if they are, and may overflow only where one is huge): in a block
    `_check_block` could not clear at once, the cheap test of each body before the exact one."""
    v, w, x, r = load3(velocity, i), load3(omega_body, i), load3(translation, i), load33(rotation, i)
    total = (r[0][0] + r[0][1] + r[0][2]) + (r[1][0] + r[1][1] + r[1][2]) + (r[2][0] + r[2][1] + r[2][2])
    length2, speed2 = _WITHIN_SQUARED * limits[0] * limits[0], _WITHIN_SQUARED * limits[1] * limits[1]
    return ((v[0] * v[0] + v[1] * v[1] + v[2] * v[2] <= speed2) & (w[0] * w[0] + w[1] * w[1] + w[2] * w[2] <= speed2)
            & (x[0] * x[0] + x[1] * x[1] + x[2] * x[2] <= length2) & (total * 0.0 == 0.0))


@kernel(inline=True)
def _rows_within(values, first, stop, bound):
    """Whether every entry of rows first..stop-1 of `values` (B, ...), C-contiguous, is within
    ±bound (NaN is not): one branch-free reduction over contiguous memory, read through `.flat`
    (whose item of a C-contiguous array is its data at the index: a reshape to one axis calls
    numba's `numba_attempt_nocopy_reshape`, some 25 ns, at each check)."""
    width = values.size // values.shape[0]
    flat = values.flat
    clear = True
    for j in range(first * width, stop * width):
        clear &= abs(flat[j]) <= bound
    return clear


@kernel(refcounts=False)
def _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, at):
    """Bodies first..stop-1 through `divergence`: the first divergent body of the pass (the lowest
    i) goes into found[at:at + 3] = [i, quantity, value] (found[at] < 0: none yet). A block whose
    every speed and position component is within its limit / √3 (so every norm is within the
    limit) and every rotation entry within ±2 (so finite) is cleared by four vectorized
    reductions; only another block is tested body by body (`_within`, then `divergence`). Body by
    body, with a branch a body, the two checks of a lie-midpoint step of 10^4 bodies took 8 of its
    33 ns a body; block by block 3 (measured)."""
    if found[at] >= 0.0:
        return
    speed = _WITHIN_SQUARED * limits[1] / math.sqrt(3.0)
    length = _WITHIN_SQUARED * limits[0] / math.sqrt(3.0)
    if (_rows_within(velocity, first, stop, speed) and _rows_within(omega_body, first, stop, speed)
            and _rows_within(translation, first, stop, length) and _rows_within(rotation, first, stop, 2.0)):
        return
    for i in range(first, stop):
        if not _within(i, translation, rotation, velocity, omega_body, limits):
            quantity, value = divergence(load3(velocity, i), load3(omega_body, i), True, load3(translation, i),
                                         load33(rotation, i), limits[0], limits[1])
            if quantity >= 0:
                found[at], found[at + 1], found[at + 2] = i, quantity, value
                return


# One loop kernel per integrator family, each one pass over the bodies. bodies = (translation,
# rotation, velocity, omega_body, mass, inertia_body, force, torque), frames = the Frame's arrays.

@kernel(nogil=True, refcounts=False)
def _step_euler(semi_implicit, gyro, h, bodies, moving, frames, limits, found):
    translation, rotation, velocity, omega_body = bodies[0], bodies[1], bodies[2], bodies[3]
    for first in range(0, bodies[0].shape[0], _BLOCK):
        stop = min(first + _BLOCK, bodies[0].shape[0])
        if found.size > 3:  # the states they start from
            _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, 3)
        for i in range(first, stop):
            x, v, w, rot, inertia, f_over_m, tau, has_torque, frame = _load(bodies, frames, moving, i)
            w, gyro_on = _gyroscopic_prestep(gyro, inertia, w, h)
            x, v = _translate_euler(semi_implicit, moving, frame, f_over_m, x, v, h)
            w_dot = _omega_dot(rot, w, inertia, tau, has_torque, gyro_on)
            if not semi_implicit:
                rot = matmul(rot, exp_so3(mul(h, w)))
            w = axpy(h, w_dot, w)
            if semi_implicit:
                rot = matmul(rot, exp_so3(mul(h, w)))
            _store(bodies, moving, i, x, v, w, rot, frame, h)
        if found.size:
            _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, 0)


@kernel(nogil=True, refcounts=False)
def _step_implicit(theta, gyro, h, bodies, moving, frames, limits, found):
    """theta = 1: implicit Euler; theta = 1/2: implicit midpoint."""
    translation, rotation, velocity, omega_body = bodies[0], bodies[1], bodies[2], bodies[3]
    for first in range(0, bodies[0].shape[0], _BLOCK):
        stop = min(first + _BLOCK, bodies[0].shape[0])
        if found.size > 3:  # the states they start from
            _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, 3)
        for i in range(first, stop):
            x, v, w, rot, inertia, f_over_m, tau, has_torque, frame = _load(bodies, frames, moving, i)
            w, gyro_on = _gyroscopic_prestep(gyro, inertia, w, h)
            x, v = _translate_implicit(moving, _coefficients(moving, frame, f_over_m, theta * h), x, v, h, theta)
            x_omega = _solve_omega(rot, w, inertia, tau, has_torque, gyro_on, theta * h, theta * h)
            w = x_omega if theta == 1.0 else sub(mul(2.0, x_omega), w)
            rot = matmul(rot, exp_so3(mul(h, x_omega)))
            _store(bodies, moving, i, x, v, w, rot, frame, h)
        if found.size:
            _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, 0)


@kernel(nogil=True, refcounts=False)
def _step_rk4(gyro, h, bodies, moving, frames, limits, found):
    translation, rotation, velocity, omega_body = bodies[0], bodies[1], bodies[2], bodies[3]
    for first in range(0, bodies[0].shape[0], _BLOCK):
        stop = min(first + _BLOCK, bodies[0].shape[0])
        if found.size > 3:  # the states they start from
            _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, 3)
        for i in range(first, stop):
            x, v, w, rot, inertia, f_over_m, tau, has_torque, frame = _load(bodies, frames, moving, i)
            w, gyro_on = _gyroscopic_prestep(gyro, inertia, w, h)
            x, v = _rk4_translation(moving, frame, f_over_m, x, v, h)
            rot, w = _rk4_rotation(rot, w, inertia, tau, has_torque, gyro_on, h)
            _store(bodies, moving, i, x, v, w, rot, frame, h)
        if found.size:
            _check_block(first, stop, translation, rotation, velocity, omega_body, limits, found, 0)


@kernel(error_model="numpy", refcounts=False)
def _start_block(lanes, inertia, inverse_inertia, q):
    """I^-1 and q = 1 (no rotation yet) for the block."""
    for k in range(lanes):
        _set_col3(inverse_inertia, k, (1.0 / inertia[0, k], 1.0 / inertia[1, k], 1.0 / inertia[2, k]))
        _set_col4(q, k, (1.0, 0.0, 0.0, 0.0))


class LieScratch(NamedTuple):
    """`_step_lie`'s block columns, (3, width) each but q (4, width), and its flags (width,), width
    = min(_BLOCK, batch) (`lie_scratch`): made once by a caller that steps the same batch every
    sub-step, so that its step allocates nothing (153 bytes a column, 38 KiB for a whole block)."""
    w: np.ndarray
    inertia: np.ndarray
    inverse_inertia: np.ndarray
    torque_start: np.ndarray
    x: np.ndarray
    q: np.ndarray
    converged: np.ndarray


def lie_scratch(batch):
    """A `LieScratch` for a batch of `batch` bodies."""
    width = min(_BLOCK, batch)
    return LieScratch(*(np.empty((3, width)) for _ in range(5)), np.empty((4, width)), np.empty(width, np.bool_))


@kernel(error_model="numpy", nogil=True, refcounts=False)
def _step_lie(fractions, count, gyro, h, bodies, moving, frames, limits, found, scratch):
    """lie-midpoint (count 1: the sub-step fractions[0] = 1) or its triple jump (count 3: g1, g2,
    g1). `fractions` is always a 3-tuple, so that both compile as one version (a 1-tuple and a
    3-tuple are two numba types). For `lie-midpoint(-4)` the gyroscopic term is inherent:
    `explicit` and `implicit` both solve it, `off` drops it. `scratch`: a `LieScratch` for this batch.

    Per block of bodies: (1) body by body, the translation (independent of the rotation) and the
    rotation state into the scratch columns; (2) the rotation sub-steps on whole columns (SIMD);
    (3) body by body, R3 <- R3 M(q) and the state back. The block step is inlined here (one call
    site), so that LLVM sees the scratch columns are distinct arrays and vectorizes its loops as
    they are; the error model is numpy's, as the block's (a division's check would be a branch in
    them). Masses and inertias are checked > 0 before any step, so no division here is by zero.
    Called through a separate kernel, lie-midpoint's step was 8 % slower (measured).
    """
    gyro_on = gyro != GYROSCOPIC_OFF
    translation, rotation, velocity, omega_body, mass, inertia_body, force, torque = bodies
    r2s, s2s, a2s, omega2s, alpha2s = frames
    # (a block's columns, no more than the batch has)
    w, inertia, inverse_inertia, torque_start, x, q, converged = scratch
    for first in range(0, translation.shape[0], _BLOCK):
        lanes = min(_BLOCK, translation.shape[0] - first)
        kicks = False
        if found.size > 3:  # the state it starts from (the loop below changes only body i's)
            _check_block(first, first + lanes, translation, rotation, velocity, omega_body, limits, found, 3)
        for k in range(lanes):
            i = first + k
            frame = _load_frame(i, r2s, s2s, a2s, omega2s, alpha2s) if moving else _WORLD_FRAME
            xi, v, wi, inertia_i, f_over_m, tau = _load_body(i, translation, velocity, omega_body, mass, inertia_body,
                                                             force, torque)
            if moving:
                start = 0.0
                for j in range(count):
                    hs = fractions[j] * h
                    xi, v = _translate_implicit(moving, _coefficients(moving, frame, f_over_m, start + 0.5 * hs),
                                                xi, v, hs, 0.5)
                    start += hs
            else:  # constant acceleration: the midpoint rule, and any composition of it, is exact
                xi, v = axpy(h, axpy(0.5 * h, f_over_m, v), xi), axpy(h, f_over_m, v)
            store3(translation, i, xi)
            store3(velocity, i, v)
            _set_col3(w, k, wi)
            _set_col3(inertia, k, inertia_i)
            _set_col3(torque_start, k, matvec_t(_world_rotation(moving, frame, load33(rotation, i)), tau))
            kicks = kicks or not is_zero(tau)
        _start_block(lanes, inertia, inverse_inertia, q)
        for j in range(count):
            _lie_midpoint_block(lanes, w, inertia, inverse_inertia, q, torque_start, x, converged, kicks, gyro_on,
                                fractions[j] * h)
        for k in range(lanes):
            i = first + k
            frame = _load_frame(i, r2s, s2s, a2s, omega2s, alpha2s) if moving else _WORLD_FRAME
            rot = matmul(_world_rotation(moving, frame, load33(rotation, i)), matrix_from_quaternion(_col4(q, k)))
            store33(rotation, i, _local_rotation(moving, frame, rot, h))
            store3(omega_body, i, _col3(w, k))
        if found.size:     # the block just stored, still in cache: in a loop of its own, the one above runs as fast as unchecked
            _check_block(first, first + lanes, translation, rotation, velocity, omega_body, limits, found, 0)


# ---------------------------------------------------------------------------------------------
# public batch functions


def _check_dynamic(translation, rotation, velocity, omega_body, mass, inertia_body, force_world, torque_world):
    batch = check_batch(translation=translation, rotation=rotation, velocity=velocity, omega_body=omega_body,
                         inertia_body=inertia_body, force_world=force_world, torque_world=torque_world)
    if not isinstance(mass, np.ndarray) or mass.dtype != np.float64 or mass.shape != (batch,):
        raise ValueError(f"mass: got shape {getattr(mass, 'shape', None)} dtype {getattr(mass, 'dtype', None)}; "
                         f"expected float64 of shape ({batch},)")
    if not (_all_positive(mass) and _all_positive(inertia_body)):
        raise ValueError(f"mass, inertia_body: got a value that is not > 0 (min mass {mass.min(initial=1.0)}, "
                         f"min inertia {inertia_body.min(initial=1.0)}); expected > 0")
    return batch


def step_bodies(translation, rotation, velocity, omega_body, mass, inertia_body, force_world, torque_world,
                dt, integrator="lie-midpoint", gyroscopic="implicit", frame=None):
    """Advance B dynamic bodies by `dt` in place (the state and equations in the module docstring).

    translation, velocity, omega_body (B, 3), rotation (B, 3, 3): updated. mass (B,), inertia_body
    (B, 3); force_world, torque_world (B, 3), constant over the step; frame: a `Frame` of batch B,
    or None when every parent is the world.
    """
    batch = _check_dynamic(translation, rotation, velocity, omega_body, mass, inertia_body, force_world,
                           torque_world)
    choices.INTEGRATOR.check(integrator)
    choices.GYROSCOPIC.check(gyroscopic)
    if not np.isfinite(dt) or dt < 0:
        raise ValueError(f"dt: got {dt!r}; expected a finite number >= 0")
    advance_bodies((translation, rotation, velocity, omega_body, mass, inertia_body, force_world, torque_world), dt,
                   integrator, gyroscopic, None if frame is None else _frame_arrays(frame, batch))


def advance_bodies(bodies, dt, integrator, gyroscopic, frames=None, limits=(0.0, 0.0), found=None, scratch=None):
    """`step_bodies` on arguments known to be valid: `bodies` its eight arrays in its order and
    `frames` the frame's five (rotation, scale, acceleration, angular_velocity,
    angular_acceleration) or None, all C-contiguous float64 of one batch, with positive masses,
    inertias and scales and known names. `physics.pipeline.simulation` steps its own checked state with it,
    so a small scene's step does not pay for the checks.

    `found`: None for no check, or a float64 array [-1, 0, 0]: each block of `_BLOCK` bodies is
    checked in the same pass, as soon as it is stored (`divergence`, with limits = (length,
    speed); `_check_block`), and the first divergent body, by index, is written into it as
    [index, quantity, value]; [-1, 0, 0, -1, 0, 0] also checks each block's state before its
    step, into found[3:]. The check costs no pass over memory of its own. A batch of `SPLIT_BODIES` or more is stepped in parts on the cores at
    once (`_parts`), to the same bits and the same `found`. `scratch`: lie-midpoint's `LieScratch`
    for this batch, kept by a caller that steps it every sub-step (used where it is one part), or
    None (made for the call)."""
    moving, frames = (False, _IDENTITY) if frames is None else (True, frames)
    gyro, h = choices.GYROSCOPIC.codes[gyroscopic], float(dt)
    limits, found = (float(limits[0]), float(limits[1])), _NO_CHECK if found is None else found
    parts = _parts(bodies[0].shape[0])
    if len(parts) > 1:
        _advance_parts(parts, bodies, h, integrator, gyro, moving, frames, limits, found)
    else:
        _advance(bodies, h, integrator, gyro, moving, frames, limits, found, scratch)


def advancing(bodies, dt, integrator, gyroscopic, frames=None):
    """`advance_bodies(bodies, dt, integrator, gyroscopic, frames)` (no check) as a call of no
    arguments, bound to these arrays (physics.core.compiled.bind: not typed at each call) where
    the batch is stepped in one pass; for a caller that steps the same arrays every sub-step
    (physics.pipeline.stages.Workspace)."""
    moving, frames = (False, _IDENTITY) if frames is None else (True, frames)
    gyro, h = choices.GYROSCOPIC.codes[gyroscopic], float(dt)
    if len(_parts(bodies[0].shape[0])) > 1:
        return lambda: _advance_parts(_parts(bodies[0].shape[0]), bodies, h, integrator, gyro, moving, frames,
                                      (0.0, 0.0), _NO_CHECK)
    step, arguments = _integrator_call(bodies, h, integrator, gyro, moving, frames, (0.0, 0.0), _NO_CHECK)
    return bind(step, *arguments)


def _integrator_call(bodies, h, integrator, gyro, moving, frames, limits, found, scratch=None):
    """(the integrator's kernel, its arguments) for `_advance`; `scratch`: lie-midpoint's
    `LieScratch` for this batch, or None (one made for the call)."""
    if integrator in ("explicit-euler", "semi-implicit-euler"):
        return _step_euler, (integrator == "semi-implicit-euler", gyro, h, bodies, moving, frames, limits, found)
    if integrator in ("implicit-euler", "implicit-midpoint"):
        return _step_implicit, (1.0 if integrator == "implicit-euler" else 0.5, gyro, h, bodies, moving, frames, limits,
                                found)
    if integrator == "rk4":
        return _step_rk4, (gyro, h, bodies, moving, frames, limits, found)
    if scratch is None or scratch.w.shape[1] != min(_BLOCK, bodies[0].shape[0]):   # (another batch's: not used)
        scratch = lie_scratch(bodies[0].shape[0])
    if integrator == "lie-midpoint":
        return _step_lie, (_ONE_STEP, 1, gyro, h, bodies, moving, frames, limits, found, scratch)
    return _step_lie, (_TRIPLE_JUMP, 3, gyro, h, bodies, moving, frames, limits, found, scratch)


def _advance(bodies, h, integrator, gyro, moving, frames, limits, found, scratch=None):
    """`advance_bodies` in one pass: the integrator's kernel."""
    step, arguments = _integrator_call(bodies, h, integrator, gyro, moving, frames, limits, found, scratch)
    step(*arguments)


# Every kernel above steps each body on its own, so a batch of SPLIT_BODIES bodies or more is
# stepped in parts at once, one a core: each part a whole number of `_BLOCK`s (lie-midpoint's
# blocks, and with them every body's arithmetic, are those of one pass, and so are its bits), each
# on its own thread (the kernels release the GIL). The parts join once, at the end of the pass (the
# two-thread contact sweep joins after every sweep), so a core taken by another process costs about
# its part's time: beside a busy process the step takes one core's time, not more. 2^16 bodies take
# about 2 ms a step: a thread's hand-off (tens of microseconds) is lost in it.
SPLIT_BODIES = 1 << 16
_pool = None        # the threads that step the parts but the first (`_advance_parts`)
_pool_size = 0


def _parts(batch):
    """[(first, stop), ...]: the batch's parts (`SPLIT_BODIES`), one a core (`physics.core.threads.cores`);
    one alone below it or on one core."""
    count = min(threads.cores(), batch // (SPLIT_BODIES // 2)) if batch >= SPLIT_BODIES else 1
    if count < 2:
        return [(0, batch)]
    blocks = -(-batch // _BLOCK)
    edges = [min(batch, _BLOCK * (blocks * k // count)) for k in range(count + 1)]
    return list(zip(edges[:-1], edges[1:]))


def _advance_parts(parts, bodies, h, integrator, gyro, moving, frames, limits, found):
    """`_advance` on each part at once; `found` as one pass would have filled it: per record
    (after the step, before it), the first part's that found a divergent body, by index."""
    global _pool, _pool_size
    if _pool_size < len(parts) - 1:     # made (again) as large as the parts need
        if _pool is not None:
            _pool.shutdown()
        _pool_size = len(parts) - 1
        _pool = concurrent.futures.ThreadPoolExecutor(_pool_size, thread_name_prefix="bodies")
    founds = [np.full_like(found, -1.0) for _ in parts]
    for own in founds:
        own[1::3] = own[2::3] = 0.0

    def run(k):
        first, stop = parts[k]
        part = tuple(a[first:stop] for a in bodies)
        part_frames = tuple(a[first:stop] for a in frames) if moving else frames
        _advance(part, h, integrator, gyro, moving, part_frames, limits, founds[k])

    others = [_pool.submit(run, k) for k in range(1, len(parts))]
    run(0)
    for other in others:
        other.result()
    for at in range(0, found.size, 3):
        for (first, _), own in zip(parts, founds):
            if own[at] >= 0.0:
                found[at:at + 3] = own[at] + first, own[at + 1], own[at + 2]
                break


# No divergence check (`advance_bodies`): an empty array, so that a checked and an unchecked call are
# one compiled version.
_NO_CHECK = np.zeros(0)

# The identity frame's arrays stand in for `frame=None` (moving False): the kernels never read them.
# Built without `_frame_arrays`' compiled check, so importing this module compiles nothing.
_IDENTITY = tuple(np.ascontiguousarray(getattr(Frame.world(1), name), dtype=float) for name, _ in _FRAME_FIELDS)


def _moving_frames(frame, batch):
    """(moving, the frame's arrays) for the kernels."""
    return (False, _IDENTITY) if frame is None else (True, _frame_arrays(frame, batch))


@kernel(inline=True)
def _inertial_terms(moving, frame, x, v):
    """World frame: (-a2, -alpha2 × r, -omega2 × (omega2 × r), -2 omega2 × (J2 v)), r = J2 x."""
    if not moving:
        return _ZERO, _ZERO, _ZERO, _ZERO
    r2, s2, a2, omega2, alpha2 = frame
    r = mul(s2, matvec(r2, x))
    return (mul(-1.0, a2), mul(-1.0, cross(alpha2, r)), mul(-1.0, cross(omega2, cross(omega2, r))),
            mul(-2.0 * s2, cross(omega2, matvec(r2, v))))


@kernel
def _inertial_kernel(translation, velocity, moving, frames, out):
    r2s, s2s, a2s, omega2s, alpha2s = frames
    out_frame, out_euler, out_centrifugal, out_coriolis = out[0], out[1], out[2], out[3]
    for i in range(translation.shape[0]):
        frame = _load_frame(i, r2s, s2s, a2s, omega2s, alpha2s) if moving else _WORLD_FRAME
        terms = _inertial_terms(moving, frame, load3(translation, i), load3(velocity, i))
        store3(out_frame, i, terms[0])
        store3(out_euler, i, terms[1])
        store3(out_centrifugal, i, terms[2])
        store3(out_coriolis, i, terms[3])


def inertial_accelerations(translation, velocity, frame=None):
    """The four inertial accelerations of each body in the world frame ("The Dynamics of a
    Transform Hierarchy"), dict of (B, 3):

    frame = -a2, euler = -alpha2 x r, centrifugal = -omega2 x (omega2 x r), coriolis = -2 omega2 x (J2 v1),
    with r = J2 T1 and J2 = R2 S2. They are zero for bodies whose parent is the world.
    """
    batch = check_batch(translation=translation, velocity=velocity)
    moving, frames = _moving_frames(frame, batch)
    out = np.empty((4, batch, 3))
    _inertial_kernel(translation, velocity, moving, frames, out)
    return {"frame": out[0], "euler": out[1], "centrifugal": out[2], "coriolis": out[3]}


@kernel
def _omega_kernel(to_local, rotation, omega, moving, frames, out):
    """to_local: R1 omega_body - R2^T omega2; else R1^T (omega_local + R2^T omega2)."""
    r2s, omega2s = frames[0], frames[3]
    for i in range(rotation.shape[0]):
        omega_parent = matvec_t(load33(r2s, i), load3(omega2s, i)) if moving else _ZERO
        if to_local:
            store3(out, i, sub(matvec(load33(rotation, i), load3(omega, i)), omega_parent))
        else:
            store3(out, i, matvec_t(load33(rotation, i), add(load3(omega, i), omega_parent)))


def omega_local_from_body(rotation, omega_body, frame=None):
    """omega_local = R1 omega_body - R2^T omega2 (parent frame), batch (B, 3)."""
    batch = check_batch(rotation=rotation, omega_body=omega_body)
    out = np.empty((batch, 3))
    _omega_kernel(True, rotation, omega_body, *_moving_frames(frame, batch), out)
    return out


def omega_body_from_local(rotation, omega_local, frame=None):
    """omega_body = R1^T (omega_local + R2^T omega2), the inverse of omega_local_from_body."""
    batch = check_batch(rotation=rotation, omega_local=omega_local)
    out = np.empty((batch, 3))
    _omega_kernel(False, rotation, omega_local, *_moving_frames(frame, batch), out)
    return out


@kernel
def _local_accelerations_kernel(gyro_on, bodies, moving, frames, a_local, alpha_local):
    translation, rotation, velocity, omega_body, mass, inertia_body, force, torque = bodies
    r2s, s2s, a2s, omega2s, alpha2s = frames
    for i in range(translation.shape[0]):
        frame = _load_frame(i, r2s, s2s, a2s, omega2s, alpha2s) if moving else _WORLD_FRAME
        rot = _world_rotation(moving, frame, load33(rotation, i))
        x, v, w, inertia, f_over_m, tau = _load_body(i, translation, velocity, omega_body, mass, inertia_body, force,
                                                     torque)
        terms = _inertial_terms(moving, frame, x, v)
        a_world = add(f_over_m, add(add(terms[0], terms[1]), add(terms[2], terms[3])))
        alpha3 = matvec(rot, _omega_dot(rot, w, inertia, tau, True, gyro_on))
        alpha_parent = sub(sub(alpha3, frame[4]), cross(frame[3], matvec(rot, w)))
        store3(a_local, i, mul(1.0 / frame[1], matvec_t(frame[0], a_world)))
        store3(alpha_local, i, matvec_t(frame[0], alpha_parent))


def local_accelerations(translation, rotation, velocity, omega_body, mass, inertia_body, force_world,
                        torque_world, gyroscopic="explicit", frame=None):
    """Instantaneous local (parent-frame) accelerations (a1, alpha1), each (B, 3), for output.

    a1 from the global-to-local conversion (module docstring); alpha1 = R2^T (alpha3 - alpha2 -
    omega2 x omega3) with alpha3 = R3 d(omega_body)/dt from Euler's equations (gyroscopic `off`
    drops omega x L, the other modes keep it).
    """
    batch = _check_dynamic(translation, rotation, velocity, omega_body, mass, inertia_body, force_world,
                           torque_world)
    choices.GYROSCOPIC.check(gyroscopic)
    a_local, alpha_local = np.empty((batch, 3)), np.empty((batch, 3))
    _local_accelerations_kernel(gyroscopic != "off", (translation, rotation, velocity, omega_body, mass, inertia_body,
                                                      force_world, torque_world),
                                *_moving_frames(frame, batch), a_local, alpha_local)
    return a_local, alpha_local
