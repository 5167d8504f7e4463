"""The compile policy (physics.core.compiled): one specialization per kernel whatever constants it is
called with, cache stamps that follow every module a kernel imports, and a cache directory that
works for read-only installs, and a start that parses no module it has seen."""
import ast
import collections
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from physics.core import compiled
from physics.core.compiled import IMPORT_TABLE, SourceTreeLocator, dependency_digest, kernel

ROOT = Path(__file__).resolve().parent.parent


@kernel
def _scaled(x, factor):
    return x * factor


@kernel
def _calls_with_constants(x):
    return _scaled(x, 0) + _scaled(x, 1) + _scaled(x, 2)


@kernel
def _flag(x, on):
    return x if on else -x


@kernel
def _calls_with_both_flags(x):
    return _flag(x, True) + _flag(x, False)


def test_a_kernel_called_with_constants_compiles_once():
    """numba's own dispatcher compiles `_scaled` once per literal (0, 1, 2: three versions) and
    `_flag` once per literal bool; `kernel` compiles each once, for int64 and bool."""
    assert _calls_with_constants(2.0) == 6.0
    assert len(_scaled.signatures) == 1, _scaled.signatures
    assert _calls_with_both_flags(3.0) == 0.0
    assert len(_flag.signatures) == 1, _flag.signatures


def test_the_gauss_seidel_sweep_has_one_version_per_array_layout():
    """The sweep `_pgs` is called with the literals True/False, 1 and slices of the residual;
    before `kernel` each gave it a version of its own (three, ~50 s of compile each)."""
    from physics.pipeline.simulation import Simulation
    from physics.constraints import gauss_seidel
    sim = Simulation.from_file(ROOT / "assets" / "scenes" / "tank.toml")
    sim.step(3)
    # loaded from the cache or compiled: either way one signature per entry point
    assert len(gauss_seidel._solve_stages.signatures) == 1


def test_lie_midpoint_and_its_triple_jump_share_one_version():
    """lie-midpoint and lie-midpoint-4 run the same block kernel with one and three sub-steps; the
    sub-steps are always a 3-tuple and a count, so both are one version of `_step_lie` (a 1-tuple
    and a 3-tuple were two, ~8 s of compile each)."""
    import numpy as np
    from physics.dynamics import integrators
    for integrator in ("lie-midpoint", "lie-midpoint-4"):
        translation, velocity, omega = np.zeros((2, 3)), np.zeros((2, 3)), np.array([[1.0, 2.0, 3.0], [0.0, 0.5, 0.0]])
        rotation = np.repeat(np.eye(3)[None], 2, axis=0)
        integrators.step_bodies(translation, rotation, velocity, omega, np.ones(2), np.array([[1.0, 2.0, 3.0]] * 2),
                                np.zeros((2, 3)), np.zeros((2, 3)), 0.01, integrator=integrator)
    assert len(integrators._step_lie.signatures) == 1, integrators._step_lie.signatures


def test_the_tank_compiles_no_parallel_region():
    """The tank's solver splits no halves (fewer than PARALLEL_MIN rows), so its step reaches the
    serial sweep only: the two-thread sweep's parallel region (seconds of compile) is neither
    compiled nor loaded. A fresh process, so that no other test's heap has loaded it."""
    code = ("from physics.pipeline.simulation import Simulation\n"
            "from physics.constraints import gauss_seidel\n"
            f"sim = Simulation.from_file({str(ROOT / 'assets' / 'scenes' / 'tank.toml')!r})\n"
            "sim.step(3)\n"
            "print(len(gauss_seidel._solve_stages.signatures), len(gauss_seidel._solve_stages_parallel.signatures),\n"
            "      len(gauss_seidel._pgs_parallel.signatures))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0", "0"], out.stdout


def _tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_stamp_follows_every_imported_module(tmp_path):
    """A kernel's stamp changes when any project module it imports (directly or through another)
    changes, and not when an unrelated one does."""
    files = {"physics/__init__.py": "", "physics/a.py": "from physics.b import f\n",
             "physics/b.py": "import physics.c\n", "physics/c.py": "X = 1\n", "physics/d.py": "Y = 1\n",
             "physics/core/compiled.py": "# policy\n"}
    stamps = []
    for version, changes in enumerate([{}, {"physics/d.py": "Y = 2\n"}, {"physics/c.py": "X = 2\n"},
                                       {"physics/core/compiled.py": "# another policy\n"}]):
        root = tmp_path / f"v{version}"      # a tree per version: digests are kept per process
        _tree(root, {**files, **changes})
        files.update(changes)
        stamps.append(dependency_digest("physics.a", root))
    assert stamps[1] == stamps[0], "an unrelated module changed the stamp"
    assert stamps[2] != stamps[1], "a module imported through another did not change the stamp"
    assert stamps[3] == stamps[2], "the compile policy itself is not what a kernel computes"


def test_the_locator_serves_project_files_only():
    def function():
        pass
    assert SourceTreeLocator.from_function(function, str(ROOT / "physics" / "rotation.py")) is not None
    assert SourceTreeLocator.from_function(function, "/usr/lib/python3/somewhere.py") is None


# One free body, no shapes: loading it and asking its world poses compiles a few of the
# hierarchy's kernels (4 s; a step would add the integrator's, 12 s in all).
SPINNER = """[world]
gravity = [0.0, 0.0, 0.0]
[[node]]
name = "spinner"
motion = "dynamic"
inertia = [1.0, 2.0, 3.0]
angular_velocity = [0.1, 5.0, 0.0]
"""


def _run_with_cache_env(env_changes, tmp_path):
    scene = tmp_path / "spinner.toml"
    scene.write_text(SPINNER)
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env["NUMBA_OPT"] = "0"      # where the kernels are cached is the question, not how fast they run: a quicker compile
    env.update(env_changes)
    code = ("import sys; from physics.pipeline.simulation import Simulation;"
            "sim = Simulation.from_file(sys.argv[1]); sim.world_poses(); print('posed', len(sim.names))")
    return subprocess.run([sys.executable, "-c", code, str(scene)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def test_an_unwritable_cache_directory_falls_back_with_one_line(tmp_path):
    """Nothing under /proc can be created, even by root: the user cache directory is unusable, so
    the kernels go to the temporary directory, and a note says where; no traceback."""
    result = _run_with_cache_env({"XDG_CACHE_HOME": "/proc/no-cache-here", "TMPDIR": str(tmp_path)}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "posed 1" in result.stdout
    assert "Traceback" not in result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and str(tmp_path) in notes[0], result.stderr
    assert any(tmp_path.rglob("*.nbi")), "nothing was cached in the fallback directory"


def test_nothing_writable_compiles_in_memory_with_one_line(monkeypatch, capsys):
    """No cache directory at all (neither the user's nor a temporary one can be written): a
    project kernel still compiles and runs, in memory, after one note; no traceback."""
    import physics.core.compiled as compiled
    monkeypatch.setattr(compiled.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-cache-here")
    monkeypatch.setattr(compiled.tempfile, "gettempdir", lambda: "/proc/no-temp-here")
    compiled.cache_root.cache_clear()
    compiled._notices.clear()
    try:
        assert compiled.cache_root() is None
        namespace = {}
        # a function whose source file is a project module, as a kernel of physics would be
        exec(compile("def double(x):\n    return 2 * x\n", str(ROOT / "physics" / "rotation.py"), "exec"), namespace)
        assert SourceTreeLocator.from_function(namespace["double"], str(ROOT / "physics" / "rotation.py")) is None
        double = kernel(namespace["double"])
        assert double(21) == 42
    finally:
        compiled.cache_root.cache_clear()
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "compiled afresh" in notes[0], notes


def test_kernels_keep_their_arithmetic():
    """`kernel` adds no fastmath: (a + b) + c and a + (b + c) stay different where they differ."""
    @kernel
    def left(a, b, c):
        return (a + b) + c
    assert left(1e16, 1.0, -1e16) == 0.0      # 1e16 + 1 rounds to 1e16; reassociated it would be 1.0


def test_a_kernel_is_recompiled_when_a_module_it_calls_changes(tmp_path):
    """End to end, in fresh processes: kernel `outer` (physics/a.py) calls kernel `inner`
    (physics/b.py). After b.py changes, a second process must run the new `inner`, not the
    cached `outer` that linked the old one (numba's own cache, stamped with a.py alone, would)."""
    package = tmp_path / "tree" / "physics"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core").mkdir()
    (package / "core" / "__init__.py").write_text("")
    for name in ("compiled.py", "files.py", "unboxed.py"):
        (package / "core" / name).write_text((ROOT / "physics" / "core" / name).read_text())
    (package / "a.py").write_text("from physics.core.compiled import kernel\nfrom physics.b import inner\n\n\n"
                                  "@kernel\ndef outer(x):\n    return inner(x) + 1\n")

    def run(value):
        (package / "b.py").write_text(f"from physics.core.compiled import kernel\n\n\n@kernel\ndef inner(x):\n"
                                      f"    return x * {value}\n")
        env = {**os.environ, "PYTHONPATH": str(tmp_path / "tree"), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
        result = subprocess.run([sys.executable, "-c", "from physics.a import outer; print(outer(10))"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return int(result.stdout)

    assert run(2) == 21
    assert any((tmp_path / "cache").rglob("a.outer-*.nbi")), "outer was not cached"
    table = json.loads((tmp_path / "cache" / IMPORT_TABLE).read_text())
    assert table["physics.a"][1] == ["physics.b"], "the import table remembers a.py's imports (the policy left out)"
    assert run(3) == 31, "a cached kernel kept the old code of a module it calls"
    assert json.loads((tmp_path / "cache" / IMPORT_TABLE).read_text())["physics.b"][0] != table["physics.b"][0]


SLOW_TO_COMPILE = """import os
import time

from numba.extending import intrinsic

from physics.core.compiled import kernel


@intrinsic
def _typed_slowly(typingctx, x):
    # typing runs as Python inside the compile: where asked, say so, then keep the compile going
    marker = os.environ.get("TYPING_MARKER")
    if marker:
        open(marker, "w").close()
        time.sleep(float(os.environ["TYPING_SECONDS"]))

    def codegen(context, builder, signature, args):
        return args[0]
    return x(x), codegen


@kernel
def doubled(x):
    return 2 * _typed_slowly(x)
"""


def _kernel_tree(tmp_path, **modules):
    """A source tree under tmp_path with physics.core's compile policy and the modules
    physics.NAME = SOURCE; -> the environment a fresh process imports them in, its kernel cache
    tmp_path/cache."""
    package = tmp_path / "tree" / "physics"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    for name in ("compiled.py", "files.py", "unboxed.py"):
        (package / "core" / name).write_text((ROOT / "physics" / "core" / name).read_text())
    for name, source in modules.items():
        (package / f"{name}.py").write_text(source)
    return {**os.environ, "PYTHONPATH": str(tmp_path / "tree"), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}


def _compile_race(tmp_path, holder_niceness, typing_seconds):
    """Process B, at `holder_niceness` above the test's, compiles `doubled` (SLOW_TO_COMPILE), its
    typing taking `typing_seconds`; process A, at the test's niceness, started once B is inside that
    compile, needs the same version. -> (B, A's output: "42 <cache hits> <cache misses>"), B left
    running for the caller to wait for or end."""
    env = _kernel_tree(tmp_path, slow=SLOW_TO_COMPILE)
    marker = tmp_path / "typing"
    script = ("import os, sys\nos.nice(int(sys.argv[1]))\nfrom physics.slow import doubled\n"
              "print(doubled(21), sum(doubled.stats.cache_hits.values()), sum(doubled.stats.cache_misses.values()))")

    def start(niceness, **extra):
        return subprocess.Popen([sys.executable, "-c", script, str(niceness)], cwd=tmp_path, env={**env, **extra},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    holder = start(holder_niceness, TYPING_MARKER=str(marker), TYPING_SECONDS=str(typing_seconds))
    try:
        for _ in range(1200):       # (its start and numba's import: up to two minutes on a busy machine)
            if marker.exists() or holder.poll() is not None:
                break
            time.sleep(0.1)
        assert marker.exists(), holder.communicate(timeout=60)
        second = start(0)
        out, err = second.communicate(timeout=600)
    except BaseException:
        holder.kill()
        raise
    assert second.returncode == 0, err[-2000:]
    return holder, out.split()


def test_a_kernel_another_process_is_compiling_is_waited_for_and_loaded(tmp_path):
    """Module docstring, 9, end to end: B, as nice as A, compiles `doubled`, whose typing takes 8 s;
    A waits for B's compile lock and then loads what B cached: one cache hit, no miss (numba's own
    dispatcher would have compiled it a second time, a miss). An A started late, after B saved it,
    would load it as well: the check never fails on a slow machine, it only stops telling the two
    apart there."""
    holder, second = _compile_race(tmp_path, 0, 8)
    out, err = holder.communicate(timeout=600)
    assert holder.returncode == 0, err[-2000:]
    assert out.split() == ["42", "0", "1"], out      # B compiled it: one miss
    assert second == ["42", "1", "0"], second        # A loaded B's: one hit, no compile


def test_a_process_does_not_wait_for_a_nicer_one_compiling_the_same_kernel(tmp_path):
    """Module docstring, 9: B, 10 nicer than A (a warm-up worker compiling ahead of need beside the
    app), holds `doubled`'s compile lock for 120 s of typing; A does not wait at B's priority but
    compiles the kernel itself (one miss) and is done while B still types."""
    holder, second = _compile_race(tmp_path, 10, 120)
    try:
        assert holder.poll() is None, "the holder ended before the other process was done"
        assert second == ["42", "0", "1"], second       # compiled here, not waited for
    finally:
        holder.kill()
        holder.communicate(timeout=60)


def test_the_import_table_is_read_back_by_digest_and_a_bad_one_is_empty(tmp_path, monkeypatch):
    """The table of each module's imports (physics.core.compiled._ImportTable) that spares a start the
    parse of every module: a new process finds an entry only under the same source digest, and a
    table that is not JSON of its shape, too large, or not a regular file reads as empty, no error."""
    monkeypatch.setattr(compiled, "cache_root", lambda: tmp_path)
    table = compiled._ImportTable()
    table.store("physics.a", "1" * 64, frozenset({"physics.b"}))
    table.save()
    again = compiled._ImportTable()
    assert again.lookup("physics.a", "1" * 64) == {"physics.b"}
    assert again.lookup("physics.a", "2" * 64) is None and again.lookup("physics.z", "1" * 64) is None
    path = tmp_path / IMPORT_TABLE
    for bad in ('{"physics.a": 3}', "[1, 2", '{"physics.a": ["1", [4]]}', " " * (compiled.IMPORT_TABLE_BYTES + 1)):
        path.write_text(bad)
        assert compiled._ImportTable().entries == {}, bad
    path.unlink()
    os.mkfifo(path)         # a FIFO is refused before a read that would wait for a writer
    assert compiled._ImportTable().entries == {}
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file is left behind"


def test_a_start_parses_no_module_whose_source_it_has_seen(monkeypatch):
    """The digests of every physics module from the import table alone, once it holds them: the
    same digests as a start that parses every module, and no parse."""
    import pkgutil

    import physics
    modules = [f"physics.{m.name}" for m in pkgutil.iter_modules(physics.__path__)]

    def digests():
        compiled._imports.cache_clear()
        compiled.dependency_digest.cache_clear()
        return [compiled.dependency_digest(module) for module in modules]

    parsed = digests()
    compiled._import_table.cache_clear()        # a new process: the table as the file holds it
    parses = []
    original = compiled._parsed_imports
    monkeypatch.setattr(compiled, "_parsed_imports", lambda *args: parses.append(args[0]) or original(*args))
    assert digests() == parsed
    assert parses == [], f"parsed again: {parses}"


def test_a_cache_index_naming_a_class_that_moved_is_a_miss(tmp_path, monkeypatch):
    """numba unpickles a kernel's whole cache index before it compares the source stamp, and the
    index names the classes of the argument types: after a `NamedTuple` bundle moved to another
    module its stale index raised AttributeError at the first call. Read through the project's
    cache file it is a miss (the kernel compiles afresh); numba's own file still raises."""
    import sys
    import types

    import pytest
    from numba.core.caching import IndexDataCacheFile

    from physics.core.compiled import _IndexFile
    module = types.ModuleType("bundle_that_moves")
    Bundle = type("Bundle", (), {"__module__": "bundle_that_moves"})
    module.Bundle = Bundle
    monkeypatch.setitem(sys.modules, "bundle_that_moves", module)
    _IndexFile(str(tmp_path), "kernel-1", "stamp").save((Bundle, "signature"), ("compiled",))
    del module.Bundle                                  # the class moved away
    with pytest.raises(AttributeError):
        IndexDataCacheFile(str(tmp_path), "kernel-1", "stamp").load(("anything",))
    assert _IndexFile(str(tmp_path), "kernel-1", "new stamp").load(("anything",)) is None
    _IndexFile(str(tmp_path), "kernel-1", "new stamp").save(("fresh",), ("compiled again",))
    assert _IndexFile(str(tmp_path), "kernel-1", "new stamp").load(("fresh",)) == ("compiled again",)


@kernel(inline=True)
def _clamped_square(x, low, high):
    # locals named as the caller's, a branch and a loop: what renaming and relabelling must keep apart
    y = x * x
    for _ in range(2):
        if y > high:
            y = high
        elif y < low:
            y = low
    return y


@kernel(inline=True)
def _twice_clamped(x, y):
    return _clamped_square(x, 0.0, 4.0) + _clamped_square(y, 1.0, 9.0)


@kernel
def _inlines_many(x, y):
    y_ = _twice_clamped(x, y)
    return y_ + _twice_clamped(y, x) * 10.0 + _clamped_square(x + y, 2.0, 3.0) * 100.0


def test_inlining_keeps_every_call_site_apart():
    """A helper inlined at five sites, four of them inside another inlined helper, from one cached
    untyped IR (physics.core.compiled, inlining at linear cost): each site computes its own values.
    Compared with the helpers run as Python, exactly (the same float operations)."""
    import numba
    from numba.core import inline_closurecall

    import physics.core.compiled as compiled
    assert numba.__version__ == compiled.PATCHED_NUMBA, (
        f"numba {numba.__version__}: re-check physics.core.compiled's patches of its inlining against its source")
    assert inline_closurecall.copy is compiled._IRCopy
    square = _clamped_square.py_func
    twice = lambda x, y: square(x, 0.0, 4.0) + square(y, 1.0, 9.0)  # noqa: E731
    for x, y in [(0.5, 3.0), (-3.0, 0.2), (1.7, -2.5), (0.0, 0.0), (10.0, -10.0)]:
        expected = twice(x, y) + twice(y, x) * 10.0 + square(x + y, 2.0, 3.0) * 100.0
        assert _inlines_many(x, y) == expected, (x, y)


def test_compile_flags_compare_as_numba_defines_them():
    """The flags' cheaper hash and equality (physics.core.compiled) give numba's results: the hash of
    the sorted option names; equal when every option's value is, set explicitly or by default."""
    from numba.core.compiler import Flags
    a, b = Flags(), Flags()
    assert hash(a) == hash(b) == hash(tuple(sorted(a.values())))
    assert a == b
    b.nrt = True
    assert a != b and hash(a) == hash(b)
    a.nrt = True
    assert a == b
    c = Flags()
    c.boundscheck = Flags.options["boundscheck"].default   # explicitly the default: still equal to unset
    assert c == Flags() and Flags() == c
    assert (Flags() == object()) is False


@kernel
def _weighted_sum(values, weight, out):
    out[0] = weight * values.sum()


def test_a_bound_call_goes_through_the_kernel_until_it_is_compiled_then_straight_to_it(monkeypatch):
    """`bind` before the kernel has a version for its arguments' types: the call is the kernel's
    own (which compiles it, and moves `generation`); bound again: the compiled entry point, which
    types nothing (the dispatcher's typing would raise here) and gives the same result, reading
    the bound arrays as they are at the call (they are bound, not their values)."""
    from numba.core.dispatcher import Dispatcher

    from physics.core.compiled import Kernel, bind, generation
    values, out = np.arange(4.0), np.zeros(1)
    before = generation()
    first = bind(_weighted_sum, values, 2.0, out)
    assert first.func is _weighted_sum
    first()
    assert out[0] == 12.0 and generation() > before
    direct = bind(_weighted_sum, values, 2.0, out)
    assert not isinstance(direct.func, Dispatcher)

    def typed(*_):
        raise AssertionError("typed a bound call's arguments")
    monkeypatch.setattr(Kernel, "typeof_pyval", typed)
    values[:] = 1.0
    direct()
    assert out[0] == 8.0


def test_a_memo_keeps_what_it_made_by_its_objects_identity_and_its_values(monkeypatch):
    """`Memo` (bound calls, views of kept room) makes an object once for the same objects (by
    identity) and values, again for an equal but other object or another value, and all of them
    again once a kernel gained a compiled version (`generation` moved: a bound call then goes
    straight to it) or its limit are kept when another is made."""
    from physics.core.compiled import Memo
    made = []

    def make():
        made.append(object())
        return made[-1]

    calls = Memo(limit=3)
    a, b = np.zeros(2), np.zeros(2)
    first = calls.get(make, (a,), 1.0)
    assert calls.get(make, (a,), 1.0) is first and len(made) == 1
    assert calls.get(make, (b,), 1.0) is not first             # equal, not the same: another call
    assert calls.get(make, (a,), 2.0) is not first             # another value
    assert calls.get(make, (a,), 1.0) is first and len(made) == 3 and len(calls) == 3
    monkeypatch.setattr(compiled, "_generation", compiled.generation() + 1)
    assert calls.get(make, (a,), 1.0) is not first and len(calls) == 1
    for value in range(4):      # at the limit: cleared before another is made
        calls.get(make, (a,), float(value))
        assert len(calls) <= 3


def test_a_memo_finds_what_it_made_last_for_the_same_objects_and_values_and_nothing_else(monkeypatch):
    """`Memo.find` (a hot path's first ask, before it makes its closure) gives what `get` made last
    for these values where the objects are the same ones, and None for others, for other values
    and for anything before it was made or after a kernel gained a compiled version."""
    from physics.core.compiled import Memo
    calls = Memo(limit=8)
    a, b = np.zeros(2), np.zeros(2)
    assert calls.find((a,), "rows", 1.0) is None
    made = calls.get(object, (a,), "rows", 1.0)
    assert calls.find((a,), "rows", 1.0) is made
    assert calls.find((b,), "rows", 1.0) is None            # equal, not the same
    assert calls.find((a,), "rows", 2.0) is None            # another value
    assert calls.find((a, b), "rows", 1.0) is None          # more objects than it was made for
    other = calls.get(object, (b,), "rows", 1.0)
    assert calls.find((b,), "rows", 1.0) is other and calls.find((a,), "rows", 1.0) is None     # the last only
    assert calls.get(object, (a,), "rows", 1.0) is made     # (still kept: `get` finds it by the objects' ids)
    monkeypatch.setattr(compiled, "_generation", compiled.generation() + 1)
    assert calls.find((a,), "rows", 1.0) is None and len(calls) == 0


def test_same_compares_by_identity_alone():
    """`same` (the memos' and the broad phase's keys): the same objects in the same order, never
    their values: equal arrays that are other objects differ, a prefix differs (`map` would stop at
    the shorter), and no object's `__eq__` is asked (an array's is elementwise)."""
    from physics.core.compiled import same

    class Unequal:
        def __eq__(self, other):
            raise AssertionError("compared by value")

    a, b, c = np.zeros(2), np.zeros(2), Unequal()
    assert same((a, c), (a, c)) and same((), ())
    assert not same((a, c), (b, c))
    assert not same((a, c), (a,)) and not same((a,), (a, c))
    assert not same((a, c), (c, a))


def test_the_steps_kernel_calls_over_the_workspace_are_bound_to_their_compiled_versions():
    """Once the Workspace's calls have run (the tank: contacts, kinematic and carried bodies, and
    its cargo asleep from about 1 s on), each call whose kernel has a compiled version is bound to
    it (the tank's trees are one generation deep: it carries no velocity through a parent, and
    `carry`'s kernel never runs; the others all do)."""
    from numba.core.dispatcher import Dispatcher

    from physics.pipeline.simulation import Simulation
    sim = Simulation.from_file(ROOT / "assets" / "scenes" / "tank.toml")
    sim.step(150)
    calls = sim._work.calls
    named = [(name, one) for name, call in zip(calls._fields, calls)
             for one in (call if isinstance(call, tuple) else (call,))]       # (place, move: one a generation, a choice)
    unbound = [name for name, call in named if isinstance(call.func, Dispatcher) and call.func.overloads]
    never_ran = {name for name, call in named if isinstance(call.func, Dispatcher) and not call.func.overloads}
    assert named and not unbound and never_ran <= {"carry"}, (unbound, never_ran)


def test_a_kernel_without_reference_counts_runs_and_may_not_allocate():
    """`kernel(refcounts=False)` (numba's private `_nrt` target option, module docstring 6): a
    kernel that only reads and writes its arguments compiles and runs without numba's runtime, and
    one that allocates is refused by numba at compile time, which is what makes the option safe.
    If a numba release renames or drops the option, the first call fails here."""
    import numpy as np

    def scale(a, k):
        for i in range(a.shape[0]):
            a[i] *= k

    def allocate(n):
        return np.zeros(n).sum()

    a = np.arange(4.0)
    kernel(refcounts=False)(scale)(a, 2.0)
    assert a.tolist() == [0.0, 2.0, 4.0, 6.0]
    from numba.core.errors import TypingError
    with pytest.raises(TypingError):    # an allocation needs the runtime it was compiled without
        kernel(refcounts=False)(allocate)(3)
    assert kernel(allocate)(3) == 0.0   # with it, the same function compiles


def test_a_kernel_first_called_from_one_without_reference_counts_keeps_its_own():
    """numba compiles a kernel that a caller without reference counts calls first with the caller's
    setting where the kernel states none: an allocating kernel then fails to compile, whichever
    order a run's compiles take (module docstring 6). `kernel` states the setting of every kernel,
    so the callee keeps its counts. Shown with numba's own decorator, and held with ours."""
    import numba
    import numpy as np
    from numba.core.errors import TypingError

    def allocate(x):
        t = np.zeros(3)
        t[0] = x
        return 2.0 * t[0]

    plain = numba.njit(allocate)
    uncounted = numba.njit(_nrt=False)(lambda x: plain(x))
    with pytest.raises(TypingError):    # numba's default: the callee inherits the caller's setting
        uncounted(1.0)
    ours = kernel(allocate)
    caller = kernel(refcounts=False)(lambda x: ours(x))
    assert caller(1.0) == 2.0


def _kernel_options(function):
    """{option: value} of a function's `@kernel(...)` decorator, or None where it has none."""
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        name = (call.func if call else decorator)
        if isinstance(name, ast.Name) and name.id == "kernel":
            return {k.arg: getattr(k.value, "value", None) for k in call.keywords} if call else {}
    return None


def test_no_kernel_calls_a_parallel_region_of_another_module():
    """Module docstring, 8: a parallel region linked into a kernel of another module crashes from a
    cache that process wrote (numba issues 8578 and 10128). Read from the sources: no kernel names a
    kernel of another module that holds a `parallel=True` kernel's region, directly or through the
    kernels it names (a name resolves to its own module's kernel, else to any module's). Kernels
    are the functions decorated `@kernel`, the project's one compile decorator."""
    kernels, parallel = {}, set()
    for path in sorted((ROOT / "physics").rglob("*.py")) + sorted((ROOT / "app").rglob("*.py")):
        module = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and (options := _kernel_options(node)) is not None:
                kernels[module, node.name] = node
                if options.get("parallel"):
                    parallel.add((module, node.name))
    assert parallel, "no parallel kernel found: the check reads nothing"
    by_name = collections.defaultdict(list)
    for module, name in kernels:
        by_name[name].append((module, name))

    def callees(key):
        # every kernel a body names, called or not (a kernel handed to an inlined helper that calls
        # it: `gauss_seidel._solve_stages_parallel` passes `_pgs_parallel` to `_stages`)
        found = set()
        for node in ast.walk(kernels[key]):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name is not None and name != kernels[key].name:
                own = (key[0], name)
                found.update([own] if own in kernels else by_name.get(name, []))
        return found

    calls = {key: callees(key) for key in kernels}
    holds = set(parallel)       # the kernels whose code holds a region: the parallel ones and their callers
    while True:
        more = {key for key, called in calls.items() if called & holds} - holds
        if not more:
            break
        holds |= more
    crossing = sorted(f"{a[0]}.{a[1]} calls {b[0]}.{b[1]}" for a, called in calls.items() for b in called & holds
                      if b[0] != a[0])
    assert not crossing, crossing


@pytest.mark.long
def test_projections_compiled_around_the_halves_loaded_from_the_cache_run_from_it(tmp_path):
    """Module docstring, 8: RATTLE's projections call the joint graph's two-thread regions of their own
    module (`physics.constraints.rattle._halves`, `_substitute_halves`, `_assemble_halves`), and a
    projection variant met first in a later process is compiled around those regions loaded from
    the cache. Four processes, one after the other, on a copy of the cache without rattle's kernels:
    a split 20 × 20 net (the projections and the regions compiled and cached), the same net with one
    joint a limited, damped hinge (other projection variants, compiled around the cached regions),
    that net again and the first again (everything loaded from the cache). Each runs 40 steps on
    numba's threads, and each net's state hash is the same in both of its runs."""
    import shutil

    net = tmp_path / "net.toml"
    subprocess.run([sys.executable, str(ROOT / "assets" / "scenes" / "make_scenes.py"), "net", "--side", "20", "--out",
                    str(net)], check=True, capture_output=True)
    plain = net.read_text()
    first = '[[joint]]\ntype = "ball"\na = "knot_00_00"\nb = "knot_00_01"\n'
    assert first in plain
    hinged = tmp_path / "hinged.toml"
    hinged.write_text(plain.replace(first, '[[joint]]\ntype = "hinge"\naxis = [0.0, 0.0, 1.0]\nlower = -3.0\n'
                                           'upper = 3.0\ndamping = 0.01\na = "knot_00_00"\nb = "knot_00_01"\n', 1))
    cache = tmp_path / "cache"
    source = compiled.cache_root()
    if source is not None and source.is_dir():
        shutil.copytree(source, cache, ignore=lambda folder, names: [n for n in names if n.startswith("rattle.")])
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    script = ("import sys\nfrom physics import Simulation\nfrom physics.constraints import rattle\n"
              "sim = Simulation.from_file(sys.argv[1])\nsim.step(40)\n"
              "assert sim._work.solver._joint_bodies.graph.split is not None\nprint(sim.state_hash())\n")
    hashes = []
    for path in (net, hinged, hinged, net):
        run = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, env=environment, capture_output=True,
                             text=True, timeout=900)
        assert run.returncode == 0, (path.name, run.returncode, run.stderr[-2000:])
        hashes.append(run.stdout.split()[-1])
    assert hashes[0] == hashes[3] and hashes[1] == hashes[2] and hashes[0] != hashes[1], hashes


def test_a_projection_reaches_the_split_graphs_regions_only_where_numba_prunes_the_branch():
    """RATTLE's projections call the two-thread kernels of a split joint graph (`rattle._split_*`)
    only in the `else` of an `if split is None:` whose test is that comparison alone, `split` a
    kernel's own argument: the branch numba's dead-branch pruning removes where the argument is
    None, so a graph that is not split (every shipped scene) compiles no parallel region. A compound
    test (`if chord and split is None:`) is not pruned, and cost the pendulum's cold start 3.5 s of
    those regions' compile. Read from the source."""
    tree = ast.parse((ROOT / "physics" / "constraints" / "rattle.py").read_text())
    calls = []

    def visit(node, pruned, arguments):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("_split_"):
            calls.append((node.func.id, node.lineno, pruned))
        if isinstance(node, ast.If):
            test = node.test
            alone = (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "split"
                     and "split" in arguments and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
                     and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)
            visit(node.test, pruned, arguments)
            for child in node.body:
                visit(child, pruned, arguments)
            for child in node.orelse:
                visit(child, pruned or alone, arguments)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, pruned, arguments)

    for function in tree.body:
        if isinstance(function, ast.FunctionDef) and _kernel_options(function) is not None and \
                not function.name.startswith("_split_"):
            visit(function, False, {a.arg for a in function.args.args})
    assert calls, "no call of a split graph's kernel found: the check reads nothing"
    assert all(pruned for _, _, pruned in calls), [c for c in calls if not c[2]]


def test_a_kernel_compiles_no_c_wrapper():
    """`kernel` compiles no C-ABI wrapper (module docstring, 11): the library defines the native
    function and numba's Python wrapper, not the C one; the kernel still answers typed from Python
    and through a bound call (`bind`, which enters the native function)."""
    @compiled.kernel(refcounts=False)
    def scaled(a, k):
        return a[0] * k

    a = np.full(1, 3.0)
    assert scaled(a, 2.0) == 6.0
    overload = scaled.overloads[scaled.signatures[0]]
    library = overload.library
    assert library.get_pointer_to_function(overload.fndesc.llvm_func_name)
    assert not library.get_pointer_to_function(overload.fndesc.llvm_cfunc_wrapper_name)
    assert compiled.bind(scaled, a, 2.0)() == 6.0


_FORTY = collections.namedtuple("_FORTY", [f"a{i}" for i in range(40)])


@kernel(refcounts=False)
def _halved_sum(bundle, k):
    """Σ 2⁻ⁱ bundle.a7[(k − i) % 3] over i ≤ k, from a bundle of forty arrays of which it reads one:
    recursive, so that LLVM keeps it a function of its own in its caller (a small callee is inlined)."""
    if k <= 0:
        return bundle.a7[0]
    return bundle.a7[k % 3] + 0.5 * _halved_sum(bundle, k - 1)


@kernel(refcounts=False)
def _two_halved_sums(bundle, k):
    return _halved_sum(bundle, k) + _halved_sum(bundle, k + 1)


def test_a_cached_kernels_stamp_carries_the_code_it_was_generated_as():
    """Every cached kernel's stamp is its sources' digest and `CODEGEN` (module docstring, 12): this
    module is left out of the digest, so code generated another way (linked callees keeping every
    argument, or made internal under their own names) is never loaded beside today's."""
    locator = SourceTreeLocator.from_function(_halved_sum.py_func, __file__)
    if locator is None:     # (a test file outside the project's packages: the physics kernels' own)
        from physics.constraints import rattle
        locator = SourceTreeLocator.from_function(rattle.joint_stage.py_func, rattle.__file__)
    stamp = locator.get_source_stamp()
    assert stamp.split() == [dependency_digest(locator._module), compiled.CODEGEN]


def test_a_call_between_kernels_passes_only_what_the_callee_reads():
    """Module docstring, 12: a kernel that calls another given a bundle of forty arrays, of which
    the callee reads one, passes it three machine words (the return slot, that array's data and k),
    not the 283 of numba's signature: the callee, linked into the caller's library, is made
    internal there and LLVM drops its dead arguments. What callers link of the caller keeps numba's
    own signatures (`linkonce_odr`, every argument), and the result is the Python function's.
    Compiled here (no cache: a library loaded from one holds machine code, not its module)."""
    from numba.core.caching import NullCache

    for dispatcher in (_halved_sum, _two_halved_sums):
        dispatcher._cache = NullCache()
    bundle = _FORTY(*[np.arange(3.0) + i for i in range(40)])
    expected = _halved_sum.py_func(bundle, 5) + _halved_sum.py_func(bundle, 6)
    assert _two_halved_sums(bundle, 5) == expected

    library = _two_halved_sums.overloads[_two_halved_sums.signatures[0]].library

    def callee(module):
        (function,) = [f for f in module.functions if "11_halved_sumB" in f.name and not f.is_declaration]
        return function.linkage, len(list(function.arguments)), function.name.endswith(compiled.INTERNAL_SUFFIX)

    # numba's calling convention's return slot and exception record, then each array of one
    # dimension as meminfo, parent, size, item size, data, shape and stride, then k
    full = 2 + 40 * 7 + 1
    assert callee(library._final_module) == (llvm.Linkage.internal, 3, True)
    assert callee(library._get_module_for_linking()) == (llvm.Linkage.linkonce_odr, full, False)


# the module the fresh processes import: the two kernels above, as written there, and their call
HALVED_SUMS = "\n\n".join([
    "import collections\n\nimport numpy as np\n\nfrom physics.core.compiled import bind, kernel",
    '_FORTY = collections.namedtuple("_FORTY", [f"a{i}" for i in range(40)])',
    inspect.getsource(_halved_sum.py_func), inspect.getsource(_two_halved_sums.py_func),
    # the caller first (from the cache: its object code holds its own copy of the callee), then the
    # callee bound (its entry point, every argument)
    "bundle = _FORTY(*[np.arange(3.0) + i for i in range(40)])\n"
    "print(_two_halved_sums(bundle, 5), bind(_halved_sum, bundle, 5)(), _halved_sum.py_func(bundle, 5))\n"])


def test_a_bound_call_enters_the_callee_itself_after_a_caller_loaded_from_the_cache(tmp_path):
    """End to end, in fresh processes: a caller compiled and cached with its callee's copy made
    internal and its dead arguments dropped (module docstring, 12), loaded from the cache by a
    second process, and the callee then bound from Python (`bind`, which enters its native
    function by name with every argument): the call reaches the callee's own entry point, not the
    caller's copy of it, and returns the Python function's value. (Kept under the callee's own name,
    the copy in the cached object code was what the bound calls of the ant's joint geometry entered,
    with the wrong arguments: the process crashed.)"""
    env = _kernel_tree(tmp_path, sums=HALVED_SUMS)
    answers = []
    for _ in range(2):      # compiled and cached, then loaded from the cache
        result = subprocess.run([sys.executable, "-c", "import physics.sums"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        answers.append([float(value) for value in result.stdout.split()])
    for both, alone, python in answers:
        assert alone == python
    assert any((tmp_path / "cache").rglob("sums._two_halved_sums-*.nbi")), "the caller was not cached"



def test_dead_arguments_are_dropped_from_the_linked_functions_alone():
    """`drop_dead_arguments` on a module of LLVM IR: the linked-in function (`linkonce_odr`), made
    internal under a name of its own, loses the arguments it never reads, at its definition and its
    call; a function of the module's own
    (external: another library or numba's wrapper may call it) keeps every one, read or not; and
    `module_for_linking` gives callers the module as numba would, its external functions
    `linkonce_odr`."""
    module = llvm.parse_assembly("""
define linkonce_odr double @linked(i64 %unread, ptr %data, i64 %also_unread) {
  %x = load double, ptr %data
  ret double %x
}
define double @own(i64 %unread, ptr %data) {
  %x = call double @linked(i64 1, ptr %data, i64 2)
  ret double %x
}
""")
    shared = compiled.module_for_linking(module)
    compiled.drop_dead_arguments(module, llvm.Target.from_default_triple().create_target_machine())
    module.verify()
    linked, own = module.get_function("linked" + compiled.INTERNAL_SUFFIX), module.get_function("own")
    assert linked.linkage == llvm.Linkage.internal and len(list(linked.arguments)) == 1
    assert own.linkage == llvm.Linkage.external and len(list(own.arguments)) == 2
    assert f"call double @linked{compiled.INTERNAL_SUFFIX}(ptr %data)" in str(own)
    assert shared.get_function("own").linkage == llvm.Linkage.linkonce_odr
    assert len(list(shared.get_function("linked").arguments)) == 3


def test_a_steady_call_binds_what_comes_back_and_types_the_rest():
    """`SteadyCall` (counts: typed, binds, found): arguments new at every call (a heap's counts)
    are typed and never bound; arguments met again are bound at their second call and found
    after; two sets used in turn are bound once each; past the first two binds a third set waits
    until the calls found bound pay for it (`payback` each) or `payback` calls have passed. Every
    call's result is the function's, bound or not."""
    steady = compiled.SteadyCall(limit=8, payback=4)

    def add(a, b):
        return a[0] + b[0]

    def call(a, b):
        assert steady(add, (a, b), (), (a, b)) == a[0] + b[0]
        return list(steady.counts[:3])

    for k in range(10):
        call(np.full(1, k), np.ones(1))
    assert call(np.ones(1), np.ones(1)) == [11, 0, 0]
    x, y = np.full(1, 2.0), np.full(1, 3.0)
    call(x, y)
    assert call(x, y) == [12, 1, 0]       # met again: bound
    assert call(x, y) == [12, 1, 1]       # then found
    call(y, x)
    call(x, y)
    assert call(y, x) == [13, 2, 2]       # the other set, met again: bound
    z = np.full(1, 5.0)
    call(z, y)
    assert call(z, y) == [15, 2, 2]       # a third, met again: 2 found pay for no bind past two (4 each) ...
    for _ in range(2):
        call(x, y)
    assert call(z, y) == [15, 3, 4]       # ... 4 do


def test_a_steady_call_binds_arguments_that_keep_coming_back_whatever_its_payback():
    """Past a long run's binds whose calls were never found again (`counts`' binds set to 10: the
    payback's wait grown to `payback` × 2⁸ calls), two sets of arguments used in turn (the iiwa's
    contact points in two sets of room, at a count held for a few hundred sub-steps) are typed only
    until each was typed more than `payback` / 2 times, then bound, then found: typed twice each,
    bound at the third meeting, found after."""
    steady = compiled.SteadyCall(limit=8, payback=4)

    def add(a, b):
        return a[0] + b[0]

    steady.counts[1] = 10
    u, v = np.full(1, 2.0), np.full(1, 3.0)
    for _ in range(2):
        for pair in ((u, v), (v, u)):
            assert steady(add, pair, (), pair) == 5.0
    assert steady.counts[:3] == [4, 10, 0]
    for _ in range(3):
        for pair in ((u, v), (v, u)):
            assert steady(add, pair, (), pair) == 5.0
    assert steady.counts[:3] == [4, 12, 4]


def test_a_steady_call_without_arguments_passes_its_objects_then_its_values():
    """`SteadyCall` with `arguments` None calls `function(*objects, *values)`, typed, bound and
    found alike (the arguments made only where the call is not found bound)."""
    steady = compiled.SteadyCall(limit=8, payback=4)

    def shifted(a, b, k, scale):
        return (a[0] + k) * scale - b[0]

    a, b = np.full(1, 2.0), np.full(1, 0.5)
    for expected_counts in ([1, 0, 0], [1, 1, 0], [1, 1, 1]):      # typed, then bound, then found
        assert steady(shifted, (a, b), (3.0, 2.0)) == (2.0 + 3.0) * 2.0 - 0.5
        assert list(steady.counts[:3]) == expected_counts
    assert steady.get(shifted, (a, b), (3.0, 2.0))() == 9.5


def test_each_checkout_caches_in_a_folder_of_its_own(monkeypatch, tmp_path):
    """Two source trees (two clones, a worktree) cache their kernels apart under the user's cache
    directory, each in its own folder (`_checkout_folder`, from its path): numba keeps one index per
    kernel, so sharing one folder, checkouts of different sources overwrote each other's kernels at
    every run. The same tree finds the same folder again; an explicit $NUMBA_CACHE_DIR is used as
    it is."""
    import physics.core.compiled as compiled
    monkeypatch.setattr(compiled.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    roots = []
    try:
        for tree in ("/work/one", "/work/two", "/work/one"):
            monkeypatch.setattr(compiled, "_ROOT", Path(tree))
            compiled.cache_root.cache_clear()
            roots.append(compiled.cache_root())
        assert roots[0] == roots[2] and roots[0] != roots[1], roots
        assert all(root.parent == tmp_path / "hierarchy-sandbox" / "numba" for root in roots), roots
        monkeypatch.setattr(compiled.config, "CACHE_DIR", str(tmp_path / "explicit"))
        compiled.cache_root.cache_clear()
        assert compiled.cache_root() == tmp_path / "explicit"
    finally:
        compiled.cache_root.cache_clear()


def test_the_warm_up_removes_the_caches_of_trees_that_are_gone(monkeypatch, tmp_path):
    """`prune_caches` names this tree in its own folder, then removes the folders whose named tree
    no longer holds the project (a deleted clone) and the files of the layout before the checkouts'
    folders; it keeps a live tree's folder, a folder that names no tree, and anything under an
    explicit $NUMBA_CACHE_DIR."""
    import physics.core.compiled as compiled
    monkeypatch.setattr(compiled.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    numba_dir = tmp_path / "cache" / "hierarchy-sandbox" / "numba"
    live, gone = tmp_path / "live", tmp_path / "gone"
    (live / "physics" / "core").mkdir(parents=True)
    (live / "physics" / "core" / "compiled.py").write_text("")
    folders = {}
    for name, tree in (("live", live), ("gone", gone)):
        folders[name] = numba_dir / f"checkout-{name}"
        (folders[name] / "physics").mkdir(parents=True)
        (folders[name] / "physics" / "kernel.nbi").write_bytes(b"x")
        (folders[name] / compiled.SOURCE_TREE).write_text(str(tree))
    unnamed = numba_dir / "checkout-unnamed"
    unnamed.mkdir()
    (numba_dir / "physics" / "constraints").mkdir(parents=True)
    (numba_dir / "imports.json").write_text("{}")
    (numba_dir / "warm-0123").write_text("")
    try:
        compiled.cache_root.cache_clear()
        mine = compiled.cache_root()
        removed = compiled.prune_caches()
        assert set(removed) == {folders["gone"], numba_dir / "physics", numba_dir / "imports.json",
                                numba_dir / "warm-0123"}, removed
        assert sorted(p.name for p in numba_dir.iterdir()) == sorted(["checkout-live", "checkout-unnamed", mine.name])
        assert (mine / compiled.SOURCE_TREE).read_text() == str(compiled._ROOT)
        assert compiled.prune_caches() == []            # nothing left to remove; its own folder kept
        explicit = tmp_path / "explicit"
        (explicit / "warm-0123").parent.mkdir()
        (explicit / "warm-0123").write_text("")
        monkeypatch.setattr(compiled.config, "CACHE_DIR", str(explicit))
        compiled.cache_root.cache_clear()
        assert compiled.prune_caches() == [] and (explicit / "warm-0123").exists()
    finally:
        compiled.cache_root.cache_clear()
