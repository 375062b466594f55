"""Convolutions and pooling (``conv1d`` ... ``conv3d``, depthwise and separable, transposed,
unshared ``local_conv*``, ``pool2d``/``pool3d``), on tnp_train's kernels."""
from __future__ import annotations

import numpy as _np

import tnp

from ..layers.convolutional import _conv3d
from ..layers.pooling import _pool3d
from ..ops import conv as _conv
from ..ops import pooling as _pooling
from ._common import _data_format, _t, _tuple, symbolic_ops

__all__ = ["conv1d", "conv2d", "conv2d_transpose", "conv3d", "depthwise_conv2d",
           "local_conv1d", "local_conv2d", "pool2d", "pool3d", "separable_conv2d"]


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """1-D convolution, ``padding`` ``"valid"``, ``"same"`` or ``"causal"``; kernel
    ``(k, in, out)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    if padding not in ("valid", "same", "causal"):
        raise ValueError(f"Unknown padding: {padding}")
    y = _conv.conv1d(x, _t(kernel), None, strides, padding, dilation_rate)
    return tnp.moveaxis(y, -1, 1) if first else y


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    """2-D convolution; kernel ``(kh, kw, in, out)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    y = _conv.conv2d(x, _t(kernel), None, _tuple(strides, 2), padding,
                           _tuple(dilation_rate, 2))
    return tnp.moveaxis(y, -1, 1) if first else y


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """Transposed 2-D convolution to ``output_shape`` (batch and channels included, in
    ``data_format``'s order); kernel ``(kh, kw, out, in)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
        spatial = tuple(output_shape[2:4])
    else:
        spatial = tuple(output_shape[1:3])
    y = _conv.conv2d_transpose(x, _t(kernel), None, spatial, _tuple(strides, 2),
                                     padding, _tuple(dilation_rate, 2))
    return tnp.moveaxis(y, -1, 1) if first else y


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1, 1)):
    """3-D convolution; kernel ``(kd, kh, kw, in, out)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    y = _conv3d(x, _t(kernel), None, _tuple(strides, 3), padding, _tuple(dilation_rate, 3), 1,
                None, "conv3d")
    return tnp.moveaxis(y, -1, 1) if first else y


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    """Each input channel convolved with its own ``(kh, kw)`` filters; kernel
    ``(kh, kw, in, multiplier)``, output channels ``in * multiplier``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    k = _t(depthwise_kernel)
    kh, kw, cin, mult = k.shape
    # a grouped convolution with one input channel per group
    y = _conv.conv2d(x, tnp.reshape(k, (kh, kw, 1, cin * mult)), None,
                           _tuple(strides, 2), padding, _tuple(dilation_rate, 2), cin)
    return tnp.moveaxis(y, -1, 1) if first else y


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """``depthwise_conv2d`` then a 1x1 convolution with ``pointwise_kernel``."""
    first = _data_format(data_format) == "channels_first"
    y = depthwise_conv2d(x, depthwise_kernel, strides, padding, "channels_last" if not first
                         else "channels_first", dilation_rate)
    if first:
        y = tnp.moveaxis(y, 1, -1)
    y = _conv.conv2d(y, _t(pointwise_kernel), None, (1, 1), "valid", (1, 1))
    return tnp.moveaxis(y, -1, 1) if first else y


def _pool_args(pool_mode, padding):
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    if padding not in ("valid", "same"):
        raise ValueError(f"Invalid padding: {padding}")


def _pool(x, pool_size, strides, padding, data_format, pool_mode, rank):
    """``rank``-D max or average pooling (the 2-D kernels, applied per depth slice in 3-D)."""
    _pool_args(pool_mode, padding)
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    fn = _pooling.max_pool2d if pool_mode == "max" else _pooling.avg_pool2d
    args = (_tuple(pool_size, rank), _tuple(strides, rank), padding)
    if rank == 3:
        y = _pool3d(fn, x, *args)
    else:
        y = fn(x, *args)
    return tnp.moveaxis(y, -1, 1) if first else y


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    """2-D max or average pooling."""
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2)


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None,
           pool_mode="max"):
    """3-D max or average pooling."""
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3)


def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    """Unshared 1-D convolution: kernel ``(output_length, kernel_size * in, out)``, one
    filter bank per output position."""
    return _local_conv(inputs, kernel, _tuple(kernel_size, 1), _tuple(strides, 1),
                       (kernel.shape[0],), data_format)


def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    """Unshared 2-D convolution: kernel ``(rows * cols, kh * kw * in, out)``."""
    return _local_conv(inputs, kernel, _tuple(kernel_size, 2), _tuple(strides, 2),
                       tuple(output_shape), data_format)


def _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format):
    x, kernel = _t(inputs), _t(kernel)
    first = _data_format(data_format) == "channels_first"
    patches = []
    for pos in _np.ndindex(*output_shape):
        sl = tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, strides, kernel_size))
        # TF flattens each patch in the input's own layout (channels first or last)
        patch = x[(slice(None), slice(None)) + sl] if first else x[(slice(None),) + sl]
        patches.append(tnp.reshape(patch, (x.shape[0], -1)))
    xs = tnp.stack(patches, axis=0)                        # (positions, batch, features)
    out = tnp.matmul(xs, kernel)                           # (positions, batch, filters)
    out = tnp.reshape(out, tuple(output_shape) + out.shape[1:])
    nd = len(output_shape)
    if first:
        return tnp.transpose(out, (nd, nd + 1) + tuple(range(nd)))
    return tnp.transpose(out, (nd,) + tuple(range(nd)) + (nd + 1,))


symbolic_ops(globals())
