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
