"""VJPs of indexing: ``x[key]`` (basic, advanced, boolean) and tnp's indexing routines.

Besides the rules, this module holds the scatter primitive ``untake`` and the helpers built on
it (``gather_vjp``, ``index_map``): every rule whose forward pass picks elements of its input
(``take``, ``diagonal``, ``repeat``, ``pad``, ``as_strided``...) computes, on the host, the map
from output positions to input positions by running the forward function on an array of flat
indices, and sends the cotangent back through that map. The scatter is a differentiable
primitive (its VJP is indexing again), so gradients of gradients work; no rule writes in place
into an array that a tape may track. The in-place writes themselves (``x[key] = v``, ``put``,
``place``...) are recorded by :mod:`..inplace`, which uses ``untake`` and ``gather_vjp`` too.
"""
from __future__ import annotations

import math as _math

import numpy as _np

import tnp
from tnp import ndarray

from ..registry import defvjp, defvjp_argnum, nondifferentiable, no_array_output, section, \
    unbroadcast
from ..tape import custom_gradient

section("indexing")

__all__ = ["untake", "gather_vjp", "index_map", "host", "as_key"]


def untake(g, key, shape):
    """Scatter-add ``g`` into zeros of ``shape`` at ``key`` (the adjoint of ``x[key]``).

    A differentiable primitive of its own (its VJP is indexing again), so gradients of
    gradients through indexing work; repeated advanced indices accumulate, as they must.
    """
    return _untake(g, key, tuple(shape))


def _basic(key):
    """Whether ``key`` is a basic index (ints, slices, None, Ellipsis): every element of the
    result comes from a different element of the array, so the adjoint is an assignment."""
    items = key if type(key) is tuple else (key,)
    for k in items:
        if not (k is None or k is Ellipsis or type(k) is slice or
                (isinstance(k, (int, _np.integer)) and not isinstance(k, (bool, _np.bool_)))):
            return False
    return True


@custom_gradient
def _untake(g, key, shape):
    gx = tnp.zeros(shape, dtype=g.dtype, device=g.device)
    if _basic(key):
        gx[key] = g           # no repeats to accumulate: a plain write, not add.at's loop
    else:
        tnp.add.at(gx, key, g)
    return gx, lambda dy: (dy[key], None, None)


def _getitem_vjp(ans, x, key):
    return lambda g: untake(g, key, x.shape)


defvjp("getitem", _getitem_vjp)


# ---------------------------------------------------------------------------- helpers
def host(x):
    """``x`` with tnp arrays replaced by NumPy arrays (also inside lists, tuples and dicts):
    index maps and masks are computed on the host, outside any tape."""
    if isinstance(x, ndarray):
        return _np.asarray(x)
    t = type(x)
    if t is list or t is tuple:
        return t(host(e) for e in x)
    if t is dict:
        return {k: host(v) for k, v in x.items()}
    return x


def as_key(x):
    """An index argument as NumPy (tnp integer/boolean arrays -> NumPy arrays)."""
    return host(x)


def index_map(shape):
    """The flat index of every element of an array of ``shape`` (C order), as NumPy ``intp``."""
    shape = tuple(int(s) for s in shape)
    return _np.arange(_math.prod(shape), dtype=_np.intp).reshape(shape)


def gather_vjp(g, idx, shape):
    """The adjoint of ``out = x.ravel()[idx]``: ``idx`` (NumPy ints, the shape of ``out``) holds
    for every output element the flat index of the input element it was copied from, or a
    negative number where the output does not come from ``x`` (padding, inserted values).

    Each input element used exactly once (a permutation) is a plain gather; otherwise the
    cotangents of repeated elements are summed by ``untake``."""
    shape = tuple(int(s) for s in shape)
    n = _math.prod(shape)
    idx = _np.asarray(idx, dtype=_np.intp).reshape(-1)
    gf = tnp.reshape(g, (-1,))
    valid = idx >= 0
    if valid.all():
        pos = None
    else:
        pos = _np.flatnonzero(valid)
        idx = idx[pos]
    if idx.size == n and (n == 0 or _np.bincount(idx, minlength=n).max() == 1):
        inv = _np.empty(n, dtype=_np.intp)
        inv[idx] = _np.arange(n, dtype=_np.intp) if pos is None else pos
        return tnp.reshape(gf[inv], shape)
    if pos is not None:
        gf = gf[pos]
    return tnp.reshape(untake(gf, idx, (n,)), shape)


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


# ---------------------------------------------------------------------------- take & co.
def _take_vjp(ans, a, indices, axis=None, out=None, mode="raise", **kw):
    idx = _np.take(index_map(a.shape), as_key(indices), axis=axis, mode=mode)
    return lambda g: gather_vjp(g, idx, a.shape)


defvjp("take", _take_vjp)


def _take_along_axis_vjp(ans, arr, indices, axis=-1, **kw):
    idx = _np.take_along_axis(index_map(arr.shape), as_key(indices), axis=axis)
    return lambda g: gather_vjp(g, idx, arr.shape)


defvjp("take_along_axis", _take_along_axis_vjp, None)


def _compress_vjp(ans, condition, a, axis=None, out=None, **kw):
    idx = _np.compress(as_key(condition), index_map(a.shape), axis=axis)
    return lambda g: gather_vjp(g, idx, a.shape)


defvjp("compress", None, _compress_vjp)


def _diagonal_vjp(ans, a, offset=0, axis1=0, axis2=1, **kw):
    idx = _np.diagonal(index_map(a.shape), offset=offset, axis1=axis1, axis2=axis2)
    return lambda g: gather_vjp(g, idx, a.shape)


defvjp("diagonal", _diagonal_vjp)


def _choose_vjp(ans, a, choices, out=None, mode="raise", **kw):
    n = len(choices)
    # the choice each output element took (after broadcasting and mode='wrap'/'clip')
    sel = _np.choose(as_key(a), list(range(n)), mode=mode)

    def one(g, j, shape):
        m = _np.broadcast_to(sel == j, tuple(g.shape))
        return unbroadcast(g * tnp.asarray(m, device=g.device), tuple(shape))

    if isinstance(choices, (list, tuple)):
        return lambda g: [one(g, j, _shape(c)) if isinstance(c, ndarray) else None
                          for j, c in enumerate(choices)]
    return lambda g: tnp.stack([one(g, j, choices.shape[1:]) for j in range(n)])


defvjp("choose", None, _choose_vjp)


def _select_sel(condlist, choicelist, default):
    """For every output element, the index of the choice it took (``len(choicelist)``: default)."""
    n = len(choicelist)
    conds = [_np.asarray(c) for c in host(list(condlist))]
    shape = _np.broadcast_shapes(*[c.shape for c in conds],
                                 *[_shape(c) for c in choicelist], _shape(default))
    return _np.broadcast_to(_np.select(conds, list(range(n)), default=n), shape)


def _select_choices(ans, condlist, choicelist, default=0, **kw):
    sel = _select_sel(condlist, choicelist, default)

    def vjp(g):
        return [unbroadcast(g * tnp.asarray(sel == j, device=g.device), _shape(c))
                if isinstance(c, ndarray) else None for j, c in enumerate(choicelist)]
    return vjp


def _select_default(ans, condlist, choicelist, default=0, **kw):
    sel = _select_sel(condlist, choicelist, default)
    n = len(choicelist)
    return lambda g: unbroadcast(g * tnp.asarray(sel == n, device=g.device), _shape(default))


defvjp("select", None, _select_choices, _select_default, default=_select_default)


def _ix_vjp(i, ans, *args):
    # float sequences pass through ix_ reshaped (integer/boolean ones carry no gradient)
    return lambda g: tnp.reshape(g[i], _shape(args[i]))


defvjp_argnum("ix_", _ix_vjp)

# ---------------------------------------------------------------------------- declarations
_INPLACE = ("in-place write into its first argument (returns None): the tape records the write "
            "itself as a new version of that argument (tnp_train.autodiff.inplace)")
nondifferentiable(["put", "place", "putmask", "put_along_axis", "fill_diagonal"], _INPLACE)
nondifferentiable(["diag_indices", "diag_indices_from", "tril_indices", "tril_indices_from",
                   "triu_indices", "triu_indices_from", "mask_indices", "unravel_index",
                   "ravel_multi_index"], "integer output (indices)")
no_array_output("nested_iters", "returns iterators (numpy.nditer), no array")
