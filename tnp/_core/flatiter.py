"""``tnp.flatiter``: the iterator of ``ndarray.flat``."""
from __future__ import annotations

import numpy as _np

from .ndarray import (
    _gpu_types, _index_key, _nda, bump_version, register_flatiter, to_backend, wrap_scalarize,
)


class flatiter:
    """``ndarray.flat``: a 1-d iterator over an array that reads and writes through."""

    __slots__ = ("base", "_i")

    def __init__(self, base):
        self.base = base
        self._i = 0  # the position, as NumPy's flatiter keeps one (``index``, ``coords``)

    def __iter__(self):
        return self

    def __next__(self):
        i = self._i
        if i >= self.base.size:
            raise StopIteration
        r = self[i]
        self._i = i + 1
        return r

    @property
    def index(self):
        return self._i

    def __len__(self):
        return self.base.size

    def __getitem__(self, key):
        self._i = 0  # indexing resets the iterator, as in NumPy
        a = self.base._a
        r = a.flat[_index_key(key, self.base._dev)]
        if a.dtype.kind == "O" and not isinstance(r, (_nda, *_gpu_types)):
            return r  # an object array's element itself, as NumPy gives it
        return wrap_scalarize(r, self.base._dev)

    def __setitem__(self, key, value):
        self._i = 0
        a = self.base._a
        a.flat[_index_key(key, self.base._dev)] = to_backend(value, self.base._dev)
        bump_version(a)

    def __array__(self, dtype=None, copy=None):
        return _np.asarray(self.base.ravel(), dtype=dtype)

    def copy(self):
        return self.base.flatten()

    @property
    def coords(self):
        shape, i = self.base.shape, self._i
        if i < self.base.size:
            return tuple(int(c) for c in _np.unravel_index(i, shape))
        if self.base.size == 0:
            return (0,) * len(shape)
        return tuple(shape[:1]) + (0,) * (len(shape) - 1)  # past the end: NumPy's carry


register_flatiter(flatiter)
