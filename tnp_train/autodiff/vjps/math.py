"""VJPs of tnp's mathematical functions: the elementwise ufuncs (and the operators that are
ufuncs), sums, products, differences, clipping."""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, is_inexact, tracing as _tracing, unwrap, wrap

from ..registry import defvjp, nondifferentiable, section
from ..tape import custom_gradient
from ._helpers import (_NoValue, _arr, _axes_of, _cj, _expand_to, _extremum_vjp, _full_cotangent,
                       _host, _on, _sg, _where_mask, _zeros, on_array)
from .indexing import untake

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
    # d/dy x**y = x**y log(x): for real x only where x > 0 (elsewhere x**y is real only at
    # integer y, TF's rule gives 0); a complex x takes the principal log, 0 at x == 0
    if _np.iscomplexobj(x):
        return lambda g: g * tnp.where(x == 0, 0.0, ans * tnp.log(tnp.where(x == 0, 1, x)))
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
    """Ties in max/min share the gradient equally (as autograd does).

    The mask is piecewise constant in the inputs (its derivative is zero), so it is computed on
    the backend arrays directly: one fused pass instead of several recorded tnp operations
    (``maximum(z, 0)`` is every ReLU); only ``g * mask`` is a tnp operation."""
    def vjp(g):
        if _tracing():     # being compiled: the same mask in tnp operations, which are traced
            hx, hy = tnp.equal(x, ans), tnp.equal(y, ans)
            win, other = (hx, hy) if mine == 0 else (hy, hx)
            dt = g.dtype if is_inexact(g.dtype) else ans.dtype
            return g * tnp.where(win & other, dt.type(0.5), win.astype(dt))
        a = _backend(ans)
        hx = _np.equal(unwrap(x), a)
        hy = _np.equal(unwrap(y), a)
        win, other = (hx, hy) if mine == 0 else (hy, hx)
        ties = win & other
        # on the CPU, skip the split when there is no tie (reading ``any`` is free there); on a
        # device, always split rather than wait for a device-to-host read of ``any``
        if type(a) is not _np.ndarray or ties.any():
            dt = g.dtype if is_inexact(g.dtype) else a.dtype
            win = _np.where(ties, dt.type(0.5), win.astype(dt))
        return g * wrap(win, ans.device)  # a boolean mask: one pass, g's dtype
    return vjp


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


# vecdot(x, y) = sum(conj(x) y) and vecmat(v, A) = conj(v) @ A are conjugate-linear in their
# first argument: in the tape's convention (the cotangent of z is dL/dRe z - i dL/dIm z, a
# holomorphic f passes g * f'(z)) that argument's cotangent is the conjugate of the holomorphic
# one. matvec(A, v) = A @ v conjugates nothing.
def _vecdot_x(ans, x, y, axis=-1, **k):
    return lambda g: _cj(tnp.expand_dims(g, axis) * y)


def _vecdot_y(ans, x, y, axis=-1, **k):
    return lambda g: tnp.expand_dims(g, axis) * _cj(x)


defvjp("vecdot", _vecdot_x, _vecdot_y)
defvjp("matvec", lambda ans, A, v, **k: lambda g: g[..., :, None] * v[..., None, :],
       lambda ans, A, v, **k: lambda g: tnp.matmul(tnp.swapaxes(A, -1, -2), g[..., None])[..., 0])
defvjp("vecmat", lambda ans, v, A, **k: lambda g: _cj(tnp.matmul(A, g[..., None])[..., 0]),
       lambda ans, v, A, **k: lambda g: _cj(v)[..., :, None] * g[..., None, :])

# ---------------------------------------------------------------------------- sums and products


def _sum_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    def vjp(g):
        gx = _expand_to(g, x, axis, keepdims)
        return gx * where if where is not True else gx
    return vjp


def _prod_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return lambda g: _prod_grad(g, ans, x, axis, keepdims, initial)


def _prod_grad(g, ans, x, axis, keepdims, initial=None, skip=None):
    """The cotangent of a product reduction of ``x`` (elements where the boolean ``skip`` holds
    count as 1 and get none): each element's is the product of the others in its group.

    That is ``ans / x`` unless the group holds a zero (then 0 / 0): with a zero anywhere, the
    products of the others are built from exclusive cumulative products, as TF's reduce_prod
    gradient does. On a device the zero test would wait for the device, so it always takes
    that way there."""
    xe = x if skip is None else tnp.where(skip, 1.0, x)
    a = _backend(xe)
    if type(a) is _np.ndarray and not (a == 0).any():
        r = _expand_to(g * ans, x, axis, keepdims) / xe
    else:
        r = _expand_to(g, x, axis, keepdims) * _prod_of_others(xe, axis)
        if initial is not None:
            r = r * initial
    return r if skip is None else tnp.where(skip, 0.0, r)


def _prod_of_others(x, axis):
    """For each element of ``x``, the product of the other elements of its group of a product
    over ``axis``, without dividing (tnp operations, so first-order exact at zeros)."""
    axes = _axes_of(axis, x.ndim)
    if not axes:
        return tnp.ones_like(x)
    keep = [i for i in range(x.ndim) if i not in axes]
    perm = keep + list(axes)
    xt = tnp.transpose(x, perm)
    flat = tnp.reshape(xt, tuple(xt.shape[:len(keep)]) + (-1,))
    one = tnp.ones_like(flat[..., :1])
    left = tnp.cumprod(tnp.concatenate([one, flat[..., :-1]], axis=-1), axis=-1)
    rev = tnp.flip(flat, -1)
    right = tnp.flip(tnp.cumprod(tnp.concatenate([one, rev[..., :-1]], axis=-1), axis=-1), -1)
    others = tnp.reshape(left * right, tuple(xt.shape))
    return tnp.transpose(others, tuple(int(i) for i in _np.argsort(perm)))


def _nansum_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, **k):
    return lambda g: _expand_to(g, x, axis, keepdims) * ~tnp.isnan(x)


defvjp("sum", on_array(_sum_vjp))
defvjp("prod", on_array(_prod_vjp))
defvjp("nansum", on_array(_nansum_vjp))
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
        dev = x.device if isinstance(x, tnp.ndarray) else None
        keep = tnp.ones(x.shape, dtype=bool, device=dev)     # on x's device
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
nondifferentiable(["floor", "ceil", "trunc", "rint", "fix", "around", "round",
                   "floor_divide", "heaviside", "spacing"],
                  "piecewise constant: the derivative is zero almost everywhere")
nondifferentiable(["signbit", "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor",
                   "invert", "left_shift", "right_shift", "bitwise_count"],
                  "integer or boolean output")


# ============================================================================ the rest of "math"
# Rules below build masks and indices from ``stop_gradient`` copies (or on the host): they carry
# no gradient, so an enclosing tape does not record them. Everything that depends on a
# differentiated value is written with tnp operations, so gradients of gradients work.
def _is_complex(x):
    return _np.issubdtype(getattr(x, "dtype", _np.result_type(x)), _np.complexfloating)


def _along(ax, key, ndim):
    """An index tuple applying ``key`` along axis ``ax``."""
    return (slice(None),) * ax + (key,) + (slice(None),) * (ndim - ax - 1)


def _angle_vjp(ans, z, deg=False):
    def vjp(g):
        if not _is_complex(z):
            return _zeros(z, ans.dtype)   # 0 or pi: constant on the reals
        # autograd's convention: d angle = g * conj(i z) / |z|^2
        r = g * tnp.conjugate(z * 1j) / tnp.real(z * tnp.conjugate(z))
        return r * (180.0 / _np.pi) if deg else r
    return vjp


def _imag_vjp(ans, x, **k):
    if not _is_complex(x):
        return lambda g: _zeros(x, ans.dtype)   # the imaginary part of a real array is 0
    return lambda g: g * -1j   # g on the left: -1j * (0-d g) would be a Python complex


def _sign_vjp(ans, x, **k):
    if not _is_complex(x):
        return lambda g: None      # piecewise constant on the reals: no gradient, as before
    # sign(z) = z / |z| is smooth off 0. With w = sign(z), its Wirtinger derivatives are
    # 1 / (2|z|) and -w / (2 conj(z)), so the cotangent is (g - conj(g) conj(w)^2) / (2|z|)
    def vjp(g):
        r = tnp.absolute(x)
        zero = _sg(r) == 0
        d = g - tnp.conjugate(g) * tnp.conjugate(ans * ans)
        return tnp.where(zero, 0.0, d / (2 * tnp.where(zero, 1.0, r)))
    return vjp


defvjp("sign", _sign_vjp)
defvjp("angle", _angle_vjp)
defvjp("real", _g)                   # the tape casts the real cotangent to x's (complex) dtype
defvjp("imag", _imag_vjp)
defvjp("real_if_close", _g)

# ---------------------------------------------------------------------------- special functions
_PI2 = _np.pi ** 2


def _sinc_vjp(ans, x):
    def vjp(g):
        small = tnp.absolute(_sg(x)) < 1e-2
        xs = tnp.where(small, 1.0, x)
        far = (tnp.cos(_np.pi * xs) - tnp.sinc(xs)) / xs
        x2 = x * x      # series of sinc' at 0: -(pi^2/3) x + (pi^4/30) x^3 - (pi^6/840) x^5
        near = x * (-_PI2 / 3 + x2 * (_PI2 * _PI2 / 30 - x2 * (_PI2 ** 3 / 840)))
        return g * tnp.where(small, near, far)
    return vjp


defvjp("sinc", _sinc_vjp)


def _scipy_i1(xh):
    try:
        from scipy.special import i1
    except ImportError:  # scipy is not a dependency of tnp
        raise NotImplementedError(
            "the gradient of tnp.i0 is the modified Bessel function i1, taken from "
            "scipy.special.i1; install scipy to differentiate tnp.i0") from None
    return i1(xh)


@custom_gradient
def _i1(x):
    """i1(x) (SciPy on the host), a differentiable primitive: i1' = i0 - i1/x (1/2 at 0)."""
    y = _on(_scipy_i1(_host(x)), x).astype(x.dtype)

    def grad(dy):
        zero = _sg(x) == 0
        xs = tnp.where(zero, 1.0, x)
        return dy * tnp.where(zero, 0.5, tnp.i0(xs) - _i1(xs) / xs)
    return y, grad


defvjp("i0", lambda ans, x: lambda g: g * _i1(x))

# ---------------------------------------------------------------------------- nan handling, phase


def _nan_to_num_x(ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    def vjp(g):
        xc = _sg(x)
        if _is_complex(x):
            return (tnp.real(g) * tnp.isfinite(tnp.real(xc))
                    + (tnp.imag(g) * tnp.isfinite(tnp.imag(xc))) * 1j)
        return g * tnp.isfinite(xc)
    return vjp


def _nan_to_num_fill(test):
    def rule(ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
        return lambda g: tnp.sum(g * test(_sg(x)))
    return rule


_fill_nan = _nan_to_num_fill(tnp.isnan)
_fill_pinf = _nan_to_num_fill(lambda x: tnp.isinf(x) & (x > 0))
_fill_ninf = _nan_to_num_fill(lambda x: tnp.isinf(x) & (x < 0))
defvjp("nan_to_num", _nan_to_num_x, None, _fill_nan, _fill_pinf, _fill_ninf,
       nan=_fill_nan, posinf=_fill_pinf, neginf=_fill_ninf)


def _nancumsum_vjp(ans, a, axis=None, dtype=None, out=None):
    return lambda g: _cumsum_vjp(ans, a, axis)(g) * ~tnp.isnan(_sg(a))


def _nancumprod_vjp(ans, a, axis=None, dtype=None, out=None):
    def vjp(g):
        nan = tnp.isnan(_sg(a))
        a1 = tnp.where(nan, 1.0, a)        # NaNs count as ones
        return tnp.where(nan, 0.0, _cumprod_vjp(ans, a1, axis)(g))
    return vjp


defvjp("nancumsum", _nancumsum_vjp)
defvjp("nancumprod", _nancumprod_vjp)
defvjp("unwrap", _g)   # p plus a piecewise-constant multiple of the period

# ---------------------------------------------------------------------------- differences


def _diff_adjoint(g, axis, n):
    """The adjoint of ``n`` first differences along ``axis``: itself a difference (of ``g``
    padded with zeros), so this rule is its own second-order rule."""
    for _ in range(n):
        g = -tnp.diff(g, axis=axis, prepend=0, append=0)
    return g


def _pad_len(p, ax):
    if p is _NoValue:
        return 0
    return 1 if _np.ndim(p) == 0 else _np.shape(p)[ax]


def _diff_rule(part):
    def rule(ans, a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
        def vjp(g):
            if n == 0:
                return g if part == "a" else None
            ax = axis % a.ndim
            full = _diff_adjoint(g, ax, n)
            k0 = _pad_len(prepend, ax)
            k1 = k0 + a.shape[ax]
            key = {"a": slice(k0, k1), "prepend": slice(0, k0), "append": slice(k1, None)}[part]
            return full[_along(ax, key, full.ndim)]
        return vjp
    return rule


defvjp("diff", _diff_rule("a"), None, None, _diff_rule("prepend"), _diff_rule("append"),
       prepend=_diff_rule("prepend"), append=_diff_rule("append"))


def _ediff1d_rule(part):
    def rule(ans, ary, to_end=None, to_begin=None):
        nb = 0 if to_begin is None else int(_np.size(to_begin))
        ne = 0 if to_end is None else int(_np.size(to_end))

        def vjp(g):
            m = g.shape[0]
            if part == "ary":
                if ary.size == 0:
                    return _zeros(ary, g.dtype)
                gx = -tnp.diff(g[nb:m - ne], prepend=0, append=0)
                return gx if ary.ndim == 1 else tnp.reshape(gx, ary.shape)
            src, piece = (to_begin, g[:nb]) if part == "to_begin" else (to_end, g[m - ne:])
            shape = _np.shape(src)
            return piece if len(shape) == 1 else tnp.reshape(piece, shape)
        return vjp
    return rule


defvjp("ediff1d", _ediff1d_rule("ary"), _ediff1d_rule("to_end"), _ediff1d_rule("to_begin"),
       to_end=_ediff1d_rule("to_end"), to_begin=_ediff1d_rule("to_begin"))


def _gradient_diagonals(n, spacing, edge_order):
    """``d[k + 2, i] = M[i, i + k]`` for k in -2..2, M the matrix of ``numpy.gradient`` along one
    axis of length n (each row touches at most columns i-2..i+2). NumPy computes them: applied
    to the indicator of the columns j = r (mod 5), row i of the result is M[i, j] for the one j
    within i-2..i+2 with that residue."""
    j = _np.arange(n)
    d = _np.zeros((5, n))
    for r in range(5):
        res = _np.gradient((j % 5 == r).astype(_np.float64), spacing, edge_order=edge_order)
        k = (r - j + 2) % 5 - 2
        d[k + 2, j] = res
    return d


def _gradient_adjoint(g, ax, n, spacing, edge_order):
    d = _gradient_diagonals(n, spacing, edge_order)
    shape = tuple(g.shape)
    bshape = (n,) + (1,) * (g.ndim - ax - 1)
    total = None
    for k in range(-2, 3):
        dk = d[k + 2]
        if not dk.any():
            continue
        u = g * _on(dk.reshape(bshape), g, dtype=g.dtype if is_inexact(g.dtype) else None)
        if k != 0:     # gx[j] += u[j - k]
            u = untake(u[_along(ax, slice(max(0, -k), n - max(0, k)), g.ndim)],
                       _along(ax, slice(max(0, k), n - max(0, -k)), g.ndim), shape)
        total = u if total is None else total + u
    return total if total is not None else g * 0


def _gradient_vjp(ans, f, *varargs, axis=None, edge_order=1):
    axes = tuple(range(f.ndim)) if axis is None else \
        tuple(a % f.ndim for a in ((axis,) if isinstance(axis, (int, _np.integer)) else axis))
    if len(varargs) == 0:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and _np.ndim(varargs[0]) == 0:
        spacings = [varargs[0]] * len(axes)
    else:
        spacings = list(varargs)
    spacings = [s if _np.ndim(s) == 0 else _host(s) for s in spacings]
    spacings = [float(_host(s)) if _np.ndim(s) == 0 else s for s in spacings]

    def vjp(g):
        gs = g if isinstance(g, (tuple, list)) else (g,)
        total = None
        for gi, ax, h in zip(gs, axes, spacings):
            if gi is None:
                continue
            t = _gradient_adjoint(gi, ax, f.shape[ax], h, edge_order)
            total = t if total is None else total + t
        return total
    return vjp


defvjp("gradient", _gradient_vjp)   # with respect to f; the spacings get no gradient


# ---------------------------------------------------------------------------- cross product
def _to_last(x, ax):
    ax = ax % x.ndim
    return x if ax == x.ndim - 1 else tnp.moveaxis(x, ax, -1)


def _as3(v):
    """A 2-vector (last axis) as the 3-vector (v0, v1, 0); a 3-vector as itself."""
    if v.shape[-1] == 3:
        return v
    return untake(v, (Ellipsis, slice(0, 2)), tuple(v.shape[:-1]) + (3,))


def _cross_rule(which):
    def rule(ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if axis is not None:
            axisa = axisb = axisc = axis

        def vjp(g):
            A = _as3(_to_last(_arr(a), axisa))
            B = _as3(_to_last(_arr(b), axisb))
            if a.shape[axisa] == 2 and b.shape[axisb] == 2:   # g is the z component
                G = untake(g[..., None], (Ellipsis, slice(2, 3)), tuple(g.shape) + (3,))
            else:
                G = _to_last(g, axisc)
            x, ax = (_arr(a), axisa) if which == 0 else (_arr(b), axisb)
            r = tnp.cross(B, G) if which == 0 else tnp.cross(G, A)
            k = x.shape[ax]
            if k == 2:
                r = r[..., :2]
            extra = r.ndim - x.ndim
            if extra > 0:
                r = tnp.sum(r, axis=tuple(range(extra)))
            ax = ax % x.ndim
            return r if ax == x.ndim - 1 else tnp.moveaxis(r, -1, ax)
        return vjp
    return rule


defvjp("cross", _cross_rule(0), _cross_rule(1))


# ---------------------------------------------------------------------------- integration
def _unreduce(g, ax):
    """The cotangent of a reduction over axis ``ax`` with that axis put back (length 1)."""
    return g[_along(ax, None, g.ndim + 1)]


def _trapezoid_parts(y, x, axis):
    ax = axis % y.ndim
    n = y.shape[ax]
    lo = y[_along(ax, slice(None, -1), y.ndim)]
    hi = y[_along(ax, slice(1, None), y.ndim)]
    return ax, n, (lo + hi) / 2.0


def _trapezoid_y(ans, y, x=None, dx=1.0, axis=-1):
    def vjp(g):
        ax = axis % y.ndim
        n = y.shape[ax]
        ge = _unreduce(g, ax)
        if x is None:
            w = _np.ones(n)
            w[0] = w[-1] = 0.5
            if n == 1:
                w[0] = 0.0
            w = _on(w.reshape((n,) + (1,) * (y.ndim - ax - 1)), y) * dx
        else:
            if x.ndim == 1:
                d = tnp.diff(x)[(slice(None),) + (None,) * (y.ndim - ax - 1)]
                dax = 0
            else:
                d = tnp.diff(x, axis=axis)
                dax = axis % d.ndim
            shape = list(d.shape)
            shape[dax] = n
            shape = tuple(shape)
            w = (untake(d, _along(dax, slice(1, None), d.ndim), shape)
                 + untake(d, _along(dax, slice(None, -1), d.ndim), shape)) / 2.0
        return ge * w
    return vjp


def _trapezoid_x(ans, y, x=None, dx=1.0, axis=-1):
    def vjp(g):
        ax, n, mid = _trapezoid_parts(y, x, axis)
        gd = _unreduce(g, ax) * mid                                  # the cotangent of diff(x)
        if x.ndim == 1:
            others = tuple(i for i in range(gd.ndim) if i != ax)
            if others:
                gd = tnp.sum(gd, axis=others)
            return -tnp.diff(gd, prepend=0, append=0)
        return -tnp.diff(gd, axis=axis, prepend=0, append=0)
    return vjp


def _trapezoid_dx(ans, y, x=None, dx=1.0, axis=-1):
    def vjp(g):
        if x is not None:
            return None
        ax, n, mid = _trapezoid_parts(y, x, axis)
        return tnp.sum(g * tnp.sum(mid, axis=ax))
    return vjp


defvjp("trapezoid", _trapezoid_y, _trapezoid_x, _trapezoid_dx, x=_trapezoid_x, dx=_trapezoid_dx)


# ---------------------------------------------------------------------------- interpolation
def _interp_setup(x, xp, period):
    """Host constants of ``numpy.interp``: for each x, the two neighbouring sample indices (into
    fp), the node coordinates, and where x lies left/right of the samples."""
    xh = _np.asarray(_host(x), dtype=_np.float64)
    xph = _np.asarray(_host(xp), dtype=_np.float64)
    n = xph.shape[0]
    if period is None:
        emap = _np.arange(n)
        xe = xph
        shift = _np.zeros_like(xh)
    else:
        period = abs(float(_host(period)))
        xq = xh % period
        shift = xh - xq
        xpp = xph % period
        order = _np.argsort(xpp, kind="stable")
        xs = xpp[order]
        emap = _np.concatenate([order[-1:], order, order[:1]])
        xe = _np.concatenate([xs[-1:] - period, xs, xs[:1] + period])
    xq = xh - shift
    m = xe.shape[0]
    idx = _np.clip(_np.searchsorted(xe, xq, side="right") - 1, 0, max(m - 2, 0))
    idx1 = _np.minimum(idx + 1, m - 1)
    below = xq < xe[0]
    above = xq > xe[-1]
    return emap, xe, shift, idx, idx1, below, above


def _interp_rule(part):
    def rule(ans, x, xp, fp, left=None, right=None, period=None):
        def vjp(g):
            emap, xe, shift, idx, idx1, below, above = _interp_setup(x, xp, period)
            inside = ~(below | above)
            x0 = xe[idx]
            span = xe[idx1] - x0
            span = _np.where(span == 0, 1.0, span)
            lo = _on(emap[idx], g)
            hi = _on(emap[idx1], g)
            if part == "x":
                fpa = fp if isinstance(fp, tnp.ndarray) else _on(fp, g)
                slope = (fpa[hi] - fpa[lo]) / _on(span, g)
                return g * slope * _on(inside, g)
            if part in ("left", "right"):
                return tnp.sum(g * _on(below if part == "left" else above, g))
            # part == "fp"
            xv = x if isinstance(x, tnp.ndarray) else _on(x, g)
            t = (xv - _on(shift + x0, g)) / _on(span, g)
            ins = _on(inside, g)
            wlo = (1 - t) * ins
            whi = t * ins
            if left is None:
                wlo = wlo + _on(below, g)
            if right is None:
                whi = whi + _on(above, g)
            n = (len(emap) if period is None else len(emap) - 2,)
            return untake(g * wlo, lo, n) + untake(g * whi, hi, n)
        return vjp
    return rule


defvjp("interp", _interp_rule("x"), None, _interp_rule("fp"), _interp_rule("left"),
       _interp_rule("right"), left=_interp_rule("left"), right=_interp_rule("right"))


# ---------------------------------------------------------------------------- convolution
def _convolve_rule(which):
    # y = a * v (full): ga_i = sum_k g_k v_{k-i}, gv_j = sum_k g_k a_{k-j} (correlate conjugates
    # its second argument, so complex inputs get conj() first: autograd's convention)
    def rule(ans, a, v, mode="full"):
        def vjp(g):
            gf = _full_cotangent(g, "convolve", a, v, mode)
            return tnp.correlate(gf, _cj(_arr(v if which == 0 else a)), "valid")
        return vjp
    return rule


defvjp("convolve", _convolve_rule(0), _convolve_rule(1))


# ---------------------------------------------------------------------------- ufunc methods
# The tape sees ``ufunc.method`` calls under names such as "add.reduce", always as
# (array,) plus keywords (axis=0 by default) for reduce/accumulate, and (A, B) for outer.
def _reduce_kw(rule):
    def wrapped(ans, x, axis=0, dtype=None, out=None, keepdims=False, initial=_NoValue,
                where=True):
        return rule(ans, x, axis=axis, keepdims=keepdims, where=where)
    return wrapped


def _masked(vjp, where, x):
    m = _where_mask(where, x)
    return vjp if m is None else (lambda g: vjp(g) * m)


def _add_reduce(ans, x, axis=0, keepdims=False, where=True):
    return _sum_vjp(ans, x, axis=axis, keepdims=keepdims,
                    where=True if where is _NoValue else where)


def _multiply_reduce(ans, x, axis=0, keepdims=False, where=True):
    return _prod_where_vjp(ans, x, axis=axis, keepdims=keepdims, where=where)


def _logaddexp_reduce(base):
    exp = tnp.exp if base == "e" else tnp.exp2

    def rule(ans, x, axis=0, keepdims=False, where=True):
        return _masked(lambda g: _expand_to(g, x, axis, keepdims)
                       * exp(x - _expand_to(ans, x, axis, keepdims)), where, x)
    return rule


defvjp("add.reduce", _reduce_kw(_add_reduce))
defvjp("multiply.reduce", _reduce_kw(_multiply_reduce))
defvjp("logaddexp.reduce", _reduce_kw(_logaddexp_reduce("e")))
defvjp("logaddexp2.reduce", _reduce_kw(_logaddexp_reduce("2")))
for _name in ("maximum.reduce", "minimum.reduce", "fmax.reduce", "fmin.reduce"):
    defvjp(_name, _reduce_kw(lambda ans, x, axis=0, keepdims=False, where=True:
                             _extremum_vjp(ans, x, axis, keepdims, where)))
defvjp("add.accumulate", lambda ans, x, axis=0, dtype=None, out=None:
       _cumsum_vjp(ans, x, axis=axis))
defvjp("multiply.accumulate", lambda ans, x, axis=0, dtype=None, out=None:
       _cumprod_vjp(ans, x, axis=axis))


def _outer_rule(op, which):
    """``ufunc.outer(A, B)[i..., j...] = op(A[i...], B[j...])``."""
    def rule(ans, A, B, **k):
        na = _np.ndim(A)
        nb = _np.ndim(B)

        def vjp(g):
            Ab = tnp.reshape(A, tuple(_np.shape(A)) + (1,) * nb) if na and nb else A
            if op == "add":
                r = g
            elif op == "subtract":
                r = g if which == 0 else -g
            elif op == "multiply":
                r = g * (B if which == 0 else Ab)
            else:   # divide
                r = g / B if which == 0 else -g * Ab / (B * B)
            axes = tuple(range(na, na + nb)) if which == 0 else tuple(range(na))
            return tnp.sum(r, axis=axes) if axes else r
        return vjp
    return rule


for _op in ("add", "subtract", "multiply", "divide"):
    defvjp(_op + ".outer", _outer_rule(_op, 0), _outer_rule(_op, 1))

_INT_UFUNCS = ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
               "bitwise_xor", "gcd", "lcm", "left_shift", "right_shift")
_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
nondifferentiable([f"{u}.{m}" for u in _INT_UFUNCS for m in ("reduce", "accumulate", "outer",
                                                              "reduceat")]
                  + [f"{u}.{m}" for u in _COMPARISONS for m in ("reduce", "accumulate", "outer")],
                  "integer or boolean output")
nondifferentiable(["floor_divide.reduce", "floor_divide.accumulate", "floor_divide.outer"],
                  "piecewise constant: the derivative is zero almost everywhere")


# ---------------------------------------------------------------------------- corrections
# (registered again, replacing the rules above: ``where=`` masks of prod/nanprod/nansum, and
# |z| of complex z, whose cotangent is g * conj(z) / |z| in the tape's convention)
def _prod_where_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                    where=True):
    def vjp(g):
        m = _where_mask(where, x)
        return _prod_grad(g, ans, x, axis, keepdims, initial, None if m is None else ~m)
    return vjp


def _nanprod_where_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                       where=True):
    # NaNs count as ones, so they are skipped (not divided by: the second-order pass would
    # differentiate that division too, with a zero cotangent, and 0 * (1 / NaN^2) is NaN)
    def vjp(g):
        skip = tnp.isnan(_sg(x))
        m = _where_mask(where, x)
        return _prod_grad(g, ans, x, axis, keepdims, initial, skip if m is None else skip | ~m)
    return vjp


def _nansum_where_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                      where=True):
    return _masked(_nansum_vjp(ans, x, axis=axis, keepdims=keepdims), where, x)


def _abs_vjp(ans, x, **k):
    if not _is_complex(x):
        return lambda g: g * tnp.sign(x)
    return lambda g: g * tnp.conjugate(x) / tnp.where(_sg(ans) == 0, 1.0, ans)


defvjp("prod", on_array(_prod_where_vjp))
defvjp("nanprod", on_array(_nanprod_where_vjp))
defvjp("nansum", on_array(_nansum_where_vjp))
defvjp("absolute", _abs_vjp)
