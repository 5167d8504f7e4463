"""Shapes (physics.model.shapes): world poses and bounding boxes against independent constructions —
corners and sampled surface points for the boxes, points of the node-frame plane for planes."""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physics.math.rotation import matrix_from_quaternion, random_quaternion
from physics.model.shapes import ShapeSet, aabbs, world_shapes

RIM_SAMPLES = 4096


def surface_points(shape, centre, rotation, scale):
    """World points of the shape's surface, built from its definition (not from the AABB formulas):
    box corners; sphere/capsule: points of the core ± r along the world axes; cylinder: its rims."""
    if shape["type"] == "box":
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        local = signs * 0.5 * np.asarray(shape["size"])
        return centre + scale * local @ rotation.T
    if shape["type"] == "cylinder":
        angle = np.linspace(0, 2 * np.pi, RIM_SAMPLES, endpoint=False)
        h = 0.5 * shape["height"]
        rim = np.stack([shape["radius"] * np.cos(angle), np.zeros_like(angle), shape["radius"] * np.sin(angle)], axis=1)
        local = np.concatenate([rim + [0, h, 0], rim - [0, h, 0]])
        return centre + scale * local @ rotation.T
    h = 0.5 * shape.get("height", 0.0)
    core = centre + scale * np.array([[0, -h, 0], [0, h, 0]]) @ rotation.T
    ball = scale * shape["radius"] * np.concatenate([np.eye(3), -np.eye(3)])
    return (core[:, None] + ball[None]).reshape(-1, 3)


SHAPES = [{"type": "box", "size": [0.4, 1.0, 2.2]}, {"type": "sphere", "radius": 0.3},
          {"type": "capsule", "radius": 0.2, "height": 1.1}, {"type": "cylinder", "radius": 0.35, "height": 0.2}]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_aabbs_bound_the_surface_tightly(seed):
    """Every finite kind, random poses and scales, several shapes on one node: the box holds every
    surface point and each face touches one. Box, sphere, capsule extremes are among the points
    (tolerance 1e-12: rounding of O(1) sums); the cylinder's rim is sampled every 2 pi / 4096, so the
    true extreme can lie r s (1 - cos(pi / 4096)) < 3e-7 r s beyond the samples."""
    rng = np.random.default_rng(seed)
    nodes = [list(SHAPES), SHAPES[3], SHAPES[0], None]
    n = len(nodes)
    t = rng.normal(size=(n, 3)) * 3
    r = matrix_from_quaternion(random_quaternion(rng, n))
    s = rng.uniform(0.3, 3.0, n)
    shapes = ShapeSet.from_nodes(nodes)
    lo, hi = aabbs(shapes, SimpleNamespace(translation=t, rotation=r, scale=s))
    for k, (node, shape) in enumerate((i, sh) for i, e in enumerate(nodes) if e for sh in (e if isinstance(e, list) else [e])):
        p = surface_points(shape, t[node], r[node], s[node])
        slack = 1e-12 if shape["type"] != "cylinder" else 3e-7 * shape["radius"] * s[node] + 1e-12
        assert np.all(p >= lo[k] - 1e-12) and np.all(p <= hi[k] + 1e-12)
        np.testing.assert_allclose(p.min(axis=0), lo[k], atol=slack, rtol=0)
        np.testing.assert_allclose(p.max(axis=0), hi[k], atol=slack, rtol=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_plane_in_the_world(seed):
    """Points x of the node-frame plane n . x = offset map by x_w = R s x + T onto the world plane
    n_w . x_w = offset_w, and the centre offset_w n_w lies on it (tolerance 1e-11: |x| up to ~10)."""
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=3)
    offset = rng.uniform(-2, 2)
    shapes = ShapeSet.from_nodes([None, {"type": "plane", "normal": normal.tolist(), "offset": offset}])
    t, r, s = rng.normal(size=(2, 3)), matrix_from_quaternion(random_quaternion(rng, 2)), rng.uniform(0.3, 3.0, 2)
    centre, rotation, params = world_shapes(shapes, SimpleNamespace(translation=t, rotation=r, scale=s))
    n_local = normal / np.linalg.norm(normal)
    in_plane = np.linalg.svd(n_local[None])[2][1:]       # two unit vectors perpendicular to n
    x = (offset / np.linalg.norm(normal)) * n_local + rng.normal(size=(5, 2)) @ in_plane
    x_world = t[1] + s[1] * x @ r[1].T
    n_world, offset_world = params[0, :3], params[0, 3]
    np.testing.assert_allclose(x_world @ n_world, offset_world, atol=1e-11)
    np.testing.assert_allclose(centre[0], offset_world * n_world, atol=1e-12)
    np.testing.assert_allclose(rotation[0], r[1], atol=0)


def test_axis_aligned_plane_bounds_one_side_and_scalar_scale():
    """An axis-aligned ground bounds y from above at its offset (scaled by the node's scale, which
    may be given as one number for all nodes); a tilted plane's box is all of space."""
    shapes = ShapeSet.from_nodes([{"type": "plane", "normal": [0, 2, 0], "offset": 1.0},
                                  {"type": "plane", "normal": [0, 0, -1], "offset": 0.5},
                                  {"type": "plane", "normal": [1, 1, 0], "offset": 0.0}])
    w = SimpleNamespace(translation=np.zeros((3, 3)), rotation=np.broadcast_to(np.eye(3), (3, 3, 3)), scale=2.0)
    lo, hi = aabbs(shapes, w)
    assert hi[0, 1] == 1.0 and np.isinf(hi[0, [0, 2]]).all() and np.isneginf(lo[0]).all()
    assert lo[1, 2] == -1.0 and np.isinf(lo[1, :2]).all() and np.isposinf(hi[1]).all()
    assert np.isneginf(lo[2]).all() and np.isposinf(hi[2]).all()


def test_bad_world():
    shapes = ShapeSet.from_nodes([{"type": "sphere", "radius": 1.0}, {"type": "sphere", "radius": 1.0}])
    with pytest.raises(ValueError, match="world: got 1 nodes"):
        aabbs(shapes, SimpleNamespace(translation=np.zeros((1, 3)), rotation=np.eye(3)[None], scale=np.ones(1)))
    with pytest.raises(ValueError, match=r"scale \(3,\)"):
        aabbs(shapes, SimpleNamespace(translation=np.zeros((2, 3)), rotation=np.zeros((2, 3, 3)), scale=np.ones(3)))
    with pytest.raises(ValueError, match="expected an object with translation"):
        world_shapes(shapes, object())
