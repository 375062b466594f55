"""``tf.data.experimental``'s pipelines of ``tf.train.Example`` records and of sparse
batches (TF 2.4): ``parse_example_dataset``, ``make_batched_features_dataset`` and
``dense_to_sparse_batch``."""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend

from ..errors import DataLossError
from ..io import parse_example as _parse_example
from ..sparse import SparseTensor as _SparseTensor, SparseTensorSpec as _SparseTensorSpec
from . import _structure as _st
from ._rows import AUTOTUNE, UNKNOWN, _int_arg
from ._transformations import _Unary
from .dataset import Dataset

__all__ = ["parse_example_dataset", "make_batched_features_dataset", "dense_to_sparse_batch"]


# ----------------------------------------------------------------------------- parsing
def parse_example_dataset(features, num_parallel_calls=1, deterministic=None):
    """``tf.data.experimental.parse_example_dataset``: a transformation parsing each element
    (a vector of serialized ``tf.train.Example`` records, as ``batch`` makes) with
    ``tt.io.parse_example(element, features)``: a dict of arrays and SparseTensors."""
    if features is None:
        raise ValueError(f"Missing: features was {features}.")
    if not isinstance(features, dict):
        raise TypeError(f"parse_example_dataset: features must be a dict, got "
                        f"{type(features).__name__}")

    def apply(ds):
        spec = ds.element_spec
        if not isinstance(spec, _st.TensorSpec) or spec.dtype.kind not in "SU" or \
                (spec.shape is not None and len(spec.shape) != 1):
            raise TypeError("Input dataset should be a dataset of vectors of strings")
        return ds.map(lambda records: _parse_example(records, features),
                      num_parallel_calls=num_parallel_calls)
    return apply


def make_batched_features_dataset(file_pattern, batch_size, features, reader=None,
                                  label_key=None, reader_args=None, num_epochs=None,
                                  shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                                  prefetch_buffer_size=None, reader_num_threads=None,
                                  parser_num_threads=None, sloppy_ordering=False,
                                  drop_final_batch=False):
    """``tf.data.experimental.make_batched_features_dataset`` (TF 2.4): batches of parsed
    ``tf.train.Example`` records of the files matching ``file_pattern``, built as TF builds
    them: ``list_files`` (shuffled unless ``shuffle=False``), ``reader`` (``TFRecordDataset``)
    interleaved over ``reader_num_threads`` files, ``shuffle`` then ``repeat(num_epochs)``
    (for ever when None), ``batch`` (a short last batch dropped with ``drop_final_batch`` or
    ``num_epochs=None``), ``parse_example_dataset(features)``, ``(features, label)`` pairs
    with ``label_key``, and ``prefetch``."""
    from ._tfrecord import TFRecordDataset
    if reader is None:
        reader = TFRecordDataset
    if not callable(reader):
        raise TypeError("The `reader` argument must return a `Dataset` object.")
    if label_key and label_key not in features:
        raise ValueError(f"The `label_key` provided ({label_key!r}) must be one of the "
                         "`features` keys.")
    reader_args = list(reader_args or [])
    cycle = 1 if reader_num_threads is None else reader_num_threads
    dataset = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)

    def read(name):
        out = reader(name, *reader_args)
        if not isinstance(out, Dataset):
            raise TypeError("The `reader` argument must return a `Dataset` object, got "
                            f"{type(out).__name__}")
        return out
    dataset = dataset.interleave(read, cycle_length=cycle, block_length=1)
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) == 2 and all(
            isinstance(s, _st.TensorSpec) and s.dtype.kind in "SU" for s in spec):
        dataset = dataset.map(lambda _, v: v)   # a (key, value) reader: the values
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=bool(drop_final_batch) or
                            num_epochs is None)
    dataset = dataset.apply(parse_example_dataset(
        features, num_parallel_calls=2 if parser_num_threads is None else parser_num_threads))
    if label_key:
        def split(x):
            x = dict(x)
            return x, x.pop(label_key)
        dataset = dataset.map(split)
    return dataset.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)


# ----------------------------------------------------------------------------- sparse batches
def _row_shape(row_shape):
    if isinstance(row_shape, (int, _np.integer)):
        row_shape = (row_shape,)
    out = []
    for d in row_shape:
        if d is None or (isinstance(d, (int, _np.integer)) and int(d) == -1):
            out.append(None)
        elif isinstance(d, (int, _np.integer)) and not isinstance(d, bool) and int(d) >= 0:
            out.append(int(d))
        else:
            raise ValueError(f"dense_to_sparse_batch: invalid dimension {d!r} in row_shape "
                             f"{row_shape!r}")
    return tuple(out)


class DenseToSparseBatchDataset(_Unary):
    """Batches of ``batch_size`` elements as one SparseTensor each: element ``i``'s entries
    at ``[i, ...]``, the dense shape ``[n, *row_shape]`` (an unknown dimension: the largest of
    the batch). An element larger than ``row_shape`` is TF's DataLossError."""

    def __init__(self, parent, batch_size, row_shape):
        super().__init__(parent)
        self._batch = batch_size
        self._row = row_shape

    def _cardinality(self):
        n = self._parent._cardinality()
        return n if n < 0 else -(-n // self._batch)

    def _compute_spec(self):
        spec = self._parent.element_spec
        return _SparseTensorSpec((None,) + self._row, spec.dtype)

    def _sparse(self, rows):
        arrays = [_np.asarray(_backend(r)) if r.device == tnp.device("cpu") else r.numpy()
                  for r in rows]
        for a in arrays:
            if a.ndim != len(self._row):
                raise ValueError(f"dense_to_sparse_batch: an element of rank {a.ndim} does not "
                                 f"fit row_shape {list(self._row)} of rank {len(self._row)}")
            for d, limit in zip(a.shape, self._row):
                if limit is not None and d > limit:
                    raise DataLossError(
                        f"Input element had shape ({list(a.shape)}) that is larger than the "
                        f"row shape ({list(self._row)}).".replace(", ", ","))
        dense = [len(arrays)] + [
            limit if limit is not None else max((a.shape[k] for a in arrays), default=0)
            for k, limit in enumerate(self._row)]
        indices, values = [], []
        for i, a in enumerate(arrays):
            idx = _np.indices(a.shape).reshape(a.ndim, -1).T if a.ndim else \
                _np.zeros((1, 0), _np.int64)
            indices.append(_np.hstack([_np.full((len(idx), 1), i), idx]))
            values.append(a.reshape(-1))
        dtype = arrays[0].dtype
        return _SparseTensor(
            _np.concatenate(indices).astype(_np.int64) if indices else
            _np.zeros((0, len(dense)), _np.int64),
            tnp.asarray(_np.concatenate(values).astype(dtype, copy=False)),
            _np.array(dense, _np.int64))

    def _iter_elements(self):
        rows = []
        for e in self._parent._iter_elements():
            rows.append(e)
            if len(rows) == self._batch:
                yield self._sparse(rows)
                rows = []
        if rows:
            yield self._sparse(rows)


def dense_to_sparse_batch(batch_size, row_shape):
    """``tf.data.experimental.dense_to_sparse_batch``: a transformation batching elements of
    varying shape (one array component) into SparseTensors of dense shape
    ``[batch, *row_shape]`` (``None``/-1 in ``row_shape``: the batch's largest)."""
    batch_size = _int_arg(batch_size, "batch_size", "dense_to_sparse_batch", minimum=1)
    row = _row_shape(row_shape)

    def apply(ds):
        spec = ds.element_spec
        if not isinstance(spec, _st.TensorSpec):
            raise TypeError("dense_to_sparse_batch: the elements must be single arrays, got "
                            f"{_st.structure_repr(spec)}")
        if spec.shape is not None and len(spec.shape) != len(row):
            raise ValueError(f"dense_to_sparse_batch: row_shape {list(row)} must have the rank "
                             f"of the elements ({len(spec.shape)})")
        return DenseToSparseBatchDataset(ds, batch_size, row)
    return apply


del UNKNOWN
