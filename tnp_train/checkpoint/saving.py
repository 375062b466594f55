"""Saving models: ``save_weights``/``load_weights`` (a checkpoint of the model's object graph,
optimizer state included when the model is compiled, as TF's checkpoint format does) and
``save_model``/``load_model`` (a directory with ``config.json`` and ``weights.ckpt``). No pickle:
configs are JSON, arrays are raw bytes checked by SHA-256 (see ``_format``).

The ``Model`` methods (``model.save``, ``model.save_weights``, ``model.load_weights``) and
``tt.models.load_model`` call these.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import tempfile

import numpy as _np

from . import _graph
from ._format import CheckpointFormatError
from ._io import _UMASK, atomic_write_bytes, fsync_dir
from .checkpoint import read_values, restore_root, write_graph

__all__ = ["save_weights", "load_weights", "save_model", "load_model", "CONFIG_NAME",
           "WEIGHTS_NAME", "MODEL_FORMAT_VERSION"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "weights.ckpt"
MODEL_FORMAT_VERSION = 1


def _is_optimizer_key(key):
    return key.startswith("optimizer/") or ("/" + _graph.SLOT + "/") in key


class _ModelRoot:
    """The root of a model's checkpoint: the model's children, plus ``optimizer`` when the
    model has one and it is wanted (TF's model checkpoints track ``model.optimizer``)."""

    def __init__(self, model, include_optimizer=True):
        if not callable(getattr(model, "_trackable_children", None)):
            raise TypeError(f"expected a model or layer, got {type(model).__name__}")
        self.model = model
        self.optimizer = None
        opt = getattr(model, "optimizer", None) if include_optimizer else None
        if opt is not None:
            if not _graph.is_trackable(opt):
                raise TypeError(f"the optimizer of {getattr(model, 'name', model)!r} "
                                f"({type(opt).__name__}) has no _trackable_children(), so its "
                                f"state cannot be saved; pass include_optimizer=False")
            self.optimizer = opt

    def _trackable_children(self):
        out = dict(self.model._trackable_children())
        if self.optimizer is not None and "optimizer" not in out and \
                all(v is not self.optimizer for v in out.values()):
            out["optimizer"] = self.optimizer
        return out

    def _checkpoint_defer(self, name, pending):
        # values for a model child not created yet wait in the model (an unbuilt model); the
        # optimizer's wait for `compile` to attach one (as TF restores them)
        if name == "optimizer":
            self.model.__dict__["_pending_optimizer_state"] = pending
        else:
            _graph.defer(self.model, name, pending)


def _weights_metadata(model, kind):
    from .. import __version__
    return {"kind": kind, "class_name": type(model).__name__, "tnp_train_version": __version__}


def save_weights(model, filepath, overwrite=True):
    """Write ``model``'s weights (and its optimizer's state if compiled) to the file
    ``filepath`` (one file, written atomically). ``overwrite=False`` and an existing file:
    FileExistsError."""
    filepath = os.fspath(filepath)
    if not overwrite and os.path.lexists(filepath):
        raise FileExistsError(f"save_weights: {filepath} exists (overwrite=False)")
    return write_graph(_ModelRoot(model), filepath, _weights_metadata(model, "weights"))


def load_weights(model, filepath, skip_mismatch=False):
    """Restore ``model``'s weights from a file written by :func:`save_weights` (or a directory
    written by :func:`save_model`). Weights of layers not built yet are applied when they are
    built; optimizer state is restored into ``model.optimizer`` (its slots when they are
    created), or, when the model is not compiled yet, kept until ``compile`` attaches one. A
    weight whose shape differs raises ValueError, or is skipped with a warning when
    ``skip_mismatch``. Returns the load status (``assert_consumed()``...)."""
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath) and os.path.isfile(os.path.join(filepath, CONFIG_NAME)):
        filepath = os.path.join(filepath, WEIGHTS_NAME)
    root = _ModelRoot(model)
    status = restore_root(root, filepath, skip_mismatch=skip_mismatch)
    if root.optimizer is None:
        status._ignore = _is_optimizer_key   # no warning for the state of an absent optimizer
        rec = status._rec
        slots = [(var, name, value, key, rec) for opt_path, var, name, value, key
                 in rec.orphan_slots if opt_path[:1] == ("optimizer",)]
        if slots or "_pending_optimizer_state" in model.__dict__:
            model.__dict__["_pending_optimizer_slots"] = slots
    return status


def _json_default(o):
    if isinstance(o, _np.generic):
        return o.item()
    if isinstance(o, _np.ndarray):
        return o.tolist()
    if isinstance(o, _np.dtype):
        return o.name
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    if hasattr(o, "get_config"):
        return {"class_name": type(o).__name__, "config": o.get_config()}
    raise TypeError(f"save_model: the model's config holds a {type(o).__name__} ({o!r}), which "
                    f"is not JSON-serializable; give the object a get_config()")


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Write the directory ``filepath``: ``config.json`` (class name, ``get_config()``, the
    compile arguments) and ``weights.ckpt`` (weights, plus optimizer state if
    ``include_optimizer`` and the model is compiled). The directory is assembled under a
    temporary name and renamed into place, so a crash leaves either the old or the new model."""
    from .. import __version__
    filepath = os.path.abspath(os.fspath(filepath))
    if os.path.lexists(filepath) and not overwrite:
        raise FileExistsError(f"save_model: {filepath} exists (overwrite=False)")
    compile_config = None
    if include_optimizer and getattr(model, "optimizer", None) is not None and \
            callable(getattr(model, "_get_compile_config", None)):
        compile_config = model._get_compile_config()
    meta = {"format_version": MODEL_FORMAT_VERSION, "class_name": type(model).__name__,
            "config": model.get_config(), "compile_config": compile_config,
            "tnp_train_version": __version__}
    data = json.dumps(meta, default=_json_default, indent=1).encode("utf-8")
    root = _ModelRoot(model, include_optimizer=include_optimizer)
    parent = os.path.dirname(filepath)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(filepath) + ".tmp-", dir=parent)
    old = None
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)
        atomic_write_bytes(os.path.join(tmp, CONFIG_NAME), data)
        write_graph(root, os.path.join(tmp, WEIGHTS_NAME), _weights_metadata(model, "model"))
        fsync_dir(tmp)
        if os.path.lexists(filepath):
            old = f"{filepath}.old-{secrets.token_hex(4)}"
            os.rename(filepath, old)
        os.rename(tmp, filepath)
        tmp = None
        fsync_dir(parent)
    finally:
        if tmp is not None:          # failed: put the previous model back, drop the new one
            if old is not None and not os.path.lexists(filepath):
                os.rename(old, filepath)
                old = None
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            _remove(old)
    return filepath


def _read_config(filepath):
    cfg_path = os.path.join(filepath, CONFIG_NAME)
    try:
        with open(cfg_path, "rb") as f:
            meta = json.loads(f.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointFormatError(f"{cfg_path}: unreadable model config: {e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("class_name"), str) or \
            not isinstance(meta.get("config"), dict):
        raise CheckpointFormatError(f"{cfg_path}: not a tnp_train model config (needs "
                                    f"'class_name' and 'config')")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > MODEL_FORMAT_VERSION or version < 1:
        raise CheckpointFormatError(f"{cfg_path}: model format version {version!r} is not "
                                    f"supported (this tnp_train reads up to "
                                    f"{MODEL_FORMAT_VERSION})")
    return meta


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002 - Keras's name
    """The model saved by :func:`save_model` in the directory ``filepath``: rebuilt from its
    config (``custom_objects`` maps class names of custom layers/models to classes), its
    weights restored (applied at build time for a model that builds on its first call) and,
    if ``compile`` and it was compiled, compiled again with its optimizer state restored (slots
    when the optimizer creates them)."""
    filepath = os.fspath(filepath)
    if not os.path.isdir(filepath):
        if os.path.isfile(filepath):
            raise ValueError(f"load_model: {filepath} is a file, not a directory written by "
                             f"model.save (for a weights file use model.load_weights)")
        left = sorted(glob.glob(glob.escape(filepath) + ".old-*"))
        hint = f"; an interrupted save left the previous model at {left[-1]}" if left else ""
        raise FileNotFoundError(f"load_model: no saved model at {filepath}{hint}")
    meta = _read_config(filepath)
    weights = os.path.join(filepath, WEIGHTS_NAME)
    values = read_values(weights)     # check the file before building anything
    from .. import models as _models
    model = _models.model_from_config({"class_name": meta["class_name"], "config": meta["config"]},
                                      custom_objects=custom_objects)
    if compile and meta.get("compile_config"):
        model._compile_from_config(meta["compile_config"])
    root = _ModelRoot(model, include_optimizer=compile)
    status = restore_root(root, weights, values=values)
    if root.optimizer is None:
        status._ignore = _is_optimizer_key
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(f"load_model({filepath}): the saved weights do not fit the model "
                         f"rebuilt from {CONFIG_NAME}: {e}") from None
    status.expect_partial()   # what remains waits for layers built on the first call
    return model
