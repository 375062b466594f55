"""Locally-connected layers (``tf.keras.layers.LocallyConnected1D/2D``): convolutions whose
weights are not shared, one filter bank per output position.

Built from tnp operations (slices, a batched matmul), so the tape differentiates them. The
kernel has TF's ``implementation=1`` layout, ``(positions, window * channels, filters)``, with
each window flattened in the input's own axis order (``(k, c)`` channels-last, ``(c, k)``
channels-first), so TF's saved weights load unchanged; ``implementation=2`` and ``3`` (TF's
dense and sparse forms of the same function) are accepted and compute the same outputs from
this layout.
"""
from __future__ import annotations

import tnp

from ._common import add_option_weight
from .base import Layer
from .convolutional import _data_format, _positive, _tuple
from .core import _DENSE_WEIGHT_ARGS, set_weight_options, weight_options, weight_options_config

__all__ = ["LocallyConnected1D", "LocallyConnected2D"]


class _LocallyConnected(Layer):
    _rank = 0

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 implementation=1, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        if isinstance(filters, bool) or not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{cls}: filters must be a positive integer, got {filters!r}")
        self.filters = filters
        self.kernel_size = _positive(_tuple(kernel_size, self._rank, "kernel_size", cls),
                                     "kernel_size", cls)
        self.strides = _positive(_tuple(strides, self._rank, "strides", cls), "strides", cls)
        if str(padding).lower() != "valid":
            # TF 2.4: "Currently only supports 'valid'"
            raise ValueError(f"{cls}: Invalid border mode for LocallyConnected layer: "
                             f"{padding!r} (only 'valid' is supported)")
        self.padding = "valid"
        self.data_format = _data_format(data_format, cls)
        if implementation not in (1, 2, 3):
            raise ValueError(f"{cls}: implementation must be 1, 2 or 3, got {implementation!r}")
        self.implementation = implementation
        set_weight_options(self, **weight_options(locals()))

    # -- shapes --------------------------------------------------------------------------------
    def _split(self, shape):
        """(spatial sizes, channels) of an input shape (batch first)."""
        if len(shape) != self._rank + 2:
            raise ValueError(f"{type(self).__name__}: expected inputs of rank "
                             f"{self._rank + 2}, got shape {tuple(shape)}")
        if self.data_format == "channels_first":
            return tuple(shape[2:]), shape[1]
        return tuple(shape[1:-1]), shape[-1]

    def _out_sizes(self, spatial):
        out = []
        for n, k, s in zip(spatial, self.kernel_size, self.strides):
            if n is None:
                raise ValueError(f"{type(self).__name__}: the spatial dimensions of the inputs "
                                 f"must be known, got {spatial}")
            size = (n - k) // s + 1
            if size <= 0:
                raise ValueError(f"{type(self).__name__}: the kernel {self.kernel_size} does "
                                 f"not fit the inputs' spatial size {spatial}")
            out.append(size)
        return tuple(out)

    def build(self, input_shape):
        spatial, channels = self._split(tuple(input_shape))
        if channels is None:
            raise ValueError(f"{type(self).__name__}: the channel dimension of the inputs "
                             f"must be defined, got shape {tuple(input_shape)}")
        self._out = self._out_sizes(spatial)
        positions = 1
        for n in self._out:
            positions *= n
        window = channels
        for k in self.kernel_size:
            window *= k
        self.kernel = add_option_weight(self, "kernel", (positions, window, self.filters))
        # (positions..., filters) in either data format, as TF
        self.bias = add_option_weight(self, "bias", self._out + (self.filters,)) \
            if self.use_bias else None
        super().build(input_shape)

    def compute_output_shape(self, input_shape):
        spatial, _ = self._split(tuple(input_shape))
        out = self._out_sizes(spatial)
        if self.data_format == "channels_first":
            return (input_shape[0], self.filters) + out
        return (input_shape[0],) + out + (self.filters,)

    # -- the computation -----------------------------------------------------------------------
    def call(self, inputs):
        x = tnp.asarray(inputs)
        spatial, _ = self._split(tuple(x.shape))
        if self._out_sizes(spatial) != self._out:
            raise ValueError(f"{self.name}: built for outputs of size {self._out}, got inputs "
                             f"of shape {tuple(x.shape)}")
        batch = x.shape[0]
        first = self.data_format == "channels_first"
        patches = []
        for pos in _positions(self._out):
            index = [slice(None)] * x.ndim
            for axis, (p, k, s) in enumerate(zip(pos, self.kernel_size, self.strides)):
                index[axis + (2 if first else 1)] = slice(p * s, p * s + k)
            patches.append(tnp.reshape(x[tuple(index)], (batch, -1)))
        stacked = tnp.stack(patches, axis=0)                      # (positions, batch, window)
        y = tnp.matmul(stacked, self.kernel)                      # (positions, batch, filters)
        y = tnp.reshape(tnp.moveaxis(y, 0, 1), (batch,) + self._out + (self.filters,))
        if first:
            y = tnp.moveaxis(y, -1, 1)
        if self.bias is not None:
            # channels-first, Keras's bias_add reshapes the (positions..., filters) bias to
            # (filters, positions...) without transposing it: so do we, so TF's weights mean
            # the same here
            y = y + (tnp.reshape(self.bias, (self.filters,) + self._out) if first else self.bias)
        return self.activation(y)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                **weight_options_config(self, "activation", "use_bias", *_DENSE_WEIGHT_ARGS),
                "implementation": self.implementation}


def _positions(sizes):
    """Every output position, row-major (the kernel's first axis)."""
    if len(sizes) == 1:
        return [(i,) for i in range(sizes[0])]
    return [(i,) + rest for i in range(sizes[0]) for rest in _positions(sizes[1:])]


class LocallyConnected1D(_LocallyConnected):
    """Mirrors ``tf.keras.layers.LocallyConnected1D(filters, kernel_size, strides=1,
    padding="valid", data_format=None, activation=None, use_bias=True, ...,
    implementation=1)`` (TF 2.4): kernel ``(output_length, kernel_size * channels, filters)``,
    bias ``(output_length, filters)``; only ``padding="valid"``, as TF."""
    _rank = 1


class LocallyConnected2D(_LocallyConnected):
    """Mirrors ``tf.keras.layers.LocallyConnected2D(filters, kernel_size, strides=(1, 1),
    padding="valid", data_format=None, ...)`` (TF 2.4): kernel ``(rows * cols, kh * kw *
    channels, filters)``, bias ``(rows, cols, filters)`` (in either data format, as TF); only
    ``padding="valid"``, as TF."""
    _rank = 2
