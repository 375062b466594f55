"""What ``fit``/``evaluate``/``predict`` accept, turned into batches.

Arrays (NumPy, tnp, lists; a tuple/list/dict of them for several inputs or outputs) are sliced
into batches (shuffled per epoch from the training generator, so ``tt.utils.set_random_seed``
reproduces a run); a ``tt.data.Dataset`` or any re-iterable of ``(x, y[, sample_weight])``
batches is iterated as it is; a Python generator is read ``steps_per_epoch`` batches at a time.

Under a distribution strategy (``distribute=``) the batches are global: each worker gets its
part of every batch (``input_lib``'s rule: contiguous parts, the first ones a row longer when
the batch does not divide), so every sample is seen once per epoch across the workers and every
worker takes the same number of steps; arrays are shuffled with worker 0's permutation.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as _np

import tnp
from tnp.extend import is_floating

from ..distribute.values import PerReplica
from ..utils.data_utils import Sequence as _KerasSequence
from ..utils.random import get_rng
from ..utils.tree import flatten, pack_sequence_as

__all__ = ["unpack_x_y_sample_weight", "pack_x_y_sample_weight", "DataHandler",
           "train_validation_split", "check_count", "check_fraction", "check_class_weight"]


def check_count(name, value, minimum=1, allow_none=True):
    """``value`` as an int >= ``minimum`` (None passes when allowed); a ValueError naming the
    argument otherwise (``2.5`` or ``True`` epochs are refused, not truncated)."""
    if value is None and allow_none:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r} "
                         f"({type(value).__name__})") from None
    if n < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {n}")
    return n


def check_fraction(name, value):
    """``value`` as a float in [0, 1) (None is 0, as Keras reads a false split); a ValueError
    naming the argument otherwise."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a float in [0, 1), got {value!r}")
    return float(value)


def check_class_weight(class_weight, num_classes=None):
    """Keras's check of ``class_weight``: a dict whose keys are the class ids 0 to K-1 (and,
    when the model's output tells ``num_classes``, no class beyond it)."""
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict):
        raise TypeError(f"`class_weight` must be a dict mapping class ids to weights, got "
                        f"{type(class_weight).__name__}")
    try:
        ids = sorted(class_weight)
    except TypeError:
        ids = None
    if ids != list(range(len(class_weight))) or (num_classes is not None and
                                                 len(ids) > num_classes):
        extra = "" if num_classes is None else f" (the model's output has {num_classes} classes)"
        raise ValueError(f"Expected `class_weight` to be a dict with keys from 0 to one less "
                         f"than the number of classes, found {class_weight}{extra}")
    return class_weight


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from a batch: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sw)``."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     f"`(x, y, sample_weight)`, found a tuple of {len(data)} elements")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    if y is None:
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def _is_distributed(x):
    from ..distribute.input_lib import DistributedDataset  # noqa: PLC0415
    return isinstance(x, DistributedDataset)


def _part_bounds(n, parts, part):
    from ..distribute.input_lib import part_bounds  # noqa: PLC0415
    return part_bounds(n, parts, part)


def _is_dataset(x):
    from ..data import Dataset  # noqa: PLC0415 (data sits beside the trainers)
    return isinstance(x, Dataset)


def _to_array(a):
    if a is None or isinstance(a, tnp.ndarray):
        return a
    if isinstance(a, (_np.ndarray, list, int, float)) or hasattr(a, "__array__"):
        return tnp.asarray(a)
    raise TypeError(f"fit/evaluate/predict: cannot use {type(a).__name__} as input data")


def _arrays(structure):
    if structure is None:
        return None
    if isinstance(structure, (tuple, list)) and structure and not _is_leaf_list(structure):
        return type(structure)(_arrays(s) for s in structure)
    if isinstance(structure, dict):
        return {k: _arrays(v) for k, v in structure.items()}
    return _to_array(structure)


def _is_leaf_list(s):
    """A plain list of numbers (one array), rather than a list of arrays (several inputs)."""
    return isinstance(s, list) and all(isinstance(e, (int, float, bool, _np.number)) for e in s)


def _num_samples(structure):
    leaves = [a for a in flatten(structure) if a is not None]
    if not leaves:
        return 0
    ns = {int(a.shape[0]) if a.ndim else 1 for a in leaves}
    if len(ns) > 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have different numbers of "
                         f"samples {sorted(ns)} (shapes {[tuple(a.shape) for a in leaves]}). "
                         f"Make sure all arrays contain the same number of samples.")
    return ns.pop()


def train_validation_split(arrays, validation_split):
    """The last ``validation_split`` of the samples for validation (before any shuffling), as
    Keras does."""
    if not 0 < validation_split < 1:
        raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
    n = _num_samples(arrays)
    split = int(math.floor(n * (1.0 - validation_split)))
    if split == 0 or split == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split "
                         f"it into a validation and training set as specified by "
                         f"`validation_split={validation_split}`.")
    flat = flatten(arrays)
    train = pack_sequence_as(arrays, [None if a is None else a[:split] for a in flat])
    val = pack_sequence_as(arrays, [None if a is None else a[split:] for a in flat])
    return train, val


class DataHandler:
    """Yields ``(step, batch)`` per epoch for any accepted input."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps_per_epoch=None,
                 shuffle=False, class_weight=None, for_predict=False, num_classes=None,
                 distribute=None):
        if x is None:
            raise ValueError("No input data: `x` is None (expected an array, a list or dict of "
                             "arrays, a Dataset or a generator)")
        self._steps = steps_per_epoch
        self._shuffle = shuffle
        self._class_weight = check_class_weight(class_weight, num_classes)
        self._num_classes = num_classes
        self._class_weight_tables = {}      # (device, length) -> the weights as an array there
        self._iterator = None
        # (number of parts, this worker's part, device, communicator) under a strategy
        self._dist = None
        self._ext = None
        self._last = None       # how the last batch was made, for rebatch()
        if distribute is not None:
            ext = self._ext = distribute.extended
            # parts of a global batch, this worker's first part (its first replica's), the
            # devices of its replicas (one part each), its communicator; read again at every
            # batch (_sharding), since an elastic job changes them when it loses a worker
            self._dist = (ext.num_replicas_in_sync, ext.local_replica_ids.start,
                          ext.local_devices, ext.communicator)
        if _is_dataset(x) or (hasattr(x, "__iter__") and not isinstance(
                x, (tnp.ndarray, _np.ndarray, list, tuple, dict)) and not hasattr(x, "__array__")):
            if y is not None:
                raise ValueError("`y` argument is not supported when using a dataset or generator "
                                 "as input (the batches carry the targets).")
            if sample_weight is not None:
                raise ValueError("`sample_weight` argument is not supported when using a dataset "
                                 "or generator as input.")
            self._is_arrays = False
            self._reiterable = _is_dataset(x) or not (iter(x) is x)
            if distribute is not None and _is_dataset(x):
                # the strategy's own input path: sharding policy, worker 0's shuffle seeds
                x = distribute.experimental_distribute_dataset(x)
                self._dist = None
            elif _is_distributed(x):
                self._dist = None            # the user distributed it already
            self._source = x
            self._n = None
            self.batch_size = None
            return
        self._is_arrays = True
        self._data = (_arrays(x),) if for_predict and y is None else \
            pack_x_y_sample_weight(_arrays(x), _arrays(y), _arrays(sample_weight))
        self._n = _num_samples(self._data)
        self.batch_size = 32 if batch_size is None else check_count("batch_size", batch_size)
        comm = self._dist[3] if self._dist else None
        if comm is not None and comm.size > 1:
            # workers with other data would take other numbers of steps and stall each other
            seen = comm.allgather_object((self._n, self.batch_size, steps_per_epoch))
            if len(set(seen)) > 1:
                raise ValueError(f"fit/evaluate/predict under a strategy: every worker must be "
                                 f"given the same arrays (the global data); (samples, "
                                 f"batch_size, steps) per rank: {dict(enumerate(seen))}")

    out_of_data = False     # set when a steps_per_epoch read ran past the end of the data

    def _cardinality(self):
        """The number of batches of a dataset or sized source, or None (unknown, infinite)."""
        if _is_dataset(self._source) or _is_distributed(self._source):
            c = int(self._source.cardinality())
            return c if c >= 0 else None
        try:
            return len(self._source)
        except TypeError:
            return None

    @property
    def steps_per_epoch(self):
        if self._is_arrays:
            full = math.ceil(self._n / self.batch_size) if self._n else 0
            return min(full, self._steps) if self._steps else full
        if self._steps is not None:
            return self._steps
        return self._cardinality()

    def _weights_for(self, batch):
        """The batch with ``class_weight`` turned into sample weights (TF 2.4's
        ``_make_class_weight_map_fn``), computed on the targets' device."""
        if self._class_weight is None:
            return batch
        x, y, sw = unpack_x_y_sample_weight(batch)
        if y is None:
            return batch
        if isinstance(y, (tuple, list, dict)):
            raise ValueError("`class_weight` is only supported for Models with a single output.")
        y = y if isinstance(y, tnp.ndarray) else tnp.asarray(y)
        if y.ndim > 2:
            raise ValueError(f"`class_weight` not supported for 3+ dimensional targets (targets "
                             f"of shape {tuple(y.shape)}).")
        one_hot = y.ndim == 2 and y.shape[1] > 1
        cls = tnp.argmax(y, axis=1) if one_hot else tnp.reshape(y, (-1,)).astype(_np.int64)
        n = max(len(self._class_weight), self._num_classes or 0, y.shape[1] if one_hot else 0)
        w = self._class_weight_table(y.device, n)[cls]
        if sw is not None:
            # class and sample weights multiply, per sample (TF's expand_1d: an (n, 1) sample
            # weight meets the class weights as a column, never broadcast to (n, n))
            sw = sw if isinstance(sw, tnp.ndarray) else tnp.asarray(sw, device=y.device)
            if sw.ndim > 1:
                w = tnp.reshape(w, (-1,) + (1,) * (sw.ndim - 1))
            w = w.astype(sw.dtype) * sw if is_floating(sw.dtype) else w * sw.astype(w.dtype)
        return (x, y, w)

    def _class_weight_table(self, device, n):
        # classes beyond the dict's keys (one-hot targets wider than it) weigh 1, as in Keras 3
        key = (device, n)
        if key not in self._class_weight_tables:
            cw = self._class_weight
            self._class_weight_tables[key] = tnp.asarray(
                _np.array([cw.get(i, 1.0) for i in range(n)], dtype=_np.float32), device=device)
        return self._class_weight_tables[key]

    def epoch_iterator(self):
        """The batches of one epoch."""
        if self._is_arrays:
            yield from self._array_batches()
            return
        steps = self._steps
        if isinstance(self._source, _KerasSequence) and steps is None and self._dist is None:
            # Keras's KerasSequenceAdapter: batch order shuffled per epoch when fit shuffles,
            # then the sequence's on_epoch_end
            order = get_rng().permutation(len(self._source)) if self._shuffle else \
                range(len(self._source))
            for i in order:
                batch = self._source[int(i)]
                yield self._weights_for(batch if not isinstance(batch, list) else tuple(batch))
            self._source.on_epoch_end()
            return
        if self._reiterable:
            # TF 2.4's DataHandler: a dataset read ``steps_per_epoch`` batches at a time goes on
            # from where the last epoch stopped, unless the epoch is the whole dataset
            fresh = steps is None or self._iterator is None or self._cardinality() == steps
            it = iter(self._source) if fresh else self._iterator
            if steps is not None:
                self._iterator = it
        else:
            it = self._source if self._iterator is None else self._iterator
            self._iterator = it
        self._dist_iterator = it
        k = 0
        while steps is None or k < steps:
            try:
                batch = next(it)
            except StopIteration:
                if steps is not None:
                    # the data ran out before steps_per_epoch * epochs batches: the epoch ends
                    # here and fit stops after it, as TF's (it never starts the data again;
                    # a .repeat()ed dataset is how a user asks for more)
                    self.out_of_data = True
                return
            batch = batch if isinstance(batch, tuple) else \
                (tuple(batch) if isinstance(batch, list) else batch)
            if self._dist is not None:
                self._last = ("global", batch)
                yield self._local_part(batch)
            else:
                yield self._weights_for(batch)
            k += 1

    def _local_part(self, batch):
        """This worker's part of a global batch (a generator's), on the strategy's device."""
        if self._dist is None:
            return batch
        from ..distribute.input_lib import split_noted
        parts, base, devices, _ = self._sharding()
        local = [self._weights_for(split_noted(batch, parts, base + i, d, "fit"))
                 for i, d in enumerate(devices)]
        return local[0] if len(local) == 1 else PerReplica(local)

    def _array_batches(self):
        n, bs = self._n, self.batch_size
        flat = flatten(self._data)
        if self._shuffle:
            if self._shuffle == "batch":
                order = _np.arange(n)
                nb = math.ceil(n / bs)
                bo = get_rng().permutation(nb)
                idx = _np.concatenate([order[b * bs:(b + 1) * bs] for b in bo]) if nb else order
            else:
                idx = get_rng().permutation(n)
        else:
            idx = None
        _, _, _, comm = self._sharding()
        if idx is not None and comm is not None and comm.size > 1:
            # worker 0's order on every worker (ranks seeded differently would shuffle apart)
            idx = comm.broadcast(_np.ascontiguousarray(idx, dtype=_np.int64), root=0)
        steps = self.steps_per_epoch
        for b in range(steps):
            lo, hi = b * bs, min((b + 1) * bs, n)
            self._last = ("rows", flat, idx, lo, hi)
            yield self._part_of_rows(flat, idx, lo, hi)

    def _sharding(self):
        """``(parts, first part, devices, communicator)`` as the strategy has them now."""
        ext = self._ext
        if ext is None:
            return 1, 0, (None,), None
        return (ext.num_replicas_in_sync, ext.local_replica_ids.start, ext.local_devices,
                ext.communicator)

    def _part_of_rows(self, flat, idx, lo, hi):
        """This worker's part of the global batch of rows [lo, hi)."""
        if self._ext is None:           # no strategy: the rows themselves, on their device
            return self._rows(flat, idx, lo, hi, None)
        parts, base, devices, _ = self._sharding()
        # each local replica's rows of the global batch [lo, hi): its part of it
        spans = [_part_bounds(hi - lo, parts, base + i) for i in range(len(devices))] \
            if parts > 1 else [(0, hi - lo)]
        from ..distribute.input_lib import note_rows
        # noted as those rows of the global batch: the replicas' dropout masks are then the
        # parts of one process's (tt.utils.random.replica_draws)
        local = [self._rows(flat, idx, lo + a, lo + e, d) for (a, e), d in zip(spans, devices)]
        if parts > 1:
            for part, (a, e) in zip(local, spans):
                note_rows(part, hi - lo, a, e)
        return PerReplica(local) if len(devices) > 1 else local[0]

    def rebatch(self):
        """The last batch again, split as the strategy is now (an elastic job that lost a
        worker redoes the interrupted step over the survivors)."""
        last = self._last
        if last is None:
            it = getattr(self, "_dist_iterator", None)
            if it is not None and hasattr(it, "rebatch"):
                return it.rebatch()
            raise RuntimeError("rebatch: this input cannot make its last batch again "
                               "(only arrays, generators and DATA-sharded datasets can)")
        if last[0] == "rows":
            return self._part_of_rows(*last[1:])
        return self._local_part(last[1])

    def _rows(self, flat, idx, lo, hi, device):
        """Rows [lo, hi) of the (shuffled) arrays, on ``device``, as a batch."""
        if idx is None:
            leaves = [None if a is None else a[lo:hi] for a in flat]
        else:
            sel = {}    # the batch's indices on each device that holds data
            leaves = []
            for a in flat:
                if a is None:
                    leaves.append(None)
                    continue
                d = a.device
                if d not in sel:
                    sel[d] = tnp.asarray(idx[lo:hi], device=d)
                leaves.append(a[sel[d]])
        if device is not None:
            leaves = [a if a is None or a.device == device else a.to_device(device)
                      for a in leaves]
        return self._weights_for(pack_sequence_as(self._data, leaves))
