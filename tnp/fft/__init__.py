"""``tnp.fft``: mirrors ``numpy.fft`` (CuPy's ``cupy.fft`` on a GPU)."""
from __future__ import annotations

import inspect as _inspect

import numpy as _np

from .._core.dispatch import composite, make_function

SECTION = "fft"

__all__ = []
for _n in _np.fft.__all__:
    globals()[_n] = make_function(f"fft.{_n}", SECTION,
                                  kind="creation" if _n in ("fftfreq", "rfftfreq") else "function")
    __all__.append(_n)


# ---- the array API standard's ``dtype=`` keyword on fftfreq/rfftfreq (NumPy has none) ------------
_fftfreq = fftfreq  # noqa: F821 (made above)
_rfftfreq = rfftfreq  # noqa: F821 (made above)


def _freq(made, n, d, device, dtype):
    r = made(n, d) if device is None else made(n, d, device=device)
    return r if dtype is None else r.astype(dtype, copy=False)


@composite("fft.fftfreq", SECTION)
def fftfreq(n, d=1.0, device=None, *, dtype=None):
    """tnp.fft.fftfreq: mirrors ``numpy.fft.fftfreq``; ``dtype=`` (array API standard) gives the
    result that real floating dtype (computed in float64, then cast)."""
    return _freq(_fftfreq, n, d, device, dtype)


@composite("fft.rfftfreq", SECTION)
def rfftfreq(n, d=1.0, device=None, *, dtype=None):
    """tnp.fft.rfftfreq: mirrors ``numpy.fft.rfftfreq``; ``dtype=`` (array API standard) gives the
    result that real floating dtype (computed in float64, then cast)."""
    return _freq(_rfftfreq, n, d, device, dtype)


fftfreq.__module__ = rfftfreq.__module__ = "tnp.fft"
# inspect.signature shows the keywords added here, not NumPy's (``composite`` sets __wrapped__)
for _f in (fftfreq, rfftfreq):
    _f.__signature__ = _inspect.signature(_f, follow_wrapped=False)
del _f
