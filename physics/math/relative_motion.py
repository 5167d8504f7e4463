"""Motion seen from a moving frame: the transport theorem, batch-first, every vector in world axes.

A point P with world position x, velocity v and acceleration a, seen from a rigid frame F whose
origin has world position x_F, velocity v_F, acceleration a_F and which turns at ω_F with angular
acceleration α_F (world), differentiating x = x_F + R_F p̃ twice (p̃: P in F's axes):

    r     = x − x_F                                       (P relative to F's origin)
    v_rel = v − v_F − ω_F × r                             (R_F dp̃/dt: P's velocity relative to F)
    a     = a_rel + a_F + α_F × r + ω_F × (ω_F × r) + 2 ω_F × v_rel
            relative  frame  Euler   centrifugal        Coriolis

with a_rel = R_F d²p̃/dt², P's acceleration relative to F. "The Dynamics of a Transform Hierarchy"
(docs/references.md; the global-to-local conversion is this identity solved for a_rel, with F the parent).
The four transport terms here carry the sign with which they add up to the world acceleration;
the inertial (fictitious) accelerations an observer riding F feels are their negatives, which is
how `physics.dynamics.integrators.inertial_accelerations` reports them for each body's parent.

A uniform scale of F changes no term: r, v_rel and a_rel are world-length vectors.
"""
import numpy as np

from physics.math.rotation import cross

TERMS = ("relative", "frame", "euler", "centrifugal", "coriolis")


def _rows(name, value, batch=None):
    array = np.asarray(value, dtype=float)
    if array.ndim != 2 or array.shape[1] != 3 or (batch is not None and array.shape[0] != batch):
        expected = f"({batch}, 3)" if batch is not None else "(B, 3)"
        raise ValueError(f"{name}: got shape {array.shape}; expected {expected}")
    return array


def relative_velocity(x, v, frame_x, frame_v, frame_omega):
    """v_rel = v − v_F − ω_F × (x − x_F), world axes, (B, 3) each."""
    batch = _rows("x", x).shape[0]
    r = _rows("x", x) - _rows("frame_x", frame_x, batch)
    return _rows("v", v, batch) - _rows("frame_v", frame_v, batch) - cross(_rows("frame_omega", frame_omega, batch), r)


def transport_terms(x, v, a, frame_x, frame_v, frame_a, frame_omega, frame_alpha):
    """The transport theorem's terms of P's world acceleration (module docstring), dict TERMS ->
    (B, 3) world axes; they sum to `a` (to round-off: `relative` is a less the other four)."""
    batch = _rows("x", x).shape[0]
    r = _rows("x", x) - _rows("frame_x", frame_x, batch)
    omega = _rows("frame_omega", frame_omega, batch)
    v_rel = _rows("v", v, batch) - _rows("frame_v", frame_v, batch) - cross(omega, r)
    terms = {
        "frame": _rows("frame_a", frame_a, batch).copy(),
        "euler": cross(_rows("frame_alpha", frame_alpha, batch), r),
        "centrifugal": cross(omega, cross(omega, r)),
        "coriolis": 2.0 * cross(omega, v_rel),
    }
    terms["relative"] = _rows("a", a, batch) - (terms["frame"] + terms["euler"] + terms["centrifugal"] + terms["coriolis"])
    return {name: terms[name] for name in TERMS}
