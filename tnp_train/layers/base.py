"""``Layer``: the Keras layer contract (TF 2.4 signatures; Keras 3 as a guide for internals).

``__init__`` stores configuration, ``build(input_shape)`` creates weights with ``add_weight``,
``call(inputs, training=None)`` computes; ``__call__`` builds once, on the first input. Weights
are ``tt.Variable``s; layers assigned as attributes are tracked, so a layer's ``weights`` are its
own followed by its sub-layers', in creation order (Keras's order).
"""
from __future__ import annotations

import inspect
import itertools

import numpy as _np

import tnp

from .. import initializers as _initializers
from ..autodiff import Variable

__all__ = ["Layer"]

_uid = itertools.count()


def _snake(name):
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(c.lower())
    return "".join(out)


class Layer:
    """Mirrors ``tf.keras.layers.Layer(trainable=True, name=None, dtype=None)``."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        unknown = set(kwargs) - {"input_shape", "batch_input_shape", "input_dim"}
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(unknown)}")
        self._own_weights = []
        self._sublayers = []
        self.trainable = trainable
        self.name = name or f"{_snake(type(self).__name__)}_{next(_uid)}"
        self._dtype = _np.dtype(dtype or "float32").name
        self.built = False
        shape = kwargs.get("input_shape")
        if shape is None and kwargs.get("input_dim") is not None:
            shape = (kwargs["input_dim"],)
        self._input_shape_arg = tuple(shape) if shape is not None else None
        self._call_takes_training = "training" in inspect.signature(self.call).parameters

    def __setattr__(self, name, value):
        if isinstance(value, Layer) and name != "_parent" and "_sublayers" in self.__dict__:
            if value not in self._sublayers:
                self._sublayers.append(value)
        object.__setattr__(self, name, value)

    @property
    def dtype(self):
        """The dtype of the layer's weights and computations."""
        return self._dtype

    # ------------------------------------------------------------------ the contract
    def build(self, input_shape):
        """Create the weights for inputs of ``input_shape`` (override; call ``super().build``)."""
        self.built = True

    def call(self, inputs, training=None):
        """The computation (override)."""
        return inputs

    def __call__(self, inputs, *args, training=None, **kwargs):
        if not self.built:
            self._maybe_build(tuple(_np.shape(inputs)))
        if self._call_takes_training:
            kwargs["training"] = training
        return self.call(inputs, *args, **kwargs)

    def _maybe_build(self, input_shape):
        if not self.built:
            self.build(input_shape)
            self.built = True

    def add_weight(self, name=None, shape=(), dtype=None, initializer=None, trainable=True,
                   regularizer=None, constraint=None, aggregation="none", synchronization="auto"):
        """A new ``tt.Variable`` owned by this layer; mirrors ``Layer.add_weight``."""
        dtype = _np.dtype(dtype or self._dtype)
        init = _initializers.get(initializer if initializer is not None else
                                 ("glorot_uniform" if dtype.kind == "f" else "zeros"))
        value = init(tuple(shape), dtype=dtype.name)
        v = Variable(value, trainable=trainable, name=f"{self.name}/{name or 'weight'}", dtype=dtype,
                     aggregation=aggregation, synchronization=synchronization, constraint=constraint)
        self._own_weights.append(v)
        return v

    # ------------------------------------------------------------------ weights
    @property
    def weights(self):
        """All weights: this layer's, then its sub-layers', in creation order."""
        out = list(self._own_weights)
        for layer in self._sublayers:
            out.extend(w for w in layer.weights if all(w is not o for o in out))
        return out

    variables = weights

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        out = [w for w in self._own_weights if w.trainable]
        for layer in self._sublayers:
            out.extend(w for w in layer.trainable_weights if all(w is not o for o in out))
        return out

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self):
        train = self.trainable_weights
        return [w for w in self.weights if all(w is not t for t in train)]

    non_trainable_variables = non_trainable_weights

    def get_weights(self):
        """The weights' values as NumPy arrays, in ``weights`` order."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        """Assign values (NumPy or tnp arrays, in ``weights`` order); shapes must match."""
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"{self.name}.set_weights: expected {len(mine)} arrays, got {len(weights)}")
        for w, value in zip(mine, weights):
            if tuple(_np.shape(value)) != tuple(w.shape):
                raise ValueError(f"{self.name}.set_weights: weight {w.name} has shape {w.shape}, "
                                 f"the value has shape {_np.shape(value)}")
        for w, value in zip(mine, weights):
            w.assign(tnp.asarray(value, dtype=w.dtype))

    # ------------------------------------------------------------------ config
    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"
