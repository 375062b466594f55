"""A stand-in for CuPy on NumPy with two "GPUs", for tests of the GPU paths on a machine without
one (run in a subprocess: running this file puts it in ``sys.modules["cupy"]`` before tnp is
imported).

What it keeps of CuPy is what tnp's device handling must respect: an array belongs to the device
that was current when it was made, a kernel (every ufunc, operators included) refuses an array of
another device than the current one (``with cupy.cuda.Device(i):`` makes ``i`` current), and a
kernel takes no list. Arrays are NumPy arrays underneath (a subclass), so values are NumPy's.
"""
import sys
import types

import numpy as np

_current = [0]


class ndarray(np.ndarray):
    def __array_finalize__(self, obj):
        self.device_id = getattr(obj, "device_id", _current[0])

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        outs = kwargs.get("out", ()) or ()
        _check(inputs + tuple(outs))
        plain = [x.view(np.ndarray) if isinstance(x, ndarray) else x for x in inputs]
        if outs:
            kwargs["out"] = tuple(o.view(np.ndarray) for o in outs)
        r = getattr(ufunc, method)(*plain, **kwargs)
        if outs:
            return outs[0] if len(outs) == 1 else outs
        return _on_device(r)

    def get(self):
        return np.array(self.view(np.ndarray))


def _check(args):
    for x in args:
        if isinstance(x, (list, tuple)):
            raise TypeError(f"Unsupported type {type(x)}")
        if isinstance(x, ndarray) and x.device_id != _current[0]:
            raise ValueError(f"Array device must be same as the current device: array device = "
                             f"{x.device_id} while current = {_current[0]}")


def _on_device(r):
    """A result as CuPy gives it: an array on the current device (0-d for a scalar)."""
    if isinstance(r, tuple):
        return tuple(_on_device(x) for x in r)
    if isinstance(r, (np.ndarray, np.generic)):
        return np.asarray(r).view(ndarray)
    return r


class Device:
    def __init__(self, i=None):
        self.id = _current[0] if i is None else i

    def __enter__(self):
        self._prev = _current[0]
        _current[0] = self.id
        return self

    def __exit__(self, *exc):
        _current[0] = self._prev

    def synchronize(self):
        pass


def asarray(a, dtype=None):
    if isinstance(a, ndarray) and dtype is None:
        return a
    return np.array(a.get() if isinstance(a, ndarray) else a, dtype=dtype).view(ndarray)


def _function(name):
    """Any other function of NumPy's, its result on the current device."""
    if name.startswith("__"):
        raise AttributeError(name)
    f = getattr(np, name)

    def call(*args, **kwargs):
        if isinstance(f, np.ufunc):
            _check(args)
        return _on_device(f(*args, **kwargs))
    return call


cupy = types.ModuleType("cupy")
cupy.ndarray, cupy.asarray, cupy.array = ndarray, asarray, asarray
cupy.cuda = types.SimpleNamespace(Device=Device,
                                  runtime=types.SimpleNamespace(getDeviceCount=lambda: 2))
cupy.__getattr__ = _function
sys.modules["cupy"] = cupy
