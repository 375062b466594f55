"""``tt.data.TFRecordDataset`` (``tf.data.TFRecordDataset`` of TF 2.4): the records of TFRecord
files, each a string scalar (dtype ``S``, on the CPU, as ``TextLineDataset``'s lines).

The framing and checksums are :mod:`tnp_train.io`'s. A record that fails its checksum, or a
file cut short inside a record, raises ``tt.errors.DataLossError`` naming the file and the
offset; as in TF, the iteration then goes on with the next file, so ``ignore_errors()`` skips
the rest of a damaged file and keeps the others. NumPy's ``S`` dtype drops trailing NUL bytes
when an element is read (``x.item()``); ``x.tobytes()`` of a record gives all its bytes, and
``tt.io.parse_*`` restore them.
"""
from __future__ import annotations

import os

from ..io.tfrecord import compression_of, read_records
from ._files import file_source, names_of, path_of, positive_int, \
    shard_files, string_scalar
from ._rows import AUTOTUNE, UNKNOWN
from ._structure import TensorSpec
from .dataset import Dataset

__all__ = ["TFRecordDataset"]

_OP = "TFRecordDataset"


def _file_records(path, compression, buffer_size):
    for record in read_records(path, compression, buffer_size):
        yield string_scalar(record)


class _RecordsIterator:
    """The records of the files, ``cycle`` files at a time, one record of each in turn (the
    order of TF's interleave with ``block_length=1``). Not a generator: after a file's error it
    goes on with the next file, so ``ignore_errors`` can keep reading (TF moves to the next
    file on a DataLossError too)."""

    def __init__(self, names, cycle, open_file):
        self._names = iter(names)
        self._open = open_file
        self._current = [None] * cycle
        self._num_open = 0
        self._end_of_input = False
        self._index = 0

    def __iter__(self):
        return self

    def __next__(self):
        cycle = len(self._current)
        while not self._end_of_input or self._num_open > 0:
            i = self._index
            it = self._current[i]
            if it is not None:
                try:
                    value = next(it)
                except StopIteration:
                    self._close(i)
                    continue
                except Exception:
                    self._close(i)
                    raise
                self._index = (i + 1) % cycle
                return value
            if not self._end_of_input:
                try:
                    name = next(self._names)
                except StopIteration:
                    self._end_of_input = True
                    continue
                self._current[i] = self._open(name)
                self._num_open += 1
            else:
                self._index = (i + 1) % cycle
        raise StopIteration

    def _close(self, i):
        self._current[i] = None
        self._num_open -= 1
        self._index = (i + 1) % len(self._current)


class RecordFilesDataset(Dataset):
    """The records of a list of files (or of a Dataset of names), ``num_parallel_reads`` of
    them read in turn, one record from each (TF's deterministic order), on one thread: what
    ``TFRecordDataset`` and ``FixedLengthRecordDataset`` share. A subclass sets its own fields,
    calls :meth:`_set_files` and defines ``_open(name)`` (an iterator of records) and
    ``_with_files(names)`` (the same dataset over other files: a shard)."""

    _file_source = True

    def _set_files(self, filenames, num_parallel_reads):
        if num_parallel_reads is None:
            cycle = 1
        else:
            cycle = positive_int(num_parallel_reads, "num_parallel_reads", self._op, 1,
                                 allow_minus_one=True)
            if cycle == AUTOTUNE:
                cycle = max(1, os.cpu_count() or 1)
        if isinstance(filenames, Dataset):
            self._names, self._names_ds = None, filenames
        else:
            self._names, self._names_ds = names_of(filenames, self._op, "filenames"), None
        self._cycle = cycle
        self._num_parallel_reads = num_parallel_reads

    def _iter_elements(self):
        names = self._names if self._names is not None else self._names_ds._iter_elements()
        return _RecordsIterator(names, self._cycle, self._open)

    def _inputs(self):
        return () if self._names_ds is None else (self._names_ds,)

    def _cardinality(self):
        return UNKNOWN

    def _compute_spec(self):
        return TensorSpec((), "S")

    # file-source protocol (see _files.file_source)
    def _files(self):
        if self._names is not None:
            return [os.fsdecode(n) for n in self._names]
        inner = file_source(self._names_ds)
        if inner is not None:
            return inner._files()
        return [os.fsdecode(path_of(e, self._op)) for e in self._names_ds._iter_elements()]

    def _sharded(self, num_shards, index):
        if self._names is not None:
            names = self._names[index::num_shards]
        else:
            names = shard_files(self._names_ds, num_shards, index)
            if names is None:
                names = self._names_ds.shard(num_shards, index)
        return self._with_files(names)


class TFRecordDataset(RecordFilesDataset):
    """Mirrors ``tf.data.TFRecordDataset(filenames, compression_type=None, buffer_size=None,
    num_parallel_reads=None)``: the records of TFRecord files, each a string scalar.
    ``filenames`` is a name, a list or 1-d array of names, or a Dataset of names;
    ``compression_type`` ``""``/None, ``"ZLIB"`` or ``"GZIP"``. With ``num_parallel_reads`` > 1
    that many files are read in turn, one record from each (TF's deterministic order), here by
    one thread. A corrupt record raises ``tt.errors.DataLossError``."""

    _op = _OP

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        self._compression = compression_of(compression_type, _OP)
        if buffer_size is None or buffer_size == 0:
            self._buffer = None
        else:
            self._buffer = positive_int(buffer_size, "buffer_size", _OP, 0)
        self._set_files(filenames, num_parallel_reads)

    def _open(self, name):
        return _file_records(path_of(name, _OP), self._compression, self._buffer)

    def _with_files(self, names):
        return TFRecordDataset(names, self._compression or None, self._buffer,
                               self._num_parallel_reads)
