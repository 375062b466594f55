"""VJPs of ``tnp.emath`` (NumPy's ``scimath``): the real functions' derivatives, continued to
the complex results outside the real domain."""
from __future__ import annotations

import numpy as _np

import tnp

from ..registry import defvjp, section
from ..tape import stop_gradient

section("math")

defvjp("emath.sqrt", lambda ans, x, **k: lambda g: g / (2 * ans))
defvjp("emath.log", lambda ans, x, **k: lambda g: g / x)
defvjp("emath.log2", lambda ans, x, **k: lambda g: g / (x * _np.log(2.0)))
defvjp("emath.log10", lambda ans, x, **k: lambda g: g / (x * _np.log(10.0)))
defvjp("emath.logn",
       lambda ans, n, x, **k: lambda g: -g * ans / (n * tnp.emath.log(n)),
       lambda ans, n, x, **k: lambda g: g / (x * tnp.emath.log(n)))
defvjp("emath.power",
       lambda ans, x, p, **k: lambda g: g * p * tnp.emath.power(x, p - 1),
       lambda ans, x, p, **k: lambda g: g * ans * tnp.emath.log(x))


def _arcsin_slope(x):
    """1 / sqrt(1 - x^2) on the side of the branch cut NumPy evaluates.

    For real x > 1, ``emath.arcsin(x)`` is ``pi/2 + i arccosh(x)``: its slope is
    ``+i / sqrt(x^2 - 1)``, the opposite of ``1 / emath.sqrt(1 - x^2)`` (which is right for
    x < -1, where the result is ``-pi/2 + i arccosh(-x)``)."""
    r = 1 / tnp.emath.sqrt(1 - x * x)
    if _np.iscomplexobj(x):
        return r
    return r * tnp.where(stop_gradient(x) > 1, -1.0, 1.0)


defvjp("emath.arccos", lambda ans, x, **k: lambda g: -g * _arcsin_slope(x))
defvjp("emath.arcsin", lambda ans, x, **k: lambda g: g * _arcsin_slope(x))
defvjp("emath.arctanh", lambda ans, x, **k: lambda g: g / (1 - x * x))
