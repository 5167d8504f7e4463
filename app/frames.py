"""Frames of reference in the viewer: "view from" a node, and the selected node's acceleration
decomposed by the transport theorem in that frame (arrows and a stacked plot).

View from. The orbit camera (app.camera) orbits in the chosen node's frame: with
M_F = [R_F | x_F] the node's world pose (its scale left out, so lengths on screen stay true), the
view matrix becomes V M_F⁻¹, so the node and whatever is fixed to it stay still on screen and the
world moves past; the sun and the ground stay the world's. The camera's target, eye and picking
rays are in F's coordinates and map to the world through M_F (`to_world`, `direction_to_world`).
Switching frames keeps the picture: the target and the viewing direction are carried over
(`FrameView.choose`). Matrices follow docs/architecture.md (column vectors).

Decomposition. `sim.acceleration_terms(node, frame)` (physics) splits the selected node's world
acceleration into relative, constraint, frame, Euler, centrifugal and Coriolis terms, world-axis
vectors that sum to it. Arrows are drawn at the node with those world vectors (through the
frame's camera they appear in F's axes); the stacked plot shows one component in F's axes
(R_Fᵀ a): each term's band stacked on the previous ones, the world acceleration the line on top.
"""
import numpy as np
from imgui_bundle import imgui, implot

from app import overlays

TERMS = ("relative", "constraint", "frame", "euler", "centrifugal", "coriolis")
TERM_COLORS = {   # the inertial ones as app.overlays colours them
    "relative": (0.2, 0.6, 1.0), "constraint": (0.85, 0.85, 0.85), "frame": (1.0, 0.55, 0.0),
    "euler": (0.55, 0.25, 0.9), "centrifugal": (0.9, 0.1, 0.1), "coriolis": (0.1, 0.65, 0.2),
}
AXES = ("x", "y", "z")
CAPACITY = 1200      # samples of the decomposition kept (20 s at one a frame at 60 Hz)
PLOT_HEIGHT = 170    # px


def rigid_pose(translation_world, rotation_world):
    """[R | x] as a (4, 4) matrix: frame coordinates -> world."""
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation_world, translation_world
    return pose


def inverse_rigid(pose):
    """[R | x]⁻¹ = [Rᵀ | −Rᵀ x]."""
    inverse = np.eye(4)
    inverse[:3, :3] = pose[:3, :3].T
    inverse[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return inverse


class TermsHistory:
    """The decomposition of one node's acceleration in one frame over time: t (n,), terms
    (n, len(TERMS), 3) in the frame's axes (m/s²), world (n, 3), oldest first."""

    def __init__(self, capacity=CAPACITY):
        self.capacity = capacity
        self.clear()

    def clear(self, key=None):
        self.key, self.t, self.terms, self.world = key, [], [], []

    def sample(self, key, time, terms, world):
        """One sample for `key` (node, frame): another key starts afresh; a time earlier than the
        last (a seek back) cuts the samples after it first."""
        if key != self.key:
            self.clear(key)
        self.truncate(time - 1e-12)
        self.t.append(float(time))
        self.terms.append(np.asarray(terms, float))
        self.world.append(np.asarray(world, float))
        if len(self.t) > self.capacity:
            del self.t[0], self.terms[0], self.world[0]

    def truncate(self, time):
        keep = sum(t <= time for t in self.t)
        del self.t[keep:], self.terms[keep:], self.world[keep:]

    def series(self, axis):
        """(t (n,), stacked (len(TERMS) + 1, n): 0 then the running sums of the terms' `axis`
        component, world (n,))."""
        if not self.t:
            return np.zeros(0), np.zeros((len(TERMS) + 1, 0)), np.zeros(0)
        terms = np.array(self.terms)[:, :, axis].T
        stacked = np.vstack([np.zeros(terms.shape[1]), np.cumsum(terms, axis=0)])
        return np.array(self.t), stacked, np.array(self.world)[:, axis]


class FrameView:
    """What the viewer shows from: `node` (an index) or None for the world; whether the selected
    node's acceleration is decomposed (`decompose`), and along which of the frame's axes it is
    plotted (`axis`)."""

    def __init__(self):
        self.node = None
        self.decompose = False
        self.axis = 0
        self.history = TermsHistory()
        self.last_terms = None      # {term: world vector} of the selected node, last sample

    def reset(self):
        self.node, self.last_terms = None, None
        self.history.clear()

    # --- the frame's pose ----------------------------------------------------------------------
    def pose(self, state, node=-1):
        """M_F (4, 4) of `node` (default: the chosen one) in `state` (the viewer's WorldState)."""
        node = self.node if node == -1 else node
        if node is None or state is None:
            return np.eye(4)
        return rigid_pose(state["T"][node], state["R"][node])

    def world_to_frame(self, state):
        return inverse_rigid(self.pose(state))

    def to_world(self, state, point):
        return self.pose(state)[:3, :3] @ np.asarray(point, float) + self.pose(state)[:3, 3]

    def direction_to_world(self, state, direction):
        return self.pose(state)[:3, :3] @ np.asarray(direction, float)

    def to_frame(self, state, points_world):
        """World points (..., 3) in the chosen frame's coordinates."""
        inverse = self.world_to_frame(state)
        return np.asarray(points_world, float) @ inverse[:3, :3].T + inverse[:3, 3]

    def choose(self, camera, state, node):
        """View from `node` (None: the world) from now on, the picture kept: the camera's target
        and viewing direction are carried into the new frame's coordinates."""
        if node == self.node:
            return
        old, new = self.pose(state), self.pose(state, node)
        change = inverse_rigid(new) @ old       # old frame coordinates -> new
        eye_direction = change[:3, :3] @ (camera.eye_world - camera.target_world)
        camera.target_world = change[:3, :3] @ camera.target_world + change[:3, 3]
        d = eye_direction / max(np.linalg.norm(eye_direction), 1e-12)
        camera.pitch = float(np.clip(np.arcsin(np.clip(d[1], -1.0, 1.0)), -1.5, 1.5))
        camera.yaw = float(np.arctan2(d[0], d[2]))
        self.node = node
        self.history.clear()

    def name(self, sim):
        return "world" if self.node is None else str(sim.names[self.node])

    # --- the decomposition -----------------------------------------------------------------------
    def sample(self, sim, state, selected):
        """Decompose the selected node's acceleration in the chosen frame (when asked) and keep it
        for the plot, in the frame's axes. Raises what physics raises (the viewer shows it)."""
        if not self.decompose or selected is None:
            self.last_terms = None
            return
        terms = sim.acceleration_terms(int(selected), frame=self.node)
        self.last_terms = terms
        to_frame = self.pose(state)[:3, :3].T
        self.history.sample((int(selected), self.node), sim.time, [to_frame @ terms[name] for name in TERMS],
                            to_frame @ terms["world"])

    def overlay_lines(self, state, selected, scale, pixels_per_metre):
        """The selected node's terms as arrows at its origin, one colour each (app.overlays)."""
        if self.last_terms is None or selected is None:
            return []
        origin = state["T"][selected]
        return [overlays.concatenate([
            overlays.arrows(origin, self.last_terms[name], scale, TERM_COLORS[name], pixels_per_metre[selected:selected + 1])
            for name in TERMS])]

    def plot(self, node_name, frame_name):
        """The stacked plot of the decomposition along the chosen axis. -> drawn (bool)."""
        t, stacked, world = self.history.series(self.axis)
        title = f"{node_name}: a in {frame_name} ({AXES[self.axis]} axis)##terms"
        flags = implot.Flags_.no_inputs | implot.Flags_.no_menus
        if not implot.begin_plot(title, imgui.ImVec2(-1, PLOT_HEIGHT), flags):
            return False
        implot.setup_axes("t (s)", f"a_{AXES[self.axis]} (m/s^2)", implot.AxisFlags_.auto_fit, implot.AxisFlags_.auto_fit)
        # each band named beside the plot, outside it (in one row the seven names do not fit the panel)
        implot.setup_legend(implot.Location_.east, implot.LegendFlags_.outside)
        for k, name in enumerate(TERMS):
            r, g, b = TERM_COLORS[name]
            spec = implot.Spec(fill_color=imgui.ImVec4(r, g, b, 1.0), fill_alpha=0.45,
                               line_color=imgui.ImVec4(r, g, b, 1.0))
            implot.plot_shaded(name, t, np.ascontiguousarray(stacked[k]), np.ascontiguousarray(stacked[k + 1]), spec)
        implot.plot_line("world", t, np.ascontiguousarray(world),
                         implot.Spec(line_color=imgui.ImVec4(1, 1, 1, 1), line_weight=2.0))
        implot.end_plot()
        return True


def panel_section(panel):
    """The panel's "Frames" section: view from, trails, the decomposition (app.panel calls it)."""
    v = panel.viewer
    sim, view, trails = v.session.sim, v.view.frames, v.view.trails
    options = ["world"] + [str(n) for n in sim.names]
    index = 0 if view.node is None else view.node + 1
    changed, index = imgui.combo("view from", index, options)
    panel.remember("view from")
    if changed:
        v.view.view_from(None if index == 0 else index - 1)
    selected = v.session.selected
    if selected is None:
        panel.text("select a node for its trail and its acceleration terms", imgui.ImVec4(0.75, 0.75, 0.75, 1.0))
    else:
        name = str(sim.names[selected])
        changed, on = imgui.checkbox(f"trail of {name}", selected in trails.nodes)
        panel.remember("trail")
        if changed:
            trails.toggle(selected)
        changed, view.decompose = imgui.checkbox("acceleration terms", view.decompose)
        panel.remember("acceleration terms")
        if changed:
            view.history.clear()
    changed, trails.in_world = imgui.checkbox("trails also in the world", trails.in_world)
    panel.remember("trails in world")
    if trails.nodes and imgui.button("clear trails"):
        trails.clear(keep_nodes=False)
    if view.decompose and selected is not None:
        changed, view.axis = imgui.combo("plot axis", view.axis, [f"{a} of {view.name(sim)}" for a in AXES])
        terms = view.last_terms
        if terms is not None:
            to_frame = view.pose(v.session.state)[:3, :3].T
            for name in TERMS + ("world",):
                r, g, b = TERM_COLORS.get(name, (1.0, 1.0, 1.0))
                value = to_frame @ terms[name]
                panel.text(f"{name:>11} " + " ".join(f"{x:+9.4f}" for x in value), imgui.ImVec4(r, g, b, 1.0))
            panel.text(f"m/s^2 in the axes of {view.name(sim)}", imgui.ImVec4(0.75, 0.75, 0.75, 1.0))
        if view.plot(str(sim.names[selected]), view.name(sim)):
            panel.remember("terms plot")
