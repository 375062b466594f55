"""The recorded backward of the convolutions: the gradients of :mod:`.conv`'s ops written with
recorded tnp operations, used when a backward pass is itself differentiated (see :mod:`.conv`)."""
from __future__ import annotations

import numpy as _np

import tnp
from tnp import ndarray as _tnp_ndarray

from ..autodiff.vjps.indexing import untake as _untake
from ._common import LazyGrads, _out


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


def _operands(args, rank):
    """``x`` and ``k`` as tnp arrays, their shapes, and their 2-D forms (a 1-D convolution is
    a 2-D one of height 1)."""
    x, k = (a if isinstance(a, _tnp_ndarray) else tnp.asarray(a) for a in args[:2])
    xshape, kshape = tuple(x.shape), tuple(k.shape)
    if rank == 1:
        return x, k, xshape, kshape, tnp.reshape(x, (xshape[0], 1) + xshape[1:]), \
            tnp.reshape(k, (1,) + kshape)
    return x, k, xshape, kshape, x, k


def _lazy_grads(dx, dk, dz, args):
    """``LazyGrads`` of ``dx``, ``dk`` and, where the op has a bias (``args[2]``), its
    gradient: the cotangent ``dz`` summed over all but the channels."""
    if len(args) < 3:
        return LazyGrads([dx, dk])
    return LazyGrads([dx, dk, lambda: _as(tnp.sum(dz, axis=(0, 1, 2)), args[2].dtype)])


def _conv_grads_recorded(dy, args, y2, dev, relu, rank, groups, pads, strides, dils, out_hw, cdt):
    """conv1d/conv2d's (dx, dk[, db]) as recorded tnp code: ``dk`` correlates the input's
    patches with the cotangent, ``dx`` scatters the cotangent times the kernel back."""
    x, k, xshape, kshape, x4, k4 = _operands(args, rank)
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

    return _lazy_grads(dx, dk, dz, args)


def _conv_t_grads_recorded(dy, args, y2, dev, relu, rank, pads, strides, dils, out_hw, cdt):
    """conv1d_transpose/conv2d_transpose's (dx, dk[, db]) as recorded tnp code: the cotangent's
    patches (a forward convolution's geometry) times the kernel, and correlated with the input."""
    x, k, xshape, kshape, x4, k4 = _operands(args, rank)
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

    return _lazy_grads(dx, dk, dz, args)
