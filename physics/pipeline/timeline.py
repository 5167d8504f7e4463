"""A run's past: keyframe snapshots, every input with its step, every step's state hash; seek and branch.

MuJoCo simulate's history slider, Box2D v3's recordings and Jolt's step-back are the models. The
`Timeline` drives a `Simulation` (the app's viewer and the runner's `--record` step through it):

- **Steps.** "The state at step s" is the state after s whole steps *and* after the inputs given at
  step s (a setting, an impulse: `Input`). `hashes[s]` is its `state_hash()`, taken when the run
  reaches step s and again after each input there. A keyframe (`physics.Snapshot`) of that state is
  kept every `keyframe_every` steps, within a byte budget: past it the oldest keyframes go, and the
  timeline's `origin` (the first step it can return to) moves up with them.
- **Seek.** `seek(s)` restores the last keyframe at or before s and re-simulates to s with the
  recorded inputs: bit for bit the state the run had there (tests/test_timeline.py).
- **Branch.** An input given while the simulation stands before the timeline's `head` (the last step
  reached) starts a new branch: the future after the current step is cut off and kept as
  `previous` (a `Branch`: where it began, its inputs, hashes and keyframes), and the run goes on from
  here with the change. Stepping forward from the past without a new input replays the recorded
  future (the recorded inputs are applied at their steps again).
"""
import math
from dataclasses import dataclass, field

import numpy as np

from physics.pipeline.snapshot import canonical
from physics.core.validation import short_repr

DEFAULT_BUDGET = 256 * 2**20       # bytes of keyframes (the app's panel shows and sets it)
HISTORY_STEPS = 3600               # steps of history the default keyframe spacing aims for (1 min at 60 Hz)
INPUT_KINDS = ("set", "impulse", "reparent", "force", "control", "launch", "pose")
_PUSHES = {"impulse": "apply_impulse", "force": "apply_force"}   # (node, vector_world, point_world or None)


@dataclass(frozen=True)
class Input:
    """Something a user did to the run at `step` (before stepping on from it): `kind` "set" with
    `args` (name, value), "impulse" with (node name, impulse_world (3,), point_world (3,) or None),
    "reparent" with (node name, new parent's name or None for the world, keep "world" or "local"),
    "force" with (node name, force_world (3,), point_world (3,) or None): the force of a mouse
    pull for the step that follows (`Simulation.apply_force`), one input per step while it holds,
    or "control" with (actuator name, value): `Simulation.set_control`, "launch" with (launcher
    name,): `Simulation.launch`, or "pose" with (joint name, coordinate): `Simulation.pose_joint`."""

    step: int
    kind: str
    args: tuple

    def apply(self, sim):
        if self.kind == "set":
            sim.set(*self.args)
        elif self.kind in _PUSHES:
            getattr(sim, _PUSHES[self.kind])(*self.args)
        elif self.kind == "reparent":
            sim.reparent(*self.args)
        elif self.kind == "control":
            sim.set_control(*self.args)
        elif self.kind == "launch":
            return sim.launch(*self.args)
        elif self.kind == "pose":
            sim.pose_joint(*self.args)
        else:
            raise ValueError(f"input kind {self.kind!r}; expected one of {', '.join(INPUT_KINDS)}")

    def to_json(self):
        """A JSON-ready dict that keeps every bit (floats as hex, `physics.pipeline.snapshot.canonical`)."""
        args = list(self.args)
        if self.kind == "set" and isinstance(args[1], np.ndarray):
            args[1] = {"vector": canonical(args[1])}
        elif self.kind in ("control", "pose"):
            args = [args[0], float(args[1])]
        elif self.kind in _PUSHES:
            args = [args[0], canonical(np.asarray(args[1], float)),
                    None if args[2] is None else canonical(np.asarray(args[2], float))]
        return {"step": self.step, "kind": self.kind, "args": canonical(args) if self.kind in ("set", "control", "pose") else args}

    @classmethod
    def from_json(cls, data):
        """Inverse of `to_json`; ValueError saying what is wrong for anything it did not write
        (a reader catches TypeError and OverflowError too: a float.hex beyond the float range)."""
        step, kind, args = int(data["step"]), data["kind"], data["args"]
        arity = {"set": 2, "impulse": 3, "force": 3, "reparent": 3, "control": 2, "launch": 1, "pose": 2}.get(kind) if isinstance(kind, str) else None
        if arity is not None and not (isinstance(args, list) and len(args) == arity):
            raise ValueError(f"{kind} input: got args {short_repr(args)}; expected a list of {arity}")
        args = list(args)

        def hexes(values):
            if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
                raise ValueError(f"{kind} input: got {short_repr(values)}; expected floats as hex strings")
            return np.array([float.fromhex(v) for v in values])

        if kind == "set":
            value = args[1]
            if isinstance(value, dict):
                value = hexes(value["vector"])
            elif isinstance(value, str) and value.startswith(("0x", "-0x", "inf", "-inf", "nan")):
                value = float.fromhex(value)
            args = [args[0], value]
        elif kind in _PUSHES:
            args = [args[0], hexes(args[1]), None if args[2] is None else hexes(args[2])]
        elif kind in ("control", "pose"):
            if not isinstance(args[0], str) or not isinstance(args[1], str):
                what = "actuator" if kind == "control" else "joint"
                raise ValueError(f"{kind} input: got {short_repr(args)}; expected [{what} name, value as a hex string]")
            args = [args[0], float.fromhex(args[1])]
        elif kind == "launch":
            if not isinstance(args[0], str):
                raise ValueError(f"launch input: got {short_repr(args)}; expected [launcher name]")
        elif kind == "reparent":
            if len(args) != 3 or not isinstance(args[0], str) or not (args[1] is None or isinstance(args[1], str)) \
                    or args[2] not in ("world", "local"):
                raise ValueError(f"reparent input: got {args!r}; expected [node, parent or null, \"world\" or \"local\"]")
        else:
            raise ValueError(f"input kind {kind!r}; expected one of {', '.join(INPUT_KINDS)}")
        return cls(step, kind, tuple(args))


@dataclass
class Branch:
    """A future cut off by a change made in the past: it began at `start` (the step the change was
    made at) and ran to `head`; its inputs after `start`, its hashes and keyframes from `start` on
    (keyframes[start]: the state at `start` before the change)."""

    start: int
    head: int
    inputs: list
    hashes: dict
    keyframes: dict

    def replay(self, sim, step):
        """Put `sim` (a simulation of the same scene: a ghost) at `step` of this branch, as it ran."""
        step = int(min(max(step, self.start), self.head))
        sim.restore(self.keyframes[max(k for k in self.keyframes if k <= step)])
        while sim.step_count < step:
            sim.step(1)
            for recorded in self.inputs:
                if recorded.step == sim.step_count:
                    recorded.apply(sim)
        return step


@dataclass
class Timeline:
    """See the module docstring. `sim` is driven only through `step`, `apply`, `seek` from here on."""

    sim: object
    budget: int = DEFAULT_BUDGET
    keyframe_every: int = 0         # 0: chosen from the first snapshot's size (HISTORY_STEPS within budget)
    inputs: list = field(default_factory=list)
    hashes: dict = field(default_factory=dict)      # step -> hex digest of the state at that step
    keyframes: dict = field(default_factory=dict)   # step -> Snapshot, ascending
    previous: Branch | None = None
    # The scene's file text and path when the run did not come from a file that is still there (a
    # recording's timeline): `physics.pipeline.recording.write_recording` saves these instead of re-reading.
    scene_text: str | None = None
    scene_path: str | None = None

    def __post_init__(self):
        first = self.sim.snapshot()
        if self.keyframe_every <= 0:
            self.keyframe_every = max(1, math.ceil(first.nbytes * HISTORY_STEPS / self.budget))
        self.origin = self.head = self.sim.step_count
        self.keyframes[self.origin] = first
        self.hashes[self.origin] = first.hash()
        self.bytes = first.nbytes

    # ------------------------------------------------------------------ where we are
    @property
    def step_count(self):
        return self.sim.step_count

    def inputs_at(self, step):
        return [i for i in self.inputs if i.step == step]

    # ------------------------------------------------------------------ moving
    def _leave(self):
        """Keep a keyframe of the state at the current step, when one is due, before stepping on
        (then every input at this step is in it)."""
        s = self.sim.step_count
        if s % self.keyframe_every == 0 and s not in self.keyframes:
            snap = self.sim.snapshot()
            self.keyframes[s] = snap
            self.bytes += snap.nbytes
            self._keep_budget()

    def set_budget(self, budget):
        """Keep at most `budget` bytes of keyframes from now on (the oldest go at once if over)."""
        self.budget = int(budget)
        self._keep_budget()

    def _keep_budget(self):
        """Drop the oldest keyframes (never the last) until the budget holds; the origin follows."""
        while self.bytes > self.budget and len(self.keyframes) > 1:
            oldest = min(self.keyframes)
            self.bytes -= self.keyframes.pop(oldest).nbytes
            self.origin = min(self.keyframes)
            self.inputs = [i for i in self.inputs if i.step >= self.origin]
            self.hashes = {s: h for s, h in self.hashes.items() if s >= self.origin}

    def step(self, n=1):
        """Step n times, recording each step; from the past this replays the recorded future."""
        for _ in range(n):
            self._leave()
            self.sim.step(1)
            s = self.sim.step_count
            if s > self.head:
                self.head = s
                self.hashes[s] = self.sim.state_hash()
            else:
                for recorded in self.inputs_at(s):
                    recorded.apply(self.sim)

    def apply(self, kind, *args):
        """Give an input now (Input.kind, args); in the past it starts a branch (module docstring).
        The input is validated by applying it first: a refused one changes nothing."""
        s = self.sim.step_count
        if kind == "reparent":          # recorded by name, with what it keeps (the default "world")
            names = self.sim.names
            name = lambda n: names[n] if isinstance(n, (int, np.integer)) and not isinstance(n, bool) else n
            node, parent, *keep = args
            args = (name(node), None if parent is None else name(parent), *(keep or ["world"]))
        entry = Input(s, kind, tuple(args))
        before = self.sim.snapshot() if s < self.head else None
        result = entry.apply(self.sim)  # raises for a refused input, before anything is recorded
        if before is not None:
            self._branch(s, before)
        self.inputs.append(entry)
        self.hashes[s] = self.sim.state_hash()      # the state at s now includes this input
        if s in self.keyframes:                     # and so does its keyframe
            snap = self.sim.snapshot()
            self.bytes += snap.nbytes - self.keyframes[s].nbytes
            self.keyframes[s] = snap
        return result       # what the input says it did (a launch's `physics.dynamics.driving.Launch`), or None

    def _branch(self, s, before):
        """Cut the future after step s off into `previous`; `before` is the state at s as it was."""
        later = lambda step: step > s
        self.previous = Branch(
            s, self.head, [i for i in self.inputs if later(i.step)],
            {k: v for k, v in self.hashes.items() if k >= s},
            {s: before, **{k: v for k, v in self.keyframes.items() if later(k)}})
        for k in [k for k in self.keyframes if later(k)]:
            self.bytes -= self.keyframes.pop(k).nbytes
        self.inputs = [i for i in self.inputs if i.step <= s]
        self.hashes = {k: v for k, v in self.hashes.items() if k <= s}
        self.head = s

    def seek(self, step):
        """Go to `step` (clamped to origin..head): restore the last keyframe at or before it and
        re-simulate with the recorded inputs. Returns the step reached."""
        step = int(min(max(step, self.origin), self.head))
        if step == self.sim.step_count:
            return step
        if not self.sim.step_count < step:      # backwards: from the keyframe at or before it
            start = max(k for k in self.keyframes if k <= step)
            self.sim.restore(self.keyframes[start])
        elif any(self.sim.step_count < k <= step for k in self.keyframes):   # forwards past a keyframe
            self.sim.restore(self.keyframes[max(k for k in self.keyframes if k <= step)])
        if self.sim.step_count == step:
            return step
        while self.sim.step_count < step:
            self.sim.step(1)
            for recorded in self.inputs_at(self.sim.step_count):
                recorded.apply(self.sim)
            self._keep_on_the_way()
        return step

    def _keep_on_the_way(self):
        """A seek's re-simulated state kept as a keyframe where one is due and missing (a reopened
        recording's, saved with fewer) and the budget holds it without dropping any: playing such a
        stretch backwards then re-simulates a few steps a frame, not up to the file's spacing."""
        s = self.sim.step_count
        if s % self.keyframe_every == 0 and s not in self.keyframes:
            snap = self.sim.snapshot()
            if self.bytes + snap.nbytes <= self.budget:
                self.keyframes[s] = snap
                self.bytes += snap.nbytes

