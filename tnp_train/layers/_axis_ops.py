"""Differentiable one-axis array operations shared by the reshaping, convolution and pooling
layers: zero padding, nearest (repeat) and bilinear resampling. Each is written with tnp
operations whose tape rules are cheap (concatenate, broadcast, take), not with ``tnp.pad`` or
``tnp.repeat``, whose backward goes through an index map built on the host."""
from __future__ import annotations

import numpy as _np

import tnp

__all__ = ["pad_axis", "spread_axis", "repeat_axis", "bilinear_axis", "spatial_axes", "check_ndim"]


def check_ndim(layer, shape, ndim):
    """ValueError unless ``shape`` has ``ndim`` axes (TF's ``InputSpec(ndim=...)`` message)."""
    if len(shape) != ndim:
        raise ValueError(f"Input 0 of layer {layer.name} is incompatible with the layer: expected "
                         f"ndim={ndim}, found ndim={len(shape)}. Full shape received: "
                         f"{tuple(shape)}")


def spatial_axes(rank, data_format):
    """The axes of the ``rank`` spatial dimensions of a batched input."""
    start = 2 if data_format == "channels_first" else 1
    return tuple(range(start, start + rank))


def pad_axis(x, axis, before, after):
    """``x`` with ``before`` and ``after`` zeros added along ``axis``."""
    if not before and not after:
        return x
    parts = []
    for n in (before, after):
        shape = list(x.shape)
        shape[axis] = n
        parts.append(tnp.zeros(tuple(shape), dtype=x.dtype, device=x.device) if n else None)
    return tnp.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)


def spread_axis(x, axis, s):
    """Each element of ``x`` followed by ``s - 1`` zeros along ``axis`` (length ``n * s``):
    where a stride-``s`` transposed convolution writes its inputs."""
    if s == 1:
        return x
    axis %= x.ndim
    shape = tuple(x.shape)
    spread = pad_axis(tnp.expand_dims(x, axis + 1), axis + 1, 0, s - 1)
    return tnp.reshape(spread, shape[:axis] + (shape[axis] * s,) + shape[axis + 1:])


def repeat_axis(x, axis, n):
    """Each element of ``x`` repeated ``n`` times along ``axis`` (``numpy.repeat``), through a
    broadcast, whose backward is a sum."""
    if n == 1:
        return x
    axis %= x.ndim
    shape = tuple(x.shape)
    wide = tnp.broadcast_to(tnp.expand_dims(x, axis + 1),
                            shape[:axis + 1] + (n,) + shape[axis + 1:])
    return tnp.reshape(wide, shape[:axis] + (shape[axis] * n,) + shape[axis + 1:])


def bilinear_axis(x, axis, n):
    """``x`` resized ``n`` times along ``axis`` by linear interpolation with half-pixel centers
    (TF 2's ``tf.image.resize(method="bilinear")``, one axis at a time: the 2-D resize is
    separable): output ``i`` reads the input at ``(i + 0.5) / n - 0.5``, clamped to the
    edges."""
    if n == 1:
        return x
    axis %= x.ndim
    size = x.shape[axis]
    src = (_np.arange(size * n) + 0.5) / n - 0.5
    below = _np.floor(src)
    frac = src - below
    lo = _np.maximum(below, 0).astype(_np.intp)
    hi = _np.minimum(_np.ceil(src), size - 1).astype(_np.intp)
    w_shape = [1] * x.ndim
    w_shape[axis] = size * n
    w = tnp.asarray(frac.reshape(w_shape), dtype=x.dtype, device=x.device)
    dev = x.device
    a = tnp.take(x, tnp.asarray(lo, device=dev), axis=axis)
    b = tnp.take(x, tnp.asarray(hi, device=dev), axis=axis)
    return a + (b - a) * w
