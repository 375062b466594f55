"""Connectionist temporal classification: the loss (``ctc_batch_cost``), greedy decoding
(``ctc_decode``) and labels in TF's sparse form."""
from __future__ import annotations

import numpy as _np

import tnp

from ..autodiff import stop_gradient as _stop
from ._common import _log_softmax, _t, symbolic_ops
from .config import epsilon

__all__ = ["ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse"]


def ctc_label_dense_to_sparse(labels, label_lengths):
    """``(indices, values, dense_shape)`` of the first ``label_lengths[i]`` labels of each row
    (TF returns a SparseTensor; tnp has none, so its three parts)."""
    labels = _np.asarray(labels)
    lengths = _np.asarray(label_lengths).astype(_np.int64).reshape(-1)
    idx = [(i, j) for i in range(labels.shape[0]) for j in range(int(lengths[i]))]
    indices = _np.asarray(idx, dtype=_np.int64).reshape(-1, 2)
    values = labels[indices[:, 0], indices[:, 1]] if len(idx) else labels.reshape(-1)[:0]
    return (tnp.asarray(indices), tnp.asarray(values.astype(_np.int32)),
            tnp.asarray(_np.asarray(labels.shape, dtype=_np.int64)))


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """CTC loss per sample, ``(batch, 1)``: ``y_pred`` ``(batch, time, classes)`` softmax
    outputs whose last class is the blank, ``y_true`` ``(batch, max_label_len)`` labels,
    ``input_length``/``label_length`` ``(batch, 1)``; ``log(y_pred + epsilon)`` is used as the
    logits, as TF 2.4 does. Differentiable with respect to ``y_pred``."""
    y_pred = _t(y_pred)
    labels = _np.asarray(y_true).astype(_np.int64)
    in_len = _np.asarray(input_length).astype(_np.int64).reshape(-1)
    lab_len = _np.asarray(label_length).astype(_np.int64).reshape(-1)
    logp = _log_softmax(tnp.log(y_pred + epsilon()), -1)          # (batch, time, classes)
    blank = y_pred.shape[-1] - 1
    losses = []
    for b in range(y_pred.shape[0]):
        seq = labels[b, :lab_len[b]]
        losses.append(-_ctc_log_likelihood(logp[b, :in_len[b]], seq, blank))
    return tnp.reshape(tnp.stack(losses), (-1, 1))


def _logsumexp(parts):
    stacked = tnp.stack(parts)
    # the shift cancels out: no gradient through it; an all -inf column stays -inf with a
    # zero gradient (no log(0) on the tape)
    m = _stop(tnp.max(stacked, axis=0))
    safe = tnp.where(tnp.isfinite(m), m, 0.0)
    total = tnp.sum(tnp.exp(stacked - safe), axis=0)
    some = total > 0
    return tnp.where(some, safe + tnp.log(tnp.where(some, total, 1.0)), -_np.inf)


def _ctc_log_likelihood(logp, seq, blank):
    # the forward (alpha) recursion over the label sequence with blanks interleaved
    ext = [blank]
    for s in seq:
        ext += [int(s), blank]
    n = len(ext)
    ext_a = _np.asarray(ext)
    neg = tnp.asarray(-_np.inf, dtype=logp.dtype)
    # transitions allowed from s - 2: not a blank and not a repeat of the label two back
    skip = _np.zeros(n, bool)
    skip[2:] = (ext_a[2:] != blank) & (ext_a[2:] != ext_a[:-2])
    emit = tnp.take(logp, ext_a, axis=1)                     # (time, n)
    T = logp.shape[0]
    if T == 0:
        return neg
    init = _np.full(n, -_np.inf)
    init[:2] = 0.0
    alpha = tnp.where(tnp.asarray(init) == 0.0, emit[0], neg)
    skip_t = tnp.asarray(skip)
    for t in range(1, T):
        shift1 = tnp.concatenate([tnp.reshape(neg, (1,)), alpha[:-1]])
        shift2 = tnp.concatenate([tnp.full((2,), -_np.inf, dtype=logp.dtype), alpha[:-2]])
        shift2 = tnp.where(skip_t, shift2, neg)
        alpha = _logsumexp([alpha, shift1, shift2]) + emit[t]
    return _logsumexp([alpha[n - 1], alpha[n - 2]]) if n > 1 else alpha[n - 1]


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """``([decoded], log_probabilities)``: the best path per sample (greedy: the most likely
    class at each step, repeats merged, blanks dropped), padded with -1 to ``(batch,
    time)``; ``log_probabilities`` ``(batch, 1)`` is what TF's greedy decoder gives: minus
    the sum over the steps of the largest log-probability (a positive number). Only
    ``greedy=True`` is provided."""
    if not greedy:
        raise ValueError("ctc_decode: only greedy=True is supported (no beam search in "
                         "tnp_train)")
    p = _np.asarray(y_pred, dtype=_np.float64)
    lengths = _np.asarray(input_length).astype(_np.int64).reshape(-1)
    logp = _np.log(_np.transpose(p, (1, 0, 2)) + epsilon())       # (time, batch, classes)
    blank = p.shape[-1] - 1
    paths, scores = [], []
    for b in range(p.shape[0]):
        steps = logp[:lengths[b], b]
        best = steps.argmax(axis=-1)
        scores.append(-steps.max(axis=-1).sum())
        path, last = [], None
        for c in best:
            if c != last and c != blank:
                path.append(int(c))
            last = c
        paths.append(path)
    dense = _np.full((p.shape[0], p.shape[1]), -1, dtype=_np.int64)   # (batch, time), as TF
    for b, q in enumerate(paths):
        dense[b, :len(q)] = q
    return [tnp.asarray(dense)], tnp.asarray(_np.asarray(scores).reshape(-1, 1))


symbolic_ops(globals())
