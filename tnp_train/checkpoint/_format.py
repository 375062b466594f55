"""The checkpoint file: one self-describing file, no pickle anywhere.

Layout (all integers little-endian)::

    header   80 bytes   magic b"TNPCKPT\\0", format version (u32), reserved (u32, zero),
                        manifest length (u64), data offset (u64), file size (u64),
                        SHA-256 of the manifest (32 bytes), 8 reserved zero bytes
    manifest            UTF-8 JSON: {"format", "format_version", "checksum": "sha256",
                        "metadata": {...}, "entries": [{"key", "dtype", "storage", "shape",
                        "offset", "nbytes", "sha256"}, ...]}
    padding             zero bytes up to the data offset (a multiple of 64)
    data                each array's raw little-endian bytes at data offset + "offset", in
                        manifest order, each on a 64-byte boundary, zero bytes between them;
                        the file ends where the last array ends

``dtype`` is the array's dtype name; ``storage`` the plain NumPy dtype its bytes are read as
(``"<f4"``, ``"|b1"``...). ml_dtypes types (``bfloat16``, the float8s) are stored as the
unsigned integers of their size and viewed back, so nothing but bool/int/uint/float/complex is
ever parsed from a file. Every byte is checked on reading: the header's fields (magic, version,
sizes against the file's real size, reserved bytes zero), the manifest by its SHA-256 and then
its structure, the padding after the manifest (zero), and with each array its bytes (SHA-256)
and the padding that follows it (zero). A failure raises :class:`CheckpointFormatError` (a
``ValueError``) naming the file and, where it applies, the key.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import struct

import numpy as _np

from ._io import atomic_write

__all__ = ["CheckpointFormatError", "CheckpointReader", "write_checkpoint_file", "FORMAT_VERSION"]

MAGIC = b"TNPCKPT\0"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sIIQQQ32s8x")
_ALIGN = 64
_PLAIN_KINDS = "biufc"
_MAX_NDIM = 64              # NumPy 2's NPY_MAXDIMS
_MAX_NBYTES = 2**63 - 1     # NumPy's limit on an array's size in bytes (npy_intp)
_ZERO_CHUNK = 1 << 20


def _aligned(n):
    return -(-n // _ALIGN) * _ALIGN


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class CheckpointFormatError(ValueError):
    """A checkpoint file that cannot be trusted: truncated, tampered with, of an unknown
    format version, or not a checkpoint at all."""


def _is_ml(dtype):
    return getattr(dtype.type, "__module__", "").startswith("ml_dtypes")


def _storage_dtype(dtype):
    """(dtype name for the manifest, plain little-endian storage dtype) for ``dtype``."""
    dtype = _np.dtype(dtype)
    if _is_ml(dtype):    # (the float8s have kind "f" but are no NumPy type)
        return dtype.name, _np.dtype(f"<u{dtype.itemsize}")
    if dtype.kind in _PLAIN_KINDS:
        return dtype.name, dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype
    raise TypeError(f"checkpoint: cannot store arrays of dtype {dtype} (only bool, integer, "
                    f"float, complex and ml_dtypes types such as bfloat16)")


def _resolve_dtype(name, storage, where):
    """The dtype recorded as ``name``/``storage``, refusing anything but plain numbers."""
    try:
        st = _np.dtype(storage)
    except TypeError as e:
        raise CheckpointFormatError(f"{where}: invalid storage dtype {storage!r}") from e
    if st.kind not in _PLAIN_KINDS or st.byteorder == ">" or _is_ml(st):
        raise CheckpointFormatError(f"{where}: storage dtype {storage!r} is not a plain "
                                    f"little-endian number type")
    if not isinstance(name, str):
        raise CheckpointFormatError(f"{where}: invalid dtype name {name!r}")
    if name == st.name:
        return st, st
    import ml_dtypes

    t = getattr(ml_dtypes, name, None) if name.isidentifier() and not name.startswith("_") else None
    try:
        dt = _np.dtype(t) if isinstance(t, type) else None
    except TypeError:
        dt = None
    if dt is None or dt.itemsize != st.itemsize or st.kind != "u":
        raise CheckpointFormatError(f"{where}: unknown dtype {name!r} (stored as {storage!r})")
    return dt, st


def write_checkpoint_file(path, arrays, metadata=None):
    """Write ``arrays`` (an iterable of ``(key, numpy array)``) to ``path`` atomically."""
    entries, blobs, offset = [], [], 0
    seen = set()
    for key, a in arrays:
        if not isinstance(key, str):
            raise TypeError(f"checkpoint: keys must be strings, got {key!r}")
        if key in seen:
            raise ValueError(f"checkpoint: duplicate key {key!r}")
        seen.add(key)
        a = _np.asarray(a)
        if not a.flags.c_contiguous:
            a = a.copy(order="C")       # (not ascontiguousarray: it makes 0-d arrays 1-d)
        name, storage = _storage_dtype(a.dtype)
        if not _is_ml(a.dtype):
            data = a.astype(storage, copy=False)
        else:  # an ml_dtypes type: its bits as unsigned integers
            data = a.view(f"=u{a.dtype.itemsize}").astype(storage, copy=False)
        mv = memoryview(data.reshape(-1).view(_np.uint8))
        entries.append({"key": key, "dtype": name, "storage": storage.str,
                        "shape": [int(d) for d in a.shape], "offset": offset,
                        "nbytes": mv.nbytes, "sha256": hashlib.sha256(mv).hexdigest()})
        blobs.append(mv)
        offset += _aligned(mv.nbytes)
    manifest = json.dumps({"format": "tnp_train.checkpoint", "format_version": FORMAT_VERSION,
                           "checksum": "sha256", "metadata": metadata or {}, "entries": entries},
                          separators=(",", ":"), allow_nan=False).encode("utf-8")
    data_offset = _aligned(_HEADER.size + len(manifest))
    total = data_offset + (entries[-1]["offset"] + entries[-1]["nbytes"] if entries else 0)
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(manifest), data_offset, total,
                          hashlib.sha256(manifest).digest())
    with atomic_write(path) as f:
        f.write(header)
        f.write(manifest)
        f.write(b"\0" * (data_offset - _HEADER.size - len(manifest)))
        pos = 0
        for e, mv in zip(entries, blobs):
            if e["offset"] > pos:
                f.write(b"\0" * (e["offset"] - pos))
            f.write(mv)
            pos = e["offset"] + e["nbytes"]
    return path


class CheckpointReader:
    """The manifest of a checkpoint file (validated on construction) and checked reads of its
    arrays. ``keys()``, ``shape(key)``, ``dtype(key)``, ``read(key)``, ``metadata``."""

    def __init__(self, path, _file=None):
        self.path = os.fspath(path)
        if _file is not None:     # an open file: manifest and arrays then come from one file
            self._load(_file)     # even if ``path`` is replaced meanwhile
            return
        with open(self.path, "rb") as f:
            self._load(f)

    def _error(self, message):
        return CheckpointFormatError(f"{self.path}: {message}")

    def _load(self, f):
        size = os.fstat(f.fileno()).st_size
        f.seek(0)
        head = f.read(_HEADER.size)
        if len(head) < _HEADER.size or not head.startswith(MAGIC):
            if head.startswith(MAGIC[:7]) or len(head) < len(MAGIC) and MAGIC.startswith(head):
                raise self._error(f"truncated checkpoint file ({size} bytes, header incomplete)")
            raise self._error(f"not a tnp_train checkpoint file (bad magic {head[:8]!r})")
        _, version, reserved, mlen, data_offset, total, msha = _HEADER.unpack(head)
        if version != FORMAT_VERSION:
            raise self._error(f"checkpoint format version {version} is not supported (this "
                              f"tnp_train reads version {FORMAT_VERSION})")
        if reserved != 0 or head[_HEADER.size - 8:] != bytes(8):
            raise self._error(f"corrupt header: its reserved bytes (12-15: {head[12:16].hex()}, "
                              f"72-79: {head[72:80].hex()}) must be zero")
        if total != size:
            raise self._error(f"truncated or extended checkpoint file: {size} bytes on disk, "
                              f"{total} recorded in its header")
        if _HEADER.size + mlen > data_offset or data_offset > total or data_offset % _ALIGN:
            raise self._error(f"corrupt header (manifest of {mlen} bytes, data at "
                              f"{data_offset}, size {total})")
        raw = f.read(mlen)
        if len(raw) != mlen or hashlib.sha256(raw).digest() != msha:
            raise self._error("the manifest fails its SHA-256 check (the file was modified or "
                              "damaged)")
        self._check_zeros(f, _HEADER.size + mlen, data_offset, "the padding after the manifest")
        try:
            manifest = json.loads(raw.decode("utf-8"))
        # (ValueError also covers integers too long to convert; RecursionError, JSON nested
        # deeper than the interpreter's stack)
        except (ValueError, RecursionError) as e:
            raise self._error(f"unreadable manifest: {type(e).__name__}: {e}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != "tnp_train.checkpoint":
            raise self._error("not a tnp_train checkpoint manifest")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise self._error(f"checkpoint format version {manifest.get('format_version')!r} is "
                              f"not supported (this tnp_train reads version {FORMAT_VERSION})")
        metadata, entries = manifest.get("metadata", {}), manifest.get("entries")
        if not isinstance(metadata, dict):
            raise self._error(f"manifest 'metadata' must be an object, got "
                              f"{type(metadata).__name__}")
        if not isinstance(entries, list):
            raise self._error(f"manifest 'entries' must be a list, got {type(entries).__name__}")
        self.metadata = metadata
        self._data_offset = data_offset
        self._entries = {}
        data_size, end, prev = total - data_offset, 0, None
        for e in entries:
            self._check_entry(e, data_size, end)
            if prev is not None:
                prev["_gap_end"] = e["offset"]
            self._entries[e["key"]] = prev = e
            end = e["offset"] + e["nbytes"]
        if prev is not None:
            prev["_gap_end"] = end
        if end != data_size:
            raise self._error(f"{data_size - end} bytes of data after the last array's end (the "
                              f"file must end where its last array ends)")

    def _check_entry(self, e, data_size, prev_end):
        key = e.get("key") if isinstance(e, dict) else None
        where = f"entry {key!r}"
        if not isinstance(key, str):
            raise self._error("manifest entry without a string key")
        if key in self._entries:
            raise self._error(f"{where} appears twice")
        shape = e.get("shape")
        if isinstance(shape, list) and len(shape) > _MAX_NDIM:
            raise self._error(f"{where}: invalid shape of {len(shape)} dimensions (NumPy allows "
                              f"at most {_MAX_NDIM})")
        if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
            raise self._error(f"{where}: invalid shape {shape!r}")
        dt, st = _resolve_dtype(e.get("dtype"), e.get("storage"), f"{self.path}: {where}")
        off, nbytes = e.get("offset"), e.get("nbytes")
        if not (_is_int(off) and _is_int(nbytes) and off >= 0 and nbytes >= 0):
            raise self._error(f"{where}: invalid offset/size {off!r}/{nbytes!r}")
        # exact integers: NumPy's int64 product would wrap around ([2**40, 2**40] -> 0 bytes)
        if math.prod(d for d in shape if d) * st.itemsize > _MAX_NBYTES:
            raise self._error(f"{where}: shape {tuple(shape)} of {e.get('dtype')} is larger "
                              f"than any array can be")
        if nbytes != math.prod(shape) * st.itemsize:
            raise self._error(f"{where}: {nbytes} bytes recorded for shape {tuple(shape)} of "
                              f"{e.get('dtype')}")
        if off + nbytes > data_size:
            raise self._error(f"{where}: its data lies past the end of the file")
        if off % _ALIGN or off < prev_end:
            raise self._error(f"{where}: its data offset {off} is not the 64-byte boundary at "
                              f"or after the previous array's end ({prev_end})")
        if not isinstance(e.get("sha256"), str):
            raise self._error(f"{where}: no checksum")
        e["_dtype"], e["_storage"] = dt, st

    def _check_zeros(self, f, start, stop, what):
        """Bytes ``start:stop`` of the file are zero (padding nothing else checks)."""
        f.seek(start)
        pos = start
        while pos < stop:
            chunk = f.read(min(_ZERO_CHUNK, stop - pos))
            if not chunk:
                raise self._error(f"truncated checkpoint file ({what} ends early)")
            if chunk.count(0) != len(chunk):
                raise self._error(f"{what} (bytes {start}-{stop - 1}) is not all zero bytes "
                                  f"(the file was modified or damaged)")
            pos += len(chunk)

    def keys(self):
        return list(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def _entry(self, key):
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"{self.path}: no entry {key!r} in the checkpoint") from None

    def shape(self, key):
        return tuple(self._entry(key)["shape"])

    def dtype(self, key):
        return self._entry(key)["_dtype"]

    def read(self, key, _f=None):
        """The array stored under ``key`` (a fresh, writable NumPy array), checksum verified."""
        e = self._entry(key)
        if _f is None:
            with open(self.path, "rb") as f:
                return self.read(key, f)
        start = self._data_offset + e["offset"]
        buf = bytearray(e["nbytes"])
        _f.seek(start)
        got = _f.readinto(buf) if e["nbytes"] else 0
        if got != e["nbytes"]:
            raise self._error(f"entry {key!r} is truncated")
        if hashlib.sha256(buf).hexdigest() != e["sha256"]:
            raise self._error(f"entry {key!r} fails its SHA-256 check (the file was modified or "
                              f"damaged)")
        self._check_zeros(_f, start + e["nbytes"], self._data_offset + e["_gap_end"],
                          f"the padding after entry {key!r}")
        a = _np.frombuffer(buf, dtype=e["_storage"]).reshape(e["shape"])
        if a.dtype.byteorder not in "=|" and a.dtype.itemsize > 1:
            a = a.astype(a.dtype.newbyteorder("="))
        return a.view(e["_dtype"]) if e["_dtype"] != e["_storage"] else a

    def read_many(self, keys, _file=None):
        """``{key: array}`` for ``keys`` (one open of the file)."""
        if _file is not None:
            return {k: self.read(k, _file) for k in keys}
        with open(self.path, "rb") as f:
            return {k: self.read(k, f) for k in keys}
