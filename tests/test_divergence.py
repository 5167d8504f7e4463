"""Divergence is caught in the step where it happens (`physics.pipeline.stages.DivergenceError`), names
the node, the step and the quantity, and stops the run until a reset or a restore."""
import numpy as np
import pytest

from physics import Simulation
from physics.io.scene import scene_from_dict
from physics.pipeline.stages import DIVERGENCE_SPEED, DivergenceError


def rocket(force=1e12, mass=1e-9):
    """One free body pushed by the largest force a scene may hold on the smallest mass a scene may
    hold: a = 1e21 m/s², so its speed passes DIVERGENCE_SPEED (1e7 m/s) within the first step."""
    return Simulation(scene_from_dict({"world": {"gravity": [0.0, 0.0, 0.0]}, "node": [
        {"name": "anchor"},
        {"name": "rocket", "motion": "dynamic", "mass": mass, "inertia": [1e-9, 1e-9, 1e-9],
         "applied_force": [force, 0.0, 0.0]}]}))


def test_a_runaway_body_stops_the_run_in_its_first_step_naming_node_step_and_quantity():
    sim = rocket()
    with pytest.raises(DivergenceError) as caught:
        sim.step(5)
    error = caught.value
    assert (error.node, error.step, error.quantity) == ("rocket", 1, "velocity")
    assert error.value > DIVERGENCE_SPEED
    assert "'rocket'" in str(error) and "step 1" in str(error) and "velocity" in str(error)
    assert sim.step_count == 0          # the step did not complete
    with pytest.raises(DivergenceError):
        sim.step(1)                     # stopped until reset or restore
    sim.reset()
    assert sim.diverged is None


def test_a_restore_clears_the_stop_and_the_state_before_is_finite():
    sim = rocket(force=1e3, mass=1.0)   # 1e3 m/s² reaches 1e7 m/s after 1e4 s = 6e5 steps: never here
    snap = sim.snapshot()
    sim.step(10)
    assert sim.diverged is None and np.isfinite(sim.world().velocity).all()
    sim.restore(snap)
    assert sim.step_count == 0


def test_non_finite_values_are_caught_as_such():
    """A NaN planted in a body's state (as a bad kernel would leave it) stops the next sub-step before
    the solver sees it; the message says 'nan'."""
    sim = Simulation.from_file("assets/scenes/car.toml")
    body = int(np.flatnonzero(sim.motion == "dynamic")[-1])
    sim.hierarchy.local.velocity[body] = np.nan
    with pytest.raises(DivergenceError, match="nan") as caught:
        sim.step(1)
    assert caught.value.node == sim.names[body]


def test_a_scene_that_would_make_millions_of_contacts_is_refused_at_load_with_a_message(tmp_path):
    """700 coincident boxes: 244,650 overlapping pairs, past the contact budget (PAIR_BUDGET =
    200,000): the scene is refused as it loads, naming the count, instead of at its first step;
    the runner exits 2 (bad input) with that one line and writes nothing."""
    import subprocess
    import sys

    from physics.constraints.solver import PAIR_BUDGET, ContactBudgetError
    nodes = [{"name": f"box{i}", "motion": "dynamic", "translation": [0.0, 0.5, 0.0],
              "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}} for i in range(700)]
    with pytest.raises(ContactBudgetError, match="244,650 shape pairs overlap at load") as caught:
        Simulation(scene_from_dict({"node": nodes}))
    assert caught.value.pairs == 700 * 699 // 2 > PAIR_BUDGET
    path = tmp_path / "heap.toml"
    path.write_text("".join(f'[[node]]\nname = "box{i}"\nmotion = "dynamic"\ntranslation = [0.0, 0.5, 0.0]\n'
                            'shape = { type = "box", size = [0.2, 0.2, 0.2] }\n' for i in range(700)))
    out = subprocess.run([sys.executable, "-m", "physics", "run", str(path), "--steps", "3", "--out",
                          str(tmp_path / "heap.npz")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and "contact budget" in out.stderr and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert not (tmp_path / "heap.npz").exists()


def test_ten_thousand_coincident_spheres_are_refused_before_their_pairs_are_listed():
    """10⁴ coincident spheres are 5·10⁷ overlapping pairs: listing them would take 1.8 GB before the
    contact budget refused them. The broad phase counts them first and refuses past the budget
    before it stores one (`candidate_pairs(..., budget)`), so the refusal costs what the import
    and the scene cost. Measured in a child process (its peak resident memory, which numba's own
    allocations count in too); the bound, 1 GB, is the issue's "no input makes any command exceed
    about 1 GB", with the child's imports about a quarter of it."""
    import subprocess
    import sys
    code = (
        "import resource\n"
        "from physics import Simulation\n"
        "from physics.io.scene import scene_from_dict\n"
        "from physics.constraints.solver import ContactBudgetError\n"
        "nodes = [{'name': f's{i}', 'motion': 'dynamic', 'translation': [0.0, 1.0, 0.0],\n"
        "          'shape': {'type': 'sphere', 'radius': 0.1}} for i in range(10_000)]\n"
        "try:\n"
        "    Simulation(scene_from_dict({'node': nodes}))\n"
        "except ContactBudgetError as error:\n"
        "    print(error.pairs, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    pairs, peak_kib = map(int, out.stdout.split())
    assert pairs == 10_000 * 9_999 // 2
    assert peak_kib < 1_000_000, f"peak {peak_kib / 1024:.0f} MiB"


@pytest.mark.parametrize("integrator", ["semi-implicit-euler", "implicit-midpoint", "rk4", "lie-midpoint"])
def test_the_in_pass_check_agrees_with_the_exact_test_at_the_limits(integrator):
    """The step kernels clear a body by squared norms against slightly shrunk squared limits
    (physics.dynamics.integrators `_within`) and leave the rest to `divergence`'s Euclidean norms: bodies
    whose speed, spin or distance lies a few ulps either side of its limit, or is NaN or inf, are
    flagged exactly where `divergence` flags them. Checked on the state before the step (found[3:]),
    so that the step's own motion does not move anything across a limit."""
    from physics.dynamics.integrators import advance_bodies, divergence
    length, speed = 1e7, 1e7
    cases = []
    for scale in (np.nextafter(1.0, 0.0), 1.0, np.nextafter(1.0, 2.0), 1 - 1e-10, 1 + 1e-10, 0.5):
        for quantity in range(3):       # velocity, omega_body, translation
            state = np.zeros((3, 3))
            state[quantity] = np.array([3.0, 4.0, 12.0]) / 13.0 * (speed if quantity < 2 else length) * scale
            cases.append(state)
    for bad in (np.nan, np.inf):
        state = np.zeros((3, 3))
        state[0, 1] = bad
        cases.append(state)
    for velocity, omega, translation in cases:
        one = lambda a: np.ascontiguousarray(a[None], dtype=float)   # noqa: E731
        bodies = (one(translation), one(np.eye(3)), one(velocity), one(omega), np.ones(1), np.ones((1, 3)),
                  np.zeros((1, 3)), np.zeros((1, 3)))
        exact = divergence(velocity, omega, True, translation, np.eye(3), length, speed)
        found = np.array([-1.0, 0.0, 0.0, -1.0, 0.0, 0.0])
        advance_bodies(bodies, 1e-9, integrator, "off", None, (length, speed), found)
        assert (found[3] >= 0) == (exact[0] >= 0), (velocity, omega, translation, exact, found)
        if exact[0] >= 0:
            assert found[4] == exact[0]


@pytest.mark.parametrize("integrator", ["semi-implicit-euler", "implicit-midpoint", "rk4", "lie-midpoint"])
def test_the_block_check_names_the_first_divergent_body_of_the_pass(integrator):
    """The step kernels clear a block of bodies at once where every component is within its limit
    / √3 (physics.dynamics.integrators `_check_block`) and test the others body by body. 700 bodies (three
    blocks of 256 and a part of one), most well within the limits, some with a component past the
    bound but within the limit, a few divergent: blocks that pass the quick test, blocks that fail
    it with no divergent body, and blocks with one. Before the step (found[3:]) and after a step of 1e-12 s
    (found[:3], which moves nothing across a limit drawn 1e-6 away from it), the body named is the
    first that `divergence` itself flags, or none where none is, in every trial: exact, since the
    quick test only decides where no body of the block can be divergent."""
    from physics.dynamics.integrators import advance_bodies, divergence
    length, speed = 1e7, 1e7
    rng = np.random.default_rng(7)
    for trial in range(30):
        n = 700
        state = rng.normal(scale=0.05, size=(3, n, 3))     # velocity, omega_body, translation, / limit
        rotation = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
        for _ in range(rng.integers(0, 4)):         # within the limit by its norm, past it / √3 in a component
            state[rng.integers(3), rng.integers(n)] = rng.uniform(0.6, 1.0 - 1e-6) * np.array([0.0, 0.6, 0.8])
        for _ in range(rng.integers(0, 3)):         # a few bodies past a limit by its norm, one component or NaN
            i, quantity = rng.integers(n), rng.integers(3)
            state[quantity, i] = rng.choice([1.0 + 1e-6, np.nan]) * np.array([0.6, 0.0, 0.8])
        if rng.random() < 0.3:
            rotation[rng.integers(n), rng.integers(3), rng.integers(3)] = np.inf
        state *= np.array([speed, speed, length])[:, None, None]
        velocity, omega, translation = (np.ascontiguousarray(a) for a in state)
        exact = [divergence(velocity[i], omega[i], True, translation[i], rotation[i], length, speed) for i in range(n)]
        first = next((i for i, e in enumerate(exact) if e[0] >= 0), -1)
        bodies = (translation, rotation, velocity, omega, np.ones(n), np.ones((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)))
        found = np.array([-1.0, 0.0, 0.0, -1.0, 0.0, 0.0])
        with np.errstate(invalid="ignore", over="ignore"):
            advance_bodies(bodies, 1e-12, integrator, "off", None, (length, speed), found)
        assert int(found[3]) == first and int(found[0]) == first, (trial, first, found)
        if first >= 0:
            assert found[4] == exact[first][0]
