"""Weight initializers (``tt.initializers``), mirroring ``tf.keras.initializers`` (TF 2.4 names,
defaults and fan rules).

Randomness: ``seed=<int>`` makes every call of that initializer draw the same values (TF 2.4's
seeded initializers are stateless); ``seed=None`` draws from ``tnp_train.utils.get_rng()``, so
``tt.utils.set_random_seed`` makes a whole model's initial weights reproducible. Values are drawn
in float64 and cast to the requested dtype (float16/bfloat16 included); the default dtype is
``tt.backend.floatx()``.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp
from tnp.extend import is_floating

from ..backend.config import floatx as _floatx
from ..utils.random import make_rng
from ..utils.serialization import deserialize_keras_object, get_object, serialize_keras_object

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeUniform",
           "HeNormal", "LecunUniform", "LecunNormal", "Orthogonal", "Identity",
           "zeros", "zero", "ones", "one", "constant", "uniform", "random_uniform", "normal",
           "random_normal", "truncated_normal", "variance_scaling", "glorot_uniform",
           "glorot_normal", "he_uniform", "he_normal", "lecun_uniform", "lecun_normal",
           "orthogonal", "identity", "get", "serialize", "deserialize"]


def _dtype(dtype, who, floating=False):
    if dtype is None:
        dtype = _floatx()
    dt = _np.dtype(getattr(dtype, "name", dtype))
    if floating and not is_floating(dt):
        raise ValueError(f"{who}: expected a floating-point dtype, got {dt.name}")
    return dt


def _shape(shape, who):
    try:
        shape = (int(shape),) if _np.ndim(shape) == 0 and shape is not None else tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: expected a shape (a tuple of integers), got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{who}: negative dimension in shape {shape}")
    return shape


def _fans(shape):
    """(fan_in, fan_out) as Keras computes them: a conv kernel ``(*spatial, in, out)`` counts
    its receptive field times the channels."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class (``tf.keras.initializers.Initializer``): ``init(shape, dtype=None)`` returns a
    tnp array; ``get_config``/``from_config`` round-trip the constructor arguments."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)  # TF 1 configs carried one
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros; mirrors ``tf.keras.initializers.Zeros``."""

    def __call__(self, shape, dtype=None, **kwargs):
        return tnp.zeros(_shape(shape, "Zeros"), dtype=_dtype(dtype, "Zeros"))


class Ones(Initializer):
    """All ones; mirrors ``tf.keras.initializers.Ones``."""

    def __call__(self, shape, dtype=None, **kwargs):
        return tnp.ones(_shape(shape, "Ones"), dtype=_dtype(dtype, "Ones"))


class Constant(Initializer):
    """Every element ``value`` (a scalar, or an array broadcast to the shape); mirrors
    ``tf.keras.initializers.Constant(value=0)``."""

    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _shape(shape, "Constant")
        dt = _dtype(dtype, "Constant")
        v = _np.asarray(self.value)
        try:
            out = _np.broadcast_to(v, shape)
        except ValueError:
            raise ValueError(f"Constant: a value of shape {v.shape} cannot fill shape {shape}") from None
        return tnp.asarray(out.astype(dt))

    def get_config(self):
        v = self.value
        return {"value": v.tolist() if isinstance(v, (_np.ndarray, tnp.ndarray)) else v}


class _Random(Initializer):
    """A random initializer: ``seed`` (int or None) as documented in the module."""

    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, _np.integer))):
            raise TypeError(f"{type(self).__name__}: seed must be an integer or None, got {seed!r}")
        self.seed = None if seed is None else int(seed)

    def _rng(self):
        return _np.random.default_rng(self.seed) if self.seed is not None else make_rng(None)

    def __call__(self, shape, dtype=None, **kwargs):
        who = type(self).__name__
        shape = _shape(shape, who)
        dt = _dtype(dtype, who, floating=True)
        return tnp.asarray(self._draw(self._rng(), shape).astype(dt))

    def _draw(self, rng, shape):
        raise NotImplementedError

    def get_config(self):
        return {"seed": self.seed}


def _truncated(rng, shape, mean, stddev):
    """Normal draws, redrawing those farther than two standard deviations from the mean."""
    out = rng.standard_normal(shape)
    bad = _np.abs(out) > 2.0
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = _np.abs(out) > 2.0
    return mean + stddev * out


class RandomNormal(_Random):
    """N(mean, stddev^2); mirrors ``tf.keras.initializers.RandomNormal(mean=0.0, stddev=0.05,
    seed=None)``."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def _draw(self, rng, shape):
        return rng.normal(self.mean, self.stddev, shape)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(_Random):
    """U[minval, maxval); mirrors ``tf.keras.initializers.RandomUniform(minval=-0.05,
    maxval=0.05, seed=None)``."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None, **kwargs):
        dt = _dtype(dtype, "RandomUniform")
        if dt.kind in "iu":  # TF allows integer uniform draws
            shape = _shape(shape, "RandomUniform")
            return tnp.asarray(self._rng().integers(self.minval, self.maxval, shape).astype(dt))
        return super().__call__(shape, dtype, **kwargs)

    def _draw(self, rng, shape):
        return rng.uniform(self.minval, self.maxval, shape)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(_Random):
    """N(mean, stddev^2) with values beyond two standard deviations redrawn; mirrors
    ``tf.keras.initializers.TruncatedNormal(mean=0.0, stddev=0.05, seed=None)``."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def _draw(self, rng, shape):
        return _truncated(rng, shape, self.mean, self.stddev)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


# stddev of a standard normal truncated to [-2, 2]
_TRUNC_STD = 0.87962566103423978
_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "truncated_normal", "untruncated_normal", "uniform")


class VarianceScaling(_Random):
    """Draws with variance ``scale / n`` (``n`` the fan in, out, or their mean); mirrors
    ``tf.keras.initializers.VarianceScaling(scale=1.0, mode="fan_in",
    distribution="truncated_normal", seed=None)`` ("normal" means "truncated_normal", as in
    TF 2.4)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        super().__init__(seed)
        if not scale > 0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale!r}")
        if mode not in _MODES:
            raise ValueError(f"VarianceScaling: mode must be one of {_MODES}, got {mode!r}")
        distribution = str(distribution).lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"VarianceScaling: distribution must be one of {_DISTRIBUTIONS}, "
                             f"got {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def _draw(self, rng, shape):
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        var = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            return _truncated(rng, shape, 0.0, math.sqrt(var) / _TRUNC_STD)
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, math.sqrt(var), shape)
        limit = math.sqrt(3.0 * var)
        return rng.uniform(-limit, limit, shape)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _Preset(VarianceScaling):
    _args = (1.0, "fan_in", "uniform")

    def __init__(self, seed=None):
        super().__init__(*self._args, seed=seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """U(-l, l), ``l = sqrt(6 / (fan_in + fan_out))``; mirrors
    ``tf.keras.initializers.GlorotUniform(seed=None)``."""
    _args = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Truncated normal, stddev ``sqrt(2 / (fan_in + fan_out))``; mirrors
    ``tf.keras.initializers.GlorotNormal(seed=None)``."""
    _args = (1.0, "fan_avg", "truncated_normal")


class HeUniform(_Preset):
    """U(-l, l), ``l = sqrt(6 / fan_in)``; mirrors ``tf.keras.initializers.HeUniform``."""
    _args = (2.0, "fan_in", "uniform")


class HeNormal(_Preset):
    """Truncated normal, stddev ``sqrt(2 / fan_in)``; mirrors ``tf.keras.initializers.HeNormal``."""
    _args = (2.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """U(-l, l), ``l = sqrt(3 / fan_in)``; mirrors ``tf.keras.initializers.LecunUniform``."""
    _args = (1.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal, stddev ``sqrt(1 / fan_in)``; mirrors ``tf.keras.initializers.LecunNormal``."""
    _args = (1.0, "fan_in", "truncated_normal")


class Orthogonal(_Random):
    """A (semi-)orthogonal matrix times ``gain``, for the kernel flattened to
    ``(prod(shape[:-1]), shape[-1])``; mirrors ``tf.keras.initializers.Orthogonal(gain=1.0,
    seed=None)``."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def _draw(self, rng, shape):
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: needs a shape of at least two dimensions, got {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = rng.standard_normal((max(rows, cols), min(rows, cols)))
        q, r = _np.linalg.qr(a)
        q = q * _np.where(_np.diag(r) < 0, -1.0, 1.0)  # unique: a uniformly distributed Q
        if rows < cols:
            q = q.T
        return self.gain * q.reshape(shape)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity (rectangular allowed); mirrors
    ``tf.keras.initializers.Identity(gain=1.0)``."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _shape(shape, "Identity")
        if len(shape) != 2:
            raise ValueError(f"Identity: needs a 2-D shape, got {shape}")
        return tnp.asarray((self.gain * _np.eye(*shape)).astype(_dtype(dtype, "Identity", True)))

    def get_config(self):
        return {"gain": self.gain}


# TF 2.4's lower-case aliases are the classes themselves
zeros = zero = Zeros
ones = one = Ones
constant = Constant
uniform = random_uniform = RandomUniform
normal = random_normal = RandomNormal
truncated_normal = TruncatedNormal
variance_scaling = VarianceScaling
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal
he_uniform = HeUniform
he_normal = HeNormal
lecun_uniform = LecunUniform
lecun_normal = LecunNormal
orthogonal = Orthogonal
identity = Identity

_CLASSES = (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
            GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal,
            Orthogonal, Identity)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "uniform": RandomUniform, "random_uniform": RandomUniform, "normal": RandomNormal,
    "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal, "orthogonal": Orthogonal,
    "identity": Identity,
})


def serialize(initializer):
    """``{"class_name": ..., "config": ...}`` (its registered name, if it has one); mirrors
    ``tf.keras.initializers.serialize``."""
    return serialize_keras_object(initializer)


def deserialize(config, custom_objects=None):
    """An initializer from a name or a ``serialize`` dict, found in ``custom_objects``, the
    registered and scoped custom objects, then the built-in initializers; mirrors
    ``tf.keras.initializers.deserialize``."""
    return deserialize_keras_object(config, module_objects=_BY_NAME,
                                    custom_objects=custom_objects,
                                    printable_module_name="initializer")


def get(identifier):
    """An initializer from its name, a ``serialize`` dict, an instance, a class (instantiated)
    or a callable; None gives None (as ``tf.keras.initializers.get``)."""
    if isinstance(identifier, type):
        identifier = identifier()
    return get_object(identifier, deserialize, "initializer")
