"""``to_categorical`` and ``normalize`` (``tf.keras.utils``)."""
from __future__ import annotations

import numpy as _np

import tnp

__all__ = ["to_categorical", "normalize"]


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for integer labels ``y``; mirrors ``tf.keras.utils.to_categorical``."""
    y = _np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical: labels must be non-negative, got {y.min()}")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    if y.size and y.max() >= num_classes:
        raise ValueError(f"to_categorical: label {y.max()} out of range for num_classes={num_classes}")
    out = _np.zeros((y.size, num_classes), dtype=dtype)
    out[_np.arange(y.size), y] = 1
    return tnp.asarray(out.reshape(shape + (num_classes,)))


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (zero norms left as they are)."""
    x = tnp.asarray(x)
    n = tnp.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    return x / tnp.where(n == 0, 1, n)
