"""``tt.distribute.experimental.partitioners`` (TF 2.4's): how many shards a variable is split
into along an axis, as ``ParameterServerStrategy(variable_partitioner=...)`` asks. Each
partitioner is called as ``partitioner(shape, dtype, axis=0)`` and returns one count per
dimension (1 except along ``axis``)."""
from __future__ import annotations

import math
import numbers

import numpy as _np

__all__ = ["Partitioner", "FixedShardsPartitioner", "MinSizePartitioner", "MaxSizePartitioner"]


def _positive_int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{owner}: `{name}` must be a positive integer, got {value!r}")
    return int(value)


def _shape_and_size(owner, shape, dtype, axis, bytes_per_string):
    shape = tuple(int(d) for d in shape)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"{owner}: axis {axis} is out of range for a shape of rank "
                         f"{len(shape)} {shape}")
    dt = _np.dtype(getattr(dtype, "name", dtype)) if dtype is not str else _np.dtype(str)
    size = bytes_per_string if dt.kind in "SUO" else dt.itemsize
    return shape, axis % len(shape), size


class Partitioner:
    """Mirrors ``tf.distribute.experimental.partitioners.Partitioner``: the base class."""

    def __call__(self, shape, dtype, axis=0):
        raise NotImplementedError(f"{type(self).__name__}.__call__ must be implemented")


class FixedShardsPartitioner(Partitioner):
    """Mirrors ``FixedShardsPartitioner(num_shards)``: ``num_shards`` shards along ``axis``
    (fewer when the axis is shorter)."""

    def __init__(self, num_shards):
        self._num_shards = _positive_int("FixedShardsPartitioner", "num_shards", num_shards)

    def __call__(self, shape, dtype, axis=0):
        shape, axis, _ = _shape_and_size("FixedShardsPartitioner", shape, dtype, axis, 16)
        out = [1] * len(shape)
        out[axis] = min(self._num_shards, shape[axis])
        return out


class MinSizePartitioner(Partitioner):
    """Mirrors ``MinSizePartitioner(min_shard_bytes=256 << 10, max_shards=1,
    bytes_per_string=16)``: as many shards as keep each at least ``min_shard_bytes``, at most
    ``max_shards`` and the axis length."""

    def __init__(self, min_shard_bytes=256 << 10, max_shards=1, bytes_per_string=16):
        who = "MinSizePartitioner"
        self._min_shard_bytes = _positive_int(who, "min_shard_bytes", min_shard_bytes)
        self._max_shards = _positive_int(who, "max_shards", max_shards)
        self._bytes_per_string = _positive_int(who, "bytes_per_string", bytes_per_string)

    def __call__(self, shape, dtype, axis=0):
        shape, axis, size = _shape_and_size("MinSizePartitioner", shape, dtype, axis,
                                            self._bytes_per_string)
        total = math.prod(shape) * size
        out = [1] * len(shape)
        out[axis] = max(1, min(shape[axis], self._max_shards,
                               int(math.ceil(total / self._min_shard_bytes))))
        return out


class MaxSizePartitioner(Partitioner):
    """Mirrors ``MaxSizePartitioner(max_shard_bytes, max_shards=None, bytes_per_string=16)``:
    the fewest shards along ``axis`` that keep each at most ``max_shard_bytes`` (at least one
    slice per shard), capped at ``max_shards``."""

    def __init__(self, max_shard_bytes, max_shards=None, bytes_per_string=16):
        who = "MaxSizePartitioner"
        self._max_shard_bytes = _positive_int(who, "max_shard_bytes", max_shard_bytes)
        self._max_shards = None if max_shards is None else \
            _positive_int(who, "max_shards", max_shards)
        self._bytes_per_string = _positive_int(who, "bytes_per_string", bytes_per_string)

    def __call__(self, shape, dtype, axis=0):
        shape, axis, size = _shape_and_size("MaxSizePartitioner", shape, dtype, axis,
                                            self._bytes_per_string)
        out = [1] * len(shape)
        if shape[axis] == 0:
            return out
        per_slice = math.prod(shape) / shape[axis] * size
        slices_per_shard = max(1, math.floor(self._max_shard_bytes / per_slice)) \
            if per_slice else shape[axis]
        shards = int(math.ceil(shape[axis] / slices_per_shard))
        if self._max_shards:
            shards = min(self._max_shards, shards)
        out[axis] = shards
        return out
