"""Array creation routines (NumPy reference: "Array creation routines").

Creation functions take ``device=`` (a tnp device or its name) and ``like=``; without them
arrays are created on the default device (``tnp.default_device``). ``*_like`` functions create
on the prototype's device.
"""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_functions, composite
from .._core.ndarray import _BASEW, ndarray, wrap
from .._core.devices import device as _device, get_default_device

SECTION = "creation"

CREATION = [
    # from shape or value
    "empty", "empty_like", "eye", "identity", "ones", "ones_like", "zeros", "zeros_like",
    "full", "full_like",
    # from existing data
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite",
    "require", "frombuffer", "fromfile", "fromfunction", "fromiter", "fromstring",
    # numerical ranges
    "arange", "linspace", "logspace", "geomspace", "meshgrid", "indices",
    # building matrices
    "diagflat", "tri", "vander",
    # window functions
    "bartlett", "blackman", "hamming", "hanning", "kaiser",
]
FUNCTIONS = ["copy", "diag", "tril", "triu"]

__all__ = make_functions(CREATION, SECTION, globals(), kind="creation")
__all__ += make_functions(FUNCTIONS, SECTION, globals())


@composite("from_dlpack", SECTION)
def from_dlpack(x, /, *, device=None, copy=None):
    """tnp.from_dlpack: an array sharing memory with any DLPack producer (NumPy, CuPy, PyTorch)."""
    if isinstance(x, ndarray):
        # a new array over the same memory: NumPy's from_dlpack never answers with its input,
        # nor is its result's base the input (a tape records the view, so gradients flow)
        r = x if device is None else x.to_device(device)
        if copy:
            return r.copy()
        v = r.view(type=ndarray)     # (a plain array, as NumPy's from a subclass)
        _BASEW.__set__(v, None)
        return v
    dev_type, dev_id = x.__dlpack_device__()
    kwargs = {} if copy is None else {"copy": copy}
    if int(dev_type) == 2:  # kDLCUDA
        dev = _device(f"gpu:{dev_id}")
        a = dev.backend.xp.from_dlpack(x, **kwargs)
    else:
        dev = get_default_device() if get_default_device().kind == "cpu" else _device("cpu")
        a = _np.from_dlpack(x, **kwargs)
    r = wrap(a, dev)
    if device is not None:
        r = r.to_device(device)
    return r


__all__ += ["from_dlpack"]
