"""``EarlyStopping``: stop training when a monitored quantity stops improving (TF 2.4's
``tf.keras.callbacks.EarlyStopping``, with ``start_from_epoch`` from later versions)."""
from __future__ import annotations

import math

import numpy as np

from ._util import echo, missing_monitor, resolve_mode, to_float
from .base import Callback

__all__ = ["EarlyStopping"]


class EarlyStopping(Callback):
    """Mirrors ``tf.keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=0,
    verbose=0, mode="auto", baseline=None, restore_best_weights=False, start_from_epoch=0)``.

    At each epoch's end (from epoch ``start_from_epoch`` on) the monitored value counts as an
    improvement when it beats the best so far by more than ``min_delta`` (its absolute value).
    After ``patience`` epochs in a row without one, it sets ``model.stop_training``: with
    ``patience=2`` and the best value at epoch 3, training stops at the end of epoch 5
    (0-based). With a ``baseline``, the count restarts only on an epoch that beats both the best
    so far and the baseline, so training stops after ``patience`` epochs (``max(patience, 1)``)
    if the baseline is never beaten, as in TF 2.4. With ``restore_best_weights``, the weights
    of the best epoch (tracked even when it did not beat the baseline) are put back when it
    stops training (as in TF 2.x; not when training runs to its last epoch).
    ``stopped_epoch`` (0-based, 0 if it did not stop) and ``best_epoch`` tell what happened.
    A monitor missing from the logs only warns.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.mode = resolve_mode(monitor, mode, "EarlyStopping")
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0
        self._stopped = False

    def _is_improvement(self, current, reference):
        if self.mode == "min":
            return current + self.min_delta < reference
        return current - self.min_delta > reference

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = math.inf if self.mode == "min" else -math.inf
        self.best_weights = None
        self.best_epoch = 0
        self._stopped = False

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            missing_monitor("EarlyStopping", self.monitor, logs, "early stopping")
            return None
        return to_float(value)

    def _snapshot(self):
        return [np.array(w, copy=True) for w in self.model.get_weights()]

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # Until something improves, the first monitored epoch's weights are the best.
            self.best_weights = self._snapshot()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self._snapshot()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
        if self.wait and self.wait >= self.patience:
            self.stopped_epoch = epoch
            self._stopped = True
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    echo(f"Restoring model weights from the end of the best epoch: "
                         f"{self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self._stopped and self.verbose > 0:
            echo(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")
