"""Sleeping: islands of bodies at rest on their parent ride it rigidly until something could move them.

Box2D (src/island.c, src/solver_set.c) and Jolt (IslandBuilder) put resting bodies to sleep by
islands; here the rest is in the parent's frame (settings.sleep). A dynamic body at rest on its
parent — local |v| < SLEEP_LINEAR and |ω| < SLEEP_ANGULAR — for SLEEP_TIME, with every dynamic body
it touches, rides rigidly with its parent (local state held, no contact rows, no narrow phase
against static shapes) until something could move it: an impulse, a setting, an awake body's
bounding box, or a change of the field it rests in — gravity less the parent's acceleration, its
angular velocity and angular acceleration, in the parent's axes (a deck turning steadily keeps it;
a turret yawing on a turning hull does not) — by more than WAKE_FIELD.

The stages (`physics.pipeline.simulation.Simulation` calls them in this order within a sub-step):
  wake_on_field    sleeping bodies whose field changed wake (start of the sub-step)
  awake_pairs      the broad phase's pairs wake the sleeping bodies an awake body reaches, and say
                   which pairs to solve and which to probe (`physics.constraints.solver.SceneSolver`)
  wake_touched     a probe that touches wakes its body (`SceneSolver`)
  touch_flags      per body: does it touch a support of its own assembly, or a foreign shape?
  hold             sleeping bodies back where they rest, after the free step
  sleep_islands    still time, islands (union–find over the pairs), and who falls asleep
  island_of        the island of some bodies: what a RATTLE retry redoes (`physics.pipeline.stages`)

Conventions: D dynamic bodies ("slots", `Model.dyn` order, physics.model.model), N nodes; a body's parent is a node
index (−1 = the world). World arrays are the hierarchy's world state (N, ...), local arrays its
local state (N, ...), in the parent's frame; omega_body (D, 3) is a body's angular velocity relative
to the world in its own axes. The kernels take named bundles (`Bodies`, `ParentMotion`,
`LocalMotion`, `SleepState`, `ShapeRest`) whose arrays they read and write in place.
"""
from typing import NamedTuple

import numpy as np
from physics.core.compiled import kernel

from physics.math.rotation_kernels import load3, load33, matvec, matvec_t, mul, store3, store33, sub

SLEEP_LINEAR = 0.05     # m/s (Box2D v3's contact speed 0.05 m/s)
SLEEP_ANGULAR = 0.05    # rad/s
SLEEP_TIME = 0.5        # s (Box2D's b2_timeToSleep)
WAKE_FIELD = 1e-3       # m/s², rad/s, rad/s²
# Per body, what this step's contact points touch (`touch_flags`): a static or kinematic shape of
# the assembly it rests in (it can rest on it), or one of another assembly (it may move against it).
SUPPORTED, FOREIGN = 1, 2


class Bodies(NamedTuple):
    """The dynamic bodies (D,), constant for a scene."""

    node: np.ndarray        # (D,) int: each body's node
    parent: np.ndarray      # (D,) int: its parent's node, −1 = the world
    sleepable: np.ndarray   # (D,) bool: may sleep (not below or above another dynamic body, in no joint)


class ParentMotion(NamedTuple):
    """The world motion of every node (N, ...), read at a body's parent (the hierarchy's world state)."""

    rotation: np.ndarray        # (N, 3, 3)
    scale: np.ndarray           # (N,)
    acceleration: np.ndarray    # (N, 3)
    omega: np.ndarray           # (N, 3)
    alpha: np.ndarray           # (N, 3)


class LocalMotion(NamedTuple):
    """What sleeping holds of a body: its local pose and velocity (N, ...) and omega_body (D, 3)."""

    translation: np.ndarray     # (N, 3)
    rotation: np.ndarray        # (N, 3, 3)
    velocity: np.ndarray        # (N, 3)
    omega_body: np.ndarray      # (D, 3)


class SleepState(NamedTuple):
    """The sleep stage's own state per body (D, ...), part of what decides the future (snapshots)."""

    still: np.ndarray               # (D,) s: how long the body has been still
    asleep: np.ndarray              # (D,) bool
    held_translation: np.ndarray    # (D, 3): the local translation it sleeps at
    held_rotation: np.ndarray       # (D, 3, 3): the local rotation it sleeps at
    held_omega: np.ndarray          # (D, 3): the omega_body it sleeps with (its parent's spin)
    held_field: np.ndarray          # (D, 9): the field it came to rest in (`_field`)


class ShapeRest(NamedTuple):
    """Per shape (S,) and per body (B,): what `awake_pairs` and `touch_flags` compare."""

    body: np.ndarray            # (S,) int: the solver body the shape moves with, −1 = static or kinematic
    assembly: np.ndarray        # (S,) int: the node of the rigid assembly it moves with (−1 = the world)
    rest_assembly: np.ndarray   # (B,) int: the assembly each body rests in (its parent's; −1 = the world)


def parent_motion(world_state):
    """The `ParentMotion` of a `physics.model.hierarchy.NodeState` (views, no copies)."""
    _, rotation, scale, _, acceleration, omega, alpha = world_state.views()
    return ParentMotion(rotation, scale, acceleration, omega, alpha)


@kernel(inline=True)
def _field(q, world, gravity):
    """What a body resting on parent q feels, in q's axes: (R2ᵀ (g − a2) / s2, R2ᵀ ω2, R2ᵀ α2);
    (g, 0, 0) for the world. Its local acceleration at rest follows from these and its place."""
    if q < 0:
        return (gravity[0], gravity[1], gravity[2]), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    R = load33(world.rotation, q)
    free = matvec_t(R, sub((gravity[0], gravity[1], gravity[2]), load3(world.acceleration, q)))
    return mul(1.0 / world.scale[q], free), matvec_t(R, load3(world.omega, q)), matvec_t(R, load3(world.alpha, q))


@kernel(inline=True)
def _field_change(field, held_field, k):
    """The largest change of any component of `field` from held_field[k] (9,)."""
    change = 0.0
    for part in range(3):
        for c in range(3):
            change = max(change, abs(field[part][c] - held_field[k, 3 * part + c]))
    return change


@kernel(inline=True)
def _record_field(field, held_field, k):
    for part in range(3):
        for c in range(3):
            held_field[k, 3 * part + c] = field[part][c]


@kernel
def wake_on_field(bodies, world, gravity, sleep):
    """Wake each sleeping body whose field (`_field`; `world` a `ParentMotion`) moved more than
    WAKE_FIELD from the one it came to rest in, in place on `sleep` (a `SleepState`)."""
    for k in range(bodies.node.size):
        if not sleep.asleep[k]:
            continue
        change = _field_change(_field(bodies.parent[k], world, gravity), sleep.held_field, k)
        if not change <= WAKE_FIELD:
            sleep.asleep[k] = False
            sleep.still[k] = 0.0


@kernel
def hold(bodies, sleep, local):
    """Sleeping bodies back where they rest on their parent, at rest (after the free step), in
    place on `local` (a `LocalMotion`)."""
    for k in range(bodies.node.size):
        if sleep.asleep[k]:
            i = bodies.node[k]
            store3(local.translation, i, load3(sleep.held_translation, k))
            store33(local.rotation, i, load33(sleep.held_rotation, k))
            store3(local.velocity, i, (0.0, 0.0, 0.0))
            store3(local.omega_body, k, load3(sleep.held_omega, k))


@kernel
def _island_root(island, k):
    """Union–find root of k, halving the path as it climbs."""
    while island[k] != k:
        island[k] = island[island[k]]
        k = island[k]
    return k


@kernel
def _joined(pairs, count):
    """Union–find forest of `count` bodies joined by pairs (K, 2) of them (−1 = static: joins
    nothing); `_island_root` finds an island's root in it."""
    island = np.arange(count)
    for p in range(pairs.shape[0]):
        a, b = pairs[p, 0], pairs[p, 1]
        if a >= 0 and b >= 0:
            ra, rb = _island_root(island, a), _island_root(island, b)
            if ra != rb:
                island[ra] = rb
    return island


@kernel
def island_of(pairs, count, members):
    """(count,) bool: the bodies in an island (union–find over pairs (K, 2) of bodies, −1 = static)
    with any of `members` (M,) (−1 skipped): what a RATTLE retry redoes (`physics.pipeline.retry.Undo`)."""
    island = _joined(pairs, count)
    marked = np.zeros(count, np.bool_)
    for m in range(members.size):
        if members[m] >= 0:
            marked[_island_root(island, members[m])] = True
    out = np.empty(count, np.bool_)
    for k in range(count):
        out[k] = marked[_island_root(island, k)]
    return out


@kernel
def sleep_islands(bodies, pairs, touch, world, gravity, local, h, sleep):
    """The sleep stage (`physics.pipeline.stages.stage_sleep`), in place on `sleep` and `local`: still[k] += h for
    each awake body slower than SLEEP_LINEAR and SLEEP_ANGULAR in its parent's frame, in a field
    (`_field`) that stays within WAKE_FIELD of the one it came to rest in (held_field), touching no
    shape of another assembly (touch & FOREIGN, `touch_flags`), else 0; the islands (union–find over
    the candidate pairs (K, 2) of bodies, −1 = static) with a member resting on its own assembly
    (touch & SUPPORTED: a body drifting slowly in space does not sleep) whose bodies all may sleep
    and have been still for SLEEP_TIME fall asleep: local velocity and ω set to 0 (omega_body =
    R1ᵀ R2ᵀ ω2), and what they hold recorded. An island that touches a body that may not sleep stays
    awake."""
    D = bodies.node.size
    island = _joined(pairs, D)
    ready = np.ones(D, np.bool_)        # per island root: may every member sleep now?
    supported = np.zeros(D, np.bool_)   # per island root: does a member rest on its own assembly?
    for k in range(D):
        if touch[k] & SUPPORTED:
            supported[_island_root(island, k)] = True
    still, asleep, held_field = sleep.still, sleep.asleep, sleep.held_field
    for k in range(D):
        if asleep[k]:
            continue
        i, q = bodies.node[k], bodies.parent[k]
        w = matvec(load33(local.rotation, i), load3(local.omega_body, k))      # ω1 = R1 ω_body − R2ᵀ ω2
        if q >= 0:
            w = sub(w, matvec_t(load33(world.rotation, q), load3(world.omega, q)))
        v = load3(local.velocity, i)
        slow = v[0] * v[0] + v[1] * v[1] + v[2] * v[2] < SLEEP_LINEAR * SLEEP_LINEAR \
            and w[0] * w[0] + w[1] * w[1] + w[2] * w[2] < SLEEP_ANGULAR * SLEEP_ANGULAR
        if slow and bodies.sleepable[k] and not touch[k] & FOREIGN:
            # still time counts while the field stays what it was when the body came to rest
            field = _field(q, world, gravity)
            if still[k] > 0.0 and _field_change(field, held_field, k) <= WAKE_FIELD:
                still[k] += h
            else:
                still[k] = h
                _record_field(field, held_field, k)
        else:
            still[k] = 0.0
        if still[k] < SLEEP_TIME:
            ready[_island_root(island, k)] = False
    for k in range(D):
        root = _island_root(island, k)
        if asleep[k] or not ready[root] or not supported[root]:
            continue
        i, q = bodies.node[k], bodies.parent[k]
        asleep[k] = True
        R1 = load33(local.rotation, i)
        spin = matvec_t(load33(world.rotation, q), load3(world.omega, q)) if q >= 0 else (0.0, 0.0, 0.0)
        store3(local.omega_body, k, matvec_t(R1, spin))
        store3(local.velocity, i, (0.0, 0.0, 0.0))
        store3(sleep.held_translation, k, load3(local.translation, i))
        store33(sleep.held_rotation, k, R1)
        store3(sleep.held_omega, k, load3(local.omega_body, k))


@kernel
def awake_pairs(pairs, shapes, awake):
    """Sleeping bodies woken by this step's candidate pairs (K, 2) of shapes (boxes within reach),
    in place on awake (B,): a pair of an awake and a sleeping body wakes the sleeping one, and so on
    until none is left (its island wakes whole). `shapes`: a `ShapeRest`. Returns (solve, probe) per
    pair: solve, it has an awake body; probe, a sleeping body against a static or kinematic shape of
    another assembly than the one it rests in, or two sleeping bodies resting in different
    assemblies (they may move against each other: `physics.constraints.solver.SceneSolver` wakes them if they
    touch, `wake_touched`). The other pairs — sleeping bodies on their own assembly or on sleeping
    bodies resting in it — are skipped."""
    shape_body, rest_assembly = shapes.body, shapes.rest_assembly
    changed = True
    while changed:
        changed = False
        for p in range(pairs.shape[0]):
            a, b = shape_body[pairs[p, 0]], shape_body[pairs[p, 1]]
            if a >= 0 and b >= 0 and awake[a] != awake[b]:
                awake[a] = awake[b] = True
                changed = True
    solve, probe = np.empty(pairs.shape[0], np.bool_), np.zeros(pairs.shape[0], np.bool_)
    for p in range(pairs.shape[0]):
        s, t = pairs[p, 0], pairs[p, 1]
        a, b = shape_body[s], shape_body[t]
        solve[p] = (a >= 0 and awake[a]) or (b >= 0 and awake[b])
        if solve[p]:
            continue
        if a >= 0 and b >= 0:       # two sleeping bodies resting in frames that may move apart
            probe[p] = rest_assembly[a] != rest_assembly[b]
        elif a >= 0:
            probe[p] = shapes.assembly[t] != rest_assembly[a]
        elif b >= 0:
            probe[p] = shapes.assembly[s] != rest_assembly[b]
    return solve, probe


@kernel
def touch_flags(shape_a, shape_b, shapes, flags):
    """Per body, from this step's contact points (M,) (within the margin), into flags (B,): SUPPORTED
    if it touches a static or kinematic shape of the assembly it rests in (its parent's: what it
    can rest on), FOREIGN if one of another assembly (which may move against it). `shapes`: a
    `ShapeRest`. `sleep_islands` needs an island with a support and no foreign touch."""
    for m in range(shape_a.size):
        s, t = shape_a[m], shape_b[m]
        for own, other in ((s, t), (t, s)):
            b = shapes.body[own]
            if b >= 0 and shapes.body[other] < 0:
                flags[b] |= SUPPORTED if shapes.assembly[other] == shapes.rest_assembly[b] else FOREIGN


@kernel
def wake_touched(shape_a, shape_b, shape_body, awake):
    """Wake the sleeping bodies that have contact points (M,), in place on awake (B,); how many woke."""
    woke = 0
    for m in range(shape_a.size):
        for s in (shape_a[m], shape_b[m]):
            b = shape_body[s]
            if b >= 0 and not awake[b]:
                awake[b] = True
                woke += 1
    return woke
