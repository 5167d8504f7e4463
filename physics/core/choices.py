"""The settings that are a choice among names: each spelled, explained and checked here, once.

A choice is a name where people meet it (the scene format's `[world]`, the command lines, the
panel, `Settings.set`) and an integer where a kernel meets it: the kernels compare that integer with
the named constants below (`gyro == GYROSCOPIC_IMPLICIT`), never with a literal. Nothing here
imports the rest of the package, so every layer can read it without compiling anything.
"""
from typing import NamedTuple


class Choice(NamedTuple):
    """One setting's options: `meanings` name -> one line on what it does (in the order shown to
    people), `codes` name -> the integer the kernels receive."""

    key: str
    meanings: dict
    codes: dict

    @property
    def names(self):
        return tuple(self.meanings)

    @property
    def expected(self):
        return f"expected one of {', '.join(self.meanings)}"

    def check(self, value):
        """`value` if it is one of the names, else ValueError naming the key and the value."""
        if not isinstance(value, str) or value not in self.codes:
            raise ValueError(f"{self.key}: got {value!r}; {self.expected}")
        return value


def _choice(key, meanings, codes=None):
    return Choice(key, meanings, dict(zip(meanings, range(len(meanings)))) if codes is None else codes)


# The gyroscopic term ω × Iω of Euler's equations ("From Torque to Angular Acceleration…
# Correctly.", physics.model.rigid_body).
GYROSCOPIC_OFF, GYROSCOPIC_EXPLICIT, GYROSCOPIC_IMPLICIT = 0, 1, 2
GYROSCOPIC = _choice("gyroscopic", {
    "off": "dropped: without torque omega_body stays constant (no precession, no Dzhanibekov flip)",
    "explicit": "kept in the right-hand side and integrated like any torque",
    "implicit": "backward Euler on the torque-free rotor (Newton), then integrated without it: stable, dissipative",
}, {"off": GYROSCOPIC_OFF, "explicit": GYROSCOPIC_EXPLICIT, "implicit": GYROSCOPIC_IMPLICIT})

# Dynamic bodies' integrators (physics.dynamics.integrators; "The Mathematics of Havok's Solver" Part II §2.1).
INTEGRATOR = _choice("integrator", {
    "explicit-euler": "explicit Euler, 1st order: the cheapest step, but it gains energy every step, so spins "
                      "speed up and orbits spiral out",
    "semi-implicit-euler": "semi-implicit (symplectic) Euler, 1st order: the games' default, one force "
                           "evaluation a step; energy stays bounded on average but is not kept",
    "implicit-euler": "implicit Euler with Newton, 1st order: stable at any step, but it drains energy (a "
                      "damping the model does not have); a Newton solve a step",
    "implicit-midpoint": "implicit midpoint rule with the exponential map, 2nd order: keeps a free body's energy "
                         "and |L|, lets the direction of L drift; a small solve a step",
    "rk4": "classical Runge-Kutta, 4th order: the most accurate over a short run at four force evaluations a "
           "step, MuJoCo's RK4 reference; not conservative, so energy drifts over long runs. Its stages cannot "
           "hold a joint: a scene with joints is stepped by lie-midpoint-4, 4th order too",
    "lie-midpoint": "implicit midpoint + Cayley map, 2nd order: keeps a free body's energy, |L| and world L to "
                    "round-off for ever (the T-handle flips on and on); a small solve a step",
    "lie-midpoint-4": "triple-jump composition of lie-midpoint, 4th order: the same conservation with the "
                      "accuracy of rk4, at three lie-midpoint steps' cost",
})


# How the joints are held (physics.pipeline.stages `step_context`, `stage_joints`). "projected":
# after the velocity solve their bodies are projected onto the constraints (RATTLE under the
# integrators whose traits say so, SHAKE or post-stabilization under the others): exact to the
# projection's tolerance, at the cost of a Newton system over every joint row, which a net's loops
# fill. "soft": the velocity solve alone holds them, each row's error fed back at the ERP rate with
# the CFM's give (ERP/CFM, "The Mathematics of Havok's Solver" §3.3.2; Box2D v3's soft step): a
# sweep's work linear in the rows, never a retry, and the joints give a little where they are
# pulled hard (docs/fidelity.md, "Soft joints").
JOINT_SOLVE = _choice("joint_solve", {
    "projected": "after the solve, projected onto their constraints (RATTLE, SHAKE): exact, a Newton "
                 "system over every joint row, which a net's loops fill",
    "soft": "held by the velocity solve alone, their error fed back at the ERP rate, the bodies stepped by "
            "semi-implicit Euler whatever the integrator (Box2D's soft step): linear in the joints, never retried; "
            "they give millimetres, centimetres where pulled hard (more on a large net's hooks), and drain energy",
})


class IntegratorTraits(NamedTuple):
    """What the rest of the step needs to know of an integrator (the contact and joint stages,
    physics.pipeline.stages), beside its name and meaning above."""

    position_fraction: float    # of an end-of-step velocity change, what its position update sees
    surface_lead: float         # steps ahead a moving kinematic surface's velocity is taken
    rattle: bool                # its bodies in joints are stepped by RATTLE (physics.constraints.rattle)
    triple_jump: bool           # RATTLE's constrained step is composed by the triple jump (4th order)


# - position_fraction: the solve stage's impulses change the end-of-step velocity; explicit Euler's
#   positions saw none of it, semi-implicit and implicit Euler's all, the midpoint schemes' half.
# - surface_lead: a body at rest on a moving kinematic surface lands where the surface does when the
#   contact rows take the surface's velocity this far ahead (physics.constraints.solver): semi-implicit
#   Euler's chord in the parent's non-rotating frame wants the mid-step velocity, every other scheme
#   the end-of-step one.
# - rattle: the kick–drift–kick schemes, whose rotation drift the joint projection reproduces, and
#   semi-implicit Euler, a kick and a drift (the positions see all of the joints' impulse) unless
#   settings.shake asks for SHAKE. RATTLE's position projection turns a jointed body by the
#   Lie–midpoint rotor drift, so under semi-implicit Euler a jointed body's translation is symplectic
#   Euler's constrained form and its rotation the Lie–midpoint one: first order, the energy
#   oscillating by O(h) without drift (a pendulum at 60°: ±2.5 % at h = 1/60, ±0.8 % at the default
#   sub-step of 1/180, docs/fidelity.md "The default integrator"). The others keep the velocity
#   solve plus the position projection (SHAKE with settings.shake).
INTEGRATOR_TRAITS = {
    "explicit-euler": IntegratorTraits(0.0, 1.0, False, False),
    "semi-implicit-euler": IntegratorTraits(1.0, 0.5, True, False),
    "implicit-euler": IntegratorTraits(1.0, 1.0, False, False),
    "implicit-midpoint": IntegratorTraits(0.5, 1.0, False, False),
    "rk4": IntegratorTraits(0.5, 1.0, False, False),
    "lie-midpoint": IntegratorTraits(0.5, 1.0, True, False),
    "lie-midpoint-4": IntegratorTraits(0.5, 1.0, True, True),
}
assert tuple(INTEGRATOR_TRAITS) == INTEGRATOR.names

# The scheme a topology with joints is stepped by where the integrator's own cannot hold a joint.
# RK4's four stages take forces at four states and combine them; a joint held by constraint rows
# (maximal coordinates) takes its force from the whole step, so RK4 with joints fell back to the
# velocity solve and a position projection, first order (the iiwa's swing 14 cm from MuJoCo's RK4
# after 1 s at dt 1 ms). MuJoCo's RK4 keeps its order by integrating joint coordinates, where no
# constraint is left. Here the 4th-order constrained step is RATTLE composed by the triple jump:
# lie-midpoint-4 (docs/fidelity.md, "Joints under rk4").
JOINTED_SCHEME = {"rk4": "lie-midpoint-4"}


# Soft joints (JOINT_SOLVE "soft") are Box2D's soft step, a kick and a drift: their bodies step by
# semi-implicit Euler whatever the integrator, whose positions see all of the solve's change. Under
# the midpoint schemes the positions see half of it, and the bias's feedback pumped energy into a
# soft pendulum's small swing (a fifth more swing energy in five periods at 10°, h = 1/240).
SOFT_SCHEME = "semi-implicit-euler"


def stepped_integrator(integrator, jointed, soft=False):
    """The scheme the step runs for the chosen `integrator` in a topology with joints (`jointed`)
    or without: SOFT_SCHEME where the joints are `soft`, else JOINTED_SCHEME's, else the
    integrator itself."""
    if not jointed:
        return integrator
    return SOFT_SCHEME if soft else JOINTED_SCHEME.get(integrator, integrator)

# Which integrators keep their order in which gyroscopic mode (docs/fidelity.md): said by the
# command lines' help, the sweep's summary and the panel's tooltip.
ORDER_NOTE = (
    "note: with gyroscopic = implicit (the scene default: Bullet's backward-Euler gyroscopic step, split from "
    "the integrator) every integrator but lie-midpoint and lie-midpoint-4 (whose gyroscopic term is part of "
    "their own solve) is first order in rotation; gyroscopic = explicit gives implicit-midpoint its 2nd order "
    "and rk4 its 4th (docs/fidelity.md).")

# Kinematic rotation (physics.dynamics.kinematics, "Numerical Integration for Rotational Dynamics"): the
# number of Magnus terms, which is the code the kernels receive.
ROTATION_UPDATE = _choice("rotation_update", {
    "magnus1": "Omega1: 2nd order",
    "magnus2": "Omega1 + Omega2: 4th order",
    "magnus3": "Omega1 + Omega2 + Omega3",
}, {"magnus1": 1, "magnus2": 2, "magnus3": 3})

EXPONENTIAL_EXACT, EXPONENTIAL_TRUNCATED = 0, 1
EXPONENTIAL = _choice("exponential", {
    "exact": "the exponential map of the Magnus vector",
    "truncated": "its normalized 3rd-order quaternion series",
}, {"exact": EXPONENTIAL_EXACT, "truncated": EXPONENTIAL_TRUNCATED})
