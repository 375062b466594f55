"""``tf.io.parse_single_example`` / ``parse_example`` and their feature configurations
(``FixedLenFeature``, ``VarLenFeature``, ``FixedLenSequenceFeature``), on serialized
``tf.train.Example`` records.

Values come back as TF gives them: int64, float32 and byte strings (dtype ``S``, on the CPU);
a ``VarLenFeature`` as a :class:`tnp_train.sparse.SparseTensor`. Errors are TF's
(InvalidArgumentError with TF's words, ValueError for a bad configuration).

Byte strings from a NumPy/tnp array of dtype ``S`` have lost their trailing NUL bytes (NumPy
drops them when an element is read); a serialized protocol buffer cannot end inside a field,
so the one count of NULs that makes the record parse is the one it had.
"""
from __future__ import annotations

import collections
import warnings

import numpy as _np

import tnp
from tnp import ndarray as _ndarray
from tnp.extend import backend_array as _backend, wrap as _wrap

from ..errors import InvalidArgumentError
from ..sparse import SparseTensor
from .example_pb2 import message_classes

__all__ = ["FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature",
           "parse_single_example", "parse_example"]

_CPU = tnp.device("cpu")
_KINDS = {"int64": "int64_list", "float": "float_list", "string": "bytes_list"}
_TF_NAME = {"int64_list": "int64", "float_list": "float", "bytes_list": "string"}
_NP = {"int64": _np.dtype(_np.int64), "float": _np.dtype(_np.float32), "string": None}


class FixedLenFeature(collections.namedtuple(
        "FixedLenFeature", ["shape", "dtype", "default_value"])):
    """Mirrors ``tf.io.FixedLenFeature(shape, dtype, default_value=None)``: a feature of
    exactly ``prod(shape)`` values, parsed to an array of ``shape``; ``default_value`` (of that
    many values) when an example lacks it, else InvalidArgumentError."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """Mirrors ``tf.io.VarLenFeature(dtype)``: a feature of any number of values, parsed to a
    ``tt.sparse.SparseTensor``."""


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """Mirrors ``tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing=False,
    default_value=None)``: a feature of any number of ``shape`` rows, parsed to an array of
    ``(rows, *shape)`` (in a batch, padded with ``default_value`` to the longest).
    ``allow_missing=True`` is required, as in TF."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


# ----------------------------------------------------------------------------- configuration
def _dtype_name(dtype, op, key):
    """TF's name of a parse dtype: "int64", "float" or "string"."""
    if dtype in (str, bytes, object, "string", "str", "bytes"):
        return "string"
    try:
        d = _np.dtype(dtype)
    except TypeError:
        d = None
    if d is not None:
        if d.kind in "SUO":
            return "string"
        if d == _np.int64:
            return "int64"
        if d == _np.float32:
            return "float"
    raise InvalidArgumentError(f"{op}: Value for attr 'Tdense' of {getattr(d, 'name', dtype)} "
                               "is not in the list of allowed values: float, int64, string "
                               f"(feature {key!r})")


def _shape(shape, op, key):
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{op}: the shape of feature {key!r} must be a list of ints, got "
                        f"{shape!r}") from None
    for d in dims:
        if d is None or not isinstance(d, (int, _np.integer)) or d < 0:
            raise ValueError(f"{op}: the shape of feature {key!r} must be fully defined, got "
                             f"{list(shape)}")
    return tuple(int(d) for d in dims)


def _default(value, kind, shape, op, key):
    dtype = _NP[kind]
    try:
        a = _np.asarray(value.numpy() if isinstance(value, _ndarray) else value,
                        dtype=dtype if dtype is not None else "S")
    except (TypeError, ValueError) as e:
        raise ValueError(f"{op}: default_value of feature {key!r} is not a {kind} value: "
                         f"{e}") from None
    if a.size != int(_np.prod(shape, dtype=_np.int64)):
        raise ValueError(f"{op}: default_value of feature {key!r} has {a.size} value(s); its "
                         f"shape {list(shape)} needs {int(_np.prod(shape, dtype=_np.int64))}")
    return a.reshape(shape)


class _Config:
    __slots__ = ("key", "form", "kind", "shape", "default", "stride")

    def __init__(self, key, feature, op):
        self.key = key
        if isinstance(feature, FixedLenFeature):
            self.form = "fixed"
        elif isinstance(feature, VarLenFeature):
            self.form = "var"
        elif isinstance(feature, FixedLenSequenceFeature):
            self.form = "seq"
            if not feature.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing "
                                 "to be True.")
        else:
            raise ValueError(f"{op}: Unsupported {type(feature).__name__} for feature "
                             f"{key!r}; expected FixedLenFeature, VarLenFeature or "
                             "FixedLenSequenceFeature")
        self.kind = _dtype_name(feature.dtype, op, key)
        self.shape = () if self.form == "var" else _shape(feature.shape, op, key)
        self.stride = int(_np.prod(self.shape, dtype=_np.int64))
        self.default = None
        if self.form != "var" and feature.default_value is not None:
            self.default = _default(feature.default_value, self.kind,
                                    self.shape if self.form == "fixed" else (), op, key)


def _configs(features, op):
    if not isinstance(features, dict) or not features:
        raise ValueError(f"Missing: features was {features!r}.")
    return [_Config(k, v, op) for k, v in features.items()]


# ----------------------------------------------------------------------------- records
def _records(serialized, op, rank):
    """``(bytes records, the items' byte lengths or None)`` of a string scalar (rank 0) or
    vector (rank 1)."""
    if isinstance(serialized, (bytes, str)):
        if rank != 0:
            raise ValueError(f"{op}: serialized must be a vector (1-d) of strings, got a "
                             "single string")
        return [serialized.encode() if isinstance(serialized, str) else serialized], None
    if isinstance(serialized, (list, tuple)) and all(isinstance(s, (bytes, str))
                                                     for s in serialized):
        if rank != 1:
            raise ValueError(f"{op}: serialized must be a string scalar, got a list")
        return [s.encode() if isinstance(s, str) else s for s in serialized], None
    a = serialized
    if isinstance(a, _ndarray):
        a = _np.asarray(_backend(a)) if a.device == _CPU else a.numpy()
    a = _np.asarray(a)
    if a.dtype.kind not in "SUO":
        raise TypeError(f"{op}: serialized must be strings, got dtype {a.dtype}")
    if a.ndim != rank:
        raise ValueError(f"{op}: serialized must be a {'scalar' if rank == 0 else 'vector'}, "
                         f"got shape {list(a.shape)}")
    items = a.reshape(-1).tolist()
    out = [s.encode() if isinstance(s, str) else bytes(s) for s in items]
    return out, (a.dtype.itemsize if a.dtype.kind == "S" else None)


def _parse(data, itemsize, example_cls):
    """An Example from a record; for one read from a dtype-``S`` array, the trailing NULs
    NumPy dropped are put back (the one count that parses)."""
    tries = 1 if itemsize is None else max(1, itemsize - len(data) + 1)
    for k in range(tries):
        try:
            return example_cls.FromString(data + b"\x00" * k if k else data)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError, by implementation
            continue
    shown = data[:64]
    raise InvalidArgumentError(f"Could not parse example input, value: {shown!r}"
                               f"{'...' if len(data) > 64 else ''}")


def _shape_str(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _values(example, cfg, where, single):
    """The feature's values as a list, or None when the example lacks it; TF's errors."""
    feats = example.features.feature
    if cfg.key not in feats:
        return None
    f = feats[cfg.key]
    kind = f.WhichOneof("kind")
    if kind is None:
        return None
    actual = _TF_NAME[kind]
    if actual != cfg.kind:
        if cfg.form == "var":
            raise InvalidArgumentError(f"{where}Data types don't match. Expected type: "
                                       f"{cfg.kind}, Actual type: {actual}")
        raise InvalidArgumentError(f"{where}Data types don't match. Data type: {actual} but "
                                   f"expected type: {cfg.kind}")
    values = list(getattr(f, kind).value)
    n = len(values)
    if cfg.form == "fixed" and n != cfg.stride:
        if single:
            raise InvalidArgumentError(
                f"{where}Can't parse serialized Example: Some {kind} slice was not parsed. "
                f"(Values size: {n} but output shape: {_shape_str(cfg.shape)})")
        raise InvalidArgumentError(f"{where}Number of {cfg.kind} values != expected.  Values "
                                   f"size: {n} but output shape: {_shape_str(cfg.shape)}")
    if cfg.form == "seq" and cfg.stride and n % cfg.stride:
        if single:
            raise InvalidArgumentError(f"Error while parsing feature with key {cfg.key}: number "
                                       f"of elements should be divisible by {cfg.stride}, found "
                                       f"{n} instead")
        raise InvalidArgumentError(
            f"{where}Number of {cfg.kind} values is not a multiple of stride length. Saw {n} "
            f"values but output shape is: {_shape_str((None,) + cfg.shape)}")
    return values


def _array(values, kind, shape, key, op):
    if kind == "string":
        a = _np.array(values, dtype="S") if len(values) else _np.zeros(0, dtype="S1")
        a = a.reshape(shape)
        if a.ndim and any(v.endswith(b"\x00") for v in values):
            warnings.warn(f"{op}: a value of feature {key!r} ends in NUL bytes, which NumPy's "
                          "bytes dtype drops when an element of an array is read",
                          RuntimeWarning, stacklevel=4)
        return _wrap(a, _CPU)
    return tnp.asarray(_np.asarray(values, dtype=_NP[kind]).reshape(shape))


def _parse_all(records, itemsize, configs, op, single, names):
    example_cls = message_classes()["Example"]
    examples = [_parse(r, itemsize, example_cls) for r in records]
    out = {}
    for cfg in configs:
        rows = []
        for i, ex in enumerate(examples):
            name = names[i] if names is not None else "<unknown>"
            where = f"Key: {cfg.key}.  " if single else \
                f"Name: {name}, Key: {cfg.key}, Index: {i}.  "
            v = _values(ex, cfg, where, single)
            if v is None and cfg.form == "fixed":
                if cfg.default is None:
                    prefix = "" if single else f"Name: {name}, "
                    raise InvalidArgumentError(f"{prefix}Feature: {cfg.key} (data type: "
                                               f"{cfg.kind}) is required but could not be "
                                               "found.")
                v = cfg.default.reshape(-1).tolist()
            rows.append([] if v is None else v)
        out[cfg.key] = _assemble(cfg, rows, single, op)
    return out


def _assemble(cfg, rows, single, op):
    if cfg.form == "fixed":
        flat = [x for r in rows for x in r]
        return _array(flat, cfg.kind, cfg.shape if single else (len(rows),) + cfg.shape,
                      cfg.key, op)
    if cfg.form == "var":
        flat = [x for r in rows for x in r]
        if single:
            idx = _np.arange(len(flat), dtype=_np.int64).reshape(-1, 1)
            shape = [len(flat)]
        else:
            idx = _np.array([(i, j) for i, r in enumerate(rows) for j in range(len(r))],
                            dtype=_np.int64).reshape(-1, 2)
            shape = [len(rows), max((len(r) for r in rows), default=0)]
        return SparseTensor(idx, _array(flat, cfg.kind, (len(flat),), cfg.key, op),
                            _np.asarray(shape, dtype=_np.int64))
    stride = cfg.stride
    counts = [len(r) // stride if stride else 0 for r in rows]
    if single:
        return _array(rows[0], cfg.kind, (counts[0],) + cfg.shape, cfg.key, op)
    longest = max(counts, default=0)
    pad = cfg.default.item() if cfg.default is not None else (b"" if cfg.kind == "string"
                                                              else 0)
    flat = []
    for r, c in zip(rows, counts):
        flat.extend(r)
        flat.extend([pad] * ((longest - c) * stride))
    return _array(flat, cfg.kind, (len(rows), longest) + cfg.shape, cfg.key, op)


def _names(example_names, n, op):
    if example_names is None:
        return None
    names = _records(example_names, op, 1)[0] if not isinstance(example_names, (bytes, str)) \
        else [example_names]
    names = [x.decode("utf-8", "replace") for x in names]
    if len(names) != n:
        raise ValueError(f"{op}: example_names has {len(names)} name(s) for {n} example(s)")
    return names


def parse_single_example(serialized, features, example_names=None, name=None):
    """Mirrors ``tf.io.parse_single_example(serialized, features)``: one serialized
    ``tf.train.Example`` (bytes or a string scalar) parsed to ``{key: value}`` as ``features``
    says; a ``VarLenFeature`` as a ``tt.sparse.SparseTensor``."""
    op = "parse_single_example"
    configs = _configs(features, op)
    records, itemsize = _records(serialized, op, 0)
    return _parse_all(records, itemsize, configs, op, True, None)


def parse_example(serialized, features, example_names=None, name=None):
    """Mirrors ``tf.io.parse_example(serialized, features, example_names=None)``: a vector of
    serialized ``tf.train.Example`` records parsed to ``{key: batched value}``; a
    ``VarLenFeature`` as a ``tt.sparse.SparseTensor`` of ``(batch, longest)``."""
    op = "parse_example"
    configs = _configs(features, op)
    records, itemsize = _records(serialized, op, 1)
    names = _names(example_names, len(records), op)
    return _parse_all(records, itemsize, configs, op, False, names)
