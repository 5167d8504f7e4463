"""MuJoCo as a peer: a scene stepped by MuJoCo from our state, its state read back in our terms.

`MujocoSimulation.from_simulation(sim, integrator)` exports `sim`'s scene (physics.io.mjcf_export:
`to_mjcf`, which refuses what MJCF cannot express), puts MuJoCo at `sim`'s current state and
answers the part of `physics.Simulation`'s interface a `physics.tools.compare.Comparison` reads
(`step`, `time`, `step_count`, `settings.dt`, `world_poses`, `world`, `energy`, `momentum`,
`snapshot` / `restore`, `apply_impulse`, `apply_force`, `state_hash`): a MuJoCo run is one more
kind of variant, measured and drawn as ours are.

Our state to MuJoCo's (docs/architecture.md: quaternions (w, x, y, z), ω in the world frame for a
root body, dR/dt = hat(ω) R; MuJoCo: the same quaternion order, a free joint's qvel = (v_world,
ω_body), a ball joint's ω relative to the parent body in the child's frame, hinge and slide
coordinates counted from the pose at load), per body b with MuJoCo parent p (the world: identity,
at rest) and the body's offset (pos0, Q0) in p at load:
    free:   qpos = (T_b, q_b),                   qvel = (v_b, R_bᵀ ω_b)
    ball:   qpos = quat(Q0ᵀ R_pᵀ R_b),           qvel = R_bᵀ (ω_b − ω_p)
    hinge:  qpos = a · log(Q0ᵀ R_pᵀ R_b),        qvel = (R_b a) · (ω_b − ω_p)          (a: axis in b's frame)
    slide:  qpos = a · (Q0ᵀ (R_pᵀ (T_b − T_p) − pos0)),  qvel = (R_b a) · (v_b − v_p − ω_p × (T_b − T_p))
    a six_axis joint's several joints: by Newton on MuJoCo's own kinematics (`_set_axes`)
A state whose joints have drifted (ours are constraint rows, MuJoCo's are coordinates) is projected
onto MuJoCo's joint manifold by these formulas. Back: world poses `xpos`, `xmat`, velocities by
`mj_objectVelocity` (world axes, at the body origin = its centre of mass), recomputed after every
step (`_settle`: mj_step leaves them at the step's start); every other node rides
its body with the pose it had relative to it at load (fixed children) or stays where it was
(static nodes). Energy and momentum use our formulas (physics.pipeline.simulation.Simulation.energy,
.momentum) on that state: ½ m v² + ½ ω_bᵀ I ω_b, −m g · x; L = Σ x × m v + R I ω_b.

MuJoCo is an optional extra (`pip install -e '.[peers]'`): without it `require()` raises
`MujocoMissing`, a one-line message saying how to install it.
"""
import hashlib
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from physics.math import rotation
from physics.io.mjcf_export import MUJOCO_INTEGRATORS, plan, to_mjcf

INSTALL = "pip install -e '.[peers]'"
DEFAULT_INTEGRATOR = "rk4"
ENGINE_KEYS = ("dt", "substeps", "gravity")    # our settings a MuJoCo run takes (the rest are our engine's)


class MujocoMissing(ValueError):
    """The optional mujoco package is not installed (a ValueError: bad input for a command line)."""

    def __init__(self):
        super().__init__(f"MuJoCo is not installed: {INSTALL}")


def available():
    """Whether the mujoco package can be imported."""
    try:
        require()
    except MujocoMissing:
        return False
    return True


def require():
    """The mujoco module, or MujocoMissing (how to install it)."""
    try:
        import mujoco       # here: an optional extra, named when missing
    except ImportError:
        raise MujocoMissing() from None
    return mujoco


@dataclass
class PeerSnapshot:
    """A MuJoCo run's full integration state (mj_getState, mjSTATE_INTEGRATION) and its step count."""

    state: np.ndarray
    step_count: int

    @property
    def nbytes(self):
        return self.state.nbytes


def _quaternion(matrix):
    return rotation.quaternion_from_matrix(matrix)


class MujocoSimulation:
    """A scene stepped by MuJoCo (module docstring). `settings`: our Settings (dt, substeps, gravity
    are MuJoCo's too); `integrator`: one of MUJOCO_INTEGRATORS."""

    engine = "mujoco"

    def __init__(self, scene, settings, integrator=DEFAULT_INTEGRATOR, contacts=True):
        mujoco = require()
        self._mj = mujoco
        self.scene, self.settings, self.integrator = scene, settings.copy(), integrator
        self.plan = plan(scene)
        self.xml = to_mjcf(scene, integrator=integrator, contacts=contacts, settings=self.settings)
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        self.names, self.parent, self.motion = scene.names, scene.parent.copy(), np.asarray(scene.motion)
        self.mass, self.inertia_body = scene.mass.copy(), scene.inertia_body.copy()
        n = len(self.names)
        self.dyn = np.array(sorted(self.plan.bodies), dtype=np.int64)
        body_id = {i: mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, self.names[i]) for i in self.dyn}
        self._body_id = np.array([body_id[i] for i in self.dyn], dtype=np.int64)
        self._slot = {int(i): k for k, i in enumerate(self.dyn)}
        # every node relative to the body that carries it (its owner), from the poses at load
        p = self.plan
        self._owner = np.array([-1 if o is None or o < 0 else o for o in p.owner], dtype=np.int64)
        self._rel_t, self._rel_r = np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1))
        for i in range(n):
            o = self._owner[i]
            if o >= 0:
                self._rel_t[i] = p.rotation[o].T @ (p.translation[i] - p.translation[o])
                self._rel_r[i] = p.rotation[o].T @ p.rotation[i]
        self._static_t, self._static_r, self.scale = p.translation.copy(), p.rotation.copy(), p.scale.copy()
        self.step_count, self.halted = 0, None
        self._warnings = 0

    # --- our state in, MuJoCo's out ---------------------------------------------------------------
    @classmethod
    def from_simulation(cls, sim, integrator=DEFAULT_INTEGRATOR, contacts=True):
        """A MuJoCo run of `sim`'s scene and settings, at `sim`'s current state and time."""
        peer = cls(sim.scene, sim.settings, integrator, contacts)
        world = sim.world()
        translation, rot, _ = sim.world_poses()
        peer.set_state(translation, rot, world.velocity, rotation.vee(world.angular_velocity))
        peer.data.time = sim.time
        peer.step_count = sim.step_count
        for name, value in sim.controls.items():    # the controls are state too (a servo's pose at load)
            try:
                peer.set_control(name, value)
            except ValueError:      # an actuator MJCF cannot express: the run has none to set
                pass
        return peer

    def set_state(self, translation, rot, velocity, omega):
        """qpos, qvel from world poses and velocities of every node (N, ...) (module docstring)."""
        mj, m, d, p = self._mj, self.model, self.data, self.plan
        identity = np.eye(3)
        for i in p.bodies:
            spec, parent = p.joint[i], p.body_parent[i]
            if spec is not None and spec["type"] == "fixed":
                continue
            if spec is not None and spec["type"] == "six_axis":
                self._set_axes(i, translation[i], rot[i], velocity[i], omega[i])
                continue
            jid = mj.mj_name2id(m, mj.mjtObj.mjOBJ_JOINT, self.names[i])
            qa, va = m.jnt_qposadr[jid], m.jnt_dofadr[jid]
            t_b, r_b, v_b, w_b = translation[i], rot[i], velocity[i], omega[i]
            if spec is None:
                d.qpos[qa:qa + 3], d.qpos[qa + 3:qa + 7] = t_b, _quaternion(r_b)
                d.qvel[va:va + 3], d.qvel[va + 3:va + 6] = v_b, r_b.T @ w_b
                continue
            if parent >= 0:
                t_p, r_p, v_p, w_p = translation[parent], rot[parent], velocity[parent], omega[parent]
            else:
                t_p, r_p, v_p, w_p = np.zeros(3), identity, np.zeros(3), np.zeros(3)
            bid = mj.mj_name2id(m, mj.mjtObj.mjOBJ_BODY, self.names[i])
            pos0, q0 = m.body_pos[bid], rotation.matrix_from_quaternion(m.body_quat[bid])
            relative = q0.T @ r_p.T @ r_b
            axis = m.jnt_axis[jid]
            kind = m.jnt_type[jid]
            if kind == mj.mjtJoint.mjJNT_BALL:
                d.qpos[qa:qa + 4] = _quaternion(relative)
                d.qvel[va:va + 3] = r_b.T @ (w_b - w_p)
            elif kind == mj.mjtJoint.mjJNT_HINGE:     # qpos0 = ref: the coordinate at the written pose
                d.qpos[qa] = m.qpos0[qa] + axis @ rotation.rotvec_from_matrix(relative)
                d.qvel[va] = (r_b @ axis) @ (w_b - w_p)
            else:  # slide
                d.qpos[qa] = m.qpos0[qa] + axis @ (q0.T @ (r_p.T @ (t_b - t_p) - pos0))
                d.qvel[va] = (r_b @ axis) @ (v_b - v_p - np.cross(w_p, t_b - t_p))
        mj.mj_forward(m, d)

    def _set_axes(self, i, t_b, r_b, v_b, w_b, iterations=30, tolerance=1e-13):
        """The qpos and qvel of body i's several joints (a six_axis joint: MuJoCo's joints of one body)
        that put it at world pose (t_b, r_b) moving at (v_b, w_b), its ancestors' already set: Newton on
        MuJoCo's own kinematics (the body's position and rotation error against `mj_jacBody`'s columns
        of its joints, least squares), then its joints' rates from the same columns, J q̇ = (v, ω) less
        what the ancestors' rates give it."""
        mj, m, d = self._mj, self.model, self.data
        bid = mj.mj_name2id(m, mj.mjtObj.mjOBJ_BODY, self.names[i])
        joints = range(m.body_jntadr[bid], m.body_jntadr[bid] + m.body_jntnum[bid])
        qa, va = [int(m.jnt_qposadr[j]) for j in joints], [int(m.jnt_dofadr[j]) for j in joints]
        jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        for _ in range(iterations):
            mj.mj_kinematics(m, d)
            mj.mj_comPos(m, d)      # (the Jacobians' joint axes)
            error = np.concatenate([t_b - d.xpos[bid], rotation.rotvec_from_matrix(r_b @ d.xmat[bid].reshape(3, 3).T)])
            mj.mj_jacBody(m, d, jacp, jacr, bid)
            J = np.concatenate([jacp, jacr])
            if np.abs(error).max() <= tolerance:
                break
            d.qpos[qa] += np.linalg.lstsq(J[:, va], error, rcond=None)[0]
        d.qvel[va] = 0.0
        inherited = J @ d.qvel
        d.qvel[va] = np.linalg.lstsq(J[:, va], np.concatenate([v_b, w_b]) - inherited, rcond=None)[0]

    def _bodies(self):
        """World translation, rotation, velocity, angular velocity (B, ...) of the dynamic nodes."""
        d, ids = self.data, self._body_id
        velocity, omega = np.zeros((len(ids), 3)), np.zeros((len(ids), 3))
        spatial = np.zeros(6)
        for k, bid in enumerate(ids):
            self._mj.mj_objectVelocity(self.model, d, self._mj.mjtObj.mjOBJ_BODY, int(bid), spatial, 0)
            omega[k], velocity[k] = spatial[:3], spatial[3:]
        return d.xpos[ids].copy(), d.xmat[ids].reshape(-1, 3, 3).copy(), velocity, omega

    def world_poses(self):
        """(translation (N, 3), rotation (N, 3, 3), scale (N,)) world, as Simulation.world_poses."""
        t_b, r_b, _, _ = self._bodies()
        translation, rot = self._static_t.copy(), self._static_r.copy()
        carried = np.flatnonzero(self._owner >= 0)
        slots = np.array([self._slot[int(o)] for o in self._owner[carried]], dtype=np.int64)
        translation[carried] = t_b[slots] + np.einsum("nij,nj->ni", r_b[slots], self._rel_t[carried])
        rot[carried] = r_b[slots] @ self._rel_r[carried]
        return translation, rot, self.scale.copy()

    def world(self):
        """World poses and velocities of every node (velocity, angular_velocity (N, 3) world axes;
        a carried node moves with its body: v = v_b + ω_b × (x − x_b))."""
        t_b, r_b, v_b, w_b = self._bodies()
        translation, rot, scale = self.world_poses()
        velocity, omega = np.zeros_like(translation), np.zeros_like(translation)
        carried = np.flatnonzero(self._owner >= 0)
        slots = np.array([self._slot[int(o)] for o in self._owner[carried]], dtype=np.int64)
        omega[carried] = w_b[slots]
        velocity[carried] = v_b[slots] + np.cross(w_b[slots], translation[carried] - t_b[slots])
        return SimpleNamespace(translation=translation, rotation=rot, scale=scale, velocity=velocity,
                               angular_velocity=omega)

    def _omega_body(self, r_b, w_b):
        return np.einsum("nji,nj->ni", r_b, w_b)

    def energy(self):
        """dict kinetic, potential (J): ½ m v² + ½ ω_bᵀ I ω_b, −m g · x (Simulation.energy)."""
        t_b, r_b, v_b, w_b = self._bodies()
        mass, inertia = self.mass[self.dyn], self.inertia_body[self.dyn]
        kinetic = 0.5 * (mass @ np.einsum("bi,bi->b", v_b, v_b) + np.sum(inertia * self._omega_body(r_b, w_b) ** 2))
        potential = -mass @ (t_b @ self.settings.gravity)
        return {"kinetic": float(kinetic), "potential": float(potential)}

    def momentum(self):
        """dict linear, angular (about the world origin): Σ m v, Σ x × m v + R I ω_b (Simulation.momentum)."""
        t_b, r_b, v_b, w_b = self._bodies()
        p = self.mass[self.dyn][:, None] * v_b
        spin = np.einsum("nij,nj->ni", r_b, self.inertia_body[self.dyn] * self._omega_body(r_b, w_b))
        return {"linear": p.sum(axis=0), "angular": (np.cross(t_b, p) + spin).sum(axis=0)}

    # --- stepping -----------------------------------------------------------------------------------
    @property
    def time(self):
        return float(self.data.time)

    def step(self, n=1):
        """n steps of settings.dt, each `substeps` MuJoCo steps of dt / substeps. A state that goes
        non-finite, or that MuJoCo resets (its bad-acceleration warning), halts the run (`halted`)."""
        mj, m, d = self._mj, self.model, self.data
        for _ in range(int(n)):
            if self.halted is not None:
                return
            for _ in range(self.settings.substeps):
                mj.mj_step(m, d)
            self._settle()
            self.step_count += 1
            warnings = int(d.warning[mj.mjtWarning.mjWARN_BADQACC].number)
            if warnings > self._warnings or not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))):
                self._warnings = warnings
                self.halted = f"MuJoCo's state went non-finite in step {self.step_count} (t = {d.time:.6g} s)"

    def _settle(self):
        """Poses and velocities of the current qpos, qvel. mj_step computes them at the start of a
        step (then integrates): read after it, xpos and cvel are a step, or an RK4 stage, behind
        qpos (a lag that makes Euler read as zeroth order and RK4 as third). Positions and
        velocities only, no accelerations: the next step's warm start is left as mj_step left it."""
        mj, m, d = self._mj, self.model, self.data
        mj.mj_kinematics(m, d)
        mj.mj_comPos(m, d)
        mj.mj_comVel(m, d)

    def first_non_finite(self):
        """The first dynamic node whose MuJoCo pose or velocity is not finite, or None."""
        t_b, _, v_b, w_b = self._bodies()
        bad = ~np.all(np.isfinite(np.hstack([t_b, v_b, w_b])), axis=1)
        return self.names[self.dyn[int(np.argmax(bad))]] if bad.any() else None

    def snapshot(self):
        size = self._mj.mj_stateSize(self.model, self._mj.mjtState.mjSTATE_INTEGRATION)
        state = np.empty(size)
        self._mj.mj_getState(self.model, self.data, state, self._mj.mjtState.mjSTATE_INTEGRATION)
        return PeerSnapshot(state, self.step_count)

    def restore(self, snapshot):
        if not isinstance(snapshot, PeerSnapshot):
            raise ValueError("restore: a MuJoCo run restores only its own snapshots")
        self._mj.mj_setState(self.model, self.data, snapshot.state, self._mj.mjtState.mjSTATE_INTEGRATION)
        self._settle()
        self.step_count = snapshot.step_count
        self.halted = None

    def state_hash(self):
        """64 hex digits: SHA-256 of MuJoCo's integration state and the step count."""
        snap = self.snapshot()
        return hashlib.sha256(snap.state.tobytes() + snap.step_count.to_bytes(8, "little")).hexdigest()

    # --- inputs (a user's pushes reach the MuJoCo run as ours) ---------------------------------------
    def _resolve(self, node):
        index = self.names.index(node) if isinstance(node, str) else int(node)
        body = self._owner[index]
        if body < 0:
            raise ValueError(f"node {self.names[index]!r} is not on a dynamic body")
        return int(self._body_id[self._slot[int(body)]])

    def apply_impulse(self, node, impulse_world, point_world=None):
        """Δqvel = M⁻¹ Jᵀ J_imp: the impulse at the point (the body's centre if None) through MuJoCo's
        mass matrix, so a jointed body takes it as the whole tree does. Bodies below it in our
        hierarchy are their own MuJoCo bodies and keep their world motion: counteraction on (the
        scene's default; with it off ours would hand the change to those in no joint)."""
        mj, m, d = self._mj, self.model, self.data
        bid = self._resolve(node)
        point = d.xpos[bid] if point_world is None else np.asarray(point_world, float)
        jacp = np.zeros((3, m.nv))
        mj.mj_jac(m, d, jacp, None, point, bid)
        generalized = jacp.T @ np.asarray(impulse_world, float)
        change = np.zeros(m.nv)
        mj.mj_solveM(m, d, change.reshape(1, -1), generalized.reshape(1, -1))
        d.qvel[:] += change
        self._settle()

    def apply_force(self, node, force_world, point_world=None):
        """A world force F (N) for the coming step, given as the impulse F dt now, as ours
        (Simulation.apply_force: the kick of a kick-drift splitting)."""
        self.apply_impulse(node, np.asarray(force_world, float) * self.settings.dt, point_world)

    def set_control(self, name, value):
        """An actuator's input, to MuJoCo's actuator of the same name (physics.io.mjcf_export writes each
        joint actuator and each motor on a body under its name): ValueError for one it lacks."""
        ids = [i for i in range(self.model.nu) if self._mj.mj_id2name(self.model, self._mj.mjtObj.mjOBJ_ACTUATOR, i)
               in (name,) or str(self._mj.mj_id2name(self.model, self._mj.mjtObj.mjOBJ_ACTUATOR, i)).startswith(name + ":")]
        if not ids:
            raise ValueError(f"set_control: the MuJoCo run has no actuator {name!r} (what MJCF could not express is "
                             "left out of it)")
        self.data.ctrl[ids] = float(value)

    def launch(self, name):
        """A launch teleports a body: MuJoCo's run has no counterpart, and halts (said in the app)."""
        self.halted = f"launch {name!r} has no MuJoCo counterpart"

    def reparent(self, node, new_parent, keep="world"):
        """Our hierarchy is a choice of coordinates MuJoCo does not have: keeping the world motion
        changes nothing here; keeping the local state would, and halts the MuJoCo run."""
        if keep != "world":
            self.halted = "a reparent keeping the local state has no MuJoCo counterpart"


def integrator_label(integrator):
    """'MuJoCo (RK4)': how the app names a MuJoCo run."""
    return f"MuJoCo ({MUJOCO_INTEGRATORS[integrator]})"


def check_integrator(value):
    if value not in MUJOCO_INTEGRATORS:
        raise ValueError(f"integrator: got {value!r}; with engine=mujoco one of {', '.join(MUJOCO_INTEGRATORS)}")
    return value
