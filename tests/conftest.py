"""Shared fixtures. `display`: an X display for the viewer tests (marked `@pytest.mark.display`).

Uses $DISPLAY when set; otherwise starts `Xvfb :N -screen 0 1280x720x24` on a free display
number (from :90, each pytest-xdist worker in a range of its own), waits until it accepts connections, and kills it at the end of the session. With no
display to be had, the tests fail when CI=true (CI installs Xvfb: a missing display there is a
broken setup, not a reason to skip) and skip with the reason elsewhere.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _free_display_number():
    # each pytest-xdist worker (gw0, gw1, ...) looks in a range of its own, so two workers starting
    # their Xvfb at the same moment never pick the same number
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    first = 90 + 40 * (int(worker[2:]) if worker[2:].isdigit() else 0)
    for n in range(first, first + 40):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    return None


def _accepts_connections(n):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(f"/tmp/.X11-unix/X{n}")
            return True
        except OSError:
            return False


def _no_display(reason):
    if os.environ.get("CI") == "true":
        pytest.fail(f"no X display for the viewer tests in CI: {reason}")
    pytest.skip(f"no X display: {reason} (install xvfb and libgl1-mesa-dri, or set DISPLAY)")


def require_tool(name, package):
    """A command-line tool a test needs: missing in CI is a failure (.ci/run installs it), elsewhere a skip."""
    import shutil
    if shutil.which(name) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is missing in CI (.ci/run installs {package})")
        pytest.skip(f"{name} is not installed (apt-get install {package})")


@pytest.fixture(scope="session")
def display():
    """The X display name the viewer tests use (os.environ['DISPLAY'] is set to it)."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        _no_display("$DISPLAY is unset and Xvfb is not installed")
    n = _free_display_number()
    if n is None:
        _no_display("no free display number in this worker's range (from :90)")
    process = subprocess.Popen([xvfb, f":{n}", "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 15.0
    while not _accepts_connections(n):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            _no_display(f"Xvfb :{n} did not start: {process.stderr.read().decode(errors='replace')[-500:]}")
        time.sleep(0.05)
    os.environ["DISPLAY"] = f":{n}"
    try:
        yield f":{n}"
    finally:
        del os.environ["DISPLAY"]
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def app_config(tmp_path, monkeypatch):
    """Point the viewer's persisted settings at a fresh temporary directory."""
    monkeypatch.setenv("HIERARCHY_SANDBOX_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


# The viewer's window for the display tests, and real pyglet events into it.
@pytest.fixture
def window(display, app_config):
    from app.window import SandboxWindow
    windows = []

    def make(scene="tank", **kwargs):
        kwargs.setdefault("vsync", False)
        w = SandboxWindow(str(scene), kwargs.pop("overrides", {}), **kwargs)
        windows.append(w)
        return w

    yield make
    for w in windows:
        if w.viewer is not None:
            w.close()


def frames(w, n):
    for _ in range(n):
        w.frame(1 / 60)


def click(w, label):
    """A left click with pyglet mouse events at the centre of the panel item `label`
    (`panel.item_rects`), then the pointer moved away so no tooltip covers the window."""
    from pyglet.window import mouse
    x0, y0, x1, y1 = w.viewer.panel.item_rects[label]
    x, y = (x0 + x1) / 2, w.viewer.size[1] - (y0 + y1) / 2
    w.dispatch_event("on_mouse_motion", x, y, 0, 0)
    frames(w, 1)
    for event in ("on_mouse_press", "on_mouse_release"):
        w.dispatch_event(event, x, y, mouse.LEFT, 0)
        frames(w, 1)
    w.dispatch_event("on_mouse_motion", 900, 500, 0, 0)
    frames(w, 1)


def xdotool(w, *args):
    """Run xdotool (real X input events) while the window keeps drawing frames, so that it sees
    the events as they come, then five more frames."""
    process = subprocess.Popen(["xdotool", *args])
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        frames(w, 1)
    frames(w, 5)
    assert process.returncode == 0, f"xdotool {args} failed"


def press(w, symbol):
    """A key press through pyglet's event dispatch; the xlib window queues events dispatched
    between frames and delivers them at its next `dispatch_events`, hence the frame."""
    w.dispatch_event("on_key_press", symbol, 0)
    frames(w, 1)


# A torque-free spinner with explicit Euler and the explicit gyroscopic term: its energy grows every
# step. At 1e6 rad/s the first step passes physics' divergence limit (DivergenceError, raised inside
# the step); at 300 rad/s the viewer's runaway check (RUNAWAY_SPEED) stops it after step 4.
SPINNER = """[world]
integrator = "explicit-euler"
gyroscopic = "explicit"
gravity = [0.0, 0.0, 0.0]
[[node]]
name = "spinner"
motion = "dynamic"
inertia = [1.0, 2.0, 3.0]
angular_velocity = [{0}, {1}, {1}]
"""


# A user's tour of the viewer (tests/frame_tour.py) in a fresh process: every scene, integrator,
# gyroscopic mode and counteraction, and the viewer's actions, every frame timed, with a picture
# of each scene as it first shows. Once for the whole test run (pytest's widest scope: 35–45 s of
# CPU), on the display tests' worker; read by tests/test_frame_times.py (the frames) and
# tests/test_app_window.py (the pictures).
@pytest.fixture(scope="session")
def tour_folder(display, tmp_path_factory):
    """The tour's folder: frames.json and shots/SCENE.png."""
    root = Path(__file__).resolve().parent.parent
    folder = tmp_path_factory.mktemp("tour")
    config = tmp_path_factory.mktemp("config")
    subprocess.run([sys.executable, "-m", "physics", "warmup", "--if-needed", "--plain"], cwd=root, check=True,
                   capture_output=True, timeout=3600)
    env = dict(os.environ, HIERARCHY_SANDBOX_CONFIG_DIR=str(config))
    result = subprocess.run([sys.executable, str(root / "tests" / "frame_tour.py"), str(folder / "frames.json")],
                            cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


@pytest.fixture(scope="session")
def tour(tour_folder):
    """The tour's frames (tests/frame_tour.py's OUT.json)."""
    return json.loads((tour_folder / "frames.json").read_text())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist with `--dist loadgroup` (make test), every display test runs on one worker,
    one after another, as without xdist: those tests send real X events to a window and read back
    what it drew, and two windows drawing with Mesa's software renderer at once starve each other's
    event handling. A display test marked `draws_only` (a child process that draws a picture, no
    input events) shares the other workers with the rest, so that the display worker's queue, the
    suite's longest, is shorter. First among the hooks: xdist's own reads the group marker in this
    same hook, to name the group in each test's id."""
    for item in items:
        if item.get_closest_marker("display") is not None and item.get_closest_marker("draws_only") is None:
            item.add_marker(pytest.mark.xdist_group("display"))
