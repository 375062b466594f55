"""Losses (``tt.losses``), mirroring ``tf.keras.losses`` (TF 2.4 names, signatures, defaults and
reductions; ``axis`` and ``ignore_class`` arguments from later Keras).

A ``Loss`` reduces the per-sample values of its function form: ``"auto"`` and
``"sum_over_batch_size"`` take the (weighted) sum divided by the number of per-sample values
(TF 2.4's ``SUM_OVER_BATCH_SIZE``), ``"sum"`` the sum, ``"none"`` returns them. Losses compute in
float32 (float64 for float64 predictions); float16/bfloat16 predictions are cast up first.

Speed: ``CategoricalCrossentropy`` and ``SparseCategoricalCrossentropy`` (and their function
forms) compute loss, weights and reduction as ONE tape node with a hand-written backward, in
the array module of the predictions' device; the other losses are tnp code that the tape
differentiates. Nothing reads the predictions back to the host.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import array_module, device_of, is_floating as _is_floating, wrap
from tnp.extend import tracing as _tracing

from ..utils.lazy import LazyModule
from ..utils.naming import snake_case
from ..utils.serialization import deserialize_keras_object, get_object, serialize_keras_object
from . import functions as _f
from ._values import reads_free
from ._weights import broadcast_weights
from ._xent import compute_dtype, crossentropy
from .functions import __all__ as _function_names
from .functions import (  # noqa: F401  (the function forms and TF 2.4's aliases)
    BCE, KLD, MAE, MAPE, MSE, MSLE, bce, binary_crossentropy, categorical_crossentropy,
    categorical_hinge, cosine_similarity, hinge, huber, huber_loss, kl_divergence, kld,
    kullback_leibler_divergence, log_cosh, logcosh, mae, mape, mean_absolute_error, mean_absolute_percentage_error, mean_squared_error,
    mean_squared_logarithmic_error, mse, msle, poisson, sparse_categorical_crossentropy,
    squared_hinge)

_distribute_lib = LazyModule("tnp_train.distribute.distribute_lib")

__all__ = ["Reduction", "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Huber", "LogCosh",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "BinaryCrossentropy",
           "KLDivergence", "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge",
           "CosineSimilarity", "get", "serialize", "deserialize"] + list(_function_names)


class Reduction:
    """The reduction names (``tf.keras.losses.Reduction``)."""
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key, who="Loss"):
        if key not in cls.all():
            raise ValueError(f"{who}: invalid reduction {key!r}; expected one of {cls.all()}")


class Loss:
    """Base class; mirrors ``tf.keras.losses.Loss(reduction="auto", name=None)``. Subclasses
    implement ``call(y_true, y_pred)`` returning per-sample values; ``loss(y_true, y_pred,
    sample_weight=None)`` weights and reduces them."""

    def __init__(self, reduction="auto", name=None):
        Reduction.validate(reduction, type(self).__name__)
        self.reduction = reduction
        self.name = name or snake_case(type(self).__name__)

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__}.call must be implemented")

    def __call__(self, y_true, y_pred, sample_weight=None):
        return self._reduce(self.call(y_true, y_pred), sample_weight)

    # compile's losses container sets this on the losses it holds (as TF's does): Model.fit
    # scales their per-replica means for the all-reduce itself
    _allow_sum_over_batch_size = False

    def _get_reduction(self):
        """The reduction to apply; TF's refusal of a per-replica mean under a strategy.

        Outside compile's losses, a mean over each replica's rows, differentiated and summed
        across N replicas by the all-reduce, gives N times the gradient of the global batch's
        mean: the doubled gradient TF 2.4 raises for, and so does this."""
        reduction = self.reduction
        if reduction in ("auto", "sum_over_batch_size") and not self._allow_sum_over_batch_size:
            strategy = _distribute_lib.get_strategy_if_any()
            if strategy is not None:
                raise ValueError(
                    f"{self.name}: reduction={reduction!r} is a mean over each replica's rows, "
                    f"and under {type(strategy).__name__} ({strategy.num_replicas_in_sync} "
                    f"replica(s)) the replicas' gradients are summed, which would scale the "
                    f"gradient by the number of replicas. Outside the losses given to "
                    f"Model.compile for fit/evaluate, use reduction='none' and "
                    f"tt.nn.compute_average_loss(per_example_loss, global_batch_size=...) (or "
                    f"reduction='sum' divided by the global batch size), as TF requires "
                    f"(see docs/distributed.md)")
        return reduction

    def _reduce(self, per, sample_weight):
        reduction = self._get_reduction()
        per = per if isinstance(per, tnp.ndarray) else tnp.asarray(per)
        if not _is_floating(per.dtype):
            per = per.astype("float32")
        if sample_weight is not None:
            dev = device_of(per)
            w = broadcast_weights(self.name, sample_weight, per.shape, per.dtype, device=dev)
            per = per * (w if isinstance(w, tnp.ndarray) else wrap(w, dev))   # (traced: tnp)
        if reduction == "none":
            return per
        if reduction == "sum" or per.size == 0:
            return tnp.sum(per)
        return tnp.mean(per)

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, reduction={self.reduction}>"


def _divisor(reduction, size):
    if reduction == "none":
        return None
    if reduction == "sum":
        return 1.0
    return float(size)


class LossFunctionWrapper(Loss):
    """A ``Loss`` from a function form: ``fn(y_true, y_pred, **kwargs)`` gives per-sample
    values; mirrors ``tf.keras.losses.LossFunctionWrapper``."""

    def __init__(self, fn, reduction="auto", name=None, **kwargs):
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None))
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        if self.fn not in _ALIGNING:
            # a user's function: ranks one apart with a trailing 1 are aligned first (the rule
            # the built-in functions apply), never broadcast to (batch, batch)
            y_true, y_pred = _f.match_ranks(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None):
        if self.fn is _f.sparse_categorical_crossentropy:
            return self._sparse_xent(y_true, y_pred, sample_weight, **self._fn_kwargs)
        if self.fn is _f.categorical_crossentropy:
            return self._xent(y_true, y_pred, sample_weight, **self._fn_kwargs)
        return super().__call__(y_true, y_pred, sample_weight)

    # the cross-entropies: per-sample values, weights and reduction in one tape node
    def _sparse_xent(self, y_true, y_pred, sample_weight, from_logits=False, axis=-1,
                     ignore_class=None):
        y_pred = y_pred if isinstance(y_pred, tnp.ndarray) else tnp.asarray(y_pred)
        if not _is_floating(y_pred.dtype):
            y_pred = y_pred.astype("float32")
        reduction = self._get_reduction()
        labels, bad = _f.sparse_labels(self.name, y_true, y_pred, axis)
        xp = array_module(y_pred)
        valid = None if ignore_class is None else labels != ignore_class
        bad = _f._check_range(self.name, xp, labels, y_pred.shape[axis], valid, bad)
        ct = compute_dtype(y_pred.dtype)
        weights = None if sample_weight is None else \
            broadcast_weights(self.name, sample_weight, labels.shape, ct, device=device_of(y_pred))
        if valid is None:
            divisor = _divisor(reduction, labels.size)
        elif reduction in ("none", "sum"):
            divisor = _divisor(reduction, 0)
        else:
            # Keras 3: ignored entries don't count; their number stays on the device
            count = valid.sum()
            divisor = float(count) if reads_free(xp) and not _tracing() else count
        return crossentropy(y_pred, labels, sparse=True, from_logits=from_logits, axis=axis,
                            weights=weights, divisor=divisor, valid=valid, bad=bad)

    def _xent(self, y_true, y_pred, sample_weight, from_logits=False, label_smoothing=0.0, axis=-1):
        reduction = self._get_reduction()
        ls = _f._check_smoothing(self.name, label_smoothing)
        y_pred = y_pred if isinstance(y_pred, tnp.ndarray) else tnp.asarray(y_pred)
        if not _is_floating(y_pred.dtype):
            y_pred = y_pred.astype("float32")
        y_true = _f.on_device_of(y_true, y_pred)
        if y_true.shape != y_pred.shape or y_pred.ndim == 0:
            raise ValueError(f"{self.name}: y_true of shape {tuple(y_true.shape)} and y_pred of "
                             f"shape {tuple(y_pred.shape)} are incompatible (expected equal "
                             f"shapes with a class axis)")
        per_shape = y_pred.shape[:axis % y_pred.ndim] + y_pred.shape[axis % y_pred.ndim + 1:]
        ct = compute_dtype(y_pred.dtype)
        weights = None if sample_weight is None else \
            broadcast_weights(self.name, sample_weight, per_shape, ct, device=device_of(y_pred))
        return crossentropy(y_pred, y_true, sparse=False, from_logits=from_logits, axis=axis,
                            smoothing=ls, weights=weights,
                            divisor=_divisor(reduction, int(_np.prod(per_shape))))

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


# the function forms that align ranks themselves (the sparse ones must not be expanded)
_ALIGNING = frozenset(getattr(_f, n) for n in _function_names)


class _Wrapped(LossFunctionWrapper):
    """A named loss class: ``_fn`` and the constructor's own keyword arguments."""
    _fn = None

    def __init__(self, reduction="auto", name=None, **kwargs):
        super().__init__(type(self)._fn, reduction=reduction, name=name, **kwargs)

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name, **self._fn_kwargs}


def _plain(class_name, fn):
    """The class ``tf.keras.losses.<class_name>`` of a function form without arguments of its
    own, with Keras's signature ``(reduction="auto", name=fn.__name__)``."""
    def __init__(self, reduction="auto", name=fn.__name__):
        _Wrapped.__init__(self, reduction, name)

    __init__.__qualname__ = f"{class_name}.__init__"
    doc = f'Mirrors ``tf.keras.losses.{class_name}(reduction="auto", name="{fn.__name__}")``.'
    return type(class_name, (_Wrapped,), {"__doc__": doc, "__module__": __name__,
                                          "__qualname__": class_name, "__init__": __init__,
                                          "_fn": staticmethod(fn)})


MeanSquaredError = _plain("MeanSquaredError", _f.mean_squared_error)
MeanAbsoluteError = _plain("MeanAbsoluteError", _f.mean_absolute_error)
MeanAbsolutePercentageError = _plain("MeanAbsolutePercentageError",
                                     _f.mean_absolute_percentage_error)
MeanSquaredLogarithmicError = _plain("MeanSquaredLogarithmicError",
                                     _f.mean_squared_logarithmic_error)
LogCosh = _plain("LogCosh", _f.log_cosh)
KLDivergence = _plain("KLDivergence", _f.kl_divergence)
Poisson = _plain("Poisson", _f.poisson)
Hinge = _plain("Hinge", _f.hinge)
SquaredHinge = _plain("SquaredHinge", _f.squared_hinge)
CategoricalHinge = _plain("CategoricalHinge", _f.categorical_hinge)


class Huber(_Wrapped):
    """Mirrors ``tf.keras.losses.Huber(delta=1.0, reduction="auto", name="huber_loss")``."""
    _fn = staticmethod(_f.huber)

    def __init__(self, delta=1.0, reduction="auto", name="huber_loss"):
        if not delta >= 0:
            raise ValueError(f"Huber: delta must be non-negative, got {delta!r}")
        super().__init__(reduction, name, delta=delta)


class _Xent(_Wrapped):
    """A cross-entropy class: ``from_logits`` is one of the function form's arguments."""

    @property
    def from_logits(self):
        return self._fn_kwargs["from_logits"]


class _SmoothedXent(_Xent):
    """The cross-entropies with ``label_smoothing`` and ``axis``."""

    def __init__(self, from_logits, label_smoothing, axis, reduction, name):
        _f._check_smoothing(type(self).__name__, label_smoothing)
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class CategoricalCrossentropy(_SmoothedXent):
    """Mirrors ``tf.keras.losses.CategoricalCrossentropy(from_logits=False, label_smoothing=0,
    axis=-1, reduction="auto", name="categorical_crossentropy")``. One tape node."""
    _fn = staticmethod(_f.categorical_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="auto",
                 name="categorical_crossentropy"):
        super().__init__(from_logits, label_smoothing, axis, reduction, name)


class SparseCategoricalCrossentropy(_Xent):
    """Mirrors ``tf.keras.losses.SparseCategoricalCrossentropy(from_logits=False,
    reduction="auto", name="sparse_categorical_crossentropy")``; ``ignore_class`` (Keras 3):
    entries with that label get loss 0 and are not counted by the mean. One tape node."""
    _fn = staticmethod(_f.sparse_categorical_crossentropy)

    def __init__(self, from_logits=False, reduction="auto", name="sparse_categorical_crossentropy",
                 ignore_class=None):
        super().__init__(reduction, name, from_logits=from_logits, ignore_class=ignore_class)


class BinaryCrossentropy(_SmoothedXent):
    """Mirrors ``tf.keras.losses.BinaryCrossentropy(from_logits=False, label_smoothing=0,
    axis=-1, reduction="auto", name="binary_crossentropy")``."""
    _fn = staticmethod(_f.binary_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="auto",
                 name="binary_crossentropy"):
        super().__init__(from_logits, label_smoothing, axis, reduction, name)


class CosineSimilarity(_Wrapped):
    """Mirrors ``tf.keras.losses.CosineSimilarity(axis=-1, reduction="auto",
    name="cosine_similarity")``."""
    _fn = staticmethod(_f.cosine_similarity)

    def __init__(self, axis=-1, reduction="auto", name="cosine_similarity"):
        super().__init__(reduction, name, axis=axis)


_CLASSES = (Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Huber, LogCosh,
            CategoricalCrossentropy, SparseCategoricalCrossentropy, BinaryCrossentropy,
            KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge, CosineSimilarity)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({n: getattr(_f, n) for n in _function_names})
_MODULE_OBJECTS = {k: v for k, v in _BY_NAME.items() if v not in (Loss, LossFunctionWrapper)}


def serialize(loss):
    """A function's (registered) name, or ``{"class_name", "config"}`` for a ``Loss``; mirrors
    ``tf.keras.losses.serialize``."""
    return serialize_keras_object(loss)


def deserialize(name, custom_objects=None):
    """A loss from its name (a function form, or a class name for a default instance) or a
    ``serialize`` dict, found in ``custom_objects``, the registered and scoped custom objects,
    then the built-in losses (the abstract ``Loss``/``LossFunctionWrapper`` excepted); mirrors
    ``tf.keras.losses.deserialize``."""
    return deserialize_keras_object(name, module_objects=_MODULE_OBJECTS,
                                    custom_objects=custom_objects,
                                    printable_module_name="loss function")


def get(identifier):
    """A loss from a name, a ``serialize`` dict, a ``Loss`` or a callable; None gives None.
    As ``tf.keras.losses.get``: snake_case names give the function form
    (``get("mse") is mean_squared_error``), class names an instance."""
    return get_object(identifier, deserialize, "loss function")
