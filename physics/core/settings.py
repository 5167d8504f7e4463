"""Simulation settings: one validated dataclass shared by scene files, the runner and the app.

Every field can change while a simulation runs (`Settings.set(name, value)`); a bad value raises
a `SettingError` (a ValueError) naming the key and the value, and leaves the settings unchanged. The scene format's
`[world]` table and the runner's options map one-to-one onto these fields (docs/scene-format.md).
"""
from dataclasses import dataclass, field, fields

import numpy as np

from physics.core import choices, validation as limits
from physics.core.validation import Invalid, short_repr

# The choices' names (physics.core.choices spells, explains and codes each once).
GYROSCOPIC = choices.GYROSCOPIC.names
ROTATION_UPDATES = choices.ROTATION_UPDATE.names
EXPONENTIALS = choices.EXPONENTIAL.names
INTEGRATOR_NAMES = choices.INTEGRATOR.names
JOINT_SOLVES = choices.JOINT_SOLVE.names


def integrator_names():
    """Names of the integrators (physics.core.choices.INTEGRATOR)."""
    return INTEGRATOR_NAMES


class SettingError(ValueError):
    """A refused setting: `key`, `value` and `reason` (the message names all three)."""

    def __init__(self, key, value, reason):
        self.key, self.value, self.reason = key, value, reason
        super().__init__(f"setting {short_repr(key)}: got {short_repr(value)}; {reason}")


def _refuse(name, value, reason):
    return SettingError(name, value, reason)


def _checked(check):
    """A setting's check from a physics.core.validation check: its refusal names the key and value."""
    def checked(name, value):
        try:
            return check(value)
        except Invalid as error:
            raise _refuse(name, value, str(error)) from None
    return checked


def _choice(choice):
    """A setting's check from a physics.core.choices.Choice."""
    def check(name, value):
        if not isinstance(value, str) or value not in choice.codes:
            raise _refuse(name, value, choice.expected)
        return str(value)
    return check


def _boolean(name, value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value in ("on", "off"):
        return value == "on"
    raise _refuse(name, value, "expected true/false (or 'on'/'off')")


# Fields added after snapshots were first written, with the value a snapshot without them implies
# (what every run had before the field existed): `Settings.recorded`, `Settings.restored`.
IMPLIED = {"joint_solve": "projected"}


@dataclass
class Settings:
    """Physics settings; change them with `set` so that every value is validated."""

    dt: float = 1.0 / 60.0                  # s, one step
    substeps: int = 3                       # step() advances dt in this many equal sub-steps
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.81, 0.0]))  # m/s², world
    integrator: str = "semi-implicit-euler"  # dynamic bodies (physics.core.choices.INTEGRATOR)
    gyroscopic: str = "implicit"            # the omega x L term (physics.core.choices.GYROSCOPIC)
    rotation_update: str = "magnus2"        # kinematic rotation (physics.core.choices.ROTATION_UPDATE)
    exponential: str = "exact"              # kinematic rotation's exponential (physics.core.choices.EXPONENTIAL)
    counteract: bool = True                 # impulses on a parent leave its children's world motion
    # Constraint solver (physics.constraints.solver): PGS sweeps, SOR factor, ERP = error fraction removed per
    # second ("The Mathematics of Havok's Solver" §3.3.2), CFM (ODE), warm starting, the relax
    # stage (no energy from correction).
    iterations: int = 10
    sor: float = 1.0
    erp: float = 0.99999
    cfm: float = 0.0
    # The fastest a contact's position correction may push two bodies apart, m/s (Box2D v3's
    # maxContactPushSpeed, PhysX's max depenetration velocity): bodies placed inside one another
    # separate at this speed instead of at β·depth/h (10 m/s per metre of depth at 60 Hz), which
    # threw 630 coincident boxes apart with 34 MJ from 6 kJ. Shallow penetrations are untouched:
    # at the default ERP and 60 Hz the limit acts only beyond 0.29 m of depth.
    max_contact_push_speed: float = 3.0
    warm_start: bool = True
    relax: bool = True
    # Joint post-stabilization also changes the velocities by Δq/h (SHAKE, physics.constraints.solver.post_stabilize):
    # a pendulum's energy then oscillates without drift (±0.6 %, h = 1/240) instead of losing
    # 2–5 % per period; off by default because a 10-link chain at h = 1/60 gains energy with it.
    shake: bool = False
    # How joints are held (physics.core.choices.JOINT_SOLVE): projected onto their constraints after
    # the solve (RATTLE, SHAKE), or soft, by the velocity solve's ERP/CFM alone (linear in the joints).
    joint_solve: str = "projected"
    # Sleeping (physics.dynamics.sleeping.SLEEP_TIME): bodies at rest on their parent, with all they touch,
    # ride it rigidly until an impulse, a setting, an awake body or a change of their field wakes them.
    sleep: bool = False

    # Ranges: physics.core.validation (docs/scene-format.md, "Limits").
    _CHECKS = {
        "dt": _checked(lambda value: limits.real(value, *limits.DT_RANGE)),
        "substeps": _checked(lambda value: limits.integer(value, 1, limits.SUBSTEPS_MAX)),
        "gravity": _checked(lambda value: limits.vector(value, 3, -limits.ACCELERATION_MAX, limits.ACCELERATION_MAX)),
        "integrator": _choice(choices.INTEGRATOR),
        "gyroscopic": _choice(choices.GYROSCOPIC),
        "rotation_update": _choice(choices.ROTATION_UPDATE),
        "exponential": _choice(choices.EXPONENTIAL),
        "counteract": _boolean,
        "iterations": _checked(lambda value: limits.integer(value, 1, limits.ITERATIONS_MAX)),
        "sor": _checked(lambda value: limits.real(value, 0.0, 2.0, low_open=True, high_open=True)),
        "erp": _checked(lambda value: limits.real(value, 0.0, 1.0, high_open=True)),
        "cfm": _checked(lambda value: limits.real(value, 0.0, limits.CFM_MAX)),
        "max_contact_push_speed": _checked(lambda value: limits.real(value, 0.0, limits.SPEED_MAX, low_open=True)),
        "warm_start": _boolean,
        "relax": _boolean,
        "shake": _boolean,
        "joint_solve": _choice(choices.JOINT_SOLVE),
        "sleep": _boolean,
    }

    def set(self, name, value):
        """Validate and assign one setting; SettingError naming the key and value if it is bad."""
        check = self._CHECKS.get(name) if isinstance(name, str) else None
        if check is None:
            raise SettingError(name, value, f"unknown setting; known: {', '.join(self.names())}")
        setattr(self, name, check(name, value))

    def update(self, values):
        """Validate every entry of a mapping first, then assign them all (all or nothing)."""
        checked = {}
        for name, value in values.items():
            if not isinstance(name, str) or name not in self._CHECKS:
                raise SettingError(name, value, f"unknown setting; known: {', '.join(self.names())}")
            checked[name] = self._CHECKS[name](name, value)
        for name, value in checked.items():
            setattr(self, name, value)

    @classmethod
    def accepts(cls, name, value):
        """Whether setting `name` may take `value` (its check, physics.core.validation's ranges):
        what an editor offers only once it holds such a value."""
        check = cls._CHECKS.get(name) if isinstance(name, str) else None
        try:
            return check is not None and check(name, value) is not None
        except SettingError:
            return False

    @classmethod
    def names(cls):
        return tuple(f.name for f in fields(cls))

    def recorded(self):
        """The settings a snapshot holds (physics.pipeline.snapshot), name -> value (gravity a copy):
        every field, less those of IMPLIED at the value every snapshot without them implies, so that
        a run that never sets a newer field hashes as it did before the field existed (a recording
        made then still verifies) and `restored` reads such a snapshot back as that value."""
        values = {name: getattr(self, name) for name in self.names()
                  if name not in IMPLIED or getattr(self, name) != IMPLIED[name]}
        values["gravity"] = values["gravity"].copy()
        return values

    @staticmethod
    def restored(values):
        """A snapshot's settings (`recorded`) with the IMPLIED values of the fields it left out."""
        return {**IMPLIED, **values}

    def copy(self):
        other = Settings()
        other.update({name: getattr(self, name) for name in self.names()})
        return other
