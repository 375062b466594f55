"""VJP rules of indexing (``x[key]``) and of the indexing section, checked against finite
differences to second order; declarations of the in-place and index-generating functions."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import registry
from tnp_train.autodiff.check import check_grads, grad
from tnp_train.autodiff.vjps.indexing import gather_vjp, untake


def R(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def sq(y):
    return y * y


MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
I = tnp.asarray

CASES = [
    # getitem: basic
    ("getitem-int", lambda x: sq(x[1]), [(3, 4)]),
    ("getitem-neg-int", lambda x: sq(x[-1, -2]), [(3, 4)]),
    ("getitem-slices", lambda x: sq(x[1:3, ::2]), [(3, 4)]),
    ("getitem-neg-step", lambda x: sq(x[::-1, 3:0:-2]), [(3, 4)]),
    ("getitem-newaxis-ellipsis", lambda x: sq(x[None, ..., 1]), [(2, 3, 4)]),
    # getitem: advanced, with repeated indices
    ("getitem-list-repeated", lambda x: sq(x[[0, 0, 2, 0]]), [(3, 4)]),
    ("getitem-array-repeated", lambda x: sq(x[I([[1, 1], [2, 1]])]), [(3, 4)]),
    ("getitem-two-arrays", lambda x: sq(x[[0, 0, 1, -1], [1, 1, 2, 3]]), [(3, 4)]),
    ("getitem-broadcast-arrays", lambda x: sq(x[I([[0], [2]]), I([1, 1, 3])]), [(3, 4)]),
    # getitem: boolean
    ("getitem-bool", lambda x: sq(x[I(MASK)]), [(3, 4)]),
    ("getitem-bool-row", lambda x: sq(x[I([True, False, True])]), [(3, 4)]),
    ("getitem-bool-numpy", lambda x: sq(x[MASK[0]]), [(4,)]),
    # getitem: mixed keys
    ("getitem-slice-array", lambda x: sq(x[1:, [0, 0, 2]]), [(3, 4)]),
    ("getitem-arrays-split-by-slice", lambda x: sq(x[[0, 1, 1], :, [2, 2, 0]]), [(2, 3, 4)]),
    ("getitem-int-bool-ellipsis", lambda x: sq(x[1, ..., I([True, False, False, True])]),
     [(2, 3, 4)]),
    ("getitem-newaxis-array", lambda x: sq(x[None, [2, 2], 1:]), [(3, 4)]),
    # take
    ("take", lambda x: sq(tnp.take(x, [0, 5, 5, 2])), [(2, 3)]),
    ("take-axis-neg", lambda x: sq(tnp.take(x, I([[0, 0], [2, 1]]), axis=-1)), [(2, 3)]),
    ("take-wrap", lambda x: sq(tnp.take(x, [4, -5, 1], axis=0, mode="wrap")), [(3, 2)]),
    ("take-clip", lambda x: sq(tnp.take(x, [7, -1, 0], mode="clip")), [(3, 2)]),
    ("method-take", lambda x: sq(x.take([1, 1], axis=1)), [(3, 2)]),
    ("take-scalar", lambda x: sq(tnp.take(x, 4)), [(2, 3)]),
    # take_along_axis
    ("take_along_axis", lambda x: sq(tnp.take_along_axis(x, I([[0, 0, 2], [1, 1, 1]]), axis=1)),
     [(2, 3)]),
    ("take_along_axis-neg", lambda x: sq(tnp.take_along_axis(x, I([[1], [0], [1]]), -1)),
     [(3, 2)]),
    ("take_along_axis-axis0", lambda x: sq(tnp.take_along_axis(x, I([[2, 0], [2, 2]]), axis=0)),
     [(3, 2)]),
    ("take_along_axis-None", lambda x: sq(tnp.take_along_axis(x, I([5, 0, 5]), axis=None)),
     [(2, 3)]),
    # choose
    ("choose", lambda x, y, z: sq(tnp.choose(I([[0, 1, 2], [2, 2, 0]]), [x, y, z])),
     [(2, 3), (3,), ()]),
    ("choose-wrap", lambda x, y: sq(tnp.choose(I([0, 3, -1, 2]), (x, y), mode="wrap")),
     [(4,), (4,)]),
    ("choose-clip", lambda x, y: sq(tnp.choose(I([0, 3, -1]), [x, y], mode="clip")),
     [(3,), (1,)]),
    ("choose-array-choices", lambda c: sq(tnp.choose(I([1, 0, 1]), c)), [(2, 3)]),
    ("method-choose", lambda x, y: sq(I([1, 0, 1]).choose([x, y])), [(3,), (3,)]),
    # compress
    ("compress-axis0", lambda x: sq(tnp.compress([True, False, True], x, axis=0)), [(3, 2)]),
    ("compress-flat", lambda x: sq(tnp.compress(I([False, True, True, False, True]), x)), [(2, 3)]),
    ("compress-neg-axis", lambda x: sq(tnp.compress([False, True], x, axis=-1)), [(3, 2)]),
    ("method-compress", lambda x: sq(x.compress([True, True, False], axis=1)), [(2, 3)]),
    # diagonal
    ("diagonal", lambda x: sq(tnp.diagonal(x)), [(3, 4)]),
    ("diagonal-offset-axes", lambda x: sq(tnp.diagonal(x, offset=1, axis1=-1, axis2=0)),
     [(3, 2, 4)]),
    ("method-diagonal", lambda x: sq(x.diagonal(-1)), [(3, 3)]),
    # select
    ("select", lambda x, y: sq(tnp.select([I([True, False, False, True]),
                                            I([True, True, False, False])], [x, y])),
     [(4,), (4,)]),
    ("select-default-broadcast", lambda x, y, d: sq(tnp.select(
        [I(MASK), I(~MASK & MASK[::-1])], [x, y], default=d)), [(3, 4), (4,), (3, 1)]),
    ("select-default-positional", lambda x, d: sq(tnp.select([I([True, False])], [x], d)),
     [(2,), (2,)]),
    # ix_ of float sequences (a reshape)
    ("ix_", lambda x, y: [sq(o) for o in tnp.ix_(x, y)], [(3,), (2,)]),
    ("ix_-three", lambda x, y, z: sq(tnp.ix_(x, y, z)[2]), [(2,), (1,), (3,)]),
]


@pytest.mark.parametrize("f,shapes", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_grads(f, shapes):
    args = [R(*s, seed=i) for i, s in enumerate(shapes)]
    check_grads(f, order=2)(*args)


def test_getitem_repeated_indices_accumulate():
    x = R(4)
    (g,) = grad(lambda x: tnp.sum(x[[0, 0, 3, 0]] * tnp.asarray([1.0, 2.0, 3.0, 4.0])), x)
    np.testing.assert_array_equal(np.asarray(g), [7, 0, 0, 3])


def test_take_clip_accumulates_at_the_edges():
    x = R(3)
    (g,) = grad(lambda x: tnp.sum(tnp.take(x, [5, 9, -2, 1], mode="clip")), x)
    np.testing.assert_array_equal(np.asarray(g), [1, 1, 2])


def test_second_order_through_repeated_getitem():
    # d/dx sum(x[i]^3) with repeated i: Hessian-vector product is 6 * count * x
    x = R(3)
    with tt.GradientTape() as outer:
        outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(x[[0, 0, 2]] ** 3)
        g = inner.gradient(y, x)
        s = tnp.sum(g)
    h = outer.gradient(s, x)
    X = np.asarray(x)
    np.testing.assert_allclose(np.asarray(g), [6 * X[0] ** 2, 0, 3 * X[2] ** 2])
    np.testing.assert_allclose(np.asarray(h), [12 * X[0], 0, 6 * X[2]])


def test_gather_vjp_permutation_and_padding():
    g = tnp.asarray([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(gather_vjp(g, [2, 0, 1, -1], (3,))), [2, 3, 1])
    np.testing.assert_array_equal(np.asarray(gather_vjp(g, [2, 2, 1, -1], (3,))), [0, 3, 3])
    np.testing.assert_array_equal(np.asarray(untake(g, [0, 0, 1, 1], (2,))), [3, 7])


@pytest.mark.parametrize("call,written", [
    (lambda x: tnp.put(x, [0], 1.0), [1, 0, 0]),
    (lambda x: tnp.place(x, tnp.asarray([True, False, True]), [1.0]), [1, 0, 1]),
    (lambda x: tnp.putmask(x, tnp.asarray([True, False, True]), 1.0), [1, 0, 1]),
    (lambda x: tnp.put_along_axis(x, tnp.asarray([0]), 1.0, axis=0), [1, 0, 0]),
    (lambda x: tnp.fill_diagonal(tnp.reshape(x, (1, 3)), 1.0), [1, 0, 0]),
], ids=["put", "place", "putmask", "put_along_axis", "fill_diagonal"])
def test_in_place_writes_into_watched_arrays_are_recorded(call, written):
    # (refused before gradients through in-place writes) the gradient is with respect to x's
    # value when it was watched: the elements overwritten with 1.0 get none (fill_diagonal
    # writes through a reshape view)
    x = R(3)
    with tt.GradientTape() as tape:
        tape.watch(x)
        call(x)
        loss = tnp.sum(x * 3.0)
    w = np.asarray(written, bool)
    np.testing.assert_array_equal(np.asarray(x)[w], 1.0)
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, x)), np.where(w, 0.0, 3.0))


@pytest.mark.parametrize("name", ["put", "place", "putmask", "put_along_axis", "fill_diagonal"])
def test_in_place_functions_are_declared_with_reason(name):
    assert "in-place" in registry.NONDIFF[name]


INDEX_GENERATORS = {
    "diag_indices": lambda x: tnp.diag_indices(3),
    "diag_indices_from": lambda x: tnp.diag_indices_from(tnp.reshape(x[:9], (3, 3))),
    "tril_indices": lambda x: tnp.tril_indices(3, k=-1),
    "tril_indices_from": lambda x: tnp.tril_indices_from(tnp.reshape(x[:9], (3, 3))),
    "triu_indices": lambda x: tnp.triu_indices(3, 1, 4),
    "triu_indices_from": lambda x: tnp.triu_indices_from(tnp.reshape(x[:9], (3, 3))),
    "mask_indices": lambda x: tnp.mask_indices(3, tnp.triu),
    "unravel_index": lambda x: tnp.unravel_index(tnp.asarray([1, 7]), (3, 4)),
    "ravel_multi_index": lambda x: tnp.ravel_multi_index((tnp.asarray([1, 2]),
                                                          tnp.asarray([0, 3])), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(INDEX_GENERATORS))
def test_index_generators_have_integer_output(name):
    assert name in registry.NONDIFF
    x = R(10)
    with tt.GradientTape() as tape:
        tape.watch(x)
        out = INDEX_GENERATORS[name](x)
    outs = out if isinstance(out, tuple) else (out,)
    assert outs and all(np.asarray(o).dtype.kind in "iub" for o in outs)
    changed = INDEX_GENERATORS[name](x + 0.1)
    for a, b in zip(outs, changed if isinstance(changed, tuple) else (changed,)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_nested_iters_returns_no_array():
    assert "nested_iters" in registry.NO_ARRAY_OUTPUT
    its = tnp.nested_iters(np.arange(6).reshape(2, 3), [[0], [1]])
    assert not any(isinstance(i, tnp.ndarray) for i in its)


def test_every_indexing_name_is_covered():
    names = [n for n, info in tnp.REGISTRY.items() if info.section == "indexing"]
    assert names and [n for n in names if n in registry.missing()] == []
