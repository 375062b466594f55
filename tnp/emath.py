"""``tnp.emath``: mirrors ``numpy.emath`` (``numpy.lib.scimath``): math functions whose result
is complex where the real function's argument leaves its real domain (``sqrt(-1) == 1j``)."""
from __future__ import annotations

import numpy as _np

from ._core.dispatch import make_function

SECTION = "math"

__all__ = []
for _n in _np.emath.__all__:
    globals()[_n] = make_function(f"emath.{_n}", SECTION)
    __all__.append(_n)
