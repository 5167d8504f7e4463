"""The Dear ImGui panel: scene browser, transport, timeline, plots, physics settings, overlays, inspector, stats.

Every physics widget writes through `Session.set(name, value)` (= `sim.set`), so a change takes
effect on the next step without reloading. Settings are drawn from `sim.settings` itself: a
field with a known set of choices is a combo, a bool a checkbox, an int or float an input, a
3-vector three inputs — so solver settings appear as soon as physics adds them.

`item_rects` keeps the screen rectangle (pixels, origin top left) of every button and widget
drawn last frame, by label, so tests can click them with real X events.

The panel's width follows its edge when dragged (any edge, as every ImGui window) and is kept as
a view preference (`panel_width`): the next run opens it as wide. A label the window cuts (its
text reaches past the window's visible right edge) shows whole in a tooltip while the pointer
is on it (`remember`, `text`, `whole`); `cut` lists this frame's cut labels and `cut_rects` their
items' rectangles. The same `whole` serves every section: the tree's rows, the plots' titles, axis
labels and legends (`app.plots`), the Stats tables (`app.stats`), the timeline's lines and the
help's rows.
"""
import textwrap
from dataclasses import fields
from pathlib import Path

import numpy as np
from imgui_bundle import imgui

from app import frames, history, overlays, plots
from app.session import scene_files
from app.settings import MAX_BUDGET_MB, MIN_BUDGET_MB, MIN_PANEL_WIDTH, OVERLAYS
from app.tree import Tree
from physics.core.choices import EXPONENTIAL, GYROSCOPIC, INTEGRATOR, JOINT_SOLVE, ORDER_NOTE, ROTATION_UPDATE
from physics.core.settings import EXPONENTIALS, GYROSCOPIC as GYROSCOPIC_MODES, JOINT_SOLVES, ROTATION_UPDATES, Settings, \
    integrator_names
from physics.dynamics.driving import describe, describe_letters

RED = imgui.ImVec4(1.0, 0.35, 0.3, 1.0)
DIM = imgui.ImVec4(0.75, 0.75, 0.75, 1.0)
PANEL_WIDTH = 380     # px, the panel's first width (then the user's: prefs["panel_width"])
SCENE_MARGIN = 200    # px of the window the panel leaves to the scene, at least
TOAST_WIDTH = 640  # px, the status message's box over the scene (wrapped within it)
LABEL_WIDTH = 160  # px right of every input for its label: "max_contact_push_speed" fits whole
ERROR_WIDTH = 520  # px, the error box in the middle of the window
FLOAT_FORMAT = "%.6g"  # float settings: six significant digits, so erp = 0.99999 does not read as 1
MAX_NAMES = 200  # labels drawn by the names overlay, nearest first


PINNED_JOINTS = ("ball", "hinge", "fixed")  # joints whose anchors coincide: the Stats' largest gap
CHOICES = ("gyroscopic", "integrator", "rotation_update", "exponential", "joint_solve")  # the settings `_choices` lists


def _choices():
    return {"gyroscopic": GYROSCOPIC_MODES, "integrator": integrator_names(),
            "rotation_update": ROTATION_UPDATES, "exponential": EXPONENTIALS, "joint_solve": JOINT_SOLVES}


def _meanings():
    """{setting: {choice: its one-line explanation}} (physics.core.choices): each shown over its item."""
    return {choice.key: choice.meanings for choice in (GYROSCOPIC, INTEGRATOR, ROTATION_UPDATE, EXPONENTIAL, JOINT_SOLVE)}


def _vec(v):
    return "(" + ", ".join(f"{x:+.3f}" for x in np.asarray(v, float).ravel()) + ")"


TOOLTIP_EMS = 32        # a tooltip's lines wrap at this many font sizes: a long one stays inside the window


def wrapped_tooltip(text):
    """The hovered item's tooltip, `text` with its lines wrapped at TOOLTIP_EMS font sizes (ImGui's
    runs a long line off the window). Wrapped here, in whole characters of the panel's monospaced
    font, and set as ImGui's SetTooltip does: a later tooltip of the same item replaces it, where
    a second BeginTooltip would append to it (`Panel.tooltip` after `Panel.whole`)."""
    columns = max(20, int(imgui.get_font_size() * TOOLTIP_EMS / max(imgui.calc_text_size("M").x, 1.0)))
    imgui.set_tooltip("\n".join(textwrap.fill(line, columns) for line in text.split("\n")))


def setting_widget(name, value, id_suffix=""):
    """One physics setting's widget (a combo for a known set of choices, a checkbox, an int or float
    input, three inputs for a 3-vector), labelled `name`; `id_suffix` ("##draft") keeps a second
    copy's ImGui ID apart. -> (changed, new value): changed only once the value is one the setting
    can take (`Settings.accepts`: physics.core.validation's ranges), so a half-typed value is not applied."""
    choices, label = _choices(), f"{name}{id_suffix}"
    if name in choices:
        options = list(choices[name])
        meanings = _meanings().get(name, {})
        index = options.index(value) if value in options else 0
        changed = False
        if imgui.begin_combo(label, options[index]):
            for k, option in enumerate(options):
                clicked, _ = imgui.selectable(option, k == index)
                if meanings.get(option) and imgui.is_item_hovered():   # what the choice keeps, loses and costs
                    wrapped_tooltip(meanings[option])
                if clicked and k != index:
                    index, changed = k, True
            imgui.end_combo()
        return changed, options[index]
    if isinstance(value, (bool, np.bool_)):
        return imgui.checkbox(label, bool(value))
    if isinstance(value, (int, np.integer)):
        changed, new = imgui.input_int(label, int(value))
    elif isinstance(value, (float, np.floating)):
        changed, new = imgui.input_double(label, float(value), 0.0, 0.0, FLOAT_FORMAT)
    elif np.shape(value) == (3,):
        changed, new = imgui.input_float3(label, [float(x) for x in value])
        new = np.array(new, dtype=float)
    else:
        imgui.text(f"{name}: {value}")
        return False, value
    return changed and Settings.accepts(name, new), new


def substeps_text(counts):
    """The sub-steps lines of the Stats (`Simulation.substep_counts`): how many were taken per one
    asked for and the worst step's; RATTLE's retries, and those the step's budget refused
    (`physics.pipeline.retry.STEP_BUDGET`). Two lines: one is wider than the panel."""
    return (f"sub-steps {counts['per_nominal']:.2f}x nominal, worst step {counts['worst_step']:.2f}x",
            f"RATTLE retries {counts['retries']}, halved ahead {counts['halved_ahead']}, "
            f"over budget {counts['refused']}")


def speed_text(rtf, paused):
    """The real-time factor as the overlay and the Stats say it: "paused" while paused (a factor
    of 0.00 there read as a stall), "backwards x0.50" while played backwards (rtf < 0: simulated
    time running back at half the wall clock's rate), else "real time x1.00"."""
    if paused:
        return "paused"
    return f"backwards x{-rtf:.2f}" if rtf < 0 else f"real time x{rtf:.2f}"


class Panel:
    def __init__(self, viewer):
        self.viewer = viewer
        self.open_path = ""
        self.item_rects = {}
        self.windows = {}               # label -> rectangle of each window drawn this frame
        self._scene_settings = None     # (scene, its file's Settings): what `physics` compares with
        self.numbers_bottom = 0.0       # the numbers overlay's lower edge: the legend goes below it
        self.numbers_lines = ()         # what the numbers overlay said in the last frame
        self.plotted = {}  # plot -> (points, rectangle) ImPlot drew last frame (app.plots.draw)
        self.tree = Tree(self)
        self.axes = {}     # plot -> its y axis last frame (app.plots.readable_axis): limits, ticks, labels
        self.cut = []      # labels cut by the window's edge this frame (their tooltip shows them whole)
        self.cut_rects = []  # the items' screen rectangles of `cut`, in the same order
        self.whole_shown = None  # the cut label whose tooltip shows this frame, if any
        self._cut_prefix = ""
        self.slider_turns = {}  # unlimited hinge -> the centre of its slider's turn while it is dragged

    def remember(self, label, text=None, cut=False, end_x=None):
        """Record the last drawn item's screen rectangle under `label` (`item_rects`: what tests and
        the tree, frames and plots sections click on), and show `text` (default: the label) whole
        in a tooltip when the window cuts it (`whole`; `end_x`: where its text ends, when not at
        the item's right edge), or when `cut` (the item cut it itself: a combo's value wider than
        its box)."""
        lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.item_rects[label] = (lo.x, lo.y, hi.x, hi.y)
        self.whole(label.split("##")[0] if text is None else text, np.inf if cut else end_x)

    @staticmethod
    def combo_cuts(shown):
        """Whether the combo about to be drawn cuts the value `shown`: its box (the item width less
        its arrow and padding) is narrower than the text."""
        return (imgui.calc_text_size(shown).x
                > imgui.calc_item_width() - imgui.get_frame_height() - 2 * imgui.get_style().frame_padding.x)

    def header(self, label, flags=0):
        """A collapsing header (remembered; it spans the row, so its text's own end decides
        whether it is cut). -> whether it is open."""
        is_open = imgui.collapsing_header(label, flags)
        lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.item_rects[label] = (lo.x, lo.y, hi.x, hi.y)
        style = imgui.get_style()
        self.whole(label, lo.x + 2 * style.frame_padding.x + imgui.get_font_size() + imgui.calc_text_size(label).x)
        return is_open

    def whole(self, text, end_x=None):
        """When the last item ends (`end_x`, default its rectangle's right edge) past the current
        window's visible right edge, its text is cut: list it in `cut` and, while the pointer is on
        the item, show `text` whole in a tooltip (an item's own tooltip, set through `tooltip`,
        follows it there)."""
        self._cut_prefix = ""
        end = imgui.get_item_rect_max().x if end_x is None else end_x
        style = imgui.get_style()
        scrollbar = style.scrollbar_size if imgui.get_scroll_max_y() > 0 else 0.0
        right = imgui.get_window_pos().x + imgui.get_window_size().x - style.window_padding.x - scrollbar
        if end <= right + 0.5 or not text:
            return
        self.cut.append(text)
        lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.cut_rects.append((lo.x, lo.y, hi.x, hi.y))
        if imgui.is_item_hovered():
            self.whole_shown = text
            self._cut_prefix = text + "\n\n"
            wrapped_tooltip(text)

    def tooltip(self, text):
        """The last item's own tooltip (after its label, when the window cut that: `whole`)."""
        if imgui.is_item_hovered():
            wrapped_tooltip(self._cut_prefix + text)

    def text(self, text, color=None):
        """A line of text (coloured `color`), whole in a tooltip when the window cuts it."""
        if color is None:
            imgui.text(text)
        else:
            imgui.text_colored(color, text)
        self.whole(text)

    def _remember_window(self, label):
        """Record the current window's rectangle under `label`, in `item_rects` and in `windows`
        (this frame's windows: `Viewer.over_ui` keeps a press on any of them from the camera)."""
        pos, size = imgui.get_window_pos(), imgui.get_window_size()
        self.item_rects[label] = self.windows[label] = (pos.x, pos.y, pos.x + size.x, pos.y + size.y)

    def button(self, label):
        pressed = imgui.button(label)
        self.remember(label)
        return pressed

    def draw(self):
        v = self.viewer
        self.windows = {}
        self.cut, self.cut_rects, self.whole_shown = [], [], None
        imgui.set_next_window_pos(imgui.ImVec2(8, 8), imgui.Cond_.first_use_ever)
        widest = max(MIN_PANEL_WIDTH, v.size[0] - SCENE_MARGIN)
        imgui.set_next_window_size(imgui.ImVec2(min(v.session.prefs["panel_width"], widest), min(v.size[1] - 16, 700)),
                                   imgui.Cond_.first_use_ever)
        imgui.set_next_window_size_constraints(imgui.ImVec2(MIN_PANEL_WIDTH, 100), imgui.ImVec2(widest, 1e5))
        imgui.begin("Sandbox")
        self._remember_window("Sandbox")
        width = round(imgui.get_window_size().x)
        if width != round(v.session.prefs["panel_width"]) and not imgui.is_window_collapsed():
            v.session.prefs["panel_width"] = float(width)   # dragged by its edge: kept (saved with the view preferences)
        imgui.push_item_width(-LABEL_WIDTH)
        if v.session.sim is not None:
            self.transport()
            timeline_open = self.header("Timeline", imgui.TreeNodeFlags_.default_open)
            if timeline_open:
                self.timeline()
            # first after the transport: what a key (G, I, C) changes shows without scrolling
            plots_open = self.header("Plots")
            if plots_open:
                self.plots()
            else:
                self.plotted = {}
            # what the scene's keys drive, set by hand (high up: the keys' effect shows as they act)
            if (v.session.sim.actuators() or v.session.sim.scene.launchers or any("name" in spec for spec in v.session.sim.scene.joints)) \
                    and self.header("Control", imgui.TreeNodeFlags_.default_open):
                self.control()
            tree_open = self.header("Hierarchy")
            if tree_open:
                self.tree.draw()
            compare_open = self.header("Compare")   # ghost runs: app.ghosts
            if compare_open:
                v.ghosts.section(self)
            frames_open = self.header("Frames")  # view from, trails, acceleration terms
            if frames_open:
                frames.panel_section(self)
            if self.header("Scenes", imgui.TreeNodeFlags_.default_open):
                self.scenes()
            if self.header("Physics", imgui.TreeNodeFlags_.default_open):
                self.physics()
            if self.header("Overlays"):
                self.overlay_toggles()
            if self.header("Inspector", imgui.TreeNodeFlags_.default_open):
                self.inspector()
            if self.header("Stats", imgui.TreeNodeFlags_.default_open):
                self.stats()
        else:
            self.scenes()
        # last: a new entry changes nothing above it, open or closed
        messages_open = self.header("Messages")
        if messages_open:
            self.message_log()
        imgui.pop_item_width()
        imgui.end()
        if v.session.message:
            self.toast()
        if v.session.error:
            self.error()
        if v.session.preparation is not None and (v.session.preparation.busy or v.session.pending is not None):
            self.preparing()
        if v.session.prefs["numbers"] and v.session.sim is not None:
            self.numbers()
        if v.session.prefs["overlays"]["inertial"]:
            self.legend()
        if v.session.prefs["overlays"]["names"] and v.session.state is not None:
            self.names()
        if v.session.state is not None:
            v.ghosts.labels()
        if v.show_help:
            self.help()

    def toast(self):
        """The status message over the scene, bottom centre, wrapped in full: it is a window of
        its own, so no panel widget moves when it comes or goes; it stays while the pointer is on it
        (`Session.expire_message`)."""
        v = self.viewer
        left = PANEL_WIDTH + 16
        width = min(TOAST_WIDTH, max(v.size[0] - left - 16, 200))
        imgui.set_next_window_pos(imgui.ImVec2(left + (v.size[0] - left) / 2, v.size[1] - 16), imgui.Cond_.always,
                                  imgui.ImVec2(0.5, 1.0))
        imgui.set_next_window_size(imgui.ImVec2(width, 0), imgui.Cond_.always)
        imgui.set_next_window_bg_alpha(1.0)
        imgui.begin("##message", None, imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.no_move
                    | imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav
                    | imgui.WindowFlags_.no_saved_settings)
        imgui.push_text_wrap_pos(0.0)
        imgui.text(v.session.message)
        imgui.pop_text_wrap_pos()
        v.session.message_hovered = imgui.is_window_hovered()
        self._remember_window("message")
        imgui.end()

    def message_log(self):
        """The logged messages (`Session.messages`), newest first, each with its simulated time."""
        imgui.push_text_wrap_pos(0.0)
        for sim_time, text in reversed(self.viewer.session.messages):
            imgui.text_colored(DIM, f"{sim_time:8.3f} s")
            imgui.same_line()
            imgui.text(text)
        imgui.pop_text_wrap_pos()

    def preparing(self):
        """What is compiled or loaded (app.preparation): a box in the middle of the window while a
        scene waits for its kernels, else a line in the bottom right corner."""
        v, p = self.viewer, self.viewer.session.preparation
        waiting = v.session.sim is None or v.session.pending is not None
        if waiting:
            imgui.set_next_window_pos(imgui.ImVec2(v.size[0] / 2, v.size[1] * 0.4), imgui.Cond_.always,
                                      imgui.ImVec2(0.5, 0.5))
            imgui.set_next_window_size(imgui.ImVec2(min(ERROR_WIDTH, v.size[0] - 16), 0), imgui.Cond_.always)
        else:
            imgui.set_next_window_pos(imgui.ImVec2(v.size[0] - 8, v.size[1] - 8), imgui.Cond_.always,
                                      imgui.ImVec2(1.0, 1.0))
        imgui.begin("Preparing", None, imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_move
                    | imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_title_bar)
        self._remember_window("Preparing")
        imgui.push_text_wrap_pos(0.0)
        if waiting:
            name = Path(str(v.session.pending)).stem if v.session.pending is not None else "the scene"
            if p.compiling:
                imgui.text(f"Preparing {name}: its physics kernels are being compiled.")
                imgui.text("This happens once per machine (and after an update); later starts take a second.")
            else:
                imgui.text(f"Opening {name}")
        elif v.session.interpreted:
            imgui.text(f"{Path(str(v.session.scene_path)).stem} runs as Python (the same bits, slower: "
                       f"{v.session.stats['rtf']:.2f}x real time) until its compiled kernels are loaded")
        imgui.text(p.status())
        imgui.pop_text_wrap_pos()
        if p.compiling:
            imgui.progress_bar(p.fraction, imgui.ImVec2(-1 if waiting else 260, 0))
        if v.session.cancel_label() is not None and self.button(v.session.cancel_label()):
            v.session.cancel_pending()
        imgui.end()

    def error(self):
        """The error in a box at the top middle of the window, where the eye is, until dismissed."""
        v = self.viewer
        imgui.set_next_window_pos(imgui.ImVec2(v.size[0] / 2, v.size[1] * 0.2), imgui.Cond_.always, imgui.ImVec2(0.5, 0.0))
        imgui.set_next_window_size(imgui.ImVec2(min(ERROR_WIDTH, v.size[0] - 16), 0), imgui.Cond_.always)
        imgui.begin("Error", None, imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_move
                    | imgui.WindowFlags_.always_auto_resize)
        self._remember_window("Error")
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(RED, v.session.error)
        imgui.pop_text_wrap_pos()
        if self.button("dismiss"):
            v.session.error = None
        imgui.end()

    def transport(self):
        v = self.viewer
        self.text(f"{v.session.scene_path.stem}   t = {v.session.sim.time:.3f} s")
        if self.button("Play" if v.session.paused else "Pause"):
            v.session.toggle_pause()
        imgui.same_line()
        if self.button("Step"):
            v.session.single_step()
        imgui.same_line()
        if self.button("Reset"):
            v.session.reset()
        imgui.same_line()
        if self.button("Frame"):
            v.view.frame_scene()
        imgui.same_line()
        changed, on = imgui.checkbox("Shadows", v.session.prefs["shadows"])
        self.remember("Shadows")
        self.tooltip("the key light's shadows: what touches what")
        if changed:
            v.session.prefs["shadows"] = on
        changed, scale = imgui.slider_float("time scale", v.session.prefs["time_scale"], 0.01, 4.0, "%.2fx",
                                            imgui.SliderFlags_.logarithmic)
        self.remember("time scale")
        if changed:
            v.session.prefs["time_scale"] = float(np.clip(scale, 0.01, 4.0))

    def timeline(self):
        """|< < > >| (start, one back, one on, end) and Save; the scrubber over the timeline's
        start..end showing the step and time (dragging seeks and pauses); the previous branch's
        steps and whether it plays backwards, on the buttons' line, so that a branch moves nothing
        below it; the keyframes' memory against the budget (the slider sets it). Three lines: the
        plots below stay in view."""
        v = self.viewer
        tl = v.session.timeline
        step = v.session.sim.step_count
        for label, action in (("|<", lambda: v.session.seek(tl.origin)), ("<", v.session.step_back),
                              (">", v.session.step_forward), (">|", lambda: v.session.seek(tl.head))):
            if self.button(label):
                v.session.paused, v.session.backwards = True, False
                action()
            imgui.same_line()
        if self.button("Save (Ctrl+S)"):
            v.session.save_recording()
        # what the run is doing, on the buttons' line: a branch (G, a change in the past) must not add a
        # line that moves the widgets below it, or a click aimed at the Plots header lands on the budget
        said = []       # (on the line, in its tooltip)
        if v.session.backwards:
            said.append(("backwards", "playing backwards, to the timeline's start"))
        if tl.previous is not None:
            said.append((f"branch {tl.previous.start}-{tl.previous.head}", "the previous branch (the future a "
                         f"change in the past cut off): steps {tl.previous.start} to {tl.previous.head}"))
        if said:
            short, long = zip(*said)
            imgui.same_line()
            imgui.text_colored(DIM, ", ".join(short))
            self.remember("run state", ", ".join(short))
            self.tooltip("; ".join(long))
        imgui.set_next_item_width(-1)
        shown = f"step %d of {tl.origin}-{tl.head}   t = {v.session.sim.time:.3f} s"
        inside = imgui.calc_text_size(shown % step).x > imgui.calc_item_width() - 2 * imgui.get_style().frame_padding.x
        changed, wanted = imgui.slider_int("##scrubber", step, tl.origin, max(tl.head, tl.origin + 1), shown)
        self.remember("scrubber", shown % step, cut=inside)   # the slider's box cuts its text itself
        if changed and wanted != step:
            v.session.paused, v.session.backwards = True, False
            v.session.seek(wanted)
        # "###budget": the label shows the memory used, the widget's ID stays the same while it changes
        changed, budget = imgui.slider_float(f"{tl.bytes / 2**20:.1f} MB kept###budget", v.session.prefs["timeline_budget_mb"],
                                             MIN_BUDGET_MB, MAX_BUDGET_MB, "budget %.0f MB", imgui.SliderFlags_.logarithmic)
        self.remember("budget", f"budget {v.session.prefs['timeline_budget_mb']:.0f} MB, {tl.bytes / 2**20:.1f} MB kept")
        self.tooltip(f"{len(tl.keyframes)} keyframes, one every {tl.keyframe_every} steps; past the budget "
                     "the oldest go and the timeline starts later")
        if changed:
            v.session.set_budget(float(np.clip(budget, MIN_BUDGET_MB, MAX_BUDGET_MB)))

    def scenes(self):
        v = self.viewer
        description = getattr(v.session.sim.scene, "description", "") if v.session.sim is not None else ""
        if description:     # what the open scene is about, from its file, above the list it was picked from
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(DIM, description)
            imgui.pop_text_wrap_pos()
        # the open box first, with a hint: below the twenty-odd scenes it is out of view
        entered, self.open_path = imgui.input_text_with_hint("##path", "path of a scene or .rec", self.open_path,
                                                             imgui.InputTextFlags_.enter_returns_true)
        self.remember("path")
        imgui.same_line()
        if (self.button("Open") or entered) and self.open_path.strip():     # Enter opens it too
            v.session.open(self.open_path.strip())
        for i, path in enumerate(scene_files()):
            label = f"{i + 1}  {path.stem}" if i < 9 else f"   {path.stem}"
            clicked, _ = imgui.selectable(label, v.session.scene_path == path)
            lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
            self.item_rects[path.stem] = (lo.x, lo.y, hi.x, hi.y)
            self.whole(path.stem, lo.x + imgui.calc_text_size(label).x)  # a selectable spans the row: its text ends here
            if clicked:
                v.session.open(path)

    def physics(self):
        """Every setting's widget; one that differs from the scene file's gets a `scene` button
        beside it that puts the file's value back (the tooltip says which), so a choice never
        changes a scene unseen. "keep my physics choices" re-applies them to each scene opened."""
        v = self.viewer
        changed, keep = imgui.checkbox("keep my physics choices", v.session.prefs["keep_physics"])
        if changed:
            v.session.prefs["keep_physics"] = keep
        self.remember("keep my physics choices")
        self.tooltip("on: the integrator, gyroscopic term, rotation update, exponential and counteraction\n"
                     "you choose apply to every scene you open; off: each scene opens with its own")
        if self._scene_settings is None or self._scene_settings[0] is not v.session.sim.scene:
            self._scene_settings = (v.session.sim.scene, v.session.sim.scene.settings())   # once per scene, not per frame
        scene = self._scene_settings[1]
        for field in fields(v.session.sim.settings):
            name = field.name
            value = getattr(v.session.sim.settings, name)
            changed, new = setting_widget(name, value)
            if changed:
                v.session.set(name, new)
            shown = history.format_value(new if changed else value)
            inside = name in CHOICES and self.combo_cuts(shown)   # a combo's box cuts a value wider than itself
            self.remember(name, f"{name}: {shown}", cut=inside)
            if name in ("integrator", "gyroscopic"):
                self.tooltip(ORDER_NOTE)   # which integrators keep their order in which mode
            file_value = getattr(scene, name)
            self.item_rects.pop(f"scene##{name}", None)
            if not np.array_equal(value, file_value):
                imgui.same_line()
                if imgui.small_button(f"scene##{name}"):
                    v.session.set(name, file_value)
                self.remember(f"scene##{name}")
                self.tooltip(f"{name} differs from the scene file ({history.format_value(file_value)}): "
                             "click to put the file's value back")

    def control(self):
        """A slider per actuator (its ctrl_range; a drag box where it has none), set through the
        timeline as a "control" input (recorded, replayed, branched like any input); the keys the
        scene binds to it in its tooltip. A button per launcher."""
        v = self.viewer
        controls = v.session.sim.controls
        for name, where, spec in v.session.sim.actuators():
            value = controls[name]
            if "ctrl_range" in spec:
                low, high = spec["ctrl_range"]
                changed, new = imgui.slider_float(f"{name}##control", value, low, high, "%.3g")
                # ImGui's slider is single precision: its end, float32(0.4), lies outside a [−0.4, 0.4] range
                new = float(np.clip(new, low, high))
            else:
                changed, new = imgui.drag_float(f"{name}##control", value, 0.01 * max(1.0, abs(value)), 0.0, 0.0, "%.3g")
            if changed and new != value:
                v.session.give_input("control", name, float(new), mark=f"{name} {new:.3g}")
            self.remember(f"{name}##control", f"{name}: {value:.3g}")
            bound = [f"{k['key']}: {describe(k)}" for k in v.session.keys.keys if k.get("actuator") == name]
            what = f"a {spec['type']} actuator on {'a joint' if where == 'joint' else 'a node'}"
            self.tooltip("\n".join([what] + bound))
        self.joint_sliders()
        self.keyframes()
        for spec in v.session.sim.scene.launchers:
            if self.button(f"fire {spec['name']}"):
                v.session.drive_keys([("launch", (spec["name"],))])
            bound = [k["key"] for k in v.session.keys.keys if k.get("launch") == spec["name"]]
            self.tooltip(f"launch {v.session.sim.names[spec['node']]} from {v.session.sim.names[spec['from']]} at {spec['speed']:g} m/s"
                         + (f" (key {', '.join(bound)})" if bound else ""))

    def keyframes(self):
        """The scene's [[keyframe]]s and those saved here: "save" takes the joints and controls now,
        a keyframe's button applies it (its poses and controls, recorded inputs), "copy" puts its
        [[keyframe]] table on the clipboard, to paste into the scene file."""
        from physics.pipeline import keyframes     # here: it loads the robot readers, needed only to copy a keyframe
        v = self.viewer
        named = any("name" in spec and spec["type"] in ("hinge", "slider") for spec in v.session.sim.scene.joints)
        if not (named or v.session.sim.scene.keyframes):    # a keyframe poses joints
            return
        saved = v.session.saved_keyframes
        shown = list(v.session.sim.scene.keyframes) + saved
        imgui.text("keyframes")
        if self.button("save keyframe"):
            keyframe = keyframes.capture(v.session.sim, f"saved{len(saved) + 1}")
            saved.append(keyframe)
            v.session.notify(f"keyframe {keyframe['name']!r} saved: its button applies it, copy puts its [[keyframe]] table on "
                     "the clipboard")
        self.tooltip("keep the joints' coordinates and the actuators' controls now as a keyframe")
        for keyframe in shown:
            if self.button(f"{keyframe['name']}##keyframe"):
                for kind, args in keyframes.inputs(keyframe):
                    if not v.session.give_input(kind, *args, mark=f"keyframe {keyframe['name']}"):
                        break
            self.tooltip(f"apply keyframe {keyframe['name']!r}: {len(keyframe['joints'])} joints posed, "
                         f"{len(keyframe['controls'])} controls set")
            imgui.same_line()
            if self.button(f"copy##{keyframe['name']}"):
                imgui.set_clipboard_text(keyframes.toml(keyframe))
                v.session.notify(f"keyframe {keyframe['name']!r} copied as a [[keyframe]] table: paste it into the scene file")

    def joint_sliders(self):
        """A slider per named hinge and slider joint, at its coordinate now (within its limits, else
        ±1 m about its coordinate at load, or the turn an unlimited hinge is on: ±π about its load
        plus whole turns, its coordinate counting turns). Paused, it poses the joint (a "pose" input: the bodies beyond it
        turn rigidly, as MuJoCo's Joint panel sets qpos); running, it sets the target of the joint's
        position actuator where it has one, and poses it where it has none."""
        v = self.viewer
        coordinates = v.session.sim.joint_coordinates()
        if not coordinates:
            return
        servos = {spec["name"]: spec["actuator"] for spec in v.session.sim.scene.joints
                  if "name" in spec and spec.get("actuator", {}).get("type") == "position"}
        imgui.text("joints")
        for j, spec in enumerate(v.session.sim.scene.joints):
            name = spec.get("name")
            if name not in coordinates:
                continue
            q = coordinates[name]
            # an unlimited joint's range about its coordinate at load, a hinge's moved by the whole
            # turns it has made, and kept while the slider is dragged, so that a held drag does
            # not chase a range that follows the joint
            span, centre = (np.pi if spec["type"] == "hinge" else 1.0), spec.get("coordinate", 0.0)
            if spec["type"] == "hinge":
                centre = self.slider_turns.get(name, centre + 2 * np.pi * np.round((q - centre) / (2 * np.pi)))
            low = spec["lower"] if spec.get("lower") is not None else centre - span
            high = spec["upper"] if spec.get("upper") is not None else centre + span
            changed, new = imgui.slider_float(f"{name}##joint", q, low, high, "%.3f")
            if imgui.is_item_active() and spec["type"] == "hinge":
                self.slider_turns[name] = centre
            else:
                self.slider_turns.pop(name, None)
            new = float(np.clip(new, low, high))      # (single precision: its ends lie past the limits)
            if changed and new != q:
                if not v.session.paused and name in servos:
                    target = float(np.clip(new * servos[name]["gear"], *servos[name].get("ctrl_range", (-np.inf, np.inf))))
                    v.session.give_input("control", servos[name]["name"], target, mark=f"{name} -> {new:.3g}")
                else:
                    v.session.give_input("pose", name, float(new), mark=f"pose {name} {new:.3g}")
            self.remember(f"{name}##joint", f"{name}: {q:.3f}")
            self.tooltip(f"{spec['type']} coordinate ({'rad' if spec['type'] == 'hinge' else 'm'}): paused, drag to pose "
                         "the joint; running, " + ("its position servo's target" if name in servos else "it poses it too"))

    def plots(self):
        v = self.viewer
        self.plotted = plots.draw(v.session.history, v.session.sim.solver_residual(),
                                  None if v.session.selected is None else str(v.session.sim.names[v.session.selected]), self.axes, self.whole)

    def overlay_toggles(self):
        prefs = self.viewer.session.prefs
        for name in OVERLAYS:
            changed, on = imgui.checkbox(name.replace("_", " "), prefs["overlays"][name])
            self.remember(name)
            if changed:
                prefs["overlays"][name] = on
        changed, scale = imgui.slider_float("arrow scale", prefs["arrow_scale"], 0.01, 5.0, "%.2f",
                                            imgui.SliderFlags_.logarithmic)
        if changed:
            prefs["arrow_scale"] = float(scale)
        v = self.viewer
        changed, on = imgui.checkbox("antialiasing (4x MSAA)", v.view.target.samples > 0)
        self.remember("antialiasing")
        self.tooltip("smooth edges: each pixel sampled 4 times (multisampling). On a software renderer\n"
                     "(Mesa's llvmpipe) it costs about 2.7 times the frame's CPU time, so it starts off there")
        if changed:
            v.view.set_msaa(4 if on else 0)

    def inspector(self):
        v = self.viewer
        i = v.session.selected
        if i is None:
            self.text(color=DIM, text="click a body to inspect it")
            return
        sim, s = v.session.sim, v.session.state
        self.text(f"{sim.names[i]}  ({sim.motion[i]}, parent {sim.names[sim.parent[i]] if sim.parent[i] >= 0 else 'world'})")
        changed, v.view.follow = imgui.checkbox("follow (L)", v.view.follow)
        try:
            local = sim.local()
            rows = [
                ("T", local.transform.translation[i], s["T"][i]),
                ("v", local.velocity[i], s["v"][i]),
                ("a", local.acceleration[i], s["a"][i]),
                ("w", local.omega_vector()[i], s["omega"][i]),
                ("alpha", local.alpha_vector()[i], s["alpha"][i]),
            ]
        except Exception as error:  # noqa: BLE001 - the inspector is display only
            self.text(color=RED, text=f"local state unavailable: {error}")
            return
        self.text(color=DIM, text="      each row: local (parent frame), then world")
        for label, local_value, world_value in rows:
            self.text(f"{label:>5} {_vec(local_value)}")
            self.text(f"      {_vec(world_value)}")
        # R's rows: the local matrix, then the world one (side by side they do not fit the panel)
        R_local = np.asarray(local.transform.rotation[i])
        for row in range(3):
            self.text(f"{'R' if row == 0 else ' ':>5} {_vec(R_local[row])}")
        for row in range(3):
            self.text(f"{'world' if row == 0 else ' ':>5} {_vec(s['R'][i][row])}")
        mass = float(np.asarray(sim.mass)[i])
        self.text(f" mass {mass:.4g} kg")   # I_body's own line: beside the mass it passed 1280x720's panel
        self.text(f" I_body {_vec(np.asarray(sim.inertia_body)[i])}")
        if sim.motion[i] == "dynamic":
            kinetic = sim.body_energies()["kinetic"][i]
            self.text(f" kinetic energy {kinetic:.6g} J")
            self.stability(i, np.asarray(sim.inertia_body)[i], np.asarray(s["R"][i]).T @ np.asarray(s["omega"][i]))

    def stability(self, i, inertia, omega_body):
        """Why it flips (physics.dynamics.stability): the eigenvalues of Euler's Jacobian at the body's ω (by
        dual numbers), the exact time between flips of the torque-free body, and the observed one
        (the intermediate axis's ω changing sign, timed here frame by frame)."""
        from physics.dynamics.stability import flip_period, spin_eigenvalues     # here: scipy, a second to import
        values = spin_eigenvalues(inertia, omega_body)
        self.text(" eig(dw'/dw) " + "  ".join(f"{z.real:+.3g}{z.imag:+.3g}i" if abs(z.imag) > 1e-12 else f"{z.real:+.3g}"
                                             for z in values))
        self.tooltip("the eigenvalues of the Jacobian of Euler's equations at this body's angular velocity,\n"
                     "computed with dual numbers: a positive real one is a perturbation that grows as e^(lambda t).\n"
                     "Spinning about the intermediate principal axis there is one: the body flips over and over")
        middle = int(np.argsort(inertia)[1])
        sign = np.sign(omega_body[middle])
        record = self._flips if getattr(self, "_flips", None) and self._flips["body"] == i else None
        if record is None:
            record = self._flips = {"body": i, "sign": sign, "times": []}
        if sign != 0 and record["sign"] != 0 and sign != record["sign"]:
            record["times"] = (record["times"] + [self.viewer.session.sim.time])[-3:]
        record["sign"] = sign if sign != 0 else record["sign"]
        predicted = flip_period(inertia, omega_body)
        observed = np.diff(record["times"])
        self.text(f" flips every {predicted:.4g} s (predicted)" if np.isfinite(predicted) else " no flips (predicted)")
        if len(observed):
            self.text(f"             {observed[-1]:.4g} s (observed)")
    def stats(self):
        v = self.viewer
        st = v.session.stats
        self.text(f"FPS {st['fps']:.1f}   physics {st['physics_avg_ms']:.2f} ms   "
                  f"render {st['render_ms']:.2f} ms")
        self.text(f"nodes {st['nodes']}   steps {v.session.sim.step_count}   {speed_text(st['rtf'], v.session.paused)}")
        taken, retries = substeps_text(v.session.sim.substep_counts())
        imgui.text(taken)
        self.remember("sub-steps", taken)
        self.tooltip("passes of the stage list taken per one asked for since the scene opened or was reset, "
                     "replays included (a RATTLE sub-step taken again as two halves counts its attempt and its "
                     "halves), and the worst single step's")
        self.text(retries)
        try:
            energy = v.session.sim.energy()
            self.text(f"energy: kinetic {energy['kinetic']:.6g}  potential {energy['potential']:.6g} J")
            joints = [f"{label} {energy[key]:.6g}" for key, label in
                      (("spring", "springs"), ("armature", "armatures"), ("servo", "servos"),
                       ("frame_work", "frames' work")) if key in energy]
            if joints:
                self.text("  joints: " + "  ".join(joints) + " J")
            pinned = self._pinned_joints(v.session.sim)
            if len(pinned):     # (what soft joints give, projected ones hold at ~0)
                gap = v.session.sim.joint_separation()[pinned]
                self.text(f"joints' largest gap {1e3 * float(gap.max()):.3g} mm ({v.session.sim.settings.joint_solve})")
        except Exception:  # noqa: BLE001 - optional display
            pass
        v.timing.draw(self.item_rects, self.whole)  # every stage of a step, every part of a frame (app.stats)

    def _pinned_joints(self, sim):
        """The joints of `sim`'s scene whose two anchors coincide (ball, hinge, fixed: their
        anchors' distance, `Simulation.joint_separation`, is their error; a distance joint's or a
        rope's is its length, a slider's its travel), indices made once a scene. A joint whose two
        bodies another kind of joint also joins is left out: an MJCF body's joints stacked on one
        pair (gymnasium's half_cheetah: rootx and rootz sliders, rooty hinge) move the hinge's
        anchors apart by the sliders' travel."""
        if getattr(self, "_pinned", (None,))[0] is not sim.scene:
            joints = list(getattr(sim.scene, "joints", ()))
            loose = {frozenset((joint.get("a"), joint.get("b"))) for joint in joints
                     if joint.get("type") not in PINNED_JOINTS}
            self._pinned = (sim.scene, np.array([k for k, joint in enumerate(joints)
                                                 if joint.get("type") in PINNED_JOINTS
                                                 and frozenset((joint.get("a"), joint.get("b"))) not in loose],
                                                np.int64))
        return self._pinned[1]

    def numbers(self):
        """The numbers at a glance, top right over the scene (O toggles it), as MuJoCo's simulate
        and the Box2D samples show them: FPS, frame ms, physics ms, real-time factor, time, step."""
        v, st = self.viewer, self.viewer.session.stats
        imgui.set_next_window_pos(imgui.ImVec2(v.size[0] - 8, 8), imgui.Cond_.always, imgui.ImVec2(1.0, 0.0))
        imgui.set_next_window_bg_alpha(1.0)
        imgui.begin("##numbers", None, imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize
                    | imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav
                    | imgui.WindowFlags_.no_saved_settings)
        frame_ms = 1e3 / st["fps"] if st["fps"] > 0 else 0.0
        self.numbers_lines = (f"FPS {st['fps']:6.1f}   frame {frame_ms:6.2f} ms",
                              f"physics {st['physics_avg_ms']:6.2f} ms   "
                              f"{speed_text(st['rtf'], v.session.paused)}",
                              f"t = {v.session.sim.time:.3f} s   step {v.session.sim.step_count}")
        for line in self.numbers_lines:
            imgui.text(line)
        self._remember_window("numbers")
        self.numbers_bottom = imgui.get_window_pos().y + imgui.get_window_size().y
        imgui.end()

    def legend(self):
        v = self.viewer
        top = 8 + (self.numbers_bottom if v.session.prefs["numbers"] and v.session.sim is not None else 0.0)
        imgui.set_next_window_pos(imgui.ImVec2(v.size[0] - 8, top), imgui.Cond_.always, imgui.ImVec2(1.0, 0.0))
        imgui.begin("Legend", None, imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_move)
        for name in ("frame", "euler", "centrifugal", "coriolis"):
            r, g, b = overlays.COLORS[name]
            imgui.text_colored(imgui.ImVec4(r, g, b, 1.0), f"-> {name}")
        self._remember_window("Legend")
        imgui.end()

    def names(self):
        """Node names at their origins: the MAX_NAMES nearest nodes on screen (thousands of
        labels are unreadable, and each is a Python call into ImGui)."""
        v = self.viewer
        s = v.session.state
        vp = v.view.view_projection()
        clip = np.c_[s["T"], np.ones(len(s["T"]))] @ vp.T
        shown = np.flatnonzero((clip[:, 3] > 1e-6) & np.all(np.abs(clip[:, :3]) <= clip[:, 3:], axis=1))
        shown = shown[np.argsort(clip[shown, 3], kind="stable")[:MAX_NAMES]]
        ndc = clip[shown, :2] / clip[shown, 3:]
        w, h = v.size
        draw_list = imgui.get_foreground_draw_list()
        white = imgui.color_convert_float4_to_u32(imgui.ImVec4(1, 1, 1, 1))
        for i, (x, y) in zip(shown, (ndc + 1) / 2 * [w, -h] + [0, h]):
            draw_list.add_text(imgui.ImVec2(float(x) + 4, float(y) - 6), white, str(v.session.sim.names[i]))

    def help(self):
        from app.controls import KEYS, MOUSE_HELP     # here: pyglet.window, which app.controls loads, needs a display
        v = self.viewer
        imgui.set_next_window_pos(imgui.ImVec2(v.size[0] / 2, v.size[1] / 2), imgui.Cond_.always, imgui.ImVec2(0.5, 0.5))
        imgui.begin("Keys (F1)", None, imgui.WindowFlags_.always_auto_resize)
        self._remember_window("Keys (F1)")
        # a table, not padded strings: the labels differ in length and the columns must line up
        if imgui.begin_table("keys", 2, imgui.TableFlags_.sizing_fixed_fit):
            scene_keys = describe_letters(v.session.keys.keys)
            if scene_keys:
                scene_keys = [("", "this scene's keys:")] + scene_keys + [("", "the app's keys:")]
            for label, description in scene_keys + [(label, description) for _, label, _, description in KEYS] + MOUSE_HELP:
                imgui.table_next_row()
                imgui.table_next_column()
                imgui.text(label)
                imgui.table_next_column()
                imgui.text(description)
                self.remember(f"help {label}", f"{label}: {description}")
            imgui.end_table()
        imgui.end()
