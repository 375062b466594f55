"""Indexing routines, differentially against NumPy: index generators, indexing-like operations
and the in-place inserters (which must change the tnp array as NumPy's and bump its version)."""
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
    return (numpy.arange(math.prod(shape)) % 7 - 3).reshape(shape).astype(dtype)


def every(shapes, dtypes=DTYPES[:2]):
    """Parametrize ``a`` over sample arrays of these shapes and dtypes."""
    cases = [sample(s, d) for s in shapes for d in dtypes]
    return pytest.mark.parametrize("a", cases, ids=[f"{c.dtype}{list(c.shape)}" for c in cases])


def same_in_place(fn, a, *args):
    """``fn(xp, target, *args)`` returns None and modifies a tnp copy of ``a`` exactly as it
    modifies a NumPy copy; the tnp array's ``_version`` goes up."""
    expected = a.copy()
    assert fn(numpy, expected, *args) is None
    t = tnp.array(a)
    before = t._version
    assert fn(tnp, t, *args) is None
    assert_same(expected, t)
    assert t._version > before


small_arrays = hnp.arrays(st.sampled_from([numpy.int32, numpy.float64, numpy.bool_]),
                          hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))


# ---------------------------------------------------------------------------- indexing-like operations
@pytest.mark.parametrize("indices, axis", [([0, 2], None), (1, None), ([[0, 1], [1, 0]], 0),
                                           ([-1], 1), (0, -1), (numpy.array([], dtype=int), 0)])
@every([(3, 4), (2, 3, 4)], DTYPES)
def test_take_function_and_method(a, indices, axis):
    same(lambda xp, x: xp.take(x, indices, axis=axis), a)
    same(lambda xp, x: x.take(indices, axis=axis), a)
    same(lambda xp, x, i: xp.take(x, i, axis=axis), a, numpy.asarray(indices))


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@every([(5,), (2, 3)])
def test_take_out_of_range_modes(a, mode):
    same(lambda xp, x: xp.take(x, [-7, 0, 9], mode=mode), a)


@every([(5,), (2, 3)])
def test_take_bad_index_or_axis(a):
    same(lambda xp, x: xp.take(x, [99]), a)           # IndexError
    same(lambda xp, x: xp.take(x, [0], axis=4), a)    # AxisError
    same(lambda xp, x: xp.take(x, ["a"]), a)          # ValueError: not an integer


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@every([(3, 4), (2, 3, 4)], DTYPES)
def test_take_along_axis(a, axis):
    same(lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=axis), axis=axis), a)
    if axis is not None:
        same(lambda xp, x: xp.take_along_axis(x, xp.argmax(x, axis=axis, keepdims=True), axis=axis), a)


def test_take_along_axis_bad_indices():
    same(lambda xp, x, i: xp.take_along_axis(x, i, axis=0), sample((3, 4)), numpy.zeros(3, dtype=int))  # ValueError
    same(lambda xp, x, i: xp.take_along_axis(x, i, axis=0), sample((3, 4)), numpy.zeros((1, 4)))        # IndexError
    same(lambda xp, x, i: xp.take_along_axis(x, i, axis=2), sample((3, 4)), numpy.zeros((1, 4), int))   # AxisError


@pytest.mark.parametrize("mode", ["raise", "clip", "wrap"])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float32, numpy.complex128])
def test_choose(dtype, mode):
    choices = [sample((2, 3), dtype), sample((2, 3), dtype) * 10, numpy.full(3, 5, dtype=dtype)]
    same(lambda xp, i, *c: xp.choose(i, c, mode=mode), numpy.array([[0, 1, 2], [2, 1, 0]]), *choices)
    same(lambda xp, i, *c: i.choose(c, mode=mode), numpy.array([0, 2, 1]), *choices)
    same(lambda xp, i, *c: xp.choose(i, c, mode=mode), numpy.array([[3, -1, 0], [0, 0, 0]]), *choices)


def test_choose_bad_shapes():
    same(lambda xp, i, c: xp.choose(i, [c, c]), numpy.array([0, 1, 0]), sample((2,)))   # ValueError


@pytest.mark.parametrize("cond, axis", [([True, False, True], 0), ([False, True], 1), ([1, 0, 1, 1], None),
                                        ([True], 0), ([], None)])
@every([(3, 2), (3, 2, 2)], DTYPES)
def test_compress_function_and_method(a, cond, axis):
    same(lambda xp, x: xp.compress(cond, x, axis=axis), a)
    same(lambda xp, x: x.compress(cond, axis=axis), a)


def test_compress_bad_input():
    same(lambda xp, x: xp.compress([True] * 5, x, axis=0), sample((3, 2)))   # IndexError: too long
    same(lambda xp, x: xp.compress([True], x, axis=3), sample((3, 2)))       # AxisError


@pytest.mark.parametrize("offset, axis1, axis2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (0, 1, 0), (0, -1, 0),
                                                  (5, 0, 1), (0, 0, -1)])
@every([(3, 3), (3, 4), (2, 3, 4)], DTYPES)
def test_diagonal_function_and_method(a, offset, axis1, axis2):
    same(lambda xp, x: xp.diagonal(x, offset, axis1, axis2), a)
    same(lambda xp, x: x.diagonal(offset, axis1, axis2), a)


@every([(3, 3), (2, 3, 4)])
def test_diagonal_bad_axes(a):
    same(lambda xp, x: xp.diagonal(x, 0, 0, 0), a)   # ValueError: same axis
    same(lambda xp, x: xp.diagonal(x, 0, 0, 5), a)   # AxisError
    same(lambda xp, x: xp.diagonal(x[0, 0]), a)      # ValueError: needs 2 dimensions


def test_diagonal_is_a_read_only_view():
    for xp in (numpy, tnp):
        d = xp.diagonal(xp.eye(3))
        with pytest.raises(ValueError):
            d[0] = 5


@pytest.mark.parametrize("default", [0, -1.5, 7])
@every([(6,), (2, 3)], DTYPES[:3])
def test_select(a, default):
    same(lambda xp, x: xp.select([x < 0, x > 1], [x, x * 2], default=default), a)
    same(lambda xp, x: xp.select([x > 100], [x], default), a)


def test_select_bad_input():
    same(lambda xp, x: xp.select([x > 0, x < 0], [x]), sample((4,)))        # ValueError: lengths differ
    same(lambda xp, x: xp.select([x], [x]), sample((4,), numpy.float64))    # TypeError: not boolean
    same(lambda xp, x: xp.select([x > 0], [x[:2]]), sample((4,)))           # ValueError: broadcast


@every([(5,), (2, 3), (2, 2, 2)], DTYPES)
def test_where_with_one_argument_is_nonzero(a):
    same(lambda xp, x: xp.where(x), a)
    same(lambda xp, x: xp.nonzero(x), a)
    same(lambda xp, x: x.nonzero(), a)


@pytest.mark.parametrize("y_dtype", [numpy.int8, numpy.float32, numpy.complex128])
@every([(4,), (2, 4)], [numpy.int32, numpy.float64])
def test_where_with_three_arguments_broadcasts_and_promotes(a, y_dtype):
    same(lambda xp, x, y: xp.where(x > 0, x, y), a, sample((4,), y_dtype))
    same(lambda xp, x: xp.where(x > 0, x, -1), a)
    same(lambda xp, x: xp.where(x > 0, 1.5, 0), a)
    same(lambda xp, x: xp.where(True, x, 0), a)


def test_where_scalar_condition_and_errors():
    same(lambda xp: xp.where(True, 1, 2))
    same(lambda xp, x: xp.where(x > 0, x), sample((3,)))              # ValueError: 2 arguments
    same(lambda xp, x, y: xp.where(x > 0, x, y), sample((3,)), sample((2,)))   # ValueError


@given(small_arrays)
def test_where_and_nonzero_any_array(a):
    same(lambda xp, x: xp.nonzero(x), a)
    same(lambda xp, x: xp.where(x, x, xp.zeros_like(x)), a)


def test_nonzero_of_0d_raises_value_error():
    same(lambda xp, x: xp.nonzero(x), sample(()))


# ---------------------------------------------------------------------------- generating index arrays
@pytest.mark.parametrize("dims, order, mode", [((3, 4), "C", "raise"), ((3, 4), "F", "raise"),
                                               ((2, 2), "C", "clip"), ((2, 2), "C", "wrap"),
                                               ((2, 2), "C", ("clip", "wrap"))])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.int64])
def test_ravel_multi_index(dtype, dims, order, mode):
    idx = (numpy.array([0, 1, 2, 1], dtype=dtype), numpy.array([3, 0, 1, 1], dtype=dtype))
    same(lambda xp, i, j: xp.ravel_multi_index((i, j), dims, mode=mode, order=order), *idx)
    same(lambda xp: xp.ravel_multi_index((1, 1), dims, mode=mode, order=order))


def test_ravel_multi_index_bad_input():
    same(lambda xp: xp.ravel_multi_index(([5], [0]), (2, 2)))          # ValueError: out of bounds
    same(lambda xp: xp.ravel_multi_index(([0], [0], [0]), (2, 2)))     # ValueError: wrong length
    same(lambda xp: xp.ravel_multi_index(([0.5], [0]), (2, 2)))        # TypeError: not integers


@pytest.mark.parametrize("shape, order", [((3, 4), "C"), ((3, 4), "F"), ((2, 3, 4), "C"), ((24,), "C")])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.int64])
def test_unravel_index(dtype, shape, order):
    same(lambda xp, i: xp.unravel_index(i, shape, order=order), numpy.array([0, 5, 11, 3], dtype=dtype))
    same(lambda xp, i: xp.unravel_index(i, shape, order=order), numpy.array([[1, 2], [3, 0]], dtype=dtype))
    same(lambda xp: xp.unravel_index(7, shape, order=order))    # a tuple of scalars


def test_unravel_index_bad_input():
    same(lambda xp: xp.unravel_index(12, (3, 4)))       # ValueError: out of bounds
    same(lambda xp: xp.unravel_index(1.5, (3, 4)))      # TypeError
    same(lambda xp: xp.unravel_index(-1, (3, 4)))       # ValueError


@pytest.mark.parametrize("k", [0, 1, -1, 5])
@pytest.mark.parametrize("n, m", [(3, None), (3, 5), (4, 2), (0, None)])
@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_tril_triu_indices(name, n, m, k):
    same(lambda xp: getattr(xp, name)(n, k, m))


@pytest.mark.parametrize("k", [0, 1, -2])
@pytest.mark.parametrize("name", ["tril_indices_from", "triu_indices_from"])
@every([(3, 3), (2, 4)])
def test_tril_triu_indices_from(name, a, k):
    same(lambda xp, x: getattr(xp, name)(x, k), a)
    same(lambda xp, x: x[getattr(xp, name)(x, k)], a)


@pytest.mark.parametrize("name", ["tril_indices_from", "triu_indices_from", "diag_indices_from"])
def test_indices_from_need_a_2d_array(name):
    same(lambda xp, x: getattr(xp, name)(x), sample((3,)))   # ValueError


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_diag_indices(n, ndim):
    same(lambda xp: xp.diag_indices(n, ndim))


@every([(3, 3), (2, 2, 2)], DTYPES)
def test_diag_indices_from(a):
    same(lambda xp, x: xp.diag_indices_from(x), a)
    same(lambda xp, x: x[xp.diag_indices_from(x)], a)


def test_diag_indices_from_needs_equal_sides():
    same(lambda xp, x: xp.diag_indices_from(x), sample((2, 3)))   # ValueError


@pytest.mark.parametrize("k", [0, 1, -1])
@pytest.mark.parametrize("n", [1, 3, 4])
@pytest.mark.parametrize("func", ["triu", "tril"])
def test_mask_indices(func, n, k):
    same(lambda xp: xp.mask_indices(n, getattr(xp, func), k))


@pytest.mark.parametrize("dtypes", [(numpy.int64, numpy.int32), (numpy.bool_, numpy.int8)])
def test_ix_(dtypes):
    rows, cols = numpy.array([0, 2], dtype=dtypes[0]), numpy.array([1, 0, 1], dtype=dtypes[1])
    same(lambda xp, r, c: xp.ix_(r, c), rows, cols)
    same(lambda xp, x, r, c: x[xp.ix_(r, c)], sample((3, 3)), rows, cols)
    same(lambda xp: xp.ix_([0, 1], [2], [0, 1, 2]))


def test_ix_bad_input():
    same(lambda xp, x: xp.ix_(x), sample((2, 2)))     # ValueError: must be 1-d
    same(lambda xp: xp.ix_([0, 1], [[1]]))             # ValueError: each must be 1-d


# ---------------------------------------------------------------------------- inserting data (in place)
@pytest.mark.parametrize("vals", [[100], [7, 8], [-1, -2, -3, -4, -5]])
@every([(6,), (2, 3)], DTYPES)
def test_place(a, vals):
    same_in_place(lambda xp, x, v: xp.place(x, x != 0, v), a, numpy.array(vals).astype(a.dtype))


def test_place_bad_input():
    same(lambda xp, x: xp.place(x, x > 0, []), sample((4,)))   # ValueError: nothing to place


@pytest.mark.parametrize("mode", ["raise", "clip", "wrap"])
@pytest.mark.parametrize("ind, v", [([0, 2], [5, 6]), ([1], 9), ([-1, 0, 1], [4])])
@every([(5,), (2, 3)], DTYPES)
def test_put_function_and_method(a, ind, v, mode):
    same_in_place(lambda xp, x: xp.put(x, ind, v, mode=mode), a)
    same_in_place(lambda xp, x: x.put(ind, v, mode=mode), a)
    same_in_place(lambda xp, x, i: xp.put(x, i, v, mode=mode), a, numpy.array(ind))


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@every([(5,), (2, 3)])
def test_put_out_of_range_modes(a, mode):
    same_in_place(lambda xp, x: xp.put(x, [-9, 20], [1, 2], mode=mode), a)


def test_put_bad_index():
    same(lambda xp, x: xp.put(x, [9], [1]), sample((3,)))   # IndexError
    with pytest.raises(TypeError):
        tnp.put(numpy.zeros(3), [0], [1])   # the target must be a tnp array


@pytest.mark.parametrize("axis", [0, 1, -1])
@every([(3, 4), (2, 3, 4)], DTYPES)
def test_put_along_axis(a, axis):
    same_in_place(lambda xp, x: xp.put_along_axis(x, xp.argmax(x, axis=axis, keepdims=True), 9, axis=axis), a)
    same_in_place(lambda xp, x: xp.put_along_axis(x, xp.argsort(x, axis=axis), x * 2, axis=axis), a)


def test_put_along_axis_bad_indices():
    same(lambda xp, x, i: xp.put_along_axis(x, i, 1, axis=0), sample((3, 4)), numpy.zeros(3, dtype=int))
    same(lambda xp, x, i: xp.put_along_axis(x, i, 1, axis=4), sample((3, 4)), numpy.zeros((1, 4), int))


@pytest.mark.parametrize("values", [[9], [7, 8], [1, 2, 3, 4, 5, 6, 7]])
@every([(6,), (2, 3)], DTYPES)
def test_putmask(a, values):
    same_in_place(lambda xp, x, v: xp.putmask(x, x != 0, v), a, numpy.array(values).astype(a.dtype))


def test_putmask_bad_mask():
    same(lambda xp, x: xp.putmask(x, [True, False], 1), sample((3,)))   # ValueError


@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("val", [9, [1, 2], [-1, -2, -3, -4, -5]])
@every([(3, 3), (5, 3), (2, 2, 2)], DTYPES)
def test_fill_diagonal(a, val, wrap):
    same_in_place(lambda xp, x: xp.fill_diagonal(x, val, wrap=wrap), a)


def test_fill_diagonal_bad_input():
    same(lambda xp, x: xp.fill_diagonal(x, 1), sample((3,)))       # ValueError: at least 2-d
    same(lambda xp, x: xp.fill_diagonal(x, 1), sample((2, 3, 2)))  # ValueError: equal sides


def test_in_place_inserters_write_through_views():
    for fn in [lambda xp, v: xp.put(v, [0], [50]), lambda xp, v: xp.fill_diagonal(v, 50),
               lambda xp, v: xp.putmask(v, v > 3, 50), lambda xp, v: xp.place(v, v > 3, [50]),
               lambda xp, v: xp.put_along_axis(v, xp.zeros((1, 2), dtype=int), 50, axis=0)]:
        def run(xp):
            x = xp.arange(12).reshape(3, 4)
            fn(xp, x[1:, ::2])
            return x
        same(run)


# ---------------------------------------------------------------------------- devices
ON_DEVICE = {
    "take": lambda xp, x: xp.take(x, [0, 2], axis=1), "diagonal": lambda xp, x: xp.diagonal(x),
    "where": lambda xp, x: xp.where(x > 0, x, 0), "nonzero": lambda xp, x: xp.nonzero(x),
    "compress": lambda xp, x: xp.compress([True, False], x, axis=0), "tril_indices_from": lambda xp, x: xp.tril_indices_from(x),
    "take_along_axis": lambda xp, x: xp.take_along_axis(x, xp.argsort(x), axis=1),
    "select": lambda xp, x: xp.select([x > 0], [x]), "choose": lambda xp, x: xp.choose(x > 0, [x, -x]),
}


@pytest.mark.parametrize("fn", ON_DEVICE.values(), ids=ON_DEVICE.keys())
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_results_stay_on_the_input_device(fn, dtype):
    same_on_cpu1(fn, sample((2, 3), dtype))


@pytest.mark.parametrize("fn", [lambda x, y: tnp.put(x, [0], y[:1]), lambda x, y: tnp.putmask(x, y > 0, 1.0),
                                lambda x, y: tnp.where(y > 0, x, 0), lambda x, y: tnp.fill_diagonal(x.reshape(1, 3), y)])
def test_arrays_on_two_devices_raise_value_error(fn):
    with pytest.raises(ValueError):
        fn(tnp.zeros(3, device="cpu:1"), tnp.ones(3))
