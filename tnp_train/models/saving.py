"""Whole-model saving and loading (``tf.keras.models.save_model`` / ``load_model``) and models
from configs (``model_from_config``/``_json``/``_yaml``): the files are written and read by
:mod:`tnp_train.checkpoint.saving`; building the model from its config happens here, with the
models."""
from __future__ import annotations

import os
import zipfile

from .. import losses as _losses
from .. import metrics as _metrics
from ..checkpoint import saving as _saving
from ..layers import serialization as _layer_serialization
from ..utils.serialization import CustomObjectScope, get_registered_object

__all__ = ["load_model", "save_model", "model_from_config", "model_from_json",
           "model_from_yaml"]


def model_from_config(config, custom_objects=None):
    """A model (or layer) from ``{"class_name": ..., "config": ...}``."""
    return _layer_serialization.deserialize(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """The model :meth:`Model.to_json` described (``tf.keras.models.model_from_json``)."""
    import json
    return model_from_config(json.loads(json_string), custom_objects)


def model_from_yaml(yaml_string, custom_objects=None):
    """The model :meth:`Model.to_yaml` described (TF 2.4's ``model_from_yaml``; needs
    PyYAML). Read with ``yaml.safe_load``: a YAML document cannot run code here."""
    from .model import _yaml
    return model_from_config(_yaml("model_from_yaml").safe_load(yaml_string), custom_objects)


def save_model(model, filepath, overwrite=True, include_optimizer=True, save_format=None,
               signatures=None, options=None, save_traces=True):
    """``model.save(filepath, ...)``; mirrors ``tf.keras.models.save_model`` (``.h5`` /
    ``save_format="h5"``: tf_keras's HDF5 file; ``.keras``: a Keras 3 archive; else tnp's
    directory; ``signatures``, ``options``, ``save_traces`` are TF graph options, ignored)."""
    return model.save(filepath, overwrite=overwrite, include_optimizer=include_optimizer,
                      save_format=save_format)


def load_model(filepath, custom_objects=None, compile=True, options=None,  # noqa: A002
               safe_mode=True):
    """The model saved at ``filepath``: tnp's directory (``model.save``), a tf_keras / TF 2.x
    HDF5 file, or a Keras 3 ``.keras`` archive; rebuilt from its config, compiled again with
    its optimizer state if ``compile`` and it was compiled, weights restored.
    ``custom_objects`` (or a ``custom_object_scope``, or ``tt.utils.register_keras_serializable``)
    makes custom layers, losses, metrics... known. A ``Lambda`` layer stored as Python bytecode
    is loaded only with ``safe_mode=False`` (Keras 3's rule). Mirrors
    ``tf.keras.models.load_model`` (``options`` is ignored)."""
    from ..checkpoint import keras_h5
    from . import keras_files
    path = os.fspath(filepath)
    if os.path.isfile(path):
        if keras_h5.is_hdf5(path):
            return keras_files.load_h5_model(path, custom_objects, compile, safe_mode)
        if zipfile.is_zipfile(path):
            return keras_files.load_keras_archive(path, custom_objects, compile, safe_mode)
    elif os.path.isdir(path) and not os.path.isfile(os.path.join(path, _saving.CONFIG_NAME)):
        keras_files.check_not_saved_model(path, "load_model")
    meta, weights, values = _saving.read_model(filepath)   # checked before anything is built
    # as TF: the scope covers the compile arguments too (a custom loss named in them)
    with CustomObjectScope(custom_objects or {}):
        model = model_from_config({"class_name": meta["class_name"], "config": meta["config"]},
                                  custom_objects=custom_objects)
        if compile and meta.get("compile_config"):
            model.compile_from_config(_with_custom_objects(meta["compile_config"]))
    return _saving.restore_model(model, weights, values, include_optimizer=compile)


def _with_custom_objects(compile_config):
    """The compile config with each loss and metric saved by the name of a custom object (a
    registered or ``custom_objects`` function, say) replaced by that object while
    ``load_model``'s scope knows it: ``compile`` looks names up at the first batch, after the
    scope has closed. A metric so keeps the name it had before saving (the function's)."""
    def resolve(value, module):
        if isinstance(value, str):
            return module.get(value) if get_registered_object(value) is not None else value
        if isinstance(value, (list, tuple)):
            return [resolve(v, module) for v in value]
        if isinstance(value, dict) and "class_name" not in value:     # per output
            return {k: resolve(v, module) for k, v in value.items()}
        return value
    out = dict(compile_config)
    for key, module in (("loss", _losses), ("metrics", _metrics), ("weighted_metrics", _metrics)):
        out[key] = resolve(out.get(key), module)
    return out
