"""ON_READ state (metric totals and counts, BatchNormalization's moving statistics) read as
the job's value: each replica keeps its own part, and a read in cross-replica context combines
the parts by the variable's aggregation (TF's ``SyncOnReadVariable``). :class:`OnReadState` is
the part of ``StrategyExtended`` that does it; the functions below are what metrics, layers and
checkpoints call."""
from __future__ import annotations

import contextlib
import threading

import tnp
from tnp.extend import backend_array, device_of, version as _version, wrap

from ..autodiff import Variable, VariableAggregation, VariableSynchronization
from .context import (_current, _get_default_strategy, has_strategy, in_cross_replica_context,
                      in_local_only_block, live_strategies)
from .distributed_variables import SyncOnReadVariable

__all__ = ["OnReadState", "job_on_read_values", "in_on_read_values", "global_metric_result"]

_local = threading.local()     # depth: how many on_read_values blocks this thread is in


class OnReadState:
    """The ON_READ reads of a ``StrategyExtended`` (a base class of it): with several replicas,
    an ON_READ variable read in cross-replica context holds the job's value."""

    def _on_read_carry_parts(self, variables):
        """For a gradient aggregator carrying ON_READ state with the gradients: the plain
        ON_READ SUM variables among ``variables``, this worker's parts (backend arrays) and
        their versions, or None when there are none (or copies per local replica)."""
        if self._num_replicas_in_sync == 1:
            return None
        chosen, parts, versions = [], [], []
        for v in variables:
            if isinstance(v, Variable) and v.synchronization is VariableSynchronization.ON_READ:
                if isinstance(v, SyncOnReadVariable):
                    return None
                if v.aggregation is VariableAggregation.SUM:
                    chosen.append(v)
                    parts.append(backend_array(v))
                    versions.append(_version(v))
        return (chosen, parts, versions) if chosen else None

    def _on_read_carried(self, variables, versions, sums):
        """The sums over the workers of ``variables`` at ``versions`` (a gradient aggregator
        carried them with the step): :meth:`_read_on_read` uses them while the variables are
        unchanged since (the same on every rank, which run the same steps), instead of a
        collective of its own."""
        self._on_read_sums = {v.key: (ver, s) for v, ver, s in zip(variables, versions, sums)}

    def _carried_sums(self, variables, idx):
        """The carried sums of ``variables[i]`` for every ``i`` in ``idx``, or None unless
        every one is there and unchanged."""
        cache = getattr(self, "_on_read_sums", None)
        if not cache:
            return None
        out = []
        for i in idx:
            v = variables[i]
            hit = cache.get(v.key)
            if hit is None or hit[0] != _version(v):
                return None
            out.append(hit[1])
        return out

    def _read_on_read(self, variables):
        """The values of ``variables`` as read in cross-replica context (new tnp arrays):
        ON_READ ones combined across replicas by their aggregation, in one collective per
        dtype; the others as they are."""
        out = [None] * len(variables)
        by_op = {"sum": [], "mean": [], "first": []}
        for i, v in enumerate(variables):
            if isinstance(v, Variable) and v.synchronization is VariableSynchronization.ON_READ \
                    and self._num_replicas_in_sync > 1:
                agg = v.aggregation
                key = ("sum" if agg is VariableAggregation.SUM else
                       "mean" if agg is VariableAggregation.MEAN else
                       "first" if agg is VariableAggregation.ONLY_FIRST_REPLICA else None)
                if key is not None:
                    by_op[key].append(i)
                    continue
            out[i] = wrap(backend_array(v).copy(), device_of(v))
        carried = self._carried_sums(variables, by_op["sum"]) if by_op["sum"] else None
        if carried is not None:
            for i, c in zip(by_op["sum"], carried):
                out[i] = wrap(c.copy(), device_of(variables[i]))
            by_op["sum"] = []
        for op in ("sum", "mean"):
            idx = by_op[op]
            if idx:
                # a process of several replicas adds the sum of its copies (MEAN divides by
                # every replica of the job)
                red = self._all_reduce_arrays(op, [_on_read_part(variables[i]) for i in idx])
                for i, r in zip(idx, red):
                    out[i] = r
        if by_op["first"]:
            copies = [backend_array(variables[i]).copy() for i in by_op["first"]]
            self._broadcast_arrays(copies, root=0, comm=self._worker_comm)
            for i, c in zip(by_op["first"], copies):
                out[i] = wrap(c, device_of(variables[i]))
        return out

    @contextlib.contextmanager
    def on_read_values(self, variables):
        """Inside the block, each ON_READ variable among ``variables`` holds its value as read
        in cross-replica context (a metric's total summed over replicas), so any code reading
        it (a metric's ``result``) sees the global value; the local state is put back after.
        One collective per dtype; no-op with one replica."""
        on_read = [v for v in variables if isinstance(v, Variable) and
                   v.synchronization is VariableSynchronization.ON_READ]
        if self._num_replicas_in_sync == 1 or not on_read:
            yield
            return
        values = self._read_on_read(on_read)
        _local.depth = getattr(_local, "depth", 0) + 1
        copies = [v for v in on_read if isinstance(v, SyncOnReadVariable)]
        plain = [(v, val) for v, val in zip(on_read, values)
                 if not isinstance(v, SyncOnReadVariable)]
        # a variable with per-replica copies reads the global value while the copies stay
        for v, val in zip(on_read, values):
            if isinstance(v, SyncOnReadVariable):
                v._override = backend_array(val)
        saved = [backend_array(v).copy() for v, _ in plain]
        for v, val in plain:
            v.update(_assign_into, val)
        try:
            yield
        finally:
            _local.depth -= 1
            for v in copies:
                v._override = None
            for (v, _), s in zip(plain, saved):
                v.update(_assign_into, wrap(s, device_of(v)))

    _on_read_values = on_read_values     # the name distribution-aware code used before

    def metric_state_rider(self, variables_fn):
        """``(parts_fn, apply_fn)`` for ``GradientAggregator.add_rider``: the ON_READ SUM state
        that ``variables_fn()`` lists (a model's metric totals and counts) summed over the
        workers with each step's gradients. Reading it in cross-replica context right after the
        step (``fit``'s logs) then takes those sums, while the variables are unchanged since
        (the same on every rank, which run the same steps), instead of a collective of its
        own."""
        taken = []

        def parts():
            carried = self._on_read_carry_parts(variables_fn())
            if carried is None:
                return None
            taken[:] = [carried]
            return carried[1]

        def apply(sums):
            variables, _, versions = taken.pop()
            self._on_read_carried(variables, versions, sums)
        return parts, apply


def _assign_into(a, v):
    a[...] = v


@contextlib.contextmanager
def job_on_read_values(variables):
    """Under a multi-worker strategy, the ON_READ variables among ``variables()`` (a callable,
    called only then) hold the job's value inside the block: what TF reads from a
    SyncOnReadVariable in cross-replica context (BatchNormalization's moving statistics
    averaged over the workers), for ``get_weights`` and checkpoint writes. One collective, so
    every worker must run the block, as in TF. Nothing happens without such a strategy, inside
    a block only some ranks run (the chief's writes, whose ``chief_only`` combined the model's
    state first), inside one that combined them already, or in a replica function."""
    strategies = [s for s in live_strategies() if s.extended.num_workers > 1]
    if not strategies or in_local_only_block() or in_on_read_values() or \
            (has_strategy() and not in_cross_replica_context()):
        yield       # (in a replica function a read is the replica's own, as in TF)
        return
    on_read = [v for v in variables() if isinstance(v, Variable) and
               v.synchronization is VariableSynchronization.ON_READ]
    with contextlib.ExitStack() as stack:
        for s in strategies:
            mine = [v for v in on_read if s.extended.variable_created_in_scope(v)]
            if mine:
                stack.enter_context(s.extended.on_read_values(mine))
        yield


def in_on_read_values():
    """Whether this thread runs inside ``on_read_values`` (the ON_READ state already holds the
    job's values)."""
    return getattr(_local, "depth", 0) > 0


def global_metric_result(strategy, metric, result_fn):
    """``result_fn(metric)`` on the metric's state combined over every replica of
    ``strategy`` (the metrics' ``result`` wrapper); as it is inside a block that already
    combined it (``fit``'s logs) or in another strategy's context."""
    if getattr(_local, "depth", 0):
        return result_fn(metric)
    ctx = _current()
    if ctx.strategy is not strategy and ctx.strategy is not _get_default_strategy():
        return result_fn(metric)

    def merged(s):
        with s.extended.on_read_values(metric.variables):
            r = result_fn(metric)
            return tnp.copy(r) if isinstance(r, Variable) else r
    if ctx.replica_context is not None and ctx.strategy is strategy:
        return ctx.replica_context.merge_call(merged)
    return merged(strategy)


def _on_read_part(v):
    """What this process adds to the cross-worker reduction of ON_READ variable ``v``."""
    if isinstance(v, SyncOnReadVariable):
        return wrap(v.local_contribution(), device_of(v))
    return wrap(backend_array(v), device_of(v)) if isinstance(v, Variable) else v
