"""Scene and setting limits (physics.core.validation, docs/scene-format.md "Limits"): each class of value
whose arithmetic would overflow, recurse or loop without end is refused with a SceneError naming
file, node (or table), key and value, or a SettingError naming key and value; values at the limits
load and step to a finite state."""
import numpy as np
import pytest

from physics.core import validation as limits
from physics.io.scene import SceneError, load_scene
from physics.core.settings import SettingError, Settings
from physics.pipeline.simulation import Simulation
from physics.pipeline.stages import DivergenceError

BODY = '[[node]]\nname = "body"\nmotion = "dynamic"\nshape = { type = "capsule", radius = 0.1, height = 0.2 }\n'
HINGE = '[[joint]]\ntype = "hinge"\nb = "body"\nanchor = [0.0, 0.0, 0.0]\n'

# (scene text, node or table, key, fragment of the value as the message shows it)
REFUSED = {
    "400-digit integer": (BODY.replace("radius = 0.1", "radius = " + "9" * 400), "body", "shape.radius", "999"),
    "group >= 2^63": (BODY.replace("height = 0.2", "height = 0.2, group = 9223372036854775807"), "body", "shape.group", "9223372036854775807"),
    "group >= 2^31": (BODY.replace("height = 0.2", "height = 0.2, mask = 2147483648"), "body", "shape.mask", "2147483648"),
    "scale 1e-300": (BODY + "scale = 1e-300\n", "body", "scale", "1e-300"),
    "scale 5e-324": (BODY + "scale = 5e-324\n", "body", "scale", "5e-324"),
    "plane normal of 1e200s": ('[[node]]\nname = "g"\nshape = { type = "plane", normal = [1e200, 1e200, 0.0], offset = 0.0 }\n',
                               "g", "shape.normal", "1e+200"),
    "cfm 2^64": ("[world]\ncfm = 18446744073709551616\n" + BODY, "[world]", "cfm", "18446744073709551616"),
    "substeps 2^64": ("[world]\nsubsteps = 18446744073709551616\n" + BODY, "[world]", "substeps", "18446744073709551616"),
    "iterations 2^64": ("[world]\niterations = 18446744073709551616\n" + BODY, "[world]", "iterations", "18446744073709551616"),
    "hinge axis of 1e308s": (BODY + HINGE + "axis = [1e308, 1e308, 1e308]\n", "[[joint]] #1", "axis", "1e+308"),
    "zero hinge axis": (BODY + HINGE + "axis = [0.0, 0.0, 0.0]\n", "[[joint]] #1", "axis", "0.0"),
    "event on a fixed node": (BODY + '[[node]]\nname = "post"\n[[event]]\ntime = 0.1\nnode = "post"\nimpulse = [1.0, 0.0, 0.0]\n',
                              "[[event]] at time 0.1", "node", "post"),
    "world scale overflowing": ('[[node]]\nname = "p"\nscale = 1e4\n[[node]]\nname = "c"\nparent = "p"\nscale = 1e4\n', "c", "scale", "10000.0"),
    "world shape length too small": ('[[node]]\nname = "p"\nscale = 1e-3\n[[node]]\nname = "c"\nparent = "p"\n'
                                     'shape = { type = "sphere", radius = 1e-4 }\n', "c", "shape.radius", "0.0001"),
    "inertia breaking the triangle inequality": (BODY + "inertia = [1.0, 1.0, 3.0]\n", "body", "inertia", "3.0"),
    "mass 1e300": (BODY + "mass = 1e300\n", "body", "mass", "1e+300"),
    "velocity 1e300": (BODY + "velocity = [1e300, 0.0, 0.0]\n", "body", "velocity", "1e+300"),
    "force 1e308": (BODY + "applied_force = [1e308, 0.0, 0.0]\n", "body", "applied_force", "1e+308"),
    "dt 1e6": ("[world]\ndt = 1e6\n" + BODY, "[world]", "dt", "1000000.0"),
    "gravity a boolean": ("[world]\ngravity = [true, 0.0, 0.0]\n" + BODY, "[world]", "gravity", "True"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_out_of_range_input_is_refused_naming_file_node_key_value(tmp_path, case):
    text, node, key, value = REFUSED[case]
    path = tmp_path / "scene.toml"
    path.write_text(text)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    error, message = info.value, str(info.value)
    assert error.file == str(path) and str(path) in message
    assert (error.node, error.key) == (node, key), message
    assert repr(key) in message and value in message, message
    assert len(message) < 600, message   # a 400-digit value is shown by its ends


@pytest.mark.parametrize("depth", [33, 1000, 100000])
def test_deep_nesting_is_refused_before_parsing(tmp_path, depth):
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * depth + "]" * depth + "\n" + BODY)
    with pytest.raises(SceneError, match=f"nest {depth} deep") as info:
        load_scene(path)
    assert str(path) in str(info.value)


def test_nesting_depth_ignores_strings_and_comments():
    """Counted by hand: the array of arrays is 2 deep; the brackets in strings and comments are text."""
    text = 'a = "[[[[{{"  # ]]]] [[[[\nb = \'[[[\'\nc = """\n[[[[\n"""\nd = [[1], {e = [2]}]\n'
    assert limits.nesting_depth(text) == 3   # d: [ { [ ... ] } ]


def test_values_at_the_limits_load_and_step_finite(tmp_path):
    """Every key at the edge of its range at once: loads, and 5 steps leave a finite state (or the
    divergence is named: the state is then checked by first_non_finite, as the app and runner do)."""
    text = f"""
[world]
dt = {limits.DT_RANGE[0]}
substeps = 3
iterations = 5
cfm = {limits.CFM_MAX}
gravity = [0.0, -{limits.ACCELERATION_MAX}, 0.0]
[[node]]
name = "ground"
scale = {limits.SCALE_RANGE[1]}
shape = {{ type = "plane", normal = [{limits.LENGTH_MAX}, {limits.LENGTH_MAX}, 0.0], offset = {-limits.LENGTH_MAX} }}
[[node]]
name = "tiny"
parent = "ground"
scale = {limits.SCALE_RANGE[0]}
motion = "dynamic"
mass = {limits.MASS_RANGE[0]}
velocity = [{limits.SPEED_MAX}, 0.0, 0.0]
applied_force = [0.0, {limits.FORCE_MAX}, 0.0]
shape = {{ type = "box", size = [1.0, 1.0, 1.0], group = {limits.MASK_RANGE[1]}, mask = {limits.MASK_RANGE[0]} }}
[[node]]
name = "huge"
motion = "dynamic"
mass = {limits.MASS_RANGE[1]}
inertia = [{limits.INERTIA_RANGE[1]}, {limits.INERTIA_RANGE[1]}, {limits.INERTIA_RANGE[1]}]
translation = [{limits.LENGTH_MAX}, 0.0, 0.0]
[[event]]
time = {limits.TIME_MAX}
node = "huge"
impulse = [{limits.FORCE_MAX}, 0.0, 0.0]
"""
    path = tmp_path / "edges.toml"
    path.write_text(text)
    sim = Simulation.from_file(path)
    # the normal of 1e6s is normalized without overflow: (1, 1, 0)/sqrt(2)
    np.testing.assert_allclose(sim.scene.shapes[0]["normal"], [2 ** -0.5, 2 ** -0.5, 0.0], rtol=1e-15)
    with np.errstate(all="ignore"):
        try:
            sim.step(5)
        except DivergenceError as error:
            # "tiny" moves at 1e6 of its parent's units per second under a scale of 1e6: 1e12 m/s in
            # the world. Within reach of its parent that is a legal local state; once its world
            # distance passes REACH it is handed to the world (physics.pipeline.simulation.REACH), where
            # the same motion is past the divergence limit, and the run stops naming it.
            assert (error.node, error.quantity) == ("tiny", "velocity")
    assert sim.first_non_finite() is None


def test_triangle_inequality_holds_for_every_real_body():
    """Independent means: principal moments of random point clouds (eigenvalues of
    sum m (|r|² 1 - r rᵀ)) always pass the check (round-off ~1e-15 against a slack of 1e-3)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        points = rng.normal(size=(rng.integers(1, 6), 3)) * rng.uniform(0.01, 10.0, 3)
        masses = rng.uniform(0.1, 2.0, len(points))
        tensor = sum(m * (r @ r * np.eye(3) - np.outer(r, r)) for m, r in zip(masses, points))
        moments = np.clip(np.linalg.eigvalsh(tensor), limits.INERTIA_RANGE[0], None)
        limits.inertia(moments.tolist())
    with pytest.raises(limits.Invalid, match="exceeds the sum"):
        limits.inertia([1.0, 2.0, 3.01])


BAD_SETTINGS = [2**64, 10**400, -(2**63), float("nan"), float("inf"), 1e308, 5e-324, True, "1", None, [1, 2],
                np.array([1.0, 2.0, 3.0, 4.0]), np.array([True, False, True]), np.array(["1", "2", "3"]), np.zeros((3, 3)),
                {"a": 1}, [[[[]]]]]


@pytest.mark.parametrize("name", Settings.names())
def test_every_setting_refuses_bad_values_naming_the_key_and_keeping_the_state(name):
    """Each value that is wrong for this key (a few are right for it and are skipped by type):
    SettingError naming key and value, and the settings unchanged."""
    settings = Settings()
    refused = 0
    for value in BAD_SETTINGS:
        before = repr(settings)
        try:
            settings.set(name, value)
        except SettingError as error:
            refused += 1
            assert repr(name) in str(error) and error.key == name
            assert repr(settings) == before
        else:   # accepted: it must be a value of the key's kind
            assert (name in ("counteract", "warm_start", "relax", "shake", "sleep") and value is True) \
                or (name == "gravity" and isinstance(value, (list, np.ndarray))) \
                or (name in ("dt", "sor", "erp", "cfm", "max_contact_push_speed") and value == 5e-324), (name, value)
            settings = Settings()
    assert refused >= len(BAD_SETTINGS) - 2


def test_settings_take_numpy_scalars_and_refuse_strings_for_gravity():
    settings = Settings()
    settings.set("dt", np.float64(0.02))
    settings.set("substeps", np.int64(4))
    settings.set("gravity", np.array([0, -10, 0]))
    assert (settings.dt, settings.substeps, settings.gravity.tolist()) == (0.02, 4, [0.0, -10.0, 0.0])
    for bad in (["0", "-9.81", "0"], "abc", [False, 0.0, 0.0]):
        with pytest.raises(SettingError, match="gravity"):
            settings.set("gravity", bad)


@pytest.mark.parametrize("name, value", [
    ("dt", 0.0), ("dt", 1 / 60), ("dt", -0.01), ("substeps", 0), ("substeps", 4), ("sor", 2.5), ("sor", 1.3),
    ("erp", 0.0), ("erp", 1.0), ("cfm", 0.0), ("cfm", -1e-9), ("iterations", 10), ("gravity", [0.0, -9.81, 0.0]),
    ("gravity", [0.0, float("nan"), 0.0]), ("integrator", "rk4"), ("integrator", "verlet"), ("sleep", True),
    ("max_contact_push_speed", 0.0), ("no_such_setting", 1.0)])
def test_settings_accepts_exactly_what_set_takes(name, value):
    """`Settings.accepts` (what the panel's editors offer) agrees with `Settings.set` on every value:
    zero where a range allows it (erp, cfm: the panel once refused every float <= 0), and no value
    outside one (sor 2.5, dt 0)."""
    try:
        Settings().set(name, value)
        taken = True
    except SettingError:
        taken = False
    assert Settings.accepts(name, value) == taken
