"""Weight initializers (``tt.initializers``) with Keras's names and defaults. Random ones draw
from a NumPy ``Generator`` (``seed=`` makes them reproducible)."""
from __future__ import annotations

import math

import numpy as _np

import tnp

__all__ = ["Initializer", "Zeros", "Ones", "GlorotUniform", "get"]


class Initializer:
    """Base class: ``init(shape, dtype)`` returns a tnp array."""

    def __call__(self, shape, dtype="float32"):
        raise NotImplementedError

    def get_config(self):
        return {}


class Zeros(Initializer):
    def __call__(self, shape, dtype="float32"):
        return tnp.zeros(shape, dtype=dtype)


class Ones(Initializer):
    def __call__(self, shape, dtype="float32"):
        return tnp.ones(shape, dtype=dtype)


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class GlorotUniform(Initializer):
    """U(-l, l) with l = sqrt(6 / (fan_in + fan_out)); mirrors ``tf.keras.initializers.GlorotUniform``."""

    def __init__(self, seed=None):
        self.seed = seed
        self._rng = _np.random.default_rng(seed)

    def __call__(self, shape, dtype="float32"):
        fan_in, fan_out = _fans(tuple(shape))
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return tnp.asarray(self._rng.uniform(-limit, limit, shape).astype(dtype))

    def get_config(self):
        return {"seed": self.seed}


_BY_NAME = {"zeros": Zeros, "ones": Ones, "glorot_uniform": GlorotUniform}


def get(identifier):
    """An initializer from its name, an instance, or a callable; as ``tf.keras.initializers.get``."""
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown initializer: {identifier!r}; known: {sorted(_BY_NAME)}") from None
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
