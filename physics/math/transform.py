"""Transforms `x -> R S x + T` in n dimensions and their dynamics (velocities, accelerations).

Source: "The Dynamics of a Transform Hierarchy" (every section; docs/references.md); the formulas
were re-derived by differentiating the composition.

Conventions, stated once (docs/architecture.md):
- A `Transform` is `(T, R, S)`: translation `(..., n)`, rotation `(..., n, n)` in SO(n), positive
  uniform scale `(...)`, acting on column vectors as `A(x) = R S x + T`. The linear part is
  `J = R S`. A node's transform maps child coordinates to parent coordinates.
- `a @ b` applies `b` first (function composition `a ∘ b`): `parent_world @ child_local` is the
  child's world transform.
- Dynamics: `v = dT/dt`, `a = d²T/dt²` (of the node's origin, in the parent basis); angular
  velocity `omega` is the skew matrix with `dR/dt = omega R` (expressed in the parent frame);
  `alpha = d omega/dt`, so `d²R/dt² = (alpha + omega²) R`. Scale is constant in time.
- Subscripts follow the article: 1 = child relative to parent (local), 2 = parent relative to world,
  3 = child relative to world (`A3 = A2 ∘ A1`). `[X, Y] = XY - YX`.
- Every array is batch-first; batch shapes broadcast. The code uses only matmul, swapaxes,
  indexing and elementwise operations, so `physics.math.dual.Dual` arrays flow through it and
  time derivatives can be taken through every formula.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from physics.math.rotation import cross, hat, skew_from_vector, vector_from_skew, vee

# Orthogonality / skew-symmetry tolerance of the validation: generous enough for matrices that
# went through a few float operations, tight enough to catch a scaled or sheared "rotation".
_TOLERANCE = 1e-6


# --- small helpers -----------------------------------------------------------------------------

def _array(x):
    """`x` as an array without touching arrays that carry derivatives (Dual) or are already float."""
    if isinstance(x, np.ndarray):
        return x if np.issubdtype(x.dtype, np.inexact) else x.astype(float)
    if hasattr(x, "__array_function__") and not isinstance(x, np.generic):
        return x  # a Dual (or another duck array): keep its derivative part
    return np.asarray(x, dtype=float)


def _real(x):
    """The real part of a (possibly nested) Dual array, as a plain numpy array."""
    while not isinstance(x, np.ndarray):
        if isinstance(x, (int, float, np.generic, list, tuple)):
            return np.asarray(x)
        x = x.real
    return x


def _mv(matrix, vector):
    """Batched matrix-vector product `(..., n, m) x (..., m) -> (..., n)`."""
    return (matrix @ vector[..., None])[..., 0]


def _transpose(matrix):
    return np.swapaxes(matrix, -1, -2)


def _bracket(x, y):
    """The matrix commutator `[x, y] = x y - y x` (the cross product in 3D)."""
    return x @ y - y @ x


def _batch_shape(what, *shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{what}: batch shapes {shapes} do not broadcast") from None


def _skew(w, n, name):
    """so(n) vector form -> skew matrix (None stays None)."""
    if w is None:
        return None
    w = _array(w)
    if n == 3 and (w.ndim < 1 or w.shape[-1] != 3):
        raise ValueError(f"DynamicTransform.from_vectors: {name} must have shape (..., 3) in 3D, "
                         f"got {w.shape}")
    return hat(w, 2) if n == 2 else hat(w, 3) if n == 3 else skew_from_vector(w, n)


def _vector(w):
    n = w.shape[-1]
    return vee(w) if n in (2, 3) else vector_from_skew(w)


def _perp(x):
    """The 2D perpendicular vector `(x, y)^⊥ = (-y, x)`: `hat(s) x = s x^⊥`."""
    return np.stack([-x[..., 1], x[..., 0]], axis=-1)


# --- Transform -----------------------------------------------------------------------------------

class Transform:
    """An invertible similarity `A(x) = R S x + T` ("The Dynamics of a Transform Hierarchy", "Transforms").

    translation `(..., n)`, rotation `(..., n, n)` with `Rᵀ R = I`, `det R = +1`, scale `(...)`
    positive. Group structure ("The Dynamics of a Transform Hierarchy",
    "Composition / Identity / Inverse Transform"):

        (T2, R2, S2) ∘ (T1, R1, S1) = (R2 S2 T1 + T2,  R2 R1,  S2 S1)
        identity = (0, I, 1)
        (T, R, S)⁻¹ = (-Rᵀ T / S,  Rᵀ,  1 / S)

    `check=False` skips the validation (for internal hot paths whose inputs are known good).
    """

    __slots__ = ("translation", "rotation", "scale")

    def __init__(self, translation, rotation, scale=1.0, *, check=True):
        self.translation = _array(translation)
        self.rotation = _array(rotation)
        self.scale = _array(scale)
        if check:
            self._validate()

    def _validate(self):
        t, r, s = self.translation, self.rotation, self.scale
        if t.ndim < 1 or t.shape[-1] < 1:
            raise ValueError(f"Transform: translation must have shape (..., n), got {t.shape}")
        n = t.shape[-1]
        if r.ndim < 2 or r.shape[-2:] != (n, n):
            raise ValueError(f"Transform: rotation must have shape (..., {n}, {n}) to match "
                             f"translation {t.shape}, got {r.shape}")
        _batch_shape("Transform", t.shape[:-1], r.shape[:-2], s.shape)
        r_real, s_real = _real(r), _real(s)
        error = np.abs(_transpose(r_real) @ r_real - np.eye(n))
        if error.size and not error.max() <= _TOLERANCE:
            raise ValueError(f"Transform: rotation is not orthogonal, max |RᵀR - I| = {error.max():.3g} "
                             f"(tolerance {_TOLERANCE}); received rotation of shape {r.shape}:\n{r_real}")
        if r_real.size and not np.all(np.linalg.det(r_real) > 0):
            raise ValueError(f"Transform: rotation has det -1 (a reflection); received:\n{r_real}")
        if not (np.all(np.isfinite(s_real)) and np.all(s_real > 0)):
            raise ValueError(f"Transform: scale must be positive and finite, got {s_real}")

    # -- shape --
    @property
    def n(self) -> int:
        """Dimension of the space."""
        return self.translation.shape[-1]

    @property
    def batch_shape(self) -> tuple:
        return np.broadcast_shapes(self.translation.shape[:-1], self.rotation.shape[:-2],
                                   self.scale.shape)

    @classmethod
    def identity(cls, n: int, batch_shape=()) -> "Transform":
        """`(0, I, 1)` in n dimensions, broadcast to `batch_shape`."""
        if int(n) != n or n < 1:
            raise ValueError(f"Transform.identity: n must be a positive integer, got {n!r}")
        batch_shape = (int(batch_shape),) if np.ndim(batch_shape) == 0 else tuple(batch_shape)
        return cls(np.zeros(batch_shape + (n,)), np.broadcast_to(np.eye(n), batch_shape + (n, n)).copy(),
                   np.ones(batch_shape), check=False)

    # -- group structure --
    def __matmul__(self, other: "Transform") -> "Transform":
        """`self ∘ other` (other applied first): `(R2 S2 T1 + T2, R2 R1, S2 S1)`."""
        if not isinstance(other, Transform):
            return NotImplemented
        _check_same_n("Transform @", self, other)
        return Transform(self.apply_point(other.translation), self.rotation @ other.rotation,
                         self.scale * other.scale, check=False)

    def inverse(self) -> "Transform":
        """`(-Rᵀ T / S, Rᵀ, 1 / S)`."""
        rotation_t = _transpose(self.rotation)
        scale_inv = 1.0 / self.scale
        return Transform(-_mv(rotation_t, self.translation) * scale_inv[..., None], rotation_t,
                         scale_inv, check=False)

    # -- action --
    def linear(self):
        """The linear part `J = R S` `(..., n, n)`: the Jacobian, child basis -> parent basis."""
        return self.rotation * self.scale[..., None, None]

    def linear_inverse(self):
        """`J⁻¹ = Rᵀ / S`."""
        return _transpose(self.rotation) / self.scale[..., None, None]

    def normal(self):
        """The normal transform `J⁻ᵀ = R / S`: maps surface normals (covectors) child -> parent."""
        return self.rotation / self.scale[..., None, None]

    def apply_point(self, x):
        """`R S x + T` for points `x` of shape `(..., n)`."""
        x = _array(x)
        _check_vector("Transform.apply_point", x, self.n)
        return _mv(self.rotation, x) * self.scale[..., None] + self.translation

    __call__ = apply_point

    def apply_vector(self, x):
        """`J x = R S x` for direction / displacement vectors (no translation)."""
        x = _array(x)
        _check_vector("Transform.apply_vector", x, self.n)
        return _mv(self.rotation, x) * self.scale[..., None]

    def apply_normal(self, x):
        """`J⁻ᵀ x = R x / S` for normals: keeps `normal · vector` when vectors map by `J`."""
        x = _array(x)
        _check_vector("Transform.apply_normal", x, self.n)
        return _mv(self.rotation, x) / self.scale[..., None]

    # -- augmented matrix --
    def as_matrix(self):
        """The augmented `(..., n+1, n+1)` matrix `[[R S, T], [0, 1]]`."""
        n, shape = self.n, self.batch_shape
        top = np.concatenate([np.broadcast_to(self.linear(), shape + (n, n)),
                              np.broadcast_to(self.translation, shape + (n,))[..., None]], axis=-1)
        bottom = np.broadcast_to(np.eye(n + 1)[n], shape + (1, n + 1))
        return np.concatenate([top, bottom], axis=-2)

    @classmethod
    def from_matrix(cls, matrix, *, check=True) -> "Transform":
        """Back from `[[R S, T], [0, 1]]`: `S = sqrt(|J|_F² / n)` (every column of `R S` has norm S),
        `R = J / S`. Raises ValueError when the matrix is not an augmented similarity."""
        matrix = _array(matrix)
        if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2] or matrix.shape[-1] < 2:
            raise ValueError(f"Transform.from_matrix: need shape (..., n+1, n+1), got {matrix.shape}")
        n = matrix.shape[-1] - 1
        if check:
            bottom = _real(matrix)[..., n, :]
            if not np.allclose(bottom, np.eye(n + 1)[n], rtol=0, atol=_TOLERANCE):
                raise ValueError(f"Transform.from_matrix: last row must be [0 ... 0 1], got {bottom}")
        linear = matrix[..., :n, :n]
        scale = np.sqrt(np.sum(np.sum(linear * linear, axis=-1), axis=-1) / n)
        return cls(matrix[..., :n, n], linear / scale[..., None, None], scale, check=check)

    def __repr__(self):
        return (f"Transform(translation={self.translation!r}, rotation={self.rotation!r}, "
                f"scale={self.scale!r})")


def _check_same_n(what, a, b):
    if a.n != b.n:
        raise ValueError(f"{what}: dimensions differ, {a.n} and {b.n}")


def _check_vector(what, x, n):
    if x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"{what}: expected shape (..., {n}), got {x.shape}")


def _check_skew(what, w, n):
    if w.ndim < 2 or w.shape[-2:] != (n, n):
        raise ValueError(f"{what}: expected a skew matrix of shape (..., {n}, {n}), got {w.shape}")
    w_real = _real(w)
    if w_real.size:
        asym = np.abs(w_real + _transpose(w_real)).max()
        if not asym <= _TOLERANCE * max(1.0, np.abs(w_real).max()):
            raise ValueError(f"{what}: not skew-symmetric, max |w + wᵀ| = {asym:.3g}; received:\n{w_real}")


# --- DynamicTransform ------------------------------------------------------------------------------

class Delta(NamedTuple):
    """An instantaneous change of a node's dynamics ("The Dynamics of a Transform Hierarchy",
    "Local and Global Deltas")."""
    velocity: object
    acceleration: object
    angular_velocity: object
    angular_acceleration: object


class InertialAccelerations(NamedTuple):
    """The terms of a child's local acceleration, in the parent's basis ("The Dynamics of a Transform
    Hierarchy", "Newtonian Mechanics — Force to Acceleration"). Their sum is the local acceleration
    `a1`."""
    applied: object      # J2⁻¹ a3: the world (inertial-frame) acceleration, i.e. F / m
    frame: object        # -ã2: the parent frame's own acceleration
    euler: object        # -α̃2 T1
    centrifugal: object  # -ω̃2² T1
    coriolis: object     # -2 ω̃2 v1

    def total(self):
        return self.applied + self.frame + self.euler + self.centrifugal + self.coriolis


class DynamicTransform:
    """A transform with its first two time derivatives ("The Dynamics of a Transform Hierarchy",
    "Dynamics of the Transform").

    `transform` (T, R, S); `velocity` v = dT/dt and `acceleration` a = dv/dt, `(..., n)`;
    `angular_velocity` ω (dR/dt = ω R) and `angular_acceleration` α = dω/dt as skew `(..., n, n)`
    matrices. Omitted (None) derivatives are zero. `check=False` skips validation.
    """

    __slots__ = ("transform", "velocity", "acceleration", "angular_velocity", "angular_acceleration")

    def __init__(self, transform, velocity=None, acceleration=None, angular_velocity=None,
                 angular_acceleration=None, *, check=True):
        if not isinstance(transform, Transform):
            raise ValueError(f"DynamicTransform: transform must be a Transform, got {type(transform).__name__}")
        n = transform.n
        zero_v, zero_w = np.zeros(n), np.zeros((n, n))
        self.transform = transform
        self.velocity = zero_v if velocity is None else _array(velocity)
        self.acceleration = zero_v if acceleration is None else _array(acceleration)
        self.angular_velocity = zero_w if angular_velocity is None else _array(angular_velocity)
        self.angular_acceleration = zero_w if angular_acceleration is None else _array(angular_acceleration)
        if check:
            _check_vector("DynamicTransform velocity", self.velocity, n)
            _check_vector("DynamicTransform acceleration", self.acceleration, n)
            _check_skew("DynamicTransform angular_velocity", self.angular_velocity, n)
            _check_skew("DynamicTransform angular_acceleration", self.angular_acceleration, n)
            _batch_shape("DynamicTransform", transform.batch_shape, self.velocity.shape[:-1],
                         self.acceleration.shape[:-1], self.angular_velocity.shape[:-2],
                         self.angular_acceleration.shape[:-2])

    # -- constructors and accessors --
    @classmethod
    def from_vectors(cls, transform, velocity=None, acceleration=None, omega=None, alpha=None, *,
                     check=True) -> "DynamicTransform":
        """Angular velocity/acceleration as vectors: scalars `(...)` in 2D, 3-vectors `(..., 3)` in
        3D (`hat`), so(n) coordinates `(..., n(n-1)/2)` in higher n (physics.math.rotation's
        `skew_from_vector` ordering, which is `hat` in 2D and 3D)."""
        n = transform.n
        return cls(transform, velocity, acceleration, _skew(omega, n, "omega"),
                   _skew(alpha, n, "alpha"), check=check)

    def omega_vector(self):
        """Angular velocity as a scalar (2D), a 3-vector (3D) or so(n) coordinates (n > 3)."""
        return _vector(self.angular_velocity)

    def alpha_vector(self):
        """Angular acceleration as a scalar (2D), a 3-vector (3D) or so(n) coordinates (n > 3)."""
        return _vector(self.angular_acceleration)

    @property
    def n(self) -> int:
        return self.transform.n

    @property
    def batch_shape(self) -> tuple:
        return np.broadcast_shapes(self.transform.batch_shape, self.velocity.shape[:-1],
                                   self.acceleration.shape[:-1], self.angular_velocity.shape[:-2],
                                   self.angular_acceleration.shape[:-2])

    @classmethod
    def identity(cls, n: int, batch_shape=()) -> "DynamicTransform":
        """The identity with null dynamics: an object is at rest relative to itself."""
        return cls(Transform.identity(n, batch_shape), check=False)

    # -- group structure --
    def __matmul__(self, child: "DynamicTransform") -> "DynamicTransform":
        """`parent_world @ child_local -> child_world` ("The Dynamics of a Transform Hierarchy",
        "Dynamics of the Composition"):

            v3 = v2 + J2 v1 + ω2 J2 T1
            a3 = a2 + J2 a1 + (α2 + ω2²) J2 T1 + 2 ω2 J2 v1
            ω3 = ω2 + R2 ω1 R2ᵀ
            α3 = α2 + R2 α1 R2ᵀ + [ω2, ω3]

        (`J2 T1` is the child's offset from the parent in the parent's parent basis; `α2 J2 T1` is
        the Euler term, `ω2² J2 T1` the centripetal one, `2 ω2 J2 v1` the Coriolis one.)
        """
        if not isinstance(child, DynamicTransform):
            return NotImplemented
        _check_same_n("DynamicTransform @", self, child)
        A2, w2 = self.transform, self.angular_velocity
        R2, R2t = A2.rotation, _transpose(A2.rotation)
        offset = A2.apply_vector(child.transform.translation)        # J2 T1
        v_rel = A2.apply_vector(child.velocity)                      # J2 v1
        w3 = w2 + R2 @ child.angular_velocity @ R2t
        return DynamicTransform(
            A2 @ child.transform,
            self.velocity + v_rel + _mv(w2, offset),
            self.acceleration + A2.apply_vector(child.acceleration)
            + _mv(self.angular_acceleration, offset) + _mv(w2, _mv(w2, offset) + 2.0 * v_rel),
            w3,
            self.angular_acceleration + R2 @ child.angular_acceleration @ R2t + _bracket(w2, w3),
            check=False)

    def inverse(self) -> "DynamicTransform":
        """The parent relative to the child ("The Dynamics of a Transform Hierarchy", "Dynamics of the
        Inverse"):

            v' = J⁻¹(ω T - v)
            a' = J⁻¹(α T - ω² T + 2 ω v - a)
            ω' = -Rᵀ ω R
            α' = -Rᵀ α R
        """
        A = self.transform
        T, v, w, al = A.translation, self.velocity, self.angular_velocity, self.angular_acceleration
        J_inv, R, Rt = A.linear_inverse(), A.rotation, _transpose(A.rotation)
        wT = _mv(w, T)
        return DynamicTransform(
            A.inverse(),
            _mv(J_inv, wT - v),
            _mv(J_inv, _mv(al, T) - _mv(w, wT) + 2.0 * _mv(w, v) - self.acceleration),
            -(Rt @ w @ R),
            -(Rt @ al @ R),
            check=False)

    @staticmethod
    def local_from_world(parent_world: "DynamicTransform", child_world: "DynamicTransform"
                         ) -> "DynamicTransform":
        """The child's local dynamics from its and its parent's world dynamics, `A1 = A2⁻¹ ∘ A3`
        ("The Dynamics of a Transform Hierarchy", "Converting Global Dynamics To Local Dynamics"),
        with `r = T3 - T2 = J2 T1`:

            v1 = J2⁻¹(v3 - v2 - ω2 r)
            a1 = J2⁻¹(a3 - a2 - (α2 - ω2²) r - 2 ω2 (v3 - v2))
            ω1 = R2ᵀ(ω3 - ω2) R2
            α1 = R2ᵀ(α3 - α2 + [ω3, ω2]) R2

        Equal to `parent_world.inverse() @ child_world` (tested).
        """
        _check_same_n("DynamicTransform.local_from_world", parent_world, child_world)
        A2, A3 = parent_world.transform, child_world.transform
        w2, w3 = parent_world.angular_velocity, child_world.angular_velocity
        R2, R2t, J2_inv = A2.rotation, _transpose(A2.rotation), A2.linear_inverse()
        r = A3.translation - A2.translation
        dv = child_world.velocity - parent_world.velocity
        al2 = parent_world.angular_acceleration
        return DynamicTransform(
            A2.inverse() @ A3,
            _mv(J2_inv, dv - _mv(w2, r)),
            _mv(J2_inv, child_world.acceleration - parent_world.acceleration - _mv(al2, r)
                + _mv(w2, _mv(w2, r) - 2.0 * dv)),
            R2t @ (w3 - w2) @ R2,
            R2t @ (child_world.angular_acceleration - al2 + _bracket(w3, w2)) @ R2,
            check=False)

    # -- the four delta rules ("The Dynamics of a Transform Hierarchy", "Local and Global Deltas");
    # `self` is the parent's world dynamics (A2, ω2, ...); transforms are unchanged by the instantaneous
    # change --
    def _deltas_or_zero(self, dv, da, dw, dal):
        """The four changes as arrays, validated; None means no change."""
        n, out = self.n, []
        for name, x in (("Δv", dv), ("Δa", da)):
            out.append(np.zeros(n) if x is None else _array(x))
            _check_vector(f"delta {name}", out[-1], n)
        for name, x in (("Δω", dw), ("Δα", dal)):
            out.append(np.zeros((n, n)) if x is None else _array(x))
            _check_skew(f"delta {name}", out[-1], n)
        return out

    def delta_world_from_local(self, dv1=None, da1=None, dw1=None, dal1=None) -> Delta:
        """The child's world change caused by a change of its local dynamics:

            Δv3 = J2 Δv1
            Δa3 = J2 Δa1 + 2 ω2 Δv3                  (Coriolis)
            Δω3 = R2 Δω1 R2ᵀ
            Δα3 = R2 Δα1 R2ᵀ + [ω2, Δω3]
        """
        dv1, da1, dw1, dal1 = self._deltas_or_zero(dv1, da1, dw1, dal1)
        A2, w2 = self.transform, self.angular_velocity
        R2, R2t = A2.rotation, _transpose(A2.rotation)
        dv3 = A2.apply_vector(dv1)
        dw3 = R2 @ dw1 @ R2t
        return Delta(dv3, A2.apply_vector(da1) + 2.0 * _mv(w2, dv3), dw3,
                     R2 @ dal1 @ R2t + _bracket(w2, dw3))

    def delta_local_from_world(self, dv3=None, da3=None, dw3=None, dal3=None) -> Delta:
        """The local change of the child needed for a wanted world change (inverse of the above):

            Δv1 = J2⁻¹ Δv3
            Δa1 = J2⁻¹(Δa3 - 2 ω2 Δv3)
            Δω1 = R2ᵀ Δω3 R2
            Δα1 = R2ᵀ(Δα3 + [Δω3, ω2]) R2
        """
        dv3, da3, dw3, dal3 = self._deltas_or_zero(dv3, da3, dw3, dal3)
        A2, w2 = self.transform, self.angular_velocity
        R2, R2t, J2_inv = A2.rotation, _transpose(A2.rotation), A2.linear_inverse()
        return Delta(_mv(J2_inv, dv3), _mv(J2_inv, da3 - 2.0 * _mv(w2, dv3)), R2t @ dw3 @ R2,
                     R2t @ (dal3 + _bracket(dw3, w2)) @ R2)

    def delta_child_from_parent(self, child_local: "DynamicTransform", dv2=None, da2=None, dw2=None,
                                dal2=None) -> Delta:
        """A locally unchanged child's world change when its parent's world dynamics change:

            Δv3 = Δv2 + Δω2 J2 T1
            Δa3 = Δa2 + (Δα2 + Δω2 ω2 + ω2 Δω2 + Δω2²) J2 T1 + 2 Δω2 J2 v1
            Δω3 = Δω2
            Δα3 = Δα2 + [Δω2, ω3 - ω2]          with ω3 - ω2 = R2 ω1 R2ᵀ

        Exact (not linearized): `Δω2 ω2 + ω2 Δω2 + Δω2² = (ω2 + Δω2)² - ω2²`.
        """
        dv2, da2, dw2, dal2 = self._deltas_or_zero(dv2, da2, dw2, dal2)
        A2, w2 = self.transform, self.angular_velocity
        offset = A2.apply_vector(child_local.transform.translation)      # J2 T1
        w_rel = A2.rotation @ child_local.angular_velocity @ _transpose(A2.rotation)  # ω3 - ω2
        d_square = dw2 @ w2 + w2 @ dw2 + dw2 @ dw2
        return Delta(dv2 + _mv(dw2, offset),
                     da2 + _mv(dal2 + d_square, offset)
                     + 2.0 * _mv(dw2, A2.apply_vector(child_local.velocity)),
                     dw2,
                     dal2 + _bracket(dw2, w_rel))

    def counteract(self, child_local: "DynamicTransform", dv2=None, dw2=None, da2=None, dal2=None
                   ) -> Delta:
        """The local change a direct child needs so that its world motion is unchanged when its parent's
        world dynamics change by (Δv2, Δω2, Δa2, Δα2) ("The Dynamics of a Transform Hierarchy",
        "Counteracting the Inherited Effect from the Parent"). `self` is the parent's world dynamics
        *before* the change. Derived by differencing `local_from_world` at a fixed child world state,
        with `r = J2 T1`, `v3 - v2 = J2 v1 + ω2 r`, `ω2' = ω2 + Δω2`:

            Δv1 = -J2⁻¹(Δv2 + Δω2 r)
            Δa1 = -J2⁻¹(Δa2 + (Δα2 - (ω2'² - ω2²)) r + 2 Δω2 (v3 - v2) - 2 ω2' Δv2)
            Δω1 = -R2ᵀ Δω2 R2
            Δα1 = R2ᵀ(-Δα2 + [ω3, Δω2]) R2

        With only a linear change Δv2 = Δv this is the article's `Δv1 = -J2⁻¹ Δv`,
        `Δa1 = 2 J2⁻¹ ω2 Δv`. The grandchildren inherit the correction and need none.
        """
        dv2, da2, dw2, dal2 = self._deltas_or_zero(dv2, da2, dw2, dal2)
        A2, w2 = self.transform, self.angular_velocity
        R2, R2t, J2_inv = A2.rotation, _transpose(A2.rotation), A2.linear_inverse()
        r = A2.apply_vector(child_local.transform.translation)
        v_rel = A2.apply_vector(child_local.velocity) + _mv(w2, r)               # v3 - v2
        w3 = w2 + R2 @ child_local.angular_velocity @ R2t
        w2_new = w2 + dw2
        d_square = dw2 @ w2 + w2 @ dw2 + dw2 @ dw2                                # ω2'² - ω2²
        return Delta(
            -_mv(J2_inv, dv2 + _mv(dw2, r)),
            -_mv(J2_inv, da2 + _mv(dal2 - d_square, r) + 2.0 * _mv(dw2, v_rel)
                 - 2.0 * _mv(w2_new, dv2)),
            -(R2t @ dw2 @ R2),
            R2t @ (_bracket(w3, dw2) - dal2) @ R2)

    def apply_delta(self, delta: Delta) -> "DynamicTransform":
        """The same transform with `delta` added to its dynamics."""
        return DynamicTransform(self.transform, self.velocity + delta.velocity,
                                self.acceleration + delta.acceleration,
                                self.angular_velocity + delta.angular_velocity,
                                self.angular_acceleration + delta.angular_acceleration, check=False)

    # -- inertial forces --
    @staticmethod
    def inertial_accelerations(parent_world: "DynamicTransform", child_world: "DynamicTransform",
                               *, form: str = "matrix") -> InertialAccelerations:
        """Decompose the child's local acceleration `a1` into its applied part and the inertial
        terms, all in the parent's basis ("The Dynamics of a Transform Hierarchy",
        "Example: Newtonian Mechanics — Force to Acceleration"):

            a1 = ã3 - ã2 - α̃2 T1 - ω̃2² T1 - 2 ω̃2 v1
               = applied + frame + Euler + centrifugal + Coriolis

        where `x̃ = J2⁻¹ x` for vectors and `ω̃ = J2⁻¹ ω J2 = R2ᵀ ω R2` for skew matrices (the
        scale cancels), `ã3 = J2⁻¹ a3` is F/m, and T1, v1 are the child's local translation and
        velocity. `form="matrix"` uses the n-D skew products above; `form="vector"` the 3D
        cross-product form (Euler `-α̃ × T1`, centrifugal `-ω̃ × (ω̃ × T1)`, Coriolis `-2 ω̃ × v1`)
        or the 2D perpendicular form (Euler `-α T1^⊥`, centrifugal `ω² T1`, Coriolis `-2 ω v1^⊥`).
        """
        local = DynamicTransform.local_from_world(parent_world, child_world)
        A2 = parent_world.transform
        R2, R2t, J2_inv = A2.rotation, _transpose(A2.rotation), A2.linear_inverse()
        T1, v1 = local.transform.translation, local.velocity
        w_b = R2t @ parent_world.angular_velocity @ R2
        al_b = R2t @ parent_world.angular_acceleration @ R2
        applied = _mv(J2_inv, child_world.acceleration)
        frame = -_mv(J2_inv, parent_world.acceleration)
        if form == "matrix":
            return InertialAccelerations(applied, frame, -_mv(al_b, T1), -_mv(w_b, _mv(w_b, T1)),
                                         -2.0 * _mv(w_b, v1))
        if form != "vector":
            raise ValueError(f"inertial_accelerations: form must be 'matrix' or 'vector', got {form!r}")
        if A2.n == 3:
            w, al = vee(w_b), vee(al_b)
            return InertialAccelerations(applied, frame, -cross(al, T1),
                                         -cross(w, cross(w, T1)), -2.0 * cross(w, v1))
        if A2.n == 2:
            w, al = vee(w_b)[..., None], vee(al_b)[..., None]
            return InertialAccelerations(applied, frame, -al * _perp(T1), w * w * T1,
                                         -2.0 * w * _perp(v1))
        raise ValueError(f"inertial_accelerations: the vector form exists only in 2D and 3D, got {A2.n}D")

    def __repr__(self):
        return (f"DynamicTransform({self.transform!r}, velocity={self.velocity!r}, "
                f"acceleration={self.acceleration!r}, angular_velocity={self.angular_velocity!r}, "
                f"angular_acceleration={self.angular_acceleration!r})")
