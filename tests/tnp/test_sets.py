"""Set routines, differentially against NumPy: unique (every return_* flag, axis), the array-API
unique_* functions, and the 1-d set operations."""
import math

import hypothesis.extra.numpy as hnp
import numpy
import pytest
from hypothesis import given, strategies as st

import tnp
from tnp.testing.differential import same, same_on_cpu1

DTYPES = [numpy.int16, numpy.float64, numpy.complex64, numpy.bool_]


def sample(shape, dtype=numpy.int64):
    """A small array of ``shape`` and ``dtype`` with many repeated values."""
    return (numpy.arange(math.prod(shape)) * 5 % 4 - 1).reshape(shape).astype(dtype)


def with_nans(shape):
    """A float sample with repeated NaNs in it."""
    a = sample(shape, numpy.float64)
    a[a == 1] = numpy.nan
    return a


def every(shapes, dtypes=DTYPES):
    """Parametrize ``a`` over sample arrays of these shapes and dtypes."""
    cases = [sample(s, d) for s in shapes for d in dtypes]
    return pytest.mark.parametrize("a", cases, ids=[f"{c.dtype}{list(c.shape)}" for c in cases])


def pairs():
    """Parametrize ``x, y`` over pairs of small arrays that overlap in part."""
    cases = [(numpy.array([3, 1, 2, 3, 5], dtype=d), numpy.array([[5, 0], [3, 3]], dtype=d))
             for d in (numpy.int32, numpy.float32, numpy.uint8)]
    cases += [(numpy.array([1.5, numpy.nan, 2.0]), numpy.array([numpy.nan, 2.0])),   # NaNs and mixed dtypes
              (numpy.array([1, 2, 4], dtype=numpy.int8), numpy.array([2.0, 4.0, 8.0])),
              (numpy.array([], dtype=numpy.int64), numpy.array([1, 2])),
              (numpy.array([True, False]), numpy.array([True]))]
    return pytest.mark.parametrize("x, y", cases, ids=[f"{a.dtype}-{b.dtype}-{i}" for i, (a, b) in enumerate(cases)])


small_arrays = hnp.arrays(st.sampled_from([numpy.int8, numpy.int64, numpy.float32, numpy.float64]),
                          hnp.array_shapes(min_dims=1, max_dims=2, max_side=6), elements=st.integers(-3, 3))


# ---------------------------------------------------------------------------- unique
@pytest.mark.parametrize("index", [False, True])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
@every([(0,), (7,), (3, 4)])
def test_unique_with_every_return_flag(a, index, inverse, counts):
    same(lambda xp, x: xp.unique(x, return_index=index, return_inverse=inverse, return_counts=counts), a)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("flags", [{}, {"return_index": True, "return_inverse": True, "return_counts": True}])
@every([(4, 3), (2, 3, 2)], [numpy.int16, numpy.float64, numpy.bool_])
def test_unique_along_an_axis(a, axis, flags):
    same(lambda xp, x: xp.unique(x, axis=axis, **flags), a)


@pytest.mark.parametrize("equal_nan", [True, False])
@pytest.mark.parametrize("shape", [(6,), (2, 5)])
def test_unique_with_nans(shape, equal_nan):
    same(lambda xp, x: xp.unique(x, equal_nan=equal_nan, return_counts=True), with_nans(shape))


@given(small_arrays)
def test_unique_any_array(a):
    same(lambda xp, x: xp.unique(x, return_index=True, return_inverse=True, return_counts=True), a)
    same(lambda xp, x: xp.unique(x, axis=0), a)


def test_unique_bad_axis_and_unsortable_rows():
    same(lambda xp, x: xp.unique(x, axis=2), sample((2, 3)))    # AxisError
    same(lambda xp, x: xp.unique(x, axis=-3), sample((2, 3)))   # AxisError
    same(lambda xp: xp.unique(xp.array([[1, None]], dtype=object), axis=0))   # TypeError: object rows


def test_unique_of_a_python_list_and_a_scalar():
    same(lambda xp: xp.unique([3, 1, 3, 2]))
    same(lambda xp: xp.unique(5, return_counts=True))


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
@every([(0,), (7,), (3, 4), (2, 2, 3)])
def test_array_api_unique_functions(name, a):
    same(lambda xp, x: getattr(xp, name)(x), a)


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse"])
def test_array_api_unique_results_are_named_tuples(name):
    expected = getattr(numpy, name)(sample((3, 4)))
    got = getattr(tnp, name)(tnp.asarray(sample((3, 4))))
    assert type(got).__name__ == type(expected).__name__ and got._fields == expected._fields
    assert isinstance(got.values, tnp.ndarray)


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
@pytest.mark.parametrize("shape", [(6,), (2, 5)])
def test_array_api_unique_functions_with_nans(name, shape):
    same(lambda xp, x: getattr(xp, name)(x), with_nans(shape))


# ---------------------------------------------------------------------------- set operations
@pytest.mark.parametrize("assume_unique", [False, True])
@pytest.mark.parametrize("name", ["intersect1d", "setdiff1d", "setxor1d"])
@pairs()
def test_two_set_operations(name, x, y, assume_unique):
    if assume_unique:
        x, y = numpy.unique(x), numpy.unique(y)
    same(lambda xp, a, b: getattr(xp, name)(a, b, assume_unique=assume_unique), x, y)


@pairs()
def test_union1d(x, y):
    same(lambda xp, a, b: xp.union1d(a, b), x, y)


@pytest.mark.parametrize("assume_unique", [False, True])
@pairs()
def test_intersect1d_return_indices(x, y, assume_unique):
    if assume_unique:
        x, y = numpy.unique(x), numpy.unique(y)
    same(lambda xp, a, b: xp.intersect1d(a, b, assume_unique=assume_unique, return_indices=True), x, y)


@pytest.mark.parametrize("kind", [None, "sort"])
@pytest.mark.parametrize("invert", [False, True])
@pairs()
def test_isin(x, y, invert, kind):
    same(lambda xp, a, b: xp.isin(a, b, invert=invert, kind=kind), x, y)
    same(lambda xp, a, b: xp.isin(b, a, invert=invert, kind=kind), x, y)


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.uint8, numpy.bool_])
def test_isin_table_kind_for_integers(dtype, invert):
    same(lambda xp, a, b: xp.isin(a, b, kind="table", invert=invert), sample((3, 4), dtype), sample((2,), dtype))


@given(small_arrays, small_arrays)
def test_set_operations_any_arrays(x, y):
    for name in ["intersect1d", "setdiff1d", "setxor1d", "union1d", "isin"]:
        same(lambda xp, a, b: getattr(xp, name)(a, b), x, y)


def test_set_operations_of_python_lists():
    same(lambda xp: xp.union1d([3, 1], [2, 1]))
    same(lambda xp: xp.isin(2, [1, 2, 3]))
    same(lambda xp: xp.setdiff1d([1.5, 2.5], [2.5]))


def test_set_operations_bad_arguments():
    same(lambda xp, a, b: xp.isin(a, b, kind="bogus"), sample((3,)), sample((2,)))     # ValueError
    same(lambda xp, a, b: xp.isin(a, b, kind="table"), sample((3,), float), sample((2,), float))   # ValueError


# ---------------------------------------------------------------------------- devices
ON_DEVICE = {
    "unique": lambda xp, x: xp.unique(x, return_index=True, return_counts=True), "unique_all": lambda xp, x: xp.unique_all(x),
    "union1d": lambda xp, x: xp.union1d(x[0], x[1]), "isin": lambda xp, x: xp.isin(x, x[0]),
    "intersect1d": lambda xp, x: xp.intersect1d(x[0], x[1], return_indices=True),
}


@pytest.mark.parametrize("fn", ON_DEVICE.values(), ids=ON_DEVICE.keys())
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_results_stay_on_the_input_device(fn, dtype):
    same_on_cpu1(fn, sample((2, 3), dtype))


def test_set_operations_across_two_devices_raise_value_error():
    with pytest.raises(ValueError):
        tnp.union1d(tnp.arange(3, device="cpu:1"), tnp.arange(2))
