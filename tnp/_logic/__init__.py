"""Logic functions (NumPy reference: "Logic functions"): truth tests, array contents, type
tests, logical operations, comparison."""
from __future__ import annotations

from .._core.dispatch import make_functions, make_ufunc

SECTION = "logic"

UFUNCS = ["isfinite", "isinf", "isnan", "isnat", "logical_and", "logical_or", "logical_not",
          "logical_xor", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal"]
FUNCTIONS = ["all", "any", "isneginf", "isposinf", "iscomplex", "iscomplexobj", "isfortran",
             "isreal", "isrealobj", "isscalar", "allclose", "isclose", "array_equal",
             "array_equiv"]

__all__ = []
for _n in UFUNCS:
    globals()[_n] = make_ufunc(_n, SECTION)
    __all__.append(_n)
__all__ += make_functions(FUNCTIONS, SECTION, globals())
