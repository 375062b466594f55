"""Helpers of the VJP rules shared by several ``vjps`` modules (the rest stay with their rules).

Two families. The reductions' (``math``, ``statistics``): a cotangent broadcast back over the
reduced axes, masks and counts made from ``stop_gradient`` copies (they carry no gradient, so
an enclosing tape does not record them), the extrema's tie-sharing rule, the offsets of
``convolve``/``correlate`` modes. The linear algebra conventions (``linalg``, ``fft``,
``other``; see :mod:`.linalg`'s docstring): real parts for real inputs, constants in an
input's real dtype, einsum with any labels, a nested tape over a differentiable re-statement
(:func:`vjp_of`), keyword versions of a section's rules (:func:`with_keywords`).
"""
from __future__ import annotations

import inspect
import string

import numpy as _np

import tnp
from tnp.extend import is_inexact

from ..registry import VJPS, defvjp, section
from ..tape import GradientTape, stop_gradient
from .indexing import untake

__all__ = ["on_array", "vjp_of", "with_keywords"]

_NoValue = _np._NoValue


# ============================================================================ reductions
def on_array(maker):
    """A reduction's VJP rule that also takes its input as a list of arrays (``tnp.sum([a, b])``,
    ``tnp.mean([l1, l2])``): the list is made one array for the rule, and the tape gives each
    element its slice of the gradient."""
    def rule(ans, x, *args, **kwargs):
        if isinstance(x, (list, tuple)):
            x = tnp.asarray(x)
        return maker(ans, x, *args, **kwargs)
    rule.__name__ = getattr(maker, "__name__", "rule")
    return rule


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


def _cj(x):
    """The conjugate where an argument enters conjugate-linearly (vecdot's first, correlate's
    second): nothing to do for real values."""
    return tnp.conjugate(x) if _np.iscomplexobj(x) else x


def _sg(x):
    """``x`` as a tnp array that no tape follows (for masks, indices, comparisons)."""
    return stop_gradient(x) if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def _host(x):
    """A NumPy array with the values of ``x`` (copied from the device if needed)."""
    return _np.asarray(x)


def _on(a, like, dtype=None):
    """The host array ``a`` as a tnp array on ``like``'s device."""
    dev = like.device if isinstance(like, tnp.ndarray) else None
    a = _np.asarray(a) if dtype is None else _np.asarray(a, dtype=dtype)
    return tnp.asarray(a) if dev is None else tnp.asarray(a, device=dev)


def _zeros(x, dtype=None):
    return tnp.zeros(tuple(x.shape), dtype=dtype or x.dtype,
                     device=x.device if isinstance(x, tnp.ndarray) else None)


def _arr(x):
    return x if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def _axes_of(axis, ndim):
    """``axis`` (None, int or tuple; negative allowed) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % ndim if ndim else 0 for a in axes))


def _where_mask(where, x):
    if where is True or where is _NoValue or where is None:
        return None
    return tnp.broadcast_to(_sg(where), tuple(x.shape))


# ---------------------------------------------------------------------------- complex parts


def _extremum_vjp(ans, x, axis=None, keepdims=False, where=True, nan=False):
    """max/min-like reductions: the gradient goes to the elements equal to the result, shared
    equally among ties (as autograd does); all-NaN or empty (``initial``) slices get none."""
    def vjp(g):
        xc = _sg(x)
        hit = xc == _expand_to(_sg(ans), x, axis, keepdims)
        m = _where_mask(where, x)
        if m is not None:
            hit = hit & m
        cnt = tnp.maximum(tnp.sum(hit, axis=axis, keepdims=True), 1)
        return _expand_to(g, x, axis, keepdims) * (hit / cnt)
    return vjp


# ---------------------------------------------------------------------------- convolution modes
_OFFSETS: dict = {}


def _mode_offset(fname, n, m, mode):
    """Where the ``mode`` output of ``numpy.<fname>`` starts in its 'full' output (NumPy's own
    conventions, read off once per shape with integer probes)."""
    key = (fname, n, m, mode)
    off = _OFFSETS.get(key)
    if off is None:
        rng = _np.random.default_rng(1234)
        ap = rng.integers(1, 1000, n).astype(_np.float64)
        vp = rng.integers(1, 1000, m).astype(_np.float64)
        f = getattr(_np, fname)
        full = f(ap, vp, "full")
        part = f(ap, vp, mode)
        k = part.shape[0]
        off = next(o for o in range(full.shape[0] - k + 1) if _np.array_equal(full[o:o + k], part))
        _OFFSETS[key] = off
    return off


def _full_cotangent(g, fname, a, v, mode):
    n, m = _np.shape(a)[0], _np.shape(v)[0]
    off = _mode_offset(fname, n, m, mode)
    if g.shape[0] == n + m - 1:
        return g
    return untake(g, slice(off, off + g.shape[0]), (n + m - 1,))


# ============================================================================ linear algebra
def _is_complex(x):
    # (the dtype of an array, never its values: a traced cotangent has no values)
    dtype = x.dtype if hasattr(x, "dtype") else _np.asarray(x).dtype
    return _np.issubdtype(dtype, _np.complexfloating)


def _real_dtype(x):
    d = _np.dtype(getattr(x, "dtype", _np.float64))
    if not is_inexact(d):
        return _np.dtype(_np.float64)
    return _np.empty(0, d).real.dtype


def _dev(x):
    return x.device if isinstance(x, tnp.ndarray) else None


def _const(a, like):
    """A constant (untracked) array on ``like``'s device, in ``like``'s real float dtype."""
    a = _np.asarray(a, dtype=_real_dtype(like))
    d = _dev(like)
    return tnp.asarray(a) if d is None else tnp.asarray(a, device=d)


def _match(gx, x):
    """A real input gets the real part of a complex cotangent."""
    if _is_complex(gx) and not _is_complex(x):
        return tnp.real(gx)
    return gx


def _einsum_labels(ops, ins, out):
    """``einsum`` with arbitrary hashable labels."""
    used = {c for labs in ins + [out] for c in labs if isinstance(c, str)}
    pool = iter(c for c in string.ascii_letters if c not in used)
    letter = {}

    def L(c):
        if isinstance(c, str):
            return c
        if c not in letter:
            letter[c] = next(pool)
        return letter[c]

    subs = ",".join("".join(L(c) for c in labs) for labs in ins) + "->" + "".join(L(c) for c in out)
    return tnp.einsum(subs, *ops)


def _alias(x):
    # a recorded identity (a view), so enclosing tapes still connect the alias to ``x``
    return x.view()


def vjp_of(fn, args, argnums, gs):
    """Cotangents of ``args[i]`` (``i`` in ``argnums``) for ``fn(*args)`` (an array or a list of
    arrays, aligned with ``gs``; ``None`` entries of ``gs`` are skipped), computed by a nested
    tape over ``fn``: a rule for a function that ``fn`` re-states in differentiable tnp code.
    ``argnums`` may address a list argument as ``(i, j)``."""
    # Each source is replaced by a fresh wrapper of the same data, so an array passed twice
    # (``multi_dot([a, a])``) gets each position's cotangent once, not the total twice.
    args = list(args)
    for a in argnums:
        if isinstance(a, tuple) and not isinstance(args[a[0]], list):
            args[a[0]] = list(args[a[0]])
    srcs = []
    for a in argnums:
        x = args[a[0]][a[1]] if isinstance(a, tuple) else args[a]
        if isinstance(x, tnp.ndarray):
            x = _alias(x)
            if isinstance(a, tuple):
                args[a[0]][a[1]] = x
            else:
                args[a] = x
        srcs.append(x)
    with GradientTape() as t:
        for x in srcs:
            if isinstance(x, tnp.ndarray) and is_inexact(x.dtype):
                t.watch(x)
        out = fn(*args)
    outs = out if isinstance(out, (list, tuple)) else [out]
    gl = gs if isinstance(gs, (list, tuple)) else [gs]
    targets, ogs = [], []
    for o, g in zip(outs, gl):
        if g is None or o is None or not isinstance(o, tnp.ndarray):
            continue
        targets.append(o)
        ogs.append(g)
    res = t.gradient(targets, srcs, output_gradients=ogs) if targets else [None] * len(srcs)
    return [r if r is not None or not isinstance(x, tnp.ndarray)
            else tnp.zeros(x.shape, dtype=x.dtype, device=x.device)
            for r, x in zip(res, srcs)]


def with_keywords(sections):
    """Give the rules of ``sections`` keyword versions, by the parameter names of the NumPy
    function each mirrors, so an array passed by name (``solve(a, b=y)``) gets its gradient."""
    for name, rule in list(VJPS.items()):
        if rule.section not in sections or rule.argnum is not None or name not in tnp.REGISTRY:
            continue
        try:
            params = list(inspect.signature(tnp.REGISTRY[name].numpy_function).parameters.values())
        except (TypeError, ValueError):
            continue
        kw = dict(rule.keyword)
        for i, prm in enumerate(params):
            if prm.kind is not prm.POSITIONAL_OR_KEYWORD or i >= len(rule.positional):
                break
            if rule.positional[i] is not None:
                kw.setdefault(prm.name, rule.positional[i])
        section(rule.section)
        defvjp(name, *rule.positional, **kw)


# ============================================================================ einsum
