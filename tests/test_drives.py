"""Joint springs, dampers and actuators (physics.constraints.joints, "Drives"; docs/scene-format.md).

Under RATTLE's integrators (lie-midpoint, lie-midpoint-4, semi-implicit Euler without SHAKE) each is
a generalized force τ = F₀ − K q − D q̇ and an inertia A on the coordinate, taken by RATTLE's step
(physics.constraints.rattle, "Joint terms": the force in its two kicks, the damper by the
coordinate's chord, the armature as a rotor held to the coordinate), second order and composed to
fourth by the triple jump; elsewhere a soft velocity row (the force at the step's end). The checks:
- a torsional spring swings about its rest angle with the period 2π √(I/K) of the analytic solution;
- a damper's spin decays as the analytic e^(−D t / I), at second order in the step;
- an armature adds its inertia to the joint coordinate (a torque's spin-up, a pendulum's period);
- a driven arm read from MJCF (a spring, dampers, a motor, a position and a velocity servo, with
  and without armatures) converges to MuJoCo's RK4 on the same file at second order in the step;
- controls are state: in snapshots, hashes, recordings and the runner's --control;
- dry friction holds below its torque and slips at the Coulomb rate above it (a velocity row
  bounded by it: exact).
"""
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest

import physics
from physics.io.articulated import ModelWarning
from physics.io.scene import SceneError, scene_from_dict
from physics.pipeline import stages
from physics.pipeline.timeline import Timeline
from robots import Z_UP

I_Z = 0.1   # kg m²: the bar's moment about the hinge axis


def bar(joint=None, actuator=None, integrator="lie-midpoint", dt=0.001, omega=0.0):
    """A bar on a hinge about z through its centre, no gravity: only the joint's drive acts."""
    doc = {"title": "bar", "world": {"gravity": [0, 0, 0], "integrator": integrator, "dt": dt},
           "node": [{"name": "bar", "motion": "dynamic", "mass": 1.0, "inertia": [I_Z, I_Z, I_Z],
                     "angular_velocity": [0.0, 0.0, omega]}],
           "joint": [{"type": "hinge", "b": "bar", "anchor": [0, 0, 0], "axis": [0, 0, 1], "name": "hinge",
                      **(joint or {})}]}
    if actuator:
        doc["actuator"] = [actuator]
    return physics.Simulation(scene_from_dict(doc, "bar.toml"))


def spin(sim):
    """The bar's ω_z, rad/s (the world angular velocity is a skew matrix)."""
    return float(sim.world().angular_velocity[0][1, 0])


def angle(sim):
    R = sim.world_poses()[1][0]
    return math.atan2(R[1, 0], R[0, 0])


@pytest.mark.parametrize("integrator", ["semi-implicit-euler", "lie-midpoint"])
@pytest.mark.parametrize("torque", [0.3, 0.5, 2.0])
def test_dry_friction_holds_below_its_torque_and_slips_above_it(integrator, torque):
    """A joint's `friction` (MuJoCo's frictionloss, URDF's <dynamics friction>) of 0.5 N m on the bar,
    turned by a constant applied torque about the axis: below 0.5 N m the bar stays at rest (|ω| <
    1e-12: the row's bound is not reached), at 0.5 it is on the edge of slipping and stays, above it
    spins up at the Coulomb rate (τ − 0.5) / I exactly, the friction's full torque opposing (ω after
    1 s within 1e-9 of 15 rad/s: a constant torque, which these integrators hold exactly in the
    velocity). An actuator and a friction on one joint are refused: they take the same row."""
    doc = {"title": "bar", "world": {"gravity": [0, 0, 0], "integrator": integrator, "dt": 0.001},
           "node": [{"name": "bar", "motion": "dynamic", "mass": 1.0, "inertia": [I_Z, I_Z, I_Z],
                     "applied_torque": [0.0, 0.0, torque]}],
           "joint": [{"type": "hinge", "b": "bar", "anchor": [0, 0, 0], "axis": [0, 0, 1], "name": "hinge",
                      "friction": 0.5}]}
    sim = physics.Simulation(scene_from_dict(doc, "bar.toml"))
    sim.step(1000)
    expected = max(torque - 0.5, 0.0) / I_Z * 1.0
    assert abs(spin(sim) - expected) < (1e-9 if expected else 1e-12)
    doc["actuator"] = [{"name": "push", "joint": "hinge", "type": "motor"}]
    with pytest.raises(SceneError, match="driven already"):
        scene_from_dict(doc, "bar.toml")
@pytest.mark.parametrize("integrator", ["semi-implicit-euler", "lie-midpoint", "rk4"])
def test_a_spring_swings_about_its_rest_angle_with_the_analytic_period(integrator):
    """K = 10 N m/rad on I = 0.1 kg m²: ω₀ = 10 rad/s, period 0.2π s, from rest at 0 about 0.3 rad.
    Backward Euler in the force loses (h ω₀)²/2 of the amplitude per step: 3 % in a period at
    h = 1 ms, so the peak is held to 2 %; the period to 1 % (a zero crossing is found to a step)."""
    sim = bar({"stiffness": 10.0, "spring_reference": 0.3}, integrator=integrator)
    angles = []
    for _ in range(700):
        sim.step()
        angles.append(angle(sim))
    angles = np.array(angles) - 0.3
    crossings = np.flatnonzero(np.diff(np.sign(angles)) > 0)         # upward through the rest angle
    assert len(crossings) >= 1
    first_peak = angles[:400].max()
    assert abs(first_peak - 0.3) <= 0.02 * 0.3, first_peak
    downward = np.flatnonzero(np.diff(np.sign(angles)) < 0)
    period = 2 * abs(crossings[0] - downward[0]) * 0.001       # half a period between the two
    assert abs(period - 0.2 * math.pi) <= 0.01 * 0.2 * math.pi, period


def test_a_damper_decays_as_the_exponential_at_second_order():
    """D = 1 N m s/rad on I = 0.1, ω₀ = 2 rad/s: at t = 0.1 s the spin is ω₀ e^(−Dt/I) within 1e-6
    of it (measured 6.7e-7 rad/s at h = 1 ms, three sub-steps of lie-midpoint: the damper's force at
    the coordinate's chord, a trapezoidal rule, errs by (hD/I)³/12 a sub-step), and halving h
    quarters the error (second order: between 0.2 and 0.3 of it)."""
    D, omega0 = 1.0, 2.0
    exact = omega0 * math.exp(-D * 0.1 / I_Z)
    errors = []
    for h in (0.001, 0.0005):
        sim = bar({"damping": D}, dt=h, omega=omega0)
        sim.step(round(0.1 / h))
        errors.append(abs(spin(sim) - exact))
    assert errors[0] <= 1e-6 * omega0, errors
    assert 0.2 <= errors[1] / errors[0] <= 0.3, errors


def test_a_stiff_damper_on_a_light_link_is_stable():
    """A damper with hD/I = 10^4 (an explicit force would blow up at hD/I > 2) stops the bar in a step."""
    sim = bar({"damping": 1e3}, omega=5.0, dt=0.001)
    sim.step(3)
    assert abs(spin(sim)) < 5.0 * 1e-3


def test_an_armature_adds_its_inertia_to_the_coordinate():
    """A motor's 1 N m on the bar (I = 0.1) with an armature A = 0.4 spins it at τ t / (I + A):
    0.2 rad/s after 0.1 s, exactly (a constant torque: round-off only, 1e-12). And a pendulum (1 kg
    at 1.005 m, I = 0.01 about its centre) with A = 0.5 on its hinge swings with the small-angle
    period 2π √((I + m l² + A) / (m g l)) of the analytic pendulum, to 1e-3 of it (a 0.1 rad swing
    is 4e-4 slower than the small-angle limit; h = 4 ms, crossings interpolated within a step)."""
    sim = bar({"armature": 0.4}, {"name": "m", "joint": "hinge", "type": "motor"})
    sim.set_control("m", 1.0)
    sim.step(100)
    assert abs(spin(sim) - 1.0 / 0.5 * 0.1) <= 1e-12
    doc = {"title": "pendulum", "world": {"gravity": [0, -9.81, 0], "integrator": "lie-midpoint", "dt": 0.004},
           "node": [{"name": "bob", "motion": "dynamic", "mass": 1.0, "inertia": [0.01, 0.01, 0.01],
                     "translation": [0.1, -1.0, 0]}],
           "joint": [{"type": "hinge", "b": "bob", "anchor": [0, 0, 0], "axis": [0, 0, 1], "armature": 0.5}]}
    sim = physics.Simulation(scene_from_dict(doc, "pendulum.toml"))
    x = []
    for _ in range(1500):
        sim.step()
        x.append(sim.world_poses()[0][0][0])
    x = np.array(x)
    up = np.flatnonzero(np.diff(np.sign(x)) > 0)
    crossing = (up + x[up] / (x[up] - x[up + 1])) * 0.004        # upward through x = 0, interpolated
    period = (crossing[-1] - crossing[0]) / (len(crossing) - 1)
    length = math.hypot(0.1, 1.0)
    expected = 2 * math.pi * math.sqrt((0.01 + length ** 2 + 0.5) / (9.81 * length))
    assert abs(period - expected) <= 1e-3 * expected, (period, expected)


ARM = """<mujoco model="driven_arm">
  <compiler angle="radian"/>
  <option gravity="0 0 -9.81" timestep="0.0001" integrator="RK4"/>
  <default><joint damping="0.3"/><motor ctrlrange="-2 2"/></default>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" stiffness="4" springref="0.4"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
      <body name="lower" pos="0.5 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" range="-2 2"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="0.6"/>
        <body name="slider" pos="0.4 0 0">
          <joint name="slide" type="slide" axis="1 0 0" damping="2"/>
          <geom type="sphere" size="0.05" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="shoulder_motor" joint="shoulder" gear="3"/>
    <position name="elbow_servo" joint="elbow" kp="20" kv="1"/>
    <velocity name="slide_speed" joint="slide" kv="5"/>
  </actuator>
</mujoco>
"""
CONTROLS = {"shoulder_motor": 0.7, "elbow_servo": 0.5, "slide_speed": 0.2}


def arm_error(path, dt, integrator=None):
    """Largest body-position difference (m) after 1 s between ours at step dt (with `integrator`, else
    the import's) and MuJoCo's RK4 at 1e-4."""
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    for name, value in CONTROLS.items():
        data.ctrl[model.actuator(name).id] = value
    while data.time < 1.0 - 1e-9:
        mujoco.mj_step(model, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        sim = physics.Simulation(physics.load_mjcf(path))
    sim.set("dt", dt)
    sim.set("substeps", 1)
    if integrator is not None:
        sim.set("integrator", integrator)
    for name, value in CONTROLS.items():
        sim.set_control(name, value)
    sim.step(round(1.0 / dt))
    names, t = list(sim.names), sim.world_poses()[0]
    return max(np.abs(Z_UP.T @ t[names.index(b)] - data.xpos[model.body(b).id]).max() for b in ("upper", "lower", "slider"))


def test_a_driven_arm_from_mjcf_converges_to_mujoco_at_second_order(tmp_path):
    """A spring (with springref), dampers from a <default>, a geared motor, a position servo on a
    limited joint and a velocity servo on a slide, all driven: ours (lie-midpoint, the import's)
    after 1 s against MuJoCo's RK4 at 1e-4 s (its own error is far below ours). RATTLE's step takes
    the forces (second order; the limit keeps it from composing), so the error is about
    proportional to h²: measured 3.9e-6 m at 1 ms, 9.7e-7 at 0.5 ms. A wrong gain, gear, sign or
    reference would leave an error that does not shrink with h."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    coarse, fine = arm_error(path, 1e-3), arm_error(path, 5e-4)
    assert coarse <= 1e-5, coarse
    assert 0.2 <= fine / coarse <= 0.3, (coarse, fine)


def test_an_arm_with_armature_converges_to_mujoco_at_second_order(tmp_path):
    """The driven arm with armatures of 0.5 and 0.1 kg m² (25 and 13 times its links' own inertias
    about the joints): an armature is a rotor held to its coordinate in RATTLE's projections, so
    the order is the step's: measured 5.3e-7 m at 1 ms and 1.3e-7 at 0.5 ms."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM.replace('springref="0.4"', 'springref="0.4" armature="0.5"')
                    .replace('axis="0 1 0" range="-2 2"', 'axis="0 1 0" range="-2 2" armature="0.1"'))
    coarse, fine = arm_error(path, 1e-3), arm_error(path, 5e-4)
    assert coarse <= 2e-6, coarse
    assert 0.2 <= fine / coarse <= 0.3, (coarse, fine)


def test_the_driven_arm_without_its_limit_composes_to_fourth_order(tmp_path):
    """The driven arm with armatures and without the elbow's range, under lie-midpoint-4: every
    joint an equality, its terms in RATTLE's step, the step composed by the triple jump, so the
    error falls as h⁴: measured 3.1e-8 m at 4 ms and 2.2e-9 at 2 ms (1/14; below that MuJoCo's own
    RK4 at 1e-4 s is what is left: 4.6e-10 at 1 ms)."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM.replace('springref="0.4"', 'springref="0.4" armature="0.5"')
                    .replace('axis="0 1 0" range="-2 2"', 'axis="0 1 0" armature="0.1"'))
    coarse, fine = arm_error(path, 4e-3, "lie-midpoint-4"), arm_error(path, 2e-3, "lie-midpoint-4")
    assert coarse <= 1e-7, coarse
    assert 1 / 24 <= fine / coarse <= 1 / 10, (coarse, fine)


def test_mjcf_actuators_and_joint_terms_are_imported(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    scene = physics.load_mjcf(path)
    joints = {spec["name"]: spec for spec in scene.joints}
    assert joints["shoulder"]["stiffness"] == 4 and joints["shoulder"]["spring_reference"] == 0.4
    assert joints["shoulder"]["damping"] == 0.3 and joints["slide"]["damping"] == 2
    assert joints["shoulder"]["actuator"] == {"name": "shoulder_motor", "type": "motor", "gear": 3.0, "gain": 1.0,
                                              "bias": [0.0, 0.0, 0.0], "ctrl_range": [-2.0, 2.0]}
    assert joints["elbow"]["actuator"]["bias"] == [0.0, -20.0, -1.0]
    sim = physics.Simulation(scene)
    assert sim.controls == {"shoulder_motor": 0.0, "elbow_servo": 0.0, "slide_speed": 0.0}
    with pytest.raises(ValueError, match=r"ctrl_range \[-2, 2\]"):
        sim.set_control("shoulder_motor", 3.0)
    with pytest.raises(ValueError, match="unknown actuator 'wrist'.*'shoulder_motor'"):
        sim.set_control("wrist", 0.0)


def test_controls_are_state_in_hashes_snapshots_and_recordings():
    actuator = {"name": "m", "joint": "hinge", "type": "motor"}
    sim = bar(actuator=actuator)
    before = sim.state_hash()
    sim.set_control("m", 0.25)
    assert sim.state_hash() != before and sim.controls == {"m": 0.25}
    saved = sim.snapshot()
    sim.step(50)
    sim.set_control("m", -1.0)
    sim.restore(saved)
    assert sim.controls == {"m": 0.25}
    # a recorded drive replays bit for bit: the control inputs are in the timeline
    first = bar(actuator=actuator)
    timeline = Timeline(first)
    timeline.apply("control", "m", 0.5)
    timeline.step(30)
    timeline.apply("control", "m", -0.75)
    timeline.step(30)
    again = bar(actuator=actuator)
    for recorded in sorted(timeline.inputs_at(0) + timeline.inputs_at(30), key=lambda i: i.step):
        while again.step_count < recorded.step:
            again.step()
        recorded.apply(again)
    again.step(60 - again.step_count)
    assert again.state_hash() == first.state_hash()


BAD_ACTUATORS = {
    "unknown joint": ({"name": "m", "joint": "elbow", "type": "motor"}, "joint", "no [[joint]] has this name"),
    "unknown type": ({"name": "m", "joint": "hinge", "type": "muscle"}, "type", "muscle"),
    "kp on a motor": ({"name": "m", "joint": "hinge", "type": "motor", "kp": 1.0}, "kp", "has no 'kp'"),
    "zero gear": ({"name": "m", "joint": "hinge", "type": "motor", "gear": 0.0}, "gear", "transmits nothing"),
    "ctrl range reversed": ({"name": "m", "joint": "hinge", "type": "motor", "ctrl_range": [1, -1]}, "ctrl_range",
                            "lower end is above"),
    "energy source": ({"name": "m", "joint": "hinge", "type": "general", "bias": [0, 1, 0]}, "bias", "<= 0"),
    "ctrl outside its range": ({"name": "m", "joint": "hinge", "type": "position", "ctrl_range": [-1, 1], "ctrl": 2.0},
                               "ctrl", "2.0"),
}


@pytest.mark.parametrize("case", sorted(BAD_ACTUATORS))
def test_a_bad_actuator_is_one_error_naming_the_key(case):
    table, key, reason = BAD_ACTUATORS[case]
    with pytest.raises(SceneError, match=re.escape(reason)) as info:
        bar(actuator=table)
    assert f"key {key!r}" in str(info.value) and "[[actuator]]" in str(info.value)


def test_the_runner_takes_controls(tmp_path):
    """--control NAME=VALUE sets an actuator from the start; a bad one is one line, exit 2."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    out = tmp_path / "out.npz"
    run = lambda *extra: subprocess.run([sys.executable, "-m", "physics", "run", str(path), "--steps", "60",
                                         "--out", str(out), "--quiet", *extra], capture_output=True, text=True)
    result = run("--control", "elbow_servo=0.5")
    assert result.returncode == 0, result.stderr
    result = run("--control", "elbow_servo")
    assert result.returncode == 2 and "expected NAME=VALUE" in result.stderr and len(result.stderr.splitlines()) == 1
    result = run("--control", "wrist=1")
    assert result.returncode == 2 and "unknown actuator 'wrist'" in result.stderr


@pytest.mark.parametrize("integrator", ["lie-midpoint", "rk4"])
def test_a_joint_loaded_past_its_limit_eases_in_without_gaining_energy(integrator):
    """A bar loaded 0.5 rad below its hinge's range [0.5, 1] (no gravity, at rest): RATTLE's
    projection lets it stay past the limit by (1 − β) of the step's start error (soft limits), the
    velocity solve's Baumgarte target pushes it in at the ERP rate (99.999 % a second), and the
    relax stage takes that push's speed back out: after 1 s it is within 1e-3 rad of the range, and
    its kinetic energy never exceeds what 1 rad/s would give it (5e-2 J; a one-step snap of
    0.5 rad at h = 1 ms is 500 rad/s, 1.25e4 J)."""
    sim = bar({"lower": 0.5, "upper": 1.0}, integrator=integrator)
    peak = 0.0
    for _ in range(1000):
        sim.step()
        peak = max(peak, 0.5 * I_Z * spin(sim) ** 2)
    assert angle(sim) >= 0.5 - 1e-3, angle(sim)
    assert peak <= 0.5 * I_Z * 1.0, peak


def test_gymnasiums_humanoid_runs_from_its_reset_pose():
    """humanoid.xml loads with its knees outside their ranges (0 against −160°…−2°); it runs 0.5 s
    with contacts and its energy stays bounded (the runaway check would raise otherwise)."""
    import gymnasium
    from pathlib import Path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        sim = physics.Simulation(physics.load_mjcf(Path(gymnasium.__file__).parent / "envs/mujoco/assets/humanoid.xml"))
    sim.step(round(0.5 / sim.settings.dt))
    assert sim.first_non_finite() is None


def test_to_mjcf_writes_the_joint_terms_and_actuators_back(tmp_path):
    """Imported and exported again, the arm is MuJoCo's own model of the original file in every
    joint term and actuator parameter MuJoCo compiles (exact: the numbers are copied)."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM.replace('springref="0.4"', 'springref="0.4" armature="0.5"'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        exported = mujoco.MjModel.from_xml_string(physics.to_mjcf(physics.load_mjcf(path), left_out=[]))
    original = mujoco.MjModel.from_xml_path(str(path))
    for name in ("dof_damping", "dof_armature", "jnt_stiffness", "qpos_spring", "jnt_range", "actuator_gainprm",
                 "actuator_biasprm", "actuator_gear", "actuator_ctrlrange", "actuator_ctrllimited"):
        np.testing.assert_array_equal(getattr(exported, name), getattr(original, name), err_msg=name)


def test_the_runner_takes_a_controls_file_held_piecewise_constant(tmp_path):
    """--controls FILE.csv: a `time` column and one per actuator, each row's values held from the
    first step at or after its time. The run equals one made here stepping and setting the same
    controls at the same steps (state hashes equal, bit for bit); its recording holds the inputs
    and replays to the same hash. A bad file is one line naming the row and the column, exit 2."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    controls = tmp_path / "drive.csv"
    controls.write_text("time,elbow_servo,shoulder_motor\n0,0.5,0\n0.05,-0.5,1.5\n0.1,0.25,-1\n")
    out, record = tmp_path / "out.npz", tmp_path / "drive.rec"
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(path), "--steps", "40", "--record-every", "7",
                             "--out", str(out), "--record", str(record), "--controls", str(controls), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        sim = physics.Simulation(physics.load_mjcf(path))
    dt = sim.settings.dt
    for step, values in ((0, (0.5, 0.0)), (math.ceil(0.05 / dt - 1e-9), (-0.5, 1.5)), (math.ceil(0.1 / dt - 1e-9), (0.25, -1.0))):
        sim.step(step - sim.step_count)
        sim.set_control("elbow_servo", values[0])
        sim.set_control("shoulder_motor", values[1])
    sim.step(40 - sim.step_count)
    from physics.pipeline.recording import read_recording
    recording = read_recording(record)
    assert recording.hashes[40] == sim.state_hash()
    assert sum(1 for entry in recording.inputs if entry.kind == "control") == 6
    assert len(np.load(out)["time"]) == 1 + 40 // 7
    controls.write_text("time,elbow_servo\n0,0.5\n0.1,9\n")       # outside its ctrl_range [-2, 2]
    result = subprocess.run([sys.executable, "-m", "physics", "run", str(path), "--steps", "5", "--out",
                             str(tmp_path / "bad.npz"), "--controls", str(controls), "--quiet"], capture_output=True,
                            text=True)
    assert result.returncode == 2 and "row 3" in result.stderr and "ctrl_range" in result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "bad.npz").exists()


def test_compare_and_sweep_take_the_same_controls(tmp_path):
    """A sweep's run (`physics.tools.sweep.simulate`, what each worker runs) with --control(s) equals a
    run stepped here with the same inputs at the same steps, bit for bit; `compare` takes them for
    every run, and refuses a bad one in one line naming the actuator, exit 2."""
    from physics.tools.options import controls as parse_controls
    from physics.tools.sweep import simulate

    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    table = tmp_path / "drive.csv"
    table.write_text("time,elbow_servo\n0.05,-0.5\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        scene = physics.load_mjcf(path)
    sim = physics.Simulation(scene)
    args = type("Args", (), {"control": ["shoulder_motor=1.5"], "controls": str(table)})()
    entries = parse_controls(args, sim).entries
    assert entries == [(0.0, "shoulder_motor", 1.5), (0.05, "elbow_servo", -0.5)]
    swept = simulate(scene, {}, 30, tuple(entries))
    sim.set_control("shoulder_motor", 1.5)
    change = math.ceil(0.05 / sim.settings.dt - 1e-9)
    sim.step(change)
    sim.set_control("elbow_servo", -0.5)
    sim.step(30 - change)
    assert swept["state_hash"] == sim.state_hash()
    run = lambda *extra: subprocess.run([sys.executable, "-m", "physics", "compare", str(path), "--variant",
                                         "integrator=rk4", "--steps", "20", "--out", str(tmp_path / "cmp"), "--quiet",
                                         *extra], capture_output=True, text=True)
    result = run("--control", "shoulder_motor=1.5", "--controls", str(table))
    assert result.returncode == 0, result.stderr
    result = run("--control", "wrist=1")
    assert result.returncode == 2 and "unknown actuator 'wrist'" in result.stderr and result.stderr.count("\n") == 1


def test_friction_loss_is_imported_and_written_back(tmp_path):
    """MJCF `frictionloss` (with its `<default>`) and URDF `<dynamics friction>` become the joint's
    `friction`; on an actuated joint it would take the actuator's row, so it is named in the model's
    warning and left out; `to_mjcf` writes it back as MuJoCo's `frictionloss`."""
    path = tmp_path / "arm.xml"
    path.write_text("""<mujoco><default><joint frictionloss="0.2"/></default><worldbody>
      <body name="upper"><joint name="shoulder" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
        <body name="lower" pos="0 0 -0.5"><joint name="elbow" axis="0 1 0" frictionloss="0.7"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.04"/></body></body></worldbody>
      <actuator><motor joint="shoulder" gear="10"/></actuator></mujoco>""")
    with pytest.warns(ModelWarning, match="friction loss on an actuated joint"):
        scene = physics.load_mjcf(path)
    friction = {spec["name"]: spec.get("friction") for spec in scene.joints}
    assert friction == {"shoulder": None, "elbow": 0.7}
    model = mujoco.MjModel.from_xml_string(physics.to_mjcf(scene))
    assert model.dof_frictionloss.tolist() == [0.0, 0.7]
    urdf = tmp_path / "arm.urdf"
    urdf.write_text("""<robot name="arm"><link name="base"/><link name="arm"><inertial><mass value="1"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/><dynamics damping="0.1" friction="0.3"/></joint></robot>""")
    spec, = physics.load_urdf(urdf).joints
    assert (spec["damping"], spec["friction"]) == (0.1, 0.3)


@pytest.mark.parametrize("integrator, bound", [("lie-midpoint", 1e-6), ("lie-midpoint-4", 1e-8)])
def test_a_spring_and_an_armature_keep_the_energy_they_share(integrator, bound):
    """The bar on a spring (K = 10 N m/rad, rest 0.3 rad) with an armature A = 0.4 kg m², let go
    at 0: `energy()` holds the spring's ½ K (q − q_rest)² and the armature's ½ A q̇² beside the
    bar's own, and their sum, 0.45 J, stays within `bound` over 1 s at h = 1 ms (measured 2.5e-7 J
    with lie-midpoint, second order; 1.9e-9 composed to fourth), while they trade it."""
    sim = bar({"stiffness": 10.0, "spring_reference": 0.3, "armature": 0.4}, integrator=integrator)
    energy = sim.energy()
    assert energy == {"kinetic": 0.0, "potential": 0.0, "spring": pytest.approx(0.45, abs=1e-15), "armature": 0.0}
    worst, traded = 0.0, 0.0
    for _ in range(1000):
        sim.step()
        energy = sim.energy()
        worst = max(worst, abs(sum(energy.values()) - 0.45))
        traded = max(traded, energy["armature"])
    assert traded > 0.3 and worst < bound, (traded, worst)


@pytest.mark.parametrize("damping", [5.0, 10.0, 12.3, 15.0, 100.0, 1e4])
def test_a_strong_damper_under_the_triple_jump_decays_without_ringing(damping):
    """The bar (I = 0.1) spinning at 2 rad/s on a damper, lie-midpoint-4 at dt 1/60 in three
    sub-steps: RATTLE's chord damper scales q̇ by (1 − a)/(1 + a) a sub-step, a = h D / 2I, and the
    triple jump's backward sub-step (−1.70 h) meets a pole at a = 1/1.7 (D = 12.3 here). A damper
    with a > 1/4 at the longest sub-step is the velocity solve's implicit row instead
    (`SceneSolver.choose_joint_terms`), so whatever D the spin only falls: no step raises |ω| and
    none turns it around."""
    sim = bar({"damping": damping}, integrator="lie-midpoint-4", dt=1 / 60, omega=2.0)
    spins = [2.0]
    for _ in range(60):
        sim.step()
        spins.append(spin(sim))
    spins = np.array(spins)
    assert np.all(np.abs(spins[1:]) <= np.abs(spins[:-1]) + 1e-12), spins
    assert np.all(spins >= 0.0), spins


@pytest.mark.parametrize("joint", [{"stiffness": 1e5}, {"stiffness": 1e5, "armature": 0.05}, {"damping": 12.3},
                                   {"stiffness": 10.0, "armature": 0.4, "damping": 0.5}],
                         ids=["stiff spring", "stiff spring, armature", "strong damper", "soft terms"])
def test_a_restored_run_chooses_its_joint_terms_as_the_run_it_came_from(joint):
    """Which joint terms RATTLE's step takes is chosen from the state at each sub-step's start, so a
    snapshot restored into a new Simulation steps on to the same bits as the run it was taken from
    (lie-midpoint-4, the bar let go at 0.2 rad from its spring's rest or spinning on its damper)."""
    def run():
        sim = bar({"spring_reference": 0.2, **joint}, integrator="lie-midpoint-4", dt=1 / 60, omega=1.0)
        sim.set("substeps", 3)
        return sim

    first = run()
    first.step(7)
    snapshot = first.snapshot()
    first.step(11)
    second = run()
    second.restore(snapshot)
    second.step(11)
    assert second.state_hash() == first.state_hash()


SERVO_SCENE = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "iiwa_servo.toml"


def test_a_control_range_without_0_starts_at_its_nearest_end():
    """An actuator whose ctrl_range leaves out 0 and no `ctrl` starts at the range's end nearest 0
    (MuJoCo clamps a control to its range), so the run's own snapshot restores."""
    sim = bar(actuator={"name": "m", "joint": "hinge", "type": "motor", "ctrl_range": [0.5, 1.0]})
    assert sim.controls == {"m": 0.5}
    snapshot = sim.snapshot()
    sim.step(5)
    sim.restore(snapshot)
    assert sim.controls == {"m": 0.5}


def test_an_actuators_control_at_load_is_state_from_the_first_step():
    """`ctrl` (docs/scene-format.md): iiwa_servo.toml loads each servo's control at Menagerie's home
    pose; a reset and a snapshot's restore keep them, and the MuJoCo peer takes them as its own."""
    from physics.tools.mujoco_peer import MujocoSimulation
    sim = physics.Simulation.from_file(SERVO_SCENE)
    home = {"servo_2": 0.785398, "servo_4": -1.5708, "stand_turn": 1.0}
    assert {name: sim.controls[name] for name in home} == home and sim.controls["servo_1"] == 0.0
    snapshot = sim.snapshot()
    sim.set_control("servo_2", 0.2)
    sim.restore(snapshot)
    assert sim.controls["servo_2"] == 0.785398
    sim.set_control("servo_2", 0.2)
    sim.reset()
    assert sim.controls["servo_2"] == 0.785398
    peer = MujocoSimulation.from_simulation(sim, "implicitfast", contacts=False)
    assert peer.data.ctrl[peer.model.actuator("servo_2").id] == 0.785398


def test_the_servo_arm_holds_its_poses_as_mujoco_does():
    """iiwa_servo.toml with its shapes left out (no contacts), at its own dt and sub-steps, beside
    MuJoCo's implicitfast (Menagerie's integrator for these gains) on the same scene through
    `to_mjcf`: 2 s at the home pose, then 2 s after each of the keyframes "reach" and
    "over_the_stand" set the servos' controls in both engines. Each time every joint is within
    0.03 rad of its control (gravity's droop: kp 2000 holds about 40 N m at the shoulder) and the
    arm rests where MuJoCo's does, every link within 1e-6 m (measured 1.4e-9 to 1.6e-9: both at
    the static balance of servo and gravity, kv 200 having damped the move in a tenth of a second;
    their soft rows' damping at the end-of-step rate instead of the positions' chord would leave
    2.3e-3 m, `SceneSolver.solve`). Its links move slower than 0.05 m/s (the carried
    velocity of a soft row's body leads the chord by (h/2) q̈: 0.02 m/s). The stand's pendulum,
    swinging, within 2e-3 m (measured 1.8e-4 to 5.8e-4: the two integrators' first-order errors)."""
    import tomllib
    from physics.tools.mujoco_peer import MujocoSimulation
    document = tomllib.loads(SERVO_SCENE.read_text())
    for node in document["node"]:
        node.pop("shape", None)
    sim = physics.Simulation(scene_from_dict(document, SERVO_SCENE))
    peer = MujocoSimulation.from_simulation(sim, "implicitfast", contacts=False)
    names = list(sim.names)
    arm = [names.index(f"lbr_iiwa_link_{i}:body") for i in range(1, 8)]
    bob = names.index("pendulum_bob")
    for keyframe in (None, "reach", "over_the_stand"):
        if keyframe is not None:
            sim.apply_keyframe(keyframe)
            for name, value in sim.controls.items():
                peer.set_control(name, value)
        for _ in range(240):
            sim.step(1)
            peer.step(1)
        ours, theirs = sim.world(), peer.world()
        assert np.linalg.norm(ours.velocity[arm], axis=1).max() < 0.05, keyframe
        coordinates = sim.joint_coordinates()
        for i in range(1, 8):
            assert abs(coordinates[f"lbr_iiwa_joint_{i}"] - sim.controls[f"servo_{i}"]) < 0.03, (keyframe, i)
        apart = np.linalg.norm(ours.transform.translation - theirs.translation, axis=1)
        assert apart[arm].max() < 1e-6, (keyframe, apart[arm])
        assert apart[bob] < 2e-3, (keyframe, apart[bob])



@pytest.mark.parametrize("integrator", ["lie-midpoint", "lie-midpoint-4", "semi-implicit-euler"])
@pytest.mark.parametrize("kv, clamped", [(4.0, False), (20.0, False), (4.0, True)])
def test_a_servo_holds_a_lever_at_the_static_balance(integrator, kv, clamped):
    """A 1 kg lever 0.5 m out on a hinge, a position servo (kp 200) holding it level against
    gravity: after 4 s (the motion decays at kv/2I ≥ 7.7 /s, or the overdamped servo's slow pole
    kp/kv = 10 /s: below 1e-12 rad) the angle is the root of kp q = −m g l cos q (Newton, to
    round-off) within 1e-9 rad. kv 4 keeps the damper in RATTLE's step under lie-midpoint; kv 20
    makes it too strong (a = h kv s / 2 > 1 with s the lever's own inverse inertia about its
    centre), a soft row: taken at the end-of-step rate it would sit 4.1e-3 rad off (17 % of the
    droop) under both Lie–midpoint schemes; at the positions' chord it holds the balance. `clamped`: the servo
    with a force range (a soft row whatever its gains) beside a joint damper RATTLE takes."""
    dt, kp, m, g, r = 1.0 / 240.0, 200.0, 1.0, 9.81, 0.5
    doc = {"world": {"dt": dt, "substeps": 1, "integrator": integrator, "gravity": [0.0, -g, 0.0]},
           "node": [{"name": "base", "motion": "fixed"},
                    {"name": "lever", "motion": "dynamic", "mass": m, "translation": [r, 0.0, 0.0],
                     "inertia": [0.01, 0.01, 0.01]}],
           "joint": [{"type": "hinge", "name": "j", "a": "base", "b": "lever", "anchor": [0.0, 0.0, 0.0],
                      "axis": [0.0, 0.0, 1.0], **({"damping": 0.05} if clamped else {})}],
           "actuator": [{"name": "servo", "joint": "j", "type": "position", "kp": kp, "kv": kv,
                         **({"force_range": [-100.0, 100.0]} if clamped else {})}]}
    sim = physics.Simulation(scene_from_dict(doc, "lever.toml"))
    sim.step(int(round(4.0 / dt)))
    q = 0.0
    for _ in range(50):     # kp q + m g r cos q = 0
        q -= (kp * q + m * g * r * math.cos(q)) / (kp - m * g * r * math.sin(q))
    assert abs(sim.joint_coordinates()["j"] - q) < 1e-9


def test_levers_loaded_far_past_their_limits_ease_in_without_being_flung():
    """30 random levers (1 kg, 0.5 to 3 m, a random axis) on a hinge with the range ±0.3 rad, each
    loaded 0.5 to 1.5 rad past one end under gravity, stepped 2 s by lie-midpoint, lie-midpoint-4
    or semi-implicit Euler at dt 1/120 with two sub-steps. Every run ends inside the range (within
    1e-3 rad) without a RunawayError (the easing lifts a lever by its positions alone, an input to
    the runaway check: counted as a gain, the lift raises one in 2 of 24 random runs), and the easing
    gives height, never speed: the kinetic energy at every step is at most m g (highest centre so
    far − centre now), the fall from the highest point reached, plus 1 % of m g L (the schemes'
    energy error over a swing)."""
    rng = np.random.default_rng(7)
    for case in range(30):
        length, past = rng.uniform(0.5, 3.0), rng.uniform(0.5, 1.5) * rng.choice([-1.0, 1.0])
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        out = np.cross(axis, rng.normal(size=3))
        out /= np.linalg.norm(out)
        integrator = ("lie-midpoint", "lie-midpoint-4", "semi-implicit-euler")[case % 3]
        start = (0.3 if past > 0 else -0.3) + past
        doc = {"world": {"dt": 1.0 / 120.0, "substeps": 2, "integrator": integrator},
               "node": [{"name": "base", "motion": "fixed"},
                        {"name": "lever", "motion": "dynamic", "mass": 1.0, "translation": (length * out).tolist(),
                         "inertia": [0.01, 0.01, 0.01]}],
               "joint": [{"type": "hinge", "name": "j", "a": "base", "b": "lever", "anchor": [0.0, 0.0, 0.0],
                          "axis": axis.tolist(), "lower": -0.3, "upper": 0.3, "coordinate": float(start)}]}
        sim = physics.Simulation(scene_from_dict(doc, "lever.toml"))
        lever = list(sim.names).index("lever")
        highest = sim.world().transform.translation[lever, 1]
        for _ in range(240):
            sim.step(1)
            height = sim.world().transform.translation[lever, 1]
            highest = max(highest, height)
            kinetic = sim.energy()["kinetic"]
            assert kinetic <= 9.81 * (highest - height) + 0.01 * 9.81 * length, (case, integrator, kinetic)
        assert abs(sim.joint_coordinates()["j"]) <= 0.3 + 1e-3, (case, integrator, sim.joint_coordinates())


def test_a_motor_held_at_its_control_is_a_driver_not_a_runaway():
    """A motor's 1 N m held on the bar (I = 0.1, A = 0.4, no gravity) for 5 s spins it to
    τ t / (I + A) = 10 rad/s, 25 J that no energy of the run counts (an actuator's work is an
    input): the runaway check, whose allowance here is 0.5 J, waits while it pushes
    (`stages.actuators_push`) and stopped the run as a runaway before. An actuator pushes at a
    control that gives a force, or as a position servo with a force range (which clamps its
    spring); a motor or a velocity servo at 0 does not, nor does a position servo without a force
    range, limited or not (a spring whose energy the balance counts, its hinge's turns counted:
    the next test and tests/test_joint_turns.py)."""
    sim = bar({"armature": 0.4}, {"name": "m", "joint": "hinge", "type": "motor"})
    sim.set_control("m", 1.0)
    assert stages.actuators_push(sim.data, sim._work)
    sim.step(5000)
    assert abs(spin(sim) - 1.0 / 0.5 * 5.0) <= 1e-9
    sim.set_control("m", 0.0)
    assert not stages.actuators_push(sim.data, sim._work)
    sim.step(2000)      # (spinning freely: the check compares again, and the energy holds)
    limited = {"lower": -3.0, "upper": 3.0}
    for joint, actuator, pushes in ((limited, {"type": "position", "kp": 5.0}, False),
                                    ({}, {"type": "position", "kp": 5.0}, False),
                                    ({}, {"type": "velocity", "kv": 5.0}, False),
                                    (limited, {"type": "position", "kp": 5.0, "force_range": [-1.0, 1.0]}, True)):
        servo = bar(joint, {"name": "s", "joint": "hinge", **actuator})
        servo.step()
        assert stages.actuators_push(servo.data, servo._work) == pushes, actuator


def test_a_position_servo_held_at_its_control_keeps_its_energy_and_the_runaway_check():
    """A position servo of kp = 5 N m/rad on the bar (armature 0.1, no damping, no gravity, limits
    at ±2.5 rad that it never reaches), held at 1 rad from rest at 0: a spring toward its target,
    so kinetic + armature + servo ½ kp (q − 1)²
    (`Simulation.energy`) stays at the 2.5 J it starts with, to 1e-5 of it over 3 s (RATTLE's
    spring terms conserve a nearby energy: measured 6e-7), and the runaway check compares with it
    (its reference is no `DRIVEN`: before, a position servo turned the check off for good). A new
    control is an input: the reference is taken again with the new target's energy."""
    sim = bar({"armature": 0.1, "lower": -2.5, "upper": 2.5}, {"name": "s", "joint": "hinge", "type": "position",
                                                                "kp": 5.0})
    sim.set_control("s", 1.0)
    sim.step()
    assert sim._work.runaway.reference is not stages.DRIVEN
    start = stages.energy_balance(sim.energy())
    assert abs(start - 0.5 * 5.0 * 1.0 ** 2) <= 1e-3      # (a step's worth of motion from the target's pull)
    worst, lowest = 0.0, 0.0
    for _ in range(3000):
        sim.step()
        worst = max(worst, abs(stages.energy_balance(sim.energy()) - start))
        lowest = min(lowest, angle(sim))
    assert worst <= 1e-5 * start, worst
    assert lowest >= -1e-3      # (it swings between 0 and 2 rad about its target)
    sim.set_control("s", -0.5)
    sim.step()
    reference, _ = sim._work.runaway.reference
    assert abs(reference - stages.energy_balance(sim.energy())) <= 0.1 * reference, (reference, sim.energy())
