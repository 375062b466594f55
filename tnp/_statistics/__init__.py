"""Statistics (NumPy reference: "Statistics"): order statistics, averages and variances,
correlating, histograms."""
from __future__ import annotations

from .._core.dispatch import make_functions

SECTION = "statistics"

FUNCTIONS = ["ptp", "percentile", "nanpercentile", "quantile", "nanquantile",
             "median", "average", "mean", "std", "var", "nanmedian", "nanmean", "nanstd",
             "nanvar", "corrcoef", "correlate", "cov", "histogram", "histogram2d",
             "histogramdd", "bincount", "histogram_bin_edges", "digitize",
             "amax", "amin", "max", "min", "nanmax", "nanmin"]

__all__ = make_functions(FUNCTIONS, SECTION, globals())


# ---- order statistics with overwrite_input=True write into their input: count that write
import inspect as _inspect  # noqa: E402

import numpy as _np  # noqa: E402

from .._core.dispatch import composite as _composite  # noqa: E402
from .._core.ndarray import Scalar as _Scalar, bump_version as _bump_version, ndarray as _ndarray  # noqa: E402


def _counting_overwrite(name):
    made = globals()[name]
    # where overwrite_input sits among the positional parameters (found once, not per call)
    at = list(_inspect.signature(getattr(_np, name)).parameters).index("overwrite_input")

    def f(a, *args, **kwargs):
        r = made(a, *args, **kwargs)
        overwrite = kwargs.get("overwrite_input", args[at - 1] if len(args) >= at else False)
        if overwrite and isinstance(a, _ndarray) and not isinstance(a, _Scalar):
            _bump_version(a._a)  # NumPy may have partially sorted ``a`` in place
        return r

    f.__name__ = f.__qualname__ = name
    f.__module__ = "tnp"
    f.__doc__ = (f"tnp.{name}: mirrors ``numpy.{name}``; with ``overwrite_input=True`` the "
                 f"input may be reordered in place, which counts as a write to it.")
    return _composite(name, SECTION)(f)


for _n in ("median", "nanmedian", "percentile", "nanpercentile", "quantile", "nanquantile"):
    globals()[_n] = _counting_overwrite(_n)
