"""Arithmetic between scalars is NumPy's scalar math (its results, warnings and errors), NumPy's
error messages are kept unchanged, and Python's ``statistics`` module runs on tnp arrays."""
import operator
import statistics
import warnings

import numpy
import pytest

import tnp

DTYPES = ["bool", "int8", "uint8", "int64", "uint64", "float16", "float32", "float64", "complex128"]
VALUES = {"bool": [True, False], "int8": [127, -128, 0], "uint8": [255, 0], "int64": [2**62, 0],
          "uint64": [2**63, 0], "float16": [60000.0, 0.0], "float32": [3e38, 0.0],
          "float64": [1e308, 0.0, float("nan")], "complex128": [1 + 2j, 0j]}
BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lshift, operator.rshift, divmod]
UNARY = [operator.neg, operator.pos, abs, operator.invert]
PYTHON = [0, -3, 2.5, 0.0, 1j, True, 2**70]


def outcome(f):
    """repr of the result or the exception, and the warnings' messages. A Python complex, which
    NumPy gives for ``1j * np.float64(2)`` (complex's own multiplication: float64 is a float), is
    the complex128 of that value that tnp gives (a tnp value: docs/differences.md, Scalars)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = f()
            res = repr(numpy.complex128(res) if type(res) is complex else res)
        except Exception as e:
            res = f"{type(e).__name__}: {e}"
    return res, sorted(str(x.message) for x in w)


def scalar(xp, dtype, v):
    return xp.asarray([v], dtype=dtype)[0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_scalar_math(dtype):
    for v in VALUES[dtype]:
        for op in UNARY:
            assert outcome(lambda: op(scalar(numpy, dtype, v))) == \
                outcome(lambda: op(scalar(tnp, dtype, v))), (op, v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_scalar_math(dtype):
    for v in VALUES[dtype]:
        for op in BINARY:
            for d2 in DTYPES:
                w = VALUES[d2][-1]
                expected = outcome(lambda: op(scalar(numpy, dtype, v), scalar(numpy, d2, w)))
                # tnp with tnp, and a NumPy scalar on the left of a tnp scalar
                assert outcome(lambda: op(scalar(tnp, dtype, v), scalar(tnp, d2, w))) == expected
                assert outcome(lambda: op(scalar(numpy, dtype, v), scalar(tnp, d2, w))) == expected
            for p in PYTHON:
                assert outcome(lambda: op(scalar(tnp, dtype, v), p)) == \
                    outcome(lambda: op(scalar(numpy, dtype, v), p)), (op, v, p)
                assert outcome(lambda: op(p, scalar(tnp, dtype, v))) == \
                    outcome(lambda: op(p, scalar(numpy, dtype, v))), (op, p, v)


def test_errstate_raise_on_scalars_names_scalar_operation():
    for xp in (numpy, tnp):
        with xp.errstate(divide="raise", over="raise"):
            with pytest.raises(FloatingPointError) as e1:
                xp.arange(3.0).sum() / 0
            with pytest.raises(FloatingPointError) as e2:
                xp.array([2**62]).sum() * 4
        assert str(e1.value) == "divide by zero encountered in scalar divide"
        assert str(e2.value) == "overflow encountered in scalar multiply"


def test_divmod_of_arrays_is_the_divmod_ufunc():
    for a, b in [(numpy.arange(3.0), 0), (5, numpy.arange(1, 3)), (numpy.arange(4), numpy.array([3]))]:
        ta = tnp.asarray(a) if isinstance(a, numpy.ndarray) else a
        tb = tnp.asarray(b) if isinstance(b, numpy.ndarray) else b
        assert outcome(lambda: divmod(a, b)) == outcome(lambda: divmod(ta, tb))


@pytest.mark.parametrize("f", [
    lambda xp: xp.linalg.inv(xp.zeros((2, 2))),
    lambda xp: xp.arange(3) + xp.arange(4),
    lambda xp: xp.reshape(xp.arange(6), (4,)),
    lambda xp: xp.concatenate([xp.zeros((2, 2)), xp.zeros(3)]),
    lambda xp: xp.random.default_rng(0).choice(3, 5, replace=False),
])
def test_error_messages_are_numpys(f):
    with pytest.raises(Exception) as en:
        f(numpy)
    with pytest.raises(type(en.value)) as et:
        f(tnp)
    assert str(et.value) == str(en.value)
    # the operation is named in a note (shown in tracebacks), not in the message
    assert any(n.startswith("(in tnp.") for n in getattr(et.value, "__notes__", ["(in tnp."]))


def test_statistics_module_on_float64_arrays():
    data = [1.0, 2.0, 4.0, 7.5]
    for name in ["mean", "median", "variance", "stdev", "pvariance", "harmonic_mean", "fmean"]:
        f = getattr(statistics, name)
        assert repr(f(tnp.asarray(data))) == repr(f(numpy.asarray(data))), name
    # integer data: tnp.Scalar(Fraction) is a float64 (docs/differences.md)
    assert repr(statistics.mean(tnp.asarray([1, 2, 4]))) == "np.float64(2.3333333333333335)"
    assert tnp.asarray([6])[0].numerator == 6 and tnp.asarray([6])[0].denominator == 1
