"""Utilities (``tt.utils``): reproducible randomness, and the helpers ``tf.keras.utils`` has."""
from .random import set_random_seed, get_rng, make_rng
from .np_utils import to_categorical, normalize

__all__ = ["set_random_seed", "get_rng", "make_rng", "to_categorical", "normalize"]

from ..layers.serialization import (  # noqa: E402
    CustomObjectScope, custom_object_scope, get_registered_name, get_registered_object,
    register_keras_serializable)

__all__ += ["register_keras_serializable", "get_registered_object", "get_registered_name",
            "custom_object_scope", "CustomObjectScope"]
