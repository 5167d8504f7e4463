"""Trails: the path history of chosen nodes, drawn in any frame of reference.

At each sample (at most one per SPACING of simulated time) the world pose of every tracked node is
kept: the trail nodes and the frames their trails are drawn in. A trail of node P drawn in frame F
is its path as a rider of F saw it, placed where F is now:

    p̃_k = R_F(t_k)ᵀ (x_P(t_k) − x_F(t_k)),   drawn at   x_F(now) + R_F(now) p̃_k

and in the world frame simply x_P(t_k). So the cargo's trail in the car's frame is a short
scribble riding with the car, its trail in the world the long line the car drove. A frame chosen
after the trail began has poses from then on, and its trail starts there. A seek back cuts the
samples after the time sought (`truncate`), as the plots do.
"""
import numpy as np

CAPACITY = 1200          # samples per trail: 20 s at SPACING
SPACING = 1.0 / 60.0     # s of simulated time between samples
COLORS = ((1.0, 0.95, 0.2), (0.2, 1.0, 1.0), (1.0, 0.4, 1.0), (0.6, 1.0, 0.3))   # in the chosen frame
WORLD_SHADE = 0.45       # the same colour darker: the trail in the world frame


class Trails:
    def __init__(self, capacity=CAPACITY, spacing=SPACING):
        self.capacity, self.spacing = capacity, spacing
        self.nodes = []          # trail nodes (indices), in the order chosen
        self.in_world = True     # also draw each trail in the world frame (beside the chosen frame's)
        self.clear()

    def clear(self, keep_nodes=True):
        """Forget every sample (a reset, a new scene); `keep_nodes` False forgets the trails too."""
        self.t, self.poses = [], []      # poses: one dict node -> (x (3,), R (3, 3)) per sample
        if not keep_nodes:
            self.nodes = []

    def toggle(self, node):
        """Start or stop the trail of `node`."""
        if node in self.nodes:
            self.nodes.remove(node)
        else:
            self.nodes.append(int(node))

    def sample(self, state, time, frames=()):
        """Keep the world poses (from the viewer's WorldState) of the trail nodes and of `frames`
        (node indices, None = the world) at `time`, unless less than `spacing` passed. -> bool."""
        if not self.nodes:
            return False
        if self.t and time < self.t[-1]:
            self.truncate(time)
        if self.t and time < self.t[-1] + self.spacing * (1 - 1e-9):
            return False
        tracked = set(self.nodes) | {f for f in frames if f is not None}
        self.t.append(float(time))
        self.poses.append({n: (state["T"][n].copy(), state["R"][n].copy()) for n in tracked})
        if len(self.t) > self.capacity:
            del self.t[0], self.poses[0]
        return True

    def truncate(self, time):
        keep = sum(t <= time for t in self.t)
        del self.t[keep:], self.poses[keep:]

    def path(self, node, frame, state):
        """(K, 3) world points of `node`'s trail in `frame` (None: the world), placed where the
        frame is in `state` (module docstring); samples without both poses are left out."""
        rows = [pose for pose in self.poses if node in pose and (frame is None or frame in pose)]
        if not rows:
            return np.zeros((0, 3))
        x = np.array([pose[node][0] for pose in rows])
        if frame is None:
            return x
        x_frame = np.array([pose[frame][0] for pose in rows])
        R_frame = np.array([pose[frame][1] for pose in rows])
        relative = np.einsum("kji,kj->ki", R_frame, x - x_frame)       # R_F(t_k)ᵀ (x − x_F)
        return state["T"][frame] + relative @ state["R"][frame].T

    def overlay_lines(self, state, frame):
        """The trails as line lists (app.renderer.draw_lines): each node's in `frame` in its own
        colour and, if `in_world` and the frame is not the world, in the world in a darker shade."""
        lines = []
        for k, node in enumerate(self.nodes):
            color = np.array(COLORS[k % len(COLORS)])
            frames = [(frame, color)] + ([(None, WORLD_SHADE * color)] if self.in_world and frame is not None else [])
            for f, c in frames:
                points = self.path(node, f, state)
                if len(points) >= 2:
                    segments = np.stack([points[:-1], points[1:]], axis=1)
                    lines.append((segments, np.broadcast_to(c, (len(segments), 3))))
        return lines
