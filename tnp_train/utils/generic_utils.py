"""Keras's generic serialization helpers (``tf.keras.utils`` of TF 2.4):
``get_custom_objects``, ``serialize_keras_object``, ``deserialize_keras_object``.

The registry they share is the one ``tt.utils.register_keras_serializable`` and
``custom_object_scope`` fill (``tnp_train.layers.serialization``).
"""
from __future__ import annotations

import inspect

from ..layers import serialization as _registry

__all__ = ["get_custom_objects", "serialize_keras_object", "deserialize_keras_object"]


def get_custom_objects():
    """The live global dict of custom objects (``register_keras_serializable`` puts
    ``"Package>Name"`` keys there); mirrors ``tf.keras.utils.get_custom_objects``. The objects
    of an active ``custom_object_scope`` are looked up but not listed here (TF copies them in)."""
    return _registry._REGISTERED


def serialize_keras_object(instance):
    """``{"class_name", "config"}`` for an object with ``get_config`` (config values that are
    Keras objects serialized in turn), the registered name of a function or class, None for
    None; mirrors ``tf.keras.utils.serialize_keras_object``."""
    if instance is None:
        return None
    if hasattr(instance, "get_config") and not inspect.isclass(instance):
        config = {}
        for key, item in instance.get_config().items():
            if isinstance(item, str):
                config[key] = item
                continue
            try:
                value = serialize_keras_object(item)
            except ValueError:
                value = item
            if isinstance(value, dict) and not isinstance(item, dict):
                # TF's marker: deserialize turns this value back into an object
                value["__passive_serialization__"] = True
            config[key] = value
        return {"class_name": _registry.get_registered_name(type(instance)), "config": config}
    if hasattr(instance, "__name__"):
        return _registry.get_registered_name(instance)
    raise ValueError("Cannot serialize", instance)


def _class_and_config(config, module_objects, custom_objects, printable_module_name):
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ValueError(f"Improper config format: {config}")
    class_name = config["class_name"]
    cls = _registry.get_registered_object(class_name, custom_objects, module_objects)
    if cls is None:
        raise ValueError(f"Unknown {printable_module_name}: {class_name}")
    cls_config = config["config"]
    if isinstance(cls_config, list):
        return cls, cls_config
    cls_config = dict(cls_config)
    for key, item in list(cls_config.items()):
        if isinstance(item, dict) and "__passive_serialization__" in item:
            cls_config[key] = deserialize_keras_object(
                item, module_objects=module_objects, custom_objects=custom_objects,
                printable_module_name="config_item")
        elif isinstance(item, str):
            fn = _registry.get_registered_object(item, custom_objects)
            if inspect.isfunction(fn):
                cls_config[key] = fn
    return cls, cls_config


def deserialize_keras_object(identifier, module_objects=None, custom_objects=None,
                             printable_module_name="object"):
    """An object from a ``{"class_name", "config"}`` dict (``from_config``, or the class
    called with the config), or from a name (a class is instantiated with no arguments, a
    function returned); names are looked up in ``custom_objects``, the registered objects, then
    ``module_objects``; mirrors ``tf.keras.utils.deserialize_keras_object``."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls, cls_config = _class_and_config(identifier, module_objects, custom_objects,
                                            printable_module_name)
        custom_objects = custom_objects or {}
        from_config = getattr(cls, "from_config", None)
        if from_config is not None:
            if "custom_objects" in inspect.signature(from_config).parameters:
                return from_config(cls_config, custom_objects={**get_custom_objects(),
                                                               **custom_objects})
            with _registry.CustomObjectScope(custom_objects):
                return from_config(cls_config)
        with _registry.CustomObjectScope(custom_objects):
            return cls(**cls_config)
    if isinstance(identifier, str):
        obj = _registry.get_registered_object(identifier, custom_objects, None)
        if obj is None:
            obj = (module_objects or {}).get(identifier)
        if obj is None:
            raise ValueError(f"Unknown {printable_module_name}: {identifier}")
        return obj() if inspect.isclass(obj) else obj
    if inspect.isfunction(identifier):
        return identifier
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")
