"""The ``get`` / ``serialize`` / ``deserialize`` plumbing that ``tt.losses``, ``tt.metrics``,
``tt.regularizers`` and ``tt.initializers`` share (``tf.keras.<kind>.get`` and friends).

Each package keeps its own public functions (and registry ``_BY_NAME``); these helpers hold the
steps that are the same in all of them, so that their messages stay the same too.
"""
from __future__ import annotations

__all__ = ["get_object", "class_config", "name_or_class_config", "split_config",
           "lookup_config"]


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


def class_config(obj, who):
    """``{"class_name", "config"}`` of an object with ``get_config``; ``who`` names the
    package in the ValueError (``"initializers"``)."""
    if not hasattr(obj, "get_config"):
        raise ValueError(f"{who}.serialize: {obj!r} has no get_config")
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def name_or_class_config(obj, base, who):
    """``{"class_name", "config"}`` for an instance of ``base``, else the object's
    ``__name__`` (a function form); ValueError when it has neither."""
    if isinstance(obj, base):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    name = getattr(obj, "__name__", None)
    if name is None:
        raise ValueError(f"{who}.serialize: cannot serialize {obj!r}")
    return name


def split_config(config, who):
    """``(key, kwargs)`` of a ``serialize`` dict, or ``(config, None)`` for anything else (a
    name); a dict without ``class_name`` is a ValueError."""
    if isinstance(config, dict):
        if "class_name" not in config:
            raise ValueError(f"{who}.deserialize: a dict needs 'class_name', got {config!r}")
        return config["class_name"], dict(config.get("config") or {})
    return config, None


def lookup_config(config, registry, custom_objects, who, kind):
    """``(obj, kwargs)`` for a name (``kwargs`` empty) or a ``serialize`` dict, ``obj`` looked
    up in ``custom_objects`` first, then in ``registry``; anything else, or an unknown name, is
    a ValueError."""
    if isinstance(config, str):
        name, kwargs = config, {}
    elif isinstance(config, dict) and "class_name" in config:
        name, kwargs = config["class_name"], dict(config.get("config") or {})
    else:
        raise ValueError(f"{who}.deserialize: expected a name or a dict with 'class_name', "
                         f"got {config!r}")
    obj = (custom_objects or {}).get(name) or registry.get(name)
    if obj is None:
        raise ValueError(f"Unknown {kind}: {name!r}; known: {sorted(registry)}")
    return obj, kwargs
