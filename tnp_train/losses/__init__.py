"""Losses (``tt.losses``) with Keras's names, defaults and reduction (TF 2.4: the mean over the
batch, ``SUM_OVER_BATCH_SIZE``). They compute in float32 or wider, as Keras does."""
from __future__ import annotations

import numpy as _np

import tnp

from ..autodiff import stop_gradient

__all__ = ["Loss", "SparseCategoricalCrossentropy", "sparse_categorical_crossentropy", "get"]

_REDUCTIONS = ("auto", "sum_over_batch_size", "sum", "none")


class Loss:
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` reduces the per-sample values
    returned by ``call``."""

    def __init__(self, reduction="auto", name=None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, "
                             f"got {reduction!r}")
        self.reduction = reduction
        self.name = name or type(self).__name__

    def call(self, y_true, y_pred):
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None):
        per_sample = self.call(y_true, y_pred)
        if sample_weight is not None:
            per_sample = per_sample * tnp.asarray(sample_weight, dtype=per_sample.dtype)
        if self.reduction == "none":
            return per_sample
        if self.reduction == "sum":
            return tnp.sum(per_sample)
        return tnp.mean(per_sample) if per_sample.size else tnp.sum(per_sample)

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}


def _float(x):
    if not isinstance(x, tnp.ndarray):
        x = tnp.asarray(x)
    return x if x.dtype in (_np.float32, _np.float64) else x.astype("float32")


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """Per-sample ``-log p[y_true]``; mirrors ``tf.keras.losses.sparse_categorical_crossentropy``."""
    y_pred = _float(y_pred)
    labels = y_true if isinstance(y_true, tnp.ndarray) else tnp.asarray(y_true)
    if labels.ndim == y_pred.ndim:  # (batch, 1) labels, as Keras accepts
        labels = tnp.squeeze(labels, axis=-1)
    if labels.shape != y_pred.shape[:-1]:
        raise ValueError(f"sparse_categorical_crossentropy: labels of shape {labels.shape} do not "
                         f"match predictions of shape {y_pred.shape}")
    idx = tnp.expand_dims(labels.astype("int64", copy=False), -1)
    if from_logits:
        # the shift by the maximum changes no gradient: taken from an untracked copy, it is
        # not recorded at all
        z = y_pred - tnp.max(stop_gradient(y_pred), axis=axis, keepdims=True)
        lse = tnp.log(tnp.sum(tnp.exp(z), axis=axis, keepdims=True))
        return (lse - tnp.take_along_axis(z, idx, axis=axis))[..., 0]
    eps = float(_np.finfo(y_pred.dtype).eps) if y_pred.dtype != _np.float32 else 1e-7
    p = tnp.clip(y_pred / tnp.sum(y_pred, axis=axis, keepdims=True), eps, 1 - eps)
    return -tnp.log(tnp.take_along_axis(p, idx, axis=axis))[..., 0]


class SparseCategoricalCrossentropy(Loss):
    """Mirrors ``tf.keras.losses.SparseCategoricalCrossentropy(from_logits=False)``."""

    def __init__(self, from_logits=False, reduction="auto", name="sparse_categorical_crossentropy"):
        super().__init__(reduction=reduction, name=name)
        self.from_logits = from_logits

    def call(self, y_true, y_pred):
        return sparse_categorical_crossentropy(y_true, y_pred, from_logits=self.from_logits)

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}


def get(identifier):
    if isinstance(identifier, Loss) or callable(identifier):
        return identifier
    if identifier == "sparse_categorical_crossentropy":
        return SparseCategoricalCrossentropy()
    raise ValueError(f"Unknown loss: {identifier!r}")
