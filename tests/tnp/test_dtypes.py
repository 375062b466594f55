"""tnp's dtypes against NumPy's: the scalar types are NumPy's own objects, type promotion is
NumPy 2's (checked over a grid of dtype pairs, through ``result_type`` and through actual
operations), ``bfloat16`` arrays work end to end, ``finfo``/``iinfo`` accept dtypes, arrays and
``bfloat16``, floating-point error handling follows ``errstate``/``seterr``, and TensorFloat-32
is off unless enabled.
"""
import itertools
import operator
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import tnp
from tnp._core import dtypes as tdtypes
from tnp.testing import assert_same, both
from tnp.testing.differential import both_labelled as _both


def _arr(xp, x):
    return xp.array(x, copy=True)


# ------------------------------------------------------------------------------- identity
@pytest.mark.parametrize("name", [n for n in tdtypes.SCALAR_TYPES if hasattr(np, n)])
def test_scalar_types_are_numpys_own(name):
    """``tnp.float32 is numpy.float32``: dtype=, isinstance, issubdtype all behave as NumPy."""
    assert getattr(tnp, name) is getattr(np, name)


def test_aliases_and_bfloat16():
    assert tnp.int_ is np.int_ and tnp.uint is np.uint
    assert tnp.float_ is np.float64 and tnp.complex_ is np.complex128
    assert tnp.bfloat16 is ml_dtypes.bfloat16
    assert np.dtype(tnp.bfloat16).name == "bfloat16"
    assert tnp.ones(2, dtype=tnp.float32).dtype == tnp.float32
    assert isinstance(tnp.arange(3.0)[0].item(), float)
    assert tnp.issubdtype(tnp.float32, tnp.floating) and not tnp.issubdtype(tnp.int8, tnp.floating)


@pytest.mark.parametrize("name", tdtypes.DTYPE_FUNCTIONS)
def test_dtype_functions_mirror_numpy(name):
    cases = {
        "can_cast": [(np.int8, np.int16), (np.float64, np.float32), ("i8", "f4", "same_kind")],
        "promote_types": [(np.int8, np.uint8), ("f2", "i4"), (np.int64, np.uint64)],
        "min_scalar_type": [(10,), (-1,), (3.5,), (1e50,)],
        "result_type": [(np.int8, np.float16), (np.uint8, 1000), (np.float32, 1.0)],
        "common_type": [(np.ones(2, np.float32), np.ones(2, np.int8))],
        "issubdtype": [(np.float32, np.floating), (np.int8, np.unsignedinteger)],
        "isdtype": [(np.dtype("f4"), "real floating"), (np.dtype("i1"), ("integral", "bool"))],
        "typename": [("d",), ("F",)],
        "mintypecode": [(["d", "f"],), ("idF",)],
    }[name]
    for args in cases:
        _both(args, lambda xp: getattr(xp, name)(*[_arr(xp, a) if isinstance(a, np.ndarray) else a
                                                   for a in args]))


# ------------------------------------------------------------------------------- promotion grid
GRID = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
        "float16", "float32", "float64", "complex64", "complex128", "bfloat16"]
GRID_OPS = {"+": operator.add, "*": operator.mul, "-": operator.sub, "/": operator.truediv,
            "maximum": lambda a, b: (np if isinstance(a, np.ndarray) else tnp).maximum(a, b),
            "==": operator.eq}


def _ones(xp, dtype):
    return xp.ones(3, dtype=dtype)


@pytest.mark.parametrize("a", GRID)
def test_result_type_grid(a):
    """``tnp.result_type`` of every pair (and of arrays of those dtypes) equals NumPy's, or
    both raise DTypePromotionError (bfloat16 with float16 or int64, for example)."""
    for b in GRID:
        _both((a, b), lambda xp: xp.result_type(a, b))
        _both((a, b, "arrays"), lambda xp: xp.result_type(_ones(xp, a), _ones(xp, b)))


@pytest.mark.parametrize("a", GRID)
def test_binary_operation_dtypes_grid(a):
    """The dtype (and value) of ``x op y`` for every pair equals NumPy's (bfloat16 with
    float16 computes in float32, as ml_dtypes' loops do); where NumPy raises (``bool - bool``,
    bfloat16 with int64) tnp raises the same exception type."""
    for b, (opname, op) in itertools.product(GRID, GRID_OPS.items()):
        _both((a, b, opname), lambda xp: op(_ones(xp, a), xp.full(3, 2, dtype=b)))


@pytest.mark.parametrize("dtype", GRID)
@pytest.mark.parametrize("py", [2, 2.5, 2j, True, -1, 300], ids=repr)
def test_python_scalar_promotion_grid(dtype, py):
    """NEP 50: Python scalars are weak; values that do not fit the array's integer dtype raise
    OverflowError; both as NumPy."""
    _both("array", lambda xp: _ones(xp, dtype) * py)
    _both("reflected", lambda xp: py + _ones(xp, dtype))
    _both("scalar", lambda xp: _ones(xp, dtype)[0] * py)


# ------------------------------------------------------------------------------- bfloat16
def test_bfloat16_creation():
    both(lambda xp: xp.asarray([1.5, 2.25, -3.0], dtype=xp.bfloat16 if xp is tnp else ml_dtypes.bfloat16))
    for make in (lambda xp, bf: xp.zeros((2, 3), dtype=bf), lambda xp, bf: xp.ones(4, dtype=bf),
                 lambda xp, bf: xp.arange(5, dtype=bf), lambda xp, bf: xp.full(3, 0.1, dtype=bf),
                 lambda xp, bf: xp.linspace(0, 1, 5, dtype=bf), lambda xp, bf: xp.eye(2, dtype=bf),
                 lambda xp, bf: xp.array([[1, 2], [3, 4]], dtype="bfloat16"),
                 lambda xp, bf: xp.empty(0, dtype=bf)):
        both(lambda xp: make(xp, tnp.bfloat16))
    x = tnp.asarray([1.0, 1.0 + 2 ** -8], dtype=tnp.bfloat16)
    assert x.dtype == np.dtype(ml_dtypes.bfloat16)
    assert float(x[1]) == 1.0  # 8 bits of precision: 1 + 2**-8 rounds to 1
    assert repr(x[0]) == repr(np.asarray(x)[0])


@pytest.mark.parametrize("op", ["+", "*", "-", "/"])
def test_bfloat16_arithmetic(op):
    f = {"+": operator.add, "*": operator.mul, "-": operator.sub, "/": operator.truediv}[op]
    a = np.asarray([1.5, -2.0, 0.3, 100.0], dtype=ml_dtypes.bfloat16)
    b = np.asarray([0.5, 4.0, -0.7, 3.0], dtype=ml_dtypes.bfloat16)
    both(lambda xp: f(_arr(xp, a), _arr(xp, b)))
    both(lambda xp: f(_arr(xp, a), 2))
    both(lambda xp: f(_arr(xp, a), 2.0))    # NumPy gives float32 here (ml_dtypes' promotion)
    both(lambda xp: f(_arr(xp, a), _arr(xp, b.astype(np.float32))))

    def inplace(xp):
        x = _arr(xp, a)
        y = x
        y = {"+": operator.iadd, "*": operator.imul, "-": operator.isub,
             "/": operator.itruediv}[op](y, _arr(xp, b))
        assert y is x
        return x
    both(inplace)


def test_bfloat16_ufuncs_reductions_and_astype():
    a = np.asarray([[1.5, -2.0, 0.3], [4.0, 0.25, 9.0]], dtype=ml_dtypes.bfloat16)
    for name in ("sqrt", "exp", "abs", "negative", "floor", "isnan", "sign"):
        x = np.abs(a) if name == "sqrt" else a  # (NaN in bfloat16 defeats assert_array_equal)
        _both(name, lambda xp: getattr(xp, name)(_arr(xp, x)))
    for name in ("sum", "max", "mean", "cumsum"):
        _both(name, lambda xp: getattr(xp, name)(_arr(xp, a)))
        _both((name, 0), lambda xp: getattr(xp, name)(_arr(xp, a), axis=0))
    for dt in ("float32", "float64", "int32", "float16", "bool", ml_dtypes.bfloat16):
        _both(dt, lambda xp: _arr(xp, a).astype(dt))
    both(lambda xp: xp.asarray([1.0, 2.5, 1e30]).astype(tnp.bfloat16))
    both(lambda xp: xp.arange(4, dtype="int32").astype("bfloat16"))
    both(lambda xp: _arr(xp, a) > 1)
    both(lambda xp: _arr(xp, a).T @ _arr(xp, a))


def test_bfloat16_scalar_values_and_printing():
    """Indexing and reductions give tnp Scalars (bfloat16's dtype kind is "V", as records'
    are, but its values are numbers), printing as NumPy's."""
    a = np.asarray([1.5, 3.0], dtype=ml_dtypes.bfloat16)
    t = tnp.asarray(a)
    assert type(t[0]) is tnp.Scalar
    assert type(t.sum()) is tnp.Scalar and type(tnp.max(t)) is tnp.Scalar
    assert type(t[0] * 2) is tnp.Scalar and t[0] * 2 == 3.0
    assert (t[0] * 2).dtype == np.dtype(ml_dtypes.bfloat16)
    assert repr(t) == repr(a)
    assert str(t) == str(a)
    assert repr(t[0]) == repr(a[0])
    assert repr(t.sum()) == repr(a.sum())
    assert float(t[1]) == 3.0


# ------------------------------------------------------------------------------- finfo / iinfo
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128",
                                   "longdouble"])
def test_finfo_takes_dtypes_names_arrays_and_scalars(dtype):
    expected = np.finfo(dtype)
    for arg in (dtype, np.dtype(dtype), getattr(np, np.dtype(dtype).name, np.dtype(dtype).type),
                tnp.ones(2, dtype=dtype), tnp.ones((2, 2), dtype=dtype)[0, 0], np.ones(2, dtype)):
        got = tnp.finfo(arg)
        assert got == expected or got.dtype == expected.dtype
        assert (got.eps, got.max, got.tiny, got.bits) == (expected.eps, expected.max,
                                                          expected.tiny, expected.bits)


def test_finfo_of_bfloat16():
    expected = ml_dtypes.finfo(ml_dtypes.bfloat16)
    for arg in (tnp.bfloat16, "bfloat16", np.dtype(ml_dtypes.bfloat16),
                tnp.ones(3, dtype=tnp.bfloat16), tnp.ones(3, dtype=tnp.bfloat16)[0]):
        got = tnp.finfo(arg)
        assert (got.eps, got.max, got.tiny, got.bits, got.nmant) == \
            (expected.eps, expected.max, expected.tiny, 16, 7), arg
    assert float(tnp.finfo(tnp.bfloat16).eps) == 2.0 ** -7


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint32", "int64", "uint64"])
def test_iinfo_takes_dtypes_arrays_and_scalars(dtype):
    expected = np.iinfo(dtype)
    for arg in (dtype, np.dtype(dtype), tnp.ones(2, dtype=dtype), tnp.ones(2, dtype=dtype)[0]):
        got = tnp.iinfo(arg)
        assert (got.min, got.max, got.bits, got.dtype) == (expected.min, expected.max,
                                                           expected.bits, expected.dtype)


def test_finfo_iinfo_refuse_the_wrong_kind_like_numpy():
    for xp in (np, tnp):
        with pytest.raises(ValueError):
            xp.finfo(xp.int32)
        with pytest.raises(ValueError):
            xp.iinfo(xp.float32)
        with pytest.raises(ValueError):
            xp.iinfo(xp.ones(2))
    with pytest.raises(ValueError):
        tnp.iinfo(tnp.bfloat16)


# ------------------------------------------------------------------------------- error handling
DIVIDE_BY_ZERO = [
    lambda xp: xp.ones(3) / 0,
    lambda xp: xp.divide(xp.ones(3), xp.zeros(3)),
    lambda xp: xp.log(xp.zeros(2)),
    lambda xp: xp.ones(2, dtype="float32") / xp.zeros(2, dtype="float32"),
    lambda xp: xp.arange(3.0)[1] / 0.0,
]


@pytest.mark.parametrize("case", DIVIDE_BY_ZERO, ids=["array/0", "divide", "log(0)", "float32",
                                                      "scalar"])
def test_divide_by_zero_warns_or_raises_under_errstate(case):
    """Default: RuntimeWarning and inf, as NumPy; ``errstate(divide="raise")``:
    FloatingPointError; ``"ignore"``: silent."""
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        expected = case(np)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = case(tnp)
    assert_same(expected, got)
    with tnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            case(tnp)
    with tnp.errstate(divide="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_same(expected, case(tnp))


def test_errstate_is_numpys_and_covers_invalid_and_overflow():
    assert tnp.errstate is np.errstate
    with tnp.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            tnp.sqrt(tnp.asarray([-1.0]))
        with pytest.raises(FloatingPointError):
            tnp.zeros(2) / tnp.zeros(2)
    with tnp.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            tnp.asarray([1e308]) * 10
        with pytest.raises(FloatingPointError):
            tnp.exp(tnp.asarray([1000.0], dtype="float32"))
    with tnp.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            tnp.ones(3).sum() / 0


def test_seterr_and_geterr():
    old = tnp.seterr(divide="raise")
    try:
        assert tnp.geterr()["divide"] == "raise" == np.geterr()["divide"]
        with pytest.raises(FloatingPointError):
            tnp.ones(2) / 0
    finally:
        restored = tnp.seterr(**old)
    assert restored["divide"] == "raise"
    assert tnp.geterr() == old
    with pytest.warns(RuntimeWarning):
        tnp.ones(2) / 0


def test_integer_division_by_zero_follows_errstate():
    with pytest.warns(RuntimeWarning):
        assert_same(np.zeros(2, dtype=int), tnp.ones(2, dtype=int) // 0)
    with tnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            tnp.ones(2, dtype=int) % 0


# ------------------------------------------------------------------------------- TensorFloat-32
def test_tensor_float_32_is_off_by_default_in_a_fresh_process():
    code = "import tnp; print(tnp.config.tensor_float_32_execution_enabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_enable_tensor_float_32_execution_toggles_the_setting():
    before = tnp.config.tensor_float_32_execution_enabled()
    try:
        tnp.config.enable_tensor_float_32_execution(True)
        assert tnp.config.tensor_float_32_execution_enabled() is True
        tnp.config.enable_tensor_float_32_execution(False)
        assert tnp.config.tensor_float_32_execution_enabled() is False
        tnp.config.enable_tensor_float_32_execution(1)
        assert tnp.config.tensor_float_32_execution_enabled() is True
    finally:
        tnp.config.enable_tensor_float_32_execution(before)
    assert tnp.config.tensor_float_32_execution_enabled() is before


def test_tensor_float_32_does_not_change_cpu_float32_results():
    """On the CPU the switch changes nothing: float32 matmul keeps NumPy's full precision."""
    a = np.full((3, 3), 1 + 2.0 ** -20, dtype=np.float32)
    try:
        tnp.config.enable_tensor_float_32_execution(True)
        assert_same(a @ a, tnp.asarray(a) @ tnp.asarray(a))
    finally:
        tnp.config.enable_tensor_float_32_execution(False)
