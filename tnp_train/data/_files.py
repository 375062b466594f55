"""File sources: ``Dataset.list_files`` and ``TextLineDataset`` (``tf.data`` of TF 2.4), and
the walk a strategy uses to shard a pipeline by files (``AutoShardPolicy.FILE``).

Strings are bytes, as ``tf.string`` is: a file name or a line is a 0-d tnp array of dtype
``S`` (``x.item()`` gives the ``bytes``; ``as_numpy_iterator`` gives ``numpy.bytes_``), always
on the CPU (a GPU holds no strings). Lines are read as TF's ``ReadLine`` reads them: split at
``\\n``, every ``\\r`` dropped, a last line without ``\\n`` kept unless it is empty.
"""
from __future__ import annotations

import glob
import gzip
import os
import sys
import zlib

import numpy as _np

import tnp
from tnp import ndarray as _ndarray
from tnp.extend import backend_array as _backend, wrap as _wrap

from ._structure import TensorSpec
from ._rows import AUTOTUNE, UNKNOWN
from .dataset import Dataset

__all__ = ["ListFilesDataset", "TextLineDataset", "list_files", "file_source", "source_files",
           "shard_files", "names_of", "path_of", "positive_int", "string_scalar"]

_CPU = tnp.device("cpu")
_STRING = _np.dtype("S")           # tf.string: bytes of any length
_DEFAULT_BUFFER = 256 * 1024        # TF's default read buffer of TextLineDataset


# ----------------------------------------------------------------------------- names
def _int(value, name, op, minimum, allow_minus_one=False):
    if isinstance(value, (_ndarray, _np.integer)) and _np.ndim(value) == 0 \
            and _np.asarray(value).dtype.kind in "iu":
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    if value < minimum and not (allow_minus_one and value == -1):
        raise ValueError(f"{op}: {name} must be >= {minimum}"
                         f"{' (or -1, AUTOTUNE)' if allow_minus_one else ''}, got {value}")
    return value


def _names(value, op, what):
    """A str/bytes/PathLike, a list/tuple of them, or a 0-d/1-d string array, as a list of
    bytes (TypeError otherwise)."""
    if isinstance(value, _ndarray):
        value = _np.asarray(_backend(value))
    if isinstance(value, _np.ndarray):
        if value.dtype.kind not in "SU" or value.ndim > 1:
            raise TypeError(f"{op}: {what} must be a string or a list/1-d array of strings, got "
                            f"an array of dtype {value.dtype} and shape {value.shape}")
        value = value.reshape(-1).tolist()
    elif isinstance(value, (str, bytes, os.PathLike, _np.generic)):
        value = [value]
    elif not isinstance(value, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a string or a list/1-d array of strings, got "
                        f"{type(value).__name__}")
    out = []
    for v in value:
        if isinstance(v, _ndarray) and v.ndim == 0:
            v = v.item()
        if isinstance(v, os.PathLike):
            v = os.fspath(v)
        if isinstance(v, str):
            v = os.fsencode(v)
        elif not isinstance(v, bytes):
            raise TypeError(f"{op}: {what} must be strings, got {v!r}")
        out.append(bytes(v))
    return out


def _string(b):
    """A bytes value as a 0-d string array on the CPU (tf.string)."""
    return _wrap(_np.array(b, dtype=_np.bytes_), _CPU)


def _path_of(element, op):
    """The file name an element of a dataset of file names holds, as bytes."""
    if isinstance(element, _ndarray):
        if element.ndim != 0 or element.dtype.kind not in "SU":
            raise TypeError(f"{op}: the dataset of file names must yield string scalars, got "
                            f"an array of dtype {element.dtype} and shape {element.shape}")
        element = element.item()
    if isinstance(element, str):
        return os.fsencode(element)
    if isinstance(element, bytes):
        return bytes(element)
    raise TypeError(f"{op}: the dataset of file names must yield strings, got "
                    f"{type(element).__name__}")


names_of = _names
path_of = _path_of
positive_int = _int
string_scalar = _string


# ----------------------------------------------------------------------------- list_files
class ListFilesDataset(Dataset):
    """The sorted file names matched by ``list_files``, before its shuffle (an indexed source,
    so the shuffle and batch fast paths apply)."""

    _indexed = True
    _file_source = True

    def __init__(self, names):
        self._names = list(names)
        arr = _np.array(self._names, dtype=_np.bytes_) if self._names else \
            _np.zeros((0,), dtype="S1")
        arr.setflags(write=False)
        self._arrays = [(arr, _CPU)]

    def _source(self):
        return None, self._arrays

    def _index_chunks(self):
        return iter((range(len(self._names)),))

    def _iter_elements(self):
        return self._iter_indexed_elements()

    def _cardinality(self):
        return len(self._names)

    def _compute_spec(self):
        return TensorSpec((), _STRING)

    # file-source protocol (see file_source)
    def _files(self):
        return [os.fsdecode(n) for n in self._names]

    def _sharded(self, num_shards, index):
        return ListFilesDataset(self._names[index::num_shards])


def _glob(pattern):
    if sys.version_info >= (3, 11):
        # TF's matcher lets * match a leading dot, as fnmatch without FNM_PERIOD does
        return glob.glob(pattern, include_hidden=True)
    return glob.glob(pattern)  # pragma: no cover - Python 3.10


def list_files(file_pattern, shuffle=None, seed=None):
    """``tf.data.Dataset.list_files``: the files matching the glob pattern(s), as string
    scalars; sorted with ``shuffle=False``, else (the default) in a random order that changes
    every epoch (fixed by ``seed`` or ``tt.utils.set_random_seed``). ValueError when nothing
    matches, as TF."""
    patterns = _names(file_pattern, "Dataset.list_files", "file_pattern")
    found = []
    for p in patterns:
        found.extend(os.fsencode(f) for f in _glob(os.fsdecode(p)))
    if not found:
        shown = ", ".join(os.fsdecode(p) for p in patterns)
        raise ValueError(f"Dataset.list_files: No files matched pattern: {shown}")
    found.sort()  # TF's MatchingFiles sorts all matches of all patterns together
    ds = ListFilesDataset(found)
    if shuffle is None or shuffle:
        return ds.shuffle(max(len(found), 1), seed=seed)
    return ds


# ----------------------------------------------------------------------------- TextLineDataset
def _read_chunks(path, compression, buffer_size):
    if compression == "GZIP":
        with gzip.open(path, "rb") as f:
            while chunk := f.read(buffer_size):
                yield chunk
    elif compression == "ZLIB":
        d = zlib.decompressobj()
        with open(path, "rb") as f:
            while raw := f.read(buffer_size):
                if chunk := d.decompress(raw):
                    yield chunk
        if tail := d.flush():
            yield tail
    else:
        with open(path, "rb") as f:
            while chunk := f.read(buffer_size):
                yield chunk


def _read_lines(path, compression, buffer_size):
    """The lines of one file as TF's ``BufferedInputStream::ReadLine`` gives them."""
    pending = []   # pieces of the line in progress
    for chunk in _read_chunks(path, compression, buffer_size):
        parts = chunk.split(b"\n")
        if len(parts) == 1:
            pending.append(chunk)
            continue
        pending.append(parts[0])
        first = b"".join(pending)
        pending = [parts[-1]]
        yield first.replace(b"\r", b"") if b"\r" in first else first
        for line in parts[1:-1]:
            yield line.replace(b"\r", b"") if b"\r" in line else line
    last = b"".join(pending).replace(b"\r", b"")
    if last:
        yield last


class _FileLinesDataset(Dataset):
    """The lines of one file (what TextLineDataset interleaves)."""

    def __init__(self, path, compression, buffer_size):
        self._path = path
        self._compression = compression
        self._buffer = buffer_size

    def _iter_elements(self):
        for line in _read_lines(self._path, self._compression, self._buffer):
            yield _string(line)

    def _compute_spec(self):
        return TensorSpec((), _STRING)


class TextLineDataset(Dataset):
    """Mirrors ``tf.data.TextLineDataset(filenames, compression_type=None, buffer_size=None,
    num_parallel_reads=None)``: the lines of the files, each a string scalar (bytes) without its
    line end. ``filenames`` is a name, a list or 1-d array of names, or a Dataset of names.
    ``compression_type``: ``""``/None, ``"ZLIB"`` or ``"GZIP"``. With ``num_parallel_reads``
    > 1 that many files are read in turn, one line from each (TF's order); files are read
    one after another here, not by parallel threads. A missing file raises FileNotFoundError
    when the iteration reaches it."""

    _file_source = True

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        op = "TextLineDataset"
        if compression_type is None:
            compression_type = ""
        if compression_type not in ("", "ZLIB", "GZIP"):
            raise ValueError(f"{op}: unsupported compression_type {compression_type!r}; "
                             "expected '', 'ZLIB' or 'GZIP'")
        if buffer_size is None or buffer_size == 0:
            buffer_size = _DEFAULT_BUFFER
        else:
            buffer_size = _int(buffer_size, "buffer_size", op, 0)
        if num_parallel_reads is None:
            cycle = 1
        else:
            cycle = _int(num_parallel_reads, "num_parallel_reads", op, 1, allow_minus_one=True)
            if cycle == AUTOTUNE:
                cycle = max(1, os.cpu_count() or 1)
        if isinstance(filenames, Dataset):
            self._names = None
            self._names_ds = filenames
        else:
            self._names = _names(filenames, op, "filenames")
            self._names_ds = None
        self._compression = compression_type
        self._buffer = buffer_size
        self._cycle = cycle
        self._num_parallel_reads = num_parallel_reads

    def _lines_of(self, element):
        return _FileLinesDataset(_path_of(element, "TextLineDataset"), self._compression,
                                 self._buffer)

    def _iter_elements(self):
        if self._names_ds is None and self._cycle == 1:
            for name in self._names:  # the common case, without the interleave machinery
                yield from _FileLinesDataset(name, self._compression,
                                             self._buffer)._iter_elements()
            return
        names = self._names_ds if self._names_ds is not None else ListFilesDataset(self._names)
        if self._cycle == 1:
            yield from names.flat_map(self._lines_of)._iter_elements()
        else:
            yield from names.interleave(self._lines_of, cycle_length=self._cycle,
                                        block_length=1)._iter_elements()

    def _inputs(self):
        return () if self._names_ds is None else (self._names_ds,)

    def _cardinality(self):
        return UNKNOWN

    def _compute_spec(self):
        return TensorSpec((), _STRING)

    # file-source protocol (see file_source)
    def _files(self):
        if self._names is not None:
            return [os.fsdecode(n) for n in self._names]
        inner = file_source(self._names_ds)
        if inner is not None:
            return inner._files()
        return [os.fsdecode(_path_of(e, "TextLineDataset"))
                for e in self._names_ds._iter_elements()]

    def _sharded(self, num_shards, index):
        if self._names is not None:
            names = self._names[index::num_shards]
        else:
            names = shard_files(self._names_ds, num_shards, index)
            if names is None:  # a dataset of names of its own: shard its elements, as TF
                names = self._names_ds.shard(num_shards, index)
        return TextLineDataset(names, self._compression or None, self._buffer,
                               self._num_parallel_reads)


# ----------------------------------------------------------------------------- file sharding
# a file source (``_file_source = True``: list_files, TextLineDataset, TFRecordDataset) has
# ``_files()`` (the names it reads) and ``_sharded(num_shards, index)`` (itself on a shard)
def _path_to_file_source(dataset):
    """``(path, source)``: the datasets from ``dataset`` down to its file source (following
    the single input of each transformation) and that source; ``(path, None)`` when the chain
    reaches another source or a dataset of several inputs (zip, concatenate)."""
    path = []
    node = dataset
    while not getattr(node, "_file_source", False):
        parent = getattr(node, "_parent", None)
        if not isinstance(parent, Dataset):
            return path, None
        path.append(node)
        node = parent
    return path, node


def file_source(dataset):
    """The file source (a ``list_files``, ``TextLineDataset`` or ``TFRecordDataset``) that
    feeds ``dataset``, or None."""
    return _path_to_file_source(dataset)[1]


def source_files(dataset):
    """The names of the files ``dataset`` reads (what FILE sharding splits), or None when it
    is not fed by ``list_files``/``TextLineDataset``/``TFRecordDataset``."""
    source = file_source(dataset)
    return None if source is None else source._files()


def shard_files(dataset, num_shards, index):
    """``dataset`` rebuilt so that its file source yields only every ``num_shards``-th file
    from ``index`` (files in their sorted order, before any shuffle of ``list_files``, so the
    workers' shards never overlap whatever their seeds); the transformations above it are
    copied unchanged. None when there is no file source; ValueError when there are fewer files
    than shards."""
    num_shards = _int(num_shards, "num_shards", "Dataset._shard_files", 1)
    index = _int(index, "index", "Dataset._shard_files", 0)
    if index >= num_shards:
        raise ValueError(f"Dataset._shard_files: index must be < num_shards, got index={index}, "
                         f"num_shards={num_shards}")
    path, source = _path_to_file_source(dataset)
    if source is None:
        return None
    files = source._files()
    if len(files) < num_shards:
        raise ValueError(f"Dataset auto-shard by FILE: the pipeline reads {len(files)} file(s), "
                         f"fewer than the {num_shards} workers (each needs at least one file); "
                         "use AutoShardPolicy.DATA or more files")
    new = source._sharded(num_shards, index)
    for node in reversed(path):
        new = node._with_parent(new)
    return new
