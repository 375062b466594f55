"""Set routines (NumPy reference: "Set routines")."""
from __future__ import annotations

from .._core.dispatch import make_functions

SECTION = "sets"

FUNCTIONS = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values",
             "intersect1d", "isin", "setdiff1d", "setxor1d", "union1d"]

__all__ = make_functions(FUNCTIONS, SECTION, globals())
