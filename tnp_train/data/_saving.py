"""Datasets on disk (``tf.data.experimental`` of TF 2.4): ``save`` and ``load`` (a dataset's
elements in a directory, TF's layout and file format, see :mod:`._snapshot_format`),
``snapshot`` (the first complete pass written, later passes read from disk), and
``TFRecordWriter`` (a dataset of strings written as one TFRecord file)."""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import time
import types

import numpy as _np

import tnp
from tnp import ndarray as _ndarray
from tnp.extend import backend_array as _backend, wrap as _wrap

from ..errors import NotFoundError
from ..io.tfrecord import TFRecordWriter as _RecordWriter, compression_of, read_records
from ..sparse import SparseTensor as _SparseTensor
from ..utils import tree as _tree
from . import _snapshot_format as _fmt
from . import _structure as _st
from ._rows import UNKNOWN, _call
from ._transformations import _Unary
from .dataset import Dataset

__all__ = ["save", "load", "snapshot", "TFRecordWriter"]

_CPU = tnp.device("cpu")
_METADATA = "snapshot.metadata"
_SPEC = "dataset_spec.pb"


def _compression(value, op, allow_auto=False):
    """``""`` or ``"GZIP"`` from the ways TF names them (None, "NONE", "GZIP"; snapshot's
    "AUTO" writes uncompressed here: TF's AUTO is Snappy, which the standard library lacks)."""
    if value is None or value in ("", "NONE"):
        return ""
    if value == "GZIP":
        return "GZIP"
    if allow_auto and value == "AUTO":
        return ""
    if value == "SNAPPY":
        raise NotImplementedError(f"{op}: SNAPPY compression is not available in tt.data "
                                  "(no Snappy codec); use 'GZIP' or None")
    choices = "'AUTO', 'GZIP', 'NONE'" if allow_auto else "'GZIP', 'NONE'"
    raise ValueError(f"{op}: compression must be one of {choices} or None, got {value!r}")


def _check_dataset(ds, op):
    if not isinstance(ds, Dataset):
        raise TypeError(f"{op}: expected a Dataset, got {type(ds).__name__}")


def _host(leaf):
    """A component as a NumPy array (a string scalar keeps its trailing NUL bytes)."""
    a = _backend(leaf) if isinstance(leaf, _ndarray) else leaf
    return a if isinstance(a, _np.ndarray) else _np.asarray(a.get() if hasattr(a, "get")
                                                             else a)


def _host_leaves(element, op):
    out = []
    for leaf in _tree.flatten(element):
        if isinstance(leaf, _SparseTensor):
            raise TypeError(f"{op}: SparseTensor components cannot be saved here; save "
                            "tt.sparse.to_dense(x) or its indices, values and dense_shape")
        out.append(_host(leaf))
    return out


# ----------------------------------------------------------------------------- writing
class _RunWriter:
    """One run of a directory being written: shard files opened as elements reach them;
    ``finish`` writes the metadata last (atomically), so a directory is only ever read once
    complete."""

    def __init__(self, path, compression, spec, op):
        self._path = os.fspath(path)
        self._compression = compression
        self._spec = spec
        self._op = op
        self._run_id = str(random.getrandbits(63))
        self._run = os.path.join(self._path, self._run_id)
        self._writers = {}
        self._dtypes = None
        self._count = 0

    def write(self, element, shard):
        leaves = _host_leaves(element, self._op)
        dtypes = [_fmt.dtype_enum(a.dtype) for a in leaves]
        if self._dtypes is None:
            self._dtypes = dtypes
        w = self._writers.get(shard)
        if w is None:
            folder = os.path.join(self._run, f"{shard:08d}.shard")
            os.makedirs(folder, exist_ok=True)
            w = self._writers[shard] = _RecordWriter(
                os.path.join(folder, "00000000.snapshot"), self._compression)
        for a in leaves:
            w.write(_fmt.encode_tensor(a))
        self._count += 1

    def finish(self):
        for w in self._writers.values():
            w.close()
        os.makedirs(self._run, exist_ok=True)
        dtypes = self._dtypes
        if dtypes is None:
            dtypes = [_fmt.dtype_enum(s.dtype) for s in _tree.flatten(self._spec)
                      if isinstance(s, _st.TensorSpec)]
        encoded = _fmt.encode_spec(self._spec)
        if encoded is not None:
            _write_atomic(os.path.join(self._path, _SPEC), encoded)
        _write_atomic(os.path.join(self._path, _METADATA), _fmt.encode_metadata(
            self._run_id, dtypes, self._count, int(time.time() * 1e6)))

    def abandon(self):
        for w in self._writers.values():
            w.close()
        shutil.rmtree(self._run, ignore_errors=True)


def _write_atomic(path, data):
    tmp = f"{path}.tmp-{os.getpid()}-{random.getrandbits(32):08x}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _shard_of(shard_func, element, op):
    if shard_func is None:
        return 0
    value = _host(_st.to_leaf(_call(shard_func, element)))
    if value.shape != () or value.dtype.kind not in "iu":
        raise TypeError(f"{op}: shard_func must return a scalar integer, got an array of "
                        f"shape {value.shape} and dtype {value.dtype}")
    shard = int(value)
    if shard < 0:
        raise ValueError(f"{op}: shard_func returned a negative shard index {shard}")
    return shard


def save(dataset, path, compression=None, shard_func=None):
    """Writes every element of ``dataset`` under the directory ``path``
    (``tf.data.experimental.save``), in TF's layout and format, so TF's ``load`` reads it and
    the reverse. ``compression``: None/``"NONE"`` or ``"GZIP"``; ``shard_func(element)``: the
    scalar integer shard of each element (one shard by default, so ``load`` gives the
    elements in order)."""
    _check_dataset(dataset, "save")
    comp = _compression(compression, "save")
    if shard_func is not None and not callable(shard_func):
        raise TypeError(f"save: shard_func must be callable, got {shard_func!r}")
    writer = _RunWriter(path, comp, dataset.element_spec, "save")
    try:
        for e in dataset._iter_elements():
            writer.write(e, _shard_of(shard_func, e, "save"))
    except BaseException:
        writer.abandon()
        raise
    writer.finish()


# ----------------------------------------------------------------------------- reading
def _read_metadata(path, op):
    meta_path = os.path.join(path, _METADATA)
    if not os.path.isdir(path):
        raise NotFoundError(f"{op}: no saved dataset at {os.fsdecode(path)!r} (no such "
                            "directory)")
    if not os.path.exists(meta_path):
        raise NotFoundError(f"{op}: {os.fsdecode(path)!r} holds no {_METADATA}: not a saved "
                            "dataset, or its writing did not finish")
    with open(meta_path, "rb") as f:
        meta = _fmt.decode_metadata(f.read())
    if meta["version"] != 2:
        raise ValueError(f"{op}: {os.fsdecode(path)!r} was written in snapshot format "
                         f"version {meta['version']}; only version 2 (TF 2.3+) is read here")
    return meta


def _shard_files(path, run_id):
    run = os.path.join(path, run_id)
    if not os.path.isdir(run):
        return []
    out = []
    for shard in sorted(os.listdir(run)):
        if shard.endswith(".shard"):
            folder = os.path.join(run, shard)
            out.append([os.path.join(folder, f) for f in sorted(os.listdir(folder))
                        if f.endswith(".snapshot")])
    return out


def _detect_compression(files):
    for f in files:
        with open(f, "rb") as fh:
            return "GZIP" if fh.read(2) == b"\x1f\x8b" else ""
    return ""


def _as_leaf(a):
    if a.dtype.kind == "S":
        return _wrap(a, _CPU)   # strings live on the CPU, as TextLineDataset's
    return tnp.asarray(a)


class _ShardDataset(Dataset):
    """The elements of one shard: every ``n`` records (``n`` components) make one."""

    def __init__(self, files, compression, spec):
        self._files = files
        self._compression = compression
        self._flat = _tree.flatten(spec)
        self._pack = _st.packer(spec)
        self.__dict__["_spec_cache"] = spec

    def _iter_elements(self):
        n = len(self._flat)
        for f in self._files:
            leaves = []
            for record in read_records(f, self._compression):
                a = _fmt.decode_tensor(record)
                s = self._flat[len(leaves)]
                if (a.dtype.kind == "S") != (s.dtype.kind in "SU") or (
                        a.dtype.kind != "S" and a.dtype != s.dtype) or \
                        not s._shape_compatible(a.shape):
                    raise ValueError(f"load: a saved component of dtype {a.dtype} and shape "
                                     f"{a.shape} does not match the element_spec's {s!r}")
                leaves.append(_as_leaf(a))
                if len(leaves) == n:
                    yield self._pack(leaves)
                    leaves = []
            if leaves:
                raise ValueError(f"load: {f} ends inside an element ({len(leaves)} of {n} "
                                 "components)")

    def _compute_spec(self):  # pragma: no cover - set at construction
        return self.__dict__["_spec_cache"]


class _ShardsDataset(Dataset):
    """A dataset of the shard datasets (what ``load``'s ``reader_func`` is given)."""

    def __init__(self, shards):
        self._shards = shards

    def _iter_elements(self):
        return iter(self._shards)

    def _cardinality(self):
        return len(self._shards)

    def _compute_spec(self):
        from ._transformations import DatasetSpec
        spec = self._shards[0].element_spec if self._shards else None
        return DatasetSpec(spec)


class LoadDataset(Dataset):
    """The elements ``save`` wrote to a directory (``load``)."""

    def __init__(self, path, element_spec, compression, reader_func):
        path = os.fspath(path)
        meta = _read_metadata(path, "load")
        if element_spec is None:
            spec_path = os.path.join(path, _SPEC)
            if not os.path.exists(spec_path):
                raise ValueError(f"load: {path!r} has no {_SPEC}; give element_spec")
            with open(spec_path, "rb") as f:
                element_spec = _fmt.decode_spec(f.read())
        _st.check_no_lists(element_spec, "load: element_spec")
        for s in _tree.flatten(element_spec):
            if not isinstance(s, _st.TensorSpec):
                raise TypeError(f"load: element_spec must hold TensorSpecs, got {s!r}")
        files = _shard_files(path, meta["run_id"])
        comp = _compression(compression, "load") if compression is not None else \
            _detect_compression([f for fs in files for f in fs])
        self._shards = [_ShardDataset(fs, comp, element_spec) for fs in files]
        self._count = meta["num_elements"]
        if reader_func is not None and not callable(reader_func):
            raise TypeError(f"load: reader_func must be callable, got {reader_func!r}")
        self._reader = reader_func
        self.__dict__["_spec_cache"] = element_spec

    def _read(self):
        shards = _ShardsDataset(self._shards)
        if self._reader is None:   # TF's default: the shards interleaved, one by one
            return shards.interleave(lambda d: d, cycle_length=max(1, os.cpu_count() or 1))
        out = self._reader(shards)
        if not isinstance(out, Dataset):
            raise TypeError("load: reader_func must return a Dataset, got "
                            f"{type(out).__name__}")
        return out

    def _iter_elements(self):
        return self._read()._iter_elements()

    def _cardinality(self):
        return self._count if self._reader is None and self._count >= 0 else UNKNOWN

    def _compute_spec(self):  # pragma: no cover - set at construction
        return self.__dict__["_spec_cache"]


def load(path, element_spec=None, compression=None, reader_func=None):
    """The dataset ``save`` (ours or TF's) wrote to ``path`` (``tf.data.experimental.load``).
    ``element_spec`` may be left out when the directory has TF 2.5+'s ``dataset_spec.pb``
    (ours always writes it for tuples and dicts of arrays); ``compression`` is found from the
    files when None; ``reader_func(dataset_of_shard_datasets)`` orders the shards (by default
    interleaved one element at a time). NotFoundError when ``path`` holds no saved
    dataset."""
    return LoadDataset(path, element_spec, compression, reader_func)


# ----------------------------------------------------------------------------- snapshot
def _fingerprint(obj, h, seen, captured=False):
    """What the pipeline is, hashed: the datasets' classes and settings, the functions' code,
    constants and captured values, the arrays' bytes. TF hashes its graph; an equal hash here
    means the same transformations of the same data. A function's captured lists, dicts and
    other mutable objects count by their type only (``captured``): a list a map function
    appends to must not make every pass a new snapshot."""
    if isinstance(obj, (str, bytes, int, float, bool, type(None), complex)):
        h.update(repr((type(obj).__name__, obj)).encode())
        return
    if id(obj) in seen:
        h.update(b"<seen>")
        return
    seen.add(id(obj))
    if isinstance(obj, (_ndarray, _np.ndarray, _np.generic)):
        a = _host(obj)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(_np.ascontiguousarray(a).tobytes() if a.dtype != object else repr(a).encode())
    elif isinstance(obj, types.ModuleType):
        h.update(obj.__name__.encode())
    elif isinstance(obj, (types.FunctionType, types.LambdaType)):
        _fingerprint_code(obj.__code__, h, seen)
        for name in sorted(_global_names(obj.__code__)):   # the globals it reads
            if name in obj.__globals__:
                _fingerprint(obj.__globals__[name], h, seen, True)
        for cell in obj.__closure__ or ():
            try:
                _fingerprint(cell.cell_contents, h, seen, True)
            except ValueError:   # an empty cell
                h.update(b"<empty>")
        _fingerprint(obj.__defaults__, h, seen, True)
    elif isinstance(obj, types.MethodType):
        _fingerprint(obj.__func__, h, seen)
        _fingerprint(obj.__self__, h, seen, captured)
    elif isinstance(obj, tuple) or (isinstance(obj, list) and not captured):
        h.update(f"{type(obj).__name__}{len(obj)}".encode())
        for v in obj:
            _fingerprint(v, h, seen, captured)
    elif isinstance(obj, dict) and not captured:
        h.update(f"dict{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _fingerprint(k, h, seen)
            _fingerprint(obj[k], h, seen)
    elif isinstance(obj, Dataset):
        h.update(type(obj).__qualname__.encode())
        _fingerprint({k: v for k, v in vars(obj).items()
                      if k not in ("_spec_cache", "_epochs", "_lock")}, h, seen)
    elif isinstance(obj, type) or callable(obj) and not captured:
        h.update(getattr(obj, "__qualname__", type(obj).__qualname__).encode())
    elif captured or not hasattr(obj, "__dict__"):
        h.update(type(obj).__qualname__.encode())
    else:
        h.update(type(obj).__qualname__.encode())
        _fingerprint(dict(vars(obj)), h, seen)


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def _fingerprint_code(code, h, seen):
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _fingerprint_code(c, h, seen)
        else:
            _fingerprint(c, h, seen)


class SnapshotDataset(_Unary):
    """The parent's elements; the first complete pass is written under
    ``path/<fingerprint>``, and every pass after that (in this process or another) reads the
    files instead of running the pipeline."""

    def __init__(self, parent, path, compression, reader_func, shard_func):
        super().__init__(parent)
        self._path = os.fspath(path)
        self._compression = compression
        self._reader = reader_func
        self._shard_func = shard_func

    def _folder(self):
        h = hashlib.sha256()
        _fingerprint(self._parent, h, set())
        return os.path.join(self._path, str(int.from_bytes(h.digest()[:8], "little") >> 1))

    def _iter_elements(self):
        folder = self._folder()
        if os.path.exists(os.path.join(folder, _METADATA)):
            yield from LoadDataset(folder, self._parent.element_spec, None,
                                   self._reader)._iter_elements()
            return
        writer = _RunWriter(folder, self._compression, self._parent.element_spec, "snapshot")
        done = False
        try:
            for e in self._parent._iter_elements():
                writer.write(e, _shard_of(self._shard_func, e, "snapshot"))
                yield e
            done = True
        finally:
            if done:
                writer.finish()
            else:   # a pass that stops early (or fails) leaves nothing to read
                writer.abandon()


def snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    """``tf.data.experimental.snapshot``: a transformation whose first complete pass writes
    the elements under ``path`` (in ``save``'s format, in a folder named by a hash of the
    pipeline) and whose later passes, in this process or a later one, read them back.
    ``compression``: ``"AUTO"`` (uncompressed here), ``"GZIP"`` or None/``"NONE"``."""
    comp = _compression(compression, "snapshot", allow_auto=True)
    for name, fn in (("reader_func", reader_func), ("shard_func", shard_func)):
        if fn is not None and not callable(fn):
            raise TypeError(f"snapshot: {name} must be callable, got {fn!r}")

    def apply(ds):
        _check_dataset(ds, "snapshot")
        return SnapshotDataset(ds, path, comp, reader_func, shard_func)
    return apply


# ----------------------------------------------------------------------------- TFRecordWriter
class TFRecordWriter:
    """Mirrors ``tf.data.experimental.TFRecordWriter(filename, compression_type=None)``:
    ``write(dataset)`` writes a dataset of string scalars as the records of one TFRecord
    file."""

    def __init__(self, filename, compression_type=None):
        if not isinstance(filename, (str, bytes, os.PathLike)):
            raise TypeError(f"TFRecordWriter: filename must be a string, got "
                            f"{type(filename).__name__}")
        self._filename = filename
        self._compression = compression_of(compression_type, "TFRecordWriter")

    def write(self, dataset):
        """Writes every element of ``dataset`` (scalar strings) as a record."""
        _check_dataset(dataset, "TFRecordWriter.write")
        spec = dataset.element_spec
        if not isinstance(spec, _st.TensorSpec) or spec.dtype.kind not in "SU" or \
                spec.shape != ():
            raise TypeError("Invalid `dataset`. Expected a`dataset` that produces scalar "
                            "`tf.string` elements, but got a dataset which produces elements "
                            f"with {_st.structure_repr(spec)}")
        with _RecordWriter(self._filename, self._compression) as w:
            for e in dataset._iter_elements():
                w.write(_fmt.string_values(_host(e))[0])
