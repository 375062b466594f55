"""Small helpers shared by the layers' kernels (attention, embedding, normalization,
recurrent): the working dtype, and the device and array module (``xp``: NumPy or CuPy) an op
runs on."""
import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, device_of as _device_of
from tnp import get_default_device

__all__ = ["work_dtype", "device_of", "on_device", "scatter_add"]


def device_of(a):
    """The device of ``a`` (the default device for NumPy arrays and lists) and its ``xp``."""
    dev = _device_of(a) if isinstance(a, tnp.ndarray) else get_default_device()
    return dev, dev.backend.xp


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


def scatter_add(xp, a, indices, values):
    """``a[indices] += values`` accumulating repeated indices, in place, with ``xp``
    (``numpy.add.at``; ``cupyx.scatter_add`` for CuPy)."""
    if getattr(xp, "__name__", "") == "cupy":  # pragma: no cover - GPU only
        import cupyx

        cupyx.scatter_add(a, indices, values)
    else:
        xp.add.at(a, indices, values)
