"""Functional programming and iteration against NumPy: ``vectorize`` (tnp arrays in, tnp arrays
out), ``frompyfunc``, ``piecewise``, ``apply_along_axis``, ``apply_over_axes``, ``nditer``,
``nested_iters``, ``ndenumerate``, ``ndindex``, ``flatiter``, ``iterable`` and the memory
queries, over two dtypes and several shapes each."""
import numpy as np
import pytest

import tnp
from tnp.testing import assert_same, both

DTYPES = ["int32", "float64"]
SHAPES = [(5,), (2, 3), (2, 1, 3)]


def _a(xp, dtype, shape):
    return (xp.arange(int(np.prod(shape))) - 2).reshape(shape).astype(dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_vectorize(dtype, shape):
    both(lambda xp: xp.vectorize(lambda v: v * 2 if v > 0 else -v)(_a(xp, dtype, shape)))
    both(lambda xp: xp.vectorize(lambda v, w: v + w, otypes=["float32"])(_a(xp, dtype, shape), 1))
    both(lambda xp: xp.vectorize(lambda v: (v, v * 1.5))(_a(xp, dtype, shape)))
    both(lambda xp: xp.vectorize(lambda v, k=1: v - k, excluded={"k"})(_a(xp, dtype, shape), k=3))
    both(lambda xp: xp.vectorize(lambda u: u.sum(), signature="(n)->()")(_a(xp, dtype, shape)))
    both(lambda xp: xp.vectorize(lambda v: "pos" if v > 0 else "neg", otypes=[str])(_a(xp, dtype, shape)))
    both(lambda xp: xp.vectorize(lambda v: 1 / 0)(_a(xp, dtype, shape)))              # ZeroDivisionError
    both(lambda xp: xp.vectorize(lambda u: u, signature="(n)->(")(_a(xp, dtype, shape)))  # ValueError


def test_vectorize_forms():
    def decorated(xp):
        @xp.vectorize
        def f(v):
            return v + 1

        @xp.vectorize(otypes=[float], cache=True)
        def g(v):
            return v / 4
        return f(xp.arange(3)), g([[1, 2]]), f(5), f.__name__
    both(decorated)
    assert isinstance(tnp.vectorize(abs), np.vectorize)
    assert type(tnp.vectorize(abs)(tnp.arange(3.0))) is tnp.ndarray
    assert tnp.vectorize(abs)(tnp.arange(3.0), ).device == tnp.device("cpu")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_frompyfunc(dtype, shape):
    both(lambda xp: xp.frompyfunc(lambda v: v * 3, 1, 1)(_a(xp, dtype, shape)))
    both(lambda xp: xp.frompyfunc(divmod, 2, 2)(_a(xp, dtype, shape), 3))
    both(lambda xp: xp.frompyfunc(max, 2, 1).reduce(_a(xp, dtype, shape), axis=-1))
    both(lambda xp: (lambda u: (u.nin, u.nout, u.identity))(xp.frompyfunc(lambda v: v, 1, 1, identity=0)))
    both(lambda xp: xp.frompyfunc(3, 1, 1))                                            # TypeError


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_piecewise(dtype, shape):
    def body(xp):
        x = _a(xp, dtype, shape)
        return (xp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 2]),
                xp.piecewise(x, [x < 0], [-1, 1]),
                xp.piecewise(x, [x > 100], [7]))
    both(body)
    both(lambda xp: xp.piecewise(_a(xp, dtype, shape), [True, False, True], [1, 2]))     # ValueError


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_along_and_over_axes(dtype, shape):
    a = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    for axis in range(len(shape)):
        both(lambda xp: xp.apply_along_axis(lambda v: v.max() - v.min(), axis, xp.asarray(a)))
        both(lambda xp: xp.apply_along_axis(lambda v: v[::-1] * 2, axis, xp.asarray(a)))
        both(lambda xp: xp.apply_along_axis(xp.diag, axis, xp.asarray(a)))
    both(lambda xp: xp.apply_over_axes(xp.sum, xp.asarray(a), [0, len(shape) - 1]))
    both(lambda xp: xp.apply_over_axes(xp.mean, xp.asarray(a), 1))
    both(lambda xp: xp.apply_along_axis(xp.sum, len(shape), xp.asarray(a)))             # AxisError
    both(lambda xp: xp.apply_over_axes(lambda v, ax: v.sum(axis=ax)[..., 0], xp.asarray(a), 0))  # ValueError


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nditer(dtype, shape):
    def read(xp, **kw):
        it = xp.nditer(_a(xp, dtype, shape), **kw)
        return [(it.multi_index if "multi_index" in kw.get("flags", ()) else None, int(v)) for v in it]
    both(read)
    both(read, flags=["multi_index"])
    both(read, order="F", flags=["multi_index"])

    def write(xp):
        a = _a(xp, dtype, shape)
        out = xp.zeros(shape, dtype="float64")
        with xp.nditer([a, out], op_flags=[["readonly"], ["writeonly"]]) as it:
            for x, y in it:
                y[...] = x * 0.5 + 1
        return out
    both(write)

    def allocate(xp):
        a = _a(xp, dtype, shape)
        it = xp.nditer([a, None], flags=["external_loop"], op_dtypes=[None, "float32"])
        with it:
            for x, y in it:
                y[...] = x ** 2
            return xp.asarray(it.operands[1])
    both(allocate)
    both(lambda xp: xp.nditer(_a(xp, dtype, shape), flags=["bogus"]))                  # ValueError


def test_nested_iters():
    def body(xp, dtype):
        a = xp.arange(12, dtype=dtype).reshape(2, 3, 2)
        i, j = xp.nested_iters(a, [[0], [1, 2]], flags=["multi_index"])
        out = []
        for _ in i:
            out.append([(j.multi_index, int(v)) for v in j])
        return out
    both(body, "int64")
    both(body, "float32")
    both(lambda xp: xp.nested_iters(xp.zeros((2, 2)), [[0], [0]]))                      # ValueError


@pytest.mark.parametrize("shape", SHAPES + [()])
@pytest.mark.parametrize("dtype", DTYPES)
def test_ndenumerate_ndindex(dtype, shape):
    both(lambda xp: [(i, v.item()) for i, v in xp.ndenumerate(_a(xp, dtype, shape))])
    both(lambda xp: [type(v).__name__ for _, v in xp.ndenumerate(_a(xp, dtype, shape))])
    both(lambda xp: list(xp.ndindex(*shape)))
    both(lambda xp: list(xp.ndindex(shape)))
    both(lambda xp: list(xp.ndindex(-1)))                                                # ValueError


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_flatiter(dtype, shape):
    def body(xp):
        a = _a(xp, dtype, shape)
        f = a.flat
        assert isinstance(f, xp.flatiter)
        first = next(f)
        second = next(f)
        r = (first, second, f.index, f.coords, f[2], f.index, f[1:4], f[[0, -1]], len(f),
             xp.asarray(f), f.base.shape, f.copy())
        rest = list(f)
        return r + (rest, f.index, f.coords, list(f), iter(f) is f, [v for v in a.flat][-2:])
    both(body)

    def write(xp):
        a = _a(xp, dtype, shape)
        a.flat[::2] = 9
        a.flat[[1]] = -4
        return a
    both(write)
    both(lambda xp: _a(xp, dtype, shape).flat[100])                                      # IndexError


@pytest.mark.parametrize("dtype", DTYPES)
def test_iterable_and_memory_queries(dtype):
    def body(xp):
        a = xp.zeros((4, 4), dtype=dtype)
        return (xp.iterable(a), xp.iterable(a[0, 0]), xp.iterable(3), xp.iterable([1]),
                xp.may_share_memory(a, a[1:, ::2]), xp.may_share_memory(a[:2], a[2:]),
                xp.may_share_memory(a, xp.zeros(3)), xp.may_share_memory(a[::2], a[1::2], max_work=-1),
                xp.shares_memory(a[::2], a[1::2]))
    both(body)


def test_vectorize_result_kinds():
    """The result kinds that NumPy's vectorize gives, as tnp objects."""
    for args in ((3,), ([1, 2],), (np.arange(4.0).reshape(2, 2),)):
        expected = np.vectorize(lambda v: v + 1)(*args)
        got = tnp.vectorize(lambda v: v + 1)(*[tnp.asarray(a) if isinstance(a, np.ndarray) else a
                                               for a in args])
        assert_same(expected, got)
