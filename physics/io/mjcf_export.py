"""A scene as MuJoCo's MJCF: `to_mjcf(scene) -> str`, the same bodies, shapes and joints.

What maps exactly (docs/scene-format.md; MuJoCo's XML reference):
- A dynamic node is a `<body>` whose frame is the node's world frame at load, with
  `<inertial pos="0 0 0" mass=m diaginertia=I>`: our bodies have the centre of mass at the node
  origin and principal moments along the node axes, so nothing is rotated or shifted. Geoms carry
  no mass (`inertiafromgeom="false"`): the inertia is the scene's, whatever the shapes.
- Its shape, and the shapes of its fixed descendants (fixed children of a dynamic body are part
  of it), are its geoms, placed relative to the body's frame; fixed nodes with no moving ancestor
  are geoms of `<worldbody>`. Lengths are multiplied by the node's world scale.
- Shapes: box (`size` = half extents), sphere, capsule and cylinder (`size` = radius, half the
  cylindrical height; our axis is the node's y, MuJoCo's the geom's z: the geom is turned by
  -90° about x, which takes z to y), plane (MuJoCo's plane is z = 0 of its frame with the solid
  below: its frame is put at `offset · normal` with z along the normal), hull (a `<mesh>` asset of
  its vertices times the scale, which MuJoCo collides as their convex hull, and a geom of type
  mesh in the node's frame; MuJoCo re-centres the mesh and moves the geom's frame to match).
- Joints become MuJoCo's tree: the body `b` of a ball, hinge or slider joint is a child of the
  body of `a` (the world when `a` is absent, static or kinematic: our joints then hold the anchor
  where it was at load), with `<joint type="ball|hinge|slide">` at the anchor and along the axis,
  both in `b`'s frame. A six_axis joint is its axes as MuJoCo's joints of `b`, in order (its
  hinges' chart is MuJoCo's where they load at their refs). A fixed joint makes `b` a child body
  with no joint (welded to `a`'s body, keeping its own inertial). A dynamic body
  in no joint is a `<freejoint>` child of the world (a loose child of a moving body moves in the
  world as it does in its parent's frame: the hierarchy is our choice of coordinates). Joint
  angles count from the pose at load in both (MuJoCo's qpos0), so hinge and slider limits carry
  over as `range`.
- `<option>`: timestep dt / substeps (our integration step), gravity (world frame, y up: MuJoCo
  takes any gravity vector), the integrator asked for; MuJoCo adds nothing by default (no joint
  damping, armature, friction loss, air density or viscosity). With `contacts=False`, or a scene
  in which no two shapes may touch, `<flag contact="disable"/>`.
- Joint terms and actuators: a hinge's or slider's `coordinate` is MuJoCo's `ref`, its `damping`,
  `stiffness`, `spring_reference` and `armature` MuJoCo's joint attributes, and each [[actuator]] a
  `<general>` with its fixed gain, affine bias, gear and ranges (exactly the scene's numbers).
- Contacts: a shape with the default `group` and `mask` writes its own `contype` and `conaffinity`;
  any other writes its group as contype and its mask as conaffinity (0 for group 0). MuJoCo pairs
  two geoms when `contype_a & conaffinity_b` *or* `contype_b & conaffinity_a`; our filter asks for
  that and Bullet's rule on group and mask: the two agree unless a scene mixes them asymmetrically,
  which is named in what is left out. MuJoCo's own parent filter, which knows only its tree, is
  switched off (`filterparent="disable"`). Friction is the sliding coefficient alone (condim 3).
  Two bodies with a pair of shapes that may touch but have different frictions (MuJoCo would take
  max(μa, μb), we take sqrt(μa μb)), or with a pair that may not (a node's shape and its parent's,
  unless `collide_with_parent`; a joint's two nodes, unless `collide_connected`: MuJoCo excludes
  only whole bodies) are `<exclude>`d and get one
  explicit `<pair>` per pair of their shapes that may touch, with friction sqrt(μa μb). MuJoCo's
  contacts are soft (solref, solimp) where ours are rigid rows: a contact scene in MuJoCo is the
  peer's model of the same scene, not ours.

What MJCF cannot say, and is reported (never dropped silently): kinematic nodes that move (a
prescribed motion, or one moved by actuators on nodes), launchers, distance and rope joints, a body that is `b` of two joints or a loop of
joints, joint motors, timed events, applied forces and torques, restitution, a group/mask pair
the OR rule would read differently, sleeping. `to_mjcf(scene)` raises `UnsupportedScene` naming
every one; `to_mjcf(scene, left_out=[])` writes what it can (a moving kinematic node as static at
its pose at load, the rest left out), appends one sentence per omission to the list and repeats
them in a comment at the top of the XML. The actuators' controls (a joint actuator's `ctrl` at load
among them) are the run's state, not the model's: MuJoCo's data starts them at 0, and
`physics.tools.mujoco_peer.MujocoSimulation.from_simulation` sets them from the run.
"""
import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from dataclasses import dataclass, field

import numpy as np

from physics.io.scene import Scene, load_scene
from physics.math import rotation

MUJOCO_INTEGRATORS = {"euler": "Euler", "rk4": "RK4", "implicit": "implicit", "implicitfast": "implicitfast"}
# Our capsule and cylinder axis (y) from MuJoCo's (z): a -90° turn about x takes z to y.
Z_TO_Y = np.array([math.sqrt(0.5), -math.sqrt(0.5), 0.0, 0.0])
WORLD = -1


class UnsupportedScene(ValueError):
    """A scene MJCF cannot express as it is; `left_out` lists every reason, one sentence each."""

    def __init__(self, path, left_out):
        self.path, self.left_out = str(path), list(left_out)
        super().__init__(f"{self.path}: MuJoCo cannot express this scene as it is: " + "; ".join(self.left_out))


@dataclass
class Plan:
    """How a scene maps onto MuJoCo's tree, shared by the exporter and physics.tools.mujoco_peer.

    `bodies`: the dynamic nodes in tree order (a body after its MuJoCo parent); `body_parent`:
    node -> its MuJoCo parent's node (WORLD for the world body); `joint`: node -> the scene's
    joint dict that joins it to its parent (None: a free body; a dict of type "fixed": welded);
    `owner`: node -> the dynamic node whose body carries its shape (WORLD: static, None: none);
    `translation`, `quaternion`, `rotation`, `scale`: world poses at load (N, ...)."""

    bodies: list
    body_parent: dict
    joint: dict
    owner: list
    translation: np.ndarray
    quaternion: np.ndarray
    rotation: np.ndarray
    scale: np.ndarray
    left_out: list = field(default_factory=list)
    excludes: list = field(default_factory=list)   # (body a, body b): MuJoCo does not pair them by itself (WORLD: the world)
    pairs: list = field(default_factory=list)      # ((node i, node j), friction): explicit geom pairs


def world_poses(scene):
    """World translation (N, 3), quaternion (N, 4), rotation (N, 3, 3), scale (N,) at load:
    x_world = R_p S_p x_local + T_p composed from the root (parents precede children)."""
    n = len(scene.names)
    translation, quaternion, scale = np.zeros((n, 3)), np.zeros((n, 4)), np.zeros(n)
    for i in range(n):
        p = scene.parent[i]
        q = scene.rotation[i] / np.linalg.norm(scene.rotation[i])
        if p < 0:
            translation[i], quaternion[i], scale[i] = scene.translation[i], q, scene.scale[i]
        else:
            translation[i] = translation[p] + scale[p] * rotation.rotate(quaternion[p], scene.translation[i])
            quaternion[i] = rotation.multiply(quaternion[p], q)
            scale[i] = scale[p] * scene.scale[i]
    return translation, quaternion, rotation.matrix_from_quaternion(quaternion), scale


def _moves(scene, i):
    return bool(np.any(scene.velocity[i]) or np.any(scene.angular_velocity[i])
                or np.any(scene.acceleration[i]) or np.any(scene.angular_acceleration[i]))


def plan(scene):
    """The `Plan` of `scene`; every omission in `plan.left_out` (module docstring)."""
    names, motion, n = scene.names, np.asarray(scene.motion), len(scene.names)
    left_out = []
    translation, quaternion, rot, scale = world_poses(scene)
    actuated = {int(k) for spec in scene.drives for k in spec["nodes"]}
    driven = [names[i] for i in range(n) if motion[i] == "kinematic" and (_moves(scene, i) or i in actuated)]
    if driven:
        shown = ", ".join(repr(name) for name in driven[:8]) + (f" and {len(driven) - 8} more" if len(driven) > 8 else "")
        left_out.append(f"kinematic nodes with a prescribed motion: {shown} (MJCF has no prescribed motion; "
                        "exported as static at their poses at load)")
    if scene.launchers:
        left_out.append(f"launchers: {', '.join(repr(spec['name']) for spec in scene.launchers)} (MJCF has no launch; "
                        "left out)")
    # owner: the nearest dynamic node at or above each node (a kinematic one stops the climb: static in MJCF)
    owner = [None] * n
    for i in range(n):
        if motion[i] == "dynamic":
            owner[i] = i
        elif motion[i] == "kinematic":
            owner[i] = WORLD
        else:
            p = scene.parent[i]
            owner[i] = WORLD if p < 0 else owner[p]

    def body_of(node):
        return WORLD if node < 0 else owner[node]

    body_parent, joint = {}, {}
    number = 0      # the [[joint]] table's (a six_axis joint's axes are entries of its own table)
    for k, spec in enumerate(scene.joints):
        kind, b = spec["type"], spec["b"]
        if "group" in spec:     # an axis of a six_axis joint: written with it
            continue
        number += 1
        label = f"[[joint]] #{number} ({kind}, b = {names[b]!r})"
        if kind in ("distance", "rope"):
            left_out.append(f"{label}: MJCF has no {kind} joint between two bodies (only soft equality "
                            "constraints and tendons)")
            continue
        hinges = [axis for axis in scene.joints if axis.get("group") == k and axis["type"] == "hinge"]
        charted = any(axis.get(key) is not None and axis.get(key) != 0.0 for axis in hinges
                      for key in ("lower", "upper", "stiffness", "damping", "armature", "actuator"))
        if len(hinges) > 1 and charted and any((axis.get("coordinate") or 0.0) != (axis.get("ref") or 0.0) for axis in hinges):
            left_out.append(f"{label}: its hinges' chart (MuJoCo's is zero at the written pose, ours at each ref, "
                            "where these hinges are not: the motion is the same, the coordinates its limits, "
                            "springs, dampers and actuators act on are not)")
        if spec.get("motor_force"):
            left_out.append(f"{label}: its motor (MuJoCo's velocity actuator is a damper, not our rigid motor)")
        if b in body_parent:
            left_out.append(f"{label}: {names[b]!r} is already b of another joint (a loop of joints: MuJoCo's "
                            "tree needs soft equality constraints for it)")
            continue
        parent = body_of(spec["a"])
        up = parent
        while up >= 0 and up != b:
            up = body_parent.get(up, WORLD)
        if up == b:
            left_out.append(f"{label}: closes a loop of joints (MuJoCo's tree cannot)")
            continue
        body_parent[b], joint[b] = parent, spec
    for i in range(n):
        if motion[i] == "dynamic" and i not in body_parent:
            body_parent[i], joint[i] = WORLD, None
    # tree order: depth first from the world, children in node order
    children = {}
    for i in sorted(body_parent):
        children.setdefault(body_parent[i], []).append(i)
    bodies, stack = [], list(reversed(children.get(WORLD, [])))
    while stack:
        i = stack.pop()
        bodies.append(i)
        stack.extend(reversed(children.get(i, [])))
    for event in scene.events:
        left_out.append(f"event at t = {event.time:g} s on {names[event.node]!r} (MJCF has no timed impulses)")
    for i in range(n):
        if np.any(scene.applied_force[i]) or np.any(scene.applied_torque[i]):
            left_out.append(f"node {names[i]!r}: applied force or torque (MJCF has no constant applied wrench)")
    if scene.world.get("sleep"):
        left_out.append("[world] sleep = true (bodies at rest ride their parent: MuJoCo steps every body)")
    result = Plan(bodies, body_parent, joint, owner, translation, quaternion, rot, scale, left_out)
    _contacts(scene, result)
    return result


def _axial(p, i, spec, name, kind, anchor, actuators):
    """The attributes of MuJoCo's hinge or slide `name` on body i for the joint (or six_axis axis)
    `spec`, its actuator added to `actuators`. The joint's coordinate as loaded is MuJoCo's ref (qpos
    at the written pose); the spring, damper and armature are MuJoCo's own joint terms."""
    attributes = {"name": name, "type": kind, "pos": _text(p.rotation[i].T @ (np.asarray(anchor, float) - p.translation[i])),
                  "axis": _text(p.rotation[i].T @ np.asarray(spec["axis"], float))}
    if spec.get("lower") is not None or spec.get("upper") is not None:
        lower = spec["lower"] if spec.get("lower") is not None else -1e10
        upper = spec["upper"] if spec.get("upper") is not None else 1e10
        attributes["range"] = _text([lower, upper])
    for key, attribute in (("coordinate", "ref"), ("damping", "damping"), ("stiffness", "stiffness"),
                           ("spring_reference", "springref"), ("armature", "armature"), ("friction", "frictionloss")):
        if spec.get(key):
            attributes[attribute] = repr(float(spec[key]))
    if "actuator" in spec:
        actuators.append((name, spec["actuator"]))
    return attributes


def _collides(a, b):
    """Our filter on two `_filter` tuples: Bullet's rule (group_a & mask_b and group_b & mask_a both
    non-zero) and MuJoCo's (contype_a & conaffinity_b or contype_b & conaffinity_a non-zero)."""
    return bool(a[0] & b[1]) and bool(b[0] & a[1]) and bool((a[2] & b[3]) | (b[2] & a[3]))


def _mujoco_bits(f):
    """(contype, conaffinity) written for a `_filter` tuple: the shape's own MuJoCo bits when its
    group and mask are the defaults, else the group and mask (group 0 meets nothing)."""
    if f[:2] == (1, -1):
        return f[2], f[3]
    return f[0], f[1] if f[0] else 0


def _contacts(scene, p):
    """Which shapes may touch, in MuJoCo's terms: `p.excludes` (body pairs MuJoCo must not pair
    by itself) and `p.pairs` (explicit geom pairs with their friction sqrt(μa μb)); restitution
    and group/mask values MuJoCo's rule reads differently go to `p.left_out`.

    A pair of bodies gets explicit pairs, and is excluded, when one of its pairs of shapes that may
    touch has different frictions (MuJoCo would mix them by max) or when one of its pairs may not
    touch though the filters allow it (a node and its parent, a joint's two nodes: MuJoCo excludes
    only whole bodies)."""
    names = scene.names
    shaped = [i for i, s in enumerate(scene.shapes) if s is not None and p.owner[i] is not None]
    filters = {_filter(scene, i) for i in shaped}
    for a in filters:
        for b in filters:
            (ta, aa), (tb, ab) = _mujoco_bits(a), _mujoco_bits(b)
            if _collides(a, b) != bool((ta & ab) | (tb & aa)):
                p.left_out.append(f"collision filter group {a[0]}/mask {a[1]}/contype {a[2]}/conaffinity {a[3]} "
                                  f"against group {b[0]}/mask {b[1]}/contype {b[2]}/conaffinity {b[3]}: MuJoCo "
                                  "pairs two geoms if either's contype meets the other's conaffinity, Bullet's "
                                  "rule only if both groups meet the other's mask")
    moving = [i for i in shaped if p.owner[i] >= 0]
    if not moving:
        return
    for i in moving:
        if scene.restitution is not None and scene.restitution[i] > 0:
            p.left_out.append(f"node {names[i]!r}: restitution {scene.restitution[i]:g} (MuJoCo's contacts have none)")
    body = np.array([p.owner[i] for i in shaped])                       # WORLD for static shapes
    bits = np.array([_filter(scene, i) for i in shaped], np.int64).reshape(-1, 4)
    group, mask, contype, conaffinity = bits.T
    friction = np.array([scene.friction[i] if scene.friction is not None else 0.6 for i in shaped])
    rows = np.array([k for k, i in enumerate(shaped) if p.owner[i] >= 0])
    # may touch by the filters alone (MuJoCo's rule agrees, checked above), on different bodies
    filtered = ((group[rows, None] & mask[None, :]) != 0) & ((group[None, :] & mask[rows, None]) != 0) \
        & (((contype[rows, None] & conaffinity[None, :]) | (contype[None, :] & conaffinity[rows, None])) != 0) \
        & (body[rows, None] != body[None, :])
    # a node's shape and its parent's never touch unless collide_with_parent
    parent_pair = np.zeros_like(filtered)
    where = {i: k for k, i in enumerate(shaped)}
    row_of = {k: r for r, k in enumerate(rows)}
    for k, i in enumerate(shaped):
        parent = scene.parent[i]
        if parent in where and not scene.shapes[i].get("collide_with_parent", False):
            a, b = k, where[parent]
            for x, y in ((a, b), (b, a)):
                if x in row_of:
                    parent_pair[row_of[x], y] = True
    # nor the two nodes of a joint unless it says collide_connected (`physics.constraints.solver`)
    for joint in scene.joints:
        a, b = joint["a"], joint["b"]
        if a in where and b in where and not joint.get("collide_connected"):
            for x, y in ((where[a], where[b]), (where[b], where[a])):
                if x in row_of:
                    parent_pair[row_of[x], y] = True
    touch = filtered & ~parent_pair
    special = (filtered & parent_pair) | (touch & (friction[rows, None] != friction[None, :]))
    bodies = {tuple(sorted((int(body[rows[r]]), int(body[c])))) for r, c in zip(*np.nonzero(special))}
    pairs, row_at, column_at = {}, {}, {}
    for r, k in enumerate(rows):
        row_at.setdefault(int(body[k]), []).append(r)
    for c, b in enumerate(body):
        column_at.setdefault(int(b), []).append(c)
    for a, b in bodies:
        for x, y in ((a, b), (b, a)):
            r_of, c_of = row_at.get(x, []), column_at.get(y, [])
            for r, c in zip(*np.nonzero(touch[np.ix_(r_of, c_of)])):
                i, j = sorted((shaped[rows[r_of[r]]], shaped[c_of[c]]))
                pairs[(i, j)] = math.sqrt(friction[where[i]] * friction[where[j]])
    p.excludes, p.pairs = sorted(bodies), sorted(pairs.items())


def _filter(scene, i):
    shape = scene.shapes[i]
    return (int(shape.get("group", 1)), int(shape.get("mask", -1)), int(shape.get("contype", 1)),
            int(shape.get("conaffinity", 1)))


def _text(values):
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _geom(parent_element, scene, p, i, frame, assets=None):
    """The geom of node i's shape, placed relative to `frame` (a dynamic node, or WORLD); a hull's
    mesh goes into `assets` (the `<asset>` element)."""
    shape = scene.shapes[i]
    kind, s = shape["type"], p.scale[i]
    if frame >= 0:
        r_frame = p.rotation[frame]
        pos = r_frame.T @ (p.translation[i] - p.translation[frame])
        quat = rotation.multiply(rotation.conjugate(p.quaternion[frame]), p.quaternion[i])
    else:
        pos, quat = p.translation[i].copy(), p.quaternion[i].copy()
    attributes = {"name": scene.names[i]}
    if kind == "box":
        attributes |= {"type": "box", "size": _text(0.5 * s * np.asarray(shape["size"], float))}
    elif kind == "sphere":
        attributes |= {"type": "sphere", "size": _text([s * shape["radius"]])}
    elif kind in ("capsule", "cylinder"):
        attributes |= {"type": kind, "size": _text([s * shape["radius"], 0.5 * s * shape["height"]])}
        quat = rotation.multiply(quat, Z_TO_Y)
    elif kind == "hull":
        mesh = f"{scene.names[i]}:hull"
        ET.SubElement(assets, "mesh", {"name": mesh, "vertex": _text(s * np.asarray(shape["vertices"], float))})
        attributes |= {"type": "mesh", "mesh": mesh}
    elif kind == "plane":
        normal = np.asarray(shape["normal"], float)
        normal = normal / np.linalg.norm(normal)
        r_node = rotation.matrix_from_quaternion(quat)
        pos = pos + s * shape["offset"] * (r_node @ normal)   # the node's scale stretches the offset too
        quat = rotation.multiply(quat, _z_onto(normal))
        attributes |= {"type": "plane", "size": "0 0 1"}        # 0 0: infinite (drawn as a grid)
    contype, conaffinity = _mujoco_bits(_filter(scene, i))
    attributes |= {"pos": _text(pos), "quat": _text(quat), "contype": str(contype),
                   "conaffinity": str(conaffinity), "condim": "3",
                   "rgba": _text(list(scene.colors[i]) + [1.0])}
    if scene.friction is not None:
        attributes["friction"] = f"{float(scene.friction[i])!r} 0 0"
    ET.SubElement(parent_element, "geom", attributes)


def _z_onto(normal):
    """A unit quaternion turning z onto `normal` (the shortest arc; a half turn about x for -z)."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ normal)
    if c < -1.0 + 1e-15:
        return np.array([0.0, 1.0, 0.0, 0.0])
    q = np.concatenate([[1.0 + c], np.cross(z, normal)])
    return q / np.linalg.norm(q)


def to_mjcf(scene, left_out=None, integrator="rk4", contacts=True, settings=None):
    """MJCF text of `scene` (a physics.io.scene.Scene or a path): module docstring.

    `left_out`: None raises `UnsupportedScene` naming everything MJCF cannot express; a list gets
    those sentences appended (and the XML is what can be expressed). `integrator`: MuJoCo's
    (euler, rk4, implicit, implicitfast). `contacts` False disables contacts. `settings`: a
    physics.core.settings.Settings for dt, substeps and gravity (default: the scene's)."""
    scene = scene if isinstance(scene, Scene) else load_scene(Path(scene))
    if integrator not in MUJOCO_INTEGRATORS:
        raise ValueError(f"integrator: got {integrator!r}; MuJoCo's are {', '.join(MUJOCO_INTEGRATORS)}")
    settings = settings if settings is not None else scene.settings()
    p = plan(scene)
    if p.left_out and left_out is None:
        raise UnsupportedScene(scene.path, p.left_out)
    if left_out is not None:
        left_out.extend(p.left_out)

    root = ET.Element("mujoco", {"model": scene.title})
    ET.SubElement(root, "compiler", {"angle": "radian", "inertiafromgeom": "false", "autolimits": "true"})
    option = ET.SubElement(root, "option", {
        "timestep": repr(settings.dt / settings.substeps), "gravity": _text(settings.gravity),
        "integrator": MUJOCO_INTEGRATORS[integrator]})
    can_touch = any(scene.shapes[i] is not None and p.owner[i] is not None and p.owner[i] >= 0
                    for i in range(len(scene.names)))
    ET.SubElement(option, "flag", {"contact": "enable" if contacts and can_touch else "disable",
                                   "filterparent": "disable"})
    assets = ET.SubElement(root, "asset")
    world = ET.SubElement(root, "worldbody")
    elements, actuators = {WORLD: world}, []
    for i in p.bodies:
        parent, spec = p.body_parent[i], p.joint[i]
        if parent >= 0:
            pos = p.rotation[parent].T @ (p.translation[i] - p.translation[parent])
            quat = rotation.multiply(rotation.conjugate(p.quaternion[parent]), p.quaternion[i])
        else:
            pos, quat = p.translation[i], p.quaternion[i]
        body = ET.SubElement(elements[parent], "body", {"name": scene.names[i], "pos": _text(pos), "quat": _text(quat)})
        elements[i] = body
        if spec is None:
            ET.SubElement(body, "freejoint", {"name": scene.names[i]})
        elif spec["type"] == "six_axis":      # MuJoCo's joints of one body, in order
            group = next(k for k, other in enumerate(scene.joints) if other is spec)
            for m, axis in enumerate(other for other in scene.joints if other.get("group") == group):
                attributes = _axial(p, i, axis, axis.get("name", f"{scene.names[i]}:{m}"),
                                    {"hinge": "hinge", "slider": "slide"}[axis["type"]], spec["anchor"], actuators)
                ET.SubElement(body, "joint", attributes)
        elif spec["type"] != "fixed":         # a fixed joint: a child body with no joint is welded to its parent
            kind = {"ball": "ball", "hinge": "hinge", "slider": "slide"}[spec["type"]]
            if kind == "ball":
                attributes = {"name": scene.names[i], "type": kind,
                              "pos": _text(p.rotation[i].T @ (np.asarray(spec["anchor"], float) - p.translation[i]))}
            else:
                attributes = _axial(p, i, spec, scene.names[i], kind, spec["anchor"], actuators)
            ET.SubElement(body, "joint", attributes)
        ET.SubElement(body, "inertial", {"pos": "0 0 0", "mass": repr(float(scene.mass[i])),
                                          "diaginertia": _text(scene.inertia_body[i])})
    for i, shape in enumerate(scene.shapes):
        if shape is None or p.owner[i] is None:
            continue
        body = p.owner[i]
        _geom(elements[body] if body >= 0 else world, scene, p, i, body, assets)
    if not len(assets):
        root.remove(assets)
    if actuators:       # each as MuJoCo's <general>: the same gain, affine bias, gear and ranges exactly
        section = ET.SubElement(root, "actuator")
        for joint_name, actuator in actuators:
            attributes = {"name": actuator["name"], "joint": joint_name, "gaintype": "fixed", "biastype": "affine",
                          "gainprm": repr(float(actuator["gain"])), "biasprm": _text(actuator["bias"]),
                          "gear": repr(float(actuator["gear"]))}
            for key, attribute in (("ctrl_range", "ctrl"), ("force_range", "force")):
                if key in actuator:
                    attributes[f"{attribute}limited"] = "true"
                    attributes[f"{attribute}range"] = _text(actuator[key])
            ET.SubElement(section, "general", attributes)
    # a motor on a body: MuJoCo's site transmission, a site at the body's origin (its frame is the
    # node's) and the force or torque gear · ctrl along the axis in that frame (gear's 6 numbers)
    motors = [(spec, k) for spec in scene.drives if spec["type"] == "motor" for k in spec["nodes"] if k in elements]
    if motors:
        section = root.find("actuator")
        section = ET.SubElement(root, "actuator") if section is None else section
        for spec, k in motors:
            name = spec["name"] if len(spec["nodes"]) == 1 else f"{spec['name']}:{scene.names[k]}"
            ET.SubElement(elements[k], "site", {"name": name, "pos": "0 0 0"})
            gear = np.zeros(6)
            axis = np.asarray(spec.get("angular", spec.get("linear")), float)
            gear[3 * ("angular" in spec):3 * ("angular" in spec) + 3] = spec["gear"] * axis
            attributes = {"name": name, "site": name, "gear": _text(gear)}
            if "ctrl_range" in spec:
                attributes["ctrllimited"], attributes["ctrlrange"] = "true", _text(spec["ctrl_range"])
            ET.SubElement(section, "motor", attributes)
    if p.excludes or p.pairs:
        contact = ET.SubElement(root, "contact")
        for (i, j), mu in p.pairs:
            ET.SubElement(contact, "pair", {"geom1": scene.names[i], "geom2": scene.names[j], "condim": "3",
                                            "friction": f"{mu!r} {mu!r} 0 0 0"})
        for a, b in p.excludes:
            ET.SubElement(contact, "exclude", {"body1": "world" if a < 0 else scene.names[a],
                                               "body2": "world" if b < 0 else scene.names[b]})
    # ElementTree indents and writes by recursion, a level of Python per element of depth: a chain
    # of a thousand links is a body tree a thousand deep, past Python's default limit
    depth, todo = 0, [(root, 1)]
    while todo:
        element, level = todo.pop()
        depth = max(depth, level)
        todo.extend((child, level + 1) for child in element)
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, 3 * depth + 1000))
    try:
        ET.indent(root)
        text = ET.tostring(root, encoding="unicode")
    finally:
        sys.setrecursionlimit(previous)
    if left_out:
        comment = "\n".join(f"  left out: {reason.replace('--', '- -')}" for reason in left_out)
        text = f"<!-- What MJCF cannot express of this scene:\n{comment}\n-->\n" + text
    return text + "\n"
