"""The transformations ``tf.data.experimental`` (TF 2.4) has beside the Dataset methods:
each is a function returning a ``dataset -> dataset`` transformation for ``Dataset.apply``
(``scan``, ``unique``, ``ignore_errors``, ``group_by_window``, ``group_by_reducer``,
``bucket_by_sequence_length``, ``assert_cardinality`` and the older aliases of methods), or a
source (``sample_from_datasets``, ``choose_from_datasets``), or a reader of a dataset
(``get_single_element``, ``get_structure``)."""
from __future__ import annotations

import itertools
import warnings

import numpy as _np

from . import _structure as _st
from ._transformations import _Unary
from ._rows import INFINITE, UNKNOWN, _call, _int_arg
from .dataset import Dataset

__all__ = ["scan", "unique", "ignore_errors", "IgnoreErrorsDataset", "group_by_window", "group_by_reducer", "Reducer",
           "bucket_by_sequence_length", "assert_cardinality", "sample_from_datasets",
           "choose_from_datasets", "get_single_element", "get_structure", "unbatch",
           "take_while", "enumerate_dataset", "shuffle_and_repeat", "map_and_batch",
           "parallel_interleave"]


def _check_dataset(ds, who):
    if not isinstance(ds, Dataset):
        raise TypeError(f"{who}: expected a Dataset, got {type(ds).__name__}")


def _callable(fn, name, who):
    if not callable(fn):
        raise TypeError(f"{who}: {name} must be callable, got {fn!r}")


def _scalar_int(value, what):
    a = _np.asarray(value)
    if a.shape != () or a.dtype.kind not in "iu":
        raise ValueError(f"{what} must return a scalar integer, got an array of shape "
                         f"{a.shape} and dtype {a.dtype}")
    return int(a)


# ------------------------------------------------------------------------ scan
class ScanDataset(_Unary):
    _spec_needs_run = True

    def __init__(self, parent, initial_state, scan_func):
        super().__init__(parent)
        self._spec_needs_run = True
        self._initial = _st.to_element(initial_state, "scan: initial_state")
        self._fn = scan_func

    def _iter_elements(self):
        state = self._initial
        for e in self._parent._iter_elements():
            out = self._fn(state, e)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"scan: scan_func must return a pair (new_state, "
                                f"output_element), got {type(out).__name__}")
            new = _st.normalize_fn_output(out[0], "scan: scan_func's new state")
            _st.check_same_structure(state, new, "scan: the initial state and the new state")
            for old, cur in zip(_st._tree.flatten(state), _st._tree.flatten(new)):
                if old.dtype != cur.dtype:
                    raise TypeError(f"scan: the new state's dtype {cur.dtype} differs from "
                                    f"the initial state's {old.dtype}")
            state = new
            yield _st.normalize_fn_output(out[1], "scan: scan_func's output")

    def _compute_spec(self):
        return self._spec_by_running()


def scan(initial_state, scan_func):
    """``scan_func(state, element) -> (new_state, output)`` folded over the dataset, emitting
    every output (``tf.data.experimental.scan``); the state keeps its structure and dtypes."""
    _callable(scan_func, "scan_func", "scan")
    return lambda ds: ScanDataset(ds, initial_state, scan_func)


# ------------------------------------------------------------------------ unique
class UniqueDataset(_Unary):
    def _iter_elements(self):
        seen = set()
        for e in self._parent._iter_elements():
            key = _np.asarray(e).item()
            if key not in seen:
                seen.add(key)
                yield e

    def _cardinality(self):
        n = self._parent._cardinality()
        return n if n == INFINITE else UNKNOWN


def unique():
    """The elements with their repeats dropped, in first-seen order
    (``tf.data.experimental.unique``): elements must be scalars of one integer or string
    component, as TF's."""
    def apply(ds):
        _check_dataset(ds, "unique")
        spec = ds.element_spec
        if not isinstance(spec, _st.TensorSpec) or spec.dtype.kind not in "iuSU" or \
                (spec.shape is not None and len(spec.shape) != 0):
            raise TypeError(f"unique: only datasets of scalar integer or string elements are "
                            f"supported (TF: a single int32, int64 or string component), got "
                            f"{spec!r}")
        return UniqueDataset(ds)
    return apply


# ------------------------------------------------------------------------ ignore_errors
class IgnoreErrorsDataset(_Unary):
    """The parent's elements with those whose making raised left out. The parent's iterator
    is asked again after an error: the sources and ``map`` go on from the next element (a
    TFRecordDataset from the next file); one that cannot go on ends there."""

    def __init__(self, parent, log_warning=False):
        super().__init__(parent)
        self._log_warning = bool(log_warning)

    def _iter_elements(self):
        it = iter(self._parent._iter_elements())
        while True:
            try:
                e = next(it)
            except StopIteration:
                return
            except Exception as err:  # noqa: BLE001 - TF ignores every error but the end
                if self._log_warning:
                    warnings.warn(f"Dataset.ignore_errors: ignoring error: "
                                  f"{type(err).__name__}: {err}", RuntimeWarning, stacklevel=2)
                continue
            yield e

    def _cardinality(self):
        n = self._parent._cardinality()
        return n if n == INFINITE else UNKNOWN


def ignore_errors(log_warning=False):
    """``tf.data.experimental.ignore_errors``: a transformation (for ``Dataset.apply``) that
    drops the elements whose making raised an error (a ``map`` function's, a corrupt record's),
    with a RuntimeWarning for each when ``log_warning``."""
    def apply(ds):
        _check_dataset(ds, "ignore_errors")
        return IgnoreErrorsDataset(ds, log_warning)
    return apply


# ------------------------------------------------------------------------ grouping
class _Grouped(_Unary):
    _spec_needs_run = True

    def __init__(self, parent, key_func, who):
        super().__init__(parent)
        self._spec_needs_run = True
        self._key = key_func
        self._who = who

    def _key_of(self, e):
        return _scalar_int(_call(self._key, e), f"{self._who}: key_func")

    def _compute_spec(self):
        return self._spec_by_running()


class GroupByWindowDataset(_Grouped):
    def __init__(self, parent, key_func, reduce_func, window_size_func):
        super().__init__(parent, key_func, "group_by_window")
        self._reduce = reduce_func
        self._size = window_size_func

    def _windows(self):
        groups, sizes = {}, {}
        for e in self._parent._iter_elements():
            k = self._key_of(e)
            if k not in sizes:
                sizes[k] = _scalar_int(self._size(_np.int64(k)),
                                       "group_by_window: window_size_func")
                if sizes[k] < 1:
                    raise ValueError(f"group_by_window: the window size of key {k} must be "
                                     f"positive, got {sizes[k]}")
            group = groups.setdefault(k, [])
            group.append(e)
            if len(group) == sizes[k]:
                yield k, groups.pop(k)
        for k in sorted(groups):          # what is left, by key
            yield k, groups[k]

    def _iter_elements(self):
        from ._transformations import _ElementsDataset
        spec = self._parent.element_spec      # the input's (unknown dimensions stay so)
        for k, elements in self._windows():
            window = _ElementsDataset(elements, spec)
            out = self._reduce(_np.int64(k), window)
            if not isinstance(out, Dataset):
                raise TypeError(f"group_by_window: reduce_func must return a Dataset, got "
                                f"{type(out).__name__}")
            yield from out._iter_elements()


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """Group elements by ``key_func(element)`` (a scalar integer); each group of
    ``window_size`` elements (or ``window_size_func(key)``) becomes a dataset given to
    ``reduce_func(key, window_dataset)``, whose elements are emitted; groups left at the end
    follow, by key (``tf.data.experimental.group_by_window``)."""
    _callable(key_func, "key_func", "group_by_window")
    _callable(reduce_func, "reduce_func", "group_by_window")
    if (window_size is None) == (window_size_func is None):
        raise ValueError("group_by_window: give exactly one of window_size and "
                         "window_size_func")
    if window_size is not None:
        size = _int_arg(window_size, "window_size", "group_by_window", minimum=1)
        window_size_func = lambda key: _np.int64(size)   # noqa: E731
    _callable(window_size_func, "window_size_func", "group_by_window")
    return lambda ds: GroupByWindowDataset(ds, key_func, reduce_func, window_size_func)


class Reducer:
    """What ``group_by_reducer`` does per key (``tf.data.experimental.Reducer``):
    ``init_func(key) -> state``, ``reduce_func(state, element) -> state``,
    ``finalize_func(state) -> output``."""

    def __init__(self, init_func, reduce_func, finalize_func):
        for name, fn in (("init_func", init_func), ("reduce_func", reduce_func),
                         ("finalize_func", finalize_func)):
            _callable(fn, name, "Reducer")
        self.init_func, self.reduce_func, self.finalize_func = init_func, reduce_func, \
            finalize_func


class GroupByReducerDataset(_Grouped):
    def __init__(self, parent, key_func, reducer):
        super().__init__(parent, key_func, "group_by_reducer")
        self._reducer = reducer

    def _iter_elements(self):
        r = self._reducer
        states = {}
        for e in self._parent._iter_elements():
            k = self._key_of(e)
            if k not in states:
                states[k] = _st.normalize_fn_output(r.init_func(_np.int64(k)),
                                                    "group_by_reducer: init_func")
            new = _st.normalize_fn_output(r.reduce_func(states[k], e),
                                          "group_by_reducer: reduce_func")
            _st.check_same_structure(states[k], new, "group_by_reducer: the states")
            states[k] = new
        for k in sorted(states):
            yield _st.normalize_fn_output(r.finalize_func(states[k]),
                                          "group_by_reducer: finalize_func")

    def _cardinality(self):
        return UNKNOWN


def group_by_reducer(key_func, reducer):
    """One output per key: the ``reducer``'s state folded over that key's elements, then
    finalized; emitted when the input ends, by key (``tf.data.experimental.group_by_reducer``)."""
    _callable(key_func, "key_func", "group_by_reducer")
    if not isinstance(reducer, Reducer):
        raise TypeError(f"group_by_reducer: reducer must be a Reducer, got "
                        f"{type(reducer).__name__}")
    return lambda ds: GroupByReducerDataset(ds, key_func, reducer)


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """Batch elements of similar length together (``tf.data.experimental.
    bucket_by_sequence_length``): an element of length ``L`` goes to the first bucket with
    ``L < boundary`` (the last bucket takes the rest), each bucket is batched with its own
    batch size and padded to its longest element (or to ``boundary - 1`` with
    ``pad_to_bucket_boundary``)."""
    who = "bucket_by_sequence_length"
    _callable(element_length_func, "element_length_func", who)
    bounds = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in bucket_batch_sizes]
    if len(sizes) != len(bounds) + 1:
        raise ValueError(f"{who}: len(bucket_batch_sizes) must equal len(bucket_boundaries) "
                         f"+ 1, got {len(sizes)} and {len(bounds)}")
    if any(b2 <= b1 for b1, b2 in zip(bounds, bounds[1:])) or any(b <= 0 for b in bounds):
        raise ValueError(f"{who}: bucket_boundaries must be positive and increasing, got "
                         f"{bounds}")
    def bucket_of(*element):
        e = element[0] if len(element) == 1 else element
        length = _scalar_int(_call(element_length_func, e), f"{who}: element_length_func")
        return _np.int64(next((i for i, b in enumerate(bounds) if length < b), len(bounds)))

    def batch_size_of(key):
        return _np.int64(sizes[int(key)])

    def reduce(key, window):
        size = sizes[int(key)]
        if no_padding:
            return window.batch(size, drop_remainder=drop_remainder)
        shapes = padded_shapes
        if pad_to_bucket_boundary:
            if int(key) == len(bounds):
                raise ValueError(f"{who}: with pad_to_bucket_boundary, the last boundary "
                                 f"must exceed every element's length")
            target = bounds[int(key)] - 1
            spec = window.element_spec
            template = spec if shapes is None else shapes

            def to_boundary(s):
                dims = s.shape if isinstance(s, _st.TensorSpec) else s
                if dims is None:
                    return None
                return tuple(target if d is None or d == -1 else d for d in dims)
            shapes = _st._tree.map_structure(to_boundary, template) \
                if _st._tree.is_nested(template) else to_boundary(template)
        return window.padded_batch(size, padded_shapes=shapes, padding_values=padding_values,
                                   drop_remainder=drop_remainder)

    return lambda ds: GroupByWindowDataset(ds, bucket_of, reduce, batch_size_of)


# ------------------------------------------------------------------------ cardinality
class AssertCardinalityDataset(_Unary):
    def __init__(self, parent, expected):
        super().__init__(parent)
        self._expected = expected

    def _iter_elements(self):
        n = 0
        for e in self._parent._iter_elements():
            n += 1
            if self._expected != INFINITE and n > self._expected:
                raise RuntimeError(f"assert_cardinality: the input dataset was expected to "
                                   f"contain {self._expected} elements but contained at least "
                                   f"{n} elements")
            yield e
        if self._expected == INFINITE or n < self._expected:
            raise RuntimeError(f"assert_cardinality: the input dataset was expected to contain "
                               f"{'infinitely many' if self._expected == INFINITE else self._expected} "
                               f"elements but contained only {n} elements")

    def _cardinality(self):
        return self._expected


def assert_cardinality(expected_cardinality):
    """The dataset, stating that it has ``expected_cardinality`` elements (so
    ``cardinality()`` and ``len`` know it); iterating raises if it has another number
    (``tf.data.experimental.assert_cardinality``)."""
    expected = _int_arg(expected_cardinality, "expected_cardinality", "assert_cardinality",
                        minimum=0, allow_minus_one=True)
    return lambda ds: AssertCardinalityDataset(ds, expected)


# ------------------------------------------------------------------------ several inputs
class _Directed(Dataset):
    """Elements taken from ``datasets`` in an order decided element by element."""

    def __init__(self, datasets, who):
        datasets = list(datasets)
        if not datasets:
            raise ValueError(f"{who}: needs at least one dataset")
        for d in datasets:
            _check_dataset(d, who)
        first = datasets[0].element_spec
        for i, d in enumerate(datasets[1:], 1):
            if d.element_spec != first:
                raise TypeError(f"{who}: the datasets' elements differ: dataset 0 has "
                                f"{first!r}, dataset {i} has {d.element_spec!r}")
        self._datasets = datasets
        self.__dict__["_spec_cache"] = first

    def _inputs(self):
        return tuple(self._datasets)

    def _compute_spec(self):  # pragma: no cover - set at construction
        return self.__dict__["_spec_cache"]


class SampleDataset(_Directed):
    def __init__(self, datasets, weights, seed):
        super().__init__(datasets, "sample_from_datasets")
        n = len(self._datasets)
        w = _np.full(n, 1.0 / n) if weights is None else _np.asarray(weights, dtype=_np.float64)
        if w.shape != (n,) or not _np.all(_np.isfinite(w)) or _np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"sample_from_datasets: weights must be {n} non-negative numbers "
                             f"with a positive sum, got {weights!r}")
        self._weights = w / w.sum()
        if seed is None:
            from tnp_train.utils import get_rng
            seed = int(get_rng().integers(0, 2**63))
        self._seed = seed
        self._epochs = itertools.count()

    def _iter_elements(self):
        rng = _np.random.default_rng([self._seed, next(self._epochs)])
        its = [d._iter_elements() for d in self._datasets]
        live = self._weights > 0
        while live.any():
            p = _np.where(live, self._weights, 0.0)
            i = int(rng.choice(len(its), p=p / p.sum()))
            try:
                yield next(its[i])
            except StopIteration:
                live[i] = False       # an input that ends leaves the others to go on


def sample_from_datasets(datasets, weights=None, seed=None):
    """Elements drawn at random from ``datasets``, dataset ``i`` with probability
    ``weights[i]`` (uniform by default); an input that ends drops out and the others go on
    (``tf.data.experimental.sample_from_datasets``). Every pass draws anew; ``seed`` (or
    ``tt.utils.set_random_seed``) makes the passes reproducible."""
    if isinstance(weights, Dataset):
        raise TypeError("sample_from_datasets: weights given as a Dataset are not supported; "
                        "give a list of floats")
    if seed is not None:
        seed = _int_arg(seed, "seed", "sample_from_datasets", minimum=0)
    return SampleDataset(datasets, weights, seed)


class ChooseDataset(_Directed):
    def __init__(self, datasets, choice_dataset):
        super().__init__(datasets, "choose_from_datasets")
        _check_dataset(choice_dataset, "choose_from_datasets")
        spec = choice_dataset.element_spec
        if not isinstance(spec, _st.TensorSpec) or spec.dtype != _np.int64 or \
                (spec.shape is not None and len(spec.shape) != 0):
            raise TypeError(f"choose_from_datasets: choice_dataset must hold scalar int64 "
                            f"elements, got {spec!r}")
        self._choices = choice_dataset

    def _inputs(self):
        return tuple(self._datasets) + (self._choices,)

    def _iter_elements(self):
        its = [d._iter_elements() for d in self._datasets]
        done = [False] * len(its)
        for c in self._choices._iter_elements():
            i = int(c)
            if not 0 <= i < len(its):
                raise ValueError(f"choose_from_datasets: the choice {i} is out of range for "
                                 f"{len(its)} datasets")
            if done[i]:
                continue
            try:
                yield next(its[i])
            except StopIteration:
                done[i] = True        # a choice of an ended input is skipped


def choose_from_datasets(datasets, choice_dataset):
    """Element ``k`` from ``datasets[choice_dataset[k]]``; choices of an input that has
    ended are skipped (``tf.data.experimental.choose_from_datasets``)."""
    return ChooseDataset(datasets, choice_dataset)


# ------------------------------------------------------------------------ readers
def get_single_element(dataset):
    """The one element of ``dataset``; ValueError if it has none or several
    (``tf.data.experimental.get_single_element``)."""
    _check_dataset(dataset, "get_single_element")
    it = dataset._iter_elements()
    try:
        first = next(it)
    except StopIteration:
        raise ValueError("get_single_element: the dataset was empty") from None
    for _ in it:
        raise ValueError("get_single_element: the dataset had more than one element")
    return first


def get_structure(dataset_or_iterator):
    """The ``TensorSpec`` structure of the elements (``tf.data.experimental.get_structure``)."""
    spec = getattr(dataset_or_iterator, "element_spec", None)
    if spec is None:
        raise TypeError(f"get_structure: expected a Dataset or an iterator of one, got "
                        f"{type(dataset_or_iterator).__name__}")
    return spec


# ------------------------------------------------------------------------ older aliases
def unbatch():
    """``Dataset.unbatch`` as a transformation (TF 2.4's ``experimental.unbatch``)."""
    return lambda ds: ds.unbatch()


def take_while(predicate):
    """``Dataset.take_while`` as a transformation."""
    return lambda ds: ds.take_while(predicate)


def enumerate_dataset(start=0):
    """``Dataset.enumerate`` as a transformation."""
    return lambda ds: ds.enumerate(start)


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """``ds.shuffle(buffer_size, seed).repeat(count)``, every repetition shuffled anew."""
    return lambda ds: ds.shuffle(buffer_size, seed=seed, reshuffle_each_iteration=True) \
        .repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """``ds.map(map_func).batch(batch_size, drop_remainder)`` (TF 2.4's fused form)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("map_and_batch: give num_parallel_batches or num_parallel_calls, not "
                         "both")
    calls = num_parallel_calls if num_parallel_calls is not None else num_parallel_batches
    return lambda ds: ds.map(map_func, num_parallel_calls=calls).batch(
        batch_size, drop_remainder=drop_remainder)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """``ds.interleave(map_func, cycle_length, block_length)``: the deterministic order
    (``sloppy`` and the buffer sizes only let TF run ahead)."""
    return lambda ds: ds.interleave(map_func, cycle_length=cycle_length,
                                    block_length=block_length)
