"""The measurements the panel plots (app.plots draws them): rolling time series of what a physics
setting changes, with a marker at every change.

`History` keeps the last WINDOW seconds of simulated time in fixed ring buffers (one row per
channel, CAPACITY columns). A sample is taken at most once per drawn frame and at most once per
WINDOW / CAPACITY of simulated time, so the buffer always covers the whole window whatever the
time scale; a sample costs one `sim.energy()` and one `sim.momentum()` (vectorized over the
bodies), never a loop over nodes.

Channels (world frame, SI, `sim.time` in s):
  energy    E = kinetic + potential + the joints' springs and armatures − the work the moving
            frames did on the bodies through joints (J), `sim.energy()`: what the bodies and their
            joints hold of their own, the quantity a conservative step keeps
  drift     (E − E₀) / max(|E₀|, ENERGY_FLOOR): E₀ = the first sample after a reset, a scene load
            or a setting change, so a change shows as a fresh drift curve starting at 0
  L, Lx, Ly, Lz   |L_world| and L_world about the world origin (kg m²/s), `sim.momentum()`
  speed, angular_speed   |v_world|, |omega_world| of the selected node (m/s, rad/s); NaN when
            nothing is selected; cleared when the selection changes (the curve is one node's)

A seek back in the timeline cuts the samples and markers after the time sought (`truncate`): the
plots never show a future that was cut off as if it were current.
"""
import numpy as np

from physics.pipeline.stages import energy_balance

WINDOW = 20.0     # s of simulated time shown
CAPACITY = 2048   # samples: one per WINDOW / CAPACITY ≈ 9.8 ms, finer than a 60 Hz frame at 1x
ENERGY_FLOOR = 1e-9  # J: a scene whose energy is 0 at the reference shows drift over 1 nJ
MERGE_SECONDS = 1.0  # s: a marker of the same input within this of its last one updates it (`History.mark`)
CHANNELS = ("energy", "drift", "L", "Lx", "Ly", "Lz", "speed", "angular_speed")


def format_value(value):
    """A setting's value as the marker text shows it."""
    if isinstance(value, (bool, np.bool_)):
        return "on" if value else "off"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    if np.ndim(value) == 1:
        return "(" + ", ".join(f"{x:.3g}" for x in np.asarray(value, float)) + ")"
    return str(value)


def _subject(text):
    """What a marker's text sets, where it ends with a number ("servo_1 -> 0.5": "servo_1 ->"), else
    None (a marker with no value: "branch", "pull: hull")."""
    head, _, last = text.rpartition(" ")
    try:
        float(last)
    except ValueError:
        return None
    return head or None


class History:
    """Ring buffers of the CHANNELS over the last `window` s of simulated time, plus markers.

    `t` (capacity,) and `values` (len(CHANNELS), capacity) are filled at `head`, which wraps;
    `series()` returns them oldest first."""

    def __init__(self, capacity=CAPACITY, window=WINDOW):
        if capacity < 2 or not window > 0:
            raise ValueError(f"History needs capacity >= 2 and window > 0, got {capacity}, {window}")
        self.window = float(window)
        self.spacing = self.window / capacity  # s between samples: capacity samples span the window
        self.t = np.zeros(capacity)
        self.values = np.full((len(CHANNELS), capacity), np.nan)
        self.subtree = None          # the node whose subtree the energy and momentum are of (None: all)
        self.clear()

    def set_subtree(self, subtree):
        """Plot the energy and momentum of `subtree` (a node's name: it and its descendants, e.g. the
        car and its cargo; `Simulation.energy(subtree=...)`) or of every body (None): a new series."""
        if subtree != self.subtree:
            self.subtree = subtree
            self.clear()

    @property
    def capacity(self):
        return self.t.shape[0]

    def clear(self):
        """Forget every sample and marker (a reset or a new scene: time restarts)."""
        self.count, self.head = 0, 0
        self.values[:] = np.nan
        self.markers = []            # [(time s, text)], oldest first
        self.reference_energy = None  # E₀ of the drift; taken at the next sample
        self.references = []         # [(time s, E₀)] every E₀ taken, oldest first (for `truncate`)
        self.node = None             # the node the speed channels belong to

    def last_time(self):
        return self.t[self.head - 1] if self.count else -np.inf

    def mark(self, time, text):
        """A setting changed at `time`: remember it and restart the drift from the next sample. A
        value of the same input within MERGE_SECONDS of its last marker (a held key's ramp, a
        dragged slider: "servo_1 0.005", "servo_1 0.01", …) updates that marker's text instead of
        adding one: a ramp is one line at its start, saying where it went."""
        time, text = float(time), str(text)
        if self.markers:
            last_time, last_text = self.markers[-1]
            subject = _subject(text)
            if subject is not None and subject == _subject(last_text) and 0.0 <= time - last_time <= MERGE_SECONDS:
                self.markers[-1] = (last_time, text)
                self.reference_energy = None
                return
        self.markers.append((time, text))
        self.reference_energy = None

    def sample(self, sim, node=None, v_world=None, omega_world=None):
        """Append one sample of `sim` (anything with `time`, `energy()`, `momentum()`) unless less
        than `spacing` s of simulated time passed since the last one. `node`, `v_world` (3,),
        `omega_world` (3,): the selected node and its world motion, or None. -> bool (sampled)."""
        time = float(sim.time)
        if time < self.last_time():  # time went back without a clear (a reset elsewhere)
            self.clear()
        if self.count and time < self.last_time() + self.spacing * (1 - 1e-9):
            return False
        if self.subtree is not None and self.subtree not in sim.names:   # another scene: every body
            self.set_subtree(None)
        of = {} if self.subtree is None else {"subtree": self.subtree}
        total = energy_balance(sim.energy(**of))
        if self.reference_energy is None:
            self.reference_energy = total
            self.references.append((time, total))
        L_world = np.asarray(sim.momentum(**of)["angular"], float)
        if node != self.node:
            self.values[CHANNELS.index("speed"):] = np.nan
            self.node = node
        speed = np.nan if v_world is None else np.linalg.norm(v_world)
        angular_speed = np.nan if omega_world is None else np.linalg.norm(omega_world)
        drift = (total - self.reference_energy) / max(abs(self.reference_energy), ENERGY_FLOOR)
        self.t[self.head] = time
        self.values[:, self.head] = (total, drift, np.linalg.norm(L_world), *L_world, speed, angular_speed)
        self.head = (self.head + 1) % self.capacity
        self.count = min(self.count + 1, self.capacity)
        oldest = self.t[self.head if self.count == self.capacity else 0]
        self.markers = [m for m in self.markers if m[0] >= oldest - self.spacing]
        return True

    def truncate(self, time):
        """Forget every sample and marker after `time` (s): the run went back to it. E₀ becomes
        the one in force then (None when a marker after it restarts the drift at the next sample)."""
        t, values = self.series()
        keep = t <= time
        self.count = int(keep.sum())
        self.head = self.count % self.capacity
        self.t[:self.count], self.values[:, :self.count] = t[keep], values[:, keep]
        self.values[:, self.count:] = np.nan
        self.markers = [m for m in self.markers if m[0] <= time]
        self.references = [r for r in self.references if r[0] <= time]
        last_mark = max((m[0] for m in self.markers), default=-np.inf)
        held = self.references and self.references[-1][0] >= last_mark
        self.reference_energy = self.references[-1][1] if held else None

    def series(self):
        """(t (n,), values (len(CHANNELS), n)) oldest first, n = samples held (copies)."""
        if self.count < self.capacity:
            return self.t[:self.count].copy(), self.values[:, :self.count].copy()
        return np.roll(self.t, -self.head), np.roll(self.values, -self.head, axis=1)

    def channel(self, name):
        """(t (n,), values (n,)) of one channel, oldest first. KeyError names unknown channels."""
        if name not in CHANNELS:
            raise KeyError(f"unknown channel {name!r}; channels are {CHANNELS}")
        t, values = self.series()
        return t, values[CHANNELS.index(name)]
