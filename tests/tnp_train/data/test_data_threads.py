"""tt.data on threads: prefetch, parallel map, iteration from several threads, no leaked threads."""
import gc
import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tnp_train.data import AUTOTUNE, Dataset


def items(ds):
    return [np.asarray(e).tolist() for e in ds]


def data_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tt.data")]


def wait_no_data_threads(timeout=3.0):
    end = time.monotonic() + timeout
    while data_threads() and time.monotonic() < end:
        gc.collect()
        time.sleep(0.01)
    return data_threads()


@given(n=st.integers(0, 40), buf=st.sampled_from([1, 2, 5, AUTOTUNE]), b=st.integers(1, 6))
def test_prefetch_yields_the_same_sequence(n, buf, b):
    base = Dataset.from_tensor_slices(np.arange(n)).shuffle(7, seed=3).batch(b)
    pre = Dataset.from_tensor_slices(np.arange(n)).shuffle(7, seed=3).batch(b).prefetch(buf)
    assert items(pre) == items(base)
    assert int(pre.cardinality()) == int(base.cardinality())
    assert not wait_no_data_threads()


def test_prefetch_zero_and_nested():
    ds = Dataset.range(20).prefetch(0).map(lambda v: v + 1, num_parallel_calls=2).prefetch(3)
    assert items(ds.prefetch(1)) == list(range(1, 21))
    assert not wait_no_data_threads()


def test_prefetch_reraises_producer_errors_in_order():
    def f(v):
        if int(v) == 3:
            raise ZeroDivisionError("three")
        return v

    it = iter(Dataset.range(6).map(f).prefetch(4))
    assert [int(next(it)) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ZeroDivisionError, match="three"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)
    del it
    assert not wait_no_data_threads()


@pytest.mark.parametrize("how", ["close", "del", "break"])
def test_no_leaked_threads_when_stopping_early(how):
    ds = Dataset.range(10**9).map(lambda v: v * 2, num_parallel_calls=2).prefetch(2).prefetch(2)
    if how == "break":
        for i, _ in enumerate(ds):
            if i == 5:
                break
    else:
        it = iter(ds)
        assert [int(next(it)) for _ in range(3)] == [0, 2, 4]
        assert data_threads()
        if how == "close":
            it.close()
        del it
    assert not wait_no_data_threads()


def test_unstarted_iterator_is_cleaned_up():
    it = iter(Dataset.range(100).prefetch(2))
    del it
    assert not wait_no_data_threads()


def test_iterating_from_several_threads():
    ds = (Dataset.from_tensor_slices(np.arange(200)).shuffle(50, seed=1,
                                                            reshuffle_each_iteration=False)
          .map(lambda v: v * 3, num_parallel_calls=2).batch(16).prefetch(2))
    want = items(ds)
    results = [None] * 4
    errors = []

    def run(k):
        try:
            results[k] = items(ds)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and all(r == want for r in results)
    assert sorted(sum(want, [])) == [3 * i for i in range(200)]
    assert not wait_no_data_threads()


def test_generator_on_a_background_thread():
    names = []

    def gen():
        for i in range(5):
            names.append(threading.current_thread().name)
            yield i

    ds = Dataset.from_generator(gen).map(lambda v: v).prefetch(2)
    assert items(ds) == [0, 1, 2, 3, 4]
    assert names and all(n.startswith("tt.data.prefetch") for n in names)
