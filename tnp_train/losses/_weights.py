"""Sample weights broadcast to per-sample values (shared by losses and metrics)."""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import array_module, device_of, is_floating, is_tnp_array, tracing as _tracing

from ._values import backend_on


def broadcast_weights(who, sample_weight, shape, dtype, device=None):
    """``sample_weight`` as an array of ``shape`` (NumPy, or with ``device`` a backend array on
    it): trailing 1-dimensions beyond the rank of ``shape`` are dropped, missing trailing
    dimensions are added (weights per sample for per-timestep values), then NumPy
    broadcasting; ValueError naming ``who`` otherwise. While a step is traced, a tnp array
    ``sample_weight`` (the batch's weights) gives a tnp array: the same operations, traced."""
    if device is not None and _tracing() and is_tnp_array(sample_weight):
        xp, w = tnp, sample_weight if device_of(sample_weight) is device else \
            sample_weight.to_device(device)
    elif device is None:
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
