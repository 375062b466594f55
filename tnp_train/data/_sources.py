"""The source datasets of ``Dataset.from_tensor_slices``, ``from_tensors``, ``range``,
``from_generator`` and ``zip``."""
from __future__ import annotations

import numpy as _np

from tnp.extend import backend_array as _backend, device_of as _device_of, wrap as _wrap
from tnp import get_default_device, ndarray as _ndarray

from ..utils import tree as _tree
from . import _structure as _st
from ._structure import TensorSpec
from ._rows import INFINITE, UNKNOWN, _int_arg, _read_only_copy
from .dataset import Dataset

# =========================================================================== sources
class TensorSliceDataset(Dataset):
    _indexed = True

    def __init__(self, tensors):
        struct = _st.to_element(tensors, "Dataset.from_tensor_slices")
        leaves = _tree.flatten(struct)
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
        self._template = _tree.pack_sequence_as(struct, leaves)
        self._arrays = [(_backend(x), _device_of(x)) for x in leaves]
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
        return _tree.map_structure(lambda x: TensorSpec(x.shape[1:], x.dtype), self._template)


class TensorDataset(Dataset):
    def __init__(self, tensors):
        struct = _st.to_element(tensors, "Dataset.from_tensors")
        leaves = [_read_only_copy(x) for x in _tree.flatten(struct)]
        self._element = _tree.pack_sequence_as(struct, leaves)

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
    _st.check_no_lists(output_types, "Dataset.from_generator: output_types")
    if output_shapes is None:
        return _tree.map_structure(lambda t: TensorSpec(None, t), output_types) \
            if isinstance(output_types, (tuple, dict)) else TensorSpec(None, output_types)
    if not isinstance(output_types, (tuple, dict)):
        return TensorSpec(output_shapes, output_types)
    shapes = _st.flatten_up_to(output_types, output_shapes,
                               "Dataset.from_generator: output_shapes")
    types = _tree.flatten(output_types)
    return _tree.pack_sequence_as(output_types, [TensorSpec(s, t) for s, t in zip(shapes, types)])


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
            _st.check_no_lists(output_signature, "Dataset.from_generator: output_signature")
            for s in _tree.flatten(output_signature):
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
            specs = _tree.flatten(sig)
            for v in it:
                vals = _st.flatten_up_to(sig, v, "Dataset.from_generator: the generator's value")
                yield _tree.pack_sequence_as(sig, [_conform(x, s) for x, s in zip(vals, specs)])

    def _compute_spec(self):
        return self._sig if self._sig is not None else self._spec_by_running()


class ZipDataset(Dataset):
    def __init__(self, datasets):
        if isinstance(datasets, list):
            datasets = tuple(datasets)
        _st.check_no_lists(datasets, "Dataset.zip")
        flat = _tree.flatten(datasets)
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
                yield _tree.pack_sequence_as(struct, vals)
        finally:
            for it in its:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

    def _inputs(self):
        return tuple(self._flat)

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
        return _tree.pack_sequence_as(self._struct, [d.element_spec for d in self._flat])
