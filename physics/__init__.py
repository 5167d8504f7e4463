"""Numpy physics for transform hierarchies: exact local/global dynamics, rigid bodies, contacts.

This package never imports anything graphical. Conventions (pinned by tests, stated once in
`physics.math.rotation`): right-handed axes, column vectors, active rotations, quaternions (w, x, y, z)
with the Hamilton product, angular velocity omega with dR/dt = hat(omega) R (parent frame).
"""
import importlib
import os

# The contact sweep forks onto two threads once per sweep (`physics.constraints.gauss_seidel.partition_elements`)
# through numba's OpenMP layer, whose waiting threads spin by default (libgomp: 300,000 spins)
# before they sleep. On a shared machine under load the spinning thread holds the core the other
# needs: the 1,000-box heap took 123 ms a step at a load of 5.9 instead of 7.4 (one thread, or
# threads that sleep). A short spin keeps the wake-up cheap on a quiet machine and yields on a busy
# one. Read by libgomp when numba first loads it, so set here, before any compiled sweep runs; the
# environment's own value wins.
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

# Public names, imported on first use so that `import physics` stays cheap (numba compiles lazily).
_EXPORTS = {
    "Transform": "physics.math.transform",
    "DynamicTransform": "physics.math.transform",
    "Dual": "physics.math.dual",
    "Hierarchy": "physics.model.hierarchy",
    "NodeState": "physics.model.hierarchy",
    "ContiguousList": "physics.containers.contiguous_list",
    "pairs": "physics.containers.pairs",
    "distinct_pairs": "physics.containers.pairs",
    "distinct_pair_indices": "physics.containers.pairs",
    "Simulation": "physics.pipeline.simulation",
    "DivergenceError": "physics.pipeline.stages",
    "RunawayError": "physics.pipeline.stages",
    "OutOfBoundsError": "physics.pipeline.stages",
    "PenetrationError": "physics.pipeline.stages",
    "OverlapWarning": "physics.pipeline.simulation",
    "MassRatioWarning": "physics.pipeline.simulation",
    "OverlapError": "physics.pipeline.simulation",
    "Snapshot": "physics.pipeline.snapshot",
    "SceneError": "physics.io.scene",
    "load_scene": "physics.io.scene",
    "scene_from_arrays": "physics.io.scene",
    "load_urdf": "physics.io.urdf",
    "load_mjcf": "physics.io.mjcf",
    "ModelWarning": "physics.io.articulated",
    "to_mjcf": "physics.io.mjcf_export",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'physics' has no attribute {name!r}")
