"""``tt.data.Dataset``: an input pipeline modelled on ``tf.data.Dataset`` (TF 2.4).

A dataset is a description of a sequence of elements; iterating it (``for x in ds``, or
``iter(ds)``) builds a fresh chain of Python iterators, so a dataset can be iterated any number
of times, from any thread, and several iterations can run at once. Elements are tnp arrays or
tuples/dicts of them.

Two fast paths keep ``from_tensor_slices(...)[.shuffle()][.repeat()][.shard()].batch(B)``
cheap: such pipelines are *indexed* (their elements are rows ``i`` of the source arrays, and the
pipeline is a stream of row indices, handled as ``range`` chunks and NumPy index arrays), so a
batch is one basic slice per component (a view) when its rows are evenly spaced, else one fancy
index per component. The shuffle of an indexed pipeline runs the same buffer algorithm, with the
same random draws, on the indices, so the order is exactly that of shuffling the elements.
"""
from __future__ import annotations

import itertools
import os
import threading

import numpy as _np

from tnp._core.devices import get_default_device
from tnp._core.ndarray import ndarray as _ndarray
from tnp._core.ndarray import wrap as _wrap

from . import _structure as _st
from ._structure import TensorSpec
from ._threads import ParallelMapIterator, PrefetchIterator

__all__ = ["Dataset", "Iterator", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

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
    a = leaf._a
    dev = leaf._dev
    if isinstance(a, _np.ndarray):
        c = _np.array(a, copy=True)
        c.setflags(write=False)
    else:
        c = a.copy()
    return _wrap(c, dev)


def _to_numpy(leaf):
    a = leaf._a
    if isinstance(a, (_np.ndarray, _np.generic)):
        return a
    return a.get()  # CuPy


def _stack(leaves, op):
    """One ``xp.stack`` of same-shaped leaves (ValueError naming the shapes otherwise)."""
    first = leaves[0]
    dev = first._dev
    shape = first.shape
    arrays = [x._a for x in leaves]
    xp = dev.backend.xp
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
    flatten = _st.flatten
    return _st.pack(template, [_stack(col, op) for col in zip(*[flatten(e) for e in elements])])


def _shuffled(it, buffer_size, rng):
    """``tf.data``'s shuffle buffer: fill ``buffer_size`` items, then repeatedly emit a random
    one and put the next input in its place; at the end drain the buffer in random order."""
    it = iter(it)
    buf = list(itertools.islice(it, buffer_size))
    draws = []
    k = 0
    for x in it:
        if k == len(draws):
            draws = rng.random(_SHUFFLE_DRAWS).tolist()
            k = 0
        n = len(buf)
        j = int(draws[k] * n)
        k += 1
        if j >= n:
            j = n - 1
        out = buf[j]
        buf[j] = x
        yield out
    while buf:
        if k == len(draws):
            draws = rng.random(_SHUFFLE_DRAWS).tolist()
            k = 0
        n = len(buf)
        j = int(draws[k] * n)
        k += 1
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
            sel = dev.backend.xp.asarray(sel)
        out.append(_wrap(a[sel], dev))
    return out


# =========================================================================== Iterator
class Iterator:
    """An iterator over one pass of a dataset (``iter(ds)``; ``tf.data.Iterator``)."""

    __slots__ = ("_dataset", "_it", "__weakref__")

    def __init__(self, dataset):
        self._dataset = dataset
        self._it = dataset._iter_elements()

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def get_next(self):
        """The next element (StopIteration... as ``next``; TF raises OutOfRangeError)."""
        return next(self._it)

    next = get_next

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def close(self):
        """Stop this pass now (background threads of prefetch/parallel map end)."""
        close = getattr(self._it, "close", None)
        if close is not None:
            close()


# =========================================================================== Dataset
class Dataset:
    """A re-iterable sequence of elements (``tf.data.Dataset``, TF 2.4).

    Build one with a source (:meth:`from_tensor_slices`, :meth:`from_tensors`,
    :meth:`from_generator`, :meth:`range`, :meth:`zip`) and chain transformations; each returns
    a new dataset and leaves the old one unchanged.
    """

    _indexed = False       # elements are rows of in-memory arrays, see the module docstring
    _spec_needs_run = False  # element_spec is found by running the pipeline (map, generator)

    # ------------------------------------------------------------------ subclass interface
    def _iter_elements(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _cardinality(self):
        return UNKNOWN

    def _compute_spec(self):
        return self._spec_by_running()

    # indexed datasets only
    def _source(self):  # -> (template, [(backend array, device), ...])
        raise NotImplementedError

    def _index_chunks(self):
        raise NotImplementedError

    def _iter_indexed_elements(self):
        template, arrays = self._source()
        if len(arrays) == 1 and not isinstance(template, (tuple, dict)):
            a, dev = arrays[0]
            for c in self._index_chunks():
                if not isinstance(c, range):
                    c = c.tolist()
                for i in c:
                    yield _wrap(a[i], dev)
        else:
            pack = _st.packer(template)
            for c in self._index_chunks():
                if not isinstance(c, range):
                    c = c.tolist()
                for i in c:
                    yield pack([_wrap(a[i], dev) for a, dev in arrays])

    # ------------------------------------------------------------------ iteration
    def __iter__(self):
        return Iterator(self)

    def as_numpy_iterator(self):
        """Iterate with every component as a NumPy array (0-d ones as NumPy scalars)."""
        for e in self._iter_elements():
            if isinstance(e, _ndarray):
                yield _to_numpy(e)
            else:
                yield _st.pack(e, [_to_numpy(x) for x in _st.flatten(e)])

    def __bool__(self):
        return True

    def __len__(self):
        n = self._cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def cardinality(self):
        """The number of elements as a 0-d int64 array: a count, or
        ``INFINITE_CARDINALITY`` (-1) or ``UNKNOWN_CARDINALITY`` (-2)."""
        return _scalar_int64(self._cardinality())

    @property
    def element_spec(self):
        """The ``TensorSpec`` structure of an element. For ``map``, ``flat_map``,
        ``interleave`` and generators without a signature it is found by computing the first
        element (TF traces the function instead)."""
        spec = self.__dict__.get("_spec_cache")
        if spec is None:
            spec = self._compute_spec()
            self.__dict__["_spec_cache"] = spec
        return spec

    def _spec_by_running(self):
        it = self._iter_elements()
        try:
            first = next(it)
        except StopIteration:
            raise ValueError(f"{type(self).__name__}: cannot infer element_spec of an empty "
                             "dataset whose element type depends on running it") from None
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        return _st.spec_of(first)

    def __repr__(self):
        name = type(self).__name__
        if self._spec_needs_run and "_spec_cache" not in self.__dict__:
            return f"<{name}>"
        try:
            spec = self.element_spec
        except Exception:  # pragma: no cover
            return f"<{name}>"
        shapes = _st.map_structure(lambda s: "<unknown>" if s.shape is None else s.shape, spec) \
            if isinstance(spec, (tuple, dict)) else (spec.shape if spec.shape is not None
                                                      else "<unknown>")
        types = _st.map_structure(lambda s: s.dtype.name, spec) \
            if isinstance(spec, (tuple, dict)) else spec.dtype.name
        return f"<{name} shapes: {shapes}, types: {types}>"

    # ------------------------------------------------------------------ sources
    @staticmethod
    def from_tensor_slices(tensors):
        """A dataset of the slices of ``tensors`` along their first dimension
        (``tf.data.Dataset.from_tensor_slices``). ``tensors`` is an array or a tuple/dict nest
        of arrays whose first dimensions agree. The data is copied once (a snapshot); elements
        are read-only views of that copy."""
        return TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors):
        """A dataset of one element, ``tensors`` (``tf.data.Dataset.from_tensors``)."""
        return TensorDataset(tensors)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None):
        """A dataset of the values a Python generator yields
        (``tf.data.Dataset.from_generator``). ``generator`` is a callable returning an iterator;
        it is called again (with ``*args``) for every pass. With ``output_signature`` (a
        ``TensorSpec`` structure) or ``output_types``/``output_shapes``, values are converted to
        the declared dtypes (same-kind casts only, else TypeError) and their shapes checked
        (ValueError); without either, the values are taken as they come and the element_spec
        is that of the first value."""
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def range(*args, output_type=_np.int64):
        """``range(stop)``, ``range(start, stop[, step])`` as 0-d arrays of ``output_type``
        (int64 by default; ``tf.data.Dataset.range``)."""
        return RangeDataset(*args, output_type=output_type)

    @staticmethod
    def zip(datasets):
        """Elements of several datasets side by side (``tf.data.Dataset.zip``); ``datasets`` is
        a tuple/dict nest of datasets; it ends with the shortest."""
        return ZipDataset(datasets)

    # ------------------------------------------------------------------ transformations
    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """``map_func`` applied to every element (a tuple element is unpacked into arguments).
        With ``num_parallel_calls`` (an int or ``AUTOTUNE``) calls run on a pool of threads;
        the output order is always the input order, whatever ``deterministic`` says."""
        if not callable(map_func):
            raise TypeError(f"Dataset.map: map_func must be callable, got {map_func!r}")
        return MapDataset(self, map_func, _num_workers(num_parallel_calls, "map"))

    def filter(self, predicate):
        """The elements for which ``predicate`` returns True (a scalar boolean)."""
        if not callable(predicate):
            raise TypeError(f"Dataset.filter: predicate must be callable, got {predicate!r}")
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None):
        """Consecutive elements stacked into batches along a new first dimension
        (``tf.data.Dataset.batch``); the last batch is smaller unless ``drop_remainder``."""
        batch_size = _int_arg(batch_size, "batch_size", "batch", minimum=1)
        return BatchDataset(self, batch_size, bool(drop_remainder))

    def unbatch(self):
        """The inverse of batch: every element split along its first dimension."""
        return UnbatchDataset(self)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        """Batches of elements padded to a common shape (``tf.data.Dataset.padded_batch``).
        ``padded_shapes``: a shape per component (``None``/-1 entries pad to the longest in the
        batch), or None to pad every dimension to the longest; ``padding_values``: a scalar per
        component (or one for all), 0 by default."""
        batch_size = _int_arg(batch_size, "batch_size", "padded_batch", minimum=1)
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
                                  bool(drop_remainder))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        """Elements in random order, by ``tf.data``'s buffer algorithm: fill a buffer of
        ``buffer_size`` elements, emit a random one and replace it by the next input. With
        ``seed=None`` the seed is drawn from ``tnp_train.utils.get_rng()`` when the dataset is
        built (so ``tt.utils.set_random_seed`` makes it reproducible); with
        ``reshuffle_each_iteration`` (default True) every pass has another order."""
        buffer_size = _int_arg(buffer_size, "buffer_size", "shuffle", minimum=1)
        if seed is not None:
            seed = _int_arg(seed, "seed", "shuffle", minimum=0)
        if reshuffle_each_iteration is None:
            reshuffle_each_iteration = True
        return ShuffleDataset(self, buffer_size, seed, bool(reshuffle_each_iteration))

    def repeat(self, count=None):
        """The dataset ``count`` times over (forever for None or -1); each repetition is a new
        pass (a shuffle upstream reshuffles)."""
        if count is None:
            count = -1
        count = _int_arg(count, "count", "repeat", minimum=0, allow_minus_one=True)
        return RepeatDataset(self, count)

    def take(self, count):
        """The first ``count`` elements (all of them for -1)."""
        count = _int_arg(count, "count", "take", minimum=0, allow_minus_one=True)
        return TakeDataset(self, count)

    def skip(self, count):
        """All but the first ``count`` elements (none for -1)."""
        count = _int_arg(count, "count", "skip", minimum=0, allow_minus_one=True)
        return SkipDataset(self, count)

    def prefetch(self, buffer_size):
        """Produce up to ``buffer_size`` elements ahead on a background (daemon) thread.
        ``AUTOTUNE`` means 2; 0 means no prefetching. An exception upstream is raised by the
        consumer at the position it happened; stopping early, or dropping the iterator, stops
        the thread."""
        buffer_size = _int_arg(buffer_size, "buffer_size", "prefetch", minimum=0,
                               allow_minus_one=True)
        if buffer_size == AUTOTUNE:
            buffer_size = 2
        return PrefetchDataset(self, buffer_size)

    def shard(self, num_shards, index):
        """Every ``num_shards``-th element starting at ``index``: element ``i`` goes to shard
        ``i % num_shards`` (multi-worker input: ``ds.shard(num_workers, worker_index)``)."""
        num_shards = _int_arg(num_shards, "num_shards", "shard", minimum=1)
        index = _int_arg(index, "index", "shard", minimum=0)
        if index >= num_shards:
            raise ValueError(f"Dataset.shard: index must be < num_shards, got index={index}, "
                             f"num_shards={num_shards}")
        return ShardDataset(self, num_shards, index)

    def cache(self, filename=""):
        """Keep the elements of the first complete pass in memory and replay them afterwards
        (an incomplete first pass caches nothing). Only the in-memory cache exists: a
        ``filename`` raises NotImplementedError."""
        if filename:
            raise NotImplementedError(
                "Dataset.cache: only the in-memory cache (filename='') is implemented in tt.data")
        return CacheDataset(self)

    def enumerate(self, start=0):
        """``(index, element)`` pairs, the index a 0-d int64 array from ``start``."""
        start = _int_arg(start, "start", "enumerate")
        return EnumerateDataset(self, start)

    def concatenate(self, dataset):
        """This dataset's elements followed by ``dataset``'s (same structure and dtypes)."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"Dataset.concatenate: expected a Dataset, got {type(dataset).__name__}")
        return ConcatenateDataset(self, dataset)

    def flat_map(self, map_func):
        """``map_func`` (element -> Dataset) applied to every element; the datasets' elements
        in sequence."""
        if not callable(map_func):
            raise TypeError(f"Dataset.flat_map: map_func must be callable, got {map_func!r}")
        return InterleaveDataset(self, map_func, 1, 1)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None):
        """``map_func`` (element -> Dataset) applied to ``cycle_length`` input elements at a
        time, taking ``block_length`` elements from each in turn (``tf.data`` order). Runs
        sequentially; ``num_parallel_calls`` is accepted and ignored."""
        if not callable(map_func):
            raise TypeError(f"Dataset.interleave: map_func must be callable, got {map_func!r}")
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle_length = max(1, os.cpu_count() or 1)
        cycle_length = _int_arg(cycle_length, "cycle_length", "interleave", minimum=1)
        block_length = 1 if block_length is None else \
            _int_arg(block_length, "block_length", "interleave", minimum=1)
        return InterleaveDataset(self, map_func, cycle_length, block_length)

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """A dataset of windows: each element is a structure of datasets (one per component)
        of ``size`` elements taken every ``stride`` from starts ``shift`` apart."""
        size = _int_arg(size, "size", "window", minimum=1)
        shift = size if shift is None else _int_arg(shift, "shift", "window", minimum=1)
        stride = _int_arg(stride, "stride", "window", minimum=1)
        return WindowDataset(self, size, shift, stride, bool(drop_remainder))

    def take_while(self, predicate):
        """Elements up to (not including) the first for which ``predicate`` is False."""
        if not callable(predicate):
            raise TypeError(f"Dataset.take_while: predicate must be callable, got {predicate!r}")
        return TakeWhileDataset(self, predicate)

    def reduce(self, initial_state, reduce_func):
        """``reduce_func(state, element)`` folded over the dataset from ``initial_state``."""
        if not callable(reduce_func):
            raise TypeError(f"Dataset.reduce: reduce_func must be callable, got {reduce_func!r}")
        state = _st.to_element(initial_state, "Dataset.reduce: initial_state")
        for e in self._iter_elements():
            new = _st.normalize_fn_output(reduce_func(state, e), "Dataset.reduce: reduce_func")
            _st.assert_same_structure(state, new,
                                      "Dataset.reduce: the initial state and the new state")
            state = new
        return state

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("Dataset.apply: transformation_func must return a Dataset, got "
                            f"{type(out).__name__}")
        return out


# =========================================================================== sources
class TensorSliceDataset(Dataset):
    _indexed = True

    def __init__(self, tensors):
        struct = _st.to_element(tensors, "Dataset.from_tensor_slices")
        leaves = _st.flatten(struct)
        if not leaves:
            raise ValueError("Dataset.from_tensor_slices: got an empty structure")
        for x in leaves:
            if x.ndim == 0:
                raise ValueError(
                    "Dataset.from_tensor_slices: every component must have a first dimension to "
                    f"slice; got shapes {[tuple(l.shape) for l in leaves]}")
        n = leaves[0].shape[0]
        if any(x.shape[0] != n for x in leaves):
            raise ValueError(
                "Dataset.from_tensor_slices: all components must have the same size in their "
                f"first dimension; got shapes {[tuple(l.shape) for l in leaves]}")
        leaves = [_read_only_copy(x) for x in leaves]
        self._n = n
        self._template = _st.pack(struct, leaves)
        self._arrays = [(x._a, x._dev) for x in leaves]
        self._leaves = leaves

    def _source(self):
        return self._template, self._arrays

    def _index_chunks(self):
        return iter((range(self._n),))

    def _iter_elements(self):
        return self._iter_indexed_elements()

    def _cardinality(self):
        return self._n

    def _compute_spec(self):
        return _st.map_structure(lambda x: TensorSpec(x.shape[1:], x.dtype), self._template)


class TensorDataset(Dataset):
    def __init__(self, tensors):
        struct = _st.to_element(tensors, "Dataset.from_tensors")
        leaves = [_read_only_copy(x) for x in _st.flatten(struct)]
        self._element = _st.pack(struct, leaves)

    def _iter_elements(self):
        return iter((self._element,))

    def _cardinality(self):
        return 1

    def _compute_spec(self):
        return _st.spec_of(self._element)


class RangeDataset(Dataset):
    def __init__(self, *args, output_type=_np.int64):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range: expected 1 to 3 positional arguments, got {len(args)}")
        args = [_int_arg(a, "argument", "range") for a in args]
        if len(args) == 1:
            args = [0, args[0], 1]
        elif len(args) == 2:
            args = [args[0], args[1], 1]
        if args[2] == 0:
            raise ValueError("Dataset.range: step must not be 0")
        self._range = range(*args)
        self._type = _np.dtype(output_type).type

    def _iter_elements(self):
        t = self._type
        dev = get_default_device()
        return (_wrap(t(v), dev) for v in self._range)

    def _cardinality(self):
        return len(self._range)

    def _compute_spec(self):
        return TensorSpec((), _np.dtype(self._type))


def _signature_from_types(output_types, output_shapes):
    if output_shapes is None:
        return _st.map_structure(lambda t: TensorSpec(None, t), output_types) \
            if isinstance(output_types, (tuple, dict)) else TensorSpec(None, output_types)
    if not isinstance(output_types, (tuple, dict)):
        return TensorSpec(output_shapes, output_types)
    shapes = _flatten_up_to(output_types, output_shapes, "Dataset.from_generator: output_shapes")
    types = _st.flatten(output_types)
    return _st.pack(output_types, [TensorSpec(s, t) for s, t in zip(shapes, types)])


def _flatten_up_to(template, value, what):
    """``value`` flattened to ``template``'s structure (its leaves may be anything, such as
    shapes given as tuples)."""
    if isinstance(template, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(template):
            raise TypeError(f"{what}: expected a structure like {_st.structure_repr(template)}, "
                            f"got {value!r}")
        out = []
        for t, v in zip(template, value):
            out.extend(_flatten_up_to(t, v, what))
        return out
    if isinstance(template, dict):
        if not isinstance(value, dict) or set(value) != set(template):
            raise TypeError(f"{what}: expected a dict with keys {sorted(template)}, got {value!r}")
        out = []
        for k in _st._sorted_keys(template):
            out.extend(_flatten_up_to(template[k], value[k], what))
        return out
    return [value]


def _conform(value, spec):
    """A generator's leaf converted to ``spec``'s dtype and checked against its shape."""
    x = value if isinstance(value, _ndarray) else _st.to_leaf(value, "Dataset.from_generator")
    dt = spec.dtype
    if dt is not None and x.dtype != dt:
        if not _np.can_cast(x.dtype, dt, "same_kind"):
            raise TypeError(f"Dataset.from_generator: the generator yielded a value of dtype "
                            f"{x.dtype} where {dt} was declared")
        x = x.astype(dt)
    if not spec._shape_compatible(x.shape):
        raise ValueError(f"Dataset.from_generator: the generator yielded a value of shape "
                         f"{tuple(x.shape)} where {spec.shape} was declared")
    return x


class GeneratorDataset(Dataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError("Dataset.from_generator: generator must be a callable returning an "
                            f"iterator, got {type(generator).__name__}")
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("Dataset.from_generator: output_types/output_shapes cannot be "
                                "used together with output_signature")
            for s in _st.flatten(output_signature):
                if not isinstance(s, TensorSpec):
                    raise TypeError("Dataset.from_generator: output_signature must be a "
                                    f"structure of TensorSpec, got {s!r}")
            sig = output_signature
        elif output_types is not None:
            sig = _signature_from_types(output_types, output_shapes)
        elif output_shapes is not None:
            raise TypeError("Dataset.from_generator: output_shapes needs output_types")
        else:
            sig = None
        self._gen = generator
        self._args = tuple(args) if args is not None else ()
        self._sig = sig
        self._spec_needs_run = sig is None

    def _iter_elements(self):
        gen = self._gen
        args = self._args
        sig = self._sig
        it = iter(gen(*args))
        if sig is None:
            for v in it:
                yield _st.to_element(v, "Dataset.from_generator")
        elif not isinstance(sig, (tuple, dict)):
            for v in it:
                yield _conform(v, sig)
        else:
            specs = _st.flatten(sig)
            for v in it:
                vals = _flatten_up_to(sig, v, "Dataset.from_generator: the generator's value")
                yield _st.pack(sig, [_conform(x, s) for x, s in zip(vals, specs)])

    def _compute_spec(self):
        return self._sig if self._sig is not None else self._spec_by_running()


class ZipDataset(Dataset):
    def __init__(self, datasets):
        if isinstance(datasets, list):
            datasets = tuple(datasets)
        flat = _st.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError("Dataset.zip: expected a nested structure of Datasets, got a "
                                f"{type(d).__name__}")
        self._struct = datasets
        self._flat = flat
        self._spec_needs_run = any(d._spec_needs_run for d in flat)

    def _iter_elements(self):
        its = [d._iter_elements() for d in self._flat]
        struct = self._struct
        try:
            while True:
                vals = []
                for it in its:
                    try:
                        vals.append(next(it))
                    except StopIteration:
                        return
                yield _st.pack(struct, vals)
        finally:
            for it in its:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

    def _cardinality(self):
        result = INFINITE
        for d in self._flat:
            n = d._cardinality()
            if n == UNKNOWN:
                return UNKNOWN
            if n != INFINITE:
                result = n if result == INFINITE else min(result, n)
        return result

    def _compute_spec(self):
        return _st.pack(self._struct, [d.element_spec for d in self._flat])


# =========================================================================== unary transformations
class _Unary(Dataset):
    def __init__(self, parent):
        self._parent = parent
        self._spec_needs_run = parent._spec_needs_run

    def _cardinality(self):
        return self._parent._cardinality()

    def _compute_spec(self):
        return self._parent.element_spec


class MapDataset(_Unary):
    _spec_needs_run = True

    def __init__(self, parent, fn, workers):
        super().__init__(parent)
        self._spec_needs_run = True
        self._fn = fn
        self._workers = workers

    def _iter_elements(self):
        fn = self._fn
        norm = _st.normalize_fn_output

        def apply(e):
            return norm(fn(*e) if type(e) is tuple else fn(e), "Dataset.map: map_func")

        up = self._parent._iter_elements()
        if self._workers > 1:
            return ParallelMapIterator(up, apply, self._workers)
        return map(apply, up)

    def _compute_spec(self):
        return self._spec_by_running()


class FilterDataset(_Unary):
    def __init__(self, parent, predicate):
        super().__init__(parent)
        self._pred = predicate

    def _iter_elements(self):
        pred = self._pred
        for e in self._parent._iter_elements():
            if _as_bool(_call(pred, e), "filter"):
                yield e

    def _cardinality(self):
        n = self._parent._cardinality()
        return n if n == INFINITE else UNKNOWN


class TakeWhileDataset(_Unary):
    def __init__(self, parent, predicate):
        super().__init__(parent)
        self._pred = predicate

    def _iter_elements(self):
        pred = self._pred
        for e in self._parent._iter_elements():
            if not _as_bool(_call(pred, e), "take_while"):
                return
            yield e

    def _cardinality(self):
        return UNKNOWN


def _batched_card(n, size, drop):
    if n < 0:
        return n
    return n // size if drop else -(-n // size)


class BatchDataset(_Unary):
    def __init__(self, parent, size, drop):
        super().__init__(parent)
        self._size = size
        self._drop = drop

    def _iter_elements(self):
        parent = self._parent
        if parent._indexed:
            return self._iter_fast()
        return self._iter_slow()

    def _iter_fast(self):
        template, arrays = self._parent._source()
        pack = _st.packer(template)
        for sel in _batch_selectors(self._parent._index_chunks(), self._size, self._drop):
            yield pack(_select_rows(arrays, sel))

    def _iter_slow(self):
        size = self._size
        it = self._parent._iter_elements()
        template = None
        while True:
            chunk = list(itertools.islice(it, size))
            if not chunk or (self._drop and len(chunk) < size):
                return
            if template is None:
                template = chunk[0]
            yield _batch_elements(chunk, template, "batch")
            if len(chunk) < size:
                return

    def _cardinality(self):
        return _batched_card(self._parent._cardinality(), self._size, self._drop)

    def _compute_spec(self):
        if self._parent._spec_needs_run and "_spec_cache" not in self._parent.__dict__:
            # the parent's spec would run the pipeline anyway: run this one
            spec = self._spec_by_running()
            lead = self._size if self._drop else None
            return _st.map_structure(lambda s: TensorSpec((lead,) + s.shape[1:], s.dtype), spec)
        b = self._size if self._drop else None
        return _st.map_structure(
            lambda s: TensorSpec(None if s.shape is None else (b,) + s.shape, s.dtype),
            self._parent.element_spec)


class UnbatchDataset(_Unary):
    def _iter_elements(self):
        pack = _st.pack
        for e in self._parent._iter_elements():
            if isinstance(e, _ndarray):
                if e.ndim == 0:
                    raise ValueError("Dataset.unbatch: an element of shape () has no dimension "
                                     "to unbatch")
                a, dev = e._a, e._dev
                for i in range(a.shape[0]):
                    yield _wrap(a[i], dev)
                continue
            leaves = _st.flatten(e)
            shapes = [tuple(x.shape) for x in leaves]
            if any(len(s) == 0 for s in shapes) or len({s[0] for s in shapes}) > 1:
                raise ValueError("Dataset.unbatch: every component needs the same first "
                                 f"dimension; got shapes {shapes}")
            n = shapes[0][0]
            arrays = [(x._a, x._dev) for x in leaves]
            for i in range(n):
                yield pack(e, [_wrap(a[i], dev) for a, dev in arrays])

    def _cardinality(self):
        n = self._parent._cardinality()
        if n == INFINITE:
            return INFINITE
        if n == UNKNOWN:
            return UNKNOWN
        try:
            spec = self._parent.element_spec
        except Exception:
            return UNKNOWN
        dims = {None if s.shape is None or not s.shape else s.shape[0] for s in _st.flatten(spec)}
        if len(dims) == 1 and None not in dims:
            return n * dims.pop()
        return UNKNOWN

    def _compute_spec(self):
        def drop(s):
            if s.shape is not None and len(s.shape) == 0:
                raise ValueError("Dataset.unbatch: components must have at least one dimension")
            return TensorSpec(None if s.shape is None else s.shape[1:], s.dtype)
        return _st.map_structure(drop, self._parent.element_spec)


def _default_padding(dtype):
    if dtype.kind in "SU":
        return dtype.type()
    return _np.zeros((), dtype)[()]


class PaddedBatchDataset(_Unary):
    def __init__(self, parent, size, padded_shapes, padding_values, drop):
        super().__init__(parent)
        self._size = size
        self._drop = drop
        self._padded_shapes = padded_shapes
        self._padding_values = padding_values
        self._prepared = None
        self._lock = threading.Lock()

    def _prepare(self, template):
        """Per-leaf target shapes (tuples with None) and padding values, for ``template``."""
        n = len(_st.flatten(template))
        if self._padded_shapes is None:
            shapes = [None] * n
        elif not isinstance(template, (tuple, dict)):
            shapes = [self._padded_shapes]
        else:
            shapes = _flatten_up_to(template, self._padded_shapes, "Dataset.padded_batch: "
                                    "padded_shapes")
        shapes = [None if s is None else _st._as_shape(s) for s in shapes]
        pv = self._padding_values
        if pv is None:
            values = [None] * n
        elif isinstance(template, (tuple, dict)) and isinstance(pv, (tuple, dict)):
            values = _flatten_up_to(template, pv, "Dataset.padded_batch: padding_values")
        else:
            values = [pv] * n
        return shapes, values

    def _iter_elements(self):
        size = self._size
        it = self._parent._iter_elements()
        prepared = None
        while True:
            chunk = list(itertools.islice(it, size))
            if not chunk or (self._drop and len(chunk) < size):
                return
            template = chunk[0]
            if prepared is None:
                prepared = self._prepare(template)
            shapes, values = prepared
            flats = [_st.flatten(e) for e in chunk]
            out = [self._pad(list(col), shapes[k], values[k]) for k, col in enumerate(zip(*flats))]
            yield _st.pack(template, out)
            if len(chunk) < size:
                return

    @staticmethod
    def _pad(leaves, target, value):
        rank = leaves[0].ndim
        for x in leaves:
            if x.ndim != rank:
                raise ValueError("Dataset.padded_batch: components in a batch must have the same "
                                 f"rank; got shapes {[tuple(y.shape) for y in leaves]}")
        if target is not None and len(target) != rank:
            raise ValueError(f"Dataset.padded_batch: padded shape {target} does not have the "
                             f"rank of the component shape {tuple(leaves[0].shape)}")
        longest = [max(x.shape[d] for x in leaves) for d in range(rank)]
        if target is None:
            full = tuple(longest)
        else:
            full = []
            for d, t in enumerate(target):
                if t is None:
                    full.append(longest[d])
                elif longest[d] > t:
                    raise ValueError(
                        f"Dataset.padded_batch: a component of shape "
                        f"{tuple(next(x.shape for x in leaves if x.shape[d] > t))} does not fit "
                        f"the padded shape {target}")
                else:
                    full.append(t)
            full = tuple(full)
        dev = leaves[0]._dev
        xp = dev.backend.xp
        dtype = leaves[0].dtype
        if value is None:
            value = _default_padding(dtype)
        elif isinstance(value, _ndarray):
            if value.ndim != 0:
                raise ValueError("Dataset.padded_batch: padding values must be scalars, got "
                                 f"shape {tuple(value.shape)}")
            value = _to_numpy(value)
        out = xp.full((len(leaves),) + full, value, dtype=dtype)
        for i, x in enumerate(leaves):
            if x.dtype != dtype:
                raise TypeError(f"Dataset.padded_batch: components have dtypes {dtype} and "
                                f"{x.dtype}")
            out[(i,) + tuple(slice(0, s) for s in x.shape)] = x._a
        return _wrap(out, dev)

    def _cardinality(self):
        return _batched_card(self._parent._cardinality(), self._size, self._drop)

    def _compute_spec(self):
        pspec = self._parent.element_spec
        shapes, _ = self._prepare(pspec)
        b = self._size if self._drop else None
        flat = _st.flatten(pspec)
        out = []
        for s, target in zip(flat, shapes):
            if target is None:
                shape = None if s.shape is None else (None,) * len(s.shape)
            else:
                shape = target
            out.append(TensorSpec(None if shape is None else (b,) + shape, s.dtype))
        return _st.pack(pspec, out)


class ShuffleDataset(_Unary):
    def __init__(self, parent, buffer_size, seed, reshuffle):
        super().__init__(parent)
        if seed is None:
            from tnp_train.utils import get_rng
            seed = int(get_rng().integers(0, 2**63))
        self._seed = seed
        self._buffer = buffer_size
        self._reshuffle = reshuffle
        self._epochs = itertools.count()
        self._indexed = parent._indexed

    def _rng(self):
        if self._reshuffle:
            return _np.random.default_rng([self._seed, next(self._epochs)])
        return _np.random.default_rng(self._seed)

    def _source(self):
        return self._parent._source()

    def _index_chunks(self):
        ints = _shuffled(_chunk_ints(self._parent._index_chunks()), self._buffer, self._rng())
        while True:
            block = list(itertools.islice(ints, _SHUFFLE_CHUNK))
            if not block:
                return
            yield _np.array(block, dtype=_np.int64)

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        return _shuffled(self._parent._iter_elements(), self._buffer, self._rng())


class RepeatDataset(_Unary):
    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = count
        self._indexed = parent._indexed

    def _passes(self):
        return itertools.count() if self._count < 0 else range(self._count)

    def _source(self):
        return self._parent._source()

    def _index_chunks(self):
        for _ in self._passes():
            empty = True
            for c in self._parent._index_chunks():
                if len(c):
                    empty = False
                yield c
            if empty:
                return

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        return self._iter_slow()

    def _iter_slow(self):
        for _ in self._passes():
            empty = True
            for e in self._parent._iter_elements():
                empty = False
                yield e
            if empty:  # an empty dataset repeated forever is empty, not a hang
                return

    def _cardinality(self):
        n = self._parent._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE
        if self._count == 0:
            return 0
        if n < 0:
            return n
        return n * self._count


class TakeDataset(_Unary):
    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = count
        self._indexed = parent._indexed

    def _source(self):
        return self._parent._source()

    def _index_chunks(self):
        chunks = self._parent._index_chunks()
        return chunks if self._count < 0 else _take_chunks(chunks, self._count)

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        if self._count < 0:
            return self._parent._iter_elements()
        return self._iter_slow()

    def _iter_slow(self):
        if self._count == 0:
            return
        it = self._parent._iter_elements()
        try:
            for i, e in enumerate(it, 1):
                yield e
                if i >= self._count:
                    return
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def _cardinality(self):
        n = self._parent._cardinality()
        if self._count < 0:
            return n
        if n == INFINITE:
            return self._count
        if n == UNKNOWN:
            return UNKNOWN
        return min(n, self._count)


class SkipDataset(_Unary):
    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = count
        self._indexed = parent._indexed

    def _source(self):
        return self._parent._source()

    def _index_chunks(self):
        if self._count < 0:
            for _ in self._parent._index_chunks():
                pass
            return iter(())
        return _skip_chunks(self._parent._index_chunks(), self._count)

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        return self._iter_slow()

    def _iter_slow(self):
        it = self._parent._iter_elements()
        if self._count < 0:
            for _ in it:
                pass
            return
        for _ in itertools.islice(it, self._count):
            pass
        yield from it

    def _cardinality(self):
        n = self._parent._cardinality()
        if self._count < 0:
            return 0
        if n < 0:
            return n
        return max(0, n - self._count)


class ShardDataset(_Unary):
    def __init__(self, parent, num_shards, index):
        super().__init__(parent)
        self._k = num_shards
        self._i = index
        self._indexed = parent._indexed

    def _source(self):
        return self._parent._source()

    def _index_chunks(self):
        return _shard_chunks(self._parent._index_chunks(), self._k, self._i)

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        return itertools.islice(self._parent._iter_elements(), self._i, None, self._k)

    def _cardinality(self):
        n = self._parent._cardinality()
        if n < 0:
            return n
        return n // self._k + (1 if self._i < n % self._k else 0)


class PrefetchDataset(_Unary):
    def __init__(self, parent, buffer_size):
        super().__init__(parent)
        self._buffer = buffer_size

    def _iter_elements(self):
        if self._buffer == 0:
            return self._parent._iter_elements()
        return PrefetchIterator(self._parent._iter_elements, self._buffer)


class CacheDataset(_Unary):
    def __init__(self, parent):
        super().__init__(parent)
        self._indexed = parent._indexed
        self._store = None  # the first complete pass: chunks (indexed) or elements
        self._lock = threading.Lock()

    def _source(self):
        return self._parent._source()

    def _index_chunks(self):
        return self._replay_or_record(self._parent._index_chunks)

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        return self._replay_or_record(self._parent._iter_elements)

    def _replay_or_record(self, source):
        """The stored first pass, or a pass over ``source()`` that is stored once complete
        (an abandoned pass stores nothing)."""
        store = self._store
        if store is not None:
            yield from store
            return
        seen = []
        for item in source():
            seen.append(item)
            yield item
        with self._lock:
            if self._store is None:
                self._store = seen


class EnumerateDataset(_Unary):
    def __init__(self, parent, start):
        super().__init__(parent)
        self._start = start

    def _iter_elements(self):
        dev = get_default_device()
        i64 = _np.int64
        for i, e in enumerate(self._parent._iter_elements(), self._start):
            yield (_wrap(i64(i), dev), e)

    def _compute_spec(self):
        return (TensorSpec((), _np.int64), self._parent.element_spec)


class ConcatenateDataset(Dataset):
    def __init__(self, first, second):
        self._a = first
        self._b = second
        self._spec_needs_run = first._spec_needs_run or second._spec_needs_run
        if not self._spec_needs_run:
            self._compute_spec()  # structure and dtype errors at construction, as TF

    def _iter_elements(self):
        yield from self._a._iter_elements()
        yield from self._b._iter_elements()

    def _cardinality(self):
        a, b = self._a._cardinality(), self._b._cardinality()
        if a == INFINITE or b == INFINITE:
            return INFINITE
        if a == UNKNOWN or b == UNKNOWN:
            return UNKNOWN
        return a + b

    def _compute_spec(self):
        sa, sb = self._a.element_spec, self._b.element_spec
        _st.assert_same_structure(sa, sb, "Dataset.concatenate: the two datasets' elements")

        def merge(x, y):
            if x.dtype != y.dtype:
                raise TypeError(f"Dataset.concatenate: component dtypes differ: {x.dtype} and "
                                f"{y.dtype}")
            return x.most_specific_compatible_type(y)
        return _st.map_structure(merge, sa, sb)


class InterleaveDataset(_Unary):
    def __init__(self, parent, fn, cycle_length, block_length):
        super().__init__(parent)
        self._spec_needs_run = True
        self._fn = fn
        self._cycle = cycle_length
        self._block = block_length

    def _make(self, e):
        ds = _call(self._fn, e)
        if not isinstance(ds, Dataset):
            raise TypeError("Dataset.interleave/flat_map: map_func must return a Dataset, got "
                            f"{type(ds).__name__}")
        return ds._iter_elements()

    def _iter_elements(self):
        inputs = self._parent._iter_elements()
        if self._cycle == 1:  # flat_map
            for e in inputs:
                yield from self._make(e)
            return
        cycle, block = self._cycle, self._block
        current = [None] * cycle
        num_open = 0
        end_of_input = False
        ci = 0
        bi = 0
        while not end_of_input or num_open > 0:
            it = current[ci]
            if it is not None:
                try:
                    v = next(it)
                except StopIteration:
                    current[ci] = None
                    num_open -= 1
                    ci = (ci + 1) % cycle
                    bi = 0
                    continue
                bi += 1
                if bi == block:
                    ci = (ci + 1) % cycle
                    bi = 0
                yield v
            elif not end_of_input:
                try:
                    e = next(inputs)
                except StopIteration:
                    end_of_input = True
                    continue
                current[ci] = self._make(e)
                num_open += 1
            else:
                ci = (ci + 1) % cycle
                bi = 0

    def _cardinality(self):
        return UNKNOWN

    def _compute_spec(self):
        return self._spec_by_running()


class _ElementsDataset(Dataset):
    """A dataset over a list of elements already built (the windows of ``window``)."""

    def __init__(self, elements, spec):
        self._elements = elements
        self.__dict__["_spec_cache"] = spec

    def _iter_elements(self):
        return iter(self._elements)

    def _cardinality(self):
        return len(self._elements)

    def _compute_spec(self):  # pragma: no cover - set at construction
        return self.__dict__["_spec_cache"]


class DatasetSpec:
    """The type of an element that is itself a dataset (``tf.data.DatasetSpec``)."""

    def __init__(self, element_spec):
        self.element_spec = element_spec

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self.element_spec == other.element_spec

    def __hash__(self):
        return hash(repr(self.element_spec))

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r})"


class WindowDataset(_Unary):
    def __init__(self, parent, size, shift, stride, drop):
        super().__init__(parent)
        self._size, self._shift, self._stride, self._drop = size, shift, stride, drop

    def _iter_elements(self):
        size, shift, stride = self._size, self._shift, self._stride
        span = (size - 1) * stride + 1
        it = self._parent._iter_elements()
        buf = []        # the elements read, from position `base` on
        base = 0
        start = 0
        exhausted = False
        spec = None
        while True:
            while not exhausted and len(buf) < start + span - base:
                try:
                    buf.append(next(it))
                except StopIteration:
                    exhausted = True
            picked = buf[start - base::stride][:size]
            if not picked or (self._drop and len(picked) < size):
                return
            if spec is None:
                spec = self._parent.element_spec
            template = picked[0]
            if isinstance(template, (tuple, dict)):
                cols = list(zip(*[_st.flatten(e) for e in picked]))
                yield _st.pack(template, [_ElementsDataset(list(c), s)
                                          for c, s in zip(cols, _st.flatten(spec))])
            else:
                yield _ElementsDataset(picked, spec)
            start += shift
            drop = start - base
            if drop <= len(buf):
                del buf[:drop]
            else:  # windows further apart than they are long: skip the gap
                gap = drop - len(buf)
                buf = []
                for _ in itertools.islice(it, gap):
                    gap -= 1
                if gap:
                    exhausted = True
            base = start

    def _cardinality(self):
        n = self._parent._cardinality()
        if n < 0:
            return n
        if self._drop:
            span = (self._size - 1) * self._stride + 1
            return 0 if n < span else (n - span) // self._shift + 1
        return -(-n // self._shift)

    def _compute_spec(self):
        spec = self._parent.element_spec
        return _st.map_structure(DatasetSpec, spec) if isinstance(spec, (tuple, dict)) \
            else DatasetSpec(spec)
