"""Hostile snapshots and recordings with their checksums recomputed, as anyone can make them (a
plain SHA-256): the crafted cases of `physics.tools.fuzz` and of tests/test_readers.py.

`split_*` takes a file's bytes apart into its JSON header and its body, `join_*` puts them back
together with the checksum (and, for a recording, the keyframe offsets) recomputed, so that a
reader gets past its checksum to the header and the values. `SNAPSHOT_CRAFTS` and
`RECORDING_CRAFTS` are the named smallest reproducers of each defect a reader must refuse: each
maps a name to (edit, the field or words its refusal must name).
"""
import hashlib
import json
import struct

import numpy as np

from physics.pipeline import recording as rec_format, snapshot as snap_format

_DIGEST = 32


def _sum(body):
    return body + hashlib.sha256(body).digest()


def split_snapshot(data):
    """-> (header dict, payload bytes) of `Snapshot.to_bytes()` output."""
    (length,) = struct.unpack_from("<I", data, 8)
    return json.loads(data[12:12 + length]), bytes(data[12 + length:-_DIGEST])


def join_snapshot(header, payload, text=None):
    """Snapshot bytes from a header (or its JSON `text`, as given) and a payload; checksum recomputed."""
    text = json.dumps(header, sort_keys=True).encode() if text is None else text
    return _sum(snap_format.MAGIC + struct.pack("<I", len(text)) + text + payload)


def arrays_of(header, payload):
    """The named arrays of a snapshot's header and payload (copies)."""
    return {e["name"]: np.frombuffer(payload, e["dtype"], int(np.prod(e["shape"], dtype=np.int64)), e["offset"])
            .reshape(e["shape"]).copy() for e in header["arrays"]}


def with_arrays(header, arrays):
    """(header, payload) holding `arrays` instead (entries and payload size recomputed)."""
    entries, chunks, offset = [], [], 0
    for name in sorted(arrays):
        array = np.asarray(arrays[name])
        data = array.tobytes()
        entries.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "offset": offset})
        chunks.append(data)
        offset += len(data)
    return {**header, "arrays": entries, "payload": offset}, b"".join(chunks)


def edit_snapshot(data, header_edit=None, arrays_edit=None):
    """Snapshot bytes changed by `header_edit(header)` and `arrays_edit(arrays)` (each in place)."""
    header, payload = split_snapshot(data)
    if arrays_edit is not None:
        arrays = arrays_of(header, payload)
        arrays_edit(arrays)
        header, payload = with_arrays(header, arrays)
    if header_edit is not None:
        header_edit(header)
    return join_snapshot(header, payload)


def split_recording(data):
    """-> (header dict, [keyframe bytes]) of a recording's bytes."""
    (length,) = struct.unpack_from("<I", data, 8)
    header = json.loads(data[12:12 + length])
    frames = data[12 + length:-_DIGEST]
    return header, [bytes(frames[e["offset"]:e["offset"] + e["length"]]) for e in header["keyframes"]]


def join_recording(header, frames, entries=True, text=None):
    """Recording bytes; the keyframe entries' offsets and lengths recomputed unless `entries` is
    False, and the checksum always."""
    if entries and isinstance(header.get("keyframes"), list):
        offset = 0
        for entry, frame in zip(header["keyframes"], frames):
            if isinstance(entry, dict):         # (a mutated entry stays as it is)
                entry["offset"], entry["length"] = offset, len(frame)
            offset += len(frame)
    text = json.dumps(header).encode() if text is None else text
    return _sum(rec_format.MAGIC + struct.pack("<I", len(text)) + text + b"".join(frames))


def deep(depth):
    """JSON text nested `depth` lists deep."""
    return b"[" * depth + b"]" * depth


def _replace_text(data, key, raw, join, split):
    """Bytes whose JSON header has `key`'s value replaced by the raw JSON text `raw`."""
    header, body = split(data)
    header[key] = "@@HERE@@"
    text = json.dumps(header, sort_keys=join is join_snapshot).encode().replace(b'"@@HERE@@"', raw)
    return join(header, body, text=text)


def _parents(change):
    def edit(arrays):
        parent = arrays["topology.parent"]
        change(parent)
    return edit


def _set(name, index, value):
    def edit(arrays):
        arrays[name][index] = value
    return edit


def _header(key, value):
    def edit(header):
        if value is _DELETE:
            del header[key]
        else:
            header[key] = value
    return edit


_DELETE = object()


def _settings(name, value):
    def edit(header):
        header["settings"][name] = value
    return edit


def _zero_rotation(arrays):
    arrays["local.rotation"][-1] = 0.0


def _oversized(header):
    header["arrays"][0]["shape"] = [2**31] + header["arrays"][0]["shape"][1:]


# name -> (bytes -> bytes, a pattern the refusal's message must hold). The base snapshot holds a
# topology other than the file's (topology.parent) and contacts (solver.cache.impulses).
SNAPSHOT_CRAFTS = {
    "self parent": (lambda d: edit_snapshot(d, arrays_edit=_parents(lambda p: p.__setitem__(1, 1))), "topology.parent.*cycle"),
    "2-cycle": (lambda d: edit_snapshot(d, arrays_edit=_parents(lambda p: (p.__setitem__(1, 2), p.__setitem__(2, 1)))),
                "topology.parent.*cycle"),
    "parent 10^6": (lambda d: edit_snapshot(d, arrays_edit=_parents(lambda p: p.__setitem__(1, 10**6))), "topology.parent"),
    "NaN time": (lambda d: edit_snapshot(d, arrays_edit=_set("time", (), np.nan)), "'time'"),
    "zero rotation": (lambda d: edit_snapshot(d, arrays_edit=_zero_rotation), "local.rotation.*not a rotation"),
    "fixed node moving": (lambda d: edit_snapshot(d, arrays_edit=_set("local.velocity", 0, 1e308)),
                          "local.velocity.*fixed node"),
    "fixed node far": (lambda d: edit_snapshot(d, arrays_edit=_set("local.translation", 0, 1e308)),
                       "local.translation.*fixed node"),
    "scale 1e308": (lambda d: edit_snapshot(d, arrays_edit=_set("local.scale", 1, 1e308)), "local.scale.*e\\+308.*scales in"),
    "NaN impulses": (lambda d: edit_snapshot(d, arrays_edit=_set("solver.cache.impulses", 0, np.nan)), "solver.cache.impulses"),
    "negative step count": (lambda d: edit_snapshot(d, header_edit=_header("step_count", -5)), "step_count.*-5"),
    "unknown setting": (lambda d: edit_snapshot(d, header_edit=_settings("warp", 1)), "newer version.*unknown setting 'warp'"),
    "Infinity": (lambda d: _replace_text(d, "step_count", b"Infinity", join_snapshot, split_snapshot), "Infinity"),
    "2^70": (lambda d: edit_snapshot(d, header_edit=_header("step_count", 2**70)), "step_count.*1180591620717411303424"),
    "deep nesting": (lambda d: _replace_text(d, "scene_name", deep(100000), join_snapshot, split_snapshot), "nested too deep"),
    "missing field": (lambda d: edit_snapshot(d, header_edit=_header("arrays", _DELETE)), "'arrays'.*missing"),
    "mistyped field": (lambda d: edit_snapshot(d, header_edit=_header("settings", [1, 2])), "settings"),
    "mistyped setting": (lambda d: edit_snapshot(d, header_edit=_settings("dt", 0.01)), "settings.dt"),
    "setting out of range": (lambda d: edit_snapshot(d, header_edit=_settings("dt", (-1.0).hex())), "settings.dt"),
    "unknown array": (lambda d: edit_snapshot(d, arrays_edit=lambda a: a.__setitem__("future.thing", np.zeros(3))),
                      "future.thing.*newer version"),
    "truncated body": (lambda d: join_snapshot(split_snapshot(d)[0], split_snapshot(d)[1][:-100]), "payload"),
    "oversized declared length": (lambda d: edit_snapshot(d, header_edit=_oversized), "offset|shape"),
    "impulse keys out of order": (lambda d: edit_snapshot(d, arrays_edit=lambda a: a.__setitem__(
        "solver.cache.impulse_keys", a["solver.cache.impulse_keys"][::-1].copy())), "solver.cache.impulse_keys"),
    "every body asleep": (lambda d: edit_snapshot(d, arrays_edit=_set("asleep", slice(None), True)),
                          "'asleep'.*bodies that may sleep"),
    "control past its range": (lambda d: edit_snapshot(d, arrays_edit=_set("drive.control", 0, 1e308)),
                               "drive.control.*ctrl_range"),
}


def _keyframe(index, craft):
    """A recording edit: the snapshot craft `craft` applied to keyframe `index`."""
    def edit(data):
        header, frames = split_recording(data)
        frames[index] = craft(frames[index])
        return join_recording(header, frames)
    return edit


def _recording_header(change):
    def edit(data):
        header, frames = split_recording(data)
        change(header)
        return join_recording(header, frames)
    return edit


def change_scene_mass(header):
    """The scene text with one node's mass changed (the first `mass = ` line gets 7.5)."""
    lines = header["scene_text"].splitlines()
    k = next(i for i, line in enumerate(lines) if line.replace(" ", "").startswith("mass="))
    lines[k] = "mass = 7.5"
    header["scene_text"] = "\n".join(lines) + "\n"


RECORDING_CRAFTS = {
    **{f"keyframe {name}": (_keyframe(-1, craft), pattern) for name, (craft, pattern) in SNAPSHOT_CRAFTS.items()},
    "origin keyframe NaN time": (_keyframe(0, SNAPSHOT_CRAFTS["NaN time"][0]), "keyframe at step 0.*'time'"),
    "changed scene": (_recording_header(change_scene_mass), "not the scene its keyframes were taken in.*mass"),
    "unknown header key": (_recording_header(lambda h: h.__setitem__("future", 1)), "newer version.*'future'"),
    "missing hashes": (_recording_header(lambda h: h.pop("hashes")), "'hashes' missing"),
    "hash count": (_recording_header(lambda h: h["hashes"].pop()), "'hashes'"),
    "origin past head": (_recording_header(lambda h: h.__setitem__("origin", h["head"] + 1)), "'head'|'origin'"),
    "keyframe_every 0": (_recording_header(lambda h: h.__setitem__("keyframe_every", 0)), "keyframe_every"),
    "keyframe_every 2^70": (_recording_header(lambda h: h.__setitem__("keyframe_every", 2**70)), "keyframe_every"),
    "input on no node": (_recording_header(lambda h: h["inputs"].append(
        {"step": h["head"], "kind": "impulse", "args": ["nobody", [(1.0).hex()] * 3, None]})), "no node 'nobody'"),
    "input NaN impulse": (_recording_header(lambda h: h["inputs"].append(
        {"step": h["head"], "kind": "impulse", "args": [h["inputs"][0]["args"][0], ["nan"] * 3, None]})), "3 finite"),
    "input 2^70 hex": (_recording_header(lambda h: h["inputs"].append(
        {"step": h["head"], "kind": "set", "args": ["dt", "0x1p99999"]})), "input"),
    "input unknown kind": (_recording_header(lambda h: h["inputs"].append(
        {"step": h["head"], "kind": "teleport", "args": []})), "input kind 'teleport'"),
    "input step negative": (_recording_header(lambda h: h["inputs"].append(
        {"step": -1, "kind": "set", "args": ["dt", (0.01).hex()]})), "step -1"),
    "input unknown setting": (_recording_header(lambda h: h["inputs"].append(
        {"step": h["head"], "kind": "set", "args": ["warp", 1]})), "warp"),
    "lone surrogate scene_path": (_recording_header(lambda h: h.__setitem__("scene_path", "car\udcff.toml")),
                                  "'scene_path'.*lone surrogate"),
    "input unknown actuator": (_recording_header(lambda h: h["inputs"].append(
        {"step": h["head"], "kind": "control", "args": ["wrist", (1.0).hex()]})), "unknown actuator 'wrist'"),
    "keyframe length 2^40": (lambda d: join_recording(*(lambda h, f: (h.__setitem__("keyframes", [
        {**e, "length": 2**40} for e in h["keyframes"]]) or h, f))(*split_recording(d)), entries=False),
        "truncated or corrupted|keyframes"),
    "keyframe step mismatch": (_recording_header(lambda h: h["keyframes"][-1].__setitem__(
        "step", h["keyframes"][-1]["step"] - 1)), "step_count|keyframes"),
    "deep nesting": (lambda d: _replace_text(d, "scene_path", deep(100000), lambda h, f, text: join_recording(
        h, f, text=text), split_recording), "nested too deep"),
    "Infinity": (lambda d: _replace_text(d, "head", b"Infinity", lambda h, f, text: join_recording(h, f, text=text),
                                         split_recording), "Infinity"),
    "header length past the end": (lambda d: d[:8] + struct.pack("<I", 2**32 - 1) + d[12:], "header declares"),
    "padded to 1 MB": (lambda d: _sum(d[:-_DIGEST] + bytes(2**20)), "truncated or corrupted"),
    "truncated body": (lambda d: _sum(d[:-_DIGEST - 100]), "truncated or corrupted"),
}
