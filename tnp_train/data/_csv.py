"""CSV files as datasets: ``tt.data.experimental.CsvDataset`` and ``make_csv_dataset``
(TF 2.4's). Records are parsed with Python's ``csv`` module (quotes as TF's
``use_quote_delim``); strings come out as bytes scalars, as ``TextLineDataset``'s lines."""
from __future__ import annotations

import csv
import glob
import os

import numpy as _np

import tnp

from . import _structure as _st
from ._files import _DEFAULT_BUFFER, _FileLinesDataset
from ._rows import UNKNOWN
from .dataset import Dataset

__all__ = ["CsvDataset", "make_csv_dataset"]

_F32_MAX = float(_np.finfo(_np.float32).max)
_I32 = _np.iinfo(_np.int32)


def _dtype_of_default(value, who, i):
    """(dtype, default or None) of one record default: a dtype means the field is required."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{who}: record_defaults[{i}] must be a dtype or one value, got "
                             f"{value!r}")
        value = value[0]
    if isinstance(value, (bool, _np.bool_)):
        raise TypeError(f"{who}: record_defaults[{i}]: booleans are not a CSV type (TF takes "
                        f"int32, int64, float32, float64 and string)")
    if isinstance(value, (str, bytes)) and value in ("string", "str", "int32", "int64",
                                                     "float32", "float64"):
        value = _np.dtype("S") if value in ("string", "str") else _np.dtype(value)
    if isinstance(value, (type, _np.dtype)):
        dt = _np.dtype("S") if value in (str, bytes) else _np.dtype(value)
        if dt.kind == "U":
            dt = _np.dtype("S")
        if dt.kind not in "S" and dt not in (_np.int32, _np.int64, _np.float32, _np.float64):
            raise TypeError(f"{who}: record_defaults[{i}]: unsupported dtype {dt} (TF takes "
                            f"int32, int64, float32, float64 and string)")
        return dt, None
    if isinstance(value, (str, bytes)):
        return _np.dtype("S"), value.encode() if isinstance(value, str) else value
    if isinstance(value, int):
        return _np.dtype(_np.int32), value
    if isinstance(value, float):
        return _np.dtype(_np.float32), value
    a = _np.asarray(value)
    if a.shape != ():
        raise ValueError(f"{who}: record_defaults[{i}] must be a scalar, got shape {a.shape}")
    if a.dtype.kind in "SU":
        return _np.dtype("S"), a.astype("S").item()
    return _dtype_of_default(a.dtype, who, i)[0], a.item()


def _convert(text, dtype, default, na_value, where):
    if text == na_value or text == "":
        if default is None:
            raise ValueError(f"{where} is required but missing")
        text = None
    if dtype.kind == "S":
        return _np.bytes_(default if text is None else text.encode())
    if text is None:
        return dtype.type(default)
    try:
        if dtype.kind == "i":
            v = int(text)
            if not _np.iinfo(dtype).min <= v <= _np.iinfo(dtype).max:
                raise ValueError
            return dtype.type(v)
        return dtype.type(float(text))
    except ValueError:
        raise ValueError(f"{where}: cannot parse {text!r} as {dtype.name}") from None


def _rows(path, compression, header, delim, use_quote):
    """The records of one file as lists of strings (the header skipped)."""
    lines = (bytes(_np.asarray(line).item()).decode("utf-8")
             for line in _FileLinesDataset(path, compression, _DEFAULT_BUFFER)._iter_elements())
    reader = csv.reader(lines, delimiter=delim,
                        quoting=csv.QUOTE_MINIMAL if use_quote else csv.QUOTE_NONE)
    if header:
        next(reader, None)
    yield from reader


def _names(filenames, who):
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    names = [os.fsdecode(f) if not isinstance(f, str) else f
             for f in (_np.asarray(filenames).ravel().tolist()
                       if not isinstance(filenames, list) else filenames)]
    if not names:
        raise ValueError(f"{who}: no files given")
    return [n.decode() if isinstance(n, bytes) else n for n in names]


class CsvDataset(Dataset):
    """Mirrors ``tf.data.experimental.CsvDataset(filenames, record_defaults,
    compression_type=None, buffer_size=None, header=False, field_delim=",",
    use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None)``: one tuple of
    scalars per record. A ``record_defaults`` entry is a dtype (the field is required) or a
    default value (int: int32, float: float32, str: string); strings are bytes. A field
    that is missing and required, or does not parse, raises ValueError naming the field, the
    record and the file (TF: InvalidArgumentError)."""

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None, *, _ignore_errors=False):
        who = "CsvDataset"
        self._names = _names(filenames, who)
        if compression_type not in (None, "", "ZLIB", "GZIP"):
            raise ValueError(f"{who}: unsupported compression_type {compression_type!r}")
        if len(field_delim) != 1:
            raise ValueError(f"{who}: field_delim must be one character, got {field_delim!r}")
        if select_cols is not None and exclude_cols is not None:
            raise ValueError(f"{who}: give select_cols or exclude_cols, not both")
        self._types = [_dtype_of_default(d, who, i) for i, d in enumerate(record_defaults)]
        if not self._types:
            raise ValueError(f"{who}: record_defaults must not be empty")
        cols = None
        if select_cols is not None:
            cols = [int(c) for c in select_cols]
            if cols != sorted(set(cols)) or cols[0] < 0:
                raise ValueError(f"{who}: select_cols must be non-negative and increasing, got "
                                 f"{list(select_cols)}")
            if len(cols) != len(self._types):
                raise ValueError(f"{who}: {len(cols)} select_cols but {len(self._types)} "
                                 f"record_defaults")
        self._select, self._exclude = cols, \
            None if exclude_cols is None else sorted({int(c) for c in exclude_cols})
        self._compression = compression_type or ""
        self._header = bool(header)
        self._delim, self._quote, self._na = field_delim, bool(use_quote_delim), na_value
        self._ignore_errors = _ignore_errors
        self.__dict__["_spec_cache"] = tuple(
            _st.TensorSpec((), dt if dt.kind != "S" else _np.dtype("S")) for dt, _ in self._types)

    def _fields(self, row):
        if self._select is not None:
            if len(row) <= self._select[-1]:
                raise ValueError(f"expected at least {self._select[-1] + 1} fields, got "
                                 f"{len(row)}")
            return [row[c] for c in self._select]
        if self._exclude is not None:
            row = [v for i, v in enumerate(row) if i not in self._exclude]
        if len(row) != len(self._types):
            raise ValueError(f"expected {len(self._types)} fields, got {len(row)}")
        return row

    def _iter_elements(self):
        for path in self._names:
            for k, row in enumerate(_rows(path, self._compression, self._header, self._delim,
                                          self._quote)):
                record = f"record {k} of {path}"
                try:
                    fields = self._fields(row)
                    values = tuple(
                        tnp.asarray(_convert(text, dt, default, self._na,
                                             f"CsvDataset: field {i} of {record}"))
                        for i, (text, (dt, default)) in enumerate(zip(fields, self._types)))
                except ValueError as e:
                    if self._ignore_errors:
                        continue
                    msg = str(e)
                    raise ValueError(msg if msg.startswith("CsvDataset") else
                                     f"CsvDataset: {record}: {msg}") from None
                yield values

    def _cardinality(self):
        return UNKNOWN

    def _compute_spec(self):  # pragma: no cover - set at construction
        return self.__dict__["_spec_cache"]


def _infer_type(text, na_value, prev):
    """TF's inference: the first of int32, int64, float32, float64, string (from ``prev`` on)
    that reads ``text``."""
    order = [_np.int32, _np.int64, _np.float32, _np.float64, _np.bytes_]
    if text == na_value or text == "":
        return prev
    start = 0 if prev is None else order.index(prev)
    for t in order[start:]:
        if t in (_np.int32, _np.int64):
            try:
                v = int(text)
            except ValueError:
                continue
            if t is _np.int32 and not _I32.min <= v <= _I32.max:
                continue
            return t
        if t in (_np.float32, _np.float64):
            try:
                v = float(text)
            except ValueError:
                continue
            if t is _np.float32 and abs(v) > _F32_MAX and _np.isfinite(v):
                continue
            return t
        return t
    return _np.bytes_


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",",
                     use_quote_delim=True, na_value="", header=True, num_epochs=None,
                     shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                     num_rows_for_inference=100, compression_type=None, ignore_errors=False):
    """Batches of ``(features, label)`` from CSV files, as TF 2.4's
    ``tf.data.experimental.make_csv_dataset``: ``features`` a dict of columns in file order
    (``label_name``'s popped out). Files are the sorted matches of ``file_pattern`` (a
    pattern or a list of them); column names come from the first file's header unless given;
    column types are inferred from the first ``num_rows_for_inference`` records (int32,
    int64, float32, float64, else string; a missing value reads as 0, 0.0 or b"") unless
    ``column_defaults`` gives them. ``num_epochs=None`` repeats for ever (and drops the
    last, short batch, as TF); ``shuffle`` shuffles the files and the records (a buffer of
    ``shuffle_buffer_size``); ``ignore_errors`` skips records that do not parse."""
    who = "make_csv_dataset"
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) \
        else list(file_pattern)
    files = sorted({f for p in patterns for f in glob.glob(os.fsdecode(p))})
    if not files:
        raise ValueError(f"{who}: no files match {file_pattern!r}")
    compression = compression_type or ""
    if column_names is None:
        if not header:
            raise ValueError(f"{who}: give column_names when the files have no header")
        first = next(_rows(files[0], compression, False, field_delim, use_quote_delim), None)
        if first is None:
            raise ValueError(f"{who}: {files[0]} is empty: no header to read the column names")
        column_names = list(first)
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        raise ValueError(f"{who}: column names must be unique, got {column_names}")
    select = list(range(len(column_names)))
    if select_columns is not None:
        idx = [column_names.index(c) if isinstance(c, str) else int(c) for c in select_columns
               if not isinstance(c, str) or c in column_names]
        if len(idx) != len(select_columns):
            missing = [c for c in select_columns if isinstance(c, str) and c not in column_names]
            raise ValueError(f"{who}: select_columns {missing} are not columns "
                             f"({column_names})")
        select = sorted(idx)
    names = [column_names[i] for i in select]
    if label_name is not None and label_name not in names:
        raise ValueError(f"{who}: label_name {label_name!r} is not one of the columns {names}")
    if column_defaults is None:
        types = [None] * len(select)
        seen = 0
        for path in files:
            for row in _rows(path, compression, header, field_delim, use_quote_delim):
                for j, c in enumerate(select):
                    if c < len(row):
                        types[j] = _infer_type(row[c], na_value, types[j])
                seen += 1
                if seen >= num_rows_for_inference:
                    break
            if seen >= num_rows_for_inference:
                break
        column_defaults = [b"" if t in (None, _np.bytes_) else _np.dtype(t).type(0)
                           for t in types]
    elif len(column_defaults) != len(select):
        raise ValueError(f"{who}: {len(column_defaults)} column_defaults for {len(select)} "
                         f"columns")
    if shuffle:
        from tnp_train.utils import get_rng
        seed = shuffle_seed if shuffle_seed is not None else int(get_rng().integers(0, 2**63))
        files = [files[i] for i in _np.random.default_rng(seed).permutation(len(files))]
    ds = CsvDataset(files, column_defaults, compression_type=compression, header=header,
                    field_delim=field_delim, use_quote_delim=use_quote_delim, na_value=na_value,
                    select_cols=select, _ignore_errors=ignore_errors)

    def to_dict(*values):
        features = dict(zip(names, values))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    ds = ds.map(to_dict)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)
    return ds.prefetch(2 if prefetch_buffer_size is None else prefetch_buffer_size)
