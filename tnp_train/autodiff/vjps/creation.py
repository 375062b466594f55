"""VJPs of tnp's array creation routines.

Conversions (``array``, ``asarray``, ``copy``...) pass the cotangent back to the array (or to
each array of a list) they were given; ``full``/``full_like`` send it to ``fill_value``;
``linspace``/``logspace``/``geomspace`` (and ``arange``) are differentiable in their start, stop
(step, base) arrays; ``meshgrid`` sums each output's cotangent back to its vector. Functions
whose output does not depend on the values of their array inputs (``zeros_like``, ``eye``,
window functions of a length) are declared non-differentiable.
"""
from __future__ import annotations

import math as _math

import numpy as _np

import tnp
from tnp import ndarray

from ..registry import defvjp, defvjp_argnum, is_float, nondifferentiable, section, unbroadcast
from .indexing import gather_vjp, index_map

section("creation")


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def _none(g):
    return None


# ---------------------------------------------------------------------------- conversions
def _as_vjp(ans, obj=None, *args, **kw):
    """The converted array is the input (reshaped by ``ndmin``, cast by ``dtype``); a list of
    arrays was stacked along a new first axis (after any ``ndmin`` axes)."""
    if not is_float(ans):
        return _none
    if isinstance(obj, (list, tuple)):
        n = len(obj)

        def vjp(g):
            rows = tnp.reshape(g, (n, -1))
            return [tnp.reshape(rows[j], _shape(e)) if isinstance(e, ndarray) else None
                    for j, e in enumerate(obj)]
        return vjp
    return lambda g: tnp.reshape(g, _shape(obj))


defvjp(["array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
        "asarray_chkfinite", "require", "copy", "from_dlpack"], _as_vjp)


def _frombuffer_vjp(ans, buffer, dtype=float, count=-1, offset=0, **kw):
    if not is_float(ans):
        return _none
    x = buffer
    if _np.dtype(dtype) != x.dtype or not x.flags.c_contiguous:
        def fail(g):
            raise NotImplementedError(
                f"frombuffer: no gradient when the bytes of a {x.dtype} array are read as "
                f"{_np.dtype(dtype)} (or the array is not C-contiguous); use astype()")
        return fail
    start = int(offset) // x.itemsize
    idx = _np.arange(start, start + ans.size, dtype=_np.intp)
    return lambda g: gather_vjp(g, idx, x.shape)


defvjp("frombuffer", _frombuffer_vjp)


def _fromiter_vjp(ans, it, dtype=None, count=-1, **kw):
    if not is_float(ans):
        return _none
    if it.ndim != 1:
        def fail(g):
            raise NotImplementedError("fromiter: gradients only through a 1-d array iterable")
        return fail
    idx = _np.arange(ans.size, dtype=_np.intp)
    return lambda g: gather_vjp(g, idx, it.shape)


defvjp("fromiter", _fromiter_vjp)

# ---------------------------------------------------------------------------- matrices


def _diag_vjp(ans, v, k=0, **kw):
    s = _shape(v)
    if len(s) == 1:
        idx = _np.diag(index_map(s) + 1, k) - 1
    else:
        idx = _np.diag(index_map(s), k)
    return lambda g: gather_vjp(g, idx, s)


defvjp("diag", _diag_vjp)


def _diagflat_vjp(ans, v, k=0, **kw):
    s = _shape(v)
    idx = _np.diagflat(index_map(s) + 1, k) - 1
    return lambda g: gather_vjp(g, idx, s)


defvjp("diagflat", _diagflat_vjp)
defvjp("tril", lambda ans, m, k=0, **kw: lambda g: tnp.tril(g, k))
defvjp("triu", lambda ans, m, k=0, **kw: lambda g: tnp.triu(g, k))


def _vander_vjp(ans, x, N=None, increasing=False, **kw):
    n = ans.shape[1]
    p = _np.arange(n) if increasing else _np.arange(n)[::-1]
    coef = p.astype(float)
    low = _np.maximum(p - 1, 0).astype(float)
    # d x**p / dx = p x**(p-1) (0 for p = 0)
    return lambda g: tnp.sum(g * (coef * tnp.power(x[:, None], low)), axis=1)


defvjp("vander", _vander_vjp)

# ---------------------------------------------------------------------------- filled arrays


def _fill_vjp(ans, *args, **kw):
    if "fill_value" in kw:
        fv = kw["fill_value"]
    else:
        fv = args[1]
    return _to_fill(ans, fv)


def _to_fill(ans, fv):
    if not is_float(ans):
        return _none
    return lambda g: unbroadcast(g, _shape(fv))


defvjp("full", None, _fill_vjp, fill_value=_fill_vjp)
defvjp("full_like", None, _fill_vjp, fill_value=_fill_vjp)

# ---------------------------------------------------------------------------- ranges


def _t(num, endpoint):
    """Fractions of the way from start to stop of linspace's samples."""
    div = num - 1 if endpoint else num
    return _np.arange(num, dtype=float) / div if div > 0 else _np.zeros(num)


def _last(g, ans, axis):
    return tnp.moveaxis(g, axis % ans.ndim, -1)


def _linspace_rule(which):
    def rule(ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kw):
        samples = ans[0] if retstep else ans
        if not is_float(samples):
            return _none
        num = int(num)
        t = _t(num, endpoint)
        w = (1 - t) if which == "start" else t
        div = num - 1 if endpoint else num
        dstep = ((-1.0 if which == "start" else 1.0) / div) if div > 0 else 0.0
        target = _shape(start if which == "start" else stop)

        def vjp(g):
            gs = g[0] if retstep else g
            c = tnp.sum(_last(gs, samples, axis) * w, axis=-1)
            if retstep and g[1] is not None and dstep:
                c = c + g[1] * dstep
            return unbroadcast(c, target)
        return vjp
    return rule


defvjp("linspace", _linspace_rule("start"), _linspace_rule("stop"),
       start=_linspace_rule("start"), stop=_linspace_rule("stop"))


def _logspace_rule(which):
    def rule(ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, **kw):
        if not is_float(ans):
            return _none
        t = _t(int(num), endpoint)
        scalar_base = isinstance(base, (int, float)) or _np.ndim(base) == 0

        def vjp(g):
            gm = _last(g, ans, axis)
            ym = _last(ans, ans, axis)
            b = base if scalar_base else tnp.asarray(base)[..., None]
            if which == "base":
                s0 = start if isinstance(start, ndarray) else tnp.asarray(start)
                s1 = stop if isinstance(stop, ndarray) else tnp.asarray(stop)
                lin = s0[..., None] * (1 - t) + s1[..., None] * t
                gb = gm * lin * ym / b
                if scalar_base:
                    return tnp.sum(gb)
                return unbroadcast(tnp.sum(gb, axis=-1), _shape(base))
            w = (1 - t) if which == "start" else t
            dlin = gm * ym * tnp.log(b if isinstance(b, ndarray) else tnp.asarray(b))
            return unbroadcast(tnp.sum(dlin * w, axis=-1),
                               _shape(start if which == "start" else stop))
        return vjp
    return rule


defvjp("logspace", _logspace_rule("start"), _logspace_rule("stop"), None, None,
       _logspace_rule("base"), start=_logspace_rule("start"), stop=_logspace_rule("stop"),
       base=_logspace_rule("base"))


def _geomspace_rule(which):
    def rule(ans, start, stop, num=50, endpoint=True, dtype=None, axis=0, **kw):
        if not is_float(ans):
            return _none
        t = _t(int(num), endpoint)
        w = (1 - t) if which == "start" else t
        x = start if which == "start" else stop

        def vjp(g):
            # y = start**(1-t) * stop**t: dy/dstart = (1-t) y / start, dy/dstop = t y / stop
            gm = _last(g, ans, axis)
            ym = _last(ans, ans, axis)
            xx = x[..., None] if isinstance(x, ndarray) else x
            return unbroadcast(tnp.sum(gm * ym * w / xx, axis=-1), _shape(x))
        return vjp
    return rule


defvjp("geomspace", _geomspace_rule("start"), _geomspace_rule("stop"),
       start=_geomspace_rule("start"), stop=_geomspace_rule("stop"))

_ARANGE_NAMES = ("start", "stop", "step")


def _arange_rule(key):
    """``arange([start,] stop[, step])``: values ``start + j * step``; ``stop`` (also a lone
    first argument, which is the stop) only sets the length. ``key``: a position or a name."""
    def rule(ans, *args, **kw):
        if not is_float(ans):
            return _none
        if isinstance(key, str):
            which = key
        else:
            names = ("stop",) if len(args) == 1 and "stop" not in kw else _ARANGE_NAMES
            which = names[key] if key < len(names) else None
        if which == "start":
            return lambda g: tnp.sum(g)
        if which == "step":
            j = _np.arange(ans.shape[0], dtype=float)
            return lambda g: tnp.sum(g * j)
        return _none
    return rule


defvjp("arange", _arange_rule(0), _arange_rule(1), _arange_rule(2),
       start=_arange_rule("start"), step=_arange_rule("step"))


def _meshgrid_vjp(i, ans, *xi, copy=True, sparse=False, indexing="xy"):
    nd = len(xi)
    ax = i
    if indexing == "xy" and nd > 1 and i < 2:
        ax = 1 - i
    other = tuple(a for a in range(nd) if a != ax)
    return lambda g: tnp.reshape(tnp.sum(g[i], axis=other), _shape(xi[i]))


defvjp_argnum("meshgrid", _meshgrid_vjp)

# ---------------------------------------------------------------------------- kaiser window
_K = 80
_C0 = [1.0 / (_math.factorial(k) ** 2) for k in range(_K)]
_C1 = [1.0 / (_math.factorial(k) * _math.factorial(k + 1)) for k in range(_K)]


def _series(z, coefs, odd):
    """``sum c_k (z/2)^(2k) [* z/2]`` by Horner's rule, in tnp operations (differentiable)."""
    h = z / 2
    q = h * h
    acc = coefs[-1]
    for c in coefs[-2::-1]:
        acc = acc * q + c
    return acc * h if odd else acc


def _kaiser_beta(ans, M, beta, **kw):
    M = int(M)
    if M <= 1:
        return _none
    n = _np.arange(M)
    alpha = (M - 1) / 2.0
    r = _np.sqrt(1 - ((n - alpha) / alpha) ** 2)

    def vjp(g):
        if float(abs(_np.asarray(beta))) > 40:
            raise NotImplementedError("kaiser: the gradient with respect to beta is computed "
                                      "by a series that is accurate for |beta| <= 40 only")
        b = beta
        i0b = _series(b, _C0, False)
        i1b = _series(b, _C1, True)
        i0br = _series(b * r, _C0, False)
        i1br = _series(b * r, _C1, True)
        # w = I0(beta r) / I0(beta); dI0/dz = I1
        dw = (r * i1br * i0b - i0br * i1b) / (i0b * i0b)
        return tnp.sum(g * dw)
    return vjp


defvjp("kaiser", None, _kaiser_beta)

# ---------------------------------------------------------------------------- declarations
nondifferentiable(["zeros", "ones", "empty", "eye", "identity", "tri", "indices",
                   "zeros_like", "ones_like", "empty_like",
                   "bartlett", "blackman", "hamming", "hanning"],
                  "output does not depend on the values of its array inputs")
nondifferentiable("fromfile", "reads values from a file: no array input to differentiate")
nondifferentiable("fromstring", "parses values from a string: no array input to differentiate")
nondifferentiable("fromfunction", "calls a Python function on NumPy index arrays, outside any "
                                  "tape: compute with tnp operations on tnp.indices() to "
                                  "differentiate")
