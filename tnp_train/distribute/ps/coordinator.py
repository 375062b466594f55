"""``ClusterCoordinator``: the chief's queue of closures and the workers that run them (TF 2.4's
``tf.distribute.experimental.coordinator``).

``schedule(fn, args, kwargs)`` pickles ``fn`` (once per function: a worker keeps it and is sent
it once) and the arguments, queues the closure and returns its :class:`RemoteValue`. Closures go
to free workers, one at a time per worker, in the order they were scheduled; the chief's
receiving thread collects their results and gives the freed worker the next closure.

**A lost worker** (under ULFM): the closure it was running goes back to the head of the queue
and runs again on another worker (at least once, as TF: the updates the lost attempt had already
sent stay applied). Every attempt is logged (:meth:`ClusterCoordinator.attempt_log`: closure id,
attempt, worker, outcome), and the parameter servers count the updates they applied per
attempt (:meth:`ClusterCoordinator.applied_updates`), so the accounting can be checked. The job
goes on with the workers left; when none is left, everything raises ``UnavailableError``.

**A lost parameter server**: its variables are gone; ``schedule``, ``join``, ``done`` and
``fetch`` raise ``UnavailableError`` naming it, at once for a waiting call.

**A closure that raises**: its ``RemoteValue`` raises that error from ``fetch``; the closures
still queued are cancelled (their ``fetch`` raises ``CancelledError``), and the error is raised
once more by the next ``schedule``, ``join`` or ``done`` (then cleared), as TF does.
"""
from __future__ import annotations

import collections
import itertools
import threading
import time

import numpy as _np

from tnp.extend import is_tnp_array

from ...utils import tree as _tree
from . import wire
from .errors import CancelledError, UnavailableError
from .pickling import dumps, loads
from .variables import client_scope, host_array

__all__ = ["ClusterCoordinator", "RemoteValue", "PerWorkerValues", "Attempt",
           "PerWorkerDistributedDataset", "PerWorkerDistributedIterator"]

Attempt = collections.namedtuple(
    "Attempt", ["closure_id", "attempt", "worker", "rank", "outcome", "started", "finished"])
Attempt.__doc__ = ("One run of a closure on a worker: ``outcome`` is 'succeeded', 'failed' (the "
                   "closure raised), 'worker lost' (re-queued) or 'abandoned' (a parameter "
                   "server was lost meanwhile); times are ``time.monotonic()`` seconds.")

_FUNCTIONS_KEPT = 128      # functions the chief remembers per worker (< the worker's 256)


# ================================================================ values
class RemoteValue:
    """Mirrors ``tf.distribute.experimental.coordinator.RemoteValue``: the result of a
    scheduled closure, available once a worker has run it."""

    def __init__(self, dispatcher, closure_id):
        self._dispatcher = dispatcher
        self._closure_id = closure_id
        self._event = threading.Event()
        self._value = None
        self._error = None

    def _resolve(self, value):
        self._value = value
        self._event.set()

    def _fail(self, error):
        if not self._event.is_set():
            self._error = error
            self._event.set()

    def _wait(self):
        while not self._event.wait(0.25):
            fatal = self._dispatcher.fatal
            if fatal is not None:
                self._fail(fatal)

    def fetch(self):
        """Wait for the result and return it with every tnp array converted to NumPy (as TF
        converts tensors); raises the closure's error (``CancelledError`` if it never ran,
        ``UnavailableError`` if a parameter server was lost)."""
        self._wait()
        if self._error is not None:
            raise self._error
        return _to_numpy(self._value)

    def get(self):
        """Wait for the result and return it as the closure returned it (tnp arrays stay)."""
        self._wait()
        if self._error is not None:
            raise self._error
        return self._value

    def __repr__(self):
        state = ("failed" if self._error is not None else "ready") if self._event.is_set() \
            else "pending"
        return f"<RemoteValue of closure {self._closure_id}: {state}>"


def _to_numpy(x):
    return _tree.map_structure(_leaf_to_numpy, x)


def _leaf_to_numpy(x):
    if is_tnp_array(x):
        a = _np.array(host_array(x), copy=True)
        return a[()] if a.ndim == 0 else a
    return x


class PerWorkerValues:
    """Mirrors ``tf.distribute.experimental.coordinator.PerWorkerValues(values)``: one value
    per worker (``values[i]`` for worker ``i``); a closure given it as an argument gets the
    value of the worker that runs it."""

    def __init__(self, values):
        self._values = tuple(values)
        self._rid = None

    def _wire_ref(self):
        if self._rid is not None:
            return ("resource", self._rid)
        return ("values", self._values)

    def __repr__(self):
        if self._rid is not None:
            return f"<{type(self).__name__} (per-worker resource {self._rid})>"
        return f"<PerWorkerValues {self._values!r}>"


class PerWorkerDistributedDataset(PerWorkerValues):
    """What ``ClusterCoordinator.create_per_worker_dataset`` returns: a dataset made on each
    worker by ``dataset_fn`` (when a closure first needs it); ``iter()`` of it gives the
    per-worker iterators."""

    def __init__(self, dispatcher, rid):
        super().__init__(())
        self._dispatcher = dispatcher
        self._rid = rid

    def __iter__(self):
        return PerWorkerDistributedIterator(self._dispatcher,
                                            self._dispatcher.define("iterator", self._rid))


class PerWorkerDistributedIterator(PerWorkerValues):
    """One iterator per worker over its dataset; pass it to a scheduled function, which calls
    ``next`` on its worker's (on the chief ``next`` is a TypeError, as in TF)."""

    def __init__(self, dispatcher, rid):
        super().__init__(())
        self._dispatcher = dispatcher
        self._rid = rid

    def __next__(self):
        raise TypeError("a per-worker iterator is iterated inside a function scheduled with "
                        "ClusterCoordinator.schedule, on each worker, not on the chief")

    def __iter__(self):
        return self


# ================================================================ closures
class _Closure:
    __slots__ = ("cid", "fid", "fn_pickle", "args_pickle", "resources", "rv", "attempts",
                 "started")

    def __init__(self, cid, fid, fn_pickle, args_pickle, resources, rv):
        self.cid, self.fid = cid, fid
        self.fn_pickle, self.args_pickle = fn_pickle, args_pickle
        self.resources = resources
        self.rv = rv
        self.attempts = 0
        self.started = None


class _Worker:
    __slots__ = ("task", "rank", "alive", "busy", "fids", "rids")

    def __init__(self, task, rank):
        self.task, self.rank = task, rank
        self.alive = True
        self.busy = None
        self.fids = collections.OrderedDict()
        self.rids = set()


class _Dispatcher:
    """The closure queue and the workers (see the module docstring)."""

    def __init__(self, runtime, strategy):
        self.runtime = runtime
        self.strategy = strategy
        self.client = runtime.client
        self.cond = threading.Condition()
        self.queue = collections.deque()
        self.workers = {r: _Worker(i, r) for i, r in enumerate(runtime.worker_ranks)}
        self.unfinished = 0
        self.error = None
        self.fatal = runtime.fatal
        self.log = []
        self.closed = False
        self._cids = itertools.count()
        self._fids = itertools.count()
        self._rids = itertools.count()
        self._functions = collections.OrderedDict()     # function -> (fid, pickle)
        self._functions_lock = threading.Lock()
        self._resource_defs = {}                        # rid -> ("dataset", pickle) | ...
        runtime.dispatcher = self

    # ------------------------------------------------------------------ raising
    def _raise_pending(self, clear=True):
        if self.fatal is not None:
            raise self.fatal
        if self.error is not None:
            e = self.error
            if clear:
                self.error = None
            raise e

    # ------------------------------------------------------------------ scheduling
    def define(self, kind, payload):
        rid = next(self._rids)
        self._resource_defs[rid] = (kind, payload)
        return rid

    def _function(self, fn):
        with self._functions_lock:
            try:
                entry = self._functions.get(fn)
            except TypeError:            # unhashable callable: pickled every time
                entry = None
            if entry is not None:
                self._functions.move_to_end(fn)
                return entry
            pickled = dumps(fn)
            if _prebuild_slots(self.strategy, pickled[2]):
                pickled = dumps(fn)
            entry = (next(self._fids), pickled)
            try:
                self._functions[fn] = entry
                while len(self._functions) > 4 * _FUNCTIONS_KEPT:
                    self._functions.popitem(last=False)
            except TypeError:
                pass
            return entry

    def schedule(self, fn, args, kwargs):
        if not callable(fn):
            raise TypeError(f"ClusterCoordinator.schedule: fn must be callable, got "
                            f"{type(fn).__name__}")
        with self.cond:
            self._raise_pending()
        fid, fn_pickle = self._function(fn)
        args_pickle = dumps((tuple(args or ()), dict(kwargs or {})))
        if _prebuild_slots(self.strategy, args_pickle[2], fn_pickle[2]):
            args_pickle = dumps((tuple(args or ()), dict(kwargs or {})))
        resources = set(fn_pickle[2].resources) | set(args_pickle[2].resources)
        with self.cond:
            self._raise_pending()
            if self.closed:
                raise RuntimeError("ClusterCoordinator.schedule: the job is shutting down")
            cid = next(self._cids)
            rv = RemoteValue(self, cid)
            c = _Closure(cid, fid, fn_pickle, args_pickle, resources, rv)
            self.queue.append(c)
            self.unfinished += 1
            self._dispatch()
        return rv

    def _dispatch(self):
        """Give queued closures to free workers (called holding ``cond``)."""
        if not self.queue or self.fatal is not None:
            return
        for w in self.workers.values():
            if not self.queue:
                break
            if w.alive and w.busy is None:
                c = self.queue.popleft()
                self._send(w, c)

    def _send(self, w, c):
        c.attempts += 1
        c.started = time.monotonic()
        w.busy = c
        frame = wire.Frame({"op": "run", "cid": c.cid, "att": c.attempts, "fid": c.fid})
        if c.fid not in w.fids:
            stream, oob, _ = c.fn_pickle
            frame.header["fn"] = frame.add_pickle(stream, oob)
            w.fids[c.fid] = True
            while len(w.fids) > _FUNCTIONS_KEPT:
                w.fids.popitem(last=False)
        else:
            w.fids.move_to_end(c.fid)
        defs = []
        for rid in sorted(self._with_dependencies(c.resources)):
            if rid in w.rids:
                continue
            kind, payload = self._resource_defs[rid]
            if kind == "dataset":
                stream, oob, _ = payload
                defs.append({"rid": rid, "kind": kind, "fn": frame.add_pickle(stream, oob)})
            else:
                defs.append({"rid": rid, "kind": kind, "of": payload})
            w.rids.add(rid)
        if defs:
            frame.header["defs"] = defs
        stream, oob, _ = c.args_pickle
        frame.header["args"] = frame.add_pickle(stream, oob)
        if not self.runtime.endpoint.send_frame(w.rank, frame):
            # lost already: on_worker_lost (called by the pump) re-queues it
            pass

    def _with_dependencies(self, rids):
        out = set()
        todo = list(rids)
        while todo:
            rid = todo.pop()
            if rid in out:
                continue
            out.add(rid)
            kind, payload = self._resource_defs[rid]
            if kind == "iterator":
                todo.append(payload)
        return out

    # ------------------------------------------------------------------ the pump's events
    def on_result(self, src, header, buffers):
        with self.cond:
            w = self.workers.get(src)
            c = w.busy if w is not None else None
            if c is None or c.cid != header.get("cid") or c.attempts != header.get("att"):
                return
            lost = header.get("lost")
            if lost in self.runtime.ps_ranks:
                # the worker saw the server go before the chief did: the same loss
                w.busy = None
                self.log.append(Attempt(c.cid, c.attempts, w.task, w.rank, "abandoned",
                                        c.started, time.monotonic()))
                self.runtime.endpoint.report_lost((lost,))
                c.rv._fail(self.fatal)
                self.cond.notify_all()
                return
            w.busy = None
            ok = header.get("ok")
            self.log.append(Attempt(c.cid, c.attempts, w.task, w.rank,
                                    "succeeded" if ok else "failed", c.started,
                                    time.monotonic()))
            self.client.new_epoch()
            if ok:
                with client_scope(self.client):
                    value = wire.pickle_from(header["value"], buffers, loads)
                c.rv._resolve(value)
            else:
                err = _closure_error(header, buffers, self.client, c, w)
                c.rv._fail(err)
                if self.error is None:
                    self.error = err
                self._cancel_queue()
            self.unfinished -= 1
            self._dispatch()
            self.cond.notify_all()

    def _cancel_queue(self):
        while self.queue:
            c = self.queue.popleft()
            c.rv._fail(CancelledError(
                f"closure {c.cid} was cancelled: an earlier closure failed (the error is raised "
                f"by join/schedule/done); schedule it again"))
            self.unfinished -= 1

    def on_worker_lost(self, rank):
        with self.cond:
            w = self.workers.get(rank)
            if w is None or not w.alive:
                return
            w.alive = False
            c = w.busy
            w.busy = None
            if c is not None:
                self.log.append(Attempt(c.cid, c.attempts, w.task, w.rank, "worker lost",
                                        c.started, time.monotonic()))
                self.queue.appendleft(c)
            if not any(x.alive for x in self.workers.values()):
                self._set_fatal(UnavailableError(
                    f"every worker of the job was lost (the last: worker:{w.task}, rank "
                    f"{w.rank}); no closure can run"))
            else:
                self._dispatch()
            self.cond.notify_all()

    def on_fatal(self, error):
        with self.cond:
            self._set_fatal(error)
            self.cond.notify_all()

    def _set_fatal(self, error):
        if self.fatal is None:
            self.fatal = error
        now = time.monotonic()
        for w in self.workers.values():
            if w.busy is not None:
                c = w.busy
                self.log.append(Attempt(c.cid, c.attempts, w.task, w.rank, "abandoned",
                                        c.started, now))
                c.rv._fail(self.fatal)
                w.busy = None
        while self.queue:
            self.queue.popleft().rv._fail(self.fatal)
        self.unfinished = 0

    def in_flight(self):
        return any(w.busy is not None for w in self.workers.values())

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    # ------------------------------------------------------------------ waiting
    def join(self):
        with self.cond:
            while self.unfinished and self.fatal is None:
                self.cond.wait(0.25)
            self._raise_pending()

    def done(self):
        with self.cond:
            self._raise_pending()
            return self.unfinished == 0


def _closure_error(header, buffers, client, c, w):
    err = None
    if header.get("exc"):
        try:
            with client_scope(client):
                err = wire.pickle_from(header["exc"], buffers, loads)
        except Exception:
            err = None
    if not isinstance(err, BaseException):
        err = RuntimeError(f"{header.get('etype', 'Error')}: {header.get('error', '')}")
    try:
        err.add_note(f"(raised by closure {c.cid}, attempt {c.attempts}, on worker:{w.task}, "
                     f"rank {w.rank}; its traceback there:)\n{header.get('tb', '')}")
    except AttributeError:
        pass
    return err


def _prebuild_slots(strategy, *picklers):
    """Make on the chief the slots of every optimizer a closure refers to, for every trainable
    server variable it refers to, each slot with its variable (TF traces a scheduled function
    on the coordinator, which makes them there; here a worker cannot make variables). True if
    any slot was made (the pickle then holds stale optimizer state: pickle again)."""
    optimizers, trainable = {}, {}
    for p in picklers:
        optimizers.update(p.optimizers)
        trainable.update(p.trainable)
    made = False
    for opt in optimizers.values():
        if getattr(opt, "inner_optimizer", None) is not None:
            continue          # a LossScaleOptimizer: its inner optimizer is met too
        for v in trainable.values():
            if opt.is_built(v):
                continue
            with strategy.scope(), strategy.extended.runtime.colocate(v):
                opt.ensure_built([v])
            made = True
    return made


# ================================================================ the public class
class ClusterCoordinator:
    """Mirrors ``tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)``: schedule
    functions on the workers of a ``ParameterServerStrategy`` job (see the module docstring).
    One per strategy (a second call returns the same object, as TF 2.5+). Beyond TF:
    :meth:`attempt_log` and :meth:`applied_updates`."""

    def __new__(cls, strategy):
        from .strategy import ParameterServerStrategy
        if not isinstance(strategy, ParameterServerStrategy):
            raise ValueError(f"ClusterCoordinator: only a ParameterServerStrategy is supported, "
                             f"got {type(strategy).__name__}")
        runtime = strategy.extended.runtime
        if runtime is None:
            raise ValueError("ClusterCoordinator: this ParameterServerStrategy belongs to a "
                             "worker; make the coordinator on the chief")
        existing = getattr(strategy, "_cluster_coordinator", None)
        if existing is not None:
            return existing
        self = super().__new__(cls)
        self._strategy = strategy
        self._runtime = runtime
        self._dispatcher = runtime.dispatcher or _Dispatcher(runtime, strategy)
        strategy._cluster_coordinator = self
        return self

    def __init__(self, strategy):
        pass

    @property
    def strategy(self):
        return self._strategy

    def schedule(self, fn, args=None, kwargs=None):
        """Mirrors ``ClusterCoordinator.schedule(fn, args=None, kwargs=None)``: queue
        ``fn(*args, **kwargs)`` to run on a free worker; returns its :class:`RemoteValue` at
        once. ``fn`` runs in the strategy's scope (``strategy.run`` works inside it). Like a
        ``tf.function``, ``fn`` is serialized on its first schedule: Python state it captures
        is frozen then (variables are not: they live on the parameter servers)."""
        return self._dispatcher.schedule(fn, args, kwargs)

    def join(self):
        """Mirrors ``ClusterCoordinator.join()``: wait until every scheduled closure has
        finished; raises the first error of a closure since the last raise. Then the chief's
        copies of the variables are refreshed (a checkpoint written now holds these values)."""
        self._dispatcher.join()
        self._runtime.refresh_all()

    def done(self):
        """Mirrors ``ClusterCoordinator.done()``: whether every scheduled closure has finished
        (raising a closure's error as ``join`` does)."""
        return self._dispatcher.done()

    def fetch(self, val):
        """Mirrors ``ClusterCoordinator.fetch(val)``: ``val`` (a nest) with every
        :class:`RemoteValue` replaced by its fetched value."""
        return _tree.map_structure(self._fetch_leaf, val)

    def _fetch_leaf(self, val):
        if isinstance(val, RemoteValue):
            return val.fetch()
        if isinstance(val, PerWorkerValues) and val._rid is None:
            return tuple(self.fetch(v) for v in val._values)
        return val

    def create_per_worker_dataset(self, dataset_fn):
        """Mirrors ``ClusterCoordinator.create_per_worker_dataset(dataset_fn)``: each worker
        calls ``dataset_fn()`` (or ``dataset_fn(input_context)``, one input pipeline per
        worker) the first time a closure uses the result; ``iter()`` of it gives one iterator
        per worker."""
        if not callable(dataset_fn):
            raise TypeError(f"create_per_worker_dataset: dataset_fn must be callable, got "
                            f"{type(dataset_fn).__name__}")
        pickled = dumps(dataset_fn, where="ClusterCoordinator.create_per_worker_dataset")
        rid = self._dispatcher.define("dataset", pickled)
        return PerWorkerDistributedDataset(self._dispatcher, rid)

    # ------------------------------------------------------------------ beyond TF
    def attempt_log(self):
        """Every attempt so far, in the order they ended: :class:`Attempt` records."""
        with self._dispatcher.cond:
            return list(self._dispatcher.log)

    def applied_updates(self):
        """``{(closure id, attempt): {variable name: updates}}``: the updates the parameter
        servers applied per closure attempt (the chief's own writes under ``None``)."""
        out = {}
        for rank, header in self._runtime.query("counts").items():
            names = header.get("names", {})
            for tag, per in header.get("counts", {}).items():
                key = None if tag == "chief" else tuple(int(t) for t in tag.split(":"))
                d = out.setdefault(key, {})
                for k, n in per.items():
                    name = names.get(str(k), str(k))
                    d[name] = d.get(name, 0) + n
        return out

    def server_stats(self):
        """``{"ps:i": {"updates", "seconds" (spent applying them), "reads", "variables"}}``."""
        rt = self._runtime
        return {f"ps:{rt.ps_ranks.index(r)}": {k: v for k, v in h.items()
                                               if k in ("updates", "seconds", "reads",
                                                        "variables")}
                for r, h in rt.query("stats").items()}

    @property
    def num_workers(self):
        """The workers still in the job."""
        return sum(w.alive for w in self._dispatcher.workers.values())
