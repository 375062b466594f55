"""``TensorBoard``: write the training logs as TensorBoard summaries (TF 2.4's
``tf.keras.callbacks.TensorBoard``: scalars, weight histograms and images, the model's graph,
``profile_batch``).

The event files are written by ``tt.summary`` (its file writer), which needs only the
``tensorboard`` package (``pip install tnp[tensorboard]``); without it, constructing the
callback raises ImportError with that hint.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os

import numpy as np

from .. import summary
from ..summary import _ops as summary_ops
from ._util import is_chief, to_float, warn
from .base import Callback

__all__ = ["TensorBoard"]

_find_spec = importlib.util.find_spec

_INSTALL_HINT = ("tnp_train.callbacks.TensorBoard writes its event files with the `tensorboard` "
                 "package: `pip install tnp[tensorboard]` (or `pip install tensorboard`)")


class _RunWriter:
    """The event file of one run (``log_dir/train``, ``log_dir/validation``): a ``tt.summary``
    file writer written to directly, so the callback neither flushes at every summary (as an
    ``as_default`` block would) nor touches the user's default writer, step or ``record_if``."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.summary_writer = summary.create_file_writer(log_dir)

    def _write(self, tag, array, plugin, step):
        self.summary_writer.write_summary(tag, summary_ops.tensor_proto(array),
                                          summary_ops.plugin_metadata(plugin, None), int(step))

    def add_scalar(self, tag, value, step):
        self._write(tag, summary_ops.scalar_tensor(value), "scalars", step)

    def add_histogram(self, tag, values, step):
        self._write(tag, summary_ops.histogram_buckets(values), "histograms", step)

    def add_image(self, tag, images, step, max_outputs=3):
        self._write(tag, summary_ops.image_tensor(images, max_outputs), "images", step)

    def add_keras_model(self, tag, model_json, step):
        tensor, metadata = summary_ops.keras_model_value(model_json)
        self.summary_writer.write_summary(tag, tensor, metadata, int(step))

    def flush(self):
        self.summary_writer.flush()

    def close(self):
        self.summary_writer.close()


def _summary_writer_class():
    """The class of a run's writer (a seam: the tests put a recording double here)."""
    if _find_spec("tensorboard") is None:
        raise ImportError(_INSTALL_HINT)
    return _RunWriter


_DEPRECATED = ("batch_size", "write_grads", "embeddings_layer_names", "embeddings_data")


class _BatchCounter:
    """The step of the summaries written inside ``train_step``/``test_step`` while the callback
    is their default writer: the number of batches done so far in this ``fit`` (or this
    evaluation), read when a summary is written, as TF's ``model._train_counter``."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0

    def __index__(self):
        return self.value

    __int__ = __index__

    def __repr__(self):
        return f"<batch counter {self.value}>"


def _weight_tag(weight, i):
    """TF's histogram tag: the variable's name with ``:`` made ``_`` (``dense/kernel:0`` gives
    ``dense/kernel_0``); tnp_train's names have no ``:0`` output index, so it is added."""
    name = getattr(weight, "name", None)
    if not name:
        return f"weight_{i}"
    name = str(name)
    return name.replace(":", "_") if ":" in name else name + "_0"


def _weight_image(weight):
    """TF 2.4's ``_log_weight_as_image``: a bias as a ``[1, n, 1, 1]`` image, a kernel as
    ``[1, rows, cols, 1]`` (wider than tall), a conv kernel as one image per output channel;
    None for what it cannot show."""
    w = np.squeeze(np.asarray(weight))
    if w.ndim == 1:
        w = w.reshape(1, w.shape[0], 1, 1)
    elif w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        w = w.reshape(1, w.shape[0], w.shape[1], 1)
    elif w.ndim == 3:
        from ..backend.config import image_data_format
        if image_data_format() == "channels_last":
            w = np.transpose(w, (2, 0, 1))   # one image per kernel
        w = w.reshape(w.shape[0], w.shape[1], w.shape[2], 1)
    return w if w.ndim == 4 and w.shape[-1] in (1, 3, 4) else None


def _graph_config(obj, layer_refs=False):
    """The model's JSON config in the layout TensorBoard's Graphs dashboard reads (Keras 3's):
    a layer's inbound nodes as ``{"args": [...], "kwargs": ...}`` whose tensors carry a
    ``keras_history`` (from TF 2.4's ``[[layer, node, index, kwargs], ...]`` or from the
    ``{"__keras_tensor__": [layer, node, index]}`` references of our own form), and the bare
    ``[layer, node, index]`` in a model's ``input_layers``/``output_layers``; without it the
    dashboard draws no edge and fails on the outputs."""
    if isinstance(obj, dict):
        if set(obj) == {"__keras_tensor__"}:
            ref = obj["__keras_tensor__"]
            return ref if layer_refs else _history(ref)
        return {k: [_graph_node(n) for n in v] if k == "inbound_nodes" and isinstance(v, list)
                else _graph_config(v, k in ("input_layers", "output_layers"))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_graph_config(v, layer_refs) for v in obj]
    return obj


def _history(ref):
    return {"class_name": "__keras_tensor__", "config": {"keras_history": list(ref[:3])}}


def _graph_node(node):
    if isinstance(node, list):       # TF 2.4: one [layer, node, index, kwargs] per input tensor
        refs = [e for e in node if isinstance(e, list) and len(e) >= 3]
        args = [_history(e) for e in refs]
        return {"args": [args[0] if len(args) == 1 else args],
                "kwargs": refs[0][3] if refs and len(refs[0]) > 3 else {}}
    if not isinstance(node, dict):
        return node
    # the dashboard reads each positional argument as a tensor or a list of tensors: other
    # values (an axis, a tnp function's options) are left out of its copy
    args = []
    for a in node.get("args", []):
        refs = _refs(a)
        if refs:
            args.append(refs[0] if isinstance(a, dict) and set(a) == {"__keras_tensor__"}
                        else refs)
    return {"args": args, "kwargs": _graph_config(node.get("kwargs", {}))}


def _refs(x):
    if isinstance(x, dict) and set(x) == {"__keras_tensor__"}:
        return [_history(x["__keras_tensor__"])]
    if isinstance(x, (list, dict)):
        return [r for v in (x.values() if isinstance(x, dict) else x) for r in _refs(v)]
    return []


def _is_graph_model(model):
    # TF writes the graph of functional and Sequential models only (a subclassed model has no
    # config); by class name, as TF checks Sequential, since the models sit above callbacks
    return any(c.__name__ in ("Functional", "Sequential") for c in type(model).__mro__)


class TensorBoard(Callback):
    """Mirrors ``tf.keras.callbacks.TensorBoard(log_dir="logs", histogram_freq=0,
    write_graph=True, write_images=False, update_freq="epoch", profile_batch=2,
    embeddings_freq=0, embeddings_metadata=None)``.

    Two runs, as in Keras: ``log_dir/train`` and ``log_dir/validation``, each one new event
    file per ``fit`` (or ``evaluate``), never overwriting an earlier one. At each epoch's end
    every log ``k`` is written as ``epoch_k`` at step ``epoch`` (``val_k`` to the validation
    run as ``epoch_k``; with a learning-rate schedule also ``epoch_learning_rate``).
    ``update_freq="batch"`` or an integer ``N`` also writes the training logs as ``batch_k``
    every ``N`` batches, at step = the number of training batches of this ``fit``, and makes the
    train run the default ``tt.summary`` writer while training (the validation run while
    validating), so summaries written in a custom ``train_step`` land there every ``N`` batches.
    ``histogram_freq=N`` writes a histogram of every layer weight every ``N`` epochs (tag
    ``layer/kernel_0``), and ``write_images=True`` the weights as images too (tag
    ``layer/kernel_0/image``). ``write_graph``
    writes the model's config for the Graphs dashboard (functional and Sequential models). A
    standalone ``evaluate`` writes ``evaluation_k_vs_iterations`` to the validation run, at step
    ``optimizer.iterations``. ``profile_batch`` (default 2: the second training batch;
    ``(start, stop)`` a range, counted from 1 over the whole ``fit``; 0 off) runs
    ``tt.profiler`` over those batches, writing to ``log_dir/plugins/profile/<run>/`` (TF writes
    under ``log_dir/train``). The embeddings arguments are accepted and have no effect.
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
        self._train_counter = _BatchCounter()
        self._test_counter = _BatchCounter()
        self._summary_contexts = []
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

    # ------------------------------------------------------------------ writers
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
        while self._summary_contexts:     # a fit that raised left its default writer in place
            self._pop_writer()
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def _push_writer(self, run, counter):
        """TF's ``_push_writer``: with batch-level summaries, ``run`` becomes the thread's
        default ``tt.summary`` writer, at step ``counter``, recording every ``update_freq``
        batches, until the matching ``_pop_writer``."""
        stack = None
        writer = None
        if self.update_freq != "epoch" and is_chief(self.model):
            # None from a writer class of the tests' making, which has no tt.summary writer
            writer = getattr(self._writer(run), "summary_writer", None)
        if writer is not None:
            freq = self.update_freq
            stack = contextlib.ExitStack()
            stack.enter_context(writer.as_default(step=counter))
            stack.enter_context(summary.record_if(lambda: counter.value % freq == 0))
        self._summary_contexts.append(stack)     # None too: every push has its pop

    def _pop_writer(self):
        if self._summary_contexts:
            stack = self._summary_contexts.pop()
            if stack is not None:
                stack.close()

    def _write_keras_model(self):
        """TF's ``_write_keras_model_summary``: the model's config, tag ``keras`` at step 0."""
        if not _is_graph_model(self.model) or not is_chief(self.model):
            return
        writer = self._writer("train")
        add = getattr(writer, "add_keras_model", None)
        if add is None:
            return                # a writer class of the tests' making
        try:
            config = json.dumps(_graph_config(json.loads(self.model.to_json())))
        except Exception as e:     # as TF: a model that cannot be serialized still trains
            warn(f"TensorBoard: model failed to serialize as JSON, no graph written: {e}")
            return
        add("keras", config, 0)

    def _collect_learning_rate(self, logs):
        # TF adds the schedule's current rate: a plain float rate is a constant, not logged
        opt = getattr(self.model, "optimizer", None)
        from ..optimizers.schedules import LearningRateSchedule
        if isinstance(getattr(opt, "_lr_fn", None), LearningRateSchedule):
            logs["learning_rate"] = opt.learning_rate
        return logs

    def _log_weights(self, epoch):
        if not is_chief(self.model):
            return
        writer = self._writer("train")
        layers = getattr(self.model, "layers", None)
        # TF goes layer by layer (so a weight shared by two layers is written twice)
        weights = ([w for layer in layers for w in layer.weights] if layers is not None
                   else list(getattr(self.model, "weights", None) or ()))
        for i, w in enumerate(weights):
            tag = _weight_tag(w, i)
            writer.add_histogram(tag, np.asarray(w), epoch)
            if self.write_images:
                image = _weight_image(w)
                if image is not None:
                    # TF 2.4 gave the image the histogram's tag, and TensorBoard shows a tag
                    # in one dashboard only (the first seen): its weight images never appeared
                    writer.add_image(tag + "/image", image, epoch)
        writer.flush()

    # ------------------------------------------------------------------ hooks
    def set_model(self, model):
        super().set_model(model)
        self._close_writers()      # each fit or evaluate writes new files, as TF's set_model
        if self.write_graph:
            self._write_keras_model()

    def on_train_begin(self, logs=None):
        self._in_fit = True
        self._global_train_batch = 0
        self._train_counter.value = 0      # TF's fit resets model._train_counter
        self._push_writer("train", self._train_counter)

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self._should_trace and self._global_train_batch == self._start_batch:
            self._start_profiler()

    def on_train_batch_end(self, batch, logs=None):
        self._train_counter.value += 1
        step = self._train_counter.value
        if self.update_freq != "epoch" and step % self.update_freq == 0:
            self._scalars("train", "batch_", logs or {}, step)
        if self._profiling and self._global_train_batch >= self._stop_batch:
            self._stop_profiler()

    def on_test_begin(self, logs=None):
        self._test_counter.value = 0        # TF's evaluate resets model._test_counter
        self._push_writer("validation", self._test_counter)

    def on_test_batch_end(self, batch, logs=None):
        self._test_counter.value += 1

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if train:
            train = self._collect_learning_rate(train)
        self._scalars("train", "epoch_", train, epoch)
        self._scalars("validation", "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._pop_writer()
        self._stop_profiler()
        self._close_writers()

    def on_test_end(self, logs=None):
        self._pop_writer()
        if self._in_fit:
            return
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        step = int(np.asarray(iterations)) if iterations is not None else 0
        prefixed = {f"{k}_vs_iterations": v for k, v in (logs or {}).items()}
        self._scalars("validation", "evaluation_", prefixed, step)
        self._close_writers()
