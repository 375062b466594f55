"""``tt.data.experimental``'s transformations (TF 2.4's), against the same computation written
in plain Python."""
import itertools

import numpy as np
import pytest

import tnp_train as tt

D = tt.data.Dataset
E = tt.data.experimental


def _ints(ds):
    return [np.asarray(e).tolist() for e in ds]


def test_scan_emits_each_output_and_keeps_the_state():
    got = _ints(D.range(6).apply(E.scan(np.int64(0), lambda s, x: (s + x, s * 10))))
    sums = [0] + list(itertools.accumulate(range(6)))[:-1]
    assert got == [10 * s for s in sums]
    with pytest.raises(TypeError, match="pair"):
        list(D.range(2).apply(E.scan(np.int64(0), lambda s, x: s + x)))
    with pytest.raises(TypeError, match="dtype"):
        list(D.range(2).apply(E.scan(np.int64(0), lambda s, x: (s * 0.5, x))))


def test_unique_keeps_first_occurrences():
    values = [3, 1, 3, 2, 1, 5, 5, 0]
    got = _ints(D.from_tensor_slices(np.array(values, "int64")).apply(E.unique()))
    assert got == list(dict.fromkeys(values))
    words = D.from_tensor_slices(np.array(["b", "a", "b"])).apply(E.unique())
    assert [str(np.asarray(w)) for w in words] == ["b", "a"]
    with pytest.raises(TypeError, match="scalar integer or string"):
        D.from_tensor_slices(np.ones((3, 2))).apply(E.unique())


def test_group_by_window_and_reducer():
    got = _ints(D.range(13).apply(E.group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(4), window_size=4)))
    # full windows as they fill, then what is left, by key
    want, open_ = [], {}
    for x in range(13):
        open_.setdefault(x % 3, []).append(x)
        if len(open_[x % 3]) == 4:
            want.append(open_.pop(x % 3))
    want += [open_[k] for k in sorted(open_)]
    assert got == want
    sized = _ints(D.range(9).apply(E.group_by_window(
        lambda x: x % 2, lambda k, w: w.batch(10), window_size_func=lambda k: k + 2)))
    # evens in windows of 2: [0, 2] [4, 6] then [8]; odds in windows of 3: [1, 3, 5] then [7]
    assert sized == [[0, 2], [1, 3, 5], [4, 6], [8], [7]]
    with pytest.raises(ValueError, match="exactly one"):
        E.group_by_window(lambda x: x, lambda k, w: w, window_size=2,
                          window_size_func=lambda k: 2)
    reducer = E.Reducer(lambda k: np.int64(0), lambda s, x: s + x, lambda s: s * 2)
    got = _ints(D.range(10).apply(E.group_by_reducer(lambda x: x % 3, reducer)))
    assert got == [2 * sum(x for x in range(10) if x % 3 == k) for k in range(3)]


def _sequences():
    lengths = [1, 5, 2, 7, 3, 3, 8, 1, 4, 6]
    seqs = [np.arange(1, n + 1, dtype="int64") for n in lengths]
    return D.from_generator(lambda: iter(seqs),
                            output_signature=tt.data.TensorSpec((None,), "int64")), lengths


def test_bucket_by_sequence_length_batches_similar_lengths():
    ds, lengths = _sequences()
    bounds, sizes = [3, 6], [2, 2, 2]
    batches = [np.asarray(b) for b in ds.apply(E.bucket_by_sequence_length(
        lambda x: x.shape[0], bounds, sizes))]
    seen = []
    for b in batches:
        rows = [int((r != 0).sum()) for r in b]
        buckets = {next((i for i, t in enumerate(bounds) if n < t), len(bounds)) for n in rows}
        assert len(buckets) == 1 and b.shape[1] == max(rows) and len(rows) <= 2
        seen += rows
    assert sorted(seen) == sorted(lengths)
    padded = [np.asarray(b) for b in ds.apply(E.bucket_by_sequence_length(
        lambda x: x.shape[0], [3, 6, 10], [2, 2, 3, 1], pad_to_bucket_boundary=True))]
    assert {b.shape[1] for b in padded} <= {2, 5, 9}
    with pytest.raises(ValueError, match=r"len\(bucket_batch_sizes\)"):
        E.bucket_by_sequence_length(lambda x: x.shape[0], [3], [1])


def test_sample_and_choose_from_datasets():
    a, b = D.range(0, 300), D.range(1000, 1100)
    got = _ints(E.sample_from_datasets([a, b], weights=[0.75, 0.25], seed=3))
    assert sorted(got) == list(range(300)) + list(range(1000, 1100))   # all, once each
    head = got[:200]
    share = sum(x < 1000 for x in head) / len(head)
    assert 0.6 < share < 0.9
    assert [x for x in got if x < 1000] == list(range(300))            # each in its order
    again = _ints(E.sample_from_datasets([a, b], weights=[0.75, 0.25], seed=3))
    assert again == got
    choices = D.from_tensor_slices(np.array([0, 1, 1, 0, 0, 0, 1, 0, 1], "int64"))
    got = _ints(E.choose_from_datasets([D.range(0, 3), D.range(100, 105)], choices))
    assert got == [0, 100, 101, 1, 2, 102, 103]      # choices of an ended input skipped
    with pytest.raises(TypeError, match="differ"):
        E.sample_from_datasets([D.range(3), D.from_tensor_slices(np.ones(3))])
    with pytest.raises(ValueError, match="weights"):
        E.sample_from_datasets([a, b], weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="out of range"):
        list(E.choose_from_datasets([a], D.from_tensor_slices(np.array([1], "int64"))))


def test_readers_and_assert_cardinality():
    assert int(E.get_single_element(D.range(7, 8))) == 7
    with pytest.raises(ValueError, match="more than one"):
        E.get_single_element(D.range(2))
    with pytest.raises(ValueError, match="empty"):
        E.get_single_element(D.range(0))
    assert E.get_structure(D.range(3)) == D.range(3).element_spec
    ds = D.range(4).filter(lambda x: x > -1)
    assert int(ds.cardinality()) == tt.data.UNKNOWN_CARDINALITY
    stated = ds.apply(E.assert_cardinality(4))
    assert int(stated.cardinality()) == 4 and len(stated) == 4 and _ints(stated) == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="expected to contain 5 elements but contained only 4"):
        list(ds.apply(E.assert_cardinality(5)))
    with pytest.raises(RuntimeError, match="at least 4"):
        list(ds.apply(E.assert_cardinality(3)))


def test_older_aliases_are_the_methods():
    assert _ints(D.range(7).apply(E.map_and_batch(lambda x: x * 2, 3, drop_remainder=True))) \
        == [[0, 2, 4], [6, 8, 10]]
    assert _ints(D.range(3).apply(E.enumerate_dataset(5))) == [[5, 0], [6, 1], [7, 2]]
    assert _ints(D.range(6).batch(4).apply(E.unbatch())) == list(range(6))
    assert _ints(D.range(6).apply(E.take_while(lambda x: x < 3))) == [0, 1, 2]
    assert sorted(_ints(D.range(3).apply(E.shuffle_and_repeat(3, count=2, seed=1)))) == \
        [0, 0, 1, 1, 2, 2]
    assert _ints(D.range(3).apply(E.parallel_interleave(
        lambda x: D.range(x * 10, x * 10 + 3), cycle_length=2, block_length=2))) == \
        _ints(D.range(3).interleave(lambda x: D.range(x * 10, x * 10 + 3), cycle_length=2,
                                    block_length=2))
