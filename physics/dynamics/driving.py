"""Driving a scene: actuators on nodes, launchers, and the keys a scene binds to them.

Conventions (docs/architecture.md): an actuator's axis is in its node's own frame; a node's local
velocity and ω are in its parent frame; `dR/dt = hat(omega_local) R`; world quantities say so.

**Actuators on nodes** (`[[actuator]]` with `node`, docs/scene-format.md). Each has a control `ctrl`
(the state `DriveState.control`, set by `Simulation.set_control` like a joint's actuator):

- a kinematic node's `velocity` actuator moves it along (`linear`) or about (`angular`) its axis at
  the rate `gear · ctrl` (m/s or rad/s);
- a kinematic node's `position` actuator moves it towards the coordinate `q = gear · ctrl` (m or
  rad from its pose at load, `DriveState.coordinate`) at up to `speed`, arriving in one step when it
  can: rate = clamp((gear · ctrl − q) / dt, −speed, speed);
- a dynamic node's `motor` pushes it with the force (`linear`) or torque (`angular`) `gear · ctrl`
  along its axis, given as the impulse of one step at the step's start (the kick of
  `Simulation.apply_force`, counteraction and all); a torque as a couple of two opposite impulses.

A kinematic node with actuators moves only by them. Its rates make a twist in its own frame,
(v_b, ω_b); held over a step h, that twist moves the node along the screw `T · exp(h [ω_b, v_b])`.
The kinematic stage (physics.dynamics.kinematics) steps a node
with constant parent-frame ω and acceleration a: `exp(h hat(ω)) R`, and T' = T + h (v + a h / 2).
This module gives it, for the step h,

    ω = R ω_b,    a = R (ω_b × v_b),    v = R V(h ω_b) v_b − a h / 2,
    V(φ) = I + (1 − cos θ)/θ² hat(φ) + (θ − sin θ)/θ³ hat(φ)²

(θ = |φ|; V is SE(3)'s left Jacobian, "A micro Lie theory for state estimation in robotics",
Solà et al. 2018, eq. 174): the rotation `exp(h hat(R ω_b)) R = R exp(h hat(ω_b))` and the
displacement `h R V(h ω_b) v_b` both end the step exactly on the screw, so a tank that drives
forward while it steers runs on its circle, not on a polygon that spirals outward by (v h)² / 2r a
step. a is the screw's own acceleration (ω × v, the centripetal one of a turning hull), which its
cargo's reported accelerations inherit, and v is within O(h²) of the screw's tangent at the step's
start (the chord's mean velocity less a h / 2).

**Launchers** (`[[launcher]]`): `launch` puts a dynamic node at another node's origin (a muzzle),
moving as that point moves, plus `speed` along the launcher's axis: v = v_muzzle_world + speed ·
R_muzzle_world axis, ω = ω_muzzle_world. It says how much of v_muzzle_world each moving ancestor
gave (`Launch.parts`): node a moving relative to its parent gives S_parent R_parent_world · v_local_a +
(R_parent_world ω_local_a) × (p_muzzle − p_a), and these sum to v_muzzle_world (the velocity
composition of "The Dynamics of a Transform Hierarchy").

**Keys** (`[[key]]`): `KeyDrive` turns presses, releases and held keys into the inputs a timeline
records ("control", "launch"), so that a drive replays bit for bit.
"""
from dataclasses import dataclass

import numpy as np

from physics.core.compiled import kernel
from physics.math.rotation_kernels import add, cross, dot, load3, load33, matvec as matvec3, mul, store3

VELOCITY, POSITION, MOTOR = 0, 1, 2
# Below this angle h|ω_b| V's factors are their series' first terms (error < θ⁴/720 relative)
_SERIES_ANGLE = 1e-4


def matvec(R, v):
    """R v for (3, 3) R, summed in a fixed order: numpy's `@` goes to BLAS, whose kernels (FMA or
    not, by CPU) round differently, and these products are state (tests/test_determinism.py)."""
    return (R * v).sum(axis=-1)


def matmul(A, B):
    """A B for (3, 3) matrices, in a fixed order (`matvec`)."""
    return (A[:, :, None] * B[None, :, :]).sum(axis=1)
TYPE_CODES = {"velocity": VELOCITY, "position": POSITION, "motor": MOTOR}


@dataclass
class DriveState:
    """The state of a scene's A actuators on nodes: part of `physics.pipeline.data.Data` (snapshots, hashes)."""

    control: np.ndarray      # (A,) each actuator's input ctrl
    coordinate: np.ndarray   # (A,) m or rad moved along its axis since load (a position actuator's q)

    @classmethod
    def start(cls, drives):
        return cls(np.array([float(d["ctrl"]) for d in drives]), np.zeros(len(drives)))


@kernel(inline=True)
def _screw_displacement(phi, v):
    """V(φ) v (module docstring) = v + c₁ φ × v + c₂ φ × (φ × v), c₁ = (1 − cos θ)/θ²,
    c₂ = (θ − sin θ)/θ³, θ = |φ|; below θ = 1e-4 the series' first terms, 1/2 and 1/6."""
    theta2 = dot(phi, phi)
    theta = np.sqrt(theta2)
    if theta < _SERIES_ANGLE:
        first, second = 0.5, 1.0 / 6.0
    else:
        first, second = (1.0 - np.cos(theta)) / theta2, (theta - np.sin(theta)) / (theta2 * theta)
    turned = cross(phi, v)
    return add(v, add(mul(first, turned), mul(second, cross(phi, turned))))


@kernel
def screw_displacements(phi, v, out):
    """out[i] = V(φᵢ) vᵢ for batches (n, 3): `_screw_displacement`, for the tests and any caller."""
    for i in range(phi.shape[0]):
        store3(out, i, _screw_displacement(load3(phi, i), load3(v, i)))


@kernel
def _move_driven(placement, rate, slots, h, kinematic, acceleration, alpha, twist):
    """`Drives.move`'s loop over the driven nodes n: the twist (v_b, ω_b) = Σ_a placement[n, a] ·
    rate[a] (actuators in their order), then ω = R ω_b, a = R (ω_b × v_b), v = R V(h ω_b) v_b − a h/2
    into the kinematic slot `slots[n]` of `kinematic` (physics.pipeline.data.Motion), `acceleration`
    and `alpha`."""
    for n in range(slots.shape[0]):
        k = slots[n]
        v_b = (0.0, 0.0, 0.0)
        w_b = (0.0, 0.0, 0.0)
        for a in range(rate.shape[0]):
            v_b = add(v_b, mul(rate[a], load3(placement[n, a], 0)))
            w_b = add(w_b, mul(rate[a], load3(placement[n, a], 1)))
        store3(twist[n], 0, v_b)
        store3(twist[n], 1, w_b)
        R = load33(kinematic.rotation, k)
        a_world = matvec3(R, cross(w_b, v_b))
        store3(kinematic.omega, k, matvec3(R, w_b))
        store3(kinematic.velocity, k, add(matvec3(R, _screw_displacement(mul(h, w_b), v_b)), mul(-0.5 * h, a_world)))
        store3(acceleration, k, a_world)
        store3(alpha, k, (0.0, 0.0, 0.0))


@kernel
def _report_driven(twist, slots, nodes, rotation, local_acceleration):
    """`Drives.report`'s loop: local_acceleration[nodes[slots[n]]] = R (ω_b × v_b) at the pose now."""
    for n in range(slots.shape[0]):
        R = load33(rotation, slots[n])
        store3(local_acceleration, nodes[slots[n]], matvec3(R, cross(load3(twist[n], 1), load3(twist[n], 0))))


class Drives:
    """A scene's actuators on nodes, as arrays (module docstring): built once per topology. An
    actuator may drive several nodes alike (a tank's road wheels): rows are (actuator, node) pairs."""

    def __init__(self, specs, kinematic_nodes):
        self.specs = tuple(specs)
        self.kind = np.array([TYPE_CODES[d["type"]] for d in specs], np.int64)
        self.angular = np.array(["angular" in d for d in specs], bool)
        self.axis = np.array([d.get("angular", d.get("linear")) for d in specs], float).reshape(-1, 3)
        self.gear = np.array([d["gear"] for d in specs], float)
        self.speed = np.array([d.get("speed", np.inf) for d in specs], float)
        self.kinematic_nodes = np.asarray(kinematic_nodes)
        slot = {int(k): s for s, k in enumerate(kinematic_nodes)}
        by_node = {}
        for a, spec in enumerate(specs):
            for k in spec["nodes"]:
                by_node.setdefault(int(k), []).append(a)
        self.kinematic = [(slot[k], actuators) for k, actuators in sorted(by_node.items()) if k in slot]
        self.motors = [(a, int(k)) for a, spec in enumerate(specs) if spec["type"] == "motor" for k in spec["nodes"]]
        self.slots = np.array([slot for slot, _ in self.kinematic], np.int64)
        # placement[n, a, half]: actuator a's axis where it moves driven node n (half 0 linear, 1 angular)
        self.placement = np.zeros((len(self.kinematic), len(self.specs), 2, 3))
        for n, (_, actuators) in enumerate(self.kinematic):
            for a in actuators:
                self.placement[n, a, int(self.angular[a])] = self.axis[a]
        self.twist = np.zeros((len(self.kinematic), 2, 3))     # each driven node's (v_b, ω_b) this step

    def rates(self, state, dt):
        """(A,) each kinematic actuator's rate over the step (m/s or rad/s; module docstring)."""
        target = self.gear * state.control
        rate = np.where(self.kind == POSITION,
                        np.clip((target - state.coordinate) / dt, -self.speed, self.speed), target)
        rate[self.kind == MOTOR] = 0.0
        return rate

    def report(self, kinematic, local_acceleration):
        """After the kinematic stage: each driven node's local acceleration in the hierarchy is its
        screw's at its pose now, R (ω_b × v_b), so that what reads it (the sleep stage's field, the
        queries, the next sub-step's frame of the cargo) sees the acceleration turn with the node;
        the stage itself keeps the one it stepped with (`before_step`). One compiled loop over the nodes."""
        if self.slots.size:
            _report_driven(self.twist, self.slots, self.kinematic_nodes, kinematic.rotation, local_acceleration)

    def move(self, data, dt):
        """The kinematic nodes' velocities and accelerations for a step of dt from now (module
        docstring), written into `data.kinematic` and `data.kin_acceleration`; -> the rates (A,).
        One compiled loop over the driven nodes (`_move_driven`; as numpy calls it made the tank's
        step over three times slower)."""
        rate = self.rates(data.drive, dt)
        if self.slots.size:
            _move_driven(self.placement, rate, self.slots, float(dt), data.kinematic, data.kin_acceleration,
                         data.kin_alpha, self.twist)
        return rate

    def before_step(self, data, dt, world):
        """Before a step of dt: `move`, and the coordinates advanced by rate · dt; returns the
        motors' impulses [(node, impulse_world (3,), point_world (3,) or None)] for the caller to
        apply, from `world` (every node's world translation and rotation now; only read, and only
        needed, when the scene has motors)."""
        state = data.drive
        state.coordinate += self.move(data, dt) * dt
        impulses = []
        for a, node in self.motors:
            amount = self.gear[a] * state.control[a] * dt
            if amount == 0.0:
                continue
            axis_world = matvec(world.rotation[node], self.axis[a])
            if not self.angular[a]:
                impulses.append((node, amount * axis_world, None))
                continue
            # an angular impulse L as a couple: J = L × u at c + u/2 and −J at c − u/2 (u ⟂ L, |u| = 1)
            # give 2 (u/2) × J = L and no net impulse
            u = np.cross(axis_world, [1.0, 0.0, 0.0] if abs(axis_world[0]) < 0.9 else [0.0, 1.0, 0.0])
            u /= np.linalg.norm(u)
            impulse, centre = np.cross(amount * axis_world, u), world.translation[node]
            impulses += [(node, impulse, centre + u / 2.0), (node, -impulse, centre - u / 2.0)]
        return impulses


@dataclass(frozen=True)
class Launch:
    """What `launch` did: the node's world velocity and ω at launch, the muzzle's world velocity,
    and its parts {node name: m/s (3,)} from each moving ancestor (module docstring); where (the
    muzzle's origin, world) and when (s)."""

    node: str
    velocity_world: np.ndarray
    omega_world: np.ndarray
    muzzle_velocity_world: np.ndarray
    parts: dict
    point_world: np.ndarray
    time: float

    def sentence(self, speed):
        """One line: the launch speed and where it came from."""
        parts = [f"{name} {np.linalg.norm(v):.2f} m/s" for name, v in self.parts.items() if np.linalg.norm(v) > 1e-9]
        # (vectors: their speeds need not add up to the muzzle's, and the sentence says so)
        sum_of = (f", the vector sum of {', '.join(parts[:-1])} and {parts[-1]}" if len(parts) > 1
                  else f", all of it {parts[0]}" if parts else "")
        return (f"{self.node} launched at {np.linalg.norm(self.velocity_world):.2f} m/s: {speed:g} m/s from the "
                f"launcher plus the muzzle's {np.linalg.norm(self.muzzle_velocity_world):.2f} m/s{sum_of}")


def velocity_parts(parent, names, world, local, muzzle):
    """{node name: (3,) m/s}: what each moving ancestor of node `muzzle` (itself included) gives to
    its origin's world velocity (module docstring); they sum to it. `world`, `local`: every node's
    state (translation, rotation, velocity, omega: physics.model.hierarchy.NodeState), current."""
    point = world.translation[muzzle]
    parts = {}
    node = muzzle
    while node >= 0:
        up = int(parent[node])
        R_parent = world.rotation[up] if up >= 0 else np.eye(3)
        scale = world.scale[up] if up >= 0 else 1.0       # x_world = R S x_local + T
        part = scale * matvec(R_parent, local.velocity[node]) + np.cross(matvec(R_parent, local.omega[node]),
                                                                         point - world.translation[node])
        if np.any(part != 0.0):
            parts[names[node]] = part
        node = up
    return parts


def describe(key):
    """A [[key]] table in a few words, for a help list: what holding (or pressing) it does."""
    return _describe(key, key.get("actuator"))


def _describe(key, names):
    if "launch" in key:
        return f"fire {key['launch']}"
    if "rate" in key:
        return f"{names} towards {key['value']:g} at {key['rate']:g}/s while held (stays when let go)"
    return f"{names} {key['value']:g} while held ({key['release']:g} when let go)"


def describe_letters(keys):
    """[(letter, what it does)] of a scene's [[key]]s, a letter once: the actuators one key drives
    alike named together ("throttle, wheels towards 10 at 3/s ...")."""
    out = {}
    for letter in dict.fromkeys(k["key"] for k in keys):
        said = {}
        for k in keys:
            if k["key"] == letter:
                how = tuple((field, k[field]) for field in ("value", "rate", "release", "launch") if field in k)
                said.setdefault(how, (k, []))[1].append(k.get("actuator"))
        out[letter] = "; ".join(_describe(k, ", ".join(filter(None, names))) for k, names in said.values())
    return list(out.items())


class KeyDrive:
    """A scene's [[key]]s as inputs: `press`, `release` and `held` (each step) return the inputs
    ((kind, args), for `physics.pipeline.timeline.Timeline.apply`) that the keys make now; `controls` is
    the simulation's current controls (a ramp starts from where its actuator is)."""

    def __init__(self, keys):
        self.keys = tuple(keys)
        self.down = set()

    @property
    def letters(self):
        """The letters bound, in the scene's order, each once."""
        return list(dict.fromkeys(k["key"] for k in self.keys))

    @property
    def ramping(self):
        """Whether a held key ramps an actuator (its inputs come each step: `held`)."""
        return any("rate" in k for letter in self.down for k in self.bound(letter))

    def bound(self, letter):
        return [k for k in self.keys if k["key"] == letter]

    def press(self, letter, controls):
        self.down.add(letter)
        out = []
        for k in self.bound(letter):
            if "launch" in k:
                out.append(("launch", (k["launch"],)))
            elif "rate" not in k and controls.get(k["actuator"]) != k["value"]:
                out.append(("control", (k["actuator"], k["value"])))
        return out

    def release(self, letter, controls):
        """A held key let go: its actuators back to their release value, or to the value of another
        key still held on the same actuator (A held, D pressed and let go: A steers again)."""
        self.down.discard(letter)
        out = []
        for k in self.bound(letter):
            if "release" not in k:
                continue
            still = [other for held in sorted(self.down) for other in self.bound(held)
                     if other.get("actuator") == k["actuator"] and "release" in other]
            value = still[-1]["value"] if still else k["release"]
            if controls.get(k["actuator"]) != value:
                out.append(("control", (k["actuator"], value)))
        return out

    def held(self, controls, dt):
        """The ramps of the held keys over one step of dt: each moves its actuator towards its value
        by at most rate · dt."""
        out = []
        for letter in sorted(self.down):
            for k in self.bound(letter):
                if "rate" in k:
                    now = controls[k["actuator"]]
                    step = k["rate"] * dt
                    new = min(now + step, k["value"]) if now < k["value"] else max(now - step, k["value"])
                    if new != now:
                        out.append(("control", (k["actuator"], new)))
                        controls = {**controls, k["actuator"]: new}
        return out
