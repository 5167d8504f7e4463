"""Viewer pieces without a display: camera matrices, model matrices, meshes, picking, PNG, settings."""
import json
import os

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from app import culling, meshes, picking, settings as store
from app.camera import Camera, gl_bytes
from app.png import read_png, write_png
from app.renderer import bounding_radius, model_matrices, shape_matrix
from physics.math.rotation import matrix_from_quaternion
from physics.math.transform import Transform

unit_quaternions = st.lists(st.floats(-1, 1), min_size=4, max_size=4).map(np.array).filter(
    lambda q: np.linalg.norm(q) > 0.1).map(lambda q: q / np.linalg.norm(q))
vectors = st.lists(st.floats(-5, 5), min_size=3, max_size=3).map(np.array)


# --- camera: golden values derived by hand ------------------------------------------------------

def test_view_matrix_golden():
    """Eye on +z at distance 5 looking at the origin: the view matrix is a translation by -5 z,
    so the world origin lands at camera z = -5 (in front) and world +x stays camera +x."""
    camera = Camera()
    camera.target_world, camera.distance, camera.yaw, camera.pitch = np.zeros(3), 5.0, 0.0, 0.0
    expected = np.eye(4)
    expected[2, 3] = -5.0
    np.testing.assert_allclose(camera.view(), expected, atol=1e-12)  # exact up to round-off


def test_view_matrix_is_rigid_and_maps_eye_to_origin():
    camera = Camera()
    camera.target_world, camera.distance, camera.yaw, camera.pitch = np.array([1.0, 2.0, 3.0]), 7.0, 0.7, 0.4
    view = camera.view()
    np.testing.assert_allclose(view[:3, :3] @ view[:3, :3].T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(view @ np.append(camera.eye_world, 1.0), [0, 0, 0, 1], atol=1e-12)
    target_camera = view @ np.append(camera.target_world, 1.0)
    np.testing.assert_allclose(target_camera[:3], [0, 0, -7.0], atol=1e-12)  # straight ahead on -z


def test_projection_golden():
    """OpenGL perspective: f = 1/tan(fov/2); P = [[f/a,0,0,0],[0,f,0,0],[0,0,(n+f)/(n-f),2nf/(n-f)],[0,0,-1,0]]."""
    camera = Camera(fov_y_deg=90.0, near=1.0, far=3.0)
    f, a, n, far = 1.0, 2.0, 1.0, 3.0
    expected = np.array([[f / a, 0, 0, 0], [0, f, 0, 0], [0, 0, (n + far) / (n - far), 2 * n * far / (n - far)], [0, 0, -1, 0]])
    np.testing.assert_allclose(camera.projection(a), expected, atol=1e-12)


def test_gl_bytes_is_column_major():
    m = np.arange(16, dtype=float).reshape(4, 4)
    np.testing.assert_array_equal(np.frombuffer(gl_bytes(m), np.float32), m.T.ravel())


def test_ray_through_centre_points_at_target():
    camera = Camera()
    origin, direction = camera.ray(640, 360, 1280, 720)
    expected = camera.target_world - camera.eye_world
    np.testing.assert_allclose(direction, expected / np.linalg.norm(expected), atol=1e-9)


def test_frame_fits_box():
    """After framing, the box's bounding sphere fits in the vertical field of view."""
    camera = Camera()
    camera.frame([-3, 0, -1], [3, 2, 1])
    radius = np.linalg.norm([6, 2, 2]) / 2
    assert np.arcsin(radius / camera.distance) <= np.radians(camera.fov_y_deg) / 2 + 1e-12


# --- model matrices against physics' own Transform.as_matrix --------------------------------------

@settings(max_examples=100, deadline=None)
@given(unit_quaternions, vectors, st.floats(0.1, 3.0), st.lists(st.floats(0.1, 4), min_size=3, max_size=3))
def test_model_matrix_matches_transform(q, t, s, size):
    """[R S | T] @ M_shape equals physics' homogeneous matrix of the node times the size scaling
    (tolerance 1e-12: the same products in another order)."""
    R = matrix_from_quaternion(q)
    node = Transform(t, R, s).as_matrix()
    kind, shape, _ = shape_matrix({"type": "box", "size": size})
    got = model_matrices(t[None], R[None], np.full((1, 3), s), shape[None])[0]
    np.testing.assert_allclose(got, node @ np.diag([*size, 1.0]), atol=1e-12)


def test_shape_matrix_bad_input():
    with pytest.raises(ValueError, match="unknown shape type 'cone'"):
        shape_matrix({"type": "cone"})
    with pytest.raises(ValueError, match="lacks the key 'radius'"):
        shape_matrix({"type": "sphere"})


# --- meshes -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("coarse", [False, True], ids=["full", "coarse"])
@pytest.mark.parametrize("kind", meshes.SHAPE_TYPES)
def test_meshes_wind_outward_and_unit_size(kind, coarse):
    """Every triangle's geometric normal points away from the centre (CCW from outside), and the
    mesh has the documented unit size (extent 1 box, radius 1 sphere), at both levels of detail."""
    vertices, indices = meshes.mesh(kind, coarse)
    p = vertices[:, :3] + np.outer(vertices[:, 6] * 0.5, [0, 1, 0])  # a capsule with half length 0.5
    tri = p[indices.reshape(-1, 3)]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    area = np.linalg.norm(n, axis=1)
    outward = np.einsum("ij,ij->i", n, tri.mean(axis=1)) > 0 if kind != "plane" else n[:, 1] > 0
    assert np.all(outward | (area < 1e-9))
    np.testing.assert_allclose(np.linalg.norm(vertices[:, 3:6], axis=1), 1.0, atol=1e-6)  # float32 normals
    half = {"box": 0.5, "sphere": 1.0, "cylinder": 1.0, "capsule": 1.0, "plane": 0.5}[kind]
    assert np.isclose(np.abs(vertices[:, [0, 2]]).max(), half, atol=1e-6)


@pytest.mark.parametrize("kind", meshes.COARSE_TYPES)
def test_coarse_meshes_have_fewer_triangles(kind):
    assert len(meshes.mesh(kind, coarse=True)[1]) * 2 < len(meshes.mesh(kind)[1])


@pytest.mark.parametrize("shape", [
    {"type": "box", "size": [1.0, 2.0, 0.5]}, {"type": "sphere", "radius": 0.7},
    {"type": "cylinder", "radius": 0.9, "height": 0.7}, {"type": "capsule", "radius": 0.3, "height": 2.0},
])
def test_bounding_radius_holds_the_drawn_mesh_tightly(shape):
    """Every vertex of the drawn mesh (the unit mesh through the shape matrix, capsule caps moved
    as the vertex shader does) lies within the bounding radius, and the farthest touches it
    (1e-6: float32 vertices; the tessellations keep the extreme points exactly)."""
    kind, matrix, half_length = shape_matrix(shape)
    radius = bounding_radius(shape)
    for coarse in (False, True):
        vertices, _ = meshes.mesh(kind, coarse)
        p = vertices[:, :3] + np.outer(vertices[:, 6] * half_length, [0, 1, 0])
        drawn = p @ matrix[:3, :3].T + matrix[:3, 3]
        assert np.linalg.norm(drawn, axis=1).max() == pytest.approx(radius, abs=1e-6)
    assert bounding_radius({"type": "plane"}) == np.inf


# --- culling: frustum planes and on-screen size --------------------------------------------------

cameras = st.tuples(st.floats(-np.pi, np.pi), st.floats(-1.4, 1.4), st.floats(1.0, 50.0), vectors, st.floats(0.5, 3.0))


def _camera(yaw, pitch, distance, target, aspect):
    camera = Camera()
    camera.yaw, camera.pitch, camera.distance, camera.target_world = yaw, pitch, distance, target
    return camera, camera.projection(aspect) @ camera.view()


@settings(max_examples=100, deadline=None)
@given(cameras, st.lists(vectors, min_size=20, max_size=20).map(np.array))
def test_frustum_planes_agree_with_clip_coordinates(cam, points):
    """A point is inside all six planes iff its clip coordinates satisfy -w <= x, y, z <= w
    (points within 1e-9 of a boundary are left out: either answer is right there)."""
    _, vp = _camera(*cam)
    clip = np.c_[points, np.ones(len(points))] @ vp.T
    margin = clip[:, 3:4] - np.abs(clip[:, :3])
    by_clip = np.all(margin >= 0, axis=1)
    planes = culling.frustum_planes(vp)
    by_planes = np.all(points @ planes[:, :3].T + planes[:, 3] >= 0, axis=1)
    clear = np.all(np.abs(margin) > 1e-9, axis=1)
    np.testing.assert_array_equal(by_planes[clear], by_clip[clear])


@settings(max_examples=100, deadline=None)
@given(cameras, vectors, st.floats(0.01, 3.0))
def test_screen_radius_never_culls_a_visible_sphere(cam, centre, radius):
    """Conservative culling: if any of 2,000 points on the sphere's surface projects inside the
    view volume, the sphere is kept (screen radius > 0)."""
    _, vp = _camera(*cam)
    direction = np.random.default_rng(0).normal(size=(2000, 3))
    surface = centre + radius * direction / np.linalg.norm(direction, axis=1, keepdims=True)
    clip = np.c_[surface, np.ones(len(surface))] @ vp.T
    seen = np.any(np.all(np.abs(clip[:, :3]) <= clip[:, 3:4], axis=1))
    pixels = culling.screen_radius(centre[None], radius, vp, 360.0)[0]
    if seen:
        assert pixels > 0


@pytest.mark.parametrize("distance,radius", [(10.0, 0.1), (50.0, 2.0), (300.0, 0.25)])
def test_screen_radius_on_axis_matches_the_silhouette(distance, radius):
    """A sphere straight ahead at distance d has the silhouette radius f tan(asin(r/d)) =
    f r / sqrt(d² - r²) pixels exactly; the estimate r f / d is that to relative r²/(2d²)
    (tolerance 2 r²/d²). Behind the eye or beside the view it is culled (0)."""
    camera, vp = _camera(0.3, 0.2, distance, np.array([1.0, 2.0, 3.0]), 16 / 9)
    height = 720
    focal_px = camera.projection(16 / 9)[1, 1] * height / 2
    pixels = culling.screen_radius(camera.target_world[None], radius, vp, focal_px)[0]
    exact = focal_px * radius / np.sqrt(distance ** 2 - radius ** 2)
    assert pixels == pytest.approx(exact, rel=2 * (radius / distance) ** 2)
    behind = 2 * camera.eye_world - camera.target_world
    beside = camera.target_world + 10 * distance * camera.view()[0, :3]  # far to the right
    np.testing.assert_array_equal(culling.screen_radius(np.array([behind, beside]), radius, vp, focal_px), 0.0)
    inside = culling.screen_radius(camera.eye_world[None], radius, vp, focal_px)[0]
    assert inside == np.inf  # the eye inside the sphere: it may fill the screen


def test_culling_bad_input():
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        culling.frustum_planes(np.eye(3))


# --- picking ----------------------------------------------------------------------------------------

def _instances(kind, shape, T, R):
    kind, m, half = shape_matrix(shape)
    models = model_matrices(T[None], R[None], np.ones((1, 3)), m[None])
    return {kind: (np.array([0]), models, np.array([half]))}


@pytest.mark.parametrize("shape,distance", [
    ({"type": "sphere", "radius": 0.5}, 9.5),
    ({"type": "box", "size": [1.0, 2.0, 3.0]}, 10.0 - 1.5),  # the ray meets the z face
    ({"type": "cylinder", "radius": 0.7, "height": 2.0}, 10.0 - 0.7),
    ({"type": "capsule", "radius": 0.4, "height": 1.0}, 10.0 - 0.4),
])
def test_pick_hits_at_analytic_distance(shape, distance):
    """A ray from (0, 0, 10) down -z hits the shape at the origin at the analytic distance (1e-9)."""
    node, t = picking.pick(np.array([0, 0, 10.0]), np.array([0, 0, -1.0]), _instances(None, shape, np.zeros(3), np.eye(3)))
    assert node == 0 and abs(t - distance) < 1e-9


def test_pick_capsule_cap_and_miss():
    shape = {"type": "capsule", "radius": 0.5, "height": 2.0}  # caps centred at y = ±1
    _, t = picking.pick(np.array([0, 10.0, 0]), np.array([0, -1.0, 0]), _instances(None, shape, np.zeros(3), np.eye(3)))
    assert abs(t - (10 - 1.5)) < 1e-9
    node, t = picking.pick(np.array([0.6, 0, 10.0]), np.array([0, 0, -1.0]), _instances(None, shape, np.zeros(3), np.eye(3)))
    assert node is None and t == np.inf


@settings(max_examples=100, deadline=None)
@given(unit_quaternions, vectors, st.lists(st.floats(0.2, 2), min_size=3, max_size=3), vectors)
@example(np.array([0.0, 0.38342867, -0.75671373, -0.52949674]), np.zeros(3), [0.2, 0.341796875, 1.0],
         np.array([0.0, 0.375, -0.75]))     # a graze the 1e-3 march steps over
def test_pick_box_agrees_with_sampling(q, T, size, start):
    """Against brute force: march the ray in 1e-3 steps and find the first point inside the
    oriented box; the analytic t must agree within the step (1e-3) — or both miss, or the ray only
    grazes the box, inside it for less than a step: then the march in 1e-7 steps around the analytic
    t finds it inside (to 1e-12 of the half sizes: the point at t lies on a face)."""
    R = matrix_from_quaternion(q)
    origin = T + 6.0 * start / max(np.linalg.norm(start), 1e-9) + np.array([0, 0, 8.0])
    direction = (T - origin) + 0.3 * R[:, 0]
    direction /= np.linalg.norm(direction)
    _, t = picking.pick(origin, direction, _instances(None, {"type": "box", "size": size}, T, R))
    ts = np.arange(0, 30, 1e-3)
    local = (origin + ts[:, None] * direction - T) @ R
    inside = np.all(np.abs(local) <= np.array(size) / 2, axis=1)
    if inside.any():
        assert abs(t - ts[np.argmax(inside)]) <= 1.5e-3
    elif t != np.inf:
        fine = t + np.arange(-15000, 15001) * 1e-7
        local = (origin + fine[:, None] * direction - T) @ R
        assert np.any(np.all(np.abs(local) <= np.array(size) / 2 + 1e-12, axis=1))


# --- PNG and settings ------------------------------------------------------------------------------

def test_png_round_trip(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    write_png(tmp_path / "x.png", rgb)
    np.testing.assert_array_equal(read_png(tmp_path / "x.png"), rgb)
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        write_png(tmp_path / "y.png", np.zeros((2, 2), np.uint8))


def test_png_readable_by_imagemagick(tmp_path):
    """An independent reader (ImageMagick, installed by .ci/run) sees the same pixels."""
    import subprocess
    from conftest import require_tool
    require_tool("convert", "imagemagick")
    rgb = np.random.default_rng(1).integers(0, 256, (6, 4, 3), dtype=np.uint8)
    write_png(tmp_path / "x.png", rgb)
    raw = subprocess.run(["convert", str(tmp_path / "x.png"), "-depth", "8", "rgb:-"], capture_output=True, check=True).stdout
    np.testing.assert_array_equal(np.frombuffer(raw, np.uint8).reshape(6, 4, 3), rgb)


def test_settings_round_trip_and_bad_file(app_config):
    prefs = store.load()
    assert prefs == store._clean(None)
    prefs["overlays"]["frames"] = True
    prefs["time_scale"] = 0.01
    prefs["physics"]["gyroscopic"] = "off"
    assert store.save(prefs)
    assert store.config_path() == app_config / "settings.json"
    assert store.load() == prefs
    store.config_path().write_text("{not json")
    assert store.load() == store._clean(None)
    store.config_path().write_text(json.dumps({"time_scale": "fast", "overlays": {"frames": 3}, "junk": 1}))
    assert store.load() == store._clean(None)


@pytest.mark.parametrize("case", ["fifo", "device", "nested", "huge", "not json"])
def test_a_bad_settings_file_is_set_aside_with_one_message(app_config, case):
    """A FIFO (which a plain read would wait on forever), /dev/zero (which never ends), brackets
    nested 10^5 deep (a RecursionError in json), a file over SETTINGS_BYTES_MAX, or text that is
    not JSON: the defaults, at once, and `problem` names the file and the reason in one line; a
    regular file is kept beside as settings.json.bad and the next start is clean."""
    path = store.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if case == "fifo":
        os.mkfifo(path)
    elif case == "device":
        path.symlink_to("/dev/zero")
    elif case == "nested":
        path.write_text("[" * 100_000)
    elif case == "huge":
        path.write_text(json.dumps({"junk": "x" * (store.SETTINGS_BYTES_MAX + 1)}))
    else:
        path.write_text("{not json")
    assert store.load() == store._clean(None)
    assert store.problem is not None and str(path) in store.problem and "\n" not in store.problem
    if case in ("nested", "huge", "not json"):
        assert path.with_name("settings.json.bad").exists() and not path.exists()
        assert store.load() == store._clean(None) and store.problem is None
