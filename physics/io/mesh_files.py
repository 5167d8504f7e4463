"""Mesh files a model names (URDF and MJCF meshes, a scene's hull shape read from a file): read by
trimesh behind checks that come first — a regular file, within FILE_BYTES_MAX bytes, no archive,
at most MESH_FACES_MAX faces — each failure one SceneError naming the file, the element and the
key. The scene loader and the model importers share them (physics.io.scene, physics.io.articulated).
"""
import functools
import json
import os
import struct
from pathlib import Path
from stat import S_ISREG

import numpy as np

from physics.core.files import kind_of, open_regular, read_regular
from physics.io.errors import SceneError
from physics.model.hull import convex_hull

FILE_BYTES_MAX = 64 * 2**20      # a model or mesh file larger than this is refused before it is read
MESH_FACES_MAX = 2_000_000       # a mesh with more faces is refused (its hull or bounds are all the sandbox uses)


def visual_mesh(path, element, mesh_path, scale):
    """A drawn mesh's entry {"file", "scale"}: the file must be a regular file of at most
    FILE_BYTES_MAX (the app reads it, through `read_mesh`'s checks); a mirrored (negative) scale is
    not drawn (None)."""
    mesh_path = Path(mesh_path)
    _, problem = _stat_problem(mesh_path)
    if problem is not None:
        raise SceneError(path, element, "filename", str(mesh_path), problem)
    scale = np.asarray(scale, float)
    if np.any(scale <= 0):
        return None
    return {"file": str(mesh_path.resolve()), "scale": scale.tolist()}


def mesh_box(path, element, mesh_path, scale):
    """A mesh file's axis-aligned bounds in its own frame, scaled: (centre (3,), size (3,)). The
    mesh is read by trimesh; a missing, oversized or unreadable mesh is one SceneError naming it."""
    mesh_path = Path(mesh_path)
    stat = _checked(path, element, "filename", mesh_path)
    try:
        faces, bounds = _mesh_bounds(str(mesh_path), stat.st_mtime_ns, stat.st_size)
    except Exception as error:   # trimesh raises many types for a bad file; any of them is a bad mesh
        raise SceneError(path, element, "filename", str(mesh_path), f"cannot read the mesh ({type(error).__name__}: {error})") from None
    if faces > MESH_FACES_MAX:
        raise SceneError(path, element, "filename", str(mesh_path), f"{faces} faces; at most {MESH_FACES_MAX}")
    if bounds.shape != (2, 3) or not np.all(np.isfinite(bounds)):
        raise SceneError(path, element, "filename", str(mesh_path), "the mesh has no finite vertices")
    scale = np.abs(np.asarray(scale, float))
    size = np.maximum((bounds[1] - bounds[0]) * scale, 1e-4)   # a flat mesh still gets a thin box
    return 0.5 * (bounds[0] + bounds[1]) * np.asarray(scale, float), size


def mesh_points(path, element, mesh_path, scale, key="filename"):
    """A mesh file's vertices (P, 3) in its own frame times `scale` (3,): read by trimesh, refused
    (one SceneError naming the file, the element and `key`) when missing, larger than
    FILE_BYTES_MAX, with more than MESH_FACES_MAX faces, unreadable or not finite."""
    mesh_path = Path(mesh_path)
    stat = _checked(path, element, key, mesh_path)
    try:
        faces, points = _mesh_vertices(str(mesh_path), stat.st_mtime_ns, stat.st_size)
    except Exception as error:   # trimesh raises many types for a bad file; any of them is a bad mesh
        raise SceneError(path, element, key, str(mesh_path), f"cannot read the mesh ({type(error).__name__}: {error})") from None
    if faces > MESH_FACES_MAX:
        raise SceneError(path, element, key, str(mesh_path), f"{faces} faces; at most {MESH_FACES_MAX}")
    if points.ndim != 2 or points.shape[1:] != (3,) or not len(points) or not np.all(np.isfinite(points)):
        raise SceneError(path, element, key, str(mesh_path), "the mesh has no finite vertices")
    return points * np.asarray(scale, float)


def _checked(path, element, key, mesh_path):
    """The os.stat of a mesh file that passed `file_problem`; else one SceneError naming the model
    file `path`, the element, the key and the mesh file."""
    stat, problem = file_problem(mesh_path)
    if problem is not None:
        raise SceneError(path, element, key, str(mesh_path), problem)
    return stat


def _stat_problem(mesh_path):
    """(os.stat of the file, None) for a regular file within FILE_BYTES_MAX, else (None, why not)."""
    try:
        stat = os.stat(mesh_path)
    except (OSError, ValueError):
        return None, "mesh file not found"
    if not S_ISREG(stat.st_mode):
        return None, f"the mesh is {kind_of(stat.st_mode)}; expected a regular file"
    if stat.st_size > FILE_BYTES_MAX:
        return None, f"mesh file larger than {FILE_BYTES_MAX} bytes"
    return stat, None


def file_problem(mesh_path):
    """(os.stat of the file, None) for a mesh file trimesh may read, else (None, why not): missing,
    not a regular file, larger than FILE_BYTES_MAX, or `mesh_file_problem`."""
    stat, problem = _stat_problem(mesh_path)
    if problem is not None:
        return None, problem
    try:
        problem = mesh_file_problem(mesh_path, stat.st_size)
    except OSError as error:      # replaced by a special file since the stat
        return None, f"cannot read the mesh ({error.strerror or error})"
    return (stat, None) if problem is None else (None, problem)


def read_mesh(mesh_path, checked=False):
    """A drawn mesh file as trimesh reads it (the app's meshes), behind the checks a collision mesh
    passes (`file_problem`, unless the caller has just made them: `checked`; MESH_FACES_MAX):
    ValueError saying what failed, naming the file."""
    _, problem = (None, None) if checked else file_problem(mesh_path)
    if problem is not None:
        raise ValueError(f"{mesh_path}: {problem}")
    mesh = _load_mesh(mesh_path)
    if len(getattr(mesh, "faces", ())) > MESH_FACES_MAX:
        raise ValueError(f"{mesh_path}: {len(mesh.faces)} faces; at most {MESH_FACES_MAX}")
    return mesh


def mesh_hull(path, element, mesh_path, scale):
    """A collision mesh as a scene hull shape {"type": "hull", "vertices": ...}: the convex hull of
    its scaled vertices (physics.model.hull.convex_hull, at most HULL_VERTICES_MAX vertices), or None
    when the vertices span no volume (a flat mesh)."""
    try:
        hull = convex_hull(mesh_points(path, element, mesh_path, scale))
    except ValueError:
        return None
    return {"type": "hull", "vertices": hull.vertices.tolist()}


MESH_SUFFIXES = (".stl", ".obj", ".dae", ".ply", ".off", ".glb", ".gltf")   # read; archives and the rest refused
# An archive under a mesh's suffix is refused by its first bytes: pycollada opens a .dae that is a
# zip and unpacks the .dae inside (a 1 MB file took 2.2 GB), and no mesh format starts so.
ARCHIVE_SIGNATURES = ((b"PK\x03\x04", "zip"), (b"PK\x05\x06", "zip"), (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"),
                      (b"\xfd7zXZ\x00", "xz"), (b"7z\xbc\xaf\x27\x1c", "7z"), (b"\x28\xb5\x2f\xfd", "zstandard"))


def mesh_file_problem(mesh_path, size):
    """Why trimesh must not be handed this mesh file, or None: what it would read past the file's
    own bytes is checked first, within the same budgets (docs/scene-format.md, "Limits").
    - only the formats of MESH_SUFFIXES: an archive (.zip) is unpacked by trimesh before any size
      is known (a 1 MB zip took 3.2 GB);
    - an OBJ's faces are counted by streaming its lines (8.3 million took 2.2 GB to parse and
      refuse), and its `mtllib` is never opened (trimesh is told to skip materials);
    - a glTF's buffers must be regular files within FILE_BYTES_MAX (a FIFO would block the read);
    - a binary STL's header must count the triangles the file holds (a wrong count sent trimesh to
      its text reader);
    - no file may start as an archive does (ARCHIVE_SIGNATURES), whatever its suffix."""
    suffix = Path(mesh_path).suffix.lower()
    if suffix not in MESH_SUFFIXES:
        return f"a {suffix or 'suffix-less'} file is not read as a mesh; expected one of {', '.join(MESH_SUFFIXES)}"
    with open_regular(mesh_path) as stream:
        head = stream.read(84)
    binary_stl = suffix == ".stl" and len(head) >= 84 and 84 + 50 * struct.unpack("<I", head[80:84])[0] == size
    for signature, name in () if binary_stl else ARCHIVE_SIGNATURES:    # (a binary STL's header is free text)
        if head.startswith(signature):
            return f"a {name} archive, not a mesh (archives are not unpacked)"
    if suffix == ".obj":
        faces = 0
        with open_regular(mesh_path) as stream:
            for line in stream:
                if line[:2] == b"f ":
                    faces += 1
                    if faces > MESH_FACES_MAX:
                        return f"more than {MESH_FACES_MAX} faces"
    elif suffix == ".stl":
        if len(head) >= 84 and 84 + 50 * struct.unpack("<I", head[80:84])[0] != size and not head.lstrip().startswith(b"solid"):
            count = struct.unpack("<I", head[80:84])[0]
            return (f"a binary STL whose header counts {count} triangles ({84 + 50 * count} bytes) in a file of "
                    f"{size} bytes")
    elif suffix == ".gltf":
        try:
            document = json.loads(read_regular(mesh_path, FILE_BYTES_MAX))
        except (OSError, ValueError, RecursionError) as error:
            return f"not a glTF document ({error})"
        buffers = document.get("buffers", []) if isinstance(document, dict) else []
        for buffer in buffers if isinstance(buffers, list) else []:
            uri = buffer.get("uri") if isinstance(buffer, dict) else None
            if isinstance(uri, str) and not uri.startswith("data:"):
                target = Path(mesh_path).parent / uri
                if not target.is_file() or target.stat().st_size > FILE_BYTES_MAX:
                    return f"its buffer {uri!r} is not a regular file of at most {FILE_BYTES_MAX} bytes"
    return None


def _load_mesh(mesh_path):
    import trimesh      # here: a second to import, and only a mesh file needs it
    return trimesh.load(mesh_path, force="mesh", process=False, skip_materials=True)


@functools.lru_cache(maxsize=256)
def _mesh_vertices(mesh_path, mtime, size):
    """(face count, vertices (P, 3)) of a mesh file, read once per version of the file."""
    mesh = _load_mesh(mesh_path)
    points = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), float)
    points.setflags(write=False)
    return len(getattr(mesh, "faces", ())), points


@functools.lru_cache(maxsize=256)
def _mesh_bounds(mesh_path, mtime, size):
    """(face count, bounds (2, 3)) of a mesh file, read once per version of the file (a robot is
    loaded again at every reset to a configuration; its meshes do not change)."""
    mesh = _load_mesh(mesh_path)
    return len(getattr(mesh, "faces", ())), np.asarray(mesh.bounds, float)
