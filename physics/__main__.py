"""Headless runner: `python -m physics run SCENE.toml [options] --out FILE.npz|FILE.csv`.

Loads a scene, applies command-line overrides to its settings, steps it, records row 0 (the
initial state) and then one row every K steps, and writes the output atomically. Bad input (a
scene error, a bad option value, an unknown output extension) prints one message to stderr and
exits with code 2 without leaving any output file; a NaN during the run exits with code 1, naming
the node and the steps between which it went non-finite (numpy's own overflow warnings are
silenced: the blow-up is reported once, by us). When K does not divide the step count the last
steps are simulated but not recorded (the contract keeps the rows evenly spaced); the summary
says which step the last row holds.
"""
import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from physics.trajectory import FORMATS, Recording, write
from physics.scene import SceneError
from physics.settings import EXPONENTIALS, GYROSCOPIC, ROTATION_UPDATES

DEFAULT_STEPS = 600
PROGRESS_MIN_STEPS = 2000  # shorter runs finish before a bar is worth drawing


def _integrator_help():
    from physics.integrators import INTEGRATORS
    return "\n".join(f"  {name:<22}{description}" for name, description in INTEGRATORS.items())


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m physics", description="Physics sandbox, headless.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="simulate a scene file and write its states (.npz or .csv)",
        description="Simulate SCENE.toml headless and write every node's world and local state.",
        epilog="integrators:\n" + _integrator_help()
               + "\n\noutput: row 0 is the initial state, then one row every K steps; see docs/scene-format.md.")
    run.add_argument("scene", metavar="SCENE.toml")
    length = run.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, metavar="N", help=f"number of steps (default {DEFAULT_STEPS})")
    length.add_argument("--duration", type=float, metavar="S", help="simulated seconds (rounded to whole steps)")
    run.add_argument("--dt", type=float, metavar="H", help="time step, s (overrides [world] dt)")
    run.add_argument("--substeps", type=int, metavar="N", help="sub-steps per step (overrides [world] substeps)")
    run.add_argument("--integrator", metavar="NAME", help="dynamic-body integrator (listed below)")
    run.add_argument("--gyroscopic", choices=GYROSCOPIC, help="the omega x L term")
    run.add_argument("--rotation-update", choices=ROTATION_UPDATES, help="Magnus order for kinematic nodes")
    run.add_argument("--exponential", choices=EXPONENTIALS, help="quaternion exponential for kinematic nodes")
    run.add_argument("--counteract", choices=("on", "off"), help="impulses leave children's world motion")
    solver = run.add_argument_group("constraint solver (contacts and joints; override [world])")
    solver.add_argument("--iterations", type=int, metavar="N", help="Gauss-Seidel sweeps per sub-step (>= 1)")
    solver.add_argument("--sor", type=float, metavar="W", help="over-relaxation factor, 0 < W < 2 (1 = Gauss-Seidel)")
    solver.add_argument("--erp", type=float, metavar="E", help="error fraction removed per second, 0 <= E < 1")
    solver.add_argument("--cfm", type=float, metavar="C", help="constraint force mixing (softness), >= 0")
    solver.add_argument("--warm-start", choices=("on", "off"), help="start from last step's impulses")
    solver.add_argument("--relax", choices=("on", "off"), help="relax stage: position correction adds no energy")
    solver.add_argument("--shake", choices=("on", "off"), help="joint projection also corrects velocities (SHAKE)")
    solver.add_argument("--sleep", choices=("on", "off"), help="bodies at rest on their parent sleep until woken")
    run.add_argument("--record-every", type=int, default=1, metavar="K", help="record one row every K steps (default 1)")
    run.add_argument("--out", required=True, metavar="FILE", help="output file, .npz or .csv (written atomically)")
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    return parser


def _overrides(args):
    values = {
        "dt": args.dt, "substeps": args.substeps, "integrator": args.integrator,
        "gyroscopic": args.gyroscopic, "rotation_update": args.rotation_update,
        "exponential": args.exponential, "counteract": args.counteract,
        "iterations": args.iterations, "sor": args.sor, "erp": args.erp, "cfm": args.cfm,
        "warm_start": args.warm_start, "relax": args.relax, "shake": args.shake, "sleep": args.sleep,
    }
    return {name: value for name, value in values.items() if value is not None}


def _step_count(args, dt):
    if args.steps is not None:
        if args.steps < 0:
            raise ValueError(f"--steps: got {args.steps}; expected an integer >= 0")
        return args.steps
    if args.duration is not None:
        if not math.isfinite(args.duration) or args.duration < 0:
            raise ValueError(f"--duration: got {args.duration}; expected a finite number >= 0")
        return int(round(args.duration / dt))
    return DEFAULT_STEPS


class Progress:
    """A one-line progress bar on stderr, redrawn at most every 0.2 s."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.start, self.last = total, enabled, time.perf_counter(), 0.0

    def update(self, done, force=False):
        now = time.perf_counter()
        if not self.enabled or (not force and now - self.last < 0.2):
            return
        self.last = now
        fraction = done / self.total if self.total else 1.0
        bar = "#" * int(30 * fraction)
        rate = done / max(now - self.start, 1e-9)
        sys.stderr.write(f"\r[{bar:<30}] {done}/{self.total} steps  {rate:,.0f} steps/s")
        if force:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _relative(change, start, word=""):
    """' (relative [word]x)', or nothing when the start value is (near) zero and a ratio would mislead."""
    return f" (relative {word}{change / start:+.3e})" if start > 1e-12 else " (start value 0: no relative figure)"


def _summary(arrays, steps, seconds, record_every):
    """The run's speed and the drift of energy and momentum between row 0 and the last row."""
    energy = arrays["kinetic_energy"] + arrays["potential_energy"]
    last_step = (len(arrays["time"]) - 1) * record_every
    lines = [f"{steps} steps in {seconds:.3f} s: {steps / max(seconds, 1e-9):,.0f} steps/s"]
    if last_step != steps:
        lines.append(f"note: --record-every {record_every} does not divide {steps} steps: the last row is step "
                     f"{last_step} (t = {arrays['time'][-1]:.9g} s); the final {steps - last_step} steps are not recorded")
    lines.append(f"from row 0 (step 0) to the last row (step {last_step}):")
    lines.append(f"energy: {energy[0]:.9g} -> {energy[-1]:.9g} J{_relative(energy[-1] - energy[0], abs(energy[0]), 'drift ')}")
    for name, unit in (("linear_momentum", "kg m/s"), ("angular_momentum", "kg m²/s")):
        first, last = arrays[name][0], arrays[name][-1]
        change = np.linalg.norm(last - first)
        lines.append(f"{name.replace('_', ' ')}: |Δ| = {change:.3e} {unit}{_relative(change, np.linalg.norm(first))}")
    return "\n".join(lines)


def _report_non_finite(name, last_finite, first_bad):
    (good_step, good_time), (bad_step, bad_time) = last_finite, first_bad
    when = (f"at step {bad_step} (t = {bad_time:.6g} s)" if bad_step - good_step == 1 else
            f"between step {good_step} (t = {good_time:.6g} s, finite) and step {bad_step} (t = {bad_time:.6g} s)")
    print(f"error: node {name!r} went non-finite (NaN or infinity) {when}; no output written"
          + ("" if bad_step - good_step == 1 else "; --record-every 1 finds the exact step"), file=sys.stderr)


def run(args):
    from physics.simulation import Simulation

    if not any(args.out.endswith(ext) for ext in FORMATS):
        raise ValueError(f"--out: got {args.out!r}; expected a file name ending in .npz or .csv")
    if not Path(args.out).parent.is_dir():  # fail before the run, not after it
        raise ValueError(f"--out: got {args.out!r}; its directory does not exist")
    if args.record_every < 1:
        raise ValueError(f"--record-every: got {args.record_every}; expected an integer >= 1")
    sim = Simulation.from_file(args.scene)
    for name, value in _overrides(args).items():
        sim.set(name, value)
    steps = _step_count(args, sim.settings.dt)
    recording = Recording(sim, 1 + steps // args.record_every)
    # numpy's overflow/invalid warnings would precede our message with a screen of noise on a blow-up
    with np.errstate(all="ignore"):
        return _simulate(args, sim, steps, recording)


def _simulate(args, sim, steps, recording):
    """Step, record and check; -> exit code (0, or 1 for a non-finite state)."""
    recording.record()
    progress = Progress(steps, enabled=not args.quiet and steps >= PROGRESS_MIN_STEPS)
    start = time.perf_counter()
    done, checked = 0, (0, sim.time)  # the last step (and time) seen finite
    while done < steps:
        chunk = min(args.record_every, steps - done)
        sim.step(chunk)
        done += chunk
        if chunk == args.record_every:  # each row is checked: it is in hand, the check is O(N)
            recording.record()
            bad = recording.non_finite_node()
            bad = None if bad is None else sim.names[bad]
        else:
            bad = sim.first_non_finite()
        progress.update(done, force=bad is not None)
        if bad is not None:
            _report_non_finite(bad, checked, (done, sim.time))
            return 1
        checked = (done, sim.time)
    seconds = time.perf_counter() - start
    progress.update(done, force=True)
    arrays = recording.arrays()
    write(args.out, arrays)
    if not args.quiet:
        print(_summary(arrays, steps, seconds, args.record_every))
        print(f"wrote {arrays['time'].shape[0]} rows x {len(arrays['names'])} nodes to {args.out}")
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (SceneError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
