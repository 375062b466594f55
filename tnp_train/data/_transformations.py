"""The datasets of ``Dataset``'s transformations (``map``, ``filter``, ``shuffle``, ``repeat``,
``take``, ``skip``, ``shard``, ``prefetch``, ``cache``, ``enumerate``, ``concatenate``,
``interleave``/``flat_map``, ``window``, ``take_while``, ``with_options``), on the ``_Unary`` base; the batching
ones are in :mod:`._batching`."""
from __future__ import annotations

import copy
import itertools
import threading

import numpy as _np

from tnp import get_default_device
from tnp.extend import wrap as _wrap

from ..utils import tree as _tree
from . import _structure as _st
from ._structure import TensorSpec
from ._threads import ParallelMapIterator, PrefetchIterator
from ._rows import (
    _SHUFFLE_CHUNK, INFINITE, UNKNOWN, _as_bool, _call, _chunk_ints, _shard_chunks, _shuffled,
    _skip_chunks, _take_chunks,
)
from .dataset import Dataset

# =========================================================================== unary transformations
class _Unary(Dataset):
    def __init__(self, parent):
        self._parent = parent
        self._spec_needs_run = parent._spec_needs_run

    def _cardinality(self):
        return self._parent._cardinality()

    def _compute_spec(self):
        return self._parent.element_spec

    def _inputs(self):
        return (self._parent,)

    def _with_parent(self, parent):
        """This transformation applied to ``parent`` instead (a copy with fresh state); how
        file sharding rebuilds a pipeline above its replaced source."""
        new = copy.copy(self)
        new.__dict__.pop("_spec_cache", None)
        new._parent = parent
        if "_indexed" in self.__dict__:
            new._indexed = parent._indexed
        new._reset_state()
        return new

    def _reset_state(self):
        """Forget what earlier iterations left behind (a copy must not share it)."""


class _Selecting(_Unary):
    """A transformation that selects, reorders or repeats its parent's elements: over an
    indexed source it works on the index chunks (``_index_chunks``) and the parent's
    ``_source``, else on the elements themselves (``_iter_slow``)."""

    def __init__(self, parent):
        super().__init__(parent)
        self._indexed = parent._indexed

    def _source(self):
        return self._parent._source()

    def _iter_elements(self):
        if self._indexed:
            return self._iter_indexed_elements()
        return self._iter_slow()


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


class _Judged(_Unary):
    """A transformation driven by a predicate of the elements (``filter``, ``take_while``)."""

    def __init__(self, parent, predicate):
        super().__init__(parent)
        self._pred = predicate

    def _judged(self, op):
        """``(element, predicate(element))`` for the parent's elements; ``op`` names the
        transformation in the error of a predicate that gives no boolean."""
        pred = self._pred
        for e in self._parent._iter_elements():
            yield e, _as_bool(_call(pred, e), op)


class FilterDataset(_Judged):
    def _iter_elements(self):
        return (e for e, keep in self._judged("filter") if keep)

    def _cardinality(self):
        n = self._parent._cardinality()
        return n if n == INFINITE else UNKNOWN


class TakeWhileDataset(_Judged):
    def _iter_elements(self):
        for e, keep in self._judged("take_while"):
            if not keep:
                return
            yield e

    def _cardinality(self):
        return UNKNOWN


class ShuffleDataset(_Selecting):
    def __init__(self, parent, buffer_size, seed, reshuffle):
        super().__init__(parent)
        if seed is None:
            from tnp_train.utils import get_rng
            seed = int(get_rng().integers(0, 2**63))
        self._seed = seed
        self._buffer = buffer_size
        self._reshuffle = reshuffle
        self._epochs = itertools.count()

    def _reset_state(self):
        self._epochs = itertools.count()

    def _rng(self):
        if self._reshuffle:
            return _np.random.default_rng([self._seed, next(self._epochs)])
        return _np.random.default_rng(self._seed)

    def _index_chunks(self):
        ints = _shuffled(_chunk_ints(self._parent._index_chunks()), self._buffer, self._rng())
        while True:
            block = list(itertools.islice(ints, _SHUFFLE_CHUNK))
            if not block:
                return
            yield _np.array(block, dtype=_np.int64)

    def _iter_slow(self):
        return _shuffled(self._parent._iter_elements(), self._buffer, self._rng())


class RepeatDataset(_Selecting):
    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = count

    def _passes(self):
        return itertools.count() if self._count < 0 else range(self._count)

    def _index_chunks(self):
        for _ in self._passes():
            empty = True
            for c in self._parent._index_chunks():
                if len(c):
                    empty = False
                yield c
            if empty:
                return

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


class TakeDataset(_Selecting):
    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = count

    def _index_chunks(self):
        chunks = self._parent._index_chunks()
        return chunks if self._count < 0 else _take_chunks(chunks, self._count)

    def _iter_elements(self):
        if self._count < 0 and not self._indexed:
            return self._parent._iter_elements()
        return super()._iter_elements()

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


class SkipDataset(_Selecting):
    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = count

    def _index_chunks(self):
        if self._count < 0:
            for _ in self._parent._index_chunks():
                pass
            return iter(())
        return _skip_chunks(self._parent._index_chunks(), self._count)

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


class ShardDataset(_Selecting):
    def __init__(self, parent, num_shards, index):
        super().__init__(parent)
        self._k = num_shards
        self._i = index

    def _index_chunks(self):
        return _shard_chunks(self._parent._index_chunks(), self._k, self._i)

    def _iter_slow(self):
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


class OptionsDataset(_Selecting):
    """``with_options``: the parent's elements, with options merged at construction (so a
    conflict raises there, as in TF)."""

    def __init__(self, parent, options):
        super().__init__(parent)
        from ._options import merge_options
        self._options = merge_options(parent.options(), options)

    def options(self):
        return copy.deepcopy(self._options)

    def _index_chunks(self):
        return self._parent._index_chunks()

    def _iter_elements(self):
        return self._parent._iter_elements()


class CacheDataset(_Selecting):
    def __init__(self, parent):
        super().__init__(parent)
        self._store = None  # the first complete pass: chunks (indexed) or elements
        self._lock = threading.Lock()

    def _reset_state(self):
        self._store = None
        self._lock = threading.Lock()

    def _index_chunks(self):
        return self._replay_or_record(self._parent._index_chunks)

    def _iter_slow(self):
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
        self._first = first
        self._second = second
        self._spec_needs_run = first._spec_needs_run or second._spec_needs_run
        if not self._spec_needs_run:
            self._compute_spec()  # structure and dtype errors at construction, as TF

    def _iter_elements(self):
        template = None
        for template in self._first._iter_elements():
            yield template
        if template is None or not _tree.is_nested(template):
            yield from self._second._iter_elements()
            return
        # as TF, the second's elements come in the first's structure (a dict's keys perhaps in
        # another insertion order)
        for e in self._second._iter_elements():
            yield _tree.pack_sequence_as(template, _tree.flatten(e))

    def _inputs(self):
        return (self._first, self._second)

    def _cardinality(self):
        a, b = self._first._cardinality(), self._second._cardinality()
        if a == INFINITE or b == INFINITE:
            return INFINITE
        if a == UNKNOWN or b == UNKNOWN:
            return UNKNOWN
        return a + b

    def _compute_spec(self):
        sa, sb = self._first.element_spec, self._second.element_spec
        _st.check_same_structure(sa, sb, "Dataset.concatenate: the two datasets' elements")

        def merge(x, y):
            if x.dtype != y.dtype:
                raise TypeError(f"Dataset.concatenate: component dtypes differ: {x.dtype} and "
                                f"{y.dtype}")
            return x.most_specific_compatible_type(y)
        return _tree.map_structure(merge, sa, sb)


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
                cols = list(zip(*[_tree.flatten(e) for e in picked]))
                yield _tree.pack_sequence_as(template, [_ElementsDataset(list(c), s)
                                          for c, s in zip(cols, _tree.flatten(spec))])
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
        return _tree.map_structure(DatasetSpec, spec) if isinstance(spec, (tuple, dict)) \
            else DatasetSpec(spec)
