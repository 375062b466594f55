"""The one registry of custom objects, and the ``serialize``/``deserialize``/``get`` plumbing
every kind shares (TF 2.4's ``tf.keras.utils`` generic_utils).

``register_keras_serializable``, ``custom_object_scope`` and ``get_custom_objects()`` fill one
global dict; ``deserialize_keras_object`` looks names up in it, so a registered or scoped
custom object is found by ``tt.losses.get``, ``tt.metrics.get``, ``tt.optimizers.get``,
``tt.layers.deserialize``, ``tt.initializers.get``, ``tt.regularizers.get``,
``tt.constraints.get``, ``tt.activations.get`` and ``load_model`` alike. This module imports
nothing of tnp_train: every kind sits above it.

Beside it, a table of built-in objects by kind (``register_builtins``/``builtin_objects``):
a package puts its own objects there when it is imported, so that a package below it finds
them by name without importing it (the activations find the advanced-activation layers, the
layers find the models, the mixed-precision names find ``Layer``). A class that is not there
has no instance yet, since its package is not imported.
"""
from __future__ import annotations

import inspect

__all__ = ["register_keras_serializable", "get_registered_name", "get_registered_object",
           "CustomObjectScope", "custom_object_scope", "get_custom_objects",
           "serialize_keras_object", "deserialize_keras_object", "get_object",
           "register_builtins", "register_builtin_provider", "builtin_objects"]

# name -> object: registered "Package>Name" entries, entries users add through
# get_custom_objects(), and the entries of the active custom_object_scopes (as in TF 2.4)
_GLOBAL_CUSTOM_OBJECTS: dict = {}
# object -> its registered "Package>Name" (what serialize writes)
_GLOBAL_CUSTOM_NAMES: dict = {}
_MISSING = object()
# kind -> {name: built-in object}; kept apart from the custom objects, which are the user's
_BUILTIN_OBJECTS: dict = {}


# kind -> module names whose import registers built-ins of that kind, not imported yet
_PROVIDERS: dict = {}


def register_builtins(kind, objects):
    """Make ``objects`` (``{name: object}``) the built-in objects of that name under ``kind``
    (``"activation"``, ``"layer"``); a package calls it for its own objects when imported."""
    _BUILTIN_OBJECTS.setdefault(kind, {}).update(objects)


def register_builtin_provider(kind, module_name):
    """Name a module whose import registers built-ins of ``kind``: it is imported the first
    time those are asked for. The package module declares its rooms' providers, so a lower room
    finds the objects of a higher one by name (``activations.get("LeakyReLU")`` a layer, as in
    TF 2.4) without importing it."""
    _PROVIDERS.setdefault(kind, []).append(module_name)


def builtin_objects(kind):
    """``{name: object}`` of the built-in objects registered under ``kind`` (the providers
    named for ``kind`` imported first)."""
    pending = _PROVIDERS.pop(kind, None)
    if pending:
        import importlib

        for name in pending:
            importlib.import_module(name)
    return _BUILTIN_OBJECTS.get(kind, {})


def register_keras_serializable(package="Custom", name=None):
    """Decorator: registers a class or function as ``"package>name"`` (``name`` defaults to its
    ``__name__``), the name serialization writes and deserialization finds; mirrors
    ``tf.keras.utils.register_keras_serializable``."""
    def decorator(arg):
        registered_name = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        if registered_name in _GLOBAL_CUSTOM_OBJECTS:
            raise ValueError(f"{registered_name} has already been registered to "
                             f"{_GLOBAL_CUSTOM_OBJECTS[registered_name]}")
        if arg in _GLOBAL_CUSTOM_NAMES:
            raise ValueError(f"{arg} has already been registered to "
                             f"{_GLOBAL_CUSTOM_NAMES[arg]}")
        _GLOBAL_CUSTOM_OBJECTS[registered_name] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered_name
        return arg
    return decorator


def get_registered_name(obj):
    """The name ``obj`` was registered under, else its ``__name__``; mirrors
    ``tf.keras.utils.get_registered_name``."""
    try:
        return _GLOBAL_CUSTOM_NAMES[obj]
    except (KeyError, TypeError):     # TypeError: an unhashable object is never registered
        return obj.__name__


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object called ``name`` in the global custom objects (registered, added, or in an
    active ``custom_object_scope``), else in ``custom_objects``, else in ``module_objects``;
    None if none has it. Mirrors ``tf.keras.utils.get_registered_object``."""
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def get_custom_objects():
    """The live global dict of custom objects (``get_custom_objects()["f"] = f`` makes ``"f"``
    known everywhere); mirrors ``tf.keras.utils.get_custom_objects``."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """``with custom_object_scope({"MyLayer": MyLayer}):`` makes the names known to every
    ``get``/``deserialize`` inside the block; mirrors ``tf.keras.utils.CustomObjectScope``.
    On exit only the scope's own names are put back, so objects registered inside the block
    stay registered (TF 2.4 restores a copy of the whole dict, dropping them)."""

    def __init__(self, *args):
        self.custom_objects = args
        self._saved = None

    def __enter__(self):
        saved = {}
        for objects in self.custom_objects:
            for key, value in (objects or {}).items():
                saved.setdefault(key, _GLOBAL_CUSTOM_OBJECTS.get(key, _MISSING))
                _GLOBAL_CUSTOM_OBJECTS[key] = value
        self._saved = saved
        return self

    def __exit__(self, *exc):
        for key, value in self._saved.items():
            if value is _MISSING:
                _GLOBAL_CUSTOM_OBJECTS.pop(key, None)
            else:
                _GLOBAL_CUSTOM_OBJECTS[key] = value
        self._saved = None


custom_object_scope = CustomObjectScope


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
        return {"class_name": get_registered_name(type(instance)), "config": config}
    if hasattr(instance, "__name__"):
        return get_registered_name(instance)
    raise ValueError("Cannot serialize", instance)


def _unknown(printable_module_name, name):
    return ValueError(f"Unknown {printable_module_name}: {name}. Please ensure this object is "
                      f"passed to the `custom_objects` argument, used inside a "
                      f"`tt.utils.custom_object_scope`, or registered with "
                      f"`tt.utils.register_keras_serializable`.")


def _class_and_config(config, module_objects, custom_objects, printable_module_name):
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ValueError(f"Improper config format: {config}")
    class_name = config["class_name"]
    cls = get_registered_object(class_name, custom_objects, module_objects)
    if cls is None:
        raise _unknown(printable_module_name, class_name)
    cls_config = config["config"]
    if isinstance(cls_config, list):     # an old Sequential config: a list of layer configs
        return cls, cls_config
    cls_config = dict(cls_config)
    for key, item in cls_config.items():
        if key == "name":                # a name, never a function of the same name (as TF)
            continue
        if isinstance(item, dict) and "__passive_serialization__" in item:
            cls_config[key] = deserialize_keras_object(
                item, module_objects=module_objects, custom_objects=custom_objects,
                printable_module_name="config_item")
        elif isinstance(item, str):
            fn = get_registered_object(item, custom_objects)
            if inspect.isfunction(fn):
                cls_config[key] = fn
    return cls, cls_config


def deserialize_keras_object(identifier, module_objects=None, custom_objects=None,
                             printable_module_name="object"):
    """An object from a ``{"class_name", "config"}`` dict (``from_config``, or the class
    called with the config), or from a name (a class is instantiated with no arguments, a
    function returned); a name is looked up in ``custom_objects``, the global custom objects
    (registered, added, scoped), then ``module_objects``. Unknown: ``ValueError("Unknown
    <printable_module_name>: <name>...")``. Mirrors ``tf.keras.utils.deserialize_keras_object``."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls, cls_config = _class_and_config(identifier, module_objects, custom_objects,
                                            printable_module_name)
        custom_objects = custom_objects or {}
        from_config = getattr(cls, "from_config", None)
        if from_config is not None:
            if "custom_objects" in inspect.signature(from_config).parameters:
                return from_config(cls_config, custom_objects={**_GLOBAL_CUSTOM_OBJECTS,
                                                               **custom_objects})
            with CustomObjectScope(custom_objects):
                return from_config(cls_config)
        with CustomObjectScope(custom_objects):
            return cls(**cls_config)
    if isinstance(identifier, str):
        if custom_objects and identifier in custom_objects:
            obj = custom_objects[identifier]
        elif identifier in _GLOBAL_CUSTOM_OBJECTS:
            obj = _GLOBAL_CUSTOM_OBJECTS[identifier]
        else:
            obj = (module_objects or {}).get(identifier)
            if obj is None:
                raise _unknown(printable_module_name, identifier)
        return obj() if inspect.isclass(obj) else obj
    if inspect.isfunction(identifier):
        return identifier
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")


def get_object(identifier, deserialize, kind):
    """``tf.keras.<kind>.get``: None gives None, a name or a ``serialize`` dict goes through
    ``deserialize``, a callable (an instance, a function) is returned as it is; anything else
    is a ValueError naming ``kind`` (``"loss function"``, ``"metric"``...)."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret {kind} identifier: {identifier!r}")
