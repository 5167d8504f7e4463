"""Data: everything a simulation's steps change, beside the Model that they do not.

Pinocchio's Model/Data split and MuJoCo's mjModel/mjData: `physics.model.model.Model` holds what stays
constant for a topology (masses, inertias, motion types, slots, generations), `Data` the state the
steps change: poses and velocities, omega_body, the kinematic nodes' copy, sleep, the RATTLE hint,
the clock, and the solver's warm-start impulses, persistent manifolds and joints
(physics.constraints.solver_state.SolverState, which `physics.constraints.solver.SceneSolver` works on). The stages read and write the arrays of one `Data`; a
snapshot is a copy of them (`save`) plus the topology, and a restore writes them back (`load`): the
fixed-size arrays in place, so the kernels' bundles built on them (`physics.pipeline.stages.Workspace`)
stay valid.

Names: the snapshot's. Under "derived." is what a step computes afresh before using it (the local
ω, a and α of nodes, the last solver stage's share of the accelerations): kept so that queries after
a restore answer as before, left out of the hash (`physics.pipeline.snapshot.Snapshot.hash`).
"""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from physics.dynamics.driving import DriveState
from physics.model.hierarchy import NodeState
from physics.dynamics.sleeping import SleepState
from physics.constraints.solver_state import SolverState

# Arrays a snapshot may lack (a file written before they were kept): they load as zeros.
OPTIONAL = ("derived.frame_work",)

# A node's local state, by field: the integrated ones, then those a query derives (`arrays`).
NODE_FIELDS = ("translation", "rotation", "scale", "velocity", "acceleration", "omega", "alpha")
DERIVED_NODE_FIELDS = ("acceleration", "omega", "alpha")


class Motion(NamedTuple):
    """Local pose and velocity of a group of nodes (K, ...), in the group's order."""

    translation: np.ndarray     # (K, 3)
    rotation: np.ndarray        # (K, 3, 3)
    velocity: np.ndarray        # (K, 3)
    omega: np.ndarray           # (K, 3) omega_local, or (0, 3): not written (`physics.dynamics.body_passes.scatter_motion`)


@dataclass
class Data:
    """The per-step state of a simulation of N nodes, D dynamic and K kinematic (module docstring)."""

    local: NodeState                    # every node's local state, parent frame (the Hierarchy's own)
    omega_body: np.ndarray              # (D, 3) each body's angular velocity relative to the world, body axes
    kinematic: Motion                   # (K, ...) the kinematic nodes' local state, stepped in place
    kin_acceleration: np.ndarray        # (K, 3) their prescribed local a (the scene's, until a reparent)
    kin_alpha: np.ndarray               # (K, 3) their prescribed local α
    constraint_acceleration: np.ndarray  # (D, 6) the last solver stage's change of world [v, ω] per second
    sleep: SleepState                   # (D, ...) sleep timers and what sleeping bodies hold
    rattle_hint: np.ndarray             # (2,) the last RATTLE sub-step's start error (`retry._start_error`) and its h
    solver: SolverState | None = None   # the solver's warm starts, manifolds and joints (None: no solver)
    drive: DriveState | None = None     # the actuators on nodes' controls and coordinates (None: the scene has none)
    frame_work: np.ndarray | None = None  # (J,) J each joint's moving frame did on the bodies (None: no joint has one)
    time: float = 0.0                   # s since the scene was loaded or reset
    step_count: int = 0                 # whole steps since then
    next_event: int = 0                 # the scene's first timed impulse not applied yet

    @classmethod
    def start(cls, local, kinematic_nodes, kin_acceleration, kin_alpha, bodies):
        """The state at load: `local` the scene's local state, the kinematic nodes' rows copied
        out of it, their accelerations copied, and `bodies` (D) awake, with no spin yet."""
        kinematic = Motion(*(getattr(local, name)[kinematic_nodes] for name in Motion._fields))
        sleep = SleepState(np.zeros(bodies), np.zeros(bodies, bool), np.zeros((bodies, 3)), np.zeros((bodies, 3, 3)),
                           np.zeros((bodies, 3)), np.zeros((bodies, 9)))
        return cls(local, np.zeros((bodies, 3)), kinematic, kin_acceleration.copy(), kin_alpha.copy(),
                   np.zeros((bodies, 6)), sleep, np.array([0.0, 1.0]))

    def arrays(self):
        """The fixed-size arrays, by the snapshot's names, as live views (no copies)."""
        out = {("derived.local_" if f in DERIVED_NODE_FIELDS else "local.") + f: getattr(self.local, f)
               for f in NODE_FIELDS}
        out["omega_body"] = self.omega_body
        out.update(self.sleep._asdict())
        out["derived.constraint_acceleration"] = self.constraint_acceleration
        out.update({"kinematic." + f: a for f, a in self.kinematic._asdict().items()})
        out["kinematic.acceleration"], out["kinematic.alpha"] = self.kin_acceleration, self.kin_alpha
        out["rattle.hint"] = self.rattle_hint
        if self.drive is not None:      # only in a scene that drives nodes: the others' hashes are as they were
            out["drive.control"], out["drive.coordinate"] = self.drive.control, self.drive.coordinate
        if self.frame_work is not None:     # only with a joint on a moving frame (a readout: not hashed)
            out["derived.frame_work"] = self.frame_work
        return out

    def save(self):
        """Everything, as copies by the snapshot's names: `arrays`, the clock, the next event, and
        the solver's state under "solver." (the step count goes in the snapshot's header)."""
        out = {key: value.copy() for key, value in self.arrays().items()}
        out["time"] = np.array(self.time)
        out["next_event"] = np.array(self.next_event, np.int64)
        if self.solver is not None:
            out.update({"solver." + key: value for key, value in self.solver.arrays().items()})
        return out

    def load(self, saved):
        """Put back a `save()` (the fixed-size arrays in place); the solver's state where this Data
        has a solver (one saved without solver arrays starts from an empty cache)."""
        if self.frame_work is None and "derived.frame_work" in saved:     # (a topology whose frames came later)
            self.frame_work = np.array(saved["derived.frame_work"], float)
        for key, value in self.arrays().items():
            value[:] = saved[key] if key in saved or key not in OPTIONAL else 0.0
        self.time = float(saved["time"])
        self.next_event = int(saved["next_event"])
        if self.solver is not None:
            self.solver.load({key[len("solver."):]: value for key, value in saved.items() if key.startswith("solver.")})
