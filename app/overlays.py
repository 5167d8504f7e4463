"""Overlay geometry: node frames, arrows, contact markers, as line lists (segments (K, 2, 3), colours).

Everything is world frame and batch-first; each overlay becomes one `Renderer.draw_lines` call.
An arrow from `origin` along `vector` is its shaft plus two head strokes in a plane containing
the shaft; arrows shorter than `MIN_LENGTH` are dropped so resting bodies show nothing. Given
each origin's `pixels_per_metre` on screen (app.culling.screen_radius of a 1 m sphere: 0 off
screen), arrows and frames shorter than `MIN_PIXELS` there are dropped too: with thousands of
nodes in view most are invisible specks, and building and drawing them is most of the cost.
"""
import numpy as np

MIN_LENGTH = 1e-4  # m: shorter arrows are not drawn
MIN_PIXELS = 1.0   # nor those shorter than this on screen

AXIS_COLORS = np.array([[0.9, 0.15, 0.15], [0.15, 0.8, 0.15], [0.2, 0.3, 0.95]])
COLORS = {
    "velocity": (1.0, 0.85, 0.1),
    "angular_velocity": (0.95, 0.3, 0.95),
    "angular_momentum": (0.1, 0.9, 0.9),
    # inertial accelerations of dynamic children (physics' names), each its own colour
    "frame": (1.0, 0.55, 0.0),
    "euler": (0.55, 0.25, 0.9),
    "centrifugal": (0.9, 0.1, 0.1),
    "coriolis": (0.1, 0.65, 0.2),
    "contact_point": (1.0, 0.1, 0.1),
    "contact_normal": (1.0, 1.0, 1.0),
}


def frames(translation_world, rotation_world, length, pixels_per_metre=None):
    """Three axis segments per node: x red, y green, z blue; (N*3, 2, 3), (N*3, 3). `length`
    scalar or (N,) m."""
    origin = np.asarray(translation_world, float).reshape(-1, 3)
    rotation = np.asarray(rotation_world, float).reshape(-1, 3, 3)
    length = np.broadcast_to(np.asarray(length, float), origin.shape[:1])
    if pixels_per_metre is not None:
        keep = length * pixels_per_metre >= MIN_PIXELS
        origin, rotation, length = origin[keep], rotation[keep], length[keep]
    axes_world = np.swapaxes(rotation, -1, -2)  # rows = the node's axes
    tips = origin[:, None, :] + length[:, None, None] * axes_world
    segments = np.stack([np.broadcast_to(origin[:, None, :], tips.shape), tips], axis=2).reshape(-1, 2, 3)
    return segments, np.tile(AXIS_COLORS, (len(origin), 1))


def arrows(origin_world, vector_world, scale, color, pixels_per_metre=None):
    """Arrows `origin -> origin + scale * vector`: 3 segments each; (K, 2, 3), (K, 3)."""
    origin = np.asarray(origin_world, float).reshape(-1, 3)
    shaft = scale * np.asarray(vector_world, float).reshape(-1, 3)
    length = np.linalg.norm(shaft, axis=1)
    keep = np.isfinite(length) & (length > MIN_LENGTH)
    if pixels_per_metre is not None:
        keep &= length * pixels_per_metre >= MIN_PIXELS
    origin, shaft, length = origin[keep], shaft[keep], length[keep, None]
    tip = origin + shaft
    direction = shaft / np.where(length > 0, length, 1.0)
    # a side direction perpendicular to the shaft: cross with whichever axis is least parallel
    helper = np.where(np.abs(direction[:, 1:2]) < 0.9, [[0.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]])
    side = np.cross(direction, helper)
    side /= np.linalg.norm(side, axis=1, keepdims=True)
    head = 0.2 * np.minimum(length, 1.0)
    back = tip - head * direction
    segments = np.stack([
        np.stack([origin, tip], 1),
        np.stack([tip, back + 0.5 * head * side], 1),
        np.stack([tip, back - 0.5 * head * side], 1),
    ], axis=1).reshape(-1, 2, 3)
    return segments, np.broadcast_to(np.asarray(color, float), (len(segments), 3))


def crosses(points_world, size, color, pixels_per_metre=None):
    """A small 3-axis cross at each point; (K*3, 2, 3), (K*3, 3)."""
    points = np.asarray(points_world, float).reshape(-1, 3)
    if pixels_per_metre is not None:
        points = points[2 * size * pixels_per_metre >= MIN_PIXELS]
    offsets = size * np.eye(3)
    segments = np.stack([points[:, None, :] - offsets, points[:, None, :] + offsets], axis=2).reshape(-1, 2, 3)
    return segments, np.broadcast_to(np.asarray(color, float), (len(segments), 3))


def concatenate(parts):
    """Join several (segments, colours) pairs into one line list (one draw call)."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros((0, 2, 3)), np.zeros((0, 3))
    return np.concatenate([p[0] for p in parts]), np.concatenate([np.asarray(p[1]) for p in parts])
