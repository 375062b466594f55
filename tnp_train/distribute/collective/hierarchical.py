"""Collectives over replicas that are threads inside the processes of a job: the threads of a
process meet first (a ``ThreadGroup``), their first member talks to the other processes (MPI),
and the result comes back to every thread. NCCL's and Horovod's hierarchical all-reduce have
the same shape; here it lets one MPI rank drive several devices.
"""
from __future__ import annotations

import numpy as np

from .base import CompletedRequest, Communicator, apply_mean, is_cupy, normalize_op

__all__ = ["HierarchicalCommunicator"]


def _copy(a):
    return a.copy() if is_cupy(a) else np.array(a, copy=True)


class HierarchicalCommunicator(Communicator):
    """Replica ``local.rank`` of ``local.size`` threads in worker ``worker.rank`` of
    ``worker.size`` processes, as one rank of ``local.size * worker.size``: ``rank`` is
    ``worker.rank * local.size + local.rank``. Every thread of every worker must call the same
    collectives in the same order, as with any communicator; timeouts and mismatches are
    detected by the two groups underneath."""

    def __init__(self, local, worker):
        self._local = local
        self._worker = worker
        self.rank = worker.rank * local.size + local.rank
        self.size = worker.size * local.size
        self._seq = 0

    timeout_seconds = property(lambda self: self._local.timeout_seconds)
    warn_seconds = property(lambda self: self._local.warn_seconds)

    def set_options(self, options=None, timeout_seconds=None):
        self._local.set_options(options, timeout_seconds)

    @property
    def _leader(self):
        return self._local.rank == 0

    def _share(self, value):
        """The leader's array on every thread of this process (each its own copy)."""
        if self._leader:
            part = value
        else:
            part = value[:0]
        return _copy(self._local.allgather(part))

    def allreduce_async(self, buf, op="sum"):
        op = normalize_op(op)
        inner = "sum" if op == "mean" else op
        self._next_seq()
        part = self._local.allreduce(buf, inner)
        total = self._worker.allreduce(part, inner) if self._leader else part
        total = self._local.broadcast(total, root=0)
        total = _copy(total)
        if op == "mean":
            apply_mean(total, self.size)
        return CompletedRequest(total)

    def allgather(self, buf):
        self._next_seq()
        part = self._local.allgather(buf)
        whole = self._worker.allgather(part) if self._leader else part
        # the others do not know the gathered length: each adds no rows, the leader all
        return self._share(whole)

    def broadcast(self, buf, root=0):
        self._next_seq()
        w, r = divmod(int(root), self._local.size)
        x = self._local.broadcast(buf, root=r if self._worker.rank == w else 0)
        if self._leader:
            x = self._worker.broadcast(x, root=w)
        return _copy(self._local.broadcast(x, root=0))

    def broadcast_object(self, obj, root=0):
        self._next_seq()
        w, r = divmod(int(root), self._local.size)
        x = self._local.broadcast_object(obj, root=r if self._worker.rank == w else 0)
        if self._leader:
            x = self._worker.broadcast_object(x, root=w)
        return self._local.broadcast_object(x, root=0)

    def allgather_object(self, obj):
        self._next_seq()
        part = self._local.allgather_object(obj)
        whole = None
        if self._leader:
            whole = [o for p in self._worker.allgather_object(part) for o in p]
        return self._local.broadcast_object(whole, root=0)

    def barrier(self):
        self._next_seq()
        self._local.barrier()
        if self._leader:
            self._worker.barrier()
        self._local.barrier()

    def abort(self, errorcode=1):
        self._worker.abort(errorcode)
