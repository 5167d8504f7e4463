"""Labels the panel cuts show whole in a tooltip, in every section: the hierarchy tree's rows, the
plots' titles, axis labels and legends, the Stats tables, the timeline's lines. What counts as cut
is read from what ImGui drew, independently of the panel's own bookkeeping: a glyph of this
frame's draw data that reaches past the rectangle it is clipped to is a cut label's, and that
label's item must be one the panel shows whole in a tooltip (`Panel.cut_rects`)."""
import ctypes

import numpy as np
import pytest
from conftest import frames, require_tool, xdotool

from app import settings as store
from app.panel import PANEL_WIDTH
from app.settings import MIN_PANEL_WIDTH

SECTIONS = ("Timeline", "Plots", "Hierarchy", "Compare", "Frames", "Scenes", "Physics", "Overlays", "Inspector",
            "Stats", "Messages")


def glyphs():
    """Every glyph of the frame ImGui drew last: [(quad (x0, y0, x1, y1), clip rect (x0, y0, x1, y1))],
    px, origin top left. A glyph is an axis-aligned quad whose four corners take the font texture's
    two u and two v coordinates (ImFont::RenderText's quads); solid shapes sample one white texel."""
    from imgui_bundle import imgui
    found = []
    index_type = np.uint16 if imgui.INDEX_SIZE == 2 else np.uint32
    vertex_type = np.dtype([("pos", "<f4", 2), ("uv", "<f4", 2), ("col", "<u4")])
    assert vertex_type.itemsize == imgui.VERTEX_SIZE
    for commands in imgui.get_draw_data().cmd_lists:
        n = commands.vtx_buffer.size()
        if n < 4:
            continue
        vertices = np.frombuffer(ctypes.string_at(commands.vtx_buffer.data_address(), n * imgui.VERTEX_SIZE), vertex_type)
        indices = np.frombuffer(ctypes.string_at(commands.idx_buffer.data_address(),
                                                 commands.idx_buffer.size() * imgui.INDEX_SIZE), index_type)
        p, uv = vertices["pos"], vertices["uv"]
        a, b, c, d = (slice(k, n - 3 + k) for k in range(4))
        quad = ((p[a, 1] == p[b, 1]) & (p[b, 0] == p[c, 0]) & (p[c, 1] == p[d, 1]) & (p[d, 0] == p[a, 0])
                & (p[a, 0] != p[b, 0]) & (p[a, 1] != p[c, 1])
                & (uv[a, 0] == uv[d, 0]) & (uv[b, 0] == uv[c, 0]) & (uv[a, 1] == uv[b, 1]) & (uv[c, 1] == uv[d, 1])
                & (uv[a, 0] != uv[b, 0]) & (uv[a, 1] != uv[c, 1]))
        starts = np.flatnonzero(quad)
        for command in commands.cmd_buffer:
            used = indices[command.idx_offset:command.idx_offset + command.elem_count].astype(np.int64) + command.vtx_offset
            for s in starts[np.isin(starts, used)]:
                xs, ys = p[s:s + 4, 0], p[s:s + 4, 1]
                found.append(((float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max())),
                              tuple(float(x) for x in command.clip_rect)))
    return found


def cut_glyphs(window_rect):
    """The glyphs inside `window_rect` (the panel) that reach past their clip rectangle sideways
    (by more than half a pixel) while lying within it top to bottom: cut text. A glyph cut at the
    top or bottom is the panel's scrolling, not a cut label."""
    x0, y0, x1, y1 = window_rect
    cut = []
    for (gx0, gy0, gx1, gy1), (cx0, cy0, cx1, cy1) in glyphs():
        inside = gx0 < x1 and gx1 > x0 and gy0 < y1 and gy1 > y0
        if inside and gy0 >= cy0 - 0.5 and gy1 <= cy1 + 0.5 and (gx1 > cx1 + 0.5 or gx0 < cx0 - 0.5):
            cut.append((gx0, gy0, gx1, gy1))
    return cut


def open_every_section(w):
    """Every collapsing header of the panel opened (ImGui keeps it open afterwards)."""
    from imgui_bundle import imgui
    panel = w.viewer.panel
    header = panel.header

    def opened(label, flags=0):
        if label in SECTIONS:
            imgui.set_next_item_open(True)
        return header(label, flags)

    panel.header = opened
    frames(w, 2)
    panel.header = header


def narrow_window(window, scene, width=MIN_PANEL_WIDTH):
    """The scene at 1280x720 with the panel `width` px wide (a view preference; default its
    narrowest), a body selected and every section open."""
    prefs = store.load()
    prefs["panel_width"] = width
    store.save(prefs)
    w = window(scene, size=(1280, 720))
    v = w.viewer
    v.session.selected = int(v.session.dynamic[0]) if v.session.dynamic.size else 1
    open_every_section(w)
    frames(w, 3)
    assert v.panel.windows["Sandbox"][2] - v.panel.windows["Sandbox"][0] == pytest.approx(width, abs=1)
    return w


def visible_right(v):
    """The panel's visible right edge: the window less its padding and its scrollbar (both ImGui's
    defaults, 8 px and 14 px; every section open, the panel scrolls)."""
    return v.panel.windows["Sandbox"][2] - 8 - 14


@pytest.mark.display
@pytest.mark.parametrize("width", [PANEL_WIDTH, MIN_PANEL_WIDTH])
@pytest.mark.parametrize("scene", ["tank", "car", "iiwa", "pile"])
def test_no_label_is_cut_without_a_tooltip(window, app_config, scene, width):
    """The panel at its first width and at its narrowest, every section open: (1) every drawn glyph
    cut sideways by its clip rectangle (outside the plots, whose tick numbers ImPlot clips at the
    frame) lies on an item that shows its text whole in a tooltip; (2) every tree row whose text
    (the row's left edge, its arrow and padding, then the text in the panel's font) passes the
    visible edge is one; (3) at the narrowest, some tree rows are (the pile's fit) and the Stats
    tables' heading is."""
    from imgui_bundle import imgui
    from app.tree import describe
    w = narrow_window(window, scene, width)
    v = w.viewer
    panel = v.panel
    plots = [rect for _, rect in panel.plotted.values()]
    on = lambda g, r: r[0] <= g[2] and g[0] <= r[2] and r[1] <= g[3] and g[1] <= r[3]  # noqa: E731
    uncovered = [g for g in cut_glyphs(panel.windows["Sandbox"])
                 if not any(on(g, r) for r in panel.cut_rects) and not any(on(g, r) for r in plots)]
    assert uncovered == [], f"glyphs cut with no tooltip: {uncovered}"
    sim, asleep = v.session.sim, v.session.sim.sleeping()
    font = imgui.get_font_size()   # 13 px: ImGui's default font, as the panel draws it
    rows = 0
    for i, name in enumerate(sim.names):
        rect = panel.item_rects.get(f"tree:{name}")
        if rect is None:
            continue
        text = describe(sim, i, asleep)
        end = rect[0] + font + 2 * 4 + 7 * len(text)   # ImGui's default font: 7 px a character, padding 4 px
        if end > visible_right(v) + 1:
            rows += 1
            assert text in panel.cut, f"tree row cut with no tooltip: {text!r}"
    if width == MIN_PANEL_WIDTH:
        if scene != "pile":   # the pile's tree is one flat list of short names ("box_0000  (dynamic, box)"): they fit
            assert rows > 0, "no tree row reaches the narrowest panel's edge: nothing was checked"
        assert any(text.startswith("ms per step") for text in panel.cut)
    w.close()


@pytest.mark.display
def test_a_cut_tree_row_shows_whole_under_the_real_pointer(window, app_config):
    """The tank's tree at the narrowest panel: the pointer (xdotool) resting on a row whose text
    the panel cuts shows the row's whole text in a tooltip (pixels change beside the pointer), and
    it goes when the pointer leaves."""
    from app.tree import describe
    require_tool("xdotool", "xdotool")
    w = narrow_window(window, "tank")
    v = w.viewer
    i = list(v.session.sim.names).index("turret")
    text = describe(v.session.sim, i, v.session.sim.sleeping())
    assert text in v.panel.cut
    wid, panel = str(w._window), v.panel.windows["Sandbox"]
    for _ in range(60):   # the wheel on the panel until the row is in view
        if v.panel.item_rects["tree:turret"][3] <= panel[3] - 40:
            break
        xdotool(w, "mousemove", "--window", wid, str(int((panel[0] + panel[2]) / 2)), str(int(panel[3] - 20)))
        xdotool(w, "click", "5")
    lo_x, lo_y, hi_x, hi_y = v.panel.item_rects["tree:turret"]
    assert hi_y <= panel[3] - 40
    xdotool(w, "mousemove", "--window", wid, "900", "500")
    before = v.read_rgb()
    xdotool(w, "mousemove", "--window", wid, str(int(lo_x + 60)), str(int((lo_y + hi_y) / 2)))
    frames(w, 30)   # ImGui shows a tooltip after the pointer rests a moment
    assert v.panel.whole_shown == text
    after = v.read_rgb()
    near = (slice(int(hi_y), int(hi_y) + 30), slice(int(lo_x + 60), int(lo_x) + 260))
    assert np.any(before[near] != after[near]), "no tooltip drawn below the pointer"
    xdotool(w, "mousemove", "--window", wid, "900", "500")
    frames(w, 2)
    assert v.panel.whole_shown is None
