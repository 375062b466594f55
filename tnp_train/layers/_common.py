"""Small helpers shared by the layers' NumPy kernels (attention, normalization, recurrent)."""
import numpy as _np

__all__ = ["work_dtype"]


def work_dtype(*arrays):
    """float64 when any input is float64, else float32 (16-bit inputs compute in float32);
    ``None`` entries are skipped."""
    for a in arrays:
        if a is not None and _np.dtype(a.dtype) == _np.float64:
            return _np.dtype(_np.float64)
    return _np.dtype(_np.float32)
