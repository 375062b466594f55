"""Optimizers (``tt.optimizers``), as ``tf.keras.optimizers`` (TF 2.4 names and defaults, with
Keras 3's AdamW, Lion and decoupled ``weight_decay``), and their learning-rate ``schedules``.

``get(identifier)`` accepts a name ("sgd", "adam", ...), a ``{"class_name", "config"}`` dict
or an instance; ``serialize``/``deserialize`` convert to and from that dict.
"""
from . import kernels, schedules
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .base_optimizer import Optimizer
from .ftrl import Ftrl
from .lion import Lion
from .nadam import Nadam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "Nadam", "Lion", "Ftrl", "schedules", "kernels", "get", "serialize", "deserialize"]

_CLASSES = (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Lion, Ftrl)
_BY_NAME = {c.__name__.lower(): c for c in _CLASSES}


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` of an optimizer (``tf.keras.optimizers.serialize``)."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizers.serialize: expected an Optimizer, got "
                        f"{type(optimizer).__name__}")
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """The optimizer described by :func:`serialize`'s dict (class names case-insensitive)."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"optimizers.deserialize: expected {{'class_name', 'config'}}, got "
                         f"{config!r}")
    name = config["class_name"]
    custom = custom_objects or {}
    cls = custom.get(name) or _BY_NAME.get(str(name).lower())
    if cls is None and str(name).lower() == "lossscaleoptimizer":
        # the wrapper lives with mixed precision (above the optimizers): imported when named
        from ..mixed_precision import LossScaleOptimizer as cls
    if cls is None:
        raise ValueError(f"optimizers.deserialize: unknown optimizer {name!r}; known: "
                         f"{sorted(c.__name__ for c in _CLASSES)}")
    return cls.from_config(dict(config.get("config", {})), custom_objects=custom_objects)


def get(identifier):
    """An optimizer from a name ("adam"), a serialized dict, or an instance (returned as is);
    mirrors ``tf.keras.optimizers.get``."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"optimizers.get: unknown optimizer {identifier!r}; known: "
                             f"{sorted(_BY_NAME)}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")
