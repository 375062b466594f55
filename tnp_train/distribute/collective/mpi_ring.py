"""The all-reduce arithmetic of :mod:`.mpi`: the reduction of every rank's part in rank order
(the same bits on every rank), the ring all-reduce of large payloads over point-to-point
messages, and the pool of result buffers that saves a large result's page faults."""
from __future__ import annotations

import sys

import numpy as np

from .base import apply_mean, reduce_into, sum_in_order


def _reduce_in_rank_order(parts, op, size):
    """The all-reduce of ``parts`` (one per rank, in rank order, so every rank computes the
    same bits) into a new array."""
    if op in ("sum", "mean"):
        acc = sum_in_order(parts, np.empty_like(parts[0]))
    else:
        ufunc = np.maximum if op == "max" else np.minimum
        acc = ufunc(parts[0], parts[1])
        for part in parts[2:]:
            ufunc(acc, part, out=acc)
    if op == "mean":
        apply_mean(acc, size)
    return acc


class _Ring:
    """A ring all-reduce of ``src`` into ``out`` (flat, same dtype): ``size - 1`` reduce-scatter
    steps then ``size - 1`` all-gather steps, one ``Isend``/``Irecv`` pair each, advanced by
    :meth:`test`. Each chunk is reduced by one rank and then copied to the others, so every rank
    gets the same bits."""

    __slots__ = ("comm", "op", "src", "out", "tag", "steps", "k", "reqs", "bounds", "left",
                 "right", "testall")

    def __init__(self, comm, op, src, out, tag):
        n, r = comm.Get_size(), comm.Get_rank()
        count = src.size
        base, extra = divmod(count, n)
        starts = [i * base + min(i, extra) for i in range(n + 1)]
        self.bounds = [(starts[i], starts[i + 1]) for i in range(n)]
        self.comm, self.op, self.src, self.out, self.tag = comm, op, src, out, tag
        self.left, self.right = (r - 1) % n, (r + 1) % n
        # (send chunk, send from src?, receive chunk, reduce after receiving?)
        self.steps = [((r - k) % n, k == 0, (r - k - 1) % n, True) for k in range(n - 1)]
        self.steps += [((r + 1 - k) % n, False, (r - k) % n, False) for k in range(n - 1)]
        from mpi4py import MPI     # imported already: the communicator exists
        self.testall = MPI.Request.Testall
        self.k = 0
        self.reqs = None
        self._post()

    def _chunk(self, arr, i):
        lo, hi = self.bounds[i]
        return arr[lo:hi]

    def _post(self):
        if self.k >= len(self.steps):
            return
        send_i, from_src, recv_i, _ = self.steps[self.k]
        sendbuf = self._chunk(self.src if from_src else self.out, send_i)
        recvbuf = self._chunk(self.out, recv_i)
        self.reqs = [self.comm.Irecv(recvbuf.view(np.uint8), self.left, self.tag),
                     self.comm.Isend(sendbuf.view(np.uint8), self.right, self.tag)]

    def Test(self):  # noqa: N802 - the same name as mpi4py's Request.Test
        while self.k < len(self.steps):
            if not self.testall(self.reqs):
                return False
            _, _, recv_i, reduce = self.steps[self.k]
            if reduce:
                reduce_into(self.op, self._chunk(self.out, recv_i), self._chunk(self.src, recv_i))
            self.k += 1
            self._post()
        return True

    def waiting_for(self):
        return [self.left] if self.k < len(self.steps) else []


class _OutputPool:
    """Result buffers of large all-reduces, reused once nothing refers to them any more.

    A fresh multi-megabyte array costs a page fault per 4 KB page the first time it is written
    (measured here: up to 1 ms for 2.7 MB, more than the transfer), which raw ``MPI_Allreduce``
    into a preallocated buffer never pays. Each result handed out is a view of a buffer kept
    here; every view of it (the caller's, and views of views) holds a reference to that buffer,
    so a buffer whose only references are this pool's own is provably unused and is reused.
    """

    MAX_BYTES = 512 << 20          # buffers held (in use or free) beyond this are not kept

    def __init__(self):
        self._buffers = []
        self._bytes = 0

    def take(self, nbytes):
        """A 1-D uint8 array of ``nbytes`` that nobody else references."""
        buffers = self._buffers
        for buf in buffers:
            # references: the list, `buf`, and getrefcount's argument
            if buf.nbytes == nbytes and sys.getrefcount(buf) <= 3:
                return buf
        buf = np.empty(nbytes, np.uint8)
        if self._bytes + nbytes > self.MAX_BYTES:
            # drop free buffers of other sizes first; keep what is still in use
            for old in [b for b in buffers if sys.getrefcount(b) <= 3]:
                buffers.remove(old)
                self._bytes -= old.nbytes
                del old
        if self._bytes + nbytes <= self.MAX_BYTES:
            buffers.append(buf)
            self._bytes += nbytes
        return buf
