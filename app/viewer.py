"""The viewer: one per GL context, the thin part that wires the app's parts together and runs a
frame. The parts:
- app.session's `Session`: the app's state, no GL: the simulation and its timeline, the stepping
  policy, recordings, settings and preferences, the selection and the messages, the kernels'
  preparation;
- app.view's `View`: what the window shows and how a pixel maps back: the camera, the renderer and
  shadows, the overlays, picking, the frame viewed from and the trails;
- the panel (app.panel) and its sections, drawn with Dear ImGui;
- the ghost runs (app.ghosts), the hand's pulls and flicks (app.handles) and the video (app.video).

The viewer hears the session (it is its `Listener`): a scene opened, a reset, a new state, an
input given, a pull held; it passes pyglet's events on (`app.window` feeds them, and the window's
own framebuffer), keys to their actions (app.controls' KEYS: the viewer's own, the view's, the
session's) and draws each frame into the framebuffer it is given. The offscreen test drives it
with an EGL context, no window, and the view's offscreen target. Screenshots draw the last frame
again into that target and read it (`read_rgb`).

A frame (`frame`): the session polls the kernels' preparation, then steps as much simulated time as
the wall time since the last frame allows (the session's stepping policy: MAX_FRAME_SECONDS of it at
most, within PHYSICS_BUDGET_SECONDS of stepping, `Session.advance`); the plots and trails take their
samples; the panel is built and the scene and panel drawn.
"""
import time
import traceback
from pathlib import Path

from imgui_bundle import imgui, implot
from pyglet.window import key, mouse

from app import handles
from app.controls import KEYS, SCENE_KEYS, matches
from app.ghosts import Ghosts
from app.imgui_renderer import ImGuiInput, ImGuiRenderer
from app.panel import Panel
from app.png import write_png
from app.session import MAX_FRAME_SECONDS, PHYSICS_BUDGET_SECONDS, Listener, Session, scene_files
from app.video import VideoControl
from app.view import View



class Viewer(Listener):
    def __init__(self, ctx, size, scene=None, overrides=None, store=True, msaa=None, record=None, video=None,
                 video_panel=True, prepare=False, frame_log=None):
        """`size` = (width, height) in pixels; `scene`, `overrides`, `store`, `record`, `prepare`:
        the session's (app.session.Session); `video` = an MP4 to record to from the first frame,
        `video_panel` = whether videos show the panel (app.video); `msaa` = samples, None = 4 on a
        hardware GL and 0 on Mesa's software renderers (there 4x costs about ten times the whole
        scene: docs/benchmarks.md, section viewer). `frame_log`: a CSV file that gets one row per
        frame (frame, Unix time, wall seconds since the last frame, simulated time, steps taken,
        whether kernels were being prepared) for the frame-time tests and the start-up benchmark."""
        self.session = session = Session(overrides, store, record, prepare, scene, listener=self)
        # the letters the app's own keys take: a scene's [[key]] on one is not bound
        session.app_letters = frozenset(key.symbol_string(bound) for keys, _, _, _ in KEYS for bound in keys
                                        if not isinstance(bound, tuple))
        self.ctx = ctx
        self.view = View(ctx, size, msaa, session)
        self.imgui_context = imgui.create_context()
        imgui.set_current_context(self.imgui_context)  # create_context makes it current only if none is
        imgui.get_io().set_ini_filename(None)  # window layout is ours, not imgui.ini in the cwd
        style = imgui.get_style()
        for part in (imgui.Col_.popup_bg, imgui.Col_.window_bg):   # opaque: no scene shows through text
            color = style.color_(part)
            style.set_color_(part, imgui.ImVec4(color.x, color.y, color.z, 1.0))
        self.implot_context = implot.create_context()  # one per ImGui context, made current with it
        imgui.get_io().display_size = self.size
        self.imgui = ImGuiRenderer(ctx)
        self.imgui_input = ImGuiInput(self.size[1])
        self.panel = Panel(self)
        self.show_help = False
        self.quitting = False           # Ctrl+Q: the window closes (app.window)
        self.frame_count, self._last_frame, self._frame_ms = 0, None, 0.0
        self.ghosts = Ghosts(self)  # variants run beside the main one; follow it (`state_changed`)
        self.hand = handles.Hand(self)  # mouse pulls and flicks
        self.view.ghosts, self.view.hand = self.ghosts, self.hand     # drawn over the scene
        self.frame_log = None if frame_log is None else open(frame_log, "w", buffering=1)
        if self.frame_log is not None:
            self.frame_log.write("frame,unix_time,wall_s,sim_time,steps,preparing\n")
        session.start()
        from app.stats import FrameStats     # here: it loads the solver's modules (numba), after the window is up
        self.timing = FrameStats()  # the panel's stage and frame-part times (app.stats)
        self.video = VideoControl(self, video, video_panel)
        self._video_on_open = video is not None and session.sim is None      # --video while the scene prepares
        if video is not None and session.sim is not None:
            self.video.start()

    # --- what the session says (app.session.Listener) -----------------------------------------
    def opened(self, sim, path, follow):
        session = self.session
        self.hand.release()
        for said in self.view.show(sim):   # a mesh drawn without it; the physics is unchanged
            session.notify(said)
        self.view.frame_scene()
        self.view.follow = follow
        self.on_scene_loaded(path)

    def back_to_start(self):
        self.view.forget_history()
        self.hand.release()

    def state_changed(self):
        self.ghosts.sync()  # every change of the main state: the ghosts follow (app.ghosts)

    def input_given(self, kind, args):
        if self.ghosts.comparison is not None:
            self.ghosts.sync()
            try:
                self.ghosts.comparison.apply_input(kind, *args)
            except ValueError as error:  # a ghost's refusal is display: the main run goes on
                self.session.notify(f"ghosts: {error}")

    def holding(self):
        return self.hand.holding

    def before_step(self):
        self.hand.before_step()

    def on_scene_loaded(self, path):
        """Hook: the window sets its title here."""

    # --- actions (keys and panel) -------------------------------------------------------------
    def toggle_help(self):
        self.show_help = not self.show_help

    def toggle_overlay(self):
        self.session.prefs["numbers"] = not self.session.prefs["numbers"]

    def escape(self):
        """Esc: close the help, else the error box, else the message; with nothing open, nothing.
        (ImGui's own pop-ups close on the Escape key it is sent first: `key_press`.)"""
        if self.show_help:
            self.show_help = False
        elif self.session.error:
            self.session.error = None
        else:
            self.session.message = None

    def quit(self):
        """Ctrl+Q: the window closes after this frame (`app.window`), through `close`, which saves
        the recording, the video and the view preferences as the close button does."""
        self.quitting = True

    def screenshot_key(self):
        path = Path.cwd() / time.strftime("sandbox-%Y%m%d-%H%M%S.png")
        self.screenshot(path)
        self.session.notify(f"saved {path}")

    def toggle_video(self):
        self.video.toggle()

    def screenshot(self, path):
        """Save the last frame (scene and panel) as a PNG."""
        write_png(path, self.read_rgb())

    # --- a frame ------------------------------------------------------------------------------
    @property
    def size(self):
        """The window's size in pixels, (width, height): the view's."""
        return self.view.size

    def resize(self, width, height):
        self.view.resize(width, height)
        self.imgui_input.height = self.size[1]

    def frame(self, frame_seconds=None, screen=None):
        """Advance and draw one frame into `screen` (a moderngl framebuffer: the window's), or
        into the view's `target.resolved` when None. `frame_seconds` None = real time."""
        session, view, stats = self.session, self.view, self.session.stats
        self.timing.begin_frame()
        view.fit_target()      # the samples chosen last frame (`View.set_msaa`), as `draws_offscreen` said
        now = time.perf_counter()
        wall = 0.0 if self._last_frame is None else now - self._last_frame
        real_time = frame_seconds is None       # else a scripted frame: every step it is due, always
        if real_time:
            frame_seconds = min(wall, MAX_FRAME_SECONDS)
        if self._last_frame is not None and now > self._last_frame:
            # the frame's milliseconds smoothed (not its rate: a mean of rates weighs the quick
            # frames, and a slow frame's physics then read longer than the frame), the physics' alike
            ms = 1e3 * wall
            self._frame_ms = ms if self._frame_ms == 0 else 0.9 * self._frame_ms + 0.1 * ms
            stats["fps"] = 1e3 / self._frame_ms
        self._last_frame = now
        session.clock += frame_seconds
        session.expire_message()
        session.poll_preparation()
        if self._video_on_open and session.sim is not None:
            self._video_on_open = False
            self.video.start()      # --video records from the scene's first frame
        sim = session.sim
        before = (sim.time, sim.step_count) if sim is not None else None
        session.advance(frame_seconds, PHYSICS_BUDGET_SECONDS if real_time else None)
        sim = session.sim
        if before is not None and sim is not None and wall > 0:
            # real-time factor: simulated over wall seconds, smoothed like the FPS (paused: 0; played
            # backwards: below 0; a seek back while running: 0, a jump and no rate)
            moving = sim.step_count >= before[1] or session.backwards
            rtf = (sim.time - before[0]) / wall if moving else 0.0
            stats["rtf"] = 0.9 * stats["rtf"] + 0.1 * rtf
        physics_ms = stats["physics_ms"]
        stats["physics_avg_ms"] = (physics_ms if stats["physics_avg_ms"] == 0
                                   else 0.9 * stats["physics_avg_ms"] + 0.1 * physics_ms)
        if self.frame_log is not None:
            simulated = sim.time if sim is not None else float("nan")
            steps = sim.step_count - before[1] if before is not None and sim is not None else 0
            self.frame_log.write(f"{self.frame_count},{time.time():.6f},{wall:.6f},{simulated:.9g},{steps},"
                                 f"{int(session.preparation is not None and session.preparation.busy)}\n")
        self.timing.lap("physics")
        session.sample_history()
        view.sample_frames()
        self.timing.lap("plots")
        if view.follow and session.selected is not None:
            view.camera.follow(view.frames.to_frame(session.state, session.state["T"][session.selected]))
        start = time.perf_counter()
        self.build_ui(frame_seconds)
        self.timing.lap("panel")
        self.draw(screen)
        render_ms = 1e3 * (time.perf_counter() - start)     # (smoothed as the frame's and the physics' are)
        stats["render_ms"] = render_ms if stats["render_ms"] == 0 else 0.9 * stats["render_ms"] + 0.1 * render_ms
        self.timing.lap("render")
        self.frame_count += 1
        self.video.after_frame()
        self.timing.lap("video")

    @property
    def draws_offscreen(self):
        """Whether `frame` must draw into the view's target (MSAA, or a video reading it) for the
        window to copy, rather than into the window's own buffer."""
        return self.view.msaa > 0 or self.video.offscreen   # as asked: the target follows at the frame's start

    def build_ui(self, frame_seconds):
        """Run the panel for this frame (ImGui's draw data then lasts until the next call)."""
        imgui.set_current_context(self.imgui_context)
        implot.set_current_context(self.implot_context)
        io = imgui.get_io()
        io.display_size = self.size
        io.delta_time = max(frame_seconds, 1e-4)
        imgui.new_frame()
        try:
            self.panel.draw()
        except Exception as error:  # noqa: BLE001 - a UI bug shows up as an error, not a crash
            self.session.error = f"panel: {type(error).__name__}: {error}"
            traceback.print_exc()
        imgui.render()

    def draw(self, screen=None):
        """Draw the scene and the last built UI into `screen` (default: the offscreen target).

        Without MSAA this is one pass straight into `screen`; with it, into the multisampled
        target, resolved into the target's plain buffer and copied to `screen` (same formats
        needed: the window passes None and copies the colour itself). Nothing else touches
        every pixel: on a software renderer each full-screen pass costs milliseconds."""
        # into the window's buffer (`screen`): the samples the window planned this frame for
        view = self.view
        view.fit_target(None if screen is None else view.target.requested)
        screen = view.target.resolved if screen is None else screen
        fbo = view.target.msaa or screen
        view.render_scene(fbo)
        imgui.set_current_context(self.imgui_context)
        self.imgui.render(imgui.get_draw_data(), fbo)
        if fbo is not screen:
            self.ctx.copy_framebuffer(view.target.resolved, fbo)
            if screen is not view.target.resolved:
                self.ctx.copy_framebuffer(screen, view.target.resolved)

    def read_rgb(self):
        """The current picture (scene and panel) as (height, width, 3) uint8, top row first: the
        last frame drawn again into the offscreen target (the window's own buffer is not read)."""
        if self.frame_count == 0:
            self.build_ui(1 / 60)
        self.draw()
        return self.view.target.read_rgb()

    # --- input (pyglet coordinates: origin bottom left) ---------------------------------------
    def wants_keyboard(self):
        imgui.set_current_context(self.imgui_context)
        return imgui.get_io().want_text_input

    def wants_mouse(self):
        imgui.set_current_context(self.imgui_context)
        return imgui.get_io().want_capture_mouse

    def over_ui(self, x, y):
        """Whether window point (x, y) (pyglet's, origin bottom left) is on the UI: ImGui wants the
        mouse, or the point is inside a window drawn last frame. The second catches a press made
        as the pointer enters the panel, before ImGui has seen it hover there (else it would orbit)."""
        if self.wants_mouse():
            return True
        top = self.size[1] - y
        return any(x0 <= x <= x1 and y0 <= top <= y1 for x0, y0, x1, y1 in self.panel.windows.values())

    def key_press(self, symbol, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.key(symbol, True)
        if self.wants_keyboard():
            return
        if not self.session.message_hovered:
            self.session.message = None  # a status message lasts until the next action
        try:
            for keys, _, method, _ in KEYS:
                if any(matches(bound, symbol, modifiers) for bound in keys):
                    action = self
                    for name in method.split("."):     # "view.frame_scene": the view's action
                        action = getattr(action, name)
                    action()
                    return
            letter = key.symbol_string(symbol)
            if self.session.sim is not None and letter in self.session.keys.letters and not modifiers & (key.MOD_CTRL | key.MOD_ALT):
                self.session.drive_keys(self.session.keys.press(letter, self.session.sim.controls))
                return
            if symbol in SCENE_KEYS:
                files = scene_files()
                i = SCENE_KEYS.index(symbol)
                if i < len(files):
                    self.session.open(files[i])
        except Exception as error:  # noqa: BLE001 - input errors show, never end the app
            self.session.error = f"key {key.symbol_string(symbol)}: {type(error).__name__}: {error}"

    def release_keys(self):
        """Let go of every scene key held (the window lost the keyboard, and no release will come):
        each gives its release input, recorded as a key's own would be."""
        for letter in sorted(self.session.keys.down):
            try:
                self.session.drive_keys(self.session.keys.release(letter, self.session.sim.controls) if self.session.sim is not None else [])
            except Exception as error:  # noqa: BLE001 - input errors show, never end the app
                self.session.error = f"key {letter}: {type(error).__name__}: {error}"
        self.session.keys.down.clear()

    def key_release(self, symbol, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.key(symbol, False)
        letter = key.symbol_string(symbol)
        if self.session.sim is not None and letter in self.session.keys.down:
            try:
                self.session.drive_keys(self.session.keys.release(letter, self.session.sim.controls))
            except Exception as error:  # noqa: BLE001 - input errors show, never end the app
                self.session.error = f"key {letter}: {type(error).__name__}: {error}"

    def text(self, text):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.text(text)

    def mouse_motion(self, x, y):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.motion(x, y)

    def mouse_press(self, x, y, button, modifiers):
        imgui.set_current_context(self.imgui_context)
        over_ui = self.over_ui(x, y)
        if not self.session.message_hovered:
            self.session.message = None  # a status message lasts until the next action
        self.imgui_input.button(x, y, button, True)
        self._press = None if over_ui else (x, y)
        if not over_ui and modifiers & key.MOD_CTRL and button in (mouse.LEFT, mouse.RIGHT):
            self._press = None      # Ctrl is the hand's: a grab that misses never orbits or picks
            try:
                self.hand.press(x, y, flick=button == mouse.RIGHT)
            except ValueError as error:
                self.session.error = str(error)

    def mouse_release(self, x, y, button, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.button(x, y, button, False)
        if self.hand.holding or self.hand.flick is not None:
            self.hand.finish(x, y)
        press = getattr(self, "_press", None)
        if press is not None and button == mouse.LEFT and abs(x - press[0]) + abs(y - press[1]) <= 3:
            self.view.pick(x, y)
        self._press = None

    def mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        imgui.set_current_context(self.imgui_context)
        self.imgui_input.motion(x, y)
        if self.hand.holding or self.hand.flick is not None:
            self.hand.drag(x, y)
            return
        if getattr(self, "_press", None) is None:
            return
        if buttons & (mouse.RIGHT | mouse.MIDDLE) or (buttons & mouse.LEFT and modifiers & key.MOD_SHIFT):
            self.view.camera.pan(dx, dy, self.size[1])
        elif buttons & mouse.LEFT:
            self.view.camera.orbit(dx, dy)

    def mouse_scroll(self, x, y, scroll_x, scroll_y):
        imgui.set_current_context(self.imgui_context)
        if self.over_ui(x, y):
            self.imgui_input.scroll(scroll_x, scroll_y)
        else:
            self.view.camera.zoom(scroll_y)

    def close(self):
        """Save the `record` recording and the video (if any) and the prefs, release GL and ImGui;
        end a warm-up still running (what it compiled stays cached)."""
        if self.frame_log is not None:
            self.frame_log.close()
        self.video.stop()
        self.timing.close()
        self.session.close()
        imgui.set_current_context(self.imgui_context)
        self.imgui.release()
        implot.destroy_context(self.implot_context)  # before its ImGui context
        imgui.destroy_context(self.imgui_context)
        self.view.release()
