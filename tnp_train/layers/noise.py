"""Noise layers with TF 2.4 ``tf.keras.layers`` signatures: ``GaussianNoise``,
``GaussianDropout``, ``AlphaDropout``.

Active only when called with ``training=True`` (directly, or inherited from the enclosing call,
as ``fit`` does); the identity otherwise, as TF's ``K.in_train_phase``. The noise is drawn on
the host from :func:`tnp_train.utils.random.get_rng` (so ``tt.utils.set_random_seed`` makes it
reproducible), or from a generator of the layer's own ``seed``, and is a constant to the tape;
under a strategy each replica draws its rows of the global batch's noise.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp

from ..utils.random import keep_mask, make_rng, normal
from .advanced_activations import _Elementwise as _Noise

__all__ = ["GaussianNoise", "GaussianDropout", "AlphaDropout"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _rate(rate, layer):
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise ValueError(f"{layer}: rate must be a float in [0, 1], got {rate!r}") from None
    if not 0 <= r <= 1:
        raise ValueError(f"{layer}: invalid value received for argument `rate`: expected a float "
                         f"value between 0 and 1, got rate={rate}")
    return r


def _normal(shape, like):
    """Standard normal draws of ``shape`` (under a strategy, this replica's rows of the global
    batch's) as a constant on ``like``'s device and dtype."""
    wide = _np.float64 if like.dtype == _np.float64 else _np.float32
    return tnp.asarray(normal(shape, dtype=wide), dtype=like.dtype, device=like.device)


class GaussianNoise(_Noise):
    """Mirrors ``tf.keras.layers.GaussianNoise(stddev)``: adds ``N(0, stddev^2)`` noise in
    training."""

    def __init__(self, stddev, **kwargs):
        super().__init__(**kwargs)
        try:
            self.stddev = float(stddev)
        except (TypeError, ValueError):
            raise ValueError(f"GaussianNoise: stddev must be a float, got {stddev!r}") from None
        if self.stddev < 0 or not math.isfinite(self.stddev):
            raise ValueError(f"GaussianNoise: stddev must be a finite non-negative float, got "
                             f"{stddev}")

    def call(self, inputs, training=None):
        if not training:
            return inputs
        return inputs + _normal(inputs.shape, inputs) * self.stddev

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev}


class GaussianDropout(_Noise):
    """Mirrors ``tf.keras.layers.GaussianDropout(rate)``: multiplies by ``N(1, rate / (1 -
    rate))`` noise in training; the identity when ``rate`` is 0 or 1 (as TF)."""

    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = _rate(rate, "GaussianDropout")

    def call(self, inputs, training=None):
        if not training or not 0 < self.rate < 1:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return inputs * (_normal(inputs.shape, inputs) * stddev + 1)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate}


class AlphaDropout(_Noise):
    """Mirrors ``tf.keras.layers.AlphaDropout(rate, noise_shape=None, seed=None)``: in
    training, dropped inputs are set to SELU's negative saturation ``-alpha * scale`` and the
    result is scaled and shifted so the mean and variance are kept; the identity when ``rate``
    is 0 or 1 (as TF). ``None`` entries of ``noise_shape`` take the input's size."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _rate(rate, "AlphaDropout")
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self._rng = make_rng(seed) if seed is not None else None

    def call(self, inputs, training=None):
        if not training or not 0 < self.rate < 1:
            return inputs
        shape = tuple(inputs.shape)
        if self.noise_shape is not None:
            if len(self.noise_shape) != len(shape):
                raise ValueError(f"{self.name}: noise_shape {self.noise_shape} does not have the "
                                 f"rank of the inputs, of shape {shape}")
            shape = tuple(s if n is None else int(n) for s, n in zip(shape, self.noise_shape))
        per_sample = self.noise_shape is None or self.noise_shape[0] is None or \
            int(self.noise_shape[0]) != 1
        keep = tnp.asarray(keep_mask(shape, self.rate, self._rng, per_sample),
                           device=inputs.device)
        kept = keep.astype(inputs.dtype)
        rate = self.rate
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * rate
        x = inputs * kept + alpha_p * (1 - kept)
        return a * x + b

    def get_config(self):
        return {**super().get_config(), "rate": self.rate,
                "noise_shape": None if self.noise_shape is None else list(self.noise_shape),
                "seed": self.seed}
