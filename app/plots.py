"""The panel's Plots section: the measurements app.history keeps (`History`: rolling time series of
what a physics setting changes, with a marker at every change) and the solver's residual of the
last step, drawn with ImPlot.

`draw(history, residual)` draws them with ImPlot (imgui-bundle); it runs only while the
section is open. Every y axis is set up by `readable_axis`: limits that hold the lines with a
margin, ticks whose labels differ (as many digits as that takes), and for one line that barely
varies beside its size (an energy conserved to 1e-9) the deviation from its first value, that
value named in the axis label ("E - 25.03125 (J)"): "25 25 25" tells nothing. A plot whose
title, axis label or legend ImPlot cuts (a narrow panel, a long node name, a long offset) hands
that text to `whole` (the panel's `Panel.whole`), which shows it whole in a tooltip while the
pointer is on the plot (`cut_texts`). The caller owns the ImPlot context (`implot.create_context()` after
`imgui.create_context()`, made current with its ImGui context).
"""
import numpy as np
from imgui_bundle import imgui, implot

from app.history import CHANNELS, WINDOW

PLOT_HEIGHT = 150  # px
AXIS_MARGIN = 0.08    # of the lines' span, above and below: a line at the limit would hide in the frame
OFFSET_SPAN = 1e-3    # a line varying less than this fraction of its size is plotted as its deviation
TICKS = 4             # about this many tick intervals on a y axis
# The axes follow the data (x: the window, y: auto-fit), so a plot takes no mouse input: the
# wheel then scrolls the panel instead of zooming whichever plot is under the pointer.
INPUT_FLAGS = implot.Flags_.no_inputs | implot.Flags_.no_menus

# Saturated line colours (RGB), distinct from the panel's greys and from each other.
COLORS = {
    "energy": (1.0, 0.55, 0.1), "drift": (0.95, 0.3, 0.85),
    "L": (1.0, 1.0, 1.0), "Lx": (1.0, 0.3, 0.3), "Ly": (0.3, 1.0, 0.3), "Lz": (0.35, 0.55, 1.0),
    "speed": (0.2, 0.9, 0.9), "angular_speed": (1.0, 0.9, 0.2),
    "residual": (0.6, 1.0, 0.2), "marker": (1.0, 1.0, 0.6),
}


def readable_axis(values, offset_allowed=True):
    """A y axis for `values` (any shape, NaN ignored): dict offset (subtracted from what is
    plotted), lo, hi (limits: the finite values' range widened by AXIS_MARGIN of it each side; a
    flat line gets ±10 % of its size, or ±1), ticks (matplotlib's MaxNLocator) and labels (the
    fewest significant digits that tell every tick apart). The offset is the first finite value
    when `offset_allowed` and the values vary by less than OFFSET_SPAN of their size, else 0."""
    from matplotlib.ticker import MaxNLocator      # here: matplotlib is a second to import, for an exported plot

    finite = np.asarray(values, float).ravel()
    finite = finite[np.isfinite(finite)]
    offset, lo, hi = 0.0, 0.0, 1.0
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        size = max(abs(lo), abs(hi))
        if offset_allowed and size > 0 and hi - lo < OFFSET_SPAN * size:
            offset = float(finite[0])
            lo, hi = lo - offset, hi - offset
    span = hi - lo
    if span <= 0:
        pad = 0.1 * abs(hi) if hi != 0 else 1.0
        lo, hi = lo - pad, hi + pad
    else:
        lo, hi = lo - AXIS_MARGIN * span, hi + AXIS_MARGIN * span
    ticks = MaxNLocator(nbins=TICKS, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
    step = ticks[1] - ticks[0]
    ticks = ticks[(ticks >= lo - 1e-9 * step) & (ticks <= hi + 1e-9 * step)]
    ticks = np.where(np.abs(ticks) < 1e-9 * step, 0.0, ticks)   # arange's round-off at zero
    # significant digits down to the step's last digit (2.5: one more), more if two labels agree
    magnitude = np.floor(np.log10(step))
    needed = np.floor(np.log10(max(np.abs(ticks).max(), step))) - magnitude + 1
    needed += not float(step / 10 ** magnitude).is_integer()
    for digits in range(int(needed), 18):
        labels = [f"{tick:.{digits}g}" for tick in ticks]
        if len(set(labels)) == len(labels):
            break
    return {"offset": offset, "lo": lo, "hi": hi, "ticks": ticks, "labels": labels}


def setup_y_axis(values, symbol, unit, offset_allowed=True):
    """Set up ImPlot's y axis for `values` with `readable_axis` (between begin_plot and the first
    plot call) and label it "symbol (unit)", or "symbol - offset (unit)". -> the axis dict."""
    axis = readable_axis(values, offset_allowed)
    name = f"{symbol} - {axis['offset']:.10g}" if axis["offset"] else symbol
    implot.setup_axis(implot.ImAxis_.y1, f"{name} ({unit})" if unit else name)
    implot.setup_axis_limits(implot.ImAxis_.y1, axis["lo"], axis["hi"], implot.Cond_.always)
    implot.setup_axis_ticks(implot.ImAxis_.y1, [float(t) for t in axis["ticks"]], axis["labels"])
    return axis


def _item_rect():
    lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    return lo.x, lo.y, hi.x, hi.y


def _spec(name, weight=2.0):
    r, g, b = COLORS[name]
    return implot.Spec(line_color=imgui.ImVec4(r, g, b, 1.0), line_weight=weight)


def _time_axis(t):
    """The x axis: [0, WINDOW] until the window fills, then the last WINDOW seconds."""
    hi = max(t[-1], t[0] + WINDOW) if len(t) else WINDOW
    implot.setup_axis(implot.ImAxis_.x1, "t (s)")
    implot.setup_axis_limits(implot.ImAxis_.x1, hi - WINDOW, hi, implot.Cond_.always)


CHANGES = "; "      # between the changes one label holds (a value may hold commas: gravity's "(0, -9.81, 0)")


def marker_labels(markers):
    """[(time, text)] -> {time: 'a: x; b: y'}: changes made at the same moment share one label."""
    labels = {}
    for time, text in markers:
        labels[time] = f"{labels[time]}{CHANGES}{text}" if time in labels else text
    return labels


def fitted_label(text, room, width):
    """A marker's label in at most `room` pixels, `width(text)` a text's: the whole text where it fits;
    else its first change and how many more ("integrator: rk4 +2"), cut with "..." where even that
    does not (the panel's font has no "…"). Several changes at one moment make a label wider than the
    plot, which ImPlot would clamp over the top of the data; the whole text is the marker's tooltip
    (`_markers`)."""
    if width(text) <= room:
        return text
    changes = text.split(CHANGES)
    first, more = changes[0], "" if len(changes) == 1 else f" +{len(changes) - 1}"
    while len(first) > 3 and width(first + more) > room:     # the first change cut, its count kept
        first = (first[:-4] if first.endswith("...") else first[:-3]) + "..."
    return first + more


def _markers(history):
    """A vertical line at each setting change, labelled 'setting: value' at the plot's top (as much of
    it as fits before the plot's right edge: `fitted_label`), the whole text in a tooltip while the
    mouse is on its line."""
    if not history.markers:
        return
    limits = implot.get_plot_limits().x
    # (only those in view: ImPlot clamps an annotation into the plot, so an older one sat on its left edge)
    labels = {time: text for time, text in marker_labels(history.markers).items() if limits.min <= time <= limits.max}
    if not labels:
        return
    implot.plot_inf_lines("##changes", np.array(list(labels)), _spec("marker", 1.0))
    top = implot.get_plot_limits().y.max
    right_edge = implot.plot_to_pixels(limits.max, top).x
    r, g, b = COLORS["marker"]
    # (the plots take no input, so ImPlot reports none hovered: the mouse is tested against the plot area)
    corner, size, mouse = implot.get_plot_pos(), implot.get_plot_size(), imgui.get_mouse_pos()
    hovered = corner.x <= mouse.x <= corner.x + size.x and corner.y <= mouse.y <= corner.y + size.y
    mouse_x = mouse.x
    rows = []       # each row's right edge in pixels: a label too close to the last one goes a row lower
    for time, text in sorted(labels.items()):
        at = implot.plot_to_pixels(time, top).x
        left = at + 4
        shown = fitted_label(text, max(right_edge - left - 12, 0.0), lambda t: imgui.calc_text_size(t).x)
        width = imgui.calc_text_size(shown).x + 8
        row = next((k for k, right in enumerate(rows) if left > right), len(rows))
        rows[row:row + 1] = [left + width]
        implot.annotation(time, top, imgui.ImVec4(r, g, b, 0.85), imgui.ImVec2(4, 4 + row * imgui.get_text_line_height_with_spacing()),
                          True, shown.replace("%", "%%"))  # annotation's text is a printf format
        if hovered and abs(mouse_x - at) <= 6:
            imgui.set_tooltip(text.replace(CHANGES, "\n"))


def _frame():
    """The plot about to begin's frame (x0, y0, width), px: it spans the available width."""
    pos = imgui.get_cursor_screen_pos()
    return pos.x, pos.y, imgui.get_content_region_avail().x


def cut_texts(frame, title, y_label, x_label, legend=()):
    """The texts ImPlot cuts in the plot being drawn (call between begin_plot and end_plot; `frame`:
    its frame's (x0, y0, width) before it began, `_frame`): the title wider than the frame less its
    padding, the (vertical) y label, centred on the plot area, reaching past the frame's top or
    bottom, the x label wider than the plot area, the one-row legend (each entry an icon a line
    high, its padding and its name) wider than the frame less its padding. -> [text], empty when
    all show whole."""
    style, pos, area = implot.get_style(), implot.get_plot_pos(), implot.get_plot_size()
    width = lambda text: imgui.calc_text_size(text).x  # noqa: E731
    inner = frame[2] - 2 * style.plot_padding.x
    middle, half = pos.y + area.y / 2, width(y_label) / 2
    cut = [text for text, fits in ((title, width(title) <= inner),
                                   (y_label, frame[1] - 1 <= middle - half and middle + half <= frame[1] + PLOT_HEIGHT + 1),
                                   (x_label, width(x_label) <= area.x)) if not fits]
    if len(legend) > 1:
        row = (sum(width(name) for name in legend) + 2 * style.legend_padding.x + (len(legend) - 1) * style.legend_spacing.x
               + len(legend) * (imgui.get_text_line_height() + style.legend_inner_padding.x))
        if row > inner:
            cut.append("legend: " + ", ".join(legend))
    return cut


def _end_plot(cut, whole):
    """End the plot; hand what it cut (`cut_texts`) to `whole` (one tooltip, a line each)."""
    implot.end_plot()
    if cut and whole is not None:
        whole("\n".join(cut), np.inf)


def _series_plot(title, t, values, names, symbol, unit, axes=None):
    """Begin a plot of the channels `names` and draw their lines. -> what ImPlot cuts in it
    (`cut_texts`), or None when the plot is not shown (then no end_plot)."""
    # one curve: the title names it; several: a legend in one row above the plot
    flags = INPUT_FLAGS | (implot.Flags_.no_legend if len(names) == 1 else 0)
    frame = _frame()
    if not implot.begin_plot(title, imgui.ImVec2(-1, PLOT_HEIGHT), flags):
        return None
    _time_axis(t)
    rows = values[[CHANNELS.index(name) for name in names]]
    axis = setup_y_axis(rows, symbol, unit, offset_allowed=len(names) == 1)
    if axes is not None:
        axes[names[0]] = axis
    implot.setup_legend(implot.Location_.north, implot.LegendFlags_.outside | implot.LegendFlags_.horizontal)
    for name, row in zip(names, rows):
        implot.plot_line(name, t, np.ascontiguousarray(row - axis["offset"]), _spec(name))
    y_label = f"{symbol} - {axis['offset']:.10g}" if axis["offset"] else symbol
    return cut_texts(frame, title.split("##")[0], f"{y_label} ({unit})" if unit else y_label, "t (s)",
                     names if len(names) > 1 else ())


def draw(history, residual, node_name=None, axes=None, whole=None):
    """The Plots section: energy, drift, angular momentum, the selected node's speeds (when one
    is selected) and the solver residual per iteration of the last step (when the scene has a
    solver: contacts or joints; log scale, non-positive values left out).

    -> {plot: (points drawn, screen rectangle (x0, y0, x1, y1) px)} of the plots ImPlot showed
    this frame, any part of them on screen (the tests read it); `axes` (a dict) gets each plot's
    y axis (`readable_axis`); `whole(text, end_x)` gets what ImPlot cuts in each plot (`cut_texts`)."""
    plotted = {}
    t, values = history.series()
    E0 = history.reference_energy
    imgui.text_wrapped(f"last {WINDOW:.0f} s of simulated time; drift from E0 = "
                       + ("-" if E0 is None else f"{E0:.6g} J") + " (reset, scene or setting change)")
    for title, names, symbol, unit in (("energy##plot", ("energy",), "E", "J"),
                                       ("relative energy drift##plot", ("drift",), "(E - E0)/|E0|", "1"),
                                       ("angular momentum (world)##plot", ("L", "Lx", "Ly", "Lz"), "L", "kg m^2/s")):
        cut = _series_plot(title, t, values, names, symbol, unit, axes)
        if cut is not None:
            _markers(history)
            _end_plot(cut, whole)
            plotted[names[0]] = (len(t), _item_rect())
    if node_name is not None:
        cut = _series_plot(f"{node_name}: world speeds##plot", t, values, ("speed", "angular_speed"), "|v|, |w|",
                           "m/s, rad/s", axes)
        if cut is not None:
            _markers(history)
            _end_plot(cut, whole)
            plotted["speed"] = (len(t), _item_rect())
    if residual is None or len(residual) == 0:
        # (no contacts or joints; or joints whose rows RATTLE's projections hold by themselves, with
        # no velocity solve: `physics.constraints.solver.SceneSolver.leave_out_solve`)
        imgui.text_wrapped("no solver residual: the last step had no velocity rows to solve (no contacts, and "
                           "no joints or only joints RATTLE's projections hold by themselves)")
        return plotted
    positive = residual > 0
    if not positive.any():
        imgui.text_wrapped(f"solver residual: 0 in all {len(residual)} iterations of the last step (no active rows)")
        return plotted
    title, frame = "solver residual per iteration (last step)", _frame()
    if implot.begin_plot(title + "##plot", imgui.ImVec2(-1, PLOT_HEIGHT), INPUT_FLAGS | implot.Flags_.no_legend):
        implot.setup_axes("iteration (sweep)", "|r| (m/s, rad/s)", implot.AxisFlags_.auto_fit, implot.AxisFlags_.auto_fit)
        implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
        iterations = np.arange(1, len(residual) + 1, dtype=float)
        implot.plot_line("residual", iterations[positive], np.asarray(residual, float)[positive], _spec("residual"))
        _end_plot(cut_texts(frame, title, "|r| (m/s, rad/s)", "iteration (sweep)"), whole)
        plotted["residual"] = (int(positive.sum()), _item_rect())
    return plotted
