"""Differential tests of tnp's logic functions against NumPy: truth tests (all/any), value tests
(isfinite, isnan, ...), logical operations, comparisons (ufuncs and operators), closeness and
equality tests, and type tests. Each body runs with ``xp=numpy`` and ``xp=tnp``; values, dtype,
shape and array-vs-scalar kind must match exactly, or both must raise the same exception type.
"""
import operator
import zlib

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tnp
from tnp import _logic
from tnp.testing import both
from tnp.testing.differential import both_labelled as _both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = [(), (7,), (3, 4), (2, 3, 2)]
SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 1e-320, 3e38, -7.0])


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _sample(dtype, shape, key=""):
    """Values of ``dtype``: floats include NaN, infinities, signed zeros and subnormals;
    integers include zeros and negatives; complex mixes both."""
    rng = _rng(dtype, shape, key)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -3
        return rng.integers(lo, 4, size=shape).astype(dt)
    if dt.kind == "f":
        return rng.choice(SPECIAL, size=shape).astype(dt)
    if dt.kind == "c":
        return (rng.choice(SPECIAL, size=shape) + 1j * rng.choice(SPECIAL[:4], size=shape)).astype(dt)
    if dt.kind in "mM":
        v = rng.integers(-5, 5, size=shape).astype(dt)
        return np.where(rng.random(shape) < 0.3, np.array("NaT", dtype=dt), v)
    raise AssertionError(dtype)


def _arr(xp, x):
    return xp.array(x, copy=True)


# ------------------------------------------------------------------------------- the table
def test_logic_table_is_all_here():
    """The section's tables are what this file tests (adding a name needs a test here)."""
    assert set(_logic.UFUNCS) == set(UNARY_VALUE_TESTS) | set(LOGICAL) | set(COMPARISONS)
    tested = {"all", "any", "isneginf", "isposinf", "iscomplex", "iscomplexobj", "isfortran",
              "isreal", "isrealobj", "isscalar", "allclose", "isclose", "array_equal",
              "array_equiv"}
    assert set(_logic.FUNCTIONS) == tested


# ------------------------------------------------------------------------------- all / any
@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "float32", "float64", "complex64"])
def test_all_any(name, dtype):
    """NaN counts as True; axes (int, negative, tuple, None) and keepdims; a 0-d result is a
    NumPy bool scalar (``np.True_``), an out-of-range axis an AxisError."""
    for shape in SHAPES:
        a = _sample(dtype, shape, name)
        for axis in (None, 0, -1, (0, 1)):
            for keepdims in (False, True):
                _both((shape, axis, keepdims),
                      lambda xp: getattr(xp, name)(_arr(xp, a), axis=axis, keepdims=keepdims))
        _both((shape, "method"), lambda xp: getattr(_arr(xp, a), name)())


@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any_where_out_and_empty(name):
    a = _sample("int32", (3, 4), "where")
    mask = _sample("bool", (3, 4), "mask")
    both(lambda xp: getattr(xp, name)(_arr(xp, a), where=_arr(xp, mask)))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, where=mask.tolist()))
    both(lambda xp: getattr(xp, name)(xp.zeros((0, 3))))            # all(empty) is True
    both(lambda xp: getattr(xp, name)(xp.zeros((0, 3)), axis=0))
    both(lambda xp: getattr(xp, name)([[1, 0], [1, 1]], axis=1))  # lists

    def with_out(xp):
        o = xp.zeros(4, dtype=bool)
        assert getattr(xp, name)(_arr(xp, a), axis=0, out=o) is o
        return o
    both(with_out)


def test_all_any_results_print_like_numpy():
    assert repr(tnp.all(tnp.ones(3))) == repr(np.all(np.ones(3))) == "np.True_"
    assert repr(tnp.any(tnp.zeros(3))) == "np.False_"
    assert bool(tnp.asarray([1, 2]).all()) is True
    if tnp.zeros(2).any():
        pytest.fail("any() of zeros is truthy")


# ------------------------------------------------------------------------------- value tests
UNARY_VALUE_TESTS = {
    "isfinite": ["float16", "float32", "float64", "complex128", "int32", "bool", "datetime64[s]"],
    "isinf": ["float16", "float32", "float64", "complex128", "int32", "bool", "timedelta64[ms]"],
    "isnan": ["float16", "float32", "float64", "complex128", "int32", "bool", "datetime64[s]"],
    "isnat": ["datetime64[s]", "timedelta64[ms]", "float64"],  # float64: TypeError
}


@pytest.mark.parametrize("name,dtype", [(n, d) for n, ds in UNARY_VALUE_TESTS.items() for d in ds])
def test_value_tests(name, dtype):
    """Boolean arrays of the input's shape (0-d input: a NumPy bool scalar)."""
    for shape in SHAPES[:3]:
        a = _sample(dtype, shape, name)
        _both(shape, lambda xp: getattr(xp, name)(_arr(xp, a)))


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex128"])
def test_isposinf_isneginf(name, dtype):
    """Complex input is a TypeError in NumPy; integers are never infinite."""
    for shape in SHAPES[:3]:
        a = _sample(dtype, shape, name)
        _both(shape, lambda xp: getattr(xp, name)(_arr(xp, a)))

    def with_out(xp):
        o = xp.ones(10, dtype=bool)
        assert getattr(xp, name)(_arr(xp, SPECIAL), out=o) is o
        return o
    both(with_out)


@given(x=hnp.arrays(st.sampled_from([np.float16, np.float32, np.float64, np.complex64]),
                    hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
def test_value_tests_on_any_floats(x):
    for name in ("isfinite", "isinf", "isnan"):
        _both(name, lambda xp: getattr(xp, name)(_arr(xp, x)))
    if x.dtype.kind == "f":
        _both("isposinf", lambda xp: xp.isposinf(_arr(xp, x)))
        _both("isneginf", lambda xp: xp.isneginf(_arr(xp, x)))


def test_value_tests_on_python_scalars_and_numpy_scalars():
    both(lambda xp: xp.isnan(float("nan")))
    both(lambda xp: xp.isinf(xp.float32(np.inf)))
    both(lambda xp: xp.isfinite([1.0, np.inf]))
    both(lambda xp: xp.isnat(xp.datetime64("NaT")))


# ------------------------------------------------------------------------------- logical ops
LOGICAL = ["logical_and", "logical_or", "logical_xor", "logical_not"]


@pytest.mark.parametrize("name", LOGICAL)
@pytest.mark.parametrize("dtype", ["bool", "int16", "float64", "complex64"])
def test_logical_functions(name, dtype):
    """Any nonzero (NaN included) is True; results are bool; 2-d broadcasts against a row."""
    nin = getattr(np, name).nin
    for shape in SHAPES[:3]:
        a = _sample(dtype, shape, "a")
        b = _sample(dtype, shape[-1:] if len(shape) == 2 else shape, "b")
        args = (a, b)[:nin]
        _both(shape, lambda xp: getattr(xp, name)(*[_arr(xp, x) for x in args]))
    if nin == 2:
        both(lambda xp: getattr(xp, name)(_arr(xp, a), 0))
        both(lambda xp: getattr(xp, name)(True, _arr(xp, a)))
        both(lambda xp: getattr(xp, name).reduce(_arr(xp, a), axis=1))
        both(lambda xp: getattr(xp, name).accumulate(_arr(xp, a), axis=0))


def test_logical_with_out_and_where():
    a, b = _sample("bool", (3, 4), "a"), _sample("bool", (4,), "b")

    def body(xp):
        o = xp.ones((3, 4), dtype=bool)
        r = xp.logical_and(_arr(xp, a), _arr(xp, b), out=o, where=_arr(xp, b))
        assert r is o
        return o
    both(body)
    both(lambda xp: xp.logical_or(_arr(xp, a), _arr(xp, b), dtype=int))  # NumPy has no such loop


def test_logical_functions_refuse_what_numpy_refuses():
    both(lambda xp: xp.logical_and(xp.ones(3), xp.ones(4)))
    both(lambda xp: xp.logical_not(xp.asarray(["a"])))


# ------------------------------------------------------------------------------- comparisons
COMPARISONS = {"greater": operator.gt, "greater_equal": operator.ge, "less": operator.lt,
               "less_equal": operator.le, "equal": operator.eq, "not_equal": operator.ne}
COMPARE_PAIRS = [("int64", "int64"), ("int8", "uint64"), ("float32", "float64"),
                 ("float64", "int32"), ("bool", "bool"), ("complex128", "float32"),
                 ("uint8", "float16")]


@pytest.mark.parametrize("name", list(COMPARISONS))
@pytest.mark.parametrize("dta,dtb", COMPARE_PAIRS)
def test_comparison_ufuncs_and_operators(name, dta, dtb):
    """``greater(a, b)`` and ``a > b`` (either side tnp) equal NumPy's, NaN compares unequal,
    and int64/uint64 compare by value."""
    op = COMPARISONS[name]
    for shape in SHAPES[:3]:
        a = _sample(dta, shape, "a")
        b = _sample(dtb, shape[-1:] if len(shape) == 2 else shape, "b")
        _both((shape, "ufunc"), lambda xp: getattr(xp, name)(_arr(xp, a), _arr(xp, b)))
        _both((shape, "op"), lambda xp: op(_arr(xp, a), _arr(xp, b)))
        _both((shape, "op, numpy right"), lambda xp: op(_arr(xp, a), b.copy()))


@pytest.mark.parametrize("name", list(COMPARISONS))
@pytest.mark.parametrize("py", [2, -1, 2.5, float("nan"), True, 1 + 0j, 10**30])
def test_comparisons_with_python_scalars(name, py):
    """Python ints out of the array's range compare by value (no OverflowError), as in NumPy 2;
    complex ordering is a TypeError."""
    op = COMPARISONS[name]
    for dtype in ("int8", "uint8", "float32", "int64"):
        a = _sample(dtype, (2, 3), name)
        _both((dtype, "a op py"), lambda xp: op(_arr(xp, a), py))
        _both((dtype, "py op a"), lambda xp: op(py, _arr(xp, a)))
        _both((dtype, "ufunc"), lambda xp: getattr(xp, name)(_arr(xp, a), py))
        _both((dtype, "scalar"), lambda xp: op(_arr(xp, a)[0, 0], py))


def test_comparison_of_scalars_is_a_numpy_bool():
    both(lambda xp: xp.arange(3)[1] == 1)
    both(lambda xp: xp.arange(3.0)[1] < xp.arange(3.0)[2])
    assert repr(tnp.arange(3)[1] == 1) == "np.True_"


def test_comparisons_refuse_what_numpy_refuses():
    both(lambda xp: xp.ones(3) < xp.ones(4))
    both(lambda xp: xp.asarray([1j]) < 1)
    both(lambda xp: xp.greater(xp.ones(3), xp.ones(3), casting="no", dtype=int))


def test_equality_with_non_arrays_is_elementwise_or_false():
    both(lambda xp: xp.arange(3) == None)  # noqa: E711
    both(lambda xp: xp.arange(3) != "a")
    both(lambda xp: xp.arange(3) == "a")
    both(lambda xp: xp.arange(6).reshape(3, 2) == xp.asarray(["a", "b"]))
    both(lambda xp: xp.asarray(1.0) == "a")
    both(lambda xp: xp.arange(3)[0] != "a")
    both(lambda xp: xp.arange(3) < "a")  # ordering has no fallback: TypeError
    both(lambda xp: xp.arange(3) == xp.arange(4))  # shapes must broadcast: ValueError
    both(lambda xp: xp.arange(3) == [0, 1, 5])


@given(x=hnp.arrays(st.sampled_from([np.int32, np.float64, np.uint8]),
                    hnp.array_shapes(max_dims=2, max_side=4)), data=st.data())
def test_comparisons_on_any_broadcastable_arrays(x, data):
    y = data.draw(hnp.arrays(x.dtype, hnp.broadcastable_shapes(x.shape, max_dims=2)))
    for name, op in COMPARISONS.items():
        _both(name, lambda xp: op(_arr(xp, x), _arr(xp, y)))


# ------------------------------------------------------------------------------- closeness
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int64"])
def test_isclose(dtype):
    """Default and custom tolerances, NaN handling (``equal_nan``), infinities, broadcasting."""
    for shape in SHAPES[:3]:
        a = _sample(dtype, shape, "isclose")
        b = (a + np.asarray(1e-9, dtype=a.dtype) * (a != 0)).astype(a.dtype)
        for kw in ({}, {"rtol": 0, "atol": 0}, {"atol": 1e-3}, {"equal_nan": True}):
            _both((shape, kw), lambda xp: xp.isclose(_arr(xp, a), _arr(xp, b), **kw))
            _both((shape, kw, "row"), lambda xp: xp.isclose(_arr(xp, a), _arr(xp, b[..., :1]), **kw))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_allclose_is_a_python_bool(dtype):
    for shape in SHAPES[1:3]:
        a = _sample(dtype, shape, "allclose")
        a = np.where(np.isfinite(a), a, 1).astype(dtype) if a.dtype.kind == "f" else a
        for b in (a, a + 1, a * (1 + 1e-9)):
            for kw in ({}, {"rtol": 0.5}, {"equal_nan": True}):
                got = _both((shape, kw), lambda xp: xp.allclose(_arr(xp, a), _arr(xp, b), **kw))
                assert type(got) is bool


def test_isclose_and_allclose_examples():
    both(lambda xp: xp.isclose(1e10, 1.00001e10))
    both(lambda xp: xp.isclose([1.0, xp.nan], [1.0, xp.nan], equal_nan=True))
    both(lambda xp: xp.isclose([xp.inf, -xp.inf], [xp.inf, xp.inf]))
    both(lambda xp: xp.allclose([1e-8, 1e-7], [0.0, 0.0]))
    both(lambda xp: xp.allclose(xp.ones(3), xp.ones(4)))      # ValueError: broadcast
    both(lambda xp: xp.isclose(xp.ones(3), 1, rtol=-1))  # a bad tolerance, as NumPy handles it


# ------------------------------------------------------------------------------- equality
@pytest.mark.parametrize("name", ["array_equal", "array_equiv"])
def test_array_equal_and_equiv(name):
    """array_equal needs equal shapes; array_equiv only broadcastable ones; both give bool."""
    a = np.arange(6).reshape(2, 3)
    cases = [(a, a.copy()), (a, a.astype(float)), (a, a + (a == 5)), (a, a[0]),
             (a[:1], a[0]), (a, np.ones((3, 2))), ([1, 2], (1, 2)), (np.array([np.nan]), [np.nan]),
             (np.zeros(0), np.zeros((0, 1))), (np.float64(1.0), np.ones((2, 2)))]
    for k, (x, y) in enumerate(cases):
        got = _both(k, lambda xp: getattr(xp, name)(
            _arr(xp, x) if isinstance(x, np.ndarray) else x,
            _arr(xp, y) if isinstance(y, np.ndarray) else y))
        assert type(got) is bool


def test_array_equal_equal_nan():
    x = np.array([1.0, np.nan])
    both(lambda xp: xp.array_equal(_arr(xp, x), _arr(xp, x)))
    both(lambda xp: xp.array_equal(_arr(xp, x), _arr(xp, x), equal_nan=True))
    both(lambda xp: xp.array_equal(_arr(xp, x), x.copy(), equal_nan=True))


# ------------------------------------------------------------------------------- type tests
TYPE_TEST_VALUES = [
    ("float array", lambda xp: xp.asarray([1.0, 2.0])),
    ("complex array", lambda xp: xp.asarray([1 + 0j, 2 + 1e-30j, 3j])),
    ("complex 0-d", lambda xp: xp.asarray(1 + 2j)),
    ("int matrix", lambda xp: xp.arange(6).reshape(2, 3)),
    ("float scalar", lambda xp: xp.arange(3.0)[1]),
    ("complex scalar", lambda xp: xp.asarray([1j])[0]),
    ("NumPy scalar", lambda xp: xp.float32(1.5)),
    ("Python float", lambda xp: 3.5),
    ("Python complex", lambda xp: 2 + 0j),
    ("list", lambda xp: [1, 2j]),
    ("string", lambda xp: "abc"),
    ("None", lambda xp: None),
    ("Fortran", lambda xp: xp.asarray(np.ones((2, 3)), order="F")),
]


@pytest.mark.parametrize("name", ["iscomplex", "isreal", "iscomplexobj", "isrealobj", "isscalar",
                                  "isfortran"])
def test_type_tests(name):
    """Elementwise ``iscomplex``/``isreal`` give arrays (scalars for 0-d); the ``*obj`` tests,
    ``isscalar`` and ``isfortran`` give Python bools, or NumPy's exception for a bad input."""
    for label, make in TYPE_TEST_VALUES:
        got = _both(label, lambda xp: getattr(xp, name)(make(xp)))
        if name in ("iscomplexobj", "isrealobj", "isscalar", "isfortran"):
            assert isinstance(got, (bool, Exception)), label


def test_isscalar_treats_tnp_scalars_as_numpy_scalars():
    assert tnp.isscalar(tnp.arange(3)[0]) is True
    assert tnp.isscalar(tnp.asarray(1.0)) is False
    assert tnp.isscalar(tnp.sum(tnp.ones(3))) is True
