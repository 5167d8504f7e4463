"""The joints' block-sparse systems (physics.constraints.joint_graph) against numpy's dense solve, and the
elimination's structure: no fill on a tree, work linear in the joints of a chain.

Each case builds joints between random bodies at random poses, random rows J and weights W ≈ J
(so that Γ = J Wᵀ is nonsymmetric, as RATTLE's J(q_k) M₀⁻¹ J₀ᵀ is, yet well conditioned), leaves
about one slot in ten untaken, and solves Γ μ = r both ways.
"""
import numpy as np
import pytest

from physics.constraints.joint_graph import (PIVOT_FLOOR, assemble, dissection_order, empty_factors, factor_and_solve,
                                            filled, load_layout, minimum_degree_order, solve_factored, structure,
                                            tree_order)
from physics.constraints.joints import BALL, FIXED, HINGE, ROWS_PER_JOINT, Joints

RNG = np.random.default_rng(7)


def random_joints(bodies, edges, kinds=(BALL, HINGE, FIXED)):
    J = len(edges)
    kind = RNG.choice(list(kinds), size=J)
    centre = RNG.normal(size=(bodies, 3))
    rotation = np.array([np.linalg.qr(RNG.normal(size=(3, 3)))[0] for _ in range(bodies)])
    rotation *= np.sign(np.linalg.det(rotation))[:, None, None]
    limited = kind == HINGE
    return Joints.from_world(kind, np.array(edges), RNG.normal(size=(J, 3)), RNG.normal(size=(J, 3)), centre, rotation,
                             lower=np.where(limited, -1.0, -np.inf), upper=np.where(limited, 1.0, np.inf))


def chain_edges(n):
    return [(-1, 0)] + [(i, i + 1) for i in range(n - 1)]


def tree_edges(n):
    return [(-1, 0)] + [(int(RNG.integers(0, i)), i) for i in range(1, n)]


def grid_edges(side):
    """A net: each body joined to its right and lower neighbours, two corners to the world (loops)."""
    at = lambda i, k: i * side + k
    return ([(-1, 0), (-1, side - 1)] + [(at(i, k), at(i, k + 1)) for i in range(side) for k in range(side - 1)]
            + [(at(i, k), at(i + 1, k)) for i in range(side - 1) for k in range(side)])


def joint_components(joints):
    """(J,) each joint's connected component of the joint graph, joints joined where they share a
    moving body: a union-find of its own (the kernel's are scipy's, `components`)."""
    J = len(joints)
    parent = list(range(J))

    def root(j):
        while parent[j] != j:
            j = parent[j]
        return j

    first = {}      # moving body → the first joint on it
    for j in range(J):
        for b in joints.body[j].tolist():
            if b >= 0:
                parent[root(j)] = root(first.setdefault(b, j))
    roots = [root(j) for j in range(J)]
    return np.unique(roots, return_inverse=True)[1]


def solve_both(joints, again=False):
    """(μ by the joint graph, μ by numpy's dense solve, Γ's condition number) over the taken rows;
    `again`: also a second right-hand side's, by the kept factors (`solve_factored`), by a fresh
    factorization and by numpy: (those three, then the three above)."""
    graph = structure(joints)
    J = len(joints)
    jacobian = RNG.normal(size=(J, ROWS_PER_JOINT, 2, 6))
    static = np.broadcast_to((joints.body < 0)[:, None, :], (J, ROWS_PER_JOINT, 2))
    jacobian[static] = 0.0                          # a static side has no columns
    weighted = jacobian + 0.1 * RNG.normal(size=jacobian.shape)
    weighted[static] = 0.0
    taken = np.zeros((J, ROWS_PER_JOINT), bool)
    for j in range(J):
        slots = graph.slots[j, :graph.size[j]]
        taken[j, slots] = RNG.random(len(slots)) < 0.9
    rows = list(zip(*np.nonzero(taken)))
    dense = np.zeros((len(rows), len(rows)))
    for a, (j, s) in enumerate(rows):
        for b, (l, t) in enumerate(rows):
            for sj in range(2):
                for sl in range(2):
                    if joints.body[j, sj] >= 0 and joints.body[j, sj] == joints.body[l, sl]:
                        dense[a, b] += jacobian[j, s, sj] @ weighted[l, t, sl]
    r = RNG.normal(size=len(rows))
    rhs = np.zeros((J, ROWS_PER_JOINT))
    rhs[tuple(np.array(rows).T)] = r
    factors = empty_factors(graph)
    storage = factors.storage
    assemble(graph, jacobian, weighted, taken, storage, factors.floor)
    assert factor_and_solve(graph, factors, rhs)
    assert np.all(rhs[~taken] == 0.0), "an untaken slot's multiplier is 0"
    first = rhs[tuple(np.array(rows).T)], np.linalg.solve(dense, r), np.linalg.cond(dense)
    if not again:
        return first
    r2 = RNG.normal(size=len(rows))
    kept, fresh = np.zeros((J, ROWS_PER_JOINT)), np.zeros((J, ROWS_PER_JOINT))
    kept[tuple(np.array(rows).T)] = fresh[tuple(np.array(rows).T)] = r2
    assert solve_factored(graph, factors, kept)
    assemble(graph, jacobian, weighted, taken, storage, factors.floor)
    assert factor_and_solve(graph, factors, fresh)
    at = tuple(np.array(rows).T)
    return (kept[at], fresh[at], np.linalg.solve(dense, r2)), first


@pytest.mark.parametrize("case, bodies, edges, kinds", [
    ("chain", 40, chain_edges(40), (BALL, HINGE, FIXED)),
    ("tree", 40, tree_edges(40), (BALL, HINGE, FIXED)),
    ("net", 36, grid_edges(6), (BALL,)),            # ball joints only: 3 rows each, fewer than the bodies' 6
    ("two trees", 20, chain_edges(10) + [(10 + a, 10 + b) for a, b in tree_edges(10)[1:]], (BALL, HINGE)),
    ("two nets", 32, grid_edges(4) + [(16 + a if a >= 0 else a, 16 + b) for a, b in grid_edges(4)], (BALL,)),
    ("loops anywhere", 30, tree_edges(30) + [(int(a), int(b)) for a, b in RNG.integers(0, 30, size=(20, 2)) if a != b],
     (BALL, HINGE)),
])
def test_the_block_elimination_solves_what_numpy_solves(case, bodies, edges, kinds):
    """Γ μ = r by the joint graph equals numpy's LU solve of the dense Γ to the round-off its
    condition number allows (1e-16 × cond, with a factor 100 for the different orders of the sums)."""
    sparse, dense, condition = solve_both(random_joints(bodies, edges, kinds))
    assert np.abs(sparse - dense).max() <= 1e-14 * condition * np.abs(dense).max(), (case, condition)


@pytest.mark.parametrize("armature, size", [(0.0, 6), (0.1, 7)])
def test_a_robots_hinges_the_compiler_unrolls_solve_what_numpy_solves(armature, size):
    """The ant's shape: four hips on one torso (a clique: each hip's later neighbours are the hips
    after it) and a knee on each, all limited hinges: blocks of 6 rows, 7 with a rotor (an
    armature), whose Schur updates `factor_and_solve` runs with sizes the compiler knows
    (`_block_update`); against numpy's dense solve to the first test's round-off bound."""
    joints = random_joints(9, [(0, 1), (0, 2), (0, 3), (0, 4), (1, 5), (2, 6), (3, 7), (4, 8)], (HINGE,))
    joints.armature[:] = armature
    assert set(structure(joints).size.tolist()) == {size}
    sparse, dense, condition = solve_both(joints)
    assert np.abs(sparse - dense).max() <= 1e-14 * condition * np.abs(dense).max(), condition


def test_a_nearly_massless_body_leaves_the_other_rows_as_they_solve_alone():
    """Two chains of ball joints, the second's weights M⁻¹ Jᵀ 1e11 times the first's (gymnasium's
    pusher: a goal and an object of density 1e-5 beside an arm): the first chain's multipliers are
    the ones its rows give solved alone, within 1e-10 of the largest (round-off, the chain's Γ
    being well conditioned; the same operations on the same entries give the same bits, but the
    test does not ask for them): each component's pivot floor is relative to its own diagonal.
    With a regularization relative to the whole graph's largest diagonal, 1e-12 of the light
    chain's added to every diagonal of the first, its multipliers were 70 % off, and the pusher's
    arm's Newton steps each took a tenth of its error."""
    edges = chain_edges(10) + [(-1, 10)] + [(10 + i, 11 + i) for i in range(9)]
    rng = np.random.default_rng(3)

    def solved(edges, jacobian, weighted, r):
        J = len(edges)
        joints = Joints.from_world(np.full(J, BALL), np.array(edges), rng.normal(size=(J, 3)), rng.normal(size=(J, 3)),
                                   rng.normal(size=(20, 3)), np.broadcast_to(np.eye(3), (20, 3, 3)).copy())
        graph = structure(joints)
        taken = np.zeros((J, ROWS_PER_JOINT), bool)
        for j in range(J):
            taken[j, graph.slots[j, :graph.size[j]]] = True
        factors = empty_factors(graph)
        assemble(graph, jacobian[:J], weighted[:J], taken, factors.storage, factors.floor)
        mu = np.where(taken, r[:J], 0.0)
        assert factor_and_solve(graph, factors, mu)
        return mu[taken]

    jacobian = rng.normal(size=(20, ROWS_PER_JOINT, 2, 6))
    jacobian[[0, 10], :, 0] = 0.0       # (the world's side)
    weighted = jacobian + 0.1 * rng.normal(size=jacobian.shape)
    weighted[10:] *= 1e11
    r = rng.normal(size=(20, ROWS_PER_JOINT))
    both, alone = solved(edges, jacobian, weighted, r), solved(edges[:10], jacobian, weighted, r)
    first = both[:len(alone)]
    assert np.abs(first - alone).max() <= 1e-10 * np.abs(alone).max(), np.abs(first - alone).max()


def two_ball_joints(weights):
    """A world–body 0–body 1 chain of two ball joints whose rows on body 0 are the same (one pivot
    point: the gimbal's ring between its two hinges), body 0's weights `weights` times body 1's:
    (graph, jacobian, weighted, taken, the dense Γ over the taken rows)."""
    rng = np.random.default_rng(11)
    joints = Joints.from_world(np.full(2, BALL), np.array([(-1, 0), (0, 1)]), np.zeros((2, 3)), np.eye(3)[:2],
                               rng.normal(size=(2, 3)), np.broadcast_to(np.eye(3), (2, 3, 3)).copy())
    graph = structure(joints)
    jacobian = np.zeros((2, ROWS_PER_JOINT, 2, 6))
    jacobian[0, :3, 1] = rng.normal(size=(3, 6))
    jacobian[1, :3, 0] = -jacobian[0, :3, 1]
    jacobian[1, :3, 1] = rng.normal(size=(3, 6))
    weighted = jacobian.copy()
    weighted[0, :, 1] *= weights
    weighted[1, :, 0] *= weights
    taken = np.zeros((2, ROWS_PER_JOINT), bool)
    taken[:, :3] = True
    rows = np.concatenate([jacobian[0, :3, 1], jacobian[1, :3, 0]]), np.concatenate([weighted[0, :3, 1],
                                                                                     weighted[1, :3, 0]])
    dense = rows[0] @ rows[1].T
    dense[3:, 3:] += jacobian[1, :3, 1] @ weighted[1, :3, 1].T
    return graph, jacobian, weighted, taken, dense


def factored_as(graph, fronts):
    """`graph` as it is (`fronts`: a run of ball joints eliminated in one dense matrix,
    `_front_updates`) or with no front, so that each joint's block goes through `_lu_factor` and
    `_ball_updates` (the same operations: the same bits)."""
    return graph if fronts else graph._replace(front=np.full(len(graph.size), -1))


@pytest.mark.parametrize("fronts", [True, False], ids=["front", "no front"])
def test_a_small_pivot_above_the_floor_is_factored_exactly(fronts):
    """Body 0 of `two_ball_joints` 1e-11 of body 1's inertia (a link an importer raised to 1e-9
    kg): Γ's largest diagonal is 6.8e11, so the pivot floor is 6.8e-3. Joint 0, eliminated first,
    leaves joint 1 a Schur complement of body 1's own size (its least eigenvalue 1.06), some 150
    times the floor, so the solve is numpy's dense solve to the round-off Γ's condition allows:
    1e-15 × cond (3.2e12; a factor 10 for the different orders of the sums), measured 5.4e-6 of
    the largest. A regularization of 1e-12 of the scale added to every diagonal (0.68 there)
    leaves the multipliers some 60 % off."""
    graph, jacobian, weighted, taken, dense = two_ball_joints(1e11)
    graph = factored_as(graph, fronts)
    factors = empty_factors(graph)
    assert assemble(graph, jacobian, weighted, taken, factors.storage, factors.floor) > 1e11
    r = np.random.default_rng(5).normal(size=6)
    mu = np.zeros((2, ROWS_PER_JOINT))
    mu[taken] = r
    assert factor_and_solve(graph, factors, mu)
    exact, condition = np.linalg.solve(dense, r), np.linalg.cond(dense)
    assert np.abs(mu[taken] - exact).max() <= 1e-15 * condition * np.abs(exact).max(), condition


@pytest.mark.parametrize("fronts", [True, False], ids=["front", "no front"])
def test_a_vanishing_pivot_is_raised_to_the_floor(fronts):
    """Body 1 of `two_ball_joints` with no weight of its own (its rows on a massless body): Γ is the
    same 3 × 3 block four times, rank 3 of 6, so joint 1's pivots vanish (to round-off) once joint 0
    is eliminated; each is raised to the floor (PIVOT_FLOOR of the largest diagonal: static
    pivoting), where without one the factorization stops at a zero pivot. A right-hand side in Γ's
    range is then solved to round-off (Γ μ = r within 1e-12 of |r|, measured 2e-16), and the
    multipliers stay bounded: within 10 times the least-norm solution's largest (numpy's lstsq),
    measured 2 times (the joints' split of the load is the elimination's, not the least-norm one;
    joint 1's share along Γ's null space is the round-off over the floor, 0.02 of the load here,
    and grew past the bound with a floor of 1e-18)."""
    graph, jacobian, weighted, taken, dense = two_ball_joints(1.0)
    graph = factored_as(graph, fronts)
    jacobian[1, :, 1] = weighted[1, :, 1] = 0.0
    dense[3:, 3:] = dense[:3, :3]
    factors = empty_factors(graph)
    scale = assemble(graph, jacobian, weighted, taken, factors.storage, factors.floor)
    assert np.all(factors.floor == PIVOT_FLOOR * scale)
    r = dense @ np.random.default_rng(6).normal(size=6)
    mu = np.zeros((2, ROWS_PER_JOINT))
    mu[taken] = r
    assert factor_and_solve(graph, factors, mu)
    assert np.abs(dense @ mu[taken] - r).max() <= 1e-12 * np.abs(r).max()
    assert np.abs(mu).max() <= 10 * np.abs(np.linalg.lstsq(dense, r, rcond=None)[0]).max()
    factors.floor[:] = 0.0      # (the same factorization with no floor)
    assemble(graph, jacobian, weighted, taken, factors.storage, np.empty(2))
    assert not factor_and_solve(graph, factors, np.where(taken, 1.0, 0.0))


@pytest.mark.parametrize("seed", range(4))
def test_the_graph_s_components_are_the_joints_that_share_bodies(seed):
    """`JointGraph.component_start`/`component_joint` (`components`): a random forest's joints with
    a few more to the world, split into components exactly as a union-find of the joints that share
    a moving body splits them (the same sets; each component's ascending)."""
    rng = np.random.default_rng(seed)
    edges = [(int(rng.integers(-1, i)) if i else -1, i) for i in range(30)] + [(-1, int(b)) for b in rng.integers(0, 30, 4)]
    joints = random_joints(30, edges, (BALL, HINGE))
    graph = structure(joints)
    ours = {tuple(graph.component_joint[a:b]) for a, b in zip(graph.component_start[:-1], graph.component_start[1:])}
    labels = joint_components(joints)
    assert ours == {tuple(np.flatnonzero(labels == c)) for c in np.unique(labels)}


@pytest.mark.parametrize("case, bodies, edges, kinds", [    # (no random tree: the module's RNG picks the others)
    ("chain", 40, chain_edges(40), (BALL, HINGE, FIXED)),
    ("net", 36, grid_edges(6), (BALL,)),
])
def test_the_kept_factors_solve_another_right_hand_side_as_a_new_factorization_does(case, bodies, edges, kinds):
    """RATTLE's chord steps (`solve_factored`): a second right-hand side through the factors the
    first solve left gives the bits a fresh factorization gives (the same substitutions in the same
    order: tolerance 0), and numpy's dense solve to the first test's round-off bound."""
    (kept, fresh, dense), (_, _, condition) = solve_both(random_joints(bodies, edges, kinds), again=True)
    assert np.array_equal(kept, fresh), (case, np.abs(kept - fresh).max())
    assert np.abs(kept - dense).max() <= 1e-14 * condition * np.abs(dense).max(), (case, condition)


def shared_pairs(joints):
    """The joint graph's edges: the pairs of joints that share a moving body."""
    moving = [set(joints.body[j][joints.body[j] >= 0]) for j in range(len(joints))]
    return {(j, l) for j in range(len(joints)) for l in range(j + 1, len(joints)) if moving[j] & moving[l]}


def random_forest(seed, bodies):
    """A random forest of `bodies` bodies: each joined to a random earlier one or to the world, a
    few joints to the world on random bodies, and a few doubled joints (a hinge per axis of a hip)."""
    rng = np.random.default_rng(seed)
    edges = [(-1, 0)] + [(int(rng.integers(-1, i)), i) for i in range(1, bodies)]
    edges += [(-1, int(b)) for b in rng.integers(0, bodies, size=3)]
    edges += [edges[int(k)] for k in rng.integers(1, bodies, size=3) if edges[int(k)][0] >= 0]
    return [edges[k] for k in rng.permutation(len(edges))]


@pytest.mark.parametrize("edges", [chain_edges(50), tree_edges(50)] + [random_forest(seed, 50) for seed in range(20)],
                         ids=["chain", "tree"] + [f"forest{seed}" for seed in range(20)])
def test_a_tree_of_joints_is_eliminated_without_fill(edges):
    """Leaves first, no elimination joins two joints that did not already share a body: the
    filled graph has exactly the joint graph's edges (Baraff's linear-time ordering), on any
    forest, in any numbering, with joints to the world anywhere and doubled joints."""
    joints = random_joints(50, edges)
    assert tree_order(joints) is not None
    graph = structure(joints)
    assert len(graph.later) == len(shared_pairs(joints))


def test_a_loop_of_bodies_is_not_taken_for_a_tree():
    """A ring of four bodies is a loop; two joints between the same two bodies are not."""
    assert tree_order(random_joints(4, [(0, 1), (1, 2), (2, 3), (3, 0)])) is None
    assert tree_order(random_joints(3, [(0, 1), (0, 1), (1, 2), (-1, 2), (-1, 0)])) is not None


def test_the_load_layout_places_the_bodies_as_they_were_loaded_up_to_a_rigid_motion():
    """`load_layout` rebuilds each body's place from the joints' anchors and rest rotations alone;
    the bodies' pairwise distances are the ones they were loaded at (random poses, a tree of ball
    and hinge joints): to 1e-12 m, the round-off of a few products of rotations down the tree."""
    bodies = 30
    edges = tree_edges(bodies)
    centre = RNG.normal(size=(bodies, 3))
    rotation = np.array([np.linalg.qr(RNG.normal(size=(3, 3)))[0] for _ in range(bodies)])
    rotation *= np.sign(np.linalg.det(rotation))[:, None, None]
    joints = Joints.from_world(RNG.choice([BALL, HINGE], size=len(edges)), np.array(edges),
                               RNG.normal(size=(len(edges), 3)), RNG.normal(size=(len(edges), 3)), centre, rotation)
    layout = load_layout(joints)
    distances = lambda x: np.linalg.norm(x[:, None] - x[None], axis=-1)
    assert np.abs(distances(layout) - distances(centre)).max() < 1e-12


def test_a_net_is_dissected_with_less_fill_than_minimum_degree_and_still_solves_what_numpy_solves():
    """On a 16 × 16 net laid flat, nested dissection across the layout needs fewer Schur updates
    than minimum degree (counted: at least 1.4 times fewer; at 32 × 32 it is 2.2), `structure`
    keeps it, and the dissected elimination solves Γ μ = r as numpy does (the first test's bound)."""
    joints = flat_net(16)
    neighbours = [set() for _ in range(len(joints))]
    for j, l in shared_pairs(joints):
        neighbours[j].add(l)
        neighbours[l].add(j)
    updates = lambda later: sum(len(l) ** 2 for l in later)
    dissected = updates(filled([set(n) for n in neighbours], dissection_order(joints, neighbours)))
    minimum = updates(minimum_degree_order([set(n) for n in neighbours])[1])
    assert dissected * 1.4 <= minimum, (dissected, minimum)
    assert len(structure(joints).update) == dissected
    sparse, dense, condition = solve_both(joints)
    assert np.abs(sparse - dense).max() <= 1e-14 * condition * np.abs(dense).max(), condition


def flat_net(side, kinds=(BALL,)):
    """A side × side net of ball joints (or of random `kinds`) laid flat, hung by two corners (the
    scenes' nets)."""
    edges = grid_edges(side)
    centre = np.array([(i * 0.3, k * 0.3, 0.0) for i in range(side) for k in range(side)])
    rotation = np.broadcast_to(np.eye(3), (side * side, 3, 3)).copy()
    anchor = np.array([(centre[max(a, 0)] + centre[b]) / 2 if a >= 0 else centre[b] for a, b in edges])
    kind = np.full(len(edges), BALL) if kinds == (BALL,) else RNG.choice(list(kinds), size=len(edges))
    return Joints.from_world(kind, np.array(edges), anchor,
                             np.tile([0, 0, 1.0], (len(edges), 1)), centre, rotation)


@pytest.mark.parametrize("kinds", [(BALL,), (BALL, HINGE)], ids=["balls", "balls and hinges"])
def test_a_split_nets_halves_solve_what_numpy_solves_with_the_same_bits_on_one_thread_or_two(monkeypatch, kinds):
    """A net's dissection split in halves (`JointGraph.halves`; SPLIT_UPDATES lowered so that a 6 × 6
    net splits, as a 16 × 16 one does): no joint of one half reaches the other's, and the separator's
    blocks the second half updates go to buffers; the elimination solves Γ μ = r as numpy does (the
    first test's bound), the kept factors give a fresh factorization's bits, and RATTLE's assembly,
    factorization and chord solve (`physics.constraints.rattle._split_assemble`,
    `_split_factor_and_solve`, `_split_solve_factored`: the halves at once) give the bits of `assemble`, `factor_and_solve` and
    `solve_factored` (the halves one after the other) on one thread and on two: the same operations
    on the same entries in the same order, so tolerance 0, Γ and its factors included."""
    import numba

    from physics.constraints import joint_graph, rattle
    monkeypatch.setattr(joint_graph, "SPLIT_UPDATES", 0)
    joints = flat_net(6, kinds)
    graph = structure(joints)
    J, (_, a, b) = len(joints), graph.halves
    assert 0 < a < b < J and graph.split is graph.halves and len(graph.merge) and len(graph.merge_x)
    half = np.full(J, 2)
    half[graph.order[:a]], half[graph.order[a:b]] = 0, 1
    for k in graph.order[:b]:
        assert set(half[graph.later[graph.later_start[k]:graph.later_start[k + 1]]]) <= {half[k], 2}, k
    t1, t2, T = graph.term_halves[1:]       # the assembly's groups: the halves' threads write apart
    assert 0 < t1 < t2 <= T == len(graph.term)
    assert not set(graph.term[:t1, 0]) & set(graph.term[t1:t2, 0])
    (kept, fresh, dense), (sparse, first_dense, condition) = solve_both(joints, again=True)
    assert np.abs(sparse - first_dense).max() <= 1e-14 * condition * np.abs(first_dense).max(), condition
    assert np.array_equal(kept, fresh) and np.abs(kept - dense).max() <= 1e-14 * condition * np.abs(dense).max()
    jacobian = RNG.normal(size=(J, ROWS_PER_JOINT, 2, 6))
    jacobian[np.broadcast_to((joints.body < 0)[:, None, :], jacobian.shape[:3])] = 0.0
    weighted = jacobian + 0.1 * RNG.normal(size=jacobian.shape) * (jacobian != 0.0)
    taken = np.zeros((J, ROWS_PER_JOINT), bool)
    for j in range(J):
        taken[j, graph.slots[j, :graph.size[j]]] = RNG.random(graph.size[j]) < 0.9
    rhs = np.where(taken, RNG.normal(size=taken.shape), 0.0)
    other = np.where(taken, RNG.normal(size=taken.shape), 0.0)
    solved = []
    previous = numba.get_num_threads()
    try:
        for threads in (None, 1, min(2, numba.config.NUMBA_NUM_THREADS)):
            factors, mu, chord = empty_factors(graph), rhs.copy(), other.copy()
            factors.storage[:] = np.nan             # (the assembly zeroes every block first)
            if threads is None:
                assemble(graph, jacobian, weighted, taken, factors.storage, factors.floor)
                assembled = factors.storage.copy()
                assert factor_and_solve(graph, factors, mu) and solve_factored(graph, factors, chord)
            else:
                numba.set_num_threads(threads)
                rattle._split_assemble(graph, jacobian, weighted, taken, factors.storage, factors.floor)
                assembled = factors.storage.copy()
                assert rattle._split_factor_and_solve(graph, factors, mu)
                assert rattle._split_solve_factored(graph, factors, chord)
            solved.append([a.view(np.int64) for a in (assembled, factors.storage, mu, chord)])
    finally:
        numba.set_num_threads(previous)
    for arrays in solved[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(arrays, solved[0]))


@pytest.mark.parametrize("side, share, odd", [(6, 0.6, True), (16, 0.8, False)])
def test_a_nets_fronts_eliminate_with_the_bits_of_the_blocks_one_by_one(side, share, odd):
    """The runs of ball joints a net's dissection eliminates one after another (its separators) are
    factored as dense fronts (`_front_updates`), which hold most of the Schur updates (counted: 69 %
    of the 6 × 6 net's, more as the separators grow), and give the bits of the same elimination
    block by block (the graph with no front): the same operations on each entry in the same order
    (tolerance 0), on random nonsymmetric Γ with about one slot in ten untaken."""
    joints = flat_net(side)
    graph = structure(joints)
    J = len(joints)
    assert (graph.front >= 0).any()
    in_front = np.zeros(J, bool)
    for f in range(len(graph.front_eliminated)):
        start = graph.front_start[f]
        in_front[graph.front_joint[start:start + graph.front_eliminated[f]]] = True
    updates = np.diff(graph.update_start)
    assert updates[in_front].sum() >= share * updates.sum(), updates[in_front].sum() / updates.sum()
    # the paths of `_front_updates` taken: two joints a pass, a front with no joint beyond it, and (on
    # the 6 × 6 net) a last joint alone with joints beyond it
    eliminated, members = graph.front_eliminated, np.diff(graph.front_start)
    assert (eliminated >= 4).any() and (members == eliminated).any()
    assert not odd or ((eliminated % 2 == 1) & (eliminated >= 3) & (members > eliminated)).any()
    blocks = graph._replace(front=np.full(J, -1, np.int64))
    jacobian = RNG.normal(size=(J, ROWS_PER_JOINT, 2, 6))
    jacobian[np.broadcast_to((joints.body < 0)[:, None, :], jacobian.shape[:3])] = 0.0
    weighted = jacobian + 0.1 * RNG.normal(size=jacobian.shape) * (jacobian != 0.0)
    taken = np.zeros((J, ROWS_PER_JOINT), bool)
    for j in range(J):
        slots = graph.slots[j, :graph.size[j]]
        taken[j, slots] = RNG.random(len(slots)) < 0.9
    rhs = np.where(taken, RNG.normal(size=taken.shape), 0.0)
    rhs[RNG.random(J) < 0.5] *= -0.0       # RATTLE's −C at C = 0: the signs of zeros must come out the same
    solved = []
    for g in (graph, blocks):
        factors, mu = empty_factors(g), rhs.copy()
        assemble(g, jacobian, weighted, taken, factors.storage, factors.floor)
        assert factor_and_solve(g, factors, mu)
        solved.append((factors.storage, mu))
    (storage, mu), (storage_blocks, mu_blocks) = solved
    assert np.array_equal(storage.view(np.int64), storage_blocks.view(np.int64))
    assert np.array_equal(mu.view(np.int64), mu_blocks.view(np.int64))


def test_a_chains_elimination_grows_linearly_with_its_joints():
    """Work, counted: the Schur updates and the assembly terms of a chain of 4n joints are 4 times
    those of n joints, to the first joint's few (a dense solve would grow 64 times)."""
    counts = {}
    for n in (100, 400):
        graph = structure(random_joints(n, chain_edges(n), kinds=(BALL,)))
        counts[n] = (len(graph.update), len(graph.term), graph.values)
    for small, large in zip(counts[100], counts[400]):
        assert 3.9 <= large / small <= 4.1, counts


def test_the_minimum_degree_order_eliminates_leaves_first_and_is_a_function_of_the_graph():
    """A path 0-1-2-3-4: its ends (degree 1) go first, smaller index on ties, and every later
    neighbour set is the filled graph's; the same graph gives the same order."""
    path = lambda: [{1}, {0, 2}, {1, 3}, {2, 4}, {3}]
    order, later = minimum_degree_order(path())
    assert order == [0, 1, 2, 3, 4] and later == [[1], [2], [3], [4], []]
    assert minimum_degree_order(path()) == (order, later)
    # a 4-cycle: eliminating a node joins its two neighbours (one fill edge)
    order, later = minimum_degree_order([{1, 3}, {0, 2}, {1, 3}, {0, 2}])
    assert order[0] == 0 and later[0] == [1, 3] and 3 in later[1]


def test_too_many_joints_on_one_body_are_refused_before_anything_is_allocated():
    """5,000 links hinged to one base (the reproducer: a MemoryError at step 0) is refused when the
    simulation is made, in one line naming the body, the count and the budget; Σ d³ counts each
    moving body's joints (the world's are free), and a 100 × 100 net of ball joints stays far below."""
    import time
    import tracemalloc

    import physics
    from physics.constraints.joint_graph import JOINT_CLIQUE_COST_MAX, clique_cost
    from physics.io.scene import scene_from_dict
    from physics.constraints.solver import JointBudgetError

    assert clique_cost([[-1, 0], [0, 1], [0, 2], [1, 2]]) == 27 + 8 + 8
    side = 100      # a net: each body joined to at most 4 neighbours
    net = [[i * side + j, i * side + j + 1] for i in range(side) for j in range(side - 1)]
    net += [[i * side + j, (i + 1) * side + j] for i in range(side - 1) for j in range(side)]
    assert clique_cost(net) < JOINT_CLIQUE_COST_MAX / 5
    n = 5000
    nodes = [{"name": "base", "motion": "dynamic", "mass": 1.0, "inertia": [1, 1, 1]}]
    nodes += [{"name": f"link{k}", "motion": "dynamic", "mass": 1.0, "inertia": [0.1, 0.1, 0.1],
               "translation": [float(k % 100), 1.0, float(k // 100)]} for k in range(n)]
    joints = [{"type": "hinge", "a": "base", "b": f"link{k}", "anchor": [float(k % 100), 0.5, float(k // 100)],
               "axis": [0, 0, 1]} for k in range(n)]
    scene = scene_from_dict({"title": "star", "node": nodes, "joint": joints}, "star.toml")
    started = time.monotonic()
    tracemalloc.start()
    with pytest.raises(JointBudgetError, match=f"{n} joints on one moving body \\(base\\)") as info:
        physics.Simulation(scene)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "\n" not in str(info.value) and f"{JOINT_CLIQUE_COST_MAX:.3g}" in str(info.value)
    assert time.monotonic() - started < 30 and peak < 256 * 2**20
