"""Checkpoints (``tt.train``) and model saving, without pickle.

* ``Checkpoint`` / ``CheckpointManager`` / ``latest_checkpoint`` / ``list_variables`` /
  ``load_variable``: TF 2.4's object-based checkpoints (``tf.train``).
* ``saving``: ``save_weights``/``load_weights``/``save_model``/``read_model``/``restore_model``,
  behind the Model methods and ``tt.models.load_model``.
* :func:`restore_into`: the hook ``Layer`` calls to apply values restored before a weight or
  sub-layer existed (deferred restoration).

The file format (``_format``): one file per checkpoint, a JSON manifest (format version, every
array's key, dtype, shape, SHA-256) and raw little-endian bytes; bfloat16 and the other ml_dtypes
types are stored as unsigned integers. Files are written to a temporary name, fsync'ed and
renamed into place. See docs/checkpoints.md.
"""
from __future__ import annotations

import os

from ._format import FORMAT_VERSION, CheckpointFormatError, CheckpointReader
from ._graph import restore_into
from .checkpoint import Checkpoint, CheckpointLoadStatus, InitializationOnlyStatus
from .manager import CheckpointManager, get_checkpoint_state, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointLoadStatus", "InitializationOnlyStatus",
           "CheckpointFormatError", "CheckpointReader", "FORMAT_VERSION", "latest_checkpoint",
           "get_checkpoint_state", "list_variables", "load_variable", "load_checkpoint",
           "restore_into"]


def _resolve(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find a checkpoint state file or checkpoints in the "
                             f"directory {path}")
        return latest
    return path


def load_checkpoint(ckpt_dir_or_file):
    """A :class:`CheckpointReader` of the file (or of a directory's latest checkpoint);
    mirrors ``tf.train.load_checkpoint``."""
    return CheckpointReader(_resolve(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """Mirrors ``tf.train.list_variables``: ``[(key, shape)]`` of a checkpoint, sorted by key."""
    r = load_checkpoint(ckpt_dir_or_file)
    return [(k, list(r.shape(k))) for k in sorted(r.keys())]


def load_variable(ckpt_dir_or_file, name):
    """Mirrors ``tf.train.load_variable``: the NumPy array saved under ``name`` (a key from
    :func:`list_variables`; the ``/.ATTRIBUTES/VARIABLE_VALUE`` suffix may be left off)."""
    r = load_checkpoint(ckpt_dir_or_file)
    if name.endswith(":0"):
        name = name[:-2]
    if name not in r and name + "/.ATTRIBUTES/VARIABLE_VALUE" in r:
        name = name + "/.ATTRIBUTES/VARIABLE_VALUE"
    return r.read(name)
