"""Scene files: TOML in, a validated `Scene` of node arrays out (format: docs/scene-format.md).

Frames: every per-node quantity in a scene file is in the node's *parent* frame (the world for a
root) except `applied_force`, `applied_torque` and event impulses/points, which are world-frame.
Quaternions are (w, x, y, z); angular velocity omega satisfies dR/dt = hat(omega) R.

Any bad input raises one `SceneError` naming the file, the node, the key and the value; nothing is
half-loaded. Every number must lie in the range physics.core.validation states for its key (finite is not
enough: the ranges keep the products a step forms finite), and the text's nesting is bounded before
it is parsed. Nodes may name a parent defined later in the file: the loader orders them parent
before child (keeping file order where it can), which the hierarchy's arrays require.
"""
import contextlib
import functools
import gc
import importlib
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from physics.core import validation as limits
from physics.core.files import read_regular
from physics.model.rigid_body import inertia_from_shape
from physics.core.settings import SettingError, Settings
from physics.core.validation import Invalid, short_repr
from physics.io.errors import SceneError
from physics.io.mesh_files import mesh_points
from physics.model.hull import convex_hull

MOTIONS = ("fixed", "kinematic", "dynamic")
SHAPES = {  # type -> required parameters (all in the node's own units, before its scale)
    "box": ("size",),           # full extents along the node's x, y, z
    "sphere": ("radius",),
    "cylinder": ("radius", "height"),  # axis along the node's y
    "capsule": ("radius", "height"),   # height of the cylindrical part, axis along y
    "plane": ("normal", "offset"),     # points x with normal . x = offset; static geometry only
    "hull": ("vertices",),             # the convex hull of points, or of a mesh file's vertices (`file`, `scale`)
}
HULL_KEYS = ("vertices", "file", "scale")
HULL_POINTS_MAX = 100_000   # points given inline to one hull (a mesh file has MESH_FACES_MAX)
QUATERNION_TOLERANCE = 1e-3  # |q| may differ from 1 by this much (rounded decimals in files)
AXES_INDEPENDENT = 1e-3  # a six_axis joint's slides (and hinges) span their directions' space: smallest singular value

NODE_KEYS = (
    "name", "parent", "motion", "translation", "rotation", "scale", "velocity", "angular_velocity",
    "acceleration", "angular_acceleration", "mass", "inertia", "shape", "color",
    "applied_force", "applied_torque", "friction", "restitution", "mesh", "visible", "opacity",
)
MESH_KEYS = ("file", "scale")
JOINT_TYPES = ("ball", "hinge", "slider", "fixed", "distance", "rope", "six_axis")
JOINT_KEYS = ("type", "a", "b", "anchor", "anchor_b", "axis", "length", "lower", "upper", "motor_speed", "motor_force",
              "collide_connected", "name", "coordinate", "stiffness", "spring_reference", "damping", "armature", "axes",
              "friction")
# One axis of a six_axis joint (`axes`, slides first): a joint of its own, named, with a hinge's or a slider's keys
AXIS_KEYS = ("type", "axis", "name", "lower", "upper", "coordinate", "ref", "stiffness", "spring_reference", "damping",
             "armature", "friction")
AXIS_KIND = 7       # physics.constraints.joints.AXIS: the joint of one axis of a six_axis joint
JOINT_TERMS = (("coordinate", -limits.LENGTH_MAX, limits.LENGTH_MAX),   # a hinge's or slider's (key, low, high)
               ("spring_reference", -limits.LENGTH_MAX, limits.LENGTH_MAX), ("stiffness", 0.0, limits.FORCE_MAX),
               ("damping", 0.0, limits.FORCE_MAX), ("armature", 0.0, limits.FORCE_MAX), ("friction", 0.0, limits.FORCE_MAX))
_AXIAL = ("axis", "lower", "upper", "motor_speed", "motor_force", "coordinate", "stiffness", "spring_reference", "damping",
          "armature", "friction")
ACTUATOR_TYPES = ("motor", "position", "velocity", "general")
ACTUATOR_KEYS = ("name", "joint", "type", "gear", "kp", "kv", "gain", "bias", "ctrl_range", "force_range", "ctrl")
# An actuator on a node (physics.dynamics.driving): a kinematic node's velocity or position along an axis of
# its own frame, or a motor's force or torque on a dynamic node.
NODE_ACTUATOR_TYPES = {"kinematic": ("velocity", "position"), "dynamic": ("motor",)}
NODE_ACTUATOR_KEYS = ("name", "node", "type", "gear", "linear", "angular", "speed", "ctrl_range", "ctrl")
LAUNCHER_KEYS = ("name", "node", "from", "axis", "speed")
KEY_KEYS = ("key", "actuator", "value", "rate", "release", "launch")
KEYFRAME_KEYS = ("name", "joints", "controls")
# The keys a scene may bind ([[key]]): letters, as the app names them; the app's own keys come first.
BINDABLE_KEYS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
ACTUATOR_TYPE_KEYS = {"motor": (), "position": ("kp", "kv"), "velocity": ("kv",), "general": ("gain", "bias")}
JOINT_TYPE_KEYS = {  # beyond type, a, b, anchor: a key another type owns is an error, not ignored
    "ball": (), "fixed": (), "hinge": _AXIAL, "slider": _AXIAL,
    "distance": ("anchor_b", "length"), "rope": ("anchor_b", "length"), "six_axis": ("axes",),
}
DEFAULT_FRICTION, DEFAULT_RESTITUTION = 0.6, 0.0   # Box2D's defaults
EVENT_KEYS = ("time", "node", "impulse", "point")
TOP_LEVEL_KEYS = ("title", "description", "world", "node", "event", "joint", "actuator", "launcher", "key", "keyframe",
                  "view")
VIEW_KEYS = ("follow",)
KINEMATIC_ONLY = ("acceleration", "angular_acceleration")
MOVING_ONLY = ("velocity", "angular_velocity")  # kinematic or dynamic
DYNAMIC_ONLY = ("mass", "inertia", "applied_force", "applied_torque")
DEFAULT_COLOR = (0.7, 0.7, 0.72)


@dataclass(frozen=True)
class Event:
    """A world-frame impulse (N s) on `node` at `time` (s), through `point_world` (None = its origin)."""

    time: float
    node: int
    impulse_world: np.ndarray
    point_world: np.ndarray | None


@dataclass(frozen=True)
class Scene:
    """A loaded scene: node arrays in parent-before-child order (parent[i] < i) and world settings."""

    path: str
    title: str
    description: str
    world: dict                 # [world] values given in the file, validated by Settings
    names: tuple
    parent: np.ndarray          # (N,) int, -1 = the world
    motion: np.ndarray          # (N,) str
    translation: np.ndarray     # (N, 3) parent frame
    rotation: np.ndarray        # (N, 4) unit quaternions (w, x, y, z), parent frame
    scale: np.ndarray           # (N,)
    velocity: np.ndarray        # (N, 3) parent frame
    angular_velocity: np.ndarray        # (N, 3) parent frame
    acceleration: np.ndarray            # (N, 3) parent frame, kinematic nodes only (else 0)
    angular_acceleration: np.ndarray    # (N, 3) parent frame, kinematic nodes only (else 0)
    mass: np.ndarray            # (N,) kg, 0 for non-dynamic nodes
    inertia_body: np.ndarray    # (N, 3) principal moments along the node's axes, kg m², 0 if not dynamic
    applied_force: np.ndarray   # (N, 3) world frame, constant, dynamic nodes only
    applied_torque: np.ndarray  # (N, 3) world frame, constant, dynamic nodes only
    shapes: list                # N dicts (or None)
    colors: np.ndarray          # (N, 3) in [0, 1]
    events: tuple = field(default_factory=tuple)
    friction: np.ndarray | None = None      # (N,) Coulomb μ of the node's shapes (mixed sqrt(μa μb))
    restitution: np.ndarray | None = None   # (N,) e (mixed max(ea, eb))
    joints: tuple = field(default_factory=tuple)   # dicts: kind, a, b (node index, -1 = world), anchor, ...
    warnings: tuple = field(default_factory=tuple)  # an imported model's one warning: what it holds that is not modelled
    toml_text: str | None = None    # an imported model (URDF, MJCF) as scene-format TOML text; None for a TOML file
    meshes: list | None = None      # N entries: None or {"file": absolute path, "scale": [sx, sy, sz]}, drawn only
    visible: np.ndarray | None = None   # (N,) bool: the app draws the node's shape (False: it collides, unseen)
    opacity: np.ndarray | None = None   # (N,) in (0, 1]: the app draws the node's shape see-through below 1 (no physics)
    view: dict = field(default_factory=dict)    # [view]: how the app first shows it ({"follow": node index}); no physics
    drives: tuple = field(default_factory=tuple)    # [[actuator]]s on nodes (physics.dynamics.driving): dicts, node an index
    launchers: tuple = field(default_factory=tuple)  # [[launcher]]s: dicts, node and origin as indices
    keys: tuple = field(default_factory=tuple)      # [[key]]s: what a key does (the app binds them)
    keyframes: tuple = field(default_factory=tuple)  # [[keyframe]]s: dicts name, joints {name: q}, controls {name: ctrl}

    def settings(self):
        """A fresh `Settings` with this file's [world] values applied over the defaults."""
        settings = Settings()
        settings.update(self.world)
        return settings


def scaled_shape(shape, scale):
    """The shape dict with its lengths multiplied by `scale` (a node's world scale)."""
    out = dict(shape)
    for key in ("size", "radius", "height", "vertices"):
        if key in out:
            out[key] = (np.asarray(out[key], float) * scale).tolist() if key in ("size", "vertices") else out[key] * scale
    return out


def _read_only(values):
    array = np.array(values, float)
    array.flags.writeable = False
    return array


# A node's defaults, shared by every node that leaves the key out (10⁵ nodes would make 10⁶ arrays
# of three); read-only, so that no use can change another node's value.
_ZERO, _IDENTITY, _DEFAULT_COLOR = _read_only([0.0, 0.0, 0.0]), _read_only([1.0, 0.0, 0.0, 0.0]), _read_only(DEFAULT_COLOR)


@functools.lru_cache(maxsize=None)
def _known_keys(allowed):
    """A table's tuple of keys as a set (one hash per key tested, not a scan of the tuple)."""
    return frozenset(allowed)


def _shape_key(shape):
    """A checked shape table as a hashable value (its lists as tuples): equal tables, equal keys."""
    if shape is None:
        return None
    return tuple((key, tuple(map(tuple, value)) if key == "vertices" else tuple(value) if isinstance(value, list)
                  else value) for key, value in sorted(shape.items()))


IMPORTED = {".urdf": ("physics.io.urdf", "load_urdf"), ".xml": ("physics.io.mjcf", "load_mjcf"), ".mjcf": ("physics.io.mjcf", "load_mjcf")}
SCENE_SUFFIXES = (".toml", *IMPORTED)   # what load_scene reads: scene files, URDF and MJCF models


SCENE_BYTES_MAX = 64 * 2**20    # a scene file larger than this is refused before it is read (docs/scene-format.md, "Limits")


SHIPPED_SCENES = Path(__file__).resolve().parents[2] / "assets" / "scenes"


def load_scene(path):
    """Read and validate a scene file; raises SceneError (file, node, key, value) on bad input.

    A `.urdf` path is read by `physics.load_urdf`, an `.xml` or `.mjcf` one by `physics.load_mjcf`
    (with their defaults): every command and window that opens a scene opens a robot model too.
    A bare name that is no file (`tank`: no folder, no suffix) is the shipped scene of that name,
    as the app's browser names them."""
    path = Path(path)
    if not path.exists() and path.parent == Path(".") and not path.suffix and (SHIPPED_SCENES / f"{path}.toml").is_file():
        path = SHIPPED_SCENES / f"{path}.toml"
    if path.suffix.lower() in IMPORTED:     # by name: the robot readers import this module
        module, function = IMPORTED[path.suffix.lower()]
        return getattr(importlib.import_module(module), function)(path)
    try:       # a FIFO or a device is refused, never waited on; a huge file before it is read whole
        text = read_regular(path, SCENE_BYTES_MAX).decode("utf-8")
    except OSError as error:
        said = f"cannot read the file ({error.strerror or error})"
        if not path.exists() and path.parent == Path(".") and not path.suffix:     # a name: say which there are
            names = ", ".join(p.stem for p in sorted(SHIPPED_SCENES.glob("*.toml")))
            said = f"no such file, nor a shipped scene of that name (they are: {names})"
        raise SceneError(path, None, None, None, said) from None
    except UnicodeDecodeError as error:
        raise SceneError(path, None, None, None, f"not UTF-8 text ({error.reason})") from None
    except ValueError as error:     # a NUL in the name
        raise SceneError(path, None, None, None, f"cannot read the file ({error})") from None
    return scene_from_text(text, path)


def scene_from_text(text, path="<scene>"):
    """Validate a scene file's text (`path` names it in errors: a recording carries its scene's text)."""
    try:
        depth = limits.nesting_depth(text)
        if depth > limits.NESTING_MAX:
            raise SceneError(path, None, None, None, f"brackets and braces nest {depth} deep; at most {limits.NESTING_MAX} levels")
        with _collection_paused():
            data = tomllib.loads(text)
    except RecursionError:   # not reached within NESTING_MAX; kept so no parse can end in a traceback
        raise SceneError(path, None, None, None, "nested too deep to parse") from None
    except tomllib.TOMLDecodeError as error:
        raise SceneError(path, None, None, None, f"TOML syntax error: {error}") from None
    with _collection_paused():
        return scene_from_dict(data, path)


@contextlib.contextmanager
def _collection_paused():
    """Python's cyclic garbage collector off while a scene is parsed and checked: a file of 10⁵
    nodes makes millions of containers, none in a cycle, and each of the collector's passes over
    them cost 0.7 s of the parse and 0.5 s of the checks. On again after, as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def scene_from_dict(data, path="<scene>"):
    """Validate an already-parsed TOML document (a dict) and build the Scene."""
    return _Loader(path).load(data)


def scene_from_arrays(nodes, world=None, title="Generated scene", description="", path="<arrays>"):
    """A `Scene` from node arrays, for generated scenes (heaps, swarms, forests of trees): the same
    checks and messages as a scene file's, made on whole arrays, so that 10^5 nodes load in 0.2 s
    where 10^5 [[node]] tables take 5 s, four of them the TOML parse (docs/benchmarks.md, "Loading
    scene files").

    `nodes` maps the keys of a [[node]] table (NODE_KEYS) to per-node values over N nodes, each
    either an array with N rows or one value for every node: `name` (N strings; default
    "node_0", "node_1", ...), `parent` (N,) node *indices*, −1 for the world, each parent before
    its child (parent[i] < i), `motion` (a string or N of them), `translation` (N, 3),
    `rotation` (N, 4) quaternions (w, x, y, z), `scale` (N,), `velocity`, `angular_velocity`,
    `acceleration`, `angular_acceleration`, `applied_force`, `applied_torque` (N, 3), `mass` (N,),
    `inertia` (N, 3), `color` (N, 3), `friction`, `restitution` (N,), and `shape`: one table for
    every node, or a list of N tables or None. Defaults, ranges and frames are the file format's
    (docs/scene-format.md); a value given to a node whose motion does not take it must be the
    default (zero velocity on a fixed node, ...). `world` is the [world] table. Joints and events
    are written in the file or dict form (`scene_from_dict`).
    Raises SceneError naming `path`, the first node at fault, the key and its value."""
    return _ArrayLoader(path).load(nodes, world or {}, title, description)


class _Loader:
    def __init__(self, path):
        self.path = str(path)

    def error(self, node, key, value, reason):
        return SceneError(self.path, node, key, value, reason)

    # --- value checks: each returns the clean value or raises SceneError ----------------------

    def number(self, node, key, value, low=None, high=None, low_open=False):
        """A float in [low, high] (low excluded with low_open; None: that side unbounded)."""
        try:
            return limits.real(value, low, high, low_open)
        except Invalid as error:
            raise self.error(node, key, value, str(error)) from None

    def vector(self, node, key, value, bound, length=3):
        """`length` floats, each in [-bound, bound] (or in [low, high] for a pair bound = (low, high))."""
        low, high = bound if isinstance(bound, tuple) else (-bound, bound)
        try:
            return limits.vector(value, length, low, high)
        except Invalid as error:
            raise self.error(node, key, value, str(error)) from None

    def direction(self, node, key, value):
        try:
            return limits.direction(value)
        except Invalid as error:
            raise self.error(node, key, value, str(error)) from None

    def string(self, node, key, value, choices=None):
        if not isinstance(value, str):
            raise self.error(node, key, value, f"expected a string, got {type(value).__name__}")
        if choices is not None and value not in choices:
            raise self.error(node, key, value, f"expected one of {', '.join(choices)}")
        return value

    def table(self, node, key, value, allowed):
        if not isinstance(value, dict):
            raise self.error(node, key, value, f"expected a table, got {type(value).__name__}")
        known = _known_keys(allowed) if isinstance(allowed, tuple) else allowed
        for name in value:
            if name not in known:
                raise self.error(node, name, value[name], f"unknown key; allowed: {', '.join(allowed)}")
        return value

    def array_of_tables(self, key, value):
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.error(None, key, value, f"expected an array of tables ([[{key}]])")
        return value

    def quaternion(self, node, key, value):
        q = self.vector(node, key, value, 2.0, length=4)   # |q| = 1 within the tolerance anyway
        norm = float(np.linalg.norm(q))
        if abs(norm - 1.0) > QUATERNION_TOLERANCE:
            raise self.error(node, key, value, f"quaternion norm is {norm:.6g}; expected 1 within {QUATERNION_TOLERANCE}")
        return q / norm

    def shape(self, node, value):
        if not isinstance(value, dict):
            raise self.error(node, "shape", value, "expected a table such as { type = \"box\", size = [1, 1, 1] }")
        kind = self.string(node, "shape.type", value.get("type"), tuple(SHAPES))
        required = SHAPES[kind]
        filters = {}   # collision filter keys (docs/architecture.md, "Collision interface")
        for name in ("collide_with_parent", "group", "mask", "contype", "conaffinity"):
            if name in value:
                item = value[name]
                if name == "collide_with_parent" and not isinstance(item, bool):
                    raise self.error(node, f"shape.{name}", item, "expected true or false")
                if name != "collide_with_parent":
                    try:
                        limits.integer(item, *limits.MASK_RANGE)
                    except Invalid as error:
                        raise self.error(node, f"shape.{name}", item, f"{error} (a 32-bit integer bit mask)") from None
                filters[name] = item
        for name in value:
            if name != "type" and name not in (HULL_KEYS if kind == "hull" else required) and name not in filters:
                raise self.error(node, f"shape.{name}", value[name],
                                 f"unknown key for a {kind}; expected {', '.join(HULL_KEYS if kind == 'hull' else required)}")
        if kind == "hull":
            return self.hull(node, value, filters)
        clean = {"type": kind}
        for name in required:
            if name not in value:
                raise self.error(node, f"shape.{name}", None, f"missing: a {kind} needs {', '.join(required)}")
            item = value[name]
            if name == "size":
                clean[name] = self.vector(node, f"shape.{name}", item, (limits.LENGTH_MIN, limits.LENGTH_MAX)).tolist()
            elif name == "normal":
                clean[name] = self.direction(node, f"shape.{name}", item).tolist()
            elif name == "offset":
                clean[name] = self.number(node, f"shape.{name}", item, -limits.LENGTH_MAX, limits.LENGTH_MAX)
            else:
                clean[name] = self.number(node, f"shape.{name}", item, limits.LENGTH_MIN, limits.LENGTH_MAX)
        clean.update(filters)
        return clean

    def hull(self, node, value, filters):
        """A convex hull shape: `vertices` (rows of 3 numbers, node frame) or `file` (a mesh path
        relative to the scene file's folder, read by trimesh) with an optional `scale` (3 numbers);
        the clean table holds the hull's vertices, at most HULL_VERTICES_MAX (physics.model.hull)."""
        if ("vertices" in value) == ("file" in value):
            raise self.error(node, "shape.vertices", None, "a hull needs either vertices (rows of 3 numbers) "
                             "or file (a mesh path), not both")
        if "scale" in value and "file" not in value:
            raise self.error(node, "shape.scale", value["scale"], "only a hull read from a file takes a scale")
        if "vertices" in value:
            key, item = "shape.vertices", value["vertices"]
            if not isinstance(item, list) or not 4 <= len(item) <= HULL_POINTS_MAX:
                raise self.error(node, key, item, f"expected a list of 4 to {HULL_POINTS_MAX} rows of 3 numbers")
            points = np.array([self.vector(node, key, row, limits.LENGTH_MAX) for row in item])
        else:
            key, item = "shape.file", value["file"]
            text = self.string(node, key, item)
            if not text or "\0" in text:
                raise self.error(node, key, text, "expected a file path")
            file = Path(text)
            if not file.is_absolute():
                file = Path(self.path).parent / file
            scale = self.vector(node, "shape.scale", value.get("scale", [1.0, 1.0, 1.0]), limits.SCALE_RANGE)
            points = mesh_points(self.path, node, file, scale, key=key)
        try:
            hull = convex_hull(points)
        except ValueError as error:
            raise self.error(node, key, item, f"no convex hull: {error}") from None
        radius = float(np.sqrt((hull.vertices ** 2).sum(axis=1).max()))
        if radius > limits.LENGTH_MAX or np.ptp(hull.vertices, axis=0).min() < limits.LENGTH_MIN:
            raise self.error(node, key, item, f"the hull reaches {radius:g} m from the node and is "
                             f"{np.ptp(hull.vertices, axis=0).min():g} m thin; expected lengths in "
                             f"[{limits.LENGTH_MIN:g}, {limits.LENGTH_MAX:g}] m")
        return {"type": "hull", "vertices": hull.vertices.tolist(), **filters}

    def boolean(self, node, key, value):
        if not isinstance(value, bool):
            raise self.error(node, key, value, "expected true or false")
        return value

    def mesh(self, node, value):
        """A drawn mesh: `file` a path (relative to the scene file's folder), `scale` 3 numbers. The
        file is not read here: physics never needs it, and a recording replayed where the file is
        missing still loads (the app draws what it can read and names what it cannot)."""
        self.table(node, "mesh", value, MESH_KEYS)
        if "file" not in value:
            raise self.error(node, "mesh.file", None, "a mesh needs a file")
        text = self.string(node, "mesh.file", value["file"])
        if not text or "\0" in text:
            raise self.error(node, "mesh.file", text, "expected a file path")
        file = Path(text)
        if not file.is_absolute():
            file = Path(self.path).parent / file
        scale = self.vector(node, "mesh.scale", value.get("scale", [1.0, 1.0, 1.0]), limits.SCALE_RANGE)
        return {"file": str(file), "scale": scale.tolist()}

    def color(self, node, value):
        return self.vector(node, "color", value, (0.0, 1.0))

    # --- the document ----------------------------------------------------------------------------

    def load(self, data):
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise self.error(None, key, data[key], f"unknown top-level key; allowed: {', '.join(TOP_LEVEL_KEYS)}")
        title = self.string(None, "title", data.get("title", Path(self.path).stem))
        description = self.string(None, "description", data.get("description", ""))
        world = self.world(data.get("world", {}))
        nodes = [self.node(i, raw) for i, raw in enumerate(self.array_of_tables("node", data.get("node", [])))]
        if not nodes:
            raise self.error(None, "node", None, "a scene needs at least one [[node]]")
        order = self.order(nodes)
        nodes = [nodes[i] for i in order]
        index = {node["name"]: i for i, node in enumerate(nodes)}
        events = tuple(self.event(raw, index, nodes) for raw in self.array_of_tables("event", data.get("event", [])))
        joints, labels = [], []     # a six_axis joint is followed by the joint of each of its axes (`group`: its index)
        for i, raw in enumerate(self.array_of_tables("joint", data.get("joint", []))):
            spec = self.joint(raw, i, index, nodes)
            axes = spec.pop("axis_specs", ())
            group = len(joints)
            joints.append(spec)
            labels.append(f"[[joint]] #{i + 1}")
            joints.extend(dict(axis, group=group) for axis in axes)
            labels.extend(f"[[joint]] #{i + 1} axes #{k + 1}" for k in range(len(axes)))
        joints = tuple(joints)
        names = {}
        for label, spec in zip(labels, joints):
            if "name" in spec:
                if spec["name"] in names:
                    raise self.error(label, "name", spec["name"], "two joints share this name")
                names[spec["name"]] = spec
        actuators, drives = set(), []
        for i, raw in enumerate(self.array_of_tables("actuator", data.get("actuator", []))):
            if isinstance(raw, dict) and "node" in raw:
                drives.append(self.node_actuator(raw, i, index, nodes, actuators))
            else:
                self.actuator(raw, i, names, actuators)
        launchers = [self.launcher(raw, i, index, nodes)
                     for i, raw in enumerate(self.array_of_tables("launcher", data.get("launcher", [])))]
        if len({l["name"] for l in launchers}) < len(launchers):
            seen = [l["name"] for l in launchers]
            raise self.error("[[launcher]]", "name", next(n for n in seen if seen.count(n) > 1), "two launchers share this name")
        ranges = {spec["actuator"]["name"]: spec["actuator"].get("ctrl_range") for spec in joints if "actuator" in spec}
        ranges.update({d["name"]: d.get("ctrl_range") for d in drives})
        keys = [self.key(raw, i, ranges, {l["name"] for l in launchers})
                for i, raw in enumerate(self.array_of_tables("key", data.get("key", [])))]
        keyframes = [self.keyframe(raw, i, names, ranges)
                     for i, raw in enumerate(self.array_of_tables("keyframe", data.get("keyframe", [])))]
        if len({k["name"] for k in keyframes}) < len(keyframes):
            seen = [k["name"] for k in keyframes]
            raise self.error("[[keyframe]]", "name", next(n for n in seen if seen.count(n) > 1), "two keyframes share this name")
        view = self.table("[view]", "view", data.get("view", {}), VIEW_KEYS)
        if "follow" in view:
            follow = self.string("[view]", "follow", view["follow"])
            if follow not in index:
                raise self.error("[view]", "follow", follow, "unknown node")
            view = {"follow": index[follow]}
        return replace(self.build(title, description, world, nodes, index, events, joints), view=dict(view),
                       drives=tuple(drives), launchers=tuple(launchers), keys=tuple(keys), keyframes=tuple(keyframes))

    def world(self, raw):
        raw = self.table("[world]", "world", raw, Settings.names())
        settings = Settings()
        clean = {}
        for key, value in raw.items():
            if key == "counteract" and not isinstance(value, bool):
                raise self.error("[world]", key, value, "expected true or false")
            try:
                settings.set(key, value)
            except SettingError as error:
                raise self.error("[world]", key, value, error.reason) from None
            clean[key] = getattr(settings, key)
        return clean

    def node(self, position, raw):
        label = raw.get("name", f"#{position + 1}")
        label = label if isinstance(label, str) else f"#{position + 1}"
        self.table(label, "node", raw, NODE_KEYS)
        if "name" not in raw:
            raise self.error(label, "name", None, "every [[node]] needs a name")
        name = self.string(label, "name", raw["name"])
        if not name:
            raise self.error(label, "name", name, "a name must not be empty")
        motion = self.string(name, "motion", raw.get("motion", "fixed"), MOTIONS)
        for keys, allowed, what in ((KINEMATIC_ONLY, ("kinematic",), "kinematic"),
                                    (MOVING_ONLY, ("kinematic", "dynamic"), "kinematic or dynamic"),
                                    (DYNAMIC_ONLY, ("dynamic",), "dynamic")):
            for key in keys:
                if key in raw and motion not in allowed:
                    raise self.error(name, key, raw[key], f"only a {what} node has this key (motion is {motion!r})")
        length, speed, acceleration, force = limits.LENGTH_MAX, limits.SPEED_MAX, limits.ACCELERATION_MAX, limits.FORCE_MAX

        def vector(key, bound):        # an absent vector is zero (a default needs no check: most are absent)
            return self.vector(name, key, raw[key], bound) if key in raw else _ZERO

        node = {
            "name": name,
            "parent": self.string(name, "parent", raw["parent"]) if "parent" in raw else None,
            "motion": motion,
            "translation": vector("translation", length),
            "rotation": self.quaternion(name, "rotation", raw["rotation"]) if "rotation" in raw else _IDENTITY,
            "scale": self.number(name, "scale", raw["scale"], *limits.SCALE_RANGE) if "scale" in raw else 1.0,
            "velocity": vector("velocity", speed),
            "angular_velocity": vector("angular_velocity", speed),
            "acceleration": vector("acceleration", acceleration),
            "angular_acceleration": vector("angular_acceleration", acceleration),
            "shape": self.shape(name, raw["shape"]) if "shape" in raw else None,
            "color": self.color(name, raw["color"]) if "color" in raw else _DEFAULT_COLOR,
            "applied_force": vector("applied_force", force),
            "applied_torque": vector("applied_torque", force),
            "mass": 0.0,
            "inertia": None,
            "friction": self.number(name, "friction", raw["friction"], 0.0, limits.FRICTION_MAX) if "friction" in raw
            else DEFAULT_FRICTION,
            # e > 1 would make every bounce gain energy
            "restitution": self.number(name, "restitution", raw["restitution"], 0.0, 1.0) if "restitution" in raw
            else DEFAULT_RESTITUTION,
            "mesh": self.mesh(name, raw["mesh"]) if "mesh" in raw else None,
            "visible": self.boolean(name, "visible", raw["visible"]) if "visible" in raw else True,
            "opacity": self.number(name, "opacity", raw["opacity"], 0.0, 1.0, low_open=True) if "opacity" in raw else 1.0,
        }
        if motion == "dynamic":
            node["mass"] = self.number(name, "mass", raw.get("mass", 1.0), *limits.MASS_RANGE)
            if "inertia" in raw:
                try:
                    node["inertia"] = limits.inertia(raw["inertia"])
                except Invalid as error:
                    raise self.error(name, "inertia", raw["inertia"], str(error)) from None
            elif node["shape"] is not None and node["shape"]["type"] == "plane":
                raise self.error(name, "shape", raw["shape"], "a dynamic node needs a finite shape or an explicit inertia")
        return node

    def order(self, nodes):
        """Indices putting parents before children, file order otherwise; rejects bad parents."""
        position = {}
        for i, node in enumerate(nodes):
            if node["name"] in position:
                raise self.error(node["name"], "name", node["name"], "duplicate name")
            position[node["name"]] = i
        for node in nodes:
            parent = node["parent"]
            if parent is not None and parent not in position:
                raise self.error(node["name"], "parent", parent, "unknown parent (no node has this name)")
        order, state = [], [0] * len(nodes)  # 0 = unseen, 1 = on the current path, 2 = placed
        for start in range(len(nodes)):
            path, i = [], start
            while i is not None and state[i] == 0:  # climb to a placed node or the world
                state[i] = 1
                path.append(i)
                parent = nodes[i]["parent"]
                i = None if parent is None else position[parent]
                if i is not None and state[i] == 1:
                    cycle = [nodes[j]["name"] for j in path[path.index(i):]]
                    raise self.error(nodes[i]["name"], "parent", nodes[i]["parent"],
                                     f"parent cycle: {' -> '.join(cycle + [cycle[0]])}")
            for j in reversed(path):
                state[j] = 2
                order.append(j)
        return order

    def event(self, raw, index, nodes):
        label = f"[[event]] at time {short_repr(raw.get('time'))}"
        self.table(label, "event", raw, EVENT_KEYS)
        for key in ("time", "node", "impulse"):
            if key not in raw:
                raise self.error(label, key, None, "an event needs time, node and impulse")
        time = self.number(label, "time", raw["time"], 0.0, limits.TIME_MAX)
        node = self.string(label, "node", raw["node"])
        if node not in index:
            raise self.error(label, "node", node, "unknown node")
        if nodes[index[node]]["motion"] != "dynamic":   # only a rigid body takes an impulse
            raise self.error(label, "node", node, f"an event needs a dynamic node (motion is {nodes[index[node]]['motion']!r})")
        return Event(time, index[node], self.vector(node, "impulse", raw["impulse"], limits.FORCE_MAX),
                     self.vector(node, "point", raw["point"], limits.LENGTH_MAX) if "point" in raw else None)

    def joint(self, raw, position, index, nodes):
        """A [[joint]] (docs/scene-format.md): anchors and axis in world coordinates at load time."""
        label = f"[[joint]] #{position + 1}"
        self.table(label, "joint", raw, JOINT_KEYS)
        for key in ("type", "b"):
            if key not in raw:
                raise self.error(label, key, None, "a joint needs type and b (and a, default the world)")
        kind = self.string(label, "type", raw["type"], JOINT_TYPES)
        for key in raw:
            if key not in ("type", "a", "b", "anchor", "collide_connected", "name") + JOINT_TYPE_KEYS[kind]:
                owners = [name for name, keys in JOINT_TYPE_KEYS.items() if key in keys]
                raise self.error(label, key, raw[key], f"a {kind} joint has no {key!r} (only {', '.join(owners)} joints do)")
        ends = {}
        for key in ("a", "b"):
            name = self.string(label, key, raw[key]) if key in raw else None
            if name is not None and name not in index:
                raise self.error(label, key, name, "unknown node")
            ends[key] = -1 if name is None else index[name]
        if ends["b"] < 0 or nodes[ends["b"]]["motion"] != "dynamic":
            raise self.error(label, "b", raw["b"], "b must be a dynamic node")
        if ends["a"] == ends["b"]:
            raise self.error(label, "a", raw.get("a"), "a joint needs two different nodes")
        spec = {"kind": JOINT_TYPES.index(kind), "type": kind, "a": ends["a"], "b": ends["b"]}
        # kept only where true: a scene that does not ask keeps its fingerprint (recordings restore)
        if self.boolean(label, "collide_connected", raw.get("collide_connected", False)):
            spec["collide_connected"] = True
        spec["anchor"] = self.vector(label, "anchor", raw["anchor"], limits.LENGTH_MAX) if "anchor" in raw else None
        if spec["anchor"] is None:
            raise self.error(label, "anchor", None, "a joint needs an anchor (world point at load)")
        spec["anchor_b"] = self.vector(label, "anchor_b", raw["anchor_b"], limits.LENGTH_MAX) if "anchor_b" in raw else None
        if kind in ("hinge", "slider"):
            spec["axis"] = self.direction(label, "axis", raw.get("axis", [0.0, 0.0, 1.0]))
        if kind == "rope" and "length" not in raw:
            raise self.error(label, "length", None, "a rope needs a length > 0")
        spec["length"] = self.number(label, "length", raw["length"], limits.LENGTH_MIN, limits.LENGTH_MAX) if "length" in raw else None
        if kind == "distance" and spec["length"] is None:
            gap = float(np.linalg.norm((spec["anchor_b"] if spec["anchor_b"] is not None else spec["anchor"]) - spec["anchor"]))
            if gap < limits.LENGTH_MIN:   # the default length is the anchors' distance: zero has no direction to hold
                raise self.error(label, "length", None, f"a distance joint needs a length or anchor_b at least {limits.LENGTH_MIN:g} m from anchor")
        for key, bound in (("lower", limits.LENGTH_MAX), ("upper", limits.LENGTH_MAX), ("motor_speed", limits.SPEED_MAX)):
            spec[key] = self.number(label, key, raw[key], -bound, bound) if key in raw else None
        spec["motor_force"] = self.number(label, "motor_force", raw["motor_force"], 0.0, limits.FORCE_MAX) if "motor_force" in raw else None
        if spec["lower"] is not None and spec["upper"] is not None and spec["lower"] > spec["upper"]:
            raise self.error(label, "lower", spec["lower"], f"lower limit above upper ({spec['upper']})")
        # kept only where given, as collide_connected: a scene without them keeps its fingerprint
        if "name" in raw:
            spec["name"] = self.string(label, "name", raw["name"])
        self.joint_terms(label, raw, spec, JOINT_TERMS)
        if spec.get("friction") and spec.get("motor_force"):
            raise self.error(label, "friction", spec["friction"], "a joint's drive is its motor or its friction, not both")
        if kind == "six_axis":
            spec["axis_specs"] = self.axes(label, raw.get("axes", []), spec)
        return spec

    def joint_terms(self, label, raw, out, terms):
        """Each of `terms` ((key, low, high)) that `raw` gives, checked, into `out` (kept only where
        given: a scene without them keeps its fingerprint)."""
        for key, low, high in terms:
            if key in raw:
                out[key] = self.number(label, key, raw[key], low, high)

    def axes(self, label, raw, spec):
        """A six_axis joint's `axes` (docs/scene-format.md): up to three sliders, then up to three
        hinges, each a joint of its own between the same two nodes (AXIS_KIND), its direction in the
        world at load; independent directions (the slides', and the hinges' as each turns the next)."""
        if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
            raise self.error(label, "axes", raw, "expected an array of tables (slides, then hinges)")
        out = []
        for i, item in enumerate(raw):
            where = f"{label} axes #{i + 1}"
            self.table(where, "axes", item, AXIS_KEYS)
            if "type" not in item:
                raise self.error(where, "type", None, "an axis needs a type: slider or hinge")
            kind = self.string(where, "type", item["type"], ("slider", "hinge"))
            if kind == "slider" and out and out[-1]["type"] == "hinge":
                raise self.error(where, "type", kind, "the slides come first, then the hinges (MuJoCo's order)")
            axis = {"kind": AXIS_KIND, "type": kind, "a": spec["a"], "b": spec["b"],
                    **({"collide_connected": True} if spec.get("collide_connected") else {}),
                    "anchor": spec["anchor"], "anchor_b": None, "length": None, "motor_speed": None, "motor_force": None,
                    "axis": self.direction(where, "axis", item.get("axis", [0.0, 0.0, 1.0]))}
            for key in ("lower", "upper"):
                axis[key] = self.number(where, key, item[key], -limits.LENGTH_MAX, limits.LENGTH_MAX) if key in item else None
            if axis["lower"] is not None and axis["upper"] is not None and axis["lower"] > axis["upper"]:
                raise self.error(where, "lower", axis["lower"], f"lower limit above upper ({axis['upper']})")
            if "name" in item:
                axis["name"] = self.string(where, "name", item["name"])
            self.joint_terms(where, item, axis, JOINT_TERMS[:1] + (("ref", -limits.LENGTH_MAX, limits.LENGTH_MAX),)
                             + JOINT_TERMS[1:])
            out.append(axis)
        for kind in ("slider", "hinge"):
            directions = np.array([axis["axis"] for axis in out if axis["type"] == kind]).reshape(-1, 3)
            if len(directions) > 3:
                raise self.error(label, "axes", len(directions), f"at most three of type {kind}")
            # the hinges' axes as loaded: independent for any value of the coordinates near the load's
            if len(directions) and np.linalg.svd(directions, compute_uv=False)[-1] < AXES_INDEPENDENT:
                raise self.error(label, "axes", directions.tolist(), f"the {kind}s' directions are not independent")
        return out

    def actuator(self, raw, position, joints, taken):
        """An [[actuator]] (docs/scene-format.md), put on the joint it drives as that joint's
        `actuator`: gain and bias in MuJoCo's `<general>` terms (physics.constraints.joints, "Drives")."""
        label = f"[[actuator]] #{position + 1}"
        self.table(label, "actuator", raw, ACTUATOR_KEYS)
        for key in ("name", "joint", "type"):
            if key not in raw:
                raise self.error(label, key, None, "an actuator needs name, joint and type")
        name = self.string(label, "name", raw["name"])
        label = f"[[actuator]] {name!r}"
        if name in taken:
            raise self.error(label, "name", name, "two actuators share this name")
        kind = self.string(label, "type", raw["type"], ACTUATOR_TYPES)
        for key in raw:
            if key in ("kp", "kv", "gain", "bias") and key not in ACTUATOR_TYPE_KEYS[kind]:
                raise self.error(label, key, raw[key], f"a {kind} actuator has no {key!r}")
        joint = self.string(label, "joint", raw["joint"])
        if joint not in joints:
            raise self.error(label, "joint", joint, "no [[joint]] has this name")
        spec = joints[joint]
        if spec["type"] not in ("hinge", "slider"):
            raise self.error(label, "joint", joint, f"an actuator drives a hinge or a slider, not a {spec['type']}")
        if spec.get("motor_force") or spec.get("friction") or "actuator" in spec:
            raise self.error(label, "joint", joint, "the joint is driven already (its motor_force, its friction or "
                                                    "another actuator)")
        gear = self.number(label, "gear", raw.get("gear", 1.0), -limits.FORCE_MAX, limits.FORCE_MAX)
        if gear == 0.0:
            raise self.error(label, "gear", gear, "a gear of 0 transmits nothing")
        number = lambda key, default: self.number(label, key, raw.get(key, default), 0.0, limits.FORCE_MAX)
        if kind == "motor":
            gain, bias = 1.0, [0.0, 0.0, 0.0]
        elif kind == "position":
            kp, kv = number("kp", 1.0), number("kv", 0.0)
            gain, bias = kp, [0.0, -kp, -kv]
        elif kind == "velocity":
            kv = number("kv", 1.0)
            gain, bias = kv, [0.0, 0.0, -kv]
        else:
            gain = self.number(label, "gain", raw.get("gain", 1.0), -limits.FORCE_MAX, limits.FORCE_MAX)
            bias = self.vector(label, "bias", raw.get("bias", [0.0, 0.0, 0.0]), limits.FORCE_MAX).tolist()
            if bias[1] > 0 or bias[2] > 0:
                raise self.error(label, "bias", bias, "the bias's position and velocity terms must be <= 0 "
                                                      "(a spring and a damper, never a source of energy)")
        ranges = {}
        for key in ("ctrl_range", "force_range"):
            if key in raw:
                low, high = self.vector(label, key, raw[key], limits.FORCE_MAX, length=2)
                if low > high:
                    raise self.error(label, key, raw[key], "the lower end is above the upper")
                ranges[key] = [float(low), float(high)]
        low, high = ranges.get("ctrl_range", (-limits.FORCE_MAX, limits.FORCE_MAX))
        if "ctrl" in raw:       # the control at load: a servo holds its pose from the first step
            ranges["ctrl"] = self.number(label, "ctrl", raw["ctrl"], low, high)
        elif not low <= 0.0 <= high:    # 0 outside the range: its nearest end, as MuJoCo clamps a control
            ranges["ctrl"] = min(max(0.0, low), high)
        spec["actuator"] = {"name": name, "type": kind, "gear": gear, "gain": float(gain),
                            "bias": [float(b) for b in bias], **ranges}
        taken.add(name)

    def node_actuator(self, raw, position, index, nodes, taken):
        """An [[actuator]] on a node or a list of nodes, which it drives alike (docs/scene-format.md;
        physics.dynamics.driving): `linear` or `angular`, an axis of each node's own frame; a kinematic node's "velocity" (m/s or rad/s along it) or
        "position" (m or rad from its pose at load, reached at up to `speed`), or a dynamic node's
        "motor" (N or N m along it); the control times `gear`. `ctrl` is the control at load."""
        label = f"[[actuator]] #{position + 1}"
        for key in ("name", "node", "type"):
            if key not in raw:
                raise self.error(label, key, None, "an actuator on a node needs name, node and type")
        name = self.string(label, "name", raw["name"])
        label = f"[[actuator]] {name!r}"
        self.table(label, "actuator", raw, NODE_ACTUATOR_KEYS)
        if name in taken:
            raise self.error(label, "name", name, "two actuators share this name")
        listed = raw["node"] if isinstance(raw["node"], list) else [raw["node"]]
        if not listed:
            raise self.error(label, "node", raw["node"], "expected a node's name or a list of them")
        targets = [self.string(label, "node", node) for node in listed]
        for node in targets:
            if node not in index:
                raise self.error(label, "node", node, "unknown node")
        if len(set(targets)) < len(targets):
            raise self.error(label, "node", raw["node"], "a node listed twice")
        motions = {nodes[index[node]]["motion"] for node in targets}
        if "fixed" in motions:
            raise self.error(label, "node", next(n for n in targets if nodes[index[n]]["motion"] == "fixed"),
                             "a fixed node does not move: an actuator drives kinematic or dynamic nodes")
        if len(motions) > 1:
            raise self.error(label, "node", raw["node"], "an actuator drives kinematic nodes or dynamic ones, not both")
        motion = motions.pop()
        kind = self.string(label, "type", raw["type"], NODE_ACTUATOR_TYPES[motion])
        if ("linear" in raw) == ("angular" in raw):
            raise self.error(label, "linear" if "linear" in raw else "angular", raw.get("linear", raw.get("angular")),
                             "give one axis: linear (translation along it) or angular (rotation about it)")
        which = "linear" if "linear" in raw else "angular"
        axis = self.direction(label, which, raw[which])
        if motion == "kinematic":
            for node in targets:
                for key in ("velocity", "angular_velocity", "acceleration", "angular_acceleration"):
                    if np.any(nodes[index[node]][key]):
                        raise self.error(label, "node", node, f"the node's motion comes from its actuators; its {key!r} "
                                                              "must be absent (give the actuator a ctrl instead)")
        if "speed" in raw and kind != "position":
            raise self.error(label, "speed", raw["speed"], f"a {kind} actuator has no 'speed' (a position actuator's)")
        gear = self.number(label, "gear", raw.get("gear", 1.0), -limits.FORCE_MAX, limits.FORCE_MAX)
        if gear == 0.0:
            raise self.error(label, "gear", gear, "a gear of 0 transmits nothing")
        spec = {"name": name, "nodes": [index[node] for node in targets], "type": kind, which: axis.tolist(), "gear": gear}
        if kind == "position":
            spec["speed"] = self.number(label, "speed", raw.get("speed", 1.0), 0.0, limits.SPEED_MAX, low_open=True)
        if "ctrl_range" in raw:
            low, high = self.vector(label, "ctrl_range", raw["ctrl_range"], limits.FORCE_MAX, length=2)
            if low > high:
                raise self.error(label, "ctrl_range", raw["ctrl_range"], "the lower end is above the upper")
            spec["ctrl_range"] = [float(low), float(high)]
        low, high = spec.get("ctrl_range", (-limits.FORCE_MAX, limits.FORCE_MAX))
        spec["ctrl"] = self.number(label, "ctrl", raw.get("ctrl", 0.0), low, high)
        taken.add(name)
        return spec

    def launcher(self, raw, position, index, nodes):
        """A [[launcher]] (docs/scene-format.md; physics.dynamics.driving.launch): dynamic `node` leaves from
        node `from`'s origin with that point's world velocity plus `speed` along `axis` (its frame)."""
        label = f"[[launcher]] #{position + 1}"
        self.table(label, "launcher", raw, LAUNCHER_KEYS)
        for key in ("name", "node", "from", "speed"):
            if key not in raw:
                raise self.error(label, key, None, "a launcher needs name, node, from and speed")
        name = self.string(label, "name", raw["name"])
        label = f"[[launcher]] {name!r}"
        spec = {"name": name}
        for key in ("node", "from"):
            value = self.string(label, key, raw[key])
            if value not in index:
                raise self.error(label, key, value, "unknown node")
            spec[key] = index[value]
        if nodes[spec["node"]]["motion"] != "dynamic":
            raise self.error(label, "node", raw["node"], "a launcher throws a dynamic node (motion is "
                                                         f"{nodes[spec['node']]['motion']!r})")
        if spec["node"] == spec["from"]:
            raise self.error(label, "from", raw["from"], "a node cannot be launched from itself")
        spec["axis"] = self.direction(label, "axis", raw.get("axis", [1.0, 0.0, 0.0])).tolist()
        spec["speed"] = self.number(label, "speed", raw["speed"], 0.0, limits.SPEED_MAX)
        return spec

    def key(self, raw, position, actuators, launchers):
        """A [[key]] (docs/scene-format.md): while `key` is held, actuator `actuator` takes `value`
        (and `release` when let go, default 0), or with `rate` moves towards `value` at `rate` per
        second and stays where it is when let go; or a press fires launcher `launch`."""
        label = f"[[key]] #{position + 1}"
        self.table(label, "key", raw, KEY_KEYS)
        if "key" not in raw:
            raise self.error(label, "key", None, "a [[key]] needs key and an actuator or a launch")
        letter = self.string(label, "key", raw["key"])
        letter = letter.upper() if len(letter) == 1 else letter
        if letter not in BINDABLE_KEYS:
            raise self.error(label, "key", raw["key"], "expected one letter A-Z")
        label = f"[[key]] {letter!r}"
        if ("actuator" in raw) == ("launch" in raw):
            raise self.error(label, "actuator" if "actuator" in raw else "launch", raw.get("actuator", raw.get("launch")),
                             "a key drives one actuator or fires one launcher")
        if "launch" in raw:
            for key in ("value", "rate", "release"):
                if key in raw:
                    raise self.error(label, key, raw[key], "a launch key has no value, rate or release")
            launch = self.string(label, "launch", raw["launch"])
            if launch not in launchers:
                raise self.error(label, "launch", launch, "no [[launcher]] has this name")
            return {"key": letter, "launch": launch}
        actuator = self.string(label, "actuator", raw["actuator"])
        if actuator not in actuators:
            raise self.error(label, "actuator", actuator, "no [[actuator]] has this name")
        low, high = actuators[actuator] or (-limits.FORCE_MAX, limits.FORCE_MAX)
        if "value" not in raw:
            raise self.error(label, "value", None, "an actuator key needs the value it drives towards")
        spec = {"key": letter, "actuator": actuator, "value": self.number(label, "value", raw["value"], low, high)}
        if "rate" in raw:
            if "release" in raw:
                raise self.error(label, "release", raw["release"], "a key with a rate holds its value when let go")
            spec["rate"] = self.number(label, "rate", raw["rate"], 0.0, limits.FORCE_MAX, low_open=True)
        else:
            if "release" not in raw and not low <= 0.0 <= high:
                raise self.error(label, "release", None, f"a held key's release value defaults to 0, outside the "
                                                         f"actuator's ctrl_range [{low:g}, {high:g}]: give it one")
            spec["release"] = self.number(label, "release", raw.get("release", 0.0), low, high)
        return spec

    def keyframe(self, raw, position, joints, actuators):
        """A [[keyframe]] (docs/scene-format.md): `joints`, named hinges' and sliders' coordinates
        (within their limits), and `controls`, actuators' inputs (within their ctrl_range)."""
        label = f"[[keyframe]] #{position + 1}"
        self.table(label, "keyframe", raw, KEYFRAME_KEYS)
        if "name" not in raw:
            raise self.error(label, "name", None, "a keyframe needs a name")
        name = self.string(label, "name", raw["name"])
        label = f"[[keyframe]] {name!r}"
        out = {"name": name, "joints": {}, "controls": {}}
        for joint, value in self.table(label, "joints", raw.get("joints", {}), list(joints)).items():
            spec = joints[joint]
            if spec["type"] not in ("hinge", "slider"):
                raise self.error(label, f"joints.{joint}", value, f"a {spec['type']} joint has no coordinate")
            low, high = spec.get("lower"), spec.get("upper")
            out["joints"][joint] = self.number(label, f"joints.{joint}", value, -limits.LENGTH_MAX if low is None else low,
                                               limits.LENGTH_MAX if high is None else high)
        for actuator, value in self.table(label, "controls", raw.get("controls", {}), list(actuators)).items():
            low, high = actuators[actuator] or (-limits.FORCE_MAX, limits.FORCE_MAX)
            out["controls"][actuator] = self.number(label, f"controls.{actuator}", value, low, high)
        return out

    def shape_inertia(self, node, shape, moments):
        """An inertia computed from a shape must be a body's too (a needle-thin hull within every
        length limit had principal moments of 0, and the first step divided by them)."""
        if not np.all(np.asarray(moments) >= limits.INERTIA_RANGE[0]):
            raise self.error(node, "shape", shape.get("type"),
                             f"its inertia at this mass, {short_repr(np.asarray(moments).tolist())} kg m², has a moment "
                             f"below {limits.INERTIA_RANGE[0]:g}: the shape has no volume to turn about (a needle or a "
                             "sheet); give the node an explicit inertia")

    def world_lengths(self, node, world_scale):
        """The node's world scale s (the product of the scales from its root) and its shape's world
        lengths s·L must lie in SCALE_RANGE and [LENGTH_MIN, LENGTH_MAX]: the inertia m (s L)² and
        the contact geometry are formed from them. Within these, a shape's inertia lies inside
        INERTIA_RANGE (from 2/5 · 1e-9 kg · (1e-6 m)² to 1e9 kg · (1e6 m)²)."""
        low, high = limits.SCALE_RANGE
        if not low <= world_scale <= high:
            raise self.error(node["name"], "scale", node["scale"],
                             f"the world scale (the product of the scales from the root) is {world_scale:g}; expected it in [{low:g}, {high:g}]")
        outside = limits.shape_lengths_outside(node["shape"], world_scale)
        if outside is not None:
            key, lengths = outside
            raise self.error(node["name"], f"shape.{key}", node["shape"][key],
                             f"times the world scale {world_scale:g} this is {short_repr(lengths.tolist())} m; expected "
                             f"world lengths in [{limits.LENGTH_MIN:g}, {limits.LENGTH_MAX:g}] m")

    def build(self, title, description, world, nodes, index, events, joints=()):
        def stack(key):
            return np.array([node[key] for node in nodes], dtype=float)

        parent = np.array([-1 if node["parent"] is None else index[node["parent"]] for node in nodes], dtype=np.int64)
        scale = stack("scale")
        world_scale = scale.copy()
        # A scene's many nodes share few shapes: each check and each inertia is made once per
        # (shape, world scale), the checks in node order (the first node at fault is named as a
        # node-by-node pass would name it) and the inertias for all the group's masses in one call
        # (each row the bits of the one-mass call).
        passed, groups = set(), {}
        for i, node in enumerate(nodes):  # parents come first, so one pass accumulates the products
            if parent[i] >= 0:
                world_scale[i] *= world_scale[parent[i]]
            key = (_shape_key(node["shape"]), float(world_scale[i]))
            if key not in passed:
                self.world_lengths(node, world_scale[i])
                passed.add(key)
            if node["motion"] == "dynamic" and node["inertia"] is None and node["shape"] is not None:
                groups.setdefault(key, []).append(i)
        inertia = np.zeros((len(nodes), 3))
        for i, node in enumerate(nodes):
            if node["motion"] != "dynamic":
                continue
            if node["inertia"] is not None:
                inertia[i] = node["inertia"]
            elif node["shape"] is None:  # no shape, no inertia: a unit cube of the same mass (documented default)
                inertia[i] = node["mass"] / 6.0
        for members in groups.values():
            first = nodes[members[0]]
            inertia[members] = inertia_from_shape(scaled_shape(first["shape"], world_scale[members[0]]),
                                                  np.array([nodes[i]["mass"] for i in members], float))
        computed = np.array(sorted(i for members in groups.values() for i in members), np.int64)
        low = computed[~np.all(inertia[computed] >= limits.INERTIA_RANGE[0], axis=1)]
        if low.size:
            node = nodes[low[0]]
            self.shape_inertia(node["name"], node["shape"], inertia[low[0]])
        return Scene(
            path=self.path, title=title, description=description, world=world,
            names=tuple(node["name"] for node in nodes), parent=parent,
            motion=np.array([node["motion"] for node in nodes]),
            translation=stack("translation"), rotation=stack("rotation"), scale=scale,
            velocity=stack("velocity"), angular_velocity=stack("angular_velocity"),
            acceleration=stack("acceleration"), angular_acceleration=stack("angular_acceleration"),
            mass=stack("mass"), inertia_body=inertia,
            applied_force=stack("applied_force"), applied_torque=stack("applied_torque"),
            shapes=[node["shape"] for node in nodes], colors=stack("color"),
            meshes=[node["mesh"] for node in nodes], visible=np.array([node["visible"] for node in nodes], bool),
            opacity=np.array([node["opacity"] for node in nodes], float),
            events=tuple(sorted(events, key=lambda event: event.time)),
            friction=stack("friction"), restitution=stack("restitution"), joints=tuple(joints),
        )


class _ArrayLoader:
    """`scene_from_arrays`: each key checked on its whole array at once; the first node at fault
    is named, with the message the file loader (`_Loader`) gives for the same value."""

    def __init__(self, path):
        self.path = str(path)
        self.file = _Loader(path)           # the per-value checks, for shapes and for messages

    def error(self, node, key, value, reason):
        return SceneError(self.path, node, key, value, reason)

    def column(self, nodes, key, n, width, default, dtype=float):
        """nodes[key] as an (n,) or (n, width) array (one value broadcast), or the default."""
        value = nodes.get(key, default)
        try:
            array = np.asarray(value, dtype=dtype)
            shape = (n,) if width is None else (n, width)
            if array.shape != shape:
                array = np.broadcast_to(array, shape)
        except (ValueError, TypeError):
            expected = f"{n} values" if width is None else f"{n} rows of {width} numbers, or one row"
            raise self.error(None, key, short_repr(value), f"expected {expected}") from None
        return array

    def first_bad(self, names, key, array, bad, reason):
        """Raise for the first True of `bad` (n,), naming its node and value."""
        if bad.any():
            i = int(np.argmax(bad))
            value = array[i]
            value = value.tolist() if isinstance(value, np.ndarray) else value
            raise self.error(names[i], key, value, reason)

    def numbers(self, names, key, array, low, high, low_open=False):
        """Every value finite and in [low, high] (per element of a row), as `validation.real` says."""
        flat = array.reshape(len(names), -1)
        with np.errstate(invalid="ignore"):
            self.first_bad(names, key, array, ~np.isfinite(flat).all(axis=1),
                           "expected finite numbers (no nan or inf)" if array.ndim > 1 else "expected a finite number")
            outside = np.zeros(len(names), bool)
            if low is not None:
                outside |= ((flat <= low) if low_open else (flat < low)).any(axis=1)
            if high is not None:
                outside |= (flat > high).any(axis=1)
        text = limits.range_text(low, high, low_open)
        self.first_bad(names, key, array, outside, f"expected {'numbers' if array.ndim > 1 else 'a number'} {text}")
        return np.ascontiguousarray(array, dtype=float)

    def load(self, nodes, world, title, description):
        if not isinstance(nodes, dict):
            raise self.error(None, "node", short_repr(nodes), "expected a mapping of node keys to arrays")
        for key in nodes:
            if key not in NODE_KEYS:
                raise self.error(None, key, None, f"unknown node key; allowed: {', '.join(NODE_KEYS)}")
        title = self.file.string(None, "title", title)
        description = self.file.string(None, "description", description)
        world = self.file.world(world)
        n = self.count(nodes)
        names = self.names(nodes, n)
        parent = self.column(nodes, "parent", n, None, -1, dtype=object)
        if not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in parent):
            bad = np.array([not (isinstance(p, (int, np.integer)) and not isinstance(p, bool)) for p in parent])
            self.first_bad(names, "parent", parent, bad, "expected a node index (an integer; -1 for the world)")
        parent = parent.astype(np.int64)
        self.first_bad(names, "parent", parent, (parent < -1) | (parent >= np.arange(n)),
                       "expected the index of an earlier node (parent[i] < i) or -1 for the world")
        motion = self.column(nodes, "motion", n, None, "fixed", dtype=object)
        self.first_bad(names, "motion", motion, ~np.isin(motion.astype(str), MOTIONS), f"expected one of {', '.join(MOTIONS)}")
        motion = motion.astype(str)
        zero = np.zeros(3)
        length, speed, acceleration, force = limits.LENGTH_MAX, limits.SPEED_MAX, limits.ACCELERATION_MAX, limits.FORCE_MAX
        vectors = {}
        for key, bound in (("translation", length), ("velocity", speed), ("angular_velocity", speed),
                           ("acceleration", acceleration), ("angular_acceleration", acceleration),
                           ("applied_force", force), ("applied_torque", force)):
            vectors[key] = self.numbers(names, key, self.column(nodes, key, n, 3, zero), -bound, bound)
        for keys, allowed, what in ((KINEMATIC_ONLY, ("kinematic",), "kinematic"),
                                    (MOVING_ONLY, ("kinematic", "dynamic"), "kinematic or dynamic"),
                                    (("applied_force", "applied_torque"), ("dynamic",), "dynamic")):
            for key in keys:
                wrong = ~np.isin(motion, allowed) & (vectors[key] != 0.0).any(axis=1)
                self.first_bad(names, key, vectors[key], wrong, f"only a {what} node has this key (a non-zero value here)")
        dynamic = motion == "dynamic"
        rotation = self.numbers(names, "rotation", self.column(nodes, "rotation", n, 4, [1.0, 0.0, 0.0, 0.0]), -2.0, 2.0)
        # |q| as the file loader forms it (np.linalg.norm of each row: its dot product's rounding,
        # so the bits are a file's); the identity needs none
        norm = np.ones(n)
        for i in np.flatnonzero((rotation != (1.0, 0.0, 0.0, 0.0)).any(axis=1)):
            norm[i] = np.linalg.norm(rotation[i])
        off = np.abs(norm - 1.0) > QUATERNION_TOLERANCE
        if off.any():
            i = int(np.argmax(off))
            raise self.error(names[i], "rotation", rotation[i].tolist(),
                             f"quaternion norm is {norm[i]:.6g}; expected 1 within {QUATERNION_TOLERANCE}")
        rotation = rotation / norm[:, None]
        scale = self.numbers(names, "scale", self.column(nodes, "scale", n, None, 1.0), *limits.SCALE_RANGE)
        mass = self.numbers(names, "mass", self.column(nodes, "mass", n, None, 1.0), *limits.MASS_RANGE)
        mass = np.where(dynamic, mass, 0.0)
        color = self.numbers(names, "color", self.column(nodes, "color", n, 3, DEFAULT_COLOR), 0.0, 1.0)
        friction = self.numbers(names, "friction", self.column(nodes, "friction", n, None, DEFAULT_FRICTION),
                                0.0, limits.FRICTION_MAX)
        restitution = self.numbers(names, "restitution", self.column(nodes, "restitution", n, None, DEFAULT_RESTITUTION),
                                   0.0, 1.0)
        shapes = self.shapes(nodes, names, n)
        world_scale = scale.copy()
        pending = parent >= 0
        while pending.any():        # parents first: one pass per depth level
            ready = pending & ~pending[np.maximum(parent, 0)]
            world_scale[ready] *= world_scale[parent[ready]]
            pending &= ~ready
        inertia = self.inertias(nodes, names, n, dynamic, shapes, mass, world_scale)
        self.world_lengths(names, scale, shapes, world_scale)
        return Scene(
            path=self.path, title=title, description=description, world=world, names=tuple(names), parent=parent,
            motion=motion, translation=vectors["translation"], rotation=rotation, scale=scale,
            velocity=vectors["velocity"], angular_velocity=vectors["angular_velocity"],
            acceleration=vectors["acceleration"], angular_acceleration=vectors["angular_acceleration"],
            mass=mass, inertia_body=inertia, applied_force=vectors["applied_force"],
            applied_torque=vectors["applied_torque"], shapes=shapes, colors=color,
            friction=friction, restitution=restitution)

    def count(self, nodes):
        """N: the rows of the first per-node array (one value for every node needs a name or parent array)."""
        for key in ("name", "parent", "translation", "motion", "mass", "rotation"):
            if key in nodes and not isinstance(nodes[key], (str, dict)):
                array = np.asarray(nodes[key], dtype=object)
                if array.ndim >= (1 if key in ("name", "parent", "motion", "mass") else 2):
                    if len(array) == 0:
                        raise self.error(None, "node", None, "a scene needs at least one node")
                    return len(array)
        raise self.error(None, "node", None, "give at least one per-node array (name, parent or translation)")

    def names(self, nodes, n):
        if "name" not in nodes:
            return [f"node_{i}" for i in range(n)]
        names = list(nodes["name"]) if not isinstance(nodes["name"], str) else [nodes["name"]]
        if len(names) != n:
            raise self.error(None, "name", short_repr(nodes["name"]), f"expected {n} names")
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise self.error(f"#{i + 1}", "name", name, "expected a non-empty string")
        if len(set(names)) != n:
            seen = set()
            for name in names:
                if name in seen:
                    raise self.error(name, "name", name, "duplicate name")
                seen.add(name)
        return names

    def shapes(self, nodes, names, n):
        """N shape tables (or None): one table checked once and shared, or N checked one by one."""
        value = nodes.get("shape")
        if value is None:
            return [None] * n
        if isinstance(value, dict):
            return [self.file.shape(names[0] if n == 1 else "(every node)", value)] * n
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise self.error(None, "shape", short_repr(value), f"expected one table or {n} tables (or None)")
        checked = {}            # id -> the checked table: a table shared by many nodes is checked once
        out = []
        for name, shape in zip(names, value):
            if shape is None:
                out.append(None)
            else:
                if id(shape) not in checked:
                    checked[id(shape)] = self.file.shape(name, shape)
                out.append(checked[id(shape)])
        return out

    def inertias(self, nodes, names, n, dynamic, shapes, mass, world_scale):
        """(N, 3) principal moments: given (checked as `validation.inertia`), else from the shape at
        the node's world scale (the file loader's arithmetic, so the bits are a file's), else a unit
        cube's; zero for nodes that are not dynamic."""
        inertia = np.zeros((n, 3))
        given = np.zeros(n, bool)
        if "inertia" in nodes:
            moments = self.numbers(names, "inertia", self.column(nodes, "inertia", n, 3, np.ones(3)), *limits.INERTIA_RANGE)
            others = moments.sum(axis=1)[:, None] - moments
            bad = dynamic & (moments > others * (1.0 + limits.INERTIA_TOLERANCE)).any(axis=1)
            self.first_bad(names, "inertia", moments, bad,
                           "a moment exceeds the sum of the other two: no mass distribution has these principal "
                           "moments (I_k <= I_i + I_j)")
            inertia[dynamic] = moments[dynamic]
            given = dynamic.copy()
        for i in np.flatnonzero(dynamic & ~given & np.array([s is not None and s["type"] == "plane" for s in shapes])):
            raise self.error(names[i], "shape", shapes[i], "a dynamic node needs a finite shape or an explicit inertia")
        todo = np.flatnonzero(dynamic & ~given)
        groups = {}
        for i in todo:              # nodes sharing a shape table and a world scale: one formula call
            groups.setdefault((id(shapes[i]), world_scale[i]), []).append(i)
        for (_, s), members in groups.items():
            members = np.array(members)
            shape = shapes[members[0]]
            if shape is None:
                inertia[members] = (mass[members] / 6.0)[:, None]
            else:
                inertia[members] = inertia_from_shape(scaled_shape(shape, s), mass[members])
                low = np.flatnonzero(~np.all(inertia[members] >= limits.INERTIA_RANGE[0], axis=1))
                if low.size:
                    k = int(members[low[0]])
                    self.file.shape_inertia(names[k], shape, inertia[k])
        return inertia

    def world_lengths(self, names, scale, shapes, world_scale):
        low, high = limits.SCALE_RANGE
        bad = (world_scale < low) | (world_scale > high)
        if bad.any():
            i = int(np.argmax(bad))
            raise self.error(names[i], "scale", float(scale[i]),
                             f"the world scale (the product of the scales from the root) is {world_scale[i]:g}; "
                             f"expected it in [{low:g}, {high:g}]")
        by_shape = {}
        for i, shape in enumerate(shapes):
            if shape is not None:
                by_shape.setdefault(id(shape), (shape, []))[1].append(i)
        for shape, members in by_shape.values():
            members = np.array(members)
            for key in ("size", "radius", "height", "vertices"):
                if key in shape:
                    base = np.asarray(shape[key], float)
                    if key == "vertices":   # a hull: its thinnest extent and its reach from the node
                        base = np.array([np.ptp(base, axis=0).min(), np.abs(base).max()])
                    lengths = base[None] * world_scale[members].reshape(-1, 1)
                    bad = ((lengths < limits.LENGTH_MIN) | (lengths > limits.LENGTH_MAX)).any(axis=1)
                    if bad.any():
                        i = members[int(np.argmax(bad))]
                        self.file.world_lengths({"name": names[i], "scale": float(scale[i]), "shape": shape},
                                                float(world_scale[i]))

