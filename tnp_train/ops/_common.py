"""Helpers shared by the convolution and pooling kernels: the Numba switch (``_njit``), the
backend array of an argument and the wrapping of a result, the compute/result dtypes,
``LazyGrads`` (gradients computed when the tape reads them), where a gradient may be written
(``destination``) and the pool of scratch buffers.
Their backward passes follow ``tnp_train.autodiff.tape.hand_written_backward``."""
from __future__ import annotations

import sys as _sys
import threading

import numpy as _np

import tnp
from tnp import ndarray as _tnp_ndarray
from tnp import get_default_device
from tnp.extend import (
    array_module as _array_module, backend_array as _backend, cupy, device_of as _device_of,
    is_inexact, wrap as _wrap,
)

from ..autodiff.tape import gradient_destination

try:  # pragma: no cover - numba is a dependency, the fallback keeps CuPy-only hosts working
    import numba as _numba
    _njit = _numba.njit(cache=True)
    HAVE_NUMBA = True
except Exception:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False

    def _njit(f):
        return f


# ----------------------------------------------------------------------------- backend helpers
def device_of(a):
    """The device of ``a`` (the default device for NumPy arrays and lists) and its ``xp``."""
    dev = _device_of(a) if isinstance(a, tnp.ndarray) else get_default_device()
    return dev, _array_module(dev)


def on_device(a, dev, xp, dt=None, who="layer", strict=True):
    """``a`` as a backend array (of dtype ``dt`` if given) on ``dev``; None stays None. A tnp
    array on another device is an error when ``strict`` (differentiated inputs), else it moves
    (masks, statistics, cotangents); NumPy arrays move to ``dev``."""
    if a is None:
        return None
    if isinstance(a, tnp.ndarray):
        if _device_of(a) is not dev:
            if strict:
                raise ValueError(f"{who}: inputs on {dev}, but an operand of shape "
                                 f"{tuple(a.shape)} is on {_device_of(a)}")
            a = a.to_device(dev)
        a = _backend(a)
        return a if dt is None else a.astype(dt, copy=False)
    return xp.asarray(a) if dt is None else xp.asarray(a, dtype=dt)


def work_dtype(*arrays):
    """float64 when any input is float64, else float32 (16-bit inputs compute in float32);
    ``None`` entries are skipped."""
    for a in arrays:
        if a is not None and _np.dtype(a.dtype) == _np.float64:
            return _np.dtype(_np.float64)
    return _np.dtype(_np.float32)


@_njit
def _add_rows(a, indices, values):
    """a[indices[i]] += values[i] for each i in order (what ``numpy.add.at`` does, row-wise)."""
    n = a.shape[0]
    for i in range(indices.shape[0]):
        k = indices[i]
        if k < 0:
            k += n
        row = a[k]
        v = values[i]
        for j in range(row.shape[0]):
            row[j] += v[j]


def scatter_add(xp, a, indices, values):
    """``a[indices] += values`` accumulating repeated indices, in place, with ``xp``
    (``numpy.add.at``; ``cupyx.scatter_add`` for CuPy). Rows of a 2-D float table gathered by a
    1-D index (an Embedding's gradient) take one Numba loop over the rows, in index order as
    ``add.at`` does (so the same sums), several times faster than ``add.at``'s element loop."""
    if xp is cupy():  # pragma: no cover - GPU only
        import cupyx

        cupyx.scatter_add(a, indices, values)
    elif (xp is _np and HAVE_NUMBA and a.ndim == 2 and getattr(indices, "ndim", 0) == 1
          and indices.dtype.kind in "iu" and a.dtype == values.dtype
          and a.dtype in (_np.float32, _np.float64) and a.flags.c_contiguous
          and a.flags.writeable and values.shape == (indices.shape[0], a.shape[1])
          and indices.size and -a.shape[0] <= indices.min() and indices.max() < a.shape[0]):
        _add_rows(a, _np.ascontiguousarray(indices, dtype=_np.int64),
                  _np.ascontiguousarray(values))
    else:
        xp.add.at(a, indices, values)


def _unwrap(x):
    """(backend array, device or None, array module)."""
    if isinstance(x, _tnp_ndarray):
        dev = _device_of(x)
        return _backend(x), dev, _array_module(dev)
    if isinstance(x, _np.ndarray):
        return x, None, _np
    xp = _array_module(x)
    if xp is not _np:  # pragma: no cover - GPU only: a CuPy array
        return x, None, xp
    return _np.asarray(x), None, _np


def _out(r, dev):
    return _wrap(r, dev) if dev is not None else tnp.asarray(r)


def compute_dtype(*dtypes):
    """float64 if any input is float64, else float32 (float16/bfloat16/ints compute in float32)."""
    return _np.dtype(_np.float64) if any(_np.dtype(d) == _np.float64 for d in dtypes) else \
        _np.dtype(_np.float32)


def result_dtype(*dtypes):
    try:
        dt = _np.result_type(*dtypes)
    except TypeError:  # ml_dtypes mixes that NumPy does not promote
        dt = compute_dtype(*dtypes)
    return dt if is_inexact(dt) else _np.dtype(_np.float32)


def destination(x, shape, dtype):
    """Where a hand-written backward may write the final gradient of its input ``x`` (a
    strategy's all-reduce bucket: ``gradient_destination``), if that is a writable C-ordered
    NumPy array of this shape and dtype; else None (the gradient is returned as usual)."""
    d = gradient_destination(x)
    if (type(d) is _np.ndarray and d.shape == tuple(shape) and d.dtype == dtype
            and d.flags.c_contiguous and d.flags.writeable):
        return d
    return None


class LazyGrads(list):
    """The value of a ``grad_fn``: entries are computed when the tape reads them (it reads only
    the inputs it follows), then kept. Iterating computes them all."""

    def __init__(self, fns):
        super().__init__([None] * len(fns))
        self._fns = list(fns)
        self._done = [False] * len(fns)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not self._done[i]:
            fn = self._fns[i]
            list.__setitem__(self, i, None if fn is None else fn())
            self._done[i] = True
            self._fns[i] = None
        return list.__getitem__(self, i)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


# ----------------------------------------------------------------------------- scratch buffers
_scratch_lock = threading.Lock()
_scratch: dict = {}             # (shape, dtype) -> buffers, least recently used key first
_SCRATCH_PER_KEY = 3
# The pool keeps at most this many bytes: beyond it, the buffers of the keys used least
# recently leave the pool (those still in use stay with their holders), so a run through many
# shapes does not keep a buffer of each.
SCRATCH_MAX_BYTES = 512 << 20
_scratch_bytes = [0]


def _scan(bufs, free_refs, seen):
    for b in bufs:
        n = _sys.getrefcount(b)
        seen.append(n)
        if n == free_refs:
            return b
    return None


def _calibrate():
    """The reference count :func:`_scan` sees for a buffer held by nothing but the pool (it
    depends on the interpreter: CPython 3.14 borrows loop references)."""
    seen = []
    _scan([_np.empty(1)], -1, seen)
    return seen[0]


_FREE_REFS = _calibrate()


def scratch(shape, dtype):
    """An uninitialised NumPy array, reused across calls once nothing else holds it (the
    patch matrices are large: reusing them saves the page faults of fresh allocations). A
    buffer still referenced anywhere (a tape's saved cols, a view of it) is never handed out."""
    key = (tuple(shape), _np.dtype(dtype).str)
    with _scratch_lock:
        bufs = _scratch.pop(key, None)
        if bufs is None:
            bufs = []
        _scratch[key] = bufs             # now the most recently used key
        b = _scan(bufs, _FREE_REFS, [])
        if b is not None:
            return b
        b = _np.empty(shape, dtype=dtype)
        if len(bufs) < _SCRATCH_PER_KEY and b.nbytes <= SCRATCH_MAX_BYTES:
            bufs.append(b)
            _scratch_bytes[0] += b.nbytes
            while _scratch_bytes[0] > SCRATCH_MAX_BYTES:
                oldest = next(iter(_scratch))
                _scratch_bytes[0] -= sum(x.nbytes for x in _scratch.pop(oldest))
        return b


def zeroed(shape, dtype):
    """:func:`scratch`, filled with zeros."""
    b = scratch(shape, dtype)
    b.fill(0)
    return b


def clear_scratch():
    """Drop the cached scratch buffers."""
    with _scratch_lock:
        _scratch.clear()
        _scratch_bytes[0] = 0
