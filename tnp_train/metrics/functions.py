"""Metric functions (``tt.metrics.sparse_categorical_accuracy`` ...), mirroring
``tf.keras.metrics``'s function forms (TF 2.4). They compute in NumPy on the values (metrics
are not differentiated) and return tnp float32 arrays of per-sample values."""
from __future__ import annotations

import numpy as _np

import tnp

from ..losses import functions as _lf
from .base import values_of

__all__ = ["accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "cosine_similarity",
           "acc", "ACC"]


def _out(a):
    return tnp.asarray(_np.asarray(a, dtype=_np.float32))


def align(name, y_true, y_pred):
    """NumPy values with Keras's rank rule (see ``tt.losses``); equal shapes or ValueError."""
    t, p = values_of(y_true), values_of(y_pred)
    if p.ndim == t.ndim + 1 and p.shape[-1] == 1:
        t = t[..., None]
    elif t.ndim == p.ndim + 1 and t.shape[-1] == 1:
        p = p[..., None]
    if t.shape != p.shape:
        raise ValueError(f"{name}: y_true of shape {t.shape} and y_pred of shape {p.shape} are "
                         f"incompatible (expected equal shapes)")
    return t, p


def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` (element-wise); mirrors ``tf.keras.metrics.accuracy``."""
    t, p = align("accuracy", y_true, y_pred)
    if t.dtype != p.dtype:
        p = p.astype(t.dtype)
    return _out(t == p)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Mean over the last axis of ``y_true == (y_pred > threshold)``; mirrors
    ``tf.keras.metrics.binary_accuracy(y_true, y_pred, threshold=0.5)``."""
    t, p = align("binary_accuracy", y_true, y_pred)
    if t.ndim == 0:
        raise ValueError("binary_accuracy: expected inputs with at least one dimension")
    return _out(_np.mean(t == (p > threshold).astype(p.dtype), axis=-1))


def _class_axis(name, p):
    if p.ndim == 0:
        raise ValueError(f"{name}: predictions must have a class axis, got a scalar")


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)`` along the last axis; mirrors
    ``tf.keras.metrics.categorical_accuracy``."""
    t, p = values_of(y_true), values_of(y_pred)
    _class_axis("categorical_accuracy", p)
    if t.shape != p.shape:
        raise ValueError(f"categorical_accuracy: y_true of shape {t.shape} and y_pred of shape "
                         f"{p.shape} are incompatible (expected equal shapes)")
    return _out(_np.argmax(t, axis=-1) == _np.argmax(p, axis=-1))


def _labels(name, y_true, p):
    t = values_of(y_true)
    _class_axis(name, p)
    if t.ndim == p.ndim and t.shape[-1] == 1:
        t = t[..., 0]
    if t.shape != p.shape[:-1]:
        raise ValueError(f"{name}: labels of shape {t.shape} do not match predictions of shape "
                         f"{p.shape} (expected labels of shape {p.shape[:-1]})")
    return t


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where ``y_true == argmax(y_pred)``; mirrors
    ``tf.keras.metrics.sparse_categorical_accuracy`` (labels of shape ``(batch,)`` or
    ``(batch, 1)``)."""
    p = values_of(y_pred)
    t = _labels("sparse_categorical_accuracy", y_true, p)
    return _out(t == _np.argmax(p, axis=-1).astype(t.dtype, copy=False))


def _in_top_k(p, labels, k, name):
    """``tf.math.in_top_k``: the label's score is among the ``k`` largest (ties with the k-th
    count as in)."""
    labels = _np.asarray(labels)
    if labels.dtype.kind == "f":
        labels = labels.astype(_np.int64)
    n = p.shape[-1]
    bad = (labels < 0) | (labels >= n)
    if bad.any():
        raise ValueError(f"{name}: label {int(labels[bad].flat[0])} is out of range for {n} classes")
    score = _np.take_along_axis(p, labels[..., None].astype(_np.int64), axis=-1)
    greater = _np.sum(p > score, axis=-1)
    return (greater < k) & _np.isfinite(score[..., 0])


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the true class (argmax of ``y_true``) is among the ``k`` highest predictions;
    mirrors ``tf.keras.metrics.top_k_categorical_accuracy(y_true, y_pred, k=5)``."""
    t, p = values_of(y_true), values_of(y_pred)
    _class_axis("top_k_categorical_accuracy", p)
    if t.shape != p.shape:
        raise ValueError(f"top_k_categorical_accuracy: y_true of shape {t.shape} and y_pred of "
                         f"shape {p.shape} are incompatible (expected equal shapes)")
    return _out(_in_top_k(p, _np.argmax(t, axis=-1), k, "top_k_categorical_accuracy"))


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the label is among the ``k`` highest predictions; mirrors
    ``tf.keras.metrics.sparse_top_k_categorical_accuracy(y_true, y_pred, k=5)``."""
    p = values_of(y_pred)
    t = _labels("sparse_top_k_categorical_accuracy", y_true, p)
    return _out(_in_top_k(p, t, k, "sparse_top_k_categorical_accuracy"))


def cosine_similarity(y_true, y_pred, axis=-1):
    """``sum(normalize(t) * normalize(p), axis)`` (1 for aligned vectors); mirrors
    ``tf.keras.metrics.cosine_similarity``."""
    return -_lf.cosine_similarity(values_of(y_true), values_of(y_pred), axis=axis)


acc = ACC = accuracy
