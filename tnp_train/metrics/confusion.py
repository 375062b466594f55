"""Metrics over confusion counts at thresholds: TruePositives ... FalseNegatives, Precision,
Recall, AUC (TF 2.4's ``tf.keras.metrics``), and MeanIoU.

A prediction counts as positive at threshold ``t`` when ``y_pred > t``. The counts for all
thresholds come from one sort: each prediction's position among the sorted thresholds, a
weighted histogram of positions, and cumulative sums (O(n log T), not O(n T)).
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import array_module, backend_array, device_of

from ..losses._values import backend_on, input_device, poison, reads_free
from ..losses.functions import match_shapes
from ..losses._weights import broadcast_weights
from .base import Metric, accumulate, computed_on_host, div_no_nan

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives", "Precision",
           "Recall", "AUC", "MeanIoU", "SensitivityAtSpecificity", "SpecificityAtSensitivity",
           "PrecisionAtRecall", "RecallAtPrecision"]

_EPSILON = 1e-7
_NEG_INF = -1e10  # TF's threshold for top_k (every kept prediction is positive)


def _prepare(who, y_true, y_pred, sample_weight, device, *, top_k=None, class_id=None,
             check_range=True, transform=None):
    """Labels (bool), predictions (float64, ``transform``-ed) and weights (float64), all of one
    shape and backend arrays on the predictions' device (else ``device``, the state's), that
    device, its array module, and the flag of predictions outside [0, 1]: ValueError where it
    can be read for free, else a 0-d bool on the device (None when not checked)."""
    dev = input_device(y_pred, y_true, sample_weight, default=device)
    xp = array_module(dev)
    t = backend_on(y_true, dev)
    p = backend_on(y_pred, dev).astype(_np.float64)
    if transform is not None:
        p = transform(xp, p)
    t, p = match_shapes(who, t, p)
    outside = None
    if check_range and p.size:
        if reads_free(xp):
            if _np.nanmin(p) < 0 or _np.nanmax(p) > 1:
                raise ValueError(f"{who}: predictions must be in [0, 1], got values in "
                                 f"[{_np.nanmin(p)}, {_np.nanmax(p)}]")
        else:
            outside = xp.any((p < 0) | (p > 1))     # NaN compares false, as nanmin/nanmax
    if top_k is not None:
        if p.ndim == 0:
            raise ValueError(f"{who}: top_k needs predictions with a class axis")
        k = min(int(top_k), p.shape[-1])
        order = xp.argsort(-p, axis=-1, kind="stable")
        # the k first in that order: where the inverse permutation is below k
        keep = xp.argsort(order, axis=-1) < k
        p = xp.where(keep, p, _NEG_INF)
    if class_id is not None:
        if p.ndim == 0 or not 0 <= class_id < p.shape[-1]:
            raise ValueError(f"{who}: class_id {class_id} is out of range for predictions of "
                             f"shape {p.shape}")
        t, p = t[..., class_id], p[..., class_id]
    w = None if sample_weight is None else \
        broadcast_weights(who, sample_weight, p.shape, _np.float64, device=dev)
    return t.astype(bool), p, w, dev, xp, outside


class _Thresholds:
    """Thresholds sorted once on the host, and their copies on each device used."""

    def __init__(self, thresholds):
        thr = _np.asarray(thresholds, dtype=_np.float64)
        order = _np.argsort(thr, kind="stable")
        self.size = thr.size
        self._host = (thr[order], _np.argsort(order, kind="stable"))   # sorted, inverse order
        self._on = {}

    def on(self, device):
        """(sorted thresholds, the permutation back to the given order) on ``device``."""
        got = self._on.get(device)
        if got is None:
            got = self._on[device] = tuple(backend_on(a, device) for a in self._host)
        return got


def _counts(xp, device, labels, preds, weights, thresholds):
    """(tp, fp, tn, fn) at each threshold (in the given order; ``thresholds`` a
    :class:`_Thresholds`) for flat labels/preds/weights, or per column for 2-D ones (then each
    of shape (T, columns)); computed with ``xp`` on the arrays' ``device``."""
    s, back = thresholds.on(device)
    T = thresholds.size
    two_d = preds.ndim == 2
    p2 = preds if two_d else preds.reshape(-1, 1)
    y2 = labels if two_d else labels.reshape(-1, 1)
    w2 = xp.ones(p2.shape) if weights is None else (weights if two_d else weights.reshape(-1, 1))
    # number of thresholds strictly below each prediction: positive at threshold j iff j < pos
    pos = xp.searchsorted(s, p2, side="left")
    pos = xp.where(xp.isnan(p2), 0, pos)
    cols = p2.shape[1]
    flat = (pos + (T + 1) * xp.arange(cols)).ravel()

    def above(wv):
        h = xp.bincount(flat, weights=wv.ravel(), minlength=cols * (T + 1)).reshape(cols, T + 1)
        return xp.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]  # sum over positions > j

    wpos = w2 * y2
    wneg = w2 * ~y2
    tp, fp = above(wpos), above(wneg)
    fn = wpos.sum(axis=0)[:, None] - tp
    tn = wneg.sum(axis=0)[:, None] - fp
    out = []
    for c in (tp, fp, tn, fn):
        r = c[:, back]
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


def _add_counts(xp, var, c, dev, outside):
    """``var += c``; predictions outside [0, 1] seen on a device make the state NaN."""
    accumulate(var, c if outside is None else poison(xp, c, outside), dev)


def _sigmoid(xp, x):
    return 1.0 / (1.0 + xp.exp(-x))


@computed_on_host
class _ConfusionCount(Metric):
    """One confusion count at ``thresholds`` (default 0.5)."""
    _which = 0  # index into (tp, fp, tn, fn)

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = _thresholds(type(self).__name__, thresholds, 0.5)
        self._sorted = _Thresholds(self.thresholds)
        self.accumulator = self.add_weight("accumulator", shape=(len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, w, dev, xp, outside = _prepare(self.name, y_true, y_pred, sample_weight,
                                             device_of(self.accumulator))
        c = _counts(xp, dev, t.ravel(), p.ravel(), None if w is None else w.ravel(), self._sorted)
        _add_counts(xp, self.accumulator, c[self._which], dev, outside)

    def _result_shape(self):
        return () if len(self.thresholds) == 1 else (len(self.thresholds),)

    def result(self):
        a = backend_array(self.accumulator)
        return self._result(a[0] if len(self.thresholds) == 1 else a,
                            device_of(self.accumulator))

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


@computed_on_host
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
        self._sorted = _Thresholds(self.thresholds)
        n = len(self.thresholds)
        self.true_positives = self.add_weight("true_positives", shape=(n,))
        setattr(self, self._second, self.add_weight(self._second, shape=(n,)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, w, dev, xp, outside = _prepare(
            self.name, y_true, y_pred, sample_weight, device_of(self.true_positives),
            top_k=self.top_k, class_id=self.class_id)
        tp, fp, _, fn = _counts(xp, dev, t.ravel(), p.ravel(),
                                None if w is None else w.ravel(), self._sorted)
        _add_counts(xp, self.true_positives, tp, dev, outside)
        _add_counts(xp, getattr(self, self._second),
                    fp if self._second == "false_positives" else fn, dev, outside)

    def _result_shape(self):
        return () if len(self.thresholds) == 1 else (len(self.thresholds),)

    def result(self):
        dev = device_of(self.true_positives)
        tp = backend_array(self.true_positives)
        r = div_no_nan(tp, tp + backend_array(getattr(self, self._second)), array_module(dev))
        return self._result(r[0] if len(self.thresholds) == 1 else r, dev)

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


@computed_on_host
class _SensitivitySpecificity(Metric):
    """TF 2.4's ``SensitivitySpecificityBase``: the four confusion counts at ``num_thresholds``
    evenly spaced thresholds in [0, 1] (0.5 alone for one), and the best value of one rate
    where another reaches ``value``."""
    _arg = "value"

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        who = type(self).__name__
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not 0 <= value <= 1:
            raise ValueError(f"{who}: `{self._arg}` must be in the range [0, 1], got {value!r}")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int) or \
                num_thresholds <= 0:
            raise ValueError(f"{who}: `num_thresholds` must be > 0, got {num_thresholds!r}")
        self.value = float(value)
        self.num_thresholds = num_thresholds
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
        self._sorted = _Thresholds(self.thresholds)
        n = len(self.thresholds)
        for which in ("true_positives", "true_negatives", "false_positives", "false_negatives"):
            setattr(self, which, self.add_weight(which, shape=(n,)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p, w, dev, xp, outside = _prepare(self.name, y_true, y_pred, sample_weight,
                                             device_of(self.true_positives),
                                             class_id=self.class_id)
        tp, fp, tn, fn = _counts(xp, dev, t.ravel(), p.ravel(),
                                 None if w is None else w.ravel(), self._sorted)
        for var, c in ((self.true_positives, tp), (self.false_positives, fp),
                       (self.true_negatives, tn), (self.false_negatives, fn)):
            _add_counts(xp, var, c, dev, outside)

    def result(self):
        dev = device_of(self.true_positives)
        xp = array_module(dev)
        tp, fp, tn, fn = (backend_array(v) for v in (self.true_positives, self.false_positives,
                                                      self.true_negatives,
                                                      self.false_negatives))
        rates = {"sensitivity": div_no_nan(tp, tp + fn, xp),     # = recall
                 "specificity": div_no_nan(tn, tn + fp, xp),
                 "precision": div_no_nan(tp, tp + fp, xp)}
        constrained, dependent = rates[self._constrained], rates[self._dependent]
        # the best dependent rate among the thresholds where the constraint holds, 0 if none
        feasible = constrained >= self.value
        best = xp.where(feasible, dependent, -xp.inf).max()
        return self._result(xp.where(xp.any(feasible), best, 0.0), dev)

    def get_config(self):
        return {**super().get_config(), self._arg: self.value,
                "num_thresholds": self.num_thresholds, "class_id": self.class_id}


class SensitivityAtSpecificity(_SensitivitySpecificity):
    """The best sensitivity (recall) among the thresholds where specificity >= ``specificity``;
    mirrors ``tf.keras.metrics.SensitivityAtSpecificity(specificity, num_thresholds=200,
    class_id=None, name=None, dtype=None)``."""
    _arg, _constrained, _dependent = "specificity", "specificity", "sensitivity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)


class SpecificityAtSensitivity(_SensitivitySpecificity):
    """The best specificity among the thresholds where sensitivity >= ``sensitivity``;
    mirrors ``tf.keras.metrics.SpecificityAtSensitivity(sensitivity, num_thresholds=200,
    class_id=None, name=None, dtype=None)``."""
    _arg, _constrained, _dependent = "sensitivity", "sensitivity", "specificity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)


class PrecisionAtRecall(_SensitivitySpecificity):
    """The best precision among the thresholds where recall >= ``recall``; mirrors
    ``tf.keras.metrics.PrecisionAtRecall(recall, num_thresholds=200, class_id=None, name=None,
    dtype=None)``."""
    _arg, _constrained, _dependent = "recall", "sensitivity", "precision"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)


class RecallAtPrecision(_SensitivitySpecificity):
    """The best recall among the thresholds where precision >= ``precision``; mirrors
    ``tf.keras.metrics.RecallAtPrecision(precision, num_thresholds=200, class_id=None,
    name=None, dtype=None)``."""
    _arg, _constrained, _dependent = "precision", "precision", "sensitivity"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)


@computed_on_host
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
        self._sorted = _Thresholds(self.thresholds)
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
        state_dev = device_of(self.true_positives) if self._built else None
        t, p, w, dev, xp, outside = _prepare(self.name, y_true, y_pred, sample_weight, state_dev,
                                             transform=_sigmoid if self.from_logits else None)
        if self.multi_label:
            if p.ndim < 2:
                raise ValueError(f"{self.name}: multi_label needs predictions of shape "
                                 f"(batch, ..., labels), got {p.shape}")
            n_labels = p.shape[-1]
            if not self._built:
                with tnp.default_device(dev):     # the state lives where the data does
                    self._build(n_labels)
            elif self.num_labels != n_labels:
                raise ValueError(f"{self.name}: built for {self.num_labels} labels, got "
                                 f"predictions of shape {p.shape}")
            t2, p2 = t.reshape(-1, n_labels), p.reshape(-1, n_labels)
            w2 = None if w is None else w.reshape(-1, n_labels)
            counts = _counts(xp, dev, t2, p2, w2, self._sorted)
        else:
            if self.label_weights is not None:
                # one weight per label (the last axis), as Keras broadcasts them
                lw = self._label_weights_on(dev)
                try:
                    lw = xp.broadcast_to(lw, p.shape)
                except ValueError:
                    raise ValueError(f"{self.name}: label_weights of shape {lw.shape} do not "
                                     f"match predictions of shape {p.shape} (expected one "
                                     f"weight per label, the last axis)") from None
                w = lw if w is None else w * lw
            counts = _counts(xp, dev, t.ravel(), p.ravel(), None if w is None else w.ravel(),
                             self._sorted)
        for v, c in zip((self.true_positives, self.false_positives, self.true_negatives,
                         self.false_negatives), counts):
            _add_counts(xp, v, c, dev, outside)

    def _label_weights_on(self, device):
        """``label_weights`` as a backend array on ``device`` (copied there once)."""
        got = self.__dict__.get("_lw_on")
        if got is None or got[0] is not device:
            got = self._lw_on = (device, backend_on(self.label_weights, device))
        return got[1]

    @staticmethod
    def _pr_interpolated(xp, tp, fp, fn):
        # Between adjacent thresholds precision is interpolated as a function of the number of
        # predicted positives (Davis & Goadrich 2006); the area of each piece has a closed form.
        p = tp + fp
        dtp = tp[:-1] - tp[1:]
        dp = p[:-1] - p[1:]
        slope = div_no_nan(dtp, xp.maximum(dp, 0), xp)
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = xp.where(both, div_no_nan(p[:-1], xp.maximum(p[1:], 0), xp), 1.0)
        with _np.errstate(divide="ignore"):
            log_ratio = xp.log(xp.where(ratio > 0, ratio, 1.0))
        return div_no_nan(slope * (dtp + intercept * log_ratio), xp.maximum(tp[1:] + fn[1:], 0),
                          xp)

    def result(self):
        if not self._built:
            return self._out(0.0)
        dev = device_of(self.true_positives)
        xp = array_module(dev)
        tp, fp, tn, fn = (backend_array(v).astype(_np.float64) for v in (
            self.true_positives, self.false_positives, self.true_negatives,
            self.false_negatives))
        if self.curve == "PR" and self.summation_method == "interpolation":
            pieces = self._pr_interpolated(xp, tp, fp, fn)
        else:
            recall = div_no_nan(tp, tp + fn, xp)
            if self.curve == "ROC":
                x, y = div_no_nan(fp, fp + tn, xp), recall
            else:
                x, y = recall, div_no_nan(tp, tp + fp, xp)
            if self.summation_method == "interpolation":
                h = (y[:-1] + y[1:]) / 2
            elif self.summation_method == "minoring":
                h = xp.minimum(y[:-1], y[1:])
            else:
                h = xp.maximum(y[:-1], y[1:])
            pieces = (x[:-1] - x[1:]) * h
        if self.multi_label:
            by_label = pieces.sum(axis=0)
            if self.label_weights is None:
                return self._result(by_label.mean(), dev)
            lw = self._label_weights_on(dev)
            return self._result(div_no_nan(xp.sum(by_label * lw), xp.sum(lw), xp), dev)
        return self._result(pieces.sum(), dev)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "curve": self.curve, "summation_method": self.summation_method,
                "thresholds": list(self._inner) if self._explicit_thresholds else None,
                "multi_label": self.multi_label, "num_labels": self.num_labels,
                "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
                "from_logits": self.from_logits}


@computed_on_host
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
        dev = input_device(y_pred, y_true, sample_weight, default=device_of(self.total_cm))
        xp = array_module(dev)
        t, p = backend_on(y_true, dev), backend_on(y_pred, dev)
        if not self.sparse_y_pred:
            p = xp.argmax(p, axis=self.axis)
        if not self.sparse_y_true:
            t = xp.argmax(t, axis=self.axis)
        if t.size != p.size:
            raise ValueError(f"{self.name}: y_true of shape {t.shape} and y_pred of shape "
                             f"{p.shape} have different numbers of entries")
        w = None
        if sample_weight is not None:
            w = backend_on(sample_weight, dev).astype(_np.float64)
            w = xp.broadcast_to(w, p.shape) if w.size != p.size else w
            w = w.ravel()
        t, p = t.ravel().astype(_np.int64), p.ravel().astype(_np.int64)
        keep = None
        if self.ignore_class is not None:
            # ignored entries weigh 0 (no selection: its size would need a host read)
            keep = t != self.ignore_class
            w = keep.astype(_np.float64) if w is None else xp.where(keep, w, 0.0)
        n = self.num_classes
        bad = (t < 0) | (t >= n) | (p < 0) | (p >= n)
        if keep is not None:
            bad &= keep
        any_bad = None
        if reads_free(xp):
            if bad.any():
                tk, pk = (t, p) if keep is None else (t[keep], p[keep])
                raise ValueError(f"{self.name}: class ids must be in [0, {n}), got y_true in "
                                 f"[{tk.min()}, {tk.max()}], y_pred in [{pk.min()}, {pk.max()}]")
        else:
            # on a device an id outside the classes makes the matrix NaN (no host read)
            any_bad = xp.any(bad)
            t, p = xp.where(bad, 0, t), xp.where(bad, 0, p)
        if keep is not None:
            t, p = xp.where(keep, t, 0), xp.where(keep, p, 0)
        cm = xp.bincount(t * n + p, weights=w, minlength=n * n).reshape(n, n)
        _add_counts(xp, self.total_cm, cm.astype(_np.float64), dev, any_bad)

    def result(self):
        dev = device_of(self.total_cm)
        xp = array_module(dev)
        cm = backend_array(self.total_cm)
        tp = xp.diag(cm)
        denom = cm.sum(axis=0) + cm.sum(axis=1) - tp
        valid = xp.count_nonzero(denom)
        return self._result(div_no_nan(xp.sum(div_no_nan(tp, denom, xp)), valid, xp), dev)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}
