"""RATTLE's rotor drift (`physics.constraints.rattle.rotor_drift`): the implicit midpoint of the free
rotor, I y + (h/2) y × (I y) = L, solved by Newton until an update is below 1e-9 |y|
(DRIFT_CONVERGED), at most DRIFT_ITERATIONS.

Checked against the same equation solved independently in extended precision (numpy's long double,
a 64-bit mantissa on x86: eleven more bits than a float's), by Newton run to its fixed point."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from physics.constraints.rattle import rotor_drift  # noqa: E402


def _reference(inertia, momentum, h):
    """y of I y + (h/2) y × (I y) = L in long double: Newton from I⁻¹ L, 40 iterations (quadratic:
    a fixed point long before)."""
    I = inertia.astype(np.longdouble)
    L = momentum.astype(np.longdouble)
    half = np.longdouble(h) / 2
    y = np.array([np.longdouble(v) for v in np.linalg.solve(inertia, momentum)])
    def hat(v):
        return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]], dtype=np.longdouble)

    for _ in range(40):
        Iy = I @ y
        F = Iy + half * np.cross(y, Iy) - L
        jacobian = I + half * (hat(y) @ I - hat(Iy))
        # (a 3 × 3 solve by Cramer's rule keeps the long doubles: numpy's solve would round to float)
        adjugate = np.array([[jacobian[(r + 1) % 3, (c + 1) % 3] * jacobian[(r + 2) % 3, (c + 2) % 3]
                              - jacobian[(r + 1) % 3, (c + 2) % 3] * jacobian[(r + 2) % 3, (c + 1) % 3]
                              for r in range(3)] for c in range(3)], dtype=np.longdouble)
        y = y - adjugate @ F / (jacobian[0] @ adjugate[:, 0])
    return y


@pytest.mark.parametrize("turn", [0.01, 0.3, 1.0])
def test_the_drift_solves_the_implicit_midpoint_to_round_off(turn):
    """Links of three distinct principal inertias (ratios up to 30) turned at random, h|y| about
    `turn`: y within 8 float epsilons of |y| of the long-double root (Newton is quadratic, so once
    an update is below 1e-9 |y| what is left is of order 1e-18 |y|, and the rest is the round-off of
    the last 3 × 3 solve and update; measured within 4)."""
    rng = np.random.default_rng(7)
    h = 1.0 / 480.0
    worst = 0.0
    for _ in range(200):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        inertia = Q @ np.diag(rng.uniform(1e-3, 3e-2, 3)) @ Q.T
        omega = rng.normal(size=3)
        omega *= turn / h / np.linalg.norm(omega)
        momentum = inertia @ omega
        y = np.array(rotor_drift(inertia, (momentum[0], momentum[1], momentum[2]), h))
        reference = _reference(inertia, momentum, h)
        worst = max(worst, float(np.max(np.abs(y - reference)) / np.max(np.abs(reference))))
    assert worst <= 8 * np.finfo(float).eps, worst


def test_no_momentum_no_drift():
    """L = 0: y = 0 exactly (the first update is zero, and stops it)."""
    y = rotor_drift(np.diag([1e-3, 2e-3, 3e-3]), (0.0, 0.0, 0.0), 1.0 / 60.0)
    assert y == (0.0, 0.0, 0.0)
