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
