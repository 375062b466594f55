"""``tnp.lib.stride_tricks``: mirrors ``numpy.lib.stride_tricks``. Results are views of the
input's memory (read-only unless ``writeable=True``, as in NumPy)."""
from __future__ import annotations

from .._core.dispatch import make_function
from .._manipulation import broadcast_to, broadcast_arrays, broadcast_shapes  # noqa: F401

SECTION = "manipulation"

as_strided = make_function("lib.stride_tricks.as_strided", SECTION)
sliding_window_view = make_function("lib.stride_tricks.sliding_window_view", SECTION)

__all__ = ["as_strided", "sliding_window_view"]
