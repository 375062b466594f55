"""Differential-test helpers: run one body with ``xp=numpy`` and ``xp=tnp``, compare."""
from __future__ import annotations

import numpy as _np

from .._core.ndarray import ndarray, Scalar


def _to_numpy(x):
    if isinstance(x, ndarray):
        if x.device.kind != "cpu":
            x = x.to_device("cpu")
        return x._a
    return x


def assert_same(expected, got, *, rtol=0.0, atol=0.0, check_type=True, err_msg=""):
    """``got`` (from tnp) equals ``expected`` (from NumPy): values, dtype, shape; and the kind of
    object (array vs scalar vs other) matches. Tuples/lists are compared element-wise."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{err_msg}: expected a sequence, got {type(got)}"
        assert len(expected) == len(got), f"{err_msg}: lengths {len(expected)} != {len(got)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, rtol=rtol, atol=atol, check_type=check_type, err_msg=f"{err_msg}[{i}]")
        return
    if isinstance(expected, _np.ndarray):
        assert isinstance(got, ndarray) and not isinstance(got, Scalar), \
            f"{err_msg}: expected a tnp array, got {type(got).__name__}"
    elif isinstance(expected, _np.generic) and expected.dtype.kind not in "USVO":
        # a tnp scalar, or NumPy's own number where the call had no tnp array in (tnp returns
        # NumPy's number there; tests/tnp/test_scalars.py pins which calls give which)
        assert isinstance(got, Scalar) or type(got) is type(expected), \
            f"{err_msg}: expected a tnp scalar or {type(expected).__name__}, got {type(got).__name__}"
    g = _to_numpy(got)
    if isinstance(expected, (_np.ndarray, _np.generic)):
        assert _np.shape(g) == expected.shape, f"{err_msg}: shape {_np.shape(g)} != {expected.shape}"
        assert g.dtype == expected.dtype, f"{err_msg}: dtype {g.dtype} != {expected.dtype}"
        if rtol or atol:
            _np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol, err_msg=err_msg, equal_nan=True)
        else:
            _np.testing.assert_array_equal(g, expected, err_msg=err_msg, strict=True)
    else:
        if check_type:
            assert type(g) is type(expected), f"{err_msg}: type {type(g)} != {type(expected)}"
        if isinstance(expected, float) and expected != expected:
            assert g != g
        else:
            assert g == expected, f"{err_msg}: {g!r} != {expected!r}"


def both(fn, *args, rtol=0.0, atol=0.0, **kwargs):
    """Run ``fn(xp, *args, **kwargs)`` with NumPy and with tnp and compare results, or the
    exception type when NumPy raises. Returns the NumPy result."""
    import tnp

    try:
        expected = fn(_np, *args, **kwargs)
    except Exception as e:  # the same exception type must come from tnp
        etype = type(e)
        try:
            fn(tnp, *args, **kwargs)
        except Exception as e2:
            assert isinstance(e2, etype), f"numpy raised {etype.__name__}: {e}; tnp raised {type(e2).__name__}: {e2}"
            return e
        raise AssertionError(f"numpy raised {etype.__name__}: {e}; tnp raised nothing")
    got = fn(tnp, *args, **kwargs)
    assert_same(expected, got, rtol=rtol, atol=atol)
    return expected


def both_labelled(label, fn, *args, **kwargs):
    """:func:`both`, naming the case in the failure message (for loops over cases in one test)."""
    try:
        return both(fn, *args, **kwargs)
    except AssertionError as e:
        raise AssertionError(f"[{label}] {e}") from None


def same(fn, *arrays, **kw):
    """``fn(xp, *arrays)`` agrees between NumPy and tnp (values, dtype, shape, kind of result and
    of container, or the exception type), each array given as ``xp.array``."""
    import tnp

    results = {}

    def run(xp, *a):
        results[xp] = fn(xp, *[xp.array(x) for x in a])
        return results[xp]
    expected = both(run, *arrays, **kw)
    if tnp in results and isinstance(expected, (tuple, list)):
        assert type(results[tnp]).__name__ == type(expected).__name__, "different kinds of sequence"
    return expected


def same_on_cpu1(fn, *arrays):
    """``fn`` on tnp arrays on the fake device ``cpu:1`` gives NumPy's results, on ``cpu:1``."""
    import tnp

    expected = fn(_np, *arrays)
    got = fn(tnp, *[tnp.asarray(a, device="cpu:1") for a in arrays])
    assert_same(expected, got)
    for g in (got if isinstance(got, (tuple, list)) else [got]):
        assert g.device == tnp.device("cpu:1")
