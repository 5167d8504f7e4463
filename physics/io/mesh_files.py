"""Mesh files a model names (URDF and MJCF meshes, a scene's hull shape read from a file): read by
trimesh behind checks that come first — a regular file, within FILE_BYTES_MAX bytes, no archive,
at most MESH_FACES_MAX faces — each failure one SceneError naming the file, the element and the
key. The scene loader and the model importers share them (physics.io.scene, physics.io.articulated).
"""
import functools
import json
import struct
from pathlib import Path

import numpy as np

from physics.core.files import open_regular, read_regular
from physics.io.errors import SceneError
from physics.model.hull import convex_hull

FILE_BYTES_MAX = 64 * 2**20      # a model or mesh file larger than this is refused before it is read
MESH_FACES_MAX = 2_000_000       # a mesh with more faces is refused (its hull or bounds are all the sandbox uses)


def visual_mesh(path, element, mesh_path, scale):
    """A drawn mesh's entry {"file", "scale"}: the file must exist and be at most FILE_BYTES_MAX
    (the app reads it); a mirrored (negative) scale is not drawn (None)."""
    mesh_path = Path(mesh_path)
    if not mesh_path.is_file():
        raise SceneError(path, element, "filename", str(mesh_path), "mesh file not found")
    if mesh_path.stat().st_size > FILE_BYTES_MAX:
        raise SceneError(path, element, "filename", str(mesh_path), f"mesh file larger than {FILE_BYTES_MAX} bytes")
    scale = np.asarray(scale, float)
    if np.any(scale <= 0):
        return None
    return {"file": str(mesh_path.resolve()), "scale": scale.tolist()}


def mesh_box(path, element, mesh_path, scale):
    """A mesh file's axis-aligned bounds in its own frame, scaled: (centre (3,), size (3,)). The
    mesh is read by trimesh; a missing, oversized or unreadable mesh is one SceneError naming it."""
    mesh_path = Path(mesh_path)
    if not mesh_path.is_file():
        raise SceneError(path, element, "filename", str(mesh_path), "mesh file not found")
    if mesh_path.stat().st_size > FILE_BYTES_MAX:
        raise SceneError(path, element, "filename", str(mesh_path), f"mesh file larger than {FILE_BYTES_MAX} bytes")
    stat = mesh_path.stat()
    problem = mesh_file_problem(mesh_path, stat.st_size)
    if problem is not None:
        raise SceneError(path, element, "filename", str(mesh_path), problem)
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
    if not mesh_path.is_file():
        raise SceneError(path, element, key, str(mesh_path), "mesh file not found")
    stat = mesh_path.stat()
    if stat.st_size > FILE_BYTES_MAX:
        raise SceneError(path, element, key, str(mesh_path), f"mesh file larger than {FILE_BYTES_MAX} bytes")
    problem = mesh_file_problem(mesh_path, stat.st_size)
    if problem is not None:
        raise SceneError(path, element, key, str(mesh_path), problem)
    try:
        faces, points = _mesh_vertices(str(mesh_path), stat.st_mtime_ns, stat.st_size)
    except Exception as error:   # trimesh raises many types for a bad file; any of them is a bad mesh
        raise SceneError(path, element, key, str(mesh_path), f"cannot read the mesh ({type(error).__name__}: {error})") from None
    if faces > MESH_FACES_MAX:
        raise SceneError(path, element, key, str(mesh_path), f"{faces} faces; at most {MESH_FACES_MAX}")
    if points.ndim != 2 or points.shape[1:] != (3,) or not len(points) or not np.all(np.isfinite(points)):
        raise SceneError(path, element, key, str(mesh_path), "the mesh has no finite vertices")
    return points * np.asarray(scale, float)


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


def mesh_file_problem(mesh_path, size):
    """Why trimesh must not be handed this mesh file, or None: what it would read past the file's
    own bytes is checked first, within the same budgets (docs/scene-format.md, "Limits").
    - only the formats of MESH_SUFFIXES: an archive (.zip) is unpacked by trimesh before any size
      is known (a 1 MB zip took 3.2 GB);
    - an OBJ's faces are counted by streaming its lines (8.3 million took 2.2 GB to parse and
      refuse), and its `mtllib` is never opened (trimesh is told to skip materials);
    - a glTF's buffers must be regular files within FILE_BYTES_MAX (a FIFO would block the read);
    - a binary STL's header must count the triangles the file holds (a wrong count sent trimesh to
      its text reader)."""
    suffix = Path(mesh_path).suffix.lower()
    if suffix not in MESH_SUFFIXES:
        return f"a {suffix or 'suffix-less'} file is not read as a mesh; expected one of {', '.join(MESH_SUFFIXES)}"
    if suffix == ".obj":
        faces = 0
        with open_regular(mesh_path) as stream:
            for line in stream:
                if line[:2] == b"f ":
                    faces += 1
                    if faces > MESH_FACES_MAX:
                        return f"more than {MESH_FACES_MAX} faces"
    elif suffix == ".stl":
        with open_regular(mesh_path) as stream:
            head = stream.read(84)
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
