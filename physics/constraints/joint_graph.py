"""The joints' systems J M⁻¹ Jᵀ μ = r as block-sparse matrices over the joint graph, factored in
an order that keeps them sparse: linear time on a tree of joints.

"The Mathematics of Havok's Solver", Part II, "Linear Time Dynamics Using Lagrange Multipliers":
the joints' impulses solve Γ λ = η with Γ = J M⁻¹ Jᵀ. Γ's block (j, l) couples joints j and l
only where they share a moving body (M is block diagonal), so Γ has the sparsity of the joint
graph: joints as nodes, an edge where two joints share a body. Baraff ("Linear-Time Dynamics using
Lagrange Multipliers", SIGGRAPH 1996) eliminates such a system leaves first: on a tree no
elimination adds an entry (no fill), so factoring and solving cost O(joints). The order
(`structure`) is that one wherever the moving bodies form a forest (`tree_order`: deepest joints
first, exact on every tree); on a graph with loops (a net) it is whichever fills less of two: the
minimum-degree order (George & Liu, "The Evolution of the Minimum Degree Ordering Algorithm",
1989) and a nested dissection of the bodies as the joints lay them out at load (George, "Nested
Dissection of a Regular Finite Element Mesh", 1973: `dissection_order`), which on a net's grid
fills as n log n. The fill is found once per topology (`JointGraph`), so the numeric factor
(`factor_and_solve`) runs over a fixed structure:

    for each joint k in order:    P = Γ_kk,   Γ_kl ← P⁻¹ Γ_kl,   r_k ← P⁻¹ r_k      (l after k)
                                  Γ_il −= Γ_ik Γ_kl,  r_i −= Γ_ik r_k               (i, l after k)
    for each joint k in reverse:  μ_k = r_k − Σ_l Γ_kl μ_l

The factors stay in the block storage (`Factors`, made once per topology with the structure, so a
factorization allocates nothing), and another right-hand side with the same Γ costs the two
substitutions alone (`solve_factored`: RATTLE's chord steps). Most of a factorization's time on a
net is the Schur updates Γ_il −= Γ_ik Γ_kl of ball joints' 3 × 3 blocks. A run of ball joints
eliminated one after another, each one's later neighbours the next one and that one's (a separator
of the dissection: a supernode), is one dense matrix, a front (`_front_updates`): its updates are
then rank-3 updates of contiguous rows, which the processor does several entries at a time, with
the same operations on each entry in the same order as block by block (the same bits). On the
32 × 32 net 96 % of the updates are in fronts, and a factorization takes a quarter less time; a
ball joint among ball joints outside a front (a chain's) has loops of its own (`_ball_updates`).

Two threads where a net is large. A nested dissection's two halves share no body, so neither
half's elimination reads or writes a block of the other's: only the separator's own blocks (and
right-hand side rows) take updates from both. Where the dissected graph needs SPLIT_UPDATES Schur
updates or more (`JointGraph.halves`, from a 16 × 16 net on), the second half's updates of those
go to buffers of their own, added once both halves are done (`finish`), so that the halves may be
eliminated at once (`eliminate` over each half's range of the order; the region that runs them on
two threads lives beside its callers, `physics.constraints.rattle._halves`) and give the same bits
as one after the other. The buffers change the order of a separator entry's sums, and so the bits
of a split graph's factors (not their accuracy: the tests' round-off bound holds); a graph below
SPLIT_UPDATES is factored exactly as before. On two threads the 32 × 32 net's step takes a fifth
less time, the 16 × 16 net's a sixth less, the 12 × 12 net's (27k updates) a sixteenth less and the
8 × 8 net's a sixth more (a region's start and join cost more than its halves save): smaller graphs
stay whole.

Each block is one joint's rows (a ball joint 3, a hinge 5 or 6 with its limit): the diagonal
block is solved by Gaussian elimination with partial pivoting inside the block, which needs no
symmetry, so RATTLE's position step J(q_k) M₀⁻¹ J₀ᵀ (not symmetric) and its velocity step
J M⁻¹ Jᵀ (symmetric positive definite) share this one kernel.

A joint's block holds every slot the joint may take (`JointModel` kinds, a limit's slot where it
has a limit, the spring slot where an armature or a damper makes it a row of RATTLE's step; never
the motor's, a velocity target the projections leave to the velocity solver).
A slot not taken in one evaluation (a limit not reached) gets an identity row and column, so its
multiplier is 0 and the structure never changes between Newton iterations.

Conventions: joints j, l and slots s as in `physics.constraints.joints` (ROWS_PER_JOINT slots a joint);
Jacobians (J, ROWS_PER_JOINT, 2, 6) per row and side, [linear, angular] world; blocks stored
row-major in one flat array.
"""
import heapq
from typing import NamedTuple

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from physics.core.compiled import kernel
from physics.constraints.joints import ROWS_PER_JOINT, SPRING, joint_geometry, joint_geometry_arrays

PIVOT_FLOOR = 1e-14         # relative to each component's largest taken diagonal: the least |pivot| (`_lu_factor`)
PANEL_FLOATS = 18           # a later neighbour's floats in `Factors.panel`: its 3 × 3 block of row k and of the update


class JointGraph(NamedTuple):
    """A joint topology's elimination structure, for the compiled kernels (`structure`)."""
    slots: np.ndarray           # (J, ROWS_PER_JOINT) int64 slot of the joint's block row r; −1 past its size
    size: np.ndarray            # (J,) int64 the joint's block size m_j
    order: np.ndarray           # (J,) int64 joints in elimination order
    diagonal: np.ndarray        # (J,) int64 offset of block (j, j)
    later_start: np.ndarray     # (J + 1,) int64 joint j's later neighbours in the filled graph:
    later: np.ndarray           # (F,) int64     later[later_start[j]:later_start[j + 1]]
    block_jl: np.ndarray        # (F,) int64 offset of block (j, later) …
    block_lj: np.ndarray        # (F,) int64 … and of block (later, j)
    update_start: np.ndarray    # (J + 1,) int64 joint j's Schur updates: for its later neighbours i, l
    update: np.ndarray          # (U,) int64     (i-major), the offset of block (i, l)
    term: np.ndarray            # (T, 5) int64 Γ's assembly: (offset of (j, l), j, side of j, l, side of l)
    #                             for every pair of joint sides on one body, j = l included, in three groups:
    term_halves: np.ndarray     # (4,) int64 term[0:t1] write only blocks the first half's bodies alone reach,
    #                             term[t1:t2] the second's, term[t2:T] the rest (all of them where not split)
    front: np.ndarray           # (J,) int64 the front (`_fronts`) whose elimination starts at joint j, −1 none
    front_start: np.ndarray     # (Fr + 1,) int64 front f's joints: front_joint[front_start[f]:front_start[f + 1]],
    front_joint: np.ndarray     # (Σ u,) int64   the ones it eliminates first, in order, then the rest
    front_eliminated: np.ndarray  # (Fr,) int64 how many of them it eliminates
    front_block_start: np.ndarray  # (Fr + 1,) int64 front f's block offsets (a, b) of its joints a, b, a-major:
    front_block: np.ndarray     # (Σ u²,) int64     front_block[front_block_start[f] + a * u + b]
    later_x: np.ndarray         # (F,) int64 where in `Factors.x` joint j's elimination updates `later`'s rows
    front_x: np.ndarray         # (Σ u,) int64 … and a front's its joints' (`halves`: a buffer for some)
    halves: np.ndarray          # (3,) int64 order positions 0, a, b: the halves [0, a) and [a, b) share no block
    #                             but the separator's [b, J) ones; (0, 0, 0) where the graph is not split
    split: object               # `halves` where the graph is split, else None: a type of its own, so that only a
    #                             split graph's projections compile the two threads' regions (numba prunes the
    #                             other branch: `physics.constraints.rattle.project_positions_kernel`'s `split`)
    merge: np.ndarray           # (M, 2) int64 storage[real] += storage[buffer] per (buffer, real) after the halves …
    merge_x: np.ndarray         # (Mx, 2) int64 … and x[real] += x[buffer]
    component_start: np.ndarray  # (C + 1,) int64 the graph's connected components (joints that share no moving body,
    component_joint: np.ndarray  # (J,) int64    directly or through others, share no block): component c's joints
    #                             component_joint[component_start[c]:component_start[c + 1]]
    values: int                 # floats in the block storage
    x_size: int                 # floats of `Factors.x`: J × ROWS_PER_JOINT and the separator's buffer
    panel: int                  # floats of `Factors.panel`: 18 × the most later neighbours a joint has, or a
    #                             front's (3u)² floats where that is more; where split, one such a half and
    #                             two floats more, each half's outcome (`physics.constraints.rattle._halves`)


class Factors(NamedTuple):
    """A joint graph's numeric factors and the scratch of their substitutions (`empty_factors`, or
    cut from RATTLE's arena), made once per topology, so that a factorization allocates nothing."""
    storage: np.ndarray         # (values,) Γ's blocks (`assemble`), then their LU factors
    pivot: np.ndarray           # (J, ROWS_PER_JOINT) int64 each diagonal block's row swaps
    x: np.ndarray               # (graph.x_size,) the right-hand side by block row (`_gathered`), then the
    #                             second half's updates of the separator's rows (`JointGraph.halves`)
    panel: np.ndarray           # (graph.panel,) a ball joint's Schur updates, gathered (`_ball_updates`), or a
    #                             front's dense matrix (`_front_updates`); a split graph's, one such a half and
    #                             the halves' two outcomes (`JointGraph.panel`)
    floor: np.ndarray           # (J,) each joint's least |pivot|: PIVOT_FLOOR × its component's scale (`assemble`)


def empty_factors(graph):
    """Empty `Factors` for `graph` (`JointGraph`)."""
    J = len(graph.size)
    return Factors(np.empty(graph.values), np.empty((J, ROWS_PER_JOINT), np.int64), np.empty(graph.x_size),
                   np.empty(graph.panel), np.empty(J))


def _possible_slots(joints):
    """(J, ROWS_PER_JOINT) bool: the slots a joint may take in a projection (its kind's equalities,
    a limit's slot, never a motor's): `joint_geometry`'s active rows, which do not depend on the pose."""
    geometry = joint_geometry_arrays(len(joints))
    B = int(joints.body.max(initial=-1)) + 1
    joint_geometry(joints.model(), np.zeros((B, 3)), np.broadcast_to(np.eye(3), (B, 3, 3)).copy(), geometry, 0,
                   len(joints))
    possible = geometry.active & ~geometry.motor
    possible[:, SPRING] |= joints.rotor_slots()     # an armature's or a damper's row (`physics.constraints.rattle`)
    return possible


def minimum_degree_order(neighbours):
    """The minimum-degree elimination order of a graph (a list of sets, changed in place) and each
    node's later neighbours in the graph filled by that elimination; ties go to the smaller index,
    so the order is a function of the graph."""
    heap = [(len(n), node) for node, n in enumerate(neighbours)]
    heapq.heapify(heap)
    done = np.zeros(len(neighbours), bool)
    order, later = [], [None] * len(neighbours)
    while heap:
        degree, node = heapq.heappop(heap)
        if done[node] or degree != len(neighbours[node]):
            continue            # a stale entry: the node's degree changed since it was pushed
        done[node] = True
        order.append(node)
        later[node] = _eliminate(neighbours, node)
        for other in later[node]:
            heapq.heappush(heap, (len(neighbours[other]), other))
    return order, later


def _eliminate(neighbours, node):
    """Eliminate `node` from the graph (a list of sets, changed in place): its neighbours are joined
    to each other (the fill). Returns them, sorted: its later neighbours in the filled graph."""
    rest = neighbours[node]
    for other in rest:
        neighbours[other].discard(node)
        neighbours[other].update(n for n in rest if n != other)
    return sorted(rest)


JOINT_CLIQUE_COST_MAX = 5 * 10**6   # Σ d³ over the moving bodies' joint counts d (`clique_cost`, checked at
                                    # load): a 100 × 100 net is 6.4·10^5, one body with 170 joints 4.9·10^6
                                    # (its first step ~8 s); 5,000 links on one base would be 1.25·10^11


def clique_cost(bodies):
    """Σ_b d_b³ over the joint counts d_b of the moving bodies, given each joint's two solver bodies
    `bodies` (J, 2) (−1 static). The d joints on one body are a clique of Γ's graph: d² blocks to
    hold, and the ordering and elimination (`structure`, `minimum_degree_order`) visit ~d³ pairs."""
    bodies = np.asarray(bodies, np.int64).reshape(-1, 2)
    moving = bodies[bodies >= 0]
    return int(np.sum(np.bincount(moving).astype(np.int64) ** 3)) if moving.size else 0


def tree_order(joints):
    """Leaves first on a forest: the joints ordered by the depth of their deeper moving body (a joint
    to the world counts one deeper than its body), deepest first, ties by index; None if the moving
    bodies' graph has a loop. Joints between the same two bodies (a hinge per axis of an MJCF hip)
    are one edge of that graph: they share both bodies.

    Rooted anywhere, a joint (parent p, child c) is eliminated after every joint on c below it, so
    its neighbours left are joints on p alone, which share p: a clique, and no fill (Baraff's
    linear-time order, exact on every tree; minimum degree can take an inner joint of degree 2 first)."""
    J = len(joints)
    body = np.asarray(joints.body, np.int64)
    parent = {}

    def root(b):
        while parent.get(b, b) != b:
            b = parent[b]
        return b

    adjacent, edges = {}, set()
    for j in range(J):
        a, b = int(body[j, 0]), int(body[j, 1])
        for x in (a, b):
            if x >= 0:
                adjacent.setdefault(x, [])
        if a >= 0 and b >= 0 and (min(a, b), max(a, b)) not in edges:
            edges.add((min(a, b), max(a, b)))
            ra, rb = root(a), root(b)
            if ra == rb:
                return None
            parent[max(ra, rb)] = min(ra, rb)
            adjacent[a].append(b)
            adjacent[b].append(a)
    depth = {}
    for a, _, b in _breadth_first({b: [(None, c) for c in bodies] for b, bodies in adjacent.items()}):
        depth[b] = 0 if a is None else depth[a] + 1
    key = [max([depth[int(b)] for b in body[j] if b >= 0], default=-1) + (1 if min(body[j]) < 0 else 0)
           for j in range(J)]
    return sorted(range(J), key=lambda j: (-key[j], j))


def forest(body):
    """Whether the graph of the moving bodies and the world (one node), joined by the joints, is a
    forest: no loop of joints among the bodies, and none through the world (a chain hooked at both
    ends). Joints between the same two (a hinge per axis of an MJCF hip) are one edge, as in
    `tree_order`. body (J, 2) each joint's two moving bodies, −1 the world."""
    parent = {}

    def root(b):
        while parent.get(b, b) != b:
            b = parent[b]
        return b

    edges = set()
    for a, b in np.asarray(body, np.int64).tolist():
        edge = (min(a, b), max(a, b))
        if edge in edges:
            continue
        edges.add(edge)
        ra, rb = root(a), root(b)
        if ra == rb:
            return False
        parent[max(ra, rb)] = min(ra, rb)
    return True


def load_layout(joints):
    """(B, 3) a place for each moving body from the joints alone: each component laid out from its
    smallest body at the origin, unrotated, through the joints' anchors and their rotation at load
    (`Joints.rest` = R_aᵀ R_b): R_b = R_a rest, x_b = x_a + R_a p_a − R_b p_b. A function of the
    model, never of the state, so the order it guides is the same for every run and restore."""
    body = np.asarray(joints.body, np.int64)
    B = int(body.max(initial=-1)) + 1
    x, R = np.zeros((B, 3)), np.broadcast_to(np.eye(3), (B, 3, 3)).copy()
    edges = {}
    for j in range(len(joints)):
        a, b = int(body[j, 0]), int(body[j, 1])
        if a >= 0 and b >= 0:
            edges.setdefault(a, []).append(((j, 0), b))
            edges.setdefault(b, []).append(((j, 1), a))
    for a, (j, side), b in _breadth_first(edges):
        if a is not None:
            R[b] = R[a] @ (joints.rest[j] if side == 0 else joints.rest[j].T)
            x[b] = x[a] + R[a] @ joints.anchor[j, side] - R[b] @ joints.anchor[j, 1 - side]
    return x


def _breadth_first(edges):
    """The bodies of a graph (`edges`: body → [(label, neighbour)]) breadth first, each component
    from its smallest body: (None, (None, None), root), then (a, label, b) for each body b first
    reached from a through the edge `label`."""
    reached = set()
    for root in sorted(edges):
        if root in reached:
            continue
        reached.add(root)
        yield None, (None, None), root
        level = [root]
        while level:
            following = []
            for a in level:
                for label, b in edges[a]:
                    if b not in reached:
                        reached.add(b)
                        following.append(b)
                        yield a, label, b
            level = following


DISSECTION_LEAF = 8         # joints: a part this small is ordered by minimum degree
SPLIT_UPDATES = 50_000      # Schur updates (Σ later²) from which a dissected graph's halves are eliminated apart


def dissection_order(joints, neighbours):
    """A nested-dissection order (George, "Nested Dissection of a Regular Finite Element Mesh",
    1973) of the joint graph: the moving bodies of a part split at their median across the widest
    extent of `load_layout`; the joints that cross the split separate the two halves' joints (a
    joint on the left shares no body with one on the right), so those are ordered first, each half
    recursively, and the crossing joints last. On a net its fill grows as n log n where minimum
    degree's grows faster; `structure` keeps whichever order needs fewer Schur updates."""
    return _dissection(joints, neighbours)[0]


def _dissection(joints, neighbours):
    """`dissection_order` and its top split: (order, (a, b)), the left half's joints order[:a], the
    right's order[a:b], the crossing ones order[b:]; (0, 0) where the top part was not split."""
    layout = load_layout(joints)
    moving = [[int(b) for b in joints.body[j] if b >= 0] for j in range(len(joints))]

    def by_minimum_degree(nodes):
        inside = {node: i for i, node in enumerate(nodes)}
        order, _ = minimum_degree_order([{inside[l] for l in neighbours[j] if l in inside} for j in nodes])
        return [nodes[i] for i in order]

    def dissect(nodes, top=False):
        bodies = sorted({b for j in nodes for b in moving[j]})
        if len(nodes) <= DISSECTION_LEAF or len(bodies) < 2:
            return by_minimum_degree(nodes)
        extent = layout[bodies].max(axis=0) - layout[bodies].min(axis=0)
        axis = int(np.argmax(extent))
        ranked = sorted(bodies, key=lambda b: (layout[b, axis], b))
        left = set(ranked[:len(ranked) // 2])
        parts = ([], [], [])        # left, right, crossing
        for j in nodes:
            sides = [b in left for b in moving[j]]
            parts[0 if all(sides) else 1 if not any(sides) else 2].append(j)
        if not parts[0] or not parts[1]:
            return by_minimum_degree(nodes)
        if top:
            split[:] = len(parts[0]), len(parts[0]) + len(parts[1])
        return dissect(parts[0]) + dissect(parts[1]) + parts[2]

    split = [0, 0]
    order = dissect(list(range(len(joints))), top=True)
    return order, tuple(split)


def filled(neighbours, order):
    """Each node's later neighbours in the graph (a list of sets, changed in place) filled by
    eliminating its nodes in `order` (`minimum_degree_order`'s second result, for a given order)."""
    later = [None] * len(neighbours)
    for node in order:
        later[node] = _eliminate(neighbours, node)
    return later


def structure(joints):
    """The `JointGraph` of `joints` (`physics.constraints.joints.Joints`): their blocks, an
    elimination order over the joints that share a moving body (leaves first on a forest:
    `tree_order`; with loops the minimum-degree or the nested-dissection order, whichever needs
    fewer Schur updates), the filled structure and its offsets, and its fronts (`_front_runs`),
    whose blocks are laid out first."""
    J = len(joints)
    possible = _possible_slots(joints)
    size = possible.sum(axis=1).astype(np.int64)
    slots = np.full((J, ROWS_PER_JOINT), -1, np.int64)
    for j in range(J):
        taken = np.flatnonzero(possible[j])
        slots[j, :len(taken)] = taken
    on_body = {}                # moving body → its (joint, side)s
    for j in range(J):
        for side in range(2):
            b = int(joints.body[j, side])
            if b >= 0:
                on_body.setdefault(b, []).append((j, side))
    neighbours = [set() for _ in range(J)]
    for sides in on_body.values():
        for j, _ in sides:
            neighbours[j].update(l for l, _ in sides if l != j)
    updates = lambda later: sum(len(l) ** 2 for l in later)
    order, split = tree_order(joints), (0, 0)
    if order is not None:
        later = filled([set(n) for n in neighbours], order)
    else:
        order, later = minimum_degree_order([set(n) for n in neighbours])
        dissected, dissected_split = _dissection(joints, neighbours)
        dissected_later = filled([set(n) for n in neighbours], dissected)
        if updates(dissected_later) < updates(later):
            order, later = dissected, dissected_later
            if updates(later) >= SPLIT_UPDATES:
                split = dissected_split
    a, b = split
    R = ROWS_PER_JOINT
    half = np.zeros(J, np.int64)            # 0 the first half (or no split), 1 the second, 2 the separator
    half[order[a:b]], half[order[b:]] = 1, 2
    if a < b:
        for k in order[:b]:
            if any(half[l] not in (half[k], 2) for l in later[k]):
                raise RuntimeError(f"joint graph: the halves of the dissection share joint {k}'s blocks")
    else:
        half[:] = 0
    separator = {k: s for s, k in enumerate(order[b:])} if a < b else {}
    offset, blocks, buffers = 0, {}, {}

    def block(j, l, k=None):
        """Block (j, l)'s offset; Schur updates by the second half's joint k of a separator's block
        go to a buffer block of their own, added after the halves (`finish`)."""
        nonlocal offset
        table = buffers if k is not None and half[k] == 1 and half[j] == 2 and half[l] == 2 else blocks
        if (j, l) not in table:
            table[j, l] = offset
            offset += int(size[j] * size[l])
        return table[j, l]

    def x_at(l, k):
        """Where k's elimination updates joint l's right-hand side in `Factors.x`."""
        return J * R + separator[l] * R if half[k] == 1 and half[l] == 2 else l * R

    # a front's blocks (`_fronts`) laid out first, in the order of the elimination, each front's
    # together, row by row, where an earlier one has not: its gather and scatter then read and write
    # runs of memory (the offsets move no value: the same bits)
    runs = _front_runs(order, later, size, (a, b) if a < b else ())
    front_blocks = [[block(x, y, members[0]) for x in members for y in members] for members, _ in runs]
    diagonal = np.array([block(j, j) for j in range(J)], np.int64)
    later_start = np.zeros(J + 1, np.int64)
    later_start[1:] = np.cumsum([len(later[j]) for j in range(J)])
    flat_later = np.array([l for j in range(J) for l in later[j]], np.int64)
    block_jl = np.array([block(j, l) for j in range(J) for l in later[j]], np.int64)
    block_lj = np.array([block(l, j) for j in range(J) for l in later[j]], np.int64)
    update_start = np.zeros(J + 1, np.int64)
    update_start[1:] = np.cumsum([len(later[j]) ** 2 for j in range(J)])
    update = np.array([block(i, l, j) for j in range(J) for i in later[j] for l in later[j]], np.int64)
    term, term_halves = _terms(on_body, block, half, a < b)
    later_x = np.array([x_at(l, j) for j in range(J) for l in later[j]], np.int64)
    front_x = np.array([x_at(x, members[0]) for members, _ in runs for x in members], np.int64)
    merge = np.array([(buffer + e, blocks[key] + e) for key, buffer in buffers.items()
                      for e in range(int(size[key[0]] * size[key[1]]))], np.int64).reshape(-1, 2)
    merge_x = np.array([(J * R + s * R + r, k * R + r) for k, s in separator.items() for r in range(size[k])],
                       np.int64).reshape(-1, 2)
    fronts = _fronts(runs, front_blocks, J)
    halves = np.array([0, a, b], np.int64)
    panel = max(PANEL_FLOATS * max((len(l) for l in later), default=0), fronts.floats)
    component_start, component_joint = components(neighbours)
    return JointGraph(slots, size, np.array(order, np.int64), diagonal, later_start, flat_later, block_jl, block_lj,
                      update_start, update, term, term_halves, fronts.front, fronts.start, fronts.joint,
                      fronts.eliminated, fronts.block_start, fronts.block, later_x, front_x, halves,
                      halves if a < b else None, merge, merge_x, component_start, component_joint, offset,
                      J * R + len(separator) * R, 2 * panel + 2 if a < b else panel)


def components(neighbours):
    """The connected components of a graph (`neighbours`: a list of sets), by scipy's
    `connected_components`, as (start (C + 1,), members (N,)) int64: component c's nodes
    members[start[c]:start[c + 1]], ascending."""
    pairs = np.array([(a, b) for a, near in enumerate(neighbours) for b in near], np.int64).reshape(-1, 2)
    count, label = connected_components(coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                                                   shape=(len(neighbours),) * 2), directed=False)
    start = np.zeros(count + 1, np.int64)
    start[1:] = np.cumsum(np.bincount(label, minlength=count))
    return start, np.argsort(label, kind="stable").astype(np.int64)


def _terms(on_body, block, half, split):
    """Γ's assembly terms (`JointGraph.term`) and their groups (`JointGraph.term_halves`): a block
    all of whose terms come from bodies of one half (a body is in the half of its joints, a
    separator's joints aside) is assembled by that half's thread, every other block after both
    (`physics.constraints.rattle._split_assemble`), each group's terms in the order of the bodies, so
    that each block takes its terms in the same order grouped or not (the same bits)."""
    terms = [((block(j, l), j, sj, l, sl), b) for b, sides in on_body.items() for j, sj in sides for l, sl in sides]
    group = [2] * len(terms)
    if split:
        body_half = {b: min((int(half[j]) for j, _ in sides), default=2) for b, sides in on_body.items()}
        halves_of = {}
        for (t, b) in terms:
            halves_of.setdefault(t[0], set()).add(body_half[b])
        group = [min(halves_of[t[0]]) if len(halves_of[t[0]]) == 1 else 2 for t, _ in terms]
    rank = sorted(range(len(terms)), key=lambda k: group[k])           # stable: each group in the bodies' order
    counts = np.bincount(np.array(group, np.int64), minlength=3)
    term = np.array([terms[k][0] for k in rank], np.int64).reshape(-1, 5)
    return term, np.array([0, counts[0], counts[0] + counts[1], len(terms)], np.int64)


FRONT_MIN = 2       # joints a front eliminates at least (one alone gains nothing from its copies)


class _Fronts(NamedTuple):
    front: np.ndarray
    start: np.ndarray
    joint: np.ndarray
    eliminated: np.ndarray
    block_start: np.ndarray
    block: np.ndarray
    floats: int


def _front_runs(order, later, size, boundaries=()):
    """The fronts of an elimination (`JointGraph.front`…): runs of ball joints k₁ … k_s, consecutive
    in `order`, each one's later neighbours the next one and the next one's (a fundamental
    supernode: later(k_t) = {k_t+1} ∪ later(k_t+1)), s ≥ FRONT_MIN, with every later neighbour a
    ball joint too. Their joints u = k₁ … k_s, then later(k_s) by their place in the order, are
    one dense matrix of 3u × 3u (`_front_updates`); a run ends at each order position in
    `boundaries` (a split graph's halves, `JointGraph.halves`). Each k_t's Schur update is then a
    rank-3 update of its trailing part, rows the processor does several entries of at once, where the scattered
    3 × 3 blocks (`_ball_updates`) are one entry at a time. A separator of a nested dissection is
    such a run: 96 % of the 32 × 32 net's updates are in fronts. -> [(the u joints, s)]."""
    position = {k: p for p, k in enumerate(order)}
    balls = [size[k] == 3 and all(size[l] == 3 for l in later[k]) for k in range(len(order))]
    runs, run = [], []
    for k in order:
        if run and balls[k] and set(later[run[-1]]) == {k} | set(later[k]) and position[k] not in boundaries:
            run.append(k)
            continue
        if len(run) >= FRONT_MIN:
            runs.append(run)
        run = [k] if balls[k] else []
    if len(run) >= FRONT_MIN:
        runs.append(run)
    fronts = [(run + sorted(later[run[-1]], key=position.__getitem__), len(run)) for run in runs]
    for members, s in fronts:   # what `factor_and_solve` and `_front_updates` rely on
        if list(order[position[members[0]]:position[members[0]] + s]) != members[:s] or \
                sorted(members[1:]) != sorted(later[members[0]]):
            raise RuntimeError(f"joint graph: front {members[:s]} is not a run of the elimination")
    return fronts


def _fronts(runs, front_blocks, J):
    """The `_Fronts` of `_front_runs`' runs over J joints, each run's block offsets (a, b) a-major
    in `front_blocks`."""
    front = np.full(J, -1, np.int64)
    start, joints, eliminated, block_start, blocks = [0], [], [], [0], []
    floats = 0
    for f, (members, s) in enumerate(runs):
        front[members[0]] = f
        joints.extend(members)
        start.append(len(joints))
        eliminated.append(s)
        blocks.extend(front_blocks[f])
        block_start.append(len(blocks))
        floats = max(floats, (3 * len(members)) ** 2)
    return _Fronts(front, np.array(start, np.int64), np.array(joints, np.int64), np.array(eliminated, np.int64),
                   np.array(block_start, np.int64), np.array(blocks, np.int64), floats)


@kernel(refcounts=False)
def assemble(graph, jacobian, weighted, taken, storage, floor):
    """Γ = J M⁻¹ J_dᵀ into `storage` over the taken rows: jacobian J (J, ROWS_PER_JOINT, 2, 6) the
    rows, weighted (same shape) M⁻¹ J_dᵀ per row and side; identity rows for the untaken slots of a
    block, and each joint's least pivot into `floor` (`_assemble_diagonal`). Returns the largest
    component's scale.
    The terms' groups one after the other (`physics.constraints.rattle` runs a split graph's first
    two at once: `assemble_terms`, the same bits)."""
    storage[:] = 0.0
    _assemble_terms(graph, jacobian, weighted, taken, storage, 0, graph.term.shape[0])
    return _assemble_diagonal(graph, taken, storage, floor)


@kernel(refcounts=False)
def assemble_terms(graph, jacobian, weighted, taken, storage, start, stop):
    """`assemble`'s terms graph.term[start:stop] added into their blocks (zeroed before): a split
    graph's part (`physics.constraints.rattle`)."""
    _assemble_terms(graph, jacobian, weighted, taken, storage, start, stop)


@kernel(refcounts=False)
def assemble_diagonal(graph, taken, storage, floor):
    """`assemble`'s last pass (`_assemble_diagonal`): a split graph's (`physics.constraints.rattle`)."""
    return _assemble_diagonal(graph, taken, storage, floor)


@kernel(inline=True)
def _assemble_terms(graph, jacobian, weighted, taken, storage, start, stop):
    """The terms graph.term[start:stop] added into their blocks."""
    for t in range(start, stop):
        base, j, sj, l, sl = graph.term[t, 0], graph.term[t, 1], graph.term[t, 2], graph.term[t, 3], graph.term[t, 4]
        m_l = graph.size[l]
        for r in range(graph.size[j]):
            sr = graph.slots[j, r]
            if not taken[j, sr]:
                continue
            row = jacobian[j, sr, sj]
            # the row in registers, each entry's sum in the order of i (the columns' sums are
            # independent chains the processor overlaps)
            row0, row1, row2, row3, row4, row5 = row[0], row[1], row[2], row[3], row[4], row[5]
            at = base + r * m_l
            for c in range(m_l):
                sc = graph.slots[l, c]
                if not taken[l, sc]:
                    continue
                w = weighted[l, sc, sl]
                storage[at + c] += (0.0 + row0 * w[0] + row1 * w[1] + row2 * w[2] + row3 * w[3] + row4 * w[4]
                                    + row5 * w[5])


@kernel(inline=True)
def _assemble_diagonal(graph, taken, storage, floor):
    """floor_j = PIVOT_FLOOR s_c for each joint j of each component c of the graph
    (`JointGraph.component_start`), s_c the largest taken |Γ_rr| of its own; identity rows for the
    untaken slots. Returns the largest s_c.
    Static pivoting (Li & Demmel, "Making Sparse Gaussian Elimination Scalable by Static Pivoting",
    1998): a pivot whose magnitude falls below the floor is raised to it (`_lu_factor`), so that a
    net's redundant rows (its loops' self-stresses, a straight edge held at both ends) factor with a
    bounded multiplier, and every other row is factored exactly: Newton's convergence stays
    quadratic where the rows are independent. A regularization added to every diagonal instead
    damps every Newton step by its share of a row's Schur complement: beside a link of 1e-9 kg
    (Γ_rr to 1e11, as an importer raises a massless link) a fifth of its neighbours' rows, each step
    leaving a sixth of the error. The floor is 1e-14, a hundred times round-off: a heavy body's
    rows beside a light link are real rows whose Schur complement is the ratio of their masses
    smaller than the link's, held to round-off up to a ratio of 1e13 (a floor of 1e-12 takes
    those of a ratio of 1e13 and lets the body fall; `physics.pipeline.simulation`'s
    JOINT_MASS_RATIO_HELD). The raised pivot is positive whatever the sign of the one it replaces:
    below the floor that sign is round-off, and J M⁻¹ Jᵀ is positive definite (the velocity
    projection's active set relies on it). An untaken slot's identity row may be raised too (a
    component's scale past 1e14): its right-hand side is 0 in every caller, and so is its multiplier.
    A component's own scale: the components share no block (Γ is
    theirs side by side), and relative to the whole graph's largest diagonal, a nearly massless
    body's floor would reach the others' rows (gymnasium's pusher: its goal and object of density
    1e-5, on joints of their own, Γ_rr to 1e11 beside the arm's rows of 0.1 to 10)."""
    largest = 0.0
    for c in range(len(graph.component_start) - 1):
        scale = 0.0
        for k in range(graph.component_start[c], graph.component_start[c + 1]):
            j = graph.component_joint[k]
            m = graph.size[j]
            for r in range(m):
                if taken[j, graph.slots[j, r]]:
                    scale = max(scale, abs(storage[graph.diagonal[j] + r * m + r]))
        for k in range(graph.component_start[c], graph.component_start[c + 1]):
            j = graph.component_joint[k]
            m = graph.size[j]
            floor[j] = PIVOT_FLOOR * scale
            for r in range(m):
                if not taken[j, graph.slots[j, r]]:
                    storage[graph.diagonal[j] + r * m + r] = 1.0
        largest = max(largest, scale)
    return largest


@kernel(inline=True)
def _lu_factor(storage, base, m, pivot, stride, floor):
    """The m×m block at `base` (row r at base + r * stride) in place as its LU factors with partial
    pivoting (row r swapped with pivot[r]), a pivot of magnitude below `floor` raised to +floor
    (`_assemble_diagonal`); False if a pivot vanishes (a floor of 0)."""
    for c in range(m):
        p = c
        for r in range(c + 1, m):
            if abs(storage[base + r * stride + c]) > abs(storage[base + p * stride + c]):
                p = r
        pivot[c] = p
        at = base + p * stride + c
        if abs(storage[at]) < floor:
            storage[at] = floor
        if storage[at] == 0.0:
            return False
        if p != c:
            for k in range(m):
                storage[base + c * stride + k], storage[base + p * stride + k] = \
                    storage[base + p * stride + k], storage[base + c * stride + k]
        for r in range(c + 1, m):
            f = storage[base + r * stride + c] / storage[base + c * stride + c]
            storage[base + r * stride + c] = f
            for k in range(c + 1, m):
                storage[base + r * stride + k] -= f * storage[base + c * stride + k]
    return True


@kernel(inline=True)
def _solve33(v0, v1, v2, p0, p1, l10, l20, l21, u00, u01, u02, u11, u12, u22):
    """P⁻¹ (v0, v1, v2) for a 3 × 3 block's LU factors (`_lu_factor`: rows swapped with p0, then p1;
    L's l10, l20, l21 below the diagonal, U on and above it): `_lu_solve`'s operations in its order."""
    if p0 == 1:
        v0, v1 = v1, v0
    elif p0 == 2:
        v0, v2 = v2, v0
    if p1 == 2:
        v1, v2 = v2, v1
    v1 = v1 - l10 * v0
    v2 = v2 - l20 * v0 - l21 * v1
    v2 = v2 / u22
    v1 = (v1 - u12 * v2) / u11
    v0 = (v0 - u01 * v1 - u02 * v2) / u00
    return v0, v1, v2


@kernel(inline=True)
def _lu_solve(storage, base, m, pivot, x, x_base, stride, columns):
    """x ← P⁻¹ x for the m × `columns` matrix at x[x_base + r * stride + c], P's factors at `base`."""
    # Each column's swaps, then its sums in place, k ascending: a column's every element sees the
    # operations of the column-by-column form in its order (the same bits); the columns, innermost,
    # are independent chains the processor overlaps (a 7-row hinge block's were one latency-bound
    # chain at a time).
    for r in range(m):
        p = pivot[r]
        if p != r:
            for c in range(columns):
                a, b = x_base + r * stride + c, x_base + p * stride + c
                x[a], x[b] = x[b], x[a]
    for r in range(m):
        row = x_base + r * stride
        for k in range(r):
            f = storage[base + r * m + k]
            other = x_base + k * stride
            for c in range(columns):
                x[row + c] -= f * x[other + c]
    for r in range(m - 1, -1, -1):
        row = x_base + r * stride
        for k in range(r + 1, m):
            f = storage[base + r * m + k]
            other = x_base + k * stride
            for c in range(columns):
                x[row + c] -= f * x[other + c]
        d = storage[base + r * m + r]
        for c in range(columns):
            x[row + c] = x[row + c] / d


@kernel(refcounts=False)
def _ball_updates(graph, storage, pivot, panel, x, k):
    """Row k of the elimination where ball joint k and its later neighbours are all ball joints
    (3 × 3 blocks: a net's, a chain's): Γ_kl ← P⁻¹ Γ_kl (P = Γ_kk's LU factors, `pivot` its swaps),
    then Γ_il −= Γ_ik Γ_kl for every pair i, l of them, and x_i −= Γ_ik x_k (x_k solved already):
    a chain's, and a net's outside its fronts (`_front_updates`).
    Row k's blocks are gathered into `panel` as they are solved and each Γ_ik is loaded once; every
    operation is the general loops' (`_lu_solve`, the Schur update's sum from 0.0) in their order:
    the same bits, the sign of a zero included."""
    first, last = graph.later_start[k], graph.later_start[k + 1]
    d = last - first
    base = graph.diagonal[k]
    p0, p1 = pivot[0], pivot[1]
    l10, l20, l21 = storage[base + 3], storage[base + 6], storage[base + 7]
    u00, u01, u02 = storage[base], storage[base + 1], storage[base + 2]
    u11, u12, u22 = storage[base + 4], storage[base + 5], storage[base + 8]
    for f in range(d):
        kl = graph.block_jl[first + f]
        for c in range(3):
            v0, v1, v2 = _solve33(storage[kl + c], storage[kl + 3 + c], storage[kl + 6 + c], p0, p1, l10, l20, l21,
                                  u00, u01, u02, u11, u12, u22)
            storage[kl + c], storage[kl + 3 + c], storage[kl + 6 + c] = v0, v1, v2
            panel[9 * f + c], panel[9 * f + 3 + c], panel[9 * f + 6 + c] = v0, v1, v2
    u = graph.update_start[k]
    x0, x1, x2 = x[k * ROWS_PER_JOINT], x[k * ROWS_PER_JOINT + 1], x[k * ROWS_PER_JOINT + 2]
    for e in range(d):
        ik = graph.block_lj[first + e]
        a00, a01, a02 = storage[ik], storage[ik + 1], storage[ik + 2]
        a10, a11, a12 = storage[ik + 3], storage[ik + 4], storage[ik + 5]
        a20, a21, a22 = storage[ik + 6], storage[ik + 7], storage[ik + 8]
        i = graph.later_x[first + e]
        x[i] -= 0.0 + a00 * x0 + a01 * x1 + a02 * x2
        x[i + 1] -= 0.0 + a10 * x0 + a11 * x1 + a12 * x2
        x[i + 2] -= 0.0 + a20 * x0 + a21 * x1 + a22 * x2
        for f in range(d):
            il = graph.update[u]
            u += 1
            b = 9 * f
            b00, b01, b02 = panel[b], panel[b + 1], panel[b + 2]
            b10, b11, b12 = panel[b + 3], panel[b + 4], panel[b + 5]
            b20, b21, b22 = panel[b + 6], panel[b + 7], panel[b + 8]
            storage[il] -= 0.0 + a00 * b00 + a01 * b10 + a02 * b20
            storage[il + 1] -= 0.0 + a00 * b01 + a01 * b11 + a02 * b21
            storage[il + 2] -= 0.0 + a00 * b02 + a01 * b12 + a02 * b22
            storage[il + 3] -= 0.0 + a10 * b00 + a11 * b10 + a12 * b20
            storage[il + 4] -= 0.0 + a10 * b01 + a11 * b11 + a12 * b21
            storage[il + 5] -= 0.0 + a10 * b02 + a11 * b12 + a12 * b22
            storage[il + 6] -= 0.0 + a20 * b00 + a21 * b10 + a22 * b20
            storage[il + 7] -= 0.0 + a20 * b01 + a21 * b11 + a22 * b21
            storage[il + 8] -= 0.0 + a20 * b02 + a21 * b12 + a22 * b22


@kernel(refcounts=False)
def _front_updates(graph, storage, pivot, floor, dense, x, f):
    """The elimination of front f's joints (`_fronts`: k₁ … k_s, then the joints they reach) in one
    dense matrix, `dense` (3u × 3u, row-major): its blocks gathered from `storage`, each k_t in
    turn as `_lu_factor`, `_lu_solve` and `_ball_updates` do it (its diagonal block's LU factors,
    x_k solved, row k's blocks Γ_kl ← P⁻¹ Γ_kl, x_i −= Γ_ik x_k, then Γ_il −= Γ_ik Γ_kl over the
    trailing rows and columns, each entry's sum from 0.0 in the same order: the same bits), then
    the blocks scattered back. Two joints k_t, k_t+1 go in one pass over the trailing matrix:
    k_t+1's own rows and columns take k_t's update first, k_t+1 is factored, and every other entry
    then takes k_t's update and k_t+1's one after the other (the order of the two passes: the same
    bits, in half the reads and writes). False if a pivot vanishes (`_lu_factor`)."""
    first = graph.front_start[f]
    u = graph.front_start[f + 1] - first
    W = 3 * u
    _front_copy(graph, storage, dense, f, True)
    s = graph.front_eliminated[f]
    t = 0
    while t < s:
        d = 3 * t
        if not _front_pivot(graph, dense, W, pivot, floor, x, first, u, t):
            return False
        if t + 1 == s:
            _front_rank3(dense, W, d, d + 3, W, d + 3, W)
            break
        _front_rank3(dense, W, d, d + 3, d + 6, d + 3, W)       # k_t+1's rows …
        _front_rank3(dense, W, d, d + 6, W, d + 3, d + 6)       # … and columns
        if not _front_pivot(graph, dense, W, pivot, floor, x, first, u, t + 1):
            return False
        lo = d + 6
        p0, p1, p2 = (dense[d * W + lo:d * W + W], dense[(d + 1) * W + lo:(d + 1) * W + W],
                      dense[(d + 2) * W + lo:(d + 2) * W + W])
        q0, q1, q2 = (dense[(d + 3) * W + lo:(d + 3) * W + W], dense[(d + 4) * W + lo:(d + 4) * W + W],
                      dense[(d + 5) * W + lo:(d + 5) * W + W])
        for row in range(lo, W):
            at = row * W
            a0, a1, a2 = dense[at + d], dense[at + d + 1], dense[at + d + 2]
            b0, b1, b2 = dense[at + d + 3], dense[at + d + 4], dense[at + d + 5]
            trailing = dense[at + lo:at + W]
            for c in range(W - lo):
                e = trailing[c] - (0.0 + a0 * p0[c] + a1 * p1[c] + a2 * p2[c])
                trailing[c] = e - (0.0 + b0 * q0[c] + b1 * q1[c] + b2 * q2[c])
        t += 2
    _front_copy(graph, storage, dense, f, False)
    return True


@kernel(inline=True)
def _front_copy(graph, storage, dense, f, gather):
    """Front f's blocks from `storage` into its `dense` matrix (`gather`), or back."""
    first = graph.front_start[f]
    u = graph.front_start[f + 1] - first
    W = 3 * u
    blocks = graph.front_block_start[f]
    for a in range(u):
        offsets = graph.front_block[blocks + a * u:blocks + (a + 1) * u]
        for r in range(3):
            row = dense[(3 * a + r) * W:(3 * a + r + 1) * W]
            for b in range(u):
                o = offsets[b] + 3 * r
                if gather:
                    row[3 * b], row[3 * b + 1], row[3 * b + 2] = storage[o], storage[o + 1], storage[o + 2]
                else:
                    storage[o], storage[o + 1], storage[o + 2] = row[3 * b], row[3 * b + 1], row[3 * b + 2]


@kernel(inline=True)
def _front_pivot(graph, dense, W, pivot, floor, x, first, u, t):
    """Front joint k_t's own step (`_front_updates`): its diagonal block's LU factors (`_lu_factor`,
    at stride W; False if a pivot vanishes), x_k solved, row k's blocks P⁻¹ Γ_kl (`_solve33`, as
    `_lu_solve`) and x_i −= Γ_ik x_k as `_ball_updates` (row k's blocks as views, as in `_front_rank3`)."""
    k = graph.front_joint[first + t]
    d = 3 * t                   # the diagonal block's first row and column
    p = pivot[k]
    if not _lu_factor(dense, d * W + d, 3, p, W, floor[k]):
        return False
    p0, p1 = p[0], p[1]
    lo = d + 3
    r0, r1, r2 = d * W, (d + 1) * W, (d + 2) * W
    l10, l20, l21 = dense[r1 + d], dense[r2 + d], dense[r2 + d + 1]
    u00, u01, u02 = dense[r0 + d], dense[r0 + d + 1], dense[r0 + d + 2]
    u11, u12, u22 = dense[r1 + d + 1], dense[r1 + d + 2], dense[r2 + d + 2]
    xk = k * ROWS_PER_JOINT
    x[xk], x[xk + 1], x[xk + 2] = _solve33(x[xk], x[xk + 1], x[xk + 2], p0, p1, l10, l20, l21, u00, u01, u02, u11,
                                           u12, u22)
    k0, k1, k2 = dense[r0 + lo:r0 + W], dense[r1 + lo:r1 + W], dense[r2 + lo:r2 + W]
    for c in range(W - lo):
        k0[c], k1[c], k2[c] = _solve33(k0[c], k1[c], k2[c], p0, p1, l10, l20, l21, u00, u01, u02, u11, u12, u22)
    x0, x1, x2 = x[xk], x[xk + 1], x[xk + 2]
    for a in range(t + 1, u):
        xi = graph.front_x[first + a]
        for r in range(3):
            row = (3 * a + r) * W + d
            x[xi + r] -= 0.0 + dense[row] * x0 + dense[row + 1] * x1 + dense[row + 2] * x2
    return True


@kernel(inline=True)
def _front_rank3(dense, W, d, row_lo, row_hi, col_lo, col_hi):
    """Rows [row_lo, row_hi) × columns [col_lo, col_hi) of a front's `dense` matrix −= its columns
    d … d + 2 times rows d … d + 2 (`_ball_updates`' sums, from 0.0). The rows taken as views, the
    loop runs several columns at once: about 20 GFLOP/s on one core, against 4 with the same loop
    indexing the whole matrix."""
    n = col_hi - col_lo
    k0 = dense[d * W + col_lo:d * W + col_hi]
    k1 = dense[(d + 1) * W + col_lo:(d + 1) * W + col_hi]
    k2 = dense[(d + 2) * W + col_lo:(d + 2) * W + col_hi]
    for row in range(row_lo, row_hi):
        at = row * W
        a0, a1, a2 = dense[at + d], dense[at + d + 1], dense[at + d + 2]
        trailing = dense[at + col_lo:at + col_hi]
        for c in range(n):
            trailing[c] -= 0.0 + a0 * k0[c] + a1 * k1[c] + a2 * k2[c]


@kernel(inline=True)
def _block_update(storage, ik, kl, il, m, m_i, m_l):
    """Γ_il −= Γ_ik Γ_kl for the m_i × m, m × m_l and m_i × m_l blocks at ik, kl and il: each entry's
    sum from 0.0, q ascending, in a register, then subtracted (the same bits as a sum per entry); a
    row's entries are independent chains the processor overlaps (over views: the humanoid's 2 × 2
    to 7 × 7 blocks took a quarter less time than with a row's sums side by side in memory)."""
    for r in range(m_i):
        a_row = storage[ik + r * m:ik + r * m + m]
        target = storage[il + r * m_l:il + r * m_l + m_l]
        for c in range(m_l):
            s = 0.0
            for q in range(m):
                s += a_row[q] * storage[kl + q * m_l + c]
            target[c] -= s


@kernel(refcounts=False)
def factor_and_solve(graph, factors, rhs):
    """rhs (J, ROWS_PER_JOINT) ← Γ⁻¹ rhs in place, slot-indexed (an untaken slot's comes out 0 for
    the zero right-hand side every caller gives it), Γ assembled in `factors.storage` (`assemble`, overwritten by
    its factors). The module docstring's elimination: a split graph's halves one after the other
    (`physics.constraints.rattle` runs them at once: `eliminate`, `finish`, the same bits), then
    the separator; False if a pivot vanishes (a component whose taken diagonal is all 0: no floor)."""
    J = len(graph.size)
    storage, pivot, floor, x, panel = factors.storage, factors.pivot, factors.floor, factors.x, factors.panel
    _gathered(graph, rhs, x)
    for part in range(3):
        if part == 2:
            _merge_halves(graph, storage, x)
        if not _eliminate_range(graph, storage, pivot, floor, panel, x, graph.halves[part],
                          graph.halves[part + 1] if part < 2 else J):
            return False
    _backward(graph, storage, x, 0, J)
    _scattered(graph, x, rhs)
    return True


@kernel(refcounts=False)
def eliminate(graph, storage, pivot, floor, panel, x, start, stop):
    """`_eliminate_range` of order[start:stop]: a split graph's half (`physics.constraints.rattle`)."""
    return _eliminate_range(graph, storage, pivot, floor, panel, x, start, stop)


@kernel(refcounts=False)
def finish(graph, factors):
    """A split graph's elimination after its halves (`eliminate` of each): the second half's updates
    of the separator's blocks and rows added, the separator eliminated and its back substitution
    (the halves' own and the scatter are left to the caller: `backward`, `scatter`). False as
    `factor_and_solve`."""
    J = len(graph.size)
    _merge_halves(graph, factors.storage, factors.x)
    if not _eliminate_range(graph, factors.storage, factors.pivot, factors.floor, factors.panel, factors.x,
                            graph.halves[2], J):
        return False
    _backward(graph, factors.storage, factors.x, graph.halves[2], J)
    return True


@kernel(inline=True)
def _merge_halves(graph, storage, x):
    """The second half's updates of the separator's blocks and rows, held apart, added to them."""
    for t in range(graph.merge.shape[0]):
        storage[graph.merge[t, 1]] += storage[graph.merge[t, 0]]
    _merge_x(graph, x)


@kernel(inline=True)
def _merge_x(graph, x):
    """The second half's updates of the separator's right-hand side, held apart, added to it."""
    for t in range(graph.merge_x.shape[0]):
        x[graph.merge_x[t, 1]] += x[graph.merge_x[t, 0]]


@kernel(inline=True)
def _eliminate_range(graph, storage, pivot, floor, panel, x, start, stop):
    """The elimination of the joints order[start:stop] (module docstring), x the right-hand side by
    block row (`_gathered`), `panel` this call's scratch. Each half of a split graph
    (`JointGraph.halves`) writes only its own blocks and rows, its blocks with the separator's and,
    the second half, buffers of the separator's own, so the two may run at once. False if a
    diagonal block is singular."""
    position = start
    while position < stop:
        k = graph.order[position]
        position += 1
        m = graph.size[k]
        if m == 0:
            continue
        front = graph.front[k]
        if front >= 0:      # a run of ball joints (a separator of a net's dissection): one dense matrix
            if not _front_updates(graph, storage, pivot, floor, panel, x, front):
                return False
            position += graph.front_eliminated[front] - 1
            continue
        if not _lu_factor(storage, graph.diagonal[k], m, pivot[k], m, floor[k]):
            return False
        _lu_solve(storage, graph.diagonal[k], m, pivot[k], x, k * ROWS_PER_JOINT, 1, 1)
        first, last = graph.later_start[k], graph.later_start[k + 1]
        balls = m == 3
        for e in range(first, last):
            balls = balls and graph.size[graph.later[e]] == 3
        if balls:       # a ball joint among ball joints (a net's, a chain's): its own loops
            _ball_updates(graph, storage, pivot[k], panel, x, k)
            continue
        for e in range(first, last):                 # Γ_kl ← P⁻¹ Γ_kl
            l = graph.later[e]
            _lu_solve(storage, graph.diagonal[k], m, pivot[k], storage, graph.block_jl[e], graph.size[l],
                      graph.size[l])
        u = graph.update_start[k]
        for e in range(first, last):                 # row i −= Γ_ik (row k)
            i = graph.later[e]
            m_i = graph.size[i]
            ik = graph.block_lj[e]
            for f in range(first, last):
                l = graph.later[f]
                m_l = graph.size[l]
                kl, il = graph.block_jl[f], graph.update[u]
                u += 1
                # a robot's hinges among hinges (7 rows with a limit and a rotor, 6 with one of them)
                # with sizes the compiler knows, their loops unrolled: the ant's eight hinges factor in 8.1 µs, 10.6
                # through the general loops
                if m == 7 and m_i == 7 and m_l == 7:
                    _block_update(storage, ik, kl, il, 7, 7, 7)
                elif m == 6 and m_i == 6 and m_l == 6:
                    _block_update(storage, ik, kl, il, 6, 6, 6)
                # blocks of mixed sizes (a humanoid's hinges, multi-axis joints and their axes): the
                # sum's length the compiler knows, its loop unrolled
                elif m == 2:
                    _block_update(storage, ik, kl, il, 2, m_i, m_l)
                elif m == 3:
                    _block_update(storage, ik, kl, il, 3, m_i, m_l)
                elif m == 4:
                    _block_update(storage, ik, kl, il, 4, m_i, m_l)
                elif m == 7:
                    _block_update(storage, ik, kl, il, 7, m_i, m_l)
                else:
                    _block_update(storage, ik, kl, il, m, m_i, m_l)
            xi = graph.later_x[e]
            for r in range(m_i):
                s = 0.0
                for q in range(m):
                    s += storage[ik + r * m + q] * x[k * ROWS_PER_JOINT + q]
                x[xi + r] -= s
    return True


@kernel(refcounts=False)
def solve_factored(graph, factors, rhs):
    """rhs (J, ROWS_PER_JOINT) ← Γ⁻¹ rhs in place with the `factors` `factor_and_solve` left (the
    same Γ, the same taken slots): its forward and back substitutions alone, O(the fill) instead of
    a factorization (RATTLE's chord steps), the second half's updates of the separator's rows held
    apart and added where the factorization adds them (the same bits). True (as factor_and_solve).
    A split graph's halves one after the other (`physics.constraints.rattle` runs them at once:
    `forward`, `backward`, the same bits)."""
    J = len(graph.size)
    storage, x = factors.storage, factors.x
    _gathered(graph, rhs, x)
    _forward(graph, storage, factors.pivot, x, 0, J, graph.halves[2])
    _backward(graph, storage, x, 0, J)
    _scattered(graph, x, rhs)
    return True


@kernel(refcounts=False)
def solve_separator(graph, storage, pivot, x):
    """A split graph's substitutions between its halves' forward and back substitutions: the second
    half's updates of the separator's rows added, then the separator's forward and back
    substitutions."""
    J = len(graph.size)
    _merge_x(graph, x)
    _forward(graph, storage, pivot, x, graph.halves[2], J, -1)
    _backward(graph, storage, x, graph.halves[2], J)


@kernel(refcounts=False)
def forward(graph, storage, pivot, x, start, stop):
    """`_forward` over order[start:stop]: a split graph's half (`physics.constraints.rattle`)."""
    _forward(graph, storage, pivot, x, start, stop, -1)


@kernel(refcounts=False)
def backward(graph, storage, x, start, stop):
    """`_backward` over order[start:stop]: a split graph's half (`physics.constraints.rattle`)."""
    _backward(graph, storage, x, start, stop)


@kernel(refcounts=False)
def gather(graph, rhs, x):
    """x ← rhs (J, ROWS_PER_JOINT), slot-indexed, by block row (`_gathered`): an elimination's start."""
    _gathered(graph, rhs, x)


@kernel(refcounts=False)
def scatter(graph, x, rhs):
    """rhs (J, ROWS_PER_JOINT) ← x by slot: an elimination's end (`_scattered`)."""
    _scattered(graph, x, rhs)


@kernel(inline=True)
def _forward(graph, storage, pivot, x, start, stop, merge_at):
    """The forward substitution over order[start:stop] (x by block row, `_gathered`): each joint's
    x_k ← P⁻¹ x_k, then x_i −= Γ_ik x_k at `later_x` (a half writes only its own rows and the
    separator's, the second half into buffers, added at order position `merge_at`)."""
    for position in range(start, stop):
        if position == merge_at:
            _merge_x(graph, x)
        k = graph.order[position]
        m = graph.size[k]
        if m == 0:
            continue
        _lu_solve(storage, graph.diagonal[k], m, pivot[k], x, k * ROWS_PER_JOINT, 1, 1)
        for e in range(graph.later_start[k], graph.later_start[k + 1]):
            i = graph.later[e]
            ik = graph.block_lj[e]
            xk, xi = k * ROWS_PER_JOINT, graph.later_x[e]
            if m == 3 and graph.size[i] == 3:   # two ball joints': the loop below, unrolled
                x0, x1, x2 = x[xk], x[xk + 1], x[xk + 2]
                for r in range(3):
                    x[xi + r] -= 0.0 + storage[ik + 3 * r] * x0 + storage[ik + 3 * r + 1] * x1 + storage[ik + 3 * r + 2] * x2
                continue
            for r in range(graph.size[i]):
                s = 0.0
                for q in range(m):
                    s += storage[ik + r * m + q] * x[xk + q]
                x[xi + r] -= s


@kernel(inline=True)
def _backward(graph, storage, x, start, stop):
    """The back substitution over order[start:stop], last first (x by block row): x_k −= Γ_kl x_l
    over k's later joints, which are solved already (a half's are its own and the separator's)."""
    for position in range(stop - 1, start - 1, -1):
        k = graph.order[position]
        m = graph.size[k]
        for e in range(graph.later_start[k], graph.later_start[k + 1]):
            l = graph.later[e]
            m_l = graph.size[l]
            kl = graph.block_jl[e]
            if m == 3 and m_l == 3:     # two ball joints' (a net's, a chain's): the loop below, unrolled
                xk, xl = k * ROWS_PER_JOINT, l * ROWS_PER_JOINT
                x0, x1, x2 = x[xl], x[xl + 1], x[xl + 2]
                for r in range(3):
                    x[xk + r] -= 0.0 + storage[kl + 3 * r] * x0 + storage[kl + 3 * r + 1] * x1 + storage[kl + 3 * r + 2] * x2
                continue
            for r in range(m):
                s = 0.0
                for c in range(m_l):
                    s += storage[kl + r * m_l + c] * x[l * ROWS_PER_JOINT + c]
                x[k * ROWS_PER_JOINT + r] -= s


@kernel(inline=True)
def _scattered(graph, x, rhs):
    """x (by block row) scattered into `rhs` by slot."""
    for j in range(len(graph.size)):
        for r in range(graph.size[j]):
            rhs[j, graph.slots[j, r]] = x[j * ROWS_PER_JOINT + r]


@kernel(inline=True)
def _gathered(graph, rhs, x):
    """x ← rhs (J, ROWS_PER_JOINT), slot-indexed, gathered by block row: joint j's at j * ROWS_PER_JOINT."""
    x[:] = 0.0
    for j in range(len(graph.size)):
        for r in range(graph.size[j]):
            x[j * ROWS_PER_JOINT + r] = rhs[j, graph.slots[j, r]]
