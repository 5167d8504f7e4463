"""The stability readout (physics.dynamics.stability): Euler's Jacobian by dual numbers against finite
differences and the closed form, its eigenvalues about each principal axis against the analytic
ones, and the exact flip period against the T-handle simulated."""
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from physics.pipeline.simulation import Simulation
from physics.dynamics.stability import euler_jacobian, euler_rate, flip_period, spin_eigenvalues

SCENES = Path(__file__).parents[1] / "assets" / "scenes"
moments = st.lists(st.floats(0.1, 10.0), min_size=3, max_size=3)
rates = st.lists(st.floats(-10.0, 10.0), min_size=3, max_size=3)


def hat(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


@settings(max_examples=100, deadline=None)
@given(moments, rates)
def test_the_dual_number_jacobian_is_the_finite_difference_and_the_closed_form(inertia, omega):
    """Central differences with step 1e-5 err by h² |f'''| ≈ 1e-10 · (ω scale ≤ 10, I ratio ≤ 100):
    held to 1e-6. The closed form −I⁻¹ (hat(ω) I − hat(I ω)) is the same arithmetic up to
    round-off: 1e-12 relative to the largest entry."""
    inertia, omega = np.array(inertia), np.array(omega)
    A = euler_jacobian(inertia, omega)
    step = 1e-5
    numeric = np.stack([(euler_rate(inertia, omega + step * e) - euler_rate(inertia, omega - step * e)) / (2 * step)
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(A, numeric, atol=1e-6)
    closed = -np.diag(1.0 / inertia) @ (hat(omega) @ np.diag(inertia) - hat(inertia * omega))
    np.testing.assert_allclose(A, closed, rtol=0, atol=1e-12 * max(1.0, np.abs(closed).max()))


def test_eigenvalues_about_each_principal_axis_are_the_analytic_ones():
    """About axis k at ω₀: 0 and ±ω₀ √((I_k − I_i)(I_j − I_k)/(I_i I_j)); real about the
    intermediate axis (unstable), imaginary about the largest and the smallest (stable); to 1e-12."""
    inertia = np.array([1.0, 2.0, 3.0])
    for k in range(3):
        i, j = [a for a in range(3) if a != k]
        omega = np.zeros(3)
        omega[k] = 5.0
        square = 25.0 * (inertia[k] - inertia[i]) * (inertia[j] - inertia[k]) / (inertia[i] * inertia[j])
        expected = np.sort_complex(np.array([0.0, np.sqrt(complex(square)), -np.sqrt(complex(square))]))
        got = np.sort_complex(spin_eigenvalues(inertia, omega))
        np.testing.assert_allclose(got, expected, atol=1e-12)
        growth = spin_eigenvalues(inertia, omega)[-1].real
        assert (growth > 1.0) == (k == 1), (k, growth)


def test_the_flip_period_is_the_t_handles():
    """The shipped T-handle (I = 1, 2, 3; ω = (0.01, 5, 0)) simulated 30 s with lie-midpoint at
    1/60 s: the time between its flips (the intermediate component of ω changing sign, interpolated
    within a step) is the exact 2K(m)/rate, 5.266 s, to 0.5 % (lie-midpoint keeps E and |L|; its
    phase error at h ω = 0.08 is well below that)."""
    sim = Simulation.from_file(SCENES / "t_handle.toml")
    predicted = flip_period([1.0, 2.0, 3.0], [0.01, 5.0, 0.0])
    assert abs(predicted - 5.266) < 1e-3
    dt, times, values = sim.settings.dt, [], []
    for _ in range(round(30.0 / dt)):
        sim.step()
        R = sim.world_poses()[1][0]
        W = sim.world().angular_velocity[0]
        omega_world = np.array([W[2, 1], W[0, 2], W[1, 0]])
        values.append((R.T @ omega_world)[1])
        times.append(sim.time)
    values, times = np.array(values), np.array(times)
    k = np.flatnonzero(np.sign(values[:-1]) != np.sign(values[1:]))
    crossings = times[k] + dt * values[k] / (values[k] - values[k + 1])
    observed = np.diff(crossings)
    assert len(observed) >= 3
    np.testing.assert_allclose(observed, predicted, rtol=5e-3)


def test_no_flip_without_an_intermediate_axis_spin():
    assert flip_period([1.0, 2.0, 3.0], [0.0, 5.0, 0.0]) == np.inf      # exactly on the axis
    assert flip_period([1.0, 2.0, 2.0], [0.1, 5.0, 0.0]) == np.inf      # two equal moments: precession
    assert np.isfinite(flip_period([3.0, 1.0, 2.0], [0.0, 0.01, 5.0]))  # any order of the moments
