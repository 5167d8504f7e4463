"""The car crash: a dynamic car at 10 m/s stops at a wall through contacts; its loose
cargo (dynamic children on its floor) keeps its world velocity with counteraction on and stops with
the car with it off ("The Dynamics of a Transform Hierarchy", "Counteracting the Inherited Effect
from the Parent"; docs/references.md)."""
from pathlib import Path

import numpy as np
import pytest

from physics.pipeline.simulation import Simulation

CAR = Path(__file__).resolve().parents[1] / "assets" / "scenes" / "car.toml"


def run(counteract, steps=110):
    sim = Simulation.from_file(CAR)
    sim.set("counteract", counteract)
    car, box = sim.names.index("car"), sim.names.index("box_1")
    history = []
    for _ in range(steps):
        sim.step(1)
        world = sim.world()
        history.append((world.velocity[car, 0], world.velocity[box, 0],
                        world.transform.translation[box, 0] - world.transform.translation[car, 0]))
    return np.array(history)


@pytest.mark.parametrize("counteract", [True, False])
def test_car_stops_at_the_wall(counteract):
    car_v = run(counteract)[:, 0]
    assert car_v[0] == pytest.approx(10.0, abs=1e-6)   # coasting: no friction on the chassis/wheels
    assert abs(car_v[-1]) < 0.05                       # stopped by the wall (restitution 0)


def test_counteraction_on_cargo_keeps_flying_forward():
    history = run(True)
    car_v, box_v, offset = history.T
    impact = np.flatnonzero(np.abs(car_v) < 1.0)[0]
    # The step the car stops, the cargo still moves at (nearly) 10 m/s in the world: only friction
    # on the floor (μ = 0.3 mixed, ≤ μ g h ≈ 0.05 m/s per step) slows it.
    assert box_v[impact] > 9.5
    # It slides forward into the front panel: from 1.2 m behind the centre to the panel
    # (1.8 m − half panel 0.05 − half box 0.25 = 1.5 m in front), within 5 cm.
    assert offset[0] == pytest.approx(-1.2, abs=1e-3)
    assert offset[-1] == pytest.approx(1.5, abs=0.05)


def test_counteraction_off_cargo_stops_with_the_car():
    history = run(False)
    car_v, box_v, offset = history.T
    impact = np.flatnonzero(np.abs(car_v) < 1.0)[0]
    assert abs(box_v[impact] - car_v[impact]) < 0.05   # glued: same velocity as the car
    assert np.ptp(offset) < 0.01                       # and no sliding on the floor (1 cm)
