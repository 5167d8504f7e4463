"""Kinematic local motion: constant local acceleration and angular acceleration ("Numerical
Integration for Rotational Dynamics", docs/references.md).

Conventions (docs/architecture.md): every quantity here is a node's *local* one, expressed in the
parent frame; `dR/dt = hat(omega_local) R`, rotations act on column vectors.

Over a step `h` with constant `a` and `alpha`:

    v' = v + a h,                 T' = T + (v + v') h / 2              (exact)
    omega' = omega + alpha h,     R' = exp(hat(Omega)) R               (Magnus expansion)
    Omega1 = (omega + omega') h / 2
    Omega2 = (1/12) alpha x omega h^3
    Omega3 = (1/240) alpha x (alpha x omega) h^5

`magnus1` uses Omega1 (local error O(h^3): 2nd order), `magnus2` Omega1 + Omega2 (4th order),
`magnus3` all three. The exponential is either exact (Rodrigues) or the article's normalized
third-order quaternion exponential, `exp(X) ~ ((1 - |X|^2/2) + (1 - |X|^2/6) X) / norm` with
`X = Omega / 2`, applied as `q' = exp(X) q` (error < 1 % up to 90 degrees per step).

The compiled scalar rotation helpers live in `physics.math.rotation_kernels` (shared with
`physics.dynamics.integrators`, which extrapolates a moving parent frame with the same Magnus vector).
"""
import numpy as np
from physics.core import choices
from physics.core.choices import EXPONENTIAL_TRUNCATED
from physics.core.compiled import kernel

from physics.math.rotation import cross
from physics.math.rotation_kernels import add, exp_so3, exp_truncated_matrix, load3, load33, magnus, matmul, mul, \
    store3, store33

ROTATION_UPDATES = choices.ROTATION_UPDATE.codes     # name -> number of Magnus terms (physics.core.choices)
EXPONENTIALS = choices.EXPONENTIAL.codes


@kernel
def _step_kinematic(translation, rotation, velocity, omega, acceleration, alpha, h, order, truncated):
    """One loop over nodes on scalars (physics.math.rotation_kernels): no per-node arrays."""
    for i in range(translation.shape[0]):
        w, al = load3(omega, i), load3(alpha, i)
        big_omega = magnus(w, al, h, order)
        increment = exp_truncated_matrix(big_omega) if truncated else exp_so3(big_omega)
        store33(rotation, i, matmul(increment, load33(rotation, i)))
        v, a = load3(velocity, i), load3(acceleration, i)
        v_new = add(v, mul(h, a))
        store3(translation, i, add(load3(translation, i), mul(0.5 * h, add(v, v_new))))
        store3(velocity, i, v_new)
        store3(omega, i, add(w, mul(h, al)))


def check_batch(**arrays):
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


def step_kinematic(translation, rotation, velocity, omega_local, acceleration, alpha_local, dt,
                   rotation_update="magnus2", exponential="exact"):
    """Advance B kinematic nodes by `dt` in place (formulas in the module docstring).

    translation, velocity, omega_local: (B, 3), rotation: (B, 3, 3) are updated; acceleration and
    alpha_local (B, 3) are the constant local accelerations.
    """
    check_batch(translation=translation, rotation=rotation, velocity=velocity, omega_local=omega_local,
                 acceleration=acceleration, alpha_local=alpha_local)
    choices.ROTATION_UPDATE.check(rotation_update)
    choices.EXPONENTIAL.check(exponential)
    if not np.isfinite(dt):
        raise ValueError(f"dt: got {dt!r}; expected a finite number")
    advance_kinematic(translation, rotation, velocity, omega_local, acceleration, alpha_local, dt, rotation_update,
                      exponential)


def advance_kinematic(translation, rotation, velocity, omega_local, acceleration, alpha_local, dt,
                      rotation_update="magnus2", exponential="exact"):
    """`step_kinematic` on arguments known to be valid (C-contiguous float64 arrays of one batch,
    known names, finite dt): `physics.pipeline.simulation` steps its own checked state with it."""
    _step_kinematic(translation, rotation, velocity, omega_local, acceleration, alpha_local, float(dt),
                    ROTATION_UPDATES[rotation_update], EXPONENTIALS[exponential] == EXPONENTIAL_TRUNCATED)


def magnus_vector(omega, alpha, dt, order=2):
    """Omega of the Magnus expansion for constant `alpha`, batch (..., 3) -> (..., 3)."""
    omega, alpha = np.broadcast_arrays(np.asarray(omega, float), np.asarray(alpha, float))
    if omega.shape[-1:] != (3,):
        raise ValueError(f"omega, alpha: got shape {omega.shape}; expected (..., 3)")
    if order not in (1, 2, 3):
        raise ValueError(f"order: got {order!r}; expected 1, 2 or 3")
    dt = float(dt)
    big_omega = omega * dt + 0.5 * alpha * dt ** 2
    if order >= 2:
        alpha_x_omega = cross(alpha, omega)
        big_omega = big_omega + alpha_x_omega * dt ** 3 / 12.0
        if order >= 3:
            big_omega = big_omega + cross(alpha, alpha_x_omega) * dt ** 5 / 240.0
    return big_omega
