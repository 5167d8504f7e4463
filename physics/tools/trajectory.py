"""Trajectory output of the runner: recording a simulation's states and writing them atomically as .npz or .csv.

Output contract (docs/scene-format.md, "Runner output"): row 0 is the state before any step, then
one row every K steps. Per node, relative to the world and (prefix `local_`) relative to the parent
in the parent frame: translation (T,B,3), rotation (T,B,3,3), scale (T,B), velocity, acceleration
(of the origin, classical), angular_velocity, angular_acceleration (T,B,3). Per row: time (T,),
kinetic_energy, potential_energy (T,), linear_momentum, angular_momentum (T,3) of all dynamic
bodies (angular about the world origin). Constant: names (B,), parent (B,) with -1 = world.
"""
import csv
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
        self.rows += 1

    def arrays(self):
        """Every output array, trimmed to the rows recorded so far."""
        out = {name: values[: self.rows] for name, values in self.data.items()}
        out["names"], out["parent"] = self.names, self.parent
        return out


def recording_bytes(rows, count):
    """Bytes a Recording of `rows` rows and `count` nodes holds: 8 per float, per node the NODE_FIELDS
    twice (world and local), per row the time and the ROW_FIELDS."""
    per_node = 2 * sum(math.prod(shape) for shape in NODE_FIELDS.values())
    per_row = 1 + sum(math.prod(shape) for shape in ROW_FIELDS.values())
    return 8 * rows * (count * per_node + per_row)


def csv_columns():
    """The CSV header: one row per (time, node); per-row quantities repeat on each node's line."""
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
    return columns


def _write_csv(handle, arrays):
    rows, count = arrays["translation"].shape[:2]
    blocks = [np.broadcast_to(arrays["time"][:, None, None], (rows, count, 1)),
              np.broadcast_to(np.arange(count)[None, :, None], (rows, count, 1))]
    node_blocks = []
    for prefix in ("", "local_"):
        for name in NODE_FIELDS:
            node_blocks.append(arrays[prefix + name].reshape(rows, count, -1))
    row_blocks = [np.broadcast_to(arrays[name].reshape(rows, 1, -1), (rows, count, arrays[name].reshape(rows, 1, -1).shape[-1]))
                  for name in ROW_FIELDS]
    numbers = np.concatenate(blocks + node_blocks + row_blocks, axis=-1).reshape(rows * count, -1)
    names = np.tile(arrays["names"], rows)
    parents = np.tile(arrays["parent"], rows)
    writer = csv.writer(handle)
    writer.writerow(csv_columns())
    for line, name, parent in zip(numbers, names, parents):
        writer.writerow([repr(float(line[0])), int(line[1]), name, int(parent)] + [repr(float(x)) for x in line[2:]])


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
