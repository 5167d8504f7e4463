"""Shadows from the key light (app.shadows): the light's frame and caster culling against
independent computations, the depth pass against ray casting, and the picture: a body on the
ground darkens the ground beside it and the body under another, with the panel's toggle.
"""
import json

import numpy as np
import pytest
from conftest import click, frames
from hypothesis import given, settings
from hypothesis import strategies as st

from app import shadows
from app.camera import Camera
from app.renderer import LIGHT_DIR_WORLD

# A 1 m box on the ground with a 0.3 m box on it (neither moves), the sky around.
SCENE = """
[world]
gravity = [0.0, 0.0, 0.0]
[[node]]
name = "ground"
shape = { type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }
color = [0.42, 0.5, 0.36]
[[node]]
name = "base"
translation = [0.0, 0.5, 0.0]
shape = { type = "box", size = [1.0, 1.0, 1.0] }
color = [0.6, 0.6, 0.6]
[[node]]
name = "top"
translation = [-0.2, 1.15, 0.0]
shape = { type = "box", size = [0.3, 0.3, 0.3] }
color = [0.3, 0.4, 0.8]
"""


def test_light_basis_is_a_right_handed_camera_looking_along_the_light():
    basis = shadows.light_basis()
    np.testing.assert_allclose(basis @ basis.T, np.eye(3), atol=1e-12)  # orthonormal to round-off
    np.testing.assert_allclose(basis[2], LIGHT_DIR_WORLD, atol=1e-12)
    np.testing.assert_allclose(np.cross(basis[0], basis[1]), -LIGHT_DIR_WORLD, atol=1e-12)


spheres = st.lists(st.tuples(st.floats(-50, 50), st.floats(0, 20), st.floats(-50, 50), st.floats(0.01, 5)),
                   min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(spheres, st.sampled_from([64, 256, 1024]))
def test_fit_holds_every_caster_on_a_stable_grid(items, texels):
    """Every sphere lies inside the light's clip volume with the margin's texels free at the
    sides; the square's half side is a power of SIZE_STEP (plus a texel) and its centre on whole
    texels of that grid (1e-6 relative: round-off)."""
    c, r = np.array([i[:3] for i in items]), np.array([i[3] for i in items])
    light = shadows.fit(c, r, texels)
    clip = np.c_[c, np.ones(len(c))] @ light.view_projection.T
    np.testing.assert_allclose(clip[:, 3], 1.0)
    # a sphere of radius r spans r * texels_per_m texels; 2 / texels of clip units per texel
    reach = r * light.texels_per_m * 2 / texels
    inner = 1 - 2 * shadows.MARGIN_TEXELS / texels
    assert np.all(np.abs(clip[:, :2]) + reach[:, None] <= inner + 1e-9)
    depth_reach = r * 2 * light.depth_per_m
    assert np.all(np.abs(clip[:, 2]) + depth_reach <= 1 + 1e-9)
    half = texels / (2 * light.texels_per_m)  # the rounded half side q grown by a texel, q (1 + 2 / texels)
    steps = np.log(half / (1 + 2 / texels)) / np.log(shadows.SIZE_STEP)
    assert abs(steps - round(steps)) < 1e-6
    centre = -light.view_projection[:2, 3] * half  # x_ndc = (x - cx) / half
    texel = 1 / light.texels_per_m
    np.testing.assert_allclose(centre / texel, np.round(centre / texel), atol=1e-6)


def _camera(yaw, pitch, distance):
    camera = Camera()
    camera.target_world = np.zeros(3)
    camera.yaw, camera.pitch, camera.distance = yaw, pitch, distance
    return camera.projection(16 / 9) @ camera.view()


@settings(max_examples=40, deadline=None)
@given(st.floats(-np.pi, np.pi), st.floats(0.1, 1.4), st.floats(2, 60), spheres)
def test_visible_casters_keeps_every_caster_whose_shadow_is_in_view(yaw, pitch, distance, items):
    """Sampled along its shadow (centre and points on the sphere, swept along l down to the
    floor): any sample inside the view volume (clip test) means the caster must be kept."""
    vp = _camera(yaw, pitch, distance)
    c, r = np.array([i[:3] for i in items]), np.array([i[3] for i in items])
    kept = shadows.visible_casters(c, r, vp, floor_y=0.0)
    rng = np.random.default_rng(0)
    offsets = rng.normal(size=(64, 3))
    offsets = np.r_[np.zeros((1, 3)), offsets / np.linalg.norm(offsets, axis=1, keepdims=True)]
    for i in range(len(c)):
        t = np.linspace(0, (c[i, 1] + r[i]) / -LIGHT_DIR_WORLD[1], 50)
        points = (c[i] + offsets[:, None, :] * r[i] + t[None, :, None] * LIGHT_DIR_WORLD).reshape(-1, 3)
        clip = np.c_[points, np.ones(len(points))] @ vp.T
        inside = np.all(np.abs(clip[:, :3]) <= clip[:, 3:], axis=1)
        if inside.any():
            assert kept[i], f"caster {c[i]} r={r[i]} shadows the view but was culled"


def test_visible_casters_drops_a_caster_behind_the_camera():
    vp = _camera(0.0, 0.3, 10.0)  # the eye at about +z 9.5 m, looking at the origin
    kept = shadows.visible_casters(np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 60.0]]), np.array([0.5, 0.5]), vp, 0.0)
    assert kept.tolist() == [True, False]


def _exit_depth_box(light, model, half_extent, texels):
    """Window depth where the light's ray through each texel centre leaves the box (slabs,
    in numpy), inf where it misses: the depth the pass should store (texels, texels)."""
    basis = light.basis
    vp = light.view_projection
    # texel centre (i, j) -> clip -> light-space x, y; the ray is p0 + t l with p0 on depth 0
    ndc = (np.arange(texels) + 0.5) / texels * 2 - 1
    x_ndc, y_ndc = np.meshgrid(ndc, ndc)          # rows: y, columns: x
    half = 1 / np.linalg.norm(vp[0, :3])                               # the view part is a rotation
    x = x_ndc * half - vp[0, 3] * half
    y = y_ndc * half - vp[1, 3] * half
    origins = x[..., None] * basis[0] + y[..., None] * basis[1]        # world, depth 0
    w = model[:3, :3] * np.asarray(half_extent)[None, :]               # box coords -> world
    w_inverse = np.linalg.inv(w)
    u0 = (origins - model[:3, 3]) @ w_inverse.T
    d = w_inverse @ basis[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (-1 - u0) / d, (1 - u0) / d
    t_enter = np.minimum(t1, t2).max(axis=-1)
    t_exit = np.maximum(t1, t2).min(axis=-1)
    hit = t_enter <= t_exit
    depth_window = (2 * light.depth_per_m * t_exit + vp[2, 3] + 1) / 2  # depth along l is t (origins at 0)
    return np.where(hit, depth_window, np.inf)


@pytest.mark.display
@pytest.mark.parametrize("points", [False, True], ids=["meshes", "points"])
def test_depth_pass_stores_where_the_light_leaves_each_caster(window, points, monkeypatch):
    """A box in random poses, drawn by the depth pass as a mesh (front faces culled) and as a
    point (its silhouette and exit depth in the fragment shader): the map holds the depth where
    the light's ray through each texel centre leaves the box, as numpy's slab test finds it.
    Tolerances: coverage may differ on the silhouette's texels (a texel centre on an edge goes
    either way); depth never lies in front of the exit by more than the face's depth change
    across a texel (s, from numpy's map: where a rasterizer samples within the texel), and
    behind it by at most the pass's own offsets: the polygon offset (factor x s + units) for
    meshes, POINT_BIAS_TEXELS for points, plus s."""
    from physics.math.rotation import random_matrix
    w = window("tank")
    texels = 128
    monkeypatch.setattr(shadows, "POINT_TEXELS", np.inf if points else 0.0)
    shadow_map = shadows.ShadowMap(w.ctx, texels)
    renderer = w.viewer.view.renderer
    rng = np.random.default_rng(3)
    size = np.array([1.0, 0.4, 0.7])
    renderer.set_shapes([{"type": "box", "size": size.tolist()}], [[0.5, 0.5, 0.5]])
    vp = _camera(0.3, 0.5, 8.0)
    try:
        for trial in range(12):
            R = np.asarray(random_matrix(rng), float).reshape(1, 3, 3)
            T = rng.uniform(-0.5, 0.5, (1, 3)) + [0, 1.0, 0]
            assert shadow_map.render(renderer, T, R, np.ones((1, 3)), vp, force=True) is shadow_map
            stored = np.frombuffer(shadow_map.depth.read(), np.float32).reshape(texels, texels).astype(float)
            model = np.eye(4)
            model[:3, :3], model[:3, 3] = R[0], T[0]
            expected = _exit_depth_box(shadow_map.light, model, size / 2, texels)
            covered, hit = stored < 1.0, np.isfinite(expected)
            near_edge = np.zeros_like(hit)  # texels with a neighbour (8 around) on the other side of the silhouette
            for rows in (-1, 0, 1):
                for columns in (-1, 0, 1):
                    near_edge |= hit != np.roll(hit, (rows, columns), (0, 1))
            assert np.sum((covered != hit) & ~near_edge) == 0, f"trial {trial}: coverage differs inside the silhouette"
            assert hit.sum() > 100, "the box should cover many texels"
            inner = hit & ~near_edge
            finite = np.where(hit, expected, np.nan)
            slope = np.fmax(np.abs(np.diff(finite, axis=0, prepend=np.nan)), np.abs(np.diff(finite, axis=1, prepend=np.nan)))
            slope = np.fmax(slope, np.abs(np.diff(finite[::-1], axis=0, prepend=np.nan))[::-1])
            slope = np.nan_to_num(np.fmax(slope, np.abs(np.diff(finite[:, ::-1], axis=1, prepend=np.nan))[:, ::-1]))
            error = (stored - expected)[inner]
            s = slope[inner]
            if points:
                allowed = shadows.POINT_BIAS_TEXELS * shadow_map.light.depth_per_m / shadow_map.light.texels_per_m + s
            else:
                allowed = (shadows.POLYGON_OFFSET[0] + 1) * s + shadows.POLYGON_OFFSET[1] * 2.0 ** -20
            assert np.all(error >= -s - 1e-6), f"trial {trial}: stored in front of the exit by {-error.min():.2e}"
            assert np.all(error <= allowed + 1e-6), f"trial {trial}: stored behind the exit by {np.max(error - allowed):.2e}"
    finally:
        shadow_map.release()


def _pixel(viewer, point_world):
    """The window pixel (column, row from the top) a world point projects to."""
    clip = viewer.view.view_projection() @ np.r_[point_world, 1.0]
    ndc = clip[:2] / clip[3]
    width, height = viewer.size
    return int(round((ndc[0] + 1) / 2 * width)), int(round((1 - ndc[1]) / 2 * height))


def _brightness(image, pixel, half=2):
    column, row = pixel
    return float(image[row - half:row + half + 1, column - half:column + half + 1].astype(float).sum(axis=-1).mean())


@pytest.mark.display
def test_shadows_darken_the_ground_beside_a_body_and_a_body_under_another(window, tmp_path, app_config):
    """The same scene with shadows on (the default) and off through the panel's checkbox: the
    ground beside the base box on the side away from the light, the ground where the top of the
    base casts, and the base's top under the small box are darker with shadows on; ground and
    faces the light reaches are unchanged. The toggle persists in the settings file.

    Where: a point is in shadow iff the ray from it toward the light (-l) crosses a box, which
    is how the points are chosen (checked here with the same slab test, in numpy). Expected
    ratio: a horizontal face keeps its ambient 0.45 of 0.45 + 0.75 |l_y| = 1.02 (0.44, lit to
    shadow); < 0.7 allows for the filtered edge. Unchanged: within 2% (8-bit rounding)."""
    scene = tmp_path / "boxes.toml"
    scene.write_text(SCENE)
    w = window(str(scene))
    v = w.viewer
    assert v.session.prefs["shadows"] is True
    v.view.camera.target_world = np.array([0.0, 0.5, 0.0])
    v.view.camera.yaw, v.view.camera.pitch, v.view.camera.distance = np.radians(35.0), np.radians(35.0), 4.0
    frames(w, 3)
    boxes = [(np.array([0.0, 0.5, 0.0]), np.array([0.5, 0.5, 0.5])), (np.array([-0.2, 1.15, 0.0]), np.array([0.15] * 3))]

    def shadowed(point):
        for centre, half in boxes:
            with np.errstate(divide="ignore"):
                t1, t2 = (centre - half - point) / -LIGHT_DIR_WORLD, (centre + half - point) / -LIGHT_DIR_WORLD
            if np.minimum(t1, t2).max() <= np.maximum(t1, t2).min() and np.maximum(t1, t2).min() > 1e-6:
                return True
        return False

    dark = {"ground at the contact": [0.56, 0.0, 0.25], "ground under the base's shadow": [0.69, 0.0, -0.48],
            "base's top under the small box": [0.08, 1.0, -0.15]}
    lit = {"ground": [-1.5, 0.0, 0.6], "base's top": [0.35, 1.0, 0.35]}
    for name, point in {**dark, **lit}.items():
        assert shadowed(np.array(point, float)) == (name in dark), name
    on = v.read_rgb()
    click(w, "Shadows")
    assert v.session.prefs["shadows"] is False
    frames(w, 1)
    off = v.read_rgb()
    from app.png import write_png
    write_png(tmp_path / "on.png", on)
    write_png(tmp_path / "off.png", off)
    for name, point in dark.items():
        pixel = _pixel(v, point)
        ratio = _brightness(on, pixel) / _brightness(off, pixel)
        assert ratio < 0.7, f"{name} at pixel {pixel}: on / off = {ratio:.2f}"
    for name, point in lit.items():
        pixel = _pixel(v, point)
        ratio = _brightness(on, pixel) / _brightness(off, pixel)
        assert abs(ratio - 1) < 0.02, f"{name} at pixel {pixel}: on / off = {ratio:.2f}"
    w.close()
    saved = json.loads((app_config / "settings.json").read_text())
    assert saved["shadows"] is False
    from app import settings as settings_store
    assert settings_store.load()["shadows"] is False


def _pictures(viewer):
    """The picture and the depth buffer with shadows on, then off (the same frame drawn again):
    (rgb on, rgb off, depth on, depth off); the shadows preference left on."""
    shown = []
    for on in (True, False):
        viewer.session.prefs["shadows"] = on
        rgb = viewer.read_rgb()
        depth = np.frombuffer(viewer.view.target.resolved.read(components=1, attachment=-1, dtype="f4"), np.float32)
        shown.append((rgb, depth.reshape(viewer.size[1], viewer.size[0])[::-1]))
    viewer.session.prefs["shadows"] = True
    return shown[0][0], shown[1][0], shown[0][1], shown[1][1]


def assert_shadows_only_darken(viewer, where, keep=None):
    """Shadows take light away and nothing else: with them on, no pixel is brighter in any channel
    than with them off (+2 of 255: 8-bit rounding of the shaded colour), and the depth buffer is
    the same but on the ground outside the shadow map's footprint, drawn another pixel's depth
    slope and 8 units of 2^-24 behind (app.renderer.Renderer._draw_planes): allowed, twice the
    pixel's slope (the largest step to a neighbour) and 16 units. A body missing leaves the depth
    of what is behind it, the ground or the far plane, many pixels' slopes further. On failure
    both pictures are written to the directory `keep`, if given."""
    on, off, depth_on, depth_off = _pictures(viewer)
    brighter = np.any(on.astype(int) > off.astype(int) + 2, axis=-1)
    step = np.zeros_like(depth_off)
    for axis in (0, 1):
        for shift in (-1, 1):
            step = np.maximum(step, np.abs(np.roll(depth_off, shift, axis) - depth_off))
    moved = np.abs(depth_on - depth_off) > 2 * step + 16 * 2.0 ** -24
    if keep is not None and (brighter.any() or moved.any()):
        from app.png import write_png
        write_png(keep / f"{viewer.session.scene_path.stem}-shadows-on.png", on)
        write_png(keep / f"{viewer.session.scene_path.stem}-shadows-off.png", off)
    assert not moved.any(), f"{where}: {moved.sum()} pixels show something else with shadows on (depth)"
    assert not brighter.any(), f"{where}: {brighter.sum()} pixels brighter with shadows on"


def _cached_scenes(monkeypatch):
    """Each shipped scene loaded once and reset at every later open (loading the 10,000-body scene
    takes seconds; what the viewer keeps between scenes is its own state, which this leaves as is)."""
    import physics
    loaded, load = {}, physics.Simulation.from_file.__func__

    def from_file(cls, path, *args, **kwargs):
        key = str(path)
        if key not in loaded:
            loaded[key] = load(cls, path, *args, **kwargs)
        sim = loaded[key]
        sim.reset()
        return sim
    monkeypatch.setattr(physics.Simulation, "from_file", classmethod(from_file))


def _open_in_order(window, monkeypatch, tmp_path, order):
    """Open the scenes in `order`, each drawn paused after one frame: shadows only darken
    (`assert_shadows_only_darken`)."""
    _cached_scenes(monkeypatch)
    w = window(order[0], msaa=0)
    v = w.viewer
    previous = order[0]
    for name in order[1:]:
        assert v.session.open(name), v.session.error
        v.session.paused = True
        frames(w, 1)
        assert_shadows_only_darken(v, f"{previous} -> {name}", tmp_path)
        previous = name


def _extent(path):
    """The spread of a scene's nodes as loaded (m): what sizes its shadow map's footprint."""
    import physics
    return float(np.ptp(physics.Simulation.from_file(path).world_poses()[0], axis=0).max())


@pytest.mark.display
def test_every_scene_shows_every_body_after_the_widest_and_the_narrowest_scene(window, monkeypatch, tmp_path):
    """Every shipped scene opened right after the scene whose shadow footprint is widest and right
    after the one whose footprint is narrowest: shadows only darken. A program's uniform left by
    the previous scene (the shadow map's footprint) once clipped whole bodies away; the widest and
    the narrowest footprint are the extremes it can leave. The 10⁴-node stress scene (761 m, a
    second a visit) is the widest of all: it goes before the widest and the narrowest of the
    others, which then go before every scene. (Every ordered pair of scenes is `make long`'s: the
    test below.)"""
    from app.session import scene_files
    paths = {path.stem: path for path in scene_files()}
    _cached_scenes(monkeypatch)
    extents = {name: _extent(path) for name, path in paths.items()}
    names = sorted(paths, key=extents.get)
    stress, others = names[-1], names[:-1]
    narrowest, widest = others[0], others[-1]
    order = [stress, widest, stress, narrowest]
    for name in names:
        for start in (widest, narrowest):
            if name != start:
                order += [start, name] if order[-1] != start else [name]
    assert set(order) == set(names) and stress == "stress"
    _open_in_order(window, monkeypatch, tmp_path, order)


@pytest.mark.display
@pytest.mark.long
def test_every_scene_shows_every_body_reached_from_every_other_scene(window, monkeypatch, tmp_path):
    """The scenes opened in an order that goes from every scene to every other one (an Eulerian
    circuit of the complete directed graph of the shipped scenes), each drawn paused after one
    frame: shadows only darken (`assert_shadows_only_darken`). A program's uniform left by the
    previous scene (the shadow map's footprint) once clipped whole bodies away."""
    from app.session import scene_files
    names = [path.stem for path in scene_files()]
    # Hierholzer's circuit on the complete directed graph (every vertex has in = out degree)
    unused = {a: [b for b in names if b != a] for a in names}
    stack, circuit = [names[0]], []
    while stack:
        if unused[stack[-1]]:
            stack.append(unused[stack[-1]].pop())
        else:
            circuit.append(stack.pop())
    circuit.reverse()
    assert len(circuit) == len(names) * (len(names) - 1) + 1
    _open_in_order(window, monkeypatch, tmp_path, circuit)


@pytest.mark.display
def test_the_t_handle_shows_after_the_tank_with_real_keys(window, tmp_path):
    """The report's steps with real key events (xdotool): the T-handle, PgDn to the tank, its
    frames for a while, PgUp back: every body of the handle is drawn with shadows on."""
    from conftest import require_tool, xdotool
    require_tool("xdotool", "xdotool")
    w = window("t_handle", msaa=0)
    v = w.viewer
    wid = str(w._window)
    xdotool(w, "mousemove", "--window", wid, "900", "500")
    xdotool(w, "windowfocus", "--sync", wid)
    xdotool(w, "key", "Next")
    assert v.session.scene_path.stem == "tank"
    frames(w, 120)
    xdotool(w, "key", "Prior")
    assert v.session.scene_path.stem == "t_handle"
    v.session.paused = True
    frames(w, 1)
    assert sum(v.view.renderer.drawn.values()) == 3
    assert_shadows_only_darken(v, "t_handle -> tank -> t_handle", tmp_path)


@pytest.mark.display
@pytest.mark.parametrize("scene", ["car", "pyramid", "tank", "stack"])
def test_a_paused_scene_draws_the_same_picture_every_frame(window, scene):
    """Three frames of a paused scene are the same picture to the bit (each frame drawn by the
    window, then drawn again into the offscreen target screenshots read, as F12 does): the shadow
    map and everything else depend on the state and the view only. Taken after the scene has run
    a second, at rest or in motion."""
    w = window(scene, msaa=0)
    v = w.viewer
    v.session.prefs["numbers"] = False   # the overlay's FPS changes by itself
    frames(w, 60)
    v.session.paused = True
    pictures = []
    for _ in range(3):
        frames(w, 1)
        pictures.append(v.read_rgb())
    for k in (1, 2):
        differ = np.any(pictures[k] != pictures[0], axis=-1)
        assert not differ.any(), f"frame {k}: {differ.sum()} pixels differ from frame 0"


def _in_box_shadow(point, centre, half):
    """Whether the ray from `point` toward the light (-l) crosses the box (slab test, numpy)."""
    with np.errstate(divide="ignore"):
        t1, t2 = (centre - half - point) / -LIGHT_DIR_WORLD, (centre + half - point) / -LIGHT_DIR_WORLD
    return bool(np.minimum(t1, t2).max() <= np.maximum(t1, t2).min() and np.maximum(t1, t2).min() > 1e-6)


@pytest.mark.display
def test_the_walls_shadow_holds_while_the_car_crashes(window):
    """The car scene from its start, the camera still, the crash played at 1/60 s a frame: while
    the car's motion changes the light's fit (its square, texels and depth range) every frame,
    the fixed wall's shadow on the ground stays solid: in every fifth frame, ground points the
    wall shadows (slab test) are darker than half the lit ground (ambient over ambient + direct
    is 0.44 for the ground; < 0.6 allows the filtered edge and the car's own shadow darkens
    only), and the lit points stay within 2 % of the lit ground (8-bit rounding)."""
    w = window("car", msaa=0)
    v = w.viewer
    v.session.prefs["numbers"] = False
    v.view.camera.target_world = np.array([1.0, 0.5, 0.0])      # from +x, -z: the wall's shaded side, the car behind it
    v.view.camera.yaw, v.view.camera.pitch, v.view.camera.distance = np.radians(115.0), np.radians(35.0), 12.0
    wall = (np.array([0.25, 1.5, 0.0]), np.array([0.25, 1.5, 3.0]))
    # between the grid's lines; a point's neighbours 0.2 m around share its light (the filtered edge is further)
    dark = [np.array(p, float) for p in ([1.5, 0.0, -0.5], [1.5, 0.0, -1.5], [1.5, 0.0, 1.5], [0.8, 0.0, 0.5])]
    lit = [np.array(p, float) for p in ([4.5, 0.0, 0.5], [3.5, 0.0, -4.5])]
    reference = np.array([4.5, 0.0, -3.5])   # lit ground, compared with
    around = [np.array([dx, 0.0, dz]) for dx in (-0.2, 0.0, 0.2) for dz in (-0.2, 0.0, 0.2)]
    assert all(_in_box_shadow(p + d, *wall) for p in dark for d in around)
    assert not any(_in_box_shadow(p + d, *wall) for p in [*lit, reference] for d in around)
    fits = set()
    for frame in range(0, 150, 5):
        frames(w, 5)
        image = v.read_rgb()
        fits.add(v.view.shadow_map.light.view_projection.tobytes())
        ground = _brightness(image, _pixel(v, reference))
        for point in dark:
            ratio = _brightness(image, _pixel(v, point)) / ground
            assert ratio < 0.6, f"frame {frame}, t = {v.session.sim.time:.2f} s: the wall's shadow at {point} is {ratio:.2f} of the lit ground"
        for point in lit:
            ratio = _brightness(image, _pixel(v, point)) / ground
            assert abs(ratio - 1) < 0.02, f"frame {frame}: lit ground at {point} is {ratio:.2f} of the lit ground"
    assert len(fits) > 5, "the light's fit should change while the car moves (else this tests nothing)"
