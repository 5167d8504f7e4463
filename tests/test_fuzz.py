"""The fuzzer (physics.tools.fuzz): a bounded, repeatable run of each reader (scenes, snapshots,
recordings, command lines) finds no failure, every crafted defect is a clean refusal, its TOML
writer is the inverse of tomllib, and a worker that hangs or dies fails its case without stopping
the run."""
import math
import os
import signal
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from physics.tools import crafting, fuzz

CASES = 200   # about 30 s on two busy cores; `make fuzz` runs 10^4 (docs/reliability.md)


def test_bounded_fuzz_run_has_no_failure():
    """Seed 0, the same cases every run: every case is refused cleanly, runs, or reports its
    divergence; none ends in a traceback, a crash or a hang. Both main paths are reached."""
    tally = fuzz.fuzz(CASES, seed=0, steps=10, timeout=60.0)
    details = "\n\n".join(f"{case.scene} {case.mutations} {case.settings!r:.200}:\n{detail}" for case, detail in tally.failures)
    assert tally.counts["failed"] == 0, f"{tally.report()}\n{details}"
    assert tally.tried == CASES == sum(tally.counts.values())
    assert tally.counts["refused"] > 0 and tally.counts["ran"] > 0, tally.report()


def _same(a, b):
    """Equality with NaN equal to NaN (tomllib parses nan as a float NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


scalars = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(), st.text(max_size=10))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), values, max_size=5))
def test_to_toml_is_the_inverse_of_tomllib(document):
    """Independent means: tomllib reads back what to_toml wrote (NaN compared as NaN)."""
    assert _same(tomllib.loads(fuzz.to_toml(document)), document)


def test_shipped_scenes_survive_the_round_trip():
    for path in sorted(fuzz.SCENES.glob("*.toml")):
        if path.stem not in fuzz.SKIPPED_SCENES:
            document = tomllib.loads(path.read_text())
            assert _same(tomllib.loads(fuzz.to_toml(document)), document), path.name


def _case(name="pendulum"):
    return fuzz.Case(name, (fuzz.SCENES / f"{name}.toml").read_bytes())


def test_a_hang_and_a_crash_fail_their_case_and_the_worker_restarts():
    worker = fuzz.Worker(steps=5, timeout=60.0)
    try:
        assert worker.run(_case())[0] == "ran"
        worker.timeout = 1e-3          # no step answers this fast: counted as a hang, worker killed
        outcome, detail = worker.run(_case("pyramid"))
        assert (outcome, worker.process) == ("failed", None) and detail.startswith("hang")
        worker.timeout = 60.0
        assert worker.run(_case())[0] == "ran"   # a fresh worker
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()
        outcome, detail = worker.run(_case())
        assert outcome == "failed" and ("crash" in detail or "gone" in detail), detail
        assert worker.run(_case())[0] == "ran"
    finally:
        worker.stop()


def test_replay_reruns_a_saved_case(tmp_path, capsys):
    case = fuzz.Case("pendulum", b'[[node]]\nname = "a"\nscale = -1.0\n', mutations=["set ('node', 0, 'scale') = -1.0"])
    tally = fuzz.Tally()
    tally.add(case, "failed", "for the test")
    (path, _), = fuzz.save_failures(tally, tmp_path)
    assert fuzz.main(["--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "refused" in out and "'scale'" in out and "-1.0" in out
    assert Path(tmp_path / "case-1.toml").read_bytes() == case.text


# --- the other readers: snapshots, recordings, command lines ----------------------------------------

READER_CASES = 150   # of each kind, seed 0; `make fuzz` runs 10^4 of each (docs/reliability.md)


@pytest.fixture(scope="module")
def bases():
    return fuzz.binary_bases()


@pytest.mark.parametrize("kind", ["snapshot", "recording", "command"])
def test_bounded_fuzz_run_of_each_reader_has_no_failure(bases, kind):
    """Crafted, mutated and corrupted files (checksums mostly recomputed) and command lines: each
    is refused naming the file, or reads and runs; none ends in a traceback, an internal error,
    a refused restore that changed the state, an impossible state accepted, a crash or a hang."""
    tally = fuzz.fuzz(READER_CASES, seed=0, steps=10, timeout=60.0, kind=kind, bases=bases)
    details = "\n\n".join(f"{case.mutations}:\n{detail}" for case, detail in tally.failures)
    assert tally.counts["failed"] == 0, f"{tally.report()}\n{details}"
    assert tally.tried == READER_CASES == sum(tally.counts.values())
    assert tally.counts["refused"] > 0 and tally.counts["ran"] > 0, tally.report()


@pytest.mark.parametrize("kind, crafts", [("snapshot", crafting.SNAPSHOT_CRAFTS), ("recording", crafting.RECORDING_CRAFTS)])
def test_every_crafted_defect_is_a_clean_refusal_in_the_fuzzer(bases, tmp_path, kind, crafts):
    """The fuzzer's crafted cases, each on the car's files (its snapshot holds a reparented
    topology and contacts): every one is refused, none runs or fails."""
    recording, snapshot = bases["car"]
    for name, (craft, _) in crafts.items():
        case = fuzz.Case("car", craft(snapshot if kind == "snapshot" else recording), kind=kind)
        outcome, detail = fuzz.run_case(case, tmp_path / f"crafted{fuzz._SUFFIX[kind]}", steps=5)
        assert outcome == "refused", f"{name}: {outcome}: {detail}"


def test_a_fifo_on_the_command_line_is_refused_not_waited_on(bases, tmp_path):
    case = fuzz.Case("car", bases["car"][0], kind="command", argv=["replay", "{fifo}", "--verify"])
    outcome, detail = fuzz.run_case(case, tmp_path / "x.rec", steps=5)
    assert outcome == "refused" and "FIFO" in detail, detail


def test_a_command_stopped_by_a_body_falling_through_the_ground_is_a_divergence(bases, tmp_path):
    """The car at dt 0.5 s with sor 1e-10 stops in step 2 with a PenetrationError: the runner
    exits 1 with one line that says the wheel fell through the ground, which the fuzzer counts as
    a divergence reported (as it does a runaway or a body that left the world), not a failure."""
    car = str(Path(fuzz.SCENES) / "car.toml")
    case = fuzz.Case("car", bases["car"][0], kind="command",
                     argv=["run", car, "--dt", "0.5", "--sor", "1e-10", "--steps", "10", "--out", "{out}.csv"])
    outcome, detail = fuzz.run_case(case, tmp_path / "x.rec", steps=5)
    assert outcome == "divergence" and "fell through 'ground'" in detail, detail


# --- what a model reaches beyond its text, signals mid-run, the app's settings file -----------------

FILE_CASES = 40     # of each kind, seed 0; `make fuzz` runs 10^4 of each (docs/reliability.md)


def test_bounded_fuzz_run_of_model_files_and_signals_has_no_failure(monkeypatch):
    """Models whose meshes are archives and bombs (2^24 zero bytes here; `make fuzz`: 2^30), MJCF
    `<default>` classes drawn deep, wide and many-attributed, models whose files are special, and
    SIGINT / SIGTERM at drawn moments of `python -m physics run`: one worker for all four kinds.
    Each case is refused naming the file and element, runs, or (a signal) exits 130 / 143 with
    one line and no file left; none fails, hangs, crashes or passes the worker's memory bound."""
    from physics.tools import fuzz_models

    monkeypatch.setattr(fuzz_models, "BOMB_BYTES", 2**24)
    worker = fuzz.Worker(steps=5, timeout=60.0)
    try:
        for kind in ("archive", "defaults", "special", "signal"):
            tally = fuzz.fuzz(FILE_CASES, seed=0, steps=5, kind=kind, runner=worker)
            details = "\n\n".join(f"{case.mutations}:\n{detail}" for case, detail in tally.failures)
            assert tally.counts["failed"] == 0, f"{kind}: {tally.report()}\n{details}"
            assert tally.tried == FILE_CASES, tally.report()
            if kind == "signal":    # (its one refusal, the iiwa's 10^6 recorded steps refused within 42 ms of the
                assert tally.counts["stopped"] > 0, tally.report()     # start, is a race on a loaded machine)
            else:
                assert tally.counts["refused"] > 0, f"{kind}: {tally.report()}"
    finally:
        worker.stop()


def test_bounded_fuzz_run_of_the_apps_settings_file_has_no_failure():
    """settings.json drawn, corrupted, oversized or special: loaded as itself, or set aside with
    one line and the defaults (app.settings_fuzz); no case fails."""
    from app import settings_fuzz

    tally = fuzz.fuzz(300, seed=0, kind="settings", runner=settings_fuzz.InProcess(), draw=settings_fuzz.draw_settings_case)
    details = "\n\n".join(f"{case.mutations}:\n{detail}" for case, detail in tally.failures)
    assert tally.counts["failed"] == 0, f"{tally.report()}\n{details}"
    assert tally.counts["refused"] > 0 and tally.counts["ran"] > 0, tally.report()
