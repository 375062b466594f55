"""The files of ``save``/``load``/``snapshot`` in TF's layout (what ``tf.data`` writes since
TF 2.3, snapshot version 2), so a directory TF saved loads here and the reverse:

    <path>/snapshot.metadata                  a SnapshotMetadataRecord
    <path>/dataset_spec.pb                    the element_spec as a StructuredValue (TF 2.5+)
    <path>/<run_id>/<shard:08d>.shard/<file:08d>.snapshot
                                              TFRecord framing (``""`` or ``"GZIP"``), one
                                              TensorProto record per component of an element

The messages are written and read here with the protocol buffer wire format itself (a few
fields of four messages), with TF's field numbers; no ``.proto`` file is needed.
"""
from __future__ import annotations

import struct

import numpy as _np

from ._structure import TensorSpec

__all__ = ["string_values", "encode_tensor", "decode_tensor", "encode_metadata", "decode_metadata",
           "encode_spec", "decode_spec", "DTYPE_ENUM"]

# tensorflow/core/framework/types.proto
DTYPE_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
              "string": 7, "complex64": 8, "int64": 9, "bool": 10, "uint16": 17,
              "complex128": 18, "float16": 19, "uint32": 22, "uint64": 23}
_ENUM_DTYPE = {v: k for k, v in DTYPE_ENUM.items()}


def dtype_enum(dtype):
    """TF's DataType number of a NumPy dtype (``S``/``U`` are tf.string); TypeError else."""
    dtype = _np.dtype(dtype)
    name = "string" if dtype.kind in "SU" else dtype.name
    if name not in DTYPE_ENUM:
        raise TypeError(f"save: the dtype {dtype} has no TensorFlow equivalent")
    return DTYPE_ENUM[name]


def numpy_dtype(enum):
    name = _ENUM_DTYPE.get(enum)
    if name is None:
        raise ValueError(f"load: unsupported TensorFlow dtype number {enum}")
    return _np.dtype("S") if name == "string" else _np.dtype(name)


# ----------------------------------------------------------------------------- wire format
def _varint(n):
    n &= (1 << 64) - 1     # negative int64s as ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _len_field(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _int_field(field, n):
    return _key(field, 0) + _varint(n)


def _read_varint(buf, pos):
    n = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("a protocol buffer ends inside a varint")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def _fields(buf):
    """``(field, wire type, value)`` of a message: ints for varints, bytes for the rest."""
    pos, out = 0, []
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _read_varint(buf, pos)
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            v, pos = bytes(buf[pos:pos + n]), pos + n
        elif wire == 1:
            v, pos = bytes(buf[pos:pos + 8]), pos + 8
        elif wire == 5:
            v, pos = bytes(buf[pos:pos + 4]), pos + 4
        else:
            raise ValueError(f"unsupported protocol buffer wire type {wire}")
        out.append((field, wire, v))
    return out


def _signed(n):
    return n - (1 << 64) if n >= 1 << 63 else n


# ----------------------------------------------------------------------------- TensorProto
def _shape_proto(shape, unknown_rank=False):
    if unknown_rank:
        return _int_field(3, 1)
    return b"".join(_len_field(2, _int_field(1, -1 if d is None else d) if d != 0 else b"")
                    for d in shape)


def _decode_shape(buf):
    dims, unknown = [], False
    for field, _, v in _fields(buf):
        if field == 2:
            size = 0
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    size = _signed(v2)
            dims.append(None if size == -1 else size)
        elif field == 3:
            unknown = bool(v)
    return None if unknown else tuple(dims)


def encode_tensor(a):
    """A NumPy array as a serialized TensorProto, as TF's snapshot writer makes it: the
    values in ``tensor_content``, numbers little-endian, strings as all their lengths
    (varints) and then their bytes."""
    a = _np.asarray(a)
    enum = dtype_enum(a.dtype)
    out = _int_field(1, enum) + _len_field(2, _shape_proto(a.shape))
    if a.dtype.kind in "SU":
        vals = [v.encode("utf-8") if isinstance(v, str) else bytes(v)
                for v in string_values(a)]
        data = b"".join(_varint(len(v)) for v in vals) + b"".join(vals)
        return out + _len_field(4, data)
    data = _np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    return out + _len_field(4, data)


def string_values(a):
    """The strings of an ``S``/``U`` array. NumPy pads strings with NUL bytes to the array's
    width, so trailing NULs are dropped, except in a scalar that owns its buffer (a record
    read from a file, made exactly as long as its bytes), which keeps them (but a lone NUL
    byte is the empty string, which NumPy stores so)."""
    if a.ndim == 0 and a.dtype.kind == "S" and a.base is None:
        raw = a.tobytes()
        # NumPy has no zero-width strings: b"" is stored as one NUL byte
        return [b"" if raw == b"\0" else raw]
    return a.reshape(-1).tolist()


def decode_tensor(buf):
    """A serialized TensorProto as a NumPy array (``tensor_content`` or the typed ``*_val``
    fields, packed or not, one value standing for all as TF allows)."""
    dtype, shape, content, strings, vals = None, (), None, [], []
    for field, wire, v in _fields(buf):
        if field == 1:
            dtype = numpy_dtype(v)
        elif field == 2:
            shape = _decode_shape(v)
        elif field == 4:
            content = v
        elif field == 8:
            strings.append(v)
        elif field in (5, 6):
            fmt = "<f" if field == 5 else "<d"
            size = struct.calcsize(fmt)
            vals += [x[0] for x in struct.iter_unpack(fmt, v[:len(v) // size * size])]
        elif field in (7, 10, 11, 13, 16, 17):   # int, int64, bool, half, uint32, uint64
            if wire == 2:
                pos = 0
                while pos < len(v):
                    x, pos = _read_varint(v, pos)
                    vals.append(x)
            else:
                vals.append(v)
    if dtype is None:
        raise ValueError("load: a TensorProto without a dtype")
    shape = shape or ()
    n = int(_np.prod(shape, dtype=_np.int64))
    if dtype.kind == "S" and content is not None:
        strings, pos = [], 0
        lengths = []
        for _ in range(n):
            length, pos = _read_varint(content, pos)
            lengths.append(length)
        for length in lengths:
            strings.append(content[pos:pos + length])
            pos += length
    if dtype.kind == "S":
        if len(strings) == 1 and n != 1:
            strings = strings * n
        width = max([len(x) for x in strings], default=1)
        if not shape:   # a scalar of its own, as long as its bytes (see string_values)
            return _np.array(strings[0], dtype=f"S{max(len(strings[0]), 1)}")
        return _np.array(strings, dtype=f"S{max(width, 1)}").reshape(shape)
    if content is not None:
        return _np.frombuffer(content, dtype=dtype.newbyteorder("<")).astype(dtype) \
            .reshape(shape)
    if dtype.kind == "i":
        vals = [_signed(x) for x in vals]
    if dtype == _np.float16:   # half_val holds the bits
        arr = _np.array(vals, dtype=_np.uint16).view(_np.float16)
    else:
        arr = _np.array(vals, dtype=dtype)
    if arr.size == 1 and n != 1:
        arr = _np.repeat(arr, n)
    if arr.size == 0 and n:
        arr = _np.zeros(n, dtype)
    return arr.reshape(shape)


# ----------------------------------------------------------------------------- metadata
def encode_metadata(run_id, dtypes, num_elements, timestamp):
    """A SnapshotMetadataRecord (tensorflow/core/protobuf/snapshot.proto), finalized."""
    out = _len_field(2, run_id.encode()) + _int_field(3, timestamp) + _int_field(4, 2)
    out += _len_field(5, b"".join(_varint(d) for d in dtypes))
    return out + _int_field(6, num_elements) + _int_field(1000, 1)


def decode_metadata(buf):
    """``{"run_id", "version", "dtypes", "num_elements", "finalized", "compression"}``."""
    meta = {"run_id": "", "version": 0, "dtypes": [], "num_elements": -1, "finalized": False}
    for field, wire, v in _fields(buf):
        if field == 2:
            meta["run_id"] = v.decode()
        elif field == 4:
            meta["version"] = v
        elif field == 5:
            if wire == 2:
                pos = 0
                while pos < len(v):
                    d, pos = _read_varint(v, pos)
                    meta["dtypes"].append(d)
            else:
                meta["dtypes"].append(v)
        elif field == 6:
            meta["num_elements"] = _signed(v)
        elif field == 1000:
            meta["finalized"] = bool(v)
    return meta


# ----------------------------------------------------------------------------- StructuredValue
def encode_spec(spec):
    """An element_spec of TensorSpecs in tuples and dicts as a StructuredValue (the
    ``dataset_spec.pb`` TF 2.5+ reads); None for anything else (a SparseTensorSpec, a
    namedtuple), which TF's ``load`` then needs to be told."""
    if isinstance(spec, TensorSpec):
        body = b""
        if spec.shape is None:
            body += _len_field(2, _shape_proto((), unknown_rank=True))
        else:
            body += _len_field(2, _shape_proto(spec.shape))
        body += _int_field(3, dtype_enum(spec.dtype))
        return _len_field(33, body)
    if type(spec) is tuple:
        parts = [encode_spec(s) for s in spec]
        if any(p is None for p in parts):
            return None
        return _len_field(52, b"".join(_len_field(1, p) for p in parts))
    if type(spec) is dict:
        entries = b""
        for k in sorted(spec):
            p = encode_spec(spec[k])
            if p is None or not isinstance(k, str):
                return None
            entries += _len_field(1, _len_field(1, k.encode()) + _len_field(2, p))
        return _len_field(53, entries)
    return None


def decode_spec(buf):
    """The element_spec a ``dataset_spec.pb`` holds (TensorSpecs in tuples, lists and dicts);
    ValueError for a kind of value not read here."""
    for field, _, v in _fields(buf):
        if field == 33:
            shape, dtype = (), None
            for f2, _, v2 in _fields(v):
                if f2 == 2:
                    shape = _decode_shape(v2)
                elif f2 == 3:
                    dtype = numpy_dtype(v2)
            return TensorSpec(shape, dtype)
        if field in (51, 52):   # list, tuple: the elements are field 1
            return tuple(decode_spec(v2) for f2, _, v2 in _fields(v) if f2 == 1)
        if field == 53:
            out = {}
            for f2, _, entry in _fields(v):
                if f2 != 1:
                    continue
                key = value = None
                for f3, _, v3 in _fields(entry):
                    if f3 == 1:
                        key = v3.decode()
                    elif f3 == 2:
                        value = decode_spec(v3)
                out[key] = value
            return dict(sorted(out.items()))
        raise ValueError(f"load: dataset_spec.pb holds a kind of value (field {field}) not "
                         "read here; give element_spec")
    raise ValueError("load: dataset_spec.pb is empty")
