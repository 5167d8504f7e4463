"""The scene graph: a forest of nodes in contiguous arrays, world <-> local dynamics compiled.

"The Dynamics of a Transform Hierarchy" (formulas, code and tests listed in docs/references.md),
and the layout of "Implementing Linked Lists with Contiguous Arrays": values in contiguous arrays,
links as small integer indices, erase = move the last element into the hole.

Conventions (docs/architecture.md): a node's local transform `(T1, R1, S1)` maps child coordinates
to its parent's, `x -> R S x + T`, `J = R S` with a scalar scale S. Subscripts follow the article:
1 = the node relative to its parent (local), 2 = the parent relative to the world, 3 = the node
relative to the world, `A3 = A2 @ A1`. Angular velocities and accelerations are 3-vectors here;
the article's skew matrix is `hat(omega)`. `omega_local` (field `omega` of `Hierarchy.local`) is
expressed in the parent frame, `omega_world` in the world frame; likewise `v`, `a`, `alpha`.

Layout (Pinocchio's Model/Data, Box2D's body/bodySim): the per-step state lives in two
`NodeState`s of structure-of-arrays (`local`, `world_state`); the topology (parent, child and
sibling links, evaluation order, names) lives apart and changes only through `add`, `remove`,
`reparent`. The evaluation order lists every node after its parent; the constructor makes it the
memory order, `remove` leaves holes (-1) in it that are compacted once they are half of it.
"""
import numpy as np
from physics.core.compiled import bind, kernel

from physics.math.rotation import hat, vee
from physics.math.rotation_kernels import add, cross, load3, load33, matmul, matmul_tn, matvec, matvec_t, mul, store3, store33, \
    sub
from physics.math.transform import DynamicTransform, Transform

__all__ = ["Hierarchy", "NodeState"]

# field -> shape of one node's value
_FIELDS = {
    "translation": (3,),
    "rotation": (3, 3),
    "scale": (),
    "velocity": (3,),
    "acceleration": (3,),
    "omega": (3,),
    "alpha": (3,),
}
_NONE = -1  # "no node": the world as a parent, no child, no sibling, a hole in the order
_NO_BODIES, _NO_SPIN = np.full(0, _NONE, np.int64), np.zeros((0, 3))   # update_world: no body-axes spin


class NodeState:
    """The dynamic state of N nodes as structure-of-arrays, float64, 3D.

    `translation (N,3)`, `rotation (N,3,3)`, `scale (N,)`, `velocity (N,3)`, `acceleration (N,3)`,
    `omega (N,3)`, `alpha (N,3)`. The attributes are views of buffers that may hold spare capacity
    for `Hierarchy.add`; write into them in place (`s.velocity[i] = ...`) or assign whole arrays of
    the same shape (`s.velocity = v`, copied in). Re-read them after the node count changes.
    """

    __slots__ = ("_n", "_buffers", "_storage")

    def __init__(self, n):
        """N nodes at rest at the identity: T = 0, R = I, S = 1, v = a = ω = α = 0."""
        self._n = n
        self._storage = object()
        self._buffers = {f: np.zeros((n, *shape)) for f, shape in _FIELDS.items()}
        self._buffers["rotation"][:] = np.eye(3)
        self._buffers["scale"][:] = 1.0

    @classmethod
    def from_dynamic_transform(cls, dt):
        """Copy a 3D `physics.DynamicTransform` of batch shape (N,) or () (the latter as N = 1).

        Its angular velocity and acceleration are skew (..., 3, 3); stored as vee(.) 3-vectors.
        """
        t = dt.transform
        rotation = np.asarray(t.rotation, dtype=float)
        if rotation.ndim not in (2, 3) or rotation.shape[-2:] != (3, 3):
            raise ValueError(f"expected a 3D DynamicTransform of batch shape (N,) or (), got rotation shape {rotation.shape}")
        n = rotation.shape[0] if rotation.ndim == 3 else 1
        state = cls(n)

        def rows(x, shape):
            return np.broadcast_to(np.asarray(x, dtype=float).reshape((-1, *shape)) if rotation.ndim == 2
                                   else np.asarray(x, dtype=float), (n, *shape))

        state.translation = rows(t.translation, (3,))
        state.rotation = rows(rotation, (3, 3))
        state.scale = rows(t.scale, ())
        state.velocity = rows(dt.velocity, (3,))
        state.acceleration = rows(dt.acceleration, (3,))
        state.omega = vee(rows(dt.angular_velocity, (3, 3)))
        state.alpha = vee(rows(dt.angular_acceleration, (3, 3)))
        return state

    def to_dynamic_transform(self):
        """A `physics.DynamicTransform` of batch shape (N,) holding copies of this state."""
        # the hierarchy keeps rotations orthonormal and scales positive: skip re-validation
        transform = Transform(self.translation.copy(), self.rotation.copy(), self.scale.copy(), check=False)
        return DynamicTransform.from_vectors(transform, self.velocity.copy(), self.acceleration.copy(),
                                             self.omega.copy(), self.alpha.copy(), check=False)

    def copy(self):
        out = NodeState(self._n)
        for f in _FIELDS:
            out._buffers[f][:] = self._buffers[f][: self._n]
        return out

    def __len__(self):
        return self._n

    def __repr__(self):
        return f"NodeState(n={self._n})"

    @property
    def storage(self):
        """A token that stays the same object while the arrays' views do (the buffers and the node
        count), and is new once a node is added or removed (`Hierarchy.add`, `remove`): what a call
        bound to this state's arrays checks, without making their views."""
        return self._storage

    # -- used by Hierarchy: capacity, the node count and moving rows (the cw::list erase) --
    def _resize(self, n):
        """N nodes within the capacity: the views are n rows long now, so a new `storage` token."""
        self._n = n
        self._storage = object()

    def _reserve(self, capacity):
        for f, buffer in self._buffers.items():
            if buffer.shape[0] < capacity:
                grown = np.zeros((capacity, *buffer.shape[1:]))
                grown[: self._n] = buffer[: self._n]
                self._buffers[f] = grown
                self._storage = object()

    def _move_row(self, src, dst):
        for buffer in self._buffers.values():
            buffer[dst] = buffer[src]

    def _set_row(self, i, other, j):
        for f, buffer in self._buffers.items():
            buffer[i] = other._buffers[f][j]

    def views(self):
        """(translation, rotation, scale, velocity, acceleration, omega, alpha): the N-row views, in
        one call (a step's stages hand them to compiled kernels; seven property calls cost more)."""
        n, b = self._n, self._buffers
        return (b["translation"][:n], b["rotation"][:n], b["scale"][:n], b["velocity"][:n], b["acceleration"][:n],
                b["omega"][:n], b["alpha"][:n])

    def _arrays(self):
        """The full buffers in kernel argument order."""
        b = self._buffers
        return (b["translation"], b["rotation"], b["scale"], b["velocity"], b["acceleration"], b["omega"], b["alpha"])


def _field_property(name):
    shape = _FIELDS[name]

    def get(self):
        return self._buffers[name][: self._n]

    def set(self, value):
        value = np.asarray(value, dtype=float)
        if value.shape != (self._n, *shape):
            raise ValueError(f"NodeState.{name} must have shape {(self._n, *shape)}, got {value.shape}")
        self._buffers[name][: self._n] = value

    return property(get, set, doc=f"({'N, ' + ', '.join(map(str, shape)) if shape else 'N,'}) float64 view")


for _name in _FIELDS:
    setattr(NodeState, _name, _field_property(_name))


# ---------------------------------------------------------------- kernels
# Vectors are 3-tuples of floats inside the kernels (helpers from physics.math.rotation_kernels), so the
# loops read like the formulas and compile to straight-line code without temporary arrays.

@kernel(refcounts=False)
def world_from_local(order, parent, body_slot, omega_body,
                      T1, R1, S1, v1, a1, w1, alpha1,
                      T3, R3, S3, v3, a3, w3, alpha3):
    """World state (3) of every node in `order` from its local state (1) and its parent's world (2)
    (`node_world`, one node at a time). `order` lists parents before children; entries -1 are
    holes and skipped."""
    for i in order:
        if i >= 0:
            node_world(i, parent, body_slot, omega_body, T1, R1, S1, v1, a1, w1, alpha1,
                       T3, R3, S3, v3, a3, w3, alpha3)


@kernel(inline=True)
def node_world(i, parent, body_slot, omega_body,
               T1, R1, S1, v1, a1, w1, alpha1,
               T3, R3, S3, v3, a3, w3, alpha3):
    """World state (3) of node i from its local state (1) and its parent's world (2), already computed.

    "The Dynamics of a Transform Hierarchy", "Dynamics of Composition", with r = J2 T1 the
    parent-to-node offset in world axes:
        T3 = T2 + r                  R3 = R2 R1        S3 = S2 S1
        v3 = v2 + J2 v1 + ω2 × r
        a3 = a2 + J2 a1 + α2 × r + ω2 × (ω2 × r) + 2 ω2 × (J2 v1)
                 (Euler)        (centripetal)    (Coriolis)
        ω3 = ω2 + R2 ω1
        α3 = α2 + R2 α1 + ω2 × ω3
    A root (parent -1) has the world as parent: its world state is its local state.
    A node with body_slot[i] = b >= 0 (body_slot may be empty: none) keeps its angular velocity in
    its own axes, omega_body[b] (a rigid body's state, physics.dynamics.integrators); its local one is
    derived first, from its parent's world motion: ω1 = R1 ω_body − R2ᵀ ω2.
    """
    p = parent[i]
    if body_slot.size > 0 and body_slot[i] >= 0:
        spin = matvec(load33(R1, i), load3(omega_body, body_slot[i]))
        store3(w1, i, spin if p < 0 else sub(spin, matvec_t(load33(R3, p), load3(w3, p))))
    if p < 0:
        store3(T3, i, load3(T1, i))
        store33(R3, i, load33(R1, i))
        S3[i] = S1[i]
        store3(v3, i, load3(v1, i))
        store3(a3, i, load3(a1, i))
        store3(w3, i, load3(w1, i))
        store3(alpha3, i, load3(alpha1, i))
        return
    T2, R2, s2 = load3(T3, p), load33(R3, p), S3[p]
    v2, a2, w2, alpha2 = load3(v3, p), load3(a3, p), load3(w3, p), load3(alpha3, p)
    R1_i, S1_i = load33(R1, i), S1[i]
    r = mul(s2, matvec(R2, load3(T1, i)))
    J2v1 = mul(s2, matvec(R2, load3(v1, i)))
    J2a1 = mul(s2, matvec(R2, load3(a1, i)))
    omega3 = add(w2, matvec(R2, load3(w1, i)))
    alpha3_i = add(add(alpha2, matvec(R2, load3(alpha1, i))), cross(w2, omega3))
    T3_i = add(T2, r)
    v3_i = add(add(v2, J2v1), cross(w2, r))
    euler_centripetal = add(cross(alpha2, r), cross(w2, cross(w2, r)))
    coriolis = mul(2.0, cross(w2, J2v1))
    a3_i = add(add(a2, J2a1), add(euler_centripetal, coriolis))

    store3(T3, i, T3_i)
    store3(v3, i, v3_i)
    store3(a3, i, a3_i)
    store3(w3, i, omega3)
    store3(alpha3, i, alpha3_i)
    store33(R3, i, matmul(R2, R1_i))
    S3[i] = s2 * S1_i


@kernel(refcounts=False)
def _local_from_world(nodes, parent,
                      T3, R3, S3, v3, a3, w3, alpha3,
                      T1, R1, S1, v1, a1, w1, alpha1):
    """Local state (1) of every node in `nodes` from its world state (3) and its parent's (2).

    "The Dynamics of a Transform Hierarchy", "Converting Global Dynamics To Local Dynamics"
    (A1 = A2⁻¹ A3), with
    d = T3 − T2 = J2 T1 and J2⁻¹ = R2ᵀ / S2:
        T1 = J2⁻¹ d                  R1 = R2ᵀ R3       S1 = S3 / S2
        v1 = J2⁻¹ (v3 − v2 − ω2 × d)
        a1 = J2⁻¹ (a3 − a2 − α2 × d − ω2 × (ω2 × d) − 2 ω2 × (J2 v1))
        ω1 = R2ᵀ (ω3 − ω2)
        α1 = R2ᵀ (α3 − α2 − ω2 × ω3)
    Each node reads only world states, so the order does not matter; entries -1 are skipped.
    """
    for i in nodes:
        if i < 0:
            continue
        p = parent[i]
        if p < 0:
            store3(T1, i, load3(T3, i))
            store33(R1, i, load33(R3, i))
            S1[i] = S3[i]
            store3(v1, i, load3(v3, i))
            store3(a1, i, load3(a3, i))
            store3(w1, i, load3(w3, i))
            store3(alpha1, i, load3(alpha3, i))
            continue
        R2, inv_s2, w2, alpha2 = load33(R3, p), 1.0 / S3[p], load3(w3, p), load3(alpha3, p)
        omega3 = load3(w3, i)
        d = sub(load3(T3, i), load3(T3, p))
        J2v1 = sub(sub(load3(v3, i), load3(v3, p)), cross(w2, d))
        euler_centripetal = add(cross(alpha2, d), cross(w2, cross(w2, d)))
        coriolis = mul(2.0, cross(w2, J2v1))
        J2a1 = sub(sub(load3(a3, i), load3(a3, p)), add(euler_centripetal, coriolis))
        R3_i, S3_i = load33(R3, i), S3[i]
        alpha1_i = matvec_t(R2, sub(sub(load3(alpha3, i), alpha2), cross(w2, omega3)))

        store3(T1, i, mul(inv_s2, matvec_t(R2, d)))
        store3(v1, i, mul(inv_s2, matvec_t(R2, J2v1)))
        store3(a1, i, mul(inv_s2, matvec_t(R2, J2a1)))
        store3(w1, i, matvec_t(R2, sub(omega3, w2)))
        store3(alpha1, i, alpha1_i)
        store33(R1, i, matmul_tn(R2, R3_i))
        S1[i] = S3_i * inv_s2


@kernel(refcounts=False)
def _link_children(parent, first_child, next_sibling, prev_sibling):
    """Child lists as index links (cw::list): each parent's children in increasing index order."""
    first_child[:] = -1
    next_sibling[:] = -1
    prev_sibling[:] = -1
    for i in range(parent.shape[0] - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            head = first_child[p]
            next_sibling[i] = head
            if head >= 0:
                prev_sibling[head] = i
            first_child[p] = i


@kernel(refcounts=False)
def _subtree(root, first_child, next_sibling, parent, out):
    """Write the subtree of `root` into `out` in pre-order (parents first); return its size.

    Stackless walk over the child/sibling links: down to a first child, else across to a sibling,
    else up until an ancestor below `root` has a next sibling.
    """
    count = 0
    i = root
    while True:
        out[count] = i
        count += 1
        if first_child[i] >= 0:
            i = first_child[i]
            continue
        while i != root and next_sibling[i] < 0:
            i = parent[i]
        if i == root:
            return count
        i = next_sibling[i]


# ---------------------------------------------------------------- the hierarchy

class Hierarchy:
    """A forest of N nodes: `Hierarchy(parent, local, names=None)`.

    `parent` (N,) integers, -1 for the world, `parent[i] < i`; `local` a `physics.DynamicTransform`
    (or a `NodeState`) of batch shape (N,); `names` N distinct strings (default "node0", ... made
    on first use). State: `h.local` (read and write in place; takes effect at the next update),
    `h.world_state` (written by `update_world`). Topology: `h.parent`, `h.names`, `h.index(name)`,
    `h.children(node)`, changed by `add`, `remove` (O(1)), `reparent`. Nodes may be named by
    name or by index; indices change when `remove` moves the last node into the hole.
    """

    def __init__(self, parent, local, names=None):
        parent_in = np.asarray(parent)
        if parent_in.ndim != 1 or not (np.issubdtype(parent_in.dtype, np.integer) or parent_in.size == 0):
            raise ValueError(f"parent must be a 1-D integer array, got shape {parent_in.shape} dtype {parent_in.dtype}")
        n = parent_in.shape[0]
        if n >= 2**31 - 1:
            raise ValueError(f"at most 2**31 - 2 nodes (int32 links), got {n}")
        if names is not None:
            names = [str(s) for s in names]
            if len(names) != n:
                raise ValueError(f"names has {len(names)} entries for {n} parents")
            seen = {}
            for i, s in enumerate(names):
                if s in seen:
                    raise ValueError(f"duplicate node name {s!r} (nodes {seen[s]} and {i})")
                seen[s] = i
        bad = np.flatnonzero((parent_in < -1) | (parent_in >= np.arange(n)))
        if bad.size:
            i = int(bad[0])
            label = repr(names[i]) if names is not None else f"node {i}"
            raise ValueError(f"{label}: parent {int(parent_in[i])} must be -1 (the world) or an index below {i}")
        state = local if isinstance(local, NodeState) else NodeState.from_dynamic_transform(local)
        if len(state) != n:
            raise ValueError(f"local holds {len(state)} nodes, parent {n}")
        _check_scale(state.scale, names)

        self._n = n
        self.local = state.copy() if state is local else state
        self.world_state = NodeState(n)
        self._parent = parent_in.astype(np.int32)
        self._first_child = np.empty(n, np.int32)
        self._next_sibling = np.empty(n, np.int32)
        self._prev_sibling = np.empty(n, np.int32)
        _link_children(self._parent, self._first_child, self._next_sibling, self._prev_sibling)
        # parent[i] < i: memory order is an evaluation order
        self._order = np.arange(n, dtype=np.int32)
        self._rank = np.arange(n, dtype=np.int32)
        self._order_len = n
        self._holes = 0
        self._names = names
        self._index = None if names is None else {s: i for i, s in enumerate(names)}

    # ------------------------------------------------------------ state
    def update_world(self, body_slot=_NO_BODIES, omega_body=_NO_SPIN):
        """Compute every node's world state into `self.world_state` (no allocation) and return it.
        Nodes with body_slot[i] = b >= 0 (int64, (N,)) hold their angular velocity in their own
        axes, omega_body[b] ((D, 3) float64): their local omega is derived from it on the way
        (`world_from_local`) and written into `self.local`."""
        world_from_local(self._order[: self._order_len], self._parent, body_slot, omega_body,
                          *self.local._arrays(), *self.world_state._arrays())
        return self.world_state

    def world_pass(self, body_slot=_NO_BODIES, omega_body=_NO_SPIN):
        """`update_world(body_slot, omega_body)` bound to this topology's arrays
        (physics.core.compiled.bind; it returns nothing: the world is then `world_state`). Valid until
        the next `reparent`, `add` or `remove`, which may move the pass's order or the states'
        buffers to new arrays or change their length."""
        return bind(world_from_local, *self.world_pass_arguments(body_slot, omega_body))

    def world_pass_arguments(self, body_slot=_NO_BODIES, omega_body=_NO_SPIN, through=None):
        """`world_pass`'s arguments as one tuple, for a kernel that runs the pass itself between
        passes of its own (`world_from_local(*arguments)`); valid as long as `world_pass`. `through`
        (N,) bool, or None (every node): the pass over those nodes alone, in this order, for passes
        whose readers need no other node's world state before the next whole pass (the moving bodies
        and their ancestors: every parent of one of them is then among them)."""
        order = self._order[: self._order_len]
        if through is not None:
            order = np.ascontiguousarray(order[(order >= 0) & np.asarray(through, bool)[np.maximum(order, 0)]])
        return (order, self._parent, body_slot, omega_body, *self.local._arrays(), *self.world_state._arrays())

    def world(self):
        """The world `physics.DynamicTransform` of every node, batch shape (N,), after `update_world`.

        A view, not a copy: its arrays are read-only views of `self.world_state`, valid until the
        next update (`update_world`, `world`, a topology change); copy what must outlive it. The
        skew forms `angular_velocity = hat(omega_world)` and `angular_acceleration` are built when
        first read; `omega_vector()` and `alpha_vector()` return the stored vectors."""
        return _WorldView(self.update_world())

    def to_local(self, world, out=None):
        """Every node's local state from world states (a NodeState or DynamicTransform of N nodes).

        Written into `out` (default `self.local`) and returned; `world` is only read.
        """
        if not isinstance(world, NodeState):
            world = NodeState.from_dynamic_transform(world)
        out = self.local if out is None else out
        if len(world) != self._n or len(out) != self._n:
            raise ValueError(f"to_local needs states of {self._n} nodes, got world {len(world)}, out {len(out)}")
        if out is world:
            raise ValueError("to_local: out must not be the world state it reads")
        _local_from_world(self._order[: self._order_len], self._parent, *world._arrays(), *out._arrays())
        return out

    # ------------------------------------------------------------ topology queries
    def __len__(self):
        return self._n

    @property
    def parent(self):
        """(N,) int32, -1 = the world (read-only view; change it with `reparent`)."""
        view = self._parent[: self._n]
        view.flags.writeable = False
        return view

    @property
    def order(self):
        """The evaluation order: every node index once, each after its parent (a copy)."""
        live = self._order[: self._order_len]
        return live[live >= 0].copy()

    @property
    def names(self):
        return tuple(self._name_table()[0])

    def index(self, name):
        """The index of the node called `name` (ValueError if there is none)."""
        index = self._name_table()[1]
        if name not in index:
            raise ValueError(f"unknown node name {name!r}")
        return index[name]

    def children(self, node):
        """Indices of the children of `node` (a name or an index), in link order."""
        out = []
        c = self._first_child[self._resolve(node)]
        while c >= 0:
            out.append(c)
            c = self._next_sibling[c]
        return np.array(out, dtype=np.int64)

    def nbytes(self):
        """Bytes held by the state and topology arrays (local, world, links, order), without names."""
        arrays = [*self.local._buffers.values(), *self.world_state._buffers.values(), self._parent,
                  self._first_child, self._next_sibling, self._prev_sibling, self._order, self._rank]
        return sum(a.nbytes for a in arrays)

    # ------------------------------------------------------------ topology changes
    def add(self, name, parent=None, local=None):
        """Append a node `name` under `parent` (a name, an index, or None for the world); return its index.

        `local`: a DynamicTransform of batch shape () or a one-node NodeState; default at rest at the
        parent's origin. Amortized O(1): the node goes last in memory and in the evaluation order.
        """
        names, index = self._name_table()
        name = str(name)
        if name in index:
            raise ValueError(f"duplicate node name {name!r}")
        p = _NONE if parent is None else self._resolve(parent)
        row = NodeState(1) if local is None else _one_node_state(local, name)
        _check_scale(row.scale, [name])

        i = self._n
        if i + 1 >= 2**31 - 1:
            raise ValueError(f"cannot add {name!r}: at most 2**31 - 2 nodes (int32 links)")
        self._reserve(i + 1, self._order_len + 1)
        self._n = i + 1
        self.local._resize(i + 1)
        self.world_state._resize(i + 1)
        self.local._set_row(i, row, 0)
        self.world_state._set_row(i, row, 0)
        self._parent[i] = p
        self._first_child[i] = _NONE
        self._link(i, p)
        self._order[self._order_len] = i
        self._rank[i] = self._order_len
        self._order_len += 1
        names.append(name)
        index[name] = i
        return i

    def remove(self, node):
        """Remove a leaf node (a name or an index) in O(1): the last node moves into its slot.

        The moved node's index changes (its name does not); every other index is kept. A node with
        children raises ValueError: remove or reparent them first.
        """
        names, index = self._name_table()
        k = self._resolve(node)
        if self._first_child[k] >= 0:
            kids = [names[c] for c in self.children(k)[:5]]
            raise ValueError(f"cannot remove {names[k]!r}: it has children {kids}; remove or reparent them first")
        self._unlink(k)
        self._order[self._rank[k]] = _NONE
        self._holes += 1
        last = self._n - 1
        if k != last:
            self._move_node(last, k)
        removed = names[k]
        del index[removed]
        if k != last:
            names[k] = names[last]
            index[names[k]] = k
        names.pop()
        self._n = last
        self.local._resize(last)
        self.world_state._resize(last)
        if self._holes > max(16, self._order_len // 2):
            self._compact_order()

    def reparent(self, node, new_parent, keep="world"):
        """Move `node` (and its subtree) under `new_parent` (a name, an index, or None = world).

        keep="world": the node's world state (pose, velocity, acceleration, ω, α) is unchanged; its
        local state becomes A1 = A2'⁻¹ A3 under the new parent (`_local_from_world`), so its subtree
        keeps its world state too. keep="local": the local state is kept and the subtree moves with
        the new parent. Cost O(depth + subtree size). A cycle (new parent inside the node's subtree)
        raises ValueError and leaves the hierarchy unchanged.
        """
        if keep not in ("world", "local"):
            raise ValueError(f"keep must be 'world' or 'local', got {keep!r}")
        k = self._resolve(node)
        p = _NONE if new_parent is None else self._resolve(new_parent)
        a = p
        while a >= 0:
            if a == k:
                raise ValueError(f"cannot reparent {self._label(k)} under {self._label(p)}: "
                                 f"{self._label(p)} is in its subtree (a cycle)")
            a = self._parent[a]
        if keep == "world":
            # fresh world states of the node and of the new parent's chain: O(depth)
            path = np.array(self._ancestors(k)[::-1] + self._ancestors(p)[::-1], dtype=np.int32)
            world_from_local(path, self._parent, _NO_BODIES, _NO_SPIN, *self.local._arrays(), *self.world_state._arrays())
        self._unlink(k)
        self._parent[k] = p
        self._link(k, p)
        if keep == "world":
            _local_from_world(np.array([k], np.int32), self._parent,
                              *self.world_state._arrays(), *self.local._arrays())
        if p >= 0 and self._rank[p] > self._rank[k]:
            self._move_subtree_last(k)

    # ------------------------------------------------------------ internals
    def _name_table(self):
        if self._names is None:
            self._names = [f"node{i}" for i in range(self._n)]
            self._index = {s: i for i, s in enumerate(self._names)}
        return self._names, self._index

    def _resolve(self, node):
        if isinstance(node, (int, np.integer)) and not isinstance(node, bool):
            if not 0 <= node < self._n:
                raise ValueError(f"node index {node} out of range for {self._n} nodes")
            return int(node)
        return self.index(node)

    def _label(self, i):
        return repr(self._names[i]) if self._names is not None else f"node {i}"

    def _ancestors(self, i):
        """[i, parent(i), ..., root]; [] for the world."""
        out = []
        while i >= 0:
            out.append(int(i))
            i = self._parent[i]
        return out

    def _reserve(self, n, order_len):
        capacity = self._parent.shape[0]
        if n > capacity:
            capacity = max(n, capacity + capacity // 2 + 8)
            self.local._reserve(capacity)
            self.world_state._reserve(capacity)
            for attr in ("_parent", "_first_child", "_next_sibling", "_prev_sibling", "_rank"):
                old = getattr(self, attr)
                new = np.empty(capacity, np.int32)
                new[: old.shape[0]] = old
                setattr(self, attr, new)
        if order_len > self._order.shape[0]:
            new = np.empty(max(order_len, capacity, self._order.shape[0] * 3 // 2 + 8), np.int32)
            new[: self._order_len] = self._order[: self._order_len]
            self._order = new

    def _link(self, i, p):
        """Push i at the front of p's child list."""
        self._prev_sibling[i] = _NONE
        self._next_sibling[i] = _NONE
        if p >= 0:
            head = self._first_child[p]
            self._next_sibling[i] = head
            if head >= 0:
                self._prev_sibling[head] = i
            self._first_child[p] = i

    def _unlink(self, i):
        prev, nxt = self._prev_sibling[i], self._next_sibling[i]
        if prev >= 0:
            self._next_sibling[prev] = nxt
        elif self._parent[i] >= 0:
            self._first_child[self._parent[i]] = nxt
        if nxt >= 0:
            self._prev_sibling[nxt] = prev

    def _move_node(self, src, dst):
        """Move node `src` into the free slot `dst` and repoint every link to it (cw::list erase)."""
        self.local._move_row(src, dst)
        self.world_state._move_row(src, dst)
        p, prev, nxt = self._parent[src], self._prev_sibling[src], self._next_sibling[src]
        self._parent[dst], self._prev_sibling[dst], self._next_sibling[dst] = p, prev, nxt
        if prev >= 0:
            self._next_sibling[prev] = dst
        elif p >= 0:
            self._first_child[p] = dst
        if nxt >= 0:
            self._prev_sibling[nxt] = dst
        c = self._first_child[dst] = self._first_child[src]
        while c >= 0:
            self._parent[c] = dst
            c = self._next_sibling[c]
        self._rank[dst] = self._rank[src]
        self._order[self._rank[dst]] = dst

    def _move_subtree_last(self, k):
        """Re-append k's subtree (pre-order) at the end of the evaluation order, leaving holes."""
        subtree = np.empty(self._n, np.int32)
        m = _subtree(k, self._first_child, self._next_sibling, self._parent, subtree)
        subtree = subtree[:m]
        self._reserve(self._n, self._order_len + m)
        self._order[self._rank[subtree]] = _NONE
        self._order[self._order_len: self._order_len + m] = subtree
        self._rank[subtree] = np.arange(self._order_len, self._order_len + m, dtype=np.int32)
        self._order_len += m
        self._holes += m
        if self._holes > max(16, self._order_len // 2):
            self._compact_order()

    def _compact_order(self):
        live = self._order[: self._order_len]
        live = live[live >= 0].copy()
        self._order[: live.shape[0]] = live
        self._rank[live] = np.arange(live.shape[0], dtype=np.int32)
        self._order_len = live.shape[0]
        self._holes = 0


class _WorldView(DynamicTransform):
    """A `DynamicTransform` over the arrays of a `NodeState` (read-only views, no copies), whose
    skew forms are built on first read (hat of the stored 3-vectors, cached)."""

    __slots__ = ("_vectors", "_skews")

    def __init__(self, state):  # no DynamicTransform.__init__: the hierarchy's state is known good
        translation, rotation, scale, velocity, acceleration, omega, alpha = (_read_only(x) for x in state.views())
        self.transform = Transform(translation, rotation, scale, check=False)
        self.velocity, self.acceleration = velocity, acceleration
        self._vectors, self._skews = (omega, alpha), [None, None]

    def _skew(self, k):
        if self._skews[k] is None:
            self._skews[k] = hat(self._vectors[k])
        return self._skews[k]

    angular_velocity = property(lambda self: self._skew(0), doc="(N, 3, 3) hat(omega_world), built on first read")
    angular_acceleration = property(lambda self: self._skew(1), doc="(N, 3, 3) hat(alpha_world), built on first read")

    def omega_vector(self):
        return self._vectors[0]

    def alpha_vector(self):
        return self._vectors[1]


def _read_only(array):
    view = array.view()
    view.flags.writeable = False
    return view


def _check_scale(scale, names):
    bad = np.flatnonzero(~(scale > 0) | ~np.isfinite(scale))
    if bad.size:
        i = int(bad[0])
        label = repr(names[i]) if names is not None else f"node {i}"
        raise ValueError(f"{label}: scale must be positive and finite, got {scale[i]}")


def _one_node_state(local, name):
    state = local if isinstance(local, NodeState) else NodeState.from_dynamic_transform(local)
    if len(state) != 1:
        raise ValueError(f"add {name!r}: local must describe one node, got {len(state)}")
    return state
