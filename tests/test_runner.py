"""The headless runner's contract: shapes, row 0 initial, atomic output, CSV, exit codes 0/1/2, the
output path checked before the run, clean exits on SIGINT/SIGTERM, and no traceback for any input."""
import contextlib
import csv
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physics.__main__ import main
from physics.tools.trajectory import csv_columns
from physics.pipeline.simulation import Simulation

ROOT = Path(__file__).resolve().parent.parent
TANK = ROOT / "assets" / "scenes" / "tank.toml"


def test_a_shipped_scene_runs_by_its_bare_name(tmp_path, monkeypatch):
    """`physics run tank` (no folder, no suffix, no such file here) runs assets/scenes/tank.toml, as
    the app's browser names it: the same rows as by its path. A file of that name here comes first."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "tank", "--steps", "4", "--record-every", "2", "--out", "by_name.npz", "--quiet"]) == 0
    assert main(["run", str(TANK), "--steps", "4", "--record-every", "2", "--out", "by_path.npz", "--quiet"]) == 0
    by_name, by_path = np.load("by_name.npz"), np.load("by_path.npz")
    assert all(np.array_equal(by_name[key], by_path[key]) for key in by_path)
    (tmp_path / "tank").write_text("not a scene")
    assert main(["run", "tank", "--steps", "1", "--out", "x.npz", "--quiet"]) == 2


def test_npz_contract(tmp_path):
    out = tmp_path / "tank.npz"
    assert main(["run", str(TANK), "--steps", "10", "--record-every", "3", "--out", str(out), "--quiet"]) == 0
    data = np.load(out)
    sim = Simulation.from_file(TANK)
    rows, count = 1 + 10 // 3, len(sim.names)
    assert data["time"].shape == (rows,)
    np.testing.assert_allclose(data["time"], np.arange(rows) * 3 * sim.settings.dt, rtol=1e-12)
    assert data["names"].tolist() == list(sim.names)
    assert data["parent"].tolist() == sim.parent.tolist()
    for prefix in ("", "local_"):
        assert data[prefix + "translation"].shape == (rows, count, 3)
        assert data[prefix + "rotation"].shape == (rows, count, 3, 3)
        assert data[prefix + "scale"].shape == (rows, count)
        for name in ("velocity", "acceleration", "angular_velocity", "angular_acceleration"):
            assert data[prefix + name].shape == (rows, count, 3)
    for name, shape in (("kinetic_energy", (rows,)), ("potential_energy", (rows,)),
                        ("linear_momentum", (rows, 3)), ("angular_momentum", (rows, 3))):
        assert data[name].shape == shape
    # Row 0 is the state before any step: exactly what a freshly loaded simulation reports.
    world, local = sim.world(), sim.local()
    np.testing.assert_array_equal(data["translation"][0], world.transform.translation)
    np.testing.assert_array_equal(data["local_velocity"][0], local.velocity)
    np.testing.assert_array_equal(data["angular_velocity"][0], world.omega_vector())
    # The last row is the state after 9 steps (3 rows of 3), not 10: one row every K steps.
    sim.step(9)
    np.testing.assert_allclose(data["translation"][-1], sim.world().transform.translation, atol=1e-12)
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind


def test_world_rows_compose_from_local_rows(tmp_path):
    """Independent check of the two groups: world = parent world ∘ local (seed composition),
    recomputed here in numpy from the recorded arrays."""
    out = tmp_path / "tank.npz"
    assert main(["run", str(TANK), "--steps", "30", "--record-every", "10", "--out", str(out), "--quiet"]) == 0
    d = np.load(out)
    for i, p in enumerate(d["parent"]):
        if p < 0:
            continue
        r2, s2 = d["rotation"][:, p], d["scale"][:, p][:, None]
        offset = s2 * np.einsum("tij,tj->ti", r2, d["local_translation"][:, i])
        w2 = d["angular_velocity"][:, p]
        expected_v = d["velocity"][:, p] + s2 * np.einsum("tij,tj->ti", r2, d["local_velocity"][:, i]) + np.cross(w2, offset)
        # 1e-12: a handful of float products on O(10) numbers
        np.testing.assert_allclose(d["translation"][:, i], d["translation"][:, p] + offset, atol=1e-12)
        np.testing.assert_allclose(d["velocity"][:, i], expected_v, atol=1e-12)


def test_joint_coordinates_and_controls_are_in_the_output(tmp_path):
    """A scene with named joints and actuators (the humanoid: six-axis hips, 17 motors) writes
    each joint's coordinate and each actuator's control per row, in .npz and .csv: the same values,
    bit for bit, as the same run stepped here reads (`joint_coordinates`, `controls`)."""
    scene = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "humanoid.toml"
    npz, table = tmp_path / "h.npz", tmp_path / "h.csv"
    for out in (npz, table):
        assert main(["run", str(scene), "--steps", "6", "--record-every", "3", "--control", "right_knee=0.2",
                     "--out", str(out), "--quiet"]) == 0
    sim = Simulation.from_file(scene)
    sim.set_control("right_knee", 0.2)
    sim.step(6)
    data = np.load(npz)
    coordinates, controls = sim.joint_coordinates(), sim.controls
    assert list(data["joint_names"]) == list(coordinates) and list(data["control_names"]) == list(controls)
    assert data["joint_coordinates"].shape == (3, len(coordinates)) and data["controls"].shape == (3, len(controls))
    assert data["joint_coordinates"][-1].tolist() == list(coordinates.values())
    assert data["controls"][-1].tolist() == list(controls.values())
    with open(table, newline="") as handle:
        rows = list(csv.DictReader(handle))
    last = rows[-1]
    assert all(float(last[f"joint_{name}"]) == q for name, q in coordinates.items())
    assert float(last["control_right_knee"]) == 0.2 and float(last["control_left_knee"]) == 0.0


def test_csv_output(tmp_path):
    out = tmp_path / "tank.csv"
    assert main(["run", str(TANK), "--steps", "4", "--record-every", "2", "--out", str(out), "--quiet"]) == 0
    with open(out, newline="") as handle:
        rows = list(csv.reader(handle))
    tank = Simulation.from_file(TANK)
    assert rows[0] == csv_columns(control_names=list(tank.controls))      # its actuators' controls last
    count = len(tank.names)
    assert len(rows) == 1 + 3 * count
    npz = tmp_path / "tank.npz"
    main(["run", str(TANK), "--steps", "4", "--record-every", "2", "--out", str(npz), "--quiet"])
    data = np.load(npz)
    header = rows[0]
    line = rows[1 + 2 * count + 5]  # last row, node 5
    assert line[header.index("name")] == data["names"][5]
    assert float(line[header.index("velocity_x")]) == data["velocity"][2, 5, 0]
    assert float(line[header.index("local_rotation_12")]) == data["local_rotation"][2, 5, 1, 2]
    assert float(line[header.index("kinetic_energy")]) == data["kinetic_energy"][2]


@pytest.mark.parametrize("args, message", [
    (["--steps", "5", "--out", "{tmp}/x.npz", "--dt", "-1"], "dt"),
    (["--steps", "5", "--out", "{tmp}/x.txt"], ".npz or .csv"),
    (["--steps", "5", "--out", "{tmp}/x.npz", "--integrator", "nope"], "nope"),
    (["--steps", "5", "--out", "{tmp}/x.npz", "--record-every", "0"], "record-every"),
    (["--steps", "5", "--out", "{tmp}/missing/x.npz"], "directory does not exist"),
])
def test_bad_options_exit_2_without_output(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["run", str(TANK)] + args) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bad_scene_exits_2_names_file_node_key_value(tmp_path):
    scene = tmp_path / "bad.toml"
    scene.write_text('[[node]]\nname = "a"\nmotion = "dynamic"\nmass = -2.0\n')
    out = tmp_path / "out.npz"
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(scene), "--steps", "3", "--out", str(out)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2
    for part in (str(scene), "'a'", "'mass'", "-2.0"):
        assert part in result.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


# Within every scene limit, yet divergent: explicit Euler squares omega each step (see below).
BLOWUP = ('[world]\ndt = 0.01\nsubsteps = 1\nintegrator = "explicit-euler"\ngyroscopic = "explicit"\n[[node]]\nname = "rocket"\n'
          'motion = "dynamic"\ninertia = [1.0, 2.0, 3.0]\nangular_velocity = [1e6, 1e6, 1e6]\n')


@pytest.mark.filterwarnings("error::RuntimeWarning")  # numpy's overflow warnings must not leak out
@pytest.mark.parametrize("record_every", [1, 10])
def test_diverging_state_exits_1_naming_the_node_and_step(tmp_path, capsys, record_every):
    """Explicit Euler on a body spinning at 1e6 rad/s about no principal axis: a step adds
    h (I2 - I3)/I1 omega2 omega3 ~ 0.01 * 1e12 = 1e10 rad/s, past the divergence limit (1e7 rad/s)
    in step 1 whatever the row spacing: the runner stops with code 1, names the node and the step,
    warns nothing else and writes nothing."""
    scene = tmp_path / "blowup.toml"
    scene.write_text(BLOWUP)
    out = tmp_path / "out.npz"
    args = ["run", str(scene), "--steps", "30", "--record-every", str(record_every), "--out", str(out), "--quiet"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "'rocket'" in err and "step 1 (t = 0.01 s)" in err and "no output written" in err, err
    assert err.count("\n") == 1  # one line: ours
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blowup.toml"]


def test_blow_up_prints_no_numpy_warning(tmp_path):
    """In a fresh interpreter (warnings shown once per place, so no earlier test hides them):
    stderr holds only our line."""
    scene = tmp_path / "blowup.toml"
    scene.write_text(BLOWUP)
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(scene), "--steps", "10",
                             "--out", str(tmp_path / "out.npz")], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 1
    assert "RuntimeWarning" not in result.stderr and result.stderr.startswith("error: node 'rocket'"), result.stderr


def test_summary_says_which_step_the_last_row_holds(tmp_path, capsys):
    """10 steps, a row every 3: rows at steps 0, 3, 6, 9; the summary names step 9 as the last row
    and the one step left unrecorded, and its energy line is that row's."""
    scene = tmp_path / "crash.toml"
    scene.write_text(CRASH)
    out = tmp_path / "crash.npz"
    assert main(["run", str(scene), "--steps", "10", "--record-every", "3", "--dt", "0.01", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    data = np.load(out)
    assert data["time"].shape == (4,)
    assert "10 steps in" in text
    assert "the last row is step 9 (t = 0.09 s); the final 1 steps are not recorded" in text, text
    energy = data["kinetic_energy"] + data["potential_energy"]
    assert f"-> {energy[-1]:.9g} J" in text and "to the last row (step 9)" in text
    assert main(["run", str(scene), "--steps", "9", "--record-every", "3", "--out", str(out)]) == 0
    assert "not recorded" not in capsys.readouterr().out  # 3 divides 9: nothing to say


def test_failed_write_leaves_nothing(tmp_path, monkeypatch, capsys):
    """An error while writing removes the temporary file, leaves any old output untouched and is
    one line naming the stage and the error: exit 1."""
    out = tmp_path / "tank.npz"
    out.write_bytes(b"old")

    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", explode)
    assert main(["run", str(TANK), "--steps", "2", "--out", str(out), "--quiet"]) == 1
    assert capsys.readouterr().err == f"error: internal error while writing {out}: OSError: disk full; no output written\n"
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tank.npz"]


def test_a_full_disk_is_said_as_such(tmp_path, monkeypatch, capsys):
    """ENOSPC while writing (the reproducer printed "internal error … [Errno 28]"): one line saying
    the disk is full, naming the stage and the file, exit 2; the old output stays, nothing else."""
    import errno

    out = tmp_path / "tank.npz"
    out.write_bytes(b"old")

    def full(file, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))

    monkeypatch.setattr(np, "savez_compressed", full)
    assert main(["run", str(TANK), "--steps", "2", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: while writing {out}: the disk is full (") and err.endswith("; no output written\n")
    assert err.count("\n") == 1 and "internal" not in err
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tank.npz"]


def test_a_killed_runs_temporary_file_is_removed_by_the_next_run(tmp_path):
    """kill -9 during a write leaves `.out.npz.PID.RANDOM.tmp` (the reproducer: no later run removed
    it). The next run writing the same output removes it, as its writer is gone; a temporary file
    of a live process is left alone."""
    out = tmp_path / "tank.npz"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".tank.npz.{int(gone.stdout)}.0123456789ab.tmp"
    stale.write_bytes(b"partial")
    live = tmp_path / f".tank.npz.{os.getppid()}.0123456789ab.tmp"
    live.write_bytes(b"partial")
    assert main(["run", str(TANK), "--steps", "2", "--out", str(out), "--quiet"]) == 0
    assert not stale.exists() and live.exists() and out.exists()


def test_help_lists_every_integrator():
    from physics.dynamics.integrators import INTEGRATORS
    result = subprocess.run([sys.executable, "-m", "physics", "run", "--help"], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0
    for name, description in INTEGRATORS.items():
        assert name in result.stdout and description.split(",")[0][:20] in result.stdout


CRASH = """
[world]
gravity = [0.0, 0.0, 0.0]
[[node]]
name = "car"
motion = "dynamic"
velocity = [10.0, 0.0, 0.0]
mass = 1000.0
[[node]]
name = "box"
parent = "car"
motion = "dynamic"
translation = [0.5, 0.5, 0.0]
mass = 10.0
[[event]]
time = 1.3
node = "car"
impulse = [-10000.0, 0.0, 0.0]
"""


@pytest.mark.parametrize("counteract, box_velocity", [("off", 0.0), ("on", 10.0)])
def test_overrides_and_summary(tmp_path, capsys, counteract, box_velocity):
    """A shape-less crash (no contacts): the impulse event stops the car at 1.3 s; the cargo stops
    with it (counteraction off) or keeps its 10 m/s (on). 1e-9: exact arithmetic up to round-off."""
    scene = tmp_path / "crash.toml"
    scene.write_text(CRASH)
    out = tmp_path / "crash.npz"
    code = main(["run", str(scene), "--duration", "2.0", "--dt", "0.01", "--integrator", "rk4",
                 "--counteract", counteract, "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "steps/s" in text and "energy" in text and "momentum" in text
    data = np.load(out)
    assert data["time"].shape == (201,)
    np.testing.assert_allclose(data["velocity"][-1, 0], 0.0, atol=1e-9)
    np.testing.assert_allclose(data["velocity"][-1, 1], [box_velocity, 0.0, 0.0], atol=1e-9)


SOLVER_SCENE = """
[[node]]
name = "ground"
shape = { type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }
[[node]]
name = "ball"
motion = "dynamic"
translation = [0.3, 1.0, 0.0]
restitution = 0.5
shape = { type = "sphere", radius = 0.1 }
[[node]]
name = "bob"
motion = "dynamic"
translation = [1.0, 2.0, 0.0]
shape = { type = "sphere", radius = 0.1 }
[[joint]]
type = "distance"
b = "bob"
anchor = [0.0, 2.0, 0.0]
anchor_b = [1.0, 2.0, 0.0]
"""
SOLVER_FLAGS = {"--iterations": ("iterations", "3", 3), "--sor": ("sor", "1.4", 1.4), "--erp": ("erp", "0.5", 0.5),
                "--cfm": ("cfm", "1e-4", 1e-4), "--warm-start": ("warm_start", "off", False),
                "--relax": ("relax", "off", False), "--shake": ("shake", "on", True), "--substeps": ("substeps", "2", 2),
                "--joint-solve": ("joint_solve", "soft", "soft")}


def test_solver_flags_reach_the_simulation(tmp_path):
    """Every solver flag at once: the recorded run equals a Simulation given the same settings in
    Python (bit for bit: the same arithmetic), and differs from the scene's defaults."""
    scene = tmp_path / "solver.toml"
    scene.write_text(SOLVER_SCENE)
    out, default = tmp_path / "flags.npz", tmp_path / "default.npz"
    flags = [part for flag, (_, text, _) in SOLVER_FLAGS.items() for part in (flag, text)]
    assert main(["run", str(scene), "--steps", "40", "--out", str(out), "--quiet"] + flags) == 0
    assert main(["run", str(scene), "--steps", "40", "--out", str(default), "--quiet"]) == 0
    sim = Simulation.from_file(scene)
    for name, _, value in SOLVER_FLAGS.values():
        sim.set(name, value)
    sim.step(40)
    recorded = np.load(out)["translation"][-1]
    np.testing.assert_array_equal(recorded, sim.world().transform.translation)
    assert not np.array_equal(recorded, np.load(default)["translation"][-1])


@pytest.mark.parametrize("flag, value", [("--iterations", "0"), ("--sor", "2.0"), ("--sor", "0"), ("--erp", "1.0"),
                                         ("--erp", "-0.1"), ("--cfm", "-1"), ("--cfm", "nan"), ("--substeps", "0")])
def test_bad_solver_values_exit_2_naming_setting_and_value(tmp_path, capsys, flag, value):
    out = tmp_path / "x.npz"
    assert main(["run", str(TANK), "--steps", "2", "--out", str(out), flag, value]) == 2
    err = capsys.readouterr().err
    assert flag[2:].replace("-", "_") in err and value in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag, value", [("--iterations", "1.5"), ("--warm-start", "yes"), ("--relax", "true"),
                                         ("--sor", "fast")])
def test_malformed_solver_values_exit_2(tmp_path, capsys, flag, value):
    """Values of the wrong kind stop in argparse: exit 2, its usage line and the flag named."""
    with pytest.raises(SystemExit) as info:
        main(["run", str(TANK), "--steps", "2", "--out", str(tmp_path / "x.npz"), flag, value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and value in err, err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------- output path, checked first
def _unwritable_directory(tmp_path):
    """A directory in which no file can be created, root included (tests may run as root, for whom
    permission bits mean nothing): `chattr +i` (immutable, refused to root too) as root, mode 0o555
    otherwise. -> (directory, undo). A real try checks it holds; it skips only where it cannot."""
    directory = tmp_path / "locked"
    directory.mkdir()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr: no directory can be made unwritable")
        subprocess.run(["chattr", "+i", str(directory)], capture_output=True)
        undo = lambda: subprocess.run(["chattr", "-i", str(directory)], capture_output=True)  # noqa: E731
    else:
        directory.chmod(0o555)
        undo = lambda: directory.chmod(0o755)  # noqa: E731
    probe = directory / "probe"
    try:
        probe.touch()
    except OSError:
        return directory, undo
    probe.unlink()
    undo()
    pytest.skip("this file system lets us write in the locked directory (chattr +i refused or mode ignored)")


@pytest.mark.parametrize("case", ["parent is a file", "out is a directory", "unwritable directory", "bad extension"])
def test_output_path_is_checked_before_the_scene_loads(tmp_path, capsys, monkeypatch, case):
    """Each unwritable --out is refused with exit 2 and a message naming --out, the value and the
    reason, before the scene is even loaded (so before a long run). A parent that is a regular file
    stops root as well as anyone (ENOTDIR), so that case holds wherever the tests run."""
    from physics.pipeline.simulation import Simulation as Loaded

    def refuse(*args, **kwargs):
        raise AssertionError("the scene was loaded before --out was checked")

    monkeypatch.setattr(Loaded, "from_file", refuse)
    undo = None
    if case == "parent is a file":
        (tmp_path / "plain").write_text("")
        out, reason = tmp_path / "plain" / "x.npz", "is not a directory"
    elif case == "out is a directory":
        (tmp_path / "x.npz").mkdir()
        out, reason = tmp_path / "x.npz", "it is a directory"
    elif case == "unwritable directory":
        directory, undo = _unwritable_directory(tmp_path)
        out, reason = directory / "x.csv", "cannot create a file in its directory"
    else:
        out, reason = tmp_path / "x.npy", "expected a file name ending in .npz or .csv"
    before = sorted(tmp_path.rglob("*"))
    try:
        assert main(["run", str(TANK), "--steps", "1000000000", "--out", str(out)]) == 2
    finally:
        if undo:
            undo()
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out: got {str(out)!r}; ") and reason in err and err.count("\n") == 1, err
    assert sorted(tmp_path.rglob("*")) == before  # the probe file is gone too


# ------------------------------------------------------------------------------------------ signals
def _many_nodes_scene(count):
    """`count` fixed nodes and one kinematic node, nothing to collide: cheap steps, large rows."""
    nodes = "".join(f'[[node]]\nname = "n{i}"\ntranslation = [{i}.0, 0.0, 0.0]\n' for i in range(count))
    return nodes + '[[node]]\nname = "spinner"\nmotion = "kinematic"\nangular_velocity = [0.0, 1.0, 0.0]\n'


def _default_signals():
    """In the child before exec: SIGINT at its default and SIGINT, SIGTERM unblocked. A child
    inherits an ignored SIGINT (a background job's), which Python keeps, and the signal mask of
    the thread that started it (the sweep blocks SIGINT while its Dask cluster starts). A runner
    started here once never saw its SIGINT (no message, exit 0 after writing); with SIGINT blocked
    in the starting thread, that is what happens."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _start(args, tmp_path):
    """The runner in a fresh process, with the signals as a terminal gives them (`_default_signals`)."""
    return subprocess.Popen([sys.executable, "-m", "physics", "run", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_default_signals)


def _wait_for(condition, process, seconds=300):
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the runner never reached the stage to interrupt"
        time.sleep(0.005)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_simulating_exits_cleanly(tmp_path, signum):
    """A real signal during a long run (10^6 steps, each a kinematic update): exit 128 + N (130
    for SIGINT, 143 for SIGTERM), one line naming the step, no traceback, nothing written. The
    signal goes once the progress bar shows, i.e. while stepping."""
    scene = tmp_path / "spin.toml"
    scene.write_text(_many_nodes_scene(3))
    out = tmp_path / "spin.npz"
    process = _start([str(scene), "--steps", "1000000", "--record-every", "100", "--out", str(out)], tmp_path)
    seen = b""

    def progress_shown():
        nonlocal seen
        seen += os.read(process.stderr.fileno(), 4096)  # blocks until the runner writes to stderr
        return b"steps/s" in seen

    _wait_for(progress_shown, process)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    err = (seen + stderr).decode()
    assert process.returncode == 128 + signum, err
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(r"interrupted at step \d+ of 1000000; no output written", last), err
    assert "Traceback" not in err and stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spin.toml"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_writing_removes_the_temporary_file(tmp_path, signum):
    """A real signal while the CSV is being written (2001 rows x 601 nodes, about 1.2 million
    lines: about ten seconds of writing, which starts by creating the temporary file; with half
    that, a run on a loaded machine once finished writing before the signal went): exit 128 + N,
    one line saying so, the temporary file removed and the old output untouched.

    The signal landed in the write where the temporary file is still there once it has gone. An
    attempt where it is not, and the runner exited 0 with the new output in place, tested nothing:
    the test process was starved past the rest of the write (a loaded CI machine), so the signal
    came as the runner's signal block ended or later, where a stop stops nothing
    (physics.tools.signals), and the attempt is made again, at most WRITE_ATTEMPTS times. Whether it
    landed is seen with the runner stopped (SIGSTOP, the signal sent, then SIGCONT): a look taken
    after the signal with the runner still going raced the runner's own rename. A signal that
    lands in the write and is lost still fails."""
    scene = tmp_path / "many.toml"
    scene.write_text(_many_nodes_scene(600))
    out = tmp_path / "many.csv"

    # a non-empty temporary file: the options' check creates (and removes) an empty one first,
    # which a busy machine can show the poll for long enough to be seen
    def writing():
        for path in tmp_path.glob(".many.csv.*.tmp"):
            try:
                if path.stat().st_size > 0:
                    return True
            except FileNotFoundError:       # the options' probe, gone between the listing and the stat
                pass
        return False

    for _ in range(WRITE_ATTEMPTS):
        out.write_text("old")
        process = _start([str(scene), "--steps", "2000", "--out", str(out), "--quiet"], tmp_path)
        _wait_for(writing, process)
        landed = False
        if process.poll() is None:
            # the runner held still (SIGSTOP) while the test looks: the temporary file there then
            # says the signal, pending until SIGCONT, lands in the write, however late the test's
            # own look came on a loaded machine
            process.send_signal(signal.SIGSTOP)
            try:
                _wait_for_stop(process)
                landed = writing()
                process.send_signal(signum)
            except BaseException:       # (never a runner left stopped behind a failure)
                process.kill()
                raise
            finally:
                process.send_signal(signal.SIGCONT)
        stdout, stderr = process.communicate(timeout=60)
        if landed or process.returncode != 0 or out.stat().st_size == len("old"):     # (not the new output)
            break
    err = stderr.decode()
    assert process.returncode == 128 + signum, err
    assert err == f"interrupted while writing {out}; no output written\n", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.csv", "many.toml"]
    assert out.read_text() == "old"


WRITE_ATTEMPTS = 3


def _wait_for_stop(process, seconds=60):
    """Until `process` (sent SIGSTOP) is stopped, or has ended (Linux's /proc/PID/stat state: the
    tests run on Linux, CI's machine)."""
    deadline = time.monotonic() + seconds
    while process.poll() is None:
        try:
            state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("T", "t"):
            return
        assert time.monotonic() < deadline, "the runner never stopped"
        time.sleep(0.001)


# ------------------------------------------------------------------------------ no traceback, ever
def test_more_rows_than_memory_holds_is_bad_input(tmp_path, capsys):
    """1e9 steps (the most any command takes, physics.tools.options.STEPS_MAX), a row each: terabytes of
    rows, refused before allocating (numpy would only fail once the pages are touched) with the row
    count and the size."""
    out = tmp_path / "x.npz"
    assert main(["run", str(TANK), "--steps", str(10**9), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --steps: ") and f"{10**9 + 1} rows of" in err and "GiB" in err, err
    assert list(tmp_path.iterdir()) == []


def test_an_unexpected_exception_is_one_line_naming_the_stage(tmp_path, capsys, monkeypatch):
    """A bug inside a step (a KeyError planted in Simulation.step) is no traceback but one line:
    the stage (the step it happened at), the exception's type and message; exit 1."""
    from physics.pipeline.simulation import Simulation as Stepped

    def broken(self, n=1):
        raise KeyError("lost")

    monkeypatch.setattr(Stepped, "step", broken)
    assert main(["run", str(TANK), "--steps", "5", "--out", str(tmp_path / "x.npz"), "--quiet"]) == 1
    assert capsys.readouterr().err == "error: internal error at step 0 of 5: KeyError: 'lost'; no output written\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_a_compiled_call_is_the_interruption_not_an_internal_error(tmp_path, capsys, monkeypatch,
                                                                                    signum):
    """A signal whose handler raises while the main thread is inside a kernel's call leaves numba's
    dispatcher as "SystemError: Kernel(…) returned a result with an exception set", the
    interruption its cause (seen with Ctrl+C during the heap's long solve): the runner still exits
    128 + N with its one line, not "internal error" and 1. The smallest reproducer: the step raises
    that SystemError from the handler's exception."""
    from physics.__main__ import Interrupted
    from physics.pipeline.simulation import Simulation as Stepped

    def interrupted_in_a_kernel(self, n=1):
        try:
            raise Interrupted(signum)
        except Interrupted as interrupt:
            raise SystemError("Kernel(<function _solve_stages>) returned a result with an exception set") from interrupt

    monkeypatch.setattr(Stepped, "step", interrupted_in_a_kernel)
    assert main(["run", str(TANK), "--steps", "5", "--out", str(tmp_path / "x.npz"), "--quiet"]) == 128 + signum
    assert capsys.readouterr().err == "interrupted at step 0 of 5; no output written\n"
    assert list(tmp_path.iterdir()) == []


def test_a_signal_numpy_turns_into_a_type_error_at_load_is_the_interruption(tmp_path, capsys):
    """SIGINT whose handler runs inside numpy's promotion of two structured dtypes (Python code numpy
    calls while `np.unique(..., axis=0)` compares the rows of the convex hulls' planes, at load):
    numpy replaces the stop with "TypeError: Cannot compare structured arrays unless they have a
    common dtype", no chain left to the stop. Found by the fuzzer's signal kind on the iiwa scene,
    which then said "internal error" and exited 1. The signal is sent as the promotion starts (a
    trace function), so the stop is raised inside it; the runner exits 130 with its one line."""
    sent = []

    def trace(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_promote_fields" and not sent:
            sent.append(frame.f_code.co_filename)
            os.kill(os.getpid(), signal.SIGINT)
        return None

    iiwa = ROOT / "assets" / "scenes" / "iiwa.toml"
    sys.settrace(trace)
    try:
        code = main(["run", str(iiwa), "--steps", "3", "--out", str(tmp_path / "x.npz"), "--quiet"])
    finally:
        sys.settrace(None)
    assert sent, "numpy promoted no structured dtypes while the scene loaded: the case this test is for is gone"
    assert code == 130
    assert capsys.readouterr().err == "interrupted while loading the scene; no output written\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("then", ["raises its own error", "goes on"])
def test_a_stop_swallowed_by_code_that_catches_everything_still_stops_the_run(tmp_path, capsys, monkeypatch, then):
    """Code that catches every exception (trimesh's STL reader has `except BaseException`) swallows
    the stop raised inside it: whether it then raises an error of its own (a ValueError, which would
    read as bad input) or goes on as if nothing happened, the run stops at once with 130 and its one
    line, and writes nothing; the user's Ctrl+C is not lost (the handler ignores later signals)."""
    loaded = Simulation.from_file

    def catching_everything(cls, path):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):      # bytecodes for the handler to run in
                pass
        except BaseException:
            if then == "raises its own error":
                raise ValueError("not a mesh") from None
        return loaded(path)

    monkeypatch.setattr(Simulation, "from_file", classmethod(catching_everything))
    assert main(["run", str(TANK), "--steps", "3", "--out", str(tmp_path / "x.npz"), "--quiet"]) == 130
    assert capsys.readouterr().err == "interrupted while loading the scene; no output written\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["just after the trajectory's rename", "inside the recording's write"])
def test_a_signal_after_a_file_is_in_place_takes_back_every_output(tmp_path, capsys, monkeypatch, where):
    """All or nothing, to the last moment: SIGTERM landing just after `--out`'s rename (the fuzzer's
    signal kind found the trajectory left behind, "no output written" said beside it), or inside
    the recording's write (its temporary, named by mkstemp inside the window, was left as
    `.x.rec.RANDOM.tmp`). Exit 143, one line, and the folder as it was: empty."""
    import physics.__main__ as runner
    from physics.__main__ import Interrupted

    if where == "just after the trajectory's rename":
        wrote = runner.write

        def write_then_stop(path, arrays):
            wrote(path, arrays)
            raise Interrupted(signal.SIGTERM)

        monkeypatch.setattr(runner, "write", write_then_stop)
    else:
        import physics.core.files as files
        replace = os.replace

        def stop_at_the_rename(source, target):
            if str(target).endswith(".rec"):
                raise Interrupted(signal.SIGTERM)
            return replace(source, target)

        monkeypatch.setattr(files.os, "replace", stop_at_the_rename)
    argv = ["run", str(TANK), "--steps", "3", "--out", str(tmp_path / "x.npz"), "--record", str(tmp_path / "x.rec"),
            "--quiet"]
    assert main(argv) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.endswith("; no output written\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


HUGE = str(2**64)
VALUES = {  # per option: valid values, out-of-range ones and malformed ones
    "--steps": ["0", "3", "-1", HUGE, "-" + HUGE, "1" + "0" * 400, "1.5", "nan", "x", ""],
    "--duration": ["0.05", "0", "-1", "inf", "nan", "1e300", "1e-300", HUGE, "x"],
    "--dt": ["0.01", "0", "-1", "inf", "nan", "1e-300", "1e308", HUGE, "x"],
    "--substeps": ["2", "0", "-1", HUGE, "1.5", "x"],
    "--integrator": ["rk4", "nope", "", "RK4"],
    "--gyroscopic": ["off", "sideways"],
    "--iterations": ["3", "0", "-3", HUGE, "x"],
    "--sor": ["1.2", "0", "2", "nan", "-inf", HUGE, "x"],
    "--erp": ["0.5", "1", "-0.1", "nan", "inf", "x"],
    "--cfm": ["0", "1e-4", "-1", "nan", "inf", HUGE, "x"],
    "--warm-start": ["off", "yes"],
    "--sleep": ["on", "1"],
    "--record-every": ["1", "2", "0", "-1", "1.5", "nan", "x"],
}


def _outs(tmp):
    return [f"{tmp}/x.npz", f"{tmp}/x.csv", f"{tmp}/x.txt", f"{tmp}", f"{tmp}/missing/x.npz", "",
            f"{tmp}/plain/x.npz", f"{tmp}/x\0.npz", f"{tmp}/{'n' * 300}.npz"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scene=st.sampled_from(["tank", "missing", "directory", "garbage", "blowup"]),
       options=st.dictionaries(st.sampled_from(sorted(VALUES)), st.integers(0, 8), max_size=4),
       out=st.integers(0, 8), extra=st.sampled_from([[], ["--quiet"], ["--bogus"], ["--steps"]]))
def test_fuzzed_command_lines_never_raise(tmp_path, scene, options, out, extra):
    """Command lines built from valid, out-of-range (2^64, inf, nan, negative) and malformed values:
    main returns 0, 1 or 2 (or argparse exits 2 with its usage) and never lets an exception out,
    which is what a traceback would be; a failed run leaves no file behind. Runs are kept short:
    an accepted --steps is small, a huge one is refused by the memory check (a row per step)."""
    work = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    (work / "plain").write_text("")
    (work / "garbage.toml").write_text("[[node]\nname = \x01")
    (work / "blowup.toml").write_text(BLOWUP)
    scenes = {"tank": str(TANK), "missing": str(work / "missing.toml"), "directory": str(work),
              "garbage": str(work / "garbage.toml"), "blowup": str(work / "blowup.toml")}
    argv = ["run", scenes[scene], "--out", _outs(work)[out]]
    for option, index in options.items():
        values = VALUES[option]
        argv += [option, values[index % len(values)]]
    if "--steps" not in options and "--duration" not in options:
        argv += ["--steps", "2"]
    argv += extra
    before = sorted(work.rglob("*"))
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse: malformed values, unknown options
            code = exit.code
    assert code in (0, 1, 2), (argv, stderr.getvalue())
    if code != 0:
        assert sorted(work.rglob("*")) == before, argv
        assert stderr.getvalue().strip(), argv  # said why
