"""Weight regularizers (``tt.regularizers``), mirroring ``tf.keras.regularizers`` (TF 2.4;
``OrthogonalRegularizer`` from Keras 3).

``reg(x)`` returns a scalar tnp value computed with tnp operations, so a tape differentiates it;
a layer adds ``reg(weight)`` for each regularized weight to ``layer.losses``.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp
from tnp.extend import is_floating

from ..utils.config_object import ConfigObject
from ..utils.serialization import deserialize_keras_object, get_object, serialize_keras_object

__all__ = ["Regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer", "l1", "l2", "l1_l2",
           "orthogonal_regularizer", "get", "serialize", "deserialize"]


def _coef(who, name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{who}: {name} must be a finite non-negative number, got {value}")
    return value


def _arr(x):
    x = x if isinstance(x, tnp.ndarray) else tnp.asarray(x)
    return x if is_floating(x.dtype) else x.astype("float32")


class Regularizer(ConfigObject):
    """Base class (``tf.keras.regularizers.Regularizer``): ``__call__(x)`` returns a scalar
    penalty; ``get_config``/``from_config`` round-trip the constructor arguments."""

    def __call__(self, x):
        return tnp.asarray(0.0, dtype=_arr(x).dtype)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x^2)``; mirrors ``tf.keras.regularizers.L1L2(l1=0., l2=0.)``."""

    def __init__(self, l1=0.0, l2=0.0):  # noqa: E741 (Keras's names)
        self.l1 = _coef(type(self).__name__, "l1", l1)
        self.l2 = _coef(type(self).__name__, "l2", l2)

    def __call__(self, x):
        x = _arr(x)
        out = None
        if self.l1:
            out = self.l1 * tnp.sum(tnp.abs(x))
        if self.l2:
            term = self.l2 * tnp.sum(tnp.square(x))
            out = term if out is None else out + term
        if out is None:
            return tnp.asarray(0.0, dtype=x.dtype)
        return out

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|x|)``; mirrors ``tf.keras.regularizers.L1(l1=0.01)``."""

    def __init__(self, l1=0.01, **kwargs):  # noqa: E741
        if "l" in kwargs:  # TF 2.4 accepts the alias ``l``
            l1 = kwargs.pop("l")
        if kwargs:
            raise TypeError(f"L1: unexpected keyword arguments {sorted(kwargs)}")
        super().__init__(l1=l1, l2=0.0)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(x^2)``; mirrors ``tf.keras.regularizers.L2(l2=0.01)``."""

    def __init__(self, l2=0.01, **kwargs):
        if "l" in kwargs:
            l2 = kwargs.pop("l")
        if kwargs:
            raise TypeError(f"L2: unexpected keyword arguments {sorted(kwargs)}")
        super().__init__(l1=0.0, l2=l2)

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Penalises non-orthogonality of the rows (``mode="rows"``) or columns (``"columns"``) of
    a 2-D weight: ``factor`` times the mean absolute cosine between distinct unit-normalised
    rows/columns (each pair counted once); mirrors Keras 3
    ``regularizers.OrthogonalRegularizer(factor=0.01, mode="rows")``."""

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _coef("OrthogonalRegularizer", "factor", factor)
        if mode not in ("rows", "columns"):
            raise ValueError(f"OrthogonalRegularizer: mode must be 'rows' or 'columns', got {mode!r}")
        self.mode = mode

    def __call__(self, x):
        x = _arr(x)
        if x.ndim != 2:
            raise ValueError(f"OrthogonalRegularizer: expects a 2-D weight, got shape {x.shape}")
        if self.mode == "columns":
            x = x.T
        n = x.shape[0]
        if n < 2:
            return tnp.asarray(0.0, dtype=x.dtype)
        norm = tnp.sqrt(tnp.maximum(tnp.sum(tnp.square(x), axis=1, keepdims=True), 1e-12))
        u = x / norm
        gram = u @ u.T
        off = tnp.abs(gram) * tnp.asarray(1.0 - _np.eye(n), dtype=x.dtype)
        pairs = n * (n - 1) / 2.0
        return (self.factor * 0.5 / pairs) * tnp.sum(off)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


def l1_l2(l1=0.01, l2=0.01):  # noqa: E741
    """``L1L2(l1, l2)`` with both defaulting to 0.01 (``tf.keras.regularizers.l1_l2``)."""
    return L1L2(l1=l1, l2=l2)


l1 = L1
l2 = L2
orthogonal_regularizer = OrthogonalRegularizer

_BY_NAME = {"L1": L1, "L2": L2, "L1L2": L1L2, "OrthogonalRegularizer": OrthogonalRegularizer,
            "l1": L1, "l2": L2, "l1_l2": l1_l2, "orthogonal_regularizer": OrthogonalRegularizer}


def serialize(regularizer):
    """``{"class_name": ..., "config": ...}`` (its registered name, if it has one); mirrors
    ``tf.keras.regularizers.serialize``."""
    return serialize_keras_object(regularizer)


def deserialize(config, custom_objects=None):
    """A regularizer from a name or a ``serialize`` dict, found in ``custom_objects``, the
    registered and scoped custom objects, then the built-in regularizers; mirrors
    ``tf.keras.regularizers.deserialize``."""
    if config == "l1_l2":
        # as TF: the name means l1_l2()'s defaults (0.01, 0.01), not L1L2's (0, 0)
        return l1_l2()
    return deserialize_keras_object(config, module_objects=_BY_NAME,
                                    custom_objects=custom_objects,
                                    printable_module_name="regularizer")


def get(identifier):
    """A regularizer from a name ("l1", "l2", "l1_l2": L1L2(0.01, 0.01)), a ``serialize`` dict,
    an instance or a callable; None gives None (``tf.keras.regularizers.get``)."""
    return get_object(identifier, deserialize, "regularizer")
