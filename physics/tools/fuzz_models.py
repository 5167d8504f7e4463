"""The fuzzer's kinds for what a model file reaches beyond its own text (physics.tools.fuzz;
docs/reliability.md, "The fuzzer"):

- "archive": a URDF, an MJCF or a scene whose collision and visual meshes are archives (zip, tar,
  gzip, bzip2, xz; nested; compression bombs of 2^30 zero bytes in a megabyte), under an archive's
  suffix or a mesh's, beside valid meshes;
- "defaults": an MJCF whose `<default>` classes are drawn: nested up to 300 deep, up to 2,000 side
  by side, up to 3,000 attributes in one class (each class copies its parent's), hostile values,
  classes chosen by `class=` and `childclass=`, names missing, repeated or unknown;
- "special": a URDF, an MJCF or a scene whose files (meshes, an OBJ's `mtllib`, a glTF's buffer, an
  MJCF `<include>`) are FIFOs, directories, sockets, devices, links to devices or to themselves,
  missing, or regular.

A case is a `physics.tools.fuzz.Case` whose `files` — (name, content) pairs — are written beside its
model, in a folder of its own (`place_files`): content is bytes or one of SPECIAL's names. It is
loaded and stepped as a scene case is (`physics.tools.fuzz.run_scene`), with the worker's memory
bound (`physics.tools.fuzz.MEMORY_MAX`) and time limit on top.
"""
import bz2
import functools
import gzip
import io
import json
import lzma
import os
import socket
import tarfile
import zipfile
import zlib
from pathlib import Path

MODEL_KINDS = ("archive", "defaults", "special")
MODEL_TYPES = (".urdf", ".xml", ".toml")
# What a named file can be besides bytes: created by `place_files` in the case's folder.
SPECIAL = ("fifo", "directory", "socket", "missing", "self-link", "link:/dev/zero", "link:/dev/null",
           "link:/dev/urandom", "link:/dev/stdin", "link:/proc/self/mem", "link:directory")
MESH_SUFFIXES = (".stl", ".obj", ".glb", ".gltf", ".ply", ".off", ".dae", ".STL")
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".7z", ".zae", "")
BOMB_BYTES = 2**30          # the zeros a bomb unpacks to
_CHUNK = bytes(2**20)


# --- the files a case brings --------------------------------------------------------------------

def place_files(folder, files):
    """Write a case's (name, content) pairs in `folder`: bytes as regular files, SPECIAL's names as
    what they say (a "missing" file is not written)."""
    folder = Path(folder)
    for name, content in files:
        target = folder / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        elif content == "fifo":
            os.mkfifo(target)
        elif content == "directory":
            target.mkdir()
        elif content == "socket":
            with socket.socket(socket.AF_UNIX) as listener:
                listener.bind(str(target))
        elif content == "self-link":
            target.symlink_to(target.name)
        elif content == "link:directory":
            target.symlink_to(folder)
        elif content.startswith("link:"):
            target.symlink_to(content[len("link:"):])


@functools.cache
def meshes():
    """name -> bytes of one small valid mesh in each format trimesh reads (a box, 12 faces); the
    glTF's buffer is the file `box.bin` beside it (`meshes()["box.bin"]`)."""
    import trimesh

    box = trimesh.creation.box((0.2, 0.2, 0.2))
    made = {f"box{suffix}": box.export(file_type=suffix[1:]) for suffix in (".stl", ".ply", ".off", ".glb")}
    made["box.obj"] = b"mtllib box.mtl\n" + box.export(file_type="obj").encode()
    made["box.mtl"] = b"newmtl grey\nKd 0.5 0.5 0.5\n"
    gltf = box.export(file_type="gltf")      # {name: bytes}: the document and its buffer
    document = json.loads(gltf["model.gltf"])
    buffers = [name for name in gltf if name != "model.gltf"]
    for buffer in document["buffers"]:
        buffer["uri"] = "box.bin"
    made["box.gltf"] = json.dumps(document).encode()
    made["box.bin"] = gltf[buffers[0]]
    made["box.dae"] = box.export(file_type="dae")
    return {name: data.encode() if isinstance(data, str) else data for name, data in made.items()}


def _zip(members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _tar(members, mode="w"):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


@functools.cache
def bombs(size):
    """name -> bytes of archives that unpack to `size` zero bytes (BOMB_BYTES: about a megabyte
    each), made once."""
    made = {}
    for inside in ("box.stl", "box.dae"):     # pycollada opens a .dae that is a zip, and reads the .dae inside
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive, archive.open(inside, "w", force_zip64=True) as member:
            for _ in range(size // len(_CHUNK)):
                member.write(_CHUNK)
        made[f"zip holding {inside}"] = zipped.getvalue()
    deflate = zlib.compressobj(9, wbits=31)     # wbits 31: the gzip format
    packer = b"".join([*(deflate.compress(_CHUNK) for _ in range(size // len(_CHUNK))), deflate.flush()])
    squeeze = bz2.BZ2Compressor(9)
    bzipped = b"".join([*(squeeze.compress(_CHUNK) for _ in range(size // len(_CHUNK))), squeeze.flush()])
    return {**made, "gz": packer, "bz2": bzipped}


def archives(mesh_name):
    """name -> bytes of archives holding one of `meshes()`: each format, nested, and the bombs."""
    made = dict(_archives(mesh_name))
    made.update({f"bomb: {name}": data for name, data in bombs(BOMB_BYTES).items()})
    return made


@functools.cache
def _archives(mesh_name):
    mesh = meshes()[mesh_name]
    made = {"zip": _zip({mesh_name: mesh}), "tar": _tar({mesh_name: mesh}), "tgz": _tar({mesh_name: mesh}, "w:gz"),
            "gz": gzip.compress(mesh), "bz2": bz2.compress(mesh), "xz": lzma.compress(mesh)}
    made["zip in zip"] = _zip({"inner.zip": made["zip"]})
    made["many members"] = _zip({f"part{k}{Path(mesh_name).suffix}": mesh for k in range(200)})
    return made


def read_drawn_meshes(sim):
    """Read a loaded model's drawn meshes as the app does (physics.io.mesh_files.read_mesh): a mesh
    it cannot read is the app's message, not a failure; the worker's time and memory limits hold."""
    from physics.io.mesh_files import read_mesh

    for entry in sim.scene.meshes or ():
        if entry is not None:
            try:
                read_mesh(entry["file"])
            except Exception:   # noqa: BLE001 - trimesh raises many types; the app shows each
                pass


# --- the models ----------------------------------------------------------------------------------

def model_text(kind, collision, visual, extra=""):
    """A small model of `kind` (MODEL_TYPES) whose first body collides through the mesh file
    `collision` and is drawn by `visual`, with a hinged arm below it; `extra`: XML put inside
    the model's root (an MJCF `<include>`)."""
    if kind == ".urdf":
        inertia = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
        return f"""<robot name="fuzzed">
  <link name="base"><inertial><mass value="1"/>{inertia}</inertial>
    <visual><geometry><mesh filename="{visual}"/></geometry></visual>
    <collision><geometry><mesh filename="{collision}" scale="1 1 1"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="0.5"/>{inertia}</inertial>
    <collision><geometry><box size="0.05 0.05 0.3"/></geometry></collision></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 -0.3"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="10"/></joint>
</robot>"""
    if kind == ".xml":
        return f"""<mujoco model="fuzzed">{extra}
  <asset><mesh name="hull" file="{collision}"/><mesh name="look" file="{visual}"/></asset>
  <worldbody><body name="base" pos="0 0 1"><freejoint/>
    <geom type="mesh" mesh="hull"/><geom type="mesh" mesh="look" contype="0" conaffinity="0"/>
    <body name="arm" pos="0 0 -0.3"><joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size="0.03 0.15"/></body></body></worldbody>
</mujoco>"""
    return f"""[world]
dt = 0.01

[[node]]
name = "ground"
shape = {{ type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }}

[[node]]
name = "rock"
translation = [0.0, 1.0, 0.0]
motion = "dynamic"
mass = 1.0
shape = {{ type = "hull", file = {json.dumps(collision)} }}
mesh = {{ file = {json.dumps(visual)} }}
"""


HELPERS = ("box.bin", "box.mtl")      # what the glTF and the OBJ of `meshes()` name beside themselves


def _mesh_names():
    return sorted(name for name in meshes() if name not in HELPERS)


def draw_archive_case(data):
    """A model whose meshes are archives (module docstring)."""
    from hypothesis import strategies as st

    from physics.tools.fuzz import Case

    kind = data.draw(st.sampled_from(MODEL_TYPES), label="model type")
    valid = meshes()
    files, mutations, names = [], [], {}
    for slot in ("collision", "visual"):
        mesh_name = data.draw(st.sampled_from(_mesh_names()))
        made = archives(mesh_name)
        what = data.draw(st.sampled_from(sorted(made) + ["mesh"]), label=slot)
        suffix = data.draw(st.sampled_from(ARCHIVE_SUFFIXES + MESH_SUFFIXES), label="suffix")
        names[slot] = f"{slot}{suffix}"
        files.append((names[slot], valid[mesh_name] if what == "mesh" else made[what]))
        mutations.append(f"{slot} mesh {names[slot]!r}: {'the valid ' + mesh_name if what == 'mesh' else what + ' of ' + mesh_name}")
    files += [(helper, valid[helper]) for helper in HELPERS]
    text = model_text(kind, names["collision"], names["visual"])
    return Case("archive", text.encode(), mutations=mutations, kind="archive", suffix=kind, files=files)


def draw_special_case(data):
    """A model whose files are special (module docstring)."""
    from hypothesis import strategies as st

    from physics.tools.fuzz import Case

    kind = data.draw(st.sampled_from(MODEL_TYPES), label="model type")
    valid = meshes()
    files, mutations, names = [], [], {}
    for slot in ("collision", "visual"):
        mesh_name = data.draw(st.sampled_from(_mesh_names()))
        special = data.draw(st.sampled_from(SPECIAL + ("regular",) * 3), label=slot)
        names[slot] = f"{slot}{Path(mesh_name).suffix}"
        files.append((names[slot], valid[mesh_name] if special == "regular" else special))
        mutations.append(f"{slot} mesh {names[slot]!r}: {special}")
    for helper in HELPERS:
        special = data.draw(st.sampled_from(SPECIAL + ("regular",)), label=helper)
        files.append((helper, valid[helper] if special == "regular" else special))
        mutations.append(f"{helper}: {special}")
    extra = ""
    if kind == ".xml" and data.draw(st.booleans(), label="include"):
        special = data.draw(st.sampled_from(SPECIAL), label="include")
        files.append(("part.xml", special))
        extra = '<include file="part.xml"/>'
        mutations.append(f"<include file='part.xml'>: {special}")
    text = model_text(kind, names["collision"], names["visual"], extra)
    return Case("special", text.encode(), mutations=mutations, kind="special", suffix=kind, files=files)


# <default> classes: the attributes a class may set, each with a few plausible values.
_JOINT = {"damping": ("0.1", "2"), "armature": ("0.01", "1"), "stiffness": ("0", "50"), "frictionloss": ("0.1",),
          "range": ("-30 30", "-1 1"), "limited": ("true", "false"), "axis": ("0 0 1", "1 0 0"),
          "type": ("hinge", "slide", "ball"), "ref": ("0.1",), "springref": ("0.2",), "pos": ("0 0 0",)}
_GEOM = {"type": ("sphere", "capsule", "box", "cylinder", "ellipsoid"), "size": ("0.05", "0.05 0.1", "0.05 0.05 0.05"),
         "density": ("1000", "300"), "mass": ("0.5",), "friction": ("1 0.005 0.0001",), "rgba": ("0.5 0.5 0.5 1",),
         "contype": ("1", "0"), "conaffinity": ("1", "0"), "pos": ("0 0 0",), "condim": ("3", "1"),
         "margin": ("0.001",), "fromto": ("0 0 0 0 0 0.2",)}


def draw_defaults_case(data):
    """An MJCF whose <default> classes are drawn (module docstring)."""
    from hypothesis import strategies as st

    from physics.tools.fuzz import XML_HOSTILE, Case

    def attributes(table, many):
        count = data.draw(st.integers(0, 3000) if many else st.integers(0, len(table)), label="attributes")
        picked = {}
        for k in range(count):      # past the table's own names: made-up ones, which a class copies too
            name = data.draw(st.sampled_from(sorted(table)))
            name = f"{name}{k}" if k >= len(table) else name
            hostile = data.draw(st.integers(0, 9)) == 0
            picked[name] = data.draw(st.sampled_from(XML_HOSTILE if hostile else table.get(name, ("1",))))
        return " ".join(f'{name}="{value}"' for name, value in picked.items())

    classes, mutations = [], []
    shape = data.draw(st.sampled_from(["deep", "wide", "tree", "many"]), label="shape")
    size = data.draw(st.sampled_from([1, 2, 5, 30, 255, 256, 257, 300, 1000, 2000]), label="size")
    if shape == "tree":
        size = min(size, 300)
    mutations.append(f"{shape} classes, {size}")

    def element(name, many=False):
        classes.append(name)
        attribute = f' class="{name}"' if data.draw(st.integers(0, 19)) else ""
        return f"<default{attribute}><joint {attributes(_JOINT, many)}/><geom {attributes(_GEOM, False)}/>"

    if shape == "deep":
        text = "".join(element(f"c{k}") for k in range(min(size, 300))) + "</default>" * min(size, 300)
    elif shape == "wide":
        text = "".join(element(f"c{k}") + "</default>" for k in range(size))
    elif shape == "many":       # one class of many attributes, copied by its children
        head = element("c0", many=True)
        nested = data.draw(st.booleans(), label="nested")
        body = "".join(element(f"c{k}") + ("" if nested else "</default>") for k in range(1, size + 1))
        text = head + body + ("</default>" * size if nested else "") + "</default>"
    else:
        stack, parts = 0, []
        for k in range(size):
            parts.append(element(f"c{k}"))
            stack += 1
            while stack and data.draw(st.booleans()):
                parts.append("</default>")
                stack -= 1
        text = "".join(parts) + "</default>" * stack
    names = classes + ["main", "nowhere", ""]
    pick = lambda: data.draw(st.sampled_from(names))
    bodies, opened = [], 0
    for k in range(data.draw(st.integers(1, 12), label="bodies")):
        childclass = f' childclass="{pick()}"' if data.draw(st.booleans()) else ""
        joints = "".join(f'<joint name="j{k}_{m}" class="{pick()}"/>' if data.draw(st.booleans()) else f'<joint name="j{k}_{m}"/>'
                         for m in range(data.draw(st.integers(0, 3))))
        geom = f'<geom class="{pick()}" size="0.05"/>' if data.draw(st.booleans()) else '<geom size="0.05"/>'
        bodies.append(f'<body name="b{k}" pos="0 0 {1 if k == 0 else -0.2}"{childclass}>{joints}{geom}')
        opened += 1
        if data.draw(st.booleans()):
            bodies.append("</body>")
            opened -= 1
    document = (f'<mujoco model="defaults"><default>{text}</default><worldbody>'
                f'{"".join(bodies)}{"</body>" * opened}</worldbody></mujoco>')
    return Case("defaults", document.encode(), mutations=mutations, kind="defaults", suffix=".xml")


DRAW = {"archive": draw_archive_case, "defaults": draw_defaults_case, "special": draw_special_case}
