"""Pinocchio beside us: `pinocchio.forwardKinematics(model, data, q, v, a)` (world placements, spatial
velocities and accelerations of every joint, one C++ pass parents-before-children) per tree shape,
ns per node, medians; our `Hierarchy.update_world()` on the same parent array in the same run.

Pinocchio cannot hold our benchmark's large trees. Its `Data` allocates, besides per-joint state, four
nv × nv × nv tensors (second-order derivatives) and other arrays that grow as N²: a free-flyer per
node (nv = 6 N) is impossible beyond a few dozen nodes (100 free-flyers: 13 GB), and even 1-DoF mimic
joints (nv = 3 for the whole tree) cost ~45 N² bytes (N = 10^5 would need ~450 GB). So:

- the main table uses mimic revolute joints: three driving joints (RX, RY, RZ) at the root, each node a
  revolute joint mimicking one of them (random scaling and offset) behind a random constant placement.
  Every node moves, with a 1-DoF local motion; Pinocchio's per-joint work (joint transform, placement
  product, world placement, velocity and acceleration propagation with the v × v_J term) is that of
  any joint. Trees are the shapes of benchmarks/hierarchy.py, at the requested N when its Data fits in
  MEMORY_BUDGET, otherwise at the largest listed size that does (the row says which).
- a second table times one free-flyer per node (the 6-DoF joint that reproduces our local motion,
  as tests/test_pinocchio_crosscheck.py does) on 30-node trees, with the per-call Python overhead (a
  1-joint model's call) subtracted.
"""
import os
import time

import numpy as np
import pinocchio as pin

from benchmarks.hierarchy import chain, depth, random_tree, state, tanks, wide
from physics.model.hierarchy import Hierarchy

MEMORY_BUDGET = 600e6  # bytes of Pinocchio Data we allow ourselves on a shared machine
# Measured with pin 4.1 (RSS growth of createData, fresh process): mimic-joint Data of N = 10^3 nodes
# 40-60 MB, of 3·10^3 nodes 0.36 GB: about 45 N² bytes. Used to pick sizes that fit MEMORY_BUDGET.
_DATA_BYTES_PER_NODE2 = 45.0


def seconds(fn, repeats):
    """(wall median, CPU median, best wall) of `repeats` calls after a warm-up call. The CPU time
    (this thread's) leaves out the time slices the scheduler gives other processes on a busy machine."""
    fn()
    wall, cpu = np.empty(repeats), np.empty(repeats)
    for k in range(repeats):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        wall[k], cpu[k] = time.perf_counter() - t0, time.thread_time() - c0
    return float(np.median(wall)), float(np.median(cpu)), float(wall.min())


def rss():
    """Resident set size of this process, bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def mimic_model(parent, rng):
    """Joints 1-3 drive (RX, RY, RZ); node i is joint i + 4, a revolute mimicking driver i % 3."""
    model = pin.Model()
    drivers = [model.addJoint(0, joint(), pin.SE3.Identity(), name)
               for joint, name in ((pin.JointModelRX, "rx"), (pin.JointModelRY, "ry"), (pin.JointModelRZ, "rz"))]
    scaling = rng.uniform(0.5, 2.0, len(parent)) * rng.choice([-1.0, 1.0], len(parent))
    offset = rng.uniform(-np.pi, np.pi, len(parent))
    for i, p in enumerate(parent):
        mimic = pin.JointModelMimic(model.joints[drivers[i % 3]], scaling[i], offset[i])
        model.addJoint(0 if p < 0 else int(p) + 4, mimic, pin.SE3.Random(), f"node{i}")
    return model


def free_flyer_model(parent):
    model = pin.Model()
    for i, p in enumerate(parent):
        model.addJoint(int(p) + 1, pin.JointModelFreeFlyer(), pin.SE3.Identity(), f"node{i}")
    return model


def random_qva(model, rng):
    """Random q (unit quaternions where the joint has one), v and a."""
    q = rng.standard_normal(model.nq)
    for joint in model.joints[1:]:
        if joint.shortname() == "JointModelFreeFlyer":
            quat = q[joint.idx_q + 3: joint.idx_q + 7]
            quat /= np.linalg.norm(quat)
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def time_forward(model, rng, repeats):
    """(wall median, CPU median, best) seconds of forwardKinematics with q, v, a; bytes of the Data."""
    before = rss()
    data = model.createData()
    data_bytes = rss() - before
    q, v, a = random_qva(model, rng)
    return (*seconds(lambda: pin.forwardKinematics(model, data, q, v, a), repeats), data_bytes)


def repeats_for(n, quick):
    return max(5, min(2000, int(3e6 // n))) // (4 if quick else 1) + 3


def mimic_row(label, make_parent, n_wanted, sizes, rng, quick):
    n = next((s for s in (n_wanted, *sizes) if _DATA_BYTES_PER_NODE2 * s * s <= MEMORY_BUDGET), sizes[-1])
    parent = make_parent(n, rng)
    reps = repeats_for(n, quick)
    median, cpu, best, _ = time_forward(mimic_model(parent, rng), rng, reps)
    ours, ours_cpu, _ = seconds(Hierarchy(parent, state(n, rng, scaled=label != "deep chain")).update_world, reps)
    size = f"{n:,}" if n == n_wanted else f"{n:,} (asked {n_wanted:,}: Data ≈ {_DATA_BYTES_PER_NODE2 * n_wanted ** 2 / 1e9:,.0f} GB)"
    return (f"| {label} | {size} | {depth(parent)} | {1e9 * median / n:.1f} | {1e9 * cpu / n:.1f} | "
            f"{1e9 * best / n:.1f} | {1e3 * median:.3f} | {1e9 * ours / n:.1f} | "
            f"{1e9 * ours_cpu / n:.1f} | {cpu / ours_cpu:.1f} |")


def free_flyer_rows(rng, quick):
    n = 30
    reps = 500 if quick else 3000
    overhead, overhead_cpu, overhead_best, _ = time_forward(free_flyer_model(np.array([-1])), rng, reps)
    rows = []
    for label, parent in (("wide (8-ary)", wide(n)), ("forest of 10-node tanks", tanks(n)),
                          ("deep chain", chain(n)), ("random (parent uniform below)", random_tree(n, rng))):
        median, cpu, best, data_bytes = time_forward(free_flyer_model(parent), rng, reps)
        per_node = [1e9 * (t - t1) / (n - 1) for t, t1 in ((median, overhead), (cpu, overhead_cpu), (best, overhead_best))]
        rows.append(f"| {label} | {n} | {depth(parent)} | {per_node[0]:.1f} | {per_node[1]:.1f} | {per_node[2]:.1f} | "
                    f"{1e6 * median:.2f} | {data_bytes / 1e6:.0f} |")
    return rows, overhead


def main(quick: bool) -> str:
    rng = np.random.default_rng(0)
    fallback = (1000,) if quick else (3000, 1000)
    cases = [
        ("wide (8-ary)", lambda n, r: wide(n), 10**5),
        ("forest of 10-node tanks", lambda n, r: tanks(n), 10**5),
        ("deep chain", lambda n, r: chain(n), 10**4),
        ("wide (8-ary)", lambda n, r: wide(n), 10**3),
        ("forest of 10-node tanks", lambda n, r: tanks(n), 10**3),
        ("deep chain", lambda n, r: chain(n), 10**3),
        ("random (parent uniform below)", random_tree, 10**3),
    ]
    rows = [mimic_row(label, make, n, fallback, rng, quick) for label, make, n in cases]
    ff_rows, overhead = free_flyer_rows(rng, quick)
    load = os.getloadavg()[0]
    lines = [
        "## Pinocchio beside us (`benchmarks/pinocchio.py`)",
        "",
        f"Pinocchio {pin.__version__}, `pinocchio.forwardKinematics(model, data, q, v, a)`: world placement, spatial velocity and spatial "
        "acceleration of every joint (local frame; classical accelerations are derived on demand), one "
        "C++ pass, one thread, float64, called from Python (the call costs ~"
        f"{1e6 * overhead:.1f} µs, included below). Ours: `Hierarchy.update_world()` (world T, R, S, v, a, ω, α) "
        "on the same parent array in the same run, scaled random states. Median of repeated calls; ns per "
        "node = time / N; CPU = median of this thread's CPU time (leaves out other processes' time slices on "
        "a busy machine); ratio = Pinocchio CPU / ours CPU.",
        "",
        "Pinocchio's `Data` cannot hold the large trees: besides per-joint state it allocates nv × nv × nv "
        "tensors and arrays that grow as N², so one free-flyer per node (nv = 6 N) stops at a few dozen "
        "nodes (100 free-flyers: 13 GB) and even 1-DoF mimic joints (nv = 3) need about "
        f"{_DATA_BYTES_PER_NODE2:.0f} N² bytes (measured). The first table therefore uses mimic revolute joints "
        "(three driving joints, every node a revolute mimicking one of them, random scaling, offset and "
        "constant placement: every node moves, with a 1-DoF local motion) at the requested N where the "
        f"Data fits in {MEMORY_BUDGET / 1e6:.0f} MB, else at the largest size that does (the N column says so); "
        "Pinocchio's per-joint work (joint transform, placement product, world placement, v and a "
        "propagation with the v × v_J term) is that of any joint, and a forward pass over a forest or a "
        "wide tree costs the same per node at any N, apart from caches.",
        "",
        "| tree shape | N | depth | Pinocchio ns/node | CPU ns/node | best ns/node | Pinocchio ms | ours ns/node | ours CPU ns/node | ratio (CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "One free-flyer per node (the 6-DoF joint that reproduces our local motion exactly, as in "
        "tests/test_pinocchio_crosscheck.py), 30 nodes, per-call overhead (a 1-joint model's call) "
        "subtracted: ns/node = (t(N) − t(1)) / (N − 1).",
        "",
        "| tree shape | N | depth | free-flyer ns/node | CPU ns/node | best ns/node | µs per call | Data MB |",
        "|---|---|---|---|---|---|---|---|",
        *ff_rows,
        "",
        f"Load average (1 min) when measured: {load:.2f} on {os.cpu_count()} cores"
        + (" — the machine was shared with other work, so these numbers are pessimistic." if load > 1.0 else ".")
        + (" (quick run: smaller sizes, fewer repeats)" if quick else ""),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(main(quick=True))
