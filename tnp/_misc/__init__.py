"""The rest of NumPy's reference that takes arrays: polynomials (``poly1d`` helpers in the main
namespace), functional programming, bit packing, datetime support, memory queries,
floating-point error handling and package information."""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_functions

SECTION = "misc"

POLYNOMIAL = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
              "polysub", "polyval", "roots"]
FUNCTIONAL = ["apply_along_axis", "apply_over_axes", "piecewise"]
BITS = ["packbits", "unpackbits"]
DATETIME = ["busday_count", "busday_offset", "is_busday", "datetime_as_string"]
META = ["shares_memory", "may_share_memory", "can_cast", "promote_types", "min_scalar_type",
        "result_type", "common_type", "issubdtype", "isdtype", "typename", "mintypecode",
        "iterable", "datetime_data", "geterr", "seterr", "geterrcall", "seterrcall",
        "getbufsize", "setbufsize", "get_include", "show_config", "show_runtime", "info",
        "frompyfunc"]

__all__ = make_functions(POLYNOMIAL, "polynomial", globals())
__all__ += make_functions(FUNCTIONAL, "functional", globals())
__all__ += make_functions(BITS, "bits", globals())
__all__ += make_functions(DATETIME, "datetime", globals())
__all__ += make_functions(META, SECTION, globals(), kind="meta")

# classes and context managers re-exported unchanged: they hold no arrays of their own, or
# (poly1d, nditer, ndenumerate, ndindex) read tnp arrays through __array__; vectorize is below.
errstate = _np.errstate
poly1d = _np.poly1d
nditer = _np.nditer
ndenumerate = _np.ndenumerate
ndindex = _np.ndindex
broadcast = _np.broadcast
busdaycalendar = _np.busdaycalendar
__all__ += ["errstate", "vectorize", "poly1d", "nditer", "ndenumerate", "ndindex", "broadcast",
            "busdaycalendar"]


# vectorize (NumPy's, whose Python loop becomes one fused call where the function traces)
from .._jit.vectorize import vectorize  # noqa: E402
