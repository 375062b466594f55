"""Layer (and model) configs: ``tt.layers.serialize``/``deserialize`` as TF 2.4's, through the
one custom-object registry (:mod:`tnp_train.utils.serialization`)."""
from __future__ import annotations

import importlib
import inspect

from ..utils.serialization import (builtin_objects, deserialize_keras_object,
                                   serialize_keras_object)

__all__ = ["serialize", "deserialize"]

_BUILTIN: dict = {}


def serialize(layer):
    """``{"class_name", "config"}`` of a layer or model (its registered name, if it has one);
    mirrors ``tf.keras.layers.serialize``."""
    return serialize_keras_object(layer)


def _builtin_classes():
    if not _BUILTIN:
        layers = importlib.import_module("tnp_train.layers")
        out = {n: getattr(layers, n) for n in dir(layers) if inspect.isclass(getattr(layers, n))}
        out.update({n: getattr(layers.experimental, n) for n in layers.experimental.__all__})
        pre = layers.experimental.preprocessing
        out.update({n: getattr(pre, n) for n in pre.__all__})
        # what add_loss/add_metric insert into a functional model (not public, as in TF)
        out.update({"AddLoss": layers.core.AddLoss, "AddMetric": layers.core.AddMetric})
        _BUILTIN.update(out)
    # a model nested in a model is a layer of it: the models, above the layers, register
    # their classes when imported (read at each call: they may come after the first)
    return {**_BUILTIN, **builtin_objects("layer")}


def deserialize(config, custom_objects=None):
    """A layer or model from ``{"class_name": ..., "config": ...}``; mirrors
    ``tf.keras.layers.deserialize``."""
    return deserialize_keras_object(config, module_objects=_builtin_classes(),
                                    custom_objects=custom_objects, printable_module_name="layer")
