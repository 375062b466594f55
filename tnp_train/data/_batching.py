"""The datasets of ``Dataset.batch``, ``unbatch`` and ``padded_batch``."""
from __future__ import annotations

import itertools
import threading

import numpy as _np

from tnp.extend import (
    array_module as _array_module, backend_array as _backend, device_of as _device_of, wrap as _wrap,
)
from tnp import ndarray as _ndarray

from ..utils import tree as _tree
from . import _structure as _st
from ._structure import TensorSpec
from ._transformations import _Unary
from ._rows import (
    INFINITE, UNKNOWN, _batch_elements, _batch_selectors, _row_getter, _select_rows, _to_numpy,
)

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
            return _tree.map_structure(lambda s: TensorSpec((lead,) + s.shape[1:], s.dtype), spec)
        b = self._size if self._drop else None
        return _tree.map_structure(
            lambda s: TensorSpec(None if s.shape is None else (b,) + s.shape, s.dtype),
            self._parent.element_spec)


class UnbatchDataset(_Unary):
    def _iter_elements(self):
        pack = _tree.pack_sequence_as
        for e in self._parent._iter_elements():
            if isinstance(e, _ndarray):
                if e.ndim == 0:
                    raise ValueError("Dataset.unbatch: an element of shape () has no dimension "
                                     "to unbatch")
                row = _row_getter(_backend(e), _device_of(e))
                for i in range(e.shape[0]):
                    yield row(i)
                continue
            leaves = _tree.flatten(e)
            shapes = [tuple(x.shape) for x in leaves]
            if any(len(s) == 0 for s in shapes) or len({s[0] for s in shapes}) > 1:
                raise ValueError("Dataset.unbatch: every component needs the same first "
                                 f"dimension; got shapes {shapes}")
            n = shapes[0][0]
            rows = [_row_getter(_backend(x), _device_of(x)) for x in leaves]
            for i in range(n):
                yield pack(e, [row(i) for row in rows])

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
        dims = {None if s.shape is None or not s.shape else s.shape[0] for s in _tree.flatten(spec)}
        if len(dims) == 1 and None not in dims:
            return n * dims.pop()
        return UNKNOWN

    def _compute_spec(self):
        def drop(s):
            if s.shape is not None and len(s.shape) == 0:
                raise ValueError("Dataset.unbatch: components must have at least one dimension")
            return TensorSpec(None if s.shape is None else s.shape[1:], s.dtype)
        return _tree.map_structure(drop, self._parent.element_spec)


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

    def _reset_state(self):
        self._prepared = None
        self._lock = threading.Lock()

    def _prepare(self, template):
        """Per-leaf target shapes (tuples with None) and padding values, for ``template``."""
        n = len(_tree.flatten(template))
        if self._padded_shapes is None:
            shapes = [None] * n
        elif not isinstance(template, (tuple, dict)):
            shapes = [self._padded_shapes]
        else:
            shapes = _st.flatten_up_to(template, self._padded_shapes,
                                       "Dataset.padded_batch: padded_shapes")
        shapes = [None if s is None else _st._as_shape(s) for s in shapes]
        pv = self._padding_values
        if pv is None:
            values = [None] * n
        elif isinstance(template, (tuple, dict)) and isinstance(pv, (tuple, dict)):
            values = _st.flatten_up_to(template, pv, "Dataset.padded_batch: padding_values")
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
            flats = [_tree.flatten(e) for e in chunk]
            out = [self._pad(list(col), shapes[k], values[k]) for k, col in enumerate(zip(*flats))]
            yield _tree.pack_sequence_as(template, out)
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
        dev = _device_of(leaves[0])
        xp = _array_module(dev)
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
            out[(i,) + tuple(slice(0, s) for s in x.shape)] = _backend(x)
        return _wrap(out, dev)

    def _cardinality(self):
        return _batched_card(self._parent._cardinality(), self._size, self._drop)

    def _compute_spec(self):
        pspec = self._parent.element_spec
        shapes, _ = self._prepare(pspec)
        b = self._size if self._drop else None
        flat = _tree.flatten(pspec)
        out = []
        for s, target in zip(flat, shapes):
            if target is None:
                shape = None if s.shape is None else (None,) * len(s.shape)
            else:
                shape = target
            out.append(TensorSpec(None if shape is None else (b,) + shape, s.dtype))
        return _tree.pack_sequence_as(pspec, out)
