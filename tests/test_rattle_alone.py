"""A sub-step whose rows are the joints' equalities alone leaves out the velocity solve
(`physics.constraints.solver.SceneSolver.leave_out_solve`): RATTLE's projections hold those rows
exactly, and the solve's impulses along them are only the position projection's first guess.

Checked against the step with the solve (the same scene stepped with `_equalities_alone` answering
no): the bodies end where they did, to the projections' round-off, and the solve is left out only
where nothing but such rows of a forest of joints is solved."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation  # noqa: E402
from physics.constraints import solver as solver_module  # noqa: E402
from physics.constraints.joint_graph import forest  # noqa: E402

SCENES = ROOT / "assets" / "scenes"
STEPS = 320


def _run(scene, monkeypatch=None):
    """(world translations, world velocities, the last prepare's `alone`) after STEPS steps."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(STEPS)
    world = sim._work.hierarchy.world_state
    return world.translation.copy(), world.velocity.copy(), sim._work.solver.step.alone, sim


@pytest.mark.parametrize("scene", ["pendulum", "double_pendulum"])
def test_left_out_solve_ends_where_the_solved_step_does(scene, monkeypatch):
    """Tolerance 1e-9 m and 1e-8 m/s: each projection stops within TOLERANCE (1e-12 m) of the
    same root, and the two runs differ by where in that band each stopped (measured 2e-11 m after
    320 steps; these scenes are not chaotic over 2.7 s, so nothing amplifies it)."""
    x, v, alone, _ = _run(scene)
    assert alone, f"{scene}: its rows are hinge equalities alone, yet the solve ran"
    monkeypatch.setattr(solver_module, "_equalities_alone", lambda *args: False)
    x_solved, v_solved, alone_solved, _ = _run(scene)
    assert not alone_solved
    np.testing.assert_allclose(x, x_solved, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v, v_solved, rtol=0, atol=1e-8)


def test_left_out_solve_leaves_no_residual_and_no_stored_impulse():
    _, _, alone, sim = _run("pendulum")
    assert alone
    assert sim.solver_residual().size == 0
    assert not sim._work.solver.joints.impulse.any()


def test_a_net_keeps_its_solve(tmp_path):
    """A net's loops make its rows nearly redundant, and RATTLE's Newton there converges from
    where the solve's guess starts it (`SceneSolver.leave_out_solve`): make_scenes.py's 4 × 4 net
    keeps its velocity solve."""
    import subprocess
    path = tmp_path / "net.toml"
    subprocess.run([sys.executable, str(SCENES / "make_scenes.py"), "net", "--side", "4", "--out", str(path)],
                   check=True, capture_output=True)
    sim = Simulation.from_file(path)
    sim.step(5)
    assert not sim._work.solver.step.alone
    assert sim.solver_residual().size


@pytest.mark.parametrize("body, expected", [
    ([[-1, 0], [0, 1], [1, 2]], True),              # a chain hooked at one end
    ([[-1, 0], [0, 1], [1, -1]], False),            # hooked at both: a loop through the world
    ([[0, 1], [1, 2], [2, 0]], False),              # a loop of bodies
    ([[-1, 0], [0, 1], [0, 1], [0, 1]], True),      # a hinge per axis between two bodies: one edge
    ([[-1, 0], [-1, 1]], True),                     # two pendulums on the world
])
def test_forest(body, expected):
    assert forest(np.array(body)) is expected


@pytest.mark.parametrize("scene", ["ant", "newtons_cradle", "iiwa"])
def test_solve_kept_where_other_rows_are(scene):
    """The ant stands on contacts (and its hinges have limits and armatures), the cradle's balls
    touch, the iiwa's joints have limits and dampers (and it touches no floor yet after 60 steps):
    each has rows beyond the joints' equalities."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(60)
    assert not sim._work.solver.step.alone


def test_a_dragged_chain_is_judged_by_its_curvature():
    """A sub-step with no velocity solve is retried for its drift's curvature alone: the velocity
    an input gave before the step (here a mouse joint dragging the chain by its middle link, up and
    down 0.5 m) is carried along the rows' tangent, which RATTLE's first Newton step takes whole
    (`physics.pipeline.retry._start_error`). Judged by its whole start error it was taken again at
    every one of 120 steps; the solved step takes no retry either."""
    from physics.dynamics.mouse_joint import MouseJoint
    sim = Simulation.from_file(SCENES / "chain.toml")
    link = list(sim.names).index("link_10")
    start = sim.world_poses()[0][link].copy()
    pull = MouseJoint.grab(sim, link, start)
    for k in range(120):
        force, point = pull.force(sim, start + np.array([0.0, 0.5 * np.sin(k / 30), 0.0]))
        sim.apply_force(link, force, point)
        sim.step()
    assert sim._work.solver.step.alone
    counts = sim.substep_counts()
    assert counts["retried_start_error"] == 0 and counts["retried_left"] == 0, counts
