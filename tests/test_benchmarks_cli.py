"""`python -m benchmarks`' own checks, before any benchmark runs."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_benchmark_that_opens_windows_is_refused_at_once_without_a_display_or_xvfb(tmp_path):
    """The start-up benchmark reaches its app launches some fifteen minutes in: with no DISPLAY and
    no Xvfb on PATH it is refused before anything runs (argparse's usage error, exit status 2), with
    the benchmarks that need one named, and docs/benchmarks.md is left as it was."""
    env = {key: value for key, value in os.environ.items() if key != "DISPLAY"}
    env["PATH"] = str(tmp_path)     # (an empty directory: no Xvfb, no other program)
    before = (ROOT / "docs" / "benchmarks.md").read_bytes()
    run = subprocess.run([sys.executable, "-m", "benchmarks", "joints", "startup", "viewer"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "startup, viewer open windows" in run.stderr and "Xvfb" in run.stderr, run.stderr
    assert run.stdout == ""     # (no benchmark ran: each prints its section as it ends)
    assert (ROOT / "docs" / "benchmarks.md").read_bytes() == before


def test_the_warm_up_budget_is_judged_on_the_median_of_pairs_run_in_turn(monkeypatch):
    """The start-up section judges the warm-up's goal (no more CPU than the reference code's) on the
    median of WARMUP_PAIRS pairs, each in fresh caches, and lists every pair: one pair's ratio moves
    by a few per cent from run to run. Checked on canned measurements (the real ones take an hour)."""
    from benchmarks import startup

    canned = iter([((134.0, 209.0), (105.0, 205.0)), ((127.0, 196.0), (103.0, 201.0)), ((135.0, 210.0), (107.0, 209.0))])
    pair = {}

    def ours(cache, jobs=None):
        assert not cache.exists()        # (each pair's warm-up starts from an empty cache)
        cache.mkdir()
        pair["now"] = next(canned)
        return (*pair["now"][0], "")

    def reference(work):
        assert not (work / "cache-reference").exists()
        (work / "cache-reference").mkdir()
        return pair["now"][1]

    profile = {"cpu": 150.0, "own": {"physics.constraints.rattle.joint_stage": 9.7}, "versions": {
        "physics.constraints.rattle.joint_stage": 1}}
    monkeypatch.setattr(startup, "first_step", lambda *args: (2.0, 2.0, ""))
    monkeypatch.setattr(startup, "compile_profile", lambda *args: profile)
    monkeypatch.setattr(startup, "warmup", ours)
    monkeypatch.setattr(startup, "reference_warmup", reference)
    monkeypatch.setattr(startup, "app_times", lambda *args: (2.0, 2.5, 3.0))
    monkeypatch.setenv("DISPLAY", ":0")      # (no Xvfb started)
    text = startup.main()
    # the median pair's ratio (210 / 209) is the one judged; every pair is listed
    assert "≤ 209 s CPU" in text and "135 s wall, 210 s CPU ✗" in text and "median of 3 pairs" in text
    assert "209 against 205 s (1.02), 196 against 201 s (0.98), 210 against 209 s (1.00)" in text
    assert "takes 1.005 times that code's CPU" in text and "at parity" in text
