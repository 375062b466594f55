"""``tt.train.Checkpoint``: save and restore an object graph (TF 2.4's ``tf.train.Checkpoint``)."""
from __future__ import annotations

import os

import numpy as _np

from ..autodiff import Variable
from ..utils import tracing as _tracing
from . import _graph
from ._format import CheckpointReader, write_checkpoint_file

__all__ = ["Checkpoint", "CheckpointLoadStatus", "InitializationOnlyStatus", "read_values",
           "read_file", "write_graph", "restore_root"]

_COUNTER_KEY = "save_counter/" + _graph.ATTR


def write_graph(root, path, metadata=None):
    """Write every variable reachable from ``root`` (and its optimizer slots) to ``path``."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if os.path.isdir(path):
        raise IsADirectoryError(f"checkpoint: {path} is a directory; give a file path (prefix)")
    with _tracing.span("write checkpoint", "checkpoint", path=path), _job_on_read_values(root):
        write_checkpoint_file(path, _graph.collect(root), metadata)
    return path


def _job_on_read_values(root):
    """Under a multi-worker strategy the ON_READ variables reachable from ``root`` (a
    BatchNormalization's moving statistics) are written with the job's value, as TF saves a
    SyncOnReadVariable's aggregated value; each worker wrote its own local statistics before.
    Every worker must make the call, as in TF."""
    from ..distribute import distribute_lib   # heavy: only a save under a strategy needs it
    return distribute_lib.job_on_read_values(lambda: [o for _, o in _graph.walk(root)])


def read_values(path):
    """Validate the whole file and read every array (a damaged file fails before anything is
    assigned)."""
    return read_file(path)[1]


def read_file(path):
    """``(metadata, {key: array})`` of the checkpoint file ``path``, all checked, read through
    one open file: a save that replaces ``path`` meanwhile cannot mix two files' contents."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"checkpoint: {path} is a directory; pass a checkpoint path, e.g. "
                                f"tt.train.latest_checkpoint({path!r})")
    with open(path, "rb") as f:
        reader = CheckpointReader(path, _file=f)
        return reader.metadata, reader.read_many(reader.keys(), _file=f)


def restore_root(root, path, skip_mismatch=False, values=None):
    """Restore ``root``'s graph from ``path``; the load status."""
    values = read_values(path) if values is None else values
    rec = _graph.RestoreRecord(os.fspath(path), values, skip_mismatch=skip_mismatch)
    _graph.restore_graph(root, values, rec)
    return CheckpointLoadStatus(rec, root)


class CheckpointLoadStatus:
    """What a restore matched (``tf.train.Checkpoint.restore``'s status). Deferred values that
    are applied later (a layer built afterwards, an optimizer slot created on the first step)
    count from then on."""

    def __init__(self, record, root):
        self._rec = record
        self._root = root
        self._silenced = False
        self._ignore = None     # keys the unused-values warning leaves out (a predicate)

    def assert_consumed(self):
        """Every value in the checkpoint was applied to an object, and every variable reachable
        from the root got a value; AssertionError naming the keys otherwise."""
        unused = self._rec.unconsumed()
        unmatched = self._rec.unmatched(self._root)
        if unused or unmatched:
            parts = []
            if unused:
                parts.append(f"values not applied (no matching object, or still pending): "
                             f"{_short(unused)}")
            if unmatched:
                parts.append(f"objects without a value in the checkpoint: {_short(unmatched)}")
            raise AssertionError(f"Checkpoint {self._rec.path}: " + "; ".join(parts))
        return self

    def assert_existing_objects_matched(self):
        """Every variable reachable from the root now got a value (checkpoint values for
        objects not created yet may remain)."""
        unmatched = self._rec.unmatched(self._root)
        if unmatched:
            raise AssertionError(f"Checkpoint {self._rec.path}: objects without a value in the "
                                 f"checkpoint: {_short(unmatched)}")
        return self

    def assert_nontrivial_match(self):
        """At least one value other than the save counter was applied."""
        if not (self._rec.consumed - {_COUNTER_KEY}) and not self._rec.slot_handoffs:
            raise AssertionError(f"Checkpoint {self._rec.path}: nothing was restored except "
                                 f"possibly the save counter (no object matched)")
        return self

    def expect_partial(self):
        """Silence the warning about checkpoint values that were never used."""
        self._silenced = True
        return self

    def run_restore_ops(self, session=None):
        """Eager restores are applied at once (TF 1 compatibility no-op)."""

    def initialize_or_restore(self, session=None):
        """Eager restores are applied at once (TF 1 compatibility no-op)."""

    def __del__(self):
        try:
            if self._silenced:
                return
            unused = self._rec.unconsumed()
            if self._ignore is not None:
                unused = [k for k in unused if not self._ignore(k)]
            if unused:
                _graph.logger.warning(
                    "Checkpoint %s: %d value(s) were not used (no matching object, or a deferred "
                    "restoration never applied): %s. Call expect_partial() on the status of the "
                    "restore to silence this warning.", self._rec.path, len(unused), _short(unused))
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


class InitializationOnlyStatus:
    """The status of ``restore(None)``: nothing restored (TF's ``InitializationOnlyStatus``)."""

    def _fail(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_consumed(self):
        self._fail()

    def assert_existing_objects_matched(self):
        self._fail()

    def assert_nontrivial_match(self):
        self._fail()

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        """No-op."""

    def initialize_or_restore(self, session=None):
        """No-op (variables are initialized when created)."""


def _short(items, n=12):
    items = list(items)
    s = ", ".join(repr(i) for i in items[:n])
    return s + (f", ... ({len(items) - n} more)" if len(items) > n else "")


class Checkpoint:
    """Mirrors ``tf.train.Checkpoint(root=None, **kwargs)``: groups trackable objects (layers,
    models, optimizers, ``tt.Variable``s, other Checkpoints) and saves/restores all their state.

    ``save(prefix)`` writes ``prefix-N`` (N from the ``save_counter`` variable, itself saved)
    and records it as the latest checkpoint of the directory; ``write(path)`` writes exactly
    ``path``; ``restore(path)``/``read(path)`` return a status (``assert_consumed()``...).
    Values restored before their variable exists are applied when it is created.
    """

    def __init__(self, root=None, **kwargs):
        children = {}
        if root is not None:
            if not _graph.is_trackable(root) or isinstance(root, Variable):
                raise TypeError(f"Checkpoint: root must be a trackable object (a layer, model, "
                                f"optimizer or Checkpoint), got {type(root).__name__}")
            children.update(root._trackable_children())
        for k, v in kwargs.items():
            if k == "save_counter":
                raise ValueError("Checkpoint: 'save_counter' is reserved for the checkpoint's "
                                 "own counter; use another name")
            if not _graph.is_trackable(v):
                raise TypeError(f"Checkpoint: the value of '{k}' is not trackable: got "
                                f"{type(v).__name__} {v!r}. Pass a tt.Variable (e.g. "
                                f"{k}=tt.Variable({v!r})), a layer/model, an optimizer or a "
                                f"Checkpoint.")
            children[k] = v
        self.__dict__["_children"] = children
        self.__dict__["_save_counter"] = None

    def __getattr__(self, name):
        children = self.__dict__.get("_children", {})
        if name in children:
            return children[name]
        raise AttributeError(f"'Checkpoint' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if name == "save_counter":
            raise AttributeError("Checkpoint.save_counter cannot be replaced")
        if not _graph.is_trackable(value):
            raise TypeError(f"Checkpoint: the value of '{name}' is not trackable: got "
                            f"{type(value).__name__}")
        self._children[name] = value

    def _trackable_children(self):
        out = dict(self._children)
        if self._save_counter is not None:
            out["save_counter"] = self._save_counter
        return out

    def _ensure_counter(self):
        if self._save_counter is None:
            self._save_counter = Variable(_np.int64(0), trainable=False, name="save_counter",
                                          dtype="int64")
        return self._save_counter

    @property
    def save_counter(self):
        """The number of ``save()`` calls so far (a restored value included), an int64 Variable."""
        return self._ensure_counter()

    def write(self, file_prefix, options=None):
        """Write the checkpoint to exactly ``file_prefix``; returns the path. Does not touch
        the save counter or the directory's latest-checkpoint record."""
        from .. import __version__
        return write_graph(self, file_prefix, {"kind": "checkpoint",
                                               "tnp_train_version": __version__})

    def save(self, file_prefix, options=None):
        """Increment ``save_counter`` and write ``f"{file_prefix}-{save_counter}"``, then
        record it as the directory's latest checkpoint; returns the path."""
        from .manager import _update_state
        counter = self._ensure_counter()
        counter.assign_add(1)
        try:
            path = self.write(f"{os.fspath(file_prefix)}-{int(counter.numpy())}")
        except BaseException:
            counter.assign_sub(1)
            raise
        _update_state(os.path.dirname(os.path.abspath(path)), path, [path])
        return path

    def read(self, save_path, options=None):
        """Restore from ``save_path`` (as :meth:`restore`)."""
        return self.restore(save_path)

    def restore(self, save_path, options=None):
        """Restore every object's value from ``save_path`` (a file written by ``save``/``write``,
        e.g. ``tt.train.latest_checkpoint(dir)``). ``None`` restores nothing (a status whose
        assertions fail, as TF). Values for objects not created yet are applied when they are.
        A damaged file raises ``CheckpointFormatError`` (a ValueError) before anything changes;
        a value whose shape or dtype differs from its variable's raises ValueError."""
        if save_path is None:
            return InitializationOnlyStatus()
        values = read_values(save_path)
        if _COUNTER_KEY in values:
            self._ensure_counter()
        return restore_root(self, save_path, values=values)

    def __repr__(self):
        return f"<tt.train.Checkpoint {sorted(self._children)}>"
