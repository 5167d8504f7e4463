"""A small moderngl renderer for Dear ImGui's draw data (imgui-bundle), plus pyglet input.

Why our own: imgui-bundle 1.93's moderngl-window integration calls the removed
`get_tex_data_as_rgba32`, and its pyglet backend needs PyOpenGL. This follows imgui's
`imgui_impl_opengl3.cpp`: textures are created and updated by the renderer
(`BackendFlags_.renderer_has_textures`: the font atlas grows on demand), then every draw list
is uploaded and each command drawn with its texture and scissor rectangle.

Vertices are ImDrawVert: `pos (2f) uv (2f) col (RGBA8)` = 20 bytes; indices are 32-bit
(`imgui.INDEX_SIZE == 4` in this build; checked at start).
"""
import ctypes

import moderngl
import numpy as np
from imgui_bundle import imgui
from pyglet.window import key, mouse

from app.renderer import load_program


class ImGuiRenderer:
    def __init__(self, ctx):
        if imgui.VERTEX_SIZE != 20 or imgui.INDEX_SIZE not in (2, 4):
            raise ValueError(f"unexpected ImGui vertex/index sizes {imgui.VERTEX_SIZE}/{imgui.INDEX_SIZE}")
        self.ctx = ctx
        self.program = load_program(ctx, "imgui")
        self.vertex_buffer = ctx.buffer(reserve=1 << 18, dynamic=True)
        self.index_buffer = ctx.buffer(reserve=1 << 17, dynamic=True)
        self.vao = ctx.vertex_array(
            self.program,
            [(self.vertex_buffer, "2f 2f 4f1", "in_position", "in_uv", "in_color")],
            index_buffer=self.index_buffer,
            index_element_size=imgui.INDEX_SIZE,
        )
        self.textures = {}  # GL name -> moderngl.Texture
        io = imgui.get_io()
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        size = ctx.info["GL_MAX_TEXTURE_SIZE"]
        imgui.get_platform_io().renderer_texture_max_width = size
        imgui.get_platform_io().renderer_texture_max_height = size

    def _update_textures(self):
        status = imgui.ImTextureStatus
        for tex in imgui.get_platform_io().textures:
            if tex.status == status.want_create or (tex.status == status.want_updates and tex.tex_id not in self.textures):
                texture = self.ctx.texture((tex.width, tex.height), 4, tex.get_pixels_array().tobytes())
                texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
                texture.repeat_x = texture.repeat_y = False
                self.textures[texture.glo] = texture
                tex.set_tex_id(texture.glo)
                tex.status = status.ok
            elif tex.status == status.want_updates:
                # Whole-texture re-upload: the atlas is small (about 1 MB) and updates are rare.
                self.textures[tex.tex_id].write(tex.get_pixels_array().tobytes())
                tex.status = status.ok
            elif tex.status == status.want_destroy:
                texture = self.textures.pop(tex.tex_id, None)
                if texture is not None:
                    texture.release()
                tex.set_tex_id(0)
                tex.status = status.destroyed

    def render(self, draw_data, framebuffer):
        """Draw ImGui's draw data into `framebuffer`, whose viewport is the display."""
        self._update_textures()
        width, height = framebuffer.viewport[2:]
        if width <= 0 or height <= 0:
            return
        x0, y0 = draw_data.display_pos
        w, h = draw_data.display_size
        if w <= 0 or h <= 0:
            return
        # Ortho projection of the display rectangle, y down (column-vector matrix).
        projection = np.array([
            [2.0 / w, 0.0, 0.0, -(2 * x0 + w) / w],
            [0.0, -2.0 / h, 0.0, (2 * y0 + h) / h],
            [0.0, 0.0, -1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ], dtype=np.float32)
        self.program["u_projection"].write(projection.T.tobytes())
        framebuffer.use()
        ctx = self.ctx
        ctx.enable_only(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.blend_equation = moderngl.FUNC_ADD
        scale_x, scale_y = width / w, height / h
        for commands in draw_data.cmd_lists:
            vertex_bytes = ctypes.string_at(commands.vtx_buffer.data_address(), commands.vtx_buffer.size() * imgui.VERTEX_SIZE)
            index_bytes = ctypes.string_at(commands.idx_buffer.data_address(), commands.idx_buffer.size() * imgui.INDEX_SIZE)
            if len(vertex_bytes) > self.vertex_buffer.size:
                self.vertex_buffer.orphan(2 * len(vertex_bytes))
            if len(index_bytes) > self.index_buffer.size:
                self.index_buffer.orphan(2 * len(index_bytes))
            self.vertex_buffer.write(vertex_bytes)
            self.index_buffer.write(index_bytes)
            for command in commands.cmd_buffer:
                texture = self.textures.get(command.tex_ref.get_tex_id())
                if texture is None or command.elem_count == 0:
                    continue
                cx0, cy0, cx1, cy1 = command.clip_rect
                sx0, sy0 = int((cx0 - x0) * scale_x), int((cy0 - y0) * scale_y)
                sx1, sy1 = int((cx1 - x0) * scale_x), int((cy1 - y0) * scale_y)
                if sx1 <= sx0 or sy1 <= sy0:
                    continue
                # GL's scissor origin is bottom left, ImGui's clip rectangles top left.
                framebuffer.scissor = (sx0, height - sy1, sx1 - sx0, sy1 - sy0)
                texture.use(0)
                self.vao.render(moderngl.TRIANGLES, vertices=command.elem_count, first=command.idx_offset,
                                )
        framebuffer.scissor = None
        ctx.disable(moderngl.BLEND)

    def release(self):
        for texture in self.textures.values():
            texture.release()
        self.textures.clear()
        for tex in imgui.get_platform_io().textures:
            tex.set_tex_id(0)
            tex.status = imgui.ImTextureStatus.destroyed
        self.vao.release()
        self.vertex_buffer.release()
        self.index_buffer.release()


# --- pyglet input -> ImGui io -----------------------------------------------------------------

_KEYS = {
    key.TAB: "tab", key.BACKSPACE: "backspace", key.RETURN: "enter", key.ESCAPE: "escape",
    key.DELETE: "delete", key.SPACE: "space", key.LEFT: "left_arrow", key.RIGHT: "right_arrow",
    key.UP: "up_arrow", key.DOWN: "down_arrow", key.HOME: "home", key.END: "end",
    key.PAGEUP: "page_up", key.PAGEDOWN: "page_down", key.PERIOD: "period", key.MINUS: "minus",
    key.LCTRL: "left_ctrl", key.RCTRL: "right_ctrl", key.LSHIFT: "left_shift", key.RSHIFT: "right_shift",
    key.A: "a", key.C: "c", key.V: "v", key.X: "x", key.Z: "z", key.Y: "y",
}
_MODIFIERS = {key.LCTRL: "mod_ctrl", key.RCTRL: "mod_ctrl", key.LSHIFT: "mod_shift", key.RSHIFT: "mod_shift"}
_BUTTONS = {mouse.LEFT: 0, mouse.RIGHT: 1, mouse.MIDDLE: 2}


class ImGuiInput:
    """Feeds pyglet window events to ImGui's io (the platform half of a backend)."""

    def __init__(self, height):
        self.height = height  # pyglet's y points up, ImGui's down

    def key(self, symbol, down):
        name = _KEYS.get(symbol)
        if name is not None:
            io = imgui.get_io()
            io.add_key_event(getattr(imgui.Key, name), down)
            if symbol in _MODIFIERS:
                io.add_key_event(getattr(imgui.Key, _MODIFIERS[symbol]), down)

    def text(self, text):
        for char in text:
            imgui.get_io().add_input_character(ord(char))

    def motion(self, x, y):
        imgui.get_io().add_mouse_pos_event(float(x), float(self.height - y))

    def button(self, x, y, button, down):
        self.motion(x, y)
        imgui.get_io().add_mouse_button_event(_BUTTONS.get(button, 0), down)

    def scroll(self, dx, dy):
        imgui.get_io().add_mouse_wheel_event(float(dx), float(dy))
