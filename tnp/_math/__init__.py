"""Mathematical functions (NumPy reference: "Mathematical functions"): every elementwise ufunc,
sums/products/differences, rounding, exponents and logarithms, complex numbers, misc."""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import composite, make_functions, make_ufunc
from .._core.ndarray import Scalar, bump_version, ndarray

SECTION = "math"

UFUNCS = [
    # trigonometric / hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot", "degrees", "radians",
    "deg2rad", "rad2deg", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh",
    # rounding
    "rint", "floor", "ceil", "trunc",
    # exponents and logarithms
    "exp", "expm1", "exp2", "log", "log10", "log2", "log1p", "logaddexp", "logaddexp2",
    # floating point routines
    "signbit", "copysign", "frexp", "ldexp", "nextafter", "spacing",
    # rational
    "lcm", "gcd",
    # arithmetic
    "add", "reciprocal", "positive", "negative", "multiply", "divide", "power", "pow",
    "subtract", "true_divide", "floor_divide", "float_power", "fmod", "mod", "modf", "remainder",
    "divmod",
    # complex
    "conj", "conjugate",
    # extrema
    "maximum", "fmax", "minimum", "fmin",
    # misc
    "sqrt", "cbrt", "square", "absolute", "abs", "fabs", "sign", "heaviside",
    # bit twiddling
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_invert", "bitwise_not",
    "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift", "bitwise_count",
    # linear algebra ufuncs (gufuncs)
    "matmul", "vecdot", "matvec", "vecmat",
]

FUNCTIONS = [
    "around", "round", "fix",
    "prod", "sum", "nanprod", "nansum", "cumprod", "cumsum", "nancumprod", "nancumsum",
    "cumulative_prod", "cumulative_sum", "diff", "ediff1d", "gradient", "cross", "trapezoid",
    "i0", "sinc", "angle", "real", "imag", "real_if_close", "nan_to_num", "interp", "convolve",
    "clip", "unwrap",
]

__all__ = []
_by_numpy = {}
for _n in UFUNCS:
    _npu = getattr(_np, _n, None)
    if _npu is None:
        continue
    # NumPy's aliases (abs/absolute, pow/power, asin/arcsin...) are one ufunc object: so are ours
    _u = _by_numpy.get(_npu)
    if _u is None:
        _u = _by_numpy[_npu] = make_ufunc(_npu.__name__, SECTION)
    globals()[_n] = _u
    __all__.append(_n)

__all__ += make_functions(FUNCTIONS, SECTION, globals())


_nan_to_num = nan_to_num  # noqa: F821 (made above)


@composite("nan_to_num", SECTION)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """tnp.nan_to_num: mirrors ``numpy.nan_to_num``; with ``copy=False`` it writes into ``x``
    and returns ``x`` itself (counting the write in ``x._version``), as NumPy returns its input."""
    r = _nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    if not copy and isinstance(x, ndarray) and not isinstance(x, Scalar) and r._a is x._a:
        bump_version(x._a)
        return x
    return r


nan_to_num.__module__ = "tnp"
