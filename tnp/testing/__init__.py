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


def _host(x):
    if isinstance(x, ndarray):
        return _np.asarray(x.to_device("cpu")) if x.device.kind != "cpu" else _np.asarray(x)
    if isinstance(x, (list, tuple)) and any(isinstance(e, ndarray) for e in x):
        return type(x)(_host(e) for e in x)
    return x


def _accepting_tnp(f):
    @functools.wraps(f)
    def g(*args, **kwargs):
        return f(*[_host(a) for a in args], **{k: _host(v) for k, v in kwargs.items()})
    return g


__all__ = list(_npt.__all__)
for _n in __all__:
    _obj = getattr(_npt, _n)
    if callable(_obj) and _n.startswith("assert_"):
        globals()[_n] = _accepting_tnp(_obj)
    else:
        globals()[_n] = _obj

from .differential import assert_same, both  # noqa: E402

__all__ += ["assert_same", "both"]
