"""Small helpers shared by the layers: the working dtype, and the device and array module
(``xp``: NumPy or CuPy) an op runs on (kept in ``ops._common``, a layer below, which the ops
import too), the weights made from a layer's options, and its integer arguments."""
from ..ops._common import device_of, on_device, scatter_add, work_dtype

__all__ = ["work_dtype", "device_of", "on_device", "scatter_add", "add_option_weight",
           "positive_int"]


def add_option_weight(layer, name, shape, options=None, initializer=None, dtype=None):
    """``layer.add_weight(name, shape)`` with the layer's ``<options>_initializer``,
    ``_regularizer`` and ``_constraint`` (``options`` defaults to ``name``; ``initializer``
    replaces the layer's where given)."""
    options = options or name
    return layer.add_weight(name, shape, dtype=dtype,
                            initializer=getattr(layer, f"{options}_initializer")
                            if initializer is None else initializer,
                            regularizer=getattr(layer, f"{options}_regularizer"),
                            constraint=getattr(layer, f"{options}_constraint"))


def positive_int(value, who, what, message="{who}: {what} must be a positive integer, got {value}",
                 allow_zero=False):
    """A layer's integer argument: ``int(value)``, a TypeError when that fails and a ValueError
    (``message``, a template: Keras words some of them its own way) when it is not positive
    (negative, with ``allow_zero``)."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {what} must be an integer, got {value!r}") from None
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(message.format(who=who, what=what, value=v))
    return v
