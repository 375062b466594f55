"""tt.preprocessing.sequence against tf-keras 2.21 (tests/fixtures/make_kpre_fixtures.py)."""
import json
import os
import random
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _kpre_ref import arrays, meta  # noqa: E402

from tnp_train.preprocessing import sequence as S  # noqa: E402

SEQS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], []]


@pytest.mark.parametrize("name", ["default", "post", "trunc_post_maxlen3", "pre_maxlen2_value",
                                  "float"])
def test_pad_sequences_matches_tf(name):
    kw = meta()["pad_cases"][name]
    out = S.pad_sequences(SEQS, **kw)
    ref = arrays()[f"pad/{name}"]
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)


def test_pad_sequences_samples_strings_and_tnp_input():
    import tnp
    out = S.pad_sequences([np.ones((2, 3)), np.full((4, 3), 2.0)], maxlen=3, dtype="float64")
    np.testing.assert_array_equal(out, arrays()["pad/samples2d"])
    assert S.pad_sequences([["a", "b"], ["c"]], dtype=object,
                           value="<p>").tolist() == meta()["pad_strings"]
    np.testing.assert_array_equal(S.pad_sequences(tnp.asarray([[1, 2], [3, 4]]), maxlen=3),
                                  [[0, 1, 2], [0, 3, 4]])


@pytest.mark.parametrize("case", ["padding", "truncating", "noniterable", "not_sequence",
                                  "shape", "str_value"])
def test_pad_sequences_errors_are_tfs(case):
    calls = {"padding": lambda: S.pad_sequences(SEQS, padding="middle"),
             "truncating": lambda: S.pad_sequences(SEQS, maxlen=2, truncating="x"),
             "noniterable": lambda: S.pad_sequences([[1], 3]),
             "not_sequence": lambda: S.pad_sequences(5),
             "shape": lambda: S.pad_sequences([np.ones((2, 3)), np.ones((2, 4))]),
             "str_value": lambda: S.pad_sequences([[1]], value="x")}
    kind, msg = meta()["pad_errors"][case]
    with pytest.raises(ValueError) as e:
        calls[case]()
    assert kind == "ValueError" and str(e.value) == msg


def test_make_sampling_table_matches_tf():
    np.testing.assert_allclose(S.make_sampling_table(12), arrays()["sampling_table"],
                               rtol=1e-15)
    np.testing.assert_allclose(S.make_sampling_table(7, sampling_factor=1e-2),
                               arrays()["sampling_table_f"], rtol=1e-15)


@pytest.mark.parametrize("name", ["default", "window2_cat", "neg2_noshuffle", "table", "noneg"])
def test_skipgrams_equal_tf_after_the_same_random_seed(name):
    ref = meta()["skipgrams"]
    case = ref["cases"][name]
    kw = dict(case["kwargs"])
    if "sampling_table" in kw:
        kw["sampling_table"] = np.asarray(kw["sampling_table"])
    random.seed(1234)
    couples, labels = S.skipgrams(ref["sequence"], 10, **kw)
    assert couples == case["couples"]
    assert labels == case["labels"]


@pytest.mark.parametrize("name", ["basic", "rate_stride", "start_end_rev"])
def test_timeseries_generator_matches_tf(name):
    ref = meta()["tsg"][name]
    data = np.arange(40, dtype="float64").reshape(20, 2)
    g = S.TimeseriesGenerator(data, np.arange(20) * 10, **ref["kwargs"])
    assert len(g) == ref["len"]
    for i in range(len(g)):
        x, y = g[i]
        np.testing.assert_array_equal(x, arrays()[f"tsg/{name}/{i}/x"])
        np.testing.assert_array_equal(y, arrays()[f"tsg/{name}/{i}/y"])


def test_timeseries_generator_json_shuffle_and_errors():
    data = np.arange(40, dtype="float64").reshape(20, 2)
    targets = np.arange(20) * 10
    g = S.TimeseriesGenerator(data, targets, length=4, batch_size=3)
    assert json.loads(g.to_json()) == meta()["tsg"]["json"]
    for key, call in (("len", lambda: S.TimeseriesGenerator(data, targets[:5], length=2)),
                      ("start", lambda: S.TimeseriesGenerator(data, targets, length=30))):
        kind, msg = meta()["tsg"]["errors"][key]
        with pytest.raises(ValueError) as e:
            call()
        assert kind == "ValueError" and str(e.value) == msg
    # shuffle draws rows from NumPy's global generator, as TF
    g = S.TimeseriesGenerator(data, targets, length=4, batch_size=5, shuffle=True)
    np.random.seed(0)
    x, y = g[0]
    np.random.seed(0)
    rows = np.random.randint(4, 20, size=5)
    np.testing.assert_array_equal(y, targets[rows])
    np.testing.assert_array_equal(x, np.stack([data[r - 4:r] for r in rows]))


def test_timeseries_generator_feeds_fit():
    import tnp_train as tt
    data = np.sin(np.arange(60, dtype="float32") / 5).reshape(60, 1)
    g = S.TimeseriesGenerator(data, data, length=5, batch_size=8)
    model = tt.Sequential([tt.layers.Flatten(input_shape=(5, 1)), tt.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    hist = model.fit(g, epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2 and np.isfinite(hist.history["loss"]).all()
