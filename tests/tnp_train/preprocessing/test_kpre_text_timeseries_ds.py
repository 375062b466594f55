"""text_dataset_from_directory and timeseries_dataset_from_array against tf-keras 2.21
(tests/fixtures/make_kpre_fixtures.py)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _kpre_ref import FILES, arrays, meta  # noqa: E402

import tnp_train.preprocessing as P  # noqa: E402

TEXTS = os.path.join(FILES, "texts")


def _strings(batch):
    return [bytes(s).decode() if not isinstance(s, bytes) else s.decode()
            for s in np.asarray(batch).tolist()]


def test_text_dataset_from_directory_matches_tf():
    ref = meta()["tdfd"]
    ds = P.text_dataset_from_directory(TEXTS, batch_size=4, shuffle=False, max_length=6)
    assert ds.class_names == ref["class_names"]
    got = [[_strings(bx), np.asarray(by).tolist()] for bx, by in ds]
    assert got == ref["noshuffle"]
    ds = P.text_dataset_from_directory(TEXTS, batch_size=10, shuffle=True, seed=4,
                                       label_mode="categorical", validation_split=0.4,
                                       subset="training")
    bx, by = next(iter(ds))
    assert sorted([t, lab] for t, lab in zip(_strings(bx), np.asarray(by).tolist())) == \
        ref["train_set"]


def test_text_dataset_binary_and_no_labels():
    ds = P.text_dataset_from_directory(TEXTS, batch_size=10, shuffle=False,
                                       label_mode="binary")
    bx, by = next(iter(ds))
    assert np.asarray(by).tolist() == [[0.0]] * 3 + [[1.0]] * 4
    (bx,) = list(P.text_dataset_from_directory(TEXTS, labels=None, shuffle=False))
    assert len(_strings(bx)) == 7
    with pytest.raises(ValueError, match="label_mode"):
        P.text_dataset_from_directory(TEXTS, label_mode="int64")


@pytest.mark.parametrize("name", ["basic", "stride", "start_end"])
def test_timeseries_dataset_matches_tf(name):
    kw = meta()["tsds"][name]
    data = np.arange(30, dtype="float32").reshape(15, 2)
    ds = P.timeseries_dataset_from_array(data, np.arange(15) * 10, **kw)
    batches = list(ds)
    i = 0
    for i, (bx, by) in enumerate(batches):
        np.testing.assert_array_equal(np.asarray(bx), arrays()[f"tsds/{name}/{i}/x"])
        np.testing.assert_array_equal(np.asarray(by), arrays()[f"tsds/{name}/{i}/y"])
    assert f"tsds/{name}/{i + 1}/x" not in arrays()


def test_timeseries_dataset_shuffle_holds_tfs_windows():
    data = np.arange(30, dtype="float32").reshape(15, 2)
    ds = P.timeseries_dataset_from_array(data, None, sequence_length=5, batch_size=100,
                                         shuffle=True, seed=8)
    (got,) = list(ds)
    ref = arrays()["tsds/shuffled_all"]
    key = lambda a: sorted(map(tuple, np.asarray(a).reshape(len(a), -1).tolist()))  # noqa
    assert key(got) == key(ref)


def test_timeseries_dataset_counts_windows_as_tf24():
    # TF 2.4: end - start - sequence_length * sampling_rate + 1 windows (later TF: one more
    # per extra step of sampling_rate)
    data = np.arange(20)
    ds = P.timeseries_dataset_from_array(data, None, sequence_length=4, sampling_rate=3,
                                         batch_size=100)
    (got,) = list(ds)
    n = 20 - 4 * 3 + 1
    np.testing.assert_array_equal(np.asarray(got),
                                  [data[s:s + 12:3] for s in range(n)])


def test_timeseries_dataset_errors():
    data = np.arange(10)
    for kw, msg in ((dict(start_index=11), "start_index"), (dict(end_index=10), "end_index"),
                    (dict(start_index=5, end_index=4), "higher than start_index"),
                    (dict(sampling_rate=0), "sampling_rate"),
                    (dict(sequence_stride=10), "sequence_stride")):
        with pytest.raises(ValueError, match=msg):
            P.timeseries_dataset_from_array(data, None, 3, **kw)
