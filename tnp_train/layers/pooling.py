"""Pooling layers with TF 2.4 ``tf.keras.layers`` signatures: ``MaxPooling1D/2D/3D``,
``AveragePooling1D/2D/3D``, ``GlobalAveragePooling1D/2D/3D``, ``GlobalMaxPooling1D/2D/3D`` and
Keras's aliases (``MaxPool2D``, ``AvgPool3D``, ``GlobalAvgPool2D``...).

Windowed pooling is one op of :mod:`tnp_train.ops.pooling` (one tape node; max pooling saves
the argmax so its backward is a scatter; average pooling with ``"same"`` padding divides by the
number of real elements, as Keras). 3-D pooling is two 2-D passes (:func:`_pool3d`). Global
pooling is a tnp reduction. Channels-last is native; ``data_format="channels_first"``
transposes.
"""
from __future__ import annotations

import tnp

from ..ops import pooling as _ops
from .base import Layer

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "GlobalMaxPooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D",
           "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D"]


def _tuple(value, n, what, layer):
    if isinstance(value, (tuple, list)):
        try:
            t = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"{layer}: `{what}` must be an int or a tuple of {n} ints, got {value!r}") from None
        if len(t) != n:
            raise ValueError(f"{layer}: `{what}` must be a tuple of {n} integers, got {value!r}")
    else:
        try:
            t = (int(value),) * n
        except (TypeError, ValueError):
            raise ValueError(f"{layer}: `{what}` must be an int or a tuple of {n} ints, got {value!r}") from None
    if any(v <= 0 for v in t):
        raise ValueError(f"{layer}: `{what}` must be positive, got {t}")
    return t


def _data_format(value, layer):
    v = "channels_last" if value is None else str(value).lower()
    if v not in ("channels_last", "channels_first"):
        raise ValueError(f"{layer}: data_format must be 'channels_last' or 'channels_first', got {value!r}")
    return v


def _pool3d(fn, x, pool_size, strides, padding):
    """NDHWC pooling as two 2-D passes: over (H, W) of each depth slice, then over the depth
    axis of the result seen as (N, D, OH * OW, C). Both poolings are separable: a window's
    maximum is the maximum over depth of the per-slice maxima (the first one in (d, h, w)
    order on ties), and with "same" padding a window's count of real elements is the product
    of its depth and (h, w) counts, so the mean of the per-slice means is the window's."""
    N, D, H, W, C = x.shape
    y = fn(tnp.reshape(x, (N * D, H, W, C)), pool_size[1:], strides[1:], padding)
    OH, OW = y.shape[1], y.shape[2]
    y = fn(tnp.reshape(y, (N, D, OH * OW, C)), (pool_size[0], 1), (strides[0], 1), padding)
    return tnp.reshape(y, (N, y.shape[1], OH, OW, C))


class _Pooling(Layer):
    rank = 2
    kind = "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        self.pool_size = _tuple(pool_size, self.rank, "pool_size", cls)
        self.strides = self.pool_size if strides is None else _tuple(strides, self.rank, "strides", cls)
        pad = str(padding).lower()
        if pad not in ("valid", "same"):
            raise ValueError(f"{cls}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = pad
        self.data_format = _data_format(data_format, cls)

    def _check_rank(self, shape):
        if len(shape) != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                             f"ndim={self.rank + 2}, found ndim={len(shape)}. Full shape received: "
                             f"{tuple(shape)}")

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        self._check_rank(shape)
        first = self.data_format == "channels_first"
        spatial = shape[2:] if first else shape[1:-1]
        out = tuple(_ops.pool_output_length(n, p, s, self.padding)
                    for n, p, s in zip(spatial, self.pool_size, self.strides))
        return (shape[0], shape[1]) + out if first else (shape[0],) + out + (shape[-1],)

    def call(self, inputs):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        self._check_rank(x.shape)
        first = self.data_format == "channels_first"
        if first:
            x = tnp.moveaxis(x, 1, -1)
        if self.rank == 1:
            fn = _ops.max_pool1d if self.kind == "max" else _ops.avg_pool1d
            y = fn(x, self.pool_size[0], self.strides[0], self.padding)
        else:
            fn = _ops.max_pool2d if self.kind == "max" else _ops.avg_pool2d
            if self.rank == 2:
                y = fn(x, self.pool_size, self.strides, self.padding)
            else:
                y = _pool3d(fn, x, self.pool_size, self.strides, self.padding)
        return tnp.moveaxis(y, -1, 1) if first else y

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(_Pooling):
    """Mirrors ``tf.keras.layers.MaxPooling1D(pool_size=2, strides=None, padding='valid',
    data_format='channels_last')``."""

    rank, kind = 1, "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last",
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_Pooling):
    """Mirrors ``tf.keras.layers.AveragePooling1D(pool_size=2, strides=None, padding='valid',
    data_format='channels_last')``."""

    rank, kind = 1, "avg"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last",
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(_Pooling):
    """Mirrors ``tf.keras.layers.MaxPooling2D(pool_size=(2, 2), strides=None, padding='valid',
    data_format=None)``."""

    rank, kind = 2, "max"

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(_Pooling):
    """Mirrors ``tf.keras.layers.AveragePooling2D(pool_size=(2, 2), strides=None,
    padding='valid', data_format=None)``."""

    rank, kind = 2, "avg"

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling3D(_Pooling):
    """Mirrors ``tf.keras.layers.MaxPooling3D(pool_size=(2, 2, 2), strides=None,
    padding='valid', data_format=None)``."""

    rank, kind = 3, "max"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(_Pooling):
    """Mirrors ``tf.keras.layers.AveragePooling3D(pool_size=(2, 2, 2), strides=None,
    padding='valid', data_format=None)``."""

    rank, kind = 3, "avg"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


# ----------------------------------------------------------------------------- global pooling
class _GlobalPooling(Layer):
    rank = 2
    kind = "avg"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format, type(self).__name__)
        self.keepdims = bool(keepdims)

    def _check_rank(self, shape):
        if len(shape) != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                             f"ndim={self.rank + 2}, found ndim={len(shape)}. Full shape received: "
                             f"{tuple(shape)}")

    def _axes(self):
        return tuple(range(2, 2 + self.rank)) if self.data_format == "channels_first" else \
            tuple(range(1, 1 + self.rank))

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        self._check_rank(shape)
        axes = self._axes()
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def call(self, inputs):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        self._check_rank(x.shape)
        if self.kind == "max":
            return tnp.max(x, axis=self._axes(), keepdims=self.keepdims)
        return tnp.mean(x, axis=self._axes(), keepdims=self.keepdims)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling):
    """Mirrors ``tf.keras.layers.GlobalAveragePooling1D(data_format='channels_last',
    keepdims=False)``; with a ``mask`` (batch, steps) the average runs over unmasked steps."""

    rank, kind = 1, "avg"

    def __init__(self, data_format="channels_last", keepdims=False, **kwargs):
        super().__init__(data_format, keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        self._check_rank(x.shape)
        step_axis = 2 if self.data_format == "channels_first" else 1
        m = tnp.asarray(mask).astype(x.dtype)
        m = tnp.expand_dims(m, 1 if step_axis == 2 else 2)
        total = tnp.sum(x * m, axis=step_axis, keepdims=self.keepdims)
        count = tnp.sum(m, axis=step_axis, keepdims=self.keepdims)
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    """Mirrors ``tf.keras.layers.GlobalAveragePooling2D(data_format=None, keepdims=False)``."""

    rank, kind = 2, "avg"


class GlobalMaxPooling1D(_GlobalPooling):
    """Mirrors ``tf.keras.layers.GlobalMaxPooling1D(data_format='channels_last',
    keepdims=False)``."""

    rank, kind = 1, "max"

    def __init__(self, data_format="channels_last", keepdims=False, **kwargs):
        super().__init__(data_format, keepdims, **kwargs)


class GlobalMaxPooling2D(_GlobalPooling):
    """Mirrors ``tf.keras.layers.GlobalMaxPooling2D(data_format=None, keepdims=False)``."""

    rank, kind = 2, "max"


class GlobalAveragePooling3D(_GlobalPooling):
    """Mirrors ``tf.keras.layers.GlobalAveragePooling3D(data_format=None)`` (with the
    ``keepdims`` of the other global poolings here)."""

    rank, kind = 3, "avg"


class GlobalMaxPooling3D(_GlobalPooling):
    """Mirrors ``tf.keras.layers.GlobalMaxPooling3D(data_format=None)`` (with the ``keepdims``
    of the other global poolings here)."""

    rank, kind = 3, "max"


# Keras's aliases
MaxPool1D = MaxPooling1D
MaxPool2D = MaxPooling2D
AvgPool1D = AveragePooling1D
AvgPool2D = AveragePooling2D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalMaxPool2D = GlobalMaxPooling2D
MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D
GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
