"""Identity as NumPy's: calls NumPy answers with one of their inputs answer with the caller's
very object, a view's ``.base`` is the array it was made of (the same object each time, kept
alive by the view), and other libraries' overrides receive the objects the user passed."""
import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import tnp
import tnp.extend
from tnp._core import ndarray as ndmod

from _identity_sweep import subclass_sweep, sweep  # (tests/tnp is on sys.path: pytest prepends it)

HERE = os.path.dirname(__file__)


# ---------------------------------------------------------------------------- the sweep
def test_every_call_answers_as_numpy_does():
    rows, counts = sweep()
    differ = [f"{call}: numpy {w}, tnp {g}" for call, w, g in rows if w != g]
    assert not differ, f"{len(differ)} of {len(rows)} calls differ:\n" + "\n".join(differ[:30])
    # the sweep reaches the calls it is about (a pattern list that stopped matching would pass
    # vacuously): thousands of calls, hundreds answered with an input or a view of one
    assert counts["calls checked"] > 4000
    assert counts["NumPy returns an input"] > 500
    assert counts["NumPy returns a view of an input"] > 300


def test_subclass_results_are_numpys():
    """NumPy decides, call by call, which results are of a subclass (``__array_finalize__``
    called on them): tnp hands it a probe subclass and follows its answer."""
    rows, counts = subclass_sweep()
    differ = [f"{call}: numpy {w}, tnp {g}" for call, w, g in rows if w != g]
    assert not differ, f"{len(differ)} of {len(rows)} calls differ:\n" + "\n".join(differ[:30])
    assert counts["subclass calls checked"] > 600 and counts["NumPy gives the subclass"] > 300


@pytest.mark.skipif(not ndmod.SPEEDUPS, reason="the C base is not built")
def test_the_pure_python_build_answers_the_same():
    env = dict(os.environ, TNP_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, os.path.join(HERE, "_identity_sweep.py")], env=env,
                         capture_output=True, text=True, timeout=600, check=True).stdout
    counts = dict(line.split(": ") for line in out.strip().splitlines())
    assert counts["agreements"] == counts["calls checked"], out
    assert counts["subclass agreements"] == counts["subclass calls checked"], out


# ---------------------------------------------------------------------------- the cases users meet
def scaled(a, xp):
    b = xp.asarray(a)
    if b is a:          # the copy-avoidance idiom: copy only when asarray gave the input back
        b = b.copy()
    b *= 2
    return b


@pytest.mark.parametrize("xp", [np, tnp], ids=["numpy", "tnp"])
def test_the_copy_avoidance_idiom_leaves_the_callers_array_alone(xp):
    x = xp.arange(4)
    assert scaled(x, xp).tolist() == [0, 2, 4, 6]
    assert x.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("xp", [np, tnp], ids=["numpy", "tnp"])
def test_calls_that_answer_with_their_input(xp):
    x = xp.arange(6.0).reshape(2, 3).copy()
    b = xp.array([True, False])
    assert xp.asarray(x) is x
    assert xp.array(x, copy=False) is x
    assert xp.ascontiguousarray(x) is x
    assert xp.asanyarray(x) is x
    assert xp.atleast_1d(x) is x
    assert x.real is x and x.conj() is x and x.conjugate() is x
    assert b.conj() is b and b.conjugate() is b
    assert xp.conj(b).dtype == np.int8          # the function computes, as NumPy's does
    assert xp.fft.fft2(x, axes=()) is x
    assert x.astype(x.dtype, copy=False) is x
    y = x
    y += 1
    assert y is x


@pytest.mark.parametrize("xp", [np, tnp], ids=["numpy", "tnp"])
def test_a_views_base_is_the_array_it_was_made_of(xp):
    a = xp.arange(6.0)
    z = xp.arange(3.0) + 1j
    v = a.reshape(2, 3)
    assert v.base is a and v.base is v.base
    assert xp.real(z).base is z and z.imag.base is z
    assert xp.einsum("ij->ji", v).base is a          # a view of a view: collapsed to the owner
    assert v[1:].T[0].base is a
    assert a[::2].base is a and a[...].base is a
    assert xp.asarray(v).base is a
    assert a.base is None
    w = xp.linspace(0, 1, 4)[1:]                     # the owner was never named
    assert w.base is w.base and w[1:].base is w.base


@pytest.mark.parametrize("xp", [np, tnp], ids=["numpy", "tnp"])
def test_the_base_lives_as_long_as_its_views(xp):
    a = xp.arange(4.0)
    alive = weakref.ref(a)
    v = a[1:]
    del a
    gc.collect()
    assert alive() is not None and v.base is alive()
    del v
    gc.collect()
    assert alive() is None


def test_base_of_a_subclass_view_collapses_as_numpys():
    class N(np.ndarray):
        pass

    class T(tnp.ndarray):
        pass

    for xp, cls in ((np, N), (tnp, T)):
        owner = xp.arange(6.0)
        s = owner.view(cls)
        assert s.base is owner
        # NumPy collapses a view's base only through arrays of the view's own type
        assert s[1:].base is s
        t = s[1:]
        assert t[1:].base is s
        p = xp.asarray(s)                           # a plain array over s's memory
        assert type(p) is (np.ndarray if xp is np else tnp.ndarray) and p.base is owner
        assert xp.asanyarray(s) is s
        own = xp.ones(3).view(cls).copy()
        assert own[1:].base is own


def test_out_is_the_answer_only_where_the_function_wrote_it():
    # NumPy's FFTs give a new array, not ``out``, for an ``out`` of another shape
    for xp in (np, tnp):
        x = xp.linspace(0.1, 0.9, 6)
        r = xp.fft.hfft(x, out=x)
        assert r is not x and r.shape == (10,)
        np.testing.assert_allclose(np.asarray(r), np.fft.hfft(np.linspace(0.1, 0.9, 6)))
    y = tnp.zeros(3)
    assert tnp.add(tnp.ones(3), 1, out=y) is y and y.tolist() == [2.0, 2.0, 2.0]


def test_from_dlpack_is_a_new_array_over_the_same_memory():
    x = tnp.arange(3.0)
    y = tnp.from_dlpack(x)
    assert y is not x and tnp.shares_memory(x, y)
    assert np.from_dlpack(np.arange(3.0)) is not None


# ---------------------------------------------------------------------------- overrides
class Recorder:
    """Another library's array (xarray, dask, pint style): it answers ufuncs and functions
    itself and records what it was given."""

    def __init__(self):
        self.calls = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.calls.append((ufunc, method, inputs, kwargs))
        return "ufunc answered"

    def __array_function__(self, func, types, args, kwargs):
        self.calls.append((func, types, args, kwargs))
        return "function answered"


@pytest.mark.parametrize("call", [
    lambda x, o: tnp.add(x, o), lambda x, o: x + o, lambda x, o: np.add(x, o),
    lambda x, o: tnp.multiply(o, x), lambda x, o: o * x,
], ids=["tnp.add", "operator", "numpy.add", "tnp.multiply", "reflected operator"])
def test_ufunc_overrides_receive_the_users_objects(call):
    x, o = tnp.arange(3.0), Recorder()
    assert call(x, o) == "ufunc answered"
    ufunc, method, inputs, _ = o.calls[-1]
    assert ufunc in (np.add, np.multiply) and method == "__call__"   # NumPy's ufunc, as NumPy gives
    assert any(i is x for i in inputs) and any(i is o for i in inputs)


def test_ufunc_override_receives_a_tnp_output():
    x, o = tnp.arange(3.0), Recorder()
    v = tnp.extend.version(x)
    assert tnp.add(o, 1, out=x) == "ufunc answered"
    assert o.calls[-1][3]["out"][0] is x
    assert tnp.extend.version(x) == v + 1      # it was given x to write: a tape must know


def test_function_overrides_receive_the_users_objects():
    x, o = tnp.arange(3.0), Recorder()
    for call in (lambda: tnp.concatenate([x, o]), lambda: np.concatenate([x, o])):
        assert call() == "function answered"
        func, types, args, _ = o.calls[-1]
        assert func is np.concatenate and tnp.ndarray in types and Recorder in types
        assert args[0][0] is x and args[0][1] is o
