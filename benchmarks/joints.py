"""Scenes with joints against MuJoCo on the same scene: the shipped jointed scenes, the robot models
gymnasium and pybullet_data install (the `dev` extra), then chains and nets of growing size
(`assets/scenes/make_scenes.py chain --links N`, `net --side N`).

Each scene is stepped by our `Simulation.step` and by MuJoCo reading our own `physics.to_mjcf` of it
(MuJoCo's Euler, the same dt, one MuJoCo step per sub-step of ours), in one process, block by
block in turn, so that a busy machine slows both alike: the figure is the best of the blocks (ms a
step) and the ratio is ours over MuJoCo's. The sub-steps taken count RATTLE's retries
(`Simulation.substep_counts`): a sub-step taken again counts its attempt and its halves, so 1.00 is
no retry; the worst step is the largest such ratio of a single step over the first two minutes (a
robot left standing may settle, slip and shiver after half a minute), or the first second where two
minutes would take too long to step (the goal: at most 2).
What a step allocates is measured too: the most memory it takes and gives back (`_transient_kib`,
tracemalloc; the goal is a step that allocates nothing in steady state). gymnasium's models are also
driven as a learner drives them: random controls within each actuator's range, held DRIVE_HOLD steps,
the same in both engines (`_Drive`).
"""
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "assets" / "scenes"
PLOT = ROOT / "docs" / "plots" / "joints_scale.png"
SHIPPED = ("pendulum", "double_pendulum", "newtons_cradle", "iiwa", "ant", "humanoid", "chain", "rope_bridge")
# the robot models pip installs, as their authors wrote them (tests/test_robot_models.py runs the same twenty)
GYMNASIUM_MODELS = ("ant", "hopper", "half_cheetah", "walker2d", "humanoid", "humanoidstandup", "reacher",
                    "inverted_pendulum", "inverted_double_pendulum", "swimmer", "pusher")
PYBULLET_MODELS = ("kuka_iiwa/model.urdf", "franka_panda/panda.urdf", "r2d2.urdf", "quadruped/minitaur.urdf",
                   "a1/a1.urdf", "laikago/laikago.urdf", "cartpole.urdf", "racecar/racecar.urdf",
                   "humanoid/humanoid.urdf")
CHAINS, NETS = (10, 100, 400, 1000, 10000), (4, 8, 16, 32, 64, 100)
DRIVE_HOLD = 5              # steps a driven model's random controls are held (gymnasium's frame_skip for most)
STRAIGHT_NET = 8            # also hung with its hooked edge straight (--slack 0): the singular case
SOFT_NETS = (8, 16, 32, 64, 100)   # also with soft joints (--soft: joint_solve = "soft") …
SOFT_SHIPPED = ("pendulum", "double_pendulum", "iiwa", "ant", "humanoid", "chain")   # … and these shipped scenes
NET_GOALS_MS = {32: 16.0, 100: 100.0}   # the nets' own goals, ms a step: real time at 32 × 32, and Box2D's joint_grid size
GOAL_RATIO, GOAL_FLOOR_MS = 3.0, 0.030      # at most 3× MuJoCo, or 30 µs a step where that is less
GOAL_WORST_STEP = 2.0                       # no step takes more than twice its nominal sub-steps
ALLOCATION_STEPS = 5                        # steps traced for `_transient_kib` (tracemalloc slows them)
BUDGET_S = 20.0                            # of our stepping per scene; a scene past it is cut short
WORST_SECONDS = 120.0                       # the worst step is judged over the first two minutes of each scene …
WORST_FIRST_SECONDS = 1.0                   # … or its first second (a net's edges whip after half a second) …
WORST_BUDGET_S = 90.0                       # … whichever stepping on to fits this, else over what was stepped


ROBOTS_PROSE = (
    "A robot's sub-step is a dozen stages of Python around compiled calls. Where a forest's rows are all "
    "ones RATTLE's projections hold by themselves (joints' equalities, limits far from their bounds, "
    "dampers and armatures, whose rotors take their joints' kicks, and springs or actuators without "
    "them that do not push: the pendulums and the chains here, and "
    "the robot models clear of the floor, gymnasium's reacher, inverted pendulums and swimmer, driven or not, "
    "pybullet_data's iiwa), the sub-step has no "
    "velocity solve (`SceneSolver.leave_out_solve`): a third less time for the pendulums, a quarter for "
    "those robots. A robot on the floor, or with a joint near its limit (the panda's fingers), keeps it. "
    "Where it keeps it at rest (gymnasium's pusher, pybullet_data's r2d2, cartpole and minitaur), the "
    "solve ends at its first sweep, which holds every row within 1e-10 m/s "
    "(`physics.constraints.gauss_seidel.CONVERGED`): timed in turn with every sweep run, their steps take "
    "0.79, 0.86, 0.87 and 0.82 of the time; a robot in motion sweeps on, its residual ending at 1e-6 to "
    "1e-1 m/s (Gauss–Seidel converges slowly where a light link carries a heavy one: the racecar's "
    "steering knuckles, standing still, leave their hinges 3e-3 rad/s off after twenty sweeps). "
    "RATTLE's velocity projection holds a body the joints press into the floor (`rattle.Holds`), an "
    "active set it starts with every body that rests on a shape held: a robot standing on its feet "
    "factors its joints once a projection, not twice, with the same bits (started with none held, each "
    "foot was found pressed and the system factored again): timed in turn within the step, RATTLE's "
    "stage takes 70 µs of gymnasium's ant's sub-step where it took 95, 61 of walker2d's where 70, 36 of "
    "the hopper's where 39. "
    "Sampled on the ant standing on the floor (py-spy), the compiled calls take about half of its step: "
    "RATTLE's position projection 14 % (a Newton iteration or two; inside it Γ's assembly and "
    "elimination for the eight hinges' 7-row blocks take some 10 and 16 µs, for about 15,000 "
    "multiply-adds of arithmetic, and evaluating the joints' rows about 2.6 µs; the nine rotors' drift "
    "takes 0.6 µs in a compiled loop, its Newton stopped once an update is below 1e-9 |y|, where "
    "iterating on to the same bits took 1.5 µs: the last bit of each 3 × 3 solve cycles, and most "
    "drifts ran all eight iterations), the velocity solve 8 %, the contact points' reach and rows 8 % (their typing included), "
    "the velocity projection 6 %, the bodies' moves 4 %. A body below another (a robot's links) has "
    "its local velocity solved again after each move, so that its world velocity stays its own: in one "
    "world pass, parents first (`physics.dynamics.body_passes.carry_pass`), not a pass for each "
    "generation of bodies. The world passes between a sub-step's two whole ones (the dynamic stage's "
    "between generations, each move's, RATTLE's stage's) go over the dynamic bodies and their "
    "ancestors alone, not the shapes and other nodes they carry, which nothing reads before the next "
    "whole pass (the ant's 20 nodes of 38, the iiwa's 15 of 33): sampled with perf, the ant's world "
    "passes were a twentieth of its step; timed in turn, the iiwa's step takes a twelfth less time, "
    "the ant's a twentieth less, with the same bits. A call through numba's entry point pays its "
    "unboxing of every array it is given: about 80 ns an array in a kernel with numba's reference counts "
    "(which also allocates a record of some 50 bytes for each array, which tracemalloc counts), 10 ns in "
    "one without them, and more once the step has moved the arrays' headers out of the cache: sampled "
    "with perf, a fifth of the pendulum's step, more than the physics compiled below it (RATTLE's stage "
    "takes 295 arrays a call). So a bound call of a kernel without them (`refcounts=False`: the bound "
    "calls below, the velocity solve's stages among them, whose views of its room Python keeps by count) "
    "has its arguments unboxed once, when it is bound (`physics.core.unboxed`: a builtin whose code calls the "
    "compiled function with the arguments flattened, 60 ns a call with one array and 145 with 64, where "
    "numba's entry point takes 80 and 510): the pendulum's step takes a fifth less time, the ant's a "
    "sixth, with the same bits. Between kernels, numba passes an array as seven machine words or more "
    "and a bundle as all its arrays', read or not: RATTLE's stage called its position projection with "
    "1,112 words, and that called the evaluation of the rows with 463 at each Newton step (of the "
    "pendulum's stage's 26 KB of machine code, three thousand instructions were pushes). A callee linked "
    "into its caller's library is made internal there and loses every argument it never reads "
    "(`physics.core.compiled`, 12: LLVM's dead-argument elimination, the same arithmetic): timed in turn, "
    "the pendulum's step takes a quarter less time (33 µs against 44 on a busy machine), and a cold "
    "warm-up 198 s of CPU where it took 211. Where a call is not bound, numba types its arguments: it fingerprints a "
    "named tuple field by field, with its class's and fields' names, about 0.5 µs a bundle and 0.2 µs a "
    "field (an array on its own about 0.1 µs): sampled with perf, numba's dispatcher and the hashing of "
    "the names take some 3 % of the ant's step. A sub-step given what the last one was (its arrays, "
    "its settings, its counts of rows: most sub-steps of a steady scene) makes its calls again without "
    "the Python that finds them: the joints' start (`SceneSolver._start_joints`, its rows' views and "
    "`JointStart` kept while their count stays), the prepare of joints alone with no pair of shapes "
    "within reach (`SceneSolver._prepare_again`: the start, the shapes' placement and the broad phase, "
    "nothing between them), the choice of joint terms, the rows' effective masses "
    "(`gauss_seidel.PreparedBuffers.last`), the velocity solve (`gauss_seidel.SolveBuffers.again`) and "
    "RATTLE's stage, each checked against what its last call was given by identity and value and "
    "otherwise taken whole, with the same bits (tests/test_made_again.py). Timed in turn with the code "
    "that finds every call, the pendulums' steps take 0.65 to 0.68 of the time, Newton's cradle's "
    "0.79, the chain's and the iiwa's 0.81 to 0.85, the ant's and the humanoid's 0.88. Where nothing "
    "changes the sub-step's context (its length, integrator and judgement) is made once too "
    "(`Workspace.contexts`), and a step after the scene's last timed impulse leaves out the events "
    "stage (`Workspace.stages`). Where that leaves the plain list and a RATTLE sub-step steps every "
    "body, the list runs as one function (`stages.rattle_substep_stages`: each stage's branch for that "
    "case in the list's order, the same bits): timed in turn with the list over long runs (farm-bench's "
    "median of pairs, the start-up taken out), the pendulum's steps take 0.91 of the time, the double "
    "pendulum's 0.95 and the chain's 0.93; the ant's and the iiwa's are the same within the noise. What "
    "is left is Python and numpy spread over a hundred lines, none above 2 %: sampled with perf "
    "(numba's code named from a perf map written from its libraries), the interpreter takes some two "
    "thirds of the pendulum's step and half of gymnasium's hopper's, whose compiled half is mostly the "
    "velocity solve's sweeps (a tenth of the step), the joint graph's factorizations (6 %), the two "
    "projections (3 % each), the joints' geometry and the world passes (under 3 % each). The pendulum's "
    "sub-step of about 18 µs makes 12 bound calls, which made one after another in a loop, with no other "
    "Python between them, take 9 to 11 µs: RATTLE's stage 5.8 of them (its position projection for the "
    "two joints over two to four Newton iterations most of it), each of the others 0.1 to 0.7 timed "
    "alone. So with none of the Python around its calls the pendulum's step would take some 20 µs, within "
    "its goal's 30 µs floor yet four to five times MuJoCo's; and on the robots the compiled calls alone "
    "miss the goal (sampled with py-spy, the ant's RATTLE stage takes some 38 µs of its sub-step, twice "
    "MuJoCo's whole step of 18): what the goal needs is a RATTLE stage several times quicker. Timed call "
    "by call (the timing's own cost included), the chain's sub-step of about 60 µs spends some "
    "47 (RATTLE's stage 39: four to six Newton steps, most of them chords), and the rest between the "
    "calls: the sub-step's context, the retry's undo and judgement, the solver's checks that its calls "
    "can be made again. One compiled call for the rest of a sub-step whose solve is left out (the "
    "placement of the bodies, the divergence checks, the solve's zeros and RATTLE's stage, with the "
    "same bits) was measured and not taken: timed in turn, the pendulum's step took 3 to 5 % less "
    "time, within the noise, for some 20 s more CPU of compile (the callee's code linked into it and "
    "optimized again). Nor was the contact cache's store of the solve's impulses bound to its "
    "arrays: bound at every sub-step, the ant's, the humanoid's and the iiwa's steps took no less "
    "time. Made one by one, as a retry's island makes them, RATTLE's calls take "
    "some 7 µs more of the pendulum's sub-step than the one call, and 2 to 11 µs more of the chain's, the "
    "ant's and the humanoid's (whole steps, the two in turn); the one call's own compile "
    "is some 16 s of CPU, one version for every scene. The calls whose arguments live as long as a topology go straight to the compiled code, typed "
    "once (`physics.core.compiled.bind`): the solver's bodies, the integrator's pass, the joints' "
    "start (one call, `physics.constraints.solver._joint_start`: the geometry, the joint terms, the rows, "
    "the soft limits and whether the projections hold the rows alone; the geometry computed once a "
    "sub-step where RATTLE's step chooses "
    "the joint terms it takes: the prepare that follows at the same poses takes the choice's, "
    "`JointBodies.take_start`), RATTLE's stage (one call, `physics.constraints.rattle.joint_stage`, "
    "where the joint graph is not split in halves and no joint rides a moving frame: the world pass, the "
    "solver's bodies and their momentum, both projections, the first kick's changes and the bodies' two "
    "moves, bound to the Workspace's arrays, with h, the budget's iterations and a retry's stops in an "
    "array of numbers it writes before each call (`rattle.STEP_VALUES`), so that one bound call serves "
    "every halving: a bind takes some 3 ms; elsewhere the two projections bound apart, with those passes "
    "between them), the bodies' moves and carried velocities, a retry's undo of the whole world (one copy of "
    "its rows), the shapes' placement (checked against a token of the node state's buffers, "
    "`NodeState.storage`, not their views; it scales the hulls' rows too, where a scale changed: their "
    "scales checked with numpy in the narrow phase took half of r2d2's, 9 µs a sub-step), and the broad phase (a brute force over the filter's pairs, or the"
    " grid). So are the rows' effective masses and the velocity solve, where their counts come back, to "
    "views of the solver's kept room that are kept by count themselves (`physics.core.compiled.Memo`: "
    "the rows of a count, their effective masses' arrays, the solve's targets and stages, made once and "
    "found again), so that a sub-step whose counts are the last one's types none of their bundles: on "
    "the ant, standing on its four feet, their fingerprints would take numba some 22 µs a sub-step. The narrow phase and the contact points' reach and rows (one call, made in one piece with the "
    "joints' rows: apart, the two calls would type the points, bodies and constants twice, some 10 µs "
    "more; it returns how many rows it wrote, not views of them, which Python keeps by count: boxing ten "
    "arrays and their bundle on the way out took a quarter of the ant's call, some 4 µs of 17) are bound "
    "where a sub-step passes them objects one of its recent ones did (`physics.core.compiled.SteadyCall`: "
    "the broad phase's buffer of pairs, the narrow phase's points and manifolds and the cache's stored "
    "impulses are room written in turn, in two sets; the ant's narrow phase takes 1 µs a call bound, 3 "
    "typed), and typed elsewhere (points whose count keeps changing: a bind costs some twenty typed "
    "calls, and binding the solve for every new count took a tenth of the pile's step), until one set "
    "of them has been typed twenty times: the iiwa swinging over its floor and the humanoid lying on it "
    "meet two to six points, each count for a few hundred sub-steps, and waiting for the binds' payback "
    "left nine in ten of their contact stage's calls and half their solves' typed over a long run (timed "
    "in turn over 4,000 steps, their steps take 0.92 of the time bound; the table's blocks, in the "
    "scenes' first seconds, come before most of those binds), and so is the "
    "solve's one pass of changes. MuJoCo's step is one compiled call in reduced coordinates (the ant's 14 degrees"
    " of freedom, where our nine bodies have 54 and their joints about 40 equality rows): the goal needs "
    "the sub-step compiled as one call (none of the Python between a dozen calls) and the "
    "joint solve's small dense blocks several times faster. "
    "Counted by callgrind (instructions, whatever the machine's load), the ant's velocity projection "
    "executes about 300,000 instructions a call and its position projection about 83,000 (two Newton "
    "iterations, one factorization), where the arithmetic of its eight joints' 7 × 7 blocks (Γ's "
    "assembly and elimination) is some 15,000 multiply-adds: the kernels' walks over their rows' "
    "slots, their scratch"
    " and its zeroing (7 % of the velocity projection) are what to make cheaper. numba's numpy error "
    "model (no check at each division) changed these counts by about 1 %, and is not taken. "
    "RATTLE's copies of its scratch (a dozen a projection, `rattle._copy`) and the integrator's "
    "divergence check read their arrays through `.flat`: a reshape to one axis called numba's "
    "`numba_attempt_nocopy_reshape` at every copy (25 ns for a 2 × 3 array whose copy takes 2; sampled "
    "with perf, 5 % of the pendulum's RATTLE stage), and timed in turn the pendulum's and the double "
    "pendulum's steps take 0.96 of the time with `.flat`, the chain's 0.97, with the same bits. "
    "Sampled with perf, the humanoid's factorizations are a sixth of its step. Its blocks are of mixed "
    "sizes (2 to 7 rows: hinges, multi-axis joints and their axes), so its Schur updates take the sum's "
    "length the compiler knows from the eliminated block alone (unrolled for 2, 3, 4 or 7 rows, "
    "whatever its neighbours'): one factorization takes 28 µs, 36 through the general loops, with the "
    "same bits. A limit the drift leaves violated is taken into the position projection's Newton system "
    "and let go where its solve pulls (μ < 0), each let go a factorization more: all such rows at once, "
    "then those the new step would leave violated taken back (`rattle._release`, `_retake`), "
    "gymnasium's ant, its legs on their limits, factors 1.9 times a projection, where letting them go one "
    "at a time took 4.5 (and its step a fifth more time); walker2d 1.5 where 1.7, our humanoid 1.6 where "
    "2.1. "
    "Two ways to less work were measured and not taken. Factoring each joint's block over its taken rows "
    "alone (a limit away from its bound leaves its row untaken, and so does a multi-axis joint's axis "
    "without a rotor), with the same bits, is 1.6, 2.3 and 2.8 times fewer multiply-adds in the ant's, "
    "the humanoid's and the iiwa's velocity projections, yet timed in turn with the whole-block "
    "elimination neither projection took measurably less time and the ant's took a little more: each "
    "entry's test of its row takes what its arithmetic saved, and the ant's blocks lose their unrolled "
    "7 × 7 loops. "
    "And a bound call's arrays bundled into one numba structure (`numba.experimental.structref`), unboxed "
    "as one pointer, unbox in 0.1 µs where RATTLE's stage's 258 arrays took 3 µs; but the bundle's "
    "constructor took 13 s of CPU to compile and the kernel called through it 8 s more (numba links the "
    "callee's code into its caller and optimizes it again), against a compile budget that must not grow, "
    "and the call through it took 13 µs where numba's entry point took 3 (the bound calls' arrays are "
    "unboxed once instead, above). "

    "What a step allocates does not grow with "
    "its joints, its bodies, its candidate pairs or its contact points: the rows (the contacts' after the "
    "joints'), their effective masses, the velocity solve (its sweeps' sums and residuals too), the broad "
    "phase (the grid's entries, their order and the pairs' sort in a `GridScratch` its caller keeps), "
    "lie-midpoint's block columns, a retry's undo (an island's too), the solve's halves, the contact "
    "points' own arrays in the contact stage (their reach, friction, restitution, warm impulses, keys, "
    "flags and bounce data: a `PointRoom`), the chord rows of a robot's joint terms and a hull's "
    "vertices on a plane (the EPA workspace's: with the chord rows, the iiwa's 2.6 KiB a sub-step when "
    "they were arrays made at each call), the narrow phase's points and scratch, and the contact cache's "
    "stored impulses (two sets of each written in turn, so that what a retry holds of the last sub-step "
    "stays as it is: the pyramid's 580 points allocate about 4 KiB a step with them, 71 without) work in "
    "room kept from one sub-step to the next (the solver's, the cache's, the Workspace's), and the "
    "deep-overlap check's energy is one compiled pass. What is left is Python's (a bound call or view "
    "kept by `Memo` is found, `Memo.find`, before the partial that would make it is made): the "
    "contexts, views and bundles made between the calls, the integers its counters pass 256 with, and "
    "what numba's entry point makes as it types a call that is not bound (about 2.6 KiB for the narrow "
    "phase's 17 arguments), whatever the scene's size: under 0.05 KiB a step in the pendulums' steady "
    "steps and the short chain's, 0.1 to 1.3 in most robot models', 2 to 7 where retries bind calls "
    "for their halves' lengths (the iiwa folding, the chain's cracks) and some 25 to 50 over the 16 × "
    "16 and 32 × 32 nets' whipping fall, up to 12 where contact points keep changing their count (the "
    "humanoids, the panda's fingers: the solve's calls, bound to its rows cut by count, are typed for "
    "each new count). The contact stage's call takes the whole of the narrow phase's, the contact "
    "cache's and the joints' rows' room, their counts beside it in an array "
    "(`collision.whole_room`, `ContactCache.stored_room`), so that it is bound once for each set "
    "whatever the counts: cut to each count, its arguments made a call of their own for every count, "
    "and over 1,000 steps of the iiwa on its floor 468 of its 2,000 calls were typed, 98 now. numba's runtime allocates through Python's allocator, so a compiled call "
    "that makes a small array counts there too: the contact rows' directions and a 3-row block's K "
    "are scalars, not arrays, and the sink check's call, the solve's changes and its holds are "
    "bound where their arrays come back (`SceneSolver.steady_calls`), so that of the ant's steady "
    "sub-step's compiled calls only the narrow phase's round shapes allocate (some 90 bytes); the "
    "contact stage's parameters are kept while their values stay (made afresh, gravity's list, its "
    "floats and the bundle were some 40 bytes of the ant's median sub-step), the count of the rows' "
    "elements is a call bound while its rows stay (a `SteadyCall` of its own), the step's and its "
    "sub-steps' loops run by index (a range's iterator at every step, and on the triple jump an "
    "enumerate and its tuples' iterator, alive together through the sub-steps, were half of the "
    "chain's), and RATTLE's retry hands its undo on as one function (a classmethod read from its "
    "class is a new bound method at every read); "
    "tests/test_step_allocations.py's median step, a sub-step: 0.01 KiB for the chain, 0.05 for the "
    "8 × 8 net, 0.15 for the ant, 0.25 for the iiwa. No method a steady sub-step "
    "calls holds a nested function (a lambda, a comprehension, a `def`): CPython makes a cell for each "
    "local a nested function reads at every call of the method that holds it, whether or not the "
    "nested one is made, and RATTLE's stage made twelve a sub-step for the closure of its rare path, "
    "the joints' start eleven: with the velocity solve's views and `SteadyCall`'s bind, 480 bytes of "
    "the pendulum's step and 7 % of its time (farm-bench, long runs). Their `make`s are partials or "
    "methods of their own (`physics.core.compiled.binding`; tests/test_step_allocations.py checks the "
    "code a steady step runs for cells). RATTLE's projections, the joint graph's factorization, the narrow "
    "phase (its pairs other than box–box and box–plane in a kernel with them, whose small arrays it frees "
    "before it returns), the contact stage, the velocity solve and the "
    "bodies' passes are compiled without numba's reference counts (`physics.core.compiled`, "
    "`refcounts=False`): a view a loop takes of an array costs no atomic operations there."
)
DRIVEN_PROSE = (
    "Driven, a motor's torque is RATTLE's first kick on its joint. A joint with an armature (a motor's "
    "rotor seen through its gear: gymnasium's models give most joints one, the reacher's and the "
    "ant's 1 kg m² on links of 4e-5 to 0.01) shares that kick with its rotor, the links taking "
    "1/(1 + A s) of it, s the coordinate's inverse inertia (`physics.constraints.joints.fill_joint_terms`), "
    "and where the velocity solve is left out the rotor takes it whole: any split is RATTLE's same step "
    "once projected (the driven reacher's left-out run ends within 1e-9 m of its solved one). Measured "
    "with the kick on the links alone, it turned a light link by radians in the drift, the drift's "
    "curvature took the sub-step again as halves, and the reacher took 1.96 sub-steps a nominal one, "
    "the pusher 1.60 and the ant 1.24; and a motor's push kept the velocity solve, which the "
    "reacher, the inverted pendulums and the swimmer, clear of the floor, now leave out (some 40 % "
    "of their driven step). A limit that lets go within a Newton step ends its impulse at 0 by a "
    "substitution with the step's factors (`physics.constraints.rattle._let_go`), where a clamp in "
    "place left the driven ant's final attempts with no descent and its worst step at three times "
    "its passes. A control set is an input to the runaway check; while an actuator pushes there is "
    "nothing to compare (its work is no energy of the run), so no reference is taken: with every "
    "control set every step, taking one cost the ant a sixth of its step."
)
NETS_PROSE = (
    "A net's time is its joint graph's factorization (`physics.constraints.joint_graph`). A tree of joints "
    "is eliminated leaves first, with no fill. A net's loops fill its graph; the order that fills it least "
    "is a nested dissection of the bodies as the joints lay them out at load (the joints that cross a "
    "median cut go after both halves), which on the 32 × 32 net needs 565k Schur updates of 3 × 3 blocks "
    "where minimum degree needs 1.29M, and `structure` keeps whichever of the two needs fewer. A RATTLE "
    "projection factors once where its chord steps converge and again where one shrinks the error less "
    "than 16-fold (its first chord is the last velocity projection's factorization, at the poses it starts "
    "from), and the velocities take one more factorization. Along the current rows (where J₀ held no root) "
    "a chord moves along the rows its factors were made with: the loops' self-stresses make the matrix "
    "nearly singular, and the factors' multipliers in those directions, which the factored rows turn into "
    "no motion, the next pose's rows turned into a kick that raised the error. A run of ball joints the "
    "elimination takes one after another, each one's later neighbours the next one and that one's (a separator of "
    "the dissection), is one dense matrix, a front (`joint_graph._front_updates`): each joint's Schur update "
    "is a rank-3 update of contiguous rows, which the processor does several entries at a time (two joints a "
    "pass), with the same operations on each entry in the same order as block by block: the same bits. 96 % of "
    "the 32 × 32 net's updates are in fronts; its factorization with the assembly takes 3.7 ms on one thread "
    "(4.7 block by block), the 64 × 64 net's 26 ms (41), and a step of four sub-steps takes 20 to 35 of them "
    "(near a plane RATTLE's Newton converges only linearly there, a factorization an iteration; half the 32 × 32 "
    "net's projections leave J₀ for the current rows, and take three quarters of the time). Timed inside "
    "the 32 × 32 net's position projections (on one thread), a projection takes 6 to 11 Newton iterations, "
    "3.6 of them factorizations: the factorizations are 56 % of its time, the assembly of Γ 12 %, the "
    "chord steps' substitutions 11 % (3.2 a projection), the line search's evaluations of the rows 10 % "
    "(10.8 a projection, 0.6 ms each), the rest 8 %; with the velocity projection's one, the net's first "
    "steps take about 18 a step. Copying a front's "
    "blocks in from the block storage and out again costs about as much as its arithmetic on the largest "
    "nets: a multifrontal factorization, each front's trailing blocks handed on to the front that takes them "
    "next, would save most of it. So the goal (16 ms a step) needs an iterative loop closure or fewer "
    "factorizations an iteration, not only a faster direct one. Two shortcuts were measured and do not hold "
    "as they stand. Chord steps kept while they halve the error (not 16-fold) take a fifth fewer "
    "factorizations on the 32 × 32 net and a third more Newton iterations, and its first second a quarter "
    "more time. Loops closed softly, MuJoCo's way: a spanning tree's joints projected exactly (leaves first, "
    "no fill) and the loop-closing ones left to the velocity solve's rows, the 32 × 32 net takes its first "
    "second in under a third of the time, but the loops come apart (on the 16 × 16 net, loop-closing joints 0.4 m "
    "off after 2 s, on edges of 0.3 m; a Baumgarte factor of 0.8 diverges): RATTLE's projections move the "
    "bodies after the solve along the tree's rows alone. With those rows in the velocity projection too "
    "(the whole graph factored once a sub-step, J v = −β C / h on them) the 16 × 16 net's stay within 8 cm "
    "at β 0.2 and diverge at β 1, and the 32 × 32 net falls through its floor: a soft loop needs its rows "
    "in the position projection's own system. There, as a compliance (g + α Λ = 0 on the loop-closing "
    "rows, α = 0.05 /kg on their diagonal), they hold within 0.1 mm, and the 32 × 32 net's projections "
    "take 2.3 factorizations instead of 4.1 and leave J₀ a fifth as often; but the loops' fill stays, its "
    "first second is some 15 % quicker, and it ends that second with a third less kinetic energy than the "
    "exact net: the compliance damps. The loops are what costs: flat, a square "
    "net of ball joints has more rows in its plane than its bodies have freedoms there (two a joint, 3,972 "
    "on the 32 × 32 net, against three a body, 3,072), so near a plane some 900 of its rows are nearly "
    "redundant and the constraints' set is nearly singular, where any exact solver's Newton converges "
    "linearly. The same 1,024 spheres joined as a tree (`net --tree`, a comb: each row a chain, the rows "
    "joined at their first sphere, hung by one corner, 1,024 ball joints), timed alone over their first second, take 3.1 ms "
    "a position projection where the net's take 17 to 20 (the comb's 5.6 Newton iterations and 1.8 "
    "factorizations each, the net's 7 and 4), and step in 14 ms while they hang quiet, their first half second (then their "
    "long rows whip, and RATTLE halves those sub-steps). MuJoCo's copy of a net is a tree too: its loops' "
    "joints are the ones it leaves out (above). The dissection's two halves share no "
    "body: from the 16 × 16 net on (`joint_graph.SPLIT_UPDATES`) they are eliminated at once, one a "
    "thread, the second half's updates of the separator's blocks in buffers of their own, added once both "
    "are done, so that one thread and two give the same bits; each projection takes one thread or two, "
    "whichever its factorizations took less time on lately (`physics.core.threads.ThreadChoice`). The "
    "assembly of Γ (the storage zeroed, then the blocks one half's bodies alone reach) and the chord steps' "
    "substitutions are split the same way. The 32 × 32 net's factorization takes 1.8 ms on two threads "
    "where one takes 3.3, its assembly 0.5 where 0.66, a chord's substitutions 0.3 where 0.7; the 64 × 64 "
    "net's factorization 12 where one takes 23; the 32 × 32 net's step takes a fifth less time. "
    "Sampled with perf over the 32 × 32 net's fall (both threads), the fronts' updates are a fifth of the "
    "samples, the chord steps' substitutions a sixth, and OpenMP's worker waiting between the regions "
    "another fifth: it spins on the second core, which a machine with other work (the viewer) loses. The "
    "regions that run the halves live beside RATTLE's projections (`rattle._halves`, `_substitute_halves`, "
    "`_assemble_halves`): linked into them from another module, numba's parallel regions crashed the next "
    "process from a cache where a projection was compiled around a region loaded from it (numba issues "
    "8578 and 10128; `physics.core.compiled`, 8). The largest nets' blocks are one or two steps each. "
    "The straight edge is the singular case: two hooks as far apart as "
    "the edge is long leave no finite tension to hold the net's weight, the rows' Jacobian loses rank "
    "across the edge, and Newton converges linearly there (its stalls stand within a millionth of a "
    "lever): exact joints meet it in any solver, and a real net hangs with slack. Gauss–Newton along its "
    "current rows overshoots by the matrix's vanishing eigenvalues (its line search kept 1/128 to 1/512 of a "
    "step, and attempts whose budget held no retry stopped above the retry's standing error and were halved "
    "past the budget, three times a step's sub-steps); damped within 0.1 mm of the root (Levenberg–Marquardt, "
    "`rattle._damp`), its projections take half the iterations and half the time, and no step more than twice "
    "its sub-steps over two minutes.\n\n"
    "Once the 32 × 32 net lands, its steps take twice their sub-steps, the budget's most: its knots whip at "
    "up to 14 m/s and 88 rad/s, their drift leaves the rows' tangent past `retry.RATTLE_STEP_ERROR`, and of a "
    "block of ten steps' 40 sub-steps the hint halves 18 to 28 ahead, and the budget refuses 33 to 75 "
    "halvings more. Leaving J₀ after one stalled Newton step rather than two (`rattle.LEFT_STALLS`) took the "
    "net's fall half the time, none of its first half second retried, but gymnasium's ant, driven, then "
    "left J₀ in 70 projections of a test's run, and a flat net gained 2.3e-4 of its energy where RATTLE's "
    "step keeps it within 1e-5: not taken.")


SOFT_PROSE = (
    "A soft sub-step is the contact pipeline's with the joints' rows among the contacts': the rows and "
    "their effective masses once, then the velocity solve's sweeps (warm start, solve, relax), each "
    "linear in the rows, and the bodies' moves. Nothing is retried (1.00 sub-steps taken a nominal one) "
    "and no step waits on a factorization: the 32 × 32 net steps about eight times quicker than with its "
    "joints projected (whose time varies more from one run to the next), the 100 × 100 net some "
    "forty times. The robots take 0.4 to 0.6 of their projected time with their joints within a "
    "millimetre, the chain nine tenths; the pendulums lose (1.3 and 1.5 of it), where "
    "the projections alone held their rows without a velocity solve (`SceneSolver.leave_out_solve`) and "
    "a soft step always sweeps. "
    "What it costs is what the projection bought. The ERP's feedback drains energy (a soft pendulum at "
    "60° loses 15 % of its swing in five periods: docs/fidelity.md, \"Soft joints\"), and a joint gives "
    "where it is pulled hard, since twenty sweeps a sub-step do not carry a load along a long path: the "
    "nets' joints give two to four centimetres in their fall's whip and millimetres at rest. A net's two "
    "hook corners each hold half of its weight (half a tonne on the 100 × 100 net) on 0.15 m levers from "
    "a 0.1 kg sphere, a rotational mode some 2,000 rad/s against 240 sub-steps a second: such a body takes, "
    "for the solve, the inertia that slows its mode to a radian a sub-step "
    "(`physics.constraints.joints.stability_inertia`, docs/fidelity.md, \"Soft joints\"). Without it the "
    "corners spin out of their joints and tear the 64 × 64 and 100 × 100 nets by half a metre and a metre; "
    "with it, every net here holds within 4 cm and the 32 × 32 net steps within real time, the 100 × 100 "
    "net within its goal of 100 ms (the table's figure its blocks' best over its fall; a step's median "
    "70 to 87 ms in the fall and 88 to 105 once it lies on the ground, from one run to the next).\n\n"
    "Where the 100 × 100 net's soft sub-step goes, timed call by call: some 17 to 22 ms in its fall, 23 "
    "to 26 once it lies on the ground. The velocity solve's 24 sweeps (the warm start, 20 of the solve, 3 to "
    "relax) take 10 to 13 ms on two threads, the joints' start (their geometry and rows, "
    "`physics.constraints.solver._joint_start`) 2.2 to 3.0 ms, the rows' effective masses 1.3 to 1.6 (both "
    "split in halves, one a thread, from 1,024 joints and 3,072 rows, `_geometry_halves`, `_rows_halves`, "
    "`physics.constraints.gauss_seidel._masses_halves`: on one thread they took 4.2 to 4.5 ms and 2.0 to "
    "2.3, and the net's step in its fall 92 to 122 ms, timed side by side), the "
    "knots' contact points once it lies on the ground some 2 ms (their rows 1.7, the narrow phase 0.4), "
    "the bodies' moves 0.7 and the broad phase "
    "0.2 to 0.4 (no two knots may collide, so the grid is left out and the ground alone is tested: "
    "`physics.collision.broadphase`; through the grid it took 1.3). A joint's point rows are written inline "
    "(`physics.constraints.joints._point_rows`): as three calls of a kernel of their own, each passed the "
    "geometry's bundle, they took two thirds of a ball joint's geometry and the start 6.5 to 6.9 ms on one "
    "thread; inlined, "
    "the net's step takes 0.87 of the time (best of blocks, the two in turn) and gymnasium's humanoid's "
    "geometry half (4.1 µs against 8.1, in a compiled loop), with the same bits. A sweep takes some 33 ns a "
    "ball joint on one thread, bound by the chain of arithmetic from each joint's bodies' velocities to the "
    "next joint, which reads them, not by the bytes it reads: a record of a joint's point alone (its levers, "
    "masses and the angular columns of M⁻¹Jᵀ: a third of the rows' bytes, and 12 products for J v where the "
    "rows take 36) swept in the same time (6.9 ms for ten sweeps), though in a random order of the joints, "
    "where memory is the cost, in 0.43 of it; interleaving the two halves of a sweep's joints, so that "
    "neighbours share no body, made it 1.7 times slower. Neither was taken."
)


def _robot_models():
    """[(label, path)] of the robot models gymnasium and pybullet_data install."""
    import gymnasium
    import pybullet_data
    gym = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
    bullet = Path(pybullet_data.getDataPath())
    return ([(f"gymnasium {name}", gym / f"{name}.xml") for name in GYMNASIUM_MODELS]
            + [(f"pybullet_data {name}", bullet / name) for name in PYBULLET_MODELS])


class _Drive:
    """A learner's controls for both engines: every actuator's drawn uniformly within its
    ctrl_range (seeded), new every DRIVE_HOLD steps of ours, set by name in ours (`set_control`) and
    in MuJoCo's copy (`data.ctrl`, its actuators named as ours by `physics.to_mjcf`)."""

    def __init__(self, sim, model, seed=0):
        self.names = [name for name, _, _ in sim.actuators()]
        ranges = np.array([spec.get("ctrl_range", (-1.0, 1.0)) for _, _, spec in sim.actuators()], float)
        self.low, self.high = ranges.T if len(ranges) else (np.zeros(0), np.zeros(0))
        self.ids = None if model is None else np.array([model.actuator(name).id for name in self.names], int)
        self.rng = np.random.default_rng(seed)

    def draws(self, steps):
        """The controls for the next `steps` steps: one row a DRIVE_HOLD steps."""
        return self.rng.uniform(self.low, self.high, size=(-(-steps // DRIVE_HOLD), len(self.names)))

    def ours(self, sim, draws, steps):
        for i in range(steps):
            if i % DRIVE_HOLD == 0:
                for name, value in zip(self.names, draws[i // DRIVE_HOLD].tolist()):
                    sim.set_control(name, value)
            sim.step()

    def theirs(self, model, data, draws, steps, substeps):
        import mujoco
        for i in range(steps):
            if i % DRIVE_HOLD == 0:
                data.ctrl[self.ids] = draws[i // DRIVE_HOLD]
            for _ in range(substeps):
                mujoco.mj_step(model, data)


def _generated(kind, size, folder, slack=None, soft=False):
    path = Path(folder) / f"{kind}_{size}{'' if slack is None else f'_slack_{slack:g}'}{'_soft' if soft else ''}.toml"
    option = "--links" if kind == "chain" else "--side"
    extra = ([] if slack is None else ["--slack", str(slack)]) + (["--soft"] if soft else [])
    subprocess.run([sys.executable, str(SCENES / "make_scenes.py"), kind, option, str(size), *extra, "--out", str(path)],
                   check=True, capture_output=True)
    return path


def _transient_kib(sim, steps=ALLOCATION_STEPS):
    """The memory a step allocates and frees again, KiB: tracemalloc's peak during the step above
    what was held before it (numpy's arrays and Python's objects), the median over `steps` steps.
    A step that allocates nothing reads 0."""
    import statistics
    import tracemalloc
    tracemalloc.start()
    peaks = []
    try:
        for _ in range(steps):
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            sim.step()
            peaks.append(tracemalloc.get_traced_memory()[1] - held)
    finally:
        tracemalloc.stop()
    return statistics.median(peaks) / 1024


def _measure(path, steps, blocks, scale=False, windows=(WORST_SECONDS, WORST_FIRST_SECONDS), gaps=False,
             settings=None, driven=False):
    """(ours ms, MuJoCo ms or None, (sub-steps taken per nominal one, the worst step's over the first
    of `windows` (s) whose stepping fits WORST_BUDGET_S, else over what was stepped, KiB a step
    allocates, the simulated time the worst step was judged over, and with `gaps` the largest joint
    gap (m) at the end of any step of that window, else None), joints, what MJCF left out).
    `scale`: a scale scene, whose blocks take fewer steps where its first two fill more than a
    block's share of `BUDGET_S`. `settings`: {name: value} set after loading (the MuJoCo copy is
    the file's). `driven`: both engines driven by the same random controls (`_Drive`), set within
    the timed steps."""
    import warnings

    import mujoco

    from physics import Simulation, to_mjcf
    from physics.io.articulated import ModelWarning
    from physics.pipeline.stages import DivergenceError
    with warnings.catch_warnings():     # (what an importer approximates: the tests and docs/fidelity.md say)
        warnings.simplefilter("ignore", ModelWarning)
        sim = Simulation.from_file(path)
    for name, value in (settings or {}).items():
        sim.set(name, value)
    left_out = []
    try:
        model = mujoco.MjModel.from_xml_string(to_mjcf(sim.scene, left_out, integrator="euler"))
    except ValueError as error:     # MuJoCo's XML reader nests at most 500 levels: no chain longer
        model, left_out = None, [f"the whole scene: MuJoCo refuses it ({str(error).splitlines()[-1].strip()})"]
    data = mujoco.MjData(model) if model is not None else None
    substeps = sim.settings.substeps
    drive = _Drive(sim, model) if driven else None
    started = time.perf_counter()
    stopped = None
    try:
        sim.step(2)         # compile, fill caches
    except DivergenceError as error:    # (a run that stops is a result: its row says where and why)
        stopped = (getattr(error, "time", sim.time), str(error))
    if scale:
        steps = max(1, min(steps, int(BUDGET_S / blocks / ((time.perf_counter() - started) / 2))))
    for _ in range(2 * substeps if model is not None else 0):
        mujoco.mj_step(model, data)
    ours, theirs, spent = [], [], 0.0
    first = sim.substep_counts()
    for _ in range(0 if stopped else blocks):
        draws = drive.draws(steps) if drive is not None else None
        start, before = time.perf_counter(), sim.data.step_count
        try:
            if drive is None:
                sim.step(steps)
            else:
                drive.ours(sim, draws, steps)
        except DivergenceError as error:
            stopped = (getattr(error, "time", sim.time), str(error))
            if not ours:    # (the steps before the one that stopped, with its time: no whole block was stepped)
                ours.append((time.perf_counter() - start) / max(1, sim.data.step_count - before) * 1e3)
            break
        ours.append((time.perf_counter() - start) / steps * 1e3)
        spent += ours[-1] * steps / 1e3
        if model is not None:
            start = time.perf_counter()
            if drive is None:
                for _ in range(steps * substeps):
                    mujoco.mj_step(model, data)
            else:
                drive.theirs(model, data, draws, steps, substeps)
            theirs.append((time.perf_counter() - start) / steps * 1e3)
        if spent > BUDGET_S:
            break
    counts = sim.substep_counts()
    # (the blocks' own ratio: the first two steps, which compile and fill caches, are left out of it)
    nominal = counts["nominal"] - first["nominal"]
    per_nominal = (counts["taken"] - first["taken"]) / nominal if nominal else math.nan
    kib = math.nan
    if stopped is None:
        try:
            kib = _transient_kib(sim, min(ALLOCATION_STEPS, steps))
        except DivergenceError as error:
            stopped = (getattr(error, "time", sim.time), str(error))
    ours = ours or [math.nan]
    # the worst step over the first two minutes (gymnasium's ant, left standing, slips after half a
    # minute and rests with its limits microradians past their bounds), or the first second where
    # those would take too long (a net's edges whip after half a second of its fall)
    gap = None
    for seconds in () if stopped else windows:
        left = max(0, round((seconds - sim.time) / sim.settings.dt))
        if left * min(ours) / 1e3 <= WORST_BUDGET_S:
            gap = 0.0 if gaps and left else None
            try:
                if drive is not None:
                    drive.ours(sim, drive.draws(left), left)
                elif not gaps:
                    sim.step(left)
                for _ in range(left if gaps else 0):      # (step by step: the gap at the end of each)
                    sim.step()
                    gap = max(gap, float(np.max(sim.joint_separation(), initial=0.0)))
            except DivergenceError as error:
                stopped = (getattr(error, "time", sim.time), str(error))
            break
    counts = sim.substep_counts()
    per_nominal = (per_nominal, counts["worst_step"], kib, sim.time, gap, stopped)
    joints = len(sim.scene.joints) if hasattr(sim.scene, "joints") else 0
    return min(ours), min(theirs) if theirs else None, per_nominal, joints, left_out


def _left_out(label, left_out):
    """One line for what MuJoCo's copy of a scene lacks: the count and the distinct reasons."""
    reasons = sorted({re.sub(r"'[^']*'", "a body", item.split(": ", 1)[-1]) for item in left_out})
    return f"{label}: MuJoCo's copy leaves out {len(left_out)} of the scene's items ({'; '.join(reasons)})"


def _stopped(label, per_nominal):
    """One line for a scene whose run stopped (a `DivergenceError`: where and why), or None."""
    stopped = per_nominal[5]
    return None if stopped is None else f"{label}: stopped at {stopped[0]:.2f} s: {stopped[1]}"


def _row(label, joints, ours, theirs, per_nominal):
    judged = "" if per_nominal[3] >= WORST_SECONDS - 1e-9 else f" (over {per_nominal[3]:.2f} s)"
    worst = (f"{per_nominal[1]:.2f} {'✓' if per_nominal[1] <= GOAL_WORST_STEP else '✗'}{judged}" if per_nominal[5] is None
             else f"{per_nominal[1]:.2f}, stopped at {per_nominal[5][0]:.2f} s ✗")
    taken = f"{per_nominal[0]:.2f} | {worst} | " + ("—" if math.isnan(per_nominal[2]) else f"{per_nominal[2]:.1f}")
    if theirs is None:
        return f"| {label} | {joints} | {ours:.3f} | — | — | — | {taken} |"
    goal = max(GOAL_RATIO * theirs, GOAL_FLOOR_MS)
    return (f"| {label} | {joints} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.1f}× | ≤ {goal:.3f} "
            f"{'✓' if ours <= goal else '✗'} | {taken} |")


def _soft_row(label, joints, ours, theirs, per_nominal, goal=None):
    """A row of soft joints: `_row`'s, its goal `goal` (ms) where the scene has one of its own
    (NET_GOALS_MS), and the largest joint gap its judged window saw."""
    row = _row(f"{label}, soft joints", joints, ours, theirs, per_nominal)
    if goal is not None:
        cells = row.split(" | ")
        cells[5] = f"≤ {goal:g} {'✓' if ours <= goal else '✗'}"
        row = " | ".join(cells)
    return row[:-2] + (" | — |" if per_nominal[4] is None else f" | {1e3 * per_nominal[4]:.1f} |")


def _plot(curves):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for (kind, engine), points in sorted(curves.items()):
        if points:
            x, y = zip(*sorted(points))
            axes.loglog(x, y, "o-" if engine == "ours" else "s--", label=f"{kind}s, {engine}")
    axes.set_xlabel("joints")
    axes.set_ylabel("ms a step")
    axes.set_title("Time per step against joints (dt 1/60)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    temp = PLOT.with_suffix(".tmp.png")
    figure.savefig(temp)
    os.replace(temp, PLOT)
    plt.close(figure)


def main(quick=False):
    steps, blocks = (10, 2) if quick else (60, 5)
    windows = (WORST_FIRST_SECONDS,) if quick else (WORST_SECONDS, WORST_FIRST_SECONDS)
    rows, robot_rows, driven_rows, scale_rows, soft_rows, curves, notes = [], [], [], [], [], {}, []
    for name in SHIPPED:
        ours, theirs, per_nominal, joints, left_out = _measure(SCENES / f"{name}.toml", steps, blocks,
                                                               windows=windows)
        rows.append(_row(name, joints, ours, theirs, per_nominal))
        notes.append(_stopped(name, per_nominal))
        if left_out:
            notes.append(_left_out(name, left_out))
    for label, path in _robot_models()[:3] if quick else _robot_models():
        ours, theirs, per_nominal, joints, left_out = _measure(path, steps, blocks, windows=windows)
        robot_rows.append(_row(label, joints, ours, theirs, per_nominal))
        notes.append(_stopped(label, per_nominal))
        if left_out:
            notes.append(_left_out(label, left_out))
    for label, path in _robot_models()[:2] if quick else _robot_models()[:len(GYMNASIUM_MODELS)]:
        ours, theirs, per_nominal, joints, _ = _measure(path, steps, blocks, windows=windows, driven=True)
        driven_rows.append(_row(f"{label}, driven", joints, ours, theirs, per_nominal))
        notes.append(_stopped(f"{label}, driven", per_nominal))
    with tempfile.TemporaryDirectory() as folder:
        scenes = [("chain", size, None) for size in (CHAINS[:2] if quick else CHAINS)]
        scenes += [("net", size, None) for size in (NETS[:2] if quick else NETS)] + [("net", STRAIGHT_NET, 0.0)]
        for kind, size, slack in scenes:
            path = _generated(kind, size, folder, slack)
            ours, theirs, per_nominal, joints, left_out = _measure(path, max(2, steps // 6), blocks, scale=True,
                                                                   windows=windows)
            label = f"{kind} of {size}" if kind == "chain" else f"net {size} × {size}"
            label += ", straight edge" if slack == 0.0 else ""
            scale_rows.append(_row(label, joints, ours, theirs, per_nominal))
            notes.append(_stopped(label, per_nominal))
            if slack is None:       # (the curves: the scenes as generated)
                curves.setdefault((kind, "ours"), []).append((joints, ours))
                if theirs is not None:
                    curves.setdefault((kind, "MuJoCo"), []).append((joints, theirs))
            if left_out:
                notes.append(_left_out(label, left_out))
        for name in SOFT_SHIPPED[:2] if quick else SOFT_SHIPPED:
            ours, theirs, per_nominal, joints, _ = _measure(SCENES / f"{name}.toml", steps, blocks, windows=windows,
                                                            gaps=True, settings={"joint_solve": "soft"})
            soft_rows.append(_soft_row(name, joints, ours, theirs, per_nominal))
            notes.append(_stopped(f"{name}, soft joints", per_nominal))
        for size in SOFT_NETS[:2] if quick else SOFT_NETS:
            path = _generated("net", size, folder, soft=True)
            ours, theirs, per_nominal, joints, _ = _measure(path, max(2, steps // 6), blocks, scale=True,
                                                            windows=windows, gaps=True)
            soft_rows.append(_soft_row(f"net {size} × {size}", joints, ours, theirs, per_nominal, NET_GOALS_MS.get(size)))
            notes.append(_stopped(f"net {size} × {size}, soft joints", per_nominal))
            curves.setdefault(("soft net", "ours"), []).append((joints, ours))
    _plot(curves)
    header = ["| scene | joints | ours, ms a step | MuJoCo | ours / MuJoCo | goal | sub-steps taken / nominal "
              "| worst step (goal ≤ 2) | KiB a step allocates (goal 0) |", "|---|---|---|---|---|---|---|---|---|"]
    return "\n".join([
        "## Joints (`benchmarks/joints.py`)",
        "",
        "Our `Simulation.step` against MuJoCo stepping the same scene through `physics.to_mjcf` (Euler, the "
        "same dt, one MuJoCo step per sub-step of ours), best of blocks measured in turn in one process. "
        "Goal: at most 3× MuJoCo's time, or 30 µs a step where that is less. The last two columns count "
        "RATTLE's retries (`Simulation.substep_counts`): 1.00 is no retry; the worst step is the largest "
        f"ratio of a single step over the scene's first {WORST_SECONDS:g} s, or its first {WORST_FIRST_SECONDS:g} s "
        f"where stepping that far would take more than {WORST_BUDGET_S:.0f} s (else over the time given: the "
        "judged time is then in the column). The last, what a step allocates and frees again "
        f"(tracemalloc's peak above what was held, median of {ALLOCATION_STEPS} steps, or of a block's on the "
        "largest nets). "
        f"Load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        *header, *rows,
        "",
        "The robot models pip installs, as their authors wrote them (gymnasium's MJCF files, pybullet_data's "
        "URDFs: the twenty of tests/test_robot_models.py), each from its file's pose with contacts, an MJCF "
        "file with its own timestep and actuators (a URDF has neither: the default dt):",
        "",
        *header, *robot_rows,
        "",
        ROBOTS_PROSE,
        "",
        f"gymnasium's models driven as a learner drives them: every actuator given a random control "
        f"within its ctrl_range, held {DRIVE_HOLD} steps (gymnasium's frame_skip for most), the same "
        "controls in both engines, set within the timed steps (`set_control`; MuJoCo's `data.ctrl`):",
        "",
        *header, *driven_rows,
        "",
        DRIVEN_PROSE,
        "",
        "Scale: chains of capsules on ball joints hooked at one end, and square nets of spheres on ball "
        "joints hung by two corners (every square of four a loop), from make_scenes.py: the hooks 10 % "
        "closer together than the edge between them is long (`--slack 0.1`), the net released as a "
        f"trough; the {STRAIGHT_NET} × {STRAIGHT_NET} net also with that edge straight (`--slack 0`). "
        "Plot: docs/plots/joints_scale.png.",
        "",
        *header, *scale_rows,
        *([""] + [f"- {note}" for note in notes if note] if any(notes) else []),
        "",
        NETS_PROSE,
        "",
        "Soft joints (`joint_solve = \"soft\"`; the nets from `make_scenes.py net --soft`, the shipped "
        "scenes set so after loading; semi-implicit Euler steps them): the same scenes, their joints held by the velocity solve alone, each row's error fed back at the ERP rate (Box2D "
        "v3's soft step), no projection and no factorization. Goal: the nets' own, real time at 32 × 32 (16 ms "
        "a step) and 100 ms at 100 × 100, else 3× MuJoCo's (MuJoCo's copy leaves out the loops' joints, as "
        "above). The last column: the largest distance between a joint's two anchors at the end of any "
        "step of the judged window, which starts after the timed blocks (a net's whip and its rest, on "
        "edges of 0.3 m; a pendulum's or a chain's swing after its first seconds, whose gaps were larger: "
        "docs/fidelity.md, \"Soft joints\").",
        "",
        header[0] + " largest joint gap, mm |", header[1] + "---|",
        *soft_rows,
        "",
        SOFT_PROSE,
    ])


if __name__ == "__main__":
    print(main(quick="--quick" in sys.argv))
