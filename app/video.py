"""Video: what the window shows, recorded to an H.264 MP4 at the simulation's rate.

Encoder: imageio-ffmpeg, whose wheel ships an ffmpeg binary (nothing to install beside pip).
Frames go down a pipe to that ffmpeg process, which encodes them with libx264 on another core
while the app draws the next frame. The stream is yuv420p — the 4:2:0 pixel format every player
decodes, which needs an even width and height (an odd window loses its last column or row) — in
an MP4 with the index at the front (`+faststart`: a browser plays it before it has all of it).

Rate: one video frame per `frame_seconds` of *simulated* time, frame_seconds = dt * k with
k = max(1, round(1 / (60 dt))) steps (`frame_steps`): 60 frames per simulated second when dt
divides 1/60, else the nearest rate that lands every frame on a step (dt = 1 ms: 17 steps,
58.8 fps). After each drawn frame the picture is written once for each frame time the
simulation passed since the last one, so the video plays at true speed however fast the machine
drew it, whatever the time scale; paused or stepping backwards adds nothing. When time goes back
(a reset, a seek back, another scene) the recording goes on from the new time; a jump forward
of more frames than a drawn frame can step (a seek ahead) adds one frame, not a still stretch.

What is recorded: the window's picture, panel included (`panel=True`), or the scene alone (drawn
again into a target of its own). The size is the window's when recording starts; a resized
window is cropped or padded (black) to it, anchored top left.

Files are written atomically: ffmpeg writes `.NAME.PID.part` beside the file, renamed to it when
the recording stops, so a killed app never leaves a half video under the final name.
"""
import logging
import math
import os
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

VIDEO_FPS = 60       # frames per simulated second when dt divides 1/60
CRF = 20             # x264 constant rate factor: 0 lossless .. 51 worst; 18-23 is "visually clean"
PRESET = "veryfast"  # x264 speed/size trade: keeps up with a 720p window on one core
JUMP_FRAMES = 8      # more frames due after one drawn frame than it can step (app.session.MAX_FRAME_SIMULATED): a seek


def frame_steps(dt):
    """Steps per video frame: k = max(1, round(1 / (VIDEO_FPS dt)))."""
    return max(1, round(1.0 / (VIDEO_FPS * dt)))


def video_rate(dt):
    """(frame_seconds, fps) for a step dt: frame_seconds = dt * frame_steps(dt), fps = 1 /
    frame_seconds as a fraction with a small denominator (containers store rates as fractions;
    a scene's dt = 0.016666666667 gives 60, dt = 0.001 gives 1000/17)."""
    frame_seconds = dt * frame_steps(dt)
    return frame_seconds, Fraction(1.0 / frame_seconds).limit_denominator(1001)


def even_size(size):
    """(width, height) rounded down to even numbers (yuv420p halves both for its chroma), at least 2."""
    return tuple(max(2, int(n) - int(n) % 2) for n in size)


def check_path(path):
    """A video path must end in .mp4 and be in an existing directory; ValueError naming it otherwise."""
    path = Path(path)
    if path.suffix.lower() != ".mp4":
        raise ValueError(f"video: expected a FILE.mp4 name, got {str(path)!r}")
    if not path.resolve().parent.is_dir():
        raise ValueError(f"video: the directory of {path} does not exist")
    return path


class VideoWriter:
    """An H.264 MP4 being written: `write` (H, W, 3) uint8 frames, top row first, of `size`
    (even width, height); `close` renames the finished file into place; `abort` deletes it."""

    def __init__(self, path, size, fps):
        import imageio_ffmpeg      # here: the encoder (FFmpeg's binary) is found only for a video
        self.path = check_path(path)
        self.size = tuple(int(n) for n in size)
        if self.size != even_size(self.size):
            raise ValueError(f"video: width and height must be even for yuv420p, got {self.size}")
        self.fps = Fraction(fps)
        self.frames = 0
        self.partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
        # quality=None: the rate control is ours (-crf); macro_block_size=2: the size is only
        # required even, never rescaled; -f mp4: the .part name says nothing of the format
        self._encoder = imageio_ffmpeg.write_frames(
            str(self.partial), self.size, fps=self.fps, codec="libx264", pix_fmt_in="rgb24", pix_fmt_out="yuv420p",
            quality=None, macro_block_size=2, ffmpeg_log_level="error",
            output_params=["-crf", str(CRF), "-preset", PRESET, "-movflags", "+faststart", "-f", "mp4"])
        self._encoder.send(None)  # starts ffmpeg

    def write(self, rgb, repeat=1):
        """Append the picture `repeat` times."""
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        if rgb.shape != (self.size[1], self.size[0], 3):
            raise ValueError(f"video: a frame of shape {rgb.shape}, expected {(self.size[1], self.size[0], 3)}")
        for _ in range(repeat):
            self._encoder.send(rgb)
        self.frames += repeat

    def close(self):
        """Finish the file and move it to `path` -> path; with no frame written nothing is
        left and ValueError says so."""
        self._encoder.close()  # closes ffmpeg's input and waits for it to finish the file
        if self.frames == 0:
            self.partial.unlink(missing_ok=True)
            raise ValueError(f"video {self.path}: no frame was recorded (the simulation did not advance)")
        if not self.partial.is_file() or self.partial.stat().st_size == 0:
            raise OSError(f"video {self.path}: ffmpeg left no file (see its messages above)")
        os.replace(self.partial, self.path)
        return self.path

    def abort(self):
        log = logging.getLogger("imageio_ffmpeg")
        level = log.level
        log.setLevel(logging.ERROR)     # its "no frames have been written" is what an abort means
        try:
            self._encoder.close()
        finally:
            log.setLevel(level)
        self.partial.unlink(missing_ok=True)

    @property
    def seconds(self):
        return float(self.frames / self.fps)


class VideoRecording:
    """One recording of a viewer's pictures at the simulation's rate (module docstring)."""

    def __init__(self, viewer, path, panel=True):
        self.viewer, self.panel = viewer, panel
        self.frame_seconds, fps = video_rate(viewer.session.sim.settings.dt)
        self.size = even_size(viewer.size)
        self.writer = VideoWriter(path, self.size, fps)
        self.start_time = viewer.session.sim.time  # the simulated time of the (unwritten) frame 0
        self.target = None  # the scene-only picture's own target (panel=False)

    @property
    def path(self):
        return self.writer.path

    def frames_due(self, sim_time):
        """How many frame times the simulation passed since the last frame written (module
        docstring: time going back re-anchors, a seek ahead counts one)."""
        written = self.writer.frames
        if sim_time < self.start_time + (written - 1e-6) * self.frame_seconds:
            self.start_time = sim_time - written * self.frame_seconds
        # 1e-6 of a frame of slack: scene files round dt, and a frame landing on a step must count
        due = math.floor((sim_time - self.start_time) / self.frame_seconds + 1e-6) - written
        if due > JUMP_FRAMES:
            self.start_time = sim_time - (written + 1) * self.frame_seconds
            due = 1
        return due

    def after_frame(self):
        """Write the picture just drawn once for every frame time passed."""
        due = self.frames_due(self.viewer.session.sim.time)
        if due > 0:
            self.writer.write(self.picture(), due)

    def picture(self):
        """The last frame as (H, W, 3) uint8 of the video's size, top row first: the viewer's
        target (the window draws through it while a recording with the panel runs:
        `Viewer.draws_offscreen`), or the scene drawn again without the panel."""
        v = self.viewer
        if self.panel:
            target = v.view.target
        else:
            from app.renderer import Target     # here: the renderer imports GL, which needs a context
            if self.target is None or self.target.size != v.view.target.size:
                if self.target is not None:
                    self.target.release()
                self.target = Target(v.ctx, v.view.target.size, v.view.target.samples)
            target = self.target
            v.view.render_scene(target.draw)
            if target.msaa is not None:
                v.ctx.copy_framebuffer(target.resolved, target.msaa)
        width, height = (min(a, b) for a, b in zip(self.size, target.size))
        # GL rows run bottom up: the top-left width x height block starts at y = H - height
        data = target.resolved.read(viewport=(0, target.size[1] - height, width, height), components=3, alignment=1)
        block = np.frombuffer(data, np.uint8).reshape(height, width, 3)[::-1]
        if (width, height) == self.size:
            return block
        frame = np.zeros((self.size[1], self.size[0], 3), np.uint8)
        frame[:height, :width] = block
        return frame

    def close(self):
        """Finish the file -> its path (ValueError / OSError if nothing could be saved)."""
        self._release()
        return self.writer.close()

    def abort(self):
        self._release()
        self.writer.abort()

    def _release(self):
        if self.target is not None:
            self.target.release()
            self.target = None


class VideoControl:
    """The viewer's video recording: F10 starts and stops it (`toggle`), the status message names
    the file. The first recording goes to `path` when given (`--video`; an existing file is
    replaced), later ones to sandbox-<time>.mp4 in the working directory, like screenshots.
    Failures show as the session's error and never stop the app."""

    def __init__(self, viewer, path=None, panel=True):
        self.viewer, self.path, self.panel = viewer, None if path is None else Path(path), panel
        self.recording = None
        self.saved, self.said = None, None  # the path of the last video saved, and what the status message said

    @property
    def active(self):
        return self.recording is not None

    def toggle(self):
        if self.active:
            self.stop()
        else:
            self.start()

    def start(self, path=None):
        """Start recording to `path` (else the --video path, once, else sandbox-<time>.mp4) -> bool."""
        v = self.viewer
        if v.session.sim is None:
            return False
        if path is None:
            path, self.path = self.path or Path.cwd() / time.strftime("sandbox-%Y%m%d-%H%M%S.mp4"), None
        try:
            self.recording = VideoRecording(v, path, self.panel)
        except Exception as error:  # noqa: BLE001 - a recording that cannot start must not stop the app
            v.session.error = f"could not record a video to {path}: {type(error).__name__}: {error}"
            return False
        v.session.notify(f"recording {self.recording.path}; F10 stops")
        return True

    def stop(self):
        """Finish the recording and name the file in the status message -> its path or None."""
        recording, self.recording = self.recording, None
        if recording is None:
            return None
        writer = recording.writer
        try:
            path = recording.close()
        except Exception as error:  # noqa: BLE001 - a failed save shows, the app goes on
            self.viewer.session.error = f"could not save the video: {error}"
            return None
        self.saved = path
        self.said = f"saved {path} ({writer.frames} frames, {writer.seconds:.2f} s, {path.stat().st_size / 2**20:.1f} MB)"
        self.viewer.session.notify(self.said)
        return path

    def abort(self):
        """Drop the recording under way, leaving no file (a scripted video that failed)."""
        recording, self.recording = self.recording, None
        if recording is not None:
            recording.abort()

    def after_frame(self):
        """Called once a frame is drawn: the recording takes what is due."""
        if self.recording is None:
            return
        try:
            self.recording.after_frame()
        except Exception as error:  # noqa: BLE001 - ffmpeg gone, disk full: stop, say so, go on
            recording, self.recording = self.recording, None
            recording.abort()
            self.viewer.session.error = f"video recording stopped: {type(error).__name__}: {error}"

    @property
    def offscreen(self):
        """Whether the window must draw through the viewer's target (a recording with the panel reads it)."""
        return self.recording is not None and self.panel
