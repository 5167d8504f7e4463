"""`python -m benchmarks`' own checks, before any benchmark runs."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_benchmark_that_opens_windows_is_refused_at_once_without_a_display_or_xvfb(tmp_path):
    """The start-up benchmark reaches its app launches only after its compiles and warm-ups: with no
    DISPLAY and no Xvfb on PATH it is refused before anything runs (argparse's usage error, exit status 2), with
    the benchmarks that need one named, and docs/benchmarks.md is left as it was."""
    env = {key: value for key, value in os.environ.items() if key != "DISPLAY"}
    env["PATH"] = str(tmp_path)     # (an empty directory: no Xvfb, no other program)
    before = (ROOT / "docs" / "benchmarks.md").read_bytes()
    run = subprocess.run([sys.executable, "-m", "benchmarks", "joints", "startup", "viewer"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "startup, viewer need a display" in run.stderr and "Xvfb" in run.stderr, run.stderr
    assert run.stdout == ""     # (no benchmark ran: each prints its section as it ends)
    assert (ROOT / "docs" / "benchmarks.md").read_bytes() == before


def _canned_startup(monkeypatch, measured):
    """benchmarks.startup with every measurement canned: `measured` the (ours (wall, CPU), REFERENCE's)
    pairs in the order the warm-ups run. -> (startup, the calls made: ("ours" | "reference" | "app", cache))."""
    from benchmarks import startup

    canned, calls, pair = iter(measured), [], {}

    def ours(cache, jobs=None):
        assert not cache.exists()        # (each pair's warm-up starts from an empty cache)
        cache.mkdir()
        pair["now"] = next(canned)
        calls.append(("ours", cache))
        return (*pair["now"][0], "")

    def reference(work):
        assert not (work / "cache-reference").exists()
        (work / "cache-reference").mkdir()
        calls.append(("reference", work))
        return pair["now"][1]

    def app(cache, config, log):
        calls.append(("app", cache))
        if cache.name == "cache-all":       # the warm launches load the last warm-up's kernels
            assert cache.exists()
        return 2.0, 2.5, 3.0

    profile = {"cpu": 150.0, "own": {"physics.constraints.rattle.joint_stage": 9.7},
               "versions": {"physics.constraints.rattle.joint_stage": 1}}
    monkeypatch.setattr(startup, "first_step", lambda *args: (2.0, 2.0, ""))
    monkeypatch.setattr(startup, "compile_profile", lambda *args: profile)
    monkeypatch.setattr(startup, "warmup", ours)
    monkeypatch.setattr(startup, "reference_warmup", reference)
    monkeypatch.setattr(startup, "app_times", app)
    monkeypatch.setenv("DISPLAY", ":0")      # (no Xvfb started)
    return startup, calls


def test_the_warm_up_budget_is_judged_on_the_median_of_pairs_run_in_turn(monkeypatch):
    """The start-up section judges the warm-up's goal (no more CPU than the reference code's) on the
    median of WARMUP_PAIRS pairs, ours then the reference's, each in fresh caches, and lists every
    pair: one pair's ratio moves by a few per cent from run to run. Checked on canned measurements
    (the real ones take the better part of an hour); the median pair runs first here, so that
    neither the first nor the last pair passes for it."""
    startup, calls = _canned_startup(monkeypatch, [((135.0, 210.0), (107.0, 209.0)), ((134.0, 209.0), (105.0, 205.0)),
                                                   ((127.0, 196.0), (103.0, 201.0))])
    text = startup.main()
    assert [kind for kind, _ in calls][:6] == ["ours", "reference"] * 3
    # the median pair's ratio (210 / 209) is the one judged; every pair is listed in the order run
    assert "≤ 209 s CPU" in text and "135 s wall, 210 s CPU ✗" in text and "median of 3 pairs" in text
    assert "210 against 209 s (1.00), 209 against 205 s (1.02), 196 against 201 s (0.98)" in text
    assert "takes 1.005 times that code's CPU, past the goal by less than a pair's noise" in text


def test_a_warm_up_within_its_budget_and_one_past_its_noise_are_said_so(monkeypatch):
    """The verdict's three cases: within the goal, past it by less than a pair's noise, past that."""
    from benchmarks import startup

    assert startup._budget_verdict(0.97).endswith("the goal holds.")
    assert "at parity" in startup._budget_verdict(1.0 + startup.PAIR_NOISE / 2)
    assert "compile more code than they replaced" in startup._budget_verdict(1.0 + 2 * startup.PAIR_NOISE)


def test_the_quick_start_up_takes_one_warm_up_and_no_reference(monkeypatch):
    """`--quick`: one warm-up, no reference code's (its worktree and its warm-up are the slow part), no
    pairs in the text; the warm launch still finds that warm-up's kernels."""
    startup, calls = _canned_startup(monkeypatch, [((130.0, 200.0), None)])
    text = startup.main(quick=True)
    assert [kind for kind, _ in calls if kind != "app"] == ["ours"]
    assert "130 s wall, 200 s CPU |" in text and "pairs" not in text and "pair's" not in text
