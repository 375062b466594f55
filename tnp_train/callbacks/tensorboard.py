"""``TensorBoard``: write the training logs as TensorBoard scalars (TF 2.4's
``tf.keras.callbacks.TensorBoard``: scalars, weight histograms and ``profile_batch``).

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
    validation run. ``profile_batch`` (default 2: the second training batch; ``(start,
    stop)`` a range, counted from 1 over the whole ``fit``; 0 off) runs ``tt.profiler`` over
    those batches, writing to ``log_dir/plugins/profile/<run>/`` (TF writes under
    ``log_dir/train``). ``write_graph``, ``write_images`` and the embeddings arguments are
    accepted and have no effect (there is no graph).
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
        self._init_profile_batch(profile_batch)
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers = {}
        self._train_batches = 0
        self._in_fit = False

    def _init_profile_batch(self, profile_batch):
        """TF 2.4's parsing: an int, a pair, or a string ``"start,stop"``."""
        message = ("profile_batch must be a non-negative integer or 2-tuple of positive "
                   "integers. A pair of positive integers signifies a range of batches to "
                   f"profile. Found: {profile_batch}")
        if isinstance(profile_batch, str):
            try:
                profile_batch = [int(p) for p in profile_batch.split(",")]
            except ValueError:
                raise ValueError(message) from None
        if isinstance(profile_batch, (int, np.integer)) and not isinstance(profile_batch, bool):
            start = stop = int(profile_batch)
        elif isinstance(profile_batch, (tuple, list)) and len(profile_batch) == 2 and all(
                isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                for b in profile_batch):
            start, stop = (int(b) for b in profile_batch)
        else:
            raise ValueError(message)
        if start < 0 or stop < start:
            raise ValueError(message)
        self._start_batch, self._stop_batch = start, stop
        self._should_trace = not (start == 0 and stop == 0)
        self._global_train_batch = 0
        self._profiling = False

    def _start_profiler(self):
        from ..profiler import experimental as profiler
        try:
            profiler.start(self.log_dir)
            self._profiling = True
        except RuntimeError as e:       # TF logs an AlreadyExistsError and trains on
            warn(f"TensorBoard: failed to start the profiler: {e}")

    def _stop_profiler(self):
        if not self._profiling:
            return
        from ..profiler import experimental as profiler
        try:
            profiler.stop()
        except RuntimeError as e:       # TF logs an UnavailableError and trains on
            warn(f"TensorBoard: failed to stop the profiler: {e}")
        finally:
            self._profiling = False

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
        self._global_train_batch = 0

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self._should_trace and self._global_train_batch == self._start_batch:
            self._start_profiler()

    def on_train_batch_end(self, batch, logs=None):
        self._train_batches += 1
        if self.update_freq != "epoch" and self._train_batches % self.update_freq == 0:
            self._scalars("train", "batch_", logs or {}, self._train_batches)
        if self._profiling and self._global_train_batch >= self._stop_batch:
            self._stop_profiler()

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
        self._stop_profiler()
        self._close_writers()

    def on_test_end(self, logs=None):
        if self._in_fit:
            return
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        step = int(np.asarray(iterations)) if iterations is not None else 0
        prefixed = {f"{k}_vs_iterations": v for k, v in (logs or {}).items()}
        self._scalars("validation", "evaluation_", prefixed, step)
        self._close_writers()
