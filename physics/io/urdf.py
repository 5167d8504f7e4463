"""URDF in, the scene model out: `load_urdf(path)` (the mapping: `physics.io.articulated`).

URDF (ROS's Unified Robot Description Format): `<link>`s with an `<inertial>` (origin, mass,
tensor about the centre of mass in the inertial frame), `<visual>` and `<collision>` geometry, and
`<joint>`s naming a parent and a child link, the child frame's `<origin>` in the parent frame
(xyz, then rpy: R = Rz(yaw) Ry(pitch) Rx(roll), fixed axes) and an `<axis>` in the child frame.

Joints: revolute → hinge with its `<limit lower upper>`, continuous → hinge, prismatic → slider
with its limits, fixed → a fixed child node, floating → a free dynamic body, spherical (PyBullet's
extension) → a ball joint at the joint's origin, as PyBullet and MuJoCo read it; planar is named in
the warning and held fixed. The root link is fixed to the world unless `floating_base=True`.

Geometry: box, sphere, cylinder (axis z) and pybullet's capsule (axis z, `length` of the
cylindrical part) map to scene shapes; a collision mesh (read by trimesh) collides as its convex
hull (physics.model.hull; a flat mesh as the thin box of its bounds, named in the warning). A link with
visual meshes is drawn by them (the app reads the files) and its collision shapes collide unseen;
otherwise a link with collision geometry is drawn by it (coloured by its first visual's material),
and a link without by its visuals, which never collide.
"""
import math
from pathlib import Path

import numpy as np

from physics.io.articulated import Geom, Joint, Link, build_scene, check_inertial, numbers, read_xml
from physics.io.errors import SceneError
from physics.io.mesh_files import mesh_box, mesh_hull, visual_mesh

__all__ = ["load_urdf"]


def rpy_matrix(rpy):
    """R = Rz(yaw) Ry(pitch) Rx(roll): roll about x first, all about the parent's fixed axes (URDF)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


class _Reader:
    def __init__(self, path):
        self.path = Path(path)
        self.skipped = []

    def error(self, element, key, value, reason):
        return SceneError(self.path, element, key, value, reason)

    def numbers(self, element, key, text, count=None, default=None, positive=False):
        return numbers(self.path, element, key, text, count, default, positive)

    def origin(self, parent, label):
        """(t, R) of an <origin> child of `parent` (identity when absent)."""
        origin = parent.find("origin")
        if origin is None:
            return np.zeros(3), np.eye(3)
        return (self.numbers(label, "origin.xyz", origin.get("xyz"), 3, [0, 0, 0]),
                rpy_matrix(self.numbers(label, "origin.rpy", origin.get("rpy"), 3, [0, 0, 0])))

    def name(self, element, kind):
        name = element.get("name")
        if not name:
            raise self.error(f"<{kind}>", "name", None, f"every <{kind}> needs a non-empty name")
        return name

    def read(self):
        root = read_xml(self.path)
        if root.tag != "robot":
            raise self.error(f"<{root.tag}>", None, None, "a URDF file's root element is <robot>")
        title = root.get("name") or self.path.stem
        self.materials = {}
        for material in root.findall("material"):
            color = material.find("color")
            if material.get("name") and color is not None:
                self.materials[material.get("name")] = self.numbers(f"<material name={material.get('name')!r}>", "rgba",
                                                                    color.get("rgba"), 4, [0.7, 0.7, 0.72, 1])
        links = {}
        for element in root.findall("link"):
            name = self.name(element, "link")
            if name in links:
                raise self.error(f"<link name={name!r}>", "name", name, "duplicate link name")
            links[name] = self.link(element, name)
        if not links:
            raise self.error("<robot>", "link", None, "a robot needs at least one <link>")
        parents, names = {}, set()
        for element in root.findall("joint"):
            name = self.name(element, "joint")
            if name in names:
                raise self.error(f"<joint name={name!r}>", "name", name, "duplicate joint name")
            names.add(name)
            self.joint(element, name, links, parents)
        roots = [name for name in links if name not in parents]
        if len(roots) != 1:
            raise self.error("<robot>", "link", roots, "the links must form one tree: expected exactly one root link "
                                                       f"(a link no joint has as child), found {len(roots)}")
        children = {}
        for child, parent in parents.items():
            children.setdefault(parent, []).append(child)
        reached, stack = set(), [roots[0]]
        while stack:
            name = stack.pop()
            reached.add(name)
            stack.extend(children.get(name, []))
        if len(reached) != len(links):
            cycle = sorted(set(links) - reached)
            raise self.error(f"<link name={cycle[0]!r}>", None, None, f"joints form a cycle through {', '.join(cycle)}")
        for tag in ("transmission", "gazebo"):
            if root.find(tag) is not None:
                self.skipped.append(f"<{tag}>")
        order = [links[roots[0]]] + [links[name] for name in links if name != roots[0]]
        return title, order

    def link(self, element, name):
        label = f"<link name={name!r}>"
        link = Link(name=name, parent=None, t=np.zeros(3), R=np.eye(3), element=label)
        inertial = element.find("inertial")
        if inertial is not None:
            t, R = self.origin(inertial, label)
            mass_element = inertial.find("mass")
            link.mass = float(self.numbers(label, "inertial.mass", None if mass_element is None else mass_element.get("value"), 1, [0.0])[0])
            tensor = np.zeros((3, 3))
            matrix = inertial.find("inertia")
            if matrix is not None:
                get = lambda key: float(self.numbers(label, f"inertia.{key}", matrix.get(key), 1, [0.0])[0])
                ixx, iyy, izz, ixy, ixz, iyz = (get(k) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"))
                tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
            check_inertial(self.path, label, link.mass, tensor)
            link.com, link.inertia = t, R @ tensor @ R.T
        collisions = element.findall("collision")
        visuals = element.findall("visual")
        color = None
        for visual in visuals:
            color = self.color(visual, label)
            if color is not None:
                break
        drawn = []     # the visual meshes: with them the link is drawn by its meshes, its collision shapes unseen
        for k, visual in enumerate(visuals):
            shape = visual.find("geometry/mesh")
            if shape is not None:
                drawn.append(self.mesh_visual(visual, shape, label, f"visual{k}" if visual.get("name") is None else visual.get("name")))
        drawn = [geom for geom in drawn if geom is not None]
        for k, collision in enumerate(collisions):
            geom = self.geometry(collision, label, f"collision{k}" if collision.get("name") is None else collision.get("name"), True)
            if geom is not None:
                geom.color, geom.visible = color, not drawn
                link.geoms.append(geom)
        if not collisions and not drawn:
            for k, visual in enumerate(visuals):
                geom = self.geometry(visual, label, f"visual{k}" if visual.get("name") is None else visual.get("name"), False)
                if geom is not None:
                    geom.color = self.color(visual, label)
                    link.geoms.append(geom)
        link.geoms += drawn
        return link

    def mesh_visual(self, visual, shape, label, name):
        """A <visual>'s mesh as a drawn Geom (None when its scale mirrors it: not drawn, named)."""
        t, R = self.origin(visual, label)
        filename = shape.get("filename")
        if not filename:
            raise self.error(label, "visual.geometry.mesh.filename", None, "a <mesh> needs a filename")
        scale = self.numbers(label, "visual.geometry.mesh.scale", shape.get("scale"), 3, [1, 1, 1])
        mesh = visual_mesh(self.path, label, self.resolve(filename), scale)
        if mesh is None:
            self.skipped.append("mirrored visual meshes (negative scale)")
            return None
        return Geom(name, None, t, R, color=self.color(visual, label), collide=False, mesh=mesh)

    def color(self, visual, label):
        material = visual.find("material")
        if material is None:
            return None
        color = material.find("color")
        if color is not None:
            return tuple(self.numbers(label, "material.color.rgba", color.get("rgba"), 4, [0.7, 0.7, 0.72, 1]))
        value = self.materials.get(material.get("name"))
        return None if value is None else tuple(value)

    def geometry(self, element, label, name, collide):
        t, R = self.origin(element, label)
        geometry = element.find("geometry")
        if geometry is None or len(geometry) == 0:
            raise self.error(label, f"{element.tag}.geometry", None, "a <visual> or <collision> needs a <geometry>")
        shape = geometry[0]
        where = f"{element.tag}.geometry.{shape.tag}"
        if shape.tag == "box":
            size = self.numbers(label, f"{where}.size", shape.get("size"), 3, positive=True)
            return Geom(name, {"type": "box", "size": size.tolist()}, t, R, collide=collide)
        if shape.tag == "sphere":
            radius = self.numbers(label, f"{where}.radius", shape.get("radius"), 1, positive=True)[0]
            return Geom(name, {"type": "sphere", "radius": float(radius)}, t, R, collide=collide)
        if shape.tag in ("cylinder", "capsule"):
            radius = self.numbers(label, f"{where}.radius", shape.get("radius"), 1, positive=True)[0]
            length = self.numbers(label, f"{where}.length", shape.get("length"), 1, positive=True)[0]
            return Geom(name, {"type": shape.tag, "radius": float(radius), "height": float(length)}, t, R, collide=collide)
        if shape.tag == "mesh":
            filename = shape.get("filename")
            if not filename:
                raise self.error(label, f"{where}.filename", None, "a <mesh> needs a filename")
            scale = self.numbers(label, f"{where}.scale", shape.get("scale"), 3, [1, 1, 1])
            hull = mesh_hull(self.path, label, self.resolve(filename), scale)
            if hull is not None:    # the convex hull of the mesh, in the collision element's frame
                return Geom(name, hull, t, R, collide=collide)
            centre, size = mesh_box(self.path, label, self.resolve(filename), scale)
            self.skipped.append("flat collision meshes (each collides as the thin box of its bounds)")
            return Geom(name, {"type": "box", "size": size.tolist()}, t + R @ centre, R, collide=collide)
        self.skipped.append(f"<{shape.tag}> geometry")
        return None

    def resolve(self, filename):
        """A mesh path: relative to the URDF's folder; package://NAME/rest is looked up as `rest` in
        the URDF's folder and its parents (a ROS package is not required)."""
        if filename.startswith("file://"):
            filename = filename[len("file://"):]
        if filename.startswith("package://"):
            whole = filename[len("package://"):]
            for rest in (whole, whole.split("/", 1)[-1]):   # with and without the package's name
                for folder in (self.path.parent, *self.path.parent.parents):
                    if (folder / rest).is_file():
                        return folder / rest
            return self.path.parent / whole
        path = Path(filename)
        return path if path.is_absolute() else self.path.parent / path

    def joint(self, element, name, links, parents):
        label = f"<joint name={name!r}>"
        kind = element.get("type")
        if kind not in ("revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical"):
            raise self.error(label, "type", kind,
                             "expected revolute, continuous, prismatic, fixed, floating, planar or spherical")
        ends = {}
        for end in ("parent", "child"):
            found = element.find(end)
            link = None if found is None else found.get("link")
            if link is None:
                raise self.error(label, f"{end}.link", None, f"a joint needs a <{end} link=...>")
            if link not in links:
                raise self.error(label, f"{end}.link", link, "no <link> has this name")
            ends[end] = link
        if ends["parent"] == ends["child"]:
            raise self.error(label, "child.link", ends["child"], "a joint's child is its parent (a cycle)")
        if ends["child"] in parents:
            raise self.error(label, "child.link", ends["child"], "this link is already the child of another joint "
                                                                 "(the links must form a tree)")
        parents[ends["child"]] = ends["parent"]
        child = links[ends["child"]]
        child.parent = ends["parent"]
        child.t, child.R = self.origin(element, label)
        for tag in ("mimic", "safety_controller", "calibration"):
            if element.find(tag) is not None:
                self.skipped.append(f"joint <{tag}>")
        dynamics = element.find("dynamics")
        if kind == "fixed":
            return
        if kind == "planar":
            self.skipped.append("planar joints (held fixed)")
            return
        if kind == "floating":
            child.joints.append(Joint(name, "free"))
            return
        if kind == "spherical":     # PyBullet's and MuJoCo's reading: a ball joint at the joint's origin
            if dynamics is not None and any(float(self.numbers(label, f"dynamics.{key}", dynamics.get(key), 1, [0.0])[0])
                                            for key in ("damping", "friction")):
                self.skipped.append("<dynamics> on spherical joints")
            if element.find("limit") is not None:
                self.skipped.append("<limit> on spherical joints")
            child.joints.append(Joint(name, "ball"))
            return
        axis_element = element.find("axis")
        axis = self.numbers(label, "axis.xyz", None if axis_element is None else axis_element.get("xyz"), 3, [1, 0, 0])
        norm = float(np.linalg.norm(axis))
        if not norm > 1e-9:
            raise self.error(label, "axis.xyz", axis.tolist(), "a joint axis must not be zero")
        joint = Joint(name, "slide" if kind == "prismatic" else "hinge", axis=axis / norm)
        if dynamics is not None:    # URDF's viscous damping is the joint's damper, its Coulomb friction its friction
            for key in ("damping", "friction"):
                value = float(self.numbers(label, f"dynamics.{key}", dynamics.get(key), 1, [0.0])[0])
                if value < 0.0:
                    raise self.error(label, f"dynamics.{key}", value, f"expected a {key} >= 0")
                setattr(joint, key, value)
        limit = element.find("limit")
        if kind != "continuous" and limit is not None:
            joint.lower = float(self.numbers(label, "limit.lower", limit.get("lower"), 1, [0.0])[0])
            joint.upper = float(self.numbers(label, "limit.upper", limit.get("upper"), 1, [0.0])[0])
            if joint.lower > joint.upper:
                raise self.error(label, "limit.lower", joint.lower, f"lower limit above upper ({joint.upper})")
            if joint.lower == joint.upper == 0.0 and limit.get("lower") is None and limit.get("upper") is None:
                joint.lower = joint.upper = None   # <limit effort velocity/> alone sets no range
        child.joints.append(joint)


def load_urdf(path, joint_positions=None, floating_base=False, ground=True):
    """Read a URDF file into a `physics.io.scene.Scene` (the TOML loader's model, same checks).

    joint_positions: joint name -> coordinate (rad or m; 7 numbers, position and quaternion
    (w, x, y, z), for a floating joint) to load the robot at; absent joints at 0. floating_base: the
    root link is a free body instead of fixed to the world. ground: add a ground plane at the
    model's z = 0. Raises SceneError naming the file and the element; warns (ModelWarning) once
    with what it skipped. Scene nodes: one per link, named as the link (its frame), `LINK:body` the
    dynamic body of a moving link (at its centre of mass, principal axes), `LINK:NAME` its shapes.
    """
    reader = _Reader(path)
    title, links = reader.read()
    moving = sum(1 for link in links if link.joints)
    description = f"{title} from {Path(path).name}: {len(links)} links, {moving} moving joints."
    return build_scene(str(path), title, links, reader.skipped, description, positions=joint_positions,
                       floating_base=floating_base, ground=ground)
