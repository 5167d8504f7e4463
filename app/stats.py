"""Where a frame's time goes, for the panel's Stats: every stage of a step (physics.core.profile) and
every part of a frame, each with its last HISTORY values as a line.

Frame parts are laps of one clock (`lap`), so they add up to the time from one frame to the next:
  input    from the last frame shown to this one's start: events dispatched, the OS, the loop
  physics  the steps (through the timeline) and the state read back for drawing
  plots    the plotted measurements sampled
  panel    the ImGui frame built (the panel's own Python)
  render   the scene and the UI drawn
  video    a video frame read back and handed to the encoder (app.video), when recording
  swap     the window's buffer swap (with vsync on, the wait for the display is here)
Step stages come from a `physics.core.profile.Recorder` kept on while the viewer lives: its sums over
the frame's steps divided by their number (ms per step), one line per stage of
`physics.pipeline.stages.STAGES` by its own name, and under a stage a line per part it times
("prepare/broad phase"), as they first appear. A frame without a step adds no stage sample, so
the stage lines hold the last steps taken (paused, they stand still).
"""
import time

import numpy as np
from imgui_bundle import imgui

from physics.core import profile
from physics.pipeline.stages import STAGES

HISTORY = 240          # samples per line: 4 s of frames at 60 FPS
SHOWN_MEAN = 30        # the number beside a line is the mean of its last this-many samples
FRAME_PARTS = ("input", "physics", "plots", "panel", "render", "video", "swap")
STEP_ROWS = ("step",) + STAGES      # and each stage's parts, as they appear (`FrameStats.parts_of`)
LINE_SIZE = (150, 18)  # px of one history line
DIM = (0.75, 0.75, 0.75, 1.0)


class Ring:
    """The last HISTORY values of one quantity (float32 for imgui.plot_lines)."""

    def __init__(self):
        self.values = np.zeros(HISTORY, np.float32)
        self.next, self.count = 0, 0

    def push(self, value):
        self.values[self.next] = value
        self.next = (self.next + 1) % HISTORY
        self.count = min(self.count + 1, HISTORY)

    def last(self, n):
        """The last min(n, count) values, oldest first."""
        n = min(n, self.count)
        return self.values[(self.next - n + np.arange(n)) % HISTORY]

    def mean(self, n=SHOWN_MEAN):
        last = self.last(n)
        return float(last.mean()) if last.size else 0.0


class FrameStats:
    """The viewer's frame timing: `begin_frame` at a frame's start, `lap(part)` after each part."""

    def __init__(self):
        self.recorder = profile.Recorder().start()
        self.parts = {name: Ring() for name in FRAME_PARTS}
        self.stages = {name: Ring() for name in STEP_ROWS}
        self.current = dict.fromkeys(FRAME_PARTS, 0)   # ns of the frame being timed
        self.last = None          # the clock at the last lap (ns)
        self.framed = False       # a frame has begun
        self.steps = 0            # steps in the last frame that took some

    def lap(self, part):
        """Add the time since the last lap to `part` of this frame."""
        now = time.perf_counter_ns()
        if self.last is not None:
            self.current[part] += now - self.last
        self.last = now

    def begin_frame(self):
        """Close the last frame (its parts and its steps' stages become samples) and start this
        one, whose "input" is the time since the last frame's last lap."""
        now = time.perf_counter_ns()
        waited = 0 if self.last is None else now - self.last
        self.last = now
        if self.framed:
            for name in FRAME_PARTS:
                self.parts[name].push(self.current[name] / 1e6)
        self.current = dict.fromkeys(FRAME_PARTS, 0)
        self.current["input"], self.framed = waited, True
        totals, counts = self.recorder.take_totals()
        steps = counts.get("step", 0)
        if steps:
            self.steps = steps
            for name in totals:
                if profile.category(name) == "part" and name not in self.stages:
                    self.stages[name] = Ring()
            for name, ring in self.stages.items():
                ring.push(totals.get(name, 0) / steps / 1e6)

    def rows(self):
        """(name, ring) of the step table: the step, then each stage followed by its parts."""
        for name in STEP_ROWS:
            yield name, self.stages[name]
            for part, ring in self.stages.items():
                if part.startswith(name + profile.PART):
                    yield part, ring

    def close(self):
        self.recorder.stop()

    def draw(self, item_rects=None, whole=None):
        """Two tables (step stages in ms per step, frame parts in ms), each row its name, the mean
        of its last SHOWN_MEAN samples and its history line; `item_rects` (the panel's) gets each
        row's line rectangle by label ("stage NAME", "frame NAME"); `whole(text)` (the panel's
        `Panel.whole`) is called after each heading, name and mean, so that one the panel's edge
        cuts shows whole in a tooltip."""
        whole = whole or (lambda text: None)
        for title, rings, prefix, heading in (
                ("step", self.stages, "stage", f"ms per step, {self.steps} a frame (last {HISTORY} that stepped)"),
                ("frame", self.parts, "frame", f"ms per frame, last {HISTORY} frames")):
            imgui.text_colored(imgui.ImVec4(*DIM), heading)
            whole(heading)
            if not imgui.begin_table(f"timing {title}", 3, imgui.TableFlags_.sizing_fixed_fit):
                continue
            for name, ring in (self.rows() if title == "step" else rings.items()):
                imgui.table_next_row()
                imgui.table_next_column()
                label = name if name != title else f"{name} (all)"
                if profile.category(name) == "part":     # indented under its stage
                    label = "  " + name.split(profile.PART, 1)[1]
                imgui.text(label)
                whole(label)
                imgui.table_next_column()
                imgui.text(f"{ring.mean():7.3f}")
                whole(f"{label}: {ring.mean():.3f} ms")
                imgui.table_next_column()
                values = ring.last(HISTORY)
                if not values.size:
                    values = np.zeros(1, np.float32)
                # the top a little over the 95th percentile: one slow frame (a first compile, a
                # scene load) must not flatten the rest
                top = max(1.5 * float(np.percentile(values, 95)), 1e-3)
                imgui.plot_lines(f"##{prefix} {name}", values, scale_min=0.0, scale_max=top,
                                 graph_size=imgui.ImVec2(*LINE_SIZE))
                if item_rects is not None:
                    lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
                    item_rects[f"{prefix} {name}"] = (lo.x, lo.y, hi.x, hi.y)
            imgui.end_table()
