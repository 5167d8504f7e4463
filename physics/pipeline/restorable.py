"""What a snapshot must hold to be restored into a scene: the checks `Simulation.restore` makes
before anything changes, so that a refused snapshot leaves the run as it was.

A snapshot's bytes are checked as bytes by `physics.pipeline.snapshot.Snapshot.from_bytes` (every field of
its kind, the sizes agreeing); here its values are checked against one scene: what no run of that
scene can hold (a non-rotation, a fixed node that moves, a cycle in the topology, a world scale or
a shape's world length outside the loader's ranges, solver arrays that index bodies that do not
exist) is refused with a ValueError naming the field and the value.
"""
from dataclasses import fields

import numpy as np

from physics.constraints.joints import ALL_KINDS, AXES_MAX, AXIS, SIX_AXIS, Joints
from physics.pipeline.data import DERIVED_NODE_FIELDS, OPTIONAL
from physics.core.validation import FORCE_MAX, LENGTH_MAX, LENGTH_MIN, SCALE_RANGE, shape_lengths, shape_lengths_outside, short_repr

# A restored rotation matrix's largest |RᵀR − I|: a stepped one stays within round-off of
# orthonormal (1e-15 a step), a crafted all-zero one is 1 off.
ROTATION_TOLERANCE = 1e-6
TURNED_MAX = 1e12       # rad: a hinge's turns (past this an angle's float spacing is 1e-4 rad: no run's)


class Restorable:
    """The checks of one scene (module docstring); its shapes' extents are measured once."""

    def __init__(self, scene, length_limit):
        self.scene = scene
        self.length_limit = length_limit    # m: a fixed node's farthest place on its parent
        self._extents = None

    def check(self, snapshot, settings, live, solver_expected):
        """Refuse, before anything changes, a snapshot of this scene that no run of it can be in:
        ValueError naming the field and the value. Settings as `Settings.set` checks them (against a
        copy of `settings`); every array this version knows, of the shape and kind it has here
        (`live`: the Data's fixed-size arrays and the topology), finite; rotations orthonormal,
        scales positive; the topology's parents in range and acyclic (a cycle hung the relinking);
        time, step and event counters in range; the solver's arrays complete where the solver keeps
        state (`solver_expected`: this run has a solver; its arrays are required where the
        snapshot's topology is this run's, and in a scene with joints always)."""
        def refuse(field, value, expected):
            raise ValueError(f"restore: snapshot field {field!r}: got {short_repr(value)}; expected {expected}")

        checked = settings.copy()
        checked.update(snapshot.settings)           # SettingError names the key and the value
        arrays = snapshot.arrays
        for key in (*live, "time", "next_event"):
            if key not in arrays and key not in OPTIONAL:
                refuse(key, "nothing", "an array (the file lacks it)")
        for key, value in arrays.items():
            value = np.asarray(value)
            reference = live.get(key)
            if reference is None and key not in ("time", "next_event", *OPTIONAL) and not key.startswith("solver."):
                refuse(key, key, "a field this version knows (a file of a newer version?)")
            if reference is not None and (value.shape != reference.shape or value.dtype.kind != reference.dtype.kind):
                refuse(key, f"{value.dtype} {value.shape}", f"{reference.dtype} {reference.shape}")
            # the solver's joints hold unbounded limits as ±inf; nothing holds a NaN
            if value.dtype.kind not in "fc":
                continue
            bad = np.isnan(value) if key.startswith("solver.") else ~np.isfinite(value)
            if bad.any():
                refuse(key, value[bad][:3], "numbers (finite, but for the solver's unbounded limits)")
        for key in ("local.rotation", "kinematic.rotation"):
            R = arrays[key]
            if len(R) and np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3)).max() > ROTATION_TOLERANCE:
                refuse(key, "a matrix that is not a rotation", f"orthonormal rows (to {ROTATION_TOLERANCE:g})")
            # orthonormal with determinant −1 is a reflection: it turns a body's handedness (and
            # the cross products of its dynamics) inside out
            if len(R) and (np.linalg.det(R) < 0.0).any():
                node = int(np.flatnonzero(np.linalg.det(R) < 0.0)[0])
                refuse(key, f"a reflection (determinant −1) at node {self.scene.names[node]!r}"
                       if key == "local.rotation" else "a reflection (determinant −1)", "rotations (determinant +1)")
        # the kinematic nodes' stepped copy is what the hierarchy shows of them at every step's end
        # (physics.pipeline.data): a copy that differs is no run's state (1e308 in the copy alone
        # reached the contact margin before any check)
        kinematic = np.flatnonzero(self.scene.motion == "kinematic")
        for field in ("translation", "rotation", "velocity"):
            copy, shown = arrays[f"kinematic.{field}"], arrays[f"local.{field}"][kinematic]
            if copy.shape == shown.shape and not np.array_equal(copy, shown):
                k = int(np.flatnonzero(np.any((copy != shown).reshape(len(kinematic), -1), axis=1))[0])
                refuse(f"kinematic.{field}", copy[k], f"the kinematic node {self.scene.names[kinematic[k]]!r}'s "
                                                      f"local.{field}, {short_repr(shown[k].tolist())} (its copy)")
        fixed = self.scene.motion == "fixed"
        # a fixed node's place on its parent never grows in a run (a moving node past this length
        # stops the run: `physics.pipeline.stages.check_divergence`); a rail of the tank at 1e308 m overflowed the contact margin
        far = fixed & (np.abs(arrays["local.translation"]).max(axis=1) > self.length_limit)
        if far.any():
            i = int(np.argmax(far))
            refuse("local.translation", arrays["local.translation"][i],
                   f"within {self.length_limit:g} m of its parent at the fixed node {self.scene.names[i]!r}")
        for key in ("local.velocity", *("derived.local_" + f for f in DERIVED_NODE_FIELDS)):
            moving = fixed & np.any(arrays[key].reshape(len(fixed), -1) != 0, axis=1)
            if moving.any():     # a fixed node has no motion of its own (the ground's velocity fed the contact margin)
                i = int(np.argmax(moving))
                refuse(key, arrays[key][i], f"0 at the fixed node {self.scene.names[i]!r} (it has no motion of its own)")
        scale, (low, high) = arrays["local.scale"], SCALE_RANGE
        if not np.all((scale >= low) & (scale <= high)):
            refuse("local.scale", scale[~((scale >= low) & (scale <= high))][:3], f"scales in [{low:g}, {high:g}]")
        if np.any(arrays["still"] < 0):     # seconds at rest (physics.dynamics.sleeping)
            refuse("still", arrays["still"][arrays["still"] < 0][:3], "seconds >= 0")
        for key in ("time", "next_event"):
            if np.shape(arrays[key]) != ():
                refuse(key, f"shape {np.shape(arrays[key])}", "one number")
        time, next_event = float(arrays["time"]), int(arrays["next_event"])
        if not time >= 0:
            refuse("time", time, "a finite time >= 0")
        if not 0 <= next_event <= len(self.scene.events):
            refuse("next_event", next_event, f"0 .. {len(self.scene.events)} (the scene's events)")
        if not (isinstance(snapshot.step_count, (int, np.integer)) and snapshot.step_count >= 0):
            refuse("step_count", snapshot.step_count, "an integer >= 0")
        parent, n = arrays["topology.parent"], len(self.scene.names)
        same = np.array_equal(parent, live["topology.parent"])     # this run's own: a tree
        if np.any((parent < -1) | (parent >= n)):
            refuse("topology.parent", parent[(parent < -1) | (parent >= n)][:3], f"node indices -1 .. {n - 1}")
        state = np.zeros(n, np.int8)        # 0 unseen, 1 on the path walked now, 2 known to reach the world
        for i in range(0 if same else n):
            path, a = [], i
            while a >= 0 and state[a] == 0:
                state[a] = 1
                path.append(a)
                a = parent[a]
            if a >= 0 and state[a] == 1:
                refuse("topology.parent", f"a cycle through node {self.scene.names[a]!r}", "a tree (no node its own ancestor)")
            state[path] = 2
        self._check_world_scales(parent, scale, refuse)
        self._check_sleep(arrays, parent, refuse)
        self._check_controls(arrays, refuse)
        self._check_solver_state(arrays, refuse, solver_expected and same, snapshot.step_count)

    def _check_sleep(self, arrays, parent, refuse):
        """Only a body that may sleep sleeps (physics.model.model.Model.sleepable, in the snapshot's
        topology): none in a joint, below another dynamic body or with one below it; and it is held
        at a pose (held_rotation a rotation, held_translation within the fixed nodes' reach), which
        the hold stage puts it back to every sub-step. (The tank's lantern restored asleep on its
        joint, and a crate asleep at a held rotation of zeros, divided by a zero inertia.)"""
        asleep = np.asarray(arrays["asleep"], bool)
        dynamic = np.flatnonzero(self.scene.motion == "dynamic")     # the slots' nodes, in order
        if not asleep.any():
            return
        in_joint = np.zeros(len(self.scene.names), bool)
        for joint in self.scene.joints:
            in_joint[[n for n in (joint["a"], joint["b"]) if n >= 0]] = True
        is_dynamic = self.scene.motion == "dynamic"
        below = np.zeros(len(self.scene.names), bool)       # a dynamic ancestor
        carries = np.zeros(len(self.scene.names), bool)     # a dynamic node below it
        for node in dynamic:
            a = parent[node]
            while a >= 0 and not is_dynamic[a]:
                a = parent[a]
            if a >= 0:
                below[node] = carries[a] = True
        for slot in np.flatnonzero(asleep):
            node = dynamic[slot]
            why = "in a joint" if in_joint[node] else "below another dynamic body" if below[node] else \
                "with a dynamic body below it" if carries[node] else None
            if why is not None:
                refuse("asleep", f"node {self.scene.names[node]!r} asleep", f"bodies that may sleep (it is {why})")
        R, T = arrays["held_rotation"][asleep], arrays["held_translation"][asleep]
        if (np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3)).max() > ROTATION_TOLERANCE
                or (np.linalg.det(R) < 0.0).any()):
            refuse("held_rotation", "a matrix that is not a rotation, for a body asleep", "rotations (determinant +1)")
        if np.abs(T).max() > self.length_limit:
            refuse("held_translation", T[np.abs(T).max(axis=1) > self.length_limit][0],
                   f"within {self.length_limit:g} m of its parent, for a body asleep")

    def _check_controls(self, arrays, refuse):
        """Every actuator's input within its ctrl_range, as `Simulation.set_control` holds it (the
        tank's throttle at 1e308 drove its hull past every bound before any check)."""
        tables = [("drive.control", list(self.scene.drives)),
                  ("solver.control", [spec.get("actuator") for spec in self.scene.joints])]
        for key, actuators in tables:
            if key not in arrays:
                continue
            for value, actuator in zip(np.asarray(arrays[key], float), actuators):
                if actuator is None:
                    continue
                low, high = actuator.get("ctrl_range", (-FORCE_MAX, FORCE_MAX))
                if not low <= value <= high:
                    refuse(key, f"{float(value)!r} for actuator {actuator.get('name')!r}",
                           f"a value in its ctrl_range [{low:g}, {high:g}]")

    def _check_world_scales(self, parent, scale, refuse):
        """The loader's `world_lengths` for a restored state: each node's world scale (the product of
        the scales from its root, along an acyclic `parent`) in SCALE_RANGE and its shapes' world
        lengths in [LENGTH_MIN, LENGTH_MAX] (the inertia and the contact geometry are formed from
        them: a box of 1e308 m made the contact margin infinite). Whole arrays, since a timeline's scrub
        restores often: the products by pointer doubling (log₂ of the depth passes), each shape's
        lengths as its shortest and longest at world scale 1 (`_shape_extents`) times the scale."""
        world, above = np.asarray(scale, float).copy(), np.asarray(parent).copy()
        while True:
            up = np.flatnonzero(above >= 0)
            if not up.size:
                break
            world[up] *= world[above[up]]
            above[up] = above[above[up]]
        low, high = SCALE_RANGE
        for i in np.flatnonzero(~((world >= low) & (world <= high)))[:1]:
            refuse("local.scale", f"a world scale of {world[i]:g} at node {self.scene.names[i]!r}",
                   f"world scales (products of the scales from the root) in [{low:g}, {high:g}]")
        node, shortest, longest, shapes = self._shape_extents()
        bad = (world[node] * shortest < LENGTH_MIN) | (world[node] * longest > LENGTH_MAX)
        for row in np.flatnonzero(bad)[:1]:
            i = node[row]
            key, lengths = shape_lengths_outside(shapes[row], world[i])
            refuse("local.scale", f"shape.{key} {short_repr(lengths.tolist())} m in the world at node "
                   f"{self.scene.names[i]!r}", f"world lengths in [{LENGTH_MIN:g}, {LENGTH_MAX:g}] m")

    def _shape_extents(self):
        """Every (node, shape) of the scene: the node (S,), the shape's shortest and longest length at
        world scale 1 (S,) as `shape_lengths_outside` measures them (its lengths scale with the world
        scale), and the shape dicts; built once."""
        if self._extents is None:
            node, shortest, longest, rows = [], [], [], []
            for i, shapes in enumerate(self.scene.shapes):
                for shape in [] if shapes is None else [shapes] if isinstance(shapes, dict) else shapes:
                    lengths = shape_lengths(shape)
                    node.append(i)
                    shortest.append(lengths.min(initial=np.inf))
                    longest.append(lengths.max(initial=0.0))
                    rows.append(shape)
            self._extents = (np.array(node, np.int64), np.array(shortest), np.array(longest), rows)
        return self._extents

    _CACHE_REQUIRED = ("impulse_keys", "impulses", "impulse_points", "impulse_normals", "n_shapes", "manifold_keys",
                       "manifold_local_a", "manifold_local_b", "manifold_feats", "manifold_counts", "manifold_next_ids")

    def _check_solver_state(self, arrays, refuse, solver_expected, step_count):
        """The solver's arrays of a snapshot (their sizes agree with each other: `Snapshot.from_bytes`):
        present where a solver keeps state (`solver_expected`; a scene with joints has a solver in
        every topology, and its joints from the first step on: rebuilt later, their anchors would
        be taken at the poses of the moment), complete sets, manifold point counts 0..4, sorted
        impulse keys (matched by binary search), joints of the scene's count and kinds on bodies
        that exist (compiled loops index with them)."""
        cache = [key for key in arrays if key.startswith("solver.cache.")]
        joints = [key for key in arrays if key.startswith("solver.joints.")]
        # a joint's spring, actuator and control are written where the scene has one (`SolverState.arrays`)
        drives = any(spec.get("coordinate") or spec.get("stiffness") or spec.get("damping") or spec.get("armature")
                     or "actuator" in spec
                     for spec in self.scene.joints)
        axes = any(spec["kind"] == SIX_AXIS for spec in self.scene.joints)     # (`SolverState.arrays`)
        if cache or joints:
            for key in [f"solver.cache.{k}" for k in self._CACHE_REQUIRED] + (
                    [f"solver.joints.{f.name}" for f in fields(Joints)
                     if (drives or f.name not in Joints.DRIVE_FIELDS) and (axes or f.name not in Joints.AXES_FIELDS)
                     and f.name != "turned"]        # (written where a hinge has turned over)
                    if joints else []):
                if key not in arrays:
                    refuse(key, "nothing", "an array (the file lacks it)")
        elif solver_expected or self.scene.joints:
            refuse("solver.cache.impulse_keys", "nothing", "the solver's arrays (the file lacks them)")
        if self.scene.joints and step_count > 0 and not joints:
            refuse("solver.joints.kind", "nothing", "the joints, built by the first step (the file lacks them)")
        if cache:
            counts, keys = arrays["solver.cache.manifold_counts"], arrays["solver.cache.impulse_keys"]
            if np.any((counts < 0) | (counts > 4)):
                refuse("solver.cache.manifold_counts", counts[(counts < 0) | (counts > 4)][:3], "0 .. 4 points")
            if np.any(np.diff(keys) < 0):
                refuse("solver.cache.impulse_keys", "keys out of order", "ascending keys")
            if int(arrays["solver.cache.n_shapes"]) < 0:
                refuse("solver.cache.n_shapes", int(arrays["solver.cache.n_shapes"]), ">= 0")
        if "solver.control" in arrays:
            control = arrays["solver.control"]
            if len(control) != len(self.scene.joints):
                refuse("solver.control", f"{len(control)} values", f"one per joint of the scene's {len(self.scene.joints)}")
            if not np.isfinite(control).all():
                refuse("solver.control", control[~np.isfinite(control)][:3], "finite values")
        if joints:
            kind, body, bodies = arrays["solver.joints.kind"], arrays["solver.joints.body"], len(arrays["omega_body"])
            if len(kind) != len(self.scene.joints):
                refuse("solver.joints.kind", f"{len(kind)} joints", f"the scene's {len(self.scene.joints)}")
            known = np.isin(kind, ALL_KINDS)
            if not known.all():
                refuse("solver.joints.kind", kind[~known][:3], f"one of {list(ALL_KINDS)}")
            if np.any((body < -1) | (body >= bodies)):
                refuse("solver.joints.body", body[(body < -1) | (body >= bodies)][:3], f"bodies -1 .. {bodies - 1}")
            scene_kinds = np.array([spec["kind"] for spec in self.scene.joints], np.int64)
            if not np.array_equal(kind, scene_kinds):
                refuse("solver.joints.kind", kind[kind != scene_kinds][:3], f"the scene's kinds {scene_kinds.tolist()[:8]}")
            if "solver.joints.turned" in arrays:        # a hinge's turns (the centre its angle is read about)
                turned = np.asarray(arrays["solver.joints.turned"])
                if turned.shape != kind.shape or turned.dtype != np.float64:
                    refuse("solver.joints.turned", f"{turned.dtype} {turned.shape}", f"float64 ({len(kind)},), one per joint")
                bad = ~(np.abs(turned) <= TURNED_MAX)
                if bad.any():
                    refuse("solver.joints.turned", turned[bad][:3], f"finite values within ±{TURNED_MAX:g} rad")
            if "solver.joints.axis_count" in arrays:    # a six-axis joint's axes (compiled loops index with them)
                count, member = arrays["solver.joints.axis_count"], arrays["solver.joints.member"]
                for name in ("axes", "axis_offset", "axis_load"):
                    values = arrays[f"solver.joints.{name}"]
                    if not np.isfinite(values).all():
                        refuse(f"solver.joints.{name}", values[~np.isfinite(values)][:3], "finite values")
                if np.any((count < 0) | (count > AXES_MAX)):
                    refuse("solver.joints.axis_count", count[(count < 0) | (count > AXES_MAX)][:3], f"0 .. {AXES_MAX}")
                axis = kind == AXIS
                if np.any(axis & ((member < 0) | (member >= count.sum(axis=-1)))):
                    refuse("solver.joints.member", member[axis & ((member < 0) | (member >= count.sum(axis=-1)))][:3],
                           "an axis of its six-axis joint")
