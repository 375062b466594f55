"""SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision,
MeanRelativeError and MeanTensor against tf.keras's (tests/fixtures/metrics_extra.json, made by
make_metrics_extra_fixture.py with tf-keras 2.21) and against a NumPy sweep of thresholds."""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

FIX = json.loads((Path(__file__).resolve().parents[2] / "fixtures" /
                  "metrics_extra.json").read_text())
CASES = [("SensitivityAtSpecificity", 0.6, 200), ("SensitivityAtSpecificity", 0.9, 7),
         ("SpecificityAtSensitivity", 0.5, 200), ("SpecificityAtSensitivity", 0.8, 1),
         ("PrecisionAtRecall", 0.7, 200), ("PrecisionAtRecall", 0.99, 13),
         ("RecallAtPrecision", 0.6, 200), ("RecallAtPrecision", 1.0, 50)]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name, value, n", CASES)
def test_at_metrics_equal_tf_keras(name, value, n, weighted):
    m = getattr(tt.metrics, name)(value, num_thresholds=n)
    m.update_state(FIX["y1"], FIX["p1"], FIX["w1"] if weighted else None)
    m.update_state(tnp.asarray(FIX["y2"]), tnp.asarray(FIX["p2"]),
                   FIX["w2"] if weighted else None)
    # TF's state is float32: its result to float32 precision
    assert float(m.result()) == pytest.approx(FIX["results"][f"{name}_{value}_{n}_{int(weighted)}"],
                                              rel=1e-6, abs=1e-7)


def _numpy_best(y, p, value, constrained, dependent, n=200):
    thr = [0.0] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1.0]
    best = None
    for t in thr:
        pos = p > t
        tp, fp = np.sum(pos & (y == 1)), np.sum(pos & (y == 0))
        fn, tn = np.sum(~pos & (y == 1)), np.sum(~pos & (y == 0))
        r = {"sens": tp / (tp + fn) if tp + fn else 0.0, "spec": tn / (tn + fp) if tn + fp else 0.0,
             "prec": tp / (tp + fp) if tp + fp else 0.0}
        if r[constrained] >= value:
            best = r[dependent] if best is None else max(best, r[dependent])
    return 0.0 if best is None else best


@pytest.mark.parametrize("cls, c, d", [("SensitivityAtSpecificity", "spec", "sens"),
                                       ("SpecificityAtSensitivity", "sens", "spec"),
                                       ("PrecisionAtRecall", "sens", "prec"),
                                       ("RecallAtPrecision", "prec", "sens")])
@pytest.mark.parametrize("value", [0.0, 0.3, 0.75, 1.0])
def test_at_metrics_equal_a_numpy_threshold_sweep(cls, c, d, value):
    rng = np.random.default_rng(int(value * 100))
    y, p = rng.integers(0, 2, 64), rng.random(64)
    m = getattr(tt.metrics, cls)(value)
    m.update_state(y, p)
    # the result is float32 (the metric's dtype)
    assert float(m.result()) == pytest.approx(_numpy_best(y, p, value, c, d), rel=1e-6)


def test_at_metrics_class_id():
    p1, y1 = np.asarray(FIX["p1"]), np.asarray(FIX["y1"])
    m = tt.metrics.SensitivityAtSpecificity(0.6, class_id=1)
    m.update_state(np.eye(2)[y1], np.stack([1 - p1, p1], 1))
    assert float(m.result()) == pytest.approx(FIX["results"]["class_id"], rel=1e-6)


@pytest.mark.parametrize("cls, arg", [("SensitivityAtSpecificity", "specificity"),
                                      ("RecallAtPrecision", "precision")])
def test_at_metrics_bad_arguments_and_config(cls, arg):
    with pytest.raises(ValueError, match=f"`{arg}` must be in the range"):
        getattr(tt.metrics, cls)(1.5)
    with pytest.raises(ValueError, match="num_thresholds"):
        getattr(tt.metrics, cls)(0.5, num_thresholds=0)
    m = getattr(tt.metrics, cls)(0.4, num_thresholds=9, name="m")
    again = tt.metrics.deserialize(tt.metrics.serialize(m))
    assert type(again) is type(m) and again.get_config()[arg] == 0.4
    assert again.num_thresholds == 9


def test_mean_relative_error_equals_tf_keras():
    f = FIX["mre"]
    a, b = np.asarray(f["a"]), np.asarray(f["b"])
    m = tt.metrics.MeanRelativeError(normalizer=f["norm"])
    m.update_state(a, b)
    m.update_state(b, a * 2, sample_weight=np.array([1.0, 0.0, 2.0]))
    assert float(m.result()) == pytest.approx(f["result"], rel=1e-6)
    # and the formula, in NumPy
    e1 = np.abs(b - a) / f["norm"]
    e2 = np.abs(2 * a - b) / f["norm"] * np.array([1.0, 0.0, 2.0])[:, None]
    want = (e1.sum() + e2.sum()) / (e1.size + 4 * 3.0)
    assert float(m.result()) == pytest.approx(want, rel=1e-6)


def test_mean_tensor_equals_tf_keras():
    f = FIX["mre"]
    a, b = np.asarray(f["a"]), np.asarray(f["b"])
    m = tt.metrics.MeanTensor()
    with pytest.raises(ValueError, match="does not have any result yet"):
        m.result()
    m.update_state(a)
    m.update_state(tnp.asarray(b), sample_weight=np.array([[1.0], [0.5], [0.0]]))
    np.testing.assert_allclose(np.asarray(m.result()), FIX["mean_tensor"], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="same shape"):
        m.update_state(np.ones((2, 4)))
    m.reset_state()
    np.testing.assert_array_equal(np.asarray(m.result()), np.zeros((3, 4)))


def test_at_metric_in_fit():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype("float32")
    y = (x[:, 0] > 0).astype("float32")
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy",
                  metrics=[tt.metrics.SensitivityAtSpecificity(0.5, name="sas")])
    hist = model.fit(x, y, epochs=2, batch_size=16, verbose=0).history
    assert "sas" in hist and 0.0 <= hist["sas"][-1] <= 1.0
