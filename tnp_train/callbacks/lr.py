"""Learning-rate callbacks: ``ReduceLROnPlateau`` and ``LearningRateScheduler`` (TF 2.4's
``tf.keras.callbacks``). Both read and set ``model.optimizer.learning_rate`` (a float, or a
Variable that is assigned) and add the rate in use to the epoch logs as ``lr``."""
from __future__ import annotations

import inspect
import math
import numbers

import numpy as np

from ._util import echo, get_lr, missing_monitor, resolve_mode, set_lr, to_float
from .base import Callback

__all__ = ["ReduceLROnPlateau", "LearningRateScheduler"]


class ReduceLROnPlateau(Callback):
    """Mirrors ``tf.keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.1,
    patience=10, verbose=0, mode="auto", min_delta=1e-4, cooldown=0, min_lr=0)``.

    At each epoch's end: an epoch whose monitored value beats the best so far by more than
    ``min_delta`` resets the count; otherwise, outside a cooldown, the count grows, and when it
    reaches ``patience`` the rate becomes ``max(lr * factor, min_lr)`` (unless it is already at
    ``min_lr``) and the count restarts. ``cooldown`` epochs of cooldown follow, counted down
    before each epoch is considered (Keras's rule), so the ``cooldown - 1`` epochs after a
    reduction are not counted (``cooldown=1`` changes nothing).
    ``factor`` must be below 1 (ValueError). The rate in use is added to the logs as ``lr``.
    A monitor missing from the logs only warns.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:   # the old name of min_delta, still accepted by TF 2.4
            min_delta = kwargs.pop("epsilon")
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword arguments {sorted(kwargs)}")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0 "
                             f"(got {factor})")
        self.monitor = monitor
        self.factor = factor
        self.patience = patience
        self.verbose = verbose
        self.min_delta = min_delta
        self.cooldown = cooldown
        self.min_lr = min_lr
        self.mode = resolve_mode(monitor, mode, "ReduceLROnPlateau")
        self._reset()

    def _reset(self):
        self.best = math.inf if self.mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.wait = 0

    def _better(self, current, best):
        if self.mode == "min":
            return current < best - self.min_delta
        return current > best + self.min_delta

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = {} if logs is None else logs
        logs["lr"] = get_lr(self.model, "ReduceLROnPlateau")
        current = logs.get(self.monitor)
        if current is None:
            missing_monitor("ReduceLROnPlateau", self.monitor, logs,
                            "learning rate reduction")
            return
        current = to_float(current)
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._better(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = logs["lr"]
                # compared in float32, as Keras does, so a rate stored in float32 that equals
                # min_lr counts as already at the floor
                if np.float32(old_lr) > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    set_lr(self.model, new_lr, "ReduceLROnPlateau")
                    if self.verbose > 0:
                        echo(f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning "
                             f"rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


def _takes_lr(schedule):
    """Whether ``schedule`` accepts ``(epoch, lr)`` rather than only ``(epoch)``."""
    try:
        sig = inspect.signature(schedule)
    except (TypeError, ValueError):
        return None
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return True
    return len(positional) >= 2


class LearningRateScheduler(Callback):
    """Mirrors ``tf.keras.callbacks.LearningRateScheduler(schedule, verbose=0)``.

    At each epoch's beginning the rate becomes ``schedule(epoch, lr)`` (``epoch`` 0-based,
    ``lr`` the current rate as a float), or ``schedule(epoch)`` for a one-argument function.
    The result must be a real number (ValueError otherwise). The rate in use is added to the
    epoch-end logs as ``lr``.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError(f"LearningRateScheduler: schedule must be callable, got "
                            f"{type(schedule).__name__}")
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = get_lr(self.model, "LearningRateScheduler")
        takes_lr = _takes_lr(self.schedule)
        if takes_lr is None:          # no signature to read: try the two-argument form first
            try:
                new = self.schedule(epoch, lr)
            except TypeError:
                new = self.schedule(epoch)
        else:
            new = self.schedule(epoch, lr) if takes_lr else self.schedule(epoch)
        if isinstance(new, np.ndarray) and new.ndim == 0:
            new = new[()]
        if isinstance(new, bool) or not isinstance(new, numbers.Real):
            raise ValueError(f'LearningRateScheduler: the output of the "schedule" function '
                             f"should be a float, got {type(new).__name__} ({new!r})")
        new = float(new)
        set_lr(self.model, new, "LearningRateScheduler")
        if self.verbose > 0:
            echo(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler setting learning rate to "
                 f"{new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = get_lr(self.model, "LearningRateScheduler")
