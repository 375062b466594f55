"""The constants and row helpers of ``tt.data``: argument checks, the row and chunk streams of
indexed pipelines (``range`` chunks and NumPy index arrays), shuffling indices, and batching
rows. :mod:`.dataset` and the datasets split off it (:mod:`._sources`,
:mod:`._transformations`, :mod:`._batching`, ...) all import them from here."""
from __future__ import annotations

import itertools
import os

import numpy as _np

from tnp.extend import (
    array_module as _array_module, backend_array as _backend, device_of as _device_of, wrap as _wrap,
)
from tnp import get_default_device, ndarray as _ndarray

from ..sparse import SparseTensor as _SparseTensor
from ..utils import tree as _tree

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
INFINITE = INFINITE_CARDINALITY
UNKNOWN = UNKNOWN_CARDINALITY

_SHUFFLE_DRAWS = 1024   # uniforms drawn at once by the shuffle buffer
_SHUFFLE_CHUNK = 4096   # shuffled indices handed downstream per array


# =========================================================================== helpers
def _int_arg(value, name, op, minimum=None, allow_minus_one=False):
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)):
        if isinstance(value, _ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
            value = int(value)
        else:
            raise TypeError(f"Dataset.{op}: {name} must be an integer, got {value!r}")
    value = int(value)
    if allow_minus_one and value == -1:
        return value
    if minimum is not None and value < minimum:
        raise ValueError(f"Dataset.{op}: {name} must be >= {minimum}"
                         f"{' (or -1)' if allow_minus_one else ''}, got {value}")
    return value


def _call(fn, element):
    """``fn`` applied to an element as ``tf.data`` does: a tuple is unpacked into arguments."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


def _as_bool(value, op):
    if isinstance(value, (bool, _np.bool_)):
        return bool(value)
    if isinstance(value, (_ndarray, _np.ndarray)) and value.shape == () and value.dtype == bool:
        return bool(value)
    desc = (f"an array of shape {value.shape} and dtype {value.dtype}"
            if hasattr(value, "shape") and hasattr(value, "dtype") else repr(type(value).__name__))
    raise ValueError(f"Dataset.{op}: the predicate must return a scalar boolean, got {desc}")


def _num_workers(n, op):
    if n is None:
        return 1
    n = _int_arg(n, "num_parallel_calls", op, minimum=1, allow_minus_one=True)
    if n == AUTOTUNE:
        return max(1, os.cpu_count() or 1)
    return n


def _scalar_int64(v):
    return _wrap(_np.int64(v), get_default_device())


def _read_only_copy(leaf):
    a = _backend(leaf)
    dev = _device_of(leaf)
    if isinstance(a, _np.ndarray):
        c = _np.array(a, copy=True)
        c.setflags(write=False)
    else:
        c = a.copy()
    return _wrap(c, dev)


def _to_numpy(leaf):
    if isinstance(leaf, _SparseTensor):   # TF gives a SparseTensorValue; the parts here
        return leaf
    a = _backend(leaf)
    if isinstance(a, (_np.ndarray, _np.generic)):
        if a.ndim == 0 and a.dtype.kind in "SU":
            return a[()]  # a string scalar as NumPy's (bytes_), as TF gives bytes
        return a
    return a.get()  # CuPy


def _row_getter(a, dev):
    """``i -> row i of backend array a`` as a tnp array. NumPy gives a bare ``bytes_``/``str_``
    for a row of a 1-d string array, which tnp does not wrap: a 0-d array view then, so every
    element is a tnp array."""
    if a.ndim == 1 and a.dtype.kind in "SU":
        return lambda i: _wrap(a[i, ...], dev)
    return lambda i: _wrap(a[i], dev)


def _stack(leaves, op):
    """One ``xp.stack`` of same-shaped leaves (ValueError naming the shapes otherwise)."""
    first = leaves[0]
    if isinstance(first, _SparseTensor):
        raise TypeError(f"Dataset.{op}: SparseTensor components cannot be batched here (TF "
                        "batches them into a SparseTensor of one more rank): batch the records "
                        "before parsing (parse_example), or make them dense in the map function "
                        "(tt.sparse.to_dense)")
    dev = _device_of(first)
    shape = first.shape
    arrays = [_backend(x) for x in leaves]
    xp = _array_module(dev)
    try:
        return _wrap(xp.stack(arrays), dev)
    except ValueError:
        pass
    for i, x in enumerate(leaves):
        if x.shape != shape:
            raise ValueError(
                f"Dataset.{op}: cannot batch components with different shapes: the first element "
                f"has shape {shape} and element {i} has shape {x.shape} (use padded_batch, or "
                f"map to a common shape first)")
    return _wrap(xp.stack(arrays), dev)


def _batch_elements(elements, template, op):
    if not isinstance(template, (tuple, dict)):
        return _stack(elements, op)
    flatten = _tree.flatten
    columns = zip(*[flatten(e) for e in elements])
    return _tree.pack_sequence_as(template, [_stack(col, op) for col in columns])


def _uniforms(rng):
    """Uniform draws in [0, 1) from ``rng``, drawn in blocks (one call per block)."""
    while True:
        yield from rng.random(_SHUFFLE_DRAWS).tolist()


def _shuffled(it, buffer_size, rng):
    """``tf.data``'s shuffle buffer: fill ``buffer_size`` items, then repeatedly emit a random
    one and put the next input in its place; at the end drain the buffer in random order."""
    it = iter(it)
    buf = list(itertools.islice(it, buffer_size))
    u = _uniforms(rng).__next__
    for x in it:
        n = len(buf)
        j = int(u() * n)
        if j >= n:   # a draw that rounds up to n
            j = n - 1
        out = buf[j]
        buf[j] = x
        yield out
    while buf:
        n = len(buf)
        j = int(u() * n)
        if j >= n:
            j = n - 1
        out = buf[j]
        last = buf.pop()
        if j < n - 1:
            buf[j] = last
        yield out


# ---------------------------------------------------------------- index chunks (fast paths)
def _chunk_ints(chunks):
    for c in chunks:
        if isinstance(c, range):
            yield from c
        else:
            yield from c.tolist()


def _as_index_array(c):
    if isinstance(c, range):
        return _np.arange(c.start, c.stop, c.step, dtype=_np.int64)
    return c


def _merge(pieces):
    if len(pieces) == 1 and isinstance(pieces[0], range):
        r = pieces[0]
        return slice(r.start, r.start + (len(r) - 1) * r.step + 1, r.step)
    return _np.concatenate([_as_index_array(p) for p in pieces])


def _batch_selectors(chunks, size, drop_remainder):
    """Selectors (slices or index arrays) of ``size`` consecutive indices of the chunk stream."""
    pending = []
    npend = 0
    for c in chunks:
        m = len(c)
        if m == 0:
            continue
        pos = 0
        if npend:
            piece = c[:size - npend]
            pending.append(piece)
            npend += len(piece)
            pos = len(piece)
            if npend < size:
                continue
            yield _merge(pending)
            pending = []
            npend = 0
        if isinstance(c, range):
            step = c.step
            span = (size - 1) * step + 1
            while m - pos >= size:
                a = c[pos]
                yield slice(a, a + span, step)
                pos += size
        else:
            while m - pos >= size:
                yield c[pos:pos + size]
                pos += size
        if pos < m:
            pending.append(c[pos:])
            npend = m - pos
    if npend and not drop_remainder:
        yield _merge(pending)


def _take_chunks(chunks, count):
    if count == 0:
        return
    left = count
    for c in chunks:
        m = len(c)
        if m >= left:
            yield c[:left]
            return
        yield c
        left -= m


def _skip_chunks(chunks, count):
    left = count
    for c in chunks:
        if left <= 0:
            yield c
            continue
        m = len(c)
        if m <= left:
            left -= m
            continue
        yield c[left:]
        left = 0


def _shard_chunks(chunks, num_shards, index):
    pos = 0
    for c in chunks:
        m = len(c)
        off = (index - pos) % num_shards
        if off < m:
            yield c[off::num_shards]
        pos += m


def _select_rows(leaf_arrays, sel):
    out = []
    for a, dev in leaf_arrays:
        if not isinstance(sel, slice) and not isinstance(a, _np.ndarray):
            sel = _array_module(dev).asarray(sel)
        out.append(_wrap(a[sel], dev))
    return out
