"""The command line's edges: one validation for `run`, `compare` and `sweep` (physics.tools.options),
paths checked before any cluster or simulation starts, two-line usage errors, Ctrl+C at any moment
(the imports and the Dask cluster's start included) as one line and exit 130, workers lost in a
sweep named as such and their runs retried, a warning as one line."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from physics.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
T_HANDLE = ROOT / "assets" / "scenes" / "t_handle.toml"
PENDULUM = ROOT / "assets" / "scenes" / "pendulum.toml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _lines(text):
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("command", [
    ["compare", str(PENDULUM), "--out", "{tmp}/c"],
    ["sweep", str(PENDULUM), "--vary", "dt=1/60", "--out", "{tmp}/s", "--workers", "1"],
    ["run", str(PENDULUM), "--out", "{tmp}/r.npz"],
])
def test_every_command_refuses_an_endless_duration_before_running(tmp_path, capsys, command):
    """--duration 1e20 (6e21 steps at 1/60 s): `compare` and `sweep` accepted it and ran for ever,
    `run` refused it only through its memory check. Now all three exit 2 with one line naming the
    option, within seconds, and write nothing."""
    argv = [part.format(tmp=tmp_path) for part in command] + ["--duration", "1e20"]
    started = time.monotonic()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(_lines(err)) == 1 and "--duration" in err and "1e+20" in err, err
    assert time.monotonic() - started < 30
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["compare", str(PENDULUM)], ["sweep", str(PENDULUM), "--vary", "dt=1/60"],
                                     ["run", str(PENDULUM)]])
def test_every_command_refuses_too_many_steps(tmp_path, capsys, command):
    """--steps past 1e9 (physics.tools.options.STEPS_MAX): exit 2, one line, for every command alike."""
    out = str(tmp_path / ("r.npz" if command[0] == "run" else "o"))
    assert main(command + ["--steps", str(10**12), "--out", out]) == 2
    err = capsys.readouterr().err
    assert len(_lines(err)) == 1 and "--steps" in err and "1e+09" in err, err


def test_sweep_checks_its_output_before_any_cluster_starts(tmp_path, capsys, monkeypatch):
    """`sweep --out /proc/x` failed with exit 1 "internal error", and only after the cluster had
    started. Now: exit 2, one line naming --out, and no cluster (its start would fail the test)."""
    import physics.tools.sweep as sweep

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster started before the output was checked")
    monkeypatch.setattr(sweep, "_local_cluster", no_cluster)
    monkeypatch.setattr(sweep, "warm_up", no_cluster)
    for out in ("/proc/x", "/proc/self/x", str(tmp_path / "missing" / "x")):
        assert main(["sweep", str(PENDULUM), "--vary", "dt=1/60", "--steps", "2", "--out", out]) == 2
        err = capsys.readouterr().err
        assert len(_lines(err)) == 1 and "--out" in err and "internal error" not in err, err


def test_special_files_are_refused_as_outputs(tmp_path, capsys):
    """A FIFO named x.npz is no file to replace atomically (os.replace would put a regular file in
    its place): `run` refuses it; `compare` refuses it as a directory."""
    fifo = tmp_path / "x.npz"
    os.mkfifo(fifo)
    assert main(["run", str(PENDULUM), "--steps", "2", "--out", str(fifo)]) == 2
    assert "special file" in capsys.readouterr().err
    assert main(["compare", str(PENDULUM), "--steps", "2", "--out", str(fifo)]) == 2
    assert "--out" in capsys.readouterr().err
    assert fifo.exists() and not fifo.is_file()


def test_workers_are_checked_with_the_other_options(tmp_path, capsys):
    assert main(["sweep", str(PENDULUM), "--vary", "dt=1/60", "--steps", "2", "--out", str(tmp_path / "s"),
                 "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, command", [
    (["run", str(PENDULUM), "--bogus"], "run"),
    (["run", str(PENDULUM), "--steps", "x"], "run"),
    (["compare", str(PENDULUM)], "compare"),
    (["sweep", str(PENDULUM), "--steps", "2", "--out", "o"], "sweep"),
    (["teleport"], None),
    ([], None),
])
def test_a_usage_error_is_two_lines(capsys, argv, command):
    """Argparse printed 5-14 lines of usage; now the short usage with where the help is, and the
    error: two lines, exit 2."""
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 2, err
    prog = "python -m physics" + (f" {command}" if command else "")
    assert lines[0].startswith(f"usage: {prog} ") and lines[0].endswith(f"({prog} --help)"), lines[0]
    assert lines[1].startswith("error: "), lines[1]


# Ctrl+C at a known moment: an import hook (or a patched LocalCluster) sends the process SIGINT itself.
INTERRUPT_DURING_IMPORT = textwrap.dedent("""
    import os, runpy, signal, sys
    class Hook:
        def find_spec(self, name, path=None, target=None):
            if name == "physics.tools.compare":
                os.kill(os.getpid(), signal.SIGINT)
            return None
    sys.meta_path.insert(0, Hook())
    sys.argv = ["physics", "run", sys.argv[1], "--steps", "2", "--out", sys.argv[2]]
    runpy.run_module("physics", run_name="__main__", alter_sys=True)
""")


def test_ctrl_c_while_starting_is_one_line_and_exit_130(tmp_path):
    """A Ctrl+C while `python -m physics` still imports (numpy, numba: a second or more) printed a
    28-line traceback; now one line, exit 130, no output."""
    out = tmp_path / "x.npz"
    result = subprocess.run([sys.executable, "-c", INTERRUPT_DURING_IMPORT, str(PENDULUM), str(out)], cwd=ROOT,
                            env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 130, result.stderr
    assert _lines(result.stderr) == ["interrupted while starting; no output written"], result.stderr
    assert not out.exists()


INTERRUPT_DURING_CLUSTER_START = textwrap.dedent("""
    import os, signal, sys
    import distributed

    class Interrupted(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)     # Ctrl+C as the cluster starts
            super().__init__(*args, **kwargs)

    if __name__ == "__main__":
        distributed.LocalCluster = Interrupted
        from physics.__main__ import main
        sys.exit(main(["sweep", sys.argv[1], "--vary", "dt=1/60", "--steps", "2", "--out", sys.argv[2],
                       "--workers", "1"]))
""")


def test_ctrl_c_while_the_cluster_starts_is_one_line_and_exit_130(tmp_path):
    """The workers start with SIGINT blocked (so that a terminal's Ctrl+C stops this process alone),
    which used to drop a Ctrl+C in that second: the sweep then ran to its end. Now it is kept and
    stops the sweep once the cluster is up: one line, exit 130."""
    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPT_DURING_CLUSTER_START)
    result = subprocess.run([sys.executable, str(script), str(PENDULUM), str(tmp_path / "out")], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 130, result.stderr[-3000:]
    assert _lines(result.stderr) == ["interrupted (SIGINT): no run had started"], result.stderr[-3000:]


def kill_the_worker_once(scene, values, steps, marker):
    """A sweep case whose first attempt kills its worker process (a segfault, the OOM killer)."""
    from physics.tools.sweep import _run
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return _run(scene, values, steps)


def kill_the_worker(scene, values, steps):
    os._exit(1)


def test_a_lost_worker_is_named_and_its_run_retried(tmp_path):
    """Runs lost with their worker were reported as "cancelled for reason: already forgotten" (or
    a KilledWorker) and not retried. With the scheduler giving up on a task at its first lost worker
    (allowed-failures 0, so that the sweep's own retry is what is tested), a case whose worker dies
    once is run again on the workers left and finishes; one whose worker always dies gets the row
    "worker died while running case k"."""
    import functools
    import logging

    import cloudpickle
    import dask
    from distributed import Client, LocalCluster

    from physics.io.scene import load_scene
    from physics.tools.sweep import RETRIES, execute

    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the workers need not import this file
    scene = load_scene(PENDULUM)
    plan, steps = [{"dt": 1 / 60}], [3]
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                         silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        once = functools.partial(kill_the_worker_once, marker=str(tmp_path / "died"))
        results = execute(client, scene, plan, steps, tmp_path / "once.csv", task=once)
        assert "error" not in results[0] and len(results[0]["state_hash"]) == 64, results[0]
        assert (tmp_path / "died").exists()
        client.wait_for_workers(1, timeout=60)
        results = execute(client, scene, plan, steps, tmp_path / "always.csv", task=kill_the_worker)
    error = results[0]["error"]
    assert error.startswith("worker died while running case 1") and f"tried {RETRIES + 1} times" in error, error


def test_a_warning_is_one_line(tmp_path):
    """Shapes that start inside one another: the runner says so in one line ("warning: ..."), not
    Python's two-line warning with a source line, and runs."""
    scene = tmp_path / "overlap.toml"
    scene.write_text("".join(f'[[node]]\nname = "box{i}"\nmotion = "dynamic"\n'
                             'shape = { type = "box", size = [0.2, 0.2, 0.2] }\n' for i in range(2)))
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(scene), "--steps", "2", "--quiet",
                             "--out", str(tmp_path / "x.npz")], cwd=ROOT, env=ENV, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert _lines(result.stderr) == ["warning: 1 shape pair starts inside one another (deeper than 1 mm); the "
                                     "deepest: 'box0' and 'box1', 0.2 m: pushed apart at most at "
                                     "max_contact_push_speed = 3 m/s"], result.stderr


def test_a_sweep_beside_another_cluster_prints_no_port_warning(tmp_path):
    """Dask's scheduler serves HTTP on port 8787 by default, dashboard or not: a sweep started while
    another cluster (another sweep, a notebook) held that port printed three lines of warning. Held
    here by a listening socket, as another cluster would."""
    import socket
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            held.bind(("0.0.0.0", 8787))
        except OSError:
            pass        # already taken by something else: the same situation
        held.listen()
        result = subprocess.run([sys.executable, "-m", "physics", "sweep", str(PENDULUM), "--vary", "dt=1/60",
                                 "--steps", "2", "--out", str(tmp_path / "out"), "--workers", "1"],
                                cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # stderr holds the progress bar only
    assert not [line for line in _lines(result.stderr) if "runs" not in line], result.stderr[-3000:]
