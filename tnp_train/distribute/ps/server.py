"""The ``ps`` and ``worker`` tasks of a parameter-server job, and ``tt.distribute.Server``.

A **parameter server** keeps the variables the chief placed on it (plain ``tt.Variable``\\ s in
its own process) and serves requests one at a time on its receiving thread: ``create``,
``read`` (a snapshot of some variables), ``update`` (``fn`` applied through the variable's
``update``: atomic, since nothing else runs meanwhile), ``flush`` (answered once the sender's
earlier updates are applied; with the errors they met), ``counts`` (updates applied per closure
attempt, for checking at-least-once accounting) and ``stats``.

A **worker** runs the closures the chief sends, one at a time on its executor thread: it keeps
the functions it was sent (by id: a function travels once per worker), makes its per-worker
datasets and iterators on first use, fetches the variables a closure refers to, runs it in the
strategy's scope, waits for its updates to be applied, and sends back the result or the error.

Both leave when the chief says the job is over (``join()`` returns), and exit by themselves
when the chief is lost (the process ends, exit status 1): under ULFM the failure is seen within
a second; without it Open MPI ends the job anyway.
"""
from __future__ import annotations

import collections
import inspect
import os
import queue
import sys
import threading
import time
import traceback

import numpy as _np

import tnp
from tnp.extend import device_of

from ...autodiff import Variable
from ...utils.random import replica_draws
from . import wire
from .endpoint import Endpoint
from .pickling import dumps, loads
from .transport import note_lost
from .variables import (VariableClient, client_scope, host_array, install_listener,
                        release_listener)

__all__ = ["ParameterServer", "WorkerServer", "Server"]

_FN_CACHE = 256          # functions a worker keeps (the chief tracks fewer, so never more)


def _error_fields(exc):
    return {"error": str(exc), "etype": type(exc).__name__}


def _leave(role, why):
    """End this process now (MPI is not finalized: the peer it would wait for is gone)."""
    sys.stderr.write(f"[tnp_train {role}, rank {os.environ.get('OMPI_COMM_WORLD_RANK', '?')}] "
                     f"{why}; exiting\n")
    sys.stderr.flush()
    os._exit(1)


# ================================================================ parameter server
class ParameterServer:
    """The ``ps`` task (see the module docstring). ``on_chief_lost`` runs when the chief is
    lost (default: end the process)."""

    def __init__(self, transport, chief_rank=0, name="ps:0", on_chief_lost=None):
        self.name = name
        self.chief_rank = chief_rank
        self.store = {}                   # key -> Variable
        self.names = {}                   # key -> name
        self.counts = {}                  # attempt ("cid:att" or "chief") -> {key: updates}
        self.updates = 0
        self.update_seconds = 0.0
        self.reads = 0
        self._errors = collections.defaultdict(list)   # source rank -> unreported errors
        self._fns = {}
        self.done = threading.Event()
        self._on_chief_lost = on_chief_lost or (lambda: _leave(self.name, "the chief was lost"))
        self.endpoint = Endpoint(transport, self, name)

    def start(self):
        self.endpoint.start()
        return self

    # ------------------------------------------------------------------ requests
    def on_message(self, src, header, buffers):
        op = header.get("op")
        handler = getattr(self, f"_op_{op}", None)
        if handler is None:
            self._answer(src, header, {"error": f"unknown request {op!r}", "etype": "ValueError"})
            return
        try:
            handler(src, header, buffers)
        except Exception as e:          # a bad request: said to the sender, the server goes on
            if op == "update" and not header.get("ack"):
                self._errors[src].append(_error_fields(e))
            else:
                self._answer(src, header, _error_fields(e))

    def _answer(self, src, header, fields, frame=None):
        if "id" not in header:
            return
        frame = frame or wire.Frame({})
        frame.header.update(fields)
        self.endpoint.reply(src, header, frame)

    def _op_create(self, src, header, buffers):
        key = header["key"]
        value = wire.array_from(header["value"], buffers)
        constraint = None
        if header.get("constraint"):
            constraint = wire.pickle_from(header["constraint"], buffers, loads)
        self.store[key] = Variable(_np.array(value, copy=True), trainable=header["trainable"],
                                   name=header["name"], dtype=value.dtype,
                                   aggregation=header["aggregation"],
                                   synchronization=header["synchronization"],
                                   constraint=constraint)
        self.names[key] = header["name"]
        self._answer(src, header, {"ok": True})

    def _var(self, key):
        v = self.store.get(key)
        if v is None:
            raise KeyError(f"parameter server {self.name} holds no variable with key {key}")
        return v

    def _op_read(self, src, header, buffers):
        frame = wire.Frame({"keys": header["keys"]})
        frame.header["arrays"] = [frame.add_array(host_array(self._var(k)))
                                  for k in header["keys"]]
        self.reads += 1
        self._answer(src, header, {}, frame)

    def _fn(self, entry, buffers):
        raw = bytes(buffers[entry["p"]])
        fn = self._fns.get(raw)
        if fn is None:
            fn = loads(raw)
            if len(self._fns) >= 1024:
                self._fns.clear()
            self._fns[raw] = fn
        return fn

    def _arg(self, entry, buffers, device):
        if "j" in entry:
            return entry["j"]
        if "v" in entry:
            return self._var(entry["v"])
        if "a" in entry:
            a = wire.array_from(entry, buffers)
            return tnp.asarray(a, device=device) if device.is_gpu else a
        return wire.pickle_from(entry, buffers, loads)

    def _op_update(self, src, header, buffers):
        t0 = time.perf_counter()
        var = self._var(header["key"])
        fn = self._fn(header["fn"], buffers)
        dev = device_of(var)
        args = [self._arg(e, buffers, dev) for e in header["args"]]
        var.update(fn, *args, constrain=header.get("c", True))
        self.updates += 1
        self.update_seconds += time.perf_counter() - t0
        att = header.get("att")
        tag = "chief" if att is None else f"{att[0]}:{att[1]}"
        per = self.counts.get(tag)
        if per is None:
            per = self.counts[tag] = {}
        per[header["key"]] = per.get(header["key"], 0) + 1
        if header.get("ack"):
            # the writer gets back what it wrote (the variable and the variables among the
            # arguments, as they are now)
            keys = [header["key"]] + [e["v"] for e in header["args"] if "v" in e]
            frame = wire.Frame({"keys": keys})
            frame.header["arrays"] = [frame.add_array(host_array(self._var(k))) for k in keys]
            self._answer(src, header, {"ok": True}, frame)

    def _op_flush(self, src, header, buffers):
        errors = self._errors.pop(src, None)
        self._answer(src, header, errors[0] if errors else {"ok": True})

    def _op_counts(self, src, header, buffers):
        self._answer(src, header, {"counts": self.counts,
                                   "names": {str(k): n for k, n in self.names.items()}})

    def _op_stats(self, src, header, buffers):
        self._answer(src, header, {"updates": self.updates, "seconds": self.update_seconds,
                                   "reads": self.reads, "variables": len(self.store)})

    def _op_shutdown(self, src, header, buffers):
        note_lost(header.get("lost", ()))
        self.done.set()
        self.endpoint.stop()

    # ------------------------------------------------------------------ failures
    def on_lost(self, rank):
        if rank == self.chief_rank:
            self.done.set()
            self._on_chief_lost()

    def on_pump_crash(self, text):
        _crash_exit(self.name)


def _crash_exit(role):
    """This rank cannot go on (its receiving or executing thread failed): under ULFM it
    leaves as a lost process (SIGKILL), which the job survives when it is a worker; without
    ULFM Open MPI then ends the job."""
    sys.stderr.write(f"[tnp_train {role}] cannot go on; leaving the job\n")
    sys.stderr.flush()
    from .transport import ulfm_enabled
    if ulfm_enabled():
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(1)


# ================================================================ worker
class WorkerClient(VariableClient):
    """A worker's variable client: per-worker resources and the worker's strategy."""

    def __init__(self, worker, endpoint, ps_ranks):
        super().__init__(endpoint, ps_ranks, sync_updates=False,
                         stop=lambda: worker.done.is_set())
        self.worker = worker

    def worker_strategy(self):
        return self.worker.strategy()

    def per_worker(self, kind, payload):
        if kind == "values":
            values = tuple(payload)
            if self.worker.task_id >= len(values):
                raise ValueError(f"PerWorkerValues of {len(values)} values used on worker "
                                 f"{self.worker.task_id}")
            return values[self.worker.task_id]
        return self.worker.resource(payload)


class WorkerServer:
    """The ``worker`` task (see the module docstring)."""

    def __init__(self, transport, task_id, num_workers, ps_ranks, chief_rank=0,
                 on_chief_lost=None):
        self.task_id = task_id
        self.num_workers = num_workers
        self.chief_rank = chief_rank
        self.name = f"worker:{task_id}"
        self.done = threading.Event()
        self.endpoint = Endpoint(transport, self, self.name)
        self.client = WorkerClient(self, self.endpoint, ps_ranks)
        self._queue = queue.Queue()
        self._functions = collections.OrderedDict()    # fid -> (fn, handle keys)
        self._defs = {}                                # resource id -> definition
        self._resources = {}                           # resource id -> object
        self._strategy = None
        self._on_chief_lost = on_chief_lost or (lambda: _leave(self.name, "the chief was lost"))
        self._executor = threading.Thread(target=self._serve, name=f"tnp-ps-{self.name}-exec",
                                          daemon=True)
        self.closures_run = 0

    def start(self):
        install_listener()
        self.endpoint.start()
        self._executor.start()
        return self

    # ------------------------------------------------------------------ the endpoint's handler
    def on_message(self, src, header, buffers):
        op = header.get("op")
        if op == "run":
            self._queue.put((header, buffers))
        elif op == "shutdown":
            note_lost(header.get("lost", ()))
            self.done.set()
            self._queue.put(None)
            self.endpoint.stop()

    def on_lost(self, rank):
        if rank == self.chief_rank:
            self.done.set()
            self._queue.put(None)
            self._on_chief_lost()

    def on_pump_crash(self, text):
        _crash_exit(self.name)

    # ------------------------------------------------------------------ what closures use
    def strategy(self):
        if self._strategy is None:
            from .strategy import ParameterServerStrategy
            self._strategy = ParameterServerStrategy._for_worker(self)
        return self._strategy

    def resource(self, rid):
        obj = self._resources.get(rid)
        if obj is not None:
            return obj
        d = self._defs.get(rid)
        if d is None:
            raise RuntimeError(f"worker {self.task_id}: per-worker resource {rid} was never "
                               f"defined here")
        kind, payload = d
        if kind == "dataset":
            fn = payload
            obj = _call_dataset_fn(fn, self.task_id, self.num_workers)
        elif kind == "iterator":
            obj = iter(self.resource(payload))
        else:
            raise RuntimeError(f"unknown per-worker resource kind {kind!r}")
        self._resources[rid] = obj
        return obj

    # ------------------------------------------------------------------ the executor
    def _serve(self):
        try:
            while True:
                item = self._queue.get()
                if item is None or self.done.is_set():
                    return
                self._run(*item)
        except BaseException:
            traceback.print_exc()
            _crash_exit(self.name)
        finally:
            release_listener()

    def _define(self, header, buffers):
        for d in header.get("defs", ()):
            rid = d["rid"]
            if d["kind"] == "dataset":
                fn = wire.pickle_from(d["fn"], buffers, loads)
                self._defs[rid] = ("dataset", fn)
            else:
                self._defs[rid] = ("iterator", d["of"])
        fid = header["fid"]
        if "fn" in header:
            client = self.client
            client.seen = set()
            try:
                entry = (wire.pickle_from(header["fn"], buffers, loads), client.seen)
            except Exception as e:
                # kept: the chief sends a function once, every later closure of it fails alike
                entry = (None, e)
            finally:
                client.seen = None
            self._functions[fid] = entry
            while len(self._functions) > _FN_CACHE:
                self._functions.popitem(last=False)
        entry = self._functions.get(fid)
        if entry is None:
            raise RuntimeError(f"worker {self.task_id}: function {fid} was never sent here")
        self._functions.move_to_end(fid)
        if entry[0] is None:
            raise entry[1]
        return entry

    def _run(self, header, buffers):
        cid, att = header["cid"], header["att"]
        client = self.client
        client.attempt = (cid, att)
        t0 = time.perf_counter()
        frame = wire.Frame({"op": "result", "cid": cid, "att": att})
        strategy = self.strategy()
        try:
            # unpickled in the strategy's scope too: a module imported to find a function
            # that made variables at import would make them here, on the worker, where they
            # would train a private copy; the scope's creator refuses them
            with client_scope(client), strategy.scope():
                fn, fn_keys = self._define(header, buffers)
                client.seen = set()
                try:
                    args, kwargs = wire.pickle_from(header["args"], buffers, loads)
                    keys = client.seen | fn_keys
                finally:
                    client.seen = None
                client.new_epoch()
                handles = [client.handles[k] for k in keys]
                client.ensure_fresh([v for v in handles if not v._ps.slot])
                # workers seeded alike must not draw the same dropout masks: their per-sample
                # draws mix in the worker's id (tt.utils.random.replica_draws)
                with replica_draws(self.task_id, self.num_workers):
                    result = fn(*args, **kwargs)
            client.flush()
            stream, oob, _ = dumps(result, where="a scheduled function's result")
            frame.header["ok"] = True
            frame.header["value"] = frame.add_pickle(stream, oob)
        except BaseException as e:          # the closure's error goes to the chief
            text = traceback.format_exc()
            try:
                client.flush()
            except BaseException:
                pass
            frame = wire.Frame({"op": "result", "cid": cid, "att": att, "ok": False,
                                "tb": text, "etype": type(e).__name__, "error": str(e)})
            lost = getattr(e, "lost_rank", None)
            if lost is not None:
                frame.header["lost"] = lost
            try:
                stream, oob, _ = dumps(e, where="a scheduled function's error")
                frame.header["exc"] = frame.add_pickle(stream, oob)
            except BaseException:
                pass
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            client.attempt = None
        frame.header["seconds"] = time.perf_counter() - t0
        self.closures_run += 1
        if not self.done.is_set():
            self.endpoint.send_frame(self.chief_rank, frame)


def _call_dataset_fn(fn, task_id, num_workers):
    """``dataset_fn()``, or ``dataset_fn(input_context)`` when it takes an argument (TF 2.5+:
    one input pipeline per worker)."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if params:
        from ..input_options import InputContext
        return fn(InputContext(num_input_pipelines=num_workers, input_pipeline_id=task_id,
                               num_replicas_in_sync=1))
    return fn()


# ================================================================ tt.distribute.Server
_JOB_ORDER = ("chief", "ps", "worker")


def _roles_from_spec(spec):
    """``(ps ranks, worker ranks, {(job, task): rank})`` of a cluster whose ranks follow the
    MPI layout of ``MPIClusterResolver(num_ps=...)``: the chief, then the ps tasks, then the
    workers (an address ``mpi-rank-N`` names its rank outright)."""
    d = spec.as_dict() if hasattr(spec, "as_dict") else dict(spec)
    jobs = set(d)
    # an evaluator runs beside the job, as a process of its own: it is no rank of it
    if "ps" not in jobs or "worker" not in jobs or jobs - set(_JOB_ORDER) - {"evaluator"}:
        raise ValueError(f"Server: a parameter-server cluster has jobs 'chief', 'ps' and "
                         f"'worker' (got {sorted(jobs)}); build it with "
                         f"MPIClusterResolver(num_ps=...)")
    ranks = {}
    next_rank = 0
    for job in _JOB_ORDER:
        tasks = d.get(job, [])
        items = tasks.items() if isinstance(tasks, dict) else enumerate(tasks)
        for task, address in sorted(items):
            rank = next_rank
            if isinstance(address, str) and address.startswith("mpi-rank-"):
                rank = int(address[len("mpi-rank-"):])
            ranks[(job, int(task))] = rank
            next_rank += 1
    ps = [ranks[k] for k in sorted(k for k in ranks if k[0] == "ps")]
    workers = [ranks[k] for k in sorted(k for k in ranks if k[0] == "worker")]
    return ps, workers, ranks


class Server:
    """Mirrors ``tf.distribute.Server(server_or_cluster_def, job_name=None, task_index=None,
    protocol=None, config=None, start=True)`` for the ``ps`` and ``worker`` tasks of a
    parameter-server job launched by ``mpiexec``; also ``Server(cluster_resolver)``.

    ``server_or_cluster_def`` is a ``ClusterSpec`` (or its dict) laid out as
    ``MPIClusterResolver(num_ps=...)`` lays out the ranks (the chief, the ps tasks, then the
    workers), with ``job_name``/``task_index`` naming this process's task, which must be its
    rank; or a cluster resolver (its task). There is no gRPC server: MPI carries the traffic, so
    ``protocol`` may be None, ``"mpi"`` or ``"grpc"`` (taken as MPI) and ``config`` is ignored.
    :meth:`join` serves until the chief ends, then returns; if the chief is lost, the process
    exits by itself (status 1)."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True):
        from ..cluster_resolver import ClusterResolver, ClusterSpec
        from ..cluster_resolver.mpi_agreement import check_against_mpi, source_name
        from ..cluster_resolver.mpi_cluster_resolver import rank_and_size_from_env
        if protocol not in (None, "mpi", "grpc"):
            raise ValueError(f"Server: protocol must be None, 'mpi' or 'grpc' (MPI carries the "
                             f"traffic either way), got {protocol!r}")
        source = "the cluster spec"
        if isinstance(server_or_cluster_def, ClusterResolver):
            resolver = server_or_cluster_def
            source = source_name(resolver)
            spec = resolver.cluster_spec()
            job_name = resolver.task_type if job_name is None else job_name
            task_index = resolver.task_id if task_index is None else task_index
        elif isinstance(server_or_cluster_def, (ClusterSpec, dict)):
            spec = ClusterSpec(server_or_cluster_def)
            from ..cluster_resolver import TFConfigClusterResolver
            if spec and TFConfigClusterResolver().cluster_spec() == spec:
                source = "TF_CONFIG"         # TF's tutorial passes its cluster on
        else:
            raise TypeError(f"Server: expected a ClusterSpec, a dict or a cluster resolver, got "
                            f"{type(server_or_cluster_def).__name__}")
        if job_name is None or task_index is None:
            raise ValueError("Server: job_name and task_index are required with a cluster spec")
        if job_name not in ("ps", "worker"):
            raise ValueError(f"Server: job {job_name!r} does not run a server: the 'chief' task "
                             f"runs ParameterServerStrategy and the ClusterCoordinator; only "
                             f"'ps' and 'worker' tasks serve")
        ps, workers, ranks = _roles_from_spec(spec)
        task_index = int(task_index)
        if (job_name, task_index) not in ranks:
            raise ValueError(f"Server: no task {job_name}:{task_index} in the cluster "
                             f"{spec.as_dict() if hasattr(spec, 'as_dict') else spec}")
        rank = ranks[(job_name, task_index)]
        my_rank, size = rank_and_size_from_env()
        check_against_mpi("Server", source, f"{job_name}:{task_index}", rank, len(ranks),
                          my_rank, size)
        self._job, self._task, self._rank = job_name, task_index, rank
        self._ps, self._workers = ps, workers
        self._chief = ranks.get(("chief", 0), 0)
        self._protocol = protocol or "mpi"
        self._node = None
        if start:
            self.start()

    @property
    def target(self):
        """The task's address as TF writes a target (``"mpi://mpi-rank-N"``)."""
        return f"{self._protocol}://mpi-rank-{self._rank}"

    def start(self):
        """Start serving (done by the constructor unless ``start=False``); idempotent."""
        if self._node is not None:
            return
        from .transport import MPITransport, install_relaunch_hint
        transport = _world_transport(MPITransport)
        install_relaunch_hint(f"{self._job}:{self._task}")
        if self._job == "ps":
            self._node = ParameterServer(transport, self._chief, f"ps:{self._task}")
        else:
            self._node = WorkerServer(transport, self._task, len(self._workers), self._ps,
                                      self._chief)
        self._node.start()

    def join(self):
        """Serve until the chief ends the job, then return (TF's ``join`` blocks for ever)."""
        self.start()
        node = self._node
        while not node.done.wait(0.5):
            pass
        node.endpoint.stop()
        node.endpoint.transport.drain(2.0)


_world = []


def _world_transport(make):
    # one communicator duplicate per process, as on the chief
    if not _world:
        _world.append(make())
    return _world[0]
