"""Elastic synchronous training: a ``MultiWorkerMirroredStrategy`` job that loses a worker goes
on with the survivors (no anchor does this: TF's strategy, torchrun and Horovod elastic restart
or roll back).

Opt in with :func:`enable_elastic_training` and launch under Open MPI's ULFM
(``mpiexec --with-ft ulfm -n N python train.py``). When a rank dies, the collective it was in
fails on every survivor within milliseconds (ULFM reports the failure and the communicator is
revoked, see ``collective.mpi``); ``fit`` then

1. shrinks the communicator to the survivors (ranks renumbered in their old order; the new
   rank 0 is the chief),
2. makes the survivors agree on the model: the new chief's weights and optimizer state go to
   every survivor, with whether the interrupted step's update had been applied there (a rank
   can fail after the update, in the metrics' collective),
3. redoes the interrupted step if it was not applied, on the same global batch split over the
   survivors, and shards the rest of the epoch over them: the global batch and the learning
   rate stay, each survivor's share grows, so the weights are those of one process on the same
   data;
4. tells the callbacks (``Callback.on_workers_changed``) and the listeners of
   :func:`subscribe` the old and new worker counts and the old ranks lost: those the shrink
   left out, the same list on every survivor (not what each survivor's failure detector had
   seen, which can be nothing on one told of the death by a peer's revoke).

What is lost is the dead worker's share of the epoch's metric state (its counts of the epoch
so far). Inputs that can be re-split: arrays, generators, and datasets under
``AutoShardPolicy.DATA``. Without ULFM a dead process still ends the whole job (Open MPI's
default), and without the opt-in a lost worker is an error that ends it.
"""
from __future__ import annotations

import threading

from tnp.extend import backend_array

__all__ = ["enable_elastic_training", "subscribe", "is_elastic"]

_listeners = []
_lock = threading.Lock()


class _Elastic:
    __slots__ = ("min_workers", "changes")

    def __init__(self, min_workers):
        self.min_workers = min_workers
        self.changes = []


def enable_elastic_training(strategy, min_workers=1):
    """Make ``strategy`` (a ``MultiWorkerMirroredStrategy``) survive lost workers as long as
    ``min_workers`` remain; returns it. Every worker must make the same call."""
    from .collective_all_reduce_strategy import MultiWorkerMirroredStrategy
    if not isinstance(strategy, MultiWorkerMirroredStrategy):
        raise TypeError(f"enable_elastic_training: needs a MultiWorkerMirroredStrategy, got "
                        f"{type(strategy).__name__}")
    if isinstance(min_workers, bool) or not isinstance(min_workers, int) or min_workers < 1:
        raise ValueError(f"enable_elastic_training: min_workers must be an int >= 1, got "
                         f"{min_workers!r}")
    # a dead peer is noticed only inside MPI calls (ULFM): no shared-memory gradient plans
    from .collective.shm import set_shared_memory
    set_shared_memory(False)
    strategy.extended.elastic = _Elastic(min_workers)
    return strategy


def is_elastic(strategy):
    """Whether ``strategy`` survives lost workers (:func:`enable_elastic_training`)."""
    return strategy.extended.elastic is not None


def subscribe(fn):
    """Call ``fn(old_workers, new_workers, lost)`` whenever an elastic job loses workers
    (``lost``: a tuple of the ranks, numbered as before the loss, that are gone); returns a
    function that unsubscribes."""
    with _lock:
        _listeners.append(fn)

    def remove():
        with _lock:
            if fn in _listeners:
                _listeners.remove(fn)
    return remove


def _broadcast_into(a, comm):
    if a.size:
        flat = a.copy().reshape(-1)
        a[...] = comm.broadcast(flat.view("uint8"), root=0).view(a.dtype).reshape(a.shape)


def recover(strategy, error, variables, applied_here):
    """After ``error`` (a ``CollectiveWorkerLostError``): shrink to the survivors, give every
    survivor the new chief's ``variables``; returns ``(old, new, applied)``, ``applied`` being
    whether the chief had applied the interrupted step's update. ``error.lost`` becomes the
    old ranks the shrink left out, so every survivor reports the same ones."""
    ext = strategy.extended
    state = ext.elastic
    old = ext.num_workers
    survivors = ext.worker_communicator.shrink()
    # What this rank detected can be nothing at all (it learnt of the death from a peer's
    # revoke before its own failure detector saw it) or fewer ranks than died; the shrink is
    # the same on every survivor. Put in the error, since fit's on_workers_changed logs read it
    # there.
    error.lost = tuple(survivors.lost_at_shrink)
    ext.rebind_workers(survivors)
    new = ext.num_workers
    if new < state.min_workers:
        raise RuntimeError(f"elastic training: {new} worker(s) left after losing "
                           f"{list(error.lost)}, fewer than min_workers="
                           f"{state.min_workers}") from error
    comm = ext.worker_communicator
    applied = bool(comm.broadcast_object(bool(applied_here), root=0))
    for v in variables:
        v.update(_broadcast_into, comm, constrain=False)
    state.changes.append((old, new, tuple(error.lost)))
    with _lock:
        listeners = list(_listeners)
    for fn in listeners:
        fn(old, new, tuple(error.lost))
    return old, new, applied


def step_counter(model):
    """The optimizer's ``iterations`` now (whether a step's update was applied)."""
    opt = getattr(model, "optimizer", None)
    it = getattr(opt, "iterations", None)
    return None if it is None else int(backend_array(it))
