"""Counting and random sources and resampling of ``tf.data.experimental`` (TF 2.4):
``Counter``, ``RandomDataset`` and ``rejection_resample``."""
from __future__ import annotations

import itertools

import numpy as _np

from tnp import get_default_device
from tnp.extend import wrap as _wrap

from . import _structure as _st
from ._rows import INFINITE, _call, _int_arg
from ._transformations import _Unary
from .dataset import Dataset

__all__ = ["Counter", "RandomDataset", "rejection_resample"]


def _seed(seed, op):
    if seed is None:
        from tnp_train.utils import get_rng
        return int(get_rng().integers(0, 2**63))
    return _int_arg(seed, "seed", op, minimum=0)


class _CounterDataset(Dataset):
    def __init__(self, start, step, dtype):
        self._start, self._step, self._dtype = start, step, dtype

    def _iter_elements(self):
        dev = get_default_device()
        t = self._dtype.type
        return (_wrap(t(v), dev) for v in itertools.count(self._start, self._step))

    def _cardinality(self):
        return INFINITE

    def _compute_spec(self):
        return _st.TensorSpec((), self._dtype)


def Counter(start=0, step=1, dtype=_np.int64):   # noqa: N802 - TF's name
    """``tf.data.experimental.Counter``: ``start, start + step, ...`` for ever, scalars of
    ``dtype`` (int64 by default)."""
    dtype = _np.dtype(dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"Counter: dtype must be an integer type, got {dtype}")
    start = _int_arg(start, "start", "Counter")
    step = _int_arg(step, "step", "Counter")
    return _CounterDataset(start, step, dtype)


class RandomDataset(Dataset):
    """Mirrors ``tf.data.experimental.RandomDataset(seed=None)``: int64 scalars uniform over
    the whole int64 range, for ever. Every pass gives the same sequence; ``seed`` (or
    ``tt.utils.set_random_seed``) fixes it. NumPy's generator, so not TF's numbers."""

    def __init__(self, seed=None):
        self._seed = _seed(seed, "RandomDataset")

    def _iter_elements(self):
        rng = _np.random.default_rng(self._seed)
        dev = get_default_device()
        info = _np.iinfo(_np.int64)
        while True:
            for v in rng.integers(info.min, info.max, size=256, dtype=_np.int64,
                                  endpoint=True):
                yield _wrap(v, dev)

    def _cardinality(self):
        return INFINITE

    def _compute_spec(self):
        return _st.TensorSpec((), _np.int64)


# ----------------------------------------------------------------------------- resampling
_TINY = _np.finfo(_np.float32).tiny
_ESTIMATE_BATCH = 32     # TF estimates the class distribution 32 elements at a time
_SMOOTHING = 10          # ... from counts that start at 10 per class


def _acceptance(initial, target):
    """TF's per-class acceptance probabilities and probability of taking an original
    element: ``a_i = (r_i - m) / (max r - m)``, ``m = min r``, ``r = target / initial``."""
    ratio = target / (initial + _TINY)
    lo, hi = ratio.min(), ratio.max()
    with _np.errstate(invalid="ignore", divide="ignore"):
        return (ratio - lo) / (hi - lo), float(lo)


def _class_of(class_func, e, num_classes):
    c = _call(class_func, e)
    v = _np.asarray(c)
    if v.shape != () or v.dtype.kind not in "iu":
        raise ValueError(f"rejection_resample: class_func must return a scalar integer, got "
                         f"an array of shape {v.shape} and dtype {v.dtype}")
    k = int(v)
    if not 0 <= k < num_classes:
        raise ValueError(f"rejection_resample: class {k} is out of range for "
                         f"{num_classes} classes")
    return c, k


class RejectionResampleDataset(_Unary):
    """``(class, element)`` pairs drawn so the classes follow ``target``. As TF: with
    probability ``m`` an element of the input as it comes, else the next element that the
    per-class rejection filter accepts; without ``initial``, the class distribution is
    estimated as the input goes, 32 elements at a time. The original and the filtered
    streams (and the estimate) each read the input on an iterator of their own, as in TF."""

    def __init__(self, parent, class_func, target, initial, seed):
        super().__init__(parent)
        self._class_func = class_func
        self._target = target
        self._initial = initial
        self._seed = seed
        self._epochs = itertools.count()

    def _compute_spec(self):
        spec = self._parent.element_spec
        first = next(iter(self._parent._iter_elements()), None)
        if first is None:
            raise ValueError("rejection_resample: cannot infer element_spec of an empty "
                             "dataset")
        c, _ = _class_of(self._class_func, first, len(self._target))
        return (_st.spec_of(_st.to_leaf(c)), spec)

    def _estimates(self):
        """``(class value, class index, element, distribution estimate)`` per element."""
        n = len(self._target)
        counts = _np.full(n, _SMOOTHING, dtype=_np.int64)
        it = self._parent._iter_elements()
        while True:
            block = []
            for e in itertools.islice(it, _ESTIMATE_BATCH):
                c, k = _class_of(self._class_func, e, n)
                block.append((c, k, e))
            if not block:
                return
            for _, k, _ in block:
                counts[k] += 1
            dist = (counts / counts.sum()).astype(_np.float32)
            for c, k, e in block:
                yield c, k, e, dist

    def _given(self):
        n = len(self._target)
        for e in self._parent._iter_elements():
            c, k = _class_of(self._class_func, e, n)
            yield c, k, e, self._initial

    def _pairs(self, stream):
        return ((c, e) for c, _, e, _ in stream)

    def _filtered(self, stream, rng):
        for c, k, e, dist in stream:
            accept, _ = _acceptance(dist, self._target)
            if rng.random() < accept[k]:
                yield c, e

    def _iter_elements(self):
        rng = _np.random.default_rng([self._seed, next(self._epochs)])
        source = self._given if self._initial is not None else self._estimates
        if self._initial is not None:
            _, m = _acceptance(self._initial, self._target)
            if m == 1:       # TF's static case: nothing to change
                yield from self._pairs(source())
                return
            if m == 0:
                yield from self._filtered(source(), rng)
                return
            weights = itertools.repeat(m)
        else:
            weights = (_acceptance(d, self._target)[1] for _, _, _, d in source())
        streams = [self._pairs(source()), self._filtered(source(), rng)]
        for m in weights:    # sample_from_datasets with a weight per draw
            i = 0 if rng.random() < m else 1
            try:
                yield next(streams[i])
            except StopIteration:
                # the first stream to end ends the output (TF 2.5+'s stop_on_empty_dataset):
                # going on with the other alone would leave the target distribution
                return


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """``tf.data.experimental.rejection_resample``: a transformation giving ``(class,
    element)`` pairs whose classes (``class_func(element)``, a scalar integer in
    ``[0, num_classes)``) follow ``target_dist``, by TF's mix of the input as it is and a
    per-class rejection filter. ``initial_dist`` is the input's class distribution (estimated
    as the input goes when None). Random: ``seed`` or ``tt.utils.set_random_seed`` fixes
    it."""
    if not callable(class_func):
        raise TypeError(f"rejection_resample: class_func must be callable, got {class_func!r}")
    target = _np.asarray(_np.asarray(target_dist, dtype=_np.float64), dtype=_np.float64)
    if target.ndim != 1 or target.size == 0 or _np.any(target < 0):
        raise ValueError(f"rejection_resample: target_dist must be a 1-d list of non-negative "
                         f"probabilities, got {target_dist!r}")
    initial = None
    if initial_dist is not None:
        initial = _np.asarray(initial_dist, dtype=_np.float64)
        if initial.shape != target.shape:
            raise ValueError(f"rejection_resample: initial_dist has shape {initial.shape}, "
                             f"target_dist {target.shape}")
    seed = _seed(seed, "rejection_resample")
    return lambda ds: RejectionResampleDataset(ds, class_func, target, initial, seed)
