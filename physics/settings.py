"""Simulation settings: one validated dataclass shared by scene files, the runner and the app.

Every field can change while a simulation runs (`Settings.set(name, value)`); a bad value raises
a ValueError naming the key and the value, and leaves the settings unchanged. The scene format's
`[world]` table and the runner's options map one-to-one onto these fields (docs/scene-format.md).
"""
from dataclasses import dataclass, field, fields

import numpy as np

GYROSCOPIC = ("off", "explicit", "implicit")
ROTATION_UPDATES = ("magnus1", "magnus2", "magnus3")
EXPONENTIALS = ("exact", "truncated")

# The registry lives in physics.integrators; these are the names docs/architecture.md pins, used
# only to validate before that module is imported (importing it compiles numba kernels).
INTEGRATOR_NAMES = (
    "explicit-euler",
    "semi-implicit-euler",
    "implicit-euler",
    "implicit-midpoint",
    "rk4",
    "lie-midpoint",
    "lie-midpoint-4",
)


def integrator_names():
    """Names of the registered integrators (physics.integrators' registry once it is importable)."""
    try:
        from physics.integrators import INTEGRATORS
    except ImportError:
        return INTEGRATOR_NAMES
    return tuple(INTEGRATORS)


def _choice(options):
    def check(name, value):
        opts = options() if callable(options) else options
        if not isinstance(value, str) or value not in opts:
            raise ValueError(f"setting {name!r}: got {value!r}; expected one of {', '.join(opts)}")
        return value
    return check


def _positive_float(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"setting {name!r}: got {value!r} ({type(value).__name__}); expected a positive number")
    value = float(value)
    if not np.isfinite(value) or value <= 0.0:
        raise ValueError(f"setting {name!r}: got {value!r}; expected a finite number > 0")
    return value


def _nonnegative_float(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not np.isfinite(value) or value < 0:
        raise ValueError(f"setting {name!r}: got {value!r}; expected a finite number >= 0")
    return float(value)


def _half_open_unit(name, value):
    value = _nonnegative_float(name, value)
    if value >= 1.0:
        raise ValueError(f"setting {name!r}: got {value!r}; expected 0 <= value < 1 (the error fraction removed per second)")
    return value


def _open_interval(label, low, high):
    def check(name, value):
        value = _positive_float(name, value)
        if not low < value < high:
            raise ValueError(f"setting {name!r}: got {value!r}; expected {low} < value < {high}")
        return value
    return check


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"setting {name!r}: got {value!r}; expected an integer >= 1")
    return int(value)


def _vector3(name, value):
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"setting {name!r}: got {value!r}; expected 3 numbers") from None
    if array.shape != (3,) or not np.all(np.isfinite(array)) or any(isinstance(v, bool) for v in np.ravel(value)):
        raise ValueError(f"setting {name!r}: got {value!r} (shape {array.shape}); expected 3 finite numbers")
    return array.copy()


def _boolean(name, value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value in ("on", "off"):
        return value == "on"
    raise ValueError(f"setting {name!r}: got {value!r}; expected true/false (or 'on'/'off')")


@dataclass
class Settings:
    """Physics settings; change them with `set` so that every value is validated."""

    dt: float = 1.0 / 60.0                  # s, one step
    substeps: int = 1                       # step() advances dt in this many equal sub-steps
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.81, 0.0]))  # m/s², world
    integrator: str = "semi-implicit-euler"  # dynamic bodies: a name in physics.integrators
    gyroscopic: str = "implicit"            # off | explicit | implicit (the omega x L term)
    rotation_update: str = "magnus2"        # magnus1 | magnus2 | magnus3 (kinematic rotation)
    exponential: str = "exact"              # exact | truncated (normalized 3rd-order quaternion exp)
    counteract: bool = True                 # impulses on a parent leave its children's world motion
    # Constraint solver (physics.solver): PGS sweeps, SOR factor, ERP = error fraction removed per
    # second (seed 002 §3.3.2), CFM (ODE), warm starting, the relax stage (no energy from correction).
    iterations: int = 10
    sor: float = 1.0
    erp: float = 0.99999
    cfm: float = 0.0
    warm_start: bool = True
    relax: bool = True
    # Joint post-stabilization also changes the velocities by Δq/h (SHAKE, physics.solver.post_stabilize):
    # a pendulum's energy then oscillates without drift (±0.6 %, h = 1/240) instead of losing
    # 2–5 % per period; off by default because a 10-link chain at h = 1/60 gains energy with it.
    shake: bool = False
    # Sleeping (physics.simulation.SLEEP_TIME): bodies at rest on their parent, with all they touch,
    # ride it rigidly until an impulse, a setting, an awake body or a change of their field wakes them.
    sleep: bool = False

    _CHECKS = {
        "dt": _positive_float,
        "substeps": _positive_int,
        "gravity": _vector3,
        "integrator": _choice(integrator_names),
        "gyroscopic": _choice(GYROSCOPIC),
        "rotation_update": _choice(ROTATION_UPDATES),
        "exponential": _choice(EXPONENTIALS),
        "counteract": _boolean,
        "iterations": _positive_int,
        "sor": _open_interval("sor", 0.0, 2.0),
        "erp": _half_open_unit,
        "cfm": _nonnegative_float,
        "warm_start": _boolean,
        "relax": _boolean,
        "shake": _boolean,
        "sleep": _boolean,
    }

    def set(self, name, value):
        """Validate and assign one setting; ValueError naming the key and value if it is bad."""
        check = self._CHECKS.get(name)
        if check is None:
            raise ValueError(f"unknown setting {name!r} (value {value!r}); known: {', '.join(self.names())}")
        setattr(self, name, check(name, value))

    def update(self, values):
        """Validate every entry of a mapping first, then assign them all (all or nothing)."""
        checked = {}
        for name, value in values.items():
            if name not in self._CHECKS:
                raise ValueError(f"unknown setting {name!r} (value {value!r}); known: {', '.join(self.names())}")
            checked[name] = self._CHECKS[name](name, value)
        for name, value in checked.items():
            setattr(self, name, value)

    @classmethod
    def names(cls):
        return tuple(f.name for f in fields(cls))

    def copy(self):
        other = Settings()
        other.update({name: getattr(self, name) for name in self.names()})
        return other
