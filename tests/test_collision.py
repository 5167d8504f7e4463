"""Narrow phase (physics.collision.collision) against closed forms, symmetry, rotation invariance, and GJK/EPA
against the separating-axis answer. Conventions: normal from a to b, depth > 0 when overlapping,
point midway between the two surfaces (docs/architecture.md, "Collision interface")."""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physics.collision.collision import _separated, contacts
from physics.collision.gjk_epa import gjk_epa, support, support_into
from physics.collision.manifold import ContactCache
from physics.math.rotation import matrix_from_quaternion, random_quaternion
from physics.model.shapes import BOX, CAPSULE, CYLINDER, SPHERE, ShapeSet

# Closed-form cases involve a handful of float operations on O(1) numbers: 1e-9 leaves room
# for rounding and for the 1e-12 guards in the kernels.
TOL = 1e-9

BOX1 = {"type": "box", "size": [1.0, 1.0, 1.0]}
GROUND = {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}


def rot(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def world(translations, rotations=None, scales=None):
    t = np.asarray(translations, float)
    r = np.broadcast_to(np.eye(3), (len(t), 3, 3)).copy() if rotations is None else np.asarray(rotations, float)
    s = np.ones(len(t)) if scales is None else np.asarray(scales, float)
    return SimpleNamespace(translation=t, rotation=r, scale=s)


def collide(shape_a, pose_a, shape_b, pose_b, cache=None, margin=0.0):
    """Contacts of a (node 0) and b (node 1); poses (translation, rotation)."""
    shapes = ShapeSet.from_nodes([shape_a, shape_b])
    w = world([pose_a[0], pose_b[0]], [pose_a[1], pose_b[1]])
    return contacts(shapes, w, np.array([[0, 1]]), cache, margin)


I3 = np.eye(3)
UP = np.array([0.0, 1.0, 0.0])
S2 = np.sqrt(0.5)

# (name, shape a, pose a, shape b, pose b, expected depth, normal a -> b, points (sorted or any order))
CASES = [
    ("sphere-sphere", {"type": "sphere", "radius": 0.5}, ([0, 0, 0], I3), {"type": "sphere", "radius": 0.3}, ([0, 0.7, 0], I3),
     0.1, UP, [[0, 0.45, 0]]),
    ("sphere-plane", {"type": "sphere", "radius": 0.5}, ([1, 0.4, 2], I3), GROUND, ([0, 0, 0], I3),
     0.1, -UP, [[1, -0.05, 2]]),
    ("sphere-box face", {"type": "sphere", "radius": 0.5}, ([0, 0.9, 0], I3), BOX1, ([0, 0, 0], I3),
     0.1, -UP, [[0, 0.45, 0]]),
    ("sphere-box inside", {"type": "sphere", "radius": 0.5}, ([0, 0.3, 0], I3), BOX1, ([0, 0, 0], I3),
     0.7, -UP, [[0, 0.15, 0]]),
    ("sphere-capsule side", {"type": "sphere", "radius": 0.5}, ([0.6, 0.3, 0], I3),
     {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0, 0, 0], I3), 0.1, [-1, 0, 0], [[0.15, 0.3, 0]]),
    ("sphere-capsule cap", {"type": "sphere", "radius": 0.5}, ([0, 1.1, 0], I3),
     {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0, 0, 0], I3), 0.1, -UP, [[0, 0.65, 0]]),
    ("sphere-cylinder side", {"type": "sphere", "radius": 0.5}, ([0.9, 0.2, 0], I3),
     {"type": "cylinder", "radius": 0.5, "height": 1.0}, ([0, 0, 0], I3), 0.1, [-1, 0, 0], [[0.45, 0.2, 0]]),
    ("sphere-cylinder cap", {"type": "sphere", "radius": 0.5}, ([0.1, 0.9, 0], I3),
     {"type": "cylinder", "radius": 0.5, "height": 1.0}, ([0, 0, 0], I3), 0.1, -UP, [[0.1, 0.45, 0]]),
    ("box-plane", BOX1, ([0, 0.45, 0], I3), GROUND, ([0, 0, 0], I3),
     0.05, -UP, [[x, -0.025, z] for x in (-0.5, 0.5) for z in (-0.5, 0.5)]),
    ("box-plane on edge", BOX1, ([0, S2 - 0.01, 0], rot([0, 0, 1], np.pi / 4)), GROUND, ([0, 0, 0], I3),
     0.01, -UP, [[0, -0.005, -0.5], [0, -0.005, 0.5]]),
    ("box-box face", BOX1, ([0, 0, 0], I3), BOX1, ([0.2, 0.9, 0.1], I3),
     0.1, UP, [[x, 0.45, z] for x in (-0.3, 0.5) for z in (-0.4, 0.5)]),
    ("box-box edge-edge", BOX1, ([0, 0, 0], rot([1, 0, 0], np.pi / 4)), BOX1, ([0, 2 * S2 - 0.02, 0], rot([0, 0, 1], np.pi / 4)),
     0.02, UP, [[0, S2 - 0.01, 0]]),
    ("box-capsule lying", BOX1, ([0, 0, 0], I3), {"type": "capsule", "radius": 0.2, "height": 0.6},
     ([0, 0.65, 0], rot([0, 0, 1], np.pi / 2)), 0.05, UP, [[-0.3, 0.475, 0], [0.3, 0.475, 0]]),
    ("box-capsule standing", BOX1, ([0, 0, 0], I3), {"type": "capsule", "radius": 0.2, "height": 0.6},
     ([0.1, 0.95, 0], I3), 0.05, UP, [[0.1, 0.475, 0]]),
    ("capsule-plane lying", {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0, 0.15, 0], rot([1, 0, 0], np.pi / 2)),
     GROUND, ([0, 0, 0], I3), 0.05, -UP, [[0, -0.025, -0.5], [0, -0.025, 0.5]]),
    ("capsule-capsule crossed", {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0, 0, 0], rot([0, 0, 1], np.pi / 2)),
     {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0, 0.3, 0], rot([1, 0, 0], np.pi / 2)), 0.1, UP, [[0, 0.15, 0]]),
    ("capsule-capsule parallel", {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0, 0, 0], rot([0, 0, 1], np.pi / 2)),
     {"type": "capsule", "radius": 0.2, "height": 1.0}, ([0.5, 0.3, 0], rot([0, 0, 1], np.pi / 2)), 0.1, UP,
     [[0.0, 0.15, 0], [0.5, 0.15, 0]]),
    ("cylinder-plane standing", {"type": "cylinder", "radius": 0.5, "height": 1.0}, ([0, 0.45, 0], I3), GROUND, ([0, 0, 0], I3),
     0.05, -UP, [[0.5, -0.025, 0], [-0.5, -0.025, 0], [0, -0.025, 0.5], [0, -0.025, -0.5]]),
    ("cylinder-plane lying", {"type": "cylinder", "radius": 0.5, "height": 1.0}, ([0, 0.45, 0], rot([1, 0, 0], np.pi / 2)),
     GROUND, ([0, 0, 0], I3), 0.05, -UP, [[0, -0.025, -0.5], [0, -0.025, 0.5]]),
]


def _check(c, depth, normal, points, tol):
    assert len(c) == len(points), f"{len(c)} contacts, expected {len(points)}"
    np.testing.assert_allclose(c.depth, depth, atol=tol)
    np.testing.assert_allclose(c.normal_world, np.broadcast_to(normal, c.normal_world.shape), atol=tol)
    got = sorted(map(tuple, np.round(c.point_world, 7)))
    want = sorted(map(tuple, np.round(np.asarray(points, float), 7)))
    np.testing.assert_allclose(got, want, atol=max(tol, 1e-6))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_analytic(case):
    _, sa, pa, sb, pb, depth, normal, points = case
    # box–capsule goes through EPA for the normal, converged to 1e-9 m: 1e-7 covers it
    _check(collide(sa, pa, sb, pb), depth, normal, points, 1e-7)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_swap_flips_normal(case):
    _, sa, pa, sb, pb, depth, normal, points = case
    _check(collide(sb, pb, sa, pa), depth, -np.asarray(normal, float), points, 1e-7)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rotation_invariance(case):
    """Rotating the whole configuration by Q rotates every contact point and normal by Q."""
    _, sa, pa, sb, pb, depth, normal, points = case
    q = matrix_from_quaternion(random_quaternion(np.random.default_rng(len(case[0]))))
    ra = (q @ np.asarray(pa[0], float), q @ pa[1])
    rb = (q @ np.asarray(pb[0], float), q @ pb[1])
    c = collide(sa, ra, sb, rb)
    _check(c, depth, q @ np.asarray(normal, float), np.asarray(points, float) @ q.T, 1e-7)


def test_separated_pairs_give_nothing_unless_within_margin():
    c = collide(BOX1, ([0, 0, 0], I3), BOX1, ([0, 1.05, 0], I3))
    assert len(c) == 0
    c = collide(BOX1, ([0, 0, 0], I3), BOX1, ([0, 1.05, 0], I3), margin=0.1)
    # speculative points: depth = -gap exactly (closed form)
    assert len(c) == 4 and np.allclose(c.depth, -0.05, atol=TOL)
    c = collide({"type": "sphere", "radius": 0.5}, ([0, 0.6, 0], I3), GROUND, ([0, 0, 0], I3))
    assert len(c) == 0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3), st.floats(0.05, 1.5), st.floats(0.05, 1.5))
def test_sphere_sphere_closed_form(offset, ra, rb):
    """depth = ra + rb - |d|, n = d/|d|, point = ca + (ra - depth/2) n (hypothesis, 150 examples)."""
    offset = np.asarray(offset)
    dist = np.linalg.norm(offset)
    c = collide({"type": "sphere", "radius": ra}, ([0, 0, 0], I3), {"type": "sphere", "radius": rb}, (offset, I3))
    if ra + rb - dist < 0 or dist < 1e-6:
        assert len(c) == (0 if ra + rb - dist < 0 else 1)
        return
    n = offset / dist
    depth = ra + rb - dist
    assert len(c) == 1
    np.testing.assert_allclose(c.depth, [depth], atol=TOL)
    np.testing.assert_allclose(c.normal_world[0], n, atol=TOL)
    np.testing.assert_allclose(c.point_world[0], (ra - depth / 2) * n, atol=TOL)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_gjk_epa_matches_sat_for_boxes(seed):
    """EPA's depth and normal equal box–box SAT's (the minimum over the 15 axes) for random
    overlapping boxes; polytopes are exact for EPA, so 1e-6 (its stopping tolerance is 1e-9 m,
    the remaining slack is the angle between near-tied axes)."""
    rng = np.random.default_rng(seed)
    ha, hb = rng.uniform(0.2, 1.0, 3), rng.uniform(0.2, 1.0, 3)
    Ra = matrix_from_quaternion(random_quaternion(rng))
    Rb = matrix_from_quaternion(random_quaternion(rng))
    cb = rng.uniform(-0.6, 0.6, 3)
    ca = np.zeros(3)
    hit, n, depth, wa, wb = gjk_epa(BOX, ca, Ra, np.append(ha, 0.0), BOX, cb, Rb, np.append(hb, 0.0))
    # SAT by brute force over the 15 axes, with numpy
    axes = [Ra[:, i] for i in range(3)] + [Rb[:, j] for j in range(3)]
    axes += [np.cross(Ra[:, i], Rb[:, j]) for i in range(3) for j in range(3)]
    overlaps = []  # (overlap, unit axis pointing from a to b)
    for axis in axes:
        length = np.linalg.norm(axis)
        if length < 1e-6:
            continue
        axis = axis / length
        overlap = np.abs(Ra.T @ axis) @ ha + np.abs(Rb.T @ axis) @ hb - abs(axis @ cb)
        overlaps.append((overlap, axis * np.sign(axis @ cb)))
    overlaps.sort(key=lambda item: item[0])
    best, best_axis = overlaps[0]
    assert hit == (best > 0)
    if best > 1e-6:
        assert depth == pytest.approx(best, abs=1e-6)
        assert n @ cb > 0
        # near-tied axes give the same depth with different normals; check the normal only when
        # the runner-up (a different direction) is clearly shallower: 1e-3 m is 1000x EPA's tolerance
        runner_up = next((o for o, axis in overlaps[1:] if abs(axis @ best_axis) < 1 - 1e-9), np.inf)
        if runner_up - best > 1e-3:
            # a box's support polytope is exact, so EPA's face normal is the SAT axis up to rounding
            # (measured 1 - cos <= 4e-16 over 3000 seeds); 1e-9 leaves room for rounding only
            assert n @ best_axis == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.floats(0.2, 1.0), st.floats(0.2, 1.0))
def test_gjk_epa_spheres(offset, ra, rb):
    """EPA on two spheres approximates their curved Minkowski sum (a sphere of radius ra + rb) by a
    polytope of at most 68 vertices: measured depth errors reach 0.5 % of ra + rb at the deepest
    overlaps, so 1e-2 (ra + rb). (Spheres never take this path in `contacts`: closed forms do.)"""
    offset = np.asarray(offset)
    dist = np.linalg.norm(offset)
    if ra + rb - dist < 0.02 or ra + rb - dist > 0.5 * min(ra, rb):
        return  # contact depths: up to half the smaller radius (deeper, EPA's facets err by ~2 %)
    hit, n, depth, wa, wb = gjk_epa(SPHERE, np.zeros(3), I3, np.array([ra, 0, 0, 0.0]), SPHERE, offset, I3,
                                     np.array([rb, 0, 0, 0.0]))
    assert hit
    assert depth == pytest.approx(ra + rb - dist, abs=1e-2 * (ra + rb))
    if dist > 0.5:
        # near-concentric spheres are almost equally deep in every direction, so the polytope's
        # facets, not the geometry, pick the normal; apart, 0.05 bounds the facet angle error
        np.testing.assert_allclose(n, offset / dist, atol=0.05)


def test_gjk_cylinder_on_box_builds_a_persistent_manifold():
    """A cylinder standing on a box: EPA gives one point per step at depth 0.01 (exact: flat cap on a
    face); as the cylinder rocks slightly the manifold collects up to 4 points with stable ids."""
    cache = ContactCache()
    cylinder = {"type": "cylinder", "radius": 0.3, "height": 0.6}
    ids = []
    for step in range(12):
        tilt = rot([np.cos(step), 0, np.sin(step)], 0.004 * (-1) ** step)
        c = collide(BOX1, ([0, 0, 0], I3), cylinder, ([0, 0.79, 0], tilt), cache)
        assert 1 <= len(c) <= 4
        # tilt 0.004 rad over radius 0.3 moves a rim point by ≤ 1.2 mm about the 10 mm depth
        assert np.all(np.abs(c.depth - 0.01) < 2e-3)
        assert np.allclose(c.normal_world, UP, atol=0.01)
        ids.append(set(c.feature_id.tolist()))
    assert len(c) >= 3
    # points persist: most ids of one step are still there the next
    assert all(len(ids[k] & ids[k + 1]) >= len(ids[k]) - 1 for k in range(3, 11))


@pytest.mark.parametrize("puck_kind", ["box", "cylinder"])
@pytest.mark.parametrize("table_kind", ["box", "cylinder"])
def test_gjk_manifold_persists_while_sliding_fast(puck_kind, table_kind):
    """A puck sliding over a large table 0.03 m per step (1.8 m/s at 60 Hz, more than BREAK =
    0.02 m) and rocking slightly, as it does in a simulation, keeps a full manifold: its points
    follow the puck and are re-projected onto the table, so it collects 4 points under the puck's
    footprint at about the true depth 0.002. (Comparing the two stored points dropped them all each
    step: one point a step, and a frictionless puck sank through the table.) Box on box goes
    through the clipping path and must give the same."""
    puck = {"box": {"type": "box", "size": [0.4, 0.1, 0.4]}, "cylinder": {"type": "cylinder", "radius": 0.2, "height": 0.1}}
    table = {"box": {"type": "box", "size": [8.0, 0.2, 8.0]}, "cylinder": {"type": "cylinder", "radius": 4.0, "height": 0.2}}
    cache = ContactCache()
    for step in range(12):
        centre = np.array([-1.0 + 0.0134 * step, 0.15 - 0.002, 0.5 - 0.0268 * step])
        tilt = rot([np.cos(step), 0, np.sin(step)], 0.004 * (-1) ** step)
        c = collide(puck[puck_kind], (centre, tilt), table[table_kind], ([0, 0, 0], I3), cache)
        assert 1 <= len(c) <= 4
        # a tilt of 0.004 rad over the footprint's half diagonal 0.28 m moves a point by ≤ 1.2 mm
        assert np.all(np.abs(c.depth - 0.002) < 2e-3)
        np.testing.assert_allclose(c.normal_world, np.broadcast_to(-UP, c.normal_world.shape), atol=0.01)
        offset = c.point_world - centre
        assert np.all(np.hypot(offset[:, 0], offset[:, 2]) <= np.sqrt(2) * 0.2 + 2e-3)   # under the puck
    assert len(c) >= 3
    # the points span an area (a support polygon, not a line): twice a triangle's area > 0.005 m²
    p = np.column_stack([offset[:, 0], np.zeros(len(c)), offset[:, 2]])
    assert np.linalg.norm(np.cross(p[1] - p[0], p[2] - p[0])) > 5e-3


@pytest.mark.parametrize("kinds", [("cylinder", "cylinder"), ("cylinder", "capsule"), ("box", "cylinder")])
def test_gjk_pairs_analytic_depth(kinds):
    """Stacked along y, axes along y: depth is the overlap of the extents (EPA, tolerance 1e-7)."""
    make = {"cylinder": {"type": "cylinder", "radius": 0.4, "height": 1.0},
            "capsule": {"type": "capsule", "radius": 0.3, "height": 0.4},
            "box": BOX1}
    c = collide(make[kinds[0]], ([0, 0, 0], I3), make[kinds[1]], ([0, 0.5 + (0.5 if kinds[1] != "capsule" else 0.5) - 0.03, 0], I3))
    assert len(c) == 1
    assert c.depth[0] == pytest.approx(0.03, abs=1e-7)
    np.testing.assert_allclose(c.normal_world[0], UP, atol=1e-7)


def test_contact_cache_carries_impulses():
    cache = ContactCache()
    c = collide(BOX1, ([0, 0.45, 0], I3), GROUND, ([0, 0, 0], I3), cache)
    assert np.all(cache.lookup(c) == 0)
    impulse = np.arange(12.0).reshape(4, 3)
    cache.store(c, impulse)
    c2 = collide(BOX1, ([0.001, 0.449, 0], I3), GROUND, ([0, 0, 0], I3), cache)
    # the same corners: same feature ids, impulses found again in whatever order
    order1, order2 = np.argsort(c.feature_id), np.argsort(c2.feature_id)
    np.testing.assert_array_equal(cache.lookup(c2)[order2], impulse[order1])
    with pytest.raises(ValueError, match=r"impulse: got shape \(2, 3\)"):
        cache.store(c2, np.zeros((2, 3)))


def test_scale_multiplies_sizes():
    shapes = ShapeSet.from_nodes([BOX1, GROUND])
    c = contacts(shapes, world([[0, 0.9, 0], [0, 0, 0]], scales=[2.0, 1.0]), np.array([[0, 1]]))
    np.testing.assert_allclose(c.depth, 0.1, atol=TOL)


def test_bad_input():
    shapes = ShapeSet.from_nodes([BOX1, GROUND])
    with pytest.raises(ValueError, match="pairs: got indices"):
        contacts(shapes, world([[0, 0, 0], [0, 0, 0]]), np.array([[0, 5]]))
    with pytest.raises(ValueError, match="'size' got"):
        ShapeSet.from_nodes([{"type": "box", "size": [1, -1, 1]}])
    with pytest.raises(ValueError, match="unknown key"):
        ShapeSet.from_nodes([{"type": "sphere", "radius": 1, "size": 2}])
    with pytest.raises(ValueError, match="world: got"):
        contacts(shapes, world([[0, 0, 0]]), np.array([[0, 1]]))


def test_output_growth_resumes_where_it_stopped():
    """A fresh cache sizes the outputs for 64 points; a 4³ grid of overlapping boxes on the ground
    needs hundreds, so the kernel stops, the outputs grow and it resumes several times. The result
    must equal the second call's, made with outputs already large enough: exact (same arithmetic)."""
    from physics.collision.broadphase import candidate_pairs, collision_filter
    from physics.model.shapes import aabbs
    grid = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    t = np.vstack([np.zeros(3), grid * 0.99 + 0.49])
    r = np.concatenate([I3[None], [rot([1, 2, 3], 0.01 * k) for k in range(len(grid))]])
    shapes = ShapeSet.from_nodes([GROUND] + [BOX1] * len(grid))
    w = world(t, r)
    pairs = candidate_pairs(*aabbs(shapes, w), collision_filter(shapes, np.full(len(t), -1)))
    cache = ContactCache()
    first = contacts(shapes, w, pairs, cache)
    second = contacts(shapes, w, pairs, cache)
    assert len(first) > 4 * 64
    for name in ("shape_a", "shape_b", "body_a", "body_b", "point_world", "normal_world", "depth", "feature_id"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))


def test_many_persistent_manifolds_in_any_pair_order():
    """12 cylinders rocking on 12 boxes: more GJK/EPA pairs than the cache's first manifold buffers
    hold (8), so the kernel stops, the buffers grow and it resumes. Given the pairs in sorted order
    or shuffled each step, every pair must keep the same manifold: the contacts, sorted by
    (shape_a, shape_b, feature_id), are identical (exact: the same arithmetic per pair)."""
    n = 12
    cylinder = {"type": "cylinder", "radius": 0.3, "height": 0.6}
    shapes = ShapeSet.from_nodes([BOX1] * n + [cylinder] * n)
    pairs = np.column_stack([np.arange(n), np.arange(n, 2 * n)])
    rng = np.random.default_rng(3)
    caches = ContactCache(), ContactCache()
    for step in range(8):
        tilt = [rot([np.cos(step + i), 0, np.sin(step + i)], 0.004 * (-1) ** step) for i in range(n)]
        t = np.concatenate([np.column_stack([2.0 * np.arange(n), np.zeros(n), np.zeros(n)]),
                            np.column_stack([2.0 * np.arange(n), np.full(n, 0.79), np.zeros(n)])])
        w = world(t, np.concatenate([[I3] * n, tilt]))
        got = [contacts(shapes, w, p, cache) for p, cache in zip((pairs, pairs[rng.permutation(n)]), caches)]
        keyed = [c.keys(len(shapes)) for c in got]
        order = [np.argsort(k) for k in keyed]
        for name in ("shape_a", "shape_b", "point_world", "normal_world", "depth", "feature_id"):
            np.testing.assert_array_equal(getattr(got[0], name)[order[0]], getattr(got[1], name)[order[1]])
    # every pair built up its manifold over the steps (each kept beyond the first 8 rows too)
    assert np.all(np.bincount(got[0].shape_a, minlength=n) >= 3)


@pytest.mark.parametrize("shuffle", [False, True])
def test_store_then_lookup_any_order(shuffle):
    """Stored impulses are found again by (shape_a, shape_b, feature_id) whatever the order of the
    contacts: grouped by pair (the narrow phase's order) and fully shuffled (the store's sort then
    falls back from insertion sort to numpy's stable argsort). Exact: impulses are copied, not computed."""
    from physics.collision.collision import Contacts
    rng = np.random.default_rng(5)
    a = np.repeat(np.arange(500), 4) // 7
    b = a + 1 + np.repeat(np.arange(500), 4) % 7
    f = np.tile([3, 0, 2, 1], 500)
    perm = rng.permutation(len(a)) if shuffle else np.arange(len(a))
    make = lambda p: Contacts(a[p], b[p], a[p], b[p], np.zeros((len(p), 3)), np.zeros((len(p), 3)), np.zeros(len(p)), f[p])
    impulse = rng.normal(size=(len(a), 3))
    cache = ContactCache()
    cache.n_shapes = 600
    cache.store(make(perm), impulse[perm])
    again = rng.permutation(len(a))
    np.testing.assert_array_equal(cache.lookup(make(again)), impulse[again])
    new = Contacts(np.array([0]), np.array([599]), np.array([0]), np.array([599]), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(1), np.array([0]))
    np.testing.assert_array_equal(cache.lookup(new), np.zeros((1, 3)))


# ----------------------------------------------------------------------------- GJK's shortcuts
_KINDS = {"box": BOX, "capsule": CAPSULE, "cylinder": CYLINDER, "sphere": SPHERE}
_PARAMS = st.tuples(st.floats(0.05, 1.0), st.floats(0.05, 1.0), st.floats(0.05, 1.0))


def _prm(kind, p):
    return np.array([p[0], p[1], p[2] if kind == BOX else 0.0, 0.0])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(_KINDS.values())), _PARAMS, st.integers(0, 2**31 - 1),
       st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.floats(-2, 2)), st.sampled_from([1.0, -1.0]))
def test_support_into_is_support_bit_for_bit(kind, p, seed, d, sign):
    """The allocation-free support GJK/EPA use is the same arithmetic as `support`: equal bits
    (tolerance 0: any difference would change the manifolds GJK/EPA pairs had before)."""
    R = matrix_from_quaternion(random_quaternion(np.random.default_rng(seed)))
    c, prm, d = np.array([0.3, -1.2, 2.0]), _prm(kind, p), np.array(d)
    out = np.zeros((2, 3))
    support_into(kind, c, R, prm, d, sign, out, 1)
    assert np.array_equal(out[1], support(kind, c, R, prm, sign * d))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([CYLINDER, BOX, CAPSULE]), _PARAMS, _PARAMS, st.integers(0, 2**31 - 1),
       st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.floats(-2, 2)))
def test_separating_axis_shortcut_agrees_with_gjk(kind_b, p_a, p_b, seed, offset):
    """`_separated` (the axes tried before GJK for cylinder pairs) never calls an overlapping pair
    separated: whenever it says separated, GJK on the same poses finds no hit either (a yes/no
    answer, no tolerance). Offsets up to 2 m against shapes up to ~1.7 m across sample both sides."""
    rng = np.random.default_rng(seed)
    Ra, Rb = (matrix_from_quaternion(random_quaternion(rng)) for _ in range(2))
    pa, pb = _prm(CYLINDER, p_a), _prm(kind_b, p_b)
    ca, cb = np.zeros(3), np.array(offset)
    hit = gjk_epa(CYLINDER, ca, Ra, pa, kind_b, cb, Rb, pb)[0]
    if _separated(CYLINDER, ca, Ra, pa, kind_b, cb, Rb, pb):
        assert not hit
        assert _separated(kind_b, cb, Rb, pb, CYLINDER, ca, Ra, pa)  # symmetric in a and b


def test_separating_axis_shortcut_finds_the_obvious_gaps():
    """A cylinder 1 mm above a box face, 1 mm beside it, and off a box edge are separated
    along the box's face axes; one overlapping by 1 mm is not."""
    prm_c, prm_b = np.array([0.3, 0.3, 0.0, 0.0]), np.array([0.5, 0.5, 0.5, 0.0])
    for centre in ([0, 0.801, 0], [0.801, 0, 0], [0.85, 0.85, 0.0]):
        assert _separated(CYLINDER, np.array(centre, float), I3, prm_c, BOX, np.zeros(3), I3, prm_b)
    assert not _separated(CYLINDER, np.array([0, 0.799, 0]), I3, prm_c, BOX, np.zeros(3), I3, prm_b)


# ----------------------------------------------------------------------------- warm starts and culling
def _one_point(feature, point, normal):
    from physics.collision.collision import Contacts
    return Contacts(np.array([0]), np.array([1]), np.array([0]), np.array([1]), np.array([point], float),
                    np.array([normal], float), np.zeros(1), np.array([feature]))


def test_warm_start_follows_a_relabelled_point_but_not_a_distinct_one():
    """A point whose feature id is new takes the stored impulse of last step's unclaimed point of
    the same pair within WARM_MATCH_DISTANCE (2 mm) whose normal is within 0.1 rad: the same
    point under another id (a corner cut one step, kept the next). A point 3 mm away, or with its
    normal turned 0.2 rad, is another contact and starts cold; an id match comes first. Exact:
    impulses are copied (the normal unchanged: the tangents are the same)."""
    from physics.collision.manifold import WARM_MATCH_DISTANCE
    assert WARM_MATCH_DISTANCE == 0.002
    cache = ContactCache()
    cache.n_shapes = 2
    cache.store(_one_point(7, [0.0, 0.0, 0.0], UP), np.array([[1.5, 0.2, -0.1]]))
    np.testing.assert_array_equal(cache.lookup(_one_point(9, [1e-6, 0.0, 0.0], UP)), [[1.5, 0.2, -0.1]])
    np.testing.assert_array_equal(cache.lookup(_one_point(9, [0.003, 0.0, 0.0], UP)), [[0.0, 0.0, 0.0]])
    turned = [np.sin(0.2), np.cos(0.2), 0.0]
    np.testing.assert_array_equal(cache.lookup(_one_point(9, [0.0, 0.0, 0.0], turned)), [[0.0, 0.0, 0.0]])


def test_warm_friction_keeps_its_world_direction_when_the_tangents_flip():
    """The tangent basis is a function of the normal that flips across n_z = 0; a stored friction
    impulse is carried as the world vector λ₁ t₁ + λ₂ t₂ and projected onto the new tangents, so a
    side contact whose normal wobbles across n_z = 0 keeps its friction's direction instead of
    getting it reversed. Checked against the world vector computed independently; 1e-12: round-off
    of two 3-vector projections (the normal turned by 2e-3 rad keeps 1 − 2e-6 of it)."""
    from physics.constraints.constraints import tangent_basis
    before = np.array([1.0, 0.0, 1e-3]) / np.linalg.norm([1.0, 0.0, 1e-3])
    after = np.array([1.0, 0.0, -1e-3]) / np.linalg.norm([1.0, 0.0, -1e-3])
    cache = ContactCache()
    cache.n_shapes = 2
    cache.store(_one_point(4, [0.0, 0.5, 0.0], before), np.array([[2.0, 0.3, -0.7]]))
    got = cache.lookup(_one_point(4, [0.0, 0.5, 0.0], after))[0]
    t1, t2 = tangent_basis(before)
    u1, u2 = tangent_basis(after)
    friction_world = 0.3 * t1 + (-0.7) * t2
    assert got[0] == 2.0
    np.testing.assert_allclose(got[1:], [friction_world @ u1, friction_world @ u2], atol=1e-12)
    np.testing.assert_allclose(got[1] * u1 + got[2] * u2, friction_world, atol=2e-3)


def test_culling_keeps_most_of_the_polygon():
    """`cull4` keeps 4 of a clipped polygon's 5–8 points: the deepest, the farthest from it, the
    largest triangle, and the point adding most area outside that triangle. Over 300 random convex
    polygons (points on a circle) the kept quadrilateral has at least 0.7 of the largest area any 4
    of the points span (measured worst 0.74; scoring the fourth point by its largest triangle with
    any edge, which counts a point beside a kept corner as much as the missing corner, gave 0.57)."""
    import itertools
    from physics.collision.box_box import CHOSEN, DEPTH, POLY, cull4

    def area(points):
        centre = points.mean(axis=0)
        q = points[np.argsort(np.arctan2(points[:, 2] - centre[2], points[:, 0] - centre[0]))]
        return 0.5 * abs(q[:, 0] @ np.roll(q[:, 2], -1) - q[:, 2] @ np.roll(q[:, 0], -1))

    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(5, 9))
        angle = np.sort(rng.uniform(0.0, 2 * np.pi, n))
        points = np.stack([np.cos(angle), np.zeros(n), np.sin(angle)], axis=1)
        fs, it = np.zeros((40, 3)), np.zeros((8, 8), np.int64)
        fs[POLY:POLY + n] = points
        fs[DEPTH:DEPTH + n, 0] = rng.uniform(0.0, 1e-3, n)
        assert cull4(fs, it, POLY, n) == 4
        best = max(area(points[list(s)]) for s in itertools.combinations(range(n), 4))
        assert area(points[it[CHOSEN, :4]]) >= 0.7 * best


@pytest.mark.parametrize("depth", [-1e-6, 0.0, 1e-6, 1e-5])
def test_an_edge_resting_on_a_face_keeps_the_face_manifold(depth):
    """A 0.2 m box turned 45° about z rests on an edge on another box's top face, a micrometre or
    so deep, and rocks by 1e-5 rad about random axes: the edge axes a_x × b_j through that edge are
    then parallel to the face normal and as separated as the face, and only the tolerance an edge
    must beat a face by (`EDGE_TOLERANCE`, besides ODE's 5 %) keeps the face's manifold: both
    ends of the edge (2 points) along the face normal. Without it 10 of 200 such poses at 1 µm
    gave the edge pair's single point, and a resting box's manifold flipped between the two."""
    box = {"type": "box", "size": [0.2, 0.2, 0.2]}
    rng = np.random.default_rng(1)
    for _ in range(200):
        turned = rot(rng.normal(size=3), 1e-5) @ rot([0, 0, 1], np.pi / 4)
        c = collide(box, ([0, 0, 0], I3), box, ([0.03, 0.1 + 0.1 * np.sqrt(2) - depth, 0.01], turned), margin=0.002)
        assert len(c) == 2
        # the normal is the top face's to round-off (1e-12: no turn enters a face axis of a)
        np.testing.assert_allclose(c.normal_world, np.broadcast_to(UP, (2, 3)), atol=1e-12)


def test_culling_keeps_the_same_four_points_while_a_resting_box_rocks():
    """A 0.2 m box resting on another at a yaw of 0.3 rad, 0.1 mm deep, rocks by 1e-6 rad about
    random horizontal axes: the clipped face is an octagon of about equally deep corners, and the
    four kept (`CULL_DEPTH_TOLERANCE`: culling starts from a corner about as deep as the deepest
    and about as far out as the farthest) are the same feature ids every time, so their warm
    starts carry. Starting from the
    deepest itself, the kept four changed with the rocking (the impulses of the new ones then
    start cold). Exact: the feature ids are integers."""
    box = {"type": "box", "size": [0.2, 0.2, 0.2]}
    rng = np.random.default_rng(2)
    kept = set()
    for _ in range(100):
        axis = np.array([rng.normal(), 0.0, rng.normal()])
        turned = rot(axis, 1e-6) @ rot([0, 1, 0], 0.3)
        c = collide(box, ([0, 0, 0], I3), box, ([0.0, 0.2 - 1e-4, 0.0], turned), margin=0.002)
        assert len(c) == 4
        kept.add(tuple(sorted(c.feature_id)))
    assert len(kept) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=60), st.integers(-60, 60), st.integers(0, 70), st.integers(0, 60))
def test_lower_bound_near_is_the_binary_search_from_any_hint(values, key, hint, cut):
    """`lower_bound_near` (the warm-start lookup's search from the last point's position) returns
    the sorted keys' lower bound, numpy's searchsorted 'left', from any hint, in or past the keys,
    with duplicates, on any prefix n: the same index as a binary search, so the same impulses."""
    from physics.collision.manifold import lower_bound_near
    keys = np.sort(np.asarray(values, np.int64))
    n = min(cut, len(keys))
    assert lower_bound_near(keys, n, key, hint) == np.searchsorted(keys[:n], key, "left")


def test_stored_impulses_alternate_between_two_sets_and_a_held_cache_survives_one_store():
    """`ContactCache.store` writes the other of two sets of arrays each time: a store of as many
    points as two stores before reuses that one's arrays (no allocation a step), and what `held`
    took before a store is untouched by it, so a RATTLE retry's `put_held` gives back exactly the
    impulses it held (exact: copies). `columns` reads an impulse's normal, t1, t2 where they are
    (the solver's rows are t1, t2, n)."""
    cache = ContactCache()
    cache.n_shapes = 2
    point = _one_point(7, [0.0, 0.0, 0.0], UP)
    cache.store(point, np.array([[1.5, 0.2, -0.1]]))
    first = cache.stored()
    held = cache.held()
    cache.store(point, np.array([[0.7, -0.3, 0.4]]), columns=np.array([2, 0, 1]))
    np.testing.assert_array_equal(cache.stored().impulses, [[0.4, 0.7, -0.3]])
    np.testing.assert_array_equal(first.impulses, [[1.5, 0.2, -0.1]])     # (held through one store)
    cache.put_held(held)
    np.testing.assert_array_equal(cache.lookup(point), [[1.5, 0.2, -0.1]])
    cache.store(point, np.array([[2.0, 0.0, 0.0]]))
    cache.store(point, np.array([[3.0, 0.0, 0.0]]))
    again = cache.stored()
    cache.store(point, np.array([[4.0, 0.0, 0.0]]))
    cache.store(point, np.array([[5.0, 0.0, 0.0]]))
    assert cache.stored().impulses is again.impulses and cache.stored().keys is again.keys
    np.testing.assert_array_equal(cache.lookup(point), [[5.0, 0.0, 0.0]])
