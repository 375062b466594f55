"""Core layers: ``InputLayer`` (``tt.Input``) and ``Dense``."""
from __future__ import annotations

import tnp

from .. import activations as _activations
from .. import initializers as _initializers
from .base import Layer

__all__ = ["InputLayer", "Input", "Dense"]


class InputLayer(Layer):
    """The entry of a model: records the input shape (batch dimension excluded)."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, name=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self.input_shape = tuple(input_shape) if input_shape is not None else None
        self.batch_size = batch_size
        self.built = True

    def get_config(self):
        return {**super().get_config(), "input_shape": self.input_shape, "batch_size": self.batch_size}


def Input(shape=None, batch_size=None, name=None, dtype=None, **kwargs):  # noqa: N802 (Keras's name)
    """Mirrors ``tf.keras.Input(shape, batch_size, name, dtype)``: the start of a model."""
    if shape is None:
        raise ValueError("Input: a shape (without the batch dimension) is required")
    return InputLayer(input_shape=tuple(shape), batch_size=batch_size, name=name, dtype=dtype)


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; mirrors ``tf.keras.layers.Dense`` (kernel of shape
    ``(input_dim, units)``)."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be a positive integer, got {units!r}")
        self.units = int(units)
        self.activation = _activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = _initializers.get(kernel_initializer)
        self.bias_initializer = _initializers.get(bias_initializer)

    def build(self, input_shape):
        last = input_shape[-1]
        if last is None:
            raise ValueError(f"{self.name}: the last dimension of the inputs must be known, got "
                             f"shape {input_shape}")
        self.kernel = self.add_weight("kernel", (int(last), self.units), initializer=self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer) \
            if self.use_bias else None
        super().build(input_shape)

    def call(self, inputs):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        if x.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"{self.name}: inputs of shape {x.shape} do not fit a kernel of shape "
                             f"{self.kernel.shape}")
        y = x @ self.kernel
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": _activations.serialize(self.activation), "use_bias": self.use_bias}
