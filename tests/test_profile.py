"""The stage profiler (physics.core.profile) and `python -m physics run --profile`: the trace parses as
Chrome trace-event JSON, names every stage, nests stages in sub-steps in steps with non-negative
durations; timing changes no state; with no recorder on the stages are their plain functions."""
import json
import subprocess
import sys
from pathlib import Path


from physics.core import profile
from physics.pipeline import stages
from physics.pipeline.simulation import Simulation

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"
STEPS = 30


def run_profile(tmp_path, scene, *options):
    out = tmp_path / f"{scene}.json"
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(SCENES / f"{scene}.toml"), "--steps",
                             str(STEPS), "--profile", str(out), *options], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"wrote a trace of {STEPS} steps to {out}" in result.stdout
    document = json.loads(out.read_text())
    return document, [e for e in document["traceEvents"] if e["ph"] == "X"]


def check_nesting(events, substeps):
    """Every step holds `substeps` sub-steps, every stage lies in a sub-step, the stages of a
    sub-step are disjoint (their durations add up to at most the sub-step's), all durations >= 0.
    Tolerance 1e-3 µs: ts and dur are ns counts divided by 1e3, exact to a float's rounding."""
    eps = 1e-3
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in events)
    steps = [e for e in events if e["name"] == "step"]
    subs = [e for e in events if e["name"] == "substep"]
    stages = [e for e in events if profile.category(e["name"]) == "stage"]
    assert [s["args"]["step"] for s in steps] == list(range(1, STEPS + 1))
    assert len(subs) == STEPS * substeps
    inside = lambda e, span: span["ts"] - eps <= e["ts"] and e["ts"] + e["dur"] <= span["ts"] + span["dur"] + eps
    for step in steps:
        assert sum(inside(s, step) for s in subs) == substeps
    for sub in subs:
        mine = sorted((e for e in stages if inside(e, sub)), key=lambda e: e["ts"])
        assert sum(e["dur"] for e in mine) <= sub["dur"] + eps
        for a, b in zip(mine, mine[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + eps, (a, b)
    assert all(any(inside(e, sub) for sub in subs) for e in stages)
    # a stage's parts lie inside it
    parts = [e for e in events if profile.category(e["name"]) == "part"]
    for part in parts:
        stage = part["name"].split(profile.PART)[0]
        assert any(inside(part, e) for e in stages if e["name"] == stage), part


def test_contact_scene_trace_names_every_stage(tmp_path):
    """The stack (contacts, two sub-steps) with sleep on runs every stage of the sub-step but the
    events (it has no timed impulse), each in every sub-step under its own name, and the prepare stage's parts ("prepare/rows" twice: joint
    rows before the broad phase, contact rows after the narrow phase)."""
    from physics.pipeline.stages import STAGES
    document, events = run_profile(tmp_path, "stack", "--sleep", "on")
    names = [e["name"] for e in events]
    substeps = Simulation.from_file(SCENES / "stack.toml").settings.substeps
    # (the stack has no timed impulse: its sub-steps leave out the events stage, `Workspace.stages`)
    for stage in tuple(s for s in STAGES if s != "events") + ("prepare/broad phase", "prepare/narrow phase",
                                                              "prepare/rows"):
        assert names.count(stage) == STEPS * substeps * (2 if stage == "prepare/rows" else 1), stage
    assert "events" not in names
    check_nesting(events, substeps)
    assert document["displayTimeUnit"] == "ms" and document["otherData"]["stages"] == [s for s in STAGES if s != "events"]
    assert document["otherData"]["settings"]["sleep"] is True


def test_free_body_trace_has_no_contact_stages(tmp_path):
    """The T-handle (one free body, no contacts) takes the free-body sub-step: the integrator on the
    local state in place, then the events; no world pass, no kinematic or contact stages."""
    from physics.pipeline.stages import FREE_STAGES
    _, events = run_profile(tmp_path, "t_handle")
    names = {e["name"] for e in events}
    assert {"step", "substep", "dynamic", "events"} <= names
    assert names - {"step", "substep"} <= set(FREE_STAGES)      # only the free form's stages
    assert not names & {"world", "kinematic", "prepare", "prepare/broad phase", "prepare/narrow phase", "solve",
                        "sleep"}
    check_nesting(events, 1)


def test_profile_is_an_output_and_a_bad_name_is_refused(tmp_path):
    """--profile alone is enough output; a name not ending in .json exits 2 naming it, writing nothing."""
    bad = tmp_path / "trace.txt"
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(SCENES / "t_handle.toml"), "--steps", "3",
                             "--profile", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "--profile" in result.stderr and str(bad) in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_timing_changes_no_state():
    """The same steps with a tracing recorder on and with none give the same state hash."""
    hashes = []
    for on in (False, True):
        sim = Simulation.from_file(SCENES / "stack.toml")
        recorder = profile.Recorder(trace=True).start() if on else None
        sim.step(40)
        if recorder is not None:
            recorder.stop()
            assert len(recorder.events) > 40
        hashes.append(sim.state_hash())
    assert hashes[0] == hashes[1]


def test_recorders_nest_and_nothing_is_timed_while_none_is_on():
    """With no recorder on, `recording` says so and `mark`/`lap` answer 0; recorders nest (each
    sees what stepped while it was on), and totals are taken once."""
    assert not profile.recording()
    sim = Simulation.from_file(SCENES / "t_handle.toml")
    with profile.Recorder() as outer:
        assert profile.recording()
        with profile.Recorder() as inner:
            sim.step(2)
        assert profile.recording()       # the outer one is still on
        sim.step(1)
    assert not profile.recording()
    assert profile.mark() == 0 and profile.lap("x", 0) == 0
    assert inner.take_totals()[1]["step"] == 2
    totals, counts = outer.take_totals()
    assert counts["step"] == 3 and counts["dynamic"] == 3 and totals["step"] >= totals["dynamic"] > 0
    assert outer.take_totals() == ({}, {})
