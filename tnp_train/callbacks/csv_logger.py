"""``CSVLogger``: write the epoch logs to a CSV file (TF 2.4's
``tf.keras.callbacks.CSVLogger``)."""
from __future__ import annotations

import collections.abc
import csv
import os

import numpy as np

from ._util import is_chief
from .base import Callback

__all__ = ["CSVLogger"]


def _cell(value):
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, collections.abc.Iterable):
        return "[%s]" % ", ".join(map(str, value))    # the csv module quotes it
    return value


class CSVLogger(Callback):
    """Mirrors ``tf.keras.callbacks.CSVLogger(filename, separator=",", append=False)``.

    One row per epoch: the column ``epoch`` (0-based, as Keras) then the log keys of the first
    epoch in sorted order; a key missing from a later epoch is written ``NA``, a new key is
    left out; a list value is written ``"[1, 2]"``. Rows use the csv module's "excel" dialect
    (``\\r\\n`` line ends) with ``separator``. With ``append`` the rows go after an existing
    file's (the header is written only if the file is empty or new); otherwise the file is
    overwritten. The file is flushed after every row and closed at the end of training.
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        if not is_chief(self.model):
            return                         # the chief writes the job's logs
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename, newline="") as f:
                    self.append_header = not f.readline()
            mode = "a"
        else:
            mode = "w"
        self.csv_file = open(self.filename, mode, newline="")
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if not is_chief(self.model):
            return
        if self.csv_file is None:          # used without on_train_begin: open as fit would
            self.on_train_begin()
        if self.keys is None:
            self.keys = sorted(logs)
        if self.writer is None:
            sep = self.sep

            class _Dialect(csv.excel):
                delimiter = sep

            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         dialect=_Dialect)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, _cell(logs[k]) if k in logs else "NA") for k in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
        self.csv_file = None
        self.writer = None
