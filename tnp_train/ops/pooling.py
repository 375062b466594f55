"""Max and average pooling kernels (channels-last), one tape node each, hand-written backward.

Max pooling saves the position of each window's maximum (the first one on ties, as TensorFlow
and PyTorch route the gradient), so its backward is a scatter. Average pooling with ``"same"``
padding divides by the number of real (unpadded) elements of each window, as Keras does.
1-D pooling runs the 2-D kernels on a height-1 view. Numba on NumPy arrays; a shifted-slices
path written against the array module serves CuPy (and is tested on the CPU too).

When the backward pass is itself differentiated (a tape recording during it follows the
cotangent or the input: a gradient penalty, a Hessian-vector product), it is computed with
recorded tnp operations instead: max pooling scatters the cotangent to the saved argmax
positions (constants) with ``untake``, average pooling scatters ``g / count`` over each window;
both are linear in the cotangent, so the enclosing tape differentiates them to any order.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import is_floating

from ..autodiff.primitive import backend_op
from ..autodiff.tape import hand_written_backward
from ..autodiff.vjps.indexing import untake as _untake
from . import conv as _conv
from ._common import scratch, zeroed
from .conv import LazyGrads, _njit, _out, _unwrap

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "pool_output_length"]


def pool_output_length(length, pool, stride, padding):
    if length is None:
        return None
    if padding == "valid":
        return (length - pool) // stride + 1 if length >= pool else 0
    if padding == "same":
        return -(-length // stride)
    raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}")


# ----------------------------------------------------------------------------- Numba kernels
@_njit
def _maxpool_fwd_nb(x, y, idx, PH, PW, sh, sw, pt, pl):
    """y = window maxima, idx = flat position ih * W + iw of the first maximum (a NaN wins)."""
    N, H, W, C = x.shape
    OH, OW = y.shape[1], y.shape[2]
    for n in range(N):
        for oh in range(OH):
            h0 = oh * sh - pt
            for ow in range(OW):
                w0 = ow * sw - pl
                first = True
                for i in range(PH):
                    ih = h0 + i
                    if ih < 0 or ih >= H:
                        continue
                    for j in range(PW):
                        iw = w0 + j
                        if iw < 0 or iw >= W:
                            continue
                        p = ih * W + iw
                        if first:
                            for c in range(C):
                                y[n, oh, ow, c] = x[n, ih, iw, c]
                                idx[n, oh, ow, c] = p
                            first = False
                        else:
                            for c in range(C):   # selects, not branches: 2.5x faster
                                v = x[n, ih, iw, c]
                                b = y[n, oh, ow, c]
                                k = idx[n, oh, ow, c]
                                t = (v > b) | (v != v)
                                y[n, oh, ow, c] = v if t else b
                                idx[n, oh, ow, c] = p if t else k


@_njit
def _maxpool_bwd_nb(dy, idx, dx):
    """dx: (N, H*W, C) zeros; adds dy at the saved positions."""
    N, OH, OW, C = dy.shape
    for n in range(N):
        for oh in range(OH):
            for ow in range(OW):
                for c in range(C):
                    dx[n, idx[n, oh, ow, c], c] += dy[n, oh, ow, c]


@_njit
def _maxpool_bwd_tiled_nb(dy, idx, dx, PH, PW, zero):
    """Windows that tile the input exactly (stride == pool, no padding): every element of dx
    (N, H*W, C) is written once, in memory order, so it needs no zeroing. zero: (1,) zeros."""
    N, OH, OW, C = dy.shape
    W = OW * PW
    z = zero[0]
    for n in range(N):
        for oh in range(OH):
            for i in range(PH):
                ih = oh * PH + i
                for ow in range(OW):
                    for j in range(PW):
                        p = ih * W + ow * PW + j
                        for c in range(C):
                            dx[n, p, c] = dy[n, oh, ow, c] if idx[n, oh, ow, c] == p else z


@_njit
def _span(o, stride, pad, size, n):
    """``(lo, hi)``: the input positions ``lo <= i < hi`` of the window at output position
    ``o``, the padding left out."""
    lo = o * stride - pad
    return max(lo, 0), min(lo + size, n)


@_njit
def _avgpool_fwd_nb(x, y, PH, PW, sh, sw, pt, pl):
    N, H, W, C = x.shape
    OH, OW = y.shape[1], y.shape[2]
    for n in range(N):
        for oh in range(OH):
            h0, h1 = _span(oh, sh, pt, PH, H)
            for ow in range(OW):
                w0, w1 = _span(ow, sw, pl, PW, W)
                for c in range(C):
                    y[n, oh, ow, c] = 0
                for ih in range(h0, h1):
                    for iw in range(w0, w1):
                        for c in range(C):
                            y[n, oh, ow, c] += x[n, ih, iw, c]
                cnt = (h1 - h0) * (w1 - w0)
                if cnt > 0:
                    inv = 1.0 / cnt
                    for c in range(C):
                        y[n, oh, ow, c] = y[n, oh, ow, c] * inv


@_njit
def _avgpool_bwd_nb(dy, dx, PH, PW, sh, sw, pt, pl):
    N, H, W, C = dx.shape
    OH, OW = dy.shape[1], dy.shape[2]
    for n in range(N):
        for oh in range(OH):
            h0, h1 = _span(oh, sh, pt, PH, H)
            for ow in range(OW):
                w0, w1 = _span(ow, sw, pl, PW, W)
                cnt = (h1 - h0) * (w1 - w0)
                if cnt == 0:
                    continue
                inv = 1.0 / cnt
                for ih in range(h0, h1):
                    for iw in range(w0, w1):
                        for c in range(C):
                            dx[n, ih, iw, c] += dy[n, oh, ow, c] * inv


# ----------------------------------------------------------------------------- array-module path
def _windows(xp, xpad, PH, PW, sh, sw, OH, OW):
    for i in range(PH):
        for j in range(PW):
            yield i, j, xpad[:, i:i + (OH - 1) * sh + 1:sh, j:j + (OW - 1) * sw + 1:sw, :]


def _pad_for(H, W, PH, PW, sh, sw, pt, pl, OH, OW):
    pb = max((OH - 1) * sh + PH - H - pt, 0)
    pr = max((OW - 1) * sw + PW - W - pl, 0)
    return ((0, 0), (pt, pb), (pl, pr), (0, 0))


def _maxpool_fwd_xp(xp, x, PH, PW, sh, sw, pt, pl, OH, OW):
    N, H, W, C = x.shape
    pads = _pad_for(H, W, PH, PW, sh, sw, pt, pl, OH, OW)
    fill = -xp.inf if is_floating(x.dtype) else xp.iinfo(x.dtype).min
    xpad = xp.pad(x, pads, constant_values=fill)
    y = None
    arg = None
    for i, j, win in _windows(xp, xpad, PH, PW, sh, sw, OH, OW):
        k = i * PW + j
        if y is None:
            y = win.copy()
            arg = xp.zeros(y.shape, dtype=xp.int32)
            continue
        take = (win > y) | (xp.isnan(win) & ~xp.isnan(y))
        y = xp.where(take, win, y)
        arg = xp.where(take, k, arg)
    return y, arg, pads


def _maxpool_bwd_xp(xp, dy, arg, shape, PH, PW, sh, sw, pads, OH, OW):
    N, H, W, C = shape
    (_, _), (pt, pb), (pl, pr), _ = pads
    dxp = xp.zeros((N, H + pt + pb, W + pl + pr, C), dtype=dy.dtype)
    for i in range(PH):
        for j in range(PW):
            k = i * PW + j
            dxp[:, i:i + (OH - 1) * sh + 1:sh, j:j + (OW - 1) * sw + 1:sw, :] += xp.where(arg == k, dy, 0)
    return dxp[:, pt:pt + H, pl:pl + W, :]


def _counts_xp(xp, H, W, PH, PW, sh, sw, pads, OH, OW, dtype):
    ones = xp.pad(xp.ones((1, H, W, 1), dtype=dtype), pads)
    cnt = None
    for _, _, win in _windows(xp, ones, PH, PW, sh, sw, OH, OW):
        cnt = win.copy() if cnt is None else cnt + win
    return cnt


# ----------------------------------------------------------------------------- ops
def _geometry(name, x, pool_size, strides, padding, rank):
    if len(x.shape) != rank + 2:
        raise ValueError(f"{name}: expected an input of rank {rank + 2}, got shape {tuple(x.shape)}")
    if padding not in ("valid", "same"):
        raise ValueError(f"{name}: padding must be 'valid' or 'same', got {padding!r}")
    ps = tuple(pool_size)
    ss = tuple(strides)
    if any(p <= 0 for p in ps) or any(s <= 0 for s in ss):
        raise ValueError(f"{name}: pool_size {ps} and strides {ss} must be positive")
    return ps, ss


def _window(pool_size, strides, rank):
    """``(pool, strides)`` as 2-D sizes: an int stands for every axis, strides default to the
    pool, and a 1-D window is a 2-D one of height 1."""
    if rank == 2:
        ps = pool_size if isinstance(pool_size, (tuple, list)) else (pool_size, pool_size)
        ss = ps if strides is None else (
            strides if isinstance(strides, (tuple, list)) else (strides, strides))
        return ps, ss
    p = pool_size[0] if isinstance(pool_size, (tuple, list)) else pool_size
    s = p if strides is None else (strides[0] if isinstance(strides, (tuple, list)) else strides)
    return (1, p), (1, s)


def max_pool2d(x, pool_size=(2, 2), strides=None, padding="valid"):
    """NHWC max pooling; one tape node (the gradient goes to each window's first maximum)."""
    return _pool(x, *_window(pool_size, strides, 2), padding, 2, "max", "max_pool2d")


def max_pool1d(x, pool_size=2, strides=None, padding="valid"):
    """NWC max pooling; one tape node."""
    return _pool(x, *_window(pool_size, strides, 1), padding, 1, "max", "max_pool1d")


def avg_pool2d(x, pool_size=(2, 2), strides=None, padding="valid"):
    """NHWC average pooling (``"same"``: divides by the count of real elements); one tape node."""
    return _pool(x, *_window(pool_size, strides, 2), padding, 2, "avg", "avg_pool2d")


def avg_pool1d(x, pool_size=2, strides=None, padding="valid"):
    """NWC average pooling; one tape node."""
    return _pool(x, *_window(pool_size, strides, 1), padding, 1, "avg", "avg_pool1d")


def _pool(x, pool_size, strides, padding, rank, kind, name):
    (PH, PW), (sh, sw) = _geometry(name, x, pool_size if rank == 2 else pool_size,
                                   strides, padding, rank)

    def f(xarg):
        xa, dev, xp = _unwrap(xarg)
        xshape, xdt = xa.shape, xa.dtype
        if rank == 1:
            xa = xa.reshape(xa.shape[0], 1, xa.shape[1], xa.shape[2])
        N, H, W, C = xa.shape
        OH = pool_output_length(H, PH, sh, padding)
        OW = pool_output_length(W, PW, sw, padding)
        if OH <= 0 or OW <= 0:
            raise ValueError(f"{name}: an input of shape {tuple(xshape)} is smaller than the pool "
                             f"{pool_size if rank == 2 else pool_size[1:]}")
        pt = _conv.same_pads(H, PH, sh)[0] if padding == "same" else 0
        pl = _conv.same_pads(W, PW, sw)[0] if padding == "same" else 0
        # float16/bfloat16 (and integers) pool in float32: averages sum there, and a maximum
        # is the same value in any wider dtype (this keeps max pooling on the Numba path)
        cdt = xdt if xdt in (_np.float32, _np.float64) else _np.dtype(_np.float32)
        xc = xa if xa.dtype == cdt else xa.astype(cdt)
        fast = _conv._numba_ok(xc) and cdt in (_np.float32, _np.float64)
        oshape = (N, OW, C) if rank == 1 else (N, OH, OW, C)
        tiled = (sh, sw) == (PH, PW) and OH * PH == H and OW * PW == W and pt == 0 and pl == 0
        if kind == "max":
            if fast:
                xc = _np.ascontiguousarray(xc)
                y = scratch((N, OH, OW, C), cdt)
                idx = scratch((N, OH, OW, C), _np.int32)
                _maxpool_fwd_nb(xc, y, idx, PH, PW, sh, sw, pt, pl)
                saved = idx
            else:
                y, arg, pads = _maxpool_fwd_xp(xp, xc, PH, PW, sh, sw, pt, pl, OH, OW)
                saved = (arg, pads)
        else:
            if fast:
                xc = _np.ascontiguousarray(xc)
                y = scratch((N, OH, OW, C), cdt)
                _avgpool_fwd_nb(xc, y, PH, PW, sh, sw, pt, pl)
                saved = None
            else:
                pads = _pad_for(H, W, PH, PW, sh, sw, pt, pl, OH, OW)
                xpad = xp.pad(xc, pads)
                s = None
                for _, _, win in _windows(xp, xpad, PH, PW, sh, sw, OH, OW):
                    s = win.astype(cdt, copy=True) if s is None else s + win
                cnt = _counts_xp(xp, H, W, PH, PW, sh, sw, pads, OH, OW, cdt)
                y = s / cnt
                saved = (cnt, pads)
        y_out = y.reshape(oshape)
        if y_out.dtype != xdt:
            y_out = y_out.astype(xdt)

        def recorded(dy):   # a gradient of a gradient: recorded tnp code
            geom = (N, H, W, C, OH, OW, PH, PW, sh, sw, pt, pl)
            return LazyGrads([lambda: _pool_grad_recorded(dy, kind, saved, fast, geom, xshape,
                                                          xdt, cdt, dev, xp)])

        def make(dy):
            def dx():
                d = _unwrap(dy)[0]
                d = (d if d.dtype == cdt else d.astype(cdt)).reshape(N, OH, OW, C)
                if kind == "max" and fast and tiled:
                    g = scratch((N, H * W, C), cdt)
                    _maxpool_bwd_tiled_nb(_np.ascontiguousarray(d), saved, g, PH, PW,
                                          _np.zeros(1, dtype=cdt))
                elif kind == "max" and fast:
                    g = zeroed((N, H * W, C), cdt)
                    _maxpool_bwd_nb(_np.ascontiguousarray(d), saved, g)
                elif kind == "max":
                    g = _maxpool_bwd_xp(xp, d, saved[0], (N, H, W, C), PH, PW, sh, sw, saved[1], OH, OW)
                elif fast:
                    g = zeroed((N, H, W, C), cdt)
                    _avgpool_bwd_nb(_np.ascontiguousarray(d), g, PH, PW, sh, sw, pt, pl)
                else:
                    cnt, pads = saved
                    (_, _), (pt_, pb_), (pl_, pr_), _ = pads
                    q = d / cnt
                    gp = xp.zeros((N, H + pt_ + pb_, W + pl_ + pr_, C), dtype=cdt)
                    for i in range(PH):
                        for j in range(PW):
                            gp[:, i:i + (OH - 1) * sh + 1:sh, j:j + (OW - 1) * sw + 1:sw, :] += q
                    g = gp[:, pt_:pt_ + H, pl_:pl_ + W, :]
                g = g.reshape(xshape)
                return _out(g if g.dtype == xdt else g.astype(xdt), dev)
            return LazyGrads([dx])

        return _out(y_out, dev), hand_written_backward(name, make, (xarg,), recorded)

    return backend_op(name)(f)(x)


def _pool_grad_recorded(dy, kind, saved, fast, geom, xshape, xdt, cdt, dev, xp):
    """The input cotangent of a pooling as recorded tnp code (linear in ``dy``)."""
    N, H, W, C, OH, OW, PH, PW, sh, sw, pt, pl = geom
    g = tnp.reshape(dy, (N, OH, OW, C))
    g = g if g.dtype == cdt else g.astype(cdt)
    if kind == "max":
        if fast:
            pos = saved.astype(_np.intp)          # flat ih * W + iw of each window's maximum
        else:
            arg = saved[0]                        # the offset i * PW + j inside the window
            oh = xp.arange(OH).reshape(1, OH, 1, 1)
            ow = xp.arange(OW).reshape(1, 1, OW, 1)
            pos = ((oh * sh - pt + arg // PW) * W + (ow * sw - pl + arg % PW)).astype(xp.intp)
        key = (xp.arange(N).reshape(N, 1, 1, 1), pos, xp.arange(C).reshape(1, 1, 1, C))
        dx = _untake(g, key, (N, H * W, C))
    else:
        idx = _conv.patch_index(H, W, OH, OW, PH, PW, sh, sw, 1, 1, pt, pl)
        cnt = _np.maximum((idx < H * W).sum(axis=(2, 3)), 1).astype(cdt).reshape(1, OH, OW, 1)
        q = g / _out(xp.asarray(cnt), dev)
        ones = _out(xp.ones((1, 1, 1, PH, PW, 1), dtype=cdt), dev)
        dx = _conv.scatter_patches(tnp.reshape(q, (N, OH, OW, 1, 1, C)) * ones, idx, H, W)
    dx = tnp.reshape(dx, xshape)
    return dx if dx.dtype == xdt else dx.astype(xdt)
