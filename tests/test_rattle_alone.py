"""A sub-step whose rows RATTLE's projections hold by themselves (the joints' equalities, limits
far from their bounds, exact joint terms' fixed impulses) leaves out the velocity solve
(`physics.constraints.solver.SceneSolver.leave_out_solve`): the solve's impulses along the
equalities are only the position projection's first guess, a far limit's row takes none, and the
fixed impulses are applied as the solve applies them.

Checked against the step with the solve (the same scene stepped with `_projections_alone` answering
no: `_never_alone`): the bodies end where they did, to the projections' round-off, and the solve is
left out only where nothing but such rows of a forest of joints is solved."""
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


def _never_alone(monkeypatch):
    """The prepare's start (`_joint_start`, one compiled call that asks `_projections_alone`) as it
    is, but answering that the projections never hold the rows alone: every sub-step solves."""
    fused = solver_module._joint_start
    monkeypatch.setattr(solver_module, "_joint_start", lambda *args: fused(*args)[:2] + (False,))


def _run(scene, monkeypatch=None):
    """(world translations, world velocities, the last prepare's `alone`) after STEPS steps."""
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(STEPS)
    sim.world()     # (synced whole: a step's last passes go over the bodies alone)
    world = sim._work.hierarchy.world_state
    return world.translation.copy(), world.velocity.copy(), sim._work.solver.step.alone, sim


@pytest.mark.parametrize("scene", ["pendulum", "double_pendulum"])
def test_left_out_solve_ends_where_the_solved_step_does(scene, monkeypatch):
    """Tolerance 1e-9 m and 1e-8 m/s: each projection stops within TOLERANCE (1e-12 m) of the
    same root, and the two runs differ by where in that band each stopped (measured 2e-11 m after
    320 steps; these scenes are not chaotic over 2.7 s, so nothing amplifies it)."""
    x, v, alone, _ = _run(scene)
    assert alone, f"{scene}: its rows are hinge equalities alone, yet the solve ran"
    _never_alone(monkeypatch)
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


def test_a_comb_is_the_nets_bodies_as_a_tree_whose_projections_hold_alone(tmp_path):
    """make_scenes.py net --tree, the benchmark's measure of what a net's loops cost: the same
    spheres where the net has them, joined as a forest (one joint a body, hung by one corner), so
    that RATTLE's projections hold its rows by themselves and the sub-step leaves out the solve the
    net keeps (above)."""
    import subprocess
    import tomllib
    sims, nodes = {}, {}
    for kind, tree in (("net", []), ("comb", ["--tree"])):
        path = tmp_path / f"{kind}.toml"
        subprocess.run([sys.executable, str(SCENES / "make_scenes.py"), "net", "--side", "4", *tree, "--out", str(path)],
                       check=True, capture_output=True)
        nodes[kind] = tomllib.loads(path.read_text())["node"]
        sims[kind] = Simulation.from_file(path)
        sims[kind].step(5)
    net, comb = sims["net"], sims["comb"]
    assert nodes["net"] == nodes["comb"]        # the same bodies, where the net has them
    comb_joints, net_joints = comb._work.solver.joints, net._work.solver.joints
    assert len(comb_joints) == 16 and len(net_joints) == 26
    assert forest(comb_joints.body) and not forest(net_joints.body)
    assert comb._work.solver.step.alone
    assert comb.substep_counts()["retries"] == 0


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
    """The ant stands on contacts, the cradle's balls touch, the iiwa's joints rest on their limits
    and its strongest dampers are soft rows of the solve (too strong for RATTLE's exact terms): each
    has rows the projections do not hold by themselves."""
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


def _terms_scene(tmp_path, terms):
    """The double pendulum with `terms` (TOML lines) on both hinges: a file in tmp_path."""
    text = (SCENES / "double_pendulum.toml").read_text()
    assert text.count("axis = [0.0, 0.0, 1.0]\n") == 2
    path = tmp_path / "terms.toml"
    path.write_text(text.replace("axis = [0.0, 0.0, 1.0]\n", "axis = [0.0, 0.0, 1.0]\n" + terms))
    return path


def _stepped(path, steps, solved=False, monkeypatch=None, dt=None, driven=False):
    """(world translations, velocities, the joints' stored impulses, how many sub-steps left out
    the solve, how many solved) after `steps` steps (of `dt` where given); `solved`: with
    `_projections_alone` answering no; `driven`: every actuator given a random control within its
    range every fifth step (seeded)."""
    if solved:
        _never_alone(monkeypatch)
    counts = {"left out": 0, "solved": 0}
    leave_out, solve = solver_module.SceneSolver.leave_out_solve, solver_module.SceneSolver.solve

    def left(self, *args, **kwargs):
        counts["left out"] += 1
        return leave_out(self, *args, **kwargs)

    def solved_(self, *args, **kwargs):
        counts["solved"] += 1
        return solve(self, *args, **kwargs)
    monkeypatch.setattr(solver_module.SceneSolver, "leave_out_solve", left)
    monkeypatch.setattr(solver_module.SceneSolver, "solve", solved_)
    sim = Simulation.from_file(path)
    if dt is not None:
        sim.set("dt", dt)
    controls = [(name, spec["ctrl_range"]) for name, _, spec in sim.actuators()] if driven else []
    rng = np.random.default_rng(0)
    for i in range(steps):
        if i % 5 == 0:
            for name, (low, high) in controls:
                sim.set_control(name, float(rng.uniform(low, high)))
        sim.step()
    monkeypatch.undo()
    sim.world()     # (synced whole: a step's last passes go over the bodies alone)
    world = sim._work.hierarchy.world_state
    return (world.translation.copy(), world.velocity.copy(), sim._work.solver.joints.impulse.copy(),
            counts["left out"], counts["solved"], sim)


def test_exact_terms_and_far_limits_leave_out_the_solve(tmp_path, monkeypatch):
    """A damper and an armature on each hinge (RATTLE's rotor rows, their first kick 0), limits at
    ±2.5 rad the swing does not reach in 120 steps: every sub-step leaves the solve out and ends
    where the solved step does. Tolerance 1e-9 m and 1e-8 m/s as above (measured 3e-13 m: the two
    runs differ by where in the projections' 1e-12 m band each stopped)."""
    path = _terms_scene(tmp_path, "damping = 0.05\narmature = 0.02\nlower = -2.5\nupper = 2.5\n")
    x, v, impulse, left_out, solved, _ = _stepped(path, 120, monkeypatch=monkeypatch)
    x_solved, v_solved, _, left_out_solved, _, _ = _stepped(path, 120, True, monkeypatch)
    assert (left_out, solved) == (120, 0) and left_out_solved == 0
    np.testing.assert_allclose(x, x_solved, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v, v_solved, rtol=0, atol=1e-8)
    assert not impulse.any(), "a left-out solve stores no impulse"


def test_a_spring_that_pushes_keeps_the_solve(tmp_path, monkeypatch):
    """A spring away from its reference kicks its joint each sub-step (a fixed impulse, (h/2) τ(q₀)):
    the solve spreads it over the island (`_projections_alone`), so no sub-step leaves it out."""
    from physics.constraints.joints import ROWS_PER_JOINT, SPRING
    path = _terms_scene(tmp_path, "stiffness = 3.0\nspring_reference = 0.4\n")
    _, _, impulse, left_out, solved, sim = _stepped(path, 20, monkeypatch=monkeypatch)
    assert left_out == 0 and solved == 20
    start = sim._work.solver.step.joints
    spring = start.slots % ROWS_PER_JOINT == SPRING
    assert spring.sum() == 2, "each hinge's spring is a row of the solve"
    lower, upper = start.rows.lower[:len(start.slots)][spring], start.rows.upper[:len(start.slots)][spring]
    assert (lower == upper).all() and lower.all(), "RATTLE's exact spring: a fixed first kick that is not 0"
    assert impulse[:, SPRING].all()


def test_a_limit_the_free_step_reaches_keeps_the_solve(tmp_path, monkeypatch):
    """Hinges at rest 0.0105 rad from their limits (their coordinates 0 as loaded, limits ±0.0105),
    at dt 1/30 in one sub-step: gravity turns the upper link by about α h² ≈ 0.011 rad in the
    sub-step, through its limit, so the solve's speculative row stops it there. The free step gives
    the link no turn (gravity acts at its centre: the turn comes through the hinge's point rows), so
    the rule allows LIMIT_ACCELERATION h² (0.44 rad here): every sub-step keeps the solve and the
    run is the solved one bit for bit."""
    path = _terms_scene(tmp_path, "lower = -0.0105\nupper = 0.0105\n")
    x, v, _, left_out, solved, _ = _stepped(path, 30, monkeypatch=monkeypatch, dt=1.0 / 30.0)
    x_solved, v_solved, _, _, _, _ = _stepped(path, 30, True, monkeypatch, dt=1.0 / 30.0)
    assert left_out == 0 and solved >= 30
    np.testing.assert_array_equal(x, x_solved)
    np.testing.assert_array_equal(v, v_solved)


def test_the_rule():
    """`_projections_alone` on one hinge's limit and spring rows at h = 1/120 s: a limit 0.2 rad
    from its bound turning at 1 rad/s is far (4 sub-steps of the rate, 0.033 rad, and 400 h²,
    0.028 rad), at 0.05 rad it is within reach, and so is any limit at 20 rad/s, or one whose moving
    frame turns at 20 rad/s; a soft spring row (lower ≠ upper) keeps the solve whatever the limits,
    and so does a fixed impulse that is not 0, save on a joint whose terms have a rotor row (an
    armature or a damper), whose rotor then takes the kick whole (`JointTerms.share` 0)."""
    from physics.constraints.joints import LIMIT, SPRING, JointTerms, joint_geometry_arrays
    geometry = joint_geometry_arrays(1)
    geometry.inequality[0, LIMIT] = True
    slots = np.array([LIMIT, SPRING])
    body = np.array([[-1, 0], [-1, 0]])
    jacobian = np.zeros((2, 2, 6))
    jacobian[:, 1, 5] = 1.0      # the coordinate's rate: body 0's ω_z
    velocity = np.zeros((1, 6))
    h = 1.0 / 120.0

    def alone(gap, rate, frame=0.0, lower=(0.0, 0.0), upper=(np.inf, 0.0), terms=None):
        geometry.C[0, LIMIT] = gap
        geometry.frame_speed[0, LIMIT] = frame
        velocity[0, 5] = -rate
        return solver_module._projections_alone(slots, body, jacobian, np.array(lower), np.array(upper), geometry,
                                                velocity, h, terms)

    def terms(armature, damping):
        one = np.ones(1)
        return JointTerms(np.ones(1, bool), np.zeros(1, bool), one, 0 * one, damping * one, armature * one,
                          0 * one, 0 * one, 0.5 * one)
    assert alone(0.2, 1.0) and alone(0.2, -1.0)
    assert not alone(0.05, 1.0)
    assert not alone(0.2, 20.0)
    assert not alone(0.2, 0.0, frame=20.0)
    assert not alone(0.2, 1.0, lower=(0.0, -np.inf), upper=(np.inf, np.inf))
    assert not alone(0.2, 1.0, lower=(0.0, 0.5), upper=(np.inf, 0.5))
    assert not alone(0.2, 1.0, lower=(0.0, 0.5), upper=(np.inf, 0.5), terms=terms(0.0, 0.0))
    for armature, damping in ((0.4, 0.0), (0.0, 2.0)):
        rotor = terms(armature, damping)
        assert alone(0.2, 1.0, lower=(0.0, 0.5), upper=(np.inf, 0.5), terms=rotor)
        solver_module._rotor_takes_kicks(rotor)
        assert rotor.share[0] == 0.0


def test_robots_without_contacts_leave_out_the_solve(monkeypatch):
    """gymnasium's reacher (hinges with dampers, armatures and limits, no contact): every sub-step
    leaves the solve out, and it ends where the solved run does after 2 s (480 steps of 1/240 s;
    tolerance 1e-9 m as above, measured 1e-15 m)."""
    import gymnasium
    path = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "reacher.xml"
    import warnings
    from physics.io.articulated import ModelWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        x, v, _, left_out, solved, _ = _stepped(path, 480, monkeypatch=monkeypatch)
        x_solved, v_solved, _, left_out_solved, _, _ = _stepped(path, 480, True, monkeypatch)
    assert (left_out, solved) == (960, 0) and left_out_solved == 0
    np.testing.assert_allclose(x, x_solved, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v, v_solved, rtol=0, atol=1e-8)


def test_a_driven_robot_without_contacts_leaves_out_the_solve(monkeypatch):
    """gymnasium's reacher driven by random controls: its motors' first kicks are fixed impulses
    that are not 0, on joints with armatures and dampers, whose rotors take them whole where the
    solve is left out (`solver._rotor_takes_kicks`; solved, the links take their share,
    `JointTerms.share`). Most sub-steps leave the solve out (those with a limit within reach keep
    it: measured 866 of 960), and after 2 s the run ends where the solved one does: any share of a
    kick is RATTLE's same step once projected (tolerance 1e-9 m and 1e-8 m/s, the projections' own
    tolerance over 960 sub-steps)."""
    import gymnasium
    path = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "reacher.xml"
    import warnings
    from physics.io.articulated import ModelWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        x, v, _, left_out, solved, _ = _stepped(path, 480, monkeypatch=monkeypatch, driven=True)
        x_solved, v_solved, _, left_out_solved, _, _ = _stepped(path, 480, True, monkeypatch, driven=True)
    assert left_out + solved == 960 and left_out >= 0.8 * 960 and left_out_solved == 0, (left_out, solved)
    np.testing.assert_allclose(x, x_solved, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v, v_solved, rtol=0, atol=1e-8)
