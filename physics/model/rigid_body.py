"""Rigid bodies: inertia from shapes, Euler's equations, the gyroscopic term.

Conventions (docs/architecture.md): a body's inertia is diagonal in its own axes (principal
moments `inertia_body`, (..., 3)); `omega_body` is its angular velocity relative to the world,
expressed in body axes; torques here are body-frame too. "From Torque to Angular
Acceleration… Correctly." (docs/references.md): `tau = I alpha + omega x L`, `L = I omega`, so in
the body frame (where I is constant)

    I d(omega_body)/dt = tau_body - omega_body x (I omega_body)          (Euler's equations)

The term `omega x L` is the gyroscopic term. Modes:
- `off`: dropped, so without torque omega_body is constant (no precession, no Dzhanibekov flip);
- `explicit`: kept in the right-hand side and integrated like any force;
- `implicit`: backward Euler on the torque-free part, `I w' + h w' x (I w') = I w`, solved by
  Newton's method (Bullet's `computeGyroscopicImpulseImplicit_Body` takes one Newton step of this;
  we iterate to convergence). Stable at any step, and it dissipates energy.
"""
import numpy as np
from physics.core.compiled import kernel

from physics.core import choices
from physics.math.rotation import cross
from physics.math.rotation_kernels import cross as cross3, solve3
from physics.model.hull import mass_properties

GYROSCOPIC = choices.GYROSCOPIC.codes       # name -> the kernels' code (physics.core.choices)


def _positive(shape, key, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or value <= 0:
        raise ValueError(f"shape {shape!r}: key {key!r} got {value!r}; expected a finite number > 0")
    return float(value)


def inertia_from_shape(shape, mass):
    """Principal moments of inertia (3,) about the shape's centre, along its axes, uniform density;
    for masses (M,), the (M, 3) moments of each (each row the bits of the one-mass call).

    box `size` (full extents a, b, c): m (b²+c², a²+c², a²+b²) / 12
    sphere `radius` r: (2/5) m r²
    cylinder `radius` r, `height` h, axis y: I_y = m r²/2, I_x = I_z = m (3r² + h²)/12
    capsule `radius` r, `height` h (the cylinder between the hemisphere centres), axis y: the cylinder
      (mass m_c) plus two hemispheres (together m_s, split by volume):
      I_y = m_c r²/2 + (2/5) m_s r², I_x = I_z = m_c (3r² + h²)/12 + m_s (2r²/5 + h²/4 + 3hr/8)
    hull `vertices` (node frame): the diagonal of the solid hull's tensor about the node origin,
      I_xx = m <y² + z²> ... (physics.model.hull.mass_properties): its moments when the hull's centroid is
      the origin and its principal axes the node's; otherwise give the node an explicit inertia
    """
    if not isinstance(shape, dict) or "type" not in shape:
        raise ValueError(f"shape: got {shape!r}; expected a dict with a 'type' key")
    if isinstance(mass, np.ndarray) and mass.ndim == 1:
        if mass.dtype.kind not in "iuf" or not np.all(np.isfinite(mass)) or np.any(mass <= 0):
            raise ValueError(f"shape {shape!r}: key 'mass' got {mass!r}; expected finite numbers > 0")
        mass = mass.astype(float)
    else:
        mass = _positive(shape, "mass", mass)
    kind = shape["type"]
    if kind == "box":
        size = np.asarray(shape.get("size", ()), dtype=float)
        if size.shape != (3,) or not np.all(np.isfinite(size)) or np.any(size <= 0):
            raise ValueError(f"shape {shape!r}: key 'size' got {shape.get('size')!r}; expected 3 numbers > 0")
        a2, b2, c2 = size ** 2
        return np.multiply.outer(mass / 12.0, np.array([b2 + c2, a2 + c2, a2 + b2]))
    if kind == "sphere":
        r = _positive(shape, "radius", shape.get("radius"))
        return np.multiply.outer(0.4 * mass * r * r, np.ones(3))
    if kind in ("cylinder", "capsule"):
        r = _positive(shape, "radius", shape.get("radius"))
        h = _positive(shape, "height", shape.get("height"))
        if kind == "cylinder":
            side = mass * (3.0 * r * r + h * h) / 12.0
            return np.stack([side, 0.5 * mass * r * r, side], axis=-1)
        volume_cylinder, volume_spheres = np.pi * r * r * h, 4.0 / 3.0 * np.pi * r ** 3
        m_c = mass * volume_cylinder / (volume_cylinder + volume_spheres)
        m_s = mass - m_c
        side = m_c * (3.0 * r * r + h * h) / 12.0 + m_s * (0.4 * r * r + 0.25 * h * h + 0.375 * h * r)
        return np.stack([side, 0.5 * m_c * r * r + 0.4 * m_s * r * r, side], axis=-1)
    if kind == "hull":
        try:
            _, c, tensor = mass_properties(np.asarray(shape.get("vertices", ()), dtype=float), 1.0)
            tensor = tensor + (c @ c) * np.eye(3) - np.outer(c, c)   # about the node origin (parallel axes)
        except ValueError as error:
            raise ValueError(f"shape {shape!r}: key 'vertices': {error}") from None
        return np.multiply.outer(mass, np.diag(tensor))
    raise ValueError(f"shape {shape!r}: key 'type' got {kind!r}; expected box, sphere, cylinder, capsule or hull "
                     "(a plane has no finite inertia: give the node an explicit inertia or make it fixed)")


def _check_vectors(**arrays):
    out = []
    for name, value in arrays.items():
        array = np.asarray(value, dtype=float)
        if array.shape[-1:] != (3,):
            raise ValueError(f"{name}: got shape {array.shape}; expected (..., 3)")
        out.append(array)
    return out


def omega_body_dot(omega_body, inertia_body, torque_body, gyroscopic="explicit"):
    """d(omega_body)/dt = (tau_body - g omega_body x (I omega_body)) / I, g = 0 if `off` else 1.

    Batch (..., 3). `implicit` is a way of stepping, not a different derivative: it returns the
    full derivative, like `explicit`.
    """
    omega_body, inertia_body, torque_body = _check_vectors(
        omega_body=omega_body, inertia_body=inertia_body, torque_body=torque_body)
    if choices.GYROSCOPIC.check(gyroscopic) == "off":
        return torque_body / inertia_body
    return (torque_body - cross(omega_body, inertia_body * omega_body)) / inertia_body


@kernel(inline=True)
def _gyroscopic_residual(i0, i1, i2, b0, b1, b2, h, x0, x1, x2):
    l0, l1, l2 = i0 * x0, i1 * x1, i2 * x2
    x_l = cross3((x0, x1, x2), (l0, l1, l2))
    return l0 + h * x_l[0] - b0, l1 + h * x_l[1] - b1, l2 + h * x_l[2] - b2


@kernel
def _gyroscopic_newton_core(i0, i1, i2, b0, b1, b2, h, x0, x1, x2):
    """Solve I x + h x × (I x) = b for x by Newton's method from (x0, x1, x2); returns x.

    Jacobian: I + h (hat(x) I - hat(I x)), solved by Cramer's rule. The step is halved while it
    does not reduce the residual (needed when h |omega| is of order 1 or more; at game steps the
    full step is always taken). Quadratic convergence: stop once an update is below 1e-9 of |x|
    (the next one would be ~1e-18) or after 60 iterations. Scalars in and out, kept in registers.
    """
    r0, r1, r2 = _gyroscopic_residual(i0, i1, i2, b0, b1, b2, h, x0, x1, x2)
    for _ in range(60):
        l0, l1, l2 = i0 * x0, i1 * x1, i2 * x2
        m00, m01, m02 = i0, h * (l2 - x2 * i1), h * (x1 * i2 - l1)
        m10, m11, m12 = h * (x2 * i0 - l2), i1, h * (l0 - x0 * i2)
        m20, m21, m22 = h * (l1 - x1 * i0), h * (x0 * i1 - l0), i2
        d0, d1, d2 = solve3(((m00, m01, m02), (m10, m11, m12), (m20, m21, m22)), (r0, r1, r2))
        old = r0 * r0 + r1 * r1 + r2 * r2
        for _ in range(30):
            r0, r1, r2 = _gyroscopic_residual(i0, i1, i2, b0, b1, b2, h, x0 - d0, x1 - d1, x2 - d2)
            if r0 * r0 + r1 * r1 + r2 * r2 <= old:
                break
            d0, d1, d2 = 0.5 * d0, 0.5 * d1, 0.5 * d2
        x0, x1, x2 = x0 - d0, x1 - d1, x2 - d2
        if d0 * d0 + d1 * d1 + d2 * d2 <= 1e-18 * (x0 * x0 + x1 * x1 + x2 * x2):
            break
    return x0, x1, x2, r0 * r0 + r1 * r1 + r2 * r2 <= 1e-24 * (b0 * b0 + b1 * b1 + b2 * b2) + 1e-300


@kernel
def gyroscopic_newton(i0, i1, i2, b0, b1, b2, h, x0, x1, x2):
    """Solve I x + h x × (I x) = b (see _gyroscopic_newton_core). A solution always exists, since
    F(x)·x = x·I x grows like |x|²; if damped Newton stalls at a large h |omega|, continue in h:
    solve for h/n, 2h/n, ..., h, each from the previous solution, n = 4, 16, 64."""
    y0, y1, y2, ok = _gyroscopic_newton_core(i0, i1, i2, b0, b1, b2, h, x0, x1, x2)
    n = 4
    while not ok and n <= 64:
        y0, y1, y2 = b0 / i0, b1 / i1, b2 / i2
        for k in range(1, n + 1):
            y0, y1, y2, ok = _gyroscopic_newton_core(i0, i1, i2, b0, b1, b2, h * k / n, y0, y1, y2)
        n *= 4
    return y0, y1, y2


@kernel
def _gyroscopic_implicit_batch(omega_body, inertia_body, h):
    for i in range(omega_body.shape[0]):
        i0, i1, i2 = inertia_body[i, 0], inertia_body[i, 1], inertia_body[i, 2]
        w0, w1, w2 = omega_body[i, 0], omega_body[i, 1], omega_body[i, 2]
        omega_body[i, 0], omega_body[i, 1], omega_body[i, 2] = gyroscopic_newton(
            i0, i1, i2, i0 * w0, i1 * w1, i2 * w2, h, w0, w1, w2)


def gyroscopic_implicit(omega_body, inertia_body, dt):
    """The implicit gyroscopic step: w' with I w' + dt w' x (I w') = I w. Batch (B, 3), returns new array."""
    omega_body, inertia_body = _check_vectors(omega_body=omega_body, inertia_body=inertia_body)
    omega_body, inertia_body = np.broadcast_arrays(omega_body, inertia_body)
    shape = omega_body.shape
    out = np.ascontiguousarray(omega_body.reshape(-1, 3), dtype=float).copy()
    _gyroscopic_implicit_batch(out, np.ascontiguousarray(inertia_body.reshape(-1, 3)), float(dt))
    return out.reshape(shape)
