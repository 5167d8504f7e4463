"""RATTLE's retry and its triple jump: the forms of a sub-step whose joints RATTLE steps.

`rattle_substep` takes a sub-step (physics.pipeline.stages' `substep`) and, where the joints' position
projection fails (no root along the start-of-step rows, or a start too far off the constraint),
puts the joints' island back (`Undo`) and takes the sub-step again as two halves, while every
other body keeps the step it took (`StepContext.active`), down to 2^-RATTLE_HALVINGS of it;
`After` keeps what the failed attempt did outside the island. `composes_rattle` says where
lie-midpoint-4's step is RATTLE's constrained step composed by the triple jump (4th order). The
step (physics.pipeline.step) calls these; the stages know nothing of them but the island they are
told to step (`StepContext.active`) and `OutsideIsland`, which a half raises where it reaches out.
Each pass of the stage list and each retry is counted (`SubstepCount`), and a retry's halves are
timed as a "retry" span while a profile recorder is on (physics.core.profile).
"""
import math

import numpy as np

from physics.core import profile
from physics.core.compiled import bind, generation, kernel
from physics.core.choices import INTEGRATOR_TRAITS
from physics.dynamics.integrators import TRIPLE_JUMP
from physics.dynamics.sleeping import island_of
from physics.pipeline import stages
from physics.pipeline.stages import STALE, OutsideIsland, judged, solver_state, step_context

# A RATTLE sub-step is taken again as two halves, down to 2^-RATTLE_HALVINGS of it
# (`rattle_substep`), where its position projection finds no root along the start-of-step rows (a
# whip crack of the chain: the links turn so far within the step that J(q) M⁻¹ J₀ᵀ turns singular
# before g = 0), or where the drift departed from the joint rows' tangent by more than
# RATTLE_STEP_ERROR of the joint's lever before the projection (`_start_error`): a link of lever r
# turning by ωh in the step leaves it by r (ωh)²/2 beyond the tangent, so 0.016 is a turn of
# 0.18 rad (2 mm on the chain's 0.125 m half-links). Past it a whip
# crack's step costs or adds joules of the chain's 98 J: at 0.024–0.032 the 10 s loss of chain.toml
# ranged from −2 % to 17 % with the velocity solver's iteration count, at 0.016 from 3 % to 6 %.
RATTLE_HALVINGS = 4
RATTLE_STEP_ERROR = 0.016
# Halving helps a projection that left J₀ where the step is long for the links' turn (a crack:
# the departure falls as h²). Where it started within RATTLE_CRACK_ERROR of a lever (a turn of
# 0.045 rad in the step) or left J₀ with less than RATTLE_LEFT_ERROR of one still to project, the
# stall is the configuration's, at any h: a net of ball joints near a plane (a planar framework,
# infinitesimally flexible out of its plane) makes RATTLE's Newton system nearly singular, and its
# iteration along J₀ converges only linearly. The current rows' step (Gauss–Newton) then stands:
# halving finds the same stall at every level (the 8 × 8 net would take 18 sub-steps for each
# nominal one; with its stalls standing it takes 2–3, and the 6 × 6 net loses 7.5 % of its energy
# in 5 s, against 8.5 % with every stall halved). The chain's cracks do not leave J₀.
RATTLE_CRACK_ERROR = 1e-3
RATTLE_LEFT_ERROR = 1e-6
# an attempt certain to be taken again as halves past these stops (`StepContext.abandon`)
ABANDON = (RATTLE_CRACK_ERROR, RATTLE_LEFT_ERROR, RATTLE_STEP_ERROR)
# A step takes at most STEP_BUDGET times the passes it asked for: a retry (or a halving ahead)
# that would leave too few for the passes still owed is refused, and the attempt's result stands,
# as at the last halving (but see STANDING_ERROR). A timed impulse is an input, the exception the
# budget leaves out: the step it struck is halved as deep as it needs (`_start_error`). A stepping budget is what a real-time caller needs (a frame's time is
# bounded); the halvings it refuses are the rare deep cascades (a crate landing on the rope
# bridge asked for 7 times a step's passes, the flat 6 × 6 net for 14).
STEP_BUDGET = 2.0
# Only an attempt whose projection met the joints stands so: within STANDING_ERROR (m, rad) of
# every row. One that did not (a net near a plane, whose Newton stalls) is halved whatever the
# budget: its error would be the next step's start, and a flat net so left diverged in 3 s. An
# attempt knows before it runs that its budget holds no retry (`StepContext.final`: no room left, or
# the last halving: it stands if within STANDING_ERROR), and its projection then takes more
# iterations along the current rows
# (`physics.constraints.rattle.FINAL_ROWS`): the 64 × 64 net's whipping attempts stopped 1 to 3
# times STANDING_ERROR off after the usual count and were halved past the budget, up to 4.5 times
# a step's sub-steps; with the longer count they meet it, and no step of its first half second
# takes more than twice its sub-steps (at 0.5 s a knot pressed into the ground stops it: README).
STANDING_ERROR = 1e-5


class SubstepCount:
    """How a run's sub-steps went, counted since its simulation was made or reset (diagnostics, not
    state: no hash, snapshot or recording holds them; a timeline's replays count again).
    nominal              passes of the stage list the steps asked for: settings.substeps a step, each
                         three where lie-midpoint-4 composes RATTLE's step by the triple jump
    taken                passes run, counted as each starts: each failed attempt and each half of a
                         retry counts (taken / nominal is 1 where nothing was taken again)
    retried_left         attempts taken again as halves because the position projection left the
                         start-of-step rows
    retried_start_error  attempts taken again because the drift started past RATTLE_STEP_ERROR of a lever
    halved_ahead         sub-steps halved before an attempt, the last start error predicting the bound passed
    refused              retries and halvings ahead the step's budget refused (`STEP_BUDGET`): the attempt stood
    worst_step           the largest taken / nominal of a single step (1 before any); last_step, the last step's"""

    def __init__(self):
        self.nominal = self.taken = self.retried_left = self.retried_start_error = self.halved_ahead = 0
        self.refused = 0
        self.worst_step = self.last_step = 1.0
        # the step under way (`step_begun`, `later`, `room`): its counts as it began, the nominal
        # passes after the one running, the halves still owed within it; whether a timed impulse
        # struck in it
        self._step_nominal = self._step_taken = self.later = self.owed = 0
        self.struck = False

    def step_begun(self):
        """A step begins: its budget counts from here."""
        self._step_nominal, self._step_taken, self.later, self.owed = self.nominal, self.taken, 0, 0
        self.struck = False

    def room(self, passes):
        """Whether the step under way may run `passes` more passes (a retry's halves) and still run
        every pass it owes (the halves waiting, `owed`, and the nominal passes after this one,
        `later`, one each) within STEP_BUDGET times its nominal passes; always, in a step a timed
        impulse struck (`struck`: an input, the exception the budget leaves out)."""
        nominal = self.nominal - self._step_nominal + self.later
        return self.struck or self.taken - self._step_taken + passes + self.owed + self.later <= STEP_BUDGET * nominal

    def step_done(self, nominal, taken):
        """A step asked for `nominal` passes and ran `taken`."""
        self.last_step = taken / nominal if nominal else 1.0
        if self.last_step > self.worst_step:
            self.worst_step = self.last_step

    def as_dict(self):
        """The counts by name, with "per_nominal" (taken / nominal) and "retries" (both causes)."""
        out = {name: getattr(self, name) for name in ("nominal", "taken", "retried_left", "retried_start_error",
                                                      "halved_ahead", "refused", "worst_step", "last_step")}
        out["per_nominal"] = self.taken / self.nominal if self.nominal else 1.0
        out["retries"] = self.retried_left + self.retried_start_error
        return out


def rattle_substep(model, data, settings, work, context, halvings=RATTLE_HALVINGS, whole=True, struck=False):
    """A sub-step whose joints are stepped by RATTLE; where its position projection finds no root of
    g = 0 along the start-of-step rows (the solvability of RATTLE's nonlinear system needs h small
    against how far the links turn) or starts more than RATTLE_STEP_ERROR of a joint's lever off the
    constraint, the joints' island is put back where it started (`Undo`) and takes the sub-step
    again as two halves, while every other body keeps the step it took: each half is RATTLE's step,
    where a projection along other directions (the current rows) is not RATTLE's and was measured
    to add or remove up to 17 J of the chain's 98 J in one whip crack. Where a half brings the
    island within reach of a body outside it (the island moved past the travel its attempt
    predicted: a timed impulse it took in the first half, a crack's speed), that body's step is
    taken already: the attempt's result then stands, as at the last halving. Where the last sub-step's
    start error, scaled by h², predicts the bound passed, the halves are taken at once, by every
    body the sub-step steps (the island is known only once prepare has run; the hint is part of the
    Data). At the last halving the projection's own fallback stands. `whole`: whether the start
    error the tangent carries counts (`_start_error`); the halves of a retry that only it caused
    are judged without it. `struck`: a timed impulse struck this sub-step (the halves of one it
    struck are judged by the whole start error and halved beyond the step's budget)."""
    h, solver, counts = context.h, work.solver, work.substeps
    events = data.next_event
    if not halvings:
        counts.taken += 1       # before the pass: one a half stops (it reached outside the island) counts too
        stages.substep(model, data, settings, work, judged(work, context, True, context.abandon))
        _hint(data, _start_error(solver, data.next_event != events, False), h)
        return

    # the start error grows as h²: where the last sub-step's predicts one past the bound, the
    # halves are taken at once instead of after a failed attempt (in Python's floats, numpy's scalars
    # cost more; a hint at h = 0, as a snapshot may hold one, predicts the bound passed wherever it
    # holds an error: numpy's infinity, the same answer; `item`, not `tolist`: no list to allocate)
    hint = data.rattle_hint
    hinted, at = hint.item(0), hint.item(1)
    if (hinted * (h / at) * (h / at) if at else hinted * math.inf) > RATTLE_STEP_ERROR:
        if counts.room(2):
            counts.halved_ahead += 1
            _halves(model, data, settings, work, context, halvings, context.active, whole, struck)
            return
        counts.refused += 1
    counts.taken += 1
    final = not counts.room(2)      # (no room for a retry's halves: the attempt stands, within STANDING_ERROR)
    if final:
        attempt_context = judged(work, context, True, context.abandon)
    elif context.active is None and work.all_jointed:
        # the island is every body (`Undo.take`), so an attempt whose projection starts past
        # RATTLE_STEP_ERROR or leaves J₀ as `left` below says is certain to be taken again as halves,
        # its result never standing: the projection stops there (one stopped at its start counts
        # among the start error's retries, whether or not it would have left J₀)
        attempt_context = judged(work, context, context.final, ABANDON)
    else:
        attempt_context = context
    undo = stages.substep(model, data, settings, work, attempt_context, after_prepare=_take_undo, halvings=halvings)
    struck = struck or data.next_event != events
    counts.struck |= struck
    start_error = _start_error(solver, struck, whole)
    _hint(data, _start_error(solver, struck, False) if whole and not struck else start_error, h)
    left = (solver.joint_left_start_rows and solver.joint_left_error > RATTLE_LEFT_ERROR
            and start_error > RATTLE_CRACK_ERROR)
    if not left and start_error <= RATTLE_STEP_ERROR:
        return
    if not counts.room(2) and solver.joint_error <= STANDING_ERROR:
        counts.refused += 1
        return
    # halved once for what the tangent carries: the halves are judged by their curvature
    whole = struck or _start_error(solver, struck, False) > RATTLE_STEP_ERROR or left
    if left:
        counts.retried_left += 1
    else:
        counts.retried_start_error += 1
    started = profile.mark()
    # the island as the attempt left it, the result that stands where a half reaches outside it
    attempt = None if undo.active is None else Undo(model, data, work, undo.active)
    after = None if undo.active is None else After(data, work, undo.shapes(model, work))
    undo.put_back(model, data, work)
    stands = False
    try:
        _halves(model, data, settings, work, context, halvings, undo.active, whole, struck)
    except OutsideIsland:
        if attempt is None:
            raise
        attempt.put_back(model, data, work)
        stands = True
    finally:    # (also where a half raised: a stopped run's cache and contacts stay whole)
        if after is not None:
            after.put_back(model, data, work, stands)
        profile.lap("retry", started)


def _halves(model, data, settings, work, context, halvings, active, whole, struck):
    """The sub-step `context` taken again as two halves by the bodies `active` (all: None), one
    halving nearer the last (`rattle_substep`): each half's context built as it starts, the second
    owed while the first runs. The first half factors its own first matrix, after an attempt put
    back or not (the hint's halves): a retried sub-step is the halves taken at once, bit for bit."""
    counts = work.substeps
    work.solver.forget_factors()
    for owed in (1, 0):
        counts.owed += owed
        try:
            half = step_context(model, data, settings, work, 0.5 * context.h, context.integrator, active,
                                context.composed)
            rattle_substep(model, data, settings, work, half, halvings - 1, whole, struck)
        finally:
            counts.owed -= owed


def _hint(data, start_error, h):
    """The RATTLE hint (`Data.rattle_hint`) set to this sub-step's start error and h (item by item:
    a slice assignment from a tuple costs a microsecond)."""
    hint = data.rattle_hint
    hint[0] = start_error
    hint[1] = h


def _start_error(solver, struck, whole):
    """The start error a RATTLE sub-step is judged by. The drift's departure from the joint rows'
    tangent (`SceneSolver.joint_curvature_error`) is what halving shrinks, as h², and what the hint
    predicts from. What the tangent carries, the rest of the whole start error
    (`SceneSolver.joint_start_error`), RATTLE's first Newton step takes whole at any h: a velocity
    solve that left the joint rows unconverged against a hard contact. That error says the solve
    met a conflict the halves resolve better, once (`whole`: the halves of a retry it caused are
    judged by their curvature alone). A sub-step that left out the velocity solve
    (`physics.constraints.solver.PreparedStep.alone`) met no such conflict: what its tangent carries
    is the velocity an input gave before the step (a drag, a flick), and its curvature alone judges
    it (judged whole, a chain dragged by its middle link was taken again at every sub-step). Where a
    timed impulse struck in the sub-step (`struck`), after its prepare stage, the whole start error
    counts at every level: it says how far the blow carries the island past the contacts prepared
    for it, which the halves prepare again."""
    alone = solver.step is not None and solver.step.alone
    return solver.joint_start_error if struck or (whole and not alone) else solver.joint_curvature_error


class Undo:
    """What a RATTLE retry (`rattle_substep`) puts back of a sub-step: the state at its start of the
    bodies its halves redo. That is the joints' island: the bodies of every joint (RATTLE's position
    step is one Newton system over all of them), every body the prepare stage found within reach of
    one (`SceneSolver.pair_bodies`, boxes grown by the whole sub-step's travel), whole trees, and so
    on, closed (physics.dynamics.sleeping.island_of). Put back: those bodies' rows (local pose and velocity,
    omega_body, the solver's share of their accelerations), the joints' impulses, the contact
    cache's entries of their shapes as the prepare stage left them (the warm starts from before the
    attempt's solve; the persistent manifolds as its narrow phase built them at the start-of-step
    poses), the kinematic nodes' motion (the halves step them with the island), the clock, the next
    timed impulse, the RATTLE hint and the runaway check's reference. An island's sleep timers stay
    as the attempt left them: the sub-step's time passed once, and an island with a joint in it
    never falls asleep (physics.model.model's `sleepable`); the whole world's are put back, as its halves
    count them again.

    Every other body has taken its whole step and keeps it: none of its rows is copied, and the
    halves neither step it nor solve a row of it (`StepContext.active`); where a half brings the
    island within its reach, the attempt's result stands (`OutsideIsland`). An island of every body
    is the whole world (active None): the halves step it as a sub-step does."""

    def __init__(self, model, data, work, active, room=None):
        self.active = active
        cache = work.solver.cache
        if active is None:
            # (the cache's own arrays: `put_back` comes before the next narrow phase)
            self.slots, self.cache = slice(None), cache.held()
        else:
            self.slots, self.cache = np.flatnonzero(active), cache.part(self.shapes(model, work))
        local = work.hierarchy.local
        nodes = model.dyn[self.slots]
        # the copies go into `room`'s arrays (an Undo done with: `take`) where they fit, else new ones
        into = _kept(room, "local", 3) or (None,) * 3
        self.local = (_taken(local.translation, nodes, into[0]), _taken(local.rotation, nodes, into[1]),
                      _taken(local.velocity, nodes, into[2]))
        self.omega_body = _copied(data.omega_body[self.slots], _kept(room, "omega_body"))
        self.constraint_acceleration = _copied(data.constraint_acceleration[self.slots],
                                               _kept(room, "constraint_acceleration"))
        # the whole world's halves wake, hold and count still time again (a retry's island's do not),
        # where any of it can change: a body asleep at the start, or one that may fall asleep
        sleep_changes = active is None and (model.may_sleep or np.count_nonzero(data.sleep.asleep) > 0)
        self.sleep = _copies(data.sleep, _kept(room, "sleep", len(data.sleep))) if sleep_changes else None
        self.kinematic = _copies(data.kinematic, _kept(room, "kinematic", len(data.kinematic))) if model.kin.size else ()
        joints = work.solver.joints
        self.impulse = _copied(joints.impulse, _kept(room, "impulse")) if joints is not None else None
        self.time, self.next_event = data.time, data.next_event
        self.runaway = work.runaway.reference, work.runaway.due
        self.hint = _copied(data.rattle_hint, _kept(room, "hint"))
        self.frame_work = None if data.frame_work is None else _copied(data.frame_work, _kept(room, "frame_work"))

    @classmethod
    def take(cls, model, data, work, context, halvings=None):
        """At a sub-step's start, after its prepare stage: the island of the joints as it found it,
        within the bodies the sub-step steps (`context.active`). A sub-step `halvings` from the last
        level (`rattle_substep`) is done with the last Undo taken at its level, whose arrays this
        one's copies then go into (`Workspace.undo_rooms`): the whole world's, a scene where every body
        is in a joint, is then copied without an allocation, and an island's where it has as many
        bodies as the last one (None: in arrays of its own)."""
        solver = work.solver
        if context.active is None and work.all_jointed:     # every body in a joint: the island is all
            if halvings is None:
                return cls(model, data, work, None)
            room = work.undo_rooms.get(halvings)
            again = room._again if room is not None else None
            # the same sources (`_whole_sources`): the model's and the Workspace's are its topology's,
            # the Data's arrays are written in place (`Data.load`), frame rows are not copied by one
            # call, and the joints' impulses are the carried joints' (a restore may build others)
            if _still_bound(again, data, solver.joints):
                again[2]()        # (the copies a new Undo would make, into the same arrays)
                room.cache = solver.cache.held()
                room.time, room.next_event = data.time, data.next_event
                room.runaway = work.runaway.reference, work.runaway.due
                return room
            undo = work.undo_rooms[halvings] = cls(model, data, work, None, room)
            undo._again = undo._copy_again(model, _whole_sources(model, data, work))
            return undo
        edges = [solver.pair_bodies, solver.joints.body]
        if model.any_parented:      # a tree is stepped whole: parents first, at every stage
            carried = np.flatnonzero(model.nearest_dynamic_slot >= 0)
            edges.append(np.stack([carried, model.nearest_dynamic_slot[carried]], axis=1))
        pairs = np.concatenate([np.asarray(e, np.int64).reshape(-1, 2) for e in edges])
        active = island_of(pairs, model.dyn.size, np.ascontiguousarray(solver.joints.body.reshape(-1)))
        if context.active is not None:
            active &= context.active
        if halvings is None:
            return cls(model, data, work, None if active.all() else active)
        # an island's copies likewise go into the last island Undo's arrays at this level, where
        # the island has as many bodies (a rope bridge's planks with its ropes: the same island)
        key = (halvings, "island")
        undo = work.undo_rooms[key] = cls(model, data, work, None if active.all() else active,
                                          work.undo_rooms.get(key))
        return undo

    _again = None   # a whole-world Undo's copies as one call: (its sources, `generation()`, the call, the
    #                 call that puts them back), `take`, `put_back`

    def _copy_again(self, model, sources):
        """The copies this whole-world Undo made, `sources` (`_whole_sources`) into its own arrays, as
        one bound call (`_copy_rows`), with the sources it holds for (by identity), the kernels'
        `generation()` it was bound in (a later one binds it again, straight to a version compiled
        since) and the bound call that copies them back (`put_back`); None where sleep,
        kinematic or frame rows are copied too, or where `_copy_rows` cannot take the arrays as they are."""
        if sources[0] is None:
            return None
        local, flat = sources[:3], sources[3:]
        into = self.local + (self.omega_body, self.constraint_acceleration, self.impulse, self.hint)
        if not all(a.dtype == np.float64 and a.flags.c_contiguous for a in local + flat + into):
            return None
        rows = lambda arrays: tuple(a.reshape(len(a), -1) for a in arrays)
        nodes, flat_from, flat_into = np.ascontiguousarray(model.dyn, np.int64), tuple(a.reshape(-1) for a in flat), \
            tuple(a.reshape(-1) for a in into[3:])
        call = bind(_copy_rows, nodes, rows(local), rows(into[:3]), flat_from, flat_into, False)
        back = bind(_copy_rows, nodes, rows(local), rows(into[:3]), flat_from, flat_into, True)
        return sources, generation(), call, back

    def shapes(self, model, work):
        """(S,) bool: the shapes of the island's bodies."""
        solver = work.solver
        body = solver.body_of_node[solver.shapes.node]
        return (body >= 0) & np.append(self.active, False)[body]

    def put_back(self, model, data, work):
        """The island back where this was taken: a whole-world Undo's copies by the call bound with
        them (`_copy_again`: no index arrays, none of numpy's fancy assignments, which allocated 3 KiB
        a retry of the chain), where it is given the arrays they were bound to."""
        solver = work.solver
        again = self._again
        if _still_bound(again, data, solver.joints) and self.sleep is None and not self.kinematic:
            again[3]()      # (the local state, omega_body, the constraint acceleration, impulses and hint)
        else:
            self._put_back_rows(model, data, work)
        work.calls.scatter_kinematic()
        if work.drives is not None:     # a driven node's acceleration as at this pose (physics.dynamics.driving)
            work.drives.report(data.kinematic, work.hierarchy.local.acceleration)
        if self.active is None:
            solver.cache.put_held(self.cache)
        else:
            solver.cache.restore(self.cache)
        data.time, data.next_event = self.time, self.next_event
        if self.frame_work is not None:
            data.frame_work[:] = self.frame_work
        work.runaway.reference, work.runaway.due = self.runaway
        solver.forget()
        work.world = STALE

    def _put_back_rows(self, model, data, work):
        """`put_back`'s copies one by one, by the island's rows (`slots`)."""
        local, nodes = work.hierarchy.local, model.dyn[self.slots]
        local.translation[nodes], local.rotation[nodes], local.velocity[nodes] = self.local
        data.omega_body[self.slots] = self.omega_body
        data.constraint_acceleration[self.slots] = self.constraint_acceleration
        for array, rows in zip(data.sleep, self.sleep or ()):
            array[:] = rows
        for array, rows in zip(data.kinematic, self.kinematic):
            array[:] = rows
        if self.impulse is not None:
            work.solver.joints.impulse[:] = self.impulse
        data.rattle_hint[:] = self.hint


# `Undo.take` as one object: a classmethod read from its class is a new bound method at every read
_take_undo = Undo.take


class After:
    """What a RATTLE retry keeps of its failed attempt for the bodies outside the island (`Undo`):
    the kinematic nodes' motion at its end (the halves end there too, to round-off), the contact
    cache's entries of the other shapes, and its contact points and solver residual, put back once
    the halves are done: the step's contacts are the island's last half's and the others' from the
    attempt; the residual is the last half's. Where the attempt's result stands (`OutsideIsland`),
    its contacts and residual are the step's."""

    def __init__(self, data, work, inside):
        solver = work.solver
        self.kinematic = tuple(a.copy() for a in data.kinematic)
        self.cache = solver.cache.part(inside, touching=False)
        # (copies: the residual is a view of the solve's room and the contacts of the narrow phase's,
        # which the halves' solves and narrow phases write again)
        contacts = None if solver.contacts is None else solver.contacts.copy()
        self.inside, self.contacts, self.residual = inside, contacts, solver.residual.copy()

    def put_back(self, model, data, work, attempt_stands=False):
        for array, rows in zip(data.kinematic, self.kinematic):
            array[:] = rows
        work.calls.scatter_kinematic()
        if work.drives is not None:     # a driven node's acceleration as at this pose (physics.dynamics.driving)
            work.drives.report(data.kinematic, work.hierarchy.local.acceleration)
        solver = work.solver
        solver.cache.merge(self.cache)
        if attempt_stands:
            solver.contacts, solver.residual = self.contacts, self.residual
        elif self.contacts is not None:
            c = self.contacts
            others = c.take(~(self.inside[c.shape_a] | self.inside[c.shape_b]))
            solver.contacts = others if solver.contacts is None else type(c).joined(solver.contacts, others)
        work.world = STALE


def _whole_sources(model, data, work):
    """What a whole-world `Undo` copies, where its copies can be one call (`Undo._copy_again`): the local
    translation, rotation and velocity (every node's: the dynamic ones are taken), omega_body, the
    constraint acceleration, the joints' impulses and the RATTLE hint; (None,) where sleep, kinematic
    or frame rows are copied too (the sub-step's sleep can change, kinematic nodes move, a moving
    frame's work is counted)."""
    joints = work.solver.joints
    # (no body sleeps where none may: the sleep stage and a restore put only those that may to sleep)
    if model.kin.size or joints is None or data.frame_work is not None or model.may_sleep:
        return (None,)
    local = work.local_arrays       # (the Workspace's views, made once a topology)
    return (local.translation, local.rotation, local.velocity, data.omega_body, data.constraint_acceleration,
            joints.impulse, data.rattle_hint)


def _still_bound(again, data, joints):
    """Whether a whole-world Undo's bound copies (`Undo._copy_again`) still copy what they were bound
    to: bound in this generation of the kernels, no moving frame's work to copy, the Data's
    `omega_body` and the joints' impulses the arrays they were bound to (a restore may build others)."""
    return again is not None and again[1] == generation() and data.frame_work is None \
        and again[0][3] is data.omega_body and again[0][5] is getattr(joints, "impulse", None)


@kernel(refcounts=False)
def _copy_rows(nodes, rows, taken, arrays, copies, back):
    """taken[i][k] = rows[i][nodes[k]] for each (N, w) array of `rows` (the local state's, by node),
    and copies[i][:] = arrays[i][:] (flat): a whole-world `Undo`'s copies, the same bits; `back`:
    the other way, rows[i][nodes[k]] = taken[i][k] and arrays[i][:] = copies[i][:] (`Undo.put_back`:
    one kernel, which every sub-step that takes an Undo has loaded before its first retry)."""
    for i in range(len(rows)):
        source, target = rows[i], taken[i]
        for k in range(nodes.shape[0]):
            for c in range(source.shape[1]):
                if back:
                    source[nodes[k], c] = target[k, c]
                else:
                    target[k, c] = source[nodes[k], c]
    for i in range(len(arrays)):
        source, target = arrays[i], copies[i]
        for e in range(source.shape[0]):
            if back:
                source[e] = target[e]
            else:
                target[e] = source[e]


def _kept(room, name, count=None):
    """An Undo's copies `name` that `room` (an Undo done with, or None) holds, where it holds `count`
    of them (any count: None), else None (new ones are made)."""
    arrays = getattr(room, name) if room is not None else None
    return arrays if arrays is None or count is None or len(arrays) == count else None


def _copies(arrays, into):
    """Each of `arrays` copied (`_copied`) into the matching one of `into` (None: new arrays)."""
    into = into or (None,) * len(arrays)
    return tuple(map(_copied, arrays, into))


def _copied(values, into):
    """`values` copied into `into` where it has their shape and type, else into a new array."""
    if into is None or into.shape != values.shape or into.dtype != values.dtype:
        return values.copy()
    np.copyto(into, values)
    return into


def _taken(values, rows, into):
    """values[rows] along the first axis, into `into` as `_copied` does (`rows` in range: "clip" takes
    them unbuffered, numpy's "raise" through a copy)."""
    if into is None or into.shape != (len(rows),) + values.shape[1:] or into.dtype != values.dtype:
        return values.take(rows, axis=0)
    return values.take(rows, axis=0, out=into, mode="clip")


def composes_rattle(model, data, settings, work, h, integrator):
    """Whether a sub-step h of `integrator` (the step's: lie-midpoint-4, or rk4's with joints,
    physics.core.choices.JOINTED_SCHEME) with joints is RATTLE's constrained lie-midpoint step
    composed by the triple jump (g1 h, g2 h < 0, g1 h): where every joint is an equality (no limit,
    motor, dry friction, clamped actuator or rope; springs, dampers, armatures and the other
    actuators RATTLE's step takes: `physics.constraints.rattle`, "Joint terms"), none of them a
    spring or damper too stiff for this sub-step (`SceneSolver.choose_joint_terms`), and no
    contact may become active within it (no two shapes within reach of g1 h
    of travel, the farthest the composition strays: `SceneSolver.may_touch`). Contacts, limits and
    ropes are inequalities, motors velocity targets, solved at velocity level with speculative
    margins and restitution: they have no meaning over a backward sub-step. Where one may act, the
    free motion alone is composed and the joints are stepped once (2nd order in the joints)."""
    if not INTEGRATOR_TRAITS[integrator].triple_jump or not work.solver.joints_equalities or work.solver.joints_stiff:
        return False
    if not len(work.solver.shapes):
        return True
    world, centre, _, velocity, _ = solver_state(model, data, settings, work)
    return not work.solver.may_touch(world, centre, velocity, TRIPLE_JUMP[0] * h)
