"""``tt.train.CheckpointManager`` and ``tt.train.latest_checkpoint`` (TF 2.4 signatures).

The directory holds the checkpoint files (``ckpt-1``, ``ckpt-2``...) and a small JSON state file,
``checkpoint.json``, naming the latest checkpoint and the kept ones. Every file is written
atomically (temporary file, fsync, rename), and a save goes: write the new checkpoint; record
it as the latest; delete what falls out of ``max_to_keep``; record the state again. A process
killed at any moment therefore leaves a state file naming a complete, loadable checkpoint (the
previous one until the new one is recorded).

The state file is data, not an instruction: the manager deletes only files it could have
written itself, regular files named ``<checkpoint_name>-<N>`` directly in its directory. Any
other entry of a state file (``../x``, an absolute path elsewhere, a symlink, another name) is
left alone with a warning, so a crafted or stale state file cannot make it delete anything else.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time

import numpy as _np

from ._format import CheckpointFormatError
from ._graph import logger
from ._io import atomic_write_bytes

__all__ = ["CheckpointManager", "latest_checkpoint", "get_checkpoint_state", "STATE_FILENAME"]

STATE_FILENAME = "checkpoint.json"
_STATE_VERSION = 1


def _rel(directory, path):
    path = os.path.abspath(path)
    return os.path.relpath(path, directory) if os.path.dirname(path) == directory else path


def _abs(directory, path):
    return path if os.path.isabs(path) else os.path.join(directory, path)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's state (``model_checkpoint_path``, ``all_model_checkpoint_paths`` as
    absolute paths, their timestamps, ``last_preserved_timestamp``), or None if it has none."""
    directory = os.path.abspath(os.fspath(checkpoint_dir))
    path = os.path.join(directory, latest_filename or STATE_FILENAME)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        state = json.loads(raw.decode("utf-8"))
        if not isinstance(state, dict) or state.get("format") != "tnp_train.checkpoint_state":
            raise ValueError("not a tnp_train checkpoint state file")
        if state.get("format_version") != _STATE_VERSION:
            raise ValueError(f"unsupported state format version {state.get('format_version')!r}")
        latest = state["model_checkpoint_path"]
        paths = state.get("all_model_checkpoint_paths", [])
        stamps = state.get("all_model_checkpoint_timestamps", [])
        preserved = state.get("last_preserved_timestamp")
        if not isinstance(latest, str) or not isinstance(paths, list) or \
                not all(isinstance(p, str) for p in paths):
            raise ValueError("the checkpoint paths must be strings")
        if not isinstance(stamps, list) or len(stamps) not in (0, len(paths)) or \
                not all(_is_number(t) for t in stamps):
            raise ValueError("the timestamps must be a list of numbers, one per checkpoint")
        if preserved is not None and not _is_number(preserved):
            raise ValueError(f"invalid last_preserved_timestamp {preserved!r}")
        paths = [_abs(directory, p) for p in paths]
        stamps = [float(t) for t in stamps]
    # (ValueError includes JSON errors and over-long integers; RecursionError, JSON nested
    # deeper than the interpreter's stack)
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise CheckpointFormatError(f"{path}: unreadable checkpoint state file: "
                                    f"{type(e).__name__}: {e}") from None
    return {"model_checkpoint_path": _abs(directory, latest),
            "all_model_checkpoint_paths": paths,
            "all_model_checkpoint_timestamps": stamps or [None] * len(paths),
            "last_preserved_timestamp": preserved}


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _update_state(directory, latest, paths, timestamps=None, last_preserved=None,
                  latest_filename=None):
    directory = os.path.abspath(directory)
    now = time.time()
    state = {"format": "tnp_train.checkpoint_state", "format_version": _STATE_VERSION,
             "model_checkpoint_path": _rel(directory, latest),
             "all_model_checkpoint_paths": [_rel(directory, p) for p in paths],
             "all_model_checkpoint_timestamps": list(timestamps) if timestamps is not None
             else [now] * len(paths),
             "last_preserved_timestamp": last_preserved if last_preserved is not None else now}
    atomic_write_bytes(os.path.join(directory, latest_filename or STATE_FILENAME),
                       json.dumps(state, indent=1).encode("utf-8"))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """Mirrors ``tf.train.latest_checkpoint``: the path of the directory's latest checkpoint,
    or None (no state file, or the file it names is gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    path = state["model_checkpoint_path"]
    return path if os.path.isfile(path) else None


def _as_int(x, what):
    if isinstance(x, (int, _np.integer)) and not isinstance(x, bool):
        return int(x)
    try:
        a = _np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    except Exception:  # noqa: BLE001
        a = None
    if a is None or a.ndim != 0 or a.dtype.kind not in "iu":
        raise TypeError(f"CheckpointManager: {what} must be an integer (or an integer scalar "
                        f"Variable), got {x!r}")
    return int(a)


class CheckpointManager:
    """Mirrors ``tf.train.CheckpointManager(checkpoint, directory, max_to_keep,
    keep_checkpoint_every_n_hours=None, checkpoint_name="ckpt", step_counter=None,
    checkpoint_interval=None, init_fn=None)``; ``max_to_keep`` defaults to 5 here.

    ``save()`` writes ``<directory>/<checkpoint_name>-<N>`` and keeps the newest
    ``max_to_keep`` (None: all); with ``keep_checkpoint_every_n_hours`` one checkpoint per that
    many hours is kept as well. With ``checkpoint_interval``, ``save()`` does nothing until
    ``step_counter`` has advanced that much since the last save.
    """

    def __init__(self, checkpoint, directory, max_to_keep=5, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        from .checkpoint import Checkpoint
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: expected a tt.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if directory is None:
            raise ValueError("CheckpointManager: directory is required")
        if max_to_keep is not None and (isinstance(max_to_keep, bool) or
                                        not isinstance(max_to_keep, (int, _np.integer)) or
                                        max_to_keep < 1):
            raise ValueError(f"CheckpointManager: max_to_keep must be a positive integer or None, "
                             f"got {max_to_keep!r}")
        if checkpoint_interval is not None:
            if step_counter is None:
                raise ValueError("`step_counter` should be passed if `checkpoint_interval` is "
                                 "not None.")
            if checkpoint_interval <= 0:
                raise ValueError(f"CheckpointManager: checkpoint_interval must be positive, got "
                                 f"{checkpoint_interval!r}")
        if not checkpoint_name or "/" in checkpoint_name or os.sep in checkpoint_name:
            raise ValueError(f"CheckpointManager: invalid checkpoint_name {checkpoint_name!r}")
        self._checkpoint = checkpoint
        self._directory = os.path.abspath(os.fspath(directory))
        self._max_to_keep = max_to_keep
        self._keep_every = keep_checkpoint_every_n_hours
        self._checkpoint_name = checkpoint_name
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._own_name = re.compile(re.escape(checkpoint_name) + r"--?[0-9]+")
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_checkpoint_step = None
        self._maybe_delete = {}          # path -> timestamp, oldest first
        self._latest_checkpoint = None
        self._last_preserved_timestamp = time.time()
        state = get_checkpoint_state(self._directory)
        if state is not None:
            latest = state["model_checkpoint_path"]
            self._latest_checkpoint = latest if os.path.isfile(latest) else None
            now = time.time()
            for p, t in zip(state["all_model_checkpoint_paths"],
                            state["all_model_checkpoint_timestamps"]):
                own = self._own_checkpoint(p, "manage or delete it")
                if own is not None:
                    self._maybe_delete.pop(own, None)
                    self._maybe_delete[own] = t if t is not None and t <= now else now
            if state.get("last_preserved_timestamp") is not None:
                self._last_preserved_timestamp = float(state["last_preserved_timestamp"])
        self._remove_stale_temporaries()

    def _own_checkpoint(self, path, action):
        """``path`` if it names a checkpoint this manager may delete: a regular file (not a
        symlink) ``<checkpoint_name>-<N>`` directly in its directory, named without detours
        (``..``, ``.``, subdirectories). Otherwise None, with a warning unless it is simply
        gone (``action``: what is not done to it)."""
        if os.path.normpath(path) != path or os.path.dirname(path) != self._directory or \
                not self._own_name.fullmatch(os.path.basename(path)):
            why = f"not a '{self._checkpoint_name}-<N>' file in {self._directory}"
        else:
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                return None
            except OSError as e:
                mode, why = None, f"cannot be examined ({e})"
            if mode is not None and stat.S_ISREG(mode):
                return path
            if mode is not None:
                why = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
        logger.warning("CheckpointManager: %s lists %r, which is %s; the manager will not %s",
                       STATE_FILENAME, path, why, action)
        return None

    def _remove_stale_temporaries(self):
        """Temporary files left by a process killed mid-save (single writer per directory)."""
        pat = re.compile(r"\.(" + re.escape(self._checkpoint_name) + r"-\d+|"
                         + re.escape(STATE_FILENAME) + r")\.tmp-")
        try:
            names = os.listdir(self._directory)
        except OSError:
            return
        for n in names:
            if pat.match(n):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self._directory, n))

    # ------------------------------------------------------------------ properties
    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The path of the newest checkpoint, or None."""
        return self._latest_checkpoint

    @property
    def checkpoints(self):
        """The kept checkpoints, oldest first."""
        return list(self._maybe_delete)

    # ------------------------------------------------------------------ saving
    def _record_state(self):
        if self._latest_checkpoint is None:
            return
        paths = list(self._maybe_delete) or [self._latest_checkpoint]
        stamps = list(self._maybe_delete.values()) or [time.time()]
        _update_state(self._directory, self._latest_checkpoint, paths, stamps,
                      self._last_preserved_timestamp)

    def _sweep(self):
        if self._max_to_keep is None:
            return
        while len(self._maybe_delete) > self._max_to_keep:
            path, ts = next(iter(self._maybe_delete.items()))
            del self._maybe_delete[path]
            if self._keep_every is not None and \
                    ts - self._last_preserved_timestamp >= 3600.0 * self._keep_every:
                self._last_preserved_timestamp = ts
                continue
            # checked again: the directory may have changed since the state was read
            if self._own_checkpoint(path, "delete it") is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Write a new checkpoint (``<prefix>-<checkpoint_number>``, by default the incremented
        save counter) and drop the oldest beyond ``max_to_keep``; returns its path, or None when
        ``checkpoint_interval`` says it is too early."""
        if self._checkpoint_interval is not None:
            step = _as_int(self._step_counter, "step_counter")
            if self._last_checkpoint_step is not None:
                if step == self._last_checkpoint_step:
                    return None
                if check_interval and step < self._last_checkpoint_step + self._checkpoint_interval:
                    return None
            self._last_checkpoint_step = step
        counter = self._checkpoint._ensure_counter()
        counter.assign_add(1)
        n = _as_int(counter if checkpoint_number is None else checkpoint_number,
                    "checkpoint_number")
        os.makedirs(self._directory, exist_ok=True)
        try:
            path = self._checkpoint.write(f"{self._prefix}-{n}")
        except BaseException:
            counter.assign_sub(1)
            raise
        self._maybe_delete.pop(path, None)   # an overwritten checkpoint moves to the end
        self._maybe_delete[path] = time.time()
        self._latest_checkpoint = path
        # record the new latest before deleting anything, then again without the deleted ones
        self._record_state()
        if self._max_to_keep is not None and len(self._maybe_delete) > self._max_to_keep:
            self._sweep()
            self._record_state()
        return path

    def restore_or_initialize(self):
        """Restore the latest checkpoint if there is one (returns its path); otherwise call
        ``init_fn`` (if given) and return None."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _as_int(self._step_counter, "step_counter")
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None
