"""The fixed-size header every MPI collective sends first (see :mod:`.mpi`): kind, sequence
number, op, root, dtype, shape and payload size in 24 int64 words, so every rank can check
that its peers run the same collective before any payload moves; and the tags and limits of
the exchange."""
from __future__ import annotations

import struct

import numpy as np

ALLREDUCE, ALLGATHER, BROADCAST, BARRIER, BCAST_OBJ, ALLGATHER_OBJ, LEAVING = 1, 2, 3, 4, 5, 6, 15
_KIND_NAMES = {ALLREDUCE: "allreduce", ALLGATHER: "allgather", BROADCAST: "broadcast",
               BARRIER: "barrier", BCAST_OBJ: "broadcast_object",
               ALLGATHER_OBJ: "allgather_object", LEAVING: "leaving"}
_OP_CODES = {None: 0, "sum": 1, "mean": 2, "max": 3, "min": 4}
_OP_NAMES = {v: k for k, v in _OP_CODES.items()}

_WORDS = 24
_H = 8 * _WORDS                 # header bytes
_MAX_DIMS = _WORDS - 9          # dims stored exactly; a deeper shape stores a hash of the rest
# word: 0 kind, 1 seq, 2 op, 3 root, 4 ndim, 5 inline bytes (-1: payload sent separately),
#       6 payload bytes, 7-8 dtype name (16 ascii bytes), 9.. shape
_SEQ_OFFSET = 8
_TAG_HEADER = 1
_TAG_RING = 2                   # + seq modulo _RING_TAGS, so two rings never share a tag
_RING_TAGS = 1 << 20

# Dtypes MPI reduces natively (mpi4py maps the buffer's format); the ring, which reduces with
# NumPy, takes the others (float16, bfloat16, bool, ...).
_MPI_REDUCIBLE = set("bBhHiIlLqQfd")
_MPI_SUMMABLE = _MPI_REDUCIBLE | set("FD")

_FAST_OPS = frozenset(("sum", "mean", "max", "min"))
_FAST_POLLS = 64                # polls before a small all-reduce joins the general queue
_FAST_BYTES = 4096              # payloads up to this keep persistent requests (_FastCall)
_FAST_CALLS = 64                # ... for this many signatures at most


def _dtype_words(dtype):
    name = np.dtype(dtype).name.encode("ascii")[:16].ljust(16, b"\0")
    return struct.unpack("<qq", name)


def _dtype_from_words(w0, w1):
    name = struct.pack("<qq", w0, w1).rstrip(b"\0").decode("ascii", "replace")
    try:
        return np.dtype(name)
    except TypeError:
        return name


class _Header:
    """A peer's header, decoded (only on the slow path: a mismatch or a diagnosis)."""

    __slots__ = ("kind", "seq", "op", "root", "shape", "inline", "nbytes", "dtype")

    def __init__(self, raw):
        w = [int(v) for v in np.frombuffer(raw, "<i8", _WORDS)]
        self.kind, self.seq, self.root = w[0], w[1], w[3]
        self.op = _OP_NAMES.get(w[2], "?")
        ndim = w[4]
        self.inline, self.nbytes = w[5], w[6]
        self.dtype = _dtype_from_words(w[7], w[8])
        dims = w[9:9 + min(ndim, _MAX_DIMS)]
        if ndim > _MAX_DIMS:
            dims[-1:] = ["..."]
        self.shape = tuple(dims)

    @property
    def name(self):
        return _KIND_NAMES.get(self.kind, f"kind {self.kind}")

    def describe(self):
        what = self.name
        if self.op:
            what += f" ({self.op})"
        if self.kind in (BROADCAST, BCAST_OBJ):
            what += f" (root {self.root})"
        if self.kind in (ALLREDUCE, ALLGATHER, BROADCAST):
            dtype = self.dtype.name if isinstance(self.dtype, np.dtype) else self.dtype
            what += f" {dtype} {self.shape}"
        return what


def _shape_words(shape):
    dims = list(shape)
    if len(dims) > _MAX_DIMS:
        dims = dims[:_MAX_DIMS - 1] + [hash(tuple(dims[_MAX_DIMS - 1:])) & (2 ** 62 - 1)]
    return dims
