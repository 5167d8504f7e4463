"""Viewer settings persisted between runs, as JSON.

The file is `$HIERARCHY_SANDBOX_CONFIG_DIR/settings.json` when that variable is set (tests point
it at a temporary directory), else `$XDG_CONFIG_HOME/hierarchy-sandbox/settings.json`, else
`~/.config/hierarchy-sandbox/settings.json`. A missing file gives the defaults; unknown keys are
dropped and bad values fall back to their default, so a hand-edited file can never stop the app
from starting. A file that cannot be read as settings at all (not JSON, nested too deep, larger
than SETTINGS_BYTES_MAX, a FIFO or a device) is set aside as `settings.json.bad` where it is a
regular file, `problem` says so in one line for the app to show, and the app starts with defaults.
"""
import json
import os
from pathlib import Path

from physics.core.files import read_regular

SETTINGS_BYTES_MAX = 2**20      # a settings file is a few hundred bytes; a megabyte is not one
problem = None                  # the last `load`'s one-line complaint about the file, or None

ENV_DIR = "HIERARCHY_SANDBOX_CONFIG_DIR"

OVERLAYS = ("frames", "velocity", "angular_velocity", "angular_momentum", "inertial", "contacts", "names")

# Physics choices the user makes in the panel or with keys, remembered; a scene opens with its own
# physics unless "keep my physics choices" (keep_physics) is on, as a model opens with its own
# options in MuJoCo's simulate (command-line options always win). dt, gravity and solver numbers
# belong to scenes.
PHYSICS_KEYS = ("integrator", "gyroscopic", "rotation_update", "exponential", "counteract")

MIN_BUDGET_MB, MAX_BUDGET_MB = 1.0, 16384.0  # the panel's slider spans these
MIN_PANEL_WIDTH, MAX_PANEL_WIDTH = 240.0, 4096.0  # px: the panel's width, dragged by its edge
MSAA_SAMPLES = (0, 2, 4, 8)   # multisampling choices (--msaa, the panel's antialiasing box)

DEFAULTS = {
    "overlays": {"frames": False, "velocity": False, "angular_velocity": False, "angular_momentum": False,
                 "inertial": True, "contacts": False, "names": False},  # contacts: thousands in a pile
    "arrow_scale": 0.25,   # m per (m/s, rad/s, m/s², kg m²/s) of an arrow
    "time_scale": 1.0,
    "shadows": True,       # the key light's shadows (app.shadows)
    "numbers": True,       # the overlay of FPS, frame and physics ms, real-time factor, time, step (O)
    "timeline_budget_mb": 256.0,  # keyframe memory of the timeline (physics.pipeline.timeline.DEFAULT_BUDGET)
    "physics": {},
    "keep_physics": False,  # re-apply "physics" to every scene opened (off: each opens with its own)
    "panel_width": 380.0,   # px, the panel's width as last dragged (app.panel)
    "msaa": None,           # multisampling samples (0, 2, 4, 8) as last chosen; None: 4 on a hardware GL, 0 on a software one
    "last_scene": None,
}


def config_path():
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]) / "settings.json"
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "hierarchy-sandbox" / "settings.json"


def _clean(data):
    """The defaults overlaid with every well-typed entry of `data`."""
    result = json.loads(json.dumps(DEFAULTS))
    if not isinstance(data, dict):
        return result
    overlays = data.get("overlays")
    if isinstance(overlays, dict):
        for name in OVERLAYS:
            if isinstance(overlays.get(name), bool):
                result["overlays"][name] = overlays[name]
    for name in ("shadows", "numbers", "keep_physics"):
        if isinstance(data.get(name), bool):
            result[name] = data[name]
    for name in ("arrow_scale", "time_scale"):
        value = data.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e3:
            result[name] = float(value)
    if data.get("msaa") in MSAA_SAMPLES and not isinstance(data.get("msaa"), bool):
        result["msaa"] = int(data["msaa"])
    width = data.get("panel_width")
    if isinstance(width, (int, float)) and not isinstance(width, bool) and MIN_PANEL_WIDTH <= width <= MAX_PANEL_WIDTH:
        result["panel_width"] = float(width)
    budget = data.get("timeline_budget_mb")
    if isinstance(budget, (int, float)) and not isinstance(budget, bool) and MIN_BUDGET_MB <= budget <= MAX_BUDGET_MB:
        result["timeline_budget_mb"] = float(budget)
    physics = data.get("physics")
    if isinstance(physics, dict):
        result["physics"] = {k: v for k, v in physics.items() if k in PHYSICS_KEYS and isinstance(v, (str, bool))}
    if isinstance(data.get("last_scene"), str):
        result["last_scene"] = data["last_scene"]
    return result


def load(path=None):
    """The settings of the file (defaults where it has none); a bad file is set aside (module docstring)."""
    global problem
    problem = None
    path = Path(path) if path else config_path()
    try:
        data = read_regular(path, SETTINGS_BYTES_MAX)
    except FileNotFoundError:
        return _clean(None)
    except (OSError, ValueError) as error:     # a special file, too large, unreadable: never waited on
        return _set_aside(path, getattr(error, "strerror", None) or str(error))
    try:
        return _clean(json.loads(data.decode("utf-8")))
    except RecursionError:
        return _set_aside(path, "nested too deep to be settings")
    except (UnicodeDecodeError, ValueError) as error:
        return _set_aside(path, f"not JSON ({error})")


def _set_aside(path, reason):
    """Defaults, with `problem` naming the file and why; a regular file is renamed to *.bad (kept
    for the user, and not read again), anything else left where it is."""
    global problem
    kept = ""
    try:
        if path.is_file() and not path.is_symlink():
            path.replace(path.with_name(path.name + ".bad"))
            kept = f"; kept as {path.name}.bad"
    except OSError:
        pass
    problem = f"settings {path}: {reason}; starting with the defaults{kept}"
    return _clean(None)


def save(settings, path=None):
    """Write atomically (temp file + rename); an unwritable location is not an error for the app."""
    path = Path(path) if path else config_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(_clean(settings), indent=2, sort_keys=True))
        temp.replace(path)
        return True
    except OSError:
        return False
