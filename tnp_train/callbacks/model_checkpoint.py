"""``ModelCheckpoint``: save the model (or its weights) during training (TF 2.4's
``tf.keras.callbacks.ModelCheckpoint``, with ``initial_value_threshold`` from later versions)."""
from __future__ import annotations

import math
import os

from ._util import (
    batch_save_due, check_save_freq, chief_only, echo, missing_monitor, python_logs, resolve_mode,
    to_float,
)
from .base import Callback

__all__ = ["ModelCheckpoint"]


class ModelCheckpoint(Callback):
    """Mirrors ``tf.keras.callbacks.ModelCheckpoint(filepath, monitor="val_loss", verbose=0,
    save_best_only=False, save_weights_only=False, mode="auto", save_freq="epoch",
    options=None, initial_value_threshold=None)``.

    ``filepath`` may hold ``str.format`` fields: ``{epoch}`` (1-based, as Keras), ``{batch}``
    (1-based, batch-level saves only) and any key of the logs, e.g.
    ``"ckpt-{epoch:02d}-{val_loss:.2f}.h5"``. The model is saved with
    ``model.save_weights(path, overwrite=True)`` when ``save_weights_only`` and
    ``model.save(path, overwrite=True)`` otherwise; a missing parent directory is created.

    ``save_freq="epoch"`` saves at each epoch's end; an integer ``N`` saves after every ``N``
    training batches (counted across epochs) with that batch's running logs. With
    ``save_best_only`` a save happens only when ``monitor`` improves on the best value seen so
    far (which starts at ``initial_value_threshold`` when given); ``mode`` "min"/"max" says
    which way is better, "auto" picks "max" for accuracy-like names ("acc", "auc",
    "precision", "recall") and "min" otherwise. A monitor missing from the logs only warns.
    ``options`` (TensorFlow's ``SaveOptions``) is accepted and ignored.
    """

    _supports_tf_logs = True     # batch logs are read from the device only when saving

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", options=None,
                 initial_value_threshold=None):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = check_save_freq(save_freq, "ModelCheckpoint")
        self.options = options
        self.initial_value_threshold = initial_value_threshold
        self.mode = resolve_mode(monitor, mode, "ModelCheckpoint")
        if initial_value_threshold is not None:
            self.best = float(initial_value_threshold)
        else:
            self.best = math.inf if self.mode == "min" else -math.inf
        self._batches_since_save = 0
        self._current_epoch = 0

    def _better(self, current, best):
        return current < best if self.mode == "min" else current > best

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch_save_due(self):
            self._save(self._current_epoch, batch, logs or {})

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def _file_path(self, epoch, batch, logs):
        fields = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except (KeyError, IndexError, ValueError) as e:
            raise KeyError(f'ModelCheckpoint: failed to format this callback filepath: '
                           f'"{self.filepath}". Reason: {e!r} (available keys: '
                           f'{sorted(fields)})') from e

    def _save(self, epoch, batch, logs):
        # every worker decides (the logs are the job's, so the decisions agree); only the
        # chief writes and prints
        with chief_only(self.model) as writes:
            self._save_on(writes, epoch, batch, logs)

    def _save_on(self, writes, epoch, batch, logs):
        logs = python_logs(logs)
        path = self._file_path(epoch, batch, logs)
        verbose = self.verbose > 0 and writes
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                if writes:
                    missing_monitor("ModelCheckpoint", self.monitor, logs,
                                    "saving the best model")
                return
            current = to_float(current)
            if not self._better(current, self.best):
                if verbose:
                    echo(f"\nEpoch {epoch + 1:05d}: {self.monitor} did not improve from "
                         f"{self.best:0.5f}")
                return
            if verbose:
                echo(f"\nEpoch {epoch + 1:05d}: {self.monitor} improved from {self.best:0.5f} "
                     f"to {current:0.5f}, saving model to {path}")
            self.best = current
        elif verbose:
            echo(f"\nEpoch {epoch + 1:05d}: saving model to {path}")
        if not writes:
            return
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)
