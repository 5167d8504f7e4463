"""Bodies carried by a moving kinematic surface (a turntable, the tank's turning deck) stay put on it
when friction can hold them (physics.constraints.solver: the surface velocity a contact row targets is the
surface's at the end of the step, where the free step leaves the body's velocity)."""
import numpy as np
import pytest

from physics.io.scene import scene_from_dict
from physics.pipeline.simulation import Simulation


def turntable(omega, radius, dt):
    """A kinematic disc turning at `omega` (rad/s) about y, a box resting on it at `radius`, at rest
    relative to the disc (local velocity 0): friction μ = 1 holds it while ω² r < μ g."""
    return Simulation(scene_from_dict({"world": {"dt": dt}, "node": [
        {"name": "disc", "motion": "kinematic", "angular_velocity": [0.0, omega, 0.0],
         "shape": {"type": "box", "size": [8.0, 0.2, 8.0]}, "friction": 1.0},
        {"name": "box", "parent": "disc", "motion": "dynamic", "mass": 1.0, "translation": [radius, 0.2, 0.0],
         "shape": {"type": "box", "size": [0.2, 0.2, 0.2], "collide_with_parent": True}, "friction": 1.0}]}))


# Not explicit-euler: its positions move with the start-of-step velocity, so no target velocity can
# keep the box on the circle (0.17 m in 10 s at 1/60, O(h); docs/fidelity.md).
@pytest.mark.parametrize("integrator", ["semi-implicit-euler", "implicit-euler", "lie-midpoint", "rk4",
                                        "implicit-midpoint"])
def test_a_box_on_a_turntable_stays_where_it_was_put(integrator):
    """ω = 1 rad/s, r = 2 m: the centripetal 2 m/s² is well inside μ g. A surface velocity taken at
    the start of the step lags the turn by ω h and let the box creep outward at ~v ω h / 2 (0.17 m
    in 10 s at h = 1/60); one led by h crept inward as fast under semi-implicit Euler, and one led
    by h / 2 outward under implicit Euler. Led by the integrator's surface_lead the residual creep is O(h²) (2.8 mm
    at 1/60 at most). Bound 5 mm over 10 s at both step sizes."""
    for dt in (1 / 60, 1 / 240):
        sim = turntable(1.0, 2.0, dt)
        sim.set("integrator", integrator)
        box = sim.names.index("box")
        start = sim.local().transform.translation[box].copy()
        sim.step(int(round(10.0 / dt)))
        moved = sim.local().transform.translation[box] - start
        assert np.linalg.norm(moved[[0, 2]]) < 5e-3, (dt, moved)
