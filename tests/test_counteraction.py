"""Impulses and counteraction ("The Dynamics of a Transform Hierarchy": "Linear Impulses",
"Local and Global Deltas", "Counteracting the Inherited Effect from the Parent"), checked against
conservation laws and against physics.math.transform's independent delta formulas."""
import numpy as np
import pytest

from physics.pipeline import stages
from physics.math.rotation import vee
from physics.io.scene import scene_from_dict
from physics.pipeline.simulation import Simulation
from physics.math.transform import DynamicTransform, Transform

# Round-off of a few 3x3 products on O(1) numbers: 1e-12 absolute leaves a wide margin while
# catching any real (O(1e-3) or larger) inheritance error.
TOL = 1e-12


def _scene(counteract):
    """A turning, accelerating turntable carrying a spinning puck, which carries a dynamic child
    directly and another through a fixed, rotated, scaled bracket."""
    return {
        "world": {"gravity": [0.0, -9.81, 0.0], "counteract": counteract, "dt": 0.01},
        "node": [
            {"name": "table", "motion": "kinematic", "angular_velocity": [0.0, 1.3, 0.2],
             "angular_acceleration": [0.1, 0.2, 0.0], "velocity": [0.4, 0.0, 0.0]},
            {"name": "puck", "parent": "table", "motion": "dynamic", "translation": [2.0, 0.1, 0.5],
             "rotation": [0.9, 0.1, 0.3, 0.3], "velocity": [0.3, 0.0, 0.5], "angular_velocity": [0.1, 0.4, -0.2],
             "mass": 2.0, "inertia": [0.3, 0.5, 0.7]},
            {"name": "child", "parent": "puck", "motion": "dynamic", "translation": [0.5, 0.3, -0.2],
             "velocity": [0.1, -0.2, 0.3], "angular_velocity": [1.0, 0.0, 0.5], "mass": 0.5, "inertia": [0.1, 0.2, 0.15]},
            {"name": "bracket", "parent": "puck", "translation": [-0.4, 0.2, 0.1], "rotation": [0.8, 0.6, 0.0, 0.0],
             "scale": 1.5},
            {"name": "grandchild", "parent": "bracket", "motion": "dynamic", "translation": [0.2, 0.1, 0.3],
             "velocity": [0.0, 0.2, 0.0], "angular_velocity": [0.0, 0.3, 0.0], "mass": 0.2},
        ],
    }


def _sim(counteract):
    sim = Simulation(scene_from_dict(_scene(counteract)))
    sim.step(7)  # a generic moving state, not the file's
    return sim


IMPULSE = np.array([0.7, -0.3, 1.1])


def _states(sim):
    return sim.world(), sim.local()


@pytest.mark.parametrize("point", [None, "off-centre"])
def test_counteraction_keeps_the_childrens_world_motion(point):
    sim = _sim(True)
    world0, local0 = _states(sim)
    puck, child, grandchild = (sim.names.index(n) for n in ("puck", "child", "grandchild"))
    p = None if point is None else world0.transform.translation[puck] + np.array([0.1, 0.2, -0.15])
    sim.apply_impulse("puck", IMPULSE, p)
    world1, local1 = _states(sim)
    for node in (child, grandchild):
        for name in ("velocity", "acceleration", "angular_velocity", "angular_acceleration"):
            np.testing.assert_allclose(getattr(world1, name)[node], getattr(world0, name)[node], atol=TOL, err_msg=name)
    # The puck itself: Δv3 = J / m exactly.
    np.testing.assert_allclose(world1.velocity[puck] - world0.velocity[puck], IMPULSE / 2.0, atol=TOL)
    # The child's local change matches DynamicTransform.counteract (the article's formulas and their
    # angular analogue), given the parent's world change as the simulation produced it.
    parent_before = DynamicTransform(Transform(world0.transform.translation[puck], world0.transform.rotation[puck],
                                               world0.transform.scale[puck]), world0.velocity[puck],
                                     world0.acceleration[puck], world0.angular_velocity[puck],
                                     world0.angular_acceleration[puck])
    child_local = DynamicTransform(Transform(local0.transform.translation[child], local0.transform.rotation[child],
                                             local0.transform.scale[child]), local0.velocity[child],
                                   local0.acceleration[child], local0.angular_velocity[child],
                                   local0.angular_acceleration[child])
    delta = parent_before.counteract(
        child_local, dv2=world1.velocity[puck] - world0.velocity[puck],
        dw2=world1.angular_velocity[puck] - world0.angular_velocity[puck],
        da2=world1.acceleration[puck] - world0.acceleration[puck],
        dal2=world1.angular_acceleration[puck] - world0.angular_acceleration[puck])
    np.testing.assert_allclose(local1.velocity[child] - local0.velocity[child], delta.velocity, atol=TOL)
    np.testing.assert_allclose(local1.acceleration[child] - local0.acceleration[child], delta.acceleration, atol=TOL)
    np.testing.assert_allclose(local1.angular_velocity[child] - local0.angular_velocity[child],
                               delta.angular_velocity, atol=TOL)
    np.testing.assert_allclose(local1.angular_acceleration[child] - local0.angular_acceleration[child],
                               delta.angular_acceleration, atol=TOL)


def test_linear_impulse_delta_rules_for_body_and_counteracted_child():
    """Through the centre of mass: the puck's Δv1 = J2⁻¹ Δv3, Δa1 = −2 J2⁻¹ ω2 Δv3 (ω2 the
    turntable's); its counteracted child's Δv1 = −J⁻¹ Δv, Δa1 = 2 J⁻¹ ω Δv (ω the puck's)."""
    sim = _sim(True)
    world0, local0 = _states(sim)
    table, puck, child = (sim.names.index(n) for n in ("table", "puck", "child"))
    sim.apply_impulse("puck", IMPULSE)
    world1, local1 = _states(sim)
    dv = IMPULSE / 2.0
    r_table = world0.transform.rotation[table]
    w_table = vee(world0.angular_velocity[table])
    np.testing.assert_allclose(local1.velocity[puck] - local0.velocity[puck], r_table.T @ dv, atol=TOL)
    np.testing.assert_allclose(local1.acceleration[puck] - local0.acceleration[puck],
                               -2.0 * r_table.T @ np.cross(w_table, dv), atol=TOL)
    r_puck = world0.transform.rotation[puck]
    w_puck = vee(world0.angular_velocity[puck])
    np.testing.assert_allclose(world1.angular_velocity[puck], world0.angular_velocity[puck], atol=TOL)
    np.testing.assert_allclose(local1.velocity[child] - local0.velocity[child], -r_puck.T @ dv, atol=TOL)
    np.testing.assert_allclose(local1.acceleration[child] - local0.acceleration[child],
                               2.0 * r_puck.T @ np.cross(w_puck, dv), atol=TOL)


@pytest.mark.parametrize("point", [None, "off-centre"])
def test_without_counteraction_the_children_inherit(point):
    sim = _sim(False)
    world0, local0 = _states(sim)
    puck = sim.names.index("puck")
    p = None if point is None else world0.transform.translation[puck] + np.array([0.1, 0.2, -0.15])
    sim.apply_impulse("puck", IMPULSE, p)
    world1, local1 = _states(sim)
    dv2 = world1.velocity[puck] - world0.velocity[puck]
    dw2 = vee(world1.angular_velocity[puck] - world0.angular_velocity[puck])
    np.testing.assert_allclose(dv2, IMPULSE / 2.0, atol=TOL)
    for name in ("child", "grandchild"):
        node = sim.names.index(name)
        offset = world0.transform.translation[node] - world0.transform.translation[puck]
        # Δv3 = Δv2 + Δω2 × r, Δω3 = Δω2 (seed: "Global change in child due to global change in parent")
        np.testing.assert_allclose(world1.velocity[node] - world0.velocity[node], dv2 + np.cross(dw2, offset), atol=TOL)
        np.testing.assert_allclose(vee(world1.angular_velocity[node] - world0.angular_velocity[node]), dw2, atol=TOL)
        for field in ("velocity", "angular_velocity"):
            np.testing.assert_allclose(getattr(local1, field)[node], getattr(local0, field)[node], atol=TOL)
    if point is None:
        np.testing.assert_allclose(dw2, 0.0, atol=TOL)
    else:
        assert np.linalg.norm(dw2) > 0.1


@pytest.mark.parametrize("counteract", [True, False])
def test_impulse_changes_momenta_by_the_impulse(counteract):
    """Independent of every frame formula: linear momentum changes by J and angular momentum about
    the origin by p × J — with counteraction, where only the puck changes; without it, the children's
    inherited changes are extra momentum the impulse alone does not explain, so only the puck's
    own momentum is checked there."""
    sim = _sim(counteract)
    puck = sim.names.index("puck")
    point = sim.world().transform.translation[puck] + np.array([0.1, 0.2, -0.15])
    before = sim.momentum()
    spin_before = _puck_momenta(sim, puck)
    sim.apply_impulse("puck", IMPULSE, point)
    after = sim.momentum()
    spin_after = _puck_momenta(sim, puck)
    np.testing.assert_allclose(spin_after[0] - spin_before[0], IMPULSE, atol=TOL)
    np.testing.assert_allclose(spin_after[1] - spin_before[1], np.cross(point, IMPULSE), atol=TOL)
    if counteract:
        np.testing.assert_allclose(after["linear"] - before["linear"], IMPULSE, atol=TOL)
        np.testing.assert_allclose(after["angular"] - before["angular"], np.cross(point, IMPULSE), atol=TOL)


def _puck_momenta(sim, node):
    """The puck's own linear and angular momentum (about the origin), from world state only."""
    world = sim.world()
    m = sim.mass[node]
    r = world.transform.rotation[node]
    inertia_world = r @ np.diag(sim.inertia_body[node]) @ r.T
    p = m * world.velocity[node]
    return p, np.cross(world.transform.translation[node], p) + inertia_world @ vee(world.angular_velocity[node])


def test_scene_event_applies_the_impulse_once_at_its_time():
    data = _scene(True)
    data["world"]["gravity"] = [0.0, 0.0, 0.0]
    # A still table and no nested bodies: the puck's momentum is conserved exactly between events.
    data["node"] = [{"name": "table"}, data["node"][1]]
    data["event"] = [{"time": 0.05, "node": "puck", "impulse": IMPULSE.tolist()}]
    sim = Simulation(scene_from_dict(data))
    p0 = sim.momentum()["linear"]
    sim.step(4)  # t = 0.04 < 0.05
    np.testing.assert_allclose(sim.momentum()["linear"], p0, atol=1e-12)
    sim.step(1)
    np.testing.assert_allclose(sim.momentum()["linear"], p0 + IMPULSE, atol=1e-12)
    sim.step(10)
    np.testing.assert_allclose(sim.momentum()["linear"], p0 + IMPULSE, atol=1e-12)


def test_impulse_rejects_bad_input():
    sim = _sim(True)
    with pytest.raises(ValueError, match="table"):
        sim.apply_impulse("table", IMPULSE)  # kinematic
    with pytest.raises(ValueError, match="nope"):
        sim.apply_impulse("nope", IMPULSE)
    with pytest.raises(ValueError, match="impulse_world"):
        sim.apply_impulse("puck", [1.0, np.nan, 0.0])


def _node_dynamics(dt, i):
    """Row i of a batch DynamicTransform (world or local), as a DynamicTransform of batch ()."""
    t = dt.transform
    return DynamicTransform(Transform(t.translation[i], t.rotation[i], t.scale[i]), dt.velocity[i], dt.acceleration[i],
                            dt.angular_velocity[i], dt.angular_acceleration[i])


@pytest.mark.parametrize("counteract", [True, False])
def test_solver_world_changes_follow_the_transform_delta_rules(counteract):
    """The solver's path from world changes to local state (physics.pipeline.stages.apply_world_changes, the
    compiled `physics.dynamics.body_passes.move_bodies`) and physics.math.transform's delta rules are two implementations of the same
    article formulas: they agree. Each dynamic body gets a world velocity change [Δv, Δω]; its local
    velocity changes by `delta_local_from_world(Δv)` under its parent, and with counteraction also
    by `counteract` of the world change its parent inherits from the nearest dynamic ancestor
    (`delta_child_from_parent` down the chain puck → bracket). Without counteraction a body's world
    velocity changes by its own Δv plus that inherited change; with it, by its own Δv alone."""
    sim = _sim(counteract)
    world0, local0 = _states(sim)
    names = list(sim.names)
    dynamic = np.flatnonzero(np.asarray(sim.motion) == "dynamic")   # the rows of the world changes
    rng = np.random.default_rng(11)
    change = rng.normal(size=(dynamic.size, 6))
    stages.apply_world_changes(sim.model, sim.data, sim.settings, sim._work, change, np.zeros_like(change))
    world1, local1 = _states(sim)
    row = {node: k for k, node in enumerate(dynamic)}
    hat = lambda w: np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])  # noqa: E731

    def inherited(node):
        """The world [Δv, Δω skew] that node's parent takes from the nearest dynamic ancestor's change
        (None when there is none), by delta_child_from_parent down the chain of parents."""
        chain, q = [], sim.parent[node]
        while q >= 0 and sim.motion[q] != "dynamic":
            chain.append(q)
            q = sim.parent[q]
        if q < 0:
            return None
        dv, dw = change[row[q], :3], hat(change[row[q], 3:])
        for below in reversed(chain):   # the ancestor's children first
            delta = _node_dynamics(world0, sim.parent[below]).delta_child_from_parent(
                _node_dynamics(local0, below), dv2=dv, dw2=dw)
            dv, dw = delta.velocity, delta.angular_velocity
        return dv, dw

    checked = 0
    for node in dynamic:
        q = sim.parent[node]
        parent_world = _node_dynamics(world0, q) if q >= 0 else DynamicTransform.identity(3)
        expected_local = parent_world.delta_local_from_world(dv3=change[row[node], :3]).velocity
        expected_world = change[row[node], :3]
        from_above = inherited(node)
        if from_above is not None:
            dv_q, dw_q = from_above
            if counteract:
                expected_local = expected_local + parent_world.counteract(_node_dynamics(local0, node), dv2=dv_q,
                                                                          dw2=dw_q).velocity
            else:
                offset = world0.transform.translation[node] - world0.transform.translation[q]
                expected_world = expected_world + dv_q + dw_q @ offset
            checked += 1
        np.testing.assert_allclose(local1.velocity[node] - local0.velocity[node], expected_local, atol=TOL,
                                   err_msg=names[node])
        np.testing.assert_allclose(world1.velocity[node] - world0.velocity[node], expected_world, atol=TOL,
                                   err_msg=names[node])
    assert checked == 2  # child (under the puck) and grandchild (under the bracket)


def _joined_scene():
    """A free base carrying a link on a hinge, and a loose crate (in no joint) carrying a lid hinged
    to the base: the link and the lid are in joints, their motion their own; the crate rides the
    base loosely, and the lid rides the crate, whose moves it does not inherit. Gravity off,
    nothing touches."""
    body = {"motion": "dynamic", "mass": 1.5, "inertia": [0.2, 0.3, 0.25]}
    return {
        "world": {"gravity": [0.0, 0.0, 0.0], "counteract": False, "dt": 0.01},
        "node": [
            {"name": "base", **body, "velocity": [0.2, 0.1, 0.0], "angular_velocity": [0.0, 0.5, 0.3]},
            {"name": "link", "parent": "base", **body, "translation": [1.0, 0.0, 0.0]},
            {"name": "crate", "parent": "base", **body, "translation": [-0.5, 0.4, 0.2]},
            {"name": "lid", "parent": "crate", **body, "translation": [0.0, 0.5, 0.0], "rotation": [0.9, 0.1, 0.3, 0.3]},
        ],
        "joint": [
            {"type": "hinge", "a": "base", "b": "link", "anchor": [0.5, 0.0, 0.0], "axis": [0.0, 0.0, 1.0]},
            {"type": "hinge", "a": "base", "b": "lid", "anchor": [-0.5, 0.6, 0.2], "axis": [1.0, 0.0, 0.0]},
        ],
    }


def test_a_body_in_a_joint_keeps_its_own_motion_with_counteraction_off():
    """A joint's impulses are forces between its two bodies, solved for their world motions: a body
    in a joint keeps its world motion its own whatever the counteraction (`Model.own_motion`), and
    only a loose body (the crate) inherits its carrier's changes. The lid, in a joint, rides the
    crate, which inherits: its velocity and pose change by its own alone, its pose solved from the
    crate's pose as the move left it. Checked on the solver's path (`apply_world_changes`, with pose
    changes) and on an impulse (`apply_impulse`) against the seed's rule for the crate,
    Δv3 = Δv2 + Δω2 × r; 1e-12 as `TOL`."""
    from physics.math.rotation import matrix_from_rotvec
    sim = Simulation(scene_from_dict(_joined_scene()))
    sim.step(3)
    names = list(sim.names)
    base, link, crate, lid = (names.index(n) for n in ("base", "link", "crate", "lid"))
    own = dict(zip(np.asarray(names)[sim.model.dyn], sim.model.own_motion))
    assert own == {"base": True, "link": True, "crate": False, "lid": True}

    world0, _ = _states(sim)
    dynamic = list(sim.model.dyn)
    rng = np.random.default_rng(5)
    change, move = rng.normal(size=(len(dynamic), 6)), 0.05 * rng.normal(size=(len(dynamic), 6))
    stages.apply_world_changes(sim.model, sim.data, sim.settings, sim._work, change, np.zeros_like(move))
    world1, _ = _states(sim)

    def own_change(node):
        return change[dynamic.index(node), :3]

    np.testing.assert_allclose(world1.velocity[link] - world0.velocity[link], own_change(link), atol=TOL)
    np.testing.assert_allclose(world1.velocity[lid] - world0.velocity[lid], own_change(lid), atol=TOL)
    r = world0.transform.translation[crate] - world0.transform.translation[base]
    np.testing.assert_allclose(world1.velocity[crate] - world0.velocity[crate],
                               own_change(crate) + own_change(base) + np.cross(change[dynamic.index(base), 3:], r),
                               atol=TOL)
    world0, _ = _states(sim)       # then the poses alone (a turn of its carrier changes a body's velocity too)
    stages.apply_world_changes(sim.model, sim.data, sim.settings, sim._work, None, move)
    world1, _ = _states(sim)
    for node in (link, lid):        # where their own moves put them, whatever the crate's did
        k = dynamic.index(node)
        np.testing.assert_allclose(world1.transform.translation[node], world0.transform.translation[node] + move[k, :3],
                                   atol=TOL)
        np.testing.assert_allclose(world1.transform.rotation[node], matrix_from_rotvec(move[k, 3:]) @ world0.transform.rotation[node],
                                   atol=TOL)
    moved_crate = world1.transform.translation[crate] - world0.transform.translation[crate]
    assert np.linalg.norm(moved_crate - move[dynamic.index(crate), :3]) > 1e-3      # it went with the base

    world0, _ = _states(sim)
    sim.apply_impulse("base", IMPULSE, world0.transform.translation[base] + np.array([0.1, 0.2, -0.15]))
    world1, _ = _states(sim)
    for node in (link, lid):
        np.testing.assert_allclose(world1.velocity[node], world0.velocity[node], atol=TOL)
        np.testing.assert_allclose(world1.angular_velocity[node], world0.angular_velocity[node], atol=TOL)
    dv2, dw2 = world1.velocity[base] - world0.velocity[base], vee(world1.angular_velocity[base] - world0.angular_velocity[base])
    assert np.linalg.norm(dw2) > 0.1
    r = world0.transform.translation[crate] - world0.transform.translation[base]
    np.testing.assert_allclose(world1.velocity[crate] - world0.velocity[crate], dv2 + np.cross(dw2, r), atol=TOL)


def test_a_jointed_arm_riding_a_loose_mount_holds_with_counteraction_off():
    """A loose mount on a free base carries a two-link arm, hinged to the mount, or its first link
    hinged to the base across the mount. Each ran away within a third of a second with
    counteraction off (a joint's body inheriting a carrier's changes, or placed from the mount's own
    move alone). Stepped two seconds, every hinge's anchors stay within 1e-6 m of each other
    (`Simulation.joint_separation`: RATTLE's projections meet them to 1e-9 m; the margin is a
    thousandfold) and the run stays finite."""
    body = {"motion": "dynamic", "mass": 1.5, "inertia": [0.2, 0.3, 0.25]}
    for first in ("mount", "base"):
        scene = {
            "world": {"gravity": [0.0, -9.81, 0.0], "counteract": False, "dt": 0.01},
            "node": [
                {"name": "base", **body, "velocity": [0.2, 0.1, 0.0], "angular_velocity": [0.0, 0.5, 0.3]},
                {"name": "mount", "parent": "base", **body, "translation": [-0.5, 0.4, 0.2]},
                {"name": "arm", "parent": "mount", **body, "translation": [0.0, 0.5, 0.0],
                 "angular_velocity": [3.0, 0.0, 0.0]},
                {"name": "arm2", "parent": "arm", **body, "translation": [0.0, 1.0, 0.0],
                 "angular_velocity": [-3.0, 0.0, 0.0]},
            ],
            "joint": [
                {"type": "hinge", "a": first, "b": "arm", "anchor": [-0.5, 0.6, 0.2], "axis": [1.0, 0.0, 0.0]},
                {"type": "hinge", "a": "arm", "b": "arm2", "anchor": [-0.5, 1.2, 0.2], "axis": [1.0, 0.0, 0.0]},
            ],
        }
        sim = Simulation(scene_from_dict(scene))
        for _ in range(20):
            sim.step(10)
            assert float(sim.joint_separation().max()) <= 1e-6, (first, sim.time)
        assert np.isfinite(sim.world().velocity).all()


@pytest.mark.parametrize("scene", ["ant", "humanoid"])
def test_a_robot_steps_alike_with_counteraction_off(scene):
    """A robot nested link under link, as its file's tree (the ant, the humanoid), ran away within a
    fifth of a second with counteraction off: each link took its carrier's share of the joints'
    impulses besides its own. Every link is in a joint, so the setting changes nothing of its
    motion: the same bits over a second, contacts and all, and an impulse on the torso halfway
    (`apply_impulse`: the links keep their world motion either way; the same operations)."""
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "assets" / "scenes" / f"{scene}.toml"
    runs = []
    for counteract in (True, False):
        sim = Simulation.from_file(path)
        sim.set("counteract", counteract)
        sim.step(round(0.5 / sim.settings.dt))
        torso = int(np.flatnonzero(np.asarray(sim.motion) == "dynamic")[0])
        sim.apply_impulse(torso, np.array([0.3, 0.5, -0.2]))
        sim.step(round(0.5 / sim.settings.dt))
        runs.append(np.concatenate([sim.world_poses()[0].ravel(), sim.world().velocity.ravel()]))
    assert np.isfinite(runs[0]).all()
    np.testing.assert_array_equal(runs[1], runs[0])
