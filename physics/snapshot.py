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
"""
import hashlib
import json
import struct
from dataclasses import dataclass

import numpy as np

MAGIC = b"HSSNAP\x00\x01"
VERSION = 1
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


def _decanonical_settings(settings):
    """Inverse of `canonical` for a settings dict (float fields were hex strings)."""
    from physics.settings import Settings

    defaults = Settings()
    out = {}
    for name, value in settings.items():
        kind = getattr(defaults, name)
        if isinstance(kind, np.ndarray):
            out[name] = np.array([float.fromhex(v) for v in value])
        elif isinstance(kind, float):
            out[name] = float.fromhex(value)
        else:
            out[name] = value
    return out


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
    for name, value in (("shapes", scene.shapes), ("joints", scene.joints), ("events", events), ("world", scene.world)):
        digest.update(name.encode())
        digest.update(json.dumps(canonical(value), sort_keys=True).encode())
    return digest.hexdigest()


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
    def from_bytes(cls, data):
        """Read `to_bytes()` output; ValueError saying what is wrong for truncated, corrupted or
        foreign bytes, or another format version."""
        data = bytes(data)
        if len(data) < len(MAGIC) + 4 + _DIGEST or data[:len(MAGIC) - 1] != MAGIC[:-1]:
            raise ValueError("not a snapshot (no snapshot header, or truncated)")
        if data[len(MAGIC) - 1] != MAGIC[-1]:
            raise ValueError(f"snapshot format {data[len(MAGIC) - 1]}; this version reads format {MAGIC[-1]}")
        body, digest = data[:-_DIGEST], data[-_DIGEST:]
        if hashlib.sha256(body).digest() != digest:
            raise ValueError("snapshot checksum mismatch (truncated or corrupted)")
        (length,) = struct.unpack_from("<I", body, len(MAGIC))
        start = len(MAGIC) + 4
        try:
            header = json.loads(body[start:start + length])
            payload = memoryview(body)[start + length:]
            if header["version"] != VERSION or len(payload) != header["payload"]:
                raise ValueError(f"snapshot version {header['version']} with {len(payload)} payload bytes")
            arrays = {}
            for entry in header["arrays"]:
                dtype = np.dtype(entry["dtype"])
                count = int(np.prod(entry["shape"], dtype=np.int64))
                array = np.frombuffer(payload, dtype, count, entry["offset"]).reshape(entry["shape"])
                arrays[entry["name"]] = array.astype(array.dtype.newbyteorder("="))   # a writable native copy
            return cls(header["scene"], header["scene_name"], int(header["step_count"]),
                       _decanonical_settings(header["settings"]), arrays)
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as error:
            raise ValueError(f"snapshot header unreadable: {error}") from None

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
