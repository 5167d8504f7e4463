"""Recordings (.rec): a self-contained run — scene text, keyframe snapshots, inputs, every step's hash.

Box2D v3's recordings are the model: a snapshot to start from, every world-changing call with its
step, and a state hash per step, so that a replay can say which step first differs. A recording is
written from a `physics.pipeline.timeline.Timeline` (the app's Ctrl+S, the runner's `--record`) and read back
into one (`Recording.timeline()`: scrub it, branch from any step) or verified
(`Recording.verify()`, `python -m physics replay FILE.rec --verify`).

File layout (docs/recording-format.md; little-endian):
    MAGIC (8 bytes: b"HSREC", 0, 0, format version) | header length (u32) | header (UTF-8 JSON)
    | keyframes (each `physics.Snapshot.to_bytes()`, back to back) | SHA-256 of everything before (32)
The header: "format", "version", "scene_path" (where the scene was loaded from, for messages),
"scene_text" (the scene file's text: the recording needs no other file), "settings" (at the first
keyframe), "keyframe_every", "origin" and "head" (first and last step), "inputs" (`Input.to_json`),
"hashes" (hex SHA-256 of the state at each step origin..head, `Simulation.state_hash`), and
"keyframes" (step, offset and length of each in the keyframe section), "scene_digests" (what
differs in a changed scene is said from these: `physics.pipeline.snapshot.scene_digests`). Written
atomically (a temporary file renamed into place) with 0666 less the umask; an existing file is
never overwritten unless asked.

Reading trusts nothing the checksum covers (anyone can recompute a SHA-256): only a regular file
is opened (a FIFO never blocks), the header and the sizes it declares are checked against the
file before the keyframes are read, then every key, input and keyframe, and, against the scene,
every keyframe as `Simulation.restore` would check it (`Recording.simulation`). Each refusal is a
`RecordingError` naming the file, the key or the step, and the value.
"""
import hashlib
import io
import json
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from physics.core.files import NotRegularFile, open_regular, write_atomically
from physics.core.settings import Settings
from physics.io.scene import SceneError, scene_from_text
from physics.pipeline.snapshot import (OLDER, STEP_MAX, Snapshot, SnapshotError, canonical, decode_settings, integer,
                              scene_differences, scene_digests, strict_json)
from physics.pipeline.timeline import Input, Timeline
from physics.core.validation import short_repr

MAGIC = b"HSREC\x00\x00\x03"
VERSION = 3      # with snapshot format 3 (physics.pipeline.snapshot.VERSION)
FORMAT = "hierarchy-sandbox recording"
_DIGEST = 32


class RecordingError(ValueError):
    """A recording that cannot be read: the message names the file and what is wrong."""

    def __init__(self, path, reason):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}")


@dataclass
class Recording:
    scene_path: str
    scene_text: str
    keyframe_every: int
    origin: int
    head: int
    inputs: list        # Input
    hashes: dict        # step -> hex digest
    keyframes: dict     # step -> Snapshot
    path: str = "<recording>"
    scene_digests: dict | None = None   # `physics.pipeline.snapshot.scene_digests` of the keyframes' scene
    # `simulation`'s parsed scene, kept with the text and name it was parsed from: `verify` and
    # `timeline` build one simulation each, and the 1,000-box pile's text takes 0.4 s to parse
    _loaded: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_timeline(cls, timeline, scene_text, scene_path, keyframe_every=None):
        """What `timeline` holds now (its states origin..head), with its scene's text. With
        `keyframe_every`, its keyframes thinned to about that spacing: the origin's, then each one
        at least that many steps after the last kept (so a stretch the timeline holds sparser, a
        reopened recording's, keeps what it has). Every other state is the re-simulation of the one
        before (bit for bit, the hashes checking it): the file is that much smaller, and a seek into
        it steps at most twice that many steps (the app's timeline keeps a keyframe every step or few)."""
        if timeline.head not in timeline.hashes:
            raise ValueError("the timeline has no hash of its last step")
        every = max(timeline.keyframe_every, int(keyframe_every or 0))
        keyframes, last = {}, None
        for s, snap in sorted(timeline.keyframes.items()):
            if last is None or s - last >= every:
                keyframes[s], last = snap, s
        return cls(str(scene_path), scene_text, every, timeline.origin, timeline.head,
                   list(timeline.inputs), {s: timeline.hashes[s] for s in range(timeline.origin, timeline.head + 1)},
                   keyframes, scene_digests=scene_digests(timeline.sim.scene))

    # ------------------------------------------------------------------ bytes
    def to_bytes(self):
        blobs, entries, offset = [], [], 0
        for step, snap in sorted(self.keyframes.items()):
            data = snap.to_bytes()
            entries.append({"step": step, "offset": offset, "length": len(data)})
            blobs.append(data)
            offset += len(data)
        first = self.keyframes[min(self.keyframes)]
        header = {
            "format": FORMAT, "version": VERSION, "scene_path": self.scene_path, "scene_text": self.scene_text,
            "settings": canonical(first.settings), "keyframe_every": self.keyframe_every, "origin": self.origin,
            "head": self.head, "inputs": [i.to_json() for i in self.inputs],
            "hashes": [self.hashes[s] for s in range(self.origin, self.head + 1)], "keyframes": entries,
        }
        if self.scene_digests is not None:
            header["scene_digests"] = self.scene_digests
        header = json.dumps(header).encode()
        body = MAGIC + struct.pack("<I", len(header)) + header + b"".join(blobs)
        return body + hashlib.sha256(body).digest()

    @classmethod
    def from_bytes(cls, data, path="<recording>"):
        """Parse `to_bytes()` output; RecordingError naming `path` and what is wrong otherwise."""
        return _read(io.BytesIO(bytes(data)), len(data), path)

    # ------------------------------------------------------------------ use
    def simulation(self):
        """A fresh Simulation of the recorded scene, at the recording's origin (the first keyframe).
        Refuses (RecordingError), before anything runs, a scene text that does not load, keyframes
        taken in another scene (saying what differs), a keyframe no run of the scene can be in
        (`Simulation.check_restorable`: it names the field) and inputs on nodes it lacks."""
        # here, as below: `python -m physics` builds its parser from this module, and the
        # Simulation's modules (numba's dispatchers) load only for a command that steps
        from physics.pipeline.simulation import Simulation

        fail = lambda reason: RecordingError(self.path, reason)
        source = f"{self.path} (scene {self.scene_path})"
        if self._loaded is None or self._loaded[:2] != (self.scene_text, source):
            try:
                self._loaded = (self.scene_text, source, scene_from_text(self.scene_text, source))
            except SceneError as error:
                raise fail(f"its scene cannot be loaded: {error}") from None
        try:
            sim = Simulation(self._loaded[2])       # a Simulation never changes its Scene (compare does the same)
        except SceneError as error:
            raise fail(f"its scene cannot be loaded: {error}") from None
        first = self.keyframes[self.origin]
        if first.scene != sim.scene_fingerprint:
            said = scene_differences(self.scene_digests, sim.scene) if self.scene_digests else \
                "its model differs (the file holds no per-part digests to say where)"
            raise fail(f"its scene text is not the scene its keyframes were taken in: {said}")
        for step, keyframe in self.keyframes.items():
            try:
                sim.check_restorable(keyframe)
            except ValueError as error:
                raise fail(f"keyframe at step {step}: {error}") from None
        names, actuators = set(sim.names), set(sim.controls)
        for entry in self.inputs:
            if entry.kind == "control":
                if entry.args[0] not in actuators:
                    raise fail(f"input control at step {entry.step}: unknown actuator {short_repr(entry.args[0])}; the "
                               f"scene's actuators: {', '.join(map(repr, sorted(actuators))) or 'none'}")
                continue
            if entry.kind == "pose":
                joints = set(sim.joint_coordinates())
                if entry.args[0] not in joints:
                    raise fail(f"input pose at step {entry.step}: unknown joint {short_repr(entry.args[0])}; the "
                               f"scene's named hinges and sliders: {', '.join(map(repr, sorted(joints))) or 'none'}")
                continue
            if entry.kind == "launch":
                launchers = [spec["name"] for spec in sim.scene.launchers]
                if entry.args[0] not in launchers:
                    raise fail(f"input launch at step {entry.step}: unknown launcher {short_repr(entry.args[0])}; the "
                               f"scene's launchers: {', '.join(map(repr, launchers)) or 'none'}")
                continue
            nodes = [entry.args[0]] if entry.kind != "set" else []
            if entry.kind == "reparent" and entry.args[1] is not None:
                nodes.append(entry.args[1])
            for node in nodes:
                if node not in names:
                    raise fail(f"input {entry.kind} at step {entry.step}: no node {short_repr(node)} in its scene")
        sim.restore(first)
        return sim

    def timeline(self, budget=None):
        """A Timeline over a fresh simulation at the origin, holding every recorded state up to the
        head (seek anywhere in it, step on, branch). Its own keyframes come at the spacing its
        budget gives (`Timeline.keyframe_every` chosen), not the file's: a recording saved with one
        every 60 steps keeps more as it is stepped and sought through, within the budget."""
        sim = self.simulation()
        timeline = Timeline(sim, **({} if budget is None else {"budget": budget}))
        timeline.keyframes = dict(self.keyframes)
        timeline.bytes = sum(k.nbytes for k in self.keyframes.values())
        timeline.inputs, timeline.hashes = list(self.inputs), dict(self.hashes)
        timeline.origin, timeline.head = self.origin, self.head
        timeline.scene_text, timeline.scene_path = self.scene_text, self.scene_path
        return timeline

    def verify(self, progress=None):
        """Re-simulate from the first keyframe, applying every input at its step, and check every
        step's hash. -> (steps verified, first step whose hash differs or None). An input the
        simulation refuses raises a RecordingError naming the file, the step and the input; a
        divergence raises the simulation's DivergenceError."""
        from physics.pipeline.stages import DivergenceError

        sim = self.simulation()
        if sim.state_hash() != self.hashes[self.origin]:
            return 0, self.origin
        by_step = {}
        for recorded in self.inputs:
            by_step.setdefault(recorded.step, []).append(recorded)
        for step in range(self.origin + 1, self.head + 1):
            try:
                sim.step(1)
            except DivergenceError:
                raise
            except ValueError as error:     # a step the simulation refuses (the contact budget)
                raise RecordingError(self.path, f"step {step}: {error}") from None
            for recorded in by_step.get(step, ()):
                try:
                    recorded.apply(sim)
                except DivergenceError:
                    raise
                except ValueError as error:
                    raise RecordingError(self.path, f"step {step}: input {recorded.kind} refused: {error}") from None
            if sim.state_hash() != self.hashes[step]:
                return step - self.origin - 1, step
            if progress is not None:
                progress(step - self.origin)
        return self.head - self.origin, None


# ---------------------------------------------------------------------- reading
_HEADER_KEYS = ("format", "version", "scene_path", "scene_text", "settings", "keyframe_every", "origin", "head",
                "inputs", "hashes", "keyframes")
_OPTIONAL_KEYS = ("scene_digests",)
KEYFRAME_EVERY_MAX = 10**9
_CHUNK = 1 << 20             # bytes read at a time
_CHECK_FIRST = 64 << 20      # a file up to this size has its checksum checked before a bad header is named


def _header(header, fail):
    """The parsed header -> a dict of checked values; a RecordingError naming the key and the
    value for anything missing, mistyped, out of range or unknown (a newer version's key)."""
    if not isinstance(header, dict):
        raise fail(f"header: got {short_repr(header)}; expected a JSON object")
    if header.get("format") != FORMAT or type(header.get("version")) is not int or header["version"] != VERSION:
        version = header.get("version") if type(header.get("version")) is int else VERSION
        newer = " (written by a newer version)" if version > VERSION else OLDER if version < VERSION else ""
        raise fail(f"format {short_repr(header.get('format'))} version {short_repr(header.get('version'))}{newer}; "
                   f"expected {FORMAT!r} {VERSION}")
    unknown = sorted(set(header) - set(_HEADER_KEYS) - set(_OPTIONAL_KEYS))
    if unknown:
        raise fail(f"written by a newer version: unknown header key {short_repr(unknown[0])}")
    for key in _HEADER_KEYS:
        if key not in header:
            raise fail(f"header key {key!r} missing")
    bad = lambda key, expected: fail(f"header key {key!r}: got {short_repr(header[key])}; expected {expected}")
    for key in ("scene_path", "scene_text"):
        if not isinstance(header[key], str):
            raise bad(key, "a string")
        try:        # JSON escapes can spell lone surrogates, which no file name or text holds
            header[key].encode("utf-8")
        except UnicodeEncodeError as error:
            raise bad(key, f"Unicode text (a lone surrogate at character {error.start})") from None
    if integer(header["keyframe_every"], 1, KEYFRAME_EVERY_MAX) is None:
        raise bad("keyframe_every", f"an integer in 1 .. {KEYFRAME_EVERY_MAX}")
    if integer(header["origin"], 0, STEP_MAX) is None:
        raise bad("origin", "an integer in 0 .. 2**62")
    origin = header["origin"]
    if integer(header["head"], origin, STEP_MAX) is None:
        raise bad("head", f"an integer in {origin} (the origin) .. 2**62")
    head, hashes = header["head"], header["hashes"]
    if not isinstance(hashes, list) or len(hashes) != head - origin + 1:
        raise fail(f"header key 'hashes': got {len(hashes) if isinstance(hashes, list) else short_repr(hashes)} "
                   f"hashes; expected {head - origin + 1}, one per step {origin}..{head}")
    for k, digest in enumerate(hashes):
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            raise fail(f"header key 'hashes': step {origin + k}: got {short_repr(digest)}; expected 64 hex digits")
    settings = decode_settings(header["settings"], lambda reason, field=None: fail(
        f"header key {field or 'settings'!r}: {reason}"))
    entries, offset, steps = header["keyframes"], 0, []
    if not isinstance(entries, list) or not entries:
        raise bad("keyframes", "a list of {step, offset, length}, the first at the origin")
    for k, entry in enumerate(entries):
        if not (isinstance(entry, dict) and sorted(entry) == ["length", "offset", "step"]
                and integer(entry["step"], origin, head) is not None and integer(entry["length"], 1, STEP_MAX) is not None
                and entry["offset"] == offset and type(entry["offset"]) is int and (not steps or entry["step"] > steps[-1])):
            raise fail(f"header key 'keyframes': entry {k}: got {short_repr(entry)}; expected {{step, offset, length}} "
                       f"with steps ascending in {origin}..{head} and offset {offset} (back to back)")
        steps.append(entry["step"])
        offset += entry["length"]
    if steps[0] != origin:
        raise fail(f"header key 'keyframes': the first is at step {steps[0]}; expected one at the origin, step {origin}")
    inputs = []
    if not isinstance(header["inputs"], list):
        raise bad("inputs", "a list")
    for k, raw in enumerate(header["inputs"]):
        step = raw.get("step") if isinstance(raw, dict) else None
        where = f"input {k}" + (f" (step {step})" if type(step) is int else "")
        if not isinstance(raw, dict) or sorted(raw) != ["args", "kind", "step"]:
            raise fail(f"{where}: got {short_repr(raw)}; expected {{step, kind, args}}")
        if integer(step, origin, head) is None:
            raise fail(f"{where}: step {short_repr(step)}; expected an integer in {origin}..{head}")
        try:
            entry = Input.from_json(raw)
            _check_input(entry)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError, AttributeError) as error:
            raise fail(f"{where}: {error if isinstance(error, ValueError) else f'{type(error).__name__}: {error}'}") from None
        inputs.append(entry)
    digests = header.get("scene_digests")
    if digests is not None and not (isinstance(digests, dict) and sorted(digests) == ["nodes", "parts"] and all(
            isinstance(table, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in table.items())
            for table in digests.values())):
        raise fail(f"header key 'scene_digests': got {short_repr(digests)}; expected {{parts, nodes}} of digests")
    return {**header, "settings": settings, "inputs": inputs, "steps": steps, "keyframe_bytes": offset}


def _check_input(entry):
    """What an input holds, as its kind needs it (its nodes are checked against the scene later)."""
    args = entry.args
    if entry.kind == "set":
        if len(args) != 2:
            raise ValueError(f"set input: got {short_repr(list(args))}; expected [name, value]")
        Settings().set(*args)           # a SettingError names the key and the value
    elif entry.kind in ("control", "pose"):
        if not (isinstance(args[0], str) and np.isfinite(args[1])):
            what = "actuator" if entry.kind == "control" else "joint"
            raise ValueError(f"{entry.kind} input: got {short_repr(list(args))}; expected [{what} name, a finite value]")
    elif entry.kind in ("impulse", "force"):
        if len(args) != 3 or not isinstance(args[0], str):
            raise ValueError(f"{entry.kind} input: got {short_repr(list(args))}; expected [node, vector, point or null]")
        for name, vector in (("vector", args[1]), ("point", args[2])):
            if vector is not None and (np.shape(vector) != (3,) or not np.all(np.isfinite(vector))):
                raise ValueError(f"{entry.kind} input: {name} {short_repr(vector)}; expected 3 finite numbers")


def _read_exactly(stream, count, fail):
    data = stream.read(count)
    if len(data) != count:
        raise fail(f"truncated: {len(data)} bytes where {count} were expected")
    return data


def _read(stream, size, path):
    """A recording from `stream` holding `size` bytes: the framing and the header are checked,
    and the declared sizes against the file's, before the keyframes are read (a large or padded
    file is refused without reading it); the checksum is streamed; then every keyframe is parsed."""
    fail = lambda reason: RecordingError(path, reason)
    prefix = len(MAGIC) + 4
    head = stream.read(prefix)
    if len(head) < len(MAGIC) or head[:5] != MAGIC[:5]:
        raise fail("not a recording (no .rec header)" if head[:5] != MAGIC[:5] or len(head) >= 5 else "truncated")
    if head[len(MAGIC) - 1] != MAGIC[-1]:
        newer = " (written by a newer version)" if head[len(MAGIC) - 1] > MAGIC[-1] else OLDER
        raise fail(f"recording format version {head[len(MAGIC) - 1]}{newer}; this version reads {MAGIC[-1]}")
    if len(head) < prefix or size < prefix + _DIGEST:
        raise fail(f"truncated: {size} bytes")
    (length,) = struct.unpack_from("<I", head, len(MAGIC))
    if prefix + length + _DIGEST > size:
        raise fail(f"truncated or corrupted: the header declares {length} bytes, the file has {size}")
    text = _read_exactly(stream, length, fail)
    digest = hashlib.sha256(head + text)

    def checksum_first(error):
        """A header that does not parse is named as such, unless the file fails its checksum."""
        if size <= _CHECK_FIRST:
            rest = stream.read(size - prefix - length)
            digest.update(rest[:-_DIGEST])
            if digest.digest() != rest[-_DIGEST:]:
                return fail("checksum mismatch: the file is truncated or corrupted")
        return error

    try:
        header = _header(strict_json(text, lambda reason: fail(f"unreadable header: {reason}")), fail)
    except RecordingError as error:
        raise checksum_first(error) from None
    keyframe_bytes = header["keyframe_bytes"]
    if prefix + length + keyframe_bytes + _DIGEST != size:
        raise fail(f"truncated or corrupted: the header declares {keyframe_bytes} bytes of keyframes, "
                   f"the file holds {size - prefix - length - _DIGEST}")
    frames = bytearray(keyframe_bytes)      # bounded by the file's own size (checked above)
    view, done = memoryview(frames), 0
    while done < keyframe_bytes:
        count = stream.readinto(view[done:done + _CHUNK])
        if not count:
            raise fail(f"truncated: the file ended {keyframe_bytes - done} bytes early")
        digest.update(view[done:done + count])
        done += count
    if digest.digest() != _read_exactly(stream, _DIGEST, fail):
        raise fail("checksum mismatch: the file is truncated or corrupted")
    keyframes, offset = {}, 0
    for step, entry in zip(header["steps"], header["keyframes"]):
        try:
            snapshot = Snapshot.from_bytes(view[offset:offset + entry["length"]], source="")
        except SnapshotError as error:
            raise fail(f"keyframe at step {step}: " + (f"field {error.field!r}: " if error.field else "")
                       + error.reason) from None
        offset += entry["length"]
        if snapshot.step_count != step:
            raise fail(f"keyframe at step {step}: its step_count is {snapshot.step_count}")
        if snapshot.scene != keyframes.get(header["steps"][0], snapshot).scene:
            raise fail(f"keyframe at step {step}: of another scene than the keyframe at the origin")
        keyframes[step] = snapshot
    if canonical(keyframes[header["origin"]].settings) != canonical(header["settings"]):
        raise fail("header key 'settings': not the settings of the first keyframe")
    origin, last = header["origin"], header["head"]
    return Recording(header["scene_path"], header["scene_text"], header["keyframe_every"], origin, last,
                     header["inputs"], dict(zip(range(origin, last + 1), header["hashes"])), keyframes, str(path),
                     header.get("scene_digests"))


def write_recording(path, timeline, overwrite=False, scene_text=None, keyframe_every=None):
    """Write `timeline` (its scene's text read from its file unless given) to `path` atomically,
    its keyframes thinned to `keyframe_every` where given (`Recording.from_timeline`);
    FileExistsError if `path` exists and not `overwrite`."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; not overwritten")
    scene_path = timeline.scene_path or timeline.sim.scene.path
    if scene_text is None:
        imported = timeline.sim.scene.toml_text   # a URDF or MJCF model's scene, as TOML (physics.io.articulated)
        scene_text = timeline.scene_text if timeline.scene_text is not None else \
            imported if imported is not None else Path(scene_path).read_text()
    data = Recording.from_timeline(timeline, scene_text, scene_path, keyframe_every).to_bytes()

    def write(out):
        out.write(data)
        if not overwrite and path.exists():     # appeared while we wrote
            raise FileExistsError(f"{path} exists; not overwritten")

    write_atomically(path, write)
    return len(data)


def read_recording(path):
    """Read a .rec file; RecordingError (a ValueError) naming the file and what is wrong. Only a
    regular file is read: a FIFO, a device or a directory is refused without waiting on it."""
    try:
        with open_regular(path, buffering=_CHUNK) as stream:
            return _read(stream, os.fstat(stream.fileno()).st_size, path)
    except NotRegularFile as error:
        raise RecordingError(path, error.strerror.replace("a regular file", "a regular .rec file")) from None
    except OSError as error:
        raise RecordingError(path, f"cannot read the file ({error.strerror or error})") from None
    except (TypeError, ValueError) as error:
        if isinstance(error, RecordingError):
            raise
        raise RecordingError(path, f"cannot read the file ({error})") from None       # a NUL in the name


# ---------------------------------------------------------------------- the `replay` subcommand
def add_parser(commands):
    """`python -m physics replay FILE.rec [--verify]` on the runner's subcommands (physics.__main__)."""
    parser = commands.add_parser(
        "replay", help="check or describe a recording (.rec)",
        description="Describe a recording; with --verify, re-simulate it from its first keyframe and check "
                    "every step's state hash. Exit 0: verified; 1: a step's hash differs (named), or the replay "
                    "diverged; 2: a bad file, named with what is wrong (not a regular file; truncated, "
                    "corrupted, of another format or a newer version; a header key, keyframe or input out of "
                    "range or not fitting its scene; a scene that cannot be loaded; an input the simulation "
                    "refuses at its step).")
    parser.add_argument("recording", metavar="FILE.rec")
    parser.add_argument("--verify", action="store_true", help="re-simulate and check every step's hash")
    parser.set_defaults(handler=replay)


def replay(args):
    """-> exit code; a bad file raises RecordingError (a ValueError: the runner exits 2)."""
    recording = read_recording(args.recording)
    if not args.verify:
        recording.simulation()      # its scene loads and every keyframe fits it, or exit 2
        kinds = {}
        for entry in recording.inputs:
            kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
        print(f"{args.recording}: scene {recording.scene_path}, steps {recording.origin}..{recording.head}, "
              f"{len(recording.keyframes)} keyframes (every {recording.keyframe_every} steps), inputs: "
              + (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "none"))
        return 0
    from physics.pipeline.stages import DivergenceError
    try:
        verified, bad = recording.verify()
    except DivergenceError as error:
        print(f"error: {args.recording}: the replay diverged where the recording did not: {error}", file=sys.stderr)
        return 1
    if bad is not None:
        print(f"error: {args.recording}: step {bad} differs: its state hash is not the recorded one "
              f"({verified} steps verified before it)", file=sys.stderr)
        return 1
    print(f"verified {verified} steps")
    return 0
