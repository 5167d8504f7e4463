"""Viewer frame rate at 1280x720 with physics and the UI: 1,000 nodes (the first 1,000 of the
stress scene) and 10,000 (the stress scene), with 4x MSAA and without.

Runs in a real window; without $DISPLAY it starts its own Xvfb. A frame is everything the app
does per frame (events, physics steps, overlays, scene, panel, MSAA resolve and copy, swap);
the number is the median over the timed frames after a warm-up. Beside the wall time, the
process's CPU time per frame (all threads: Mesa's llvmpipe rasterizes on worker threads): on
this shared 2-core machine the wall time counts other processes' slices, the CPU time does not.

A second table splits a frame into its parts, each timed in CPU time with `ctx.finish()` after
it so the GL work lands in its own part.
"""
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

STRESS = Path(__file__).resolve().parent.parent / "assets" / "scenes" / "stress.toml"
TARGETS = {1000: 60.0, 10000: 30.0}  # FPS: the viewer's goals


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
        times, cpu, physics, render = [], [], [], []
        for i in range(warmup + frames):
            start, start_cpu = time.perf_counter(), time.process_time()
            window.frame(1 / 60)
            window.ctx.finish()
            if i >= warmup:
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
                physics.append(window.viewer.stats["physics_ms"])
                render.append(window.viewer.stats["render_ms"])
        nodes = len(window.viewer.sim.names)
    finally:
        window.close()
    return nodes, *(float(np.median(x)) for x in (times, cpu, physics, render))


PARTS = ("physics step", "world state", "UI build", "clear + grid", "shapes", "overlays", "UI draw", "swap")


def _split(scene, warmup, frames):
    """Median CPU ms of each part of a frame (no MSAA), in the order the app runs them."""
    from imgui_bundle import imgui
    from app.window import SandboxWindow
    window = SandboxWindow(str(scene), {}, vsync=False, store=False, msaa=0)
    v, ctx = window.viewer, window.ctx
    samples = {name: [] for name in PARTS}

    def part(name, action):
        start = time.process_time()
        action()
        ctx.finish()
        samples[name].append(time.process_time() - start)

    def clear_grid():
        screen.use()
        screen.clear(0.6, 0.76, 0.92, 1.0, depth=1.0)
        v.renderer.draw_grid(v.view_projection())

    def overlays():
        for segments, colors in v.overlay_lines():
            v.renderer.draw_lines(segments, colors, v.view_projection())

    try:
        for _ in range(warmup + frames):
            window.switch_to()
            window.dispatch_events()
            screen = window._screen_framebuffer()
            s = v.state
            part("physics step", lambda: v.sim.step(1))
            part("world state", lambda: (v.refresh_state(), v.runaway_node()))
            part("UI build", lambda: v.build_ui(1 / 60))
            part("clear + grid", clear_grid)
            part("shapes", lambda: v.renderer.draw_shapes(s["T"], s["R"], s["S"], v.view_projection(), v.focal_px(), None,
                                                          v.camera.eye_world))
            part("overlays", overlays)
            part("UI draw", lambda: v.imgui.render(imgui.get_draw_data(), screen))
            part("swap", window.flip)
    finally:
        window.close()
    return {name: 1e3 * float(np.median(values[warmup:])) for name, values in samples.items()}


def main(quick=False):
    process = _xvfb()
    os.environ.setdefault("HIERARCHY_SANDBOX_CONFIG_DIR", tempfile.mkdtemp(prefix="sandbox-bench-"))
    load_before = os.getloadavg()[0]
    warmup, frames = (3, 10) if quick else (10, 60)
    rows, splits = [], {}
    try:
        with tempfile.TemporaryDirectory() as directory:
            for n in (1000, 10000):
                scene = STRESS if n >= 10000 else _first_nodes(n, directory)
                for msaa in (4, 0):
                    nodes, frame, cpu, physics, render = _measure(scene, msaa, warmup, frames)
                    fps = 1.0 / frame
                    rows.append(f"| {nodes} | {msaa}x | {1e3 * frame:.1f} | {fps:.1f} | {TARGETS[n]:.0f} "
                                f"| {'yes' if fps >= TARGETS[n] else 'no'} | {1e3 * cpu:.1f} | {1e3 / (1e3 * cpu):.0f} "
                                f"| {physics:.1f} | {render:.1f} |")
                splits[nodes] = _split(scene, warmup, frames)
    finally:
        if process is not None:
            process.terminate()
            process.wait(5)
            del os.environ["DISPLAY"]
    load_after = os.getloadavg()[0]
    sizes = list(splits)
    return "\n".join([
        "## Viewer (`benchmarks/viewer.py`)",
        "",
        "Frame time of the app at 1280x720 under Xvfb (Mesa llvmpipe), physics and panel included; "
        f"median over {frames} frames. Load average {load_before:.1f} before, {load_after:.1f} after "
        "(2 cores): wall times include other processes' slices; CPU FPS = 1000 / CPU ms, what the "
        "frame would reach with the machine to itself (llvmpipe's threads counted together).",
        "",
        "| nodes | MSAA | frame ms | FPS | target FPS | met | CPU ms | CPU FPS | physics ms | render ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "A frame split into parts (no MSAA; median CPU ms; `ctx.finish()` after each part):",
        "",
        "| part | " + " | ".join(f"{n} nodes" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
        *(f"| {name} | " + " | ".join(f"{splits[n][name]:.2f}" for n in sizes) + " |" for name in PARTS),
        "| total | " + " | ".join(f"{sum(splits[n].values()):.2f}" for n in sizes) + " |",
    ])


if __name__ == "__main__":
    print(main(quick=True))
