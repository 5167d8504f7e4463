"""`python -m physics compare` and physics.tools.compare.Comparison: variants in lockstep, measured.

Expectations derived independently of the code under test: the T-handle's flip (the Dzhanibekov
effect) that a run without the gyroscopic term cannot make; the closed-form angular momentum of a
body whose body-frame angular velocity stays constant; conservation by the Lie-group integrators;
fresh simulations stepped here and compared with scipy's rotation angle.
"""
import csv
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physics.__main__ import main
from physics.tools.compare import Comparison, parse_settings
from physics.pipeline.simulation import Simulation

ROOT = Path(__file__).resolve().parent.parent
T_HANDLE = ROOT / "assets" / "scenes" / "t_handle.toml"
TANK = ROOT / "assets" / "scenes" / "tank.toml"
COLUMNS = ["variant", "time", "max_position_error", "max_rotation_error", "energy_drift", "angular_momentum_drift"]


def read(out):
    """compare.csv -> (header, {label: (rows, 5) float array of the other columns})."""
    with open(out / "compare.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    runs = {}
    for row in rows[1:]:
        runs.setdefault(row[0], []).append([float(x) for x in row[1:]])
    return rows[0], {label: np.array(values) for label, values in runs.items()}


@pytest.fixture(scope="module")
def t_handle_run(tmp_path_factory):
    """The T-handle for 10 s: two variants and a dt = 1/960 lie-midpoint-4 reference (about 2 s)."""
    out = tmp_path_factory.mktemp("compare") / "t_handle"
    code = main(["compare", str(T_HANDLE), "--variant", "gyroscopic=off", "--variant", "integrator=lie-midpoint-4",
                 "--variant", "integrator=lie-midpoint", "--reference", "integrator=lie-midpoint-4,dt=1/960",
                 "--duration", "10", "--out", str(out), "--quiet"])
    assert code == 0
    return out, *read(out)


def test_t_handle_flip_and_convergence(t_handle_run):
    """Without the gyroscopic term the handle never flips, so once the
    reference has flipped (first flip at 2.63 s, the scene's analysis) the two differ by about a
    half turn: more than 1 rad within 10 s. lie-midpoint-4 at dt = 1/60 stays within 1e-3 rad of
    the dt = 1/960 reference (2.1e-4 rad measured: a 4th-order method's error, 16^4 times the
    reference's own)."""
    _, header, runs = t_handle_run
    off, fourth, main_run = runs["gyroscopic=off"], runs["integrator=lie-midpoint-4"], runs["main"]
    assert off[-1, 0] == pytest.approx(10.0, abs=1e-9)
    over = off[off[:, 2] > 1.0, 0]
    assert over.size and over[0] < 10.0
    assert 1.5 < over[0] < 3.5          # during the reference's first flip, not by accumulated drift
    assert off[:, 2].max() > 3.0        # a half turn apart after it
    assert fourth[:, 2].max() < 1e-3
    assert 1e-5 < main_run[:, 2].max() < 0.1   # 2nd order at 1/60: measurably worse, still close (3.3e-2)


def test_t_handle_conservation(t_handle_run):
    """lie-midpoint and lie-midpoint-4 conserve energy and world L of a free body to round-off
    (1e-12: 600-9600 steps of ~1e-16 each, measured 3e-14). Without the gyroscopic term and with
    no torque, Euler's equations leave omega_body constant: kinetic energy is constant (exactly: the
    integrator never changes omega_body), and L = R I omega_body turns with R about the constant
    omega_world = R omega_body: |L - L0| = 2 |L0_perp| |sin(phi / 2)| with L0_perp the part of L0
    across omega (the handle starts unrotated at rest: world = body axes, L0 = I omega) and phi the
    angle turned. lie-midpoint is the implicit midpoint rule on the group: for a constant omega its
    step is the Cayley map, (I - h W / 2)^-1 (I + h W / 2), a turn of 2 atan(h |omega| / 2) per step
    (0.06 % short of h |omega| at h = 1/60, which the comparison resolves)."""
    _, _, runs = t_handle_run
    for label in ("main", "integrator=lie-midpoint-4", "integrator=lie-midpoint", "reference"):
        assert np.abs(runs[label][:, 3:]).max() < 1e-12, label
    off = runs["gyroscopic=off"]
    assert np.all(off[:, 3] == 0.0)
    omega, inertia = np.array([0.01, 5.0, 0.0]), np.array([1.0, 2.0, 3.0])
    L0 = inertia * omega
    unit = omega / np.linalg.norm(omega)
    across = np.linalg.norm(L0 - (L0 @ unit) * unit)
    steps = np.round(off[:, 0] * 60)
    phi = steps * 2.0 * np.arctan(np.linalg.norm(omega) / 60 / 2.0)
    expected = 2.0 * across * np.abs(np.sin(phi / 2.0)) / np.linalg.norm(L0)
    # 1e-14 of a 2e-3 signal: round-off of 600 products of rotations (1.5e-17 measured)
    np.testing.assert_allclose(off[:, 4], expected, rtol=0, atol=1e-14)


def test_readouts_are_fresh_runs(t_handle_run):
    """Each run is what a fresh Simulation with its settings shows: step them here and recompute the
    last row's divergence (scipy's rotation angle) and drifts. 1e-12: the same states, different
    angle formulas (both accurate to ~1e-15 rad)."""
    _, _, runs = t_handle_run
    reference = Simulation.from_file(T_HANDLE)
    reference.set("integrator", "lie-midpoint-4")
    reference.set("dt", 1 / 960)
    off = Simulation.from_file(T_HANDLE)
    off.set("gyroscopic", "off")
    L0 = off.momentum()["angular"].copy()
    reference.step(9600)
    off.step(600)
    r_ref, r_off = reference.world_poses()[1], off.world_poses()[1]
    angles = Rotation.from_matrix(np.einsum("nji,njk->nik", r_ref, r_off)).magnitude()
    distance = np.linalg.norm(reference.world_poses()[0] - off.world_poses()[0], axis=1)
    last = runs["gyroscopic=off"][-1]
    assert last[0] == off.time
    assert last[1] == pytest.approx(distance.max(), abs=1e-12)
    assert last[2] == pytest.approx(angles.max(), abs=1e-12)
    assert last[4] == pytest.approx(np.linalg.norm(off.momentum()["angular"] - L0) / np.linalg.norm(L0), abs=1e-12)


def test_csv_contract(tmp_path):
    """Columns exactly as contracted; one row per run per recorded step, main first, the variants
    as given, the reference last; row 0 is the start (every readout 0)."""
    out = tmp_path / "out"
    assert main(["compare", str(T_HANDLE), "--variant", "gyroscopic=off,integrator=rk4", "--reference",
                 "--steps", "10", "--record-every", "3", "--out", str(out), "--quiet"]) == 0
    with open(out / "compare.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == COLUMNS
    labels = ["main", "gyroscopic=off,integrator=rk4", "reference"]
    assert [row[0] for row in rows[1:]] == labels * 4          # steps 0, 3, 6, 9: evenly spaced
    for k, step in enumerate((0, 3, 6, 9)):
        for row in rows[1 + 3 * k: 4 + 3 * k]:
            assert float(row[1]) == pytest.approx(step / 60, abs=1e-12)
    assert all(float(x) == 0.0 for row in rows[1:4] for x in row[1:])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["compare.csv", "compare.png"]


def test_variant_equal_to_main_is_bitwise_main(tmp_path):
    """A variant with the scene's own settings is a separate simulation that shows exactly the main
    run: zero divergence and the same drifts, bit for bit (the tank: contacts, solver, sleeping)."""
    out = tmp_path / "tank"
    assert main(["compare", str(TANK), "--variant", "counteract=on,sleep=true", "--steps", "90",
                 "--out", str(out), "--quiet"]) == 0
    _, runs = read(out)
    same = runs["counteract=on,sleep=true"]
    assert np.all(same[:, 1:3] == 0.0)
    np.testing.assert_array_equal(same, runs["main"])
    assert np.abs(runs["main"][:, 3]).max() > 0       # the tank moves: the drifts are not trivially zero


def test_variant_equal_to_main_with_reference(t_handle_run):
    _, _, runs = t_handle_run
    np.testing.assert_array_equal(runs["integrator=lie-midpoint"], runs["main"])
    assert runs["main"][:, 2].max() > 0


def test_sampling_a_dt_that_does_not_divide(tmp_path):
    """A variant at dt = 1/50 beside main at 1/60 is sampled at its last step not after each main
    step: time = floor(50 t) / 50."""
    out = tmp_path / "out"
    assert main(["compare", str(T_HANDLE), "--variant", "dt=1/50", "--variant", "dt=1/120,substeps=2",
                 "--steps", "60", "--out", str(out), "--quiet"]) == 0
    _, runs = read(out)
    t = runs["main"][:, 0]
    np.testing.assert_allclose(runs["dt=1/50"][:, 0], np.floor(50 * t + 1e-6) / 50, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs["dt=1/120,substeps=2"][:, 0], t, rtol=0, atol=1e-12)


def test_png_is_a_real_plot(t_handle_run):
    """Four panels with coloured lines: a good part of the image is neither white nor grey."""
    import matplotlib.image

    out, _, _ = t_handle_run
    image = matplotlib.image.imread(out / "compare.png")[..., :3]
    assert image.shape[0] > 400 and image.shape[1] > 600
    ink = (image < 0.9).any(axis=-1)
    colour = np.ptp(image, axis=-1) > 0.2                     # tab:blue, orange, green, red lines
    assert ink.mean() > 0.02 and colour.mean() > 0.005


@pytest.mark.parametrize("arguments, words", [
    (["--variant", "gyroscopic=of"], ["gyroscopic=of", "'gyroscopic'", "'of'"]),
    (["--variant", "integrator=rk4", "--variant", "warp=9"], ["warp=9", "'warp'", "'9'", "unknown setting"]),
    (["--variant", "dt=1/0"], ["dt=1/0", "'dt'", "'1/0'"]),
    (["--variant", "rk4"], ["rk4", "key=value"]),
    (["--variant", "gravity=[0,1]"], ["gravity", "3 numbers"]),
    (["--variant", "substeps=2.5"], ["substeps", "'2.5'", "integer"]),
    (["--variant", "dt=1/50", "--variant", "dt=1/50"], ["dt=1/50", "twice"]),
    ([f"--variant=iterations={n}" for n in range(1, 6)], ["iterations=5", "at most 4"]),
    (["--reference", "dt=0"], ["--reference", "'dt'", "0"]),
    (["--record-every", "0"], ["--record-every", "0"]),
])
def test_bad_input_exits_2_and_leaves_nothing(tmp_path, capsys, arguments, words):
    out = tmp_path / "out"
    assert main(["compare", str(T_HANDLE), *arguments, "--steps", "5", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    for word in words:
        assert word in captured.err
    assert list(tmp_path.iterdir()) == []


def test_bad_scene_and_directory(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "none.toml"), "--steps", "5", "--out", str(tmp_path / "o")]) == 2
    assert "none.toml" in capsys.readouterr().err
    assert main(["compare", str(T_HANDLE), "--steps", "5", "--out", str(tmp_path / "no" / "o")]) == 2
    assert "parent directory does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_command_line(tmp_path):
    """The public entry point, as a user runs it: exit 2 and one message for a bad setting."""
    result = subprocess.run([sys.executable, "-m", "physics", "compare", str(T_HANDLE), "--variant",
                             "integrator=nope", "--steps", "3", "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "'nope'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_nothing_and_keeps_existing_output(tmp_path, monkeypatch):
    """Output is atomic: a failure while plotting leaves no directory (or the previous files)."""
    import physics.tools.compare

    out = tmp_path / "out"
    argv = ["compare", str(T_HANDLE), "--steps", "3", "--out", str(out), "--quiet"]

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(physics.tools.compare, "plot", broken)
    assert main(argv) == 1
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    out.mkdir()
    (out / "notes.txt").write_text("kept")
    (out / "compare.csv").write_text("old")
    assert main(argv) == 0
    assert (out / "notes.txt").read_text() == "kept"
    assert (out / "compare.csv").read_text().startswith(",".join(COLUMNS))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_comparison_api():
    """A variant added later is brought to the comparison's time and is the same run as one added at
    the start (bit for bit); a comparison from a snapshot continues the snapshotted run exactly."""
    early = Comparison(T_HANDLE)
    early.add_variant("rk4", "integrator=rk4")
    early.advance(30)
    late = Comparison(T_HANDLE)
    late.advance(30)
    late.add_variant("rk4", {"integrator": "rk4"})
    assert late.labels == ["main", "rk4"]
    for a, b in zip(early.poses("rk4"), late.poses("rk4")):
        np.testing.assert_array_equal(a, b)
    assert early.readouts()["rk4"] == late.readouts()["rk4"]
    assert early.readouts()["rk4"]["max_rotation_error"] > 0
    late.remove("rk4")
    assert late.labels == ["main"]
    with pytest.raises(ValueError, match="main"):
        late.remove("main")

    sim = Simulation.from_file(TANK)
    sim.step(40)
    snapshot = sim.snapshot()
    sim.step(20)
    continued = Comparison(TANK, snapshot)
    continued.add_variant("same", "sleep=on")      # the tank's own value: not a change, no wake-up
    continued.advance(20)
    for a, b, c in zip(sim.world_poses(), continued.poses("main"), continued.poses("same")):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_a_diverging_variant_stops_and_the_others_run_on():
    """Explicit Euler with the explicit gyroscopic term at dt = 0.5 s gains energy without bound on
    the spinning handle; its readouts turn NaN where it stops, main runs to the end."""
    comparison = Comparison(T_HANDLE)
    comparison.add_variant("blow-up", "integrator=explicit-euler,gyroscopic=explicit,dt=0.5")
    comparison.advance(2400)
    readouts = comparison.readouts()
    assert list(comparison.stopped) == ["blow-up"]
    assert all(math.isnan(readouts["blow-up"][key]) for key in ("max_rotation_error", "energy_drift"))
    assert readouts["main"]["time"] == pytest.approx(40.0, abs=1e-9)
    assert readouts["blow-up"]["time"] < 40.0


def test_parse_settings():
    assert parse_settings("dt=1/960, gravity=[0,-9.81,0],counteract=off,iterations=4") == {
        "dt": 1 / 960, "gravity": [0.0, -9.81, 0.0], "counteract": False, "iterations": 4}
    assert parse_settings("gravity=0;-1.5;0,warm_start=true")["gravity"] == [0.0, -1.5, 0.0]


# --- the app's uses: an external main run, save / restore, promote, a replayed branch, the crash ------

CAR = ROOT / "assets" / "scenes" / "car.toml"


def test_external_main_is_read_never_stepped_and_variants_are_fresh_runs():
    """`Comparison(main=sim)`: the comparison never steps `sim` (its owner does); a variant started
    at step 30 of it and stepped 90 more is bit for bit a fresh run stepped 30 steps with the
    scene's settings, then 90 with gyroscopic off (SHA-256 state hashes: exact). Save at step 60,
    run on, restore: the variant's state is the one it had (hash), and stepping on reaches the
    same final hash."""
    sim = Simulation.from_file(T_HANDLE)
    sim.step(30)
    comparison = Comparison(sim.scene, main=sim)
    comparison.add_variant("off", {"gyroscopic": "off"})
    sim.step(30)
    comparison.step_to(sim.time)
    saved, at_60 = comparison.save(), comparison.simulation("off").state_hash()
    sim.step(60)
    comparison.step_to(sim.time)
    assert sim.step_count == 120 and comparison.simulation("off").step_count == 120
    fresh = Simulation.from_file(T_HANDLE)
    fresh.step(30)
    fresh.set("gyroscopic", "off")
    fresh.step(90)
    final = comparison.simulation("off").state_hash()
    assert final == fresh.state_hash()
    assert comparison.restore(saved) == [] and comparison.simulation("off").state_hash() == at_60
    comparison.step_to(sim.time)
    assert comparison.simulation("off").state_hash() == final
    # promote: the variant is main now (its own simulation), still not stepped by the comparison
    promoted = comparison.promote("off")
    assert comparison.simulation("main") is promoted and comparison.variants == []
    comparison.step_to(sim.time + 1.0)
    assert promoted.step_count == 120


def test_added_simulation_applies_its_recorded_inputs_as_the_timeline_replays_them():
    """A timeline branch (gyroscopic off set at step 20, integrator rk4 at 50) cut off by a change
    at step 10: adopted as a ghost replayed to step 10 and stepped to step 80 in lockstep, every
    state matches the hash the branch recorded at its step."""
    from physics.pipeline.timeline import Timeline
    sim = Simulation.from_file(T_HANDLE)
    timeline = Timeline(sim)
    timeline.step(20)
    timeline.apply("set", "gyroscopic", "off")
    timeline.step(30)
    timeline.apply("set", "integrator", "rk4")
    timeline.step(30)
    timeline.seek(10)
    timeline.apply("set", "exponential", "truncated")     # branches: steps 10-80 become `previous`
    branch = timeline.previous
    comparison = Comparison(sim.scene, main=sim)
    ghost = Simulation(sim.scene)
    branch.replay(ghost, 10)
    comparison.add_simulation("branch", ghost, branch.inputs)
    for step in (20, 21, 50, 51, 80):
        timeline.step(step - sim.step_count)
        comparison.step_to(sim.time)
        assert ghost.step_count == step and ghost.state_hash() == branch.hashes[step]


def test_crash_queries():
    """The car's loose children are its three dynamic cargo bodies (their carrier: the car);
    the impact step is the one the car's speed first falls by over 1 m/s in one step, found here
    by stepping a plain run; with counteraction on and off the cargo's world velocities differ by
    about the car's 10 m/s once the car has stopped (on: the cargo flies on; off: it stops with
    the car; 5 m/s of slack for the cargo meeting the front panel)."""
    from physics.tools.compare import impact_step, loose_children
    sim = Simulation.from_file(CAR)
    loose, nearest = loose_children(sim)
    assert [sim.names[i] for i in loose] == ["box_1", "box_2", "ball"]
    car = sim.names.index("car")
    assert set(nearest[loose]) == {car}
    plain, before = Simulation.from_file(CAR), 10.0
    for _ in range(600):
        plain.step(1)
        now = np.linalg.norm(plain.world().velocity[car])
        if abs(now - before) > 1.0:
            break
        before = now
    assert 60 < plain.step_count < 120     # the front meets the wall 13 m away at 10 m/s: about 1.3 s
    assert impact_step(sim.scene, sim.snapshot(), car, 600, 1.0) == plain.step_count
    assert impact_step(sim.scene, sim.snapshot(), car, plain.step_count - 1, 1.0) is None
    comparison = Comparison(sim.scene, main=sim)
    comparison.add_variant("on", {"counteract": True})
    comparison.add_variant("off", {"counteract": False})
    comparison.step_to((plain.step_count + 2) * sim.settings.dt)
    assert np.max(comparison.velocity_difference("on", "off", loose)) > 5.0


def test_the_summary_names_each_run_whole(tmp_path, capsys):
    """The summary's table cut labels at 27 characters ("integrator=rk4,gyroscopic=e"), where the
    README says a run's label is its text as given: the column is as wide as the longest."""
    label = "integrator=rk4,gyroscopic=explicit"
    assert main(["compare", "t_handle", "--variant", label, "--steps", "5", "--out", str(tmp_path / "out")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("integrator="))
    assert row.split()[0] == label and len(row.split()) == 5
