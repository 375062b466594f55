"""Differential tests of tnp's mathematical functions against NumPy.

Every ufunc in the math section's table (``tnp._math.UFUNCS``) is swept over the dtypes it
supports and several shapes, with inputs drawn from its domain; the Python operators, the ufunc
keywords (``out=``, ``where=``, ``dtype=``, ``casting=``) and methods (``reduce``, ``accumulate``,
``outer``, ``at``, ``reduceat``) and the non-ufunc functions of the section
(``tnp._math.FUNCTIONS``) follow. Each case runs the same body with ``xp=numpy`` and ``xp=tnp``
and compares values, dtype, shape and array-vs-scalar kind exactly (tnp computes on the CPU with
NumPy itself, so there is no rounding to forgive), or that both raise the same exception type.
"""
import operator
import zlib

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tnp
from tnp import _math
from tnp.testing import assert_same, both
from tnp.testing.differential import both_labelled as _both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# ------------------------------------------------------------------------------- input making
def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _values(rng, dtype, shape, lo, hi):
    """Values of ``dtype`` in ``[lo, hi)``: uniform reals, integers, booleans or complex."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(lo, hi, size=shape, endpoint=False).astype(dt)
    x = rng.uniform(lo, hi, size=shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(lo, hi, size=shape)
    return np.asarray(x).astype(dt)


def _nonzero(rng, dtype, shape, lo, hi):
    """As :func:`_values`, with no zeros (divisors)."""
    x = _values(rng, dtype, shape, lo, hi)
    return np.where(x == 0, np.asarray(1, dtype=x.dtype), x).astype(x.dtype)


def _arr(xp, x):
    """A fresh ``xp`` array holding ``x`` (a copy, so in-place bodies cannot leak between runs)."""
    return xp.array(x, copy=True)


# ------------------------------------------------------------------------------- ufunc domains
F = ("float16", "float32", "float64")
FC = F + ("complex128",)
I = ("int8", "int32", "int64", "uint8")
NUM = ("int32", "int64", "float32", "float64")
REAL = (-4, 4)
SMALL = (-3, 3)
UNIT = (-0.95, 0.95)
POS = (0.1, 8)
GE1 = (1, 8)
GT_M1 = (-0.9, 4)
SHIFT = (0, 8)
NZ = "nonzero"


def _dom(dtypes, *inputs):
    """A domain: the dtypes to try and, per input, ``(lo, hi)`` or ``(NZ, lo, hi)`` (no zeros),
    or ``(dtype, lo, hi)`` for an input of fixed dtype (ldexp's exponent)."""
    return dtypes, inputs


DOMAINS = {
    # trigonometric / hyperbolic
    "sin": _dom(FC, REAL), "cos": _dom(FC, REAL), "tan": _dom(FC, (-1.4, 1.4)),
    "arcsin": _dom(F, UNIT), "arccos": _dom(F, UNIT), "arctan": _dom(FC, REAL),
    "arctan2": _dom(F, REAL, REAL), "hypot": _dom(F, REAL, REAL),
    "degrees": _dom(F + ("int32",), REAL), "radians": _dom(F + ("int32",), REAL),
    "deg2rad": _dom(F, REAL), "rad2deg": _dom(F, REAL),
    "sinh": _dom(FC, SMALL), "cosh": _dom(FC, SMALL), "tanh": _dom(FC, SMALL),
    "arcsinh": _dom(FC, REAL), "arccosh": _dom(F, GE1), "arctanh": _dom(F, UNIT),
    "asin": _dom(F, UNIT), "acos": _dom(F, UNIT), "atan": _dom(F, REAL),
    "atan2": _dom(F, REAL, REAL), "asinh": _dom(F, REAL), "acosh": _dom(F, GE1),
    "atanh": _dom(F, UNIT),
    # rounding (NumPy 2 keeps integer dtypes for floor/ceil/trunc)
    "rint": _dom(F, REAL), "floor": _dom(F + ("int16",), REAL),
    "ceil": _dom(F + ("int16",), REAL), "trunc": _dom(F + ("int16",), REAL),
    # exponents and logarithms
    "exp": _dom(FC, SMALL), "expm1": _dom(F, SMALL), "exp2": _dom(F, SMALL),
    "log": _dom(FC, POS), "log10": _dom(FC, POS), "log2": _dom(FC, POS),
    "log1p": _dom(F, GT_M1), "logaddexp": _dom(F, REAL, REAL),
    "logaddexp2": _dom(F, REAL, REAL),
    # floating point routines
    "signbit": _dom(F, REAL), "copysign": _dom(F, REAL, REAL),
    "frexp": _dom(F, REAL), "ldexp": _dom(F, REAL, ("int32", -4, 5)),
    "nextafter": _dom(F, REAL, REAL), "spacing": _dom(F, REAL),
    # rational
    "lcm": _dom(I, (0, 30), (0, 30)), "gcd": _dom(I, (0, 30), (0, 30)),
    # arithmetic
    "add": _dom(NUM + ("bool", "complex128"), REAL, REAL),
    "subtract": _dom(NUM + ("complex128",), REAL, REAL),
    "multiply": _dom(NUM + ("bool", "complex128"), REAL, REAL),
    "divide": _dom(NUM + ("complex128",), REAL, (NZ, -4, 4)),
    "true_divide": _dom(NUM, REAL, (NZ, -4, 4)),
    "floor_divide": _dom(NUM, (-20, 20), (NZ, -5, 5)),
    "remainder": _dom(NUM, (-20, 20), (NZ, -5, 5)), "mod": _dom(NUM, (-20, 20), (NZ, -5, 5)),
    "fmod": _dom(NUM, (-20, 20), (NZ, -5, 5)), "divmod": _dom(NUM, (-20, 20), (NZ, -5, 5)),
    "modf": _dom(F, REAL),
    "power": _dom(NUM, (0, 4), (0, 4)), "pow": _dom(NUM, (0, 4), (0, 4)),
    "float_power": _dom(NUM, (0, 4), (0, 4)),
    "reciprocal": _dom(F + ("complex128",), (NZ, -4, 4)),
    "positive": _dom(NUM, REAL), "negative": _dom(NUM + ("complex128",), REAL),
    # complex
    "conj": _dom(("float64", "complex64", "complex128"), REAL),
    "conjugate": _dom(("float64", "complex64", "complex128"), REAL),
    # extrema
    "maximum": _dom(NUM + ("bool",), REAL, REAL), "minimum": _dom(NUM + ("bool",), REAL, REAL),
    "fmax": _dom(NUM, REAL, REAL), "fmin": _dom(NUM, REAL, REAL),
    # misc
    "sqrt": _dom(FC, POS), "cbrt": _dom(F, REAL), "square": _dom(NUM + ("complex128",), REAL),
    "absolute": _dom(NUM + ("int8", "complex128"), REAL),
    "abs": _dom(NUM + ("complex128",), REAL), "fabs": _dom(F, REAL),
    "sign": _dom(NUM + ("complex128",), REAL), "heaviside": _dom(F, (-2, 3), (0, 2)),
    # bit twiddling
    "bitwise_and": _dom(("bool", "int8", "uint16", "int64"), (-50, 50), (-50, 50)),
    "bitwise_or": _dom(("bool", "int8", "uint16", "int64"), (-50, 50), (-50, 50)),
    "bitwise_xor": _dom(("bool", "int8", "uint16", "int64"), (-50, 50), (-50, 50)),
    "invert": _dom(("bool", "int8", "uint32"), (-50, 50)),
    "bitwise_invert": _dom(("bool", "int8", "uint32"), (-50, 50)),
    "bitwise_not": _dom(("bool", "int8", "uint32"), (-50, 50)),
    "left_shift": _dom(("int16", "uint32", "int64"), (-50, 50), SHIFT),
    "right_shift": _dom(("int16", "uint32", "int64"), (-50, 50), SHIFT),
    "bitwise_left_shift": _dom(("int16", "uint32", "int64"), (-50, 50), SHIFT),
    "bitwise_right_shift": _dom(("int16", "uint32", "int64"), (-50, 50), SHIFT),
    "bitwise_count": _dom(("int8", "uint64", "int64"), (-1000, 1000)),
}

# generalized ufuncs: per name, operand shapes (two cases each, one batched)
GUFUNC_SHAPES = {
    "matmul": [((3, 4), (4, 2)), ((2, 3, 4), (4, 5))],
    "vecdot": [((5,), (5,)), ((3, 5), (5,))],
    "matvec": [((3, 4), (4,)), ((2, 3, 4), (4,))],
    "vecmat": [((4,), (4, 3)), ((2, 4), (4, 3))],
}

SHAPES = [(), (6,), (2, 3)]


def _table_ufuncs():
    return [n for n in _math.UFUNCS if hasattr(np, n)]


def _inputs(name, dtype, shape):
    dtypes, doms = DOMAINS[name]
    rng = _rng(name, dtype, shape)
    ins = []
    for k, d in enumerate(doms):
        # later operands of a 2-d case broadcast along the last axis
        s = shape if k == 0 or len(shape) < 2 else shape[-1:]
        if d[0] == NZ:
            ins.append(_nonzero(rng, dtype, s, d[1], d[2]))
        elif isinstance(d[0], str):
            ins.append(_values(rng, d[0], s, d[1], d[2]))
        else:
            lo, hi = d
            if np.dtype(dtype).kind == "u":
                lo = max(lo, 0)
                hi = max(hi, lo + 2)
            ins.append(_values(rng, dtype, s, lo, hi))
    return ins


def _sweep_cases():
    for name in _table_ufuncs():
        if name in GUFUNC_SHAPES:
            continue
        for dtype in DOMAINS[name][0]:
            yield pytest.param(name, dtype, id=f"{name}-{dtype}")


def test_every_table_ufunc_is_swept():
    """Adding a ufunc to the section table without a domain here fails this test."""
    missing = [n for n in _table_ufuncs() if n not in DOMAINS and n not in GUFUNC_SHAPES]
    assert missing == []


@pytest.mark.parametrize("name", _table_ufuncs())
def test_table_ufuncs_are_tnp_ufuncs_mirroring_numpy(name):
    u = getattr(tnp, name)
    nu = getattr(np, name)
    assert isinstance(u, tnp.ufunc)
    assert (u.nin, u.nout, u.nargs, u.signature) == (nu.nin, nu.nout, nu.nargs, nu.signature)
    assert u.identity == nu.identity or (u.identity is None and nu.identity is None)
    assert u.__name__ == nu.__name__
    # documented difference: a tnp ufunc is a function carrying the ufunc attributes (cheaper
    # to call), so its repr is a function's, not "<ufunc 'add'>"
    assert repr(u).startswith(f"<function {nu.__name__} ")


def test_numpy_aliases_are_one_tnp_ufunc():
    assert tnp.abs is tnp.absolute
    assert tnp.pow is tnp.power
    assert tnp.asin is tnp.arcsin
    assert tnp.conj is tnp.conjugate
    assert tnp.bitwise_not is tnp.invert
    assert tnp.mod is tnp.remainder
    assert tnp.true_divide is tnp.divide


@pytest.mark.parametrize("name,dtype", list(_sweep_cases()))
def test_ufunc_sweep(name, dtype):
    """Each ufunc over its domain, for 0-d, 1-d and broadcast 2-d inputs: arrays give arrays,
    0-d inputs give scalars, nout=2 gives a tuple; value, dtype and shape equal NumPy's."""
    for shape in SHAPES:
        ins = _inputs(name, dtype, shape)
        expected = _both(shape, lambda xp: getattr(xp, name)(*[_arr(xp, x) for x in ins]))
        got = getattr(tnp, name)(*[_arr(tnp, x) for x in ins])
        if isinstance(expected, tuple):
            assert type(got) is tuple and len(got) == getattr(np, name).nout == 2


@pytest.mark.parametrize("name,dtype", list(_sweep_cases())[::5])
def test_ufunc_sweep_with_numpy_and_python_operands(name, dtype):
    """A tnp array mixed with NumPy arrays (or Python scalars, for 0-d cases) as later
    operands gives the same result as all-NumPy."""
    for shape in SHAPES:
        ins = _inputs(name, dtype, shape)

        def body(xp):
            first = _arr(xp, ins[0])
            rest = [x.item() if x.ndim == 0 else x.copy() for x in ins[1:]]
            return getattr(xp, name)(first, *rest)
        _both(shape, body)


@pytest.mark.parametrize("name", list(GUFUNC_SHAPES))
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
@pytest.mark.parametrize("case", [0, 1])
def test_gufunc_sweep(name, dtype, case):
    sa, sb = GUFUNC_SHAPES[name][case]
    rng = _rng(name, dtype, case)
    a, b = _values(rng, dtype, sa, -5, 5), _values(rng, dtype, sb, -5, 5)
    both(lambda xp: getattr(xp, name)(_arr(xp, a), _arr(xp, b)))


@pytest.mark.parametrize("name,sa,sb", [("matmul", (3, 4), (3, 4)), ("vecdot", (3,), (4,)),
                                        ("matvec", (3, 4), (3,)), ("vecmat", (3,), (4, 3)),
                                        ("matmul", (3,), ())])
def test_gufunc_core_dimension_mismatch_raises_like_numpy(name, sa, sb):
    both(lambda xp: getattr(xp, name)(xp.ones(sa), xp.ones(sb)))


def test_matmul_of_vectors_is_a_scalar():
    both(lambda xp: xp.matmul(xp.arange(4.0), xp.arange(4.0)))
    both(lambda xp: xp.vecdot(xp.arange(3), xp.arange(3)))


finite_floats = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    elements=st.floats(-1e6, 1e6, width=32))


@given(x=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=5),
                    elements=st.floats(allow_nan=True, allow_infinity=True)),
       name=st.sampled_from(["sin", "exp", "log", "sqrt", "floor", "sign", "spacing", "rint",
                             "cbrt", "arctan", "tanh", "negative", "absolute", "modf", "frexp"]))
def test_unary_ufuncs_on_any_float_including_nan_inf_and_signed_zero(x, name):
    both(lambda xp: getattr(xp, name)(_arr(xp, x)))


@given(x=finite_floats, data=st.data(),
       name=st.sampled_from(["add", "subtract", "multiply", "divide", "maximum", "minimum",
                             "fmax", "fmin", "hypot", "arctan2", "copysign", "floor_divide",
                             "remainder", "divmod", "logaddexp", "nextafter"]))
def test_binary_ufuncs_on_any_broadcastable_floats(x, data, name):
    y = data.draw(hnp.arrays(st.sampled_from([np.float32, np.float64]),
                             hnp.broadcastable_shapes(x.shape, max_dims=3, max_side=4),
                             elements=st.floats(-1e6, 1e6, width=32)))
    both(lambda xp: getattr(xp, name)(_arr(xp, x), _arr(xp, y)))


@given(x=hnp.arrays(st.sampled_from([np.int8, np.int32, np.uint16, np.int64]),
                    hnp.array_shapes(max_dims=2, max_side=5)),
       name=st.sampled_from(["add", "subtract", "multiply", "floor_divide", "remainder",
                             "bitwise_and", "bitwise_xor", "gcd", "maximum", "invert",
                             "negative", "square", "bitwise_count"]))
def test_integer_ufuncs_wrap_around_like_numpy(x, name):
    """Integer overflow wraps and integer division by zero gives 0, as in NumPy."""
    u = getattr(np, name)
    args = (x,) if u.nin == 1 else (x, x[::-1])
    both(lambda xp: getattr(xp, name)(*[_arr(xp, a) for a in args]))


@pytest.mark.parametrize("name,args", [
    ("subtract", ([True, False], [True, True])),     # boolean subtract is not allowed
    ("negative", ([True, False],)),
    ("invert", ([1.5, 2.0],)),                        # no bitwise ops on floats
    ("left_shift", ([1.0], [2])),
    ("gcd", ([1.5], [2.0])),
    ("power", ([2, 3], [-1, 2])),                      # integers to negative integer powers
    ("add", ([1, 2, 3], [1, 2])),                      # shapes that do not broadcast
    ("sin", (["a", "b"],)),
    ("isnat", ([1.0],)),
])
def test_bad_ufunc_input_raises_numpys_exception_type(name, args):
    both(lambda xp: getattr(xp, name)(*[xp.asarray(a) for a in args]))


def test_ufunc_with_wrong_number_of_arguments_raises_type_error():
    both(lambda xp: xp.add(xp.ones(2)))
    both(lambda xp: xp.sin(xp.ones(2), xp.ones(2), xp.ones(2)))


# ------------------------------------------------------------------------------- operators
BINARY_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}
INPLACE_OPERATORS = {
    "+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
    "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow, "&": operator.iand,
    "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift, ">>": operator.irshift,
}
OPERATOR_DTYPES = ["bool", "int8", "int64", "uint16", "float32", "float64", "complex64"]


def _operand(dtype, shape, key):
    """Small positive values (valid shifts, powers and divisors for every operator)."""
    return _values(_rng(key, dtype, shape), dtype, shape, 1, 4)


@pytest.mark.parametrize("op", list(BINARY_OPERATORS))
@pytest.mark.parametrize("dta,dtb", [("int64", "int64"), ("int8", "uint16"), ("float32", "int64"),
                                     ("float64", "float32"), ("bool", "bool"),
                                     ("complex64", "float64"), ("uint16", "float32")])
def test_binary_operators_on_arrays(op, dta, dtb):
    """Same result (or exception type: shifts of floats, ...) as NumPy, broadcasting a row
    against a matrix."""
    f = BINARY_OPERATORS[op]
    a, b = _operand(dta, (3, 4), op), _operand(dtb, (4,), op + "b")
    both(lambda xp: f(_arr(xp, a), _arr(xp, b)))
    both(lambda xp: f(_arr(xp, b), _arr(xp, a)))


@pytest.mark.parametrize("op", list(BINARY_OPERATORS))
@pytest.mark.parametrize("py", [3, 2.0, True, 1 + 1j], ids=["int", "float", "bool", "complex"])
def test_operators_with_python_scalars_both_ways(op, py):
    """NumPy 2 (NEP 50) promotion: a Python scalar takes the array's dtype within its kind;
    the reflected form (``3 - x``) gives NumPy's result too."""
    f = BINARY_OPERATORS[op]
    for dtype in OPERATOR_DTYPES:
        a = _operand(dtype, (2, 3), op)
        _both(dtype, lambda xp: f(_arr(xp, a), py))
        _both(f"reflected {dtype}", lambda xp: f(py, _arr(xp, a)))


@pytest.mark.parametrize("op", list(BINARY_OPERATORS))
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_operators_on_scalars_give_scalars(op, dtype):
    """A tnp scalar (from indexing) with a scalar, a 0-d array or a Python number is a scalar."""
    f = BINARY_OPERATORS[op]
    a = _operand(dtype, (3,), op)
    both(lambda xp: f(_arr(xp, a)[0], _arr(xp, a)[1]))
    both(lambda xp: f(_arr(xp, a)[0], 2))
    both(lambda xp: f(2, _arr(xp, a)[0]))
    both(lambda xp: f(_arr(xp, a)[0], _arr(xp, a[1].reshape(()))))


@pytest.mark.parametrize("op", list(BINARY_OPERATORS))
def test_operators_mixing_tnp_and_numpy_arrays_give_tnp_arrays(op):
    f = BINARY_OPERATORS[op]
    a, b = _operand("int64", (2, 3), op), _operand("int64", (3,), op + "b")
    expected = f(a, b)
    assert_same(expected, f(tnp.asarray(a), b))
    assert_same(f(b, a), f(b, tnp.asarray(a)))


@pytest.mark.parametrize("op", ["+", "*", "-", "**", "//"])
def test_operators_with_lists(op):
    f = BINARY_OPERATORS[op]
    both(lambda xp: f(xp.arange(1, 4), [1, 2, 3]))
    both(lambda xp: f([1, 2, 3], xp.arange(1, 4)))


@pytest.mark.parametrize("case,expected_dtype", [
    (lambda xp: xp.ones(3, dtype=xp.float32) + 1.0, "float32"),
    (lambda xp: 1.0 + xp.ones(3, dtype=xp.float32), "float32"),
    (lambda xp: xp.ones(3, dtype=xp.float16) * 2.5, "float16"),
    (lambda xp: xp.ones(3, dtype=xp.int8) + 100, "int8"),
    (lambda xp: xp.ones(3, dtype=xp.uint8) * 2, "uint8"),
    (lambda xp: xp.ones(3, dtype=xp.int32) * 2.5, "float64"),
    (lambda xp: xp.ones(3, dtype=xp.float32) + 1j, "complex64"),
    (lambda xp: xp.ones(3, dtype=bool) + 1, "int64"),
    (lambda xp: xp.ones(3, dtype=xp.int16) / 2, "float64"),
    (lambda xp: xp.ones(3, dtype=xp.float32)[0] + 1.0, "float32"),
    (lambda xp: xp.ones(3, dtype=xp.int8)[0] * 3, "int8"),
    (lambda xp: xp.ones(3, dtype=xp.float32) + xp.float64(1.0), "float64"),
    (lambda xp: xp.ones(3, dtype=xp.float32) + xp.ones((), dtype=xp.float64), "float64"),
])
def test_python_scalars_are_weak_in_promotion(case, expected_dtype):
    assert both(case).dtype == np.dtype(expected_dtype)


@pytest.mark.parametrize("case", [
    lambda xp: xp.ones(3, dtype=xp.int8) + 1000,
    lambda xp: 1000 + xp.ones(3, dtype=xp.int8),
    lambda xp: xp.ones(3, dtype=xp.uint8) - (-1),
    lambda xp: xp.ones(3, dtype=xp.uint8) * 256,
    lambda xp: xp.ones(3, dtype=xp.int8)[0] + 1000,
    lambda xp: xp.add(xp.ones(3, dtype=xp.int16), 70000),
], ids=["int8+1000", "1000+int8", "uint8-(-1)", "uint8*256", "int8 scalar+1000", "add(int16,70000)"])
def test_python_int_out_of_range_for_the_array_dtype_raises_overflow_error(case):
    with pytest.raises(OverflowError):
        case(np)
    with pytest.raises(OverflowError):
        case(tnp)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float32", "complex128"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_unary_operators(dtype, shape):
    """``-x``, ``+x``, ``abs(x)`` and ``~x`` as NumPy: including TypeError for ``-bool`` and
    ``~float``."""
    a = _values(_rng("unary", dtype, shape), dtype, shape, -9, 9)
    for f in (operator.neg, operator.pos, abs, operator.invert):
        both(lambda xp: f(_arr(xp, a)))
        if shape:  # the same on a scalar taken from the array
            both(lambda xp: f(_arr(xp, a)[(0,) * len(shape)]))


def test_builtin_divmod_and_pow():
    a = _values(_rng("divmod"), "int64", (2, 5), -20, 20)
    both(lambda xp: divmod(_arr(xp, a), 3))
    both(lambda xp: divmod(7, _nonzero_arr(xp, a)))
    both(lambda xp: divmod(_arr(xp, a)[0, 0], 3))
    both(lambda xp: pow(_arr(xp, np.abs(a)), 2))
    both(lambda xp: pow(_arr(xp, a), 2, 5))  # three-argument pow: TypeError in NumPy


def _nonzero_arr(xp, a):
    return _arr(xp, np.where(a == 0, 1, a))


INPLACE_CASES = [
    ("int64", 2), ("int64", 1.5), ("int8", 1000), ("uint8", -1), ("float32", 2.0),
    ("float32", ("float64", (4,))), ("int32", ("float64", (4,))), ("int64", ("int32", (3, 4))),
    ("bool", True), ("float64", 1j), ("float64", ("int16", (4,))), ("int16", ("int64", (5,))),
]


@pytest.mark.parametrize("op", list(INPLACE_OPERATORS))
def test_inplace_operators_modify_the_array_itself(op):
    """``x op= y`` writes into ``x`` (the same object; views see it); unsafe casts (an int
    array ``+= 1.5``), out-of-range Python ints and non-broadcastable shapes raise NumPy's
    exception type."""
    f = INPLACE_OPERATORS[op]
    for dtx, other in INPLACE_CASES:
        a = _operand(dtx, (3, 4), op)
        o = other if not isinstance(other, tuple) else _operand(other[0], other[1], op + "o")

        def body(xp):
            x = _arr(xp, a)
            view = x[1:]
            y = x
            rhs = o if not isinstance(o, np.ndarray) else _arr(xp, o)
            y = f(y, rhs)
            assert y is x
            return x, view
        _both((dtx, other), body)


def test_inplace_operator_bumps_the_version_and_writes_through_views():
    x = tnp.arange(6.0).reshape(2, 3)
    v0 = x._version
    row = x[1]
    row += 10
    assert x._version > v0
    assert_same(np.array([[0.0, 1, 2], [13, 14, 15]]), x)
    x *= x
    assert x._version > v0 + 1
    assert_same(np.array([[0.0, 1, 4], [169, 196, 225]]), x)


def test_failed_inplace_operator_leaves_the_array_unchanged():
    x = tnp.arange(4)
    with pytest.raises(TypeError):  # numpy's _UFuncOutputCastingError is a TypeError
        x += 1.5
    with pytest.raises(np._core._exceptions._UFuncOutputCastingError):
        x /= 2
    assert_same(np.arange(4), x)


def test_inplace_matmul():
    a = _values(_rng("imatmul"), "float64", (3, 3), -2, 2)

    def body(xp):
        x = _arr(xp, a)
        y = x
        y @= _arr(xp, a.T)
        assert y is x
        return x
    both(body)
    both(lambda xp: operator.imatmul(xp.ones((2, 3)), xp.ones((3, 4))))  # shape would change


def test_inplace_operator_on_a_scalar_rebinds_a_new_scalar():
    """Scalars are immutable: ``s += 1`` makes a new one, as with NumPy scalars."""
    def body(xp):
        a = xp.arange(3.0)
        s = a.sum()
        t = s
        t += 1
        assert t is not s
        return s, t, a
    both(body)


# ------------------------------------------------------------------------------- ufunc keywords
def test_out_returns_the_out_array_itself_and_bumps_its_version():
    a, b = tnp.arange(6.0).reshape(2, 3), tnp.arange(3.0)
    o = tnp.empty((2, 3))
    v0 = o._version
    r = tnp.add(a, b, out=o)
    assert r is o
    assert o._version > v0
    assert_same(np.add(np.arange(6.0).reshape(2, 3), np.arange(3.0)), o)
    r = tnp.sin(a, out=(o,))
    assert r is o


@pytest.mark.parametrize("name,dtype", [("add", "float64"), ("multiply", "int32"),
                                        ("sqrt", "float32"), ("negative", "int64"),
                                        ("divmod", "float64"), ("frexp", "float32"),
                                        ("modf", "float64")])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_out_keyword_matches_numpy(name, dtype, shape):
    u = getattr(np, name)
    ins = [_values(_rng(name, k, shape), dtype, shape, 1, 9) for k in range(u.nin)]

    results = u(*ins) if u.nout == 2 else (u(*ins),)

    def body(xp):
        outs = tuple(xp.zeros(shape, dtype=r.dtype) for r in results)
        if u.nout == 1:
            outs = outs[0]
        r = getattr(xp, name)(*[_arr(xp, x) for x in ins], out=outs)
        if u.nout == 2:
            assert type(r) is tuple and r[0] is outs[0] and r[1] is outs[1]
        else:
            assert r is outs
        return r
    both(body)


def test_outputs_given_positionally_are_the_result():
    """``exp(x, x)`` and ``add(a, b, o)`` write into the given array and return it (counted as
    a write), as ``out=`` does; ``None`` there means "allocate"."""
    def body(xp):
        x = xp.arange(4.0)
        o = xp.zeros(4)
        assert xp.exp(x, x) is x
        assert xp.add(x, 1, o) is o
        q, r = xp.divmod(x, 3, xp.zeros(4), None)
        return x, o, q, r, xp.add(x, 1, None)
    both(body)
    x = tnp.arange(3.0)
    v0 = x._version
    tnp.negative(x, x)
    assert x._version > v0
    both(lambda xp: xp.add(xp.ones(2), 1, xp.zeros(2), out=xp.zeros(2)))  # both: TypeError
    both(lambda xp: xp.add(xp.ones(2), 1, xp.zeros(2), xp.zeros(2)))      # too many: TypeError


def test_out_tuples_with_none_entries_allocate_those_outputs():
    def body(xp):
        x = xp.arange(5.0)
        o2 = xp.zeros(5)
        q, r = xp.divmod(x, 2, out=(None, o2))
        assert r is o2
        return q, r, xp.sqrt(x, out=(None,)), xp.add(xp.asarray(1.0), 1, out=(None,))
    both(body)


@pytest.mark.parametrize("call", [
    lambda xp, a, o: xp.clip(a, 1, 3, o), lambda xp, a, o: xp.around(a, 0, o),
    lambda xp, a, o: xp.cumsum(a, 0, None, o), lambda xp, a, o: xp.fix(a, o),
    lambda xp, a, o: a.clip(1, 3, o),
], ids=["clip", "around", "cumsum", "fix", "method"])
def test_functions_with_positional_out_return_it(call):
    """``clip(a, lo, hi, out)`` (out given by position) returns ``out`` itself and counts the
    write in its version."""
    a = np.arange(5.0) * 0.7

    def body(xp):
        o = xp.zeros(5)
        assert call(xp, _arr(xp, a), o) is o
        return o
    both(body)
    o = tnp.zeros(5)
    v0 = o._version
    call(tnp, tnp.asarray(a), o)
    assert o._version > v0


def test_sum_with_out_and_keepdims_by_position():
    def body(xp):
        o = xp.zeros((1, 3))
        assert xp.sum(xp.ones((2, 3)), 0, None, o, True) is o
        return o
    both(body)
    both(lambda xp: xp.sum(xp.ones((2, 3)), 0, None, xp.zeros(3), out=xp.zeros(3)))  # TypeError


def test_out_of_wrong_shape_or_count_raises_like_numpy():
    both(lambda xp: xp.add(xp.ones(3), 1, out=xp.empty(4)))
    both(lambda xp: xp.divmod(xp.ones(3), 2, out=xp.empty(3)))
    both(lambda xp: xp.add(xp.ones(3), 1, out=(xp.empty(3), xp.empty(3))))


@pytest.mark.parametrize("dtype", ["int64", "float32"])
@pytest.mark.parametrize("shape", [(6,), (2, 3)])
def test_where_keeps_out_values_where_false(dtype, shape):
    a = _values(_rng("where", dtype, shape), dtype, shape, -5, 5)
    mask = _values(_rng("mask", shape), "bool", shape, 0, 1)

    def body(xp, mask_kind):
        o = xp.full(shape, -7, dtype=dtype)
        m = {"tnp": _arr(xp, mask), "list": mask.tolist(), "scalar": False}[mask_kind]
        r = xp.multiply(_arr(xp, a), 3, out=o, where=m)
        assert r is o
        return o
    for kind in ("tnp", "list", "scalar"):
        both(body, kind)


def test_where_broadcasts_a_row_mask():
    def body(xp):
        o = xp.zeros((3, 4))
        return xp.add(xp.ones((3, 4)), 1, out=o, where=xp.asarray([True, False, True, False]))
    both(body)


@pytest.mark.parametrize("dtype", ["float32", "int16", "complex128", np.float64, "f2"])
def test_dtype_keyword_chooses_the_loop(dtype):
    a = _values(_rng("dtype"), "int32", (2, 3), 1, 9)
    both(lambda xp: xp.add(_arr(xp, a), _arr(xp, a), dtype=dtype))
    both(lambda xp: xp.multiply(_arr(xp, a), 3, dtype=dtype))
    both(lambda xp: xp.sqrt(_arr(xp, a), dtype=dtype))  # no int16 sqrt loop: TypeError


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
def test_casting_keyword(casting):
    f = _values(_rng("casting"), "float64", (4,), -5, 5)
    i = _values(_rng("casting-i"), "int32", (4,), -5, 5)
    # float64 result into an int32 out: only 'unsafe' allows it
    both(lambda xp: xp.add(_arr(xp, f), 1.0, out=xp.zeros(4, dtype="int32"), casting=casting))
    # int32 inputs computed as float32: only 'same_kind'/'unsafe' (and 'safe') allow it
    both(lambda xp: xp.add(_arr(xp, i), _arr(xp, i), dtype="float32", casting=casting))
    both(lambda xp: xp.add(_arr(xp, i), _arr(xp, i), dtype="int16", casting=casting))


def test_ufunc_on_python_scalars_and_lists_gives_tnp_values():
    both(lambda xp: xp.add(1, 2))
    both(lambda xp: xp.sqrt(2.0))
    both(lambda xp: xp.add([1, 2], [[3], [4]]))
    both(lambda xp: xp.maximum(3, xp.arange(5)))
    both(lambda xp: xp.divmod(7, 2))


# ------------------------------------------------------------------------------- ufunc methods
REDUCE_CASES = [("add", "int32"), ("add", "float64"), ("multiply", "float32"),
                ("maximum", "int64"), ("minimum", "float64"), ("logical_and", "bool"),
                ("bitwise_or", "uint8"), ("subtract", "int64"), ("fmax", "float32")]


@pytest.mark.parametrize("name,dtype", REDUCE_CASES)
@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 2)])
def test_reduce(name, dtype, shape):
    """axis (int, None, tuple) and keepdims; reductions to 0-d give scalars. ``subtract`` is not
    reorderable, so NumPy's ValueError for several axes must come from tnp too; an axis out of
    range gives AxisError."""
    a = _values(_rng("reduce", dtype, shape), dtype, shape, 1, 5)
    for axis in (0, -1, None, (0, 1), 3):
        for keepdims in (False, True):
            _both((axis, keepdims), lambda xp: getattr(xp, name).reduce(
                _arr(xp, a), axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name,dtype", REDUCE_CASES[:6])
def test_reduce_initial_where_dtype_and_out(name, dtype):
    a = _values(_rng("reduce2", dtype), dtype, (3, 4), 1, 5)
    mask = _values(_rng("reduce2-mask"), "bool", (3, 4), 0, 1)
    init = {"bool": True}.get(dtype, 2)
    both(lambda xp: getattr(xp, name).reduce(_arr(xp, a), axis=1, initial=init))
    both(lambda xp: getattr(xp, name).reduce(_arr(xp, a), axis=None, initial=init,
                                             where=_arr(xp, mask)))
    both(lambda xp: getattr(xp, name).reduce(_arr(xp, a), axis=0, dtype="float64"))
    # NumPy's positional order: array, axis, dtype, out, keepdims, initial, where
    both(lambda xp: getattr(xp, name).reduce(_arr(xp, a), 1, None, None, True, init,
                                             _arr(xp, mask)))

    def with_out(xp):
        o = xp.zeros(4, dtype=getattr(np, name).reduce(a, axis=0).dtype)
        r = getattr(xp, name).reduce(_arr(xp, a), axis=0, out=o)
        assert r is o
        return o
    both(with_out)


def test_reduce_of_empty_without_identity_raises_value_error():
    both(lambda xp: xp.maximum.reduce(xp.zeros((0, 3)), axis=0))
    both(lambda xp: xp.maximum.reduce(xp.zeros((0, 3)), axis=0, initial=-1.0))
    both(lambda xp: xp.add.reduce(xp.zeros((0, 3)), axis=0))
    both(lambda xp: xp.add.reduce(xp.ones((2, 3)), axis=2))  # AxisError
    both(lambda xp: xp.sin.reduce(xp.ones(3)))             # unary ufunc: ValueError


@pytest.mark.parametrize("name,dtype", [("add", "int32"), ("multiply", "float64"),
                                        ("maximum", "float32"), ("subtract", "int64"),
                                        ("logical_or", "bool")])
@pytest.mark.parametrize("shape,axis", [((6,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 2), -1)])
def test_accumulate(name, dtype, shape, axis):
    a = _values(_rng("acc", dtype, shape), dtype, shape, 1, 5)
    both(lambda xp: getattr(xp, name).accumulate(_arr(xp, a), axis=axis))
    both(lambda xp: getattr(xp, name).accumulate(_arr(xp, a), axis=axis, dtype="float64"))

    def with_out(xp):
        o = xp.empty(shape, dtype=getattr(np, name).accumulate(a, axis=axis).dtype)
        assert getattr(xp, name).accumulate(_arr(xp, a), axis=axis, out=o) is o
        return o
    both(with_out)


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "power", "hypot",
                                  "equal", "divmod", "left_shift"])
@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (2,)), ((), (3,))])
def test_outer(name, sa, sb):
    a = _values(_rng("outer", sa), "int64", sa, 1, 5)
    b = _values(_rng("outer-b", sb), "int64", sb, 1, 5)
    both(lambda xp: getattr(xp, name).outer(_arr(xp, a), _arr(xp, b)))
    both(lambda xp: getattr(xp, name).outer(_arr(xp, a).astype("float32"), b.tolist()))
    both(lambda xp: getattr(xp, name).outer(_arr(xp, a), _arr(xp, b), dtype="float64"))


@pytest.mark.parametrize("dtype", ["int64", "float32"])
@pytest.mark.parametrize("shape", [(6,), (3, 4)])
def test_at_works_in_place_unbuffered(dtype, shape):
    """``ufunc.at`` writes into its first argument (repeated indices accumulate), returns None
    and counts as a write (``_version`` increases)."""
    a = _values(_rng("at", dtype, shape), dtype, shape, -5, 5)
    idx = [0, 2, 0, 1]

    def body(xp, name, *rest):
        x = _arr(xp, a)
        view = x[:]
        v0 = getattr(x, "_version", 0)
        r = getattr(xp, name).at(x, *rest)
        assert r is None
        if xp is tnp:
            assert x._version > v0
        return x, view

    both(body, "add", idx, 1)
    both(body, "multiply", idx, 2)
    both(body, "negative", idx)
    both(body, "maximum", (np.array([0, 1]),), 3)
    if len(shape) == 2:
        both(body, "add", (np.array([0, 2, 0]), np.array([1, 1, 1])), 10)
    both(body, "add", [0, 99], 1)  # IndexError


def test_at_with_tnp_index_and_value_arrays():
    x = tnp.zeros(5)
    tnp.add.at(x, tnp.asarray([0, 0, 4]), tnp.asarray([1.0, 2.0, 3.0]))
    assert_same(np.array([3.0, 0, 0, 0, 3.0]), x)


def test_at_needs_a_tnp_array_to_modify():
    with pytest.raises(TypeError):
        tnp.add.at([1, 2, 3], [0], 1)


@pytest.mark.parametrize("dtype", ["int32", "float64"])
@pytest.mark.parametrize("shape,indices,axis", [((8,), [0, 4, 1, 5], 0), ((8,), [0, 3, 6], 0),
                                                ((3, 6), [0, 2, 5], 1), ((4, 3), [1, 3], 0)])
@pytest.mark.parametrize("name", ["add", "multiply", "maximum"])
def test_reduceat(dtype, shape, indices, axis, name):
    a = _values(_rng("reduceat", dtype, shape), dtype, shape, 1, 6)
    both(lambda xp: getattr(xp, name).reduceat(_arr(xp, a), indices, axis=axis))
    both(lambda xp: getattr(xp, name).reduceat(_arr(xp, a), _arr(xp, np.array(indices)),
                                               axis=axis, dtype="float64"))


def test_reduceat_with_out_of_range_index_raises_index_error():
    both(lambda xp: xp.add.reduceat(xp.arange(5), [0, 9]))


def test_ufunc_called_through_numpy_on_tnp_arrays_gives_tnp_results():
    """``numpy.add(tnp_array, ...)`` defers to tnp (``__array_ufunc__``), methods included."""
    a = tnp.arange(6).reshape(2, 3)
    assert_same(np.add(np.arange(6).reshape(2, 3), 1), np.add(a, 1))
    assert_same(np.add.reduce(np.arange(6).reshape(2, 3), axis=1), np.add.reduce(a, axis=1))
    assert_same(np.multiply.outer(np.arange(3), np.arange(2)), np.multiply.outer(tnp.arange(3), np.arange(2)))


# ------------------------------------------------------------------------------- functions
SUM_LIKE = ["sum", "prod", "nansum", "nanprod", "cumsum", "cumprod", "nancumsum", "nancumprod",
            "cumulative_sum", "cumulative_prod"]


@pytest.mark.parametrize("name", SUM_LIKE)
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "float32", "float64", "complex64", "bool"])
def test_sums_and_products(name, dtype):
    """Default accumulator dtypes (int8 sums to int64, float32 stays float32, ...), axes
    (``cumulative_*`` needs one for n-d input) and NaN skipping for ``nan*``; 0-d results are
    scalars."""
    for shape in [(), (6,), (3, 4)]:
        a = _values(_rng(name, dtype, shape), dtype, shape, 1, 4)
        if np.dtype(dtype).kind in "fc" and a.size > 2:
            a.flat[1] = np.nan
        for axis in (None, 0, -1):
            _both((shape, axis), lambda xp: getattr(xp, name)(_arr(xp, a), axis=axis))


@pytest.mark.parametrize("name", SUM_LIKE)
def test_sums_with_dtype_keepdims_where_initial_out(name):
    a = _values(_rng(name), "int16", (3, 4), 1, 4)
    f = getattr(np, name)
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, dtype="float32"))
    if name in ("sum", "prod", "nansum", "nanprod"):
        both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=0, keepdims=True))
        both(lambda xp: getattr(xp, name)(_arr(xp, a), initial=5))
        both(lambda xp: getattr(xp, name)(_arr(xp, a), where=_arr(xp, a > 2)))
    if name.startswith("cumulative"):
        both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, include_initial=True))

    def with_out(xp):
        o = xp.zeros(f(a, axis=0).shape, dtype="float64")
        assert getattr(xp, name)(_arr(xp, a), axis=0, out=o) is o
        return o
    both(with_out)


def test_sum_of_python_lists_and_methods():
    both(lambda xp: xp.sum([[1, 2], [3, 4]], axis=0))
    both(lambda xp: xp.sum([1.5, 2.5]))
    both(lambda xp: xp.arange(12).reshape(3, 4).sum(axis=1))
    both(lambda xp: xp.arange(1, 5).prod())
    both(lambda xp: xp.arange(12).reshape(3, 4).cumsum(axis=0))
    both(lambda xp: xp.sum(xp.ones((2, 3)), axis=3))  # AxisError


def _float_input(key, dtype, shape, lo=-3, hi=3):
    return _values(_rng(key, dtype, shape), dtype, shape, lo, hi)


FUNCTION_CASES = {
    "around": [lambda xp, a: xp.around(a * 1000, 1), lambda xp, a: xp.around(a * 1000, -2),
               lambda xp, a: xp.around(a)],
    "round": [lambda xp, a: xp.round(a * 100, 2), lambda xp, a: xp.round(a, decimals=0),
              lambda xp, a: a.round(1)],
    "fix": [lambda xp, a: xp.fix(a * 3)],
    "prod": [lambda xp, a: xp.prod(a, axis=0)],
    "sum": [lambda xp, a: xp.sum(a, axis=-1)],
    "nanprod": [lambda xp, a: xp.nanprod(a)],
    "nansum": [lambda xp, a: xp.nansum(a, axis=0)],
    "cumprod": [lambda xp, a: xp.cumprod(a)],
    "cumsum": [lambda xp, a: xp.cumsum(a, axis=0)],
    "nancumprod": [lambda xp, a: xp.nancumprod(a)],
    "nancumsum": [lambda xp, a: xp.nancumsum(a, axis=-1)],
    "cumulative_prod": [lambda xp, a: xp.cumulative_prod(a, axis=0)],
    "cumulative_sum": [lambda xp, a: xp.cumulative_sum(a, axis=-1)],
    "diff": [lambda xp, a: xp.diff(a), lambda xp, a: xp.diff(a, n=2, axis=0),
             lambda xp, a: xp.diff(a, axis=0, prepend=0.0),
             lambda xp, a: xp.diff(a, append=a[..., -1:] if a.ndim else 0)],
    "ediff1d": [lambda xp, a: xp.ediff1d(a), lambda xp, a: xp.ediff1d(a, to_begin=-1, to_end=[9, 9])],
    "gradient": [lambda xp, a: xp.gradient(a), lambda xp, a: xp.gradient(a, 0.5),
                 lambda xp, a: xp.gradient(a, axis=0, edge_order=2)],
    "cross": [lambda xp, a: xp.cross(a[..., :3], a[..., ::-1][..., :3])],
    "trapezoid": [lambda xp, a: xp.trapezoid(a), lambda xp, a: xp.trapezoid(a, dx=0.5, axis=0),
                  lambda xp, a: xp.trapezoid(a, x=xp.linspace(0, 1, a.shape[-1]))],
    "i0": [lambda xp, a: xp.i0(a)],
    "sinc": [lambda xp, a: xp.sinc(a)],
    "angle": [lambda xp, a: xp.angle(a + 1j * a[::-1]), lambda xp, a: xp.angle(a, deg=True)],
    "real": [lambda xp, a: xp.real(a * (1 + 2j)), lambda xp, a: xp.real(a)],
    "imag": [lambda xp, a: xp.imag(a * (1 + 2j)), lambda xp, a: xp.imag(a)],
    "real_if_close": [lambda xp, a: xp.real_if_close(a + 1e-20j),
                      lambda xp, a: xp.real_if_close(a + 1j)],
    "nan_to_num": [lambda xp, a: xp.nan_to_num(a / (a > 0)),
                   lambda xp, a: xp.nan_to_num(xp.log(a), nan=-1.0, posinf=9.0, neginf=-9.0)],
    "interp": [lambda xp, a: xp.interp(a, [-3.0, 0.0, 3.0], [1.0, 5.0, -2.0]),
               lambda xp, a: xp.interp(a, [-1.0, 1.0], [0.0, 1.0], left=-9, right=9),
               lambda xp, a: xp.interp(a, [0.0, 1.0, 2.0], [3.0, 4.0, 5.0], period=3.0)],
    "convolve": [lambda xp, a: xp.convolve(a.ravel(), [1.0, -2.0, 1.0]),
                 lambda xp, a: xp.convolve(a.ravel(), xp.asarray([0.5, 0.5]), mode="same"),
                 lambda xp, a: xp.convolve([1, 2, 3], a.ravel(), mode="valid")],
    "clip": [lambda xp, a: xp.clip(a, -1, 1), lambda xp, a: xp.clip(a, None, 0.5),
             lambda xp, a: xp.clip(a, a[..., :1], 2), lambda xp, a: a.clip(min=0),
             lambda xp, a: xp.clip(a, max=1.5)],
    "unwrap": [lambda xp, a: xp.unwrap(a * 3), lambda xp, a: xp.unwrap(a * 3, axis=0),
               lambda xp, a: xp.unwrap(a * 100, period=50)],
}


def test_every_table_function_has_cases():
    assert sorted(n for n in _math.FUNCTIONS if hasattr(np, n) and n not in FUNCTION_CASES) == []


@pytest.mark.parametrize("name", sorted(FUNCTION_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_math_functions(name, dtype):
    for shape in [(8,), (4, 5)]:
        a = _float_input(name, dtype, shape)
        for k, case in enumerate(FUNCTION_CASES[name]):
            expected = _both((shape, k), lambda xp: case(xp, _arr(xp, a)))
            if isinstance(expected, np.ndarray):
                assert expected.size > 0, f"case {k} tests nothing"


@pytest.mark.parametrize("name", ["around", "fix", "sum", "cumsum", "diff", "ediff1d", "gradient",
                                  "trapezoid", "clip", "convolve", "real", "imag", "interp"])
def test_math_functions_on_integers(name):
    a = _values(_rng(name, "int"), "int64", (3, 4), -9, 9)
    for case in FUNCTION_CASES[name]:
        both(lambda xp: case(xp, _arr(xp, a)))


@pytest.mark.parametrize("case", [
    lambda xp: xp.around(xp.asarray([0.5, 1.5, 2.5, -0.5])),   # half to even
    lambda xp: xp.round(xp.asarray(2.675), 2),                  # 0-d: a scalar
    lambda xp: xp.round(xp.asarray([123, 456], dtype="int16"), -1),
    lambda xp: xp.fix(xp.asarray([-2.5, 2.5])),
    lambda xp: xp.i0(xp.asarray(0.0)),
    lambda xp: xp.sinc(xp.asarray([0.0, 0.5])),
    lambda xp: xp.angle(1j),
    lambda xp: xp.real(3 + 4j),
    lambda xp: xp.imag(xp.asarray(3 + 4j)),
    lambda xp: xp.real_if_close(xp.asarray([2.1 + 4e-14j, 5.2 + 3e-15j])),
    lambda xp: xp.nan_to_num(xp.nan),
    lambda xp: xp.nan_to_num(xp.asarray([xp.nan, xp.inf, -xp.inf], dtype="float32")),
    lambda xp: xp.nan_to_num(xp.asarray([complex(xp.nan, xp.inf)])),
    lambda xp: xp.interp(2.5, [1, 2, 3], [3, 2, 0]),
    lambda xp: xp.interp([1.5], [1, 2, 3], [1j, 2j, 3j]),
    lambda xp: xp.gradient(xp.asarray([1.0, 2, 4, 7, 11]), xp.asarray([0.0, 1, 1.5, 3.5, 4])),
    lambda xp: xp.cross(xp.asarray([[1, 2, 3], [4, 5, 6]]), xp.asarray([7, 8, 9])),
    lambda xp: xp.cross(xp.ones((3, 2)), xp.ones(3), axisa=0),
    lambda xp: xp.cumsum(xp.asarray([[1, 2], [3, 4]], dtype="uint8")),
    lambda xp: xp.trapezoid([1, 2, 3]),
    lambda xp: xp.unwrap([0.0, 0.78, 5.49, 6.28]),
    lambda xp: xp.ediff1d([[1, 2], [4, 7]]),
    lambda xp: xp.clip(xp.arange(10), 3, 6),
    lambda xp: xp.clip(xp.arange(10, dtype="uint8"), -1, 300),
    lambda xp: xp.prod(xp.asarray([], dtype="float32")),
    lambda xp: xp.sum(xp.asarray([1e308, 1e308])),
], ids=lambda f: None)
def test_math_function_examples(case):
    both(case)


def test_clip_out_and_nan_to_num_copy_false_write_in_place():
    def clip(xp):
        a = xp.arange(6.0)
        o = xp.empty(6)
        assert xp.clip(a, 1, 4, out=o) is o
        return o
    both(clip)

    def nan_to_num(xp):
        a = xp.asarray([1.0, xp.nan, xp.inf])
        assert xp.nan_to_num(a, copy=False) is a
        return a
    both(nan_to_num)
    a = tnp.asarray([tnp.nan, 1.0])
    v0 = a._version
    tnp.nan_to_num(a, copy=False)
    assert a._version > v0


@pytest.mark.parametrize("case", [
    lambda xp: xp.diff(xp.asarray(5.0)),                       # 0-d: ValueError
    lambda xp: xp.diff(xp.ones(3), n=-1),
    lambda xp: xp.cross(xp.ones(4), xp.ones(4)),
    lambda xp: xp.gradient(xp.ones(1)),
    lambda xp: xp.convolve([], [1, 2]),
    lambda xp: xp.interp([1.0], [1, 2], [1, 2, 3]),
    lambda xp: xp.interp([1.0], [1, 2], [1, 2], period=0),
    lambda xp: xp.clip(xp.ones(3)),
    lambda xp: xp.round(xp.ones(3), decimals=1.5),
    lambda xp: xp.sum(xp.ones(3), axis=1),
    lambda xp: xp.cumsum(xp.ones((2, 2)), axis=-3),
], ids=lambda f: None)
def test_bad_input_to_math_functions_raises_numpys_exception_type(case):
    both(case)


@given(a=hnp.arrays(st.sampled_from([np.int32, np.float32, np.float64]),
                    hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                    elements=st.integers(-100, 100)),
       data=st.data())
def test_sum_prod_cumsum_any_axis(a, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    keepdims = data.draw(st.booleans())
    both(lambda xp: xp.sum(_arr(xp, a), axis=axis, keepdims=keepdims))
    both(lambda xp: xp.prod(_arr(xp, a) % 3, axis=axis, keepdims=keepdims))
    both(lambda xp: xp.cumsum(_arr(xp, a), axis=axis))
    both(lambda xp: xp.diff(_arr(xp, a), axis=axis if axis is not None else -1))
