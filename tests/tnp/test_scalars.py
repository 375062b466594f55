"""tnp.Scalar against NumPy 2 scalars: what reductions and integer indexing return, for every
numeric dtype (repr, str, hash, conversions, formatting, immutability, arithmetic dtypes), and the
elements of string and object arrays."""
import copy
import math
import operator
import pickle

import numpy
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tnp
from tnp.testing import assert_same, both

NUMERIC = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "longdouble", "complex64", "complex128", "clongdouble"]
INTEGER = [d for d in NUMERIC if numpy.dtype(d).kind in "iu"]
INEXACT = [d for d in NUMERIC if numpy.dtype(d).kind in "fc"]

DATA = [3, 1, 2, 0]
FLOAT_DATA = [3.25, -1.5, 2.0, 0.1]


def arrays(dtype):
    """The same values as a NumPy and a tnp array."""
    src = DATA if numpy.dtype(dtype).kind in "biu" else FLOAT_DATA
    n = numpy.asarray(src).astype(dtype)
    if numpy.dtype(dtype).kind == "c":
        n = n + numpy.asarray([0.5j, 1j, -2j, 0], dtype=dtype)
    return n, tnp.asarray(n.copy())


def scalar_pairs(dtype):
    """(numpy scalar, tnp scalar) from integer indexing and from reductions."""
    n, t = arrays(dtype)
    out = [(n[0], t[0]), (n[-1], t[-1]), (n.reshape(2, 2)[1, 0], t.reshape(2, 2)[1, 0])]
    if numpy.dtype(dtype).kind != "c":
        out += [(n.max(), t.max()), (n.min(), t.min())]
    out += [(n.sum(), t.sum()), (n[:1].prod(), t[:1].prod()), (n.any(), t.any()), (n.argmax(), t.argmax())]
    if numpy.dtype(dtype).kind in "fc":
        out += [(n.mean(), t.mean())]
    return out


@pytest.mark.parametrize("dtype", NUMERIC)
def test_kind_dtype_repr_str(dtype):
    for ns, ts in scalar_pairs(dtype):
        assert isinstance(ts, tnp.Scalar)
        assert isinstance(ts, tnp.ndarray)
        assert ts.dtype == ns.dtype
        assert ts.shape == () and ts.ndim == 0 and ts.size == 1
        assert repr(ts) == repr(ns)
        assert str(ts) == str(ns)
        assert_same(ns, ts)
        with numpy.printoptions(precision=2):
            assert repr(ts) == repr(ns) and str(ts) == str(ns)


def test_repr_examples():
    assert repr(tnp.asarray([1.0, 2.0, 3.0]).sum()) == "np.float64(6.0)"
    assert repr(tnp.arange(4)[3]) == "np.int64(3)"
    assert repr(tnp.asarray([True]).all()) == "np.True_"
    assert repr(tnp.asarray([0]).any()) == "np.False_"
    assert repr(tnp.asarray([1 + 2j]).sum()) == "np.complex128(1+2j)"
    assert repr(tnp.asarray([0.1], dtype="float32")[0]) == "np.float32(0.1)"
    assert repr(tnp.asarray([0.5], dtype="float16").sum()) == "np.float16(0.5)"
    assert str(tnp.asarray([1.0, 2.0, 3.0]).sum()) == "6.0"
    assert str(tnp.asarray([True])[0]) == "True"


@pytest.mark.parametrize("dtype", NUMERIC)
def test_hash_and_dict_keys(dtype):
    for ns, ts in scalar_pairs(dtype):
        assert hash(ts) == hash(ns)
        assert hash(ts) == hash(ns.item())
        d = {ts: "v"}
        assert d[ns.item()] == "v"
        assert d[ns] == "v"
        assert ns.item() in {ts}
        assert ts == ns and ts == ns.item()
    # equal values of different dtypes are one key, as in NumPy
    a = tnp.asarray([2], dtype="int8")[0]
    b = tnp.asarray([2.0])[0]
    assert len({a, b, 2, 2.0}) == len({numpy.int8(2), numpy.float64(2.0), 2, 2.0}) == 1


@pytest.mark.parametrize("dtype", NUMERIC)
def test_item_and_conversions(dtype):
    for ns, ts in scalar_pairs(dtype):
        ni, ti = ns.item(), ts.item()
        assert type(ti) is type(ni) and (ti == ni)  # long double items stay NumPy scalars, as in NumPy
        both(lambda xp: bool(ns if xp is numpy else ts))
        both(lambda xp: complex(ns if xp is numpy else ts))
        if ns.dtype.kind != "c":
            both(lambda xp: float(ns if xp is numpy else ts))
            both(lambda xp: int(ns if xp is numpy else ts))
            both(lambda xp: math.floor(ns if xp is numpy else ts))
            both(lambda xp: math.trunc(ns if xp is numpy else ts))
            both(lambda xp: round(ns if xp is numpy else ts))
            both(lambda xp: round(ns if xp is numpy else ts, 1))
        # operator.index: integers and bools (NumPy 2 refuses bool) as NumPy decides
        both(lambda xp: operator.index(ns if xp is numpy else ts))


@pytest.mark.parametrize("dtype", INTEGER)
def test_integer_scalars_index_python_sequences(dtype):
    n, t = arrays(dtype)
    s = t[0]  # 3
    assert list(range(s)) == list(range(n[0])) == [0, 1, 2]
    assert [1, 2, 3, 4][s] == [1, 2, 3, 4][n[0]] == 4
    assert "abcd"[t[1]:s] == "bc"
    assert s.__index__() == 3
    assert bin(s) == bin(n[0])
    assert hex(t[0]) == "0x3"
    assert [0] * t[2] == [0] * n[2] == [0, 0]
    assert t[2] * (1, 2) == (1, 2, 1, 2)
    assert "ab" * t[2] == "abab" and t[2] * b"x" == b"xx"
    assert [[1], [2]] * t[2] == [[1], [2]] * n[2]
    assert_same(n[2] + numpy.asarray([1, 2]), t[2] + [1, 2])  # other operators: element-wise


@pytest.mark.parametrize("dtype", ["bool", "float32", "float64", "complex64"])
def test_non_integer_scalar_times_sequence_raises(dtype):
    n, t = arrays(dtype)
    for seq in ([1], (1,), "a"):
        for f in (lambda s: s * seq, lambda s: seq * s):
            with pytest.raises(TypeError) as en:
                f(n[0])
            with pytest.raises(TypeError) as et:
                f(t[0])
            assert str(en.value) == str(et.value)


@pytest.mark.parametrize("dtype", INEXACT + ["bool"])
def test_non_integer_scalars_do_not_index(dtype):
    _, t = arrays(dtype)
    n, _ = arrays(dtype)
    for ns, ts in [(n[0], t[0])]:
        with pytest.raises(TypeError):
            [1, 2, 3, 4][ns]
        with pytest.raises(TypeError):
            [1, 2, 3, 4][ts]
        with pytest.raises(TypeError):
            range(ts)


FORMATS = ["", ".3f", ">8", "<8", "^10", "+.2e", "08.2f", ".2%", "g", ".1g", "10", "e", "x", "d", "b",
           "_", ",", "#x", "n", "s", "r"]


@pytest.mark.parametrize("dtype", NUMERIC)
def test_format_specs(dtype):
    for ns, ts in scalar_pairs(dtype)[:4]:
        for spec in FORMATS:
            try:
                expected = format(ns, spec)
            except (ValueError, TypeError) as e:
                with pytest.raises(type(e)):
                    format(ts, spec)
                continue
            assert format(ts, spec) == expected, spec
    s = tnp.asarray([3.14159]).sum()
    assert f"{s:.3f}" == "3.142"
    assert f"{s:>8}" == f"{numpy.float64(3.14159):>8}"
    assert f"{s}" == "3.14159"
    assert f"{s!r}" == "np.float64(3.14159)"
    assert "%.2f" % s == "3.14"
    assert "{:.1e}".format(tnp.arange(3)[2]) == "{:.1e}".format(numpy.int64(2))


@pytest.mark.parametrize("dtype", NUMERIC)
def test_immutable(dtype):
    _, t = arrays(dtype)
    s = t[0]
    with pytest.raises(TypeError):
        s[...] = 1
    with pytest.raises(TypeError):
        s[()] = 1
    with pytest.raises(TypeError):
        numpy.arange(3)[0][...] = 1  # NumPy scalars refuse too
    with pytest.raises(TypeError):
        s.fill(1)
    for method, args in [("sort", ()), ("put", ([0], [1])), ("partition", (0,)), ("resize", ((2,),))]:
        with pytest.raises((TypeError, ValueError, AttributeError)):
            getattr(s, method)(*args)
    assert_same(arrays(dtype)[0][0], s)
    # the array it came from is a copy source, not a view
    t[0] = 0 if dtype != "bool" else False
    assert_same(arrays(dtype)[0][0], s)


@pytest.mark.parametrize("dtype", [d for d in NUMERIC if d != "bool"])
def test_inplace_operator_rebinds(dtype):
    n, t = arrays(dtype)
    s = t[0]
    other = s
    arr_before = t.copy()
    s += 1
    ns = n[0]
    ns += 1
    assert_same(ns, s)
    assert other is not s
    assert_same(arrays(dtype)[0][0], other)  # the other reference is unchanged
    assert_same(numpy.asarray(arr_before), t)  # the array is untouched
    s *= 2
    ns *= 2
    assert_same(ns, s)


def _python_operands(dtype):
    kind = numpy.dtype(dtype).kind
    ops = [1, 2, True, 2.5, 0.5, 1j]
    return ops if kind != "b" else [True, 1, 2.5, 1j]


ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
         operator.pow, operator.eq, operator.lt, operator.ge, operator.and_, operator.or_, divmod,
         operator.neg, abs, operator.invert, operator.pos]


@pytest.mark.parametrize("dtype", NUMERIC)
def test_arithmetic_with_python_scalars_gives_numpy_dtypes(dtype):
    n, t = arrays(dtype)
    pairs = [(n[0], t[0]), (n.sum(), t.sum())]
    with numpy.errstate(all="ignore"):
        for ns, ts in pairs:
            for op in ARITH:
                if op in (operator.neg, abs, operator.invert, operator.pos):
                    both(lambda xp: op(ns if xp is numpy else ts), rtol=1e-6)
                    continue
                for v in _python_operands(dtype):
                    both(lambda xp: op(ns if xp is numpy else ts, v), rtol=1e-6)
                    try:
                        expected = op(v, ns)
                    except TypeError:
                        with pytest.raises(TypeError):
                            op(v, ts)
                        continue
                    if type(expected) in (float, complex, bool):
                        # NumPy's float64 subclasses Python's float, so ``1j + np.float64(2)``
                        # is computed by Python, a Python complex; tnp gives a tnp scalar of that
                        # value and of NumPy's dtype for it, which a tape can follow
                        # (docs/differences.md), as for a comparison Python reflects (``1j == s``)
                        got = op(v, ts)
                        assert isinstance(got, tnp.Scalar) and \
                            got.dtype == numpy.asarray(expected).dtype
                        assert got == expected
                        continue
                    assert_same(expected, op(v, ts), rtol=1e-6)
            # scalar with scalar and scalar with array
            both(lambda xp: (ns if xp is numpy else ts) * (ns if xp is numpy else ts), rtol=1e-6)
            both(lambda xp: (ns if xp is numpy else ts) + (n if xp is numpy else t), rtol=1e-6)
            both(lambda xp: (n if xp is numpy else t) - (ns if xp is numpy else ts), rtol=1e-6)


@given(st.sampled_from(["int8", "int32", "uint16", "float32", "float64", "complex64"]),
       st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3, allow_nan=False), st.booleans()),
       st.sampled_from([operator.add, operator.sub, operator.mul, operator.truediv, operator.lt]))
def test_arithmetic_hypothesis(dtype, value, op):
    n = numpy.asarray([5], dtype=dtype)
    t = tnp.asarray(n)
    with numpy.errstate(all="ignore"):
        both(lambda xp: op((n if xp is numpy else t)[0], value), rtol=1e-6)
        both(lambda xp: op(value, (n if xp is numpy else t).sum()), rtol=1e-6)


def test_nep50_examples():
    f32 = tnp.asarray([3.0], dtype="float32")[0]
    assert (f32 * 2.5).dtype == numpy.float32
    assert (f32 + tnp.asarray([1.0]).sum()).dtype == numpy.float64
    assert (tnp.asarray([1], dtype="uint8")[0] + 1).dtype == numpy.uint8
    with pytest.raises(OverflowError):
        numpy.asarray([1], dtype="uint8")[0] + 300
    with pytest.raises(OverflowError):
        tnp.asarray([1], dtype="uint8")[0] + 300
    assert (tnp.arange(3)[1] / 2).dtype == numpy.float64
    assert isinstance(tnp.arange(3)[1] + 1, tnp.Scalar)


def test_scalar_methods_and_attributes():
    s = tnp.asarray([2.5]).sum()
    n = numpy.float64(2.5)
    assert s.is_integer() == n.is_integer()
    assert s.as_integer_ratio() == n.as_integer_ratio()
    assert_same(n.astype("int32"), s.astype("int32"))
    assert_same(n.round(), s.round())
    assert s.T is not None and s.T.shape == ()
    assert_same(numpy.asarray(n).reshape(1), s.reshape(1))
    assert s.tolist() == 2.5 and type(s.tolist()) is float
    assert s.base is None
    assert not numpy.shares_memory(numpy.asarray(s), numpy.asarray(s))
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(TypeError):
        iter(s)
    assert numpy.asarray(s).dtype == numpy.float64 and numpy.asarray(s).shape == ()
    assert_same(numpy.float64(2.5) + numpy.arange(3), s + numpy.arange(3))


def test_scalar_constructor():
    s = tnp.Scalar(3, dtype="int16")
    assert repr(s) == "np.int16(3)"
    assert tnp.Scalar(2.5).dtype == numpy.float64
    with pytest.raises(ValueError):
        tnp.Scalar([1, 2])


def test_scalar_pickle_copy():
    for s in (tnp.asarray([1.5]).sum(), tnp.arange(3, dtype="uint16")[2], tnp.asarray([True])[0]):
        r = pickle.loads(pickle.dumps(s))
        assert type(r) is tnp.Scalar and repr(r) == repr(s) and r.dtype == s.dtype
        assert copy.copy(s) is s and copy.deepcopy(s) is s


# ---------------------------------------------------------------------------- non-numeric elements
def test_string_array_elements_are_numpy_str():
    for data in (["a", "bc", ""], [b"x", b"yz"]):
        n = numpy.asarray(data)
        t = tnp.asarray(data)
        for i in range(len(data)):
            assert type(t[i]) is type(n[i])
            assert t[i] == n[i] and repr(t[i]) == repr(n[i])
        assert type(t.sort() or t[-1]) is type(numpy.sort(n)[-1])
        assert t[-1] == numpy.sort(n)[-1]
        assert type(t.reshape(1, -1)[0, 1]) is type(n[1])
        assert [type(e) for e in t] == [type(e) for e in n]
    t = tnp.asarray(["ab", "c"])
    assert t[0] + "z" == "abz"
    assert {t[0]: 1}["ab"] == 1


def test_object_array_elements_are_the_objects():
    objs = [[1, 2], (3, 4), {"k": 5}, None, 7, 2.5, "s", object()]
    n = numpy.empty(len(objs), dtype=object)
    t = tnp.empty(len(objs), dtype=object)
    for i, o in enumerate(objs):
        n[i] = o
        t[i] = o
    for i, o in enumerate(objs):
        assert n[i] is o
        assert t[i] is o, (i, o)
        assert t[-len(objs) + i] is o
    assert t[7] is objs[-1]
    assert type(t[4]) is int and type(t[5]) is float
    assert [e is o for e, o in zip(t, objs)] == [True] * len(objs)
    two = tnp.empty((2, 2), dtype=object)
    two[1, 0] = objs[0]
    assert two[1, 0] is objs[0]
    assert two[1][0] is objs[0]
    assert two.item(2) is objs[0]
    assert two.flat[2] is objs[0]
    assert list(two.flat)[2] is objs[0]
    sub = t[:2]
    assert isinstance(sub, tnp.ndarray) and sub.dtype == object and sub[0] is objs[0]


@pytest.mark.parametrize("call", [
    lambda xp, x: xp.sqrt(x[1]), lambda xp, x: xp.sum(x), lambda xp, x: x.mean(),
    lambda xp, x: xp.dot(x, x), lambda xp, x: xp.maximum(x[0], 2.0), lambda xp, x: x[2] * 3,
    lambda xp, x: xp.mean([x[0], x[1]]), lambda xp, x: xp.isnan(x[0])])
def test_values_of_tnp_arrays_are_tnp_scalars(call):
    # a value made from a tnp array stays a tnp value (a tape can follow it)
    x = tnp.asarray([1.0, 4.0, 9.0])
    r = call(tnp, x)
    assert type(r) is tnp.Scalar
    e = call(np, np.asarray([1.0, 4.0, 9.0]))
    assert r.dtype == e.dtype and r == e


@pytest.mark.parametrize("call", [
    lambda xp: xp.sqrt(2.0), lambda xp: xp.sum([1, 2, 3]), lambda xp: xp.mean([1.0, 2.5]),
    lambda xp: xp.exp(np.float32(1.0)), lambda xp: xp.add(1, 2), lambda xp: xp.dot([1, 2], [3, 4]),
    lambda xp: xp.isnan(1.0), lambda xp: xp.hypot(3, 4), lambda xp: xp.linalg.norm([3.0, 4.0])])
def test_values_of_no_tnp_array_are_numpys_numbers(call):
    # no tnp array in: NumPy's own number out, of NumPy's type (so pandas, json-free code and
    # isinstance(v, float) see what NumPy gives); no tape could follow such a value
    r, e = call(tnp), call(np)
    assert type(r) is type(e) and r == e


def test_a_numpy_number_from_tnp_meets_a_tnp_array_and_the_tape_follows():
    import tnp_train as tt
    w = tt.Variable(tnp.asarray([0.5, -1.0]))
    with tt.GradientTape() as tape:
        c = tnp.exp(0.5)                   # a NumPy float64: made of no tnp array
        loss = tnp.sum(c * w * w) + tnp.sqrt(2.0) * tnp.sum(w)
    g = tape.gradient(loss, w)
    np.testing.assert_allclose(np.asarray(g), 2 * np.exp(0.5) * np.array([0.5, -1.0]) + np.sqrt(2.0))
