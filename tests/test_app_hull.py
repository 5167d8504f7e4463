"""Hull shapes in the app: drawn from the hull's own triangles (app.meshes.hull_mesh) and picked by
its face planes (app.picking), each checked against the box whose corners the hull is."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SIZE = [1.2, 0.5, 0.8]
CORNERS = (0.5 * np.array(SIZE) * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])).tolist()

DRAW_SCRIPT = """
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
target = renderer.Target(ctx, (128, 128), 0)
rng = np.random.default_rng(3)
size, corners = json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = []
for trial in range(8):
    camera = Camera()
    camera.target_world = np.zeros(3)
    camera.yaw, camera.pitch = rng.uniform(-np.pi, np.pi), rng.uniform(-1.2, 1.2)
    camera.distance = 3.0
    vp = camera.projection(1.0) @ camera.view()
    focal = camera.projection(1.0)[1, 1] * 128 / 2
    R = np.asarray(random_matrix(rng), float).reshape(1, 3, 3)
    pictures = []
    for shape in ({"type": "box", "size": size}, {"type": "hull", "vertices": corners}):
        r.set_shapes([shape], [[0.8, 0.4, 0.2]])
        target.resolved.use()
        target.resolved.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        r.draw_shapes(np.zeros((1, 3)), R, np.ones((1, 3)), vp, focal, None, camera.eye_world)
        pictures.append(target.read_rgb().tolist())
    out.append(pictures)
assert ctx.error == "GL_NO_ERROR", ctx.error
json.dump(out, open(sys.argv[1], "w"))
"""


def test_a_box_hull_draws_as_the_box(tmp_path):
    """The hull of a box's corners, drawn from its own triangles, covers the pixels the box's unit
    mesh covers and in the same colours (both flat-shaded by the face normal): from 8 random views
    at 128 px, at most 1 % of the covered pixels differ in coverage (the two meshes split the faces
    into other triangles: pixel centres on a face's diagonal fall either way), and >= 98 % of the
    pixels both cover are equal to 2/255."""
    out = tmp_path / "hull.json"
    result = subprocess.run([sys.executable, "-c", DRAW_SCRIPT, str(out), json.dumps(SIZE), json.dumps(CORNERS)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    same = []
    for box, hull in json.loads(out.read_text()):
        box, hull = np.asarray(box, int), np.asarray(hull, int)
        covered_box, covered_hull = box.sum(axis=2) > 0, hull.sum(axis=2) > 0
        assert covered_box.sum() > 500
        assert np.sum(covered_box != covered_hull) <= 0.01 * covered_box.sum()
        both = covered_box & covered_hull
        same.extend(np.all(np.abs(box - hull) <= 2, axis=2)[both])
    assert np.mean(same) >= 0.98


def test_picking_a_hull_hits_where_the_box_does():
    """Rays from random points outside, aimed near the centre: the hull (its planes, in the node
    frame) and the box (the unit cube scaled by its size) are hit at the same t to 1e-12, or both
    missed."""
    from app import meshes, picking
    from app.renderer import shape_matrix
    from physics.math.rotation import random_matrix
    kind = meshes.hull_mesh(CORNERS)[0]
    rng = np.random.default_rng(9)
    hits = 0
    for _ in range(200):
        R = np.asarray(random_matrix(rng), float)
        node = np.eye(4)
        node[:3, :3], node[:3, 3] = R, rng.normal(size=3)
        origin = node[:3, 3] + rng.normal(size=3) * 3.0
        direction = node[:3, 3] + rng.normal(size=3) * 0.5 - origin
        direction /= np.linalg.norm(direction)
        box = {"box": (np.array([0]), (node @ shape_matrix({"type": "box", "size": SIZE})[1])[None], np.zeros(1))}
        hull = {kind: (np.array([0]), node[None], np.zeros(1))}
        (a, ta), (b, tb) = picking.pick(origin, direction, box), picking.pick(origin, direction, hull)
        assert a == b
        if a is not None:
            hits += 1
            assert abs(ta - tb) <= 1e-12 * max(1.0, ta)
    assert hits > 50
