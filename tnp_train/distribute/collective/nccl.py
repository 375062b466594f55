"""NCCL between the GPUs of one process (``MirroredStrategy``'s replicas, one thread per GPU),
through CuPy's ``cupy.cuda.nccl``.

Each collective first meets on the host (a ``ThreadGroup`` exchanges every member's op, dtype
and shape), so a mismatch is an error naming both sides and a member that never comes is a
timeout naming it, as everywhere in this layer; only then is the NCCL kernel queued on the
member's current stream. NCCL moves the data GPU to GPU; arrays NCCL cannot reduce (bool,
dtypes it lacks) and host arrays take the thread group's host path. Object collectives and
``barrier`` are the host group's.
"""
from __future__ import annotations

import numpy as np

from .base import (
    CollectiveMismatchError, Communicator, Request, apply_mean, check_reducible, describe,
    is_cupy, normalize_op, now,
)
from .local import ThreadGroup

__all__ = ["NcclGroup", "nccl_available"]


def nccl_available():
    """Whether CuPy with NCCL is importable (GPUs are another question)."""
    try:
        from cupy.cuda import nccl
        nccl.get_version()
    except Exception:  # noqa: BLE001 - no CuPy, no NCCL in this CuPy, no CUDA driver
        return False
    return True


def _nccl_dtype(nccl, dtype):
    table = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
             "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
             "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
             "bfloat16": "NCCL_BFLOAT16"}
    name = table.get(np.dtype(dtype).name)
    return None if name is None else getattr(nccl, name, None)


def _nccl_op(nccl, op):
    return {"sum": nccl.NCCL_SUM, "mean": nccl.NCCL_SUM, "max": nccl.NCCL_MAX,
            "min": nccl.NCCL_MIN}[op]


class NcclGroup:
    """One NCCL communicator per GPU in ``device_ids`` (CUDA ordinals), for ``len(device_ids)``
    threads of this process; ``member(i)`` is the communicator of the thread driving
    ``device_ids[i]``."""

    def __init__(self, device_ids, options=None, timeout_seconds=None):
        from cupy.cuda import nccl
        self._nccl = nccl
        self.device_ids = [int(d) for d in device_ids]
        self.size = len(self.device_ids)
        self.host = ThreadGroup(self.size, options=options, timeout_seconds=timeout_seconds)
        self._comms = nccl.NcclCommunicator.initAll(self.device_ids)
        self._members = [_NcclMember(self, i) for i in range(self.size)]

    @property
    def timeout_seconds(self):
        return self.host.timeout_seconds

    def member(self, i):
        return self._members[int(i)]


class _NcclRequest(Request):
    __slots__ = ("_out", "_stream", "_finish")

    def __init__(self, out, stream, finish):
        self._out, self._stream, self._finish = out, stream, finish

    def test(self):
        return bool(self._stream.done)

    def wait(self):
        self._stream.synchronize()
        out, finish = self._out, self._finish
        if finish is not None:
            self._finish = None
            finish(out)
        return out


class _NcclMember(Communicator):
    """Member ``rank`` of an :class:`NcclGroup`."""

    def __init__(self, group, rank):
        self._group = group
        self._host = group.host.member(rank)
        self.rank = rank
        self.size = group.size
        self._seq = 0

    timeout_seconds = property(lambda self: self._host.timeout_seconds)
    warn_seconds = property(lambda self: self._host.warn_seconds)

    def set_options(self, options=None, timeout_seconds=None):
        self._host.set_options(options, timeout_seconds)

    def _meet(self, name, op, buf, root=None):
        """Every member's (op, dtype, shape) on the host; mismatches named."""
        mine = (name, op, root, np.dtype(buf.dtype).str, tuple(buf.shape))
        everyone = self._host.allgather_object(mine)
        for r, other in enumerate(everyone):
            if other != mine:
                raise CollectiveMismatchError(
                    f"[rank {self.rank}] {name}: rank {r} called it with op {other[1]!r}, "
                    f"{describe(other[3], other[4])}"
                    + (f", root {other[2]}" if other[2] is not None else "")
                    + f"; this rank with op {op!r}, {describe(buf.dtype, buf.shape)}"
                    + (f", root {root}" if root is not None else ""))

    def _device_path(self, buf, op=None):
        nccl = self._group._nccl
        return is_cupy(buf) and _nccl_dtype(nccl, buf.dtype) is not None and \
            (op is None or np.dtype(buf.dtype).kind != "b")

    def allreduce_async(self, buf, op="sum"):
        op = normalize_op(op)
        check_reducible(op, np.dtype(buf.dtype))
        if not self._device_path(buf, op):
            return self._host.allreduce_async(buf, op)
        import cupy
        t0 = now()
        self._meet("allreduce", op, buf)
        nccl = self._group._nccl
        seq = self._next_seq()
        with cupy.cuda.Device(self._group.device_ids[self.rank]):
            src = cupy.ascontiguousarray(buf)
            out = cupy.empty_like(src)
            stream = cupy.cuda.get_current_stream()
            self._group._comms[self.rank].allReduce(
                src.data.ptr, out.data.ptr, src.size, _nccl_dtype(nccl, src.dtype),
                _nccl_op(nccl, op), stream.ptr)

        def finish(result):
            if op == "mean":
                apply_mean(result, self.size)
            self._report("allreduce", op, seq, buf.nbytes, t0, t0, now())
        return _NcclRequest(out, stream, finish)

    def allgather(self, buf):
        # dim 0 may differ between members, which NCCL's allGather does not allow: the host
        return self._host.allgather(buf)

    def broadcast(self, buf, root=0):
        if not self._device_path(buf):
            return self._host.broadcast(buf, root)
        import cupy
        t0 = now()
        self._meet("broadcast", None, buf, root)
        nccl = self._group._nccl
        seq = self._next_seq()
        with cupy.cuda.Device(self._group.device_ids[self.rank]):
            out = cupy.array(buf, copy=True, order="C")
            stream = cupy.cuda.get_current_stream()
            self._group._comms[self.rank].bcast(out.data.ptr, out.size,
                                                _nccl_dtype(nccl, out.dtype), int(root),
                                                stream.ptr)
            stream.synchronize()
        self._report("broadcast", None, seq, buf.nbytes, t0, t0, now())
        return out

    def broadcast_object(self, obj, root=0):
        return self._host.broadcast_object(obj, root)

    def allgather_object(self, obj):
        return self._host.allgather_object(obj)

    def barrier(self):
        self._host.barrier()

    def abort(self, errorcode=1):
        self._host.abort(errorcode)
