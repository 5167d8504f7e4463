"""`python -m app [SCENE] [options]` (console script `sandbox`): the desktop viewer.

SCENE is a path, a file in assets/scenes, or a bare name (`tank`, the default). With
`--frames N` the app runs N frames at a fixed 1/60 s each, saves `--screenshot FILE.png` if
given, and exits 0 — for docs and tests.

`--record FILE.rec` saves the run's timeline to FILE.rec on exit and at each Ctrl+S (a new
file: an existing one is refused); `--replay FILE.rec` opens a recording, paused at its first
step, to scrub and branch (`python -m physics replay FILE.rec --verify` checks one).

`--video FILE.mp4` records what the window shows (the panel too; `--no-video-panel`: the scene
alone) as H.264 MP4, one frame per 1/60 s of simulated time (app.video): with `--frames N` those
frames, then exit; with `--replay FILE.rec` (and no --frames) the whole recording played from
its first step to its last, then exit; otherwise from the start until F10 or exit. F10 starts and
stops a recording in the app (sandbox-<time>.mp4 in the working directory).
"""
import argparse
import sys
from pathlib import Path


def parse_args(argv=None):
    # physics and the window's modules are imported inside the functions here: `python -m app
    # --help` and a bad argument answer without loading numba, GL or ImGui
    from physics.core.settings import EXPONENTIALS, GYROSCOPIC, ROTATION_UPDATES, integrator_names

    parser = argparse.ArgumentParser(prog="python -m app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", nargs="?", default=None, help="scene file (.toml), robot model (.urdf, MJCF .xml) or name (default: last opened, else tank)")
    parser.add_argument("--integrator", choices=integrator_names())
    parser.add_argument("--gyroscopic", choices=GYROSCOPIC)
    parser.add_argument("--rotation-update", choices=ROTATION_UPDATES)
    parser.add_argument("--exponential", choices=EXPONENTIALS)
    parser.add_argument("--counteract", choices=("on", "off"))
    parser.add_argument("--record", default=None, metavar="FILE.rec",
                        help="save the timeline as a recording to this new file on exit and at Ctrl+S")
    parser.add_argument("--replay", default=None, metavar="FILE.rec", help="open this recording (instead of a scene)")
    parser.add_argument("--frames", type=int, default=None, help="run this many frames (1/60 s each), then exit")
    parser.add_argument("--screenshot", default=None, help="with --frames: save the last frame to this PNG")
    parser.add_argument("--video", default=None, metavar="FILE.mp4",
                        help="record an H.264 MP4 at the simulation's rate (replaces FILE); see above")
    parser.add_argument("--video-panel", action=argparse.BooleanOptionalAction, default=True,
                        help="videos show the panel as the window does (default), or the scene alone")
    parser.add_argument("--msaa", type=int, default=None, choices=(0, 2, 4, 8), help="multisampling samples (default 4 on hardware GL, 0 on software GL)")
    parser.add_argument("--size", default=None, help="window size WxH (default: about 80 %% of the screen; "
                                                      "1280x720 for --frames and video runs)")
    parser.add_argument("--frame-log", default=None, metavar="FILE.csv",
                        help="write one row per frame: Unix time, wall seconds since the last frame, simulated time, steps")
    args = parser.parse_args(argv)
    try:
        if args.size is not None:
            args.size = tuple(int(x) for x in args.size.lower().split("x"))
            if len(args.size) != 2 or min(args.size) < 1:
                raise ValueError
    except ValueError:
        parser.error(f"--size: expected WxH such as 1280x720, got {args.size!r}")
    if args.replay is not None and args.scene is not None:
        parser.error(f"give a scene ({args.scene!r}) or --replay ({args.replay!r}), not both")
    if args.record is not None:
        if not args.record.lower().endswith(".rec"):
            parser.error(f"--record: expected a FILE.rec name, got {args.record!r}")
        if Path(args.record).exists():
            parser.error(f"--record: {args.record} exists; not overwritten (give a new file name)")
        if not Path(args.record).resolve().parent.is_dir():
            parser.error(f"--record: the directory of {args.record} does not exist")
    if args.video is not None:
        from app.video import check_path
        try:
            check_path(args.video)
        except ValueError as error:
            parser.error(f"--video: {error}")
    if args.screenshot and args.frames is None:
        parser.error("--screenshot needs --frames N")
    if args.frames is not None and args.frames < 1:
        parser.error(f"--frames: expected a positive count, got {args.frames}")
    return args


def main(argv=None):
    args = parse_args(argv)
    overrides = {name: getattr(args, name) for name in ("integrator", "gyroscopic", "rotation_update", "exponential")
                 if getattr(args, name) is not None}
    if args.counteract is not None:
        overrides["counteract"] = args.counteract == "on"
    from app.window import SandboxWindow, run

    # A scripted run (--frames) neither reads nor writes the user's saved settings: its picture and
    # physics depend only on the scene file and the command line.
    requested = args.replay or args.scene
    # a replay rendered to video is scripted like --frames: fixed steps, as fast as it draws
    render_replay = args.replay is not None and args.video is not None and args.frames is None
    scripted = args.frames is not None or render_replay
    if args.size is None:       # scripted runs keep one size, so that their pictures compare
        from app.window import SCRIPTED_SIZE, screen_size
        args.size = SCRIPTED_SIZE if scripted or args.video is not None else screen_size()
    window = SandboxWindow(requested, overrides, size=args.size, vsync=not scripted, msaa=args.msaa,
                           store=not scripted, record=args.record, video=args.video, video_panel=args.video_panel,
                           prepare=not scripted, frame_log=args.frame_log)
    viewer = window.viewer
    if viewer.session.sim is None and viewer.session.pending is None:
        print(f"error: {viewer.session.error}", file=sys.stderr)
        window.close()
        return 2
    if requested is not None and viewer.session.error:  # the requested file failed, a fallback is showing
        # a scripted run, or a recording's video, must not silently picture another scene
        refused = args.frames or (args.replay is not None and args.video is not None)
        print(f"{'error' if refused else 'warning'}: {viewer.session.error}", file=sys.stderr)
        if refused:
            viewer.video.abort()  # no video of the fallback scene is left behind
            window.close()
            return 2
    if args.video is not None:
        if not viewer.video.active and viewer.session.pending is None:  # it could not start: the viewer says why
            print(f"error: {viewer.session.error}", file=sys.stderr)
            window.close()
            return 2
        if args.replay is not None:
            viewer.session.paused = False  # a replay opens paused: a video plays it
    # to the recording's last step (or a physics error, which pauses)
    until = (lambda: viewer.session.paused or viewer.session.sim.step_count >= viewer.session.timeline.head) if render_replay else None
    run(window, frames=args.frames, screenshot=args.screenshot, fixed_step=1 / 60 if scripted else None, until=until)
    if render_replay and window.viewer is not None and viewer.session.sim.step_count < viewer.session.timeline.head:
        # stopped short of the recording's last step (a physics error paused it): no partial video
        print(f"error: {args.replay}: the replay stopped at step {viewer.session.sim.step_count} of "
              f"{viewer.session.timeline.head}: {viewer.session.error}; no video written", file=sys.stderr)
        viewer.video.abort()
        window.close()
        return 1
    if window.viewer is not None:
        window.close()  # the viewer saves the --record file and the video as it closes
    if args.record is not None:
        if viewer.session.saved_recording is None:
            print(f"error: {viewer.session.error}", file=sys.stderr)
            return 1
        print(viewer.session.message)
    if args.video is not None:
        if viewer.video.saved is None:
            print(f"error: {viewer.session.error}", file=sys.stderr)
            return 1
        print(viewer.video.said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
