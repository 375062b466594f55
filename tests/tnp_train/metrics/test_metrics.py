"""tt.metrics against NumPy written out here and scikit-learn."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn import metrics as skm

import tnp
import tnp_train as tt

M = tt.metrics


def f(x):
    return float(np.asarray(x))


# ---------------------------------------------------------------------- base and reductions
def test_mean_and_sum_with_weights_and_reset():
    m = M.Mean()
    assert m.name == "mean" and m.dtype == "float32"
    m.update_state([1.0, 2.0, 3.0])
    m.update_state(np.array([[4.0], [5.0]]), sample_weight=np.array([2.0, 0.5]))
    assert f(m.result()) == pytest.approx((6 + 8 + 2.5) / (3 + 2.5))
    assert m.result().dtype == np.float32
    assert [v.name for v in m.variables] == ["mean/total", "mean/count"]
    for v in m.variables:
        assert not v.trainable
        assert v.aggregation == tt.VariableAggregation.SUM
        assert v.synchronization == tt.VariableSynchronization.ON_READ
    assert m.trainable_weights == [] and len(m.weights) == 2
    m.reset_state()
    assert f(m.result()) == 0.0
    assert f(m(np.array([1.0, 3.0]))) == 2.0
    m.reset_states()
    assert [float(v) for v in m.variables] == [0.0, 0.0]
    s = M.Sum()
    s.update_state(np.ones((2, 3)), sample_weight=np.array([1.0, 3.0]))
    assert f(s.result()) == 12.0
    with pytest.raises(ValueError, match="sample_weight"):
        s.update_state(np.ones((2, 3)), sample_weight=np.ones(4))


def test_metric_updates_are_not_recorded_on_a_tape():
    v = tt.Variable(np.array([[0.2, 0.8], [0.6, 0.4]]))
    m = M.SparseCategoricalAccuracy()
    with tt.GradientTape() as tape:
        y = v * 2.0
        m.update_state(np.array([1, 1]), y)
        M.AUC()(np.array([[0, 1], [1, 0]]), v)
        M.Mean()(y)
    assert len(tape._nodes) == 1
    assert f(m.result()) == 0.5


def test_updates_from_threads_are_all_counted():
    m = M.Mean()

    def work():
        for _ in range(50):
            m.update_state(np.ones(3))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert float(m.count) == 4 * 50 * 3


def test_custom_metric_subclass():
    class CountPositives(M.Metric):
        def __init__(self, name="count_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.n = self.add_weight("n")

        def update_state(self, values, sample_weight=None):
            self.n.assign_add(tnp.asarray(np.float32((np.asarray(values) > 0).sum())))

        def result(self):
            return tnp.asarray(self.n.numpy())

    c = CountPositives()
    c.update_state([1, -1, 2])
    assert f(c([3])) == 3.0
    assert c.get_config() == {"name": "count_positives", "dtype": "float32"}
    c.reset_state()
    assert f(c.result()) == 0.0


# ---------------------------------------------------------------------- accuracies
@settings(max_examples=15, deadline=None)
@given(b=st.integers(1, 8), c=st.integers(2, 6), seed=st.integers(0, 2**16))
def test_accuracies_match_numpy(b, c, seed):
    r = np.random.default_rng(seed)
    p = r.random((b, c))
    y = r.integers(0, c, b)
    oh = np.eye(c)[y]
    w = r.random(b)
    want = (p.argmax(-1) == y).astype(float)
    np.testing.assert_array_equal(np.asarray(M.sparse_categorical_accuracy(y, p)), want)
    np.testing.assert_array_equal(np.asarray(M.sparse_categorical_accuracy(y[:, None], p)), want)
    np.testing.assert_array_equal(np.asarray(M.categorical_accuracy(oh, p)), want)
    m = M.SparseCategoricalAccuracy()
    m.update_state(y, p, sample_weight=w)
    assert f(m.result()) == pytest.approx((want * w).sum() / w.sum(), rel=1e-5, abs=1e-7)
    m2 = M.CategoricalAccuracy()
    assert f(m2(oh, p)) == pytest.approx(want.mean(), rel=1e-6)
    k = int(r.integers(1, c + 1))
    rank = (p > p[np.arange(b), y][:, None]).sum(-1)
    topk = (rank < k).astype(float)
    np.testing.assert_array_equal(np.asarray(M.sparse_top_k_categorical_accuracy(y, p, k=k)), topk)
    np.testing.assert_array_equal(np.asarray(M.top_k_categorical_accuracy(oh, p, k=k)), topk)
    assert f(M.SparseTopKCategoricalAccuracy(k=k)(y, p)) == pytest.approx(topk.mean(), rel=1e-6)
    assert f(M.TopKCategoricalAccuracy(k=k)(oh, p)) == pytest.approx(topk.mean(), rel=1e-6)
    yb = r.integers(0, 2, (b, c)).astype(float)
    bin_want = (yb == (p > 0.3)).mean(-1)
    np.testing.assert_allclose(np.asarray(M.binary_accuracy(yb, p, threshold=0.3)), bin_want,
                               rtol=1e-6)
    assert f(M.BinaryAccuracy(threshold=0.3)(yb, p)) == pytest.approx(bin_want.mean(), rel=1e-5)
    assert f(M.Accuracy()(y, p.argmax(-1))) == pytest.approx(want.mean(), rel=1e-6)


# TF 2.4's positional orders (tf.keras.metrics): k comes first for the top-k metrics,
# (name, dtype, ...) for the other named wrappers.
TF_POSITIONAL = {
    "TopKCategoricalAccuracy": ["k", "name", "dtype"],
    "SparseTopKCategoricalAccuracy": ["k", "name", "dtype"],
    "BinaryAccuracy": ["name", "dtype", "threshold"],
    "Accuracy": ["name", "dtype"],
    "CategoricalCrossentropy": ["name", "dtype", "from_logits", "label_smoothing"],
    "BinaryCrossentropy": ["name", "dtype", "from_logits", "label_smoothing"],
    "CosineSimilarity": ["name", "dtype", "axis"],
}


@pytest.mark.parametrize("cls_name", sorted(TF_POSITIONAL))
def test_named_metrics_take_positional_arguments_in_tf_order(cls_name):
    import inspect
    cls = getattr(M, cls_name)
    params = list(inspect.signature(cls).parameters)
    assert params[:len(TF_POSITIONAL[cls_name])] == TF_POSITIONAL[cls_name]


def test_top_k_metric_takes_k_positionally_like_tf():
    y, p = [0, 1, 2], [[0.1, 0.5, 0.4], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]
    m = M.SparseTopKCategoricalAccuracy(2)      # k=2, as tf.keras reads it
    assert m.name == "sparse_top_k_categorical_accuracy"
    assert f(m(y, p)) == pytest.approx(1 / 3)
    m = M.TopKCategoricalAccuracy(1, "top1")
    assert m.name == "top1" and f(m(np.eye(3)[y], p)) == pytest.approx(0.0)
    assert M.BinaryAccuracy("ba", None, 0.7).get_config()["threshold"] == 0.7
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        M.Accuracy("a", name="b")
    with pytest.raises(TypeError, match="at most 3 positional"):
        M.SparseTopKCategoricalAccuracy(2, "a", None, 4)
    with pytest.raises(TypeError, match="unexpected keyword"):
        M.Accuracy(threshold=0.5)


def test_top_k_ties_count_as_in_like_tf_in_top_k():
    p = np.array([[0.5, 0.5, 0.5, 0.1]])
    assert f(M.sparse_top_k_categorical_accuracy(np.array([2]), p, k=1)[0]) == 1.0
    assert f(M.sparse_top_k_categorical_accuracy(np.array([3]), p, k=3)[0]) == 0.0


def test_accuracy_errors_name_metric_and_shapes():
    with pytest.raises(ValueError, match=r"sparse_categorical_accuracy.*\(3,\).*\(2, 4\)"):
        M.sparse_categorical_accuracy(np.zeros(3), np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"categorical_accuracy.*\(2, 3\).*\(2, 4\)"):
        M.CategoricalAccuracy()(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="out of range"):
        M.sparse_top_k_categorical_accuracy(np.array([5]), np.zeros((1, 3)))


# ---------------------------------------------------------------------- regression / crossentropy
def test_regression_and_crossentropy_metrics():
    r = np.random.default_rng(0)
    t, p = r.random((6, 3)), r.random((6, 3))
    w = r.random(6)
    per_mse = ((t - p) ** 2).mean(-1)
    m = M.MeanSquaredError()
    m.update_state(t[:3], p[:3], sample_weight=w[:3])
    m.update_state(t[3:], p[3:], sample_weight=w[3:])
    assert f(m.result()) == pytest.approx((per_mse * w).sum() / w.sum(), rel=1e-5)
    assert f(M.MeanAbsoluteError()(t, p)) == pytest.approx(np.abs(t - p).mean(), rel=1e-5)
    rm = M.RootMeanSquaredError()
    rm.update_state(t, p, sample_weight=w)
    want = np.sqrt((((t - p) ** 2) * w[:, None]).sum() / (w.sum() * 3))
    assert f(rm.result()) == pytest.approx(want, rel=1e-5)
    assert f(M.MeanAbsolutePercentageError()(t, p)) == pytest.approx(
        100 * np.abs((t - p) / t).mean(), rel=1e-5)
    y = r.integers(0, 3, 6)
    probs = p / p.sum(-1, keepdims=True)
    want = -np.log(probs[np.arange(6), y]).mean()
    assert f(M.SparseCategoricalCrossentropy()(y, probs)) == pytest.approx(want, rel=1e-5)
    assert f(M.CategoricalCrossentropy()(np.eye(3)[y], probs)) == pytest.approx(want, rel=1e-5)
    logits = np.log(probs)
    assert f(M.SparseCategoricalCrossentropy(from_logits=True)(y, logits)) == pytest.approx(
        want, rel=1e-5)
    yb = (t > 0.5).astype(float)
    bce = -(yb * np.log(p + 1e-7) + (1 - yb) * np.log(1 - p + 1e-7)).mean()
    assert f(M.BinaryCrossentropy()(yb, p)) == pytest.approx(bce, rel=1e-4)
    tt_, pp = t / t.sum(-1, keepdims=True), probs
    assert f(M.KLDivergence()(tt_, pp)) == pytest.approx((tt_ * np.log(tt_ / pp)).sum(-1).mean(),
                                                         rel=1e-4)
    nt = t / np.linalg.norm(t, axis=-1, keepdims=True)
    n_p = p / np.linalg.norm(p, axis=-1, keepdims=True)
    assert f(M.CosineSimilarity()(t, p)) == pytest.approx((nt * n_p).sum(-1).mean(), rel=1e-5)
    assert M.KLDivergence().name == "kullback_leibler_divergence"
    assert M.LogCoshError().name == "logcosh"


# ---------------------------------------------------------------------- confusion metrics
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**16), weighted=st.booleans())
def test_confusion_counts_precision_recall_match_numpy(n, seed, weighted):
    r = np.random.default_rng(seed)
    y = r.integers(0, 2, n)
    p = r.random(n)
    w = r.random(n) if weighted else np.ones(n)
    thresholds = [0.7, 0.2, 0.5]
    pos = p[None, :] > np.array(thresholds)[:, None]
    tp = (w * (pos & (y == 1))).sum(1)
    fp = (w * (pos & (y == 0))).sum(1)
    tn = (w * (~pos & (y == 0))).sum(1)
    fn = (w * (~pos & (y == 1))).sum(1)
    sw = w if weighted else None
    for cls, want in ((M.TruePositives, tp), (M.FalsePositives, fp), (M.TrueNegatives, tn),
                      (M.FalseNegatives, fn)):
        m = cls(thresholds=thresholds)
        m.update_state(y, p, sample_weight=sw)
        np.testing.assert_allclose(np.asarray(m.result()), want, rtol=1e-5, atol=1e-5)
        single = cls()
        single.update_state(y, p, sample_weight=sw)
        assert f(single.result()) == pytest.approx(want[2], rel=1e-5, abs=1e-5)
    prec = M.Precision(thresholds=thresholds)
    prec.update_state(y, p, sample_weight=sw)
    np.testing.assert_allclose(np.asarray(prec.result()),
                               np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1e-300), 0), rtol=1e-5)
    rec = M.Recall(thresholds=thresholds)
    rec.update_state(y, p, sample_weight=sw)
    np.testing.assert_allclose(np.asarray(rec.result()),
                               np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1e-300), 0), rtol=1e-5)
    if not weighted:
        assert f(M.Precision()(y, p)) == pytest.approx(
            skm.precision_score(y, p > 0.5, zero_division=0), rel=1e-6)
        assert f(M.Recall()(y, p)) == pytest.approx(
            skm.recall_score(y, p > 0.5, zero_division=0), rel=1e-6)


def test_precision_recall_top_k_and_class_id():
    y = np.array([[0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 1, 1]])
    p = np.array([[0.1, 0.9, 0.8, 0.3], [0.6, 0.2, 0.7, 0.1], [0.2, 0.3, 0.4, 0.35]])
    # top_k=2: the two highest per row are positive
    top = np.zeros_like(p, bool)
    np.put_along_axis(top, np.argsort(-p, axis=1)[:, :2], True, axis=1)
    tp = (top & (y == 1)).sum()
    assert f(M.Precision(top_k=2)(y, p)) == pytest.approx(tp / top.sum())
    assert f(M.Recall(top_k=2)(y, p)) == pytest.approx(tp / y.sum())
    # class_id=3 with threshold 0.32
    col_pos = p[:, 3] > 0.32
    assert f(M.Precision(thresholds=0.32, class_id=3)(y, p)) == pytest.approx(
        (col_pos & (y[:, 3] == 1)).sum() / col_pos.sum())
    assert f(M.Recall(class_id=0)(y, p)) == 1.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        M.Precision()(np.array([1]), np.array([1.5]))
    with pytest.raises(ValueError, match="thresholds"):
        M.Precision(thresholds=[1.5])


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 30), seed=st.integers(0, 2**16), weighted=st.booleans())
def test_auc_roc_equals_sklearn_when_scores_fall_in_distinct_buckets(n, seed, weighted):
    r = np.random.default_rng(seed)
    num_thresholds = 101
    buckets = r.choice(num_thresholds - 1, size=n, replace=False)
    p = (buckets + 0.5) / (num_thresholds - 1)
    y = r.integers(0, 2, n)
    w = r.random(n) + 0.1 if weighted else None
    m = M.AUC(num_thresholds=num_thresholds)
    m.update_state(y, p, sample_weight=w)
    if y.min() == y.max():
        assert f(m.result()) == 0.0 or np.isfinite(f(m.result()))
        return
    assert f(m.result()) == pytest.approx(skm.roc_auc_score(y, p, sample_weight=w), abs=1e-6)


def ref_pr_auc_interpolated(tp, fp, fn):
    """Area under precision-recall with precision interpolated along each segment as
    tp(x) / x for x (predicted positives) moving linearly; by fine numerical quadrature."""
    total = 0.0
    for i in range(len(tp) - 1):
        x0, x1 = tp[i + 1] + fp[i + 1], tp[i] + fp[i]
        if x1 <= x0 or x0 <= 0:
            if x1 > x0 and tp[i] > tp[i + 1]:  # segment starting at zero predicted positives
                xs = np.linspace(x0, x1, 200001)[1:]
            else:
                continue
        else:
            xs = np.linspace(x0, x1, 200001)
        slope = (tp[i] - tp[i + 1]) / (x1 - x0)
        tps = tp[i + 1] + slope * (xs - x0)
        prec = tps / xs
        rec = tps / (tp[0] + fn[0])
        total += np.trapezoid(prec, rec)
    return total


def test_auc_pr_interpolation_minoring_majoring():
    r = np.random.default_rng(3)
    y = r.integers(0, 2, 60)
    p = np.clip(0.35 * y + 0.65 * r.random(60), 0, 1)
    thresholds = [0.25, 0.5, 0.75]
    full = [-1e-7] + thresholds + [1 + 1e-7]
    pos = p[None, :] > np.array(full)[:, None]
    tp = (pos & (y == 1)).sum(1).astype(float)
    fp = (pos & (y == 0)).sum(1).astype(float)
    tn = (~pos & (y == 0)).sum(1).astype(float)
    fn = (~pos & (y == 1)).sum(1).astype(float)
    pr = M.AUC(curve="PR", thresholds=thresholds)
    pr.update_state(y, p)
    assert f(pr.result()) == pytest.approx(ref_pr_auc_interpolated(tp, fp, fn), rel=1e-5)
    rec = tp / (tp + fn)
    prec = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0)
    fpr = fp / (fp + tn)
    for method, h in (("minoring", np.minimum), ("majoring", np.maximum)):
        m = M.AUC(curve="PR", summation_method=method, thresholds=thresholds)
        m.update_state(y, p)
        want = ((rec[:-1] - rec[1:]) * h(prec[:-1], prec[1:])).sum()
        assert f(m.result()) == pytest.approx(want, rel=1e-6)
        m = M.AUC(curve="ROC", summation_method=method, thresholds=thresholds)
        m.update_state(y, p)
        want = ((fpr[:-1] - fpr[1:]) * h(rec[:-1], rec[1:])).sum()
        assert f(m.result()) == pytest.approx(want, rel=1e-6)


def test_auc_multi_label_label_weights_and_logits():
    r = np.random.default_rng(4)
    y = r.integers(0, 2, (40, 3))
    p = r.random((40, 3)) * 0.6 + 0.4 * y
    m = M.AUC(num_thresholds=2000, multi_label=True)
    assert m.variables == []  # built on the first update, as TF
    m.update_state(y[:20], p[:20])
    m.update_state(y[20:], p[20:])
    per_label = [skm.roc_auc_score(y[:, j], p[:, j]) for j in range(3)]
    assert f(m.result()) == pytest.approx(np.mean(per_label), abs=2e-3)
    lw = np.array([1.0, 0.0, 3.0])
    m = M.AUC(num_thresholds=2000, multi_label=True, label_weights=lw)
    m.update_state(y, p)
    assert f(m.result()) == pytest.approx((lw * per_label).sum() / lw.sum(), abs=2e-3)
    pooled = M.AUC(num_thresholds=2000)
    pooled.update_state(y, p)
    assert f(pooled.result()) == pytest.approx(skm.roc_auc_score(y.ravel(), p.ravel()), abs=2e-3)
    logits = np.log(p / (1 - p + 1e-12) + 1e-12)
    lg = M.AUC(num_thresholds=2000, from_logits=True)
    lg.update_state(y, logits)
    assert f(lg.result()) == pytest.approx(f(pooled.result()), abs=2e-3)
    m.reset_state()
    assert f(m.result()) == 0.0


def test_mean_iou_matches_sklearn_jaccard():
    r = np.random.default_rng(5)
    t = r.integers(0, 4, (3, 5))
    p = r.integers(0, 4, (3, 5))
    m = M.MeanIoU(num_classes=4)
    m.update_state(t, p)
    present = np.union1d(t, p)
    want = skm.jaccard_score(t.ravel(), p.ravel(), labels=present, average="macro")
    assert f(m.result()) == pytest.approx(want, rel=1e-6)
    w = r.random((3, 5))
    mw = M.MeanIoU(num_classes=4)
    mw.update_state(t, p, sample_weight=w)
    want = skm.jaccard_score(t.ravel(), p.ravel(), labels=present, average="macro",
                             sample_weight=w.ravel())
    assert f(mw.result()) == pytest.approx(want, rel=1e-5)
    dense = M.MeanIoU(num_classes=4, sparse_y_pred=False, ignore_class=0)
    probs = np.eye(4)[p]
    dense.update_state(t, probs)
    keep = t.ravel() != 0
    cm = skm.confusion_matrix(t.ravel()[keep], p.ravel()[keep], labels=range(4))
    inter = np.diag(cm)
    union = cm.sum(0) + cm.sum(1) - inter
    assert f(dense.result()) == pytest.approx((inter[union > 0] / union[union > 0]).mean())
    assert m.name == "mean_io_u"
    with pytest.raises(ValueError, match="class ids"):
        m.update_state(np.array([5]), np.array([0]))


# ---------------------------------------------------------------------- lookup and config
ALL = [M.Mean(), M.Sum(), M.Accuracy(), M.BinaryAccuracy(threshold=0.3), M.CategoricalAccuracy(),
       M.SparseCategoricalAccuracy(), M.TopKCategoricalAccuracy(k=3),
       M.SparseTopKCategoricalAccuracy(k=2), M.Precision(thresholds=[0.3, 0.6], class_id=1),
       M.Recall(top_k=2), M.AUC(num_thresholds=50, curve="PR", multi_label=True),
       M.AUC(thresholds=[0.2, 0.4]), M.TruePositives(thresholds=0.4), M.FalsePositives(),
       M.TrueNegatives(), M.FalseNegatives(), M.MeanSquaredError(), M.MeanAbsoluteError(),
       M.RootMeanSquaredError(), M.MeanAbsolutePercentageError(),
       M.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
       M.SparseCategoricalCrossentropy(from_logits=True), M.BinaryCrossentropy(),
       M.KLDivergence(), M.MeanIoU(num_classes=3), M.CosineSimilarity(axis=0),
       M.MeanMetricWrapper(M.sparse_categorical_accuracy, name="acc2")]


@pytest.mark.parametrize("metric", ALL, ids=lambda m: type(m).__name__)
def test_config_round_trip(metric):
    s = M.serialize(metric)
    back = M.deserialize(s)
    assert type(back) is type(metric) and back.get_config() == metric.get_config()


def test_get_names():
    assert M.get("accuracy") is M.accuracy is M.acc
    assert M.get("sparse_categorical_accuracy") is M.sparse_categorical_accuracy
    assert M.get("mse") is M.mean_squared_error
    assert M.get("binary_crossentropy") is tt.losses.binary_crossentropy
    assert isinstance(M.get("AUC"), M.AUC)
    assert M.get(None) is None
    m = M.Mean()
    assert M.get(m) is m
    assert M.serialize(M.acc) == "accuracy"
    with pytest.raises(ValueError, match="Unknown metric"):
        M.get("accuracyy")
    assert M.BinaryAccuracy("ba", None, 0.7).get_config() == {"name": "ba", "dtype": "float32",
                                                              "threshold": 0.7}
