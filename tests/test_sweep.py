"""`python -m physics sweep`: the same sweep on local workers and on a Dask cluster the test starts
gives the same rows bit for bit, and those rows match runs made here independently; failing runs,
Ctrl+C and bad input."""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from physics.pipeline.simulation import Simulation
from physics.tools.sweep import COLUMNS, observed_order

ROOT = Path(__file__).resolve().parent.parent
T_HANDLE = ROOT / "assets" / "scenes" / "t_handle.toml"
SWEEP = [sys.executable, "-m", "physics", "sweep"]
# 2 integrators x 2 gyroscopic modes x 3 steps, 2 s each: 12 runs of 120 to 480 steps.
PLAN = ["--vary", "integrator=rk4,lie-midpoint", "--vary", "gyroscopic=implicit,explicit",
        "--vary", "dt=1/60,1/120,1/240", "--duration", "2"]
# Within every scene limit, yet divergent under explicit Euler (tests/test_runner.py explains it).
BLOWUP = ('[world]\ndt = 0.01\nintegrator = "explicit-euler"\ngyroscopic = "explicit"\n[[node]]\nname = "rocket"\n'
          'motion = "dynamic"\ninertia = [1.0, 2.0, 3.0]\nangular_velocity = [1e6, 1e6, 1e6]\n')


def _rows(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def _sweep(*args, timeout=300):
    return subprocess.run([*SWEEP, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


# The tests that read the two sweeps run on one xdist worker (`--dist loadgroup`), so that the
# cluster and the sweeps, a module-scoped fixture, are made once and not once per worker.
ON_ONE_WORKER = pytest.mark.xdist_group("sweeps")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Dask cluster of our own on 127.0.0.1: `dask scheduler` and `dask worker` with two
    single-threaded processes, started in a folder of their own (they read no file of ours)."""
    folder = tmp_path_factory.mktemp("cluster")
    dask = Path(sys.executable).with_name("dask")
    log = open(folder / "cluster.log", "w")
    processes = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", folder / "scheduler.json"], cwd=folder, stdout=log, stderr=log)]
    try:
        deadline = time.monotonic() + 60
        while not (folder / "scheduler.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads((folder / "scheduler.json").read_text())["address"]
        processes.append(subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                           "--no-dashboard"], cwd=folder, stdout=log, stderr=log))
        from distributed import Client
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()


@pytest.fixture(scope="module")
def local_and_cluster(tmp_path_factory, cluster):
    """The PLAN sweep of the T-handle run twice: on two local workers and on the test's cluster."""
    folder = tmp_path_factory.mktemp("sweeps")
    results = {}
    for name, where in (("local", ["--workers", "2"]), ("cluster", ["--scheduler", cluster])):
        out = folder / name
        result = _sweep(T_HANDLE, *PLAN, "--out", out, *where)
        assert result.returncode == 0, result.stderr
        results[name] = (out, _rows(out / "sweep.csv"), result)
    return results


@ON_ONE_WORKER
def test_cluster_and_local_sweeps_are_bit_identical(local_and_cluster):
    """Every row, hash and metric of the cluster's sweep equals the local sweep's exactly (tolerance
    0: the same runs must do the same arithmetic wherever they run); only wall_s may differ."""
    (_, local, _), (_, remote, _) = local_and_cluster["local"], local_and_cluster["cluster"]
    assert len(local) == len(remote) == 12
    assert list(local[0]) == ["integrator", "gyroscopic", "dt", *COLUMNS]
    for mine, theirs in zip(local, remote):
        assert {k: v for k, v in mine.items() if k != "wall_s"} == {k: v for k, v in theirs.items() if k != "wall_s"}
        assert len(mine["state_hash"]) == 64 and mine["error"] == ""


@ON_ONE_WORKER
def test_rows_match_independent_runs(local_and_cluster):
    """Each row against a run made here with plain `step(n)` and no per-step queries: the same final
    state hash (bit for bit), the same position error to the smallest-dt run (0 for that run,
    tolerance 0: equal hashes mean equal poses), an energy drift at least the end value's
    |E_end - E0| / |E0| (the column is the maximum over the run), and the conservative lie-midpoint
    at round-off (< 1e-12: it conserves E and world L to round-off, docs/fidelity.md)."""
    _, rows, _ = local_and_cluster["local"]
    ends = {}
    for row in rows:
        sim = Simulation.from_file(str(T_HANDLE))
        e0 = sum(sim.energy().values())
        for key in ("integrator", "gyroscopic", "dt"):
            sim.set(key, float(row[key]) if key == "dt" else row[key])
        sim.step(int(row["steps"]))
        assert sim.state_hash() == row["state_hash"]
        assert int(row["steps"]) == round(2 / float(row["dt"]))
        assert float(row["energy_drift"]) >= abs(sum(sim.energy().values()) - e0) / abs(e0)
        ends[(row["integrator"], row["gyroscopic"], row["dt"])] = sim.world_poses()[0]
        if row["integrator"] == "lie-midpoint":
            assert float(row["energy_drift"]) < 1e-12 and float(row["angular_momentum_drift"]) < 1e-12
    finest = repr(1 / 240)
    for row in rows:
        key = (row["integrator"], row["gyroscopic"])
        expected = np.linalg.norm(ends[(*key, row["dt"])] - ends[(*key, finest)], axis=1).max()
        assert float(row["position_error"]) == expected
        assert (expected == 0.0) == (row["dt"] == finest)


@ON_ONE_WORKER
def test_observed_orders(local_and_cluster):
    """The orders the sweep shows (position error against dt): rk4 is 4th order with the explicit
    gyroscopic term and 1st order with the implicit one (Bullet's backward-Euler split), lie-midpoint
    2nd order with either (its gyroscopic term is part of its own solve). Tolerance 0.3 (4th order)
    and 0.15: three step sizes near the asymptotic range."""
    _, rows, _ = local_and_cluster["local"]
    expected = {("rk4", "explicit"): (4.0, 0.3), ("rk4", "implicit"): (1.0, 0.15),
                ("lie-midpoint", "explicit"): (2.0, 0.15), ("lie-midpoint", "implicit"): (2.0, 0.15)}
    for (integrator, gyroscopic), (order, tolerance) in expected.items():
        line = [r for r in rows if r["integrator"] == integrator and r["gyroscopic"] == gyroscopic]
        dt, error = [float(r["dt"]) for r in line], [float(r["position_error"]) for r in line]
        assert observed_order(dt, error, min(dt)) == pytest.approx(order, abs=tolerance), (integrator, gyroscopic)


def test_observed_order_recovers_known_orders():
    """On exact data: e = 3 h^2 gives 2 (plain log-log slope); e = 5 |h^3 - h_ref^3| gives 3, where a
    plain slope would read 3.5 at these steps; values at round-off give no order. Tolerance 0.01:
    the estimator's grid."""
    h = np.array([1 / 60, 1 / 120, 1 / 240, 1 / 480])
    assert observed_order(h, 3 * h ** 2) == pytest.approx(2.0, abs=0.01)
    assert observed_order(h, 5 * np.abs(h ** 3 - h[-1] ** 3), h[-1]) == pytest.approx(3.0, abs=0.01)
    assert observed_order(h, [1e-15, 3e-15, 2e-15, 1e-15]) is None


@ON_ONE_WORKER
def test_plots_are_written(local_and_cluster):
    """One PNG per metric when dt is varied, named in the summary."""
    out, _, result = local_and_cluster["local"]
    for metric in ("energy_drift", "angular_momentum_drift", "position_error"):
        path = out / f"{metric}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and str(path) in result.stdout


def test_a_failing_run_fills_its_row_and_the_others_go_on(tmp_path):
    """Explicit Euler diverges on the rocket in its first step: its row names the error and the node
    and has no metrics; the lie-midpoint run finishes (its hash is an independent run's); exit 1."""
    scene = tmp_path / "blowup.toml"
    scene.write_text(BLOWUP)
    result = _sweep(scene, "--vary", "integrator=explicit-euler,lie-midpoint", "--steps", 10,
                    "--out", tmp_path / "out", "--workers", 1)
    assert result.returncode == 1, result.stderr
    failed, finished = _rows(tmp_path / "out" / "sweep.csv")
    assert "DivergenceError" in failed["error"] and "'rocket'" in failed["error"]
    assert failed["energy_drift"] == failed["state_hash"] == "" and failed["steps"] == "10"
    sim = Simulation.from_file(str(scene))
    sim.set("integrator", "lie-midpoint")
    sim.step(10)
    assert finished["error"] == "" and finished["state_hash"] == sim.state_hash()
    assert "Traceback" not in result.stderr and "rocket" in result.stderr


def test_ctrl_c_keeps_the_finished_rows(tmp_path):
    """A terminal's Ctrl+C (SIGINT to the whole process group) while a long run is going: exit 130,
    no traceback, sweep.csv holds the finished rows whole, and no process of the sweep is left."""
    out = tmp_path / "out"
    process = subprocess.Popen([*SWEEP, str(T_HANDLE), "--vary", "dt=1/60,1/4000,1/4001", "--duration", "30",
                                "--out", str(out), "--workers", "1"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for_rows(process, out, 1)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    rows = _rows(out / "sweep.csv")
    assert 1 <= len(rows) < 3
    assert all(len(row["state_hash"]) == 64 and row["error"] == "" for row in rows)
    _assert_no_process_left(process)


def test_sigterm_to_the_sweep_alone_stops_it_with_one_line_and_no_process_left(tmp_path):
    """`timeout` and service managers signal the sweep's process, not its group: a SIGTERM while
    many short runs finish exits 143 with the one "interrupted" line, keeps the finished rows, and
    leaves no worker running. (The scheduler, in the sweep's process, times every collection with a
    gc callback, where a stop raised would be dropped; a signal arriving there is rare here, and
    tests/test_signals.py makes it happen.)"""
    out = tmp_path / "out"
    process = subprocess.Popen([*SWEEP, str(T_HANDLE), "--vary", "iterations=" + ",".join(map(str, range(1, 41))),
                                "--vary", "erp=0.1,0.2,0.3,0.4,0.5", "--steps", "600", "--out", str(out),
                                "--workers", "2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        _wait_for_rows(process, out, 5)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 143, err
    progress = re.compile(r"^\[[ #=>-]*\] \d+/\d+ runs")       # the progress bar's redrawn line
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and not progress.match(line)]
    assert lines == [f"interrupted (SIGTERM): the finished runs are in {out / 'sweep.csv'}"], err
    assert all(row["error"] == "" for row in _rows(out / "sweep.csv"))
    _assert_no_process_left(process)


def _wait_for_rows(process, out, rows):
    """Until the running sweep `process` has written `rows` finished rows to out/sweep.csv."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if (out / "sweep.csv").exists() and len(_rows(out / "sweep.csv")) >= rows:
            break
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()


def _assert_no_process_left(process):
    """Fails unless every process of the sweep's session (its workers) is gone within 20 s."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    pytest.fail("worker processes of the stopped sweep are still running")


@pytest.mark.parametrize("vary, named", [("dt=1/60,-1", ["--vary dt", "'-1'"]),
                                         ("friction=0.5", ["--vary friction", "unknown setting"]),
                                         ("integrator=rk5", ["--vary integrator", "'rk5'", "rk4"])])
def test_bad_input_exits_2_naming_key_and_value(tmp_path, vary, named):
    result = _sweep(T_HANDLE, "--vary", vary, "--steps", 1, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert all(part in result.stderr for part in named), result.stderr
    assert not (tmp_path / "out").exists()


def test_a_grid_past_the_run_budget_is_refused_before_it_is_listed(tmp_path):
    """Eleven --vary options of 2 to 4 values (1,179,648 runs, the reproducer) are refused by `runs`
    before it lists one; eight on the command line (10,368 runs) exit 2 at once with one line
    naming the count and the budget, and write nothing."""
    from physics.tools.sweep import RUNS_MAX, SweepError, runs

    with pytest.raises(SweepError, match=f"1179648 runs; a sweep takes at most {RUNS_MAX}"):
        runs({f"k{i}": list(range(4 if i < 8 else 3 if i < 10 else 2)) for i in range(11)})
    vary = ["dt=1/60,1/120,1/240,1/480", "substeps=1,2,3,4", "iterations=1,2,3,4", "sor=0.5,1,1.5",
            "erp=0.1,0.2,0.3", "cfm=0,0.1,0.2", "integrator=rk4,lie-midpoint", "gyroscopic=off,explicit,implicit"]
    args = [x for item in vary for x in ("--vary", item)]
    started = time.monotonic()
    result = _sweep(T_HANDLE, *args, "--steps", 1, "--out", tmp_path / "out")
    assert result.returncode == 2 and "runs; a sweep takes at most" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
    assert time.monotonic() - started < 60      # refused at parse time, not after building the grid


def test_an_unusable_scheduler_address_exits_2_before_any_output(tmp_path):
    result = _sweep(T_HANDLE, "--vary", "dt=1/60", "--steps", 1, "--out", tmp_path / "out", "--scheduler", "nowhere")
    assert result.returncode == 2
    assert result.stderr.startswith("error: --scheduler: cannot reach 'nowhere'"), result.stderr
    assert not (tmp_path / "out").exists()
