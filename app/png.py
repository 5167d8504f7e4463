"""Minimal PNG writing and reading for screenshots (8-bit RGB), with zlib only.

Writing uses filter type 0 on every row; reading accepts what `write_png` produces (8-bit RGB or
RGBA, non-interlaced, filter 0 rows) — enough for the tests' round trips; other files raise
ValueError naming what was found.
"""
import struct
import zlib
from pathlib import Path

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rgb):
    """Save an (H, W, 3) uint8 image, top row first."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"write_png: expected an (H, W, 3) uint8 array, got shape {rgb.shape} dtype {rgb.dtype}")
    h, w, _ = rgb.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, w * 3)], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    data = _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")
    Path(path).write_bytes(data)


def read_png(path):
    """Load a PNG written by `write_png` as (H, W, 3) uint8."""
    data = Path(path).read_bytes()
    if data[:8] != _SIGNATURE:
        raise ValueError(f"read_png: {path} is not a PNG (starts with {data[:8]!r})")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h, depth, color, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"read_png: unsupported PNG (bit depth {depth}, colour type {color}, interlace {interlace})")
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * channels)
    if np.any(rows[:, 0] != 0):
        raise ValueError(f"read_png: filter types {sorted(set(rows[:, 0].tolist()))} unsupported (only 0)")
    return rows[:, 1:].reshape(h, w, channels)[:, :, :3].copy()
