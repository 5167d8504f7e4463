"""The soft mouse joint: a spring-damper pulling a grabbed point of a dynamic body towards a target.

Box2D's samples (the mouse joint) and MuJoCo's perturbation are the models: the user grabs a body
at a point, and each step a spring of natural frequency `hertz` and damping ratio `damping_ratio`,
acting on the body's effective mass at that point, pulls the point towards the target; its force
is at most `max_acceleration` times the body's mass, so a light crate and a car are pulled alike.

Each step gives the impulse of the soft constraint C = p − target (Erin Catto's soft step, as
Box2D v3's mouse joint solves it), with ω = 2π hertz, ζ = damping_ratio, h = dt:

    a1 = 2ζ + h ω,   a2 = h ω a1,   bias_rate = ω / a1,   mass_scale = a2 / (1 + a2)
    J  = −mass_scale K⁻¹ (Ċ + bias_rate C),     |J| ≤ max_acceleration m h
    Ċ  = v + ω_b × r,   K = E / m − [r]× I_world⁻¹ [r]×,   r = p − x,  I_world = R diag(I) Rᵀ

which is the implicit (backward Euler) step of the spring-damper k = m ω², c = 2 m ζ ω on the
effective mass K⁻¹: stable for any stiffness and step. Vectors are world-frame. The joint gives it
as the force F = J / h for the step to come (`Simulation.apply_force`, an input of the timeline
and of recordings), so that a replay applies exactly the recorded pull.
"""
import math
from dataclasses import dataclass

import numpy as np

from physics.math.rotation import cross, hat

HERTZ = 5.0                 # Box2D's samples: 5 Hz, damping ratio 0.7
DAMPING_RATIO = 0.7
MAX_ACCELERATION = 100.0    # m/s²: about 10 g (Box2D's samples allow 1000 m/s²; this keeps a pull gentle)


@dataclass
class MouseJoint:
    """A grab of dynamic `node` (index) at `anchor_body`: the grabbed point relative to the body's
    origin in its own (unscaled) axes, so it moves with the body."""

    node: int
    anchor_body: np.ndarray
    hertz: float = HERTZ
    damping_ratio: float = DAMPING_RATIO
    max_acceleration: float = MAX_ACCELERATION

    @classmethod
    def grab(cls, sim, node, point_world, **options):
        """Grab dynamic `node` (name or index) at world point `point_world`. ValueError for a node
        that is not dynamic or a point that is not 3 finite numbers."""
        index = list(sim.names).index(node) if isinstance(node, str) and node in sim.names else node
        if isinstance(index, str) or not 0 <= int(index) < len(sim.names):
            raise ValueError(f"mouse joint: unknown node {node!r}")
        index = int(index)
        if sim.motion[index] != "dynamic":
            raise ValueError(f"mouse joint: node {sim.names[index]!r} is {sim.motion[index]}; only dynamic bodies can be pulled")
        point = np.asarray(point_world, float)
        if point.shape != (3,) or not np.all(np.isfinite(point)):
            raise ValueError(f"mouse joint: point_world {point_world!r}; expected 3 finite numbers")
        translation, rotation, _ = sim.world_poses()
        joint = cls(index, rotation[index].T @ (point - translation[index]), **options)
        if not (joint.hertz > 0 and joint.damping_ratio >= 0 and joint.max_acceleration > 0):
            raise ValueError(f"mouse joint: hertz {joint.hertz}, damping ratio {joint.damping_ratio}, max acceleration "
                             f"{joint.max_acceleration}; expected > 0, >= 0, > 0")
        return joint

    def point_world(self, sim):
        """The grabbed point where the body has it now (world)."""
        translation, rotation, _ = sim.world_poses()
        return translation[self.node] + rotation[self.node] @ self.anchor_body

    def force(self, sim, target_world):
        """(force_world (3,), point_world (3,)): the pull for the next step (module docstring)."""
        target = np.asarray(target_world, float)
        if target.shape != (3,) or not np.all(np.isfinite(target)):
            raise ValueError(f"mouse joint: target_world {target_world!r}; expected 3 finite numbers")
        world = sim.world()
        i = self.node
        x = np.asarray(world.transform.translation[i], float)
        R = np.asarray(world.transform.rotation[i], float)
        r = R @ self.anchor_body
        point = x + r
        mass = float(sim.mass[i])
        inverse_inertia = R @ np.diag(1.0 / np.asarray(sim.inertia_body[i], float)) @ R.T
        K = np.eye(3) / mass - hat(r) @ inverse_inertia @ hat(r)
        velocity = np.asarray(world.velocity[i], float) + cross(np.asarray(world.omega_vector()[i], float), r)
        h = float(sim.settings.dt)
        omega = 2.0 * math.pi * self.hertz
        a1 = 2.0 * self.damping_ratio + h * omega
        a2 = h * omega * a1
        impulse = -(a2 / (1.0 + a2)) * np.linalg.solve(K, velocity + (omega / a1) * (point - target))
        largest = self.max_acceleration * mass * h
        size = float(np.linalg.norm(impulse))
        if size > largest:
            impulse *= largest / size
        return impulse / h, point
