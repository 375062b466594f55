"""Saving models: ``save_weights``/``load_weights`` (a checkpoint of the model's object graph,
optimizer state included when the model is compiled, as TF's checkpoint format does) and
``save_model``/``read_model``/``restore_model`` (a directory with ``config.json`` and
``weights.ckpt``). No pickle: configs are JSON, arrays are raw bytes checked by SHA-256 (see
``_format``).

The ``Model`` methods (``model.save``, ``model.save_weights``, ``model.load_weights``) and
``tt.models.load_model`` (which builds the model between ``read_model`` and ``restore_model``:
the models sit above this package) call these.

Why ``save_model`` is crash-safe (a process killed at any instant leaves the old or the new
model at the path, never none and never a mix):

* A new path: the directory is assembled under a temporary name beside it and renamed into
  place, one atomic step (before it, no model; after it, the new one).
* An existing model directory is updated in place, never moved: a directory cannot be replaced
  atomically (renaming the old one aside first leaves a moment with no model at the path).
  ``weights.ckpt`` carries the model's ``config.json`` text in its metadata, so that one file is
  a complete model, and replacing it (temporary file, fsync, ``os.replace``) is the single
  commit point; ``config.json`` is replaced after it. A kill between the two leaves the new
  weights beside the previous ``config.json``; the weights also record the SHA-256 of the
  ``config.json`` they replace, so :func:`read_model` recognises exactly that state and takes
  the config the weights carry. Otherwise ``config.json`` is what is loaded (edits to it count),
  and directories written before the config was embedded load as they always did.

A killed save leaves temporaries (``<name>.tmp-<pid>-*`` beside the path, hidden
``.config.json.tmp-<pid>-*``/``.weights.ckpt.tmp-<pid>-*`` inside it); the next save to the same
path removes those whose process is gone (older unnamed ones: older than this process). The
temporaries of a live save are left alone.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import secrets
import shutil
import stat
import tempfile

import numpy as _np

from ..utils import tracing as _tracing
from ..utils.serialization import get_registered_name
from . import _graph
from ._format import CheckpointFormatError
from ._io import _UMASK, atomic_write_bytes, fsync_dir, owned_prefix, stale_temporaries, tmp_prefix
from .checkpoint import read_file, restore_root, write_graph

__all__ = ["save_weights", "load_weights", "save_model", "read_model", "restore_model",
           "CONFIG_NAME", "WEIGHTS_NAME", "MODEL_FORMAT_VERSION"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "weights.ckpt"
MODEL_FORMAT_VERSION = 1
# keys of weights.ckpt's metadata in a saved model (see the module docstring)
_CONFIG_TEXT = "model_config_json"
_REPLACES = "replaces_config_sha256"


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
    ``filepath`` (one file, written atomically; temporaries of killed saves to it whose process
    is gone are removed). ``overwrite=False`` and an existing file: FileExistsError."""
    filepath = os.fspath(filepath)
    if not overwrite and os.path.lexists(filepath):
        raise FileExistsError(f"save_weights: {filepath} exists (overwrite=False)")
    _unlink_stale_files(os.path.dirname(os.path.abspath(filepath)), tmp_prefix(filepath))
    path = write_graph(_ModelRoot(model), filepath, _weights_metadata(model, "weights"))
    if not os.fsdecode(filepath).endswith(_HDF5_SUFFIXES):
        # as TF's checkpoint-format save_weights: the directory's latest-checkpoint record names
        # this file, so ``load_weights(tt.train.latest_checkpoint(dir))`` finds the newest one
        # (ModelCheckpoint(save_weights_only=True) saves through here)
        from .manager import _update_state
        _update_state(os.path.dirname(os.path.abspath(path)), path, [path])
    return path


# names TF saves as HDF5 (no latest-checkpoint record): the same file format here, the same record
_HDF5_SUFFIXES = (".h5", ".hdf5", ".keras")


def load_weights(model, filepath, skip_mismatch=False):
    """Restore ``model``'s weights from a file written by :func:`save_weights` (or a directory
    written by :func:`save_model`). Weights of layers not built yet are applied when they are
    built; optimizer state is restored into ``model.optimizer`` (its slots when they are
    created), or, when the model is not compiled yet, kept until ``compile`` attaches one. A
    weight whose shape differs raises ValueError, or is skipped with a warning when
    ``skip_mismatch``. Returns the load status (``assert_consumed()``...)."""
    if filepath is None:
        raise TypeError("load_weights: filepath is None (tt.train.latest_checkpoint(dir) returns "
                         "None when the directory has no checkpoint record)")
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath) and os.path.isfile(os.path.join(filepath, WEIGHTS_NAME)):
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
    if hasattr(o, "get_config"):     # the name load_model finds it by (a registered one)
        return {"class_name": get_registered_name(type(o)), "config": o.get_config()}
    raise TypeError(f"save_model: the model's config holds a {type(o).__name__} ({o!r}), which "
                    f"is not JSON-serializable; give the object a get_config()")


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _is_our_temporary_dir(path):
    """A directory that holds nothing but what :func:`save_model` puts in its temporary one."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        names = os.listdir(path)
    except OSError:
        return False
    ours = (CONFIG_NAME, WEIGHTS_NAME)
    return all(n in ours or n.startswith(tuple(tmp_prefix(o) for o in ours)) for n in names)


def _remove_stale_temporaries(filepath):
    """What killed saves to ``filepath`` left behind (their process is gone)."""
    parent, base = os.path.split(filepath)
    for tmp in stale_temporaries(parent, f"{base}.tmp-"):
        if _is_our_temporary_dir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    if os.path.isdir(filepath):
        for name in (CONFIG_NAME, WEIGHTS_NAME):
            _unlink_stale_files(filepath, tmp_prefix(name))


def _unlink_stale_files(directory, prefix):
    for tmp in stale_temporaries(directory, prefix):
        with contextlib.suppress(OSError):
            if not stat.S_ISDIR(os.lstat(tmp).st_mode):
                os.unlink(tmp)


def _sha256_of_file(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Write the directory ``filepath``: ``config.json`` (class name, ``get_config()``, the
    compile arguments) and ``weights.ckpt`` (weights, plus optimizer state if
    ``include_optimizer`` and the model is compiled, and the config again). A crash leaves
    either the old or the new model (see the module docstring); an existing directory is
    written into, as TF's SavedModel does, not replaced."""
    with _tracing.span("save model", "checkpoint", path=os.fspath(filepath)):
        return _save_model(model, filepath, overwrite, include_optimizer)


def _save_model(model, filepath, overwrite, include_optimizer):
    from .. import __version__
    filepath = os.path.abspath(os.fspath(filepath))
    if os.path.lexists(filepath) and not overwrite:
        raise FileExistsError(f"save_model: {filepath} exists (overwrite=False)")
    compile_config = None
    if include_optimizer and getattr(model, "optimizer", None) is not None and \
            callable(getattr(model, "get_compile_config", None)):
        compile_config = model.get_compile_config()
    meta = {"format_version": MODEL_FORMAT_VERSION, "class_name": type(model).__name__,
            "config": model.get_config(), "compile_config": compile_config,
            "tnp_train_version": __version__}
    data = json.dumps(meta, default=_json_default, indent=1).encode("utf-8")
    root = _ModelRoot(model, include_optimizer=include_optimizer)
    weights_meta = dict(_weights_metadata(model, "model"), **{_CONFIG_TEXT: data.decode("utf-8")})
    parent = os.path.dirname(filepath)
    os.makedirs(parent, exist_ok=True)
    _remove_stale_temporaries(filepath)
    if os.path.isdir(filepath):
        config_path = os.path.join(filepath, CONFIG_NAME)
        weights_meta[_REPLACES] = _sha256_of_file(config_path)
        write_graph(root, os.path.join(filepath, WEIGHTS_NAME), weights_meta)   # the commit
        atomic_write_bytes(config_path, data)
        return filepath
    tmp = tempfile.mkdtemp(prefix=owned_prefix(os.path.basename(filepath) + ".tmp-"), dir=parent)
    old = None
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)
        atomic_write_bytes(os.path.join(tmp, CONFIG_NAME), data)
        write_graph(root, os.path.join(tmp, WEIGHTS_NAME), weights_meta)
        fsync_dir(tmp)
        if os.path.lexists(filepath):   # a file or a dangling symlink: no model to keep
            old = f"{filepath}.old-{secrets.token_hex(4)}"
            os.rename(filepath, old)
        os.rename(tmp, filepath)
        tmp = None
        fsync_dir(parent)
    finally:
        if tmp is not None:          # failed: put back what was there, drop the new one
            if old is not None and not os.path.lexists(filepath):
                os.rename(old, filepath)
                old = None
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            _remove(old)
    return filepath


def _parse_config(raw, where):
    try:
        meta = json.loads(raw.decode("utf-8"))
    # (ValueError includes JSON errors and over-long integers; RecursionError, JSON nested
    # deeper than the interpreter's stack)
    except (ValueError, RecursionError) as e:
        raise CheckpointFormatError(f"{where}: unreadable model config: {type(e).__name__}: "
                                    f"{e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("class_name"), str) or \
            not isinstance(meta.get("config"), dict):
        raise CheckpointFormatError(f"{where}: not a tnp_train model config (needs "
                                    f"'class_name' and 'config')")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > MODEL_FORMAT_VERSION or version < 1:
        raise CheckpointFormatError(f"{where}: model format version {version!r} is not "
                                    f"supported (this tnp_train reads up to "
                                    f"{MODEL_FORMAT_VERSION})")
    return meta


def _read_config(filepath, weights_metadata):
    """The model config of the saved model ``filepath``: ``config.json``, unless a save was
    killed between committing ``weights.ckpt`` and replacing ``config.json`` (the config file
    is still the one that save replaced): then the config the weights carry."""
    cfg_path = os.path.join(filepath, CONFIG_NAME)
    embedded = weights_metadata.get(_CONFIG_TEXT)
    try:
        with open(cfg_path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        if not isinstance(embedded, str):
            raise
        raw = None
    if isinstance(embedded, str):
        text = embedded.encode("utf-8")
        if raw is None or raw != text and \
                hashlib.sha256(raw).hexdigest() == weights_metadata.get(_REPLACES):
            return _parse_config(text, f"{os.path.join(filepath, WEIGHTS_NAME)} (its model "
                                       f"config)")
    return _parse_config(raw, cfg_path)


def read_model(filepath):
    """``(meta, weights_path, values)`` of the model saved by :func:`save_model` in the
    directory ``filepath``: its config (see :func:`_read_config`) and its weights file, read and
    checked before anything is built. ``tt.models.load_model`` builds the model from ``meta``
    and hands it to :func:`restore_model`."""
    filepath = os.fspath(filepath)
    if not os.path.isdir(filepath):
        if os.path.isfile(filepath):
            raise ValueError(f"load_model: {filepath} is a file, not a directory written by "
                             f"model.save (for a weights file use model.load_weights)")
        left = sorted(glob.glob(glob.escape(filepath) + ".old-*"))
        hint = f"; an interrupted save left the previous model at {left[-1]}" if left else ""
        raise FileNotFoundError(f"load_model: no saved model at {filepath}{hint}")
    weights = os.path.join(filepath, WEIGHTS_NAME)
    metadata, values = read_file(weights)
    return _read_config(filepath, metadata), weights, values


def restore_model(model, weights, values, include_optimizer=True):
    """Restore the values :func:`read_model` read into ``model`` (rebuilt from the saved
    config): applied at build time for a model that builds on its first call, and the
    optimizer's state (slots when the optimizer creates them) if ``include_optimizer``."""
    root = _ModelRoot(model, include_optimizer=include_optimizer)
    status = restore_root(root, weights, values=values)
    if root.optimizer is None:
        status._ignore = _is_optimizer_key
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(f"load_model({os.path.dirname(weights)}): the saved weights do not fit "
                         f"the model rebuilt from {CONFIG_NAME}: {e}") from None
    status.expect_partial()   # what remains waits for layers built on the first call
    return model
