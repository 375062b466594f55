"""Python-level protocols of tnp.ndarray and tnp.Scalar (issue 17, item 5): the C slots of
tnp/_core/_speedups.c (operators, comparisons, conversions, len, iteration, item assignment,
integer indexing to Scalars) against NumPy, against the Python methods they stand for, and in
the pure-Python build (a subprocess). Speed is measured by benchmarks/pylevel.py, not here."""
import gc
import operator
import os
import subprocess
import sys
import warnings
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp.extend
from tnp._core import ndarray as nd
from tnp.testing import assert_same

C = pytest.mark.skipif(not (nd.SPEEDUPS and hasattr(nd._speedups, "patch_slots")),
                       reason="the C base is not built")

BINOPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lshift, operator.rshift, operator.lt, operator.le, operator.eq, operator.ne,
          operator.gt, operator.ge]
DTYPES = ["bool", "int8", "int64", "uint16", "float16", "float32", "float64", "complex64"]


def _outcome(f):
    """(value, None) or (None, exception type), with warnings recorded."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f()
        except Exception as e:          # noqa: BLE001 - the type is what is compared
            return None, type(e), [str(x.message) for x in w]
    return r, None, [str(x.message) for x in w]


@C
def test_slots_are_in_effect_after_import():
    # a later assignment of a dunder to the class would silently put CPython's generic slot back
    assert nd._speedups.slots_patched(tnp.ndarray, "array")
    assert nd._speedups.slots_patched(tnp.Scalar, "scalar")


@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from(BINOPS),
       st.sampled_from(["ss", "sa", "as", "aa", "sp", "ps", "ap", "pa", "sn", "ns"]),
       st.integers(0, 3), st.integers(0, 3))
@settings(max_examples=400, deadline=None)
def test_operators_match_numpy(d1, d2, op, shape, i, j):
    """tnp operands built like NumPy's: s a Scalar (x[i]), a an array, p a Python number, n a NumPy
    scalar; the result, its type and dtype, the error type and the warnings are NumPy's."""
    na = (np.arange(4) - 1).astype(d1)
    nb = (np.arange(4) * 3 % 5 + 1).astype(d2)
    ta, tb = tnp.asarray(na), tnp.asarray(nb)
    py = nb[j].item()

    def operands(xp_a, xp_b, n_b):
        pick = {"s": lambda x: x[i], "a": lambda x: x, "p": lambda x: py, "n": lambda x: n_b[j]}
        return pick[shape[0]](xp_a) if shape[0] != "p" else py, \
            pick[shape[1]](xp_b) if shape[1] not in "pn" else (py if shape[1] == "p" else n_b[j])

    x_n, y_n = operands(na, nb, nb)
    x_t, y_t = operands(ta, tb, nb)
    if shape[0] == "n":
        x_n = x_t = na[i]
    ref, ref_err, ref_w = _outcome(lambda: op(x_n, y_n))
    got, got_err, got_w = _outcome(lambda: op(x_t, y_t))
    assert got_err is ref_err, (op, x_n, y_n, ref_err, got_err)
    if ref_err is None:
        assert_same(ref, got)
        if isinstance(ref, np.generic):
            assert type(got) is tnp.Scalar
        elif isinstance(ref, np.ndarray):
            assert type(got) is tnp.ndarray
    assert sorted(set(got_w)) == sorted(set(ref_w))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_and_conversions_match_numpy(dtype):
    n = (np.arange(4) - 1).astype(dtype)
    t = tnp.asarray(n)
    for f in (operator.neg, operator.pos, abs, operator.invert):
        for xn, xt in ((n, t), (n[2], t[2])):
            ref, ref_err, _ = _outcome(lambda: f(xn))
            got, got_err, _ = _outcome(lambda: f(xt))
            assert got_err is ref_err
            if ref_err is None:
                assert_same(ref, got)
    for f in (bool, float, int, operator.index, complex, hash):
        ref, ref_err, _ = _outcome(lambda: f(n[2]))
        got, got_err, _ = _outcome(lambda: f(t[2]))
        assert got_err is ref_err and (ref_err is not None or (got == ref and type(got) is type(ref)))
    assert len(t) == len(n) == 4
    with pytest.raises(ValueError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError):
        len(tnp.asarray(1.0))


def test_indexing_and_iteration_give_scalars_and_views():
    n = np.arange(12.0).reshape(3, 4)
    t = tnp.asarray(n)
    for key in (1, -1, (1, 2), (-1, -4)):
        assert type(t[key]) is (tnp.Scalar if isinstance(n[key], np.generic) else tnp.ndarray)
        assert_same(n[key], t[key])
    rows = list(t)
    assert [type(r) for r in rows] == [tnp.ndarray] * 3
    rows[0][1] = -5.0                       # a view, as NumPy's rows
    assert n[0, 1] == -5.0
    v = tnp.arange(5, dtype="int16")
    got = [x for x in v]
    assert [type(x) for x in got] == [tnp.Scalar] * 5 and [x.dtype for x in got] == [np.int16] * 5
    assert got == [0, 1, 2, 3, 4]
    assert list(reversed(v)) == [4, 3, 2, 1, 0]
    it = iter(v)
    next(it)
    assert it.__length_hint__() == 4 if hasattr(it, "__length_hint__") else True
    with pytest.raises(TypeError, match="0-d"):
        iter(tnp.asarray(3.0))
    with pytest.raises(IndexError):
        t[3]


def test_elements_of_object_string_and_structured_arrays_are_numpys():
    obj = np.array([np.float64(1.5), "a", None, 3], dtype=object)
    t = tnp.asarray(obj)
    assert [type(x) for x in t] == [type(x) for x in obj] == [np.float64, str, type(None), int]
    assert type(t[0]) is np.float64        # the stored object itself, as NumPy returns it
    s = tnp.asarray(np.array(["ab", "c"]))
    assert type(s[0]) is np.str_ and list(s) == ["ab", "c"]
    rec = np.zeros(2, dtype=[("x", "i4"), ("y", "f8")])
    assert type(tnp.asarray(rec)[0]) is np.void


def test_bool_scalars_compare_and_convert_as_numpys():
    a = tnp.asarray([0.0, 1.0, 2.0])
    r = a[1] > 0
    assert type(r) is tnp.Scalar and r.dtype == np.bool_ and bool(r) is True and repr(r) == "np.True_"
    assert bool(a[0] > 0) is False and repr(a[0] > 0) == "np.False_"
    assert [bool(x > 0) for x in a] == [False, True, True]
    assert max(a) == 2.0 and min(a) == 0.0 and type(max(a)) is tnp.Scalar
    assert sum(a) == 3.0 and type(sum(a)) is tnp.Scalar and sum(a).dtype == np.float64
    assert sum(tnp.arange(4)) == 6 and sum(tnp.arange(4)).dtype == np.int64


def test_item_assignment_writes_and_bumps_the_shared_version():
    base = tnp.arange(6.0)
    view = base[2:]
    v0 = tnp.extend.version(base)
    base[1] = 7.0
    view[0] = 8
    view[1] = base[0]                       # a Scalar on the same device
    view[(2,)] = True
    assert base.tolist() == [0.0, 7.0, 8.0, 0.0, 1.0, 5.0]
    assert tnp.extend.version(base) == tnp.extend.version(view) == v0 + 4
    fresh = tnp.zeros(3)
    fresh[0] = 1.0                          # the first write makes the counter
    assert tnp.extend.version(fresh) == 1
    ro = tnp.broadcast_to(tnp.arange(3.0), (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        ro[0, 0] = 1.0
    with pytest.raises(ValueError, match="cannot delete array elements"):
        del base[0]
    with pytest.raises(TypeError, match="'float64' object does not support item deletion"):
        del base[0][()]                     # NumPy's words for its scalars
    with pytest.raises(ValueError):        # NumPy's: could not convert string to float
        base[0] = "x"
    with pytest.raises(IndexError):
        base[10] = 1.0
    assert tnp.extend.version(base) == v0 + 4     # failed writes do not count
    r = tnp.zeros(3)
    r[0] = 1.0
    r.resize(5, refcheck=False)             # a new buffer that keeps the count going
    r[4] = 2.0
    r[3] = 1.0
    assert tnp.extend.version(r) == 4 and r.tolist() == [1.0, 0.0, 0.0, 1.0, 2.0]


def test_devices_must_match():
    a = tnp.arange(3.0)
    b = tnp.arange(3.0, device="cpu:1")
    for f in (lambda: a + b, lambda: a[0] + b[0], lambda: a[0] < b[0], lambda: a < b):
        with pytest.raises(ValueError, match="device"):
            f()
    with pytest.raises(ValueError, match="device"):
        a[0] = b[1]
    assert (b[0] + 1.0).device == b.device and type(b[1]) is tnp.Scalar and b[1].device == b.device
    assert [x.device for x in b] == [b.device] * 3


def test_errors_name_the_operation_and_warn_once():
    a = tnp.asarray([1.0, 0.0])
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as e:
            a[0] / a[1]
    assert any("divide" in n for n in getattr(e.value, "__notes__", ["divide"]))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a[0] / a[1]
    assert len(w) == 1 and "divide by zero" in str(w[0].message)


def test_sequences_three_argument_pow_and_reflected_operands():
    s = tnp.arange(4)[2]
    assert [0] * s == [0, 0] and s * (1,) == (1, 1) and "ab" * s == "abab"
    assert pow(s, 3, 5) == pow(np.int64(2), 3, 5) if _outcome(lambda: pow(np.int64(2), 3, 5))[1] \
        is None else True
    with pytest.raises(TypeError):
        pow(tnp.arange(3), 2, 5)
    assert 1j + tnp.asarray([1.0])[0] == 1 + 1j
    # NumPy gives a Python complex (complex's own addition: float64 is a float); tnp a tnp
    # scalar of that value and dtype, which a tape can follow (docs/differences.md, Scalars)
    z = 1j + tnp.asarray([1.0])[0]
    assert type(z) is tnp.Scalar and z.dtype == np.asarray(1j + np.float64(1.0)).dtype
    assert_same(np.float32(2) * np.arange(3.0)[1], np.float32(2) * tnp.arange(3.0)[1])


def test_subclasses_keep_their_own_operators():
    class Sub(tnp.ndarray):
        def __radd__(self, other):
            return "sub radd"

        def __add__(self, other):
            return ("sub add", super().__add__(other))

    x = tnp.arange(3.0)
    y = tnp.arange(3.0).view(Sub)
    assert x + y == "sub radd"             # the subclass's reflected method first, as Python does
    tag, r = y + x
    assert tag == "sub add" and type(r) is Sub and r.tolist() == [0.0, 2.0, 4.0]

    class Sc(tnp.Scalar):
        pass

    z = nd._new(Sc)                          # (Scalar(...) makes a Scalar) its base's dealloc
    z._a, z._dev = np.float64(2.5), tnp.asarray(1.0).device
    assert type(z) is Sc and float(z + 1) == 3.5
    r = weakref.ref(z)
    del z
    gc.collect()
    assert r() is None


def test_scalars_made_in_c_are_plain_objects():
    a = tnp.arange(4.0)
    s = a[1]
    w = weakref.ref(s)
    assert w() is s
    del s
    assert w() is None
    xs = [a[i] for i in range(4)] * 100     # the free list hands out and takes back
    assert sum(xs) == 600.0 and len({id(x) for x in xs[:4]}) == 4
    with pytest.raises(AttributeError):
        a[1].foo = 1                         # no __dict__ (as before)


def test_tapes_see_indexing_iteration_and_scalar_arithmetic():
    tt = pytest.importorskip("tnp_train")
    w = tt.Variable(np.asarray([1.0, 2.0, 3.0]))
    with tt.GradientTape(persistent=True) as tape:
        y1 = w[1] * w[2] + w[0] ** 2
        y2 = sum(x * x for x in w)
        y3 = max(w) * 2.0
        t = tnp.asarray(w)
        y4 = -abs(t[0]) / 2.0
    np.testing.assert_allclose(np.asarray(tape.gradient(y1, w)), [2.0, 3.0, 2.0])
    np.testing.assert_allclose(np.asarray(tape.gradient(y2, w)), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(np.asarray(tape.gradient(y3, w)), [0.0, 0.0, 2.0])
    g4 = tape.gradient(y4, w)
    np.testing.assert_allclose(np.asarray(g4), [-0.5, 0.0, 0.0])
    x = tnp.arange(3.0)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x[1] * x[1] + sum(x)            # a plain array, watched: the C paths step aside
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), [1.0, 3.0, 1.0])
    s = tnp.arange(3.0)[2]                  # a scalar made outside the tape can be watched
    with tt.GradientTape() as tape:
        tape.watch(s)
        y = s * s
    assert float(tape.gradient(y, s)) == 4.0


def test_a_write_after_recording_is_seen_by_the_tape():
    """PyTorch's in-place rule holds with the C slots: a tape that recorded keeps its listener
    while it lives, so the C paths step aside for every write; once no tape is left they take
    over, and the counters they bump are the ones the next tape reads."""
    tt = pytest.importorskip("tnp_train")
    from tnp._core import state

    # (operator.setitem is x[k] = v: the type's slot; x.__setitem__ would call the Python method)
    for write in (lambda x: operator.setitem(x, 0, 5.0), lambda x: operator.setitem(x[1:], 0, 5.0),
                  lambda x: operator.setitem(x.reshape(3, 1), (2, 0), x[0])):
        x = tnp.arange(3.0)
        with tt.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(x * x)
        write(x)
        with pytest.raises(RuntimeError, match="modified in place"):
            tape.gradient(y, x)
        del tape
        gc.collect()
        if state.get_recording_hook() is None:        # no tape left: the C path writes
            v = tnp.extend.version(x)
            write(x)
            assert tnp.extend.version(x) == v + 1
            with tt.GradientTape() as tape:
                tape.watch(x)
                y = tnp.sum(x * x)
            np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), 2 * np.asarray(x))


PURE = r"""
import operator, numpy as np, tnp, tnp.extend
from tnp._core import ndarray as nd
assert not nd.SPEEDUPS
a = tnp.arange(8.0); n = np.arange(8.0)
assert type(a[1]) is tnp.Scalar and repr(a[1]) == repr(n[1])
assert [type(x) for x in a] == [tnp.Scalar] * 8 and list(a) == list(n)
s = a[3]
for op in (operator.add, operator.mul, operator.truediv, operator.lt, operator.eq):
    assert repr(op(s, s)) == repr(op(n[3], n[3])) and repr(op(s, 2.0)) == repr(op(n[3], 2.0))
assert bool(a[0] > 0) is False and float(s) == 3.0 and len(a) == 8
assert sum(a) == 28.0 and max(a) == 7.0 and min(a) == 0.0 and type(sum(a)) is tnp.Scalar
v = tnp.extend.version(a); a[1] = 2.0; assert a[1] == 2.0 and tnp.extend.version(a) == v + 1
print("pure ok")
"""


def test_the_pure_python_build_behaves_the_same():
    env = dict(os.environ, TNP_PURE_PYTHON="1")
    r = subprocess.run([sys.executable, "-c", PURE], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "pure ok", r.stderr


# ---------------------------------------------------------------------------- pandas
def test_pandas_columns_of_tnp_values():
    """What pandas makes of tnp values. Reductions of pandas objects are pandas' numbers, and
    tnp.float64 is numpy.float64: float columns. A tnp.Scalar is neither a NumPy scalar nor a
    Python float, which is all pandas' type inference accepts (its Cython checks the C type:
    no protocol is read), so a list of Scalars is an object column, as a list of any other number
    type (Decimal) is; .item() or tnp.asarray(list) gives the float column (docs/differences.md)."""
    pd = pytest.importorskip("pandas")
    ser = pd.Series([1.0, 2.0, 4.0])
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    df["m"] = tnp.mean(ser)
    assert df["m"].dtype == np.float64 and df["m"].tolist() == [7 / 3] * 3
    assert pd.Series([tnp.float64(1.0), tnp.float64(2.5)]).dtype == np.float64
    x = tnp.asarray([1.0, 2.0, 3.0])
    df["x"] = x                                               # a tnp array: float
    assert df["x"].dtype == np.float64
    df["s"] = [v.item() for v in x]                           # the workaround for Scalars
    assert df["s"].dtype == np.float64
    df["t"] = tnp.asarray([v for v in x])
    assert df["t"].dtype == np.float64
    assert pd.Series(list(x)).dtype == object                 # pinned: see the docstring


def test_the_pylevel_benchmark_runs_and_agrees_with_numpy(tmp_path):
    """A smoke run of benchmarks/pylevel.py (no timing asserted): every statement's value, in
    loops over tnp arrays of both dtypes, is NumPy's."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "pylevel.json"
    r = subprocess.run([sys.executable, str(root / "benchmarks" / "pylevel.py"), "--repeats", "1",
                        "--target-ms", "0.2", "--sizes", "8", "--no-affinity", "--json-out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert {(row["dtype"], row["case"]) for row in data["rows"]} >= {("int64", "sum(v)"),
                                                                    ("float64", "a[1] = 2")}
    assert all(row["same_result"] for row in data["rows"])
