"""Activations (``tt.activations``), with Keras's names; each is tnp code, so the tape
differentiates it."""
from __future__ import annotations

import tnp

__all__ = ["relu", "linear", "sigmoid", "tanh", "softmax", "get", "serialize"]


def relu(x):
    """max(x, 0); mirrors ``tf.keras.activations.relu`` (default arguments)."""
    return tnp.maximum(x, 0)


def linear(x):
    """The identity."""
    return x


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return 1 / (1 + tnp.exp(-x))


def tanh(x):
    return tnp.tanh(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``, shifted by the maximum for stability."""
    from ..autodiff import stop_gradient

    e = tnp.exp(x - tnp.max(stop_gradient(x), axis=axis, keepdims=True))
    return e / tnp.sum(e, axis=axis, keepdims=True)


_BY_NAME = {"relu": relu, "linear": linear, "sigmoid": sigmoid, "tanh": tanh, "softmax": softmax}


def get(identifier):
    """An activation from its name, a callable, or None (linear); as ``tf.keras.activations.get``."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(f"Unknown activation function: {identifier!r}; known: {sorted(_BY_NAME)}")


def serialize(fn):
    for name, f in _BY_NAME.items():
        if f is fn:
            return name
    return getattr(fn, "__name__", repr(fn))
