"""Sorting, searching, and counting (NumPy reference section of that name)."""
from __future__ import annotations

from .._core.dispatch import make_functions

SECTION = "sorting"

FUNCTIONS = ["sort", "lexsort", "argsort", "sort_complex", "partition", "argpartition",
             "argmax", "nanargmax", "argmin", "nanargmin", "argwhere", "nonzero", "flatnonzero",
             "where", "searchsorted", "extract", "count_nonzero"]

__all__ = make_functions(FUNCTIONS, SECTION, globals())
