"""``Strategy``, ``StrategyExtended``, ``ReplicaContext`` and the default strategy (TF 2.4's
``distribute_lib``). Which strategy is current, and in which context, is kept per thread by
:mod:`.context` (TF's ``distribution_strategy_context``), whose functions this module
re-exports; the ON_READ reads of ``StrategyExtended`` are in :mod:`.on_read`, its replica
threads in :mod:`.replica_threads`.

Every strategy here runs one replica per process (``MultiWorkerMirroredStrategy`` one per MPI
rank), so a strategy's extended object holds a collective communicator (``collective/``) and
one local device; all cross-replica arithmetic (``reduce``, ``all_reduce``, the metric states
read in cross-replica context) goes through :meth:`StrategyExtended._all_reduce_arrays`, which
packs the arrays of each dtype and device into one buffer and makes one collective of it.
"""
from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as _np

import tnp
from tnp.extend import (
    array_module, backend_array, device_of, is_floating, is_inexact, is_tnp_array, wrap,
)

from ..autodiff import Variable, custom_gradient, variable_creator_scope
from ..autodiff.tape import hand_written_backward
from ..autodiff.variables import creator_stack, current_creators
from ..optimizers.gradient_aggregator import GradientAggregator
from ..utils import tree as _tree
from ..utils.random import ReplicaGenerators, replica_draws, set_thread_stream
from . import values as _values
from .collective.base import CollectiveError as _CollectiveError
from .context import (  # noqa: F401 - re-exported: the API of the current context
    _Context, _current, _default_context, _default_replica_ctx, _get_default_strategy,
    _register_strategy, _require_cross_replica_or_default, _stack, experimental_set_strategy,
    get_cross_replica_context, get_replica_context, get_strategy, get_strategy_if_any,
    has_strategy, in_cross_replica_context, in_local_only_block, live_strategies, local_only,
    replica_batch_rows)
from .collective_util import refuse_compression
from .cross_device_ops import all_reduce_arrays
from .distributed_variables import current_replica, replica_scope
from .input_lib import rows_of
from .input_options import InputContext, InputReplicationMode, RunOptions
from .on_read import (  # noqa: F401 - re-exported: what metrics, layers and checkpoints call
    OnReadState, global_metric_result, in_on_read_values, job_on_read_values)
from .reduce_util import ReduceOp, as_reduce_op
from .replica_threads import MergeRendezvous, ReplicaThreads

__all__ = ["Strategy", "StrategyExtended", "ReplicaContext", "InputContext", "ValueContext",
           "RunOptions", "InputReplicationMode", "get_strategy", "has_strategy",
           "in_cross_replica_context", "get_replica_context", "get_cross_replica_context",
           "experimental_set_strategy", "local_only"]


# ================================================================ small public classes
class ValueContext:
    """Mirrors ``tf.distribute.experimental.ValueContext(replica_id_in_sync_group=0,
    num_replicas_in_sync=1)``: what ``experimental_distribute_values_from_function``'s function
    is told about its replica."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id_in_sync_group

    def __str__(self):
        return (f"tt.distribute.ValueContext(replica id {self._replica_id_in_sync_group}, "
                f"total replicas in sync: {self._num_replicas_in_sync})")


# ================================================================ values
def _as_array(x, device=None):
    if is_tnp_array(x):
        return x if device is None or device_of(x) is device else x.to_device(device)
    return tnp.asarray(x) if device is None else tnp.asarray(x, device=device)


def _plain(a):
    """A tnp array over ``a``'s buffer that is not a Variable (results must not alias state)."""
    return wrap(backend_array(a), device_of(a)) if isinstance(a, Variable) else a


# ================================================================ Strategy
class Strategy:
    """Mirrors ``tf.distribute.Strategy(extended)``: the user-facing half of a strategy; the
    work is done by its ``extended`` object. Build a concrete strategy, not this class."""

    def __init__(self, extended):
        self._extended = extended
        if not isinstance(self, _DefaultDistributionStrategy):
            _register_strategy(self)

    @property
    def extended(self):
        """The ``StrategyExtended`` with the APIs for distribution-aware code."""
        return self._extended

    @property
    def num_replicas_in_sync(self):
        """The number of replicas whose gradients are combined (all workers together)."""
        return self._extended.num_replicas_in_sync

    @property
    def cluster_resolver(self):
        """The ``ClusterResolver`` of a multi-worker strategy, None for the others."""
        return getattr(self._extended, "_cluster_resolver", None)

    def scope(self):
        """Mirrors ``Strategy.scope()``: a context manager making this the current strategy
        (cross-replica context) with its variable creator active."""
        return _StrategyScope(self)

    # ------------------------------------------------------------------ running replicas
    def run(self, fn, args=(), kwargs=None, options=None):
        """Mirrors ``Strategy.run(fn, args=(), kwargs=None, options=None)``: call ``fn`` on each
        local replica in its replica context (DistributedValues among the arguments are
        specialised per replica); the results regrouped (a plain value with one local
        replica, as here)."""
        if options is not None and not isinstance(options, RunOptions):
            raise TypeError(f"Strategy.run: options must be a tt.distribute.RunOptions, got "
                            f"{type(options).__name__}")
        if not callable(fn):
            raise TypeError(f"Strategy.run: fn must be callable, got {type(fn).__name__}")
        return self._extended._call_for_each_replica(fn, tuple(args), dict(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        """Mirrors ``Strategy.reduce(reduce_op, value, axis)``: combine per-replica values
        (a nest of them) across all replicas with SUM or MEAN; with ``axis`` each replica's
        value is first summed along it and MEAN divides by the global number of elements
        along it (uneven batches count for what they hold)."""
        _require_cross_replica_or_default(self, "Strategy.reduce")
        op = as_reduce_op(reduce_op, "Strategy.reduce")
        if axis is not None and not isinstance(axis, (int, _np.integer, tuple, list)):
            raise TypeError(f"Strategy.reduce: axis must be an int, a tuple of ints or None, "
                            f"got {type(axis).__name__}")
        return self._extended._reduce_nest(op, value, axis)

    def gather(self, value, axis):
        """Mirrors ``Strategy.gather(value, axis)``: the replicas' values concatenated along
        ``axis`` (sizes along it may differ), in replica order, on this replica's device."""
        _require_cross_replica_or_default(self, "Strategy.gather")
        return self._extended._gather_nest(value, axis, "Strategy.gather")

    def experimental_local_results(self, value):
        """Mirrors ``Strategy.experimental_local_results(value)``: a tuple of this worker's
        per-replica values."""
        return _values.local_results(value, len(self._extended.local_devices))

    # ------------------------------------------------------------------ input
    def experimental_distribute_dataset(self, dataset, options=None):
        """Mirrors ``Strategy.experimental_distribute_dataset(dataset, options=None)``:
        ``dataset`` is batched with the global batch size; each worker iterates its part of
        every batch (see ``input_lib``)."""
        from . import input_lib
        return input_lib.DistributedDataset(dataset, self, options)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """Mirrors ``Strategy.distribute_datasets_from_function(dataset_fn, options=None)``:
        ``dataset_fn(InputContext)`` makes this worker's dataset of per-replica batches."""
        from . import input_lib
        return input_lib.DistributedDatasetsFromFunction(dataset_fn, self, options)

    def experimental_distribute_datasets_from_function(self, dataset_fn, options=None):
        """TF 2.4's deprecated name of :meth:`distribute_datasets_from_function`."""
        return self.distribute_datasets_from_function(dataset_fn, options)

    def experimental_distribute_values_from_function(self, value_fn):
        """Mirrors ``Strategy.experimental_distribute_values_from_function(value_fn)``:
        ``value_fn(ValueContext)`` for each local replica; the values as per-replica values."""
        ext = self._extended
        devices = ext.local_devices
        vals = []
        for i, replica_id in enumerate(ext.local_replica_ids):
            v = value_fn(ValueContext(replica_id, ext.num_replicas_in_sync))
            if len(devices) > 1:
                # each replica's value on its device, as TF places it
                from .input_lib import _to_device
                v = _to_device(v, devices[i])
            vals.append(v)
        return _values.regroup(vals, always_wrap=False,
                               where="experimental_distribute_values_from_function")

    def __deepcopy__(self, memo):
        # shared, not copied (a deep-copied model keeps its strategy): a strategy holds the
        # job's communicator, whose collectives every rank runs in one sequence
        return self

    def __repr__(self):
        return f"<tt.distribute.{type(self).__name__} replicas={self.num_replicas_in_sync}>"


class _StrategyScope:
    """``strategy.scope()``: the strategy current in cross-replica context, its variable
    creator active; re-entering the same strategy (or its scope inside its ``run``) is
    allowed, another strategy's scope is a ValueError (TF: 'Mixing different
    tf.distribute.Strategy objects')."""

    __slots__ = ("_strategy", "_creator_scope", "_pushed")

    def __init__(self, strategy):
        self._strategy = strategy
        self._creator_scope = None
        self._pushed = None

    def __enter__(self):
        s = self._strategy
        cur = _current()
        default = _get_default_strategy()
        if cur.strategy is not s and cur.strategy is not default and s is not default:
            raise ValueError(f"Mixing different tt.distribute.Strategy objects: "
                             f"{type(s).__name__} is not {type(cur.strategy).__name__} (the "
                             f"strategy whose scope or run is active)")
        if cur.strategy is s and cur.replica_context is not _default_replica_ctx():
            # already current: keep its context (a replica context stays one)
            self._pushed = _Context(s, cur.replica_context)
        else:
            self._pushed = _Context(s, None)
        _stack().append(self._pushed)
        creator = s._extended._variable_creator
        if creator is not None and cur.strategy is not s:
            self._creator_scope = variable_creator_scope(creator)
            self._creator_scope.__enter__()
        return s

    def __exit__(self, *exc):
        if self._creator_scope is not None:
            self._creator_scope.__exit__(*exc)
            self._creator_scope = None
        stack = _stack()
        if not stack or stack[-1] is not self._pushed:
            raise RuntimeError("Strategy.scope: scopes exited out of order (they must nest)")
        stack.pop()
        return False


# ================================================================ StrategyExtended
class StrategyExtended(OnReadState):
    """Mirrors ``tf.distribute.StrategyExtended``: the APIs for distribution-aware code, and
    the machinery of a strategy with one replica per process (or one per local device, in
    threads). Beyond TF, what other code may read of the job: :attr:`communicator`,
    :attr:`worker_communicator`, :attr:`num_workers`, :attr:`worker_index`,
    :attr:`local_devices`, :attr:`local_replica_ids`, :attr:`num_replicas_in_sync`; and the
    gradient aggregator it gives optimizers (:meth:`install_gradient_aggregator`)."""

    _variable_creator = None    # strategies that own their variables set a creator
    elastic = None              # settings of a job that survives lost workers (see elastic)

    def __init__(self, container_strategy, communicator=None, device=None, devices=None):
        self._container_strategy_ref = container_strategy
        self._worker_comm = communicator
        if devices is not None and len(devices) > 1:
            # several local replicas: one thread each (see _call_for_each_replica)
            self._local_devices = tuple(devices)
            self._device = self._local_devices[0]
        else:
            self._device = devices[0] if devices else device
            self._local_devices = (self._device,)
        self._num_local = len(self._local_devices)
        self._replicas = None          # the replica threads, made at the first run
        self._replica_comms = None     # each replica thread's communicator
        self._replica_lock = threading.Lock()
        self._replica_gens = ReplicaGenerators()   # the replica threads' per-sample draws
        size = 1 if communicator is None else int(communicator.size)
        rank = 0 if communicator is None else int(communicator.rank)
        self._num_workers = size
        self._worker_index = rank
        self._num_replicas_in_sync = size * self._num_local
        self._replica_id_base = rank * self._num_local
        self._created = set()      # hash(v.ref()) of the variables made in the scope
        self._created_lock = threading.Lock()
        self._aggregators = {}     # id(optimizer) -> (optimizer, its gradient aggregator)

    def _container_strategy(self):
        return self._container_strategy_ref

    # ------------------------------------------------------------------ the job
    @property
    def communicator(self):
        """The collective communicator of the calling context: a replica thread's own (its
        rank the replica's id, its size every replica of the job), else the workers' (None:
        one process)."""
        if self._num_local > 1:
            r = current_replica()
            if r is not None and r[0] is self:
                return self._local_comms()[r[1]]
        return self._worker_comm

    _comm = communicator

    @property
    def worker_communicator(self):
        """The communicator of the job's workers, one rank per process (None: one process)."""
        return self._worker_comm

    @property
    def num_workers(self):
        """The number of workers (processes) whose replicas are in sync."""
        return self._num_workers

    @property
    def worker_index(self):
        """This worker's index among them (0 is the chief)."""
        return self._worker_index

    @property
    def local_devices(self):
        """The devices of this worker's replicas, one each, in replica order (an entry None:
        the default device at each call)."""
        return self._local_devices

    @property
    def local_replica_ids(self):
        """The ``replica_id_in_sync_group`` of this worker's replicas (a range)."""
        return range(self._replica_id_base, self._replica_id_base + self._num_local)

    @property
    def num_replicas_in_sync(self):
        """The number of replicas whose gradients are combined (all workers together)."""
        return self._num_replicas_in_sync

    # ------------------------------------------------------------------ description
    def _device_name(self, device=None):
        d = device or self._device or tnp.get_default_device()
        kind, _, idx = str(d).partition(":")
        job = "localhost" if self._comm is None else "worker"
        return (f"/job:{job}/replica:0/task:{self._worker_index}/device:"
                f"{kind.upper()}:{idx or 0}")

    @property
    def worker_devices(self):
        """The devices this worker runs replicas on (TF-style names)."""
        if self._num_local > 1:
            return tuple(self._device_name(d) for d in self._local_devices)
        return (self._device_name(),)

    @property
    def parameter_devices(self):
        """The devices holding this worker's copies of the variables."""
        return self.worker_devices

    @property
    def experimental_require_static_shapes(self):
        return False

    @property
    def _is_chief(self):
        return self._worker_index == 0

    @property
    def should_checkpoint(self):
        """Whether this worker writes checkpoints (the chief, worker 0)."""
        return self._is_chief

    @property
    def should_save_summary(self):
        """Whether this worker writes summaries (the chief, worker 0)."""
        return self._is_chief

    @property
    def should_init(self):
        return True

    # ------------------------------------------------------------------ variables
    def _record_created(self, v):
        with self._created_lock:
            self._created.add(hash(v.ref()))

    def variable_created_in_scope(self, v):
        """Mirrors ``StrategyExtended.variable_created_in_scope(v)``."""
        return isinstance(v, Variable) and hash(v.ref()) in self._created

    def colocate_vars_with(self, colocate_with_variable):
        """Mirrors ``StrategyExtended.colocate_vars_with(var)``: variables made in the block
        go on ``var``'s device."""
        dev = device_of(colocate_with_variable)

        def creator(next_creator, **kwargs):
            kwargs["device"] = dev
            return next_creator(**kwargs)
        return variable_creator_scope(creator)

    def value_container(self, value):
        """Mirrors ``StrategyExtended.value_container(value)``: the value itself here (a
        variable is its own container)."""
        return value

    def read_var(self, v):
        """The value of ``v`` as read in cross-replica context (TF's ``read_var``): an ON_READ
        variable aggregated across replicas (SUM, MEAN, the first replica's), any other as
        it is."""
        return self._read_on_read([v])[0]

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """Mirrors ``StrategyExtended.update(var, fn, args=(), kwargs=None, group=True)``:
        ``fn(var, *args, **kwargs)`` on this worker's copy of ``var`` (every worker runs the
        same update)."""
        _require_cross_replica_or_default(self._container_strategy(), "StrategyExtended.update")
        kwargs = kwargs or {}
        args = _values.select_replica_mirrored(0, args)
        kwargs = _values.select_replica_mirrored(0, kwargs)
        return fn(var, *args, **kwargs)

    def reduce_to(self, reduce_op, value, destinations, options=None):
        """Mirrors ``StrategyExtended.reduce_to(reduce_op, value, destinations, options=None)``:
        ``value`` combined across all replicas (a mirrored result on every worker)."""
        op = as_reduce_op(reduce_op, "StrategyExtended.reduce_to")
        refuse_compression(options, "StrategyExtended.reduce_to")
        return self._reduce_nest(op, value, None)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        """Mirrors ``StrategyExtended.batch_reduce_to(reduce_op, value_destination_pairs,
        options=None)``: several reductions in one collective per dtype."""
        op = as_reduce_op(reduce_op, "StrategyExtended.batch_reduce_to")
        refuse_compression(options, "StrategyExtended.batch_reduce_to")
        pairs = list(value_destination_pairs)
        return self._reduce_nest(op, [v for v, _ in pairs], None)

    # ------------------------------------------------------------------ replicas
    def _replica_device(self):
        return self._device

    def _call_for_each_replica(self, fn, args, kwargs):
        strategy = self._container_strategy()
        cur = _current()
        if cur.replica_context is not None and cur.strategy is strategy and \
                cur.replica_context is not _default_replica_ctx():
            raise RuntimeError(f"{type(strategy).__name__}.run: called inside a replica "
                               f"function (a replica context); call it in cross-replica "
                               f"context")
        if self._num_local > 1:
            return self._run_replica_threads(fn, args, kwargs)
        args = _values.select_replica(0, args)
        kwargs = _values.select_replica(0, kwargs)
        ctx = ReplicaContext(strategy, self._replica_id_base)
        if self._num_replicas_in_sync > 1:
            ctx._batch_rows = rows_of((args, kwargs))
        dev = self._replica_device()
        # per-sample draws (dropout) are this replica's rows of the global batch's
        draws = replica_draws(self._replica_id_base, self._num_replicas_in_sync,
                              ctx._batch_rows)
        with strategy.scope(), ctx, draws, (tnp.default_device(dev) if dev is not None
                                            else contextlib.nullcontext()):
            return fn(*args, **kwargs)

    # ------------------------------------------------------------------ replica threads
    def _local_comms(self):
        """Each local replica's communicator (made once; made anew after a failed run)."""
        comms = self._replica_comms
        if comms is None:
            with self._replica_lock:
                comms = self._replica_comms
                if comms is None:
                    comms = self._replica_comms = self._make_local_comms()
        return comms

    def _make_local_comms(self):
        from .collective import ThreadGroup
        worker = self._worker_comm
        timeout = getattr(worker, "timeout_seconds", None)
        group = self._nccl_group(timeout)
        if group is not None:
            members = [group.member(i) for i in range(self._num_local)]
            group = group.host          # the host half: what a failed replica breaks
        else:
            group = ThreadGroup(self._num_local, timeout_seconds=timeout)
            members = [group.member(i) for i in range(self._num_local)]
        if worker is not None and worker.size > 1:
            from .collective import HierarchicalCommunicator
            members = [HierarchicalCommunicator(m, worker) for m in members]
        self._replica_group = group
        self._rendezvous = MergeRendezvous(self._num_local, group.timeout_seconds)
        return members

    def _nccl_group(self, timeout):
        """NCCL between the local GPUs (TF's default cross-device ops for MirroredStrategy on
        GPUs, ``NcclAllReduce``), unless other cross-device ops were asked for, a device is not
        a GPU, or CuPy has no NCCL; None means the host thread group."""
        from .cross_device_ops import NcclAllReduce
        ops = getattr(self, "_cross_device_ops", None)
        if ops is not None and not isinstance(ops, NcclAllReduce):
            return None
        if not all(d.is_gpu for d in self._local_devices):
            return None
        from .collective.nccl import NcclGroup, nccl_available
        if not nccl_available():
            return None
        try:
            return NcclGroup([d.index for d in self._local_devices], timeout_seconds=timeout)
        except Exception as e:  # noqa: BLE001 - NCCL refused these devices: the host works
            import warnings
            warnings.warn(f"NCCL could not be set up between {list(self._local_devices)} "
                          f"({e}); gradients are summed through the host instead",
                          RuntimeWarning, stacklevel=3)
            return None

    def _break_replicas(self, error):
        """A replica failed: end its group's collectives and merge points, so the other
        replicas raise instead of waiting for it; the next run starts a fresh group."""
        comms = self._replica_comms
        if comms is None:
            return
        self._rendezvous.break_(error)
        group = self._replica_group
        with group._cond:
            if group._broken is None:
                group._broken = _CollectiveError(f"replica failed: {error!r}")
            group._cond.notify_all()

    def _run_replica_threads(self, fn, args, kwargs):
        """``fn`` on every local replica, each in its thread, in its replica context and on its
        device, with the calling thread's variable creators (the strategy's added); the results
        regrouped as PerReplica values. The first replica error is raised (after every replica
        has stopped)."""
        strategy = self._container_strategy()
        creators = current_creators()
        mine = self._variable_creator
        if mine is not None and not any(c == mine for c in creators):
            creators = creators + (mine,)
        self._local_comms()
        with self._replica_lock:
            if self._replicas is None:
                self._replicas = ReplicaThreads(self._num_local)
            threads = self._replicas
        gens = self._replica_gens.begin(self._num_local)

        def job(i):
            set_thread_stream(self._replica_id_base + i)
            a = _values.select_replica(i, args)
            k = _values.select_replica(i, kwargs)
            ctx = ReplicaContext(strategy, self._replica_id_base + i)
            ctx._batch_rows = rows_of((a, k))
            draws = replica_draws(self._replica_id_base + i, self._num_replicas_in_sync,
                                  ctx._batch_rows, gens[i])
            with creator_stack(creators), replica_scope(self, i), ctx, draws, \
                    tnp.default_device(self._local_devices[i]):
                return fn(*a, **k)

        results, errors = threads.run(job, on_error=self._break_replicas)
        if errors:
            with self._replica_lock:
                # the group is broken: a fresh one next time (the aggregators follow it, since
                # PerReplicaGradients keys each replica's by its communicator)
                self._replica_comms = None
            first = min(errors, key=lambda e: e[0])
            raise first[2]
        self._replica_gens.end()
        return _values.regroup(results)

    def merge_in_replicas(self, index, merge_fn, args, kwargs):
        """``ReplicaContext.merge_call`` from local replica ``index``: once every local replica
        has called it, ``merge_fn(strategy, *args, **kwargs)`` runs once in cross-replica
        context (per-replica arguments regrouped as PerReplica values) and each replica gets
        its part of the result."""
        self._local_comms()
        strategy = self._container_strategy()

        def run(entries):
            fn = entries[0][0]
            a = _values.regroup([e[1] for e in entries], where="merge_call")
            k = _values.regroup([e[2] for e in entries], where="merge_call")
            _stack().append(_Context(strategy, None))
            try:
                with replica_scope(None, None):
                    return fn(strategy, *a, **k)
            finally:
                _stack().pop()

        result = self._rendezvous.merge(index, (merge_fn, tuple(args), dict(kwargs)), run)
        return _values.select_replica(index, result)

    # ------------------------------------------------------------------ collectives
    def _local_sum(self, value, where):
        """This worker's contribution of a (possibly per-replica) leaf: its local replicas'
        values summed, as a tnp array."""
        parts = _values.local_results(value, None)
        if len(parts) != self._num_local:
            raise ValueError(f"{where}: a value of {len(parts)} replicas for a strategy with "
                             f"{self._num_local} local replicas")
        total = None
        dest = self._local_devices[0] if self._num_local > 1 else None
        for p in parts:
            p = _plain(_as_array(p, dest))
            total = p if total is None else total + p
        return total

    def _all_reduce_arrays(self, op, arrays):
        """``arrays`` (tnp arrays, this worker's contributions) combined over all workers with
        ``op`` ("sum", or "mean" over ``num_replicas_in_sync``): one collective per dtype and
        device; new tnp arrays, in order."""
        return all_reduce_arrays(self._comm, op, arrays, self._num_replicas_in_sync)

    def _reduce_nest(self, op, value, axis):
        """``Strategy.reduce`` / ``reduce_to`` on a nest."""
        leaves = _tree.flatten(value)
        if op is ReduceOp.MEAN and axis is None and all(
                isinstance(x, _values.Mirrored) for x in leaves) and leaves:
            # TF: the mean of values equal on every replica is that value, no collective
            return _tree.pack_sequence_as(value, [_as_array(x._values[0]) for x in leaves])
        where = "Strategy.reduce"
        if axis is None:
            local = [self._local_sum(x, where) for x in leaves]
            return _tree.pack_sequence_as(value, self._all_reduce_arrays(op.value.lower(), local))
        axes = tuple(int(a) for a in axis) if isinstance(axis, (tuple, list)) else (int(axis),)
        sums, counts = [], []
        dest = self._local_devices[0] if self._num_local > 1 else None
        for x in leaves:
            parts = [_plain(_as_array(p, dest)) for p in _values.local_results(x, None)]
            s, c = None, 0
            for p in parts:
                if not p.ndim:
                    raise ValueError(f"{where}: cannot reduce a 0-d value along axis {axis}")
                for a in axes:
                    if not -p.ndim <= a < p.ndim:
                        raise ValueError(f"{where}: axis {axis} is out of bounds for a value of "
                                         f"shape {tuple(p.shape)}")
                ps = tnp.sum(p, axis=axes)
                s = ps if s is None else s + ps
                c += int(_np.prod([p.shape[a] for a in axes]))
            sums.append(s)
            counts.append(c)
        sums = self._all_reduce_arrays("sum", sums)
        if op is ReduceOp.SUM:
            return _tree.pack_sequence_as(value, sums)
        dev = device_of(sums[0]) if sums else None
        cnt = self._all_reduce_arrays("sum", [tnp.asarray(_np.array(counts, _np.int64),
                                                          device=dev)])[0]
        out = []
        for i, s in enumerate(sums):
            denom = cnt[i].astype(s.dtype) if is_inexact(s.dtype) else cnt[i]
            out.append(tnp.true_divide(s, denom))
        return _tree.pack_sequence_as(value, out)

    def gather_arrays(self, arrays, axis, where="StrategyExtended.gather_arrays"):
        """Each array (a tnp array, this replica's) concatenated along ``axis`` over all
        replicas, in replica order (errors name ``where``)."""
        out = []
        for a in arrays:
            a = _plain(_as_array(a))
            if a.ndim == 0:
                raise ValueError(f"{where}: cannot gather a 0-d value (shape ()) along axis "
                                 f"{axis}")
            if not -a.ndim <= axis < a.ndim:
                raise ValueError(f"{where}: axis {axis} is out of bounds for a value of shape "
                                 f"{tuple(a.shape)}")
            comm = self._comm
            if comm is None or comm.size == 1:
                out.append(wrap(backend_array(a).copy(), device_of(a)))
                continue
            ax = axis % a.ndim
            dev = device_of(a)
            xp = array_module(dev)
            moved = xp.ascontiguousarray(xp.moveaxis(backend_array(a), ax, 0))
            g = comm.allgather(moved)
            # a copy: the members of a thread group share one result
            out.append(wrap(xp.moveaxis(g, 0, ax).copy(), dev))
        return out

    def _gather_nest(self, value, axis, where):
        leaves = _tree.flatten(value)
        local = []
        dest = self._local_devices[0] if self._num_local > 1 else None
        for x in leaves:
            parts = [_plain(_as_array(p, dest)) for p in _values.local_results(x, None)]
            local.append(parts[0] if len(parts) == 1 else tnp.concatenate(parts, axis=axis))
        return _tree.pack_sequence_as(value, self.gather_arrays(local, int(axis), where))

    def _broadcast_arrays(self, arrays, root=0, comm=None):
        """Backend arrays written in place with ``root``'s values (over ``comm``, default the
        calling context's communicator)."""
        comm = self._comm if comm is None else comm
        if comm is None or comm.size == 1:
            return
        for a in arrays:
            if a.size == 0:
                continue
            # a private copy: a thread group's broadcast hands the root's buffer itself to the
            # others, who must not see the root's later writes into its variable
            flat = a.copy().reshape(-1)
            # as bytes: any dtype (bfloat16, uint64 words) crosses unchanged
            got = comm.broadcast(flat.view(_np.uint8), root=root)
            a[...] = got.view(a.dtype).reshape(a.shape)

    def all_reduce_arrays(self, op, arrays):
        """``arrays`` (tnp arrays, this worker's contributions) combined over all workers with
        ``op`` ("sum", or "mean" over ``num_replicas_in_sync``): new tnp arrays, in order."""
        return self._all_reduce_arrays(op, arrays)

    # ------------------------------------------------------------------ gradients
    def gradient_aggregator(self, optimizer):
        """The ``GradientAggregator`` summing ``optimizer``'s gradients over the replicas (one
        per optimizer, made on the first call), or None with one replica."""
        if self._num_replicas_in_sync == 1:
            return None
        entry = self._aggregators.get(id(optimizer))
        if entry is None or entry[0] is not optimizer:
            made = self._new_gradient_aggregator()
            if made is None:
                return None
            _made_by_strategies.add(made)
            entry = self._aggregators[id(optimizer)] = (optimizer, made)
        return entry[1]

    def _new_gradient_aggregator(self):
        """A new aggregator over this strategy's replicas (strategies of several replicas)."""
        return None

    def install_gradient_aggregator(self, optimizer):
        """Give ``optimizer`` (the inner one of a ``LossScaleOptimizer``) this strategy's
        gradient aggregator, as ``compile`` does, unless it was given one of its own (TF 2.4
        then calls the user's); one a strategy installed before is replaced."""
        inner = getattr(optimizer, "inner_optimizer", None) or optimizer
        agg = self.gradient_aggregator(inner)
        if agg is None:
            return
        current = inner.gradient_aggregator
        if current == inner.aggregate_gradients or (
                isinstance(current, GradientAggregator) and current in _made_by_strategies):
            inner.gradient_aggregator = agg


# the aggregators the strategies made (a user's own is never replaced by compile)
_made_by_strategies = weakref.WeakSet()


# ================================================================ ReplicaContext
class ReplicaContext:
    """Mirrors ``tf.distribute.ReplicaContext(strategy, replica_id_in_sync_group)``: the
    collectives a replica function may call (``all_reduce``, ``all_gather``, ``merge_call``)
    and which replica it is. Entering it (``with``) makes it current."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._entered = []
        # (n, lo, hi): this replica's batch is rows [lo, hi) of a global batch of n rows, when
        # strategy.run was given a batch the strategy split (None otherwise)
        self._batch_rows = None

    def __enter__(self):
        ctx = _Context(self._strategy, self)
        _stack().append(ctx)
        self._entered.append(ctx)
        return self

    def __exit__(self, *exc):
        ctx = self._entered.pop()
        stack = _stack()
        if not stack or stack[-1] is not ctx:
            raise RuntimeError("ReplicaContext: contexts exited out of order")
        stack.pop()
        return False

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's index among all replicas (its rank for MultiWorkerMirroredStrategy)."""
        return self._replica_id_in_sync_group

    @property
    def devices(self):
        return self._strategy.extended.worker_devices

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Mirrors ``ReplicaContext.merge_call(merge_fn, args=(), kwargs=None)``:
        ``merge_fn(strategy, *args, **kwargs)`` in cross-replica context (with one local
        replica, the arguments pass as they are)."""
        if not callable(merge_fn):
            raise TypeError(f"merge_call: merge_fn must be callable, got "
                            f"{type(merge_fn).__name__}")
        r = current_replica()
        ext = self._strategy.extended
        if r is not None and r[0] is ext:
            return ext.merge_in_replicas(r[1], merge_fn, args, kwargs or {})
        ctx = _Context(self._strategy, None)
        _stack().append(ctx)
        try:
            return merge_fn(self._strategy, *args, **(kwargs or {}))
        finally:
            _stack().pop()

    def all_reduce(self, reduce_op, value, options=None):
        """Mirrors ``ReplicaContext.all_reduce(reduce_op, value, options=None)``: ``value`` (a
        nest of arrays) combined over all replicas, the result on every replica;
        differentiable (the gradient is the all-reduce of the gradients, as in TF)."""
        op = as_reduce_op(reduce_op, "ReplicaContext.all_reduce").value.lower()
        refuse_compression(options, "ReplicaContext.all_reduce")
        ext = self._strategy.extended
        # Variables stay themselves: the tape connects the result to the variable read
        leaves = [_as_array(x) for x in _tree.flatten(value)]
        if not leaves:
            return value
        float_leaves = all(is_floating(x.dtype) for x in leaves)
        if not float_leaves:
            return _tree.pack_sequence_as(value, ext.all_reduce_arrays(op, leaves))
        return _tree.pack_sequence_as(value, _differentiable_all_reduce(ext, op, leaves))

    def all_gather(self, value, axis, options=None):
        """Mirrors ``ReplicaContext.all_gather(value, axis, options=None)``: each leaf of
        ``value`` concatenated over all replicas along ``axis`` (sizes along it may differ);
        differentiable (a replica's gradient is its slice of the summed gradients)."""
        ext = self._strategy.extended
        leaves = [_as_array(x) for x in _tree.flatten(value)]
        axis = int(axis)
        out = []
        for x in leaves:
            if not is_floating(x.dtype):
                out.append(ext.gather_arrays([x], axis, "ReplicaContext.all_gather")[0])
                continue
            out.append(_differentiable_gather(ext, x, axis))
        return _tree.pack_sequence_as(value, out)

    def __repr__(self):
        return (f"<tt.distribute.ReplicaContext {self._replica_id_in_sync_group} of "
                f"{self.num_replicas_in_sync}>")


def _differentiable_gather(ext, x, axis):
    ax = axis % x.ndim if x.ndim else axis
    sizes = ext.gather_arrays([tnp.asarray(_np.array([x.shape[ax] if x.ndim else 0],
                                                       _np.int64))], 0,
                               "ReplicaContext.all_gather")[0]
    sizes = [int(s) for s in _np.asarray(sizes.to_device("cpu") if device_of(sizes).is_gpu
                                         else sizes)]
    comm = ext.communicator
    me = 0 if comm is None else comm.rank       # this replica's place among all replicas
    lo = sum(sizes[:me])

    def mine(total):
        index = [slice(None)] * total.ndim
        index[ax] = slice(lo, lo + sizes[me])
        return total[tuple(index)]

    @custom_gradient
    def gather(v):
        y = ext.gather_arrays([v], axis, "ReplicaContext.all_gather")[0]

        def grad(dy):
            return mine(ext.all_reduce_arrays("sum", [_as_array(dy)])[0])

        def recorded(dy):   # a gradient of a gradient: the same all-reduce, differentiable
            return mine(_differentiable_all_reduce(ext, "sum", [_as_array(dy)])[0])
        return y, hand_written_backward("ReplicaContext.all_gather", grad, (v,), recorded)

    return gather(x)


def _differentiable_all_reduce(ext, op, xs):
    """``ext.all_reduce_arrays(op, xs)`` as one tape node whose gradient is the same all-reduce
    of the cotangents, itself differentiable (so gradients of gradients see it). Either path
    runs exactly one all-reduce, so replicas stay in step whichever each takes."""
    @custom_gradient
    def reduce(*xs):
        ys = ext.all_reduce_arrays(op, list(xs))

        def cotangents(dys):
            return [tnp.zeros_like(x) if d is None else _as_array(d) for x, d in zip(xs, dys)]

        def grad(*dys):
            return tuple(ext.all_reduce_arrays(op, cotangents(dys)))

        def recorded(*dys):
            return tuple(_differentiable_all_reduce(ext, op, cotangents(dys)))
        return (tuple(ys) if len(ys) > 1 else ys[0]), hand_written_backward(
            "ReplicaContext.all_reduce", grad, xs, recorded)

    out = reduce(*xs)
    return list(out) if len(xs) > 1 else [out]


# ================================================================ the default strategy
class _DefaultDistributionExtended(StrategyExtended):
    """The default strategy's extended object: one replica, no collective."""

    def _call_for_each_replica(self, fn, args, kwargs):
        # TF: the default strategy calls fn directly (in the current context)
        return fn(*_values.select_replica(0, args), **_values.select_replica(0, kwargs))

    def variable_created_in_scope(self, v):
        return True


class _DefaultDistributionStrategy(Strategy):
    """The strategy current when no other is (TF's ``_DefaultDistributionStrategy``): one
    replica on the default device; ``run`` calls the function, ``reduce`` returns the value,
    datasets pass through."""

    def __init__(self):
        super().__init__(_DefaultDistributionExtended(self))

    def experimental_distribute_dataset(self, dataset, options=None):
        return dataset

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        return dataset_fn(InputContext())


# ================================================================ optimizers
def aggregate_gradients(optimizer, grads_and_vars):
    """``Optimizer.aggregate_gradients`` under the current strategy: the pairs unchanged with
    one replica; with several, the gradients summed over them (in a replica function; TF 2.4
    refuses ``apply_gradients`` in cross-replica context)."""
    ctx = _current()
    strategy = ctx.strategy
    if strategy.num_replicas_in_sync == 1:
        return grads_and_vars
    if ctx.replica_context is None:
        raise RuntimeError(f"{optimizer.name}.apply_gradients() cannot be called in "
                           f"cross-replica context of {strategy!r}; call it in a replica "
                           f"function (strategy.run)")
    return strategy.extended.gradient_aggregator(optimizer).reduce(grads_and_vars)
