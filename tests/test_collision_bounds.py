"""The narrow phase stays inside its buffers whatever it is given.

A compiled kernel that writes past an array's end corrupts memory silently (a crash much later, or
none), so these tests run the physics in a subprocess: a crash there fails the test instead of
killing pytest. The last test runs a set of kernels and scenes with NUMBA_BOUNDSCHECK=1, where an
out-of-bounds index raises IndexError instead of corrupting memory; it builds every kernel afresh in
its own NUMBA_CACHE_DIR, so bounds-checked builds never mix with the normal cache.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "assets" / "scenes"

# The smallest scene that overflowed EPA's horizon edge rows: a dynamic cylinder puck resting on the
# axis of a kinematic cylinder turntable. The two caps are coaxial and touching, so the Minkowski
# difference has a flat face through the origin and EPA's new points see dozens of nearly coplanar
# faces at once. With lie-midpoint-4 it crashed within ~40 steps.
PUCK_SCENE = """
[world]
dt = 0.016666666666666666
integrator = "{integrator}"

[[node]]
name = "turntable"
motion = "kinematic"
translation = [0.0, 0.5, 0.0]
angular_velocity = [0.0, 0.8, 0.0]
shape = {{ type = "cylinder", radius = 4.0, height = 0.2 }}

[[node]]
name = "puck"
parent = "turntable"
motion = "dynamic"
translation = [0.0, 0.15, 0.0]
mass = 0.5
shape = {{ type = "cylinder", radius = 0.2, height = 0.1, collide_with_parent = true }}
"""

RUN_SCENE = """
import json, sys
import numpy as np
from physics.pipeline.simulation import Simulation
sim = Simulation.from_file(sys.argv[1])
sim.step(int(sys.argv[2]))
local = sim.local()
arrays = [local.transform.translation, local.transform.rotation, local.velocity, local.angular_velocity]
print(json.dumps({"finite": bool(all(np.isfinite(a).all() for a in arrays)),
                  "translation": local.transform.translation.tolist(), "velocity": local.velocity.tolist()}))
"""

# GJK/EPA on single pairs. `coaxial`: the turntable and puck caps of the scene above at the step that
# overflowed the edge rows (both rotated by the table's turn, the puck's bottom on the table's top at
# y = 0.6). `no_face`: a small cylinder and a box of half extents ~1e299 m, where GJK's arithmetic
# overflows and all four faces of EPA's first tetrahedron are degenerate. `huge`: `contacts` on the
# turntable-puck pair with the turntable at world scale 1e308 (its radius overflows to inf).
KERNEL_CASES = """
import json
from types import SimpleNamespace
import numpy as np
from physics.collision.collision import contacts
from physics.collision.gjk_epa import gjk_epa
from physics.collision.manifold import ContactCache
from physics.model.shapes import BOX, CYLINDER
from physics.model.shapes import ShapeSet
c, s = 0.9943165029753013, 0.10646451010062946
table_R = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
c, s = 0.9943165029990335, 0.10646450987894851
puck_R = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
out = {}
hit, n, depth, wa, wb = gjk_epa(CYLINDER, np.array([0.0, 0.5, 0.0]), table_R, np.array([4.0, 0.1, 0.0, 0.0]),
                                 CYLINDER, np.array([0.0, 0.6499999999999998, 0.0]), puck_R, np.array([0.2, 0.05, 0.0, 0.0]))
out["coaxial"] = [bool(hit), n.tolist(), float(depth), wa.tolist(), wb.tolist()]
hit, n, depth, wa, wb = gjk_epa(CYLINDER, np.array([0.75, -0.5, 0.875]), np.eye(3), np.array([0.2, 0.05, 0.0, 0.0]),
                                 BOX, np.array([9e299, -2e298, -1.25e300]), np.eye(3), np.array([3e299, 2e299, 1e299, 0.0]))
out["no_face"] = [bool(hit), float(depth)]
shapes = ShapeSet.from_nodes([{"type": "cylinder", "radius": 4.0, "height": 0.2},
                              {"type": "cylinder", "radius": 0.2, "height": 0.1, "collide_with_parent": True}])
counts = []
for y in (0.0, 0.15, 0.5, 1e150):
    world = SimpleNamespace(translation=np.array([[0.0, 0.5, 0.0], [0.0, 0.5 + y, 0.0]]),
                            rotation=np.stack([np.eye(3)] * 2), scale=np.array([1e308, 1.0]))
    counts.append(len(contacts(shapes, world, np.array([[0, 1]]), ContactCache())))
out["huge"] = counts
print(json.dumps(out))
"""


def _python(code, *args, env=None, timeout=600):
    """Run `code` in a fresh interpreter from the repository root; (returncode, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def _last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("integrator", ["lie-midpoint-4", "lie-midpoint", "explicit-euler"])
def test_puck_on_the_turntable_axis_runs_clean(tmp_path, integrator):
    scene = tmp_path / "puck.toml"
    scene.write_text(PUCK_SCENE.format(integrator=integrator))
    code, out, err = _python(RUN_SCENE, scene, 1000)
    assert code == 0, f"exit {code}: {err[-2000:]}"
    state = _last_json(out)
    assert state["finite"]
    # Independent expectation: the puck rests on the table's top, its centre 0.1 + 0.05 m above the
    # table's, on the axis, turning with it. 2 mm covers the solver's resting penetration (0.5 mm
    # measured); 2 cm the drift while it settles (< 1 cm measured); 1 mm/s its residual local speed.
    x, y, z = state["translation"][1]
    assert y == pytest.approx(0.15, abs=2e-3)
    assert (x * x + z * z) ** 0.5 < 0.02
    assert max(abs(v) for v in state["velocity"][1]) < 1e-3


def test_epa_edge_overflow_and_no_face_give_defined_results():
    code, out, err = _python(KERNEL_CASES)
    assert code == 0, f"exit {code}: {err[-2000:]}"
    cases = _last_json(out)
    # Coaxial caps touching at y = 0.6: EPA stops expanding when the horizon outgrows its edge rows
    # and answers with the closest face so far. Independent expectation: normal +y (table to puck),
    # depth 0 and both witness points on the plane y = 0.6 within the puck's radius of the axis.
    # 1e-9 m is EPA's convergence tolerance; the normal is within 3 degrees of +y (1.9 measured: the
    # best face of a polytope abandoned mid-expansion, not the converged one).
    hit, n, depth, wa, wb = cases["coaxial"]
    assert hit
    assert n[1] > 0.9986  # cos 3 degrees
    assert abs(depth) < 1e-9
    for w in (wa, wb):
        assert w[1] == pytest.approx(0.6, abs=1e-9)
        assert (w[0] ** 2 + w[2] ** 2) ** 0.5 <= 0.2 + 1e-9
    # No face left: no contact, never a read of face -1.
    assert cases["no_face"] == [False, 0.0]
    # A shape whose size overflows to inf: `contacts` returns (at most a pair's 4 points) without raising.
    assert all(0 <= m <= 4 for m in cases["huge"])


# Every pair of shape kinds (planes only against the others), shape B dropped around shape A at
# random poses from deep inside to just apart, frame after frame through one persistent ContactCache
# (manifolds kept, refreshed and dropped), then the same with every size scaled by 1e-6 and 1e6.
PAIR_SWEEP = """
import numpy as np
from types import SimpleNamespace
from physics.collision.collision import contacts
from physics.collision.manifold import ContactCache
from physics.model.shapes import ShapeSet
hull = {"type": "hull", "vertices": [[0.3, 0.0, 0.0], [-0.2, 0.25, 0.1], [0.0, -0.3, 0.2], [0.1, 0.1, -0.35],
                                     [-0.15, -0.1, -0.2], [0.2, 0.3, 0.3]]}
kinds = [{"type": "sphere", "radius": 0.3}, {"type": "box", "size": [0.8, 0.4, 0.6]},
         {"type": "capsule", "radius": 0.2, "height": 0.5}, {"type": "cylinder", "radius": 0.3, "height": 0.4}, hull]
plane = {"type": "plane", "normal": [0.0, 1.0, 0.0]}
rng = np.random.default_rng(7)
counts = []
for scale in (1.0, 1e-6, 1e6):
    for a in range(len(kinds) + 1):
        for b in range(len(kinds)):
            shapes = ShapeSet.from_nodes([plane if a == len(kinds) else kinds[a], kinds[b]])
            cache = ContactCache()
            for frame in range(40):
                q = rng.normal(size=(2, 4))
                q /= np.linalg.norm(q, axis=1, keepdims=True)
                w, x, y, z = q.T
                R = np.stack([np.stack([1 - 2*(y*y + z*z), 2*(x*y - w*z), 2*(x*z + w*y)], -1),
                              np.stack([2*(x*y + w*z), 1 - 2*(x*x + z*z), 2*(y*z - w*x)], -1),
                              np.stack([2*(x*z - w*y), 2*(y*z + w*x), 1 - 2*(x*x + y*y)], -1)], -2)
                if frame % 10 >= 5:     # five frames of small moves: the manifold kept and refreshed
                    R = np.stack([np.eye(3), np.eye(3)])
                offset = rng.normal(size=3) * rng.choice([0.0, 0.05, 0.3, 0.6, 1.0])
                world = SimpleNamespace(translation=np.array([[0.0, 0.0, 0.0], offset]) * scale, rotation=R,
                                        scale=np.array([scale, scale]))
                found = contacts(shapes, world, np.array([[0, 1]]), cache)
                assert len(found.depth) <= 4, (a, b, frame, len(found.depth))
                assert np.all(np.isfinite(found.depth)), (a, b, frame)
                counts.append(len(found.depth))
print(json.dumps({"pairs": len(counts), "points": int(sum(counts))}))
"""


def test_narrow_phase_stays_in_bounds_under_numba_boundscheck(tmp_path):
    # The narrow phase alone compiled with bounds checks, on the pair cases above and a sweep of
    # every pair of shape kinds. Unoptimised (NUMBA_OPT=0): numba inserts the checks as it lowers
    # each index, before LLVM's passes, so they are all there, and the compile takes a fraction of
    # the optimised one's minute. The whole step's kernels under bounds checks are `make long` (below).
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_OPT="0", NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))
    code, out, err = _python(KERNEL_CASES + PAIR_SWEEP, env=env, timeout=1200)
    assert code == 0, f"exit {code}: {err[-3000:]}"
    swept = _last_json(out)
    assert swept["pairs"] == 3 * 6 * 5 * 40
    assert swept["points"] > 0


BOUNDSCHECK_RUN = "import sys\n" + KERNEL_CASES + """
from physics.pipeline.simulation import Simulation
for path, steps in zip(sys.argv[1::2], sys.argv[2::2]):
    sim = Simulation.from_file(path)
    sim.step(int(steps))
    assert sim.first_non_finite() is None, path
print("done")
"""


@pytest.mark.long
def test_kernels_stay_in_bounds_under_numba_boundscheck(tmp_path):
    # Every kernel compiled with bounds checks (about four minutes of one core's CPU: nothing is
    # cached, so `make long` runs it, not `make test`):
    # the pair cases above, the puck scene, and shipped scenes covering box-box and box-plane
    # clipping, cylinder pairs and persistent manifolds (turntable, tank), joints (chain), a stack
    # and the car's contacts with counteraction.
    scene = tmp_path / "puck.toml"
    scene.write_text(PUCK_SCENE.format(integrator="lie-midpoint-4"))
    runs = [(scene, 300), (SCENES / "turntable.toml", 300), (SCENES / "tank.toml", 200), (SCENES / "car.toml", 200),
            (SCENES / "stack.toml", 200), (SCENES / "chain.toml", 200)]
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))
    code, out, err = _python(BOUNDSCHECK_RUN, *[x for run in runs for x in run], env=env, timeout=1200)
    assert code == 0, f"exit {code}: {err[-3000:]}"
    assert out.strip().splitlines()[-1] == "done"
