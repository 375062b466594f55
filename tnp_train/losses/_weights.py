"""Sample weights broadcast to per-sample values (shared by losses and metrics)."""
from __future__ import annotations

import numpy as _np


def broadcast_weights(who, sample_weight, shape, dtype):
    """``sample_weight`` as a NumPy array of ``shape``: trailing 1-dimensions beyond the rank
    of ``shape`` are dropped, missing trailing dimensions are added (weights per sample for
    per-timestep values), then NumPy broadcasting; ValueError naming ``who`` otherwise."""
    w = _np.asarray(sample_weight)
    if w.dtype.kind not in "fiub" and w.dtype.name != "bfloat16":
        raise TypeError(f"{who}: sample_weight must be numeric, got dtype {w.dtype}")
    w = w.astype(dtype, copy=False)
    orig = w.shape
    while w.ndim > len(shape) and w.shape[-1] == 1:
        w = w[..., 0]
    if 0 < w.ndim < len(shape):
        w = w.reshape(w.shape + (1,) * (len(shape) - w.ndim))
    try:
        return _np.broadcast_to(w, shape)
    except ValueError:
        raise ValueError(f"{who}: sample_weight of shape {orig} does not broadcast to the "
                         f"values of shape {tuple(shape)}") from None
