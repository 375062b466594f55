"""The compiled loss and metrics of a model (TF 2.4's ``compile_utils``): match them to the
model's outputs, resolve string names ("accuracy" becomes the binary, categorical or sparse
accuracy the shapes call for, as Keras does), give targets the rank and dtype of the
predictions, weight the per-output losses, and keep the running means ``fit`` reports."""
from __future__ import annotations

import contextlib
import threading

import numpy as _np

import tnp
from tnp.extend import effect as _effect, tracing as _tracing
from tnp.extend import (
    backend_array as _backend, device_of as _device_of, is_floating as _is_floating, wrap as _wrap,
)

from .. import losses as _losses
from ..utils.lazy import LazyModule

_metrics = LazyModule("tnp_train.metrics")   # metrics sit beside the trainers

__all__ = ["LossesContainer", "MetricsContainer", "match_dtype_and_rank"]


def _shape(x):
    # without __array__: a tnp array's shape must not cost a copy to the host
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def _as_array(x):
    return x if hasattr(x, "ndim") and hasattr(x, "astype") else tnp.asarray(x)


def match_dtype_and_rank(y_t, y_p, sw):
    """TF 2.4's ``compile_utils.match_dtype_and_rank``: 1-D targets (and sample weights) of a
    2-D output get a trailing axis, so ``(batch,)`` labels meet ``(batch, 1)`` predictions
    row by row instead of broadcasting to ``(batch, batch)`` in a user's loss or metric;
    float targets of float outputs (int of int) take the output's dtype."""
    y_t = _as_array(y_t)
    p_rank = len(_shape(y_p))
    if y_t.ndim == 1 and p_rank == 2:
        if isinstance(y_t, tnp.ndarray) and y_t.dtype.kind in "iub" and not _tracing():
            # integer labels carry no gradient: reshaped without a tape's attention (this runs
            # under fit's tape on every step)
            y_t = _wrap(_backend(y_t)[:, None], _device_of(y_t))
        else:
            y_t = y_t[:, None]
    p_dtype = _np.dtype(y_p.dtype)
    t_dtype = _np.dtype(y_t.dtype)
    if t_dtype != p_dtype and ((_is_floating(t_dtype) and _is_floating(p_dtype)) or
                               (t_dtype.kind in "iu" and p_dtype.kind in "iu")):
        y_t = y_t.astype(p_dtype)
    if sw is not None:
        sw = _as_array(sw)
        if sw.ndim == 1 and p_rank == 2:
            sw = sw[:, None]
        if _is_floating(p_dtype) and _np.dtype(sw.dtype) != p_dtype:
            sw = sw.astype(p_dtype)
    return y_t, y_p, sw


class OutputNames(list):
    """A model's output names (its output layers' names), and the keys of its dict of outputs,
    which name the same outputs in a dict of losses, metrics or targets (TF 2.4 takes both)."""

    def __init__(self, names, keys=None):
        super().__init__(names)
        self.aliases = {k: n for k, n in zip(keys, names) if k != n} if keys else {}


def _by_name(spec, output_names):
    """A dict keyed by output names or by the keys of the model's dict of outputs, keyed by
    output names."""
    aliases = getattr(output_names, "aliases", None)
    if not aliases:
        return spec
    return {(aliases[k] if k not in output_names and k in aliases else k): v
            for k, v in spec.items()}


def _per_output(spec, output_names, what):
    """One entry per output from a single value (shared by all outputs), a list with one entry
    per output, or a dict keyed by output name (missing names get None)."""
    n = len(output_names)
    if isinstance(spec, dict):
        spec = _by_name(spec, output_names)
        unknown = set(spec) - set(output_names)
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {sorted(unknown)}. Only "
                             f"expected the following keys: {output_names}")
        return [spec.get(name) for name in output_names]
    if isinstance(spec, (list, tuple)):
        if len(spec) != n:
            raise ValueError(f"When passing a list as {what}, it should have one entry per model "
                             f"output. The model has {n} output(s), but you passed {what} with "
                             f"{len(spec)} entries")
        return list(spec)
    return [spec] * n


def _align(values, output_names, what="targets"):
    """Per-output values from one array (applied to every output, as TF 2.4's
    ``_conform_to_outputs`` does), a list/tuple, or a dict keyed by output name."""
    n = len(output_names)
    if values is None:
        return [None] * n
    if isinstance(values, dict):
        values = _by_name(values, output_names)
        unknown = [k for k in values if k not in output_names]
        if unknown:
            raise ValueError(f"Found unexpected keys {sorted(map(str, unknown))} in the {what} "
                             f"that do not correspond to any model output. Expected: "
                             f"{output_names}")
        return [values.get(k) for k in output_names]
    if isinstance(values, (list, tuple)):
        if n == 1 and len(values) != 1:
            return [values]
        if len(values) != n:
            raise ValueError(f"The model has {n} outputs ({output_names}) but {len(values)} "
                             f"{what} were given")
        return list(values)
    return [values] * n


def _common_dtype(values):
    """TF 2.4's ``cast_losses_to_common_dtype``: the widest float among ``values`` (float16
    with bfloat16 gives float32), so a float64 term is never rounded to float32."""
    best = None
    for v in values:
        dt = _np.dtype(v.dtype)
        if not _is_floating(dt):
            continue
        if best is None or dt.itemsize > best.itemsize:
            best = dt
        elif dt != best and dt.itemsize == best.itemsize:
            best = _np.dtype("float32")
    return best


def _add_n(values):
    dt = _common_dtype(values)
    total = None
    for v in values:
        if dt is not None and _np.dtype(v.dtype) != dt:
            v = v.astype(dt)
        total = v if total is None else total + v
    return total


def _as_loss(fn):
    """A ``Loss`` object (a function form is wrapped, so sample weights and the reduction
    apply to it too, as Keras's container does)."""
    if not isinstance(fn, _losses.Loss):
        if not callable(fn):
            raise ValueError(f"Loss should be a callable, found: {fn!r}")
        fn = _losses.LossFunctionWrapper(fn, name=getattr(fn, "__name__", None))
    # the container scales a mean-reduced loss for the replicas itself (below), so a strategy
    # does not refuse it; as TF's container, this marks the object it was given
    fn._allow_sum_over_batch_size = True
    return fn


class LossesContainer:
    """The compiled loss (TF 2.4's ``compile_utils.LossesContainer``): calling it returns the
    weighted sum over outputs plus the regularization losses, a scalar, and updates the
    ``loss`` mean (and ``<output>_loss`` per output of a multi-output model).

    Under a strategy of N replicas the returned loss is scaled so that the gradients summed
    over the replicas are the global batch's: each mean-reduced output loss by the replica's
    share of the global batch (rows/n where the strategy split it, so an uneven last batch
    still gives one process's gradient; TF 2.4's 1/N otherwise, and always in TF), the
    regularization losses by 1/N (a ``"sum"``-reduced loss is not scaled); the running means
    get the unscaled values (a ``"sum"`` loss times N, TF's correction for the mean over
    replicas)."""

    def __init__(self, loss, loss_weights=None, output_names=("output",), dtype="float32"):
        self.output_names = output_names if isinstance(output_names, OutputNames) \
            else list(output_names)
        n = len(self.output_names)
        self._spec = loss
        if isinstance(loss, (list, tuple)) and n == 1 and len(loss) == 1:
            loss = loss[0]
        losses = [None] * n if loss is None else _per_output(loss, self.output_names, "loss")
        self.losses = [None if l is None else _as_loss(_losses.get(l)) for l in losses]
        if loss_weights is None:
            self.weights = [1.0] * n
        else:
            if isinstance(loss_weights, (list, tuple)) and n == 1 and len(loss_weights) == 1:
                loss_weights = loss_weights[0]
            self.weights = [1.0 if w is None else float(w)
                            for w in _per_output(loss_weights, self.output_names, "loss_weights")]
        # running means in float32 as Keras's, in float64 for a float64 model
        self.loss_tracker = _metrics.Mean(name="loss", dtype=dtype)
        self.per_output_trackers = [
            _metrics.Mean(name=f"{name}_loss", dtype=dtype) if fn is not None and n > 1 else None
            for name, fn in zip(self.output_names, self.losses)]

    def has_loss_for(self, y_true):
        """Whether some output has both a compiled loss and targets in ``y_true``."""
        ys = _align(y_true, self.output_names)
        return any(fn is not None and yt is not None for fn, yt in zip(self.losses, ys))

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        """The total loss (a 0-d tnp array, recorded on an active tape); 0.0 when no output has
        a loss and there are no regularization losses, as in TF 2.4. Under a strategy of N
        replicas the returned loss is TF 2.4's (``scale_loss_for_distribution``): mean-reduced
        losses divided by N (by n/rows where the strategy split an uneven batch), the
        regularization losses by N, "sum" losses not; the trackers get
        the unscaled values (a "sum" loss times N), so the job-wide logs are one process's."""
        self._built = True      # its trackers are the model's metrics from now on, as in TF
        replicas = _num_replicas()
        scale = 1.0 / replicas
        rows = _distributed.batch_rows() if replicas > 1 else None
        ys_true = _align(y_true, self.output_names)
        ys_pred = _align(y_pred, self.output_names, "predictions")
        sws = _align(sample_weight, self.output_names, "sample weights")
        terms, metric_terms = [], []
        batch = None
        for fn, w, yt, yp, sw, tracker in zip(self.losses, self.weights, ys_true, ys_pred, sws,
                                              self.per_output_trackers):
            if fn is None or yt is None:
                continue
            yt, yp, sw = match_dtype_and_rank(yt, yp, sw)
            value = fn(yt, yp, sample_weight=sw)
            if not isinstance(value, tnp.ndarray) or value.ndim:
                value = tnp.mean(tnp.asarray(value))    # a reduction="none" loss
            if batch is None and yt.ndim:
                batch = int(yt.shape[0])
            metric_value = loss_value = value
            if replicas > 1:
                if getattr(fn, "reduction", "auto") == "sum":
                    metric_value = value * replicas
                else:
                    loss_value = value * _share(rows, yt, scale)
            if tracker is not None:     # a Mean: traced in a compiled step (see Reduce)
                tracker.update_state(metric_value, sample_weight=batch)
            metric_terms.append(metric_value * w if w != 1.0 else metric_value)
            terms.append(loss_value * w if w != 1.0 else loss_value)
        if regularization_losses:
            reg = _add_n([tnp.asarray(r) for r in regularization_losses])
            metric_terms.append(reg)
            terms.append(reg * scale if replicas > 1 else reg)
        if not terms:
            return tnp.zeros((), dtype="float32")
        total = _add_n(terms)
        # weighted by the batch size, so a short last batch counts for what it holds (no
        # targets, as with add_loss alone: each batch counts once, as in TF 2.4)
        self.loss_tracker.update_state(total if replicas == 1 else _add_n(metric_terms),
                                       sample_weight=batch)
        return total

    _built = False

    @property
    def metrics(self):
        """The trackers, once the container has been called (TF lists none before: a model
        whose own train_step never calls it reports only its own metrics)."""
        if not self._built:
            return []
        return [self.loss_tracker] + [t for t in self.per_output_trackers if t is not None]


_distributed = LazyModule("tnp_train.trainers.distributed")   # imports the strategies' module


def _num_replicas():
    return _distributed.num_replicas()


def _share(rows, y_true, scale):
    """What a replica's mean-reduced loss is scaled by: its share of the global batch, rows/n,
    when the strategy split the batch (so an uneven split, a short last batch's, still sums to
    one process's mean); else TF 2.4's 1/replicas."""
    if rows is None or not y_true.ndim or int(y_true.shape[0]) != rows[2] - rows[1] or \
            rows[0] <= 0:
        return scale
    return (rows[2] - rows[1]) / rows[0]


_SHAPE_RESOLVED = ("accuracy", "acc", "crossentropy", "ce")


class MetricsContainer:
    """The compiled metrics (TF 2.4's ``compile_utils.MetricsContainer``), created on the
    first batch, when the shapes that resolve "accuracy" are known. ``update_state(y_true,
    y_pred, sample_weight=None)`` updates them all; ``metrics`` lists them per output,
    metrics before weighted metrics."""

    def __init__(self, metrics=None, weighted_metrics=None, output_names=("output",)):
        self.output_names = output_names if isinstance(output_names, OutputNames) \
            else list(output_names)
        self._spec = metrics
        self._weighted_spec = weighted_metrics
        self._built = False
        self._metrics = []       # (output index, metric, weighted), in TF's order
        # replicas of a MirroredStrategy update the metrics from their threads: built once
        self._build_lock = threading.Lock()

    def _specs_per_output(self, spec):
        """A list of metric specs for each output."""
        n = len(self.output_names)
        if not spec:
            return [[] for _ in range(n)]
        if isinstance(spec, dict):
            per = _per_output(spec, self.output_names, "metrics")
            return [[] if s is None else list(s) if isinstance(s, (list, tuple)) else [s]
                    for s in per]
        if isinstance(spec, (list, tuple)) and any(isinstance(s, (list, tuple, dict))
                                                   for s in spec):
            per = _per_output(spec, self.output_names, "metrics")
            return [[] if s is None else list(s) if isinstance(s, (list, tuple)) else [s]
                    for s in per]
        flat = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        # one spec for every output: each output gets its own copy of a Metric object, so
        # outputs do not share state (TF's `_copy_object`)
        return [[_copy_metric(m) if n > 1 else m for m in flat] for _ in range(n)]

    def _resolve(self, m, yt, yp):
        if isinstance(m, str) and m.lower() in _SHAPE_RESOLVED:
            # TF 2.4 `_get_metric_object`: from the shapes alone (not the loss), the output's
            # first: a last dim of 1 is binary whatever the labels' rank
            t_shape, p_shape = _shape(yt), _shape(yp)
            if len(p_shape) < 2:
                # TF reads the batch axis as the class axis here (argmax over the batch)
                raise ValueError(f"metrics={m!r}: cannot tell binary from categorical for an "
                                 f"output of shape {p_shape} (no class axis); give the metric "
                                 f"itself, e.g. BinaryAccuracy(), or an output of shape "
                                 f"(batch, 1)")
            binary = p_shape[-1] == 1
            sparse = len(t_shape) < len(p_shape) or (
                len(t_shape) > 0 and t_shape[-1] == 1 and p_shape[-1] > 1)
            if m.lower() in ("accuracy", "acc"):
                cls = (_metrics.BinaryAccuracy if binary else
                       _metrics.SparseCategoricalAccuracy if sparse else
                       _metrics.CategoricalAccuracy)
            else:
                cls = (_metrics.BinaryCrossentropy if binary else
                       _metrics.SparseCategoricalCrossentropy if sparse else
                       _metrics.CategoricalCrossentropy)
            return cls(name=m)
        metric = _metrics.get(m)
        if not isinstance(metric, _metrics.Metric):   # a plain function
            if not callable(metric):
                raise ValueError(f"Metric should be a callable, found: {m!r}")
            name = m if isinstance(m, str) else getattr(m, "__name__", None)
            metric = _metrics.MeanMetricWrapper(metric, name=name)
        return metric

    def build(self, y_true, y_pred):
        on = [p.device for p in _align(y_pred, self.output_names, "predictions")
              if isinstance(p, tnp.ndarray)]
        # the metrics made here (from names, or copies per output) keep their state on the
        # predictions' device: updating them then copies nothing between devices per batch
        with tnp.default_device(on[0]) if on else contextlib.nullcontext():
            self._build(y_true, y_pred)

    def _build(self, y_true, y_pred):
        ys_true = _align(y_true, self.output_names)
        ys_pred = _align(y_pred, self.output_names, "predictions")
        plain = self._specs_per_output(self._spec)
        weighted = self._specs_per_output(self._weighted_spec)
        multi = len(self.output_names) > 1
        names = set()
        out = []
        for k, out_name in enumerate(self.output_names):
            for m in plain[k]:
                if m is None:
                    continue
                metric = self._resolve(m, ys_true[k], ys_pred[k])
                if multi:
                    metric._name = f"{out_name}_{metric.name}"
                _claim(names, metric.name)
                out.append((k, metric, False))
            for m in weighted[k]:
                if m is None:
                    continue
                metric = self._resolve(m, ys_true[k], ys_pred[k])
                # TF 2.4 `_set_metric_names`: "weighted_" only where the name is taken
                if multi:
                    taken = f"{out_name}_{metric.name}" in names
                    metric._name = f"{out_name}_{'weighted_' if taken else ''}{metric.name}"
                elif metric.name in names:
                    metric._name = f"weighted_{metric.name}"
                _claim(names, metric.name)
                out.append((k, metric, True))
        self._metrics = out
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        if not self._built:
            with self._build_lock:
                if not self._built:
                    self.build(y_true, y_pred)
        if not self._metrics:
            return
        ys_true = _align(y_true, self.output_names)
        ys_pred = _align(y_pred, self.output_names, "predictions")
        sws = _align(sample_weight, self.output_names, "sample weights")
        matched = {}
        for k, metric, weighted in self._metrics:
            if ys_true[k] is None:
                continue
            if k not in matched:
                matched[k] = match_dtype_and_rank(ys_true[k], ys_pred[k], sws[k])
            yt, yp, sw = matched[k]
            _effect(metric.update_state, yt, yp, sample_weight=sw if weighted else None)

    @property
    def metrics(self):
        return [m for _, m, _ in self._metrics]


def _claim(names, name):
    if name in names:
        raise ValueError(f"Found two metrics with the same name: {name}")
    names.add(name)


def _copy_metric(m):
    """A fresh metric of the same configuration (TF's ``_copy_object``)."""
    if type(m) is _metrics.MeanMetricWrapper:
        # its config names the function, which a user's function has no entry for
        return _metrics.MeanMetricWrapper(m.fn, name=m.name, dtype=m.dtype, **m.fn_kwargs)
    if isinstance(m, _metrics.Metric):
        return type(m).from_config(m.get_config())
    return m
