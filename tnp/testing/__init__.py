"""``tnp.testing``: a superset of ``numpy.testing`` whose asserts accept tnp arrays.

Every ``numpy.testing`` assert is wrapped to convert tnp arguments to NumPy first. Extras for
differential tests: :func:`assert_same` (values, dtype and shape, NumPy vs tnp) lives in
``tnp.testing.differential``.
"""
from __future__ import annotations

import functools

import numpy as _np
import numpy.testing as _npt

from .._core.ndarray import ndarray


def _holds_tnp(x):
    if isinstance(x, ndarray):
        return True
    if type(x) in (list, tuple):
        return any(_holds_tnp(e) for e in x)
    if type(x) is dict:
        return any(_holds_tnp(v) for v in x.values())
    return False


def _host(x):
    """tnp arrays -> NumPy arrays, also inside (nested) lists, tuples and dicts, as
    ``numpy.testing.assert_equal`` compares those item by item."""
    if isinstance(x, ndarray):
        return _np.asarray(x.to_device("cpu")) if x.device.kind != "cpu" else _np.asarray(x)
    if not _holds_tnp(x):
        return x
    if type(x) is dict:
        return {k: _host(v) for k, v in x.items()}
    return type(x)(_host(e) for e in x)


def _accepting_tnp(f):
    @functools.wraps(f)
    def g(*args, **kwargs):
        return f(*[_host(a) for a in args], **{k: _host(v) for k, v in kwargs.items()})
    return g


# asserts that call a function with the given arguments (``assert_raises(E, f, x)``): ``f`` must
# get the tnp arrays themselves, or the assert would test NumPy instead of tnp
_CALLING = {"assert_raises", "assert_raises_regex", "assert_warns", "assert_no_warnings",
            "assert_no_gc_cycles"}

__all__ = list(_npt.__all__)
for _n in __all__:
    _obj = getattr(_npt, _n)
    if callable(_obj) and _n.startswith("assert_") and _n not in _CALLING:
        globals()[_n] = _accepting_tnp(_obj)
    else:
        globals()[_n] = _obj

from .differential import assert_same, both  # noqa: E402

__all__ += ["assert_same", "both"]
