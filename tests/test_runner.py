"""The headless runner's contract: shapes, row 0 initial, atomic output, exit code 2, CSV."""
import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from physics.__main__ import main
from physics.trajectory import csv_columns
from physics.simulation import Simulation

ROOT = Path(__file__).resolve().parent.parent
TANK = ROOT / "assets" / "scenes" / "tank.toml"


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


def test_csv_output(tmp_path):
    out = tmp_path / "tank.csv"
    assert main(["run", str(TANK), "--steps", "4", "--record-every", "2", "--out", str(out), "--quiet"]) == 0
    with open(out, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == csv_columns()
    count = len(Simulation.from_file(TANK).names)
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
BLOWUP = ('[world]\ndt = 0.01\nintegrator = "explicit-euler"\ngyroscopic = "explicit"\n[[node]]\nname = "rocket"\n'
          'motion = "dynamic"\ninertia = [1.0, 2.0, 3.0]\nangular_velocity = [1e6, 1e6, 1e6]\n')


@pytest.mark.filterwarnings("error::RuntimeWarning")  # numpy's overflow warnings must not leak out
@pytest.mark.parametrize("record_every, when", [(1, "at step 7 (t = 0.07 s)"),
                                                (10, "between step 0 (t = 0 s, finite) and step 10 (t = 0.1 s)")])
def test_non_finite_state_exits_1_naming_the_node(tmp_path, capsys, record_every, when):
    """Explicit Euler on a body spinning at 1e6 rad/s about no principal axis: each step squares
    omega (omega' ≈ h omega², Euler's equations) and it overflows at step 7: the runner stops with
    code 1, names the node and the step (or the two recorded steps it lies between), warns nothing
    else and writes nothing."""
    scene = tmp_path / "blowup.toml"
    scene.write_text(BLOWUP)
    out = tmp_path / "out.npz"
    args = ["run", str(scene), "--steps", "30", "--record-every", str(record_every), "--out", str(out), "--quiet"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "'rocket'" in err and when in err, err
    assert err.count("\n") == 1  # one line: ours
    assert not out.exists()


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


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    """An error while writing removes the temporary file and leaves any old output untouched."""
    out = tmp_path / "tank.npz"
    out.write_bytes(b"old")

    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", explode)
    with pytest.raises(OSError):
        main(["run", str(TANK), "--steps", "2", "--out", str(out), "--quiet"])
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tank.npz"]


def test_help_lists_every_integrator():
    from physics.integrators import INTEGRATORS
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
                "--relax": ("relax", "off", False), "--shake": ("shake", "on", True), "--substeps": ("substeps", "2", 2)}


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
