"""Distributed input (TF 2.4's ``input_lib``): ``DistributedDataset`` and
``DistributedIterator``, what ``strategy.experimental_distribute_dataset`` and
``distribute_datasets_from_function`` return.

A dataset given to ``experimental_distribute_dataset`` is batched with the GLOBAL batch size.
How each worker gets its part follows ``dataset.options().experimental_distribute.
auto_shard_policy`` (``tt.data.experimental.AutoShardPolicy``):

* ``AUTO``: ``FILE`` when the pipeline reads at least one file per worker, else ``DATA``
  (TF's fallback).
* ``DATA``: every worker runs the whole pipeline (in the same order: the seeds of
  its ``shuffle`` steps are taken from worker 0 when the dataset is distributed) and keeps its
  part of every global batch, which TF reaches by rebatching and sharding by element. A batch
  of ``b`` rows is cut into ``num_replicas_in_sync`` contiguous parts, the first ``b %
  num_replicas`` one row longer, so across the workers every sample is seen exactly once per
  epoch, every worker takes the same number of steps, and an uneven last batch gives smaller
  (possibly empty) parts on every worker, never a worker with a step fewer.
* ``FILE``: each worker reads every ``num_workers``-th file of the dataset's file list
  (``Dataset.list_files``/``TextLineDataset``); each of its own batches is cut into
  ``num_replicas_in_sync`` parts taken one per step; workers whose files ran out take empty
  batches until every worker's data is done (one small collective per step says so), so no
  worker stops early.
* ``OFF``: no sharding: every worker takes every part of every batch (TF's behaviour: each
  sample is seen once per worker).

A worker with one local replica (every strategy here) gets plain batches, not per-replica
values, as in TF.
"""
from __future__ import annotations

import collections
import weakref

import numpy as _np

import tnp
from tnp.extend import device_of, is_tnp_array

from ..utils import tree as _tree
from . import values as _values

__all__ = ["DistributedDataset", "DistributedIterator", "DistributedDatasetsFromFunction",
           "split_batch", "part_bounds", "sync_shuffle_seeds", "auto_shard_policy",
           "note_rows", "rows_of"]


# ================================================================ batches
def part_bounds(n, num_parts, part):
    """``(lo, hi)``: rows of part ``part`` when ``n`` rows are cut into ``num_parts`` contiguous
    parts, the first ``n % num_parts`` one row longer (``numpy.array_split``'s rule)."""
    base, extra = divmod(int(n), int(num_parts))
    lo = part * base + min(part, extra)
    return lo, lo + base + (1 if part < extra else 0)


def _batch_size(leaves, where):
    sizes = set()
    for x in leaves:
        if x is None:
            continue
        shape = getattr(x, "shape", None)
        if shape is None:
            shape = _np.shape(x)
        if len(shape) == 0:
            raise ValueError(f"{where}: cannot split an element with a 0-d component across "
                             f"replicas: batch the dataset with the global batch size before "
                             f"distributing it")
        sizes.add(int(shape[0]))
    if len(sizes) > 1:
        raise ValueError(f"{where}: the components of an element have different batch sizes "
                         f"{sorted(sizes)}; every component must have the same first dimension")
    return sizes.pop() if sizes else 0


def split_batch(element, num_parts, part, where="experimental_distribute_dataset"):
    """Part ``part`` of ``num_parts`` of a batched ``element`` (a nest of arrays), cut along
    the first axis as :func:`part_bounds` says."""
    if num_parts == 1:
        return element
    leaves = _tree.flatten(element)
    n = _batch_size(leaves, where)
    lo, hi = part_bounds(n, num_parts, part)
    return _tree.pack_sequence_as(element, [None if x is None else x[lo:hi] for x in leaves])


# Which rows of a global batch a replica's batch is: noted on its arrays where the split is
# made (DATA sharding, arrays given to fit), read by strategy.run for the replica's per-sample
# random draws (tt.utils.random.replica_draws): N workers then draw one process's dropout masks.
_ROWS = {}


def _forget(key):
    def drop(ref):
        if _ROWS.get(key, (None,))[0] is ref:
            _ROWS.pop(key, None)
    return drop


def note_rows(element, n, lo, hi):
    """Note that the arrays of ``element`` are rows ``[lo, hi)`` of a global batch of ``n``
    rows; returns ``element``."""
    for x in _tree.flatten(element):
        if x is None:
            continue
        try:
            ref = weakref.ref(x, _forget(id(x)))
        except TypeError:               # a value that cannot be noted (a Python scalar)
            continue
        _ROWS[id(x)] = (ref, (int(n), int(lo), int(hi)))
    return element


def rows_of(args):
    """``(n, lo, hi)`` noted on the first noted array of ``args``, else None."""
    for x in _tree.flatten(args):
        hit = _ROWS.get(id(x))
        if hit is not None and hit[0]() is x:
            return hit[1]
    return None


def split_noted(element, num_parts, part, device, where="experimental_distribute_dataset"):
    """Part ``part`` of a global ``element`` on ``device`` (:func:`split_batch`), noted as
    those rows of it (:func:`note_rows`)."""
    n = _batch_size(_tree.flatten(element), where)
    lo, hi = part_bounds(n, num_parts, part) if num_parts > 1 else (0, n)
    return note_rows(_to_device(split_batch(element, num_parts, part, where), device), n, lo, hi)


def _empty_like(x):
    return None if x is None else x[:0]


def _to_device(element, device):
    if device is None:
        return element

    def move(x):
        if x is None:
            return x
        if is_tnp_array(x):
            return x if device_of(x) is device else x.to_device(device)
        if isinstance(x, _np.ndarray):
            return tnp.asarray(x, device=device)
        return x
    return _tree.map_structure(move, element)


# ================================================================ datasets
def auto_shard_policy(dataset):
    """The name of ``dataset``'s ``auto_shard_policy`` ("AUTO" without options)."""
    options = getattr(dataset, "options", None)
    if not callable(options):
        return "AUTO"
    dist = getattr(options(), "experimental_distribute", None)
    policy = getattr(dist, "auto_shard_policy", None)
    if policy is None:
        return "AUTO"
    return str(getattr(policy, "name", policy)).upper()


def _children(ds):
    """The datasets ``ds`` reads from (its inputs in the pipeline)."""
    inputs = getattr(ds, "_inputs", None)
    return list(inputs()) if callable(inputs) else []


def _pipeline(ds):
    seen, order, todo = set(), [], [ds]
    while todo:
        d = todo.pop()
        if id(d) in seen:
            continue
        seen.add(id(d))
        order.append(d)
        todo.extend(_children(d))
    return order


def sync_shuffle_seeds(dataset, comm):
    """Give every ``shuffle`` step of ``dataset`` worker 0's seed (one small collective), so
    that workers seeded differently still visit the samples in the same order (DATA
    sharding keeps each worker's part of the same global batches)."""
    if comm is None or comm.size == 1:
        return
    from ..data._transformations import ShuffleDataset
    shuffles = [d for d in _pipeline(dataset) if isinstance(d, ShuffleDataset)]
    seeds = comm.broadcast_object([int(d._seed) for d in shuffles], root=0)
    if len(seeds) != len(shuffles):
        raise ValueError(f"experimental_distribute_dataset: worker 0's dataset has "
                         f"{len(seeds)} shuffle steps, this worker's (rank {comm.rank}) has "
                         f"{len(shuffles)}; every worker must build the same pipeline")
    for d, s in zip(shuffles, seeds):
        d._seed = s


def _file_sharded(dataset, num_shards, index):
    """``dataset`` reading only every ``num_shards``-th file of its file list, or None when it
    reads no files (the data package's ``_shard_files`` hook; ValueError with fewer files than
    workers)."""
    hook = getattr(dataset, "_shard_files", None)
    if hook is None:
        return None
    return hook(num_shards, index)


def _reads_enough_files(dataset, num_workers):
    files = getattr(dataset, "_source_files", None)
    files = files() if callable(files) else None
    return files is not None and len(files) >= num_workers


class DistributedDataset:
    """Mirrors ``tf.distribute.DistributedDataset``: iterate it (``for batch in ds`` or
    ``iter(ds)``) for this worker's per-replica batches. Made by
    ``strategy.experimental_distribute_dataset``; no transformation can be added to it."""

    def __init__(self, dataset, strategy, options=None, _sync_seeds=True):
        from ..data import Dataset
        ext = strategy.extended
        self._strategy = strategy
        self._options = options
        self._num_workers = ext.num_workers
        self._worker = ext.worker_index
        self._num_replicas = ext.num_replicas_in_sync
        self._devices = ext.local_devices
        self._num_local = len(self._devices)
        self._replica_base = ext.local_replica_ids.start
        self._device = self._devices[0]
        self._comm = ext.communicator
        self._policy = auto_shard_policy(dataset) if isinstance(dataset, Dataset) else "DATA"
        if self._policy not in ("AUTO", "DATA", "FILE", "OFF", "HINT"):
            raise ValueError(f"experimental_distribute_dataset: unknown auto_shard_policy "
                             f"{self._policy!r}")
        if self._policy in ("AUTO", "HINT"):
            self._policy = "FILE" if self._num_workers > 1 and _reads_enough_files(
                dataset, self._num_workers) else "DATA"
        self._dataset = dataset
        if self._num_workers > 1 and self._policy == "FILE":
            sharded = _file_sharded(dataset, self._num_workers, self._worker)
            if sharded is None:
                raise ValueError("experimental_distribute_dataset: AutoShardPolicy.FILE needs a "
                                 "dataset that reads files (Dataset.list_files, "
                                 "TextLineDataset); this one reads none: use "
                                 "AutoShardPolicy.DATA")
            self._dataset = sharded
        elif self._num_workers > 1 and _sync_seeds and isinstance(dataset, Dataset):
            sync_shuffle_seeds(dataset, self._comm)

    def __iter__(self):
        return DistributedIterator(self)

    @property
    def element_spec(self):
        """The per-replica element structure (the dataset's, batch dimension unknown)."""
        return getattr(self._dataset, "element_spec", None)

    def cardinality(self):
        """The number of per-replica batches this worker iterates (-2: unknown, -1: infinite)."""
        card = getattr(self._dataset, "cardinality", None)
        if card is None:
            try:
                c = len(self._dataset)
            except TypeError:
                return -2
        else:
            c = int(card())
        if c < 0 or self._policy == "DATA":
            return c
        if self._policy == "FILE":
            return -2
        return c * self._num_replicas          # OFF: every part of every batch

    def reduce(self, initial_state, reduce_fn):
        """Mirrors ``DistributedDataset.reduce(initial_state, reduce_fn)``: ``state =
        reduce_fn(state, batch)`` over this worker's batches."""
        state = initial_state
        for batch in self:
            state = reduce_fn(state, batch)
        return state

    def __repr__(self):
        return (f"<tt.distribute.DistributedDataset worker {self._worker} of "
                f"{self._num_workers}, {self._policy} sharding>")


class DistributedIterator:
    """Mirrors ``tf.distribute.DistributedIterator``: ``next(it)`` / ``it.get_next()`` give
    this worker's next per-replica batch (StopIteration at the end, as ``tt.data``'s
    iterators; TF raises OutOfRangeError from ``get_next``)."""

    def __init__(self, dist):
        self._dist = dist
        self._it = iter(dist._dataset)
        self._parts = collections.deque()
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        d = self._dist
        if d._num_local > 1:
            return self._next_local_replicas()
        if d._num_replicas == 1:
            return _to_device(_as_batch(next(self._it)), d._device)
        if d._policy == "DATA":
            element = _as_batch(next(self._it))
            self._last = element
            return self._split(element)
        if d._policy == "OFF":
            if not self._parts:
                element = _as_batch(next(self._it))
                self._parts.extend(split_batch(element, d._num_replicas, p)
                                   for p in range(d._num_replicas))
            return _to_device(self._parts.popleft(), d._device)
        return self._next_file_sharded()

    def _split(self, element):
        """This worker's part of a global ``element``, as the strategy's workers are now (an
        elastic job that lost a worker re-shards what is left of the epoch)."""
        d = self._dist
        ext = d._strategy.extended
        d._num_replicas, d._worker = ext.num_replicas_in_sync, ext.worker_index
        d._num_workers = ext.num_workers
        return split_noted(element, d._num_replicas, d._worker, d._device)

    def rebatch(self):
        """The last global batch again, split over the workers there are now (DATA sharding;
        the other policies read files or whole elements per worker and cannot re-split)."""
        d = self._dist
        if d._policy != "DATA" or d._num_local > 1 or getattr(self, "_last", None) is None:
            raise RuntimeError(f"rebatch: a {d._policy}-sharded dataset cannot make its last "
                               f"batch again over fewer workers; elastic training needs "
                               f"AutoShardPolicy.DATA (or array inputs)")
        return self._split(self._last)

    def _next_local_replicas(self):
        """Several replicas in this process: one part per local replica, each on its
        replica's device, as a PerReplica value."""
        d = self._dist
        n = d._num_local
        if d._num_replicas == 1 or isinstance(d, DistributedDatasetsFromFunction):
            # elements are per-replica batches already: the next n, one per replica (TF's
            # round-robin); the epoch ends when a replica would get none
            parts = []
            for _ in range(n):
                try:
                    parts.append(_as_batch(next(self._it)))
                except StopIteration:
                    if not parts:
                        raise
                    raise ValueError(
                        f"distribute_datasets_from_function: the dataset ended after "
                        f"{len(parts)} of the {n} per-replica batches of a step; make its "
                        f"length a multiple of the {n} local replicas (e.g. repeat it)") \
                        from None
        elif d._policy == "DATA":
            element = _as_batch(next(self._it))
            return _values.PerReplica([split_noted(element, d._num_replicas,
                                                   d._replica_base + i, dev)
                                       for i, dev in enumerate(d._devices)])
        else:
            parts = []
            for _ in range(n):
                if d._policy == "FILE":
                    # the per-step "anyone still has data" agreement is per worker step
                    parts.append(self._next_file_sharded() if not parts else
                                 self._take_or_empty())
                else:
                    if not self._parts:
                        element = _as_batch(next(self._it))
                        self._parts.extend(split_batch(element, d._num_replicas, p)
                                           for p in range(d._num_replicas))
                    parts.append(self._parts.popleft())
        return _values.PerReplica([_to_device(p, dev) for p, dev in zip(parts, d._devices)])

    def _refill(self):
        """Queue the per-replica parts of this worker's next element, once its data is not
        exhausted (then ``_done``); the first part is the template of an empty batch."""
        if self._parts or self._done:
            return
        d = self._dist
        try:
            element = _as_batch(next(self._it))
        except StopIteration:
            self._done = True
            return
        self._parts.extend(split_batch(element, d._num_replicas, p)
                           for p in range(d._num_replicas))
        self._template = self._parts[0]

    def _take_or_empty(self):
        self._refill()
        if self._parts:
            return self._parts.popleft()
        return _tree.map_structure(_empty_like, self._template)

    def _next_file_sharded(self):
        d = self._dist
        self._refill()
        # every worker asks whether anyone still has data: a worker whose files ran out takes
        # empty batches meanwhile, so it never leaves the others waiting in a collective
        mine = 0 if self._done and not self._parts else 1
        anyone = int(_np.asarray(d._comm.allreduce(_np.array([mine], _np.int64),
                                                   op="max"))[0])
        if not anyone:
            raise StopIteration
        if self._parts:
            return _to_device(self._parts.popleft(), d._device)
        template = getattr(self, "_template", None)
        if template is None:
            raise ValueError("experimental_distribute_dataset: this worker's files hold no "
                             "element while other workers still have data; an empty batch "
                             "cannot be made without knowing the element's shape")
        return _to_device(_tree.map_structure(_empty_like, template), d._device)

    def get_next(self):
        """The next per-replica batch (StopIteration at the end)."""
        return self.__next__()

    def get_next_as_optional(self):
        """Mirrors ``DistributedIterator.get_next_as_optional()``: an optional holding the next
        batch, or empty at the end (``has_value()``, ``get_value()``)."""
        try:
            return _Optional(self.__next__(), True)
        except StopIteration:
            return _Optional(None, False)

    @property
    def element_spec(self):
        return self._dist.element_spec


class _Optional:
    """``tf.experimental.Optional``'s reading side: ``has_value()`` (a 0-d bool array) and
    ``get_value()``."""

    __slots__ = ("_value", "_has")

    def __init__(self, value, has):
        self._value = value
        self._has = has

    def has_value(self):
        return tnp.asarray(self._has)

    def get_value(self):
        if not self._has:
            raise ValueError("Optional.get_value: the optional has no value (the iterator is "
                             "exhausted)")
        return self._value


def _as_batch(element):
    return tuple(element) if isinstance(element, list) else element


class DistributedDatasetsFromFunction(DistributedDataset):
    """What ``distribute_datasets_from_function(dataset_fn)`` returns: ``dataset_fn(
    InputContext)`` made this worker's dataset, whose elements are already per-replica batches
    (the function shards and batches as it wants)."""

    def __init__(self, dataset_fn, strategy, options=None):
        from .input_options import InputContext
        if not callable(dataset_fn):
            raise TypeError(f"distribute_datasets_from_function: dataset_fn must be callable, "
                            f"got {type(dataset_fn).__name__}")
        ext = strategy.extended
        ctx = InputContext(num_input_pipelines=ext.num_workers,
                           input_pipeline_id=ext.worker_index,
                           num_replicas_in_sync=ext.num_replicas_in_sync)
        dataset = dataset_fn(ctx)
        if dataset is None or not hasattr(dataset, "__iter__"):
            raise TypeError(f"distribute_datasets_from_function: dataset_fn must return a "
                            f"dataset, got {type(dataset).__name__}")
        self._strategy = strategy
        self._options = options
        self._num_workers = ext.num_workers
        self._worker = ext.worker_index
        self._num_replicas = 1          # elements are per-replica already: nothing to split
        self._devices = ext.local_devices
        self._num_local = len(self._devices)
        self._replica_base = 0
        self._device = self._devices[0]
        self._comm = ext.communicator
        self._policy = "OFF"
        self._dataset = dataset

    def cardinality(self):
        card = getattr(self._dataset, "cardinality", None)
        return -2 if card is None else int(card())
