"""VJP rules of the manipulation section (and of the methods/properties the tape sees under
their own names), checked against finite differences to second order."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import registry
from tnp_train.autodiff.check import check_grads


def R(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def sq(y):
    """A non-linearity after the op, so that the second-order check differentiates the rule."""
    return y * y


def sqs(ys):
    return [y * y for y in ys]


# (id, function, argument shapes): every function gets float64 random arguments of these shapes
CASES = [
    # reshape & ravel (functions, methods, flatten, orders)
    ("reshape", lambda x: sq(tnp.reshape(x, (6, 4))), [(4, 6)]),
    ("reshape-F", lambda x: sq(tnp.reshape(x, (-1,), order="F")), [(3, 4, 2)]),
    ("reshape-kw", lambda x: sq(tnp.reshape(x, shape=(2, 3, 4))), [(4, 6)]),
    ("reshape-A-fortran", lambda x: sq(tnp.reshape(x.T, (12,), order="A")), [(3, 4)]),
    ("method-reshape", lambda x: sq(x.reshape(2, 12)), [(4, 6)]),
    ("method-reshape-tuple", lambda x: sq(x.reshape((3, -1), order="F")), [(4, 6)]),
    ("flatten", lambda x: sq(x.flatten()), [(3, 4)]),
    ("flatten-F", lambda x: sq(x.flatten("F")), [(3, 4, 2)]),
    ("flatten-K-transposed", lambda x: sq(x.transpose(1, 2, 0).flatten("K")), [(3, 4, 2)]),
    ("ravel", lambda x: sq(tnp.ravel(x)), [(3, 4)]),
    ("ravel-F", lambda x: sq(tnp.ravel(x, order="F")), [(3, 4)]),
    ("ravel-K-flipped", lambda x: sq(tnp.ravel(x[::-1, :, ::2].transpose(2, 0, 1), order="K")),
     [(3, 4, 4)]),
    ("ravel-K-broadcast", lambda x: sq(tnp.ravel(tnp.broadcast_to(x, (3, 4, 5)).transpose(1, 0, 2),
                                                 order="K")), [(4, 1)]),
    ("method-ravel", lambda x: sq(x.ravel()), [(2, 5)]),
    # transposes
    ("transpose", lambda x: sq(tnp.transpose(x)), [(2, 3, 4)]),
    ("transpose-axes", lambda x: sq(tnp.transpose(x, (1, -1, 0))), [(2, 3, 4)]),
    ("transpose-kw", lambda x: sq(tnp.transpose(x, axes=[2, 0, 1])), [(2, 3, 4)]),
    ("T", lambda x: sq(x.T), [(3, 5)]),
    ("method-transpose", lambda x: sq(x.transpose(2, 0, 1)), [(2, 3, 4)]),
    ("method-transpose-tuple", lambda x: sq(x.transpose((0, 2, 1))), [(2, 3, 4)]),
    ("permute_dims", lambda x: sq(tnp.permute_dims(x, (2, 0, 1))), [(2, 3, 4)]),
    ("permute_dims-neg-kw", lambda x: sq(tnp.permute_dims(x, axes=(-1, 0, -2))), [(2, 3, 4)]),
    ("matrix_transpose", lambda x: sq(tnp.matrix_transpose(x)), [(2, 3, 4)]),
    ("mT", lambda x: sq(x.mT), [(3, 4)]),
    ("moveaxis", lambda x: sq(tnp.moveaxis(x, 0, -1)), [(2, 3, 4)]),
    ("moveaxis-many", lambda x: sq(tnp.moveaxis(x, [0, 1], [-1, -3])), [(2, 3, 4)]),
    ("rollaxis", lambda x: sq(tnp.rollaxis(x, 2)), [(2, 3, 4)]),
    ("rollaxis-neg", lambda x: sq(tnp.rollaxis(x, -1, 1)), [(2, 3, 4, 5)]),
    ("rollaxis-end", lambda x: sq(tnp.rollaxis(x, 0, start=3)), [(2, 3, 4)]),
    ("swapaxes", lambda x: sq(tnp.swapaxes(x, 0, -1)), [(2, 3, 4)]),
    ("method-swapaxes", lambda x: sq(x.swapaxes(1, 2)), [(2, 3, 4)]),
    # dimensions
    ("squeeze", lambda x: sq(tnp.squeeze(x)), [(3, 1, 4, 1)]),
    ("squeeze-axis", lambda x: sq(tnp.squeeze(x, axis=-1)), [(3, 1, 4, 1)]),
    ("method-squeeze", lambda x: sq(x.squeeze(1)), [(3, 1, 4)]),
    ("expand_dims", lambda x: sq(tnp.expand_dims(x, -1)), [(3, 4)]),
    ("expand_dims-tuple", lambda x: sq(tnp.expand_dims(x, axis=(0, 2))), [(3, 4)]),
    ("broadcast_to", lambda x: sq(tnp.broadcast_to(x, (5, 3, 4))), [(3, 1)]),
    ("broadcast_to-kw", lambda x: sq(tnp.broadcast_to(x, shape=(2, 4))), [(4,)]),
    ("broadcast_arrays", lambda x, y: sqs(tnp.broadcast_arrays(x, y)), [(3, 1), (1, 4)]),
    ("broadcast_arrays-3", lambda x, y, z: sqs(tnp.broadcast_arrays(x, y, z)),
     [(2, 1, 1), (3, 1), (4,)]),
    ("atleast_1d", lambda x: sq(tnp.atleast_1d(x)), [()]),
    ("atleast_2d", lambda x: sq(tnp.atleast_2d(x)), [(4,)]),
    ("atleast_3d-1d", lambda x: sq(tnp.atleast_3d(x)), [(4,)]),
    ("atleast_3d-2d", lambda x: sq(tnp.atleast_3d(x)), [(3, 4)]),
    ("atleast_1d-many", lambda x, y: sqs(tnp.atleast_1d(x, y)), [(), (3,)]),
    ("atleast_2d-many", lambda x, y, z: sqs(tnp.atleast_2d(x, y, z)), [(), (3,), (2, 3)]),
    ("atleast_3d-many", lambda x, y: sqs(tnp.atleast_3d(x, y)), [(3,), (2, 3)]),
    # joining (list inputs)
    ("concatenate", lambda x, y: sq(tnp.concatenate([x, y])), [(2, 3), (4, 3)]),
    ("concatenate-neg-axis", lambda x, y, z: sq(tnp.concatenate((x, y, z), axis=-1)),
     [(2, 3), (2, 1), (2, 4)]),
    ("concatenate-None", lambda x, y: sq(tnp.concatenate([x, y], axis=None)), [(2, 3), (4,)]),
    ("concatenate-repeated", lambda x: sq(tnp.concatenate([x, x * 2, x])), [(2, 3)]),
    ("concat", lambda x, y: sq(tnp.concat([x, y], axis=1)), [(2, 3), (2, 2)]),
    ("concat-neg-axis-tuple", lambda x, y: sq(tnp.concat((x, y), axis=-2)), [(1, 3), (2, 3)]),
    ("stack", lambda x, y: sq(tnp.stack([x, y])), [(2, 3), (2, 3)]),
    ("stack-neg-axis", lambda x, y, z: sq(tnp.stack((x, y, z), axis=-1)), [(2, 3)] * 3),
    ("hstack-1d", lambda x, y: sq(tnp.hstack([x, y])), [(3,), (2,)]),
    ("hstack-2d", lambda x, y: sq(tnp.hstack((x, y))), [(2, 3), (2, 1)]),
    ("vstack-1d", lambda x, y: sq(tnp.vstack([x, y])), [(3,), (3,)]),
    ("vstack-mixed", lambda x, y: sq(tnp.vstack([x, y])), [(3,), (2, 3)]),
    ("dstack", lambda x, y: sq(tnp.dstack([x, y])), [(2, 3), (2, 3)]),
    ("dstack-1d", lambda x, y: sq(tnp.dstack([x, y])), [(3,), (3,)]),
    ("column_stack", lambda x, y: sq(tnp.column_stack([x, y])), [(3,), (3, 2)]),
    ("column_stack-1d", lambda x, y: sq(tnp.column_stack((x, y))), [(4,), (4,)]),
    ("block-flat", lambda x, y: sq(tnp.block([x, y])), [(2, 3), (2, 2)]),
    ("block-1d-promote", lambda x, y: sq(tnp.block([x, y])), [(3,), (1, 2)]),
    ("block-array", lambda x: sq(tnp.block(x)), [(2, 3)]),
    # splitting (list outputs)
    ("split", lambda x: sqs(tnp.split(x, 3)), [(6, 2)]),
    ("split-indices-neg-axis", lambda x: sqs(tnp.split(x, [1, 4], axis=-1)), [(2, 6)]),
    ("split-overlapping", lambda x: sqs(tnp.split(x, [3, 1])), [(5, 2)]),
    ("split-one-used", lambda x: sq(tnp.split(x, 3, axis=1)[1]), [(2, 6)]),
    ("array_split", lambda x: sqs(tnp.array_split(x, 3, axis=1)), [(2, 7)]),
    ("array_split-kw", lambda x: sqs(tnp.array_split(x, indices_or_sections=[2, 2, 5])), [(6,)]),
    ("hsplit", lambda x: sqs(tnp.hsplit(x, 2)), [(3, 4)]),
    ("hsplit-1d", lambda x: sqs(tnp.hsplit(x, [1, 3])), [(5,)]),
    ("vsplit", lambda x: sqs(tnp.vsplit(x, [1])), [(3, 4)]),
    ("vsplit-sections", lambda x: sqs(tnp.vsplit(x, 2)), [(4, 2, 3)]),
    ("dsplit", lambda x: sq(tnp.dsplit(x, 2)[0]), [(2, 3, 4)]),
    ("dsplit-indices", lambda x: sqs(tnp.dsplit(x, [1, 3])), [(2, 1, 4)]),
    ("unstack", lambda x: sqs(tnp.unstack(x)), [(3, 2)]),
    ("unstack-axis", lambda x: sq(tnp.unstack(x, axis=-1)[2]), [(2, 4)]),
    # tiling, repeating, resizing
    ("tile", lambda x: sq(tnp.tile(x, 2)), [(2, 3)]),
    ("tile-more-dims", lambda x: sq(tnp.tile(x, (2, 1, 3))), [(2, 3)]),
    ("tile-0d", lambda x: sq(tnp.tile(x, 3)), [()]),
    ("repeat", lambda x: sq(tnp.repeat(x, 2)), [(2, 3)]),
    ("repeat-per-element", lambda x: sq(tnp.repeat(x, [1, 0, 3], axis=0)), [(3, 2)]),
    ("repeat-neg-axis", lambda x: sq(tnp.repeat(x, 3, axis=-1)), [(2, 3)]),
    ("method-repeat", lambda x: sq(x.repeat([2, 1], axis=1)), [(3, 2)]),
    ("resize-grow", lambda x: sq(tnp.resize(x, (5, 7))), [(2, 3)]),
    ("resize-shrink", lambda x: sq(tnp.resize(x, 4)), [(2, 3)]),
    # rearranging
    ("flip", lambda x: sq(tnp.flip(x)), [(2, 3)]),
    ("flip-axes", lambda x: sq(tnp.flip(x, axis=(0, -1))), [(2, 3, 4)]),
    ("fliplr", lambda x: sq(tnp.fliplr(x)), [(2, 3)]),
    ("fliplr-3d", lambda x: sq(tnp.fliplr(x)), [(2, 3, 2)]),
    ("flipud", lambda x: sq(tnp.flipud(x)), [(3, 2)]),
    ("flipud-1d", lambda x: sq(tnp.flipud(x)), [(4,)]),
    ("roll", lambda x: sq(tnp.roll(x, 2)), [(2, 3)]),
    ("roll-axes", lambda x: sq(tnp.roll(x, (1, -2), axis=(0, 1))), [(2, 3)]),
    ("roll-neg-axis", lambda x: sq(tnp.roll(x, shift=-1, axis=-1)), [(2, 3)]),
    ("rot90", lambda x: sq(tnp.rot90(x)), [(2, 3)]),
    ("rot90-k-axes", lambda x: sq(tnp.rot90(x, k=3, axes=(1, 2))), [(2, 3, 4)]),
    ("rot90-neg", lambda x: sq(tnp.rot90(x, -1, axes=(-1, 0))), [(2, 3)]),
    # pad, all modes
    ("pad-constant", lambda x: sq(tnp.pad(x, ((1, 2), (0, 3)))), [(2, 3)]),
    ("pad-constant-int", lambda x: sq(tnp.pad(x, 2, constant_values=1.5)), [(2, 3)]),
    ("pad-dict", lambda x: sq(tnp.pad(x, {0: 1, -1: (0, 2)})), [(2, 3)]),
    ("pad-edge", lambda x: sq(tnp.pad(x, ((2, 1), (3, 0)), mode="edge")), [(2, 3)]),
    ("pad-wrap", lambda x: sq(tnp.pad(x, 3, mode="wrap")), [(2, 3)]),
    ("pad-reflect", lambda x: sq(tnp.pad(x, ((1, 4), (2, 1)), mode="reflect")), [(3, 3)]),
    ("pad-symmetric", lambda x: sq(tnp.pad(x, (4, 2), "symmetric")), [(2, 3)]),
    ("pad-reflect-odd", lambda x: sq(tnp.pad(x, 4, mode="reflect", reflect_type="odd")), [(3, 2)]),
    ("pad-symmetric-odd", lambda x: sq(tnp.pad(x, (2, 3), mode="symmetric", reflect_type="odd")),
     [(3,)]),
    ("pad-mean", lambda x: sq(tnp.pad(x, ((1, 2), (2, 1)), mode="mean")), [(3, 4)]),
    ("pad-mean-stat", lambda x: sq(tnp.pad(x, 2, mode="mean", stat_length=((1, 2), (3, 2)))),
     [(3, 4)]),
    ("pad-maximum", lambda x: sq(tnp.pad(x, ((1, 2), (2, 1)), mode="maximum")), [(3, 4)]),
    ("pad-minimum-stat", lambda x: sq(tnp.pad(x, 2, mode="minimum", stat_length=2)), [(3, 4)]),
    ("pad-median-odd", lambda x: sq(tnp.pad(x, (1, 2), mode="median")), [(5,)]),
    ("pad-median-even", lambda x: sq(tnp.pad(x, ((1, 1), (2, 0)), mode="median")), [(4, 4)]),
    ("pad-linear_ramp", lambda x: sq(tnp.pad(x, ((1, 3), (2, 0)), mode="linear_ramp",
                                             end_values=(1.0, -2.0))), [(3, 4)]),
    ("pad-empty-centre", lambda x: sq(tnp.pad(x, 2, mode="empty")[2:-2, 2:-2]), [(2, 3)]),
    ("pad-constant_values-scalar", lambda x, c: sq(tnp.pad(x, 2, constant_values=c)), [(2, 3), ()]),
    ("pad-constant_values-pair", lambda x, c: sq(tnp.pad(x, ((1, 2), (0, 1)), constant_values=c)),
     [(2, 3), (2,)]),
    ("pad-constant_values-per-axis", lambda x, c: sq(tnp.pad(x, 1, constant_values=c)),
     [(2, 3), (2, 2)]),
    ("pad-constant_values-per-axis-one", lambda x, c: sq(tnp.pad(x, (1, 2), constant_values=c)),
     [(2, 3), (2, 1)]),
    # deleting, inserting, appending, trimming
    ("delete", lambda x: sq(tnp.delete(x, 1)), [(2, 3)]),
    ("delete-axis", lambda x: sq(tnp.delete(x, [0, 2], axis=-1)), [(2, 4)]),
    ("delete-slice", lambda x: sq(tnp.delete(x, slice(0, None, 2), axis=0)), [(5, 2)]),
    ("insert-flat", lambda x, v: sq(tnp.insert(x, 2, v)), [(2, 3), (2,)]),
    ("insert-rows-broadcast", lambda x, v: sq(tnp.insert(x, [1, 1, 3], v, axis=0)),
     [(3, 2), (2,)]),
    ("insert-column", lambda x, v: sq(tnp.insert(x, 2, v, axis=-1)), [(3, 4), (3,)]),
    ("insert-scalar-broadcast", lambda x, v: sq(tnp.insert(x, 1, v, axis=0)), [(3, 2), ()]),
    ("append", lambda x, v: sq(tnp.append(x, v)), [(2, 3), (4,)]),
    ("append-axis", lambda x, v: sq(tnp.append(x, v, axis=0)), [(2, 3), (1, 3)]),
    ("trim_zeros", lambda x: sq(tnp.trim_zeros(x * tnp.asarray([0.0, 0, 1, 1, 0, 1, 0]))), [(7,)]),
    ("trim_zeros-f", lambda x: sq(tnp.trim_zeros(x * tnp.asarray([0.0, 0, 1, 1, 0, 1, 0]), "f")),
     [(7,)]),
    ("trim_zeros-2d-axis", lambda x: sq(tnp.trim_zeros(
        x * tnp.asarray([[0.0, 1, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0]]), axis=-1)), [(3, 4)]),
    ("trim_zeros-2d", lambda x: sq(tnp.trim_zeros(
        x * tnp.asarray([[0.0, 1, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0]]), trim="b")), [(3, 4)]),
    # strides
    ("as_strided-windows", lambda x: sq(tnp.lib.stride_tricks.as_strided(
        x, shape=(4, 3), strides=(8, 8))), [(6,)]),
    ("as_strided-of-view", lambda x: sq(tnp.lib.stride_tricks.as_strided(
        x.T, shape=(3, 2), strides=(x.T.strides[0], x.T.strides[0] + x.T.strides[1]))), [(3, 4)]),
    ("as_strided-default", lambda x: sq(tnp.lib.stride_tricks.as_strided(x)), [(2, 3)]),
    ("sliding_window_view", lambda x: sq(tnp.lib.stride_tricks.sliding_window_view(x, 3)),
     [(6,)]),
    ("sliding_window_view-2d", lambda x: sq(tnp.lib.stride_tricks.sliding_window_view(
        x, (2, 2))), [(3, 4)]),
    ("sliding_window_view-axis", lambda x: sq(tnp.lib.stride_tricks.sliding_window_view(
        x, 2, axis=-1)), [(3, 4)]),
    # dtypes and views
    ("astype", lambda x: sq(x.astype(np.float64)), [(2, 3)]),
    ("astype-function", lambda x: sq(tnp.astype(x, "float64", copy=True)), [(2, 3)]),
    ("view", lambda x: sq(x.view()), [(2, 3)]),
    ("view-same-dtype", lambda x: sq(x.view(np.float64)), [(2, 3)]),
    ("copy-method", lambda x: sq(x.copy()), [(2, 3)]),
    ("copy-method-of-view", lambda x: sq(x.T.copy(order="F")), [(2, 3)]),
    ("real-of-real", lambda x: sq(x.real), [(2, 3)]),
    ("real-of-real-view", lambda x: sq(x[::-1].real), [(4,)]),
]


@pytest.mark.parametrize("f,shapes", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_grads(f, shapes):
    args = [R(*s, seed=i) for i, s in enumerate(shapes)]
    check_grads(f, order=2)(*args)


def test_row_stack():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check_grads(lambda x, y: sq(tnp.row_stack([x, y])), order=2)(R(3), R(2, 3, seed=1))
        check_grads(lambda x, y: sq(tnp.row_stack((x, y))), order=2)(R(2, 2), R(1, 2, seed=1))


# ---------------------------------------------------------------------------- exact values
def grad(f, *xs):
    with tt.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = f(*xs)
    return tape.gradient(y, list(xs))


def test_repeat_accumulates_repeated_elements():
    x = R(3)
    (g,) = grad(lambda x: tnp.sum(tnp.repeat(x, [2, 0, 3]) * tnp.arange(5.0)), x)
    np.testing.assert_array_equal(np.asarray(g), [0 + 1, 0, 2 + 3 + 4])


def test_resize_accumulates_copies():
    x = R(2, 2)
    (g,) = grad(lambda x: tnp.sum(tnp.resize(x, (3, 3))), x)
    np.testing.assert_array_equal(np.asarray(g), [[3, 2], [2, 2]])


def test_pad_wrap_and_constant_values():
    x = R(2)
    c = tnp.asarray([1.0, 2.0])
    gx, gc = grad(lambda x, c: tnp.sum(tnp.pad(x, (1, 3), constant_values=c) * tnp.arange(6.0)),
                  x, c)
    np.testing.assert_array_equal(np.asarray(gx), [1, 2])
    np.testing.assert_array_equal(np.asarray(gc), [0, 3 + 4 + 5])
    (g,) = grad(lambda x: tnp.sum(tnp.pad(x, 3, mode="wrap")), x)
    np.testing.assert_array_equal(np.asarray(g), [4, 4])


def test_split_cotangent_of_unused_outputs_is_zero():
    x = R(6)
    (g,) = grad(lambda x: tnp.sum(tnp.split(x, 3)[2] * 2.0), x)
    np.testing.assert_array_equal(np.asarray(g), [0, 0, 0, 0, 2, 2])


def test_astype_to_float32_casts_back_and_to_int_has_no_gradient():
    x = R(3)
    (g,) = grad(lambda x: tnp.sum(x.astype(np.float32) * 3), x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(g), [3, 3, 3])
    (g,) = grad(lambda x: tnp.sum(x.astype(np.int64) * 3.0), x)
    assert g is None


def test_view_to_other_float_dtype_raises_clear_error():
    x = R(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(tnp.abs(x.view(np.complex128)))
    with pytest.raises(NotImplementedError, match="view"):
        tape.gradient(y, x)


def test_view_to_integer_has_no_gradient():
    x = R(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        v = x.view(np.int64)
        y = tnp.sum(v * 1.0)
    assert v.dtype == np.int64
    assert tape.gradient(y, x) is None


def test_real_and_imag_properties_of_complex_follow_the_math_convention():
    # the properties x.real / x.imag are recorded as "real" / "imag"; the gradient of a real
    # f(z), z = x + iy, is df/dx - i df/dy (autograd's convention, as the rule of
    # tnp.absolute: d|z| = conj(z)/|z|)
    z = tnp.asarray(np.array([1 + 2j, -0.5 + 0.25j]))
    a = tnp.asarray([3.0, -1.0])
    b = tnp.asarray([0.5, 2.0])
    (g,) = grad(lambda z: tnp.sum(z.real * a + z.imag * b), z)
    np.testing.assert_allclose(np.asarray(g), np.asarray(a) - 1j * np.asarray(b))
    (g2,) = grad(lambda z: tnp.sum(tnp.abs(z) ** 2), z)
    (g3,) = grad(lambda z: tnp.sum(z.real ** 2 + z.imag ** 2), z)
    np.testing.assert_allclose(np.asarray(g3), np.asarray(g2))


def test_imag_of_real_array_has_zero_gradient():
    x = R(3)
    (g,) = grad(lambda x: tnp.sum(x.imag + x), x)
    np.testing.assert_array_equal(np.asarray(g), np.ones(3))


def test_block_nested_rule_splits_the_cotangent():
    """The rule handles nested blocks (called directly, since the tape only looks one list
    level deep; see the next test)."""
    a, b, c, d = R(2, 3), R(2, 1, seed=1), R(1, 3, seed=2), R(1, 1, seed=3)
    arrays = [[a, b], [c, d]]
    ans = tnp.block(arrays)
    g = R(3, 4, seed=4)
    cot = registry.get_rule("block").for_position(0)(ans, arrays)(g)
    G = np.asarray(g)
    np.testing.assert_array_equal(np.asarray(cot[0][0]), G[:2, :3])
    np.testing.assert_array_equal(np.asarray(cot[0][1]), G[:2, 3:])
    np.testing.assert_array_equal(np.asarray(cot[1][0]), G[2:, :3])
    np.testing.assert_array_equal(np.asarray(cot[1][1]), G[2:, 3:])


def test_block_nested_through_the_tape():
    a, b = R(2, 2), R(2, 2, seed=1)
    (g, _) = grad(lambda a, b: tnp.sum(tnp.block([[a, b], [b, a]])), a, b)
    np.testing.assert_array_equal(np.asarray(g), np.full((2, 2), 2.0))


def test_copyto_into_watched_array_is_recorded():
    # the gradient is with respect to dst's value when it was watched: overwritten, it is 0
    dst = R(3)
    with tt.GradientTape() as tape:
        tape.watch(dst)
        tnp.copyto(dst, tnp.ones(3), where=tnp.asarray([True, False, True]))
        loss = tnp.sum(dst * 2.0)
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, dst)), [0.0, 2.0, 0.0])


# ---------------------------------------------------------------------------- declarations
def test_meta_functions_return_no_array():
    x = R(2, 3)
    for name, out in [("shape", tnp.shape(x)), ("size", tnp.size(x)), ("ndim", tnp.ndim(x)),
                      ("broadcast_shapes", tnp.broadcast_shapes((2, 1), (3,)))]:
        assert name in registry.NO_ARRAY_OUTPUT
        assert not isinstance(out, tnp.ndarray) or out.ndim == 0 and out.dtype.kind in "iu"


def test_copyto_declared_with_in_place_reason():
    assert "in-place" in registry.NONDIFF["copyto"]
    dst = tnp.zeros(3)
    src = R(3)
    tnp.copyto(dst, src)
    np.testing.assert_array_equal(np.asarray(dst), np.asarray(src))


def test_every_manipulation_name_is_covered():
    names = [n for n, info in tnp.REGISTRY.items() if info.section == "manipulation"]
    assert [n for n in names if n in registry.missing()] == []
    for n in ("matrix_transpose", "real", "imag", "view", "astype", "copy", "transpose",
              "reshape", "getitem"):
        assert registry.get_rule(n) is not None, n


def test_unsupported_cases_raise_clear_errors_at_gradient_time():
    x = R(6)

    def pad_with(vector, width, axis, kwargs):
        vector[:width[0]] = 0
        vector[vector.size - width[1]:] = 0

    for f, match in [
        (lambda x: tnp.pad(x, 2, mode=pad_with), "callable mode"),
        (lambda x: tnp.lib.stride_tricks.as_strided(x, shape=(3,), strides=(4,)), "item size"),
    ]:
        with tt.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(f(x) * 2.0)
        with pytest.raises(NotImplementedError, match=match):
            tape.gradient(y, x)
