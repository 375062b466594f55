"""Small helpers shared by the layers' kernels (attention, embedding, normalization,
recurrent): the working dtype, and the device and array module (``xp``: NumPy or CuPy) an op
runs on."""
import numpy as _np

import tnp
from tnp.extend import array_module, backend_array as _backend, cupy, device_of as _device_of
from tnp import get_default_device

__all__ = ["work_dtype", "device_of", "on_device", "scatter_add"]


def device_of(a):
    """The device of ``a`` (the default device for NumPy arrays and lists) and its ``xp``."""
    dev = _device_of(a) if isinstance(a, tnp.ndarray) else get_default_device()
    return dev, array_module(dev)


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
    if xp is cupy():  # pragma: no cover - GPU only
        import cupyx

        cupyx.scatter_add(a, indices, values)
    else:
        xp.add.at(a, indices, values)


def add_option_weight(layer, name, shape, options=None, initializer=None, dtype=None):
    """``layer.add_weight(name, shape)`` with the layer's ``<options>_initializer``,
    ``_regularizer`` and ``_constraint`` (``options`` defaults to ``name``; ``initializer``
    replaces the layer's where given)."""
    options = options or name
    return layer.add_weight(name, shape, dtype=dtype,
                            initializer=getattr(layer, f"{options}_initializer")
                            if initializer is None else initializer,
                            regularizer=getattr(layer, f"{options}_regularizer"),
                            constraint=getattr(layer, f"{options}_constraint"))


def positive_int(value, who, what, message="{who}: {what} must be a positive integer, got {value}"):
    """A layer's integer argument: ``int(value)``, a TypeError when that fails and a ValueError
    (``message``, a template: Keras words some of them its own way) when it is not positive."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {what} must be an integer, got {value!r}") from None
    if v <= 0:
        raise ValueError(message.format(who=who, what=what, value=v))
    return v
