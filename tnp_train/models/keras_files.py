"""Keras's model files, both ways: tf_keras / TF 2.4 HDF5 (``model.save("m.h5")``,
``save_weights("w.h5")``) and Keras 3 (``.keras`` archives, ``.weights.h5``), so that a model
moves between tnp_train, tf_keras 2.x and Keras 3 with its weights, compile arguments and
optimizer state. The HDF5 objects are read and written by :mod:`tnp_train.checkpoint.keras_h5`
(link, storage, dtype and size checks; atomic writes); what goes in them, and how a file's
weights land in a model, is decided here.

Nothing in a file runs code: configs are JSON, a ``Lambda`` layer holding Python bytecode is
refused unless ``safe_mode=False`` (as Keras 3), classes are looked up by name among the
registered ones (a config's ``module`` key is never imported), and every dataset's shape is
checked against the model before it is read.
"""
from __future__ import annotations

import base64
import io
import json
import marshal
import os
import re
import types
import warnings
import zipfile

import numpy as _np

from ..checkpoint import keras_h5 as _h5
from ..checkpoint.keras_h5 import CheckpointFormatError, atomic_write_bytes
from ..layers import serialization as _layer_serialization
from ..utils.serialization import CustomObjectScope, get_registered_name

__all__ = ["model_file_kind", "weights_file_kind", "save_h5_model", "load_h5_model",
           "save_h5_weights", "load_h5_weights", "save_keras_archive", "load_keras_archive",
           "save_keras3_weights", "load_keras3_weights", "check_not_saved_model",
           "load_keras_archive_weights", "is_keras3_weights",
           "KERAS_VERSION"]

KERAS_VERSION = "2.4.0"           # what tnp_train's configs mirror (TF 2.4's Keras)
_ARCHIVE_LIMIT = 1 << 30          # bytes of one member of a .keras archive
_K3_WEIGHTS = "model.weights.h5"


# ================================================================ which format
def model_file_kind(filepath, save_format=None):
    """``"h5"``, ``"keras"`` or ``"tf"`` (tnp's directory) for ``model.save``: as tf_keras 2.x,
    an ``.h5``/``.hdf5`` name or ``save_format="h5"`` is HDF5, a ``.keras`` name a Keras 3
    archive."""
    name = os.fspath(filepath)
    fmt = None if save_format is None else str(save_format).lower()
    if fmt in ("h5", "hdf5", "keras_h5"):
        return "h5"
    if fmt == "keras":
        return "keras"
    if fmt not in (None, "tf"):
        raise ValueError(f"model.save: unknown save_format {save_format!r} (expected 'tf', "
                         f"'h5' or 'keras')")
    if fmt is None and name.endswith((".h5", ".hdf5")):
        return "h5"
    if fmt is None and name.endswith(".keras"):
        return "keras"
    return "tf"


def weights_file_kind(filepath, save_format=None):
    """``"h5"``, ``"keras3"`` or ``"tf"`` (tnp's checkpoint) for ``save_weights``: a
    ``.weights.h5`` name is Keras 3's layout, another ``.h5``/``.hdf5``/``.keras`` name or
    ``save_format="h5"`` tf_keras's."""
    name = os.fspath(filepath)
    fmt = None if save_format is None else str(save_format).lower()
    if fmt not in (None, "tf", "h5", "hdf5", "keras_h5"):
        raise ValueError(f"save_weights: unknown save_format {save_format!r} (expected 'tf' or "
                         f"'h5')")
    if name.endswith(".weights.h5") and fmt != "tf":
        return "keras3"
    if fmt in ("h5", "hdf5", "keras_h5") or (fmt is None and
                                             name.endswith((".h5", ".hdf5", ".keras"))):
        return "h5"
    return "tf"


def check_not_saved_model(filepath, what):
    """A TF SavedModel directory: a ValueError saying what to do instead."""
    if os.path.isfile(os.path.join(filepath, "saved_model.pb")):
        raise ValueError(
            f"{what}({filepath!r}) is a TensorFlow SavedModel directory (saved_model.pb), which "
            f"holds TF graphs tnp_train cannot run. Save the model from TensorFlow as HDF5 "
            f"(model.save('model.h5') in tf_keras / TF 2.x) or as a Keras 3 archive "
            f"(model.save('model.keras')) and load that file here; or rebuild the architecture "
            f"and call model.load_weights('weights.h5') with weights saved as HDF5")


def _json_default(obj):
    from .model import _json_default as default
    return default(obj)


def _dumps(obj):
    return json.dumps(obj, default=_json_default)


# ================================================================ configs
def _model_config(model):
    return {"class_name": get_registered_name(type(model)), "config": model.get_config()}


def _training_config(model):
    """TF 2.4's ``training_config`` of a compiled model (None otherwise)."""
    get = getattr(model, "get_compile_config", None)
    cfg = get() if callable(get) and getattr(model, "optimizer", None) is not None else None
    if cfg is None:
        return None
    opt = dict(cfg["optimizer"])
    # TF 2.4's optimizer configs leave unset options out; tf_keras 2.x builds its legacy
    # optimizer from such a config, which refuses keys it does not know
    opt["config"] = {k: v for k, v in opt["config"].items()
                     if not (v is None and k in ("clipnorm", "clipvalue", "global_clipnorm",
                                                 "weight_decay"))}
    metrics = cfg["metrics"]
    if isinstance(metrics, list) and len(getattr(model, "outputs", None) or []) == 1:
        metrics = [metrics]     # TF writes one list per output
    return {"loss": cfg["loss"], "metrics": metrics,
            "weighted_metrics": cfg["weighted_metrics"], "loss_weights": cfg["loss_weights"],
            "optimizer_config": opt}


def _compile_config_of(training_config, where):
    if not isinstance(training_config, dict) or \
            not isinstance(training_config.get("optimizer_config"), dict):
        raise CheckpointFormatError(f"{where}: training_config has no optimizer_config")
    metrics = training_config.get("metrics")
    if isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], list):
        metrics = metrics[0]     # tf_keras 2.x writes one list per output
    weighted = training_config.get("weighted_metrics")
    if isinstance(weighted, list) and len(weighted) == 1 and isinstance(weighted[0], list):
        weighted = weighted[0]
    return {"optimizer": _optimizer_config(training_config["optimizer_config"]),
            "loss": training_config.get("loss"), "metrics": metrics,
            "loss_weights": training_config.get("loss_weights"), "weighted_metrics": weighted}


# options of tf_keras 2.11+'s and Keras 3's optimizers that TF 2.4's do not have; dropped
# when they hold their default (anything else is refused by the optimizer, by name)
_NEW_OPTIMIZER_DEFAULTS = {"is_legacy_optimizer": None, "use_ema": False, "ema_momentum": 0.99,
                           "ema_overwrite_frequency": None, "jit_compile": None,
                           "loss_scale_factor": None, "gradient_accumulation_steps": None}


def _optimizer_config(config):
    out = {k: v for k, v in config.items() if k not in ("module", "registered_name")}
    name = out.get("class_name")
    if isinstance(name, str) and name.startswith("Custom>"):
        out["class_name"] = name[len("Custom>"):]   # tf_keras 2.11+'s registered names
    inner = dict(out.get("config") or {})
    for key, default in _NEW_OPTIMIZER_DEFAULTS.items():
        if key in inner and (default is None or inner[key] == default or key in
                             ("is_legacy_optimizer", "jit_compile")):
            del inner[key]
    out["config"] = inner
    return out


def _check_lambdas(config, where, safe_mode):
    """``Lambda`` layers whose function is Python bytecode (what TF writes for a lambda):
    refused in safe mode, else the code is loaded (as Keras 3 with ``safe_mode=False``)."""
    if isinstance(config, list):
        for c in config:
            _check_lambdas(c, where, safe_mode)
        return
    if not isinstance(config, dict):
        return
    if config.get("class_name") == "Lambda" and isinstance(config.get("config"), dict):
        cfg = config["config"]
        fn = cfg.get("function")
        if isinstance(fn, (list, tuple)) or cfg.get("function_type") == "lambda":
            if safe_mode:
                raise ValueError(
                    f"{where}: layer {cfg.get('name')!r} is a Lambda layer whose function is "
                    f"stored as Python bytecode; loading it would run code from the file. If "
                    f"you trust the file, pass safe_mode=False; otherwise rebuild the layer and "
                    f"pass its function in custom_objects={{{cfg.get('name')!r}: fn}}")
            cfg["function"] = _load_bytecode(fn, where)
            for key in ("function_type", "module", "output_shape_type", "output_shape_module"):
                cfg.pop(key, None)
            if isinstance(cfg.get("output_shape"), (list, tuple)) and cfg.get(
                    "output_shape_type") == "lambda":
                cfg["output_shape"] = _load_bytecode(cfg["output_shape"], where)
    for v in config.values():
        if isinstance(v, (dict, list)):
            _check_lambdas(v, where, safe_mode)


def _load_bytecode(fn, where):
    code_text = fn[0] if isinstance(fn, (list, tuple)) else fn
    try:
        code = marshal.loads(base64.b64decode(code_text.encode("ascii")))
    except (ValueError, TypeError, EOFError) as e:
        raise ValueError(f"{where}: a Lambda layer's bytecode cannot be loaded (written by "
                         f"another Python version?): {e}") from None
    return types.FunctionType(code, {"__builtins__": __builtins__})


# Keras 3 configs: what differs from TF 2.4's, undone (the rest is the same)
def _from_keras3(obj, ours=False):
    """``ours``: the archive was written by tnp_train, whose nodes hold each call exactly."""
    if isinstance(obj, list):
        return [_from_keras3(v, ours) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if obj.get("class_name") in ("DTypePolicy", "FloatDTypePolicy") and \
            isinstance(obj.get("config"), dict):
        return obj["config"].get("name")
    out = {}
    for k, v in obj.items():
        if k in ("module", "registered_name", "build_config", "compile_config",
                 "shared_object_id") or (k in ("quantization_config", "input_axes",
                                               "output_axes", "optional") and not v):
            continue
        # a call's arguments are values, not configs: only their tensors change form
        out[k] = [_keras3_node(n, ours) for n in v] if k == "inbound_nodes" and \
            isinstance(v, list) else _from_keras3(v, ours)
    if out.get("class_name") == "InputLayer" and isinstance(out.get("config"), dict):
        cfg = out["config"]
        if "batch_shape" in cfg:
            cfg["batch_input_shape"] = cfg.pop("batch_shape")
    if isinstance(out.get("config"), dict) and "layers" in out["config"] and \
            "input_layers" in out["config"]:
        out["config"] = _keras3_functional(out["config"])
    return out


def _keras3_tensors(obj):
    if isinstance(obj, list):
        return [_keras3_tensors(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if obj.get("class_name") == "__keras_tensor__" and isinstance(obj.get("config"), dict):
        return {"__keras_tensor__": list(obj["config"]["keras_history"])}
    return {k: _keras3_tensors(v) for k, v in obj.items()}


def _keras3_node(node, ours):
    """A Keras 3 node (``{"args", "kwargs"}``) in our form: only its tensors change."""
    if not isinstance(node, dict) or set(node) != {"args", "kwargs"}:
        return _keras3_tensors(node)        # TF 2.4's list form, read as such later
    kwargs = node["kwargs"]
    if not ours and isinstance(kwargs, dict) and "mask" in kwargs and kwargs["mask"] is None:
        # Keras 3 records mask=None on layers whose call takes one (BatchNormalization),
        # meaning "the input's mask"; ours passes the mask only where the call was given one
        kwargs = {k: v for k, v in kwargs.items() if k != "mask"}
    return {"args": _keras3_tensors(node["args"]), "kwargs": _keras3_tensors(kwargs)}


def _keras3_functional(cfg):
    """Keras 3 writes the model's inputs and outputs as ``[name, node, tensor]`` leaves in their
    structure (a single tensor a bare leaf, ``[[name, 0, 0]]`` a one-element list, as Keras 3
    reads them); tensors in nodes are already converted by :func:`_from_keras3`."""
    from_one = _keras3_functional_layers(cfg)

    def ends(x):
        if isinstance(x, list) and len(x) == 3 and isinstance(x[0], str):
            return {"__keras_tensor__": [x[0], x[1] - (x[0] in from_one), x[2]]}
        if isinstance(x, dict) and set(x) == {"__keras_tensor__"}:
            return x
        if isinstance(x, list):
            return [ends(e) for e in x]
        if isinstance(x, dict):
            return {k: ends(v) for k, v in x.items()}
        return x
    return {**cfg, "input_layers": ends(cfg["input_layers"]),
            "output_layers": ends(cfg["output_layers"])}


def _build_model(model_config, where, custom_objects, safe_mode):
    if not isinstance(model_config, dict) or not isinstance(model_config.get("class_name"), str) \
            or not isinstance(model_config.get("config"), (dict, list)):
        raise CheckpointFormatError(f"{where}: model_config is not a Keras model config")
    _check_lambdas(model_config, where, safe_mode)
    try:
        return _layer_serialization.deserialize(model_config, custom_objects)
    except (KeyError, IndexError, TypeError) as e:
        raise ValueError(f"{where}: the model config cannot be built: {type(e).__name__}: "
                         f"{e}") from None


# ================================================================ tf_keras HDF5: weights
def _file_weight_name(weight):
    return f"{weight.name}:0"


def _layer_entries(model):
    """``[(layer name, [(weight name, array), ...])]`` in TF's layout (``model.layers``; a
    Sequential's input layer is not among them, as in TF)."""
    return [(layer.name, [(_file_weight_name(w), w.numpy()) for w in layer.weights])
            for layer in model.layers]


def _short(weight_name):
    """``"block1/conv/kernel:0"`` -> ``"kernel"``."""
    return weight_name.rsplit("/", 1)[-1].split(":", 1)[0]


def _match_layer(layer, saved, where, skip_mismatch):
    """The datasets of ``saved`` in the order of ``layer.weights`` (by the weights' short
    names when they tell, else the file's order), every shape checked; None (with a warning)
    when ``skip_mismatch`` and they do not fit."""
    weights = layer.weights
    if len(saved) != len(weights):
        msg = (f"{where}: layer {layer.name!r} has {len(weights)} weights "
               f"({[w.name for w in weights]}) but the file holds {len(saved)} "
               f"({[n for n, _ in saved]})")
        if skip_mismatch:
            warnings.warn(f"Skipping loading of weights for layer {layer.name}: {msg}",
                          stacklevel=4)
            return None
        raise ValueError(msg)
    by_short = {_short(n): ds for n, ds in saved}
    ordered = [by_short.get(_short(w.name)) for w in weights]
    if any(d is None for d in ordered) or len(by_short) != len(saved):
        ordered = [ds for _, ds in saved]
    for w, ds in zip(weights, ordered):
        if tuple(ds.shape) != tuple(w.shape):
            msg = (f"{where}: layer {layer.name!r}, weight {w.name!r}: the model has shape "
                   f"{tuple(w.shape)}, the file {tuple(ds.shape)} ({ds.name})")
            if skip_mismatch:
                warnings.warn(f"Skipping loading of weights for layer {layer.name}: {msg}",
                              stacklevel=4)
                return None
            raise ValueError(msg)
    return [(w, ds) for w, ds in zip(weights, ordered)]


def _assign_all(plan, where):
    """Read every planned dataset (shapes were checked), then assign: nothing is assigned when
    a read fails."""
    values = [(w, _h5.read_dataset(ds, tuple(w.shape), where)) for w, ds in plan]
    for w, a in values:
        w.assign(a.astype(_np.dtype(w.dtype), copy=False))


def _not_built(model, where):
    if not model.weights and getattr(model, "built", True) is False:
        raise ValueError(f"{where}: the model {model.name!r} has not created its weights yet; "
                         f"build it (call it on data or model.build(input_shape)) before "
                         f"loading HDF5 weights")


def load_weights_from_group(model, group, where, by_name=False, skip_mismatch=False):
    """tf_keras's ``load_weights`` of an HDF5 group (the root, or ``model_weights``): by
    topology (the model's layers with weights, in order, against the file's) or ``by_name``."""
    if skip_mismatch and not by_name:
        raise ValueError("When calling model.load_weights, skip_mismatch can only be set to "
                         "True when by_name is True.")
    _not_built(model, where)
    entries = _h5.weight_entries(group, where)
    plan = []
    if by_name:
        layers = {}
        for layer in model.layers:
            layers.setdefault(layer.name, []).append(layer)
        for lname, saved in entries:
            for layer in layers.get(lname, ()):
                pairs = _match_layer(layer, saved, where, skip_mismatch)
                if pairs:
                    plan.extend(pairs)
    else:
        mine = [layer for layer in model.layers if layer.weights]
        theirs = [(n, s) for n, s in entries if s]
        if len(mine) != len(theirs):
            raise ValueError(f"{where}: Layer count mismatch when loading weights from file. "
                             f"Model expected {len(mine)} layers, found {len(theirs)} saved "
                             f"layers (the model's: {[l.name for l in mine][:10]}; the file's: "
                             f"{[n for n, _ in theirs][:10]}). Pass by_name=True to load by "
                             f"layer name")
        for layer, (_, saved) in zip(mine, theirs):
            plan.extend(_match_layer(layer, saved, where, False))
    _assign_all(plan, where)


def save_h5_weights(model, filepath, overwrite=True):
    """``save_weights`` in tf_keras's HDF5 layout (no optimizer state, as TF)."""
    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite, "save_weights")
    entries = _layer_entries(model)

    def fill(f):
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = KERAS_VERSION
        _h5.write_weight_group(f, entries)
    return _h5.write_h5(filepath, fill, "save_weights")


def load_h5_weights(model, filepath, by_name=False, skip_mismatch=False):
    """``load_weights`` of a tf_keras HDF5 weights or model file."""
    where = os.fspath(filepath)
    with _h5.open_h5(where, "load_weights") as f:
        group = _h5.child(f, "model_weights", where) if "model_weights" in f else f
        load_weights_from_group(model, group, where, by_name, skip_mismatch)


def _check_overwrite(filepath, overwrite, what):
    if not overwrite and os.path.lexists(filepath):
        raise FileExistsError(f"{what}: {filepath} exists (overwrite=False)")
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"{what}: {filepath} is a directory (a model saved in tnp's "
                                f"directory format?); choose another name for the HDF5 file")


# ================================================================ optimizer state
# slot names of tf_keras 2.11+'s optimizers that TF 2.4's (and ours) call otherwise
_SLOT_ALIASES = {("sgd", "m"): "momentum", ("rmsprop", "velocity"): "rms",
                 ("rmsprop", "average_gradient"): "mg", ("adadelta", "accumulated_grad"):
                 "accum_grad", ("adadelta", "accumulated_delta_var"): "accum_var",
                 ("adamax", "u"): "v"}


def _optimizer_state(model):
    """``[(name in TF 2.4's layout, Variable)]``: iterations, other non-slot state, then the
    slots in creation order (each slot name for every variable before the next name), as
    TF 2.4's ``optimizer.weights``."""
    opt = getattr(model, "optimizer", None)
    opt = getattr(opt, "inner_optimizer", None) or opt
    if opt is None:
        return []
    prefix = opt.get_config().get("name") or type(opt).__name__
    slot_ids, slots = set(), []
    for slot_name in opt.get_slot_names():
        for var in model.trainable_weights:
            try:
                s = opt.get_slot(var, slot_name)
            except KeyError:
                continue
            slot_ids.add(id(s))
            slots.append((f"{prefix}/{var.name}/{slot_name}:0", s))
    out = [(f"{prefix}/iter:0", opt.iterations)]
    for v in opt.variables():
        if id(v) in slot_ids or v is opt.iterations or v.name.endswith("/learning_rate"):
            continue
        out.append((f"{prefix}/{v.name.rsplit('/', 1)[-1]}:0", v))
    return out + slots


def _restore_optimizer_h5(model, group, where):
    """The optimizer state in ``optimizer_weights`` (TF 2.4's names, or tf_keras 2.11+'s),
    put into ``model.optimizer`` by name; a warning, and a fresh optimizer, if it does not
    fit (as TF)."""
    opt = getattr(model, "optimizer", None)
    opt = getattr(opt, "inner_optimizer", None) or opt
    names = _h5.names_attr(group, "weight_names", where) or []
    if opt is None or not names:
        return
    opt.ensure_built(model.trainable_weights)
    kind = type(opt).__name__.lower()
    vars_by_name = {v.name: v for v in model.trainable_weights}
    slot_names = set(opt.get_slot_names())
    extras = {v.name.rsplit("/", 1)[-1]: v for v in opt.variables()}
    plan, problem = [], None
    for name in names:
        parts = name.split(":", 1)[0].split("/")
        target = None
        if parts[-1] in ("iter", "iteration"):
            target = opt.iterations
        else:
            body = parts[1:] if len(parts) > 1 else parts
            for var_parts, slot in ((body[:-1], body[-1]), (body[1:], body[0])):
                slot = slot if slot in slot_names else _SLOT_ALIASES.get((kind, slot), slot)
                var = vars_by_name.get("/".join(var_parts))
                if var is not None and slot in slot_names:
                    try:
                        target = opt.get_slot(var, slot)
                    except KeyError:
                        target = None
                    break
            if target is None and len(body) == 1 and body[0] in extras and \
                    body[0] != "learning_rate":
                target = extras[body[0]]
        if target is None:
            problem = f"the file's optimizer weight {name!r} has no counterpart here"
            break
        ds = _h5.dataset(group, name, where)
        if tuple(ds.shape) != tuple(target.shape):
            problem = (f"optimizer weight {name!r} has shape {tuple(ds.shape)}, the "
                       f"optimizer's {tuple(target.shape)}")
            break
        plan.append((target, ds))
    if problem is None and len({id(t) for t, _ in plan}) != len(plan):
        problem = "two of the file's optimizer weights name the same variable"
    if problem is not None:
        warnings.warn(f"{where}: Error in loading the saved optimizer state ({problem}). As a "
                      f"result, your model is starting with a freshly initialized optimizer.",
                      stacklevel=3)
        return
    _assign_all(plan, where)


# ================================================================ tf_keras HDF5: models
def save_h5_model(model, filepath, overwrite=True, include_optimizer=True):
    """``model.save("m.h5")``: tf_keras's whole-model HDF5 file, written atomically."""
    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite, "model.save")
    if not model.weights and getattr(model, "built", True) is False:
        raise ValueError(f"model.save({filepath!r}): the model {model.name!r} has no weights yet "
                         f"(build it first)")
    model_config = _dumps(_model_config(model))
    training = _training_config(model) if include_optimizer else None
    training_config = _dumps(training) if training is not None else None
    entries = _layer_entries(model)
    opt_state = [(n, v.numpy()) for n, v in _optimizer_state(model)] \
        if training is not None else []

    def fill(f):
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = KERAS_VERSION
        f.attrs["model_config"] = model_config
        if training_config is not None:
            f.attrs["training_config"] = training_config
        g = f.create_group("model_weights")
        g.attrs["backend"] = "tensorflow"
        g.attrs["keras_version"] = KERAS_VERSION
        _h5.write_weight_group(g, entries)
        if opt_state:
            o = f.create_group("optimizer_weights")
            _h5.write_names_attr(o, "weight_names", [n for n, _ in opt_state])
            for n, a in opt_state:
                _h5.write_dataset(o, n, a)
    return _h5.write_h5(filepath, fill, "model.save")


def load_h5_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """``load_model("m.h5")``: the model, its weights, its compile arguments and optimizer
    state (when ``compile`` and present)."""
    where = os.fspath(filepath)
    with _h5.open_h5(where, "load_model") as f:
        model_config = _h5.json_attr(f, "model_config", where)
        if model_config is None:
            raise ValueError(f"load_model({where!r}): no model found in config file (an HDF5 "
                             f"weights file? Build the model and call model.load_weights)")
        training = _h5.json_attr(f, "training_config", where) if compile else None
        with CustomObjectScope(custom_objects or {}):
            model = _build_model(model_config, where, custom_objects, safe_mode)
            group = _h5.child(f, "model_weights", where)
            load_weights_from_group(model, group, where)
            if training is not None:
                from .saving import _with_custom_objects
                model.compile_from_config(_with_custom_objects(
                    _compile_config_of(training, where)))
                if "optimizer_weights" in f:
                    _restore_optimizer_h5(model, _h5.child(f, "optimizer_weights", where),
                                          where)
    return model


# ================================================================ Keras 3: weights layout
def _snake(name):
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _keras3_paths(model, prefix="layers"):
    """``[(path, layer)]``: where Keras 3 keeps each layer's variables (``layers/dense``,
    ``layers/dense_1``... by class name and order; a nested model's layers below its own)."""
    from .model import Model
    out, used = [], {}
    for layer in model.layers:
        base = _snake(type(layer).__name__)
        if base in used:
            used[base] += 1
            base = f"{base}_{used[base]}"
        else:
            used[base] = 0
        path = f"{prefix}/{base}"
        if isinstance(layer, Model):
            out.extend(_keras3_paths(layer, f"{path}/layers"))
        else:
            out.append((path, layer))
    return out



def _keras3_state(model):
    """``{path: [arrays]}`` of the model's layers (Keras 3's weights layout)."""
    return {path: [w.numpy() for w in layer.weights] for path, layer in _keras3_paths(model)}


def _keras3_optimizer_state(model):
    """Keras 3's ``optimizer/vars``: iteration, learning rate, then each variable's slots side
    by side (Adam's m and v, SGD's momentum); None for optimizers whose Keras 3 layout differs."""
    opt = getattr(model, "optimizer", None)
    opt = getattr(opt, "inner_optimizer", None) or opt
    if opt is None or type(opt).__name__ not in _K3_SLOTS:
        return None
    slots = _K3_SLOTS[type(opt).__name__](opt)
    if slots is None:
        return None
    out = [_np.asarray(opt.iterations.numpy(), "int64"),
           _np.asarray(_current_lr(opt), "float32")]
    for var in model.trainable_weights:
        for s in slots:
            try:
                out.append(opt.get_slot(var, s).numpy())
            except KeyError:
                out.append(_np.zeros(tuple(var.shape), _np.dtype(var.dtype)))
    return out


def _current_lr(opt):
    lr = opt.get_config().get("learning_rate")
    return lr if isinstance(lr, (int, float)) else 0.0


_K3_SLOTS = {
    "Adam": lambda o: None if o.get_config().get("amsgrad") else ["m", "v"],
    "SGD": lambda o: ["momentum"] if o.get_config().get("momentum") else [],
}


def _write_keras3_weights(f, model, include_optimizer):
    for path, arrays in _keras3_state(model).items():
        g = f.require_group(f"{path}/vars")
        g.attrs["name"] = path.rsplit("/", 1)[-1]
        for i, a in enumerate(arrays):
            _h5.write_dataset(g, str(i), a)
    f.require_group("vars").attrs["name"] = model.name
    state = _keras3_optimizer_state(model) if include_optimizer else None
    if state:
        g = f.require_group("optimizer/vars")
        g.attrs["name"] = type(model.optimizer).__name__.lower()
        for i, a in enumerate(state):
            _h5.write_dataset(g, str(i), a)


def _load_keras3_weights(model, f, where, include_optimizer=False):
    _not_built(model, where)
    plan = []
    for path, layer in _keras3_paths(model):
        if not layer.weights:
            continue
        if f"{path}/vars" not in f:
            raise ValueError(f"{where}: no weights for layer {layer.name!r} (Keras 3 path "
                             f"{path!r}) in the file; its layers are {sorted(f['layers'])[:10]}")
        g = _h5.child(f, f"{path}/vars", where)
        if len(g) != len(layer.weights):
            raise ValueError(f"{where}: layer {layer.name!r} has {len(layer.weights)} weights, "
                             f"the file's {path} holds {len(g)}")
        for i, w in enumerate(layer.weights):
            ds = _h5.dataset(g, str(i), where)
            if tuple(ds.shape) != tuple(w.shape):
                raise ValueError(f"{where}: layer {layer.name!r}, weight {w.name!r}: the model "
                                 f"has shape {tuple(w.shape)}, the file {tuple(ds.shape)}")
            plan.append((w, ds))
    _assign_all(plan, where)
    if include_optimizer and "optimizer" in f and getattr(model, "optimizer", None) is not None:
        _restore_keras3_optimizer(model, _h5.child(f, "optimizer/vars", where), where)


def _restore_keras3_optimizer(model, group, where):
    opt = getattr(model.optimizer, "inner_optimizer", None) or model.optimizer
    maker = _K3_SLOTS.get(type(opt).__name__)
    slots = maker(opt) if maker else None
    n = len(group)
    if slots is None or n != 2 + len(slots) * len(model.trainable_weights):
        warnings.warn(f"{where}: the Keras 3 optimizer state ({n} variables) is not restored "
                      f"into {type(opt).__name__} (restored: Adam without amsgrad, SGD); the "
                      f"optimizer starts fresh", stacklevel=3)
        return
    opt.ensure_built(model.trainable_weights)
    plan = [(opt.iterations, _h5.dataset(group, "0", where))]
    k = 2
    for var in model.trainable_weights:
        for s in slots:
            plan.append((opt.get_slot(var, s), _h5.dataset(group, str(k), where)))
            k += 1
    for t, ds in plan:
        if tuple(ds.shape) != tuple(t.shape):
            raise ValueError(f"{where}: optimizer variable {ds.name} has shape "
                             f"{tuple(ds.shape)}, expected {tuple(t.shape)}")
    _assign_all(plan, where)


def save_keras3_weights(model, filepath, overwrite=True):
    """``save_weights("x.weights.h5")``: Keras 3's weights layout."""
    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite, "save_weights")
    return _h5.write_h5(filepath, lambda f: _write_keras3_weights(f, model, False),
                        "save_weights")


def load_keras3_weights(model, filepath):
    where = os.fspath(filepath)
    with _h5.open_h5(where, "load_weights") as f:
        _load_keras3_weights(model, f, where)


def is_keras3_weights(f):
    return "layers" in f and "layer_names" not in f.attrs and "model_weights" not in f


# ================================================================ Keras 3: .keras archives
def _to_keras3_config(model):
    """The model's config as Keras 3 writes it: functional nodes as ``{"args", "kwargs"}``
    with ``__keras_tensor__`` objects (made from our own node form, which holds every call
    exactly: a model Keras 3 cannot read still loads back here as it was), input layers'
    ``batch_shape``, ``module`` keys for the built-in objects."""
    from .functional import _own_node_form
    with _own_node_form():
        cfg = json.loads(_dumps(_model_config(model)))
    return _k3_annotate(cfg, specs=_tensor_specs(model))


def _tensor_specs(model):
    """``{(layer, node, tensor): (shape, dtype)}`` of a functional model's symbolic tensors
    (Keras 3's configs carry them; nested models' too)."""
    from ..utils.tree import flatten
    out = {}
    for layer in getattr(model, "layers", []):
        if getattr(layer, "layers", None) is not None:
            out.update(_tensor_specs(layer))
        k = 0
        while True:
            try:
                outputs = layer.get_output_at(k)
            except (ValueError, IndexError, RuntimeError, AttributeError):
                break
            for j, t in enumerate(flatten(outputs)):
                dtype = _np.dtype(t.dtype)
                out[(layer.name, k, j)] = (list(t.shape), "string" if dtype.kind in "OSU"
                                           else dtype.name)
            k += 1
    return out


_K3_MODULES = {"initializer": "keras.initializers", "regularizer": "keras.regularizers",
               "constraint": "keras.constraints"}


def _k3_annotate(obj, module="keras.layers", specs=None):
    """Keras 3 finds a class by ``module`` + ``class_name``: the built-in ones' modules, by
    where the object sits (a layer, an initializer, ...)."""
    if isinstance(obj, list):
        return [_k3_annotate(v, module, specs) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        sub = next((m for key, m in _K3_MODULES.items() if k.endswith(key)), "keras.layers")
        out[k] = _k3_annotate(v, sub, specs) if k not in ("inbound_nodes", "input_layers",
                                                   "output_layers") else v
    cfg = out.get("config")
    if isinstance(out.get("class_name"), str) and isinstance(cfg, dict):
        if out["class_name"] == "InputLayer" and "batch_input_shape" in cfg:
            cfg["batch_shape"] = cfg.pop("batch_input_shape")
        if "layers" in cfg and "input_layers" in cfg:
            out["config"] = _k3_functional(cfg, specs or {})
            out["module"] = "keras.src.models.functional"
            out["registered_name"] = "Functional"
        elif out["class_name"] == "Sequential":
            out["module"] = "keras"
        else:
            out["module"] = module
        out.setdefault("registered_name", None)
    return out


def _k3_functional(cfg, specs):
    """Our own node form (``{"args", "kwargs"}``, tensors as ``{"__keras_tensor__": ref}``) in
    Keras 3's: tensors in nodes as ``__keras_tensor__`` objects, the model's inputs and outputs
    as ``[layer, node, tensor]`` leaves in their structure (a single tensor a bare leaf)."""
    def tensor(ref):
        shape, dtype = specs.get(tuple(ref), (None, "float32"))
        return {"class_name": "__keras_tensor__",
                "config": {"shape": shape, "dtype": dtype, "keras_history": list(ref)}}

    def nodes(x):
        if _is_ref(x):
            return tensor(x["__keras_tensor__"])
        if isinstance(x, list):
            return [nodes(e) for e in x]
        if isinstance(x, dict):
            return {k: nodes(v) for k, v in x.items()}
        return x

    from_one = _keras3_functional_layers(cfg)

    def ends(x):
        if _is_ref(x):
            name, node, index = x["__keras_tensor__"]
            return [name, node + (name in from_one), index]
        if isinstance(x, list):
            return [ends(e) for e in x]
        if isinstance(x, dict):
            return {k: ends(v) for k, v in x.items()}
        return x

    layers = [{**spec, "inbound_nodes": [nodes(n) for n in spec.get("inbound_nodes", [])]}
              for spec in cfg["layers"]]
    return {**cfg, "layers": layers, "input_layers": ends(cfg["input_layers"]),
            "output_layers": ends(cfg["output_layers"])}


def _keras3_functional_layers(cfg):
    """The nested functional models among a functional config's layers: Keras 3 counts their
    calls from 1 in ``input_layers``/``output_layers`` (the node a functional model makes of
    itself comes first), from 0 in the nodes' arguments, as ours everywhere."""
    return {spec.get("name") for spec in cfg.get("layers", []) if isinstance(spec, dict) and
            isinstance(spec.get("config"), dict) and "input_layers" in spec["config"]}


def _is_ref(x):
    return isinstance(x, dict) and set(x) == {"__keras_tensor__"}


def save_keras_archive(model, filepath, overwrite=True, include_optimizer=True):
    """``model.save("m.keras")``: a Keras 3 archive (``config.json``, ``metadata.json``,
    ``model.weights.h5``), written atomically."""
    from .. import __version__
    h5py = _h5.h5py_module(filepath, "model.save")
    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite, "model.save")
    config = _to_keras3_config(model)
    training = _training_config(model) if include_optimizer else None
    if training is not None:
        config["compile_config"] = {
            "optimizer": {**training["optimizer_config"], "module": "keras.optimizers",
                          "registered_name": None}, "loss": training["loss"],
            "metrics": training["metrics"], "weighted_metrics": training["weighted_metrics"],
            "loss_weights": training["loss_weights"]}
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        _write_keras3_weights(f, model, include_optimizer and training is not None)
    meta = {"keras_version": "3.0.0", "tnp_train_version": __version__}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("metadata.json", json.dumps(meta))
        z.writestr("config.json", _dumps(config))
        z.writestr(_K3_WEIGHTS, buf.getvalue())
    atomic_write_bytes(filepath, out.getvalue())
    return filepath


def _member(z, name, where):
    try:
        info = z.getinfo(name)
    except KeyError:
        raise CheckpointFormatError(f"{where}: the archive has no {name}") from None
    if info.file_size > _ARCHIVE_LIMIT:
        raise CheckpointFormatError(f"{where}: {name} is {info.file_size} bytes unpacked (the "
                                    f"limit is {_ARCHIVE_LIMIT})")
    with z.open(info) as fh:
        data = fh.read(_ARCHIVE_LIMIT + 1)   # the header's size is the writer's word only
    if len(data) > _ARCHIVE_LIMIT:
        raise CheckpointFormatError(f"{where}: {name} unpacks to over {_ARCHIVE_LIMIT} bytes")
    return data


def load_keras_archive(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """``load_model("m.keras")``: a Keras 3 archive's model, weights, compile arguments and
    (Adam, SGD) optimizer state."""
    where = os.fspath(filepath)
    try:
        z = zipfile.ZipFile(where)
    except zipfile.BadZipFile as e:
        raise CheckpointFormatError(f"load_model({where!r}): not a .keras archive ({e})") from None
    with z:
        raw = _member(z, "config.json", where)
        weights = _member(z, _K3_WEIGHTS, where)
        meta = _member(z, "metadata.json", where) if "metadata.json" in z.namelist() else b"{}"
    try:
        config = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise CheckpointFormatError(f"{where}: config.json is not valid JSON: {e}") from None
    try:
        meta = json.loads(meta.decode("utf-8"))
    except (ValueError, RecursionError):
        meta = {}
    ours = isinstance(meta, dict) and "tnp_train_version" in meta
    compile_config = config.get("compile_config") if isinstance(config, dict) else None
    config = _from_keras3(config, ours)
    with CustomObjectScope(custom_objects or {}):
        model = _build_model(config, where, custom_objects, safe_mode)
        with _h5.open_h5(io.BytesIO(weights), "load_model", f"{where}/{_K3_WEIGHTS}") as f:
            _load_keras3_weights(model, f, f"{where}/{_K3_WEIGHTS}")
            if compile and isinstance(compile_config, dict) and compile_config.get("optimizer"):
                from .saving import _with_custom_objects
                cc = {k: _from_keras3(v) for k, v in compile_config.items()}
                model.compile_from_config(_with_custom_objects(_compile_config_of(
                    {**cc, "optimizer_config": compile_config["optimizer"]}, where)))
                if "optimizer" in f:
                    _restore_keras3_optimizer(model, _h5.child(f, "optimizer/vars", where),
                                              f"{where}/{_K3_WEIGHTS}")
    return model


def load_keras_archive_weights(model, filepath):
    """``load_weights("m.keras")``: the weights of a Keras 3 archive."""
    where = os.fspath(filepath)
    try:
        with zipfile.ZipFile(where) as z:
            weights = _member(z, _K3_WEIGHTS, where)
    except zipfile.BadZipFile as e:
        raise CheckpointFormatError(f"load_weights({where!r}): not a .keras archive "
                                    f"({e})") from None
    with _h5.open_h5(io.BytesIO(weights), "load_weights", f"{where}/{_K3_WEIGHTS}") as f:
        _load_keras3_weights(model, f, f"{where}/{_K3_WEIGHTS}")
