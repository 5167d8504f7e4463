"""What a toggle says (physics.tools.effects): the sentence names what changes in this scene and where
to look, or says that nothing here depends on the setting."""
from pathlib import Path

from physics.tools.effects import carriers, sentence, spinning_asymmetric
from physics.pipeline.simulation import Simulation

SCENES = Path(__file__).parents[1] / "assets" / "scenes"


def opened(name, steps=2):
    sim = Simulation.from_file(SCENES / f"{name}.toml")
    sim.step(steps)
    return sim


def test_the_gyroscopic_term_is_said_where_a_body_spins_off_its_axes():
    """The T-handle spins at 5 rad/s off its principal axes (I = 1, 2, 3): off names it, the flip
    and the inspector. The pendulum and the tank's crates (turning at 0.3 rad/s with the hull) show
    nothing: the sentence says so."""
    assert spinning_asymmetric(opened("t_handle")) == ["handle"]
    said = sentence(opened("t_handle"), "gyroscopic", "off")
    assert said.startswith("gyroscopic off: handle") and "no flip" in said and "inspector" in said
    for scene in ("pendulum", "tank"):
        assert spinning_asymmetric(opened(scene)) == []
        assert "nothing changes" in sentence(opened(scene), "gyroscopic", "off")


def test_counteraction_is_said_where_a_body_carries_another():
    """The car carries its cargo (dynamic children of a dynamic body): the sentence names the car
    and the Compare plot; the T-handle and the tank (its cargo rides a kinematic drive) carry
    nothing that an impulse reaches, and the ant's links are in joints."""
    car = opened("car")
    assert carriers(car) == ["car"]
    assert "car" in sentence(car, "counteract", False) and "Compare" in sentence(car, "counteract", True)
    for scene in ("t_handle", "tank"):
        assert "no body here carries another" in sentence(opened(scene), "counteract", True)
    # the ant's links are nested under the torso, each in a joint: the setting changes
    # nothing there (tests/test_counteraction.py), and the sentence says why
    ant = opened("ant")
    assert carriers(ant) == []
    assert "in a joint" in sentence(ant, "counteract", False)


def test_the_integrator_sentence_is_its_plain_meaning_and_the_plot_to_watch():
    said = sentence(opened("pendulum"), "integrator", "rk4")
    assert said.startswith("integrator rk4: classical Runge-Kutta, 4th order") and "energy plot" in said


def test_the_joint_solve_sentence_names_the_gap_to_watch_or_that_no_joint_is_here():
    said = sentence(opened("chain"), "joint_solve", "soft")
    assert said.startswith("joint_solve soft: held by the velocity solve alone") and "largest gap" in said
    assert "no joint here" in sentence(opened("t_handle"), "joint_solve", "soft")
    soft = opened("chain")
    soft.set("joint_solve", "soft")
    assert "steps by semi-implicit-euler whatever the integrator" in sentence(soft, "integrator", "rk4")
