"""Trajectory output of the runner: recording a simulation's states and writing them atomically as .npz or .csv.

Output contract (docs/scene-format.md, "Runner output"): row 0 is the state before any step, then
one row every K steps. Per node, relative to the world and (prefix `local_`) relative to the parent
in the parent frame: translation (T,B,3), rotation (T,B,3,3), scale (T,B), velocity, acceleration
(of the origin, classical), angular_velocity, angular_acceleration (T,B,3). Per row: time (T,),
kinetic_energy, potential_energy (T,), linear_momentum, angular_momentum (T,3) of all dynamic
bodies (angular about the world origin); where the scene has them, joint_coordinates (T,Q) of its
named hinges, sliders and six-axis axes (rad or m: MuJoCo's qpos for an imported model) and
controls (T,A) of its actuators. Constant: names (B,), parent (B,) with -1 = world, joint_names
(Q,), control_names (A,).
"""
import csv
import itertools
import math
from pathlib import Path

import numpy as np

from physics.core.files import write_atomically

NODE_FIELDS = {  # name -> trailing shape per node
    "translation": (3,), "rotation": (3, 3), "scale": (), "velocity": (3,), "acceleration": (3,),
    "angular_velocity": (3,), "angular_acceleration": (3,),
}
ROW_FIELDS = {"kinetic_energy": (), "potential_energy": (), "linear_momentum": (3,), "angular_momentum": (3,)}
FORMATS = (".npz", ".csv")


def node_arrays(dynamic_transform):
    """The NODE_FIELDS of a DynamicTransform of batch (B,), angular quantities as 3-vectors."""
    transform = dynamic_transform.transform
    return {
        "translation": transform.translation, "rotation": transform.rotation,
        "scale": np.broadcast_to(transform.scale, transform.translation.shape[:-1]),
        "velocity": dynamic_transform.velocity, "acceleration": dynamic_transform.acceleration,
        "angular_velocity": dynamic_transform.omega_vector(),
        "angular_acceleration": dynamic_transform.alpha_vector(),
    }


class Recording:
    """Preallocated arrays for `rows` snapshots of `sim`; call `record()` once per row."""

    def __init__(self, sim, rows):
        count = len(sim.names)
        self.names = np.array(sim.names, dtype=str)
        self.parent = np.asarray(sim.parent, dtype=np.int64).copy()
        self.rows = 0
        self.data = {"time": np.zeros(rows)}
        for prefix in ("", "local_"):
            for name, shape in NODE_FIELDS.items():
                self.data[prefix + name] = np.zeros((rows, count) + shape)
        for name, shape in ROW_FIELDS.items():
            self.data[name] = np.zeros((rows,) + shape)
        # the joints' coordinates and the actuators' controls, where the scene has any
        self.joint_names = np.array(list(sim.joint_coordinates()), dtype=str)
        self.control_names = np.array(list(sim.controls), dtype=str)
        if len(self.joint_names):
            self.data["joint_coordinates"] = np.zeros((rows, len(self.joint_names)))
        if len(self.control_names):
            self.data["controls"] = np.zeros((rows, len(self.control_names)))
        self.sim = sim

    def record(self):
        sim, row = self.sim, self.rows
        self.data["time"][row] = sim.time
        for prefix, state in (("", sim.world()), ("local_", sim.local())):
            for name, values in node_arrays(state).items():
                self.data[prefix + name][row] = values
        energy, momentum = sim.energy(), sim.momentum()
        self.data["kinetic_energy"][row] = energy["kinetic"]
        self.data["potential_energy"][row] = energy["potential"]
        self.data["linear_momentum"][row] = momentum["linear"]
        self.data["angular_momentum"][row] = momentum["angular"]
        if len(self.joint_names):
            coordinates = sim.joint_coordinates()
            self.data["joint_coordinates"][row] = [coordinates[name] for name in self.joint_names]
        if len(self.control_names):
            controls = sim.controls
            self.data["controls"][row] = [controls[name] for name in self.control_names]
        self.rows += 1

    def arrays(self):
        """Every output array, trimmed to the rows recorded so far."""
        out = {name: values[: self.rows] for name, values in self.data.items()}
        out["names"], out["parent"] = self.names, self.parent
        if len(self.joint_names):
            out["joint_names"] = self.joint_names
        if len(self.control_names):
            out["control_names"] = self.control_names
        return out


def recording_bytes(rows, count):
    """Bytes a Recording of `rows` rows and `count` nodes holds: 8 per float, per node the NODE_FIELDS
    twice (world and local), per row the time and the ROW_FIELDS."""
    per_node = 2 * sum(math.prod(shape) for shape in NODE_FIELDS.values())
    per_row = 1 + sum(math.prod(shape) for shape in ROW_FIELDS.values())
    return 8 * rows * (count * per_node + per_row)


def csv_columns(joint_names=(), control_names=()):
    """The CSV header: one row per (time, node); per-row quantities repeat on each node's line, the
    joints' coordinates (`joint_NAME`) and the actuators' controls (`control_NAME`) last."""
    columns = ["time", "node", "name", "parent"]
    axes = "xyz"
    for prefix in ("", "local_"):
        for name, shape in NODE_FIELDS.items():
            if shape == ():
                columns.append(prefix + name)
            elif shape == (3,):
                columns += [f"{prefix}{name}_{a}" for a in axes]
            else:
                columns += [f"{prefix}{name}_{i}{j}" for i in range(3) for j in range(3)]
    for name, shape in ROW_FIELDS.items():
        columns += [name] if shape == () else [f"{name}_{a}" for a in axes]
    return columns + [f"joint_{name}" for name in joint_names] + [f"control_{name}" for name in control_names]


def _python(names):
    """`names` (a numpy array of strings, or any sequence) as a list of Python strings, in one call
    (`_write_csv`: no loop over a numpy array of strings inside the write)."""
    return [str(name) for name in (names.tolist() if isinstance(names, np.ndarray) else names)]


def _write_csv(handle, arrays):
    rows, count = arrays["translation"].shape[:2]
    blocks = [np.broadcast_to(arrays["time"][:, None, None], (rows, count, 1)),
              np.broadcast_to(np.arange(count)[None, :, None], (rows, count, 1))]
    node_blocks = []
    for prefix in ("", "local_"):
        for name in NODE_FIELDS:
            node_blocks.append(arrays[prefix + name].reshape(rows, count, -1))
    row_blocks = [np.broadcast_to(arrays[name].reshape(rows, 1, -1), (rows, count, arrays[name].reshape(rows, 1, -1).shape[-1]))
                  for name in (*ROW_FIELDS, "joint_coordinates", "controls") if name in arrays]
    numbers = np.concatenate(blocks + node_blocks + row_blocks, axis=-1).reshape(rows * count, -1)
    # the names and parents as Python objects, each node's once: iterating a numpy array of strings
    # clears an exception a signal handler raised in it (numpy's blanket PyErr_Clear, numpy issue
    # 20596), so the runner's stop (physics.tools.signals) was lost there, and the write went on
    names = itertools.cycle(_python(arrays["names"]))
    parents = itertools.cycle([int(parent) for parent in arrays["parent"].tolist()])
    writer = csv.writer(handle)
    writer.writerow(csv_columns(*(_python(arrays.get(name, ())) for name in ("joint_names", "control_names"))))
    for line, name, parent in zip(numbers, names, parents):
        writer.writerow([repr(float(line[0])), int(line[1]), name, parent] + [repr(float(x)) for x in line[2:]])


def write(path, arrays):
    """Write `arrays` to `path` (.npz or .csv) atomically (`physics.core.files.write_atomically`: a
    temporary file, then os.replace; nothing left behind by an exception or the runner's signal)."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise ValueError(f"output file {str(path)!r}: unknown extension {path.suffix!r}; expected .npz or .csv")
    if path.suffix == ".npz":
        write_atomically(path, lambda out: np.savez_compressed(out, **arrays))
    else:
        write_atomically(path, lambda out: _write_csv(out, arrays), binary=False)
