"""Models (``tt.models``): ``Model``, ``Sequential``, the functional API, saving and loading."""
from .model import Model
from .functional import Functional
from .sequential import Sequential

__all__ = ["Model", "Sequential", "Functional", "model_from_config", "model_from_json",
           "model_from_yaml", "load_model", "save_model", "clone_model"]


def model_from_config(config, custom_objects=None):
    """A model (or layer) from ``{"class_name": ..., "config": ...}``."""
    from ..layers.serialization import deserialize
    return deserialize(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """The model :meth:`Model.to_json` described (``tf.keras.models.model_from_json``)."""
    import json
    return model_from_config(json.loads(json_string), custom_objects)


def model_from_yaml(yaml_string, custom_objects=None):
    """The model :meth:`Model.to_yaml` described (TF 2.4's ``model_from_yaml``; needs
    PyYAML). Read with ``yaml.safe_load``: a YAML document cannot run code here."""
    from .model import _yaml
    return model_from_config(_yaml("model_from_yaml").safe_load(yaml_string), custom_objects)


def load_model(filepath, custom_objects=None, compile=True, options=None):  # noqa: A002
    """A model saved with ``model.save`` (config, weights, optimizer state)."""
    from ..checkpoint.saving import load_model as _load
    return _load(filepath, custom_objects=custom_objects, compile=compile)


def save_model(model, filepath, overwrite=True, include_optimizer=True, **kwargs):
    return model.save(filepath, overwrite=overwrite, include_optimizer=include_optimizer)


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with the same architecture and freshly initialised weights."""
    from ..layers.serialization import serialize, deserialize
    if input_tensors is not None or clone_function is not None:
        raise NotImplementedError("clone_model: input_tensors and clone_function are not supported")
    return deserialize(serialize(model))
