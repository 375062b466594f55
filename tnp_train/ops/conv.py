"""Convolution kernels (channels-last), each recorded as ONE tape node with a hand-written backward.

The general forward is im2col + one large GEMM: the patches of the NHWC input are gathered into
a ``(N*OH*OW, KH*KW*C)`` matrix (on the CPU one NumPy copy of a strided view of the padded
input; shifted slices on any other backend) and multiplied by the kernel seen as
``(KH*KW*C, F)``. Bias and a ReLU are fused into the same pass when asked (``activation="relu"``); the backward then masks the cotangent with
the saved output. The backward is ``dK = cols.T @ dz``, ``db = sum(dz)``,
``dx = col2im(dz @ K.T)``; each gradient is computed only when the tape asks for it (the first
layer's input gradient is never built).

3x3 stride-1 convolutions with at least ``WINOGRAD_MIN_CHANNELS`` input channels (NumPy arrays,
float32/float64) use Winograd F(2x2, 3x3) instead: 16 GEMMs on transformed 4x4 tiles, 2.25x
fewer multiplications and no 9x-wide patch matrix; forward and backward transforms are Numba
kernels, run on blocks of images small enough (``WINOGRAD_BLOCK_BYTES``) that a block's
transformed tiles stay in the L2 cache from its transform through its GEMMs to its inverse.
``USE_WINOGRAD = False`` turns it off (the tests compare both paths).

Large temporaries and results come from :func:`scratch`, a small pool that hands a buffer out
again only once nothing else (a tape's saved state, a compiled program's value, a view, the
caller) references it: large arrays allocated afresh every step make the C allocator return
their pages to the system and fault them in again (in a compiled step, half its time). Under a
distribution strategy the kernels' and biases' gradients are written straight into the
all-reduce bucket the tape offers (``gradient_destination``).

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

This module holds the switches, the shape arithmetic, im2col/col2im and the conv ops; the
shared helpers (dtypes, ``LazyGrads``, the scratch pool) are in :mod:`._common`, the Numba and
Winograd kernels in :mod:`.conv_kernels` and the recorded backward in :mod:`.conv_recorded`
(their names stay importable from here).
"""
from __future__ import annotations

import numpy as _np

from ..autodiff.primitive import backend_op
from ..autodiff.tape import hand_written_backward, needs_gradient
from ._common import (  # noqa: F401  (_njit, _scratch: pooling and the tests use them from here)
    HAVE_NUMBA, LazyGrads, _njit, _out, _scratch, _unwrap, clear_scratch, compute_dtype,
    destination, result_dtype, scratch, zeroed,
)
from .conv_kernels import (
    _bias_act_nb, _col2im_nb, _relu_grad_nb, _wino_din_nb, _wino_dout_nb, _wino_in_nb,
    _wino_kernel, _wino_kernel_adjoint, _wino_out_nb,
)
from .conv_recorded import (  # noqa: F401  (gather_patches: exported)
    _conv_grads_recorded, _conv_t_grads_recorded, gather_patches, patch_index, scatter_patches,
)

__all__ = ["conv1d", "conv2d", "conv1d_transpose", "conv2d_transpose", "conv_output_length",
           "deconv_output_length", "deconv_pad_before", "same_pads", "im2col", "col2im",
           "scratch", "clear_scratch", "USE_NUMBA", "USE_WINOGRAD", "WINOGRAD_MIN_CHANNELS",
           "WINOGRAD_BLOCK_BYTES",
           "patch_index", "gather_patches", "scatter_patches"]

# Set to False to force the plain array-module path on the CPU too (the tests check both).
USE_NUMBA = HAVE_NUMBA
# Set to False to use im2col for 3x3 stride-1 convolutions too.
USE_WINOGRAD = True
WINOGRAD_MIN_CHANNELS = 16
# Winograd transforms a block of images at a time: the bytes of a block's transformed tiles and
# products (16 x tiles x (C + F) values), sized to stay in one core's L2 cache.
WINOGRAD_BLOCK_BYTES = 1 << 20


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


def deconv_pad_before(in_len, out_len, k, stride, dilation, padding):
    """Where the transposed convolution's full output starts inside the returned one: the
    padding a forward convolution of ``out_len`` would use to produce ``in_len``."""
    if padding == "valid":
        return 0
    kd = (k - 1) * dilation + 1
    total = max((in_len - 1) * stride + kd - out_len, 0)
    return total // 2


# ----------------------------------------------------------------------------- backend helpers
def _numba_ok(*arrays):
    return USE_NUMBA and all(type(a) is _np.ndarray for a in arrays)


def _winograd_ok(x, KH, KW, sh, sw, dh, dw, groups, C, F, rank):
    return (KH == 3 and KW == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1 and groups == 1
            and rank == 2 and C >= WINOGRAD_MIN_CHANNELS and F >= 8 and x.shape[0] > 0
            and _numba_ok(x) and x.dtype in (_np.float32, _np.float64) and USE_WINOGRAD)


# ----------------------------------------------------------------------------- im2col / col2im
def im2col(xp, x, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """(N*OH*OW, KH*KW*C) patches of the NHWC array ``x`` (zeros outside it)."""
    N, H, W, C = x.shape
    if _numba_ok(x):
        cols = scratch((N * OH * OW, KH * KW * C), x.dtype)
        _im2col_strided(x, cols, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW)
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


def _padded(x, pt, pl, OH, OW, KH, KW, sh, sw, dh, dw):
    """The NumPy array ``x`` with its zero padding (``pt`` rows above, ``pl`` columns left, as
    many after as the windows need; a negative padding crops), in a scratch buffer when any."""
    if pt < 0 or pl < 0:
        x = x[:, max(-pt, 0):, max(-pl, 0):, :]
        pt, pl = max(pt, 0), max(pl, 0)
    N, H, W, C = x.shape
    Hp = max((OH - 1) * sh + (KH - 1) * dh + 1, H + pt)
    Wp = max((OW - 1) * sw + (KW - 1) * dw + 1, W + pl)
    if (Hp, Wp) == (H, W):
        return _np.ascontiguousarray(x)
    xpad = scratch((N, Hp, Wp, C), x.dtype)
    xpad[:, :pt] = 0
    xpad[:, pt + H:] = 0
    xpad[:, pt:pt + H, :pl] = 0
    xpad[:, pt:pt + H, pl + W:] = 0
    xpad[:, pt:pt + H, pl:pl + W] = x
    return xpad


def _im2col_strided(x, cols, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """im2col on the CPU: the patches are a strided view of the padded input (its windows
    overlap), copied into ``cols`` by ONE NumPy copy; with ``dw == 1`` a kernel row's
    ``KW * C`` values are one contiguous run. (An element-wise Numba loop is several times
    slower: its runs are too short to vectorize.)"""
    xpad = _padded(x, pt, pl, OH, OW, KH, KW, sh, sw, dh, dw)
    N, C = xpad.shape[0], xpad.shape[3]
    s0, s1, s2, s3 = xpad.strides
    if dw == 1:
        shape = (N, OH, OW, KH, KW * C)
        strides = (s0, sh * s1, sw * s2, dh * s1, s3)
    else:
        shape = (N, OH, OW, KH, KW, C)
        strides = (s0, sh * s1, sw * s2, dh * s1, dw * s2, s3)
    patches = _np.lib.stride_tricks.as_strided(xpad, shape, strides, writeable=False)
    _np.copyto(cols.reshape(shape), patches)


def col2im(xp, dcols, shape, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """The adjoint of :func:`im2col`: scatter-add the patch rows back into an NHWC array."""
    N, H, W, C = shape
    if _numba_ok(dcols):
        dx = zeroed(shape, dcols.dtype)
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
        _bias_act_nb(z, _np.zeros(z.shape[1], z.dtype) if b is None
                     else _np.ascontiguousarray(b, dtype=z.dtype),
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
            dz = scratch(dy2.shape, dy2.dtype)
            db = _np.zeros(dy2.shape[1], dtype=_np.float64)
            _relu_grad_nb(_np.ascontiguousarray(dy2), _np.ascontiguousarray(y2), dz, db,
                          _np.zeros(dy2.shape[1], dtype=dy2.dtype))
            return dz, db.astype(dy2.dtype)
        dz = dy2 * (y2 > 0)
    else:
        dz = dy2
    db = dz.sum(axis=0, dtype=xp.float64).astype(dz.dtype) if want_db else None
    return dz, db


def _bias_grad(xp, db, bias, dtype, dev):
    """The bias's gradient ``db`` in the bias's dtype, written into a strategy's bucket when
    the tape offers one for ``bias``."""
    db = _cast(xp, db, dtype)
    into = destination(bias, db.shape, db.dtype) if type(db) is _np.ndarray else None
    if into is None:
        return _out(db, dev)
    into[...] = db
    return _out(into, dev)


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
def _prep(args, rank):
    """``(x, kernel[, bias])`` as backend arrays (a rank-1 input and kernel lifted to rank 2),
    their device and array module, the compute and result dtypes, and the shapes ``x`` and
    ``kernel`` came in."""
    xa, dev, xp = _unwrap(args[0])
    ka, _, _ = _unwrap(args[1])
    ba = _unwrap(args[2])[0] if len(args) > 2 else None
    dts = [xa.dtype, ka.dtype] + ([] if ba is None else [ba.dtype])
    cdt = compute_dtype(*dts)
    odt = result_dtype(*dts)
    xshape, kshape = xa.shape, ka.shape
    if rank == 1:
        xa, ka = _lift_1d(xa, ka)
    return xa, ka, ba, dev, xp, cdt, odt, xshape, kshape


def _cast(xp, a, dt):
    return a if a.dtype == dt else a.astype(dt)


def _lift_1d(xa, ka):
    """A rank-1 (NWC) input and kernel as rank-2 ones of height 1."""
    return xa.reshape(xa.shape[0], 1, xa.shape[1], xa.shape[2]), ka.reshape((1,) + ka.shape)


def _grouped_matmul(xp, cols, Kmat, groups, KK, Cg):
    """cols (M, KK*C) @ block-diagonal kernel; returns (out (M, F), the grouped cols)."""
    if groups == 1:
        if type(cols) is _np.ndarray and type(Kmat) is _np.ndarray:
            return _np.matmul(cols, Kmat, out=scratch((cols.shape[0], Kmat.shape[1]),
                                                      _np.result_type(cols, Kmat))), cols
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
    need = tuple(needs_gradient((x, kernel)))   # which gradients a backward will likely make

    def f(*args):
        xa, ka, ba, dev, xp, cdt, odt, xshape, kshape = _prep(args, rank)
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
                                  odt, xshape, kshape, need)
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

        def recorded(dy):   # a gradient of a gradient: the same formulas, recorded
            return _conv_grads_recorded(dy, args, y2, dev, relu, rank, groups, (pt, pl),
                                        (sh, sw), (dh, dw), (OH, OW), cdt)

        def make(dy):
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
                into = destination(args[1], kshape, kdtype) if (
                    groups == 1 and kdtype == cdt and type(dz) is _np.ndarray) else None
                if into is not None:     # straight into a strategy's bucket: the same GEMM
                    _np.matmul(A.T, dz, out=into.reshape(A.shape[1], F))
                    return _out(into, dev)
                if groups == 1:
                    g = A.T @ dz
                else:
                    Fg = F // groups
                    dzg = dz.reshape(-1, groups, Fg).transpose(1, 0, 2)
                    g = xp.matmul(A.transpose(0, 2, 1), dzg)  # (G, KK*Cg, Fg)
                    g = g.reshape(groups, KK, Cg, Fg).transpose(1, 2, 0, 3)
                return _out(_cast(xp, g, kdtype).reshape(kshape), dev)

            def db():
                return _bias_grad(xp, dz_db()[1], args[2], bdtype, dev)

            return LazyGrads([dx, dk] + ([db] if n_args > 2 else []))

        xshape_dtype = [xa.dtype]
        kdtype = ka.dtype
        bdtype = None if ba is None else ba.dtype
        return _out(y_out, dev), hand_written_backward(name, make, args, recorded)

    args = (x, kernel) if bias is None else (x, kernel, bias)
    return backend_op(name)(f)(*args)


def _wino_blocks(N, TT, C, F, itemsize):
    """``(i, j, t0, t1)``: images ``i:j`` and their tiles ``t0:t1``, in blocks whose transformed
    tiles (``16 x tiles x (C + F)`` values) fit ``WINOGRAD_BLOCK_BYTES`` (at least one image)."""
    tiles = max(1, WINOGRAD_BLOCK_BYTES // (16 * (C + F) * itemsize))
    nb = max(1, tiles // TT)
    return [(i, min(i + nb, N), i * TT, min(i + nb, N) * TT) for i in range(0, N, nb)]


def _block_buffer(blocks, cols, dtype):
    """``view(tiles)``: a contiguous ``(16, tiles, cols)`` view of one scratch buffer sized for
    the largest block (held until ``view`` is dropped)."""
    most = max(t1 - t0 for _, _, t0, t1 in blocks)
    flat = scratch((16 * most * cols,), dtype)
    return lambda tiles: flat[:16 * tiles * cols].reshape(16, tiles, cols)


def _winograd_conv(args, name, xa, ka, ba, dev, xc, kc, bc, relu, pt, pl, OH, OW, odt, xshape,
                   kshape, need):
    """The forward of a 3x3 stride-1 conv2d by Winograd F(2x2, 3x3), and its grad_fn.

    The batch goes through in blocks of images (``_wino_blocks``): a block's transformed tiles
    and their products stay in the core's L2 cache between the transform, the 16 GEMMs and the
    inverse transform, which the whole batch's (tens of MB) would not. The input's transformed
    tiles ``V`` are kept whole for the kernel's gradient. The backward makes the cotangent's
    transform once per block and feeds both gradients from it: those the tape follows
    (``need``: input, kernel) in one pass, any other the tape asks for in a pass of its own."""
    N, H, W, C = xc.shape
    F = kc.shape[3]
    TH, TW = (OH + 1) // 2, (OW + 1) // 2
    T = N * TH * TW
    cdt = xc.dtype
    xc = _np.ascontiguousarray(xc)
    blocks = _wino_blocks(N, TH * TW, C, F, cdt.itemsize)
    V = scratch((16, T, C), cdt)
    U = _wino_kernel(kc)
    y = scratch((N, OH, OW, F), cdt)
    bias = _np.zeros(F, cdt) if bc is None else _np.ascontiguousarray(bc)
    m_block = _block_buffer(blocks, F, cdt)
    for i, j, t0, t1 in blocks:
        _wino_in_nb(xc[i:j], V, pt, pl, TH, TW, t0)
        M = _np.matmul(V[:, t0:t1], U, out=m_block(t1 - t0))
        _wino_out_nb(M, y[i:j], bias, bc is not None, relu, TH, TW)
    del M, m_block    # the block buffer goes back to the scratch pool
    y2 = y.reshape(-1, F)
    y_out = y if odt == cdt else y.astype(odt)
    xdt, kdt = xa.dtype, ka.dtype
    bdt = None if ba is None else ba.dtype
    n_args = len(args)

    def recorded(dy):   # a gradient of a gradient: the recorded (im2col) formulas
        return _conv_grads_recorded(dy, args, y2, dev, relu, 2, 1, (pt, pl), (1, 1), (1, 1),
                                    (OH, OW), cdt)

    def make(dy):
        dya = _unwrap(dy)[0]
        dya = (dya if dya.dtype == cdt else dya.astype(cdt)).reshape(-1, F)
        dz_db = _lazy_act_grad(_np, dya, y2, relu, n_args > 2)
        done, returned = {}, set()

        def backward_pass(want_dx, want_dk):
            """dx (N, H, W, C) and dU (16, C, F) from one transform of the cotangent per block."""
            dz = _np.ascontiguousarray(dz_db()[0]).reshape(N, OH, OW, F)
            g = zeroed((N, H, W, C), cdt) if want_dx else None
            dU = _np.empty((16, C, F), cdt) if want_dk else None
            part = scratch((16, C, F), cdt) if want_dk and len(blocks) > 1 else None
            dm_block = _block_buffer(blocks, F, cdt)
            dv_block = _block_buffer(blocks, C, cdt) if want_dx else None
            for i, j, t0, t1 in blocks:
                dM = dm_block(t1 - t0)
                _wino_dout_nb(dz[i:j], dM, TH, TW)
                if want_dx:
                    dV = _np.matmul(dM, U.transpose(0, 2, 1), out=dv_block(t1 - t0))
                    _wino_din_nb(dV, g[i:j], pt, pl, TH, TW)
                if want_dk:
                    Vt = V[:, t0:t1].transpose(0, 2, 1)
                    if t0 == 0:
                        _np.matmul(Vt, dM, out=dU)
                    else:
                        dU += _np.matmul(Vt, dM, out=part)
            if want_dx:
                done["dx"] = g
            if want_dk:
                done["dU"] = dU

        def dx():
            if "dx" not in done:
                backward_pass(True, need[1] and "dU" not in done and "dU" not in returned)
            g = done.pop("dx")
            returned.add("dx")
            return _out((g if g.dtype == xdt else g.astype(xdt)).reshape(xshape), dev)

        def dk():
            if "dU" not in done:
                backward_pass(need[0] and "dx" not in done and "dx" not in returned, True)
            dU = done.pop("dU")
            returned.add("dU")
            into = destination(args[1], kshape, kdt) if kdt == cdt else None
            if into is not None:         # straight into a strategy's bucket: the same sums
                _wino_kernel_adjoint(dU, out=into.reshape(3, 3, C, F))
                return _out(into, dev)
            g = _wino_kernel_adjoint(dU)
            return _out(g.astype(kdt).reshape(kshape), dev)

        def db():
            return _bias_grad(_np, dz_db()[1], args[2], bdt, dev)

        return LazyGrads([dx, dk] + ([db] if n_args > 2 else []))

    return _out(y_out, dev), hand_written_backward(name, make, args, recorded)


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
        xa, ka, ba, dev, xp, cdt, odt, xshape, kshape = _prep(args, rank)
        N, H, W, Cin = xa.shape
        KH, KW, Co, _ = ka.shape
        if output_shape is None:
            oph, opw = output_padding if output_padding is not None else (None, None)
            OH = H if rank == 1 else deconv_output_length(H, KH, sh, padding, oph, dh)
            OW = deconv_output_length(W, KW, sw, padding, opw, dw)
        else:
            OH, OW = output_shape
        pt = 0 if rank == 1 else deconv_pad_before(H, OH, KH, sh, dh, padding)
        pl = deconv_pad_before(W, OW, KW, sw, dw, padding)
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

        def recorded(dy):   # a gradient of a gradient: the same formulas, recorded
            return _conv_t_grads_recorded(dy, args, y2, dev, relu, rank, (pt, pl), (sh, sw),
                                          (dh, dw), (OH, OW), cdt)

        def make(dy):
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
                into = destination(args[1], kshape, kdt) if (
                    kdt == cdt and type(x2) is _np.ndarray) else None
                if into is not None:     # straight into a strategy's bucket: the same GEMM
                    _np.matmul(cols().T, x2, out=into.reshape(KK * Co, Cin))
                    return _out(into, dev)
                g = cols().T @ x2                # (KK*Co, Cin)
                return _out(_cast(xp, g, kdt).reshape(kshape), dev)

            def db():
                return _bias_grad(xp, dz_db()[1], args[2], bdt, dev)

            return LazyGrads([dx, dk] + ([db] if n_args > 2 else []))

        return _out(y_out, dev), hand_written_backward(name, make, args, recorded)

    args = (x, kernel) if bias is None else (x, kernel, bias)
    return backend_op(name)(f)(*args)
