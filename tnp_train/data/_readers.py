"""``tt.data.FixedLengthRecordDataset`` (``tf.data.FixedLengthRecordDataset`` of TF 2.4): the
fixed-size records of binary files; and ``tt.data.experimental.SqlDataset`` (the rows of a
SQLite query, with the standard library's ``sqlite3``)."""
from __future__ import annotations

import os
import sqlite3
import zlib

import numpy as _np

import tnp

from ..errors import InvalidArgumentError
from ..errors import DataLossError
from ..io.tfrecord import compression_of
from ._files import path_of, positive_int, string_scalar
from ._structure import TensorSpec, check_no_lists
from ._tfrecord import RecordFilesDataset
from .dataset import Dataset

__all__ = ["FixedLengthRecordDataset", "SqlDataset"]

_OP = "FixedLengthRecordDataset"
_READ = 256 * 1024


def _file_chunks(path, compression, size):
    """The bytes of a file, decompressed (``"ZLIB"``/``"GZIP"``) as they are read."""
    with open(path, "rb") as f:
        if not compression:
            while chunk := f.read(size):
                yield chunk
            return
        d = zlib.decompressobj(31 if compression == "GZIP" else 15)
        try:
            while raw := f.read(size):
                if chunk := d.decompress(raw):
                    yield chunk
            if tail := d.flush():
                yield tail
        except zlib.error as e:
            raise DataLossError(f"{_OP}: the {compression} stream of {os.fsdecode(path)} is "
                                f"corrupt: {e}") from None
        if not d.eof:
            raise DataLossError(f"{_OP}: the {compression} stream of {os.fsdecode(path)} ends "
                                "before its end marker")


def _body_error(name, header, footer, body, record):
    return InvalidArgumentError(
        f"Excluding the header ({header} bytes) and footer ({footer} bytes), input file "
        f"\"{os.fsdecode(name)}\" has body length {body} bytes, which is not an exact multiple "
        f"of the record length ({record} bytes).")


def _fixed_records(path, record, header, footer, compression, buffer_size):
    """The records of one file: after ``header`` bytes, every ``record`` bytes up to the
    last ``footer`` bytes. An uncompressed file whose body is not a whole number of records
    is an InvalidArgumentError before any record (TF checks the size when it opens the
    file); a compressed one after the records it holds."""
    if not compression:
        size = os.path.getsize(path)
        body = size - header - footer
        if body < 0 or body % record:
            raise _body_error(path, header, footer, max(body, 0), record)
    buf = bytearray()
    skipped = 0
    for chunk in _file_chunks(path, compression, buffer_size or _READ):
        if skipped < header:
            take = min(header - skipped, len(chunk))
            skipped += take
            chunk = chunk[take:]
        buf += chunk
        n = (len(buf) - footer) // record
        if n > 0:
            for i in range(n):
                yield string_scalar(bytes(buf[i * record:(i + 1) * record]))
            del buf[:n * record]
    if skipped < header or len(buf) != footer:
        raise _body_error(path, header, footer, len(buf) - footer if len(buf) > footer
                          else 0, record)


class FixedLengthRecordDataset(RecordFilesDataset):
    """Mirrors ``tf.data.FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None,
    footer_bytes=None, buffer_size=None, compression_type=None, num_parallel_reads=None)``:
    each record a string scalar of ``record_bytes`` bytes, read after ``header_bytes`` and
    before ``footer_bytes`` of each file. With ``num_parallel_reads`` > 1, that many files are
    read in turn, one record from each (TF's deterministic order), on one thread."""

    _op = _OP

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None, name=None):
        self._record = positive_int(record_bytes, "record_bytes", _OP, 1)
        self._header = 0 if header_bytes is None else \
            positive_int(header_bytes, "header_bytes", _OP, 0)
        self._footer = 0 if footer_bytes is None else \
            positive_int(footer_bytes, "footer_bytes", _OP, 0)
        self._buffer = None if not buffer_size else \
            positive_int(buffer_size, "buffer_size", _OP, 0)
        self._compression = compression_of(compression_type, _OP)
        self._set_files(filenames, num_parallel_reads)

    def _open(self, name):
        return _fixed_records(path_of(name, _OP), self._record, self._header, self._footer,
                              self._compression, self._buffer)

    def _with_files(self, names):
        return FixedLengthRecordDataset(names, self._record, self._header, self._footer,
                                        self._buffer, self._compression or None,
                                        self._num_parallel_reads)


# ----------------------------------------------------------------------------- SqlDataset
_SQL = "SqlDataset"


def _sql_value(v, dtype, column):
    if v is None:
        raise InvalidArgumentError(f"{_SQL}: column {column} of a row is NULL; TF reads no "
                                   "NULL values")
    if dtype.kind == "S":
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif not isinstance(v, bytes):
            v = str(v).encode("utf-8")
        return string_scalar(v)
    if dtype.kind == "b":
        return tnp.asarray(_np.bool_(int(v) != 0))
    if dtype.kind in "iu":
        if isinstance(v, (bytes, str)) or isinstance(v, float):
            v = int(float(v)) if not isinstance(v, bytes) else int(v)
        info = _np.iinfo(dtype)
        if not info.min <= int(v) <= info.max:
            raise InvalidArgumentError(f"{_SQL}: the value {v} of column {column} is out of "
                                       f"range for {dtype}")
        return tnp.asarray(_np.array(v, dtype=dtype))
    return tnp.asarray(_np.array(float(v), dtype=dtype))


class SqlDataset(Dataset):
    """Mirrors ``tf.data.experimental.SqlDataset(driver_name, data_source_name, query,
    output_types)``: the rows of ``query`` run on a SQLite database (``driver_name``
    ``"sqlite"``, the only one TF has), each a tuple of scalars of ``output_types`` (a scalar
    when one dtype is given). Every pass runs the query again."""

    def __init__(self, driver_name, data_source_name, query, output_types):
        if driver_name != "sqlite":
            raise InvalidArgumentError(
                f"The database type, {driver_name}, is not supported by SqlDataset. The set of "
                "supported databases is: {'sqlite'}.")
        if not isinstance(query, str):
            raise TypeError(f"{_SQL}: query must be a string, got {type(query).__name__}")
        check_no_lists(output_types, _SQL + ": output_types")
        single = not isinstance(output_types, tuple)
        types_ = (output_types,) if single else output_types
        dtypes = []
        for t in types_:
            d = _np.dtype(t) if not isinstance(t, _np.dtype) else t
            if d.kind == "U":
                d = _np.dtype("S")
            if d.kind not in "biufS":
                raise TypeError(f"{_SQL}: unsupported output type {t!r}")
            dtypes.append(d)
        self._source = os.fsdecode(data_source_name)
        self._query = query
        self._dtypes = dtypes
        self._single = single

    def _iter_elements(self):
        con = sqlite3.connect(self._source)
        try:
            cur = con.execute(self._query)
            width = len(cur.description or ())
            if width != len(self._dtypes):
                raise InvalidArgumentError(
                    f"{_SQL}: the query returns {width} columns but {len(self._dtypes)} output "
                    "types were given")
            for row in cur:
                values = tuple(_sql_value(v, d, i) for i, (v, d) in
                               enumerate(zip(row, self._dtypes)))
                yield values[0] if self._single else values
        finally:
            con.close()

    def _compute_spec(self):
        specs = tuple(TensorSpec((), d) for d in self._dtypes)
        return specs[0] if self._single else specs

