"""Tests of physics.model.hierarchy against independent means.

- world states against a per-node composition written in the matrix form of "The Dynamics of a
  Transform Hierarchy" (skew matrices, commutators), not the kernel's cross products, and against
  `DynamicTransform @` once it exists;
- world velocities and accelerations against central finite differences of world poses in time;
- world -> local -> world round trips;
- topology edits (add, remove, reparent) against a name-keyed model, under hypothesis.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from physics.model.hierarchy import Hierarchy, NodeState

FIELDS = ("translation", "rotation", "scale", "velocity", "acceleration", "omega", "alpha")
HYP = settings(max_examples=60, deadline=None)


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def vee(m):
    return np.array([m[2, 1], m[0, 2], m[1, 0]])


def random_state(n, rng, scaled=True, magnitude=1.0):
    s = NodeState(n)
    s.translation = rng.normal(size=(n, 3)) * magnitude
    s.rotation = Rotation.random(n, random_state=rng).as_matrix() if n else np.zeros((0, 3, 3))
    s.scale = rng.uniform(0.5, 2.0, n) if scaled else np.ones(n)
    for f in ("velocity", "acceleration", "omega", "alpha"):
        setattr(s, f, rng.normal(size=(n, 3)) * magnitude)
    return s


def reference_world_node(parent, local, i, memo):
    """World state of node i in the article's matrix form ("The Dynamics of a Transform Hierarchy",
    "Dynamics of the Composition")."""
    if i in memo:
        return memo[i]
    T1, R1, S1 = local.translation[i], local.rotation[i], local.scale[i]
    v1, a1, W1, A1 = local.velocity[i], local.acceleration[i], hat(local.omega[i]), hat(local.alpha[i])
    p = parent[i]
    if p < 0:
        out = (T1, R1, S1, v1, a1, W1, A1)
    else:
        T2, R2, S2, v2, a2, W2, A2 = reference_world_node(parent, local, p, memo)
        J2 = R2 * S2
        W3 = W2 + R2 @ W1 @ R2.T
        out = (J2 @ T1 + T2, R2 @ R1, S2 * S1,
               v2 + J2 @ v1 + W2 @ J2 @ T1,
               a2 + J2 @ a1 + (A2 + W2 @ W2) @ J2 @ T1 + 2 * W2 @ J2 @ v1,
               W3,
               A2 + R2 @ A1 @ R2.T + (W2 @ W3 - W3 @ W2))
    memo[i] = out
    return out


def reference_world(parent, local):
    memo = {}
    rows = [reference_world_node(parent, local, i, memo) for i in range(len(parent))]
    out = NodeState(len(parent))
    for k, f in enumerate(("translation", "rotation", "scale", "velocity", "acceleration")):
        setattr(out, f, np.array([r[k] for r in rows]).reshape(getattr(out, f).shape))
    out.omega = np.array([vee(r[5]) for r in rows]).reshape(-1, 3)
    out.alpha = np.array([vee(r[6]) for r in rows]).reshape(-1, 3)
    return out


def assert_states_close(a, b, rel, rows_a=None, rows_b=None):
    """|a - b| <= rel * max(1, max |b|) per field: a relative error on the field's scale."""
    for f in FIELDS:
        x = getattr(a, f) if rows_a is None else getattr(a, f)[rows_a]
        y = getattr(b, f) if rows_b is None else getattr(b, f)[rows_b]
        bound = rel * max(1.0, float(np.max(np.abs(y), initial=0.0)))
        err = float(np.max(np.abs(x - y), initial=0.0))
        assert err <= bound, f"{f}: error {err:.3g} > {bound:.3g}"


@st.composite
def trees(draw, max_n=24):
    n = draw(st.integers(1, max_n))
    parent = [draw(st.integers(-1, i - 1)) for i in range(n)]
    return np.array(parent), draw(st.booleans()), draw(st.integers(0, 2**32 - 1))


# ---------------------------------------------------------------- world()

@HYP
@given(trees())
def test_world_matches_augmented_matrix_composition(tree):
    parent, scaled, seed = tree
    local = random_state(len(parent), np.random.default_rng(seed), scaled)
    h = Hierarchy(parent, local)
    # roundoff only: a few products of O(1) numbers per level, depth <= 24
    assert_states_close(h.update_world(), reference_world(parent, local), 1e-12)


@settings(max_examples=30, deadline=None)
@given(trees(max_n=12))
def test_world_matches_dynamic_transform_composition(tree):
    """world() equals composing each node's DynamicTransform onto its parent's world with `@`."""
    parent, scaled, seed = tree
    local = random_state(len(parent), np.random.default_rng(seed), scaled)
    h = Hierarchy(parent, local.to_dynamic_transform())
    world = NodeState.from_dynamic_transform(h.world())
    expected = NodeState(len(parent))
    composed = []
    for i in range(len(parent)):  # parent[i] < i: parents are composed first
        one = NodeState(1)
        for f in FIELDS:
            getattr(one, f)[0] = getattr(local, f)[i]
        dt = one.to_dynamic_transform()
        composed.append(dt if parent[i] < 0 else composed[parent[i]] @ dt)
        row = NodeState.from_dynamic_transform(composed[-1])
        for f in FIELDS:
            getattr(expected, f)[i] = getattr(row, f)[0]
    assert_states_close(world, expected, 1e-12)  # roundoff of at most 12 compositions of O(1) values


def test_world_is_a_read_only_view_with_the_values_of_a_copy():
    """world() hands out the world state without copying: read-only views of `world_state` whose
    values are bit for bit those of a copying conversion, skew forms built on first read."""
    rng = np.random.default_rng(3)
    parent = np.array([-1, 0, 1, 0, -1, 4])
    h = Hierarchy(parent, random_state(len(parent), rng))
    world = h.world()
    copied = h.world_state.to_dynamic_transform()
    pairs = [(world.transform.translation, copied.transform.translation), (world.transform.rotation, copied.transform.rotation),
             (world.transform.scale, copied.transform.scale), (world.velocity, copied.velocity),
             (world.acceleration, copied.acceleration), (world.angular_velocity, copied.angular_velocity),
             (world.angular_acceleration, copied.angular_acceleration), (world.omega_vector(), copied.omega_vector()),
             (world.alpha_vector(), copied.alpha_vector())]
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours, theirs)  # the same numbers, not merely close
    for field, array in zip(FIELDS, (world.transform.translation, world.transform.rotation, world.transform.scale,
                                     world.velocity, world.acceleration, world.omega_vector(), world.alpha_vector())):
        assert np.shares_memory(array, getattr(h.world_state, field)) and not array.flags.writeable, field
    assert world.angular_velocity is world.angular_velocity  # built once
    np.testing.assert_array_equal(world.angular_velocity @ np.ones(3), np.cross(world.omega_vector(), np.ones(3)))
    # valid until the next update: a changed local state shows in the view after one
    h.local.velocity[0] += 1.0
    h.update_world()
    np.testing.assert_array_equal(world.velocity, h.world_state.velocity)
    assert world.velocity[0, 0] == copied.velocity[0, 0] + 1.0


@pytest.mark.parametrize("scaled", [False, True])
def test_world_dynamics_are_time_derivatives_of_world_poses(scaled):
    """v, a, ω, α of the world states equal finite differences of world poses along a trajectory.

    Each local pose moves as T(t) = T + v t + a t²/2, R(t) = exp(hat(ω t + α t²/2)) R, so its
    local (v, a, ω, α) at t = 0 are the given ones; only the poses at t ≠ 0 enter the differences.
    """
    rng = np.random.default_rng(7 + scaled)
    parent = np.array([-1, 0, 1, 2, 1, -1, 5, 6])
    local = random_state(len(parent), rng, scaled)

    def world_pose(t):
        moved = local.copy()
        moved.translation = local.translation + local.velocity * t + local.acceleration * t * t / 2
        angle = local.omega * t + local.alpha * t * t / 2
        moved.rotation = Rotation.from_rotvec(angle).as_matrix() @ local.rotation
        for f in ("velocity", "acceleration", "omega", "alpha"):
            setattr(moved, f, np.zeros_like(getattr(local, f)))
        w = Hierarchy(parent, moved).update_world()
        return w.translation.copy(), w.rotation.copy()

    def omega_fd(t, dt):
        (_, Rm), (_, R0), (_, Rp) = world_pose(t - dt), world_pose(t), world_pose(t + dt)
        W = (Rp - Rm) / (2 * dt) @ np.swapaxes(R0, 1, 2)
        return 0.5 * np.stack([W[:, 2, 1] - W[:, 1, 2], W[:, 0, 2] - W[:, 2, 0], W[:, 1, 0] - W[:, 0, 1]], -1)

    world = Hierarchy(parent, local).update_world()
    h = 1e-4
    (Tm, _), (T0, _), (Tp, _) = world_pose(-h), world_pose(0.0), world_pose(h)
    # central differences: truncation ~ h² |d³x| ~ 1e-8 (depth-4 chains of O(1) rates), roundoff ~ eps/h ~ 1e-12
    np.testing.assert_allclose(world.velocity, (Tp - Tm) / (2 * h), atol=1e-6)
    np.testing.assert_allclose(world.omega, omega_fd(0.0, h), atol=1e-6)
    # second differences: roundoff ~ eps |T| / h² ~ 1e-8 at h = 1e-4; use h = 1e-3 for α (nested), truncation ~ 1e-6
    np.testing.assert_allclose(world.acceleration, (Tp - 2 * T0 + Tm) / h**2, atol=1e-5)
    H = 1e-3
    np.testing.assert_allclose(world.alpha, (omega_fd(H, 1e-5) - omega_fd(-H, 1e-5)) / (2 * H), atol=1e-4)


def test_update_world_writes_in_place_and_sees_local_writes():
    rng = np.random.default_rng(3)
    parent = np.array([-1, 0, 1])
    h = Hierarchy(parent, random_state(3, rng))
    world = h.update_world()
    translation = world.translation
    h.local.velocity[0] = [1.0, 2.0, 3.0]  # a write by the physics takes effect at the next update
    assert h.update_world() is world and world.translation is not None
    assert np.shares_memory(translation, h.world_state.translation)
    assert_states_close(world, reference_world(parent, h.local), 1e-12)


# ---------------------------------------------------------------- to_local

@HYP
@given(trees())
def test_world_local_world_round_trip(tree):
    parent, scaled, seed = tree
    rng = np.random.default_rng(seed)
    h = Hierarchy(parent, random_state(len(parent), rng, scaled))
    world = random_state(len(parent), rng, scaled)  # any world states are reachable
    assert h.to_local(world) is h.local
    # each node's local reads only two world states; the update composes depth levels of O(1) values
    assert_states_close(h.update_world(), world, 1e-12)


@HYP
@given(trees())
def test_local_world_local_round_trip(tree):
    parent, scaled, seed = tree
    local = random_state(len(parent), np.random.default_rng(seed), scaled)
    h = Hierarchy(parent, local)
    out = NodeState(len(parent))
    h.to_local(h.update_world(), out=out)
    assert_states_close(out, local, 1e-11)  # world values grow with depth (scale up to 2 per level)


# ---------------------------------------------------------------- topology edits

def world_by_name(h):
    w = h.update_world()
    return {name: i for i, name in enumerate(h.names)}, w.copy()


def check_topology(h):
    parent = h.parent
    order = h.order
    assert sorted(order.tolist()) == list(range(len(h)))
    rank = np.empty(len(h), int)
    rank[order] = np.arange(len(h))
    roots = parent < 0
    assert np.all(rank[parent[~roots]] < rank[~roots]), "a parent after its child in the order"
    for i in range(len(h)):
        assert sorted(h.children(i).tolist()) == np.flatnonzero(parent == i).tolist()
        assert h.index(h.names[i]) == i


ops = st.lists(st.tuples(st.sampled_from(["add", "remove", "reparent"]), st.integers(0, 10**6),
                         st.integers(-1, 10**6), st.sampled_from(["world", "local"])), max_size=30)


@settings(max_examples=80, deadline=None)
@given(trees(max_n=12), ops)
def test_edits_keep_world_states(tree, operations):
    parent, scaled, seed = tree
    rng = np.random.default_rng(seed)
    names = [f"n{i}" for i in range(len(parent))]
    h = Hierarchy(parent, random_state(len(parent), rng, scaled), names=names)
    counter = len(parent)
    for op, a, b, keep in operations:
        index, before = world_by_name(h)
        n = len(h)
        if op == "add" or n == 0:
            name = f"n{counter}"
            counter += 1
            p = None if b < 0 or n == 0 else h.names[b % n]
            h.add(name, p, random_state(1, rng, scaled))
            unchanged = [s for s in index]
        elif op == "remove":
            leaves = [i for i in range(n) if h.children(i).size == 0]
            name = h.names[leaves[a % len(leaves)]]
            h.remove(name)
            unchanged = [s for s in index if s != name]
        else:
            name = h.names[a % n]
            k = h.index(name)
            subtree = {k}
            for i in h.order:  # parents first: one pass finds the subtree
                if h.parent[i] in subtree:
                    subtree.add(int(i))
            outside = [i for i in range(n) if i not in subtree]
            if b < 0 or not outside:
                new_parent = None
            else:
                new_parent = h.names[outside[b % len(outside)]]
            local_before = {f: getattr(h.local, f)[k].copy() for f in FIELDS}
            h.reparent(name, new_parent, keep=keep)
            if keep == "world":
                unchanged = list(index)
            else:
                unchanged = [s for s in index if index[s] not in subtree]
                for f in FIELDS:
                    np.testing.assert_array_equal(getattr(h.local, f)[h.index(name)], local_before[f])
        check_topology(h)
        after = h.update_world()
        rows_after = [h.index(s) for s in unchanged]
        rows_before = [index[s] for s in unchanged]
        # reparent keep="world" recomputes a local from world states: roundoff on O(1)..O(2^depth) values
        assert_states_close(after, before, 1e-10, rows_after, rows_before)
        assert_states_close(after, reference_world(h.parent, h.local), 1e-12)


def test_remove_moves_last_node_into_hole():
    rng = np.random.default_rng(5)
    h = Hierarchy([-1, 0, 0, 1, 1], random_state(5, rng), names=list("abcde"))
    e_world = h.update_world().copy()
    h.remove("c")  # index 2; "e" (index 4) moves there
    assert h.names == ("a", "b", "e", "d")
    assert h.parent.tolist() == [-1, 0, 1, 1]
    assert h.index("e") == 2
    assert_states_close(h.update_world(), e_world, 0.0, [0, 1, 2, 3], [0, 1, 4, 3])


def test_remove_of_a_parent_is_moved_and_children_follow():
    rng = np.random.default_rng(6)
    h = Hierarchy([-1, 0, -1, 2, 2], random_state(5, rng), names=list("abcde"))
    before = h.update_world().copy()
    h.reparent("d", "a")
    h.reparent("e", "a")  # now "c" is a leaf
    h.remove("b")  # the last node "e" moves into slot 1: a child of "a" changes index
    h.remove("c")  # the last node "d" moves into slot 2
    check_topology(h)
    assert h.names == ("a", "e", "d")
    rows = [h.index(s) for s in ("a", "d", "e")]
    assert_states_close(h.update_world(), before, 1e-12, rows, [0, 3, 4])


def test_reparent_out_of_order_appends_subtree():
    rng = np.random.default_rng(8)
    h = Hierarchy([-1, 0, 1, -1], random_state(4, rng), names=["a", "b", "c", "z"])
    before = h.update_world().copy()
    h.reparent("b", "z")  # z comes after b in memory: b's subtree must move behind z in the order
    check_topology(h)
    order = h.order.tolist()
    assert order.index(3) < order.index(1) < order.index(2)
    assert_states_close(h.update_world(), before, 1e-12)


def test_add_grows_and_defaults_to_rest_at_parent_origin():
    rng = np.random.default_rng(9)
    h = Hierarchy([-1], random_state(1, rng))
    for k in range(50):
        h.add(f"x{k}", h.names[-1])
    check_topology(h)
    w = h.update_world()
    # an identity local at rest: every descendant has the root's world state
    assert_states_close(w, reference_world(h.parent, h.local), 1e-12)
    np.testing.assert_allclose(w.translation, np.broadcast_to(w.translation[0], (51, 3)), atol=1e-12)


# ---------------------------------------------------------------- bad input

def snapshot(h):
    return (h.parent.copy(), h.names, h.order.copy(), [h.children(i).tolist() for i in range(len(h))],
            [getattr(h.local, f).copy() for f in FIELDS])


def assert_same(a, b):
    assert np.array_equal(a[0], b[0]) and a[1] == b[1] and np.array_equal(a[2], b[2]) and a[3] == b[3]
    for x, y in zip(a[4], b[4]):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("parent, message", [
    ([-1, 1, 0], "node 1: parent 1"),
    ([-1, 0, 5], "node 2: parent 5"),
    ([-2], "node 0: parent -2"),
])
def test_constructor_rejects_bad_parent(parent, message):
    with pytest.raises(ValueError, match=message):
        Hierarchy(np.array(parent), NodeState(len(parent)))


def test_constructor_rejects_bad_shapes_and_names():
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        Hierarchy(np.zeros((2, 2), int), NodeState(4))
    with pytest.raises(ValueError, match="local holds 3 nodes, parent 2"):
        Hierarchy([-1, 0], NodeState(3))
    with pytest.raises(ValueError, match="duplicate node name 'a'"):
        Hierarchy([-1, 0], NodeState(2), names=["a", "a"])
    with pytest.raises(ValueError, match="'b': parent 3"):
        Hierarchy([-1, 3], NodeState(2), names=["a", "b"])
    zero = NodeState(2)
    zero.scale[1] = 0.0
    with pytest.raises(ValueError, match="'b': scale"):
        Hierarchy([-1, 0], zero, names=["a", "b"])


def test_bad_edits_leave_hierarchy_unchanged():
    rng = np.random.default_rng(11)
    h = Hierarchy([-1, 0, 1, -1], random_state(4, rng), names=["a", "b", "c", "d"])
    h.reparent("d", "a")  # an edited hierarchy, with links and order away from the constructor's
    before = snapshot(h)
    cases = [
        (lambda: h.reparent("a", "c"), "cannot reparent 'a' under 'c'"),
        (lambda: h.reparent("b", "b"), "cannot reparent 'b' under 'b'"),
        (lambda: h.reparent("zz", "a"), "unknown node name 'zz'"),
        (lambda: h.reparent("b", "zz"), "unknown node name 'zz'"),
        (lambda: h.reparent("b", "a", keep="both"), "keep must be"),
        (lambda: h.add("c", "a"), "duplicate node name 'c'"),
        (lambda: h.add("e", "zz"), "unknown node name 'zz'"),
        (lambda: h.remove("zz"), "unknown node name 'zz'"),
        (lambda: h.remove("a"), "cannot remove 'a': it has children"),
        (lambda: h.remove(7), "node index 7 out of range"),
        (lambda: h.index("nope"), "unknown node name 'nope'"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
        assert_same(snapshot(h), before)


def test_node_state_assignment_checks_shape():
    s = NodeState(3)
    with pytest.raises(ValueError, match=r"NodeState.velocity must have shape \(3, 3\), got \(2, 3\)"):
        s.velocity = np.zeros((2, 3))


def test_update_world_and_to_local_do_not_allocate_state_arrays():
    import tracemalloc

    n = 20_000
    parent = np.arange(n) // 2 - 1  # parent[i] = i // 2 - 1 < i: a binary-ish forest
    h = Hierarchy(parent, random_state(n, np.random.default_rng(12)))
    world = h.update_world().copy()
    h.to_local(world)  # compile before measuring
    tracemalloc.start()
    h.update_world()
    h.to_local(world)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # one fresh float64 (n, 3) array would be 480 kB; views and argument tuples are well under 20 kB
    assert peak < 20_000, peak


def test_to_local_accepts_a_dynamic_transform():
    rng = np.random.default_rng(13)
    parent = np.array([-1, 0, 1, 0])
    local = random_state(4, rng)
    h = Hierarchy(parent, local.to_dynamic_transform())
    out = h.to_local(h.world(), out=NodeState(4))
    assert_states_close(out, local, 1e-12)  # roundoff of a depth-3 round trip


def test_many_edits_keep_world_states_through_order_compaction():
    """150 removals and keep-world reparents on a 300-node tree: enough holes in the evaluation
    order to compact it several times; every surviving node keeps its world state."""
    rng = np.random.default_rng(14)
    n = 300
    parent = (rng.random(n) * np.arange(n)).astype(int) - 1
    h = Hierarchy(parent, random_state(n, rng), names=[f"n{i}" for i in range(n)])
    before = h.update_world().copy()
    original = {f"n{i}": i for i in range(n)}
    for step in range(150):
        if step % 2:
            leaves = [i for i in range(len(h)) if h.children(i).size == 0]
            h.remove(int(leaves[rng.integers(len(leaves))]))
        else:
            k = int(rng.integers(len(h)))
            subtree = {k}
            for i in h.order:
                if h.parent[i] in subtree:
                    subtree.add(int(i))
            outside = [i for i in range(len(h)) if i not in subtree]
            h.reparent(k, int(outside[rng.integers(len(outside))]) if outside else None, keep="world")
    check_topology(h)
    assert len(h) == n - 75
    rows_before = [original[s] for s in h.names]
    # each keep-world reparent re-derives one local from world states: roundoff compounds over the
    # edits and the depth (measured 5e-14 relative; 1e-12 leaves a 20x margin)
    assert_states_close(h.update_world(), before, 1e-12, None, rows_before)
