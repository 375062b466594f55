"""Cross-device reductions (TF 2.4's ``cross_device_ops``) on the collective layer, and the
gradient aggregator a strategy gives an optimizer.

TF's classes (``ReductionToOneDevice``, ``NcclAllReduce``, ``HierarchicalCopyAllReduce``) name
algorithms between the devices of one machine. Here the local replicas of a worker are summed
in place and the workers meet in one collective of the communicator (MPI, NCCL or threads, as
the collective layer decides), so the three classes differ only in name and in the arguments
they accept.

:func:`all_reduce_arrays` is the one place a strategy's arrays cross workers: the arrays of
each dtype and device are packed into one buffer, one collective reduces it, the results are
cut back out (new arrays, never views of the inputs).
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import array_module, backend_array, device_of, is_inexact, is_tnp_array, wrap

from ..autodiff import Variable
from . import values as _values
from .reduce_util import as_reduce_op

__all__ = ["CrossDeviceOps", "ReductionToOneDevice", "NcclAllReduce",
           "HierarchicalCopyAllReduce", "all_reduce_arrays", "AllReduceGradients"]


def _divide(a, n):
    """``a / n`` in ``a``'s dtype (integers truncate toward zero, as TF's mean of ints)."""
    b = backend_array(a)
    if is_inexact(b.dtype):
        return wrap((b / b.dtype.type(n)).astype(b.dtype, copy=False), device_of(a))
    q = b // n
    q += (b < 0) & (q * n != b)
    return wrap(q, device_of(a))


def all_reduce_arrays(comm, op, arrays, num_replicas):
    """``arrays`` (tnp arrays, this worker's contributions) combined over the workers of
    ``comm`` (None: one worker): ``op`` "sum", or "mean" (the sum divided by
    ``num_replicas``). One collective per dtype and device; new tnp arrays, in order."""
    if comm is None or comm.size == 1:
        out = [wrap(backend_array(a).copy(), device_of(a)) for a in arrays]
    else:
        out = [None] * len(arrays)
        groups = {}
        for i, a in enumerate(arrays):
            groups.setdefault((backend_array(a).dtype, device_of(a)), []).append(i)
        for (_, dev), idx in groups.items():
            xp = array_module(dev)
            flats = [backend_array(arrays[i]).reshape(-1) for i in idx]
            buf = flats[0] if len(flats) == 1 else xp.concatenate(flats)
            red = comm.allreduce(buf, op="sum")
            off = 0
            for i in idx:
                a = backend_array(arrays[i])
                # a copy: the result may be shared (threads of one group get one array)
                out[i] = wrap(red[off:off + a.size].reshape(a.shape).copy(), dev)
                off += a.size
    if op == "mean" and num_replicas > 1:
        out = [_divide(a, num_replicas) for a in out]
    return out


def _as_plain(x):
    if isinstance(x, Variable):
        return wrap(backend_array(x), device_of(x))
    return x if is_tnp_array(x) else tnp.asarray(x)


def _local_sum(value, accumulation_fn=None):
    parts = [_as_plain(p) for p in _values.local_results(value, None)]
    if len(parts) == 1:
        return parts[0]
    if accumulation_fn is not None:
        return _as_plain(accumulation_fn(parts))
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


class CrossDeviceOps:
    """Mirrors ``tf.distribute.CrossDeviceOps()``: reduce per-replica values across every
    replica of the job and broadcast values to devices. A strategy given one uses its own
    communicator; used alone it works on the job's world (``collective.get_world()``)."""

    def __init__(self):
        self._comm = None
        self._num_local = 1
        self._bound = False

    def _communicator(self):
        if self._comm is None and not self._bound:
            from .collective import get_world
            self._comm = get_world()
        return self._comm

    def _bind(self, comm, num_local=1):
        """Used by a strategy: reduce over ``comm``'s workers, ``num_local`` replicas each."""
        self._comm = comm
        self._num_local = num_local
        self._bound = True

    @property
    def _num_replicas(self):
        comm = self._communicator()
        return (1 if comm is None else comm.size) * self._num_local

    def _accumulation_fn(self):
        return None

    def reduce(self, reduce_op, per_replica_value, destinations, options=None):
        """Mirrors ``CrossDeviceOps.reduce(reduce_op, per_replica_value, destinations,
        options=None)``: the value summed (or averaged) over all replicas."""
        return self.batch_reduce(reduce_op, [(per_replica_value, destinations)], options)[0]

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None):
        """Mirrors ``CrossDeviceOps.batch_reduce(reduce_op, value_destination_pairs,
        options=None)``: several reductions, one collective per dtype and device."""
        op = as_reduce_op(reduce_op, f"{type(self).__name__}.batch_reduce").value.lower()
        pairs = list(value_destination_pairs)
        for p in pairs:
            if not (isinstance(p, (tuple, list)) and len(p) == 2):
                raise ValueError(f"{type(self).__name__}.batch_reduce: "
                                 f"value_destination_pairs must be (value, destinations) "
                                 f"pairs, got {p!r}")
        local = [_local_sum(v, self._accumulation_fn()) for v, _ in pairs]
        out = all_reduce_arrays(self._communicator(), op, local, self._num_replicas)
        return [_to_destination(r, d) for r, (_, d) in zip(out, pairs)]

    def broadcast(self, tensor, destinations):
        """Mirrors ``CrossDeviceOps.broadcast(tensor, destinations)``: ``tensor`` on the
        destination device (one replica per worker: one copy)."""
        return _to_destination(_as_plain(tensor), destinations)

    def __repr__(self):
        return f"<tt.distribute.{type(self).__name__}>"


def _to_destination(value, destinations):
    dev = _destination_device(destinations)
    if dev is None or device_of(value) is dev:
        return value
    return value.to_device(dev)


def _destination_device(destinations):
    if destinations is None:
        return None
    if isinstance(destinations, (tuple, list)):
        if len(destinations) != 1:
            return None
        destinations = destinations[0]
    if isinstance(destinations, _values.DistributedValues):
        destinations = destinations._values[0]
    if is_tnp_array(destinations):
        return device_of(destinations)
    if isinstance(destinations, tnp.Device):
        return destinations
    if isinstance(destinations, str):
        from .one_device_strategy import parse_device
        return parse_device(destinations)
    return None


class ReductionToOneDevice(CrossDeviceOps):
    """Mirrors ``tf.distribute.ReductionToOneDevice(reduce_to_device=None,
    accumulation_fn=None)``: the local replicas' values are summed with ``accumulation_fn``
    (default: addition), then combined across workers."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        super().__init__()
        if accumulation_fn is not None and not callable(accumulation_fn):
            raise TypeError(f"ReductionToOneDevice: accumulation_fn must be callable, got "
                            f"{type(accumulation_fn).__name__}")
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn

    def _accumulation_fn(self):
        return self.accumulation_fn


def _check_num_packs(owner, num_packs):
    if isinstance(num_packs, bool) or not isinstance(num_packs, (int, _np.integer)) or \
            num_packs < 0:
        raise ValueError(f"{owner}: num_packs must be a non-negative integer, got {num_packs!r}")
    return int(num_packs)


class NcclAllReduce(CrossDeviceOps):
    """Mirrors ``tf.distribute.NcclAllReduce(num_packs=1)``: NCCL between GPUs where the
    collective layer has it; ``num_packs`` is accepted (packing is the layer's)."""

    def __init__(self, num_packs=1):
        super().__init__()
        self.num_packs = _check_num_packs("NcclAllReduce", num_packs)


class HierarchicalCopyAllReduce(CrossDeviceOps):
    """Mirrors ``tf.distribute.HierarchicalCopyAllReduce(num_packs=1)`` (TF's DGX-1 algorithm;
    here the collective layer's all-reduce)."""

    def __init__(self, num_packs=1):
        super().__init__()
        self.num_packs = _check_num_packs("HierarchicalCopyAllReduce", num_packs)


# ================================================================ gradients
class _HostLayout:
    """A host array's shape and dtype (all a bucket layout reads of it)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, a):
        self.shape, self.dtype = tuple(a.shape), a.dtype


def _layout_of(a):
    return _HostLayout(a) if isinstance(a, _np.ndarray) else a


class AllReduceGradients:
    """An optimizer's ``gradient_aggregator`` under a strategy of several replicas: the
    gradients summed over all replicas (TF 2.4's ``all_reduce_sum_gradients``; the loss is
    already scaled by 1/replicas, so the sum is the global mean).

    The first step reduces every gradient at once (one collective per dtype) and learns the
    variables; from then on the gradients go into buckets (``collective.GradientBucketer``,
    laid out for those variables in reverse order): ``gradient_ready(variable, gradient)``,
    which ``minimize`` and ``fit`` pass to the tape, copies each gradient into its bucket the
    moment it is final and starts the bucket's all-reduce when the bucket is full, overlapping
    the rest of the backward pass; ``__call__(pairs)`` hands over the gradients that did not
    arrive that way (``apply_gradients`` called directly) and waits for the sums."""

    def __init__(self, comm, num_replicas, bucket_bytes=None, compression=None):
        self._comm = comm
        self._num_replicas = num_replicas
        self._bucket_bytes = bucket_bytes
        self._compression = compression
        self._bucketer = None
        self._items = None         # (variable._uid, its array) in forward order
        self._vars = None          # variable._uid -> variable
        self._dtypes = None        # variable._uid -> its dtype
        self._arrived = set()
        self._started = False
        self._riders = None        # (variables_fn, extended): ON_READ state summed with the step
        self._sharded = None       # ShardedUpdate, False (cannot shard), None (not tried yet)
        self._rider_plan = None    # (signature, persistent plan) of that state

    def carry_on_read(self, variables_fn, extended):
        """Sum the ON_READ state that ``variables_fn()`` lists (a model's metric totals and
        counts) over the workers with every step's gradients, in a small persistent all-reduce
        that starts when the gradients are handed over (so no rank waits for it on its own),
        and hand the sums to ``extended._on_read_carried``: reading the metrics right after the
        step (``fit``'s logs) then needs no collective of its own. Every rank passes the same
        variables (they are the same model's)."""
        self._riders = (variables_fn, extended)

    def _start_riders(self):
        if self._riders is None:
            return None
        variables_fn, extended = self._riders
        carried = extended._on_read_carry_parts(variables_fn())
        if not carried:
            return None
        variables, parts, versions = carried
        signature = tuple((p.size, p.dtype.str) for p in parts)
        if self._rider_plan is None or self._rider_plan[0] != signature:
            if self._rider_plan is not None:
                self._rider_plan[1].close()
            # one buffer per dtype (the state of float32 and float64 metrics differ)
            groups = {}
            for i, p in enumerate(parts):
                groups.setdefault(p.dtype, []).append(i)
            layout = [(dt, idx, sum(parts[i].size for i in idx)) for dt, idx in groups.items()]
            plan = self._comm.persistent_allreduce([(n, dt) for dt, _, n in layout], "sum")
            self._rider_plan = (signature, plan, layout)
        _, plan, layout = self._rider_plan
        for b, (_, idx, _) in enumerate(layout):
            plan.acquire(b)
            buf, off = plan.buffer(b), 0
            for i in idx:
                n = parts[i].size
                buf[off:off + n] = parts[i].reshape(-1)
                off += n
            plan.start(b)
        return variables, parts, versions

    def _finish_riders(self, riders):
        variables, parts, versions = riders
        _, plan, layout = self._rider_plan
        sums = [None] * len(parts)
        for b, (_, idx, _) in enumerate(layout):
            red, off = plan.wait(b), 0
            for i in idx:
                n = parts[i].size
                sums[i] = red[off:off + n].reshape(parts[i].shape).copy()
                off += n
        self._riders[1]._on_read_carried(variables, versions, sums)

    def _cancel_riders(self):
        if self._rider_plan is not None:
            plan, layout = self._rider_plan[1], self._rider_plan[2]
            for b in range(len(layout)):
                plan.cancel(b)

    def _rebind(self, comm, num_replicas):
        """Reduce over ``comm`` from now on (an elastic job's survivors); the buckets are laid
        out again at the next step."""
        self._comm = comm
        self._num_replicas = num_replicas
        self._bucketer = None
        self._items = None
        self._vars = None
        self._arrived = set()
        self._started = False
        if self._sharded:
            # the weights leave the segment they shared with the lost worker
            self._sharded.detach()
        self._sharded = None
        if self._rider_plan is not None:
            self._rider_plan[1].close()
        self._rider_plan = None

    def _learn(self, variables):
        try:
            from .collective import GradientBucketer
        except ImportError:        # a collective layer without buckets: reduce at once
            return
        uniq = {}
        for v in variables:
            uniq.setdefault(v._uid, v)
        self._vars = uniq
        # what the buckets are laid out from: a host variable's shape and dtype, not its
        # buffer (which must not outlive a rebinding: the sharded update moves it), a GPU
        # variable's array (its kind picks the buckets' array module)
        self._items = [(key, _layout_of(backend_array(v))) for key, v in uniq.items()]
        self._dtypes = {key: a.dtype for key, a in self._items}
        kwargs = {}
        if self._bucket_bytes:
            # CommunicationOptions(bytes_per_pack=...) sizes every bucket, the first one too
            kwargs["bucket_bytes"] = self._bucket_bytes
            kwargs["first_bucket_bytes"] = min(self._bucket_bytes,
                                               GradientBucketer.DEFAULT_FIRST_BUCKET_BYTES)
        if self._compression is not None:
            kwargs["compression"] = self._compression
        self._bucketer = GradientBucketer(self._comm, **kwargs)

    def _begin(self):
        if not self._started:
            if self._sharded:
                # before this rank starts any bucket of the step: no peer updates its part of
                # the shared weights until then, so a weight written outside the sharded
                # update since the last step is copied back in before any update
                self._sharded.rebind()
            self._bucketer.start(self._items)
            self._started = True

    def gradient_ready(self, variable, gradient):
        """Start reducing ``variable``'s final ``gradient`` (its bucket's all-reduce starts
        when the bucket is complete); an unconnected one (None) counts as zeros."""
        if self._bucketer is None or gradient is None:
            return
        key = variable._uid
        if key not in self._vars or key in self._arrived:
            return
        if not self._started:
            self._begin()
        self._hand_over(key, gradient)

    def gradient_destination(self, variable):
        """Where the backward pass may write ``variable``'s final gradient this step: its slot
        in its bucket (``GradientBucketer.slot``), or None. ``minimize`` passes this to the
        tape with :meth:`gradient_ready`, so a dense layer's kernel and bias gradients are
        computed straight into the buckets instead of being copied there."""
        if self._bucketer is None:
            return None
        key = variable._uid
        if key not in self._vars or key in self._arrived:
            return None
        if not self._started:
            self._begin()
        return self._bucketer.slot(key)

    def sharded_update(self, pairs, optimizer):
        """This step's sharded update (``sharded_update.ShardedUpdate``: each rank updates its
        part of weights and slots the ranks share), or None where the ordinary all-reduce and
        update must run: the first step (it lays the buckets out and makes the slots),
        another optimizer, a variable outside the buckets. Collective the first time it can shard (every rank gets
        here at the same step); the decision is the same on every rank."""
        if self._bucketer is None or self._comm is None or self._comm.size == 1:
            return None
        state = self._sharded
        if state is None:
            if any(v._uid not in optimizer._built_uids for _, v in pairs):
                return None        # slots still to make: the ordinary step makes them
            from .sharded_update import ShardedUpdate
            state = ShardedUpdate.make(self._comm, self._bucketer, optimizer, self._vars)
            self._sharded = state = state if state is not None else False
        if state is False or state.optimizer is not optimizer:
            return None
        keys = self._vars
        if any(v._uid not in keys for _, v in pairs):
            return None
        return state

    def apply_sharded(self, state, pairs, learning_rate):
        """Hand this step's gradients over (those not handed over during the backward pass)
        and run ``state``'s part of the update (see :meth:`sharded_update`)."""
        self._complete_step(pairs, lambda: state.run(learning_rate))

    def _complete_step(self, pairs, finish):
        """Hand over the gradients of ``pairs`` not handed over yet (in the buckets' key
        order, the same on every rank), start every bucket, then the ON_READ riders, and
        return ``finish()`` (the bucketer's end of the step) once the riders are summed too."""
        try:
            self._begin()
            given = {v._uid: g for g, v in pairs if g is not None}
            for key, _ in reversed(self._items):
                if key not in self._arrived and key in given:
                    self._hand_over(key, given[key])
            # the buckets first: on the MPI path the collectives must come in one order everywhere
            self._bucketer.launch_remaining()
            riders = self._start_riders()
            try:
                result = finish()
            except BaseException:
                if riders is not None:
                    self._cancel_riders()
                raise
            if riders is not None:
                self._finish_riders(riders)
            return result
        finally:
            self._arrived = set()
            self._started = False

    def abandon_step(self):
        """The backward pass that was handing gradients over failed: forget what this step
        handed over, so the next step hands every gradient over again (and none of this step's
        stays in a bucket). A bucket whose reduction had started is still in flight: the next
        step's start then fails loudly instead of mixing the rounds."""
        self._arrived = set()
        self._started = False

    def _hand_over(self, key, gradient):
        dtype = self._dtypes[key]
        g = backend_array(gradient) if is_tnp_array(gradient) else _np.asarray(gradient)
        if g.dtype != dtype:
            g = g.astype(dtype)
        self._arrived.add(key)
        self._bucketer.gradient_ready(key, g)

    def __call__(self, grads_and_vars):
        pairs = list(grads_and_vars)
        if self._comm is None or self._comm.size == 1 or not pairs:
            return pairs
        if self._bucketer is None:
            out = self._reduce_at_once(pairs)
            if self._items is None:
                self._items = ()
                self._learn([v for _, v in pairs])
            return out
        reduced = self._complete_step(pairs, self._bucketer.finish)
        out, rest = [], []
        for i, (g, v) in enumerate(pairs):
            r = reduced.get(v._uid)
            if r is None:
                rest.append(i)
                out.append(None)
            else:
                out.append((wrap(r, device_of(v)), v))
        if rest:      # variables the buckets were not laid out for
            summed = self._reduce_at_once([pairs[i] for i in rest])
            for i, p in zip(rest, summed):
                out[i] = p
        return out

    def _reduce_at_once(self, pairs):
        arrays = [_as_plain(g) for g, _ in pairs]
        summed = all_reduce_arrays(self._comm, "sum", arrays, self._num_replicas)
        return [(s, v) for s, (_, v) in zip(summed, pairs)]


class PerReplicaGradients:
    """The ``gradient_aggregator`` of a strategy whose local replicas are threads: each
    replica thread gets its own :class:`AllReduceGradients` over its own communicator (made on
    its first call, again when the strategy's replica group is made anew after a failure)."""

    def __init__(self, extended, make):
        self._ext = extended
        self._make = make
        self._by_replica = {}

    def _mine(self):
        from .distributed_variables import current_replica
        r = current_replica()
        if r is None or r[0] is not self._ext:
            raise RuntimeError("the gradients of a strategy with several local replicas are "
                               "aggregated in a replica function (strategy.run), not in "
                               "cross-replica context")
        comm = self._ext._comm
        agg = self._by_replica.get(r[1])
        if agg is None or agg[0] is not comm:
            agg = self._by_replica[r[1]] = (comm, self._make(comm))
        return agg[1]

    def gradient_ready(self, variable, gradient):
        return self._mine().gradient_ready(variable, gradient)

    def gradient_destination(self, variable):
        return self._mine().gradient_destination(variable)

    def abandon_step(self):
        return self._mine().abandon_step()

    def __call__(self, grads_and_vars):
        return self._mine()(grads_and_vars)

