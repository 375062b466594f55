"""Metrics (``tt.metrics``), mirroring ``tf.keras.metrics`` (TF 2.4 names, signatures and
defaults; a few arguments from Keras 3 where noted).

Stateful metrics (``Metric`` subclasses) accumulate over batches in non-trainable variables;
function forms (``sparse_categorical_accuracy`` ...) return per-sample values. Nothing here is
differentiated: updates compute with the array module of the inputs' device and results stay on
the state's device (nothing is read back to the host per batch).
"""
from __future__ import annotations

import inspect

import numpy as _np

from tnp.extend import array_module, backend_array, device_of, wrap

from ..losses import functions as _lf
from ..utils.serialization import deserialize_keras_object, get_object, serialize_keras_object
from ..losses._values import backend_on, input_device
from .base import (Mean, MeanMetricWrapper, Metric, Reduce, Sum, accumulate, computed_on_host,
                   div_no_nan)
from .confusion import (AUC, FalseNegatives, FalsePositives, MeanIoU, Precision,
                        PrecisionAtRecall, Recall, RecallAtPrecision, SensitivityAtSpecificity,
                        SpecificityAtSensitivity, TrueNegatives, TruePositives)
from .functions import (ACC, acc, accuracy, binary_accuracy, categorical_accuracy,
                        cosine_similarity, sparse_categorical_accuracy,
                        sparse_top_k_categorical_accuracy, top_k_categorical_accuracy)
from .functions import align as _align

# the loss functions that are also metrics (TF 2.4's tf.keras.metrics names)
mean_squared_error = mse = MSE = _lf.mean_squared_error
mean_absolute_error = mae = MAE = _lf.mean_absolute_error
mean_absolute_percentage_error = mape = MAPE = _lf.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = MSLE = _lf.mean_squared_logarithmic_error
binary_crossentropy = bce = BCE = _lf.binary_crossentropy
categorical_crossentropy = _lf.categorical_crossentropy
sparse_categorical_crossentropy = _lf.sparse_categorical_crossentropy
kl_divergence = kld = KLD = kullback_leibler_divergence = _lf.kl_divergence
poisson = _lf.poisson
hinge = _lf.hinge
squared_hinge = _lf.squared_hinge
categorical_hinge = _lf.categorical_hinge
logcosh = log_cosh = _lf.log_cosh
cosine_proximity = cosine_similarity

__all__ = [
    "Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
    "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy", "Precision", "Recall", "AUC", "TruePositives",
    "FalsePositives", "TrueNegatives", "FalseNegatives", "MeanSquaredError", "MeanAbsoluteError",
    "RootMeanSquaredError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
    "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "BinaryCrossentropy",
    "KLDivergence", "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge", "LogCoshError",
    "CosineSimilarity", "MeanIoU", "SensitivityAtSpecificity", "SpecificityAtSensitivity",
    "PrecisionAtRecall", "RecallAtPrecision", "MeanRelativeError", "MeanTensor",
    "accuracy", "acc", "ACC", "binary_accuracy", "categorical_accuracy",
    "sparse_categorical_accuracy", "top_k_categorical_accuracy",
    "sparse_top_k_categorical_accuracy", "cosine_similarity", "cosine_proximity",
    "mean_squared_error", "mse", "MSE", "mean_absolute_error", "mae", "MAE",
    "mean_absolute_percentage_error", "mape", "MAPE", "mean_squared_logarithmic_error", "msle",
    "MSLE", "binary_crossentropy", "bce", "BCE", "categorical_crossentropy",
    "sparse_categorical_crossentropy", "kl_divergence", "kld", "KLD",
    "kullback_leibler_divergence", "poisson", "hinge", "squared_hinge", "categorical_hinge",
    "logcosh", "log_cosh", "get", "serialize", "deserialize"]


class _Named(MeanMetricWrapper):
    """A named MeanMetricWrapper: ``_fn`` with the constructor's keyword arguments."""
    _fn_static = None

    def __init__(self, name, dtype, **kwargs):
        super().__init__(type(self)._fn_static, name=name, dtype=dtype, **kwargs)


def _named(cls_name, fn, default_name, doc, leading=(), **defaults):
    """A class ``cls_name(*leading, name=default_name, dtype=None, **defaults)``: TF's
    positional order is ``(name, dtype, *defaults)`` except for the arguments named in
    ``leading``, which come first (``TopKCategoricalAccuracy(k=5, name=..., dtype=None)``)."""
    order = [*leading, "name", "dtype", *(p for p in defaults if p not in leading)]
    every = {"name": default_name, "dtype": None, **defaults}

    def __init__(self, *args, **kwargs):
        if len(args) > len(order):
            raise TypeError(f"{cls_name}() takes at most {len(order)} positional arguments "
                            f"({', '.join(order)}), {len(args)} given")
        pos = dict(zip(order, args))
        twice = sorted(set(pos) & set(kwargs))
        if twice:
            raise TypeError(f"{cls_name}() got multiple values for argument {twice[0]!r}")
        unknown = sorted(set(kwargs) - set(every))
        if unknown:
            raise TypeError(f"{cls_name}() got unexpected keyword arguments {unknown}")
        values = {**every, **pos, **kwargs}
        name, dtype = values.pop("name"), values.pop("dtype")
        _Named.__init__(self, name, dtype, **values)

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=every[p])
           for p in order])
    cls = type(cls_name, (_Named,), {"__init__": __init__, "_fn_static": staticmethod(fn),
                                      "__doc__": doc, "__module__": __name__})
    return cls


Accuracy = _named("Accuracy", accuracy, "accuracy",
                  "How often predictions equal labels; mirrors ``tf.keras.metrics.Accuracy(name="
                  "'accuracy', dtype=None)``.")
BinaryAccuracy = _named("BinaryAccuracy", binary_accuracy, "binary_accuracy",
                        "How often ``y_pred > threshold`` equals the label; mirrors "
                        "``tf.keras.metrics.BinaryAccuracy(name='binary_accuracy', dtype=None, "
                        "threshold=0.5)``.", threshold=0.5)
CategoricalAccuracy = _named("CategoricalAccuracy", categorical_accuracy, "categorical_accuracy",
                             "How often the argmax of predictions equals that of one-hot labels; "
                             "mirrors ``tf.keras.metrics.CategoricalAccuracy``.")
SparseCategoricalAccuracy = _named(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy, "sparse_categorical_accuracy",
    "How often the argmax of predictions equals integer labels; mirrors "
    "``tf.keras.metrics.SparseCategoricalAccuracy``.")
TopKCategoricalAccuracy = _named(
    "TopKCategoricalAccuracy", top_k_categorical_accuracy, "top_k_categorical_accuracy",
    "How often the true class is among the k highest predictions; mirrors "
    "``tf.keras.metrics.TopKCategoricalAccuracy(k=5, name='top_k_categorical_accuracy', "
    "dtype=None)``.", leading=("k",), k=5)
SparseTopKCategoricalAccuracy = _named(
    "SparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy",
    "As TopKCategoricalAccuracy with integer labels; mirrors "
    "``tf.keras.metrics.SparseTopKCategoricalAccuracy(k=5, ...)``.", leading=("k",), k=5)
MeanSquaredError = _named("MeanSquaredError", mean_squared_error, "mean_squared_error",
                          "Mirrors ``tf.keras.metrics.MeanSquaredError``.")
MeanAbsoluteError = _named("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                           "Mirrors ``tf.keras.metrics.MeanAbsoluteError``.")
MeanAbsolutePercentageError = _named(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "Mirrors ``tf.keras.metrics.MeanAbsolutePercentageError``.")
MeanSquaredLogarithmicError = _named(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "Mirrors ``tf.keras.metrics.MeanSquaredLogarithmicError``.")
CategoricalCrossentropy = _named(
    "CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
    "Mirrors ``tf.keras.metrics.CategoricalCrossentropy(name='categorical_crossentropy', "
    "dtype=None, from_logits=False, label_smoothing=0)``.", from_logits=False, label_smoothing=0)
SparseCategoricalCrossentropy = _named(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    "Mirrors ``tf.keras.metrics.SparseCategoricalCrossentropy(name="
    "'sparse_categorical_crossentropy', dtype=None, from_logits=False, axis=-1)``.",
    from_logits=False, axis=-1)
BinaryCrossentropy = _named(
    "BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
    "Mirrors ``tf.keras.metrics.BinaryCrossentropy(name='binary_crossentropy', dtype=None, "
    "from_logits=False, label_smoothing=0)``.", from_logits=False, label_smoothing=0)
KLDivergence = _named("KLDivergence", kl_divergence, "kullback_leibler_divergence",
                      "Mirrors ``tf.keras.metrics.KLDivergence``.")
Poisson = _named("Poisson", poisson, "poisson", "Mirrors ``tf.keras.metrics.Poisson``.")
Hinge = _named("Hinge", hinge, "hinge", "Mirrors ``tf.keras.metrics.Hinge``.")
SquaredHinge = _named("SquaredHinge", squared_hinge, "squared_hinge",
                      "Mirrors ``tf.keras.metrics.SquaredHinge``.")
CategoricalHinge = _named("CategoricalHinge", categorical_hinge, "categorical_hinge",
                          "Mirrors ``tf.keras.metrics.CategoricalHinge``.")
LogCoshError = _named("LogCoshError", logcosh, "logcosh",
                      "Mirrors ``tf.keras.metrics.LogCoshError``.")
CosineSimilarity = _named("CosineSimilarity", cosine_similarity, "cosine_similarity",
                          "Mirrors ``tf.keras.metrics.CosineSimilarity(name='cosine_similarity', "
                          "dtype=None, axis=-1)``.", axis=-1)


@computed_on_host
class RootMeanSquaredError(Mean):
    """``sqrt(mean((y_pred - y_true)^2))`` over all entries; mirrors
    ``tf.keras.metrics.RootMeanSquaredError(name="root_mean_squared_error", dtype=None)``."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, dev, xp = _align(self.name, y_true, y_pred)
        err = xp.square(p.astype(_np.float64) - t.astype(_np.float64))
        return super().update_state(wrap(err, dev), sample_weight=sample_weight)

    def result(self):
        dev = device_of(self.total)
        xp = array_module(dev)
        return self._result(xp.sqrt(div_no_nan(backend_array(self.total),
                                               backend_array(self.count), xp)), dev)


class MeanRelativeError(Mean):
    """The (weighted) mean of ``|y_pred - y_true| / normalizer`` (0 where the normalizer is 0);
    mirrors ``tf.keras.metrics.MeanRelativeError(normalizer, name=None, dtype=None)``.
    ``normalizer`` broadcasts against the predictions."""

    def __init__(self, normalizer, name=None, dtype=None):
        super().__init__(name=name or "mean_relative_error", dtype=dtype)
        self.normalizer = _np.asarray(normalizer, dtype=_np.float64)

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, dev, xp = _align(self.name, y_true, y_pred)
        norm = xp.asarray(self.normalizer)
        try:
            norm = xp.broadcast_to(norm, p.shape)
        except ValueError:
            raise ValueError(f"{self.name}: normalizer of shape {self.normalizer.shape} does "
                             f"not broadcast to predictions of shape {p.shape}") from None
        err = div_no_nan(xp.abs(p.astype(_np.float64) - t.astype(_np.float64)), norm, xp)
        return super().update_state(wrap(err, dev), sample_weight=sample_weight)

    def get_config(self):
        return {**super().get_config(), "normalizer": self.normalizer.tolist()}


class MeanTensor(Metric):
    """The elementwise (weighted) mean of the tensors given to ``update_state``, all of one
    shape; mirrors ``tf.keras.metrics.MeanTensor(name="mean_tensor", dtype=None)``. The state
    takes the shape of the first update."""

    def __init__(self, name="mean_tensor", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._shape = None
        self.total = self.count = None

    def update_state(self, values, sample_weight=None):
        dev = input_device(values, sample_weight,
                           default=device_of(self.total) if self.total is not None else None)
        xp = array_module(dev)
        v = backend_on(values, dev).astype(_np.float64)
        if self._shape is None:
            self._shape = tuple(v.shape)
            self.total = self.add_weight("total", shape=self._shape)
            self.count = self.add_weight("count", shape=self._shape)
        elif tuple(v.shape) != self._shape:
            raise ValueError(f"{self.name}: MeanTensor input values must always have the same "
                             f"shape. Expected shape (set during the first call): "
                             f"{self._shape}. Got: {tuple(v.shape)}")
        if sample_weight is None:
            w = xp.ones(v.shape)
        else:
            w = backend_on(sample_weight, dev).astype(_np.float64)
            try:
                w = xp.broadcast_to(w, v.shape)
            except ValueError:
                raise ValueError(f"{self.name}: sample_weight of shape {tuple(w.shape)} does "
                                 f"not broadcast to values of shape {v.shape}") from None
        accumulate(self.total, v * w, dev)
        accumulate(self.count, xp.array(w, copy=True), dev)

    def result(self):
        if self.total is None:
            raise ValueError(f"{self.name}: MeanTensor does not have any result yet. Please "
                             f"call the MeanTensor instance or use `.update_state(value)` "
                             f"before retrieving the result.")
        dev = device_of(self.total)
        return self._result(div_no_nan(backend_array(self.total), backend_array(self.count),
                                       array_module(dev)), dev)


_CLASSES = (Metric, Sum, Mean, MeanMetricWrapper, Accuracy, BinaryAccuracy, CategoricalAccuracy,
            SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
            Precision, Recall, AUC, TruePositives, FalsePositives, TrueNegatives, FalseNegatives,
            MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, BinaryCrossentropy, KLDivergence, Poisson, Hinge,
            SquaredHinge, CategoricalHinge, LogCoshError, CosineSimilarity, MeanIoU,
            SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall,
            RecallAtPrecision, MeanRelativeError, MeanTensor)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_FUNCTIONS = {n: globals()[n] for n in __all__ if n[0].islower() and n not in
              ("get", "serialize", "deserialize")}
_BY_NAME.update(_FUNCTIONS)
_BY_PLAIN_NAME = {k: v for k, v in _BY_NAME.items() if v not in (Metric, MeanMetricWrapper)}


def serialize(metric):
    """A function's (registered) name, or ``{"class_name", "config"}`` for a ``Metric``;
    mirrors ``tf.keras.metrics.serialize``."""
    return serialize_keras_object(metric)


def deserialize(config, custom_objects=None):
    """A metric from a name (a function form, or a class name for a default instance) or a
    ``serialize`` dict, found in ``custom_objects``, the registered and scoped custom objects,
    then the built-in metrics; mirrors ``tf.keras.metrics.deserialize``."""
    # the abstract bases are no metric by name (a dict may name MeanMetricWrapper with its fn)
    return deserialize_keras_object(config,
                                    module_objects=_BY_NAME if isinstance(config, dict)
                                    else _BY_PLAIN_NAME,
                                    custom_objects=custom_objects,
                                    printable_module_name="metric function")


def get(identifier):
    """A metric from a name (``get("accuracy") is accuracy``; class names give an instance), a
    ``serialize`` dict, a ``Metric`` or a callable; None gives None (``tf.keras.metrics.get``)."""
    return get_object(identifier, deserialize, "metric")
