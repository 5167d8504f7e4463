"""The pyglet window: a 1280x720 resizable vsync window with a GL 3.3 core context.

It creates the moderngl context, forwards pyglet's events to an `app.viewer.Viewer`, and lets
it draw straight into the window's back buffer (never reading it back: pyglet raises on the GL
error that leaves; screenshots come from the viewer's offscreen target). The frame loop is ours (`run`), the same for the
interactive app and `--frames N`, so tests and the app share every code path.
"""
import time

import moderngl
import pyglet

from app.viewer import Viewer

TITLE = "Hierarchy Sandbox"
# While kernels compile beside the window (app.preparation) it draws at most this often: on a
# software renderer an unpaced frame loop takes half a core from the compiler.
PREPARING_FRAME_SECONDS = 1 / 15
SCREEN_FRACTION = 0.8       # of the screen's width and height an interactive window opens at
SCRIPTED_SIZE = (1280, 720)  # --frames and video runs, and the smallest interactive window


def screen_size(fraction=SCREEN_FRACTION):
    """About `fraction` of the default screen, but no smaller than SCRIPTED_SIZE (its text is
    readable there) nor larger than the screen; SCRIPTED_SIZE where no screen can be read."""
    try:
        screen = pyglet.display.get_display().get_default_screen()
        width, height = screen.width, screen.height
    except Exception:  # noqa: BLE001 - any display trouble: the window opens at the fixed size
        return SCRIPTED_SIZE
    return tuple(min(limit, max(low, int(fraction * full)))
                 for full, low, limit in ((width, SCRIPTED_SIZE[0], width), (height, SCRIPTED_SIZE[1], height)))


def _config():
    # A depth buffer, since the scene is drawn here directly. No multisampling on the window
    # itself: with MSAA the viewer draws into its own multisampled framebuffer and blits the
    # resolved picture here, and a blit into a multisampled default framebuffer is
    # GL_INVALID_OPERATION.
    return pyglet.gl.Config(major_version=3, minor_version=3, forward_compatible=True,
                            double_buffer=True, depth_size=24)


class SandboxWindow(pyglet.window.Window):
    def __init__(self, scene=None, overrides=None, size=(1280, 720), vsync=True, store=True, visible=True, msaa=None,
                 record=None, video=None, video_panel=True, prepare=False, frame_log=None):
        # file_drops: a .toml, .urdf, .xml (MJCF) or .rec dropped onto the window opens it (XDND on X11)
        super().__init__(size[0], size[1], TITLE, resizable=True, vsync=vsync, config=_config(), visible=visible,
                         file_drops=True)
        self.ctx = moderngl.create_context()
        self.viewer = Viewer(self.ctx, self.get_framebuffer_size(), scene, overrides, store=store, msaa=msaa,
                             record=record, video=video, video_panel=video_panel, prepare=prepare,
                             frame_log=frame_log)
        self.viewer.on_scene_loaded = self._title
        if self.viewer.session.scene_path is not None:
            self._title(self.viewer.session.scene_path)

    def _title(self, path):
        self.set_caption(f"{TITLE} - {path.stem}")

    # pyglet events -> viewer (input errors never end the app: the viewer catches them)
    def on_key_press(self, symbol, modifiers):
        # handled here, so that pyglet's default (Escape closes the window) never runs: Esc closes
        # what is open (`Viewer.escape`), Ctrl+Q quits (`Viewer.quit`)
        self.viewer.key_press(symbol, modifiers)
        if self.viewer.quitting:
            self.has_exit = True
        return pyglet.event.EVENT_HANDLED

    def on_key_release(self, symbol, modifiers):
        self.viewer.key_release(symbol, modifiers)

    def on_deactivate(self):
        # the window loses the keyboard: no release will come for the keys held now
        self.viewer.release_keys()

    def on_text(self, text):
        self.viewer.text(text)

    def on_mouse_motion(self, x, y, dx, dy):
        self.viewer.mouse_motion(x, y)

    def on_mouse_press(self, x, y, button, modifiers):
        self.viewer.mouse_press(x, y, button, modifiers)

    def on_mouse_release(self, x, y, button, modifiers):
        self.viewer.mouse_release(x, y, button, modifiers)

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        self.viewer.mouse_drag(x, y, dx, dy, buttons, modifiers)

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        self.viewer.mouse_scroll(x, y, scroll_x, scroll_y)

    def on_file_drop(self, x, y, paths):
        """Open the first dropped file (scene or recording); a bad one shows its error."""
        if paths:
            self.viewer.session.message = None
            self.viewer.session.open(paths[0])

    def on_resize(self, width, height):
        self.viewer.resize(*self.get_framebuffer_size())
        self._screen = None  # moderngl's screen object keeps the size it was detected with
        return pyglet.event.EVENT_HANDLED  # our viewport is set per framebuffer, not pyglet's

    def on_draw(self):
        pass  # drawing happens in `frame`, driven by `run`

    def frame(self, frame_seconds=None):
        """Dispatch pending events, draw one frame, show it."""
        self.switch_to()
        self.dispatch_events()
        if self.has_exit:
            return
        if not self.viewer.draws_offscreen:
            self.viewer.frame(frame_seconds, self._screen_framebuffer())
        else:  # drawn (and resolved) offscreen
            self.viewer.frame(frame_seconds)
            self._blit_color(self.viewer.view.target.resolved)
        self.flip()
        self.viewer.timing.lap("swap")

    def _screen_framebuffer(self):
        if getattr(self, "_screen", None) is None:
            # moderngl keeps the default framebuffer's size from the context's creation: its
            # viewport (set by `use`) is what follows the window
            self._screen = self.ctx.detect_framebuffer(0)
            self._screen.viewport = (0, 0, *self.get_framebuffer_size())
        return self._screen

    def _blit_color(self, source):
        """Copy `source`'s colour to the window. moderngl's copy_framebuffer blits depth too,
        which is GL_INVALID_OPERATION when the depth formats differ (they do here)."""
        gl = pyglet.gl
        width, height = source.size
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, source.glo)
        gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, 0)
        gl.glBlitFramebuffer(0, 0, width, height, 0, 0, width, height, gl.GL_COLOR_BUFFER_BIT, gl.GL_NEAREST)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)

    def close(self):
        if getattr(self, "viewer", None) is not None:
            self.switch_to()
            self.viewer.close()
            self.viewer = None
        super().close()


def run(window, frames=None, screenshot=None, fixed_step=None, until=None):
    """Run until the window closes, or for `frames` frames, or until `until()` is true, then save
    `screenshot` (if given).

    `fixed_step` (s) advances physics by that much per frame instead of by real time, so a
    `--frames N` run is reproducible."""
    count = 0
    while not window.has_exit and (frames is None or count < frames) and not (until is not None and until()):
        start = time.perf_counter()
        window.frame(fixed_step)
        count += 1
        if frames is None:
            viewer = window.viewer
            if viewer is not None and viewer.session.preparation is not None and viewer.session.preparation.compiling:
                time.sleep(max(0.0, PREPARING_FRAME_SECONDS - (time.perf_counter() - start)))
            else:
                time.sleep(0)  # vsync paces the loop; yield to the OS between frames
    if screenshot is not None and window.viewer is not None:
        window.viewer.screenshot(screenshot)
    return count
