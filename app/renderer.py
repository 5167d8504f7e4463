"""moderngl renderer: instanced shape meshes, coloured line lists, the ground grid, the sky.

One draw call per shape type: every node with a box shape is one instance of the unit box, and
so on. A node's model matrix is `M = [R diag(S) | T] @ M_shape` — the node's world transform
(`x -> R S x + T`, docs/architecture.md) after the shape's own constant size matrix — built
for all nodes at once with numpy (`model_matrices`). Matrices follow the column-vector
convention; `app.camera.gl_bytes` writes them for GLSL.

Only what shows is drawn (app.culling): an instance whose bounding sphere lies outside the view
frustum, or spans less than CULL_PIXELS pixels of radius, is skipped; one smaller than
LOD_PIXELS is drawn with the coarse mesh (app.meshes), one smaller than POINT_PIXELS as a
single point covering the rectangle its box projects to (assets/shaders/points.vert.glsl). So a
shape type costs up to three draw calls. On Mesa's llvmpipe vertex work runs on one thread and
dominates a 10,000-node scene seen whole (14 ms of the 17 ms its meshes took, most shapes 1-3 px
wide; as points 1 ms): a shape under a pixel covers at most one pixel centre, an 8-sided
cylinder of radius 12 px strays from the circle by r (1 - cos(pi/8)) < 1 px, and a shape under
3 px of radius is a handful of pixels, one or two shades, which its projected rectangle in one
shade matches to within its silhouette's corner pixels.

Instance rows (INSTANCE_FLOATS float32 each: the model matrix column-major, the colour, the
capsule half length) are written by one compiled pass (`write_models`) straight into the
array that is uploaded.

`Target` is an offscreen framebuffer (4x MSAA when asked for and available, resolved into a
plain one): the offscreen viewer draws into it, and screenshots read it — reading the window's
default framebuffer leaves a GL error pyglet then raises.
"""
from pathlib import Path

import moderngl
import numpy as np
from numba.core import types

from physics.core.compiled import kernel

from app import culling, meshes
from app.camera import gl_bytes

SHADERS = Path(__file__).resolve().parent.parent / "assets" / "shaders"
SKY_RGB = (0.60, 0.76, 0.92)
LIGHT_DIR_WORLD = np.array([0.527, -0.766, -0.369]) / np.linalg.norm([0.527, -0.766, -0.369])
SLEEPING_SHADE = 0.55   # colour factor of sleeping bodies
PLANE_EXTENT = 200.0  # m: a plane is drawn as a square this wide
CULL_PIXELS = 0.5     # bounding-sphere radius on screen below which an instance is not drawn
LOD_PIXELS = 12.0     # ... below which it is drawn with the coarse mesh
POINT_PIXELS = 3.0    # ... below which it is drawn as one point (its projected box)
LEVELS = ("full", "coarse", "point")  # levels of detail, keys of Renderer.drawn with the type
INSTANCE_FLOATS = 20  # model matrix (16), colour (3), capsule half length (1)
GL_CLIP_DISTANCE0 = 0x3000
# glPolygonOffset(factor, units) of opaque planes: a pixel's depth slope and 4 units behind, so that
# the grid's lines on the ground win the depth test at any distance (Renderer._draw_planes)
PLANE_OFFSET = (1.0, 4.0)
FOOTPRINT = "footprint"  # the programs' variant of planes drawn with shadows (Renderer.programs)


def load_program(ctx, name, defines=()):
    """The program of assets/shaders/NAME.vert.glsl and NAME.frag.glsl, each with `#define D`
    for every D of `defines` after its #version line."""
    def source(stage):
        version, rest = (SHADERS / f"{name}.{stage}.glsl").read_text().split("\n", 1)
        return "\n".join([version, *(f"#define {d}" for d in defines), rest])
    return ctx.program(vertex_shader=source("vert"), fragment_shader=source("frag"))


def _rotation_y_to(normal):
    """A rotation matrix taking +y to the unit vector `normal` (Rodrigues about y x n)."""
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    y = np.array([0.0, 1.0, 0.0])
    c = float(n @ y)
    if c < -1 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross(y, n)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + K + K @ K / (1 + c)


def shape_matrix(shape):
    """(type, M_shape (4, 4), capsule half length in radii) of one scene shape dict (docs/scene-format.md).

    box: size = full extents; sphere: radius; cylinder, capsule: radius, height along y (a
    capsule's height is the distance between its hemisphere centres); plane: normal, offset.
    """
    if not isinstance(shape, dict) or "type" not in shape:
        raise ValueError(f"a shape must be a dict with a 'type', got {shape!r}")
    kind = shape["type"]
    matrix, half_length = np.eye(4), 0.0
    try:
        if kind == "box":
            matrix[:3, :3] = np.diag(np.broadcast_to(np.asarray(shape["size"], float), 3))
        elif kind == "sphere":
            matrix[:3, :3] *= float(shape["radius"])
        elif kind == "cylinder":
            r, h = float(shape["radius"]), float(shape["height"])
            matrix[:3, :3] = np.diag([r, h, r])
        elif kind == "capsule":
            r, h = float(shape["radius"]), float(shape["height"])
            matrix[:3, :3] *= r
            half_length = h / 2 / r
        elif kind == "plane":
            normal = np.asarray(shape.get("normal", [0.0, 1.0, 0.0]), float)
            rotation = _rotation_y_to(normal)
            matrix[:3, :3] = rotation * PLANE_EXTENT
            matrix[:3, 3] = rotation[:, 1] * float(shape.get("offset", 0.0))
        else:
            raise ValueError(f"unknown shape type {kind!r}; expected one of {meshes.SHAPE_TYPES}")
    except KeyError as missing:
        raise ValueError(f"shape {shape!r} lacks the key {missing}") from None
    return kind, matrix, half_length


def bounding_radius(shape):
    """Radius of the sphere about the node's origin that holds the shape (node units); inf for
    a plane. Keys as `shape_matrix` (which validates them)."""
    kind = shape["type"]
    if kind == "box":
        return 0.5 * float(np.linalg.norm(np.broadcast_to(np.asarray(shape["size"], float), 3)))
    if kind == "sphere":
        return float(shape["radius"])
    if kind == "cylinder":
        return float(np.hypot(shape["radius"], shape["height"] / 2))
    if kind == "capsule":
        return float(shape["radius"]) + float(shape["height"]) / 2
    return np.inf


def model_matrices(translation_world, rotation_world, scale_world, shape_matrices):
    """M = [R diag(S) | T] @ M_shape for a batch: (N, 3), (N, 3, 3), (N, 3), (N, 4, 4) -> (N, 4, 4)."""
    n = len(translation_world)
    out = np.empty((n, 16))
    every = np.arange(n)
    write_models(np.asarray(translation_world, float), np.asarray(rotation_world, float),
                 np.asarray(scale_world, float).reshape(n, -1), every,
                 np.asarray(shape_matrices, float).reshape(n, 4, 4), every, out)
    return out.reshape(n, 4, 4).transpose(0, 2, 1)


# The argument types the viewer calls `write_models` with (`warm_kernels` compiles these, off the
# frame): instance rows (float32) from the world state, whose scale is a read-only broadcast view;
# and `model_matrices` (float64) for picking.
_F64_2, _F64_3 = types.Array(types.float64, 2, "C"), types.Array(types.float64, 3, "C")
_I64_1 = types.Array(types.int64, 1, "C")
WRITE_MODELS_SIGNATURES = (
    (_F64_2, _F64_3, types.Array(types.float64, 2, "A", readonly=True), _I64_1, _F64_3, _I64_1,
     types.Array(types.float32, 2, "C")),
    (_F64_2, _F64_3, _F64_2, _I64_1, _F64_3, _I64_1, _F64_2),
)


def warm_kernels():
    """Compile (or load from the cache) this module's kernel for the types the viewer uses, so
    that no frame does (app.preparation calls it on its thread)."""
    for signature in WRITE_MODELS_SIGNATURES:
        write_models.compile(signature)


@kernel
def write_models(translation_world, rotation_world, scale_world, nodes, shape_matrices, rows, out):
    """out[j, :16] = column-major ([R diag(S) | T] @ M_shape) of node nodes[j] and shape rows[j].

    translation (N, 3), rotation (N, 3, 3), scale (N, 3) or (N, 1) (uniform); shape_matrices
    (G, 4, 4); out (J, >= 16), float32 (instance rows) or float64."""
    uniform = scale_world.shape[1] == 1
    for j in range(nodes.size):
        i, m = nodes[j], shape_matrices[rows[j]]
        for col in range(4):
            for r in range(3):
                value = translation_world[i, r] * m[3, col]
                for k in range(3):
                    value += rotation_world[i, r, k] * scale_world[i, 0 if uniform else k] * m[k, col]
                out[j, 4 * col + r] = value
            out[j, 4 * col + 3] = m[3, col]


class Target:
    """An offscreen colour+depth target, multisampled when possible, with a resolved copy."""

    def __init__(self, ctx, size, samples=4):
        self.ctx = ctx
        self.size = (max(int(size[0]), 1), max(int(size[1]), 1))
        self.requested = samples   # what was asked for (`samples`: what the context gave)
        self.samples = samples if ctx.max_samples >= samples else 0
        self.msaa = None
        if self.samples:
            try:
                self.msaa = self._framebuffer(self.samples)
            except moderngl.Error:
                self.samples = 0
        self.resolved = self._framebuffer(0)

    def _framebuffer(self, samples):
        return self.ctx.framebuffer(
            [self.ctx.renderbuffer(self.size, 4, samples=samples)],
            self.ctx.depth_renderbuffer(self.size, samples=samples),
        )

    @property
    def draw(self):
        return self.msaa or self.resolved

    def read_rgb(self):
        """The resolved picture as (height, width, 3) uint8, top row first."""
        data = self.resolved.read(components=3, alignment=1)
        return np.frombuffer(data, np.uint8).reshape(self.size[1], self.size[0], 3)[::-1].copy()

    def release(self):
        for fbo in (self.msaa, self.resolved):
            if fbo is not None:
                for attachment in (*fbo.color_attachments, fbo.depth_attachment):
                    attachment.release()
                fbo.release()


class Renderer:
    """Draws a scene's shapes (instanced), line lists and the grid into a `Target`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.mesh_program = load_program(ctx, "mesh")
        self.point_program = load_program(ctx, "points")
        # with shadows: the same shaders compiled with SHADOWS (a uniform switch would cost the
        # software renderer the shadow code's work on every pixel even when off)
        self.programs = {False: (self.mesh_program, self.point_program),
                         True: (load_program(ctx, "mesh", ["SHADOWS"]), load_program(ctx, "points", ["SHADOWS"]))}
        # the ground planes with shadows: clipped to the shadow map's footprint (`_draw_planes`); only
        # they write clip distances (mesh.vert.glsl says why)
        self.programs[FOOTPRINT] = (load_program(ctx, "mesh", ["SHADOWS", "FOOTPRINT"]), self.programs[True][1])
        self.line_program = load_program(ctx, "lines")
        self.meshes = {}  # (kind, coarse: bool) -> (vertex buffer, index buffer)
        for kind in meshes.SHAPE_TYPES:
            for coarse in (False, True):
                vertices, indices = meshes.mesh(kind, coarse)
                self.meshes[kind, coarse] = (ctx.buffer(vertices.tobytes()), ctx.buffer(indices.tobytes()))
        self.instance_buffers, self.vaos = {}, {}
        self.line_buffer = ctx.buffer(reserve=1 << 16, dynamic=True)
        self.line_vao = ctx.vertex_array(
            self.line_program, [(self.line_buffer, "3f 3f", "in_position", "in_color")]
        )
        self.shadowed_line_program = load_program(ctx, "lines", ["SHADOWS"])  # the grid, shadowed
        self.shadowed_line_vao = ctx.vertex_array(
            self.shadowed_line_program, [(self.line_buffer, "3f 3f", "in_position", "in_color")])
        self.grid = grid_lines(half_size=20, spacing=1.0)
        self.set_shapes([], np.zeros((0, 3)))

    def set_shapes(self, shapes, colors, node_meshes=None, visible=None, parent=None):
        """Per-scene constants: which nodes have which shape, their size matrices, bounding radii
        and colours. `node_meshes`: per node None or a mesh file {"file", "scale"} (drawn as one
        more type, read once by app.meshes.file_mesh); `visible` (N,) bool: False skips a node's
        shape (it collides unseen). A mesh file that cannot be read is left out and named in
        `self.mesh_errors`, and the unseen shapes beside it (the same `parent` (N,)) are drawn
        instead: a robot link whose mesh is missing shows its collision shapes, never nothing."""
        self.groups = {}
        self.mesh_errors = []
        by_type = {}
        shown = np.ones(len(shapes), bool) if visible is None else np.array(visible, bool)
        loaded = {}
        for i, entry in enumerate(node_meshes or ()):
            if entry is None:
                continue
            try:
                loaded[i] = meshes.file_mesh(entry["file"], entry.get("scale", (1.0, 1.0, 1.0)))
            except Exception as error:  # noqa: BLE001 - an unreadable mesh file must not stop the app
                self.mesh_errors.append(f"mesh {entry['file']}: {type(error).__name__}: {error}")
                if parent is not None:
                    shown |= np.asarray(parent) == parent[i]
        for i, shape in enumerate(shapes):
            if shape is None or not shown[i]:
                continue
            if shape.get("type") == "hull":     # its own mesh, like a mesh file's (one level of detail)
                loaded[i] = meshes.hull_mesh(shape["vertices"])
                continue
            kind, matrix, half_length = shape_matrix(shape)
            by_type.setdefault(kind, []).append((i, matrix, half_length, bounding_radius(shape)))
        for i, (kind, vertices, indices, radius) in loaded.items():
            if (kind, False) not in self.meshes:   # one level of detail: the coarse level is the same buffers
                buffers = (self.ctx.buffer(vertices.tobytes()), self.ctx.buffer(indices.tobytes()))
                self.meshes[kind, False] = self.meshes[kind, True] = buffers
            by_type.setdefault(kind, []).append((i, np.eye(4), 0.0, radius))
        colors = np.asarray(colors, dtype=float).reshape(-1, 3)
        for kind, items in by_type.items():
            index = np.array([item[0] for item in items])
            self.groups[kind] = {
                "index": index,
                "shape_matrices": np.array([item[1] for item in items]),
                "half_length": np.array([item[2] for item in items], dtype=np.float32),
                "radius": np.array([item[3] for item in items]),
                "colors": colors[index].astype(np.float32) if len(colors) else np.full((len(index), 3), 0.7, np.float32),
            }
        self.drawn = {}

    def _vao(self, kind, level, shadowed=False):
        """The instanced vertex array of a shape type at one level of detail, with or without
        shadows (`shadowed`: False, True or FOOTPRINT, a key of `programs`), and its instance
        buffer. The point level reads the instance rows as its vertices (one point each)."""
        if (kind, level, shadowed) not in self.vaos:
            buffer = self.ctx.buffer(reserve=64 * INSTANCE_FLOATS * 4, dynamic=True)
            self.instance_buffers[kind, level, shadowed] = buffer
            mesh_program, point_program = self.programs[shadowed]
            if level == "point":
                self.vaos[kind, level, shadowed] = self.ctx.vertex_array(
                    point_program, [(buffer, "16f 3f 1f", "in_model", "in_color", "in_half_length")])
            else:
                vertices, indices = self.meshes[kind, level == "coarse"]
                self.vaos[kind, level, shadowed] = self.ctx.vertex_array(
                    mesh_program,
                    [
                        (vertices, "3f 3f 1f", "in_position", "in_normal", "in_cap"),
                        (buffer, "16f 3f 1f/i", "in_model", "in_color", "in_half_length"),
                    ],
                    index_buffer=indices,
                    index_element_size=4,
                )
        return self.vaos[kind, level, shadowed], self.instance_buffers[kind, level, shadowed]

    @staticmethod
    def levels(kind, pixels):
        """level -> (M,) bool: which of a type's instances, by on-screen radius in pixels, are
        drawn at which level of detail (types without a coarse mesh skip that level)."""
        point = (pixels >= CULL_PIXELS) & (pixels < POINT_PIXELS)
        if kind in meshes.COARSE_TYPES:
            return {"full": pixels >= LOD_PIXELS, "coarse": (pixels >= POINT_PIXELS) & (pixels < LOD_PIXELS), "point": point}
        return {"full": pixels >= POINT_PIXELS, "point": point}

    def draw_shapes(self, translation_world, rotation_world, scale_world, view_projection, focal_px, highlight=None,
                    eye_world=None, dimmed=None, tint=None, alpha=1.0, only=None, shadow=None):
        """Instanced draws per shape type and level of detail; `highlight` (node index) is drawn
        brighter, `dimmed` ((N,) bool: sleeping bodies, as Box2D's and Jolt's samples show them) darker. `focal_px` = P[1, 1] * height / 2 (app.culling); `eye_world` the camera's
        position (default: from the view-projection), which faces of a point-level box show.
        A ghost run (app.ghosts): `tint` (RGB) replaces every colour, `alpha` < 1 blends it over
        what is drawn (without writing depth, so ghosts never hide each other), `only` ((N,) bool)
        the nodes drawn. `shadow`: the `app.shadows.ShadowMap` drawn for this frame (None: no
        shadows). Counts drawn per (kind, level) are left in `self.drawn`."""
        if eye_world is None:
            eye_world = np.linalg.solve(view_projection, [0.0, 0.0, -1.0, 0.0])  # clip (0,0,-1,0) is the eye
            eye_world = eye_world[:3] / eye_world[3]
        self.ctx.enable(moderngl.DEPTH_TEST | moderngl.CULL_FACE | moderngl.PROGRAM_POINT_SIZE)
        vp_bytes = gl_bytes(view_projection)
        shadowed = shadow is not None
        for mesh_program, point_program in self.programs.values():  # (FOOTPRINT shares the shadowed points')
            mesh_program["u_view_projection"].write(vp_bytes)
            mesh_program["u_light_dir_world"].value = tuple(LIGHT_DIR_WORLD)
            point_program["u_view_projection"].write(vp_bytes)
            point_program["u_light_dir_world"].value = tuple(LIGHT_DIR_WORLD)
            point_program["u_eye_world"].value = tuple(float(x) for x in eye_world)
            point_program["u_viewport_px"].value = tuple(float(x) for x in self.ctx.viewport[2:])
            for program in (mesh_program, point_program):
                program["u_alpha"].value = float(alpha)
        mesh_program, point_program = self.programs[shadowed]
        if shadowed:
            shadow.bind(mesh_program, point_program, self.programs[FOOTPRINT][0])
        translucent = alpha < 1.0
        if translucent:
            self.ctx.enable(moderngl.BLEND)
            self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
            self.ctx.fbo.depth_mask = False
            # where a ghost coincides with the main run, or nearly (a millimetre apart), it shows on
            # top instead of fighting it for the depth test in stripes
            self.ctx.depth_func = "<="
            self.ctx.polygon_offset = (-1.0, -64.0)
        self.drawn = {}
        translation_world = np.ascontiguousarray(translation_world, dtype=float)
        rotation_world = np.ascontiguousarray(rotation_world, dtype=float)
        scale_world = np.asarray(scale_world, dtype=float)
        for kind, group in self.groups.items():
            index = group["index"]
            pixels = culling.screen_radius(translation_world[index], group["radius"] * scale_world[index, 0],
                                           view_projection, focal_px)
            for level, chosen in self.levels(kind, pixels).items():
                rows = np.flatnonzero(chosen if only is None else chosen & only[index])
                self.drawn[kind, level] = len(rows)
                if len(rows) == 0:
                    continue
                nodes = index[rows]
                instances = np.empty((len(rows), INSTANCE_FLOATS), dtype=np.float32)
                write_models(translation_world, rotation_world, scale_world, nodes, group["shape_matrices"], rows, instances)
                instances[:, 16:19] = group["colors"][rows]
                instances[:, 19] = group["half_length"][rows]
                if dimmed is not None:
                    instances[dimmed[nodes], 16:19] *= SLEEPING_SHADE
                if highlight is not None:
                    selected = nodes == highlight
                    instances[selected, 16:19] = 0.35 + 0.65 * instances[selected, 16:19]
                if tint is not None:
                    instances[:, 16:19] = tint
                if kind == "plane" and not translucent:
                    self._draw_planes(instances, shadow)
                    continue
                vao = self._upload(kind, level, shadowed, instances)
                if level == "point":
                    point_program["u_half_extent"].value = meshes.HALF_EXTENTS[kind]
                    vao.render(moderngl.POINTS, vertices=len(rows))
                else:
                    vao.render(moderngl.TRIANGLES, instances=len(rows))
        self.ctx.disable(moderngl.CULL_FACE | moderngl.PROGRAM_POINT_SIZE)
        if translucent:
            self.ctx.disable(moderngl.BLEND)
            self.ctx.fbo.depth_mask = True
            self.ctx.depth_func = "<"
            self.ctx.polygon_offset = (0.0, 0.0)

    def _upload(self, kind, level, shadowed, instances):
        """Write instance rows into the (kind, level, shadowed) instance buffer; -> its VAO."""
        vao, buffer = self._vao(kind, level, shadowed)
        # fresh storage every frame: writing into storage the previous frame's draw still
        # reads would make the driver wait for it (orphaning keeps the name, so the VAO stays)
        buffer.orphan(max(instances.nbytes, buffer.size))
        buffer.write(instances)
        return vao

    def _draw_planes(self, instances, shadow=None):
        """Planes (opaque), pushed back by PLANE_OFFSET: the grid's lines lie 2 mm above the
        ground, which far away and at a grazing angle is less than the depth's rounding, and the
        lines came and went in dashes as the ground's depth won or lost against theirs.

        With shadows (`shadow`, an app.shadows.ShadowMap): a plane is most of the screen, and the
        shadow lookup is the dearest part of a pixel on a software renderer: only the part inside
        the shadow map's footprint (clipped by its four sides, `shadow.footprint_planes`) is drawn
        with it; then the whole plane without shadows further behind (another pixel's depth slope
        and 8 units: rounding grows with the slope, and the two passes' triangles differ where the
        first is clipped), which the depth test keeps only where the first did not draw."""
        factor, units = PLANE_OFFSET
        if shadow is None:
            self.ctx.polygon_offset = PLANE_OFFSET
            self._upload("plane", "full", False, instances).render(moderngl.TRIANGLES, instances=len(instances))
            self.ctx.polygon_offset = (0.0, 0.0)
            return
        self.ctx.polygon_offset = PLANE_OFFSET
        shadowed = self._upload("plane", "full", FOOTPRINT, instances)
        self.programs[FOOTPRINT][0]["u_footprint"].write(shadow.footprint_planes.astype(np.float32).tobytes())
        for i in range(4):
            self.ctx.enable_direct(GL_CLIP_DISTANCE0 + i)
        shadowed.render(moderngl.TRIANGLES, instances=len(instances))
        for i in range(4):
            self.ctx.disable_direct(GL_CLIP_DISTANCE0 + i)
        self.ctx.polygon_offset = (2 * factor, units + 8.0)
        self._upload("plane", "full", False, instances).render(moderngl.TRIANGLES, instances=len(instances))
        self.ctx.polygon_offset = (0.0, 0.0)

    def draw_lines(self, segments_world, colors, view_projection, depth_test=False, shadow=None):
        """One draw call for a line list: segments (K, 2, 3) and colours (K, 3) or (3,); `shadow`
        (an `app.shadows.ShadowMap`): lines on the ground, darkened where it is in shadow."""
        segments_world = np.asarray(segments_world, dtype=np.float32).reshape(-1, 2, 3)
        if len(segments_world) == 0:
            return
        colors = np.broadcast_to(np.asarray(colors, np.float32), (len(segments_world), 3))
        vertices = np.empty((len(segments_world), 2, 6), dtype=np.float32)
        vertices[:, :, :3] = segments_world
        vertices[:, :, 3:] = colors[:, None, :]
        data = vertices.tobytes()
        if len(data) > self.line_buffer.size:
            self.line_buffer.orphan(2 * len(data))
        self.line_buffer.write(data)
        if depth_test:
            self.ctx.enable(moderngl.DEPTH_TEST)
        else:
            self.ctx.disable(moderngl.DEPTH_TEST)
        program, vao = (self.line_program, self.line_vao) if shadow is None else (self.shadowed_line_program,
                                                                                  self.shadowed_line_vao)
        program["u_view_projection"].write(gl_bytes(view_projection))
        if shadow is not None:
            program["u_light_dir_world"].value = tuple(LIGHT_DIR_WORLD)
            shadow.bind(program)
        vao.render(moderngl.LINES, vertices=2 * len(segments_world))
        self.ctx.enable(moderngl.DEPTH_TEST)

    def draw_grid(self, view_projection, shadow=None):
        segments, colors = self.grid
        self.draw_lines(segments, colors, view_projection, depth_test=True, shadow=shadow)


def grid_lines(half_size=20, spacing=1.0):
    """Ground grid on y = 0: (segments (K, 2, 3), colours (K, 3)); every 5th line darker, axes tinted."""
    ticks = np.arange(-half_size, half_size + 1) * spacing
    extent = half_size * spacing
    y = 0.002  # a hair above the ground plane so the lines win the depth test
    along_x = np.stack([np.stack([-extent + 0 * ticks, y + 0 * ticks, ticks], -1),
                        np.stack([extent + 0 * ticks, y + 0 * ticks, ticks], -1)], axis=1)
    along_z = along_x[:, :, [2, 1, 0]]
    segments = np.concatenate([along_x, along_z])
    k = np.concatenate([np.arange(-half_size, half_size + 1)] * 2)
    colors = np.where((k % 5 == 0)[:, None], [0.35, 0.38, 0.42], [0.5, 0.53, 0.56])
    colors[:len(ticks)][k[:len(ticks)] == 0] = [0.8, 0.25, 0.25]   # the x axis (z = 0) reddish
    colors[len(ticks):][k[len(ticks):] == 0] = [0.25, 0.35, 0.85]  # the z axis (x = 0) bluish
    return segments, colors
