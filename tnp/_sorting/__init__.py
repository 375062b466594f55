"""Sorting, searching, and counting (NumPy reference section of that name)."""
from __future__ import annotations

import inspect as _inspect

from .._core.dispatch import composite, make_functions

SECTION = "sorting"

FUNCTIONS = ["sort", "lexsort", "argsort", "sort_complex", "partition", "argpartition",
             "argmax", "nanargmax", "argmin", "nanargmin", "argwhere", "nonzero", "flatnonzero",
             "where", "searchsorted", "extract", "count_nonzero"]

__all__ = make_functions(FUNCTIONS, SECTION, globals())


# ---- the array API standard's ``descending=`` keyword (NumPy has none) -------------------------
# The made functions stay what ``sort``/``argsort`` record on a tape; the public functions add
# ``descending`` on top of them, built from tnp operations (flip, sort/argsort, subtract).
_sort = sort  # noqa: F821 (made above)
_argsort = argsort  # noqa: F821 (made above)


def _flip(a, axis):
    from .._manipulation import flip

    return flip(a, axis)


@composite("sort", SECTION)
def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """tnp.sort: mirrors ``numpy.sort``; ``descending=True`` (array API standard) sorts from
    largest to smallest, keeping equal elements in their original order when ``stable``."""
    if not descending:
        return _sort(a, axis, kind, order, stable=stable)
    return _flip(_sort(_flip(a, axis), axis, kind, order, stable=stable), axis)


@composite("argsort", SECTION)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """tnp.argsort: mirrors ``numpy.argsort``; ``descending=True`` (array API standard) gives the
    indices that sort from largest to smallest (equal elements in their original order when
    ``stable``)."""
    if not descending:
        return _argsort(a, axis, kind, order, stable=stable)
    from .._creation import asarray

    a = asarray(a)
    n = a.size if axis is None else a.shape[axis]
    return (n - 1) - _flip(_argsort(_flip(a, axis), axis, kind, order, stable=stable), axis)


# inspect.signature shows the keywords added here, not NumPy's (``composite`` sets __wrapped__)
for _f in (sort, argsort):
    _f.__signature__ = _inspect.signature(_f, follow_wrapped=False)
del _f
