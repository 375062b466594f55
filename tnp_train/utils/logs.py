"""A training log's values as Python numbers: what the fit loops (trainers) and the callbacks,
a floor apart, both do to the logs of a step before anyone reads them."""
from __future__ import annotations

__all__ = ["to_python", "python_logs"]


def to_python(value):
    """A 0-d log value (a tnp array on any device, or NumPy) as a Python number, as Keras's
    ``to_numpy_or_python_type`` does; other values are returned as they are (predict outputs
    stay tnp arrays: copying them to the host is the caller's choice)."""
    if getattr(value, "ndim", None) != 0 or not hasattr(value, "item"):
        return value
    # the one read from the device: on a GPU it waits for the steps queued before it
    x = value.item()
    return float(x) if not isinstance(x, (bool, int, complex)) else x


def python_logs(logs, exclude=()):
    """``logs`` with its 0-d values made Python numbers, in place (the same dict is returned),
    so each value is read from its device once however many callbacks look at it."""
    for key, value in list(logs.items()):
        if key not in exclude and not isinstance(value, (float, int, str)) and value is not None:
            logs[key] = to_python(value)
    return logs
