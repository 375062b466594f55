"""Loss functions (``tt.losses.mean_squared_error`` ...): per-sample values, reduced over the
last axis, as ``tf.keras.losses``'s function forms (TF 2.4 formulas and epsilon 1e-7).

Predictions in float16/bfloat16 (or integers) are cast to float32 first, float64 stays float64;
targets are cast to the predictions' compute dtype. If the ranks of ``y_true`` and ``y_pred``
differ by one and the larger has a trailing dimension of 1, the smaller gets one too (Keras 3's
rule); the shapes must then be equal, else ValueError naming the loss and both shapes.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp
from tnp.extend import array_module, backend_update as _backend_update, device_of, \
    effect as _effect, is_floating
from tnp.extend import tracing as _tracing

from .. import activations as _act
from ._values import backend_on, reads_free
from ._xent import EPSILON, compute_dtype, crossentropy

__all__ = ["mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "huber", "log_cosh", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "kl_divergence", "poisson",
           "hinge", "squared_hinge", "categorical_hinge", "cosine_similarity",
           "mse", "MSE", "mae", "MAE", "mape", "MAPE", "msle", "MSLE", "kld", "KLD",
           "kullback_leibler_divergence", "logcosh", "bce", "BCE", "huber_loss"]


def _arr(x):
    return x if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def on_device_of(y_true, y_pred):
    """``y_true`` as a tnp array on ``y_pred``'s device (host data copied there, as tnp moves
    NumPy values that meet a tnp array)."""
    if isinstance(y_true, tnp.ndarray):
        return y_true
    return tnp.asarray(y_true, device=y_pred.device) if isinstance(y_pred, tnp.ndarray) \
        else tnp.asarray(y_true)


def as_pred(y_pred):
    """``y_pred`` as a tnp array in its compute dtype (float32, or float64)."""
    y = _arr(y_pred)
    ct = compute_dtype(y.dtype)
    return y if y.dtype == ct else y.astype(ct)


def _prep(name, y_true, y_pred):
    y_pred = as_pred(y_pred)
    y_true = on_device_of(y_true, y_pred)
    if y_true.dtype != y_pred.dtype:
        y_true = y_true.astype(y_pred.dtype)
    return align(name, y_true, y_pred)


def match_ranks(y_true, y_pred):
    """Keras 3's rank rule without the shape check: if the ranks differ by one and the larger
    has a trailing 1, the smaller gets one too."""
    y_true = y_true if hasattr(y_true, "ndim") else _arr(y_true)
    y_pred = y_pred if hasattr(y_pred, "ndim") else _arr(y_pred)
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        y_true = y_true[..., None]
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_pred = y_pred[..., None]
    return y_true, y_pred


def match_shapes(name, y_true, y_pred):
    """Keras 3's rank rule (:func:`match_ranks`), then equal shapes or a ValueError naming
    ``name`` and the shapes (tnp or backend arrays; the metrics use it too)."""
    y_true, y_pred = match_ranks(y_true, y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"{name}: y_true of shape {tuple(y_true.shape)} and y_pred of shape "
                         f"{tuple(y_pred.shape)} are incompatible (expected equal shapes)")
    return y_true, y_pred


def align(name, y_true, y_pred):
    """:func:`match_shapes`, and inputs of at least one dimension."""
    y_true, y_pred = match_shapes(name, y_true, y_pred)
    if y_pred.ndim == 0:
        raise ValueError(f"{name}: expected inputs with at least one dimension, got scalars")
    return y_true, y_pred


def mean_squared_error(y_true, y_pred):
    """``mean((y_pred - y_true)^2, axis=-1)``; mirrors ``tf.keras.losses.mean_squared_error``."""
    y_true, y_pred = _prep("mean_squared_error", y_true, y_pred)
    return tnp.mean(tnp.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(|y_pred - y_true|, axis=-1)``; mirrors ``tf.keras.losses.mean_absolute_error``."""
    y_true, y_pred = _prep("mean_absolute_error", y_true, y_pred)
    return tnp.mean(tnp.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|(y_true - y_pred) / max(|y_true|, eps)|, axis=-1)``; mirrors
    ``tf.keras.losses.mean_absolute_percentage_error``."""
    y_true, y_pred = _prep("mean_absolute_percentage_error", y_true, y_pred)
    diff = tnp.abs((y_true - y_pred) / tnp.maximum(tnp.abs(y_true), EPSILON))
    return 100.0 * tnp.mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))^2, axis=-1)``; mirrors
    ``tf.keras.losses.mean_squared_logarithmic_error``."""
    y_true, y_pred = _prep("mean_squared_logarithmic_error", y_true, y_pred)
    a = tnp.log1p(tnp.maximum(y_pred, EPSILON))
    b = tnp.log1p(tnp.maximum(y_true, EPSILON))
    return tnp.mean(tnp.square(a - b), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Quadratic (``0.5 e^2``) for errors up to ``delta``, linear (``delta (|e| - delta / 2)``)
    beyond; mean over the last axis. Mirrors ``tf.keras.losses.huber(y_true, y_pred,
    delta=1.0)``."""
    y_true, y_pred = _prep("huber", y_true, y_pred)
    err = tnp.abs(y_pred - y_true)
    quad = tnp.minimum(err, delta)          # the part of |e| below delta
    lin = err - quad                        # the part above it
    return tnp.mean(0.5 * tnp.square(quad) + delta * lin, axis=-1)


_LOG2 = math.log(2.0)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, written ``x + softplus(-2x) - log 2`` so it
    never overflows; mirrors ``tf.keras.losses.log_cosh``."""
    y_true, y_pred = _prep("log_cosh", y_true, y_pred)
    x = y_pred - y_true
    return tnp.mean(x + _act.softplus(-2.0 * x) - _LOG2, axis=-1)


def sparse_labels(name, y_true, y_pred, axis=-1):
    """Integer class ids (int64, a backend array on ``y_pred``'s device) of ``y_pred``'s shape
    without ``axis``, and a bool mask of float labels that are not integers (None where there
    are none or, on the host, where they were refused: ValueError)."""
    if y_pred.ndim == 0:
        raise ValueError(f"{name}: predictions must have a class axis, got a scalar")
    dev = device_of(y_pred)
    if _tracing():
        return _sparse_labels_traced(name, y_true, y_pred, axis, dev)
    xp = array_module(dev)
    labels = _class_axis_dropped(name, backend_on(y_true, dev), y_pred, axis, xp)
    fractional = None
    if labels.dtype.kind not in "iub":
        fractional = xp.mod(labels, 1) != 0
        if reads_free(xp):
            if fractional.any():
                raise ValueError(f"{name}: labels must be integer class ids, got dtype "
                                 f"{labels.dtype}")
            fractional = None
        else:
            labels = xp.where(fractional, 0, labels)    # NaN cannot become an int64
    return labels.astype(_np.int64, copy=False), fractional


def _class_axis_dropped(name, labels, y_pred, axis, xp):
    """``labels`` (an array of module ``xp``) of ``y_pred``'s shape without ``axis`` (a trailing
    1 there squeezed), with an integer or float dtype; ValueError naming ``name`` otherwise."""
    ax = axis % y_pred.ndim
    if labels.ndim == y_pred.ndim and labels.shape[ax] == 1:
        labels = xp.squeeze(labels, axis=ax)
    expected = y_pred.shape[:ax] + y_pred.shape[ax + 1:]
    if labels.shape != expected:
        raise ValueError(f"{name}: labels of shape {labels.shape} do not match predictions of "
                         f"shape {tuple(y_pred.shape)} (expected labels of shape {expected})")
    if labels.dtype.kind not in "iub" and not is_floating(labels.dtype):
        raise ValueError(f"{name}: labels must be integer class ids, got dtype {labels.dtype}")
    return labels


def _sparse_labels_traced(name, y_true, y_pred, axis, dev):
    """:func:`sparse_labels` in a function being compiled: the labels as a (traced) tnp array;
    the checks of their values run at every call of the compiled function (an effect), with
    the eager call's errors."""
    labels = tnp.asarray(y_true, device=dev) if not isinstance(y_true, tnp.ndarray) else y_true
    labels = _class_axis_dropped(name, labels, y_pred, axis, tnp)
    if labels.dtype.kind not in "iub":
        _effect(_refuse_fractional, name, labels)
    return labels.astype(_np.int64, copy=False), None


def _refuse_fractional(name, labels):
    if bool(tnp.any(tnp.mod(labels, 1) != 0)):
        raise ValueError(f"{name}: labels must be integer class ids, got dtype {labels.dtype}")


def _check_range(name, xp, labels, n_classes, valid, bad=None):
    """ValueError naming a label outside ``[0, n_classes)`` among the ``valid`` ones, where
    ``xp``'s values can be read for free; on a device, the mask of such entries (joined with
    ``bad``). In a function being compiled, the check runs at every call (an effect)."""
    if isinstance(labels, tnp.ndarray) and _tracing():
        # one node of the program, on the run's backend arrays (nothing written)
        _backend_update(_check_range_now, (name, labels, n_classes, valid), writes=())
        return bad
    out = (labels < 0) | (labels >= n_classes)
    if valid is not None:
        out &= valid
    if not reads_free(xp):
        return out if bad is None else out | bad
    if out.any():
        raise ValueError(f"{name}: label {int(labels[out].flat[0])} is out of range for "
                         f"{n_classes} classes (expected 0 <= label < {n_classes})")
    return bad


def _check_range_now(name, labels, n_classes, valid):
    # a compiled step's check, on NumPy arrays: integer labels in one comparison (a negative
    # label seen as unsigned is past any class count)
    if valid is None and type(labels) is _np.ndarray:
        unsigned = _UNSIGNED.get(labels.dtype)
        if unsigned is not None and not (labels.view(unsigned) >= n_classes).any():
            return
    _check_range(name, _np, labels, n_classes, valid)


_UNSIGNED = {_np.dtype(t): _np.dtype(u) for t, u in (("int64", "uint64"), ("int32", "uint32"),
                                                       ("int16", "uint16"), ("int8", "uint8"))}


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1, ignore_class=None):
    """``-log p[y_true]`` per sample; mirrors ``tf.keras.losses.sparse_categorical_crossentropy
    (y_true, y_pred, from_logits=False, axis=-1)`` (``ignore_class`` from Keras 3: entries with
    that label get loss 0). One tape node. Labels outside the classes (or fractional) raise
    ValueError on the CPU; on a GPU their loss and gradient are NaN, as TF's there."""
    name = "sparse_categorical_crossentropy"
    y_pred = _arr(y_pred)
    labels, bad = sparse_labels(name, y_true, y_pred, axis)
    valid = None if ignore_class is None else labels != ignore_class
    bad = _check_range(name, array_module(y_pred), labels, y_pred.shape[axis], valid, bad)
    if not is_floating(y_pred.dtype):
        y_pred = y_pred.astype("float32")
    return crossentropy(y_pred, labels, sparse=True, from_logits=from_logits, axis=axis,
                        valid=valid, bad=bad)


def _check_smoothing(name, label_smoothing):
    if not 0 <= label_smoothing <= 1:
        raise ValueError(f"{name}: label_smoothing must be in [0, 1], got {label_smoothing}")
    return float(label_smoothing)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """``-sum(y_true * log p, axis)`` per sample; mirrors
    ``tf.keras.losses.categorical_crossentropy(y_true, y_pred, from_logits=False,
    label_smoothing=0, axis=-1)``. One tape node."""
    name = "categorical_crossentropy"
    ls = _check_smoothing(name, label_smoothing)
    y_pred = _arr(y_pred)
    if not is_floating(y_pred.dtype):
        y_pred = y_pred.astype("float32")
    y_true = on_device_of(y_true, y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"{name}: y_true of shape {tuple(y_true.shape)} and y_pred of shape "
                         f"{tuple(y_pred.shape)} are incompatible (expected equal shapes)")
    if y_pred.ndim == 0:
        raise ValueError(f"{name}: predictions must have a class axis, got a scalar")
    return crossentropy(y_pred, y_true, sparse=False, from_logits=from_logits, axis=axis,
                        smoothing=ls)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Mean over ``axis`` of ``-(t log p + (1 - t) log(1 - p))``; mirrors
    ``tf.keras.losses.binary_crossentropy(y_true, y_pred, from_logits=False,
    label_smoothing=0)`` (``axis`` from Keras 3). Labels are smoothed towards 0.5."""
    name = "binary_crossentropy"
    ls = _check_smoothing(name, label_smoothing)
    if not from_logits:
        # a sigmoid output: from its logits, as Keras (see activations.logits_of)
        known = _act.logits_of(y_pred, "sigmoid")
        if known is not None and tuple(known[0].shape) == tuple(y_pred.shape):
            y_pred, from_logits = known[0], True
    y_true, y_pred = _prep(name, y_true, y_pred)
    if ls:
        y_true = y_true * (1.0 - ls) + 0.5 * ls
    if from_logits:
        # t softplus(-x) + (1 - t) softplus(x) = softplus(x) - t x
        per = _act.softplus(y_pred) - y_true * y_pred
    else:
        p = tnp.clip(y_pred, EPSILON, 1.0 - EPSILON)
        per = -(y_true * tnp.log(p + EPSILON) + (1.0 - y_true) * tnp.log(1.0 - p + EPSILON))
    return tnp.mean(per, axis=axis)


def kl_divergence(y_true, y_pred):
    """``sum(t log(t / p), axis=-1)`` with both clipped to [eps, 1]; mirrors
    ``tf.keras.losses.kl_divergence``."""
    y_true, y_pred = _prep("kl_divergence", y_true, y_pred)
    t = tnp.clip(y_true, EPSILON, 1.0)
    p = tnp.clip(y_pred, EPSILON, 1.0)
    return tnp.sum(t * tnp.log(t / p), axis=-1)


def poisson(y_true, y_pred):
    """``mean(p - t log(p + eps), axis=-1)``; mirrors ``tf.keras.losses.poisson``."""
    y_true, y_pred = _prep("poisson", y_true, y_pred)
    return tnp.mean(y_pred - y_true * tnp.log(y_pred + EPSILON), axis=-1)


def _signed_labels(y_true):
    """Labels in {0, 1} become {-1, 1}, as Keras's hinge losses do; others are kept. Decided on
    the labels' device (Keras's ``smart_cond``), never by a host read."""
    binary = tnp.all((y_true == 0) | (y_true == 1))
    return tnp.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    """``mean(max(1 - t p, 0), axis=-1)`` (labels 0/1 read as -1/1); mirrors
    ``tf.keras.losses.hinge``."""
    y_true, y_pred = _prep("hinge", y_true, y_pred)
    return tnp.mean(tnp.maximum(1.0 - _signed_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(max(1 - t p, 0)^2, axis=-1)`` (labels 0/1 read as -1/1); mirrors
    ``tf.keras.losses.squared_hinge``."""
    y_true, y_pred = _prep("squared_hinge", y_true, y_pred)
    return tnp.mean(tnp.square(tnp.maximum(1.0 - _signed_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """``max(0, max((1 - t) p) - sum(t p) + 1)`` along the last axis; mirrors
    ``tf.keras.losses.categorical_hinge``."""
    y_true, y_pred = _prep("categorical_hinge", y_true, y_pred)
    pos = tnp.sum(y_true * y_pred, axis=-1)
    neg = tnp.max((1.0 - y_true) * y_pred, axis=-1)
    return tnp.maximum(neg - pos + 1.0, 0.0)


def _l2_normalize(x, axis):
    return x / tnp.sqrt(tnp.maximum(tnp.sum(tnp.square(x), axis=axis, keepdims=True), 1e-12))


def cosine_similarity(y_true, y_pred, axis=-1):
    """``-sum(normalize(t) * normalize(p), axis)``: -1 for aligned vectors, so minimising it
    aligns them; mirrors ``tf.keras.losses.cosine_similarity(y_true, y_pred, axis=-1)``."""
    y_true, y_pred = _prep("cosine_similarity", y_true, y_pred)
    return -tnp.sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


# TF 2.4's aliases
bce = BCE = binary_crossentropy
huber_loss = huber
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
