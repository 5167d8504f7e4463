"""How big a bounding sphere looks on screen: frustum culling and level of detail, vectorized.

Column-vector convention (docs/architecture.md): `x_clip = VP x_world`. A world point is
inside the view volume iff `-w <= x, y, z <= w` for `(x, y, z, w) = VP (p, 1)`; each of the six
inequalities is a plane `(row3 ± row_k) · (p, 1) >= 0` (Gribb and Hartmann, "Fast extraction of
viewing frustum planes from the world-view-projection matrix", 2001). Normalizing a plane's
normal makes the left side a signed distance, so a sphere of radius r is wholly outside iff
its centre is more than r behind one plane.

On-screen size: a sphere of radius r at view depth w (= the clip w of its centre for a
perspective projection, the distance along the viewing axis) spans about `r f / w` pixels,
`f = P[1, 1] * height / 2` the focal length in pixels. This is the small-angle size at the
centre of the view; off-axis and close up the true silhouette is larger (an ellipse), so the
renderer's thresholds are in "about a pixel", never exact.
"""
import numpy as np


def frustum_planes(view_projection):
    """(6, 4) planes `(n, d)` with unit n, pointing into the view volume: n · p + d >= 0 inside."""
    m = np.asarray(view_projection, dtype=float)
    if m.shape != (4, 4):
        raise ValueError(f"frustum_planes: expected a (4, 4) matrix, got shape {m.shape}")
    planes = np.array([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] + m[2], m[3] - m[2]])
    return planes / np.linalg.norm(planes[:, :3], axis=1, keepdims=True)


def screen_radius(center_world, radius_world, view_projection, focal_px):
    """About how many pixels each bounding sphere's radius spans; 0 when wholly outside the frustum.

    center_world (N, 3), radius_world (N,) or scalar -> (N,) pixels, `r f / w`; inf when the
    sphere reaches the eye's plane (w <= r: it may fill the screen). Non-finite centres give 0
    (nothing sensible to draw; the viewer pauses on them anyway)."""
    center = np.asarray(center_world, dtype=float).reshape(-1, 3)
    radius = np.broadcast_to(np.asarray(radius_world, dtype=float), center.shape[:1])
    planes = frustum_planes(view_projection)
    distance = center @ planes[:, :3].T + planes[:, 3]                     # (N, 6) signed, m
    inside = np.all(distance >= -radius[:, None], axis=1)
    w = center @ np.asarray(view_projection, dtype=float)[3, :3] + view_projection[3][3]
    with np.errstate(divide="ignore", invalid="ignore"):
        pixels = np.where(w > radius, radius * focal_px / w, np.inf)
    return np.where(inside & np.isfinite(w), pixels, 0.0)
