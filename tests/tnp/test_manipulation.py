"""Array manipulation routines, differentially against NumPy.

Each test runs one body with ``xp=numpy`` and ``xp=tnp`` (through ``both``/``same``) and checks
values, dtype, shape and array-vs-scalar kind; bad input must raise NumPy's exception type.
Functions NumPy answers with a view must write through to the original in tnp too.
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
SHAPES = [(6,), (2, 3), (2, 3, 4)]


def sample(shape, dtype=numpy.int64):
    """A small array of ``shape`` and ``dtype`` with varied values (negatives, zeros, repeats)."""
    return (numpy.arange(math.prod(shape)) % 7 - 3).reshape(shape).astype(dtype)


def every(shapes=SHAPES, dtypes=DTYPES[:2]):
    """Parametrize ``a`` over sample arrays of these shapes and dtypes."""
    cases = [sample(s, d) for s in shapes for d in dtypes]
    return pytest.mark.parametrize("a", cases, ids=[f"{c.dtype}{list(c.shape)}" for c in cases])


small_arrays = hnp.arrays(st.sampled_from([numpy.int8, numpy.float32, numpy.bool_, numpy.complex128]),
                          hnp.array_shapes(min_dims=1, max_dims=4, max_side=3))


# ---------------------------------------------------------------------------- shape
@every(shapes=[(), (6,), (2, 3)], dtypes=DTYPES)
def test_shape_size_ndim(a):
    same(lambda xp, x: (xp.shape(x), xp.size(x), xp.ndim(x)), a)


@pytest.mark.parametrize("order", ["C", "F", "A"])
@pytest.mark.parametrize("newshape", [(24,), (-1,), (4, 6), (2, -1, 3), (4, 3, 2, 1), (1, 24)])
@every(shapes=[(24,), (2, 3, 4)], dtypes=DTYPES)
def test_reshape_function_and_method(a, newshape, order):
    same(lambda xp, x: xp.reshape(x, newshape, order=order), a)
    same(lambda xp, x: x.reshape(newshape, order=order), a)
    same(lambda xp, x: x.reshape(*newshape), a)
    same(lambda xp, x: xp.reshape(x, shape=newshape), a)


@pytest.mark.parametrize("newshape", [(5,), (-1, -1), (5, -1), (0, -1)])
@every(shapes=[(6,), (2, 3)])
def test_reshape_to_an_impossible_shape_raises_value_error(a, newshape):
    same(lambda xp, x: xp.reshape(x, newshape), a)
    same(lambda xp, x: x.reshape(newshape), a)


@given(small_arrays, st.sampled_from(["C", "F", "K", "A"]))
def test_ravel_any_array(a, order):
    same(lambda xp, x: xp.ravel(x, order=order), a)
    same(lambda xp, x: x.ravel(order), a)
    same(lambda xp, x: x.flatten(order), a)


@every()
def test_reshape_with_a_tnp_shape_argument(a):
    assert_same(numpy.reshape(a, (-1, 2)), tnp.reshape(tnp.asarray(a), tnp.array([-1, 2])))


# ---------------------------------------------------------------------------- transpose-like
@pytest.mark.parametrize("src, dst", [(0, -1), (-1, 0), ([0, 1], [-1, -2]), (1, 1)])
@every(shapes=[(2, 3), (2, 3, 4)])
def test_moveaxis(a, src, dst):
    same(lambda xp, x: xp.moveaxis(x, src, dst), a)


@pytest.mark.parametrize("axis, start", [(0, 0), (2, 0), (1, 3), (-1, 1)])
@every(shapes=[(2, 3, 4), (1, 2, 3, 4)])
def test_rollaxis(a, axis, start):
    same(lambda xp, x: xp.rollaxis(x, axis, start), a)


@pytest.mark.parametrize("ax1, ax2", [(0, 1), (-1, 0), (1, 1)])
@every(shapes=[(2, 3), (2, 3, 4)])
def test_swapaxes_function_and_method(a, ax1, ax2):
    same(lambda xp, x: xp.swapaxes(x, ax1, ax2), a)
    same(lambda xp, x: x.swapaxes(ax1, ax2), a)


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, -2, -3)])
@every(shapes=[(2, 3, 4)], dtypes=DTYPES)
def test_transpose_and_permute_dims(a, axes):
    same(lambda xp, x: xp.transpose(x, axes), a)
    same(lambda xp, x: x.transpose(axes), a)
    same(lambda xp, x: x.transpose(*(axes or ())), a)
    if axes is not None:
        same(lambda xp, x: xp.permute_dims(x, axes), a)


@every(shapes=[(), (6,), (2, 3)])
def test_T_and_transpose_of_low_dimensional_arrays(a):
    same(lambda xp, x: x.T, a)
    same(lambda xp, x: xp.transpose(x), a)


@every(shapes=[(2, 3), (2, 3, 4), (1, 2, 2, 3)])
def test_matrix_transpose_and_mT(a):
    same(lambda xp, x: xp.matrix_transpose(x), a)
    same(lambda xp, x: x.mT, a)


@pytest.mark.parametrize("bad", [
    lambda xp, x: xp.moveaxis(x, 0, 5), lambda xp, x: xp.moveaxis(x, [0, 0], [1, 2]),
    lambda xp, x: xp.rollaxis(x, 4), lambda xp, x: xp.swapaxes(x, 0, 3),
    lambda xp, x: xp.transpose(x, (0, 1)), lambda xp, x: xp.transpose(x, (0, 0, 1)),
    lambda xp, x: xp.permute_dims(x, (0, 1, 5)), lambda xp, x: xp.matrix_transpose(x[0, 0]),
    lambda xp, x: x.transpose(3, 0, 1),
])
def test_transpose_like_bad_axes_raise_like_numpy(bad):
    same(bad, sample((2, 3, 4)))


# ---------------------------------------------------------------------------- number of dimensions
@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@every(shapes=[(), (3,), (2, 3), (1, 2, 3, 1)], dtypes=DTYPES)
def test_atleast_nd(name, a):
    same(lambda xp, x: getattr(xp, name)(x), a)
    same(lambda xp, x: getattr(xp, name)(x, x[..., :1]), a)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_of_python_scalars_and_nothing(name):
    same(lambda xp: getattr(xp, name)(5))
    same(lambda xp: getattr(xp, name)())


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 2, 3), (0, 3)])
@every(shapes=[(3,), (1, 3)], dtypes=DTYPES)
def test_broadcast_to(a, shape):
    same(lambda xp, x: xp.broadcast_to(x, shape), a)


@pytest.mark.parametrize("shape", [(2,), (4, 2), (3, 1, 0)])
@every(shapes=[(3,), (2, 3)])
def test_broadcast_to_incompatible_shape_raises_value_error(a, shape):
    same(lambda xp, x: xp.broadcast_to(x, shape), a)


def test_broadcast_to_result_is_read_only():
    for xp in (numpy, tnp):
        r = xp.broadcast_to(xp.arange(3), (2, 3))
        with pytest.raises(ValueError):
            r[0, 0] = 1


@pytest.mark.parametrize("shapes", [[(3,), (2, 1)], [(1, 2), (2, 1), ()], [(2, 3)], [(0,), (1,)]])
@pytest.mark.parametrize("dtypes", [(numpy.int32, numpy.float32, numpy.bool_), (numpy.complex64,) * 3])
def test_broadcast_arrays(shapes, dtypes):
    same(lambda xp, *xs: xp.broadcast_arrays(*xs), *[sample(s, d) for s, d in zip(shapes, dtypes)])


@pytest.mark.parametrize("shapes", [[(3,), (2, 1)], [(1, 2), (2, 1), ()], [(4,), 4], [], [(0, 1), (1, 5)],
                                    [(2,), (3,)], [(2, 3), (3, 2)]])
def test_broadcast_shapes(shapes):
    same(lambda xp: xp.broadcast_shapes(*shapes))


def test_broadcast_arrays_incompatible_shapes_raise_value_error():
    same(lambda xp, x, y: xp.broadcast_arrays(x, y), sample((2,)), sample((3,)))


@pytest.mark.parametrize("axis", [0, -1, 1, (0, 2), (-1, 0)])
@every(shapes=[(), (3,), (2, 3)], dtypes=DTYPES)
def test_expand_dims(a, axis):
    same(lambda xp, x: xp.expand_dims(x, axis), a)   # out-of-range axes raise AxisError


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 3), 1, 5])
@every(shapes=[(1, 3, 1, 1), (1, 1, 2, 1)], dtypes=DTYPES)
def test_squeeze_function_and_method(a, axis):
    same(lambda xp, x: xp.squeeze(x, axis), a)   # non-unit axes: ValueError; out of range: AxisError
    same(lambda xp, x: x.squeeze(axis), a)


# ---------------------------------------------------------------------------- joining
@pytest.mark.parametrize("axis", [0, 1, -1, None])
@every(shapes=[(2, 3), (2, 3, 4)], dtypes=DTYPES)
def test_concatenate_and_concat(a, axis):
    same(lambda xp, x: xp.concatenate([x, x, x[:1]], axis=axis), a)
    same(lambda xp, x: xp.concat((x, x), axis=axis), a)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.int8, None])
def test_concatenate_mixed_dtypes_and_dtype_argument(dtype):
    same(lambda xp, x, y: xp.concatenate([x, y], dtype=dtype, casting="unsafe"),
         sample((2, 2), numpy.int16), sample((1, 2), numpy.float64))
    same(lambda xp, x, y: xp.concatenate([x, y]), sample((3,), numpy.int16), sample((3,), numpy.bool_))


@pytest.mark.parametrize("bad", [
    lambda xp, x: xp.concatenate([x, x[0]]), lambda xp, x: xp.concatenate([x, x.T]),
    lambda xp, x: xp.concatenate([x, x], axis=2), lambda xp, x: xp.concatenate([]),
    lambda xp, x: xp.stack([x, x[:1]]), lambda xp, x: xp.stack([x, x], axis=3), lambda xp, x: xp.stack([]),
    lambda xp, x: xp.vstack([x, x[:, :1]]), lambda xp, x: xp.hstack([x, x[:1]]),
    lambda xp, x: xp.block([[x, x], [x]]), lambda xp, x: xp.block([[x], x]),
    lambda xp, x: xp.column_stack([x, x[:1]]),
])
def test_joining_mismatched_shapes_raise_like_numpy(bad):
    same(bad, sample((2, 3)))


@pytest.mark.parametrize("axis", [0, 1, -1])
@every(shapes=[(3,), (2, 3)], dtypes=DTYPES)
def test_stack(a, axis):
    same(lambda xp, x: xp.stack([x, x * 2, x]), a)
    same(lambda xp, x: xp.stack((x, x), axis=axis), a)


@pytest.mark.parametrize("name", ["vstack", "hstack", "dstack", "column_stack"])
@every(shapes=[(), (3,), (3, 2), (3, 2, 2)], dtypes=DTYPES)
def test_vstack_hstack_dstack_column_stack(name, a):
    if name == "column_stack" and a.ndim == 0:
        a = a.reshape(1)
    same(lambda xp, x: getattr(xp, name)([x, x]), a)
    same(lambda xp, x: getattr(xp, name)((x, x, x)), a)


@every(shapes=[(2,), (2, 2)], dtypes=DTYPES)
def test_block(a):
    same(lambda xp, x: xp.block([x, x]), a)
    same(lambda xp, x: xp.block([[x, x], [x, x]]), a)
    same(lambda xp, x: xp.block([[[x]], [[x]]]), a)
    same(lambda xp, x: xp.block(x), a)


def test_block_of_scalars_and_mixed_nesting():
    same(lambda xp: xp.block([[1, 2], [3, 4]]))
    same(lambda xp, x, y: xp.block([[x, y], [y, x]]), numpy.eye(2), numpy.zeros((2, 3)))


def test_joining_a_list_of_tnp_scalars():
    assert_same(numpy.stack([numpy.float32(1), numpy.float32(2)]),
                tnp.stack([tnp.float32(1), tnp.ones(2, dtype=tnp.float32).sum()]))


# ---------------------------------------------------------------------------- splitting
@pytest.mark.parametrize("sections", [1, 2, [1, 3], [0, 5], []])
@every(shapes=[(4,), (4, 2), (4, 6)], dtypes=DTYPES)
def test_split_and_array_split(a, sections):
    same(lambda xp, x: xp.split(x, sections), a)
    same(lambda xp, x: xp.array_split(x, sections), a)


@pytest.mark.parametrize("sections", [3, 5])
@every(shapes=[(4,), (4, 2)])
def test_array_split_allows_unequal_split_does_not(a, sections):
    same(lambda xp, x: xp.split(x, sections), a)   # ValueError
    same(lambda xp, x: xp.array_split(x, sections), a)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
@every(shapes=[(4, 2), (2, 4, 2)])
def test_split_along_an_axis(a, axis):
    same(lambda xp, x: xp.split(x, 2, axis=axis), a)   # AxisError where out of range
    same(lambda xp, x: xp.array_split(x, [1], axis=axis), a)


@pytest.mark.parametrize("name", ["hsplit", "vsplit", "dsplit"])
@every(shapes=[(2,), (2, 2), (2, 2, 2), (4, 4, 4)], dtypes=DTYPES)
def test_hsplit_vsplit_dsplit(name, a):
    same(lambda xp, x: getattr(xp, name)(x, 2), a)   # ValueError where x has too few dimensions
    same(lambda xp, x: getattr(xp, name)(x, [1]), a)


@pytest.mark.parametrize("axis", [0, 1, -1])
@every(shapes=[(2, 3), (2, 3, 4)], dtypes=DTYPES)
def test_unstack(a, axis):
    same(lambda xp, x: xp.unstack(x, axis=axis), a)


def test_unstack_bad_input():
    same(lambda xp, x: xp.unstack(x), sample(()))             # ValueError: needs 1-d
    same(lambda xp, x: xp.unstack(x, axis=2), sample((2, 3)))  # AxisError


# ---------------------------------------------------------------------------- tiling, adding, removing
@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 3), 0, ()])
@every(shapes=[(), (3,), (2, 3)], dtypes=DTYPES)
def test_tile(a, reps):
    same(lambda xp, x: xp.tile(x, reps), a)


@pytest.mark.parametrize("repeats, axis", [(2, None), (0, None), (2, 0), ([1, 0], 0), (3, -1), (2, 5)])
@every(shapes=[(2,), (2, 2)], dtypes=DTYPES)
def test_repeat_function_and_method(a, repeats, axis):
    same(lambda xp, x: xp.repeat(x, repeats, axis=axis), a)
    same(lambda xp, x: x.repeat(repeats, axis=axis), a)


@every(shapes=[(3,), (3, 2)])
def test_repeat_bad_counts(a):
    same(lambda xp, x: xp.repeat(x, [1, 2], axis=0), a)   # ValueError: lengths differ
    same(lambda xp, x: xp.repeat(x, -1), a)                # ValueError: negative


@pytest.mark.parametrize("obj, axis", [(1, None), ([0, 2], None), (slice(0, 2), 0), (-1, 0), (1, -1),
                                       ([True, False, True], 0), (7, 0), (0, 4)])
@every(shapes=[(3,), (3, 3)], dtypes=DTYPES)
def test_delete(a, obj, axis):
    same(lambda xp, x: xp.delete(x, obj, axis=axis), a)   # IndexError / AxisError out of range


@pytest.mark.parametrize("obj, values, axis", [(1, 9, None), ([0, 2], [7, 8], None), (0, 5, 0),
                                               (3, [1, 2, 3], 1), (slice(0, 2), 6, 0), (-1, 4, 0),
                                               (9, 1, 0), (0, 1, 3)])
@every(shapes=[(3,), (3, 3)], dtypes=DTYPES)
def test_insert(a, obj, values, axis):
    same(lambda xp, x: xp.insert(x, obj, values, axis=axis), a)


@pytest.mark.parametrize("axis", [None, 0, 1])
@every(shapes=[(3,), (2, 3)], dtypes=DTYPES)
def test_append(a, axis):
    same(lambda xp, x: xp.append(x, x, axis=axis), a)   # 1-d with axis=1: AxisError
    same(lambda xp, x: xp.append(x, [9, 8, 7]), a)


def test_append_mismatched_shapes_raise_value_error():
    same(lambda xp, x: xp.append(x, [1, 2], axis=0), sample((2, 3)))


@pytest.mark.parametrize("new_shape", [5, (2, 2), (3, 4), 0, (0, 2)])
@every(shapes=[(3,), (2, 3)], dtypes=DTYPES)
def test_resize_function(a, new_shape):
    same(lambda xp, x: xp.resize(x, new_shape), a)


@pytest.mark.parametrize("new_shape", [(5,), (2, 2), (3, 4), (0,)])
@every(shapes=[(3,), (2, 3)], dtypes=DTYPES)
def test_resize_method_resizes_in_place(a, new_shape):
    expected = a.copy()
    expected.resize(new_shape, refcheck=False)
    t = tnp.array(a)
    before = t._version
    assert t.resize(new_shape, refcheck=False) is None
    assert_same(expected, t)
    assert t._version > before


def test_resize_negative_shape_raises_value_error():
    same(lambda xp, x: xp.resize(x, -1), sample((3,)))


@pytest.mark.parametrize("trim", ["fb", "f", "b", "B"])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64, numpy.bool_])
@pytest.mark.parametrize("data", [[0, 0, 1, 2, 0, 3, 0], [0, 0], [1, 2], []])
def test_trim_zeros(data, dtype, trim):
    same(lambda xp, x: xp.trim_zeros(x, trim), numpy.array(data, dtype=dtype))


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_trim_zeros_of_a_matrix(axis):
    same(lambda xp, x: xp.trim_zeros(x, axis=axis), numpy.pad(numpy.eye(2, dtype=numpy.int8), 1))


def test_trim_zeros_bad_trim_raises_value_error():
    same(lambda xp, x: xp.trim_zeros(x, trim="x"), sample((3,)))


@pytest.mark.parametrize("mode, kwargs", [
    ("constant", {}), ("constant", {"constant_values": 7}), ("constant", {"constant_values": (1, 2)}),
    ("edge", {}), ("linear_ramp", {"end_values": 5}), ("maximum", {}), ("mean", {}), ("median", {}),
    ("minimum", {"stat_length": 1}), ("reflect", {}), ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}), ("wrap", {}),
])
@pytest.mark.parametrize("width", [1, (1, 2), ((0, 1), (2, 0))])
@every(shapes=[(3, 4), (2, 3)], dtypes=[numpy.int32, numpy.float64])
def test_pad(a, width, mode, kwargs):
    same(lambda xp, x: xp.pad(x, width, mode=mode, **kwargs), a)


@every(shapes=[(3,), (2, 2)])
def test_pad_with_a_function_and_empty_mode(a):
    def fill(vector, width, iaxis, kwargs):
        vector[:width[0]] = -9
        vector[len(vector) - width[1]:] = 9
    same(lambda xp, x: xp.pad(x, 2, mode=fill), a)
    e, t = numpy.pad(a, 1, mode="empty"), tnp.pad(tnp.asarray(a), 1, mode="empty")
    assert (t.shape, t.dtype) == (e.shape, e.dtype)


@pytest.mark.parametrize("bad", [
    lambda xp, x: xp.pad(x, 1, mode="nope"), lambda xp, x: xp.pad(x, -1),
    lambda xp, x: xp.pad(x[:0], 1, mode="reflect"), lambda xp, x: xp.pad(x, ((1, 2, 3),)),
])
def test_pad_bad_arguments(bad):
    same(bad, sample((3,)))


# ---------------------------------------------------------------------------- rearranging
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1), 3])
@every(shapes=[(2, 3), (2, 3, 4)], dtypes=DTYPES)
def test_flip(a, axis):
    same(lambda xp, x: xp.flip(x, axis), a)


@pytest.mark.parametrize("name", ["fliplr", "flipud"])
@every(shapes=[(3,), (2, 3), (2, 3, 4)], dtypes=DTYPES)
def test_fliplr_flipud(name, a):
    same(lambda xp, x: getattr(xp, name)(x), a)   # fliplr of 1-d: ValueError


@pytest.mark.parametrize("shift, axis", [(1, None), (-2, None), (7, 0), ((1, 2), (0, 1)), (1, -1), (1, 5)])
@every(shapes=[(2, 3), (2, 3, 4)], dtypes=DTYPES)
def test_roll(a, shift, axis):
    same(lambda xp, x: xp.roll(x, shift, axis), a)


@given(small_arrays, st.integers(-5, 5))
def test_roll_and_flip_any_array(a, shift):
    same(lambda xp, x: xp.roll(x, shift), a)
    same(lambda xp, x: xp.roll(x, shift, axis=0), a)
    same(lambda xp, x: xp.flip(x), a)


@pytest.mark.parametrize("k, axes", [(1, (0, 1)), (2, (0, 1)), (-1, (0, 1)), (4, (1, 0)), (1, (1, 2)),
                                     (1, (0, 0)), (1, (0, 5))])
@every(shapes=[(2, 3), (2, 3, 4)], dtypes=DTYPES)
def test_rot90(a, k, axes):
    same(lambda xp, x: xp.rot90(x, k, axes), a)   # equal axes: ValueError; out of range: ValueError


def test_rot90_of_1d_raises_value_error():
    same(lambda xp, x: xp.rot90(x), sample((3,)))


# ---------------------------------------------------------------------------- changing kind
@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("dtype", [numpy.int8, numpy.float32, numpy.complex128, bool, "float64"])
@every(shapes=[(), (3,), (2, 3)], dtypes=[numpy.int64, numpy.float64])
def test_astype_function_and_method(a, dtype, copy):
    same(lambda xp, x: xp.astype(x, dtype, copy=copy), a)
    same(lambda xp, x: x.astype(dtype, copy=copy), a)


def test_astype_without_copy_returns_the_same_data():
    x = tnp.arange(3.0)
    assert numpy.shares_memory(tnp.astype(x, numpy.float64, copy=False), x)
    assert numpy.shares_memory(x.astype(numpy.float64, copy=False), x)
    assert not numpy.shares_memory(x.astype(numpy.float64), x)


def test_astype_bad_arguments():
    same(lambda xp, x: x.astype(numpy.int8, casting="safe"), sample((3,), numpy.float64))   # TypeError
    same(lambda xp, x: xp.astype(x, "not-a-dtype"), sample((3,)))                           # TypeError
    same(lambda xp: xp.astype([1, 2], numpy.int8))                                          # TypeError


# ---------------------------------------------------------------------------- copyto (in place)
def copyto_both(dst, src, **kw):
    """``copyto`` changes the tnp destination as it changes NumPy's, and bumps its version."""
    expected = dst.copy()
    numpy.copyto(expected, src, **kw)
    t = tnp.array(dst)
    before = t._version
    assert tnp.copyto(t, tnp.asarray(src), **kw) is None
    assert_same(expected, t)
    assert t._version > before


@pytest.mark.parametrize("src_shape", [(), (3,), (2, 3)])
@every(shapes=[(2, 3)], dtypes=DTYPES)
def test_copyto(a, src_shape):
    copyto_both(a, (sample(src_shape) + 1).astype(a.dtype))
    copyto_both(a, sample(src_shape, numpy.float64) * 0.5, casting="unsafe")


@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_copyto_where(dtype):
    copyto_both(sample((2, 3), dtype), sample((3,), dtype) * 5, where=sample((2, 3)) > 0)
    copyto_both(sample((4,), dtype), 1, where=numpy.array([True, False, True, False]))


def test_copyto_bad_arguments():
    same(lambda xp, d, s: xp.copyto(d, s), sample((3,), numpy.int64), sample((3,), numpy.float64))  # TypeError
    same(lambda xp, d, s: xp.copyto(d, s), sample((3,)), sample((2,)))                              # ValueError
    with pytest.raises(TypeError):
        tnp.copyto(numpy.zeros(3), tnp.ones(3))   # the destination must be a tnp array


def test_copyto_into_a_view_writes_through():
    x = tnp.zeros((2, 3))
    tnp.copyto(x[:, 1], tnp.ones(2))
    assert_same(numpy.array([[0.0, 1, 0], [0, 1, 0]]), x)


# ---------------------------------------------------------------------------- view semantics
VIEWS = {
    "reshape": lambda xp, x: xp.reshape(x, (4, 6)),
    "reshape-method": lambda xp, x: x.reshape(-1),
    "ravel": lambda xp, x: xp.ravel(x),
    "ravel-method": lambda xp, x: x.ravel(),
    "transpose": lambda xp, x: xp.transpose(x),
    "T": lambda xp, x: x.T,
    "swapaxes": lambda xp, x: xp.swapaxes(x, 0, 2),
    "moveaxis": lambda xp, x: xp.moveaxis(x, 0, -1),
    "expand_dims": lambda xp, x: xp.expand_dims(x, 1),
    "squeeze": lambda xp, x: xp.squeeze(x[:1]),
    "flip": lambda xp, x: xp.flip(x, 1),
    "matrix_transpose": lambda xp, x: xp.matrix_transpose(x),
    "split": lambda xp, x: xp.split(x, 2)[1],
    "atleast_3d": lambda xp, x: xp.atleast_3d(x),
    # copies in NumPy: must be copies in tnp too
    "ravel-F": lambda xp, x: xp.ravel(x, order="F"),
    "ravel-of-transpose": lambda xp, x: xp.ravel(x.T),
    "flatten": lambda xp, x: x.flatten(),
    "concatenate": lambda xp, x: xp.concatenate([x]),
    "roll": lambda xp, x: xp.roll(x, 1),
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
def test_writing_into_a_result_writes_through_exactly_when_numpy_does(view):
    def write(xp):
        x = xp.asarray(sample((2, 3, 4), numpy.float64))
        v = view(xp, x)
        before = getattr(x, "_version", 0)
        v[(0,) * v.ndim] = 100.0
        v[..., -1] = -100.0
        if xp is tnp:
            assert (x._version > before) == numpy.shares_memory(x, v)
        return x, xp.shares_memory(x, v)
    same(write)


def test_views_share_a_version_counter_with_their_base():
    x = tnp.arange(6.0)
    v = x.reshape(2, 3).T
    before = x._version
    v[0, 0] = 7
    assert x._version > before and v._version == x._version
    assert x[0] == 7


# ---------------------------------------------------------------------------- devices
ON_DEVICE = {
    "reshape": lambda xp, x: xp.reshape(x, (3, 2)), "transpose": lambda xp, x: xp.transpose(x),
    "concatenate": lambda xp, x: xp.concatenate([x, x]), "stack": lambda xp, x: xp.stack([x, x], axis=1),
    "block": lambda xp, x: xp.block([[x, x]]), "split": lambda xp, x: xp.split(x, 3, axis=1),
    "broadcast_arrays": lambda xp, x: xp.broadcast_arrays(x, x[:1]), "pad": lambda xp, x: xp.pad(x, 1, mode="edge"),
    "insert": lambda xp, x: xp.insert(x, 1, 9, axis=0), "roll": lambda xp, x: xp.roll(x, 1),
    "astype": lambda xp, x: xp.astype(x, numpy.float32), "tile": lambda xp, x: xp.tile(x, 2),
}


@pytest.mark.parametrize("fn", ON_DEVICE.values(), ids=ON_DEVICE.keys())
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_results_stay_on_the_input_device(fn, dtype):
    same_on_cpu1(fn, sample((2, 3), dtype))


@pytest.mark.parametrize("fn", [lambda x, y: tnp.concatenate([x, y]), lambda x, y: tnp.stack([x, y]),
                                lambda x, y: tnp.block([x, y]), lambda x, y: tnp.copyto(x, y)])
def test_arrays_on_two_devices_raise_value_error(fn):
    with pytest.raises(ValueError):
        fn(tnp.zeros(3, device="cpu:1"), tnp.zeros(3))
