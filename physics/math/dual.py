"""Dual numbers: forward-mode automatic differentiation that runs through ordinary numpy code.

"Automatically Computing the Derivatives of a Vector Field using Dual Numbers" (docs/references.md).
A dual number is x + εy with ε² = 0, written (x, y). Every rule in this
module follows from two facts:

    (x, y)(a, b) = (xa, ya + xb)                   product rule
    f(x + εy)    = f(x) + ε y f'(x)                chain rule (Taylor series with ε² = 0)

so f(Dual(x, 1)).dual = f'(x), f(Dual(x, v)).dual is the derivative along v, and the Jacobian of
f: R^n → R^m takes n evaluations with seeds e_j.

`Dual(real, dual)` holds two numpy arrays of one shape (broadcast on construction, not copied
otherwise), batch-first like every array in this project. It takes part in numpy's protocols:
ufuncs (`np.sin(d)`, `d @ m`, `x * d`, `d < 0`) go through `__array_ufunc__`, functions
(`np.stack`, `np.cross`, `np.linalg.norm`, `np.einsum`, ...) through `__array_function__`, so
rotation and transform code written with numpy operations differentiates unchanged. Converting a
Dual to a plain array (`np.asarray(d)`, `float(d)`, `plain[i] = d`) raises TypeError rather than
dropping the derivative silently: build arrays of Duals with `np.stack`, or allocate with
`np.zeros_like(d)` (a Dual) and assign into it.

Choices
- Comparisons (`<`, `==`, `np.isfinite`, ...) and `argmax`/`argmin` look at the real part only and
  return plain arrays. `np.maximum`, `np.minimum`, `np.max`, `np.clip`, `np.where` carry the dual
  part of the operand they select; on a tie, the first operand.
- At kinks: |x|' = sign(x), so the derivative of |x| at 0 is 0 (the middle of the subgradient);
  sign, floor, ceil, round have derivative 0. `np.linalg.norm` of a zero vector has derivative 0.
- A zero tangent always gives a zero tangent, even where f' is infinite (sqrt at 0, arcsin at ±1,
  log at 0): the derivative along the zero direction is 0, and Jacobian columns stay free of
  inf · 0 = nan. A nonzero tangent there gives ±inf, as the analytic formula does.
- `np.zeros_like`, `ones_like`, `empty_like`, `full_like` of a Dual return Duals with zero dual
  part (zeros for empty_like), so Duals can be assigned into them.
- Nesting: the parts may themselves be Duals. Dual(Dual(x, 1), Dual(1, 0)) is a hyper-dual number
  whose .dual.dual after f is f''(x) (`second_derivative`). Levels are positional and untagged:
  nesting is right when the inner function's variable is built from the outer one (as in
  `second_derivative`); an inner derivative of a closure over an outer Dual mixes the levels
  ("perturbation confusion").
"""
import functools
import numbers
import operator

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = ["Dual", "real_part", "derivative", "directional_derivative", "jacobian",
           "second_derivative"]


class Dual(NDArrayOperatorsMixin):
    """real + ε dual, elementwise over arrays of one shape; the parts may be Duals (nesting).

    The parts are taken as given (float ndarrays are not copied); a part whose shape differs is
    broadcast into a fresh array. `dual=None` means 0 (a constant).
    """

    __slots__ = ("real", "dual")
    __array_priority__ = 1000.0
    __hash__ = None  # mutable, like ndarray

    def __init__(self, real, dual=None):
        real = _as_part(real, "real")
        dual = np.zeros(np.shape(real)) if dual is None else _as_part(dual, "dual")
        shape_real, shape_dual = np.shape(real), np.shape(dual)
        if shape_real != shape_dual:
            try:
                shape = np.broadcast_shapes(shape_real, shape_dual)
            except ValueError:
                raise ValueError(
                    f"Dual: real part of shape {shape_real} and dual part of shape {shape_dual} "
                    "do not broadcast") from None
            # A copy, not a broadcast view, so that the parts stay writeable.
            if shape_real != shape:
                real = np.broadcast_to(real, shape).copy()
            if shape_dual != shape:
                dual = np.broadcast_to(dual, shape).copy()
        # Keep the nesting levels of the two parts equal, so that setitem and ops line up.
        if isinstance(real, Dual) != isinstance(dual, Dual):
            real, dual = _lift(real), _lift(dual)
        self.real, self.dual = real, dual

    @classmethod
    def variable(cls, x):
        """The independent variable at x: Dual(x, 1) elementwise."""
        return cls(x, np.ones(np.shape(x)))

    # --- ndarray-like attributes -------------------------------------------------------------
    shape = property(lambda self: self.real.shape)
    ndim = property(lambda self: self.real.ndim)
    size = property(lambda self: self.real.size)
    dtype = property(lambda self: self.real.dtype)
    T = property(lambda self: Dual(self.real.T, self.dual.T))

    @property
    def mT(self):
        """Transpose of the last two axes (matrix transpose of a batch)."""
        if self.ndim < 2:
            raise ValueError(f"Dual.mT needs at least 2 dimensions; got shape {self.shape}")
        return Dual(np.swapaxes(self.real, -1, -2), np.swapaxes(self.dual, -1, -2))

    def __getitem__(self, key):
        if isinstance(key, Dual):
            raise TypeError("Dual: cannot index with a Dual; index with its .real")
        return Dual(self.real[key], self.dual[key])

    def __setitem__(self, key, value):
        if isinstance(value, Dual):
            self.real[key], self.dual[key] = value.real, value.dual
        else:
            self.real[key], self.dual[key] = value, 0.0

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d Dual")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"Dual(real={self.real!r}, dual={self.dual!r})"

    # Silent conversion to plain numbers would drop the derivative.
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Dual: cannot convert to a plain array (the derivative would be lost); "
                        "use .real, build arrays of Duals with np.stack, or allocate with "
                        "np.zeros_like(dual) and assign into it")

    def __float__(self):
        raise TypeError("Dual: float() would drop the derivative; use .real")

    __int__ = __complex__ = __float__

    def __bool__(self):
        raise TypeError("Dual: truth value is ambiguous; compare (d < x) or test d.real")

    # --- numpy protocols ---------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if not all(isinstance(x, _OPERAND_TYPES) for x in inputs):
            return NotImplemented
        if method == "__call__":
            if kwargs:
                raise TypeError(f"Dual: np.{ufunc.__name__} keyword arguments {sorted(kwargs)} "
                                "are not supported")
            rule = _UFUNC_RULES.get(ufunc)
            if rule is None:
                raise TypeError(f"Dual: no derivative rule for np.{ufunc.__name__} "
                                "(add one to physics/math/dual.py)")
            result = rule(*inputs)
        elif ufunc is np.add and method in ("reduce", "accumulate") and "initial" not in kwargs:
            (a,) = inputs
            apply = getattr(np.add, method)
            result = Dual(apply(a.real, **kwargs), apply(a.dual, **kwargs))
        else:
            raise TypeError(f"Dual: np.{ufunc.__name__}.{method} is not supported")
        if out is None:
            return result
        (target,) = out
        target[...] = result  # a plain-array target raises TypeError via __array__
        return target

    def __array_function__(self, func, types, args, kwargs):
        if not all(issubclass(t, (Dual, np.ndarray)) for t in types):
            return NotImplemented
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(f"Dual: np.{func.__name__} has no Dual implementation "
                            "(add one to physics/math/dual.py)")
        return handler(*args, **kwargs)


_OPERAND_TYPES = (Dual, np.ndarray, np.generic, numbers.Number, list, tuple)


def _as_part(x, name):
    if isinstance(x, Dual) or (type(x) is np.ndarray and x.dtype.kind in "fc"):
        return x
    a = np.asarray(x)
    if a.dtype.kind in "biu":
        return a.astype(float)
    if a.dtype.kind not in "fc":
        raise TypeError(f"Dual: {name} part must be numeric or a Dual; got dtype {a.dtype}")
    return a


def _real(x):
    return x.real if isinstance(x, Dual) else x


def _lift(x):
    """x as a Dual (a constant gets dual part 0)."""
    return x if isinstance(x, Dual) else Dual(x)


def _is_zero(x):
    if isinstance(x, Dual):
        return _is_zero(x.real) & _is_zero(x.dual)
    return np.asarray(x) == 0


def _times(partial, tangent):
    """partial · tangent, exactly 0 where the tangent is 0 (even if the partial is inf)."""
    product = partial * tangent
    zero = _is_zero(tangent)
    return np.where(zero, 0.0, product) if np.any(zero) else product


def _jvp(value, partials):
    """Dual(value, Σ_i ∂f/∂x_i · dx_i) over the operands that are Duals.

    partials: (operand, thunk returning ∂f/∂operand) pairs; thunks of constants are never called.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = [_times(partial(), x.dual) for x, partial in partials if isinstance(x, Dual)]
    return Dual(value, functools.reduce(operator.add, terms)) if terms else Dual(value)


# --- ufunc rules -------------------------------------------------------------------------------
def _chain(ufunc, fprime):
    """f(x + εy) = f(x) + ε y f'(x); fprime(x, f(x)) gives f'(x)."""
    def rule(a):
        value = ufunc(a.real)
        return _jvp(value, [(a, lambda: fprime(a.real, value))])
    return rule


def _linear_unary(ufunc):
    return lambda a: Dual(ufunc(a.real), ufunc(a.dual))


def _piecewise_constant(ufunc):
    return lambda *xs: Dual(ufunc(*map(_real, xs)))


def _on_real(func):
    return lambda *xs, **kw: func(*map(_real, xs), **kw)


def _add_or_subtract(ufunc):
    def rule(a, b):
        value = ufunc(_real(a), _real(b))
        if not isinstance(b, Dual):
            return Dual(value, a.dual)
        return Dual(value, ufunc(a.dual if isinstance(a, Dual) else 0.0, b.dual))
    return rule


def _bilinear(op):
    """B(a + εda, b + εdb) = B(a, b) + ε (B(da, b) + B(a, db)) for B linear in each argument."""
    def rule(a, b, *args, **kwargs):
        ar, br = _real(a), _real(b)
        terms = []
        if isinstance(a, Dual):
            terms.append(op(a.dual, br, *args, **kwargs))
        if isinstance(b, Dual):
            terms.append(op(ar, b.dual, *args, **kwargs))
        return Dual(op(ar, br, *args, **kwargs), functools.reduce(operator.add, terms))
    return rule


def _divide(a, b):
    """d(x/c) = dx/c - (x/c) dc/c."""
    ar, br = _real(a), _real(b)
    q = ar / br
    return _jvp(q, [(a, lambda: 1.0 / br), (b, lambda: -q / br)])


def _power(a, b):
    """d(x^c) = c x^(c-1) dx + x^c log(x) dc; x^0 is constant even at x = 0, and so is 0^c."""
    ar, br = _real(a), _real(b)
    value = np.power(ar, br)
    return _jvp(value, [
        (a, lambda: np.where(br == 0, 0.0, br * np.power(ar, br - 1))),
        (b, lambda: np.where(value == 0, 0.0, value * np.log(ar))),
    ])


def _arctan2(y, x):
    """d atan2(y, x) = (x dy - y dx) / (x² + y²)."""
    yr, xr = _real(y), _real(x)
    r2 = xr * xr + yr * yr
    return _jvp(np.arctan2(yr, xr), [(y, lambda: xr / r2), (x, lambda: -yr / r2)])


def _hypot(x, y):
    """d hypot(x, y) = (x dx + y dy) / hypot(x, y)."""
    xr, yr = _real(x), _real(y)
    h = np.hypot(xr, yr)
    return _jvp(h, [(x, lambda: xr / h), (y, lambda: yr / h)])


def _remainder(ufunc, rounding):
    """x mod c = x - k c with k = rounding(x / c) locally constant: d = dx - k dc."""
    def rule(a, b):
        ar, br = _real(a), _real(b)
        return _jvp(ufunc(ar, br), [(a, lambda: 1.0), (b, lambda: -rounding(ar / br))])
    return rule


def _copysign(a, b):
    ar, br = _real(a), _real(b)
    return _jvp(np.copysign(ar, br), [(a, lambda: np.copysign(1.0, ar) * np.copysign(1.0, br))])


def _select(pick_first):
    """Elementwise choice between two operands by their real parts; the dual part follows."""
    def rule(a, b):
        return np.where(pick_first(_real(a), _real(b)), _lift(a), _lift(b))
    return rule


_UFUNC_RULES = {
    np.add: _add_or_subtract(np.add),
    np.subtract: _add_or_subtract(np.subtract),
    np.multiply: _bilinear(np.multiply),
    np.matmul: _bilinear(np.matmul),
    np.true_divide: _divide,
    np.power: _power,
    np.float_power: _power,
    np.arctan2: _arctan2,
    np.hypot: _hypot,
    np.remainder: _remainder(np.remainder, np.floor),
    np.fmod: _remainder(np.fmod, np.trunc),
    np.copysign: _copysign,
    np.maximum: _select(lambda a, b: (a >= b) | np.isnan(a)),
    np.minimum: _select(lambda a, b: (a <= b) | np.isnan(a)),
    np.fmax: _select(lambda a, b: (a >= b) | np.isnan(b)),
    np.fmin: _select(lambda a, b: (a <= b) | np.isnan(b)),
    np.negative: _linear_unary(np.negative),
    np.positive: _linear_unary(np.positive),
    np.conjugate: _linear_unary(np.conjugate),
    np.deg2rad: _linear_unary(np.deg2rad),
    np.rad2deg: _linear_unary(np.rad2deg),
    np.sin: _chain(np.sin, lambda x, fx: np.cos(x)),
    np.cos: _chain(np.cos, lambda x, fx: -np.sin(x)),
    np.tan: _chain(np.tan, lambda x, fx: 1.0 + fx * fx),
    # (1 - x)(1 + x) rather than 1 - x² keeps relative accuracy near ±1.
    np.arcsin: _chain(np.arcsin, lambda x, fx: 1.0 / np.sqrt((1.0 - x) * (1.0 + x))),
    np.arccos: _chain(np.arccos, lambda x, fx: -1.0 / np.sqrt((1.0 - x) * (1.0 + x))),
    np.arctan: _chain(np.arctan, lambda x, fx: 1.0 / (1.0 + x * x)),
    np.sinh: _chain(np.sinh, lambda x, fx: np.cosh(x)),
    np.cosh: _chain(np.cosh, lambda x, fx: np.sinh(x)),
    # 1/cosh² rather than 1 - tanh², which cancels for large |x|.
    np.tanh: _chain(np.tanh, lambda x, fx: 1.0 / np.cosh(x) ** 2),
    np.arcsinh: _chain(np.arcsinh, lambda x, fx: 1.0 / np.sqrt(x * x + 1.0)),
    np.arccosh: _chain(np.arccosh, lambda x, fx: 1.0 / np.sqrt((x - 1.0) * (x + 1.0))),
    np.arctanh: _chain(np.arctanh, lambda x, fx: 1.0 / ((1.0 - x) * (1.0 + x))),
    np.exp: _chain(np.exp, lambda x, fx: fx),
    np.exp2: _chain(np.exp2, lambda x, fx: fx * np.log(2.0)),
    np.expm1: _chain(np.expm1, lambda x, fx: np.exp(x)),
    np.log: _chain(np.log, lambda x, fx: 1.0 / x),
    np.log2: _chain(np.log2, lambda x, fx: 1.0 / (x * np.log(2.0))),
    np.log10: _chain(np.log10, lambda x, fx: 1.0 / (x * np.log(10.0))),
    np.log1p: _chain(np.log1p, lambda x, fx: 1.0 / (1.0 + x)),
    np.sqrt: _chain(np.sqrt, lambda x, fx: 0.5 / fx),
    np.cbrt: _chain(np.cbrt, lambda x, fx: 1.0 / (3.0 * fx * fx)),
    np.square: _chain(np.square, lambda x, fx: 2.0 * x),
    np.reciprocal: _chain(np.reciprocal, lambda x, fx: -fx * fx),
    np.absolute: _chain(np.absolute, lambda x, fx: np.sign(x)),
    np.fabs: _chain(np.fabs, lambda x, fx: np.sign(x)),
}
for _ufunc in (np.sign, np.floor, np.ceil, np.trunc, np.rint, np.floor_divide):
    _UFUNC_RULES[_ufunc] = _piecewise_constant(_ufunc)
for _ufunc in (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
               np.isfinite, np.isinf, np.isnan, np.signbit):
    _UFUNC_RULES[_ufunc] = _on_real(_ufunc)
for _name in ("vecdot", "matvec", "vecmat"):  # gufuncs of numpy >= 2.0 / 2.2
    if isinstance(getattr(np, _name, None), np.ufunc):
        _UFUNC_RULES[getattr(np, _name)] = _bilinear(getattr(np, _name))


# --- array functions ---------------------------------------------------------------------------
_FUNCTIONS = {}


def _implements(*funcs):
    def register(handler):
        for func in funcs:
            if func is not None:
                _FUNCTIONS[func] = handler
        return handler
    return register


def _np(path):
    """A numpy function by dotted name, or None on a numpy that lacks it."""
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def _no_out(name, kwargs):
    if kwargs.get("out") is not None:
        raise TypeError(f"Dual: np.{name}(..., out=...) is not supported")


def _linear_in_first(func):
    """A map linear in its first argument: apply it to both parts."""
    def handler(a, *args, **kwargs):
        _no_out(func.__name__, kwargs)
        return Dual(func(a.real, *args, **kwargs), func(a.dual, *args, **kwargs))
    return handler


for _name in ("reshape", "swapaxes", "moveaxis", "transpose", "permute_dims", "matrix_transpose",
              "linalg.matrix_transpose", "broadcast_to", "expand_dims", "squeeze", "trace",
              "linalg.trace", "diag", "diagonal", "linalg.diagonal", "mean", "cumsum", "flip", "roll",
              "ravel", "copy", "take", "take_along_axis", "repeat", "tile", "triu", "tril",
              "rot90"):
    _implements(_np(_name))(_linear_in_first(_np(_name)))


def _linear_in_sequence(func):
    """A map linear in a sequence of arrays (stack, concatenate): constants get dual part 0."""
    def handler(arrays, *args, **kwargs):
        _no_out(func.__name__, kwargs)
        arrays = [_lift(x) for x in arrays]
        return Dual(func([x.real for x in arrays], *args, **kwargs),
                    func([x.dual for x in arrays], *args, **kwargs))
    return handler


for _name in ("stack", "concatenate", "concat", "hstack", "vstack", "column_stack"):
    _implements(_np(_name))(_linear_in_sequence(_np(_name)))


def _splitting(func):
    def handler(a, *args, **kwargs):
        return [Dual(r, d) for r, d in zip(func(a.real, *args, **kwargs),
                                           func(a.dual, *args, **kwargs))]
    return handler


for _name in ("split", "array_split", "unstack"):
    _implements(_np(_name))(_splitting(_np(_name)))

for _name in ("dot", "vdot", "inner", "outer", "cross", "tensordot", "kron", "linalg.cross",
              "linalg.outer", "linalg.tensordot", "linalg.matmul", "linalg.vecdot"):
    _implements(_np(_name))(_bilinear(_np(_name)))

for _name in ("shape", "ndim", "size", "argmax", "argmin", "argsort"):
    _implements(_np(_name))(_on_real(_np(_name)))


@_implements(np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    _no_out("sum", {"out": out})
    extra = {} if initial is None else {"initial": initial}  # a constant: real part only
    return Dual(np.sum(a.real, axis, dtype, keepdims=keepdims, where=where, **extra),
                np.sum(a.dual, axis, dtype, keepdims=keepdims, where=where))


@_implements(np.round, _np("around"))
def _round(a, *args, **kwargs):
    return Dual(np.round(a.real, *args, **kwargs))


@_implements(np.where)
def _where(condition, x=None, y=None):
    if isinstance(condition, Dual):
        raise TypeError("Dual: np.where needs a boolean condition; compare the Dual first")
    if x is None or y is None:
        raise TypeError("Dual: np.where(condition) with one argument does not take Duals")
    x, y = _lift(x), _lift(y)
    return Dual(np.where(condition, x.real, y.real), np.where(condition, x.dual, y.dual))


@_implements(np.clip)
def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    """clip = minimum(maximum(a, low), high): the dual part of whichever bound or value is chosen."""
    _no_out("clip", {"out": out})
    low = a_min if a_min is not None else min
    high = a_max if a_max is not None else max
    if low is not None:
        a = np.maximum(a, low)
    if high is not None:
        a = np.minimum(a, high)
    return a


def _extreme(arg):
    """max/min: the element that argmax/argmin of the real part picks, with its dual part."""
    def handler(a, axis=None, out=None, keepdims=False):
        _no_out(arg.__name__[3:], {"out": out})
        if not (axis is None or isinstance(axis, numbers.Integral)):
            raise ValueError(f"Dual: np.max/np.min support axis=None or an int; got axis={axis!r}")
        source = a.reshape(-1) if axis is None else a
        along = 0 if axis is None else axis
        index = np.expand_dims(arg(source.real, axis=along), along)
        picked = np.take_along_axis(source, index, axis=along)
        if axis is None:
            return picked.reshape((1,) * a.ndim if keepdims else ())
        return picked if keepdims else np.squeeze(picked, axis=along)
    return handler


_implements(np.max, _np("amax"))(_extreme(np.argmax))
_implements(np.min, _np("amin"))(_extreme(np.argmin))


@_implements(np.einsum)
def _einsum(subscripts, *operands, **kwargs):
    """einsum is linear in each operand: the product rule gives one term per Dual operand."""
    if not isinstance(subscripts, str):
        raise TypeError("Dual: np.einsum takes Duals only in the subscripts-string form")
    _no_out("einsum", kwargs)
    reals = [_real(x) for x in operands]
    terms = [np.einsum(subscripts, *reals[:i], x.dual, *reals[i + 1:], **kwargs)
             for i, x in enumerate(operands) if isinstance(x, Dual)]
    return Dual(np.einsum(subscripts, *reals, **kwargs), functools.reduce(operator.add, terms))


@_implements(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    """Euclidean (vectors) or Frobenius (matrices) norm as sqrt(sum x²), like numpy: sums of
    squares that underflow to 0 give value 0 and (for a nonzero tangent) derivative inf."""
    matrix = isinstance(axis, tuple) or (axis is None and x.ndim == 2)
    vector = isinstance(axis, numbers.Integral) or (axis is None and x.ndim == 1)
    if not (ord is None or (ord == 2 and vector) or (ord == "fro" and matrix)):
        raise ValueError(f"Dual: np.linalg.norm supports ord=None, 2 (vectors) and 'fro' "
                         f"(matrices); got ord={ord!r} for shape {x.shape}, axis={axis!r}")
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


@_implements(_np("linalg.vector_norm"))
def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    if ord != 2:
        raise ValueError(f"Dual: np.linalg.vector_norm supports ord=2; got ord={ord!r}")
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


@_implements(np.linalg.inv)
def _inv(a):
    """d(A⁻¹) = -A⁻¹ dA A⁻¹."""
    inverse = np.linalg.inv(a.real)
    return Dual(inverse, -(inverse @ a.dual @ inverse))


@_implements(np.linalg.solve)
def _solve(a, b):
    """x = A⁻¹ b, dx = A⁻¹ (db - dA x)."""
    ar, br = _real(a), _real(b)
    x = np.linalg.solve(ar, br)
    rhs = []
    if isinstance(b, Dual):
        rhs.append(b.dual)
    if isinstance(a, Dual):
        rhs.append(-(a.dual @ x) if np.ndim(br) > 1 else -(a.dual @ x[..., None])[..., 0])
    return Dual(x, np.linalg.solve(ar, functools.reduce(operator.add, rhs)))


@_implements(np.linalg.det)
def _det(a):
    """d det A = det A · tr(A⁻¹ dA) (Jacobi's formula); A must be invertible."""
    value = np.linalg.det(a.real)
    return Dual(value, value * np.trace(np.linalg.solve(a.real, a.dual), axis1=-2, axis2=-1))


@_implements(np.zeros_like, np.empty_like)
def _zeros_like(a, *args, **kwargs):
    return Dual(np.zeros_like(a.real, *args, **kwargs), np.zeros_like(a.dual, *args, **kwargs))


@_implements(np.ones_like)
def _ones_like(a, *args, **kwargs):
    return Dual(np.ones_like(a.real, *args, **kwargs), np.zeros_like(a.dual, *args, **kwargs))


@_implements(np.full_like)
def _full_like(a, fill_value, *args, **kwargs):
    fill = _lift(fill_value)
    return Dual(np.full_like(a.real, fill.real, *args, **kwargs),
                np.full_like(a.dual, fill.dual, *args, **kwargs))


@_implements(np.broadcast_arrays)
def _broadcast_arrays(*arrays):
    shape = np.broadcast_shapes(*(np.shape(x) for x in arrays))
    return tuple(np.broadcast_to(_lift(x), shape) for x in arrays)


# --- ndarray-like methods: linear maps applied to both parts --------------------------------
def _linear_method(name):
    def method(self, *args, **kwargs):
        return Dual(getattr(self.real, name)(*args, **kwargs),
                    getattr(self.dual, name)(*args, **kwargs))
    method.__name__ = name
    method.__doc__ = f"ndarray.{name} of both parts (a linear map)."
    return method


for _name in ("reshape", "swapaxes", "transpose", "squeeze", "ravel", "flatten", "copy",
              "diagonal", "trace", "cumsum", "mean", "take", "repeat"):
    setattr(Dual, _name, _linear_method(_name))
Dual.sum = lambda self, *args, **kwargs: np.sum(self, *args, **kwargs)
Dual.max = lambda self, *args, **kwargs: np.max(self, *args, **kwargs)
Dual.min = lambda self, *args, **kwargs: np.min(self, *args, **kwargs)


# --- derivatives -------------------------------------------------------------------------------
def real_part(x):
    """The innermost real part of x as a plain array (x itself if it is not a Dual): the value to
    take branch decisions on (`np.where(real_part(theta2) < eps, ...)`) at any nesting depth."""
    while isinstance(x, Dual):
        x = x.real
    return np.asarray(x)


def _tangent_of(y):
    """The dual part of f's result; a result that is not a Dual did not depend on x."""
    return y.dual if isinstance(y, Dual) else np.zeros(np.shape(y))


def directional_derivative(f, x, direction):
    """d/dt f(x + t v) at t = 0 = f(Dual(x, v)).dual, one evaluation of f."""
    return _tangent_of(f(Dual(x, direction)))


def derivative(f, x):
    """f'(x) = f(Dual(x, 1)).dual, seeding every element of x with 1.

    For f acting elementwise (or x a scalar) this is the derivative at each element; in general it
    is the derivative along the all-ones direction. x may itself be a Dual (nesting).
    """
    return directional_derivative(f, x, np.ones(np.shape(x)))


def second_derivative(f, x):
    """f''(x) elementwise, from the hyper-dual Dual(Dual(x, 1), Dual(1, 0)): its .dual.dual."""
    return derivative(lambda t: derivative(f, t), x)


def jacobian(f, x):
    """J[..., i, j] = ∂f_i/∂x_j by n evaluations of f with seeds e_j ("Automatically Computing the
    Derivatives of a Vector Field using Dual Numbers").

    x has shape (..., n). f maps the last axis (batch-first) and returns shape (..., m) — or any
    shape S; the result has shape S + (n,), so a scalar f gives the gradient (..., n). With a batch
    of x, each batch element is seeded with the same e_j: J holds one Jacobian per element as long
    as f treats batch elements independently.
    """
    if np.ndim(x) == 0:
        raise ValueError(f"jacobian: x must have shape (..., n); got shape {np.shape(x)}")
    n = np.shape(x)[-1]
    basis = np.eye(n)
    return np.stack([directional_derivative(f, x, basis[j]) for j in range(n)], axis=-1)
