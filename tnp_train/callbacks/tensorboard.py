"""``TensorBoard``: write the training logs as TensorBoard scalars (TF 2.4's
``tf.keras.callbacks.TensorBoard``, scalars and weight histograms only).

The event files are written by a maintained writer library, an optional dependency:
``tensorboardX`` when it is installed, otherwise ``torch.utils.tensorboard`` (which needs both
``torch`` and ``tensorboard``). With neither, constructing the callback raises ImportError.
"""
from __future__ import annotations

import importlib
import importlib.util
import os

import numpy as np

from ._util import is_chief, to_float, warn
from .base import Callback

__all__ = ["TensorBoard"]

_find_spec = importlib.util.find_spec

_INSTALL_HINT = ("tnp_train.callbacks.TensorBoard needs a TensorBoard event writer: "
                 "`pip install tensorboardX` (or install `tensorboard` next to torch, to use "
                 "torch.utils.tensorboard)")


def _summary_writer_class():
    """The ``SummaryWriter`` class of the first writer library available."""
    if _find_spec("tensorboardX") is not None:
        return importlib.import_module("tensorboardX").SummaryWriter
    if _find_spec("tensorboard") is not None and _find_spec("torch") is not None:
        return importlib.import_module("torch.utils.tensorboard").SummaryWriter
    raise ImportError(_INSTALL_HINT)


_DEPRECATED = ("batch_size", "write_grads", "embeddings_layer_names", "embeddings_data")


class TensorBoard(Callback):
    """Mirrors ``tf.keras.callbacks.TensorBoard(log_dir="logs", histogram_freq=0,
    write_graph=True, write_images=False, update_freq="epoch", profile_batch=2,
    embeddings_freq=0, embeddings_metadata=None)``.

    Scalars go to two runs, ``log_dir/train`` and ``log_dir/validation``, as in Keras: at each
    epoch's end every log ``k`` is written as ``epoch_k`` at step ``epoch`` (``val_k`` to the
    validation run as ``epoch_k``). ``update_freq="batch"`` or an integer ``N`` also writes the
    training logs as ``batch_k`` every ``N`` batches, at step = the number of training batches
    seen by this callback. ``histogram_freq=N`` writes a histogram of every model weight every
    ``N`` epochs. A standalone ``evaluate`` writes ``evaluation_k_vs_iterations`` to the
    validation run. ``write_graph``, ``write_images``, ``profile_batch`` and the embeddings
    arguments are accepted and have no effect (there is no graph; the profiler is separate).
    """

    _supports_tf_logs = True     # batch logs are read from the device only when written

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 update_freq="epoch", profile_batch=2, embeddings_freq=0,
                 embeddings_metadata=None, **kwargs):
        super().__init__()
        for name in _DEPRECATED:
            if name in kwargs:
                kwargs.pop(name)
                warn(f"TensorBoard: `{name}` is deprecated and has no effect")
        if kwargs:
            raise TypeError(f"TensorBoard: unrecognized arguments {sorted(kwargs)}")
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and not (isinstance(update_freq, int) and
                                           not isinstance(update_freq, bool) and
                                           update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"integer, got {update_freq!r}")
        if histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be >= 0, got {histogram_freq}")
        self._writer_class = _summary_writer_class()
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.update_freq = update_freq
        self.profile_batch = profile_batch
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers = {}
        self._train_batches = 0
        self._in_fit = False

    def _writer(self, run):
        if run not in self._writers:
            self._writers[run] = self._writer_class(log_dir=os.path.join(self.log_dir, run))
        return self._writers[run]

    def _scalars(self, run, prefix, logs, step):
        if not is_chief(self.model):
            return None            # the chief writes the job's summaries
        writer = None
        for key, value in logs.items():
            try:
                value = to_float(value)
            except (TypeError, ValueError):
                continue          # not a scalar (e.g. predict outputs)
            writer = writer or self._writer(run)
            writer.add_scalar(prefix + key, value, step)
        return writer

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_batch_end(self, batch, logs=None):
        self._train_batches += 1
        if self.update_freq != "epoch" and self._train_batches % self.update_freq == 0:
            self._scalars("train", "batch_", logs or {}, self._train_batches)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        self._scalars("train", "epoch_", train, epoch)
        self._scalars("validation", "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0 and is_chief(self.model):
            writer = self._writer("train")
            for i, w in enumerate(getattr(self.model, "weights", None) or ()):
                name = str(getattr(w, "name", None) or f"weight_{i}").replace(":", "_")
                writer.add_histogram(name, np.asarray(w), epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._close_writers()

    def on_test_end(self, logs=None):
        if self._in_fit:
            return
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        step = int(np.asarray(iterations)) if iterations is not None else 0
        prefixed = {f"{k}_vs_iterations": v for k, v in (logs or {}).items()}
        self._scalars("validation", "evaluation_", prefixed, step)
        self._close_writers()
