"""Integrators for dynamic rigid bodies moving relative to a (possibly moving, turning) parent.

Seeds: 000 "From Torque to Angular Acceleration", "The Dynamics of a Transform Hierarchy"
(force to local acceleration), "Numerical Integration for Rotational Dynamics"; 002 Part II §1-2.

State of body i (docs/architecture.md, "Integrators interface"): local translation `T1`, rotation
`R1`, velocity `v1 = dT1/dt` (parent frame), and `omega_body = R3^T omega3`, its angular velocity
relative to the world in body axes (`R3 = R2 R1` its world rotation). The parent's world motion
over the step (`R2, S2, a2, omega2, alpha2`, the `Frame`) is extrapolated with constant `a2` and
`alpha2`; `R2(t) = exp(hat(Omega(t))) R2` with the Magnus vector Omega1 + Omega2 (4th order).

Rotation. Euler's equations act on omega_body and the world rotation, whatever the parent:

    I d(omega_body)/dt = R3^T tau_world - g omega_body x (I omega_body),    dR3/dt = R3 hat(omega_body)

and the local rotation is read back as `R1 = R2(h)^T R3`. This is the seed's angular global-to-local
conversion `alpha1 = R2^T (alpha3 - alpha2 - omega2 x omega3)` integrated exactly (no inertial
torques to approximate), and it lets the conservative integrators conserve the world angular
momentum of a free body in any frame.

Translation. The seed's global-to-local conversion, with J2 = R2 S2 and tildes for parent-frame
vectors (`x~ = R2^T x`):

    a1 = R2^T (F/m - a2) / S2 - alpha~2 x T1 - omega~2 x (omega~2 x T1) - 2 omega~2 x v1
         (applied, frame,        Euler,          centrifugal,               Coriolis)

affine in (T1, v1): `a1 = c(t) + A(t) T1 + C(t) v1`, so the implicit schemes solve one 3x3
linear system, no Newton iteration.

Integrators (002 §2.1; orientation always moved on the group, by exp or Cayley, never by adding):
- explicit-euler:      v' = v + h f(x, v);  x' = x + h v;  R3' = R3 exp(h w)
- semi-implicit-euler: v' = v + h f(x, v);  x' = x + h v'; R3' = R3 exp(h w')    (symplectic Euler)
- implicit-euler:      v' = v + h f(x', v'); x' = x + h v'; R3' = R3 exp(h w')   (Newton; the torque's
                       dependence on R3' is iterated as a fixed point around the Newton solve)
- implicit-midpoint:   v' = v + h f(x_m, v_m) with x_m, v_m the averages; R3' = R3 exp(h w_m).
                       (002 writes an explicit midpoint predictor under this name; we solve the
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

Gyroscopic modes (physics.rigid_body): `off` g = 0; `explicit` g = 1; `implicit`: the backward-Euler
gyroscopic step on w first, then the integrator with g = 0. For lie-midpoint(-4) the term is
inherent: `explicit` and `implicit` both mean the conservative solve, `off` drops it (x = I^-1 L).
"""
from dataclasses import dataclass

import numpy as np
from numba import njit

from physics.kinematics import _cayley_matrix, _check_batch, _exp_matrix, _magnus, _matrix_from_quaternion
from physics.rigid_body import GYROSCOPIC, _gyroscopic_newton, _solve3

INTEGRATORS = {
    "explicit-euler": "explicit Euler (1st order, gains energy)",
    "semi-implicit-euler": "semi-implicit (symplectic) Euler, 1st order",
    "implicit-euler": "implicit Euler with Newton, 1st order, dissipative",
    "implicit-midpoint": "implicit midpoint rule (002 §2.1) with the exponential map, 2nd order",
    "rk4": "classical Runge-Kutta, 4th order reference",
    "lie-midpoint": "implicit midpoint + Cayley map, 2nd order, conserves E, |L| and world L of a free body",
    "lie-midpoint-4": "triple-jump composition of lie-midpoint, 4th order, same conservation",
}
_METHOD = {name: i for i, name in enumerate(INTEGRATORS)}

_G1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
_G2 = 1.0 - 2.0 * _G1


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
        arrays = {}
        for name, tail in (("rotation", (3, 3)), ("scale", ()), ("acceleration", (3,)),
                           ("angular_velocity", (3,)), ("angular_acceleration", (3,))):
            array = np.ascontiguousarray(getattr(self, name), dtype=float)
            if array.shape != (batch, *tail):
                raise ValueError(f"frame.{name}: got shape {array.shape}; expected {(batch, *tail)}")
            arrays[name] = array
        if np.any(arrays["scale"] <= 0):
            raise ValueError(f"frame.scale: got {arrays['scale'][arrays['scale'] <= 0][:3]}; expected > 0")
        return Frame(**arrays)


# ---------------------------------------------------------------------------------------------
# per-body kernels


@njit(cache=True)
def _frame_rotation(frame_rotation, frame_omega, frame_alpha, t, magnus, increment, out):
    """out = R2(t) = exp(hat(Omega1 + Omega2)) R2 (constant alpha2), or R2 itself at t = 0."""
    _magnus(frame_omega, frame_alpha, t, 2, magnus)
    _exp_matrix(magnus, increment)
    for r in range(3):
        for c in range(3):
            out[r, c] = (increment[r, 0] * frame_rotation[0, c] + increment[r, 1] * frame_rotation[1, c]
                         + increment[r, 2] * frame_rotation[2, c])


@njit(cache=True)
def _translation_coefficients(moving, fr, fs, fa, fw, fal, force, mass, t, c, a_mat, c_mat, r2, work33, work3):
    """c, A, C of a1 = c + A T1 + C v1 at time t into the step (module docstring); R2(t) into r2."""
    if not moving:
        for k in range(3):
            c[k] = force[k] / mass
        return
    _frame_rotation(fr, fw, fal, t, work3[0], work33, r2)
    w0 = fw[0] + fal[0] * t
    w1 = fw[1] + fal[1] * t
    w2 = fw[2] + fal[2] * t
    om = work3[1]
    al = work3[2]
    for k in range(3):
        om[k] = r2[0, k] * w0 + r2[1, k] * w1 + r2[2, k] * w2
        al[k] = r2[0, k] * fal[0] + r2[1, k] * fal[1] + r2[2, k] * fal[2]
        c[k] = (r2[0, k] * (force[0] / mass - fa[0]) + r2[1, k] * (force[1] / mass - fa[1])
                + r2[2, k] * (force[2] / mass - fa[2])) / fs
    # A = -hat(alpha) - hat(omega)^2 = -hat(alpha) - (omega omega^T - |omega|^2 1); C = -2 hat(omega)
    n2 = om[0] * om[0] + om[1] * om[1] + om[2] * om[2]
    for r in range(3):
        for k in range(3):
            a_mat[r, k] = -om[r] * om[k]
            c_mat[r, k] = 0.0
        a_mat[r, r] += n2
    a_mat[0, 1] += al[2]
    a_mat[0, 2] -= al[1]
    a_mat[1, 0] -= al[2]
    a_mat[1, 2] += al[0]
    a_mat[2, 0] += al[1]
    a_mat[2, 1] -= al[0]
    c_mat[0, 1] = 2.0 * om[2]
    c_mat[0, 2] = -2.0 * om[1]
    c_mat[1, 0] = -2.0 * om[2]
    c_mat[1, 2] = 2.0 * om[0]
    c_mat[2, 0] = 2.0 * om[1]
    c_mat[2, 1] = -2.0 * om[0]


@njit(cache=True)
def _local_acceleration(moving, c, a_mat, c_mat, x, v, out):
    for r in range(3):
        out[r] = c[r]
        if moving:
            for k in range(3):
                out[r] += a_mat[r, k] * x[k] + c_mat[r, k] * v[k]


@njit(cache=True)
def _translate_implicit(moving, c, a_mat, c_mat, x, v, h, theta, m, work3):
    """Solve (1 - theta h C - theta^2 h^2 A) u = v + theta h (c + A x) for u: theta = 1 gives the
    implicit Euler velocity v' (x' = x + h u); theta = 1/2 the midpoint velocity (v' = 2u - v)."""
    u = work3[0]
    if not moving:
        for k in range(3):
            u[k] = v[k] + theta * h * c[k]
    else:
        rhs = work3[1]
        for r in range(3):
            rhs[r] = v[r] + theta * h * (c[r] + a_mat[r, 0] * x[0] + a_mat[r, 1] * x[1] + a_mat[r, 2] * x[2])
            for k in range(3):
                m[r, k] = -theta * h * c_mat[r, k] - theta * theta * h * h * a_mat[r, k]
            m[r, r] += 1.0
        _solve3(m, rhs, u)
    for k in range(3):
        x[k] += h * u[k]
        v[k] = u[k] if theta == 1.0 else 2.0 * u[k] - v[k]


@njit(cache=True)
def _right_multiply(rot, m, tmp):
    """rot = rot m."""
    for r in range(3):
        for c in range(3):
            tmp[r, c] = rot[r, 0] * m[0, c] + rot[r, 1] * m[1, c] + rot[r, 2] * m[2, c]
    for r in range(3):
        for c in range(3):
            rot[r, c] = tmp[r, c]


@njit(cache=True)
def _rotate_by_exp(rot, w, h, increment, tmp, hw):
    """rot = rot exp(h hat(w)) (body-frame angular velocity)."""
    for k in range(3):
        hw[k] = h * w[k]
    _exp_matrix(hw, increment)
    _right_multiply(rot, increment, tmp)


@njit(cache=True)
def _omega_dot(rot, w, inertia, torque, has_torque, gyro_on, out):
    """out = (R^T tau - g w x I w) / I."""
    for k in range(3):
        out[k] = 0.0
        if has_torque:
            out[k] = rot[0, k] * torque[0] + rot[1, k] * torque[1] + rot[2, k] * torque[2]
    if gyro_on:
        l0, l1, l2 = inertia[0] * w[0], inertia[1] * w[1], inertia[2] * w[2]
        out[0] -= w[1] * l2 - w[2] * l1
        out[1] -= w[2] * l0 - w[0] * l2
        out[2] -= w[0] * l1 - w[1] * l0
    for k in range(3):
        out[k] /= inertia[k]


@njit(cache=True)
def _solve_omega(rot, w, inertia, torque, has_torque, gyro_on, h_force, h_rot, x, trial, work33, work3):
    """x with I x + h_force g x × I x = I w + h_force (R exp(h_rot x))^T tau.

    The torque-free part by Newton (rigid_body._gyroscopic_newton); the orientation dependence
    of the body torque, a perturbation of size h_force h_rot |tau|, by fixed-point iteration.
    """
    rhs, previous = work3[0], work3[1]
    g = h_force if gyro_on else 0.0
    for k in range(3):
        x[k] = w[k]
    for _ in range(30):
        for k in range(3):
            rhs[k] = inertia[k] * w[k]
        if has_torque:
            for r in range(3):
                for c in range(3):
                    trial[r, c] = rot[r, c]
            _rotate_by_exp(trial, x, h_rot, work33[0], work33[1], work3[2])
            for k in range(3):
                rhs[k] += h_force * (trial[0, k] * torque[0] + trial[1, k] * torque[1] + trial[2, k] * torque[2])
        for k in range(3):
            previous[k] = x[k]
        x[0], x[1], x[2] = _gyroscopic_newton(inertia[0], inertia[1], inertia[2], rhs[0], rhs[1], rhs[2], g,
                                              x[0], x[1], x[2])
        if not has_torque:
            break
        change = (x[0] - previous[0]) ** 2 + (x[1] - previous[1]) ** 2 + (x[2] - previous[2]) ** 2
        if change <= 1e-28 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) + 1e-300:
            break


@njit(cache=True)
def _lie_midpoint_rotation(rot, w, inertia, torque, has_torque, gyro_on, h, increment, tmp):
    """One kick-drift-kick lie-midpoint step of (R3, omega_body), in place (scalars: the hot path)."""
    i0, i1, i2 = inertia[0], inertia[1], inertia[2]
    l0, l1, l2 = i0 * w[0], i1 * w[1], i2 * w[2]
    if has_torque:  # kick: half the torque impulse, in the body frame at the start
        l0 += 0.5 * h * (rot[0, 0] * torque[0] + rot[1, 0] * torque[1] + rot[2, 0] * torque[2])
        l1 += 0.5 * h * (rot[0, 1] * torque[0] + rot[1, 1] * torque[1] + rot[2, 1] * torque[2])
        l2 += 0.5 * h * (rot[0, 2] * torque[0] + rot[1, 2] * torque[1] + rot[2, 2] * torque[2])
    if gyro_on:  # drift: x = omega at the midpoint, I x + (h/2) x × I x = L; then L <- 2 I x - L
        # start from the explicit midpoint guess: one or two Newton steps remain
        g0, g1, g2 = l0 / i0, l1 / i1, l2 / i2
        x0 = g0 - 0.5 * h * (g1 * l2 - g2 * l1) / i0
        x1 = g1 - 0.5 * h * (g2 * l0 - g0 * l2) / i1
        x2 = g2 - 0.5 * h * (g0 * l1 - g1 * l0) / i2
        x0, x1, x2 = _gyroscopic_newton(i0, i1, i2, l0, l1, l2, 0.5 * h, x0, x1, x2)
        l0, l1, l2 = 2.0 * i0 * x0 - l0, 2.0 * i1 * x1 - l1, 2.0 * i2 * x2 - l2
    else:
        x0, x1, x2 = l0 / i0, l1 / i1, l2 / i2
    _cayley_matrix(h * x0, h * x1, h * x2, increment)
    _right_multiply(rot, increment, tmp)
    if has_torque:  # kick: the other half, in the body frame at the end
        l0 += 0.5 * h * (rot[0, 0] * torque[0] + rot[1, 0] * torque[1] + rot[2, 0] * torque[2])
        l1 += 0.5 * h * (rot[0, 1] * torque[0] + rot[1, 1] * torque[1] + rot[2, 1] * torque[2])
        l2 += 0.5 * h * (rot[0, 2] * torque[0] + rot[1, 2] * torque[1] + rot[2, 2] * torque[2])
    w[0], w[1], w[2] = l0 / i0, l1 / i1, l2 / i2


@njit(cache=True)
def _quaternion_from_matrix(m, q):
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd: the largest of 4 candidates)."""
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr >= m[0, 0] and tr >= m[1, 1] and tr >= m[2, 2]:
        r = np.sqrt(1.0 + tr)
        q[0], q[1], q[2], q[3] = 0.5 * r, 0.5 * (m[2, 1] - m[1, 2]) / r, 0.5 * (m[0, 2] - m[2, 0]) / r, \
            0.5 * (m[1, 0] - m[0, 1]) / r
    elif m[0, 0] >= m[1, 1] and m[0, 0] >= m[2, 2]:
        r = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q[0], q[1], q[2], q[3] = 0.5 * (m[2, 1] - m[1, 2]) / r, 0.5 * r, 0.5 * (m[0, 1] + m[1, 0]) / r, \
            0.5 * (m[0, 2] + m[2, 0]) / r
    elif m[1, 1] >= m[2, 2]:
        r = np.sqrt(1.0 - m[0, 0] + m[1, 1] - m[2, 2])
        q[0], q[1], q[2], q[3] = 0.5 * (m[0, 2] - m[2, 0]) / r, 0.5 * (m[0, 1] + m[1, 0]) / r, 0.5 * r, \
            0.5 * (m[1, 2] + m[2, 1]) / r
    else:
        r = np.sqrt(1.0 - m[0, 0] - m[1, 1] + m[2, 2])
        q[0], q[1], q[2], q[3] = 0.5 * (m[1, 0] - m[0, 1]) / r, 0.5 * (m[0, 2] + m[2, 0]) / r, \
            0.5 * (m[1, 2] + m[2, 1]) / r, 0.5 * r


@njit(cache=True)
def _rk4_rotation_stage(q, w, inertia, torque, has_torque, gyro_on, dq, dw, trial):
    """dq = q (0, w) / 2 (body-frame w), dw = Euler's equations at the normalized q."""
    dq[0] = 0.5 * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2])
    dq[1] = 0.5 * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1])
    dq[2] = 0.5 * (q[0] * w[1] + q[3] * w[0] - q[1] * w[2])
    dq[3] = 0.5 * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0])
    if has_torque:
        n = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
        _matrix_from_quaternion(q[0] / n, q[1] / n, q[2] / n, q[3] / n, trial)
    _omega_dot(trial, w, inertia, torque, has_torque, gyro_on, dw)


@njit(cache=True)
def _rk4_rotation(rot, w, inertia, torque, has_torque, gyro_on, h, trial, work4, work3):
    q0, qs, kq, acc_q = work4[0], work4[1], work4[2], work4[3]
    kw, ws, acc_w = work3[0], work3[1], work3[2]
    _quaternion_from_matrix(rot, q0)
    for k in range(4):
        qs[k] = q0[k]
    for k in range(3):
        ws[k] = w[k]
    weights = (1.0, 2.0, 2.0, 1.0)
    offsets = (0.5, 0.5, 1.0)
    acc_q[:] = 0.0
    acc_w[:] = 0.0
    for stage in range(4):
        _rk4_rotation_stage(qs, ws, inertia, torque, has_torque, gyro_on, kq, kw, trial)
        for k in range(4):
            acc_q[k] += weights[stage] * kq[k]
        for k in range(3):
            acc_w[k] += weights[stage] * kw[k]
        if stage < 3:
            for k in range(4):
                qs[k] = q0[k] + offsets[stage] * h * kq[k]
            for k in range(3):
                ws[k] = w[k] + offsets[stage] * h * kw[k]
    for k in range(4):
        q0[k] += h / 6.0 * acc_q[k]
    for k in range(3):
        w[k] += h / 6.0 * acc_w[k]
    n = np.sqrt(q0[0] ** 2 + q0[1] ** 2 + q0[2] ** 2 + q0[3] ** 2)
    _matrix_from_quaternion(q0[0] / n, q0[1] / n, q0[2] / n, q0[3] / n, rot)


@njit(cache=True)
def _rk4_translation(moving, fr, fs, fa, fw, fal, force, mass, x, v, h, work33, work3):
    c, xs, vs, acc_x, acc_v, kv = work3[0], work3[1], work3[2], work3[3], work3[4], work3[5]
    a_mat, c_mat = work33[0], work33[1]
    weights = (1.0, 2.0, 2.0, 1.0)
    times = (0.0, 0.5, 0.5, 1.0)
    for k in range(3):
        xs[k], vs[k], acc_x[k], acc_v[k] = x[k], v[k], 0.0, 0.0
    for stage in range(4):
        if stage != 2:  # stages 2 and 3 share the time h/2
            _translation_coefficients(moving, fr, fs, fa, fw, fal, force, mass, times[stage] * h, c, a_mat, c_mat,
                                          work33[2], work33[3], work3[6:])
        _local_acceleration(moving, c, a_mat, c_mat, xs, vs, kv)
        for k in range(3):
            acc_x[k] += weights[stage] * vs[k]
            acc_v[k] += weights[stage] * kv[k]
        if stage < 3:
            step = times[stage + 1] * h
            for k in range(3):
                xs[k] = x[k] + step * vs[k]
                vs[k] = v[k] + step * kv[k]
    for k in range(3):
        x[k] += h / 6.0 * acc_x[k]
        v[k] += h / 6.0 * acc_v[k]


@njit(cache=True)
def _step(method, gyro, h, translation, rotation, velocity, omega_body, mass, inertia, force, torque,
          moving, fr_all, fs_all, fa_all, fw_all, fal_all):
    # work arrays, allocated once per call; helpers get the rows they need (no aliasing)
    rot, r2, trial, a_mat, c_mat = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    work33, work3, work4 = np.empty((4, 3, 3)), np.empty((9, 3)), np.empty((4, 4))
    c, kv, kw, ws = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for i in range(translation.shape[0]):
        j = i if moving else 0
        fr, fs, fa, fw, fal = fr_all[j], fs_all[j], fa_all[j], fw_all[j], fal_all[j]
        x, v, w, inert, tau, f, m = translation[i], velocity[i], omega_body[i], inertia[i], torque[i], force[i], mass[i]
        has_torque = tau[0] != 0.0 or tau[1] != 0.0 or tau[2] != 0.0
        # world rotation R3 = R2 R1
        if moving:
            for r in range(3):
                for k in range(3):
                    rot[r, k] = fr[r, 0] * rotation[i, 0, k] + fr[r, 1] * rotation[i, 1, k] + fr[r, 2] * rotation[i, 2, k]
        else:
            for r in range(3):
                for k in range(3):
                    rot[r, k] = rotation[i, r, k]
        gyro_on = gyro != 0
        if gyro == 2 and method < 5:
            w[0], w[1], w[2] = _gyroscopic_newton(inert[0], inert[1], inert[2], inert[0] * w[0], inert[1] * w[1],
                                                  inert[2] * w[2], h, w[0], w[1], w[2])
            gyro_on = False

        if method == 0 or method == 1:
            _translation_coefficients(moving, fr, fs, fa, fw, fal, f, m, 0.0, c, a_mat, c_mat, r2, work33[0], work3)
            _local_acceleration(moving, c, a_mat, c_mat, x, v, kv)
            _omega_dot(rot, w, inert, tau, has_torque, gyro_on, kw)
            if method == 0:
                _rotate_by_exp(rot, w, h, work33[0], work33[1], work3[0])
            for k in range(3):
                if method == 0:
                    x[k] += h * v[k]
                v[k] += h * kv[k]
                if method == 1:
                    x[k] += h * v[k]
                w[k] += h * kw[k]
            if method == 1:
                _rotate_by_exp(rot, w, h, work33[0], work33[1], work3[0])
        elif method == 2 or method == 3:
            theta = 1.0 if method == 2 else 0.5
            _translation_coefficients(moving, fr, fs, fa, fw, fal, f, m, theta * h, c, a_mat, c_mat, r2,
                                      work33[0], work3)
            _translate_implicit(moving, c, a_mat, c_mat, x, v, h, theta, work33[0], work3)
            _solve_omega(rot, w, inert, tau, has_torque, gyro_on, theta * h, theta * h, ws, trial, work33, work3)
            for k in range(3):
                w[k] = ws[k] if method == 2 else 2.0 * ws[k] - w[k]
            _rotate_by_exp(rot, ws, h, work33[0], work33[1], work3[0])
        elif method == 4:
            _rk4_translation(moving, fr, fs, fa, fw, fal, f, m, x, v, h, work33, work3)
            _rk4_rotation(rot, w, inert, tau, has_torque, gyro_on, h, trial, work4, work3)
        else:
            start = 0.0
            for sub in range(1 if method == 5 else 3):
                hs = h if method == 5 else (_G2 * h if sub == 1 else _G1 * h)
                if moving:
                    _translation_coefficients(moving, fr, fs, fa, fw, fal, f, m, start + 0.5 * hs, c, a_mat, c_mat,
                                              r2, work33[0], work3)
                    _translate_implicit(moving, c, a_mat, c_mat, x, v, hs, 0.5, work33[0], work3)
                else:  # constant acceleration: the midpoint rule is exact; inlined, this is the hot path
                    for k in range(3):
                        dv = hs * f[k] / m
                        x[k] += hs * (v[k] + 0.5 * dv)
                        v[k] += dv
                _lie_midpoint_rotation(rot, w, inert, tau, has_torque, gyro_on, hs, work33[0], work33[1])
                start += hs

        # local rotation R1 = R2(h)^T R3
        if moving:
            _frame_rotation(fr, fw, fal, h, work3[0], work33[0], r2)
            for r in range(3):
                for k in range(3):
                    rotation[i, r, k] = r2[0, r] * rot[0, k] + r2[1, r] * rot[1, k] + r2[2, r] * rot[2, k]
        else:
            for r in range(3):
                for k in range(3):
                    rotation[i, r, k] = rot[r, k]


# ---------------------------------------------------------------------------------------------
# public batch functions


def _check_dynamic(translation, rotation, velocity, omega_body, mass, inertia_body, force_world, torque_world):
    batch = _check_batch(translation=translation, rotation=rotation, velocity=velocity, omega_body=omega_body,
                         inertia_body=inertia_body, force_world=force_world, torque_world=torque_world)
    if not isinstance(mass, np.ndarray) or mass.dtype != np.float64 or mass.shape != (batch,):
        raise ValueError(f"mass: got shape {getattr(mass, 'shape', None)} dtype {getattr(mass, 'dtype', None)}; "
                         f"expected float64 of shape ({batch},)")
    if np.any(mass <= 0) or np.any(inertia_body <= 0):
        raise ValueError(f"mass, inertia_body: got a value <= 0 (min mass {mass.min(initial=1.0)}, "
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
    if integrator not in _METHOD:
        raise ValueError(f"integrator: got {integrator!r}; expected one of {', '.join(INTEGRATORS)}")
    if gyroscopic not in GYROSCOPIC:
        raise ValueError(f"gyroscopic: got {gyroscopic!r}; expected one of {', '.join(GYROSCOPIC)}")
    if not np.isfinite(dt) or dt < 0:
        raise ValueError(f"dt: got {dt!r}; expected a finite number >= 0")
    moving = frame is not None
    frame = frame.checked(batch) if moving else _IDENTITY
    _step(_METHOD[integrator], GYROSCOPIC[gyroscopic], float(dt), translation, rotation, velocity, omega_body,
          mass, inertia_body, force_world, torque_world, moving, frame.rotation, frame.scale, frame.acceleration,
          frame.angular_velocity, frame.angular_acceleration)


_IDENTITY = Frame.world(1)


def _world(frame, batch):
    return Frame.world(batch) if frame is None else frame.checked(batch)


def inertial_accelerations(translation, velocity, frame=None):
    """The four inertial accelerations of each body in the world frame (seed 000), dict of (B, 3):

    frame = -a2, euler = -alpha2 x r, centrifugal = -omega2 x (omega2 x r), coriolis = -2 omega2 x (J2 v1),
    with r = J2 T1 and J2 = R2 S2. They are zero for bodies whose parent is the world.
    """
    batch = _check_batch(translation=translation, velocity=velocity)
    f = _world(frame, batch)
    j2 = f.rotation * f.scale[:, None, None]
    r = np.einsum("bij,bj->bi", j2, translation)
    v_rel = np.einsum("bij,bj->bi", j2, velocity)
    omega, alpha = f.angular_velocity, f.angular_acceleration
    return {
        "frame": -f.acceleration,
        "euler": -np.cross(alpha, r),
        "centrifugal": -np.cross(omega, np.cross(omega, r)),
        "coriolis": -2.0 * np.cross(omega, v_rel),
    }


def omega_local_from_body(rotation, omega_body, frame=None):
    """omega_local = R1 omega_body - R2^T omega2 (parent frame), batch (B, 3)."""
    batch = _check_batch(rotation=rotation, omega_body=omega_body)
    f = _world(frame, batch)
    return (np.einsum("bij,bj->bi", rotation, omega_body)
            - np.einsum("bji,bj->bi", f.rotation, f.angular_velocity))


def omega_body_from_local(rotation, omega_local, frame=None):
    """omega_body = R1^T (omega_local + R2^T omega2), the inverse of omega_local_from_body."""
    batch = _check_batch(rotation=rotation, omega_local=omega_local)
    f = _world(frame, batch)
    omega_parent = np.einsum("bji,bj->bi", f.rotation, f.angular_velocity)
    return np.einsum("bji,bj->bi", rotation, omega_local + omega_parent)


def local_accelerations(translation, rotation, velocity, omega_body, mass, inertia_body, force_world,
                        torque_world, gyroscopic="explicit", frame=None):
    """Instantaneous local (parent-frame) accelerations (a1, alpha1), each (B, 3), for output.

    a1 from the global-to-local conversion (module docstring); alpha1 = R2^T (alpha3 - alpha2 -
    omega2 x omega3) with alpha3 = R3 d(omega_body)/dt from Euler's equations (gyroscopic `off`
    drops omega x L, the other modes keep it).
    """
    from physics.rigid_body import omega_body_dot

    batch = _check_dynamic(translation, rotation, velocity, omega_body, mass, inertia_body, force_world,
                           torque_world)
    f = _world(frame, batch)
    terms = inertial_accelerations(translation, velocity, f)
    a_world = force_world / mass[:, None] + sum(terms.values())
    a_local = np.einsum("bji,bj->bi", f.rotation, a_world) / f.scale[:, None]
    r3 = f.rotation @ rotation
    torque_body = np.einsum("bji,bj->bi", r3, torque_world)
    alpha3 = np.einsum("bij,bj->bi", r3, omega_body_dot(omega_body, inertia_body, torque_body, gyroscopic))
    omega3 = np.einsum("bij,bj->bi", r3, omega_body)
    alpha_parent = alpha3 - f.angular_acceleration - np.cross(f.angular_velocity, omega3)
    return a_local, np.einsum("bji,bj->bi", f.rotation, alpha_parent)
