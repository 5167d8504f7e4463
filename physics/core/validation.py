"""The ranges every scene number and setting lies in, and the checks that enforce them.

One set of checks serves the scene loader (physics.io.scene, which adds the file, node and key to a
refusal) and `Settings.set` (physics.core.settings, which adds the key; the app's panel and the runner
go through it), so a value is refused with the same reason wherever it comes from.

Why ranges and not just "finite": a finite number can still make the arithmetic non-finite. The
limits keep every product the physics forms finite and every inverse it takes representable:
a world length is at most LENGTH_MAX = 1e6 m (a node scale product times a shape length, with both
factors bounded, stays below 1e12); an inertia `m L²` is at most MASS_MAX · (1e6)² = 1e21, so its
square and its inverse are far from the float limits; a velocity or force of 1e6 / 1e12 squared in
an energy stays below 1e30. Integers that set loop counts (substeps, iterations) are bounded so a
step ends. docs/scene-format.md, "Limits", lists them for users.
"""
import math
import re
import reprlib

import numpy as np

LENGTH_MAX = 1e6             # m: translations, anchors, points, plane offsets, joint lengths and limits
LENGTH_MIN = 1e-6            # m: the smallest shape size, radius, height or joint length
SCALE_RANGE = (1e-6, 1e6)    # a node's scale and its world scale (the product from its root)
SPEED_MAX = 1e6              # m/s and rad/s: velocity, angular_velocity, motor_speed
ACCELERATION_MAX = 1e6       # m/s² and rad/s²: acceleration, angular_acceleration, gravity
MASS_RANGE = (1e-9, 1e9)     # kg
INERTIA_RANGE = (1e-24, 1e24)  # kg m², each principal moment (a shape's never leaves it, see scene)
INERTIA_TOLERANCE = 1e-3     # relative slack of the triangle inequality (rounded decimals in files)
FORCE_MAX = 1e12             # N, N m, N s: applied force and torque, event impulses, motor force
TIME_MAX = 1e9               # s: event times
FRICTION_MAX = 1e3           # Coulomb μ
DT_RANGE = (1e-9, 10.0)      # s per step
SUBSTEPS_MAX = 1000          # sub-steps per step
ITERATIONS_MAX = 10000       # solver sweeps per sub-step
CFM_MAX = 1e6                # constraint force mixing
MASK_RANGE = (-2**31, 2**31 - 1)  # collision group and mask: 32-bit signed bit masks
NESTING_MAX = 32             # brackets and braces in a scene file's text

_LENGTH_KEYS = ("size", "radius", "height", "vertices")


def _world_lengths(shape, key, world_scale):
    lengths = np.asarray(shape[key], float) * world_scale
    if key == "vertices":   # a hull: its thinnest extent and its reach from the node
        lengths = np.array([np.ptp(lengths, axis=0).min(), np.abs(lengths).max()])
    return np.ravel(lengths)


def shape_lengths(shape, world_scale=1.0):
    """Every length of a shape that must lie in [LENGTH_MIN, LENGTH_MAX] in the world, at this world
    scale (the product of the node scales from its root), as one array; they scale with it."""
    keys = [key for key in _LENGTH_KEYS if shape is not None and key in shape]
    return np.concatenate([_world_lengths(shape, key, world_scale) for key in keys]) if keys else np.zeros(0)


def shape_lengths_outside(shape, world_scale):
    """(key, world lengths) of a shape's first length outside [LENGTH_MIN, LENGTH_MAX] at this world
    scale, or None (`shape_lengths`). The loader (physics.io.scene) and a restored snapshot
    (`Simulation.restore`) refuse alike."""
    for key in _LENGTH_KEYS:
        if shape is not None and key in shape:
            lengths = _world_lengths(shape, key, world_scale)
            if np.any(lengths < LENGTH_MIN) or np.any(lengths > LENGTH_MAX):
                return key, lengths
    return None


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict = 3, 6, 6, 4
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 40


def short_repr(value):
    """repr(value) cut to a readable length: a 400-digit integer or a table nested 1,000 deep is
    named by its start (repr of deep nesting would itself exceed the recursion limit)."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=6, edgeitems=3, separator=", ", max_line_width=200)
        return f"array({' '.join(text.split())})"
    if isinstance(value, (float, np.floating)):   # reprlib would cut 1e-300 to a prefix
        return repr(float(value))
    return _SHORT.repr(value)


class Invalid(ValueError):
    """A value outside its range; the message is the reason only (the caller names where)."""


def _is_real(value):
    if type(value) is float or type(value) is int:     # the common case, first (TOML gives these)
        return True
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))


def range_text(low, high, low_open=False, high_open=False):
    """How an interval reads in a message: '>= 0', 'in (0, 2)'."""
    if high is None:
        return f"{'>' if low_open else '>='} {low:g}"
    if low is None:
        return f"{'<' if high_open else '<='} {high:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def _outside(numbers, low, high, low_open=False, high_open=False):
    """Whether any of `numbers` (floats) lies outside the interval. Plain Python comparisons: a
    scene of 10^5 nodes checks a million numbers, and numpy's reductions on arrays of three cost
    ten times as much."""
    for x in numbers:
        if low is not None and (x <= low if low_open else x < low):
            return True
        if high is not None and (x >= high if high_open else x > high):
            return True
    return False


def _float(value):
    """float(value), or inf for an integer too large for a float (10**400 would raise)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def real(value, low=None, high=None, low_open=False, high_open=False):
    """`value` as a float in [low, high] (a side excluded with low_open / high_open, absent if None)."""
    if not _is_real(value):
        raise Invalid(f"expected a number, got {type(value).__name__}")
    number = _float(value)
    if not math.isfinite(number):
        raise Invalid("expected a finite number")
    if _outside((number,), low, high, low_open, high_open):
        raise Invalid(f"expected a number {range_text(low, high, low_open, high_open)}")
    return number


def integer(value, low, high):
    """`value` as an int in [low, high]; a bool or a float (even 2.0) is not an integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Invalid(f"expected an integer, got {type(value).__name__}")
    if not low <= int(value) <= high:
        raise Invalid(f"expected an integer in [{low}, {high}]")
    return int(value)


def vector(value, length, low=None, high=None, low_open=False):
    """A list, tuple or 1-D numeric array of `length` numbers, each as `real` checks it -> float array."""
    # the common case first, as a scene file gives it: a list of floats and ints inside finite
    # bounds (a NaN, an infinity or a huge integer fails a comparison and takes the checks below,
    # which name it)
    if type(value) is list and len(value) == length and not low_open and low is not None and high is not None \
            and math.isfinite(low) and math.isfinite(high):
        for item in value:
            if not (type(item) is float or type(item) is int) or not low <= item <= high:
                break
        else:
            return np.array(value, float)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf" or value.shape != (length,):
            raise Invalid(f"expected {length} numbers, got an array of {value.dtype} with shape {value.shape}")
        items = value.tolist()
    elif isinstance(value, (list, tuple)):
        if len(value) != length:
            raise Invalid(f"expected a list of {length} numbers, got length {len(value)}")
        items = value
    else:
        raise Invalid(f"expected a list of {length} numbers, got {type(value).__name__}")
    for item in items:
        if not _is_real(item):
            raise Invalid(f"expected numbers, got {type(item).__name__} {short_repr(item)}")
    numbers = [_float(item) for item in items]
    if not all(map(math.isfinite, numbers)):
        raise Invalid("expected finite numbers (no nan or inf)")
    if _outside(numbers, low, high, low_open):
        raise Invalid(f"expected numbers {range_text(low, high, low_open)}")
    return np.array(numbers)


def direction(value):
    """A unit vector from 3 numbers with a non-zero norm: u = v / |v|, |v| formed after dividing by
    max|v_i| so that neither 1e200s (|v|² overflows) nor 5e-324s (|v|² underflows) lose it."""
    v = vector(value, 3, -LENGTH_MAX, LENGTH_MAX)
    largest = float(np.max(np.abs(v)))
    if largest == 0.0:
        raise Invalid("expected a non-zero vector")
    v = v / largest
    return v / float(np.linalg.norm(v))


def inertia(value):
    """Principal moments (I1, I2, I3), each in INERTIA_RANGE, satisfying the triangle inequality of a
    real mass distribution, I_k <= (I_i + I_j)(1 + INERTIA_TOLERANCE) (I_1 = ∫(y² + z²) dm, ...)."""
    moments = vector(value, 3, *INERTIA_RANGE)
    for k in range(3):
        others = moments.sum() - moments[k]
        if moments[k] > others * (1.0 + INERTIA_TOLERANCE):
            raise Invalid(f"moment {moments[k]:g} exceeds the sum of the other two ({others:g}): no mass distribution "
                          f"has these principal moments (I_k <= I_i + I_j)")
    return moments


_STRINGS_AND_COMMENTS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')


def nesting_depth(text):
    """The deepest nesting of brackets and braces in TOML text outside strings and comments, found
    without parsing (a parser recursing 1,000 levels deep would exceed the recursion limit)."""
    code = np.frombuffer(_STRINGS_AND_COMMENTS.sub("", text).encode("utf-8", "replace"), dtype=np.uint8)
    return int(np.cumsum(_BRACKET_STEP[code], dtype=np.int64).max(initial=0))


_BRACKET_STEP = np.zeros(256, np.int8)     # a character's change of the nesting depth: [ { open, ] } close
_BRACKET_STEP[[ord("["), ord("{")]], _BRACKET_STEP[[ord("]"), ord("}")]] = 1, -1
