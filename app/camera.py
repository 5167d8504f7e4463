"""Orbit camera: orbit, pan, zoom, follow a point, frame a bounding box.

Matrices are numpy arrays in the column-vector convention of docs/architecture.md
(`x_clip = P V x_world`). pyrr builds the projection and the look-at; pyrr's matrices are for
row vectors (`x @ M`), so they are transposed once here, and the golden tests in
tests/test_app_units.py pin both against hand-derived formulas. To upload a matrix to GLSL
(column-major), write `M.T` in C order: see `gl_bytes`.

The eye sits at `target + distance * (cos(pitch) sin(yaw), sin(pitch), cos(pitch) cos(yaw))`,
y up (gravity is -y).
"""
import numpy as np
from pyrr import matrix44

UP_WORLD = np.array([0.0, 1.0, 0.0])


def gl_bytes(matrix):
    """A (4, 4) column-vector matrix as the bytes of a GLSL mat4 (column-major float32)."""
    return np.ascontiguousarray(np.asarray(matrix, dtype=np.float32).T).tobytes()


class Camera:
    def __init__(self, fov_y_deg=50.0, near=0.05, far=2000.0):
        self.fov_y_deg, self.near, self.far = fov_y_deg, near, far
        self.reset()

    def reset(self):
        self.target_world = np.array([0.0, 1.0, 0.0])
        self.distance = 12.0
        self.yaw = np.radians(35.0)
        self.pitch = np.radians(25.0)

    @property
    def eye_world(self):
        c = np.cos(self.pitch)
        offset = np.array([c * np.sin(self.yaw), np.sin(self.pitch), c * np.cos(self.yaw)])
        return self.target_world + self.distance * offset

    def view(self):
        """World -> camera (column vectors): the camera looks down its -z axis."""
        return matrix44.create_look_at(self.eye_world, self.target_world, UP_WORLD, dtype=np.float64).T

    def projection(self, aspect):
        """Camera -> clip, OpenGL depth range [-1, 1]."""
        aspect = max(float(aspect), 1e-6)
        return matrix44.create_perspective_projection(self.fov_y_deg, aspect, self.near, self.far, dtype=np.float64).T

    def orbit(self, dx_pixels, dy_pixels):
        """Drag to turn around the target; pitch stays short of the poles so `up` stays valid."""
        self.yaw -= 0.005 * dx_pixels
        self.pitch = float(np.clip(self.pitch - 0.005 * dy_pixels, -1.5, 1.5))

    def pan(self, dx_pixels, dy_pixels, height_pixels):
        """Drag to move the target in the view plane; a pixel moves the point under it by one pixel."""
        world_per_pixel = 2.0 * self.distance * np.tan(np.radians(self.fov_y_deg) / 2) / max(height_pixels, 1)
        view = self.view()
        right_world, up_world = view[0, :3], view[1, :3]
        self.target_world = self.target_world - world_per_pixel * (dx_pixels * right_world + dy_pixels * up_world)

    def zoom(self, steps):
        """Scroll: each step scales the distance by 0.9 (positive steps move in)."""
        self.distance = float(np.clip(self.distance * 0.9 ** steps, 0.2, 1500.0))

    def follow(self, point_world):
        self.target_world = np.asarray(point_world, dtype=float).copy()

    def frame(self, lo_world, hi_world, aspect=16 / 9):
        """Move so the box [lo, hi] fits the view, keeping the viewing direction."""
        lo_world, hi_world = np.asarray(lo_world, float), np.asarray(hi_world, float)
        self.target_world = (lo_world + hi_world) / 2
        radius = max(np.linalg.norm(hi_world - lo_world) / 2, 0.5)
        half_fov = np.radians(self.fov_y_deg) / 2
        half_fov = min(half_fov, np.arctan(np.tan(half_fov) * aspect))
        self.distance = float(np.clip(radius / np.sin(half_fov), 0.2, 1500.0))

    def ray(self, x_pixels, y_pixels, width, height):
        """The world ray through a window pixel (pyglet's origin: bottom left): (origin, unit direction)."""
        ndc = np.array([2.0 * x_pixels / max(width, 1) - 1.0, 2.0 * y_pixels / max(height, 1) - 1.0])
        inverse = np.linalg.inv(self.projection(width / max(height, 1)) @ self.view())
        near = inverse @ np.array([ndc[0], ndc[1], -1.0, 1.0])
        far = inverse @ np.array([ndc[0], ndc[1], 1.0, 1.0])
        near, far = near[:3] / near[3], far[:3] / far[3]
        direction = far - near
        return near, direction / np.linalg.norm(direction)
