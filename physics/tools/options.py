"""The command line's shared argument checks: `run`, `compare` and `sweep` (and the other
subcommands' parsers) check their common options here, with one table, before any scene loads,
any cluster starts or any simulation runs.

- `Parser`: argparse's parser whose usage error is two lines: the short usage with where the full
  help is, and the error (argparse's own prints the whole usage, 5–14 lines).
- `check(args)`: every option of CHECKS present on `args` (a count, a length, a path) is checked:
  ValueError naming the option, the value and the reason.
- `step_count(args, dt)`: --steps, or --duration in whole steps of `dt`, at most STEPS_MAX.
- `check_output_file`, `check_output_directory`: the output can be written (its directory takes a
  new file or directory; it is no special file: /dev/null, a FIFO, /proc/...), tried by creating
  and removing a file or directory named as the writers' temporary ones.
- `controls(args, sim)`: --control NAME=VALUE and --controls FILE.csv as one table of actuator
  inputs over time, checked against the scene's actuators; `Controls.due` gives each run its inputs
  at the first step that starts at or after their time, whatever its dt.
"""
import argparse
import csv
import io
import math
import os
import tempfile
from pathlib import Path

from physics.core.files import read_regular, temporary_path

# The most steps a run may be asked for: 1e9 steps are about three hours at the fastest scenes'
# 100,000 steps per second; a --duration of 1e20 s would otherwise run for ever (the runner's memory
# check stopped only `run`, whose rows must fit in memory).
STEPS_MAX = 10**9
WORKERS_MAX = 1024


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage error is at most two lines (module docstring); the
    subcommands' parsers are of this class too (argparse makes them of their parent's)."""

    def short_usage(self):
        """'python -m physics run SCENE.toml [options]  (python -m physics run --help)'."""
        words = []
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                words.append("COMMAND")
            elif not action.option_strings:
                words.append(action.metavar or action.dest)
        return f"usage: {self.prog} {' '.join(words + ['[options]'])}  ({self.prog} --help)"

    def error(self, message):
        self.exit(2, f"{self.short_usage()}\nerror: {message}\n")

    def parse_args(self, args=None, namespace=None):
        """argparse's, but arguments left over are reported by the chosen subcommand's parser
        (its usage, not the top level's)."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            chosen = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    chosen = action.choices.get(getattr(parsed, action.dest, None), self)
            chosen.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def _integer(low, high, high_text):
    def checked(option, value):
        if not low <= value <= high:
            raise ValueError(f"{option}: got {value}; expected an integer in [{low}, {high_text}]")
    return checked


def _steps(option, value):
    if value < 0:
        raise ValueError(f"{option}: got {value}; expected an integer >= 0")
    if value > STEPS_MAX:
        raise ValueError(f"{option}: got {value}; at most {STEPS_MAX:.0e} steps")


def _duration(option, value):
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{option}: got {value}; expected a finite number >= 0")


def _record_every(option, value):
    if value < 1:
        raise ValueError(f"{option}: got {value}; expected an integer >= 1")


# option -> its check (the attribute on the parsed arguments, the option as typed); an option a
# command lacks, or left unset (None), is not checked.
CHECKS = {
    "steps": ("--steps", _steps),
    "duration": ("--duration", _duration),
    "record_every": ("--record-every", _record_every),
    "keyframe_every": ("--keyframe-every", _integer(1, 10**9, "1e9")),
    "workers": ("--workers", _integer(1, WORKERS_MAX, WORKERS_MAX)),
}


def check(args):
    """Check every option of CHECKS that `args` holds (ValueError naming option and value)."""
    for name, (option, checked) in CHECKS.items():
        value = getattr(args, name, None)
        if value is not None:
            checked(option, value)


def step_count(args, dt, default=None):
    """The steps of a run at step `dt`: --steps, or --duration rounded to whole steps, or
    `default`; ValueError past STEPS_MAX, naming the option."""
    steps, duration = getattr(args, "steps", None), getattr(args, "duration", None)
    if steps is not None:
        _steps("--steps", steps)
        return steps
    if duration is None:
        return default
    _duration("--duration", duration)
    count = duration / dt
    if not count <= STEPS_MAX:
        raise ValueError(f"--duration: got {duration}; at dt = {dt:g} s that is more than {STEPS_MAX:.0e} steps")
    return int(round(count))


def _special(path):
    """Whether `path` exists and is neither a regular file nor a directory (a device, a FIFO, a
    socket), or lies in a pseudo file system whose entries are no files (/proc, /sys)."""
    resolved = path.resolve()
    if resolved.parts[1:2] in (("proc",), ("sys",)):
        return True
    return path.exists() and not (path.is_file() or path.is_dir())


def check_output_file(option, path, extensions):
    """Check, before any work, that the output file `path` (given as `option`) can be written
    atomically; a ValueError naming the option, the value and the reason if not. The name ends in
    one of `extensions`, is no directory and no special file, and its directory takes a new file:
    one is created there (named as the writer's temporary files) and removed, since os.access
    answers yes for root where the file system refuses (an immutable or read-only directory)."""
    text = str(path)
    if "\0" in text:
        raise ValueError(f"{option}: got {text!r}; a file name cannot hold a NUL character")
    path = Path(text)
    if path.suffix not in extensions:
        raise ValueError(f"{option}: got {text!r}; expected a file name ending in {' or '.join(extensions)}")
    try:
        if path.is_dir():
            raise ValueError(f"{option}: got {text!r}; it is a directory, expected a file name")
        if _special(path):
            raise ValueError(f"{option}: got {text!r}; it is a special file, expected a regular file's name")
        if not path.parent.exists():
            raise ValueError(f"{option}: got {text!r}; its directory does not exist")
        if not path.parent.is_dir():
            raise ValueError(f"{option}: got {text!r}; {str(path.parent)!r} is not a directory")
        probe = temporary_path(path)
        try:
            open(probe, "xb").close()
        finally:
            probe.unlink(missing_ok=True)
    except OSError as error:
        raise ValueError(f"{option}: got {text!r}; cannot create a file in its directory: "
                         f"{error.strerror or error}") from None


def check_output_directory(option, path):
    """Check, before any work, that the output directory `path` can be made or written: it is a
    directory or does not exist yet, is no special file, its parent is a directory, and a
    directory can be created and removed beside it (the atomic writers' temporary one) and, when
    it exists, a file inside it. -> the Path; ValueError naming the option, value and reason."""
    text = str(path)
    if "\0" in text or not text:
        raise ValueError(f"{option}: got {text!r}; expected a directory name")
    out = Path(text)
    try:
        if _special(out):
            raise ValueError(f"{option}: got {text!r}; it is in a special file system or a special file, "
                             "expected a directory")
        if out.exists() and not out.is_dir():
            raise ValueError(f"{option}: got {text!r}; it exists and is not a directory")
        if not out.parent.is_dir():
            raise ValueError(f"{option}: got {text!r}; its parent directory does not exist")
        Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)).rmdir()
        if out.is_dir():
            probe = out / f".probe.{os.getpid()}.tmp"
            open(probe, "xb").close()
            probe.unlink()
    except OSError as error:
        raise ValueError(f"{option}: got {text!r}; cannot create a directory or file there: "
                         f"{error.strerror or error}") from None
    return out


CONTROLS_BYTES_MAX = 64 * 2**20    # a --controls file larger than this is refused before it is read
CONTROLS_ROWS_MAX = 10**6


class Controls:
    """Actuator inputs over time: `entries` [(time s, actuator, value)], non-decreasing in time
    (--control's at 0, then --controls' rows). A value holds from its time until the next entry
    for its actuator (piecewise constant); a run applies it before the first step that starts at
    or after that time (`due`)."""

    def __init__(self, entries=()):
        self.entries = list(entries)
        self._next = 0

    def __bool__(self):
        return bool(self.entries)

    def due(self, time, dt):
        """The (actuator, value)s whose time has come before a step starting at `time` (s) of a run
        of step `dt`, each once, in order."""
        out = []
        while self._next < len(self.entries) and self.entries[self._next][0] <= time + 1e-9 * dt:
            out.append(self.entries[self._next][1:])
            self._next += 1
        return out

    def next_time(self):
        """The time of the next entry not yet due, or None."""
        return self.entries[self._next][0] if self._next < len(self.entries) else None


def add_control_arguments(parser):
    """--control and --controls, the same for every command that runs a scene (run, compare, sweep)."""
    parser.add_argument("--control", action="append", default=[], metavar="NAME=VALUE",
                        help="an actuator's input from the start (repeatable; the scene's [[actuator]] names)")
    parser.add_argument("--controls", metavar="FILE.csv",
                        help="actuator inputs over time: a `time` column (s, non-decreasing) and one column per "
                             "actuator, each value held from its row's time until the next row")


def controls(args, sim):
    """The `Controls` of --control NAME=VALUE (repeatable; at time 0) and --controls FILE.csv (a
    `time` column and one column per actuator), each checked against `sim`'s actuators
    (`Simulation.check_control`) before anything runs: ValueError naming the option, the file's row
    and column, and the value."""
    entries = []
    for text in getattr(args, "control", None) or ():
        name, equals, value = text.partition("=")
        try:
            number = float(value)
        except ValueError:
            equals = ""
        if not equals or not name:
            raise ValueError(f"--control: got {text!r}; expected NAME=VALUE, e.g. --control shoulder=0.5")
        try:
            sim.check_control(name, number)
        except ValueError as error:
            raise ValueError(f"--control {text}: {error}") from None
        entries.append((0.0, name, number))
    path = getattr(args, "controls", None)
    if path:
        entries += _control_file(path, sim)
    return Controls(sorted(entries, key=lambda entry: entry[0]))     # stable: the file's order within a time


def _control_file(path, sim):
    label = f"--controls {path}"
    try:
        text = read_regular(path, CONTROLS_BYTES_MAX).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{label}: cannot read the file ({getattr(error, 'strerror', None) or error})") from None
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if not header or header[0].strip() != "time" or len(header) < 2:
        raise ValueError(f"{label}: the first row must be `time` and one column per actuator; got {header!r}")
    names = [name.strip() for name in header[1:]]
    for name in names:
        if name not in sim.controls:
            raise ValueError(f"{label}: column {name!r}: unknown actuator; the scene's actuators: "
                             f"{', '.join(map(repr, sim.controls)) or 'none'}")
    entries, last = [], 0.0
    for number, row in enumerate(rows, start=2):
        if number - 1 > CONTROLS_ROWS_MAX:
            raise ValueError(f"{label}: more than {CONTROLS_ROWS_MAX} rows")
        if not row:
            continue
        if len(row) != len(header):
            raise ValueError(f"{label}: row {number}: {len(row)} values; expected {len(header)}")
        try:
            values = [float(v) for v in row]
        except ValueError:
            raise ValueError(f"{label}: row {number}: {row!r}: expected numbers") from None
        time = values[0]
        if not (math.isfinite(time) and last <= time <= 1e9):
            raise ValueError(f"{label}: row {number}: time {row[0]!r}; expected a finite time >= the row before's")
        last = time
        for name, value in zip(names, values[1:]):
            try:
                sim.check_control(name, value)
            except ValueError as error:
                raise ValueError(f"{label}: row {number}: {error}") from None
            entries.append((time, name, value))
    return entries
