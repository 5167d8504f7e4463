"""Trails: the path history of chosen nodes of each run, as world-space line strips.

A `Trails` keeps, per run label, the world positions (K, 3) of K chosen nodes at each sample time
(oldest first, at most `capacity` samples: the oldest go). `segments` turns each node's points into
a strip of consecutive segments for `app.renderer.Renderer.draw_lines` (one draw call for all
runs), each run in its colour. A seek back cuts the samples after the time sought (`truncate`), so
a trail never shows a future that was cut off.
"""
import numpy as np

CAPACITY = 1200      # samples per run: 20 s at one per 60 Hz frame
MIN_SPACING = 1e-3   # m: a sample this close to the last one of every node adds nothing to a trail


class Trails:
    def __init__(self, nodes, capacity=CAPACITY):
        """`nodes` (K,) indices of the nodes followed."""
        self.nodes = np.asarray(nodes, dtype=np.int64)
        self.capacity = int(capacity)
        self.runs = {}  # label -> (times list, points list of (K, 3) arrays)

    def clear(self):
        self.runs = {}

    def add(self, label, time, translation_world):
        """One sample of a run: `translation_world` (N, 3) of every node at `time` (s)."""
        points = np.asarray(translation_world, float)[self.nodes]
        if not np.all(np.isfinite(points)):
            return
        times, samples = self.runs.setdefault(label, ([], []))
        if samples and np.max(np.linalg.norm(points - samples[-1], axis=1)) < MIN_SPACING:
            return
        times.append(float(time))
        samples.append(points)
        if len(times) > self.capacity:
            del times[0], samples[0]

    def truncate(self, time):
        """Forget every sample after `time` (s)."""
        for times, samples in self.runs.values():
            while times and times[-1] > time:
                times.pop()
                samples.pop()

    def remove(self, label):
        self.runs.pop(label, None)

    def points(self, label):
        """(samples, K, 3) world positions of one run's trail, oldest first."""
        samples = self.runs.get(label, ([], []))[1]
        return np.array(samples).reshape(-1, len(self.nodes), 3)

    def segments(self, colors):
        """(segments (M, 2, 3), colours (M, 3)) of the trails of the runs in `colors` (label -> RGB)."""
        parts, tints = [], []
        for label, color in colors.items():
            points = self.points(label)
            if len(points) < 2:
                continue
            strip = np.stack([points[:-1], points[1:]], axis=2).reshape(-1, 2, 3)   # (samples-1)*K segments
            parts.append(strip)
            tints.append(np.broadcast_to(np.asarray(color, float), (len(strip), 3)))
        if not parts:
            return np.zeros((0, 2, 3)), np.zeros((0, 3))
        return np.concatenate(parts), np.concatenate(tints)
