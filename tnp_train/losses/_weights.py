"""Sample weights broadcast to per-sample values (shared by losses and metrics)."""
from __future__ import annotations

import numpy as _np

from tnp.extend import array_module, is_floating

from ._values import backend_on


def broadcast_weights(who, sample_weight, shape, dtype, device=None):
    """``sample_weight`` as an array of ``shape`` (NumPy, or with ``device`` a backend array on
    it): trailing 1-dimensions beyond the rank of ``shape`` are dropped, missing trailing
    dimensions are added (weights per sample for per-timestep values), then NumPy
    broadcasting; ValueError naming ``who`` otherwise."""
    if device is None:
        xp, w = _np, _np.asarray(sample_weight)
    else:
        xp, w = array_module(device), backend_on(sample_weight, device)
    if not (is_floating(w.dtype) or w.dtype.kind in "iub"):
        raise TypeError(f"{who}: sample_weight must be numeric, got dtype {w.dtype}")
    w = w.astype(dtype, copy=False)
    orig = w.shape
    while w.ndim > len(shape) and w.shape[-1] == 1:
        w = w[..., 0]
    if 0 < w.ndim < len(shape):
        w = w.reshape(w.shape + (1,) * (len(shape) - w.ndim))
    try:
        return xp.broadcast_to(w, shape)
    except ValueError:
        raise ValueError(f"{who}: sample_weight of shape {orig} does not broadcast to the "
                         f"values of shape {tuple(shape)}") from None
