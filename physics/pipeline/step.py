"""One step of settings.dt: settings.substeps sub-steps, each the stages of physics.pipeline.stages
in one of their forms (Box2D v3's b2SolverStep over its stages): RATTLE's, with its retry and
triple jump (physics.pipeline.retry), the free bodies' form (`stages.FREE_STAGES`, one fused
pass), or the plain list. Each times
its stages by their names while a profile recorder is on (physics.core.profile), and counts the
passes it asked for and ran (`physics.pipeline.retry.SubstepCount`, `work.substeps`).
"""
from physics.core.choices import stepped_integrator
from physics.dynamics.integrators import TRIPLE_JUMP
from physics.pipeline import stages
from physics.pipeline.retry import composes_rattle, rattle_substep
from physics.pipeline.stages import fused, step_context


def step(model, data, settings, work, first):
    """One step of settings.dt in settings.substeps equal sub-steps, each the STAGES or one of their
    forms (module docstring). `first`: the first sub-step of a run of free-body sub-steps checks the
    state it starts from too (`free_substep`); returns whether the next one still must."""
    h = settings.dt / settings.substeps
    free = fused(model, settings, work)
    work.refresh(settings, data)
    counts = work.substeps
    nominal, taken = counts.nominal, counts.taken
    counts.step_begun()
    if work.solver is not None:     # a step's bits depend on its start state alone (a restore's too)
        work.solver.forget_factors()
    # rk4 with joints runs lie-midpoint-4, soft joints semi-implicit Euler (physics.core.choices)
    integrator = stepped_integrator(settings.integrator, work.solver is not None and bool(len(work.solver.joint_specs)),
                                    settings.joint_solve == "soft")
    try:
        # (index loops: a range's iterator at every step, and on the triple jump an enumerate and its
        # tuples' iterator, were objects alive together through the sub-steps: about half of the
        # chain's steady step's allocation)
        substeps, i = settings.substeps, 0
        while i < substeps:
            stages.choose_joint_terms(model, data, settings, work, integrator)
            c = step_context(model, data, settings, work, h, integrator)
            later = substeps - 1 - i       # sub-steps after this one (the retry's budget)
            if c.rattle and composes_rattle(model, data, settings, work, h, integrator):
                # lie-midpoint-4 with equality joints and no contact within reach: the whole
                # constrained step (free motion, RATTLE) composed by the triple jump (4th order)
                counts.nominal += len(TRIPLE_JUMP)
                k = 0
                while k < len(TRIPLE_JUMP):
                    counts.later = len(TRIPLE_JUMP) * (later + 1) - 1 - k
                    rattle_substep(model, data, settings, work, step_context(model, data, settings, work,
                                                                             TRIPLE_JUMP[k] * h, "lie-midpoint",
                                                                             composed=True))
                    k += 1
            elif c.rattle:      # (its passes are counted where they run: physics.pipeline.retry)
                counts.nominal += 1
                counts.later = later
                rattle_substep(model, data, settings, work, c)
            elif free:
                counts.nominal += 1
                counts.taken += 1
                stages.free_substep(model, data, settings, work, c, first)
                first = False
            else:
                counts.nominal += 1
                counts.taken += 1
                stages.substep(model, data, settings, work, c)
            i += 1
    finally:        # (a step a divergence stops counts what it asked for and ran too)
        counts.step_done(counts.nominal - nominal, counts.taken - taken)
    return first
