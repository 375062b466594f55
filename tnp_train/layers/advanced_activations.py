"""Advanced activation layers with TF 2.4 ``tf.keras.layers`` signatures: ``LeakyReLU``,
``ReLU``, ``PReLU``, ``ELU``, ``Softmax``, ``ThresholdedReLU``.

Each is the matching :mod:`tnp_train.activations` function (tnp operations or one tape node),
so gradients come from the tape; ``PReLU`` learns ``alpha`` with one weight per (non-shared)
input element.
"""
from __future__ import annotations

import numpy as _np

import tnp

from .. import activations as _activations
from ..utils.serialization import register_builtins
from .base import Layer
from .convolutional import _deserialize_initializer, _get_constraint, _get_regularizer, _serialize

__all__ = ["LeakyReLU", "ReLU", "PReLU", "ELU", "Softmax", "ThresholdedReLU"]


def _number(value, what, layer, minimum=None):
    """``value`` as a float; ValueError (as TF) for None or one below ``minimum``."""
    if value is None:
        raise ValueError(f"{layer}: {what} cannot be None, requires a float. Got {value}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{layer}: {what} must be a float, got {value!r}") from None
    if minimum is not None and v < minimum:
        raise ValueError(f"{layer}: {what} cannot be a negative value, got {value}")
    return v


class _Elementwise(Layer):
    """A layer whose output has its input's shape and mask (activations, noise)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class _AlphaActivation(_Elementwise):
    """An activation of one float argument ``alpha``."""

    def __init__(self, alpha, **kwargs):
        super().__init__(**kwargs)
        self.alpha = _number(alpha, "alpha", type(self).__name__)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class LeakyReLU(_AlphaActivation):
    """Mirrors ``tf.keras.layers.LeakyReLU(alpha=0.3)``: ``x`` for ``x > 0``, ``alpha * x``
    otherwise."""

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(alpha, **kwargs)

    def call(self, inputs):
        return _activations.leaky_relu(inputs, negative_slope=self.alpha)


class ReLU(_Elementwise):
    """Mirrors ``tf.keras.layers.ReLU(max_value=None, negative_slope=0, threshold=0)``
    (``tf.keras.activations.relu`` with ``alpha=negative_slope``)."""

    def __init__(self, max_value=None, negative_slope=0, threshold=0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = None if max_value is None else _number(max_value, "max_value", "ReLU", 0)
        self.negative_slope = _number(negative_slope, "negative_slope", "ReLU", 0)
        self.threshold = _number(threshold, "threshold", "ReLU")

    def call(self, inputs):
        return _activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                 threshold=self.threshold)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class ELU(_AlphaActivation):
    """Mirrors ``tf.keras.layers.ELU(alpha=1.0)``: ``x`` for ``x > 0``,
    ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(alpha, **kwargs)

    def call(self, inputs):
        return _activations.elu(inputs, alpha=self.alpha)


class ThresholdedReLU(_Elementwise):
    """Mirrors ``tf.keras.layers.ThresholdedReLU(theta=1.0)``: ``x`` for ``x > theta``, 0
    otherwise."""

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.theta = _number(theta, "theta", "ThresholdedReLU", 0)

    def call(self, inputs):
        return inputs * (inputs > self.theta).astype(inputs.dtype)

    def get_config(self):
        return {**super().get_config(), "theta": self.theta}


def _large_negative(dtype):
    """What a masked logit gets added: TF's ``-1e9``, or float16's lowest value (``-1e9``
    overflows it)."""
    return float(_np.finfo(_np.float16).min) if _np.dtype(dtype) == _np.float16 else -1e9


class Softmax(_Elementwise):
    """Mirrors ``tf.keras.layers.Softmax(axis=-1)``; ``axis`` may be a list of axes. With a
    ``mask`` (True: keep), masked positions get ``-1e9`` added before the softmax, as TF; the
    mask must have the inputs' rank (TF would also broadcast a lower-rank one, against the
    trailing axes)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            if not axis:
                raise ValueError("Softmax: axis must be an int or a non-empty list of ints")
            self.axis = [int(a) for a in axis]
        else:
            self.axis = int(axis)

    def call(self, inputs, mask=None):
        x = inputs
        if mask is not None:
            m = tnp.asarray(mask)
            if m.ndim != x.ndim:
                raise ValueError(f"{self.name}: the mask of shape {tuple(m.shape)} must have the "
                                 f"rank of the inputs, of shape {tuple(x.shape)}")
            try:
                tnp.broadcast_shapes(tuple(m.shape), tuple(x.shape))
            except ValueError:
                raise ValueError(f"{self.name}: a mask of shape {tuple(m.shape)} does not "
                                 f"broadcast to inputs of shape {tuple(x.shape)}") from None
            x = x + (1 - m.astype(x.dtype)) * _large_negative(x.dtype)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if len(axes) == 1:
            return _activations.softmax(x, axis=axes[0])
        # several axes: one softmax over their product, with the axes moved last and merged
        nd = x.ndim
        for a in axes:
            if not -nd <= a < nd:
                raise ValueError(f"{self.name}: axis {a} is out of range for inputs of shape "
                                 f"{tuple(x.shape)}")
        axes = [a % nd for a in axes]
        if len(set(axes)) != len(axes):
            raise ValueError(f"{self.name}: repeated axis in {self.axis}")
        last = list(range(nd - len(axes), nd))
        moved = tnp.moveaxis(x, axes, last)
        lead = tuple(moved.shape[:nd - len(axes)])
        flat = tnp.reshape(moved, lead + (-1,))
        y = tnp.reshape(_activations.softmax(flat, axis=-1), tuple(moved.shape))
        return tnp.moveaxis(y, last, axes)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class PReLU(Layer):
    """Mirrors ``tf.keras.layers.PReLU(alpha_initializer='zeros', alpha_regularizer=None,
    alpha_constraint=None, shared_axes=None)``: ``x`` for ``x >= 0``, ``alpha * x`` otherwise,
    with ``alpha`` a weight of the input's shape (less the batch axis; 1 along
    ``shared_axes``). Inputs whose non-shared axes differ from the built shape are refused
    (TF would broadcast ``alpha`` over them when it has size 1 there)."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self._ids = {"alpha_initializer": alpha_initializer,
                     "alpha_regularizer": alpha_regularizer, "alpha_constraint": alpha_constraint}
        self.alpha_initializer = _deserialize_initializer(alpha_initializer)
        self.alpha_regularizer = _get_regularizer(alpha_regularizer)
        self.alpha_constraint = _get_constraint(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]

    def build(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) < 2:
            raise ValueError(f"{self.name}: PReLU expects inputs with a batch axis and at least "
                             f"one more, got shape {shape}")
        param = list(shape[1:])
        for a in self.shared_axes or ():
            if not 1 <= a < len(shape):
                raise ValueError(f"{self.name}: shared_axes {self.shared_axes} must be between 1 "
                                 f"and {len(shape) - 1} for inputs of shape {shape}")
            param[a - 1] = 1
        if any(d is None for d in param):
            raise ValueError(f"{self.name}: PReLU needs every non-shared axis defined; got input "
                             f"shape {shape} with shared_axes={self.shared_axes}")
        self.alpha = self.add_weight("alpha", tuple(param), initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        super().build(input_shape)

    def call(self, inputs):
        a = self.alpha
        shared = set(self.shared_axes or ())
        if inputs.ndim != a.ndim + 1 or any(
                d != p for ax, (p, d) in enumerate(zip(a.shape, inputs.shape[1:]), 1)
                if ax not in shared):
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: alpha "
                             f"has shape {tuple(a.shape)} (shared_axes={self.shared_axes}) but "
                             f"the input has shape {tuple(inputs.shape)}")
        return tnp.maximum(inputs, 0) - a * tnp.maximum(-inputs, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        ids = self._ids
        return {**super().get_config(),
                "alpha_initializer": _serialize(self.alpha_initializer, ids["alpha_initializer"]),
                "alpha_regularizer": _serialize(self.alpha_regularizer, ids["alpha_regularizer"],
                                                _get_regularizer),
                "alpha_constraint": _serialize(self.alpha_constraint, ids["alpha_constraint"],
                                               _get_constraint),
                "shared_axes": self.shared_axes}


# ``activation="LeakyReLU"``: the activations (below the layers) find these classes by name
register_builtins("activation", {cls.__name__: cls for cls in
                                 (LeakyReLU, ReLU, PReLU, ELU, Softmax, ThresholdedReLU)})
