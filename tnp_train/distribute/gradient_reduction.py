"""The gradient aggregators of the strategies: gradients summed over every replica of the job,
in buckets that all-reduce while the backward pass goes on.

:class:`AllReduceGradients` is the :class:`~tnp_train.optimizers.GradientAggregator` a strategy
of several replicas installs in an optimizer (``StrategyExtended.install_gradient_aggregator``):
the optimizer hands it each gradient as the tape makes it final (``gradient_ready``), lets it
say where the gradient should be written (``gradient_destination``: its bucket), and collects
the sums from ``reduce``. Small riders (a model's metric state, :meth:`add_rider`) are summed
in the same step, and where the ranks share a machine the update itself may be sharded
(``sharded_update``, see :mod:`.sharded_update`). :class:`PerReplicaGradients` gives each
replica thread of a process its own.
"""
from __future__ import annotations

import numpy as _np

from tnp.extend import backend_array, device_of, is_floating, is_tnp_array, wrap

from ..optimizers.gradient_aggregator import GradientAggregator
from .cross_device_ops import _as_plain, all_reduce_arrays

__all__ = ["AllReduceGradients", "PerReplicaGradients"]


class _HostLayout:
    """A host array's shape and dtype (all a bucket layout reads of it)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, a):
        self.shape, self.dtype = tuple(a.shape), a.dtype


def _layout_of(a):
    return _HostLayout(a) if isinstance(a, _np.ndarray) else a


class _Riders:
    """The riders of an aggregator: their parts travel at the end of the step's last gradient
    bucket where its dtype allows (``GradientBucketer.start(extras=)``), the others in a small
    persistent all-reduce of their own after the buckets."""

    def __init__(self):
        self.by_name = {}          # name -> (parts_fn, apply_fn), in registration order
        self.plan = None           # (signature, plan, layout) of the parts carried on their own
        self.step = None           # this step's (taken, parts, carried in the bucket or not)

    def take(self):
        """Ask every rider for its parts (the step's metric state is final when its gradients
        start to be handed over); the parts, or () when no rider has any this step (the same
        answer on every rank)."""
        taken, parts = [], []
        for name, (parts_fn, apply_fn) in self.by_name.items():
            mine = parts_fn()
            if mine:
                taken.append((apply_fn, len(parts), len(mine)))
                parts.extend(mine)
        self.step = (taken, parts, [False] * len(parts)) if parts else None
        return parts

    def carried(self, flags):
        """Which parts travel in the last bucket (``GradientBucketer.start``'s answer)."""
        if self.step is not None:
            self.step = (self.step[0], self.step[1], list(flags))

    def start(self, comm):
        """Start summing the parts that do not travel in a bucket; True when there are some
        (then :meth:`finish` waits for them)."""
        if self.step is None:
            return False
        _, all_parts, carried = self.step
        parts = [p for p, c in zip(all_parts, carried) if not c]
        if not parts:
            return False
        signature = tuple((p.size, p.dtype.str) for p in parts)
        if self.plan is None or self.plan[0] != signature:
            self.close()
            # one buffer per dtype (the state of float32 and float64 metrics differ)
            groups = {}
            for i, p in enumerate(parts):
                groups.setdefault(p.dtype, []).append(i)
            layout = [(dt, idx, sum(parts[i].size for i in idx)) for dt, idx in groups.items()]
            plan = comm.persistent_allreduce([(n, dt) for dt, _, n in layout], "sum")
            self.plan = (signature, plan, layout)
        _, plan, layout = self.plan
        for b, (_, idx, _) in enumerate(layout):
            plan.acquire(b)
            buf, off = plan.buffer(b), 0
            for i in idx:
                n = parts[i].size
                buf[off:off + n] = parts[i].reshape(-1)
                off += n
            plan.start(b)
        return True

    def finish(self, own_round, bucket_sums):
        """Hand every rider its sums: ``bucket_sums`` (the bucketer's ``extra_sums``) for the
        parts that travelled in the last bucket, the own round's (if ``own_round``) for the
        others."""
        taken, parts, carried = self.step
        self.step = None
        sums = [None] * len(parts)
        for i, c in enumerate(carried):
            if c:
                sums[i] = bucket_sums[i]
        if own_round:
            rest = [i for i, c in enumerate(carried) if not c]
            _, plan, layout = self.plan
            for b, (_, idx, _) in enumerate(layout):
                red, off = plan.wait(b), 0
                for i in idx:
                    j = rest[i]
                    n = parts[j].size
                    sums[j] = red[off:off + n].reshape(parts[j].shape).copy()
                    off += n
        for apply_fn, first, count in taken:
            apply_fn(sums[first:first + count])

    def cancel(self, own_round):
        """After a failure: forget this step's parts (and the own round, if it started)."""
        self.step = None
        if own_round and self.plan is not None:
            plan, layout = self.plan[1], self.plan[2]
            for b in range(len(layout)):
                plan.cancel(b)

    def close(self):
        if self.plan is not None:
            self.plan[1].close()
        self.plan = None


class AllReduceGradients(GradientAggregator):
    """An optimizer's ``gradient_aggregator`` under a strategy of several replicas: the
    gradients summed over all replicas (TF 2.4's ``all_reduce_sum_gradients``; the loss is
    already scaled by 1/replicas, so the sum is the global mean).

    The first step reduces every gradient at once (one collective per dtype) and learns the
    variables; from then on the gradients go into buckets (``collective.GradientBucketer``,
    laid out for those variables in reverse order): :meth:`gradient_ready`, which ``minimize``
    and ``fit`` pass to the tape, copies each gradient into its bucket the moment it is final
    and starts the bucket's all-reduce when the bucket is full, overlapping the rest of the
    backward pass; :meth:`reduce` hands over the gradients that did not arrive that way
    (``apply_gradients`` called directly) and waits for the sums.

    ``compression`` (None, or float16 / bfloat16 as a NumPy dtype: what
    ``CommunicationOptions(compression=...)`` asks for) sends the buckets in that dtype, the
    first step's gradients too; every variable must then be floating (a TypeError names the
    first that is not); finite gradients that overflow float16 (a worker's, or their sum)
    raise ``FloatingPointError`` naming their variables on every worker, while a gradient
    already inf or nan travels as it is (a ``LossScaleOptimizer`` skips that step)."""

    # gradient_ready copies each gradient into its bucket (or casts it there): a compiled
    # step may hand over its own buffers
    copies_handed_over = True

    def __init__(self, comm, num_replicas, bucket_bytes=None, compression=None):
        self._comm = comm
        self._num_replicas = num_replicas
        self._bucket_bytes = bucket_bytes
        self._compression = compression
        self._bucketer = None
        self._items = None         # (variable key, its layout) in forward order
        self._vars = None          # variable key -> variable
        self._dtypes = None        # variable key -> its dtype
        self._arrived = set()
        self._started = False
        self._riders = _Riders()   # small state summed with every step's gradients
        self._sharded = None       # ShardedUpdate, False (cannot shard), None (not tried yet)

    # ------------------------------------------------------------------ riders
    def add_rider(self, parts_fn, apply_fn, name="rider"):
        """Sum ``parts_fn()``'s arrays (this worker's, or None, asked when the step's first
        gradient is handed over) over the workers with every step's gradients, and hand the
        sums to ``apply_fn`` once the step's reduction ended. Parts of the last gradient
        bucket's dtype travel at its end (no collective of their own); others (another dtype,
        compressed buckets) in a small persistent all-reduce after the buckets. Every rank
        registers the same riders (they are the same model's)."""
        self._riders.by_name[name] = (parts_fn, apply_fn)
        return True

    def carry_on_read(self, variables_fn, extended):
        """The ON_READ state ``variables_fn()`` lists (a model's metric totals and counts) as a
        rider (``extended.metric_state_rider``): reading the metrics right after the step
        (``fit``'s logs) then needs no collective of its own."""
        self.add_rider(*extended.metric_state_rider(variables_fn), name="metrics")

    def rebind(self, comm, num_replicas):
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
        self._riders.close()
        self._riders.step = None

    # ------------------------------------------------------------------ buckets
    def _learn(self, variables):
        try:
            from .collective import GradientBucketer
        except ImportError:        # a collective layer without buckets: reduce at once
            return
        uniq = {}
        for v in variables:
            uniq.setdefault(v.key, v)
        # what the buckets are laid out from: a host variable's shape and dtype, not its
        # buffer (which must not outlive a rebinding: the sharded update moves it), a GPU
        # variable's array (its kind picks the buckets' array module)
        items = [(key, _layout_of(backend_array(v))) for key, v in uniq.items()]
        if self._compression is not None:
            # before anything is kept: every later step fails the same way, none goes
            # uncompressed
            for key, a in items:
                if not is_floating(a.dtype):
                    self._items = None
                    raise TypeError(
                        f"AllReduceGradients: compression {self._compression_name()} applies "
                        f"to floating gradients; variable {uniq[key].name!r} is "
                        f"{_np.dtype(a.dtype).name}. Leave it out of the optimizer's "
                        "variables or use CommunicationOptions(compression=None)")
        self._vars = uniq
        self._items = items
        self._dtypes = {key: a.dtype for key, a in items}
        kwargs = {}
        if self._bucket_bytes:
            # CommunicationOptions(bytes_per_pack=...) sizes every bucket, the first one too
            kwargs["bucket_bytes"] = self._bucket_bytes
            kwargs["first_bucket_bytes"] = min(self._bucket_bytes,
                                               GradientBucketer.DEFAULT_FIRST_BUCKET_BYTES)
        if self._compression is not None:
            kwargs["compression"] = self._compression
        self._bucketer = GradientBucketer(self._comm, **kwargs)

    def _compression_name(self):
        return "fp16" if _np.dtype(self._compression) == _np.float16 else "bf16"

    def _begin(self):
        if not self._started:
            if self._sharded:
                # before this rank starts any bucket of the step: no peer updates its part of
                # the shared weights until then, so a weight written outside the sharded
                # update since the last step is copied back in before any update
                self._sharded.rebind()
            # the riders' parts (the metrics' state, final before the backward pass) go into
            # the last bucket now, before any bucket starts
            parts = self._riders.take() if self._riders.by_name else ()
            carried = self._bucketer.start(self._items, extras=parts)
            if parts:
                self._riders.carried(carried)
            self._started = True

    def gradient_ready(self, variable, gradient):
        """Start reducing ``variable``'s final ``gradient`` (its bucket's all-reduce starts
        when the bucket is complete); an unconnected one (None) counts as zeros."""
        if self._bucketer is None or gradient is None:
            return
        key = variable.key
        if key not in self._vars or key in self._arrived:
            return
        if not self._started:
            self._begin()
        self._hand_over(key, gradient)

    def gradient_destination(self, variable):
        """Where the backward pass may write ``variable``'s final gradient this step: its slot
        in its bucket (``GradientBucketer.slot``), or None, so a dense layer's kernel and bias
        gradients are computed straight into the buckets instead of being copied there."""
        if self._bucketer is None:
            return None
        key = variable.key
        if key not in self._vars or key in self._arrived:
            return None
        if not self._started:
            self._begin()
        return self._bucketer.slot(key)

    def sharded_update(self, pairs, optimizer):
        """This step's update applied here, as ``apply(learning_rate)``: sharded (each rank
        updates its part of weights and slots the ranks share; see :mod:`.sharded_update`)
        where that is on, else bucket by bucket (each bucket's variables updated by
        ``optimizer.update_step`` as soon as that bucket's reduction completes, while the
        later ones are still in flight). None where the ordinary all-reduce and update must
        run: the first step (it lays the buckets out and makes the slots), another optimizer
        (sharded), a variable outside the buckets or not built, a variable twice, compressed
        buckets (bucket by bucket). Collective the first time it can shard (every rank gets
        here at the same step); the decision is the same on every rank."""
        if self._bucketer is None or self._comm is None or self._comm.size == 1:
            return None
        state = self._sharded
        if state is None:
            if not all(optimizer.is_built(v) for _, v in pairs):
                return None        # slots still to make: the ordinary step makes them
            from .sharded_update import ShardedUpdate
            state = ShardedUpdate.make(self._comm, self._bucketer, optimizer, self._vars)
            self._sharded = state = state if state is not None else False
        if state is False:
            return self._bucketwise_update(pairs, optimizer)
        if state.optimizer is not optimizer:
            return None
        keys = self._vars
        if any(v.key not in keys for _, v in pairs):
            return None
        return lambda learning_rate: self._complete_step(pairs,
                                                         lambda: state.run(learning_rate))

    def _bucketwise_update(self, pairs, optimizer):
        """``apply(learning_rate)`` updating each bucket's variables as soon as its sums are
        in, or None (see :meth:`sharded_update`). The same updates as the ordinary step (an
        elementwise optimizer's update of one variable reads nothing of another), in the
        buckets' order."""
        if self._compression is not None:
            return None
        keys = self._vars
        given = {}
        for g, v in pairs:
            if g is not None:
                if v.key not in keys or v.key in given or not optimizer.is_built(v):
                    return None
                given[v.key] = v

        def apply(learning_rate):
            def each(sums):
                for key, s in sums.items():
                    v = given.get(key)
                    if v is not None:
                        optimizer.update_step(wrap(s, device_of(v)), v, learning_rate)
            self._complete_step(pairs, lambda: self._finish_buckets(each))
        return apply

    def _complete_step(self, pairs, finish):
        """Hand over the gradients of ``pairs`` not handed over yet (in the buckets' key
        order, the same on every rank), start every bucket, then the riders, and return
        ``finish()`` (the bucketer's end of the step) once the riders are summed too."""
        try:
            self._begin()
            given = {v.key: g for g, v in pairs if g is not None}
            for key, _ in reversed(self._items):
                if key not in self._arrived and key in given:
                    self._hand_over(key, given[key])
            # the buckets first: on the MPI path the collectives must come in one order everywhere
            self._bucketer.launch_remaining()
            riding = self._riders.step is not None
            own_round = self._riders.start(self._comm) if riding else False
            try:
                result = finish()
            except BaseException:
                if riding:
                    self._riders.cancel(own_round)
                raise
            if riding:
                self._riders.finish(own_round, self._bucketer.extra_sums)
            return result
        finally:
            self._arrived = set()
            self._started = False

    def abandon(self):
        """The backward pass that was handing gradients over failed: forget what this step
        handed over, so the next step hands every gradient over again (and none of this step's
        stays in a bucket). A bucket whose reduction had started is still in flight: the next
        step's start then fails loudly instead of mixing the rounds."""
        self._arrived = set()
        self._started = False
        self._riders.step = None

    abandon_step = abandon     # the name aggregators had before the protocol

    def _hand_over(self, key, gradient):
        dtype = self._dtypes[key]
        g = backend_array(gradient) if is_tnp_array(gradient) else _np.asarray(gradient)
        if g.dtype != dtype:
            g = g.astype(dtype)
        self._arrived.add(key)
        self._bucketer.gradient_ready(key, g)

    def reduce(self, pairs):
        """The pairs with their gradients summed over every replica (the sums of the buckets
        for the variables they were laid out for, one collective per dtype for the others)."""
        pairs = list(pairs)
        if self._comm is None or self._comm.size == 1 or not pairs:
            return pairs
        if self._bucketer is None:
            if self._items is not None or self._compression is None:
                out = self._reduce_at_once(pairs)
                if self._items is None:
                    self._items = ()
                    self._learn([v for _, v in pairs])
                return out
            # compressed: the first step learns the variables first and travels compressed
            # through the new buckets, as every later one (the same rounding from step one)
            self._items = ()
            self._learn([v for _, v in pairs])
            if self._bucketer is None:
                return self._reduce_at_once(pairs)
        reduced = self._complete_step(pairs, self._finish_buckets)
        out, rest = [], []
        for i, (g, v) in enumerate(pairs):
            r = reduced.get(v.key)
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

    def _finish_buckets(self, each=None):
        """The bucketer's sums (``each``: see ``GradientBucketer.finish``); a compression
        overflow is named by the variables' names."""
        try:
            return self._bucketer.finish(each)
        except FloatingPointError as exc:
            keys = getattr(exc, "keys", None)
            if not keys:
                raise
            names = ", ".join(repr(self._vars[k].name) for k in keys)
            wire = self._compression_name()
            raise FloatingPointError(
                f"AllReduceGradients: the gradients of {names} do not fit in {wire} "
                f"(CommunicationOptions(compression=Compression.{wire})): a finite value beyond "
                f"{wire}'s range, in a worker's gradient or in their sum, overflowed to inf "
                "(every worker raises this alike). Use Compression.bf16 (float32's range) or "
                "no compression, or scale the loss down") from None

    def _reduce_at_once(self, pairs):
        arrays = [_as_plain(g) for g, _ in pairs]
        summed = all_reduce_arrays(self._comm, "sum", arrays, self._num_replicas)
        return [(s, v) for s, (_, v) in zip(summed, pairs)]


class PerReplicaGradients(GradientAggregator):
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
        comm = self._ext.communicator
        agg = self._by_replica.get(r[1])
        if agg is None or agg[0] is not comm:
            agg = self._by_replica[r[1]] = (comm, self._make(comm))
        return agg[1]

    def remake(self, make):
        """Make each replica's aggregator with ``make(comm)`` from now on (the job's replicas
        changed)."""
        self._by_replica.clear()
        self._make = make

    def gradient_ready(self, variable, gradient):
        return self._mine().gradient_ready(variable, gradient)

    def gradient_destination(self, variable):
        return self._mine().gradient_destination(variable)

    def abandon(self):
        return self._mine().abandon()

    abandon_step = abandon

    def reduce(self, pairs):
        return self._mine().reduce(pairs)
