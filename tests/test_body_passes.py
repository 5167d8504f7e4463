"""The compiled passes that replace numpy expressions in a sub-step give numpy's bits: the golden
hashes (tests/test_determinism.py) hold only if each does, so each is checked against the expression
it replaced, exactly (tolerance 0: the same operations in the same order), on values spread over
sixteen orders of magnitude, where a different order of the sums would show in the last bits."""
import numpy as np

from physics.dynamics.body_passes import WorldBodies, angular_momentum, impulse_changes, solve_rows


def _bodies(rng, count):
    bodies = WorldBodies.empty(count)
    for array in bodies:
        array[...] = rng.normal(size=array.shape) * 10.0 ** rng.uniform(-8, 8, size=array.shape)
    return bodies


def test_the_angular_momentum_is_solve_rows_bits():
    """L = (R I⁻¹ Rᵀ)⁻¹ ω per body: `solve_rows` on the angular half of the velocities."""
    rng = np.random.default_rng(3)
    bodies = _bodies(rng, 200)
    out = np.empty((200, 3))
    angular_momentum(bodies, out)
    assert np.array_equal(out, solve_rows(bodies.inverse_inertia, bodies.velocity[:, 3:]))


def test_an_impulse_changes_velocities_and_poses_as_numpy_wrote_it():
    """dv = [m⁻¹ P, I⁻¹ L] / h (numpy's multiply and einsum "bij,bj->bi", then the division) and
    moved = [dx, dθ], the sign of a zero included (an einsum sum starts from +0)."""
    rng = np.random.default_rng(4)
    count, h = 200, 1.0 / 240.0
    bodies = _bodies(rng, count)
    inverse_mass = rng.uniform(0.0, 3.0, count)
    dx, dtheta = rng.normal(size=(count, 3)), rng.normal(size=(count, 3))
    impulse = rng.normal(size=(count, 6)) * 10.0 ** rng.uniform(-8, 8, size=(count, 6))
    impulse[::7] = -0.0                 # rows whose products are all −0: numpy's sum gives +0
    dv, moved = np.full((count, 6), np.nan), np.full((count, 6), np.nan)
    impulse_changes(inverse_mass, bodies, dx, dtheta, impulse, np.array([h]), dv, moved)
    expected = np.empty((count, 6))
    np.multiply(inverse_mass[:, None], impulse[:, :3], out=expected[:, :3])
    np.einsum("bij,bj->bi", bodies.inverse_inertia, impulse[:, 3:], out=expected[:, 3:])
    expected /= h
    assert np.array_equal(dv.view(np.int64), expected.view(np.int64))
    assert np.array_equal(moved, np.concatenate([dx, dtheta], axis=1))
