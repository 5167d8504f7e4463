"""Video recording (app.video): H.264 MP4 files decoded back with the same library (imageio-ffmpeg)
and checked for frame count, size and content; the rate follows simulated time; F10 in a real
window; files appear whole or not at all.

Content after lossy coding: x264 at CRF 20 with 4:2:0 chroma moves a flat colour by a few levels
(chroma is averaged over 2x2 pixels, so edges bleed), hence tolerances in levels of 8-bit colour
stated where used, and colours compared by chromaticity over many pixels (test_app_window).
"""
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import frames, xdotool

ROOT = Path(__file__).resolve().parent.parent


def decode(path):
    """(meta, frames (N, H, W, 3) uint8) of a video, decoded by ffmpeg from imageio-ffmpeg."""
    import imageio_ffmpeg
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    pictures = [np.frombuffer(data, np.uint8).reshape(height, width, 3) for data in reader]
    return meta, np.array(pictures)


# --- the encoder alone --------------------------------------------------------------------------

def test_rate_lands_every_frame_on_a_step():
    """frame_seconds = k dt with k = round(1 / (60 dt)); the fps a small fraction, exactly 1 / (k dt)
    where dt is a ratio of small integers."""
    from app.video import frame_steps, video_rate
    for dt, steps, fps in ((1 / 60, 1, Fraction(60)), (1 / 240, 4, Fraction(60)), (1 / 120, 2, Fraction(60)),
                           (0.001, 17, Fraction(1000, 17)), (0.016666666667, 1, Fraction(60)), (0.1, 1, Fraction(10))):
        frame_seconds, rate = video_rate(dt)
        assert frame_steps(dt) == steps and frame_seconds == dt * steps and rate == fps, dt


def test_writer_round_trip_and_atomic_file(tmp_path):
    """30 synthetic frames (a white square moving on a dark red ground) decode to 30 frames of the
    size written, each within 6 levels (mean absolute) of what was sent, the square where it was
    drawn. While writing, only the hidden .part file exists; `close` renames it to the name."""
    from app.video import VideoWriter
    path = tmp_path / "moving.mp4"
    width, height = 160, 96
    sent = []
    writer = VideoWriter(path, (width, height), 30)
    for i in range(30):
        picture = np.zeros((height, width, 3), np.uint8)
        picture[:] = (120, 20, 20)
        picture[30:50, 4 * i:4 * i + 20] = 255
        sent.append(picture)
        writer.write(picture)
    assert not path.exists() and writer.partial.exists()
    assert writer.close() == path and not writer.partial.exists()
    meta, got = decode(path)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p") and meta["fps"] == 30
    assert got.shape == (30, height, width, 3)
    errors = np.abs(got.astype(int) - np.array(sent, int)).mean(axis=(1, 2, 3))
    assert errors.max() < 6, errors
    for i in (0, 15, 29):  # the square's centre is white, the ground red
        assert got[i, 40, 4 * i + 10].min() > 230 and got[i, 80, (4 * i + 80) % width][0] > 90


def test_writer_abort_and_refusals(tmp_path):
    """abort leaves nothing; an odd size, a non-.mp4 name, a missing directory, a wrong frame
    shape and a close with no frame are refused with the reason."""
    from app.video import VideoWriter, check_path
    writer = VideoWriter(tmp_path / "a.mp4", (64, 32), 60)
    writer.write(np.zeros((32, 64, 3), np.uint8))
    writer.abort()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="even"):
        VideoWriter(tmp_path / "b.mp4", (63, 32), 60)
    with pytest.raises(ValueError, match="FILE.mp4"):
        check_path(tmp_path / "b.avi")
    with pytest.raises(ValueError, match="does not exist"):
        check_path(tmp_path / "missing" / "b.mp4")
    writer = VideoWriter(tmp_path / "c.mp4", (64, 32), 60)
    with pytest.raises(ValueError, match="shape"):
        writer.write(np.zeros((32, 63, 3), np.uint8))
    with pytest.raises(ValueError, match="no frame"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


# --- the app --------------------------------------------------------------------------------------

def chromaticity(rgb):
    rgb = np.asarray(rgb, float)
    return rgb[..., :2] / np.maximum(rgb.sum(axis=-1, keepdims=True), 1e-9)


def scene_colours_found(image, colors, tolerance=0.03, min_pixels=30):
    """How many of the saturated scene colours appear on at least `min_pixels` pixels (chromaticity
    within `tolerance`: 0.03 rather than the screenshots' 0.02 for the chroma coding)."""
    pixels = image.reshape(-1, 3)
    pixels = chromaticity(pixels[pixels.sum(axis=1) > 60])
    saturated = [c for c in np.unique(np.round(np.asarray(colors), 3), axis=0) if np.ptp(c) > 0.15]
    return sum(int(np.sum(np.linalg.norm(pixels - chromaticity(c), axis=1) < tolerance)) >= min_pixels
               for c in saturated), len(saturated)


@pytest.mark.display
def test_frames_video_shows_what_the_screenshot_shows(display, app_config, tmp_path):
    """`python -m app tank --frames 30 --video F --screenshot S`: 30 frames (dt = 1/60: one a
    frame) of 1280x720, not blank (pixel spread, the scene's own colours), the last equal to the
    screenshot within 3 levels on average (the coding's error) — panel included by default."""
    import physics
    video, shot = tmp_path / "tank.mp4", tmp_path / "tank.png"
    result = subprocess.run([sys.executable, "-m", "app", "tank", "--frames", "30", "--video", str(video),
                             "--screenshot", str(shot)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"saved {video} (30 frames" in result.stdout
    meta, got = decode(video)
    assert got.shape == (30, 720, 1280, 3) and meta["fps"] == 60 and meta["codec"] == "h264"
    assert all(frame.std() > 10 for frame in got[::10]), "a blank frame"
    found, wanted = scene_colours_found(got[-1], physics.Simulation.from_file(ROOT / "assets/scenes/tank.toml").colors)
    assert found >= min(2, wanted)
    from app.png import read_png
    screenshot = read_png(shot)
    assert np.abs(got[-1].astype(int) - screenshot).mean() < 3
    assert not any(p.name.endswith(".part") for p in tmp_path.iterdir())


@pytest.mark.display
def test_rate_follows_simulated_time_not_frames(window, tmp_path):
    """One video frame per 1/60 s of simulated time: at time scale 0.25, 40 drawn frames of the
    tank (dt = 1/60) step 10 times and record 10 frames; the top (dt = 1/240) takes 4 steps a
    drawn frame, 20 frames record 20 video frames of 4 steps each."""
    w = window("tank", video=tmp_path / "slow.mp4", store=False)  # its time scale is not saved for the next
    w.viewer.session.prefs["time_scale"] = 0.25
    frames(w, 40)
    assert w.viewer.session.sim.step_count == 10
    assert w.viewer.video.stop() == tmp_path / "slow.mp4"
    assert decode(tmp_path / "slow.mp4")[1].shape[0] == 10
    w.close()
    w = window("top", video=tmp_path / "fine.mp4")
    frames(w, 20)
    assert w.viewer.session.sim.step_count == 80
    w.viewer.video.stop()
    meta, got = decode(tmp_path / "fine.mp4")
    assert got.shape[0] == 20 and meta["fps"] == 60


@pytest.mark.display
def test_scene_only_video_leaves_the_panel_out(window, tmp_path):
    """The same 5 frames with and without the panel: equal (within the coding's error) right of
    the panel, different where the panel is (its dark background: mean below 80 levels with it,
    the sky and ground's brighter colours without)."""
    videos = {}
    for panel in (True, False):
        path = tmp_path / f"panel_{panel}.mp4"
        w = window("tank", video=path, video_panel=panel)
        frames(w, 5)
        w.viewer.video.stop()
        videos[panel] = decode(path)[1].astype(int)
        w.close()
    assert videos[True].shape == videos[False].shape == (5, 720, 1280, 3)
    panel_area, scene_area = (slice(None), slice(200, 600), slice(20, 360)), (slice(None), slice(200, 600), slice(500, 1200))
    assert videos[True][panel_area].mean() < 80 < videos[False][panel_area].mean()
    assert np.abs(videos[True][scene_area] - videos[False][scene_area]).mean() < 3


@pytest.mark.display
def test_replay_renders_the_whole_recording(window, display, tmp_path):
    """`--replay F.rec --video V.mp4` plays the recording from its first step to its last: a
    recording of 36 steps of the car becomes 36 frames of the window's size."""
    w = window("car")
    frames(w, 36)
    recording = w.viewer.session.save_recording(tmp_path / "car.rec")
    assert w.viewer.session.timeline.head == 36
    w.close()
    video = tmp_path / "car.mp4"
    result = subprocess.run([sys.executable, "-m", "app", "--replay", str(recording), "--video", str(video),
                             "--size", "640x360"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "HIERARCHY_SANDBOX_CONFIG_DIR": str(tmp_path / "config")})
    assert result.returncode == 0, result.stderr[-2000:]
    meta, got = decode(video)
    assert got.shape == (36, 360, 640, 3) and got[-1].std() > 10




@pytest.mark.display
def test_f10_starts_and_stops_recording_with_real_keys(window, tmp_path, monkeypatch):
    """F10 (a real key press) starts a recording named in the status line, F10 again saves it as
    sandbox-<time>.mp4 in the working directory, the status line naming it; the file holds one
    frame per simulated 1/60 s between the presses."""
    from conftest import require_tool
    require_tool("xdotool", "xdotool")
    monkeypatch.chdir(tmp_path)
    w = window("tank")
    v = w.viewer
    frames(w, 3)
    xdotool(w, "windowfocus", "--sync", str(w._window))
    xdotool(w, "key", "F10")
    assert v.video.active and "recording" in v.session.message and "F10 stops" in v.session.message
    started = v.video.recording.start_time
    stop, stopped_at = v.video.stop, []
    monkeypatch.setattr(v.video, "stop", lambda: stopped_at.append(v.session.sim.time) or stop())
    frames(w, 20)
    xdotool(w, "key", "F10")
    assert not v.video.active and len(stopped_at) == 1
    saved = sorted(tmp_path.glob("sandbox-*.mp4"))
    assert len(saved) == 1 and f"saved {saved[0]}" in v.session.message
    meta, got = decode(saved[0])
    # one frame per 1/60 s simulated between the presses (dt = 1/60: one per step)
    expected = round((stopped_at[0] - started) * 60)
    assert got.shape == (expected, 720, 1280, 3) and expected >= 20


@pytest.mark.display
def test_a_killed_app_leaves_no_video(display, app_config, tmp_path):
    """Killed (SIGKILL) while recording, the app leaves no file under the video's name: only its
    hidden .part file, which ffmpeg was writing."""
    video = tmp_path / "killed.mp4"
    process = subprocess.Popen([sys.executable, "-m", "app", "tank", "--video", str(video)], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        # killed once ffmpeg has written frames into the .part file (its size grows past zero)
        while not any(p.name.endswith(".part") and p.stat().st_size > 0 for p in tmp_path.iterdir()):
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the recording never started"
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    assert not video.exists()


def test_bad_video_path_is_refused(app_config, tmp_path):
    """--video with another extension or in a missing directory: exit 2 naming the value."""
    for bad, said in ((tmp_path / "v.avi", "FILE.mp4"), (tmp_path / "no" / "v.mp4", "does not exist")):
        result = subprocess.run([sys.executable, "-m", "app", "tank", "--frames", "1", "--video", str(bad)],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and said in result.stderr and str(bad) in result.stderr
