"""``tnp.fft``: mirrors ``numpy.fft`` (CuPy's ``cupy.fft`` on a GPU)."""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_function

SECTION = "fft"

__all__ = []
for _n in _np.fft.__all__:
    globals()[_n] = make_function(f"fft.{_n}", SECTION,
                                  kind="creation" if _n in ("fftfreq", "rfftfreq") else "function")
    __all__.append(_n)
