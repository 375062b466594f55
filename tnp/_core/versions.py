"""Backend array types other than NumPy's, and the write counter of each backend buffer.

A counter per buffer, keyed by the buffer's root array (what an array and all its views share),
counts the in-place writes made through tnp, so a gradient tape can tell that an array it saved
was overwritten. ``ndarray`` re-exports these (and swaps in the C base's ``bump_version``)."""
from __future__ import annotations

import weakref

import numpy as _np

_nda = _np.ndarray
_generic = _np.generic

# Backend array types other than NumPy's (CuPy's, once it is loaded).
_gpu_types: list = []


def _register_gpu_type(t):
    if t not in _gpu_types:
        _gpu_types.append(t)


# One counter per backend buffer, keyed by the buffer's root array, so an array and all its
# views share it without any per-array bookkeeping on the fast path.
_versions: dict = {}


def _root(a):
    b = a.base
    while b is not None and (type(b) is _nda or isinstance(b, (_nda, *_gpu_types))):
        a = b
        b = a.base
    return a


def bump_version(a):
    """Record an in-place write to backend array ``a`` (and so to all its views)."""
    if isinstance(a, _generic):
        return
    r = _root(a)
    k = id(r)
    e = _versions.get(k)
    if e is not None and e[1]() is r:
        e[0] += 1
    else:
        _versions[k] = [1, weakref.ref(r, lambda _w, k=k: _versions.pop(k, None))]


def version_of(a):
    """The write count of the buffer under backend array ``a`` (0 for scalars)."""
    r = a if a.base is None else _root(a)  # most arrays own their memory; NumPy scalars too
    e = _versions.get(id(r))
    return e[0] if e is not None and e[1]() is r else 0
