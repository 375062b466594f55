"""Models (``tt.models``): ``Model``, ``Sequential``, the functional API, saving and loading."""
from ..layers import serialization as _layer_serialization
from .model import Model
from .functional import Functional
from .sequential import Sequential
from .saving import (load_model, model_from_config, model_from_json, model_from_yaml,
                     save_model)

__all__ = ["Model", "Sequential", "Functional", "model_from_config", "model_from_json",
           "model_from_yaml", "load_model", "save_model", "clone_model"]


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with the same architecture and freshly initialised weights."""
    if input_tensors is not None or clone_function is not None:
        raise NotImplementedError("clone_model: input_tensors and clone_function are not supported")
    return _layer_serialization.deserialize(_layer_serialization.serialize(model))
