"""Learning-rate schedules (``tt.optimizers.schedules``), as ``tf.keras.optimizers.schedules``.

A schedule is called with the optimizer's step (its ``iterations`` before the update: 0 for the
first update) and returns the learning rate as a 0-d float32 tnp array (Keras computes in
float32 too); the formulas are evaluated in float64 and rounded once at the end.

An optimizer asks the built-in schedules for the rate as a Python float computed from its
host-side step count (:meth:`LearningRateSchedule._host_rate`): no array is made on, or read
back from, a device per step. A schedule of the user's is called and its value read.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, is_tnp_array as _is_tnp

from ..utils.config_object import ConfigObject
from ..utils.serialization import deserialize_keras_object, serialize_keras_object

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "PolynomialDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]


def _step(step):
    """The step as a Python float (accepts ints, NumPy/tnp scalars and 0-d arrays, Variables)."""
    if isinstance(step, (int, float)):
        return float(step)
    a = _np.asarray(_backend(step) if _is_tnp(step) else step)
    if a.ndim != 0:
        raise ValueError(f"learning-rate schedule: the step must be a scalar, got shape {a.shape}")
    return float(a)


def _out(x):
    return tnp.asarray(_np.float32(x))


class LearningRateSchedule(ConfigObject):
    """Mirrors ``tf.keras.optimizers.schedules.LearningRateSchedule``: subclasses implement
    ``__call__(step)`` and ``get_config()``."""

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step)")

    def _host_rate(self, step):
        """The rate at ``step`` (a Python int) as a Python float: the value ``__call__`` gives,
        computed on the host by the built-in formulas (unless a subclass overrides
        ``__call__``), else read back from what ``__call__`` returns."""
        if type(self).__call__ is _Formula.__call__:
            return float(_np.float32(self._rate(float(step))))
        r = self(step)
        return float(_np.asarray(_backend(r) if _is_tnp(r) else r))

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config()")


class _Formula(LearningRateSchedule):
    """A schedule given by ``_rate(step)``: a float64 formula of the step as a float."""

    def __call__(self, step):
        return _out(self._rate(_step(step)))

    def _rate(self, s):
        raise NotImplementedError(f"{type(self).__name__} must implement _rate(step)")


def _positive(cls, **kw):
    for k, v in kw.items():
        if not isinstance(v, (int, float, _np.integer, _np.floating)) or isinstance(v, bool):
            raise TypeError(f"{cls}: {k} must be a number, got {type(v).__name__}")
        if not v > 0:
            raise ValueError(f"{cls}: {k} must be > 0, got {v}")


class _RateDecay(_Formula):
    """The schedules of ``(initial_learning_rate, decay_steps, decay_rate, staircase=False,
    name=None)``: a formula ``_decayed(p)`` of ``p = step / decay_steps`` (floored when
    ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name=None):
        _positive(type(self).__name__, decay_steps=decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def _rate(self, s):
        p = s / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return self._decayed(p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_RateDecay):
    """Mirrors ``ExponentialDecay(initial_learning_rate, decay_steps, decay_rate,
    staircase=False, name=None)``: ``lr0 * decay_rate ** (step / decay_steps)`` (the exponent
    floored when ``staircase``)."""

    def _decayed(self, p):
        return float(self.initial_learning_rate) * float(self.decay_rate) ** p


class PiecewiseConstantDecay(_Formula):
    """Mirrors ``PiecewiseConstantDecay(boundaries, values, name=None)``: ``values[0]`` while
    ``step <= boundaries[0]``, ``values[i]`` while ``boundaries[i-1] < step <= boundaries[i]``,
    ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, name=None):
        boundaries, values = list(boundaries), list(values)
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: the length of values ({len(values)}) must "
                             f"be one more than the length of boundaries ({len(boundaries)})")
        if any(b1 > b2 for b1, b2 in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must be increasing, got {boundaries}")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def _rate(self, s):
        for b, v in zip(self.boundaries, self.values):
            if s <= b:
                return v
        return self.values[-1]

    def get_config(self):
        return {"boundaries": list(self.boundaries), "values": list(self.values), "name": self.name}


class InverseTimeDecay(_RateDecay):
    """Mirrors ``InverseTimeDecay(initial_learning_rate, decay_steps, decay_rate,
    staircase=False, name=None)``: ``lr0 / (1 + decay_rate * step / decay_steps)`` (the ratio
    floored when ``staircase``)."""

    def _decayed(self, p):
        return float(self.initial_learning_rate) / (1.0 + float(self.decay_rate) * p)


class PolynomialDecay(_Formula):
    """Mirrors ``PolynomialDecay(initial_learning_rate, decay_steps, end_learning_rate=0.0001,
    power=1.0, cycle=False, name=None)``: ``(lr0 - end) * (1 - s / D) ** power + end`` with
    ``s = min(step, decay_steps)``, ``D = decay_steps``; with ``cycle``, ``s = step`` and
    ``D = decay_steps * ceil(step / decay_steps)`` (``D = decay_steps`` at step 0)."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name=None):
        _positive("PolynomialDecay", decay_steps=decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def _rate(self, s):
        d = float(self.decay_steps)
        if self.cycle:
            d = d * (1.0 if s == 0 else math.ceil(s / d))
        else:
            s = min(s, d)
        lr0, end = float(self.initial_learning_rate), float(self.end_learning_rate)
        return (lr0 - end) * (1.0 - s / d) ** float(self.power) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power,
                "cycle": self.cycle, "name": self.name}


class CosineDecay(_Formula):
    """Mirrors ``CosineDecay(initial_learning_rate, decay_steps, alpha=0.0, name=None)`` (TF 2.4)
    with Keras 3's optional linear warmup (``warmup_target=None, warmup_steps=0``).

    Without warmup: ``lr0 * ((1 - alpha) * 0.5 * (1 + cos(pi * s / D)) + alpha)``,
    ``s = min(step, D)``. With ``warmup_target``: for ``step < warmup_steps`` the rate goes
    linearly from ``lr0`` to ``warmup_target``, then decays from ``warmup_target`` as above
    over ``D = decay_steps`` steps (``s = min(step, D + warmup) - warmup``)."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None,
                 warmup_target=None, warmup_steps=0):
        _positive("CosineDecay", decay_steps=decay_steps)
        if warmup_steps < 0:
            raise ValueError(f"CosineDecay: warmup_steps must be >= 0, got {warmup_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, s, lr):
        cosine = 0.5 * (1.0 + math.cos(math.pi * s / float(self.decay_steps)))
        return lr * ((1.0 - self.alpha) * cosine + self.alpha)

    def _rate(self, s):
        lr0, d = float(self.initial_learning_rate), float(self.decay_steps)
        if self.warmup_target is None:
            return self._decay(min(s, d), lr0)
        target, warm = float(self.warmup_target), float(self.warmup_steps)
        s = min(s, d + warm)
        if s < warm:
            return (target - lr0) * (s / warm) + lr0
        return self._decay(s - warm, target)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(_Formula):
    """Mirrors ``CosineDecayRestarts(initial_learning_rate, first_decay_steps, t_mul=2.0,
    m_mul=1.0, alpha=0.0, name=None)`` (SGDR): period ``i`` lasts ``first_decay_steps *
    t_mul**i`` steps and starts at ``lr0 * m_mul**i``; within a period the rate follows
    ``(1 - alpha) * 0.5 * (1 + cos(pi * f)) + alpha`` of its start, ``f`` the fraction done."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                 name=None):
        _positive("CosineDecayRestarts", first_decay_steps=first_decay_steps, t_mul=t_mul)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def _rate(self, s):
        f = s / float(self.first_decay_steps)
        t_mul = float(self._t_mul)
        if t_mul == 1.0:
            i = math.floor(f)
            f -= i
        else:
            def start(k):  # where period k starts, in first periods: sum of t_mul**j, j < k
                return (1.0 - t_mul ** k) / (1.0 - t_mul)

            i = math.floor(math.log(1.0 - f * (1.0 - t_mul)) / math.log(t_mul))
            # the logarithm can land a hair off an integer at a period boundary: settle it
            while start(i + 1) <= f:
                i += 1
            while i > 0 and start(i) > f:
                i -= 1
            f = (f - start(i)) / t_mul ** i
        cosine = 0.5 * float(self._m_mul) ** i * (1.0 + math.cos(math.pi * f))
        return float(self.initial_learning_rate) * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_BY_NAME = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay, InverseTimeDecay,
                                     PolynomialDecay, CosineDecay, CosineDecayRestarts)}


def serialize(schedule):
    """``{"class_name": ..., "config": ...}`` of a schedule (its registered name, if it has
    one); mirrors ``tf.keras.optimizers.schedules.serialize``."""
    if not isinstance(schedule, LearningRateSchedule):
        raise TypeError(f"schedules.serialize: expected a LearningRateSchedule, got "
                        f"{type(schedule).__name__}")
    return serialize_keras_object(schedule)


def deserialize(config, custom_objects=None):
    """The schedule described by ``serialize``'s dict, found in ``custom_objects``, the
    registered and scoped custom objects, then the built-in schedules; mirrors
    ``tf.keras.optimizers.schedules.deserialize`` ("Unknown decay: <name>")."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"schedules.deserialize: expected {{'class_name', 'config'}}, got {config!r}")
    return deserialize_keras_object(config, module_objects=_BY_NAME,
                                    custom_objects=custom_objects, printable_module_name="decay")
