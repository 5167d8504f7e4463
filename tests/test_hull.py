"""Convex-hull shapes (physics.model.hull, the `hull` kind of physics.model.shapes and physics.collision.collision):
the support function against a brute-force maximum, a hull that is a box against the box, a hull
at rest on the ground, the importers' hulls against trimesh's, MuJoCo reading the exported mesh,
and the scene format's errors."""
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physics.collision.collision import contacts
from physics.collision.gjk_epa import gjk_epa, support, support_into
from physics.model.hull import HULL_VERTICES_MAX, convex_hull
from physics.math.rotation import matrix_from_quaternion, random_quaternion
from physics.io.scene import SceneError, load_scene, scene_from_text
from physics.model.shapes import BOX, CYLINDER, HULL, ShapeSet, hull_row, world_hulls

BOX_SIZE = np.array([1.0, 0.5, 0.6])
BOX_CORNERS = 0.5 * BOX_SIZE * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
GROUND = {"type": "plane", "normal": [0.0, 1.0, 0.0], "offset": 0.0}


def world(translations, rotations, scales=None):
    t = np.asarray(translations, float)
    return SimpleNamespace(translation=t, rotation=np.asarray(rotations, float),
                           scale=np.ones(len(t)) if scales is None else np.asarray(scales, float))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 200), st.floats(0.1, 10.0))
def test_support_is_the_brute_force_maximum(seed, count, scale):
    """h(d) = max_i d . x_i over the hull's world vertices x_i = c + s R v_i, for random point clouds
    (simplified above HULL_VERTICES_MAX), rotations, scales and directions. Both sides form the same
    dot products in another order: 1e-12 relative to |x| covers the rounding."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(count, 3)) * rng.uniform(0.05, 2.0, 3)
    hull = convex_hull(points)
    assert 4 <= len(hull.vertices) <= HULL_VERTICES_MAX
    shapes = ShapeSet.from_nodes([{"type": "hull", "vertices": hull.vertices.tolist()}])
    R = matrix_from_quaternion(random_quaternion(rng))
    c = rng.normal(size=3)
    row = world_hulls(shapes, world([c], [R], [scale]))[0]
    x = c + scale * hull.vertices @ R.T
    out = np.empty((1, 3))
    for d in rng.normal(size=(20, 3)):
        best = (x @ d).max()
        p = support(HULL, c, R, row, d)
        support_into(HULL, c, R, row, d, 1.0, out, 0)
        bound = 1e-12 * (np.abs(x).max() + 1.0) * np.linalg.norm(d)
        assert abs(p @ d - best) <= bound
        assert np.array_equal(out[0], p)                     # the two support functions agree bit for bit
        assert np.min(np.linalg.norm(x - p, axis=1)) <= 1e-12 * (np.abs(x).max() + 1.0)   # a vertex


def test_simplified_hull_lies_inside_and_within_its_error():
    """A cloud with hundreds of hull vertices keeps HULL_VERTICES_MAX of them, a subset of the exact
    hull's vertices, and every dropped vertex lies within `simplification_error` outside it."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(2000, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)      # on a sphere: every point a hull vertex
    hull = convex_hull(points)
    assert len(hull.vertices) == HULL_VERTICES_MAX
    assert all(any(np.array_equal(v, p) for p in points) for v in hull.vertices)
    outside = (points @ hull.planes[:, :3].T - hull.planes[:, 3]).max(axis=1)
    assert outside.max() <= hull.simplification_error + 1e-12
    assert 0 < hull.simplification_error < 0.2      # a 64-vertex hull of the unit sphere: about 0.1


def box_pose_cases(height):
    """Poses of the other shape above the box (or its hull) at the origin: face contacts, a random
    yaw and a tilt of a few degrees, its centre `height` up."""
    rng = np.random.default_rng(11)
    for _ in range(12):
        axis = np.array([0.0, 1.0, 0.0]) * rng.uniform(-np.pi, np.pi) + rng.normal(size=3) * 0.05
        angle = np.linalg.norm(axis)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]]) / angle
        R = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
        yield np.array([rng.uniform(-0.3, 0.3), height, rng.uniform(-0.2, 0.2)]), R


@pytest.mark.parametrize("other, height, normal_tolerance", [({"type": "box", "size": [3.0, 0.6, 3.0]}, 0.53, 1e-9),
                                                             ({"type": "cylinder", "radius": 0.35, "height": 0.7}, 0.5, 1e-4)])
def test_a_box_hull_collides_like_the_box(other, height, normal_tolerance):
    """The hull of a box's corners against a wide slab laid on it (a face contact the separating-axis
    test settles by far beyond its face and edge preferences) gives the box's deepest depth and its
    normal to 1e-9: EPA ends on a face of the two polytopes, exact up to rounding and its 1e-9 m
    tolerance. Against a cylinder (GJK/EPA for the box too) the depth agrees to 1e-9 and the normal
    to 1e-4: on the cylinder's curved rim EPA stops once a support point gains less than 1e-9 m,
    which leaves the normal free by up to sqrt(2 · 1e-9 m / r) = 7.6e-5 rad, and the box and its
    hull pick different corners among equals (a box face lies flat on the cap)."""
    hull = {"type": "hull", "vertices": BOX_CORNERS.tolist()}
    box = {"type": "box", "size": BOX_SIZE.tolist()}
    compared = 0
    for t, R in box_pose_cases(height):
        w = world([np.zeros(3), t], [np.eye(3), R])
        of_box = contacts(ShapeSet.from_nodes([box, other]), w, np.array([[0, 1]]))
        of_hull = contacts(ShapeSet.from_nodes([hull, other]), w, np.array([[0, 1]]))
        assert len(of_box.depth) > 0 and len(of_hull.depth) > 0
        deepest_box, deepest_hull = np.argmax(of_box.depth), np.argmax(of_hull.depth)
        assert abs(of_box.depth[deepest_box] - of_hull.depth[deepest_hull]) <= 1e-9
        assert np.allclose(of_box.normal_world[deepest_box], of_hull.normal_world[deepest_hull],
                           atol=normal_tolerance, rtol=0)
        compared += 1
    assert compared == 12


def test_a_box_hull_on_the_ground_touches_at_the_box_corners():
    """Resting on a plane, tilted by a few degrees and sunk 1 mm, the hull of a box keeps the box's
    contact points: the same corners (point, depth and normal to 1e-12: the same arithmetic on the
    same corners, in another order)."""
    hull = {"type": "hull", "vertices": BOX_CORNERS.tolist()}
    box = {"type": "box", "size": BOX_SIZE.tolist()}
    for tilt in (0.0, 0.02, 0.05):
        R = matrix_from_quaternion(np.array([np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0]))
        centre = [0.1, 0.25 - 0.001, -0.2]
        w = world([centre, [0, 0, 0]], [R, np.eye(3)])
        a = contacts(ShapeSet.from_nodes([box, GROUND]), w, np.array([[0, 1]]))
        b = contacts(ShapeSet.from_nodes([hull, GROUND]), w, np.array([[0, 1]]))
        order_a, order_b = np.lexsort(a.point_world.T), np.lexsort(b.point_world.T)
        assert len(a.depth) == len(b.depth) == (4 if tilt == 0.0 else 2)
        assert np.allclose(a.point_world[order_a], b.point_world[order_b], atol=1e-12, rtol=0)
        assert np.allclose(a.depth[order_a], b.depth[order_b], atol=1e-12, rtol=0)
        assert np.allclose(b.normal_world, [0.0, -1.0, 0.0], atol=0, rtol=0)


def test_hull_epa_against_box_epa():
    """GJK/EPA on the hull of a box and on the box itself, same poses: the same normal and depth to
    1e-9 (both polytopes, the same support points up to the choice among equals)."""
    rng = np.random.default_rng(5)
    row = hull_row(convex_hull(BOX_CORNERS))
    half = np.append(0.5 * BOX_SIZE, 0.0)
    other = np.array([0.3, 0.4, 0.0, 0.0])
    hits = 0
    for _ in range(30):
        Ra, Rb = (matrix_from_quaternion(random_quaternion(rng)) for _ in range(2))
        cb = rng.normal(size=3) * 0.4
        h1, n1, d1, _, _ = gjk_epa(BOX, np.zeros(3), Ra, half, CYLINDER, cb, Rb, other)
        h2, n2, d2, _, _ = gjk_epa(HULL, np.zeros(3), Ra, row, CYLINDER, cb, Rb, other)
        assert h1 == h2
        if h1:
            hits += 1
            assert abs(d1 - d2) <= 1e-9 and np.allclose(n1, n2, atol=1e-9, rtol=0)
    assert hits >= 10


ROCK = """
title = "a rock"
[world]
dt = 0.016666666666666666
sleep = false
[[node]]
name = "ground"
shape = { type = "plane", normal = [0, 1, 0], offset = 0 }
[[node]]
name = "rock"
motion = "dynamic"
mass = 2.0
translation = [0, 1.0, 0]
rotation = [0.92, 0.38, 0.1, 0]
shape = { type = "hull", vertices = VERTICES }
"""


@pytest.mark.parametrize("seed", [None, 7])
def test_a_hull_comes_to_rest_on_the_ground(seed):
    """A box hull, and an irregular rock (the hull of 40 random points), dropped tilted onto the
    ground: after 4 s the rock's position varies by less than 1e-6 m and its orientation by less
    than 1e-6 over the next 2 s (rest, not jitter; the solver's rows are rigid, so a body at rest
    holds still to rounding), and it lies on the ground: its lowest vertex within 1 mm of y = 0
    (the contact slop)."""
    from physics.pipeline.simulation import Simulation
    if seed is None:
        vertices = BOX_CORNERS
    else:
        vertices = np.random.default_rng(seed).normal(size=(40, 3)) * [0.4, 0.25, 0.3]
    text = ROCK.replace("VERTICES", str(np.round(vertices, 6).tolist()))
    sim = Simulation(scene_from_text(text))
    rock = list(sim.names).index("rock")
    sim.step(240)
    poses = []
    for _ in range(120):
        sim.step(1)
        w = sim.world().transform
        poses.append(np.concatenate([w.translation[rock], w.rotation[rock].ravel()]))
    poses = np.array(poses)
    assert np.ptp(poses, axis=0).max() < 1e-6
    w = sim.world().transform
    shape = sim.scene.shapes[rock]
    lowest = (w.translation[rock] + np.asarray(shape["vertices"]) @ w.rotation[rock].T)[:, 1].min()
    assert -1e-3 < lowest < 1e-3


def test_hull_mass_properties_of_a_box():
    """A dynamic node with a box hull and no explicit inertia gets the box's moments,
    m (b² + c², a² + c², a² + b²) / 12, to 1e-12 relative (trimesh's volume integrals)."""
    text = ROCK.replace("VERTICES", str(BOX_CORNERS.tolist()))
    scene = scene_from_text(text)
    a, b, c = BOX_SIZE
    expected = 2.0 / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    assert np.allclose(scene.inertia_body[1], expected, rtol=1e-12, atol=0)


def write_stl(path, mesh):
    mesh.export(path)
    return path


def urdf_with_mesh(folder, mesh_file):
    text = textwrap.dedent(f"""\
        <robot name="rocky">
          <link name="base">
            <inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
            <collision><origin xyz="0.1 0 0.2"/><geometry><mesh filename="{mesh_file}"/></geometry></collision>
          </link>
        </robot>""")
    path = folder / "rocky.urdf"
    path.write_text(text)
    return path


def test_urdf_mesh_collides_as_trimesh_convex_hull(tmp_path):
    """A URDF collision mesh becomes a hull shape whose vertices are trimesh's `convex_hull`
    vertices (as sets, to 1e-12: the same Qhull run on the same float32 corners), in the collision
    element's frame; a mesh whose hull has more than HULL_VERTICES_MAX vertices keeps a subset."""
    import warnings

    import trimesh

    import physics
    mesh = trimesh.creation.icosphere(subdivisions=1, radius=0.2)      # 42 vertices, all on its hull
    mesh.vertices += [0.05, -0.02, 0.03]
    write_stl(tmp_path / "rock.stl", mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = physics.load_urdf(urdf_with_mesh(tmp_path, "rock.stl"))
    hulls = [s for s in scene.shapes if s is not None and s["type"] == "hull"]
    assert len(hulls) == 1
    ours = np.array(hulls[0]["vertices"])
    theirs = np.asarray(trimesh.load(tmp_path / "rock.stl", force="mesh").convex_hull.vertices)
    assert ours.shape == theirs.shape
    assert np.allclose(ours[np.lexsort(ours.T)], theirs[np.lexsort(theirs.T)], atol=1e-12, rtol=0)

    big = trimesh.creation.icosphere(subdivisions=3, radius=0.2)          # 642 hull vertices
    write_stl(tmp_path / "big.stl", big)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = physics.load_urdf(urdf_with_mesh(tmp_path, "big.stl"))
    ours = np.array([s for s in scene.shapes if s is not None and s["type"] == "hull"][0]["vertices"])
    exact = np.asarray(trimesh.load(tmp_path / "big.stl", force="mesh").convex_hull.vertices)
    assert len(ours) == HULL_VERTICES_MAX
    assert all(np.min(np.linalg.norm(exact - v, axis=1)) <= 1e-12 for v in ours)


def test_to_mjcf_exports_a_hull_that_mujoco_places_where_ours_is():
    """physics.to_mjcf writes a hull as a mesh asset; MuJoCo re-centres it, and its vertices mapped
    by the geom's world pose land on ours (float32 storage in MuJoCo: 1e-6 m)."""
    mujoco = pytest.importorskip("mujoco")
    import physics
    vertices = np.random.default_rng(2).normal(size=(30, 3)) * 0.3
    text = ROCK.replace("VERTICES", str(np.round(vertices, 6).tolist()))
    scene = scene_from_text(text)
    model = mujoco.MjModel.from_xml_string(physics.to_mjcf(scene))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    geom = model.geom("rock").id
    mesh = model.geom_dataid[geom]
    start, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
    local = model.mesh_vert[start:start + count].astype(float)
    theirs = data.geom_xpos[geom] + local @ data.geom_xmat[geom].reshape(3, 3).T
    ours = scene.translation[1] + np.asarray(scene.shapes[1]["vertices"]) @ matrix_from_quaternion(scene.rotation[1]).T
    hull_theirs = convex_hull(theirs).vertices
    assert len(hull_theirs) == len(ours)
    for v in ours:
        assert np.min(np.linalg.norm(hull_theirs - v, axis=1)) < 1e-6


BAD = [
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0]] }', "shape.vertices", "4 to"),
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]] }', "shape.vertices", "no volume"),
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, nan]] }', "shape.vertices", "finite"),
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0], [0, 1, 0], [0, 0, 1]] }', "shape.vertices", "3"),
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], file = "x.stl" }', "shape.vertices", "not both"),
    ('{ type = "hull" }', "shape.vertices", "either"),
    ('{ type = "hull", file = "missing.stl" }', "shape.file", "not found"),
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], scale = [1, 1, 1] }', "shape.scale", "file"),
    ('{ type = "hull", vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], radius = 1 }', "shape.radius", "unknown"),
    ('{ type = "hull", vertices = [[0, 0, 0], [2e6, 0, 0], [0, 1, 0], [0, 0, 1]] }', "shape.vertices", "1e+06"),
]


@pytest.mark.parametrize("shape, key, words", BAD)
def test_bad_hull_input_names_file_node_and_key(tmp_path, shape, key, words):
    """Each bad hull table is one SceneError naming the file, the node and the key."""
    path = tmp_path / "bad.toml"
    path.write_text(f'[[node]]\nname = "rock"\nshape = {shape}\n')
    with pytest.raises(SceneError) as caught:
        load_scene(path)
    error = caught.value
    assert error.file == str(path) and error.node == "rock" and error.key == key
    assert words in str(error)


def test_hull_from_a_mesh_file_relative_to_the_scene(tmp_path):
    """`file` (relative to the scene) and `scale`: the hull of the file's scaled vertices."""
    import trimesh
    trimesh.creation.box(extents=[1.0, 2.0, 3.0]).export(tmp_path / "brick.stl")
    path = tmp_path / "brick.toml"
    path.write_text('[[node]]\nname = "brick"\nshape = { type = "hull", file = "brick.stl", scale = [2, 1, 0.5] }\n')
    vertices = np.array(load_scene(path).shapes[0]["vertices"])
    assert len(vertices) == 8
    assert np.allclose(np.sort(np.abs(vertices), axis=0), [[1.0, 1.0, 0.75]] * 8, atol=1e-12, rtol=0)


@pytest.mark.parametrize("case", ["zip", "dae zip", "obj faces", "obj mtllib fifo", "gltf buffer fifo", "stl count"])
def test_a_mesh_that_would_take_more_than_its_file_is_refused_before_trimesh_reads_it(tmp_path, case):
    """The smallest reproducers of what trimesh would read past the mesh file's own budget: a zip
    archive (unpacked before any size is known), an OBJ of more faces than MESH_FACES_MAX (counted
    by streaming its lines, here written as 'f 1 2 3' lines without vertices), an OBJ whose mtllib
    is a FIFO and a glTF whose buffer is one (both would block the read forever), and a binary STL
    whose header counts triangles the file does not hold, and a .dae that is a zip (pycollada
    unpacks the .dae inside: a 1 MB file of 2^30 zeros took 2.2 GB; here 2^26, refused by its
    first bytes whatever it holds). Each: one SceneError naming the file,
    within seconds and a few MB; the OBJ with a FIFO mtllib loads (materials are never opened)."""
    import os
    import time
    import tracemalloc
    import warnings
    import zipfile

    import trimesh

    import physics
    from physics.io.mesh_files import MESH_FACES_MAX

    cube = trimesh.creation.box()
    if case == "zip":
        cube.export(tmp_path / "cube.stl")
        with zipfile.ZipFile(tmp_path / "rock.zip", "w") as archive:
            archive.write(tmp_path / "cube.stl", "cube.stl")
        name, words = "rock.zip", "not read as a mesh"
    elif case == "dae zip":
        with zipfile.ZipFile(tmp_path / "rock.dae", "w", zipfile.ZIP_DEFLATED) as archive, \
                archive.open("rock.dae", "w") as member:
            for _ in range(64):
                member.write(bytes(2**20))
        name, words = "rock.dae", "a zip archive, not a mesh"
    elif case == "obj faces":
        with open(tmp_path / "rock.obj", "w") as handle:
            handle.write("v 0 0 0\nv 1 0 0\nv 0 1 0\n" + "f 1 2 3\n" * (MESH_FACES_MAX + 1))
        name, words = "rock.obj", f"more than {MESH_FACES_MAX} faces"
    elif case == "obj mtllib fifo":
        cube.export(tmp_path / "rock.obj")
        text = (tmp_path / "rock.obj").read_text()
        (tmp_path / "rock.obj").write_text("mtllib rock.mtl\nusemtl stone\n" + text)
        os.mkfifo(tmp_path / "rock.mtl")
        name, words = "rock.obj", None
    elif case == "gltf buffer fifo":
        os.mkfifo(tmp_path / "rock.bin")
        (tmp_path / "rock.gltf").write_text('{"asset": {"version": "2.0"}, "buffers": [{"uri": "rock.bin", "byteLength": 36}]}')
        name, words = "rock.gltf", "'rock.bin' is not a regular file"
    else:
        cube.export(tmp_path / "rock.stl")
        data = bytearray((tmp_path / "rock.stl").read_bytes())
        data[80:84] = (1000).to_bytes(4, "little")
        (tmp_path / "rock.stl").write_bytes(bytes(data))
        name, words = "rock.stl", "header counts 1000 triangles"
    started = time.monotonic()
    traced = case != "obj faces"    # tracemalloc would trace each of its 2e6 lines: minutes, not the reader's cost
    if traced:
        tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if words is None:
            scene = physics.load_urdf(urdf_with_mesh(tmp_path, name))
            assert any(s is not None and s["type"] == "hull" for s in scene.shapes)
        else:
            with pytest.raises(physics.SceneError, match=words) as info:
                physics.load_urdf(urdf_with_mesh(tmp_path, name))
            assert name in str(info.value)
    peak = tracemalloc.get_traced_memory()[1] if traced else 0
    tracemalloc.stop()
    assert time.monotonic() - started < 30 and peak < 16 * 2**20, (time.monotonic() - started, peak)


def test_a_needle_hull_whose_inertia_rounds_to_zero_is_refused_at_load():
    """A hull 1,000 m long and 1 µm thick (every length within the limits; the reproducer ended in
    "internal error" at step 0): its axial moment rounds to 0 in the hull's integration, so the load
    refuses it naming the node and the key and asks for an explicit inertia."""
    doc = {"title": "needle", "node": [{"name": "needle", "motion": "dynamic", "mass": 1e-9, "shape": {
        "type": "hull", "vertices": [[0, 0, 0], [1e3, 0, 0], [0, 1e-6, 0], [0, 0, 1e-6]]}}]}
    from physics.io.scene import scene_from_dict
    with pytest.raises(SceneError, match="node 'needle': key 'shape'.*explicit inertia"):
        scene_from_dict(doc, "needle.toml")
    doc["node"][0]["inertia"] = [1e-12, 1e-10, 1e-10]
    scene_from_dict(doc, "needle.toml")


def test_a_text_mesh_in_another_encoding_is_read_or_refused_never_for_a_missing_module(tmp_path):
    """trimesh guesses a text mesh's encoding with charset-normalizer (a dependency of ours): an
    OBJ with a Latin-1 comment loads; without the package it was refused as "No module named
    'charset_normalizer'"."""
    import trimesh

    import physics

    text = trimesh.creation.box().export(file_type="obj")
    (tmp_path / "rock.obj").write_bytes("# pierre taill\u00e9e\n".encode("latin-1") + text.encode())
    scene = physics.load_urdf(urdf_with_mesh(tmp_path, "rock.obj"))
    assert any(s is not None and s["type"] == "hull" for s in scene.shapes)
