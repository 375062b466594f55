"""tnp.vectorize against numpy.vectorize: the same results, dtypes and shapes, one vectorized
call where the function traces, NumPy's element loop where it does not."""
import math

import numpy as np
import pytest

import tnp


def same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    assert isinstance(got, tnp.ndarray)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    assert g.tobytes() == w.tobytes(), (g, w)


def both(pyfunc, *args, **options):
    """tnp's and NumPy's vectorize of ``pyfunc`` on ``args`` (tnp's gets tnp arrays)."""
    t = tnp.vectorize(pyfunc, **options)
    n = np.vectorize(pyfunc, **options)
    targs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    return t, t(*targs), n(*args)


_rng = np.random.default_rng(0)
X32 = (_rng.standard_normal((3, 4)) * 3).astype(np.float32)
X64 = _rng.standard_normal(4) * 2
I32 = _rng.integers(-5, 5, (3, 1)).astype(np.int32)
B = _rng.random(4) < 0.5

_TRACEABLE = [
    ("arith", lambda x, y: x * 2.0 + y / 3.0 - 1, (X32, X64)),
    ("ufuncs", lambda x, y: tnp.exp(-x * x) + tnp.sqrt(abs(y)), (X32, X64)),
    ("where", lambda x, y: tnp.where(x > y, x - y, 0.0), (X32, X64)),
    ("int with float", lambda i, x: i * 0.5 + x, (I32, X32)),
    ("bool", lambda b, x: b * x + (x > 0), (B, X64)),
    ("square", lambda x: x ** 2 + 1.0, (X32,)),
    ("numpy ufunc", lambda x: np.tanh(x) * 3.0, (X64,)),
    ("python scalar", lambda x, s: x * s, (X32, 2.5)),
    ("numpy scalar", lambda x, s: x * 2.0 - s, (X64, np.float64(0.3))),
]


@pytest.mark.parametrize("name, f, args", _TRACEABLE, ids=[t[0] for t in _TRACEABLE])
def test_traceable_functions_run_once_vectorized(name, f, args):
    t, got, want = both(f, *args)
    same(got, want)
    assert t.vectorized_calls == 1 and t.loop_calls == 0, t.last_loop_reason


def _branchy(x):
    return x if x > 0 else -2.0 * x


_UNTRACEABLE = [
    ("branch", _branchy, (X32,)),
    ("math module", lambda x: math.exp(x) + 1, (X64,)),
    ("python ints", lambda i: i * i + 7, (I32,)),
    ("bool arithmetic", lambda a, b: a + b, (B, B)),
    ("float32 constant", lambda x: x * np.float32(3), (X64,)),   # Python float * float32
    ("min", lambda x, y: min(x, y), (X32, X64)),
    ("float32 scalar", lambda x, s: x - s, (X64, np.float32(0.1))),  # stays a float32
]


@pytest.mark.parametrize("name, f, args", _UNTRACEABLE, ids=[t[0] for t in _UNTRACEABLE])
def test_untraceable_functions_loop_as_numpy(name, f, args):
    t, got, want = both(f, *args)
    same(got, want)
    assert t.vectorized_calls == 0 and t.loop_calls == 1


def test_python_errors_of_the_element_loop_are_kept():
    t = tnp.vectorize(lambda x: 1.0 / x)
    with pytest.raises(ZeroDivisionError):
        t(tnp.asarray([1.0, 0.0]))
    same(t(tnp.asarray([2.0, 4.0])), np.vectorize(lambda x: 1.0 / x)(np.array([2.0, 4.0])))
    sq = tnp.vectorize(lambda x: x ** 2)
    with pytest.raises(OverflowError):
        sq(tnp.asarray([1e200]))


def test_otypes_cache_and_first_element():
    f = lambda x: x * 0.1   # noqa: E731
    for options in ({"otypes": [np.float64]}, {"otypes": "f"}, {"cache": True}, {}):
        t, got, want = both(f, X32, **options)
        same(got, want)
        assert t.vectorized_calls == 1
    # with cache=True NumPy keeps the first element's result (computed on float32 scalars)
    t, got, want = both(lambda x: x / 3.0, X32, cache=True)
    same(got, want)


def test_excluded_and_keyword_arguments():
    def poly(x, coeffs, scale=1.0):
        return (coeffs[0] + coeffs[1] * x) * scale

    t, got, want = both(poly, X64, [1.0, 2.0], excluded={1})
    same(got, want)
    t = tnp.vectorize(poly, excluded={"coeffs"})
    n = np.vectorize(poly, excluded={"coeffs"})
    same(t(tnp.asarray(X32), coeffs=[0.5, -1.0], scale=tnp.asarray(X64)),
         n(X32, coeffs=[0.5, -1.0], scale=X64))


def test_several_outputs_and_constants():
    t, got, want = both(lambda x, y: (x + y, x * y, 2.0), X32, X64)
    same(got, want)
    assert t.vectorized_calls == 1


def test_zero_d_and_empty_inputs():
    same(both(lambda x: x * 3.0, np.float64(2.0))[1], np.vectorize(lambda x: x * 3.0)(2.0))
    same(both(lambda x: x + 1.0, np.zeros((0, 3)), otypes=[float])[1],
         np.vectorize(lambda x: x + 1.0, otypes=[float])(np.zeros((0, 3))))
    with pytest.raises(ValueError, match="size 0"):
        tnp.vectorize(lambda x: x)(tnp.zeros(0))


def test_signature_loops_over_core_dimensions():
    t, got, want = both(lambda a, b: np.dot(a, b), np.arange(6.0).reshape(2, 3),
                        np.ones(3), signature="(n),(n)->()")
    same(got, want)


def test_decorator_with_arguments():
    @tnp.vectorize(otypes=[np.float32])
    def f(x):
        return x * 2.0 + 1.0

    same(f(tnp.asarray(X64)), np.vectorize(lambda x: x * 2.0 + 1.0, otypes=[np.float32])(X64))
    assert f.vectorized_calls == 1


def test_repeated_calls_reuse_the_compiled_program():
    t = tnp.vectorize(lambda x: x * x - 1.0)
    for k in range(3):
        same(t(tnp.asarray(X32 + k)), np.vectorize(lambda x: x * x - 1.0)(X32 + k))
    assert t.vectorized_calls == 3 and len(t._programs) == 1
