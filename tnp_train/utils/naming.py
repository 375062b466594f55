"""Names derived from class names (Keras's default layer, loss and metric names)."""
import re

__all__ = ["snake_case"]

_WORD = re.compile(r"(.)([A-Z][a-z]+)")
_LOWER_UPPER = re.compile(r"([a-z])([A-Z])")


def snake_case(name):
    """Keras's rule: an underscore before each capitalised word and between a lower-case letter
    and a capital, then lower case. ``"MeanSquaredError"`` -> ``"mean_squared_error"``,
    ``"LSTMCell"`` -> ``"lstm_cell"``, ``"DepthwiseConv2D"`` -> ``"depthwise_conv2d"``."""
    return _LOWER_UPPER.sub(r"\1_\2", _WORD.sub(r"\1_\2", name)).lower()
