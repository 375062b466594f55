"""``Metric``: the Keras metric contract (TF 2.4's ``tf.keras.metrics.Metric``), and the
reductions ``Sum``, ``Mean`` and ``MeanMetricWrapper``.

A metric holds its state in non-trainable ``tt.Variable``s made by ``add_weight`` (TF's
``synchronization=ON_READ``, ``aggregation=SUM`` for totals and counts, so a distribution
strategy can all-reduce them), made through ``tt.Variable`` (so a strategy's variable creator
makes them). Updates compute with the array module of the inputs' device (NumPy on the CPU,
CuPy on a GPU) and write with ``assign_add`` of device arrays, and ``result`` stays on the
state's device: a training step never waits to copy predictions or state to the host. Nothing
a metric does is recorded on a tape. ``update_state`` and ``add_weight`` hold the metric's
lock, so threads (replicas) may update one metric, and a metric that makes its state on the
first update (``AUC``) makes it once.
"""
from __future__ import annotations

import functools
import threading

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend
from tnp.extend import array_module, device_of, effect as _effect, tracing as _tracing, wrap
from tnp.extend import host_call as _host_call

from .. import initializers as _initializers
from ..autodiff import Variable, paused as _paused
from ..backend.config import floatx as _floatx
from ..losses._values import backend_on, input_device
from ..losses._weights import broadcast_weights
from ..utils.naming import snake_case

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper"]


def div_no_nan(a, b, xp=_np):
    """``a / b`` in float64 with 0 where ``b == 0`` (``tf.math.divide_no_nan``), with array
    module ``xp``."""
    a = xp.asarray(a, dtype=_np.float64)
    b = xp.asarray(b, dtype=_np.float64)
    zero = b == 0
    # the denominator is never 0 where the quotient is kept, so no warning state is needed
    return xp.where(zero, 0.0, a / xp.where(zero, 1.0, b))


def accumulate(var, a, device):
    """``var += a`` for a backend array ``a`` on ``device``, cast to ``var``'s dtype; moved to
    ``var``'s device first when that is another one (a state made elsewhere)."""
    if device_of(var) is device:     # the common case, once per state variable and batch
        var.update(_add_in_place, a.astype(var.dtype, copy=False))
        return
    var.assign_add(wrap(a.astype(var.dtype, copy=False), device).to_device(device_of(var)))


def _add_in_place(v, x):
    v += x


def computed_on_host(cls):
    """Class decorator for a metric whose ``update_state`` and ``result`` compute on backend
    arrays (sorts, histograms, cumulative sums: the confusion metrics): while a step is traced,
    its update is an effect of the compiled program (the eager update, at every call, with that
    call's values) and its result a host call made after it (the eager result of that call's
    state), so a compiled step gives the eager step's numbers. ``cls._result_shape()`` is the
    shape of the result (default ``()``)."""
    update, result = cls.update_state, cls.result

    @functools.wraps(update)
    def update_state(self, y_true, y_pred, sample_weight=None):
        if _tracing():
            _effect(update, self, y_true, y_pred, sample_weight)
            return None
        return update(self, y_true, y_pred, sample_weight)

    @functools.wraps(result)
    def result_(self):
        if _tracing():
            shape = self._result_shape() if hasattr(self, "_result_shape") else ()
            return _host_call(_result_now, result, self, shape=shape, dtype=self._dtype)
        return result(self)

    update_state._metric_locked = True      # (update holds the lock)
    cls.update_state, cls.result = update_state, result_
    return cls


def _result_now(result, metric):
    return _backend(result(metric))


def _strategy_of(variable):
    """The strategy whose scope made ``variable`` (None outside every strategy's)."""
    import sys
    lib = sys.modules.get("tnp_train.distribute.distribute_lib")
    if lib is None or not lib.has_strategy():      # no strategy was ever made
        return None
    s = lib.get_strategy()
    return s if s.extended.variable_created_in_scope(variable) else None


def _locked(fn):
    @functools.wraps(fn)
    def update_state(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)
    update_state._metric_locked = True
    return update_state


def _global_result(fn):
    """``result`` made the job's result under a strategy of several replicas (TF 2.4's
    ``metrics_utils.result_wrapper``): the metric's ON_READ state combined over every replica
    first (in a replica function, through ``merge_call``). Every worker must call it, as every
    worker calls a collective."""
    @functools.wraps(fn)
    def result(self):
        strategy = self.__dict__.get("_distribution_strategy")
        if strategy is None or strategy.num_replicas_in_sync == 1:
            return fn(self)
        from ..distribute import distribute_lib  # noqa: PLC0415 - the strategy's own rule
        return distribute_lib.global_metric_result(strategy, self, fn)
    result._metric_global = True
    return result


class Metric:
    """Mirrors ``tf.keras.metrics.Metric(name=None, dtype=None)``: ``update_state``,
    ``result``, ``reset_state`` (``reset_states`` too), ``metric(...)`` = update then result."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("update_state")
        if fn is not None and not getattr(fn, "_metric_locked", False):
            cls.update_state = _locked(fn)
        fn = cls.__dict__.get("result")
        if fn is not None and not getattr(fn, "_metric_global", False):
            cls.result = _global_result(fn)

    def __init__(self, name=None, dtype=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}")
        self._name = name or snake_case(type(self).__name__)
        if dtype is None:
            dtype = _floatx()
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
            if "_distribution_strategy" not in self.__dict__:
                self.__dict__["_distribution_strategy"] = _strategy_of(v)
            self._metric_vars.append(v)
            # a copy on the state's device: made and restored without a trip to the host
            self._initial.append(wrap(_backend(v).copy(), device_of(v)))
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
            v.assign(tnp.asarray(_np.asarray(w, dtype=v.dtype), device=v.device))

    # ------------------------------------------------------------------ the contract
    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.update_state must be implemented")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__}.result must be implemented")

    def reset_state(self):
        """Every state variable back to its initial value."""
        with self._lock:
            for v, init in zip(self._metric_vars, self._initial):
                v.assign(init if device_of(init) is device_of(v) else init.to_device(v.device))

    def reset_states(self):
        """TF 2.4's name for :meth:`reset_state`."""
        return self.reset_state()

    def __call__(self, *args, **kwargs):
        """Update the state with this batch and return the result (``Metric.__call__``)."""
        self.update_state(*args, **kwargs)
        result = self.result()
        # a layer's add_metric(result) then reports this metric rather than a mean of its
        # results (TF tags the tensor with its metric); per thread, as replicas call it at once
        last = self.__dict__.get("_last_results")
        if last is None:
            last = self.__dict__.setdefault("_last_results", threading.local())
        last.value = result
        return result

    def _out(self, value):
        return tnp.asarray(_np.asarray(value).astype(self._dtype))

    def _result(self, a, device):
        """Backend array ``a`` on ``device`` as a result in the metric's dtype (a new array,
        never a view of the state)."""
        return wrap(array_module(device).asarray(a).astype(self._dtype), device)

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
        if _tracing():
            # in a compiled step: the loss tracker's call traced (its arithmetic, in place on
            # the state), anything else an effect of every call
            if not self._update_traced(values, sample_weight):
                _effect(self._update_now, values, sample_weight)
            return
        self._update_now(values, sample_weight)

    def _update_traced(self, values, sample_weight):
        """The scalar case of :meth:`_update_now` in tnp operations (the same float64 product
        rounded once to the state's dtype, the same in-place adds); False for any other call."""
        if not (isinstance(values, tnp.ndarray) and values.ndim == 0 and
                device_of(values) is device_of(self.total) and
                (sample_weight is None or (isinstance(sample_weight, (int, float)) and
                                           not isinstance(sample_weight, bool)))):
            return False
        w = 1.0 if sample_weight is None else float(sample_weight)
        with _paused():     # a metric's state is not differentiated (as Variable.update)
            tnp.add(self.total, (values.astype(_np.float64) * w).astype(self.total.dtype),
                    out=self.total)
            if self.reduction != "sum":
                tnp.add(self.count, self.count.dtype.type(
                    w if self.reduction == "weighted_mean" else 1), out=self.count)
        return True

    def _update_now(self, values, sample_weight=None):
        dev = input_device(values, sample_weight, default=device_of(self.total))
        xp = array_module(dev)
        v = backend_on(values, dev)
        if v.ndim == 0 and (sample_weight is None or isinstance(sample_weight, (int, float))):
            # the loss tracker's call: one value (weighted by a batch size), no broadcasting;
            # the float64 product, rounded once to the state's dtype
            w = 1.0 if sample_weight is None else float(sample_weight)
            accumulate(self.total, xp.asarray(v, dtype=_np.float64) * w, dev)
            if self.reduction != "sum":
                self.count.assign_add(self.count.dtype.type(
                    w if self.reduction == "weighted_mean" else 1))
            return
        v = v.astype(_np.float64)
        if sample_weight is not None:
            w = broadcast_weights(self.name, sample_weight, v.shape, _np.float64, device=dev)
            total, count = xp.sum(v * w), xp.sum(w)
        else:
            total, count = xp.sum(v), v.size
        accumulate(self.total, xp.asarray(total), dev)
        if self.reduction != "sum":
            if self.reduction == "weighted_mean" and sample_weight is not None:
                accumulate(self.count, xp.asarray(count), dev)
            else:
                self.count.assign_add(self.count.dtype.type(v.size))

    def result(self):
        if _tracing():
            # in a compiled step: the same arithmetic in tnp operations on the state, read at
            # every call after that call's updates (effects)
            if self.reduction == "sum":
                return self.total.astype(self._dtype)
            # (as 1-element arrays: a 0-d comparison gives tnp's one shared True/False
            # scalar, which the tracer cannot tell apart between two metrics)
            one = (1,)
            q = div_no_nan(tnp.reshape(self.total, one), tnp.reshape(self.count, one), tnp)
            return tnp.reshape(q, ()).astype(self._dtype)
        dev = device_of(self.total)
        if self.reduction == "sum":
            return self._result(_backend(self.total), dev)
        xp = array_module(dev)
        return self._result(div_no_nan(_backend(self.total), _backend(self.count), xp), dev)


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
    ``tf.keras.metrics.MeanMetricWrapper(fn, name=None, dtype=None, **kwargs)``. ``fn`` gets
    tnp arrays on the predictions' device (as Keras gives it tensors)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None) or "mean_metric_wrapper",
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    @property
    def fn(self):
        """The function whose mean this is (as ``LossFunctionWrapper.fn``)."""
        return self._fn

    @property
    def fn_kwargs(self):
        """The keyword arguments ``fn`` is called with (a copy)."""
        return dict(self._fn_kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        dev = input_device(y_pred, y_true, default=device_of(self.total))
        t, p = backend_on(y_true, dev), backend_on(y_pred, dev)
        # ranks one apart with a trailing 1: the smaller gets one too (the rule of the
        # built-in functions), so a user's function never sees (batch,) against (batch, 1)
        if p.ndim == t.ndim + 1 and p.shape[-1] == 1:
            t = t[..., None]
        elif t.ndim == p.ndim + 1 and t.shape[-1] == 1:
            p = p[..., None]
        # tnp arrays on the device that no tape follows (as TF's metrics, not differentiated)
        matches = self._fn(wrap(t, dev), wrap(p, dev), **self._fn_kwargs)
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
