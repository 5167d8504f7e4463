"""Numpy physics for transform hierarchies: exact local/global dynamics, rigid bodies, contacts.

This package never imports anything graphical. Conventions (pinned by tests, stated once in
`physics.rotation`): right-handed axes, column vectors, active rotations, quaternions (w, x, y, z)
with the Hamilton product, angular velocity omega with dR/dt = hat(omega) R (parent frame).
"""
import importlib
import os

# The contact sweep forks onto two threads once per sweep (`physics.gauss_seidel.partition_elements`)
# through numba's OpenMP layer, whose waiting threads spin by default (libgomp: 300,000 spins)
# before they sleep. On a shared machine under load the spinning thread holds the core the other
# needs: the 1,000-box heap took 123 ms a step at a load of 5.9 instead of 7.4 (one thread, or
# threads that sleep). A short spin keeps the wake-up cheap on a quiet machine and yields on a busy
# one. Read by libgomp when numba first loads it, so set here, before any compiled sweep runs; the
# environment's own value wins.
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

# Public names, imported on first use so that `import physics` stays cheap (numba compiles lazily).
_EXPORTS = {
    "Transform": "physics.transform",
    "DynamicTransform": "physics.transform",
    "Dual": "physics.dual",
    "Hierarchy": "physics.hierarchy",
    "NodeState": "physics.hierarchy",
    "ContiguousList": "physics.contiguous_list",
    "pairs": "physics.pairs",
    "distinct_pairs": "physics.pairs",
    "distinct_pair_indices": "physics.pairs",
    "Simulation": "physics.simulation",
    "DivergenceError": "physics.stages",
    "RunawayError": "physics.stages",
    "OutOfBoundsError": "physics.stages",
    "PenetrationError": "physics.stages",
    "OverlapWarning": "physics.simulation",
    "OverlapError": "physics.simulation",
    "Snapshot": "physics.snapshot",
    "SceneError": "physics.scene",
    "load_scene": "physics.scene",
    "scene_from_arrays": "physics.scene",
    "load_urdf": "physics.urdf",
    "load_mjcf": "physics.mjcf",
    "ModelWarning": "physics.articulated",
    "to_mjcf": "physics.mjcf_export",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'physics' has no attribute {name!r}")
