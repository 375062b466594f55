"""VJPs of tnp's manipulation functions, and of the array methods and properties that the tape
sees under their own names (``x.T``/``x.transpose()`` -> "transpose", ``x.mT`` ->
"matrix_transpose", ``x.flatten()`` -> "reshape", ``x.view()``, ``x.astype()``, ``x.real``,
``x.imag``).

Shape changes send the cotangent back through the inverse change; joins split it, splits join
it; functions that copy elements (``repeat``, ``tile``, ``pad``, ``resize``, ``as_strided``...)
send it back through their index map (see :func:`.indexing.gather_vjp`), summing the
cotangents of repeated elements.

Complex numbers follow the convention of the math rules (autograd's): the gradient of a real
function ``f`` of ``z = x + iy`` is ``df/dx - i df/dy``; so ``real`` passes ``g`` back and
``imag`` passes ``-1j * g``. The math section normally defines those two; the fallbacks here
only serve ``x.real``/``x.imag`` when it does not.
"""
from __future__ import annotations

import math as _math

import numpy as _np

import tnp
from tnp import ndarray

from ..registry import (defvjp, defvjp_argnum, get_rule, is_float, no_array_output,
                        nondifferentiable, section, unbroadcast)
from .indexing import as_key, gather_vjp, host, index_map, untake

section("manipulation")


# ---------------------------------------------------------------------------- helpers
def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def _axis(axis, ndim):
    a = int(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim if ndim else 0


def _g(ans, *args, **kwargs):
    return lambda g: g


def _none(g):
    return None


def _along(ndim, axis, key):
    return (slice(None),) * axis + (key,)


def _split_along(g, axis, sizes):
    """Consecutive pieces of ``g`` along ``axis`` of the given sizes."""
    out, o = [], 0
    for s in sizes:
        out.append(g[_along(g.ndim, axis, slice(o, o + s))])
        o += s
    return out


def _to_float(ans, rule):
    """``rule`` if the output is floating (or complex); an integer/boolean output gives none."""
    return rule if is_float(ans) else _none


# ---------------------------------------------------------------------------- shapes
def _order(x, order):
    """The index order a reshape/ravel with ``order`` reads ``x`` in: 'C', 'F' or 'K'."""
    o = "C" if order is None else str(order).upper()
    if o == "A":
        f = x.flags
        return "F" if f.f_contiguous and not f.c_contiguous else "C"
    return o


def _k_order_map(x):
    """The flat (C-order) index of each element of ``ravel(x, order='K')``: NumPy's iterator
    ordering (axes by decreasing absolute stride, stable; zero strides never reorder; negative
    strides are not flipped), as ``npyiter_find_best_axis_ordering`` does it."""
    shape = tuple(x.shape)
    strides = tuple(int(s) for s in x.strides)
    nd = len(shape)
    order = list(range(nd))[::-1]          # innermost first
    for i0 in range(1, nd):
        ipos, j0 = i0, order[i0]
        for i1 in range(i0 - 1, -1, -1):
            s0, s1 = strides[j0], strides[order[i1]]
            if s0 != 0 and s1 != 0:
                if abs(s1) <= abs(s0):
                    break
                ipos = i1
        if ipos != i0:
            order.insert(ipos, order.pop(i0))
    return index_map(shape).transpose(order[::-1]).ravel()


def _reshape_like(x, order):
    o = _order(x, order)
    if o == "K":
        if x.flags.c_contiguous:
            o = "C"
        elif x.flags.f_contiguous:
            o = "F"
        else:
            idx = _k_order_map(x)
            return lambda g: gather_vjp(g, idx, x.shape)
    return lambda g: tnp.reshape(g, x.shape, order=o)


def _reshape_vjp(ans, a, shape=None, order="C", **kw):
    return _reshape_like(a, order)


def _ravel_vjp(ans, a, order="C", **kw):
    return _reshape_like(a, order)


defvjp("reshape", _reshape_vjp)
defvjp("ravel", _ravel_vjp)


def _same_shape_vjp(ans, a, *args, **kw):
    return lambda g: tnp.reshape(g, _shape(a))


defvjp("squeeze", _same_shape_vjp)
defvjp("expand_dims", _same_shape_vjp)


def _transpose_vjp(ans, a, axes=None, **kw):
    nd = a.ndim
    if axes is None:
        return lambda g: tnp.transpose(g)
    inv = tuple(int(i) for i in _np.argsort([_axis(i, nd) for i in axes]))
    return lambda g: tnp.transpose(g, inv)


defvjp(("transpose", "permute_dims"), _transpose_vjp)
defvjp("matrix_transpose", lambda ans, x, **kw: lambda g: tnp.swapaxes(g, -1, -2))
defvjp("swapaxes", lambda ans, a, axis1, axis2, **kw: lambda g: tnp.swapaxes(g, axis1, axis2))
defvjp("moveaxis",
       lambda ans, a, source, destination, **kw: lambda g: tnp.moveaxis(g, destination, source))


def _rollaxis_vjp(ans, a, axis, start=0, **kw):
    n = a.ndim
    axis = _axis(axis, n)
    start = int(start) + n if int(start) < 0 else int(start)
    if axis < start:
        start -= 1
    axes = [i for i in range(n) if i != axis]
    axes.insert(start, axis)
    inv = tuple(int(i) for i in _np.argsort(axes))
    return lambda g: tnp.transpose(g, inv)


defvjp("rollaxis", _rollaxis_vjp)

defvjp("broadcast_to", lambda ans, array, shape=None, *a, **kw:
       lambda g: unbroadcast(g, _shape(array)))


def _broadcast_arrays_vjp(i, ans, *args, **kw):
    return lambda g: unbroadcast(g[i], _shape(args[i]))


defvjp_argnum("broadcast_arrays", _broadcast_arrays_vjp)


def _atleast_vjp(i, ans, *arys, **kw):
    if len(arys) == 1:
        return lambda g: tnp.reshape(g, _shape(arys[0]))
    # an array already of the rank is returned itself (NumPy's identity): the tape gives that
    # slot no cotangent, since its gradient reaches the array directly
    return lambda g: None if g[i] is None else tnp.reshape(g[i], _shape(arys[i]))


defvjp_argnum(("atleast_1d", "atleast_2d", "atleast_3d"), _atleast_vjp)

# ---------------------------------------------------------------------------- joining


def _pieces(g, arrays, promoted, axis):
    """Split ``g`` along ``axis`` into the parts that came from ``arrays`` (with shapes
    ``promoted`` inside the join), each reshaped to its array's own shape."""
    parts = _split_along(g, axis, [s[axis] for s in promoted])
    return [tnp.reshape(p, _shape(e)) if isinstance(e, ndarray) else None
            for p, e in zip(parts, arrays)]


def _concatenate_vjp(ans, arrays, axis=0, *args, **kw):
    shapes = [_shape(e) for e in arrays]
    if axis is None:
        flat = [(_math.prod(s),) for s in shapes]
        return lambda g: _pieces(g, arrays, flat, 0)
    ax = _axis(axis, ans.ndim)
    return lambda g: _pieces(g, arrays, shapes, ax)


defvjp(("concatenate", "concat"), _concatenate_vjp)


def _stack_vjp(ans, arrays, axis=0, *args, **kw):
    ax = _axis(axis, ans.ndim)
    return lambda g: [g[_along(g.ndim, ax, j)] if isinstance(e, ndarray) else None
                      for j, e in enumerate(arrays)]


defvjp("stack", _stack_vjp)


def _promote(shape, nd, where):
    """``shape`` as ``atleast_{nd}d`` (``where``: 'lead' for 1 and 2, 'numpy3' for 3) or
    ``column_stack`` makes it."""
    if len(shape) >= nd:
        return shape
    if where == "column":
        return (shape[0] if shape else 1, 1)
    if nd == 3:
        return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    return (1,) * (nd - len(shape)) + shape


def _joined(nd, where, axis_of):
    def rule(ans, tup, *args, **kw):
        promoted = [_promote(_shape(e), nd, where) for e in tup]
        ax = axis_of(promoted)
        return lambda g: _pieces(g, tup, promoted, ax)
    return rule


defvjp("hstack", _joined(1, "lead", lambda p: 0 if len(p[0]) == 1 else 1))
defvjp(("vstack", "row_stack"), _joined(2, "lead", lambda p: 0))
defvjp("dstack", _joined(3, "numpy3", lambda p: 2))
defvjp("column_stack", _joined(2, "column", lambda p: 1))


def _block_vjp(ans, arrays):
    if not isinstance(arrays, list):
        return lambda g: tnp.reshape(g, _shape(arrays))

    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else int(isinstance(x, list))

    d = depth(arrays)
    nd = ans.ndim

    def shape_of(x, level):
        if isinstance(x, list):
            ax = nd - (d - level)
            shapes = [shape_of(e, level + 1) for e in x]
            s = list(shapes[0])
            s[ax] = sum(t[ax] for t in shapes)
            return tuple(s)
        s = _shape(x)
        return (1,) * (nd - len(s)) + s

    def split(g, x, level):
        if isinstance(x, list):
            ax = nd - (d - level)
            shapes = [shape_of(e, level + 1) for e in x]
            parts = _split_along(g, ax, [s[ax] for s in shapes])
            return [split(p, e, level + 1) for p, e in zip(parts, x)]
        return tnp.reshape(g, _shape(x)) if isinstance(x, ndarray) else None

    return lambda g: split(g, arrays, 0)


defvjp("block", _block_vjp)

# ---------------------------------------------------------------------------- splitting


def _split_bounds(n, ios, array_split):
    """(start, stop) of every piece of ``split``/``array_split`` along an axis of length n."""
    ios = host(ios)
    try:
        points = [0] + [int(i) for i in ios] + [n]
    except TypeError:
        sections = int(ios)
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = _np.cumsum(sizes).tolist()
    out = []
    for i in range(len(points) - 1):
        st, sp, _ = slice(points[i], points[i + 1]).indices(n)
        out.append((st, max(st, sp)))
    return out


def _unsplit(x, axis, bounds):
    shape = tuple(x.shape)
    tiles = bounds and bounds[0][0] == 0 and bounds[-1][1] == shape[axis] and all(
        a[1] == b[0] for a, b in zip(bounds, bounds[1:]))

    def vjp(g):
        if tiles:
            return tnp.concatenate(list(g), axis=axis)
        total = None
        for gi, (st, sp) in zip(g, bounds):
            if sp > st:
                part = untake(gi, _along(len(shape), axis, slice(st, sp)), shape)
                total = part if total is None else total + part
        return total if total is not None else tnp.zeros(shape, dtype=g[0].dtype,
                                                         device=g[0].device)
    return vjp


def _splitter(axis_of, array_split=False):
    def rule(ans, ary, indices_or_sections, axis=0, **kw):
        ax = _axis(axis_of(ary, axis), ary.ndim)
        return _unsplit(ary, ax, _split_bounds(ary.shape[ax], indices_or_sections, array_split))
    return rule


defvjp("split", _splitter(lambda a, axis: axis))
defvjp("array_split", _splitter(lambda a, axis: axis, True))
defvjp("hsplit", _splitter(lambda a, axis: 1 if a.ndim > 1 else 0))
defvjp("vsplit", _splitter(lambda a, axis: 0))
defvjp("dsplit", _splitter(lambda a, axis: 2))
defvjp("unstack", lambda ans, x, axis=0, **kw: lambda g: tnp.stack(list(g), axis=axis))

# ---------------------------------------------------------------------------- tiling, repeating


def _tile_vjp(ans, A, reps):
    r = _np.asarray(host(reps)).reshape(-1).astype(int).tolist()
    s = _shape(A)
    d = max(len(r), len(s))
    sp = (1,) * (d - len(s)) + tuple(s)
    rp = (1,) * (d - len(r)) + tuple(r)
    inter = tuple(v for pair in zip(rp, sp) for v in pair)

    def vjp(g):
        gg = tnp.sum(tnp.reshape(g, inter), axis=tuple(range(0, 2 * d, 2)))
        return tnp.reshape(gg, s)
    return vjp


defvjp("tile", _tile_vjp)


def _repeat_vjp(ans, a, repeats, axis=None, **kw):
    idx = _np.repeat(index_map(_shape(a)), as_key(repeats), axis=axis)
    return lambda g: gather_vjp(g, idx, _shape(a))


defvjp("repeat", _repeat_vjp)


def _resize_vjp(ans, a, new_shape):
    s = _shape(a)
    if _math.prod(s) == 0:
        return _none
    idx = _np.resize(index_map(s), host(new_shape))
    return lambda g: gather_vjp(g, idx, s)


defvjp("resize", _resize_vjp)

# ---------------------------------------------------------------------------- rearranging
defvjp("flip", lambda ans, m, axis=None, **kw: lambda g: tnp.flip(g, axis))
defvjp("fliplr", lambda ans, m, **kw: lambda g: tnp.fliplr(g))
defvjp("flipud", lambda ans, m, **kw: lambda g: tnp.flipud(g))


def _roll_vjp(ans, a, shift, axis=None, **kw):
    back = _np.negative(_np.asarray(host(shift))).tolist()
    return lambda g: tnp.roll(g, back, axis)


defvjp("roll", _roll_vjp)
defvjp("rot90", lambda ans, m, k=1, axes=(0, 1), **kw: lambda g: tnp.rot90(g, -int(k), axes))

# ---------------------------------------------------------------------------- adding, removing


def _delete_vjp(ans, arr, obj, axis=None, **kw):
    idx = _np.delete(index_map(_shape(arr)), as_key(obj), axis=axis)
    return lambda g: gather_vjp(g, idx, _shape(arr))


defvjp("delete", _delete_vjp)


def _two_maps(arr, values, join):
    """Index maps of a join of ``arr`` and ``values`` (``insert``, ``append``): for every output
    element, the flat index of the ``arr`` element (or ``values`` element) it came from, -1
    elsewhere."""
    sa, sv = _shape(arr), _shape(values)
    na = _math.prod(sa)
    m = join(index_map(sa), index_map(sv) + na)
    return _np.where(m < na, m, -1), _np.where(m >= na, m - na, -1)


def _insert_rule(which):
    def rule(ans, arr, obj, values, axis=None, **kw):
        maps = _two_maps(arr, values,
                         lambda pa, pv: _np.insert(pa, as_key(obj), pv, axis=axis))
        target = arr if which == 0 else values
        return lambda g: gather_vjp(g, maps[which], _shape(target))
    return rule


defvjp("insert", _insert_rule(0), None, _insert_rule(1))


def _append_rule(which):
    def rule(ans, arr, values, axis=None, **kw):
        maps = _two_maps(arr, values, lambda pa, pv: _np.append(pa, pv, axis=axis))
        target = arr if which == 0 else values
        return lambda g: gather_vjp(g, maps[which], _shape(target))
    return rule


defvjp("append", _append_rule(0), _append_rule(1))


def _trim_zeros_vjp(ans, filt, trim="fb", axis=None, **kw):
    f = _np.asarray(host(filt))
    axes = tuple(range(f.ndim)) if axis is None else tuple(
        _axis(a, f.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if not axes:
        return lambda g: g
    nz = _np.argwhere(f)
    if nz.size == 0:
        start = stop = [0] * f.ndim
    else:
        start = nz.min(axis=0).tolist() if "f" in trim.lower() else [None] * f.ndim
        stop = (nz.max(axis=0) + 1).tolist() if "b" in trim.lower() else [None] * f.ndim
    key = tuple(slice(start[a], stop[a]) if a in axes else slice(None) for a in range(f.ndim))
    return lambda g: untake(g, key, f.shape)


defvjp("trim_zeros", _trim_zeros_vjp)

# ---------------------------------------------------------------------------- pad


def _pad_pairs(x, ndim):
    """Per-axis (before, after) pairs, as ``numpy.pad`` reads ``pad_width``/``stat_length``."""
    if isinstance(x, dict):
        seq = [(0, 0)] * ndim
        for ax, w in x.items():
            seq[ax] = (w, w) if isinstance(w, int) else tuple(w)
        return [tuple(int(v) for v in p) for p in seq]
    if x is None:
        return [(None, None)] * ndim
    a = _np.round(_np.asarray(host(x))).astype(_np.intp)
    if a.ndim < 3 and a.size == 1:
        v = int(a.ravel()[0])
        return [(v, v)] * ndim
    if a.ndim < 3 and a.size == 2 and a.shape != (2, 1):
        v = a.ravel()
        return [(int(v[0]), int(v[1]))] * ndim
    return [tuple(int(v) for v in p) for p in _np.broadcast_to(a, (ndim, 2))]


def _stat_weights(z, axis, first, length, mode):
    """Weights of the window elements in the statistic that fills one side of the padding
    along ``axis`` (``first``: the window at the start); shape of ``z`` with ``axis`` cut to
    the window."""
    n = z.shape[axis]
    L = n if length is None or length > n else int(length)
    win = _np.take(z, _np.arange(L) if first else _np.arange(n - L, n), axis=axis)
    if mode == "mean":
        return _np.full(win.shape, 1.0 / L)
    w = _np.zeros(win.shape)
    if mode in ("maximum", "minimum"):
        k = (_np.argmax if mode == "maximum" else _np.argmin)(win, axis=axis)
        _np.put_along_axis(w, _np.expand_dims(k, axis), 1.0, axis=axis)
        return w
    order = _np.argsort(win, axis=axis, kind="stable")  # median
    mids = [L // 2] if L % 2 else [L // 2 - 1, L // 2]
    for m in mids:
        _np.put_along_axis(w, _np.take(order, [m], axis=axis), 1.0 / len(mids), axis=axis)
    return w


def _pad_axis_stat(g, axis, before, after, n, w_first, w_last, c_first, c_last):
    """VJP of padding one axis where each pad element is ``c * sum(w * window)``: the centre
    passes back, each side's weighted sum goes to its window."""
    nd = g.ndim
    gin = g[_along(nd, axis, slice(before, before + n))]
    for width, w, c, first in ((before, w_first, c_first, True), (after, w_last, c_last, False)):
        if not width:
            continue
        pad = slice(0, before) if first else slice(before + n, before + n + after)
        side = g[_along(nd, axis, pad)]
        cs = tnp.asarray(_np.reshape(c, (1,) * axis + (width,) + (1,) * (nd - axis - 1)),
                         dtype=g.dtype, device=g.device)
        s = tnp.sum(side * cs, axis=axis, keepdims=True)
        L = w.shape[axis]
        contrib = s * tnp.asarray(w, dtype=g.dtype, device=g.device)
        gin = gin + untake(contrib, _along(nd, axis, slice(0, L) if first else slice(n - L, n)),
                           gin.shape)
    return gin


def _pad_x(ans, array, pad_width, mode="constant", **kw):
    x = array
    shape = _shape(x)
    nd = len(shape)
    if callable(mode):
        def fail(g):
            raise NotImplementedError("tnp.pad with a callable mode has no gradient rule; "
                                      "build the padding with tnp operations instead")
        return fail
    pw = _pad_pairs(pad_width, nd)
    opts = host(kw)
    odd = opts.get("reflect_type", "even") == "odd"
    if mode in ("constant", "empty"):
        idx = _np.pad(index_map(shape) + 1, pw, mode="constant") - 1
        return lambda g: gather_vjp(g, idx, shape)
    if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric") and not odd):
        idx = _np.pad(index_map(shape), pw, mode=mode, **opts)
        return lambda g: gather_vjp(g, idx, shape)
    if mode in ("reflect", "symmetric"):
        # odd reflection is linear but not a copy: the same matrix along each row of an axis
        mats = [None if b == a == 0 else
                _np.pad(_np.eye(n), [(0, 0), (b, a)], mode=mode, reflect_type="odd")
                for (b, a), n in zip(pw, shape)]

        def vjp_odd(g):
            for ax in reversed(range(nd)):
                if mats[ax] is not None:
                    m = tnp.asarray(mats[ax].T, dtype=g.dtype, device=g.device)
                    g = tnp.moveaxis(tnp.matmul(tnp.moveaxis(g, ax, -1), m), -1, ax)
            return g
        return vjp_odd
    if mode == "linear_ramp":
        ones = _np.ones(1)
        plan = []
        for ax, ((b, a), n) in enumerate(zip(pw, shape)):
            if b == a == 0:
                plan.append(None)
                continue
            cb = _np.pad(ones, (b, 0), mode="linear_ramp", end_values=0)[:b]
            ca = _np.pad(ones, (0, a), mode="linear_ramp", end_values=0)[1:]
            w = _np.ones((1,) * nd)  # the edge element, broadcast over the other axes
            plan.append((b, a, n, w, w, cb, ca))
        return _pad_axes(plan)
    if mode in ("mean", "maximum", "minimum", "median"):
        lengths = _pad_pairs(opts.get("stat_length"), nd)
        z = _np.asarray(host(x))
        plan = []
        for ax, ((b, a), n) in enumerate(zip(pw, shape)):
            if b == a == 0:
                plan.append(None)
                continue
            wf = _stat_weights(z, ax, True, lengths[ax][0], mode) if b else None
            wl = _stat_weights(z, ax, False, lengths[ax][1], mode) if a else None
            plan.append((b, a, n, wf, wl, _np.ones(b), _np.ones(a)))
            # the next axis pads the array padded so far (its corners come from padded values)
            one = [(0, 0)] * nd
            one[ax] = (b, a)
            stat = [(m, m) for m in z.shape]
            stat[ax] = tuple(n if v is None else v for v in lengths[ax])
            z = _np.pad(z, one, mode=mode, stat_length=stat)
        return _pad_axes(plan)
    raise ValueError(f"pad: mode {mode!r} has no gradient rule")


def _pad_axes(plan):
    def vjp(g):
        for ax in reversed(range(len(plan))):
            p = plan[ax]
            if p is not None:
                g = _pad_axis_stat(g, ax, *p)
        return g
    return vjp


def _pad_constant_values(ans, array, pad_width, mode="constant", **kw):
    cv = kw.get("constant_values", 0)
    if mode != "constant":
        return _none
    shape = _shape(array)
    nd = len(shape)
    codes = _np.pad(_np.zeros(shape, dtype=_np.intp), _pad_pairs(pad_width, nd),
                    mode="constant",
                    constant_values=[(2 * a + 1, 2 * a + 2) for a in range(nd)])
    pos = _np.flatnonzero(codes)
    which = codes.ravel()[pos] - 1
    cshape = _shape(cv)
    c = _np.asarray(host(cv))

    def vjp(g):
        tot = tnp.reshape(untake(tnp.reshape(g, (-1,))[pos], which, (2 * nd,)), (nd, 2))
        if c.ndim < 3 and c.size == 1:
            return tnp.reshape(tnp.sum(tot), cshape)
        if c.ndim < 3 and c.size == 2 and c.shape != (2, 1):
            return tnp.reshape(tnp.sum(tot, axis=0), cshape)
        return unbroadcast(tot, cshape)
    return vjp


defvjp("pad", _pad_x, constant_values=_pad_constant_values)

# ---------------------------------------------------------------------------- strides


def _as_strided_vjp(ans, x, shape=None, strides=None, *args, **kw):
    isz = x.itemsize
    xs = tuple(int(s) for s in x.strides)
    out_shape = _shape(ans)
    st = xs if strides is None else tuple(int(s) for s in host(strides))
    if any(s % isz for s in xs + st):
        def fail(g):
            raise NotImplementedError("as_strided: strides that are not multiples of the "
                                      "item size have no gradient rule")
        return fail

    def offsets(shp, strd):
        off = _np.zeros(shp, dtype=_np.intp)
        for k, (d, s) in enumerate(zip(shp, strd)):
            off = off + (_np.arange(d, dtype=_np.intp) * (s // isz)).reshape(
                (1,) * k + (d,) + (1,) * (len(shp) - k - 1))
        return off

    ox, oo = offsets(tuple(x.shape), xs), offsets(out_shape, st)
    if ox.size == 0 or oo.size == 0:
        return _none
    lo = min(ox.min(), oo.min())
    hi = max(ox.max(), oo.max())
    table = _np.full(hi - lo + 1, -1, dtype=_np.intp)
    table[ox.ravel() - lo] = _np.arange(ox.size, dtype=_np.intp)
    idx = table[oo - lo]  # -1: memory outside x (no gradient)
    return lambda g: gather_vjp(g, idx, x.shape)


defvjp("lib.stride_tricks.as_strided", _as_strided_vjp)


def _sliding_window_vjp(ans, x, window_shape, axis=None, **kw):
    idx = _np.lib.stride_tricks.sliding_window_view(index_map(_shape(x)), host(window_shape),
                                                    axis=axis)
    return lambda g: gather_vjp(g, idx, _shape(x))


defvjp("lib.stride_tricks.sliding_window_view", _sliding_window_vjp)

# ---------------------------------------------------------------------------- dtypes, views


def _astype_vjp(ans, x, dtype=None, *args, **kw):
    # float -> float (or complex) casts back (the tape casts to x's dtype); to int/bool: none
    return _to_float(ans, lambda g: g)


defvjp("astype", _astype_vjp)


def _view_vjp(ans, x, dtype=None, **kw):
    if dtype is None or _np.dtype(dtype) == x.dtype:
        return lambda g: g
    if not is_float(ans):
        return _none

    def fail(g):
        raise NotImplementedError(
            f"view: no gradient through a view that reinterprets the bytes of {x.dtype} as "
            f"{ans.dtype}; use astype() to convert values")
    return fail


defvjp("view", _view_vjp)

# ``real`` and ``imag`` are math functions too; these rules serve the properties ``x.real``
# and ``x.imag`` unless the math section defines its own.
if get_rule("real") is None:
    defvjp("real", lambda ans, val, **kw: lambda g: g)
if get_rule("imag") is None:
    defvjp("imag", lambda ans, val, **kw:
           (lambda g: g * -1j) if _np.iscomplexobj(val) else _none)

# ---------------------------------------------------------------------------- declarations
no_array_output(["shape", "size", "ndim"], "returns a shape or an int")
no_array_output("broadcast_shapes", "returns a shape")
nondifferentiable("copyto", "in-place write into its first argument (returns None): the tape "
                            "records the write itself as a new version of that argument "
                            "(tnp_train.autodiff.inplace)")
