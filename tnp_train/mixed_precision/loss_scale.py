"""TF 2.4's loss scales (``tf.mixed_precision.experimental``): ``LossScale``, ``FixedLossScale``
and ``DynamicLossScale``.

A loss scale is the number the loss is multiplied by before the backward pass (and the
gradients divided by after it), so that small float16 gradients do not underflow. Calling one
gives the current scale (a float32 scalar); ``update(grads)`` takes the unscaled gradients of a
step and returns ``(update_op, should_apply_gradients)``: ``update_op`` is None (everything runs
eagerly), ``should_apply_gradients`` a bool.

They are the state ``LossScaleOptimizer`` keeps: its dynamic scale is a ``DynamicLossScale``, its
fixed one a ``FixedLossScale``, so the rules below are written once. This module is one room with
the optimizer (see ``tests/tnp_train/test_import_layers.py``).

The dynamic rule (TF 2.4's ``DynamicLossScale.update``): a step whose gradients are all finite
adds one to the count of good steps; when the count reaches ``increment_period`` the scale is
multiplied by ``multiplier`` (kept only if the product is finite in float32) and the count
restarts at 0. A step with an inf or a NaN gradient divides the scale by ``multiplier`` (never
below 1), restarts the count, and says the gradients must not be applied. The arithmetic is
float32, as TF's variables are.

Under a distribution strategy of several replicas the decision is the replicas' together (as in
TF): every replica's gradients must be finite, so every replica takes the same step. In a
replica function (``strategy.run``) the flag is all-reduced over the replicas; in cross-replica
context over the workers, each looking at its local replicas' values.
"""
from __future__ import annotations

import abc
import sys

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, is_tnp_array as _is_tnp
from tnp.extend import array_module, is_inexact

from ..autodiff import Variable
from ..utils import tree as _tree

__all__ = ["LossScale", "FixedLossScale", "DynamicLossScale"]


def all_finite(arrays):
    """Whether every floating array in ``arrays`` (backend arrays) holds only finite values: one
    ``isfinite(...).all()`` per array; device arrays are reduced on the device and read back once."""
    dev_flags = []
    xp = None
    for a in arrays:
        if not is_inexact(a.dtype):
            continue
        if isinstance(a, _np.ndarray):
            if not _np.isfinite(a).all():
                return False
        else:   # a CuPy array: keep the flag on the GPU, one synchronisation below
            if xp is None:
                xp = array_module(a)
            dev_flags.append(xp.isfinite(a).all())
    if dev_flags:
        return bool(xp.stack(dev_flags).all())
    return True


def _backend_values(grads):
    """The backend arrays of the non-None gradients (tnp arrays, NumPy arrays, numbers)."""
    return [_backend(g) if _is_tnp(g) else _np.asarray(g) for g in grads if g is not None]


def _replicas_all_finite(grads):
    """Whether the gradients of every replica are finite: this process's gradients alone outside
    a strategy of several replicas, else the flag combined over the replicas (TF 2.4 sums a 0/1
    flag over them and compares with their number)."""
    # distribute sits above this room: asked only once a strategy module is loaded
    ds = sys.modules.get("tnp_train.distribute.distribute_lib")
    if ds is None or not ds.has_strategy():
        return all_finite(_backend_values(grads))
    strategy = ds.get_strategy()
    n = strategy.num_replicas_in_sync
    ctx = ds.get_replica_context()
    if ctx is not None:             # in a replica function: this replica's gradients
        mine = all_finite(_backend_values(grads))
        if n == 1:
            return mine
        total = ctx.all_reduce("sum", tnp.asarray(_np.float32(mine)))
        return float(_backend(total)) == n
    # cross-replica context: the local replicas' values of each gradient on this worker
    local = [r for g in grads if g is not None for r in strategy.experimental_local_results(g)]
    mine = all_finite(_backend_values(local))
    ext = strategy.extended
    if ext.num_workers == 1:
        return mine
    total = ext.all_reduce_arrays("sum", [tnp.asarray(_np.float32(mine))])[0]
    return float(_backend(total)) == ext.num_workers


class LossScale(abc.ABC):
    """Mirrors ``tf.mixed_precision.experimental.LossScale`` (TF 2.4): the base class of loss
    scales (abstract: use :class:`FixedLossScale` or :class:`DynamicLossScale`, or subclass it
    with ``__call__``, ``update`` and ``get_config``).

    ``loss_scale()`` is the current scale, a float32 scalar; ``update(grads)`` returns
    ``(update_op, should_apply_gradients)`` (``update_op`` is None: eager, as TF 2.4's eager
    mode). A checkpoint saves a loss scale's variables (``tt.train.Checkpoint(loss_scale=ls)``)."""

    @abc.abstractmethod
    def __call__(self):
        """The current loss scale as a float32 scalar."""

    @abc.abstractmethod
    def update(self, grads):
        """Update the scale from ``grads`` (a nest of unscaled gradients; None entries are
        ignored); returns ``(update_op, should_apply_gradients)``."""

    @abc.abstractmethod
    def get_config(self):
        """The arguments that make this loss scale again."""

    @classmethod
    def from_config(cls, config):
        """Mirrors ``LossScale.from_config(config)``: ``cls(**config)``."""
        return cls(**config)

    def _trackable_children(self):
        return {}

    def _value(self):
        """The current scale as a Python float (for the optimizer: no array made)."""
        return float(_backend(tnp.asarray(self())))

    def _value_array(self):
        """The current scale as a 0-d float64 tnp array (the value :meth:`_value` gives, in
        tnp operations: while a compiled step is traced, read at every run)."""
        return tnp.asarray(self(), dtype=_np.float64)


class FixedLossScale(LossScale):
    """Mirrors ``tf.mixed_precision.experimental.FixedLossScale(loss_scale_value)`` (TF 2.4): a
    scale that never changes; ``update`` always says to apply the gradients (a non-finite
    gradient reaches the variables)."""

    def __init__(self, loss_scale_value):
        if isinstance(loss_scale_value, bool) or \
                not isinstance(loss_scale_value, (int, float, _np.integer, _np.floating)):
            raise ValueError(f"FixedLossScale: loss_scale_value must be a Python int or float, "
                             f"got {loss_scale_value!r}")
        if loss_scale_value < 1:
            raise ValueError(f"FixedLossScale: loss_scale_value must be at least 1, got "
                             f"{loss_scale_value!r}")
        self._loss_scale_value = float(loss_scale_value)

    @property
    def loss_scale_value(self):
        """The fixed scale (a float)."""
        return self._loss_scale_value

    def __call__(self):
        return tnp.asarray(_np.float32(self._loss_scale_value))

    def _value(self):
        return float(_np.float32(self._loss_scale_value))

    def update(self, grads):
        """Mirrors ``FixedLossScale.update(grads)``: ``(None, True)``."""
        return None, True

    def get_config(self):
        return {"loss_scale_value": self._loss_scale_value}

    def __repr__(self):
        return f"FixedLossScale({self._loss_scale_value})"


class DynamicLossScale(LossScale):
    """Mirrors ``tf.mixed_precision.experimental.DynamicLossScale(initial_loss_scale=2**15,
    increment_period=2000, multiplier=2.)`` (TF 2.4): the scale (a float32 variable) grows by
    ``multiplier`` after ``increment_period`` finite steps in a row and shrinks by it (never
    below 1) on a step with an inf or a NaN gradient, which ``update`` says to skip. The scale
    and the count of good steps are variables on the host, checkpointed as
    ``current_loss_scale`` and ``good_steps`` (TF's names)."""

    def __init__(self, initial_loss_scale=2 ** 15, increment_period=2000, multiplier=2.):
        self._initial_loss_scale = float(initial_loss_scale)
        self._increment_period = int(increment_period)
        self._multiplier = float(multiplier)
        # on the host ("cpu"): reading the scale never waits for a device
        self._current_loss_scale = Variable(_np.float32(self._initial_loss_scale),
                                            trainable=False, name="current_loss_scale",
                                            dtype="float32", device="cpu")
        self._num_good_steps = Variable(_np.int64(0), trainable=False, name="good_steps",
                                        dtype="int64", device="cpu")

    @property
    def initial_loss_scale(self):
        return self._initial_loss_scale

    @property
    def increment_period(self):
        return self._increment_period

    @property
    def multiplier(self):
        return self._multiplier

    def __call__(self):
        return self._current_loss_scale.value()

    def _value(self):
        return float(_backend(self._current_loss_scale))

    def _value_array(self):
        return tnp.asarray(self._current_loss_scale, dtype=_np.float64)

    def update(self, grads):
        """Mirrors ``DynamicLossScale.update(grads)``: ``(None, should_apply_gradients)``, the
        scale and the count updated (module docstring)."""
        finite = _replicas_all_finite(_tree.flatten(grads))
        self._update_with(finite)
        return None, finite

    def _update_with(self, finite):
        """The state machine, for a decision already taken (the optimizer's, on gradients that
        are the same on every replica)."""
        scale, count = self._current_loss_scale, self._num_good_steps
        current = _np.float32(_backend(scale))
        multiplier = _np.float32(self._multiplier)
        if finite:
            n = int(_backend(count)) + 1
            if n >= self._increment_period:
                with _np.errstate(over="ignore", invalid="ignore"):
                    grown = current * multiplier
                if _np.isfinite(grown):     # TF keeps the old scale when the product is not
                    scale.assign(grown)
                count.assign(_np.int64(0))
            else:
                count.assign(_np.int64(n))
        else:
            with _np.errstate(divide="ignore", invalid="ignore"):
                shrunk = _np.maximum(current / multiplier, _np.float32(1))
            count.assign(_np.int64(0))
            scale.assign(shrunk)

    def get_config(self):
        return {"initial_loss_scale": self._initial_loss_scale,
                "increment_period": self._increment_period, "multiplier": self._multiplier}

    def _trackable_children(self):
        return {"current_loss_scale": self._current_loss_scale,
                "good_steps": self._num_good_steps}

    def __repr__(self):
        scale = _np.float32(_backend(self._current_loss_scale))
        return (f"DynamicLossScale(current_loss_scale={scale!s}, "
                f"num_good_steps={_np.int64(_backend(self._num_good_steps))}, "
                f"initial_loss_scale={self._initial_loss_scale}, "
                f"increment_period={self._increment_period}, multiplier={self._multiplier})")


def deserialize(config, who):
    """A loss scale from ``{"class_name": "FixedLossScale" | "DynamicLossScale", "config":
    {...}}`` (how TF 2.3 and 2.4 serialized one); ValueError naming ``who`` otherwise."""
    classes = {"FixedLossScale": FixedLossScale, "DynamicLossScale": DynamicLossScale}
    cls = classes.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError(f"{who}: Unknown loss scale: {config!r} (expected a serialized "
                         f"FixedLossScale or DynamicLossScale)")
    return cls.from_config(config.get("config", {}))
