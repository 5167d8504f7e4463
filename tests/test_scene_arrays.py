"""scene_from_arrays: a generated scene as arrays is the same Scene, bit for bit, as the same scene
written as [[node]] tables (scene_from_dict), and bad values are refused naming the node, the key
and the value, as the file loader names them."""
import numpy as np
import pytest

from physics.io.scene import SceneError, scene_from_arrays, scene_from_dict
from physics.pipeline.simulation import Simulation

ARRAYS = ("parent", "translation", "rotation", "scale", "velocity", "angular_velocity", "acceleration",
          "angular_acceleration", "mass", "inertia_body", "applied_force", "applied_torque", "colors",
          "friction", "restitution")


def generated(n=60, seed=3):
    """A mixed scene: a fixed ground box, kinematic and dynamic nodes, children of earlier nodes,
    scales, boxes, spheres, capsules, cylinders, explicit inertias, per-node and shared values."""
    rng = np.random.default_rng(seed)
    parent = np.array([-1] + [int(rng.integers(-1, i)) if rng.random() < 0.4 else -1 for i in range(1, n)])
    motion = np.array(["fixed"] + list(rng.choice(["dynamic", "kinematic", "fixed"], n - 1, p=[0.7, 0.15, 0.15])))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    shapes = [{"type": "box", "size": [4.0, 0.2, 4.0]}] + [
        [{"type": "box", "size": [0.2, 0.3, 0.4]}, {"type": "sphere", "radius": 0.1},
         {"type": "capsule", "radius": 0.05, "height": 0.2}, {"type": "cylinder", "radius": 0.1, "height": 0.3},
         None][int(rng.integers(5))] for _ in range(n - 1)]
    moving = motion != "fixed"
    arrays = dict(
        name=[f"n{i}" for i in range(n)], parent=parent, motion=motion,
        translation=rng.uniform(-3, 3, (n, 3)), rotation=q, scale=rng.uniform(0.5, 2.0, n),
        # np.where, not a product with the mask: -x * 0 is -0.0, which a file that leaves the key out is not
        velocity=np.where(moving[:, None], rng.normal(size=(n, 3)), 0.0),
        angular_velocity=np.where(moving[:, None], rng.normal(size=(n, 3)), 0.0),
        acceleration=np.where((motion == "kinematic")[:, None], rng.normal(size=(n, 3)), 0.0),
        mass=rng.uniform(0.5, 3.0, n), shape=shapes, color=rng.uniform(0, 1, (n, 3)),
        friction=rng.uniform(0, 1, n), restitution=0.2,
        applied_force=np.where((motion == "dynamic")[:, None], rng.normal(size=(n, 3)), 0.0))
    return arrays


def as_tables(arrays):
    """The same scene as [[node]] tables: only the keys a file would give its node."""
    n = len(arrays["name"])
    tables = []
    for i in range(n):
        motion = arrays["motion"][i]
        t = {"name": arrays["name"][i], "motion": str(motion), "translation": arrays["translation"][i].tolist(),
             "rotation": arrays["rotation"][i].tolist(), "scale": float(arrays["scale"][i]),
             "color": arrays["color"][i].tolist(), "friction": float(arrays["friction"][i]),
             "restitution": arrays["restitution"]}
        if arrays["parent"][i] >= 0:
            t["parent"] = arrays["name"][arrays["parent"][i]]
        if motion != "fixed":
            t["velocity"] = arrays["velocity"][i].tolist()
            t["angular_velocity"] = arrays["angular_velocity"][i].tolist()
        if motion == "kinematic":
            t["acceleration"] = arrays["acceleration"][i].tolist()
        if motion == "dynamic":
            t["mass"] = float(arrays["mass"][i])
            t["applied_force"] = arrays["applied_force"][i].tolist()
        if arrays["shape"][i] is not None:
            t["shape"] = arrays["shape"][i]
        tables.append(t)
    return {"world": {"gravity": [0.0, -9.81, 0.0]}, "node": tables}


def test_the_same_scene_as_its_tables_bit_for_bit():
    arrays = generated()
    a = scene_from_arrays(arrays, world={"gravity": [0.0, -9.81, 0.0]}, title="mixed", path="mixed.gen")
    b = scene_from_dict({"title": "mixed", **as_tables(arrays)}, path="mixed.gen")   # (a snapshot names its scene)
    assert a.names == b.names and list(a.motion) == list(b.motion) and a.shapes == b.shapes
    assert a.world.keys() == b.world.keys() and np.array_equal(a.world["gravity"], b.world["gravity"])
    for key in ARRAYS:
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)   # exact: the same arithmetic
    sims = [Simulation(scene) for scene in (a, b)]
    for sim in sims:
        sim.step(20)
    assert sims[0].state_hash() == sims[1].state_hash()


def test_explicit_inertias_and_one_value_for_every_node():
    n = 1000
    scene = scene_from_arrays({"translation": np.arange(3 * n, dtype=float).reshape(n, 3) * 1e-3,
                               "motion": "dynamic", "mass": 2.0, "inertia": [1.0, 2.0, 2.5],
                               "shape": {"type": "sphere", "radius": 0.1}})
    assert len(scene.names) == n and scene.names[7] == "node_7"
    np.testing.assert_array_equal(scene.inertia_body, np.tile([1.0, 2.0, 2.5], (n, 1)))
    np.testing.assert_array_equal(scene.mass, np.full(n, 2.0))
    assert all(shape is scene.shapes[0] for shape in scene.shapes)    # one table, checked once, shared


@pytest.mark.parametrize("change, node, key, reason", [
    (lambda a: a["translation"].__setitem__((5, 1), np.nan), "n5", "translation", "expected finite numbers"),
    (lambda a: a["translation"].__setitem__((6, 0), 2e6), "n6", "translation", "expected numbers in [-1e+06, 1e+06]"),
    (lambda a: a["rotation"].__setitem__(7, [2.0, 0.0, 0.0, 0.0]), "n7", "rotation", "quaternion norm is 2"),
    (lambda a: a["mass"].__setitem__(8, -1.0), "n8", "mass", "expected a number in [1e-09, 1e+09]"),
    (lambda a: a["parent"].__setitem__(9, 9), "n9", "parent", "expected the index of an earlier node"),
    (lambda a: a["motion"].__setitem__(3, "floating"), "n3", "motion", "expected one of fixed, kinematic, dynamic"),
    (lambda a: a["name"].__setitem__(4, "n2"), "n2", "name", "duplicate name"),
    (lambda a: a["color"].__setitem__((10, 2), 1.5), "n10", "color", "expected numbers in [0, 1]"),
    (lambda a: a["shape"].__setitem__(11, {"type": "box", "size": [0.2, -1, 0.2]}), "n11", "shape.size", ""),
])
def test_bad_values_name_the_node_key_and_value(change, node, key, reason):
    arrays = generated()
    arrays["motion"][3:12] = "dynamic"      # every key above applies to these nodes
    arrays["acceleration"][3:12] = 0.0      # (a kinematic node's key)
    change(arrays)
    with pytest.raises(SceneError) as error:
        scene_from_arrays(arrays, path="heap.gen")
    assert error.value.file == "heap.gen" and error.value.node == node and error.value.key == key
    assert reason in error.value.reason


def test_values_a_node_s_motion_does_not_take():
    arrays = generated()
    fixed = int(np.flatnonzero(arrays["motion"] == "fixed")[1])
    arrays["velocity"][fixed] = [1.0, 0.0, 0.0]
    with pytest.raises(SceneError, match=f"node 'n{fixed}': key 'velocity'.*only a kinematic or dynamic node"):
        scene_from_arrays(arrays)


def test_an_impossible_inertia_is_refused():
    with pytest.raises(SceneError, match="node 'node_1': key 'inertia'.*I_k <= I_i \\+ I_j"):
        scene_from_arrays({"motion": "dynamic", "translation": np.zeros((3, 3)),
                           "inertia": [[1.0, 1.0, 1.0], [1.0, 1.0, 3.0], [1.0, 1.0, 1.0]]})
