"""The step: one list of named stages, each a function of (model, data, settings, work, context).

MuJoCo's mj_step(m, d) and Box2D v3's b2SolverStage list: `physics.model.model.Model` is what stays
constant, `physics.pipeline.data.Data` what the steps change, `physics.core.settings.Settings` the knobs, and
`Workspace` what the stages work with for one topology and keep nothing of between steps that a
snapshot would need: the hierarchy's world pass (its world state a cache of the Data's local state,
`sync`), the contact and joint solver (its carried state is the Data's), and the kernels' bundles
over the Data's arrays. `StepContext` is built once per sub-step (`step_context`): every stage reads h, the scheme
and the awake set from it, and none looks up a mode of its own.

A step of settings.dt (`physics.pipeline.step`) is settings.substeps sub-steps. A sub-step is the
STAGES in order (`substep`), or a form of them with a guarantee the plain list cannot give on its
own: RATTLE's retry and triple jump (`physics.pipeline.retry`), and `free_substep`: free bodies,
nothing to touch, no parents — the stages fused into the integrator's one pass over the local
arrays (the same bits).

A stage that finds a body diverged raises `Diverged` (node, quantity, value); the Simulation makes
it the public DivergenceError or OutOfBoundsError (it tells them apart by the energy) and keeps it.
A body through a surface raises `PenetrationError` from the prepare stage.

Frames: world poses and velocities (`x_world`, `v_world`) in the hierarchy's world state; local ones
in the Data's `local`; omega_body in body axes (physics.pipeline.data).
"""
import math
from functools import partial
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physics.core import profile
from physics.core.compiled import bind, generation, same
from physics.constraints.rattle import BodyPasses
from physics.constraints.solver import MASS_RATIO_HELD
from physics.dynamics.body_passes import NO_ROWS, DynamicBodies, DynamicInputs, body_energy, NodeArrays, angular_momentum, \
    apply_changes, dynamic_inputs, first_divergent, impulse_changes, place_bodies, rows_times, rows_transposed_times, \
    scatter_motion, solver_bodies, WorldBodies
from physics.pipeline.data import Motion
from physics.dynamics.integrators import Frame, advance_bodies, advancing, lie_scratch, local_accelerations, omega_local_from_body
from physics.dynamics.kinematics import advance_kinematic
from physics.math.rotation import cross
from physics.core.settings import Settings
from physics.dynamics.sleeping import Bodies, LocalMotion, hold, island_of, parent_motion, sleep_islands, wake_on_field
from physics.model.hierarchy import world_from_local
from physics.core.choices import INTEGRATOR_TRAITS
from physics.core.validation import LENGTH_MAX, SPEED_MAX

# Divergence (`Diverged`): a moving node's local state must stay finite and within ten times the
# ranges a scene may start in (physics.core.validation): past them the products a step forms are no
# longer guaranteed finite, and a body there has run away (an explosion, or energy gained without
# input). Checked after the free motion and after the solver of every sub-step, in one compiled pass
# (free bodies: inside the integrator's pass, `free_substep`).
DIVERGENCE_LENGTH = 10 * LENGTH_MAX     # m
DIVERGENCE_SPEED = 10 * SPEED_MAX       # m/s and rad/s
QUANTITIES = ("translation", "rotation", "velocity", "angular velocity")
# Runaway (`RunawayError`): a scene with no driver (no moving kinematic node, no applied force or
# torque, no joint actuator pushing: `actuators_push`) can gain energy only through inputs
# (settings, impulses, reparenting, controls). Once a simulated second the total energy is compared
# with its value after the last input, taken before the next step starts (none while an actuator
# pushes, until the next input; never re-taken within a run otherwise: the reach policy's hand-off
# keeps every body's world motion, so it is no input, and a reference taken in the middle of a
# blow-up would let it grow on); growth beyond what would double the kinetic energy, lift every
# body by the scene's size and set it moving at RUNAWAY_SPEED stops the run. Drift of an integrator
# or a joint (a few per cent) stays far below that.
RUNAWAY_EVERY = 1.0         # s of simulated time
DRIVEN = "driven"           # the runaway reference while an actuator pushes: nothing to compare
RUNAWAY_SPEED = 1.0         # m/s
_NO_PAIRS = np.zeros((0, 2), np.int64)     # the sleep stage's candidate pairs where nothing can touch
# How far the hierarchy's world state is current with the Data (`sync`): not at all; every node's
# world pose and velocity; and every dynamic node's derived local ω, a and α too.
STALE, MOVING, COMPLETE = 0, 1, 2


class DivergenceError(ValueError):
    """A simulation whose state went non-finite or ran away: `node` (name), `step` (the step in which
    it happened, 1 = the first), `time` (s, the sub-step's end), `quantity` and `value` say where and
    what. The simulation stays stopped (every `step` raises it again) until `reset` or `restore`."""

    def __init__(self, node, step, time, quantity, value, limit):
        self.node, self.step, self.time, self.quantity, self.value = node, step, time, quantity, value
        what = f"is {value}" if not math.isfinite(value) else f"reached {value:.3g} (limit {limit:.0e})"
        super().__init__(f"node {node!r} diverged in step {step} (t = {time:.6g} s): its local {quantity} {what}")


class OutOfBoundsError(DivergenceError):
    """A body that left the world's bounds (DIVERGENCE_LENGTH from its parent's origin) with a finite
    speed and no energy gained since the last input (the runaway reference): a body flying or
    rolling away, not a blow-up. `speed` (m/s) is its local speed then."""

    def __init__(self, node, step, time, value, limit, speed):
        self.node, self.step, self.time, self.quantity, self.value, self.speed = node, step, time, "translation", value, speed
        ValueError.__init__(self, f"node {node!r} left the world's bounds in step {step} (t = {time:.6g} s): its local "
                                  f"translation reached {value:.3g} m (limit {limit:.0e} m) at {speed:.3g} m/s, with no "
                                  "energy gained; not a divergence")


# How far (rad or m) past its limit a joint's easing, shrinking, makes an input to the runaway
# check (`stage_joints`): a joint resting on its limit stays within the projection's tolerance of it.
EASING_INPUT = 1e-3


class RunawayError(DivergenceError):
    """Energy grown without input in a scene with no driver (RUNAWAY_EVERY): `node`
    is the body with the most kinetic energy (translation and spin), `value` the energy gained (J)
    and `limit` the allowance."""

    def __init__(self, node, step, time, value, limit):
        self.node, self.step, self.time, self.quantity, self.value = node, step, time, "energy", value
        ValueError.__init__(self, f"the run gained {value:.4g} J of energy without input by step {step} "
                                  f"(t = {time:.6g} s; allowance {limit:.4g} J): a runaway; most energetic body {node!r}")


class PenetrationError(DivergenceError):
    """A dynamic shape deeper inside a static or kinematic shape than half its own size
    (physics.constraints.solver.SINK_SIZES), or a tenth of it under a body more than MASS_RATIO_HELD
    times heavier (SINK_SIZES_PRESSED): it is falling through that surface, which no contact solve
    undoes, and a run that went on would show it under the ground. `node` names the dynamic node,
    `surface` the node it is inside, `value` the depth (m), `limit` the shape's size (its bounding
    diameter) and `bound` the fraction of it passed, `step` and `time` the step that found it and
    its sub-step's start (where the contact points are taken); `cause` names the settings that
    weaken the contact solve or lengthen the step."""

    def __init__(self, node, surface, step, time, depth, size, cause, bound=0.5):
        self.node, self.step, self.time, self.quantity, self.value = node, step, time, "penetration", depth
        self.surface, self.limit, self.cause, self.bound = surface, size, cause, bound
        share = {0.5: "half", 0.1: "a tenth of"}.get(bound, f"{bound:g} of")
        ValueError.__init__(self, f"node {node!r} fell through {surface!r} in step {step} (t = {time:.6g} s): it is "
                                  f"{depth:.3g} m deep inside it, more than {share} its own size ({size:.3g} m); the "
                                  f"contact solve could not hold it: {cause}")


class Diverged(Exception):
    """A stage found node `node`'s local `quantity` (an index into QUANTITIES) at `value`, outside
    the finite range, in the step about to be counted: what the Simulation turns into its public
    DivergenceError or OutOfBoundsError."""

    def __init__(self, node, quantity, value):
        self.node, self.quantity, self.value = node, quantity, value
        super().__init__(f"node {node} diverged: {QUANTITIES[quantity]} {value}")


class OutsideIsland(Exception):
    """A half of a RATTLE retry brought its island within reach of a body outside it, which has
    taken its whole step already (`physics.pipeline.retry.rattle_substep`)."""


def contact_cause(settings, heavier=None):
    """What likely let a body through a surface (`PenetrationError`): a body it carries more than
    MASS_RATIO_HELD times heavier (`heavier`: (name, mass ratio) of the heaviest it touches, or
    None); the settings that weaken the contact solve or lengthen the step against their defaults
    (a lower sor, erp or iteration count, softness, a sub-step longer than the default dt, at which
    the contact rows are measured to hold in one sub-step: docs/fidelity.md), each with its
    default; else the body was too small or too fast for the sub-step."""
    if heavier is not None and heavier[1] > MASS_RATIO_HELD:
        return (f"likely the weight of {heavier[0]!r}, {heavier[1]:.3g} times its mass, pressing it down (the contact "
                f"solve holds a body under one up to about {MASS_RATIO_HELD:g} times heavier); give them closer masses")
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


class StepContext(NamedTuple):
    """What every stage of one sub-step reads, built once for it (`step_context`; Box2D v3's
    b2StepContext): no stage looks up a setting or a mode of its own."""

    h: float                    # s, the sub-step (negative: the triple jump's middle one)
    integrator: str             # its scheme (lie-midpoint within lie-midpoint-4's composed RATTLE step)
    position_fraction: float    # of a velocity change the scheme's position update sees (INTEGRATOR_TRAITS)
    surface_lead: float         # s, how far ahead a moving surface's velocity is taken (INTEGRATOR_TRAITS)
    rattle: bool                # its joints are stepped by RATTLE (INTEGRATOR_TRAITS, joints present)
    sleeping: bool              # some body sleeps at its start (wake on field, hold)
    active: np.ndarray | None = None    # (D,) bool: the bodies it steps (a RATTLE retry's island,
                                        # `physics.pipeline.retry.Undo`); None: every one
    composed: bool = False      # a sub-step of RATTLE's step composed by the triple jump (physics.pipeline.step)
    final: bool = False         # its budget holds no retry (the last halving, or the step's budget spent:
                                # physics.pipeline.retry): it stands where its projection met the joints
    abandon: tuple | None = None    # (start, left, step): errors past which a RATTLE projection stops,
                                    # its sub-step certain to be taken again as halves (rattle.NEVER: none)


@dataclass
class Runaway:
    """The runaway check's reference (RUNAWAY_EVERY): the total energy after the last input and the
    allowance past it (None: to be taken before the next step; DRIVEN: an actuator pushes), and when
    the next check is due (s).
    Not state of the run: a restore takes it afresh (`take_runaway_reference`, `check_runaway`)."""

    reference: tuple | str | None = None
    due: float = 0.0
    energy_call: tuple | None = None    # (the arrays, `generation()`, the bound `body_energy`, its out): `runaway_energy`
    easing: float = math.inf    # the last sub-step's `SceneSolver.limit_easing` (`stage_joints`)

    def input(self):
        """An input (an impulse, a setting, a reparent) changed the energy: a new reference is taken
        before the next step."""
        self.reference = None

    def reset(self):
        """As at load: no reference, the first check due at once."""
        self.reference, self.due, self.easing = None, 0.0, math.inf


class Calls(NamedTuple):
    """The stages' kernel calls whose every argument is the Workspace's own — the Data's arrays,
    the bundles over them, the hierarchy's, `Workspace.gravity` — bound once a topology
    (physics.core.compiled.bind: no typing of the arguments at each call). Each is called with none."""

    world: Callable             # the hierarchy's world pass, the local state as it is
    world_spin: Callable        # the same, each dynamic body's local ω from omega_body on the way (`sync`)
    bodies_spin: Callable       # `world_spin` over the dynamic bodies and their ancestors alone (`Workspace.body_passes`)
    divergent: Callable         # first_divergent over the moving nodes -> (node, quantity, value)
    solver_bodies: Callable     # the solver's bodies into `Workspace.bodies`
    inputs: Callable            # dynamic_inputs into `Workspace.inputs`
    place: tuple                # place_bodies, one call a generation, parents first
    scatter_kinematic: Callable     # the kinematic nodes' stepped motion into the local state
    wake: Callable              # wake_on_field
    hold: Callable              # sleeping bodies stay where they rest
    apply: Callable             # `apply_world_changes` of every body (apply_changes on `Workspace.changes`,
                                # `Workspace.apply_flags`): the move, the world pass, the momentum, the carry
    momentum: Callable          # the solver's bodies' world angular momentum into `Workspace.momentum`
    joint_kick: Callable        # RATTLE's position projection (`Workspace.projected`) as `Workspace.changes`
                                # over the step `Workspace.step_length`


class Workspace:
    """What the stages work with for one topology, besides the model, the data and the settings:
    the hierarchy (its world pass; `world` says how far its world state is current, `sync`), the
    solver (None when nothing can touch), the scene's timed impulses, the runaway check's
    reference and the sub-step counts (shared with the Simulation), and the kernels' bundles over the Data's arrays
    (`NodeArrays`, `DynamicBodies`, physics.dynamics.sleeping's) and the calls bound to them (`calls`),
    built at load and for each topology."""

    def __init__(self, model, data, settings, hierarchy, solver, events, runaway, substeps):
        self.hierarchy, self.solver, self.events, self.runaway = hierarchy, solver, events, runaway
        self.substeps = substeps    # the passes asked for and run (physics.pipeline.retry.SubstepCount), the Simulation's
        self.drives = None      # the actuators on nodes (physics.dynamics.driving.Drives), the Simulation's
        self.world = STALE
        self.local_arrays = NodeArrays(*hierarchy.local.views())
        self.world_arrays = NodeArrays(*hierarchy.world_state.views())
        self.dynamic = DynamicBodies(model.dyn, model.dyn_parent, model.nearest_dynamic_slot, model.generation_order,
                                     model.mass_dyn, model.inertia_dyn, model.force_applied, model.own_motion)
        self.inputs = DynamicInputs.empty(model.dyn.size)
        self.frames = tuple(self.inputs[4:])
        # the integrator's eight arrays (`stage_dynamic`): the inputs gathered, omega_body, the masses
        self.step_bodies = (self.inputs.translation, self.inputs.rotation, self.inputs.velocity, data.omega_body,
                            model.mass_dyn, model.inertia_dyn, self.inputs.force, model.torque_applied)
        self.dynamic_motion = Motion(self.inputs.translation, self.inputs.rotation, self.inputs.velocity, NO_ROWS)
        self.sleep_bodies = Bodies(model.dyn, model.dyn_parent, model.sleepable)
        local = self.local_arrays
        self.local_motion = LocalMotion(local.translation, local.rotation, local.velocity, data.omega_body)
        self.parent_motion = parent_motion(hierarchy.world_state)
        # The free-body sub-step (`free_substep`): every dynamic body a root, in one contiguous run of
        # nodes, nothing kinematic, nothing to touch. The integrator then steps the hierarchy's local
        # arrays in place (a root's local state is its world state), with no gather, no scatter and
        # no world pass, and checks divergence in the same pass.
        dyn = model.dyn
        self.free = None
        if (dyn.size and solver is None and model.kin.size == 0 and not model.any_parented
                and dyn[-1] - dyn[0] + 1 == dyn.size):
            rows = slice(int(dyn[0]), int(dyn[-1]) + 1)
            self.free = (local.translation[rows], local.rotation[rows], local.velocity[rows], data.omega_body,
                         model.mass_dyn, model.inertia_dyn, self.inputs.force, model.torque_applied)
        # lie-midpoint's columns for `free_motion`, kept
        self.free_scratch = None if self.free is None else lie_scratch(dyn.size)
        self.free_gravity = None        # what self.inputs.force was last made with
        self.found = np.empty(6)        # the free-body sub-step's divergence check (`free_substep`)
        self.gravity = np.zeros(3)      # settings.gravity at the step's start (`refresh`), for `calls`
        # `apply_world_changes`' outputs: each body's change of world [v, ω], its rotation before
        self.moved_total, self.moved_before = np.empty((dyn.size, 6)), np.empty((dyn.size, 3, 3))
        # the solver's bodies in world terms (`solver_state`), written in place by each call
        self.bodies = WorldBodies.empty(dyn.size)
        self.moving = np.ones(dyn.size, bool)   # the bodies `apply_world_changes` moves: all, or a retry's island
        self.all_jointed = _all_jointed(model)     # a RATTLE retry's island is every body (`Undo.take`)
        self.undo_rooms = {}        # the last `Undo` at each halving level (whole-world, island), done with at the next
        # `apply_world_changes`' inputs, Δv and Δx [Δx, Δθ] (D, 6): a stage writes them here, or they are copied here
        self.changes = (np.empty((dyn.size, 6)), np.empty((dyn.size, 6)))
        self.carry_target = np.empty((dyn.size, 3))     # the carried velocities' (`apply_world_changes`)
        # RATTLE's position projection (`stage_joints`): its input, the bodies' world angular momentum,
        # and its outputs (dx, dθ, the impulse × h), in which its call stays bound; the sub-step's h
        self.momentum = np.empty((dyn.size, 3))
        self.projected = (np.empty((dyn.size, 3)), np.empty((dyn.size, 3)), np.empty((dyn.size, 6)))
        self.step_length = np.zeros(1)

        # `apply_world_changes`' one call for every body: (counteraction on, carried velocities kept, a
        # velocity change given), written before each call
        self.apply_flags = np.zeros(3, np.int64)
        # what `carry_pass` takes besides the arrays `apply_changes` has already
        carry = (self.carry_target, model.dyn_slot)
        # The world passes between a sub-step's whole ones (the dynamic stage's between generations,
        # each move's, RATTLE's stage's) feed the bodies' own passes alone, and each is followed by
        # a stale world (`work.world`, so that the next reader syncs it whole): they go over the
        # dynamic bodies and their ancestors, not the shapes and other nodes they carry (the ant's
        # 38 nodes, 20 of them such)
        through = _bodies_and_ancestors(model)
        # the bodies' passes of RATTLE's stage, as their arguments: bound one by one (`calls`) or run
        # together by the stage's one call (`stage_joints`)
        self.body_passes = BodyPasses(
            np.zeros(1, np.int64), hierarchy.world_pass_arguments(model.dyn_slot, data.omega_body, through),
            (self.dynamic, self.world_arrays, data.omega_body, self.bodies), self.bodies, (self.bodies, self.momentum),
            self.projected, (model.inverse_mass, self.bodies, *self.projected, self.step_length, *self.changes),
            self.changes,
            (self.apply_flags, self.dynamic, *self.changes, self.world_arrays, local, self.moved_total,
             self.moved_before, self.moving, data.constraint_acceleration,
             hierarchy.world_pass_arguments(through=through), data.omega_body, carry),
            data.constraint_acceleration)
        passes = self.body_passes

        def calls():
            return Calls(
                hierarchy.world_pass(), hierarchy.world_pass(model.dyn_slot, data.omega_body),
                bind(world_from_local, *passes.spin),
                bind(first_divergent, model.moving, model.dyn_slot, local, data.omega_body, DIVERGENCE_LENGTH,
                     DIVERGENCE_SPEED),
                bind(solver_bodies, *passes.gather),
                bind(dynamic_inputs, self.dynamic, self.world_arrays, local, self.gravity, self.inputs),
                tuple(bind(place_bodies, self.dynamic, slots, self.dynamic_motion, self.world_arrays, local)
                      for slots in model.generations),
                bind(scatter_motion, model.kin, data.kinematic, local),
                bind(wake_on_field, self.sleep_bodies, self.parent_motion, self.gravity, data.sleep),
                bind(hold, self.sleep_bodies, data.sleep, self.local_motion),
                bind(apply_changes, *passes.apply),
                bind(angular_momentum, *passes.momentum),
                bind(impulse_changes, *passes.kick))
        self._calls = calls
        self._any_parented = model.any_parented
        self._kinematic = bool(model.kin.size)
        self.contexts = {}      # the sub-steps' `StepContext`s, made once (`step_context`, `judged`)
        self.last_judged = (None, None, None, None)     # `judged`'s last: (context, final, abandon, judged)
        self._advancing = {}    # (h, integrator, gyroscopic) -> the integrator's bound pass (`advancing`)
        self._bound = -1       # physics.core.compiled.generation() when `calls` were bound
        self.calls = None
        self.refresh(settings, data)

    def advancing(self, h, integrator, gyroscopic):
        """The dynamic stage's integrator pass over every body (`stage_dynamic`'s arrays) for this
        step h, integrator and gyroscopic term, as a call bound to them
        (physics.dynamics.integrators.advancing), made once for each and again with `calls`."""
        key = (h, integrator, gyroscopic)
        call = self._advancing.get(key)
        if call is None:
            if len(self._advancing) > 16:     # (h takes a few values: halves, the triple jump's)
                self._advancing.clear()
            call = self._advancing[key] = advancing(self.step_bodies, h, integrator, gyroscopic,
                                                    self.frames if self._any_parented else None)
        return call

    def refresh(self, settings, data):
        """Before a step: `gravity` as `settings` has it now, the stages with work to do in its
        sub-steps, and `calls` bound again if a kernel gained a compiled version since they were (the
        interpreted tier's kernels, compiled or loaded meanwhile)."""
        self.gravity[...] = settings.gravity      # (`[...]`: `[:]` makes a view to assign through, an allocation)
        # without sleep, none wakes, holds or falls asleep; without kinematic nodes, none is moved;
        # with every timed impulse struck (the scene's, in time order), none is due
        self.stages = _STAGE_LISTS[bool(settings.sleep or self._kinematic), data.next_event < len(self.events)]
        if self._bound != generation():
            self._bound = generation()
            self.calls = self._calls()
            self._advancing = {}


# ---------------------------------------------------------------------- the world state, derived
def _bodies_and_ancestors(model):
    """(N,) bool: the dynamic bodies' nodes and every ancestor of one (`Workspace`'s passes between
    whole ones)."""
    through = np.zeros(len(model.parent), bool)
    for node in model.dyn.tolist():
        while node >= 0 and not through[node]:      # (stops at an ancestor marked already: O(N) in all)
            through[node] = True
            node = int(model.parent[node])
    return through


def frame(model, work, slots):
    """The parents' world motion (an integrators.Frame) for the dynamic bodies `slots`; bodies
    parented to the world get the identity frame."""
    world = work.hierarchy.world_state
    parent = model.dyn_parent[slots]
    out = Frame(world.rotation[parent], world.scale[parent], world.acceleration[parent],
                world.omega[parent], world.alpha[parent])
    if model.dyn_rooted.all():
        return out
    roots = np.flatnonzero(parent < 0)
    if roots.size:
        out.rotation[roots] = np.eye(3)
        out.scale[roots] = 1.0
        for values in (out.acceleration, out.angular_velocity, out.angular_acceleration):
            values[roots] = 0.0
    return out


def forces(model, data, settings, work, slots=slice(None), reported=False):
    """World force (gravity + applied) and torque on the dynamic bodies `slots`; `reported` adds
    the last solver stage's share, F_c = m Δv / h and τ_c = I_world Δω / h (Newton–Euler for the
    stage's change of the world motion, `Data.constraint_acceleration`)."""
    mass = model.mass_dyn[slots]
    force = mass[:, None] * settings.gravity + model.force_applied[slots]
    torque = model.torque_applied[slots]
    if reported:
        change = data.constraint_acceleration[slots]
        rotation = work.hierarchy.world_state.rotation[model.dyn[slots]]
        force = force + mass[:, None] * change[:, :3]
        torque = torque + rows_times(rotation, model.inertia_dyn[slots] * rows_transposed_times(rotation, change[:, 3:]))
    return force, torque


def _sync_generation(model, data, settings, work, slots):
    """Derive the hierarchy's omega_local of dynamic `slots` from omega_body and their local
    accelerations from the forces ("The Dynamics of a Transform Hierarchy", "Converting Global
    Dynamics To Local Dynamics"); parents must be settled. The accelerations are the reported ones:
    gravity, applied forces and the contact and joint forces of the last solver stage (`forces`),
    in the parents' reported motion (a crate resting on the deck reports a = 0, not −g)."""
    local, nodes = work.hierarchy.local, model.dyn[slots]
    parents = frame(model, work, slots)
    rotation = local.rotation[nodes]
    omega_body = np.ascontiguousarray(data.omega_body[slots])
    local.omega[nodes] = omega_local_from_body(rotation, omega_body, parents)
    held = data.sleep.asleep[slots]
    if held.any():
        data.constraint_acceleration[slots[held]] = 0.0     # the free motion first (below)
    force, torque = forces(model, data, settings, work, slots, reported=True)
    acceleration, alpha = local_accelerations(
        local.translation[nodes], rotation, local.velocity[nodes], omega_body,
        model.mass[nodes], model.inertia_body[nodes], force, torque, settings.gyroscopic, parents)
    if held.any():
        # a sleeping body rides its parent rigidly: a1 = α1 = 0 (also as the frame of what it
        # carries), and what holds it there is the constraint share, −J2 a1_free and −R2 α1_free
        R2, s2, k = parents.rotation[held], parents.scale[held], slots[held]
        data.constraint_acceleration[k, :3] = -s2[:, None] * rows_times(R2, acceleration[held])
        data.constraint_acceleration[k, 3:] = -rows_times(R2, alpha[held])
        acceleration[held], alpha[held] = 0.0, 0.0
    local.acceleration[nodes] = acceleration
    local.alpha[nodes] = alpha


def sync(model, data, settings, work, level):
    """Bring the world state (and dynamic nodes' derived local values) up to `level`:
    MOVING      every node's world pose and velocity (what the solver and a step need: a step
                reads no dynamic body's acceleration, `stage_dynamic`);
    COMPLETE    every node's world and local state, reported accelerations (what queries need)."""
    have = work.world
    if have == level or (level == MOVING and have != STALE):
        return
    if level == MOVING:
        # one pass: each dynamic body's local omega from omega_body on the way down
        work.calls.world_spin()
    else:   # generation by generation: a body's local acceleration needs its parent's world one
        work.hierarchy.update_world()
        for slots in model.generations:
            _sync_generation(model, data, settings, work, slots)
            work.hierarchy.update_world()
    work.world = level


def _all_jointed(model):
    """Whether every dynamic body is in a joint or in a tree of parented bodies (`nearest_dynamic_slot`:
    stepped whole) with a body in a joint: the joints' island (`island_of` over the parent links,
    as `physics.pipeline.retry.Undo.take` closes it) is then every body, whatever touches."""
    carried = np.flatnonzero(model.nearest_dynamic_slot >= 0)
    links = np.stack([carried, model.nearest_dynamic_slot[carried]], axis=1).astype(np.int64).reshape(-1, 2)
    jointed = np.flatnonzero(model.in_joint[model.dyn]).astype(np.int64)
    if not jointed.size:
        return model.dyn.size == 0
    return bool(island_of(links, model.dyn.size, jointed).all())


def solver_state(model, data, settings, work):
    """The dynamic bodies in world terms: the world state, centre (D,3), rotation (D,3,3), velocity
    (D,6) [v, ω], inverse world inertia (D,3,3) R I⁻¹ Rᵀ (one compiled gather, `solver_bodies`).
    The four are the Workspace's own arrays (`Workspace.bodies`), written again by the next call:
    what keeps one past it keeps a copy (the solver's M₀⁻¹, `SceneSolver.prepare`)."""
    sync(model, data, settings, work, MOVING)
    work.calls.solver_bodies()
    return (work.hierarchy.world_state, *work.bodies)


def check_divergence(model, data, work):
    """Raise `Diverged` if a moving node's local state left the finite range (DIVERGENCE_LENGTH,
    DIVERGENCE_SPEED): the run stops in the step where it happens, before any later stage or
    kernel sees the bad values."""
    node, quantity, value = work.calls.divergent()
    if node >= 0:
        raise Diverged(node, quantity, value)


def energy(model, data, settings, work, slots=slice(None), inside=None):
    """dict kinetic, potential (J) of the dynamic bodies `slots`: ½ m v² + ½ ω_bᵀ I ω_b, −m g · x;
    where joints have springs or armatures, spring and armature, and where actuators are position
    servos, servo (`SceneSolver.joint_energy`, at the controls now), and
    where a joint hangs from a moving frame, frame_work (`Data.frame_work`), of the joints whose
    side b is `inside` (D,) bool (all: None)."""
    sync(model, data, settings, work, MOVING)
    world, nodes = work.hierarchy.world_state, model.dyn[slots]
    mass = model.mass[nodes]
    velocity = world.velocity[nodes]
    kinetic = 0.5 * (mass @ np.einsum("bi,bi->b", velocity, velocity)
                     + np.sum(model.inertia_body[nodes] * data.omega_body[slots] ** 2))
    potential = -mass @ (world.translation[nodes] @ settings.gravity)
    out = {"kinetic": float(kinetic), "potential": float(potential)}
    solver = work.solver
    if solver is not None and solver.joints_termed:
        world, centre, rotation, velocity, _ = solver_state(model, data, settings, work)
        out.update(solver.joint_energy(world, centre, rotation, velocity, inside,
                                       None if data.solver is None else data.solver.control))
    if data.frame_work is not None:
        out["frame_work"] = float(data.frame_work[solver.joints_of(inside)].sum())
    return out


def energy_balance(energy):
    """The energy a run keeps, of an `energy` dict: kinetic + potential + the joints' spring,
    armature and servo − the moving frames' work, the last four where the scene has them."""
    return (energy["kinetic"] + energy["potential"] + energy.get("spring", 0.0) + energy.get("armature", 0.0)
            + energy.get("servo", 0.0) - energy.get("frame_work", 0.0))


def runaway_energy(model, data, settings, work):
    """The total energy the runaway check compares (`energy_balance` of `energy`, its reference's
    too): where no joint term or moving frame adds to it, the bodies' kinetic and potential energy
    by a call bound to their arrays (`physics.dynamics.body_passes.body_energy`, kept in
    `work.runaway`: the check allocates nothing; numpy's sums and index arrays took 4 to 5 KiB a
    check), else `energy`'s."""
    solver = work.solver
    if (solver is not None and solver.joints_termed) or data.frame_work is not None:
        return energy_balance(energy(model, data, settings, work))
    sync(model, data, settings, work, MOVING)
    world = work.hierarchy.world_state
    arrays = (model.dyn, model.mass, model.inertia_body, data.omega_body, world.velocity, world.translation,
              settings.gravity)
    kept = work.runaway.energy_call
    if kept is None or kept[1] != generation() or not same(kept[0], arrays):
        out = np.zeros(2)
        kept = work.runaway.energy_call = (arrays, generation(), bind(body_energy, *arrays, out), out)
    kept[2]()
    out = kept[3]
    return out.item(0) + out.item(1)


def take_runaway_reference(model, data, settings, work):
    """The runaway check's reference (RUNAWAY_EVERY): the total energy now, and the allowance of
    growth past it, from the kinetic energy, the scene's size and RUNAWAY_SPEED; DRIVEN where a
    joint's actuator pushes (`actuators_push`), which it does until the next input (a control set:
    a learner setting a motor's control every step pays for this test, not for the energy; one
    setting only position servos' pays for the energy, whose servo term the reference needs)."""
    if model.dyn.size == 0:
        return
    if actuators_push(data, work):
        work.runaway.reference = DRIVEN
        return
    now = energy(model, data, settings, work)
    translation = work.hierarchy.world_state.translation
    size = float(np.ptp(translation, axis=0).max(initial=0.0)) if len(translation) else 0.0
    mass = float(model.mass_dyn.sum())
    allowance = (now["kinetic"] + mass * math.hypot(*settings.gravity) * max(size, 1.0)
                 + 0.5 * mass * RUNAWAY_SPEED ** 2)
    work.runaway.reference = (runaway_energy(model, data, settings, work), allowance)


def check_runaway(model, data, settings, work):
    """RUNAWAY_EVERY: compare the total energy with its value after the last input (taken before the
    step after it, `take_runaway_reference`) and raise a RunawayError past the allowance."""
    work.runaway.due = data.time + RUNAWAY_EVERY
    if model.dyn.size == 0:
        return
    if work.runaway.reference is None:     # an input within this step (a timed impulse)
        take_runaway_reference(model, data, settings, work)
        return
    if work.runaway.reference is DRIVEN:   # an actuator's work since the last input, which no energy counts
        return
    total = runaway_energy(model, data, settings, work)     # (a spring let go, a turntable's work: no runaway)
    reference, allowance = work.runaway.reference
    if total - reference > allowance:
        velocity = work.hierarchy.world_state.velocity[model.dyn]
        kinetic = model.mass_dyn * np.einsum("bi,bi->b", velocity, velocity) + np.einsum(
            "bi,bi->b", model.inertia_dyn * data.omega_body, data.omega_body)
        raise RunawayError(model.names[model.dyn[int(np.argmax(kinetic))]], data.step_count, data.time,
                           total - reference, allowance)


def actuators_push(data, work):
    """Whether a joint's actuator does work on the run at its control now: a force G (g ctrl + b₀)
    ≠ 0 (a motor with a control, a velocity servo with a target speed, a bias force) where it is no
    spring, or a pull b₁ ≠ 0 that is no spring the balance counts (b₁ > 0, a force range that
    clamps it). A position servo with no force range is a spring toward its target at a held
    control (a hinge's angle counts its turns: physics.constraints.joints, "Turns"), whose energy
    the balance counts (`SceneSolver.joint_energy`'s servo, `Actuation.servo`): no driver; a
    velocity servo at rest (b₂ alone) only damps. An actuator that pushes is a driver, as a moving
    kinematic node or an applied force is (`Model.driven`), for as long as its control holds:
    gymnasium's reacher driven by random controls held five steps each gained 4 J against an
    allowance of 0.8 within a second and was stopped as a runaway."""
    if work.solver is None or data.solver is None:
        return False
    actuation = work.solver.actuation
    if not len(actuation.joint):
        return False
    force = actuation.gear * (actuation.gain * data.solver.control[actuation.joint] + actuation.b0)
    spring = actuation.servo > 0.0
    return bool(np.any(~spring & ((force != 0.0) | (actuation.b1 != 0.0))))


def divergence_error(model, data, settings, work, found):
    """The public error of a `Diverged` found in the step about to be counted: OutOfBoundsError for
    a translation past DIVERGENCE_LENGTH at a finite speed with no energy gained past the runaway
    allowance (a body that merely went far), else DivergenceError."""
    node, quantity, value = found.node, found.quantity, found.value
    limit = DIVERGENCE_LENGTH if quantity == 0 else DIVERGENCE_SPEED
    args = (model.names[node], data.step_count + 1, data.time)
    speed = float(np.linalg.norm(work.hierarchy.local.velocity[node]))
    if quantity == 0 and math.isfinite(value) and speed <= DIVERGENCE_SPEED and not _energy_grew(model, data, settings, work):
        return OutOfBoundsError(*args, float(value), limit, speed)
    return DivergenceError(*args, QUANTITIES[quantity], float(value), limit)


def _energy_grew(model, data, settings, work):
    """Whether the total energy now exceeds the runaway reference by more than its allowance (or is
    not finite; never without a reference, or while an actuator pushes: DRIVEN): what tells a
    blow-up from a body that merely went far. The state may be mid-step:
    the world pass is redone from the local state."""
    if model.dyn.size == 0 or work.runaway.reference is None or work.runaway.reference is DRIVEN:
        return False
    work.world = STALE
    total = runaway_energy(model, data, settings, work)
    reference, allowance = work.runaway.reference
    return not total - reference <= allowance


# ---------------------------------------------------------------------- inputs
def wake(model, data, node=None):
    """Wake dynamic `node` (an index) and its dynamic descendants, or every body (node None)."""
    if node is None:
        data.sleep.asleep[:] = False
        data.sleep.still[:] = 0.0
        return
    below = model.descendants(node) | (np.arange(len(model.names)) == node)
    slots = model.dyn_slot[np.flatnonzero(below & (model.motion == "dynamic"))]
    data.sleep.asleep[slots] = False
    data.sleep.still[slots] = 0.0


def apply_impulse(model, data, settings, work, i, impulse, point_world=None):
    """Apply a world-frame impulse J (3,) (N s) to dynamic node i through `point_world` (default its
    centre of mass); wakes it and its subtree, and is an input to the runaway check (its reference
    is taken afresh). "The Dynamics of a Transform Hierarchy", "Example: Newtonian Mechanics —
    Linear Impulses" and "Local and Global Deltas":

        Δv3 = J / m,   Δω3 = I_world⁻¹ ((p − x3) × J),   I_world = R3 diag(I) R3ᵀ
        Δv1 = J2⁻¹ Δv3                     (the node's own local change; Δa1 = −2 J2⁻¹ ω2 Δv3
                                            follows from the new v1 through the Coriolis term)
        omega_body += R3ᵀ Δω3              (its world angular velocity, body axes)

    Descendants, with r = x_d − x3 and J_q the parent of descendant d:
    - counteract on: each nearest dynamic descendant gets Δv1 = −J_q⁻¹ (Δv3 + Δω3 × r) and keeps
      omega_body, so its world motion is unchanged (Δa1 = 2 J_q⁻¹ ω_q Δv again follows through
      Coriolis); deeper nodes inherit the unchanged motion.
    - off: local velocities are kept, so every descendant inherits Δv3 + Δω3 × r and Δω3;
      dynamic ones record that in omega_body. But for a body in a joint
      (`physics.model.model.Model.own_motion`), the first below the node on its branch:
      counteracted as when on, and what it carries with it.
    Kinematic and fixed descendants always follow the node."""
    wake(model, data, i)
    work.runaway.input()
    sync(model, data, settings, work, MOVING)
    world, local, slot = work.hierarchy.world_state, work.hierarchy.local, model.dyn_slot[i]
    dv_world = impulse / model.mass[i]
    dw_world = np.zeros(3)
    if point_world is not None:
        arm = point_world - world.translation[i]
        rotation = world.rotation[i]
        dw_world = np.einsum("ij,j->i", rotation, np.einsum("ji,j->i", rotation, cross(arm, impulse))
                             / model.inertia_body[i])
    # einsum, not `@`: numpy hands `@` to the BLAS, whose kernel (and rounding) depends on the CPU
    p = model.parent[i]
    if p >= 0:
        local.velocity[i] += np.einsum("ji,j->i", world.rotation[p], dv_world) / world.scale[p]
    else:
        local.velocity[i] += dv_world
    data.omega_body[slot] += np.einsum("ji,j->i", world.rotation[i], dw_world)

    below = model.descendants(i) & (model.motion == "dynamic")
    if settings.counteract:
        nearest = below & (model.nearest_dynamic_ancestor == i)
    else:   # a body in a joint keeps its own motion whatever it says: the first such below the node, on
        #     each branch, is counteracted (what it carries then inherits nothing), the rest inherit
        own = np.zeros(len(model.names), bool)
        own[model.dyn] = model.own_motion
        nearest = np.zeros(len(model.names), bool)
        for n in np.flatnonzero(below & own):
            a = model.nearest_dynamic_ancestor[n]
            while a != i and not own[a]:
                a = model.nearest_dynamic_ancestor[a]
            nearest[n] = a == i
    nearest = np.flatnonzero(nearest)
    if nearest.size:
        q = model.parent[nearest]
        inherited = dv_world + cross(dw_world, world.translation[nearest] - world.translation[i])
        local.velocity[nearest] -= rows_transposed_times(world.rotation[q], inherited) / world.scale[q][:, None]
    if not settings.counteract:
        below[nearest] = False
        for n in nearest:       # what they carry inherits their unchanged motion
            below &= ~model.descendants(n)
        deeper = np.flatnonzero(below)
        if deeper.size:
            data.omega_body[model.dyn_slot[deeper]] += rows_transposed_times(world.rotation[deeper], np.broadcast_to(dw_world, (deeper.size, 3)))
    work.world = STALE


# ---------------------------------------------------------------------- the step
CONTEXTS_KEPT = 64      # `Workspace.contexts`: sub-step lengths, integrators and judgements in use


def step_context(model, data, settings, work, h, integrator, active=None, composed=False):
    """The `StepContext` of a sub-step h with `integrator`, stepping the bodies `active` (all: None);
    `composed`: one of the triple jump's sub-steps of RATTLE's step."""
    # semi-implicit Euler with settings.shake: its joints by SHAKE (`INTEGRATOR_TRAITS`' rattle);
    # soft joints (settings.joint_solve) by the velocity solve alone
    traits = INTEGRATOR_TRAITS[integrator]
    rattle = (traits.rattle and not (integrator == "semi-implicit-euler" and settings.shake)
              and settings.joint_solve == "projected"
              and work.solver is not None and bool(len(work.solver.joint_specs)) and not work.solver.armature_left)
    sleeping = bool(settings.sleep and np.count_nonzero(data.sleep.asleep))
    if active is not None:      # (a retry's island: its own)
        return StepContext(h, integrator, traits.position_fraction, h * traits.surface_lead, rattle, sleeping, active,
                           composed)
    # one for each sub-step alike, made once (`Workspace.contexts`)
    key = (h, integrator, rattle, sleeping, composed)
    made = work.contexts.get(key)
    if made is None:
        if len(work.contexts) >= CONTEXTS_KEPT:
            work.contexts.clear()
        made = work.contexts[key] = StepContext(h, integrator, traits.position_fraction, h * traits.surface_lead,
                                                rattle, sleeping, None, composed)
    return made


def judged(work, context, final, abandon):
    """`context` with these `final` and `abandon` (physics.pipeline.retry's judgement of an attempt),
    made once for each context and pair (`Workspace.contexts`); the last one first, by identity (a
    key of ids makes two ints a call)."""
    last = work.last_judged
    if last[0] is context and last[1] == final and last[2] is abandon:
        return last[3]
    key = (id(context), final, id(abandon))
    made = work.contexts.get(key)
    if made is None or made[0] is not context or made[1] is not abandon:
        if len(work.contexts) >= CONTEXTS_KEPT:
            work.contexts.clear()
        made = work.contexts[key] = (context, abandon, StepContext(
            context.h, context.integrator, context.position_fraction, context.surface_lead, context.rattle,
            context.sleeping, context.active, context.composed, final, abandon))
    work.last_judged = (context, final, abandon, made[2])
    return made[2]


def choose_joint_terms(model, data, settings, work, integrator):
    """Before a sub-step of `integrator` (the stepped one): which joints' springs, dampers,
    armatures and actuators RATTLE's step takes, from the state now
    (`physics.constraints.solver.SceneSolver.choose_joint_terms`); nothing to choose without them."""
    solver = work.solver
    if solver is None or not solver.joints_termed or not INTEGRATOR_TRAITS[integrator].rattle \
            or settings.joint_solve != "projected":
        return
    world, centre, rotation, _, inverse_inertia = solver_state(model, data, settings, work)
    solver.choose_joint_terms(world, centre, rotation, model.inverse_mass, inverse_inertia, settings,
                              INTEGRATOR_TRAITS[integrator].triple_jump and solver.joints_equalities)


def fused(model, settings, work):
    """Whether this topology's sub-steps are the free-body one (`free_substep`): free bodies, and
    none that may sleep (sleep has stages of its own)."""
    return work.free is not None and not (settings.sleep and model.may_sleep)


# The sub-step: these stages in this order, each the function `stage_<name>(model, data, settings,
# work, context)`, which returns at once where it has nothing to do.
STAGES = (
    "world",        # every node's world pose and velocity at the start of the sub-step
    "wake",         # sleeping bodies whose field changed wake (physics.dynamics.sleeping)
    "prepare",      # contact and joint rows at these poses (physics.constraints.solver)
    "kinematic",    # prescribed local motion (Magnus, physics.dynamics.kinematics)
    "dynamic",      # forces -> integrator: the free motion, trees parents first
    "hold",         # sleeping bodies stay where they rest on their parent
    "clock",        # time advances; nothing below sees a non-finite or out-of-range state
    "events",       # timed impulses that are due
    "solve",        # warm start, solve, relax, restitution: velocity and split-impulse position changes
    "joints",       # the joints' projections (RATTLE) or post-stabilization (SHAKE); the constraint accelerations
    "sleep",        # bodies still for SLEEP_TIME, with all they touch, sleep
    "check",        # nothing leaves the sub-step non-finite or run away
)
# The list's form for free bodies (`fused`): no node but free dynamic roots, none that may sleep,
# so world, wake, prepare, kinematic, hold, solve, joints and sleep have nothing to do, and the
# rest run as one pass over the local arrays (`free_substep`, bit for bit the list's:
# tests/test_free_bodies.py). The profile times its "dynamic", which holds the clock and the check
# of each body as the integrator stores it, and its "events"; "check" runs again only after an event.
FREE_STAGES = ("dynamic", "clock", "events", "check")


def substep(model, data, settings, work, context, after_prepare=None, halvings=None):
    """One sub-step: the STAGES in order, each timed under its own name while a profile recorder
    is on (physics.core.profile). `after_prepare(model, data, work, context, halvings)`: called once
    the prepare stage has found what is within the joints' reach (a RATTLE retry takes its island's
    `Undo` there: physics.pipeline.retry); returns what it returned (None without it)."""
    taken = None
    if context.rattle and context.active is None and work.stages is _PLAIN_STAGES and not profile.recording():
        return rattle_substep_stages(model, data, settings, work, context, after_prepare, halvings)
    if profile.recording():
        started = profile.mark()
        for name, stage in work.stages:
            lap = profile.mark()
            stage(model, data, settings, work, context)
            profile.lap(name, lap)
            if after_prepare is not None and name == "prepare":
                taken = after_prepare(model, data, work, context, halvings)
        profile.lap("substep", started)
        return taken
    for name, stage in work.stages:
        stage(model, data, settings, work, context)
        if after_prepare is not None and name == "prepare":
            taken = after_prepare(model, data, work, context, halvings)
    return taken


def rattle_substep_stages(model, data, settings, work, context, after_prepare=None, halvings=None):
    """The STAGES of a RATTLE sub-step of every body in a scene with no sleep, no kinematic node and
    no timed impulse due (`substep`'s form for it: the plain list, `_PLAIN_STAGES`), as one
    function: each stage's branch for that case written out in the list's order, bit for bit the
    list's (tests/test_stage_forms.py). What it leaves out is Python between the compiled calls: the
    stage functions and the list's loop, the solver state's gather through `solver_state` and
    `sync`, and the solve and joints stages' tests of the cases a retry's island or a sleeping
    body would take; the pendulum's step takes a tenth less time. The solve and joints stages are
    the list's own where the sub-step keeps its velocity solve or RATTLE's stage is not one call."""
    calls, solver, h = work.calls, work.solver, context.h
    sync(model, data, settings, work, MOVING)     # world
    # prepare (`stage_prepare`: nothing sleeps, so none wakes; the whole world steps, so no pair
    # reaches outside it)
    taken = None
    if solver is not None:
        calls.solver_bodies()
        centre, rotation, velocity, inverse_inertia = work.bodies
        world = work.hierarchy.world_state
        solver.prepare(world, centre, rotation, velocity, model.inverse_mass, inverse_inertia, h, settings,
                       context.surface_lead, None, None, True)
        sunk = solver.sunk(world, model.inverse_mass, settings.gravity)
        if sunk is not None:
            _raise_sunk(model, data, settings, work, sunk)
    if after_prepare is not None:
        taken = after_prepare(model, data, work, context, halvings)
    # dynamic (`stage_dynamic`, every body)
    if model.dyn.size:
        calls.inputs()
        work.advancing(h, context.integrator, settings.gyroscopic)()
        _place_generations(work, calls.place)
    # hold (none sleeps), clock
    work.world = STALE
    data.time += h
    check_divergence(model, data, work)
    # solve: left out where RATTLE's projections hold the rows alone (`stage_solve`)
    step = solver.step if solver is not None else None
    if step is not None and step.alone:
        data.constraint_acceleration.fill(0.0)
        solver.leave_out_solve()
    else:
        stage_solve(model, data, settings, work, context)
    # joints: RATTLE's stage as one compiled call where it can be (`stage_joints`)
    if step is not None and solver.joints is not None and len(solver.joints.kind) and data.frame_work is None \
            and solver.joint_stage_fused():
        _joint_stage_call(model, settings, work, context)
        _limit_easing(work, solver)
    else:
        stage_joints(model, data, settings, work, context)
    check_divergence(model, data, work)
    return taken


def free_substep(model, data, settings, work, context, first):
    """The sub-step of free bodies (`Workspace.free`): FREE_STAGES, bit for bit the STAGES' (a root's
    integrator reads only its local state): the integrator steps the local arrays in place and checks each body
    as it stores it (physics.dynamics.integrators `advance_bodies`, `found`), the clock advances and the first
    divergent body raises as `stage_clock` would; then the events, and the check again if one was
    applied. The `first` sub-step of a `Simulation.step` call also checks each body's state before
    its step, in the same pass, in place of the check before the call: the same error (node, step,
    time, quantity, value), raised after the pass, so the state left stopped is one sub-step on from
    the one that failed."""
    timing = profile.recording()        # once: this sub-step is a free body's few microseconds
    started = profile.mark() if timing else 0
    found = work.found if first else work.found[:3]
    free_motion(model, data, settings, work, context, found)
    if timing:
        profile.lap("dynamic", started)
    work.world = STALE
    dyn0 = int(model.dyn[0])
    if first and found[3] >= 0:
        raise Diverged(dyn0 + int(found[3]), int(found[4]), float(found[5]))
    data.time += context.h
    if found[0] >= 0:
        raise Diverged(dyn0 + int(found[0]), int(found[1]), float(found[2]))
    due = data.next_event
    lap = profile.mark() if timing else 0
    stage_events(model, data, settings, work, context)
    if timing:
        profile.lap("events", lap)
    if data.next_event != due:
        check_divergence(model, data, work)
    if timing:
        profile.lap("substep", started)


def free_motion(model, data, settings, work, context, found):
    """The free bodies' integrator pass, in place on the local arrays, with the divergence check."""
    gravity = tuple(settings.gravity)
    if gravity != work.free_gravity:    # m g + F_applied, as `dynamic_inputs` forms it
        np.add(model.mass_dyn[:, None] * settings.gravity, model.force_applied, out=work.inputs.force)
        work.free_gravity = gravity
    found[::3] = -1.0
    advance_bodies(work.free, context.h, context.integrator, settings.gyroscopic, None,
                   (DIVERGENCE_LENGTH, DIVERGENCE_SPEED), found, work.free_scratch)


# ---------------------------------------------------------------------- the stages
def stage_world(model, data, settings, work, context):
    sync(model, data, settings, work, MOVING)


def stage_wake(model, data, settings, work, context):
    if context.sleeping and context.active is None:     # a retry's island woke in its attempt
        work.calls.wake()


def stage_prepare(model, data, settings, work, context):
    """Solver stage 'prepare' (physics.constraints.solver): rows at the start-of-step poses."""
    if work.solver is None:
        return
    world, centre, rotation, velocity, inverse_inertia = solver_state(model, data, settings, work)
    awake = None
    if settings.sleep and np.count_nonzero(data.sleep.asleep) and context.active is None:
        awake = ~data.sleep.asleep
    work.solver.prepare(world, centre, rotation, velocity, model.inverse_mass, inverse_inertia, context.h,
                        settings, context.surface_lead, awake, context.active, context.rattle)
    if work.solver.outside_pairs:
        raise OutsideIsland
    if awake is not None:          # an awake body's box reached sleeping ones: their islands woke
        woken = data.sleep.asleep & awake
        data.sleep.asleep[woken] = False
        data.sleep.still[woken] = 0.0
    sunk = work.solver.sunk(world, model.inverse_mass, settings.gravity)
    if sunk is not None:
        _raise_sunk(model, data, settings, work, sunk)


def _raise_sunk(model, data, settings, work, sunk):
    """A body passed through a surface by the last sub-step (`SceneSolver.sunk`): stop here."""
    heavier = work.solver.heaviest_touching(sunk.node, model.inverse_mass)
    raise PenetrationError(model.names[sunk.node], model.names[sunk.surface], data.step_count + 1, data.time,
                           sunk.depth, sunk.size, contact_cause(settings, heavier and (model.names[heavier[0]],
                                                                                        heavier[1])), sunk.bound)


def stage_kinematic(model, data, settings, work, context):
    if model.kin.size == 0:
        return
    translation, rotation, velocity, omega = data.kinematic
    advance_kinematic(translation, rotation, velocity, omega, data.kin_acceleration, data.kin_alpha, context.h,
                      settings.rotation_update, settings.exponential)
    work.calls.scatter_kinematic()
    if work.drives is not None:     # a driven node's acceleration turns with it (physics.dynamics.driving)
        work.drives.report(data.kinematic, work.hierarchy.local.acceleration)


def stage_dynamic(model, data, settings, work, context):
    if model.dyn.size == 0:
        return
    work.calls.inputs()
    if context.active is None:
        work.advancing(context.h, context.integrator, settings.gyroscopic)()
        places = work.calls.place
    else:   # a retry's island: its rows gathered, stepped, and put back; no other body moves
        bodies, frames = work.step_bodies, work.frames if model.any_parented else None
        slots = np.flatnonzero(context.active)
        some = tuple(a[slots] for a in bodies)
        advance_bodies(some, context.h, context.integrator, settings.gyroscopic,
                       None if frames is None else tuple(a[slots] for a in frames))
        for array, rows in zip(bodies[:4], some[:4]):
            array[slots] = rows
        places = [partial(place_bodies, work.dynamic, np.intersect1d(g, slots), work.dynamic_motion,
                          work.world_arrays, work.local_arrays) for g in model.generations]
    _place_generations(work, places)


def _place_generations(work, places):
    """The trees, parents first: a carried generation is placed in its parents' end-of-step frame
    (`places`: a call for each generation)."""
    g = 0
    while g < len(places):      # (an index, not `enumerate`: its iterator is an allocation every sub-step)
        if g:       # (the parents' world state: the bodies' own passes need no other node's)
            work.calls.bodies_spin()
        places[g]()
        g += 1


def stage_hold(model, data, settings, work, context):
    if context.sleeping and context.active is None:     # a retry's island is awake: none to hold
        work.calls.hold()
    work.world = STALE


def stage_clock(model, data, settings, work, context):
    data.time += context.h
    check_divergence(model, data, work)


def stage_events(model, data, settings, work, context):
    events = work.events
    while data.next_event < len(events) and events[data.next_event].time <= data.time + 1e-12:
        event = events[data.next_event]
        data.next_event += 1
        if context.active is not None and not context.active[model.dyn_slot[int(event.node)]]:
            work.runaway.input()    # a body outside a retry's island: its attempt applied it
            continue
        apply_impulse(model, data, settings, work, int(event.node), np.asarray(event.impulse_world, float),
                      None if event.point_world is None else np.asarray(event.point_world, float))
        solver = work.solver
        if solver is not None and solver.step is not None and solver.step.alone:
            # A blow struck after the prepare stage reaches the positions of the sub-step it struck
            # through the solve (`stage_solve`: the free kick's lag), and RATTLE's retry judges by
            # that move how far it carries the island past the contacts prepared for it
            # (`physics.pipeline.retry._start_error`): that sub-step keeps its velocity solve. (Left
            # out, the positions saw the blow a sub-step late, nothing was halved, and a bob struck
            # at 20 m/s went 4 cm into the plank it met, against 2 cm: tests/test_rattle_retry.py.)
            solver.keep_solve()


def stage_solve(model, data, settings, work, context):
    """Solver stages warm start → solve → relax → restitution → store (physics.constraints.solver) on the free
    end-of-step velocities, then the changes applied to the bodies (`apply_world_changes`):
    velocities get the final change (relax, then restitution); positions get f h Δv_r plus the bias
    part h (Δv_s − Δv_r) — the split impulse, so the correction moves bodies without adding energy;
    its linear part at most settings.max_contact_push_speed per body — and nothing of the
    restitution stage (its target is the rebound at the surface).
    f = `INTEGRATOR_TRAITS[integrator].position_fraction`: how much of an end-of-step velocity change the integrator's
    own position update would have seen (x₁ = x₀ + h v₁ for semi-implicit Euler: 1; constant-force
    schemes x₁ = x₀ + h v₀ + h²a/2: ½; explicit Euler: 0)."""
    if context.active is None:      # (in place: the indexed form costs a slice's indexing)
        data.constraint_acceleration.fill(0.0)
    else:
        data.constraint_acceleration[context.active] = 0.0
    solver = work.solver
    if solver is None or solver.step is None:
        return
    if solver.step.alone:
        # the rows are a forest's that RATTLE's projections (`stage_joints`) hold by themselves,
        # whatever first guess a solve would give them (`SceneSolver.leave_out_solve`)
        solver.leave_out_solve()
        return
    _, _, _, velocity, inverse_inertia = solver_state(model, data, settings, work)
    h, fraction = context.h, context.position_fraction
    solution = solver.solve(velocity, settings, fraction)
    if data.frame_work is not None:
        solver.count_solve_frame_work()
    # final: with the restitution stage, velocities only; moved: the split impulse, each body's
    # bias part at most the push speed (PhysX's max depenetration velocity is per body too: a box
    # among a hundred coincident ones took 57 m/s of bias from its 99 contacts, each within the
    # limit, and leapt a metre in one step)
    final, moved = work.changes
    joints = solver.joints
    joints = joints is not None and len(joints.kind)
    # RATTLE's joints (`physics.constraints.solver.SceneSolver.solve_changes`): the joint rows' impulse is
    # RATTLE's first kick (`physics.constraints.rattle`): it acts before the drift, so the positions see
    # all of it, whatever the integrator's fraction. In a sub-step of the composed RATTLE step
    # (physics.pipeline.retry's `composes_rattle`: equality joints, no contact) every row is a joint's,
    # which carries no Baumgarte bias, so solve − relax is only what the relax stage's sweeps changed
    # of an unconverged PGS: moved but never seen by the velocities, it broke the chord
    # (v½ = (q₁ − q₀)/h) and with it the step's symmetry (the triple jump's backward sub-step starts
    # from impulses of the other sign, PGS leaves more, and a hinge's composed step fell to first
    # order); RATTLE's projections own the joints: positions and velocities take the same joint
    # impulse. The solver's angular impulse is I₀ Δω with the start-of-step inertia; the bodies have
    # turned since, so Δω is re-expressed with the inertia they have now: the angular momentum about
    # a joint's pivot then changes by exactly the impulse's moment (the top).
    solver.solve_changes(velocity, solution, h, fraction, settings.max_contact_push_speed,
                         bool(joints and context.rattle), context.composed, inverse_inertia, final, moved)
    apply_world_changes(model, data, settings, work, final, moved, context.active)


def stage_joints(model, data, settings, work, context):
    """The joints after the solve: RATTLE's projections (`physics.constraints.rattle`), positions
    then velocities, or else the post-stabilization (SHAKE with settings.shake), or nothing where
    they are soft (settings.joint_solve: the solve's ERP bias held them); then the
    sub-step's constraint accelerations, the velocity changes of the solve and of the joints over h.
    RATTLE's calls and the accelerations are one compiled call where the solver can make them so
    (`SceneSolver.joint_stage_fused`) and the sub-step steps every body (a retry's island moves
    only its own: its halves make the calls one by one)."""
    solver, h = work.solver, context.h
    if solver is None or solver.step is None:
        return
    joints = solver.joints
    joints = joints is not None and len(joints.kind)
    rattle = joints and context.rattle
    one_call = rattle and context.active is None and solver.joint_stage_fused()
    if one_call:
        _joint_stage_call(model, settings, work, context)
    elif rattle:
        # RATTLE: positions onto the joints' constraint along the start-of-step rows (the
        # rotation by the lie-midpoint drift with the kicked momentum), the velocities by the
        # same impulse over the step ...
        # (every array here is the Workspace's, so each call stays bound to them)
        world, centre, rotation, velocity, inverse_inertia = solver_state(model, data, settings, work)
        work.calls.momentum()
        solver.project_joint_positions(world, centre, rotation, work.momentum, work.projected, context.final,
                                       context.abandon)
        dv, moved = work.changes        # Δv = M⁻¹ impulse / h, Δx = [dx, dθ]
        work.step_length[0] = h
        work.calls.joint_kick()
        apply_world_changes(model, data, settings, work, dv, moved, context.active)
        # ... then the velocities onto the constraint's tangent at the end-of-step poses
        world, centre, rotation, velocity, inverse_inertia = solver_state(model, data, settings, work)
        solver.project_joint_velocities(world, centre, rotation, velocity, inverse_inertia, dv)
        moved.fill(0.0)
        apply_world_changes(model, data, settings, work, dv, moved, context.active)
    elif joints and settings.joint_solve == "projected":
        # post-stabilization: project the joints' position error out along the start-of-step
        # directions; with settings.shake the velocities take the same change over the step (SHAKE)
        world, centre, rotation, _, _ = solver_state(model, data, settings, work)
        dx, dtheta, dv = solver.post_stabilize(world, centre, rotation, settings.iterations, settings.shake)
        apply_world_changes(model, data, settings, work, dv if settings.shake else None,
                            np.concatenate([dx, dtheta], axis=1), context.active)
    if one_call:
        pass    # (the call divided it)
    elif context.active is None:      # (in place: the indexed form copies the array onto itself)
        np.divide(data.constraint_acceleration, h, out=data.constraint_acceleration)
    else:
        data.constraint_acceleration[context.active] /= h
    if data.frame_work is not None:
        solver.take_frame_work(data.frame_work)
    _limit_easing(work, solver)


def _joint_stage_call(model, settings, work, context):
    """RATTLE's stage as one compiled call (`SceneSolver.project_joints`): `stage_joints`' calls and
    the acceleration over h, in their order (the same bits; made one by one, the Python between them
    is a tenth of the pendulum's sub-step)."""
    passes = work.body_passes
    passes.stale[0] = work.world == STALE
    work.world = STALE
    _set_apply_flags(model, settings, work, True)
    work.solver.project_joints(passes, context.final, context.abandon)


def _limit_easing(work, solver):
    """A joint loaded outside its range eases in by its positions alone, lifting what it carries:
    the energy it gives is the start's, as MuJoCo's soft limit gives back what its violated spring
    held, so an input to the runaway check (a lever 1.5 rad out, 2.8 m long, gains 32 J against an
    allowance of 26 J). Only while it shrinks: a limit the projection fails to close stays under the
    check."""
    easing = solver.limit_easing
    if EASING_INPUT < easing < work.runaway.easing:
        work.runaway.input()
    work.runaway.easing = easing


def stage_sleep(model, data, settings, work, context):
    """Count how long each body has been still (in its parent's frame) and put to sleep the islands
    — bodies joined by this step's candidate pairs (boxes within reach: what wakes a sleeping body,
    `physics.dynamics.sleeping.awake_pairs`, joins islands too) — whose bodies have all been still for
    SLEEP_TIME (and may sleep: `physics.model.model.Model.sleepable`); what they hold is recorded."""
    if not (settings.sleep and model.may_sleep) or context.active is not None:
        return      # (a retry's island: its attempt counted its still time)
    # The parents' world motion is current after the solver (`apply_world_changes` updated the
    # world; the solver moves no parent of a body that may sleep): local ω comes from omega_body.
    solver = work.solver
    if solver is None or solver.step is None:
        sync(model, data, settings, work, MOVING)     # nothing updated the world since the free step
    pairs = _NO_PAIRS if solver is None else solver.pair_bodies
    touch = solver.body_touch if solver is not None else np.zeros(0, np.int64)
    if len(touch) != model.dyn.size:    # no shapes: nothing to rest on
        touch = np.zeros(model.dyn.size, np.int64)
    sleep_islands(work.sleep_bodies, pairs, touch, work.parent_motion, settings.gravity, work.local_motion,
                  context.h, data.sleep)
    work.world = STALE


def stage_check(model, data, settings, work, context):
    check_divergence(model, data, work)


# (name, stage function) in the order of STAGES, for `substep` (`Workspace.stages`), and the lists
# that leave out the stages with nothing to do: wake, kinematic and sleep in a sub-step with no sleep
# and no kinematic node (hold still marks the world state stale), events once the scene's timed
# impulses are all struck. (sleep or kinematic nodes, an impulse still to come) -> the list
_STAGE_FUNCTIONS = tuple((name, globals()["stage_" + name]) for name in STAGES)
_STAGE_LISTS = {(asleep, due): tuple((name, f) for name, f in _STAGE_FUNCTIONS
                                     if (asleep or name not in ("wake", "kinematic", "sleep")) and (due or name != "events"))
                for asleep in (False, True) for due in (False, True)}
_PLAIN_STAGES = _STAGE_LISTS[False, False]      # (`rattle_substep_stages`' case)


# ---------------------------------------------------------------------- the solver's changes, applied
def apply_world_changes(model, data, settings, work, dv, dx, active=None):
    """Apply world-frame changes of velocity dv = [Δv, Δω] and of pose dx = [Δx, Δθ] (Δθ a
    rotation vector), (D, 6) each (dv may be None: poses only), found by the solver to the
    dynamic bodies (those `active` (D,) bool, None: all; the others' changes are zero), as local changes; each body's resulting change of world [v, ω] (its own, plus
    what it inherits with counteraction off) is added to `data.constraint_acceleration`.

    "The Dynamics of a Transform Hierarchy", "Local and Global Deltas" and "Counteracting the
    Inherited Effect from the Parent": with P the nearest dynamic ancestor and r = x_i − x_P,
    J_q = R_q S_q the parent's world Jacobian,
      counteract on:  Δv1 = J_q⁻¹ (Δv_i − Δv_P − Δω_P × r)   (the child's world change is its own)
      counteract off: Δv1 = J_q⁻¹ Δv_i                        (it inherits its ancestors' changes)
    but for a body in a joint (`physics.model.model.Model.own_motion`), counteracted either way
    against P's whole world change;
    and the same for positions (Δx, Δθ); the local rotation turns by R_qᵀ(Δθ_i − [on] Δθ_P).

    Angular velocity: Δω is the solver's angular impulse I_world Δω (I_world at the current
    R3), and a position correction moves a body at fixed momentum, as a drift does:
        L_world = R3 I (omega_body + R3ᵀ Δω),   omega_body ← I⁻¹ R3'ᵀ L_world
    with R3' the world rotation after the correction. Keeping omega_body instead turns L with
    the body, a spurious torque Δθ × L / h that for a fast spinner dwarfs gravity's: the top
    (assets/scenes/top.toml) fell over (tests/test_top.py).

    Counteraction through a move of the parent's pose: a carried body's world velocity is
    v3 = v2 + ω2 × (x3 − x2) + s2 R2 v1, so a turn Δθ of its dynamic ancestor (R2 → exp(Δθ) R2)
    or a shift of the lever x3 − x2 changes v3 at fixed local v1 by Δθ × s2 R2 v1 + ω2 × Δ(x3 − x2),
    a change no impulse made (of order h² per correction: a first-order leak of energy through
    RATTLE's position projections of a nested arm). The local velocity is solved again from the
    moved parents, in one world pass, parents first (`physics.dynamics.body_passes.carry_pass`):
        v1 = R2ᵀ (v3_target − v2 − ω2 × (x3 − x2)) / s2,   v3_target = v3 + Δv3 (its own change).
    All of it is one compiled call (`physics.dynamics.body_passes.apply_changes`)."""
    sync(model, data, settings, work, MOVING)
    velocity_change, pose_change = work.changes
    if dv is None:
        velocity_change.fill(0.0)
    elif dv is not velocity_change:
        np.copyto(velocity_change, dv)
    if dx is not pose_change:
        np.copyto(pose_change, dx)
    work.world = STALE
    # one compiled call: the move, the world pass, the momentum, the carried velocities, of every
    # body or of a retry's island (its bodies in `Workspace.moving` while it runs; the others keep
    # their bits, a row's sign of zero too)
    _set_apply_flags(model, settings, work, dv is not None)
    if active is None:
        work.calls.apply()
        return
    try:
        np.copyto(work.moving, active)
        work.calls.apply()
    finally:
        work.moving.fill(True)


def _set_apply_flags(model, settings, work, given):
    """`apply_changes`' flags (`Workspace.apply_flags`): counteraction on, the carried bodies'
    velocities solved again (a tree deeper than its roots, and counteraction on or a body whose
    motion is its own whatever it says: `physics.model.model.Model.own_motion`), a velocity change
    `given`."""
    flags = work.apply_flags
    kept = settings.counteract or model.any_own_motion
    flags[0], flags[1], flags[2] = settings.counteract, kept and len(model.generations) > 1, given
