"""The inputs of losses and metrics as backend arrays on one device (shared by both).

Losses and metrics run in every training step, so they compute with the array module of their
inputs' device (NumPy on the CPU, CuPy on a GPU) and leave their results there: on a GPU, turning
a batch's predictions into a NumPy array would wait for the step and copy them to the host.
What cannot be decided without reading values (a label out of range) is checked on the host
only where reading is free (:func:`reads_free`); on a device the values concerned become NaN.
"""
from __future__ import annotations

import numpy as _np

from tnp.extend import (array_module, backend_array, device_of, get_default_device,
                        is_tnp_array, wrap)

__all__ = ["input_device", "backend_on", "detached", "reads_free", "poison"]


def input_device(*values, default=None):
    """The device of the first tnp array among ``values``; else ``default`` (or the default
    device): host data meets the device of the arrays it is used with, as in tnp."""
    for x in values:
        if is_tnp_array(x):
            return device_of(x)
    return get_default_device() if default is None else default


def backend_on(x, device):
    """``x`` as a backend array on ``device``: a tnp array's own buffer (an explicit copy when it
    lives on another device), host data (NumPy, lists, numbers) copied there."""
    if is_tnp_array(x):
        if device_of(x) is not device:
            x = x.to_device(device)
        return backend_array(x)
    a = _np.asarray(x)
    xp = array_module(device)
    return a if xp is _np else xp.asarray(a)


def detached(x, device):
    """``x`` as a tnp array on ``device`` that no tape follows (metrics are not differentiated)."""
    return wrap(backend_on(x, device), device)


def reads_free(xp):
    """Whether values of array module ``xp`` can be read on the host without waiting for a
    device (NumPy): only there do data-dependent checks raise."""
    return xp is _np


def poison(xp, values, bad):
    """``values`` with NaN where ``bad`` (broadcast) is true: how a device reports an invalid
    input without a host read (TF's sparse cross-entropy on a GPU does the same)."""
    return xp.where(bad, xp.asarray(_np.nan, dtype=values.dtype), values)
