"""A toggle acts at once while the warm-up is still compiling: with real key presses (xdotool), G on
a scene that runs as Python meanwhile changes the run within a frame, and on a scene too slow as
Python the change waits for its kernels and says so."""
import pytest

from conftest import frames, require_tool
from physics.core.compiled import interpreting
from test_app_choices import keys


class Preparing:
    """A warm-up that has loaded nothing yet (the first launch's first minutes), whose probe found
    the scene shown cheap enough as Python (`interpretable`) or not."""

    def __init__(self, interpretable):
        self._interpretable, self.wanted, self.probed = interpretable, [], []
        self.compiling, self.busy, self.returncode, self.fraction = True, True, None, 0.1

    def ready(self, task):
        return False

    def built(self, task):
        return False

    def want(self, task):
        self.wanted.append(task)

    def build(self, task):
        self.wanted.append(task)

    def forget(self, task):
        self.forgotten = task

    def probe(self, path):
        self.probed.append(path)

    def interpretable(self, path):
        return self._interpretable

    def status(self):
        return "compiling: 3 of 36 kernels"

    def close(self):
        pass


@pytest.mark.display
@pytest.mark.parametrize("cheap", [True, False])
def test_g_during_the_warm_up_acts_at_once_where_the_scene_runs_as_python(window, cheap):
    """G cycles gyroscopic implicit -> off. Cheap as Python: the setting is the run's within the
    frame of the key press, the panel shows it, the message says it runs as Python until its
    kernels are ready, and the kernels of the scene's other settings are asked for first. Too slow
    as Python: it waits (the setting unchanged, the message says so) and acts once its kernels
    are loaded."""
    require_tool("xdotool", "xdotool")
    w = window("t_handle")
    frames(w, 3)
    v = w.viewer
    assert v.session.sim.settings.gyroscopic == "implicit"
    v.session.preparation = preparing = Preparing(cheap)
    with interpreting():
        keys(w, "g")
        if cheap:
            assert v.session.sim.settings.gyroscopic == "off"
            assert "run as Python until its kernels are ready" in v.session.message
            t = v.session.sim.time
            frames(w, 3)
            assert v.session.sim.time > t           # and it runs on
        else:
            assert v.session.sim.settings.gyroscopic == "implicit"
            assert "applies when its kernels are ready" in v.session.message and preparing.probed
            preparing._interpretable = True     # the probe's verdict: cheap enough after all
            frames(w, 2)
            assert v.session.sim.settings.gyroscopic == "off"
    assert preparing.wanted == ["t_handle+"]
    v.session.preparation = None


@pytest.mark.display
def test_a_scene_that_waits_for_its_kernels_can_be_cancelled(window):
    """Opening the pile while its kernels compile (too slow as Python) shows the wait box with a
    cancel button; a click on it leaves the T-handle running, shown and stepping, and says that
    the pile's kernels go on compiling."""
    from conftest import click
    w = window("t_handle")
    frames(w, 3)
    v = w.viewer
    v.session.preparation = preparing = Preparing(False)
    with interpreting():
        v.session.open("pile")
        frames(w, 2)
        assert v.session.pending == "pile" and v.session.cancel_label() == "cancel: stay on t_handle"
        click(w, "cancel: stay on t_handle")
        assert v.session.pending is None and v.session.scene_path.stem == "t_handle"
        assert "stopped waiting for pile" in v.session.message
        t = v.session.sim.time
        frames(w, 3)
        assert v.session.sim.time > t
    assert "pile" in preparing.wanted and preparing.forgotten == "pile"
    v.session.preparation = None


@pytest.mark.display
def test_a_first_wait_always_has_a_cancel(window):
    """Before any scene is shown (a first start whose scene is too slow as Python), the wait box's
    cancel opens the default scene instead, and a wait for the default itself opens the fallback
    (the T-handle): the box always has a way out. The window's own scene is set aside meanwhile."""
    from app.session import DEFAULT_SCENE, FALLBACK_SCENE
    w = window("t_handle")
    frames(w, 1)
    v = w.viewer
    v.session.preparation = preparing = Preparing(False)
    shown, v.session.sim = v.session.sim, None          # as before the first scene opens
    try:
        with interpreting():
            v.session.pending = "pile"
            assert v.session.cancel_label() == f"cancel: open {DEFAULT_SCENE}"
            v.session.cancel_pending()
            assert v.session.pending == DEFAULT_SCENE and preparing.forgotten == "pile"
            assert v.session.cancel_label() == f"cancel: open {FALLBACK_SCENE}"
            v.session.cancel_pending()
            assert v.session.pending == FALLBACK_SCENE and preparing.forgotten == DEFAULT_SCENE
    finally:
        v.session.sim, v.session.pending, v.session.preparation = shown, None, None
