"""``get_world``: the job's communicator, MPI under ``mpiexec`` and a size-1 group otherwise."""
from __future__ import annotations

import threading

from .local import LocalCommunicator
from .mpi import launched_by_mpi

__all__ = ["get_world", "replace_world"]

_lock = threading.Lock()
_world = None


def get_world(options=None):
    """The communicator of every process of this job: an ``MPICommunicator`` over
    ``COMM_WORLD`` when started by ``mpiexec`` (mpi4py is imported only then), else a
    :class:`LocalCommunicator`. One per process; ``options`` (a ``CommunicationOptions``)
    sets its timeout. Under a launcher with more than one rank, an uncaught exception on any
    rank then aborts the whole job."""
    global _world
    with _lock:
        if _world is None:
            if launched_by_mpi():
                from .mpi import MPICommunicator, install_excepthook
                world = MPICommunicator(options=options)
                if world.size > 1:
                    install_excepthook(world)
            else:
                world = LocalCommunicator(options)
            _world = world
        elif options is not None:
            _world.set_options(options)
        return _world


def replace_world(comm):
    """Make ``comm`` the job's communicator (the survivors' after a lost worker)."""
    global _world
    with _lock:
        _world = comm
