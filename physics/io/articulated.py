"""Articulated models (a robot's kinematic tree of rigid links) mapped onto the scene model.

`physics.io.urdf` and `physics.io.mjcf` read their files into `Link`s; `scene_document` turns the links
into the dict the TOML loader validates (`physics.io.scene.scene_from_dict`), so every check and
message of the loader applies to imported models too. Frames: a link's pose is given in its
parent link's frame (the model's world for a root); joint anchors and axes, inertials and geoms in
the link's own frame. Models are z-up; the scene is y-up, so every model hangs under one fixed
root node turned by −90° about x (model z → scene y).

The mapping (docs/scene-format.md, "URDF and MJCF"):

- Every link becomes a node named as the link: the kinematic tree is the transform hierarchy.
- A link with no joint (URDF `fixed`, an MJCF body without joints) is a fixed child node of its
  parent link. Its inertial is lumped into the nearest moving ancestor (the rigid assembly it is
  part of): mass m = Σ m_i, centre c = Σ m_i c_i / m, and about c
      I = Σ R_i I_i R_iᵀ + m_i (|d_i|² 1 − d_i d_iᵀ),   d_i = c_i − c            (parallel axes)
  in the moving link's axes.
- A moving link (one or more joints, a free joint, a floating base) is a dynamic node at its
  centre of mass with its principal axes (the eigenvectors of the tensor above, a right-handed
  frame; the moments are the eigenvalues), and the link node is a fixed child of it placed back
  at the link frame: an offset centre of mass and a full tensor are exactly the source's.
- k joints in one link (MJCF): up to three slides, then up to three hinges through one anchor (every
  multi-joint body of gymnasium's models) are one `six_axis` joint, the link one body, each joint
  an axis of it with its name, coordinate, ref, limits and drives (`one_body`): the same multibody
  as MuJoCo's. Other combinations (a ball among them, hinges through different points, a slide
  after a hinge, more than three of a kind) are a chain of k dynamic stages, each turned or moved
  by one joint about (along) its own anchor and axis, in the order of the file as MuJoCo applies
  them. The first k − 1 stages are gimbal bodies carrying STAGE_SHARE of the link's mass and
  inertia each, at most half of it together (beyond 11 joints each carries 1/(2(k − 1))), at the
  same centre and axes: at the loaded pose the chain's composite is the link's; the last carries
  the rest and the link node.
- hinge → `hinge`, slide → `slider`, ball → `ball` (the anchors coincide), free → a dynamic root
  with no joint. A hinge or slide keeps its name, the source's coordinate (`coordinate`: the value
  it loads at) and limits, damping, stiffness and armature (MJCF).
- Collision shapes: box, sphere, cylinder and capsule map to the scene's shapes (cylinder and
  capsule axes turned from z to y), each on a fixed child node of its link; a plane only on a
  static link; a mesh collides as its convex hull (`mesh_hull`; a flat mesh as the box of its
  bounds). The robot's own shapes do not collide with one another (group ROBOT_GROUP, left out
  of their mask): the joints hold the links, and neighbouring links overlap at their joints.

What cannot be mapped is collected and named in one `ModelWarning` per file; the model still loads.
"""
import math
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as safe
import numpy as np
from defusedxml import DefusedXmlException

from physics.core.files import FileTooLarge, read_regular
from physics.core.validation import MASS_RANGE
from physics.math.rotation import quaternion_from_matrix
from physics.io.errors import SceneError
from physics.io.mesh_files import FILE_BYTES_MAX
from physics.io.scene import scene_from_dict

STAGE_SHARE = 0.05          # of a link's mass and inertia carried by each gimbal stage of a multi-joint link
POINT_RADIUS = 0.05         # m: a moving link given as a point mass gets the inertia of a solid sphere this size
ROBOT_GROUP = 2             # collision group of a model's shapes; their mask leaves it out (no self-collision)
ROBOT_MASK = ~ROBOT_GROUP   # -3: everything but the robot
DRAWN_ONLY = 0              # group 0 meets no mask: a visual shape is drawn and never collides
Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])   # −90° about x: model z -> scene y
WORLD = {"dt": 1.0 / 240.0, "integrator": "lie-midpoint", "iterations": 20, "substeps": 2}


class ModelWarning(UserWarning):
    """What a URDF or MJCF file holds that the sandbox does not model (named, skipped)."""


@dataclass
class Geom:
    """A shape in its link's frame: `shape` is a scene shape dict (its own axes: a cylinder or capsule
    along z as the source writes it), t (3,), R (3, 3) its pose in the link frame."""

    name: str
    shape: dict
    t: np.ndarray
    R: np.ndarray
    color: tuple | None = None
    collide: bool = True
    visible: bool = True        # False: the shape collides unseen (a link drawn by its visual meshes)
    mesh: dict | None = None    # a drawn mesh {"file", "scale"} (then `shape` is None)


@dataclass
class Joint:
    """One degree-of-freedom group of a link: `type` hinge | slide | ball | free; axis and anchor in
    the link frame; `ref` the coordinate at which the link has its written pose; lower/upper the
    source's limits on the coordinate (None: unlimited)."""

    name: str
    type: str
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    anchor: np.ndarray = field(default_factory=lambda: np.zeros(3))
    lower: float | None = None
    upper: float | None = None
    ref: float = 0.0
    damping: float = 0.0        # N m s/rad or N s/m
    stiffness: float = 0.0      # N m/rad or N/m, towards `springref`
    springref: float = 0.0      # the coordinate at which the spring is at rest
    armature: float = 0.0       # kg m² or kg: inertia on the coordinate (a rotor through its gear)
    friction: float = 0.0       # N m or N: dry friction on the coordinate (MJCF frictionloss, URDF <dynamics friction>)


@dataclass
class Link:
    """A rigid link: pose (t, R) in its parent link's frame at the reference configuration, its
    joints, its inertial (mass, centre `com` and tensor `inertia` about the centre, link frame) and
    geoms. `element` names it in errors ("<link name='arm'>")."""

    name: str
    parent: str | None
    t: np.ndarray
    R: np.ndarray
    element: str
    joints: list = field(default_factory=list)
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    geoms: list = field(default_factory=list)
    robot: bool = True      # False for MJCF's worldbody: its shapes (the floor) collide with the robot's


# --- rigid transforms (t, R): x_parent = R x_child + t ---------------------------------------------

def compose(a, b):
    return a[0] + a[1] @ b[0], a[1] @ b[1]


def invert(a):
    return -a[1].T @ a[0], a[1].T


def axis_angle_matrix(axis, angle):
    """Rodrigues: R = I + sin θ K + (1 − cos θ) K², K = hat(axis), |axis| = 1."""
    x, y, z = axis
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def quaternion_matrix(q):
    """Rotation of a unit quaternion (w, x, y, z) (normalized here)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def joint_motion(joint, value):
    """The transform a joint at coordinate `value` applies in its link's frame (MuJoCo's order:
    a hinge turns by value − ref about its anchor, a slide moves by value − ref along its axis, a
    ball turns by the quaternion `value` about its anchor)."""
    if joint.type == "slide":
        return joint.axis * (value - joint.ref), np.eye(3)
    R = axis_angle_matrix(joint.axis, value - joint.ref) if joint.type == "hinge" else quaternion_matrix(value)
    return joint.anchor - R @ joint.anchor, R


def axial_terms(joint, value):
    """A hinge's or slide's scene keys beyond its name and axis: its coordinate as loaded (`value`,
    the source's), its limits and its joint terms, each only where the source gives one."""
    terms = {"coordinate": float(value)} if float(value) != 0.0 else {}
    terms.update({key: float(limit) for key, limit in (("lower", joint.lower), ("upper", joint.upper)) if limit is not None})
    if joint.damping:
        terms["damping"] = float(joint.damping)
    if joint.armature:
        terms["armature"] = float(joint.armature)
    if joint.friction:
        terms["friction"] = float(joint.friction)
    if joint.stiffness:
        terms["stiffness"], terms["spring_reference"] = float(joint.stiffness), float(joint.springref)
    return terms


def one_body(joints):
    """Whether a link's joints are one six-axis joint (the scene's six_axis): two or more, up to three
    slides and then up to three hinges through one anchor, as every multi-joint body of gymnasium's
    models has them (their root's slides and hinge, the humanoid's hips and shoulders)."""
    slides = [j for j in joints if j.type == "slide"]
    hinges = [j for j in joints if j.type == "hinge"]
    return (len(joints) >= 2 and len(slides) + len(hinges) == len(joints) and len(slides) <= 3 and len(hinges) <= 3
            and all(a is b for a, b in zip(joints, slides)) and all(np.array_equal(j.anchor, hinges[0].anchor) for j in hinges))


def principal_frame(tensor):
    """Eigenvalues (3,) and a right-handed rotation V (columns = principal axes) with I = V diag V^T."""
    moments, V = np.linalg.eigh(0.5 * (tensor + tensor.T))
    if np.linalg.det(V) < 0:
        V[:, 2] = -V[:, 2]
    return moments, V


# --- the scene document ----------------------------------------------------------------------------

class _Builder:
    def __init__(self, path, title, links, positions, floating_base, ground, gravity, world):
        self.path, self.links = str(path), links
        self.positions = dict(positions or {})
        self.floating_base, self.ground = floating_base, ground
        self.title, self.gravity, self.world_settings = title, gravity, world
        self.nodes, self.joints, self.pose, self.skipped = [], [], {}, []
        self.by_name = {link.name: link for link in links}
        self.children = {}
        for link in links:
            self.children.setdefault(link.parent, []).append(link)

    def error(self, element, key, value, reason):
        return SceneError(self.path, element, key, value, reason)

    def moving(self, link):
        return bool(link.joints) or (link.parent is None and self.floating_base)

    def add(self, node, world_pose):
        self.nodes.append(node)
        self.pose[node["name"]] = world_pose

    def node(self, name, parent, local, motion="fixed", **extra):
        t, R = local
        node = {"name": name, "motion": motion, "translation": t.tolist(),
                "rotation": quaternion_from_matrix(R).tolist(), **extra}
        if parent is not None:
            node["parent"] = parent
        world = compose(self.pose[parent], local) if parent is not None else local
        self.add(node, world)
        return node

    def lowest(self, node):
        """The lowest scene y (model z) of a node's shape at load: its world bounding box's bottom."""
        shape, (t, R) = node["shape"], self.pose[node["name"]]
        if shape["type"] == "plane":
            return 0.0
        if shape["type"] == "box":
            return t[1] - 0.5 * float(np.abs(R[1]) @ np.asarray(shape["size"]))
        if shape["type"] == "sphere":
            return t[1] - shape["radius"]
        if shape["type"] == "hull":
            return float((t[1] + np.asarray(shape["vertices"]) @ R[1]).min())
        a = abs(R[1, 1])    # the axis (node y)'s scene-y component
        side = shape["radius"] if shape["type"] == "capsule" else shape["radius"] * math.sqrt(max(1.0 - a * a, 0.0))
        return t[1] - a * 0.5 * shape["height"] - side

    def composite(self, link):
        """Mass, centre and tensor (about the centre) of `link` and every link fixed to it, in its frame."""
        parts, stack = [], [(link, (np.zeros(3), np.eye(3)))]
        while stack:
            member, pose = stack.pop()
            parts.append((member, pose))
            for child in self.children.get(member.name, []):
                if not self.moving(child):
                    stack.append((child, compose(pose, (child.t, child.R))))
        parts = [(member, pose) for member, pose in parts if member.mass > 0]   # a massless link's tensor means nothing
        mass = sum(member.mass for member, _ in parts)
        if not mass > 0:
            return 0.0, np.zeros(3), np.zeros((3, 3))
        centres = [(member.mass, pose[0] + pose[1] @ member.com, pose[1] @ member.inertia @ pose[1].T) for member, pose in parts]
        com = sum(m * c for m, c, _ in centres) / mass
        tensor = np.zeros((3, 3))
        for m, c, I in centres:
            d = c - com
            tensor += I + m * (d @ d * np.eye(3) - np.outer(d, d))
        return mass, com, tensor

    def build(self):
        root = self.title if self.title not in self.by_name else f"{self.title}:model"
        self.root = root
        self.node(root, None, (np.zeros(3), Z_UP), color=[0.3, 0.3, 0.32])
        stack = list(reversed(self.children.get(None, [])))
        while stack:
            link = stack.pop()
            self.link(link, root if link.parent is None else link.parent)
            stack.extend(reversed(self.children.get(link.name, [])))
        if self.ground:   # at z = 0, or under the robot's lowest shape (a fixed-base quadruped's feet)
            name = "ground" if "ground" not in self.by_name else f"{root}:ground"
            lowest = min([0.0] + [self.lowest(node) for node in self.nodes if node.get("shape") is not None])
            height = min(lowest, 0.0)      # shapes that reach lower rest on it, as the peers place them
            ground = {"name": name, "parent": root, "motion": "fixed", "translation": [0.0, 0.0, height],
                      "rotation": [1.0, 0.0, 0.0, 0.0], "friction": 0.8, "color": [0.42, 0.45, 0.5],
                      "shape": {"type": "plane", "normal": [0.0, 0.0, 1.0], "offset": 0.0}}
            self.nodes.insert(1, ground)
        document = {"title": self.title, "description": "", "world": dict(self.world_settings),
                    "node": self.nodes, "joint": self.joints}
        if self.gravity is not None:
            document["world"]["gravity"] = (Z_UP @ np.asarray(self.gravity, float)).tolist()
        return document

    def link(self, link, parent):
        local = (link.t, link.R)
        if not self.moving(link):
            self.node(link.name, parent, local)
            self.geoms(link)
            return
        mass, com, tensor = self.composite(link)
        if not mass > 0:
            raise self.error(link.element, "mass", mass, "a link that moves (on a joint or floating) needs a mass > 0, "
                                                         "with the links fixed to it")
        if mass < MASS_RANGE[0]:    # a marker (pusher's goal, 4e-10 kg): the sandbox's lightest body, as dense
            self.skipped.append(f"masses below {MASS_RANGE[0]:g} kg (raised to it, inertia in proportion)")
            tensor, mass = tensor * (MASS_RANGE[0] / mass), MASS_RANGE[0]
        moments, V = principal_frame(tensor)
        if np.all(np.abs(moments) <= 1e-300):   # a point mass (laikago's hips): the sandbox's bodies need an inertia
            self.skipped.append(f"zero inertia tensors (given a solid sphere's of radius {POINT_RADIUS} m)")
            moments = np.full(3, 0.4 * mass * POINT_RADIUS ** 2)
        if not moments[0] > 0 or moments[2] > (moments[0] + moments[1]) * (1 + 1e-3):
            raise self.error(link.element, "inertia", moments.tolist(),
                             "the inertia tensor (with the links fixed to it) is not a real body's: its principal moments "
                             "must be > 0 and satisfy the triangle inequality I_k <= I_i + I_j")
        centre = (com, V)
        back = invert(centre)
        stages = [joint for joint in link.joints if joint.type != "free"]
        if any(joint.type == "free" for joint in link.joints):
            value = self.positions.get(next(j.name for j in link.joints if j.type == "free"))
            if value is not None:
                value = np.asarray(value, float)
                local = (value[:3], quaternion_matrix(value[3:7]))
        if not stages:
            body = self.node(f"{link.name}:body", parent, compose(local, centre), "dynamic",
                             mass=mass, inertia=moments.tolist())
            self.node(link.name, body["name"], back)
            self.geoms(link)
            return
        if one_body(stages):
            self.six_axis(link, parent, local, centre, back, mass, moments, stages)
            return
        frame, before = parent, local
        for j, joint in enumerate(stages):
            last = j == len(stages) - 1
            value = self.positions.get(joint.name, np.array([1.0, 0, 0, 0]) if joint.type == "ball" else joint.ref)
            motion = joint_motion(joint, np.asarray(value, float) if joint.type == "ball" else float(value))
            # the k − 1 stages carry STAGE_SHARE each, together never more than half the link (a body
            # of more than 20 joints had a negative mass left for its last stage)
            stage = min(STAGE_SHARE, 0.5 / max(len(stages) - 1, 1))
            share = 1.0 - stage * (len(stages) - 1) if last else stage
            name = f"{link.name}:body" if last else f"{link.name}:{joint.name}"
            body = self.node(name, frame, compose(compose(before, motion), centre), "dynamic",
                             mass=mass * share, inertia=(moments * share).tolist())
            stage_frame = self.node(link.name if last else f"{name}:frame", name, back)
            world_t, world_R = self.pose[stage_frame["name"]]
            spec = {"type": {"hinge": "hinge", "slide": "slider", "ball": "ball"}[joint.type], "b": name,
                    "anchor": (world_t + world_R @ joint.anchor).tolist()}
            if frame != self.root:
                spec["a"] = frame
            if joint.type != "ball":
                # the scene's joint coordinate is the source's: it reads `value` as loaded
                spec.update(name=joint.name, axis=(world_R @ joint.axis).tolist(), **axial_terms(joint, float(value)))
            self.joints.append(spec)
            frame, before = stage_frame["name"], (np.zeros(3), np.eye(3))
        self.geoms(link)

    def six_axis(self, link, parent, local, centre, back, mass, moments, joints):
        """A link on several slides and hinges (`one_body`) as one body on a six_axis joint: the
        link at its loaded coordinates, each axis in the world as MuJoCo's xaxis (turned by the
        hinges before it), its coordinate and its ref (the chart's zero: the written pose)."""
        axes, pose = [], local
        for joint in joints:
            value = float(self.positions.get(joint.name, joint.ref))
            axis = {"type": "slider" if joint.type == "slide" else "hinge", "name": joint.name,
                    "axis": (self.pose[parent][1] @ pose[1] @ joint.axis).tolist(), **axial_terms(joint, value)}
            if joint.ref != 0.0:
                axis["ref"] = float(joint.ref)
            axes.append(axis)
            pose = compose(pose, joint_motion(joint, value))
        name = f"{link.name}:body"
        self.node(name, parent, compose(pose, centre), "dynamic", mass=mass, inertia=moments.tolist())
        self.node(link.name, name, back)
        world_t, world_R = self.pose[link.name]
        spec = {"type": "six_axis", "b": name, "anchor": (world_t + world_R @ joints[-1].anchor).tolist(), "axes": axes}
        if parent != self.root:
            spec["a"] = parent
        self.joints.append(spec)
        self.geoms(link)

    def geoms(self, link):
        static = not any(self.moving(l) for l in self.ancestors(link))
        for k, geom in enumerate(link.geoms):
            if geom.shape is None:    # a visual mesh: drawn, never collides
                extra = {"mesh": dict(geom.mesh)}
                if geom.color is not None:
                    extra["color"] = [float(min(max(c, 0.0), 1.0)) for c in geom.color[:3]]
                self.node(f"{link.name}:{geom.name or k}", link.name, (geom.t, geom.R), **extra)
                continue
            shape = dict(geom.shape)
            R = geom.R
            if shape["type"] in ("cylinder", "capsule"):
                R = R @ np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # +90° about x: y -> z
            if shape["type"] == "plane" and not static:
                self.skipped.append(f"a plane on a moving link ({link.element})")
                continue
            if not geom.collide:
                shape["group"] = DRAWN_ONLY
            elif link.robot and shape["type"] != "plane":
                shape["group"], shape["mask"] = ROBOT_GROUP, ROBOT_MASK
            extra = {"shape": shape}
            if not geom.visible:
                extra["visible"] = False
            if geom.color is not None:
                extra["color"] = [float(min(max(c, 0.0), 1.0)) for c in geom.color[:3]]
            self.node(f"{link.name}:{geom.name or k}", link.name, (geom.t, R), **extra)

    def ancestors(self, link):
        while link is not None:
            yield link
            link = self.by_name.get(link.parent)


def scene_document(path, title, links, positions=None, floating_base=False, ground=False, gravity=None,
                   world=None, actuators=(), keyframes=()):
    """The scene dict (docs/scene-format.md) of a model's links, loaded at `positions` (joint name ->
    coordinate: a number for hinge and slide, a quaternion (w, x, y, z) for a ball, 7 numbers
    (position, quaternion) for a free joint; absent joints at their reference), and the list of
    what it could not map."""
    joints = {joint.name: joint for link in links for joint in link.joints}
    for name, value in (positions or {}).items():
        joint = joints.get(name)
        if joint is None:
            raise SceneError(path, None, "joint_positions", name, "no joint of the model has this name")
        count = {"free": 7, "ball": 4}.get(joint.type, 1)
        array = np.asarray(value, float).reshape(-1) if np.ndim(value) else np.array([value], float)
        if array.size != count or not np.all(np.isfinite(array)) or np.any(np.abs(array) > 1e6):
            raise SceneError(path, None, f"joint_positions[{name!r}]", value, f"expected {count} finite number(s) of at most 1e6 "
                             f"for a {joint.type} joint")
        if count > 1 and not np.linalg.norm(array[-4:]) > 1e-9:
            raise SceneError(path, None, f"joint_positions[{name!r}]", value, "a zero quaternion")
    builder = _Builder(path, title, links, positions, floating_base, ground, gravity, WORLD if world is None else world)
    document = builder.build()
    if actuators:       # [[actuator]] tables (docs/scene-format.md) naming the joints by the source's names
        document["actuator"] = [dict(actuator) for actuator in actuators]
    if keyframes:       # [[keyframe]] tables: joints and actuators by the source's names
        document["keyframe"] = [dict(keyframe) for keyframe in keyframes]
    return document, builder.skipped


def toml_value(value):
    """A TOML value; floats by repr, which reads back to the same double (the text reloads bit for bit)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):   # a basic string: backslash, quote and control characters escaped
        return '"' + "".join(f"\\u{ord(c):04x}" if c in '"\\' or ord(c) < 32 or ord(c) == 127 else c for c in value) + '"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items()) + " }"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    return repr(float(value))


def toml_text(document, header=""):
    """The scene document as TOML text (docs/scene-format.md); `header` lines become comments.
    Keys are quoted where TOML needs it (node names with ':' are values, never keys)."""
    lines = ["# " + line if line else "#" for line in header.strip().splitlines()] if header else []
    lines += [f"{key} = {toml_value(document[key])}" for key in ("title", "description") if key in document]
    lines += ["", "[world]"] + [f"{key} = {toml_value(value)}" for key, value in document.get("world", {}).items()]
    for table in ("node", "joint", "event", "actuator", "launcher", "key", "keyframe"):
        for item in document.get(table, ()):
            lines += ["", f"[[{table}]]"] + [f"{key} = {toml_value(value)}" for key, value in item.items()]
    return "\n".join(lines) + "\n"


def build_scene(path, title, links, skipped, description, **options):
    """Validate the document with the TOML loader's checks and build the Scene; `skipped` (a list of
    what the file holds that is not mapped) becomes one ModelWarning and the scene's `warnings`."""
    document, more = scene_document(path, title, links, **options)
    skipped = list(skipped) + more
    document["description"] = description
    scene = scene_from_dict(document, path)
    notes = ()
    if skipped:
        text = f"{path}: not modelled, skipped: " + "; ".join(sorted(set(skipped)))
        warnings.warn(text, ModelWarning, stacklevel=3)
        notes = (text,)
    # the TOML text of the same document: a recording of an imported model carries it (reloads bit for bit)
    return replace(scene, warnings=notes, toml_text=toml_text(document, "\n".join(notes)))


# --- reading the files -------------------------------------------------------------------------------



def read_xml(path):
    """The root element of an XML file, parsed by defusedxml (no DTD, no entity expansion: an XML
    bomb or an external entity is refused), or one SceneError naming the file. Only a regular file
    is opened (`physics.core.files.open_regular`: a FIFO would block the read forever), and trailing NUL
    bytes and whitespace are dropped before parsing, as PyBullet's and MuJoCo's readers drop them
    (pybullet_data's humanoid.urdf ends in a NUL)."""
    path = Path(path)
    try:
        data = read_regular(path, FILE_BYTES_MAX)
        return safe.fromstring(data.rstrip(b"\0 \t\r\n"), forbid_dtd=True)
    except FileTooLarge:
        raise SceneError(path, None, None, None, f"the file has more than {FILE_BYTES_MAX} bytes; at most "
                                                 f"{FILE_BYTES_MAX} are read") from None
    except OSError as error:
        raise SceneError(path, None, None, None, f"cannot read the file ({error.strerror or error})") from None
    except DefusedXmlException as error:
        raise SceneError(path, None, None, None, f"refused XML ({type(error).__name__}: entities and DTDs are not read)") from None
    except ParseError as error:
        raise SceneError(path, None, None, None, f"XML syntax error: {error}") from None
    except RecursionError:
        raise SceneError(path, None, None, None, "XML nested too deep to parse") from None


def numbers(path, element, key, text, count=None, default=None, positive=False):
    """The whitespace-separated finite numbers of an attribute (`count` of them, if given)."""
    if text is None:
        if default is None:
            raise SceneError(path, element, key, None, "missing")
        return np.array(default, float)
    try:
        values = np.array([float(part) for part in text.split()], float)
    except ValueError:
        raise SceneError(path, element, key, text, "expected numbers") from None
    if count is not None and values.size != count:
        raise SceneError(path, element, key, text, f"expected {count} numbers, got {values.size}")
    if not np.all(np.isfinite(values)) or np.any(np.abs(values) > 1e12):
        raise SceneError(path, element, key, text, "expected finite numbers of at most 1e12 in size")
    if positive and np.any(values <= 0):
        raise SceneError(path, element, key, text, "expected numbers > 0")
    return values


def check_inertial(path, element, mass, tensor):
    """A link's own inertial: mass ≥ 0, a symmetric tensor whose principal moments are ≥ 0 and
    satisfy the triangle inequality I_k ≤ I_i + I_j (1e-3 relative slack, as the TOML loader)."""
    if not mass >= 0:
        raise SceneError(path, element, "mass", mass, "a mass must be >= 0")
    if mass > 1e9:
        raise SceneError(path, element, "mass", mass, "a mass must be at most 1e9 kg")
    moments = np.linalg.eigvalsh(tensor)
    scale = max(abs(moments).max(), 1e-300)
    if moments[0] < -1e-9 * scale or moments[2] > (moments[0] + moments[1]) * (1 + 1e-3) + 1e-12 * scale:
        raise SceneError(path, element, "inertia", np.round(moments, 12).tolist(),
                         "principal moments must be >= 0 and satisfy the triangle inequality I_k <= I_i + I_j")
