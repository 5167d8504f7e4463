"""Viewer frame rate at 1280x720 with physics and the UI: 1,000 nodes (the first 1,000 of the
stress scene) and 10,000 (the stress scene), with 4x MSAA and without.

Runs in a real window; without $DISPLAY it starts its own Xvfb. A frame is everything the app
does per frame (events, physics steps, overlays, scene, panel, resolve, copy to the window);
the number is the median over the timed frames after a warm-up.
"""
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

STRESS = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "stress.toml"
TARGETS = {1000: 60.0, 10000: 30.0}  # FPS, issue 6


def _first_nodes(n, directory):
    """A scene file holding the stress scene's first n nodes (parents come before children)."""
    text = STRESS.read_text()
    parts = text.split("[[node]]")
    path = Path(directory) / f"stress_{n}.toml"
    path.write_text("[[node]]".join(parts[: n + 1]))
    return path


def _xvfb():
    if os.environ.get("DISPLAY"):
        return None
    for n in range(120, 200):
        if not Path(f"/tmp/.X{n}-lock").exists():
            break
    process = subprocess.Popen([shutil.which("Xvfb") or "Xvfb", f":{n}", "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while not Path(f"/tmp/.X11-unix/X{n}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    os.environ["DISPLAY"] = f":{n}"
    return process


def _measure(scene, msaa, warmup, frames):
    from app.window import SandboxWindow
    window = SandboxWindow(str(scene), {}, vsync=False, store=False, msaa=msaa)
    try:
        times, physics, render = [], [], []
        for i in range(warmup + frames):
            start = time.perf_counter()
            window.frame(1 / 60)
            window.ctx.finish()
            if i >= warmup:
                times.append(time.perf_counter() - start)
                physics.append(window.viewer.stats["physics_ms"])
                render.append(window.viewer.stats["render_ms"])
        nodes = len(window.viewer.sim.names)
    finally:
        window.close()
    return nodes, float(np.median(times)), float(np.median(physics)), float(np.median(render))


def main(quick=False):
    process = _xvfb()
    os.environ.setdefault("HIERARCHY_SANDBOX_CONFIG_DIR", tempfile.mkdtemp(prefix="sandbox-bench-"))
    rows = []
    try:
        with tempfile.TemporaryDirectory() as directory:
            for n in (1000, 10000):
                scene = STRESS if n >= 10000 else _first_nodes(n, directory)
                for msaa in (4, 0):
                    nodes, frame, physics, render = _measure(scene, msaa, 3 if quick else 10, 10 if quick else 60)
                    fps = 1.0 / frame
                    rows.append(f"| {nodes} | {msaa}x | {1e3 * frame:.1f} | {fps:.1f} | {TARGETS[n]:.0f} "
                                f"| {'yes' if fps >= TARGETS[n] else 'no'} | {physics:.1f} | {render:.1f} |")
    finally:
        if process is not None:
            process.terminate()
            process.wait(5)
            del os.environ["DISPLAY"]
    return "\n".join([
        "## viewer",
        "",
        "Frame time of the app at 1280x720 under Xvfb (Mesa llvmpipe), physics and panel included; "
        "median over " + ("10" if quick else "60") + " frames.",
        "",
        "| nodes | MSAA | frame ms | FPS | target FPS | met | physics ms | render ms |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ])


if __name__ == "__main__":
    print(main(quick=True))
