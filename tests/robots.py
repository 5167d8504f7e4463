"""Shared helpers of tests/test_urdf.py and tests/test_mjcf.py: world poses and rigid-assembly
inertials of an imported scene, in the model's own (z-up) frame."""

import numpy as np

from physics import DynamicTransform, Hierarchy, Transform
from physics.io.articulated import Z_UP
from physics.math.rotation import matrix_from_quaternion


def model_poses(scene):
    """name -> (t (3,), R (3, 3)) of every node in the model frame (the scene's world turned back to z-up),
    composed by the project's transform hierarchy."""
    local = DynamicTransform(Transform(scene.translation, matrix_from_quaternion(scene.rotation), scene.scale))
    world = Hierarchy(scene.parent, local).world().transform
    t, R = Z_UP.T @ world.translation[..., None], Z_UP.T @ world.rotation
    return {name: (t[i, :, 0], R[i]) for i, name in enumerate(scene.names)}


def composite(parts):
    """Mass, centre and tensor about the centre of (mass, centre (3,), tensor (3, 3)) parts, one frame."""
    mass = sum(m for m, _, _ in parts)
    centre = sum(m * c for m, c, _ in parts) / mass
    tensor = np.zeros((3, 3))
    for m, c, I in parts:
        d = c - centre
        tensor += I + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, centre, tensor


def scene_assemblies(scene, joint_names=()):
    """link name -> (mass, centre, tensor) of each moving link's dynamic nodes (LINK:body and its
    gimbal stages LINK:JOINT), model frame."""
    poses = model_poses(scene)
    groups = {}
    for i, name in enumerate(scene.names):
        if scene.motion[i] != "dynamic":
            continue
        link = name[:-len(":body")] if name.endswith(":body") else \
            next(name[:-len(joint) - 1] for joint in joint_names if name.endswith(":" + joint))
        t, R = poses[name]
        groups.setdefault(link, []).append((scene.mass[i], t, R @ np.diag(scene.inertia_body[i]) @ R.T))
    return {link: composite(parts) for link, parts in groups.items()}


def assert_assembly_equal(ours, theirs, what):
    """Mass to 1e-12 relative, centre to 1e-12 m, tensor to 1e-12 of its largest moment: both sides
    are the same sums of the same float64 inputs; rounding leaves ~1e-15."""
    m, c, I = ours
    m2, c2, I2 = theirs
    assert abs(m - m2) <= 1e-12 * m2, f"{what}: mass {m} vs {m2}"
    assert np.abs(c - c2).max() <= 1e-12, f"{what}: centre {c} vs {c2}"
    assert np.abs(I - I2).max() <= 1e-12 * np.abs(I2).max(), f"{what}: inertia\n{I}\nvs\n{I2}"
