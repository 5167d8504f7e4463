"""MJCF (MuJoCo's XML) in, the scene model out: `load_mjcf(path)` (the mapping: `physics.io.articulated`).

What is read, as MuJoCo's compiler reads it (MuJoCo's XML reference):
- `<compiler angle eulerseq inertiafromgeom meshdir settotalmass>`; `<option gravity>`;
- `<default>` classes (nested, inheriting) for `joint` and `geom`, chosen by `class` or the
  enclosing bodies' `childclass`;
- `<worldbody>`: its geoms are static (the floor); `<body pos quat|axisangle|euler|xyaxes|zaxis>`
  trees with `<inertial pos orientation mass diaginertia|fullinertia>`, `<joint type hinge|slide|
  ball|free pos axis range limited ref>`, `<freejoint>` and `<geom type size pos orientation fromto
  density mass rgba material contype conaffinity>`; contype and conaffinity are kept on the shape,
  so that two geoms meet by MuJoCo's rule (either one's contype meets the other's conaffinity).
Without an `<inertial>` (or with inertiafromgeom="true") a body's mass and inertia are its geoms':
each geom's mass is `mass` or density (default 1000 kg/m³) times its volume, with MuJoCo's
solid-body formulas (sphere, capsule, cylinder, box, ellipsoid; a mesh geom's are its convex hull's,
MuJoCo's `inertia="convex"`), summed about the body's centre. A mesh geom collides as its convex
hull (physics.model.hull).

Joint coordinates are MuJoCo's qpos: a hinge turns the body by q − ref about its anchor and axis,
a slide moves it by q − ref; several joints of one body act in file order (`mj_kinematics`). A
hinge's or slide's `damping`, `stiffness`, `springref`, `armature` and `frictionloss` become the scene joint's
(`friction`: the drive slot's, so an actuated joint's friction loss is named and left out), and the scene
joint keeps MuJoCo's coordinate (`coordinate` = the qpos it loads at, limits as written).
`<actuator>`: `<motor>`, `<position>`, `<velocity>` and `<general>` with a fixed gain and an affine
bias, on a hinge or slide, become [[actuator]] tables (gear's first entry, ctrlrange and forcerange
where limited), with their `<default>`s.
Other actuators, tendons, equality constraints, sensors, sites, cameras, lights, contact pairs and
excludes, fluid forces, and defaults of other elements are named
in one warning and skipped.
"""
import math
from pathlib import Path

import numpy as np

from physics.io.articulated import (Geom, Joint, Link, axis_angle_matrix, build_scene, check_inertial, numbers,
                                    quaternion_matrix, read_xml)
from physics.io.errors import SceneError
from physics.io.mesh_files import mesh_box, mesh_hull, visual_mesh
from physics.core.validation import MASK_RANGE
from physics.model.hull import mass_properties

__all__ = ["load_mjcf"]

SKIPPED_SECTIONS = ("tendon", "equality", "sensor", "contact", "include", "extension")
ACTUATOR_TAGS = ("motor", "position", "velocity", "general")   # read; any other actuator is named as skipped
SHARED_ACTUATOR_ATTRIBUTES = ("ctrlrange", "ctrllimited", "forcerange", "forcelimited", "gear")
SKIPPED_IN_BODY = ("site", "camera", "light", "composite", "flexcomp", "plugin", "attach", "frame", "replicate")
JOINT_EXTRAS = ("springdamper",)   # read: damping, stiffness, springref, armature, frictionloss
DEPTH_MAX = 256    # bodies nested deeper are refused (each level is a node and a parent lookup)
# <default> classes: each copies its parent's attributes and adds its own, so classes nested or
# side by side under a class of many attributes multiply them (a 612 kB file can make 2 GB of tables);
# the copies are counted before they are made. MuJoCo's own models nest a few levels.
DEFAULT_DEPTH_MAX = DEPTH_MAX
DEFAULT_ATTRIBUTES_MAX = 1_000_000


class _Reader:
    def __init__(self, path):
        self.path = Path(path)
        self.skipped = []
        self.links, self.joint_names, self.joint_kinds, self.joint_objects = [], set(), {}, {}

    def error(self, element, key, value, reason):
        return SceneError(self.path, element, key, value, reason)

    def numbers(self, element, key, text, count=None, default=None, positive=False):
        return numbers(self.path, element, key, text, count, default, positive)

    # --- settings and defaults -------------------------------------------------------------------

    def read(self):
        root = read_xml(self.path)
        if root.tag != "mujoco":
            raise self.error(f"<{root.tag}>", None, None, "an MJCF file's root element is <mujoco>")
        self.title = root.get("model") or self.path.stem
        compiler = {}
        for element in root.findall("compiler"):
            compiler.update(element.attrib)
        self.degrees = compiler.get("angle", "degree") == "degree"
        self.eulerseq = compiler.get("eulerseq", "xyz")
        if len(self.eulerseq) != 3 or any(c not in "xyzXYZ" for c in self.eulerseq):
            raise self.error("<compiler>", "eulerseq", self.eulerseq, "expected three of x, y, z, X, Y, Z")
        self.inertia_from_geom = compiler.get("inertiafromgeom", "auto")
        self.autolimits = compiler.get("autolimits", "true") == "true"
        self.meshdir = self.path.parent / compiler.get("meshdir", compiler.get("assetdir", ""))
        self.total_mass = None
        if "settotalmass" in compiler:
            total = float(self.numbers("<compiler>", "settotalmass", compiler["settotalmass"], 1)[0])
            self.total_mass = total if total > 0 else None   # MuJoCo: a value <= 0 (the default -1) scales nothing
        for key in ("boundmass", "boundinertia", "balanceinertia", "fusestatic"):
            if key in compiler:
                self.skipped.append(f"<compiler {key}>")
        self.gravity = None
        for option in root.findall("option"):
            if option.get("gravity") is not None:
                self.gravity = self.numbers("<option>", "gravity", option.get("gravity"), 3)
            for key in ("density", "viscosity"):     # MuJoCo's fluid forces are not modelled
                if option.get(key) is not None and np.any(self.numbers("<option>", key, option.get(key)) != 0):
                    self.skipped.append(f"<option {key}> (fluid forces)")
        self.defaults, self.default_attributes = {"main": {}}, 0
        for element in root.findall("default"):
            self.default(element, "main", {})
        self.materials, self.meshes = {}, {}
        for asset in root.findall("asset"):
            for material in asset.findall("material"):
                if material.get("name") and material.get("rgba"):
                    self.materials[material.get("name")] = self.numbers(f"<material name={material.get('name')!r}>", "rgba",
                                                                        material.get("rgba"), 4)
            for mesh in asset.findall("mesh"):
                file = mesh.get("file")
                name = mesh.get("name") or (Path(file).stem if file else None)
                if name and file:
                    self.meshes[name] = (self.meshdir / file, self.numbers(f"<mesh name={name!r}>", "scale", mesh.get("scale"), 3, [1, 1, 1]))
        for tag in SKIPPED_SECTIONS:
            if root.find(tag) is not None:
                self.skipped.append(f"<{tag}>")
        worldbodies = root.findall("worldbody")
        if not worldbodies:
            raise self.error("<mujoco>", "worldbody", None, "an MJCF model needs a <worldbody>")
        world_name = "world"
        world = Link(name=world_name, parent=None, t=np.zeros(3), R=np.eye(3), element="<worldbody>", robot=False)
        self.links.append(world)
        self.names = {world_name}
        for worldbody in worldbodies:
            self.contents(worldbody, world, "main", 0)
        self.actuators, actuator_order = [], []     # the file's actuators in order (None: one not read)
        for section in root.findall("actuator"):
            for element in section:
                count = len(self.actuators)
                self.actuator(element)
                actuator_order.append(self.actuators[-1]["name"] if len(self.actuators) > count else None)
        for table in self.actuators:    # an actuated joint's drive is its actuator: its friction loss is left out
            joint = self.joint_objects[table["joint"]]
            if joint.friction:
                joint.friction = 0.0
                self.skipped.append("friction loss on an actuated joint")
        self.keyframes = [self.keyframe(key, n, actuator_order)
                          for n, key in enumerate(key for section in root.findall("keyframe") for key in section.findall("key"))]
        if self.total_mass is not None:
            self.set_total_mass(self.total_mass)
        return self.title, self.links

    def set_total_mass(self, total):
        """`<compiler settotalmass>`: every body's mass and inertia scaled by one factor so that
        the bodies (the world aside) weigh `total` kg, as MuJoCo's compiler does last."""
        bodies = [link for link in self.links if link.robot]
        have = sum(link.mass for link in bodies)
        if not have > 0:
            raise self.error("<compiler>", "settotalmass", total, "the model's bodies have no mass to scale")
        for link in bodies:
            link.mass *= total / have
            link.inertia = link.inertia * (total / have)

    def default(self, element, name, inherited):
        """A <default class=NAME> table and those nested in it, in document order: per element tag,
        the attributes given here over the parent's. Refused past DEFAULT_DEPTH_MAX levels or
        DEFAULT_ATTRIBUTES_MAX attributes in all the tables (counted before each copy)."""
        todo = [(element, name, inherited, 1)]
        while todo:
            element, name, inherited, depth = todo.pop()
            name = element.get("class", name)
            if depth > DEFAULT_DEPTH_MAX:
                raise self.error("<default>", "class", name, f"<default> classes nested deeper than {DEFAULT_DEPTH_MAX}")
            own = [child for child in element if child.tag != "default"]
            self.default_attributes += (sum(len(attributes) for attributes in inherited.values())
                                        + sum(len(child.attrib) for child in own))
            if self.default_attributes > DEFAULT_ATTRIBUTES_MAX:
                raise self.error("<default>", "class", name, f"the <default> classes would hold more than "
                                 f"{DEFAULT_ATTRIBUTES_MAX} attributes in all (each class copies its parent's)")
            table = {tag: dict(attributes) for tag, attributes in inherited.items()}
            for child in own:
                if child.tag not in ("joint", "geom") + ACTUATOR_TAGS:
                    self.skipped.append(f"<default> of <{child.tag}>")
                table.setdefault(child.tag, {}).update(child.attrib)
            self.defaults[name] = table
            nested = element.findall("default")
            for child in nested:
                if child.get("class") is None:
                    raise self.error("<default>", "class", None, "a nested <default> needs a class name")
            todo.extend((child, child.get("class"), table, depth + 1) for child in reversed(nested))

    def attributes(self, element, childclass):
        """The element's attributes over its default class's (class= or the enclosing childclass)."""
        name = element.get("class", childclass)
        if name not in self.defaults:
            raise self.error(f"<{element.tag}>", "class", name, "no <default class=...> has this name")
        merged = dict(self.defaults[name].get(element.tag, {}))
        merged.update(element.attrib)
        return merged

    # --- frames ----------------------------------------------------------------------------------

    def angle(self, value):
        return math.radians(value) if self.degrees else value

    def orientation(self, label, attrs):
        """The rotation of an element's orientation attributes (quat, axisangle, euler, xyaxes, zaxis)."""
        given = [key for key in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if key in attrs]
        if len(given) > 1:
            raise self.error(label, given[1], attrs[given[1]], f"only one orientation may be given ({', '.join(given)})")
        if not given:
            return np.eye(3)
        key = given[0]
        if key == "quat":
            q = self.numbers(label, key, attrs[key], 4)
            if not np.linalg.norm(q) > 1e-12:
                raise self.error(label, key, attrs[key], "a zero quaternion")
            return quaternion_matrix(q)
        if key == "axisangle":
            v = self.numbers(label, key, attrs[key], 4)
            return axis_angle_matrix(self.unit(label, key, v[:3]), self.angle(v[3]))
        if key == "euler":
            angles = self.numbers(label, key, attrs[key], 3)
            R = np.eye(3)
            for axis_name, value in zip(self.eulerseq, angles):
                axis = np.eye(3)["xyz".index(axis_name.lower())]
                turn = axis_angle_matrix(axis, self.angle(value))
                R = R @ turn if axis_name.islower() else turn @ R   # lower case: axes that turn with the frame
            return R
        if key == "xyaxes":
            v = self.numbers(label, key, attrs[key], 6)
            x = self.unit(label, key, v[:3])
            y = v[3:] - (v[3:] @ x) * x
            y = self.unit(label, key, y)
            return np.column_stack([x, y, np.cross(x, y)])
        z = self.unit(label, key, self.numbers(label, key, attrs[key], 3))
        return self.rotation_to(z)

    def unit(self, label, key, v):
        norm = float(np.linalg.norm(v))
        if not norm > 1e-12:
            raise self.error(label, key, v.tolist(), "a direction must not be zero")
        return v / norm

    @staticmethod
    def rotation_to(z):
        """The shortest rotation taking (0, 0, 1) to the unit vector z (MuJoCo's zaxis and fromto)."""
        c = float(z[2])
        axis = np.array([-z[1], z[0], 0.0])
        s = float(np.linalg.norm(axis))
        if s < 1e-14:
            return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
        return axis_angle_matrix(axis / s, math.atan2(s, c))

    # --- bodies ----------------------------------------------------------------------------------

    def contents(self, element, link, childclass, depth):
        """Joints, geoms, inertial and child bodies of a body (or the worldbody) into `link`."""
        if depth > DEPTH_MAX:
            raise self.error(link.element, "body", None, f"bodies nested deeper than {DEPTH_MAX}")
        geoms_mass = []
        inertial = None
        for child in element:
            if child.tag == "joint" or child.tag == "freejoint":
                if not link.robot:
                    raise self.error("<worldbody>", child.tag, None, "the worldbody cannot have joints")
                link.joints.append(self.joint(child, link, childclass))
            elif child.tag == "geom":
                geom, mass_props = self.geom(child, link, childclass, len(link.geoms))
                if geom is not None:
                    link.geoms.append(geom)
                if mass_props is not None:
                    geoms_mass.append(mass_props)
            elif child.tag == "inertial":
                inertial = child
            elif child.tag == "body":
                self.body(child, link, childclass, depth + 1)
            elif child.tag in SKIPPED_IN_BODY:
                self.skipped.append(f"<{child.tag}>")
            elif isinstance(child.tag, str):
                self.skipped.append(f"<{child.tag}> in a body")
        if not link.robot:
            return
        use_geoms = self.inertia_from_geom == "true" or (self.inertia_from_geom == "auto" and inertial is None)
        if use_geoms:
            self.lump(link, geoms_mass)
        elif inertial is not None:
            self.inertial(inertial, link)
        check_inertial(self.path, link.element, link.mass, link.inertia)

    def body(self, element, parent, childclass, depth):
        name = element.get("name")
        if not name:
            name = f"{parent.name}:body{sum(1 for l in self.links if l.parent == parent.name)}"
        label = f"<body name={name!r}>"
        if name in self.names:
            raise self.error(label, "name", name, "duplicate body name")
        self.names.add(name)
        attrs = element.attrib
        t = self.numbers(label, "pos", attrs.get("pos"), 3, [0, 0, 0])
        link = Link(name=name, parent=parent.name, t=t, R=self.orientation(label, attrs), element=label)
        self.links.append(link)
        self.contents(element, link, element.get("childclass", childclass), depth)

    def joint(self, element, link, childclass):
        attrs = {"type": "free"} if element.tag == "freejoint" else self.attributes(element, childclass)
        if element.tag == "freejoint":
            attrs.update(element.attrib)
        name = attrs.get("name") or f"{link.name}:joint{len(link.joints)}"
        label = f"<joint name={name!r}>"
        if name in self.joint_names:
            raise self.error(label, "name", name, "duplicate joint name")
        self.joint_names.add(name)
        kind = attrs.get("type", "hinge")
        self.joint_kinds[name] = kind
        if kind not in ("hinge", "slide", "ball", "free"):
            raise self.error(label, "type", kind, "expected hinge, slide, ball or free")
        for key in JOINT_EXTRAS:
            if key in attrs and np.any(self.numbers(label, key, attrs[key]) != 0):
                self.skipped.append(f"joint {key}")
        joint = Joint(name, kind)
        self.joint_objects[name] = joint
        if kind == "free":
            return joint
        for key, field in (("damping", "damping"), ("stiffness", "stiffness"), ("armature", "armature"),
                           ("frictionloss", "friction")):
            value = float(self.numbers(label, key, attrs.get(key), 1, [0.0])[0])
            if value < 0:
                raise self.error(label, key, attrs[key], "expected a value >= 0")
            if value and kind == "ball":
                self.skipped.append(f"ball joint {key}")
            elif value:
                setattr(joint, field, value)
        springref = float(self.numbers(label, "springref", attrs.get("springref"), 1, [0.0])[0])
        joint.springref = self.angle(springref) if kind == "hinge" else springref
        joint.anchor = self.numbers(label, "pos", attrs.get("pos"), 3, [0, 0, 0])
        joint.axis = self.unit(label, "axis", self.numbers(label, "axis", attrs.get("axis"), 3, [0, 0, 1]))
        if kind != "ball":
            ref = float(self.numbers(label, "ref", attrs.get("ref"), 1, [0.0])[0])
            joint.ref = self.angle(ref) if kind == "hinge" else ref
        limited = attrs.get("limited", "auto")
        if limited not in ("true", "false", "auto"):
            raise self.error(label, "limited", limited, "expected true, false or auto")
        if "range" in attrs and (limited == "true" or (limited == "auto" and self.autolimits)):
            low, high = self.numbers(label, "range", attrs["range"], 2)
            if low > high:
                raise self.error(label, "range", attrs["range"], "the lower end is above the upper")
            if kind == "ball":
                self.skipped.append("ball joint ranges")
            else:
                joint.lower, joint.upper = (self.angle(low), self.angle(high)) if kind == "hinge" else (low, high)
        return joint

    def keyframe(self, element, position, actuator_order):
        """A `<key>` as a [[keyframe]] table: its qpos entries of hinge and slide joints (MuJoCo's
        qpos is our coordinate, joints in the file's order) and its ctrl entries of the actuators
        read; a free or ball joint's pose, qvel, act and mocap poses are named as skipped."""
        name = element.get("name") or f"key{position}"
        label = f"<key name={name!r}>"
        joints, controls = {}, {}
        if element.get("qpos") is not None:
            qpos = self.numbers(label, "qpos", element.get("qpos"))
            widths = [(joint, {"free": 7, "ball": 4}.get(kind, 1)) for joint, kind in self.joint_kinds.items()]
            if qpos.size != sum(width for _, width in widths):
                raise self.error(label, "qpos", element.get("qpos"), f"expected {sum(w for _, w in widths)} numbers, "
                                                                    "one per coordinate of the model's joints")
            at = 0
            for joint, width in widths:
                if width == 1:
                    value = float(qpos[at])
                    known = self.joint_objects[joint]
                    low = -np.inf if known.lower is None else known.lower
                    high = np.inf if known.upper is None else known.upper
                    if not low <= value <= high:        # MuJoCo takes it; our loader would not
                        self.skipped.append("a keyframe's joint values outside the joint's range (clamped to it)")
                        value = float(np.clip(value, low, high))
                    joints[joint] = value
                else:
                    self.skipped.append("a keyframe's pose of free and ball joints")
                at += width
        if element.get("ctrl") is not None:
            ctrl = self.numbers(label, "ctrl", element.get("ctrl"))
            if ctrl.size != len(actuator_order):
                raise self.error(label, "ctrl", element.get("ctrl"), f"expected {len(actuator_order)} numbers, one per actuator")
            ranges = {a["name"]: a.get("ctrl_range") for a in self.actuators}
            for actuator, value in zip(actuator_order, ctrl):
                if actuator is not None:
                    low, high = ranges[actuator] or (-np.inf, np.inf)
                    if not low <= value <= high:    # MuJoCo clamps ctrl to ctrlrange; our loader would refuse it
                        self.skipped.append("a keyframe's controls outside the actuator's ctrlrange (clamped to it)")
                        value = float(np.clip(value, low, high))
                    controls[actuator] = float(value)
        for key in ("qvel", "act", "mpos", "mquat"):
            if element.get(key) is not None:
                self.skipped.append(f"a keyframe's {key}")
        return {"name": name, "joints": joints, "controls": controls}

    def actuator(self, element):
        """An actuator of `<actuator>` as an [[actuator]] table (docs/scene-format.md): `<motor>`,
        `<position kp kv>`, `<velocity kv>`, and `<general>` with a fixed gain and an affine (or no)
        bias, on a hinge or slide joint; gear's first entry; ctrlrange and forcerange where limited
        (MuJoCo's `ctrllimited`/`forcelimited`, "auto" meaning limited where a range is given)."""
        if element.tag not in ACTUATOR_TAGS:
            self.skipped.append(f"<{element.tag}> actuators")
            return
        # MuJoCo's actuator shortcuts share one default: a <motor ctrlrange> default reaches a
        # <position> too (their common attributes; kp, kv and the rest stay with their own tag)
        name_of_class = element.get("class", "main")
        if name_of_class not in self.defaults:
            raise self.error(f"<{element.tag}>", "class", name_of_class, "no <default class=...> has this name")
        attrs = {}
        for tag in ACTUATOR_TAGS:
            attrs.update({key: value for key, value in self.defaults[name_of_class].get(tag, {}).items()
                          if key in SHARED_ACTUATOR_ATTRIBUTES or tag == element.tag})
        attrs.update(element.attrib)
        name = attrs.get("name") or f"actuator{len(self.actuators)}"
        label = f"<{element.tag} name={name!r}>"
        joint = attrs.get("joint")
        if joint is None:
            self.skipped.append(f"<{element.tag}> actuators on tendons, sites or bodies")
            return
        kind = self.joint_kinds.get(joint)
        if kind is None:
            raise self.error(label, "joint", joint, "no joint of the model has this name")
        if kind not in ("hinge", "slide"):
            self.skipped.append(f"actuators on {kind} joints")
            return
        table = {"name": name, "joint": joint, "type": element.tag if element.tag != "general" else "general"}
        gears = self.numbers(label, "gear", attrs.get("gear"), None, [1.0])
        if not gears.size:      # (MuJoCo's six numbers; its first is the joint's)
            raise self.error(label, "gear", attrs.get("gear"), "expected at least one number")
        gear = float(gears[0])
        if gear != 1.0:
            table["gear"] = gear
        number = lambda key, default: float(self.numbers(label, key, attrs.get(key), 1, [default])[0])
        if element.tag == "position":
            table["kp"], table["kv"] = number("kp", 1.0), number("kv", 0.0)
        elif element.tag == "velocity":
            table["kv"] = number("kv", 1.0)
        elif element.tag == "general":
            if attrs.get("gaintype", "fixed") != "fixed" or attrs.get("biastype", "none") not in ("none", "affine") \
                    or attrs.get("dyntype", "none") != "none":
                self.skipped.append(f"<general> actuators other than a fixed gain with an affine bias ({label})")
                return
            table["gain"] = float(self.numbers(label, "gainprm", attrs.get("gainprm"), None, [1.0])[0])
            bias = self.numbers(label, "biasprm", attrs.get("biasprm"), None, [0.0, 0.0, 0.0])
            bias = np.concatenate([bias, np.zeros(3)])[:3] if attrs.get("biastype", "none") == "affine" else np.zeros(3)
            table["bias"] = [float(b) for b in bias]
        for key, limited in (("ctrlrange", "ctrllimited"), ("forcerange", "forcelimited")):
            flag = attrs.get(limited, "auto")
            if key in attrs and (flag == "true" or (flag == "auto" and self.autolimits)):
                table[key.replace("range", "_range")] = [float(v) for v in self.numbers(label, key, attrs[key], 2)]
        self.actuators.append(table)

    def inertial(self, element, link):
        label = f"{link.element} <inertial>"
        attrs = element.attrib
        link.mass = float(self.numbers(label, "mass", attrs.get("mass"), 1)[0])
        R = self.orientation(label, attrs)
        link.com = self.numbers(label, "pos", attrs.get("pos"), 3)
        if "fullinertia" in attrs:
            xx, yy, zz, xy, xz, yz = self.numbers(label, "fullinertia", attrs["fullinertia"], 6)
            tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        else:
            tensor = np.diag(self.numbers(label, "diaginertia", attrs.get("diaginertia"), 3))
        check_inertial(self.path, label, link.mass, tensor)
        link.inertia = R @ tensor @ R.T

    def lump(self, link, parts):
        """A body's inertial from its geoms' (mass, centre, tensor about the centre, body frame)."""
        mass = sum(m for m, _, _ in parts)
        link.mass = float(mass)
        if not mass > 0:
            return
        com = sum(m * c for m, c, _ in parts) / mass
        tensor = np.zeros((3, 3))
        for m, c, I in parts:
            d = c - com
            tensor += I + m * (d @ d * np.eye(3) - np.outer(d, d))
        link.com, link.inertia = com, tensor

    def geom(self, element, link, childclass, index):
        attrs = self.attributes(element, childclass)
        name = attrs.get("name") or f"geom{index}"
        label = f"<geom name={name!r}>" if attrs.get("name") else f"{link.element} <geom #{index + 1}>"
        kind = attrs.get("type", "sphere")
        size = self.numbers(label, "size", attrs.get("size"), None, [])
        t = self.numbers(label, "pos", attrs.get("pos"), 3, [0, 0, 0])
        R = self.orientation(label, attrs)
        if "fromto" in attrs:
            if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
                raise self.error(label, "fromto", attrs["fromto"], "only a capsule, cylinder, box or ellipsoid takes fromto")
            ends = self.numbers(label, "fromto", attrs["fromto"], 6)
            axis = ends[3:] - ends[:3]
            half = 0.5 * float(np.linalg.norm(axis))
            if not half > 0:
                raise self.error(label, "fromto", attrs["fromto"], "the two ends coincide")
            t, R = 0.5 * (ends[:3] + ends[3:]), self.rotation_to(axis / (2 * half))
            if kind in ("capsule", "cylinder"):     # size: radius; the half length comes from the ends
                size = np.array([size[0] if size.size else 0.0, half])
            else:                                    # size: the x and y half sizes; z from the ends
                size = np.array([size[0] if size.size > 0 else 0.0, size[1] if size.size > 1 else 0.0, half])
        need = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3, "plane": 0}
        if kind in need and (size.size < need[kind] or np.any(size[:need[kind]] <= 0)):
            raise self.error(label, "size", attrs.get("size"), f"a {kind} needs {need[kind]} sizes > 0")
        contype = int(self.numbers(label, "contype", attrs.get("contype"), 1, [1])[0])
        conaffinity = int(self.numbers(label, "conaffinity", attrs.get("conaffinity"), 1, [1])[0])
        color = None
        if "rgba" in attrs:
            color = tuple(self.numbers(label, "rgba", attrs["rgba"], 4))
        elif attrs.get("material") in self.materials:
            color = tuple(self.materials[attrs["material"]])
        collide = bool(contype or conaffinity)
        shape, volume, moments, hull_mass = None, None, None, None
        r = size[0] if size.size else 0.0
        if kind == "sphere":
            shape, volume = {"type": "sphere", "radius": float(r)}, 4.0 / 3.0 * math.pi * r ** 3
            moments = np.full(3, 0.4 * r * r)
        elif kind in ("capsule", "cylinder"):
            h = 2.0 * size[1]
            shape = {"type": kind, "radius": float(r), "height": float(h)}
            if kind == "cylinder":
                volume = math.pi * r * r * h
                moments = np.array([(3 * r * r + h * h) / 12, (3 * r * r + h * h) / 12, r * r / 2])
            else:
                v_c, v_s = math.pi * r * r * h, 4.0 / 3.0 * math.pi * r ** 3
                volume = v_c + v_s
                side = (v_c * (3 * r * r + h * h) / 12 + v_s * (0.4 * r * r + 0.25 * h * h + 0.375 * h * r)) / volume
                moments = np.array([side, side, (v_c * r * r / 2 + v_s * 0.4 * r * r) / volume])
        elif kind == "box":
            a, b, c = size[:3]
            shape, volume = {"type": "box", "size": (2 * size[:3]).tolist()}, 8 * a * b * c
            moments = np.array([b * b + c * c, a * a + c * c, a * a + b * b]) / 3.0
        elif kind == "ellipsoid":
            a, b, c = size[:3]
            volume = 4.0 / 3.0 * math.pi * a * b * c
            moments = np.array([b * b + c * c, a * a + c * c, a * a + b * b]) / 5.0
            self.skipped.append("ellipsoid shapes (their mass is kept)")
        elif kind == "plane":
            shape = {"type": "plane", "normal": [0.0, 0.0, 1.0], "offset": 0.0}
        elif kind == "mesh":
            mesh = self.meshes.get(attrs.get("mesh"))
            if mesh is None:
                raise self.error(label, "mesh", attrs.get("mesh"), "no <mesh> asset has this name")
            drawn = visual_mesh(self.path, label, mesh[0], mesh[1])
            if drawn is not None:   # drawn in the geom's frame as written (MuJoCo's re-centring moves frame and vertices alike)
                link.geoms.append(Geom(f"{name}:mesh", None, t, R, color=color, collide=False, mesh=drawn))
            shape = mesh_hull(self.path, label, mesh[0], mesh[1])
            if shape is not None:   # its convex hull, with the hull's mass properties (MuJoCo's inertia="convex")
                volume, centre, tensor = mass_properties(shape["vertices"], 1.0)
                hull_mass = (t + R @ centre, R @ tensor @ R.T)     # centre and unit-mass tensor, link frame
            else:                   # a flat mesh: the thin box of its bounds
                centre, extent = mesh_box(self.path, label, mesh[0], mesh[1])
                shape, t = {"type": "box", "size": extent.tolist()}, t + R @ centre
                volume = float(np.prod(extent))
                moments = np.array([extent[1] ** 2 + extent[2] ** 2, extent[0] ** 2 + extent[2] ** 2,
                                    extent[0] ** 2 + extent[1] ** 2]) / 12
                self.skipped.append("flat collision meshes (each collides as the thin box of its bounds, with its inertia)")
        else:
            self.skipped.append(f"{kind} geoms")
        mass_props = None
        if (moments is not None or hull_mass is not None) and link.robot:
            if "mass" in attrs:
                mass = float(self.numbers(label, "mass", attrs["mass"], 1)[0])
            else:
                mass = float(self.numbers(label, "density", attrs.get("density"), 1, [1000.0])[0]) * volume
            if mass < 0:
                raise self.error(label, "mass", mass, "a geom's mass must be >= 0")
            if hull_mass is not None:
                mass_props = (mass, hull_mass[0], mass * hull_mass[1])
            else:
                mass_props = (mass, t, R @ np.diag(moments * mass) @ R.T)
        if shape is not None and collide and (contype, conaffinity) != (1, 1):
            for key, value in (("contype", contype), ("conaffinity", conaffinity)):
                if not MASK_RANGE[0] <= value <= MASK_RANGE[1]:
                    raise self.error(label, key, attrs.get(key), "expected a 32-bit integer bit mask")
            shape |= {"contype": contype, "conaffinity": conaffinity}   # MuJoCo's pair rule, kept as written
        geom = None if shape is None else Geom(name, shape, t, R, color=color, collide=collide, visible=kind != "mesh")
        return geom, mass_props


def load_mjcf(path, joint_positions=None):
    """Read an MJCF file into a `physics.io.scene.Scene` (the TOML loader's model, same checks).

    joint_positions: joint name -> MuJoCo qpos of the joint (a number for hinge and slide, a
    quaternion (w, x, y, z) for a ball, 7 numbers (position, quaternion) for a free joint); absent
    joints at their `ref` (the file's pose). Raises SceneError naming the file and the element; warns
    (ModelWarning) once with what it skipped. Scene nodes: `world` (the worldbody) and one per body,
    named as the body (its frame; an unnamed body is PARENT:bodyK), `BODY:body` the dynamic body of
    a moving body, `BODY:JOINT` its gimbal stages, `BODY:GEOM` its shapes.
    """
    reader = _Reader(path)
    title, links = reader.read()
    moving = sum(len(link.joints) for link in links)
    description = f"{title} from {Path(path).name}: {len(links) - 1} bodies, {moving} joints" + (
        f", {len(reader.actuators)} actuators." if reader.actuators else ".")
    return build_scene(str(path), title, links, reader.skipped, description, positions=joint_positions,
                       gravity=reader.gravity, actuators=reader.actuators, keyframes=reader.keyframes)
