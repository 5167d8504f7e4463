"""Scene files: every class of bad input gives one SceneError naming file, node, key and value."""
import math
from pathlib import Path

import numpy as np
import pytest

from physics.math.rotation import matrix_from_quaternion
from physics.io.scene import SceneError, load_scene
from physics.core.settings import Settings

GOOD = """
title = "t"
[world]
gravity = [0.0, -9.81, 0.0]
dt = 0.01
integrator = "rk4"
gyroscopic = "explicit"
rotation_update = "magnus3"
exponential = "truncated"
counteract = false
substeps = 2

[[node]]
name = "child"
parent = "root"
motion = "dynamic"
translation = [1.0, 2.0, 3.0]
rotation = [1.0005, 0.0, 0.0, 0.0]
velocity = [0.1, 0.0, 0.0]
angular_velocity = [0.0, 0.5, 0.0]
mass = 2.0
shape = { type = "box", size = [1.0, 2.0, 3.0] }
color = [0.8, 0.2, 0.2]

[[node]]
name = "root"
motion = "kinematic"
scale = 2.0
acceleration = [0.0, 0.0, 1.0]
angular_acceleration = [0.0, 0.1, 0.0]

[[event]]
time = 0.5
node = "child"
impulse = [1.0, 0.0, 0.0]
point = [0.0, 1.0, 0.0]
"""


def write(tmp_path, text, name="scene.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_scene_loads_in_parent_order(tmp_path):
    scene = load_scene(write(tmp_path, GOOD))
    assert scene.names == ("root", "child")  # a parent named later in the file comes first
    assert scene.parent.tolist() == [-1, 0]
    # normalized quaternion: the file's 1.0005 is within the 1e-3 tolerance
    np.testing.assert_allclose(np.linalg.norm(scene.rotation, axis=1), 1.0, atol=1e-15)
    # box inertia m/12 (b²+c², a²+c², a²+b²) with lengths scaled by the world scale 2 (the parent's)
    np.testing.assert_allclose(scene.inertia_body[1], 2.0 / 12.0 * 4.0 * np.array([13.0, 10.0, 5.0]), rtol=1e-14)
    settings = scene.settings()
    assert (settings.integrator, settings.gyroscopic, settings.counteract, settings.substeps) == ("rk4", "explicit", False, 2)
    assert scene.events[0].node == 1 and scene.events[0].point_world.tolist() == [0.0, 1.0, 0.0]


def replace(old, new):
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


# (scene text, node, key, value fragment expected in the message)
BAD = {
    "unknown node key": (replace('mass = 2.0', 'mass = 2.0\nmas = 3'), "child", "mas", "3"),
    "unknown world key": (replace('dt = 0.01', 'dt = 0.01\nfoo = 1'), "[world]", "foo", "1"),
    "unknown top-level key": (replace('title = "t"', 'title = "t"\nbogus = 1'), None, "bogus", "1"),
    "unknown motion": (replace('motion = "dynamic"', 'motion = "floating"'), "child", "motion", "floating"),
    "unknown integrator": (replace('"rk4"', '"rk5"'), "[world]", "integrator", "rk5"),
    "unknown gyroscopic": (replace('"explicit"', '"sometimes"'), "[world]", "gyroscopic", "sometimes"),
    "unknown rotation update": (replace('"magnus3"', '"magnus4"'), "[world]", "rotation_update", "magnus4"),
    "unknown exponential": (replace('"truncated"', '"approx"'), "[world]", "exponential", "approx"),
    "unknown shape type": (replace('type = "box"', 'type = "torus"'), "child", "shape.type", "torus"),
    "wrong type": (replace('mass = 2.0', 'mass = "heavy"'), "child", "mass", "heavy"),
    "bool for number": (replace('mass = 2.0', 'mass = true'), "child", "mass", "True"),
    "wrong length": (replace('translation = [1.0, 2.0, 3.0]', 'translation = [1.0, 2.0]'), "child", "translation", "[1.0, 2.0]"),
    "string in vector": (replace('velocity = [0.1, 0.0, 0.0]', 'velocity = [0.1, "x", 0.0]'), "child", "velocity", "x"),
    "nan": (replace('velocity = [0.1, 0.0, 0.0]', 'velocity = [nan, 0.0, 0.0]'), "child", "velocity", "nan"),
    "inf": (replace('dt = 0.01', 'dt = inf'), "[world]", "dt", "inf"),
    "quaternion norm": (replace('rotation = [1.0005, 0.0, 0.0, 0.0]', 'rotation = [1.01, 0.0, 0.0, 0.0]'), "child", "rotation", "1.01"),
    "zero quaternion": (replace('rotation = [1.0005, 0.0, 0.0, 0.0]', 'rotation = [0.0, 0.0, 0.0, 0.0]'), "child", "rotation", "0.0"),
    "zero mass": (replace('mass = 2.0', 'mass = 0.0'), "child", "mass", "0.0"),
    "negative mass": (replace('mass = 2.0', 'mass = -1.0'), "child", "mass", "-1.0"),
    "zero scale": (replace('scale = 2.0', 'scale = 0.0'), "root", "scale", "0.0"),
    "negative inertia": (replace('mass = 2.0', 'mass = 2.0\ninertia = [1.0, -2.0, 3.0]'), "child", "inertia", "-2.0"),
    "unknown parent": (replace('parent = "root"', 'parent = "nobody"'), "child", "parent", "nobody"),
    "self parent": (replace('scale = 2.0', 'scale = 2.0\nparent = "root"'), "root", "parent", "root"),
    "cycle": (replace('scale = 2.0', 'scale = 2.0\nparent = "child"'), "child", "parent", "root"),
    "duplicate name": (replace('name = "root"', 'name = "child"'), "child", "name", "child"),
    "dynamic-only key on kinematic": (replace('scale = 2.0', 'scale = 2.0\nmass = 1.0'), "root", "mass", "1.0"),
    "kinematic-only key on dynamic": (replace('mass = 2.0', 'mass = 2.0\nacceleration = [0.0, 0.0, 0.0]'), "child", "acceleration", "0.0"),
    "negative dt": (replace('dt = 0.01', 'dt = -0.01'), "[world]", "dt", "-0.01"),
    "counteract not bool": (replace('counteract = false', 'counteract = "yes"'), "[world]", "counteract", "yes"),
    "substeps zero": (replace('substeps = 2', 'substeps = 0'), "[world]", "substeps", "0"),
    "color out of range": (replace('color = [0.8, 0.2, 0.2]', 'color = [1.8, 0.2, 0.2]'), "child", "color", "1.8"),
    "event unknown node": (replace('node = "child"\nimpulse', 'node = "ghost"\nimpulse'), "[[event]] at time 0.5", "node", "ghost"),
    "missing name": (replace('name = "root"\n', ''), "#2", "name", None),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_file_node_key_value(tmp_path, case):
    text, node, key, value = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    error = info.value
    message = str(error)
    assert str(path) in message and error.file == str(path)
    assert error.node == node
    assert error.key == key and repr(key) in message
    if value is not None:
        assert value in message, message


@pytest.mark.parametrize("case, table", [("negative dt", "table [world]"), ("event unknown node", "table [[event]] at time 0.5")])
def test_table_errors_name_the_table_not_a_node(tmp_path, case, table):
    """[world] and [[event]] are tables, not nodes: the message says so (file, key, value kept)."""
    text, node, key, value = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    message = str(info.value)
    assert table in message and "node '[" not in message, message
    assert str(path) in message and repr(key) in message and value in message


def test_toml_syntax_error(tmp_path):
    path = write(tmp_path, GOOD + "\n[[node]\nname = 'x'\n")
    with pytest.raises(SceneError, match="TOML syntax error") as info:
        load_scene(path)
    assert str(path) in str(info.value) and "line" in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(SceneError, match="cannot read"):
        load_scene(tmp_path / "absent.toml")


def test_scene_error_is_a_value_error():
    assert issubclass(SceneError, ValueError)


def test_shipped_scenes_load():
    from pathlib import Path
    scenes = sorted((Path(__file__).resolve().parent.parent / "assets" / "scenes").glob("*.toml"))
    assert len(scenes) >= 6
    for path in scenes:
        scene = load_scene(path)
        assert len(scene.names) >= 1
        assert all(shape is None or shape["type"] in ("box", "sphere", "cylinder", "capsule", "plane", "hull")
                   for shape in scene.shapes)


@pytest.mark.parametrize("name, bad", [("dt", 0.0), ("dt", math.nan), ("gravity", [0.0, 1.0]), ("integrator", "verlet"),
                                       ("substeps", 1.5), ("counteract", "maybe"), ("nonsense", 1)])
def test_settings_set_rejects_bad_values_and_keeps_the_old(name, bad):
    settings = Settings()
    before = repr(settings)
    with pytest.raises(ValueError, match=name) as info:
        settings.set(name, bad)
    assert repr(bad)[:3] in str(info.value)
    assert repr(settings) == before


def test_rotation_quaternion_is_applied_as_active_rotation(tmp_path):
    """90° about z: the child's x axis points along the parent's y (x_parent = R x_child)."""
    text = '[[node]]\nname = "a"\nrotation = [0.7071067811865476, 0.0, 0.0, 0.7071067811865476]\n'
    scene = load_scene(write(tmp_path, text))
    np.testing.assert_allclose(matrix_from_quaternion(scene.rotation[0]) @ [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], atol=1e-15)


JOINTED = """
[[node]]
name = "ground"
friction = 0.8
shape = { type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }
[[node]]
name = "bob"
motion = "dynamic"
translation = [1.0, 2.0, 0.0]
friction = 0.5
restitution = 0.5
shape = { type = "sphere", radius = 0.1 }
[[node]]
name = "door"
motion = "dynamic"
translation = [0.0, 1.0, 0.0]
shape = { type = "box", size = [1.0, 2.0, 0.1] }
[[joint]]
type = "rope"
b = "bob"
anchor = [0.0, 2.0, 0.0]
anchor_b = [1.0, 2.0, 0.0]
length = 1.5
[[joint]]
type = "hinge"
a = "ground"
b = "door"
anchor = [0.5, 1.0, 0.0]
axis = [0.0, 2.0, 0.0]
lower = -1.0
upper = 1.0
motor_speed = 0.5
motor_force = 10.0
[[joint]]
type = "distance"
a = "door"
b = "bob"
anchor = [0.0, 2.0, 0.0]
anchor_b = [1.0, 2.0, 0.0]
"""


def test_joints_and_materials_load(tmp_path):
    scene = load_scene(write(tmp_path, JOINTED))
    rope, hinge, distance = scene.joints
    assert (rope["type"], rope["a"], rope["b"], rope["length"]) == ("rope", -1, scene.names.index("bob"), 1.5)
    np.testing.assert_array_equal(hinge["axis"], [0.0, 1.0, 0.0])       # normalized on load
    assert (hinge["lower"], hinge["upper"], hinge["motor_speed"], hinge["motor_force"]) == (-1.0, 1.0, 0.5, 10.0)
    assert distance["length"] is None                                    # the anchors' distance, 1 m
    assert scene.friction.tolist() == [0.8, 0.5, 0.6]                    # 0.6: the default (Box2D's)
    assert scene.restitution.tolist() == [0.0, 0.5, 0.0]


def jointed(old, new):
    assert old in JOINTED, old
    return JOINTED.replace(old, new, 1)


JOINT_BAD = {
    "joint unknown node": (jointed('b = "door"', 'b = "window"'), "[[joint]] #2", "b", "window"),
    "joint unknown a": (jointed('a = "ground"', 'a = "sky"'), "[[joint]] #2", "a", "sky"),
    "joint unknown type": (jointed('type = "hinge"', 'type = "universal"'), "[[joint]] #2", "type", "universal"),
    "joint unknown key": (jointed('lower = -1.0', 'lower = -1.0\nspringiness = 3.0'), "[[joint]] #2", "springiness", "3.0"),
    "joint b not dynamic": (jointed('b = "door"', 'b = "ground"'), "[[joint]] #2", "b", "ground"),
    "joint same node": (jointed('a = "door"', 'a = "bob"'), "[[joint]] #3", "a", "bob"),
    "joint missing anchor": (jointed('anchor = [0.5, 1.0, 0.0]\n', ''), "[[joint]] #2", "anchor", None),
    "rope zero length": (jointed('length = 1.5', 'length = 0.0'), "[[joint]] #1", "length", "0.0"),
    "rope negative length": (jointed('length = 1.5', 'length = -2.0'), "[[joint]] #1", "length", "-2.0"),
    "rope without length": (jointed('length = 1.5\n', ''), "[[joint]] #1", "length", None),
    "distance coincident anchors": (JOINTED[:JOINTED.rindex("anchor_b")], "[[joint]] #3", "length", None),
    "hinge zero axis": (jointed('axis = [0.0, 2.0, 0.0]', 'axis = [0.0, 0.0, 0.0]'), "[[joint]] #2", "axis", "0.0"),
    "limits crossed": (jointed('upper = 1.0', 'upper = -2.0'), "[[joint]] #2", "lower", "-1.0"),
    "negative motor force": (jointed('motor_force = 10.0', 'motor_force = -1.0'), "[[joint]] #2", "motor_force", "-1.0"),
    "axis on a rope": (jointed('length = 1.5', 'length = 1.5\naxis = [1.0, 0.0, 0.0]'), "[[joint]] #1", "axis", "1.0"),
    "length on a hinge": (jointed('lower = -1.0', 'lower = -1.0\nlength = 2.0'), "[[joint]] #2", "length", "2.0"),
    "negative friction": (jointed('friction = 0.5', 'friction = -0.5'), "bob", "friction", "-0.5"),
    "restitution above one": (jointed('restitution = 0.5', 'restitution = 1.5'), "bob", "restitution", "1.5"),
    "shape group not int": (jointed('radius = 0.1 }', 'radius = 0.1, group = 1.5 }'), "bob", "shape.group", "1.5"),
    "collide_with_parent not bool": (jointed('radius = 0.1 }', 'radius = 0.1, collide_with_parent = 1 }'), "bob", "shape.collide_with_parent", "1"),
    "bad iterations": ('[world]\niterations = 0\n' + JOINTED, "[world]", "iterations", "0"),
    "bad sor": ('[world]\nsor = 2.0\n' + JOINTED, "[world]", "sor", "2.0"),
    "bad erp": ('[world]\nerp = 1.0\n' + JOINTED, "[world]", "erp", "1.0"),
    "bad cfm": ('[world]\ncfm = -1e-6\n' + JOINTED, "[world]", "cfm", "-1e-06"),
    "bad warm_start": ('[world]\nwarm_start = "maybe"\n' + JOINTED, "[world]", "warm_start", "maybe"),
}


@pytest.mark.parametrize("case", sorted(JOINT_BAD))
def test_bad_joint_material_filter_solver_input(tmp_path, case):
    text, node, key, value = JOINT_BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    error = info.value
    assert str(path) in str(error) and error.node == node and error.key == key and repr(key) in str(error)
    if value is not None:
        assert value in str(error), str(error)


SHIPPED = sorted((Path(__file__).resolve().parent.parent / "assets" / "scenes").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_scenes_start_without_interpenetration(path):
    """No two shapes that may collide overlap at load (the tank's crates once started inside its
    engine deck and were thrown off). 1e-9 m: touching surfaces meet up to round-off."""
    from physics.collision.broadphase import candidate_pairs, collision_filter
    from physics.collision.collision import contacts
    from physics.collision.manifold import ContactCache
    from physics.model.shapes import ShapeSet, aabbs
    from physics.pipeline.simulation import Simulation
    sim = Simulation.from_file(path)
    shapes = ShapeSet.from_nodes(sim.shapes)
    world = sim.world()
    lo, hi = aabbs(shapes, world)
    found = contacts(shapes, world, candidate_pairs(lo, hi, collision_filter(shapes, sim.parent, sim.motion)), ContactCache())
    deepest = int(np.argmax(found.depth)) if len(found.depth) else None
    assert deepest is None or found.depth[deepest] <= 1e-9, (
        sim.names[found.body_a[deepest]], sim.names[found.body_b[deepest]], found.depth[deepest])


def test_tank_cargo_rides_on_the_tank():
    """10 s of the tank: every loose body stays where it was loaded relative to its parent (hull or
    turret), within 0.3 m (the cargo creeps ~1 cm/s on the deck; the ball rolls in its tray, 0.5 m
    wide inside), and no lower than 1 cm under its start height (it rests on a deck; a ball that
    falls through the turret does so within a second)."""
    from physics.pipeline.simulation import Simulation
    sim = Simulation.from_file(Path(__file__).resolve().parent.parent / "assets" / "scenes" / "tank.toml")
    loose = np.flatnonzero(np.asarray(sim.motion) == "dynamic")
    names = np.asarray(sim.names)[loose]
    start = sim.local().transform.translation[loose]  # parent frame
    sim.step(600)
    end = sim.local().transform.translation[loose]
    moved = np.linalg.norm(end - start, axis=1)
    assert moved.max() < 0.3, dict(zip(names, moved))
    assert (end[:, 1] - start[:, 1]).min() > -0.01, dict(zip(names, end[:, 1] - start[:, 1]))


def test_a_shape_shared_by_many_nodes_is_checked_at_each_world_scale_and_names_the_first_node_at_fault():
    """The loader checks each distinct (shape, world scale) once and computes its inertia for all
    its nodes' masses in one call: the inertias are those of a node-by-node pass (bit for bit: the
    batch's rows are the one-mass call's), and where the same box, fine at scale 1, is too small
    under a parent scaled by 1e-6, the first node so placed is the one named."""
    from physics.model.rigid_body import inertia_from_shape
    from physics.io.scene import scene_from_dict
    box = {"type": "box", "size": [0.2, 0.3, 0.4]}
    nodes = [{"name": f"b{i}", "motion": "dynamic", "mass": 1.0 + i, "shape": dict(box)} for i in range(5)]
    scene = scene_from_dict({"node": nodes})
    for i in range(5):
        assert scene.inertia_body[i].tobytes() == inertia_from_shape(box, 1.0 + i).tobytes()
    tiny = [{"name": "small", "motion": "fixed", "scale": 1e-6}]
    tiny += [{"name": f"c{i}", "motion": "dynamic", "parent": "small", "shape": dict(box)} for i in range(3)]
    with pytest.raises(SceneError, match=r"node 'c0': key 'shape.size'.*world scale 1e-06"):
        scene_from_dict({"node": nodes + tiny})


def test_a_node_that_leaves_a_vector_out_gets_its_own_default():
    """Absent vectors share one read-only default array: the scene's arrays are built from them
    (copies), and changing one node's row leaves the others' as they were."""
    from physics.io.scene import scene_from_dict
    scene = scene_from_dict({"node": [{"name": "a", "motion": "dynamic", "shape": {"type": "sphere", "radius": 0.1}},
                                      {"name": "b", "motion": "dynamic", "shape": {"type": "sphere", "radius": 0.1}}]})
    scene.velocity[0] = 1.0
    assert scene.velocity[1].tolist() == [0.0, 0.0, 0.0]
    assert scene.rotation.flags.writeable and scene.colors.flags.writeable
