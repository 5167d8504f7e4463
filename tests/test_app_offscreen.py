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
assert viewer.error is None, viewer.error
assert ctx.error == "GL_NO_ERROR", ctx.error
viewer.screenshot(sys.argv[1])
print(viewer.sim.time, viewer.target.samples)
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
