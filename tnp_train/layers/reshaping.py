"""Spatial reshaping layers with TF 2.4 ``tf.keras.layers`` signatures: ``UpSampling1D/2D/3D``,
``ZeroPadding1D/2D/3D``, ``Cropping1D/2D/3D``.

One class per operation serves the three ranks (the ``rank`` spatial axes follow the batch
axis with ``channels_last``, the channel axis with ``channels_first``); the 1-D layers are
channels-last only, as in TF 2.4. Everything is tnp slicing, concatenation and broadcasting, so
the tape differentiates it.
"""
from __future__ import annotations

from ._axis_ops import bilinear_axis, check_ndim, pad_axis, repeat_axis, spatial_axes
from .base import Layer
from .convolutional import _data_format, _positive, _tuple

__all__ = ["UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D"]


def _pairs(value, rank, what, layer):
    """TF's forms of a per-axis ``(before, after)`` amount: for one axis an int or a pair; for
    ``rank`` > 1 axes an int (everywhere), ``rank`` ints (symmetric per axis) or ``rank``
    pairs."""
    if rank == 1:
        return (_positive(_tuple(value, 2, what, layer), what, layer, allow_zero=True),)
    if isinstance(value, (list, tuple)):
        if len(value) != rank:
            raise ValueError(f"{layer}: `{what}` should have {rank} elements. Found: {value!r}")
        out = tuple(_tuple(v, 2, f"entry {i} of {what}", layer) for i, v in enumerate(value))
    else:
        try:
            out = ((int(value),) * 2,) * rank
        except (TypeError, ValueError):
            raise ValueError(f"{layer}: `{what}` should be either an int, a tuple of {rank} ints "
                             f"or a tuple of {rank} tuples of 2 ints. Found: {value!r}") from None
    for p in out:
        _positive(p, what, layer, allow_zero=True)
    return out


class _Spatial(Layer):
    """What the three operations share: ``rank`` spatial axes placed by ``data_format``."""

    rank = 2

    def __init__(self, data_format=None, **kwargs):
        if self.rank == 1 and data_format is not None:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument 'data_format' "
                            f"(the 1-D layers are channels-last only, as in TF 2.4)")
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format, type(self).__name__)

    def _axes(self, shape):
        check_ndim(self, shape, self.rank + 2)
        return spatial_axes(self.rank, self.data_format)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for ax, i in zip(self._axes(shape), range(self.rank)):
            shape[ax] = None if shape[ax] is None else self._out_length(shape[ax], i, input_shape)
        return tuple(shape)

    def _config(self):
        base = super().get_config()
        return base if self.rank == 1 else {**base, "data_format": self.data_format}


# ----------------------------------------------------------------------------- up-sampling
class _UpSampling(_Spatial):
    def __init__(self, size, data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format, **kwargs)
        cls = type(self).__name__
        self.size = _positive(_tuple(size, self.rank, "size", cls), "size", cls)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f'{cls}: `interpolation` argument should be one of `"nearest"` or '
                             f'`"bilinear"`, got {interpolation!r}')
        self.interpolation = interpolation

    def _out_length(self, n, i, shape):
        return n * self.size[i]

    def call(self, inputs):
        resample = bilinear_axis if self.interpolation == "bilinear" else repeat_axis
        x = inputs
        for ax, n in zip(self._axes(x.shape), self.size):
            x = resample(x, ax, n)
        return x


class UpSampling1D(_UpSampling):
    """Mirrors ``tf.keras.layers.UpSampling1D(size=2)``: each step of a (batch, steps,
    features) input repeated ``size`` times."""

    rank = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(size, **kwargs)

    def get_config(self):
        return {**self._config(), "size": self.size[0]}


class UpSampling2D(_UpSampling):
    """Mirrors ``tf.keras.layers.UpSampling2D(size=(2, 2), data_format=None,
    interpolation='nearest')``; ``"bilinear"`` is TF 2's ``tf.image.resize`` (half-pixel
    centers, no antialiasing)."""

    rank = 2

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(size, data_format, interpolation, **kwargs)

    def get_config(self):
        return {**self._config(), "size": self.size, "interpolation": self.interpolation}


class UpSampling3D(_UpSampling):
    """Mirrors ``tf.keras.layers.UpSampling3D(size=(2, 2, 2), data_format=None)`` (nearest:
    each voxel repeated)."""

    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size, data_format, **kwargs)

    def get_config(self):
        return {**self._config(), "size": self.size}


# ----------------------------------------------------------------------------- zero padding
class _ZeroPadding(_Spatial):
    def __init__(self, padding, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs(padding, self.rank, "padding", type(self).__name__)

    def _out_length(self, n, i, shape):
        return n + sum(self.padding[i])

    def call(self, inputs):
        x = inputs
        for ax, (before, after) in zip(self._axes(x.shape), self.padding):
            x = pad_axis(x, ax, before, after)
        return x

    def get_config(self):
        return {**self._config(), "padding": self.padding[0] if self.rank == 1 else self.padding}


class ZeroPadding1D(_ZeroPadding):
    """Mirrors ``tf.keras.layers.ZeroPadding1D(padding=1)``: zeros before and after the steps
    (an int, or ``(before, after)``)."""

    rank = 1

    def __init__(self, padding=1, **kwargs):
        super().__init__(padding, **kwargs)


class ZeroPadding2D(_ZeroPadding):
    """Mirrors ``tf.keras.layers.ZeroPadding2D(padding=(1, 1), data_format=None)``: an int,
    ``(sym_height, sym_width)`` or ``((top, bottom), (left, right))``."""

    rank = 2

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Mirrors ``tf.keras.layers.ZeroPadding3D(padding=(1, 1, 1), data_format=None)``: an int,
    three ints or three ``(before, after)`` pairs."""

    rank = 3

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


# ----------------------------------------------------------------------------- cropping
class _Cropping(_Spatial):
    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _pairs(cropping, self.rank, "cropping", type(self).__name__)

    def _out_length(self, n, i, shape):
        # TF 2.4 returns an empty array here; Keras 3 refuses, and so do we
        out = n - sum(self.cropping[i])
        if out <= 0:
            raise ValueError(f"{self.name}: cropping {self.cropping} removes every element of "
                             f"axis {spatial_axes(self.rank, self.data_format)[i]} of inputs of "
                             f"shape {tuple(shape)}")
        return out

    def call(self, inputs):
        index = [slice(None)] * inputs.ndim
        axes = self._axes(inputs.shape)
        for i, (ax, (before, after)) in enumerate(zip(axes, self.cropping)):
            n = inputs.shape[ax]
            index[ax] = slice(before, before + self._out_length(n, i, inputs.shape))
        return inputs[tuple(index)]

    def get_config(self):
        return {**self._config(),
                "cropping": self.cropping[0] if self.rank == 1 else self.cropping}


class Cropping1D(_Cropping):
    """Mirrors ``tf.keras.layers.Cropping1D(cropping=(1, 1))``: steps removed at the start and
    the end."""

    rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(cropping, **kwargs)


class Cropping2D(_Cropping):
    """Mirrors ``tf.keras.layers.Cropping2D(cropping=((0, 0), (0, 0)), data_format=None)``: an
    int, ``(sym_height, sym_width)`` or ``((top, bottom), (left, right))``."""

    rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Mirrors ``tf.keras.layers.Cropping3D(cropping=((1, 1), (1, 1), (1, 1)),
    data_format=None)``."""

    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)
