"""VJPs of tnp's mathematical functions: the elementwise ufuncs (and the operators that are
ufuncs), sums, products, differences, clipping."""
from __future__ import annotations

import numpy as _np

import tnp

from ..registry import defvjp, nondifferentiable, section

section("math")

_LN2 = float(_np.log(2.0))
_LN10 = float(_np.log(10.0))


def _g(ans, *args, **kwargs):
    return lambda g: g


def _neg(ans, *args, **kwargs):
    return lambda g: -g


# ---------------------------------------------------------------------------- arithmetic
defvjp("add", _g, _g)
defvjp("subtract", _g, _neg)
defvjp("multiply", lambda ans, x, y, **k: lambda g: g * y,
       lambda ans, x, y, **k: lambda g: g * x)
defvjp("divide", lambda ans, x, y, **k: lambda g: g / y,
       lambda ans, x, y, **k: lambda g: -g * x / (y * y))
defvjp("negative", _neg)
defvjp("positive", _g)
defvjp("reciprocal", lambda ans, x, **k: lambda g: -g * ans * ans)


def _power_x(ans, x, y, **k):
    # d/dx x**y = y * x**(y-1); written with where() so that y == 0 gives 0, not nan at x == 0
    return lambda g: g * tnp.where(y == 0, 0.0, y * tnp.power(x, tnp.where(y == 0, 1, y - 1)))


def _power_y(ans, x, y, **k):
    return lambda g: g * tnp.where(x > 0, ans * tnp.log(tnp.where(x > 0, x, 1)), 0.0)


defvjp("power", _power_x, _power_y)
defvjp("float_power", _power_x, _power_y)
defvjp("remainder", _g, lambda ans, x, y, **k: lambda g: -g * tnp.floor_divide(x, y))
defvjp("fmod", _g, lambda ans, x, y, **k: lambda g: -g * tnp.trunc(x / y))
defvjp("divmod", lambda ans, x, y, **k: lambda g: g[1],
       lambda ans, x, y, **k: lambda g: -g[1] * ans[0])
defvjp("modf", lambda ans, x, **k: lambda g: g[0])
defvjp("frexp", lambda ans, x, **k: lambda g: g[0] * tnp.ldexp(1.0, -ans[1]))
defvjp("ldexp", lambda ans, x, n, **k: lambda g: g * tnp.ldexp(1.0, n), None)
defvjp("copysign", lambda ans, x, y, **k: lambda g: g * tnp.sign(x) * tnp.sign(ans), None)
defvjp("nextafter", _g, None)


def _balanced(ans, x, y, mine):
    """Ties in max/min share the gradient equally (as autograd does)."""
    hit_x = (x == ans)
    hit_y = (y == ans)
    return lambda g: g * (hit_x if mine == 0 else hit_y) / (hit_x.astype(ans.dtype) + hit_y)


for _name in ("maximum", "minimum", "fmax", "fmin"):
    defvjp(_name, lambda ans, x, y, **k: _balanced(ans, x, y, 0),
           lambda ans, x, y, **k: _balanced(ans, x, y, 1))

# ---------------------------------------------------------------------------- powers, exp, log
defvjp("sqrt", lambda ans, x, **k: lambda g: g / (2 * ans))
defvjp("cbrt", lambda ans, x, **k: lambda g: g / (3 * ans * ans))
defvjp("square", lambda ans, x, **k: lambda g: 2 * g * x)
defvjp("absolute", lambda ans, x, **k: lambda g: g * tnp.sign(x))
defvjp("fabs", lambda ans, x, **k: lambda g: g * tnp.sign(x))
defvjp("exp", lambda ans, x, **k: lambda g: g * ans)
defvjp("exp2", lambda ans, x, **k: lambda g: g * ans * _LN2)
defvjp("expm1", lambda ans, x, **k: lambda g: g * (ans + 1))
defvjp("log", lambda ans, x, **k: lambda g: g / x)
defvjp("log2", lambda ans, x, **k: lambda g: g / (x * _LN2))
defvjp("log10", lambda ans, x, **k: lambda g: g / (x * _LN10))
defvjp("log1p", lambda ans, x, **k: lambda g: g / (x + 1))
defvjp("logaddexp", lambda ans, x, y, **k: lambda g: g * tnp.exp(x - ans),
       lambda ans, x, y, **k: lambda g: g * tnp.exp(y - ans))
defvjp("logaddexp2", lambda ans, x, y, **k: lambda g: g * tnp.exp2(x - ans),
       lambda ans, x, y, **k: lambda g: g * tnp.exp2(y - ans))

# ---------------------------------------------------------------------------- trigonometric
defvjp("sin", lambda ans, x, **k: lambda g: g * tnp.cos(x))
defvjp("cos", lambda ans, x, **k: lambda g: -g * tnp.sin(x))
defvjp("tan", lambda ans, x, **k: lambda g: g * (1 + ans * ans))
defvjp("arcsin", lambda ans, x, **k: lambda g: g / tnp.sqrt(1 - x * x))
defvjp("arccos", lambda ans, x, **k: lambda g: -g / tnp.sqrt(1 - x * x))
defvjp("arctan", lambda ans, x, **k: lambda g: g / (1 + x * x))
defvjp("arctan2", lambda ans, y, x, **k: lambda g: g * x / (x * x + y * y),
       lambda ans, y, x, **k: lambda g: -g * y / (x * x + y * y))
defvjp("hypot", lambda ans, x, y, **k: lambda g: g * x / ans,
       lambda ans, x, y, **k: lambda g: g * y / ans)
defvjp("sinh", lambda ans, x, **k: lambda g: g * tnp.cosh(x))
defvjp("cosh", lambda ans, x, **k: lambda g: g * tnp.sinh(x))
defvjp("tanh", lambda ans, x, **k: lambda g: g * (1 - ans * ans))
defvjp("arcsinh", lambda ans, x, **k: lambda g: g / tnp.sqrt(x * x + 1))
defvjp("arccosh", lambda ans, x, **k: lambda g: g / tnp.sqrt(x * x - 1))
defvjp("arctanh", lambda ans, x, **k: lambda g: g / (1 - x * x))
defvjp(("degrees", "rad2deg"), lambda ans, x, **k: lambda g: g * (180.0 / _np.pi))
defvjp(("radians", "deg2rad"), lambda ans, x, **k: lambda g: g * (_np.pi / 180.0))

# ---------------------------------------------------------------------------- complex parts
defvjp("conjugate", lambda ans, x, **k: lambda g: tnp.conjugate(g))

# ---------------------------------------------------------------------------- linear algebra ufuncs


def _matmul_x(ans, x, y, **k):
    def vjp(g):
        if x.ndim == 1 and y.ndim == 1:
            return g * y
        yy = y[:, None] if y.ndim == 1 else y
        gg = g[..., None] if y.ndim == 1 else g
        if x.ndim == 1:
            gg = gg[..., None, :]
        gx = tnp.matmul(gg, tnp.swapaxes(yy, -1, -2))
        return gx[..., 0, :] if x.ndim == 1 else gx
    return vjp


def _matmul_y(ans, x, y, **k):
    def vjp(g):
        if x.ndim == 1 and y.ndim == 1:
            return g * x
        xx = x[None, :] if x.ndim == 1 else x
        gg = g[..., None, :] if x.ndim == 1 else g
        if y.ndim == 1:
            gg = gg[..., None]
        gy = tnp.matmul(tnp.swapaxes(xx, -1, -2), gg)
        return gy[..., 0] if y.ndim == 1 else gy
    return vjp


defvjp("matmul", _matmul_x, _matmul_y)


def _vecdot_x(ans, x, y, axis=-1, **k):
    return lambda g: tnp.expand_dims(g, axis) * tnp.conjugate(y)


def _vecdot_y(ans, x, y, axis=-1, **k):
    return lambda g: tnp.expand_dims(g, axis) * x


defvjp("vecdot", _vecdot_x, _vecdot_y)
defvjp("matvec", lambda ans, A, v, **k: lambda g: g[..., :, None] * tnp.conjugate(v)[..., None, :],
       lambda ans, A, v, **k: lambda g: tnp.matmul(tnp.swapaxes(A, -1, -2), g[..., None])[..., 0])
defvjp("vecmat", lambda ans, v, A, **k: lambda g: tnp.matmul(A, g[..., None])[..., 0],
       lambda ans, v, A, **k: lambda g: tnp.conjugate(v)[..., :, None] * g[..., None, :])

# ---------------------------------------------------------------------------- sums and products


def _expand_to(g, x, axis, keepdims):
    """Broadcast the cotangent of a reduction back to the input's shape."""
    shape = tuple(x.shape)
    if axis is None:
        return tnp.broadcast_to(tnp.reshape(g, (1,) * len(shape)) if len(shape) else g, shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % len(shape) for a in axes)
    if not keepdims:
        for a in sorted(axes):
            g = tnp.expand_dims(g, a)
    return tnp.broadcast_to(g, shape)


def _sum_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    def vjp(g):
        gx = _expand_to(g, x, axis, keepdims)
        return gx * where if where is not True else gx
    return vjp


def _prod_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return lambda g: _expand_to(g * ans, x, axis, keepdims) / x


def _nansum_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, **k):
    return lambda g: _expand_to(g, x, axis, keepdims) * ~tnp.isnan(x)


defvjp("sum", _sum_vjp)
defvjp("prod", _prod_vjp)
defvjp("nansum", _nansum_vjp)
defvjp("nanprod", lambda ans, x, axis=None, dtype=None, out=None, keepdims=False, **k:
       lambda g: tnp.where(tnp.isnan(x), 0.0, _expand_to(g * ans, x, axis, keepdims) / x))


def _reverse_cumsum(g, axis):
    return tnp.flip(tnp.cumsum(tnp.flip(g, axis), axis), axis)


def _cumsum_vjp(ans, x, axis=None, dtype=None, out=None, **k):
    def vjp(g):
        if axis is None:
            return tnp.reshape(_reverse_cumsum(g, 0), x.shape)
        return _reverse_cumsum(g, axis)
    return vjp


def _cumprod_vjp(ans, x, axis=None, dtype=None, out=None, **k):
    def vjp(g):
        if axis is None:
            return tnp.reshape(_reverse_cumsum(g * ans, 0), x.shape) / x
        return _reverse_cumsum(g * ans, axis) / x
    return vjp


defvjp(("cumsum", "cumulative_sum"), _cumsum_vjp)
defvjp(("cumprod", "cumulative_prod"), _cumprod_vjp)


def _clip_x(ans, x, a_min=None, a_max=None, *args, **k):
    lo = k.get("min", a_min)
    hi = k.get("max", a_max)

    def vjp(g):
        keep = tnp.ones(x.shape, dtype=bool)
        if lo is not None:
            keep = keep & (x >= lo)
        if hi is not None:
            keep = keep & (x <= hi)
        return g * keep
    return vjp


def _clip_bound(which):
    def rule(ans, x, a_min=None, a_max=None, *args, **k):
        b = a_min if which == "min" else a_max
        return lambda g: g * ((x < b) if which == "min" else (x > b))
    return rule


defvjp("clip", _clip_x, _clip_bound("min"), _clip_bound("max"))

# ---------------------------------------------------------------------------- zero almost everywhere
nondifferentiable(["sign", "floor", "ceil", "trunc", "rint", "fix", "around", "round",
                   "floor_divide", "heaviside", "spacing"],
                  "piecewise constant: the derivative is zero almost everywhere")
nondifferentiable(["signbit", "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor",
                   "invert", "left_shift", "right_shift", "bitwise_count"],
                  "integer or boolean output")
