"""Recordings (.rec, physics.pipeline.recording): self-contained, checksummed, verified step by step."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from physics import Simulation
from physics.pipeline.recording import RecordingError, read_recording, write_recording
from physics.pipeline.timeline import Timeline

ROOT = Path(__file__).resolve().parent.parent
CAR = ROOT / "assets" / "scenes" / "car.toml"


def recorded_car(steps=60):
    sim = Simulation.from_file(CAR)
    timeline = Timeline(sim, keyframe_every=16)
    timeline.step(10)
    timeline.apply("set", "integrator", "rk4")
    timeline.apply("set", "gravity", np.array([0.0, -9.0, 0.1]))
    timeline.step(10)
    body = sim.names[int(np.flatnonzero(sim.motion == "dynamic")[-1])]
    timeline.apply("impulse", body, np.array([0.1, 2.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    timeline.step(steps - 20)
    return timeline


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "car.rec"
    timeline = recorded_car()
    write_recording(path, timeline)
    return path, timeline


def test_a_recording_reads_back_what_was_written(saved):
    path, timeline = saved
    rec = read_recording(path)
    assert (rec.origin, rec.head, rec.keyframe_every) == (0, 60, 16)
    assert rec.hashes == timeline.hashes and sorted(rec.keyframes) == [0, 16, 32, 48]
    assert [(i.step, i.kind) for i in rec.inputs] == [(10, "set"), (10, "set"), (20, "impulse")]
    assert np.array_equal(rec.inputs[1].args[1], [0.0, -9.0, 0.1])
    assert rec.scene_text == CAR.read_text()


def test_a_recording_saved_with_fewer_keyframes_replays_and_seeks_the_same(tmp_path):
    """The app saves its timeline (a keyframe every step or few) with one every
    RECORDING_KEYFRAME_EVERY steps: the origin's, then each at least that many steps after the last
    kept (16, 32, 48 at 20: 0 and 32), the rest re-simulated on reading. Every step's hash still
    verifies; a seek between keyframes reaches the state the run had there (its hash) and keeps the
    states it passes as keyframes at the reopened timeline's own spacing, so a seek back among
    them re-simulates from the nearest (the car's timeline: one a step)."""
    timeline = recorded_car()
    path = tmp_path / "thin.rec"
    write_recording(path, timeline, keyframe_every=20)
    rec = read_recording(path)
    assert rec.keyframe_every == 20 and sorted(rec.keyframes) == [0, 32]
    full = len(type(rec).from_timeline(timeline, rec.scene_text, CAR).to_bytes())
    assert full - path.stat().st_size >= 2 * len(rec.keyframes[32].to_bytes())    # two keyframes fewer
    assert rec.verify() == (60, None)
    reopened = rec.timeline()
    reopened.seek(45)
    assert reopened.sim.state_hash() == timeline.hashes[45]
    assert reopened.keyframe_every == 1 and set(range(33, 46)) <= set(reopened.keyframes)
    reopened.seek(40)
    assert reopened.sim.state_hash() == timeline.hashes[40]


def test_verify_replays_every_step(saved):
    path, _ = saved
    assert read_recording(path).verify() == (60, None)


def test_a_changed_hash_is_reported_at_its_step(saved):
    path, _ = saved
    rec = read_recording(path)
    rec.hashes[37] = "0" * 64
    assert rec.verify() == (36, 37)


def test_a_recordings_timeline_scrubs_and_branches(saved):
    path, timeline = saved
    replayed = read_recording(path).timeline()
    assert replayed.seek(45) == 45 and replayed.sim.state_hash() == timeline.hashes[45]
    replayed.apply("set", "integrator", "lie-midpoint")
    replayed.step(5)
    assert replayed.previous.hashes[60] == timeline.hashes[60] and replayed.head == 50


def test_a_recording_of_a_recording_needs_no_scene_file(saved, tmp_path):
    path, timeline = saved
    replayed = read_recording(path).timeline()
    replayed.seek(60)
    replayed.step(3)
    again = tmp_path / "again.rec"
    write_recording(again, replayed)
    rec = read_recording(again)
    assert rec.verify() == (63, None) and rec.hashes[60] == timeline.hashes[60]


def test_never_overwrites_and_leaves_no_temporary_file(saved, tmp_path):
    path, timeline = saved
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        write_recording(path, timeline)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[: len(d) // 2], "checksum|truncated"),
    (lambda d: d[:200] + bytes([d[200] ^ 0x10]) + d[201:], "checksum"),
    (lambda d: b"PK\x03\x04" + d[4:], "not a recording"),
    (lambda d: d[:7] + b"\x09" + d[8:], "format version 9"),
    (lambda d: b"", "not a recording|truncated"),
])
def test_bad_files_are_refused_naming_the_file(saved, tmp_path, damage, message):
    path, _ = saved
    bad = tmp_path / "bad.rec"
    bad.write_bytes(damage(path.read_bytes()))
    with pytest.raises(RecordingError, match=message) as caught:
        read_recording(bad)
    assert str(bad) in str(caught.value)


def runner(*args):
    return subprocess.run([sys.executable, "-m", "physics", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_the_runner_records_and_replay_verifies(tmp_path):
    rec = tmp_path / "car.rec"
    done = runner("run", CAR, "--steps", 90, "--record", rec, "--keyframe-every", 25, "--quiet")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "car.npz").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["car.rec"]
    assert sorted(read_recording(rec).keyframes) == [0, 25, 50, 75]
    verified = runner("replay", rec, "--verify")
    assert (verified.returncode, verified.stdout.strip()) == (0, "verified 90 steps")
    # the same run without a recording ends in the recorded last state
    sim = Simulation.from_file(CAR)
    sim.step(90)
    assert read_recording(rec).hashes[90] == sim.state_hash()


def test_replay_names_the_first_differing_step(tmp_path, saved):
    path, _ = saved
    rec = read_recording(path)
    rec.hashes[41] = "f" * 64
    bad = tmp_path / "changed.rec"
    bad.write_bytes(rec.to_bytes())
    out = runner("replay", bad, "--verify")
    assert out.returncode == 1 and "step 41 differs" in out.stderr and "Traceback" not in out.stderr


def test_replay_refuses_bad_files_with_exit_2(tmp_path, saved):
    path, _ = saved
    truncated = tmp_path / "cut.rec"
    truncated.write_bytes(path.read_bytes()[:5000])
    rec = read_recording(path)
    rec.scene_text = rec.scene_text.replace("[world]", "[world\n")
    broken_scene = tmp_path / "scene.rec"
    broken_scene.write_bytes(rec.to_bytes())
    for bad, message in ((truncated, "truncated or corrupted"), (broken_scene, "scene cannot be loaded"),
                         (tmp_path / "missing.rec", "cannot read")):
        out = runner("replay", bad, "--verify")
        assert out.returncode == 2 and message in out.stderr and str(bad) in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_the_runner_never_replaces_a_recording(tmp_path, saved):
    path, _ = saved
    target = tmp_path / "kept.rec"
    target.write_bytes(path.read_bytes())
    out = runner("run", CAR, "--steps", 5, "--record", target)
    assert out.returncode == 2 and "exists" in out.stderr
    assert target.read_bytes() == path.read_bytes()
