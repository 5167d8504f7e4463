"""Snapshots: everything that decides a simulation's future, as named arrays, and their bytes.

A `Snapshot` is what `Simulation.snapshot()` returns and `Simulation.restore()` takes: the scene's
fingerprint (so that a snapshot is never restored into another scene), the step count, the
settings, and named arrays (node states, the integrators' own state, warm-start impulses,
persistent manifolds, sleep timers, ...; the Simulation names them). A run continued from a
restored snapshot is bit for bit the run that was snapshotted (tests/test_determinism.py).

`Snapshot.hash()` (`Simulation.state_hash()`) is SHA-256 over the same content less the arrays named
"derived." (values a query settles from the rest; kept so that queries after a restore answer as
before): two states with equal hashes have the same future.

Byte layout of `to_bytes()` (little-endian; docs/recording-format.md):
    MAGIC (8 bytes) | header length (u32) | header (UTF-8 JSON) | payload | SHA-256 of all before (32)
The JSON header holds the format version, the scene's fingerprint and name, the step count, the
settings (floats as `float.hex`: exact), and per array its name, dtype, shape and byte offset in the
payload; the payload is the arrays' raw bytes, each C-contiguous.

`from_bytes` trusts nothing the checksum covers (a SHA-256 anyone can recompute): strict JSON, every
header key of its type and range, settings as `Settings.set` takes them, every array known and of
its dtype, its sizes agreeing with the other arrays' (`_LAYOUT`) and with the payload before it is
allocated; a `SnapshotError` names the source, the field and the value. What the values must be in
a given scene, `Simulation.restore` checks.
"""
import hashlib
import json
import math
import struct
from dataclasses import dataclass

import numpy as np

from physics.core.settings import SettingError, Settings
from physics.core.validation import short_repr

MAGIC = b"HSSNAP\x00\x03"
# Format 2: every snapshot holds the topology, the kinematic nodes' accelerations and the RATTLE
# hint (format 1 held them only once a run had set them), so a format-1 hash is not this hash.
# Format 3: a joint has 9 impulse slots (its spring beside its drive), and joints with springs,
# dampers or actuators carry them and their controls.
VERSION = 3
OLDER = " (written by an earlier version, whose state hashes are not this version's: record it again from its scene)"
DERIVED = "derived."    # arrays named so are kept for queries and left out of the hash
_DIGEST = 32


def canonical(value):
    """A JSON-ready form of a settings value or a scene datum that keeps every bit: floats as hex."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, np.ndarray):
        return [canonical(v) for v in value.tolist()] if value.ndim else canonical(value.item())
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"cannot serialize {type(value).__name__} {value!r}")


class SnapshotError(ValueError):
    """Bytes that are not a snapshot this version can read: `source` (the file or "snapshot"),
    `field` (the header key or array name, None for the framing) and the reason; the message
    names all three and the value."""

    def __init__(self, reason, field=None, source="snapshot"):
        self.reason, self.field, self.source = reason, field, source
        super().__init__(f"{source}: " + (f"field {field!r}: " if field is not None else "") + reason)


# Every array this version writes: dtype and shape, in symbols shared across arrays (N nodes, B
# dynamic bodies, K kinematic nodes, C stored contact impulses, M manifolds, J joints). A file is
# read only if its arrays agree with each other; `Simulation.restore` checks them against its scene.
_F, _I, _B = "<f8", "<i8", "|b1"
_LAYOUT = {
    **{f"local.{f}": (_F, s) for f, s in (("translation", ("N", 3)), ("rotation", ("N", 3, 3)), ("scale", ("N",)),
                                          ("velocity", ("N", 3)))},
    **{f"derived.local_{f}": (_F, ("N", 3)) for f in ("acceleration", "omega", "alpha")},
    "omega_body": (_F, ("B", 3)), "still": (_F, ("B",)), "asleep": (_B, ("B",)), "held_translation": (_F, ("B", 3)),
    "held_rotation": (_F, ("B", 3, 3)), "held_omega": (_F, ("B", 3)), "held_field": (_F, ("B", 9)),
    "derived.constraint_acceleration": (_F, ("B", 6)),
    **{f"kinematic.{f}": (_F, ("K", 3, 3) if f == "rotation" else ("K", 3))
       for f in ("translation", "rotation", "velocity", "omega", "acceleration", "alpha")},
    "time": (_F, ()), "next_event": (_I, ()), "rattle.hint": (_F, (2,)), "topology.parent": (_I, ("N",)),
    **{f"solver.cache.{f}": (_F, ("C", 3)) for f in ("impulses", "impulse_points", "impulse_normals")},
    "solver.cache.impulse_keys": (_I, ("C",)), "solver.cache.n_shapes": (_I, ()),
    "solver.cache.manifold_keys": (_I, ("M",)), "solver.cache.manifold_local_a": (_F, ("M", 4, 3)),
    "solver.cache.manifold_local_b": (_F, ("M", 4, 3)), "solver.cache.manifold_feats": (_I, ("M", 4)),
    "solver.cache.manifold_counts": (_I, ("M",)), "solver.cache.manifold_next_ids": (_I, ("M",)),
    "solver.joints.kind": (_I, ("J",)), "solver.joints.body": (_I, ("J", 2)),
    **{f"solver.joints.{f}": (_F, ("J", 2, 3)) for f in ("anchor", "axis", "reference")},
    "solver.joints.rest": (_F, ("J", 3, 3)), "solver.joints.impulse": (_F, ("J", 9)),
    **{f"solver.joints.{f}": (_F, ("J",)) for f in ("length", "lower", "upper", "motor_speed", "motor_force")},
    # a joint's spring, actuator and control (physics.constraints.joints): written only where a scene has one
    **{f"solver.joints.{f}": (_F, ("J",)) for f in ("coordinate", "stiffness", "spring_reference", "damping", "armature", "gear",
                                                    "gain", "force_lower", "force_upper")},
    "solver.control": (_F, ("J",)),
    "solver.joints.actuated": (_I, ("J",)), "solver.joints.bias": (_F, ("J", 3)),
    # a six-axis joint's axes (physics.constraints.joints): written only where a scene has one
    "solver.joints.axes": (_F, ("J", 6, 3)), "solver.joints.axis_offset": (_F, ("J", 6)),
    "solver.joints.axis_count": (_I, ("J", 2)), "solver.joints.member": (_I, ("J",)),
    "solver.joints.axis_load": (_F, ("J", 6)),
    # a hinge's turns (physics.constraints.joints, "Turns"): written only where one has turned over
    "solver.joints.turned": (_F, ("J",)),
    # the actuators on nodes (physics.dynamics.driving): written only where a scene has one
    "drive.control": (_F, ("A",)), "drive.coordinate": (_F, ("A",)),
    # the work of the moving frames through joints (physics.pipeline.data): only where a joint has one
    "derived.frame_work": (_F, ("J",)),
}
_HEADER_KEYS = ("arrays", "payload", "scene", "scene_name", "settings", "step_count", "version")
_DIMENSION_MAX = 2**31      # elements along one axis (the arrays' bytes are bounded by the payload too)
STEP_MAX = 2**62            # step counts beyond this are not a run's (int64 headroom)


def strict_json(data, refuse):
    """Strict JSON: UTF-8, no NaN/Infinity constants (a file holds floats as float.hex), nesting
    bounded by the parser (RecursionError refused like any other malformed header)."""
    def constant(name):
        raise ValueError(f"the constant {name} (floats are written as hex strings)")
    try:
        return json.loads(bytes(data).decode("utf-8"), parse_constant=constant)
    except RecursionError:
        raise refuse("nested too deep to be a header") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise refuse(f"not valid JSON: {error}") from None


def integer(value, low, high):
    """`value` if it is a JSON integer (not a bool) in [low, high], else None."""
    return value if type(value) is int and low <= value <= high else None


def decode_settings(settings, refuse):
    """The settings of a header (`canonical` form) -> a dict of values, each validated as
    `Settings.set` validates it. `refuse(reason, field)` makes the error; a setting this version
    does not know is named as a newer version's."""
    if not isinstance(settings, dict):
        raise refuse(f"got {short_repr(settings)}; expected a table of settings", "settings")
    defaults, out = Settings(), {}
    for name, value in settings.items():
        if name not in Settings.names():
            raise refuse(f"written by a newer version: unknown setting {short_repr(name)}", "settings")
        kind, field = getattr(defaults, name), f"settings.{name}"
        try:
            if isinstance(kind, np.ndarray):
                if not (isinstance(value, list) and len(value) == len(kind) and all(isinstance(v, str) for v in value)):
                    raise ValueError
                value = np.array([float.fromhex(v) for v in value])
            elif isinstance(kind, bool):
                if not isinstance(value, bool):
                    raise ValueError
            elif isinstance(kind, int):
                if type(value) is not int:
                    raise ValueError
            elif isinstance(kind, float):
                if not isinstance(value, str):
                    raise ValueError
                value = float.fromhex(value)
            elif not isinstance(value, str):
                raise ValueError
        except (ValueError, OverflowError):
            expected = {np.ndarray: f"{len(kind)} floats as hex strings" if isinstance(kind, np.ndarray) else "",
                        bool: "true or false", int: "an integer", float: "a float as a hex string (float.hex)",
                        str: "a string"}[type(kind)]
            raise refuse(f"got {short_repr(value)}; expected {expected}", field) from None
        out[name] = value
    try:
        Settings().update(out)
    except SettingError as error:
        raise refuse(f"got {short_repr(error.value)}; {error.reason}", f"settings.{error.key}") from None
    return out


def _arrays(entries, payload, refuse):
    """The header's array entries over the payload -> {name: writable native array}, each one's
    size checked against the payload before anything is allocated, their shapes against each
    other (`_LAYOUT`)."""
    if not isinstance(entries, list):
        raise refuse(f"got {short_repr(entries)}; expected a list of arrays", "arrays")
    arrays, sizes, offset = {}, {}, 0
    for k, entry in enumerate(entries):
        where = f"arrays[{k}]"
        if not isinstance(entry, dict) or sorted(entry) != ["dtype", "name", "offset", "shape"]:
            raise refuse(f"got {short_repr(entry)}; expected {{name, dtype, shape, offset}}", where)
        name = entry["name"]
        if not isinstance(name, str):
            raise refuse(f"name {short_repr(name)}; expected a string", where)
        if name in arrays:
            raise refuse("appears twice", name)
        if name not in _LAYOUT:
            raise refuse("written by a newer version: an array this version does not know", name)
        dtype, pattern = _LAYOUT[name]
        if entry["dtype"] != dtype:
            raise refuse(f"dtype {short_repr(entry['dtype'])}; expected {dtype!r}", name)
        shape = entry["shape"]
        if not (isinstance(shape, list) and len(shape) == len(pattern)
                and all(integer(d, 0, _DIMENSION_MAX) is not None for d in shape)):
            raise refuse(f"shape {short_repr(shape)}; expected {len(pattern)} sizes in 0 .. {_DIMENSION_MAX}", name)
        for size, want in zip(shape, pattern):
            if isinstance(want, int) and size != want:
                raise refuse(f"shape {shape}; expected {list(pattern)}", name)
            if isinstance(want, str) and sizes.setdefault(want, (size, name))[0] != size:
                raise refuse(f"shape {shape}: {want} = {size} here but {sizes[want][0]} in {sizes[want][1]!r}", name)
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if entry["offset"] != offset or offset + nbytes > len(payload):
            raise refuse(f"offset {short_repr(entry['offset'])} and {nbytes} bytes; expected offset {offset} "
                         f"within the payload's {len(payload)} bytes", name)
        array = np.frombuffer(payload, dtype, math.prod(shape), offset).reshape(shape)
        arrays[name] = array.astype(array.dtype.newbyteorder("="))   # a writable native copy
        offset += nbytes
    if offset != len(payload):
        raise refuse(f"{len(payload)} bytes of payload; the arrays hold {offset}", "payload")
    return arrays


def scene_fingerprint(scene):
    """SHA-256 (hex) of a scene's model: its nodes, their parents, motion, initial state, masses,
    shapes, materials, joints, events and [world] values. Equal fingerprints: the same scene."""
    digest = hashlib.sha256()
    for name in ("names", "parent", "motion", "translation", "rotation", "scale", "velocity", "angular_velocity",
                 "acceleration", "angular_acceleration", "mass", "inertia_body", "applied_force", "applied_torque",
                 "friction", "restitution"):
        value = getattr(scene, name)
        digest.update(name.encode())
        digest.update(json.dumps(canonical(np.asarray(value) if value is not None else None)).encode())
    events = [(e.time, e.node, e.impulse_world, e.point_world) for e in scene.events]
    parts = [("shapes", scene.shapes), ("joints", scene.joints), ("events", events), ("world", scene.world)]
    # the actuators on nodes and the launchers only where a scene has them: the others' fingerprints stay
    parts += [(name, value) for name, value in (("drives", scene.drives), ("launchers", scene.launchers)) if value]
    for name, value in parts:
        digest.update(name.encode())
        digest.update(json.dumps(canonical(value), sort_keys=True).encode())
    return digest.hexdigest()


_NODE_PARTS = ("parent", "motion", "translation", "rotation", "scale", "velocity", "angular_velocity", "acceleration",
               "angular_acceleration", "mass", "inertia_body", "applied_force", "applied_torque", "friction",
               "restitution", "shapes")


def _digest(value):
    return hashlib.sha256(json.dumps(canonical(value), sort_keys=True).encode()).hexdigest()[:16]


def scene_digests(scene):
    """Short digests (16 hex digits) of a scene's model, part by part and node by node, so that a
    reader can say what differs between two scenes whose fingerprints differ: {"parts": {part:
    digest} over the `scene_fingerprint` parts, "nodes": {node name: digest of its row of every
    per-node part}}. A recording keeps them beside its keyframes' fingerprint."""
    def part(name):
        value = getattr(scene, name)
        return None if value is None else value if name == "shapes" else np.asarray(value)
    parts = {name: _digest(part(name)) for name in ("names", *_NODE_PARTS)}
    events = [(e.time, e.node, e.impulse_world, e.point_world) for e in scene.events]
    parts.update({"joints": _digest(scene.joints), "events": _digest(events), "world": _digest(scene.world)})
    parts.update({name: _digest(value) for name, value in (("drives", scene.drives), ("launchers", scene.launchers))
                  if value})
    names = [str(n) for n in scene.names]
    nodes = {name: _digest([names[p] if p >= 0 else None for p in [int(scene.parent[i])]]
                           + [None if part(f) is None else part(f)[i] for f in _NODE_PARTS[1:]])
             for i, name in enumerate(names)}
    return {"parts": parts, "nodes": nodes}


def scene_differences(recorded, scene):
    """What differs between the scene of `recorded` digests (`scene_digests`) and `scene`, in a
    few words: the parts, the nodes whose rows differ, the nodes only one of them has."""
    now = scene_digests(scene)
    parts = [name for name in now["parts"] if recorded["parts"].get(name) != now["parts"][name]]
    changed = [n for n in now["nodes"] if n in recorded["nodes"] and recorded["nodes"][n] != now["nodes"][n]]
    added = [n for n in now["nodes"] if n not in recorded["nodes"]]
    removed = [n for n in recorded["nodes"] if n not in now["nodes"]]
    cut = lambda names: ", ".join(repr(n) for n in names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    said = [f"{', '.join(parts)} differ" if parts else "the model differs"]
    said += [f"at node{'s' * (len(changed) > 1)} {cut(changed)}"] if changed else []
    said += [f"node{'s' * (len(added) > 1)} {cut(added)} only in this scene"] if added else []
    said += [f"node{'s' * (len(removed) > 1)} {cut(removed)} only in the recorded one"] if removed else []
    return "; ".join(said)


@dataclass(frozen=True, eq=False)
class Snapshot:
    """A simulation's complete state at one step (see the module docstring). Arrays are private
    copies: restoring a snapshot twice gives the same run twice."""

    scene: str          # the scene's fingerprint (`scene_fingerprint`)
    scene_name: str     # for messages: the scene's title and file
    step_count: int
    settings: dict      # Settings field -> value
    arrays: dict        # name -> np.ndarray

    def to_bytes(self):
        """The snapshot as bytes (module docstring), `Snapshot.from_bytes` reads them back."""
        entries, chunks, offset = [], [], 0
        for name in sorted(self.arrays):
            array = np.asarray(self.arrays[name])     # (ascontiguousarray would make a 0-d array 1-d)
            array = array.astype(array.dtype.newbyteorder("<"), order="C", copy=False)
            data = array.tobytes()
            entries.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "offset": offset})
            chunks.append(data)
            offset += len(data)
        header = json.dumps({
            "version": VERSION, "scene": self.scene, "scene_name": self.scene_name, "step_count": self.step_count,
            "settings": canonical(self.settings), "arrays": entries, "payload": offset,
        }, sort_keys=True).encode()
        body = MAGIC + struct.pack("<I", len(header)) + header + b"".join(chunks)
        return body + hashlib.sha256(body).digest()

    @classmethod
    def from_bytes(cls, data, source="snapshot"):
        """Read `to_bytes()` output. Anything else raises a `SnapshotError` (a ValueError) naming
        `source`, the field and the value: truncated, corrupted or foreign bytes, another format
        version, a header field missing, mistyped or out of range, a setting or array this version
        does not know ("written by a newer version"), arrays whose sizes disagree with each other
        or with the payload (checked before any array is allocated). Values are checked against a
        scene by `Simulation.restore`."""
        refuse = lambda reason, field=None: SnapshotError(reason, field, source)
        data = bytes(data)
        prefix = len(MAGIC) + 4
        if len(data) < prefix + _DIGEST or data[:len(MAGIC) - 1] != MAGIC[:-1]:
            raise refuse("not a snapshot (no snapshot header, or truncated)")
        if data[len(MAGIC) - 1] != MAGIC[-1]:
            newer = " (written by a newer version)" if data[len(MAGIC) - 1] > MAGIC[-1] else OLDER
            raise refuse(f"snapshot format {data[len(MAGIC) - 1]}{newer}; this version reads format {MAGIC[-1]}")
        (length,) = struct.unpack_from("<I", data, len(MAGIC))
        if prefix + length + _DIGEST > len(data):
            raise refuse(f"header length {length} runs past the end of the {len(data)} bytes (truncated)")
        body, digest = data[:-_DIGEST], data[-_DIGEST:]
        if hashlib.sha256(body).digest() != digest:
            raise refuse("snapshot checksum mismatch (truncated or corrupted)")
        header = strict_json(body[prefix:prefix + length], lambda reason: refuse(reason, "header"))
        if not isinstance(header, dict):
            raise refuse(f"got {short_repr(header)}; expected a JSON object", "header")
        unknown = sorted(set(header) - set(_HEADER_KEYS))
        if unknown:
            raise refuse(f"written by a newer version: unknown header key {short_repr(unknown[0])}", "header")
        for key in _HEADER_KEYS:
            if key not in header:
                raise refuse("missing from the header", key)
        if type(header["version"]) is not int or header["version"] != VERSION:
            raise refuse(f"got {short_repr(header['version'])}; this version reads {VERSION}", "version")
        scene = header["scene"]
        if not (isinstance(scene, str) and len(scene) == 64 and all(c in "0123456789abcdef" for c in scene)):
            raise refuse(f"got {short_repr(scene)}; expected a scene fingerprint (64 hex digits)", "scene")
        if not isinstance(header["scene_name"], str):
            raise refuse(f"got {short_repr(header['scene_name'])}; expected a string", "scene_name")
        if integer(header["step_count"], 0, STEP_MAX) is None:
            raise refuse(f"got {short_repr(header['step_count'])}; expected an integer in 0 .. 2**62", "step_count")
        payload = memoryview(body)[prefix + length:]
        if type(header["payload"]) is not int or header["payload"] != len(payload):
            raise refuse(f"got {short_repr(header['payload'])}; the file holds {len(payload)} bytes of payload", "payload")
        settings = decode_settings(header["settings"], refuse)
        arrays = _arrays(header["arrays"], payload, refuse)
        return cls(scene, header["scene_name"], header["step_count"], settings, arrays)

    def hash(self):
        """SHA-256 (64 hex digits) of the state that decides the future: the snapshot less its
        "derived." arrays (what queries settle from the state, so that a run the app queries every
        frame hashes as the runner's does). Equal hashes, equal futures (`Simulation.state_hash`)."""
        core = {name: array for name, array in self.arrays.items() if not name.startswith(DERIVED)}
        return hashlib.sha256(Snapshot(self.scene, "", self.step_count, self.settings, core)   # not where it loaded from
                              .to_bytes()[:-_DIGEST]).hexdigest()

    @property
    def nbytes(self):
        """Bytes of array data held (the in-memory cost of keeping this snapshot)."""
        return sum(a.nbytes for a in self.arrays.values())
