"""Contacts on the pile of 1,000 boxes (issue 5 §7–8): broad phase and narrow phase timed apart.

Two states of 1,000 boxes of 0.2 m on a ground plane, both 10 × 10 × 10:
- `settled_pile`: what a pile at rest looks like to collision detection: columns of boxes resting
  on each other and on the ground (0.2 mm overlaps, the solver's steady state), yawed by up to
  0.01 rad and tilted by up to 0.001 rad, with 2 mm gaps between neighbouring columns except one
  row of touching columns along x and one along z: ≈ 5.6k contact points, the issue's count;
- `pile` (dense): every box overlapping all its neighbours and the ground by 1 mm, tilted by up
  to 0.02 rad about random axes (≈ 24k points): a stress case denser than any real pile.
The whole step target is 8 ms, most of it the solver's; collision detection gets 2 ms of it
(broad ≤ 0.5 ms, narrow ≤ 1.5 ms). Targets are judged on the median thread CPU time per call
(`time.thread_time`): on this shared 2-core machine the wall clock also counts other processes'
slices; the wall median is shown beside it, with the load average.
The solver's rows may be added to this module by its owner in separate functions.
"""
import os
import time
from types import SimpleNamespace

import numpy as np

from physics.broadphase import candidate_pairs, collision_filter
from physics.collision import ContactCache, contacts
from physics.rotation import matrix_from_axis_angle
from physics.shapes import ShapeSet, aabbs

TARGET_MS = {"broad": 0.5, "narrow": 1.5}


def _scene(translation, rotation, size):
    """(ShapeSet, world poses, parent, motion): a ground plane (node 0) and boxes of edge `size`."""
    n = len(translation)
    shapes = ShapeSet.from_nodes([{"type": "plane", "normal": [0, 1, 0], "offset": 0.0}]
                                 + [{"type": "box", "size": [size] * 3}] * n)
    world = SimpleNamespace(translation=np.vstack([np.zeros(3), translation]),
                            rotation=np.concatenate([np.eye(3)[None], rotation]), scale=np.ones(n + 1))
    return shapes, world, np.full(n + 1, -1), np.array(["fixed"] + ["dynamic"] * n)


def pile(n_side=10, size=0.2, overlap=1e-3, tilt=0.02, seed=0):
    """The dense grid: every box overlapping its neighbours and the ground by `overlap`."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    translation = grid * (size - overlap) + (0.5 * size - overlap)
    n = len(translation)
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    return _scene(translation, matrix_from_axis_angle(axis, rng.uniform(0, tilt, n)), size)


def settled_pile(n_side=10, size=0.2, overlap=2e-4, gap=2e-3, touching=(5,), yaw=0.01, tilt=1e-3, seed=0):
    """Columns resting on each other and the ground (`overlap`), `gap` between neighbouring
    columns except after the column indices `touching` (along x and along z), where they touch."""
    rng = np.random.default_rng(seed)
    step = np.full(n_side, size + gap)
    step[list(touching)] = size - overlap
    across = np.concatenate([[0.0], np.cumsum(step[:-1])])  # column positions along x and z
    ix, iy, iz = (g.ravel() for g in np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"))
    translation = np.column_stack([across[ix], iy * (size - overlap) + 0.5 * size - overlap, across[iz]])
    n = len(translation)
    up = matrix_from_axis_angle(np.array([0.0, 1.0, 0.0]), rng.uniform(-yaw, yaw, n))
    heading = rng.uniform(0, 2 * np.pi, n)
    level = np.column_stack([np.cos(heading), np.zeros(n), np.sin(heading)])
    return _scene(translation, matrix_from_axis_angle(level, rng.uniform(0, tilt, n)) @ up, size)


def measure_collision(scene, repeats):
    """Median broad and narrow phase times (thread CPU and wall, ms) and the counts on one scene."""
    shapes, world, parent, motion = scene
    flt = collision_filter(shapes, parent, motion)
    cache = ContactCache()

    def broad():
        lo, hi = aabbs(shapes, world)
        return candidate_pairs(lo, hi, flt)

    pairs = broad()
    c = contacts(shapes, world, pairs, cache)  # compile / warm
    cpu = {"broad": [], "narrow": []}
    wall = {"broad": [], "narrow": []}
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.thread_time()
        pairs = broad()
        t1, c1 = time.perf_counter(), time.thread_time()
        c = contacts(shapes, world, pairs, cache)
        t2, c2 = time.perf_counter(), time.thread_time()
        cpu["broad"].append(c1 - c0)
        cpu["narrow"].append(c2 - c1)
        wall["broad"].append(t1 - t0)
        wall["narrow"].append(t2 - t1)
    med = lambda d: {k: 1e3 * float(np.median(v)) for k, v in d.items()}
    return med(cpu), med(wall), len(pairs), len(c), float(c.depth.max())


def collision_section(repeats):
    lines = ["| scene | pairs | points | stage | CPU ms | wall ms | target |", "|---|---:|---:|---|---:|---:|---:|"]
    for name, scene in (("settled pile", settled_pile()), ("dense grid (1 mm overlaps)", pile())):
        cpu, wall, n_pairs, n_points, deepest = measure_collision(scene, repeats)
        for stage in ("broad", "narrow"):
            mark = "✓" if cpu[stage] <= TARGET_MS[stage] else "✗"
            lines.append(f"| {name} | {n_pairs} | {n_points} | {stage} phase | {cpu[stage]:.2f} | {wall[stage]:.2f} "
                         f"| ≤ {TARGET_MS[stage]} {mark} |")
    return lines


def main(quick=False):
    repeats = 5 if quick else 31
    rows = collision_section(repeats)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "## contacts",
        "",
        "1,000 boxes (0.2 m) on the ground, 10³: a settled pile (columns resting on each other, 2 mm gaps "
        "between most columns, one row of columns touching along x and one along z; yaw ≤ 0.01 rad, tilt ≤ 0.001 rad) and the dense "
        "grid (every neighbour overlapping by 1 mm, tilt ≤ 0.02 rad). Median of "
        f"{repeats} calls, thread CPU time (judged) and wall time; load average {load} on 2 cores "
        "(`benchmarks/contacts.py`).",
        "",
        *rows,
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
