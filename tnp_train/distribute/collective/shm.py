"""Persistent all-reduces: the same buffers all-reduced again and again (a training step's
gradient buckets), set up once, as MPI-4's ``MPI_Allreduce_init``.

Where every rank of an :class:`~.mpi.MPICommunicator` runs on one machine, the plan maps one
shared-memory segment: each rank writes its buffer where every other rank can read it and
raises a flag; then each rank sums, in rank order (so every rank gets the same bits), either
every rank's buffer into a result of its own (small buffers) or, for a large one, only its
chunk of it into a result region all ranks share (a reduce-scatter), and takes the others'
chunks from there once their flags say they are written (an all-gather). Nothing is sent,
there is no header exchange per call (the layout is agreed once, when the plan is made), and
the data is read once; MPI's path copies it through its shared-memory transport and makes
progress only inside MPI calls. Measured here on 2 ranks (benchmarks/allreduce.py --buckets,
before the chunked sums): the MLP's 2.7 MB of gradients in two buckets in 0.21 ms against
0.49 ms through the MPI layer.

Everything else keeps the layer's guarantees: a missing rank gets the stall warning and the
timeout error naming it, a rank that leaves is reported as such, a rank whose process dies
(SIGKILL, under ULFM the job lives on) is found by its PID within a quarter second and raises
the ``CollectiveWorkerLostError`` MPI would, and a layout that differs between ranks fails when
the plan is made, naming both.

Where the ranks are on several machines and some machine holds more than one, the plan is
hierarchical (:class:`HierarchicalAllreduce`): the shared-memory plan inside each machine, MPI
between one rank per machine, and an MPI broadcast back inside the machine; the job's rank 0
names the topology on stderr once, when the first plan is made. Elsewhere (one rank per
machine, no ``/dev/shm``, GPU buffers, elastic jobs, which must notice a dead peer through
ULFM) the plan is a loop of ordinary ``allreduce_async`` calls over buffers it owns.
"""
from __future__ import annotations

import collections
import mmap
import os
import sys
import platform
import socket
import time
import uuid

import numpy as np

from .base import CollectiveMismatchError, CollectivePeerExitError, apply_mean, is_ml_dtype, \
    normalize_op, now, sum_in_order

__all__ = ["PersistentAllreduce", "SharedMemoryAllreduce", "HierarchicalAllreduce",
           "host_topology", "make_plan", "set_shared_memory",
           "mark_left", "shared_mapping"]

_ALIGN = 64                 # each bucket on its own cache lines
_PAGE = mmap.PAGESIZE
_SHM_DIR = "/dev/shm"
# Flags are plain 8-byte stores and loads; the data written before a flag is seen before it
# only under a total-store-order memory model (x86-64). Elsewhere the plan falls back to MPI.
_TSO = platform.machine().lower() in ("x86_64", "amd64")
# TNP_COLLECTIVE_SHM=0 turns the shared-memory plans off (every round then goes through MPI)
_allowed = [os.environ.get("TNP_COLLECTIVE_SHM", "1").strip() not in ("0", "false", "no", "off")]


def set_shared_memory(allowed):
    """Allow (the default) or forbid shared-memory plans from now on (elastic training forbids
    them: a dead peer must be noticed by MPI's fault tolerance, which only MPI calls see)."""
    _allowed[0] = bool(allowed)


def _ufunc(op):
    return np.maximum if op == "max" else np.minimum if op == "min" else np.add


def _spec(spec):
    count, dtype = spec
    return int(count), np.dtype(dtype)


class PersistentAllreduce:
    """All-reduce each of a fixed list of buffers, once per round: write into :meth:`buffer`,
    :meth:`acquire` before writing a new round, :meth:`start`, then :meth:`test` / :meth:`wait`
    (which returns the result: a new array, or one no earlier result refers to).

    This general form runs on any communicator through ``allreduce_async``."""

    shared = False

    def __init__(self, comm, specs, op="sum", xp=np):
        self.comm, self.op = comm, normalize_op(op)
        self._buffers = [xp.zeros(count, dtype) for count, dtype in map(_spec, specs)]
        self._requests = [None] * len(self._buffers)

    def __len__(self):
        return len(self._buffers)

    def buffer(self, i):
        return self._buffers[i]

    def acquire(self, i):
        if self._requests[i] is not None:
            raise RuntimeError(f"PersistentAllreduce: buffer {i} is still being reduced")

    def start(self, i):
        self._requests[i] = self.comm.allreduce_async(self._buffers[i], self.op)

    def test(self, i):
        return self._requests[i].test()

    def wait(self, i):
        req, self._requests[i] = self._requests[i], None
        return req.wait()

    def cancel(self, i):
        """Forget round ``i``'s request (after an error: the communicator is broken anyway)."""
        self._requests[i] = None

    def close(self):
        self._buffers = []


class SharedMemoryAllreduce(PersistentAllreduce):
    """The shared-memory plan (see the module's docstring); made by :func:`make_plan`.

    A buffer of at least ``SCATTER_BYTES`` is reduced in two halves of work, as a
    reduce-scatter then an all-gather: rank ``r`` sums only chunk ``r`` of every rank's buffer
    (in rank order, so each element is computed once, the same bits everywhere) into a result
    region all ranks share, then reads the others' chunks from there. Each rank reads and
    writes ``1/size`` of the data instead of all of it. With ``transient=True`` :meth:`wait`
    returns a view of that shared region, valid until this rank starts the same buffer's next
    round (the gradient buckets use each result before their next step); otherwise a copy of
    its own (the layer's rule: a result is never overwritten by later rounds)."""

    shared = True
    SCATTER_BYTES = 64 << 10   # below it, one more flag round costs more than the work saved

    # A rank's region: a page of flags, then its buffers. Flag words: 0 "this rank has left",
    # then per buffer i: 1 + 4i the last round it started, 2 + 4i the last round it finished
    # reading every rank's buffer i, 3 + 4i the last round it wrote its chunk of the result,
    # 4 + 4i the last round it applied its chunk (``wait(i, then=...)``: a sharded update).
    WORDS = 4

    def __init__(self, comm, specs, op, mapping, region_bytes, offsets, pids=None,
                 results=None, transient=False):
        self.comm, self.op = comm, normalize_op(op)
        self._pids = pids
        self._map = mapping
        self._specs = [_spec(s) for s in specs]
        self._transient = bool(transient)
        size, rank = comm.size, comm.rank
        raw = np.frombuffer(mapping, np.uint8)
        self._flags = [raw[p * region_bytes:p * region_bytes + _PAGE].view(np.int64)
                       for p in range(size)]
        self._data = [[raw[p * region_bytes + off:p * region_bytes + off + count * dt.itemsize]
                       .view(dt) for off, (count, dt) in zip(offsets, self._specs)]
                      for p in range(size)]
        # the shared result regions (None: a buffer every rank sums whole) and, per buffer,
        # this rank's chunk of it
        self._shared = [None if off is None else
                        raw[off:off + count * dt.itemsize].view(dt)
                        for off, (count, dt) in zip(results or [None] * len(self._specs),
                                                    self._specs)]
        self._chunk = [((rank * count) // size, ((rank + 1) * count) // size)
                       for count, _ in self._specs]
        self._mine = self._flags[rank]
        self._peers = [p for p in range(size) if p != rank]
        self._round = [0] * len(self._specs)
        self._started = [False] * len(self._specs)
        self._summed = [False] * len(self._specs)
        self._t0 = [0.0] * len(self._specs)
        self._t1 = [0.0] * len(self._specs)
        self._seq = [0] * len(self._specs)
        self._results = [None] * len(self._specs)
        self._ufunc = _ufunc(self.op)
        self._buffers = self._data[rank]

    def acquire(self, i):
        """Wait until every peer has read this rank's buffer ``i`` of the last round (normally
        at once: a peer reads it before its own step ends)."""
        r = self._round[i]
        if r and not self._all_at(2 + 4 * i, r):
            self._wait_for(2 + 4 * i, r, i, "to read the previous round of")

    def start(self, i):
        if self._started[i]:
            raise RuntimeError(f"SharedMemoryAllreduce: buffer {i} was started twice")
        r = self._round[i] + 1
        self._round[i] = r
        self._started[i] = True
        self._results[i] = None
        self._t0[i] = now()
        # the communicator's sequence number (every rank starts its plans' rounds and its
        # other collectives in one order): the profiler matches a collective across ranks by it
        self._seq[i] = self.comm._next_seq()
        self._summed[i] = False
        self._mine[1 + 4 * i] = r      # after the data: the flag publishes it

    def test(self, i):
        if self._results[i] is not None:
            return True
        if not self._summed[i]:
            if not self._all_at(1 + 4 * i, self._round[i]):
                self._check_left(i)
                return False
            self._reduce(i)
        if self._results[i] is None:
            if not self._all_at(3 + 4 * i, self._round[i]):
                self._check_left(i)
                return False
            self._gather(i)
        return True

    def wait(self, i, then=None):
        """The result of round ``i``; or, with ``then`` (a sharded update, op "sum" only), call
        ``then(lo, hi, sums)`` with this rank's chunk ``[lo, hi)`` of the sums (a view, to be
        used before returning) and return None once every rank has returned from its own call:
        each rank updates its own part of state all ranks share, in place of taking the whole
        result."""
        r = self._round[i]
        if not self._summed[i] and self._results[i] is None:
            if not self._all_at(1 + 4 * i, r):
                self._wait_for(1 + 4 * i, r, i, "to start")
            self._reduce(i)
        if then is not None:
            return self._apply(i, then)
        if self._results[i] is None:
            if not self._all_at(3 + 4 * i, r):
                self._wait_for(3 + 4 * i, r, i, "to sum its part of")
            self._gather(i)
        out, self._results[i] = self._results[i], None
        self._started[i] = False
        return out

    def chunk(self, i):
        """``(lo, hi)``: the elements of buffer ``i`` this rank sums (and, in a sharded update,
        applies); the chunks of the ranks tile the buffer in rank order."""
        return self._chunk[i]

    def peer_buffer(self, p, i):
        """Rank ``p``'s buffer ``i`` as written for the current round (read it only after
        every rank started the round, e.g. inside ``wait(i, then=...)``)."""
        return self._data[p][i]

    def _apply(self, i, then):
        if self.op != "sum":
            raise ValueError(f"{self._describe(i)}: a sharded update needs op 'sum'")
        r = self._round[i]
        lo, hi = self._chunk[i]
        shared = self._shared[i]
        gathered = self._results[i] is not None
        # the shared region's chunk (only this rank writes it), or this rank's whole sum
        sums = shared[lo:hi] if shared is not None else self._results[i][lo:hi]
        then(lo, hi, sums)
        self._mine[4 + 4 * i] = r          # after the update: the flag publishes it
        self._results[i] = None
        if not self._all_at(4 + 4 * i, r):
            self._wait_for(4 + 4 * i, r, i, "to apply its part of")
        self._started[i] = False
        if shared is not None and not gathered:
            count, dtype = self._specs[i]
            self.comm._report("allreduce", self.op, self._seq[i], count * dtype.itemsize,
                              self._t0[i], self._t1[i], now())
        return None

    def cancel(self, i):
        self._started[i] = False
        self._summed[i] = False
        self._results[i] = None

    # -- internals -----------------------------------------------------------------------------
    def _all_at(self, word, r):
        flags = self._flags
        for p in self._peers:
            if flags[p][word] < r:
                return False
        return True

    def _reduce(self, i):
        """Sum this rank's share of buffer ``i`` (all of it, or its chunk of a shared result)
        over every rank, in rank order."""
        self._t1[i] = now()
        count, dtype = self._specs[i]
        ufunc = self._ufunc
        shared = self._shared[i]
        if shared is None:
            parts = [d[i] for d in self._data]
            out = self.comm._outputs.take(count * dtype.itemsize).view(dtype)
        else:
            lo, hi = self._chunk[i]
            parts = [d[i][lo:hi] for d in self._data]
            out = shared[lo:hi]
        if ufunc is np.add:
            sum_in_order(parts, out)                # rank order: the same bits everywhere
        elif len(parts) == 1:
            out[...] = parts[0]
        else:
            ufunc(parts[0], parts[1], out=out)
            for part in parts[2:]:
                ufunc(out, part, out=out)
        self._mine[2 + 4 * i] = self._round[i]      # done reading every rank's buffer
        self._summed[i] = True
        if shared is None:
            self._finish(i, out)
        else:
            self._mine[3 + 4 * i] = self._round[i]  # after the sums: the flag publishes them

    def _gather(self, i):
        """Every rank has written its chunk of buffer ``i``'s result: take it."""
        shared = self._shared[i]
        if self._transient:
            # read-only: the region is every rank's result, and a write through it (an
            # in-place gradient transform) would change the others' too
            out = shared.view()
            out.flags.writeable = False
        else:
            count, dtype = self._specs[i]
            out = self.comm._outputs.take(count * dtype.itemsize).view(dtype)
            out[...] = shared
        self._finish(i, out)

    def _finish(self, i, out):
        if self.op == "mean":
            if self._shared[i] is not None and self._transient:
                # the shared result is everyone's: each rank divides its own copy instead
                out = out.copy()
            apply_mean(out, self.comm.size)
        self._results[i] = out
        count, dtype = self._specs[i]
        self.comm._report("allreduce", self.op, self._seq[i], count * dtype.itemsize,
                          self._t0[i], self._t1[i], now())

    def _describe(self, i):
        count, dtype = self._specs[i]
        return (f"shared-memory allreduce ({self.op}) of buffer {i} ({count} x {dtype.name}), "
                f"round {self._round[i]}")

    def _check_left(self, i):
        gone = [p for p in self._peers if self._flags[p][0]]
        if gone:
            self._started[i] = False
            raise CollectivePeerExitError(
                f"[rank {self.comm.rank}] {self._describe(i)}: "
                + "; ".join(f"rank {p} ended its process (without an error) before joining it"
                            for p in gone)
                + ". Every rank must run the same collectives (e.g. the same number of steps)")

    def _wait_for(self, word, r, i, what):
        """Wait (spinning, then yielding the core, then sleeping) until every peer's flag
        ``word`` reaches ``r``; warns, then fails the job, as the MPI layer does."""
        comm = self.comm
        t_start = time.monotonic()
        spins, warned, next_probe = 0, False, 0.05
        while not self._all_at(word, r):
            self._check_left(i)
            spins += 1
            if spins < 64:
                continue
            waited = time.monotonic() - t_start
            if waited >= next_probe:
                # a peer that died without leaving (SIGKILL, a crash) is seen here: under
                # ULFM the job goes on without it, and nothing else would end this wait
                next_probe = waited + 0.25
                self._check_dead(word, r, i)
            if waited >= comm.warn_seconds:
                missing = [p for p in self._peers if self._flags[p][word] < r]
                arrived = [p for p in range(comm.size) if p not in missing]
                desc = self._describe(i)
                if waited >= comm.timeout_seconds:
                    err = comm._timeout_error(desc, waited, missing, arrived,
                                              f"never came {what} it")
                    self._started[i] = False
                    comm._fail(err)
                    raise err
                if not warned:
                    warned = True
                    comm._warn_stall(desc, waited, missing, arrived)
            if waited < 2e-3:
                os.sched_yield()
            else:
                time.sleep(min(1e-3, waited / 16))

    def _check_dead(self, word, r, i):
        if not self._pids:
            return
        dead = [p for p in self._peers if self._flags[p][word] < r and
                not _alive(self._pids[p])]
        if dead:
            self._started[i] = False
            raise self.comm._peers_died(
                dead, f"waiting in a {self._describe(i)}, its process is gone" if len(dead) == 1
                else f"waiting in a {self._describe(i)}, their processes are gone")

    def mark_left(self):
        """This rank is exiting: peers waiting on it fail at once, naming it."""
        if self._map is not None and not self._map.closed:
            self._mine[0] = 1

    def close(self):
        self._flags = self._data = self._buffers = self._mine = None
        self._results = [None] * len(self._specs)
        mapping, self._map = self._map, None
        if mapping is not None:
            try:
                mapping.close()
            except BufferError:   # a result view still refers to it: freed with the view
                pass


def _alive(pid):
    """Whether process ``pid`` (on this machine) still runs: not gone, not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def _layout(specs):
    offsets, off = [], _PAGE
    for count, dtype in specs:
        offsets.append(off)
        off += -(-count * dtype.itemsize // _ALIGN) * _ALIGN
    region = -(-off // _PAGE) * _PAGE
    return offsets, region


def _result_layout(specs, start):
    """Offsets (from ``start``) of the shared result regions of the buffers reduced in chunks
    (None for the others), and the bytes they take."""
    offsets, off = [], start
    for count, dtype in specs:
        if count * dtype.itemsize >= SharedMemoryAllreduce.SCATTER_BYTES:
            offsets.append(off)
            off += -(-count * dtype.itemsize // _ALIGN) * _ALIGN
        else:
            offsets.append(None)
    return offsets, -(-(off - start) // _PAGE) * _PAGE


def make_plan(comm, specs, op="sum", xp=np, transient=False):
    """A :class:`PersistentAllreduce` for ``specs`` (``(count, dtype)`` per buffer) on ``comm``:
    shared memory when every rank is on this machine, else the general form. Collective: every
    rank calls it with the same ``specs`` (checked; a difference fails naming both layouts).
    ``transient=True``: a result may be a view that the buffer's next round overwrites (see
    :class:`SharedMemoryAllreduce`)."""
    specs = [_spec(s) for s in specs]
    size = getattr(comm, "size", 1)
    # only between processes (an MPI communicator's ranks), and only where the memory model
    # lets plain stores publish data; otherwise each round is an ordinary checked all-reduce
    if size == 1 or xp is not np or not hasattr(comm, "_outputs") or not _allowed[0] \
            or not _TSO or not os.path.isdir(_SHM_DIR) \
            or 1 + SharedMemoryAllreduce.WORDS * len(specs) > _PAGE // 8:
        return PersistentAllreduce(comm, specs, op, xp)
    for _, dtype in specs:
        if dtype.kind not in "biufc" and not is_ml_dtype(dtype):
            raise TypeError(f"make_plan: cannot all-reduce buffers of dtype {dtype.name}")
    layout = tuple((count, dtype.str if not is_ml_dtype(dtype) else dtype.name)
                   for count, dtype in specs)
    infos = comm.allgather_object((socket.gethostname(), layout, normalize_op(op),
                                   os.getpid()))
    mine = infos[comm.rank]
    differ = [p for p, info in enumerate(infos) if info[1:3] != mine[1:3]]
    if differ:
        raise CollectiveMismatchError(
            f"[rank {comm.rank}] persistent all-reduce: the ranks' buffers differ: "
            + "; ".join(f"rank {p}: op {infos[p][2]}, {len(infos[p][1])} buffers "
                        f"{list(infos[p][1])[:4]}{'...' if len(infos[p][1]) > 4 else ''}"
                        for p in sorted({comm.rank, *differ})))
    if not all(info[0] == mine[0] for info in infos):
        # several hosts: shared memory inside each host where a host has several ranks
        topology = host_topology(comm, [info[0] for info in infos])
        if topology is None or max(len(r) for r in topology.hosts.values()) == 1:
            return PersistentAllreduce(comm, specs, op, xp)
        return HierarchicalAllreduce(comm, specs, op, topology)

    offsets, region = _layout(specs)
    results, shared_bytes = _result_layout(specs, region * size)
    total = region * size + shared_bytes
    mapping = shared_mapping(comm, total, "allreduce")
    if mapping is None:
        return PersistentAllreduce(comm, specs, op, xp)
    plan = SharedMemoryAllreduce(comm, specs, op, mapping, region, offsets,
                                 [info[3] for info in infos], results, transient)
    plans = getattr(comm, "_plans", None)
    if plans is not None:
        plans.add(plan)
    return plan


def shared_mapping(comm, nbytes, tag):
    """Collective: one zeroed shared-memory segment of ``nbytes`` mapped by every rank of
    ``comm`` (all on this machine), or None on every rank where any rank could not map it.
    Rank 0 makes it; its name is unlinked once every rank has mapped it (or given up)."""
    path = None
    if comm.rank == 0:
        path = os.path.join(_SHM_DIR, f"tnp-{tag}-{os.getpid()}-{uuid.uuid4().hex[:12]}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, max(int(nbytes), _PAGE))
                # reserve the pages now: a tmpfs too small (a container's 64 MB /dev/shm)
                # fails here, and the caller falls back, instead of a SIGBUS at the first
                # write past its end
                if hasattr(os, "posix_fallocate"):
                    os.posix_fallocate(fd, 0, max(int(nbytes), _PAGE))
            finally:
                os.close(fd)
        except OSError:
            try:
                os.unlink(path)
            except OSError:
                pass
            path = None
    path = comm.broadcast_object(path, root=0)
    mapping = None
    if path is not None:
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                mapping = mmap.mmap(fd, max(int(nbytes), _PAGE))
            finally:
                os.close(fd)
        except OSError:
            mapping = None
    ok = comm.allgather_object(mapping is not None)
    if comm.rank == 0 and path is not None:
        try:    # every rank has mapped it (or given up): the name is no longer needed
            os.unlink(path)
        except OSError:
            pass
    if not all(ok):
        if mapping is not None:
            mapping.close()
        return None
    return mapping


def mark_left(plans):
    """Flag every live plan in ``plans`` (a WeakSet) as left by this rank."""
    for plan in list(plans):
        try:
            plan.mark_left()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass



# -- several hosts -----------------------------------------------------------------------------
class HostTopology:
    """How a communicator's ranks sit on hosts (by hostname, as Open MPI decides "same host"):
    ``hosts`` maps each hostname to its ranks, in order of their lowest rank; ``node`` is an
    :class:`~.mpi.MPICommunicator` over this rank's host, ``bcast`` a second one over the same
    ranks (the broadcasts of the hierarchical plan, in an order of their own), ``leaders`` one
    over the lowest rank of each host (None on the others)."""

    def __init__(self, hosts, node, bcast, leaders):
        self.hosts, self.node, self.bcast, self.leaders = hosts, node, bcast, leaders

    def describe(self):
        def span(ranks):
            return (f"{ranks[0]}-{ranks[-1]}" if ranks == list(range(ranks[0], ranks[-1] + 1))
                    and len(ranks) > 1 else ",".join(map(str, ranks)))
        hosts = ", ".join(f"{h}: ranks {span(r)}" for h, r in self.hosts.items())
        if max(len(r) for r in self.hosts.values()) == 1:
            return f"MPI between {len(self.hosts)} hosts, one rank each ({hosts})"
        return (f"hierarchical across {len(self.hosts)} hosts ({hosts}): shared memory inside "
                f"each host, MPI between the hosts' lowest ranks")


_topologies = {}      # id(comm) -> (comm, its HostTopology), for the life of the job


def host_topology(comm, hostnames):
    """The :class:`HostTopology` of ``comm`` (an MPI communicator's ranks) given every rank's
    hostname; collective the first time (it splits the communicator), cached after; the job's
    rank 0 writes the topology to stderr once. None where ``comm`` is not over MPI."""
    cached = _topologies.get(id(comm))
    if cached is not None and cached[0] is comm:
        return cached[1]
    raw = getattr(comm, "_comm", None)
    if raw is None or not hasattr(raw, "Split"):
        return None
    from .mpi import MPICommunicator, _mpi
    hosts = {}
    for rank, name in enumerate(hostnames):
        hosts.setdefault(name, []).append(rank)
    mine = hostnames[comm.rank]
    color = list(hosts).index(mine)
    leader = hosts[mine][0] == comm.rank
    opts = dict(timeout_seconds=comm.timeout_seconds,
                eager_bytes=getattr(comm, "eager_bytes", None),
                ring_bytes=getattr(comm, "ring_bytes", None))
    node_raw = raw.Split(color, comm.rank)
    lead_raw = raw.Split(0 if leader else _mpi().UNDEFINED, comm.rank)
    node = MPICommunicator(node_raw, **opts)
    bcast = MPICommunicator(node_raw, **opts)
    leaders = MPICommunicator(lead_raw, **opts) if leader else None
    for sub in (node, bcast, leaders):
        if sub is not None:
            # the plan reports each round once, on ``comm``: the parts stay out of the profile
            sub._report = _no_report
    topology = HostTopology(hosts, node, bcast, leaders)
    _topologies[id(comm)] = (comm, topology)
    if comm.rank == 0:
        sys.stderr.write(f"[tnp_train rank 0] all-reduce plan: {topology.describe()}\n")
        sys.stderr.flush()
    return topology


def _no_report(*args):
    pass


class HierarchicalAllreduce(PersistentAllreduce):
    """The plan for ranks on several hosts (see the module's docstring), NCCL's and Horovod's
    hierarchical all-reduce: each round is first summed in shared memory among the ranks of a
    host (a :class:`SharedMemoryAllreduce`), then all-reduced by MPI among one rank per host
    (its lowest), which broadcasts the total to its host's other ranks; only one rank per host
    sends across the network. ``mean`` divides by the whole job's size at the end.

    Each round moves through these stages in the order the buffers were started, on every rank
    (whatever order :meth:`test` is polled in), so the collectives of the communicators
    underneath match across ranks. A result is an array of its own."""

    shared = False

    def __init__(self, comm, specs, op, topology):
        self.comm, self.op = comm, normalize_op(op)
        self.topology = topology
        self._inner = "sum" if self.op == "mean" else self.op
        self._specs = [_spec(s) for s in specs]
        self._node_plan = make_plan(topology.node, self._specs, self._inner)
        n = len(self._specs)
        self._stage = [None] * n      # None idle, 0 summing in the host, 1 between hosts, 2 sent
        self._req = [None] * n
        self._seq = [0] * n
        self._t0 = [0.0] * n
        self._t1 = [0.0] * n
        self._fifo = collections.deque()

    def __len__(self):
        return len(self._specs)

    def buffer(self, i):
        return self._node_plan.buffer(i)

    def acquire(self, i):
        if self._stage[i] is not None:
            raise RuntimeError(f"HierarchicalAllreduce: buffer {i} is still being reduced")
        self._node_plan.acquire(i)

    def start(self, i):
        if self._stage[i] is not None:
            raise RuntimeError(f"HierarchicalAllreduce: buffer {i} was started twice")
        self._t0[i] = now()
        self._seq[i] = self.comm._next_seq()
        self._node_plan.start(i)
        self._stage[i] = 0
        self._fifo.append(i)

    def _advance(self, upto=None):
        """Move the started rounds on, in start order: as far as they can go without waiting,
        or (``upto``) every round up to and including buffer ``upto``, waiting."""
        block = upto is not None
        while self._fifo:
            i = self._fifo[0]
            if self._stage[i] == 0:
                if not block and not self._node_plan.test(i):
                    return
                part = self._node_plan.wait(i)
                self._t1[i] = now()
                leaders = self.topology.leaders
                self._req[i] = (leaders.allreduce_async(part, self._inner)
                                if leaders is not None else part)
                self._stage[i] = 1
            if self._stage[i] == 1:
                req = self._req[i]
                if self.topology.leaders is not None:
                    if not block and not req.test():
                        return
                    total = req.wait()
                else:
                    total = req            # where the host's total is received
                self._req[i] = self.topology.bcast.broadcast_async(total, 0)
                self._stage[i] = 2
                self._fifo.popleft()
            if i == upto:
                return

    def test(self, i):
        if self._stage[i] is None:
            raise RuntimeError(f"HierarchicalAllreduce: buffer {i} was not started")
        self._advance()
        return self._stage[i] == 2 and self._req[i].test()

    def wait(self, i):
        if self._stage[i] is None:
            raise RuntimeError(f"HierarchicalAllreduce: buffer {i} was not started")
        if self._stage[i] != 2:
            self._advance(upto=i)
        req, self._req[i] = self._req[i], None
        out = req.wait()
        self._stage[i] = None
        if self.op == "mean":
            apply_mean(out, self.comm.size)
        count, dtype = self._specs[i]
        self.comm._report("allreduce", self.op, self._seq[i], count * dtype.itemsize,
                          self._t0[i], self._t1[i], now())
        return out

    def cancel(self, i):
        self._node_plan.cancel(i)
        self._stage[i] = self._req[i] = None
        if i in self._fifo:
            self._fifo.remove(i)

    def mark_left(self):
        self._node_plan.mark_left()

    def close(self):
        self._node_plan.close()
        self._fifo.clear()
