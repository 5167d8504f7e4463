"""Keyframes: a named set of joint coordinates and actuator controls (`[[keyframe]]` in a scene,
MuJoCo's `<key>` imported from MJCF), as MuJoCo's keyframes hold qpos and ctrl.

A keyframe acts as the inputs a user's sliders give, in its order: a "pose" per joint
(`Simulation.pose_joint`: the bodies beyond it turn to the coordinate and rest) and a "control"
per actuator (`Simulation.set_control`), so that a timeline records it and a replay gives it again
bit for bit. Posing one joint leaves the others' coordinates as they are, so the order of the
joints does not change where they end. `capture` takes one from a run; `toml` writes it as the
`[[keyframe]]` table a scene file holds (docs/scene-format.md).
"""
from physics.io.articulated import toml_value


def inputs(keyframe):
    """[(kind, args)] of timeline inputs (physics.pipeline.timeline.Input) that put a run at `keyframe`."""
    return ([("pose", (joint, q)) for joint, q in keyframe["joints"].items()]
            + [("control", (actuator, value)) for actuator, value in keyframe["controls"].items()])


def capture(sim, name):
    """The keyframe `name` of `sim` now: every named hinge's and slider's coordinate (clamped into
    its limits, where a soft limit let it stray a little past) and every actuator's control."""
    limits = {spec["name"]: (spec.get("lower"), spec.get("upper")) for spec in sim.scene.joints if "name" in spec}
    joints = {}
    for joint, q in sim.joint_coordinates().items():
        low, high = limits[joint]
        joints[joint] = min(max(q, low if low is not None else q), high if high is not None else q)
    return {"name": name, "joints": joints, "controls": dict(sim.controls)}


def toml(keyframe):
    """The `[[keyframe]]` table of `keyframe`, as text to paste into a scene file."""
    lines = ["[[keyframe]]", f"name = {toml_value(keyframe['name'])}"]
    for key in ("joints", "controls"):
        if keyframe[key]:
            lines.append(f"{key} = {{ " + ", ".join(f"{toml_value(n)} = {toml_value(v)}" for n, v in keyframe[key].items())
                         + " }")
    return "\n".join(lines) + "\n"
