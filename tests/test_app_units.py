"""Viewer pieces without a display: camera matrices, model matrices, meshes, picking, PNG, settings."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from app import meshes, picking, settings as store
from app.camera import Camera, gl_bytes
from app.png import read_png, write_png
from app.renderer import model_matrices, shape_matrix
from physics.rotation import matrix_from_quaternion
from physics.transform import Transform

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

@pytest.mark.parametrize("kind", meshes.SHAPE_TYPES)
def test_meshes_wind_outward_and_unit_size(kind):
    """Every triangle's geometric normal points away from the centre (CCW from outside), and the
    mesh has the documented unit size (extent 1 box, radius 1 sphere)."""
    vertices, indices = meshes.mesh(kind)
    p = vertices[:, :3] + np.outer(vertices[:, 6] * 0.5, [0, 1, 0])  # a capsule with half length 0.5
    tri = p[indices.reshape(-1, 3)]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    area = np.linalg.norm(n, axis=1)
    outward = np.einsum("ij,ij->i", n, tri.mean(axis=1)) > 0 if kind != "plane" else n[:, 1] > 0
    assert np.all(outward | (area < 1e-9))
    np.testing.assert_allclose(np.linalg.norm(vertices[:, 3:6], axis=1), 1.0, atol=1e-6)  # float32 normals
    half = {"box": 0.5, "sphere": 1.0, "cylinder": 1.0, "capsule": 1.0, "plane": 0.5}[kind]
    assert np.isclose(np.abs(vertices[:, [0, 2]]).max(), half, atol=1e-6)


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
def test_pick_box_agrees_with_sampling(q, T, size, start):
    """Against brute force: march the ray in 1e-3 steps and find the first point inside the
    oriented box; the analytic t must agree within the step (1e-3) — or both miss."""
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
    else:
        assert t == np.inf


# --- PNG and settings ------------------------------------------------------------------------------

def test_png_round_trip(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    write_png(tmp_path / "x.png", rgb)
    np.testing.assert_array_equal(read_png(tmp_path / "x.png"), rgb)
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        write_png(tmp_path / "y.png", np.zeros((2, 2), np.uint8))


def test_png_readable_by_imagemagick(tmp_path):
    """An independent reader (ImageMagick, installed by .ci/run) sees the same pixels."""
    import shutil
    import subprocess
    if shutil.which("convert") is None:
        pytest.skip("ImageMagick's convert is not installed (apt-get install imagemagick)")
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
