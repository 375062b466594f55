"""Sorting, searching and counting, differentially against NumPy.

Sorts compare exactly (values, dtype, shape); partitions are checked by the partition property
(the k-th entry is the one a full sort puts there, smaller entries before it, larger after)
rather than by the exact order, which NumPy leaves unspecified.
"""
import math

import hypothesis.extra.numpy as hnp
import numpy
import pytest
from hypothesis import given, strategies as st

import tnp
from tnp.testing import assert_same
from tnp.testing.differential import same, same_on_cpu1

DTYPES = [numpy.int16, numpy.float64, numpy.complex64, numpy.bool_]


def sample(shape, dtype=numpy.int64):
    """A small array of ``shape`` and ``dtype`` with varied values (negatives, zeros, repeats)."""
    return (numpy.arange(math.prod(shape)) * 5 % 7 - 3).reshape(shape).astype(dtype)


def with_nans(shape):
    """A float sample with NaNs in it."""
    a = sample(shape, numpy.float64)
    a[a == 1] = numpy.nan
    return a


def every(shapes, dtypes=DTYPES[:2]):
    """Parametrize ``a`` over sample arrays of these shapes and dtypes."""
    cases = [sample(s, d) for s in shapes for d in dtypes]
    return pytest.mark.parametrize("a", cases, ids=[f"{c.dtype}{list(c.shape)}" for c in cases])


def assert_partitioned(a, part, kth, axis):
    """``part`` is ``a`` partitioned around each index in ``kth`` along ``axis``."""
    a, part = numpy.moveaxis(a, axis, -1), numpy.moveaxis(part, axis, -1)
    full = numpy.sort(a, axis=-1)
    numpy.testing.assert_array_equal(numpy.sort(part, axis=-1), full)   # a permutation of a
    for k in numpy.atleast_1d(kth) % a.shape[-1]:
        numpy.testing.assert_array_equal(part[..., k], full[..., k])
        assert (part[..., :k] <= part[..., k:k + 1]).all() and (part[..., k + 1:] >= part[..., k:k + 1]).all()


ints_or_floats = hnp.arrays(st.sampled_from([numpy.int8, numpy.int64, numpy.float32, numpy.float64]),
                            hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                            elements=st.integers(-20, 20))
with_nan_floats = hnp.arrays(st.sampled_from([numpy.float32, numpy.float64]),
                             hnp.array_shapes(min_dims=1, max_dims=3, max_side=5))


# ---------------------------------------------------------------------------- sorting
@pytest.mark.parametrize("kind", [None, "stable", "heapsort"])
@pytest.mark.parametrize("axis", [-1, 0, None])
@every([(6,), (3, 4), (2, 3, 4)], DTYPES)
def test_sort_and_argsort(a, axis, kind):
    same(lambda xp, x: xp.sort(x, axis=axis, kind=kind), a)
    same(lambda xp, x: xp.argsort(x, axis=axis, kind=kind), a)
    same(lambda xp, x: x.argsort(axis=axis, kind=kind), a)


@every([(6,), (3, 4)], DTYPES)
def test_stable_sort_keyword(a):
    same(lambda xp, x: xp.sort(x, stable=True), a)
    same(lambda xp, x: xp.argsort(x, stable=True), a)


@given(with_nan_floats)
def test_sort_and_argsort_any_floats_with_nans(a):
    same(lambda xp, x: xp.sort(x), a)
    same(lambda xp, x: xp.sort(x, axis=0), a)
    same(lambda xp, x: xp.argsort(x, kind="stable"), a)


@every([(6,), (3, 4)])
def test_sort_bad_arguments(a):
    same(lambda xp, x: xp.sort(x, axis=2), a)           # AxisError
    same(lambda xp, x: xp.sort(x, kind="bogus"), a)     # ValueError
    same(lambda xp, x: xp.argsort(x, axis=-3), a)       # AxisError


@pytest.mark.parametrize("axis", [-1, 0])
@every([(6,), (3, 4), (2, 2, 3)], DTYPES)
def test_sort_method_sorts_in_place(a, axis):
    expected = numpy.sort(a, axis=axis)
    t = tnp.array(a)
    before = t._version
    assert t.sort(axis=axis) is None
    assert_same(expected, t)
    assert t._version > before


def test_sort_method_through_a_view_sorts_the_base():
    def run(xp):
        x = xp.asarray(sample((3, 4)))
        x[1].sort()
        x[:, 0].sort()
        return x
    same(run)


def test_sort_method_bad_axis():
    same(lambda xp, x: x.sort(axis=3), sample((3, 4)))


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("dtypes", [(numpy.int32, numpy.int32), (numpy.float64, numpy.bool_)])
def test_lexsort(dtypes, axis):
    keys = (sample((3, 4), dtypes[0]), (sample((3, 4)) % 2).astype(dtypes[1]))
    same(lambda xp, *k: xp.lexsort(k, axis=axis), *keys)
    same(lambda xp, k: xp.lexsort(k, axis=axis), numpy.stack(keys))
    same(lambda xp, k: xp.lexsort(k), keys[0][0])


def test_lexsort_bad_keys():
    same(lambda xp, x, y: xp.lexsort((x, y)), sample((3,)), sample((4,)))   # ValueError
    same(lambda xp, x: xp.lexsort((x,), axis=2), sample((3,)))               # AxisError


@pytest.mark.parametrize("dtype", [numpy.int8, numpy.int64, numpy.float32, numpy.float64, numpy.complex64])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_sort_complex(shape, dtype):
    same(lambda xp, x: xp.sort_complex(x), sample(shape, dtype))
    same(lambda xp, x: xp.sort_complex(x * (1 + 1j)), sample(shape, dtype))


# ---------------------------------------------------------------------------- partitioning
@pytest.mark.parametrize("kth", [0, 2, -1, [1, 3]])
@pytest.mark.parametrize("axis", [-1, 0, None])
@every([(5,), (4, 5), (4, 4, 4)], [numpy.int16, numpy.float32])
def test_partition_and_argpartition(a, kth, axis):
    expected = numpy.partition(a, kth, axis=axis)
    part = tnp.partition(tnp.asarray(a), kth, axis=axis)
    assert isinstance(part, tnp.ndarray) and (part.shape, part.dtype) == (expected.shape, expected.dtype)
    flat = a.ravel() if axis is None else a
    assert_partitioned(flat, part.numpy(), kth, -1 if axis is None else axis)

    idx = tnp.argpartition(tnp.asarray(a), kth, axis=axis)
    expected = numpy.argpartition(a, kth, axis=axis)
    assert (idx.shape, idx.dtype) == (expected.shape, expected.dtype)
    ax = -1 if axis is None else axis
    assert_partitioned(flat, numpy.take_along_axis(flat, idx.numpy(), axis=ax), kth, ax)


@given(ints_or_floats, st.data())
def test_partition_any_array(a, data):
    k = data.draw(st.integers(0, a.shape[-1] - 1))
    assert_partitioned(a, tnp.partition(tnp.asarray(a), k).numpy(), k, -1)
    assert_partitioned(a, numpy.take_along_axis(a, tnp.argpartition(tnp.asarray(a), k).numpy(), -1), k, -1)


@every([(5,), (4, 5)])
def test_partition_method_partitions_in_place(a):
    t = tnp.array(a)
    before = t._version
    assert t.partition(2) is None
    assert_partitioned(a, t.numpy(), 2, -1)
    assert t._version > before
    assert_partitioned(a, numpy.take_along_axis(a, tnp.asarray(a).argpartition(2).numpy(), -1), 2, -1)


@every([(5,), (4, 5)])
def test_partition_bad_kth_or_axis(a):
    same(lambda xp, x: xp.partition(x, 9), a)            # ValueError
    same(lambda xp, x: xp.argpartition(x, -9), a)        # ValueError
    same(lambda xp, x: xp.partition(x, 0, axis=3), a)    # AxisError
    same(lambda xp, x: xp.partition(x, 1.5), a)          # TypeError


# ---------------------------------------------------------------------------- searching
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (-1, True), (None, True)])
@every([(6,), (3, 4), (2, 3, 4)], DTYPES)
def test_argmax_argmin(name, a, axis, keepdims):
    same(lambda xp, x: getattr(xp, name)(x, axis=axis, keepdims=keepdims), a)
    same(lambda xp, x: getattr(x, name)(axis, keepdims=keepdims), a)


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("shape", [(6,), (3, 4)])
def test_arg_extrema_with_nans(name, axis, shape):
    same(lambda xp, x: getattr(xp, name)(x, axis=axis), with_nans(shape))
    same(lambda xp, x: getattr(xp, name)(x, axis=axis), sample(shape, numpy.int32))


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
def test_arg_extrema_bad_input(name):
    same(lambda xp, x: getattr(xp, name)(x), numpy.zeros(0))                 # ValueError: empty
    same(lambda xp, x: getattr(xp, name)(x, axis=2), sample((3, 4), float))  # AxisError
    if name.startswith("nan"):
        same(lambda xp, x: getattr(xp, name)(x), numpy.full(3, numpy.nan))   # ValueError: all NaN


@every([(), (6,), (3, 4), (2, 2, 3)], DTYPES)
def test_argwhere_and_flatnonzero(a):
    same(lambda xp, x: xp.argwhere(x), a)
    same(lambda xp, x: xp.flatnonzero(x), a)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_searchsorted(dtype, side):
    haystack = numpy.sort(sample((8,), dtype))
    needles = numpy.array([[-5, 0, 1], [2, 9, -3]], dtype=dtype)
    same(lambda xp, h, n: xp.searchsorted(h, n, side=side), haystack, needles)
    same(lambda xp, h, n: h.searchsorted(n[0], side=side), haystack, needles)
    same(lambda xp, h: xp.searchsorted(h, 1, side=side), haystack)    # a scalar needle gives a scalar
    unsorted = sample((8,), dtype)
    same(lambda xp, h, n: xp.searchsorted(h, n, side=side, sorter=xp.argsort(h, kind="stable")), unsorted, needles)


@given(hnp.arrays(numpy.float64, st.integers(1, 8)), hnp.arrays(numpy.float64, st.integers(0, 4)))
def test_searchsorted_any_floats(haystack, needles):
    same(lambda xp, h, n: xp.searchsorted(h, n), numpy.sort(haystack), needles)


def test_searchsorted_bad_input():
    same(lambda xp, h: xp.searchsorted(h, 1, side="middle"), numpy.arange(3))          # ValueError
    same(lambda xp, h: xp.searchsorted(h, [1], sorter=[0]), numpy.arange(3))           # ValueError
    same(lambda xp, h: xp.searchsorted(h, [1]), numpy.zeros((2, 2)))                   # ValueError: 1-d


@every([(6,), (3, 4)], DTYPES)
def test_extract(a):
    same(lambda xp, x: xp.extract(x > 0, x), a)
    same(lambda xp, x: xp.extract(x != 0, x), a)
    same(lambda xp, x: xp.extract(xp.ones(x.shape, dtype=bool), x * 2), a)


def test_extract_condition_longer_than_array():
    same(lambda xp, c, x: xp.extract(c, x), numpy.array([0, 0, 1]), numpy.arange(2))   # IndexError


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (-1, True), ((0, 1), False),
                                            (None, True)])
@every([(3, 4), (2, 3, 4)], DTYPES)
def test_count_nonzero(a, axis, keepdims):
    same(lambda xp, x: xp.count_nonzero(x, axis=axis, keepdims=keepdims), a)


def test_count_nonzero_of_lists_and_bad_axis():
    same(lambda xp: xp.count_nonzero([0, 1, 2, 0]))
    same(lambda xp: xp.count_nonzero(5))
    same(lambda xp, x: xp.count_nonzero(x, axis=2), sample((3,)))   # AxisError


# ---------------------------------------------------------------------------- devices
ON_DEVICE = {
    "sort": lambda xp, x: xp.sort(x), "argsort": lambda xp, x: xp.argsort(x, axis=0),
    "argmax": lambda xp, x: xp.argmax(x), "argwhere": lambda xp, x: xp.argwhere(x),
    "searchsorted": lambda xp, x: xp.searchsorted(xp.sort(x[0]), x[1]), "count_nonzero": lambda xp, x: xp.count_nonzero(x, axis=1),
    "lexsort": lambda xp, x: xp.lexsort(x), "extract": lambda xp, x: xp.extract(x > 0, x),
}


@pytest.mark.parametrize("fn", ON_DEVICE.values(), ids=ON_DEVICE.keys())
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_results_stay_on_the_input_device(fn, dtype):
    same_on_cpu1(fn, sample((2, 3), dtype))


def test_searching_across_two_devices_raises_value_error():
    with pytest.raises(ValueError):
        tnp.searchsorted(tnp.arange(3, device="cpu:1"), tnp.arange(2))


# ---------------------------------------------------------------------------- descending= (array API)
@pytest.mark.parametrize("axis", [-1, 0])
@every([(6,), (3, 4)], [numpy.int16, numpy.float64])
def test_descending_sort_and_stable_argsort(a, axis):
    """tnp's array-API ``descending=``: NumPy's sort of ``-a`` (ties keep their original order)."""
    assert_same(-numpy.sort(-a, axis=axis), tnp.sort(tnp.asarray(a), axis=axis, descending=True))
    assert_same(numpy.argsort(-a, axis=axis, stable=True),
                tnp.argsort(tnp.asarray(a), axis=axis, stable=True, descending=True))
