"""The Simulation: a hierarchy of fixed, kinematic and dynamic nodes, stepped as named stages.

"The Dynamics of a Transform Hierarchy" ("Converting Global Dynamics To Local Dynamics", "Local and
Global Deltas", "Counteracting the Inherited Effect from the Parent") and "Numerical Integration for
Rotational Dynamics" (docs/references.md); interfaces in docs/architecture.md ("The Simulation
interface", "Integrators interface"). Sleeping: physics.sleeping.

Model and Data (Pinocchio's split). `Simulation.model` (physics.model.Model) is what stays
constant: body parameters (names, motion types, masses, inertias, applied forces, kinematic
accelerations as the scene gives them) and the topology derived from the parent array (slots,
generations, nearest dynamic ancestors, depths); a reparent replaces it by the next topology's.
`names`, `motion`, `shapes`, `mass`, `inertia_body` and `parent` read it. `Simulation.data`
(physics.data.Data) holds the state the steps change:
- `local`: every node's local state, parent frame (T1, R1, S1, v1, a1, omega_local, alpha1), the
  hierarchy's own;
- `omega_body` (D, 3): each dynamic body's angular velocity relative to the world in body axes,
  the integrators' own state (converting frames every step would add round-off drift); the
  hierarchy's `omega_local` of a dynamic node is derived from it (`omega_local_from_body`);
- the kinematic nodes' contiguous state `kinematic` and their prescribed local accelerations
  `kin_acceleration`, `kin_alpha` (K, 3) (the scene's, until a reparent converts them);
- the clock, sleep timers and what sleeping bodies hold, the last solver stage's share of the
  accelerations, the RATTLE hint.
The solver (physics.solver.SceneSolver) keeps its warm starts, manifolds and joints (`snapshot`
takes them too).

Trees. A body with a dynamic ancestor (a carried body, in generation g ≥ 1 = its number of dynamic
strict ancestors: the car's cargo) sits in a frame whose motion over the step is itself being
integrated, so it cannot be prescribed in advance: extrapolated at the start-of-step acceleration it
made every scheme 1st order (5.4 cm off a free child's world line after 2 s at 1/60). The dynamic
stage therefore integrates a carried body's world motion — in world terms its equations are a free
body's, the hierarchy between it and the root entering only through its pose — and expresses the
result in its parent's frame at the end of the step, generation after generation, parents first
(`place_bodies`, "Converting Global Dynamics To Local Dynamics"): a tree is one system, each body at
its integrator's order and with a free body's momentum (tests/test_trees.py). A body whose
ancestors are kinematic or fixed is integrated in its parent's frame, whose motion over the step is
prescribed (physics.integrators, `Frame`). The reported local accelerations of queries are settled
one generation per compiled world pass (`_sync`): a body's needs its parent's world acceleration.

Motion types: fixed (local state constant), kinematic (constant local a, alpha; exact translation
and Magnus rotation, physics.kinematics), dynamic (rigid body, centre of mass at its origin,
physics.integrators). Impulses change only dynamic bodies; with `counteract` their nearest dynamic
descendants keep their world motion (the car crash), kinematic and fixed descendants always follow.
"""
import math
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from physics.hierarchy import Hierarchy, NodeState
from physics.integrators import TRIPLE_JUMP, Frame, advance_bodies, inertial_accelerations, \
    local_accelerations, omega_local_from_body
from physics import profile
from physics.body_passes import NO_ROWS, DynamicBodies, DynamicInputs, NodeArrays, dynamic_inputs, first_beyond_reach, \
    first_divergent, keep_momentum, move_bodies, place_bodies, rows_times, rows_transposed_times, scatter_motion, \
    solve_rows, solver_bodies
from physics.kinematics import advance_kinematic
from physics.data import Data, Motion
from physics.model import Model

from physics.rotation import cross
from physics.scene import Scene, load_scene
from physics.snapshot import Snapshot, scene_fingerprint
from physics.settings import Settings
from physics.sleeping import Bodies, LocalMotion, hold, parent_motion, sleep_islands, wake_on_field
from physics.restorable import Restorable
from physics.validation import LENGTH_MAX, SPEED_MAX

_STALE, _MOVING, _COMPLETE = 0, 1, 2
# Fraction of an end-of-step velocity change each integrator's position update sees (_stage_contacts).
POSITION_FRACTION = {"explicit-euler": 0.0, "semi-implicit-euler": 1.0, "implicit-euler": 1.0}
# How far ahead, in steps, the contact rows take a moving kinematic surface's velocity so that a body
# at rest on it lands where the surface does (physics.solver's surface velocities): semi-implicit
# Euler's chord in the parent's non-rotating frame wants the mid-step velocity, every other scheme
# the end-of-step one.
SURFACE_LEAD = {"semi-implicit-euler": 0.5}
# Integrators whose bodies in joints are stepped by RATTLE (`physics.rattle`): the kick–drift–kick
# schemes whose rotation drift the joint projection reproduces, and semi-implicit Euler, a kick and
# a drift (the positions see all of the joints' impulse), unless settings.shake asks for SHAKE.
# RATTLE's position projection turns a jointed body by the Lie–midpoint rotor drift, so under
# semi-implicit Euler a jointed body's translation is symplectic Euler's constrained form and its
# rotation the Lie–midpoint one: first order, the energy oscillating by O(h) without drift (a
# pendulum at 60°: ±2.5 % at h = 1/60, ±0.8 % at the default sub-step of 1/180, docs/fidelity.md
# "The default integrator"). The others keep the velocity solve plus the position projection
# (SHAKE with settings.shake, `SceneSolver.post_stabilize`).
RATTLE_INTEGRATORS = ("semi-implicit-euler", "lie-midpoint", "lie-midpoint-4")
# A RATTLE sub-step is taken again as two halves, down to 2^-RATTLE_HALVINGS of it
# (`Simulation._rattle_substep`), where its position projection finds no root along the
# start-of-step rows (a whip crack of the chain: the links turn so far within the step that
# J(q) M⁻¹ J₀ᵀ turns singular before g = 0), or where the drift left the constraint by more than
# RATTLE_STEP_ERROR of the joint's lever before the projection: a link of lever r turning by ωh in
# the step leaves it by r (ωh)²/2, so 0.016 is a turn of 0.18 rad (2 mm on the chain's 0.125 m
# half-links). Past it a whip crack's step costs or adds joules of the chain's 98 J: at 0.024–0.032
# the 10 s loss of chain.toml ranged from −2 % to 17 % with the velocity solver's iteration count,
# at 0.016 from 3 % to 6 %.
RATTLE_HALVINGS = 4
RATTLE_STEP_ERROR = 0.016
# Divergence (`DivergenceError`): a moving node's local state must stay finite and within ten times
# the ranges a scene may start in (physics.validation): past them the products a step forms are no
# longer guaranteed finite, and a body there has run away (an explosion, or energy gained without
# input). Checked after the free motion and after the solver of every sub-step, in one compiled pass
# (free bodies: inside the integrator's pass, `_free_substep`).
DIVERGENCE_LENGTH = 10 * LENGTH_MAX     # m
DIVERGENCE_SPEED = 10 * SPEED_MAX       # m/s and rad/s
# Reach (`Simulation._hand_off`): a loose dynamic body — parented, in no joint — farther than REACH from
# its parent's origin leaves the parent for the world, keeping its world motion. Its local dynamics
# in a turning frame carry the frame's transport terms, which grow with the distance (ω × (ω × r),
# α × r, and a local velocity of size |ω| r to cancel against); integrated far out they stop being
# energy-stable (a ball rolling away from a yawing turret gained 12 → 1,336 m/s tens of kilometres
# out), while in the world frame the same body is just a body. tests/test_reach.py measures both.
REACH = 1000.0              # m
# Runaway (`RunawayError`): a scene with no driver (no moving kinematic node, no applied force or
# torque) can gain energy only through inputs (settings, impulses, reparenting). Once a simulated
# second the total energy is compared with its value after the last input, taken before the next
# step starts (the reference is never re-taken within a run otherwise: the reach policy's hand-off
# keeps every body's world motion, so it is no input, and a reference taken in the middle of a
# blow-up would let it grow on); growth beyond what would double the kinetic energy, lift every
# body by the scene's size and set it moving at RUNAWAY_SPEED stops the run. Drift of an integrator
# or a joint (a few per cent) stays far below that.
RUNAWAY_EVERY = 1.0         # s of simulated time
RUNAWAY_SPEED = 1.0         # m/s
_QUANTITIES = ("translation", "rotation", "velocity", "angular velocity")
_NO_PAIRS = np.zeros((0, 2), np.int64)     # the sleep stage's candidate pairs where nothing can touch
_UNITS = ("m", "", "m/s", "rad/s")


class StepContext(NamedTuple):
    """What every stage of one sub-step reads, built once for it (`Simulation._context`; Box2D v3's
    b2StepContext): no stage looks up a setting or a mode of its own."""

    h: float                    # s, the sub-step (negative: the triple jump's middle one)
    integrator: str             # its scheme (lie-midpoint within lie-midpoint-4's composed RATTLE step)
    position_fraction: float    # of a velocity change the scheme's position update sees (POSITION_FRACTION)
    surface_lead: float         # s, how far ahead a moving surface's velocity is taken (SURFACE_LEAD)
    rattle: bool                # its joints are stepped by RATTLE (RATTLE_INTEGRATORS, joints present)
    sleeping: bool              # some body sleeps at its start (wake on field, hold)


class DivergenceError(ValueError):
    """A simulation whose state went non-finite or ran away: `node` (name), `step` (the step in which
    it happened, 1 = the first), `time` (s, the sub-step's end), `quantity` and `value` say where and
    what. The simulation stays stopped (every `step` raises it again) until `reset` or `restore`."""

    def __init__(self, node, step, time, quantity, value, limit):
        self.node, self.step, self.time, self.quantity, self.value = node, step, time, quantity, value
        what = f"is {value}" if not math.isfinite(value) else f"reached {value:.3g} (limit {limit:.0e})"
        super().__init__(f"node {node!r} diverged in step {step} (t = {time:.6g} s): its local {quantity} {what}")


class OverlapWarning(UserWarning):
    """Shapes that start inside one another (`Simulation.initial_overlaps`)."""


class OverlapError(ValueError):
    """More shape pairs inside one another at load than physics.solver.OVERLAP_BUDGET: `count`
    says how many; the message names the deepest pair."""

    def __init__(self, count, message):
        self.count = count
        super().__init__(message)


def _overlap_tolerance():
    from physics.solver import OVERLAP_TOLERANCE
    return OVERLAP_TOLERANCE


class OutOfBoundsError(DivergenceError):
    """A body that left the world's bounds (DIVERGENCE_LENGTH from its parent's origin) with a finite
    speed and no energy gained since the last input (the runaway reference): a body flying or
    rolling away, not a blow-up. `speed` (m/s) is its local speed then."""

    def __init__(self, node, step, time, value, limit, speed):
        self.node, self.step, self.time, self.quantity, self.value, self.speed = node, step, time, "translation", value, speed
        ValueError.__init__(self, f"node {node!r} left the world's bounds in step {step} (t = {time:.6g} s): its local "
                                  f"translation reached {value:.3g} m (limit {limit:.0e} m) at {speed:.3g} m/s, with no "
                                  "energy gained; not a divergence")


class RunawayError(DivergenceError):
    """Energy grown without input in a scene with no driver (RUNAWAY_EVERY): `node` is the body with
    the most kinetic energy (translation and spin), `value` the energy gained (J) and `limit` the allowance."""

    def __init__(self, node, step, time, value, limit):
        self.node, self.step, self.time, self.quantity, self.value = node, step, time, "energy", value
        ValueError.__init__(self, f"the run gained {value:.4g} J of energy without input by step {step} "
                                  f"(t = {time:.6g} s; allowance {limit:.4g} J): a runaway; most energetic body {node!r}")


class PenetrationError(DivergenceError):
    """A dynamic shape deeper inside a static or kinematic shape than its own size
    (physics.solver.SINK_SIZES): it fell through that surface, which no contact solve undoes, and a
    run that went on would show it under the ground. `node` names the dynamic node, `surface` the
    node it is inside, `value` the depth (m) and `limit` the shape's size (its bounding diameter),
    `step` and `time` the step that found it and its sub-step's start (where the contact points are
    taken); `cause` names the settings that weaken the contact solve or lengthen the step."""

    def __init__(self, node, surface, step, time, depth, size, cause):
        self.node, self.step, self.time, self.quantity, self.value = node, step, time, "penetration", depth
        self.surface, self.limit, self.cause = surface, size, cause
        ValueError.__init__(self, f"node {node!r} fell through {surface!r} in step {step} (t = {time:.6g} s): it is "
                                  f"{depth:.3g} m deep inside it, more than its own size ({size:.3g} m); the contact "
                                  f"solve could not hold it: {cause}")


def _contact_cause(settings):
    """What likely let a body through a surface (`PenetrationError`): the settings that weaken the
    contact solve or lengthen the step against their defaults (a lower sor, erp or iteration count,
    softness, a sub-step longer than the default dt, at which the contact rows are measured to
    hold in one sub-step: docs/fidelity.md), each with its default; else the body was too small or
    too fast for the sub-step."""
    default = Settings()
    h, default_h = settings.dt / settings.substeps, default.dt
    weaker = [f"{name} = {getattr(settings, name):g} (default {getattr(default, name):g})"
              for name in ("sor", "erp", "iterations") if getattr(settings, name) < getattr(default, name)]
    if settings.cfm > default.cfm:
        weaker.append(f"cfm = {settings.cfm:g} (default {default.cfm:g})")
    if h > default_h * (1 + 1e-9):
        weaker.append(f"a sub-step of {h:g} s (dt = {settings.dt:g} s, substeps = {settings.substeps}; "
                      f"contacts hold at {default_h:.3g} s)")
    if not weaker:
        return (f"a shape too small or too fast for a sub-step of {h:g} s; try more substeps or a smaller dt")
    return "likely " + ", ".join(weaker)


class Simulation:
    """A scene being simulated: `model` (constant, physics.model.Model) and the state the steps change
    (module docstring); see docs/architecture.md for the interface the app and runner use."""

    def __init__(self, scene: Scene, settings: Settings | None = None):
        self.scene = scene
        self.settings = scene.settings() if settings is None else settings
        self.colors = scene.colors.copy()
        self._restorable = Restorable(scene, DIVERGENCE_LENGTH)    # what `restore` accepts of this scene
        self.reset()
        self.initial_overlaps = self._report_overlaps()

    def _report_overlaps(self):
        """The shape pairs that start inside one another (physics.solver.SceneSolver.overlaps:
        deeper than OVERLAP_TOLERANCE), warned about once at load (an `OverlapWarning` naming the
        count and the deepest pair); OverlapError past OVERLAP_BUDGET of them, ContactBudgetError
        past PAIR_BUDGET candidate pairs: so many that no step could solve them in reasonable time."""
        from physics.solver import Overlaps
        if self._solver is None or not len(self._solver.shapes):
            return Overlaps(0, -1, -1, 0.0)
        self._sync(_MOVING)
        from physics.solver import OVERLAP_BUDGET
        found = self._solver.overlaps(self.hierarchy.world_state)
        if not found.count:
            return found
        text = (f"{found.count:,} shape pair{'s start' if found.count != 1 else ' starts'} inside one another (deeper than "
                f"{_overlap_tolerance() * 1e3:g} mm); the deepest: {self.names[found.node_a]!r} and "
                f"{self.names[found.node_b]!r}, {found.depth:.3g} m")
        if found.count > OVERLAP_BUDGET:
            raise OverlapError(found.count, f"{text}: more than {OVERLAP_BUDGET:,}, refused; spread the shapes out "
                                            "or give them collision groups")
        warnings.warn(OverlapWarning(f"{text}: pushed apart at most at max_contact_push_speed = "
                                     f"{self.settings.max_contact_push_speed:g} m/s"), stacklevel=3)
        return found

    # The clock, public (the Data holds it: a snapshot restores it).
    time = property(lambda self: self.data.time, lambda self, value: setattr(self.data, "time", float(value)),
                    doc="s since the scene was loaded or reset")
    step_count = property(lambda self: self.data.step_count,
                          lambda self, value: setattr(self.data, "step_count", int(value)),
                          doc="whole steps since the scene was loaded or reset")

    # The model's public names (constant: `Model`).
    names = property(lambda self: self.model.names, doc="(N,) node names")
    motion = property(lambda self: self.model.motion, doc="(N,) 'fixed', 'kinematic' or 'dynamic'")
    shapes = property(lambda self: self.model.shapes, doc="(N,) each node's collision shape or None")
    mass = property(lambda self: self.model.mass, doc="(N,) kg")
    inertia_body = property(lambda self: self.model.inertia_body, doc="(N, 3) principal moments, body axes")
    parent = property(lambda self: self.model.parent, doc="(N,) each node's parent, −1 = the world")

    @classmethod
    def from_file(cls, path):
        """Load a scene file (raises physics.SceneError naming file, node, key and value)."""
        return cls(load_scene(Path(path)))

    # ------------------------------------------------------------------ topology
    def _build_solver(self):
        """The contact and joint pipeline for the current topology (None when nothing can touch),
        working on the Data's solver state: a new topology's solver carries over the last one's
        warm starts, manifolds and joints."""
        self._solver = None
        scene = self.scene
        if any(shape is not None for shape in self.shapes) or scene.joints:
            from physics.solver import SceneSolver
            friction = scene.friction if scene.friction is not None else np.full(len(self.names), 0.6)
            restitution = scene.restitution if scene.restitution is not None else np.zeros(len(self.names))
            self._solver = SceneSolver(self.shapes, self.parent, self.motion, self.model.solver_bodies, friction,
                                       restitution, scene.joints, self.data.solver)
            if not scene.joints and not self._solver.filter.may_pair():
                self._solver = None  # shapes for drawing only (a T-handle in space, kinematic tanks)
        self.data.solver = None if self._solver is None else self._solver.carried

    def reset(self):
        """Back to the state loaded from the file (the settings are kept)."""
        scene = self.scene
        local = NodeState(len(scene.names))
        local.translation = scene.translation
        local.rotation = _matrices_from_quaternions(scene.rotation)
        local.scale = scene.scale
        local.velocity = scene.velocity
        local.omega = scene.angular_velocity
        local.acceleration = scene.acceleration
        local.alpha = scene.angular_acceleration
        self.hierarchy = Hierarchy(scene.parent, local, names=scene.names)
        self.model = Model(scene, scene.parent, self.hierarchy.order)
        # Everything the steps change (physics.data): the hierarchy's local state, the kinematic
        # nodes' contiguous copy of theirs (stepped in place and copied into the hierarchy after
        # each kinematic stage: nothing else writes it), omega_body, sleep, the clock.
        self.data = Data.start(self.hierarchy.local, self.model.kin, self.model.kin_acceleration, self.model.kin_alpha,
                               self.model.dyn.size)
        self.diverged = None        # the DivergenceError that stopped the run, if one did
        self._runaway_reference, self._runaway_due = None, 0.0
        self._build_solver()
        self._synced = _STALE
        # omega_body from the file's parent-frame angular velocity, ancestors' world motion settled
        # first: omega_body = R3^T omega3_world (generation by generation, see _sync).
        world = self.hierarchy.update_world()
        for slots in self.model.generations:
            nodes = self.model.dyn[slots]
            self.data.omega_body[slots] = rows_transposed_times(world.rotation[nodes], world.omega[nodes])
            world = self.hierarchy.update_world()
        self._bind()

    def _bind(self):
        """The kernels' bundles (`NodeArrays`, `DynamicBodies`, physics.sleeping's), of the model and
        of the state arrays that the steps change in place: built at reset and for each topology."""
        model = self.model
        self._local_arrays = NodeArrays(*self.hierarchy.local.views())
        self._world_arrays = NodeArrays(*self.hierarchy.world_state.views())
        self._dynamic = DynamicBodies(model.dyn, model.dyn_parent, model.nearest_dynamic_slot, model.generation_order,
                                      model.mass_dyn, model.inertia_dyn, model.force_applied)
        self._inputs = DynamicInputs.empty(model.dyn.size)
        self._frames = tuple(self._inputs[4:])
        self._dynamic_motion = Motion(self._inputs.translation, self._inputs.rotation, self._inputs.velocity, NO_ROWS)
        self._sleep_bodies = Bodies(model.dyn, model.dyn_parent, model.sleepable)
        local = self._local_arrays
        self._local_motion = LocalMotion(local.translation, local.rotation, local.velocity, self.data.omega_body)
        self._parent_motion = parent_motion(self.hierarchy.world_state)
        # The free-body sub-step (`_free_substep`): every dynamic body a root, in one contiguous run of
        # nodes, nothing kinematic, nothing to touch. The integrator then steps the hierarchy's local
        # arrays in place (a root's local state is its world state), with no gather, no scatter and
        # no world pass, and checks divergence in the same pass.
        dyn = model.dyn
        self._free = None
        if (dyn.size and self._solver is None and model.kin.size == 0 and not model.any_parented
                and dyn[-1] - dyn[0] + 1 == dyn.size):
            rows = slice(int(dyn[0]), int(dyn[-1]) + 1)
            self._free = (local.translation[rows], local.rotation[rows], local.velocity[rows], self.data.omega_body,
                          model.mass_dyn, model.inertia_dyn, self._inputs.force, model.torque_applied)
        self._free_gravity = None       # what self._inputs.force was last made with
        self._found = np.empty(6)       # the free-body sub-step's divergence check (`_free_substep`)

    # ------------------------------------------------------------------ settings
    def set(self, name, value):
        """Change one setting live (validated: ValueError naming the key and the value); wakes
        every sleeping body, so that what the setting changes shows."""
        self.settings.set(name, value)
        self.wake()
        self._synced = _STALE
        self._runaway_reference = None

    def wake(self, node=None):
        """Wake `node` (a dynamic node's name or index) and its dynamic descendants, or every
        body (node None). Sleeping: see SLEEP_TIME."""
        if node is None:
            self.data.sleep.asleep[:] = False
            self.data.sleep.still[:] = 0.0
            return
        below = self.model.descendants(self._resolve(node)) | (np.arange(len(self.names)) == self._resolve(node))
        slots = self.model.dyn_slot[np.flatnonzero(below & (self.motion == "dynamic"))]
        self.data.sleep.asleep[slots] = False
        self.data.sleep.still[slots] = 0.0

    def sleeping(self):
        """(N,) bool: the nodes that sleep now (dynamic bodies riding rigidly with their parent)."""
        out = np.zeros(len(self.names), bool)
        out[self.model.dyn] = self.data.sleep.asleep
        return out

    # ------------------------------------------------------------------ keeping derived state consistent
    def _frame(self, slots):
        """The parents' world motion (an integrators.Frame) for the dynamic bodies `slots`; bodies
        parented to the world get the identity frame."""
        world = self.hierarchy.world_state
        parent = self.model.dyn_parent[slots]
        frame = Frame(world.rotation[parent], world.scale[parent], world.acceleration[parent],
                      world.omega[parent], world.alpha[parent])
        if self.model.dyn_rooted.all():
            return frame
        roots = np.flatnonzero(parent < 0)
        if roots.size:
            frame.rotation[roots] = np.eye(3)
            frame.scale[roots] = 1.0
            for values in (frame.acceleration, frame.angular_velocity, frame.angular_acceleration):
                values[roots] = 0.0
        return frame

    def _forces(self, slots=slice(None), reported=False):
        """World force (gravity + applied) and torque on the dynamic bodies `slots`; `reported` adds
        the last solver stage's share, F_c = m Δv / h and τ_c = I_world Δω / h (Newton–Euler for the
        stage's change of the world motion, `Data.constraint_acceleration`)."""
        mass = self.mass[self.model.dyn][slots]
        force = mass[:, None] * self.settings.gravity + self.model.force_applied[slots]
        torque = self.model.torque_applied[slots]
        if reported:
            change = self.data.constraint_acceleration[slots]
            rotation = self.hierarchy.world_state.rotation[self.model.dyn[slots]]
            force = force + mass[:, None] * change[:, :3]
            torque = torque + rows_times(rotation, self.model.inertia_dyn[slots] * rows_transposed_times(rotation, change[:, 3:]))
        return force, torque

    def _sync_generation(self, slots):
        """Derive the hierarchy's omega_local of dynamic `slots` from omega_body and their local
        accelerations from the forces ("The Dynamics of a
        Transform Hierarchy", "Converting Global Dynamics To Local Dynamics"); parents must be
        settled. The accelerations are the reported ones: gravity, applied forces and the contact
        and joint forces of the last solver stage (`_forces`), in the parents' reported motion (a
        crate resting on the deck reports a = 0, not −g)."""
        local, nodes = self.hierarchy.local, self.model.dyn[slots]
        frame = self._frame(slots)
        rotation = local.rotation[nodes]
        omega_body = np.ascontiguousarray(self.data.omega_body[slots])
        local.omega[nodes] = omega_local_from_body(rotation, omega_body, frame)
        held = self.data.sleep.asleep[slots]
        if held.any():
            self.data.constraint_acceleration[slots[held]] = 0.0     # the free motion first (below)
        force, torque = self._forces(slots, reported=True)
        acceleration, alpha = local_accelerations(
            local.translation[nodes], rotation, local.velocity[nodes], omega_body,
            self.mass[nodes], self.inertia_body[nodes], force, torque, self.settings.gyroscopic, frame)
        if held.any():
            # a sleeping body rides its parent rigidly: a1 = α1 = 0 (also as the frame of what it
            # carries), and what holds it there is the constraint share, −J2 a1_free and −R2 α1_free
            R2, s2, k = frame.rotation[held], frame.scale[held], slots[held]
            self.data.constraint_acceleration[k, :3] = -s2[:, None] * rows_times(R2, acceleration[held])
            self.data.constraint_acceleration[k, 3:] = -rows_times(R2, alpha[held])
            acceleration[held], alpha[held] = 0.0, 0.0
        local.acceleration[nodes] = acceleration
        local.alpha[nodes] = alpha

    def _sync(self, level):
        """Bring the world state (and dynamic nodes' derived local values) up to `level`:
        _MOVING     every node's world pose and velocity (what the solver and a step need: a step
                    reads no dynamic body's acceleration, `_stage_dynamic`);
        _COMPLETE   every node's world and local state, reported accelerations (what queries need)."""
        have = self._synced
        if have == level or (level == _MOVING and have != _STALE):
            return
        if level == _MOVING:
            # one pass: each dynamic body's local omega from omega_body on the way down
            self.hierarchy.update_world(self.model.dyn_slot, self.data.omega_body)
        else:   # generation by generation: a body's local acceleration needs its parent's world one
            self.hierarchy.update_world()
            for slots in self.model.generations:
                self._sync_generation(slots)
                self.hierarchy.update_world()
        self._synced = level

    # ------------------------------------------------------------------ the step
    def step(self, n=1):
        """Advance n steps of settings.dt, each in settings.substeps equal sub-steps."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"step: n must be an integer >= 0, got {n!r}")
        if self.diverged is not None:
            raise self.diverged
        # A state set from outside (a restore, a planted value) is checked too, before the first
        # sub-step: by a pass of its own, or on the free-body sub-step in the integrator's pass
        free = self._free is not None and not (self.settings.sleep and self.model.may_sleep)
        if n:
            if not free:
                self._check_divergence()
            if self._runaway_reference is None:
                self._take_runaway_reference()
        first = free
        for _ in range(int(n)):
            started = profile.mark()
            substeps = self.settings.substeps
            h = self.settings.dt / substeps
            integrator = self.settings.integrator
            for _ in range(substeps):
                context = self._context(h, integrator)
                if context.rattle and self._composes_rattle(h):
                    # lie-midpoint-4 with equality joints and no contact within reach: the whole
                    # constrained step (free motion, RATTLE) composed by the triple jump (4th order)
                    for fraction in TRIPLE_JUMP:
                        self._rattle_substep(self._context(fraction * h, "lie-midpoint"))
                elif context.rattle:
                    self._rattle_substep(context)
                elif free:
                    self._free_substep(context, first)
                    first = False
                else:
                    self._substep(context)
            self.data.step_count += 1
            if self.model.loose.size:
                self._hand_off()
            if not self.model.driven and self.data.time >= self._runaway_due:
                self._check_runaway()
            profile.lap("step", started)

    def _rattle_substep(self, context, halvings=RATTLE_HALVINGS):
        """A sub-step whose joints are stepped by RATTLE; where its position projection finds no
        root of g = 0 along the start-of-step rows (the solvability of RATTLE's nonlinear system
        needs h small against how far the links turn) or starts more than RATTLE_STEP_ERROR of a
        joint's lever off the constraint, the sub-step is undone (`_save_substep`, `_undo_substep`)
        and taken as two halves: each half is RATTLE's step, where a projection along other directions (the
        current rows) is not RATTLE's and was measured to add or remove up to 17 J of the chain's
        98 J in one whip crack. Where the last sub-step's start error, scaled by h², predicts the
        bound passed, the halves are taken at once (the hint is part of the `snapshot`). At the
        last halving the projection's own fallback stands."""
        h = context.h
        if not halvings:
            self._substep(context)
            self.data.rattle_hint[:] = self._solver.joint_start_error, h
            return
        half = lambda: self._context(0.5 * h, context.integrator)     # built as each half starts
        # the start error grows as h²: where the last sub-step's predicts one past the bound, the
        # halves are taken at once instead of after a failed attempt
        if self.data.rattle_hint[0] * (h / self.data.rattle_hint[1]) ** 2 > RATTLE_STEP_ERROR:
            self._rattle_substep(half(), halvings - 1)
            self._rattle_substep(half(), halvings - 1)
            return
        saved = self._save_substep()
        self._substep(context)
        self.data.rattle_hint[:] = self._solver.joint_start_error, h
        if not self._solver.joint_left_start_rows and self._solver.joint_start_error <= RATTLE_STEP_ERROR:
            return
        self._undo_substep(saved)
        self._rattle_substep(half(), halvings - 1)
        self._rattle_substep(half(), halvings - 1)

    def _save_substep(self):
        """A copy of what a sub-step may change, for `_undo_substep`: the Data (`Data.save`) and the
        runaway check's reference. A sub-step changes neither the topology nor the settings, so
        nothing is checked and no `Snapshot` is built (one per RATTLE sub-step would cost a seventh
        of a jointed pendulum's step)."""
        return self.data.save(), self._runaway_reference, self._runaway_due

    def _undo_substep(self, saved):
        """Back to a `_save_substep`, as `restore` of a snapshot taken there would put it."""
        data, self._runaway_reference, self._runaway_due = saved
        self.data.load(data)
        self._solver.forget()
        self._synced = _STALE

    def _composes_rattle(self, h):
        """Whether a sub-step h of `lie-midpoint-4` with joints is RATTLE's constrained lie-midpoint
        step composed by the triple jump (g1 h, g2 h < 0, g1 h): where every joint is an equality
        (no limit, motor or rope) and no contact may become active within it (no two shapes within
        reach of g1 h of travel, the farthest the composition strays: `SceneSolver.may_touch`).
        Contacts, limits and ropes are inequalities, motors velocity targets, solved at velocity
        level with speculative margins and restitution: they have no meaning over a backward
        sub-step. Where one may act, the free motion alone is composed and the joints are stepped
        once (2nd order in the joints)."""
        if self.settings.integrator != "lie-midpoint-4" or not self._solver.joints_equalities:
            return False
        if not len(self._solver.shapes):
            return True
        world, centre, _, velocity, _ = self._solver_state()
        return not self._solver.may_touch(world, centre, velocity, TRIPLE_JUMP[0] * h)

    def _check_divergence(self):
        """Raise (and keep) a DivergenceError if a moving node's local state left the finite range
        (DIVERGENCE_LENGTH, DIVERGENCE_SPEED): the run stops in the step where it happens, before
        any later stage or kernel sees the bad values."""
        node, quantity, value = first_divergent(self.model.moving, self.model.dyn_slot, self._local_arrays, self.data.omega_body,
                                                 DIVERGENCE_LENGTH, DIVERGENCE_SPEED)
        if node >= 0:
            self._raise_divergence(node, quantity, value)

    def _raise_divergence(self, node, quantity, value):
        """Raise (and keep) the DivergenceError, or OutOfBoundsError, of `node`'s `quantity`
        (an index into _QUANTITIES) at `value`, found in the step about to be counted."""
        limit = DIVERGENCE_LENGTH if quantity == 0 else DIVERGENCE_SPEED
        args = (self.names[node], self.data.step_count + 1, self.data.time)
        speed = float(np.linalg.norm(self.hierarchy.local.velocity[node]))
        if quantity == 0 and math.isfinite(value) and speed <= DIVERGENCE_SPEED and not self._energy_grew():
            self.diverged = OutOfBoundsError(*args, float(value), limit, speed)
        else:
            self.diverged = DivergenceError(*args, _QUANTITIES[quantity], float(value), limit)
        raise self.diverged

    def _energy_grew(self):
        """Whether the total energy now exceeds the runaway reference by more than its allowance
        (or is not finite): what tells a blow-up from a body that merely went far. The state may
        be mid-step: the world pass is redone from the local state."""
        if self.model.dyn.size == 0 or self._runaway_reference is None:
            return False
        self._synced = _STALE
        energy = self.energy()
        total = energy["kinetic"] + energy["potential"]
        reference, allowance = self._runaway_reference
        return not total - reference <= allowance

    def _take_runaway_reference(self):
        """The runaway check's reference (RUNAWAY_EVERY): the total energy now, and the allowance of
        growth past it, from the kinetic energy, the scene's size and RUNAWAY_SPEED."""
        if self.model.dyn.size == 0:
            return
        energy = self.energy()
        translation = self.hierarchy.world_state.translation
        size = float(np.ptp(translation, axis=0).max(initial=0.0)) if len(translation) else 0.0
        mass = float(self.model.mass_dyn.sum())
        allowance = (energy["kinetic"] + mass * math.hypot(*self.settings.gravity) * max(size, 1.0)
                     + 0.5 * mass * RUNAWAY_SPEED ** 2)
        self._runaway_reference = (energy["kinetic"] + energy["potential"], allowance)

    def _check_runaway(self):
        """RUNAWAY_EVERY: compare the total energy with its value after the last input (taken before
        the step after it, `_take_runaway_reference`) and raise (and keep) a RunawayError past the
        allowance."""
        self._runaway_due = self.data.time + RUNAWAY_EVERY
        if self.model.dyn.size == 0:
            return
        if self._runaway_reference is None:     # an input within this step (a timed impulse)
            self._take_runaway_reference()
            return
        energy = self.energy()
        total = energy["kinetic"] + energy["potential"]
        reference, allowance = self._runaway_reference
        if total - reference > allowance:
            velocity = self.hierarchy.world_state.velocity[self.model.dyn]
            kinetic = self.model.mass_dyn * np.einsum("bi,bi->b", velocity, velocity) + np.einsum(
                "bi,bi->b", self.model.inertia_dyn * self.data.omega_body, self.data.omega_body)
            self.diverged = RunawayError(self.names[self.model.dyn[int(np.argmax(kinetic))]], self.data.step_count, self.data.time,
                                         total - reference, allowance)
            raise self.diverged

    # The sub-step: these stages in this order, each the method `_stage_<name>(context)`, which
    # returns at once where it has nothing to do.
    STAGES = (
        "world",        # every node's world pose and velocity at the start of the sub-step
        "wake",         # sleeping bodies whose field changed wake (physics.sleeping)
        "prepare",      # contact and joint rows at these poses (physics.solver)
        "kinematic",    # prescribed local motion (Magnus, physics.kinematics)
        "dynamic",      # forces -> integrator: the free motion, trees parents first
        "hold",         # sleeping bodies stay where they rest on their parent
        "clock",        # time advances; nothing below sees a non-finite or runaway state
        "events",       # timed impulses that are due
        "contacts",     # warm start, solve, positions, relax, restitution, joints (RATTLE / SHAKE)
        "sleep",        # bodies still for SLEEP_TIME, with all they touch, sleep
        "check",        # nothing leaves the sub-step non-finite or run away
    )

    def _context(self, h, integrator):
        """The `StepContext` of a sub-step h with `integrator`."""
        # semi-implicit Euler with settings.shake: its joints by SHAKE (`RATTLE_INTEGRATORS`)
        rattle = (integrator in RATTLE_INTEGRATORS and not (integrator == "semi-implicit-euler" and self.settings.shake)
                  and self._solver is not None and bool(len(self._solver.joint_specs)))
        return StepContext(h, integrator, POSITION_FRACTION.get(integrator, 0.5), h * SURFACE_LEAD.get(integrator, 1.0),
                           rattle, bool(self.settings.sleep and self.data.sleep.asleep.any()))

    @profile.stage("substep")
    def _substep(self, context):
        """One sub-step: the STAGES (looked up each time: physics.profile swaps in timed ones)."""
        for name in self.STAGES:
            getattr(self, "_stage_" + name)(context)

    @profile.stage("substep")
    def _free_substep(self, context, first):
        """The sub-step of free bodies (`_bind`: `_free`), bit for bit the STAGES' (a root's
        integrator reads only its local state): the integrator steps the local arrays in place
        and checks each body as it stores it (physics.integrators `advance_bodies`, `found`), the
        clock advances and the first divergent body raises as `_stage_clock` would; then the
        events, and the check again if one was applied. The `first` sub-step of a `step` call
        also checks each body's state before its step, in the same pass, in place of the check
        before the call (`step`): the same error (node, step, time, quantity, value), raised
        after the pass, so the state left stopped is one sub-step on from the one that failed."""
        found = self._found if first else self._found[:3]
        self._stage_free_motion(context, found)
        self._synced = _STALE
        dyn0 = int(self.model.dyn[0])
        if first and found[3] >= 0:
            self._raise_divergence(dyn0 + int(found[3]), int(found[4]), float(found[5]))
        self.data.time += context.h
        if found[0] >= 0:
            self._raise_divergence(dyn0 + int(found[0]), int(found[1]), float(found[2]))
        due = self.data.next_event
        self._stage_events(context)
        if self.data.next_event != due:
            self._check_divergence()

    @profile.stage("dynamic")
    def _stage_free_motion(self, context, found):
        settings = self.settings
        gravity = tuple(settings.gravity)
        if gravity != self._free_gravity:   # m g + F_applied, as `dynamic_inputs` forms it
            np.add(self.model.mass_dyn[:, None] * settings.gravity, self.model.force_applied, out=self._inputs.force)
            self._free_gravity = gravity
        found[::3] = -1.0
        advance_bodies(self._free, context.h, context.integrator, settings.gyroscopic, None,
                       (DIVERGENCE_LENGTH, DIVERGENCE_SPEED), found)

    def _stage_world(self, context):
        started = profile.mark()
        self._sync(_MOVING)
        profile.lap("world", started)

    def _stage_wake(self, context):
        if context.sleeping:
            wake_on_field(self._sleep_bodies, self._parent_motion, self.settings.gravity, self.data.sleep)

    def _stage_hold(self, context):
        if context.sleeping:
            hold(self._sleep_bodies, self.data.sleep, self._local_motion)
        self._synced = _STALE

    def _stage_clock(self, context):
        self.data.time += context.h
        self._check_divergence()

    def _stage_check(self, context):
        self._check_divergence()

    @profile.stage("kinematic")
    def _stage_kinematic(self, context):
        if self.model.kin.size == 0:
            return
        settings = self.settings
        translation, rotation, velocity, omega = self.data.kinematic
        advance_kinematic(translation, rotation, velocity, omega, self.data.kin_acceleration, self.data.kin_alpha, context.h,
                          settings.rotation_update, settings.exponential)
        scatter_motion(self.model.kin, self.data.kinematic, self._local_arrays)

    @profile.stage("dynamic")
    def _stage_dynamic(self, context):
        if self.model.dyn.size == 0:
            return
        settings, model, inputs = self.settings, self.model, self._inputs
        dynamic_inputs(self._dynamic, self._world_arrays, self._local_arrays, settings.gravity, inputs)
        advance_bodies((inputs.translation, inputs.rotation, inputs.velocity, self.data.omega_body, model.mass_dyn,
                        model.inertia_dyn, inputs.force, model.torque_applied), context.h, context.integrator,
                       settings.gyroscopic,
                       self._frames if model.any_parented else None)
        # the trees, parents first: a carried generation is placed in its parents' end-of-step frame
        for g, slots in enumerate(model.generations):
            if g:
                self.hierarchy.update_world(model.dyn_slot, self.data.omega_body)
            place_bodies(self._dynamic, slots, self._dynamic_motion, self._world_arrays, self._local_arrays)

    @profile.stage("sleep")
    def _stage_sleep(self, context):
        """Count how long each body has been still (in its parent's frame) and put to sleep the
        islands — bodies joined by this step's candidate pairs (boxes within reach: what wakes a
        sleeping body, `physics.sleeping.awake_pairs`, joins islands too) — whose bodies have all
        been still for SLEEP_TIME (and may sleep: `_sleepable`); what they hold is recorded."""
        if not (self.settings.sleep and self.model.may_sleep):
            return
        # The parents' world motion is current after the solver (`_apply_world_changes` updated the
        # world; the solver moves no parent of a body that may sleep): local ω comes from omega_body.
        if self._solver is None or self._solver.prepared is None:
            self._sync(_MOVING)         # nothing updated the world since the free step
        pairs = _NO_PAIRS if self._solver is None else self._solver.pair_bodies
        touch = self._solver.body_touch if self._solver is not None else np.zeros(0, np.int64)
        if len(touch) != self.model.dyn.size:    # no shapes: nothing to rest on
            touch = np.zeros(self.model.dyn.size, np.int64)
        sleep_islands(self._sleep_bodies, pairs, touch, self._parent_motion, self.settings.gravity, self._local_motion,
                      context.h, self.data.sleep)
        self._synced = _STALE

    @profile.stage("events")
    def _stage_events(self, context):
        events = self.scene.events
        while self.data.next_event < len(events) and events[self.data.next_event].time <= self.data.time + 1e-12:
            event = events[self.data.next_event]
            self.data.next_event += 1
            self.apply_impulse(event.node, event.impulse_world, event.point_world)

    def _solver_state(self):
        """The dynamic bodies in world terms: centre (D,3), rotation (D,3,3), velocity (D,6) [v, ω],
        inverse world inertia (D,3,3) R I⁻¹ Rᵀ (one compiled gather, `solver_bodies`)."""
        self._sync(_MOVING)
        return (self.hierarchy.world_state, *solver_bodies(self._dynamic, self._world_arrays, self.data.omega_body))

    def _stage_prepare(self, context):
        """Solver stage 'prepare' (physics.solver): rows at the start-of-step poses."""
        if self._solver is None:
            return
        world, centre, rotation, velocity, inverse_inertia = self._solver_state()
        awake = None
        if self.settings.sleep and self.data.sleep.asleep.any():
            awake = ~self.data.sleep.asleep
        self._solver.prepare(world, centre, rotation, velocity, self.model.inverse_mass, inverse_inertia, context.h,
                             self.settings, context.surface_lead, awake)
        if awake is not None:          # an awake body's box reached sleeping ones: their islands woke
            woken = self.data.sleep.asleep & awake
            self.data.sleep.asleep[woken] = False
            self.data.sleep.still[woken] = 0.0
        sunk = self._solver.sunk(world.scale)
        if sunk is not None:    # a body passed through a surface by the last sub-step: stop here
            self.diverged = PenetrationError(self.names[sunk.node], self.names[sunk.surface], self.data.step_count + 1,
                                             self.data.time, sunk.depth, sunk.size, _contact_cause(self.settings))
            raise self.diverged

    @profile.stage("solve")
    def _stage_contacts(self, context):
        """Solver stages warm start → solve → relax → restitution → store (physics.solver) on the
        free end-of-step velocities, then the changes applied to the bodies (`_apply_world_changes`):
        velocities get the final change (relax, then restitution); positions get f h Δv_r plus the
        bias part h (Δv_s − Δv_r) — the split impulse, so the correction moves bodies without adding
        energy; its linear part at most settings.max_contact_push_speed per body — and nothing of the
        restitution stage (its target is the rebound at the surface).
        f = `POSITION_FRACTION[integrator]`: how much of an end-of-step velocity change the
        integrator's own position update would have seen (x₁ = x₀ + h v₁ for semi-implicit Euler:
        1; constant-force schemes x₁ = x₀ + h v₀ + h²a/2: ½; explicit Euler: 0)."""
        self.data.constraint_acceleration[:] = 0.0
        if self._solver is None or self._solver.prepared is None:
            return
        _, _, _, velocity, inverse_inertia = self._solver_state()
        h, fraction = context.h, context.position_fraction
        solution = self._solver.solve(velocity, self.settings, fraction)
        change = solution.velocity_relax - velocity
        bias = solution.velocity_solve - solution.velocity_relax
        # each body's correction moves it at most at the push speed (PhysX's max depenetration
        # velocity is per body too): a box among a hundred coincident ones took 57 m/s of bias
        # from its 99 contacts, each within the limit, and leapt a metre in one step
        push = np.linalg.norm(bias[:, :3], axis=1)
        over = push > self.settings.max_contact_push_speed
        if over.any():
            bias[over] *= (self.settings.max_contact_push_speed / push[over])[:, None]
        final = solution.velocity_final - velocity         # with the restitution stage: velocities only
        moved = h * (fraction * change + bias)
        joints = self._solver.joints is not None and len(self._solver.joints)
        rattle = joints and context.rattle
        if rattle:
            if self.settings.integrator == "lie-midpoint-4" and context.integrator == "lie-midpoint":
                # a sub-step of the composed RATTLE step (`_composes_rattle`: equality joints, no
                # contact): every row is a joint's, which carries no Baumgarte bias, so solve − relax
                # is only what the relax stage's sweeps changed of an unconverged PGS. Moved but never
                # seen by the velocities, it broke the chord (v½ = (q₁ − q₀)/h) and with it the step's
                # symmetry: the triple jump's backward sub-step starts from impulses of the other sign,
                # PGS leaves more, and a hinge's composed step fell to first order. RATTLE's projections
                # own the joints: positions and velocities take the same joint impulse.
                moved = h * fraction * change
            # the joint rows' impulse is RATTLE's first kick (`physics.rattle`): it acts before the
            # drift, so the positions see all of it, whatever the integrator's fraction
            moved += h * (1.0 - fraction) * self._solver.joint_velocity_change()
            # The solver's angular impulse is I₀ Δω with the start-of-step inertia; the bodies have
            # turned since, so Δω is re-expressed with the inertia they have now: the angular
            # momentum about a joint's pivot then changes by exactly the impulse's moment (the top).
            start = self._solver.start_inverse_inertia
            final[:, 3:] = rows_times(inverse_inertia, solve_rows(start, final[:, 3:]))
        self._apply_world_changes(final, moved)
        if rattle:
            # RATTLE: positions onto the joints' constraint along the start-of-step rows (the
            # rotation by the lie-midpoint drift with the kicked momentum), the velocities by the
            # same impulse over the step ...
            _, centre, rotation, velocity, inverse_inertia = self._solver_state()
            momentum = solve_rows(inverse_inertia, velocity[:, 3:])
            dx, dtheta, impulse = self._solver.project_joint_positions(centre, rotation, momentum)
            dv = np.concatenate([self.model.inverse_mass[:, None] * impulse[:, :3],
                                 rows_times(inverse_inertia, impulse[:, 3:])], axis=1) / h
            self._apply_world_changes(dv, np.concatenate([dx, dtheta], axis=1))
            # ... then the velocities onto the constraint's tangent at the end-of-step poses
            _, centre, rotation, velocity, inverse_inertia = self._solver_state()
            dv = self._solver.project_joint_velocities(centre, rotation, velocity, inverse_inertia)
            self._apply_world_changes(dv, np.zeros_like(dv))
        elif joints:
            # post-stabilization: project the joints' position error out along the start-of-step
            # directions; with settings.shake the velocities take the same change over the step (SHAKE)
            _, centre, rotation, _, _ = self._solver_state()
            dx, dtheta, dv = self._solver.post_stabilize(centre, rotation, self.settings.iterations, self.settings.shake)
            self._apply_world_changes(dv if self.settings.shake else None, np.concatenate([dx, dtheta], axis=1))
        self.data.constraint_acceleration /= h

    def _apply_world_changes(self, dv, dx):
        """Apply world-frame changes of velocity dv = [Δv, Δω] and of pose dx = [Δx, Δθ] (Δθ a
        rotation vector), (D, 6) each (dv may be None: poses only), found by the solver to the
        dynamic bodies, as local changes; each body's resulting change of world [v, ω] (its own, plus
        what it inherits with counteraction off) is added to `data.constraint_acceleration`.

        "The Dynamics of a Transform Hierarchy", "Local and Global Deltas" and "Counteracting the
        Inherited Effect from the Parent": with P the
        nearest dynamic ancestor and r = x_i − x_P, J_q = R_q S_q the parent's world Jacobian,
          counteract on:  Δv1 = J_q⁻¹ (Δv_i − Δv_P − Δω_P × r)   (the child's world change is its own)
          counteract off: Δv1 = J_q⁻¹ Δv_i                        (it inherits its ancestors' changes)
        and the same for positions (Δx, Δθ); the local rotation turns by R_qᵀ(Δθ_i − [on] Δθ_P).

        Angular velocity: Δω is the solver's angular impulse I_world Δω (I_world at the current
        R3), and a position correction moves a body at fixed momentum, as a drift does:
            L_world = R3 I (omega_body + R3ᵀ Δω),   omega_body ← I⁻¹ R3'ᵀ L_world
        with R3' the world rotation after the correction. Keeping omega_body instead turns L with
        the body, a spurious torque Δθ × L / h that for a fast spinner dwarfs gravity's: the top
        (assets/scenes/top.toml) fell over (tests/test_top.py)."""
        self._sync(_MOVING)
        nodes = self.model.dyn
        total, before = np.empty((nodes.size, 6)), np.empty((nodes.size, 3, 3))
        carried = self.settings.counteract and len(self.model.generations) > 1
        if carried:     # the world velocities the carried bodies must end with (their own change only)
            target = self.hierarchy.world_state.velocity[nodes] + (0.0 if dv is None else dv[:, :3])
        move_bodies(self._dynamic, self.settings.counteract, np.zeros_like(dx) if dv is None else dv, dx,
                     self._world_arrays, self._local_arrays, total, before)
        if dv is not None:
            self.data.constraint_acceleration += total
        keep_momentum(nodes, self.data.omega_body, self.model.inertia_dyn, before, self.hierarchy.update_world().rotation, total)
        if carried:
            self._keep_carried_velocity(target)
        self._synced = _STALE

    def _keep_carried_velocity(self, target):
        """Counteraction through a move of the parent's pose: a carried body's world velocity is
        v3 = v2 + ω2 × (x3 − x2) + s2 R2 v1, so a turn Δθ of its dynamic ancestor (R2 → exp(Δθ) R2)
        or a shift of the lever x3 − x2 changes v3 at fixed local v1 by Δθ × s2 R2 v1 + ω2 × Δ(x3 − x2),
        a change no impulse made (of order h² per correction: a first-order leak of energy through
        RATTLE's position projections of a nested arm). The local velocity is solved again from the
        moved parents, generation by generation (parents first):
            v1 = R2ᵀ (v3_target − v2 − ω2 × (x3 − x2)) / s2,   v3_target = v3 + Δv3 (its own change)."""
        local, parent = self.hierarchy.local, self.parent
        for g, slots in enumerate(self.model.generations):
            if g == 0 or not slots.size:
                continue
            world = self.hierarchy.update_world(self.model.dyn_slot, self.data.omega_body)
            i = self.model.dyn[slots]
            q = parent[i]
            relative = target[slots] - world.velocity[q] - np.cross(world.omega[q], world.translation[i] - world.translation[q])
            local.velocity[i] = np.einsum("nji,nj->ni", world.rotation[q], relative) / world.scale[q][:, None]

    # ------------------------------------------------------------------ reparenting
    def reparent(self, node, new_parent, keep="world"):
        """Move `node` (a name or index) and its subtree under `new_parent` (a name, an index, or
        None for the world), while running. The Dynamics of a Transform Hierarchy, "Global to
        Local": with A2' the new parent's world state,
          keep="world":  the node's world state A3 is kept, its local state becomes A1 = A2'⁻¹ A3
                         (pose, velocity, acceleration, ω, α; `physics.hierarchy.Hierarchy.reparent`);
                         a dynamic body keeps its world motion and omega_body; a kinematic node's
                         converted local a1, α1 become its prescribed ones; a fixed node keeps its
                         world pose and has no local motion: it rides its new parent;
          keep="local":  the local state A1 is kept: the subtree moves with the new parent.
        The subtree's other nodes keep their local state (so their world motion follows the node's);
        dynamic ones re-derive omega_body from it. Every body wakes; warm starts and joints carry over.
        A cycle (new parent inside the node's subtree) raises ValueError and changes nothing. An
        input of the timeline and of recordings ("reparent"): replays bit for bit."""
        if keep not in ("world", "local"):
            raise ValueError(f"reparent: keep must be 'world' or 'local', got {keep!r}")
        k = self._resolve(node)
        p = -1 if new_parent is None else self._resolve(new_parent)
        if p == self.parent[k]:
            return
        self._sync(_COMPLETE)        # world motion and dynamic bodies' local ω, a, α current (derived only)
        self.hierarchy.reparent(k, None if p < 0 else p, keep)   # refuses a cycle before changing anything
        parent = self.parent.copy()
        parent[k] = p
        local, motion = self.hierarchy.local, self.motion[k]
        if keep == "world" and motion == "fixed":
            for values in (local.velocity, local.acceleration, local.omega, local.alpha):
                values[k] = 0.0
        if motion == "kinematic":
            j = int(np.searchsorted(self.model.kin, k))
            for mine, field in zip(self.data.kinematic, ("translation", "rotation", "velocity", "omega")):
                mine[j] = getattr(local, field)[k]
            self.data.kin_acceleration[j], self.data.kin_alpha[j] = local.acceleration[k], local.alpha[k]
        self._retopologize(parent)
        # omega_body = R3ᵀ ω3 for the dynamic nodes whose local state was kept (one world pass: every
        # local ω is current); a dynamic node that kept its world motion keeps its omega_body exactly.
        below = self.model.descendants(k)
        if not (keep == "world" and motion == "dynamic"):
            below[k] = True
        kept = np.flatnonzero(below & (self.motion == "dynamic"))
        if kept.size:
            world = self.hierarchy.update_world()
            self.data.omega_body[self.model.dyn_slot[kept]] = rows_transposed_times(world.rotation[kept], world.omega[kept])
        self.wake()
        self._runaway_reference = None

    def _retopologize(self, parent):
        """After the hierarchy was relinked to `parent` (N,): the model of that topology, and the
        solver (its state carried over)."""
        self.model = self.model.reparented(parent, self.hierarchy.order)
        self._build_solver()
        self._bind()
        self._synced = _STALE

    def _set_topology(self, parent):
        """Relink the hierarchy to `parent` (N,) (a `restore` of a snapshot taken after a reparent,
        or back to the file's): every moved node to the world first, then each under its parent in
        the order of its new depth, so that no intermediate link makes a cycle. Local states are
        the caller's to set."""
        moved = np.flatnonzero(parent != self.parent)
        for i in moved:
            self.hierarchy.reparent(int(i), None, keep="local")
        depth = np.zeros(len(parent), np.int64)
        for i in moved:
            a = parent[i]
            while a >= 0:
                depth[i] += 1
                a = parent[a]
        for i in moved[np.argsort(depth[moved], kind="stable")]:
            if parent[i] >= 0:
                self.hierarchy.reparent(int(i), int(parent[i]), keep="local")
        self._retopologize(np.array(parent, dtype=self.parent.dtype))

    def _hand_off(self):
        """The reach policy (REACH): a loose dynamic body farther than REACH from its parent's origin
        leaves its parent for the world, keeping its world motion (`reparent`, keep="world")."""
        world = self.hierarchy.world_state
        node = first_beyond_reach(self.model.loose, self.parent, self.hierarchy.local.translation, world.scale, REACH)
        reference = self._runaway_reference     # world motion kept: no energy changes, no input
        while node >= 0:
            self.reparent(int(node), None, keep="world")
            node = first_beyond_reach(self.model.loose, self.parent, self.hierarchy.local.translation, world.scale, REACH)
        self._runaway_reference = reference

    # ------------------------------------------------------------------ impulses
    def _resolve(self, node):
        if isinstance(node, (int, np.integer)) and not isinstance(node, bool):
            if not 0 <= node < len(self.names):
                raise ValueError(f"node index {node} out of range 0..{len(self.names) - 1}")
            return int(node)
        if node not in self.model.index:
            raise ValueError(f"unknown node {node!r}")
        return self.model.index[node]

    def apply_impulse(self, node, impulse_world, point_world=None):
        """Apply a world-frame impulse J (N s) to dynamic `node`, through `point_world` (default its
        centre of mass, the node origin). "The Dynamics of a Transform Hierarchy", "Example:
        Newtonian Mechanics — Linear Impulses" and "Local and Global Deltas":

            Δv3 = J / m,   Δω3 = I_world⁻¹ ((p − x3) × J),   I_world = R3 diag(I) R3ᵀ
            Δv1 = J2⁻¹ Δv3                     (the node's own local change; Δa1 = −2 J2⁻¹ ω2 Δv3
                                                follows from the new v1 through the Coriolis term)
            omega_body += R3ᵀ Δω3              (its world angular velocity, body axes)

        Descendants, with r = x_d − x3 and J_q the parent of descendant d:
        - counteract on: each nearest dynamic descendant gets Δv1 = −J_q⁻¹ (Δv3 + Δω3 × r) and keeps
          omega_body, so its world motion is unchanged (Δa1 = 2 J_q⁻¹ ω_q Δv again follows through
          Coriolis); deeper nodes inherit the unchanged motion.
        - off: local velocities are kept, so every descendant inherits Δv3 + Δω3 × r and Δω3;
          dynamic ones record that in omega_body.
        Kinematic and fixed descendants always follow the node.
        """
        i = self._resolve(node)
        if self.motion[i] != "dynamic":
            raise ValueError(f"apply_impulse: node {self.names[i]!r} is {self.motion[i]}; only dynamic nodes take impulses")
        impulse = _vector3("impulse_world", impulse_world)
        self.wake(i)
        self._runaway_reference = None
        self._sync(_MOVING)
        world, local, slot = self.hierarchy.world_state, self.hierarchy.local, self.model.dyn_slot[i]
        dv_world = impulse / self.mass[i]
        dw_world = np.zeros(3)
        if point_world is not None:
            arm = _vector3("point_world", point_world) - world.translation[i]
            rotation = world.rotation[i]
            dw_world = np.einsum("ij,j->i", rotation, np.einsum("ji,j->i", rotation, cross(arm, impulse))
                                 / self.inertia_body[i])
        # einsum, not `@`: numpy hands `@` to the BLAS, whose kernel (and rounding) depends on the CPU
        p = self.parent[i]
        if p >= 0:
            local.velocity[i] += np.einsum("ji,j->i", world.rotation[p], dv_world) / world.scale[p]
        else:
            local.velocity[i] += dv_world
        self.data.omega_body[slot] += np.einsum("ji,j->i", world.rotation[i], dw_world)

        below = self.model.descendants(i) & (self.motion == "dynamic")
        if self.settings.counteract:
            nearest = np.flatnonzero(below & (self.model.nearest_dynamic_ancestor == i))
            if nearest.size:
                q = self.parent[nearest]
                inherited = dv_world + cross(dw_world, world.translation[nearest] - world.translation[i])
                local.velocity[nearest] -= rows_transposed_times(world.rotation[q], inherited) / world.scale[q][:, None]
        else:
            deeper = np.flatnonzero(below)
            if deeper.size:
                self.data.omega_body[self.model.dyn_slot[deeper]] += rows_transposed_times(world.rotation[deeper], np.broadcast_to(dw_world, (deeper.size, 3)))
        self._synced = _STALE

    def apply_force(self, node, force_world, point_world=None):
        """Apply a world-frame force F (N) to dynamic `node` through `point_world` (default its
        centre of mass) for the next step: the impulse J = F dt (`apply_impulse`, with all it does
        to descendants), given now, at the start of the step. This is the kick of a kick-drift
        splitting, the way the contact solver's impulses act too: for semi-implicit Euler it is the
        force integrated by the scheme itself (v' = v + h (g + F/m), x' = x + h v'), for the other
        integrators a first-order splitting of the extra force. Kept as an impulse, it is state
        that snapshots, hashes and replays already hold (no force waits between steps). A mouse
        pull (`physics.mouse_joint`) gives one of these each step while it holds a body."""
        force = _vector3("force_world", force_world)
        self.apply_impulse(node, force * self.settings.dt, point_world)

    # ------------------------------------------------------------------ snapshots
    # The state that decides the future: a copy of the Data (`Data.save`: poses, velocities,
    # omega_body, the kinematic nodes' copy and accelerations, sleep, the RATTLE hint, the clock, the
    # next event, the solver's warm starts, manifolds and joints; under "derived." what every step
    # computes afresh) plus the topology.

    def _scene_identity(self):
        if not hasattr(self, "_fingerprint"):
            self._fingerprint = scene_fingerprint(self.scene)
            self._scene_name = f"{self.scene.title!r} ({self.scene.path})"
        return self._fingerprint, self._scene_name

    @property
    def scene_fingerprint(self):
        """`physics.snapshot.scene_fingerprint` of this simulation's scene (made once)."""
        return self._scene_identity()[0]

    def snapshot(self):
        """A `physics.Snapshot` of everything that decides the future: `restore` continues from it
        bit for bit, here or in a freshly loaded simulation of the same scene."""
        fingerprint, name = self._scene_identity()
        arrays = self.data.save()
        arrays["topology.parent"] = self.parent.copy()
        settings = {f: getattr(self.settings, f) for f in self.settings.names()}
        settings["gravity"] = settings["gravity"].copy()
        return Snapshot(fingerprint, name, self.data.step_count, settings, arrays)

    def check_restorable(self, snapshot):
        """Refuse (ValueError naming the field and the value) a snapshot of this scene that no run of
        it can be in (physics.restorable); changes nothing."""
        self._restorable.check(snapshot, self.settings, {**self.data.arrays(), "topology.parent": self.parent},
                               self._solver is not None)

    def restore(self, snapshot):
        """Put back a `snapshot()` of this scene (ValueError naming both scenes for another's, and
        naming the field and value of anything no run of this scene can hold: physics.restorable;
        a refused snapshot changes nothing)."""
        fingerprint, name = self._scene_identity()
        if not isinstance(snapshot, Snapshot):
            raise ValueError(f"restore: got {type(snapshot).__name__}; expected a physics.Snapshot")
        if snapshot.scene != fingerprint and snapshot.scene_name != name:
            raise ValueError(f"restore: the snapshot is of scene {snapshot.scene_name}, not of {name}")
        if snapshot.scene != fingerprint:   # the same title and file: the file changed since
            nodes = len(snapshot.arrays.get("local.scale", ()))
            raise ValueError(f"restore: the snapshot is of another version of scene {name}: its model differs"
                             + (f" ({nodes} nodes, here {len(self.names)})" if nodes != len(self.names) else
                                " (nodes, masses, shapes, joints, events or [world] values; a recording's "
                                "scene digests say which)"))
        self.check_restorable(snapshot)
        self.settings.update(snapshot.settings)
        parent = snapshot.arrays["topology.parent"]
        if not np.array_equal(parent, self.parent):
            self._set_topology(parent)
        self.data.load(snapshot.arrays)
        self.data.step_count = snapshot.step_count
        self.diverged = None
        self._runaway_reference, self._runaway_due = None, 0.0
        if self._solver is not None:
            self._solver.forget()
        self._synced = _STALE

    def state_hash(self):
        """SHA-256 (64 hex digits) of the state that decides the future (`snapshot`): equal
        hashes, equal futures. Box2D's and Jolt's determinism hashes are the model."""
        return self.snapshot().hash()

    # ------------------------------------------------------------------ queries
    def world(self):
        """DynamicTransform (batch N): every node relative to the world."""
        self._sync(_COMPLETE)
        return self.hierarchy.world_state.to_dynamic_transform()

    def world_poses(self):
        """(translation (N, 3), rotation (N, 3, 3), scale (N,)) of every node relative to the world,
        copies. Poses depend only on the local poses, which the stages keep current, so one world
        pass gives them without settling the dynamic bodies' velocities and accelerations
        (`_sync`): the cheap query for drawing; `world()` for the motion."""
        world = self.hierarchy.world_state if self._synced != _STALE else self.hierarchy.update_world()
        return world.translation.copy(), world.rotation.copy(), world.scale.copy()

    def local(self):
        """DynamicTransform (batch N): every node relative to its parent, in the parent frame."""
        self._sync(_COMPLETE)
        return self.hierarchy.local.to_dynamic_transform()

    def inertial_accelerations(self):
        """dict frame/euler/centrifugal/coriolis -> (N, 3) world-frame accelerations of each dynamic
        body due to its parent's motion (zero for other nodes and for bodies parented to the world)."""
        self._sync(_COMPLETE)
        out = {name: np.zeros((len(self.names), 3)) for name in ("frame", "euler", "centrifugal", "coriolis")}
        if self.model.dyn.size:
            local = self.hierarchy.local
            terms = inertial_accelerations(local.translation[self.model.dyn], local.velocity[self.model.dyn],
                                           self._frame(slice(None)))
            for name, values in terms.items():
                out[name][self.model.dyn] = values
        return out

    def constraint_accelerations(self):
        """(linear (N, 3), angular (N, 3)) world frame: the share of each dynamic body's reported
        acceleration and angular acceleration that the last solver stage (contacts, joints) gave it,
        Δv / h and Δω / h (zero for other nodes). With the inertial terms it completes the global-to-local
        conversion ("The Dynamics of a Transform Hierarchy"): a1 = J2⁻¹ (F/m + constraint + frame + euler + centrifugal + coriolis)."""
        self._sync(_COMPLETE)       # a sleeping body's share is what holds it, found there
        linear, angular = np.zeros((len(self.names), 3)), np.zeros((len(self.names), 3))
        linear[self.model.dyn] = self.data.constraint_acceleration[:, :3]
        angular[self.model.dyn] = self.data.constraint_acceleration[:, 3:]
        return linear, angular

    def _bodies(self, subtree):
        """Slots (into the dynamic bodies) of every body, or of those in `subtree` (a node's name or
        index: the node and its descendants)."""
        if subtree is None:
            return slice(None)
        root = self._resolve(subtree)
        inside = self.model.descendants(root)
        inside[root] = True
        return np.flatnonzero(inside[self.model.dyn])

    def energy(self, subtree=None):
        """dict kinetic, potential (J) of all dynamic bodies, or of those in `subtree` (a node: it
        and its descendants, e.g. the car and its cargo): ½ m v² + ½ ω_bᵀ I ω_b, −m g · x."""
        self._sync(_MOVING)
        slots = self._bodies(subtree)
        world, nodes = self.hierarchy.world_state, self.model.dyn[slots]
        mass = self.mass[nodes]
        velocity = world.velocity[nodes]
        kinetic = 0.5 * (mass @ np.einsum("bi,bi->b", velocity, velocity)
                         + np.sum(self.inertia_body[nodes] * self.data.omega_body[slots] ** 2))
        potential = -mass @ (world.translation[nodes] @ self.settings.gravity)
        return {"kinetic": float(kinetic), "potential": float(potential)}

    def momentum(self, subtree=None):
        """dict linear (3,), angular (3,) about the world origin, of all dynamic bodies or of those
        in `subtree` (as `energy`): P = Σ m v,  L = Σ x × m v + R3 (I ω_b)."""
        self._sync(_MOVING)
        slots = self._bodies(subtree)
        world, nodes = self.hierarchy.world_state, self.model.dyn[slots]
        p = self.mass[nodes][:, None] * world.velocity[nodes]
        spin = rows_times(world.rotation[nodes], self.inertia_body[nodes] * self.data.omega_body[slots])
        return {"linear": p.sum(axis=0), "angular": (cross(world.translation[nodes], p) + spin).sum(axis=0)}

    def body_energies(self):
        """dict kinetic, potential -> (N,) J per node: each dynamic body's ½ m v² + ½ ω_bᵀ I ω_b and
        −m g · x, 0 for the other nodes (the terms `energy()` sums)."""
        self._sync(_MOVING)
        world, nodes = self.hierarchy.world_state, self.model.dyn
        kinetic, potential = np.zeros(len(self.names)), np.zeros(len(self.names))
        mass, velocity = self.mass[nodes], world.velocity[nodes]
        kinetic[nodes] = 0.5 * (mass * np.einsum("bi,bi->b", velocity, velocity)
                                + np.einsum("bi,bi->b", self.inertia_body[nodes], self.data.omega_body ** 2))
        potential[nodes] = -mass * (world.translation[nodes] @ self.settings.gravity)
        return {"kinetic": kinetic, "potential": potential}

    def body_momenta(self):
        """dict -> (N, 3) world frame per node, each dynamic body's linear p = m v, angular about the
        world origin x × p + R3 (I ω_b) (the terms `momentum()` sums) and spin R3 (I ω_b), its
        angular momentum about its own origin (the centre of mass); 0 for the other nodes."""
        self._sync(_MOVING)
        world, nodes = self.hierarchy.world_state, self.model.dyn
        out = {name: np.zeros((len(self.names), 3)) for name in ("linear", "angular", "spin")}
        p = self.mass[nodes][:, None] * world.velocity[nodes]
        spin = rows_times(world.rotation[nodes], self.inertia_body[nodes] * self.data.omega_body)
        out["linear"][nodes], out["spin"][nodes] = p, spin
        out["angular"][nodes] = cross(world.translation[nodes], p) + spin
        return out

    def contacts(self):
        """(points (K, 3), normals (K, 3)) world frame: the contacts of the last step."""
        c = None if self._solver is None else self._solver.contacts
        if c is None:
            return np.zeros((0, 3)), np.zeros((0, 3))
        return c.point_world.copy(), c.normal_world.copy()

    def solver_residual(self):
        """(sweeps,) the solver's residual ‖Γλ − η‖ (projected) after each sweep of the last step's solve stage
        (`iterations` of them, more on a cold start: `physics.solver.COLD_START_SWEEPS`)."""
        return np.zeros(0) if self._solver is None else self._solver.residual.copy()

    def joint_separation(self):
        """(J,) m: for each joint, the world distance between its anchor on body a and its anchor on
        body b, |(c_a + R_a r_a) − (c_b + R_b r_b)| (an anchor on the world is a world point): a ball
        joint's position error. Empty before the first step (joints are built by the first prepare)."""
        joints = None if self._solver is None else self._solver.joints
        if joints is None:
            return np.zeros(0)
        _, centre, rotation, _, _ = self._solver_state()
        ends = np.empty((len(joints.kind), 2, 3))
        for side in range(2):
            k = joints.body[:, side]
            anchor = joints.anchor[:, side]
            on_body = np.einsum("jab,jb->ja", rotation[np.maximum(k, 0)], anchor) + centre[np.maximum(k, 0)]
            ends[:, side] = np.where((k >= 0)[:, None], on_body, anchor)
        return np.linalg.norm(ends[:, 0] - ends[:, 1], axis=1)

    def first_non_finite(self):
        """Name of the first node whose world state holds a NaN or infinity, else None."""
        self._sync(_MOVING)
        world = self.hierarchy.world_state
        bad = ~(np.isfinite(world.translation).all(axis=1) & np.isfinite(world.velocity).all(axis=1)
                & np.isfinite(world.rotation).all(axis=(1, 2)) & np.isfinite(world.omega).all(axis=1)
                & np.isfinite(world.scale))
        return self.names[int(np.argmax(bad))] if bad.any() else None

    def acceleration_terms(self, node, frame=None):
        """The world acceleration of `node`'s origin (a name or index, or a sequence of them)
        decomposed by the transport theorem as seen from `frame` (a node's name or index; None or
        "world": the world), physics.relative_motion:

            world = relative + constraint + frame + euler + centrifugal + coriolis

        frame = a_F (the frame origin's acceleration), euler = α_F × r, centrifugal = ω_F × (ω_F × r),
        coriolis = 2 ω_F × v_rel, r = x − x_F, v_rel = v − v_F − ω_F × r; constraint = the last
        solver stage's share of a dynamic node's acceleration (contacts, joints:
        `constraint_accelerations`), 0 for other nodes; relative = the rest of the acceleration
        relative to the frame (relative + constraint = a_rel = R_F d²p̃/dt², p̃ the node in F's axes).

        -> dict relative, constraint, frame, euler, centrifugal, coriolis, world: world-axis vectors
        (m/s²), (3,) for one node, (K, 3) for a sequence. The node's own frame gives all zeros but
        `world` and `frame`; the world frame gives zero transport terms."""
        from physics.relative_motion import transport_terms

        single = isinstance(node, (str, int, np.integer))
        nodes = np.array([self._resolve(n) for n in ([node] if single else node)], dtype=np.int64)
        self._sync(_COMPLETE)
        world = self.hierarchy.world_state
        x, v, a = world.translation[nodes], world.velocity[nodes], world.acceleration[nodes]
        if frame is None or (isinstance(frame, str) and frame == "world" and "world" not in self.model.index):
            zero = np.zeros_like(x)
            frame_motion = (zero, zero, zero, zero, zero)
        else:
            f = self._resolve(frame)
            rows = lambda values: np.broadcast_to(values[f], x.shape)
            frame_motion = (rows(world.translation), rows(world.velocity), rows(world.acceleration),
                            rows(world.omega), rows(world.alpha))
        out = transport_terms(x, v, a, *frame_motion)
        constraint = np.zeros_like(x)
        slots = self.model.dyn_slot[nodes]
        constraint[slots >= 0] = self.data.constraint_acceleration[slots[slots >= 0], :3]
        out["relative"] = out["relative"] - constraint
        out["constraint"] = constraint
        out["world"] = a.copy()
        order = ("relative", "constraint", "frame", "euler", "centrifugal", "coriolis", "world")
        return {name: out[name][0] if single else out[name] for name in order}



def _vector3(name, value):
    array = np.asarray(value, dtype=float)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: got {value!r} (shape {array.shape}); expected 3 finite numbers")
    return array


def _matrices_from_quaternions(q):
    """(N, 4) unit quaternions (w, x, y, z) -> (N, 3, 3) active rotation matrices."""
    from physics.rotation import matrix_from_quaternion
    return np.ascontiguousarray(matrix_from_quaternion(q))
