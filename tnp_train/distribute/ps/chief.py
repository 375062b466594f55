"""The chief's side of a parameter-server job: its endpoint, the variables it places on the
servers, and what it does when a rank is lost. One per process (an MPI job duplicates its
communicator once); every ``ParameterServerStrategy`` of the process shares it."""
from __future__ import annotations

import atexit
import contextlib
import threading

import numpy as _np

from . import wire
from .endpoint import Endpoint
from .errors import UnavailableError
from .pickling import dumps_plain
from .variables import (PSVariable, ShardedVariable, VariableClient, _Handle, host_array,
                        install_listener, release_listener, split_rows)

__all__ = ["ChiefRuntime", "ChiefClient", "chief_runtime"]


class ChiefClient(VariableClient):
    """The chief's variable client: updates are waited for, one by one."""

    def __init__(self, runtime, endpoint, ps_ranks):
        super().__init__(endpoint, ps_ranks, sync_updates=True)
        self.runtime = runtime

    def worker_strategy(self):
        raise RuntimeError("a ParameterServerStrategy was unpickled on the chief")

    def per_worker(self, kind, payload):
        raise RuntimeError("a per-worker value was unpickled on the chief")


class ChiefRuntime:
    """The chief of a job whose ``transport`` reaches the ``ps_ranks`` and ``worker_ranks``
    (``worker_ranks[i]`` is task ``worker:i``)."""

    def __init__(self, transport, ps_ranks, worker_ranks, register_exit=True):
        self.transport = transport
        self.ps_ranks = list(ps_ranks)
        self.worker_ranks = list(worker_ranks)
        self.endpoint = Endpoint(transport, self, "chief")
        self.client = ChiefClient(self, self.endpoint, self.ps_ranks)
        self.dispatcher = None            # the coordinator's, once there is one
        self.fatal = None                 # UnavailableError once a server is lost
        self.lost_workers = []
        self._lock = threading.Lock()
        self._next_key = 0
        self._next_ps = 0
        self._by_name = {}                # variable name -> the latest PSVariable of that name
        self._colocate = threading.local()
        self._closed = False
        install_listener()
        self.endpoint.start()
        if register_exit:
            atexit.register(self.shutdown)

    # ------------------------------------------------------------------ names
    def rank_name(self, rank):
        if rank in self.ps_ranks:
            return f"ps:{self.ps_ranks.index(rank)} (rank {rank})"
        if rank in self.worker_ranks:
            return f"worker:{self.worker_ranks.index(rank)} (rank {rank})"
        return f"rank {rank}"

    # ------------------------------------------------------------------ the endpoint's handler
    def on_message(self, src, header, buffers):
        op = header.get("op")
        if op == "result" and self.dispatcher is not None:
            self.dispatcher.on_result(src, header, buffers)

    def expecting(self):
        """Whether a closure's result is awaited (the pump then polls more often)."""
        d = self.dispatcher
        return d is not None and d.in_flight()

    def on_lost(self, rank):
        if rank in self.ps_ranks:
            if self.fatal is None:
                self.fatal = UnavailableError(
                    f"parameter server {self.rank_name(rank)} was lost: the variables it held "
                    f"are gone, so the job cannot go on (TF raises UnavailableError); restart "
                    f"it from a checkpoint")
            if self.dispatcher is not None:
                self.dispatcher.on_fatal(self.fatal)
        elif rank in self.worker_ranks:
            self.lost_workers.append(rank)
            if self.dispatcher is not None:
                self.dispatcher.on_worker_lost(rank)

    def on_pump_crash(self, text):
        err = UnavailableError(f"the chief's receiving thread failed:\n{text}")
        self.fatal = self.fatal or err
        if self.dispatcher is not None:
            self.dispatcher.on_fatal(self.fatal)

    def check(self):
        if self.fatal is not None:
            raise self.fatal

    # ------------------------------------------------------------------ placing variables
    @contextlib.contextmanager
    def colocate(self, var):
        """Variables made in the block live with ``var`` (an optimizer's slots: an update
        writes its variable and its slots on one server), split as ``var`` is."""
        old = getattr(self._colocate, "var", None)
        self._colocate.var = var
        try:
            yield
        finally:
            self._colocate.var = old

    def _parent_of(self, v0):
        """The variable ``v0`` is to live with: the :meth:`colocate` block's, else (a slot an
        optimizer makes outside the coordinator, named ``<variable>/<slot>``) the variable of
        that name."""
        parent = getattr(self._colocate, "var", None)
        if parent is not None:
            return parent, True
        name = v0.name
        if not v0.trainable and "/" in name:
            parent = self._by_name.get(name.rsplit("/", 1)[0])
            if parent is not None and parent.trainable:
                return parent, True
        return None, False

    def _pick_ps(self):
        with self._lock:
            rank = self.ps_ranks[self._next_ps % len(self.ps_ranks)]
            self._next_ps += 1
            return rank

    def _new_key(self):
        with self._lock:
            self._next_key += 1
            return self._next_key

    def host(self, v0, num_shards=1):
        """A server-held variable with ``v0``'s value and metadata (``v0``, a plain Variable
        just made by the creator chain, is dropped); split into ``num_shards`` along its first
        axis when that is more than one."""
        self.check()
        parent, slot = self._parent_of(v0)
        value = _np.array(host_array(v0), copy=True)
        if parent is not None and tuple(parent.shape) == tuple(v0.shape) and \
                parent._ps.shards is not None:
            bounds = [(lo, hi) for lo, hi, _ in parent._ps.shards]
            ranks = [s._ps.ps for _, _, s in parent._ps.shards]
        elif parent is not None:
            bounds = None
            ranks = [parent._ps.parts()[0][0]]
        elif num_shards > 1 and value.ndim >= 1 and value.shape[0] > 1:
            bounds = split_rows(value.shape[0], min(num_shards, value.shape[0]))
            ranks = [self._pick_ps() for _ in bounds]
        else:
            bounds = None
            ranks = [self._pick_ps()]
        if bounds is None:
            v = self._create(PSVariable, v0, value, v0.name, ranks[0], slot)
        else:
            shards = []
            for i, ((lo, hi), rank) in enumerate(zip(bounds, ranks)):
                s = self._create(PSVariable, v0, value[lo:hi], f"{v0.name}/part_{i}", rank, slot)
                shards.append((lo, hi, s))
            v = self._handle(ShardedVariable, v0, value, v0.name,
                             _Handle(self.client, self._new_key(), None, slot, shards))
        self._by_name[v0.name] = v
        return v

    def _handle(self, cls, v0, value, name, handle):
        v = cls(value, trainable=v0.trainable, name=name, dtype=v0.dtype,
                aggregation=v0.aggregation, synchronization=v0.synchronization,
                constraint=v0.constraint, device=v0.device)
        v._ps = handle
        handle.fetched = self.client.epoch
        self.client.handles[handle.key] = v
        return v

    def _create(self, cls, v0, value, name, rank, slot):
        key = self._new_key()
        frame = wire.Frame({"op": "create", "key": key, "name": name, "trainable": v0.trainable,
                            "aggregation": v0.aggregation.name,
                            "synchronization": v0.synchronization.name})
        frame.header["value"] = frame.add_array(value)
        if v0.constraint is not None:
            frame.header["constraint"] = frame.add_pickle(dumps_plain(v0.constraint))
        fut = self.endpoint.request(rank, frame)
        header, _ = self.client._wait(fut, rank, f"the creation of variable '{name}'")
        if header.get("error"):
            from .variables import _remote_error
            raise _remote_error(header, f"creating variable '{name}' on parameter server "
                                        f"{self.rank_name(rank)}")
        return self._handle(cls, v0, value, name, _Handle(self.client, key, rank, slot))

    # ------------------------------------------------------------------ reading everything
    def refresh_all(self):
        """Fetch every variable whose cache is stale (after ``join``: buffers read directly,
        as a checkpoint does, then hold the values of the end of the work)."""
        self.client.ensure_fresh(list(self.client.handles.values()))

    def query(self, op):
        """Ask every live server ``op`` ("counts", "stats"); ``{ps rank: header}``."""
        futures = {r: self.endpoint.request(r, wire.Frame({"op": op}))
                   for r in self.ps_ranks if r not in self.endpoint.lost}
        return {r: self.client._wait(f, r, op)[0] for r, f in futures.items()}

    # ------------------------------------------------------------------ the end
    def shutdown(self):
        """Tell every server and worker the job is over (their ``join()`` returns); the sends
        are completed before MPI is finalized."""
        if self._closed:
            return
        self._closed = True
        if self.dispatcher is not None:
            self.dispatcher.close()
        self.endpoint.stop()
        release_listener()
        # the ranks lost: a rank that did not see a loss itself must know of it too (it then
        # leaves without MPI_Finalize, see collective.mpi._finalize_mpi)
        frame = wire.Frame({"op": "shutdown", "lost": sorted(self.endpoint.lost)}).encode()
        for r in self.ps_ranks + self.worker_ranks:
            if r not in self.endpoint.lost:
                self.transport.send(r, frame)
        self.transport.drain(5.0)


_runtime = []
_runtime_lock = threading.Lock()


def chief_runtime(resolver_info):
    """The process's chief runtime over MPI (made once: duplicating the communicator is a
    collective that every rank makes once)."""
    with _runtime_lock:
        if _runtime:
            rt = _runtime[0]
            if rt.ps_ranks != resolver_info["ps"] or rt.worker_ranks != resolver_info["worker"]:
                raise ValueError("ParameterServerStrategy: this process already runs the chief "
                                 f"of a job with ps ranks {rt.ps_ranks} and worker ranks "
                                 f"{rt.worker_ranks}; a second strategy must describe the same "
                                 f"cluster")
            return rt
        from .transport import MPITransport, install_relaunch_hint
        transport = MPITransport()
        install_relaunch_hint("chief")
        rt = ChiefRuntime(transport, resolver_info["ps"], resolver_info["worker"])
        _runtime.append(rt)
        return rt

