"""Indexing routines (NumPy reference: "Indexing routines"): generating index arrays,
indexing-like operations, inserting data into arrays (in place), iterating."""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_functions
from .._core.ndarray import wrap

SECTION = "indexing"

FUNCTIONS = ["take", "take_along_axis", "choose", "compress", "diagonal", "select",
             "ravel_multi_index", "unravel_index", "diag_indices_from", "mask_indices",
             "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from",
             "diag_indices", "ix_", "nested_iters"]
INPLACE = ["place", "put", "put_along_axis", "putmask", "fill_diagonal"]

__all__ = make_functions(FUNCTIONS, SECTION, globals())
__all__ += make_functions(INPLACE, SECTION, globals(), kind="inplace")



class _IndexBuilder:
    """``tnp.r_``/``c_``/``mgrid``/``ogrid``: NumPy's index-expression builders, results as tnp."""

    __slots__ = ("_np_obj", "_name")

    def __init__(self, np_obj, name):
        self._np_obj = np_obj
        self._name = name

    def __getitem__(self, key):
        from .._core.dispatch import _Ctx, _unwrap, _host, _move
        from .._core.devices import get_default_device

        ctx = _Ctx(self._name)
        k = _unwrap(key, ctx)
        dev = ctx.dev or get_default_device()
        if dev.kind == "cpu":
            return wrap(self._np_obj[k], dev)
        # NumPy's builders compute on the host; the result then moves to the device
        r = self._np_obj[_host(k)]
        with dev.backend.xp.cuda.Device(dev.index):
            return wrap(_move(r, dev), dev)

    def __len__(self):
        return len(self._np_obj)

    def __repr__(self):
        return f"tnp.{self._name}"


c_ = _IndexBuilder(_np.c_, "c_")
r_ = _IndexBuilder(_np.r_, "r_")
mgrid = _IndexBuilder(_np.mgrid, "mgrid")
ogrid = _IndexBuilder(_np.ogrid, "ogrid")
# s_ and index_exp build slices and tuples only: NumPy's own serve unchanged
s_, index_exp = _np.s_, _np.index_exp
__all__ += ["c_", "r_", "s_", "index_exp", "mgrid", "ogrid"]
