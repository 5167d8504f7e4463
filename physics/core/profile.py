"""Where a step's time goes: named spans timed with `time.perf_counter_ns`, as totals or a trace.

The names are the step's own. "step" is one `Simulation.step` of dt, "substep" one sub-step
("retry" the halves of a RATTLE sub-step taken again, physics.pipeline.retry; its count is the
retries'), and
inside a sub-step each stage of `physics.pipeline.stages.STAGES` is timed under its own name by
the loop that runs them (`stages.substep`): world, wake, prepare, kinematic, dynamic, hold, clock,
events, solve, joints, sleep, check. A stage that times its parts names them "STAGE/PART": the
prepare stage's "prepare/rows" (joint rows before the broad phase, contact rows after the narrow
phase, so two laps), "prepare/broad phase" and "prepare/narrow phase". The free-body sub-step
(`stages.free_substep`) times the stages it fuses as "dynamic" and "events". Stages are disjoint
and lie inside their sub-step, parts inside their stage; what a sub-step spends outside its stages
is the sub-step's time less theirs.

Timing is by laps: `t = mark()` ... `t = lap(name, t)` (the time since `t`). With no recorder on,
both return 0 at once, one call each, and the stage loop checks `recording()` once a sub-step and
runs its stages untimed. Timing reads a clock and changes no arithmetic: a profiled run's states
are bit for bit an unprofiled one's.

A `Recorder` keeps per-name totals since its last `take_totals()` (the viewer's panel takes
them every frame) and, with `trace=True`, every event (up to MAX_EVENTS) for `write_trace`: the
Chrome trace-event format (a JSON object whose "traceEvents" are "X" complete events, ts and dur
in µs), which Perfetto (ui.perfetto.dev) and chrome://tracing open. Recorders are process-wide,
like cProfile's: every simulation stepping while one is on is timed.
"""
import json
import time
from pathlib import Path

import numpy as np

from physics.core.files import write_atomically

SPANS = ("step", "substep", "retry")   # the events the stages nest in (a retry: its halves' sub-steps)
PART = "/"                    # "STAGE/PART": a part of a stage, nested in it
MAX_EVENTS = 2_000_000        # a trace past this keeps its first events (chrome://tracing slows past ~1e6)

_clock = time.perf_counter_ns
_active = []       # the recorders on


def recording():
    """Whether a recorder is on (a loop of stages then times each)."""
    return bool(_active)


def category(name):
    """An event's kind by its name: "span" (step, substep, retry), "part" (STAGE/PART) or "stage"."""
    return "span" if name in SPANS else "part" if PART in name else "stage"


def mark():
    """The clock (ns) while a recorder is on, else 0."""
    return _clock() if _active else 0


def lap(name, start):
    """Record `name` from `start` (a `mark` or the last `lap`) to now -> now; 0 with no recorder on."""
    if not _active:
        return 0
    now = _clock()
    _add(name, start, now)
    return now


def _add(name, start, end):
    for recorder in _active:
        recorder.add(name, start, end)


class Recorder:
    """Stage times while started (`start`/`stop`, or `with Recorder() as r:`): events (name,
    start ns, end ns) in the order they ended; a `trace` recorder keeps them (up to `max_events`)
    for `write_trace`, another keeps them until `take_totals` sums and drops them."""

    def __init__(self, trace=False, max_events=MAX_EVENTS):
        self.trace, self.max_events = trace, max_events
        self.events = []
        self.dropped = 0        # events past max_events
        self.origin = None      # the clock at the first start: the trace's ts 0
        self._taken = 0         # events already summed by take_totals

    def start(self):
        if self not in _active:
            if self.origin is None:
                self.origin = _clock()
            _active.append(self)
        return self

    def stop(self):
        if self in _active:
            _active.remove(self)
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def on(self):
        return self in _active

    def add(self, name, start, end):
        # one append per event: the sums wait for take_totals, out of the step's way
        if len(self.events) < self.max_events:
            self.events.append((name, start, end))
        else:
            self.dropped += 1

    def totals(self, events=None):
        """({name: ns}, {name: count}) over `events` (default all kept)."""
        totals, counts = {}, {}
        for name, start, end in self.events if events is None else events:
            totals[name] = totals.get(name, 0) + (end - start)
            counts[name] = counts.get(name, 0) + 1
        return totals, counts

    def take_totals(self):
        """`totals` of the events since the last call; a recorder that does not trace drops them."""
        if self.trace:
            events, self._taken = self.events[self._taken:], len(self.events)
        else:
            events, self.events = self.events, []
        return self.totals(events)

    def per_step(self):
        """{name: (S,) ns}: each traced step's time in each stage (summed over its sub-steps), and
        in "step" itself; a stage a step did not run counts 0 there."""
        steps, current = [], {}
        for name, start, end in self.events:
            current[name] = current.get(name, 0) + (end - start)
            if name == "step":
                steps.append(current)
                current = {}
        names = {name for step in steps for name in step}
        return {name: np.array([step.get(name, 0) for step in steps], np.int64) for name in names}

    def stages(self):
        """The stage names among the events kept, in the order they first ran."""
        return list(dict.fromkeys(name for name, _, _ in self.events if category(name) == "stage"))

    def trace_events(self, first_step=0):
        """The events as Chrome trace-event dicts: "X" complete events, ts (from `start`) and dur
        in µs, all on one thread; each "step" event carries its step number in args (`first_step`
        + 1 for the first: the step count after it)."""
        origin = self.origin or 0
        out = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "physics"}},
               {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "Simulation.step"}}]
        step = first_step
        for name, start, end in self.events:
            event = {"name": name, "cat": category(name), "ph": "X", "pid": 1, "tid": 1,
                     "ts": (start - origin) / 1e3, "dur": (end - start) / 1e3}
            if name == "step":
                step += 1
                event["args"] = {"step": step}
            out.append(event)
        return out

    def write_trace(self, path, first_step=0, metadata=None):
        """Write the trace as JSON to `path` atomically (a temporary file, then os.replace); the
        run's `metadata` (scene, settings, ...) goes under "otherData"."""
        path = Path(path)
        document = {"traceEvents": self.trace_events(first_step), "displayTimeUnit": "ms",
                    "otherData": {**(metadata or {}), "clock": "time.perf_counter_ns",
                                  "dropped_events": self.dropped, "stages": self.stages()}}
        write_atomically(path, lambda out: json.dump(document, out, separators=(",", ":")), binary=False)
        return path
