"""The free motion: integrators, kinematic motion, the passes over the bodies, sleeping, the mouse joint, stability by dual numbers, and driving (actuators on nodes, launchers, keys)."""
