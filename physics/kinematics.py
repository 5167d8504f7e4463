"""Kinematic local motion: constant local acceleration and angular acceleration (seed 000,
"Numerical Integration for Rotational Dynamics").

Conventions (docs/architecture.md): every quantity here is a node's *local* one, expressed in the
parent frame; `dR/dt = hat(omega_local) R`, rotations act on column vectors.

Over a step `h` with constant `a` and `alpha`:

    v' = v + a h,                 T' = T + (v + v') h / 2              (exact)
    omega' = omega + alpha h,     R' = exp(hat(Omega)) R               (Magnus expansion)
    Omega1 = (omega + omega') h / 2
    Omega2 = (1/12) alpha x omega h^3
    Omega3 = (1/240) alpha x (alpha x omega) h^5

`magnus1` uses Omega1 (local error O(h^3): 2nd order), `magnus2` Omega1 + Omega2 (4th order),
`magnus3` all three. The exponential is either exact (Rodrigues) or the seed's normalized
third-order quaternion exponential, `exp(X) ~ ((1 - |X|^2/2) + (1 - |X|^2/6) X) / norm` with
`X = Omega / 2`, applied as `q' = exp(X) q` (error < 1 % up to 90 degrees per step).

The scalar kernels below (`_exp_matrix`, `_magnus`, ...) are also used by `physics.integrators`
to extrapolate a moving parent frame over a step, so both share one implementation.
"""
import numpy as np
from numba import njit

ROTATION_UPDATES = {"magnus1": 1, "magnus2": 2, "magnus3": 3}
EXPONENTIALS = {"exact": 0, "truncated": 1}


@njit(cache=True, inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True)
def _magnus(omega, alpha, h, order, out):
    """Omega (the seed's Magnus vector, truncated after `order` terms) for constant `alpha`."""
    w0, w1, w2 = omega[0], omega[1], omega[2]
    a0, a1, a2 = alpha[0], alpha[1], alpha[2]
    out[0] = (w0 + 0.5 * a0 * h) * h
    out[1] = (w1 + 0.5 * a1 * h) * h
    out[2] = (w2 + 0.5 * a2 * h) * h
    if order >= 2:
        c0, c1, c2 = _cross(a0, a1, a2, w0, w1, w2)
        k = h * h * h / 12.0
        out[0] += k * c0
        out[1] += k * c1
        out[2] += k * c2
        if order >= 3:
            d0, d1, d2 = _cross(a0, a1, a2, c0, c1, c2)
            k = h ** 5 / 240.0
            out[0] += k * d0
            out[1] += k * d1
            out[2] += k * d2


@njit(cache=True)
def _exp_matrix(x, out):
    """out = exp(hat(x)) (Rodrigues); series coefficients below |x| = 1e-4 keep full precision."""
    t2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
    if t2 < 1e-8:
        a = 1.0 - t2 / 6.0 + t2 * t2 / 120.0
        b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
    else:
        t = np.sqrt(t2)
        a = np.sin(t) / t
        b = (1.0 - np.cos(t)) / t2
    _rotation_from_coefficients(x[0], x[1], x[2], a, b, out)


@njit(cache=True)
def _cayley_matrix(x0, x1, x2, out):
    """out = cay(x) = (1 - hat(x)/2)^-1 (1 + hat(x)/2) = 1 + (hat(x) + hat(x)^2 / 2) / (1 + |x|^2/4)."""
    a = 1.0 / (1.0 + 0.25 * (x0 * x0 + x1 * x1 + x2 * x2))
    _rotation_from_coefficients(x0, x1, x2, a, 0.5 * a, out)


@njit(cache=True, inline="always")
def _rotation_from_coefficients(x0, x1, x2, a, b, out):
    """out = 1 + a hat(x) + b hat(x)^2 (the shape of both exp and Cayley)."""
    out[0, 0] = 1.0 - b * (x1 * x1 + x2 * x2)
    out[1, 1] = 1.0 - b * (x0 * x0 + x2 * x2)
    out[2, 2] = 1.0 - b * (x0 * x0 + x1 * x1)
    out[0, 1] = -a * x2 + b * x0 * x1
    out[1, 0] = a * x2 + b * x0 * x1
    out[0, 2] = a * x1 + b * x0 * x2
    out[2, 0] = -a * x1 + b * x0 * x2
    out[1, 2] = -a * x0 + b * x1 * x2
    out[2, 1] = a * x0 + b * x1 * x2


@njit(cache=True)
def _exp_truncated_matrix(x, out):
    """out = the rotation of the seed's normalized third-order quaternion exponential of x/2."""
    h0, h1, h2 = 0.5 * x[0], 0.5 * x[1], 0.5 * x[2]
    n2 = h0 * h0 + h1 * h1 + h2 * h2
    w = 1.0 - 0.5 * n2
    s = 1.0 - n2 / 6.0
    norm = np.sqrt(w * w + s * s * n2)
    w /= norm
    s /= norm
    _matrix_from_quaternion(w, s * h0, s * h1, s * h2, out)


@njit(cache=True)
def _matrix_from_quaternion(w, x, y, z, out):
    """Rotation matrix of the unit quaternion (w, x, y, z) (Hamilton, active)."""
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - w * z)
    out[0, 2] = 2.0 * (x * z + w * y)
    out[1, 0] = 2.0 * (x * y + w * z)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - w * x)
    out[2, 0] = 2.0 * (x * z - w * y)
    out[2, 1] = 2.0 * (y * z + w * x)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit(cache=True)
def _rotation_update(omega, alpha, h, order, truncated, out):
    """out = exp(hat(Omega)) for the Magnus vector of (omega, alpha, h); out is (3, 3)."""
    big_omega = np.empty(3)
    _magnus(omega, alpha, h, order, big_omega)
    if truncated:
        _exp_truncated_matrix(big_omega, out)
    else:
        _exp_matrix(big_omega, out)


@njit(cache=True)
def _step_kinematic(translation, rotation, velocity, omega, acceleration, alpha, h, order, truncated):
    increment = np.empty((3, 3))
    rotated = np.empty((3, 3))
    for i in range(translation.shape[0]):
        _rotation_update(omega[i], alpha[i], h, order, truncated, increment)
        for r in range(3):
            for c in range(3):
                rotated[r, c] = (increment[r, 0] * rotation[i, 0, c] + increment[r, 1] * rotation[i, 1, c]
                                 + increment[r, 2] * rotation[i, 2, c])
        rotation[i] = rotated
        for k in range(3):
            v_new = velocity[i, k] + acceleration[i, k] * h
            translation[i, k] += 0.5 * (velocity[i, k] + v_new) * h
            velocity[i, k] = v_new
            omega[i, k] += alpha[i, k] * h


def _check_batch(**arrays):
    """The arrays as float64 views of one batch B; ValueError naming any bad shape or dtype."""
    batch = None
    for name, array in arrays.items():
        tail = (3, 3) if name.startswith("rotation") else (3,)
        if not isinstance(array, np.ndarray) or array.dtype != np.float64 or array.shape[-len(tail):] != tail \
                or array.ndim != len(tail) + 1 or not array.flags.c_contiguous:
            shape = getattr(array, "shape", None)
            dtype = getattr(array, "dtype", type(array).__name__)
            raise ValueError(f"{name}: got shape {shape} dtype {dtype}; expected a C-contiguous float64 array "
                             f"of shape (B, {', '.join(map(str, tail))})")
        if batch is None:
            batch = array.shape[0]
        elif array.shape[0] != batch:
            raise ValueError(f"{name}: got batch {array.shape[0]}; the other arrays have batch {batch}")
    return batch


def _check_choice(name, value, options):
    if value not in options:
        raise ValueError(f"{name}: got {value!r}; expected one of {', '.join(options)}")
    return options[value]


def step_kinematic(translation, rotation, velocity, omega_local, acceleration, alpha_local, dt,
                   rotation_update="magnus2", exponential="exact"):
    """Advance B kinematic nodes by `dt` in place (formulas in the module docstring, seed 000).

    translation, velocity, omega_local: (B, 3), rotation: (B, 3, 3) are updated; acceleration and
    alpha_local (B, 3) are the constant local accelerations.
    """
    _check_batch(translation=translation, rotation=rotation, velocity=velocity, omega_local=omega_local,
                 acceleration=acceleration, alpha_local=alpha_local)
    order = _check_choice("rotation_update", rotation_update, ROTATION_UPDATES)
    truncated = _check_choice("exponential", exponential, EXPONENTIALS)
    if not np.isfinite(dt):
        raise ValueError(f"dt: got {dt!r}; expected a finite number")
    _step_kinematic(translation, rotation, velocity, omega_local, acceleration, alpha_local, float(dt),
                    order, bool(truncated))


def magnus_vector(omega, alpha, dt, order=2):
    """Omega of the seed's Magnus expansion for constant `alpha`, batch (..., 3) -> (..., 3)."""
    omega, alpha = np.broadcast_arrays(np.asarray(omega, float), np.asarray(alpha, float))
    if omega.shape[-1:] != (3,):
        raise ValueError(f"omega, alpha: got shape {omega.shape}; expected (..., 3)")
    if order not in (1, 2, 3):
        raise ValueError(f"order: got {order!r}; expected 1, 2 or 3")
    dt = float(dt)
    big_omega = omega * dt + 0.5 * alpha * dt ** 2
    if order >= 2:
        alpha_x_omega = np.cross(alpha, omega)
        big_omega = big_omega + alpha_x_omega * dt ** 3 / 12.0
        if order >= 3:
            big_omega = big_omega + np.cross(alpha, alpha_x_omega) * dt ** 5 / 240.0
    return big_omega
