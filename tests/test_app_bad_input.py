"""The viewer keeps running after the worst inputs the fuzzer found: a scene nested 1,000 deep, a
400-digit integer, a negative mass, truncated text (each an error box naming the file, the current
scene running on), and a scene that diverges (paused with the node, step and quantity named, the
node selected), and a crate that falls through the ground (paused, the crate, the ground and the
settings to blame named). A real window under X (Xvfb in CI)."""
from pathlib import Path

import pytest
from conftest import SPINNER, frames

ROOT = Path(__file__).resolve().parent.parent
TANK = ROOT / "assets" / "scenes" / "tank.toml"

WORST = {
    "deep.toml": "x = " + "[" * 1000 + "]" * 1000 + "\n",
    "huge_integer.toml": '[[node]]\nname = "a"\nmotion = "dynamic"\nmass = ' + "9" * 400 + "\n",
    "negative_mass.toml": '[[node]]\nname = "a"\nmotion = "dynamic"\nmass = -1.0\n',
    "truncated.toml": TANK.read_text()[:777],
}
DIVERGENT = SPINNER.format(1e6, 1e3)     # passes the divergence limit in its first steps


@pytest.mark.display
def test_the_viewer_survives_the_worst_files(window, tmp_path):
    w = window(str(TANK))
    v = w.viewer
    frames(w, 3)
    for name, text in WORST.items():
        path = tmp_path / name
        path.write_text(text)
        assert not v.session.load_scene(str(path))
        assert name in v.session.error and v.session.scene_path == TANK, v.session.error
        t = v.session.sim.time
        frames(w, 3)
        assert v.session.sim.time > t and not v.session.paused        # the tank runs on
        v.session.error = None
    path = tmp_path / "divergent.toml"
    path.write_text(DIVERGENT)
    assert v.session.load_scene(str(path)) and v.session.error is None
    for _ in range(60):
        frames(w, 1)
        if v.session.paused:
            break
    assert v.session.paused and "'spinner' diverged in step" in v.session.error and "angular velocity" in v.session.error
    assert v.session.selected == 0
    frames(w, 2)                                      # paused, drawing on, no exception
    v.session.reset()
    assert v.session.sim.diverged is None and v.session.sim.step_count == 0


SINKING = """[world]
dt = 0.5
substeps = 1
sor = 1e-10
[[node]]
name = "ground"
shape = { type = "plane", normal = [0.0, 1.0, 0.0], offset = 0.0 }
[[node]]
name = "crate"
motion = "dynamic"
translation = [0.0, 0.2, 0.0]
shape = { type = "box", size = [0.4, 0.4, 0.4] }
"""


@pytest.mark.display
def test_the_viewer_pauses_on_a_crate_that_falls_through_the_ground(window, tmp_path):
    """A crate resting on the ground at dt 0.5 s with sor 1e-10 is wholly under it after one step
    (tests/test_overlaps.py): the viewer pauses in step 2 with the PenetrationError's message
    (crate, ground, the sor to blame), selects the crate, and draws on."""
    path = tmp_path / "sinking.toml"
    path.write_text(SINKING)
    w = window(str(path))
    v = w.viewer
    for _ in range(60):
        frames(w, 1)
        if v.session.paused:
            break
    assert v.session.paused and "'crate' fell through 'ground' in step 2" in v.session.error and "sor = 1e-10" in v.session.error, v.session.error
    assert v.session.sim.names[v.session.selected] == "crate"
    frames(w, 2)
