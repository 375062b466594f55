"""dtypes: NumPy's dtypes and scalar types, plus ``bfloat16`` (from ml_dtypes).

``tnp.float32`` *is* ``numpy.float32``, so ``dtype=tnp.float32``, ``x.dtype == tnp.float32`` and
``numpy.issubdtype`` behave exactly as in NumPy. Type promotion is NumPy 2's (NumPy computes
every result). ``finfo``/``iinfo`` accept tnp arrays and ``bfloat16``.
"""
from __future__ import annotations

import ml_dtypes
import numpy as _np

bfloat16 = ml_dtypes.bfloat16

# Scalar types and abstract classes re-exported unchanged (they are dtype specifiers).
SCALAR_TYPES = [
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "intp", "uintp", "intc", "uintc", "short", "ushort", "byte", "ubyte", "long", "ulong",
    "longlong", "ulonglong", "half", "single", "double", "longdouble", "float16", "float32",
    "float64", "float128", "csingle", "cdouble", "clongdouble", "complex64", "complex128",
    "complex256", "object_", "str_", "bytes_", "void", "datetime64", "timedelta64",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
    "complexfloating", "flexible", "character", "dtype", "format_parser",
]
DTYPE_FUNCTIONS = ["can_cast", "promote_types", "min_scalar_type", "result_type", "common_type",
                   "issubdtype", "isdtype", "typename", "mintypecode"]


def finfo(dtype):
    """Machine limits for floating types; mirrors ``numpy.finfo`` and also takes ``bfloat16``."""
    dt = _dtype_of(dtype)
    try:
        if _np.dtype(dt) == _np.dtype(bfloat16):
            return ml_dtypes.finfo(bfloat16)
    except TypeError:
        pass
    return _np.finfo(dt)


def iinfo(dtype):
    """Machine limits for integer types; mirrors ``numpy.iinfo``."""
    return _np.iinfo(_dtype_of(dtype))


def _dtype_of(x):
    """A dtype specifier for ``x``: arrays (tnp or NumPy) give their dtype; types pass."""
    if isinstance(x, type):
        return x
    d = getattr(x, "dtype", None)
    return d if isinstance(d, _np.dtype) else x


LOW_PRECISION_FLOATS = (_np.dtype(_np.float16), _np.dtype(bfloat16))
