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
from .gradient_aggregator import GradientAggregator
from .lion import Lion
from .nadam import Nadam
from .rmsprop import RMSprop
from .sgd import SGD
from ..utils.serialization import deserialize_keras_object, serialize_keras_object

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "Nadam", "Lion", "Ftrl", "GradientAggregator", "schedules", "kernels", "get",
           "serialize", "deserialize"]

_CLASSES = (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Lion, Ftrl)
_BY_NAME = {c.__name__.lower(): c for c in _CLASSES}
_BUILTIN_NAMES = frozenset(_BY_NAME) | {"lossscaleoptimizer"}


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` of an optimizer (its registered name, if it has
    one); mirrors ``tf.keras.optimizers.serialize``."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizers.serialize: expected an Optimizer, got "
                        f"{type(optimizer).__name__}")
    return serialize_keras_object(optimizer)


def deserialize(config, custom_objects=None):
    """The optimizer described by :func:`serialize`'s dict, found in ``custom_objects``, the
    registered and scoped custom objects, then the built-in optimizers (their names
    case-insensitive); mirrors ``tf.keras.optimizers.deserialize``."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"optimizers.deserialize: expected {{'class_name', 'config'}}, got "
                         f"{config!r}")
    module_objects = _BY_NAME
    name = config["class_name"]
    if isinstance(name, str) and name.lower() in _BUILTIN_NAMES:
        config = {**config, "class_name": name.lower()}
        if name.lower() == "lossscaleoptimizer":
            # the wrapper lives with mixed precision, beside the optimizers: imported when named
            from ..mixed_precision.loss_scale_optimizer import LossScaleOptimizer
            module_objects = {**_BY_NAME, "lossscaleoptimizer": LossScaleOptimizer}
    return deserialize_keras_object(config, module_objects=module_objects,
                                    custom_objects=custom_objects,
                                    printable_module_name="optimizer")


def get(identifier):
    """An optimizer from a name ("adam"), a serialized dict, or an instance (returned as is);
    mirrors ``tf.keras.optimizers.get``."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        identifier = {"class_name": identifier, "config": {}}
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")
