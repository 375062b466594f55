"""``tnp.typing``: mirrors ``numpy.typing``. ``NDArray`` is the alias over ``tnp.ndarray``
(``NDArray[np.float64]`` is ``tnp.ndarray[tuple[Any, ...], np.dtype[np.float64]]``);
``ArrayLike``, ``DTypeLike`` and ``NBitBase`` are NumPy's (tnp arrays are array-likes: they have
``__array__``)."""
from __future__ import annotations

from typing import Any, TypeVar

import numpy as _np
from numpy.typing import ArrayLike, DTypeLike, NBitBase

from ._core.ndarray import ndarray

__all__ = ["ArrayLike", "DTypeLike", "NBitBase", "NDArray"]

_ScalarT = TypeVar("_ScalarT", bound=_np.generic)

NDArray = ndarray[tuple[Any, ...], _np.dtype[_ScalarT]]


def __getattr__(name):
    import numpy.typing as _npt

    return getattr(_npt, name)   # NumPy's other names and its messages for removed ones
