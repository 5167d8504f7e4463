"""The whole viewer offscreen through moderngl's EGL context: no X server, no window.

Runs in a subprocess because pyglet must be put in headless mode before anything imports
pyglet.window, which would pin the other tests' process to it.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """
import os, sys
os.environ.pop("DISPLAY", None)
import pyglet
pyglet.options["headless"] = True
import moderngl
from app.viewer import Viewer
ctx = moderngl.create_standalone_context(backend="egl")
viewer = Viewer(ctx, (1280, 720), "tank", store=False, msaa=4)
for _ in range(20):
    viewer.frame(1 / 60)
assert viewer.session.error is None, viewer.session.error
assert ctx.error == "GL_NO_ERROR", ctx.error
viewer.screenshot(sys.argv[1])
print(viewer.session.sim.time, viewer.view.target.samples)
viewer.close()
"""


def test_viewer_renders_offscreen_with_egl(tmp_path, app_config):
    out = tmp_path / "egl.png"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    sim_time, samples = result.stdout.split()[-2:]
    assert abs(float(sim_time) - 20 / 60) < 1e-9  # 20 frames of 1/60 s, one dt each
    from app.png import read_png
    image = read_png(out)
    assert image.shape == (720, 1280, 3)
    assert image.std() > 10 and len(np.unique(image.reshape(-1, 3), axis=0)) > 100  # not blank
    hull_green = np.array([0.34, 0.42, 0.2])  # tank.toml's hull colour, by chromaticity (lighting keeps it)
    rgb = image.reshape(-1, 3).astype(float)
    chroma = rgb[:, :2] / np.maximum(rgb.sum(axis=1, keepdims=True), 1)
    assert np.sum(np.linalg.norm(chroma - hull_green[:2] / hull_green.sum(), axis=1) < 0.02) > 100


POINTS_SCRIPT = """
import json, os, sys
os.environ.pop("DISPLAY", None)
import pyglet
pyglet.options["headless"] = True
import moderngl, numpy as np
import app.renderer as renderer
from app.camera import Camera
from physics.math.rotation import random_matrix
ctx = moderngl.create_standalone_context(backend="egl")
r = renderer.Renderer(ctx)
target = renderer.Target(ctx, (96, 96), 0)
rng = np.random.default_rng(7)
shapes = [{"type": "box", "size": [4.0, 0.8, 2.2]}, {"type": "box", "size": [1.0, 1.0, 1.0]},
          {"type": "cylinder", "radius": 0.9, "height": 0.7}, {"type": "sphere", "radius": 1.0},
          {"type": "capsule", "radius": 0.3, "height": 1.2}]
out = []
for trial in range(40):
    shape = shapes[trial % len(shapes)]
    camera = Camera()
    camera.target_world = np.zeros(3)
    camera.yaw, camera.pitch = rng.uniform(-np.pi, np.pi), rng.uniform(-1.2, 1.2)
    focal = camera.projection(1.0)[1, 1] * 96 / 2
    camera.distance = renderer.bounding_radius(shape) * focal / rng.uniform(1.5, 2.9)  # 1.5-2.9 px radius
    vp = camera.projection(1.0) @ camera.view()
    R = np.asarray(random_matrix(rng), float).reshape(1, 3, 3)
    r.set_shapes([shape], [[0.8, 0.4, 0.2]])
    pictures = []
    for point_pixels in (0.0, np.inf):  # every instance a mesh, then every one a point
        renderer.POINT_PIXELS = point_pixels
        target.resolved.use()
        target.resolved.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        r.draw_shapes(np.zeros((1, 3)), R, np.ones((1, 3)), vp, focal, None, camera.eye_world)
        pictures.append(target.read_rgb())
    level = [k for k, n in r.drawn.items() if n][0][1]
    assert level == "point", r.drawn
    out.append([shape["type"], pictures[0].tolist(), pictures[1].tolist()])
assert ctx.error == "GL_NO_ERROR", ctx.error
json.dump(out, open(sys.argv[1], "w"))
"""


def test_point_level_covers_the_pixels_the_mesh_covers(tmp_path):
    """A shape 1.5-2.9 px in radius, random orientation and view, drawn as its full mesh and as a
    point (the renderer's point level of detail). Both cover the pixels whose centre lies inside
    the projected shape: a box's outline is the same polygon up to the perspective's
    linearization across a few pixels, so at most 1 pixel of the 4-15 differs; a sphere's disc
    holds its mesh (a polygon inscribed in it) and exceeds it by at most a pixel ring's worth
    (3 px, or a quarter); a cylinder or capsule point is its bounding box, which holds the mesh
    and exceeds it by the box's corners (not bounded here). Where both cover a box pixel, the
    colour is the same face's (the mesh is lit per vertex, one colour on a flat face): >= 90 %
    of such pixels over all boxes equal to 2/255 (measured 97 %), the rest on face edges, where
    a pixel centre close to an edge falls on either side."""
    import json
    out = tmp_path / "points.json"
    result = subprocess.run([sys.executable, "-c", POINTS_SCRIPT, str(out)], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    same_colour = []
    for kind, mesh, point in json.loads(out.read_text()):
        mesh, point = np.asarray(mesh, int), np.asarray(point, int)
        covered_mesh, covered_point = mesh.sum(axis=2) > 0, point.sum(axis=2) > 0
        assert covered_mesh.sum() >= 1, kind  # something to compare
        assert np.sum(covered_mesh & ~covered_point) <= 1, kind
        excess = np.sum(covered_point & ~covered_mesh)
        if kind == "box":
            assert excess <= 1, kind
            both = covered_mesh & covered_point
            same_colour.extend(np.all(np.abs(mesh - point) <= 2, axis=2)[both])
        elif kind == "sphere":
            assert excess <= max(3, covered_mesh.sum() / 4), kind
    assert np.mean(same_colour) >= 0.9
