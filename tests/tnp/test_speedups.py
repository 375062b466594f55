"""The C base of tnp.ndarray (tnp/_core/_speedups.c) against the Python methods it accelerates,
and the pure-Python fallback in a fresh process."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
from tnp._core import ndarray as nd

KEYS = [0, -1, slice(1, 5), slice(None, None, -2), (1, slice(None)), (slice(None), 2),
        (None, 1), Ellipsis, (Ellipsis, 0), (slice(0, 2), None, slice(1, 3)), ()]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_matches_numpy_and_the_python_method(key):
    a = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    x = tnp.asarray(a)
    got = x[key]
    ref = a[key]
    py = nd.ndarray._getitem_py(x, key)
    assert type(got) is type(py)
    assert np.asarray(got).dtype == ref.dtype and np.shape(got) == np.shape(ref)
    np.testing.assert_array_equal(np.asarray(got), ref)
    if isinstance(got, tnp.ndarray) and got.ndim:
        got[...] = -1                      # a view: writes show in the base, as in NumPy
        assert (a[key] == -1).all()


@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["float32", "int64", "bool"]))
@settings(max_examples=40, deadline=None)
def test_T_and_reshape_match_numpy(r, c, dt):
    a = np.arange(r * c).astype(dt)
    x = tnp.asarray(a)
    for got, ref in [(x.reshape(r, c).T, a.reshape(r, c).T), (x.reshape((c, r)), a.reshape((c, r))),
                     (x.reshape(-1, 1), a.reshape(-1, 1)), (x.T, a.T),
                     (x.reshape(r, c, order="F"), a.reshape(r, c, order="F"))]:
        assert type(got) is tnp.ndarray and got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_array_equal(np.asarray(got), ref)
        assert np.shares_memory(np.asarray(got), a) == np.shares_memory(ref, a)


def test_errors_are_numpys():
    x = tnp.arange(6.0)
    with pytest.raises(IndexError):
        x[6]
    with pytest.raises(ValueError):
        x.reshape(4, 2)
    with pytest.raises(TypeError):
        x.reshape(2, 3, bogus=1)
    with pytest.raises(IndexError):
        x[1, 2]


def test_subclasses_and_the_tape_take_the_python_path():
    class Sub(tnp.ndarray):
        seen = []

        def __array_finalize__(self, obj):
            Sub.seen.append(type(obj).__name__)

    s = tnp.arange(6.0).view(Sub)
    Sub.seen.clear()
    assert type(s[1:3]) is Sub and type(s.T) is Sub and type(s.reshape(2, 3)) is Sub
    assert len(Sub.seen) == 3
    import tnp_train as tt
    v = tt.Variable(np.arange(6.0))
    with tt.GradientTape() as tape:
        y = tnp.sum(v.reshape(2, 3).T[1:] ** 2)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, v)), [0, 2, 4, 0, 8, 10])
    w = tnp.arange(6.0)
    with tt.GradientTape() as tape:
        tape.watch(w)
        y = tnp.sum(w.reshape(3, 2).T[0] * 3)        # a plain array, watched: recorded too
    np.testing.assert_allclose(np.asarray(tape.gradient(y, w)), [3, 0, 3, 0, 3, 0])


def test_pure_python_fallback_gives_the_same_results():
    code = ("import numpy as np, tnp; from tnp._core import ndarray as nd; assert not nd.SPEEDUPS; "
            "x = tnp.arange(12.0); a = np.arange(12.0); "
            "assert np.array_equal(np.asarray(x.reshape(3, 4).T[1:, ::2]), a.reshape(3, 4).T[1:, ::2]); "
            "print('pure ok')")
    env = dict(os.environ, TNP_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pure ok" in out.stdout


@pytest.mark.skipif(not nd.SPEEDUPS, reason="the C base is not built")
def test_wrap_in_c_is_the_python_wrap():
    """``wrap``, which every fast path returns through, is a C function in the C build: it gives
    what the Python definition gives, for every kind of backend result."""
    import ml_dtypes

    cpu, cpu1 = tnp.device("cpu"), tnp.device("cpu:1")
    a = np.arange(3.0)
    cases = [a, a[1:], np.float64(2.5), np.int8(-3), np.bool_(True), np.complex64(1j),
             np.asarray([1.0], dtype=ml_dtypes.bfloat16)[0], np.str_("s"), np.bytes_(b"b"),
             np.zeros(1, dtype="i4,f4")[0], np.asarray(2.0), a.view(type("Sub", (np.ndarray,), {})),
             (a, np.float64(1.0)), [np.int64(1), a], 7, "text", None]
    for r in cases:
        for dev in (cpu, cpu1):
            got, ref = nd.wrap(r, dev), nd._wrap_in_python(r, dev)
            assert type(got) is type(ref), (r, got, ref)
            if isinstance(ref, tnp.ndarray):
                assert got._a is ref._a is r and got.device is ref.device is dev
            elif isinstance(ref, (tuple, list)):
                assert [type(x) for x in got] == [type(x) for x in ref]
                assert all(x._a is y._a for x, y in zip(got, ref) if isinstance(y, tnp.ndarray))
            else:
                assert got is ref is r
    with pytest.raises(TypeError):
        nd.wrap(a)


@pytest.mark.skipif(not nd.SPEEDUPS, reason="the C base is not built")
def test_bump_version_in_c_counts_what_the_python_one_counts():
    """Each write through tnp bumps the counter of the buffer's root, shared by its views; the
    C ``bump_version`` and the Python one count on the same counters."""
    base = np.arange(12.0)
    view, view2, other = base[2:], base.reshape(3, 4)[1:], np.zeros(3)
    counts = []
    for bump in (nd.bump_version, nd._bump_version_in_python, nd.bump_version):
        for a in (base, view, view2):
            bump(a)
        counts.append((nd.version_of(base), nd.version_of(view2), nd.version_of(other)))
    assert counts == [(3, 3, 0), (6, 6, 0), (9, 9, 0)]
    s = np.float64(1.0)
    nd.bump_version(s)                  # a NumPy scalar has no counter (a tnp scalar is immutable)
    assert nd.version_of(s) == 0
