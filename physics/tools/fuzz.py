"""A fuzzer for the scene format: mutated copies of the shipped scenes, each loaded and stepped in
a worker process under a time limit, as a user would try them.

    python -m physics.tools.fuzz --cases 10000 [--seed 0] [--steps 20] [--timeout 60] [--keep DIR]
    python -m physics.tools.fuzz --replay DIR/case-17.pickle      # one case, in this process, traceback shown

A case is a shipped scene (every one but the 10^4-node stress scene) parsed, changed by one to three
mutations drawn by hypothesis strategies — a key set to a hostile value (wrong type, NaN, ±inf,
1e308, 5e-324, huge integers, zero and negative numbers, deep nesting), a known key added with such
a value, a key removed, a parent cycle, an event or joint on any node — written back as TOML, then
possibly corrupted as text (truncated, bit-flipped, characters inserted or deleted, brackets nested
deep), followed by live `Simulation.set` calls with hostile values (numpy arrays included).

Each case ends in one of:
- refused: a SceneError naming the case's file (and a key for anything past the TOML syntax), or
  a load or a step refused by the contact budget (`physics.constraints.solver.ContactBudgetError`: shapes
  inside one another making more pairs than a step may take; `physics.pipeline.simulation.OverlapError`:
  more than 10,000 pairs inside one another at load);
- ran: loaded, the live settings refused cleanly (a ValueError naming the key, the settings
  unchanged) or applied, and `--steps` steps taken (or as many as fit in a few seconds);
- divergence reported: a step raised a ValueError or ArithmeticError naming a node, or the state
  went non-finite and `Simulation.first_non_finite` names the node (what the app and runner report);
- failed: anything else — another exception (a traceback), a refusal that does not name the file
  or key, a refused setting that changed the state, a worker that died (a crash) or did not answer
  within `--timeout` seconds (a hang). Failed cases are saved for --replay.

The worker is one subprocess that runs case after case (numba's import is paid once) while this
process draws the next; it is restarted after a crash or a hang (a hang's limit counts from when
its answer is awaited, the next case drawn). docs/reliability.md holds the tally of a recorded run.
"""
import argparse
import contextlib
import datetime
import functools
import hashlib
import io
import json
import math
import os
import pickle
import re
import resource
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from physics.tools.fuzz_models import DRAW as MODEL_DRAW, place_files, read_drawn_meshes
from physics.tools.fuzz_signals import draw_signal_case

# hypothesis (a dev extra) and the physics modules are imported inside the functions that use them:
# the process that draws the cases loads no kernel (its worker does), and `import physics` never
# needs hypothesis.

SCENES = Path(__file__).resolve().parents[2] / "assets" / "scenes"
SKIPPED_SCENES = ("stress",)   # 10^4 nodes: a second to load, too slow to mutate thousands of times
OUTCOMES = ("refused", "ran", "divergence", "stopped", "failed")   # stopped: by a signal, as documented
STEP_BUDGET = 3.0              # s of stepping per case; a case that takes longer stops early (still 'ran')
FIRST_TIMEOUT = 600.0          # s for the worker's first answer: importing numba's cached kernels
MEMORY_MAX = 2**30             # bytes a case may add to the worker's resident memory at its peak:
                               # no input may take a command past about a gigabyte (docs/reliability.md)


# --- cases ---------------------------------------------------------------------------------------

@dataclass
class Case:
    """A scene text (bytes: corruption may leave invalid UTF-8), live settings to try, and how it was made."""

    scene: str
    text: bytes
    settings: list = field(default_factory=list)    # (name, value) pairs for Simulation.set
    mutations: list = field(default_factory=list)   # human-readable
    kind: str = "scene"                             # KINDS: what `text` is and which reader takes it
    argv: list = field(default_factory=list)        # a command line (kind "command")
    suffix: str = ""                                # a scene case's file suffix when not .toml: a robot
                                                    # model's .urdf or .xml (physics.io.urdf, physics.io.mjcf)
    files: list = field(default_factory=list)       # (name, bytes or a special file's name) written beside
                                                    # the case's file (physics.tools.fuzz_models.place_files)
    delay: float = 0.0                              # kind "signal": s after the command starts
    signal: int = 0                                 # kind "signal": its number (physics.tools.fuzz_signals)


def _key(name):
    if name and all(c.isalnum() or c in "-_" for c in name) and name.isascii():
        return name
    return _string(name)


def _string(text):
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF:
            out.append(f"\\u{ord(c) if ord(c) < 0xD800 else 0xFFFD:04x}")
        else:
            out.append(c)
    return "".join(out) + '"'


def _value(value):
    """One TOML value, inline (tables as { k = v }); the inverse of tomllib for what it parses."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return value.isoformat()   # dates and times


def to_toml(document):
    """TOML text for a parsed document: top-level values first, then [tables] and [[arrays of tables]]."""
    lines, tables = [], []
    for key, value in document.items():
        if isinstance(value, dict):
            tables.append(f"\n[{_key(key)}]")
            tables.extend(f"{_key(k)} = {_value(v)}" for k, v in value.items())
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            for item in value:
                tables.append(f"\n[[{_key(key)}]]")
                tables.extend(f"{_key(k)} = {_value(v)}" for k, v in item.items())
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    return "\n".join(lines + tables) + "\n"


@functools.lru_cache(maxsize=None)
def _strategies():
    """The hypothesis strategies (imported here: hypothesis is a dev dependency), built once: a
    strategy is an immutable description, drawn from anew each time."""

    from hypothesis import strategies as st

    from physics.core import validation as limits
    from physics.io.scene import EVENT_KEYS, JOINT_KEYS, NODE_KEYS
    from physics.core.settings import Settings

    special = st.sampled_from([
        math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -5e-324, 0.0, -0.0, -1.0, 1e200, 1e-300, 2.0**63,
        0, -1, 2**31, 2**63 - 1, 2**63, 2**64, -2**63 - 1, 10**400, -10**400,
    ])
    at_limits = st.sampled_from([   # legal extremes: the physics must survive them (or report divergence)
        limits.LENGTH_MAX, -limits.LENGTH_MAX, limits.LENGTH_MIN, limits.MASS_RANGE[0], limits.MASS_RANGE[1],
        limits.FORCE_MAX, limits.SPEED_MAX, limits.ACCELERATION_MAX, limits.SUBSTEPS_MAX, limits.ITERATIONS_MAX,
        limits.DT_RANGE[0], limits.DT_RANGE[1], limits.MASK_RANGE[1], limits.CFM_MAX, 1, 2,
    ])
    scalar = st.one_of(
        special, at_limits, st.floats(allow_nan=True, allow_infinity=True), st.integers(),
        st.floats(-10.0, 10.0), st.booleans(), st.text(max_size=8),
        st.dates(min_value=datetime.date(1, 1, 1)),
    )
    deep = st.integers(2, 200).map(lambda depth: eval("[" * depth + "]" * depth))   # nested lists
    hostile = st.one_of(
        scalar, scalar, scalar,
        st.lists(scalar, min_size=0, max_size=5),
        st.lists(st.one_of(special, at_limits, st.floats(-10.0, 10.0)), min_size=3, max_size=4),
        deep,
        st.dictionaries(st.text(max_size=6), scalar, max_size=3),
    )
    keys = {"node": NODE_KEYS, "world": Settings.names(), "joint": JOINT_KEYS, "event": EVENT_KEYS,
            "shape": ("type", "size", "radius", "height", "normal", "offset", "group", "mask", "collide_with_parent")}
    import numpy as np
    live = st.one_of(
        hostile,
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=4).map(np.array),
        st.sampled_from([np.array([True, False, True]), np.array(["1", "2", "3"]), np.zeros((3, 3)),
                         np.float64("nan"), np.int64(2**62), np.array(5.0), np.bool_(True)]),
    )
    numeric = st.one_of(special, at_limits, st.floats(-1e3, 1e3), st.floats(-10.0, 10.0))

    def like(old):
        """A value of the old one's type most of the time (a number, or a list of numbers of its
        length with one element or all changed), so that mutations reach the physics too."""
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            return st.one_of(numeric, numeric, hostile)
        if isinstance(old, list) and old and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in old):
            one = st.tuples(st.integers(0, len(old) - 1), numeric).map(lambda change: [change[1] if k == change[0] else x
                                                                                          for k, x in enumerate(old)])
            return st.one_of(one, one, st.lists(numeric, min_size=len(old), max_size=len(old)), hostile)
        return hostile

    setting_names = st.one_of(st.sampled_from(Settings.names()), st.sampled_from(Settings.names()), st.text(max_size=5))
    return st, special, hostile, like, keys, live, setting_names


def _paths(document, prefix=()):
    """Every key path in a parsed document: tuples of dict keys and list indices."""
    items = document.items() if isinstance(document, dict) else enumerate(document) if isinstance(document, list) else ()
    for key, value in items:
        yield prefix + (key,)
        if isinstance(value, (dict, list)) and len(prefix) < 4:
            yield from _paths(value, prefix + (key,))


def _container(document, path):
    for key in path[:-1]:
        document = document[key]
    return document


_PARSED = {}     # a base scene's text -> its parsed document (`draw_case` copies it, never changes it)


def _copy(value):
    """A parsed TOML document copied: its tables and arrays new, its leaves (str, numbers, dates:
    immutable) shared; what copy.deepcopy gives for a tree with no shared parts, several times faster."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def draw_case(data, bases):
    """One Case, drawn from hypothesis' `data` (st.data()); `bases` maps a scene name to its text."""

    st, special, hostile, like, keys, live, setting_names = _strategies()
    scene = data.draw(st.sampled_from(sorted(bases)), label="scene")
    if bases[scene] not in _PARSED:         # each base is parsed once (the pile's 170 kB take 0.1 s)
        _PARSED[bases[scene]] = tomllib.loads(bases[scene])
    document = _copy(_PARSED[bases[scene]])
    mutations = []
    for _ in range(data.draw(st.integers(0, 3), label="mutations")):
        kind = data.draw(st.sampled_from(["set", "set", "set", "add", "delete", "parent", "event", "joint"]))
        nodes = document.get("node") if isinstance(document.get("node"), list) else []
        # (a node whose name a mutation deleted names nothing: TOML has no null to write)
        names = [node.get("name") for node in nodes if isinstance(node, dict) and node.get("name") is not None] or ["nobody"]
        if kind in ("set", "delete"):
            paths = list(_paths(document))
            if not paths:
                continue
            path = data.draw(st.sampled_from(paths))
            container = _container(document, path)
            if kind == "delete":
                if isinstance(container, dict):
                    del container[path[-1]]
                else:
                    container.pop(path[-1])
            else:
                container[path[-1]] = data.draw(like(container[path[-1]]))
            mutations.append(f"{kind} {path}" + (f" = {container[path[-1]]!r:.60}" if kind == "set" else ""))
        elif kind == "add":
            table = data.draw(st.sampled_from(sorted(keys)))
            key = data.draw(st.sampled_from(keys[table]))
            value = data.draw(hostile)
            if table == "world":
                target = document.setdefault("world", {})
            elif table == "shape":
                hosts = [node for node in nodes if isinstance(node, dict) and isinstance(node.get("shape"), dict)]
                target = data.draw(st.sampled_from(hosts))["shape"] if hosts else None
            else:
                rows = document.get(table) if isinstance(document.get(table), list) else []
                target = data.draw(st.sampled_from(rows)) if rows else None
            if isinstance(target, dict):
                target[key] = value
                mutations.append(f"add {table}.{key} = {value!r:.60}")
        elif kind == "parent" and nodes:
            node = data.draw(st.sampled_from(nodes))
            if isinstance(node, dict):
                node["parent"] = data.draw(st.sampled_from(names))
                mutations.append(f"parent of {node.get('name')!r} = {node['parent']!r}")
        elif kind == "event":
            event = {"time": data.draw(st.one_of(st.floats(0.0, 0.2), special)), "node": data.draw(st.sampled_from(names)),
                     "impulse": data.draw(st.lists(st.one_of(special, st.floats(-100.0, 100.0)), min_size=3, max_size=3))}
            if isinstance(document.get("event", []), list):
                document.setdefault("event", []).append(event)
                mutations.append(f"event {event!r:.80}")
        elif kind == "joint":
            joint = {"type": data.draw(st.sampled_from(["ball", "hinge", "slider", "fixed", "distance", "rope", "six_axis"])),
                     "b": data.draw(st.sampled_from(names)), "anchor": data.draw(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))}
            if joint["type"] == "six_axis":     # axes of any type, order and direction (parallel ones too), some limited
                axis = st.fixed_dictionaries({"type": st.sampled_from(["slider", "hinge"]),
                                              "axis": st.lists(st.one_of(st.floats(-1.0, 1.0), special), min_size=3, max_size=3)},
                                             optional={key: st.one_of(special, st.floats(-3.0, 3.0)) for key in
                                                       ("lower", "upper", "damping", "stiffness", "coordinate", "ref")})
                joint["axes"] = data.draw(st.lists(axis, max_size=7))
            if data.draw(st.booleans()):
                joint["a"] = data.draw(st.sampled_from(names))
            if isinstance(document.get("joint", []), list):
                document.setdefault("joint", []).append(joint)
                mutations.append(f"joint {joint!r:.80}")
    text = to_toml(document).encode()
    corruption = data.draw(st.sampled_from(["none"] * 8 + ["truncate", "flip", "insert", "delete", "nest"]))
    if corruption != "none" and text:
        where = data.draw(st.integers(0, len(text) - 1))
        if corruption == "truncate":
            text = text[:where]
        elif corruption == "flip":
            flipped = bytearray(text)
            for _ in range(data.draw(st.integers(1, 8))):
                at = data.draw(st.integers(0, len(text) - 1))
                flipped[at] ^= 1 << data.draw(st.integers(0, 7))
            text = bytes(flipped)
        elif corruption == "insert":
            text = text[:where] + data.draw(st.text(max_size=6)).encode() + text[where:]
        elif corruption == "delete":
            text = text[:where] + text[where + data.draw(st.integers(1, 40)):]
        else:
            depth = data.draw(st.sampled_from([33, 100, 1000, 100000]))
            text += b"\ndeep = " + b"[" * depth + b"]" * depth + b"\n"
        mutations.append(f"text: {corruption} at byte {where}")
    settings = [(data.draw(setting_names), data.draw(live)) for _ in range(data.draw(st.integers(0, 2)))]
    return Case(scene, text, settings, mutations)


# Robot models (URDF, MJCF) from the dev extra's packages, mutated as XML text: one case in ten.
MODEL_SHARE = 10
XML_HOSTILE = ("nan", "inf", "-1", "0", "1e308", "5e-324", "", "x", "1 2", "0 0 0", "0 0 0 0", "-0.5 0.2 0.1",
               "hinge", "ball", "free", "fixed", "screw", "world", "none.stl")


def model_bases():
    """name -> (suffix, text) of models whose geometry is all primitives (the text is written to a
    temporary folder, away from any mesh file); empty without pybullet_data and gymnasium."""
    bases = {}
    try:
        import pybullet_data
        a1 = (Path(pybullet_data.getDataPath()) / "a1" / "a1.urdf").read_text()
        bases["a1"] = (".urdf", re.sub(r"<visual>.*?</visual>", "", a1, flags=re.S))   # its meshes stay behind
        import gymnasium
        for name in ("ant", "humanoid"):
            bases[name] = (".xml", (Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / f"{name}.xml").read_text())
    except (ImportError, OSError):
        pass
    return bases


def draw_model_case(data, models):
    """One Case of a robot model: one to three attribute values made hostile, elements removed or
    doubled, the text cut short."""

    from hypothesis import strategies as st
    name = data.draw(st.sampled_from(sorted(models)), label="model")
    suffix, text = models[name]
    mutations = []
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        kind = data.draw(st.sampled_from(["value", "value", "element", "cut"]))
        if kind == "value":
            spans = [m.span(2) for m in re.finditer(r'(\w+)="([^"]*)"', text)]
            if not spans:
                continue
            start, end = data.draw(st.sampled_from(spans))
            value = data.draw(st.sampled_from(XML_HOSTILE))
            text = text[:start] + value + text[end:]
        elif kind == "element":
            spans = [m.span() for m in re.finditer(r"<(\w+)[^<>]*/>", text)]
            if not spans:
                continue
            start, end = data.draw(st.sampled_from(spans))
            value = text[start:end] * 2 if data.draw(st.booleans()) else ""
            text = text[:start] + value + text[end:]
        else:
            start = data.draw(st.integers(0, len(text)))
            value, text = "", text[:start]
        mutations.append(f"{kind} at {start}: {value!r:.60}")
        if not text:
            break
    settings = []
    return Case(name, text.encode(), settings, mutations, suffix=suffix)


# --- one case, in the worker ---------------------------------------------------------------------

def _names_node(message, names):
    return any(f"'{name}'" in message or f'"{name}"' in message for name in names)


def run_case(case, path, steps, budget=STEP_BUDGET):
    """One case of any kind (its bytes written to `path`) -> (outcome, detail)."""
    kind = getattr(case, "kind", "scene")      # (cases saved before kinds were scenes)
    if kind == "snapshot":
        return run_snapshot(case, path, steps, budget)
    if kind == "recording":
        return run_recording(case, path, steps, budget)
    if kind == "command":
        return run_command(case, Path(path).parent)
    if kind == "signal":
        from physics.tools.fuzz_signals import run_signal_case
        return run_signal_case(case, Path(path).parent)
    if kind in MODEL_DRAW:     # a robot model and its files, which the app's drawn meshes read too
        return run_scene(case, path, steps, budget, loaded=read_drawn_meshes)
    return run_scene(case, path, steps, budget)


def run_scene(case, path, steps, budget=STEP_BUDGET, loaded=None):
    """Load, set and step one scene case (its text written to `path`) -> (outcome, detail);
    `loaded(sim)`, if given, is called once the scene has loaded (what the app would do next)."""
    from physics.io.scene import SceneError
    from physics.pipeline.simulation import OverlapError, Simulation
    from physics.constraints.solver import ContactBudgetError

    path = Path(path)
    path.write_bytes(case.text)
    try:
        sim = Simulation.from_file(path)
    except (ContactBudgetError, OverlapError) as error:     # shapes inside one another, refused at load
        return "refused", f"at load: {error}"
    except SceneError as error:
        message = str(error)
        syntax = error.key is None and ("TOML" in message or "UTF-8" in message or "nest" in message or "XML" in message)
        element = (error.node or "").startswith("<")   # a robot model's error names its element
        if str(path) not in message or not (syntax or error.key is not None or element):
            return "failed", f"a SceneError without the file or key: {message}"
        if "No module named" in message:        # a reader's dependency missing from the install
            return "failed", f"a refusal for want of a module: {message}"
        return "refused", message
    except Exception:
        return "failed", "at load: " + traceback.format_exc()
    if loaded is not None:
        loaded(sim)
    for name, value in case.settings:
        before = repr(sim.settings)
        try:
            sim.set(name, value)
        except ValueError as error:
            if repr(sim.settings) != before:
                return "failed", f"sim.set({name!r}, ...) refused but changed the settings: {error}"
            if not isinstance(name, str) or repr(name) not in str(error):
                return "failed", f"sim.set({name!r}, ...) refused without naming the key: {error}"
        except Exception:
            return "failed", f"sim.set({name!r}, {value!r:.60}): " + traceback.format_exc()
    return _step(sim, steps, budget)


def _step(sim, steps, budget):
    """Step a loaded or restored simulation -> ran, divergence (named), refused (the contact
    budget) or failed (another exception, or a divergence that names no node)."""
    import numpy as np

    from physics.constraints.solver import ContactBudgetError

    start, done = time.perf_counter(), 0
    try:
        with np.errstate(all="ignore"):
            while done < steps and time.perf_counter() - start < budget:
                sim.step(1)
                done += 1
                bad = sim.first_non_finite()
                if bad is not None:
                    return "divergence", f"node {bad!r} non-finite at step {done}"
    except ContactBudgetError as error:
        return "refused", f"at step {done + 1}: {error}"
    except (ValueError, ArithmeticError) as error:
        if _names_node(str(error), sim.names):
            return "divergence", f"{type(error).__name__}: {error}"
        return "failed", f"at step {done + 1}: " + traceback.format_exc()
    except Exception:
        return "failed", f"at step {done + 1}: " + traceback.format_exc()
    return "ran", f"{done} steps"


# --- snapshots, recordings and command lines -----------------------------------------------------

DRAW = {**MODEL_DRAW, "signal": draw_signal_case}    # the kinds drawn by their own modules
BINARY_SCENES = ("car", "chain", "humanoid", "pile", "tank")   # contacts, joints (six-axis too), manifolds, kinematic nodes
KINDS = ("scene", "recording", "snapshot", "command", "archive", "defaults", "special", "signal")
_SUFFIX = {"scene": ".toml", "recording": ".rec", "snapshot": ".snap", "command": ".rec", "signal": ".rec",
           "settings": ".json"}     # (settings: the app's file, fuzzed by app.settings_fuzz)


def _suffix(case):
    """The file suffix a case is written with: its own (a robot model's), else its kind's."""
    return getattr(case, "suffix", "") or _SUFFIX[getattr(case, "kind", "scene")]


def binary_bases():
    """{scene: (recording bytes, snapshot bytes)}: a short run of each of BINARY_SCENES with one
    input of every kind the scene takes (a setting, an impulse, a reparent to the world, a mouse
    force), keyframes every 4 steps; the snapshot is its last state (the topology included)."""
    import numpy as np

    from physics.pipeline.recording import Recording
    from physics.pipeline.simulation import Simulation
    from physics.pipeline.timeline import Timeline

    bases = {}
    for name in BINARY_SCENES:
        path = SCENES / f"{name}.toml"
        sim = Simulation.from_file(path)
        timeline = Timeline(sim, keyframe_every=4)
        dynamic = [n for n, m in zip(sim.names, sim.motion) if m == "dynamic"]
        timeline.step(3)
        timeline.apply("set", "gravity", np.array([0.0, -9.0, 0.5]))
        if dynamic:
            timeline.apply("impulse", dynamic[-1], np.array([0.1, 0.5, 0.0]), None)
            timeline.step(2)
            timeline.apply("force", dynamic[0], np.array([0.0, 1.0, 0.0]), None)
            nested = [n for n in dynamic if sim.parent[list(sim.names).index(n)] >= 0]
            if nested:
                timeline.apply("reparent", nested[-1], None)
        timeline.step(7)
        data = Recording.from_timeline(timeline, path.read_text(), str(path)).to_bytes()
        bases[name] = (data, sim.snapshot().to_bytes())
    return bases


def _jsonable(value):
    """A hostile value as JSON can hold it (dates as text; NaN and ±inf stay: json writes them)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _edit_header(data, document, like, hostile, mutations, label):
    """1-3 set/delete/add mutations of a parsed JSON header, as draw_case does to scenes."""
    from hypothesis import strategies as st

    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(document))
        kind = data.draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
        if kind == "add" or not paths:
            key = data.draw(st.sampled_from(["future", "settings", "arrays", "step_count", "version", "x"]))
            document[key] = _jsonable(data.draw(hostile))
            mutations.append(f"{label}: add {key!r}")
            continue
        path = data.draw(st.sampled_from(paths))
        container = _container(document, path)
        if kind == "delete":
            if isinstance(container, dict):
                del container[path[-1]]
            else:
                container.pop(path[-1])
            mutations.append(f"{label}: delete {path}")
        else:
            container[path[-1]] = _jsonable(data.draw(like(container[path[-1]])))
            mutations.append(f"{label}: set {path} = {container[path[-1]]!r:.60}")


def _edit_arrays(data, snapshot, mutations, label):
    """An array of a snapshot changed: elements set to hostile numbers, a row dropped or added,
    or its dtype changed; the checksum recomputed."""
    import numpy as np
    from hypothesis import strategies as st

    from physics.tools import crafting

    header, payload = crafting.split_snapshot(snapshot)
    arrays = crafting.arrays_of(header, payload)
    name = data.draw(st.sampled_from(sorted(arrays)))
    array = arrays[name]
    change = data.draw(st.sampled_from(["element", "element", "all", "row", "dtype"]))
    numbers = st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1.0, 0.0, 1e6, 2.0, -1e-300])
    integers = st.sampled_from([-2, -1, 0, 1, 4, 5, 10**6, 2**62, -2**63])
    value = data.draw(integers if array.dtype.kind in "iub" else numbers)
    if change in ("element", "all") and array.size:
        flat = array.reshape(-1)
        where = slice(None) if change == "all" else data.draw(st.integers(0, array.size - 1))
        flat[where] = value if array.dtype.kind != "b" else bool(value)
    elif change == "row" and array.ndim:
        array = array[:-1] if len(array) and data.draw(st.booleans()) else np.concatenate([array, array[:1]])
    elif change == "dtype":
        with np.errstate(invalid="ignore", over="ignore"):     # NaN to an integer type: what a file may hold
            array = array.astype(data.draw(st.sampled_from(["<f4", "<i4", "|u1", "<c16", ">f8"])))
    arrays[name] = array
    mutations.append(f"{label}: array {name} {change} ({value!r})")
    header, payload = crafting.with_arrays(header, arrays)
    return crafting.join_snapshot(header, payload)


def _corrupt(data, blob, mutations, label):
    """Bytes truncated, flipped, inserted or deleted; the checksum recomputed three times in four."""

    from hypothesis import strategies as st

    where = data.draw(st.integers(0, max(0, len(blob) - 1)))
    how = data.draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
    if how == "truncate":
        blob = blob[:where]
    elif how == "flip":
        flipped = bytearray(blob)
        for _ in range(data.draw(st.integers(1, 8))):
            flipped[data.draw(st.integers(0, len(blob) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        blob = bytes(flipped)
    elif how == "insert":
        blob = blob[:where] + data.draw(st.binary(max_size=16)) + blob[where:]
    else:
        blob = blob[:where] + blob[where + data.draw(st.integers(1, 64)):]
    if len(blob) > 32 and data.draw(st.sampled_from([True, True, True, False])):
        blob = blob[:-32] + hashlib.sha256(blob[:-32]).digest()
        how += ", checksum recomputed"
    mutations.append(f"{label}: bytes {how} at {where}")
    return blob


def draw_binary_case(data, kind, bases):
    """A snapshot or recording Case: a base file changed by a crafted defect (physics.tools.crafting),
    header mutations, array changes or byte corruption, its checksum recomputed (mostly)."""

    from hypothesis import strategies as st

    from physics.tools import crafting

    _, _, hostile, like, _, _, _ = _strategies()
    scene = data.draw(st.sampled_from(sorted(bases)), label="scene")
    recording, snapshot = bases[scene]
    mutations = []
    mode = data.draw(st.sampled_from(["crafted", "crafted", "header", "header", "header", "array", "array", "bytes"]))
    if kind == "snapshot":
        blob = snapshot
        if mode == "crafted":
            name = data.draw(st.sampled_from(sorted(crafting.SNAPSHOT_CRAFTS)))
            blob = _apply_craft(crafting.SNAPSHOT_CRAFTS[name][0], blob, name, mutations)
        elif mode == "header":
            header, payload = crafting.split_snapshot(blob)
            _edit_header(data, header, like, hostile, mutations, "header")
            blob = crafting.join_snapshot(header, payload, text=json.dumps(header, sort_keys=True).encode())
        elif mode == "array":
            blob = _edit_arrays(data, blob, mutations, "snapshot")
        else:
            blob = _corrupt(data, blob, mutations, "snapshot")
        return Case(scene, blob, mutations=mutations, kind="snapshot")
    blob = recording
    if mode == "crafted":
        name = data.draw(st.sampled_from(sorted(crafting.RECORDING_CRAFTS)))
        blob = _apply_craft(crafting.RECORDING_CRAFTS[name][0], blob, name, mutations)
    elif mode == "bytes":
        blob = _corrupt(data, blob, mutations, "recording")
    else:
        header, frames = crafting.split_recording(blob)
        k = data.draw(st.integers(-1, len(frames) - 1))       # -1: the recording's own header
        if k < 0 and mode == "header":
            _edit_header(data, header, like, hostile, mutations, "recording header")
        elif mode == "header":
            inner, payload = crafting.split_snapshot(frames[k])
            _edit_header(data, inner, like, hostile, mutations, f"keyframe {k} header")
            frames[k] = crafting.join_snapshot(inner, payload)
        else:
            frames[max(k, 0)] = _edit_arrays(data, frames[max(k, 0)], mutations, f"keyframe {max(k, 0)}")
        # offsets and lengths recomputed unless a mutation changed them
        blob = crafting.join_recording(header, frames, entries=not any("('keyframes'" in m for m in mutations))
    return Case(scene, blob, mutations=mutations, kind="recording")


def _apply_craft(craft, blob, name, mutations):
    try:
        blob = craft(blob)
        mutations.append(f"crafted: {name}")
    except (KeyError, IndexError, StopIteration):     # the defect needs what this base lacks
        mutations.append(f"crafted: {name} (not applicable to this base: unchanged)")
    return blob


def draw_command(data, bases):
    """A `python -m physics` command line: `replay` on a crafted recording or a special file, or
    `run` with hostile option values and outputs (short runs only: at most 40 steps)."""
    from hypothesis import strategies as st

    case = draw_binary_case(data, "recording", bases)
    target = data.draw(st.sampled_from(["{file}"] * 6 + ["{fifo}", "{dir}", "/dev/null", "/dev/zero",
                                                            "{missing}", "{file}\x00x", ""]))
    if data.draw(st.sampled_from(["replay", "replay", "run"])) == "replay":
        argv = ["replay", target] + data.draw(st.sampled_from([["--verify"], [], ["--verify", "--verify"], ["-x"]]))
    else:
        pick = lambda options: data.draw(st.sampled_from(options))
        scene = pick([str(SCENES / f"{case.scene}.toml"), "{file}", "{dir}", "{missing}", "{fifo}", "/dev/null"])
        argv = ["run", scene, "--steps", pick(["0", "1", "5", "40", "-1", "abc", "nan", "1e3", "1180591620717411303424"]),
                "--out", pick(["{out}.npz", "{out}.csv", "{out}.txt", "{dir}", "/dev/null", "{missing}/x.npz", "{fifo}", ""])]
        for option, values in (("--dt", ["0.01", "nan", "inf", "-1", "0", "abc", "100", "1e-300"]),
                                ("--substeps", ["1", "0", "-3", "1000000000", "x"]),
                                ("--integrator", ["rk4", "nope", ""]), ("--record-every", ["1", "0", "-1", "7"]),
                                ("--record", ["{out}.rec", "{file}", "{dir}", "x.txt"]),
                                ("--keyframe-every", ["1", "0", "2000000000"])):
            if data.draw(st.integers(0, 3)) == 0:
                argv += [option, pick(values)]
    case.kind, case.argv = "command", argv
    case.mutations.append(f"argv {argv}")
    return case


def _impossible(sim):
    """What a restored or replayed simulation holds that no run of its scene can, or None."""
    import numpy as np

    arrays = sim.snapshot().arrays
    if not (np.isfinite(sim.time) and sim.time >= 0) or sim.step_count < 0:
        return f"time {sim.time!r}, step {sim.step_count}"
    for name, array in arrays.items():
        if array.dtype.kind == "f" and not name.startswith("solver.") and not np.all(np.isfinite(array)):
            return f"{name} not finite"
        if name.startswith("solver.") and array.dtype.kind == "f" and np.isnan(array).any():
            return f"{name} holds NaN"
    R = arrays["local.rotation"]
    if len(R) and np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3)).max() > 1e-6:
        return "a local rotation that is not a rotation"
    if not np.all(arrays["local.scale"] > 0):
        return "a scale <= 0"
    if np.any(arrays["still"] < 0):
        return "a negative time at rest"
    parent = np.asarray(sim.parent)
    for i in range(len(parent)):
        a, depth = i, 0
        while a >= 0 and depth <= len(parent):
            a, depth = parent[a], depth + 1
        if depth > len(parent):
            return f"a cycle through node {sim.names[i]!r}"
    return None


def _refusal(error, path):
    return str(path) in str(error)


_FRESH = {}     # scene -> (simulation, its snapshot at step 3): run_snapshot's starting points


def run_snapshot(case, path, steps, budget=STEP_BUDGET):
    """Read a snapshot file, restore it into a fresh simulation of its scene (stepped 3 steps),
    then step on: refused (SnapshotError naming the file, or a refused restore that changed
    nothing), ran, divergence, or failed (another exception, a refusal that changed the state,
    an impossible state accepted)."""
    from physics.pipeline.simulation import Simulation
    from physics.pipeline.snapshot import Snapshot, SnapshotError

    path = Path(path)
    path.write_bytes(case.text)
    try:
        snapshot = Snapshot.from_bytes(path.read_bytes(), source=str(path))
    except SnapshotError as error:
        return ("refused", str(error)) if _refusal(error, path) else ("failed", f"without the file: {error}")
    except Exception:
        return "failed", "at read: " + traceback.format_exc()
    if case.scene not in _FRESH:        # a simulation per scene, put back to its 3rd step each case
        fresh = Simulation.from_file(SCENES / f"{case.scene}.toml")
        fresh.step(3)
        _FRESH[case.scene] = fresh, fresh.snapshot()
    sim, start = _FRESH[case.scene]
    sim.restore(start)
    before, settings = sim.state_hash(), repr(vars(sim.settings))
    try:
        sim.restore(snapshot)
    except ValueError as error:
        if sim.state_hash() != before or repr(vars(sim.settings)) != settings:
            return "failed", f"a refused restore changed the simulation: {error}"
        if not str(error).startswith(("restore: ", "setting ")):
            return "failed", f"a refusal that names no field: {error}"
        return "refused", str(error)
    except Exception:
        return "failed", "at restore: " + traceback.format_exc()
    bad = _impossible(sim)
    if bad is not None:
        return "failed", f"an impossible state restored without error: {bad}"
    return _step(sim, steps, budget)


def run_recording(case, path, steps, budget=STEP_BUDGET):
    """Read a recording, verify it, and scrub its timeline to the head and back (the app's path):
    refused (a RecordingError naming the file), ran (verified, or a step named as differing),
    divergence, or failed."""
    from physics.pipeline.recording import RecordingError, read_recording
    from physics.pipeline.stages import DivergenceError
    from physics.constraints.solver import ContactBudgetError

    path = Path(path)
    path.write_bytes(case.text)
    try:
        recording = read_recording(path)
        verified, differs = recording.verify()
        timeline = recording.timeline()
        bad = _impossible(timeline.sim)
        timeline.seek(recording.head)
        timeline.seek(recording.origin)
    except RecordingError as error:
        return ("refused", str(error)) if _refusal(error, path) else ("failed", f"without the file: {error}")
    except DivergenceError as error:
        return "divergence", str(error)
    except ContactBudgetError as error:
        return "refused", str(error)
    except Exception:
        return "failed", traceback.format_exc()
    if bad is not None:
        return "failed", f"an impossible state replayed without error: {bad}"
    return "ran", f"verified {verified} steps" + (f", step {differs} differs" if differs is not None else "")


# What the runner's one line says for each kind of physics.pipeline.stages.DivergenceError (exit 1):
# diverged or non-finite, a runaway, a body that left the world, a body that fell through a surface.
DIVERGENCE_PHRASES = ("diverged", "non-finite", "a runaway", "left the world's bounds", "fell through")


def run_command(case, directory, steps=None, budget=None):
    """`python -m physics ARGV` in this process, stdout and stderr captured: exit 0 (ran), 2 with
    one `error:` line (refused), 1 only for a divergence or a differing step; anything else
    (exit 1 "internal error", a traceback, another code) failed."""

    from physics.__main__ import main

    directory = Path(directory)
    for stale in directory.glob("cmd-*"):
        if stale.is_dir():
            stale.rmdir()
        else:
            stale.unlink()
    file, fifo, folder = directory / "cmd-file.rec", directory / "cmd-fifo", directory / "cmd-dir"
    file.write_bytes(case.text)
    os.mkfifo(fifo)
    folder.mkdir()
    places = {"{file}": str(file), "{fifo}": str(fifo), "{dir}": str(folder), "{missing}": str(directory / "cmd-none/x"),
              "{out}": str(directory / "cmd-out")}
    argv = []
    for arg in case.argv:
        for key, value in places.items():
            arg = arg.replace(key, value)
        argv.append(arg)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as leave:       # argparse: usage errors exit 2
                code = leave.code
    except Exception:
        return "failed", f"{argv}: " + traceback.format_exc()
    said = err.getvalue()
    if "Traceback" in said or "internal error" in said:
        return "failed", f"{argv} exit {code}: {said[-2000:]}"
    if code == 0:
        return "ran", f"{argv}: exit 0"
    if code == 2 and said.strip():
        return "refused", f"{argv}: {said.strip().splitlines()[-1]}"
    if code == 1 and "differs" in said:       # replay's verdict on a changed state: a step named
        return "ran", f"{argv}: {said.strip()}"
    if code == 1 and any(phrase in said for phrase in DIVERGENCE_PHRASES):
        return "divergence", f"{argv}: {said.strip()}"
    return "failed", f"{argv} exit {code}: {said[-2000:]}"


# --- the worker protocol ---------------------------------------------------------------------------

def _frame(stream, payload):
    data = pickle.dumps(payload)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _read_frame(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(size))


def worker():
    """Answer (case, steps) frames on stdin with (outcome, detail) frames; stdout is kept for the
    frames only (anything printed goes to stderr)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    with tempfile.TemporaryDirectory(prefix="fuzz-") as directory:
        count = 0
        while (request := _read_frame(requests)) is not None:
            case, steps = request
            count += 1
            kind = getattr(case, "kind", "scene")
            folder = Path(directory) / f"case-{count}"     # the case's own: its files, its outputs
            folder.mkdir()
            path = folder / f"{case.scene}-{kind}{_suffix(case)}"
            held, peak = memory()
            try:
                place_files(folder, getattr(case, "files", ()))
                answer = run_case(case, path, steps)
            except Exception:   # run_case classifies what the code under test raises: this is its own
                answer = "failed", "in the worker: " + traceback.format_exc()
            shutil.rmtree(folder, ignore_errors=True)
            grown = memory()[1]
            if grown > peak and grown - held > MEMORY_MAX:
                answer = "failed", (f"memory: the case took the worker from {held / 2**20:.0f} MiB to a peak of "
                                    f"{grown / 2**20:.0f} MiB (at most {MEMORY_MAX / 2**20:.0f} MiB more); "
                                    f"it had {answer[0]}: {answer[1][:2000]}")
                _frame(answers, answer)
                return      # a fresh worker: the peak is a high-water mark
            _frame(answers, answer)


def memory():
    """(resident bytes now, the process's peak resident bytes so far)."""
    with open("/proc/self/statm") as statm:
        resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return resident, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --- the driver ----------------------------------------------------------------------------------

class Worker:
    """The worker subprocess: `run(case)` -> (outcome, detail), restarting it after a crash or hang."""

    def __init__(self, steps, timeout):
        self.steps, self.timeout, self.process, self.warm = steps, timeout, None, False
        self.unsent = None      # the answer of a case that could not be sent

    def start(self):
        self.log = tempfile.TemporaryFile()       # its stderr: what a crash said last
        self.process = subprocess.Popen([sys.executable, "-m", "physics.tools.fuzz", "--worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log)
        self.warm = False

    def said(self):
        """The end of what the worker wrote on stderr."""
        self.log.seek(0, os.SEEK_END)
        self.log.seek(max(0, self.log.tell() - 3000))
        return self.log.read().decode(errors="replace")

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def run(self, case):
        self.send(case)
        return self.receive()

    def send(self, case):
        """Hand `case` to the worker and return at once (`receive` answers it): the driver draws
        the next case while the worker runs this one."""
        if self.process is None:
            self.start()
        self.unsent = None
        try:
            _frame(self.process.stdin, (case, self.steps))
        except (BrokenPipeError, OSError):
            self.stop()
            self.unsent = "failed", "the worker was gone before the case was sent"

    def receive(self):
        """The answer to the case last sent: (outcome, detail)."""
        if self.unsent is not None:
            return self.unsent
        limit = self.timeout if self.warm else max(self.timeout, FIRST_TIMEOUT)
        ready, _, _ = select.select([self.process.stdout], [], [], limit)
        if not ready:
            self.stop()
            return "failed", f"hang: no answer within {limit:g} s"
        answer = _read_frame(self.process.stdout)
        if answer is None:
            code = self.process.wait()
            self.process = None
            return "failed", f"crash: the worker died (exit code {code}); its stderr ended:\n{self.said()}"
        self.warm = True
        return answer


@dataclass
class Tally:
    tried: int = 0
    counts: dict = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    failures: list = field(default_factory=list)   # (case, detail)

    def add(self, case, outcome, detail):
        self.tried += 1
        self.counts[outcome] += 1
        if outcome == "failed":
            self.failures.append((case, detail))

    def report(self):
        c = self.counts
        stopped = f"stopped by the signal cleanly {c['stopped']}, " if c["stopped"] else ""
        return (f"tried {self.tried}, refused cleanly {c['refused']}, ran {c['ran']}, "
                f"divergence reported {c['divergence']}, {stopped}failed {c['failed']}")


def fuzz(cases, seed=0, steps=20, timeout=60.0, progress=None, kind="scene", runner=None, bases=None, draw=None):
    """Run `cases` cases of `kind` (KINDS) through one worker (`runner`, else a new one) -> Tally
    (deterministic for a seed). `bases`: `binary_bases()` if already made. `draw(data)`: a Case of
    a kind drawn elsewhere (the app's settings file: app.settings_fuzz), for a `runner` of its own."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis import strategies as st

    if draw is not None:
        pass
    elif kind == "scene":
        texts = {path.stem: path.read_text() for path in sorted(SCENES.glob("*.toml")) if path.stem not in SKIPPED_SCENES}
        models = model_bases()
        # one case in MODEL_SHARE is a robot model (URDF, MJCF) mutated as XML
        draw = lambda data: draw_model_case(data, models) \
            if models and data.draw(st.integers(0, MODEL_SHARE - 1), label="robot model?") == 0 else draw_case(data, texts)
    elif kind in DRAW:
        draw = DRAW[kind]
    else:
        bases = binary_bases() if bases is None else bases
        draw = (lambda data: draw_command(data, bases)) if kind == "command" else \
            (lambda data: draw_binary_case(data, kind, bases))
    tally, own = Tally(), runner is None
    runner = Worker(steps, timeout) if own else runner
    # A Worker runs a case while the next is drawn (`send`, then `receive` after the next draw):
    # drawing, in this process, takes a third of a scene case's time. Any other runner: `run`.
    piped = hasattr(runner, "send") and hasattr(runner, "receive")
    sent = []

    def answered(case, answer):
        tally.add(case, *answer)
        if progress and tally.tried % progress == 0:
            print(f"  {kind}: {tally.report()}", flush=True)

    @fixed_seed(seed)
    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def explore(data):
        if tally.tried + len(sent) >= cases:
            return
        case = draw(data)
        if not piped:
            answered(case, runner.run(case))
            return
        if sent:
            answered(sent.pop(), runner.receive())
        runner.send(case)
        sent.append(case)

    try:
        explore()
        if sent:
            answered(sent.pop(), runner.receive())
    finally:
        if own:
            runner.stop()
    return tally


def save_failures(tally, directory, prefix="case"):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    saved = []
    for k, (case, detail) in enumerate(tally.failures, 1):
        path = directory / f"{prefix}-{k}.pickle"
        path.write_bytes(pickle.dumps(case))
        (directory / f"{prefix}-{k}{_suffix(case)}").write_bytes(case.text)
        saved.append((path, detail))
    return saved


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m physics.tools.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="cases of each kind (default 1000)")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"which readers, comma-separated (default all: {','.join(KINDS)})")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0: a repeatable run)")
    parser.add_argument("--steps", type=int, default=20, help="steps per case that loads (default 20)")
    parser.add_argument("--timeout", type=float, default=60.0, help="s before a case counts as a hang (default 60)")
    parser.add_argument("--keep", default="fuzz-failures", help="directory for failed cases (default fuzz-failures)")
    parser.add_argument("--replay", help="run one saved case (.pickle) in this process and print its outcome")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    if args.replay:
        case = pickle.loads(Path(args.replay).read_bytes())
        kind = getattr(case, "kind", "scene")
        print(f"{kind} case; mutations:", *case.mutations, sep="\n  ")
        print("live settings:", case.settings)
        with tempfile.TemporaryDirectory() as directory:
            outcome, detail = run_case(case, Path(directory) / f"{case.scene}-replay{_suffix(case)}", args.steps)
        print(f"{outcome}: {detail}")
        return 1 if outcome == "failed" else 0
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in KINDS for k in kinds):
        parser.error(f"--kinds: got {args.kinds!r}; expected some of {','.join(KINDS)}")
    runner, bases, failed = Worker(args.steps, args.timeout), None, 0
    try:
        for kind in kinds:
            if kind in ("recording", "snapshot", "command") and bases is None:
                bases = binary_bases()
            began = time.perf_counter()
            tally = fuzz(args.cases, args.seed, args.steps, args.timeout, progress=max(1, args.cases // 10), kind=kind,
                         runner=runner, bases=bases)
            print(f"{kind}: {tally.report()} ({time.perf_counter() - began:.0f} s)", flush=True)
            for path, detail in save_failures(tally, args.keep, prefix=f"{kind}-case"):
                print(f"\nFAILED {path} (python -m physics.tools.fuzz --replay {path}):\n{detail.rstrip()}")
            failed += tally.counts["failed"]
    finally:
        runner.stop()
    return 1 if failed else 0


if __name__ == "__main__":   # run as physics.tools.fuzz, so that pickled cases name one Case class
    import physics.tools.fuzz
    sys.exit(physics.tools.fuzz.main())
