"""The snapshot and recording readers refuse every crafted file (its checksum recomputed, as anyone
can) with the project's own error naming the file, the field and the value, before anything
changes: the smallest reproducer of each defect, from physics.tools.crafting. A refused restore leaves
the simulation's state hash and settings as they were; a refused recording never reaches a
simulation. Special files are refused without blocking, a padded file without reading its body,
a changed scene with what differs, and recordings are written with the umask's permissions."""
import os
import re
import stat

import numpy as np
import pytest

from physics.tools import crafting
from physics.pipeline.recording import RecordingError, _read, read_recording, write_recording
from physics.pipeline.simulation import Simulation
from physics.pipeline.snapshot import Snapshot, SnapshotError
from physics.pipeline.timeline import Timeline
from test_recording import CAR


def recorded():
    """The car: its cargo box_1 reparented to the world at step 15 (the keyframes after it hold
    the topology) and flicked, dt changed at 25, 30 steps with keyframes every 10; contacts by then."""
    sim = Simulation.from_file(CAR)
    timeline = Timeline(sim, keyframe_every=10)
    timeline.step(15)
    timeline.apply("reparent", "box_1", None)
    timeline.apply("impulse", "box_1", np.array([0.0, 1.0, 0.0]), None)
    timeline.step(10)
    timeline.apply("set", "dt", 1 / 120)
    timeline.step(5)
    return timeline


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """(recording bytes, snapshot bytes of its last state)."""
    path = tmp_path_factory.mktemp("base") / "car.rec"
    timeline = recorded()
    write_recording(path, timeline)
    return path.read_bytes(), timeline.sim.snapshot().to_bytes()


def test_the_base_files_read_and_verify(base, tmp_path):
    """The untouched files pass: what the crafted ones are refused for is only their change."""
    data, snap = base
    path = tmp_path / "car.rec"
    path.write_bytes(data)
    assert read_recording(path).verify() == (30, None)
    snapshot = Snapshot.from_bytes(snap)
    assert "topology.parent" in snapshot.arrays and len(snapshot.arrays["solver.cache.impulses"]) > 1
    sim = Simulation.from_file(CAR)
    sim.restore(snapshot)
    assert sim.state_hash() == snapshot.hash()


@pytest.mark.parametrize("name", sorted(crafting.SNAPSHOT_CRAFTS))
def test_a_crafted_snapshot_is_refused_and_changes_nothing(base, name):
    craft, pattern = crafting.SNAPSHOT_CRAFTS[name]
    sim = Simulation.from_file(CAR)
    sim.step(7)
    before, settings = sim.state_hash(), repr(vars(sim.settings))
    with pytest.raises(ValueError) as refused:
        sim.restore(Snapshot.from_bytes(craft(base[1]), source="crafted.snap"))
    message = str(refused.value)
    assert re.search(pattern, message), message
    assert isinstance(refused.value, SnapshotError) == message.startswith("crafted.snap: field "), message
    assert sim.state_hash() == before and repr(vars(sim.settings)) == settings


@pytest.mark.parametrize("name", sorted(crafting.RECORDING_CRAFTS))
def test_a_crafted_recording_is_refused_naming_the_file(base, tmp_path, name):
    craft, pattern = crafting.RECORDING_CRAFTS[name]
    path = tmp_path / "crafted.rec"
    path.write_bytes(craft(base[0]))
    with pytest.raises(RecordingError) as refused:
        read_recording(path).simulation()
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and re.search(pattern, message), message
    if name.startswith("keyframe ") and name != "keyframe length 2^40" and name != "keyframe step mismatch":
        assert "keyframe at step 20" in message, message     # the step of the keyframe changed


def test_a_changed_scene_says_what_differs(base, tmp_path):
    """One node's mass changed in the scene text: the refusal names the parts and the node, not
    the scene's title twice."""
    path = tmp_path / "changed.rec"
    path.write_bytes(crafting.RECORDING_CRAFTS["changed scene"][0](base[0]))
    with pytest.raises(RecordingError, match=r"mass, inertia_body differ; at node 'car'$") as refused:
        read_recording(path).simulation()
    assert "Car crash" not in str(refused.value)


def test_a_recording_without_scene_digests_still_says_its_scene_differs(base, tmp_path):
    header, frames = crafting.split_recording(base[0])
    del header["scene_digests"]
    crafting.change_scene_mass(header)
    path = tmp_path / "old.rec"
    path.write_bytes(crafting.join_recording(header, frames))
    with pytest.raises(RecordingError, match="not the scene its keyframes were taken in: its model differs"):
        read_recording(path).simulation()


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "a FIFO"),
    (lambda p: p.mkdir(), "a directory"),
])
def test_special_files_are_refused_without_blocking(tmp_path, make, kind):
    """A FIFO with no writer would block an ordinary open() forever; it is refused at once."""
    path = tmp_path / "special.rec"
    make(path)
    with pytest.raises(RecordingError, match=f"{re.escape(str(path))}: is {kind}"):
        read_recording(path)


def test_a_device_is_refused():
    with pytest.raises(RecordingError, match="/dev/zero: is a device"):
        read_recording("/dev/zero")


class Counting:
    """A file object that counts the bytes read through it."""

    def __init__(self, stream):
        self.stream, self.count = stream, 0

    def read(self, n=-1):
        data = self.stream.read(n)
        self.count += len(data)
        return data

    def readinto(self, buffer):
        n = self.stream.readinto(buffer)
        self.count += n
        return n


def test_a_padded_2_gib_file_is_refused_from_its_header(base, tmp_path):
    """A valid recording padded (sparsely) to 2 GiB: refused from the header's declared sizes
    having read only the header, never the body."""
    path = tmp_path / "huge.rec"
    path.write_bytes(base[0])
    os.truncate(path, 2**31)
    with pytest.raises(RecordingError, match=r"truncated or corrupted: the header declares \d+ bytes of keyframes"):
        read_recording(path)
    with open(path, "rb") as stream:
        counting = Counting(stream)
        with pytest.raises(RecordingError):
            _read(counting, 2**31, path)
    assert counting.count < len(base[0])


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_recordings_honour_the_umask(tmp_path, umask):
    """Mode 0666 & ~umask as any new file, still written through a temporary file renamed into place."""
    old = os.umask(umask)
    try:
        path = tmp_path / "run.rec"
        write_recording(path, Timeline(Simulation.from_file(CAR)))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["run.rec"]


def test_an_input_the_simulation_refuses_names_the_step(base, tmp_path):
    """An impulse on the fixed wall passes the reader (a node of the scene, a finite vector) and
    is refused by the simulation when verify reaches its step: a RecordingError naming the step."""
    header, frames = crafting.split_recording(base[0])
    header["inputs"].append({"step": 28, "kind": "impulse", "args": ["wall", [(1.0).hex()] * 3, None]})
    path = tmp_path / "wall.rec"
    path.write_bytes(crafting.join_recording(header, frames))
    with pytest.raises(RecordingError, match=rf"{re.escape(str(path))}: step 28: input impulse refused: .*'wall'"):
        read_recording(path).verify()


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "dir"])
def test_the_scene_loader_refuses_special_files_without_blocking(tmp_path, special):
    """/dev/zero never ends and a FIFO without a writer blocks an ordinary read forever."""
    from physics.io.scene import SceneError, load_scene
    path = {"fifo": tmp_path / "pipe.toml", "dir": tmp_path / "folder.toml"}.get(special, special)
    if special == "fifo":
        os.mkfifo(path)
    elif special == "dir":
        path.mkdir()
    with pytest.raises(SceneError, match=rf"{re.escape(str(path))}.*cannot read the file \(is a"):
        load_scene(path)


def test_restore_into_a_changed_scene_of_the_same_name_says_so(tmp_path):
    """The same title and file, one node's mass changed: not "of 'Car crash' ... not of 'Car crash'"."""
    path = tmp_path / "car.toml"
    path.write_text(CAR.read_text())
    snapshot = Simulation.from_file(path).snapshot()
    header = {"scene_text": CAR.read_text()}
    crafting.change_scene_mass(header)            # the first `mass = ` line becomes 7.5
    path.write_text(header["scene_text"])
    changed = Simulation.from_file(path)
    with pytest.raises(ValueError, match=r"another version of scene 'Car crash' .*: its model differs \(nodes, masses"):
        changed.restore(snapshot)


def test_a_scene_file_past_its_byte_budget_is_refused_before_it_is_read(tmp_path):
    """A 150 MB scene (a sparse file: no disk is used) is refused in one SceneError naming the
    file and the budget, without reading it: the reader stops at SCENE_BYTES_MAX + 1 bytes."""
    import tracemalloc

    from physics.io.scene import SCENE_BYTES_MAX, SceneError, load_scene

    path = tmp_path / "huge.toml"
    with open(path, "wb") as handle:
        handle.truncate(150 * 2**20)
    tracemalloc.start()
    with pytest.raises(SceneError, match=f"more than {SCENE_BYTES_MAX} bytes") as info:
        load_scene(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(path) in str(info.value)
    assert peak < 2 * SCENE_BYTES_MAX       # the budget and a copy at most, never the 150 MB


def test_a_signal_inside_the_safe_opener_leaves_one_owner_per_descriptor(tmp_path, monkeypatch):
    """The fuzzer's signal kind found a scene refused as "cannot read the file (Bad file
    descriptor)": a signal's exception landing just after the file object took the descriptor
    made two closers of one number (the opener's `os.close` and the object), and the second closed
    whatever file reused the number. The smallest reproducer: `open` in the opener's module
    raises once its file object exists; the object, closed later, must not close another file."""
    import builtins

    from physics.core import files

    (tmp_path / "a.toml").write_text("first")
    (tmp_path / "b.toml").write_text("second")
    made = []

    def open_then_stop(*args, **kwargs):
        made.append(builtins.open(*args, **kwargs))
        raise KeyboardInterrupt

    monkeypatch.setattr(files, "open", open_then_stop, raising=False)
    with pytest.raises(KeyboardInterrupt):
        files.open_regular(tmp_path / "a.toml")
    monkeypatch.undo()
    with files.open_regular(tmp_path / "b.toml") as other:
        made[0].close()             # the interrupted open's object lets go of its own descriptor only
        assert other.read() == b"second"


def test_a_misspelt_scene_name_lists_the_shipped_ones(tmp_path, monkeypatch):
    """A bare name is a shipped scene's (`tank`); a misspelt one ("tankk") said only "cannot read
    the file (No such file or directory)": it now says it is neither and names those there are. A
    missing path with a folder or a suffix is still a missing file."""
    from physics.io.errors import SceneError
    from physics.io.scene import load_scene
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SceneError, match=r"tankk: no such file, nor a shipped scene of that name \(they are: .*\btank\b"):
        load_scene("tankk")
    with pytest.raises(SceneError, match=r"cannot read the file \(No such file"):
        load_scene("tankk.toml")
