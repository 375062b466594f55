"""Softmax / categorical cross-entropy as ONE tape node (it runs in every training step).

``crossentropy(...)`` computes the per-sample losses, the sample weights and the reduction
inside a ``tt.custom_gradient`` op, with the array module of the predictions' device (NumPy on
the CPU, CuPy on a GPU: the predictions never travel to the host); its backward is written the
same way (``(softmax - onehot) * g / batch`` for logits). When a tape recording during that
backward follows it (a second-order gradient), the backward instead differentiates the plain
tnp formulation with a nested tape (``hand_written_backward``'s recorded fallback), so
higher-order gradients stay exact.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import array_module, backend_array, device_of, is_floating, is_tnp_array, wrap
from tnp.extend import tracing as _tracing

from ..activations import logits_of
from ..autodiff import GradientTape, custom_gradient, stop_gradient
from ..autodiff.tape import hand_written_backward
from ._values import poison

EPSILON = 1e-7  # tf.keras.backend.epsilon()


def compute_dtype(dtype):
    """Losses compute in float64 for float64 predictions, float32 otherwise (Keras casts
    float16/bfloat16 predictions up)."""
    return _np.dtype(_np.float64) if dtype == _np.float64 else _np.dtype(_np.float32)


def _reduced(xp, total, divisor, ct):
    """``total / divisor`` in ``ct`` (0 when the divisor is 0); ``divisor`` a float or a 0-d
    backend array (a count of entries that stays on the device)."""
    if not hasattr(divisor, "dtype"):
        return total / ct.type(divisor) if divisor else total * 0
    d = divisor.astype(ct)
    return xp.where(d == 0, total * 0, total / xp.where(d == 0, ct.type(1), d))


def _grad_scale(xp, g, divisor, ct):
    """``float(g) / divisor`` rounded once to ``ct`` (0 when the divisor is 0), on the device."""
    g64 = g.astype(_np.float64)
    if not hasattr(divisor, "dtype"):
        s = g64 / divisor if divisor else xp.zeros((), dtype=_np.float64)
    else:
        d = divisor.astype(_np.float64)
        s = xp.where(d == 0, 0.0, g64 / xp.where(d == 0, 1.0, d))
    return xp.asarray(s, dtype=ct)


# ---------------------------------------------------------------------- plain tnp formulation
def _plain(pred, target, *, sparse, from_logits, axis, smoothing, weights, divisor, onehot=None,
           bad=None):
    """The same loss as :func:`crossentropy`, in tnp operations (pred and target already on the
    last axis; ``onehot``, ``weights``, ``divisor`` and ``bad`` tnp arrays on pred's device or
    None); used for higher-order gradients."""
    ct = compute_dtype(pred.dtype)
    z = pred.astype(ct) if pred.dtype != ct else pred
    if from_logits:
        z = z - tnp.max(stop_gradient(z), axis=-1, keepdims=True)
        logq = z - tnp.log(tnp.sum(tnp.exp(z), axis=-1, keepdims=True))
    else:
        q = z / tnp.sum(z, axis=-1, keepdims=True)
        logq = tnp.log(tnp.clip(q, EPSILON, 1 - EPSILON))
    if sparse:
        t = onehot
    else:
        t = target.astype(ct) if target.dtype != ct else target
        if smoothing:
            t = t * (1 - smoothing) + smoothing / t.shape[-1]
    per = -tnp.sum(t * logq, axis=-1)
    if bad is not None:
        per = tnp.where(bad, tnp.asarray(_np.nan, dtype=ct, device=per.device), per)
    if weights is not None:
        per = per * weights
    if divisor is None:
        return per
    if not is_tnp_array(divisor):
        return tnp.sum(per) / divisor if divisor else tnp.sum(per) * 0
    d = divisor.astype(ct)
    return tnp.where(d == 0, tnp.sum(per) * 0, tnp.sum(per) / tnp.where(d == 0, 1, d))


def _traced(pred, target, *, sparse, from_logits, axis, smoothing, weights, divisor, valid, bad):
    """:func:`crossentropy` in a function being compiled: the plain tnp formulation (traced,
    differentiated by the tapes, fused by the compiler); ``target``, ``weights``, ``valid``,
    ``bad`` and ``divisor`` are tnp arrays there (or None, or a float divisor)."""
    ct = compute_dtype(pred.dtype)
    nd = pred.ndim
    ax = axis % nd

    def to_last(x):
        return x if x is None or ax == nd - 1 or x.ndim < nd else tnp.moveaxis(x, ax, -1)

    p = to_last(pred)
    onehot = None
    labels = None
    if sparse:
        labels = target if valid is None else tnp.where(valid, target, 0)
        if bad is not None:
            labels = tnp.where(bad, 0, labels)
        onehot = (labels[..., None] == tnp.arange(p.shape[-1])).astype(ct)
        target = None
    else:
        target = to_last(target)
    if valid is not None:
        vw = valid.astype(ct)
        weights = vw if weights is None else weights * vw
    if weights is not None:
        weights = tnp.asarray(weights, dtype=ct)
    if sparse and from_logits and bad is None and not is_tnp_array(divisor) and nd >= 1:
        # the common case (a classifier's logits): the eager kernel's own formulas, forward and
        # backward, so a compiled step computes the eager step's bits
        return _sparse_logits_traced(p, labels, onehot, weights, divisor, ct)
    if not sparse and from_logits and not is_tnp_array(divisor) and nd >= 1:
        # categorical cross-entropy of logits (or of a softmax output, from its logits)
        return _dense_logits_traced(p, target, smoothing, weights, divisor, ct)
    return _plain(p, target, sparse=sparse, from_logits=from_logits, axis=-1,
                  smoothing=smoothing, weights=weights, divisor=divisor, onehot=onehot, bad=bad)


def _traced_reduction(per, weights, divisor, ct):
    """The traced cross-entropies' loss from the per-row values ``per``, as the kernel reduces
    them: weighted, then kept per row (``divisor`` None), or summed and divided by
    ``divisor`` (0: a zero loss)."""
    if weights is not None:
        per = per * weights
    if divisor is None:
        return per
    if divisor:
        return per.reshape(-1).sum() / ct.type(divisor)
    return per.reshape(-1).sum() * 0


def _traced_row_cotangent(g, weights, divisor, lead, ct):
    """The per-row cotangent of :func:`_traced_reduction` for the loss's cotangent ``g``
    (rows shaped ``lead``), as the kernel's backward computes it."""
    gv = g.astype(ct)
    if divisor is not None:
        scale = ((gv.astype(_np.float64) / divisor) if divisor else
                 tnp.zeros((), dtype=_np.float64)).astype(ct)
        return tnp.broadcast_to(scale, lead) if weights is None else weights * scale
    return gv if weights is None else gv * weights


def _sparse_logits_traced(pred, labels, onehot, weights, divisor, ct):
    """Sparse cross-entropy of logits (class axis last) in tnp operations, with the forward and
    backward formulas of :func:`crossentropy`'s kernel, step for step (traced)."""
    lead = tuple(pred.shape[:-1])

    @custom_gradient
    def xent(p):
        a = p.astype(ct) if p.dtype != ct else p
        z = a - a.max(axis=-1, keepdims=True)
        logq = z - tnp.log(tnp.exp(z).sum(axis=-1, keepdims=True))
        per = -tnp.take_along_axis(logq, labels[..., None], axis=-1)[..., 0]
        out = _traced_reduction(per, weights, divisor, ct)

        def grad(g):
            gcol = _traced_row_cotangent(g, weights, divisor, lead, ct)[..., None]
            dz = tnp.exp(logq) * gcol - onehot * gcol
            return dz.astype(p.dtype) if dz.dtype != p.dtype else dz
        return out, grad
    return xent(pred)


def _dense_logits_traced(pred, target, smoothing, weights, divisor, ct):
    """Categorical cross-entropy of logits (class axis last) against a dense target in tnp
    operations, with the forward and backward formulas of :func:`crossentropy`'s kernel, step
    for step (traced): a compiled step gives the eager step's bits."""
    lead = tuple(pred.shape[:-1])
    n_classes = pred.shape[-1]

    @custom_gradient
    def xent(p, target):
        a = p.astype(ct) if p.dtype != ct else p
        t = target.astype(ct)
        if smoothing:
            t = t * (1 - smoothing) + smoothing / n_classes
        z = a - a.max(axis=-1, keepdims=True)
        logq = z - tnp.log(tnp.exp(z).sum(axis=-1, keepdims=True))
        per = -(t * logq).sum(-1)
        out = _traced_reduction(per, weights, divisor, ct)

        def grad(g):
            gcol = _traced_row_cotangent(g, weights, divisor, lead, ct)[..., None]
            dz = (tnp.exp(logq) * t.sum(-1, keepdims=True) - t) * gcol
            dt = -logq * gcol
            if smoothing:
                dt = dt * (1 - smoothing)
            dz = dz.astype(p.dtype) if dz.dtype != p.dtype else dz
            if not is_floating(target.dtype):
                return dz, None
            return dz, dt.astype(target.dtype) if dt.dtype != target.dtype else dt
        return out, grad
    return xent(pred, target)


def crossentropy(pred, target, *, sparse, from_logits, axis=-1, smoothing=0.0, weights=None,
                 divisor=None, valid=None, bad=None):
    """Cross-entropy between ``target`` and ``pred`` along ``axis``, on pred's device.

    pred: tnp float array (logits if ``from_logits`` else probabilities, any float dtype).
    target: ``sparse``: int64 class ids (a backend array on pred's device) of ``pred``'s shape
    without ``axis``; else a tnp array of ``pred``'s shape (differentiable too). weights:
    per-sample weights (a backend array on pred's device, already broadcast) or None. divisor:
    None returns the per-sample losses; else their weighted sum divided by ``divisor`` (a float,
    or a 0-d backend array; 0 gives 0). valid: bool mask (backend array) of per-sample entries
    that count (``ignore_class``); the others have loss 0. bad: bool mask of entries whose label
    is no class (only where it cannot be refused without a host read): their loss and gradient
    are NaN, as TF's on a GPU.
    """
    if not from_logits:
        # a softmax output along this axis: from its logits, as Keras (see activations)
        known = logits_of(pred, "softmax")
        if known is not None and known[1] % pred.ndim == axis % pred.ndim and \
                tuple(known[0].shape) == tuple(pred.shape):
            pred, from_logits = known[0], True
    if _tracing():
        return _traced(pred, target, sparse=sparse, from_logits=from_logits, axis=axis,
                       smoothing=smoothing, weights=weights, divisor=divisor, valid=valid, bad=bad)
    dev = device_of(pred)
    xp = array_module(dev)
    ct = compute_dtype(pred.dtype)
    nd = pred.ndim
    ax = axis % nd
    labels = None
    if sparse:
        labels = target if valid is None else xp.where(valid, target, 0)
        if bad is not None:
            labels = xp.where(bad, 0, labels)      # any class: the row becomes NaN
    if valid is not None:
        vw = valid.astype(ct)
        weights = vw if weights is None else weights * vw
    if weights is not None:
        weights = xp.asarray(weights, dtype=ct)

    def to_last(x):
        return x if ax == nd - 1 else tnp.moveaxis(x, ax, -1)

    def from_last(a):
        return a if ax == nd - 1 else xp.moveaxis(a, -1, ax)

    def forward(*args):
        p_in = args[0]
        a = backend_array(p_in)
        a = a.astype(ct) if a.dtype != ct else a
        if ax != nd - 1:
            a = xp.moveaxis(a, ax, -1)
        last_shape = a.shape
        n_classes = last_shape[-1]
        a = a.reshape(-1, n_classes)            # (N, C): one row per per-sample value
        rows = xp.arange(a.shape[0])
        w = None if weights is None else weights.reshape(-1)
        nan_rows = None if bad is None else bad.reshape(-1)
        if sparse:
            t = None
            lab = labels.reshape(-1)
        else:
            t = backend_array(args[1]).astype(ct)
            if ax != nd - 1:
                t = xp.moveaxis(t, ax, -1)
            t = t.reshape(-1, n_classes)
            if smoothing:
                t = t * (1 - smoothing) + smoothing / n_classes
        if from_logits:
            z = a - a.max(axis=-1, keepdims=True)
            logq = z - xp.log(xp.exp(z).sum(axis=-1, keepdims=True))
            per = -(logq[rows, lab] if sparse else (t * logq).sum(-1))
            cache = logq
        else:
            s = a.sum(axis=-1)
            if sparse:
                qy = a[rows, lab] / s
                qyc = xp.clip(qy, EPSILON, 1 - EPSILON)
                per = -xp.log(qyc)
                cache = (s, qy, qyc)
            else:
                q = a / s[:, None]
                qc = xp.clip(q, EPSILON, 1 - EPSILON)
                logq = xp.log(qc)
                per = -(t * logq).sum(-1)
                cache = (s, q, qc, logq)
        if nan_rows is not None:
            per = poison(xp, per, nan_rows)
        if w is not None:
            per = per * w
        if divisor is None:
            out = per.reshape(last_shape[:-1])
        else:
            out = xp.asarray(_reduced(xp, per.sum(), divisor, ct), dtype=ct)
        y = wrap(out.astype(ct, copy=False), dev)

        def grad(g):
            gv = (backend_array(g) if is_tnp_array(g) else xp.asarray(g)).astype(ct, copy=False)
            if divisor is not None:
                scale = _grad_scale(xp, gv, divisor, ct)
                gp = xp.broadcast_to(scale, per.shape) if w is None else w * scale
            else:
                gp = gv.reshape(-1) if w is None else gv.reshape(-1) * w
            if from_logits:
                prob = xp.exp(cache)
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
                    coef = xp.where(inside, -gp / qyc, 0) / s_          # d per / d q_y / S
                    dz = xp.repeat((-coef * qy)[:, None], n_classes, axis=1)
                    dz[rows, lab] += coef
                else:
                    s_, q, qc, logq_ = cache
                    inside = (q >= EPSILON) & (q <= 1 - EPSILON)
                    r = xp.where(inside, t / qc, 0)
                    dz = (-r + (r * q).sum(-1, keepdims=True)) * (gp / s_)[:, None]
                    dt = -logq_ * gp[:, None]
            if nan_rows is not None:
                dz = poison(xp, dz, nan_rows[:, None])
            dz = wrap(from_last(dz.reshape(last_shape)).astype(p_in.dtype, copy=False), dev)
            if sparse:
                return dz
            if smoothing:
                dt = dt * (1 - smoothing)
            dt = from_last(dt.reshape(last_shape))
            return dz, wrap(dt.astype(args[1].dtype, copy=False), dev)
        return y, hand_written_backward("crossentropy", grad, args,
                                        lambda g: _second_order(args, g))

    def _second_order(args, g):
        sources = [args[0]] if sparse else [args[0], args[1]]
        with GradientTape() as tape:
            tape.watch(sources)
            onehot = None
            if sparse:
                n = args[0].shape[ax]
                onehot = wrap((labels[..., None] == xp.arange(n)).astype(ct), dev)
            out = _plain(to_last(args[0]), None if sparse else to_last(args[1]), sparse=sparse,
                         from_logits=from_logits, axis=-1, smoothing=smoothing,
                         weights=None if weights is None else wrap(weights, dev),
                         divisor=divisor if not hasattr(divisor, "dtype") else wrap(divisor, dev),
                         onehot=onehot, bad=None if bad is None else wrap(bad, dev))
        gs = tape.gradient(out, sources, output_gradients=g)
        gs = [tnp.zeros_like(s) if d is None else d for s, d in zip(sources, gs)]
        return gs[0] if sparse else tuple(gs)

    op = custom_gradient(forward)
    if sparse:
        return op(pred)
    if device_of(target) is not dev:
        target = target.to_device(dev)
    if not is_floating(target.dtype):
        target = target.astype(ct)
    return op(pred, target)
