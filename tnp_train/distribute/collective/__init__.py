"""The collective layer: all-reduce, all-gather and broadcast over MPI or threads, gradient
buckets that overlap the backward pass, and jobs that fail with an error instead of hanging.

Framework-free (Horovod's core is the model): arrays are ``numpy.ndarray`` (or
``cupy.ndarray``); nothing here imports tnp or tnp_train, and mpi4py is imported only when a
job runs under ``mpiexec``.
"""
from .base import (
    CollectiveError, CollectiveMismatchError, CollectivePeerExitError, CollectiveStallWarning,
    CollectiveTimeoutError, CollectiveWorkerLostError, Communicator, Request,
)
from .buckets import GradientBucketer
from .events import Subscription, subscribe
from .hierarchical import HierarchicalCommunicator
from .local import LocalCommunicator, ThreadGroup
from .mpi import MPICommunicator
from .world import get_world, replace_world

__all__ = ["Communicator", "Request", "get_world", "LocalCommunicator", "ThreadGroup",
           "MPICommunicator", "HierarchicalCommunicator", "CollectiveError",
           "CollectiveTimeoutError", "CollectiveMismatchError", "CollectivePeerExitError",
           "CollectiveStallWarning", "CollectiveWorkerLostError", "subscribe", "Subscription",
           "GradientBucketer", "replace_world"]

