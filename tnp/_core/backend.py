"""Backends: the array module behind a device (NumPy on the CPU, CuPy on an NVIDIA GPU).

A backend is looked up once per device (``Device.backend``); every place that needs "the module
that computes on this device" asks the device (outside tnp: ``tnp.extend.array_module``), so the
CuPy path is the NumPy path with another module plugged in.
"""
from __future__ import annotations

import importlib
import os

import numpy

__all__ = ["Backend", "numpy_backend", "cupy_backend", "cupy_available", "backend_name_from_env"]


class Backend:
    """One array module (``xp``) and how to move arrays onto and off it."""

    __slots__ = ("name", "xp", "ndarray_type", "is_gpu")

    def __init__(self, name, xp, ndarray_type, is_gpu):
        self.name = name
        self.xp = xp
        self.ndarray_type = ndarray_type
        self.is_gpu = is_gpu

    def function(self, qualname):
        """The backend's function for a NumPy qualified name such as ``'linalg.inv'``."""
        mod = self.xp
        parts = qualname.split(".")
        for p in parts[:-1]:
            mod = getattr(mod, p)
        return getattr(mod, parts[-1])

    def __repr__(self):
        return f"<tnp backend {self.name}>"


numpy_backend = Backend("numpy", numpy, numpy.ndarray, False)

_cupy_state = {"checked": False, "backend": None, "error": None}


def cupy_backend():
    """The CuPy backend, or ``None`` when CuPy or a GPU is missing (the reason is kept)."""
    if not _cupy_state["checked"]:
        _cupy_state["checked"] = True
        try:
            cupy = importlib.import_module("cupy")
            if cupy.cuda.runtime.getDeviceCount() < 1:
                raise RuntimeError("CuPy found no CUDA device")
            _cupy_state["backend"] = Backend("cupy", cupy, cupy.ndarray, True)
            from . import ndarray as _nd  # the wrapper must recognise CuPy results

            _nd._register_gpu_type(cupy.ndarray)
            from .. import config as _config

            _config._apply_cupy(cupy, _config.tensor_float_32_execution_enabled())
        except Exception as e:  # ImportError, CUDA driver errors, ...
            _cupy_state["error"] = f"{type(e).__name__}: {e}"
    return _cupy_state["backend"]


def active_cupy_backend():
    """The CuPy backend if it has been started (a GPU device was used), else None; unlike
    :func:`cupy_backend` it never imports CuPy."""
    return _cupy_state["backend"]


def cupy_unavailable_reason():
    cupy_backend()
    return _cupy_state["error"]


def cupy_available():
    return cupy_backend() is not None


def backend_name_from_env():
    """``TNP_BACKEND`` = numpy | cupy | auto (default ``numpy``; ``auto`` takes a GPU if CuPy finds one)."""
    name = os.environ.get("TNP_BACKEND", "numpy").strip().lower() or "numpy"
    if name not in ("numpy", "cupy", "auto"):
        raise ValueError(f"TNP_BACKEND must be one of numpy, cupy, auto; got {name!r}")
    return name
