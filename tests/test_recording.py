"""Recordings (.rec, physics.recording): self-contained, checksummed, verified step by step."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from physics import Simulation
from physics.recording import Recording, RecordingError, read_recording, write_recording
from physics.timeline import Timeline

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
