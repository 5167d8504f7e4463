"""The Simulation: a hierarchy of fixed, kinematic and dynamic nodes, stepped as named stages.

"The Dynamics of a Transform Hierarchy" ("Converting Global Dynamics To Local Dynamics", "Local and
Global Deltas", "Counteracting the Inherited Effect from the Parent") and "Numerical Integration for
Rotational Dynamics" (docs/references.md); interfaces in docs/architecture.md ("The Simulation
interface", "The step pipeline"). Sleeping: physics.dynamics.sleeping.

A facade over Model, Data and the stages (Pinocchio's Model/Data split, MuJoCo's mj_step(m, d)).
`Simulation.model` (physics.model.model.Model) is what stays constant: body parameters (names, motion
types, masses, inertias, applied forces, kinematic accelerations as the scene gives them) and the
topology derived from the parent array (slots, generations, nearest dynamic ancestors, depths); a
reparent replaces it by the next topology's. `names`, `motion`, `shapes`, `mass`, `inertia_body`
and `parent` read it. `Simulation.data` (physics.pipeline.data.Data) holds everything the steps change:
- `local`: every node's local state, parent frame (T1, R1, S1, v1, a1, omega_local, alpha1), the
  hierarchy's own;
- `omega_body` (D, 3): each dynamic body's angular velocity relative to the world in body axes,
  the integrators' own state (converting frames every step would add round-off drift); the
  hierarchy's `omega_local` of a dynamic node is derived from it (`omega_local_from_body`);
- the kinematic nodes' contiguous state `kinematic` and their prescribed local accelerations
  `kin_acceleration`, `kin_alpha` (K, 3) (the scene's, until a reparent converts them);
- the clock, sleep timers and what sleeping bodies hold, the last solver stage's share of the
  accelerations, the RATTLE hint, and the solver's warm starts, manifolds and joints.
The step is physics.pipeline.stages: functions over (model, data, settings, workspace, context), one named
list of them per sub-step. This class loads, validates inputs (impulses, settings, reparenting),
takes and restores snapshots (a copy of the Data plus the topology), answers queries, and keeps
the error a stage raised.

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
prescribed (physics.dynamics.integrators, `Frame`). The reported local accelerations of queries are settled
one generation per compiled world pass (`physics.pipeline.stages.sync`): a body's needs its parent's world
acceleration.

Motion types: fixed (local state constant), kinematic (constant local a, alpha; exact translation
and Magnus rotation, physics.dynamics.kinematics), dynamic (rigid body, centre of mass at its origin,
physics.dynamics.integrators). Impulses change only dynamic bodies; with `counteract` their nearest dynamic
descendants keep their world motion (the car crash), kinematic and fixed descendants always follow.
"""
import warnings
from pathlib import Path

import numpy as np

from physics.constraints.solver import OVERLAP_BUDGET, OVERLAP_TOLERANCE, Overlaps, SceneSolver
from physics.core import profile
from physics.math.relative_motion import transport_terms
from physics.math.rotation import matrix_from_quaternion
from physics.pipeline import keyframes, stages
from physics.dynamics.body_passes import first_beyond_reach, rows_times, rows_transposed_times
from physics.dynamics import driving
from physics.pipeline.data import Data
from physics.pipeline.step import step as advance
from physics.model.hierarchy import Hierarchy, NodeState
from physics.dynamics.integrators import inertial_accelerations
from physics.model.model import Model
from physics.pipeline.restorable import Restorable
from physics.pipeline.retry import SubstepCount
from physics.math.rotation import cross, hat
from physics.io.scene import Scene, load_scene
from physics.core.settings import Settings
from physics.pipeline.snapshot import Snapshot, scene_fingerprint
from physics.pipeline.stages import DIVERGENCE_LENGTH, DivergenceError
from physics.core.validation import FORCE_MAX

# Reach (`Simulation._hand_off`): a loose dynamic body — parented, in no joint — farther than REACH from
# its parent's origin leaves the parent for the world, keeping its world motion. Its local dynamics
# in a turning frame carry the frame's transport terms, which grow with the distance (ω × (ω × r),
# α × r, and a local velocity of size |ω| r to cancel against); integrated far out they stop being
# energy-stable (a ball rolling away from a yawing turret gained 12 → 1,336 m/s tens of kilometres
# out), while in the world frame the same body is just a body. tests/test_reach.py measures both.
REACH = 1000.0              # m


class OverlapWarning(UserWarning):
    """Shapes that start inside one another (`Simulation.initial_overlaps`)."""


class MassRatioWarning(UserWarning):
    """A joint between two bodies whose masses differ by more than JOINT_MASS_RATIO_HELD."""


# The joint solve holds a light link between the world and a heavy body (the light body's mobility
# is the difference of two nearly equal entries of J M⁻¹ Jᵀ, so double precision's 16 digits bound
# it) to round-off up to a mass ratio of 1e13 and to 2.4e-7 m at 1e14; from 1e15 the heavy body's
# pivot falls below the joint graph's floor (`physics.constraints.joint_graph.PIVOT_FLOOR`, 1e-14 of
# the light body's diagonal) and the link lets it fall, metres in 2 s (2 s at dt 1/60;
# tests/test_joints.py): past 1e13 a scene is warned about at load.
JOINT_MASS_RATIO_HELD = 1e13


class OverlapError(ValueError):
    """More shape pairs inside one another at load than physics.constraints.solver.OVERLAP_BUDGET: `count`
    says how many; the message names the deepest pair."""

    def __init__(self, count, message):
        self.count = count
        super().__init__(message)


class Simulation:
    """A scene being simulated: `model` (constant, physics.model.model.Model) and the state the steps change
    (module docstring); see docs/architecture.md for the interface the app and runner use."""

    def __init__(self, scene: Scene, settings: Settings | None = None):
        self.scene = scene
        self.settings = scene.settings() if settings is None else settings
        self.colors = scene.colors.copy()
        self._restorable = Restorable(scene, DIVERGENCE_LENGTH)    # what `restore` accepts of this scene
        self.reset()
        self.warnings = []      # what the load found worth saying (`OverlapWarning`, `MassRatioWarning`), as text
        self.initial_overlaps = self._report_overlaps()
        self._report_mass_ratios()

    def _warn(self, warning):
        """Say `warning` once: as a Python warning (the runner prints it on one line) and in
        `warnings` (the viewer shows it as a message)."""
        self.warnings.append(str(warning))
        warnings.warn(warning, stacklevel=4)

    def _report_mass_ratios(self):
        """A `MassRatioWarning` for the joint whose two moving bodies' masses differ most, if by more
        than JOINT_MASS_RATIO_HELD, naming them and the ratio."""
        if self._solver is None or not self._solver.joint_specs:
            return
        body, inverse_mass = self._solver.body_of_node, self.model.inverse_mass
        worst = None
        for spec in self._solver.joint_specs:
            a, b = (body[spec[end]] if spec[end] >= 0 else -1 for end in ("a", "b"))
            if a >= 0 and b >= 0 and a != b:
                ratio = max(inverse_mass[a], inverse_mass[b]) / min(inverse_mass[a], inverse_mass[b])
                if worst is None or ratio > worst[0]:
                    worst = (ratio, spec["a"], spec["b"])
        if worst is not None and worst[0] > JOINT_MASS_RATIO_HELD:
            ratio, a, b = worst
            self._warn(MassRatioWarning(
                f"a joint joins {self.names[a]!r} and {self.names[b]!r}, whose masses differ {ratio:.3g} times: the "
                f"joint solve holds its joints to round-off up to {JOINT_MASS_RATIO_HELD:.0e} times, and past it they "
                "may come apart, by metres from 1e+15 times; give them closer masses"))

    def _report_overlaps(self):
        """The shape pairs that start inside one another (physics.constraints.solver.SceneSolver.overlaps:
        deeper than OVERLAP_TOLERANCE), warned about once at load (an `OverlapWarning` naming the
        count and the deepest pair); OverlapError past OVERLAP_BUDGET of them, ContactBudgetError
        past PAIR_BUDGET candidate pairs: so many that no step could solve them in reasonable time."""
        if self._solver is None or not len(self._solver.shapes):
            return Overlaps(0, -1, -1, 0.0)
        self._sync(stages.MOVING)
        found = self._solver.overlaps(self.hierarchy.world_state)
        if not found.count:
            return found
        text = (f"{found.count:,} shape pair{'s start' if found.count != 1 else ' starts'} inside one another (deeper than "
                f"{OVERLAP_TOLERANCE * 1e3:g} mm); the deepest: {self.names[found.node_a]!r} and "
                f"{self.names[found.node_b]!r}, {found.depth:.3g} m")
        if found.count > OVERLAP_BUDGET:
            raise OverlapError(found.count, f"{text}: more than {OVERLAP_BUDGET:,}, refused; spread the shapes out "
                                            "or give them collision groups")
        self._warn(OverlapWarning(f"{text}: pushed apart at most at max_contact_push_speed = "
                                  f"{self.settings.max_contact_push_speed:g} m/s"))
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
            friction = scene.friction if scene.friction is not None else np.full(len(self.names), 0.6)
            restitution = scene.restitution if scene.restitution is not None else np.zeros(len(self.names))
            self._solver = SceneSolver(self.shapes, self.parent, self.motion, self.model.solver_bodies, friction,
                                       restitution, scene.joints, self.data.solver, node_names=self.names)
            if not scene.joints and not self._solver.filter.may_pair():
                self._solver = None  # shapes for drawing only (a T-handle in space, kinematic tanks)
        self.data.solver = None if self._solver is None else self._solver.carried
        if self.data.frame_work is None and self._solver is not None and self._solver.frames_work:
            self.data.frame_work = np.zeros(len(scene.joints))      # (kept across topologies: the run's)

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
        # Everything the steps change (physics.pipeline.data): the hierarchy's local state, the kinematic
        # nodes' contiguous copy of theirs (stepped in place and copied into the hierarchy after
        # each kinematic stage: nothing else writes it) and their accelerations, omega_body, sleep,
        # the RATTLE hint, the clock; the solver's state joins it in `_build_solver`.
        self.data = Data.start(self.hierarchy.local, self.model.kin, self.model.kin_acceleration, self.model.kin_alpha,
                               self.model.dyn.size)
        self.data.drive = driving.DriveState.start(scene.drives) if scene.drives else None
        self.diverged = None        # the DivergenceError that stopped the run, if one did
        self._runaway = stages.Runaway()
        self._substeps = SubstepCount()
        self._build_solver()
        # omega_body from the file's parent-frame angular velocity, ancestors' world motion settled
        # first: omega_body = R3^T omega3_world (generation by generation, see physics.pipeline.stages.sync).
        self._bind()
        if self._drives is not None and self._drives.kinematic:     # moving at load as their actuators say
            self._drives.move(self.data, self.settings.dt)
            self._show_drive()
        world = self.hierarchy.update_world()
        for slots in self.model.generations:
            nodes = self.model.dyn[slots]
            self.data.omega_body[slots] = rows_transposed_times(world.rotation[nodes], world.omega[nodes])
            world = self.hierarchy.update_world()

    def _bind(self):
        """The stages' workspace (physics.pipeline.stages.Workspace: the hierarchy, the solver, the kernels'
        bundles over the Data's arrays) for this topology: built at reset and for each topology."""
        self._work = stages.Workspace(self.model, self.data, self.settings, self.hierarchy, self._solver,
                                      self.scene.events, self._runaway, self._substeps)
        self._drives = driving.Drives(self.scene.drives, self.model.kin) if self.scene.drives else None
        self._work.drives = self._drives if self._drives is not None and self._drives.kinematic else None

    # ------------------------------------------------------------------ settings
    def set(self, name, value):
        """Change one setting live (validated: ValueError naming the key and the value); wakes
        every sleeping body, so that what the setting changes shows."""
        self.settings.set(name, value)
        self.wake()
        self._work.world = stages.STALE
        self._runaway.input()

    def wake(self, node=None):
        """Wake `node` (a dynamic node's name or index) and its dynamic descendants, or every
        body (node None). Sleeping: physics.dynamics.sleeping.SLEEP_TIME."""
        stages.wake(self.model, self.data, None if node is None else self._resolve(node))

    def sleeping(self):
        """(N,) bool: the nodes that sleep now (dynamic bodies riding rigidly with their parent)."""
        out = np.zeros(len(self.names), bool)
        out[self.model.dyn] = self.data.sleep.asleep
        return out

    # ------------------------------------------------------------------ keeping derived state consistent
    def _sync(self, level):
        """The world state current to `level` (physics.pipeline.stages.sync: MOVING or COMPLETE)."""
        stages.sync(self.model, self.data, self.settings, self._work, level)

    # ------------------------------------------------------------------ the step
    def step(self, n=1):
        """Advance n steps of settings.dt, each in settings.substeps equal sub-steps: the stages of
        physics.pipeline.stages (physics.pipeline.step), then the reach policy and the runaway check."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"step: n must be an integer >= 0, got {n!r}")
        if self.diverged is not None:
            raise self.diverged
        found = None
        try:
            # A state set from outside (a restore, a planted value) is checked too, before the first
            # sub-step: by a pass of its own, or on the free-body sub-step in the integrator's pass
            first = stages.fused(self.model, self.settings, self._work)
            if n:
                if not first:
                    stages.check_divergence(self.model, self.data, self._work)
                if self._runaway.reference is None:
                    stages.take_runaway_reference(self.model, self.data, self.settings, self._work)
            timing = profile.recording()
            n, k = int(n), 0
            while k < n:        # (an index loop: a range and its iterator are objects made at every call)
                k += 1
                started = profile.mark() if timing else 0
                if self._drives is not None:
                    first = self._drive()
                first = advance(self.model, self.data, self.settings, self._work, first)
                self.data.step_count += 1
                if self.model.loose.size:
                    self._hand_off()
                if not self.model.driven and self.data.time >= self._runaway.due:
                    stages.check_runaway(self.model, self.data, self.settings, self._work)
                if timing:
                    profile.lap("step", started)
        except stages.Diverged as diverged:
            found = diverged        # raised below, outside this handler: one traceback, not two
        except DivergenceError as error:        # a body through a surface, a runaway: kept
            self.diverged = error
            raise
        if found is not None:
            self.diverged = stages.divergence_error(self.model, self.data, self.settings, self._work, found)
            raise self.diverged

    def _drive(self):
        """Before a step: the actuators on nodes set their kinematic nodes' velocities and give their
        motors' impulses (physics.dynamics.driving); returns `stages.fused`'s answer again, as a state set
        from outside needs."""
        world = None
        if self._drives.motors:     # a motor's axis turns with its node: the world poses now
            self._sync(stages.MOVING)
            world = self.hierarchy.world_state
        for node, impulse, point in self._drives.before_step(self.data, self.settings.dt, world):
            stages.apply_impulse(self.model, self.data, self.settings, self._work, node, impulse, point)
        if self._drives.kinematic:
            self._show_drive()
        return stages.fused(self.model, self.settings, self._work)

    def _show_drive(self):
        """The driven kinematic nodes' motion (`physics.dynamics.driving.Drives.move`) into the hierarchy: the
        local state and a and α, which the world pass reads."""
        self._work.calls.scatter_kinematic()
        slots = self._drives.slots
        nodes = self.model.kin[slots]
        self.hierarchy.local.acceleration[nodes] = self.data.kin_acceleration[slots]
        self.hierarchy.local.alpha[nodes] = self.data.kin_alpha[slots]
        self._work.world = stages.STALE

    # ------------------------------------------------------------------ reparenting
    def reparent(self, node, new_parent, keep="world"):
        """Move `node` (a name or index) and its subtree under `new_parent` (a name, an index, or
        None for the world), while running. The Dynamics of a Transform Hierarchy, "Global to
        Local": with A2' the new parent's world state,
          keep="world":  the node's world state A3 is kept, its local state becomes A1 = A2'⁻¹ A3
                         (pose, velocity, acceleration, ω, α; `physics.model.hierarchy.Hierarchy.reparent`);
                         a dynamic body keeps its world motion and omega_body; a kinematic node's
                         converted local a1, α1 become its prescribed ones; a fixed node keeps its
                         world pose and has no local motion: it rides its new parent;
          keep="local":  the local state A1 is kept: the subtree moves with the new parent.
        The subtree's other nodes keep their local state (so their world motion follows the node's);
        dynamic ones re-derive omega_body from it. Every body wakes; warm starts and joints carry over.
        A cycle (new parent inside the node's subtree), or a plane (static geometry only) moved under
        a parent that moves, raises ValueError and changes nothing. An
        input of the timeline and of recordings ("reparent"): replays bit for bit."""
        if keep not in ("world", "local"):
            raise ValueError(f"reparent: keep must be 'world' or 'local', got {keep!r}")
        k = self._resolve(node)
        p = -1 if new_parent is None else self._resolve(new_parent)
        if p == self.parent[k]:
            return
        self._check_static_geometry(k, p)
        self._sync(stages.COMPLETE)        # world motion and dynamic bodies' local ω, a, α current (derived only)
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
        self._runaway.input()

    def _check_static_geometry(self, k, p):
        """A plane is static geometry (docs/scene-format.md): refuse moving a subtree that carries one
        under a parent that moves (the loader's rule; the car carried the ground and fell 122 m)."""
        below = self.model.descendants(k)
        below[k] = True
        planes = [i for i in np.flatnonzero(below) if self.shapes[i] is not None
                  and any(shape["type"] == "plane" for shape in
                          (self.shapes[i] if isinstance(self.shapes[i], (list, tuple)) else [self.shapes[i]]))]
        mover = p
        while mover >= 0 and self.motion[mover] == "fixed":
            mover = self.parent[mover]
        if planes and mover >= 0:
            raise ValueError(f"reparent: {self.names[k]!r} carries a plane ({self.names[planes[0]]!r}), static geometry "
                             f"only, and its new parent {self.names[p]!r} moves (under {self.motion[mover]} "
                             f"{self.names[mover]!r})")

    def _retopologize(self, parent):
        """After the hierarchy was relinked to `parent` (N,): the model of that topology, and the
        solver (its state carried over)."""
        self.model = self.model.reparented(parent, self.hierarchy.order)
        self._build_solver()
        self._bind()

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
        reference = self._runaway.reference     # world motion kept: no energy changes, no input
        while node >= 0:
            self.reparent(int(node), None, keep="world")
            node = first_beyond_reach(self.model.loose, self.parent, self.hierarchy.local.translation, world.scale, REACH)
        self._runaway.reference = reference

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
        """Apply a world-frame impulse J (N s) to dynamic `node` (a name or index), through
        `point_world` (default its centre of mass, the node origin): its velocity and spin change,
        and its descendants' as counteraction says (physics.pipeline.stages.apply_impulse, the formulas)."""
        i = self._resolve(node)
        if self.motion[i] != "dynamic":
            raise ValueError(f"apply_impulse: node {self.names[i]!r} is {self.motion[i]}; only dynamic nodes take impulses")
        impulse = _vector3("impulse_world", impulse_world)
        point = None if point_world is None else _vector3("point_world", point_world)
        stages.apply_impulse(self.model, self.data, self.settings, self._work, i, impulse, point)

    def apply_force(self, node, force_world, point_world=None):
        """Apply a world-frame force F (N) to dynamic `node` through `point_world` (default its
        centre of mass) for the next step: the impulse J = F dt (`apply_impulse`, with all it does
        to descendants), given now, at the start of the step. This is the kick of a kick-drift
        splitting, the way the contact solver's impulses act too: for semi-implicit Euler it is the
        force integrated by the scheme itself (v' = v + h (g + F/m), x' = x + h v'), for the other
        integrators a first-order splitting of the extra force. Kept as an impulse, it is state
        that snapshots, hashes and replays already hold (no force waits between steps). A mouse
        pull (`physics.dynamics.mouse_joint`) gives one of these each step while it holds a body."""
        force = _vector3("force_world", force_world)
        self.apply_impulse(node, force * self.settings.dt, point_world)

    # ------------------------------------------------------------------ actuators
    def _actuators(self):
        """{name: (where, index, its actuator table)} of the scene's actuators (docs/scene-format.md):
        where "joint" (index: the joint's) or "node" (index: the actuator's among those on nodes).
        Made once: a scene's actuators are fixed (a learner sets controls every step)."""
        out = self.__dict__.get("_actuator_table")
        if out is None:
            out = {spec["actuator"]["name"]: ("joint", j, spec["actuator"]) for j, spec in enumerate(self.scene.joints)
                   if "actuator" in spec}
            out.update({spec["name"]: ("node", a, spec) for a, spec in enumerate(self.scene.drives)})
            self._actuator_table = out
        return out

    def _control_array(self, where):
        if where == "node":
            return self.data.drive.control
        return self.data.solver.control if self.data.solver is not None else ()

    @property
    def controls(self):
        """{actuator name: its input ctrl} (its `ctrl` at load until set, else 0 or the end of its
        ctrl_range nearest 0; `set_control`): part of the state, so snapshots, hashes and recordings hold it."""
        return {name: float(self._control_array(where)[i]) for name, (where, i, _) in self._actuators().items()}

    def actuators(self):
        """[(name, "joint" or "node", its [[actuator]] table as loaded)] in the scene's order: what a
        control panel shows (the table's ctrl_range bounds `set_control`)."""
        return [(name, where, spec) for name, (where, _, spec) in self._actuators().items()]

    def set_control(self, name, value):
        """Set actuator `name`'s input (a motor's force before its gear, a position servo's target
        coordinate, a velocity servo's target speed: docs/scene-format.md, [[actuator]]), held until
        set again. A value outside the actuator's `ctrl_range` is refused, as is an unknown name."""
        where, i, value = self.check_control(name, value)
        self._control_array(where)[i] = value
        self.wake()
        self._runaway.input()

    def check_control(self, name, value):
        """(where, index, value as a float) of a valid `set_control(name, value)` (`_actuators`),
        changing nothing; ValueError naming the actuator (its scene's actuators) or the value (its
        ctrl_range)."""
        actuators = self._actuators()
        if name not in actuators:
            known = ", ".join(map(repr, actuators)) or "none: the scene has no [[actuator]]"
            raise ValueError(f"set_control: unknown actuator {name!r}; the scene's actuators: {known}")
        where, j, actuator = actuators[name]
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"set_control: actuator {name!r} got {value!r}; expected a number") from None
        low, high = actuator.get("ctrl_range", (-FORCE_MAX, FORCE_MAX))
        if not low <= value <= high:
            raise ValueError(f"set_control: actuator {name!r} got {value!r}; expected a value in its ctrl_range "
                             f"[{low:g}, {high:g}]")
        return where, j, value

    # ------------------------------------------------------------------ joint coordinates
    def _named_joints(self):
        """{name: joint index} of the named hinges and sliders (the joints a coordinate names)."""
        return {spec["name"]: j for j, spec in enumerate(self.scene.joints)
                if "name" in spec and spec["type"] in ("hinge", "slider")}

    def _coordinates(self, keep=False):
        """(named hinge and slider joints {name: index}, q (J,), anchor point (J, 3), axis (J, 3)) now;
        `keep`: the joints, built here before the first step, stay (an input is about to move the bodies)."""
        named = self._named_joints()
        if not named or self._solver is None:
            return named, np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3))
        world, centre, rotation, _, _ = stages.solver_state(self.model, self.data, self.settings, self._work)
        q, point, axis = self._solver.joints_at(world, centre, rotation, keep).coordinates(centre, rotation)
        return named, q, point, axis

    def joint_coordinates(self):
        """{joint name: q} of the named hinges and sliders (and six-axis joints' axes) now: rad or m,
        their `coordinate` at load plus the angle or displacement since (a six-axis joint's axis: its
        Davenport angle or slide, physics.constraints.joints), as a Joint panel shows them."""
        named, q, _, _ = self._coordinates()
        return {name: float(q[j]) for name, j in named.items()}

    def pose_joint(self, name, q):
        """Put named hinge or slider `name` at coordinate q (rad or m), as MuJoCo's Joint panel sets
        qpos: every body on its b side (beyond it in the graph of the other joints) turns about its
        axis through its anchor (a hinge) or moves along it (a slider), rigidly, and comes to rest
        on its parent. ValueError for an unknown joint, a value outside its limits, or a joint in a
        loop (no side of it moves alone)."""
        named = self._named_joints()
        if name not in named:
            known = ", ".join(map(repr, named)) or "none: the scene names no hinge or slider"
            raise ValueError(f"pose_joint: unknown joint {name!r}; the scene's named hinges and sliders: {known}")
        j = named[name]
        spec = self.scene.joints[j]
        try:
            q = float(q)
        except (TypeError, ValueError):
            raise ValueError(f"pose_joint: joint {name!r} got {q!r}; expected a number") from None
        low, high = spec.get("lower"), spec.get("upper")
        low, high = -np.inf if low is None else low, np.inf if high is None else high
        if not (np.isfinite(q) and low <= q <= high):
            raise ValueError(f"pose_joint: joint {name!r} got {q!r}; expected a value within its limits [{low:g}, {high:g}]")
        moved = self._beyond(j)         # refused (a loop) before anything changes
        _, now, point, axis = self._coordinates(keep=True)
        delta = q - now[j]
        self._solver.joints.centre_on(j, q)     # (a hinge put past ±π of where it was is read on its new turn)
        if spec["type"] == "hinge":
            K = hat(axis[j])        # Rodrigues, its products in a fixed order (no BLAS: this is state)
            turn = np.eye(3) + np.sin(delta) * K + 2.0 * np.sin(delta / 2.0) ** 2 * driving.matmul(K, K)
            shift = point[j] - driving.matvec(turn, point[j])
        else:
            turn, shift = np.eye(3), delta * axis[j]
        self._sync(stages.COMPLETE)
        world, local = self.hierarchy.world_state, self.hierarchy.local
        moved_set = set(moved)
        tops = [k for k in moved if not self._has_ancestor_in(k, moved_set)]
        placed = {}
        for k in tops:      # new world poses first: a top's parent is not moved
            placed[k] = (driving.matvec(turn, world.translation[k]) + shift, driving.matmul(turn, world.rotation[k]))
        for k, (T, R) in placed.items():
            p = int(self.parent[k])
            if p >= 0:
                Rp, s = world.rotation[p], world.scale[p]
                local.translation[k] = driving.matvec(Rp.T, T - world.translation[p]) / s
                local.rotation[k] = driving.matmul(Rp.T, R)
            else:
                local.translation[k], local.rotation[k] = T, R
        # each moved body at rest on its parent, whose new world motion one world pass gives (a body
        # below another moved one, or below a kinematic node it carries, rides it)
        slots = self.model.dyn_slot[moved]
        local.velocity[moved] = 0.0
        local.omega[moved] = 0.0
        world = self.hierarchy.update_world()
        self.data.omega_body[slots] = rows_transposed_times(world.rotation[moved], world.omega[moved])
        # no solver stage has acted at this pose yet: the reported accelerations start from rest
        self.data.constraint_acceleration[slots] = 0.0
        self.wake()
        if self._solver is not None:
            self._solver.forget()
        self._work.world = stages.STALE
        self._runaway.input()

    def _has_ancestor_in(self, k, nodes):
        p = int(self.parent[k])
        while p >= 0:
            if p in nodes:
                return True
            p = int(self.parent[p])
        return False

    def _body_of(self, n):
        """The nearest dynamic node at or above node n, or −1 (n rides the world: fixed or kinematic)."""
        while n >= 0 and self.motion[n] != "dynamic":
            n = int(self.parent[n])
        return n

    def _beyond(self, j):
        """The dynamic nodes on joint j's b side: b's body and what the other joints join to it and
        the hierarchy carries below it, without crossing j; ValueError where that reaches j's a side
        or the world (a loop: no side of j moves alone), or where b rides no dynamic body."""
        spec = self.scene.joints[j]
        start, other_side = self._body_of(spec["b"]), self._body_of(spec["a"])
        if start < 0:
            raise ValueError(f"pose_joint: joint {spec.get('name')!r} has no dynamic body on its b side to move")
        edges, carried = {}, {}
        group = spec.get("group")       # an axis of a six_axis joint: its other axes and the joint turn with it
        for i, joint in enumerate(self.scene.joints):
            if i != j and (group is None or (i != group and joint.get("group") != group)):
                a, b = self._body_of(joint["a"]), self._body_of(joint["b"])
                edges.setdefault(a, set()).add(b)
                edges.setdefault(b, set()).add(a)
        for k in np.flatnonzero(self.motion == "dynamic"):      # each body under the body that carries it
            up = self._body_of(int(self.parent[k]))
            if up >= 0:
                carried.setdefault(up, []).append(int(k))
        seen, todo = set(), [start]
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            if k < 0 or k == other_side:
                raise ValueError(f"pose_joint: joint {spec.get('name')!r} is in a loop: its b side reaches its a side "
                                 "or the world through other joints, so no side of it moves alone")
            seen.add(k)
            todo += [n for n in edges.get(k, ()) if n not in seen]
            todo += [n for n in carried.get(k, ()) if n not in seen]
        return sorted(seen)

    def apply_keyframe(self, name):
        """Put the run at [[keyframe]] `name` (physics.pipeline.keyframes: its joints posed, its controls set);
        ValueError naming the scene's keyframes for an unknown one."""
        found = {spec["name"]: spec for spec in self.scene.keyframes}
        if name not in found:
            known = ", ".join(map(repr, found)) or "none: the scene has no [[keyframe]]"
            raise ValueError(f"apply_keyframe: unknown keyframe {name!r}; the scene's keyframes: {known}")
        for kind, args in keyframes.inputs(found[name]):
            self.pose_joint(*args) if kind == "pose" else self.set_control(*args)

    # ------------------------------------------------------------------ launchers
    def launch(self, name):
        """Fire launcher `name` ([[launcher]], physics.dynamics.driving): its dynamic node leaves the origin
        of its `from` node, with that point's world velocity plus the launcher's speed along its axis
        and that node's world ω, a root from now on. Returns a `physics.dynamics.driving.Launch` (the velocity
        and where it came from). ValueError for an unknown launcher, naming the scene's."""
        launchers = {spec["name"]: spec for spec in self.scene.launchers}
        if name not in launchers:
            known = ", ".join(map(repr, launchers)) or "none: the scene has no [[launcher]]"
            raise ValueError(f"launch: unknown launcher {name!r}; the scene's launchers: {known}")
        spec = launchers[name]
        node, muzzle = int(spec["node"]), int(spec["from"])
        if self.parent[node] >= 0:
            self.reparent(node, None, keep="world")
        self._sync(stages.COMPLETE)
        world, local = self.hierarchy.world_state, self.hierarchy.local
        R = world.rotation[muzzle].copy()
        muzzle_velocity, omega = world.velocity[muzzle].copy(), world.omega[muzzle].copy()
        velocity = muzzle_velocity + spec["speed"] * driving.matvec(R, np.asarray(spec["axis"]))
        parts = driving.velocity_parts(self.parent, self.names, world, local, muzzle)
        local.translation[node] = world.translation[muzzle]
        local.rotation[node] = R
        local.velocity[node] = velocity
        self.data.omega_body[self.model.dyn_slot[node]] = driving.matvec(R.T, omega)
        self.wake(node)
        self._work.world = stages.STALE
        self._runaway.input()
        return driving.Launch(self.names[node], velocity, omega, muzzle_velocity, parts,
                              world.translation[muzzle].copy(), self.time)

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
        """`physics.pipeline.snapshot.scene_fingerprint` of this simulation's scene (made once)."""
        return self._scene_identity()[0]

    def snapshot(self):
        """A `physics.Snapshot` of everything that decides the future: `restore` continues from it
        bit for bit, here or in a freshly loaded simulation of the same scene."""
        fingerprint, name = self._scene_identity()
        arrays = self.data.save()
        arrays["topology.parent"] = self.parent.copy()
        return Snapshot(fingerprint, name, self.data.step_count, self.settings.recorded(), arrays)

    def check_restorable(self, snapshot):
        """Refuse (ValueError naming the field and the value) a snapshot of this scene that no run of
        it can be in (physics.pipeline.restorable); changes nothing."""
        self._restorable.check(snapshot, self.settings, {**self.data.arrays(), "topology.parent": self.parent},
                               self._solver is not None)

    def restore(self, snapshot):
        """Put back a `snapshot()` of this scene (ValueError naming both scenes for another's, and
        naming the field and value of anything no run of this scene can hold: physics.pipeline.restorable;
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
        self.settings.update(Settings.restored(snapshot.settings))
        parent = snapshot.arrays["topology.parent"]
        if not np.array_equal(parent, self.parent):
            self._set_topology(parent)
        self.data.load(snapshot.arrays)
        self.data.step_count = snapshot.step_count
        self.diverged = None
        self._runaway.reset()
        if self._solver is not None:
            self._solver.forget()
        self._work.world = stages.STALE

    def state_hash(self):
        """SHA-256 (64 hex digits) of the state that decides the future (`snapshot`): equal
        hashes, equal futures. Box2D's and Jolt's determinism hashes are the model."""
        return self.snapshot().hash()

    # ------------------------------------------------------------------ queries
    def world(self):
        """DynamicTransform (batch N): every node relative to the world."""
        self._sync(stages.COMPLETE)
        return self.hierarchy.world_state.to_dynamic_transform()

    def world_poses(self):
        """(translation (N, 3), rotation (N, 3, 3), scale (N,)) of every node relative to the world,
        copies. Poses depend only on the local poses, which the stages keep current, so one world
        pass gives them without settling the dynamic bodies' velocities and accelerations
        (`physics.pipeline.stages.sync`): the cheap query for drawing; `world()` for the motion."""
        world = self.hierarchy.world_state if self._work.world != stages.STALE else self.hierarchy.update_world()
        return world.translation.copy(), world.rotation.copy(), world.scale.copy()

    def local(self):
        """DynamicTransform (batch N): every node relative to its parent, in the parent frame."""
        self._sync(stages.COMPLETE)
        return self.hierarchy.local.to_dynamic_transform()

    def inertial_accelerations(self):
        """dict frame/euler/centrifugal/coriolis -> (N, 3) world-frame accelerations of each dynamic
        body due to its parent's motion (zero for other nodes and for bodies parented to the world)."""
        self._sync(stages.COMPLETE)
        out = {name: np.zeros((len(self.names), 3)) for name in ("frame", "euler", "centrifugal", "coriolis")}
        if self.model.dyn.size:
            local = self.hierarchy.local
            terms = inertial_accelerations(local.translation[self.model.dyn], local.velocity[self.model.dyn],
                                           stages.frame(self.model, self._work, slice(None)))
            for name, values in terms.items():
                out[name][self.model.dyn] = values
        return out

    def constraint_accelerations(self):
        """(linear (N, 3), angular (N, 3)) world frame: the share of each dynamic body's reported
        acceleration and angular acceleration that the last solver stage (contacts, joints) gave it,
        Δv / h and Δω / h (zero for other nodes). With the inertial terms it completes the global-to-local
        conversion ("The Dynamics of a Transform Hierarchy"): a1 = J2⁻¹ (F/m + constraint + frame + euler + centrifugal + coriolis)."""
        self._sync(stages.COMPLETE)       # a sleeping body's share is what holds it, found there
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
        and its descendants, e.g. the car and its cargo): ½ m v² + ½ ω_bᵀ I ω_b, −m g · x. Where
        joints have springs or armatures, also spring: Σ ½ K (q − q_rest)² and armature: Σ ½ A q̇²
        (of the joints whose side b is in the subtree); where actuators are position servos with no
        force range (`SceneSolver.actuation`), servo: Σ ½ k (q − q_c)² toward each one's target at its control now; where a
        joint hangs from a moving frame (a kinematic node), frame_work: the work the frames have done
        on the bodies through those joints since the load. Without dampers, contacts, applied forces
        or actuators other than such servos at held controls, kinetic + potential + spring + armature
        + servo − frame_work stays what it was at the load (`energy_balance`)."""
        slots = self._bodies(subtree)
        inside = None
        if subtree is not None:
            inside = np.zeros(self.model.dyn.size, bool)
            inside[slots] = True
        return stages.energy(self.model, self.data, self.settings, self._work, slots, inside)

    def momentum(self, subtree=None):
        """dict linear (3,), angular (3,) about the world origin, of all dynamic bodies or of those
        in `subtree` (as `energy`): P = Σ m v,  L = Σ x × m v + R3 (I ω_b)."""
        self._sync(stages.MOVING)
        slots = self._bodies(subtree)
        world, nodes = self.hierarchy.world_state, self.model.dyn[slots]
        p = self.mass[nodes][:, None] * world.velocity[nodes]
        spin = rows_times(world.rotation[nodes], self.inertia_body[nodes] * self.data.omega_body[slots])
        return {"linear": p.sum(axis=0), "angular": (cross(world.translation[nodes], p) + spin).sum(axis=0)}

    def body_energies(self):
        """dict kinetic, potential -> (N,) J per node: each dynamic body's ½ m v² + ½ ω_bᵀ I ω_b and
        −m g · x, 0 for the other nodes (the terms `energy()` sums)."""
        self._sync(stages.MOVING)
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
        self._sync(stages.MOVING)
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
        (`iterations` of them, more on a cold start: `physics.constraints.solver.COLD_START_SWEEPS`); where a RATTLE
        retry took the last sub-step's joints' island in halves, its last half's (`physics.pipeline.retry.After`)."""
        return np.zeros(0) if self._solver is None else self._solver.residual.copy()

    def substep_counts(self):
        """How the sub-steps went since the simulation was made or reset (physics.pipeline.retry's
        `SubstepCount`: diagnostics, not state): {"nominal", "taken": passes of the stage list asked
        for and run, "per_nominal": taken / nominal (1 where nothing was taken again),
        "retried_left", "retried_start_error": RATTLE sub-steps taken again as halves because the
        position projection left its start-of-step rows or started too far off the constraint,
        "retries": both, "halved_ahead": halved before an attempt, "worst_step", "last_step": the
        largest and the last step's taken / nominal}."""
        return self._substeps.as_dict()

    def joint_separation(self):
        """(J,) m: for each joint, the world distance between its anchor on body a and its anchor on
        body b, |(c_a + R_a r_a) − (c_b + R_b r_b)| (an anchor on the world is a world point): a ball
        joint's position error. Empty before the first step (joints are built by the first prepare)."""
        joints = None if self._solver is None else self._solver.joints
        if joints is None:
            return np.zeros(0)
        world, centre, rotation, _, _ = stages.solver_state(self.model, self.data, self.settings, self._work)
        self._solver.follow_frames(world)
        ends = [joints.to_world(centre, rotation, side, joints.anchor[:, side], True) for side in range(2)]
        return np.linalg.norm(ends[0] - ends[1], axis=1)

    def first_non_finite(self):
        """Name of the first node whose world state holds a NaN or infinity, else None."""
        self._sync(stages.MOVING)
        world = self.hierarchy.world_state
        bad = ~(np.isfinite(world.translation).all(axis=1) & np.isfinite(world.velocity).all(axis=1)
                & np.isfinite(world.rotation).all(axis=(1, 2)) & np.isfinite(world.omega).all(axis=1)
                & np.isfinite(world.scale))
        return self.names[int(np.argmax(bad))] if bad.any() else None

    def acceleration_terms(self, node, frame=None):
        """The world acceleration of `node`'s origin (a name or index, or a sequence of them)
        decomposed by the transport theorem as seen from `frame` (a node's name or index; None or
        "world": the world), physics.math.relative_motion:

            world = relative + constraint + frame + euler + centrifugal + coriolis

        frame = a_F (the frame origin's acceleration), euler = α_F × r, centrifugal = ω_F × (ω_F × r),
        coriolis = 2 ω_F × v_rel, r = x − x_F, v_rel = v − v_F − ω_F × r; constraint = the last
        solver stage's share of a dynamic node's acceleration (contacts, joints:
        `constraint_accelerations`), 0 for other nodes; relative = the rest of the acceleration
        relative to the frame (relative + constraint = a_rel = R_F d²p̃/dt², p̃ the node in F's axes).

        -> dict relative, constraint, frame, euler, centrifugal, coriolis, world: world-axis vectors
        (m/s²), (3,) for one node, (K, 3) for a sequence. The node's own frame gives all zeros but
        `world` and `frame`; the world frame gives zero transport terms."""
        single = isinstance(node, (str, int, np.integer))
        nodes = np.array([self._resolve(n) for n in ([node] if single else node)], dtype=np.int64)
        self._sync(stages.COMPLETE)
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
    return np.ascontiguousarray(matrix_from_quaternion(q))
