"""The backend's configuration (``tf.keras.backend.floatx`` and its kin): the default float
type, the fuzz factor and the default image data format.

Pure state, importing nothing of tnp_train, so that every package (the initializers, the
constraints, the metrics...) may read it without importing the backend functions, which sit
above the layers and the models. Mirrors the split of Keras 3's ``backend/config.py``.
"""
from __future__ import annotations

__all__ = ["floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format",
           "set_image_data_format", "backend", "follow_floatx"]

_config = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
# called with each new floatx: the global dtype policy follows it (mixed_precision.policy
# registers itself here, a floor up, so this module imports nothing)
_floatx_followers: list = []


def floatx():
    """The default float type's name (``tf.keras.backend.floatx``)."""
    return _config["floatx"]


def set_floatx(value):
    """Set the default float type; the global dtype policy follows it, as in TF 2.4."""
    if value not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    _config["floatx"] = str(value)
    for follow in _floatx_followers:
        follow(value)


def follow_floatx(fn):
    """Call ``fn(value)`` at each ``set_floatx(value)``; returns ``fn``."""
    _floatx_followers.append(fn)
    return fn


def epsilon():
    """The fuzz factor (``tf.keras.backend.epsilon``, 1e-7)."""
    return _config["epsilon"]


def set_epsilon(value):
    """Set the fuzz factor (``tf.keras.backend.set_epsilon``)."""
    _config["epsilon"] = float(value)


def image_data_format():
    """``"channels_last"`` unless set (``tf.keras.backend.image_data_format``)."""
    return _config["image_data_format"]


def set_image_data_format(data_format):
    """Set the default data format (``tf.keras.backend.set_image_data_format``); the layers take
    theirs from their ``data_format`` argument (None means channels_last)."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format}")
    _config["image_data_format"] = str(data_format)


def backend():
    """``"tensorflow"``, the name TF 2.4's Keras reports: tnp_train follows its conventions
    (shapes, data formats, argument names), and Keras programs branch on this name."""
    return "tensorflow"
