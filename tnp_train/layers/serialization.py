"""Layer (and model) configs: ``serialize``/``deserialize`` by class name, with
``custom_objects`` and classes registered through ``tt.utils.register_keras_serializable``."""
from __future__ import annotations

import inspect

__all__ = ["serialize", "deserialize", "register_keras_serializable", "get_registered_object",
           "get_registered_name", "CustomObjectScope", "custom_object_scope"]

_REGISTERED: dict = {}
_scope_stack: list = []


def register_keras_serializable(package="Custom", name=None):
    """Decorator: make a class or function known to ``deserialize``/``load_model`` as
    ``"package>name"`` (and by its bare name)."""
    def decorator(obj):
        key = f"{package}>{name or obj.__name__}"
        if key in _REGISTERED and _REGISTERED[key] is not obj:
            raise ValueError(f"{key} has already been registered to {_REGISTERED[key]}")
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        _REGISTERED[key] = obj
        obj._registered_name = key
        return obj
    return decorator


def get_registered_name(obj):
    return getattr(obj, "_registered_name", None) or getattr(obj, "__name__", type(obj).__name__)


def get_registered_object(name, custom_objects=None, module_objects=None):
    for scope in reversed(_scope_stack):
        if name in scope:
            return scope[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in _REGISTERED:
        return _REGISTERED[name]
    for key, obj in _REGISTERED.items():
        if key.split(">", 1)[-1] == name:     # get_custom_objects() keys may lack ">"
            return obj
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


class CustomObjectScope:
    """``with tt.utils.custom_object_scope({"MyLayer": MyLayer}):`` makes the names known."""

    def __init__(self, *objects):
        self.objects = {}
        for o in objects:
            self.objects.update(o)

    def __enter__(self):
        _scope_stack.append(self.objects)
        return self

    def __exit__(self, *exc):
        _scope_stack.pop()


custom_object_scope = CustomObjectScope


def serialize(layer):
    return {"class_name": get_registered_name(type(layer)), "config": layer.get_config()}


def _builtin_classes():
    from .. import layers as _layers
    from .. import models as _models
    out = {n: getattr(_layers, n) for n in dir(_layers) if inspect.isclass(getattr(_layers, n))}
    out.update({n: getattr(_layers.experimental, n) for n in _layers.experimental.__all__})
    _pre = _layers.experimental.preprocessing
    out.update({n: getattr(_pre, n) for n in _pre.__all__})
    out.update({"Sequential": _models.Sequential, "Functional": _models.Functional,
                "Model": _models.Model})
    return out


def deserialize(config, custom_objects=None):
    """A layer or model from ``{"class_name": ..., "config": ...}``."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"deserialize: expected a dict with 'class_name' and 'config', got "
                         f"{config!r}")
    name = config["class_name"]
    cls = get_registered_object(name, custom_objects, _builtin_classes())
    if cls is None:
        raise ValueError(f"Unknown layer: '{name}'. Please ensure you are using a "
                         f"`tt.utils.custom_object_scope` and that this object is included in "
                         f"the scope, or pass it in custom_objects.")
    from_config = cls.from_config
    params = inspect.signature(from_config).parameters
    if "custom_objects" in params:
        return from_config(config["config"], custom_objects=custom_objects)
    return from_config(config["config"])
