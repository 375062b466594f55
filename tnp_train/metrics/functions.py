"""Metric functions (``tt.metrics.sparse_categorical_accuracy`` ...), mirroring
``tf.keras.metrics``'s function forms (TF 2.4). They compute with the array module of the
inputs' device (metrics are not differentiated, so nothing is recorded) and return tnp float32
arrays of per-sample values on that device."""
from __future__ import annotations

import numpy as _np

from tnp.extend import array_module, is_floating, wrap

from ..losses import functions as _lf
from ..losses._values import backend_on, detached, input_device, poison, reads_free

__all__ = ["accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "cosine_similarity",
           "acc", "ACC"]


def _inputs(y_true, y_pred):
    """(y_true, y_pred as backend arrays on the predictions' device, that device, its module)."""
    dev = input_device(y_pred, y_true)
    return backend_on(y_true, dev), backend_on(y_pred, dev), dev, array_module(dev)


def _out(xp, a, device):
    return wrap(xp.asarray(a, dtype=_np.float32), device)


def align(name, y_true, y_pred):
    """Backend arrays on the predictions' device with Keras's rank rule (see ``tt.losses``),
    their device and array module; equal shapes or ValueError."""
    t, p, dev, xp = _inputs(y_true, y_pred)
    return (*_lf.match_shapes(name, t, p), dev, xp)


def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` (element-wise); mirrors ``tf.keras.metrics.accuracy``."""
    t, p, dev, xp = align("accuracy", y_true, y_pred)
    if t.dtype != p.dtype:
        p = p.astype(t.dtype)
    return _out(xp, t == p, dev)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Mean over the last axis of ``y_true == (y_pred > threshold)``; mirrors
    ``tf.keras.metrics.binary_accuracy(y_true, y_pred, threshold=0.5)``."""
    t, p, dev, xp = align("binary_accuracy", y_true, y_pred)
    if t.ndim == 0:
        raise ValueError("binary_accuracy: expected inputs with at least one dimension")
    return _out(xp, xp.mean(t == (p > threshold).astype(p.dtype), axis=-1), dev)


def _class_axis(name, p):
    if p.ndim == 0:
        raise ValueError(f"{name}: predictions must have a class axis, got a scalar")


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)`` along the last axis; mirrors
    ``tf.keras.metrics.categorical_accuracy``."""
    t, p, dev, xp = _inputs(y_true, y_pred)
    _class_axis("categorical_accuracy", p)
    if t.shape != p.shape:
        raise ValueError(f"categorical_accuracy: y_true of shape {t.shape} and y_pred of shape "
                         f"{p.shape} are incompatible (expected equal shapes)")
    return _out(xp, xp.argmax(t, axis=-1) == xp.argmax(p, axis=-1), dev)


def _labels(name, t, p):
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
    t, p, dev, xp = _inputs(y_true, y_pred)
    t = _labels("sparse_categorical_accuracy", t, p)
    return _out(xp, t == xp.argmax(p, axis=-1).astype(t.dtype, copy=False), dev)


def _in_top_k(xp, p, labels, k, name):
    """``tf.math.in_top_k``: the label's score is among the ``k`` largest (ties with the k-th
    count as in). A label outside the classes raises ValueError on the CPU; on a GPU it makes
    that entry NaN (a raise would need a host read per batch)."""
    if is_floating(labels.dtype):
        labels = labels.astype(_np.int64)
    n = p.shape[-1]
    bad = (labels < 0) | (labels >= n)
    if reads_free(xp):
        if bad.any():
            raise ValueError(f"{name}: label {int(labels[bad].flat[0])} is out of range for "
                             f"{n} classes")
        bad = None
    else:
        labels = xp.where(bad, 0, labels)
    score = xp.take_along_axis(p, labels[..., None].astype(_np.int64), axis=-1)
    greater = xp.sum(p > score, axis=-1)
    hit = ((greater < k) & xp.isfinite(score[..., 0])).astype(_np.float32)
    return hit if bad is None else poison(xp, hit, bad)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the true class (argmax of ``y_true``) is among the ``k`` highest predictions;
    mirrors ``tf.keras.metrics.top_k_categorical_accuracy(y_true, y_pred, k=5)``."""
    t, p, dev, xp = _inputs(y_true, y_pred)
    _class_axis("top_k_categorical_accuracy", p)
    if t.shape != p.shape:
        raise ValueError(f"top_k_categorical_accuracy: y_true of shape {t.shape} and y_pred of "
                         f"shape {p.shape} are incompatible (expected equal shapes)")
    return _out(xp, _in_top_k(xp, p, xp.argmax(t, axis=-1), k, "top_k_categorical_accuracy"),
                dev)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the label is among the ``k`` highest predictions; mirrors
    ``tf.keras.metrics.sparse_top_k_categorical_accuracy(y_true, y_pred, k=5)``."""
    t, p, dev, xp = _inputs(y_true, y_pred)
    t = _labels("sparse_top_k_categorical_accuracy", t, p)
    return _out(xp, _in_top_k(xp, p, t, k, "sparse_top_k_categorical_accuracy"), dev)


def cosine_similarity(y_true, y_pred, axis=-1):
    """``sum(normalize(t) * normalize(p), axis)`` (1 for aligned vectors); mirrors
    ``tf.keras.metrics.cosine_similarity``."""
    dev = input_device(y_pred, y_true)
    return -_lf.cosine_similarity(detached(y_true, dev), detached(y_pred, dev), axis=axis)


acc = ACC = accuracy
