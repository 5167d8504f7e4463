"""How this project compiles and caches its numba kernels: the one home of the compile policy.

Every compiled loop in `physics` (and the viewer's few) is decorated with `kernel`, which is numba's
`njit` with these differences, each measured:

1. **One specialization per kernel.** A plain numba dispatcher called from compiled code with a
   constant argument (`_clip(..., 0, 4)`, `_pgs(..., True, ...)`) compiles a new version for that
   constant's *literal* type (`Literal[int](0)`, `Literal[bool](True)`): the narrow phase's support
   function was compiled 12 times and the Gauss–Seidel sweep 3 times, the larger part of the cold
   compile. `Kernel` types the arguments of a call without their literal values (numba's
   `types.unliteral`), so a kernel compiles once per array layout, whatever constants it is called
   with. No kernel here branches on a literal at typing time (`numba.literally` is not used).

2. **A cache that knows what a kernel depends on.** numba keys a cached function on its own file's
   content only, so a kernel that inlined or linked a helper from another module kept running the
   helper's old code after that module changed. `SourceTreeLocator` stamps each cached kernel with
   a digest of its module's source *and of every project module it imports, transitively*
   (`dependency_digest`): change `rotation_kernels.py` and every kernel that may use it is
   recompiled, and nothing else. numba's own index key adds the numba version, the function's
   bytecode and the CPU (name and features), so a cache made on another CPU is never loaded.
   What each module imports is remembered in the cache directory under its source's SHA-256
   (`_ImportTable`), so a start parses only the modules that changed since the last one: parsing
   all of them costs 0.8–1.2 s.

3. **A cache directory that works for every install.** Editable checkouts, built wheels and
   read-only install directories all cache into the user's cache directory (`cache_root`:
   $NUMBA_CACHE_DIR if set, else $XDG_CACHE_HOME or ~/.cache, `hierarchy-sandbox/numba`, in a
   folder of each source tree's own, `_checkout_folder`: about 30 MB once every kernel is
   compiled), never beside the sources. Where that is not writable either, a directory under the system's temporary
   directory is used and one line says so; where nothing is writable the kernels compile in memory
   each run (one line again), never a traceback. Each folder names its tree, and the warm-up removes
   the folders of trees that are gone (`prune_caches`): a deleted clone's 30 MB do not stay.

4. **Interpreted until compiled, where asked.** Between a cold start and its kernels being
   compiled, a process may run every kernel that has no compiled version yet as plain Python
   (`interpreting`): numba compiles the same source, so the interpreted and compiled kernels give
   the same bits (tests/test_tiers.py checks the state hashes), and the two can mix, kernel by
   kernel, within one step. A kernel is interpreted only on threads that do not `allow_compile`;
   the app's kernel loader (app.preparation) does, so kernels switch to compiled code as it loads
   them, with no hand-over. Interpreted, the tank steps in about 20 ms (compiled: 0.1 ms); its
   kernels cost about two minutes of CPU to compile (docs/benchmarks.md, "Start-up").

5. **Inlining at the cost of the code inlined.** numba inlines an `inline="always"` helper by
   running its whole untyped pipeline again at every call site (which inlines the helper's own
   helpers again, recursively), then deep-copying the result block by block, each block's copy
   taking along a copy of the whole scope: every variable and source location of the function.
   A kernel that inlines a few hundred helper calls paid for that quadratically: about a sixth of
   the cold compile (`_inline_at_linear_cost`). Here each helper's untyped IR is built once per
   compile flags and reused, and a block is copied directly: new statements and variables, the
   source locations and constant values shared, a shallow copy of the scope's table of names. On
   the locked numba only (`PATCHED_NUMBA`). The generated code is the same: the golden hashes do
   not move.

6. **No reference counts in the sweep.** numba keeps every array view a loop takes (a row of the
   Jacobian, `jacobian[j]`; a manifold's K, `manifold_k[m]`) alive by incrementing and then
   decrementing its parent's reference count: two atomic operations per view, several views per
   row, in the Gauss–Seidel sweep's innermost loop. A kernel that allocates nothing and returns no
   array needs none of them (its caller holds every array it reads), and `refcounts=False`
   compiles it without numba's runtime (numba's `_nrt=False`): the settled 1,000-box heap's
   single-thread solve at 50 iterations took a third of the time, the tank's solve half, with the
   same bits (`physics.constraints.gauss_seidel._sweep_part`). RATTLE's projections and their parts
   (`physics.constraints.rattle`, whose arena holds every array they use, cut into views by kernels
   without reference counts too, so that no view is released that was not taken), the joint graph's
   factorization and the bodies' passes are compiled so as well: the pendulum's and the tank's steps
   took 15 % less time, the chain's and the rope bridge's a fifth to a quarter less, the same bits.
   numba refuses to compile such a kernel if it allocates (`physics.collision.gjk_epa`'s
   `epa_workspace`, which makes its arrays, keeps its counts); a kernel without them returns no
   array to a caller that counts. A kernel with them also allocates a record of some 50 bytes for
   each array a call from Python gives it, which tracemalloc counts: the bound calls of a sub-step
   (the integrators' passes, the joints' rows, RATTLE's stage, the rows' effective masses, the
   shapes' placement) are compiled without, the velocity solve's stages aside (they return views
   to Python). Every kernel states its setting: numba compiles a kernel that is first called from
   one without counts with that caller's setting where the kernel states none (an allocating kernel
   then fails to compile).

7. **Calls bound to their arguments.** numba types every argument of every call from Python to
   find the compiled version: a named tuple (the kernels' bundles) costs it about 0.3 µs plus
   0.03 µs a field, and a small scene's step makes dozens of calls (a quarter of the tank's step).
   Where a call's arguments are objects whose types cannot change — arrays that live as long as a
   topology and are only ever written in place, bundles of them, numbers — `bind` types them once
   and returns the call going straight to the compiled version (`physics.pipeline.stages.Workspace.calls`);
   a call bound before its kernel was compiled runs through the kernel as usual (interpreted, or
   compiled then) until it is bound again, which its owner does when `generation()` changes.
   Where the arguments are views cut to a sub-step's size from room kept between sub-steps, their
   owner keeps the views by count and the calls by what they are made from (`Memo`: the
   joints' `physics.constraints.rattle.JointBodies`), so that a sub-step whose counts are the
   last one's finds its calls again; where the counts follow the contact points, or the arguments
   are two sets of room written in turn, a call is bound once its arguments come back
   (`SteadyCall`: the narrow phase, the contact stage, the rows' effective masses and the velocity
   solve), and a heap whose counts keep changing types its calls rather than bind every one.

8. **Parallel regions only where Python calls them.** A kernel that calls a `parallel=True` kernel
   of another module links that kernel's region into its own code, and a caller compiled in a
   process that loaded the region from the cache, once cached itself, crashed the next process
   that called it (numba issues 8578 and 10128: the region's functions are named by a counter of
   the process that compiled them). Measured with a net's joint graph eliminated in two halves on
   two threads: an edit of `physics.constraints.rattle` alone recompiled its projections around the
   halves loaded from the cache, and the next process's chain died in its first projection. So a
   parallel kernel is called from Python, or from a kernel of its own module (whose stamp it
   shares: an edit recompiles both), and tests/test_compiled.py checks the sources for it. So the
   joint graph's two halves run on two threads from regions in `physics.constraints.rattle`
   (`_halves`), beside the projections that call them, never from `physics.constraints.joint_graph`.
   A projection variant first met in a later process (a net with a limited hinge after one without)
   is compiled there around the regions loaded from the cache, and it runs, and so does the next
   process that loads it (`test_projections_compiled_around_the_halves_loaded_from_the_cache_run_from_it`).

9. **One process compiles a kernel; the others wait and load it.** numba looks in the cache and,
   on a miss, compiles, so two processes that need the same new version at once (the warm-up's
   two workers, the tests' two) both compile it, and one's work is thrown away when the other's
   file replaces it. `Kernel.compile` holds a lock file beside the kernel's index (`fcntl.flock`,
   which the operating system releases when its process ends, however it ends) from before that
   look to after the save, so the second process waits and then finds it in the cache. A
   kernel's compile holds its callees' locks within its own; calls form no cycle, so two
   processes never wait on each other. Run in turn, cold, on two processes, the warm-up took 398
   and 361 s of CPU where it took 514 and 459 without the lock, and 249 and 219 s of wall time
   where it took 264 and 234: a version is compiled once, and the core that waited for it is
   free sooner for the next. A holder alive but stuck is waited out for `COMPILE_WAIT`, then the
   waiter compiles too. A holder nicer than the waiter is not waited for (the holder writes its
   niceness into the lock file): beside the app, the warm-up's workers compile ahead of need at a
   lower priority, and the scene the user opened must not wait at their pace, so its process
   compiles what it needs itself, as before.

10. **A bound call's arguments unboxed once.** numba's entry point converts every array of every
   call (RATTLE's stage takes 258 a call): sampled over the pendulum's steps, a fifth of the
   step. `bind` hands a kernel without reference counts to `physics.core.unboxed`, which
   flattens the arguments once into an image of the native function's arguments and returns a
   builtin whose code loads them and calls it: the pendulum's step took a fifth less time, the
   ant's a sixth, the same bits. Those builtins' code is compiled once a machine and kept beside
   the kernels (`cache_root()`/trampolines).

11. **No C wrapper.** numba compiles beside each function a C-ABI wrapper (for a kernel passed to
   another as a first-class function value, which none here is) whose code unpacks every array of
   every bundle it is given: a kernel that returns a number from RATTLE's stage's 342 arrays
   compiled in 4.6 s of CPU with it and 3.8 without (0.2 without numba's Python wrapper too, which a
   typed call from Python needs). `kernel` asks for none (numba's `no_cfunc_wrapper` target
   option): the chain's warm-up task compiles in 85 s of CPU, against 95 with the wrappers (cold,
   one process, run in turn), and the golden hashes do not move.

12. **A call between kernels passes what its callee reads.** numba passes an array to a function
   it calls as seven machine words or more (meminfo, parent, size, item size, data, shape, strides)
   and a bundle as all its arrays', on the stack, whether the callee reads them or not: RATTLE's
   stage called its position projection with 1,112 words and that called the evaluation of the
   rows with 463 at each Newton step, and of the pendulum's stage's 26 KB of machine code three
   thousand instructions were pushes. A library links its callees in as `linkonce_odr` functions,
   which LLVM may not change; once numba has optimized the final module, they are made internal
   and LLVM's dead-argument elimination drops every argument a callee never reads, from the
   callee and from each of its calls (`drop_dead_arguments`); what callers link is the module
   numba would give them, taken before (`module_for_linking`). An internal copy is renamed
   (`INTERNAL_SUFFIX`): LLVM's JIT linker registers an object's local symbols by name too, and under
   the callee's own name the copy in a caller's cached object code was what a bound call of the
   callee, looked up by that name, entered with every argument (the ant's joint geometry: the
   process crashed). Every cached kernel's stamp carries `CODEGEN`, so that no process meets code
   cached before such a change (this module is left out of the sources' digest). The pendulum's
   step takes a quarter less time (33 µs against 44, in turn; beside MuJoCo in one process, 7.7
   times its time where it took 9.6), and a cold compile less too, the calls' code being smaller:
   the chain's warm-up task 89 s of CPU where it took 99 (one process, in turn), the whole warm-up
   198 s where it took 211 (two processes). The same arithmetic: the golden hashes do not move.

The cache can be filled ahead of need, on both cores, with `python -m physics warmup`
(physics.tools.warmup).

**numba's internals this module leans on**, each for a gain measured here, each with the test that
fails when a numba release changes it (pyproject pins numba and llvmlite; `PATCHED_NUMBA` gates 5 and 12):

| internal | for | gain | its test (tests/test_compiled.py unless named) |
|---|---|---|---|
| `caching._CacheLocator`, `FunctionCache`, `CompileResultCacheImpl`, `IndexDataCacheFile` | 2, 3: the dependency stamp, the user cache directory | a helper's change recompiles its users | `test_a_kernel_is_recompiled_when_a_module_it_calls_changes`, `test_a_cache_index_naming_a_class_that_moved_is_a_miss`, `test_the_locator_serves_project_files_only` |
| `Dispatcher._compile_for_args`, `add_overload`, `overloads` | 1, 4, 7: unliteral typing, the interpreted tier, bound calls | 1 version instead of 12; the tank moves at once on a cold cache; a quarter of the tank's step | `test_a_kernel_called_with_constants_compiles_once`, tests/test_tiers.py, `test_a_bound_call_goes_through_the_kernel_until_it_is_compiled_then_straight_to_it` |
| `inline_closurecall.InlineWorker` and its module's `copy`, `Scope.localvars._con`, `FunctionIdentity._unique_ids` | 5: inlining at linear cost | the tank's cold compile 65 → 56 s | `test_inlining_keeps_every_call_site_apart` |
| `targetconfig.TargetConfig.__eq__`/`__hash__` | flag comparisons (`_cheap_config_comparisons`) | about 5 % of a cold compile | `test_compile_flags_compare_as_numba_defines_them` |
| the `_nrt` target option | 6: no reference counts in the sweep | the heap's solve 3× faster | `test_a_kernel_without_reference_counts_runs_and_may_not_allocate` |
| the `no_cfunc_wrapper` target option | 11: no C wrapper | the chain's warm-up compile 95 → 85 s | `test_a_kernel_compiles_no_c_wrapper` |
| `Dispatcher.compile` (looks in the cache before it compiles, under the compiler lock), `FunctionCache._cache_path`, `_impl.filename_base` | 9: one process compiles a kernel | the cold warm-up about 120 s of CPU less | `test_a_kernel_another_process_is_compiling_is_waited_for_and_loaded` |
| `CPUCodeLibrary._optimize_final_module`, `_final_module`, `_shared_module` (what `_get_module_for_linking` returns), `_codegen._tm`; linked functions as `linkonce_odr` | 12: dead arguments dropped from calls between kernels | the pendulum's step a quarter less time; the chain's warm-up compile 99 → 89 s | `test_a_call_between_kernels_passes_only_what_the_callee_reads` |
| `BaseContext.get_arg_packer`, `call_conv.get_function_type` and its status codes, `CompileResult.fndesc.llvm_func_name`, `library.get_pointer_to_function`, the array model's members (`physics.core.unboxed`) | 10: arguments unboxed once | the pendulum's step a fifth less time | tests/test_unboxed.py |
"""
import ast
import collections
import copy
import functools
import hashlib
import json
import os
import pickle
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import llvmlite.binding as llvm
import numba
from numba.core import bytecode, config, inline_closurecall, ir, sigutils, targetconfig, types
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile, _CacheLocator
from numba.core.codegen import CPUCodeLibrary
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import OmittedArg
from numba.core.registry import CPUDispatcher

from physics.core.files import open_regular
from physics.core import unboxed

try:
    import fcntl
except ImportError:     # (not on Windows: there each process compiles what it lacks, as numba does)
    fcntl = None

# The packages whose kernels this locator caches (top-level package directories).
PROJECT_PACKAGES = ("physics", "app", "benchmarks")
# The numba whose inlining, flag comparison and final modules `_inline_at_linear_cost`,
# `_cheap_config_comparisons` and `_dead_arguments_dropped` patch (they read its internals); any other
# runs numba's own, slower, with the same result.
PATCHED_NUMBA = "0.68.1"
# What every cached kernel's stamp carries beside its sources' digest (`SourceTreeLocator`): the form
# of the machine code this module has numba generate. This module is left out of the digest (a
# policy change need not recompile anything), so a change that cached code must not meet changes
# this instead: calls between kernels without their dead arguments (module docstring, 12) meeting
# a cached caller whose copy of a callee kept the callee's name crashed the process.
CODEGEN = "dead-arguments-2"
_ROOT = Path(__file__).resolve().parents[2]
_notices = set()


def _notice(text):
    """One line on stderr, once per process (a cache fallback is worth knowing, not a traceback)."""
    if text not in _notices:
        _notices.add(text)
        print(f"note: {text}", file=sys.stderr)


def _writable(path):
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def cache_root():
    """The directory compiled kernels are cached in (see the module docstring), or None when no
    directory can be written (then kernels compile in memory every run)."""
    if config.CACHE_DIR:
        candidates = [Path(config.CACHE_DIR)]
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        candidates = [Path(base) / "hierarchy-sandbox" / "numba" / _checkout_folder()]
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    fallback = Path(tempfile.gettempdir()) / f"hierarchy-sandbox-{uid}" / "numba" / _checkout_folder()
    for path in candidates:
        if _writable(path):
            return path
    if _writable(fallback):
        _notice(f"{candidates[0]} is not writable; compiled kernels are cached in {fallback} instead")
        return fallback
    _notice(f"neither {candidates[0]} nor {fallback} is writable; kernels are compiled afresh each run")
    return None


def _checkout_folder():
    """`checkout-` and 12 hex digits of the SHA-256 of this source tree's path: its own folder in
    the user's cache. numba keeps one index per kernel, stamped with its sources' digest, so two
    checkouts of different sources in one folder overwrote each other's kernels at every run (each
    process compiled what the other had written), while the warm-up's stamp (`warm-` and the
    sources' digest, which each checkout writes) still said warm: the app then started with no
    warm-up beside it and its loading thread compiled RATTLE's kernels itself, a minute with the
    scene unopened (measured)."""
    return "checkout-" + hashlib.sha256(str(_ROOT).encode()).hexdigest()[:12]


SOURCE_TREE = "source-tree"     # in a checkout's cache folder: the path of the source tree it caches (`prune_caches`)
OLD_LAYOUT = ("physics", "app", "trampolines", "imports.json")     # and `warm-*`: the cache's files before its folders


def prune_caches():
    """Remove from the user's cache directory what no source tree can load any more, and name this
    tree in its own folder: each `checkout-` folder names its tree in SOURCE_TREE (written here), and
    a folder whose tree no longer holds this module (a deleted clone or worktree) is removed, as are
    the files of the layout before the checkouts' folders (`OLD_LAYOUT` and `warm-*` stamps directly
    under `hierarchy-sandbox/numba`: kernels no tree reads now). A folder that names no tree (made
    before this was written) is left, and so is an explicit $NUMBA_CACHE_DIR or the temporary
    fallback, which are not ours to sweep. Called by the warm-up (physics.tools.warmup) once it
    has passed. Returns the paths removed."""
    import shutil
    from physics.core.files import write_atomically
    root = cache_root()
    if root is None or config.CACHE_DIR or root.name != _checkout_folder():
        return []
    parent = root.parent
    if parent.parent.name != "hierarchy-sandbox":       # the temporary fallback, or not our layout
        return []
    named = root / SOURCE_TREE
    if not named.exists() or named.read_text(errors="replace") != str(_ROOT):
        write_atomically(named, lambda out: out.write(str(_ROOT)), binary=False)
    removed = []
    for entry in sorted(parent.iterdir()):
        if entry.name.startswith("checkout-"):
            tree = entry / SOURCE_TREE
            if entry == root or not tree.is_file():
                continue
            source = Path(tree.read_text(errors="replace").strip())
            if (source / "physics" / "core" / "compiled.py").is_file():
                continue
        elif entry.name not in OLD_LAYOUT and not entry.name.startswith("warm-"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def _module_of(path):
    """'physics.collision.collision' for .../physics/collision/collision.py (None outside the project packages)."""
    path = Path(path).resolve()
    try:
        parts = path.relative_to(_ROOT).with_suffix("").parts
    except ValueError:
        return None
    if not parts or parts[0] not in PROJECT_PACKAGES:
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _path_of(module, root=_ROOT):
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


IMPORT_TABLE = "imports.json"       # in cache_root(): module → [SHA-256 of its source, its imports]
IMPORT_TABLE_BYTES = 1 << 20         # read at most this much of it (about 60 modules take 10 kB)


class _ImportTable:
    """What each project module imports, kept in the cache directory between processes and keyed by
    the SHA-256 of the module's source, so that a start parses only the modules that changed:
    parsing all of them (ast, about 60 modules) costs 0.8–1.2 s, the larger part of a
    warm `physics run`. A table that cannot be read (missing, special, too large, not JSON of this
    shape) is an empty one; it is written back atomically, and where it cannot be, nothing is lost
    but the next start's time."""

    def __init__(self):
        self.entries, self.changed, self._path = {}, False, None
        self._lock = threading.Lock()       # the app's kernel loader compiles beside the main thread
        root = cache_root()
        if root is None:
            return
        self._path = root / IMPORT_TABLE
        try:
            with open_regular(self._path) as stream:
                text = stream.read(IMPORT_TABLE_BYTES + 1)
            if len(text) > IMPORT_TABLE_BYTES:
                return
            table = json.loads(text)
            self.entries = {module: (sha, frozenset(names)) for module, (sha, names) in table.items()
                            if isinstance(sha, str) and all(isinstance(name, str) for name in names)}
        except (OSError, ValueError, TypeError, AttributeError):
            self.entries = {}

    def lookup(self, module, sha):
        entry = self.entries.get(module)
        return entry[1] if entry is not None and entry[0] == sha else None

    def store(self, module, sha, names):
        with self._lock:
            self.entries[module] = (sha, names)
            self.changed = True

    def save(self):
        with self._lock:
            if not self.changed or self._path is None:
                return
            self.changed = False
            text = json.dumps({module: [sha, sorted(names)] for module, (sha, names) in sorted(self.entries.items())})
        temp = self._path.with_name(f".{IMPORT_TABLE}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_text(text)
            os.replace(temp, self._path)
        except OSError:
            temp.unlink(missing_ok=True)


@functools.lru_cache(maxsize=None)
def _import_table():
    return _ImportTable()


@functools.lru_cache(maxsize=None)
def _imports(module, root=_ROOT):
    """The project modules `module` imports (any form of import, at any depth of its code); under
    the project's own tree, remembered between processes by the source's digest (`_ImportTable`)."""
    path = _path_of(module, root)
    if path is None:
        return frozenset()
    source = path.read_bytes()
    table = _import_table() if root == _ROOT else None
    sha = hashlib.sha256(source).hexdigest()
    known = table.lookup(module, sha) if table is not None else None
    if known is not None:
        return known
    found = _parsed_imports(module, source, path, root)
    if table is not None:
        table.store(module, sha, found)
    return found


def _parsed_imports(module, source, path, root):
    found = set()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] in PROJECT_PACKAGES and _path_of(name, root))
    # this module decides how kernels are compiled and cached, not what they compute: left out, so
    # that changing it does not throw the whole cache away (a change to the code it has numba
    # generate, which cached code must not meet, changes CODEGEN instead)
    return frozenset(found - {module, __name__})


@functools.lru_cache(maxsize=None)
def dependency_digest(module, root=_ROOT):
    """SHA-256 over the sources of `module` and of every project module it imports, transitively
    (sorted by name), under the source tree `root`: the freshness stamp of its cached kernels.
    Computed once per process (a kernel compiled in this process saw these sources)."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_imports(name, root))
    if root == _ROOT:
        _import_table().save()
    digest = hashlib.sha256()
    for name in sorted(seen):
        path = _path_of(name, root)
        if path is not None:
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class SourceTreeLocator(_CacheLocator):
    """numba cache locator for the project's kernels: `cache_root()`/<package path>, stamped with
    `dependency_digest` of the kernel's module (numba compares the stamp stored in a cache index
    with this one and recompiles on any difference)."""

    def __init__(self, py_func, py_file, module):
        self._py_file = py_file         # numba's warnings name it
        self._lineno = py_func.__code__.co_firstlineno
        self._module = module
        self._path = cache_root() / module.rsplit(".", 1)[0].replace(".", os.sep)

    @classmethod
    def from_function(cls, py_func, py_file):
        module = _module_of(py_file)
        if module is None or cache_root() is None:
            return None
        return cls(py_func, py_file, module)

    def get_cache_path(self):
        return str(self._path)

    def get_source_stamp(self):
        return f"{dependency_digest(self._module)} {CODEGEN}"

    def get_disambiguator(self):
        return str(self._lineno)


class _CacheImpl(CompileResultCacheImpl):
    _locator_classes = [SourceTreeLocator]


class _IndexFile(IndexDataCacheFile):
    """numba's index and data files of one kernel, where a file that no longer unpickles is stale,
    a miss, not an error: a cached kernel's index names the classes of its argument types (the
    `NamedTuple` bundles), and numba unpickles the whole index before it compares the source stamp,
    so a bundle moved to another module raised AttributeError at the first call (measured when
    `JointModel` moved from physics.constraints.constraints to physics.constraints.joints) instead of compiling afresh."""

    _STALE = (AttributeError, ImportError, EOFError, TypeError, ValueError, pickle.UnpicklingError)

    def _load_index(self):
        try:
            return super()._load_index()
        except self._STALE:
            return {}

    def load(self, key):
        try:
            return super().load(key)
        except self._STALE:
            return None


class _Cache(FunctionCache):
    _impl_class = _CacheImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _IndexFile(self._cache_path, self._impl.filename_base, self._impl.locator.get_source_stamp())

    def lock_path(self):
        """The file whose lock one process holds while it compiles this kernel (module docstring, 9),
        beside the kernel's index file."""
        return Path(self._cache_path) / f"{self._impl.filename_base}.lock"


# How long a process waits for another that compiles the same kernel before it compiles it itself
# (a holder that hangs: the lock goes with its process, so only a live, stuck one is waited out).
COMPILE_WAIT = 900.0
_held = {}      # lock path -> how deep this process holds it (a kernel compiled within its own compile)


def _niceness():
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (OSError, AttributeError):
        return 0


def _holder_niceness(fd):
    """The niceness the compile lock's holder wrote into it, or None (not written yet)."""
    try:
        return int(os.pread(fd, 16, 0))
    except (OSError, ValueError):
        return None


@contextmanager
def _compiling(path):
    """Hold the compile lock `path` (module docstring, 9) for the block, waiting while another
    process as nice or less holds it (a nicer one is not waited for). Called under numba's
    compiler lock: one thread of a process at a time."""
    if fcntl is None or path in _held:
        _held[path] = _held.get(path, 0) + 1
        try:
            yield
        finally:
            _held[path] -= 1
            if not _held[path]:
                del _held[path]
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:      # the cache directory went away or is read-only now: compile unlocked
        yield
        return
    try:
        deadline = time.monotonic() + COMPILE_WAIT
        mine = _niceness()
        while True:
            try:
                # (flock: released by the kernel when the process ends, however it ends)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.ftruncate(fd, 0)         # the holder's niceness, for those who would wait on it
                os.pwrite(fd, str(mine).encode(), 0)
                break
            except BlockingIOError:
                holder = _holder_niceness(fd)
                if holder is not None and holder > mine:
                    # A nicer process holds it (a warm-up worker compiling ahead of need beside
                    # the app's first scene): waiting would run what this process needs at that
                    # process's priority, so it is compiled here too, as numba would.
                    break
                if time.monotonic() > deadline:
                    _notice(f"another process held {path.name} for {COMPILE_WAIT:.0f} s: compiling it here too")
                    break
                time.sleep(0.02)
        _held[path] = 1
        try:
            yield
        finally:
            del _held[path]
    finally:
        os.close(fd)        # (closing it releases the lock)


class _Tiers(threading.local):
    """Whether kernels without a compiled version run as Python (`interpreting`, process-wide),
    after trying the cache (`load_cached`), and whether this thread compiles all the same
    (`allow_compile`, per thread)."""
    interpret = False           # shared: class attributes, set on the class
    load_cached = False
    compile_here = False


_tiers = _Tiers()


def interpret(on, load_cached=False):
    """Switch interpreting on or off for the process (what `interpreting` does for a block);
    -> the previous (on, load_cached)."""
    before = _Tiers.interpret, _Tiers.load_cached
    _Tiers.interpret, _Tiers.load_cached = bool(on), bool(load_cached)
    return before


@contextmanager
def interpreting(on=True, load_cached=False):
    """Within it, a kernel called with argument types it has no compiled version for runs as
    plain Python instead of compiling (module docstring, 4), except on threads inside
    `allow_compile`. Kernels compiled or loaded meanwhile run compiled. `load_cached`: a kernel
    the cache holds is loaded from it first (a command line's choice; the app's frames leave
    even that to its loading thread, since a load can take a second)."""
    before = interpret(on, load_cached)
    try:
        yield
    finally:
        interpret(*before)


@contextmanager
def allow_compile():
    """On this thread, kernels compile (or load from the cache) as usual, even `interpreting`."""
    before, _tiers.compile_here = _tiers.compile_here, True
    try:
        yield
    finally:
        _tiers.compile_here = before


def is_interpreting():
    """Whether kernels without a compiled version run as Python on this thread now."""
    return _Tiers.interpret and not _tiers.compile_here


_generation = 0         # compiled versions the kernels have gained in this process (`Kernel.add_overload`)


def generation():
    """How many compiled versions kernels have gained in this process so far: calls bound before
    (`bind`) may go through a kernel that has one now, and are bound again."""
    return _generation


def bind(function, *args):
    """`function(*args)` as a call of no arguments (module docstring, 7): straight to the compiled
    version for these arguments' types where the kernel has one, else through the kernel (or the
    plain function) as usual. A kernel without reference counts gets its arguments unboxed once,
    here (module docstring, 10: `physics.core.unboxed`); another goes through its entry point, which
    converts the arguments at each call but does not type them. Only for arguments whose numba
    types cannot change while the call is kept: arrays (dtype, dimensions, layout, writeability)
    and bundles of them, and numbers; and an array's shape, strides and data stay as they were
    bound (written in place, never reshaped in place or resized: the unboxed call keeps them)."""
    if isinstance(function, Kernel):
        overload = function.overloads.get(tuple(map(function.typeof_pyval, args)))
        if overload is not None:
            return unboxed.call(function, overload, args) or functools.partial(overload.entry_point, *args)
    return functools.partial(function, *args)


def binding(function, *args):
    """`bind(function, *args)` as a `make` for `Memo.get` (made only where nothing is found): a partial,
    not a lambda, so that the hot method asking for it makes no closure cells at each of its calls
    (CPython makes a cell for each of a function's locals a nested function reads, as the function
    starts, whether or not the nested one is ever made: RATTLE's stage made twelve a sub-step)."""
    return functools.partial(bind, function, *args)


def typed(call):
    """Whether `call` (made by `bind` or `SteadyCall.get`) goes through a kernel's dispatcher, which types
    its arguments at every call, rather than straight to a compiled version."""
    return isinstance(call, functools.partial) and isinstance(call.func, Kernel)


def same(kept, objects):
    """Whether the sequences `kept` and `objects` hold the same objects in the same order (by
    identity: arrays never compared by value). The hot paths ask it some ten times a sub-step, of
    one to eight objects: an index loop allocates nothing, where `all(map(...))` allocated its map
    object at every call (tracemalloc counted it in the step) and took 1.1–2× as long (at 12
    objects it takes 1.1× map's; a generator over `zip` took twice map's)."""
    n = len(kept)
    if n != len(objects):
        return False
    i = 0
    while i < n:
        if kept[i] is not objects[i]:
            return False
        i += 1
    return True


class Memo:
    """Objects made once from others, for an owner whose arguments live from call to call: bound
    calls (`bind`) and the views of kept room they are bound to. `get(make, objects, *values)` is
    `make()` made once for these objects (by identity, held with what was made, so that no id in
    a key is reused while it is kept) and values (by value); all are made again once a kernel
    gained a compiled version (`generation`: a bound call then goes straight to it) or `limit` are
    kept when another is made (a caller passing fresh objects each time)."""

    def __init__(self, limit):
        self.limit = limit
        self._made, self._generation, self._last = {}, -1, {}

    def __len__(self):
        return len(self._made)

    def get(self, make, objects, *values):
        """`make()` (never None) for these `objects` (a tuple, by identity) and `values` (hashable,
        by value)."""
        found = self.find(objects, *values)
        if found is not None:
            return found
        key = tuple(map(id, objects)) + values
        made = self._made.get(key)
        if made is None:
            if len(self._made) >= self.limit:       # (only here do they grow: `find` and `lookup` need not ask)
                self._made, self._last = {}, {}
            made = self._made[key] = (make(), objects)
        self._last[values] = made
        return made[0]

    def lookup(self, objects, *values):
        """What `get` made for these `objects` and `values`, or None (made none: nothing is made
        here); found, it is the last for these values."""
        if self._generation != _generation:
            self._made, self._generation, self._last = {}, _generation, {}
        made = self._made.get(tuple(map(id, objects)) + values)
        if made is None:
            return None
        self._last[values] = made
        return made[0]

    def find(self, objects, *values):
        """What `get` made last for these values, where it was made for these `objects`, or None: a
        caller on its hot path asks here first and makes its `make` (a partial, an allocation of its
        own at each call: `binding`) only where nothing is found."""
        if self._generation != _generation:
            self._made, self._generation, self._last = {}, _generation, {}
        # the last call made for these values, where its objects are these (an owner asks for the
        # same few again and again: cheaper than the key of every object's id)
        last = self._last.get(values)
        if last is not None and same(last[1], objects):
            return last[0]
        return None


BIND_PAYBACK = 40   # a `SteadyCall`'s calls found bound for each bind past its first two


class SteadyCall:
    """Kernels' calls, bound (`bind`) where a caller passes the same function, objects and values as
    in one of its last `limit` typed calls, typed through numba's entry point elsewhere: for an
    owner whose arguments are views cut by count from room it keeps (the solve's rows and stages),
    or views of two sets of room written in turn (the narrow phase's points, the contact cache's
    stored impulses, the manifolds), the same objects at every call, every other one or every few
    while their counts stay or come back, so that a steady sub-step types no argument, and one
    whose counts keep changing binds nothing (a heap's: the pile's solve took 0.5 ms a step binding
    a call for every new count, which its next sub-step did not use). A bind costs what some twenty
    typed calls do, so past the first two a bind is made only where the calls found bound since the
    first number `payback` (BIND_PAYBACK) for each, or where the calls since the last bind number `payback` times
    2^k for the k-th bind past the first two: arguments that come back once and change (a rope
    bridge's planks) stay typed, and ones that settle after binds spent on a changing start (the
    first steps' growing room) are bound again, at a cost that falls geometrically. Arguments typed
    more than `payback` / 2 times (a bind's cost, by default) are bound whatever those counts say:
    they come back often enough to pay for it. The iiwa swinging over its floor meets two to six contact
    points, each count for a few hundred sub-steps, in two sets of room used in turn: past a long
    run's binds each new count waited out the geometric payback, and nine in ten of its contact
    stage's calls, and half of its solve's, were typed. `counts`: [typed calls, binds, calls found
    bound, calls since the last bind]."""

    def __init__(self, limit, payback=BIND_PAYBACK):
        self.limit, self.payback = limit, payback
        self._calls = Memo(limit)
        self._seen = {}     # the typed calls' (ids of the objects, function, values) -> [objects (held: no id
        #                     reused), how many times they were typed]
        self.counts = [0, 0, 0, 0]

    def __call__(self, function, objects, values, arguments=None):
        """`function(*arguments)`, whose arguments are `objects` (a tuple, by identity) and `values`
        (a tuple, hashable, by value: the numbers among them, and the ids that tell two sets of
        room apart, so that each set's call is found as the last for its values); `arguments` None:
        `objects + values`, made only where the call is not found bound (a kernel whose parameters
        take its objects first and its values after them: a tuple of a dozen or more made at every
        call, for nothing, where the call is found)."""
        call = self._bound(function, objects, values, arguments)
        if call is not None:
            return call()
        return function(*(objects + values if arguments is None else arguments))

    def get(self, function, objects, values, arguments=None):
        """`function(*arguments)` as a call of no arguments (`__call__`'s, `arguments` None as there):
        bound where found or steady, else through the kernel's entry point."""
        call = self._bound(function, objects, values, arguments)
        if call is not None:
            return call
        return functools.partial(function, *(objects + values if arguments is None else arguments))

    def found(self, function, objects, values):
        """The call bound for these arguments (`get`'s, where it went straight to a compiled version),
        or None: nothing is counted or bound here."""
        values = (function,) + values
        return self._calls.find(objects, *values) or self._calls.lookup(objects, *values)

    def _bound(self, function, objects, values, arguments):
        """The bound call found or made for these arguments, or None (typed: counted so)."""
        counts = self.counts
        counts[3] += 1
        values = (function,) + values
        calls = self._calls
        call = calls.find(objects, *values) or calls.lookup(objects, *values)
        if call is not None:
            counts[2] += 1
            return call
        seen = self._seen
        key = tuple(map(id, objects)) + values
        entry = seen.get(key)
        steady = entry is not None
        if steady:
            entry[1] += 1
        else:
            if len(seen) >= self.limit:
                seen.clear()
            seen[key] = [objects, 1]
        binds = counts[1]
        if not steady or (2 * entry[1] <= self.payback and counts[2] < self.payback * (binds - 1)
                          and counts[3] < self.payback * 2 ** max(binds - 2, 0)):
            counts[0] += 1
            return None
        counts[1] += 1
        counts[3] = 0
        return calls.get(binding(function, *(objects + values[1:] if arguments is None else arguments)), objects,
                         *values)


class Kernel(CPUDispatcher):
    """numba's CPU dispatcher, specializing on argument types without their literal values and
    caching through `SourceTreeLocator` (module docstring)."""

    _python = None          # the Python function, as numba's C dispatcher calls it (below)
    _not_cached = False     # the cache had no version of it when asked (`_load_cached`)

    def add_overload(self, cres):
        # every compiled or cached version arrives here (numba's compile and `_load_cached`)
        global _generation
        super().add_overload(cres)
        _generation += 1

    def compile(self, sig):
        # One process at a time compiles a kernel version the cache lacks (module docstring, 9);
        # one that waited finds it in the cache (numba's compile looks there first) and loads it.
        lock_path = getattr(self._cache, "lock_path", None)
        if lock_path is None:       # (numba's NullCache: compiled in memory, nothing to share)
            return super().compile(sig)
        with global_compiler_lock:
            args, _ = sigutils.normalize_signature(sig)
            if tuple(args) in self.overloads:       # (every typing of a caller asks again)
                return super().compile(sig)
            with _compiling(lock_path()):
                return super().compile(sig)

    def _compile_for_args(self, *args, **kws):
        # numba's C dispatcher calls this when no compiled version matches, then calls what it
        # returns with the same (folded) arguments
        if is_interpreting() and not (_Tiers.load_cached and self._load_cached(args)):
            if self._python is None:
                py_func = self.py_func
                self._python = lambda *a, **k: py_func(*(x.value if isinstance(x, OmittedArg) else x for x in a), **k)
            return self._python
        return super()._compile_for_args(*args, **kws)

    def typeof_pyval(self, val):
        # numba types a call's tuple arguments through a functools.singledispatch registry,
        # which a compile on another thread may extend mid-lookup ("dictionary changed size
        # during iteration"): the app's loader compiles while its window runs kernels. The lookup
        # only reads, so it is tried again.
        for _ in range(8):
            try:
                return super().typeof_pyval(val)
            except RuntimeError as error:
                if "changed size during iteration" not in str(error):
                    raise
        return super().typeof_pyval(val)

    def _load_cached(self, args):
        """Load the version for `args` from the cache, as numba's `compile` does before it
        compiles; -> whether the cache had it. A kernel the cache lacked once is not looked up
        again (a step calls the small ones thousands of times)."""
        if self._not_cached:
            return False
        sig = tuple(types.Omitted(a.value) if isinstance(a, OmittedArg) else self.typeof_pyval(a) for a in args)
        with global_compiler_lock:
            if sig in self.overloads:
                return True
            result = self._cache.load_overload(sig, self.targetctx)
            if result is None:
                self._not_cached = True
                return False
            self._cache_hits[sig] += 1
            self.targetctx.insert_user_function(result.entry_point, result.fndesc, [result.library])
            self.add_overload(result)
            return True

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {name: types.unliteral(value) for name, value in kws.items()}
        return super().get_call_template(args, kws)

    def enable_caching(self):
        try:
            self._cache = _Cache(self.py_func)
        except RuntimeError:       # no locator: not under the project's packages, or nothing writable
            pass                   # stays numba's NullCache: compiled in memory


def _inline_at_linear_cost():
    """Make numba's IR inlining (`inline_closurecall.InlineWorker`) linear in the code it inlines
    (module docstring, 5): measured on the tank's cold compile, 65 s of CPU became 56 s, and the
    inlining pass's own share 11 s became 3 s. numba's `inline_ir` copies the callee's IR with
    `copy.deepcopy`, block by block, each copy with a fresh memo, so each block copies the whole
    scope; its module's `copy` is pointed at `_IRCopy`, whose deep copy of a block is built
    directly (`_clone_block`). Applied on PATCHED_NUMBA only: any other numba runs its own
    inlining, slower, with the same result."""
    # numba's internals, not its API: patched only on the numba this project locks (requirements.lock);
    # tests/test_compiled.py fails if it is not installed, so an upgrade re-checks it deliberately
    if numba.__version__ != PATCHED_NUMBA:
        return
    worker = inline_closurecall.InlineWorker
    untyped = worker.run_untyped_passes
    built = {}

    @functools.wraps(untyped)
    def run_untyped_passes(self, func, enable_ssa=False):
        # The untyped IR of `func` depends on it, the flags and the locals only. Cached for the
        # inliner's call (enable_ssa False), whose inline_ir copies the IR before changing anything;
        # an overload's inlining (enable_ssa True) changes the IR it gets, so builds its own.
        if enable_ssa:
            return untyped(self, func, enable_ssa)
        self.flags.enable_ssa = enable_ssa       # what numba's own does to the caller's flags
        key = (func, tuple(sorted((k, repr(v)) for k, v in self.flags._values.items())),
               repr(sorted((self.locals or {}).items())))
        if key not in built:
            built[key] = untyped(self, func, enable_ssa)
            return built[key]
        # each inlined copy gets a function identity of its own, as a fresh build would: inline_ir
        # names the copy's variables after it, and parfors read those names' versions
        function_ir, identity = built[key].copy(), copy.copy(built[key].func_id)
        identity.unique_id = next(bytecode.FunctionIdentity._unique_ids)
        identity.unique_name = f"{identity.func_qualname}${identity.unique_id}"
        function_ir.func_id = identity
        return function_ir

    worker.run_untyped_passes = run_untyped_passes
    inline_closurecall.copy = _IRCopy


def _scope_copy(scope):
    """A copy of an `ir.Scope` whose tables map the same names to the same variables and
    versions: inline_ir reads only the names, defines the callee's variables under new names,
    renames every variable into the caller's scope and drops this one (an overload's inlining
    first rebuilds SSA on it, which may add versions: the version sets are copied)."""
    new = copy.copy(scope)
    new.localvars = copy.copy(scope.localvars)
    new.localvars._con = dict(scope.localvars._con)
    new.redefined = collections.defaultdict(int, scope.redefined)
    new.var_redefinitions = collections.defaultdict(set, {k: set(v) for k, v in scope.var_redefinitions.items()})
    return new


class _IRCopy:
    """`copy` as `inline_closurecall.inline_ir` sees it (`_inline_at_linear_cost`): its deep copy
    of a block is `_clone_block`."""

    copy = staticmethod(copy.copy)

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, ir.Block) and memo is None:
            return _clone_block(value)
        return copy.deepcopy(value, memo)


# IR values copied with their fields as they are (their `value` may be any Python object, a module
# or an array: copy.deepcopy's own rule for them, numba's `__deepcopy__`, shares it too)
_LEAVES = (ir.Const, ir.Global, ir.FreeVar, ir.Arg)


def _clone_block(block):
    """What copy.deepcopy(block) gives, built directly: the block, its statements and expressions
    (and the lists, tuples and dicts in them) new; each variable new, once, in a new scope
    (`_scope_copy`); source locations, constants' values, types and functions shared, as numba's
    own `__deepcopy__` methods share them."""
    scope = _scope_copy(block.scope)
    variables = {}

    def clone(value):
        kind = type(value)
        if kind is ir.Var:
            new = variables.get(id(value))
            if new is None:
                new = variables[id(value)] = ir.Var(scope, value.name, value.loc)
            return new
        if kind is list:
            return [clone(item) for item in value]
        if kind is tuple:
            return tuple(clone(item) for item in value)
        if kind is dict:
            return {key: clone(item) for key, item in value.items()}
        if isinstance(value, (ir.Inst, ir.AbstractRHS)):
            new = object.__new__(kind)
            if isinstance(value, _LEAVES):
                new.__dict__.update(value.__dict__)
            else:
                new.__dict__.update({key: clone(item) for key, item in value.__dict__.items()})
            return new
        return value

    new = ir.Block(scope, block.loc)
    new.body = [clone(statement) for statement in block.body]
    return new


def _cheap_config_comparisons():
    """numba keys its typing caches on the compile flags (`targetconfig.TargetConfig`), whose hash
    and equality build a dict of every option's value, 70 options, at each of the tens of thousands
    of lookups of a compile (about 5 % of it). The same results, cheaper: the hash is that of the
    sorted option names, as numba's own (it hashes the keys of that dict); two configs of one class
    are compared on the options either of them sets."""
    if numba.__version__ != PATCHED_NUMBA:
        return
    config_class = targetconfig.TargetConfig
    equal, hashes = config_class.__eq__, {}

    def __hash__(self):
        kind = type(self)
        if kind not in hashes:
            hashes[kind] = hash(tuple(sorted(self.values())))
        return hashes[kind]

    def __eq__(self, other):
        if type(self) is not type(other):
            return equal(self, other)
        mine, theirs = self._values, other._values
        if mine == theirs:
            return True
        # an option set in neither is its default in both: only those set in either can differ
        # (numba's own compares the options of the class only: a value set under another name is ignored)
        options = type(self).options
        return all(mine.get(name, options[name].default) == theirs.get(name, options[name].default)
                   for name in (mine.keys() | theirs.keys()) & options.keys())

    config_class.__hash__, config_class.__eq__ = __hash__, __eq__


def _dead_arguments_dropped():
    """Module docstring, 12: each library's final module, once numba has optimized it, has the
    functions it linked in from other libraries (`linkonce_odr`, numba's `_get_module_for_linking`)
    made internal and their dead arguments removed (`drop_dead_arguments`); what a caller links
    stays numba's (`module_for_linking`, taken before). Applied on PATCHED_NUMBA only: any other
    numba passes every argument, the same code otherwise."""
    if numba.__version__ != PATCHED_NUMBA:
        return
    optimize = CPUCodeLibrary._optimize_final_module

    def _optimize_final_module(self):
        optimize(self)
        self._shared_module = module_for_linking(self._final_module)
        drop_dead_arguments(self._final_module, self._codegen._tm)

    CPUCodeLibrary._optimize_final_module = _optimize_final_module


INTERNAL_SUFFIX = ".internal"     # a linked callee's name once `drop_dead_arguments` made it internal


def module_for_linking(module):
    """What numba's `CPUCodeLibrary._get_module_for_linking` makes of a library's final `module` for
    its callers to link: a copy whose defined external functions are `linkonce_odr` (one copy kept
    where a caller links several libraries that hold it)."""
    shared = module.clone()
    for function in shared.functions:
        if not function.is_declaration and function.linkage == llvm.Linkage.external:
            function.linkage = llvm.Linkage.linkonce_odr
    return shared


def drop_dead_arguments(module, target_machine):
    """The functions `module` linked in from other libraries (`linkonce_odr`: no caller outside it)
    made internal, and LLVM's dead-argument elimination run on it, which removes from an internal
    function, and from every call of it, each argument the function never reads. numba passes an
    array as its meminfo, parent, size, item size, data, shape and strides, each a machine word,
    and a bundle as all its arrays': a call passes them all on the stack, whichever its callee
    reads. Only the arguments go: the code that computes is the same."""
    internal = False
    for function in module.functions:
        if not function.is_declaration and function.linkage == llvm.Linkage.linkonce_odr:
            function.linkage = llvm.Linkage.internal
            # renamed: the library's object code (cached) then holds no second symbol under the
            # name of the callee's own entry point, whose bound calls pass every argument
            function.name = function.name + INTERNAL_SUFFIX
            internal = True
    if internal:
        passes = llvm.create_new_module_pass_manager()
        passes.add_dead_arg_elimination_pass()
        passes.run(module, llvm.create_pass_builder(target_machine, llvm.create_pipeline_tuning_options()))


_inline_at_linear_cost()
_cheap_config_comparisons()
_dead_arguments_dropped()


def kernel(function=None, *, inline=False, parallel=False, nogil=False, error_model="python", refcounts=True):
    """`@kernel` or `@kernel(inline=True, parallel=..., error_model=..., refcounts=...)`: a cached, nopython
    compiled function (module docstring). inline=True inlines it into its callers at numba's IR
    level (numba's `inline="always"`): for small helpers whose callers need their tuples in
    registers, and for a large function with one call site. A kernel called from another is a
    library of its own, which numba optimizes and compiles to machine code, and then links into
    every caller's library, which optimizes and compiles all of it again: a chain of such calls
    pays for its deepest code once per level. Inlined at its one call site, a function is
    compiled once, in its caller; inlined at several, it is type-inferred and lowered at each.
    nogil=True releases the GIL while it runs. refcounts=False compiles it without numba's
    reference counting (module docstring, 6), for a hot loop that allocates nothing and returns no
    array. fastmath is never on: the golden hashes pin every bit."""
    options = {"nopython": True, "error_model": error_model}
    if inline:
        options["inline"] = "always"
    if parallel:
        options["parallel"] = True
    if nogil:
        options["nogil"] = True
    # stated for every kernel: numba compiles a kernel that a caller without reference counts calls
    # before any other has with the caller's setting where the kernel states none, and one that
    # allocates then fails to compile (the order of compiles is the run's: a warm-up's, the app's)
    options["_nrt"] = bool(refcounts)
    # no C-ABI wrapper (module docstring, 11): a bound call enters the native function itself
    # (`physics.core.unboxed`), a typed one numba's Python wrapper
    options["no_cfunc_wrapper"] = True

    def wrap(py_func):
        if config.DISABLE_JIT:
            return py_func
        dispatcher = Kernel(py_func=py_func, locals={}, targetoptions=options)
        dispatcher.enable_caching()
        return dispatcher

    return wrap(function) if function is not None else wrap
