"""Weight constraints (``tt.constraints``), mirroring ``tf.keras.constraints`` of TF 2.4.

A constraint maps a weight to its projection, ``c(w)``, computed with tnp operations in the
weight's dtype. A layer's ``kernel_constraint`` (and the like) is handed to its weight: the
variable applies it after every update, so after each optimizer step, as Keras's optimizers do
(tnp_train also applies it after ``assign``; TF leaves that to the optimizer).
"""
from __future__ import annotations

import tnp

from ..backend.config import epsilon as _epsilon
from ..utils.config_object import ConfigObject
from ..utils.serialization import deserialize_keras_object, get_object, serialize_keras_object

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "RadialConstraint",
           "max_norm", "min_max_norm", "non_neg", "unit_norm", "radial_constraint",
           "get", "serialize", "deserialize"]


def _w(w):
    return w if isinstance(w, tnp.ndarray) else tnp.asarray(w)


def _axis(axis):
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _norms(w, axis):
    return tnp.sqrt(tnp.sum(tnp.square(w), axis=_axis(axis), keepdims=True))


class Constraint(ConfigObject):
    """Base class (``tf.keras.constraints.Constraint``): ``__call__(w)`` returns ``w``."""

    def __call__(self, w):
        return w


class MaxNorm(Constraint):
    """Rescales the weights whose L2 norm along ``axis`` exceeds ``max_value``; mirrors
    ``tf.keras.constraints.MaxNorm(max_value=2, axis=0)``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        w = _w(w)
        norms = _norms(w, self.axis)
        desired = tnp.clip(norms, 0, self.max_value)
        return w * (desired / (_epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zeroes the negative weights; mirrors ``tf.keras.constraints.NonNeg()``."""

    def __call__(self, w):
        w = _w(w)
        return w * (w >= 0).astype(w.dtype)


class UnitNorm(Constraint):
    """Divides by the L2 norm along ``axis`` (plus epsilon); mirrors
    ``tf.keras.constraints.UnitNorm(axis=0)``."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = _w(w)
        return w / (_epsilon() + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves the L2 norm along ``axis`` towards ``[min_value, max_value]`` by ``rate``;
    mirrors ``tf.keras.constraints.MinMaxNorm(min_value=0.0, max_value=1.0, rate=1.0,
    axis=0)``."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        w = _w(w)
        norms = _norms(w, self.axis)
        desired = (self.rate * tnp.clip(norms, self.min_value, self.max_value)
                   + (1 - self.rate) * norms)
        return w * (desired / (_epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class RadialConstraint(Constraint):
    """Makes each ``(rows, cols)`` kernel of a ``(rows, cols, in, out)`` weight constant on
    square rings; mirrors ``tf.keras.constraints.RadialConstraint()``, including what its code
    (not its docstring) does: the rings take the diagonal values ``w[s-1, s-1]`` (the centre),
    then ``w[s+i, s+i]`` outwards, ``s = rows // 2`` (an even size starts from a 2x2 centre and
    ``i = 1``). The kernels must be square, as in TF."""

    def __call__(self, w):
        w = _w(w)
        if w.ndim != 4:
            raise ValueError(f"RadialConstraint: the weight tensor must be of rank 4, but is of "
                             f"shape: {tuple(w.shape)}")
        size = w.shape[0]
        if w.shape[1] != size:
            # TF builds (rows, rows) kernels and fails to reshape them back
            raise ValueError(f"RadialConstraint: kernels must be square, got a weight of shape "
                             f"{tuple(w.shape)}")
        start = size // 2
        if size % 2:
            if start == 0:
                # TF slices w[-1:0] (empty) and then cannot reshape it back
                raise ValueError(f"RadialConstraint: a kernel of size 1 has no ring to keep "
                                 f"(weight of shape {tuple(w.shape)}); TF fails on it too")
            centre, first = 1, 0
        else:
            centre, first = 2, 1
        # ring r (0 = the centre block) of every kernel takes one value, per (in, out) pair
        rings = [w[start - 1, start - 1]] + [w[start + i, start + i]
                                             for i in range(first, start)]
        idx = tnp.arange(size)
        # distance of a row/column from the centre block, in rings
        lo, hi = (size - centre) // 2, (size - centre) // 2 + centre - 1
        d = tnp.maximum(tnp.maximum(lo - idx, idx - hi), 0)
        ring = tnp.maximum(d[:, None], d[None, :])              # (size, size)
        table = tnp.stack(rings)                                # (rings, in, out)
        return table[ring]                                      # (size, size, in, out)

    def get_config(self):
        return {}


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm
radial_constraint = RadialConstraint

# names deserialize accepts (TF 2.4 looks them up in its module, legacy aliases included)
_BY_NAME = {"Constraint": Constraint, "MaxNorm": MaxNorm, "MinMaxNorm": MinMaxNorm,
            "NonNeg": NonNeg, "UnitNorm": UnitNorm, "RadialConstraint": RadialConstraint,
            "max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg,
            "unit_norm": UnitNorm, "radial_constraint": RadialConstraint,
            "maxnorm": MaxNorm, "nonneg": NonNeg, "unitnorm": UnitNorm}


def serialize(constraint):
    """``{"class_name": ..., "config": ...}`` (its registered name, if it has one); mirrors
    ``tf.keras.constraints.serialize``."""
    return serialize_keras_object(constraint)


def deserialize(config, custom_objects=None):
    """A constraint from a ``serialize`` dict or a name, found in ``custom_objects``, the
    registered and scoped custom objects, then the built-in constraints; mirrors
    ``tf.keras.constraints.deserialize``."""
    return deserialize_keras_object(config, module_objects=_BY_NAME,
                                    custom_objects=custom_objects,
                                    printable_module_name="constraint")


def get(identifier):
    """None, a name (an instance with the defaults), a ``serialize`` dict or a callable;
    mirrors ``tf.keras.constraints.get``."""
    if isinstance(identifier, str):
        identifier = {"class_name": identifier, "config": {}}
    return get_object(identifier, deserialize, "constraint")
