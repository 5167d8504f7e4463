"""What a setting changes in this scene: the sentence a user reads after toggling it.

A setting's meaning is the same everywhere (`physics.core.choices`), but whether it shows depends on the
scene: dropping the gyroscopic term changes nothing on a body that spins about an axis of equal
moments, and counteraction changes nothing where no impulse reaches a body carrying others. Each
sentence says what changes here and which readout shows it, or that nothing here depends on it.
"""
import numpy as np

from physics.core import choices


VISIBLE_SPIN = 0.5      # rad/s: slower spins (a crate turning with the tank's hull) show no precession
VISIBLE_TORQUE = 1e-3   # |ω × Iω| / (I_max |ω|²) below this: the spin is about a principal axis


def spinning_asymmetric(sim):
    """The dynamic nodes whose gyroscopic term ω × Iω shows: spinning faster than VISIBLE_SPIN,
    with unequal principal moments, off their principal axes now or about an unstable one (the
    T-handle about its intermediate axis: the term is small now and flips it later;
    `physics.dynamics.stability`) (names, in node order)."""
    from physics.dynamics.stability import spin_eigenvalues     # here: it imports scipy, which the app need not load to start

    world = sim.world()
    W = world.angular_velocity
    omega_world = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)
    names = []
    for i in np.flatnonzero(np.asarray(sim.motion) == "dynamic"):
        inertia = np.asarray(sim.inertia_body[i], float)
        omega_body = world.transform.rotation[i].T @ omega_world[i]
        speed2 = float(omega_body @ omega_body)
        torque = np.cross(omega_body, inertia * omega_body)
        if speed2 > VISIBLE_SPIN ** 2 and (np.linalg.norm(torque) > VISIBLE_TORQUE * float(inertia.max()) * speed2
                                           or spin_eigenvalues(inertia, omega_body)[-1].real > 1e-3 * np.sqrt(speed2)):
            names.append(str(sim.names[i]))
    return names


def carriers(sim):
    """Dynamic nodes that carry loose dynamic descendants (the car and its cargo): where
    counteraction decides whether an impulse on the carrier moves what it carries
    (`physics.tools.compare.loose_children`)."""
    from physics.tools.compare import loose_children
    loose, nearest = loose_children(sim)
    return sorted({str(sim.names[nearest[i]]) for i in loose})


def sentence(sim, name, value):
    """One line: `name` set to `value` (its shown form), what that changes in `sim`'s scene and
    where to see it."""
    shown = value if isinstance(value, str) else ("on" if value is True else "off" if value is False else value)
    if name == "gyroscopic":
        spinning = spinning_asymmetric(sim)
        if not spinning:
            return (f"gyroscopic {shown}: no body here spins off a principal axis of unequal moments, so nothing "
                    "changes to see (try the T-handle)")
        body = spinning[0]
        if value == "off":
            return (f"gyroscopic off: {body} keeps its angular velocity in its own axes: no precession, no flip; "
                    "watch w in the inspector")
        return (f"gyroscopic {shown}: {body} feels w x Iw again and precesses or flips "
                f"({choices.GYROSCOPIC.meanings[value]}); watch w in the inspector")
    if name == "integrator":
        if sim.settings.joint_solve == "soft" and len(getattr(sim.scene, "joints", ())):
            return (f"integrator {shown}: this scene's joints are soft, so it steps by {choices.SOFT_SCHEME} "
                    "whatever the integrator (joint_solve = projected to see it)")
        return f"integrator {shown}: {choices.INTEGRATOR.meanings[value]}; watch the energy plot (Plots)"
    if name == "counteract":
        held = carriers(sim)
        if not held and sim.model.any_own_motion:
            return (f"counteraction {shown}: every body here that another carries is in a joint, and a joint's "
                    "bodies keep their own motion whatever the setting, so nothing changes (try the car)")
        if not held:
            return (f"counteraction {shown}: no body here carries another, so no impulse has anything to pass on "
                    "(try the car)")
        if value:
            return (f"counteraction on: an impulse on {held[0]} leaves what it carries moving as before (the cargo "
                    "flies on in a crash); see the Compare plot")
        return (f"counteraction off: what {held[0]} carries takes its impulses with it (the cargo stops with the "
                "car), its support against gravity too (a loose body resting on it rises off it); see the Compare plot")
    if name == "joint_solve":
        if not len(getattr(sim.scene, "joints", ())):
            return f"joint_solve {shown}: no joint here, so nothing changes to see (try the chain)"
        return (f"joint_solve {shown}: {choices.JOINT_SOLVE.meanings[value]}; watch the joints' largest gap and "
                "the energy in Stats")
    return f"{name}: {shown}"
