"""The frames that travel between the ranks of a parameter-server job.

A frame is one contiguous byte buffer (one MPI message): a small JSON header, then raw buffers,
each starting on a 64-byte boundary so the receiver views them as arrays in place (no copy, and
aligned for the update kernels)::

    b"TPS1" | u32 header length | JSON header | pad | buffer 0 | pad | buffer 1 | ...

The header lists the buffers' sizes (``"_b"``); what a buffer holds is said by the fields that
point at it: an array (``{"a": index, "dt": dtype, "sh": shape}``) or a pickle
(``{"p": index, "n": count}``: a pickle stream at ``index`` and its ``n`` out-of-band buffers
after it, protocol 5, so the arrays a pickled object holds travel as raw buffers too). Pickles
carry only what cannot be described otherwise (closures, ``dataset_fn``, model structure,
exceptions), between the ranks of one job.
"""
from __future__ import annotations

import json
import pickle
import struct

import numpy as _np

__all__ = ["Frame", "encode", "decode", "empty", "array_meta", "array_from", "dtype_name",
           "dtype_from_name"]

_MAGIC = b"TPS1"
_ALIGN = 64


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def empty(nbytes):
    """An uninitialised uint8 array of ``nbytes`` starting on a 64-byte boundary (a frame is
    built and received into one, so its buffers are aligned in memory too)."""
    raw = _np.empty(nbytes + _ALIGN, _np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start:start + nbytes]


def dtype_name(dtype):
    """A dtype as the header writes it: NumPy's type string, or the name of an ml_dtypes type
    (``bfloat16``), whose type string (``<V2``) would not say what it is."""
    dtype = _np.dtype(dtype)
    return dtype.name if dtype.kind == "V" else dtype.str


def dtype_from_name(name):
    return _np.dtype(name)


class Frame:
    """A frame being built: ``add_array``/``add_bytes``/``add_pickle`` return the header entry
    pointing at what they added; :meth:`encode` lays it out."""

    __slots__ = ("header", "buffers")

    def __init__(self, header):
        self.header = dict(header)
        self.buffers = []

    def add_bytes(self, data):
        self.buffers.append(memoryview(data).cast("B"))
        return len(self.buffers) - 1

    def add_array(self, a):
        """A host NumPy array (made contiguous) as a buffer; returns its header entry."""
        a = _np.asarray(a)
        if not a.flags.c_contiguous:     # (ascontiguousarray would make a 0-d array 1-d)
            a = a.copy(order="C")
        entry = {"a": len(self.buffers), "dt": dtype_name(a.dtype), "sh": list(a.shape)}
        # a 0-d or empty array still has a (possibly empty) buffer of its own
        self.buffers.append(memoryview(a.reshape(-1).view(_np.uint8)) if a.size else
                            memoryview(b""))
        return entry

    def add_pickle(self, stream, oob=()):
        entry = {"p": len(self.buffers), "n": len(oob)}
        self.buffers.append(memoryview(stream).cast("B"))
        for b in oob:
            self.buffers.append(b.raw() if isinstance(b, pickle.PickleBuffer) else
                                memoryview(b).cast("B"))
        return entry

    def encode(self):
        return encode(self.header, self.buffers)


def encode(header, buffers=()):
    """``header`` (a JSON-able dict) and ``buffers`` (bytes-like) as one frame, a NumPy uint8
    array the transport sends as it is."""
    views = [b if isinstance(b, memoryview) else memoryview(b).cast("B") for b in buffers]
    header = dict(header)
    header["_b"] = [v.nbytes for v in views]
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    offsets = []
    end = _aligned(8 + len(h))
    for v in views:
        offsets.append(end)
        end = _aligned(end + v.nbytes)
    frame = empty(end)
    frame[:4] = _np.frombuffer(_MAGIC, _np.uint8)
    frame[4:8] = _np.frombuffer(struct.pack("<I", len(h)), _np.uint8)
    frame[8:8 + len(h)] = _np.frombuffer(h, _np.uint8)
    for off, v in zip(offsets, views):
        if v.nbytes:
            frame[off:off + v.nbytes] = _np.frombuffer(v, _np.uint8)
    return frame


def decode(frame):
    """``(header, buffers)`` of a frame (a uint8 array); the buffers are views into it."""
    frame = _np.asarray(frame, _np.uint8)
    if frame.size < 8 or bytes(frame[:4]) != _MAGIC:
        raise ValueError(f"parameter-server wire: not a frame (starts {bytes(frame[:8])!r}, "
                         f"{frame.size} bytes)")
    (hlen,) = struct.unpack("<I", bytes(frame[4:8]))
    header = json.loads(bytes(frame[8:8 + hlen]).decode("utf-8"))
    buffers = []
    off = _aligned(8 + hlen)
    for n in header.pop("_b", ()):
        if off + n > frame.size:
            raise ValueError(f"parameter-server wire: a frame of {frame.size} bytes whose "
                             f"header describes at least {off + n}")
        buffers.append(frame[off:off + n])
        off = _aligned(off + n)
    return header, buffers


def array_meta(a):
    return {"dt": dtype_name(a.dtype), "sh": list(a.shape)}


def array_from(entry, buffers):
    """The array an ``add_array`` entry points at: a view into the received frame."""
    dtype = dtype_from_name(entry["dt"])
    shape = tuple(entry["sh"])
    raw = buffers[entry["a"]]
    if raw.size == 0:
        return _np.empty(shape, dtype)
    return raw.view(dtype).reshape(shape)


def pickle_from(entry, buffers, loads):
    """Unpickle what an ``add_pickle`` entry points at with ``loads(stream, buffers=...)``."""
    i, n = entry["p"], entry["n"]
    return loads(buffers[i], buffers=[buffers[j] for j in range(i + 1, i + 1 + n)])
