"""Metrics over confusion counts at thresholds: TruePositives ... FalseNegatives, Precision,
Recall, AUC (TF 2.4's ``tf.keras.metrics``), and MeanIoU.

A prediction counts as positive at threshold ``t`` when ``y_pred > t``. The counts for all
thresholds come from one sort: each prediction's position among the sorted thresholds, a
weighted histogram of positions, and cumulative sums (O(n log T), not O(n T)).
"""
from __future__ import annotations

import numpy as _np

from ..losses._weights import broadcast_weights
from .base import Metric, div_no_nan, values_of

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives", "Precision",
           "Recall", "AUC", "MeanIoU"]

_EPSILON = 1e-7
_NEG_INF = -1e10  # TF's threshold for top_k (every kept prediction is positive)


def _prepare(who, y_true, y_pred, sample_weight, *, top_k=None, class_id=None, check_range=True):
    """Labels (bool), predictions (float64) and weights (float64), all of one shape."""
    t = values_of(y_true)
    p = values_of(y_pred).astype(_np.float64)
    if p.ndim == t.ndim + 1 and p.shape[-1] == 1:
        t = t[..., None]
    elif t.ndim == p.ndim + 1 and t.shape[-1] == 1:
        p = p[..., None]
    if t.shape != p.shape:
        raise ValueError(f"{who}: y_true of shape {t.shape} and y_pred of shape {p.shape} are "
                         f"incompatible (expected equal shapes)")
    if check_range and p.size and (_np.nanmin(p) < 0 or _np.nanmax(p) > 1):
        raise ValueError(f"{who}: predictions must be in [0, 1], got values in "
                         f"[{_np.nanmin(p)}, {_np.nanmax(p)}]")
    if top_k is not None:
        if p.ndim == 0:
            raise ValueError(f"{who}: top_k needs predictions with a class axis")
        k = min(int(top_k), p.shape[-1])
        order = _np.argsort(-p, axis=-1, kind="stable")
        keep = _np.zeros(p.shape, dtype=bool)
        _np.put_along_axis(keep, order[..., :k], True, axis=-1)
        p = _np.where(keep, p, _NEG_INF)
    if class_id is not None:
        if p.ndim == 0 or not 0 <= class_id < p.shape[-1]:
            raise ValueError(f"{who}: class_id {class_id} is out of range for predictions of "
                             f"shape {p.shape}")
        t, p = t[..., class_id], p[..., class_id]
    w = None if sample_weight is None else \
        broadcast_weights(who, values_of(sample_weight), p.shape, _np.float64)
    return t.astype(bool), p, w


def _counts(labels, preds, weights, thresholds):
    """(tp, fp, tn, fn) at each threshold (any order) for flat labels/preds/weights, or per
    column for 2-D ones (then each of shape (T, columns))."""
    thr = _np.asarray(thresholds, dtype=_np.float64)
    order = _np.argsort(thr, kind="stable")
    s = thr[order]
    T = s.size
    two_d = preds.ndim == 2
    p2 = preds if two_d else preds.reshape(-1, 1)
    y2 = labels if two_d else labels.reshape(-1, 1)
    w2 = _np.ones(p2.shape) if weights is None else (weights if two_d else weights.reshape(-1, 1))
    # number of thresholds strictly below each prediction: positive at threshold j iff j < pos
    pos = _np.searchsorted(s, p2, side="left")
    pos[_np.isnan(p2)] = 0
    cols = p2.shape[1]
    flat = (pos + (T + 1) * _np.arange(cols)).ravel()

    def above(wv):
        h = _np.bincount(flat, weights=wv.ravel(), minlength=cols * (T + 1)).reshape(cols, T + 1)
        return _np.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]  # sum over positions > j

    wpos = w2 * y2
    wneg = w2 * ~y2
    tp, fp = above(wpos), above(wneg)
    fn = wpos.sum(axis=0)[:, None] - tp
    tn = wneg.sum(axis=0)[:, None] - fp
    out = []
    for c in (tp, fp, tn, fn):
        r = _np.empty_like(c)
        r[:, order] = c
        out.append(r.T if two_d else r[0])
    return out


def _thresholds(who, thresholds, default):
    if thresholds is None:
        thresholds = [default]
    elif _np.ndim(thresholds) == 0:
        thresholds = [thresholds]
    thr = [float(t) for t in thresholds]
    if not thr:
        raise ValueError(f"{who}: thresholds must not be empty")
    for t in thr:
        if t != _NEG_INF and not 0 <= t <= 1:
            raise ValueError(f"{who}: thresholds must be in [0, 1], got {t}")
    return thr


class _ConfusionCount(Metric):
    """One confusion count at ``thresholds`` (default 0.5)."""
    _which = 0  # index into (tp, fp, tn, fn)

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = _thresholds(type(self).__name__, thresholds, 0.5)
        self.accumulator = self.add_weight("accumulator", shape=(len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, w = _prepare(self.name, y_true, y_pred, sample_weight)
        c = _counts(t.ravel(), p.ravel(), None if w is None else w.ravel(), self.thresholds)
        self.accumulator.assign_add(c[self._which].astype(self.accumulator.dtype))

    def result(self):
        a = self.accumulator.numpy()
        return self._out(a[0] if len(self.thresholds) == 1 else a)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConfusionCount):
    """Weighted count of true positives; mirrors ``tf.keras.metrics.TruePositives(thresholds=None,
    name=None, dtype=None)``."""
    _which = 0


class FalsePositives(_ConfusionCount):
    """Mirrors ``tf.keras.metrics.FalsePositives(thresholds=None, name=None, dtype=None)``."""
    _which = 1


class TrueNegatives(_ConfusionCount):
    """Mirrors ``tf.keras.metrics.TrueNegatives(thresholds=None, name=None, dtype=None)``."""
    _which = 2


class FalseNegatives(_ConfusionCount):
    """Mirrors ``tf.keras.metrics.FalseNegatives(thresholds=None, name=None, dtype=None)``."""
    _which = 3


class _PrecisionRecall(Metric):
    _second = "false_positives"

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        who = type(self).__name__
        if top_k is not None and (isinstance(top_k, bool) or int(top_k) < 1):
            raise ValueError(f"{who}: top_k must be a positive integer, got {top_k!r}")
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = _thresholds(who, thresholds, 0.5 if top_k is None else _NEG_INF)
        n = len(self.thresholds)
        self.true_positives = self.add_weight("true_positives", shape=(n,))
        setattr(self, self._second, self.add_weight(self._second, shape=(n,)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, w = _prepare(self.name, y_true, y_pred, sample_weight, top_k=self.top_k,
                           class_id=self.class_id)
        tp, fp, _, fn = _counts(t.ravel(), p.ravel(), None if w is None else w.ravel(),
                                self.thresholds)
        self.true_positives.assign_add(tp.astype(self.true_positives.dtype))
        other = getattr(self, self._second)
        other.assign_add((fp if self._second == "false_positives" else fn).astype(other.dtype))

    def result(self):
        tp = self.true_positives.numpy()
        r = div_no_nan(tp, tp + getattr(self, self._second).numpy())
        return self._out(r[0] if len(self.thresholds) == 1 else r)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """``tp / (tp + fp)`` at ``thresholds`` (default 0.5; with ``top_k`` only the k highest
    predictions count as positive), optionally for one ``class_id``; mirrors
    ``tf.keras.metrics.Precision(thresholds=None, top_k=None, class_id=None, name=None,
    dtype=None)``."""
    _second = "false_positives"


class Recall(_PrecisionRecall):
    """``tp / (tp + fn)``; mirrors ``tf.keras.metrics.Recall(thresholds=None, top_k=None,
    class_id=None, name=None, dtype=None)``."""
    _second = "false_negatives"


class AUC(Metric):
    """Area under the ROC or PR curve from confusion counts at ``num_thresholds`` evenly spaced
    thresholds (plus one just below 0 and one just above 1); mirrors
    ``tf.keras.metrics.AUC(num_thresholds=200, curve="ROC", summation_method="interpolation",
    name=None, dtype=None, thresholds=None, multi_label=False, label_weights=None)`` (with
    ``num_labels`` and Keras 3's ``from_logits``).

    ``summation_method``: "interpolation" (trapezoids for ROC; for PR, Davis & Goadrich's
    interpolation of precision between thresholds), "minoring" or "majoring" (left/right
    Riemann sums with the smaller/larger height). ``multi_label``: one curve per label (last
    axis), their AUCs averaged (weighted by ``label_weights`` if given); otherwise all entries
    are pooled and ``label_weights`` weigh each label's entries.
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        curve = str(curve).upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR', got {curve!r}")
        summation_method = str(summation_method).lower()
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f"AUC: summation_method must be 'interpolation', 'minoring' or "
                             f"'majoring', got {summation_method!r}")
        self.curve, self.summation_method = curve, summation_method
        if thresholds is not None:
            inner = sorted(_thresholds("AUC", thresholds, 0.5))
            self.num_thresholds = len(inner) + 2
        else:
            if int(num_thresholds) <= 1:
                raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds}")
            self.num_thresholds = int(num_thresholds)
            n = self.num_thresholds
            inner = [(i + 1) / (n - 1) for i in range(n - 2)]
        self._inner = inner
        self.thresholds = [0.0 - _EPSILON] + list(inner) + [1.0 + _EPSILON]
        self._explicit_thresholds = thresholds is not None
        self.multi_label = bool(multi_label)
        self.from_logits = bool(from_logits)
        if label_weights is not None:
            lw = _np.asarray(label_weights, dtype=_np.float64)
            if (lw < 0).any():
                raise ValueError("AUC: label_weights must be non-negative")
            self.label_weights = lw
        else:
            self.label_weights = None
        self.num_labels = num_labels
        self._built = False
        if not self.multi_label or num_labels is not None:
            self._build(num_labels if self.multi_label else None)

    def _build(self, num_labels):
        shape = (self.num_thresholds,) if num_labels is None else (self.num_thresholds, num_labels)
        self.true_positives = self.add_weight("true_positives", shape=shape)
        self.false_positives = self.add_weight("false_positives", shape=shape)
        self.true_negatives = self.add_weight("true_negatives", shape=shape)
        self.false_negatives = self.add_weight("false_negatives", shape=shape)
        if num_labels is not None:
            self.num_labels = num_labels
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        p = values_of(y_pred)
        if self.from_logits:
            p = 1.0 / (1.0 + _np.exp(-_np.asarray(p, dtype=_np.float64)))
        t, p, w = _prepare(self.name, y_true, p, sample_weight)
        if self.multi_label:
            if p.ndim < 2:
                raise ValueError(f"{self.name}: multi_label needs predictions of shape "
                                 f"(batch, ..., labels), got {p.shape}")
            n_labels = p.shape[-1]
            if not self._built:
                self._build(n_labels)
            elif self.num_labels != n_labels:
                raise ValueError(f"{self.name}: built for {self.num_labels} labels, got "
                                 f"predictions of shape {p.shape}")
            t2, p2 = t.reshape(-1, n_labels), p.reshape(-1, n_labels)
            w2 = None if w is None else w.reshape(-1, n_labels)
            counts = _counts(t2, p2, w2, self.thresholds)
        else:
            if self.label_weights is not None:
                lw = broadcast_weights(self.name, self.label_weights, p.shape, _np.float64) \
                    if p.ndim else self.label_weights
                w = lw if w is None else w * lw
            counts = _counts(t.ravel(), p.ravel(), None if w is None else w.ravel(),
                             self.thresholds)
        for v, c in zip((self.true_positives, self.false_positives, self.true_negatives,
                         self.false_negatives), counts):
            v.assign_add(c.astype(v.dtype))

    def _pr_interpolated(self, tp, fp, fn):
        # Between adjacent thresholds precision is interpolated as a function of the number of
        # predicted positives (Davis & Goadrich 2006); the area of each piece has a closed form.
        p = tp + fp
        dtp = tp[:-1] - tp[1:]
        dp = p[:-1] - p[1:]
        slope = div_no_nan(dtp, _np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = _np.where(both, div_no_nan(p[:-1], _np.maximum(p[1:], 0)), 1.0)
        with _np.errstate(divide="ignore"):
            log_ratio = _np.log(_np.where(ratio > 0, ratio, 1.0))
        return div_no_nan(slope * (dtp + intercept * log_ratio), _np.maximum(tp[1:] + fn[1:], 0))

    def result(self):
        if not self._built:
            return self._out(0.0)
        tp = self.true_positives.numpy().astype(_np.float64)
        fp = self.false_positives.numpy().astype(_np.float64)
        tn = self.true_negatives.numpy().astype(_np.float64)
        fn = self.false_negatives.numpy().astype(_np.float64)
        if self.curve == "PR" and self.summation_method == "interpolation":
            pieces = self._pr_interpolated(tp, fp, fn)
        else:
            recall = div_no_nan(tp, tp + fn)
            if self.curve == "ROC":
                x, y = div_no_nan(fp, fp + tn), recall
            else:
                x, y = recall, div_no_nan(tp, tp + fp)
            if self.summation_method == "interpolation":
                h = (y[:-1] + y[1:]) / 2
            elif self.summation_method == "minoring":
                h = _np.minimum(y[:-1], y[1:])
            else:
                h = _np.maximum(y[:-1], y[1:])
            pieces = (x[:-1] - x[1:]) * h
        if self.multi_label:
            by_label = pieces.sum(axis=0)
            if self.label_weights is None:
                return self._out(by_label.mean())
            return self._out(div_no_nan(_np.sum(by_label * self.label_weights),
                                        _np.sum(self.label_weights)))
        return self._out(pieces.sum())

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "curve": self.curve, "summation_method": self.summation_method,
                "thresholds": list(self._inner) if self._explicit_thresholds else None,
                "multi_label": self.multi_label, "num_labels": self.num_labels,
                "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
                "from_logits": self.from_logits}


class MeanIoU(Metric):
    """Mean over classes of ``tp / (tp + fp + fn)`` from an accumulated confusion matrix (rows
    true, columns predicted; classes that never occur are left out of the mean); mirrors
    ``tf.keras.metrics.MeanIoU(num_classes, name=None, dtype=None)`` with Keras 3's
    ``ignore_class=None, sparse_y_true=True, sparse_y_pred=True, axis=-1``."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype)
        if isinstance(num_classes, bool) or int(num_classes) < 1:
            raise ValueError(f"MeanIoU: num_classes must be a positive integer, got {num_classes!r}")
        self.num_classes = int(num_classes)
        self.ignore_class = ignore_class
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis
        self.total_cm = self.add_weight("total_confusion_matrix",
                                        shape=(self.num_classes, self.num_classes),
                                        dtype="float64")

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p = values_of(y_true), values_of(y_pred)
        if not self.sparse_y_pred:
            p = _np.argmax(p, axis=self.axis)
        if not self.sparse_y_true:
            t = _np.argmax(t, axis=self.axis)
        if t.size != p.size:
            raise ValueError(f"{self.name}: y_true of shape {t.shape} and y_pred of shape "
                             f"{p.shape} have different numbers of entries")
        w = None
        if sample_weight is not None:
            w = _np.asarray(values_of(sample_weight), dtype=_np.float64)
            w = _np.broadcast_to(w, p.shape) if w.size != p.size else w
            w = w.ravel()
        t, p = t.ravel().astype(_np.int64), p.ravel().astype(_np.int64)
        if self.ignore_class is not None:
            keep = t != self.ignore_class
            t, p = t[keep], p[keep]
            w = None if w is None else w[keep]
        n = self.num_classes
        bad = (t < 0) | (t >= n) | (p < 0) | (p >= n)
        if bad.any():
            raise ValueError(f"{self.name}: class ids must be in [0, {n}), got "
                             f"y_true in [{t.min()}, {t.max()}], y_pred in [{p.min()}, {p.max()}]")
        cm = _np.bincount(t * n + p, weights=w, minlength=n * n).reshape(n, n)
        self.total_cm.assign_add(cm.astype(_np.float64))

    def result(self):
        cm = self.total_cm.numpy()
        tp = _np.diag(cm)
        denom = cm.sum(axis=0) + cm.sum(axis=1) - tp
        valid = _np.count_nonzero(denom)
        return self._out(div_no_nan(_np.sum(div_no_nan(tp, denom)), valid))

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}
