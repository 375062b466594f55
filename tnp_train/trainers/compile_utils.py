"""The compiled loss and metrics of a model: match them to the model's outputs, resolve string
names ("accuracy" becomes the binary, categorical or sparse accuracy the targets call for, as
Keras does), weight the per-output losses, and keep the running means ``fit`` reports."""
from __future__ import annotations

import numpy as _np

import tnp

from .. import losses as _losses
from ..utils.lazy import LazyModule

_metrics = LazyModule("tnp_train.metrics")   # metrics sit beside the trainers
from ..layers.keras_tensor import flatten

__all__ = ["LossesContainer", "MetricsContainer"]


def _per_output(spec, output_names, what):
    """A list with one entry per output from a single value, a list, or a dict by output name."""
    n = len(output_names)
    if isinstance(spec, dict):
        unknown = set(spec) - set(output_names)
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {sorted(unknown)}. Only "
                             f"expected the following keys: {output_names}")
        return [spec.get(name) for name in output_names]
    if isinstance(spec, (list, tuple)) and n > 1:
        if len(spec) != n:
            raise ValueError(f"When passing a list as {what}, it should have one entry per model "
                             f"output. The model has {n} outputs, but you passed {what} with "
                             f"{len(spec)} entries")
        return list(spec)
    return [spec] * n if what != "loss" or n == 1 else [spec] * n


class LossesContainer:
    """The compiled loss: the weighted sum over outputs, plus the model's regularization losses."""

    def __init__(self, loss, loss_weights=None, output_names=("output",), dtype="float32"):
        self.output_names = list(output_names)
        self._spec = loss
        losses = _per_output(loss, self.output_names, "loss")
        self.losses = [None if l is None else _as_loss(_losses.get(l)) for l in losses]
        if loss_weights is None:
            self.weights = [1.0] * len(self.losses)
        else:
            self.weights = [1.0 if w is None else float(w)
                            for w in _per_output(loss_weights, self.output_names, "loss_weights")]
        # running means in float32 as Keras's, in float64 for a float64 model
        self.loss_tracker = _metrics.Mean(name="loss", dtype=dtype)
        self.per_output_trackers = ([_metrics.Mean(name=f"{n}_loss", dtype=dtype)
                                     for n in self.output_names]
                                    if len(self.output_names) > 1 else [])

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        ys_true, ys_pred = _align(y_true, self.output_names), _align(y_pred, self.output_names)
        sws = _align(sample_weight, self.output_names) if sample_weight is not None else \
            [None] * len(ys_pred)
        total = None
        per_output = []
        for k, (fn, w, yt, yp, sw) in enumerate(zip(self.losses, self.weights, ys_true, ys_pred, sws)):
            if fn is None or yt is None:
                continue
            value = fn(yt, yp, sample_weight=sw) if _takes_sample_weight(fn) else fn(yt, yp)
            if not isinstance(value, tnp.ndarray) or value.ndim:
                value = tnp.mean(tnp.asarray(value))
            per_output.append((k, value))
            term = value * w if w != 1.0 else value
            total = term if total is None else total + term
        if total is None:
            raise ValueError("No loss to compute: the model was compiled without a loss for any "
                             "output that has targets")
        if regularization_losses:
            reg = regularization_losses[0]
            for r in regularization_losses[1:]:
                reg = reg + r
            total = total + tnp.asarray(reg).astype(total.dtype)
        return total, per_output

    def update_state(self, total, per_output, batch_size):
        self.loss_tracker.update_state(total, sample_weight=batch_size)
        for k, value in per_output:
            if self.per_output_trackers:
                self.per_output_trackers[k].update_state(value, sample_weight=batch_size)

    @property
    def metrics(self):
        return [self.loss_tracker] + self.per_output_trackers


def _as_loss(fn):
    """A ``Loss`` object (a function form is wrapped, so sample weights and the reduction
    apply to it too, as Keras's container does)."""
    if isinstance(fn, _losses.Loss):
        return fn
    return _losses.LossFunctionWrapper(fn, name=getattr(fn, "__name__", None))


def _takes_sample_weight(fn):
    return isinstance(fn, _losses.Loss)


def _align(values, output_names):
    """Per-output values from a single array, a list/tuple, or a dict keyed by output name."""
    n = len(output_names)
    if values is None:
        return [None] * n
    if isinstance(values, dict):
        missing = [k for k in output_names if k not in values]
        if len(missing) == n:
            raise ValueError(f"Found unexpected keys {sorted(values)} that do not correspond to "
                             f"any model output: {output_names}")
        return [values.get(k) for k in output_names]
    if isinstance(values, (list, tuple)):
        if n == 1 and len(values) != 1:
            return [values]
        if len(values) != n:
            raise ValueError(f"The model has {n} outputs but {len(values)} targets were given")
        return list(values)
    if n != 1:
        raise ValueError(f"The model has {n} outputs ({output_names}) but a single target "
                         f"array was given; pass a list or a dict of targets")
    return [values]


class MetricsContainer:
    """The compiled metrics, created on the first batch (when the targets' shapes are known)."""

    def __init__(self, metrics=None, weighted_metrics=None, output_names=("output",), loss=None):
        self.output_names = list(output_names)
        self._spec = metrics
        self._weighted_spec = weighted_metrics
        self._loss = loss
        self._built = False
        self._metrics = []       # (output index, metric, weighted)

    def _resolve(self, m, yt, yp, k):
        if isinstance(m, str) and m in ("accuracy", "acc", "crossentropy", "ce"):
            sparse = _is_sparse(yt, yp, self._loss, k)
            binary = yp.ndim >= 1 and yp.shape[-1] == 1 and not sparse
            if m in ("accuracy", "acc"):
                cls = (_metrics.BinaryAccuracy if binary else
                       _metrics.SparseCategoricalAccuracy if sparse else _metrics.CategoricalAccuracy)
                return cls(name=m)
            cls = (_metrics.BinaryCrossentropy if binary else
                   _metrics.SparseCategoricalCrossentropy if sparse else _metrics.CategoricalCrossentropy)
            return cls(name=m)
        metric = _metrics.get(m)
        if not isinstance(metric, _metrics.Metric):   # a plain function
            metric = _metrics.MeanMetricWrapper(metric, name=getattr(m, "__name__", str(m)))
        return metric

    def build(self, y_true, y_pred):
        ys_true, ys_pred = _align(y_true, self.output_names), _align(y_pred, self.output_names)
        for spec, weighted in ((self._spec, False), (self._weighted_spec, True)):
            if not spec:
                continue
            per = _per_output(spec, self.output_names, "metrics") if isinstance(spec, dict) or (
                isinstance(spec, (list, tuple)) and len(self.output_names) > 1 and
                all(isinstance(s, (list, tuple)) or s is None for s in spec)) else \
                [spec] * len(self.output_names)
            for k, ms in enumerate(per):
                if ms is None or ys_true[k] is None:
                    continue
                for m in (ms if isinstance(ms, (list, tuple)) else [ms]):
                    metric = self._resolve(m, ys_true[k], ys_pred[k], k)
                    if len(self.output_names) > 1:
                        metric._name = f"{self.output_names[k]}_{metric.name}"
                    if weighted:
                        metric._name = f"weighted_{metric.name}"
                    self._metrics.append((k, metric, weighted))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        if not self._built:
            self.build(y_true, y_pred)
        if not self._metrics:
            return
        ys_true, ys_pred = _align(y_true, self.output_names), _align(y_pred, self.output_names)
        sws = _align(sample_weight, self.output_names) if sample_weight is not None else \
            [None] * len(ys_pred)
        for k, metric, weighted in self._metrics:
            metric.update_state(ys_true[k], ys_pred[k], sample_weight=sws[k] if weighted else None)

    @property
    def metrics(self):
        return [m for _, m, _ in self._metrics]


def _is_sparse(yt, yp, loss, k):
    losses = flatten(loss) if isinstance(loss, (list, tuple, dict)) else [loss]
    fn = losses[k] if k < len(losses) else losses[0]
    name = fn if isinstance(fn, str) else (getattr(fn, "name", None) or getattr(fn, "__name__", ""))
    if isinstance(fn, _losses.SparseCategoricalCrossentropy) or "sparse" in str(name):
        return True
    yt_shape, yp_shape = tuple(_np.shape(yt)), tuple(yp.shape)
    return len(yt_shape) < len(yp_shape) or (len(yt_shape) == len(yp_shape) and yt_shape[-1] == 1
                                              and yp_shape[-1] > 1)
