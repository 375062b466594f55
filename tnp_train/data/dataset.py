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

This module holds ``Iterator`` and ``Dataset``; the constants and the row helpers that every
dataset module shares are in :mod:`._rows`; the datasets that the sources and transformations
return are in :mod:`._sources`, :mod:`._transformations` and :mod:`._batching` (their classes
stay importable from here).
"""
from __future__ import annotations

import os

import numpy as _np

from tnp.extend import wrap as _wrap
from tnp import ndarray as _ndarray

from ..utils import tree as _tree
from . import _structure as _st

__all__ = ["Dataset", "Iterator", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

from ._rows import (  # the cardinality constants stay importable from here
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, INFINITE, UNKNOWN, _int_arg,
    _num_workers, _scalar_int64, _to_numpy, _row_getter,
)


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

    def get_next_as_optional(self):
        """The next element as a ``tt.data.experimental.Optional``, empty at the end
        (``tf.data.Iterator.get_next_as_optional``)."""
        return _optional.get_next_as_optional(self)

    @property
    def _type_spec(self):
        return _optional.IteratorSpec(self.element_spec)

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

    def _inputs(self):
        """The datasets this one reads (their options are merged into this one's)."""
        return ()

    # indexed datasets only
    def _source(self):  # -> (template, [(backend array, device), ...])
        raise NotImplementedError

    def _index_chunks(self):
        raise NotImplementedError

    def _iter_indexed_elements(self):
        template, arrays = self._source()
        if any(a.ndim == 1 and a.dtype.kind in "SU" for a, _ in arrays):
            rows = [_row_getter(a, dev) for a, dev in arrays]
            pack = _st.packer(template)
            for c in self._index_chunks():
                if not isinstance(c, range):
                    c = c.tolist()
                for i in c:
                    yield pack([row(i) for row in rows])
        elif len(arrays) == 1 and not isinstance(template, (tuple, dict)):
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
                yield _tree.pack_sequence_as(e, [_to_numpy(x) for x in _tree.flatten(e)])

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
        shapes = _tree.map_structure(lambda s: "<unknown>" if s.shape is None else s.shape, spec) \
            if isinstance(spec, (tuple, dict)) else (spec.shape if spec.shape is not None
                                                      else "<unknown>")
        types = _tree.map_structure(lambda s: s.dtype.name, spec) \
            if isinstance(spec, (tuple, dict)) else spec.dtype.name
        return f"<{name} shapes: {shapes}, types: {types}>"

    # ------------------------------------------------------------------ options
    def options(self):
        """The ``tt.data.Options`` of this dataset: its inputs' options merged with any
        ``with_options`` applied along the chain (a new object; changing it changes nothing)."""
        inputs = self._inputs()
        if not inputs:
            return Options()
        return merge_options(*[d.options() for d in inputs])

    def with_options(self, options):
        """This dataset with ``options`` (a ``tt.data.Options``) merged into its options
        (``tf.data.Dataset.with_options``); ValueError if an option is already set to another
        non-default value (TF 2.4's merge rule)."""
        if not isinstance(options, Options):
            raise TypeError("Dataset.with_options: expected a tt.data.Options, got "
                            f"{type(options).__name__}")
        return OptionsDataset(self, options)

    # ------------------------------------------------------------------ file sharding
    def _source_files(self):
        """The names of the files this pipeline reads, from the ``list_files`` or
        ``TextLineDataset`` that feeds it through single-input transformations; None when
        there is no such source. What ``AutoShardPolicy.FILE`` splits across workers."""
        return _files_mod.source_files(self)

    def _shard_files(self, num_shards, index):
        """This pipeline rebuilt to read only every ``num_shards``-th file from ``index`` (the
        sorted files, sharded before ``list_files``' shuffle); None without a file source;
        ValueError with fewer files than shards. How a strategy shards by FILE."""
        return _files_mod.shard_files(self, num_shards, index)

    # ------------------------------------------------------------------ sources
    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The files matching ``file_pattern`` (a glob pattern or a list of them) as string
        scalars (``tf.data.Dataset.list_files``): shuffled by default, in a new order every
        epoch (``seed`` fixes it); sorted with ``shuffle=False``. ValueError when nothing
        matches."""
        return _files_mod.list_files(file_pattern, shuffle=shuffle, seed=seed)

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
            _st.check_same_structure(state, new,
                                     "Dataset.reduce: the initial state and the new state")
            state = new
        return state

    def ignore_errors(self, log_warning=False):
        """The elements whose making did not raise (``tf.data.Dataset.ignore_errors``, TF
        2.10; ``tf.data.experimental.ignore_errors()`` in TF 2.4): a failing ``map`` call or a
        corrupt TFRecord is skipped (the rest of that file, as TF), with a RuntimeWarning each
        when ``log_warning``."""
        from ._experimental import IgnoreErrorsDataset
        return IgnoreErrorsDataset(self, log_warning)

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("Dataset.apply: transformation_func must return a Dataset, got "
                            f"{type(out).__name__}")
        return out


# The datasets the methods above return subclass Dataset, so their modules are imported once it
# exists (each imports what it needs from this one); their classes stay importable from here.
from ._sources import (  # noqa: E402
    GeneratorDataset, RangeDataset, TensorDataset, TensorSliceDataset, ZipDataset,
)
from ._transformations import (  # noqa: E402,F401
    CacheDataset, ConcatenateDataset, DatasetSpec, EnumerateDataset, FilterDataset,
    InterleaveDataset, MapDataset, PrefetchDataset, RepeatDataset, ShardDataset, ShuffleDataset,
    SkipDataset, TakeDataset, TakeWhileDataset, WindowDataset, _ElementsDataset, _Unary,
)
from ._batching import BatchDataset, PaddedBatchDataset, UnbatchDataset  # noqa: E402
from ._options import Options, merge_options  # noqa: E402
from ._transformations import OptionsDataset  # noqa: E402
from . import _files as _files_mod  # noqa: E402
from . import _optional  # noqa: E402
