"""Cross-check of the hierarchy dynamics against Pinocchio, an independent multibody library
(`DynamicTransform` composition and `Hierarchy.world()`).

Random trees of up to 500 nodes and depth up to 21 get random local states (T, R, v, a, ω, α; scale 1).
Our world states — composed node by node with `physics.DynamicTransform.__matmul__`, and by
`physics.Hierarchy(parent, local).world()` — must match Pinocchio's `forwardKinematics` with
velocities and accelerations on the same tree.

The same tree in Pinocchio: one free-flyer joint per node, joint placement = identity, so the
joint's motion relative to its parent joint is the node's local motion. Pinocchio's free-flyer
takes q = (T, quaternion x y z w), a velocity that is the body twist (expressed in the child
frame) and an acceleration that is the time derivative of that twist (S = identity, c = 0).
With our parent-frame local quantities (dR/dt = hat(ω) R, v = dT/dt, a = d²T/dt²):

    ν = Rᵀ v,                 w = Rᵀ ω                           (body twist, since Rᵀ Ṙ = hat(Rᵀ ω))
    ν̇ = Rᵀ (a − ω × v),       ẇ = Rᵀ α                           (Ṙᵀ = −Rᵀ hat(ω), ω × ω = 0)

so the spatial linear acceleration differs from the classical one by ω × v. Every root node's world
state equals its local state, so the roots of every tree check this conversion by themselves.
We compare, in the world frame: `data.oMi` (T, R), `getVelocity(..., LOCAL_WORLD_ALIGNED)`
(v of the origin, ω), `getClassicalAcceleration(..., LOCAL_WORLD_ALIGNED).linear` (classical a
of the origin) and `getAcceleration(..., LOCAL_WORLD_ALIGNED).angular` (α: the rotated derivative
of the body angular velocity, R d(Rᵀω)/dt = α − ω × ω = α).

Pinocchio's Data holds several nv × nv × nv tensors (second-order derivatives), so a model with a
free-flyer per node (nv = 6 N) cannot be built for 500 nodes (100 free-flyers already take 13 GB).
A node's world state depends only on its root-to-node path, so we build one chain of
MAX_DEPTH free-flyers (nv = 126, ~130 MB) and run one forward pass per root-to-leaf path, with the
path's local states in the chain's first joints. Pinocchio still composes every path on its own.

Scale: Pinocchio's SE(3) has no scale, so this check runs with scale = 1. Scaled trees are checked
against forward-mode time derivatives (`physics.math.dual`) of the composed world transforms in
tests/test_transform.py (`test_random_tree_world_dynamics_match_time_derivatives`,
`test_largest_deepest_tree`) — an independent reference that does include scale.
"""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st

from physics import DynamicTransform, Hierarchy, Transform

MAX_DEPTH = 21  # the acceptance check's deepest tree (a root has depth 1)
MAX_NODES = 500

# Both sides compute the same exact quantities in float64; they differ only by rounding. Values grow
# with depth (positions ~ depth, velocities ~ depth², accelerations ~ depth³ for O(1) local states)
# and each of the ≤ 21 levels adds a few ulp of those magnitudes: errors ~1e-13 relative to
# max(1, |value|) per node (measured below 1e-12), so 1e-9 (the bound we hold it to) has a wide margin.
RTOL = 1e-9

FRAME = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


# --- random trees and local states (no physics code involved) ------------------------------------

def random_tree(rng, size, chain_bias):
    """parent (N,) with parent[i] < i (-1 = world) and depth ≤ MAX_DEPTH; with probability
    `chain_bias` a node hangs below the previous node, which makes deep chains."""
    parent, depth = np.full(size, -1), np.ones(size, dtype=int)
    for i in range(1, size):
        if rng.random() < chain_bias and depth[i - 1] < MAX_DEPTH:
            p = i - 1
        else:
            open_ = np.flatnonzero(depth[:i] < MAX_DEPTH)
            p = int(rng.choice(np.append(open_, -1)))
        parent[i], depth[i] = p, (1 if p < 0 else depth[p] + 1)
    return parent, depth


def random_rotations(rng, n):
    """Haar-random rotations: QR of Gaussian matrices, signs fixed so that R has det +1."""
    q, r = np.linalg.qr(rng.standard_normal((n, 3, 3)))
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[:, None, :]
    q[:, :, 0] *= np.linalg.det(q)[:, None]
    return q


def skew(w):
    """(..., 3) -> (..., 3, 3) with skew(w) x = w × x."""
    z = np.zeros(w.shape[:-1])
    x, y, s = w[..., 0], w[..., 1], w[..., 2]
    return np.stack([np.stack([z, -s, y], -1), np.stack([s, z, -x], -1), np.stack([-y, x, z], -1)], -2)


def unskew(W):
    return np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], -1)


class Locals:
    """Random local states of N nodes, parent-frame quantities, scale 1 (O(1) magnitudes)."""

    def __init__(self, rng, n):
        self.translation = rng.standard_normal((n, 3))
        self.rotation = random_rotations(rng, n)
        self.velocity, self.acceleration, self.omega, self.alpha = rng.standard_normal((4, n, 3))

    def dynamic_transform(self, i=slice(None)):
        transform = Transform(self.translation[i], self.rotation[i], np.ones(self.translation[i].shape[:-1]))
        return DynamicTransform(transform, self.velocity[i], self.acceleration[i],
                                skew(self.omega[i]), skew(self.alpha[i]))

    def free_flyer(self):
        """Pinocchio free-flyer (q (N,7), v (N,6), a (N,6)) reproducing each local motion (module doc)."""
        q = np.stack([pin.SE3ToXYZQUAT(pin.SE3(R, T)) for R, T in zip(self.rotation, self.translation)])
        Rt = np.swapaxes(self.rotation, -1, -2)
        mv = lambda M, x: (M @ x[..., None])[..., 0]  # noqa: E731
        nu, w = mv(Rt, self.velocity), mv(Rt, self.omega)
        nu_dot = mv(Rt, self.acceleration - np.cross(self.omega, self.velocity))
        w_dot = mv(Rt, self.alpha)
        return q, np.concatenate([nu, w], -1), np.concatenate([nu_dot, w_dot], -1)


# --- Pinocchio's world states ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chain():
    """A chain of MAX_DEPTH free-flyer joints (joint k+1 under joint k), identity placements."""
    model = pin.Model()
    for k in range(MAX_DEPTH):
        model.addJoint(k, pin.JointModelFreeFlyer(), pin.SE3.Identity(), f"link{k}")
    return model, model.createData()


def pinocchio_world(chain, parent, locals_):
    """World (T, R, v, a, ω, α) of every node by Pinocchio: one forwardKinematics per root-to-leaf
    path, the path's nodes in the chain's first joints (each node gets its path's values)."""
    model, data = chain
    n = len(parent)
    q_node, v_node, a_node = locals_.free_flyer()
    q, v, a = pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv)
    out = {k: np.full((n, 3), np.nan) for k in ("translation", "velocity", "acceleration", "omega", "alpha")}
    out["rotation"] = np.full((n, 3, 3), np.nan)
    is_leaf = np.ones(n, bool)
    is_leaf[parent[parent >= 0]] = False
    for leaf in np.flatnonzero(is_leaf):
        path = [leaf]
        while parent[path[-1]] >= 0:
            path.append(parent[path[-1]])
        path = path[::-1]
        d = len(path)
        q[: 7 * d], v[: 6 * d], a[: 6 * d] = q_node[path].ravel(), v_node[path].ravel(), a_node[path].ravel()
        pin.forwardKinematics(model, data, q, v, a)
        for k, node in enumerate(path):
            joint = k + 1
            velocity = pin.getVelocity(model, data, joint, FRAME)
            out["translation"][node] = data.oMi[joint].translation
            out["rotation"][node] = data.oMi[joint].rotation
            out["velocity"][node] = velocity.linear
            out["omega"][node] = velocity.angular
            out["acceleration"][node] = pin.getClassicalAcceleration(model, data, joint, FRAME).linear
            out["alpha"][node] = pin.getAcceleration(model, data, joint, FRAME).angular
    return out


# --- comparison ------------------------------------------------------------------------------------

def as_arrays(world: DynamicTransform):
    return {"translation": world.transform.translation, "rotation": world.transform.rotation,
            "velocity": world.velocity, "acceleration": world.acceleration,
            "omega": unskew(world.angular_velocity), "alpha": unskew(world.angular_acceleration)}


def node_error(got, expected):
    """Per node: max |got - expected| / max(1, max |expected|) (relative for large values,
    absolute near zero), reduced over the node's components."""
    axes = tuple(range(1, expected.ndim))
    return np.abs(got - expected).max(axis=axes) / np.maximum(1.0, np.abs(expected).max(axis=axes))


def assert_matches(ours, theirs, what):
    for name, expected in theirs.items():
        assert not np.isnan(expected).any(), f"{name}: Pinocchio left a node unvisited"
        err = node_error(np.asarray(ours[name]), expected)
        worst = int(np.argmax(err))
        assert err[worst] <= RTOL, (f"{what}, {name}: node {worst} relative error {err[worst]:.3g} > {RTOL}: "
                                    f"ours {ours[name][worst]}, Pinocchio {expected[worst]}")
    return max(node_error(np.asarray(ours[k]), v).max() for k, v in theirs.items())


def composed_node_by_node(parent, locals_):
    """World DynamicTransforms with the public `@`, one node at a time (parents come first)."""
    world = []
    for i, p in enumerate(parent):
        child = locals_.dynamic_transform(i)
        world.append(child if p < 0 else world[p] @ child)
    fields = {"translation": [], "rotation": [], "velocity": [], "acceleration": [], "omega": [], "alpha": []}
    for w in world:
        for name, value in as_arrays(w).items():
            fields[name].append(value)
    return {name: np.stack(values) for name, values in fields.items()}


def check(chain, seed, size, chain_bias):
    rng = np.random.default_rng(seed)
    parent, depth = random_tree(rng, size, chain_bias)
    locals_ = Locals(rng, size)
    theirs = pinocchio_world(chain, parent, locals_)
    err_at = assert_matches(composed_node_by_node(parent, locals_), theirs, "DynamicTransform @")
    world = Hierarchy(parent, locals_.dynamic_transform()).world()
    err_world = assert_matches(as_arrays(world), theirs, "Hierarchy.world()")
    return int(depth.max()), max(err_at, err_world)


# --- tests -------------------------------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, MAX_NODES), chain_bias=st.floats(0.0, 1.0))
def test_random_trees_match_pinocchio(chain, seed, size, chain_bias):
    check(chain, seed, size, chain_bias)


@pytest.mark.parametrize("seed", [0, 1])
def test_largest_deepest_tree_matches_pinocchio(chain, seed):
    # The acceptance check's extreme, always run: 500 nodes reaching depth 21.
    depth, err = check(chain, seed, MAX_NODES, 0.9)
    assert depth == MAX_DEPTH
    # The rounding estimate behind RTOL: the measured error is far below it.
    assert err < 1e-12, f"worst relative error {err:.3g}: rounding grew more than 21 levels explain"


def test_single_root_is_its_local_state(chain):
    # A root's world state is its local state: Pinocchio must return our inputs, which pins the
    # free-flyer conversion (body twist, spatial vs classical acceleration) on its own.
    rng = np.random.default_rng(7)
    locals_ = Locals(rng, 1)
    theirs = pinocchio_world(chain, np.array([-1]), locals_)
    for name in ("translation", "rotation", "velocity", "acceleration", "omega", "alpha"):
        # a handful of float operations on O(1) numbers: 1e-14 is ~50 ulp
        np.testing.assert_allclose(theirs[name], getattr(locals_, name), rtol=0, atol=1e-14, err_msg=name)


def test_tree_generator_reaches_limits():
    # The generator produces the trees the check asks for: depth exactly 21 at the limit, parents below.
    parent, depth = random_tree(np.random.default_rng(0), MAX_NODES, 1.0)
    assert depth.max() == MAX_DEPTH and np.all(parent < np.arange(MAX_NODES))
