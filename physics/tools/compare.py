"""Variants in lockstep: one scene run under several settings side by side, and how far apart they go.

A `Comparison` holds the main run (the scene's own settings, or a snapshot's), up to MAX_VARIANTS
variants that differ in any settings, and optionally a reference (ground truth: the same scene with
a 4th-order integrator at a small step). Each is its own `Simulation`, started fresh from the scene
(then `restore(snapshot)` when one is given, then its settings): a variant shows exactly what a
fresh run with its settings shows, never a copy of the main run's arrays.

Lockstep in simulated time: the comparison's clock advances in the main run's steps; at each sample
time t every run is stepped to its last step ending at or before t (to a millionth of its step, the
round-off of summed step lengths). A run whose dt divides the main run's is sampled exactly at t; one
whose dt does not is sampled up to one of its own steps earlier (its `time` readout says when).

Readouts per run, against the base run (the reference if there is one, else `main`):
    max_position_error     = max_i |T_i - T_base,i|                 (m, world translations of every node)
    max_rotation_error     = max_i angle(R_base,iᵀ R_i)             (rad, world rotations), with
                             angle(M) = atan2(|vee(M - Mᵀ)| / 2, (tr M - 1) / 2)  (accurate near 0 and π)
    energy_drift           = (E(t) - E(0)) / |E(0)|,  E = kinetic + potential of the run's own settings
    angular_momentum_drift = |L(t) - L(0)| / |L(0)|,  L world, about the world origin
where 0 is the run's own start. A drift whose start value is 0 has no relative figure: NaN. A run that
diverges (physics.pipeline.stages.DivergenceError, or a non-finite state) stops where it did: its readouts are NaN from
then on, the others run on (`stopped` says which run stopped, when and why).

The main run can be someone else's: `Comparison(scene, main=sim)` starts every run from `sim`'s
current state and reads `sim` as the main run without ever stepping it (the app's timeline steps
it). `save()` / `restore()` put every run the comparison steps back to an earlier sample (the app's
timeline seeks), `promote(label)` makes a variant the main run, `add_simulation` adopts a run set up
by the caller (a timeline branch replayed: `physics.pipeline.timeline.Branch.replay`) with recorded inputs
it applies when it reaches their steps.

A variant with `engine=mujoco` (`integrator` then MuJoCo's: rk4 by default, implicitfast,
implicit, euler; `dt`, `substeps`, `gravity` may be given, no other setting) is the same scene and
start state stepped by MuJoCo (`physics.tools.mujoco_peer.MujocoSimulation`, exported by
`physics.io.mjcf_export.to_mjcf`, which refuses a scene MJCF cannot express): the same readouts, the
same poses to draw; it cannot be promoted (the main run is ours).

`python -m physics compare` (`command`) writes the readouts of every sample as `compare.csv` and plots
them as `compare.png`.
"""
import csv
import math
import os
import shutil
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from physics.tools import options
from physics.io.scene import Scene, load_scene
from physics.core.settings import SettingError, Settings
from physics.pipeline.timeline import INPUT_KINDS, Input

MAIN, REFERENCE = "main", "reference"
MAX_VARIANTS = 4
REFERENCE_INTEGRATOR = "lie-midpoint-4"
REFERENCE_DT_DIVISOR = 16        # a reference with no settings given: lie-midpoint-4 at the main run's dt / 16
STEP_TOLERANCE = 1e-6            # of a step: a step ending this little after a sample time counts as ending at it
COLUMNS = ("variant", "time", "max_position_error", "max_rotation_error", "energy_drift", "angular_momentum_drift")
READOUTS = COLUMNS[1:]


def split_pairs(text):
    """'a=1,gravity=[0,-9.81,0],b=2' -> ['a=1', 'gravity=[0,-9.81,0]', 'b=2']: commas inside brackets stay."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return items + [text[start:]]


def _number(key, text):
    """A float from a decimal or a fraction ('1/960', exactly rounded: float(Fraction))."""
    try:
        return float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError, OverflowError):
        raise SettingError(key, text, "expected a number or a fraction such as 1/960") from None


def setting_value(key, text):
    """The value of one `key=text` pair in the type the setting holds (Settings' default tells)."""
    kind = getattr(Settings(), key, None) if key in Settings.names() else None
    if isinstance(kind, bool):
        return {"true": True, "on": True, "false": False, "off": False}.get(text, text)
    if isinstance(kind, int):
        try:
            return int(text)
        except ValueError:
            raise SettingError(key, text, "expected an integer") from None
    if isinstance(kind, float):
        return _number(key, text)
    if isinstance(kind, np.ndarray):          # gravity: [x,y,z] or x;y;z
        parts = text.strip().removeprefix("[").removesuffix("]").replace(";", ",").split(",")
        return [_number(key, part) for part in parts]
    return text


ENGINES = ("ours", "mujoco")


def check_settings(values):
    """Validate a variant's settings (a mapping; nothing changes): our keys by `Settings`, and
    `engine` (ENGINES). With engine=mujoco, `integrator` is MuJoCo's (physics.io.mjcf_export.
    MUJOCO_INTEGRATORS) and only the keys MuJoCo takes (physics.tools.mujoco_peer.ENGINE_KEYS: dt,
    substeps, gravity) may be given; MuJoCo must be installed (MujocoMissing says how)."""
    values = dict(values)
    engine = values.pop("engine", "ours")
    if engine not in ENGINES:
        raise SettingError("engine", engine, f"expected one of {', '.join(ENGINES)}")
    if engine == "mujoco":
        from physics.tools import mujoco_peer       # here: MuJoCo is an optional extra
        mujoco_peer.check_integrator(values.pop("integrator", mujoco_peer.DEFAULT_INTEGRATOR))
        for key, value in values.items():
            if key not in mujoco_peer.ENGINE_KEYS:
                raise SettingError(key, value, f"MuJoCo's run takes only {', '.join(mujoco_peer.ENGINE_KEYS)} "
                                               "and integrator (the rest are our engine's)")
        mujoco_peer.require()
    Settings().update(values)


def parse_settings(text):
    """'key=value,key=value' -> {key: value}, validated (`check_settings`; all pairs or none).

    Keys and values are the scene's [world] ones: booleans true/false/on/off, numbers as decimals or
    fractions (dt=1/960), gravity as [x,y,z] (or x;y;z); and `engine=ours|mujoco` (with mujoco,
    `integrator` is MuJoCo's: rk4, implicitfast, implicit, euler). ValueError (a SettingError for a
    key or value) naming the pair that is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected key=value pairs separated by commas, got nothing")
    values = {}
    for item in split_pairs(text):
        key, equals, value = (part.strip() for part in item.partition("="))
        if not equals or not key:
            raise ValueError(f"expected key=value, got {item.strip()!r}")
        if key in values:
            raise SettingError(key, value, "given twice")
        values[key] = setting_value(key, value)     # engine and integrator names stay text
    check_settings(values)
    return values


class _Run:
    """One simulation of the comparison, its start values and whether it stopped. `owned` False:
    its owner steps it (an external main run); `inputs`: recorded inputs (physics.pipeline.timeline.Input)
    applied when the run reaches their steps, as a timeline replays them."""

    def __init__(self, sim, owned=True, inputs=()):
        self.sim, self.stopped, self.owned = sim, None, owned
        self.inputs = sorted(inputs, key=lambda entry: entry.step)
        self.energy0 = _energy(sim)
        self.momentum0 = sim.momentum()["angular"].copy()

    def step_to(self, target):
        """Step to the last step ending at or before `target` (STEP_TOLERANCE); stop on divergence."""
        if self.stopped is not None or not self.owned:
            return
        sim = self.sim
        steps = math.floor((target - sim.time) / sim.settings.dt + STEP_TOLERANCE)
        if steps <= 0:
            return
        from physics.pipeline.stages import DivergenceError  # here, not at the top: the parser loads no kernel

        try:
            end = sim.step_count + steps
            while sim.step_count < end:      # in pieces ending at each recorded input's step
                pending = [entry.step for entry in self.inputs if sim.step_count < entry.step <= end]
                sim.step(min(pending, default=end) - sim.step_count)
                for entry in self.inputs:
                    if entry.step == sim.step_count:
                        entry.apply(sim)
        except DivergenceError as error:
            self.stopped = str(error)
            return
        if getattr(sim, "halted", None) is not None:       # a peer engine's run (physics.tools.mujoco_peer)
            self.stopped = sim.halted
            return
        bad = sim.first_non_finite()
        if bad is not None:
            self.stopped = f"node {bad!r} went non-finite by t = {sim.time:.6g} s"


def _energy(sim):
    from physics.pipeline.stages import energy_balance     # (here: the command line starts without numba)
    return energy_balance(sim.energy())


def _relative(change, start):
    return change / start if start != 0.0 else math.nan


def rotation_angles(a, b):
    """(N,) angle of a_iᵀ b_i (rad) for rotations a, b (N, 3, 3): atan2(|vee(M - Mᵀ)| / 2, (tr M - 1) / 2)."""
    m = np.einsum("nji,njk->nik", a, b)
    sine = 0.5 * np.linalg.norm(np.stack([m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0],
                                          m[:, 1, 0] - m[:, 0, 1]], axis=-1), axis=-1)
    cosine = 0.5 * (np.trace(m, axis1=1, axis2=2) - 1.0)
    return np.arctan2(sine, cosine)


class Comparison:
    """The main run, its variants and an optional reference, stepped in lockstep (module docstring).

    `scene` is a path or a loaded `physics.io.scene.Scene`; `snapshot` (a `physics.Snapshot` of that
    scene) is the state every run starts from, the scene's initial state if None. `main`: a
    `Simulation` of the scene that its owner steps; the comparison reads it as the main run and
    starts every other run from its current state (`snapshot` is then its snapshot)."""

    def __init__(self, scene, snapshot=None, main=None):
        self.scene = scene if isinstance(scene, Scene) else load_scene(Path(scene))
        if main is not None:
            snapshot = main.snapshot()
            self._runs = {MAIN: _Run(main, owned=False)}
        self.snapshot = snapshot
        if main is None:
            self._runs = {MAIN: self._start({})}
        self.time = self._runs[MAIN].sim.time          # the last sample time (s)

    def _start(self, settings):
        from physics.pipeline.simulation import Simulation  # here, not at the top: the parser loads no kernel

        settings = dict(settings)
        engine, integrator = settings.pop("engine", "ours"), None
        if engine == "mujoco":
            from physics.tools.mujoco_peer import DEFAULT_INTEGRATOR      # (an optional extra)
            integrator = settings.pop("integrator", DEFAULT_INTEGRATOR)
        sim = Simulation(self.scene)
        if self.snapshot is not None:
            sim.restore(self.snapshot)
        # After restore (it puts back the snapshot's settings); a value the run already has is not a
        # change (`set` would wake a snapshot's sleeping bodies: a variant equal to main would differ).
        for key, value in settings.items():
            if not np.array_equal(getattr(sim.settings, key), value):
                sim.set(key, value)
        if engine == "mujoco":      # the same scene and state, stepped by MuJoCo (physics.tools.mujoco_peer)
            from physics.tools.mujoco_peer import MujocoSimulation        # (an optional extra)
            return _Run(MujocoSimulation.from_simulation(sim, integrator))
        return _Run(sim)

    @property
    def labels(self):
        """Run labels: `main`, the variants in the order added, then `reference` if there is one."""
        return [label for label in self._runs if label != REFERENCE] + ([REFERENCE] if REFERENCE in self._runs else [])

    @property
    def variants(self):
        return [label for label in self._runs if label not in (MAIN, REFERENCE)]

    @property
    def base(self):
        """The run the divergences are measured from: the reference if there is one, else main."""
        return REFERENCE if REFERENCE in self._runs else MAIN

    def simulation(self, label):
        """The `Simulation` of one run (read it; stepping it by hand breaks the lockstep)."""
        return self._run(label).sim

    def add_variant(self, label, settings):
        """Add a run with `settings` (a mapping, or 'key=value,...' text: `parse_settings`) over
        the main run's start; it is brought to the comparison's time at once. ValueError for a bad
        label or setting, naming the variant."""
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"variant label: got {label!r}; expected a non-empty name")
        if label in (MAIN, REFERENCE):
            raise ValueError(f"variant {label!r}: the label {label!r} is the {label} run's")
        if label in self._runs:
            raise ValueError(f"variant {label!r}: given twice")
        if len(self.variants) >= MAX_VARIANTS:
            raise ValueError(f"variant {label!r}: at most {MAX_VARIANTS} variants")
        self._add(label, settings)

    def add_reference(self, settings=None):
        """Add (or replace) the reference run; settings None: REFERENCE_INTEGRATOR at the main
        run's dt / REFERENCE_DT_DIVISOR, joints projected (ground truth for the main run and the variants)."""
        if settings is None:
            # (projected joints: soft ones would step the reference by semi-implicit Euler)
            settings = {"integrator": REFERENCE_INTEGRATOR, "joint_solve": "projected",
                        "dt": self._runs[MAIN].sim.settings.dt / REFERENCE_DT_DIVISOR}
        self._add(REFERENCE, settings)

    def _add(self, label, settings):
        try:
            values = parse_settings(settings) if isinstance(settings, str) else dict(settings)
            check_settings(values)
            run = self._start(values)
        except ValueError as error:
            raise ValueError(f"variant {label!r}: {error}") from None
        self._runs[label] = run
        run.step_to(self.time)

    def add_simulation(self, label, sim, inputs=()):
        """Adopt `sim` (a Simulation of this scene the caller set up at the comparison's time, e.g.
        a timeline branch replayed to the main run's step) as a variant stepped in lockstep; the
        recorded `inputs` (physics.pipeline.timeline.Input) are applied when it reaches their steps."""
        if label in (MAIN, REFERENCE) or label in self._runs:
            raise ValueError(f"variant {label!r}: the label is taken")
        if len(self.variants) >= MAX_VARIANTS:
            raise ValueError(f"variant {label!r}: at most {MAX_VARIANTS} variants")
        self._runs[label] = _Run(sim, inputs=inputs)

    def promote(self, label):
        """Make the variant `label` the main run (its simulation, settings and start values) and
        drop the former main run; the comparison steps the new main run if it stepped the former
        one. Returns its `Simulation`."""
        if label in (MAIN, REFERENCE):
            raise ValueError(f"promote: {label!r} is not a variant")
        run = self._run(label)
        if getattr(run.sim, "engine", "ours") != "ours":
            raise ValueError(f"promote: {label!r} is a {run.sim.engine} run; only our own runs can be the main run")
        run.owned = self._runs[MAIN].owned
        del self._runs[label]
        self._runs = {MAIN: run, **{k: v for k, v in self._runs.items() if k != MAIN}}
        return run.sim

    def save(self):
        """The state of every run the comparison steps, and its time: `restore` goes back to it."""
        return {"time": self.time, "runs": {label: (run.sim.snapshot(), run.stopped)
                                            for label, run in self._runs.items() if run.owned}}

    def restore(self, saved):
        """Back to a `save()`: every run in it restored (bit for bit the run it was, with the start
        values it had); returns the labels of the runs stepped here that the save lacks (added
        after it: they stay where they are)."""
        for label, (snapshot, stopped) in saved["runs"].items():
            if label in self._runs:
                self._runs[label].sim.restore(snapshot)
                self._runs[label].stopped = stopped
        self.time = saved["time"]
        return [label for label, run in self._runs.items() if run.owned and label not in saved["runs"]]

    def velocity_difference(self, a, b, nodes):
        """(len(nodes),) |v_a − v_b| (m/s) of the world velocities of `nodes` in runs a and b
        (NaN where either run stopped)."""
        runs = self._run(a), self._run(b)
        if any(run.stopped is not None for run in runs):
            return np.full(len(nodes), math.nan)
        velocity = [run.sim.world().velocity[nodes] for run in runs]
        return np.linalg.norm(velocity[0] - velocity[1], axis=1)

    def remove(self, label):
        """Drop a variant or the reference (the main run stays)."""
        if label == MAIN:
            raise ValueError("remove: the main run cannot be removed")
        self._run(label)
        del self._runs[label]

    def _run(self, label):
        if label not in self._runs:
            raise KeyError(f"no run {label!r}; runs: {', '.join(self.labels)}")
        return self._runs[label]

    def step_to(self, time):
        """Bring every run to its last step ending at or before `time` (s); an earlier time than
        the comparison's is no step (runs never go back)."""
        self.time = max(self.time, float(time))
        with np.errstate(all="ignore"):        # a diverging variant is reported by `stopped`, not warned about
            for run in self._runs.values():
                run.step_to(self.time)

    def advance(self, steps=1):
        """Advance the comparison by `steps` of the main run's dt (every run follows in lockstep)."""
        self.step_to(self.time + steps * self._runs[MAIN].sim.settings.dt)

    def apply_input(self, kind, *args):
        """Give every run the comparison steps, and that has not stopped, the same input now: a
        user's push (a `physics.pipeline.timeline.Input` kind other than "set", with its args), so that a
        mouse pull or a flick reaches the variants and the reference as it reaches the main run.
        An external main run (`main=`) gets its inputs from its owner (its timeline), not here.
        Settings are not inputs here (a variant is its settings: `add_variant`). The input is kept
        with each run's recorded inputs, so a run restored to before it (`restore`) takes it again
        at its step. The first run takes it first: a refused input (ValueError) changes no run."""
        if kind == "set" or kind not in INPUT_KINDS:
            raise ValueError(f"apply_input: kind {kind!r}; expected one of "
                             f"{', '.join(k for k in INPUT_KINDS if k != 'set')} (a variant's settings are its own)")
        for label in self.labels:
            run = self._runs[label]
            if run.owned and run.stopped is None:
                entry = Input(run.sim.step_count, kind, tuple(args))
                entry.apply(run.sim)
                run.inputs.append(entry)

    @property
    def stopped(self):
        """dict label -> why and when the run stopped, for the runs that did."""
        return {label: run.stopped for label, run in self._runs.items() if run.stopped is not None}

    def poses(self, label):
        """(translation (N, 3), rotation (N, 3, 3), scale (N,)) world poses of one run (copies)."""
        return self._run(label).sim.world_poses()

    def readouts(self):
        """dict label -> dict of READOUTS (module docstring) at the current sample."""
        base = self._runs[self.base]
        with np.errstate(all="ignore"):
            base_t, base_r, _ = base.sim.world_poses()
            return {label: self._readout(self._runs[label], base, base_t, base_r) for label in self.labels}

    @staticmethod
    def _readout(run, base, base_t, base_r):
        sim = run.sim
        out = dict.fromkeys(READOUTS, math.nan) | {"time": sim.time}
        if run.stopped is not None:
            return out
        momentum = sim.momentum()["angular"]
        out["energy_drift"] = _relative(_energy(sim) - run.energy0, abs(run.energy0))
        out["angular_momentum_drift"] = _relative(float(np.linalg.norm(momentum - run.momentum0)),
                                                  float(np.linalg.norm(run.momentum0)))
        if base.stopped is None:
            translation, rotation, _ = sim.world_poses()
            out["max_position_error"] = float(np.max(np.linalg.norm(translation - base_t, axis=1), initial=0.0))
            out["max_rotation_error"] = float(np.max(rotation_angles(base_r, rotation), initial=0.0))
        return out


def loose_children(sim):
    """(indices, nearest): the dynamic nodes below another dynamic node that counteraction acts on
    (the car's cargo), riding a parent whose impulses they may keep out of, and every node's nearest
    dynamic ancestor (N,) (−1: none). A body in a joint is not one: its motion is its own whatever
    the setting (`physics.model.model.Model.own_motion`: a robot's links)."""
    model = sim.model
    loose = np.zeros(len(sim.names), bool)
    loose[model.dyn] = (model.nearest_dynamic_slot >= 0) & ~model.own_motion
    return np.flatnonzero(loose), model.nearest_dynamic_ancestor


def impact_step(scene, snapshot, node, steps, speed_change):
    """The first step count after `snapshot` (at most `steps` later) at which `node`'s world
    speed changes by more than `speed_change` (m/s) in one step, a fresh run of `scene` from the
    snapshot telling: the car meeting the wall. None if it does not within `steps`."""
    from physics.pipeline.simulation import Simulation  # here, not at the top: the parser loads no kernel

    sim = Simulation(scene)
    sim.restore(snapshot)
    speed = float(np.linalg.norm(sim.world().velocity[node]))
    with np.errstate(all="ignore"):
        for _ in range(steps):
            sim.step(1)
            now = float(np.linalg.norm(sim.world().velocity[node]))
            if not abs(now - speed) <= speed_change:
                return sim.step_count
            speed = now
    return None


# ---------------------------------------------------------------------------------------------- CLI
def add_parser(commands):
    """The `compare` subcommand on an argparse subparsers object; its handler is `command`."""
    parser = commands.add_parser(
        "compare", help="run variants of a scene in lockstep and measure how far they diverge",
        description="Run SCENE with its own settings (main), up to four variants and an optional reference in "
                    "lockstep, and write DIR/compare.csv (one row per run per recorded step) and DIR/compare.png.",
        epilog="SETTINGS: key=value pairs separated by commas, the [world] keys of a scene file: "
               "integrator=rk4,gyroscopic=off,dt=1/960,counteract=off,gravity=[0,-9.81,0]; "
               "engine=mujoco runs the scene in MuJoCo from the same state (integrator=rk4|implicitfast|implicit|euler, "
               "default rk4; dt, substeps and gravity may be given too; needs pip install -e '.[peers]'). "
               "Divergences are measured from the reference if given, else from main.")
    parser.add_argument("scene", metavar="SCENE", help="a scene file (.toml) or a robot model (.urdf, MJCF .xml)")
    parser.add_argument("--variant", action="append", default=[], metavar="SETTINGS",
                        help=f"a variant's settings (up to {MAX_VARIANTS}); its label is the text as given")
    parser.add_argument("--reference", nargs="?", const="", metavar="SETTINGS",
                        help=f"ground truth run (no SETTINGS: integrator={REFERENCE_INTEGRATOR}, "
                             f"dt = the scene's dt / {REFERENCE_DT_DIVISOR})")
    length = parser.add_mutually_exclusive_group(required=True)
    length.add_argument("--duration", type=float, metavar="S", help="simulated seconds (whole steps of main's dt)")
    length.add_argument("--steps", type=int, metavar="N", help="steps of the main run's dt")
    parser.add_argument("--record-every", type=int, default=1, metavar="K",
                        help="record one row per run every K steps of the main run (default 1)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory (created if missing; its parent must exist)")
    parser.add_argument("--quiet", action="store_true", help="no summary")
    options.add_control_arguments(parser)       # every run takes the same inputs at the same times
    parser.set_defaults(handler=command)
    return parser


def command(args):
    """`python -m physics compare`: -> exit code 0, or 1 if the output cannot be written; bad input
    raises ValueError / SceneError before anything runs or is written (printed, exit code 2)."""
    labels = list(args.variant)
    for label in labels:              # settings first: a typo is reported before the scene loads
        try:
            parse_settings(label)
        except ValueError as error:
            raise ValueError(f"variant {label!r}: {error}") from None
    if args.reference:
        try:
            parse_settings(args.reference)
        except ValueError as error:
            raise ValueError(f"--reference {args.reference!r}: {error}") from None
    options.check(args)
    out = options.check_output_directory("--out", args.out)
    comparison = Comparison(args.scene)
    steps = options.step_count(args, comparison.simulation(MAIN).settings.dt)
    for label in labels:
        comparison.add_variant(label, label)
    if args.reference is not None:
        comparison.add_reference(args.reference or None)

    main = comparison.simulation(MAIN)
    schedule, dt = options.controls(args, main), main.settings.dt
    rows = [_rows(comparison)]
    done, since_row = 0, 0
    while done < steps:
        for name, value in schedule.due(comparison.time, dt):     # every run, the same input
            comparison.apply_input("control", name, value)
        chunk = min(args.record_every - since_row, steps - done)
        upcoming = schedule.next_time()
        if upcoming is not None:
            chunk = min(chunk, max(1, math.ceil((upcoming - comparison.time) / dt - 1e-9)))
        comparison.advance(chunk)
        done += chunk
        since_row += chunk
        if since_row == args.record_every:       # rows stay evenly spaced, as the runner's
            since_row = 0
            rows.append(_rows(comparison))
    rows = [row for sample in rows for row in sample]
    try:
        write(out, rows, comparison.labels, base=comparison.base)
    except OSError as error:        # not bad input (exit 2): the run was fine, the disk was not
        print(f"error: writing {str(out)!r}: {error}; nothing written", file=sys.stderr)
        return 1
    if not args.quiet:
        print(_summary(comparison, rows, out))
    return 0


def _rows(comparison):
    return [[label, *(values[key] for key in READOUTS)] for label, values in comparison.readouts().items()]


def _summary(comparison, rows, out):
    """The largest readouts of each run over the recorded rows (the base's divergences are 0)."""
    width = max(len("run"), *map(len, comparison.labels)) + 1     # each label whole, as given
    lines = [f"divergence from {comparison.base}; largest over {len(rows) // len(comparison.labels)} rows:",
             f"{'run':<{width}}{'position (m)':>14}{'rotation (rad)':>16}{'|energy drift|':>16}{'L drift':>12}"]
    for label in comparison.labels:
        mine = np.array([row[2:] for row in rows if row[0] == label], float)
        worst = [np.nanmax(np.abs(column)) if np.isfinite(column).any() else math.nan for column in mine.T]
        lines.append(f"{label:<{width}}{worst[0]:>14.3e}{worst[1]:>16.3e}{worst[2]:>16.3e}{worst[3]:>12.3e}")
    for label, reason in comparison.stopped.items():
        lines.append(f"note: run {label!r} stopped: {reason}")
    lines.append(f"wrote {len(rows)} rows to {out / 'compare.csv'} and the plot {out / 'compare.png'}")
    return "\n".join(lines)


def write(out, rows, labels, base=MAIN):
    """Write DIR/compare.csv (COLUMNS) and DIR/compare.png atomically: both go to a temporary
    directory beside DIR, which then becomes DIR (or, when DIR exists, whose files replace
    DIR's); on any failure the temporary directory is removed and DIR is as it was."""
    out = Path(out)
    temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        umask = os.umask(0o022)       # mkdtemp makes the directory 0700; DIR gets the usual mode
        os.umask(umask)
        temporary.chmod(0o777 & ~umask)
        with open(temporary / "compare.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            writer.writerows(rows)
        plot(temporary / "compare.png", rows, labels, base)
        if out.is_dir():
            for name in ("compare.csv", "compare.png"):
                os.replace(temporary / name, out / name)
            temporary.rmdir()
        else:
            os.rename(temporary, out)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def plot(path, rows, labels, base=MAIN):
    """Divergence and drift over time, one line per run, four panels (log scales where a panel has
    positive values; the base's divergences are 0 and so drawn only on linear axes)."""
    from matplotlib.figure import Figure    # no pyplot: no global backend, Agg via savefig

    figure = Figure(figsize=(11, 7.5), layout="constrained")
    panels = (("max_position_error", "largest position error (m)"),
              ("max_rotation_error", "largest rotation error (rad)"),
              ("energy_drift", "|energy drift| (relative)"),
              ("angular_momentum_drift", "angular momentum drift |L - L0| / |L0|"))
    axes = figure.subplots(2, 2, sharex=True).ravel()
    for ax, (column, title) in zip(axes, panels):
        index = COLUMNS.index(column)
        values = np.abs(np.array([row[index] for row in rows], float))
        log = np.any(values[np.isfinite(values)] > 0)
        unseen = []     # runs that stay at 0: no point on a log axis, so the panel's legend names them
        for label in labels:
            mine = [row for row in rows if row[0] == label]
            y = [abs(row[index]) for row in mine]
            line, = ax.plot([row[1] for row in mine], y, label=label, linewidth=1.2)
            if log and label != base and all(v == 0.0 for v in y):
                unseen.append(line)
        if log:
            ax.set_yscale("log")
        if unseen:
            ax.legend(unseen, [f"{line.get_label()}: 0 throughout" for line in unseen], fontsize=8, loc="lower right")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[2:]:
        ax.set_xlabel("time (s)")
    axes[0].legend(fontsize=8)
    figure.suptitle(f"divergence from {base}; drift of each run from its own start", fontsize=11)
    figure.savefig(path, dpi=100)
