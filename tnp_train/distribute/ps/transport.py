"""How frames move between the ranks of a parameter-server job.

:class:`MPITransport` sends each frame as one MPI message on a communicator of its own (an
``Idup`` of ``COMM_WORLD``: tags never meet the user's or the collective layer's traffic).
Sends are ``Isend``\\ s completed by later calls (Open MPI here has no asynchronous progress:
the endpoint's pump calls :meth:`progress` on every turn). Receiving is ``Improbe`` + ``Mrecv``
of whatever arrives from any rank, so a rank that waits sleeps between probes instead of
spinning a core in ``MPI_Recv`` (four processes share two cores here).

Failures: under ULFM (``mpiexec --with-ft ulfm``) a dead peer makes the next ``Improbe`` from
any source raise ``MPI_ERR_PROC_FAILED``; ``Get_failed`` names it and ``Ack_failed`` lets the
probes go on. Without ULFM, Open MPI ends the whole job when a process dies: the survivors get a
SIGTERM, and :func:`install_relaunch_hint` prints why and how to relaunch.

:class:`LocalTransport` moves frames between threads of one process (``ps.local``'s in-process
cluster, for tests and trying things out); :meth:`LocalHub.kill` simulates the loss of a rank.
"""
from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time

from . import wire

__all__ = ["MPITransport", "LocalHub", "LocalTransport", "ulfm_enabled",
           "install_relaunch_hint"]

_TAG = 0x5053          # "PS"


_mpi_module = []


def note_lost(ranks):
    """Record ranks of the job known to be lost (the collective layer then skips
    ``MPI_Finalize`` at exit, see ``collective.mpi._finalize_mpi``)."""
    from ..collective.mpi import note_lost as note
    note(ranks)


def _mpi():
    """``mpi4py.MPI`` through the collective layer (the one place that imports it and owns
    ``MPI_Finalize``)."""
    if not _mpi_module:
        from ..collective.mpi import _mpi as import_mpi
        _mpi_module.append(import_mpi())
    return _mpi_module[0]


def ulfm_enabled():
    """Whether this job was launched with Open MPI's fault tolerance on (``mpiexec --with-ft
    ulfm`` sets ``OMPI_MCA_mpi_ft_enable=1`` in every process)."""
    return os.environ.get("OMPI_MCA_mpi_ft_enable", "").strip().lower() in ("1", "true", "yes")


class MPITransport:
    """Frames over MPI point-to-point on a private communicator (see the module docstring)."""

    def __init__(self, comm=None):
        MPI = self._MPI = _mpi()
        if comm is None:
            comm = _idup(MPI.COMM_WORLD)
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._lock = threading.Lock()
        self._pending = []          # (request, destination, frame)
        self._failed = set()
        self._status = MPI.Status()
        self.ft = ulfm_enabled()

    def send(self, dest, frame):
        """Start sending ``frame`` to ``dest`` (returns at once; :meth:`progress` completes it)."""
        MPI = self._MPI
        with self._lock:
            if dest in self._failed:
                return False
            try:
                req = self._comm.Isend([frame, MPI.BYTE], dest, _TAG)
            except MPI.Exception:
                return False
            self._pending.append((req, dest, frame))
        return True

    @property
    def sending(self):
        return bool(self._pending)

    def progress(self):
        """Complete finished sends; the ranks a send found dead."""
        if not self._pending:
            return ()
        MPI = self._MPI
        lost = []
        with self._lock:
            keep = []
            for req, dest, frame in self._pending:
                try:
                    if not req.Test():
                        keep.append((req, dest, frame))
                except MPI.Exception:
                    if dest not in self._failed:
                        lost.append(dest)
            self._pending = keep
        return self._more_failed(lost) if lost else ()

    def poll(self, wait):
        """One event, or None after sleeping up to ``wait`` seconds: ``("msg", source, frame)``
        or ``("lost", ranks)``."""
        MPI = self._MPI
        with self._lock:
            try:
                msg = self._comm.Improbe(MPI.ANY_SOURCE, _TAG, self._status)
            except MPI.Exception:
                msg = None
                lost = self._ack_failed()
            else:
                lost = None
            if msg is not None:
                src = self._status.Get_source()
                buf = wire.empty(self._status.Get_count(MPI.BYTE))
                try:
                    msg.Recv([buf, MPI.BYTE])
                except MPI.Exception:
                    lost = self._ack_failed() or [src]
                else:
                    return ("msg", src, buf)
        if lost:
            return ("lost", self._more_failed(lost))
        time.sleep(wait)
        return None

    def _ack_failed(self):
        MPI = self._MPI
        try:
            group = self._comm.Get_failed()
            ranks = MPI.Group.Translate_ranks(group, list(range(group.Get_size())),
                                              self._comm.Get_group())
            self._comm.Ack_failed()
        except (MPI.Exception, AttributeError, NotImplementedError):
            return []
        return [r for r in ranks if r is not None and r >= 0]

    @staticmethod
    def note_lost(ranks):
        """Ranks of the job known to be lost, however this process learnt it: it then leaves
        without ``MPI_Finalize`` (see :func:`note_lost`)."""
        note_lost(ranks)

    def _more_failed(self, ranks):
        new = [r for r in ranks if r not in self._failed]
        self._failed.update(new)
        note_lost(new)
        return tuple(new)

    def drain(self, timeout):
        """Wait (sleeping) until every started send has completed, at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self._pending and time.monotonic() < deadline:
            self.progress()
            time.sleep(0.0005)
        return not self._pending


def _idup(comm, warn_after=30.0):
    """A duplicate of ``comm``, waited for by polling with sleeps (``MPI_Comm_dup`` would hold a
    core while the other ranks are still starting). Every rank of the job takes part: the
    chief when it makes the strategy, the others in ``tt.distribute.Server``."""
    from .errors import UnavailableError
    MPI = _mpi()
    new, req = comm.Idup()
    sleep = 0.0002
    t0 = time.monotonic()
    warned = False
    try:
        while not req.Test():
            time.sleep(sleep)
            sleep = min(sleep * 2, 0.01)
            if not warned and time.monotonic() - t0 > warn_after:
                warned = True
                sys.stderr.write(
                    f"[rank {comm.Get_rank()}] tnp_train: still waiting after {warn_after:.0f} s "
                    f"for every rank of the job to start: the chief makes "
                    f"ParameterServerStrategy(resolver), every ps and worker task "
                    f"tt.distribute.Server(resolver)\n")
                sys.stderr.flush()
    except MPI.Exception as e:
        raise UnavailableError(f"a rank of the job was lost before the parameter-server job "
                               f"was set up (MPI: {e})") from None
    return new


# ================================================================ in one process
class LocalHub:
    """The in-process network of a :class:`LocalTransport` per rank."""

    def __init__(self, size):
        self.size = size
        self._queues = [queue.Queue() for _ in range(size)]
        self._dead = set()
        self._lock = threading.Lock()

    def transport(self, rank):
        return LocalTransport(self, rank)

    def kill(self, rank):
        """Simulate the loss of ``rank``: what it sends from now on is dropped, and every other
        rank is told, as ULFM tells the survivors of a process that died."""
        with self._lock:
            if rank in self._dead:
                return
            self._dead.add(rank)
        for r, q in enumerate(self._queues):
            if r != rank:
                q.put(("lost", (rank,)))

    def is_dead(self, rank):
        return rank in self._dead


class LocalTransport:
    """One rank's end of a :class:`LocalHub`."""

    ft = True

    def __init__(self, hub, rank):
        self._hub = hub
        self.rank = rank
        self.size = hub.size

    sending = False

    def send(self, dest, frame):
        hub = self._hub
        if hub.is_dead(self.rank) or hub.is_dead(dest):
            return not hub.is_dead(dest)
        hub._queues[dest].put(("msg", self.rank, frame))
        return True

    def progress(self):
        return ()

    def poll(self, wait):
        try:
            ev = self._hub._queues[self.rank].get(timeout=wait) if wait else \
                self._hub._queues[self.rank].get_nowait()
        except queue.Empty:
            return None
        if self._hub.is_dead(self.rank):
            return None
        return ev

    def drain(self, timeout):
        return True


# ================================================================ without ULFM
_hint_installed = []


def install_relaunch_hint(role):
    """Without ULFM, Open MPI ends the job with a SIGTERM to every survivor when one process
    dies: say so (and how to relaunch) instead of dying silently. Main thread only; no-op under
    ULFM or outside ``mpiexec``."""
    if _hint_installed or ulfm_enabled() or threading.current_thread() is not \
            threading.main_thread():
        return
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "?")

    def on_term(signum, frame):
        sys.stderr.write(
            f"[rank {rank}, {role}] tnp_train: stopped by mpiexec (SIGTERM). Without ULFM, Open "
            f"MPI ends the whole job when one of its processes is lost (or the job is "
            f"interrupted); ParameterServerStrategy survives the loss of a worker only under "
            f"ULFM: relaunch with `mpiexec --with-ft ulfm ...`.\n")
        sys.stderr.flush()
        os._exit(143)

    try:
        signal.signal(signal.SIGTERM, on_term)
    except ValueError:
        return
    _hint_installed.append(role)
