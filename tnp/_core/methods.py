"""ndarray methods that are NumPy functions with the array first (``x.sum(axis)`` is
``tnp.sum(x, axis)``): installed on :class:`ndarray` from the registry, so a method and its
function are one implementation and the tape sees one name."""
from __future__ import annotations

from .dispatch import REGISTRY
from .ndarray import ndarray, wrap_like
from . import ndarray as _ndmod

# method name -> registry name of the function it calls with the array first
SAME_AS_FUNCTION = {
    "all": "all", "any": "any", "argmax": "argmax", "argmin": "argmin",
    "argpartition": "argpartition", "argsort": "argsort", "choose": "choose", "clip": "clip",
    "cumprod": "cumprod", "cumsum": "cumsum",
    "diagonal": "diagonal", "dot": "dot", "max": "max", "mean": "mean", "min": "min",
    "nonzero": "nonzero", "prod": "prod", "ravel": "ravel", "repeat": "repeat", "round": "round",
    "searchsorted": "searchsorted", "squeeze": "squeeze", "std": "std", "sum": "sum",
    "swapaxes": "swapaxes", "take": "take", "trace": "trace", "var": "var",
}


def _method(fname, mname):
    fn = REGISTRY[fname].function

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = mname
    method.__qualname__ = f"ndarray.{mname}"
    method.__doc__ = f"``a.{mname}(...)`` is ``tnp.{fname}(a, ...)``; mirrors ``numpy.ndarray.{mname}``."
    return method


def install():
    for m, f in SAME_AS_FUNCTION.items():
        setattr(ndarray, m, _method(f, m))

    conjugate = REGISTRY["conjugate"].function

    def conj(self):
        """The complex conjugate; mirrors ``numpy.ndarray.conj``: the array itself for a
        non-complex dtype (the function ``tnp.conj`` computes, and gives int8 for bool, as
        NumPy's does)."""
        if self._a.dtype.kind not in "cO":
            return self
        return conjugate(self)

    conj.__qualname__ = "ndarray.conj"
    ndarray.conj = conj

    def conjugate_method(self):
        """``a.conjugate()``: as ``a.conj()``; mirrors ``numpy.ndarray.conjugate``."""
        return conj(self)

    conjugate_method.__name__ = "conjugate"
    conjugate_method.__qualname__ = "ndarray.conjugate"
    ndarray.conjugate = conjugate_method

    compress = REGISTRY["compress"].function

    def compress_method(self, condition, axis=None, out=None):
        """``a.compress(condition, axis)`` is ``tnp.compress(condition, a, axis)``."""
        return compress(condition, self, axis=axis, out=out)

    ndarray.compress = compress_method

    def flatten(self, order="C"):
        """A 1-d copy of the array; mirrors ``numpy.ndarray.flatten``."""
        if _ndmod._HOOK is not None:
            h = _ndmod._HOOK("reshape", (self, (-1,)), {"order": order}, flatten, (self, order), {})
            if h is not _ndmod.PASS:
                return h
        return wrap_like(self._a.flatten(order), self._dev, self)

    ndarray.flatten = flatten
    ndarray.__matmul__.__doc__ = "a @ b"
