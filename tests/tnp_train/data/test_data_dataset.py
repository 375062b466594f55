"""tt.data.Dataset against plain-Python references (order, values, errors, cardinality, specs)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tnp
import tnp_train.utils
from tnp_train import data as ttd
from tnp_train.data import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, TensorSpec


def py(e):
    """An element as nested Python lists/tuples/dicts of numbers."""
    if isinstance(e, tuple):
        return tuple(py(v) for v in e)
    if isinstance(e, dict):
        return {k: py(v) for k, v in e.items()}
    return np.asarray(e).tolist()


def items(ds):
    return [py(e) for e in ds]


def gen_ds(values):
    """The same elements as from_tensor_slices(values), through the element-wise path."""
    arr = np.asarray(values)
    return Dataset.from_generator(lambda: iter(arr),
                                  output_signature=TensorSpec(arr.shape[1:], arr.dtype))


def card(ds):
    return int(ds.cardinality())


# ----------------------------------------------------------------------------- sources
def test_from_tensor_slices_structures():
    x = np.arange(12.).reshape(4, 3)
    y = np.arange(4)
    ds = Dataset.from_tensor_slices((x, {"b": y, "a": (y * 2, x[:, 0])}))
    out = list(ds)
    assert len(out) == 4
    for i, (xi, d) in enumerate(out):
        assert isinstance(xi, tnp.ndarray) and xi.shape == (3,)
        np.testing.assert_array_equal(np.asarray(xi), x[i])
        assert list(d) == ["b", "a"]          # the user's key order is kept
        assert int(d["b"]) == i and int(d["a"][0]) == 2 * i and float(d["a"][1]) == x[i, 0]
    spec = ds.element_spec
    assert spec[0] == TensorSpec((3,), np.float64)
    assert spec[1]["a"] == (TensorSpec((), np.int64), TensorSpec((), np.float64))


def test_from_tensor_slices_errors():
    with pytest.raises(ValueError, match=r"\(4, 3\).*\(5,\)"):
        Dataset.from_tensor_slices((np.zeros((4, 3)), np.zeros(5)))
    with pytest.raises(ValueError, match="first dimension"):
        Dataset.from_tensor_slices(np.float64(3.0))


def test_from_tensor_slices_snapshot_and_read_only():
    x = np.arange(6.)
    ds = Dataset.from_tensor_slices(x)
    x[:] = -1
    assert items(ds) == [0., 1., 2., 3., 4., 5.]
    b = next(iter(ds.batch(2)))
    with pytest.raises(ValueError):
        b[0] = 7
    assert items(ds.batch(2))[0] == [0., 1.]


def test_list_input_is_an_array():
    assert items(Dataset.from_tensor_slices([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]


def test_from_tensors():
    ds = Dataset.from_tensors((np.arange(3), 5))
    assert items(ds) == [([0, 1, 2], 5)]
    assert card(ds) == 1 and ds.element_spec == (TensorSpec((3,), np.int64), TensorSpec((), np.int64))


@pytest.mark.parametrize("args", [(5,), (2, 7), (1, 10, 3), (10, 0, -3), (5, 2)])
def test_range(args):
    ds = Dataset.range(*args)
    out = list(ds)
    assert [int(v) for v in out] == list(range(*args))
    assert all(isinstance(v, tnp.ndarray) and v.shape == () and v.dtype == np.int64 for v in out)
    assert card(ds) == len(range(*args)) and len(ds) == len(range(*args))
    assert ds.element_spec == TensorSpec((), np.int64)
    assert Dataset.range(3, output_type=np.int32).element_spec.dtype == np.int32


def test_from_generator_fresh_each_epoch_and_signature():
    calls = []

    def gen():
        calls.append(1)
        for i in range(3):
            yield i, [i] * 2

    ds = Dataset.from_generator(gen, output_signature=(TensorSpec((), np.float32),
                                                       TensorSpec((2,), np.int64)))
    assert items(ds) == [(0.0, [0, 0]), (1.0, [1, 1]), (2.0, [2, 2])]
    assert items(ds) == items(ds) and len(calls) == 3
    assert next(iter(ds))[0].dtype == np.float32
    assert card(ds) == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError):
        len(ds)


def test_from_generator_types_shapes_args_and_errors():
    ds = Dataset.from_generator(lambda n: range(n), output_types=np.int64, output_shapes=(),
                                args=(4,))
    assert items(ds) == [0, 1, 2, 3]
    assert ds.element_spec == TensorSpec((), np.int64)
    bad_shape = Dataset.from_generator(lambda: iter([np.zeros(3)]),
                                       output_signature=TensorSpec((2,), np.float64))
    with pytest.raises(ValueError, match=r"\(3,\)"):
        list(bad_shape)
    bad_type = Dataset.from_generator(lambda: iter([1.5]), output_signature=TensorSpec((), np.int64))
    with pytest.raises(TypeError, match="float64"):
        list(bad_type)
    with pytest.raises(TypeError):
        Dataset.from_generator([1, 2, 3])
    inferred = Dataset.from_generator(lambda: iter([(np.ones(2), 1)]))
    assert inferred.element_spec == (TensorSpec((2,), np.float64), TensorSpec((), np.int64))


def test_zip_concatenate_enumerate():
    a, b = Dataset.range(5), Dataset.from_tensor_slices(np.arange(3.) * 10)
    z = Dataset.zip((a, {"b": b}))
    assert items(z) == [(0, {"b": 0.0}), (1, {"b": 10.0}), (2, {"b": 20.0})]
    assert card(z) == 3
    assert card(Dataset.zip((a, b.repeat()))) == 5
    assert card(Dataset.zip((a.repeat(), b.filter(lambda v: True)))) == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError):
        Dataset.zip((a, [1, 2]))
    c = a.concatenate(Dataset.range(7, 9))
    assert items(c) == [0, 1, 2, 3, 4, 7, 8] and card(c) == 7
    with pytest.raises(TypeError):
        a.concatenate(b)                      # int64 vs float64
    with pytest.raises(TypeError):
        a.concatenate(Dataset.zip((a, a)))    # structures differ
    e = b.enumerate(start=3)
    assert items(e) == [(3, 0.0), (4, 10.0), (5, 20.0)]
    assert e.element_spec == (TensorSpec((), np.int64), TensorSpec((), np.float64))


def test_concatenate_relaxes_shapes():
    a = Dataset.from_tensor_slices(np.zeros((2, 3))).batch(2, drop_remainder=True)
    b = Dataset.from_tensor_slices(np.zeros((1, 3))).batch(1, drop_remainder=True)
    assert a.concatenate(b).element_spec == TensorSpec((None, 3), np.float64)


# ----------------------------------------------------------------------------- map / filter
def test_map_unpacks_tuples_only():
    ds = Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10))
    assert items(ds.map(lambda a, b: a + b)) == [0, 11, 22]
    d = Dataset.from_tensor_slices({"x": np.arange(3)})
    assert items(d.map(lambda e: e["x"] * 2)) == [0, 2, 4]
    pairs = ds.map(lambda a, b: [b, a])        # a list becomes a tuple, as tf.data
    assert items(pairs) == [(0, 0), (10, 1), (20, 2)]
    assert ds.map(lambda a, b: a).element_spec == TensorSpec((), np.int64)
    nested = Dataset.zip(((Dataset.range(2), Dataset.range(2)),))
    assert items(nested.map(lambda t: t[0] + t[1])) == [0, 2]   # a 1-tuple: one argument
    with pytest.raises(TypeError):
        list(ds.map(lambda a, b: None))


@given(n=st.integers(0, 40), workers=st.sampled_from([2, 3, AUTOTUNE]))
def test_parallel_map_keeps_order(n, workers):
    ds = Dataset.range(n).map(lambda v: v * v + 1, num_parallel_calls=workers)
    assert items(ds) == [i * i + 1 for i in range(n)]
    assert card(ds) == n


def test_map_error_raised_at_its_position():
    def f(v):
        if int(v) == 5:
            raise KeyError("five")
        return v

    for workers in (None, 3):
        it = iter(Dataset.range(10).map(f, num_parallel_calls=workers))
        assert [int(next(it)) for _ in range(5)] == [0, 1, 2, 3, 4]
        with pytest.raises(KeyError, match="five"):
            next(it)


def test_filter_and_take_while():
    ds = Dataset.range(10)
    assert items(ds.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]
    assert items(ds.take_while(lambda v: v < 4)) == [0, 1, 2, 3]
    assert card(ds.filter(lambda v: True)) == UNKNOWN_CARDINALITY
    assert card(ds.repeat().filter(lambda v: True)) == INFINITE_CARDINALITY
    with pytest.raises(ValueError, match="scalar boolean"):
        list(ds.filter(lambda v: v))           # int64, not bool
    with pytest.raises(ValueError, match="scalar boolean"):
        list(Dataset.from_tensor_slices(np.zeros((2, 2))).filter(lambda v: v > 0))
    with pytest.raises(TypeError):
        ds.filter(3)


# ----------------------------------------------------------------------------- batching
def ref_batches(seq, b, drop):
    out = [seq[i:i + b] for i in range(0, len(seq), b)]
    if drop and out and len(out[-1]) < b:
        out.pop()
    return out


@given(n=st.integers(0, 30), b=st.integers(1, 8), drop=st.booleans())
def test_batch_fast_and_slow_paths(n, b, drop):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    want = ref_batches(x.tolist(), b, drop)
    fast = Dataset.from_tensor_slices(x).batch(b, drop)
    slow = gen_ds(x).batch(b, drop)
    assert items(fast) == want and items(slow) == want
    assert card(fast) == len(want)
    spec = TensorSpec((b if drop else None, 2), np.float32)
    assert fast.element_spec == spec and slow.element_spec == spec


@given(n=st.integers(0, 25), b=st.integers(1, 7), reps=st.integers(1, 3),
       shards=st.integers(1, 4), data=st.data())
def test_batch_after_index_transformations(n, b, reps, shards, data):
    index = data.draw(st.integers(0, shards - 1))
    skip, take = data.draw(st.integers(0, 10)), data.draw(st.integers(-1, 30))
    base = list(range(n)) * reps
    ref = base[index::shards][skip:]
    ref = ref if take == -1 else ref[:take]
    want = ref_batches(ref, b, False)
    x = np.arange(n, dtype=np.int64)
    for ds in (Dataset.from_tensor_slices(x), gen_ds(x)):
        p = ds.repeat(reps).shard(shards, index).skip(skip).take(take)
        assert items(p) == ref
        assert items(p.batch(b)) == want
        if ds._indexed:
            assert card(p) == len(ref) and card(p.batch(b)) == len(want)


def test_batch_keeps_nested_structure_and_checks_shapes():
    ds = Dataset.from_tensor_slices({"a": np.arange(5), "b": (np.ones((5, 2)), np.arange(5.))})
    out = list(ds.map(lambda e: e).batch(2))
    assert [o["a"].tolist() for o in out] == [[0, 1], [2, 3], [4]]
    assert out[0]["b"][0].shape == (2, 2) and out[2]["b"][1].shape == (1,)
    ragged = Dataset.range(1, 4).map(lambda v: tnp.ones(int(v)))
    with pytest.raises(ValueError, match=r"shape \(1,\).*shape \(2,\)"):
        list(ragged.batch(2))
    with pytest.raises(ValueError):
        Dataset.range(3).batch(0)


def test_batch_is_a_view_of_the_source():
    x = np.random.default_rng(0).standard_normal((512, 784)).astype(np.float32)
    ds = Dataset.from_tensor_slices((x, np.arange(512)))
    src = ds._arrays[0][0]
    b = next(iter(ds.batch(128)))
    assert np.shares_memory(np.asarray(b[0]), src)   # a slice, no per-row copies
    np.testing.assert_array_equal(np.asarray(b[0]), x[:128])
    b = next(iter(ds.shard(2, 1).batch(128)))        # evenly spaced rows: still a slice
    assert np.shares_memory(np.asarray(b[0]), src)
    np.testing.assert_array_equal(np.asarray(b[0]), x[1::2][:128])


def test_unbatch():
    x = np.arange(10).reshape(5, 2)
    ds = Dataset.from_tensor_slices((x, x * 10)).batch(2)
    u = ds.unbatch()
    assert items(u) == [(list(r), list(r * 10)) for r in x]
    assert u.element_spec == (TensorSpec((2,), np.int64), TensorSpec((2,), np.int64))
    assert card(Dataset.from_tensor_slices(x).batch(5, drop_remainder=True).unbatch()) == 5
    assert card(ds.unbatch()) == UNKNOWN_CARDINALITY
    with pytest.raises(ValueError):
        list(Dataset.range(3).unbatch())
    mismatched = Dataset.from_tensors((np.zeros(2), np.zeros(3)))
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        list(mismatched.unbatch())


def test_padded_batch_values():
    ds = Dataset.range(1, 5).map(lambda v: tnp.full(int(v), v))
    got = [np.asarray(b).tolist() for b in ds.padded_batch(2)]
    assert got == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    got = [np.asarray(b).tolist() for b in ds.padded_batch(3, padded_shapes=(5,), padding_values=-1)]
    assert got == [[[1, -1, -1, -1, -1], [2, 2, -1, -1, -1], [3, 3, 3, -1, -1]],
                   [[4, 4, 4, 4, -1]]]
    pb = ds.padded_batch(2, padded_shapes=[None], drop_remainder=True)
    assert pb.element_spec == TensorSpec((2, None), np.int64)
    with pytest.raises(ValueError, match="does not fit"):
        list(ds.padded_batch(2, padded_shapes=(3,)))


@given(lengths=st.lists(st.integers(0, 5), max_size=12), b=st.integers(1, 5),
       pad=st.integers(-3, 3), drop=st.booleans())
def test_padded_batch_matches_reference(lengths, b, pad, drop):
    rows = [list(range(1, n + 1)) for n in lengths]
    ds = Dataset.from_generator(lambda: (np.arange(1, n + 1) for n in lengths),
                                output_signature=TensorSpec((None,), np.int64))
    want = [[r + [pad] * (max(map(len, group)) - len(r)) for r in group]
            for group in ref_batches(rows, b, drop)]
    got = [np.asarray(x).tolist() for x in ds.padded_batch(b, padding_values=pad,
                                                           drop_remainder=drop)]
    assert got == want


def test_padded_batch_structures():
    ds = Dataset.range(1, 4).map(lambda v: (tnp.ones((int(v), 2)), v))
    b = list(ds.padded_batch(3, padded_shapes=((None, 3), ()), padding_values=(9.0, 0)))[0]
    a = np.asarray(b[0])
    assert a.shape == (3, 3, 3) and np.asarray(b[1]).tolist() == [1, 2, 3]
    want = np.full((3, 3, 3), 9.0)
    for i in range(3):
        want[i, :i + 1, :2] = 1
    np.testing.assert_array_equal(a, want)


# ----------------------------------------------------------------------------- shuffle
@given(n=st.integers(0, 60), buf=st.integers(1, 80), seed=st.integers(0, 2**32))
def test_shuffle_is_a_buffered_permutation(n, buf, seed):
    ds = Dataset.range(n).shuffle(buf, seed=seed)
    out = [int(v) for v in ds]
    assert sorted(out) == list(range(n))
    # a shuffle buffer can only emit an element once it has been read
    assert all(v <= k + buf - 1 for k, v in enumerate(out))
    if buf == 1:
        assert out == list(range(n))


@given(n=st.integers(1, 50), buf=st.integers(1, 60), seed=st.integers(0, 1000),
       b=st.integers(1, 9))
def test_shuffle_index_path_matches_element_path(n, buf, seed, b):
    x = np.arange(n, dtype=np.int64) * 3
    fast = Dataset.from_tensor_slices(x).shuffle(buf, seed=seed)
    slow = gen_ds(x).shuffle(buf, seed=seed)
    assert items(fast) == items(slow)
    assert items(fast.batch(b)) == items(slow.batch(b))
    assert items(fast.repeat(2).batch(b)) == items(slow.repeat(2).batch(b))


def test_shuffle_seed_and_reshuffle():
    x = np.arange(50)
    a = Dataset.from_tensor_slices(x).shuffle(50, seed=7)
    b = Dataset.from_tensor_slices(x).shuffle(50, seed=7)
    e1, e2 = items(a), items(a)
    assert sorted(e1) == sorted(e2) == list(range(50))
    assert e1 != e2                               # a new order each pass
    assert items(b) == e1 and items(b) == e2      # same seed: same sequence of orders
    fixed = Dataset.from_tensor_slices(x).shuffle(50, seed=7, reshuffle_each_iteration=False)
    assert items(fixed) == items(fixed)
    rep = items(Dataset.from_tensor_slices(x).shuffle(50, seed=3).repeat(2))
    assert sorted(rep[:50]) == sorted(rep[50:]) and rep[:50] != rep[50:]
    with pytest.raises(ValueError):
        Dataset.range(3).shuffle(0)


def test_shuffle_without_seed_follows_set_random_seed():
    tnp_train.utils.set_random_seed(123)
    a = items(Dataset.range(40).shuffle(40))
    tnp_train.utils.set_random_seed(123)
    b = items(Dataset.range(40).shuffle(40))
    assert a == b and a != list(range(40))


# ----------------------------------------------------------------------------- repeat ... shard
def test_repeat_take_skip():
    ds = Dataset.range(3)
    assert items(ds.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert items(ds.repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert items(ds.skip(1)) == [1, 2] and items(ds.skip(-1)) == [] and items(ds.take(-1)) == [0, 1, 2]
    assert items(Dataset.range(0).repeat()) == []
    assert card(ds.repeat()) == INFINITE_CARDINALITY and card(ds.repeat(4)) == 12
    assert card(Dataset.range(0).repeat()) == 0 and card(ds.repeat(0)) == 0
    assert card(ds.repeat().take(5)) == 5 and card(ds.take(10)) == 3
    assert card(ds.skip(2)) == 1 and card(ds.skip(9)) == 0 and card(ds.repeat().skip(3)) == -1
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    with pytest.raises(ValueError):
        ds.take(-2)


@given(n=st.integers(0, 40), k=st.integers(1, 6))
def test_shard_covers_every_element_once(n, k):
    x = np.arange(n)
    got = []
    for i in range(k):
        for ds in (Dataset.from_tensor_slices(x).shard(k, i), gen_ds(x).shard(k, i)):
            out = items(ds)
            assert out == [v for v in range(n) if v % k == i]
        assert card(Dataset.from_tensor_slices(x).shard(k, i)) == len(out)
        got += out
    assert sorted(got) == list(range(n))


def test_shard_errors():
    with pytest.raises(ValueError):
        Dataset.range(4).shard(2, 2)
    with pytest.raises(ValueError):
        Dataset.range(4).shard(0, 0)


def test_cache():
    calls = []

    def f(v):
        calls.append(int(v))
        return v

    ds = Dataset.range(4).map(f).cache()
    assert items(ds) == [0, 1, 2, 3] and items(ds) == [0, 1, 2, 3]
    assert calls == [0, 1, 2, 3]
    partial = Dataset.range(4).map(f).cache()
    calls.clear()
    it = iter(partial)
    next(it)
    del it
    assert items(partial) == [0, 1, 2, 3] and calls == [0, 0, 1, 2, 3]   # incomplete: not kept
    shuffled = Dataset.from_tensor_slices(np.arange(20)).shuffle(20, seed=1).cache()
    first = items(shuffled)
    assert items(shuffled) == first and items(shuffled.batch(6)) == ref_batches(first, 6, False)
    with pytest.raises(NotImplementedError):
        Dataset.range(3).cache("/tmp/x")


# ----------------------------------------------------------------------------- nested datasets
def test_interleave_flat_map_window():
    ds = Dataset.range(1, 6).interleave(lambda v: Dataset.from_tensors(v).repeat(6),
                                        cycle_length=2, block_length=4)
    assert items(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                         5, 5, 5, 5, 5, 5]                                  # TF's documented order
    assert items(Dataset.range(3).flat_map(lambda v: Dataset.range(v))) == [0, 0, 1]
    with pytest.raises(TypeError):
        list(Dataset.range(2).flat_map(lambda v: v))
    w = Dataset.range(7).window(3, 2, 1, drop_remainder=True)
    assert [items(x) for x in w] == [[0, 1, 2], [2, 3, 4], [4, 5, 6]] and card(w) == 3
    w = Dataset.range(7).window(3, 1, 2, drop_remainder=True)
    assert [items(x) for x in w] == [[0, 2, 4], [1, 3, 5], [2, 4, 6]] and card(w) == 3
    w = Dataset.range(7).window(3, 2)
    assert [items(x) for x in w] == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]] and card(w) == 4
    w = Dataset.range(10).window(2, 5)
    assert [items(x) for x in w] == [[0, 1], [5, 6]]
    pairs = Dataset.zip((Dataset.range(4), Dataset.range(4))).window(2)
    assert [(items(a), items(b)) for a, b in pairs] == [([0, 1], [0, 1]), ([2, 3], [2, 3])]
    batched = Dataset.range(5).window(2, 1, drop_remainder=True).flat_map(lambda w: w.batch(2))
    assert items(batched) == [[0, 1], [1, 2], [2, 3], [3, 4]]


# ----------------------------------------------------------------------------- the rest
def test_reduce_apply_as_numpy_iterator():
    assert int(Dataset.range(5).reduce(0, lambda s, v: s + v)) == 10
    s = Dataset.from_tensor_slices((np.arange(3), np.arange(3.))).reduce(
        (0, 0.0), lambda st_, e: (st_[0] + e[0], st_[1] + e[1]))
    assert py(s) == (3, 3.0)
    with pytest.raises(TypeError):
        Dataset.range(2).reduce(0, lambda s, v: (s, v))
    assert items(Dataset.range(4).apply(lambda d: d.skip(2))) == [2, 3]
    with pytest.raises(TypeError):
        Dataset.range(4).apply(lambda d: 3)
    out = list(Dataset.from_tensor_slices({"a": np.ones((2, 2))}).as_numpy_iterator())
    assert type(out[0]["a"]) is np.ndarray and out[0]["a"].tolist() == [1.0, 1.0]
    assert list(Dataset.range(2).as_numpy_iterator()) == [0, 1]
    assert type(next(Dataset.range(2).as_numpy_iterator())) is np.int64


def test_cardinality_after_transformations():
    ds = Dataset.from_tensor_slices(np.zeros((10, 2)))
    assert card(ds) == 10 and len(ds) == 10
    assert ds.cardinality() == 10 and ds.cardinality().dtype == np.int64
    assert ttd.experimental.cardinality(ds) == 10
    assert card(ds.map(lambda v: v)) == 10 and card(ds.prefetch(2)) == 10
    assert card(ds.batch(3)) == 4 and card(ds.batch(3, drop_remainder=True)) == 3
    assert card(ds.padded_batch(4)) == 3 and card(ds.shuffle(5)) == 10
    assert card(ds.shard(3, 0)) == 4 and card(ds.shard(3, 2)) == 3
    assert card(ds.cache()) == 10 and card(ds.enumerate()) == 10
    assert card(ds.window(4, drop_remainder=True)) == 2 and card(ds.window(4)) == 3
    assert card(ds.take_while(lambda v: True)) == UNKNOWN_CARDINALITY
    assert card(ds.flat_map(lambda v: Dataset.from_tensors(v))) == UNKNOWN_CARDINALITY
    assert card(ds.repeat().batch(3)) == INFINITE_CARDINALITY
    assert INFINITE_CARDINALITY == -1 and UNKNOWN_CARDINALITY == -2
    assert ttd.AUTOTUNE == ttd.experimental.AUTOTUNE == -1
    with pytest.raises(TypeError, match="unknown"):
        len(ds.filter(lambda v: True))
    assert bool(ds.repeat())


def test_element_spec_and_repr():
    ds = Dataset.from_tensor_slices((np.zeros((4, 3), np.float32), np.zeros(4, np.int32)))
    assert ds.batch(2).element_spec == (TensorSpec((None, 3), np.float32),
                                        TensorSpec((None,), np.int32))
    assert ds.map(lambda a, b: a).batch(2, drop_remainder=True).element_spec == \
        TensorSpec((2, 3), np.float32)
    assert "TensorSliceDataset" in repr(ds) and "float32" in repr(ds)
    spec = TensorSpec((None, 3), "float32")
    assert spec.is_compatible_with(tnp.zeros((5, 3), dtype="float32"))
    assert not spec.is_compatible_with(tnp.zeros((5, 4), dtype="float32"))
    assert not spec.is_compatible_with(TensorSpec((5, 3), "float64"))
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=float32, name=None)"


def test_iterator_object():
    it = iter(Dataset.range(3))
    assert int(it.get_next()) == 0 and int(next(it)) == 1
    assert it.element_spec == TensorSpec((), np.int64)
    assert iter(it) is it


def test_release_notes_line():
    x = tnp.random.randn(1000, 1024)
    ds = ttd.Dataset.from_tensor_slices(x).map(lambda z: z.clip(-1, 1)).batch(100)
    batches = list(ds)
    assert len(batches) == 10 and all(b.shape == (100, 1024) for b in batches)
    np.testing.assert_array_equal(np.concatenate([np.asarray(b) for b in batches]),
                                  np.clip(np.asarray(x), -1, 1))
