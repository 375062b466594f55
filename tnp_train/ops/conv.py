"""Convolution kernels (channels-last), each recorded as ONE tape node with a hand-written backward.

The general forward is im2col + one large GEMM: the patches of the NHWC input are gathered into
a ``(N*OH*OW, KH*KW*C)`` matrix (a Numba kernel on the CPU; shifted slices on any other
backend) and multiplied by the kernel seen as ``(KH*KW*C, F)``. Bias and a ReLU are fused into
the same pass when asked (``activation="relu"``); the backward then masks the cotangent with
the saved output. The backward is ``dK = cols.T @ dz``, ``db = sum(dz)``,
``dx = col2im(dz @ K.T)``; each gradient is computed only when the tape asks for it (the first
layer's input gradient is never built).

3x3 stride-1 convolutions with at least ``WINOGRAD_MIN_CHANNELS`` input channels (NumPy arrays,
float32/float64) use Winograd F(2x2, 3x3) instead: 16 GEMMs on transformed 4x4 tiles, 2.25x
fewer multiplications and no 9x-wide patch matrix; forward and backward transforms are Numba
kernels. ``USE_WINOGRAD = False`` turns it off (the tests compare both paths).

Large temporaries come from :func:`scratch`, a small pool that hands a buffer out again only
once nothing else (a tape's saved state, a view) references it.

Conventions are Keras's (TF 2.4): inputs NHWC / NWC; kernels ``(kh, kw, cin // groups, cout)``
(``Conv1D``: ``(k, cin // groups, cout)``), transposed convolutions ``(kh, kw, cout, cin)``;
``"same"`` padding puts the odd pixel at the end; ``"causal"`` (1-D) pads on the left only.

float16 / bfloat16 inputs compute in float32 (cast, GEMM, cast back), as tensor cores
accumulate; float64 stays float64. The array code is written against the module of the input
(NumPy on the CPU, CuPy on a GPU); the Numba kernels run on NumPy arrays only.

Gradients of gradients: when a tape that records *during* the backward pass follows the
cotangent or an input (a gradient penalty, ``tape.jacobian`` of an input gradient), the backward
is computed instead with recorded tnp operations (:func:`gather_patches` / :func:`scatter_patches`
and ``tnp.einsum``; the ReLU mask and the patch index map are constants), so the enclosing tape
differentiates it, to any order. That path is slower; the fast path above is used whenever no
such tape is about.
"""
from __future__ import annotations

import sys as _sys
import threading

import numpy as _np

import tnp
from tnp._core.ndarray import ndarray as _tnp_ndarray
from tnp._core.ndarray import wrap as _wrap

from ..autodiff import custom_gradient as _custom_gradient
from ..autodiff.tape import needs_gradient as _needs_gradient
from ..autodiff.tape import recording as _recording
from ..autodiff.vjps.indexing import untake as _untake

try:  # pragma: no cover - numba is a dependency, the fallback keeps CuPy-only hosts working
    import numba as _numba
    _njit = _numba.njit(cache=True)
    HAVE_NUMBA = True
except Exception:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False

    def _njit(f):
        return f

__all__ = ["conv1d", "conv2d", "conv1d_transpose", "conv2d_transpose", "conv_output_length",
           "deconv_output_length", "same_pads", "im2col", "col2im", "scratch", "clear_scratch",
           "USE_NUMBA", "USE_WINOGRAD", "WINOGRAD_MIN_CHANNELS", "follows", "patch_index",
           "gather_patches", "scatter_patches"]

# Set to False to force the plain array-module path on the CPU too (the tests check both).
USE_NUMBA = HAVE_NUMBA
# Set to False to use im2col for 3x3 stride-1 convolutions too.
USE_WINOGRAD = True


# ----------------------------------------------------------------------------- shapes
def conv_output_length(length, k, stride, padding, dilation=1):
    """Output length of a convolution along one axis (``None`` stays ``None``)."""
    if length is None:
        return None
    kd = (k - 1) * dilation + 1
    if padding == "valid":
        return max((length - kd) // stride + 1, 0) if length >= kd else 0
    # same and causal: ceil(length / stride)
    return -(-length // stride)


def same_pads(length, k, stride, dilation=1):
    """``(before, after)`` padding of ``"same"``: the odd pixel goes at the end (TensorFlow)."""
    kd = (k - 1) * dilation + 1
    out = -(-length // stride)
    total = max((out - 1) * stride + kd - length, 0)
    return total // 2, total - total // 2


def _pads(length, k, stride, dilation, padding):
    if padding == "valid":
        return 0, 0
    if padding == "same":
        return same_pads(length, k, stride, dilation)
    if padding == "causal":
        return (k - 1) * dilation, 0
    raise ValueError(f"padding must be 'valid', 'same' or 'causal', got {padding!r}")


def deconv_output_length(length, k, stride, padding, output_padding=None, dilation=1):
    """Output length of a transposed convolution along one axis, as Keras computes it."""
    if length is None:
        return None
    kd = (k - 1) * dilation + 1
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(kd - stride, 0)
        if padding == "same":
            return length * stride
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}")
    pad = kd // 2 if padding == "same" else 0
    return (length - 1) * stride + kd - 2 * pad + output_padding


def _deconv_pad_before(in_len, out_len, k, stride, dilation, padding):
    """Where the transposed convolution's full output starts inside the returned one: the
    padding a forward convolution of ``out_len`` would use to produce ``in_len``."""
    if padding == "valid":
        return 0
    kd = (k - 1) * dilation + 1
    total = max((in_len - 1) * stride + kd - out_len, 0)
    return total // 2


# ----------------------------------------------------------------------------- backend helpers
def _unwrap(x):
    """(backend array, device or None, array module)."""
    if isinstance(x, _tnp_ndarray):
        dev = x._dev
        return x._a, dev, dev.backend.xp
    if isinstance(x, _np.ndarray):
        return x, None, _np
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":  # pragma: no cover - GPU only
        import cupy
        return x, None, cupy
    a = _np.asarray(x)
    return a, None, _np


def _out(r, dev):
    return _wrap(r, dev) if dev is not None else tnp.asarray(r)


def compute_dtype(*dtypes):
    """float64 if any input is float64, else float32 (float16/bfloat16/ints compute in float32)."""
    return _np.dtype(_np.float64) if any(_np.dtype(d) == _np.float64 for d in dtypes) else \
        _np.dtype(_np.float32)


def result_dtype(*dtypes):
    try:
        dt = _np.result_type(*dtypes)
    except TypeError:  # ml_dtypes mixes that NumPy does not promote
        dt = compute_dtype(*dtypes)
    return dt if dt.kind in "fc" or dt.name == "bfloat16" else _np.dtype(_np.float32)


def _numba_ok(*arrays):
    return USE_NUMBA and all(type(a) is _np.ndarray for a in arrays)


class LazyGrads(list):
    """The value of a ``grad_fn``: entries are computed when the tape reads them (it reads only
    the inputs it follows), then kept. Iterating computes them all."""

    def __init__(self, fns):
        super().__init__([None] * len(fns))
        self._fns = list(fns)
        self._done = [False] * len(fns)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not self._done[i]:
            fn = self._fns[i]
            list.__setitem__(self, i, None if fn is None else fn())
            self._done[i] = True
            self._fns[i] = None
        return list.__getitem__(self, i)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def follows(*arrays):
    """Whether a tape that records now (inside a backward pass: an enclosing tape) follows one of
    ``arrays``, i.e. whether the backward being run is itself differentiated and must be
    computed with recorded tnp operations."""
    if not _recording():
        return False
    return any(_needs_gradient([a for a in arrays if a is not None]))


# ----------------------------------------------------------------------------- scratch buffers
_scratch_lock = threading.Lock()
_scratch: dict = {}
_SCRATCH_PER_KEY = 3


def _scan(bufs, free_refs, seen):
    for b in bufs:
        n = _sys.getrefcount(b)
        seen.append(n)
        if n == free_refs:
            return b
    return None


def _calibrate():
    """The reference count :func:`_scan` sees for a buffer held by nothing but the pool (it
    depends on the interpreter: CPython 3.14 borrows loop references)."""
    seen = []
    _scan([_np.empty(1)], -1, seen)
    return seen[0]


_FREE_REFS = _calibrate()


def scratch(shape, dtype):
    """An uninitialised NumPy array, reused across calls once nothing else holds it (the
    patch matrices are large: reusing them saves the page faults of fresh allocations). A
    buffer still referenced anywhere (a tape's saved cols, a view of it) is never handed out."""
    key = (tuple(shape), _np.dtype(dtype).str)
    with _scratch_lock:
        bufs = _scratch.setdefault(key, [])
        b = _scan(bufs, _FREE_REFS, [])
        if b is not None:
            return b
        b = _np.empty(shape, dtype=dtype)
        if len(bufs) < _SCRATCH_PER_KEY:
            bufs.append(b)
        return b


def clear_scratch():
    """Drop the cached scratch buffers."""
    with _scratch_lock:
        _scratch.clear()


# ----------------------------------------------------------------------------- Numba kernels
@_njit
def _im2col_nb(x, cols, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """cols[(n, oh, ow), (i, j, c)] = x[n, oh*sh - pt + i*dh, ow*sw - pl + j*dw, c] (0 outside);
    flat indexing, and one contiguous run per kernel row when dw == 1 and the row is inside."""
    N, H, W, C = x.shape
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    RC = KH * KW * C
    KWC = KW * C
    zero = 0
    for n in range(N):
        for oh in range(OH):
            for ow in range(OW):
                dst0 = ((n * OH + oh) * OW + ow) * RC
                w0 = ow * sw - pl
                full_w = w0 >= 0 and w0 + (KW - 1) * dw < W
                for i in range(KH):
                    ih = oh * sh - pt + i * dh
                    dst = dst0 + i * KWC
                    if ih < 0 or ih >= H:
                        for q in range(KWC):
                            cf[dst + q] = zero
                        continue
                    row = (n * H + ih) * W
                    if full_w and dw == 1:
                        src = (row + w0) * C
                        for q in range(KWC):
                            cf[dst + q] = xf[src + q]
                        continue
                    for j in range(KW):
                        iw = w0 + j * dw
                        d = dst + j * C
                        if iw >= 0 and iw < W:
                            src = (row + iw) * C
                            for c in range(C):
                                cf[d + c] = xf[src + c]
                        else:
                            for c in range(C):
                                cf[d + c] = zero


@_njit
def _col2im_nb(dcols, dx, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """The adjoint of _im2col_nb: dx (zeroed) += the patch rows, scattered back."""
    N, H, W, C = dx.shape
    xf = dx.reshape(-1)
    cf = dcols.reshape(-1)
    RC = KH * KW * C
    KWC = KW * C
    for n in range(N):
        for oh in range(OH):
            for ow in range(OW):
                src0 = ((n * OH + oh) * OW + ow) * RC
                w0 = ow * sw - pl
                full_w = w0 >= 0 and w0 + (KW - 1) * dw < W
                for i in range(KH):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    src = src0 + i * KWC
                    row = (n * H + ih) * W
                    if full_w and dw == 1:
                        dst = (row + w0) * C
                        for q in range(KWC):
                            xf[dst + q] += cf[src + q]
                        continue
                    for j in range(KW):
                        iw = w0 + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        dst = (row + iw) * C
                        s = src + j * C
                        for c in range(C):
                            xf[dst + c] += cf[s + c]


@_njit
def _bias_act_nb(z, b, use_bias, relu):
    M, F = z.shape
    for m in range(M):
        for f in range(F):
            v = z[m, f]
            if use_bias:
                v += b[f]
            if relu and v < 0:
                z[m, f] = 0
            else:
                z[m, f] = v


@_njit
def _relu_grad_nb(dy, y, dz, db, acc):
    """dz = dy * (y > 0); db = column sums of dz (blocks of 256 rows summed in the input dtype,
    the blocks in float64). Branch-free: a data-dependent branch costs 20x here. acc: (F,)
    zeros of the input dtype."""
    M, F = dy.shape
    for m0 in range(0, M, 256):
        for m in range(m0, min(m0 + 256, M)):
            for f in range(F):
                g = dy[m, f] * (y[m, f] > 0)
                dz[m, f] = g
                acc[f] += g
        for f in range(F):
            db[f] += acc[f]
            acc[f] = 0


# ----------------------------------------------------------------------------- Winograd F(2x2, 3x3)
# A 3x3, stride-1 convolution computed on 4x4 input tiles (2x2 output tiles):
#   Y = A^T [ (G g G^T) . (B^T d B) ] A,
# i.e. 16 GEMMs of (tiles, C) @ (C, F) in place of one (pixels, 9C) @ (9C, F): 2.25x fewer
# multiplications, and no 9x-wide patch matrix. The backward runs the adjoint transforms.
_WINO_G = _np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
WINOGRAD_MIN_CHANNELS = 16


@_njit
def _wino_in_nb(x, V, pt, pl, TH, TW):
    """V[4a+b, tile, c] = (B^T d B)[a, b] for the 4x4 input tile d at (2ty - pt, 2tx - pl)."""
    N, H, W, C = x.shape
    d = _np.empty((16, C), x.dtype)
    t = _np.empty((16, C), x.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                h0 = 2 * ty - pt
                w0 = 2 * tx - pl
                for a in range(4):
                    ih = h0 + a
                    for b in range(4):
                        iw = w0 + b
                        k = a * 4 + b
                        if ih >= 0 and ih < H and iw >= 0 and iw < W:
                            for c in range(C):
                                d[k, c] = x[n, ih, iw, c]
                        else:
                            for c in range(C):
                                d[k, c] = 0
                for b in range(4):
                    for c in range(C):
                        d0 = d[b, c]
                        d1 = d[4 + b, c]
                        d2 = d[8 + b, c]
                        d3 = d[12 + b, c]
                        t[b, c] = d0 - d2
                        t[4 + b, c] = d1 + d2
                        t[8 + b, c] = d2 - d1
                        t[12 + b, c] = d1 - d3
                for a in range(4):
                    k = 4 * a
                    for c in range(C):
                        t0 = t[k, c]
                        t1 = t[k + 1, c]
                        t2 = t[k + 2, c]
                        t3 = t[k + 3, c]
                        V[k, ti, c] = t0 - t2
                        V[k + 1, ti, c] = t1 + t2
                        V[k + 2, ti, c] = t2 - t1
                        V[k + 3, ti, c] = t1 - t3


@_njit
def _wino_out_nb(M, y, bias, use_bias, relu, TH, TW):
    """y[2ty + i, 2tx + j] = (A^T m A)[i, j] (+ bias, ReLU) for each tile's 16 products m."""
    N, OH, OW, F = y.shape
    s = _np.empty((8, F), M.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                for b in range(4):
                    for f in range(F):
                        m0 = M[b, ti, f]
                        m1 = M[4 + b, ti, f]
                        m2 = M[8 + b, ti, f]
                        m3 = M[12 + b, ti, f]
                        s[b, f] = m0 + m1 + m2
                        s[4 + b, f] = m1 - m2 - m3
                for i in range(2):
                    oh = 2 * ty + i
                    if oh >= OH:
                        continue
                    for j in range(2):
                        ow = 2 * tx + j
                        if ow >= OW:
                            continue
                        for f in range(F):
                            s0 = s[4 * i, f]
                            s1 = s[4 * i + 1, f]
                            s2 = s[4 * i + 2, f]
                            s3 = s[4 * i + 3, f]
                            v = s0 + s1 + s2 if j == 0 else s1 - s2 - s3
                            if use_bias:
                                v += bias[f]
                            if relu and v < 0:
                                y[n, oh, ow, f] = 0
                            else:
                                y[n, oh, ow, f] = v


@_njit
def _wino_dout_nb(dz, dM, TH, TW):
    """The adjoint of _wino_out_nb (before bias/ReLU): dM = A dY A^T per 2x2 tile of dz."""
    N, OH, OW, F = dz.shape
    p = _np.empty((8, F), dz.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                for j in range(2):
                    ow = 2 * tx + j
                    in_w = ow < OW
                    for f in range(F):
                        y0 = dz[n, 2 * ty, ow, f] if in_w else 0
                        y1 = dz[n, 2 * ty + 1, ow, f] if (in_w and 2 * ty + 1 < OH) else 0
                        p[j, f] = y0
                        p[2 + j, f] = y0 + y1
                        p[4 + j, f] = y0 - y1
                        p[6 + j, f] = -y1
                for a in range(4):
                    for f in range(F):
                        q0 = p[2 * a, f]
                        q1 = p[2 * a + 1, f]
                        dM[4 * a, ti, f] = q0
                        dM[4 * a + 1, ti, f] = q0 + q1
                        dM[4 * a + 2, ti, f] = q0 - q1
                        dM[4 * a + 3, ti, f] = -q1


@_njit
def _wino_din_nb(dV, dx, pt, pl, TH, TW):
    """The adjoint of _wino_in_nb: dx (zeroed) += B dV B^T of every tile, at its place."""
    N, H, W, C = dx.shape
    q = _np.empty((16, C), dV.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                for b in range(4):
                    for c in range(C):
                        v0 = dV[b, ti, c]
                        v1 = dV[4 + b, ti, c]
                        v2 = dV[8 + b, ti, c]
                        v3 = dV[12 + b, ti, c]
                        q[b, c] = v0
                        q[4 + b, c] = v1 - v2 + v3
                        q[8 + b, c] = v1 + v2 - v0
                        q[12 + b, c] = -v3
                h0 = 2 * ty - pt
                w0 = 2 * tx - pl
                for a in range(4):
                    ih = h0 + a
                    if ih < 0 or ih >= H:
                        continue
                    k = 4 * a
                    for b in range(4):
                        iw = w0 + b
                        if iw < 0 or iw >= W:
                            continue
                        for c in range(C):
                            q0 = q[k, c]
                            q1 = q[k + 1, c]
                            q2 = q[k + 2, c]
                            q3 = q[k + 3, c]
                            if b == 0:
                                v = q0
                            elif b == 1:
                                v = q1 - q2 + q3
                            elif b == 2:
                                v = q1 + q2 - q0
                            else:
                                v = -q3
                            dx[n, ih, iw, c] += v


def _wino_kernel(k):
    """U[4a+b, c, f] = (G g G^T)[a, b] of the (3, 3, C, F) kernel."""
    G = _WINO_G.astype(k.dtype)
    C, F = k.shape[2], k.shape[3]
    return _np.ascontiguousarray(_np.einsum("ai,ijcf,bj->abcf", G, k, G).reshape(16, C, F))


def _wino_kernel_adjoint(dU):
    G = _WINO_G.astype(dU.dtype)
    C, F = dU.shape[1], dU.shape[2]
    return _np.einsum("ai,abcf,bj->ijcf", G, dU.reshape(4, 4, C, F), G)


def _winograd_ok(x, KH, KW, sh, sw, dh, dw, groups, C, F, rank):
    return (KH == 3 and KW == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1 and groups == 1
            and rank == 2 and C >= WINOGRAD_MIN_CHANNELS and F >= 8 and _numba_ok(x)
            and x.dtype in (_np.float32, _np.float64) and USE_WINOGRAD)



# ----------------------------------------------------------------------------- im2col / col2im
def im2col(xp, x, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """(N*OH*OW, KH*KW*C) patches of the NHWC array ``x`` (zeros outside it)."""
    N, H, W, C = x.shape
    if _numba_ok(x):
        x = _np.ascontiguousarray(x)
        cols = scratch((N * OH * OW, KH * KW * C), x.dtype)
        _im2col_nb(x, cols, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW)
        return cols
    # pad so every window is inside, then one strided slice per kernel tap
    need_h = (OH - 1) * sh + (KH - 1) * dh + 1
    need_w = (OW - 1) * sw + (KW - 1) * dw + 1
    pb = max(need_h - H - pt, 0)
    pr = max(need_w - W - pl, 0)
    xpad = xp.pad(x, ((0, 0), (max(pt, 0), pb), (max(pl, 0), pr), (0, 0)))
    cols = xp.empty((N, OH, OW, KH, KW, C), dtype=x.dtype)
    for i in range(KH):
        for j in range(KW):
            h0, w0 = i * dh, j * dw
            cols[:, :, :, i, j, :] = xpad[:, h0:h0 + (OH - 1) * sh + 1:sh, w0:w0 + (OW - 1) * sw + 1:sw, :]
    return cols.reshape(N * OH * OW, KH * KW * C)


def col2im(xp, dcols, shape, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """The adjoint of :func:`im2col`: scatter-add the patch rows back into an NHWC array."""
    N, H, W, C = shape
    if _numba_ok(dcols):
        dx = _np.zeros(shape, dtype=dcols.dtype)
        _col2im_nb(_np.ascontiguousarray(dcols), dx, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW)
        return dx
    need_h = (OH - 1) * sh + (KH - 1) * dh + 1
    need_w = (OW - 1) * sw + (KW - 1) * dw + 1
    Hp = max(need_h, H + pt)
    Wp = max(need_w, W + pl)
    dxp = xp.zeros((N, Hp, Wp, C), dtype=dcols.dtype)
    d = dcols.reshape(N, OH, OW, KH, KW, C)
    for i in range(KH):
        for j in range(KW):
            h0, w0 = i * dh, j * dw
            dxp[:, h0:h0 + (OH - 1) * sh + 1:sh, w0:w0 + (OW - 1) * sw + 1:sw, :] += d[:, :, :, i, j, :]
    return dxp[:, pt:pt + H, pl:pl + W, :]


def _bias_act(xp, z, b, relu):
    """In place on the (M, F) array ``z``: add ``b`` (or None), then max(., 0) if ``relu``."""
    if b is None and not relu:
        return z
    if _numba_ok(z) and (b is None or type(b) is _np.ndarray):
        _bias_act_nb(z, z[0] if b is None else _np.ascontiguousarray(b, dtype=z.dtype),
                     b is not None, relu)
        return z
    if b is not None:
        z += b
    if relu:
        xp.maximum(z, 0, out=z)
    return z


def _act_grad(xp, dy2, y2, relu, want_db):
    """(dz, db): the cotangent before the fused ReLU and the bias gradient (or None)."""
    if relu:
        if _numba_ok(dy2, y2):
            dz = _np.empty_like(dy2)
            db = _np.zeros(dy2.shape[1], dtype=_np.float64)
            _relu_grad_nb(_np.ascontiguousarray(dy2), _np.ascontiguousarray(y2), dz, db,
                          _np.zeros(dy2.shape[1], dtype=dy2.dtype))
            return dz, db.astype(dy2.dtype)
        dz = dy2 * (y2 > 0)
    else:
        dz = dy2
    db = dz.sum(axis=0, dtype=xp.float64).astype(dz.dtype) if want_db else None
    return dz, db


def _lazy_act_grad(xp, dy2, y2, relu, want_db):
    """``_act_grad``'s (dz, db) as a function that computes them at its first call: a backward
    pass's dx, dk and db share them, and the tape may ask for only some of those."""
    done = []

    def dz_db():
        if not done:
            done.append(_act_grad(xp, dy2, y2, relu, want_db))
        return done[0]
    return dz_db


def _fused_relu(activation, name):
    """Whether the fused activation is a ReLU (None and "linear" mean none)."""
    relu = activation == "relu"
    if activation not in (None, "relu", "linear"):
        raise ValueError(f"{name}: the fused activation must be None or 'relu', got {activation!r}")
    return relu


# ----------------------------------------------------------------------------- the conv op
def _prep(x, kernel, bias):
    xa, dev, xp = _unwrap(x)
    ka, _, _ = _unwrap(kernel)
    ba = None if bias is None else _unwrap(bias)[0]
    dts = [xa.dtype, ka.dtype] + ([] if ba is None else [ba.dtype])
    cdt = compute_dtype(*dts)
    odt = result_dtype(*dts)
    return xa, ka, ba, dev, xp, cdt, odt


def _cast(xp, a, dt):
    return a if a.dtype == dt else a.astype(dt)


def _lift_1d(xa, ka):
    """A rank-1 (NWC) input and kernel as rank-2 ones of height 1."""
    return xa.reshape(xa.shape[0], 1, xa.shape[1], xa.shape[2]), ka.reshape((1,) + ka.shape)


def _grouped_matmul(xp, cols, Kmat, groups, KK, Cg):
    """cols (M, KK*C) @ block-diagonal kernel; returns (out (M, F), the grouped cols)."""
    if groups == 1:
        return cols @ Kmat, cols
    M = cols.shape[0]
    F = Kmat.shape[1]
    Fg = F // groups
    A = xp.ascontiguousarray(cols.reshape(M, KK, groups, Cg).transpose(2, 0, 1, 3)).reshape(groups, M, KK * Cg)
    Kg = Kmat.reshape(KK, Cg, groups, Fg).transpose(2, 0, 1, 3).reshape(groups, KK * Cg, Fg)
    out = xp.matmul(A, Kg)  # (G, M, Fg)
    return xp.ascontiguousarray(out.transpose(1, 0, 2)).reshape(M, F), A


def conv2d(x, kernel, bias=None, strides=(1, 1), padding="valid", dilation_rate=(1, 1), groups=1,
           activation=None, explicit_pads=None):
    """NHWC convolution with a Keras kernel ``(kh, kw, cin // groups, cout)``, plus bias and an
    optional fused ``"relu"``; one tape node. ``padding``: ``"valid"``/``"same"``, or give
    ``explicit_pads=((top, bottom), (left, right))``."""
    return _conv(x, kernel, bias, strides, padding, dilation_rate, groups, activation,
                 explicit_pads, rank=2, name="conv2d")


def conv1d(x, kernel, bias=None, strides=1, padding="valid", dilation_rate=1, groups=1,
           activation=None):
    """NWC convolution with a Keras kernel ``(k, cin // groups, cout)``; ``padding`` may also
    be ``"causal"`` (left padding only). One tape node."""
    s = strides[0] if isinstance(strides, (tuple, list)) else strides
    d = dilation_rate[0] if isinstance(dilation_rate, (tuple, list)) else dilation_rate
    return _conv(x, kernel, bias, (1, s), padding, (1, d), groups, activation, None, rank=1,
                 name="conv1d")


def _check_conv(name, xshape, kshape, groups, rank):
    if len(xshape) != rank + 2:
        raise ValueError(f"{name}: expected an input of rank {rank + 2}, got shape {tuple(xshape)}")
    if len(kshape) != rank + 2:
        raise ValueError(f"{name}: expected a kernel of rank {rank + 2}, got shape {tuple(kshape)}")
    cin, cg, f = xshape[-1], kshape[-2], kshape[-1]
    if groups < 1 or cin % groups or f % groups:
        raise ValueError(f"{name}: groups={groups} must divide the input channels ({cin}) and the "
                         f"filters ({f}); input shape {tuple(xshape)}, kernel shape {tuple(kshape)}")
    if cg * groups != cin:
        raise ValueError(f"{name}: an input of shape {tuple(xshape)} ({cin} channels) does not fit a "
                         f"kernel of shape {tuple(kshape)} with groups={groups}")


def _conv(x, kernel, bias, strides, padding, dilation_rate, groups, activation, explicit_pads,
          rank, name):
    relu = _fused_relu(activation, name)
    _check_conv(name, tuple(x.shape), tuple(kernel.shape), groups, rank)
    if bias is not None and tuple(bias.shape) != (kernel.shape[-1],):
        raise ValueError(f"{name}: bias of shape {tuple(bias.shape)} does not fit a kernel of shape "
                         f"{tuple(kernel.shape)}")
    sh, sw = strides
    dh, dw = dilation_rate

    def f(*args):
        xa, ka, ba, dev, xp, cdt, odt = _prep(args[0], args[1], args[2] if len(args) > 2 else None)
        xshape, kshape = xa.shape, ka.shape
        if rank == 1:
            xa, ka = _lift_1d(xa, ka)
        N, H, W, C = xa.shape
        KH, KW, Cg, F = ka.shape
        if explicit_pads is not None:
            (pt, pb), (pl, pr) = explicit_pads
        else:
            pt, pb = _pads(H, KH, sh, dh, padding) if rank == 2 else (0, 0)
            pl, pr = _pads(W, KW, sw, dw, padding)
        OH = (H + pt + pb - ((KH - 1) * dh + 1)) // sh + 1
        OW = (W + pl + pr - ((KW - 1) * dw + 1)) // sw + 1
        if OH <= 0 or OW <= 0:
            raise ValueError(f"{name}: an input of shape {tuple(xshape)} is smaller than the kernel "
                             f"{tuple(kshape)} (dilation {dilation_rate}, padding {padding!r})")
        xc = _cast(xp, xa, cdt)
        kc = _cast(xp, ka, cdt)
        bc = None if ba is None else _cast(xp, ba, cdt)
        if _winograd_ok(xc, KH, KW, sh, sw, dh, dw, groups, C, F, rank):
            return _winograd_conv(args, name, xa, ka, ba, dev, xc, kc, bc, relu, pt, pl, OH, OW,
                                  odt, xshape, kshape)
        KK = KH * KW
        cols = im2col(xp, xc, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW)
        Kmat = kc.reshape(KK * Cg, F)
        z, A = _grouped_matmul(xp, cols, Kmat, groups, KK, Cg)
        del cols
        y2 = _bias_act(xp, z, bc, relu)
        oshape = (N, OW, F) if rank == 1 else (N, OH, OW, F)
        y = y2.reshape(oshape)
        y_out = _cast(xp, y, odt)
        n_args = len(args)

        def make(dy):
            if follows(dy, *args):   # a gradient of a gradient: the recorded formulas
                return _conv_grads_recorded(dy, args, y2, dev, relu, rank, groups, (pt, pl),
                                            (sh, sw), (dh, dw), (OH, OW), cdt)
            dya = _cast(xp, _unwrap(dy)[0], cdt).reshape(-1, F)
            dz_db = _lazy_act_grad(xp, dya, y2, relu, n_args > 2)

            def dx():
                dz = dz_db()[0]
                if groups == 1:
                    if type(dz) is _np.ndarray:
                        dcols = _np.matmul(dz, Kmat.T, out=scratch((dz.shape[0], Kmat.shape[0]),
                                                                   dz.dtype))
                    else:
                        dcols = dz @ Kmat.T
                else:
                    Fg = F // groups
                    Kg = Kmat.reshape(KK, Cg, groups, Fg).transpose(2, 0, 1, 3).reshape(groups, KK * Cg, Fg)
                    dzg = dz.reshape(-1, groups, Fg).transpose(1, 0, 2)
                    dA = xp.matmul(dzg, Kg.transpose(0, 2, 1))  # (G, M, KK*Cg)
                    dcols = dA.reshape(groups, -1, KK, Cg).transpose(1, 2, 0, 3).reshape(-1, KK * C)
                g = col2im(xp, dcols, (N, H, W, C), KH, KW, sh, sw, dh, dw, pt, pl, OH, OW)
                return _out(_cast(xp, g, xshape_dtype[0]).reshape(xshape), dev)

            def dk():
                dz = dz_db()[0]
                if groups == 1:
                    g = A.T @ dz
                else:
                    Fg = F // groups
                    dzg = dz.reshape(-1, groups, Fg).transpose(1, 0, 2)
                    g = xp.matmul(A.transpose(0, 2, 1), dzg)  # (G, KK*Cg, Fg)
                    g = g.reshape(groups, KK, Cg, Fg).transpose(1, 2, 0, 3)
                return _out(_cast(xp, g, kdtype).reshape(kshape), dev)

            def db():
                return _out(_cast(xp, dz_db()[1], bdtype), dev)

            return LazyGrads([dx, dk] + ([db] if n_args > 2 else []))

        xshape_dtype = [xa.dtype]
        kdtype = ka.dtype
        bdtype = None if ba is None else ba.dtype
        return _out(y_out, dev), make

    args = (x, kernel) if bias is None else (x, kernel, bias)
    return _custom_gradient(f)(*args)


def _winograd_conv(args, name, xa, ka, ba, dev, xc, kc, bc, relu, pt, pl, OH, OW, odt, xshape,
                   kshape):
    """The forward of a 3x3 stride-1 conv2d by Winograd F(2x2, 3x3), and its grad_fn."""
    N, H, W, C = xc.shape
    F = kc.shape[3]
    TH, TW = (OH + 1) // 2, (OW + 1) // 2
    T = N * TH * TW
    cdt = xc.dtype
    xc = _np.ascontiguousarray(xc)
    V = _np.empty((16, T, C), dtype=cdt)
    _wino_in_nb(xc, V, pt, pl, TH, TW)
    U = _wino_kernel(kc)
    M = _np.matmul(V, U, out=scratch((16, T, F), cdt))
    y = _np.empty((N, OH, OW, F), dtype=cdt)
    _wino_out_nb(M, y, _np.zeros(F, cdt) if bc is None else _np.ascontiguousarray(bc), bc is not None,
                 relu, TH, TW)
    del M
    y2 = y.reshape(-1, F)
    y_out = y if odt == cdt else y.astype(odt)
    xdt, kdt = xa.dtype, ka.dtype
    bdt = None if ba is None else ba.dtype
    n_args = len(args)

    def make(dy):
        if follows(dy, *args):   # a gradient of a gradient: the recorded (im2col) formulas
            return _conv_grads_recorded(dy, args, y2, dev, relu, 2, 1, (pt, pl), (1, 1), (1, 1),
                                        (OH, OW), cdt)
        dya = _unwrap(dy)[0]
        dya = (dya if dya.dtype == cdt else dya.astype(cdt)).reshape(-1, F)
        dz_db = _lazy_act_grad(_np, dya, y2, relu, n_args > 2)
        cache = {}

        def dM():
            if "dM" not in cache:
                dz = _np.ascontiguousarray(dz_db()[0]).reshape(N, OH, OW, F)
                out = scratch((16, T, F), cdt)
                _wino_dout_nb(dz, out, TH, TW)
                cache["dM"] = out
            return cache["dM"]

        def dx():
            dV = _np.matmul(dM(), U.transpose(0, 2, 1), out=scratch((16, T, C), cdt))
            g = _np.zeros((N, H, W, C), dtype=cdt)
            _wino_din_nb(dV, g, pt, pl, TH, TW)
            return _out((g if g.dtype == xdt else g.astype(xdt)).reshape(xshape), dev)

        def dk():
            dU = _np.matmul(V.transpose(0, 2, 1), dM())
            g = _wino_kernel_adjoint(dU)
            return _out(g.astype(kdt).reshape(kshape), dev)

        def db():
            g = dz_db()[1]
            return _out(g if g.dtype == bdt else g.astype(bdt), dev)

        return LazyGrads([dx, dk] + ([db] if n_args > 2 else []))

    return _out(y_out, dev), make


# ----------------------------------------------------------------------------- transposed
def conv2d_transpose(x, kernel, bias=None, output_shape=None, strides=(1, 1), padding="valid",
                     dilation_rate=(1, 1), activation=None, output_padding=None):
    """The gradient of a convolution with respect to its input, as a layer: NHWC input of
    ``cin`` channels, Keras kernel ``(kh, kw, cout, cin)``. ``output_shape`` is ``(OH, OW)``
    (by default Keras's ``deconv_output_length``). One tape node."""
    return _conv_t(x, kernel, bias, output_shape, strides, padding, dilation_rate, activation,
                   output_padding, rank=2, name="conv2d_transpose")


def conv1d_transpose(x, kernel, bias=None, output_length=None, strides=1, padding="valid",
                     dilation_rate=1, activation=None, output_padding=None):
    """1-D :func:`conv2d_transpose`: NWC input, kernel ``(k, cout, cin)``."""
    s = strides[0] if isinstance(strides, (tuple, list)) else strides
    d = dilation_rate[0] if isinstance(dilation_rate, (tuple, list)) else dilation_rate
    op = output_padding[0] if isinstance(output_padding, (tuple, list)) else output_padding
    out = None if output_length is None else (1, output_length)
    return _conv_t(x, kernel, bias, out, (1, s), padding, (1, d), activation,
                   None if op is None else (0, op), rank=1, name="conv1d_transpose")


def _conv_t(x, kernel, bias, output_shape, strides, padding, dilation_rate, activation,
            output_padding, rank, name):
    relu = _fused_relu(activation, name)
    xs, ks = tuple(x.shape), tuple(kernel.shape)
    if len(xs) != rank + 2 or len(ks) != rank + 2:
        raise ValueError(f"{name}: expected input and kernel of rank {rank + 2}, got shapes {xs} and {ks}")
    if xs[-1] != ks[-1]:
        raise ValueError(f"{name}: an input of shape {xs} ({xs[-1]} channels) does not fit a kernel of "
                         f"shape {ks} (which expects {ks[-1]})")
    if bias is not None and tuple(bias.shape) != (ks[-2],):
        raise ValueError(f"{name}: bias of shape {tuple(bias.shape)} does not fit a kernel of shape {ks}")
    sh, sw = strides
    dh, dw = dilation_rate
    if padding not in ("valid", "same"):
        raise ValueError(f"{name}: padding must be 'valid' or 'same', got {padding!r}")

    def f(*args):
        xa, ka, ba, dev, xp, cdt, odt = _prep(args[0], args[1], args[2] if len(args) > 2 else None)
        xshape, kshape = xa.shape, ka.shape
        if rank == 1:
            xa, ka = _lift_1d(xa, ka)
        N, H, W, Cin = xa.shape
        KH, KW, Co, _ = ka.shape
        if output_shape is None:
            oph, opw = output_padding if output_padding is not None else (None, None)
            OH = H if rank == 1 else deconv_output_length(H, KH, sh, padding, oph, dh)
            OW = deconv_output_length(W, KW, sw, padding, opw, dw)
        else:
            OH, OW = output_shape
        pt = 0 if rank == 1 else _deconv_pad_before(H, OH, KH, sh, dh, padding)
        pl = _deconv_pad_before(W, OW, KW, sw, dw, padding)
        xc = _cast(xp, xa, cdt)
        kc = _cast(xp, ka, cdt)
        bc = None if ba is None else _cast(xp, ba, cdt)
        KK = KH * KW
        Kmat = kc.reshape(KK * Co, Cin)
        x2 = xc.reshape(-1, Cin)
        dcols = x2 @ Kmat.T                       # (N*H*W, KK*Co)
        y = col2im(xp, dcols, (N, OH, OW, Co), KH, KW, sh, sw, dh, dw, pt, pl, H, W)
        del dcols
        y = xp.ascontiguousarray(y)
        y2 = _bias_act(xp, y.reshape(-1, Co), bc, relu)
        oshape = (N, OW, Co) if rank == 1 else (N, OH, OW, Co)
        y_out = _cast(xp, y2.reshape(oshape), odt)
        xdt, kdt = xa.dtype, ka.dtype
        bdt = None if ba is None else ba.dtype
        n_args = len(args)

        def make(dy):
            if follows(dy, *args):   # a gradient of a gradient: the recorded formulas
                return _conv_t_grads_recorded(dy, args, y2, dev, relu, rank, (pt, pl), (sh, sw),
                                              (dh, dw), (OH, OW), cdt)
            dya = _cast(xp, _unwrap(dy)[0], cdt).reshape(-1, Co)
            dz_db = _lazy_act_grad(xp, dya, y2, relu, n_args > 2)
            cache = {}

            def cols():
                if "cols" not in cache:
                    dz = xp.ascontiguousarray(dz_db()[0]).reshape(N, OH, OW, Co)
                    cache["cols"] = im2col(xp, dz, KH, KW, sh, sw, dh, dw, pt, pl, H, W)
                return cache["cols"]

            def dx():
                g = cols() @ Kmat                # (N*H*W, Cin)
                return _out(_cast(xp, g, xdt).reshape(xshape), dev)

            def dk():
                g = cols().T @ x2                # (KK*Co, Cin)
                return _out(_cast(xp, g, kdt).reshape(kshape), dev)

            def db():
                return _out(_cast(xp, dz_db()[1], bdt), dev)

            return LazyGrads([dx, dk] + ([db] if n_args > 2 else []))

        return _out(y_out, dev), make

    args = (x, kernel) if bias is None else (x, kernel, bias)
    return _custom_gradient(f)(*args)


# ----------------------------------------------------------------------------- recorded backward
# Used only when the backward pass is itself differentiated (see the module docstring): the same
# gradients as the kernels above, written with recorded tnp operations. Patches are gathered
# with a constant index map (fancy indexing, whose VJP is a scatter-add) and scattered back with
# ``untake`` (whose VJP is the gather), so every order is differentiable.
def patch_index(H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl):
    """(OH, OW, KH, KW) NumPy ints: the flat position ``ih * W + iw`` of every patch element of a
    convolution over an ``(H, W)`` image, or ``H * W`` where it falls in the padding."""
    ih = (_np.arange(OH) * sh - pt)[:, None, None, None] + (_np.arange(KH) * dh)[None, None, :, None]
    iw = (_np.arange(OW) * sw - pl)[None, :, None, None] + (_np.arange(KW) * dw)[None, None, None, :]
    inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    return _np.where(inside, ih * W + iw, H * W).astype(_np.intp)


def gather_patches(x, idx):
    """Recorded im2col: the NHWC tnp array ``x`` -> ``(N, OH, OW, KH, KW, C)`` patches at the
    positions ``idx`` of :func:`patch_index` (zeros in the padding)."""
    N, H, W, C = x.shape
    flat = tnp.reshape(x, (N, H * W, C))
    flat = tnp.concatenate([flat, tnp.zeros((N, 1, C), dtype=x.dtype, device=x.device)], axis=1)
    return flat[:, idx, :]


def scatter_patches(d, idx, H, W):
    """Recorded col2im, the adjoint of :func:`gather_patches`: ``(N, OH, OW, KH, KW, C)`` ->
    ``(N, H, W, C)``, overlapping patches summed, the padding dropped."""
    N, C = d.shape[0], d.shape[-1]
    full = _untake(d, (slice(None), idx, slice(None)), (N, H * W + 1, C))
    return tnp.reshape(full[:, :H * W, :], (N, H, W, C))


def _as(a, dt):
    return a if a.dtype == dt else a.astype(dt)


def _masked_cotangent(dy, shape, y2, dev, relu, cdt):
    """The cotangent before the fused ReLU, recorded: ``dy * (y > 0)`` (the mask a constant)."""
    dz = _as(tnp.reshape(dy, shape), cdt)
    if relu:
        dz = dz * _out((y2 > 0).astype(cdt).reshape(shape), dev)
    return dz


def _conv_grads_recorded(dy, args, y2, dev, relu, rank, groups, pads, strides, dils, out_hw, cdt):
    """conv1d/conv2d's (dx, dk[, db]) as recorded tnp code: ``dk`` correlates the input's
    patches with the cotangent, ``dx`` scatters the cotangent times the kernel back."""
    x, k = (a if isinstance(a, _tnp_ndarray) else tnp.asarray(a) for a in args[:2])
    xshape, kshape = tuple(x.shape), tuple(k.shape)
    if rank == 1:
        x4 = tnp.reshape(x, (xshape[0], 1) + xshape[1:])
        k4 = tnp.reshape(k, (1,) + kshape)
    else:
        x4, k4 = x, k
    N, H, W, C = x4.shape
    KH, KW, Cg, F = k4.shape
    (pt, pl), (sh, sw), (dh, dw), (OH, OW) = pads, strides, dils, out_hw
    G, Fg = groups, F // groups
    idx = patch_index(H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl)
    dz = _masked_cotangent(dy, (N, OH, OW, F), y2, dev, relu, cdt)
    dzg = tnp.reshape(dz, (N, OH, OW, G, Fg))

    def dx():
        kg = tnp.reshape(_as(k4, cdt), (KH, KW, Cg, G, Fg))
        dcols = tnp.einsum("nopgf,ijcgf->nopijgc", dzg, kg)
        g = scatter_patches(tnp.reshape(dcols, (N, OH, OW, KH, KW, C)), idx, H, W)
        return _as(tnp.reshape(g, xshape), x.dtype)

    def dk():
        cols = tnp.reshape(gather_patches(_as(x4, cdt), idx), (N, OH, OW, KH, KW, G, Cg))
        g = tnp.einsum("nopijgc,nopgf->ijcgf", cols, dzg)
        return _as(tnp.reshape(g, kshape), k.dtype)

    def db():
        return _as(tnp.sum(dz, axis=(0, 1, 2)), args[2].dtype)

    return LazyGrads([dx, dk] + ([db] if len(args) > 2 else []))


def _conv_t_grads_recorded(dy, args, y2, dev, relu, rank, pads, strides, dils, out_hw, cdt):
    """conv1d_transpose/conv2d_transpose's (dx, dk[, db]) as recorded tnp code: the cotangent's
    patches (a forward convolution's geometry) times the kernel, and correlated with the input."""
    x, k = (a if isinstance(a, _tnp_ndarray) else tnp.asarray(a) for a in args[:2])
    xshape, kshape = tuple(x.shape), tuple(k.shape)
    if rank == 1:
        x4 = tnp.reshape(x, (xshape[0], 1) + xshape[1:])
        k4 = tnp.reshape(k, (1,) + kshape)
    else:
        x4, k4 = x, k
    N, H, W, Cin = x4.shape
    KH, KW, Co, _ = k4.shape
    (pt, pl), (sh, sw), (dh, dw), (OH, OW) = pads, strides, dils, out_hw
    idx = patch_index(OH, OW, H, W, KH, KW, sh, sw, dh, dw, pt, pl)
    dz = _masked_cotangent(dy, (N, OH, OW, Co), y2, dev, relu, cdt)
    cache = {}

    def cols():
        if "cols" not in cache:
            cache["cols"] = gather_patches(dz, idx)     # (N, H, W, KH, KW, Co)
        return cache["cols"]

    def dx():
        g = tnp.einsum("nhwijo,ijoc->nhwc", cols(), _as(k4, cdt))
        return _as(tnp.reshape(g, xshape), x.dtype)

    def dk():
        g = tnp.einsum("nhwijo,nhwc->ijoc", cols(), _as(x4, cdt))
        return _as(tnp.reshape(g, kshape), k.dtype)

    def db():
        return _as(tnp.sum(dz, axis=(0, 1, 2)), args[2].dtype)

    return LazyGrads([dx, dk] + ([db] if len(args) > 2 else []))
