"""`physics.dynamics.body_passes.carry_pass`: the carried bodies' local velocities in one world pass.

A carried body (one with a dynamic ancestor) must come out with the world velocity it was given,
v3 = v2 + ω2 × (x3 − x2) + s2 R2 v1 = target, whatever lies between it and its ancestors (frames
that are not bodies, scales, spins), and the world state it leaves must be the world of the local
state it leaves: a fresh world pass changes no bit of it. Checked on random trees against those two
independent facts, and against a reference that solves v1 generation by generation in numpy, each
generation after a full world pass (`Hierarchy.update_world`).
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physics.dynamics.body_passes import NodeArrays, carry_pass
from physics.model.hierarchy import Hierarchy, NodeState

# Solving v1 from the target and recomposing v3 is a handful of products of unit-size numbers
# (scales 0.5–2): rounding leaves a few ulps of |v| ~ 10, far below 1e-11.
TOLERANCE = 1e-11


def _random_tree(rng, n):
    """A random tree (every node after its parent), its local state random, and which nodes are
    bodies: about half of them, so that bodies sit below frames that are not bodies and below
    other bodies, several generations deep."""
    parent = np.array([-1] + [int(rng.integers(max(0, i - 3), i)) for i in range(1, n)])
    local = NodeState(n)
    local.translation = rng.normal(size=(n, 3))
    local.rotation = Rotation.random(n, random_state=rng.integers(1 << 31)).as_matrix()
    local.scale = rng.uniform(0.5, 2.0, n)
    local.velocity = rng.normal(size=(n, 3))
    local.acceleration = rng.normal(size=(n, 3))
    local.omega = rng.normal(size=(n, 3))
    local.alpha = rng.normal(size=(n, 3))
    body = rng.random(n) < 0.5
    body[0] = True
    return parent, local, np.flatnonzero(body)


def _nearest_body(parent, nodes):
    """Each body's nearest dynamic ancestor's slot (−1: none) and its generation."""
    slot = {int(i): k for k, i in enumerate(nodes)}
    nearest, generation = np.full(len(nodes), -1), np.zeros(len(nodes), int)
    for k, i in enumerate(nodes):
        q = parent[i]
        while q >= 0 and int(q) not in slot:
            q = parent[q]
        if q >= 0:
            nearest[k] = slot[int(q)]
            generation[k] = generation[nearest[k]] + 1     # parents come first (ancestors have lower indices)
    return nearest, generation


def _reference(hierarchy, parent, nodes, generation, active, target, body_slot, omega_body):
    """v1 = R2ᵀ (target − v2 − ω2 × (x3 − x2)) / s2 for each generation after the first, after a
    full world pass: the generation-by-generation form, in numpy."""
    for g in range(1, generation.max(initial=0) + 1):
        world = hierarchy.update_world(body_slot, omega_body)
        for k in np.flatnonzero((generation == g) & active):
            i, q = nodes[k], parent[nodes[k]]
            lever = world.translation[i] - world.translation[q]
            relative = target[k] - world.velocity[q] - np.cross(world.omega[q], lever)
            hierarchy.local.velocity[i] = world.rotation[q].T @ relative / world.scale[q]


@pytest.mark.parametrize("counteract", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_one_pass_gives_the_targets_and_a_world_of_its_local_state(seed, counteract):
    """With counteraction off only the bodies whose motion is their own (`own`: a joint's to its
    carrier) are solved again; the others keep their local velocity, as bodies outside `active` do."""
    rng = np.random.default_rng(seed)
    parent, local, nodes = _random_tree(rng, 40)
    nearest, generation = _nearest_body(parent, nodes)
    assert generation.max() >= 3        # several generations, or the test says little
    body_slot = np.full(len(parent), -1)
    body_slot[nodes] = np.arange(len(nodes))
    omega_body = rng.normal(size=(len(nodes), 3))
    active = rng.random(len(nodes)) < 0.8
    target = rng.normal(size=(len(nodes), 3))
    own = rng.random(len(nodes)) < 0.5      # (ignored with counteraction on)
    solved = active & (counteract | own)

    reference = Hierarchy(parent, local.copy())
    _reference(reference, parent, nodes, generation, solved, target, body_slot, omega_body)

    hierarchy = Hierarchy(parent, local.copy())
    hierarchy.update_world(body_slot, omega_body)
    before = hierarchy.local.velocity.copy()
    world = NodeArrays(*hierarchy.world_state._arrays())
    carry_pass(nodes, nearest, active, counteract, own, target, world, hierarchy.local._arrays()[3],
               hierarchy.world_pass_arguments(body_slot, omega_body))

    carried = (nearest >= 0) & solved
    # the targets reached, through every frame between a body and its ancestors
    np.testing.assert_allclose(hierarchy.world_state.velocity[nodes[carried]], target[carried],
                               rtol=0, atol=TOLERANCE)
    # a body carried or not, its own generation's reference
    np.testing.assert_allclose(hierarchy.local.velocity, reference.local.velocity, rtol=0, atol=TOLERANCE)
    # the others keep their bits: roots' bodies, bodies outside `active` (or not their own), frames
    kept = np.ones(len(parent), bool)
    kept[nodes[carried]] = False
    assert np.array_equal(hierarchy.local.velocity[kept], before[kept])
    # the world it leaves is its local state's, to the bit
    left = {name: getattr(hierarchy.world_state, name).copy() for name in ("translation", "velocity", "omega",
                                                                          "acceleration", "alpha")}
    hierarchy.update_world(body_slot, omega_body)
    for name, value in left.items():
        assert np.array_equal(getattr(hierarchy.world_state, name), value), name


def test_no_carried_body_no_pass():
    """With no active body below another, nothing is written (not even the world state)."""
    rng = np.random.default_rng(11)
    parent, local, nodes = _random_tree(rng, 20)
    nearest, _ = _nearest_body(parent, nodes)
    body_slot = np.full(len(parent), -1)
    body_slot[nodes] = np.arange(len(nodes))
    hierarchy = Hierarchy(parent, local.copy())
    world = NodeArrays(*hierarchy.world_state._arrays())
    hierarchy.world_state.velocity[:] = 7.0     # stale on purpose: a pass would overwrite it
    active = nearest < 0
    carry_pass(nodes, nearest, active, True, np.zeros(len(nodes), bool), rng.normal(size=(len(nodes), 3)), world,
               hierarchy.local._arrays()[3],
               hierarchy.world_pass_arguments(body_slot, rng.normal(size=(len(nodes), 3))))
    assert np.all(hierarchy.world_state.velocity == 7.0)
    assert np.array_equal(hierarchy.local.velocity, local.velocity)
