"""RATTLE's velocity projection at inequalities (physics.constraints.rattle, `project_velocities`):
ropes and limits at their bound as a linear complementarity problem, μ ≥ 0, J v₁ ≥ 0, μ · J v₁ = 0
(a rope pulls, never pushes), checked against every active set tried in numpy."""
import itertools
import math
from pathlib import Path

import numpy as np

from physics.constraints import rattle
from physics.constraints.joints import ROWS_PER_JOINT
from physics.io.scene import scene_from_dict
from physics.pipeline import stages
from physics.pipeline.simulation import Simulation


def ropes_at_length():
    """A sphere hung by two ropes in a V, a second hung from it by a rope, a third tied to it by a
    rope and to the second by a ball joint: every rope exactly at its length (at its bound), no
    gravity."""
    r2 = math.sqrt(2.0)
    ball = {"motion": "dynamic", "mass": 1.0, "inertia": [0.01, 0.01, 0.01]}
    doc = {"title": "ropes", "world": {"gravity": [0, 0, 0], "integrator": "lie-midpoint", "dt": 0.01},
           "node": [{"name": "a", "translation": [0, 0, 0], **ball}, {"name": "b", "translation": [0, -1, 0], **ball},
                    {"name": "c", "translation": [1, -1, 0], **ball}],
           "joint": [{"type": "rope", "b": "a", "anchor": [-1, 1, 0], "anchor_b": [0, 0, 0], "length": r2},
                     {"type": "rope", "b": "a", "anchor": [1, 1, 0], "anchor_b": [0, 0, 0], "length": r2},
                     {"type": "rope", "a": "a", "b": "b", "anchor": [0, 0, 0], "anchor_b": [0, -1, 0], "length": 1.0},
                     {"type": "rope", "a": "a", "b": "c", "anchor": [0, 0, 0], "anchor_b": [1, -1, 0], "length": r2},
                     {"type": "ball", "a": "b", "b": "c", "anchor": [0.5, -1, 0]}]}
    return Simulation(scene_from_dict(doc, "ropes.toml"))


def dense_joint_rows(sim):
    """After a step of `sim`, its solver prepared for RATTLE at the poses reached: (joints, joint
    bodies, centre, rotation, inverse world inertia, M⁻¹ (6B, 6B) dense, every joint row the
    projections take as a dense row (K, 6B), which of them are inequalities (K,), the rows'
    geometry)."""
    sim.step()
    work = sim._work
    world, centre, rotation, velocity, inverse_inertia = stages.solver_state(sim.model, sim.data, sim.settings, work)
    solver = work.solver
    solver.prepare(world, centre, rotation, velocity, sim.model.inverse_mass, inverse_inertia, sim.settings.dt,
                   sim.settings, rattle=True)
    joints, bodies = solver.joints, solver._joint_bodies
    geometry = joints.geometry(centre, rotation)
    B = len(centre)
    M_inv = np.zeros((6 * B, 6 * B))
    for b in range(B):
        M_inv[6 * b:6 * b + 3, 6 * b:6 * b + 3] = np.eye(3) * sim.model.inverse_mass[b]
        M_inv[6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] = inverse_inertia[b]
    rows, inequality = [], []
    for j in range(len(joints)):
        for s in range(ROWS_PER_JOINT):
            if geometry.active[j, s] and not geometry.motor[j, s]:
                row = np.zeros(6 * B)
                for side in range(2):
                    if joints.body[j, side] >= 0:
                        row[6 * joints.body[j, side]:6 * joints.body[j, side] + 6] += geometry.jacobian[j, s, side]
                rows.append(row)
                inequality.append(bool(geometry.inequality[j, s]))
    return joints, bodies, centre, rotation, inverse_inertia, M_inv, np.array(rows), np.array(inequality), geometry


def complementary_change(rows, inequality, M_inv, v):
    """(Δv = M⁻¹ J_Aᵀ μ, A) of the one active set A (the equalities and some inequalities, a bool
    mask) whose solution is complementary: μ ≥ 0 on A's inequalities, J v₁ ≥ 0 on the rest (J M⁻¹ Jᵀ
    positive definite: exactly one, asserted). Every subset of the inequalities tried, numpy's
    dense solve."""
    found = []
    free = np.flatnonzero(inequality)
    for k in range(len(free) + 1):
        for chosen in itertools.combinations(free, k):
            active = ~inequality
            active[list(chosen)] = True
            Ja = rows[active]
            mu = np.linalg.solve(Ja @ M_inv @ Ja.T, -Ja @ v)
            dv = M_inv @ Ja.T @ mu
            if (mu[inequality[active]] >= -1e-12).all() and (rows[~active] @ (v + dv) >= -1e-12).all():
                found.append((dv, active))
    assert len(found) == 1, len(found)
    return found[0]


def test_ropes_at_their_length_push_never_and_hold_whatever_would_stretch_them():
    """300 random velocities of the three spheres on their ropes at length: the projection's Δv is
    the complementarity problem's solution found by trying all 16 active sets (tolerance 1e-9 m/s:
    round-off through Γ's condition, with margin). Taking the ropes that stretch at the
    start alone, and solving with them whatever their μ (a rope that pulls a sphere back, or one
    that stretches once the others are held), misses it in 193 of the 300 (by up to 1.8 m/s); the
    projection's active set (Murty's least-index pivoting) meets it in all. Both of its moves are
    met among the draws: a rope that stretched at the start let go (the others' pull takes it
    slack), and one that did not taken (the others' pull stretches it)."""
    sim = ropes_at_length()
    joints, bodies, centre, rotation, inverse_inertia, M_inv, rows, inequality, geometry = dense_joint_rows(sim)
    B = len(centre)
    assert np.abs(geometry.C[geometry.inequality & geometry.active]).max() <= 1e-12     # at length
    assert inequality.sum() == 4 and len(rows) == 7
    rng = np.random.default_rng(1)
    missed_alone = let_go = taken_later = 0
    for _ in range(300):
        v = rng.normal(size=(B, 6))
        expected, chosen = complementary_change(rows, inequality, M_inv, v.ravel())
        expected = expected.reshape(B, 6)
        got = rattle.project_velocities(joints, bodies, centre, rotation, v, sim.model.inverse_mass, inverse_inertia)
        assert np.abs(got - expected).max() <= 1e-9, np.abs(got - expected).max()
        active = ~inequality | (rows @ v.ravel() < 0.0)
        let_go += bool((active & ~chosen).any())
        taken_later += bool((chosen & ~active).any())
        Ja = rows[active]
        alone = M_inv @ Ja.T @ np.linalg.solve(Ja @ M_inv @ Ja.T, -Ja @ v.ravel())
        missed_alone += np.abs(alone - expected.ravel()).max() > 1e-6
    assert missed_alone >= 100 and let_go > 0 and taken_later > 0, (missed_alone, let_go, taken_later)


def test_a_rope_let_go_within_a_newton_step_leaves_the_others_newtons_step(monkeypatch):
    """The rope bridge's crates land and its ropes go slack: a rope still pulling (an impulse so
    far) whose Newton step would turn its impulse ends at none, and the other rows keep Newton's
    step (`rattle._let_go`: a substitution with the step's factors a row; stats[10] counts them).
    Over its first 300 steps such steps come in many projections, and each of those that stays
    along J₀ ends within the projection's tolerance (1e-12 m, `rattle.TOLERANCE`), as Newton's
    quadratic end reaches it; a clamp in place was no Newton step of the others, and where it left
    no descent the projection stopped off the joints (gymnasium's driven ant: 1.9 mm). (One that
    leaves J₀ for the current rows, stats[1], ends where their Gauss–Newton steps stall, which may
    stand above the tolerance, within `rattle.CURRENT_STANDING`: most of the projections with a row
    let go here leave J₀, and a few in a hundred end above the tolerance.)"""
    from physics.constraints.solver import SceneSolver
    projections = []
    take = SceneSolver._take_position_stats

    def counted(solver):
        take(solver)
        projections.append((solver._joint_bodies.stats[10], solver._joint_bodies.stats[1], solver.joint_error))

    monkeypatch.setattr(SceneSolver, "_take_position_stats", counted)
    sim = Simulation.from_file(Path(__file__).resolve().parent.parent / "assets" / "scenes" / "rope_bridge.toml")
    sim.step(300)
    turned, left, error = np.array(projections).T
    newton = (turned > 0) & (left == 0)
    assert newton.sum() >= 10 and (turned > 0).sum() >= 40, (newton.sum(), (turned > 0).sum())
    assert error[newton].max() <= rattle.TOLERANCE, error[newton].max()
    assert error[turned > 0].max() <= rattle.CURRENT_STANDING, error[turned > 0].max()


def test_rows_let_go_are_solved_around_the_kept_factors_as_their_own_factorization_would():
    """`rattle._solve_kept` (the capacitance method): with the factors of the rows T₀ kept and up to
    RELEASED_MAX of them let go since, the taken rows' system Γ_TT μ_T = r_T is solved by the
    substitutions alone; checked against the factorization of T itself (`assemble`,
    `factor_and_solve` over the taken rows) on gymnasium-style hinges with limits: random
    Jacobians on the joint graph of the ant scene, each body's M⁻¹ a random symmetric positive
    definite 6 × 6, five rows a joint, so that Γ = J M⁻¹ Jᵀ is positive definite. Tolerance 1e-9
    relative: both are solves of the same system, differing in round-off only (its condition
    number is checked below 1e5); the let-go rows come out exactly 0."""
    from physics.constraints.joint_graph import assemble, empty_factors, factor_and_solve
    sim = Simulation.from_file(Path(__file__).resolve().parent.parent / "assets" / "scenes" / "ant.toml")
    sim.step()
    bodies = sim._work.solver._joint_bodies
    graph, scratch = bodies.graph, bodies._room[2]
    J, R = graph.slots.shape[0], ROWS_PER_JOINT
    joint_body = sim._work.solver.joints.body
    rng = np.random.default_rng(7)
    B = int(joint_body.max()) + 1
    inverse_mass = []
    for _ in range(B):
        a = rng.normal(size=(6, 6))
        inverse_mass.append(a @ a.T / 6.0 + np.eye(6))
    slots = np.zeros((J, R), bool)     # five rows a joint (a hinge's): 40 rows on the bodies' 54 freedoms
    for j in range(J):
        slots[j, graph.slots[j, :min(graph.size[j], 5)]] = True
    checked = 0
    for trial in range(40):
        jacobian = rng.normal(size=(J, R, 2, 6))
        weighted = np.zeros_like(jacobian)
        for j in range(J):
            for side in range(2):
                b = joint_body[j, side]
                if b >= 0:
                    weighted[j, :, side] = jacobian[j, :, side] @ inverse_mass[b]
                else:
                    jacobian[j, :, side] = 0.0
        factored = slots.copy()
        released = rng.choice(np.flatnonzero(factored), size=1 + trial % rattle.RELEASED_MAX, replace=False)
        taken = factored.copy()
        taken.flat[released] = False
        rhs = np.where(taken, rng.normal(size=(J, R)), 0.0)
        dense = np.array([[sum(jacobian[j, s, side] @ weighted[l, t, other]
                               for side in range(2) for other in range(2)
                               if joint_body[j, side] >= 0 and joint_body[j, side] == joint_body[l, other])
                           for (l, t) in zip(*np.nonzero(taken))] for (j, s) in zip(*np.nonzero(taken))])
        assert np.linalg.cond(dense) < 1e5, np.linalg.cond(dense)
        # the factors of T₀, kept; the taken rows' system solved around them
        kept = empty_factors(graph)
        assemble(graph, jacobian, weighted, factored, kept.storage, kept.floor)
        assert factor_and_solve(graph, kept, np.zeros((J, R)))
        scratch.factored_taken[:] = factored
        scratch.released[rattle.RELEASED_MAX, 1] = 0       # (new factors: no column kept)
        for _ in range(2):      # the columns made, then kept
            got = rhs.copy()
            assert rattle._solve_kept.py_func(graph, rattle.KeptFactors(kept, scratch.factored_taken, scratch.released,
                                                                         scratch.released_columns, scratch.capacitance),
                                              taken, got, None)
            assert scratch.released[rattle.RELEASED_MAX, 1] == 1
        # the taken rows factored on their own
        own = empty_factors(graph)
        assemble(graph, jacobian, weighted, taken, own.storage, own.floor)
        expected = rhs.copy()
        assert factor_and_solve(graph, own, expected)
        assert np.all(got.flat[released] == 0.0)
        assert np.abs(got - expected).max() <= 1e-9 * np.abs(expected).max(), np.abs(got - expected).max()
        checked += 1
    assert checked == 40
