"""The panel's Hierarchy section: the nodes as a tree, and reparenting by drag and drop.

Each row shows a node's name, motion type, whether it sleeps and its shape; clicking a row selects
the node as picking in the 3D view does (the selection is the session's, shared by both). Dragging
a row onto another row, or onto "world", reparents the node while the run goes on, through the
session's `reparent` (a timeline input: scrubbing back undoes it, recordings replay it). Above the
tree: whose energy and angular momentum the Plots section shows (every body's, or one subtree's,
`assemblies`), and what a dropped node keeps: its world motion (the conversion A1 = A2'⁻¹ A3 of
"The Dynamics of a Transform Hierarchy") or its local state (it moves with its new parent).
"""
import numpy as np
from imgui_bundle import imgui

PAYLOAD = "sandbox-node"        # the drag-and-drop payload type: a node index
KEEPS = ("world", "local")
KEEP_LABELS = ("world motion", "local state")
OPEN_BELOW = 200                # scenes with at most this many nodes open the whole tree at first


def describe(sim, i, asleep):
    """A row's text: name, motion type, asleep, shape kind(s)."""
    shape = sim.shapes[i]
    kinds = [] if shape is None else [s["type"] for s in shape] if isinstance(shape, list) else [shape["type"]]
    parts = [str(sim.motion[i])] + (["asleep"] if asleep[i] else []) + kinds
    return f"{sim.names[i]}  ({', '.join(parts)})"


def assemblies(sim, limit=200):
    """Nodes whose subtree holds a dynamic body and more than the node itself (the car with its
    cargo, the tank): what the plots can show the energy and momentum of. At most `limit`, in index
    order (the stress scene has thousands)."""
    parent, dynamic = sim.parent, np.flatnonzero(sim.motion == "dynamic")
    has_children = np.zeros(len(parent), bool)
    has_children[parent[parent >= 0]] = True
    holds = np.zeros(len(parent), bool)
    for i in dynamic:
        holds[i] = True
        a = parent[i]
        while a >= 0 and not holds[a]:
            holds[a] = True
            a = parent[a]
    return np.flatnonzero(holds & has_children)[:limit]


class Tree:
    """Draws the tree inside the panel (`draw`), remembering each row's rectangle in the panel's
    `item_rects` under "tree:<name>" ("tree:world" for the root) for tests and tooltips. A row
    whose text the panel's edge cuts (a narrow panel, a deep node, a long name) shows whole in a
    tooltip (`Panel.whole`), as does the "plots of" box's value when the box cuts it."""

    def __init__(self, panel):
        self.panel = panel
        self.keep = "world"

    def draw(self):
        viewer = self.panel.viewer
        sim = viewer.session.sim
        choices = ["all bodies"] + [sim.names[i] for i in assemblies(sim)]
        current = choices.index(viewer.session.history.subtree) if viewer.session.history.subtree in choices else 0
        inside = self.panel.combo_cuts(choices[current])   # a long node name in the box
        changed, index = imgui.combo("plots of", current, choices)
        self.panel.remember("plots of", f"plots of: {choices[current]}", cut=inside)
        if changed:
            viewer.session.history.set_subtree(None if index == 0 else choices[index])
        self.panel.tooltip("the Plots section's energy and angular momentum: of every body, or of one\n"
                           "node's subtree (the car and its cargo)")
        inside = self.panel.combo_cuts(KEEP_LABELS[KEEPS.index(self.keep)])
        changed, index = imgui.combo("drop keeps", KEEPS.index(self.keep), list(KEEP_LABELS))
        self.panel.remember("drop keeps", f"drop keeps: {KEEP_LABELS[index]}", cut=inside)
        if changed:
            self.keep = KEEPS[index]
        self.panel.tooltip("drag a node onto another (or onto world) to reparent it while running;\n"
                           "world motion: it goes on as it moved; local state: it moves with its new parent")
        children = [[] for _ in sim.names]
        roots = []
        for i, p in enumerate(sim.parent):
            (roots if p < 0 else children[p]).append(i)
        asleep = sim.sleeping()
        dropped = []
        flags = imgui.TreeNodeFlags_.default_open | imgui.TreeNodeFlags_.span_avail_width
        opened = imgui.tree_node_ex("world##tree", flags)
        self.panel.remember("tree:world")
        self._target(None, dropped)
        if opened:
            small = len(sim.names) <= OPEN_BELOW
            for root in roots:
                self._row(root, children, asleep, small, dropped)
            imgui.tree_pop()
        for node, parent in dropped:         # after the tree is drawn: it changes what the tree shows
            viewer.session.reparent(node, parent, keep=self.keep)

    def _row(self, i, children, asleep, small, dropped):
        viewer, sim = self.panel.viewer, self.panel.viewer.session.sim
        flags = imgui.TreeNodeFlags_.open_on_arrow | imgui.TreeNodeFlags_.span_avail_width
        if small:
            flags |= imgui.TreeNodeFlags_.default_open
        if not children[i]:
            flags |= imgui.TreeNodeFlags_.leaf
        if viewer.session.selected == i:
            flags |= imgui.TreeNodeFlags_.selected
        text = describe(sim, i, asleep)
        opened = imgui.tree_node_ex(f"{text}##tree{i}", flags)
        # the row spans the panel: its text ends after the arrow (a font size) and its padding
        self.panel.remember(f"tree:{sim.names[i]}", text, end_x=imgui.get_item_rect_min().x + imgui.get_font_size()
                            + 2 * imgui.get_style().frame_padding.x + imgui.calc_text_size(text).x)
        if imgui.is_item_clicked() and not imgui.is_item_toggled_open():
            viewer.session.selected = i
        if imgui.begin_drag_drop_source():
            imgui.set_drag_drop_payload_py_id(PAYLOAD, i)
            imgui.text(f"{sim.names[i]} -> ...")
            imgui.end_drag_drop_source()
        self._target(i, dropped)
        if opened:
            for child in children[i]:
                self._row(child, children, asleep, small, dropped)
            imgui.tree_pop()

    @staticmethod
    def _target(parent, dropped):
        if imgui.begin_drag_drop_target():
            payload = imgui.accept_drag_drop_payload_py_id(PAYLOAD)
            if payload is not None:
                dropped.append((int(payload.data_id), parent))
            imgui.end_drag_drop_target()
