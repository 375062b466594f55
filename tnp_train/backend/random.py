"""Random draws (``random_uniform``, ``random_normal``, ``truncated_normal``,
``random_bernoulli``) and variables of them, from NumPy generators (seeded draws are
reproducible, not TF's numbers)."""
from __future__ import annotations

import warnings

import numpy as _np

import tnp

from ..utils.random import make_rng, refuse_while_tracing
from ._common import _dt, symbolic_ops
from .variables import variable

__all__ = ["random_bernoulli", "random_binomial", "random_normal", "random_normal_variable",
           "random_uniform", "random_uniform_variable", "truncated_normal"]


def _rng(seed):
    refuse_while_tracing("tt.keras.backend's random functions")
    return make_rng(seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform draws in ``[minval, maxval)``."""
    a = _rng(seed).uniform(minval, maxval, size=tuple(shape))
    return tnp.asarray(a.astype(_dt(dtype)))


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws."""
    a = _rng(seed).normal(mean, stddev, size=tuple(shape))
    return tnp.asarray(a.astype(_dt(dtype)))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws, those beyond two standard deviations drawn again."""
    rng = _rng(seed)
    a = rng.standard_normal(size=tuple(shape))
    bad = _np.abs(a) > 2
    while bad.any():
        a[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = _np.abs(a) > 2
    return tnp.asarray((a * stddev + mean).astype(_dt(dtype)))


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    """1 with probability ``p``, else 0."""
    u = _rng(seed).uniform(size=tuple(shape))
    return tnp.asarray((u <= p).astype(_dt(dtype)))


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    """``random_bernoulli`` (deprecated in TF 2.4: a warning)."""
    warnings.warn("`tf.keras.backend.random_binomial` is deprecated, and will be removed in "
                  "a future version.Please use `tf.keras.backend.random_bernoulli` instead.",
                  DeprecationWarning, stacklevel=2)
    return random_bernoulli(shape, p, dtype, seed)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    """A variable of uniform draws in ``[low, high)``."""
    return variable(random_uniform(shape, low, high, dtype, seed), dtype=dtype, name=name)


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    """A variable of normal draws."""
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype=dtype, name=name)


symbolic_ops(globals())
