"""The viewer's controls: every keyboard shortcut and the mouse help.

Shared by `app.viewer` (which dispatches the keys) and `app.panel` (which lists them in the F1
help), so neither imports the other for them. The shipped scenes are app.session's
(`scene_files`, `resolve_scene`).
"""
from pyglet.window import key

# Every keyboard shortcut: (keys, label, action, description); F1 lists them. The action is a Viewer
# method, or a path from it ("view.frame_scene": `Viewer.view`'s, "session.reset": `Viewer.session`'s). A key is a
# symbol (any modifiers) or (symbol, modifier mask); the first entry that matches wins, so a
# modified key comes before the same key alone.
KEYS = [
    ((key.SPACE,), "Space", "session.toggle_pause", "play / pause"),
    ((key.PERIOD,), ".", "session.single_step", "single step (pauses)"),
    (((key.LEFT, key.MOD_SHIFT),), "Shift+Left", "session.toggle_backwards", "play backwards (to the timeline's start)"),
    ((key.LEFT,), "Left", "session.step_back", "one step back in the timeline (pauses)"),
    ((key.RIGHT,), "Right", "session.step_forward", "one step forward (pauses; at the end a new step)"),
    (((key.S, key.MOD_CTRL),), "Ctrl+S", "session.save_recording", "save the timeline as a recording (.rec)"),
    (((key.Q, key.MOD_CTRL),), "Ctrl+Q", "quit", "quit (saves the view preferences, as the window's close button does)"),
    ((key.ESCAPE,), "Esc", "escape", "close the help, the error box, the message"),
    ((key.R,), "R", "session.reset", "reset the scene"),
    ((key.G,), "G", "session.cycle_gyroscopic", "cycle gyroscopic: off / explicit / implicit"),
    ((key.I,), "I", "session.cycle_integrator", "cycle integrator"),
    ((key.C,), "C", "session.toggle_counteract", "counteraction on / off"),
    ((key.F,), "F", "view.frame_scene", "frame the whole scene"),
    ((key.HOME,), "Home", "view.reset_camera", "reset the camera"),
    ((key.L,), "L", "view.toggle_follow", "follow the selected node"),
    ((key.PAGEDOWN, key.BRACKETRIGHT), "PgDn  ]", "session.next_scene", "next scene of the browser"),
    ((key.PAGEUP, key.BRACKETLEFT), "PgUp  [", "session.previous_scene", "previous scene of the browser"),
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
