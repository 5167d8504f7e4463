"""Shadows from the key light: a shadow map (Williams, "Casting curved shadows on curved
surfaces", 1978) filtered by percentage-closer filtering (Reeves, Salesin and Cook, "Rendering
antialiased shadows with depth maps", 1987).

Each frame the shapes are drawn a first time, depth only, as the key light sees them, into a
square depth texture (`ShadowMap.render`); the scene's shaders then compare each pixel's depth
from the light with the texture's (assets/shaders/mesh.frag.glsl, points.vert.glsl) and scale
the direct light by the fraction that passes. The depth pass has the renderer's levels of
detail, counted in texels: a caster under POINT_TEXELS of radius is one point cut to its
silhouette at the depth of its back (assets/shaders/shadow_point.*.glsl): the 10,000 small
shapes of a big scene cost 10,000 vertices, not a quarter of a million.

Conventions. The key light is directional: `LIGHT_DIR_WORLD` (app.renderer) is the direction
the light travels, `l`. Light space has axes `right`, `up` and `l` (right x up = -l: a
camera looking along l, as OpenGL's look down -z), coordinates `(x, y, depth) = B p_world`
with B's rows right, up, l. The projection is orthographic, `x_ndc = (x - cx) / s`, `y_ndc =
(y - cy) / s`, `z_ndc = 2 (depth - near) / (far - near) - 1`: the map covers a square of side
2 s metres across the light. Column vectors throughout, as docs/architecture.md.

The square is fitted each frame to the casters whose shadow can fall where the camera looks
(`visible_casters`: a caster's bounding sphere swept along l down to the scene's floor meets
the view frustum), so zooming in on a big scene sharpens its shadows. Its size is rounded up to
a step of 2^(1/8), its centre to whole texels and its depth range out to a coarse grid: while
the casters stay within the same step the texel grid does not move, so a moving body's shadow
does not make every edge crawl, and a map whose casters have not moved can be kept (`render`).

Acne and peter-panning: the depth pass draws back faces only (front faces culled). A closed
shape's lit side is then compared with its own far side, never with itself, and the depth of
what touches the ground (its bottom faces) is that of the ground: a slope-scaled polygon offset
(`POLYGON_OFFSET`) pushes those a little away from the light, so the ground beside a contact is
neither speckled nor lit under the body. Faces turned away from the light get no direct light
anyway, so what the far side shadows there changes nothing. Planes (the ground) are receivers:
a plane facing the light is culled with the front faces and is left out of the fit.
"""
from typing import NamedTuple

import moderngl
import numpy as np
from numba.core import types

from physics.core.compiled import kernel

from app import culling, meshes
from app.camera import gl_bytes
from app.renderer import LIGHT_DIR_WORLD, SHADERS, load_program, write_models

MAP_TEXELS = 1024            # side of the square depth texture
MIN_TEXELS = 256             # the smallest square of it a map uses
TEXELS_STEP = 128            # ... and the step of its sizes (a size kept while the view changes a little)
TEXELS_PER_PIXEL = 1.0       # a map's texels per screen pixel at the nearest caster, at most
POLYGON_OFFSET = (2.0, 4.0)  # glPolygonOffset(factor, units) of the depth pass: slope-scaled bias
POINT_BIAS_TEXELS = 2.0      # the points' depth bias, in metres of a texel along l
CULL_TEXELS = 0.5            # a caster's bounding radius in texels below which it casts nothing
POINT_TEXELS = 8.0           # ... below which it is drawn as one point (shadow_point.*.glsl)
COARSE_TEXELS = 24.0         # ... below which its coarse mesh is drawn
SIZE_STEP = 2.0 ** (1 / 8)   # the fitted square's side is rounded up to a power of this
DEPTH_STEPS = 64             # the depth range is rounded out to 1/DEPTH_STEPS of the square's side
MARGIN_TEXELS = 2.0          # free texels kept around the casters (the filter reaches 1.5 texels)
STALE_TEXELS = 0.25          # the map is drawn again once a caster has moved this far (its filter is 1.5 texels wide)
TEXTURE_UNIT = 7             # the unit the map is bound to for the scene's shaders


def light_basis(light_dir_world=LIGHT_DIR_WORLD):
    """B (3, 3), rows right, up, l (unit; right x up = -l): light-space coordinates `B p_world`."""
    l = np.asarray(light_dir_world, float) / np.linalg.norm(light_dir_world)
    helper = np.array([0.0, 1.0, 0.0]) if abs(l[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    right = np.cross(l, helper)
    right /= np.linalg.norm(right)
    up = np.cross(right, l)  # right x (right x l) = right (right . l) - l (right . right) = -l
    return np.array([right, up, l])


def visible_casters(center_world, radius_world, view_projection, floor_y, light_dir_world=LIGHT_DIR_WORLD):
    """(N,) bool: whether a caster's shadow can fall inside the view frustum.

    The shadow of the sphere (c, r) lies in the capsule swept from c along l until its top
    passes the height `floor_y` (nothing below receives light, t_max = (c_y + r - floor_y) /
    |l_y|). A capsule misses the frustum iff both ends are more than r behind one of its planes
    (signed distance is affine along the segment). Non-finite spheres are not shown."""
    return _caster_extent(center_world, radius_world, view_projection, floor_y, light_dir_world)[0]


def _caster_extent(center_world, radius_world, view_projection, floor_y, light_dir_world=LIGHT_DIR_WORLD):
    """(shown (N,) bool as `visible_casters`, light-space lo (3,), hi (3,) of the shown spheres,
    the smallest clip w - r among them: the nearest caster's distance along the view)."""
    c = np.ascontiguousarray(np.asarray(center_world, float).reshape(-1, 3))
    r = np.ascontiguousarray(np.broadcast_to(np.asarray(radius_world, float), c.shape[:1]))
    l = np.asarray(light_dir_world, float) / np.linalg.norm(light_dir_world)
    vp = np.asarray(view_projection, float)
    planes = culling.frustum_planes(vp)
    return _extent_kernel(c, r, planes, planes[:, :3] @ l, l, light_basis(l), np.ascontiguousarray(vp[3]), float(floor_y))


# The argument types the viewer calls these kernels with (`warm_kernels` compiles them, off the
# frame); the radii reach `_extent_kernel` as a read-only broadcast.
_F64_1, _F64_2, _F64_3 = (types.Array(types.float64, n, "C") for n in (1, 2, 3))
_EXTENT_SIGNATURE = (_F64_2, types.Array(types.float64, 1, "C", readonly=True), _F64_2, _F64_1, _F64_1, _F64_2,
                     _F64_1, types.float64)
_MOVED_SIGNATURE = (_F64_2, _F64_3, _F64_1, _F64_1, _F64_2, _F64_3, _F64_1, types.float64)


def warm_kernels():
    """Compile (or load from the cache) this module's kernels for the types the viewer uses, so
    that no frame does (app.preparation calls it on its thread)."""
    _extent_kernel.compile(_EXTENT_SIGNATURE)
    _moved_less.compile(_MOVED_SIGNATURE)


@kernel
def _extent_kernel(c, r, planes, towards, l, basis, w_row, floor_y):
    """The swept-capsule test and bounds of `_caster_extent`, one pass (10,000 casters: ~0.1 ms
    against ~2 ms as numpy's temporaries); `towards` (6,): each plane's distance change per
    metre along l."""
    n = c.shape[0]
    shown = np.zeros(n, np.bool_)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    nearest = np.inf
    for i in range(n):
        x, y, z, radius = c[i, 0], c[i, 1], c[i, 2], r[i]
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z) and np.isfinite(radius)):
            continue
        t_max = max(y + radius - floor_y, 0.0) / max(abs(l[1]), 1e-3)
        visible = True
        for k in range(6):
            start = planes[k, 0] * x + planes[k, 1] * y + planes[k, 2] * z + planes[k, 3]
            if max(start, start + t_max * towards[k]) < -radius:
                visible = False
                break
        if not visible:
            continue
        shown[i] = True
        for a in range(3):
            p = basis[a, 0] * x + basis[a, 1] * y + basis[a, 2] * z
            lo[a] = min(lo[a], p - radius)
            hi[a] = max(hi[a], p + radius)
        nearest = min(nearest, w_row[0] * x + w_row[1] * y + w_row[2] * z + w_row[3] - radius)
    return shown, lo, hi, nearest


@kernel
def _moved_less(T, R, S, radius, T_last, R_last, S_last, limit):
    """Whether every caster moved less than `limit` (m): |dT| + r (||dR||_F + |dS|) < limit
    (NaN: no). Stops at the first that moved as far."""
    for i in range(T.shape[0]):
        dt = np.sqrt((T[i, 0] - T_last[i, 0]) ** 2 + (T[i, 1] - T_last[i, 1]) ** 2 + (T[i, 2] - T_last[i, 2]) ** 2)
        dr = 0.0
        for a in range(3):
            for b in range(3):
                dr += (R[i, a, b] - R_last[i, a, b]) ** 2
        if not dt + radius[i] * (np.sqrt(dr) + abs(S[i] - S_last[i])) < limit:
            return False
    return True


class LightFrame(NamedTuple):
    """The key light's orthographic view of a frame's casters (module conventions)."""
    view_projection: np.ndarray    # (4, 4) world -> clip
    texels: int                    # the side of the square of the texture used
    texels_per_m: float
    basis: np.ndarray              # (3, 3) rows right, up, l
    depth_per_m: float             # window depth per metre along l, 1 / (far - near)
    lo: np.ndarray                 # (3,) the casters' light-space bounds (x, y, depth), within the square
    hi: np.ndarray


def fit(center_world, radius_world, map_texels=MAP_TEXELS, light_dir_world=LIGHT_DIR_WORLD):
    """The `LightFrame` whose square holds every sphere (c, r); None when there are none."""
    c = np.asarray(center_world, float).reshape(-1, 3)
    r = np.broadcast_to(np.asarray(radius_world, float), c.shape[:1])
    if len(c) == 0:
        return None
    basis = light_basis(light_dir_world)
    p = c @ basis.T                                                  # (N, 3) x, y, depth
    return fit_bounds((p - r[:, None]).min(axis=0), (p + r[:, None]).max(axis=0), map_texels, light_dir_world)


def fit_bounds(lo, hi, map_texels=MAP_TEXELS, light_dir_world=LIGHT_DIR_WORLD):
    """The `LightFrame` whose square holds the light-space box [lo, hi] (x, y, depth), rounded
    as the module's conventions say."""
    basis = light_basis(light_dir_world)
    half = 0.5 * max(hi[0] - lo[0], hi[1] - lo[1], 1e-3)
    half = half * map_texels / (map_texels - 2 * MARGIN_TEXELS)      # room for the margin
    half = SIZE_STEP ** np.ceil(np.log(half) / np.log(SIZE_STEP))
    # grown by a texel, so that moving the centre onto whole texels (by half a texel at most) loses nothing
    half *= 1 + 2 / map_texels
    texel = 2 * half / map_texels
    centre = np.round(0.5 * (lo[:2] + hi[:2]) / texel) * texel
    # depth range on a grid of DEPTH_STEPS steps of the square's side, likewise; the far side
    # further by what the slope-scaled offset can add (factor x a face's depth extent, at most
    # the casters' depth span): a back face pushed past the far plane would leave a hole, "lit"
    step = 2 * half / DEPTH_STEPS
    near = (np.floor(lo[2] / step) - 1) * step
    far = (np.ceil((hi[2] + POLYGON_OFFSET[0] * (hi[2] - lo[2])) / step) + 1) * step
    projection = np.array([
        [1 / half, 0, 0, -centre[0] / half],
        [0, 1 / half, 0, -centre[1] / half],
        [0, 0, 2 / (far - near), -(far + near) / (far - near)],
        [0, 0, 0, 1],
    ])
    view = np.eye(4)
    view[:3, :3] = basis
    return LightFrame(projection @ view, int(map_texels), map_texels / (2 * half), basis, 1 / (far - near),
                      np.array(lo, float), np.array(hi, float))


# clip [-1, 1]^3 -> texture coordinates and depth [0, 1]^3
TEXTURE_FROM_CLIP = np.array([[0.5, 0, 0, 0.5], [0, 0.5, 0, 0.5], [0, 0, 0.5, 0.5], [0, 0, 0, 1.0]])
ROW_FLOATS = 17  # a depth-pass instance row: the model matrix column-major (16), the capsule half length


def levels(kind, texels):
    """level -> (M,) bool: how the depth pass draws each caster of a type by its bounding radius
    in texels: not at all under CULL_TEXELS, as a point under POINT_TEXELS, else as a mesh
    (the coarse one under COARSE_TEXELS)."""
    point = (texels >= CULL_TEXELS) & (texels < POINT_TEXELS)
    if kind in meshes.COARSE_TYPES:
        return {"full": texels >= COARSE_TEXELS, "coarse": (texels >= POINT_TEXELS) & (texels < COARSE_TEXELS),
                "point": point}
    return {"full": texels >= POINT_TEXELS, "point": point}


class ShadowMap:
    """The key light's depth map: `render` draws it (when the casters or the view changed),
    `bind` hands it to the scene's programs."""

    def __init__(self, ctx, map_texels=MAP_TEXELS):
        self.ctx = ctx
        self.map_texels = int(map_texels)
        self.depth = ctx.depth_texture((self.map_texels, self.map_texels))
        self.depth.compare_func = "<="          # sampler2DShadow: 1 where the pixel is no farther
        self.depth.filter = (moderngl.LINEAR, moderngl.LINEAR)  # 2x2 comparisons blended per tap
        self.depth.repeat_x = self.depth.repeat_y = False
        self.framebuffer = ctx.framebuffer(depth_attachment=self.depth)
        self.mesh_program = ctx.program(vertex_shader=(SHADERS / "shadow_mesh.vert.glsl").read_text(),
                                        fragment_shader=(SHADERS / "shadow_depth.frag.glsl").read_text())
        self.point_program = load_program(ctx, "shadow_point")
        self.vaos, self.buffers = {}, {}
        self.shadow_from_world = None   # (4, 4), world -> [0, 1]^3 of the last map drawn
        self.light = None               # the LightFrame of the last map drawn
        self.drawn = {}                 # casters drawn per (kind, level) in the last map
        self.renders = 0                # depth passes drawn (the rest reused the map)
        self._drawn_for = None          # what the map was drawn for (render)
        self._caster_cache = None

    def _vao(self, renderer, kind, level):
        """The depth pass's instanced vertex array for a shape type and level (its own instance
        buffer; the renderer's unit meshes)."""
        if (kind, level) not in self.vaos:
            buffer = self.ctx.buffer(reserve=64 * ROW_FLOATS * 4, dynamic=True)
            self.buffers[kind, level] = buffer
            if level == "point":
                self.vaos[kind, level] = self.ctx.vertex_array(
                    self.point_program, [(buffer, "16f 1f", "in_model", "in_half_length")])
            else:
                vertices, indices = renderer.meshes[kind, level == "coarse"]
                self.vaos[kind, level] = self.ctx.vertex_array(
                    self.mesh_program,
                    [(vertices, "3f 12x 1f", "in_position", "in_cap"), (buffer, "16f 1f/i", "in_model", "in_half_length")],
                    index_buffer=indices, index_element_size=4)
        return self.vaos[kind, level], self.buffers[kind, level]

    def render(self, renderer, translation_world, rotation_world, scale_world, view_projection, key=None, force=False,
               focal_px=None):
        """Draw the depth map of the renderer's shapes (`renderer.groups`) at these poses as the
        light sees them, fitted to the casters that shadow the view `view_projection`; -> self,
        or None when no caster shadows the view. `focal_px` (P[1, 1] * height / 2, app.culling):
        the map uses only as many texels as give TEXELS_PER_PIXEL at the nearest caster (a
        multiple of TEXELS_STEP from MIN_TEXELS; None: all of them): a close-up of a small scene
        does not draw a million texels for a few hundred pixels.

        The map last drawn is kept when it still holds: same shapes, same fit, and either the
        same `key` (an object standing for the poses: the viewer's world state) or no caster
        moved by STALE_TEXELS or more since (a point of a caster moves by at most
        |dT| + r (||dR||_F + |dS|), r its bounding radius). `force`: draw it anyway."""
        translation_world = np.ascontiguousarray(translation_world, dtype=float)
        rotation_world = np.ascontiguousarray(rotation_world, dtype=float)
        scale_world = np.asarray(scale_world, dtype=float)
        casters, radius, tilted = self._casters(renderer.groups)
        if len(casters) == 0:
            return None
        T, S = translation_world[casters], scale_world[casters, 0]
        light = self._fit(T, radius * S, tilted, view_projection, focal_px)
        if light is None:
            return None
        last = self._drawn_for
        if not force and last is not None and last["groups"] is renderer.groups and np.array_equal(last["light"], light.view_projection):
            if key is not None and last["key"] is key:
                return self
            if _moved_less(T, rotation_world[casters], S, radius, last["T"], last["R"], last["S"],
                           STALE_TEXELS / light.texels_per_m):
                return self
        ctx = self.ctx
        self.framebuffer.viewport = (0, 0, light.texels, light.texels)
        self.framebuffer.use()
        self.framebuffer.clear(depth=1.0)  # all of it: lookups past the square used find "lit"
        ctx.enable(moderngl.DEPTH_TEST | moderngl.CULL_FACE | moderngl.PROGRAM_POINT_SIZE)
        ctx.cull_face = "front"
        ctx.polygon_offset = POLYGON_OFFSET
        self._set_uniforms(light)
        self.drawn = {}
        try:
            for kind, group in renderer.groups.items():
                if kind == "plane":  # receivers (module docstring)
                    continue
                index = group["index"]
                texels = group["radius"] * scale_world[index, 0] * light.texels_per_m
                for level, chosen in levels(kind, texels).items():
                    rows = np.flatnonzero(chosen)
                    self.drawn[kind, level] = len(rows)
                    if len(rows) == 0:
                        continue
                    instances = np.empty((len(rows), ROW_FLOATS), dtype=np.float32)
                    write_models(translation_world, rotation_world, scale_world, index[rows], group["shape_matrices"],
                                 rows, instances)
                    instances[:, 16] = group["half_length"][rows]
                    vao, buffer = self._vao(renderer, kind, level)
                    buffer.orphan(max(instances.nbytes, buffer.size))  # as app.renderer: no wait on the last frame
                    buffer.write(instances)
                    if level == "point":
                        self.point_program["u_half_extent"].value = meshes.HALF_EXTENTS[kind]
                        self.point_program["u_sphere"].value = kind == "sphere"
                        vao.render(moderngl.POINTS, vertices=len(rows))
                    else:
                        vao.render(moderngl.TRIANGLES, instances=len(rows))
        finally:
            ctx.cull_face = "back"
            ctx.polygon_offset = (0.0, 0.0)
            ctx.disable(moderngl.CULL_FACE | moderngl.PROGRAM_POINT_SIZE)
        self.light = light
        used = light.texels / self.map_texels
        self.shadow_from_world = np.diag([used, used, 1.0, 1.0]) @ TEXTURE_FROM_CLIP @ light.view_projection
        self._drawn_for = {"key": key, "groups": renderer.groups, "light": light.view_projection,
                           "T": T, "R": rotation_world[casters], "S": S}
        self.renders += 1
        return self

    def _set_uniforms(self, light):
        metres_per_texel = 1.0 / light.texels_per_m
        self.mesh_program["u_light_view_projection"].write(gl_bytes(light.view_projection))
        self.point_program["u_light_view_projection"].write(gl_bytes(light.view_projection))
        for name, value in (("u_light_dir_world", light.basis[2]), ("u_texel_right_world", light.basis[0] * metres_per_texel),
                            ("u_texel_up_world", light.basis[1] * metres_per_texel)):
            self.point_program[name].value = tuple(float(x) for x in value)
        self.point_program["u_depth_per_m"].value = light.depth_per_m
        # as the meshes' slope-scaled offset on the ground beside a contact: the ground's depth
        # changes by about a texel across a texel (l at 50 degrees from the vertical)
        self.point_program["u_bias"].value = POINT_BIAS_TEXELS * metres_per_texel * light.depth_per_m

    def _casters(self, groups):
        """(node indices, bounding radii at unit scale, whether a plane is tilted) of the shapes
        that cast shadows (all but planes), kept per `groups` (the renderer's per-scene constants)."""
        if self._caster_cache is None or self._caster_cache[0] is not groups:
            indices, radii, tilted = [np.zeros(0, int)], [np.zeros(0)], False
            for kind, group in groups.items():
                if kind == "plane":
                    # a plane's normal is its size matrix's y column; a tilted one reaches below any body
                    normals = group["shape_matrices"][:, :3, 1]
                    tilted |= bool(np.any(np.abs(normals[:, 1]) < 0.999 * np.linalg.norm(normals, axis=1)))
                else:
                    indices.append(group["index"])
                    radii.append(group["radius"])
            self._caster_cache = (groups, np.concatenate(indices), np.concatenate(radii), tilted)
        return self._caster_cache[1:]

    def _fit(self, centres, radii, tilted, view_projection, focal_px=None):
        """The LightFrame of the casters (bounding spheres) that shadow the view, or None."""
        bottoms = centres[:, 1] - radii
        floor_y = min(0.0, float(np.min(bottoms[np.isfinite(bottoms)], initial=0.0)))
        if tilted:  # shadows may fall on it far below the bodies: sweep as far as the scene is wide
            finite = np.all(np.isfinite(centres), axis=1) & np.isfinite(radii)
            floor_y -= float(np.max(np.ptp(centres[finite], axis=0), initial=0.0) + 2 * np.max(radii[finite], initial=0.0))
        shown, lo, hi, nearest = _caster_extent(centres, radii, view_projection, floor_y)
        if not shown.any():
            return None
        texels = self.map_texels
        if focal_px is not None:
            pixels_per_m = focal_px / max(nearest, 1e-3)   # at the nearest caster
            wanted = max(hi[0] - lo[0], hi[1] - lo[1]) * pixels_per_m * TEXELS_PER_PIXEL
            texels = int(min(self.map_texels, max(MIN_TEXELS, TEXELS_STEP * np.ceil(wanted / TEXELS_STEP))))
        return fit_bounds(lo, hi, texels)

    @property
    def footprint_planes(self):
        """(4, 4) planes (n, d), n . p + d >= 0 inside: the column swept along l by the casters'
        light-space bounds (right . p in [lo_x, hi_x], up . p in [lo_y, hi_y]), where alone
        their shadows fall."""
        right, up = self.light.basis[0], self.light.basis[1]
        lo, hi = self.light.lo, self.light.hi
        return np.array([[*right, -lo[0]], [*-right, hi[0]], [*up, -lo[1]], [*-up, hi[1]]])

    def bind(self, *programs):
        """Set the map and its matrix on the scene's programs (compiled with SHADOWS)."""
        self.depth.use(location=TEXTURE_UNIT)
        matrix = gl_bytes(self.shadow_from_world)
        for program in programs:
            program["u_shadow_map"].value = TEXTURE_UNIT
            program["u_shadow_from_world"].write(matrix)

    def release(self):
        for vao in self.vaos.values():
            vao.release()
        for buffer in self.buffers.values():
            buffer.release()
        for resource in (self.mesh_program, self.point_program, self.framebuffer, self.depth):
            resource.release()
