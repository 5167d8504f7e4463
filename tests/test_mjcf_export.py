"""physics.to_mjcf and physics.tools.mujoco_peer: every shipped scene MuJoCo can express loads in MuJoCo
as the same bodies, and the others are refused with every reason named.

MuJoCo itself is the independent means: its compiler reads the XML, and its forward kinematics
(`mj_forward` at qpos0) places bodies, geoms and joints from it; we compare those with our own
loader's masses, inertias and world poses (physics.Simulation.world_poses). 1e-12: the XML carries
every float in full (repr), so only the two engines' compositions of rotations differ, by a few
ulps of lengths of order 10 m.
"""
from pathlib import Path

import mujoco
import numpy as np
import pytest

import physics
from physics.io.mjcf_export import UnsupportedScene, to_mjcf
from physics.tools.mujoco_peer import MujocoSimulation
from physics.math.rotation import vee
from physics.io.scene import load_scene

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"
EXPRESSIBLE = ("ant", "car", "chain", "double_pendulum", "humanoid", "iiwa", "iiwa_servo", "pendulum", "pile", "pyramid", "slope", "stack",
               "t_handle", "top")
# what each refused scene lacks in MJCF (a word of each reason)
REFUSED = {"gyroscope": ["kinematic"], "newtons_cradle": ["distance", "restitution"], "rope_bridge": ["rope"],
           "stress": ["kinematic"], "tank": ["kinematic", "sleep", "collision filter"], "turntable": ["kinematic"]}
TOLERANCE = 1e-12


def test_every_shipped_scene_is_exported_or_refused():
    """The two lists above cover the shipped scenes: a new scene gets a line here."""
    assert sorted(EXPRESSIBLE + tuple(REFUSED)) == sorted(path.stem for path in SCENES.glob("*.toml"))


@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_mujoco_loads_the_same_bodies(name):
    """Masses and inertias are the scene's, with the centre of mass at the body origin and the
    principal axes along the node's (body_ipos 0, body_iquat 1); at qpos0 every dynamic body, every
    shape (size and pose; capsule and cylinder axes: MuJoCo's geom z is our node's y) and every joint
    anchor and axis (each axis of a six-axis joint too, in MuJoCo's own order) is where our loader puts it."""
    scene = load_scene(SCENES / f"{name}.toml")
    model = mujoco.MjModel.from_xml_string(to_mjcf(scene))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    sim = physics.Simulation(scene)
    translation, rotation, scale = sim.world_poses()
    body = {scene.names[i]: i for i in np.flatnonzero(np.asarray(scene.motion) == "dynamic")}
    assert model.nbody == len(body) + 1
    for b in range(1, model.nbody):
        i = body[model.body(b).name]
        assert model.body_mass[b] == scene.mass[i]
        np.testing.assert_allclose(model.body_inertia[b], scene.inertia_body[i], rtol=TOLERANCE, atol=0)
        np.testing.assert_array_equal(model.body_ipos[b], 0.0)
        np.testing.assert_array_equal(model.body_iquat[b], [1.0, 0.0, 0.0, 0.0])
        np.testing.assert_allclose(data.xpos[b], translation[i], rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(data.xmat[b].reshape(3, 3), rotation[i], rtol=0, atol=TOLERANCE)
    shaped = [i for i, shape in enumerate(scene.shapes) if shape is not None]
    assert model.ngeom == len(shaped)
    for i in shaped:
        g = model.geom(scene.names[i]).id
        shape, s = scene.shapes[i], scale[i]
        frame = data.geom_xmat[g].reshape(3, 3)
        if shape["type"] == "plane":
            normal = rotation[i] @ (np.asarray(shape["normal"]) / np.linalg.norm(shape["normal"]))
            np.testing.assert_allclose(frame[:, 2], normal, atol=TOLERANCE)
            point = translation[i] + s * shape["offset"] * normal
            assert abs(normal @ (data.geom_xpos[g] - point)) < TOLERANCE
            continue
        if shape["type"] == "hull":
            # MuJoCo re-centres a mesh on its centroid and principal axes and moves the geom's frame to
            # match: its vertices, stored as float32, land on ours within 1e-6 m
            ours = translation[i] + s * np.asarray(shape["vertices"]) @ rotation[i].T
            mesh = model.geom_dataid[g]
            local = model.mesh_vert[model.mesh_vertadr[mesh]:model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]
            theirs = data.geom_xpos[g] + local.astype(float) @ frame.T
            assert len(theirs) == len(ours)
            assert max(np.min(np.linalg.norm(theirs - v, axis=1)) for v in ours) < 1e-6
            continue
        np.testing.assert_allclose(data.geom_xpos[g], translation[i], rtol=0, atol=TOLERANCE)
        if shape["type"] in ("capsule", "cylinder"):
            np.testing.assert_allclose(frame[:, 2], rotation[i][:, 1], atol=TOLERANCE)
            size = [s * shape["radius"], s * shape["height"] / 2]
        else:
            np.testing.assert_allclose(frame, rotation[i], atol=TOLERANCE)
            size = [s * shape["radius"]] if shape["type"] == "sphere" else s * np.asarray(shape["size"]) / 2
        np.testing.assert_allclose(model.geom_size[g][:len(size)], size, rtol=TOLERANCE)
    for spec in scene.joints:   # (a six_axis joint: MuJoCo's joints of one body, named as its axes)
        if spec["type"] == "six_axis":
            continue
        j = model.joint(spec["name"] if "group" in spec else scene.names[spec["b"]]).id
        np.testing.assert_allclose(data.xanchor[j], spec["anchor"], rtol=0, atol=TOLERANCE)
        if spec["type"] in ("hinge", "slider"):
            np.testing.assert_allclose(data.xaxis[j], spec["axis"], rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_mjcf_cannot_express_is_named(name):
    """A refused scene raises UnsupportedScene naming its file and each reason; asked for a list
    instead, the exporter gives the same reasons and an XML MuJoCo loads (the rest of the scene)."""
    scene = load_scene(SCENES / f"{name}.toml")
    with pytest.raises(UnsupportedScene) as refused:
        to_mjcf(scene)
    message = str(refused.value)
    assert f"{name}.toml" in message
    for word in REFUSED[name]:
        assert word in message, f"{name}: {word!r} not named in {message!r}"
    left_out = []
    text = to_mjcf(scene, left_out=left_out)
    assert left_out == refused.value.left_out and "left out" in text
    mujoco.MjModel.from_xml_string(text)


def test_integrator_and_contacts_options():
    """integrator and contacts reach <option>; a name MuJoCo lacks is refused."""
    model = mujoco.MjModel.from_xml_string(to_mjcf(SCENES / "double_pendulum.toml", integrator="implicitfast",
                                                   contacts=False))
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    assert model.opt.timestep == load_scene(SCENES / "double_pendulum.toml").world["dt"]
    np.testing.assert_array_equal(model.opt.gravity, [0.0, -9.81, 0.0])
    with pytest.raises(ValueError, match="integrator"):
        to_mjcf(SCENES / "t_handle.toml", integrator="lie-midpoint")


@pytest.mark.parametrize("name, steps", [("double_pendulum", 60), ("pendulum", 30), ("t_handle", 30)])
def test_peer_starts_from_our_state(name, steps):
    """MuJoCo put at our state after some steps reads back the same world poses and velocities of
    every node, energy and angular momentum. Our joints are constraint rows, MuJoCo's coordinates:
    the state is projected onto MuJoCo's joints. Under lie-midpoint (RATTLE) our state keeps the
    joints to ~1e-11 m and m/s, so the two agree to 1e-6 (m, rad, m/s, rad/s, relative energy).
    (semi-implicit Euler's velocity solve leaves the joints' velocity rows 2e-2 m/s off after 60
    steps of the double pendulum: that is the projection's to remove, not a test of it.)"""
    sim = physics.Simulation.from_file(SCENES / f"{name}.toml")
    sim.set("integrator", "lie-midpoint")
    sim.step(steps)
    peer = MujocoSimulation.from_simulation(sim)
    assert peer.time == sim.time and peer.step_count == sim.step_count
    ours, theirs = sim.world(), peer.world()
    translation, rotation, _ = sim.world_poses()
    dyn = np.asarray(sim.motion) == "dynamic"
    np.testing.assert_allclose(theirs.translation, translation, atol=1e-6)
    np.testing.assert_allclose(theirs.rotation, rotation, atol=1e-6)
    np.testing.assert_allclose(theirs.velocity[dyn], ours.velocity[dyn], atol=1e-6)
    np.testing.assert_allclose(theirs.angular_velocity[dyn], vee(ours.angular_velocity)[dyn], atol=1e-6)
    e_ours, e_theirs = sum(sim.energy().values()), sum(peer.energy().values())
    assert abs(e_theirs - e_ours) <= 1e-6 * max(abs(e_ours), sim.energy()["kinetic"], 1.0)
    np.testing.assert_allclose(peer.momentum()["angular"], sim.momentum()["angular"], atol=1e-6)


def test_impulses_reach_the_peer_as_ours():
    """An off-centre impulse J at p on the free T-handle: Δv = J / m and Δω = I_world⁻¹ ((p − x) × J)
    in both engines (ours by the formula of docs/scene-format.md, MuJoCo's by M⁻¹ Jᵀ); 1e-12."""
    sim = physics.Simulation.from_file(SCENES / "t_handle.toml")
    sim.step(10)
    peer = MujocoSimulation.from_simulation(sim)
    impulse, point = np.array([0.3, -0.2, 0.5]), sim.world_poses()[0][0] + [0.1, 0.2, -0.05]
    before = peer.world()
    sim.apply_impulse("handle", impulse, point)
    peer.apply_impulse("handle", impulse, point)
    after, ours = peer.world(), sim.world()
    np.testing.assert_allclose(after.velocity[0] - before.velocity[0], impulse / 1.0, atol=1e-12)
    np.testing.assert_allclose(after.velocity[0], ours.velocity[0], atol=1e-12)
    np.testing.assert_allclose(after.angular_velocity[0], vee(ours.angular_velocity[0]), atol=1e-12)


def test_snapshot_restore_is_bit_for_bit():
    """A MuJoCo run restored to a snapshot and stepped again reaches the same state hash."""
    sim = physics.Simulation.from_file(SCENES / "double_pendulum.toml")
    peer = MujocoSimulation.from_simulation(sim)
    peer.step(20)
    snap = peer.snapshot()
    peer.step(30)
    first = peer.state_hash()
    peer.restore(snap)
    assert peer.step_count == 20
    peer.step(30)
    assert peer.state_hash() == first


def test_pushes_reach_a_mujoco_variant():
    """A comparison's push (`apply_input`: a mouse pull's force, a flick's impulse) reaches the
    MuJoCo variant as it reaches our runs: on the free T-handle (no gravity) the world velocity
    jumps by (F dt + J) / m in both, so the two velocities stay equal (1e-12). A MuJoCo run cannot
    be promoted to the main run."""
    from physics.tools.compare import Comparison
    c = Comparison(SCENES / "t_handle.toml")
    c.add_variant("mujoco", "engine=mujoco")
    c.advance(5)
    c.apply_input("force", "handle", np.array([6.0, 0.0, 0.0]), None)
    c.apply_input("impulse", "handle", np.array([0.0, 0.0, 0.2]), None)
    c.advance(1)
    expected = np.array([6.0 * c.simulation("main").settings.dt, 0.0, 0.2])
    for label in ("main", "mujoco"):
        np.testing.assert_allclose(c.simulation(label).world().velocity[0], expected, atol=1e-12)
    assert c.velocity_difference("main", "mujoco", [0])[0] < 1e-12
    with pytest.raises(ValueError, match="only our own runs can be the main run"):
        c.promote("mujoco")


def test_a_joints_two_nodes_are_excluded_unless_it_says_collide_connected():
    """Two dynamic boxes overlapping by 0.2 m on a ball joint (their shapes never paired by ours:
    physics.constraints.solver): MuJoCo's model excludes the two bodies and pairs nothing between them, so
    its collision detection finds no contact either; with `collide_connected = true` it pairs
    them as ours does and finds the overlap."""
    from physics.io.scene import scene_from_dict

    def contacts(**joint):
        nodes = [{"name": name, "motion": "dynamic", "translation": [x, 1.0, 0.0],
                  "shape": {"type": "box", "size": [1.0, 1.0, 1.0]}} for name, x in (("left", -0.4), ("right", 0.4))]
        scene = scene_from_dict({"world": {"gravity": [0.0, 0.0, 0.0]}, "node": nodes,
                                 "joint": [{"type": "ball", "a": "left", "b": "right", "anchor": [0.0, 1.0, 0.0], **joint}]})
        model = mujoco.MjModel.from_xml_string(to_mjcf(scene))
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        return data.ncon

    assert contacts() == 0
    assert contacts(collide_connected=True) > 0


def test_a_chain_deeper_than_pythons_recursion_limit_is_exported(tmp_path):
    """A chain of N links is a MuJoCo body tree N deep, and ElementTree writes it by recursion: a
    1,200-link chain is exported (no RecursionError), and a 400-link one loads in MuJoCo with
    every link (MuJoCo's XML reader stops at 500 levels of nesting, which it names)."""
    import subprocess
    import sys
    for links in (400, 1200):
        path = tmp_path / f"chain_{links}.toml"
        subprocess.run([sys.executable, str(SCENES / "make_scenes.py"), "chain", "--links", str(links), "--out",
                        str(path)], check=True, capture_output=True)
        text = to_mjcf(load_scene(path), [], integrator="euler")
        assert text.count("<body ") == links
        if links == 400:
            assert mujoco.MjModel.from_xml_string(text).nbody == links + 1
        else:
            with pytest.raises(ValueError, match="nesting is too deep"):
                mujoco.MjModel.from_xml_string(text)
