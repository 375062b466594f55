"""``tt.backend``: the few ``tf.keras.backend`` functions Keras programs call."""
from __future__ import annotations

import numpy as _np

__all__ = ["clear_session", "floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format"]

_state = {"floatx": "float32", "epsilon": 1e-7}


def clear_session():
    """Reset layer-name counters (so new models are named ``dense``, ``dense_1``... again) and
    the global dtype policy."""
    from .layers.base import reset_names
    from .mixed_precision.policy import set_global_policy
    reset_names()
    set_global_policy(None)


def floatx():
    return _state["floatx"]


def set_floatx(value):
    """Set the default float type: the global policy becomes that dtype."""
    if value not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    from .mixed_precision.policy import set_global_policy
    _state["floatx"] = value
    set_global_policy(value)


def epsilon():
    return _state["epsilon"]


def set_epsilon(value):
    _state["epsilon"] = float(value)


def image_data_format():
    return "channels_last"


def cast_to_floatx(x):
    return _np.asarray(x, dtype=_state["floatx"])
