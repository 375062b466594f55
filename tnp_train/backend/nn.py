"""Neural-network functions: activations, normalization, bias, crossentropies, dropout and
``in_top_k``."""
from __future__ import annotations

import builtins
import math

import numpy as _np

import tnp

from .. import activations as _activations
from ..utils.random import make_rng, refuse_while_tracing
from ._common import _axes, _data_format, _log_softmax, _t, symbolic_ops
from .config import epsilon

__all__ = ["batch_normalization", "bias_add", "binary_crossentropy",
           "categorical_crossentropy", "dropout", "elu", "hard_sigmoid", "in_top_k",
           "l2_normalize", "normalize_batch_in_training", "relu", "sigmoid", "softmax",
           "softplus", "softsign", "sparse_categorical_crossentropy"]


def relu(x, alpha=0.0, max_value=None, threshold=0):
    return _activations.relu(_t(x), alpha=alpha, max_value=max_value, threshold=threshold)


def elu(x, alpha=1.0):
    """ELU; an ``alpha`` other than 1 scales the negative part, as TF 2.4's backend does."""
    res = _activations.elu(_t(x))
    if alpha == 1:
        return res
    return tnp.where(_t(x) > 0, res, alpha * res)


def sigmoid(x):
    return _activations.sigmoid(_t(x))


def hard_sigmoid(x):
    return _activations.hard_sigmoid(_t(x))


def softplus(x):
    return _activations.softplus(_t(x))


def softsign(x):
    return _activations.softsign(_t(x))


def softmax(x, axis=-1):
    return _activations.softmax(_t(x), axis=axis)


def l2_normalize(x, axis=None):
    """``x / sqrt(max(sum(x**2), 1e-12))`` along ``axis`` (all axes for None)."""
    x = _t(x)
    sq = tnp.sum(tnp.square(x), axis=_axes(axis), keepdims=True)
    return x / tnp.sqrt(tnp.maximum(sq, 1e-12))


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):  # noqa: A002
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` (``beta``/``gamma`` may be None)."""
    x = _t(x)
    inv = 1.0 / tnp.sqrt(_t(var) + epsilon)
    if gamma is not None:
        inv = inv * _t(gamma)
    out = x * inv + ((-_t(mean) * inv) if beta is None else (_t(beta) - _t(mean) * inv))
    return out.astype(x.dtype)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):  # noqa: A002
    """``(normed, mean, variance)`` over ``reduction_axes``. The 4-D cases over ``[0, 1, 2]``
    or ``[0, 2, 3]`` are TF's fused batch norm: the variance returned is the unbiased one
    (the normalisation uses the biased one) and epsilon is at least 1.001e-5."""
    x = _t(x)
    axes = tuple(reduction_axes)
    m = tnp.mean(x, axis=axes)
    v = tnp.var(x, axis=axes)
    bshape = [1 if i in axes else x.shape[i] for i in range(x.ndim)]

    def b(t):
        return None if t is None else tnp.reshape(_t(t), bshape)

    fused = x.ndim == 4 and list(axes) in ([0, 1, 2], [0, 2, 3])
    eps = builtins.max(epsilon, 1.001e-5) if fused else epsilon
    normed = batch_normalization(x, tnp.reshape(m, bshape), tnp.reshape(v, bshape), b(beta),
                                 b(gamma), epsilon=eps)
    if fused:
        n = math.prod(x.shape[i] for i in axes)
        v = v * (n / builtins.max(n - 1, 1))
    return normed, m, v


def bias_add(x, bias, data_format=None):
    """``x + bias`` along the channels (a bias of ``ndim(x) - 1`` dimensions covers every
    non-batch axis; with channels_first TF 2.4 reshapes it, last axis first)."""
    x, bias = _t(x), _t(bias)
    first = _data_format(data_format) == "channels_first"
    if bias.ndim not in (1, x.ndim - 1):
        raise ValueError(f"Unexpected bias dimensions {bias.ndim}, expect to be 1 or "
                         f"{x.ndim - 1} dimensions")
    if bias.ndim == 1:
        if first:
            return x + tnp.reshape(bias, (1, -1) + (1,) * (x.ndim - 2))
        return x + bias
    if first:
        # TF 2.4 reshapes (not transposes) the bias to (1, channels, spatial...)
        return x + tnp.reshape(bias, (1, bias.shape[-1]) + tuple(bias.shape[:-1]))
    return x + tnp.expand_dims(bias, 0)


def binary_crossentropy(target, output, from_logits=False):
    """Element-wise binary crossentropy; probabilities are clipped to ``[eps, 1 - eps]`` and
    ``eps`` is added inside the logs, as in TF 2.4."""
    target, output = _t(target), _t(output)
    if from_logits:
        # sigmoid_cross_entropy_with_logits, the stable form
        return (tnp.maximum(output, 0) - output * target
                + tnp.log1p(tnp.exp(-tnp.abs(output))))
    eps = epsilon()
    output = tnp.clip(output, eps, 1 - eps).astype(output.dtype)
    bce = target * tnp.log(output + eps) + (1 - target) * tnp.log(1 - output + eps)
    return -bce


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Crossentropy along ``axis``; probabilities are renormalised to sum to 1, then clipped
    to ``[eps, 1 - eps]``."""
    target, output = _t(target), _t(output)
    if target.shape != output.shape:
        raise ValueError(f"Shapes {target.shape} and {output.shape} are incompatible")
    if from_logits:
        return -tnp.sum(target * _log_softmax(output, axis), axis=axis)
    output = output / tnp.sum(output, axis=axis, keepdims=True)
    eps = epsilon()
    output = tnp.clip(output, eps, 1 - eps).astype(output.dtype)
    return -tnp.sum(target * tnp.log(output), axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Crossentropy against integer targets; probabilities are clipped to ``[eps, 1 - eps]``
    and then (TF 2.4's log-softmax of their logs) renormalised."""
    target, output = _t(target), _t(output)
    axis = axis % output.ndim
    if axis != output.ndim - 1:
        output = tnp.moveaxis(output, axis, -1)
    if not from_logits:
        eps = epsilon()
        output = tnp.log(tnp.clip(output, eps, 1 - eps).astype(output.dtype))
    logp = _log_softmax(output, -1)
    labels = tnp.reshape(target.astype("int64"), output.shape[:-1])
    if labels.size and (int(tnp.min(labels)) < 0 or int(tnp.max(labels)) >= output.shape[-1]):
        raise ValueError(f"sparse_categorical_crossentropy: received a label value outside "
                         f"the valid range [0, {output.shape[-1]})")
    onehot = (tnp.expand_dims(labels, -1) == tnp.arange(output.shape[-1])).astype(logp.dtype)
    return -tnp.sum(onehot * logp, axis=-1)


def dropout(x, level, noise_shape=None, seed=None):
    """Zeroes a fraction ``level`` of ``x`` and scales the rest by ``1 / (1 - level)``."""
    x = _t(x)
    if not 0 <= level < 1:
        raise ValueError(f"dropout: rate must be a scalar tensor or a float in the range "
                         f"[0, 1), got {level}")
    refuse_while_tracing("tt.keras.backend.dropout")
    rng = make_rng(seed)
    keep = rng.random(tuple(x.shape if noise_shape is None else noise_shape)) >= level
    scale = tnp.asarray(keep / (1 - level), dtype=x.dtype)
    return x * scale


def in_top_k(predictions, targets, k):
    """Whether each target's prediction is among the ``k`` largest of its row (ties at the
    boundary count as in; a non-finite prediction or an index out of range is never in)."""
    p = _np.asarray(predictions, dtype=_np.float64)
    t = _np.asarray(targets).astype(_np.int64)
    n, c = p.shape
    ok = (t >= 0) & (t < c)
    tp = p[_np.arange(n), _np.clip(t, 0, c - 1)]
    finite = _np.isfinite(p).all(axis=1)
    out = ok & finite & ((p > tp[:, None]).sum(axis=1) < k)
    return tnp.asarray(out)


symbolic_ops(globals())
