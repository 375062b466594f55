"""``tnp.__array_namespace_info__()``: the array API inspection object (2025.12)."""
from __future__ import annotations

import numpy as _np

from .backend import cupy_backend
from .devices import CPU, device as _device, get_default_device


__array_api_version__ = "2025.12"
"""The version of the array API standard tnp implements (``tnp.__array_api_version__``)."""


class __array_namespace_info__:  # noqa: N801  (the standard's name)
    """Capabilities, devices and dtypes of tnp, as the array API standard asks."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return get_default_device()

    def devices(self):
        """The devices available now, as a tuple (the 2025.12 standard; lists before it)."""
        devs = [CPU]
        b = cupy_backend()
        if b is not None:
            devs += [_device(f"gpu:{i}") for i in range(b.xp.cuda.runtime.getDeviceCount())]
        return tuple(devs)

    def default_dtypes(self, *, device=None):
        return {"real floating": _np.dtype(_np.float64), "complex floating": _np.dtype(_np.complex128),
                "integral": _np.dtype(_np.intp), "indexing": _np.dtype(_np.intp)}

    def dtypes(self, *, device=None, kind=None):
        groups = {
            "bool": ["bool"],
            "signed integer": ["int8", "int16", "int32", "int64"],
            "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
            "real floating": ["float32", "float64"],
            "complex floating": ["complex64", "complex128"],
        }
        groups["integral"] = groups["signed integer"] + groups["unsigned integer"]
        groups["numeric"] = groups["integral"] + groups["real floating"] + groups["complex floating"]
        if kind is None:
            names = groups["bool"] + groups["numeric"]
        elif isinstance(kind, str):
            if kind not in groups:
                raise ValueError(f"unknown dtype kind {kind!r}")
            names = groups[kind]
        else:
            names = []
            for k in kind:
                for n in self.dtypes(kind=k):
                    if n not in names:
                        names.append(n)
            return {n: _np.dtype(n) for n in names}
        return {n: _np.dtype(n) for n in names}
