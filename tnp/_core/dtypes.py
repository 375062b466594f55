"""dtypes: NumPy's dtypes and scalar types, plus ``bfloat16`` (from ml_dtypes).

``tnp.float32`` *is* ``numpy.float32``, so ``dtype=tnp.float32``, ``x.dtype == tnp.float32`` and
``numpy.issubdtype`` behave exactly as in NumPy. Type promotion is NumPy 2's (NumPy computes
every result). ``finfo``/``iinfo`` accept tnp arrays and ``bfloat16``.

``ml_dtypes`` takes most of a second to import, so it is imported the first time ``bfloat16`` is
asked for (``tnp.bfloat16``, ``finfo("bfloat16")``); until then NumPy does not know the dtype
name ``"bfloat16"`` either, and no array can have that dtype.
"""
from __future__ import annotations

import sys as _sys

import numpy as _np


def _ml_dtypes():
    import ml_dtypes

    return ml_dtypes


def __getattr__(name):
    if name == "bfloat16":
        return _ml_dtypes().bfloat16
    if name == "LOW_PRECISION_FLOATS":
        return (_np.dtype(_np.float16), _np.dtype(_ml_dtypes().bfloat16))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
    if isinstance(dt, str) and dt == "bfloat16":
        _ml_dtypes()  # the name means something to NumPy only once ml_dtypes is loaded
    ml = _sys.modules.get("ml_dtypes")   # without it no value can be a bfloat16
    if ml is not None:
        try:
            if _np.dtype(dt) == _np.dtype(ml.bfloat16):
                return ml.finfo(ml.bfloat16)
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



_ML_PREFIXES = ("bfloat16", "float8_", "float4_", "float6_", "int2", "int4", "uint2", "uint4")


def dtype_from_name(name):
    """``name`` itself, after loading ml_dtypes when it names one of its dtypes (NumPy knows
    those names only once ml_dtypes is imported, which tnp does on first use)."""
    if name.startswith(_ML_PREFIXES):
        _ml_dtypes()
    return name
