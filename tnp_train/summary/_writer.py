"""Summary writers and the per-thread summary state (TF's ``summary_ops_v2``): the default
writer, the default step and the recording condition, and the event files themselves.

An event file is what TensorFlow writes: TFRecord-framed ``Event`` protocol buffers, the first
one ``file_version="brain.Event:2"``. The protocol buffers and the record framing (length,
masked CRC32C) come from the ``tensorboard`` package, the reader of these files, so the format
is the one its reader expects; this module decides the file's name, when events reach the disk
and which writer a summary goes to.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import numbers
import operator
import os
import re
import socket
import threading
import time
import types
import weakref

import numpy as np

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "flush", "get_step",
           "record_if", "set_step", "should_record_summaries", "summary_scope", "write"]

INSTALL_HINT = ("TensorBoard event files are written with the `tensorboard` package: "
                "`pip install tnp[tensorboard]` (or `pip install tensorboard`)")

_FILE_PREFIX = "events.out.tfevents."


@functools.lru_cache(maxsize=None)
def tensorboard():
    """The tensorboard modules used here (``event_pb2``, ``summary_pb2``, ``RecordWriter``,
    ``tensor_util``), imported on first use: ``import tnp_train.summary`` and a summary call
    with no writer work without tensorboard installed."""
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter
        from tensorboard.util import tensor_util
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return types.SimpleNamespace(
        event_pb2=event_pb2, summary_pb2=summary_pb2, RecordWriter=RecordWriter,
        tensor_util=tensor_util,
        # older tensorboard releases have no SourceMetadata in their Event proto
        has_source="source_metadata" in event_pb2.Event.DESCRIPTOR.fields_by_name)


# ------------------------------------------------------------------ the per-thread state
class _State(threading.local):
    # per thread, as TF's: a writer made default in one thread is not another thread's default
    def __init__(self):
        self.writer = None
        self.step = None
        self.is_recording = None
        self.scopes = []


_state = _State()


def get_step():
    """``tf.summary.experimental.get_step()``: the default step of this thread (what
    ``set_step`` or ``writer.as_default(step)`` set), or None."""
    return _state.step


def set_step(step):
    """``tf.summary.experimental.set_step(step)``: the default step of this thread's summary
    calls (None unsets it). A Variable (e.g. ``optimizer.iterations``) is read when a summary is
    written, so it may be set once before the loop."""
    _state.step = step


@contextlib.contextmanager
def record_if(condition):
    """``tf.summary.record_if(condition)``: summaries are written inside the block only while
    ``condition`` holds: a bool, a 0-d bool array, or a callable returning one, called at each
    summary (e.g. ``lambda: step % 100 == 0``). The previous condition is restored on exit."""
    old = _state.is_recording
    try:
        _state.is_recording = condition
        yield
    finally:
        _state.is_recording = old


def _truth(value):
    return bool(np.asarray(value)) if not isinstance(value, bool) else value


def should_record_summaries():
    """``tf.summary.should_record_summaries()``: whether a summary written now would be: there
    is a default writer and the ``record_if`` condition (True when none was set) holds."""
    if _state.writer is None:
        return False
    cond = _state.is_recording
    if cond is None:
        return True
    return _truth(cond() if callable(cond) else cond)


def as_step(step):
    """A summary step as a Python int. Like TF's int64 steps: integers and 0-d integer arrays
    (a Variable such as ``optimizer.iterations`` included) only; a float step is a TypeError."""
    if isinstance(step, bool):
        raise TypeError(f"summary step must be an integer, got {step!r}")
    if isinstance(step, numbers.Integral):
        return int(step)
    if hasattr(step, "__index__") and not hasattr(step, "dtype"):
        return operator.index(step)
    a = np.asarray(step)
    if a.shape != () or a.dtype.kind not in "iu":
        raise TypeError(f"summary step must be an integer scalar, got {a.dtype} of shape "
                        f"{a.shape}")
    return int(a)


# ------------------------------------------------------------------ event files
_uids = itertools.count()      # TF's ops.uid(): one counter per process


def _name_parts():
    """``(seconds, host, pid)`` of a new file's name (its own function, so that a test can stop
    the clock or reuse a pid for the names alone)."""
    return int(time.time()), socket.gethostname(), os.getpid()


_monotonic = time.monotonic    # the flush clock, replaceable by a test for this module alone


def _event_file_name(suffix):
    # TF's name: events.out.tfevents.<seconds>.<host>.<pid>.<uid><suffix>; the pid and the
    # per-process counter tell apart writers opened in the same second on the same host
    seconds, host, pid = _name_parts()
    return f"{_FILE_PREFIX}{seconds:010d}.{host}.{pid}.{next(_uids)}{suffix}"


def _is_url(path):
    return "://" in path


def _remote_gfile():
    """tensorboard's file API (TensorFlow's when installed; else S3 through boto3 and other
    schemes through fsspec), for a logdir that is a URL."""
    from tensorboard.compat import tf
    return tf.io.gfile


_MAX_TRIES = 1000


def open_event_file(logdir, suffix):
    """``(path, binary file)`` of a new event file in ``logdir`` (made if missing). A local file
    is created exclusively: a name already taken (another process that had this pid in the same
    second, on this host or on another machine sharing the folder) takes the next counter, so
    an existing file is never truncated. On a URL the name is checked before it is opened."""
    if _is_url(logdir):
        gfile = _remote_gfile()
        gfile.makedirs(logdir)
        for _ in range(_MAX_TRIES):
            path = logdir.rstrip("/") + "/" + _event_file_name(suffix)
            if not gfile.exists(path):
                return path, gfile.GFile(path, "wb")
    else:
        os.makedirs(logdir, exist_ok=True)
        for _ in range(_MAX_TRIES):
            path = os.path.join(logdir, _event_file_name(suffix))
            try:
                return path, open(path, "xb")
            except FileExistsError:
                continue
    raise FileExistsError(f"no free event file name in {logdir} after {_MAX_TRIES} tries")


# ------------------------------------------------------------------ writers
class SummaryWriter:
    """``tf.summary.SummaryWriter``: the interface of the writers ``create_file_writer`` and
    ``create_noop_writer`` return."""

    def set_as_default(self, step=None):
        """Make this writer the default of the current thread (and ``step`` its default
        step, when given)."""
        raise NotImplementedError

    def as_default(self, step=None):
        """A context manager making this writer the default of the current thread."""
        raise NotImplementedError

    def init(self):
        raise NotImplementedError

    def flush(self):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError


class NoopSummaryWriter(SummaryWriter):
    """``tf.summary.create_noop_writer()``'s writer: summaries under it are not written."""

    def set_as_default(self, step=None):
        pass

    @contextlib.contextmanager
    def as_default(self, step=None):
        yield self

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass


_open = weakref.WeakSet()      # writers to flush at exit


@atexit.register
def _flush_at_exit():
    # TF flushes a writer when its resource is destroyed, at the latest when the program ends
    for writer in list(_open):
        try:
            writer.flush()
        except Exception:       # a full disk at exit must not hide the program's own error
            pass


class FileWriter(SummaryWriter):
    """The writer of one event file (TF's ``ResourceSummaryWriter`` over its C++
    ``SummaryFileWriter``): events wait in memory and are written when more than ``max_queue``
    are waiting, when ``flush_millis`` have passed since the last flush (checked at each
    event), at ``flush()``, at the end of an ``as_default`` block, at ``close()``, and at exit."""

    def __init__(self, logdir, max_queue=10, flush_millis=120000, filename_suffix=".v2"):
        lib = tensorboard()
        self.logdir = logdir
        self._max_queue = max_queue
        self._flush_s = flush_millis / 1000.0
        self._lock = threading.Lock()
        self._queue = []
        self._is_closed = False
        self._pid = os.getpid()
        self.path, stream = open_event_file(logdir, filename_suffix)
        self._records = lib.RecordWriter(stream)
        first = lib.event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        if lib.has_source:
            first.source_metadata.writer = "tnp_train.summary"
        # written at once, as TF does, so the run appears in TensorBoard before any summary
        self._records.write(first.SerializeToString())
        self._records.flush()
        self._last_flush = _monotonic()
        _open.add(self)

    def __repr__(self):
        return f"<tt.summary file writer {self.path!r}{' (closed)' if self._is_closed else ''}>"

    def _check_open(self):
        if self._is_closed:
            raise RuntimeError("SummaryWriter is already closed")

    def _mine(self):
        # a forked child inherits the writer but not the file: its events would interleave
        # with the parent's, and its exit would write the parent's queued events a second time
        return os.getpid() == self._pid

    def set_as_default(self, step=None):
        self._check_open()
        _state.writer = self
        if step is not None:
            _state.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """``with writer.as_default(step=None):`` this writer is the thread's default inside
        the block (``step``, when given, the default step), and is flushed when the block ends
        normally; the previous writer (and step) are restored."""
        self._check_open()
        old_writer, old_step = _state.writer, _state.step
        _state.writer = self
        if step is not None:
            _state.step = step
        try:
            yield self
            self.flush()
        finally:
            _state.writer = old_writer
            if step is not None:
                _state.step = old_step

    def init(self):
        self._check_open()      # the file is made by the constructor, as TF's eager writer

    def write_summary(self, tag, tensor, metadata, step):
        """Queue one summary: a ``TensorProto`` and its ``SummaryMetadata`` (or None) under
        ``tag`` at ``step`` (an int)."""
        lib = tensorboard()
        event = lib.event_pb2.Event(wall_time=time.time(), step=step)
        value = event.summary.value.add(tag=tag, tensor=tensor)
        if metadata is not None:
            value.metadata.CopyFrom(metadata)
        self.write_event(event)

    def write_event(self, event):
        data = event.SerializeToString()
        with self._lock:
            self._check_open()
            if not self._mine():
                raise RuntimeError(f"this summary writer's file belongs to process {self._pid}:"
                                   f" create a writer in this process")
            self._queue.append(data)
            if (len(self._queue) > self._max_queue
                    or _monotonic() - self._last_flush > self._flush_s):
                self._flush_locked()

    def _flush_locked(self):
        for data in self._queue:
            self._records.write(data)
        self._queue.clear()
        self._records.flush()
        self._last_flush = _monotonic()

    def flush(self):
        """Write the queued events to the file (a closed writer: nothing to do)."""
        with self._lock:
            if not self._is_closed and self._mine():
                self._flush_locked()

    def close(self):
        """Flush and close the file; later summaries through this writer raise RuntimeError."""
        with self._lock:
            if self._is_closed:
                return
            self._is_closed = True
            if self._mine():
                try:
                    self._flush_locked()
                finally:
                    self._records.close()
        _open.discard(self)

    def __del__(self):
        # as TF's resource deleter: a writer dropped without close() still reaches the disk
        try:
            if not self._is_closed:
                self.close()
        except Exception:
            pass


def _check_count(name, value, default):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"create_file_writer: {name} must be a non-negative integer, got "
                         f"{value!r}")
    return int(value)


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """``tf.summary.create_file_writer(logdir, max_queue=None, flush_millis=None,
    filename_suffix=None, name=None)``: a writer of a new event file in ``logdir``.

    ``max_queue`` (default 10) events wait in memory before a write, at most ``flush_millis``
    (default 120000) ms; ``filename_suffix`` (default ``".v2"``) ends the file's name, which is
    TF's: ``events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>``. Every writer makes its own
    file, never one that exists. ``name`` is accepted for TF's signature (an op name)."""
    if logdir is None:
        raise ValueError("logdir cannot be None")
    logdir = os.fspath(logdir)
    if not isinstance(logdir, str):
        logdir = os.fsdecode(logdir)
    max_queue = _check_count("max_queue", max_queue, 10)
    flush_millis = _check_count("flush_millis", flush_millis, 120000)
    if filename_suffix is None:
        filename_suffix = ".v2"
    elif not isinstance(filename_suffix, str) or "/" in filename_suffix or (
            os.sep in filename_suffix):
        raise ValueError(f"create_file_writer: filename_suffix must be a string without a path "
                         f"separator, got {filename_suffix!r}")
    return FileWriter(logdir, max_queue, flush_millis, filename_suffix)


def create_noop_writer():
    """``tf.summary.create_noop_writer()``: a writer that writes nothing."""
    return NoopSummaryWriter()


def flush(writer=None, name=None):
    """``tf.summary.flush(writer=None)``: flush ``writer``, or the default writer (nothing
    to do without one)."""
    writer = _state.writer if writer is None else writer
    if writer is not None:
        writer.flush()


def recording_writer(step):
    """TF's ``write`` checks, shared by every summary function: ``(writer, int step)`` when a
    summary is to be written now; None without a default writer or outside ``record_if``; a
    ValueError when neither ``step`` nor a default step is given."""
    writer = _state.writer
    if writer is None:
        return None
    if step is None:
        step = _state.step
        if step is None:
            raise ValueError("No step set via 'step' argument or "
                             "tt.summary.experimental.set_step()")
    if not should_record_summaries():
        return None
    return writer, as_step(step)


def emit(tag, build, step):
    """Write the summary ``build()`` makes, ``(TensorProto, SummaryMetadata or None)``, under
    ``tag`` if one is to be written now (see ``recording_writer``); only then are the data
    converted, read back from a device or encoded. True when written, else False."""
    target = recording_writer(step)
    if target is None:
        return False
    writer, step = target
    tensor, metadata = build()
    writer.write_summary(tag, tensor, metadata, step)
    return True


def scoped(name):
    """The tag of a summary named ``name``: prefixed by the enclosing ``summary_scope``s."""
    return "/".join(_state.scopes + [name]) if _state.scopes else name


_INVALID_SCOPE_CHARACTERS = re.compile(r"[^-_/.A-Za-z0-9]")


@contextlib.contextmanager
def summary_scope(name, default_name="summary", values=None):
    """``tf.summary.experimental.summary_scope(name, default_name="summary", values=None)``:
    yields ``(tag, scope)`` for a custom summary function; summaries written inside get tags
    prefixed with the scope (``outer/name``). The tag keeps ``name`` as given; the scope drops
    the characters TF does not allow in scope names."""
    name = name or default_name
    tag = scoped(name)
    part = _INVALID_SCOPE_CHARACTERS.sub("", name) or default_name
    _state.scopes.append(part)
    try:
        yield tag, "/".join(_state.scopes) + "/"
    finally:
        _state.scopes.pop()


def write(tag, tensor, step=None, metadata=None, name=None):
    """``tf.summary.write(tag, tensor, step=None, metadata=None, name=None)``: write any
    array (or a callable returning one, called only when the summary is recorded) under
    ``tag``, with ``metadata`` a ``SummaryMetadata`` proto or its serialized bytes. Returns
    True when written, False without a default writer or outside ``record_if``."""
    def build():
        lib = tensorboard()
        data = tensor() if callable(tensor) else tensor
        proto = lib.tensor_util.make_tensor_proto(host_array(data))
        if metadata is None or hasattr(metadata, "SerializeToString"):
            return proto, metadata
        return proto, lib.summary_pb2.SummaryMetadata.FromString(bytes(metadata))
    return emit(tag, build, step)


def host_array(data):
    """``data`` (a tnp array on any device, a Variable, NumPy, a Python number or list) as a
    NumPy array in host memory."""
    return np.asarray(data)
