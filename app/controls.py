"""The viewer's controls: every keyboard shortcut, the mouse help and the shipped scene list.

Shared by `app.viewer` (which dispatches the keys and opens the scenes) and `app.panel` (which
lists them: the F1 help, the scene browser), so neither imports the other for them.
"""
from pathlib import Path

from pyglet.window import key

SCENES_DIR = Path(__file__).resolve().parent.parent / "assets" / "scenes"

# Every keyboard shortcut: (keys, label, Viewer method, description); F1 lists them. A key is a
# symbol (any modifiers) or (symbol, modifier mask); the first entry that matches wins, so a
# modified key comes before the same key alone.
KEYS = [
    ((key.SPACE,), "Space", "toggle_pause", "play / pause"),
    ((key.PERIOD,), ".", "single_step", "single step (pauses)"),
    (((key.LEFT, key.MOD_SHIFT),), "Shift+Left", "toggle_backwards", "play backwards (to the timeline's start)"),
    ((key.LEFT,), "Left", "step_back", "one step back in the timeline (pauses)"),
    ((key.RIGHT,), "Right", "step_forward", "one step forward (pauses; at the end a new step)"),
    (((key.S, key.MOD_CTRL),), "Ctrl+S", "save_recording", "save the timeline as a recording (.rec)"),
    (((key.Q, key.MOD_CTRL),), "Ctrl+Q", "quit", "quit (saves the view preferences, as the window's close button does)"),
    ((key.ESCAPE,), "Esc", "escape", "close the help, the error box, the message"),
    ((key.R,), "R", "reset", "reset the scene"),
    ((key.G,), "G", "cycle_gyroscopic", "cycle gyroscopic: off / explicit / implicit"),
    ((key.I,), "I", "cycle_integrator", "cycle integrator"),
    ((key.C,), "C", "toggle_counteract", "counteraction on / off"),
    ((key.F,), "F", "frame_scene", "frame the whole scene"),
    ((key.HOME,), "Home", "reset_camera", "reset the camera"),
    ((key.L,), "L", "toggle_follow", "follow the selected node"),
    ((key.PAGEDOWN, key.BRACKETRIGHT), "PgDn  ]", "next_scene", "next scene of the browser"),
    ((key.PAGEUP, key.BRACKETLEFT), "PgUp  [", "previous_scene", "previous scene of the browser"),
    ((key.F1,), "F1", "toggle_help", "this help"),
    ((key.O,), "O", "toggle_overlay", "the numbers overlay: FPS, frame, physics, real-time factor, time, step"),
    ((key.F12,), "F12", "screenshot_key", "screenshot (sandbox-<time>.png in the working directory)"),
    ((key.F10,), "F10", "toggle_video", "start / stop recording a video (--video FILE, else sandbox-<time>.mp4)"),
]
SCENE_KEYS = [getattr(key, f"_{i}") for i in range(1, 10)]
MOUSE_HELP = [  # F1 lists these after KEYS, in the same two columns
    ("1 - 9", "open the n-th scene of the browser"),
    ("left click", "select a node (again on empty space: deselect)"),
    ("left drag", "orbit"),
    ("right / middle drag", "pan"),
    ("shift + left drag", "pan"),
    ("wheel", "zoom"),
    ("ctrl + left drag", "pull a body towards the cursor (a soft mouse joint)"),
    ("ctrl + right click / drag", "flick a body: into the screen, or along the drag"),
]


def matches(bound, symbol, modifiers):
    """Whether a KEYS key (a symbol, or (symbol, modifier mask)) is this key press."""
    if isinstance(bound, tuple):
        return symbol == bound[0] and bool(modifiers & bound[1])
    return symbol == bound


def scene_files():
    """Every scene file shipped in assets/scenes, sorted by name."""
    return sorted(SCENES_DIR.glob("*.toml"))


def resolve_scene(name):
    """A scene given as a path, a file name or a bare name (`tank`) -> Path; ValueError if none."""
    path = Path(name)
    for candidate in (path, SCENES_DIR / path, SCENES_DIR / f"{name}.toml"):
        if candidate.is_file():
            return candidate
    raise ValueError(f"no scene file {name!r} (looked for it as a path and in {SCENES_DIR})")
