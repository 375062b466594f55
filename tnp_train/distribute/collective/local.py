"""Communicators inside one process: a size-1 group, and replica threads of one process.

``LocalCommunicator`` is the world of a job started without ``mpiexec``: every collective is a
copy. ``ThreadGroup(n)`` joins ``n`` threads (``MirroredStrategy``'s replicas): a collective
completes when every member thread has deposited its buffer, is checked like an MPI one (same
op, shapes and dtypes on every member), and names the missing members after the warning time
and at the timeout instead of waiting for ever.
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

from .base import (
    CollectiveError, CollectiveMismatchError, CollectiveTimeoutError, Communicator,
    CompletedRequest, Request, apply_mean, check_reducible, describe, is_cupy, normalize_op, now,
    pickle_bytes, reduce_into, resolve_timeouts, to_host, unpickle_bytes,
)

__all__ = ["LocalCommunicator", "ThreadGroup"]


def _copy(buf):
    return buf.copy() if is_cupy(buf) else np.array(buf, copy=True)


def _check_root(root, size, what):
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < size:
        raise ValueError(f"{what}: root must be a rank in [0, {size}), got {root!r}")
    return int(root)


def _check_gatherable(arr, what):
    if arr.ndim == 0:
        raise ValueError(f"{what}: needs arrays of at least one dimension (concatenated along "
                         "axis 0), got a 0-d array")


class LocalCommunicator(Communicator):
    """The world of a one-process job (``rank`` 0, ``size`` 1): every collective returns a copy
    of its input, with a sequence number and an event as in a real group."""

    rank = 0
    size = 1

    def _done(self, name, op, nbytes, t0):
        seq = self._next_seq()
        t1 = now()
        self._report(name, op, seq, nbytes, t0, t0, t1)

    def allreduce_async(self, buf, op="sum"):
        t0 = now()
        op = normalize_op(op)
        if not is_cupy(buf):
            buf = np.asarray(buf)
        check_reducible(op, np.dtype(buf.dtype))
        result = _copy(buf)
        self._done("allreduce", op, buf.nbytes, t0)
        return CompletedRequest(result)

    def allgather(self, buf):
        t0 = now()
        if not is_cupy(buf):
            buf = np.asarray(buf)
        _check_gatherable(buf, "allgather")
        result = _copy(buf)
        self._done("allgather", None, buf.nbytes, t0)
        return result

    def broadcast(self, buf, root=0):
        t0 = now()
        _check_root(root, 1, "broadcast")
        if not is_cupy(buf):
            buf = np.asarray(buf)
        result = _copy(buf)
        self._done("broadcast", None, buf.nbytes, t0)
        return result

    def broadcast_object(self, obj, root=0):
        t0 = now()
        _check_root(root, 1, "broadcast_object")
        data = pickle_bytes(obj)
        self._done("broadcast_object", None, data.nbytes, t0)
        # a copy, as a real broadcast gives: the caller may mutate either
        return unpickle_bytes(data)

    def allgather_object(self, obj):
        t0 = now()
        data = pickle_bytes(obj)
        self._done("allgather_object", None, data.nbytes, t0)
        return [unpickle_bytes(data)]

    def barrier(self):
        self._done("barrier", None, 0, now())

    def abort(self, errorcode=1):
        """End this process at once with ``errorcode`` (``MPI_Abort`` of a one-process job)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - ending anyway
                pass
        os._exit(int(errorcode))


# -- threads of one process --------------------------------------------------------------------

_KIND_NAMES = ("allreduce", "allgather", "broadcast", "barrier", "broadcast_object",
               "allgather_object")


class _Round:
    """One collective (one sequence number) of a thread group."""

    __slots__ = ("headers", "bufs", "restores", "arrived", "left", "result", "error", "done",
                 "t_all")

    def __init__(self, n):
        self.headers = [None] * n
        self.bufs = [None] * n
        self.restores = [None] * n
        self.arrived = 0
        self.left = 0
        self.result = None
        self.error = None
        self.done = False
        self.t_all = None


class ThreadGroup:
    """``n`` threads of one process that run collectives together; ``member(i)`` is the
    :class:`Communicator` thread ``i`` uses (rank ``i`` of size ``n``)."""

    def __init__(self, n, options=None, timeout_seconds=None):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"ThreadGroup: n must be a positive integer, got {n!r}")
        self.size = int(n)
        self.timeout_seconds, self.warn_seconds = resolve_timeouts(options, timeout_seconds)
        self._cond = threading.Condition()
        self._rounds = {}
        self._broken = None
        self._members = [_ThreadMember(self, i) for i in range(self.size)]

    def member(self, i):
        """The communicator of member thread ``i``."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.size:
            raise ValueError(f"ThreadGroup.member: i must be in [0, {self.size}), got {i!r}")
        return self._members[int(i)]

    def set_options(self, options=None, timeout_seconds=None):
        self.timeout_seconds, self.warn_seconds = resolve_timeouts(options, timeout_seconds)

    @property
    def broken(self):
        """The error that ended the group (a timeout or an abort), or ``None``."""
        return self._broken


class _ThreadMember(Communicator):
    """Member ``rank`` of a :class:`ThreadGroup`."""

    def __init__(self, group, rank):
        self._group = group
        self.rank = rank
        self.size = group.size
        self._seq = 0

    timeout_seconds = property(lambda self: self._group.timeout_seconds)
    warn_seconds = property(lambda self: self._group.warn_seconds)

    def set_options(self, options=None, timeout_seconds=None):
        self._group.set_options(options, timeout_seconds)

    # -- the collectives -----------------------------------------------------------------------
    def allreduce_async(self, buf, op="sum"):
        op = normalize_op(op)
        host, restore = self._stage(buf)
        check_reducible(op, host.dtype)
        return self._arrive("allreduce", op, host, restore, None)

    def allgather(self, buf):
        host, restore = self._stage(buf)
        _check_gatherable(host, "allgather")
        return self._arrive("allgather", None, host, restore, None).wait()

    def broadcast(self, buf, root=0):
        root = _check_root(root, self.size, "broadcast")
        host, restore = self._stage(buf)
        return self._arrive("broadcast", None, host, restore, root).wait()

    def broadcast_object(self, obj, root=0):
        root = _check_root(root, self.size, "broadcast_object")
        data = pickle_bytes(obj) if self.rank == root else np.empty(0, np.uint8)
        return unpickle_bytes(self._arrive("broadcast_object", None, data, None, root).wait())

    def allgather_object(self, obj):
        parts = self._arrive("allgather_object", None, pickle_bytes(obj), None, None).wait()
        return [unpickle_bytes(p) for p in parts]

    def barrier(self):
        self._arrive("barrier", None, np.empty(0, np.uint8), None, None).wait()

    def abort(self, errorcode=1):
        """End the group: every member waiting in, or later calling, a collective raises
        :class:`CollectiveError` (threads cannot be killed; ``MPI_Abort`` ends processes)."""
        err = CollectiveError(f"rank {self.rank} aborted its thread group "
                              f"(errorcode {errorcode})")
        group = self._group
        with group._cond:
            if group._broken is None:
                group._broken = err
            group._cond.notify_all()
        raise err

    # -- machinery -----------------------------------------------------------------------------
    @staticmethod
    def _stage(buf):
        # Members may hold CuPy arrays on different GPUs; the host is the one place they meet.
        if is_cupy(buf):
            return to_host(buf, "collective")
        return np.ascontiguousarray(buf), None

    def _arrive(self, name, op, buf, restore, root):
        group = self._group
        t0 = now()
        seq = self._next_seq()
        header = (name, op, root, buf.dtype, buf.shape)
        complete = None
        with group._cond:
            if group._broken is not None:
                raise CollectiveError(f"[rank {self.rank}] {name} #{seq}: the thread group "
                                      f"ended earlier: {group._broken}")
            rnd = group._rounds.get(seq)
            if rnd is None:
                rnd = group._rounds[seq] = _Round(self.size)
            rnd.headers[self.rank] = header
            rnd.bufs[self.rank] = buf
            rnd.restores[self.rank] = restore
            rnd.arrived += 1
            if rnd.arrived == self.size:
                rnd.t_all = now()
                complete = rnd
        if complete is not None:
            # The last to arrive combines the buffers outside the lock (NumPy releases the GIL,
            # so members arriving at the next collective are not held up).
            try:
                result, error = self._combine(complete, seq), None
            except Exception as exc:  # noqa: BLE001 - every member must learn of it, not hang
                result, error = None, exc
            with group._cond:
                complete.result, complete.error, complete.done = result, error, True
                complete.bufs = None
                group._cond.notify_all()
        return _ThreadRequest(self, seq, rnd, name, op, buf.nbytes, t0)

    def _combine(self, rnd, seq):
        name, op, root = rnd.headers[0][:3]
        self._check_headers(rnd.headers, seq)
        bufs = rnd.bufs
        if name == "allreduce":
            acc = np.array(bufs[0], copy=True)
            for other in bufs[1:]:
                reduce_into(op, acc, other)
            return apply_mean(acc, self.size) if op == "mean" else acc
        if name == "allgather":
            return np.concatenate(bufs, axis=0)
        if name in ("broadcast", "broadcast_object"):
            return bufs[root]
        if name == "allgather_object":
            return list(bufs)
        return None  # barrier

    def _check_headers(self, headers, seq):
        first = headers[0]
        name = first[0]

        def desc(h):
            what = h[0] + (f" ({h[1]})" if h[1] else "") + \
                (f" (root {h[2]})" if h[2] is not None else "")
            if h[0] in ("allreduce", "allgather", "broadcast"):
                what += " " + describe(h[3], h[4])
            return what

        if any(h[0] != name for h in headers):
            calls = "; ".join(f"rank {r}: {desc(h)}" for r, h in enumerate(headers))
            raise CollectiveMismatchError(f"collective #{seq}: members called different "
                                          f"collectives: {calls}")
        if name == "allgather":
            key = lambda h: (h[3], h[4][1:])  # noqa: E731 - dim 0 may differ
        elif name in ("allgather_object", "barrier"):
            return
        elif name == "broadcast_object":
            key = lambda h: h[2]  # noqa: E731 - only the root has a payload
        else:
            key = lambda h: (h[1], h[2], h[3], h[4])  # noqa: E731
        if any(key(h) != key(first) for h in headers):
            calls = "; ".join(f"rank {r}: {desc(h)}" for r, h in enumerate(headers))
            raise CollectiveMismatchError(f"{name} #{seq}: the members' arguments differ: {calls}")


class _ThreadRequest(Request):
    __slots__ = ("_member", "_seq", "_round", "_name", "_op", "_nbytes", "_t0", "_warned",
                 "_value", "_finished")

    def __init__(self, member, seq, rnd, name, op, nbytes, t0):
        self._member, self._seq, self._round = member, seq, rnd
        self._name, self._op, self._nbytes, self._t0 = name, op, nbytes, t0
        self._warned = False
        self._finished = False
        self._value = None

    def _what(self):
        return f"{self._name} #{self._seq}" + (f" ({self._op})" if self._op else "")

    def _check_stall(self):
        """Called with the group's lock held while the round is incomplete."""
        member, group, rnd = self._member, self._member._group, self._round
        if group._broken is not None:
            # a timeout seen by another member is this member's timeout too
            kind = CollectiveTimeoutError if isinstance(group._broken, CollectiveTimeoutError) \
                else CollectiveError
            raise kind(f"[rank {member.rank}] {self._what()}: the thread group ended: "
                       f"{group._broken}")
        waited = now() - self._t0
        if waited < member.warn_seconds:
            return member.warn_seconds - waited
        missing = [r for r, h in enumerate(rnd.headers) if h is None]
        arrived = [r for r, h in enumerate(rnd.headers) if h is not None]
        if waited >= member.timeout_seconds:
            err = member._timeout_error(self._what(), waited, missing, arrived)
            group._broken = err
            group._cond.notify_all()
            raise err
        if not self._warned:
            self._warned = True
            member._warn_stall(self._what(), waited, missing, arrived)
        return member.timeout_seconds - waited

    def test(self):
        if self._finished:
            return True
        with self._member._group._cond:
            if not self._round.done:
                self._check_stall()
                return False
        self._finish()
        return True

    def wait(self):
        if not self._finished:
            cond = self._member._group._cond
            with cond:
                while not self._round.done:
                    cond.wait(max(1e-3, self._check_stall()))
            self._finish()
        return self._value

    def _finish(self):
        member, rnd = self._member, self._round
        t_all = rnd.t_all
        error = rnd.error
        if error is None:
            value = rnd.result
            if self._name in ("allreduce", "allgather", "broadcast"):
                value = np.array(value, copy=True)  # each member owns its result
                restore = rnd.restores[member.rank]
                if restore is not None:
                    value = restore(value)
            self._value = value
        group = member._group
        with group._cond:
            rnd.left += 1
            if rnd.left == member.size:
                group._rounds.pop(self._seq, None)
        self._finished = True
        if error is not None:
            # one exception object per member thread: tracebacks are per raise
            raise type(error)(*error.args)
        member._report(self._name, self._op, self._seq, self._nbytes, self._t0, t_all, now())
