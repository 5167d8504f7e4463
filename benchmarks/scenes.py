"""Whole Simulation steps of the shipped scenes: the tank scene (kinematic hull,
wheels, turret and barrel; nine loose dynamic bodies resting on its decks through contacts and a
lantern on a ball joint under the turret's antenna) against
the 0.13 ms target, as shipped (sleep on: the cargo at rest on the hull sleeps, the ball in the
turret's tray does not) and with sleeping off (every body in the contact solver every step), with
the step's stages timed separately, and the 1,000-tank stress scene (10,011 nodes) for scale. One
thread, the scene's own settings (dt = 1/60).
"""
import contextlib
import importlib
import os
import pkgutil
import time
from pathlib import Path

import numpy as np

from physics.pipeline.simulation import Simulation

SCENES = Path(__file__).resolve().parent.parent / "assets" / "scenes"
TARGET_MS = {"tank": 0.13}


def _median_step_ms(sim, steps, repeats):
    sim.step(5)  # compile and warm caches outside the timing
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        sim.step(steps)
        samples.append((time.perf_counter() - start) / steps * 1e3)
    return float(np.median(samples))


# the profiler's stage names (physics.core.profile: the sub-step's own) and how the table says them
STAGES = {"world": "world updates and derived local state (the world stage)",
          "kinematic": "kinematic stage (Magnus)", "dynamic": "dynamic stage (integrator)",
          "prepare": "solver prepare (broad + narrow phase, rows)",
          "solve": "solver solve, relax, restitution, applied back (counteraction)",
          "joints": "joints' projections or post-stabilization",
          "sleep": "sleeping: still time, islands"}


def _stage_ms(sim, steps, repeats):
    """Median ms per step of each stage in STAGES, as the profiler times them (physics.core.profile:
    each stage under its own name, by the loop that runs them), over `repeats` runs of `steps`."""
    from physics.core.profile import Recorder

    totals = {name: [] for name in STAGES}
    for _ in range(repeats):
        with Recorder() as recorder:
            sim.step(steps)
        ns = recorder.totals()[0]
        for name in STAGES:
            totals[name].append(ns.get(name, 0) / steps / 1e6)
    return {name: float(np.median(values)) for name, values in totals.items()}


@contextlib.contextmanager
def _entered_directly():
    """Every kernel that `physics` calls from Python entered through its compiled entry point after
    its first call, skipping numba's typing of the call's arguments (a measurement, not a way to run:
    it holds only while each kernel has one compiled version, which is checked on the way out).
    numba computes a fingerprint of every argument at every call; a named tuple's holds its class
    and field names, about 0.3 µs plus 0.03 µs a field, and a step's kernels take dozens of them."""
    import numba
    import physics

    modules = [importlib.import_module(f"physics.{m.name}") for m in pkgutil.iter_modules(physics.__path__)
               if m.name != "__main__"]
    wrappers, swapped = {}, []    # one wrapper per kernel, however many modules import it

    entered = []        # the kernels now entered directly

    def enter(dispatcher):
        entry = []

        def call(*args):
            if entry:
                return entry[0](*args)
            result = dispatcher(*args)
            if len(dispatcher.signatures) == 1:     # a kernel with more is always typed
                entry.append(dispatcher.overloads[dispatcher.signatures[0]].entry_point)
                entered.append(dispatcher)
            return result
        return call

    for module in modules:
        for name, value in list(vars(module).items()):
            if isinstance(value, numba.core.dispatcher.Dispatcher):
                if id(value) not in wrappers:
                    wrappers[id(value)] = enter(value)
                swapped.append((module, name, value))
                setattr(module, name, wrappers[id(value)])
    try:
        yield
    finally:
        for module, name, value in swapped:
            setattr(module, name, value)
    if any(len(dispatcher.signatures) > 1 for dispatcher in entered):
        raise RuntimeError("a kernel entered directly compiled a second version: the measurement is void")


def main(quick=False):
    rows = []
    cases = (("tank", "tank", {}, 200, 5 if quick else 25), ("tank", "tank, sleep off", {"sleep": False}, 200, 5 if quick else 25),
             ("stress", "stress", {}, 3 if quick else 10, 3 if quick else 7))
    for name, label, settings, steps, repeats in cases:
        sim = Simulation.from_file(SCENES / f"{name}.toml")
        for key, value in settings.items():
            sim.set(key, value)
        ms = _median_step_ms(sim, steps, repeats)
        nodes = len(sim.names)
        target = None if settings else TARGET_MS.get(name)     # the scene as shipped
        verdict = "" if target is None else ("✓" if ms <= target else "✗")
        rows.append(f"| {label} | {nodes} | {int((sim.motion == 'dynamic').sum())} | {ms:.3f} | "
                    f"{'' if target is None else f'≤ {target}'} {verdict} | {ms * 1e6 / nodes:.0f} |")
    direct = {}
    for sleep in (True, False):       # the same step, kernels entered directly, beside the usual one
        pair = {}
        for mode in ("usual", "direct"):
            tank = Simulation.from_file(SCENES / "tank.toml")
            tank.set("sleep", sleep)
            with _entered_directly() if mode == "direct" else contextlib.nullcontext():
                pair[mode] = _median_step_ms(tank, 200, 5 if quick else 25)
        direct[sleep] = pair
    stages = {}
    for sleep in (True, False):
        tank = Simulation.from_file(SCENES / "tank.toml")
        tank.set("sleep", sleep)
        tank.step(5)
        stages[sleep] = _stage_ms(tank, 200, 3 if quick else 11)
    on, off = stages[True], stages[False]
    return "\n".join([
        "## Scenes (`benchmarks/scenes.py`)",
        "",
        "One whole `Simulation.step`: median ms per step over 5,000 steps from the start (kinematic stage,",
        "dynamic stage with the scene's integrator, world update, and for the tank the contact solver's",
        "stages). The tank ships with `sleep = true`: its cargo, at rest on the steadily turning hull, sleeps",
        "from about 1 s on (docs/architecture.md, \"Sleeping\"); the ball in the turret's tray and the shell in",
        "its rack stay awake (their field turns with the turret), so the contact pipeline runs every step,",
        "for them. The hull, wheels, turret and barrel are driven by their actuators (physics.dynamics.driving:",
        "one compiled loop over the driven nodes a step, and their accelerations turned after the kinematic",
        "stage). The lantern hanging from the antenna's bracket on a ball joint never sleeps (a body in a",
        "joint may not): its joint is stepped by RATTLE, the joints' row below. The target was set before",
        "the turret turned, the shell rode in its rack and the lantern hung: what is left above it is the",
        "contact solver for the awake bodies and the lantern's joint (the prepare, solve and joints rows below).",
        "\"sleep off\" solves all eleven bodies every step.",
        f"Load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        "| scene | nodes | dynamic | ms / step | target | ns / node |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "The tank's step by stage (median ms per step, as `physics.core.profile` times them by their names):",
        "",
        "| stage | sleep on (shipped) | sleep off |",
        "|---|---|---|",
        *(f"| {STAGES[name]} | {on[name]:.3f} | {off[name]:.3f} |" for name in STAGES),
        "",
        f"With sleeping off, free motion (world updates, kinematic and dynamic stages) is "
        f"{off['world'] + off['kinematic'] + off['dynamic']:.3f} ms of the tank's step and the "
        f"contact solver {off['prepare'] + off['solve']:.3f} ms: up to 20 projected Gauss–Seidel "
        "sweeps (a stage ends once every row holds within 1e-10 m/s) over ~14 four-point manifolds whose normal rows are solved as exact blocks, GJK/EPA for the "
        "upright drum on the deck and against the crates, and the calls into them.",
        "",
        "What the calls cost: numba types every argument of every call from Python, and a named tuple "
        "(the kernels' bundles) costs it about 0.3 µs plus 0.03 µs a field, since its fingerprint holds the "
        "class and field names. The step's calls whose every argument is the Workspace's own (the world "
        "passes, the divergence scans, the solver's bodies, the dynamic stage's gather and placing, the "
        "kinematic scatter, sleeping's wake and hold) are bound to their compiled versions once a topology "
        "(`physics.core.compiled.bind`, `physics.pipeline.stages.Workspace.calls`), so nothing types them; the others, "
        "mostly the contact solver's, whose arrays are made each step, are typed at each call. The same "
        "step with those entered through their compiled entry points too (`_entered_directly`, a "
        "measurement only), median ms, each pair measured one after the other:",
        "",
        "| tank | usual step | every kernel entered directly | share of the step still in argument typing |",
        "|---|---|---|---|",
        *(f"| {'sleep on (shipped)' if sleep else 'sleep off'} | {direct[sleep]['usual']:.3f} | "
          f"{direct[sleep]['direct']:.3f} | {1 - direct[sleep]['direct'] / direct[sleep]['usual']:.0%} |"
          for sleep in (True, False)),
        "",
        "That share is what fusing the contact solver's calls (a stage's kernels in one call, its arrays "
        "kept from step to step) could still take off the step.",
    ])


if __name__ == "__main__":
    print(main())
