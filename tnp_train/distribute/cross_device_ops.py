"""Cross-device reductions (TF 2.4's ``cross_device_ops``) on the collective layer. The gradient
aggregators a strategy gives an optimizer are in :mod:`.gradient_reduction` (still importable
from here).

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
from .collective_util import refuse_compression
from .reduce_util import as_reduce_op

__all__ = ["CrossDeviceOps", "ReductionToOneDevice", "NcclAllReduce",
           "HierarchicalCopyAllReduce", "all_reduce_arrays"]


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
        refuse_compression(options, f"{type(self).__name__}.batch_reduce")
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


def __getattr__(name):
    # the gradient aggregators lived here before they had a module of their own
    if name in ("AllReduceGradients", "PerReplicaGradients"):
        from . import gradient_reduction
        return getattr(gradient_reduction, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
