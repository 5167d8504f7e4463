"""The step's compiled passes over the dynamic bodies, between the hierarchy's arrays and the bodies'
world motion: gathering the integrator's inputs (`dynamic_inputs`), placing integrated bodies in
their parents' frames generation by generation (`place_bodies`), writing kinematic nodes' motion
back (`scatter_motion`), the solver's world-frame bodies (`solver_bodies`), applying the solver's
world changes as local ones with counteraction (`move_bodies`, `keep_momentum`; for every body with
the world pass and the carried velocities in one call, `apply_changes`), and the scans
that stop a run (`first_divergent`, `first_beyond_reach`). The formulas are "The Dynamics of a
Transform Hierarchy"'s (docs/references.md); what each stage does with them, physics.pipeline.simulation.

Conventions: N nodes, D dynamic bodies (slots in `physics.model.model.Model` order), world frame unless
a name says otherwise; the kernels take the bundles below, built once per topology of arrays the
steps change in place (`physics.pipeline.stages.Workspace`), so a step builds none.
"""
from typing import NamedTuple

import numpy as np

from physics.core.compiled import kernel
from physics.dynamics.integrators import divergence
from physics.model.hierarchy import node_world, world_from_local
from physics.math.rotation_kernels import add, cross as cross3, exp_so3, load3, load33, matmul, matmul_tn, \
    matrix_from_quaternion, matvec, matvec_t, mul, quaternion_from_matrix, solve3, store3, store33, sub, transpose

class NodeArrays(NamedTuple):
    """A `physics.model.hierarchy.NodeState` (the local or the world state) as its seven (N, ...) views."""

    translation: np.ndarray     # (N, 3)
    rotation: np.ndarray        # (N, 3, 3)
    scale: np.ndarray           # (N,)
    velocity: np.ndarray        # (N, 3)
    acceleration: np.ndarray    # (N, 3)
    omega: np.ndarray           # (N, 3)
    alpha: np.ndarray           # (N, 3)


class DynamicBodies(NamedTuple):
    """The dynamic bodies (D,) as the kernels read them (`Model`: constant for a topology)."""

    node: np.ndarray                # (D,) int: each body's node
    parent: np.ndarray              # (D,) int: its parent's node, −1 = the world
    nearest_slot: np.ndarray        # (D,) int: the slot of its nearest dynamic ancestor, −1 = none
    generation_order: np.ndarray    # (D,) int: the slots, ancestors first
    mass: np.ndarray                # (D,) kg
    inertia: np.ndarray             # (D, 3) principal moments, body axes
    force_applied: np.ndarray       # (D, 3) N, world frame
    own_motion: np.ndarray          # (D,) bool: its world motion its own whatever the counteraction (`Model`)


class DynamicInputs(NamedTuple):
    """What the dynamic stage steps (D, ...), gathered by `dynamic_inputs`: the bodies' local
    state, world force, and their parents' world motion (the integrator's frame)."""

    translation: np.ndarray     # (D, 3)
    rotation: np.ndarray        # (D, 3, 3)
    velocity: np.ndarray        # (D, 3)
    force: np.ndarray           # (D, 3) m g + F_applied
    frame_rotation: np.ndarray  # (D, 3, 3) R2
    frame_scale: np.ndarray     # (D,) s2
    frame_acceleration: np.ndarray  # (D, 3) a2
    frame_omega: np.ndarray     # (D, 3) ω2
    frame_alpha: np.ndarray     # (D, 3) α2

    @classmethod
    def empty(cls, count):
        return cls(np.empty((count, 3)), np.empty((count, 3, 3)), np.empty((count, 3)), np.empty((count, 3)),
                   np.empty((count, 3, 3)), np.empty(count), np.empty((count, 3)), np.empty((count, 3)),
                   np.empty((count, 3)))


@kernel(refcounts=False)
def body_energy(nodes, mass, inertia_body, omega_body, velocity, translation, gravity, out):
    """out[0] = Σ ½ m v² + ½ ω_bᵀ I ω_b and out[1] = Σ −m g · x over the dynamic bodies `nodes` (D,)
    (slot s is node nodes[s]: omega_body (D, 3) by slot; mass (N,), inertia_body (N, 3) principal,
    velocity (N, 3) world, translation (N, 3) by node): `physics.pipeline.stages.energy`'s
    kinetic and potential energy in one pass that allocates nothing (the runaway check's, once a
    second); summed body by body, so its last bits are not numpy's (pairwise) sums'."""
    kinetic, potential = 0.0, 0.0
    for s in range(nodes.shape[0]):
        b = nodes[s]
        linear = velocity[b, 0] * velocity[b, 0] + velocity[b, 1] * velocity[b, 1] + velocity[b, 2] * velocity[b, 2]
        spin = 0.0
        for i in range(3):
            spin += inertia_body[b, i] * omega_body[s, i] * omega_body[s, i]
        kinetic += 0.5 * (mass[b] * linear + spin)
        potential -= mass[b] * (translation[b, 0] * gravity[0] + translation[b, 1] * gravity[1]
                                + translation[b, 2] * gravity[2])
    out[0], out[1] = kinetic, potential


@kernel(refcounts=False)
def _solve_rows_into(matrices, vectors, out):
    for k in range(vectors.shape[0]):
        store3(out, k, solve3(load33(matrices, k), load3(vectors, k)))


def solve_rows(matrices, vectors):
    """(B,3,3)⁻¹ (B,3) -> (B,3), one 3×3 system per row by Cramer's rule in compiled code. Not
    np.linalg.solve: LAPACK's kernel, and so the last bits, depend on the CPU (OpenBLAS's SkylakeX
    kernel and its Haswell one gave the top two different golden hashes)."""
    out = np.empty(np.shape(vectors))
    _solve_rows_into(np.ascontiguousarray(matrices, float), np.ascontiguousarray(vectors, float), out)
    return out


@kernel(refcounts=False)
def _turn_rows(rotvec, rotation):
    for k in range(rotvec.shape[0]):
        store33(rotation, k, matmul(exp_so3(load3(rotvec, k)), load33(rotation, k)))


def turn_rows(rotvec, rotation):
    """exp(hat(r)) R per row, rotation vectors r (B, 3) world, R (B, 3, 3) -> (B, 3, 3) (a new array;
    `physics.math.rotation_kernels.exp_so3`, compiled: numpy's `@` on stacked 3×3s goes to the
    BLAS, whose rounding depends on the CPU)."""
    out = np.array(rotation, float)
    _turn_rows(np.ascontiguousarray(rotvec, float), out)
    return out


@kernel(refcounts=False)
def angular_momentum(bodies, out):
    """out (D, 3) = L = I_world ω of the solver's `bodies` (`WorldBodies`): (R I⁻¹ Rᵀ)⁻¹ ω per row by
    Cramer's rule, as `solve_rows` (the same bits), into the caller's array."""
    velocity = bodies.velocity
    for k in range(velocity.shape[0]):
        store3(out, k, solve3(load33(bodies.inverse_inertia, k), (velocity[k, 3], velocity[k, 4], velocity[k, 5])))


@kernel(refcounts=False)
def impulse_changes(inverse_mass, bodies, dx, dtheta, impulse, step, dv, moved):
    """The changes an impulse × h (D, 6) [linear, angular] world makes over a step h = step[0], with
    the pose changes dx, dθ (D, 3) that it made: dv = M⁻¹ impulse / h (inverse_mass (D,), the
    `WorldBodies`' world inverse inertia) and moved = [dx, dθ], into the caller's (D, 6) arrays.
    Each angular row's sum is numpy's einsum's ("bij,bj->bi", the bits `rows_times` gives):
    0 + ((a₀ b₀ + a₂ b₂) + a₁ b₁)."""
    inverse_inertia, h = bodies.inverse_inertia, step[0]
    for k in range(dv.shape[0]):
        for i in range(3):
            dv[k, i] = inverse_mass[k] * impulse[k, i] / h
            dv[k, 3 + i] = (0.0 + ((inverse_inertia[k, i, 0] * impulse[k, 3] + inverse_inertia[k, i, 2] * impulse[k, 5])
                                   + inverse_inertia[k, i, 1] * impulse[k, 4])) / h
            moved[k, i] = dx[k, i]
            moved[k, 3 + i] = dtheta[k, i]


def rows_times(matrices, vectors):
    """(B,3,3) @ (B,3) -> (B,3)."""
    return np.einsum("bij,bj->bi", matrices, vectors)


def rows_transposed_times(matrices, vectors):
    """(B,3,3)^T @ (B,3) -> (B,3)."""
    return np.einsum("bji,bj->bi", matrices, vectors)


@kernel(inline=True)
def _get3(a, i, c):
    """a[i, c:c + 3] as a 3-tuple (the [v, ω] halves of a (D, 6) row)."""
    return (a[i, c], a[i, c + 1], a[i, c + 2])


@kernel(inline=True)
def _put3(a, i, c, v):
    a[i, c], a[i, c + 1], a[i, c + 2] = v[0], v[1], v[2]


@kernel(inline=True)
def _moved_pose(k, nearest, own, counteract, nodes, world_translation, dx):
    """(x', T): where `move_bodies` leaves body k's centre and how it turns it: by its own change
    (x + Δx, exp(Δθ)) where its motion is its own (counteraction on, a root, `own`), else composed
    down from its first such ancestor C through the inheriting ones, x_c' = x_p' + T_p (x_c − x_p +
    Δx_c), T_c = T_p exp(Δθ_c) (the local pose each keeps, moved by its own change, as the world
    pass reads it). Without arrays: each step down finds the next body by climbing from k."""
    top = k
    while not counteract and nearest[top] >= 0 and not own[top]:
        top = nearest[top]
    x, T = add(load3(world_translation, nodes[top]), _get3(dx, top, 0)), exp_so3(_get3(dx, top, 3))
    at = top
    while at != k:
        c = k
        while nearest[c] != at:
            c = nearest[c]
        lever = add(sub(load3(world_translation, nodes[c]), load3(world_translation, nodes[at])), _get3(dx, c, 0))
        x, T = add(x, matvec(T, lever)), matmul(T, exp_so3(_get3(dx, c, 3)))
        at = c
    return x, T


@kernel(refcounts=False)
def move_bodies(bodies, counteract, dv, dx, world, local, total, before, active):
    """`physics.pipeline.stages.apply_world_changes` up to the world update, in place on the `local` arrays
    (`NodeArrays`) of the dynamic `bodies` (`DynamicBodies`) that are `active` (D,) bool (the others'
    changes are zero, and their rows are left as they are: a carried body's pose solved again from
    unmoved parents differs by round-off), with `world` the world state before the move. total
    (D, 6) gets each body's change of world [v, ω], before (D, 3, 3) its world rotation before the
    move.

    With counteraction a carried body's pose is solved from its parent's moved pose, exactly: its
    nearest dynamic ancestor A moves rigidly (x_A + Δx_A, exp(Δθ_A) R_A), and the parent q riding
    it with it, x_q' = x_A + Δx_A + exp(Δθ_A)(x_q − x_A), R_q' = exp(Δθ_A) R_q; the body is to
    end at (x3 + Δx3, exp(Δθ3) R3), so T1 = R_q'ᵀ (x3 + Δx3 − x_q') / s_q, R1 = R_q'ᵀ exp(Δθ3) R3.
    (The first-order form, Δx3 − Δx_A − Δθ_A × (x3 − x_A) applied in the parent's frame before its
    turn, leaves −½ Δθ_A × (Δθ_A × (x3 − x_A)) + Δθ_A × (Δx3 − Δx_A) of position and
    ½ Δθ_A × (Δθ3 − Δθ_A) of rotation: of order h⁴ for RATTLE's projections, whose Δθ is of
    order h², a local error that left a nested arm's fourth-order composed step third order.)
    Its velocity keeps the first-order form: `physics.pipeline.stages.apply_world_changes` solves it again.
    A body of `bodies.own_motion` (one in a joint: `physics.model.model.Model._own_motion`) is
    counteracted whatever `counteract` says. Without counteraction its carrier A may be a body that
    inherits: A then ends where its carrier's move takes it, x_A' = x_C' + T_C (x_A − x_C + Δx_A),
    turned by T_A = T_C exp(Δθ_A) (C its nearest dynamic ancestor, moved to x_C' and turned by
    T_C: the local pose A keeps, moved by its own change, as the world pass reads it), and the
    body's pose is solved from that, its velocity counteracting A's whole world change."""
    nodes, parent, nearest, generation_order = bodies.node, bodies.parent, bodies.nearest_slot, bodies.generation_order
    world_translation, world_rotation, world_scale = world.translation, world.rotation, world.scale
    velocity, translation, rotation = local.velocity, local.translation, local.rotation
    for k in range(nodes.size):
        for c in range(6):
            total[k, c] = dv[k, c]
    own = bodies.own_motion
    if not counteract:      # a child inherits its ancestors' change (ancestors first)
        for k in generation_order:
            a = nearest[k]
            if a >= 0 and not own[k]:
                arm = sub(load3(world_translation, nodes[k]), load3(world_translation, nodes[a]))
                moved = add(_get3(total, a, 0), cross3(_get3(total, a, 3), arm))
                _put3(total, k, 0, add(_get3(total, k, 0), moved))
                _put3(total, k, 3, add(_get3(total, k, 3), _get3(total, a, 3)))
    for k in range(nodes.size):
        if not active[k]:
            continue
        i, a, q = nodes[k], nearest[k], parent[k]
        rel_v = _get3(dv, k, 0)
        kept = counteract or own[k]
        if kept and a >= 0:     # the child's world change is its own (its carrier's whole change counteracted)
            r = sub(load3(world_translation, i), load3(world_translation, nodes[a]))
            rel_v = sub(rel_v, add(_get3(total, a, 0), cross3(_get3(total, a, 3), r)))
        Rq = load33(world_rotation, q) if q >= 0 else _EYE
        inverse_scale = 1.0 / world_scale[q] if q >= 0 else 1.0
        store33(before, k, load33(world_rotation, i))
        store3(velocity, i, add(load3(velocity, i), mul(inverse_scale, matvec_t(Rq, rel_v))))
        if kept and a >= 0:
            xa = load3(world_translation, nodes[a])
            xa_moved, turn = _moved_pose(a, nearest, own, counteract, nodes, world_translation, dx)
            xq = add(xa_moved, matvec(turn, sub(load3(world_translation, q), xa)))
            Rq = matmul(turn, Rq)
            x3 = add(load3(world_translation, i), _get3(dx, k, 0))
            store3(translation, i, mul(inverse_scale, matvec_t(Rq, sub(x3, xq))))
            store33(rotation, i, matmul_tn(Rq, matmul(exp_so3(_get3(dx, k, 3)), load33(world_rotation, i))))
        else:       # a root, or (counteraction off) a body that takes its ancestors' moves as they come
            store3(translation, i, add(load3(translation, i), mul(inverse_scale, matvec_t(Rq, _get3(dx, k, 0)))))
            store33(rotation, i, matmul(exp_so3(matvec_t(Rq, _get3(dx, k, 3))), load33(rotation, i)))


@kernel(refcounts=False)
def carry_pass(nodes, nearest, active, counteract, own, target, world, local_velocity, world_pass):
    """The local velocity of every carried body (one with a dynamic ancestor, nearest (D,) >= 0, and
    in `active` (D,) bool, a retry's island or all) that gives it the world velocity `target` (D, 3)
    under its parent's world motion, in one world pass (`physics.model.hierarchy.node_world` with
    `world_pass`'s arguments), parents first: a carried node's world state is computed once to
    read its lever, its local velocity solved, and its world state computed again from it, so its
    children read their parent's motion as carried (`apply_changes`):
        v1 = R2ᵀ (v3 − v2 − ω2 × (x3 − x2)) / s2
    (`physics.pipeline.stages.apply_world_changes`), summed in numpy's order (its einsum starts
    from +0). `world` (`NodeArrays`) and `local_velocity` (N, 3) are the world pass's own arrays
    under their names. No carried body: no pass. With `counteract` False only the bodies `own` (D,)
    bool (`DynamicBodies.own_motion`) are solved again; the others keep the local velocity they
    have, and with it what they inherit."""
    carried = False
    for k in range(nodes.shape[0]):
        carried = carried or (nearest[k] >= 0 and active[k] and (counteract or own[k]))
    if not carried:
        return
    order, parent, body_slot, omega_body, T1, R1, S1, v1, a1, w1, alpha1, T3, R3, S3, v3, a3, w3, alpha3 = world_pass
    for i in order:
        if i < 0:
            continue
        node_world(i, parent, body_slot, omega_body, T1, R1, S1, v1, a1, w1, alpha1, T3, R3, S3, v3, a3, w3, alpha3)
        slot = body_slot[i]
        if slot < 0 or nearest[slot] < 0 or not active[slot] or not (counteract or own[slot]):
            continue
        q = parent[i]
        lever = sub(load3(world.translation, i), load3(world.translation, q))
        relative = sub(sub(load3(target, slot), load3(world.velocity, q)), cross3(load3(world.omega, q), lever))
        R = load33(world.rotation, q)
        scale = world.scale[q]
        for c in range(3):
            local_velocity[i, c] = (0.0 + R[0][c] * relative[0] + R[1][c] * relative[1] + R[2][c] * relative[2]) / scale
        node_world(i, parent, body_slot, omega_body, T1, R1, S1, v1, a1, w1, alpha1, T3, R3, S3, v3, a3, w3, alpha3)


@kernel(refcounts=False)
def apply_changes(flags, bodies, dv, dx, world, local, total, before, active, acceleration, world_pass, omega_body,
                  carry):
    """`physics.pipeline.stages.apply_world_changes` in one call, for the bodies `active` (D,) bool
    (every body, or a RATTLE retry's island): flags (3,) int64 (counteraction on, carried velocities
    kept, a velocity change given), dv and dx the changes (`move_bodies`), acceleration (D, 6) the
    Data's constraint acceleration, which gets each active body's change of world [v, ω] where one is
    given; world_pass the hierarchy's (`world_pass_arguments`), carry what `carry_pass` takes
    besides: (target, body_slot), its target (D, 3) written here first (each body's world velocity
    before the move plus its own change), body_slot the nodes' dynamic slots for its world pass,
    which turns omega_body into local ω (`world_pass` with them: each array passed once, numba
    unboxing each at every call). A body outside `active` keeps its bits."""
    counteract, carried, given = flags[0] != 0, flags[1] != 0, flags[2] != 0
    nodes, target = bodies.node, carry[0]
    if carried:
        for k in range(nodes.shape[0]):
            for i in range(3):
                target[k, i] = world.velocity[nodes[k], i] + (dv[k, i] if given else 0.0)
    move_bodies(bodies, counteract, dv, dx, world, local, total, before, active)
    if given:
        for k in range(acceleration.shape[0]):
            if active[k]:
                for i in range(6):
                    acceleration[k, i] = acceleration[k, i] + total[k, i]
    world_from_local(*world_pass)
    keep_momentum(nodes, omega_body, bodies.inertia, before, world.rotation, total, active)
    if carried:
        spin = (world_pass[0], world_pass[1], carry[1], omega_body) + world_pass[4:]
        carry_pass(nodes, bodies.nearest_slot, active, counteract, bodies.own_motion, target, world, local.velocity, spin)


@kernel(refcounts=False)
def split_impulse_changes(velocity, solved, relaxed, final, h, fraction, push_speed, dv, dx):
    """The solve and joints stages' changes to the bodies (`physics.pipeline.stages.stage_solve`, `stage_joints`), from the free
    velocities and the solver's three results [v, ω] (D, 6): dv = final − velocity (relax, then
    restitution: velocities only), and dx = h (f (relaxed − velocity) + bias), the split impulse,
    with the bias part solved − relaxed scaled down to `push_speed` where its linear speed is past
    it. One pass: as numpy, the nine temporaries and the norm cost more than the tank's bodies."""
    for k in range(velocity.shape[0]):
        bias = (solved[k, 0] - relaxed[k, 0], solved[k, 1] - relaxed[k, 1], solved[k, 2] - relaxed[k, 2],
                solved[k, 3] - relaxed[k, 3], solved[k, 4] - relaxed[k, 4], solved[k, 5] - relaxed[k, 5])
        push = np.sqrt(bias[0] * bias[0] + bias[1] * bias[1] + bias[2] * bias[2])
        scale = push_speed / push if push > push_speed else 1.0
        for c in range(6):
            dv[k, c] = final[k, c] - velocity[k, c]
            b = bias[c] * scale if push > push_speed else bias[c]
            dx[k, c] = h * (fraction * (relaxed[k, c] - velocity[k, c]) + b)


_EYE = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
NO_ROWS = np.zeros((0, 3))


@kernel(refcounts=False)
def first_divergent(nodes, slot, local, omega_body, length, speed):
    """(node, quantity index into `physics.pipeline.stages.QUANTITIES`, value) of the first of `nodes` whose local velocity,
    (dynamic: slot >= 0) omega_body, translation or rotation (`local`: `NodeArrays`) is non-finite or
    beyond `length` / `speed` (physics.dynamics.integrators.divergence); (−1, 0, 0) if none. One pass, no
    allocation."""
    translation, rotation, velocity = local.translation, local.rotation, local.velocity
    for k in range(nodes.size):
        i = nodes[k]
        b = slot[i]
        w = load3(omega_body, b) if b >= 0 else (0.0, 0.0, 0.0)
        quantity, value = divergence(load3(velocity, i), w, b >= 0, load3(translation, i), load33(rotation, i),
                                     length, speed)
        if quantity >= 0:
            return i, quantity, value
    return -1, 0, 0.0


@kernel(refcounts=False)
def first_beyond_reach(nodes, parent, translation, world_scale, reach):
    """The first of `nodes` whose local translation, scaled by its parent's world scale, is longer
    than `reach` (−1 if none): its distance from the parent's origin in world units."""
    for k in range(nodes.size):
        i = nodes[k]
        x = load3(translation, i)
        if (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) * world_scale[parent[i]] ** 2 > reach * reach:
            return i
    return -1


@kernel(refcounts=False)
def keep_momentum(nodes, omega_body, inertia, before, world_rotation, total, active):
    """omega_body ← I⁻¹ R3'ᵀ R3 I (omega_body + R3ᵀ Δω) per body that is `active` (D,) bool, in
    place: the world angular momentum plus the angular impulse I_world Δω (Δω = total[:, 3:]), kept
    through the turn R3 = before → R3' = world_rotation[nodes] (`physics.pipeline.stages.apply_world_changes`).
    R3'ᵀ R3 is the identity only to round-off: a body outside `active` (a retry's island) keeps its bits."""
    for k in range(omega_body.shape[0]):
        if not active[k]:
            continue
        R, I = load33(before, k), load3(inertia, k)
        w = add(load3(omega_body, k), matvec_t(R, _get3(total, k, 3)))
        L_body = (I[0] * w[0], I[1] * w[1], I[2] * w[2])
        L = matvec_t(load33(world_rotation, nodes[k]), matvec(R, L_body))
        store3(omega_body, k, (L[0] / I[0], L[1] / I[1], L[2] / I[2]))


@kernel(refcounts=False)
def dynamic_inputs(bodies, world, local, gravity, out):
    """What the dynamic stage steps, gathered in one compiled pass into `out` (`DynamicInputs`): the
    `bodies`' local translation, rotation, velocity, their world force m g + F_applied, and their
    parents' world motion (the integrator's frame: rotation, scale, acceleration, ω, α; the identity
    for the world)."""
    nodes, parent, mass, force_applied = bodies.node, bodies.parent, bodies.mass, bodies.force_applied
    world_rotation, world_scale, world_acceleration = world.rotation, world.scale, world.acceleration
    world_omega, world_alpha = world.omega, world.alpha
    local_translation, local_rotation, local_velocity = local.translation, local.rotation, local.velocity
    translation, rotation, velocity, force = out.translation, out.rotation, out.velocity, out.force
    R2, s2, a2 = out.frame_rotation, out.frame_scale, out.frame_acceleration
    w2, alpha2 = out.frame_omega, out.frame_alpha
    world_translation, world_velocity = world.translation, world.velocity
    for k in range(nodes.size):
        i, q = nodes[k], parent[k]
        for c in range(3):
            force[k, c] = mass[k] * gravity[c] + force_applied[k, c]
        if bodies.nearest_slot[k] >= 0:     # carried: its world motion, in the world's frame
            store3(translation, k, load3(world_translation, i))
            store33(rotation, k, load33(world_rotation, i))
            store3(velocity, k, load3(world_velocity, i))
            q = -1
        else:
            store3(translation, k, load3(local_translation, i))
            store33(rotation, k, load33(local_rotation, i))
            store3(velocity, k, load3(local_velocity, i))
        if q >= 0:
            store33(R2, k, load33(world_rotation, q))
            s2[k] = world_scale[q]
            store3(a2, k, load3(world_acceleration, q))
            store3(w2, k, load3(world_omega, q))
            store3(alpha2, k, load3(world_alpha, q))
        else:
            store33(R2, k, _EYE)
            s2[k] = 1.0
            store3(a2, k, (0.0, 0.0, 0.0))
            store3(w2, k, (0.0, 0.0, 0.0))
            store3(alpha2, k, (0.0, 0.0, 0.0))


@kernel(refcounts=False)
def place_bodies(bodies, slots, motion, world, local):
    """The dynamic stage's results `motion` (`Motion`, by slot) written into the local state
    (`NodeArrays`) of the bodies `slots` (`DynamicBodies`): a carried body's (one with a dynamic
    ancestor) result is its world motion, expressed in its parent's frame at the end of the step,
    whose world state (`NodeArrays`) must be current ("Converting Global Dynamics To Local
    Dynamics", A1 = A2⁻¹ A3 with d = T3 − T2 and J2 = R2 S2):
        T1 = J2⁻¹ d,   v1 = J2⁻¹ (v3 − v2 − ω2 × d),   R1 = R2ᵀ R3
    (its omega_body is world-relative: it needs no conversion)."""
    nodes, parent, nearest = bodies.node, bodies.parent, bodies.nearest_slot
    for k in slots:
        i, q = nodes[k], parent[k]
        x, R, v = load3(motion.translation, k), load33(motion.rotation, k), load3(motion.velocity, k)
        if nearest[k] >= 0:
            R2, inverse_scale = load33(world.rotation, q), 1.0 / world.scale[q]
            d = sub(x, load3(world.translation, q))
            # R2⁻¹ rather than R2ᵀ: the world state is rebuilt with R2 as it is (`update_world`),
            # whose orthonormality drifts by round-off a step (lie-midpoint's product of Cayley
            # rotations); with R2ᵀ that drift biased a free child's world velocity every step alike
            x = mul(inverse_scale, solve3(R2, d))
            v = mul(inverse_scale, solve3(R2, sub(sub(v, load3(world.velocity, q)), cross3(load3(world.omega, q), d))))
            # onto the rotations again (through the unit quaternion): the product of a chain of
            # rotations, each orthonormal to round-off, compounds its error step after step
            R = matrix_from_quaternion(quaternion_from_matrix(matmul_tn(R2, R)))
        store3(local.translation, i, x)
        store33(local.rotation, i, R)
        store3(local.velocity, i, v)


@kernel(refcounts=False)
def scatter_motion(nodes, motion, local):
    """A stage's results `motion` (`Motion`) for `nodes` written back into the hierarchy's local
    state (`NodeArrays`) in one pass; motion.omega may be empty (the dynamic stage keeps omega_body
    instead)."""
    translation, rotation, velocity, omega = motion.translation, motion.rotation, motion.velocity, motion.omega
    local_translation, local_rotation, local_velocity, local_omega = local.translation, local.rotation, \
        local.velocity, local.omega
    for k in range(nodes.size):
        i = nodes[k]
        store3(local_translation, i, load3(translation, k))
        store33(local_rotation, i, load33(rotation, k))
        store3(local_velocity, i, load3(velocity, k))
        if omega.shape[0]:
            store3(local_omega, i, load3(omega, k))


class WorldBodies(NamedTuple):
    """The dynamic bodies in the solver's world terms (D, ...), as `solver_bodies` writes them."""

    centre: np.ndarray              # (D, 3) x
    rotation: np.ndarray            # (D, 3, 3) R3
    velocity: np.ndarray            # (D, 6) [v, ω] world
    inverse_inertia: np.ndarray     # (D, 3, 3) R3 I⁻¹ R3ᵀ world

    @classmethod
    def empty(cls, count):
        return cls(np.empty((count, 3)), np.empty((count, 3, 3)), np.empty((count, 6)), np.empty((count, 3, 3)))


@kernel(refcounts=False)
def solver_bodies(bodies, world, omega_body, out):
    """The dynamic `bodies`' (`DynamicBodies`) centre (D,3), rotation (D,3,3), world velocity [v, ω]
    (D,6) with ω = R3 omega_body, and inverse world inertia R3 I⁻¹ R3ᵀ (D,3,3), from the world
    state (`NodeArrays`), into `out` (`WorldBodies`)."""
    nodes, inertia = bodies.node, bodies.inertia
    translation, rotation, velocity = world.translation, world.rotation, world.velocity
    D = nodes.size
    centre, R3, v, inverse_inertia = out.centre, out.rotation, out.velocity, out.inverse_inertia
    for k in range(D):
        i = nodes[k]
        R = load33(rotation, i)
        store3(centre, k, load3(translation, i))
        store33(R3, k, R)
        w = matvec(R, load3(omega_body, k))
        for c in range(3):
            v[k, c], v[k, 3 + c] = velocity[i, c], w[c]
        I = load3(inertia, k)
        store33(inverse_inertia, k, matmul(((R[0][0] / I[0], R[0][1] / I[1], R[0][2] / I[2]),
                                            (R[1][0] / I[0], R[1][1] / I[1], R[1][2] / I[2]),
                                            (R[2][0] / I[0], R[2][1] / I[1], R[2][2] / I[2])), transpose(R)))
