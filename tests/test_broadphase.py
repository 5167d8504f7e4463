"""Broad phase: the uniform grid and brute force return exactly the overlapping AABB pairs; filter rules."""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from physics.collision.broadphase import BRUTE_FORCE_MAX, GRID_MAX_CELLS, candidate_pairs, collision_filter
from physics.model.shapes import ShapeSet, aabbs
from types import SimpleNamespace


def reference(lo, hi):
    """All pairs i < j with overlapping boxes, by numpy broadcasting (independent of both methods)."""
    overlap = np.all((lo[:, None] <= hi[None]) & (lo[None] <= hi[:, None]), axis=-1)
    i, j = np.nonzero(np.triu(overlap, 1))
    return np.column_stack([i, j])


def boxes(n):
    return ShapeSet.from_nodes([{"type": "box", "size": [1, 1, 1]}] * n)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 400), st.integers(0, 2 ** 32 - 1))
def test_exact_overlapping_set(n, seed):
    """Random AABBs (both methods: n ≤ 64 brute force, beyond the grid): the exact set."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0, 10, (n, 3)) * rng.uniform(0.2, 1.0, 3)  # anisotropic: exercises the axis choice
    half = rng.uniform(0.01, 1.0, (n, 3))
    lo, hi = centre - half, centre + half
    shapes = boxes(n)
    pairs = candidate_pairs(lo, hi, collision_filter(shapes, np.full(n, -1)))
    np.testing.assert_array_equal(pairs, reference(lo, hi))


@settings(max_examples=30, deadline=None)
@given(st.integers(BRUTE_FORCE_MAX + 1, 300), st.integers(1, 6), st.integers(0, 2 ** 32 - 1))
def test_exact_set_with_boxes_too_large_for_the_grid(n, n_large, seed):
    """Small boxes among a few that span far more than GRID_MAX_CELLS grid cells (walls, slabs),
    some of them overlapping each other: the exact set, each pair once."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0, 10, (n, 3))
    half = rng.uniform(0.05, 0.3, (n, 3))
    large = rng.choice(n, n_large, replace=False)
    half[large] = rng.uniform(2.0, 6.0, (n_large, 3))   # at the median cell size of about 0.35 m: >> 64 cells
    lo, hi = centre - half, centre + half
    assert np.prod(np.ceil((hi[large] - lo[large]) / 0.4), axis=1).min() > GRID_MAX_CELLS
    pairs = candidate_pairs(lo, hi, collision_filter(boxes(n), np.full(n, -1)))
    np.testing.assert_array_equal(pairs, reference(lo, hi))


def test_exact_set_on_a_cubic_heap():
    """4,096 tilted boxes touching their neighbours in a 16^3 heap (the grid's case: every cell
    holds several boxes, pairs share up to 8 cells): the exact set, each pair once."""
    side, edge = 16, 0.2
    rng = np.random.default_rng(7)
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    centre = grid * edge * 0.99 + rng.uniform(-0.005, 0.005, (side ** 3, 3))
    half = 0.5 * edge * rng.uniform(1.0, 1.2, (side ** 3, 1))   # a tilted box's AABB is wider than its edge
    lo, hi = centre - half, centre + half
    n = len(lo)
    pairs = candidate_pairs(lo, hi, collision_filter(boxes(n), np.full(n, -1)))
    np.testing.assert_array_equal(pairs, reference(lo, hi))


def test_non_finite_boxes_do_not_break_the_grid():
    """A NaN or astronomically far box (a diverged body, before the divergence check stops the
    run) neither raises nor loses the pairs of the others."""
    n = BRUTE_FORCE_MAX + 10
    lo = np.column_stack([np.arange(n), np.zeros(n), np.zeros(n)]).astype(float)
    hi = lo + 1.0
    lo[3], hi[3] = np.nan, np.nan
    lo[5], hi[5] = 1e300, 1e300 + 1e290
    pairs = candidate_pairs(lo, hi, collision_filter(boxes(n), np.full(n, -1)))
    expected = [(i, i + 1) for i in range(n - 1) if {i, i + 1}.isdisjoint({3, 5})]
    np.testing.assert_array_equal(pairs, expected)


def test_both_methods_used_and_touching_counts():
    for n in (BRUTE_FORCE_MAX, BRUTE_FORCE_MAX + 1):
        lo = np.column_stack([np.arange(n), np.zeros(n), np.zeros(n)]).astype(float)
        hi = lo + 1.0  # neighbours touch exactly at a face
        pairs = candidate_pairs(lo, hi, collision_filter(boxes(n), np.full(n, -1)))
        np.testing.assert_array_equal(pairs, np.column_stack([np.arange(n - 1), np.arange(1, n)]))


def test_planes_pair_with_everything_in_their_half_space():
    shapes = ShapeSet.from_nodes([{"type": "plane", "normal": [0, 1, 0], "offset": 0},
                                  {"type": "box", "size": [1, 1, 1]}, {"type": "box", "size": [1, 1, 1]},
                                  {"type": "plane", "normal": [1, 1, 0], "offset": 0}])
    world = SimpleNamespace(translation=np.array([[0, 0, 0], [0, 0.4, 0], [0, 3, 0], [0, 0, 0.0]]),
                            rotation=np.broadcast_to(np.eye(3), (4, 3, 3)).copy(), scale=np.ones(4))
    lo, hi = aabbs(shapes, world)
    assert hi[0, 1] == 0 and np.isinf(lo[0]).all()  # the ground's half-space box
    pairs = candidate_pairs(lo, hi, collision_filter(shapes, np.full(4, -1)))
    # box 2 is above the ground: not a candidate; the tilted plane has an infinite box: both boxes
    np.testing.assert_array_equal(pairs, [[0, 1], [1, 3], [2, 3]])


def overlapping(n):
    return np.zeros((n, 3)), np.ones((n, 3))


def test_filter_rules():
    box = {"type": "box", "size": [1, 1, 1]}
    shapes = ShapeSet.from_nodes([
        [box, box],                                   # shapes 0, 1: node 0 (the car)
        box,                                          # 2: node 1, child of 0, default
        dict(box, collide_with_parent=True),          # 3: node 2, child of 0, cargo
        dict(box, group=2, mask=2),                   # 4: node 3, root, group 2 only
        box,                                          # 5: node 4, fixed child of node 0 (car floor)
    ])
    parent = np.array([-1, 0, 0, -1, 0])
    lo, hi = overlapping(6)
    pairs = candidate_pairs(lo, hi, collision_filter(shapes, parent))
    got = {tuple(p) for p in pairs}
    assert (0, 1) not in got                      # same node
    assert (0, 2) not in got and (1, 2) not in got  # node 1's parent is node 0
    assert (0, 3) in got and (1, 3) in got        # collide_with_parent
    assert not any(4 in p for p in got)           # group 2 vs mask 1 of the others
    assert (2, 3) in got and (3, 5) in got        # siblings collide
    motion = np.array(["dynamic", "dynamic", "dynamic", "dynamic", "fixed"])
    got = {tuple(p) for p in candidate_pairs(lo, hi, collision_filter(shapes, parent, motion))}
    assert (0, 5) not in got and (1, 5) not in got  # one rigid assembly (parent rule aside)
    assert (3, 5) in got                          # cargo against the car's fixed floor
    static = np.array(["fixed", "fixed", "fixed", "fixed", "fixed"])
    assert len(candidate_pairs(lo, hi, collision_filter(shapes, parent, static))) == 0


def test_mujoco_pair_rule_either_side_accepts():
    """contype/conaffinity pair two shapes when either's contype meets the other's conaffinity
    (MuJoCo's rule, an OR), beside Bullet's group/mask rule (an AND): checked on every pair of
    bit patterns against the rule written out in Python."""
    box = {"type": "box", "size": [1, 1, 1]}
    bits = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1), (1, 2), (3, 4)]
    shapes = ShapeSet.from_nodes([dict(box, contype=t, conaffinity=a) for t, a in bits])
    lo, hi = overlapping(len(bits))
    got = {tuple(p) for p in candidate_pairs(lo, hi, collision_filter(shapes, np.full(len(bits), -1)))}
    expected = {(i, j) for i in range(len(bits)) for j in range(i + 1, len(bits))
                if (bits[i][0] & bits[j][1]) | (bits[j][0] & bits[i][1])}
    assert got == expected
    assert (2, 3) in got and (1, 2) in got    # a geom with conaffinity 0 still meets a floor (the hopper's feet)
    assert not any(0 in p for p in got)       # contype = conaffinity = 0 meets nothing
    # both rules must hold: group/mask can still keep a MuJoCo-allowed pair apart
    shapes = ShapeSet.from_nodes([dict(box, group=2, mask=1), dict(box, group=2, mask=1)])
    assert len(candidate_pairs(*overlapping(2), collision_filter(shapes, np.full(2, -1)))) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(BRUTE_FORCE_MAX + 1, 200), st.lists(st.tuples(st.integers(-8, 7), st.integers(-8, 7),
                                                                 st.integers(0, 3), st.integers(0, 3)),
                                                       min_size=1, max_size=4), st.integers(0, 2 ** 32 - 1))
@example(100, [(2, -3, 1, 1)], 0)                   # a net's knots: one group their mask leaves out
@example(100, [(2, -3, 1, 1), (1, -1, 1, 1)], 1)    # … beside shapes of the default bits, which meet them
@example(100, [(1, -1, 1, 1)], 2)                   # the default bits: every pair
def test_the_grid_left_out_where_no_two_finite_shapes_may_collide(n, classes, seed):
    """Shapes in a few collision classes (group, mask, contype, conaffinity drawn at random: a
    net's knots in one group their mask leaves out, among others), over a ground plane: where the
    classes' bits refuse every pair of finite shapes the grid is left out (`finite_pairs`), and
    either way the pairs are exactly those the filter's rule allows among the overlapping boxes,
    in order (the rule applied pair by pair, `CollisionFilter.allows`, is the reference)."""
    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, len(classes), n)
    nodes = [{"type": "plane", "normal": [0, 1, 0], "offset": 0}]
    for c in chosen:
        group, mask, contype, conaffinity = classes[c]
        nodes.append({"type": "sphere", "radius": 0.3, "group": group, "mask": mask, "contype": contype,
                      "conaffinity": conaffinity})
    shapes = ShapeSet.from_nodes(nodes)
    world = SimpleNamespace(translation=np.vstack([np.zeros(3), rng.uniform(-0.2, 3.0, (n, 3))]),
                            rotation=np.broadcast_to(np.eye(3), (n + 1, 3, 3)).copy(), scale=np.ones(n + 1))
    lo, hi = aabbs(shapes, world)
    f = collision_filter(shapes, np.full(n + 1, -1))
    used = [k for k in range(len(classes)) if (chosen == k).any()]
    bits_pair = any((classes[a][0] & classes[b][1]) and (classes[b][0] & classes[a][1])
                    and ((classes[a][2] & classes[b][3]) | (classes[b][2] & classes[a][3]))
                    for a in used for b in used if a != b or (chosen == a).sum() > 1)
    assert f.grid().finite_pairs == bits_pair
    expected = reference(lo, hi)
    expected = expected[f.allows(expected[:, 0], expected[:, 1])]
    np.testing.assert_array_equal(candidate_pairs(lo, hi, f), expected)


@pytest.mark.parametrize("n", [12, BRUTE_FORCE_MAX + 36])
def test_jointed_nodes_are_kept_apart(n):
    """`apart` node pairs (a joint's two nodes): every pair of their shapes is left out, in either
    order, by the brute force (n ≤ 64) and by the grid alike; every other overlapping pair stays."""
    shapes = ShapeSet.from_nodes([[{"type": "box", "size": [1, 1, 1]}] * 2] * (n // 2))   # two shapes a node
    lo, hi = overlapping(n)
    apart = [(0, 1), (3, 2), (4, 4 + 1)]
    pairs = candidate_pairs(lo, hi, collision_filter(shapes, np.full(n // 2, -1), apart=apart))
    nodes = {tuple(sorted(pair)) for pair in shapes.node[pairs]}
    expected = reference(lo, hi)
    expected = expected[shapes.node[expected[:, 0]] != shapes.node[expected[:, 1]]]
    keep = [tuple(sorted(pair)) not in {(0, 1), (2, 3), (4, 5)} for pair in shapes.node[expected]]
    np.testing.assert_array_equal(pairs, expected[keep])
    assert not nodes & {(0, 1), (2, 3), (4, 5)} and (1, 2) in nodes


def test_bad_input():
    shapes = boxes(3)
    with pytest.raises(ValueError, match=r"lo, hi: got shapes \(3, 2\)"):
        candidate_pairs(np.zeros((3, 2)), np.zeros((3, 2)), collision_filter(shapes, [-1, -1, -1]))
    with pytest.raises(ValueError, match="motion: got"):
        collision_filter(shapes, [-1, -1, -1], ["fixed", "dynamic", "flying"])
    with pytest.raises(ValueError, match="parent: got shape"):
        collision_filter(shapes, [-1])


def test_may_pair_is_false_only_when_no_pair_is_ever_allowed():
    """A conservative shortcut the Simulation uses to skip the solver: when it says False, the
    filter allows no pair at all (checked against every pair); a dynamic body beside a static one
    may pair."""
    from physics.collision.broadphase import collision_filter
    from physics.model.shapes import ShapeSet
    box = {"type": "box", "size": [1.0, 1.0, 1.0]}
    cases = [
        ([box, box], np.array([-1, 0]), np.array(["dynamic", "fixed"]), False),   # one rigid assembly
        ([box, box], np.array([-1, -1]), np.array(["kinematic", "fixed"]), False),  # nothing dynamic
        ([box, box], np.array([-1, -1]), np.array(["dynamic", "fixed"]), True),
    ]
    for shapes, parent, motion, expected in cases:
        shape_set = ShapeSet.from_nodes(shapes)
        f = collision_filter(shape_set, parent, motion)
        assert f.may_pair() == expected
        if not expected:
            a, b = np.triu_indices(len(shapes), 1)
            assert not f.allows(a, b).any()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 400), st.integers(1, 40), st.integers(0, 2 ** 32))
def test_grid_cell_order_is_the_stable_sort(n, side, seed):
    """The grid's entries ordered by cell (`_cell_order`) are numpy's stable argsort of their keys,
    exactly: by counting when the cells span few values per entry (a cube of side³ cells), by merge
    sort when they spread over a wide range (side 40 with few entries); a stable sort has one
    answer, so the pairs, and the bits, do not depend on which ran."""
    from physics.collision.broadphase import _GRID_BITS, COUNTING_SPAN, _cell_order
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, side, (n, 3)) + rng.integers(0, 1 << 10, 3)     # a block of cells anywhere
    key = (cells[:, 0] << (2 * _GRID_BITS)) | (cells[:, 1] << _GRID_BITS) | cells[:, 2]
    order, cell, start = np.full(n, -1, np.int64), np.empty(n, np.int64), np.empty(COUNTING_SPAN * n + 1, np.int64)
    _cell_order(key, order, cell, start)
    assert np.array_equal(order, np.argsort(key, kind="stable"))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1e3), min_size=1, max_size=60), st.integers(0, 3))
def test_the_grids_median_extent_is_numpys(values, repeats):
    """The grid's cell edge takes the median box extent by selection in place (`_median`, no
    array made): numpy's np.median exactly (tolerance 0), on odd and even counts and on ties (the
    values repeated)."""
    from physics.collision.broadphase import _median
    a = np.array(values * (repeats + 1))
    expected = np.median(a)
    assert _median(a.copy()) == expected


@pytest.mark.parametrize("entries", [1, None])
def test_the_grid_grows_its_scratch_and_finds_the_same_pairs(entries):
    """`grid_pairs` works in a `GridScratch` the caller keeps; one with room for too few grid
    entries says how many it needs (−2), and with that room the pass finds every pair, in order, as
    numpy's broadcast over all pairs does (`reference`)."""
    from physics.collision.broadphase import grid_pairs, grid_scratch
    rng = np.random.default_rng(3)
    n = 300
    centre = rng.uniform(0.0, 6.0, (n, 3))
    filter_ = collision_filter(boxes(n), np.full(n, -1))
    lo, hi = centre - 0.2, centre + 0.2
    grid = filter_.grid()
    cells = np.empty((n, 3), np.int64), np.empty((n, 3), np.int64)
    out = np.empty((20 * n, 2), np.int64)
    scratch = grid_scratch(filter_, len(out), entries)
    found, k = grid_pairs(lo, hi, grid, *cells, out, scratch)
    if entries == 1:
        assert k == -2 and found > 1
        scratch = grid_scratch(filter_, len(out), found)
        found, k = grid_pairs(lo, hi, grid, *cells, out, scratch)
    assert k == found and np.array_equal(out[:k], reference(lo, hi))


@pytest.mark.parametrize("scene, room", [("car", None), ("ant", None), ("newtons_cradle", None), ("pile", None),
                                         ("pile", 1)])
def test_the_solvers_bound_broad_phase_finds_what_candidate_pairs_finds(scene, room):
    """A step's broad phase (`SceneSolver._candidates`) goes through one call bound to the solver's
    arrays, a brute force or (the pile's 1,000 boxes) the grid: at states of four scenes (contacts
    made, bodies moving), its pairs are exactly those of `candidate_pairs` on the boxes grown by each
    shape's travel within the sub-step, and in the same order, and its margin is SPECULATIVE + twice
    the largest travel. `room`: the grid's buffer made with room for that many pairs first, so that
    the call finds it full and binds again with more."""
    from pathlib import Path
    from physics import Simulation
    from physics.constraints import solver as solver_module
    from physics.pipeline import stages
    sim = Simulation.from_file(Path(__file__).parent.parent / "assets" / "scenes" / f"{scene}.toml")
    sim.step(40)
    work, solver = sim._work, sim._work.solver
    world, centre, rotation, velocity, _ = stages.solver_state(sim.model, sim.data, sim.settings, work)
    h = sim.settings.dt / sim.settings.substeps
    placed = solver._place(world)
    if room is not None:
        solver._candidates(placed, world, centre, velocity, h)      # (bound to these arrays)
        solver._reaching = solver._reaching[:1] + solver._reaching_call(placed.lo, placed.hi, world, centre, velocity,
                                                                        room)
    pairs, margin = solver._candidates(placed, world, centre, velocity, h)
    assert solver._reaching is not None     # (the bound path was taken)
    assert room is None or len(solver._reaching[2]) > room
    travel = np.empty(len(solver.shapes))
    most = solver_module._travel(solver.shapes.node, placed.lo, placed.hi,
                                 solver_module.SolverBodies(solver.body_of_node, centre, velocity),
                                 solver._node_motion(world), h, travel)
    grow = (solver_module.SPECULATIVE + travel)[:, None]
    expected = candidate_pairs(placed.lo - grow, placed.hi + grow, solver.filter)
    assert len(expected) and np.array_equal(pairs, expected)
    assert margin == solver_module.SPECULATIVE + 2.0 * most
