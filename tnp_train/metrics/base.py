"""``Metric``: the Keras metric contract (TF 2.4's ``tf.keras.metrics.Metric``), and the
reductions ``Sum``, ``Mean`` and ``MeanMetricWrapper``.

A metric holds its state in non-trainable ``tt.Variable``s made by ``add_weight`` (TF's
``synchronization=ON_READ``, ``aggregation=SUM`` for totals and counts, so a distribution
strategy can all-reduce them), made through ``tt.Variable`` (so a strategy's variable creator
makes them). Updates read the values in NumPy and write with ``assign_add``: nothing a metric
does is recorded on a tape. ``update_state`` and ``add_weight`` hold the metric's lock, so
threads (replicas) may update one metric, and a metric that makes its state on the first update
(``AUC``) makes it once.
"""
from __future__ import annotations

import functools
import threading

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend
from tnp.extend import array_module, device_of, wrap

from .. import initializers as _initializers
from ..autodiff import Variable
from ..losses._weights import broadcast_weights
from ..utils.naming import snake_case

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper"]


def values_of(x):
    """The NumPy values of an array (tnp, Variable, NumPy or nested lists); never recorded."""
    if isinstance(x, tnp.ndarray):
        return _np.asarray(x)
    return _np.asarray(x)


def div_no_nan(a, b):
    """``a / b`` with 0 where ``b == 0`` (``tf.math.divide_no_nan``)."""
    a = _np.asarray(a, dtype=_np.float64)
    b = _np.asarray(b, dtype=_np.float64)
    with _np.errstate(divide="ignore", invalid="ignore"):
        return _np.where(b == 0, 0.0, a / _np.where(b == 0, 1.0, b))


def _locked(fn):
    @functools.wraps(fn)
    def update_state(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)
    update_state._metric_locked = True
    return update_state


class Metric:
    """Mirrors ``tf.keras.metrics.Metric(name=None, dtype=None)``: ``update_state``,
    ``result``, ``reset_state`` (``reset_states`` too), ``metric(...)`` = update then result."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("update_state")
        if fn is not None and not getattr(fn, "_metric_locked", False):
            cls.update_state = _locked(fn)

    def __init__(self, name=None, dtype=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}")
        self._name = name or snake_case(type(self).__name__)
        if dtype is None:
            from ..backend import floatx
            dtype = floatx()
        self._dtype = _np.dtype(getattr(dtype, "name", dtype)).name
        self._metric_vars = []
        self._initial = []
        self._lock = threading.RLock()
        self.trainable = False
        self.stateful = True
        self.built = True

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):
        self._name = value

    @property
    def dtype(self):
        return self._dtype

    def add_weight(self, name, shape=(), aggregation="sum", synchronization="on_read",
                   initializer="zeros", dtype=None):
        """A non-trainable state variable (``Metric.add_weight``)."""
        dt = _np.dtype(getattr(dtype, "name", dtype) or self._dtype)
        init = _initializers.get(initializer if initializer is not None else "zeros")
        value = init(tuple(shape), dtype=dt.name)
        with self._lock:    # the state list and its initial values stay parallel
            v = Variable(value, trainable=False, name=f"{self.name}/{name}", dtype=dt,
                         aggregation=aggregation, synchronization=synchronization)
            self._metric_vars.append(v)
            self._initial.append(_np.array(_np.asarray(value), copy=True))
        return v

    @property
    def variables(self):
        return list(self._metric_vars)

    weights = variables
    non_trainable_weights = variables
    non_trainable_variables = variables

    @property
    def trainable_weights(self):
        return []

    trainable_variables = trainable_weights

    def get_weights(self):
        return [v.numpy() for v in self._metric_vars]

    def set_weights(self, weights):
        if len(weights) != len(self._metric_vars):
            raise ValueError(f"{self.name}.set_weights: expected {len(self._metric_vars)} arrays, "
                             f"got {len(weights)}")
        for v, w in zip(self._metric_vars, weights):
            v.assign(tnp.asarray(_np.asarray(w, dtype=v.dtype)))

    # ------------------------------------------------------------------ the contract
    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.update_state must be implemented")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__}.result must be implemented")

    def reset_state(self):
        """Every state variable back to its initial value."""
        with self._lock:
            for v, init in zip(self._metric_vars, self._initial):
                v.assign(tnp.asarray(init, device=v.device))

    def reset_states(self):
        """TF 2.4's name for :meth:`reset_state`."""
        return self.reset_state()

    def __call__(self, *args, **kwargs):
        """Update the state with this batch and return the result (``Metric.__call__``)."""
        self.update_state(*args, **kwargs)
        return self.result()

    def _out(self, value):
        return tnp.asarray(_np.asarray(value).astype(self._dtype))

    def get_config(self):
        return {"name": self.name, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class Reduce(Metric):
    """Sums values, or their weighted mean (``reduction`` "sum" or "weighted_mean")."""

    def __init__(self, reduction, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if reduction not in ("sum", "weighted_mean", "sum_over_batch_size"):
            raise ValueError(f"{type(self).__name__}: unknown reduction {reduction!r}")
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction != "sum":
            self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        if sample_weight is None or isinstance(sample_weight, (int, float)):
            # the loss tracker's call: one value (weighted by a batch size), no broadcasting
            w = 1.0 if sample_weight is None else float(sample_weight)
            if isinstance(values, tnp.ndarray) and values.ndim == 0 and \
                    device_of(values) is device_of(self.total):
                # added on the loss's device: reading it back to the host each step would
                # wait for the step there (the same float64 product, rounded once)
                xp = array_module(values)
                x = xp.asarray(_backend(values), dtype=_np.float64) * w
                self.total.assign_add(wrap(x.astype(self.total.dtype), device_of(values)))
                if self.reduction != "sum":
                    self.count.assign_add(self.count.dtype.type(
                        w if self.reduction == "weighted_mean" else 1))
                return
            v = values_of(values)
            if v.ndim == 0:
                x = float(v)
                self.total.assign_add(self.total.dtype.type(x * w))
                if self.reduction != "sum":
                    self.count.assign_add(self.count.dtype.type(
                        w if self.reduction == "weighted_mean" else 1))
                return
        v = values_of(values).astype(_np.float64)
        if sample_weight is not None:
            w = broadcast_weights(self.name, values_of(sample_weight), v.shape, _np.float64)
            total, count = _np.sum(v * w), _np.sum(w)
        else:
            total, count = _np.sum(v), v.size
        self.total.assign_add(tnp.asarray(_np.asarray(total, dtype=self.total.dtype)))
        if self.reduction != "sum":
            n = count if self.reduction == "weighted_mean" else v.size
            self.count.assign_add(tnp.asarray(_np.asarray(n, dtype=self.count.dtype)))

    def result(self):
        if self.reduction == "sum":
            return self._out(self.total.numpy())
        if self.total.ndim == 0:
            # on the state's device (fit reads it back only when it shows or logs it)
            xp = array_module(self.total)
            t = xp.asarray(_backend(self.total), dtype=_np.float64)
            c = xp.asarray(_backend(self.count), dtype=_np.float64)
            r = xp.where(c == 0, 0.0, t / xp.where(c == 0, 1.0, c))
            return wrap(r.astype(self._dtype), device_of(self.total))
        return self._out(div_no_nan(self.total.numpy(), self.count.numpy()))


class Sum(Reduce):
    """The (weighted) sum of the values; mirrors ``tf.keras.metrics.Sum(name="sum", dtype=None)``."""

    def __init__(self, name="sum", dtype=None):
        super().__init__("sum", name=name, dtype=dtype)


class Mean(Reduce):
    """The (weighted) mean of the values; mirrors ``tf.keras.metrics.Mean(name="mean",
    dtype=None)``."""

    def __init__(self, name="mean", dtype=None):
        super().__init__("weighted_mean", name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)``; mirrors
    ``tf.keras.metrics.MeanMetricWrapper(fn, name=None, dtype=None, **kwargs)``."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None) or "mean_metric_wrapper",
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p = values_of(y_true), values_of(y_pred)
        # ranks one apart with a trailing 1: the smaller gets one too (the rule of the
        # built-in functions), so a user's function never sees (batch,) against (batch, 1)
        if p.ndim == t.ndim + 1 and p.shape[-1] == 1:
            t = t[..., None]
        elif t.ndim == p.ndim + 1 and t.shape[-1] == 1:
            p = p[..., None]
        matches = self._fn(t, p, **self._fn_kwargs)
        return super().update_state(matches, sample_weight=sample_weight)

    def get_config(self):
        config = {}
        if type(self) is MeanMetricWrapper:
            from . import serialize
            config["fn"] = serialize(self._fn)
        config.update(self._fn_kwargs)
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls is MeanMetricWrapper:
            from . import get
            config["fn"] = get(config.pop("fn"))
        return cls(**config)
