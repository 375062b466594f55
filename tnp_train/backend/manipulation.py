"""Shapes and arrangement: reshaping, joining, repeating, selecting (``switch``), padding and
resizing."""
from __future__ import annotations

import builtins

import numpy as _np

import tnp

from ._common import _data_format, _t, symbolic_ops

__all__ = ["arange", "batch_flatten", "concatenate", "expand_dims", "flatten", "gather",
           "one_hot", "permute_dimensions", "repeat", "repeat_elements", "reshape",
           "resize_images", "resize_volumes", "reverse", "spatial_2d_padding",
           "spatial_3d_padding", "squeeze", "stack", "switch", "temporal_padding", "tile",
           "transpose"]


def arange(start, stop=None, step=1, dtype="int32"):
    """``range(start, stop, step)`` as an array (a negative ``start`` alone gives an empty
    one, as in TF 2.4)."""
    if stop is None and start < 0:
        start = 0
    out = tnp.arange(start, stop, step) if stop is not None else tnp.arange(start)
    return out.astype(_np.dtype(dtype))


def reshape(x, shape):
    return tnp.reshape(_t(x), tuple(shape))


def flatten(x):
    return tnp.reshape(_t(x), (-1,))


def batch_flatten(x):
    """``(batch, -1)``."""
    x = _t(x)
    return tnp.reshape(x, (x.shape[0], -1))


def expand_dims(x, axis=-1):
    return tnp.expand_dims(_t(x), axis)


def squeeze(x, axis):
    return tnp.squeeze(_t(x), axis=axis)


def permute_dimensions(x, pattern):
    return tnp.transpose(_t(x), tuple(pattern))


def transpose(x):
    """All axes reversed (``tf.transpose``)."""
    return tnp.transpose(_t(x))


def concatenate(tensors, axis=-1):
    tensors = [_t(t) for t in tensors]
    if axis < 0:
        rank = tensors[0].ndim
        axis = axis % rank if rank else 0
    return tnp.concatenate(tensors, axis=axis)


def stack(x, axis=0):
    return tnp.stack([_t(t) for t in x], axis=axis)


def tile(x, n):
    return tnp.tile(_t(x), [n] if isinstance(n, int) else tuple(n))


def repeat(x, n):
    """``(batch, dim)`` -> ``(batch, n, dim)``."""
    x = _t(x)
    if x.ndim != 2:
        raise ValueError(f"repeat: expected a 2-D input (batch, dim), got shape {x.shape}")
    return tnp.repeat(tnp.expand_dims(x, 1), n, axis=1)


def repeat_elements(x, rep, axis):
    """Each slice along ``axis`` repeated ``rep`` times (``np.repeat``)."""
    return tnp.repeat(_t(x), rep, axis=axis)


def reverse(x, axes):
    return tnp.flip(_t(x), axis=(axes,) if isinstance(axes, int) else tuple(axes))


def gather(reference, indices):
    """``reference[indices]`` along axis 0."""
    return tnp.take(_t(reference), _t(indices).astype("int64"), axis=0)


def one_hot(indices, num_classes):
    """A trailing one-hot axis of ``num_classes`` (float32; rows of an index out of range
    are all zeros, as ``tf.one_hot``)."""
    idx = _t(indices).astype("int64")
    return (tnp.expand_dims(idx, -1) == tnp.arange(num_classes)).astype("float32")


def switch(condition, then_expression, else_expression):
    """``then`` where ``condition`` holds, else ``else``: a scalar condition picks one (calling
    it when callable); an array condition of lower rank is extended with trailing axes."""
    cond = _t(condition).astype(bool)
    if cond.ndim == 0:
        chosen = then_expression if bool(cond) else else_expression
        return chosen() if callable(chosen) else chosen
    then = _t(then_expression() if callable(then_expression) else then_expression)
    other = _t(else_expression() if callable(else_expression) else else_expression)
    if cond.ndim > then.ndim:
        raise ValueError(f"Rank of `condition` should be less than or equal to rank of "
                         f"`then_expression` and `else_expression`. ndim(condition)="
                         f"{cond.ndim}, ndim(then_expression)={then.ndim}")
    if cond.ndim > 1:
        cond = tnp.reshape(cond, cond.shape + (1,) * (then.ndim - cond.ndim))
    return tnp.where(cond, then, other)


def _pad_axes(x, pads):
    return tnp.pad(x, [tuple(p) for p in pads])


def temporal_padding(x, padding=(1, 1)):
    """Zeros before and after axis 1 of a 3-D array."""
    x = _t(x)
    if len(padding) != 2:
        raise ValueError(f"temporal_padding: padding must be a pair, got {padding!r}")
    return _pad_axes(x, [(0, 0), padding, (0, 0)])


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    """Zeros around the rows and columns of a 4-D array."""
    x = _t(x)
    if len(padding) != 2 or len(padding[0]) != 2 or len(padding[1]) != 2:
        raise ValueError(f"spatial_2d_padding: padding must be two pairs, got {padding!r}")
    if _data_format(data_format) == "channels_first":
        return _pad_axes(x, [(0, 0), (0, 0), padding[0], padding[1]])
    return _pad_axes(x, [(0, 0), padding[0], padding[1], (0, 0)])


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    """Zeros around the three spatial axes of a 5-D array."""
    x = _t(x)
    if len(padding) != 3 or builtins.any(len(p) != 2 for p in padding):
        raise ValueError(f"spatial_3d_padding: padding must be three pairs, got {padding!r}")
    if _data_format(data_format) == "channels_first":
        return _pad_axes(x, [(0, 0), (0, 0), *padding])
    return _pad_axes(x, [(0, 0), *padding, (0, 0)])


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    """Rows and columns scaled up by integer factors, ``"nearest"`` (repeats) or
    ``"bilinear"`` (TF 2's half-pixel bilinear resize, in float32 as TF's)."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError('interpolation should be one of "nearest" or "bilinear".')
    if first:
        x = tnp.moveaxis(x, 1, -1)
    if interpolation == "nearest":
        y = tnp.repeat(tnp.repeat(x, height_factor, axis=1), width_factor, axis=2)
    else:
        # float32 whatever the input, as tf.image.resize gives for bilinear
        y = _bilinear(x.astype("float32"), x.shape[1] * height_factor,
                      x.shape[2] * width_factor)
    return tnp.moveaxis(y, -1, 1) if first else y


def _bilinear_axis(n_in, n_out):
    # half-pixel centres: source = (i + 0.5) * n_in / n_out - 0.5, clamped at the edges
    src = (_np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    src = _np.clip(src, 0, n_in - 1)
    lo = _np.floor(src).astype(_np.int64)
    hi = _np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


def _bilinear(x, oh, ow):
    lo, hi, f = _bilinear_axis(x.shape[1], oh)
    f = tnp.asarray(f.reshape(1, -1, 1, 1), dtype=x.dtype)
    rows = tnp.take(x, lo, axis=1) * (1 - f) + tnp.take(x, hi, axis=1) * f
    lo, hi, f = _bilinear_axis(x.shape[2], ow)
    f = tnp.asarray(f.reshape(1, 1, -1, 1), dtype=x.dtype)
    return tnp.take(rows, lo, axis=2) * (1 - f) + tnp.take(rows, hi, axis=2) * f


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """The three spatial axes of a 5-D array repeated by their factors."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    axes = (2, 3, 4) if first else (1, 2, 3)
    for ax, f in zip(axes, (depth_factor, height_factor, width_factor)):
        x = tnp.repeat(x, f, axis=ax)
    return x


symbolic_ops(globals())
