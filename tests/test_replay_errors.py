"""`python -m physics replay` and `python -m app --replay` on bad files: exit 2 with one line naming
the file (never 1 "internal error", never a traceback, never a hang), and no partial video."""
import os
import subprocess
import sys

import pytest

from physics.tools import crafting
from physics.__main__ import main
from test_readers import base, recorded  # noqa: F401 - the fixture and helper of the readers tests
from test_recording import ROOT


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("name", sorted(crafting.RECORDING_CRAFTS))
def test_replay_exits_2_naming_the_file(base, tmp_path, capsys, name, verify):  # noqa: F811
    path = tmp_path / "crafted.rec"
    path.write_bytes(crafting.RECORDING_CRAFTS[name][0](base[0]))
    code = main(["replay", str(path)] + ["--verify"] * verify)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith(f"error: {path}: ") and err.count("\n") == 1 and "internal error" not in err, err
    assert out == ""


def runner(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "physics", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_replay_of_a_fifo_exits_2_at_once(tmp_path):
    """A FIFO nobody writes to: an ordinary open() would wait forever (the timeout fails the test)."""
    fifo = tmp_path / "pipe.rec"
    os.mkfifo(fifo)
    done = runner("replay", fifo, "--verify", timeout=60)
    assert done.returncode == 2 and done.stderr == f"error: {fifo}: is a FIFO (named pipe); expected a regular .rec file\n"


@pytest.mark.parametrize("name", ["keyframe self parent", "keyframe 2-cycle"])
def test_replay_of_a_cycle_exits_2_without_hanging(base, tmp_path, name):  # noqa: F811
    path = tmp_path / "cycle.rec"
    path.write_bytes(crafting.RECORDING_CRAFTS[name][0](base[0]))
    done = runner("replay", path, "--verify", timeout=120)
    assert done.returncode == 2 and "cycle" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.display
@pytest.mark.parametrize("name", ["keyframe parent 10^6", "keyframe self parent", "changed scene"])
def test_app_replay_to_video_of_a_crafted_file_exits_2_and_leaves_no_video(base, display, tmp_path, name):  # noqa: F811
    """It used to print an IndexError's traceback, save one frame of the fallback scene and exit 0."""
    path = tmp_path / "crafted.rec"
    path.write_bytes(crafting.RECORDING_CRAFTS[name][0](base[0]))
    video = tmp_path / "out.mp4"
    done = subprocess.run([sys.executable, "-m", "app", "--replay", str(path), "--video", str(video), "--size", "320x180"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HIERARCHY_SANDBOX_CONFIG_DIR": str(tmp_path / "config")})
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: could not open {path}: "), done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config", "crafted.rec"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["crafted.rec"]
