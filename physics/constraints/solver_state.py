"""What the contact and joint solver carries from one step to the next (a part of the Data).

`physics.constraints.solver.SceneSolver` works on one `SolverState`, which `physics.pipeline.data.Data` holds beside the
bodies' state, so that a snapshot copies it with everything else and a new topology's solver takes
it over (warm starts and joints carry across a reparent). Names: the snapshot's, without its
"solver." prefix ("cache.impulses", "joints.anchor", ...; physics.pipeline.snapshot's layout).
"""
from dataclasses import dataclass, field, fields

import numpy as np

from physics.constraints.joints import Joints
from physics.collision.manifold import ContactCache


@dataclass
class SolverState:
    """What the contact and joint solver carries from one step to the next: the contact cache
    (warm-start impulses and persistent manifolds, physics.collision.manifold) and the joints, built at the
    first step's poses (their anchors and axes in the bodies' frames) with their impulses."""

    cache: ContactCache = field(default_factory=ContactCache)
    joints: Joints | None = None
    control: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (J,) each joint's actuator input (0 without)

    def arrays(self):
        """Copies of its arrays by the snapshot's names (without the "solver." prefix)."""
        out = {"cache." + name: array for name, array in self.cache.state().items()}
        if self.control.any():     # only once set: a scene without actuators keeps its snapshot and hash
            out["control"] = self.control.copy()
        if self.joints is not None:
            # the drives' fields only where a joint has one: a scene without keeps its snapshot and hash,
            # the axes' only where a joint is a six-axis joint, and the turns only where a hinge has
            # turned over (`Joints.has_turned`; a snapshot without them loads them as 0)
            drives, axes, turned = self.joints.has_drives(), self.joints.has_axes(), self.joints.has_turned()
            out.update({"joints." + f.name: getattr(self.joints, f.name).copy() for f in fields(Joints)
                        if (drives or f.name not in Joints.DRIVE_FIELDS) and (axes or f.name not in Joints.AXES_FIELDS)
                        and (turned or f.name != "turned")})
        return out

    def load(self, arrays):
        """Put back `arrays()` (copied); none: the state of a solver that has not stepped."""
        cache = {name[len("cache."):]: a for name, a in arrays.items() if name.startswith("cache.")}
        if cache:       # into the cache there is: its narrow-phase scratch and output sizes stay
            self.cache.restore(cache)
        else:
            self.cache = ContactCache()
        self.control[:] = arrays["control"] if "control" in arrays else 0.0
        self.joints = None
        if "joints.kind" in arrays:
            self.joints = Joints(**{f.name: arrays["joints." + f.name].copy() for f in fields(Joints)
                                    if "joints." + f.name in arrays})
