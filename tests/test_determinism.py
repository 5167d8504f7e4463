"""Bitwise determinism: state hashes, snapshots and golden hashes (Box2D v3's test_determinism.c
and Jolt's validate_hash are the model).

The golden hashes in tests/golden_hashes.json pin every bit of a few shipped scenes after N steps:
contacts, joints, sleeping, timed impulses, a spinning free body. A change that alters any bit of a
simulation fails them; when the change of arithmetic is deliberate, regenerate them with

    .venv/bin/python tests/test_determinism.py --regenerate     (or: make golden)

and say why in the commit message.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from physics import Simulation, Snapshot  # noqa: E402

SCENES = ROOT / "assets" / "scenes"
GOLDEN = Path(__file__).with_name("golden_hashes.json")
# scene -> steps: the tank sleeps from about 1 s; the car hits the wall at 0.75 s (its impulse
# event); the chain and the top exercise joints, the stack resting contacts, the T-handle a free
# rigid body's rotation.
GOLDEN_RUNS = {"tank": 600, "car": 180, "chain": 240, "stack": 240, "top": 240, "t_handle": 600}


def run_hash(scene, steps):
    sim = Simulation.from_file(SCENES / f"{scene}.toml")
    sim.step(steps)
    return sim.state_hash()


def golden():
    return json.loads(GOLDEN.read_text())


def environment():
    """What the bits of a run may depend on beyond the code: the versions of numpy, numba and
    llvmlite (LLVM's code generation, fast-math contractions) and the CPU (its instruction set),
    stored with the golden hashes and printed beside the stored ones when a hash differs."""
    import platform

    import llvmlite
    import numba
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"numpy": np.__version__, "numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "python": platform.python_version(), "cpu": cpu}


def _environments(stored):
    """The stored environment and this one, side by side, one line per key (a golden failure's note)."""
    here = environment()
    return "\n".join(f"  {key:9s} stored {str(stored.get(key, '(not stored)')):45s} here {here[key]}"
                     + ("" if stored.get(key) == here[key] else "   <- differs") for key in here)


@pytest.mark.parametrize("scene", sorted(GOLDEN_RUNS))
def test_golden_hash(scene):
    """Every bit after N steps is what it was when the golden hashes were made (an exact test:
    any change of arithmetic changes the hash; the module docstring says how to regenerate)."""
    stored = golden()
    expected = stored[scene]
    assert expected["steps"] == GOLDEN_RUNS[scene]
    got = run_hash(scene, expected["steps"])
    assert got == expected["hash"], (f"{scene}: hash {got} after {expected['steps']} steps, stored "
                                     f"{expected['hash']}; the environments:\n{_environments(stored.get('environment', {}))}")


def test_a_golden_failure_names_the_stored_and_the_present_environment():
    """The note of a failed golden hash: every key of both environments, the differing ones marked."""
    here = environment()
    assert set(here) == {"numpy", "numba", "llvmlite", "python", "cpu"} and all(here.values())
    note = _environments({**here, "numba": "0.0.0"})
    assert note.count("\n") == len(here) - 1 and "stored 0.0.0" in note and f"here {here['numba']}" in note
    assert note.count("<- differs") == 1
    assert "environment" in golden() and set(golden()["environment"]) == set(here)


def _hashes_with(variable, value):
    """Every golden scene's hash computed in a fresh process with one environment variable set, and
    what numpy says of its AVX2 and AVX-512 paths there ("X86_V3=True X86_V4=False")."""
    code = ("import sys; sys.path.insert(0, 'tests'); from test_determinism import run_hash, GOLDEN_RUNS;"
            "from numpy._core._multiarray_umath import __cpu_features__ as f;"
            "print(' '.join(f'{k}={f.get(k)}' for k in ('X86_V3', 'X86_V4')));"
            "print(' '.join(run_hash(s, GOLDEN_RUNS[s]) for s in sorted(GOLDEN_RUNS)))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, variable: value})
    assert result.returncode == 0, result.stderr[-2000:]
    features, hashes = result.stdout.strip().splitlines()[-2:]
    return features, dict(zip(sorted(GOLDEN_RUNS), hashes.split()))


# What each OpenBLAS kernel executes (OpenBLAS's kernel/x86_64 sources): a forced kernel is not
# checked against the CPU, and one the CPU lacks dies of SIGILL (SkylakeX on an AMD EPYC with AVX2
# only). numpy's names, read from CPUID and the OS's saved-register mask (XGETBV), so a feature the
# kernel of the OS does not enable counts as missing too.
BLAS_KERNEL_NEEDS = {"Prescott": ("SSE3",), "Sandybridge": ("AVX",), "Haswell": ("AVX2", "FMA3"),
                     "SkylakeX": ("AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512VL")}


def missing_cpu_features(needed, features=None):
    """The features of `needed` this CPU lacks (numpy's run-time dispatch table by default)."""
    if features is None:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    return [name for name in needed if not features.get(name, False)]


def test_a_blas_kernel_is_forced_only_where_the_cpu_runs_it():
    """The skip below reads the CPU: an AVX2-only CPU skips SkylakeX and runs Haswell, a CPU
    with every feature runs all four, and an unknown name counts as missing (a non-x86 numpy)."""
    avx2_only = {"SSE3": True, "AVX": True, "AVX2": True, "FMA3": True, "AVX512F": False}
    assert missing_cpu_features(BLAS_KERNEL_NEEDS["SkylakeX"], avx2_only) == list(BLAS_KERNEL_NEEDS["SkylakeX"])
    assert missing_cpu_features(BLAS_KERNEL_NEEDS["Haswell"], avx2_only) == []
    everything = {name: True for needs in BLAS_KERNEL_NEEDS.values() for name in needs}
    assert all(not missing_cpu_features(needs, everything) for needs in BLAS_KERNEL_NEEDS.values())
    assert missing_cpu_features(("AVX2",), {"NEON": True}) == ["AVX2"]


@pytest.mark.parametrize("coretype", sorted(BLAS_KERNEL_NEEDS))
def test_golden_hashes_do_not_depend_on_the_blas_kernel(coretype):
    """OpenBLAS picks its kernels by CPU, and they round differently (with FMA or without: a 3×3
    product or solve changes its last bits between the Haswell and Prescott kernels): the top's
    hash once differed between an AVX-512 Intel machine (SkylakeX kernel) and an AMD one
    (Haswell/Zen kernel). No step calls the BLAS or LAPACK now (3×3 solves and products are
    compiled or einsum, the solver's kinetic-energy comparison too), so forcing each kernel
    (OPENBLAS_CORETYPE, in a fresh process) leaves every golden scene's bits as they are (exact).
    A kernel whose instructions this CPU lacks is skipped, naming them: forced, it dies of SIGILL."""
    missing = missing_cpu_features(BLAS_KERNEL_NEEDS[coretype])
    if missing:
        pytest.skip(f"this CPU lacks {' '.join(missing)}, which OpenBLAS's {coretype} kernel executes")
    _, hashes = _hashes_with("OPENBLAS_CORETYPE", coretype)
    assert hashes == {scene: golden()[scene]["hash"] for scene in GOLDEN_RUNS}


@pytest.mark.parametrize("disabled", ["X86_V4 AVX512_ICL AVX512_SPR", "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"],
                         ids=["an AVX2 machine", "a machine without AVX2"])
def test_golden_hashes_do_not_depend_on_numpy_simd_paths(disabled):
    """numpy dispatches float64 loops by CPU at run time, and some round differently: on an
    AVX-512 machine np.exp, np.arctan2, np.arctan and np.tan (numpy 2.4's X86_V4 paths) differ from
    libm's results, which a machine without AVX-512 gets, in the last bit of 1 value in 13
    (arctan2) to 1 in 700 (arctan) of uniform arguments in ±10. Switching numpy's AVX-512 paths off, then its AVX2 ones too (NPY_DISABLE_CPU_FEATURES, in
    a fresh process; checked to have taken effect), computes what such a machine's numpy would:
    every golden scene's bits stay as they are (exact)."""
    features, hashes = _hashes_with("NPY_DISABLE_CPU_FEATURES", disabled)
    assert "X86_V4=False" in features and ("X86_V3=False" in features) == ("X86_V3" in disabled), features
    assert hashes == {scene: golden()[scene]["hash"] for scene in GOLDEN_RUNS}


def test_state_hash_is_64_hex_digits_and_step_count_counts_steps():
    sim = Simulation.from_file(SCENES / "car.toml")
    sim.set("substeps", 3)
    sim.step(7)
    digest = sim.state_hash()
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert sim.step_count == 7      # whole steps, not sub-steps
    sim.reset()
    assert sim.step_count == 0


def test_batching_reset_and_queries_do_not_change_a_bit():
    """step(150); step(150) = step(300) = 300 × step(1) with every query between steps, and after a
    reset the same again: the app (which queries every frame) and the runner (which does not) see
    the same run."""
    reference = run_hash("tank", 300)
    sim = Simulation.from_file(SCENES / "tank.toml")
    sim.step(150)
    sim.step(150)
    assert sim.state_hash() == reference
    sim.reset()
    for _ in range(300):
        sim.step(1)
        sim.world(), sim.energy(), sim.momentum(), sim.inertial_accelerations(), sim.constraint_accelerations()
        sim.contacts(), sim.sleeping(), sim.world_poses()
    assert sim.state_hash() == reference


def test_hash_differs_when_any_decisive_value_differs():
    """The hash covers settings, time and state: one changed setting, one more step, or a tiny
    impulse each change it."""
    base = Simulation.from_file(SCENES / "car.toml")
    base.step(10)
    digest = base.state_hash()
    other = Simulation.from_file(SCENES / "car.toml")
    other.step(10)
    other.set("iterations", 11)
    assert other.state_hash() != digest
    other.set("iterations", base.settings.iterations)
    assert other.state_hash() == digest        # a setting set back: the same state
    other.apply_impulse(other.names[int(np.flatnonzero(other.motion == "dynamic")[0])], [0.0, 1e-12, 0.0])
    assert other.state_hash() != digest
    base.step(1)
    assert base.state_hash() != digest


@pytest.mark.parametrize("scene", ["tank", "car", "chain", "pyramid", "turntable", "top"])
def test_snapshot_continues_bit_for_bit(scene):
    """Restoring a snapshot, here or from its bytes into a freshly loaded simulation, continues
    exactly as the run that was snapshotted; queries after a restore answer as before."""
    path = SCENES / f"{scene}.toml"
    sim = Simulation.from_file(path)
    sim.step(90)
    snap = sim.snapshot()
    before = sim.world()
    sim.step(60)
    expected = sim.state_hash()
    sim.restore(snap)
    assert sim.step_count == 90
    after = sim.world()
    for name in ("velocity", "acceleration", "angular_velocity", "angular_acceleration"):
        assert np.array_equal(getattr(after, name), getattr(before, name)), name
    sim.step(60)
    assert sim.state_hash() == expected
    fresh = Simulation.from_file(path)
    fresh.restore(Snapshot.from_bytes(snap.to_bytes()))
    fresh.step(60)
    assert fresh.state_hash() == expected


def test_snapshot_keeps_settings_and_refuses_another_scene():
    sim = Simulation.from_file(SCENES / "car.toml")
    snap = sim.snapshot()
    sim.set("integrator", "rk4")
    sim.restore(snap)
    assert sim.settings.integrator == snap.settings["integrator"] != "rk4"
    other = Simulation.from_file(SCENES / "tank.toml")
    with pytest.raises(ValueError, match=r"snapshot is of scene .*car.*not of .*tank"):
        other.restore(snap)


def test_snapshot_bytes_are_checked():
    data = Simulation.from_file(SCENES / "car.toml").snapshot().to_bytes()
    for bad, message in ((data[:-1], "checksum"), (data[:40], "checksum|truncated"), (b"hello" * 20, "not a snapshot"),
                         (data[:100] + bytes([data[100] ^ 1]) + data[101:], "checksum")):
        with pytest.raises(ValueError, match=message):
            Snapshot.from_bytes(bad)


HASH_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.test_determinism import run_hash
print(run_hash("tank", 300))
"""


def test_hash_is_the_same_in_another_process_with_any_hash_seed():
    """A second process, with PYTHONHASHSEED 0 and another value, gets the same bits (no state
    depends on dict or set order of hashed strings)."""
    expected = run_hash("tank", 300)
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", HASH_SCRIPT, str(ROOT)], capture_output=True, text=True, env=env,
                             timeout=600, cwd=ROOT)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split()[-1] == expected


def regenerate():
    hashes = {scene: {"steps": steps, "hash": run_hash(scene, steps)} for scene, steps in sorted(GOLDEN_RUNS.items())}
    tmp = GOLDEN.with_suffix(".tmp")
    tmp.write_text(json.dumps({**hashes, "environment": environment()}, indent=2) + "\n")
    tmp.replace(GOLDEN)
    for scene, entry in hashes.items():
        print(f"{scene:10s} {entry['steps']:5d} steps  {entry['hash']}")
    print("environment:", environment())


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python tests/test_determinism.py --regenerate")
    regenerate()
