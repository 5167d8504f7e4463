"""Why a spinning body flips: the stability of torque-free rotation, by dual numbers.

Conventions: `inertia` (..., 3) principal moments, `omega_body` (..., 3) the angular velocity in
the body's principal axes (rad/s), batch-first.

Euler's equations of a free rigid body ("From Torque to Angular Acceleration… Correctly.",
docs/references.md), in principal axes:

    ω̇ = f(ω) = −I⁻¹ (ω × I ω)

Their Jacobian A = ∂f/∂ω at the current ω is computed by forward-mode automatic differentiation
("Automatically Computing the Derivatives of a Vector Field using Dual Numbers": three evaluations
of f with the seeds e_j, `physics.math.dual.jacobian`). Near a steady spin ω₀ e_k a perturbation grows as
e^(λt) with λ the eigenvalues of A: 0 along the spin and ±ω₀ √((I_k − I_i)(I_j − I_k) / (I_i I_j))
across it. About the largest or the smallest axis the product is negative (the perturbation
circles: stable); about the intermediate axis it is positive, one λ is real and positive, and the
body leaves its spin: the intermediate-axis theorem, the T-handle's flips (the Dzhanibekov effect).

The time between flips, exactly (Landau & Lifshitz, "Mechanics" §37): with energy E = ½ ω·Iω and
|L|² = M² = |Iω|², moments I₁ < I₂ < I₃, ω moves on Jacobi elliptic functions of
τ = rate·t and parameter m; the intermediate component is an sn, which changes sign every 2K(m) of
τ, so the body flips every 2K(m) / rate, where

    M² > 2E I₂:  rate² = (I₃ − I₂)(M² − 2E I₁) / (I₁I₂I₃),  m = (I₂ − I₁)(2E I₃ − M²) / ((I₃ − I₂)(M² − 2E I₁))
    M² < 2E I₂:  rate² = (I₂ − I₁)(2E I₃ − M²) / (I₁I₂I₃),  m = (I₃ − I₂)(M² − 2E I₁) / ((I₂ − I₁)(2E I₃ − M²))

For a small perturbation of a spin about the intermediate axis, rate is the growth rate λ above
and K(m) ≈ ½ ln(16 / (1 − m)): the flips come every (1/λ) ln(16/(1 − m)), slower the purer the spin.
"""
import numpy as np
from scipy.special import ellipk

from physics.math.dual import jacobian

__all__ = ["euler_rate", "euler_jacobian", "spin_eigenvalues", "flip_period"]


def euler_rate(inertia, omega_body):
    """f(ω) = −I⁻¹ (ω × I ω) (..., 3): the torque-free angular acceleration, principal axes. Written
    with numpy operations only, so that it runs on `physics.math.dual.Dual` numbers as well."""
    L = inertia * omega_body
    return -np.cross(omega_body, L) / inertia


def euler_jacobian(inertia, omega_body):
    """A (..., 3, 3) = ∂f/∂ω of `euler_rate` at omega_body, by dual numbers (three seeds)."""
    inertia = np.asarray(inertia, float)
    return jacobian(lambda w: euler_rate(inertia, w), np.asarray(omega_body, float))


def spin_eigenvalues(inertia, omega_body):
    """The eigenvalues (3,) complex of `euler_jacobian` at omega_body, sorted by real part (the
    growth rate of the fastest-growing perturbation last: positive about the intermediate axis)."""
    values = np.linalg.eigvals(euler_jacobian(inertia, omega_body))
    return values[np.lexsort((values.imag, values.real))]


def flip_period(inertia, omega_body):
    """Seconds between two flips of the torque-free body (module docstring: 2K(m)/rate), or inf
    when it never flips: a spin exactly about a principal axis, or a body with two equal moments
    (its motion is then a steady precession)."""
    inertia = np.asarray(inertia, float)
    omega_body = np.asarray(omega_body, float)
    order = np.argsort(inertia)
    I1, I2, I3 = inertia[order]
    L = inertia * omega_body
    energy2 = float(np.dot(omega_body, L))            # 2E
    M2 = float(np.dot(L, L))
    if not (I1 < I2 < I3) or M2 == 0.0:
        return np.inf
    if M2 > energy2 * I2:
        rate2 = (I3 - I2) * (M2 - energy2 * I1) / (I1 * I2 * I3)
        top, bottom = (I2 - I1) * (energy2 * I3 - M2), (I3 - I2) * (M2 - energy2 * I1)
    else:
        rate2 = (I2 - I1) * (energy2 * I3 - M2) / (I1 * I2 * I3)
        top, bottom = (I3 - I2) * (M2 - energy2 * I1), (I2 - I1) * (energy2 * I3 - M2)
    if not (rate2 > 0.0 and bottom > 0.0 and top > 0.0):
        return np.inf
    m = top / bottom
    if not m < 1.0:      # the separatrix: the spin takes forever to leave the axis
        return np.inf
    return float(2.0 * ellipk(m) / np.sqrt(rate2))
