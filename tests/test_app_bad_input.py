"""The viewer keeps running after the worst inputs the fuzzer found: a scene nested 1,000 deep, a
400-digit integer, a negative mass, truncated text (each an error box naming the file, the current
scene running on), and a scene that diverges (paused with the node, step and quantity named, the
node selected). A real window under X (Xvfb in CI)."""
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
        assert not v.load_scene(str(path))
        assert name in v.error and v.scene_path == TANK, v.error
        t = v.sim.time
        frames(w, 3)
        assert v.sim.time > t and not v.paused        # the tank runs on
        v.error = None
    path = tmp_path / "divergent.toml"
    path.write_text(DIVERGENT)
    assert v.load_scene(str(path)) and v.error is None
    for _ in range(60):
        frames(w, 1)
        if v.paused:
            break
    assert v.paused and "'spinner' diverged in step" in v.error and "angular velocity" in v.error
    assert v.selected == 0
    frames(w, 2)                                      # paused, drawing on, no exception
    v.reset()
    assert v.sim.diverged is None and v.sim.step_count == 0
