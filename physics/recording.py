"""Recordings (.rec): a self-contained run — scene text, keyframe snapshots, inputs, every step's hash.

Box2D v3's recordings are the model: a snapshot to start from, every world-changing call with its
step, and a state hash per step, so that a replay can say which step first differs. A recording is
written from a `physics.timeline.Timeline` (the app's Ctrl+S, the runner's `--record`) and read back
into one (`Recording.timeline()`: scrub it, branch from any step) or verified
(`Recording.verify()`, `python -m physics replay FILE.rec --verify`).

File layout (docs/recording-format.md; little-endian):
    MAGIC (8 bytes: b"HSREC", 0, 0, format version) | header length (u32) | header (UTF-8 JSON)
    | keyframes (each `physics.Snapshot.to_bytes()`, back to back) | SHA-256 of everything before (32)
The header: "format", "version", "scene_path" (where the scene was loaded from, for messages),
"scene_text" (the scene file's text: the recording needs no other file), "settings" (at the first
keyframe), "keyframe_every", "origin" and "head" (first and last step), "inputs" (`Input.to_json`),
"hashes" (hex SHA-256 of the state at each step origin..head, `Simulation.state_hash`), and
"keyframes" (step, offset and length of each in the keyframe section). Written atomically (a
temporary file renamed into place); an existing file is never overwritten unless asked.
"""
import hashlib
import json
import os
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from physics.snapshot import Snapshot, canonical
from physics.timeline import Input, Timeline

MAGIC = b"HSREC\x00\x00\x01"
VERSION = 1
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

    @classmethod
    def from_timeline(cls, timeline, scene_text, scene_path):
        """What `timeline` holds now (its states origin..head), with its scene's text."""
        if timeline.head not in timeline.hashes:
            raise ValueError("the timeline has no hash of its last step")
        return cls(str(scene_path), scene_text, timeline.keyframe_every, timeline.origin, timeline.head,
                   list(timeline.inputs), {s: timeline.hashes[s] for s in range(timeline.origin, timeline.head + 1)},
                   dict(sorted(timeline.keyframes.items())))

    # ------------------------------------------------------------------ bytes
    def to_bytes(self):
        blobs, entries, offset = [], [], 0
        for step, snap in sorted(self.keyframes.items()):
            data = snap.to_bytes()
            entries.append({"step": step, "offset": offset, "length": len(data)})
            blobs.append(data)
            offset += len(data)
        first = self.keyframes[min(self.keyframes)]
        header = json.dumps({
            "format": FORMAT, "version": VERSION, "scene_path": self.scene_path, "scene_text": self.scene_text,
            "settings": canonical(first.settings), "keyframe_every": self.keyframe_every, "origin": self.origin,
            "head": self.head, "inputs": [i.to_json() for i in self.inputs],
            "hashes": [self.hashes[s] for s in range(self.origin, self.head + 1)], "keyframes": entries,
        }).encode()
        body = MAGIC + struct.pack("<I", len(header)) + header + b"".join(blobs)
        return body + hashlib.sha256(body).digest()

    @classmethod
    def from_bytes(cls, data, path="<recording>"):
        """Parse `to_bytes()` output; RecordingError naming `path` and what is wrong otherwise."""
        fail = lambda reason: RecordingError(path, reason)
        if len(data) < len(MAGIC) + 4 + _DIGEST or data[:5] != MAGIC[:5]:
            raise fail("not a recording (no .rec header)" if data[:5] != MAGIC[:5] else "truncated")
        if data[len(MAGIC) - 1] != MAGIC[-1]:
            raise fail(f"recording format version {data[len(MAGIC) - 1]}; this version reads {MAGIC[-1]}")
        body, digest = data[:-_DIGEST], data[-_DIGEST:]
        if hashlib.sha256(body).digest() != digest:
            raise fail("checksum mismatch: the file is truncated or corrupted")
        (length,) = struct.unpack_from("<I", body, len(MAGIC))
        start = len(MAGIC) + 4
        try:
            header = json.loads(body[start:start + length])
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise fail(f"format {header.get('format')!r} version {header.get('version')!r}; expected {FORMAT!r} {VERSION}")
            frames = body[start + length:]
            keyframes = {int(e["step"]): Snapshot.from_bytes(frames[e["offset"]:e["offset"] + e["length"]])
                         for e in header["keyframes"]}
            origin, head = int(header["origin"]), int(header["head"])
            hashes = dict(zip(range(origin, head + 1), header["hashes"]))
            if len(hashes) != head - origin + 1 or origin not in keyframes:
                raise fail(f"{len(hashes)} hashes for steps {origin}..{head}, keyframe at the origin: {origin in keyframes}")
            return cls(header["scene_path"], header["scene_text"], int(header["keyframe_every"]), origin, head,
                       [Input.from_json(i) for i in header["inputs"]], hashes, keyframes, str(path))
        except RecordingError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise fail(f"unreadable header: {type(error).__name__}: {error}") from None

    # ------------------------------------------------------------------ use
    def simulation(self):
        """A fresh Simulation of the recorded scene, at the recording's origin (the first keyframe)."""
        from physics.scene import SceneError, scene_from_text
        from physics.simulation import Simulation

        try:
            sim = Simulation(scene_from_text(self.scene_text, f"{self.path} (scene {self.scene_path})"))
            sim.restore(self.keyframes[self.origin])
        except SceneError as error:
            raise RecordingError(self.path, f"its scene cannot be loaded: {error}") from None
        except ValueError as error:
            raise RecordingError(self.path, f"its first keyframe does not fit its scene: {error}") from None
        return sim

    def timeline(self, budget=None):
        """A Timeline over a fresh simulation at the origin, holding every recorded state up to the
        head (seek anywhere in it, step on, branch)."""
        sim = self.simulation()
        timeline = Timeline(sim, keyframe_every=self.keyframe_every, **({} if budget is None else {"budget": budget}))
        timeline.keyframes = dict(self.keyframes)
        timeline.bytes = sum(k.nbytes for k in self.keyframes.values())
        timeline.inputs, timeline.hashes = list(self.inputs), dict(self.hashes)
        timeline.origin, timeline.head = self.origin, self.head
        timeline.scene_text, timeline.scene_path = self.scene_text, self.scene_path
        return timeline

    def verify(self, progress=None):
        """Re-simulate from the first keyframe, applying every input at its step, and check every
        step's hash. -> (steps verified, first step whose hash differs or None)."""
        sim = self.simulation()
        if sim.state_hash() != self.hashes[self.origin]:
            return 0, self.origin
        for step in range(self.origin + 1, self.head + 1):
            sim.step(1)
            for recorded in self.inputs:
                if recorded.step == step:
                    recorded.apply(sim)
            if sim.state_hash() != self.hashes[step]:
                return step - self.origin - 1, step
            if progress is not None:
                progress(step - self.origin)
        return self.head - self.origin, None


def write_recording(path, timeline, overwrite=False, scene_text=None):
    """Write `timeline` (its scene's text read from its file unless given) to `path` atomically;
    FileExistsError if `path` exists and not `overwrite`."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; not overwritten")
    scene_path = timeline.scene_path or timeline.sim.scene.path
    if scene_text is None:
        imported = timeline.sim.scene.toml_text   # a URDF or MJCF model's scene, as TOML (physics.articulated)
        scene_text = timeline.scene_text if timeline.scene_text is not None else \
            imported if imported is not None else Path(scene_path).read_text()
    data = Recording.from_timeline(timeline, scene_text, scene_path).to_bytes()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if not overwrite and path.exists():     # appeared while we wrote
            raise FileExistsError(f"{path} exists; not overwritten")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)


def read_recording(path):
    """Read a .rec file; RecordingError (a ValueError) naming the file and what is wrong."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RecordingError(path, f"cannot read the file ({error.strerror or error})") from None
    return Recording.from_bytes(data, path)


# ---------------------------------------------------------------------- the `replay` subcommand
def add_parser(commands):
    """`python -m physics replay FILE.rec [--verify]` on the runner's subcommands (physics.__main__)."""
    parser = commands.add_parser(
        "replay", help="check or describe a recording (.rec)",
        description="Describe a recording; with --verify, re-simulate it from its first keyframe and check "
                    "every step's state hash. Exit 0: verified; 1: a step's hash differs (named); 2: the file "
                    "is truncated, corrupted, of another format or version, or its scene cannot be loaded.")
    parser.add_argument("recording", metavar="FILE.rec")
    parser.add_argument("--verify", action="store_true", help="re-simulate and check every step's hash")
    parser.set_defaults(handler=replay)


def replay(args):
    """-> exit code; a bad file raises RecordingError (a ValueError: the runner exits 2)."""
    recording = read_recording(args.recording)
    if not args.verify:
        kinds = {}
        for entry in recording.inputs:
            kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
        print(f"{args.recording}: scene {recording.scene_path}, steps {recording.origin}..{recording.head}, "
              f"{len(recording.keyframes)} keyframes (every {recording.keyframe_every} steps), inputs: "
              + (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "none"))
        return 0
    recording.simulation()      # a scene that cannot be loaded is bad input (exit 2), before any stepping
    from physics.simulation import DivergenceError
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
