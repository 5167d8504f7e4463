"""The constant model of a simulated scene: its bodies and its topology (Pinocchio's Model).

The rigid-body library Pinocchio keeps what describes a robot — joint tree, masses, inertias — in a
`Model` that never changes while it runs, and everything a step computes or advances in a `Data`. `physics.pipeline.simulation.Simulation` does the same: `Simulation.model`
is a `Model`, the arrays the steps change (the hierarchy's local and world state, omega_body, the
kinematic nodes' state, sleep timers, the solver's warm starts) are the simulation's own.

A `Model` is built from a scene and a parent array (N,) and is not changed afterwards: a reparent
builds the next one (`reparented`), which shares the body parameters and derives the topology anew.

Conventions: N nodes indexed as in the scene; D dynamic bodies, "slots", numbered in node order
(`dyn`); K kinematic nodes (`kin`); a parent index −1 is the world. Per-body arrays `*_dyn` are in
slot order, per-node arrays in node order.
"""
import copy

import numpy as np


class Model:
    """What the simulation of a scene holds constant: body parameters (from the scene) and the
    topology derived from `parent` (rebuilt by `reparented`).

    Body parameters (N nodes): names, index (name → node), motion ("fixed", "kinematic",
    "dynamic"), shapes, mass, inertia_body (principal moments, body axes); kin (K,), dyn (D,) the
    kinematic and dynamic nodes; dyn_slot (N,) each node's slot (−1 if not dynamic); mass_dyn,
    inverse_mass (D,), inertia_dyn (D, 3), force_applied, torque_applied (D, 3) world frame;
    kin_acceleration, kin_alpha (K, 3) the kinematic nodes' local accelerations as the scene gives
    them; in_joint (N,) bool; driven: a kinematic node moves or a force or torque is applied
    (`physics.pipeline.stages.RUNAWAY_EVERY`).

    Topology (from `parent` (N,) and an evaluation `order`, every node after its parent):
    dyn_parent (D,) each body's parent node, dyn_rooted (D,) whether it has one; depth (N,);
    nearest_dynamic_ancestor (N,) node (−1: none) and nearest_dynamic_slot (D,) its slot;
    generations: per generation (number of dynamic strict ancestors) the slots in it, and
    generation_order their concatenation (ancestors first); solver_bodies (N,) the slot each node's
    shapes move with; moving: the kinematic and dynamic nodes, sorted; any_parented; sleepable (D,)
    and may_sleep (`physics.dynamics.sleeping`); loose: the parented bodies in no joint
    (`physics.pipeline.simulation.REACH`); own_motion (D,) bool and any_own_motion: the bodies whose
    world motion is their own whatever settings.counteract (`_own_motion`).
    """

    def __init__(self, scene, parent, order):
        self.names = scene.names
        self.index = {name: i for i, name in enumerate(self.names)}
        self.motion = scene.motion.copy()
        self.shapes = scene.shapes
        self.mass = scene.mass.copy()
        self.inertia_body = scene.inertia_body.copy()
        self.kin = np.flatnonzero(self.motion == "kinematic")
        self.dyn = np.flatnonzero(self.motion == "dynamic")
        self.dyn_slot = np.full(len(self.names), -1)
        self.dyn_slot[self.dyn] = np.arange(self.dyn.size)
        self.force_applied = scene.applied_force[self.dyn].copy()
        self.torque_applied = scene.applied_torque[self.dyn].copy()
        self.inertia_dyn = np.ascontiguousarray(self.inertia_body[self.dyn])
        self.mass_dyn = np.ascontiguousarray(self.mass[self.dyn])
        self.inverse_mass = 1.0 / self.mass_dyn
        self.kin_acceleration = np.ascontiguousarray(scene.acceleration[self.kin])
        self.kin_alpha = np.ascontiguousarray(scene.angular_acceleration[self.kin])
        self.in_joint = np.zeros(len(self.names), bool)
        for joint in scene.joints:
            self.in_joint[[n for n in (joint["a"], joint["b"]) if n >= 0]] = True
        # Runaway (RUNAWAY_EVERY): a scene with no driver — no kinematic node that moves, no applied
        # force or torque, no actuator on a node — gains no energy but through inputs.
        kin_moves = any(np.any(getattr(scene, f)[self.kin] != 0) for f in
                        ("velocity", "angular_velocity", "acceleration", "angular_acceleration"))
        self.driven = bool(kin_moves or np.any(self.force_applied) or np.any(self.torque_applied) or scene.drives)
        self._derive_topology(parent, order)

    def reparented(self, parent, order):
        """The model of the same bodies under `parent` (N,) (`order`: every node after its parent)."""
        model = copy.copy(self)
        model._derive_topology(parent, order)
        return model

    def _derive_topology(self, parent, order):
        """Everything derived from `parent`: each dynamic body's parent, nearest dynamic ancestor
        and generation, depths, the solver body each node's shapes move with, and which bodies may
        sleep or leave their parent (`REACH`)."""
        self.parent = np.array(parent, dtype=np.asarray(parent).dtype)
        self.dyn_parent = self.parent[self.dyn]
        self.dyn_rooted = self.dyn_parent >= 0
        self.nearest_dynamic_ancestor, generation = self._dynamic_ancestry(order)
        # Slots (into dyn) of each generation.
        self.generations = [np.flatnonzero(generation[self.dyn] == g) for g in range(int(generation[self.dyn].max(initial=-1)) + 1)]
        self.depth = self._depths(order)
        self.solver_bodies = self._solver_body_of_nodes()
        self.nearest_dynamic_slot = np.where(self.nearest_dynamic_ancestor[self.dyn] >= 0,
                                             self.dyn_slot[self.nearest_dynamic_ancestor[self.dyn]], -1)
        self.moving = np.sort(np.concatenate([self.kin, self.dyn])).astype(np.int64)   # what a step changes
        self.generation_order = np.concatenate([np.zeros(0, np.int64), *self.generations]).astype(np.int64)
        self.any_parented = bool(self.dyn_rooted.any())
        # Bodies that may sleep: not below another dynamic body (its motion is not a steady frame),
        # with none below them (they are its frame), in no joint.
        carries = np.zeros(self.dyn.size, bool)      # a dynamic body below it (its frame is this one)
        carries[self.nearest_dynamic_slot[self.nearest_dynamic_slot >= 0]] = True
        self.sleepable = (self.nearest_dynamic_slot < 0) & ~self.in_joint[self.dyn] & ~carries
        self.may_sleep = bool(self.sleepable.any())    # else the sleep stage is skipped (stress: 10k nodes)
        # Loose bodies (REACH): parented, in no joint; handed to the world once out of reach.
        self.loose = self.dyn[self.dyn_rooted & ~self.in_joint[self.dyn]].astype(np.int64)
        self.own_motion = self._own_motion()
        self.any_own_motion = bool((self.own_motion & (self.nearest_dynamic_slot >= 0)).any())

    def _own_motion(self):
        """(D,) bool: the bodies in a joint. Their world motion is their own whatever
        settings.counteract: a joint's rows are solved for its two bodies' world motions and its
        impulses are forces between them, so a body that also inherited its carrier's share of them
        (counteraction off) would take that share twice and the joint pull it back the next sub-step
        harder: a robot nested link under link as its file's tree (the importers'
        `physics.io.articulated`) runs away so within a fifth of a second, and so does a joint's
        body carried by an inheriting one. What counteraction shows, a loose body carried along by what it rides
        on (the car's cargo: `loose`), stays the setting's, and a body of its own under a loose one
        keeps its own motion too (`physics.dynamics.body_passes.move_bodies` solves its pose from
        its carrier's as it moved)."""
        return self.in_joint[self.dyn].copy()

    def _dynamic_ancestry(self, order):
        """Nearest dynamic strict ancestor of every node (-1 if none) and its generation (count of
        dynamic strict ancestors). One pass in evaluation order (parents first)."""
        count = len(self.names)
        nearest = np.full(count, -1)
        generation = np.zeros(count, dtype=np.int64)
        for i in order:
            p = self.parent[i]
            if p < 0:
                continue
            parent_dynamic = self.motion[p] == "dynamic"
            nearest[i] = p if parent_dynamic else nearest[p]
            generation[i] = generation[p] + (1 if parent_dynamic else 0)
        return nearest, generation

    def _solver_body_of_nodes(self):
        """The dynamic slot each node's shapes move with (itself if dynamic, the nearest dynamic
        ancestor if fixed, −1 for kinematic nodes and static ones)."""
        own = np.where(self.motion == "dynamic", self.dyn_slot, -1)
        ancestor = np.where(self.nearest_dynamic_ancestor >= 0, self.dyn_slot[self.nearest_dynamic_ancestor], -1)
        return np.where(self.motion == "dynamic", own, np.where(self.motion == "fixed", ancestor, -1))

    def _depths(self, order):
        depth = np.zeros(len(self.names), dtype=np.int64)
        for i in order:
            if self.parent[i] >= 0:
                depth[i] = depth[self.parent[i]] + 1
        return depth

    def descendants(self, node):
        """Boolean mask (N,) of the strict descendants of `node` (vectorized climb, depth passes)."""
        ancestor = self.parent.copy()
        mask = np.zeros(len(self.names), dtype=bool)
        for _ in range(int(self.depth.max(initial=0))):
            mask |= ancestor == node
            ancestor = np.where(ancestor >= 0, self.parent[np.maximum(ancestor, 0)], -1)
        return mask
