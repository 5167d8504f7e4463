"""The app's drawn meshes (app.meshes.file_mesh) pass the checks a collision mesh passes
(physics.io.mesh_files.file_problem) before any byte is read: a URDF's visual mesh is only checked
to be a regular file when the model loads, and the window reads it. Headless: app.meshes needs no
display."""
import os
import time
import tracemalloc
import zipfile

import pytest
import trimesh

from app import meshes


def _obj_with_fifo_materials(folder):
    text = trimesh.creation.box().export(file_type="obj")
    (folder / "look.obj").write_text("mtllib look.mtl\nusemtl paint\n" + text)
    os.mkfifo(folder / "look.mtl")
    return folder / "look.obj"


def _dae_zip(folder):
    with zipfile.ZipFile(folder / "look.dae", "w", zipfile.ZIP_DEFLATED) as archive, archive.open("look.dae", "w") as member:
        for _ in range(64):
            member.write(bytes(2**20))
    return folder / "look.dae"


def _fifo(folder):
    os.mkfifo(folder / "look.stl")
    return folder / "look.stl"


@pytest.mark.parametrize("make, words", [(_fifo, "FIFO"), (_dae_zip, "a zip archive"), (None, None)])
def test_a_drawn_mesh_is_read_behind_the_collision_meshes_checks(tmp_path, make, words):
    """A FIFO in place of a drawn mesh (the window's thread blocked on it forever: `open` and
    `read` of the whole file), a .dae that is a zip of 2^26 zero bytes (pycollada unpacked it),
    and an OBJ whose mtllib is a FIFO (trimesh opened the materials): each refused at once in a
    few MB (ValueError naming the file), or, for the OBJ, drawn without opening its materials."""
    path = make(tmp_path) if make else _obj_with_fifo_materials(tmp_path)
    started = time.monotonic()
    tracemalloc.start()
    try:
        if words is None:
            kind, vertices, indices, radius = meshes.file_mesh(path, (1.0, 1.0, 1.0))
            assert len(indices) == 2 * 12 * 3 and radius > 0     # 12 triangles, both windings
        else:
            with pytest.raises(ValueError, match=words) as info:
                meshes.file_mesh(path, (1.0, 1.0, 1.0))
            assert str(path) in str(info.value)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 10 and peak < 16 * 2**20, (time.monotonic() - started, peak)
