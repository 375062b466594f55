"""``tnp.testing`` against ``numpy.testing``: every assert accepts tnp arrays and passes, or fails
with NumPy's exception and NumPy's message, where ``numpy.testing`` does for NumPy arrays (two
dtypes, two shapes); asserts that call a function give it the tnp arrays themselves; the helpers,
context managers, exception classes and constants of ``numpy.testing`` behave identically."""
import os
import sys
import unittest
import warnings

import numpy as np
import pytest

import tnp
from tnp.testing import both

DTYPES = ["int32", "float64"]
SHAPES = [(3,), (2, 2)]


def _pair(xp, dtype, shape, delta):
    a = xp.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    return a, a + xp.asarray(delta, dtype=dtype)


def outcome(call):
    """What ``call()`` did: ('ok', result) or (exception type name, message)."""
    try:
        r = call()
        # a result array (assert_array_max_ulp's) is NumPy's on both sides
        return "ok", r.tolist() if isinstance(r, (np.ndarray, tnp.ndarray)) else r
    except Exception as e:  # noqa: BLE001 (compared between NumPy and tnp)
        return type(e).__name__, str(e)


# name -> (delta that passes, delta that fails, extra keywords)
ARRAY_ASSERTS = {
    "assert_equal": (0, 1, {}),
    "assert_array_equal": (0, 1, {}),
    "assert_almost_equal": (0, 1, {"decimal": 3}),
    "assert_array_almost_equal": (0, 1, {"decimal": 3}),
    "assert_allclose": (0, 1, {"rtol": 1e-3}),
    "assert_array_less": (1, 0, {}),
    "assert_array_almost_equal_nulp": (0, 1, {"nulp": 1}),
    "assert_array_max_ulp": (0, 1, {"maxulp": 1}),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ARRAY_ASSERTS))
def test_array_asserts_accept_tnp_arrays(name, dtype, shape):
    ok, bad, kw = ARRAY_ASSERTS[name]
    if name in ("assert_array_almost_equal_nulp", "assert_array_max_ulp") and dtype == "int32":
        dtype = "float32"
    both(lambda xp: outcome(lambda: getattr(xp.testing, name)(*_pair(xp, dtype, shape, ok), **kw)))
    both(lambda xp: outcome(lambda: getattr(xp.testing, name)(*_pair(xp, dtype, shape, bad), **kw)))
    both(lambda xp: outcome(lambda: getattr(xp.testing, name)(*_pair(xp, dtype, shape, bad),
                                                              err_msg="context", **kw)))


def test_every_assert_is_swept():
    swept = set(ARRAY_ASSERTS) | {"assert_approx_equal", "assert_string_equal", "assert_",
                                  "assert_raises", "assert_raises_regex", "assert_warns",
                                  "assert_no_warnings", "assert_array_compare",
                                  "assert_no_gc_cycles"}
    assert {n for n in np.testing.__all__ if n.startswith("assert_")} == swept


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_and_string_asserts(dtype):
    both(lambda xp: outcome(lambda: xp.testing.assert_approx_equal(
        xp.asarray(1.0001, dtype="float64"), 1.0, significant=3)))
    both(lambda xp: outcome(lambda: xp.testing.assert_approx_equal(
        float(xp.asarray([1.5], dtype=dtype)[0]), 1.0, significant=3)))
    both(lambda xp: outcome(lambda: xp.testing.assert_string_equal("abc\n", "abc\n")))
    both(lambda xp: outcome(lambda: xp.testing.assert_string_equal("abc\n", "abd\n")))
    both(lambda xp: outcome(lambda: xp.testing.assert_(bool(xp.ones(2, dtype=dtype).all()))))
    both(lambda xp: outcome(lambda: xp.testing.assert_(xp.zeros(1, dtype=dtype)[0], "zero")))
    both(lambda xp: outcome(lambda: xp.testing.assert_equal({"a": xp.ones(2, dtype=dtype)},
                                                            {"a": xp.ones(2, dtype=dtype)})))
    both(lambda xp: outcome(lambda: xp.testing.assert_equal([xp.ones(2, dtype=dtype), 1],
                                                            [xp.zeros(2, dtype=dtype), 1])))
    both(lambda xp: outcome(lambda: xp.testing.assert_equal({"a": [xp.ones(2, dtype=dtype)]},
                                                            {"a": [xp.ones(3, dtype=dtype)]})))
    both(lambda xp: outcome(lambda: xp.testing.assert_allclose([[xp.ones(2, dtype=dtype)]],
                                                               [[xp.ones(2, dtype=dtype)]])))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_assert_array_compare(dtype, shape):
    import operator
    both(lambda xp: outcome(lambda: xp.testing.assert_array_compare(
        operator.__le__, *_pair(xp, dtype, shape, 0))))
    both(lambda xp: outcome(lambda: xp.testing.assert_array_compare(
        operator.__lt__, *_pair(xp, dtype, shape, 0), header="not less")))


def test_calling_asserts_give_the_function_tnp_arrays():
    def body(xp):
        seen = []

        def f(a):
            seen.append(type(a) is xp.ndarray)
            return a.reshape(5)                                # ValueError: size 6
        x = xp.arange(6)
        xp.testing.assert_raises(ValueError, f, x)
        xp.testing.assert_raises_regex(ValueError, "reshape|size", f, x)
        with xp.testing.assert_raises(ZeroDivisionError):
            1 / 0
        r = xp.testing.assert_no_warnings(lambda a: a * 2, x)
        with pytest.warns(DeprecationWarning):                 # deprecated in NumPy 2.4
            w = xp.testing.assert_warns(RuntimeWarning, xp.log, xp.asarray([-1.0]))
        return seen, r, w
    both(body)
    both(lambda xp: outcome(lambda: xp.testing.assert_raises(ValueError, xp.ones, 3)))

    def gc_cycles(xp):
        xp.testing.assert_no_gc_cycles(lambda: (xp.arange(10) * 2).sum())
        with xp.testing.assert_no_gc_cycles():
            y = xp.linspace(0, 1, 5)[1:] + 1
        return y
    both(gc_cycles)

    def makes_a_cycle(xp):
        def f():
            a = [xp.ones(2)]
            a.append(a)
        return outcome(lambda: xp.testing.assert_no_gc_cycles(f))[0]   # the message holds ids
    both(makes_a_cycle)


def test_helpers():
    def err_msg(xp, dtype):
        a = xp.asarray([1.5, 2.0], dtype=dtype)
        return (xp.testing.build_err_msg([a, a + 1], "oops", verbose=xp.testing.verbose > -1),
                xp.testing.build_err_msg([a], "", names=("X",), precision=2))
    both(err_msg, "float32")
    both(err_msg, "float64")

    def printer(xp):
        xp.testing.print_assert_equal("t", [1, 2], [1, 2])
        return outcome(lambda: xp.testing.print_assert_equal("t", {"a": 1}, {"a": 2}))
    both(printer)

    def run(xp):
        d = {"xp": xp}
        xp.testing.runstring("r = (xp.arange(4) * 3).sum()\nq = xp.ones((2, 2)).shape", d)
        return d["r"], d["q"], outcome(lambda: xp.testing.runstring("1/0", {}))
    both(run)

    def decorate(xp):
        calls = []

        class T:
            def test_a(self):
                return xp.arange(3) + 1

            def helper(self):
                return xp.zeros(1)

        def deco(f):
            def g(*a):
                calls.append(f.__name__)
                return f(*a)
            return g
        xp.testing.decorate_methods(T, deco)
        t = T()
        return t.test_a(), t.helper(), calls
    both(decorate)


def test_exception_classes_and_test_case():
    def body(xp):
        out = []
        for cls in (xp.testing.IgnoreException, xp.testing.KnownFailureException,
                    xp.testing.SkipTest):
            try:
                raise cls("x")
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, issubclass(cls, Exception), str(e)))
        out.append(xp.testing.SkipTest is unittest.SkipTest)

        class Case(xp.testing.TestCase):
            def test_ok(self):
                xp.testing.assert_array_equal(xp.arange(3), [0, 1, 2])

            def test_fail(self):
                xp.testing.assert_array_equal(xp.arange(3), [0, 1, 3])

            def test_skip(self):
                raise xp.testing.SkipTest("later")
        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(Case).run(result)
        out.append((result.testsRun, len(result.failures), len(result.skipped)))
        return out
    both(body)


def test_warning_context_managers():
    def clear(xp):
        with xp.testing.clear_and_catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            xp.log(xp.asarray([-1.0, 1.0], dtype="float32"))
            xp.sqrt(xp.asarray([-4.0]))
        return [(x.category.__name__, str(x.message)) for x in w]
    both(clear)

    def suppress(xp):
        with pytest.warns(DeprecationWarning):                 # deprecated in NumPy 2.4
            sup = xp.testing.suppress_warnings()
        with sup:
            log = sup.record(RuntimeWarning)
            r = xp.log(xp.asarray([-1.0, 2.0]))
        return r, [str(x.message) for x in log]
    both(suppress)


def test_temporary_paths():
    def body(xp, dtype):
        with xp.testing.temppath(suffix=".npy") as p:
            xp.save(p, xp.arange(4, dtype=dtype))
            a = xp.load(p)
            existed = os.path.exists(p)
        with xp.testing.tempdir() as d:
            xp.savetxt(os.path.join(d, "t.txt"), xp.ones((2, 2), dtype=dtype))
            t = xp.loadtxt(os.path.join(d, "t.txt"))
            listed = os.listdir(d)
        return a, t, existed, os.path.exists(p), os.path.exists(d), listed
    both(body, "int16")
    both(body, "float32")


def test_constants_and_platform_facts():
    def body(xp):
        facts = (xp.testing.IS_PYPY, xp.testing.HAS_REFCOUNT, xp.testing.IS_WASM,
                 xp.testing.HAS_LAPACK64, xp.testing.IS_PYSTON, xp.testing.IS_MUSL,
                 xp.testing.NOGIL_BUILD, xp.testing.IS_EDITABLE, xp.testing.IS_INSTALLED,
                 str(xp.testing.NUMPY_ROOT), xp.testing.IS_64BIT, xp.testing.BLAS_SUPPORTS_FPE,
                 xp.testing.verbose, xp.testing.check_support_sve())
        # the facts steer real checks, as NumPy's own tests use them
        refs = sys.getrefcount(xp.ones(2)) > 0 if xp.testing.HAS_REFCOUNT else None
        width = xp.asarray([0], dtype=xp.intp).dtype.itemsize == (8 if xp.testing.IS_64BIT else 4)
        lapack = xp.linalg.inv(xp.eye(3)).dtype.name if not xp.testing.HAS_LAPACK64 else "ilp64"
        with xp.errstate(over="raise"):
            fpe = outcome(lambda: xp.asarray([1e300]) @ xp.asarray([1e300]))[0] \
                if xp.testing.BLAS_SUPPORTS_FPE else None
        return facts, refs, width, lapack, fpe
    both(body)


def test_break_cycles():
    def body(xp):
        import weakref

        class Node:
            pass
        n = Node()
        n.self = n
        n.data = xp.arange(3)
        ref = weakref.ref(n)
        del n
        xp.testing.break_cycles()
        return ref() is None, xp.testing.break_cycles() is None
    both(body)


def test_run_threaded():
    def body(xp, dtype):
        results = []

        def work(i):
            a = xp.arange(100, dtype=dtype) * i
            results.append((i, a.sum(), xp.sort(a[::-1])[:3]))
        xp.testing.run_threaded(work, max_workers=4, pass_count=True)
        return sorted(results, key=lambda r: r[0])
    both(body, "int64")
    both(body, "float32")


def test_overrides():
    def body(xp):
        ov = xp.testing.overrides
        ufuncs = sorted(u.__name__ for u in ov.get_overridable_numpy_ufuncs()
                        if not u.__name__.startswith("_") and hasattr(np, u.__name__))
        funcs = ov.get_overridable_numpy_array_functions()
        top = sorted(f.__name__ for f in funcs if f.__module__ == "numpy")
        lin = sorted(f.__name__ for f in funcs if f.__module__ == "numpy.linalg")
        # every overridable NumPy function and ufunc is in this namespace
        return ([n for n in ufuncs if hasattr(xp, n)], [n for n in top if hasattr(xp, n)],
                [n for n in lin if hasattr(xp.linalg, n)],
                ov.allows_array_function_override(np.mean), ov.allows_array_ufunc_override(np.add))
    both(body)
