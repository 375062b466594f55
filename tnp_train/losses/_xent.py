"""Softmax / categorical cross-entropy as ONE tape node (it runs in every training step).

``crossentropy(...)`` computes the per-sample losses, the sample weights and the reduction in
NumPy inside a ``tt.custom_gradient`` op; its backward is written in NumPy too
(``(softmax - onehot) * g / batch`` for logits). When a tape is recording during that backward
(a second-order gradient), the backward instead differentiates the plain tnp formulation with a
nested tape, so higher-order gradients stay exact.
"""
from __future__ import annotations

import numpy as _np

import tnp

from ..activations import tape_is_recording
from ..autodiff import GradientTape, custom_gradient, stop_gradient

EPSILON = 1e-7  # tf.keras.backend.epsilon()


def compute_dtype(dtype):
    """Losses compute in float64 for float64 predictions, float32 otherwise (Keras casts
    float16/bfloat16 predictions up)."""
    return _np.dtype(_np.float64) if dtype == _np.float64 else _np.dtype(_np.float32)


# ---------------------------------------------------------------------- plain tnp formulation
def _plain(pred, target, *, sparse, from_logits, axis, smoothing, weights, divisor, onehot=None):
    """The same loss as :func:`crossentropy`, in tnp operations (pred and target already on the
    last axis); used for higher-order gradients."""
    ct = compute_dtype(pred.dtype)
    z = pred.astype(ct) if pred.dtype != ct else pred
    if from_logits:
        z = z - tnp.max(stop_gradient(z), axis=-1, keepdims=True)
        logq = z - tnp.log(tnp.sum(tnp.exp(z), axis=-1, keepdims=True))
    else:
        q = z / tnp.sum(z, axis=-1, keepdims=True)
        logq = tnp.log(tnp.clip(q, EPSILON, 1 - EPSILON))
    if sparse:
        t = tnp.asarray(onehot)
    else:
        t = target.astype(ct) if target.dtype != ct else target
        if smoothing:
            t = t * (1 - smoothing) + smoothing / t.shape[-1]
    per = -tnp.sum(t * logq, axis=-1)
    if weights is not None:
        per = per * tnp.asarray(weights)
    if divisor is None:
        return per
    return tnp.sum(per) / divisor if divisor else tnp.sum(per) * 0


def crossentropy(pred, target, *, sparse, from_logits, axis=-1, smoothing=0.0, weights=None,
                 divisor=None, valid=None):
    """Cross-entropy between ``target`` and ``pred`` along ``axis``.

    pred: tnp float array (logits if ``from_logits`` else probabilities, any float dtype).
    target: ``sparse``: NumPy int64 class ids of ``pred``'s shape without ``axis``; else a tnp
    array of ``pred``'s shape (differentiable too). weights: NumPy per-sample weights (already
    broadcast) or None. divisor: None returns the per-sample losses; else their weighted sum
    divided by ``divisor`` (0 gives 0). valid: NumPy bool mask of per-sample entries that count
    (``ignore_class``); the others have loss 0.
    """
    ct = compute_dtype(pred.dtype)
    nd = pred.ndim
    ax = axis % nd
    labels = None
    if sparse:
        labels = target if valid is None else _np.where(valid, target, 0)
    if valid is not None:
        vw = valid.astype(ct)
        weights = vw if weights is None else weights * vw
    if weights is not None:
        weights = _np.asarray(weights, dtype=ct)

    def to_last(x):
        return x if ax == nd - 1 else tnp.moveaxis(x, ax, -1)

    def from_last_np(a):
        return a if ax == nd - 1 else _np.moveaxis(a, -1, ax)

    def forward(*args):
        p_in = args[0]
        a = _np.asarray(p_in)
        a = a.astype(ct) if a.dtype != ct else a
        if ax != nd - 1:
            a = _np.moveaxis(a, ax, -1)
        last_shape = a.shape
        n_classes = last_shape[-1]
        a = a.reshape(-1, n_classes)            # (N, C): one row per per-sample value
        rows = _np.arange(a.shape[0])
        w = None if weights is None else weights.reshape(-1)
        if sparse:
            t = None
            lab = labels.reshape(-1)
        else:
            t = _np.asarray(args[1]).astype(ct)
            if ax != nd - 1:
                t = _np.moveaxis(t, ax, -1)
            t = t.reshape(-1, n_classes)
            if smoothing:
                t = t * (1 - smoothing) + smoothing / n_classes
        if from_logits:
            z = a - a.max(axis=-1, keepdims=True)
            logq = z - _np.log(_np.exp(z).sum(axis=-1, keepdims=True))
            per = -(logq[rows, lab] if sparse else (t * logq).sum(-1))
            cache = logq
        else:
            s = a.sum(axis=-1)
            if sparse:
                qy = a[rows, lab] / s
                qyc = _np.clip(qy, EPSILON, 1 - EPSILON)
                per = -_np.log(qyc)
                cache = (s, qy, qyc)
            else:
                q = a / s[:, None]
                qc = _np.clip(q, EPSILON, 1 - EPSILON)
                logq = _np.log(qc)
                per = -(t * logq).sum(-1)
                cache = (s, q, qc, logq)
        if w is not None:
            per = per * w
        if divisor is None:
            out = per.reshape(last_shape[:-1])
        else:
            out = _np.asarray(per.sum() / divisor if divisor else per.sum() * 0, dtype=ct)
        y = tnp.asarray(out.astype(ct, copy=False))

        def grad(g):
            if tape_is_recording():
                return _second_order(args, g)
            gv = _np.asarray(g).astype(ct, copy=False)
            if divisor is not None:
                scale = float(gv) / divisor if divisor else 0.0
                gp = _np.full(per.shape, scale, dtype=ct) if w is None else w * ct.type(scale)
            else:
                gp = gv.reshape(-1) if w is None else gv.reshape(-1) * w
            if from_logits:
                prob = _np.exp(cache)
                if sparse:
                    dz = prob * gp[:, None]
                    dz[rows, lab] -= gp
                else:
                    dz = (prob * t.sum(-1, keepdims=True) - t) * gp[:, None]
                    dt = -cache * gp[:, None]
            else:
                if sparse:
                    s_, qy, qyc = cache
                    inside = (qy >= EPSILON) & (qy <= 1 - EPSILON)
                    coef = _np.where(inside, -gp / qyc, 0) / s_          # d per / d q_y / S
                    dz = _np.repeat((-coef * qy)[:, None], n_classes, axis=1)
                    dz[rows, lab] += coef
                else:
                    s_, q, qc, logq_ = cache
                    inside = (q >= EPSILON) & (q <= 1 - EPSILON)
                    r = _np.where(inside, t / qc, 0)
                    dz = (-r + (r * q).sum(-1, keepdims=True)) * (gp / s_)[:, None]
                    dt = -logq_ * gp[:, None]
            dz = tnp.asarray(from_last_np(dz.reshape(last_shape)).astype(p_in.dtype, copy=False))
            if sparse:
                return dz
            if smoothing:
                dt = dt * (1 - smoothing)
            dt = from_last_np(dt.reshape(last_shape))
            return dz, tnp.asarray(dt.astype(args[1].dtype, copy=False))
        return y, grad

    def _second_order(args, g):
        sources = [args[0]] if sparse else [args[0], args[1]]
        with GradientTape() as tape:
            tape.watch(sources)
            onehot = None
            if sparse:
                n = args[0].shape[ax]
                onehot = (labels[..., None] == _np.arange(n)).astype(ct)
            out = _plain(to_last(args[0]), None if sparse else to_last(args[1]), sparse=sparse,
                         from_logits=from_logits, axis=-1, smoothing=smoothing, weights=weights,
                         divisor=divisor, onehot=onehot)
        gs = tape.gradient(out, sources, output_gradients=g)
        gs = [tnp.zeros_like(s) if d is None else d for s, d in zip(sources, gs)]
        return gs[0] if sparse else tuple(gs)

    op = custom_gradient(forward)
    if sparse:
        return op(pred)
    if not _np.issubdtype(target.dtype, _np.floating):
        target = target.astype(ct)
    return op(pred, target)
